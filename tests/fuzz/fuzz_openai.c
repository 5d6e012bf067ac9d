/* fuzz_openai.c — libFuzzer target: arbitrary bytes as a request body of
 * serve (the first byte picks completions or chat), read with the limits
 * serve uses; an accepted request's heuristic is built (parameters or
 * definition, with its structured-output constraint; learned samplers and
 * files left out as serve leaves them out), and a
 * response and a stream chunk are written for it. */
#include "asn/json.h"
#include "asn/openai.h"
#include "asn/sampling.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!size)
        return 0;
    int chat = data[0] & 1;
    asn_oai_limits lim = {256, 8, 512, 32000};
    asn_oai_request rq;
    asn_err e;
    if (!asn_oai_parse((const char *)data + 1, size - 1, chat, &lim, &rq, &e)) {
        const json_t *given = rq.heuristic_def ? json_object_get(rq.heuristic_def, "processors") : rq.processors;
        json_t *procs = json_is_array(given) ? json_deep_copy(given) : NULL;
        if (procs && rq.constraint) /* structured output joins the heuristic, as in serve */
            json_array_append(procs, rq.constraint);
        int files = 0;
        size_t i;
        const json_t *p;
        json_array_foreach(procs, i, p)
        {
            const char *n = json_string_value(json_object_get(p, "name"));
            files |= n && (!strcmp(n, "learned") || !strcmp(n, "adaptive_sampler"));
            files |= json_object_get(json_object_get(p, "params"), "path") != NULL;
        }
        asn_heuristic h;
        if (procs && !files && !asn_heuristic_init(&h, "fuzz", procs, &e))
            asn_heuristic_clear(&h);
        json_decref(procs);
        int32_t toks[] = {1, 2, 3};
        float lps[] = {-0.5f, -1.0f, -2.0f};
        int32_t top[] = {1, 2, 3};
        asn_oai_choice c = {toks, 3, "abc", 3, ASN_FINISH_LENGTH, lps, top, lps, 1, NULL};
        json_t *r = asn_oai_response(&rq, "id", 0, "m", NULL, &c, 1, 3);
        free(asn_json_dumps(r, 0));
        json_decref(r);
        r = asn_oai_chunk(&rq, "id", 0, "m", NULL, 0, &c);
        free(asn_json_dumps(r, 0));
        json_decref(r);
    }
    asn_oai_request_free(&rq);
    return 0;
}
