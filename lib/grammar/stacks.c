/* stacks.c — the pushdown matcher: a state is a set of stacks of grammar
 * positions (the top is always a byte set to match next; below it the
 * positions to return to), advanced one byte at a time as llama.cpp's
 * llama_grammar_advance_stack does. Stacks live as linked nodes in an
 * arena while they are worked on, and as canonical word strings
 * (asn_gstate) between tokens. Also the word-keyed hash map the caches use. */
#include "grammar_internal.h"

#include <stdlib.h>
#include <string.h>

/* --------------------------------------------------------------- arena */

void gw_init(gwalker *w, const asn_grammar *g)
{
    memset(w, 0, sizeof *w);
    w->g = g;
}

void gw_free(gwalker *w)
{
    free(w->nodes);
    free(w->sets);
    free(w->seen);
}

static int32_t node_new(gwalker *w, uint32_t pos, int32_t parent)
{
    if (!w->seen)
        w->seen = asn_xcalloc(GW_SEEN, sizeof *w->seen);
    uint32_t h = (pos * 0x9E3779B1u ^ (uint32_t)parent * 0x85EBCA77u);
    int32_t *slot = &w->seen[(h ^ h >> 15) & (GW_SEEN - 1)];
    int32_t id = *slot - 1; /* a node cut back since, or another (pos, parent): not it */
    if (id >= 0 && id < w->n_nodes && w->nodes[id].pos == pos && w->nodes[id].parent == parent)
        return id;
    if (w->n_nodes == w->cap_nodes) {
        w->cap_nodes = w->cap_nodes ? 2 * w->cap_nodes : 256;
        w->nodes = asn_xrealloc(w->nodes, (size_t)w->cap_nodes * sizeof *w->nodes);
    }
    w->nodes[w->n_nodes] = (snode){pos, parent};
    *slot = w->n_nodes + 1;
    return w->n_nodes++;
}

static void set_push(gwalker *w, int32_t x)
{
    if (w->n_sets == w->cap_sets) {
        w->cap_sets = w->cap_sets ? 2 * w->cap_sets : 256;
        w->sets = asn_xrealloc(w->sets, (size_t)w->cap_sets * sizeof *w->sets);
    }
    w->sets[w->n_sets++] = x;
}

void gw_add(gwalker *w, int start, int32_t entry)
{
    for (int i = start; i < w->n_sets; i++) {
        int32_t y = w->sets[i];
        if (y == entry)
            return;
        if (y >= 0 && entry >= 0 && w->nodes[y].pos == w->nodes[entry].pos &&
            w->nodes[y].parent == w->nodes[entry].parent)
            return;
    }
    set_push(w, entry);
}

/* Adds (pos, parent) with pos a byte set, reusing an equal entry. */
static void add_top(gwalker *w, int start, uint32_t pos, int32_t parent)
{
    for (int i = start; i < w->n_sets; i++) {
        int32_t y = w->sets[i];
        if (y >= 0 && w->nodes[y].pos == pos && w->nodes[y].parent == parent)
            return;
    }
    set_push(w, node_new(w, pos, parent));
}

void gw_expand(gwalker *w, int start, uint32_t pos, int32_t parent)
{
    const asn_grammar *g = w->g;
    for (;;) {
        gelem el = g->el[pos];
        if (el.type == E_BYTES) {
            add_top(w, start, pos, parent);
            return;
        }
        if (el.type == E_END) {
            if (parent == ST_ROOT) {
                gw_add(w, start, ST_COMPLETE);
                return;
            }
            if (parent == ST_BOTTOM) {
                gw_add(w, start, ST_BOTTOM);
                return;
            }
            const snode *p = &w->nodes[parent];
            if (g->el[p->pos].type == E_BYTES) { /* the parent node itself is the new top */
                gw_add(w, start, parent);
                return;
            }
            pos = p->pos;
            parent = p->parent;
            continue;
        }
        /* a reference: push the return position unless it ends the alternative */
        uint32_t ret = pos + 1;
        int32_t np = g->el[ret].type == E_END ? parent : node_new(w, ret, parent);
        int r = (int)el.arg;
        for (int a = g->alt_off[r]; a < g->alt_off[r + 1]; a++)
            gw_expand(w, start, (uint32_t)g->alt_start[a], np);
        return;
    }
}

void gw_advance(gwalker *w, int start, int n, unsigned char b)
{
    int out = w->n_sets;
    for (int i = start; i < start + n; i++) {
        int32_t s = w->sets[i];
        if (s < 0)
            continue;
        snode nd = w->nodes[s];
        if (gbyte_in(w->g, nd.pos, b))
            gw_expand(w, out, nd.pos + 1, nd.parent);
    }
}

int32_t gw_push_stack(gwalker *w, const uint32_t *pos, int n, int32_t below)
{
    if (!n)
        return below == ST_BOTTOM ? ST_BOTTOM : ST_COMPLETE;
    int32_t parent = below;
    for (int i = 0; i < n; i++)
        parent = node_new(w, pos[i], parent);
    return parent;
}

int gw_load(gwalker *w, const asn_gstate *s)
{
    int start = w->n_sets;
    if (!s->n)
        return start;
    const uint32_t *p = s->w + 1;
    for (uint32_t k = 0; k < s->w[0]; k++) {
        int len = (int)p[0];
        set_push(w, gw_push_stack(w, p + 1, len, ST_ROOT));
        p += 1 + len;
    }
    return start;
}

/* ----------------------------------------------------------- canonical */

typedef struct span {
    const uint32_t *p;
    int n;
} span;

static int cmp_span(const void *a, const void *b)
{
    const span *x = a, *y = b;
    if (x->n != y->n)
        return x->n < y->n ? -1 : 1;
    for (int i = 0; i < x->n; i++)
        if (x->p[i] != y->p[i])
            return x->p[i] < y->p[i] ? -1 : 1;
    return 0;
}

void gw_store(gwalker *w, int start, int n, asn_gstate *s)
{
    /* positions of every stack, bottom first, into one buffer */
    size_t cap = 64, used = 0;
    uint32_t *buf = asn_xmalloc(cap * sizeof *buf);
    int *off = asn_xmalloc((size_t)(n ? n : 1) * sizeof *off);
    int *len = asn_xmalloc((size_t)(n ? n : 1) * sizeof *len);
    for (int i = 0; i < n; i++) {
        int32_t x = w->sets[start + i];
        int d = 0;
        for (int32_t y = x; y >= 0; y = w->nodes[y].parent)
            d++;
        if (used + (size_t)d > cap) {
            while (used + (size_t)d > cap)
                cap *= 2;
            buf = asn_xrealloc(buf, cap * sizeof *buf);
        }
        off[i] = (int)used, len[i] = d;
        int k = d;
        for (int32_t y = x; y >= 0; y = w->nodes[y].parent)
            buf[used + (size_t)--k] = w->nodes[y].pos;
        used += (size_t)d;
    }
    span *sp = asn_xmalloc((size_t)(n ? n : 1) * sizeof *sp);
    for (int i = 0; i < n; i++)
        sp[i] = (span){buf + off[i], len[i]};
    qsort(sp, (size_t)n, sizeof *sp, cmp_span);
    int m = 0;
    size_t words = 1;
    for (int i = 0; i < n; i++)
        if (!m || cmp_span(&sp[m - 1], &sp[i]))
            sp[m++] = sp[i], words += 1 + (size_t)sp[i].n;
    uint32_t *out = asn_xmalloc(words * sizeof *out);
    out[0] = (uint32_t)m;
    size_t o = 1;
    for (int i = 0; i < m; i++) {
        out[o++] = (uint32_t)sp[i].n;
        memcpy(out + o, sp[i].p, (size_t)sp[i].n * sizeof *out);
        o += (size_t)sp[i].n;
    }
    free(s->w);
    s->w = out;
    s->n = (int)words;
    free(sp);
    free(off);
    free(len);
    free(buf);
}

/* -------------------------------------------------------------- states */

void asn_gstate_start(const asn_grammar *g, asn_gstate *s)
{
    gwalker w;
    gw_init(&w, g);
    s->w = NULL, s->n = 0;
    for (int a = g->alt_off[g->root]; a < g->alt_off[g->root + 1]; a++)
        gw_expand(&w, 0, (uint32_t)g->alt_start[a], ST_ROOT);
    gw_store(&w, 0, w.n_sets, s);
    gw_free(&w);
}

void asn_gstate_clear(asn_gstate *s)
{
    free(s->w);
    s->w = NULL, s->n = 0;
}

void asn_gstate_copy(asn_gstate *dst, const asn_gstate *src)
{
    uint32_t *w = asn_xmalloc((size_t)(src->n ? src->n : 1) * sizeof *w);
    if (src->n)
        memcpy(w, src->w, (size_t)src->n * sizeof *w);
    free(dst->w);
    dst->w = w, dst->n = src->n;
}

int asn_gstate_advance(const asn_grammar *g, asn_gstate *s, const char *bytes, size_t n)
{
    if (!n)
        return 0;
    gwalker w;
    gw_init(&w, g);
    int start = gw_load(&w, s), len = w.n_sets - start;
    for (size_t i = 0; i < n && len; i++) {
        int next = w.n_sets;
        gw_advance(&w, start, len, (unsigned char)bytes[i]);
        start = next, len = w.n_sets - next;
    }
    if (len)
        gw_store(&w, start, len, s);
    gw_free(&w);
    return len ? 0 : -1;
}

int asn_gstate_complete(const asn_gstate *s)
{
    /* stacks are sorted by length: the empty one comes first */
    return s->n > 1 && s->w[0] && s->w[1] == 0;
}

int asn_gstate_can_continue(const asn_gstate *s)
{
    return s->n > 1 && (s->w[0] > 1 || s->w[1] > 0);
}

/* ------------------------------------------------------------ word map */

uint64_t wmap_hash(const uint32_t *key, int n)
{
    uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t)n;
    for (int i = 0; i < n; i++) {
        h ^= key[i];
        h *= 0x100000001b3ull;
        h ^= h >> 29;
    }
    return h;
}

static wmap_ent *slot(const wmap *m, const uint32_t *key, int n, uint64_t h)
{
    size_t mask = (size_t)m->cap - 1;
    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        wmap_ent *x = &m->t[i];
        if (!x->key || (x->h == h && x->n == n && (!n || !memcmp(x->key, key, (size_t)n * sizeof *key))))
            return x;
    }
}

void *wmap_get(const wmap *m, const uint32_t *key, int n, uint64_t h)
{
    if (!m->cap)
        return NULL;
    wmap_ent *x = slot(m, key, n, h);
    return x->key ? x->val : NULL;
}

void *wmap_put(wmap *m, const uint32_t *key, int n, uint64_t h, void *val)
{
    if (2 * (m->used + 1) > m->cap) {
        wmap old = *m;
        m->cap = m->cap ? 2 * m->cap : 64;
        m->t = asn_xcalloc((size_t)m->cap, sizeof *m->t);
        m->used = 0;
        for (int i = 0; i < old.cap; i++)
            if (old.t[i].key) {
                *slot(m, old.t[i].key, old.t[i].n, old.t[i].h) = old.t[i];
                m->used++;
            }
        free(old.t);
    }
    wmap_ent *x = slot(m, key, n, h);
    if (x->key) {
        if (m->free_val)
            m->free_val(val);
        return x->val;
    }
    x->h = h, x->n = n, x->val = val;
    x->key = asn_xmalloc((size_t)(n ? n : 1) * sizeof *key);
    if (n)
        memcpy(x->key, key, (size_t)n * sizeof *key);
    m->used++;
    return val;
}

void wmap_clear(wmap *m)
{
    for (int i = 0; i < m->cap; i++)
        if (m->t[i].key) {
            free(m->t[i].key);
            if (m->free_val)
                m->free_val(m->t[i].val);
        }
    free(m->t);
    m->t = NULL, m->cap = 0, m->used = 0;
}
