/* model.c — loading a Llama-family model from GGUF: hyper-parameters from
 * the metadata (keys of llama.cpp's llama-arch.cpp), every tensor checked
 * for presence, shape and type before anything runs. */
#include "model_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* -------------------------------------------------------- hyper-params */

static int get_u32(asn_model *m, const char *suffix, int required, int *out, asn_err *e)
{
    char key[128];
    snprintf(key, sizeof key, "%s.%s", m->cfg.arch, suffix);
    uint32_t v = (uint32_t)*out;
    if (asn_gguf_get_u32(m->g, key, required, &v, e))
        return -1;
    if (v > (1u << 30))
        return asn_err_set(e, "%s: %s = %u is out of range", m->path, key, v);
    *out = (int)v;
    return 0;
}

static int get_f32(asn_model *m, const char *suffix, int required, float *out, asn_err *e)
{
    char key[128];
    snprintf(key, sizeof key, "%s.%s", m->cfg.arch, suffix);
    return asn_gguf_get_f32(m->g, key, required, out, e);
}

static int load_config(asn_model *m, asn_err *e)
{
    asn_model_config *c = &m->cfg;
    char *arch = NULL;
    if (asn_gguf_get_str(m->g, "general.architecture", 1, &arch, e))
        return -1;
    int known = !strcmp(arch, "llama") || !strcmp(arch, "qwen2");
    snprintf(c->arch, sizeof c->arch, "%s", arch);
    if (!known) {
        asn_err_set(e, "%s: unsupported architecture \"%s\" (asn runs llama and qwen2)", m->path, arch);
        free(arch);
        return -1;
    }
    free(arch);
    if (get_u32(m, "context_length", 1, &c->n_ctx_train, e) ||
        get_u32(m, "embedding_length", 1, &c->n_embd, e) ||
        get_u32(m, "block_count", 1, &c->n_layer, e) ||
        get_u32(m, "feed_forward_length", 1, &c->n_ff, e) ||
        get_u32(m, "attention.head_count", 1, &c->n_head, e))
        return -1;
    if (!c->n_embd || !c->n_layer || !c->n_ff || !c->n_head)
        return asn_err_set(e, "%s: embedding_length, block_count, feed_forward_length and "
                              "head_count must be positive", m->path);
    c->n_head_kv = c->n_head;
    if (get_u32(m, "attention.head_count_kv", 0, &c->n_head_kv, e))
        return -1;
    if (!c->n_head_kv || c->n_head % c->n_head_kv)
        return asn_err_set(e, "%s: head_count (%d) must be a multiple of head_count_kv (%d)",
                           m->path, c->n_head, c->n_head_kv);
    c->head_dim = c->n_embd / c->n_head;
    if (get_u32(m, "attention.key_length", 0, &c->head_dim, e))
        return -1;
    int vdim = c->head_dim;
    if (get_u32(m, "attention.value_length", 0, &vdim, e))
        return -1;
    if (vdim != c->head_dim || !c->head_dim || c->head_dim % 2)
        return asn_err_set(e, "%s: key and value head sizes must be equal and even (%d, %d)",
                           m->path, c->head_dim, vdim);
    c->n_rot = c->head_dim;
    if (get_u32(m, "rope.dimension_count", 0, &c->n_rot, e))
        return -1;
    if (c->n_rot != c->head_dim)
        return asn_err_set(e, "%s: partial rotary embeddings (rope.dimension_count %d, head size "
                              "%d) are not supported", m->path, c->n_rot, c->head_dim);
    c->rope_base = 10000.0f;
    c->rope_freq_scale = 1.0f;
    if (get_f32(m, "rope.freq_base", 0, &c->rope_base, e) ||
        get_f32(m, "attention.layer_norm_rms_epsilon", 1, &c->rms_eps, e))
        return -1;
    char key[128], *scaling = NULL;
    snprintf(key, sizeof key, "%s.rope.scaling.type", c->arch);
    if (asn_gguf_get_str(m->g, key, 0, &scaling, e))
        return -1;
    if (scaling && strcmp(scaling, "none") && strcmp(scaling, "linear")) {
        asn_err_set(e, "%s: rope scaling \"%s\" is not supported (none, linear)", m->path, scaling);
        free(scaling);
        return -1;
    }
    free(scaling);
    float factor = 0;
    if (get_f32(m, "rope.scaling.factor", 0, &factor, e) || get_f32(m, "rope.scale_linear", 0, &factor, e))
        return -1;
    if (factor > 0)
        c->rope_freq_scale = 1.0f / factor;
    c->rope_neox = !strcmp(c->arch, "qwen2");
    return 0;
}

/* -------------------------------------------------------------- tensors */

/* Finds a tensor: 0 with *t (NULL if absent and optional), or -1. */
static int tensor(asn_model *m, const char *name, int required, const asn_gguf_tensor **t, asn_err *e)
{
    *t = asn_gguf_find_tensor(m->g, name);
    if (!*t)
        return required ? asn_err_set(e, "%s: tensor %s is missing", m->path, name) : 0;
    if (!asn_ttype_supported((*t)->type))
        return asn_err_set(e, "%s: tensor %s has type %s, which asn cannot compute with "
                              "(supported: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, "
                              "Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS)",
                           m->path, name, asn_ttype_name((*t)->type));
    return 0;
}

static int load_mat(asn_model *m, const char *name, int cols, int rows, int required, wmat *w, asn_err *e)
{
    const asn_gguf_tensor *t;
    if (tensor(m, name, required, &t, e))
        return -1;
    if (!t)
        return 0;
    if (t->n_dims != 2 || t->ne[0] != cols || t->ne[1] != rows)
        return asn_err_set(e, "%s: tensor %s has shape {%lld, %lld}, expected {%d, %d}", m->path, name,
                           (long long)t->ne[0], (long long)t->ne[1], cols, rows);
    *w = (wmat){t->data, t->type, rows, cols};
    return 0;
}

/* A 1-D tensor of n values, dequantized into a new f32 array (NULL and 0
 * when absent and optional). */
static int load_vec(asn_model *m, const char *name, int n, int required, float **out, asn_err *e)
{
    *out = NULL;
    const asn_gguf_tensor *t;
    if (tensor(m, name, required, &t, e))
        return -1;
    if (!t)
        return 0;
    if (t->ne[0] != n || t->ne[1] != 1 || t->ne[2] != 1 || t->ne[3] != 1)
        return asn_err_set(e, "%s: tensor %s has %lld values, expected %d", m->path, name,
                           (long long)(t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3]), n);
    *out = asn_xmalloc((size_t)n * sizeof **out);
    asn_dequantize_row(t->type, t->data, *out, n);
    return 0;
}

static int load_tensors(asn_model *m, asn_err *e)
{
    const asn_model_config *c = &m->cfg;
    int d = c->n_embd, qd = c->n_head * c->head_dim, kvd = c->n_head_kv * c->head_dim;
    if (load_mat(m, "token_embd.weight", d, c->n_vocab, 1, &m->tok_embd, e) ||
        load_vec(m, "output_norm.weight", d, 1, &m->output_norm, e) ||
        load_mat(m, "output.weight", d, c->n_vocab, 0, &m->output, e))
        return -1;
    m->cfg.tied_output = m->output.data == NULL;
    if (m->cfg.tied_output)
        m->output = m->tok_embd;
    if (load_vec(m, "rope_freqs.weight", c->n_rot / 2, 0, &m->rope_freqs, e))
        return -1;
    m->cfg.has_rope_freqs = m->rope_freqs != NULL;
    if (asn_gguf_find_tensor(m->g, "blk.0.attn_qkv.weight"))
        return asn_err_set(e, "%s: fused attn_qkv tensors are not supported", m->path);
    m->layers = asn_xcalloc((size_t)c->n_layer, sizeof *m->layers);
    for (int l = 0; l < c->n_layer; l++) {
        layer_w *L = &m->layers[l];
        char n[96];
#define NAME(s) (snprintf(n, sizeof n, "blk.%d.%s", l, s), n)
        if (load_vec(m, NAME("attn_norm.weight"), d, 1, &L->attn_norm, e) ||
            load_vec(m, NAME("ffn_norm.weight"), d, 1, &L->ffn_norm, e) ||
            load_mat(m, NAME("attn_q.weight"), d, qd, 1, &L->wq, e) ||
            load_mat(m, NAME("attn_k.weight"), d, kvd, 1, &L->wk, e) ||
            load_mat(m, NAME("attn_v.weight"), d, kvd, 1, &L->wv, e) ||
            load_mat(m, NAME("attn_output.weight"), qd, d, 1, &L->wo, e) ||
            load_mat(m, NAME("ffn_gate.weight"), d, c->n_ff, 1, &L->gate, e) ||
            load_mat(m, NAME("ffn_up.weight"), d, c->n_ff, 1, &L->up, e) ||
            load_mat(m, NAME("ffn_down.weight"), c->n_ff, d, 1, &L->down, e) ||
            load_vec(m, NAME("attn_q.bias"), qd, 0, &L->bq, e) ||
            load_vec(m, NAME("attn_k.bias"), kvd, 0, &L->bk, e) ||
            load_vec(m, NAME("attn_v.bias"), kvd, 0, &L->bv, e))
            return -1;
#undef NAME
        if (!!L->bq != !!L->bk || !!L->bq != !!L->bv)
            return asn_err_set(e, "%s: layer %d has some but not all of the q/k/v biases", m->path, l);
        if (l == 0)
            m->cfg.has_qkv_bias = L->bq != NULL;
        else if (m->cfg.has_qkv_bias != (L->bq != NULL))
            return asn_err_set(e, "%s: layer %d differs from layer 0 in q/k/v biases", m->path, l);
    }
    return 0;
}

/* ---------------------------------------------------------------- public */

asn_model *asn_model_load(const char *path, asn_err *e)
{
    asn_model *m = asn_xcalloc(1, sizeof *m);
    m->path = asn_xstrdup(path);
    if (!(m->g = asn_gguf_open(path, e)) || load_config(m, e))
        goto fail;
    /* vocabulary size: the arch key if present, else the token list */
    const asn_gguf_kv *toks = NULL;
    if (asn_gguf_get_arr(m->g, "tokenizer.ggml.tokens", 0, &toks, e))
        goto fail;
    m->cfg.n_vocab = toks ? (int)toks->v.arr.n : 0;
    if (get_u32(m, "vocab_size", 0, &m->cfg.n_vocab, e))
        goto fail;
    if (m->cfg.n_vocab <= 0) {
        asn_err_set(e, "%s: no vocabulary (tokenizer.ggml.tokens or %s.vocab_size)", path, m->cfg.arch);
        goto fail;
    }
    if (toks && (int)toks->v.arr.n != m->cfg.n_vocab) {
        asn_err_set(e, "%s: vocab_size %d differs from the %llu tokens of the tokenizer", path,
                    m->cfg.n_vocab, (unsigned long long)toks->v.arr.n);
        goto fail;
    }
    if (load_tensors(m, e))
        goto fail;
    return m;
fail:
    asn_model_free(m);
    return NULL;
}

void asn_model_free(asn_model *m)
{
    if (!m)
        return;
    for (int l = 0; m->layers && l < m->cfg.n_layer; l++) {
        layer_w *L = &m->layers[l];
        free(L->attn_norm);
        free(L->ffn_norm);
        free(L->bq);
        free(L->bk);
        free(L->bv);
    }
    free(m->layers);
    free(m->output_norm);
    free(m->rope_freqs);
    asn_vocab_free(m->vocab);
    asn_gguf_close(m->g);
    free(m->path);
    free(m);
}

const asn_model_config *asn_model_cfg(const asn_model *m) { return &m->cfg; }
const asn_gguf *asn_model_gguf(const asn_model *m) { return m->g; }
const char *asn_model_path(const asn_model *m) { return m->path; }

const asn_vocab *asn_model_vocab(asn_model *m, asn_err *e)
{
    if (!m->vocab && !(m->vocab = asn_vocab_load(m->g, e)))
        asn_err_prefix(e, "%s", m->path);
    return m->vocab;
}

const char *asn_model_sha256(asn_model *m, asn_err *e)
{
    if (!m->sha256[0] && asn_sha256_file(m->path, m->sha256, e))
        return NULL;
    return m->sha256;
}
