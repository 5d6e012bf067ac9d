/* fuzz_pipeline.c — libFuzzer target: the first line is a JSON processor
 * list, the rest is read as float32 logits (then token history), and the
 * pipeline runs on them. Exercises parameter validation and every
 * processor on hostile rows (NaN, inf, huge values, long histories). */
#include "asn/sampling.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nl = memchr(data, '\n', size);
    if (!nl)
        return 0;
    json_t *procs = json_loadb((const char *)data, (size_t)(nl - data), 0, NULL);
    if (!procs)
        return 0;
    asn_heuristic h;
    asn_err e;
    if (asn_heuristic_init(&h, "f", procs, &e)) {
        json_decref(procs);
        return 0;
    }
    json_decref(procs);
    size_t rest = size - (size_t)(nl + 1 - data);
    int V = (int)(rest / 2 / sizeof(float));
    if (V >= 1) {
        float *row = malloc((size_t)V * sizeof *row);
        int32_t *ids = malloc((size_t)V * sizeof *ids);
        memcpy(row, nl + 1, (size_t)V * sizeof *row);
        memcpy(ids, nl + 1 + (size_t)V * sizeof *row, (size_t)V * sizeof *ids);
        asn_seq_ctx ctx = {.ids = ids, .n_ids = V, .n_prompt = V / 2, .eos = ids, .n_eos = V > 2 ? 2 : V};
        asn_seq_state st;
        asn_seq_state_init(&st);
        asn_workspace *ws = asn_workspace_new();
        if (asn_pipeline_apply(&h, row, V, &ctx, &st, ws, &e) == 0) {
            int t = asn_sample_row(row, V, 0.5);
            if (t >= 0)
                asn_pipeline_accept(&h, row, V, t, &st);
        }
        asn_workspace_free(ws);
        free(row);
        free(ids);
    }
    asn_heuristic_clear(&h);
    return 0;
}
