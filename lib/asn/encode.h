/* asn/encode.h — whole texts through a model, one output per text: the
 * pooled embedding (diversity) or a classification head's values (reward
 * models, rerankers). Texts go through the engine together, at most
 * batch_tokens tokens per forward pass (a longer text alone); no output
 * depends on the batching. */
#ifndef ASN_ENCODE_H
#define ASN_ENCODE_H

#include <stddef.h>

#include "asn/core.h"
#include "asn/model.h"
#include "asn/vocab.h"

/* Embeddings of n texts for the entropy: the mean over each text's tokens
 * of the model's final (normalized) hidden state (asn_batch_item.embed).
 * Each text is tokenized alone as the model adds special tokens (BOS, or
 * [CLS] ... [SEP]), with no chat template and special tokens in the text
 * not parsed, and cut to its first max_tokens tokens (> 0, at most the
 * engine's context; the reference's sentence-transformers model truncates
 * the same way). A text without tokens gets a zero row. lens may be NULL
 * (NUL-terminated texts). out: n rows of dim floats (dim = the model's
 * n_embd). Returns 0, or -1 with e set. */
int asn_embed_texts(asn_engine *en, const asn_vocab *v, int dim, const char *const *texts, const size_t *lens,
                    int n, int max_tokens, long batch_tokens, float *out, asn_err *e);

/* The classification head's n_cls_out values for each of n texts (a
 * reward model's score, a reranker's relevance), the texts tokenized with
 * special tokens added and the special tokens they hold parsed (a chat
 * template's markers), cut to their last max_tokens tokens (the head reads
 * the end). out: n rows of n_cls_out floats; a text without tokens is an
 * error. Returns 0, or -1 with e set (naming the text's index). */
int asn_classify_texts(asn_engine *en, const asn_vocab *v, const char *const *texts, const size_t *lens, int n,
                       int max_tokens, long batch_tokens, float *out, asn_err *e);

/* A text's tokens as asn_classify_texts makes them: special tokens added
 * and parsed, cut to the last max_tokens. *ids new. */
int asn_classify_tokenize(const asn_vocab *v, const char *text, size_t len, int max_tokens, int32_t **ids, int *n,
                          asn_err *e);
/* asn_classify_texts on token lists already made (each at least one
 * token): the same outputs, bit for bit, for the same tokens (serve's
 * /classify). */
int asn_classify_tokens(asn_engine *en, int32_t *const *ids, const int *lens, int n, long batch_tokens, float *out,
                        asn_err *e);

#endif
