/* asn/model.h — transformers from GGUF files (the architectures of
 * lib/model/arch.c: llama, mistral, qwen2, qwen3, gemma2, gemma3, phi3,
 * bert), evaluated in f32, and the multi-sequence engine:
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
    char arch[32];      /* general.architecture, e.g. "llama" */
    int n_vocab, n_embd, n_layer, n_ff;
    int n_head, n_head_kv, head_dim;
    int n_ctx_train;
    int n_rot;          /* rotary dimensions (= head_dim; 0: no rotary embedding) */
    int rope_neox;      /* pairs (i, i + n_rot/2) instead of (2i, 2i+1) */
    float rope_base, rope_freq_scale, rms_eps;
    int rope_scaling;   /* ASN_ROPE_* */
    int n_ctx_orig;     /* context the rope scaling was trained for */
    float rope_attn_factor, yarn_beta_fast, yarn_beta_slow;
    int has_rope_freqs; /* per-frequency divisors (Llama 3.1 rope_freqs, Phi-3 longrope) */
    int tied_output;    /* output layer is token_embd (or no LM head at all) */
    int has_qkv_bias;
    int causal;         /* 0: every token of a batch item sees the whole item (bert) */
    int n_swa;          /* sliding window: a token sees its last n_swa positions (0: all) */
    int swa_period;     /* layer l is windowed when l % period < period - 1 (0: every layer) */
    float rope_base_swa, rope_freq_scale_swa; /* the windowed layers' rope */
    float attn_scale;   /* multiplies q.k (default 1/sqrt(head_dim)) */
    float attn_softcap, final_softcap; /* c * tanh(x / c) of scores / logits (0: none) */
    float embed_scale;  /* multiplies the token embeddings (1; gemma: sqrt(n_embd)) */
    float norm_eps;     /* layer-norm epsilon (bert) */
    int pooling;        /* ASN_POOL_* the file names for its embeddings ({arch}.pooling_type) */
    int cls_pooling;    /* ASN_POOL_*: the state a classification head reads (CLS: first
                         * token, bert; LAST: last token, decoders) */
    int n_cls_out;      /* outputs of the classification head (0: none) */
} asn_model_config;

enum { ASN_ROPE_NONE, ASN_ROPE_LINEAR, ASN_ROPE_YARN, ASN_ROPE_LONGROPE };
/* llama.cpp's pooling types (GGUF {arch}.pooling_type) */
enum { ASN_POOL_NONE, ASN_POOL_MEAN, ASN_POOL_CLS, ASN_POOL_LAST, ASN_POOL_RANK };

typedef struct asn_model asn_model;

/* Loads and validates a model: architecture, hyper-parameters, every tensor
 * present with the expected shape and a supported type. The file stays
 * mapped for the model's life. Errors name the file and what is wrong. */
asn_model *asn_model_load(const char *path, asn_err *e);
/* The same from a GGUF image in memory (kept by the caller for the
 * model's life); name stands for the path in messages. */
asn_model *asn_model_load_mem(const void *data, size_t size, const char *name, asn_err *e);
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
/* The model an engine runs. */
const asn_model *asn_engine_model(const asn_engine *en);
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
 * all_logits), the mean over the appended tokens of the final
 * (normalized) hidden state (n_embd floats), and the classification head's
 * outputs (n_cls_out floats) over the pooled state of the item.
 * A non-causal model (bert) must get a text whole in one item. */
typedef struct asn_batch_item {
    int seq;
    const int32_t *tokens;
    int n;
    float *logits;
    int all_logits;
    float *embed;
    float *cls;
} asn_batch_item;

/* Runs one forward pass over all items' tokens. An item's outputs do not
 * depend on the other items. Fails (leaving every sequence unchanged) if a
 * token id is out of range or a sequence would exceed n_ctx. */
int asn_engine_decode(asn_engine *en, const asn_batch_item *items, int n_items, asn_err *e);

#endif
