/* arch.h — what an architecture is to asn: one row of the table in arch.c,
 * defined in the architecture's own file (arch_llama.c, arch_gemma2.c, ...):
 * its name, its hyper-parameter defaults, the tensors it loads (named
 * tables, checked by model.c) and the function that wires one layer out of
 * the shared blocks (blocks.c, attention.c). docs/engine.md has the recipe
 * for adding one. */
#ifndef ASN_ARCH_H
#define ASN_ARCH_H

#include "model_internal.h"

#include <stddef.h>

/* ------------------------------------------------------------- tensors */

/* Sizes a tensor's dimensions are checked against. */
enum dim {
    D_NONE,   /* a vector: only cols counts */
    D_EMBD,   /* n_embd */
    D_Q,      /* n_head * head_dim */
    D_KV,     /* n_head_kv * head_dim */
    D_QKV,    /* D_Q + 2 D_KV (fused q, k, v) */
    D_FF,     /* n_ff */
    D_FF2,    /* 2 n_ff (fused gate and up) */
    D_HEAD,   /* head_dim */
    D_ROT2,   /* n_rot / 2 */
    D_VOCAB,  /* n_vocab */
    D_CTX,    /* n_ctx_train */
    D_ANY,    /* anything (taken from the file: token types, classes) */
};

enum { T_MAT, T_VEC };
enum { T_REQ = 1, T_OPT = 0 };

/* One tensor: its GGUF name (a layer's prefixed with "blk.N."), where it
 * goes (offset in layer_w or model_w), matrix or vector, dimensions
 * (cols = GGUF ne[0]), required or optional. */
typedef struct tensor_spec {
    const char *name;
    size_t off;
    unsigned char kind, cols, rows, need;
} tensor_spec;

#define MAT(name, field, cols, rows, need) {name, offsetof(layer_w, field), T_MAT, cols, rows, need}
#define VEC(name, field, n, need) {name, offsetof(layer_w, field), T_VEC, n, D_NONE, need}
#define GMAT(name, field, cols, rows, need) {name, offsetof(model_w, field), T_MAT, cols, rows, need}
#define GVEC(name, field, n, need) {name, offsetof(model_w, field), T_VEC, n, D_NONE, need}
#define END_TENSORS {NULL, 0, 0, 0, 0, 0}

/* The tensors most decoder architectures share. */
#define T_EMBD_OUT                                                                                \
    GMAT("token_embd.weight", tok_embd, D_EMBD, D_VOCAB, T_REQ),                                  \
        GVEC("output_norm.weight", output_norm, D_EMBD, T_REQ),                                   \
        GMAT("output.weight", output, D_EMBD, D_VOCAB, T_OPT)
#define T_CLS_HEAD                                                                                \
    GMAT("cls.weight", cls, D_EMBD, D_EMBD, T_OPT), GVEC("cls.bias", cls_b, D_EMBD, T_OPT),       \
        GMAT("cls.output.weight", cls_out, D_EMBD, D_ANY, T_OPT),                                 \
        GVEC("cls.output.bias", cls_out_b, D_ANY, T_OPT)
#define T_ATTN_QKVO                                                                               \
    MAT("attn_q.weight", wq, D_EMBD, D_Q, T_REQ), MAT("attn_k.weight", wk, D_EMBD, D_KV, T_REQ),  \
        MAT("attn_v.weight", wv, D_EMBD, D_KV, T_REQ),                                            \
        MAT("attn_output.weight", wo, D_Q, D_EMBD, T_REQ)
#define T_FFN_GLU                                                                                 \
    MAT("ffn_gate.weight", gate, D_EMBD, D_FF, T_REQ), MAT("ffn_up.weight", up, D_EMBD, D_FF, T_REQ), \
        MAT("ffn_down.weight", down, D_FF, D_EMBD, T_REQ)

/* ------------------------------------------------------------ forward */

/* One decode step as a layer sees it: T token rows of n_embd in x (the
 * residual stream), two scratch rows h and o of the same size. */
typedef struct fwd {
    asn_engine *en;
    const asn_model *m;
    int T, d;
    float *x, *h, *o;
} fwd;

/* The shared blocks. Each works on all T rows; every row's result depends
 * on that row only (and its own sequence's cache), in a fixed order. */
void blk_rmsnorm(const fwd *f, float *out, const float *in, const float *w);
/* One row: out = x / sqrt(mean(x^2) + eps) * w (out may be x). */
void rmsnorm_row(float *out, const float *x, const float *w, int d, float eps);
void blk_layernorm(const fwd *f, float *out, const float *in, const float *w, const float *b);
void blk_add(const fwd *f, float *x, const float *y); /* x += y */
/* Self-attention of layer l: q, k, v projections (separate or fused, with
 * biases), per-head q/k norms, rotary embedding (the layer's own when
 * windowed), the new k, v stored in the cache, attention (causal or not,
 * windowed, soft-capped, as the config says), output projection. */
void blk_attention(const fwd *f, const layer_w *L, int l, const float *in, float *out);

enum ffn_kind {
    FFN_SWIGLU,       /* down(silu(gate x) * up x) */
    FFN_SWIGLU_FUSED, /* the same, gate and up as the two halves of up x (phi3) */
    FFN_GEGLU_TANH,   /* down(gelu_tanh(gate x) * up x) (gemma) */
    FFN_GELU,         /* down(gelu(up x + b) ) + b, gelu with erf (bert) */
};
void blk_ffn(const fwd *f, const layer_w *L, enum ffn_kind kind, const float *in, float *out);

/* A product of T rows of `in` with a weight matrix (+ bias): the integer
 * kernels for quantized weights unless the engine is exact. */
void blk_matmul(asn_engine *en, const float *X, int T, const wmat *w, const float *bias, float *Y);

/* --------------------------------------------------------------- rows */

enum norm_kind { NORM_RMS, NORM_LAYER };

typedef struct asn_arch {
    const char *name;
    const tensor_spec *globals, *layer_tensors;
    enum norm_kind norm;  /* which epsilon key is required */
    int rope_neox;
    int no_rope;          /* absolute positions instead (bert) */
    int non_causal;
    int embed_scale_sqrt; /* embeddings times sqrt(n_embd) (gemma) */
    int n_swa, swa_period; /* window defaults (0: none unless the metadata has one) */
    float attn_softcap, final_softcap; /* defaults (0: none) */
    int pooling;          /* ASN_POOL_* a classification head reads */
    /* Anything else the architecture reads or derives (NULL: nothing). */
    int (*hparams)(asn_model *m, asn_err *e);
    void (*layer)(const fwd *f, const layer_w *L, int l);
} asn_arch;

/* The layer functions architectures share. */
void llama_layer(const fwd *f, const layer_w *L, int l);  /* pre-norm, SwiGLU */
void gemma2_layer(const fwd *f, const layer_w *L, int l); /* sandwich norms, GeGLU */

/* Whether the file has the key "<arch>.<suffix>" (for defaults that
 * depend on it). */
int arch_has_key(const asn_model *m, const char *suffix);

/* The architecture named `name`, or NULL. */
const asn_arch *asn_arch_find(const char *name);
/* "llama, mistral, ..." for error messages. */
const char *asn_arch_names(void);

#endif
