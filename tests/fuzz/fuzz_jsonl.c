/* fuzz_jsonl.c — libFuzzer target: arbitrary bytes as a JSONL stream read
 * record by record (line numbers, blank lines, bad records), each record
 * written back with asn's JSON writer. */
#include "asn/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[] = "/tmp/asn-fuzz-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return 0;
    if (write(fd, data, size) != (ssize_t)size) {
        close(fd);
        unlink(path);
        return 0;
    }
    close(fd);
    asn_err e;
    asn_jsonl *r = asn_jsonl_open(path, &e);
    FILE *sink = fopen("/dev/null", "w");
    json_t *rec;
    int rc;
    while (r && (rc = asn_jsonl_next(r, &rec, &e)) != 0) {
        if (rc > 0) {
            asn_jsonl_write(sink, rec);
            json_decref(rec);
        }
    }
    fclose(sink);
    asn_jsonl_close(r);
    unlink(path);
    return 0;
}
