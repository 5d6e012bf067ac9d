/* model_internal.h — the loaded model's weights, shared by the loader
 * (model.c), the architectures (arch_*.c) and the engine (forward.c,
 * blocks.c). */
#ifndef ASN_MODEL_INTERNAL_H
#define ASN_MODEL_INTERNAL_H

#include "asn/model.h"
#include "asn/vocab.h"

/* A weight matrix of `rows` rows of `cols` elements of ggml type `type`
 * (GGUF ne = {cols, rows}), left in the mapping; data NULL when absent. */
typedef struct wmat {
    const void *data;
    uint32_t type;
    int rows, cols;
} wmat;

/* Every tensor a layer of any architecture may have; an architecture's
 * table (arch_*.c) says which it loads. Vectors are dequantized to f32,
 * NULL when absent. */
typedef struct layer_w {
    float *attn_norm, *attn_norm_b;  /* pre-attention norm (bert: none) */
    float *attn_post_norm;           /* gemma: norm of the attention output */
    float *attn_out_norm, *attn_out_norm_b; /* bert: post-norm of x + attention */
    float *q_norm, *k_norm;          /* per-head RMS norms (head_dim) */
    wmat wq, wk, wv, wqkv, wo;       /* wqkv: fused q, k, v rows (phi3) */
    float *bq, *bk, *bv, *bo;
    float *ffn_norm, *ffn_norm_b;
    float *ffn_post_norm;            /* gemma */
    float *layer_out_norm, *layer_out_norm_b; /* bert: post-norm of x + ffn */
    wmat gate, up, down;             /* up holds gate and up rows when fused (phi3) */
    float *b_up, *b_down;
} layer_w;

/* The tensors outside the layers. */
typedef struct model_w {
    wmat tok_embd, output;           /* output == tok_embd when tied */
    wmat pos_embd, type_embd;        /* bert: absolute positions, token types */
    float *tok_norm, *tok_norm_b;    /* bert: layer norm of the embeddings */
    float *output_norm, *output_norm_b;
    float *rope_freqs;               /* per-pair divisors (Llama 3.1) */
    float *rope_long, *rope_short;   /* phi3 longrope divisors */
    wmat cls, cls_out;               /* classification head: tanh(cls h + b), then cls_out */
    float *cls_b, *cls_out_b;
} model_w;

struct asn_arch;

struct asn_model {
    char *path;
    asn_gguf *g;
    const struct asn_arch *arch;
    asn_model_config cfg;
    model_w w;
    layer_w *layers;
    char sha256[65];
    struct asn_vocab *vocab; /* loaded on first use */
};

#endif
