/* learn/sampler_pass.h — the learned samplers' parameters, workspace and
 * passes over tokens, shared by sampler_net.c (parameters, workspace, the
 * row scan, LocalProbabilityTransform, SimpleDistributionAwareTransform,
 * dispatch) and sampler_network.c (SamplingNetwork's forward and backward
 * passes). Not a public API. */
#ifndef ASN_LEARN_SAMPLER_PASS_H
#define ASN_LEARN_SAMPLER_PASS_H

#include "asn/pool.h"
#include "asn/sampler_net.h"
#include "learn/layers.h"
#include "learn/sampler_internal.h"

#include <assert.h>
#include <string.h>

/* Tokens per block of work. Fixed (not derived from the thread count), so
 * that sums over the vocabulary do not depend on how many threads ran. */
#define CHUNK 512
/* ------------------------------------------------------------ parameters */

typedef struct mlp_off {
    size_t wg, bg, wu, bu, wd, bd;
    int in, inner, out;
} mlp_off;

typedef struct blk_off {
    size_t qkv_w, qkv_b, o_w, o_b, n1_w, n1_b, n2_w, n2_b;
    mlp_off ffn;
} blk_off;

enum { INIT_UNIFORM, INIT_CONST };
typedef struct tinit {
    int kind;
    float bound;   /* INIT_UNIFORM: +-bound */
    float v[2];    /* INIT_CONST: element i gets v[min(i, 1)] */
} tinit;

struct asn_sampler {
    asn_sampler_config cfg;
    int nt, cap_t;
    asn_sampler_tensor *t;
    tinit *init;
    size_t np;
    float *p, *g;
    /* LOCAL: mlp; DIST: global_mlp; NETWORK: encoder.mlp */
    mlp_off mlp;
    size_t tr_scale, tr_thr;  /* LOCAL truncation_scale, truncation_threshold */
    size_t loc_w, loc_b;      /* DIST local_mlp.0 */
    size_t tr_params;         /* DIST, static truncation */
    size_t th_w, th_b;        /* DIST, dynamic truncation_head */
    size_t eq_tau, eq_gw, eq_gb; /* EQUI temperature_scale, gate.weight, gate.bias */
    blk_off *blk;             /* NETWORK */
    mlp_off thead, trhead, shead;
};

/* A view of an MLP's parameters (or gradients) in the flat array `base`. */
static inline asn_nn_mlp mlp_view(const mlp_off *o, const float *base)
{
    float *b = (float *)base;
    asn_nn_mlp m = {o->in, o->inner, o->out, b + o->wg, b + o->bg, b + o->wu, b + o->bu, b + o->wd, b + o->bd};
    return m;
}

/* ------------------------------------------------------------- workspace */

typedef struct arena {
    float *base;
    size_t used, cap;
} arena;

/* n floats from a thread's arena, 64-byte aligned; the arena is sized for
 * the largest step (arena_floats). */
static inline float *arena_get(arena *a, size_t n)
{
    size_t at = (a->used + 15) & ~(size_t)15;
    assert(at + n <= a->cap);
    a->used = at + n;
    return a->base + at;
}

struct asn_sampler_ws {
    asn_sampler_config cfg;
    size_t np;
    int train;
    /* the current row */
    int ready;               /* a forward pass on a train workspace completed */
    int V, n;                /* vocabulary, finite tokens */
    const float *x;          /* the finite logits (the caller's row when all are finite) */
    double lse;              /* log-sum-exp of the finite logits */
    float xmax, xmin;        /* the largest and smallest of them */
    float stats[2];          /* DIST: max log-probability, entropy */
    float scale, thr;        /* truncation scale and threshold of the row */
    float mult;              /* NETWORK: multiplier */
    /* NETWORK on representatives (sampler_fast.c): row i stands for w[i]
     * tokens in every sum over the vocabulary, the mean divides by n_mean,
     * and the pass leaves each row's l' in lmod_out instead of outputs */
    const float *w;
    double n_mean;
    float *lmod_out;
    void *fast;              /* sampler_fast.c's state, freed by fast_free */
    void (*fast_free)(void *);
    int step;                /* EQUI: the generation step of the rows */
    asn__equi_state *equi;   /* EQUI: sampler_equi.c's state */
    /* per token (capacity cap_v) */
    int cap_v;
    float *xbuf;             /* the finite logits when some are -inf */
    int32_t *idx;            /* their positions (NULL use: all finite) */
    int compact;
    float *lp, *dlp;
    float *xs;               /* NETWORK: block inputs, slots of n x d */
    float *qf;               /* NETWORK: phi(q) of the current block */
    float *kv;               /* NETWORK backward: phi(k) | v of the current block */
    float *dq, *dh;          /* NETWORK backward */
    /* per block of tokens */
    int cap_chunks;
    size_t part_w;
    double *part;            /* partial sums, part_w per block of tokens */
    double *part_dlp;        /* sum of d loss / d lp per block of tokens */
    int cap_scan;
    asn_nn_lse *scan;
    int64_t *scan_count;
    int *scan_bad;
    /* NETWORK: per layer and head state */
    float *M;                /* n_blocks x d x (d + H) */
    float *dkv, *dks;        /* d x d, d */
    float *c;                /* pooled context, d */
    float *tb_g, *tb_u;      /* tail biases (transformation head; DIST global_mlp) */
    asn_nn_mlp pt_m;         /* LOCAL, DIST: the fused kernel's arguments */
    asn_nn_pertoken pt;
    float *pt_neg;
    asn_nn_ptfast *ptf;      /* LOCAL, DIST: the fast pass's table (made on first use) */
    int ptf_ni;              /* its intervals in the last pass (0: the exact one ran) */
    float *hc;               /* head caches on c: truncation g,u,a,out; scaling g,u,a,out */
    /* per thread */
    int cap_threads;
    size_t arena_cap;
    arena *arenas;
    float *tgrad;            /* cap_threads x np */
};

/* ------------------------------------------------- passes over tokens */

typedef struct pass pass;
typedef void (*chunk_fn)(pass *p, int c, int lo, int hi, arena *a, float *tg);
struct pass {
    const asn_sampler *s;
    asn_sampler_ws *ws;
    chunk_fn fn;
    int b;                /* NETWORK: block */
    float *out;           /* forward: the output row */
    const float *dout;    /* backward: d loss / d out */
    int want_dlogits;
    double sum_dlp;       /* backward: sum of d loss / d lp over the row */
};

/* Runs fn on every block of CHUNK tokens of the row, threads taking
 * whole blocks (run_pass). */
static inline void pass_thread(void *ctx, int ith, int nth)
{
    pass *p = ctx;
    asn_sampler_ws *ws = p->ws;
    int nch = (ws->n + CHUNK - 1) / CHUNK, c0, c1;
    asn_split(nch, ith, nth, 1, &c0, &c1);
    float *tg = ws->train && ws->tgrad ? ws->tgrad + (size_t)ith * ws->np : NULL;
    for (int c = c0; c < c1; c++) {
        int lo = c * CHUNK, hi = lo + CHUNK < ws->n ? lo + CHUNK : ws->n;
        ws->arenas[ith].used = 0;
        p->fn(p, c, lo, hi, &ws->arenas[ith], tg);
    }
}

static inline void run_pass(pass *p, asn_pool *pool, chunk_fn fn)
{
    p->fn = fn;
    asn_pool_run(pool, pass_thread, p);
}

static inline int n_chunks(const asn_sampler_ws *ws) { return (ws->n + CHUNK - 1) / CHUNK; }

/* Sums the per-block partial sums (w doubles each) in block order. */
static inline void sum_parts(double *dst, const double *part, size_t stride, int nch, size_t w)
{
    memset(dst, 0, w * sizeof(double));
    for (int c = 0; c < nch; c++)
        for (size_t j = 0; j < w; j++)
            dst[j] += part[(size_t)c * stride + j];
}

/* The output rows of a block of tokens: straight into the caller's row
 * when every logit is finite, else through the arena and scattered. */
static inline float *out_rows(pass *p, int lo, int cn, arena *a)
{
    return p->ws->compact ? arena_get(a, (size_t)cn) : p->out + lo;
}
static inline void out_scatter(pass *p, int lo, int cn, const float *o)
{
    if (p->ws->compact)
        for (int j = 0; j < cn; j++)
            p->out[p->ws->idx[lo + j]] = o[j];
}
/* The last step of every architecture: out = l + logsigmoid(l * scale +
 * threshold) for rows lo.., into the caller's row. */
static inline void out_truncate(pass *p, int lo, int cn, const float *l, arena *a)
{
    float *o = out_rows(p, lo, cn, a);
    asn_nn_trunc_forward(o, l, p->ws->scale, p->ws->thr, cn);
    out_scatter(p, lo, cn, o);
}
static inline const float *dout_rows(pass *p, int lo, int cn, arena *a)
{
    if (!p->ws->compact)
        return p->dout + lo;
    float *d = arena_get(a, (size_t)cn);
    for (int j = 0; j < cn; j++)
        d[j] = p->dout[p->ws->idx[lo + j]];
    return d;
}

/* SamplingNetwork (sampler_network.c): the forward pass over the row (or
 * the representatives, ws->w), and the backward pass after it. */
void asn__net_forward(pass *p, asn_pool *pool);
void asn__net_backward(pass *p, asn_pool *pool);

#endif
