/* asn/bleu.h — sentence BLEU exactly as sacrebleu computes it (v2.x:
 * BLEU(effective_order=True).sentence_score with the default "13a"
 * tokenizer, "exp" smoothing, n-grams of orders 1..4), self-BLEU of a group
 * of texts as the reference project's diversity labeller computes it, and
 * distinct-n over the same tokens.
 *
 * Checked against sacrebleu itself (tests/fixtures/make_bleu_fixtures.py
 * runs it) in tests/unit/test_diversity.c. Texts are UTF-8 with explicit
 * lengths (they may hold NUL bytes); "whitespace" is what Python's
 * str.split() splits on, since sacrebleu splits with it. */
#ifndef ASN_BLEU_H
#define ASN_BLEU_H

#include <stddef.h>

#define ASN_BLEU_MAX_ORDER 4 /* sacrebleu's MAX_NGRAM_ORDER */

/* Length in bytes of the whitespace code point that starts s[0..n) — one of
 * the 29 code points for which Python's str.isspace() is true (ASCII
 * \t\n\v\f\r, 0x1C-0x1F and space; U+0085, U+00A0, U+1680, U+2000-U+200A,
 * U+2028, U+2029, U+202F, U+205F, U+3000) — or 0 if s does not start with
 * one. */
size_t asn_pyspace_len(const char *s, size_t n);

/* sacrebleu's preprocessing of a segment with the 13a tokenizer: trailing
 * whitespace stripped, "<skipped>" and "-\n" removed, newlines to spaces,
 * &quot; &amp; &lt; &gt; unescaped, ASCII punctuation split off (periods
 * and commas only when not between digits, dashes only after a digit), and
 * the tokens joined by single spaces. Returns a new NUL-terminated string
 * (caller frees) and its length in *out_len (may be NULL). */
char *asn_tok13a(const char *text, size_t len, size_t *out_len);

/* The sufficient statistics of one hypothesis against its references. */
typedef struct asn_bleu_stats {
    long correct[ASN_BLEU_MAX_ORDER]; /* clipped n-gram matches, order 1..4 */
    long total[ASN_BLEU_MAX_ORDER];   /* hypothesis n-grams, order 1..4 */
    long sys_len;                     /* hypothesis tokens */
    long ref_len;                     /* closest reference length (ties: shorter) */
} asn_bleu_stats;

/* sacrebleu's BLEU.compute_bleu with smooth_method "exp" and
 * effective_order: the score in 0..100. */
double asn_bleu_score(const asn_bleu_stats *st);

/* Sentence BLEU (0..100) of hyp against refs (n_refs >= 1; NUL-terminated
 * strings), as BLEU(effective_order=True).sentence_score(hyp, refs).score.
 * st (may be NULL) receives the statistics. */
double asn_sentence_bleu(const char *hyp, const char *const *refs, int n_refs, asn_bleu_stats *st);

/* ------------------------------------------------------- groups of texts */

/* A group of texts tokenized once (13a) with their n-grams counted, so that
 * each text can be scored against all the others in time linear in the
 * group's size. */
typedef struct asn_bleu_group asn_bleu_group;

/* lens may be NULL (NUL-terminated texts). n >= 0. */
asn_bleu_group *asn_bleu_group_new(const char *const *texts, const size_t *lens, int n);
void asn_bleu_group_free(asn_bleu_group *g);
/* Statistics and BLEU (0..100) of text i against all the other texts of
 * the group as references. */
void asn_bleu_group_stats(const asn_bleu_group *g, int i, asn_bleu_stats *st);
double asn_bleu_group_sentence(const asn_bleu_group *g, int i);
/* Mean over the group of asn_bleu_group_sentence (0..100), summed in text
 * order as the reference does; 0 for fewer than 2 texts (as the reference). */
double asn_bleu_group_self_bleu(const asn_bleu_group *g);
/* n-grams of order `order` (1..4) over all the texts: *total counted with
 * repetition, *distinct without. */
void asn_bleu_group_ngrams(const asn_bleu_group *g, int order, long *distinct, long *total);

#endif
