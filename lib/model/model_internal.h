/* model_internal.h — the loaded model's weights, shared by the loader
 * (model.c) and the forward pass (forward.c). */
#ifndef ASN_MODEL_INTERNAL_H
#define ASN_MODEL_INTERNAL_H

#include "asn/model.h"
#include "asn/vocab.h"

/* A weight matrix of `rows` rows of `cols` elements of ggml type `type`
 * (GGUF ne = {cols, rows}), left in the mapping. */
typedef struct wmat {
    const void *data;
    uint32_t type;
    int rows, cols;
} wmat;

typedef struct layer_w {
    float *attn_norm, *ffn_norm;  /* n_embd, dequantized */
    wmat wq, wk, wv, wo;
    float *bq, *bk, *bv;          /* NULL when absent */
    wmat gate, up, down;
} layer_w;

struct asn_model {
    char *path;
    asn_gguf *g;
    asn_model_config cfg;
    wmat tok_embd, output;        /* output == tok_embd when tied */
    float *output_norm;
    float *rope_freqs;            /* n_rot / 2 divisors, or NULL */
    layer_w *layers;
    char sha256[65];
    struct asn_vocab *vocab; /* loaded on first use */
};

#endif
