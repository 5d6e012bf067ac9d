/* model.c — loading a Llama-family model from GGUF: hyper-parameters from
 * the metadata (keys of llama.cpp's llama-arch.cpp), every tensor checked
 * for presence, shape and type before anything runs. */
#include "arch.h"

#include <math.h>

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

int arch_has_key(const asn_model *m, const char *suffix)
{
    char key[128];
    snprintf(key, sizeof key, "%s.%s", m->cfg.arch, suffix);
    return asn_gguf_find(m->g, key) != NULL;
}

static int get_str(asn_model *m, const char *suffix, char **out, asn_err *e)
{
    char key[128];
    snprintf(key, sizeof key, "%s.%s", m->cfg.arch, suffix);
    return asn_gguf_get_str(m->g, key, 0, out, e);
}

static int load_rope(asn_model *m, asn_err *e)
{
    asn_model_config *c = &m->cfg;
    if (m->arch->no_rope) {
        c->n_rot = 0;
        return 0;
    }
    c->n_rot = c->head_dim;
    if (get_u32(m, "rope.dimension_count", 0, &c->n_rot, e))
        return -1;
    if (c->n_rot != c->head_dim)
        return asn_err_set(e, "%s: partial rotary embeddings (rope.dimension_count %d, head size "
                              "%d) are not supported", m->path, c->n_rot, c->head_dim);
    c->rope_neox = m->arch->rope_neox;
    c->rope_base = 10000.0f;
    c->rope_freq_scale = 1.0f;
    c->rope_attn_factor = 1.0f;
    c->yarn_beta_fast = 32.0f;
    c->yarn_beta_slow = 1.0f;
    c->n_ctx_orig = c->n_ctx_train;
    char *scaling = NULL;
    if (get_f32(m, "rope.freq_base", 0, &c->rope_base, e) || get_str(m, "rope.scaling.type", &scaling, e))
        return -1;
    static const char *const kinds[] = {"none", "linear", "yarn", "longrope"};
    c->rope_scaling = scaling ? -1 : ASN_ROPE_NONE;
    for (int k = 0; scaling && k < 4; k++)
        if (!strcmp(scaling, kinds[k]))
            c->rope_scaling = k;
    if (c->rope_scaling < 0) {
        asn_err_set(e, "%s: rope scaling \"%s\" is not supported (none, linear, yarn, longrope)", m->path, scaling);
        free(scaling);
        return -1;
    }
    free(scaling);
    float factor = 0;
    if (get_f32(m, "rope.scaling.factor", 0, &factor, e) || get_f32(m, "rope.scale_linear", 0, &factor, e) ||
        get_f32(m, "rope.scaling.attn_factor", 0, &c->rope_attn_factor, e) ||
        get_f32(m, "rope.scaling.yarn_beta_fast", 0, &c->yarn_beta_fast, e) ||
        get_f32(m, "rope.scaling.yarn_beta_slow", 0, &c->yarn_beta_slow, e) ||
        get_u32(m, "rope.scaling.original_context_length", 0, &c->n_ctx_orig, e))
        return -1;
    if (factor > 0 && c->rope_scaling != ASN_ROPE_LONGROPE)
        c->rope_freq_scale = 1.0f / factor;
    c->rope_base_swa = c->rope_base;
    c->rope_freq_scale_swa = c->rope_freq_scale;
    return get_f32(m, "rope.freq_base_swa", 0, &c->rope_base_swa, e);
}

static int load_config(asn_model *m, asn_err *e)
{
    asn_model_config *c = &m->cfg;
    char *arch = NULL;
    if (asn_gguf_get_str(m->g, "general.architecture", 1, &arch, e))
        return -1;
    snprintf(c->arch, sizeof c->arch, "%s", arch);
    m->arch = asn_arch_find(arch);
    if (!m->arch) {
        asn_err_set(e, "%s: unsupported architecture \"%s\" (asn runs %s)", m->path, arch, asn_arch_names());
        free(arch);
        return -1;
    }
    free(arch);
    const asn_arch *A = m->arch;
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
    /* every size the tensor tables derive stays an int */
    if ((int64_t)(c->n_head + 2 * (int64_t)c->n_head_kv) * c->head_dim > (1 << 30) || c->n_ff > (1 << 29))
        return asn_err_set(e, "%s: head_count %d, head_count_kv %d, head size %d and feed_forward_length %d "
                              "are out of range", m->path, c->n_head, c->n_head_kv, c->head_dim, c->n_ff);
    if (get_f32(m, "attention.layer_norm_rms_epsilon", A->norm == NORM_RMS, &c->rms_eps, e) ||
        get_f32(m, "attention.layer_norm_epsilon", A->norm == NORM_LAYER, &c->norm_eps, e) || load_rope(m, e))
        return -1;
    c->causal = !A->non_causal;
    c->n_swa = A->n_swa;
    c->swa_period = A->swa_period;
    c->attn_softcap = A->attn_softcap;
    c->final_softcap = A->final_softcap;
    c->attn_scale = 1.0f / sqrtf((float)c->head_dim);
    c->embed_scale = A->embed_scale_sqrt ? sqrtf((float)c->n_embd) : 1.0f;
    c->cls_pooling = A->pooling;
    c->pooling = ASN_POOL_MEAN;
    if (get_u32(m, "attention.sliding_window", 0, &c->n_swa, e) ||
        get_u32(m, "attention.sliding_window_pattern", 0, &c->swa_period, e) ||
        get_f32(m, "attention.scale", 0, &c->attn_scale, e) ||
        get_f32(m, "attn_logit_softcapping", 0, &c->attn_softcap, e) ||
        get_f32(m, "final_logit_softcapping", 0, &c->final_softcap, e) ||
        get_u32(m, "pooling_type", 0, &c->pooling, e))
        return -1;
    if (c->pooling > ASN_POOL_RANK)
        return asn_err_set(e, "%s: %s.pooling_type %d is not a pooling type (0-4)", m->path, c->arch, c->pooling);
    return A->hparams ? A->hparams(m, e) : 0;
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
    if (t->n_dims > 2 || t->ne[0] != cols || (rows >= 0 && t->ne[1] != rows) || t->ne[1] > (1 << 30)) {
        char want[32];
        snprintf(want, sizeof want, rows >= 0 ? "%d" : "any", rows);
        return asn_err_set(e, "%s: tensor %s has shape {%lld, %lld}, expected {%d, %s}", m->path, name,
                           (long long)t->ne[0], (long long)t->ne[1], cols, want);
    }
    *w = (wmat){t->data, t->type, (int)t->ne[1], cols};
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
    if (n < 0 && t->ne[0] <= (1 << 30))
        n = (int)t->ne[0]; /* any length (checked by the caller) */
    if (t->ne[0] != n || t->ne[1] != 1 || t->ne[2] != 1 || t->ne[3] != 1)
        return asn_err_set(e, "%s: tensor %s has %lld values, expected %d", m->path, name,
                           (long long)(t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3]), n);
    *out = asn_xmalloc((size_t)n * sizeof **out);
    asn_dequantize_row(t->type, t->data, *out, n);
    return 0;
}

/* The size a dimension of the table stands for (-1: any). */
static int dim_size(const asn_model_config *c, int dim)
{
    switch (dim) {
    case D_EMBD: return c->n_embd;
    case D_Q: return c->n_head * c->head_dim;
    case D_KV: return c->n_head_kv * c->head_dim;
    case D_QKV: return (c->n_head + 2 * c->n_head_kv) * c->head_dim;
    case D_FF: return c->n_ff;
    case D_FF2: return 2 * c->n_ff;
    case D_HEAD: return c->head_dim;
    case D_ROT2: return c->n_rot / 2;
    case D_VOCAB: return c->n_vocab;
    case D_CTX: return c->n_ctx_train;
    default: return -1;
    }
}

/* Loads the tensors of one table into base (a layer_w or the model_w),
 * names prefixed by prefix. */
static int load_table(asn_model *m, const tensor_spec *specs, const char *prefix, void *base, asn_err *e)
{
    for (const tensor_spec *s = specs; s && s->name; s++) {
        char name[128];
        snprintf(name, sizeof name, "%s%s", prefix, s->name);
        int cols = dim_size(&m->cfg, s->cols), rows = dim_size(&m->cfg, s->rows);
        void *slot = (char *)base + s->off;
        if (s->kind == T_VEC ? load_vec(m, name, cols, s->need, (float **)slot, e)
                             : load_mat(m, name, cols, rows, s->need, (wmat *)slot, e))
            return -1;
    }
    return 0;
}

static int load_tensors(asn_model *m, asn_err *e)
{
    asn_model_config *c = &m->cfg;
    if (load_table(m, m->arch->globals, "", &m->w, e))
        return -1;
    m->cfg.tied_output = m->w.output.data == NULL;
    if (m->cfg.tied_output && m->w.output_norm) /* a decoder's head is its embedding */
        m->w.output = m->w.tok_embd;
    m->cfg.has_rope_freqs = m->w.rope_freqs || m->w.rope_long;
    if (!!m->w.rope_long != !!m->w.rope_short)
        return asn_err_set(e, "%s: longrope needs both rope_factors_long and rope_factors_short", m->path);
    if (m->w.cls_out.data) {
        c->n_cls_out = m->w.cls_out.rows;
        const asn_gguf_tensor *b = asn_gguf_find_tensor(m->g, "cls.output.bias");
        if (b && b->ne[0] != c->n_cls_out)
            return asn_err_set(e, "%s: tensor cls.output.bias has %lld values, expected %d", m->path,
                               (long long)b->ne[0], c->n_cls_out);
    }
    if (m->w.type_embd.data && m->w.type_embd.rows < 1)
        return asn_err_set(e, "%s: tensor token_types.weight has no rows", m->path);
    if ((size_t)c->n_layer > asn_gguf_n_tensors(m->g)) /* every layer has tensors */
        return asn_err_set(e, "%s: block_count %d is more than the file's %zu tensors", m->path, c->n_layer,
                           asn_gguf_n_tensors(m->g));
    m->layers = asn_xcalloc((size_t)c->n_layer, sizeof *m->layers);
    for (int l = 0; l < c->n_layer; l++) {
        layer_w *L = &m->layers[l];
        char prefix[32];
        snprintf(prefix, sizeof prefix, "blk.%d.", l);
        if (load_table(m, m->arch->layer_tensors, prefix, L, e))
            return -1;
        if (!L->wqkv.data && !L->wq.data)
            return asn_err_set(e, "%s: tensor blk.%d.attn_q.weight (or attn_qkv.weight) is missing", m->path, l);
        if (!L->wqkv.data && (!L->wk.data || !L->wv.data))
            return asn_err_set(e, "%s: tensor blk.%d.attn_%s.weight is missing", m->path, l, L->wk.data ? "v" : "k");
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

/* Loads a model from an opened GGUF (taken over, closed on failure). */
static asn_model *load(asn_gguf *g, const char *path, asn_err *e)
{
    asn_model *m = asn_xcalloc(1, sizeof *m);
    m->path = asn_xstrdup(path);
    if (!(m->g = g) || load_config(m, e))
        goto fail;
    /* vocabulary size: the arch key if present, else the token list */
    const asn_gguf_kv *toks = NULL;
    if (asn_gguf_get_arr(m->g, "tokenizer.ggml.tokens", 0, &toks, e))
        goto fail;
    if (toks && toks->v.arr.n > (1u << 30)) {
        asn_err_set(e, "%s: %llu tokens is out of range", path, (unsigned long long)toks->v.arr.n);
        goto fail;
    }
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

asn_model *asn_model_load(const char *path, asn_err *e)
{
    return load(asn_gguf_open(path, e), path, e);
}

asn_model *asn_model_load_mem(const void *data, size_t size, const char *name, asn_err *e)
{
    return load(asn_gguf_open_mem(data, size, name, e), name, e);
}

/* Frees the vectors one table loaded into base. */
static void free_table(const tensor_spec *specs, void *base)
{
    for (const tensor_spec *s = specs; s && s->name; s++)
        if (s->kind == T_VEC)
            free(*(float **)((char *)base + s->off));
}

void asn_model_free(asn_model *m)
{
    if (!m)
        return;
    for (int l = 0; m->arch && m->layers && l < m->cfg.n_layer; l++)
        free_table(m->arch->layer_tensors, &m->layers[l]);
    if (m->arch)
        free_table(m->arch->globals, &m->w);
    free(m->layers);
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
