/* fuzz_model.c — libFuzzer target: arbitrary bytes as a model file. Loads
 * them with asn_model_load_mem (architecture table, hyper-parameters, every
 * tensor table) and, when that succeeds, runs a small engine over a few
 * tokens asking for every output the model has (logits, pooled embedding,
 * classification head). Must never crash, read out of bounds or leak, only
 * return errors. test_replay_fuzz_model replays the seeds (a tiny model of
 * every architecture, tests/fixtures/make_arch_fixtures.py) and the inputs
 * kept in tests/fuzz/regressions/fuzz_model/. */
#include "asn/model.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    asn_err e;
    asn_model *m = asn_model_load_mem(data, size, "fuzz.gguf", &e);
    if (!m)
        return 0;
    const asn_model_config *c = asn_model_cfg(m);
    int n_ctx = c->n_ctx_train < 8 ? c->n_ctx_train : 8;
    asn_engine *en = n_ctx > 0 ? asn_engine_new(m, n_ctx, NULL, &e) : NULL;
    if (en) {
        for (int exact = 0; exact < 2; exact++) {
            asn_engine_set_exact(en, exact);
            int32_t tok[3] = {0, (int32_t)(c->n_vocab - 1), (int32_t)(c->n_vocab / 2)};
            int n = n_ctx < 3 ? n_ctx : 3;
            float *logits = malloc((size_t)n * (size_t)c->n_vocab * sizeof *logits);
            float *emb = malloc((size_t)c->n_embd * sizeof *emb);
            float *cls = malloc(((size_t)c->n_cls_out + 1) * sizeof *cls);
            int s = asn_seq_new(en);
            asn_batch_item it = {s, tok, n, logits, 1, emb, c->n_cls_out ? cls : NULL};
            if (asn_engine_decode(en, &it, 1, &e)) { /* an encoder: no logits */
                it.logits = NULL;
                asn_engine_decode(en, &it, 1, &e);
            }
            asn_seq_free(en, s);
            free(logits), free(emb), free(cls);
        }
        asn_engine_free(en);
    }
    asn_model_free(m);
    return 0;
}
