/* asn/ngram.h — a word n-gram index over a local corpus (a suffix array
 * over word ids, in one mmap'd file) and the reference project's
 * longest-match labelling (label_infinigram: coverage and breaks), done
 * offline.
 *
 * Words are what Python's str.split() gives (maximal runs of bytes that are
 * not whitespace in its sense, asn_pyspace_len in asn/bleu.h): the reference
 * splits candidates that way. Documents are kept apart: no n-gram spans two
 * corpus files (or two lines, with line documents).
 *
 * Index file, little-endian, every section 8-byte aligned:
 *   header   64 bytes: "ASNNGRM1", version, flags, n_tokens, n_vocab,
 *            n_docs, vocabulary bytes, n_words, reserved
 *   vocab    n_vocab + 1 offsets (u64) into the vocabulary bytes: the
 *            distinct words sorted by their bytes, so a word's id is its rank
 *   bucket   n_vocab + 2 u32: the suffix array rows of suffixes starting
 *            with word id w are [bucket[w], bucket[w + 1])
 *   text     n_tokens u32: the corpus as word ids, each document followed by
 *            the separator id n_vocab
 *   sa       n_tokens u32: the suffix array of text (positions, in the
 *            lexicographic order of the id sequences starting there)
 * so an index holds at most 2^32 - 2 tokens (~ 20 GB of text). */
#ifndef ASN_NGRAM_H
#define ASN_NGRAM_H

#include <stddef.h>
#include <stdint.h>

#include "asn/core.h"

/* The reference's max_n (InfiniGramApiLabeller). */
#define ASN_NGRAM_MAX_N 10
/* Word id of a word the corpus does not have. */
#define ASN_NGRAM_NONE UINT32_MAX

/* ------------------------------------------------------------ suffix array */

/* Suffix array of s[0..n) over the alphabet [0, K) (every s[i] < K), by
 * SA-IS (Nong, Zhang and Chan, "Two efficient algorithms for linear time
 * suffix array construction", 2011): linear time, n + K words of memory
 * beyond s and sa. A suffix that is a prefix of another sorts first.
 * n < 2^32 - 1. Returns 0, or -1 with e set. */
int asn_suffix_array(const uint32_t *s, size_t n, uint32_t K, uint32_t *sa, asn_err *e);

/* ----------------------------------------------------------------- build */

typedef struct asn_ngram_builder asn_ngram_builder;

/* line_docs: every line is a document (else each added text is one). */
asn_ngram_builder *asn_ngram_builder_new(int line_docs);
void asn_ngram_builder_free(asn_ngram_builder *b);
/* Adds the words of text[0..len) as one document (or one per line).
 * Returns 0, or -1 with e set when the index would be too large. */
int asn_ngram_builder_add(asn_ngram_builder *b, const char *text, size_t len, asn_err *e);

typedef struct asn_ngram_info {
    uint64_t n_tokens; /* words + one separator per document */
    uint64_t n_words;  /* words of the corpus */
    uint64_t n_vocab;  /* distinct words */
    uint64_t n_docs;   /* documents with at least one word */
    uint64_t bytes;    /* index file size */
} asn_ngram_info;

/* Sorts and writes the index to path (through path.tmp, renamed when
 * complete). info (may be NULL) receives its figures. The builder's memory
 * is released as it goes: call asn_ngram_builder_free after. */
int asn_ngram_builder_write(asn_ngram_builder *b, const char *path, asn_ngram_info *info, asn_err *e);

/* ----------------------------------------------------------------- query */

typedef struct asn_ngram_index asn_ngram_index;

/* Maps an index file and checks it (sizes, offsets, every id and suffix
 * array entry in range), so a damaged file is an error, not a crash. */
asn_ngram_index *asn_ngram_open(const char *path, asn_err *e);
void asn_ngram_close(asn_ngram_index *ix);
asn_ngram_info asn_ngram_index_info(const asn_ngram_index *ix);

/* The id of word w[0..n), or ASN_NGRAM_NONE. */
uint32_t asn_ngram_word_id(const asn_ngram_index *ix, const char *w, size_t n);
/* The words of text as ids (ASN_NGRAM_NONE for unknown words): *ids is a
 * new array (caller frees; may be NULL when there are no words). Returns
 * the number of words. */
size_t asn_ngram_text_ids(const asn_ngram_index *ix, const char *text, size_t len, uint32_t **ids);
/* Occurrences of the id sequence ids[0..n) (n >= 1) in the corpus. */
uint64_t asn_ngram_count(const asn_ngram_index *ix, const uint32_t *ids, size_t n);
/* The largest k <= min(n, max_n) such that ids[0..k) occurs (0 if none). */
int asn_ngram_longest_prefix(const asn_ngram_index *ix, const uint32_t *ids, size_t n, int max_n);

/* The reference's labelling of a text: from word i, the longest n-gram (at
 * most max_n words) that occurs; coverage += its length and i jumps past
 * it; else, if the previous step matched, breaks += 1, and i += 1. */
typedef struct asn_ngram_label {
    long words;    /* words in the text */
    long coverage; /* words covered by matches (infinigram_total_coverage) */
    long breaks;   /* matched-to-unmatched transitions (infinigram_breaks) */
    long longest;  /* the longest match of the walk (<= max_n) */
} asn_ngram_label;
void asn_ngram_label_ids(const asn_ngram_index *ix, const uint32_t *ids, size_t n, int max_n, asn_ngram_label *out);
void asn_ngram_label_text(const asn_ngram_index *ix, const char *text, size_t len, int max_n, asn_ngram_label *out);

#endif
