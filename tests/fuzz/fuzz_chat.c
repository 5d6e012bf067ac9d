/* fuzz_chat.c — libFuzzer target: the chat template renderer. The first
 * byte picks the family (every family, "none" included) and whether the
 * generation prompt is added; the rest is split at NUL bytes into role,
 * content, role, content, ... Every family must format any conversation
 * (any bytes, empty fields, unknown roles) without crashing; the first
 * line of the input is also run through template detection. */
#include "asn/chat.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int id = data[0] % ASN_CHAT_COUNT, gen = data[0] >= 128;
    /* a copy with a NUL after the last byte, so every field ends */
    char *buf = malloc(size);
    memcpy(buf, data + 1, size - 1);
    buf[size - 1] = 0;
    enum { MAX_MSGS = 64 };
    asn_chat_msg msgs[MAX_MSGS];
    const char *fields[2 * MAX_MSGS];
    size_t nf = 0;
    for (char *p = buf; p < buf + size && nf < 2 * MAX_MSGS;) {
        fields[nf++] = p;
        p += strlen(p) + 1;
    }
    size_t n = nf / 2;
    for (size_t i = 0; i < n; i++)
        msgs[i] = (asn_chat_msg){fields[2 * i], fields[2 * i + 1]};
    asn_err e;
    free(asn_chat_format(id, msgs, n, gen, &e));
    (void)asn_chat_detect(buf);
    (void)asn_chat_from_name(buf);
    (void)asn_chat_for_model(buf, NULL, &e);
    (void)asn_chat_name(id);
    free(buf);
    return 0;
}
