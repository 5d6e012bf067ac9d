/* asn/lm.h — a small Llama language model that can be trained: the same
 * architecture the model library runs (lib/model: RMSNorm, rotary
 * embeddings on adjacent pairs, causal grouped-query attention, SwiGLU,
 * final RMSNorm, output tied to the token embeddings), in f32, with a
 * hand-written backward pass for every layer, and export to a GGUF file that
 * asn_model_load (and llama.cpp) loads.
 *
 * Parameters and their gradients are each one flat float array; the table
 * of tensors (asn_lm_tensor_at) says where each GGUF tensor lives in it, so
 * an optimizer (asn/optim.h) or a checkpoint works on the flat arrays.
 *
 * Matrix products go through OpenBLAS (cblas_sgemm), batched over every
 * position of every sequence; the work is split across an asn_pool by a
 * fixed rule, so for a fixed thread count results are reproducible bit for
 * bit. OpenBLAS runs single-threaded inside the pool's threads: asn_lm_new
 * calls openblas_set_num_threads(1). */
#ifndef ASN_LM_H
#define ASN_LM_H

#include <stddef.h>
#include <stdint.h>

#include "asn/core.h"
#include "asn/gguf.h"
#include "asn/optim.h"
#include "asn/pool.h"

/* Defaults where a config leaves them 0: llama's rope base and the RMSNorm
 * epsilon of Llama 2 / TinyLlama. */
#define ASN_LM_ROPE_BASE 10000.0f
#define ASN_LM_RMS_EPS 1e-5f

typedef struct asn_lm_config {
    int n_vocab;
    int dim;       /* embedding width (llama.embedding_length) */
    int n_layer;
    int n_head;    /* head size = dim / n_head */
    int n_head_kv; /* key/value heads; n_head must be a multiple (0: n_head) */
    int ffn;       /* SwiGLU hidden width (llama.feed_forward_length) */
    int ctx;       /* longest sequence (llama.context_length) */
    float rope_base; /* 0: ASN_LM_ROPE_BASE */
    float rms_eps;   /* 0: ASN_LM_RMS_EPS */
} asn_lm_config;

/* Fills the defaults of c and checks it: positive sizes, dim a multiple of
 * n_head with an even head size, n_head a multiple of n_head_kv. */
int asn_lm_config_check(asn_lm_config *c, asn_err *e);

/* Reads a config from a GGUF written by asn_lm_save (or any llama GGUF with
 * the same keys): general.architecture must be "llama". */
int asn_lm_config_from_gguf(const asn_gguf *g, asn_lm_config *c, asn_err *e);

/* One tensor of the model, as the GGUF file names and shapes it. */
typedef struct asn_lm_tensor {
    char name[48];   /* "token_embd.weight", "blk.0.attn_q.weight", ... */
    size_t offset;   /* first element in the flat parameter array */
    size_t size;     /* elements */
    int n_dims;      /* 1 (norm gains) or 2 (matrices) */
    int64_t ne[2];   /* GGUF order: ne[0] = row length (input width) */
    int decay;       /* 1 for matrices, 0 for norm gains (no weight decay) */
} asn_lm_tensor;

typedef struct asn_lm asn_lm;

/* A model with parameters set to zero (asn_lm_init_weights fills them).
 * The pool (borrowed; NULL: the calling thread alone) runs every layer. */
asn_lm *asn_lm_new(const asn_lm_config *c, asn_pool *pool, asn_err *e);
void asn_lm_free(asn_lm *lm); /* NULL-safe */

const asn_lm_config *asn_lm_cfg(const asn_lm *lm);
size_t asn_lm_n_params(const asn_lm *lm);
float *asn_lm_params(asn_lm *lm);
const float *asn_lm_params_const(const asn_lm *lm);
float *asn_lm_grads(asn_lm *lm);
size_t asn_lm_n_tensors(const asn_lm *lm);
const asn_lm_tensor *asn_lm_tensor_at(const asn_lm *lm, size_t i);
const asn_lm_tensor *asn_lm_find_tensor(const asn_lm *lm, const char *name);

/* GPT-2-style initialization, a pure function of seed (Philox, see
 * asn/core.h): matrices ~ N(0, 0.02^2), the two projections that end in the
 * residual stream (attn_output, ffn_down) scaled by 1/sqrt(2 n_layer), norm
 * gains 1. */
void asn_lm_init_weights(asn_lm *lm, uint64_t seed);

/* Forward pass over B sequences of T tokens (T <= ctx; tokens[b * T + t]),
 * each starting at position 0. With targets (same layout; -1 = not scored),
 * *loss (may be NULL) gets the mean cross-entropy over the scored positions
 * (natural log) and the pass keeps what asn_lm_backward needs; without,
 * asn_lm_logits gives the logits. Fails on a token or target out of range
 * or T > ctx. Activation memory grows to the largest B x T seen. */
int asn_lm_forward(asn_lm *lm, const int32_t *tokens, const int32_t *targets, int B, int T, double *loss,
                   asn_err *e);
/* B * T rows of n_vocab logits of the last forward pass without targets
 * (NULL after one with targets: that buffer holds probabilities). */
const float *asn_lm_logits(const asn_lm *lm);

void asn_lm_zero_grad(asn_lm *lm);
/* Adds scale * d(loss)/d(params) of the last forward pass (which must have
 * had targets) to the gradients: scale 1/k over k micro-batches accumulates
 * the gradient of their mean loss. */
int asn_lm_backward(asn_lm *lm, float scale, asn_err *e);

/* Mean cross-entropy over a token stream cut into consecutive windows of
 * T tokens (every position after the first predicted once, at most
 * max_preds predictions; 0: all), B windows per forward pass. n >= 2. */
int asn_lm_eval(asn_lm *lm, const int32_t *ids, size_t n, size_t max_preds, int B, int T, double *loss,
                asn_err *e);

/* One AdamW update (asn/optim.h) of every tensor with the gradients, step
 * number t (>= 1), weight decay on matrices only; m and v are flat arrays
 * in the parameter layout. Split across the pool (elementwise: the split
 * changes no bit). */
void asn_lm_adamw_step(asn_lm *lm, const asn_adamw *h, long t, float lr, float weight_decay, float *m, float *v);

/* ------------------------------------------------------------- GGUF */

/* Adds general.architecture "llama", general.name, general.file_type and
 * every llama.* hyper-parameter key asn_model_load and llama.cpp read. */
void asn_lm_gguf_meta(const asn_lm *lm, asn_gguf_writer *w, const char *name);
/* Copies every tokenizer.* key of src into w (integer and float values of
 * the types the writer lacks are widened). */
int asn_lm_gguf_copy_tokenizer(asn_gguf_writer *w, const asn_gguf *src, asn_err *e);
/* Adds one F32 tensor per model tensor, named prefix + name, holding data
 * (a flat array in the parameter layout: the parameters, or optimizer
 * moments). No output.weight: the output is tied to token_embd. */
void asn_lm_gguf_tensors(const asn_lm *lm, asn_gguf_writer *w, const char *prefix, const float *data);
/* Reads tensors named prefix + name from g (F32, the model's shapes) into
 * data, a flat array in the parameter layout. */
int asn_lm_gguf_read_tensors(const asn_lm *lm, const asn_gguf *g, const char *prefix, float *data,
                             asn_err *e);
/* The model file: meta, the tokenizer of vocab (may be NULL: then
 * llama.vocab_size alone gives the vocabulary size) and the parameters. */
int asn_lm_save(const asn_lm *lm, const char *path, const char *name, const asn_gguf *vocab, asn_err *e);

/* What a checkpoint holds besides the parameters. */
typedef struct asn_lm_state {
    long step;        /* optimizer steps done */
    uint64_t tokens;  /* tokens trained on */
    uint64_t windows; /* the RNG position: training windows drawn */
    double elapsed;   /* seconds of training */
    float *m, *v;     /* AdamW moments, n_params each (the caller's) */
} asn_lm_state;

/* A checkpoint: the model file of asn_lm_save, the moments as tensors
 * adam.m.NAME and adam.v.NAME, the state as asn.train.* keys, and the
 * caller's string keys (extra: key, value, key, value, ..., NULL; may be
 * NULL). A checkpoint loads as a model too. */
int asn_lm_checkpoint_save(const asn_lm *lm, const char *path, const char *name, const asn_gguf *vocab,
                           const asn_lm_state *st, const char *const *extra, asn_err *e);
/* Reads a checkpoint into lm's parameters and st (step, tokens, windows,
 * elapsed, moments). Its model must have lm's config: the error names the
 * first difference. */
int asn_lm_checkpoint_load(asn_lm *lm, const asn_gguf *g, asn_lm_state *st, asn_err *e);

/* ---------------------------------------------------- token corpus
 * (lib/learn/corpus.c) */

struct asn_vocab;

/* Tokenizes a training text into one stream of ids. With doc_sep (not NULL
 * or empty) the text is a list of documents separated by that string;
 * each non-empty document becomes BOS (when the vocab adds one) + its
 * tokens + EOS (when the vocab has one), so a model learns where documents
 * start and end. Without, the text is one document (BOS at the start when
 * the vocab adds one). Documents are tokenized in pieces of about 1 MiB cut
 * after a newline that a non-space character follows (for the byte-level
 * BPE pre-tokenizers a piece boundary there, so the ids are those of the
 * whole text), in parallel on the pool; the result does not depend on the
 * thread count. Special tokens written in the text are not parsed. *ids is
 * a new array (caller frees). */
int asn_lm_tokenize_corpus(const struct asn_vocab *v, const char *text, size_t len, const char *doc_sep,
                           asn_pool *pool, int32_t **ids, size_t *n, asn_err *e);

/* What asn_lm_corpus_load did, for the caller to report. */
typedef struct asn_lm_corpus_info {
    size_t bytes;       /* of the text */
    int from_cache;     /* 1: the ids were read from the cache */
    double seconds;     /* spent tokenizing (0 from the cache) */
    char warning[1024]; /* not empty: the cache could not be written (the ids are fine) */
} asn_lm_corpus_info;

/* The token stream of a text file (asn_lm_tokenize_corpus), through a
 * cache file when cache is not NULL: the cache holds the ids (little-endian
 * int32) after a header with a key, the SHA-256 of the text's SHA-256,
 * vocab_id (something that names the vocab, e.g. its file's SHA-256) and
 * doc_sep; a cache with another key, truncated, or with ids out of range is
 * rebuilt, and written atomically (a temporary file renamed). *ids is a new
 * array. Errors name the file. */
int asn_lm_corpus_load(const char *path, const struct asn_vocab *v, const char *vocab_id, const char *doc_sep,
                       const char *cache, asn_pool *pool, int32_t **ids, size_t *n, asn_lm_corpus_info *info,
                       asn_err *e);

/* Start of the training window number `index` of len + 1 tokens (inputs
 * and their next-token targets) in a stream of n tokens (n > len), drawn
 * uniformly from [0, n - len - 1] by asn_rng_uniform(key, index, 0): a pure
 * function of (key, index), so a run that resumes at window index i draws
 * what an uninterrupted run would have. */
size_t asn_lm_window(asn_rng_key key, uint64_t index, size_t n, int len);

/* ----------------------------------------------------------- layers
 *
 * The layers the model is made of, each forward next to its backward with
 * the same arguments (llm.c's convention): backward takes the gradients of
 * the forward's inputs first, then the gradient of its output, then the
 * forward's inputs. Backward functions ADD into every gradient they are
 * given (zero them first), except where noted. N = rows (B * T positions);
 * the pool may be NULL. Exposed for the gradient checks of the tests and
 * for other trainers. */

/* out[N x d] = wte[tokens[i]] */
void asn_lm_embedding_forward(asn_pool *pool, float *out, const int32_t *tokens, const float *wte, int N, int d);
void asn_lm_embedding_backward(asn_pool *pool, float *dwte, const float *dout, const int32_t *tokens, int N, int d);

/* out = x * rstd * weight, rstd = 1 / sqrt(mean(x^2) + eps) per row (saved for backward) */
void asn_lm_rmsnorm_forward(asn_pool *pool, float *out, float *rstd, const float *inp, const float *weight, int N,
                            int d, float eps);
void asn_lm_rmsnorm_backward(asn_pool *pool, float *dinp, float *dweight, const float *dout, const float *inp,
                             const float *weight, const float *rstd, int N, int d);

/* out[N x OC] = inp[N x C] weight[OC x C]^T. dinp may be NULL. */
void asn_lm_matmul_forward(asn_pool *pool, float *out, const float *inp, const float *weight, int N, int C, int OC);
void asn_lm_matmul_backward(asn_pool *pool, float *dinp, float *dweight, const float *dout, const float *inp,
                            const float *weight, int N, int C, int OC);

/* Rotary embedding in place on rows of n_heads heads of hd values, row r at
 * position r % T, pairs (2k, 2k + 1) rotated by pos * base^(-2k / hd).
 * cos_tab / sin_tab hold T x hd/2 values (asn_lm_rope_table). The backward
 * is in place too: dx holds the gradient of the rotated values on entry,
 * of the input on return (it overwrites). */
void asn_lm_rope_table(float *cos_tab, float *sin_tab, int T, int hd, float base);
void asn_lm_rope_forward(asn_pool *pool, float *x, const float *cos_tab, const float *sin_tab, int N, int T,
                         int n_heads, int hd);
void asn_lm_rope_backward(asn_pool *pool, float *dx, const float *cos_tab, const float *sin_tab, int N, int T,
                          int n_heads, int hd);

/* Causal attention per sequence and head, scale 1/sqrt(hd); query head h
 * reads key/value head h / (nh / nkv). q, out: N x (nh hd); k, v: N x (nkv hd);
 * att (saved): B x nh x T x T probabilities, zero above the diagonal. */
void asn_lm_attention_forward(asn_pool *pool, float *out, float *att, const float *q, const float *k,
                              const float *v, int B, int T, int nh, int nkv, int hd);
void asn_lm_attention_backward(asn_pool *pool, float *dq, float *dk, float *dv, const float *dout,
                               const float *att, const float *q, const float *k, const float *v, int B, int T,
                               int nh, int nkv, int hd);

/* out = silu(gate) * up, elementwise over n values */
void asn_lm_swiglu_forward(asn_pool *pool, float *out, const float *gate, const float *up, size_t n);
void asn_lm_swiglu_backward(asn_pool *pool, float *dgate, float *dup, const float *dout, const float *gate,
                            const float *up, size_t n);

/* out = a + b */
void asn_lm_residual_forward(asn_pool *pool, float *out, const float *a, const float *b, size_t n);
void asn_lm_residual_backward(asn_pool *pool, float *da, float *db, const float *dout, size_t n);

/* Softmax and cross-entropy per row: probs = softmax(logits) (probs may be
 * logits: in place), losses[i] = -log probs[i][targets[i]] (0 where the
 * target is -1). The backward writes (does not add) dlogits = (probs -
 * onehot(target)) * dloss, 0 on unscored rows; dlogits may be probs. */
void asn_lm_crossentropy_forward(asn_pool *pool, float *losses, float *probs, const float *logits,
                                 const int32_t *targets, int N, int V);
void asn_lm_crossentropy_backward(asn_pool *pool, float *dlogits, float dloss, const float *probs,
                                  const int32_t *targets, int N, int V);

#endif
