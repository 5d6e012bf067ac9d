/* asn/bpe.h — training byte-level BPE vocabularies (the GPT-2 kind) and
 * writing them as GGUF tokenizer metadata that asn_vocab_load and llama.cpp
 * read as tokenizer.ggml.model "gpt2".
 *
 * Training has two steps:
 *  1. counting: text is split by the pre-tokenizer regex of the chosen
 *     tokenizer.ggml.pre name, exactly where the tokenizer will split it
 *     later, and the distinct pieces ("words") are counted;
 *  2. merging: starting from the 256 single bytes, the most frequent pair of
 *     adjacent symbols over all words (weighted by their counts) becomes a
 *     new token, again and again, until the vocabulary has its size. Ties
 *     go to the pair whose left token's bytes, then right token's bytes,
 *     come first in byte order (memcmp, a prefix before its extensions).
 *
 * The result depends only on the multiset of words and the options: the
 * same text gives the same vocabulary, byte for byte, whatever the chunking
 * of the input or the order in which the words were counted.
 *
 * Token ids: 0..255 are the single bytes (id = byte value), then the learned
 * tokens in the order they were learned (so merge rank r made token 256 + r),
 * then the special tokens. Every learned token's text is new: a pair whose
 * concatenation is already a token is never merged, so merges and learned
 * tokens correspond one to one, and the tokenizer (which applies merges by
 * rank) splits each word exactly as training left it. */
#ifndef ASN_BPE_H
#define ASN_BPE_H

#include <stddef.h>
#include <stdint.h>

#include "asn/core.h"
#include "asn/gguf.h"

/* Defaults of asn_bpe_opts_init. The names of BOS and EOS are Llama 3's, so
 * tools that look special tokens up by text (llama.cpp's end-of-generation
 * list among them) recognize them. The default pre-tokenizer is "smollm"
 * (SmolLM2's: the GPT-2 regex after splitting off every digit): unlike
 * "gpt-2", whose detokenizer drops the space before , . ? ! 's 're ... (as
 * llama.cpp and Hugging Face do for GPT-2), it gives every text back
 * exactly, and single digits suit small models. */
#define ASN_BPE_VOCAB_SIZE 4096
#define ASN_BPE_MIN_COUNT 2
#define ASN_BPE_PRE "smollm"
#define ASN_BPE_BOS "<|begin_of_text|>"
#define ASN_BPE_EOS "<|end_of_text|>"

/* ------------------------------------------------------------- counting */

typedef struct asn_bpe_words asn_bpe_words;

/* Word counts under the pre-tokenizer of a tokenizer.ggml.pre name: "gpt-2"
 * (the GPT-2 regex 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+|
 * ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+) or "smollm" (each digit alone, then the
 * GPT-2 regex; its detokenizer does no space cleanup). NULL: the default
 * (ASN_BPE_PRE). NULL with e set for another name. */
asn_bpe_words *asn_bpe_words_new(const char *pre, asn_err *e);
void asn_bpe_words_free(asn_bpe_words *w); /* NULL-safe */
/* The pre-tokenizer name in effect. */
const char *asn_bpe_words_pre(const asn_bpe_words *w);

/* Counts the pieces of len bytes of UTF-8 text. A piece never spans two
 * calls, so a corpus may be added file by file (or document by document).
 * Text that is not valid UTF-8 is refused whole, -1 with e naming the line
 * and column (in bytes, from 1) of the first bad byte. */
int asn_bpe_words_add(asn_bpe_words *w, const char *text, size_t len, asn_err *e);

/* Bytes counted, pieces counted, distinct pieces. */
uint64_t asn_bpe_words_bytes(const asn_bpe_words *w);
uint64_t asn_bpe_words_pieces(const asn_bpe_words *w);
size_t asn_bpe_words_distinct(const asn_bpe_words *w);

/* -------------------------------------------------------------- training */

typedef struct asn_bpe_opts {
    int32_t vocab_size; /* tokens in all: 256 bytes + learned + special */
    int64_t min_count;  /* a pair seen fewer times than this is never merged (>= 1) */
    /* special (control) tokens, after the learned ones in this order: bos,
     * eos, pad, then special[]; NULL bos/eos/pad: none. Texts must be
     * non-empty, distinct, and contain no space (GGUF merges are
     * space-separated and token texts are looked up as written). */
    const char *bos, *eos, *pad;
    const char *const *special;
    size_t n_special;
    /* Called after each merge (may be NULL). */
    void (*progress)(void *ctx, int32_t merges_done, int32_t merges_wanted);
    void *progress_ctx;
} asn_bpe_opts;

/* vocab_size ASN_BPE_VOCAB_SIZE, min_count ASN_BPE_MIN_COUNT, bos
 * ASN_BPE_BOS, eos ASN_BPE_EOS, no pad, no other special tokens. */
void asn_bpe_opts_init(asn_bpe_opts *o);

typedef struct asn_bpe asn_bpe;

/* Learns vocab_size - 256 - (special tokens) merges, or fewer when no pair
 * is left that occurs min_count times (the vocabulary is smaller then:
 * asn_bpe_n_tokens says). Errors: no words, a vocab_size that leaves no
 * room for the bytes and the special tokens, bad special token texts. */
asn_bpe *asn_bpe_train(const asn_bpe_words *w, const asn_bpe_opts *o, asn_err *e);
void asn_bpe_free(asn_bpe *b); /* NULL-safe */

int32_t asn_bpe_n_tokens(const asn_bpe *b);
/* A token's bytes (not the byte-to-unicode form; special tokens: their
 * text). NULL for an id out of range. */
const char *asn_bpe_token(const asn_bpe *b, int32_t id, size_t *len);
/* Learned merges; merge `rank` joined left and right into token 256 + rank. */
int32_t asn_bpe_n_merges(const asn_bpe *b);
void asn_bpe_merge(const asn_bpe *b, int32_t rank, int32_t *left, int32_t *right);
/* Special token ids (-1: none). */
int32_t asn_bpe_bos(const asn_bpe *b);
int32_t asn_bpe_eos(const asn_bpe *b);
int32_t asn_bpe_pad(const asn_bpe *b);
/* Tokens the counted text splits into under the learned vocabulary (no
 * BOS): asn_bpe_words_bytes / this is the compression in bytes per token. */
uint64_t asn_bpe_text_tokens(const asn_bpe *b);

/* ------------------------------------------------------------------ GGUF */

/* Sets the tokenizer keys on w: tokenizer.ggml.model "gpt2", .pre, .tokens
 * (byte-to-unicode alphabet, as GPT-2's vocab.json), .token_type (NORMAL;
 * CONTROL for the special tokens — single-byte tokens are NORMAL too, as in
 * every GPT-2-style GGUF: a BPE token of type BYTE renders as nothing in
 * llama.cpp), .merges ("left right", in rank order), .bos_token_id,
 * .eos_token_id, .padding_token_id (those present), .add_bos_token true,
 * .add_eos_token false. */
void asn_bpe_set_gguf(const asn_bpe *b, asn_gguf_writer *w);
/* A vocab-only GGUF: general.name, then the keys above. */
int asn_bpe_write(const asn_bpe *b, const char *path, asn_err *e);

#endif
