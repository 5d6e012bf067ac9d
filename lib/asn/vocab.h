/* asn/vocab.h — tokenizers from GGUF metadata: SentencePiece-style (SPM,
 * tokenizer.ggml.model "llama") with byte fallback, byte-level BPE
 * ("gpt2") with the pre-tokenizers of llama.cpp (llama3, qwen2, gpt2,
 * default, falcon, starcoder/smollm, deepseek, ...) and BERT's WordPiece
 * ("bert", WPM: lowercasing, accent stripping, punctuation and CJK
 * splitting, longest-match-first word pieces); special and control
 * tokens; BOS/EOS rules; the end-of-generation set; detokenization, whole
 * or streamed.
 *
 * The contract is llama.cpp's (src/llama-vocab.cpp): the same ids for the
 * same text and flags as llama_tokenize, the same bytes as
 * llama_token_to_piece and llama_detokenize. tests/unit/test_tokenizer.c
 * checks it against llama.cpp's own vocab test vectors.
 *
 * A loaded vocab is immutable: every function here may be called from
 * several threads at once on the same vocab. */
#ifndef ASN_VOCAB_H
#define ASN_VOCAB_H

#include <stddef.h>
#include <stdint.h>

#include "asn/core.h"
#include "asn/gguf.h"

typedef struct asn_vocab asn_vocab;

typedef enum asn_vocab_kind {
    ASN_VOCAB_SPM = 1, /* tokenizer.ggml.model "llama" */
    ASN_VOCAB_BPE = 2, /* tokenizer.ggml.model "gpt2" */
    ASN_VOCAB_WPM = 3, /* tokenizer.ggml.model "bert" (WordPiece) */
} asn_vocab_kind;

/* Token types as stored in tokenizer.ggml.token_type. */
enum {
    ASN_TOKEN_UNDEFINED = 0,
    ASN_TOKEN_NORMAL = 1,
    ASN_TOKEN_UNKNOWN = 2,
    ASN_TOKEN_CONTROL = 3,
    ASN_TOKEN_USER_DEFINED = 4,
    ASN_TOKEN_UNUSED = 5,
    ASN_TOKEN_BYTE = 6,
};

/* Token attributes: llama.cpp's llama_token_attr bits, after the load-time
 * fixes (end-of-generation texts forced to CONTROL, "unused" control tokens
 * marked UNUSED, the phi-3 RSTRIP rule, ...). These, not the stored types,
 * decide how a token is matched and rendered. */
enum {
    ASN_TATTR_UNKNOWN = 1 << 0,
    ASN_TATTR_UNUSED = 1 << 1,
    ASN_TATTR_NORMAL = 1 << 2,
    ASN_TATTR_CONTROL = 1 << 3,
    ASN_TATTR_USER_DEFINED = 1 << 4,
    ASN_TATTR_BYTE = 1 << 5,
    ASN_TATTR_NORMALIZED = 1 << 6,
    ASN_TATTR_LSTRIP = 1 << 7, /* eats whitespace before it when matched in text */
    ASN_TATTR_RSTRIP = 1 << 8, /* eats whitespace after it */
    ASN_TATTR_SINGLE_WORD = 1 << 9,
};

/* ------------------------------------------------------------------ load */

/* Reads the tokenizer.ggml.* keys of a GGUF (a model or a vocab-only file).
 * Errors: no token list, a model other than "llama"/"gpt2"/"bert", a missing merge
 * list, an unknown or unsupported pre-tokenizer name, arrays shorter than the
 * token list. The vocab copies what it needs: g may be closed afterwards. */
asn_vocab *asn_vocab_load(const asn_gguf *g, asn_err *e);
void asn_vocab_free(asn_vocab *v); /* NULL-safe */

/* -------------------------------------------------------------- metadata */

int32_t asn_vocab_n_tokens(const asn_vocab *v);
asn_vocab_kind asn_vocab_kind_of(const asn_vocab *v);
/* tokenizer.ggml.model ("llama", "gpt2", "bert") and the pre-tokenizer name
 * in effect ("default" when the key is absent, and for SPM and WPM). */
const char *asn_vocab_model(const asn_vocab *v);
const char *asn_vocab_pre(const asn_vocab *v);

/* Token text in the tokenizer's internal form (U+2581 for spaces in SPM,
 * the byte-to-unicode alphabet in BPE), NUL-terminated; *len (if not NULL)
 * gets its byte length. NULL for an id out of range. */
const char *asn_vocab_text(const asn_vocab *v, int32_t id, size_t *len);
/* Stored type (ASN_TOKEN_*), -1 for an id out of range. */
int asn_vocab_type(const asn_vocab *v, int32_t id);
/* Attributes (ASN_TATTR_*), 0 for an id out of range. */
uint32_t asn_vocab_attr(const asn_vocab *v, int32_t id);
/* tokenizer.ggml.scores (0 when absent or out of range). */
float asn_vocab_score(const asn_vocab *v, int32_t id);
/* The id whose text is exactly these bytes (internal form), -1 if none. */
int32_t asn_vocab_find(const asn_vocab *v, const char *text, size_t len);
/* 1 if the token renders as nothing unless special tokens are rendered
 * (CONTROL or UNKNOWN attribute). */
int asn_vocab_is_control(const asn_vocab *v, int32_t id);

/* Special ids; -1 when the vocab has none. Defaults when the keys are
 * absent are llama.cpp's: SPM bos 1, eos 2, unk 0; BPE bos = eos = 11; WPM
 * bos ([CLS]) 101, sep 102, unk 100, no eos (a WPM vocab's
 * tokenizer.ggml.cls_token_id stands for an absent bos_token_id, as the
 * converter itself does). An id past the end of the vocab is ignored.
 * eot/eom may also be found by their text (<|eot_id|>, <|im_end|>,
 * <|end|>, <end_of_turn>, ...: the first of these present). */
int32_t asn_vocab_bos(const asn_vocab *v);
int32_t asn_vocab_eos(const asn_vocab *v);
int32_t asn_vocab_eot(const asn_vocab *v);
int32_t asn_vocab_eom(const asn_vocab *v);
int32_t asn_vocab_unk(const asn_vocab *v);
int32_t asn_vocab_pad(const asn_vocab *v);
int32_t asn_vocab_sep(const asn_vocab *v);

/* Whether add_special adds BOS / EOS (tokenizer.ggml.add_bos_token /
 * add_eos_token, else the per-model default) and whether SPM prefixes a
 * space (tokenizer.ggml.add_space_prefix, default true for SPM). WPM adds
 * BOS and SEP around the text whenever add_special is set, whatever these
 * flags say (llama.cpp's rule); its add_bos flag (default true) only
 * decides whether asn_detokenize's remove_special drops a leading BOS. */
int asn_vocab_add_bos(const asn_vocab *v);
int asn_vocab_add_eos(const asn_vocab *v);
int asn_vocab_add_space_prefix(const asn_vocab *v);

/* End of generation: eos, eot, eom, the FIM pad/repo/file-separator tokens
 * and every token whose text is one of <|eot_id|>, <|im_end|>, <|end|>,
 * <|endoftext|>, <|eom_id|>, <|end_of_text|>, <end_of_turn>, <EOT>, </s>, ...
 * (llama.cpp's list). A generation stops on any of them. */
int asn_vocab_is_eog(const asn_vocab *v, int32_t id);
/* The set, ascending; *ids points into v. Returns its size. */
size_t asn_vocab_eog_ids(const asn_vocab *v, const int32_t **ids);

/* ---------------------------------------------------------- tokenization */

/* Tokenizes len bytes of text (any bytes: invalid UTF-8 is handled as
 * llama.cpp does). add_special adds BOS (and EOS) when the vocab says so
 * (WPM: BOS and SEP);
 * parse_special matches CONTROL tokens written in the text (USER_DEFINED
 * tokens are always matched). *ids is a new array (caller frees; NULL when
 * *n is 0). Returns 0, or -1 with e set. */
int asn_tokenize(const asn_vocab *v, const char *text, size_t len, int add_special,
                 int parse_special, int32_t **ids, size_t *n, asn_err *e);

/* -------------------------------------------------------- detokenization */

/* The bytes of one token, as llama_token_to_piece(lstrip 0): CONTROL and
 * UNKNOWN tokens are empty unless render_special; USER_DEFINED verbatim;
 * SPM and WPM U+2581 -> space, SPM <0xXX> -> that byte; BPE through the inverse
 * byte table. Not NUL-terminated, and possibly a part of a UTF-8 sequence.
 * Returns the length when it fits in cap (bytes copied), minus the length
 * when it does not (nothing copied); 0 for an id out of range. */
int asn_token_to_piece(const asn_vocab *v, int32_t id, int render_special, char *buf, size_t cap);
/* The same without copying: a pointer into v (NULL and *len 0 for an id out
 * of range or a piece that is not rendered). */
const char *asn_vocab_piece(const asn_vocab *v, int32_t id, int render_special, size_t *len);
/* The longest piece of the vocab, in bytes. */
size_t asn_vocab_max_piece(const asn_vocab *v);

/* A whole sequence, as llama_detokenize: pieces concatenated, then
 * - SPM (add_space_prefix): one leading space of the first piece removed,
 *   except when remove_special drops a leading BOS (the space stays);
 * - remove_special drops a leading BOS / trailing EOS when the vocab adds them;
 * - unparse_special renders CONTROL/UNKNOWN tokens as their text;
 * - WPM vocabs, and BPE vocabs whose HF tokenizer cleans up spaces (gpt2,
 *   llama3, falcon, ...; not qwen2, deepseek, smollm) drop the space before ? ! . , 's 'm
 *   're 've and around a lone '.
 * *out is a new NUL-terminated string (which may hold NUL bytes: use *len).
 * Returns 0, or -1 (an id out of range) with e set. */
int asn_detokenize(const asn_vocab *v, const int32_t *ids, size_t n, int remove_special,
                   int unparse_special, char **out, size_t *len, asn_err *e);

/* Streaming detokenization for a generation loop: pieces are pushed one
 * token at a time and only whole UTF-8 characters come out; the bytes of a
 * character split across tokens are held until it is complete. Output is
 * the plain concatenation of the pieces (what llama.cpp prints while it
 * generates): no space cleanup and no leading-space removal, which need
 * the whole sequence (asn_detokenize). Bytes that cannot start or continue
 * a valid sequence are passed through as they are. */
typedef struct asn_detok_stream {
    const asn_vocab *v;
    int render_special;
    unsigned char held[4];
    int n_held;
} asn_detok_stream;

void asn_detok_stream_init(asn_detok_stream *s, const asn_vocab *v, int render_special);
/* Appends token id's piece. Writes the bytes that are ready to buf and
 * returns their count; cap must be at least asn_vocab_max_piece(v) + 4
 * (otherwise, or for an id out of range, -1 and nothing changes). */
int asn_detok_stream_push(asn_detok_stream *s, int32_t id, char *buf, size_t cap);
/* Ends the stream: writes the held bytes of an unfinished character (at
 * most 3; cap >= 4) and returns their count. */
int asn_detok_stream_flush(asn_detok_stream *s, char *buf, size_t cap);

#endif
