/* tok_wpm.c — the WordPiece tokenizer of BERT-style models
 * (tokenizer.ggml.model "bert"), as llama.cpp's llm_tokenizer_wpm_session:
 *
 *  1. normalize and split into words: each code point is first replaced by
 *     the first code point of its canonical decomposition and stripped when
 *     it is a combining mark (when accents are stripped), lowercased (when
 *     the vocab lowercases); whitespace ends a word; NUL, U+FFFD and control
 *     characters are dropped; punctuation, ASCII symbols and CJK ideographs
 *     are words of their own;
 *  2. each word, prefixed with U+2581, is cut greedily from the left into
 *     the longest vocabulary tokens. In a GGUF the converter has already
 *     rewritten the vocab for this: a word-initial piece "hello" is stored
 *     as "\u2581hello" and a continuation "##llo" as "llo";
 *  3. a word that cannot be cut to the end becomes the unknown token.
 * As in llama.cpp, only the first code point of a decomposition is kept:
 * a Hangul syllable becomes its leading consonant (Hugging Face's BERT
 * keeps all its jamo), so Korean text tokenizes as llama.cpp does, not as
 * the original model.
 * BOS ([CLS]) and SEP are added around the whole text by vocab.c. */
#include "tok_internal.h"

#include <stdlib.h>
#include <string.h>

struct asn_wpm_scratch {
    uint32_t *cps;
    size_t cps_cap;
    char *word;
    size_t word_cap;
};

asn_wpm_scratch *asn_wpm_scratch_new(void) { return asn_xcalloc(1, sizeof(asn_wpm_scratch)); }

void asn_wpm_scratch_free(asn_wpm_scratch *s)
{
    if (!s)
        return;
    free(s->cps);
    free(s->word);
    free(s);
}

/* The CJK ideograph blocks BERT's BasicTokenizer splits one by one (with
 * Hugging Face's 0x2B920 start of the fifth range, which llama.cpp keeps). */
static int is_cjk(uint32_t c)
{
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
           (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

#define PREFIX "\xE2\x96\x81" /* U+2581, the word-initial mark */
#define PREFIX_LEN 3

/* Longest-match-first over the word w[0..n) (PREFIX included). */
static void wpm_word(const asn_vocab *v, const char *w, size_t n, asn_ids *out)
{
    size_t start = out->n;
    for (size_t i = 0; i < n;) {
        size_t j = i + v->max_token_len + 1 < n ? i + v->max_token_len + 1 : n;
        int32_t id = -1;
        for (; j > i && (id = asn_tok_find(v, w + i, j - i)) < 0; j--)
            ;
        if (id < 0) { /* the rest cannot be cut: the whole word is unknown */
            out->n = start;
            break;
        }
        asn_ids_push(out, id);
        i = j;
    }
    /* llama.cpp pushes its unknown id even when the vocab has none; a
     * vocab without one loses the word here */
    if (out->n == start && v->unk >= 0)
        asn_ids_push(out, v->unk);
}

void asn_wpm_tokenize(const asn_vocab *v, const char *text, size_t n, asn_ids *out, asn_wpm_scratch *s)
{
    if (!n)
        return;
    asn_grow((void **)&s->cps, &s->cps_cap, n, sizeof *s->cps);
    asn_grow((void **)&s->word, &s->word_cap, PREFIX_LEN + 4 * n, 1);
    size_t ncp = asn_utf8_decode(text, n, s->cps);
    char *w = s->word;
    memcpy(w, PREFIX, PREFIX_LEN);
    size_t wl = PREFIX_LEN; /* the word so far, PREFIX included */
    for (size_t i = 0; i < ncp; i++) {
        uint32_t cp = s->cps[i];
        if (v->strip_accents)
            cp = asn_ucd_nfd_first(cp);
        uint8_t u = asn_ucd(cp), cat = u & ASN_UC_CAT_MASK;
        if (u & ASN_UC_SPACE) {
            if (wl > PREFIX_LEN)
                wpm_word(v, w, wl, out);
            wl = PREFIX_LEN;
            continue;
        }
        if (cp == 0 || cp == 0xFFFD || cat == ASN_UC_CONTROL)
            continue;
        if (v->strip_accents && cat == ASN_UC_MARK)
            continue;
        uint32_t c = v->lowercase ? asn_ucd_tolower(cp) : cp;
        if (cat == ASN_UC_PUNCT || (cp < 0x7F && cat == ASN_UC_SYMBOL) || is_cjk(cp)) {
            if (wl > PREFIX_LEN)
                wpm_word(v, w, wl, out);
            wl = PREFIX_LEN + (size_t)asn_utf8_encode(c, w + PREFIX_LEN);
            wpm_word(v, w, wl, out);
            wl = PREFIX_LEN;
            continue;
        }
        wl += (size_t)asn_utf8_encode(c, w + wl);
    }
    if (wl > PREFIX_LEN)
        wpm_word(v, w, wl, out);
}
