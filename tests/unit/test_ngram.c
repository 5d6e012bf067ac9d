/* test_ngram.c — the suffix array against a naive sort of the suffixes, and
 * the n-gram index (counts, longest matches, the reference's coverage and
 * breaks walk) against a brute-force scan of random small corpora; index
 * files that are damaged are errors. */
#include "asn/ngram.h"
#include "t.h"

#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static uint32_t rnd(uint32_t n)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (uint32_t)((rng >> 11) % n);
}

/* ------------------------------------------------------------ suffix array */

static const uint32_t *cmp_s;
static size_t cmp_n;
static int cmp_suffix(const void *pa, const void *pb)
{
    size_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    while (a < cmp_n && b < cmp_n) {
        if (cmp_s[a] != cmp_s[b])
            return cmp_s[a] < cmp_s[b] ? -1 : 1;
        a++, b++;
    }
    return a == cmp_n ? (b == cmp_n ? 0 : -1) : 1; /* the shorter (a prefix) first */
}

/* 0 if asn_suffix_array agrees with qsort on s; else the first bad row + 1. */
static size_t check_sa(const uint32_t *s, size_t n, uint32_t K)
{
    uint32_t *sa = malloc((n + 1) * sizeof *sa), *ref = malloc((n + 1) * sizeof *ref);
    asn_err e;
    size_t bad = 0;
    if (asn_suffix_array(s, n, K, sa, &e)) {
        bad = 1;
    } else {
        for (size_t i = 0; i < n; i++)
            ref[i] = (uint32_t)i;
        cmp_s = s, cmp_n = n;
        qsort(ref, n, sizeof *ref, cmp_suffix);
        for (size_t i = 0; i < n && !bad; i++)
            if (sa[i] != ref[i])
                bad = i + 1;
    }
    free(sa), free(ref);
    return bad;
}

static void test_suffix_array(void)
{
    enum { MAXN = 3000 };
    uint32_t *s = malloc(MAXN * sizeof *s);
    int cases = 0, bad = 0;
    static const uint32_t alphabets[] = {1, 2, 3, 4, 10, 100, 5000};
    for (int trial = 0; trial < 600; trial++) {
        size_t n = trial < 20 ? (size_t)trial : 1 + rnd(trial % 10 == 0 ? MAXN : 200);
        uint32_t K = alphabets[rnd(sizeof alphabets / sizeof *alphabets)];
        int kind = (int)rnd(5);
        for (size_t i = 0; i < n; i++) {
            switch (kind) {
            case 0: s[i] = rnd(K); break;                      /* random */
            case 1: s[i] = (uint32_t)(i % (1 + rnd(3) + 1)) % K; break; /* periodic-ish */
            case 2: s[i] = i > 0 && rnd(4) ? s[i - 1] : rnd(K); break;  /* runs */
            case 3: s[i] = i >= 7 && rnd(8) ? s[i - 7] : rnd(K); break; /* repeats at distance 7 */
            default: s[i] = K - 1 - (uint32_t)(i % K); break;           /* descending */
            }
        }
        size_t r = check_sa(s, n, K);
        cases++;
        if (r && bad++ < 3)
            printf("# suffix array differs from a naive sort: n %zu, K %u, kind %d, row %zu\n", n, K, kind, r - 1);
    }
    /* a Fibonacci word (each is a prefix of the next: w(k+1) = w(k) w(k-1)),
     * a classic hard case for suffix sorting */
    size_t len = 2, prev = 1;
    s[0] = 0, s[1] = 1;
    while (len + prev <= MAXN) {
        memcpy(s + len, s, prev * sizeof *s);
        size_t next = len + prev;
        prev = len, len = next;
    }
    cases++;
    if (check_sa(s, len, 2))
        bad++;
    char name[96];
    snprintf(name, sizeof name, "suffix array equals a naive sort of the suffixes (%d strings)", cases);
    T_OK(name, bad == 0, "%d differ", bad);
    asn_err e;
    uint32_t bogus[2] = {0, 7}, sa2[2];
    T_OK("a symbol outside the alphabet is an error", asn_suffix_array(bogus, 2, 5, sa2, &e) == -1 &&
         strstr(e.msg, "alphabet"), "%s", e.msg);
    free(s);
}

/* ------------------------------------------------------------ the index */

static char tmp_path[512];

/* A corpus: documents of word indices into VOCAB. */
#define NV 12
static const char *VOCAB[NV] = {"the", "cat", "sat", "on", "mat", "a", "dog", "ran", "caf\u00e9", "\u4e2d\u6587", ".",
                                "The"};

typedef struct corpus {
    int n_docs;
    int len[40];
    int w[40][300];
} corpus;

static void random_corpus(corpus *c, int vocab)
{
    c->n_docs = 1 + (int)rnd(8);
    for (int d = 0; d < c->n_docs; d++) {
        c->len[d] = (int)rnd(d == 0 ? 300 : 60);
        for (int i = 0; i < c->len[d]; i++)
            c->w[d][i] = i >= 5 && rnd(3) == 0 ? c->w[d][i - 5] : (int)rnd((uint32_t)vocab);
    }
}

/* Occurrences of words q[0..n) (indices into VOCAB; -1 = a word not in the
 * corpus) inside documents. */
static uint64_t brute_count(const corpus *c, const int *q, int n)
{
    uint64_t k = 0;
    for (int d = 0; d < c->n_docs; d++)
        for (int i = 0; i + n <= c->len[d]; i++) {
            int j = 0;
            while (j < n && c->w[d][i + j] == q[j])
                j++;
            k += j == n;
        }
    return k;
}

/* A query of n words: random (kind 0), a run of a document from a random
 * place, random after its end (1), the same with one word changed (2). */
static void random_query(const corpus *c, int kind, int *q, int n)
{
    int d = (int)rnd((uint32_t)c->n_docs), at = c->len[d] ? (int)rnd((uint32_t)c->len[d]) : 0;
    for (int i = 0; i < n; i++)
        q[i] = kind > 0 && at + i < c->len[d] ? c->w[d][at + i] : (int)rnd(NV);
    if (kind == 2 && n > 0)
        q[rnd((uint32_t)n)] = (int)rnd(NV);
}

/* The reference's walk (label_infinigram), existence by brute force and the
 * length by its binary search. */
static void brute_label(const corpus *c, const int *q, int n, int max_n, asn_ngram_label *out)
{
    *out = (asn_ngram_label){n, 0, 0, 0};
    int was = 0;
    for (int i = 0; i < n;) {
        int best = 0, lo = 1, hi = max_n < n - i ? max_n : n - i;
        while (lo <= hi) {
            int m = lo + (hi - lo) / 2;
            if (brute_count(c, q + i, m) > 0)
                best = m, lo = m + 1;
            else
                hi = m - 1;
        }
        if (best > 0) {
            out->coverage += best;
            out->longest = best > out->longest ? best : out->longest;
            i += best;
            was = 1;
        } else {
            if (was)
                out->breaks++;
            i++;
            was = 0;
        }
    }
}

/* Writes c through the builder (one text per document, words separated by
 * assorted whitespace) and opens the index. */
static asn_ngram_index *build(const corpus *c, int line_docs)
{
    asn_err e;
    asn_ngram_builder *b = asn_ngram_builder_new(line_docs);
    static const char *ws[] = {" ", "  ", "\t", " \u3000", "\u00a0", "\r\n "};
    char *text = malloc(64 * 1024);
    size_t n = 0;
    for (int d = 0; d < c->n_docs; d++) {
        if (!line_docs)
            n = 0;
        for (int i = 0; i < c->len[d]; i++) {
            const char *sep = ws[rnd(line_docs ? 5 : 6)];
            n += (size_t)sprintf(text + n, "%s%s", sep, VOCAB[c->w[d][i]]);
        }
        if (line_docs)
            text[n++] = '\n';
        else
            asn_ngram_builder_add(b, text, n, &e);
    }
    if (line_docs)
        asn_ngram_builder_add(b, text, n, &e);
    free(text);
    asn_ngram_info info;
    int rc = asn_ngram_builder_write(b, tmp_path, &info, &e);
    asn_ngram_builder_free(b);
    if (rc) {
        printf("# build: %s\n", e.msg);
        return NULL;
    }
    asn_ngram_index *ix = asn_ngram_open(tmp_path, &e);
    if (!ix)
        printf("# open: %s\n", e.msg);
    return ix;
}

static void test_index_vs_brute_force(void)
{
    int corpora = 0, bad_count = 0, bad_longest = 0, bad_label = 0, bad_ids = 0, queries = 0;
    for (int trial = 0; trial < 60; trial++) {
        corpus c;
        int vocab = trial % 3 == 0 ? 3 : trial % 3 == 1 ? 6 : NV - 1; /* VOCAB[NV-1] never in a corpus */
        random_corpus(&c, vocab);
        asn_ngram_index *ix = build(&c, trial % 4 == 3);
        if (!ix) {
            bad_count++;
            continue;
        }
        corpora++;
        uint32_t id_of[NV];
        for (int v = 0; v < NV; v++) {
            id_of[v] = asn_ngram_word_id(ix, VOCAB[v], strlen(VOCAB[v]));
            int present = brute_count(&c, &v, 1) > 0;
            bad_ids += present != (id_of[v] != ASN_NGRAM_NONE);
        }
        for (int qn = 0; qn < 150; qn++) {
            int q[40], n = 1 + (int)rnd(12);
            random_query(&c, qn % 3, q, n);
            uint32_t ids[40];
            for (int i = 0; i < n; i++)
                ids[i] = id_of[q[i]];
            queries++;
            if (asn_ngram_count(ix, ids, (size_t)n) != brute_count(&c, q, n) && bad_count++ < 3)
                printf("# count differs: corpus %d, query %d\n", trial, qn);
            int max_n = 1 + (int)rnd(10), exp = 0;
            for (int k = 1; k <= n && k <= max_n; k++)
                if (brute_count(&c, q, k) > 0)
                    exp = k;
            if (asn_ngram_longest_prefix(ix, ids, (size_t)n, max_n) != exp && bad_longest++ < 3)
                printf("# longest prefix differs: corpus %d, query %d\n", trial, qn);
        }
        /* labels of whole texts: a document, a shuffled one, random words */
        for (int t = 0; t < 12; t++) {
            int q[300], n = (int)rnd(80);
            random_query(&c, t % 3, q, n);
            char text[8192];
            size_t tl = 0;
            for (int i = 0; i < n; i++)
                tl += (size_t)sprintf(text + tl, "%s%s", i ? (rnd(2) ? " " : "\n\t") : "", VOCAB[q[i]]);
            int max_n = t % 2 ? ASN_NGRAM_MAX_N : 1 + (int)rnd(4);
            asn_ngram_label got, exp;
            asn_ngram_label_text(ix, text, tl, max_n, &got);
            brute_label(&c, q, n, max_n, &exp);
            if (memcmp(&got, &exp, sizeof got) && bad_label++ < 3)
                printf("# label differs (corpus %d, max_n %d): expected %ld/%ld/%ld/%ld, got %ld/%ld/%ld/%ld\n", trial,
                       max_n, exp.words, exp.coverage, exp.breaks, exp.longest, got.words, got.coverage, got.breaks,
                       got.longest);
        }
        asn_ngram_close(ix);
    }
    char name[128];
    snprintf(name, sizeof name, "n-gram counts equal a brute-force scan (%d corpora, %d queries)", corpora, queries);
    T_OK(name, corpora == 60 && bad_count == 0, "%d differ", bad_count);
    T_OK("longest matching prefixes equal a brute-force scan", bad_longest == 0, "%d differ", bad_longest);
    T_OK("coverage, breaks and longest equal the reference's walk over brute-force existence", bad_label == 0,
         "%d differ", bad_label);
    T_OK("a word has an id exactly when the corpus has it", bad_ids == 0, "%d differ", bad_ids);
}

static void test_index_edges(void)
{
    asn_err e;
    asn_ngram_builder *b = asn_ngram_builder_new(0);
    const char *doc1 = "the cat sat", *doc2 = "on the mat", *doc3 = " \t\n ";
    asn_ngram_builder_add(b, doc1, strlen(doc1), &e);
    asn_ngram_builder_add(b, doc2, strlen(doc2), &e);
    asn_ngram_builder_add(b, doc3, strlen(doc3), &e);
    asn_ngram_info info;
    T_OK("builder writes", asn_ngram_builder_write(b, tmp_path, &info, &e) == 0, "%s", e.msg);
    asn_ngram_builder_free(b);
    T_OK("index figures", info.n_words == 6 && info.n_vocab == 5 && info.n_docs == 2 && info.n_tokens == 8,
         "words %llu vocab %llu docs %llu tokens %llu", (unsigned long long)info.n_words,
         (unsigned long long)info.n_vocab, (unsigned long long)info.n_docs, (unsigned long long)info.n_tokens);
    asn_ngram_index *ix = asn_ngram_open(tmp_path, &e);
    T_OK("index opens", ix != NULL, "%s", e.msg);
    if (!ix)
        return;
    asn_ngram_label l;
    const char *t1 = "the cat sat on the mat";
    asn_ngram_label_text(ix, t1, strlen(t1), 10, &l);
    /* "the cat sat" (3), then "on the mat" (3): documents do not join */
    T_OK("matches stop at document ends", l.words == 6 && l.coverage == 6 && l.breaks == 0 && l.longest == 3,
         "%ld %ld %ld %ld", l.words, l.coverage, l.breaks, l.longest);
    const char *t2 = "zzz the cat yyy xxx mat";
    asn_ngram_label_text(ix, t2, strlen(t2), 10, &l);
    T_OK("a break is counted when a match is left, once", l.coverage == 3 && l.breaks == 1 && l.longest == 2,
         "%ld %ld %ld", l.coverage, l.breaks, l.longest);
    asn_ngram_label_text(ix, "", 0, 10, &l);
    T_OK("empty text: all zero", l.words == 0 && l.coverage == 0 && l.breaks == 0, "%ld", l.words);
    const char *t3 = "the\u00a0cat\u3000sat";
    asn_ngram_label_text(ix, t3, strlen(t3), 10, &l);
    T_OK("Unicode whitespace splits words as Python does", l.words == 3 && l.coverage == 3, "%ld %ld", l.words,
         l.coverage);
    asn_ngram_label_text(ix, t1, strlen(t1), 2, &l);
    T_OK("--max-n caps a match", l.coverage == 6 && l.longest == 2, "%ld %ld", l.coverage, l.longest);
    asn_ngram_close(ix);

    /* damaged files */
    FILE *f = fopen(tmp_path, "r+b");
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, size - 4, SEEK_SET);
    uint32_t big = 1000;
    fwrite(&big, 4, 1, f); /* the last suffix array entry */
    fclose(f);
    ix = asn_ngram_open(tmp_path, &e);
    T_OK("a suffix array entry out of range is an error", !ix && strstr(e.msg, "damaged"), "%s", e.msg);
    asn_ngram_close(ix);
    if (truncate(tmp_path, size - 8) == 0) {
        ix = asn_ngram_open(tmp_path, &e);
        T_OK("a truncated index is an error", !ix && strstr(e.msg, "damaged"), "%s", e.msg);
        asn_ngram_close(ix);
    }
    f = fopen(tmp_path, "wb");
    fputs("not an index at all, but long enough to have a header of 64 bytes....", f);
    fclose(f);
    ix = asn_ngram_open(tmp_path, &e);
    T_OK("a file that is not an index is an error", !ix && strstr(e.msg, "not an n-gram index"), "%s", e.msg);
    asn_ngram_close(ix);
    ix = asn_ngram_open("/nonexistent/asn.idx", &e);
    T_OK("a missing index is an error naming it", !ix && strstr(e.msg, "/nonexistent/asn.idx"), "%s", e.msg);

    /* an empty corpus gives an index that matches nothing */
    b = asn_ngram_builder_new(1);
    T_OK("an empty corpus builds", asn_ngram_builder_write(b, tmp_path, &info, &e) == 0 && info.n_tokens == 0, "%s",
         e.msg);
    asn_ngram_builder_free(b);
    ix = asn_ngram_open(tmp_path, &e);
    if (ix) {
        asn_ngram_label_text(ix, t1, strlen(t1), 10, &l);
        T_OK("an empty index matches nothing", l.coverage == 0 && l.words == 6, "%ld", l.coverage);
        asn_ngram_close(ix);
    } else {
        T_OK("an empty index opens", 0, "%s", e.msg);
    }
}

int main(void)
{
    const char *t = getenv("TMPDIR");
    snprintf(tmp_path, sizeof tmp_path, "%s/asn_test_ngram_%d.idx", t && *t ? t : "/tmp", (int)getpid());
    test_suffix_array();
    test_index_vs_brute_force();
    test_index_edges();
    unlink(tmp_path);
    T_DONE();
}
