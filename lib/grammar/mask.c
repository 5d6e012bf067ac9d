/* mask.c — a constraint: a grammar over a vocabulary, the byte trie of the
 * vocabulary's pieces, and the per-token mask with its caches.
 *
 * The mask of a state is the union over its stacks of the tokens each stack
 * accepts. For one stack, the tokens depend mostly on its top: the trie is
 * walked against the top SUFFIX_DEPTH entries alone, with a marker below
 * them. Tokens consumed before the walk pops past the marker are allowed
 * whatever lies below (kept as a bit set per suffix); where the walk pops
 * past it at a trie node, the tokens under that node need the rest of the
 * stack: the node is recorded, and at mask time the real stack walks that
 * subtree. Inside a JSON string, for instance, the suffix is (string body,
 * closing quote) and the recorded nodes are the few pieces that go on after
 * a quote (`",`, `"}`). Whole masks are cached per state too. */
#include "grammar_internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Three entries: a byte position inside a character class, the repetition
 * it returns to, and the rule around that (a string's closing quote), so
 * that string bodies, numbers and literals are decided without the context
 * they sit in (a JSON string's body is three deep in the grammars of
 * schema.c and of llama.cpp's json.gbnf). */
enum { SUFFIX_DEPTH = 3 };
/* Caches are dropped when they grow past these (memory bound: a mask is
 * V / 8 bytes, 16 KiB at V = 128k). */
enum { MAX_STATE_MASKS = 2048, MAX_SUFFIXES = 4096, MAX_SEQS = 4096 };

typedef struct trie {
    int n;              /* nodes, preorder; node 0 is the root (empty prefix) */
    unsigned char *byte;
    uint16_t *depth;
    int32_t *size;      /* nodes in the subtree, itself included */
    int32_t *tok_off;   /* tokens ending at node i: toks[tok_off[i] .. tok_off[i+1]) */
    int32_t *toks;
    int32_t *first;     /* a token whose piece starts with node i's prefix */
    int max_depth;
    const asn_vocab *v;
    int V;
    int32_t *eog;       /* end-of-generation ids */
    int n_eog;
    int refs;           /* constraints holding it (under trie_mu) */
    struct trie *next;  /* the live tries (under trie_mu) */
} trie;

typedef struct suffix {
    uint64_t *bits;
    /* Where the kept entries were popped past: the children of those trie
     * nodes, grouped by their byte (exits[exit_off[b] .. exit_off[b+1])).
     * The rest of the real stack, resumed, walks them. */
    int32_t *exits;
    int exit_off[257];
} suffix;

typedef struct seqent {
    asn_gstate st;
} seqent;

struct asn_constraint {
    asn_grammar *g;
    const asn_vocab *v;
    int V, W;            /* tokens, words of a mask */
    trie *tp;            /* shared with the constraints made from it */
    trie t;              /* copy of *tp's arrays (not owned) for short access */
    const int32_t *eog;
    int n_eog;
    pthread_mutex_t mu;
    wmap suffixes;       /* suffix words -> suffix */
    wmap masks;          /* state words -> bits */
    wmap seqs;           /* token ids -> seqent */
};

/* ---------------------------------------------------------------- trie */

static const asn_vocab *sort_vocab;
static pthread_mutex_t sort_mu = PTHREAD_MUTEX_INITIALIZER;

static int cmp_piece(const void *a, const void *b)
{
    size_t la, lb;
    const char *pa = asn_vocab_piece(sort_vocab, *(const int32_t *)a, 0, &la);
    const char *pb = asn_vocab_piece(sort_vocab, *(const int32_t *)b, 0, &lb);
    int c = memcmp(pa, pb, la < lb ? la : lb);
    if (c)
        return c;
    if (la != lb)
        return la < lb ? -1 : 1;
    return *(const int32_t *)a < *(const int32_t *)b ? -1 : 1;
}

typedef struct tbuild {
    trie *t;
    const asn_vocab *v;
    const int32_t *ids;
    int cap;
} tbuild;

static int tnode(tbuild *b, unsigned char byte, int depth, int32_t first)
{
    trie *t = b->t;
    if (t->n == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 1024;
        t->byte = asn_xrealloc(t->byte, (size_t)b->cap);
        t->depth = asn_xrealloc(t->depth, (size_t)b->cap * sizeof *t->depth);
        t->size = asn_xrealloc(t->size, (size_t)b->cap * sizeof *t->size);
        t->tok_off = asn_xrealloc(t->tok_off, (size_t)(b->cap + 1) * sizeof *t->tok_off);
        t->first = asn_xrealloc(t->first, (size_t)b->cap * sizeof *t->first);
    }
    t->byte[t->n] = byte;
    t->depth[t->n] = (uint16_t)depth;
    t->first[t->n] = first;
    if (depth > t->max_depth)
        t->max_depth = depth;
    return t->n++;
}

/* Tokens ids[lo..hi) share their first `depth` bytes; node is theirs. */
static void tbuild_range(tbuild *b, int node, int lo, int hi, int depth, int *ntok)
{
    trie *t = b->t;
    size_t len;
    t->tok_off[node] = *ntok;
    while (lo < hi) {
        asn_vocab_piece(b->v, b->ids[lo], 0, &len);
        if ((int)len != depth)
            break;
        t->toks[(*ntok)++] = b->ids[lo++];
    }
    /* tok_off[node + 1] is written by the next node (or at the end) */
    while (lo < hi) {
        const char *p = asn_vocab_piece(b->v, b->ids[lo], 0, &len);
        unsigned char c = (unsigned char)p[depth];
        int end = lo + 1;
        while (end < hi) {
            const char *q = asn_vocab_piece(b->v, b->ids[end], 0, &len);
            if ((unsigned char)q[depth] != c)
                break;
            end++;
        }
        int child = tnode(b, c, depth + 1, b->ids[lo]);
        tbuild_range(b, child, lo, end, depth + 1, ntok);
        t->size[child] = t->n - child;
        lo = end;
    }
}

static void trie_build(trie *t, const asn_vocab *v, const int32_t *ids, int n)
{
    memset(t, 0, sizeof *t);
    t->toks = asn_xmalloc((size_t)(n ? n : 1) * sizeof *t->toks);
    tbuild b = {t, v, ids, 0};
    int ntok = 0;
    tnode(&b, 0, 0, n ? ids[0] : 0);
    tbuild_range(&b, 0, 0, n, 0, &ntok);
    t->size[0] = t->n;
    t->tok_off[t->n] = ntok;
}

static void trie_free(trie *t)
{
    free(t->byte);
    free(t->depth);
    free(t->size);
    free(t->tok_off);
    free(t->toks);
    free(t->first);
}

/* ---------------------------------------------------------- constraint */

static void free_suffix(void *p)
{
    suffix *s = p;
    if (!s)
        return;
    free(s->bits);
    free(s->exits);
    free(s);
}

static void free_seq(void *p)
{
    seqent *s = p;
    if (!s)
        return;
    asn_gstate_clear(&s->st);
    free(s);
}


static pthread_mutex_t trie_mu = PTHREAD_MUTEX_INITIALIZER;
/* Tries some constraint holds, so constraints made over one vocabulary
 * (a prompt's own after a heuristic's) share one. A trie is found by its
 * vocabulary's address only while a constraint holds it, and so while the
 * vocabulary lives. */
static trie *live_tries;

static trie *trie_build_new(const asn_vocab *v);

static trie *trie_new(const asn_vocab *v)
{
    pthread_mutex_lock(&trie_mu);
    for (trie *t = live_tries; t; t = t->next)
        if (t->v == v) {
            t->refs++;
            pthread_mutex_unlock(&trie_mu);
            return t;
        }
    pthread_mutex_unlock(&trie_mu);
    trie *t = trie_build_new(v); /* outside the lock: about 0.1 s at 128k */
    pthread_mutex_lock(&trie_mu);
    for (trie *o = live_tries; o; o = o->next)
        if (o->v == v) { /* built meanwhile by another thread */
            o->refs++;
            pthread_mutex_unlock(&trie_mu);
            trie_free(t);
            free(t->eog);
            free(t);
            return o;
        }
    t->next = live_tries;
    live_tries = t;
    pthread_mutex_unlock(&trie_mu);
    return t;
}

static trie *trie_build_new(const asn_vocab *v)
{
    trie *t = asn_xmalloc(sizeof *t);
    int V = asn_vocab_n_tokens(v);
    int32_t *ids = asn_xmalloc((size_t)(V ? V : 1) * sizeof *ids);
    int32_t *eog = asn_xmalloc((size_t)(V ? V : 1) * sizeof *eog);
    int n = 0, n_eog = 0;
    for (int32_t id = 0; id < V; id++) {
        size_t len;
        if (asn_vocab_is_eog(v, id))
            eog[n_eog++] = id;
        else if (asn_vocab_piece(v, id, 0, &len) && len)
            ids[n++] = id;
    }
    pthread_mutex_lock(&sort_mu); /* qsort has no context argument in C11 */
    sort_vocab = v;
    qsort(ids, (size_t)n, sizeof *ids, cmp_piece);
    pthread_mutex_unlock(&sort_mu);
    trie_build(t, v, ids, n);
    free(ids);
    t->v = v, t->V = V, t->eog = eog, t->n_eog = n_eog, t->refs = 1, t->next = NULL;
    return t;
}

static void trie_release(trie *t)
{
    pthread_mutex_lock(&trie_mu);
    int last = --t->refs == 0;
    if (last)
        for (trie **p = &live_tries; *p; p = &(*p)->next)
            if (*p == t) {
                *p = t->next;
                break;
            }
    pthread_mutex_unlock(&trie_mu);
    if (last) {
        trie_free(t);
        free(t->eog);
        free(t);
    }
}

static asn_constraint *make(asn_grammar *g, trie *t)
{
    asn_constraint *c = asn_xcalloc(1, sizeof *c);
    c->g = g;
    c->v = t->v;
    c->V = t->V;
    c->W = (c->V + 63) / 64;
    c->tp = t;
    c->t = *t;
    c->eog = t->eog;
    c->n_eog = t->n_eog;
    pthread_mutex_init(&c->mu, NULL);
    c->suffixes.free_val = free_suffix;
    c->masks.free_val = free;
    c->seqs.free_val = free_seq;
    return c;
}

asn_constraint *asn_constraint_new(asn_grammar *g, const asn_vocab *v) { return make(g, trie_new(v)); }

asn_constraint *asn_constraint_new_like(asn_grammar *g, const asn_constraint *other)
{
    pthread_mutex_lock(&trie_mu);
    other->tp->refs++;
    pthread_mutex_unlock(&trie_mu);
    return make(g, other->tp);
}

void asn_constraint_free(asn_constraint *c)
{
    if (!c)
        return;
    wmap_clear(&c->suffixes);
    wmap_clear(&c->masks);
    wmap_clear(&c->seqs);
    pthread_mutex_destroy(&c->mu);
    trie_release(c->tp);
    asn_grammar_free(c->g);
    free(c);
}

const asn_grammar *asn_constraint_grammar(const asn_constraint *c) { return c->g; }
const asn_vocab *asn_constraint_vocab(const asn_constraint *c) { return c->v; }

/* ----------------------------------------------------------- trie walk */

static inline void bit_set(uint64_t *bits, int32_t t) { bits[t >> 6] |= 1ull << (t & 63); }

typedef struct level {
    int start, n;      /* the set at this depth */
    int nodes, sets;   /* arena marks after it */
} level;

/* Walks the subtree of trie node `root` (not root itself) from the set
 * [start, start+n) that holds after root's prefix. Tokens consumed set
 * their bit. With `roots`, a node after which a stack popped past
 * ST_BOTTOM is appended there (the walk goes on with the other stacks). */
static void walk(const trie *t, gwalker *w, int root, int start, int n, uint64_t *bits,
                 int32_t **roots, int *n_roots)
{
    int base = t->depth[root];
    level *lv = asn_xmalloc((size_t)(t->max_depth - base + 2) * sizeof *lv);
    lv[0] = (level){start, n, w->n_nodes, w->n_sets};
    int end = root + t->size[root];
    for (int i = root + 1; i < end;) {
        int d = t->depth[i] - base;
        const level *up = &lv[d - 1];
        w->n_nodes = up->nodes, w->n_sets = up->sets;
        int s0 = w->n_sets;
        gw_advance(w, up->start, up->n, t->byte[i]);
        int m = w->n_sets - s0;
        if (!m) {
            i += t->size[i];
            continue;
        }
        lv[d] = (level){s0, m, w->n_nodes, w->n_sets};
        for (int k = t->tok_off[i]; k < t->tok_off[i + 1]; k++)
            bit_set(bits, t->toks[k]);
        if (roots) {
            int bottom = 0;
            for (int k = s0; k < s0 + m && !bottom; k++)
                bottom = w->sets[k] == ST_BOTTOM;
            if (bottom) {
                if (t->size[i] > 1) {
                    *roots = asn_xrealloc(*roots, (size_t)(*n_roots + 1) * sizeof **roots);
                    (*roots)[(*n_roots)++] = i;
                }
                int k2 = s0;
                for (int k = s0; k < s0 + m; k++)
                    if (w->sets[k] != ST_BOTTOM)
                        w->sets[k2++] = w->sets[k];
                m = k2 - s0;
                w->n_sets = k2;
                if (!m) {
                    i += t->size[i];
                    continue;
                }
                lv[d] = (level){s0, m, w->n_nodes, w->n_sets};
            }
        }
        i++;
    }
    free(lv);
}

/* The suffix entry of the top `n` positions of a stack (`cut`: more lie
 * below them). key = [cut, pos...]. */
static suffix *suffix_compute(const asn_constraint *c, const uint32_t *key, int n)
{
    suffix *s = asn_xcalloc(1, sizeof *s);
    s->bits = asn_xcalloc((size_t)c->W, sizeof *s->bits);
    gwalker w;
    gw_init(&w, c->g);
    int start = w.n_sets;
    int32_t top = gw_push_stack(&w, key + 1, n, key[0] ? ST_BOTTOM : ST_ROOT);
    gw_add(&w, start, top);
    int32_t *roots = NULL;
    int n_roots = 0;
    walk(&c->t, &w, 0, start, 1, s->bits, key[0] ? &roots : NULL, &n_roots);
    gw_free(&w);
    /* the children of the exit nodes, by byte (counting sort) */
    const trie *t = &c->t;
    int total = 0;
    memset(s->exit_off, 0, sizeof s->exit_off);
    for (int r = 0; r < n_roots; r++)
        for (int ch = roots[r] + 1; ch < roots[r] + t->size[roots[r]]; ch += t->size[ch])
            s->exit_off[t->byte[ch] + 1]++, total++;
    for (int b = 0; b < 256; b++)
        s->exit_off[b + 1] += s->exit_off[b];
    s->exits = asn_xmalloc((size_t)(total ? total : 1) * sizeof *s->exits);
    int fill[256];
    memcpy(fill, s->exit_off, sizeof fill);
    for (int r = 0; r < n_roots; r++)
        for (int ch = roots[r] + 1; ch < roots[r] + t->size[roots[r]]; ch += t->size[ch])
            s->exits[fill[t->byte[ch]]++] = ch;
    free(roots);
    return s;
}

/* The suffix entry for key, computed on first use; call with c->mu held
 * (a cold entry is computed under the lock: it happens once per suffix). */
static const suffix *suffix_get_locked(asn_constraint *c, const uint32_t *key, int n)
{
    uint64_t h = wmap_hash(key, n + 1);
    suffix *s = wmap_get(&c->suffixes, key, n + 1, h);
    if (s)
        return s;
    if (c->suffixes.used >= MAX_SUFFIXES)
        wmap_clear(&c->suffixes);
    return wmap_put(&c->suffixes, key, n + 1, h, suffix_compute(c, key, n));
}

static void set_eog(const asn_constraint *c, const asn_gstate *s, uint64_t *bits)
{
    if (asn_gstate_complete(s))
        for (int i = 0; i < c->n_eog; i++)
            bit_set(bits, c->eog[i]);
}

/* The mask from scratch: per stack, its suffix entry and the walks of the
 * subtrees it left open. */
static void mask_compute(asn_constraint *c, const asn_gstate *s, uint64_t *bits)
{
    memset(bits, 0, (size_t)c->W * sizeof *bits);
    set_eog(c, s, bits);
    if (!s->n)
        return;
    gwalker w;
    gw_init(&w, c->g);
    const uint32_t *p = s->w + 1;
    uint32_t key[1 + SUFFIX_DEPTH];
    for (uint32_t k = 0; k < s->w[0]; k++) {
        int len = (int)p[0];
        const uint32_t *pos = p + 1;
        p += 1 + len;
        if (!len)
            continue;
        int n = len < SUFFIX_DEPTH ? len : SUFFIX_DEPTH;
        key[0] = len > n;
        memcpy(key + 1, pos + len - n, (size_t)n * sizeof *key);
        pthread_mutex_lock(&c->mu);
        const suffix *sx = suffix_get_locked(c, key, n);
        for (int i = 0; i < c->W; i++)
            bits[i] |= sx->bits[i];
        int n_exits = sx->exit_off[256];
        int32_t *exits = NULL, off[257];
        if (n_exits) {
            exits = asn_xmalloc((size_t)n_exits * sizeof *exits);
            memcpy(exits, sx->exits, (size_t)n_exits * sizeof *exits);
            memcpy(off, sx->exit_off, sizeof off);
        }
        pthread_mutex_unlock(&c->mu);
        if (!n_exits)
            continue;
        /* the rest of the stack, resumed where the kept entries return */
        w.n_nodes = 0, w.n_sets = 0;
        int32_t below = gw_push_stack(&w, pos, len - n - 1, ST_ROOT);
        if (len - n - 1 == 0)
            below = ST_ROOT;
        int lo = w.n_sets;
        gw_expand(&w, lo, pos[len - n - 1], below);
        int m = w.n_sets - lo;
        int nodes0 = w.n_nodes, sets0 = w.n_sets;
        for (int b = 0; b < 256 && m; b++) {
            if (off[b] == off[b + 1])
                continue;
            w.n_nodes = nodes0, w.n_sets = sets0;
            gw_advance(&w, lo, m, (unsigned char)b);
            int mb = w.n_sets - sets0;
            if (!mb)
                continue;
            int nodes1 = w.n_nodes, sets1 = w.n_sets;
            for (int k = off[b]; k < off[b + 1]; k++) {
                int32_t ch = exits[k];
                for (int x = c->t.tok_off[ch]; x < c->t.tok_off[ch + 1]; x++)
                    bit_set(bits, c->t.toks[x]);
                w.n_nodes = nodes1, w.n_sets = sets1;
                walk(&c->t, &w, ch, sets0, mb, bits, NULL, NULL);
            }
        }
        free(exits);
    }
    gw_free(&w);
}

void asn_constraint_mask(asn_constraint *c, const asn_gstate *s, uint64_t *bits)
{
    uint64_t h = wmap_hash(s->w, s->n);
    pthread_mutex_lock(&c->mu);
    const uint64_t *hit = wmap_get(&c->masks, s->w, s->n, h);
    if (hit)
        memcpy(bits, hit, (size_t)c->W * sizeof *bits);
    pthread_mutex_unlock(&c->mu);
    if (hit)
        return;
    mask_compute(c, s, bits);
    uint64_t *copy = asn_xmalloc((size_t)c->W * sizeof *copy);
    memcpy(copy, bits, (size_t)c->W * sizeof *copy);
    pthread_mutex_lock(&c->mu);
    if (c->masks.used >= MAX_STATE_MASKS)
        wmap_clear(&c->masks);
    wmap_put(&c->masks, s->w, s->n, h, copy);
    pthread_mutex_unlock(&c->mu);
}

void asn_constraint_drop_caches(asn_constraint *c, int suffixes)
{
    pthread_mutex_lock(&c->mu);
    wmap_clear(&c->masks);
    if (suffixes)
        wmap_clear(&c->suffixes);
    pthread_mutex_unlock(&c->mu);
}

void asn_constraint_mask_brute(const asn_constraint *c, const asn_gstate *s, uint64_t *bits)
{
    memset(bits, 0, (size_t)c->W * sizeof *bits);
    set_eog(c, s, bits);
    gwalker w;
    gw_init(&w, c->g);
    for (int32_t t = 0; t < c->V; t++) {
        size_t len;
        const char *p = asn_vocab_piece(c->v, t, 0, &len);
        if (!len || asn_vocab_is_eog(c->v, t))
            continue;
        w.n_nodes = 0, w.n_sets = 0;
        int cur = gw_load(&w, s), m = w.n_sets - cur;
        for (size_t i = 0; i < len && m; i++) {
            int next = w.n_sets;
            gw_advance(&w, cur, m, (unsigned char)p[i]);
            cur = next, m = w.n_sets - next;
        }
        if (m)
            bit_set(bits, t);
    }
    gw_free(&w);
}

/* ------------------------------------------------------------- tokens */

int asn_constraint_accept(const asn_constraint *c, asn_gstate *s, int32_t token)
{
    if (token < 0 || token >= c->V)
        return -1;
    if (asn_vocab_is_eog(c->v, token))
        return asn_gstate_complete(s) ? 0 : -1;
    size_t len;
    const char *p = asn_vocab_piece(c->v, token, 0, &len);
    if (!len)
        return -1;
    return asn_gstate_advance(c->g, s, p, len);
}

int asn_constraint_state_after(asn_constraint *c, const int32_t *ids, int n, asn_gstate *s,
                               int *refused)
{
    const uint32_t *key = (const uint32_t *)ids;
    uint64_t h = wmap_hash(key, n);
    uint64_t hp = n ? wmap_hash(key, n - 1) : 0;
    int from = 0;
    pthread_mutex_lock(&c->mu);
    const seqent *hit = wmap_get(&c->seqs, key, n, h);
    if (hit) {
        asn_gstate_copy(s, &hit->st);
        pthread_mutex_unlock(&c->mu);
        return 0;
    }
    hit = n ? wmap_get(&c->seqs, key, n - 1, hp) : NULL;
    if (hit) {
        asn_gstate_copy(s, &hit->st);
        from = n - 1;
    }
    pthread_mutex_unlock(&c->mu);
    if (!hit)
        asn_gstate_start(c->g, s);
    for (int i = from; i < n; i++)
        if (asn_constraint_accept(c, s, ids[i])) {
            if (refused)
                *refused = i;
            return -1;
        }
    seqent *e = asn_xcalloc(1, sizeof *e);
    asn_gstate_copy(&e->st, s);
    pthread_mutex_lock(&c->mu);
    if (c->seqs.used >= MAX_SEQS)
        wmap_clear(&c->seqs);
    wmap_put(&c->seqs, key, n, h, e);
    pthread_mutex_unlock(&c->mu);
    return 0;
}
