/* encode.c — whole texts through the batched engine (asn/encode.h):
 * tokenized one by one, grouped into forward passes of at most a token
 * budget, each text one batch item on a sequence of its own. */
#include "asn/encode.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int asn_classify_tokenize(const asn_vocab *v, const char *text, size_t len, int max_tokens, int32_t **ids, int *n,
                          asn_err *e)
{
    size_t k;
    if (max_tokens <= 0)
        return asn_err_set(e, "max_tokens must be positive");
    if (asn_tokenize(v, text, len, 1, 1, ids, &k, e))
        return -1;
    if (k > (size_t)max_tokens) { /* the head reads the end */
        memmove(*ids, *ids + (k - (size_t)max_tokens), (size_t)max_tokens * sizeof **ids);
        k = (size_t)max_tokens;
    }
    *n = (int)k;
    return 0;
}

/* Runs the token lists ids[0..n) (len[i] tokens, 0: skipped) and writes,
 * per list i, its pooled embedding into emb + i * dim and/or its head's
 * values into cls + i * n_cls. */
static int run_lists(asn_engine *en, int32_t *const *ids, const int *len, int n, long batch_tokens, float *emb,
                     int dim, float *cls, int n_cls, asn_err *e)
{
    asn_batch_item *items = asn_xcalloc((size_t)n + 1, sizeof *items);
    int rc = 0;
    /* consecutive lists into batches of at most batch_tokens tokens */
    for (int i = 0; i < n && !rc;) {
        int k = 0;
        long tokens = 0;
        for (; i < n; i++) {
            if (len[i] == 0)
                continue;
            if (k > 0 && tokens + (long)len[i] > batch_tokens)
                break;
            items[k++] = (asn_batch_item){asn_seq_new(en), ids[i], len[i], NULL, 0,
                                          emb ? emb + (size_t)i * dim : NULL, cls ? cls + (size_t)i * n_cls : NULL};
            tokens += (long)len[i];
        }
        if (k)
            rc = asn_engine_decode(en, items, k, e);
        for (int j = 0; j < k; j++)
            asn_seq_free(en, items[j].seq);
    }
    free(items);
    return rc;
}

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
    int *len = asn_xcalloc((size_t)n + 1, sizeof *len);
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        size_t tl = lens ? lens[i] : strlen(texts[i]), k = 0;
        if (classify) {
            rc = asn_classify_tokenize(v, texts[i], tl, max_tokens, &ids[i], &len[i], e);
        } else {
            rc = asn_tokenize(v, texts[i], tl, 1, 0, &ids[i], &k, e);
            len[i] = k > (size_t)max_tokens ? max_tokens : (int)k;
        }
        if (!rc && len[i] == 0) {
            if (classify)
                rc = asn_err_set(e, "text %d has no tokens", i);
            else
                memset(emb + (size_t)i * dim, 0, (size_t)dim * sizeof *emb);
        }
    }
    if (!rc)
        rc = run_lists(en, ids, len, n, batch_tokens, emb, dim, cls, n_cls, e);
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
    free(ids), free(len);
    return rc;
}

int asn_classify_tokens(asn_engine *en, int32_t *const *ids, const int *lens, int n, long batch_tokens, float *out,
                        asn_err *e)
{
    const asn_model_config *c = asn_model_cfg(asn_engine_model(en));
    if (!c->n_cls_out)
        return asn_err_set(e, "the model has no classification head (cls.output)");
    for (int i = 0; i < n; i++)
        if (lens[i] < 1)
            return asn_err_set(e, "text %d has no tokens", i);
    return run_lists(en, ids, lens, n, batch_tokens, NULL, 0, out, c->n_cls_out, e);
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
