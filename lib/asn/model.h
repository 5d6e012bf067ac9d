/* asn/model.h — Llama-family transformers from GGUF files (architectures
 * llama and qwen2), evaluated in f32, and the multi-sequence engine:
 * sequences that branch from another's KV prefix without copying it, and
 * one batched forward pass for every sequence's new tokens.
 *
 * Every sequence's results are bit-identical whether it runs alone or in a
 * batch, and whatever the thread count (asn/linalg.h says how). */
#ifndef ASN_MODEL_H
#define ASN_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "asn/core.h"
#include "asn/gguf.h"
#include "asn/pool.h"

typedef struct asn_model_config {
    char arch[32];      /* "llama" or "qwen2" */
    int n_vocab, n_embd, n_layer, n_ff;
    int n_head, n_head_kv, head_dim;
    int n_ctx_train;
    int n_rot;          /* rotary dimensions (= head_dim) */
    int rope_neox;      /* pairs (i, i + n_rot/2) (qwen2) instead of (2i, 2i+1) */
    float rope_base, rope_freq_scale, rms_eps;
    int has_rope_freqs; /* Llama 3.1+ per-frequency divisors (rope_freqs.weight) */
    int tied_output;    /* output layer is token_embd */
    int has_qkv_bias;
} asn_model_config;

typedef struct asn_model asn_model;

/* Loads and validates a model: architecture, hyper-parameters, every tensor
 * present with the expected shape and a supported type. The file stays
 * mapped for the model's life. Errors name the file and what is wrong. */
asn_model *asn_model_load(const char *path, asn_err *e);
void asn_model_free(asn_model *m);
const asn_model_config *asn_model_cfg(const asn_model *m);
const asn_gguf *asn_model_gguf(const asn_model *m);
const char *asn_model_path(const asn_model *m);
/* The model's tokenizer (loaded on first use, then cached; NULL with e set
 * if the file has none asn can read). */
struct asn_vocab;
const struct asn_vocab *asn_model_vocab(asn_model *m, asn_err *e);
/* SHA-256 of the whole file (computed on first use, then cached). */
const char *asn_model_sha256(asn_model *m, asn_err *e);

/* ------------------------------------------------------------- engine */

typedef struct asn_engine asn_engine;

/* An engine over m with room for `n_ctx` positions per sequence (0: the
 * model's training context). Threads come from pool (may be NULL). */
asn_engine *asn_engine_new(const asn_model *m, int n_ctx, asn_pool *pool, asn_err *e);
void asn_engine_free(asn_engine *en);
/* Quantized weights: by default multiplied in integer arithmetic with
 * activations quantized to 8 bits (asn_qmatmul, llama.cpp's accuracy);
 * exact = 1 dequantizes them to f32 instead (asn_matmul: the results of the
 * dequantized F32 model, bit for bit). The environment variable
 * ASN_EXACT_MATMUL=1 sets it for every engine. */
void asn_engine_set_exact(asn_engine *en, int exact);

/* A new empty sequence; returns its id (>= 0). */
int asn_seq_new(asn_engine *en);
/* A new sequence holding the same tokens as `parent`, sharing its KV cache
 * (copied lazily, page by page, only where one of them writes). */
int asn_seq_fork(asn_engine *en, int parent);
/* Frees a sequence; its id and pages are reused. */
void asn_seq_free(asn_engine *en, int seq);
/* Number of tokens in the sequence. */
int asn_seq_len(const asn_engine *en, int seq);

/* One entry of a batch: append tokens[0..n) to seq and, when asked, get
 * logits (n_vocab floats of the last token, or n * n_vocab with
 * all_logits) and/or the mean over the appended tokens of the final
 * (normalized) hidden state (n_embd floats). */
typedef struct asn_batch_item {
    int seq;
    const int32_t *tokens;
    int n;
    float *logits;
    int all_logits;
    float *embed;
} asn_batch_item;

/* Runs one forward pass over all items' tokens. An item's outputs do not
 * depend on the other items. Fails (leaving every sequence unchanged) if a
 * token id is out of range or a sequence would exceed n_ctx. */
int asn_engine_decode(asn_engine *en, const asn_batch_item *items, int n_items, asn_err *e);

#endif
