/* encode.c — whole texts through the batched engine (asn/encode.h):
 * tokenized one by one, grouped into forward passes of at most a token
 * budget, each text one batch item on a sequence of its own. */
#include "asn/encode.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Runs texts[0..n) and writes, per text i, its pooled embedding into
 * emb + i * dim and/or its head's values into cls + i * n_cls. classify:
 * special tokens parsed, the end kept when cut. */
static int encode(asn_engine *en, const asn_vocab *v, const char *const *texts, const size_t *lens, int n,
                  int max_tokens, long batch_tokens, int classify, float *emb, int dim, float *cls, int n_cls,
                  asn_err *e)
{
    if (max_tokens <= 0)
        return asn_err_set(e, "max_tokens must be positive");
    int32_t **ids = asn_xcalloc((size_t)n + 1, sizeof *ids);
    size_t *len = asn_xcalloc((size_t)n + 1, sizeof *len), *from = asn_xcalloc((size_t)n + 1, sizeof *from);
    asn_batch_item *items = asn_xcalloc((size_t)n + 1, sizeof *items);
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        rc = asn_tokenize(v, texts[i], lens ? lens[i] : strlen(texts[i]), 1, classify, &ids[i], &len[i], e);
        if (len[i] > (size_t)max_tokens) {
            if (classify)
                from[i] = len[i] - (size_t)max_tokens;
            len[i] = (size_t)max_tokens;
        }
        if (!rc && len[i] == 0) {
            if (classify)
                rc = asn_err_set(e, "text %d has no tokens", i);
            else
                memset(emb + (size_t)i * dim, 0, (size_t)dim * sizeof *emb);
        }
    }
    /* consecutive texts into batches of at most batch_tokens tokens */
    for (int i = 0; i < n && !rc;) {
        int k = 0;
        long tokens = 0;
        for (; i < n; i++) {
            if (len[i] == 0)
                continue;
            if (k > 0 && tokens + (long)len[i] > batch_tokens)
                break;
            items[k++] = (asn_batch_item){asn_seq_new(en), ids[i] + from[i], (int)len[i], NULL, 0,
                                          emb ? emb + (size_t)i * dim : NULL, cls ? cls + (size_t)i * n_cls : NULL};
            tokens += (long)len[i];
        }
        if (k)
            rc = asn_engine_decode(en, items, k, e);
        for (int j = 0; j < k; j++)
            asn_seq_free(en, items[j].seq);
    }
    /* a model that gives NaN or inf (damaged weights) is an error, not a
     * score computed from it */
    for (int i = 0; i < n && !rc; i++) {
        const float *row = emb ? emb + (size_t)i * dim : cls + (size_t)i * n_cls;
        for (int d = 0; d < (emb ? dim : n_cls) && !rc; d++)
            if (!isfinite(row[d]))
                rc = asn_err_set(e, "text %d: the model's %s %d is %s", i, emb ? "embedding dimension" : "output",
                                 d, isnan(row[d]) ? "NaN" : "infinite");
    }
    for (int i = 0; i < n; i++)
        free(ids[i]);
    free(ids), free(len), free(from), free(items);
    return rc;
}

int asn_embed_texts(asn_engine *en, const asn_vocab *v, int dim, const char *const *texts, const size_t *lens,
                    int n, int max_tokens, long batch_tokens, float *out, asn_err *e)
{
    return encode(en, v, texts, lens, n, max_tokens, batch_tokens, 0, out, dim, NULL, 0, e);
}

int asn_classify_texts(asn_engine *en, const asn_vocab *v, const char *const *texts, const size_t *lens, int n,
                       int max_tokens, long batch_tokens, float *out, asn_err *e)
{
    const asn_model_config *c = asn_model_cfg(asn_engine_model(en));
    if (!c->n_cls_out)
        return asn_err_set(e, "the model has no classification head (cls.output)");
    return encode(en, v, texts, lens, n, max_tokens, batch_tokens, 1, NULL, 0, out, c->n_cls_out, e);
}
