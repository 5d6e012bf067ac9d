/* dfa.c — deterministic automata over code points, for what a GBNF text of
 * a regex cannot say by itself: a pattern together with a length bound
 * (the automaton times a counter of code points), and the sets of names
 * that patternProperties' patterns, declared names and
 * additionalProperties share out (products: and, or, and not). The
 * automaton of a regex is regex.c's Thompson automaton made deterministic
 * by the subset construction on the ranges its classes split the code
 * points into. Sizes are bounded: a schema past them is refused. */
#include "grammar_internal.h"
#include "gtext.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_DFA = 4000, MAX_RULES = 20000 };

static gdfa *dfa_new(void)
{
    return asn_xcalloc(1, sizeof(gdfa));
}

static int dfa_add(gdfa *d, int acc)
{
    d->acc = asn_xrealloc(d->acc, (size_t)(d->n + 1));
    d->tr = asn_xrealloc(d->tr, (size_t)(d->n + 1) * sizeof *d->tr);
    d->ntr = asn_xrealloc(d->ntr, (size_t)(d->n + 1) * sizeof *d->ntr);
    d->acc[d->n] = (unsigned char)acc, d->tr[d->n] = NULL, d->ntr[d->n] = 0;
    return d->n++;
}

/* Appends a transition, merged with the last one when they touch and
 * share the target (transitions are added in increasing order). */
static void tr_add(gdfa *d, int q, uint32_t lo, uint32_t hi, int to)
{
    int n = d->ntr[q];
    if (n && d->tr[q][n - 1].to == to && d->tr[q][n - 1].hi + 1 == lo) {
        d->tr[q][n - 1].hi = hi;
        return;
    }
    d->tr[q] = asn_xrealloc(d->tr[q], (size_t)(n + 1) * sizeof **d->tr);
    d->tr[q][n] = (gdfa_tr){lo, hi, to};
    d->ntr[q]++;
}

void gdfa_free(gdfa *d)
{
    if (!d)
        return;
    for (int i = 0; i < d->n; i++)
        free(d->tr[i]);
    free(d->tr), free(d->ntr), free(d->acc), free(d);
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return x < y ? -1 : x > y;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* The states reached from set[0..n) by empty edges (set grows; mark is
 * scratch of a->n zeros, left zero). Sorted. */
static int closure(const gnfa *a, int **set, int n, unsigned char *mark)
{
    int cap = n + 16;
    int *v = asn_xmalloc((size_t)cap * sizeof *v);
    int m = 0;
    int *stack = asn_xmalloc((size_t)(a->n + 1) * sizeof *stack), sp = 0;
    for (int i = 0; i < n; i++)
        if (!mark[(*set)[i]])
            mark[(*set)[i]] = 1, stack[sp++] = (*set)[i];
    while (sp) {
        int x = stack[--sp];
        if (m == cap)
            cap *= 2, v = asn_xrealloc(v, (size_t)cap * sizeof *v);
        v[m++] = x;
        for (int j = 0; j < a->s[x].neps; j++) {
            int y = a->s[x].eps[j];
            if (!mark[y])
                mark[y] = 1, stack[sp++] = y;
        }
    }
    for (int i = 0; i < m; i++)
        mark[v[i]] = 0;
    qsort(v, (size_t)m, sizeof *v, cmp_int);
    free(stack);
    free(*set);
    *set = v;
    return m;
}

/* The subset construction. */
static gdfa *determinize(const gnfa *a, asn_err *e)
{
    unsigned char *mark = asn_xcalloc((size_t)a->n + 1, 1);
    int **sets = NULL, *nsets = NULL;
    wmap seen = {0};
    gdfa *d = dfa_new();
    int *start = asn_xmalloc(sizeof *start);
    start[0] = a->start;
    int ns = closure(a, &start, 1, mark);
    sets = asn_xmalloc(sizeof *sets), nsets = asn_xmalloc(sizeof *nsets);
    sets[0] = start, nsets[0] = ns;
    wmap_put(&seen, (const uint32_t *)start, ns, wmap_hash((const uint32_t *)start, ns), (void *)(intptr_t)1);
    int acc0 = 0;
    for (int i = 0; i < ns; i++)
        acc0 |= start[i] == a->accept;
    dfa_add(d, acc0);
    int bad = 0;
    for (int q = 0; q < d->n && !bad; q++) {
        /* the boundaries of the classes leaving this set */
        int nb = 0, capb = 16;
        uint32_t *bd = asn_xmalloc((size_t)capb * sizeof *bd);
        for (int i = 0; i < nsets[q]; i++) {
            const gnfa_state *x = &a->s[sets[q][i]];
            for (int j = 0; j < x->nr; j++) {
                if (nb + 2 > capb)
                    capb *= 2, bd = asn_xrealloc(bd, (size_t)capb * sizeof *bd);
                bd[nb++] = x->r[2 * j], bd[nb++] = x->r[2 * j + 1] + 1;
            }
        }
        qsort(bd, (size_t)nb, sizeof *bd, cmp_u32);
        for (int b = 0; b + 1 < nb && !bad; b++) {
            if (bd[b] == bd[b + 1])
                continue;
            uint32_t lo = bd[b], hi = bd[b + 1] - 1;
            int *t = NULL, nt = 0;
            for (int i = 0; i < nsets[q]; i++) {
                const gnfa_state *x = &a->s[sets[q][i]];
                for (int j = 0; j < x->nr; j++)
                    if (x->r[2 * j] <= lo && hi <= x->r[2 * j + 1]) {
                        t = asn_xrealloc(t, (size_t)(nt + 1) * sizeof *t);
                        t[nt++] = x->to;
                        break;
                    }
            }
            if (!nt)
                continue;
            nt = closure(a, &t, nt, mark);
            uint64_t h = wmap_hash((const uint32_t *)t, nt);
            intptr_t id = (intptr_t)wmap_get(&seen, (const uint32_t *)t, nt, h);
            if (!id) {
                if (d->n >= MAX_DFA) {
                    asn_err_set(e, "pattern needs more than %d automaton states", MAX_DFA);
                    bad = 1;
                    free(t);
                    break;
                }
                int acc = 0;
                for (int i = 0; i < nt; i++)
                    acc |= t[i] == a->accept;
                id = dfa_add(d, acc) + 1;
                sets = asn_xrealloc(sets, (size_t)d->n * sizeof *sets);
                nsets = asn_xrealloc(nsets, (size_t)d->n * sizeof *nsets);
                sets[id - 1] = t, nsets[id - 1] = nt;
                wmap_put(&seen, (const uint32_t *)t, nt, h, (void *)id);
            } else {
                free(t);
            }
            tr_add(d, q, lo, hi, (int)id - 1);
        }
        free(bd);
    }
    for (int i = 0; i < d->n; i++)
        free(sets[i]);
    free(sets), free(nsets), free(mark);
    wmap_clear(&seen);
    if (bad) {
        gdfa_free(d);
        return NULL;
    }
    return d;
}

/* The target of q on code point c, or -1 (dead). */
static int step_from(const gdfa *d, int q, uint32_t c)
{
    if (q < 0)
        return -1;
    for (int j = 0; j < d->ntr[q]; j++)
        if (d->tr[q][j].lo <= c && c <= d->tr[q][j].hi)
            return d->tr[q][j].to;
    return -1;
}

/* The automaton of the text alone: d's after GNFA_BOT, accepting where
 * GNFA_EOT leads to acceptance, on code points only. */
static gdfa *strip_ends(const gdfa *d)
{
    int n = d->n, *map = asn_xmalloc((size_t)n * sizeof *map), *order = asn_xmalloc((size_t)n * sizeof *order);
    for (int q = 0; q < n; q++)
        map[q] = -1;
    gdfa *o = dfa_new();
    int s0 = step_from(d, 0, GNFA_BOT), m = 0;
    if (s0 < 0) {
        dfa_add(o, 0);
        free(map), free(order);
        return o;
    }
    map[s0] = 0, order[m++] = s0;
    for (int i = 0; i < m; i++) {
        int q = order[i], x = step_from(d, q, GNFA_EOT);
        dfa_add(o, x >= 0 && d->acc[x]);
        for (int j = 0; j < d->ntr[q]; j++) {
            const gdfa_tr *t = &d->tr[q][j];
            if (t->lo > 0x10FFFF)
                continue;
            if (map[t->to] < 0)
                map[t->to] = m, order[m++] = t->to;
        }
    }
    for (int i = 0; i < m; i++) {
        int q = order[i];
        for (int j = 0; j < d->ntr[q]; j++) {
            const gdfa_tr *t = &d->tr[q][j];
            if (t->lo <= 0x10FFFF)
                tr_add(o, i, t->lo, t->hi > 0x10FFFF ? 0x10FFFF : t->hi, map[t->to]);
        }
    }
    free(map), free(order);
    return o;
}

gdfa *gdfa_regex(const char *pattern, asn_err *e)
{
    gnfa a;
    if (gnfa_regex(pattern, &a, e))
        return NULL;
    gdfa *d = determinize(&a, e);
    gnfa_free(&a);
    if (!d)
        return NULL;
    gdfa *o = strip_ends(d);
    gdfa_free(d);
    return o;
}

gdfa *gdfa_any(void)
{
    gdfa *d = dfa_new();
    dfa_add(d, 1);
    tr_add(d, 0, 0, 0x10FFFF, 0);
    return d;
}

gdfa *gdfa_names(const char *const *names, int n)
{
    gdfa *d = dfa_new();
    dfa_add(d, 0);
    for (int k = 0; k < n; k++) {
        const unsigned char *s = (const unsigned char *)names[k];
        int q = 0;
        while (*s) {
            uint32_t c = *s;
            int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : 4;
            if (len > 1) {
                c &= len == 2 ? 0x1F : len == 3 ? 0x0F : 0x07;
                for (int j = 1; j < len && s[j]; j++)
                    c = (c << 6) | (s[j] & 0x3F);
            }
            for (int j = 0; j < len && *s; j++)
                s++;
            int next = -1, at = d->ntr[q];
            for (int j = 0; j < d->ntr[q]; j++) {
                if (d->tr[q][j].lo == c)
                    next = d->tr[q][j].to;
                if (at == d->ntr[q] && d->tr[q][j].lo > c)
                    at = j;
            }
            if (next < 0) { /* insert in order */
                next = dfa_add(d, 0);
                d->tr[q] = asn_xrealloc(d->tr[q], (size_t)(d->ntr[q] + 1) * sizeof **d->tr);
                memmove(&d->tr[q][at + 1], &d->tr[q][at], (size_t)(d->ntr[q] - at) * sizeof **d->tr);
                d->tr[q][at] = (gdfa_tr){c, c, next};
                d->ntr[q]++;
            }
            q = next;
        }
        d->acc[q] = 1;
    }
    return d;
}

static int pair_acc(const gdfa *a, const gdfa *b, int i, int j, int op)
{
    int x = i >= 0 && a->acc[i], y = j >= 0 && b->acc[j];
    return op == GDFA_AND ? x && y : op == GDFA_OR ? x || y : x && !y;
}

gdfa *gdfa_product(const gdfa *a, const gdfa *b, int op, asn_err *e)
{
    gdfa *d = dfa_new();
    wmap seen = {0};
    int *pi = asn_xmalloc(sizeof *pi), *pj = asn_xmalloc(sizeof *pj);
    pi[0] = 0, pj[0] = 0;
    uint32_t key[2] = {1, 1};
    wmap_put(&seen, key, 2, wmap_hash(key, 2), (void *)(intptr_t)1);
    dfa_add(d, pair_acc(a, b, 0, 0, op));
    int bad = 0;
    for (int q = 0; q < d->n && !bad; q++) {
        int i = pi[q], j = pj[q];
        int nb = 0;
        uint32_t *bd = asn_xmalloc((size_t)(2 * ((i >= 0 ? a->ntr[i] : 0) + (j >= 0 ? b->ntr[j] : 0)) + 1) * sizeof *bd);
        for (int k = 0; i >= 0 && k < a->ntr[i]; k++)
            bd[nb++] = a->tr[i][k].lo, bd[nb++] = a->tr[i][k].hi + 1;
        for (int k = 0; j >= 0 && k < b->ntr[j]; k++)
            bd[nb++] = b->tr[j][k].lo, bd[nb++] = b->tr[j][k].hi + 1;
        qsort(bd, (size_t)nb, sizeof *bd, cmp_u32);
        for (int k = 0; k + 1 < nb; k++) {
            if (bd[k] == bd[k + 1])
                continue;
            int ti = step_from(a, i, bd[k]), tj = step_from(b, j, bd[k]);
            if ((ti < 0 && tj < 0) || (op == GDFA_AND && (ti < 0 || tj < 0)) || (op == GDFA_ANDNOT && ti < 0))
                continue;
            key[0] = (uint32_t)(ti + 1), key[1] = (uint32_t)(tj + 1);
            uint64_t h = wmap_hash(key, 2);
            intptr_t id = (intptr_t)wmap_get(&seen, key, 2, h);
            if (!id) {
                if (d->n >= MAX_DFA) {
                    asn_err_set(e, "names' patterns need more than %d automaton states", MAX_DFA);
                    bad = 1;
                    break;
                }
                id = dfa_add(d, pair_acc(a, b, ti, tj, op)) + 1;
                pi = asn_xrealloc(pi, (size_t)d->n * sizeof *pi);
                pj = asn_xrealloc(pj, (size_t)d->n * sizeof *pj);
                pi[id - 1] = ti, pj[id - 1] = tj;
                wmap_put(&seen, key, 2, h, (void *)id);
            }
            tr_add(d, q, bd[k], bd[k + 1] - 1, (int)id - 1);
        }
        free(bd);
    }
    free(pi), free(pj);
    wmap_clear(&seen);
    if (bad) {
        gdfa_free(d);
        return NULL;
    }
    return d;
}

/* live[q]: an accepting state is reachable from q. */
static unsigned char *live_states(const gdfa *d)
{
    unsigned char *live = asn_xcalloc((size_t)d->n + 1, 1);
    for (int q = 0; q < d->n; q++)
        live[q] = d->acc[q];
    for (int changed = 1; changed;) {
        changed = 0;
        for (int q = 0; q < d->n; q++)
            for (int j = 0; !live[q] && j < d->ntr[q]; j++)
                if (live[d->tr[q][j].to])
                    live[q] = 1, changed = 1;
    }
    return live;
}

int gdfa_empty(const gdfa *d)
{
    unsigned char *live = live_states(d);
    int empty = !live[0];
    free(live);
    return empty;
}

/* The shortest and longest accepted lengths (*max = -1: no bound). */
static void length_range(const gdfa *d, const unsigned char *live, long long *min, long long *max)
{
    /* shortest: breadth first; longest: none when a live state is on a
     * cycle, else the longest path (at most n steps) */
    int *dist = asn_xmalloc((size_t)d->n * sizeof *dist), *queue = asn_xmalloc((size_t)d->n * sizeof *queue);
    for (int q = 0; q < d->n; q++)
        dist[q] = -1;
    int h = 0, t = 0;
    dist[0] = 0, queue[t++] = 0;
    *min = -1;
    while (h < t) {
        int q = queue[h++];
        if (d->acc[q] && *min < 0)
            *min = dist[q];
        for (int j = 0; j < d->ntr[q]; j++)
            if (dist[d->tr[q][j].to] < 0)
                dist[d->tr[q][j].to] = dist[q] + 1, queue[t++] = d->tr[q][j].to;
    }
    /* longest[q] by relaxation n times; still changing after n: a cycle */
    long long *lg = asn_xmalloc((size_t)d->n * sizeof *lg);
    for (int q = 0; q < d->n; q++)
        lg[q] = live[q] && d->acc[q] ? 0 : -1;
    int changed = 1;
    for (int round = 0; changed && round <= d->n; round++) {
        changed = 0;
        for (int q = 0; q < d->n; q++)
            for (int j = 0; live[q] && j < d->ntr[q]; j++) {
                long long x = lg[d->tr[q][j].to];
                if (x >= 0 && x + 1 > lg[q])
                    lg[q] = x + 1, changed = 1;
            }
    }
    *max = changed ? -1 : lg[0];
    free(lg), free(dist), free(queue);
}

/* cls repeated m to M times (M < 0: no bound) then the closing quote,
 * into b; past GBNF's limit of 2000 in blocks of 1000 (rule bname, added
 * to rules). */
static int tail_text(asn_sbuf *rules, asn_sbuf *b, const char *cls, const char *bname, long long m, long long M)
{
    enum { B = 1000 };
    if (m / B > 2000 || (M >= 0 && (M - m) / B > 2000))
        return -1;
    if (m > 2000 || M > 2000)
        asn_sbuf_addf(rules, "%s ::= %s{%d}\n", bname, cls, B);
    if (m > 2000) {
        long long mb = m / B;
        asn_sbuf_addf(b, "%s{%lld} ", bname, mb);
        m -= mb * B, M = M >= 0 ? M - mb * B : M;
    }
    if (M < 0)
        asn_sbuf_addf(b, "%s{%lld,} \"\\\"\"", cls, m);
    else if (M <= 2000)
        asn_sbuf_addf(b, "%s{%lld,%lld} \"\\\"\"", cls, m, M);
    else {
        long long n = M - m, q = n / B, r = n % B;
        asn_sbuf_addf(b, "%s{%lld} (%s{0,%lld} %s{0,%d} | %s{%lld} %s{0,%lld}) \"\\\"\"", cls, m, bname, q - 1, cls,
                      B - 1, bname, q, cls, r);
    }
    return 0;
}

int gdfa_gbnf(const gdfa *d, long long lo, long long hi, const char *name, asn_sbuf *rules, asn_err *e)
{
    unsigned char *live = live_states(d);
    /* tail[q]: q accepts and loops on itself only (its live transitions
     * all lead back to it): what is left is a count of one class, written
     * as a repetition instead of one state per count */
    unsigned char *tail = asn_xcalloc((size_t)d->n + 1, 1);
    for (int q = 0; q < d->n; q++) {
        int self = 0, other = 0;
        for (int j = 0; j < d->ntr[q]; j++)
            if (live[d->tr[q][j].to])
                self |= d->tr[q][j].to == q, other |= d->tr[q][j].to != q;
        tail[q] = live[q] && d->acc[q] && self && !other;
    }
    if (live[0]) {
        long long mn, mx;
        length_range(d, live, &mn, &mx);
        if (mn >= lo && (hi < 0 || (mx >= 0 && mx <= hi)))
            lo = 0, hi = -1; /* the bounds hold for every text of the pattern */
    }
    /* states (q, k): k code points so far (k stops at lo when hi < 0) */
    wmap seen = {0};
    int n = 0, cap = 64;
    int *sq = asn_xmalloc((size_t)cap * sizeof *sq);
    long long *sk = asn_xmalloc((size_t)cap * sizeof *sk);
    int *edges = NULL, ne = 0, cape = 0; /* (from, trans index, to) */
    int bad = 0;
    if (live[0]) {
        uint32_t key[3] = {0, 0, 0};
        wmap_put(&seen, key, 3, wmap_hash(key, 3), (void *)(intptr_t)1);
        sq[0] = 0, sk[0] = 0, n = 1;
    }
    for (int s = 0; s < n && !bad; s++) {
        int q = sq[s];
        long long k = sk[s], k2 = hi >= 0 ? k + 1 : (k + 1 < lo ? k + 1 : lo);
        if ((hi >= 0 && k2 > hi) || tail[q])
            continue;
        for (int j = 0; j < d->ntr[q]; j++) {
            int to = d->tr[q][j].to;
            if (!live[to])
                continue;
            uint32_t key[3] = {(uint32_t)to, (uint32_t)k2, (uint32_t)(k2 >> 32)};
            uint64_t h = wmap_hash(key, 3);
            intptr_t id = (intptr_t)wmap_get(&seen, key, 3, h);
            if (!id) {
                if (n >= MAX_RULES) {
                    asn_err_set(e, "pattern with a length bound needs more than %d rules", MAX_RULES);
                    bad = 1;
                    break;
                }
                if (n == cap)
                    cap *= 2, sq = asn_xrealloc(sq, (size_t)cap * sizeof *sq), sk = asn_xrealloc(sk, (size_t)cap * sizeof *sk);
                sq[n] = to, sk[n] = k2;
                id = ++n;
                wmap_put(&seen, key, 3, h, (void *)id);
            }
            if (ne + 3 > cape)
                cape = cape ? 2 * cape : 192, edges = asn_xrealloc(edges, (size_t)cape * sizeof *edges);
            edges[ne++] = s, edges[ne++] = j, edges[ne++] = (int)id - 1;
        }
    }
    wmap_clear(&seen);
    if (bad) {
        free(sq), free(sk), free(edges), free(live), free(tail);
        return -1;
    }
    /* productive: an accepting state of length lo..hi is reachable */
    unsigned char *prod = asn_xcalloc((size_t)n + 1, 1);
    asn_sbuf blocks = {0}; /* rules of tail_text */
    char **cls = NULL; /* the distinct classes, each a rule nameC<i> */
    int ncls = 0;
    for (int s = 0; s < n; s++)
        prod[s] = (d->acc[sq[s]] && sk[s] >= lo) || (tail[sq[s]] && (hi < 0 || lo <= hi));
    for (int changed = 1; changed;) {
        changed = 0;
        for (int x = 0; x < ne; x += 3)
            if (!prod[edges[x]] && prod[edges[x + 2]])
                prod[edges[x]] = 1, changed = 1;
    }
    if (!n || !prod[0]) {
        asn_sbuf_addf(rules, "%s ::= [^\\x00-\\U0010FFFF]\n", name);
    } else {
        /* one rule per productive state; its edges are contiguous in edges[] */
        int x = 0;
        for (int s = 0; s < n; s++) {
            if (!prod[s]) {
                while (x < ne && edges[x] == s)
                    x += 3;
                continue;
            }
            if (s)
                asn_sbuf_addf(rules, "%sq%d ::= ", name, s);
            else
                asn_sbuf_addf(rules, "%s ::= ", name);
            int alt = 0;
            if (tail[sq[s]]) {
                uint32_t *rg = NULL;
                int nr = 0, q = sq[s];
                for (int j = 0; j < d->ntr[q]; j++)
                    if (d->tr[q][j].to == q) {
                        rg = asn_xrealloc(rg, (size_t)(nr + 1) * 2 * sizeof *rg);
                        rg[2 * nr] = d->tr[q][j].lo, rg[2 * nr + 1] = d->tr[q][j].hi, nr++;
                    }
                asn_sbuf cb = {0}, tb = {0};
                asn_sbuf_adds(&cb, "(");
                sb_json_class(&cb, rg, nr);
                asn_sbuf_adds(&cb, ")");
                char bname[64];
                snprintf(bname, sizeof bname, "%sb%d", name, s);
                long long m = lo - sk[s] > 0 ? lo - sk[s] : 0, M = hi < 0 ? -1 : hi - sk[s];
                int too = tail_text(&blocks, &tb, cb.buf, bname, m, M);
                if (!too)
                    asn_sbuf_addf(rules, "%s\n", tb.buf);
                free(rg), free(cb.buf), free(tb.buf);
                if (too) {
                    bad = 1;
                    asn_err_set(e, "pattern with a length bound: a count above 2000000 is not supported");
                    break;
                }
                while (x < ne && edges[x] == s)
                    x += 3;
                continue;
            }
            if (d->acc[sq[s]] && sk[s] >= lo)
                asn_sbuf_adds(rules, "\"\\\"\""), alt = 1;
            /* the classes to each target together */
            int x0 = x;
            while (x < ne && edges[x] == s)
                x += 3;
            for (int y = x0; y < x; y += 3) {
                int t = edges[y + 2], first = 1;
                for (int z = x0; z < y; z += 3)
                    first &= edges[z + 2] != t;
                if (!first || !prod[t])
                    continue;
                uint32_t *rg = NULL;
                int nr = 0;
                for (int z = y; z < x; z += 3)
                    if (edges[z + 2] == t) {
                        const gdfa_tr *tr = &d->tr[sq[s]][edges[z + 1]];
                        rg = asn_xrealloc(rg, (size_t)(nr + 1) * 2 * sizeof *rg);
                        rg[2 * nr] = tr->lo, rg[2 * nr + 1] = tr->hi, nr++;
                    }
                asn_sbuf cb = {0};
                sb_json_class(&cb, rg, nr);
                int ci = 0;
                while (ci < ncls && strcmp(cls[ci], cb.buf))
                    ci++;
                if (ci == ncls) {
                    cls = asn_xrealloc(cls, (size_t)(ncls + 1) * sizeof *cls);
                    cls[ncls++] = cb.buf;
                } else {
                    free(cb.buf);
                }
                asn_sbuf_addf(rules, "%s%sc%d", alt ? " | " : "", name, ci);
                if (t)
                    asn_sbuf_addf(rules, " %sq%d", name, t);
                else
                    asn_sbuf_addf(rules, " %s", name);
                free(rg);
                alt = 1;
            }
            asn_sbuf_adds(rules, "\n");
        }
        for (int i = 0; i < ncls; i++)
            asn_sbuf_addf(rules, "%sc%d ::= %s\n", name, i, cls[i]);
        if (blocks.len)
            asn_sbuf_add(rules, blocks.buf, blocks.len);
    }
    for (int i = 0; i < ncls; i++)
        free(cls[i]);
    free(cls);
    free(tail), free(blocks.buf);
    free(prod), free(sq), free(sk), free(edges), free(live);
    return bad ? -1 : 0;
}
