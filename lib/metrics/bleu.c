/* bleu.c — sacrebleu's 13a tokenizer and sentence BLEU, self-BLEU of a
 * group and distinct-n (see asn/bleu.h).
 *
 * A group's texts are tokenized once, their tokens interned to integers and
 * every n-gram (orders 1..4) entered once in a hash table that keeps, per
 * n-gram, its count in each text's hypothesis list and the two largest
 * per-text counts. sacrebleu takes, for each hypothesis n-gram, the largest
 * count over the references; with the hypothesis being one text and the
 * references all the others, that is the largest count unless the
 * hypothesis holds it, then the second largest: every text is scored against
 * all the others in one pass. */
#include "asn/bleu.h"
#include "asn/sbuf.h"

#include "asn/core.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ whitespace */

size_t asn_pyspace_len(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    if (n == 0)
        return 0;
    unsigned c = u[0];
    if ((c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20))
        return 1;
    if (c == 0xC2 && n >= 2)
        return u[1] == 0x85 || u[1] == 0xA0 ? 2 : 0;
    if (n < 3)
        return 0;
    unsigned c1 = u[1], c2 = u[2];
    if (c == 0xE1) /* U+1680 */
        return c1 == 0x9A && c2 == 0x80 ? 3 : 0;
    if (c == 0xE2) {
        if (c1 == 0x80) /* U+2000-U+200A, U+2028, U+2029, U+202F */
            return (c2 >= 0x80 && c2 <= 0x8A) || c2 == 0xA8 || c2 == 0xA9 || c2 == 0xAF ? 3 : 0;
        return c1 == 0x81 && c2 == 0x9F ? 3 : 0; /* U+205F */
    }
    if (c == 0xE3) /* U+3000 */
        return c1 == 0x80 && c2 == 0x80 ? 3 : 0;
    return 0;
}

/* ------------------------------------------------------------------ 13a */

/* Python's str.replace(from, to): left to right, non-overlapping. */
static void replace_all(asn_sbuf *out, const char *s, size_t n, const char *from, const char *to)
{
    size_t fl = strlen(from), tl = strlen(to), i = 0;
    out->len = 0;
    asn_sbuf_add(out, "", 0);
    while (i < n) {
        const char *hit = fl <= n - i ? memmem(s + i, n - i, from, fl) : NULL;
        if (!hit) {
            asn_sbuf_add(out, s + i, n - i);
            break;
        }
        asn_sbuf_add(out, s + i, (size_t)(hit - (s + i)));
        asn_sbuf_add(out, to, tl);
        i = (size_t)(hit - s) + fl;
    }
}

/* One step of the 13a pipeline: out = f(in), then swap. */
static void swap(asn_sbuf *a, asn_sbuf *b)
{
    asn_sbuf t = *a;
    *a = *b;
    *b = t;
}

static void replace_step(asn_sbuf *cur, asn_sbuf *tmp, const char *from, const char *to)
{
    replace_all(tmp, cur->buf, cur->len, from, to);
    swap(cur, tmp);
}

/* The first regex of sacrebleu's TokenizerRegexp,
 * ([\{-\~\[-\` -\&\(-\+\:-\@\/]) -> " \1 ": ASCII punctuation other than
 * ' , - . (and the space itself). */
static int punct_13a(unsigned char c)
{
    return (c >= 0x7B && c <= 0x7E) || (c >= 0x5B && c <= 0x60) || (c >= 0x20 && c <= 0x26) ||
           (c >= 0x28 && c <= 0x2B) || (c >= 0x3A && c <= 0x40) || c == '/';
}

static int digit(char c) { return c >= '0' && c <= '9'; }
static int dot_comma(char c) { return c == '.' || c == ','; }

/* The three two-character regexes, applied as re.sub does: leftmost,
 * non-overlapping, left to right. They work on bytes: every pattern has an
 * ASCII character where a match ends, and [^0-9] matches any code point,
 * so byte scanning finds the matches code-point scanning finds. */
enum { RE_NONDIGIT_DOT, RE_DOT_NONDIGIT, RE_DIGIT_DASH };

static void regex_step(asn_sbuf *cur, asn_sbuf *tmp, int which)
{
    const char *s = cur->buf;
    size_t n = cur->len, i = 0;
    tmp->len = 0;
    asn_sbuf_add(tmp, "", 0);
    while (i < n) {
        if (i + 1 < n) {
            char a = s[i], b = s[i + 1];
            if (which == RE_NONDIGIT_DOT && !digit(a) && dot_comma(b)) { /* \1 \2 + space */
                char r[4] = {a, ' ', b, ' '};
                asn_sbuf_add(tmp, r, 4), i += 2;
                continue;
            }
            if (which == RE_DOT_NONDIGIT && dot_comma(a) && !digit(b)) { /* space \1 space \2 */
                char r[4] = {' ', a, ' ', b};
                asn_sbuf_add(tmp, r, 4), i += 2;
                continue;
            }
            if (which == RE_DIGIT_DASH && digit(a) && b == '-') {
                char r[4] = {a, ' ', '-', ' '};
                asn_sbuf_add(tmp, r, 4), i += 2;
                continue;
            }
        }
        asn_sbuf_addc(tmp, s[i++]);
    }
    swap(cur, tmp);
}

/* Length of text without trailing whitespace (str.rstrip()). */
static size_t rstrip_len(const char *s, size_t n)
{
    while (n > 0) {
        size_t k = n - 1; /* start of the last code point */
        while (k > 0 && n - k < 4 && ((unsigned char)s[k] & 0xC0) == 0x80)
            k--;
        if (asn_pyspace_len(s + k, n - k) != n - k)
            break;
        n = k;
    }
    return n;
}

char *asn_tok13a(const char *text, size_t len, size_t *out_len)
{
    asn_sbuf cur = {0}, tmp = {0};
    asn_sbuf_add(&cur, text, rstrip_len(text, len));
    replace_step(&cur, &tmp, "<skipped>", "");
    replace_step(&cur, &tmp, "-\n", "");
    replace_step(&cur, &tmp, "\n", " ");
    if (memchr(cur.buf, '&', cur.len)) {
        replace_step(&cur, &tmp, "&quot;", "\"");
        replace_step(&cur, &tmp, "&amp;", "&");
        replace_step(&cur, &tmp, "&lt;", "<");
        replace_step(&cur, &tmp, "&gt;", ">");
    }
    /* f' {line} ', then the punctuation regex */
    tmp.len = 0;
    asn_sbuf_addc(&tmp, ' ');
    for (size_t i = 0; i < cur.len; i++) {
        if (punct_13a((unsigned char)cur.buf[i])) {
            char r[3] = {' ', cur.buf[i], ' '};
            asn_sbuf_add(&tmp, r, 3);
        } else {
            asn_sbuf_addc(&tmp, cur.buf[i]);
        }
    }
    asn_sbuf_addc(&tmp, ' ');
    swap(&cur, &tmp);
    regex_step(&cur, &tmp, RE_NONDIGIT_DOT);
    regex_step(&cur, &tmp, RE_DOT_NONDIGIT);
    regex_step(&cur, &tmp, RE_DIGIT_DASH);
    /* ' '.join(line.split()) */
    tmp.len = 0;
    asn_sbuf_add(&tmp, "", 0);
    size_t i = 0;
    while (i < cur.len) {
        size_t w = asn_pyspace_len(cur.buf + i, cur.len - i);
        if (w) {
            i += w;
            continue;
        }
        size_t j = i;
        while (j < cur.len && !asn_pyspace_len(cur.buf + j, cur.len - j))
            j++;
        if (tmp.len)
            asn_sbuf_addc(&tmp, ' ');
        asn_sbuf_add(&tmp, cur.buf + i, j - i);
        i = j;
    }
    free(cur.buf);
    if (out_len)
        *out_len = tmp.len;
    return tmp.buf;
}

/* ------------------------------------------------------------------ BLEU */

double asn_bleu_score(const asn_bleu_stats *st)
{
    /* operations in sacrebleu's order, so results agree to the last bit or
     * close to it */
    double bp = 1.0;
    if (st->sys_len < st->ref_len)
        bp = st->sys_len > 0 ? exp(1.0 - (double)st->ref_len / (double)st->sys_len) : 0.0;
    int any = 0;
    for (int k = 0; k < ASN_BLEU_MAX_ORDER; k++)
        any |= st->correct[k] != 0;
    if (!any)
        return 0.0;
    double prec[ASN_BLEU_MAX_ORDER] = {0}, smooth = 1.0;
    int eff = ASN_BLEU_MAX_ORDER;
    for (int k = 0; k < ASN_BLEU_MAX_ORDER; k++) {
        if (st->total[k] == 0)
            break;
        eff = k + 1;
        if (st->correct[k] == 0) {
            smooth *= 2;
            prec[k] = 100.0 / (smooth * (double)st->total[k]);
        } else {
            prec[k] = 100.0 * (double)st->correct[k] / (double)st->total[k];
        }
    }
    double sum = 0;
    for (int k = 0; k < eff; k++) /* sacrebleu's my_log floors log(0); prec > 0 here */
        sum += prec[k] == 0.0 ? -9999999999.0 : log(prec[k]);
    return bp * exp(sum / eff);
}

/* ----------------------------------------------------------------- groups */

typedef struct ngram {
    uint64_t hash;
    uint32_t text, pos; /* first occurrence: tok[text][pos .. pos + order) */
    int32_t order;
    int32_t best, best_text, second; /* the two largest per-text counts */
    int32_t last_text, cur;          /* counting within the current text */
} ngram;

struct asn_bleu_group {
    int n;
    int32_t **tok; /* per text: interned token ids */
    long *len;
    ngram *ng;
    size_t n_ng, cap_ng;
    uint32_t *slot; /* hash table of n-grams: 1 + index, 0 = empty */
    size_t n_slot;
    uint32_t **own; /* per text: its distinct n-grams ... */
    int32_t **own_cnt; /* ... and their counts in it */
    size_t *n_own;
};

static uint64_t mix(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return mix(h);
}

/* Token strings to dense ids, open addressing. */
typedef struct interner {
    const char **str;
    size_t *len;
    uint64_t *hash;
    uint32_t *slot;
    size_t n, cap_str, n_slot;
} interner;

static int32_t intern(interner *t, const char *s, size_t n)
{
    if (2 * (t->n + 1) > t->n_slot) {
        size_t ns = t->n_slot ? 2 * t->n_slot : 256;
        uint32_t *sl = asn_xcalloc(ns, sizeof *sl);
        for (size_t i = 0; i < t->n; i++) {
            size_t k = t->hash[i] & (ns - 1);
            while (sl[k])
                k = (k + 1) & (ns - 1);
            sl[k] = (uint32_t)i + 1;
        }
        free(t->slot);
        t->slot = sl;
        t->n_slot = ns;
    }
    uint64_t h = hash_bytes(s, n);
    size_t k = h & (t->n_slot - 1);
    for (; t->slot[k]; k = (k + 1) & (t->n_slot - 1)) {
        size_t i = t->slot[k] - 1;
        if (t->hash[i] == h && t->len[i] == n && !memcmp(t->str[i], s, n))
            return (int32_t)i;
    }
    if (t->n == t->cap_str) {
        size_t c = t->cap_str;
        asn_grow((void **)&t->str, &c, t->n + 1, sizeof *t->str);
        c = t->cap_str;
        asn_grow((void **)&t->len, &c, t->n + 1, sizeof *t->len);
        asn_grow((void **)&t->hash, &t->cap_str, t->n + 1, sizeof *t->hash);
    }
    t->str[t->n] = s;
    t->len[t->n] = n;
    t->hash[t->n] = h;
    t->slot[k] = (uint32_t)t->n + 1;
    return (int32_t)t->n++;
}

static uint64_t ngram_hash(const int32_t *ids, int order)
{
    uint64_t h = (uint64_t)order;
    for (int k = 0; k < order; k++)
        h = mix(h ^ ((uint64_t)(uint32_t)ids[k] + 0x9e3779b97f4a7c15ULL));
    return h;
}

static void ngram_rehash(asn_bleu_group *g)
{
    size_t ns = g->n_slot ? 2 * g->n_slot : 1024;
    uint32_t *sl = asn_xcalloc(ns, sizeof *sl);
    for (size_t i = 0; i < g->n_ng; i++) {
        size_t k = g->ng[i].hash & (ns - 1);
        while (sl[k])
            k = (k + 1) & (ns - 1);
        sl[k] = (uint32_t)i + 1;
    }
    free(g->slot);
    g->slot = sl;
    g->n_slot = ns;
}

/* The index of the n-gram tok[text][pos .. pos + order), entered if new. */
static size_t ngram_find(asn_bleu_group *g, int text, long pos, int order)
{
    if (2 * (g->n_ng + 1) > g->n_slot)
        ngram_rehash(g);
    const int32_t *ids = g->tok[text] + pos;
    uint64_t h = ngram_hash(ids, order);
    size_t k = h & (g->n_slot - 1);
    for (; g->slot[k]; k = (k + 1) & (g->n_slot - 1)) {
        const ngram *e = &g->ng[g->slot[k] - 1];
        if (e->hash == h && e->order == order &&
            !memcmp(g->tok[e->text] + e->pos, ids, (size_t)order * sizeof *ids))
            return g->slot[k] - 1;
    }
    asn_grow((void **)&g->ng, &g->cap_ng, g->n_ng + 1, sizeof *g->ng);
    ngram *e = &g->ng[g->n_ng];
    *e = (ngram){h, (uint32_t)text, (uint32_t)pos, order, 0, -1, 0, -1, 0};
    g->slot[k] = (uint32_t)g->n_ng + 1;
    return g->n_ng++;
}

asn_bleu_group *asn_bleu_group_new(const char *const *texts, const size_t *lens, int n)
{
    asn_bleu_group *g = asn_xcalloc(1, sizeof *g);
    g->n = n;
    g->tok = asn_xcalloc((size_t)n + 1, sizeof *g->tok);
    g->len = asn_xcalloc((size_t)n + 1, sizeof *g->len);
    g->own = asn_xcalloc((size_t)n + 1, sizeof *g->own);
    g->own_cnt = asn_xcalloc((size_t)n + 1, sizeof *g->own_cnt);
    g->n_own = asn_xcalloc((size_t)n + 1, sizeof *g->n_own);
    char **tokenized = asn_xcalloc((size_t)n + 1, sizeof *tokenized);
    interner in = {0};
    for (int i = 0; i < n; i++) {
        size_t tl;
        tokenized[i] = asn_tok13a(texts[i], lens ? lens[i] : strlen(texts[i]), &tl);
        /* tokens are separated by exactly one space now */
        long cnt = tl ? 1 : 0;
        for (size_t j = 0; j < tl; j++)
            cnt += tokenized[i][j] == ' ';
        g->tok[i] = asn_xmalloc(((size_t)cnt + 1) * sizeof *g->tok[i]);
        g->len[i] = cnt;
        long w = 0;
        for (size_t j = 0; j < tl;) {
            const char *sp = memchr(tokenized[i] + j, ' ', tl - j);
            size_t e = sp ? (size_t)(sp - tokenized[i]) : tl;
            g->tok[i][w++] = intern(&in, tokenized[i] + j, e - j);
            j = e + 1;
        }
    }
    /* count each text's n-grams, then fold its counts into the top two */
    for (int i = 0; i < n; i++) {
        size_t cap = 0;
        for (long p = 0; p < g->len[i]; p++) {
            for (int o = 1; o <= ASN_BLEU_MAX_ORDER && p + o <= g->len[i]; o++) {
                size_t x = ngram_find(g, i, p, o);
                ngram *e = &g->ng[x];
                if (e->last_text != i) {
                    e->last_text = i;
                    e->cur = 0;
                    asn_grow((void **)&g->own[i], &cap, g->n_own[i] + 1, sizeof *g->own[i]);
                    g->own[i][g->n_own[i]++] = (uint32_t)x;
                }
                e->cur++;
            }
        }
        g->own_cnt[i] = asn_xmalloc((g->n_own[i] + 1) * sizeof *g->own_cnt[i]);
        for (size_t k = 0; k < g->n_own[i]; k++) {
            ngram *e = &g->ng[g->own[i][k]];
            int32_t c = e->cur;
            g->own_cnt[i][k] = c;
            if (c > e->best) {
                e->second = e->best;
                e->best = c;
                e->best_text = i;
            } else if (c > e->second) {
                e->second = c;
            }
        }
    }
    for (int i = 0; i < n; i++)
        free(tokenized[i]);
    free(tokenized);
    free(in.str), free(in.len), free(in.hash), free(in.slot);
    return g;
}

void asn_bleu_group_free(asn_bleu_group *g)
{
    if (!g)
        return;
    for (int i = 0; i < g->n; i++)
        free(g->tok[i]), free(g->own[i]), free(g->own_cnt[i]);
    free(g->tok), free(g->len), free(g->own), free(g->own_cnt), free(g->n_own);
    free(g->ng), free(g->slot);
    free(g);
}

void asn_bleu_group_stats(const asn_bleu_group *g, int i, asn_bleu_stats *st)
{
    memset(st, 0, sizeof *st);
    st->sys_len = g->len[i];
    /* closest reference length, the shorter on a tie (_get_closest_ref_len) */
    long best_diff = -1;
    for (int j = 0; j < g->n; j++) {
        if (j == i)
            continue;
        long d = labs(g->len[i] - g->len[j]);
        if (best_diff < 0 || d < best_diff || (d == best_diff && g->len[j] < st->ref_len)) {
            best_diff = d;
            st->ref_len = g->len[j];
        }
    }
    for (size_t k = 0; k < g->n_own[i]; k++) {
        const ngram *e = &g->ng[g->own[i][k]];
        long c = g->own_cnt[i][k];
        long ref = e->best_text == i ? e->second : e->best;
        st->total[e->order - 1] += c;
        st->correct[e->order - 1] += c < ref ? c : ref;
    }
}

double asn_bleu_group_sentence(const asn_bleu_group *g, int i)
{
    asn_bleu_stats st;
    asn_bleu_group_stats(g, i, &st);
    return asn_bleu_score(&st);
}

double asn_bleu_group_self_bleu(const asn_bleu_group *g)
{
    if (g->n < 2)
        return 0.0;
    double sum = 0;
    for (int i = 0; i < g->n; i++)
        sum += asn_bleu_group_sentence(g, i);
    return sum / g->n;
}

void asn_bleu_group_ngrams(const asn_bleu_group *g, int order, long *distinct, long *total)
{
    *distinct = *total = 0;
    for (size_t k = 0; k < g->n_ng; k++)
        *distinct += g->ng[k].order == order;
    for (int i = 0; i < g->n; i++)
        *total += g->len[i] >= order ? g->len[i] - order + 1 : 0;
}

double asn_sentence_bleu(const char *hyp, const char *const *refs, int n_refs, asn_bleu_stats *st)
{
    const char **t = asn_xmalloc(((size_t)n_refs + 1) * sizeof *t);
    t[0] = hyp;
    for (int i = 0; i < n_refs; i++)
        t[i + 1] = refs[i];
    asn_bleu_group *g = asn_bleu_group_new(t, NULL, n_refs + 1);
    asn_bleu_stats s;
    asn_bleu_group_stats(g, 0, &s);
    asn_bleu_group_free(g);
    free(t);
    if (st)
        *st = s;
    return asn_bleu_score(&s);
}
