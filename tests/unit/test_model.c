/* test_model.c — the forward pass and the engine:
 *  - logits of small random-weight models of every architecture (llama with
 *    GQA, tied output, Llama 3 rope_freqs, linear rope scaling, YaRN, a
 *    Mistral-style sliding window; qwen2 with biases; qwen3 with q/k norms
 *    and a classification head; gemma2 with soft-capping and alternating
 *    windows; gemma3 with 2:1 windowed layers and their own rope; phi3 with
 *    fused tensors and longrope; F32, F16, Q8_0, Q4_0) against a PyTorch
 *    float64 forward pass (tests/fixtures/make_model_fixtures.py,
 *    make_arch_fixtures.py), max abs difference <= 1e-4; bert's pooled
 *    embedding and classification head likewise;
 *  - bit-identical logits: prefill vs token by token, alone vs in a batch
 *    of 64 other sequences, 1 vs 2 threads, forked vs fresh sequences;
 *  - load errors and bad batches. */
#include "asn/json.h"
#include "asn/linalg.h"
#include "asn/model.h"
#include "t.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *MODELS[] = {"llama-gqa-f32",   "llama-tied-f16",   "llama3-ropefreqs-q8_0", "llama-linear-q4_0",
                               "llama-swa-f16",   "llama-yarn-f32",   "qwen2-bias-f32",        "qwen2-bias-q8_0",
                               "qwen3-cls-f32",   "qwen3-q8_0",       "gemma2-swa-f32",        "gemma3-swa-q8_0",
                               "phi3-longrope-f32", NULL};
static const char *ENCODERS[] = {"bert-cls-f32", "bert-q8_0", NULL};

static char *path(const char *name, const char *ext)
{
    static char buf[4][4096];
    static int k;
    const char *root = getenv("ASN_ROOT");
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/tests/data/models/%s%s", root ? root : ".", name, ext);
    return buf[k];
}

typedef struct fixture {
    int32_t tokens[64];
    int n;
    float *logits; /* n * V, or NULL */
    float embed[256], cls[8]; /* the mean-pooled state, the classification head */
    int n_embed, n_cls;
} fixture;

static int load_fixture(const char *name, int V, fixture *f)
{
    json_error_t je;
    json_t *j = json_load_file(path(name, ".json"), 0, &je);
    if (!j)
        return -1;
    json_t *tk = json_object_get(j, "tokens"), *lg = json_object_get(j, "logits");
    json_t *em = json_object_get(j, "embed"), *cl = json_object_get(j, "cls");
    f->n = (int)json_array_size(tk);
    f->logits = lg ? malloc((size_t)f->n * V * sizeof(float)) : NULL;
    for (int i = 0; i < f->n; i++) {
        f->tokens[i] = (int32_t)json_integer_value(json_array_get(tk, (size_t)i));
        json_t *row = json_array_get(lg, (size_t)i);
        for (int v = 0; lg && v < V; v++)
            f->logits[(size_t)i * V + v] = (float)json_real_value(json_array_get(row, (size_t)v));
    }
    f->n_embed = (int)json_array_size(em);
    f->n_cls = (int)json_array_size(cl);
    for (int i = 0; i < f->n_embed && i < 256; i++)
        f->embed[i] = (float)json_real_value(json_array_get(em, (size_t)i));
    for (int i = 0; i < f->n_cls && i < 8; i++)
        f->cls[i] = (float)json_real_value(json_array_get(cl, (size_t)i));
    json_decref(j);
    return 0;
}

static float max_diff(const float *a, const float *b, size_t n)
{
    float m = 0;
    for (size_t i = 0; i < n; i++) {
        float d = fabsf(a[i] - b[i]);
        m = d > m || d != d ? d : m;
    }
    return m;
}

/* All-position logits of tokens[0..n) in one prefill on a fresh sequence. */
static int prefill(asn_engine *en, const int32_t *tokens, int n, float *out)
{
    asn_err e;
    int s = asn_seq_new(en);
    asn_batch_item it = {s, tokens, n, out, 1, NULL, NULL};
    int rc = asn_engine_decode(en, &it, 1, &e);
    asn_seq_free(en, s);
    return rc;
}

/* Normalized mean squared error of got against ref. */
static double nmse(const float *got, const float *ref, size_t n)
{
    double se = 0, ss = 0;
    for (size_t i = 0; i < n; i++) {
        se += ((double)got[i] - ref[i]) * ((double)got[i] - ref[i]);
        ss += (double)ref[i] * ref[i];
    }
    return se / (ss > 0 ? ss : 1);
}

/* exact: quantized weights dequantized to f32 (the float64 pass agrees to
 * 1e-4); otherwise the integer product, whose 8-bit activations give
 * logits within a few percent on these small random models (a wrong scale
 * or offset gives an error of the order of the logits themselves; the
 * accuracy against llama.cpp is measured on full-size shapes by
 * tests/fixtures/accuracy_vs_float64.py). Both must be deterministic. */
static void test_reference(const char *name, int exact)
{
    asn_err e;
    char tn[200];
    asn_model *m = asn_model_load(path(name, ".gguf"), &e);
    snprintf(tn, sizeof tn, "%s loads", name);
    T_OK(tn, m != NULL, "%s", m ? "" : e.msg);
    if (!m)
        return;
    int V = asn_model_cfg(m)->n_vocab;
    fixture f;
    if (load_fixture(name, V, &f)) {
        printf("not ok - %s fixture\n", name);
        asn_model_free(m);
        return;
    }
    asn_engine *en = asn_engine_new(m, 0, NULL, &e);
    asn_engine_set_exact(en, exact);
    float *got = malloc((size_t)f.n * V * sizeof *got);
    prefill(en, f.tokens, f.n, got);
    float md = max_diff(got, f.logits, (size_t)f.n * V);
    const char *mode = exact ? "exact" : "integer";
    if (exact || !asn_qmatmul_supported(asn_gguf_find_tensor(asn_model_gguf(m), "blk.0.ffn_up.weight")->type, asn_model_cfg(m)->n_embd)) {
        snprintf(tn, sizeof tn, "%s (%s): logits of %d positions match PyTorch float64 (max |diff| %.2g)", name,
                 mode, f.n, md);
        T_OK(tn, md <= 1e-4f, "max abs difference %g > 1e-4", md);
    } else {
        double err = nmse(got, f.logits, (size_t)f.n * V);
        snprintf(tn, sizeof tn, "%s (%s): logits of %d positions near PyTorch float64 (NMSE %.2g, max |diff| %.2g)",
                 name, mode, f.n, err, md);
        T_OK(tn, err <= 2e-2, "NMSE %g > 2e-2", err);
    }

    if (f.n_cls) { /* a reranker / reward head: the last token's state */
        float cls[8];
        int sq = asn_seq_new(en);
        asn_batch_item ci = {sq, f.tokens, f.n, NULL, 0, NULL, cls};
        int rc = asn_engine_decode(en, &ci, 1, &e);
        asn_seq_free(en, sq);
        float cd = max_diff(cls, f.cls, (size_t)f.n_cls);
        snprintf(tn, sizeof tn, "%s (%s): classification head matches PyTorch float64 (max |diff| %.2g)", name, mode, cd);
        T_OK(tn, rc == 0 && asn_model_cfg(m)->n_cls_out == f.n_cls && cd <= (exact ? 1e-4f : 5e-2f * (1 + fabsf(f.cls[0]))),
             "rc %d, n_cls_out %d, max diff %g", rc, asn_model_cfg(m)->n_cls_out, cd);
    }

    /* token by token: the same bits as the prefill */
    float *step = malloc((size_t)f.n * V * sizeof *step);
    int s = asn_seq_new(en);
    for (int i = 0; i < f.n; i++) {
        asn_batch_item it = {s, f.tokens + i, 1, step + (size_t)i * V, 0, NULL, NULL};
        asn_engine_decode(en, &it, 1, &e);
    }
    asn_seq_free(en, s);
    snprintf(tn, sizeof tn, "%s (%s): token-by-token decode is bit-identical to prefill", name, mode);
    T_OK(tn, !memcmp(step, got, (size_t)f.n * V * sizeof *got), "max diff %g", max_diff(step, got, (size_t)f.n * V));

    /* in a batch of 64 sequences, with 2 threads and forks of a shared prefix */
    asn_pool *pool = asn_pool_new(2);
    asn_engine *en2 = asn_engine_new(m, 0, pool, &e);
    asn_engine_set_exact(en2, exact);
    int root = asn_seq_new(en2);
    asn_batch_item it = {root, f.tokens, 8, NULL, 0, NULL, NULL};
    asn_engine_decode(en2, &it, 1, &e);
    asn_batch_item items[65];
    int32_t other[64][20];
    float *outs = malloc((size_t)65 * V * sizeof *outs);
    srand(7);
    for (int i = 0; i < 64; i++) {
        int forked = i % 2;
        items[i].seq = forked ? asn_seq_fork(en2, root) : asn_seq_new(en2);
        for (int j = 0; j < 20; j++)
            other[i][j] = rand() % V;
        items[i].tokens = other[i];
        items[i].n = 1 + i % 5;
        items[i].logits = outs + (size_t)i * V;
        items[i].all_logits = 0;
        items[i].embed = NULL;
        items[i].cls = NULL;
    }
    /* the sequence under test: fork of the 8-token prefix, then the rest */
    items[64] = (asn_batch_item){asn_seq_fork(en2, root), f.tokens + 8, f.n - 8, outs + (size_t)64 * V, 0, NULL, NULL};
    int rc = asn_engine_decode(en2, items, 65, &e);
    snprintf(tn, sizeof tn, "%s (%s): last logits in a batch of 65 (forks, 2 threads) equal the solo prefill", name, mode);
    T_OK(tn, rc == 0 && !memcmp(outs + (size_t)64 * V, got + (size_t)(f.n - 1) * V, (size_t)V * sizeof(float)),
         "rc %d, max diff %g", rc, max_diff(outs + (size_t)64 * V, got + (size_t)(f.n - 1) * V, (size_t)V));
    /* a forked sequence's other members are unaffected by its writes */
    float *alone = malloc((size_t)V * sizeof *alone);
    int32_t seq3[28];
    memcpy(seq3, f.tokens, 8 * sizeof *seq3);
    memcpy(seq3 + 8, other[3], (size_t)items[3].n * sizeof *seq3);
    float *all3 = malloc((size_t)28 * V * sizeof *all3);
    prefill(en, seq3, 8 + items[3].n, all3);
    memcpy(alone, all3 + (size_t)(8 + items[3].n - 1) * V, (size_t)V * sizeof *alone);
    snprintf(tn, sizeof tn, "%s (%s): a fork sharing the prefix equals a fresh sequence", name, mode);
    T_OK(tn, !memcmp(alone, outs + (size_t)3 * V, (size_t)V * sizeof *alone), "max diff %g",
         max_diff(alone, outs + (size_t)3 * V, (size_t)V));
    free(all3);
    free(alone);
    free(outs);
    asn_engine_free(en2);
    asn_pool_free(pool);
    free(step);
    free(got);
    free(f.logits);
    asn_engine_free(en);
    asn_model_free(m);
}

static void test_errors(void)
{
    asn_err e;
    asn_model *m = asn_model_load(path("does-not-exist", ".gguf"), &e);
    T_OK("missing file is an error naming it", !m && strstr(e.msg, "does-not-exist"), "\"%s\"", e.msg);
    m = asn_model_load(path("llama-gqa-f32", ".json"), &e);
    T_OK("a JSON file is not a GGUF", !m && strstr(e.msg, "llama-gqa-f32.json"), "\"%s\"", e.msg);

    /* unsupported architecture, missing tensor, wrong shape: small written files */
    char tmp[] = "/tmp/asn-model-XXXXXX";
    int fd = mkstemp(tmp);
    close(fd);
    asn_gguf_writer *w = asn_gguf_writer_new();
    asn_gguf_set_str(w, "general.architecture", "gpt2");
    asn_gguf_write(w, tmp, &e);
    asn_gguf_writer_free(w);
    m = asn_model_load(tmp, &e);
    T_OK("unsupported architecture is named, with the supported ones",
         !m && strstr(e.msg, "\"gpt2\"") && strstr(e.msg, "llama") && strstr(e.msg, "gemma3") && strstr(e.msg, "bert"),
         "\"%s\"", e.msg);

    asn_model *good = asn_model_load(path("llama-gqa-f32", ".gguf"), &e);
    const asn_gguf *g = asn_model_gguf(good);
    for (int variant = 0; variant < 2; variant++) {
        w = asn_gguf_writer_new();
        for (size_t i = 0; i < asn_gguf_n_kv(g); i++) {
            const asn_gguf_kv *kv = asn_gguf_kv_at(g, i);
            char key[256];
            snprintf(key, sizeof key, "%.*s", (int)kv->key.n, kv->key.p);
            if (kv->type == ASN_GGUF_U32)
                asn_gguf_set_u32(w, key, (uint32_t)kv->v.u);
            else if (kv->type == ASN_GGUF_F32)
                asn_gguf_set_f32(w, key, (float)kv->v.f);
            else if (kv->type == ASN_GGUF_STRING) {
                char val[256];
                snprintf(val, sizeof val, "%.*s", (int)kv->v.s.n, kv->v.s.p);
                asn_gguf_set_str(w, key, val);
            } else if (kv->type == ASN_GGUF_ARRAY) {
                const char **s = malloc(kv->v.arr.n * sizeof *s);
                char(*bufs)[16] = malloc(kv->v.arr.n * sizeof *bufs);
                for (uint64_t k = 0; k < kv->v.arr.n; k++) {
                    asn_gguf_str x = asn_gguf_arr_str(kv, k);
                    snprintf(bufs[k], 16, "%.*s", (int)x.n, x.p);
                    s[k] = bufs[k];
                }
                asn_gguf_set_arr_str(w, key, s, kv->v.arr.n);
                free(s);
                free(bufs);
            }
        }
        for (size_t i = 0; i < asn_gguf_n_tensors(g); i++) {
            const asn_gguf_tensor *t = asn_gguf_tensor_at(g, i);
            char name[128];
            snprintf(name, sizeof name, "%.*s", (int)t->name.n, t->name.p);
            if (variant == 0 && !strcmp(name, "blk.1.ffn_up.weight"))
                continue; /* missing */
            int64_t ne[4] = {t->ne[0], t->ne[1], 1, 1};
            if (variant == 1 && !strcmp(name, "blk.0.attn_k.weight"))
                ne[1] = t->ne[1] / 2, ne[0] = t->ne[0] * 2; /* same bytes, wrong shape */
            asn_gguf_add_tensor(w, name, t->type, t->n_dims, ne, t->data);
        }
        asn_gguf_write(w, tmp, &e);
        asn_gguf_writer_free(w);
        m = asn_model_load(tmp, &e);
        if (variant == 0)
            T_OK("missing tensor is named", !m && strstr(e.msg, "blk.1.ffn_up.weight is missing"), "\"%s\"", e.msg);
        else
            T_OK("wrong tensor shape is named with both shapes",
                 !m && strstr(e.msg, "blk.0.attn_k.weight has shape {128, 16}, expected {64, 32}"), "\"%s\"", e.msg);
        asn_model_free(m);
    }
    remove(tmp);

    asn_engine *en = asn_engine_new(good, 16, NULL, &e);
    int s = asn_seq_new(en);
    int32_t bad[2] = {5, 100000};
    asn_batch_item it = {s, bad, 2, NULL, 0, NULL, NULL};
    int rc = asn_engine_decode(en, &it, 1, &e);
    T_OK("token id out of range is an error", rc == -1 && strstr(e.msg, "100000"), "\"%s\"", e.msg);
    int32_t many[20] = {0};
    it.tokens = many;
    it.n = 20;
    rc = asn_engine_decode(en, &it, 1, &e);
    T_OK("prompt longer than the context is an error", rc == -1 && strstr(e.msg, "exceeds the context of 16"), "\"%s\"", e.msg);
    T_EQ_INT("a failed decode leaves the sequence unchanged", asn_seq_len(en, s), 0);
    asn_engine_free(en);
    asn_model_free(good);
}

/* An encoder (bert): the whole text in one item gives the mean-pooled
 * embedding and the classification head; both match the float64 pass and
 * are bit-identical in a batch of other texts with 2 threads. With 8-bit
 * activations (integer mode) the head's one output reads one token's
 * state through two random 64-wide products, whose gain turns the ~2 %
 * state error into up to ~20 %: the exact mode is the tight check. */
static void test_encoder(const char *name, int exact)
{
    asn_err e;
    char tn[200];
    const char *mode = exact ? "exact" : "integer";
    asn_model *m = asn_model_load(path(name, ".gguf"), &e);
    snprintf(tn, sizeof tn, "%s loads", name);
    T_OK(tn, m != NULL, "%s", m ? "" : e.msg);
    fixture f;
    if (!m || load_fixture(name, 0, &f)) {
        asn_model_free(m);
        return;
    }
    const asn_model_config *c = asn_model_cfg(m);
    float emb[256], cls[8], emb2[256], cls2[8];
    asn_engine *en = asn_engine_new(m, 0, NULL, &e);
    asn_engine_set_exact(en, exact);
    asn_batch_item it = {asn_seq_new(en), f.tokens, f.n, NULL, 0, emb, cls};
    int rc = asn_engine_decode(en, &it, 1, &e);
    float de = max_diff(emb, f.embed, (size_t)f.n_embed), dc = max_diff(cls, f.cls, (size_t)f.n_cls);
    double ne = nmse(emb, f.embed, (size_t)f.n_embed), nc = nmse(cls, f.cls, (size_t)f.n_cls);
    snprintf(tn, sizeof tn, "%s (%s): mean-pooled embedding and classification head match PyTorch float64 "
             "(max |diff| %.2g, %.2g)", name, mode, de, dc);
    T_OK(tn, rc == 0 && c->n_embd == f.n_embed && c->n_cls_out == f.n_cls &&
             (exact ? de <= 1e-4f && dc <= 1e-4f : ne <= 2e-2 && dc <= 0.3f * (1 + fabsf(f.cls[0]))),
         "rc %d, NMSE %g %g", rc, ne, nc);

    asn_pool *pool = asn_pool_new(2);
    asn_engine *en2 = asn_engine_new(m, 0, pool, &e);
    asn_engine_set_exact(en2, exact);
    asn_batch_item items[9];
    int32_t other[8][30];
    float oe[8][256];
    for (int i = 0; i < 8; i++) {
        for (int j = 0; j < 30; j++)
            other[i][j] = (i * 7 + j * 13) % c->n_vocab;
        items[i] = (asn_batch_item){asn_seq_new(en2), other[i], 3 + 3 * i, NULL, 0, oe[i], NULL};
    }
    items[8] = (asn_batch_item){asn_seq_new(en2), f.tokens, f.n, NULL, 0, emb2, cls2};
    rc = asn_engine_decode(en2, items, 9, &e);
    snprintf(tn, sizeof tn, "%s (%s): embedding and head in a batch of 9 texts (2 threads) are bit-identical", name, mode);
    T_OK(tn, rc == 0 && !memcmp(emb, emb2, (size_t)c->n_embd * sizeof *emb) && !memcmp(cls, cls2, (size_t)f.n_cls * sizeof *cls),
         "rc %d, max diff %g", rc, max_diff(emb, emb2, (size_t)c->n_embd));
    float lg[8];
    asn_batch_item bad = {asn_seq_new(en2), f.tokens, 2, lg, 0, NULL, NULL};
    rc = asn_engine_decode(en2, &bad, 1, &e);
    snprintf(tn, sizeof tn, "%s: asking an encoder for logits is an error", name);
    T_OK(tn, rc == -1 && strstr(e.msg, "no language-model head"), "\"%s\"", e.msg);
    asn_engine_free(en2);
    asn_pool_free(pool);
    asn_engine_free(en);
    asn_model_free(m);
}

int main(void)
{
    for (int i = 0; MODELS[i]; i++)
        test_reference(MODELS[i], 1), test_reference(MODELS[i], 0);
    for (int i = 0; ENCODERS[i]; i++)
        test_encoder(ENCODERS[i], 1), test_encoder(ENCODERS[i], 0);
    test_errors();
    T_DONE();
}
