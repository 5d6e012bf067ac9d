/* tok_bpe.c — byte-level BPE (tokenizer.ggml.model "gpt2"), as llama.cpp's
 * llm_tokenizer_bpe_session: the fragment is decoded to code points,
 * split by the pre-tokenizer, and each piece is written in the GPT-2
 * byte-to-unicode alphabet (one symbol per UTF-8 byte); then the adjacent
 * pair with the lowest merge rank (ties: the leftmost) is merged until no
 * pair has a rank. With ignore_merges a piece that is a whole token is
 * taken as it is.
 *
 * Symbols are numbered: a token's symbol is its id; merge parts and
 * results that are not tokens get numbers past the vocab, so the merge
 * table maps two numbers to (rank, result) and no text is built while
 * merging. A final symbol that is no token is written, as in llama.cpp,
 * byte by byte through the one-byte tokens of its text (if any). */
#include "tok_internal.h"

#include <stdlib.h>
#include <string.h>

/* --------------------------------------------------------------- merges */

static int32_t sym_intern(asn_vocab *v, const char *s, size_t n, size_t *xcap, size_t *xoff_cap);

static void merge_put(asn_vocab *v, int32_t l, int32_t r, int32_t rank, int32_t res)
{
    uint64_t key = (uint64_t)(uint32_t)l << 32 | (uint32_t)r;
    size_t i = (size_t)(asn_str_hash(&key, sizeof key)) & v->merge_mask;
    while (v->merge[i].key != UINT64_MAX) {
        if (v->merge[i].key == key)
            return; /* the first rank of a pair wins */
        i = (i + 1) & v->merge_mask;
    }
    v->merge[i] = (asn_merge_slot){key, rank, res};
}

static inline const asn_merge_slot *merge_get(const asn_vocab *v, int32_t l, int32_t r)
{
    if (l < 0 || r < 0)
        return NULL;
    uint64_t key = (uint64_t)(uint32_t)l << 32 | (uint32_t)r;
    size_t i = (size_t)(asn_str_hash(&key, sizeof key)) & v->merge_mask;
    while (v->merge[i].key != UINT64_MAX) {
        if (v->merge[i].key == key)
            return &v->merge[i];
        i = (i + 1) & v->merge_mask;
    }
    return NULL;
}

/* Adds text as an extra symbol unless some symbol has it already. */
static int32_t sym_intern(asn_vocab *v, const char *s, size_t n, size_t *xcap, size_t *xoff_cap)
{
    int32_t id = asn_sym_find(v, s, n);
    if (id >= 0)
        return id;
    int32_t k = v->n_sym - v->n;
    size_t at = v->xoff[k];
    asn_grow((void **)&v->xtext, xcap, at + n + 1, 1);
    memcpy(v->xtext + at, s, n);
    v->xtext[at + n] = 0;
    asn_grow((void **)&v->xoff, xoff_cap, (size_t)k + 2, sizeof *v->xoff);
    v->xoff[k + 1] = (uint32_t)(at + n + 1);
    id = v->n_sym++;
    /* into the text map (grown by the caller's sizing: see load_merges) */
    uint64_t h = asn_str_hash(s, n);
    size_t i = (size_t)h & v->map.mask;
    while (v->map.slot[i])
        i = (i + 1) & v->map.mask;
    v->map.slot[i] = (h >> 32 << 32) | (uint32_t)(id + 1);
    return id;
}

int asn_bpe_load_merges(asn_vocab *v, const asn_gguf *g, asn_err *e)
{
    const asn_gguf_kv *kv = NULL;
    if (asn_gguf_get_arr(g, "tokenizer.ggml.merges", 0, &kv, e))
        return -1;
    if (!kv)
        return asn_err_set(e, "no tokenizer merges (tokenizer.ggml.merges) in a BPE vocab");
    if (kv->v.arr.type != ASN_GGUF_STRING)
        return asn_err_set(e, "tokenizer.ggml.merges must be an array of strings");
    uint64_t nm = kv->v.arr.n;
    if (nm > INT32_MAX / 4)
        return asn_err_set(e, "tokenizer.ggml.merges: too many merges (%llu)", (unsigned long long)nm);
    size_t cap = 16;
    while (cap < 2 * nm + 16)
        cap <<= 1;
    v->merge = asn_xmalloc(cap * sizeof *v->merge);
    for (size_t i = 0; i < cap; i++)
        v->merge[i].key = UINT64_MAX;
    v->merge_mask = cap - 1;

    size_t xcap = 0, xoff_cap = 0;
    asn_grow((void **)&v->xoff, &xoff_cap, 1, sizeof *v->xoff);
    v->xoff[0] = 0;
    char *buf = NULL;
    size_t buf_cap = 0;
    for (uint64_t m = 0; m < nm; m++) {
        asn_gguf_str s = asn_gguf_arr_str(kv, m);
        /* "left right", split at the first space after the first byte; a
         * pair with no space, or whose right part holds a space, can never
         * meet two symbols of byte-level text (llama.cpp keeps it unused) */
        const char *sp = s.n > 1 ? memchr(s.p + 1, ' ', s.n - 1) : NULL;
        if (!sp)
            continue;
        size_t nl = (size_t)(sp - s.p), nr = s.n - nl - 1;
        if (!nr || memchr(sp + 1, ' ', nr))
            continue;
        /* the text map must keep room for up to 3 new symbols */
        if ((size_t)(v->n_sym + 3) * 2 > v->map.mask + 1) {
            size_t ncap = (v->map.mask + 1) * 2;
            uint64_t *slot = asn_xcalloc(ncap, sizeof *slot);
            for (size_t i = 0; i <= v->map.mask; i++) {
                uint64_t x = v->map.slot[i];
                if (!x)
                    continue;
                int32_t id = (int32_t)(uint32_t)x - 1;
                size_t len;
                const char *t = asn_sym_text(v, id, &len);
                size_t j = (size_t)asn_str_hash(t, len) & (ncap - 1);
                while (slot[j])
                    j = (j + 1) & (ncap - 1);
                slot[j] = x;
            }
            free(v->map.slot);
            v->map.slot = slot;
            v->map.mask = ncap - 1;
        }
        int32_t l = sym_intern(v, s.p, nl, &xcap, &xoff_cap);
        int32_t r = sym_intern(v, sp + 1, nr, &xcap, &xoff_cap);
        asn_grow((void **)&buf, &buf_cap, nl + nr, 1);
        memcpy(buf, s.p, nl);
        memcpy(buf + nl, sp + 1, nr);
        int32_t res = sym_intern(v, buf, nl + nr, &xcap, &xoff_cap);
        merge_put(v, l, r, (int32_t)m, res);
    }
    free(buf);

    /* the symbol of each byte's character, and the one-byte tokens of its
     * UTF-8 form (the fallback for a symbol that is no token) */
    for (int b = 0; b < 256; b++) {
        char ch[4];
        int len = asn_utf8_encode(asn_byte_cp((uint8_t)b), ch);
        v->byte_sym[b] = asn_sym_find(v, ch, (size_t)len);
        for (int k = 0; k < 2; k++)
            v->byte_fb[b][k] = k < len ? asn_tok_find(v, ch + k, 1) : -1;
    }
    return 0;
}

/* ------------------------------------------------------------- tokenize */

typedef struct sym {
    int32_t id;        /* symbol number; -1 if its text is no symbol */
    uint32_t start, n; /* bytes of the piece; n = 0 once merged away */
    int32_t prev, next;
} sym;

typedef struct bigram {
    int32_t rank, left, right, result;
    uint32_t size;
} bigram;

/* Pieces already tokenized in this call (long texts repeat their words). */
typedef struct cache_slot {
    uint64_t hash;      /* 0 = empty */
    uint32_t key, n_key; /* bytes in cache.keys */
    uint32_t ids, n_ids; /* ids in cache.ids */
} cache_slot;

typedef struct piece_cache {
    cache_slot *slot;
    size_t mask, used;
    unsigned char *keys;
    size_t n_keys, keys_cap;
    int32_t *ids;
    size_t n_ids, ids_cap;
} piece_cache;

#define CACHE_AFTER 256          /* pieces seen before a call starts caching */
#define CACHE_MAX_PIECE 64       /* bytes; longer pieces rarely repeat */
#define CACHE_MAX_SLOTS (1 << 18)

struct asn_bpe_scratch {
    piece_cache cache;
    size_t n_seen;
    uint32_t *cps;
    size_t cps_cap;
    asn_pieces pieces;
    asn_pretok_scratch *pre;
    unsigned char *w; /* a piece's UTF-8 bytes */
    size_t w_cap;
    char *enc;        /* a piece in the byte-level alphabet */
    size_t enc_cap;
    sym *sym;
    size_t sym_cap;
    bigram *heap;
    size_t n_heap, heap_cap;
};

asn_bpe_scratch *asn_bpe_scratch_new(void)
{
    asn_bpe_scratch *s = asn_xcalloc(1, sizeof *s);
    s->pre = asn_pretok_scratch_new();
    return s;
}

void asn_bpe_scratch_free(asn_bpe_scratch *s)
{
    if (!s)
        return;
    free(s->cps);
    free(s->pieces.len);
    asn_pretok_scratch_free(s->pre);
    free(s->w);
    free(s->enc);
    free(s->sym);
    free(s->heap);
    free(s->cache.slot);
    free(s->cache.keys);
    free(s->cache.ids);
    free(s);
}

static const cache_slot *cache_get(const piece_cache *c, const unsigned char *w, size_t n, uint64_t h)
{
    if (!c->slot)
        return NULL;
    for (size_t i = (size_t)h & c->mask; c->slot[i].hash; i = (i + 1) & c->mask) {
        const cache_slot *x = &c->slot[i];
        if (x->hash == h && x->n_key == n && !memcmp(c->keys + x->key, w, n))
            return x;
    }
    return NULL;
}

static void cache_put(piece_cache *c, const unsigned char *w, size_t n, uint64_t h, const int32_t *ids, size_t n_ids)
{
    if (!c->slot) {
        c->mask = 4095;
        c->slot = asn_xcalloc(c->mask + 1, sizeof *c->slot);
    }
    if (2 * (c->used + 1) > c->mask + 1) { /* grow, or stop caching */
        size_t ncap = 2 * (c->mask + 1);
        if (ncap > CACHE_MAX_SLOTS)
            return;
        cache_slot *t = asn_xcalloc(ncap, sizeof *t);
        for (size_t i = 0; i <= c->mask; i++)
            if (c->slot[i].hash) {
                size_t j = (size_t)c->slot[i].hash & (ncap - 1);
                while (t[j].hash)
                    j = (j + 1) & (ncap - 1);
                t[j] = c->slot[i];
            }
        free(c->slot);
        c->slot = t;
        c->mask = ncap - 1;
    }
    asn_grow((void **)&c->keys, &c->keys_cap, c->n_keys + n, 1);
    asn_grow((void **)&c->ids, &c->ids_cap, c->n_ids + n_ids, sizeof *c->ids);
    size_t i = (size_t)h & c->mask;
    while (c->slot[i].hash)
        i = (i + 1) & c->mask;
    c->slot[i] = (cache_slot){h, (uint32_t)c->n_keys, (uint32_t)n, (uint32_t)c->n_ids, (uint32_t)n_ids};
    memcpy(c->keys + c->n_keys, w, n);
    c->n_keys += n;
    if (n_ids)
        memcpy(c->ids + c->n_ids, ids, n_ids * sizeof *ids);
    c->n_ids += n_ids;
    c->used++;
}

/* a is popped before b: lower rank, then smaller left index */
static inline int before(const bigram *a, const bigram *b)
{
    return a->rank < b->rank || (a->rank == b->rank && a->left < b->left);
}

ASN_HEAP_DEFINE(bigram, before)

static void try_pair(const asn_vocab *v, asn_bpe_scratch *s, int32_t left, int32_t right)
{
    if (left < 0 || right < 0)
        return;
    const asn_merge_slot *m = merge_get(v, s->sym[left].id, s->sym[right].id);
    if (m)
        heap_push(&s->heap, &s->n_heap, &s->heap_cap,
                  (bigram){m->rank, left, right, m->result, s->sym[left].n + s->sym[right].n});
}

/* One piece (UTF-8 bytes w[0..n)). */
static void bpe_piece(const asn_vocab *v, const unsigned char *w, size_t n, asn_ids *out, asn_bpe_scratch *s)
{
    if (v->ignore_merges) {
        asn_grow((void **)&s->enc, &s->enc_cap, 2 * n, 1);
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
            k += (size_t)asn_utf8_encode(asn_byte_cp(w[i]), s->enc + k);
        int32_t tok = asn_tok_find(v, s->enc, k);
        if (tok >= 0) {
            asn_ids_push(out, tok);
            return;
        }
    }
    asn_grow((void **)&s->sym, &s->sym_cap, n, sizeof *s->sym);
    for (size_t i = 0; i < n; i++)
        s->sym[i] = (sym){v->byte_sym[w[i]], (uint32_t)i, 1, (int32_t)i - 1, i + 1 == n ? -1 : (int32_t)i + 1};
    s->n_heap = 0;
    for (size_t i = 1; i < n; i++)
        try_pair(v, s, (int32_t)i - 1, (int32_t)i);
    while (s->n_heap) {
        bigram b = heap_pop(s->heap, &s->n_heap);
        sym *l = &s->sym[b.left], *r = &s->sym[b.right];
        if (!l->n || !r->n || l->n + r->n != b.size)
            continue; /* stale */
        l->id = b.result;
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0)
            s->sym[r->next].prev = b.left;
        try_pair(v, s, l->prev, b.left);
        try_pair(v, s, b.left, l->next);
    }
    for (int32_t i = 0; i != -1; i = s->sym[i].next) {
        const sym *y = &s->sym[i];
        if (y->id >= 0 && y->id < v->n) {
            asn_ids_push(out, y->id);
            continue;
        }
        for (uint32_t j = 0; j < y->n; j++)
            for (int k = 0; k < 2; k++)
                if (v->byte_fb[w[y->start + j]][k] >= 0)
                    asn_ids_push(out, v->byte_fb[w[y->start + j]][k]);
    }
}

int asn_bpe_tokenize(const asn_vocab *v, const char *text, size_t n, asn_ids *out, asn_bpe_scratch *s,
                     asn_err *e)
{
    asn_grow((void **)&s->cps, &s->cps_cap, n + 1, sizeof *s->cps);
    size_t ncp = asn_utf8_decode(text, n, s->cps);
    if (asn_pretok_split(v->pre, s->cps, ncp, &s->pieces, s->pre, e))
        return -1;
    size_t at = 0;
    for (size_t p = 0; p < s->pieces.n; p++) {
        size_t len = s->pieces.len[p];
        asn_grow((void **)&s->w, &s->w_cap, 4 * len, 1);
        size_t k = 0;
        for (size_t i = 0; i < len; i++)
            k += (size_t)asn_utf8_encode(s->cps[at + i], (char *)s->w + k);
        at += len;
        /* a piece seen before in this call: its ids again */
        int use_cache = ++s->n_seen > CACHE_AFTER && k <= CACHE_MAX_PIECE;
        uint64_t h = 0;
        if (use_cache) {
            h = asn_str_hash(s->w, k) | 1;
            const cache_slot *c = cache_get(&s->cache, s->w, k, h);
            if (c) {
                for (uint32_t i = 0; i < c->n_ids; i++)
                    asn_ids_push(out, s->cache.ids[c->ids + i]);
                continue;
            }
        }
        size_t before = out->n;
        bpe_piece(v, s->w, k, out, s);
        if (use_cache)
            cache_put(&s->cache, s->w, k, h, out->n > before ? out->v + before : NULL, out->n - before);
    }
    return 0;
}
