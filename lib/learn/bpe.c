/* bpe.c — byte-level BPE training (asn/bpe.h): pre-tokenizer split and word
 * counts, the merge loop, and the GGUF tokenizer metadata.
 *
 * The merge loop is the usual incremental one (as in Hugging Face's
 * tokenizers and SentencePiece): pair counts are kept up to date, each pair
 * knows the words it occurs in, and a max-heap with lazy deletion finds the
 * best pair. A merge only rewrites the words that hold the pair, and only
 * pairs that contain the new token can gain counts, so only those are
 * pushed; entries whose count went down are corrected when they surface. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "asn/bpe.h"

#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The GPT-2 pre-tokenizer regex, with "\s+" last so leftover whitespace is a
 * piece of its own, as llama.cpp's gpt2 matcher has it. */
#define RE_GPT2 "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"
#define RE_DIGIT "\\p{N}"

/* tokenizer.ggml.pre names -> regex passes (each re-splits the pieces of
 * the one before; text between matches stays a piece). The same names and
 * passes as llama.cpp's and lib/model/pretok.c's. */
enum { MAX_PASSES = 2 };
static const struct pre_def {
    const char *name;
    const char *re[MAX_PASSES + 1]; /* NULL-terminated */
} PRES[] = {
    {"gpt-2", {RE_GPT2, NULL}},
    {"smollm", {RE_DIGIT, RE_GPT2, NULL}},
};

/* ---------------------------------------------------------------- hashing */

/* FNV-1a, 64 bits. */
static uint64_t hash_bytes(const void *p, size_t n)
{
    const unsigned char *s = p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ s[i]) * 1099511628211ull;
    return h;
}

static uint64_t hash_u64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

/* Byte strings in byte order, a prefix first. */
static int cmp_bytes(const char *a, size_t na, const char *b, size_t nb)
{
    int c = memcmp(a, b, na < nb ? na : nb);
    return c ? c : (na > nb) - (na < nb);
}

/* --------------------------------------------------------------- UTF-8 */

/* Offset of the first byte that is not part of valid UTF-8 (RFC 3629: no
 * overlong forms, surrogates or code points past U+10FFFF), or n. */
static size_t utf8_invalid(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t len;
        unsigned lo = 0x80, hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF)
            len = 2;
        else if (c >= 0xE0 && c <= 0xEF) {
            len = 3;
            if (c == 0xE0)
                lo = 0xA0;
            if (c == 0xED)
                hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            len = 4;
            if (c == 0xF0)
                lo = 0x90;
            if (c == 0xF4)
                hi = 0x8F;
        } else
            return i;
        if (i + len > n || s[i + 1] < lo || s[i + 1] > hi)
            return i;
        for (size_t k = 2; k < len; k++)
            if ((s[i + k] & 0xC0) != 0x80)
                return i;
        i += len;
    }
    return n;
}

/* ------------------------------------------------------------- counting */

typedef struct wslot {
    uint64_t hash; /* 0 = empty (a real hash of 0 is stored as 1) */
    uint64_t count;
    size_t off; /* bytes in the arena */
    uint32_t len;
} wslot;

struct asn_bpe_words {
    char *pre;
    pcre2_code *re[MAX_PASSES];
    int n_re;
    pcre2_match_data *md;
    wslot *slot;
    size_t mask, used;
    char *arena;
    size_t arena_n, arena_cap;
    uint64_t bytes, pieces;
};

asn_bpe_words *asn_bpe_words_new(const char *pre, asn_err *e)
{
    const char *name = pre ? pre : ASN_BPE_PRE;
    const struct pre_def *d = NULL;
    for (size_t i = 0; i < sizeof PRES / sizeof *PRES; i++)
        if (!strcmp(PRES[i].name, name))
            d = &PRES[i];
    if (!d)
        return asn_err_set(e, "pre-tokenizer \"%s\" cannot be trained (known: gpt-2, smollm)", name), NULL;
    asn_bpe_words *w = asn_xcalloc(1, sizeof *w);
    w->pre = asn_xstrdup(name);
    for (; d->re[w->n_re]; w->n_re++) {
        int err;
        PCRE2_SIZE at;
        w->re[w->n_re] = pcre2_compile((PCRE2_SPTR)d->re[w->n_re], PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP,
                                       &err, &at, NULL);
        if (!w->re[w->n_re]) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(err, msg, sizeof msg);
            asn_err_set(e, "pre-tokenizer regex: %s at offset %zu", (char *)msg, (size_t)at);
            asn_bpe_words_free(w);
            return NULL;
        }
        pcre2_jit_compile(w->re[w->n_re], PCRE2_JIT_COMPLETE); /* the interpreter if JIT is missing */
    }
    w->md = pcre2_match_data_create(1, NULL);
    w->mask = 4095;
    w->slot = asn_xcalloc(w->mask + 1, sizeof *w->slot);
    return w;
}

void asn_bpe_words_free(asn_bpe_words *w)
{
    if (!w)
        return;
    for (int i = 0; i < w->n_re; i++)
        pcre2_code_free(w->re[i]);
    pcre2_match_data_free(w->md);
    free(w->slot);
    free(w->arena);
    free(w->pre);
    free(w);
}

const char *asn_bpe_words_pre(const asn_bpe_words *w) { return w->pre; }
uint64_t asn_bpe_words_bytes(const asn_bpe_words *w) { return w->bytes; }
uint64_t asn_bpe_words_pieces(const asn_bpe_words *w) { return w->pieces; }
size_t asn_bpe_words_distinct(const asn_bpe_words *w) { return w->used; }

static void words_grow(asn_bpe_words *w)
{
    size_t cap = (w->mask + 1) * 2;
    wslot *s = asn_xcalloc(cap, sizeof *s);
    for (size_t i = 0; i <= w->mask; i++) {
        if (!w->slot[i].hash)
            continue;
        size_t j = w->slot[i].hash & (cap - 1);
        while (s[j].hash)
            j = (j + 1) & (cap - 1);
        s[j] = w->slot[i];
    }
    free(w->slot);
    w->slot = s;
    w->mask = cap - 1;
}

static void count_piece(asn_bpe_words *w, const char *p, size_t n)
{
    uint64_t h = hash_bytes(p, n);
    h += !h;
    size_t j = h & w->mask;
    for (;; j = (j + 1) & w->mask) {
        wslot *s = &w->slot[j];
        if (!s->hash)
            break;
        if (s->hash == h && s->len == n && !memcmp(w->arena + s->off, p, n)) {
            s->count++;
            w->pieces++;
            return;
        }
    }
    asn_grow((void **)&w->arena, &w->arena_cap, w->arena_n + n, 1);
    memcpy(w->arena + w->arena_n, p, n);
    w->slot[j] = (wslot){h, 1, w->arena_n, (uint32_t)n};
    w->arena_n += n;
    w->pieces++;
    if (++w->used * 2 > w->mask)
        words_grow(w);
}

/* Splits s[0..n) with regex pass `pass` and hands the pieces to the next
 * pass (the last one counts them). */
static int split(asn_bpe_words *w, int pass, const char *s, size_t n, asn_err *e)
{
    if (pass >= w->n_re || pass >= MAX_PASSES) {
        count_piece(w, s, n);
        return 0;
    }
    size_t pos = 0, gap = 0;
    while (pos < n) {
        int rc = pcre2_match(w->re[pass], (PCRE2_SPTR)s, n, pos, PCRE2_NO_UTF_CHECK, w->md, NULL);
        if (rc == PCRE2_ERROR_NOMATCH)
            break;
        if (rc < 0) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(rc, msg, sizeof msg);
            return asn_err_set(e, "pre-tokenizer: %s", (char *)msg);
        }
        const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(w->md);
        size_t a = ov[0], b = ov[1];
        if (b == a) { /* an empty match (none of our patterns has one): step over a character */
            pos = a + 1;
            while (pos < n && ((unsigned char)s[pos] & 0xC0) == 0x80)
                pos++;
            continue;
        }
        if (a > gap && split(w, pass + 1, s + gap, a - gap, e))
            return -1;
        if (split(w, pass + 1, s + a, b - a, e))
            return -1;
        pos = gap = b;
    }
    if (gap < n && split(w, pass + 1, s + gap, n - gap, e))
        return -1;
    return 0;
}

int asn_bpe_words_add(asn_bpe_words *w, const char *text, size_t len, asn_err *e)
{
    size_t bad = utf8_invalid((const unsigned char *)text, len);
    if (bad < len) {
        size_t line = 1, col = 1;
        for (size_t i = 0; i < bad; i++, col++)
            if (text[i] == '\n')
                line++, col = 0;
        return asn_err_set(e, "line %zu, column %zu: invalid UTF-8 (byte 0x%02X)", line, col,
                           (unsigned char)text[bad]);
    }
    if (split(w, 0, text, len, e))
        return -1;
    w->bytes += len;
    return 0;
}

/* ---------------------------------------------------------------- tokens */

/* Token texts: bytes in an arena, and a text -> id map (learned tokens
 * must be new texts). */
typedef struct toks {
    char *arena;
    size_t n_arena, cap_arena;
    size_t *off;
    uint32_t *len;
    int32_t n, cap;
    int32_t *map; /* open addressing over ids, -1 = empty */
    size_t mask;
} toks;

static const char *tok_text(const toks *t, int32_t id, size_t *len)
{
    *len = t->len[id];
    return t->arena + t->off[id];
}

static int32_t toks_find(const toks *t, const char *s, size_t n)
{
    for (size_t j = hash_bytes(s, n) & t->mask;; j = (j + 1) & t->mask) {
        int32_t id = t->map[j];
        if (id < 0)
            return -1;
        if (t->len[id] == n && !memcmp(t->arena + t->off[id], s, n))
            return id;
    }
}

static void toks_rehash(toks *t, size_t cap)
{
    free(t->map);
    t->mask = cap - 1;
    t->map = asn_xmalloc(cap * sizeof *t->map);
    memset(t->map, 0xFF, cap * sizeof *t->map);
    for (int32_t id = 0; id < t->n; id++) {
        size_t j = hash_bytes(t->arena + t->off[id], t->len[id]) & t->mask;
        while (t->map[j] >= 0)
            j = (j + 1) & t->mask;
        t->map[j] = id;
    }
}

static void toks_index(toks *t, int32_t id)
{
    if ((size_t)t->n * 2 > t->mask) {
        toks_rehash(t, (t->mask + 1) * 2);
        return;
    }
    size_t j = hash_bytes(t->arena + t->off[id], t->len[id]) & t->mask;
    while (t->map[j] >= 0)
        j = (j + 1) & t->mask;
    t->map[j] = id;
}

/* Appends a token of n bytes; from s, or (s NULL) the texts of tokens l and r. */
static int32_t toks_add(toks *t, const char *s, size_t n, int32_t l, int32_t r)
{
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 1024;
        t->off = asn_xrealloc(t->off, (size_t)t->cap * sizeof *t->off);
        t->len = asn_xrealloc(t->len, (size_t)t->cap * sizeof *t->len);
    }
    asn_grow((void **)&t->arena, &t->cap_arena, t->n_arena + n, 1);
    char *dst = t->arena + t->n_arena;
    if (s) {
        memcpy(dst, s, n);
    } else {
        memcpy(dst, t->arena + t->off[l], t->len[l]);
        memcpy(dst + t->len[l], t->arena + t->off[r], t->len[r]);
    }
    int32_t id = t->n++;
    t->off[id] = t->n_arena;
    t->len[id] = (uint32_t)n;
    t->n_arena += n;
    toks_index(t, id);
    return id;
}

static void toks_free(toks *t)
{
    free(t->arena);
    free(t->off);
    free(t->len);
    free(t->map);
}

/* ----------------------------------------------------------------- pairs */

typedef struct pair {
    int32_t l, r;
    int64_t count;
    uint32_t *where; /* words holding (or having held) the pair; may repeat */
    uint32_t n_where, cap_where;
    int32_t touched; /* the merge step that last gained it counts, + 1 */
    int banned;      /* l + r is already a token: never merged */
} pair;

typedef struct pairs {
    pair *v;
    size_t n, cap;
    uint32_t *map; /* index + 1; 0 = empty */
    size_t mask;
} pairs;

static uint64_t pair_key(int32_t l, int32_t r) { return (uint64_t)(uint32_t)l << 32 | (uint32_t)r; }

static void pairs_rehash(pairs *ps, size_t cap)
{
    free(ps->map);
    ps->map = asn_xcalloc(cap, sizeof *ps->map);
    ps->mask = cap - 1;
    for (size_t i = 0; i < ps->n; i++) {
        size_t j = hash_u64(pair_key(ps->v[i].l, ps->v[i].r)) & ps->mask;
        while (ps->map[j])
            j = (j + 1) & ps->mask;
        ps->map[j] = (uint32_t)i + 1;
    }
}

/* The index of pair (l, r), created (count 0) if absent. */
static size_t pairs_get(pairs *ps, int32_t l, int32_t r)
{
    uint64_t k = pair_key(l, r);
    size_t j = hash_u64(k) & ps->mask;
    for (; ps->map[j]; j = (j + 1) & ps->mask) {
        const pair *p = &ps->v[ps->map[j] - 1];
        if (p->l == l && p->r == r)
            return ps->map[j] - 1;
    }
    if (ps->n == ps->cap) {
        ps->cap = ps->cap ? 2 * ps->cap : 4096;
        ps->v = asn_xrealloc(ps->v, ps->cap * sizeof *ps->v);
    }
    size_t i = ps->n++;
    ps->v[i] = (pair){.l = l, .r = r};
    ps->map[j] = (uint32_t)i + 1;
    if (ps->n * 2 > ps->mask)
        pairs_rehash(ps, (ps->mask + 1) * 2);
    return i;
}

static void pair_add_word(pair *p, uint32_t word)
{
    if (p->n_where && p->where[p->n_where - 1] == word)
        return;
    if (p->n_where == p->cap_where) {
        p->cap_where = p->cap_where ? 2 * p->cap_where : 4;
        p->where = asn_xrealloc(p->where, (size_t)p->cap_where * sizeof *p->where);
    }
    p->where[p->n_where++] = word;
}

/* ------------------------------------------------------------------ heap */

typedef struct hent {
    int64_t count; /* the pair's count when pushed */
    int32_t l, r;
} hent;

typedef struct heap {
    hent *v;
    size_t n, cap;
    const toks *t;
} heap;

/* x comes out before y: larger count, then smaller left text, then smaller
 * right text. */
static int before(const heap *h, const hent *x, const hent *y)
{
    if (x->count != y->count)
        return x->count > y->count;
    size_t nx, ny;
    const char *sx = tok_text(h->t, x->l, &nx), *sy = tok_text(h->t, y->l, &ny);
    int c = cmp_bytes(sx, nx, sy, ny);
    if (c)
        return c < 0;
    sx = tok_text(h->t, x->r, &nx);
    sy = tok_text(h->t, y->r, &ny);
    return cmp_bytes(sx, nx, sy, ny) < 0;
}

static void heap_push(heap *h, hent x)
{
    if (h->n == h->cap) {
        h->cap = h->cap ? 2 * h->cap : 4096;
        h->v = asn_xrealloc(h->v, h->cap * sizeof *h->v);
    }
    size_t i = h->n++;
    while (i > 0) {
        size_t up = (i - 1) / 2;
        if (!before(h, &x, &h->v[up]))
            break;
        h->v[i] = h->v[up];
        i = up;
    }
    h->v[i] = x;
}

static hent heap_pop(heap *h)
{
    hent top = h->v[0], x = h->v[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && before(h, &h->v[c + 1], &h->v[c]))
            c++;
        if (!before(h, &h->v[c], &x))
            break;
        h->v[i] = h->v[c];
        i = c;
    }
    if (h->n)
        h->v[i] = x;
    return top;
}

/* -------------------------------------------------------------- training */

struct asn_bpe {
    char *pre;
    toks t;
    int32_t n_learned; /* tokens 256 .. 256 + n_learned - 1 */
    int32_t *merge_l, *merge_r;
    int32_t bos, eos, pad;
    uint64_t text_tokens;
};

void asn_bpe_opts_init(asn_bpe_opts *o)
{
    memset(o, 0, sizeof *o);
    o->vocab_size = ASN_BPE_VOCAB_SIZE;
    o->min_count = ASN_BPE_MIN_COUNT;
    o->bos = ASN_BPE_BOS;
    o->eos = ASN_BPE_EOS;
}

/* The words, sorted by their bytes so that ids do not depend on the order
 * the hash table holds them in. */
typedef struct wordset {
    size_t n;
    uint64_t *count;
    size_t *off;    /* into sym */
    uint32_t *len;  /* current symbol count */
    int32_t *sym;
    int32_t *seen;  /* last merge step that rewrote the word, + 1 */
} wordset;

typedef struct wref {
    const char *p;
    uint32_t len;
    uint64_t count;
} wref;

static int cmp_wref(const void *a, const void *b)
{
    const wref *x = a, *y = b;
    return cmp_bytes(x->p, x->len, y->p, y->len);
}

static void wordset_build(wordset *ws, const asn_bpe_words *w)
{
    wref *order = asn_xmalloc((w->used ? w->used : 1) * sizeof *order);
    size_t n = 0, nsym = 0;
    for (size_t i = 0; i <= w->mask; i++)
        if (w->slot[i].hash) {
            order[n++] = (wref){w->arena + w->slot[i].off, w->slot[i].len, w->slot[i].count};
            nsym += w->slot[i].len;
        }
    qsort(order, n, sizeof *order, cmp_wref);
    ws->n = n;
    ws->count = asn_xmalloc((n ? n : 1) * sizeof *ws->count);
    ws->off = asn_xmalloc((n ? n : 1) * sizeof *ws->off);
    ws->len = asn_xmalloc((n ? n : 1) * sizeof *ws->len);
    ws->seen = asn_xcalloc(n ? n : 1, sizeof *ws->seen);
    ws->sym = asn_xmalloc((nsym ? nsym : 1) * sizeof *ws->sym);
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        ws->count[i] = order[i].count;
        ws->off[i] = at;
        ws->len[i] = order[i].len;
        const unsigned char *s = (const unsigned char *)order[i].p;
        for (uint32_t k = 0; k < order[i].len; k++)
            ws->sym[at++] = s[k];
    }
    free(order);
}

static void wordset_free(wordset *ws)
{
    free(ws->count);
    free(ws->off);
    free(ws->len);
    free(ws->seen);
    free(ws->sym);
}

static int check_special(const char *const *sp, size_t n, asn_err *e)
{
    for (size_t i = 0; i < n; i++) {
        if (!*sp[i])
            return asn_err_set(e, "special token %zu: empty", i + 1);
        if (strchr(sp[i], ' '))
            return asn_err_set(e, "special token \"%s\": has a space", sp[i]);
        if (utf8_invalid((const unsigned char *)sp[i], strlen(sp[i])) < strlen(sp[i]))
            return asn_err_set(e, "special token %zu: invalid UTF-8", i + 1);
        for (size_t k = 0; k < i; k++)
            if (!strcmp(sp[i], sp[k]))
                return asn_err_set(e, "special token \"%s\" given twice", sp[i]);
    }
    return 0;
}

/* What one merge step collects: the pairs that gained counts (each once),
 * and a mark per symbol of the word being rewritten. */
typedef struct step_scratch {
    size_t *gained;
    size_t n_gained, cap_gained;
    unsigned char *mark;
    size_t cap_mark;
} step_scratch;

/* Rewrites word w for merge (l, r) -> id of merge step `step` and updates
 * the pair counts: every old pair that touches a merged position loses the
 * word's count, every new pair that holds the new token gains it. */
static void merge_word(wordset *ws, pairs *ps, uint32_t w, int32_t l, int32_t r, int32_t id, int32_t step,
                       step_scratch *sc)
{
    int32_t *s = ws->sym + ws->off[w];
    uint32_t n = ws->len[w];
    int64_t c = (int64_t)ws->count[w];
    asn_grow((void **)&sc->mark, &sc->cap_mark, n, 1);
    unsigned char *m = sc->mark;
    memset(m, 0, n);
    int any = 0;
    for (uint32_t i = 0; i + 1 < n;) {
        if (s[i] == l && s[i + 1] == r) {
            m[i] = m[i + 1] = 1;
            any = 1;
            i += 2;
        } else {
            i++;
        }
    }
    if (!any)
        return;
    for (uint32_t i = 0; i + 1 < n; i++)
        if (m[i] || m[i + 1]) {
            size_t pi = pairs_get(ps, s[i], s[i + 1]); /* may move ps->v */
            ps->v[pi].count -= c;
        }
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; k++) {
        if (m[i]) { /* m marks merged spans two by two, left to right */
            s[k] = id;
            i += 2;
        } else {
            s[k] = s[i++];
        }
    }
    ws->len[w] = k;
    for (uint32_t i = 0; i + 1 < k; i++) {
        if (s[i] != id && s[i + 1] != id)
            continue;
        size_t pi = pairs_get(ps, s[i], s[i + 1]);
        pair *p = &ps->v[pi];
        p->count += c;
        pair_add_word(p, w);
        if (p->touched != step + 1) {
            p->touched = step + 1;
            asn_grow((void **)&sc->gained, &sc->cap_gained, sc->n_gained + 1, sizeof *sc->gained);
            sc->gained[sc->n_gained++] = pi;
        }
    }
}

asn_bpe *asn_bpe_train(const asn_bpe_words *w, const asn_bpe_opts *o, asn_err *e)
{
    const char *sp[3];
    size_t n_fixed = 0;
    if (o->bos)
        sp[n_fixed++] = o->bos;
    if (o->eos)
        sp[n_fixed++] = o->eos;
    if (o->pad)
        sp[n_fixed++] = o->pad;
    size_t n_sp = n_fixed + o->n_special;
    const char **all = asn_xmalloc((n_sp ? n_sp : 1) * sizeof *all);
    memcpy(all, sp, n_fixed * sizeof *all);
    if (o->n_special)
        memcpy(all + n_fixed, o->special, o->n_special * sizeof *all);
    if (check_special(all, n_sp, e)) {
        free(all);
        return NULL;
    }
    if (o->vocab_size < 256 + (int64_t)n_sp) {
        free(all);
        return asn_err_set(e, "a vocabulary of %d tokens has no room for the 256 bytes and %zu special tokens",
                           (int)o->vocab_size, n_sp), NULL;
    }
    if (o->min_count < 1) {
        free(all);
        return asn_err_set(e, "min_count must be at least 1"), NULL;
    }
    if (!w->used) {
        free(all);
        return asn_err_set(e, "no text to train on"), NULL;
    }
    int32_t want = o->vocab_size - 256 - (int32_t)n_sp;

    asn_bpe *b = asn_xcalloc(1, sizeof *b);
    b->pre = asn_xstrdup(w->pre);
    b->bos = b->eos = b->pad = -1;
    b->merge_l = asn_xmalloc(((size_t)want + 1) * sizeof *b->merge_l);
    b->merge_r = asn_xmalloc(((size_t)want + 1) * sizeof *b->merge_r);
    toks *t = &b->t;
    toks_rehash(t, 4096);
    for (int i = 0; i < 256; i++) {
        char c = (char)i;
        toks_add(t, &c, 1, -1, -1);
    }

    wordset ws = {0};
    wordset_build(&ws, w);
    pairs ps = {0};
    pairs_rehash(&ps, 1 << 16);
    for (size_t i = 0; i < ws.n; i++) {
        const int32_t *s = ws.sym + ws.off[i];
        for (uint32_t k = 0; k + 1 < ws.len[i]; k++) {
            size_t pi = pairs_get(&ps, s[k], s[k + 1]); /* may move ps.v */
            pair *p = &ps.v[pi];
            p->count += (int64_t)ws.count[i];
            pair_add_word(p, (uint32_t)i);
        }
    }
    heap h = {.t = t};
    for (size_t i = 0; i < ps.n; i++)
        heap_push(&h, (hent){ps.v[i].count, ps.v[i].l, ps.v[i].r});

    step_scratch sc = {0};
    while (b->n_learned < want && h.n) {
        hent top = heap_pop(&h);
        size_t pi = pairs_get(&ps, top.l, top.r);
        int64_t count = ps.v[pi].count;
        if (top.count != count) { /* stale: the count went down since */
            if (count > 0 && count < top.count)
                heap_push(&h, (hent){count, top.l, top.r});
            continue;
        }
        if (count < o->min_count)
            break;
        if (ps.v[pi].banned)
            continue;
        int32_t l = top.l, r = top.r, step = b->n_learned;
        size_t nl = t->len[l], nr = t->len[r];
        char *cat = asn_xmalloc(nl + nr);
        memcpy(cat, t->arena + t->off[l], nl);
        memcpy(cat + nl, t->arena + t->off[r], nr);
        int32_t exists = toks_find(t, cat, nl + nr);
        free(cat);
        if (exists >= 0) { /* another pair already made this text */
            ps.v[pi].banned = 1;
            continue;
        }
        int32_t id = toks_add(t, NULL, nl + nr, l, r);
        b->merge_l[step] = l;
        b->merge_r[step] = r;
        b->n_learned++;
        /* the word list of (l, r) is taken over: no word gains (l, r) now */
        uint32_t *where = ps.v[pi].where, n_where = ps.v[pi].n_where;
        ps.v[pi].where = NULL;
        ps.v[pi].n_where = ps.v[pi].cap_where = 0;
        sc.n_gained = 0;
        for (uint32_t k = 0; k < n_where; k++) {
            uint32_t wi = where[k];
            if (ws.seen[wi] == step + 1)
                continue;
            ws.seen[wi] = step + 1;
            merge_word(&ws, &ps, wi, l, r, id, step, &sc);
        }
        free(where);
        for (size_t k = 0; k < sc.n_gained; k++) {
            const pair *q = &ps.v[sc.gained[k]];
            heap_push(&h, (hent){q->count, q->l, q->r});
        }
        if (o->progress)
            o->progress(o->progress_ctx, b->n_learned, want);
    }
    for (size_t i = 0; i < ws.n; i++)
        b->text_tokens += ws.count[i] * ws.len[i];
    for (size_t i = 0; i < n_sp; i++) {
        int32_t id = toks_add(t, all[i], strlen(all[i]), -1, -1);
        if (o->bos && all[i] == o->bos)
            b->bos = id;
        else if (o->eos && all[i] == o->eos)
            b->eos = id;
        else if (o->pad && all[i] == o->pad)
            b->pad = id;
    }
    free(all);
    free(sc.gained);
    free(sc.mark);
    for (size_t i = 0; i < ps.n; i++)
        free(ps.v[i].where);
    free(ps.v);
    free(ps.map);
    free(h.v);
    wordset_free(&ws);
    return b;
}

void asn_bpe_free(asn_bpe *b)
{
    if (!b)
        return;
    toks_free(&b->t);
    free(b->merge_l);
    free(b->merge_r);
    free(b->pre);
    free(b);
}

int32_t asn_bpe_n_tokens(const asn_bpe *b) { return b->t.n; }
int32_t asn_bpe_n_merges(const asn_bpe *b) { return b->n_learned; }
int32_t asn_bpe_bos(const asn_bpe *b) { return b->bos; }
int32_t asn_bpe_eos(const asn_bpe *b) { return b->eos; }
int32_t asn_bpe_pad(const asn_bpe *b) { return b->pad; }
uint64_t asn_bpe_text_tokens(const asn_bpe *b) { return b->text_tokens; }

const char *asn_bpe_token(const asn_bpe *b, int32_t id, size_t *len)
{
    if (id < 0 || id >= b->t.n) {
        if (len)
            *len = 0;
        return NULL;
    }
    size_t n;
    const char *s = tok_text(&b->t, id, &n);
    if (len)
        *len = n;
    return s;
}

void asn_bpe_merge(const asn_bpe *b, int32_t rank, int32_t *left, int32_t *right)
{
    int ok = rank >= 0 && rank < b->n_learned;
    if (left)
        *left = ok ? b->merge_l[rank] : -1;
    if (right)
        *right = ok ? b->merge_r[rank] : -1;
}

/* ------------------------------------------------------------------ GGUF */

/* GPT-2's byte-to-unicode alphabet: printable bytes stand for themselves,
 * the other 68 (0x00-0x20, 0x7F-0xA0, 0xAD) for U+0100.. in byte order. */
static uint32_t byte_cp(unsigned b)
{
    if ((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE)
        return b;
    uint32_t k = 0;
    for (unsigned x = 0; x < b; x++)
        k += !((x >= 0x21 && x <= 0x7E) || (x >= 0xA1 && x <= 0xAC) || x >= 0xAE);
    return 0x100 + k;
}

/* The byte-to-unicode form of s[0..n) into out (2n + 1 bytes); its length. */
static size_t encode_bytes(const uint32_t *cp_of, const char *s, size_t n, char *out)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t c = cp_of[(unsigned char)s[i]];
        if (c < 0x80) {
            out[k++] = (char)c;
        } else { /* all < U+0800 */
            out[k++] = (char)(0xC0 | c >> 6);
            out[k++] = (char)(0x80 | (c & 0x3F));
        }
    }
    out[k] = 0;
    return k;
}

void asn_bpe_set_gguf(const asn_bpe *b, asn_gguf_writer *w)
{
    uint32_t cp_of[256];
    for (unsigned i = 0; i < 256; i++)
        cp_of[i] = byte_cp(i);
    const toks *t = &b->t;
    int32_t n = t->n, first_special = 256 + b->n_learned;
    char **text = asn_xmalloc((size_t)n * sizeof *text);
    int32_t *type = asn_xmalloc((size_t)n * sizeof *type);
    for (int32_t i = 0; i < n; i++) {
        size_t len;
        const char *s = tok_text(t, i, &len);
        if (i < first_special) {
            text[i] = asn_xmalloc(2 * len + 1);
            encode_bytes(cp_of, s, len, text[i]);
            type[i] = 1; /* NORMAL */
        } else {
            text[i] = asn_xmalloc(len + 1);
            memcpy(text[i], s, len);
            text[i][len] = 0;
            type[i] = 3; /* CONTROL */
        }
    }
    char **merges = asn_xmalloc(((size_t)b->n_learned + 1) * sizeof *merges);
    for (int32_t r = 0; r < b->n_learned; r++) {
        const char *l = text[b->merge_l[r]], *rt = text[b->merge_r[r]];
        size_t nl = strlen(l), nr = strlen(rt);
        merges[r] = asn_xmalloc(nl + nr + 2);
        memcpy(merges[r], l, nl);
        merges[r][nl] = ' ';
        memcpy(merges[r] + nl + 1, rt, nr + 1);
    }
    asn_gguf_set_str(w, "tokenizer.ggml.model", "gpt2");
    asn_gguf_set_str(w, "tokenizer.ggml.pre", b->pre);
    asn_gguf_set_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)text, (size_t)n);
    asn_gguf_set_arr_i32(w, "tokenizer.ggml.token_type", type, (size_t)n);
    asn_gguf_set_arr_str(w, "tokenizer.ggml.merges", (const char *const *)merges, (size_t)b->n_learned);
    if (b->bos >= 0)
        asn_gguf_set_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)b->bos);
    if (b->eos >= 0)
        asn_gguf_set_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)b->eos);
    if (b->pad >= 0)
        asn_gguf_set_u32(w, "tokenizer.ggml.padding_token_id", (uint32_t)b->pad);
    asn_gguf_set_bool(w, "tokenizer.ggml.add_bos_token", b->bos >= 0);
    asn_gguf_set_bool(w, "tokenizer.ggml.add_eos_token", 0);
    for (int32_t i = 0; i < n; i++)
        free(text[i]);
    for (int32_t r = 0; r < b->n_learned; r++)
        free(merges[r]);
    free(text);
    free(type);
    free(merges);
}

int asn_bpe_write(const asn_bpe *b, const char *path, asn_err *e)
{
    asn_gguf_writer *w = asn_gguf_writer_new();
    char name[64];
    snprintf(name, sizeof name, "asn byte-level BPE, %d tokens", (int)b->t.n);
    asn_gguf_set_str(w, "general.name", name);
    asn_bpe_set_gguf(b, w);
    int rc = asn_gguf_write(w, path, e);
    asn_gguf_writer_free(w);
    return rc;
}
