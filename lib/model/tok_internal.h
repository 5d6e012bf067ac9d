/* tok_internal.h — what the tokenizer files (vocab.c, vocab_sym.c, tok_spm.c,
 * tok_bpe.c, tok_wpm.c, pretok.c, unicode.c) share and nobody else sees: the vocab
 * struct, its hash tables, code point classes, llama.cpp-compatible UTF-8
 * decoding, the byte-level alphabet and the pre-tokenizer interface. */
#ifndef ASN_TOK_INTERNAL_H
#define ASN_TOK_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "asn/vocab.h"

/* ------------------------------------------------------------ unicode.c */

/* Code point classes (llama.cpp's unicode_cpt_flags categories). */
enum asn_ucat {
    ASN_UC_UNDEFINED = 0, /* Cn */
    ASN_UC_NUMBER = 1,    /* \p{N} */
    ASN_UC_LETTER = 2,    /* \p{L} */
    ASN_UC_SEPARATOR = 3, /* \p{Z} */
    ASN_UC_MARK = 4,      /* \p{M} */
    ASN_UC_PUNCT = 5,     /* \p{P} */
    ASN_UC_SYMBOL = 6,    /* \p{S} */
    ASN_UC_CONTROL = 7,   /* \p{C} but Cn */
};
#define ASN_UC_CAT_MASK 0x07
#define ASN_UC_SPACE 0x08 /* White_Space: the 25 code points of llama.cpp's \s */

/* Class byte of a code point: category | ASN_UC_SPACE. Code points past
 * U+10FFFF are UNDEFINED. */
extern const uint8_t *asn_ucd_table; /* 0x110000 entries, set by asn_ucd_init */
void asn_ucd_init(void);             /* idempotent and thread-safe */
static inline uint8_t asn_ucd(uint32_t cp) { return cp < 0x110000 ? asn_ucd_table[cp] : 0; }

/* WordPiece's normalizer maps (llama.cpp's unicode_tolower and
 * unicode_cpts_normalize_nfd): the simple lowercase mapping, and the first
 * code point of the canonical decomposition (the code point itself when it
 * has none). */
uint32_t asn_ucd_tolower(uint32_t cp);
uint32_t asn_ucd_nfd_first(uint32_t cp);

/* Bytes of the UTF-8 sequence a lead byte announces, as llama.cpp's
 * unicode_len_utf8: 1 for ASCII and for continuation bytes, 2 for C0-DF,
 * 3 for E0-EF, 4 for F0-FF. */
static inline size_t asn_utf8_len(unsigned char c)
{
    static const uint8_t len[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return len[c >> 4];
}
/* Decodes n bytes into code points as llama.cpp's unicode_cpts_from_utf8:
 * sequences are checked only for their continuation bytes (overlong forms
 * and surrogates are accepted), and a byte that starts no valid sequence
 * becomes U+FFFD and decoding resumes at the next byte. A 4-byte form above
 * U+10FFFF (which llama.cpp cannot encode back, and throws on) is treated
 * as an invalid byte here. out holds n entries; returns the count. */
size_t asn_utf8_decode(const char *s, size_t n, uint32_t *out);
/* Encodes cp (<= 0x10FFFF, surrogates included) into out; returns 1..4. */
int asn_utf8_encode(uint32_t cp, char *out);

/* The GPT-2 byte-to-unicode alphabet: byte b is written as code point
 * asn_byte_cp(b); asn_cp_byte is the inverse (-1 for other code points). */
uint32_t asn_byte_cp(uint8_t b);
int asn_cp_byte(uint32_t cp);

/* ------------------------------------------------------------- pretok.c */

typedef struct asn_pretok asn_pretok;

/* Flags a pre-tokenizer name sets on the vocab (llama.cpp's load()). */
enum {
    ASN_PRE_IGNORE_MERGES = 1 << 0, /* a piece that is a whole token is taken as is */
    ASN_PRE_NO_CLEAN = 1 << 1,      /* no space cleanup in detokenize */
    ASN_PRE_ADD_BOS = 1 << 2,       /* add_bos defaults to true */
    ASN_PRE_NO_BOS = 1 << 3,        /* the BOS id defaults to none */
};

/* The pre-tokenizer of a tokenizer.ggml.pre name (NULL = absent =
 * "default"). NULL with e set for an unknown or unsupported name. */
asn_pretok *asn_pretok_new(const char *name, asn_err *e);
void asn_pretok_free(asn_pretok *p);
unsigned asn_pretok_flags(const asn_pretok *p);
const char *asn_pretok_name(const asn_pretok *p);

/* Growable array of piece lengths (in code points). */
typedef struct asn_pieces {
    size_t *len;
    size_t n, cap;
} asn_pieces;

/* Per-call scratch of the splitter (so a vocab stays shareable). */
typedef struct asn_pretok_scratch asn_pretok_scratch;
asn_pretok_scratch *asn_pretok_scratch_new(void);
void asn_pretok_scratch_free(asn_pretok_scratch *s);

/* Splits n code points into pieces: every regex of the pre-tokenizer in
 * turn re-splits each piece of the previous one, text between matches
 * staying a piece of its own. out is overwritten. Returns 0 or -1. */
int asn_pretok_split(const asn_pretok *p, const uint32_t *cps, size_t n, asn_pieces *out,
                     asn_pretok_scratch *s, asn_err *e);

/* --------------------------------------------------------------- vocab */

/* Text -> id: open addressing over ids, keyed by the text's hash. */
typedef struct asn_strmap {
    uint64_t *slot; /* (hash high 32 bits << 32) | (id + 1); 0 = empty */
    size_t mask;
} asn_strmap;

/* BPE merges: (left symbol, right symbol) -> (rank, merged symbol). */
typedef struct asn_merge_slot {
    uint64_t key; /* left << 32 | right; UINT64_MAX = empty */
    int32_t rank;
    int32_t result;
} asn_merge_slot;

struct asn_vocab {
    asn_vocab_kind kind;
    char *model;
    asn_pretok *pre; /* BPE only */

    int32_t n;       /* tokens */
    char *text;      /* token texts, each NUL-terminated */
    uint32_t *off;   /* text of i at text + off[i], length off[i+1] - off[i] - 1 */
    float *score;
    uint8_t *type;
    uint32_t *attr;

    /* symbols = tokens (ids < n) + BPE merge parts that are not tokens */
    int32_t n_sym;
    char *xtext;     /* texts of the extra symbols, same layout as text */
    uint32_t *xoff;
    asn_strmap map;  /* text of any symbol -> symbol id */

    asn_merge_slot *merge;
    size_t merge_mask;
    int32_t byte_sym[256];   /* BPE: symbol of the byte-level character of each byte */
    int32_t byte_fb[256][2]; /* BPE: tokens of its UTF-8 bytes taken one by one (-1: none) */
    int32_t byte_tok[256];   /* SPM: <0xXX> token (or the 1-byte token) of each byte */
    int spm_split;           /* SPM: no token has U+2581 after another character */
    int lowercase, strip_accents; /* WPM: the normalizer (tokenizer.ggml.normalizer.*) */
    size_t max_token_len;    /* WPM: the longest token text, in bytes */

    int32_t bos, eos, eot, eom, unk, sep, pad, mask;
    int32_t fim_pre, fim_suf, fim_mid, fim_pad, fim_rep, fim_sep;
    int add_bos, add_eos, add_space_prefix, ignore_merges, clean_spaces;

    int32_t *eog;
    size_t n_eog;

    /* special tokens (CONTROL, USER_DEFINED, UNKNOWN), longest text first,
     * and a trie of their texts to find which occur in a text */
    int32_t *special;
    size_t n_special;
    struct asn_trie *trie;

    /* pieces with special tokens rendered (llama.cpp's token-to-piece cache) */
    char *piece;
    uint32_t *poff;
    size_t max_piece;
};

/* Symbol text (token or extra symbol). */
static inline const char *asn_sym_text(const asn_vocab *v, int32_t s, size_t *len)
{
    if (s < v->n) {
        *len = v->off[s + 1] - v->off[s] - 1;
        return v->text + v->off[s];
    }
    s -= v->n;
    *len = v->xoff[s + 1] - v->xoff[s] - 1;
    return v->xtext + v->xoff[s];
}

/* vocab_sym.c: the hash, the symbol lookup and the id array below. */
uint64_t asn_str_hash(const void *p, size_t n);
/* Symbol id of these bytes, -1 if none. */
int32_t asn_sym_find(const asn_vocab *v, const char *s, size_t n);
/* Token id (< v->n) of these bytes, -1 if none. */
int32_t asn_tok_find(const asn_vocab *v, const char *s, size_t n);

/* Growable id array. */
typedef struct asn_ids {
    int32_t *v;
    size_t n, cap;
} asn_ids;
void asn_ids_push(asn_ids *a, int32_t id);

/* A binary heap of T (a growable array) that pops first the element e with
 * BEFORE(&e, &other) for every other: the merge queues of tok_spm.c and
 * tok_bpe.c. Defines heap_push(&arr, &n, &cap, x) and heap_pop(arr, &n). */
#define ASN_HEAP_DEFINE(T, BEFORE)                                                   \
    static void heap_push(T **h, size_t *n, size_t *cap, T x)                      \
    {                                                                                \
        asn_grow((void **)h, cap, *n + 1, sizeof **h);                               \
        size_t i = (*n)++;                                                           \
        while (i > 0) {                                                              \
            size_t p = (i - 1) / 2;                                                  \
            if (!BEFORE(&x, &(*h)[p]))                                               \
                break;                                                               \
            (*h)[i] = (*h)[p];                                                       \
            i = p;                                                                   \
        }                                                                            \
        (*h)[i] = x;                                                                 \
    }                                                                                \
    static T heap_pop(T *h, size_t *n)                                               \
    {                                                                                \
        T top = h[0], last = h[--*n];                                                \
        size_t i = 0;                                                                \
        for (;;) {                                                                   \
            size_t c = 2 * i + 1;                                                    \
            if (c >= *n)                                                             \
                break;                                                               \
            if (c + 1 < *n && BEFORE(&h[c + 1], &h[c]))                              \
                c++;                                                                 \
            if (!BEFORE(&h[c], &last))                                               \
                break;                                                               \
            h[i] = h[c];                                                             \
            i = c;                                                                   \
        }                                                                            \
        if (*n)                                                                      \
            h[i] = last;                                                             \
        return top;                                                                  \
    }

/* ------------------------------------------------------------ tok_spm.c */

/* Tokenizes one raw fragment (spaces already replaced by U+2581). */
typedef struct asn_spm_scratch asn_spm_scratch;
asn_spm_scratch *asn_spm_scratch_new(void);
void asn_spm_scratch_free(asn_spm_scratch *s);
void asn_spm_tokenize(const asn_vocab *v, const char *text, size_t n, asn_ids *out, asn_spm_scratch *s);

/* ------------------------------------------------------------ tok_bpe.c */

typedef struct asn_bpe_scratch asn_bpe_scratch;
asn_bpe_scratch *asn_bpe_scratch_new(void);
void asn_bpe_scratch_free(asn_bpe_scratch *s);
/* Reads tokenizer.ggml.merges into v (after the tokens). */
int asn_bpe_load_merges(asn_vocab *v, const asn_gguf *g, asn_err *e);
/* Pre-tokenizes and tokenizes one raw fragment. */
int asn_bpe_tokenize(const asn_vocab *v, const char *text, size_t n, asn_ids *out, asn_bpe_scratch *s,
                     asn_err *e);

/* ------------------------------------------------------------ tok_wpm.c */

typedef struct asn_wpm_scratch asn_wpm_scratch;
asn_wpm_scratch *asn_wpm_scratch_new(void);
void asn_wpm_scratch_free(asn_wpm_scratch *s);
/* Normalizes, splits into words and cuts each into tokens: one raw fragment. */
void asn_wpm_tokenize(const asn_vocab *v, const char *text, size_t n, asn_ids *out, asn_wpm_scratch *s);

#endif
