/* sampler_fast.c — the fast inference pass of SamplingNetwork.
 *
 * A SamplingNetwork's features of a token depend on nothing but the token's
 * log-probability lp and sums over the vocabulary (the attention's sums,
 * the mean pooling), so the network is a smooth function of lp given those
 * sums. The pass:
 *   1. scans the row (log-sum-exp, -inf tokens) as the exact pass does;
 *   2. bins the finite tokens by lp below the top one: bins of bin_width
 *      nats down to 64 nats below the top, then 64 per octave of the
 *      distance; each bin keeps its count and its members' lp sum to 1e-7
 *      nats, in integers (see bin_setup), so the bins do not depend on
 *      the threads;
 *   3. the head — the top bins within head_range of the top holding at most
 *      head_max tokens — keeps one representative per token, each other
 *      non-empty bin one, at the mean lp of its members, standing for them
 *      all: weight = count in every sum and mean over the vocabulary;
 *   4. runs the network on the representatives;
 *   5. gives each head token its own l' (the transformation head's output)
 *      and each other token l' interpolated in lp (piecewise cubic through
 *      the bins' representatives, see interp_setup); then l =
 *      multiplier (lp + l') and out = l + logsigmoid(l scale + threshold)
 *      from the token's exact lp: the head tokens through the exact pass's
 *      kernel, the others through the per-token fast passes' (2 ulp);
 *   6. except below the head and 4 nats below the top, where out, a smooth
 *      function of the logit, is evaluated as the per-token fast passes do
 *      (pertoken.c: 64 cubic pieces in registers, fitted at their nodes to
 *      step 5's function; poly_setup): some 4 times cheaper per token than
 *      step 5's lookups of each token's own bin.
 * Rows of at most exact_max finite tokens go through the exact pass.
 * Everything but the network is O(V) and cheap; the network runs on a few
 * hundred rows whatever V is. */
#include "asn/cpu.h"
#include "asn/sampler_net.h"
#include "learn/layers.h"
#include "learn/sampler_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define SF_X86 1
#include <immintrin.h>
#endif

/* The loops over tokens are written for the compiler to vectorize (with
 * gathers on AVX2 and AVX-512) in the ASN_CLONES copies, but for the
 * interpolation, which it leaves scalar (interp_block_avx512 and _avx2 do
 * it by hand); only IEEE operations, the same bits in every copy. */
#define FB 4096           /* tokens per block of the passes over the row */
#define FINE_RANGE 64.0   /* nats of bin_width bins below the top */
#define GEO_BITS 6        /* 2^GEO_BITS bins per octave beyond them */
#define GEO_OCTAVES 130
#define POLY_TOL 2e-6  /* the polynomials' largest error against the interpolation, relative beyond 1 */
#define TB_FLOATS (5 * FB) /* per thread: out_thread's five buffers of FB */
#define TSUM_PER_THREAD 2 /* bin_thread's histograms (even and odd tokens), the first their sum */

typedef struct fast_state {
    asn_sampler_fast_opts o;
    asn_sampler_ws *rws;      /* the network on the representatives */
    asn_sampler_fast_info info;
    /* bins: nf fine ones then the geometric ones, nb in all */
    int nb, nf, cap_nb;
    float top, delta, inv_delta, d0, inv_d0;
    float ks_scale;           /* lp in units of 1 / ks_scale (see bin_setup) */
    int cnt_bits;
    int64_t *cnt, *ks;        /* per bin: tokens, sum of their lp in those units */
    int cap_th;               /* threads the per-thread bins have room for */
    uint64_t *tsum;           /* per thread, TSUM_PER_THREAD histograms of nb bins: count + (sum << cnt_bits) */
    int cap_blk;
    int *bmin;                /* per block of tokens: its smallest bin */
    int cap_tok;
    int32_t *tbin;            /* per finite token: its bin (bins_block) */
    /* representatives and interpolation */
    int cap_r;
    float *rlp, *rw, *rl;
    int *kb;                  /* knots: their bins, lp, l', slopes (interp_setup) */
    double *km;
    int *brep;
    float *bm, *bq;           /* per bin: mean lp; l' about it above and below (see interp) */
    int cap_h;
    int32_t *hpos;            /* head tokens, among the finite ones */
    float *hl, *ho;
    float *tbuf;              /* per thread: TB_FLOATS floats */
    int nk, kcap;             /* knots in use, and km's stride */
    int poly;                 /* 1: pt holds the polynomials of the tail (poly_setup) */
    asn_nn_ptfast pt;
} fast_state;

void asn_sampler_fast_defaults(asn_sampler_fast_opts *o)
{
    o->bin_width = 0.05f;
    o->head_range = 10.0f;
    o->head_max = 64;
    o->exact_max = 1024;
}

static void fast_free(void *p);

static fast_state *fast_get(asn_sampler_ws *ws)
{
    void **slot = asn__sampler_ws_fast(ws, fast_free);
    if (!*slot) {
        fast_state *f = asn_xcalloc(1, sizeof *f);
        asn_sampler_fast_defaults(&f->o);
        *slot = f;
    }
    return *slot;
}

static void fast_free(void *p)
{
    fast_state *f = p;
    if (!f)
        return;
    asn_sampler_ws_free(f->rws);
    free(f->cnt), free(f->ks), free(f->tsum), free(f->bmin), free(f->tbin);
    free(f->kb), free(f->km);
    free(f->rlp), free(f->rw), free(f->rl), free(f->brep), free(f->bm), free(f->bq);
    free(f->hpos), free(f->hl), free(f->ho), free(f->tbuf);
    free(f);
}

int asn_sampler_ws_set_fast(asn_sampler_ws *ws, const asn_sampler_fast_opts *o, asn_err *e)
{
    if (!(o->bin_width >= 1e-4f && o->bin_width <= 1.0f))
        return asn_err_set(e, "fast sampler pass: bin_width must be 1e-4..1 nats, got %g", (double)o->bin_width);
    if (!(o->head_range >= 0.0f && o->head_range <= 1000.0f))
        return asn_err_set(e, "fast sampler pass: head_range must be 0..1000 nats, got %g", (double)o->head_range);
    if (o->head_max < 0 || o->head_max > (1 << 24))
        return asn_err_set(e, "fast sampler pass: head_max must be 0..%d, got %d", 1 << 24, o->head_max);
    if (o->exact_max < 0)
        return asn_err_set(e, "fast sampler pass: exact_max must be >= 0, got %d", o->exact_max);
    fast_get(ws)->o = *o;
    return 0;
}

void asn_sampler_fast_get_info(asn_sampler_ws *ws, asn_sampler_fast_info *info)
{
    *info = fast_get(ws)->info;
}

/* ------------------------------------------------------------------ bins */

/* The bins' geometry, in locals the compiler can keep in registers. */
typedef struct bin_geo {
    float top, inv_delta, inv_d0, fnf;
    int nf, nb;
} bin_geo;

static bin_geo geo_of(const fast_state *f)
{
    bin_geo g = {f->top, f->inv_delta, f->inv_d0, (float)f->nf, f->nf, f->nb};
    return g;
}

/* The bin of a token dist = top - lp >= 0 below the top: fine bins of
 * width delta, then (dist / d0 = 2^e (1 + m / 2^GEO_BITS), m the top
 * mantissa bits) geometric ones; at most nb - 1. Branch-free, the same
 * float operations everywhere. */
static inline int bin_of(bin_geo g, float dist)
{
    float t = dist * g.inv_delta;
    float y = dist * g.inv_d0;
    y = y >= 1.0f ? y : 1.0f;
    uint32_t u;
    memcpy(&u, &y, sizeof u);
    int e = (int)(u >> 23) - 127, m = (int)((u >> (23 - GEO_BITS)) & ((1u << GEO_BITS) - 1));
    int geo = g.nf + (e << GEO_BITS) + m;
    int b = t < g.fnf ? (int)t : geo;
    return b < g.nb ? b : g.nb - 1;
}

/* Bins of a block of tokens, and 1 + trunc(lp S) 2^cb of each (see
 * bin_setup); returns the smallest bin. */
ASN_CLONES
static int bins_block(bin_geo g, float S, int cb, const float *restrict x, int n, float xhi, float xlo,
                      int32_t *restrict bin, uint64_t *restrict v)
{
    int bmin = g.nb;
    for (int i = 0; i < n; i++) {
        float lp = (x[i] - xhi) - xlo;
        int b = bin_of(g, g.top - lp);
        bin[i] = b;
        v[i] = ((uint64_t)(int64_t)(int32_t)(lp * S) << cb) + 1;
        bmin = b < bmin ? b : bmin;
    }
    return bmin;
}

/* l = mult (lp + l') of a block of tokens in bins bin (bins_block's),
 * l' interpolated (head tokens: anything, they are written afterwards): the
 * cubic of the token's side of its bin's representative, in dm = lp - (its
 * lp). */
ASN_CLONES
static void interp_block(const int32_t *restrict bin, const float *restrict bm, const float *restrict bq,
                         const float *restrict x, int n, float xhi, float xlo, float mult, int b_head,
                         float *restrict l)
{
    for (int i = 0; i < n; i++) {
        float lp = (x[i] - xhi) - xlo;
        int b = bin[i] >= b_head ? bin[i] : b_head;
        float dm = lp - bm[b];
        const float *q = bq + 4 * (2 * b + (dm < 0.0f));
        l[i] = mult * (lp + (q[0] + dm * (q[1] + dm * (q[2] + dm * q[3]))));
    }
}

#ifdef SF_X86
/* interp_block on AVX-512, 16 tokens at a time: each token's 4 coefficients
 * are one 16-byte load, 16 of them transposed into 4 vectors (a gather per
 * coefficient, or the scalar loop, costs more); the same operations lane by
 * lane, in the same order, without fused multiply-adds: the same bits. */
#pragma GCC push_options
#pragma GCC target("avx512f")
static void interp_block_avx512(const int32_t *restrict bin, const float *restrict bm, const float *restrict bq,
                                const float *restrict x, int n, float xhi, float xlo, float mult, int b_head,
                                float *restrict l)
{
    const __m512 vhi = _mm512_set1_ps(xhi), vlo = _mm512_set1_ps(xlo), vm = _mm512_set1_ps(mult);
    const __m512i vbh = _mm512_set1_epi32(b_head), four = _mm512_set1_epi32(4);
    int32_t qi[16] __attribute__((aligned(64)));
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 lp = _mm512_sub_ps(_mm512_sub_ps(_mm512_loadu_ps(x + i), vhi), vlo);
        __m512i b = _mm512_max_epi32(_mm512_loadu_si512(bin + i), vbh);
        __m512 dm = _mm512_sub_ps(lp, _mm512_i32gather_ps(b, bm, 4));
        __mmask16 below = _mm512_cmp_ps_mask(dm, _mm512_setzero_ps(), _CMP_LT_OQ);
        __m512i q = _mm512_slli_epi32(b, 3);
        _mm512_store_si512(qi, _mm512_mask_add_epi32(q, below, q, four));
        __m512 a[4]; /* a[j], 128-bit lane L: the coefficients of token 4 L + j */
        for (int j = 0; j < 4; j++) {
            __m512 v = _mm512_castps128_ps512(_mm_loadu_ps(bq + qi[j]));
            v = _mm512_insertf32x4(v, _mm_loadu_ps(bq + qi[4 + j]), 1);
            v = _mm512_insertf32x4(v, _mm_loadu_ps(bq + qi[8 + j]), 2);
            a[j] = _mm512_insertf32x4(v, _mm_loadu_ps(bq + qi[12 + j]), 3);
        }
        __m512 t0 = _mm512_unpacklo_ps(a[0], a[1]), t1 = _mm512_unpacklo_ps(a[2], a[3]);
        __m512 t2 = _mm512_unpackhi_ps(a[0], a[1]), t3 = _mm512_unpackhi_ps(a[2], a[3]);
        __m512 q0 = _mm512_shuffle_ps(t0, t1, _MM_SHUFFLE(1, 0, 1, 0));
        __m512 q1 = _mm512_shuffle_ps(t0, t1, _MM_SHUFFLE(3, 2, 3, 2));
        __m512 q2 = _mm512_shuffle_ps(t2, t3, _MM_SHUFFLE(1, 0, 1, 0));
        __m512 q3 = _mm512_shuffle_ps(t2, t3, _MM_SHUFFLE(3, 2, 3, 2));
        __m512 p = _mm512_add_ps(q2, _mm512_mul_ps(dm, q3));
        p = _mm512_add_ps(q1, _mm512_mul_ps(dm, p));
        p = _mm512_add_ps(q0, _mm512_mul_ps(dm, p));
        _mm512_storeu_ps(l + i, _mm512_mul_ps(vm, _mm512_add_ps(lp, p)));
    }
    if (i < n)
        interp_block(bin + i, bm, bq, x + i, n - i, xhi, xlo, mult, b_head, l + i);
}
#pragma GCC pop_options

/* The same on AVX2, 8 tokens at a time. */
#pragma GCC push_options
#pragma GCC target("avx2")
static void interp_block_avx2(const int32_t *restrict bin, const float *restrict bm, const float *restrict bq,
                              const float *restrict x, int n, float xhi, float xlo, float mult, int b_head,
                              float *restrict l)
{
    const __m256 vhi = _mm256_set1_ps(xhi), vlo = _mm256_set1_ps(xlo), vm = _mm256_set1_ps(mult);
    const __m256i vbh = _mm256_set1_epi32(b_head), four = _mm256_set1_epi32(4);
    int32_t qi[8] __attribute__((aligned(32)));
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 lp = _mm256_sub_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), vhi), vlo);
        __m256i b = _mm256_max_epi32(_mm256_loadu_si256((const __m256i *)(bin + i)), vbh);
        __m256 dm = _mm256_sub_ps(lp, _mm256_i32gather_ps(bm, b, 4));
        __m256i below = _mm256_castps_si256(_mm256_cmp_ps(dm, _mm256_setzero_ps(), _CMP_LT_OQ));
        _mm256_store_si256((__m256i *)qi, _mm256_add_epi32(_mm256_slli_epi32(b, 3), _mm256_and_si256(below, four)));
        __m256 a[4]; /* a[j], 128-bit lane L: the coefficients of token 4 L + j */
        for (int j = 0; j < 4; j++)
            a[j] = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(bq + qi[j])), _mm_loadu_ps(bq + qi[4 + j]),
                                        1);
        __m256 t0 = _mm256_unpacklo_ps(a[0], a[1]), t1 = _mm256_unpacklo_ps(a[2], a[3]);
        __m256 t2 = _mm256_unpackhi_ps(a[0], a[1]), t3 = _mm256_unpackhi_ps(a[2], a[3]);
        __m256 q0 = _mm256_shuffle_ps(t0, t1, _MM_SHUFFLE(1, 0, 1, 0));
        __m256 q1 = _mm256_shuffle_ps(t0, t1, _MM_SHUFFLE(3, 2, 3, 2));
        __m256 q2 = _mm256_shuffle_ps(t2, t3, _MM_SHUFFLE(1, 0, 1, 0));
        __m256 q3 = _mm256_shuffle_ps(t2, t3, _MM_SHUFFLE(3, 2, 3, 2));
        __m256 p = _mm256_add_ps(q2, _mm256_mul_ps(dm, q3));
        p = _mm256_add_ps(q1, _mm256_mul_ps(dm, p));
        p = _mm256_add_ps(q0, _mm256_mul_ps(dm, p));
        _mm256_storeu_ps(l + i, _mm256_mul_ps(vm, _mm256_add_ps(lp, p)));
    }
    if (i < n)
        interp_block(bin + i, bm, bq, x + i, n - i, xhi, xlo, mult, b_head, l + i);
}
#pragma GCC pop_options
#endif

/* interp_block on the instruction set of pertoken.c's kernels (the best
 * the processor has; ASN_CPU and asn_nn_pertoken_force cap it) */
static void interp_any(const int32_t *bin, const float *bm, const float *bq, const float *x, int n, float xhi,
                       float xlo, float mult, int b_head, float *l)
{
#ifdef SF_X86
    switch (asn_nn_pertoken_level()) {
    case 2:
        interp_block_avx512(bin, bm, bq, x, n, xhi, xlo, mult, b_head, l);
        return;
    case 1:
        interp_block_avx2(bin, bm, bq, x, n, xhi, xlo, mult, b_head, l);
        return;
    default:
        break;
    }
#endif
    interp_block(bin, bm, bq, x, n, xhi, xlo, mult, b_head, l);
}

/* The bins' geometry for a row whose top token is at lp = top, down to
 * dist_max below it; and the units of the bins' lp sums. Each token adds
 * 1 + k 2^cnt_bits to its bin, k = trunc(lp S), n < 2^cnt_bits the row's
 * finite tokens and S the power of two that keeps |k| < 2^kb, kb =
 * min(30, 62 - 2 cnt_bits): a bin's count and lp sum in one integer add,
 * exact (no sum reaches 2^63) and so the same whatever the order and the
 * threads. A bin's mean lp is then exact to 1 / S = 2^(e - kb), e the
 * exponent of the largest |lp|: 3e-8 nats at V = 32k, 1e-7 at 128k, 8e-6 at
 * 1M (the bins are 0.05 nats wide). */
static void bin_setup(fast_state *f, float top, float dist_max, int64_t n)
{
    double delta = f->o.bin_width;
    f->top = top;
    f->delta = (float)delta;
    f->inv_delta = (float)(1.0 / delta);
    f->nf = (int)ceil(FINE_RANGE / delta);
    f->d0 = (float)(f->nf * delta);
    f->inv_d0 = 1.0f / f->d0;
    f->nb = f->nf + (GEO_OCTAVES << GEO_BITS);
    f->nb = bin_of(geo_of(f), dist_max) + 1;
    int cb = 1;
    while (((int64_t)1 << cb) <= n)
        cb++;
    int kb = 62 - 2 * cb < 30 ? 62 - 2 * cb : 30; /* |k| < 2^kb */
    double amax = fmax(fabs((double)top), fabs((double)top - dist_max));
    int e;
    frexp(amax, &e); /* amax < 2^e */
    f->cnt_bits = cb;
    f->ks_scale = (float)ldexp(1.0, kb - e);
}

typedef struct bin_ctx {
    fast_state *f;
    const asn__sampler_row *row;
    float hi, lo;
    int nblk;
} bin_ctx;

/* Thread th's bins (the sum of its histograms once bin_thread is done). */
static uint64_t *thread_bins(const fast_state *f, int th) { return f->tsum + (size_t)TSUM_PER_THREAD * th * f->nb; }

static void bin_thread(void *ctx, int ith, int nth)
{
    bin_ctx *bc = ctx;
    fast_state *f = bc->f;
    /* two histograms, even and odd tokens (a run of tokens in one bin waits
     * on half as many dependent adds), added at the end: the same integers */
    uint64_t *h = thread_bins(f, ith), *h1 = h + f->nb;
    memset(h, 0, (size_t)TSUM_PER_THREAD * f->nb * sizeof *h);
    int b0, b1;
    asn_split(bc->nblk, ith, nth, 1, &b0, &b1);
    uint64_t *v = (uint64_t *)(f->tbuf + (size_t)ith * TB_FLOATS);
    for (int blk = b0; blk < b1; blk++) {
        int lo = blk * FB, hi = lo + FB < bc->row->n ? lo + FB : bc->row->n, cn = hi - lo;
        int32_t *bin = f->tbin + lo;
        f->bmin[blk] = bins_block(geo_of(f), f->ks_scale, f->cnt_bits, bc->row->x + lo, cn, bc->hi, bc->lo, bin, v);
        int i = 0;
        for (; i + 1 < cn; i += 2) {
            h[bin[i]] += v[i];
            h1[bin[i + 1]] += v[i + 1];
        }
        if (i < cn)
            h[bin[i]] += v[i];
    }
    for (int b = 0; b < f->nb; b++)
        h[b] += h1[b];
}

/* 1 when one of n bins is below b: a test the compiler vectorizes, so that
 * finding the head's few tokens skips most of the row HEAD_CHUNK tokens at
 * a time */
#define HEAD_CHUNK 256
ASN_CLONES
static int any_below(const int32_t *restrict bin, int n, int b)
{
    int any = 0;
    for (int i = 0; i < n; i++)
        any |= bin[i] < b;
    return any;
}

/* ------------------------------------------------------------ the output */

typedef struct out_ctx {
    fast_state *f;
    const asn__sampler_row *row;
    float hi, lo, mult, scale, thr;
    int b_head, nblk;
    float *out;
} out_ctx;

/* Tokens lo .. lo + n of the row through the interpolation and the
 * truncation, into o (n of them); or, when pos is given, the n tokens at
 * positions pos from lo, whose logits are xp (o may be the logits); bb,
 * l: scratch of n */
static void out_interp(const out_ctx *oc, int lo, int n, const int32_t *pos, float *xp, float *o, int32_t *bb,
                       float *l)
{
    const fast_state *f = oc->f;
    const float *x = oc->row->x + lo;
    const int32_t *bin = f->tbin + lo;
    if (pos) {
        for (int q = 0; q < n; q++)
            bb[q] = bin[pos[q]];
        x = xp, bin = bb;
    }
    interp_any(bin, f->bm, f->bq, x, n, oc->hi, oc->lo, oc->mult, oc->b_head, l);
    if (!pos) {
        asn_nn_pertoken_trunc_fast(o, l, oc->scale, oc->thr, n);
        return;
    }
    asn_nn_pertoken_trunc_fast(xp, l, oc->scale, oc->thr, n);
    for (int q = 0; q < n; q++)
        o[pos[q]] = xp[q];
}

static void out_thread(void *ctx, int ith, int nth)
{
    out_ctx *oc = ctx;
    const fast_state *f = oc->f;
    float *tb = f->tbuf + (size_t)ith * TB_FLOATS, *ob = tb, *xb = tb + FB, *l = tb + 2 * FB;
    int32_t *bb = (int32_t *)(tb + 3 * FB), *rest = (int32_t *)(tb + 4 * FB);
    int b0, b1;
    asn_split(oc->nblk, ith, nth, 1, &b0, &b1);
    for (int blk = b0; blk < b1; blk++) {
        int l0 = blk * FB, l1 = l0 + FB < oc->row->n ? l0 + FB : oc->row->n, cn = l1 - l0;
        float *o = oc->row->idx ? ob : oc->out + l0;
        if (f->poly) {
            int ne = asn_nn_ptfast_eval(o, oc->row->x + l0, &f->pt, cn, rest, xb);
            out_interp(oc, l0, ne, rest, xb, o, bb, l);
        } else {
            out_interp(oc, l0, cn, NULL, NULL, o, bb, l);
        }
        if (oc->row->idx)
            for (int i = 0; i < cn; i++)
                oc->out[oc->row->idx[l0 + i]] = o[i];
    }
}

/* The cubic from knot k towards knot j (knots at lp m, values L, slopes
 * sl) as L[k] + dm (sl[k] + dm (c2 + dm c3)), dm = lp - m[k]: the one with
 * both knots' values and slopes. */
static void hermite(const double *m, const double *L, const double *sl, int k, int j, double *c2, double *c3)
{
    double h = m[j] - m[k], d = (L[j] - L[k]) / h;
    *c2 = (3 * d - 2 * sl[k] - sl[j]) / h;
    *c3 = (sl[k] + sl[j] - 2 * d) / (h * h);
}

/* The interpolation between the bins' representatives (knots, in bin
 * order: lp decreasing): piecewise cubic Hermite, each knot's slope that of
 * the parabola through it and its two neighbours (one-sided at the ends);
 * between consecutive knots the cubic with their values and slopes, beyond
 * the end knots the tangent line. Stored per bin and side (above, below its
 * knot) as L + dm (s + dm (c2 + dm c3)), dm = lp - the knot's lp. */
static void interp_setup(fast_state *f, int b_head, int n_tail)
{
    int K = 0;
    int *kb = f->kb;
    f->kcap = n_tail;
    double *m = f->km, *L = m + n_tail, *sl = L + n_tail;
    for (int b = b_head; b < f->nb && K < n_tail; b++)
        if (f->brep[b] >= 0) {
            kb[K] = b;
            m[K] = f->rlp[f->brep[b]];
            L[K] = f->rl[f->brep[b]];
            K++;
        }
    for (int k = 0; k < K; k++) {
        if (K == 1) {
            sl[k] = 0.0;
        } else if (K == 2) {
            sl[k] = (L[0] - L[1]) / (m[0] - m[1]);
        } else if (k == 0 || k == K - 1) { /* the parabola through the end three */
            int a = k == 0 ? 0 : K - 1, bb = k == 0 ? 1 : K - 2, c = k == 0 ? 2 : K - 3;
            double h1 = m[bb] - m[a], h2 = m[c] - m[bb];
            double d1 = (L[bb] - L[a]) / h1, d2 = (L[c] - L[bb]) / h2;
            sl[k] = ((2 * h1 + h2) * d1 - h1 * d2) / (h1 + h2);
        } else {
            double hu = m[k - 1] - m[k], hd = m[k] - m[k + 1];
            double du = (L[k - 1] - L[k]) / hu, dd = (L[k] - L[k + 1]) / hd;
            sl[k] = (hd * du + hu * dd) / (hu + hd);
        }
    }
    for (int k = 0; k < K; k++) {
        float *q = f->bq + 8 * (size_t)kb[k];
        f->bm[kb[k]] = (float)m[k];
        for (int side = 0; side < 2; side++) { /* 0: towards knot k - 1 (above), 1: k + 1 */
            int j = side ? k + 1 : k - 1;
            double c2 = 0, c3 = 0;
            if (j >= 0 && j < K)
                hermite(m, L, sl, k, j, &c2, &c3);
            q[4 * side] = (float)L[k];
            q[4 * side + 1] = (float)sl[k];
            q[4 * side + 2] = (float)c2;
            q[4 * side + 3] = (float)c3;
        }
    }
    f->nk = K;
    if (K == 0 || f->brep[b_head] < 0) { /* what interp_block reads for head tokens */
        f->bm[b_head] = 0.0f;
        memset(f->bq + 8 * (size_t)b_head, 0, 8 * sizeof(float));
    }
}

/* The interpolation at lp, in double: between knots k and k + 1 the cubic
 * of knot k towards k + 1, beyond the end knots their tangents (what
 * interp_block computes for a token there, up to rounding). */
static double interp_at(const fast_state *f, double lp)
{
    const int K = f->nk;
    const double *m = f->km, *L = m + f->kcap, *sl = L + f->kcap;
    if (lp >= m[0])
        return L[0] + sl[0] * (lp - m[0]);
    if (lp <= m[K - 1])
        return L[K - 1] + sl[K - 1] * (lp - m[K - 1]);
    int a = 0, b = K - 1; /* m[a] > lp > m[b] */
    while (b - a > 1) {
        int c = (a + b) / 2;
        if (m[c] >= lp)
            a = c;
        else
            b = c;
    }
    double c2, c3, dm = lp - m[a];
    hermite(m, L, sl, a, b, &c2, &c3);
    return L[a] + dm * (sl[a] + dm * (c2 + dm * c3));
}

/* A tail token's output at lp, in double: the interpolation, then the
 * truncation */
static double tail_out(const fast_state *f, double lp, float mult, float scale, float thr)
{
    double l = (double)mult * (lp + interp_at(f, lp)), z = l * scale + thr;
    return l + (z < 0 ? z : 0) - log1p(exp(-fabs(z)));
}

/* The outputs of the tail as polynomials of the logit (pertoken.c's
 * intervals: asn_nn_ptfast_*), fitted to the interpolation and the
 * truncation at their nodes, in double; their head (the tokens they leave to
 * out_interp) reaches past the head bins. Sets f->poly. */
static void poly_setup(fast_state *f, const asn__sampler_row *row, int b_head, float mult, float scale, float thr)
{
    f->poly = 0;
    if (f->nk < 2)
        return;
    float xn[ASN_NN_PTFAST_NODES], yn[ASN_NN_PTFAST_NODES];
    double head = (double)b_head * f->delta * (1 + 1e-6) + 1e-4;
    if (head < ASN_NN_PTFAST_HEAD)
        head = ASN_NN_PTFAST_HEAD;
    if (!(head < (double)row->xmax - (double)row->xmin))
        return;
    int nn = asn_nn_ptfast_nodes(&f->pt, row->xmax, row->xmin, (float)head, 64, xn);
    for (int i = 0; i < nn; i++)
        yn[i] = (float)tail_out(f, (double)xn[i] - row->lse, mult, scale, thr);
    if (asn_nn_ptfast_fit(&f->pt, yn) < 0)
        return;
    f->poly = 1;
    f->info.pieces = f->pt.ni;
    /* intervals where the polynomial strays from the interpolation midway
     * between its nodes go back to the interpolation */
    for (int j = 0; j < f->pt.ni; j++) {
        double y[ASN_NN_PTFAST_DEG];
        for (int q = 0; q < ASN_NN_PTFAST_DEG; q++)
            y[q] = tail_out(f, asn_nn_ptfast_mid_x(&f->pt, j, q) - row->lse, mult, scale, thr);
        if (asn_nn_ptfast_strays(&f->pt, j, y, POLY_TOL)) {
            asn_nn_ptfast_drop(&f->pt, j);
            f->info.dropped++;
        }
    }
}

/* ---------------------------------------------------------------- the pass */

static void fast_reserve(fast_state *f, int nth, int nblk, int R, int H, int n)
{
    if (n > f->cap_tok) {
        free(f->tbin);
        f->tbin = asn_xmalloc((size_t)n * sizeof(int32_t));
        f->cap_tok = n;
    }
    int nb = (int)ceil(FINE_RANGE / f->o.bin_width) + (GEO_OCTAVES << GEO_BITS);
    if (nb > f->cap_nb) {
        free(f->cnt), free(f->ks), free(f->brep), free(f->bm), free(f->bq);
        f->cnt = asn_xmalloc((size_t)nb * sizeof(int64_t));
        f->ks = asn_xmalloc((size_t)nb * sizeof(int64_t));
        f->brep = asn_xmalloc((size_t)nb * sizeof(int));
        f->bm = asn_xmalloc((size_t)nb * sizeof(float));
        f->bq = asn_xmalloc(8 * (size_t)nb * sizeof(float));
        f->cap_nb = nb;
        f->cap_th = 0; /* the per-thread bins again */
    }
    if (nth > f->cap_th) {
        free(f->tsum), free(f->tbuf);
        f->tsum = asn_xmalloc((size_t)TSUM_PER_THREAD * nth * f->cap_nb * sizeof(uint64_t));
        f->tbuf = asn_xmalloc((size_t)nth * TB_FLOATS * sizeof(float));
        f->cap_th = nth;
    }
    if (nblk > f->cap_blk) {
        free(f->bmin);
        f->bmin = asn_xmalloc((size_t)nblk * sizeof(int));
        f->cap_blk = nblk;
    }
    if (R > f->cap_r) {
        free(f->rlp), free(f->rw), free(f->rl), free(f->kb), free(f->km);
        f->kb = asn_xmalloc((size_t)R * sizeof(int));
        f->km = asn_xmalloc(3 * (size_t)R * sizeof(double));
        f->rlp = asn_xmalloc((size_t)R * sizeof(float));
        f->rw = asn_xmalloc((size_t)R * sizeof(float));
        f->rl = asn_xmalloc((size_t)R * sizeof(float));
        f->cap_r = R;
    }
    if (H > f->cap_h) {
        free(f->hpos), free(f->hl), free(f->ho);
        f->hpos = asn_xmalloc((size_t)H * sizeof(int32_t));
        f->hl = asn_xmalloc((size_t)H * sizeof(float));
        f->ho = asn_xmalloc((size_t)H * sizeof(float));
        f->cap_h = H;
    }
}

int asn_sampler_forward_fast(const asn_sampler *s, asn_sampler_ws *ws, asn_pool *pool, const float *logits, int V,
                             float *out, asn_err *e)
{
    asn_sampler_arch arch = asn_sampler_get_config(s)->arch;
    if (arch == ASN_SAMPLER_LOCAL || arch == ASN_SAMPLER_DIST) {
        fast_state *f = fast_get(ws);
        memset(&f->info, 0, sizeof f->info);
        return asn__sampler_forward_pertoken_fast(s, ws, pool, logits, V, out, f->o.exact_max, &f->info.pieces, e);
    }
    if (arch != ASN_SAMPLER_NETWORK)
        return asn_sampler_forward(s, ws, pool, logits, V, out, e);
    asn__sampler_row row;
    if (asn__sampler_scan(s, ws, pool, logits, V, out, &row, e) < 0)
        return -1;
    fast_state *f = fast_get(ws);
    memset(&f->info, 0, sizeof f->info);
    if (row.n == 0)
        return 0;
    if (row.n <= f->o.exact_max) { /* few tokens: the exact pass, token by token */
        f->info.reps = f->info.head = row.n;
        return asn_sampler_forward(s, ws, pool, logits, V, out, e);
    }
    if (!f->rws)
        f->rws = asn_sampler_ws_new(s, 0);
    int nth = asn_pool_size(pool), nblk = (row.n + FB - 1) / FB;
    fast_reserve(f, nth, nblk, 1, 1, row.n);
    /* lp as the exact pass computes it: (x - hi) - lo */
    float hi = (float)row.lse, lo = (float)(row.lse - hi);
    float top = (row.xmax - hi) - lo, bottom = (row.xmin - hi) - lo;
    bin_setup(f, top, top - bottom, row.n);

    /* the bins' counts and lp sums */
    bin_ctx bc = {f, &row, hi, lo, nblk};
    asn_pool_run(pool, bin_thread, &bc);
    for (int b = 0; b < f->nb; b++) {
        uint64_t t = 0;
        for (int th = 0; th < nth; th++)
            t += thread_bins(f, th)[b];
        uint64_t c = t & (((uint64_t)1 << f->cnt_bits) - 1);
        f->cnt[b] = (int64_t)c;
        f->ks[b] = (int64_t)(t - c) / ((int64_t)1 << f->cnt_bits);
    }

    /* the head: the top bins within head_range holding at most head_max
     * tokens */
    int b_range = (int)ceil((double)f->o.head_range / f->o.bin_width);
    if (b_range > f->nf)
        b_range = f->nf;
    if (b_range > f->nb)
        b_range = f->nb;
    int b_head = 0;
    int64_t nh = 0;
    while (b_head < b_range && nh + f->cnt[b_head] <= f->o.head_max)
        nh += f->cnt[b_head++];
    int n_tail = 0;
    for (int b = b_head; b < f->nb; b++)
        n_tail += f->cnt[b] > 0;
    int R = (int)nh + n_tail;
    fast_reserve(f, nth, nblk, R, (int)nh > 0 ? (int)nh : 1, row.n);

    /* representatives: the head tokens (in row order), then the bins */
    int r = 0;
    const float *x = row.x;
    for (int blk = 0; blk < nblk && r < nh; blk++) {
        if (f->bmin[blk] >= b_head)
            continue;
        int l0 = blk * FB, l1 = l0 + FB < row.n ? l0 + FB : row.n;
        for (int c0 = l0; c0 < l1; c0 += HEAD_CHUNK) {
            int c1 = c0 + HEAD_CHUNK < l1 ? c0 + HEAD_CHUNK : l1;
            if (!any_below(f->tbin + c0, c1 - c0, b_head))
                continue;
            for (int i = c0; i < c1; i++) {
                if (f->tbin[i] < b_head) {
                    f->hpos[r] = i;
                    f->rlp[r] = (x[i] - hi) - lo;
                    f->rw[r] = 1.0f;
                    r++;
                }
            }
        }
    }
    for (int b = 0; b < f->nb; b++)
        f->brep[b] = -1;
    for (int b = b_head; b < f->nb; b++) {
        if (!f->cnt[b])
            continue;
        double mean = (double)f->ks[b] / ((double)f->cnt[b] * f->ks_scale);
        f->brep[b] = r;
        f->rlp[r] = (float)mean;
        f->rw[r] = (float)f->cnt[b];
        r++;
    }
    f->info.reps = R;
    f->info.head = (int)nh;
    f->info.bins = n_tail;

    /* the network on them */
    float mult, scale, thr;
    asn__sampler_net_reps(s, f->rws, pool, f->rlp, f->rw, R, (double)row.n, f->rl, &mult, &scale, &thr);

    interp_setup(f, b_head, n_tail);
    poly_setup(f, &row, b_head, mult, scale, thr);

    /* the outputs */
    out_ctx oc = {f, &row, hi, lo, mult, scale, thr, b_head, nblk, out};
    asn_pool_run(pool, out_thread, &oc);
    for (int j = 0; j < nh; j++)
        f->hl[j] = mult * (f->rlp[j] + f->rl[j]);
    asn_nn_trunc_forward(f->ho, f->hl, scale, thr, (int)nh);
    for (int j = 0; j < nh; j++)
        out[row.idx ? row.idx[f->hpos[j]] : f->hpos[j]] = f->ho[j];
    return 0;
}
