/* ngram.c — word n-gram index: SA-IS suffix arrays over word ids, the
 * index builder and file format, and longest-match queries (see
 * asn/ngram.h).
 *
 * Why a suffix array of our own over word ids rather than libdivsufsort:
 * divsufsort sorts byte strings, so word ids would have to be spelled as
 * fixed-width big-endian bytes (3 or 4 per word), sorted at every byte
 * position and the unaligned suffixes thrown away: 3-4x the suffixes, and
 * 32-bit positions run out four times sooner. SA-IS sorts the word sequence
 * itself in linear time with an alphabet as large as the vocabulary, needs
 * no library and its time does not depend on how repetitive the corpus is
 * (a corpus made by repeating a text is the worst case of prefix doubling). */
#include "asn/ngram.h"

#include "asn/bleu.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------ SA-IS */

#define EMPTY UINT32_MAX

/* Suffix types, one bit each: 1 = S (smaller than the next suffix), 0 = L.
 * Position n is the virtual sentinel, smaller than every symbol: type S. */
static int is_s(const uint8_t *t, size_t i) { return (t[i >> 3] >> (i & 7)) & 1; }
static void set_s(uint8_t *t, size_t i) { t[i >> 3] |= (uint8_t)(1u << (i & 7)); }
static int is_lms(const uint8_t *t, size_t i) { return i > 0 && is_s(t, i) && !is_s(t, i - 1); }

/* Bucket heads (end = 0) or ends (end = 1) of each symbol in the SA. */
static void buckets(const uint32_t *s, size_t n, uint32_t K, uint32_t *bkt, int end)
{
    memset(bkt, 0, (size_t)K * sizeof *bkt);
    for (size_t i = 0; i < n; i++)
        bkt[s[i]]++;
    uint32_t sum = 0;
    for (uint32_t c = 0; c < K; c++) {
        sum += bkt[c];
        bkt[c] = end ? sum : sum - bkt[c];
    }
}

/* Induces the L-type suffixes from the S-type ones placed, then the S-type
 * ones from the L-type ones. */
static void induce(const uint32_t *s, uint32_t *sa, size_t n, uint32_t K, const uint8_t *t, uint32_t *bkt)
{
    buckets(s, n, K, bkt, 0);
    sa[bkt[s[n - 1]]++] = (uint32_t)(n - 1); /* the sentinel's predecessor is L */
    for (size_t i = 0; i < n; i++) {
        uint32_t j = sa[i];
        if (j != EMPTY && j > 0 && !is_s(t, j - 1))
            sa[bkt[s[j - 1]]++] = j - 1;
    }
    buckets(s, n, K, bkt, 1);
    for (size_t i = n; i-- > 0;) {
        uint32_t j = sa[i];
        if (j != EMPTY && j > 0 && is_s(t, j - 1))
            sa[--bkt[s[j - 1]]] = j - 1;
    }
}

/* Whether the LMS substrings at a and b (each up to the next LMS position,
 * inclusive) differ. The one that reaches the sentinel is unique. */
static int lms_differ(const uint32_t *s, size_t n, const uint8_t *t, size_t a, size_t b)
{
    for (size_t d = 0;; d++) {
        if (a + d == n || b + d == n)
            return 1;
        if (s[a + d] != s[b + d] || is_s(t, a + d) != is_s(t, b + d))
            return 1;
        if (d > 0) {
            int la = is_lms(t, a + d), lb = is_lms(t, b + d);
            if (la || lb)
                return !(la && lb);
        }
    }
}

static void sais(const uint32_t *s, uint32_t *sa, size_t n, uint32_t K)
{
    if (n == 0)
        return;
    if (n == 1) {
        sa[0] = 0;
        return;
    }
    uint8_t *t = asn_xcalloc(n / 8 + 2, 1);
    set_s(t, n);
    for (size_t i = n - 1; i-- > 0;) /* n - 1 is L: it precedes the sentinel */
        if (s[i] < s[i + 1] || (s[i] == s[i + 1] && is_s(t, i + 1)))
            set_s(t, i);
    uint32_t *bkt = asn_xmalloc(((size_t)K + 1) * sizeof *bkt);

    /* 1. sort the LMS substrings: LMS positions at their bucket ends, induce */
    for (size_t i = 0; i < n; i++)
        sa[i] = EMPTY;
    buckets(s, n, K, bkt, 1);
    for (size_t i = 1; i < n; i++)
        if (is_lms(t, i))
            sa[--bkt[s[i]]] = (uint32_t)i;
    induce(s, sa, n, K, t, bkt);

    /* 2. name them: equal substrings get equal names; the names in text
     * order form the reduced string s1 (at most n/2 long: LMS positions are
     * two apart at least), kept at the end of sa */
    size_t n1 = 0;
    for (size_t i = 0; i < n; i++)
        if (sa[i] != EMPTY && is_lms(t, sa[i]))
            sa[n1++] = sa[i];
    for (size_t i = n1; i < n; i++)
        sa[i] = EMPTY;
    uint32_t name = 0;
    size_t prev = n;
    for (size_t i = 0; i < n1; i++) {
        size_t pos = sa[i];
        if (prev == n || lms_differ(s, n, t, pos, prev))
            name++, prev = pos;
        sa[n1 + pos / 2] = name - 1;
    }
    for (size_t i = n, j = n; i-- > n1;)
        if (sa[i] != EMPTY)
            sa[--j] = sa[i];
    uint32_t *s1 = sa + n - n1;

    /* 3. sort the LMS suffixes: recursively unless every name is unique */
    if (name < n1) {
        free(bkt); /* the recursion needs its own; give the memory back meanwhile */
        sais(s1, sa, n1, name);
        bkt = asn_xmalloc(((size_t)K + 1) * sizeof *bkt);
    } else {
        for (size_t i = 0; i < n1; i++)
            sa[s1[i]] = (uint32_t)i;
    }

    /* 4. the LMS suffixes in order at their bucket ends, then induce all */
    for (size_t i = 1, j = 0; i < n; i++)
        if (is_lms(t, i))
            s1[j++] = (uint32_t)i; /* s1 now maps reduced index -> position */
    for (size_t i = 0; i < n1; i++)
        sa[i] = s1[sa[i]];
    for (size_t i = n1; i < n; i++)
        sa[i] = EMPTY;
    buckets(s, n, K, bkt, 1);
    for (size_t i = n1; i-- > 0;) {
        uint32_t j = sa[i];
        sa[i] = EMPTY;
        sa[--bkt[s[j]]] = j;
    }
    induce(s, sa, n, K, t, bkt);
    free(bkt);
    free(t);
}

int asn_suffix_array(const uint32_t *s, size_t n, uint32_t K, uint32_t *sa, asn_err *e)
{
    if (n >= (size_t)EMPTY)
        return asn_err_set(e, "suffix array: %zu symbols, at most %u", n, EMPTY - 1);
    for (size_t i = 0; i < n; i++)
        if (s[i] >= K)
            return asn_err_set(e, "suffix array: symbol %u at %zu is not below the alphabet size %u", s[i], i, K);
    sais(s, sa, n, K);
    return 0;
}

/* ------------------------------------------------------------------ words */

/* The next word of [*p, end): its start, length in *len; NULL at the end.
 * With stop_nl, a newline before the word sets *nl. */
static const char *next_word(const char **p, const char *end, size_t *len, int *nl)
{
    const char *q = *p;
    for (;;) {
        if (q >= end) {
            *p = q;
            return NULL;
        }
        size_t w = asn_pyspace_len(q, (size_t)(end - q));
        if (!w)
            break;
        if (nl && *q == '\n')
            *nl = 1;
        q += w;
    }
    const char *start = q;
    while (q < end && !asn_pyspace_len(q, (size_t)(end - q)))
        q++;
    *len = (size_t)(q - start);
    *p = q;
    return start;
}

/* ---------------------------------------------------------------- builder */

#define SEP_TMP UINT32_MAX /* document separator while building */
#define MAX_TOKENS ((uint64_t)UINT32_MAX - 1)

struct asn_ngram_builder {
    int line_docs;
    char *arena; /* the distinct words, back to back */
    size_t arena_n, arena_cap;
    uint64_t *w_off; /* per provisional id: offset in arena, length, hash */
    uint32_t *w_len;
    uint64_t *w_hash;
    size_t n_w, cap_w;
    uint32_t *slot; /* hash table: 1 + provisional id, 0 = empty */
    size_t n_slot;
    uint32_t *text;
    size_t n_text, cap_text;
    uint64_t n_words, n_docs;
    int open_doc; /* words added since the last separator */
};

static uint64_t hash_word(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return h ^ (h >> 29);
}

asn_ngram_builder *asn_ngram_builder_new(int line_docs)
{
    asn_ngram_builder *b = asn_xcalloc(1, sizeof *b);
    b->line_docs = line_docs;
    return b;
}

void asn_ngram_builder_free(asn_ngram_builder *b)
{
    if (!b)
        return;
    free(b->arena), free(b->w_off), free(b->w_len), free(b->w_hash), free(b->slot), free(b->text);
    free(b);
}

static void word_rehash(asn_ngram_builder *b)
{
    size_t ns = b->n_slot ? 2 * b->n_slot : 1 << 16;
    uint32_t *sl = asn_xcalloc(ns, sizeof *sl);
    for (size_t i = 0; i < b->n_w; i++) {
        size_t k = b->w_hash[i] & (ns - 1);
        while (sl[k])
            k = (k + 1) & (ns - 1);
        sl[k] = (uint32_t)i + 1;
    }
    free(b->slot);
    b->slot = sl;
    b->n_slot = ns;
}

static uint32_t word_intern(asn_ngram_builder *b, const char *w, size_t n)
{
    if (2 * (b->n_w + 1) > b->n_slot)
        word_rehash(b);
    uint64_t h = hash_word(w, n);
    size_t k = h & (b->n_slot - 1);
    for (; b->slot[k]; k = (k + 1) & (b->n_slot - 1)) {
        size_t i = b->slot[k] - 1;
        if (b->w_hash[i] == h && b->w_len[i] == n && !memcmp(b->arena + b->w_off[i], w, n))
            return (uint32_t)i;
    }
    if (b->n_w == b->cap_w) {
        size_t c = b->cap_w;
        asn_grow((void **)&b->w_off, &c, b->n_w + 1, sizeof *b->w_off);
        c = b->cap_w;
        asn_grow((void **)&b->w_len, &c, b->n_w + 1, sizeof *b->w_len);
        asn_grow((void **)&b->w_hash, &b->cap_w, b->n_w + 1, sizeof *b->w_hash);
    }
    asn_grow((void **)&b->arena, &b->arena_cap, b->arena_n + n + 1, 1);
    memcpy(b->arena + b->arena_n, w, n);
    b->w_off[b->n_w] = b->arena_n;
    b->w_len[b->n_w] = (uint32_t)n;
    b->w_hash[b->n_w] = h;
    b->arena_n += n;
    b->slot[k] = (uint32_t)b->n_w + 1;
    return (uint32_t)b->n_w++;
}

static int push(asn_ngram_builder *b, uint32_t id, asn_err *e)
{
    if (b->n_text + 1 > MAX_TOKENS)
        return asn_err_set(e, "the corpus has more than %llu words and separators, the most an index holds",
                           (unsigned long long)MAX_TOKENS);
    asn_grow((void **)&b->text, &b->cap_text, b->n_text + 1, sizeof *b->text);
    b->text[b->n_text++] = id;
    return 0;
}

static int end_doc(asn_ngram_builder *b, asn_err *e)
{
    if (!b->open_doc)
        return 0;
    b->open_doc = 0;
    b->n_docs++;
    return push(b, SEP_TMP, e);
}

int asn_ngram_builder_add(asn_ngram_builder *b, const char *text, size_t len, asn_err *e)
{
    const char *p = text, *end = text + len, *w;
    size_t n;
    int nl = 0;
    while ((w = next_word(&p, end, &n, b->line_docs ? &nl : NULL))) {
        if (nl && end_doc(b, e))
            return -1;
        nl = 0;
        if (n > UINT32_MAX)
            return asn_err_set(e, "a word of %zu bytes", n);
        if (push(b, word_intern(b, w, n), e))
            return -1;
        b->open_doc = 1;
        b->n_words++;
    }
    return end_doc(b, e);
}

/* The file layout of asn/ngram.h. */
typedef struct ix_header {
    char magic[8];
    uint32_t version, flags;
    uint64_t n_tokens, n_vocab, n_docs, str_bytes, n_words, reserved;
} ix_header;

#define IX_MAGIC "ASNNGRM1"
#define IX_VERSION 1u

typedef struct ix_layout {
    uint64_t off_vocab, off_str, off_bucket, off_text, off_sa, size;
} ix_layout;

static uint64_t align8(uint64_t x) { return (x + 7) & ~(uint64_t)7; }

static ix_layout layout(const ix_header *h)
{
    ix_layout l;
    l.off_vocab = sizeof(ix_header);
    l.off_str = l.off_vocab + (h->n_vocab + 1) * 8;
    l.off_bucket = align8(l.off_str + h->str_bytes);
    l.off_text = align8(l.off_bucket + (h->n_vocab + 2) * 4);
    l.off_sa = align8(l.off_text + h->n_tokens * 4);
    l.size = align8(l.off_sa + h->n_tokens * 4);
    return l;
}

/* Sorting the vocabulary: provisional ids by their bytes. */
static const asn_ngram_builder *sort_b;
static int cmp_word(const void *pa, const void *pb)
{
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    size_t la = sort_b->w_len[a], lb = sort_b->w_len[b];
    int c = memcmp(sort_b->arena + sort_b->w_off[a], sort_b->arena + sort_b->w_off[b], la < lb ? la : lb);
    return c ? c : (la > lb) - (la < lb);
}

static int write_all(FILE *f, const void *p, size_t n) { return n == 0 || fwrite(p, 1, n, f) == n ? 0 : -1; }

static int pad_to(FILE *f, uint64_t off)
{
    static const char zero[8];
    long pos = ftell(f);
    return pos < 0 ? -1 : write_all(f, zero, (size_t)(off - (uint64_t)pos));
}

int asn_ngram_builder_write(asn_ngram_builder *b, const char *path, asn_ngram_info *info, asn_err *e)
{
    if (end_doc(b, e))
        return -1;
    uint32_t V = (uint32_t)b->n_w;
    /* ids are ranks of the words' bytes, so lookups binary-search the vocab */
    uint32_t *order = asn_xmalloc(((size_t)V + 1) * sizeof *order);
    for (uint32_t i = 0; i < V; i++)
        order[i] = i;
    sort_b = b;
    qsort(order, V, sizeof *order, cmp_word);
    uint32_t *rank = asn_xmalloc(((size_t)V + 1) * sizeof *rank);
    for (uint32_t i = 0; i < V; i++)
        rank[order[i]] = i;
    for (size_t i = 0; i < b->n_text; i++)
        b->text[i] = b->text[i] == SEP_TMP ? V : rank[b->text[i]];
    free(rank);
    free(b->slot), b->slot = NULL, b->n_slot = 0;
    free(b->w_hash), b->w_hash = NULL;

    size_t n = b->n_text;
    uint32_t *sa = asn_xmalloc((n + 1) * sizeof *sa);
    if (asn_suffix_array(b->text, n, V + 1, sa, e)) {
        free(sa), free(order);
        return -1;
    }
    uint32_t *bucket = asn_xcalloc((size_t)V + 2, sizeof *bucket);
    for (size_t i = 0; i < n; i++)
        bucket[b->text[i] + 1]++;
    for (uint32_t c = 0; c <= V; c++)
        bucket[c + 1] += bucket[c];

    ix_header h = {{0}, IX_VERSION, (uint32_t)b->line_docs, n, V, b->n_docs, b->arena_n, b->n_words, 0};
    memcpy(h.magic, IX_MAGIC, 8);
    ix_layout l = layout(&h);
    size_t plen = strlen(path);
    char *tmp = asn_xmalloc(plen + 5);
    memcpy(tmp, path, plen);
    memcpy(tmp + plen, ".tmp", 5);
    FILE *f = fopen(tmp, "wb");
    int rc = 0;
    if (!f) {
        rc = asn_err_set(e, "%s: %s", tmp, strerror(errno));
    } else {
        rc |= write_all(f, &h, sizeof h);
        uint64_t off = 0;
        for (uint32_t i = 0; i < V && !rc; i++) {
            rc |= write_all(f, &off, 8);
            off += b->w_len[order[i]];
        }
        rc |= write_all(f, &off, 8);
        for (uint32_t i = 0; i < V && !rc; i++)
            rc |= write_all(f, b->arena + b->w_off[order[i]], b->w_len[order[i]]);
        rc |= pad_to(f, l.off_bucket);
        rc |= write_all(f, bucket, ((size_t)V + 2) * sizeof *bucket);
        rc |= pad_to(f, l.off_text);
        rc |= write_all(f, b->text, n * sizeof *b->text);
        rc |= pad_to(f, l.off_sa);
        rc |= write_all(f, sa, n * sizeof *sa);
        rc |= pad_to(f, l.size);
        if (fclose(f) != 0)
            rc = -1;
        if (rc) {
            asn_err_set(e, "%s: write error: %s", tmp, strerror(errno));
            unlink(tmp);
        } else if (rename(tmp, path)) {
            rc = asn_err_set(e, "%s: %s", path, strerror(errno));
            unlink(tmp);
        }
    }
    free(tmp), free(sa), free(bucket), free(order);
    if (!rc && info)
        *info = (asn_ngram_info){n, b->n_words, V, b->n_docs, l.size};
    return rc;
}

/* ------------------------------------------------------------------ query */

struct asn_ngram_index {
    void *map;
    size_t map_len;
    ix_header h;
    const uint64_t *voff;
    const char *str;
    const uint32_t *bucket, *text, *sa;
};

asn_ngram_index *asn_ngram_open(const char *path, asn_err *e)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        asn_err_set(e, "%s: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) || (size_t)st.st_size < sizeof(ix_header)) {
        asn_err_set(e, "%s: not an n-gram index (too short)", path);
        close(fd);
        return NULL;
    }
    void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (map == MAP_FAILED) {
        asn_err_set(e, "%s: mmap: %s", path, strerror(errno));
        return NULL;
    }
    asn_ngram_index *ix = asn_xcalloc(1, sizeof *ix);
    ix->map = map;
    ix->map_len = (size_t)st.st_size;
    memcpy(&ix->h, map, sizeof ix->h);
    const ix_header *h = &ix->h;
    const char *why = NULL;
    if (memcmp(h->magic, IX_MAGIC, 8))
        why = "not an n-gram index (bad magic)";
    else if (h->version != IX_VERSION)
        why = "unsupported index version (or byte order)";
    else if (h->n_tokens > MAX_TOKENS || h->n_vocab >= h->n_tokens + 1 || h->str_bytes > ix->map_len ||
             h->n_words > h->n_tokens || layout(h).size != ix->map_len)
        why = "damaged index (sizes do not match the file)";
    if (!why) {
        ix_layout l = layout(h);
        const char *base = map;
        ix->voff = (const uint64_t *)(base + l.off_vocab);
        ix->str = base + l.off_str;
        ix->bucket = (const uint32_t *)(base + l.off_bucket);
        ix->text = (const uint32_t *)(base + l.off_text);
        ix->sa = (const uint32_t *)(base + l.off_sa);
        uint64_t V = h->n_vocab, n = h->n_tokens;
        if (ix->voff[0] != 0 || ix->voff[V] != h->str_bytes || ix->bucket[0] != 0 || ix->bucket[V + 1] != n)
            why = "damaged index (vocabulary or buckets)";
        for (uint64_t i = 0; i < V && !why; i++)
            if (ix->voff[i] > ix->voff[i + 1] || ix->bucket[i] > ix->bucket[i + 1])
                why = "damaged index (vocabulary or buckets)";
        for (uint64_t i = 0; i < n && !why; i++)
            if (ix->text[i] > V || ix->sa[i] >= n)
                why = "damaged index (an id or a suffix out of range)";
    }
    if (why) {
        asn_err_set(e, "%s: %s", path, why);
        asn_ngram_close(ix);
        return NULL;
    }
    return ix;
}

void asn_ngram_close(asn_ngram_index *ix)
{
    if (!ix)
        return;
    munmap(ix->map, ix->map_len);
    free(ix);
}

asn_ngram_info asn_ngram_index_info(const asn_ngram_index *ix)
{
    return (asn_ngram_info){ix->h.n_tokens, ix->h.n_words, ix->h.n_vocab, ix->h.n_docs, ix->map_len};
}

uint32_t asn_ngram_word_id(const asn_ngram_index *ix, const char *w, size_t n)
{
    uint64_t lo = 0, hi = ix->h.n_vocab;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        const char *m = ix->str + ix->voff[mid];
        size_t ml = (size_t)(ix->voff[mid + 1] - ix->voff[mid]);
        int c = memcmp(m, w, ml < n ? ml : n);
        if (!c)
            c = (ml > n) - (ml < n);
        if (!c)
            return (uint32_t)mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return ASN_NGRAM_NONE;
}

size_t asn_ngram_text_ids(const asn_ngram_index *ix, const char *text, size_t len, uint32_t **ids)
{
    const char *p = text, *end = text + len, *w;
    size_t n, k = 0, cap = 0;
    *ids = NULL;
    while ((w = next_word(&p, end, &n, NULL))) {
        asn_grow((void **)ids, &cap, k + 1, sizeof **ids);
        (*ids)[k++] = asn_ngram_word_id(ix, w, n);
    }
    return k;
}

/* The symbol d positions into the suffix at SA row r, as a 64-bit key
 * (-1 past the end: the end sorts first). */
static int64_t key_at(const asn_ngram_index *ix, uint64_t r, uint64_t d)
{
    uint64_t p = (uint64_t)ix->sa[r] + d;
    return p < ix->h.n_tokens ? (int64_t)ix->text[p] : -1;
}

/* Narrows the rows [*lo, *hi) (suffixes sharing their first d symbols) to
 * those whose symbol d is x; returns whether any is left. */
static int narrow(const asn_ngram_index *ix, uint64_t *lo, uint64_t *hi, uint64_t d, uint32_t x)
{
    uint64_t a = *lo, b = *hi, ub = *hi;
    while (a < b) { /* first row with key >= x; rows seen with key > x bound the second search */
        uint64_t m = a + (b - a) / 2;
        int64_t k = key_at(ix, m, d);
        if (k < (int64_t)x) {
            a = m + 1;
        } else {
            if (k > (int64_t)x)
                ub = m;
            b = m;
        }
    }
    uint64_t first = a;
    b = ub;
    while (a < b) { /* first row with key > x */
        uint64_t m = a + (b - a) / 2;
        if (key_at(ix, m, d) <= (int64_t)x)
            a = m + 1;
        else
            b = m;
    }
    *lo = first;
    *hi = a;
    return first < a;
}

/* Walks ids[0..n) down the suffix array, stopping at the first word that
 * does not continue a match or after max; returns the length matched and
 * the rows of its occurrences. */
static size_t match(const asn_ngram_index *ix, const uint32_t *ids, size_t n, size_t max, uint64_t *lo, uint64_t *hi)
{
    if (n == 0 || max == 0 || ids[0] >= ix->h.n_vocab)
        return 0;
    *lo = ix->bucket[ids[0]];
    *hi = ix->bucket[ids[0] + 1];
    if (*lo == *hi)
        return 0;
    size_t k = 1;
    for (; k < n && k < max; k++) {
        uint64_t a = *lo, b = *hi;
        if (ids[k] >= ix->h.n_vocab || !narrow(ix, &a, &b, k, ids[k]))
            break;
        *lo = a, *hi = b;
    }
    return k;
}

uint64_t asn_ngram_count(const asn_ngram_index *ix, const uint32_t *ids, size_t n)
{
    uint64_t lo = 0, hi = 0;
    return match(ix, ids, n, n, &lo, &hi) == n && n > 0 ? hi - lo : 0;
}

int asn_ngram_longest_prefix(const asn_ngram_index *ix, const uint32_t *ids, size_t n, int max_n)
{
    uint64_t lo, hi;
    return max_n > 0 ? (int)match(ix, ids, n, (size_t)max_n, &lo, &hi) : 0;
}

void asn_ngram_label_ids(const asn_ngram_index *ix, const uint32_t *ids, size_t n, int max_n, asn_ngram_label *out)
{
    *out = (asn_ngram_label){(long)n, 0, 0, 0};
    int was_in_match = 0;
    for (size_t i = 0; i < n;) {
        /* the reference binary-searches the length with existence queries;
         * existence is monotone in the length, so walking the suffix array
         * finds the same longest match */
        int k = asn_ngram_longest_prefix(ix, ids + i, n - i, max_n);
        if (k > 0) {
            out->coverage += k;
            out->longest = k > out->longest ? k : out->longest;
            i += (size_t)k;
            was_in_match = 1;
        } else {
            if (was_in_match)
                out->breaks++;
            i++;
            was_in_match = 0;
        }
    }
}

void asn_ngram_label_text(const asn_ngram_index *ix, const char *text, size_t len, int max_n, asn_ngram_label *out)
{
    uint32_t *ids;
    size_t n = asn_ngram_text_ids(ix, text, len, &ids);
    asn_ngram_label_ids(ix, ids, n, max_n, out);
    free(ids);
}
