/* layers.c — the learned samplers' layers, forward and backward side by
 * side: Linear, LayerNorm, SwiGLU MLP (and its fused scalar form), silu,
 * elu+1, non-causal linear attention, mean pooling, soft truncation,
 * log_softmax (its exp pass is pertoken.c's).
 *
 * Products of rows x features go through OpenBLAS (cblas_sgemm). Loops that
 * need exp or log, and reductions, are written on 16-float vectors (GCC
 * vector extensions; target_clones adds AVX2 and AVX-512 copies), since the
 * compiler vectorizes neither libm calls nor float sums on its own here.
 * Only IEEE +, -, *, / and conversions (no FMA: -ffp-contract=off), so the
 * clones give the same bits. Vector comparisons are only used through vsel:
 * GCC turns them into scalar code when their results are used as values. */
#include "asn/cpu.h"
#include "learn/layers.h"

#include <cblas.h>
#include <float.h>
#include <math.h>
#include <string.h>

/* ------------------------------------------------------------ vector math */

/* The helpers below are static and inlined: no vector crosses an ABI boundary. */
#pragma GCC diagnostic ignored "-Wpsabi"
typedef float vf __attribute__((vector_size(64)));
typedef int32_t vi __attribute__((vector_size(64)));
#define VL 16

static inline vf vsplat(float x) { return (vf){0} + x; }
static inline vf vsel(vi m, vf a, vf b) { return (vf)((m & (vi)a) | (~m & (vi)b)); }
static inline vf vabs(vf a) { return (vf)((vi)a & 0x7fffffff); }

/* Comparisons as masks (all-ones where true) by arithmetic on the bits:
 * GCC lowers a comparison of 16-float vectors one lane at a time (scalar
 * compares and conditional moves) on a target whose registers are narrower,
 * AVX2's, and the arithmetic in its native width. Each gives what the IEEE
 * comparison gives, NaN included (false).
 * vnotnan: all-ones unless a is NaN (|a|'s bits above those of infinity). */
static inline vi vnotnan(vf a) { return (((vi)a & 0x7fffffff) - 0x7f800001) >> 31; }
/* a < b where a - b is not -0 for a >= b (b not +0 with a -0), and not both
 * infinite: then a < b exactly when a - b is negative. */
static inline vi vlt(vf a, vf b) { return ((vi)(a - b) >> 31) & vnotnan(a) & vnotnan(b); }
/* a < 0: the sign bit, but not -0 and not NaN */
static inline vi vlt0(vf a) { return ((vi)a >> 31) & ~((((vi)a & 0x7fffffff) - 1) >> 31) & vnotnan(a); }
/* min(a, 0) as a < 0 ? a : 0 */
static inline vf vmin0(vf a) { return vsel(vlt0(a), a, vsplat(0.0f)); }
/* All-ones in the first k lanes: lane - k is negative. */
static inline vi vlanes(int k)
{
    const vi iota = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    return (iota - k) >> 31;
}

/* k lanes from p (k == VL in the main loops, where the branch folds away);
 * the other lanes are 0. */
static inline vf vload(const float *p, int k)
{
    vf v = {0};
    memcpy(&v, p, (size_t)k * sizeof(float));
    return v;
}
static inline void vstore(float *p, vf v, int k) { memcpy(p, &v, (size_t)k * sizeof(float)); }
/* Lanes added pairwise in a fixed order: (i, i+8), (i, i+4), (i, i+2),
 * (i, i+1), as vector adds of shuffled copies. */
static inline float vhsum(vf a)
{
    a += __builtin_shufflevector(a, a, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7);
    a += __builtin_shufflevector(a, a, 4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11);
    a += __builtin_shufflevector(a, a, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13);
    a += __builtin_shufflevector(a, a, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14);
    return a[0];
}

/* Runs the statements with `i` (first index) and `k` (lanes: VL, fewer at
 * the end) over [0, count). */
#define VEC_LOOP(count, ...)                                                  \
    do {                                                                      \
        size_t i_ = 0, n_ = (count);                                          \
        for (; i_ + VL <= n_; i_ += VL) {                                     \
            const size_t i = i_;                                              \
            const int k = VL;                                                 \
            __VA_ARGS__                                                       \
        }                                                                     \
        if (i_ < n_) {                                                        \
            const size_t i = i_;                                              \
            const int k = (int)(n_ - i_);                                     \
            __VA_ARGS__                                                       \
        }                                                                     \
    } while (0)

/* exp(x): Cephes' expf (x = n ln2 + r, degree-6 polynomial in r, 2^n into
 * the exponent field), within 2 ulp; 0 below -87.3 (where expf is under
 * 1.2e-38), and saturating at exp(88.3) above. */
static inline vf vexp(vf x)
{
    const vf lo = vsplat(-87.3f), hi = vsplat(88.3f), magic = vsplat(12582912.0f);
    vi under = vlt(x, lo);
    x = vsel(vlt(hi, x), hi, x);
    x = vsel(under, lo, x);
    vf n = (x * 1.44269504088896341f + magic) - magic;
    vf r = x - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    vf p = vsplat(1.9875691500e-4f);
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    vi e = (__builtin_convertvector(n, vi) + 127) << 23;
    return vsel(under, vsplat(0.0f), p * (vf)e);
}

/* log1p(e) for e in [0, 1]: u = 1 + e = 2^k m with k in {0, 1} and m in
 * [sqrt(1/2), sqrt(2)); log m = 2 atanh(s), s = (m - 1) / (m + 1), by its
 * series to s^11 (|s| <= 0.172: truncation error below 1e-10); plus
 * e - (u - 1), the rounding of 1 + e, so that tiny e gives e. */
static inline vf vlog1p01(vf e)
{
    vf u = 1.0f + e;
    vf c = e - (u - 1.0f);
    vi big = vlt(vsplat(1.41421356f), u);
    vf m = vsel(big, u * 0.5f, u);
    vf k = vsel(big, vsplat(0.693147181f), vsplat(0.0f));
    vf s = (m - 1.0f) / (m + 1.0f);
    vf z = s * s;
    vf p = vsplat(1.0f / 11);
    p = p * z + 1.0f / 9;
    p = p * z + 1.0f / 7;
    p = p * z + 1.0f / 5;
    p = p * z + 1.0f / 3;
    p = p * z + 1.0f;
    return k + 2.0f * s * p + c;
}

static inline vf vsigmoid(vf x) { return 1.0f / (1.0f + vexp(-x)); }
/* logsigmoid(z) = min(z, 0) - log1p(exp(-|z|)) */
static inline vf vlogsigmoid(vf z) { return vmin0(z) - vlog1p01(vexp(-vabs(z))); }

/* --------------------------------------------------------- scalar helpers */

float asn_nn_sigmoidf(float x) { return 1.0f / (1.0f + expf(-x)); }
float asn_nn_softplusf(float x) { return x > ASN_NN_SOFTPLUS_THRESHOLD ? x : log1pf(expf(x)); }
float asn_nn_softplus_gradf(float x)
{
    if (x > ASN_NN_SOFTPLUS_THRESHOLD)
        return 1.0f;
    float z = expf(x);
    return z / (z + 1.0f);
}

double asn_nn_sum(const float *x, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += x[i];
    return s;
}

/* Column sums of n rows (stride ld) of C floats, in double, into acc
 * (which the caller zeroes). */
static void colsum_d(double *acc, const float *x, int ld, int n, int C)
{
    for (int i = 0; i < n; i++) {
        const float *r = x + (size_t)i * ld;
        for (int j = 0; j < C; j++)
            acc[j] += r[j];
    }
}

/* Adds column sums of n rows of C floats into float dst (entries `step`
 * apart), summing in double a block of columns at a time. */
#define COLBLK 64
static void add_colsum(float *dst, size_t step, const float *x, int ld, int n, int C)
{
    double acc[COLBLK];
    for (int j0 = 0; j0 < C; j0 += COLBLK) {
        int w = C - j0 < COLBLK ? C - j0 : COLBLK;
        memset(acc, 0, sizeof acc);
        colsum_d(acc, x + j0, ld, n, w);
        for (int j = 0; j < w; j++)
            dst[(size_t)(j0 + j) * step] += (float)acc[j];
    }
}

/* ----------------------------------------------------------------- Linear */

/* out's n rows of oc columns set to bias: a loop, not a memcpy per row
 * (the call cost more than the copy of a few columns) */
ASN_CLONES
static void bias_rows(float *out, int ldo, const float *bias, int n, int oc)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < oc; j++)
            out[(size_t)i * ldo + j] = bias[j];
}

void asn_nn_linear_forward(float *out, int ldo, const float *inp, int ldi, const float *w, int ldw,
                           const float *bias, int n, int in, int oc)
{
    if (n <= 0 || oc <= 0)
        return;
    if (in == 1) { /* an outer product: no BLAS call */
        for (int i = 0; i < n; i++) {
            float x = inp[(size_t)i * ldi];
            float *o = out + (size_t)i * ldo;
            for (int j = 0; j < oc; j++)
                o[j] = x * w[(size_t)j * ldw] + (bias ? bias[j] : 0.0f);
        }
        return;
    }
    if (bias)
        bias_rows(out, ldo, bias, n, oc);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, oc, in, 1.0f, inp, ldi, w, ldw,
                bias ? 1.0f : 0.0f, out, ldo);
}

void asn_nn_linear_backward(float *dinp, int lddi, float *dw, int lddw, float *dbias, const float *dout,
                            int lddo, const float *inp, int ldi, const float *w, int ldw, int n, int in,
                            int oc)
{
    if (n <= 0 || oc <= 0)
        return;
    if (dinp)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, in, oc, 1.0f, dout, lddo, w, ldw, 1.0f,
                    dinp, lddi);
    if (dw)
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, oc, in, n, 1.0f, dout, lddo, inp, ldi, 1.0f,
                    dw, lddw);
    if (dbias)
        add_colsum(dbias, 1, dout, lddo, n, oc);
}

/* --------------------------------------------------------------- LayerNorm */

/* 8-float halves of a 16-lane accumulator (LayerNorm's sums) */
typedef float ln_v8 __attribute__((vector_size(32)));
typedef int32_t ln_vi8 __attribute__((vector_size(32)));
/* k floats from p (none when k <= 0), the other lanes 0 */
static inline ln_v8 ln_load8(const float *p, int k)
{
    ln_v8 v = {0};
    if (k >= 8)
        memcpy(&v, p, sizeof v);
    else
        for (int l = 0; l < k; l++)
            v[l] = p[l];
    return v;
}
/* v in the first k lanes, 0 in the others (k may be <= 0 or >= 8) */
static inline ln_v8 ln_sel8(int k, ln_v8 v)
{
    const ln_vi8 iota = {0, 1, 2, 3, 4, 5, 6, 7};
    return (ln_v8)((ln_vi8)v & ((iota - k) >> 31));
}
/* vhsum of the 16 lanes lo, hi: (i, i+8), (i, i+4), (i, i+2), (i, i+1) */
static inline float ln_hsum(ln_v8 lo, ln_v8 hi)
{
    ln_v8 b = lo + hi;
    float c0 = b[0] + b[4], c1 = b[1] + b[5], c2 = b[2] + b[6], c3 = b[3] + b[7];
    return (c0 + c2) + (c1 + c3);
}

ASN_CLONES
void asn_nn_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w,
                              const float *b, int n, int C)
{
    /* vhsum's 16-lane sums as two 8-float halves: VEC_LOOP's 16-float
     * vectors live in memory on AVX2 (3x the time there), 8 floats are a
     * register of every x86-64 level from AVX2 on. Lanes past the row's end
     * add 0, as vload's zero lanes did. */
    for (int r = 0; r < n; r++) {
        const float *x = inp + (size_t)r * C;
        float *o = out + (size_t)r * C;
        ln_v8 lo = {0}, hi = {0};
        int i = 0;
        for (; i + VL <= C; i += VL) {
            lo += ln_load8(x + i, 8);
            hi += ln_load8(x + i + 8, 8);
        }
        if (i < C) {
            lo += ln_load8(x + i, C - i);
            hi += ln_load8(x + i + 8, C - i - 8);
        }
        float m = ln_hsum(lo, hi) / (float)C;
        ln_v8 lo2 = {0}, hi2 = {0};
        for (i = 0; i + VL <= C; i += VL) {
            ln_v8 d0 = ln_load8(x + i, 8) - m, d1 = ln_load8(x + i + 8, 8) - m;
            lo2 += d0 * d0;
            hi2 += d1 * d1;
        }
        if (i < C) {
            ln_v8 d0 = ln_load8(x + i, C - i) - m, d1 = ln_load8(x + i + 8, C - i - 8) - m;
            lo2 += ln_sel8(C - i, d0 * d0);
            hi2 += ln_sel8(C - i - 8, d1 * d1);
        }
        float var = ln_hsum(lo2, hi2) / (float)C;
        float rs = 1.0f / sqrtf(var + ASN_NN_LN_EPS);
        for (int j = 0; j < C; j++)
            o[j] = (x[j] - m) * rs * w[j] + b[j];
        mean[r] = m;
        rstd[r] = rs;
    }
}

ASN_CLONES
void asn_nn_layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                               const float *w, const float *mean, const float *rstd, int n, int C)
{
    double accw[COLBLK], accb[COLBLK];
    /* input gradients, row by row */
    for (int r = 0; r < n; r++) {
        const float *x = inp + (size_t)r * C, *dy = dout + (size_t)r * C;
        float m = mean[r], rs = rstd[r];
        vf s1 = vsplat(0.0f), s2 = vsplat(0.0f);
        VEC_LOOP(C, {
            vf dn = vload(w + i, k) * vload(dy + i, k);
            vf xh = (vload(x + i, k) - m) * rs;
            s1 += dn;
            s2 += dn * xh; /* lanes past k: dn = 0 */
        });
        float dnorm_mean = vhsum(s1) / (float)C, dnorm_norm_mean = vhsum(s2) / (float)C;
        if (dinp) {
            float *dx = dinp + (size_t)r * C;
            for (int j = 0; j < C; j++) {
                float xh = (x[j] - m) * rs;
                dx[j] += (w[j] * dy[j] - dnorm_mean - xh * dnorm_norm_mean) * rs;
            }
        }
    }
    /* parameter gradients: sums over rows, a block of columns at a time */
    for (int j0 = 0; j0 < C; j0 += COLBLK) {
        int wd = C - j0 < COLBLK ? C - j0 : COLBLK;
        memset(accw, 0, sizeof accw);
        memset(accb, 0, sizeof accb);
        for (int r = 0; r < n; r++) {
            const float *x = inp + (size_t)r * C + j0, *dy = dout + (size_t)r * C + j0;
            float m = mean[r], rs = rstd[r];
            for (int j = 0; j < wd; j++) {
                accw[j] += dy[j] * ((x[j] - m) * rs);
                accb[j] += dy[j];
            }
        }
        for (int j = 0; j < wd; j++) {
            if (dw)
                dw[j0 + j] += (float)accw[j];
            if (db)
                db[j0 + j] += (float)accb[j];
        }
    }
}

/* ------------------------------------------------------- elementwise maps */

ASN_CLONES
void asn_nn_swiglu_forward(float *a, const float *g, const float *u, size_t count)
{
    VEC_LOOP(count, {
        vf gv = vload(g + i, k), uv = vload(u + i, k);
        vstore(a + i, gv * uv / (1.0f + vexp(-gv)), k);
    });
}

ASN_CLONES
void asn_nn_swiglu_backward(float *dg, float *du, const float *da, const float *g, const float *u,
                            size_t count)
{
    VEC_LOOP(count, {
        vf gv = vload(g + i, k), uv = vload(u + i, k), dav = vload(da + i, k);
        vf s = vsigmoid(gv);
        vf silu = gv * s;
        vstore(dg + i, dav * uv * (s * (1.0f + gv * (1.0f - s))), k);
        vstore(du + i, dav * silu, k);
    });
}

ASN_CLONES
void asn_nn_silu_forward(float *out, const float *inp, size_t count)
{
    VEC_LOOP(count, {
        vf x = vload(inp + i, k);
        vstore(out + i, x / (1.0f + vexp(-x)), k);
    });
}

ASN_CLONES
void asn_nn_silu_backward(float *dinp, const float *dout, const float *inp, size_t count)
{
    VEC_LOOP(count, {
        vf x = vload(inp + i, k);
        vf s = vsigmoid(x);
        vstore(dinp + i, vload(dout + i, k) * (s * (1.0f + x * (1.0f - s))), k);
    });
}

/* the element-wise kernel in pertoken.c, one per instruction set (the
 * same operations as vexp here, the same bits) */
void asn_nn_elu1_forward(float *out, int ldo, const float *inp, int ldi, int n, int w)
{
    if (w < 32) { /* narrow rows: batches of rows packed into a buffer, so that each vector holds the
                   * elements of several rows (element-wise, the same bits) */
        float buf[512];
        const int rows = 512 / w;
        for (int r0 = 0; r0 < n; r0 += rows) {
            const int rn = n - r0 < rows ? n - r0 : rows;
            for (int r = 0; r < rn; r++)
                memcpy(buf + (size_t)r * w, inp + (size_t)(r0 + r) * ldi, (size_t)w * sizeof(float));
            asn_nn_pertoken_elu1(buf, buf, rn * w);
            for (int r = 0; r < rn; r++)
                memcpy(out + (size_t)(r0 + r) * ldo, buf + (size_t)r * w, (size_t)w * sizeof(float));
        }
        return;
    }
    for (int r = 0; r < n; r++)
        asn_nn_pertoken_elu1(out + (size_t)r * ldo, inp + (size_t)r * ldi, w);
}

ASN_CLONES
void asn_nn_elu1_backward(float *dinp, int lddi, const float *dout, int lddo, const float *inp, int ldi, int n, int w)
{
    for (int r = 0; r < n; r++) {
        float *d = dinp + (size_t)r * lddi;
        const float *dy = dout + (size_t)r * lddo, *in = inp + (size_t)r * ldi;
        VEC_LOOP((size_t)w, {
            vf x = vload(in + i, k);
            vstore(d + i, vload(dy + i, k) * vsel(vlt(vsplat(0.0f), x), vsplat(1.0f), vexp(vmin0(x))), k);
        });
    }
}

/* -------------------------------------------------------------- SwiGLU MLP */

void asn_nn_mlp_tail_bias(float *bias_g, float *bias_u, const asn_nn_mlp *m, int in_used, const float *tail)
{
    int nt = m->in - in_used;
    for (int r = 0; r < m->inner; r++) {
        const float *wg = m->wg + (size_t)r * m->in + in_used, *wu = m->wu + (size_t)r * m->in + in_used;
        double sg = m->bg[r], su = m->bu[r];
        for (int t = 0; t < nt; t++) {
            sg += (double)wg[t] * tail[t];
            su += (double)wu[t] * tail[t];
        }
        bias_g[r] = (float)sg;
        bias_u[r] = (float)su;
    }
}

void asn_nn_mlp_forward(float *out, int ldo, float *g, float *u, float *a, const float *inp, int ldi,
                        int in_used, const float *bias_g, const float *bias_u, const asn_nn_mlp *m, int n)
{
    int NI = m->inner;
    asn_nn_linear_forward(g, NI, inp, ldi, m->wg, m->in, bias_g ? bias_g : m->bg, n, in_used, NI);
    asn_nn_linear_forward(u, NI, inp, ldi, m->wu, m->in, bias_u ? bias_u : m->bu, n, in_used, NI);
    asn_nn_swiglu_forward(a, g, u, (size_t)n * NI);
    asn_nn_linear_forward(out, ldo, a, NI, m->wd, NI, m->bd, n, NI, m->out);
}

void asn_nn_mlp_backward(float *dinp, int lddi, const asn_nn_mlp *dm, double *sum_dg, double *sum_du,
                         const float *dout, int lddo, const float *g, const float *u, const float *a,
                         const float *inp, int ldi, int in_used, const asn_nn_mlp *m, int n, float *scratch)
{
    int NI = m->inner;
    size_t nI = (size_t)n * NI;
    float *da = scratch, *dg = scratch + nI, *du = scratch + 2 * nI;
    memset(da, 0, nI * sizeof(float));
    asn_nn_linear_backward(da, NI, dm ? dm->wd : NULL, NI, dm ? dm->bd : NULL, dout, lddo, a, NI, m->wd, NI, n,
                           NI, m->out);
    asn_nn_swiglu_backward(dg, du, da, g, u, nI);
    asn_nn_linear_backward(dinp, lddi, dm ? dm->wg : NULL, m->in, dm ? dm->bg : NULL, dg, NI, inp, ldi,
                           m->wg, m->in, n, in_used, NI);
    asn_nn_linear_backward(dinp, lddi, dm ? dm->wu : NULL, m->in, dm ? dm->bu : NULL, du, NI, inp, ldi,
                           m->wu, m->in, n, in_used, NI);
    if (sum_dg)
        colsum_d(sum_dg, dg, NI, n, NI);
    if (sum_du)
        colsum_d(sum_du, du, NI, n, NI);
}

void asn_nn_mlp_tail_backward(float *dtail, const asn_nn_mlp *dm, const double *sum_dg, const double *sum_du,
                              const asn_nn_mlp *m, int in_used, const float *tail)
{
    int nt = m->in - in_used;
    for (int r = 0; r < m->inner; r++) {
        size_t o = (size_t)r * m->in + in_used;
        for (int t = 0; t < nt; t++) {
            if (dm) {
                dm->wg[o + t] += (float)(sum_dg[r] * tail[t]);
                dm->wu[o + t] += (float)(sum_du[r] * tail[t]);
            }
        }
    }
    if (dtail)
        for (int t = 0; t < nt; t++) {
            double s = 0;
            for (int r = 0; r < m->inner; r++) {
                size_t o = (size_t)r * m->in + in_used + t;
                s += (double)m->wg[o] * sum_dg[r] + (double)m->wu[o] * sum_du[r];
            }
            dtail[t] += (float)s;
        }
}

/* The scalar MLP, 16 rows at a time: each inner unit's gate, up and silu
 * are computed on a vector of rows, never stored. */
ASN_CLONES
void asn_nn_mlp1_forward(float *out, const float *x, const asn_nn_mlp *m, int n)
{
    const int NI = m->inner;
    const float *wg = m->wg, *bg = m->bg, *wu = m->wu, *bu = m->bu, *wd = m->wd;
    const float bd = m->bd[0];
    VEC_LOOP((size_t)n, {
        vf xv = vload(x + i, k);
        vf acc0 = vsplat(bd), acc1 = vsplat(0.0f);
        int j = 0;
        for (; j + 2 <= NI; j += 2) { /* two units per step: independent chains */
            vf g0 = xv * wg[j] + bg[j], u0 = xv * wu[j] + bu[j];
            vf g1 = xv * wg[j + 1] + bg[j + 1], u1 = xv * wu[j + 1] + bu[j + 1];
            acc0 += wd[j] * (g0 * u0 / (1.0f + vexp(-g0)));
            acc1 += wd[j + 1] * (g1 * u1 / (1.0f + vexp(-g1)));
        }
        if (j < NI) {
            vf g0 = xv * wg[j] + bg[j], u0 = xv * wu[j] + bu[j];
            acc0 += wd[j] * (g0 * u0 / (1.0f + vexp(-g0)));
        }
        vstore(out + i, acc0 + acc1, k);
    });
}

#define MLP1_BLK 32 /* inner units per pass over the rows (vector accumulators on the stack) */
ASN_CLONES
void asn_nn_mlp1_backward(float *dx, const asn_nn_mlp *dm, const float *dout, const float *x,
                          const asn_nn_mlp *m, int n)
{
    const int NI = m->inner;
    const float *wg = m->wg, *bg = m->bg, *wu = m->wu, *bu = m->bu, *wd = m->wd;
    vf awd[MLP1_BLK], awg[MLP1_BLK], abg[MLP1_BLK], awu[MLP1_BLK], abu[MLP1_BLK];
    if (dm)
        dm->bd[0] += (float)asn_nn_sum(dout, n);
    for (int j0 = 0; j0 < NI; j0 += MLP1_BLK) {
        int nj = NI - j0 < MLP1_BLK ? NI - j0 : MLP1_BLK;
        for (int j = 0; j < nj; j++)
            awd[j] = awg[j] = abg[j] = awu[j] = abu[j] = vsplat(0.0f);
        VEC_LOOP((size_t)n, {
            vf xv = vload(x + i, k), dy = vload(dout + i, k); /* lanes past k: dy = 0 */
            vf dxv = vsplat(0.0f);
            for (int jj = 0; jj < nj; jj++) {
                int j = j0 + jj;
                vf g = xv * wg[j] + bg[j], u = xv * wu[j] + bu[j];
                vf s = vsigmoid(g);
                vf silu = g * s;
                awd[jj] += dy * (silu * u);
                vf da = dy * wd[j];
                vf dg = da * u * (s * (1.0f + g * (1.0f - s)));
                vf du = da * silu;
                awg[jj] += dg * xv;
                abg[jj] += dg;
                awu[jj] += du * xv;
                abu[jj] += du;
                dxv += dg * wg[j] + du * wu[j];
            }
            if (dx)
                vstore(dx + i, vload(dx + i, k) + dxv, k);
        });
        if (dm)
            for (int jj = 0; jj < nj; jj++) {
                int j = j0 + jj;
                dm->wd[j] += vhsum(awd[jj]);
                dm->wg[j] += vhsum(awg[jj]);
                dm->bg[j] += vhsum(abg[jj]);
                dm->wu[j] += vhsum(awu[jj]);
                dm->bu[j] += vhsum(abu[jj]);
            }
    }
}

/* ------------------------------------------------- linear attention (elu+1) */

void asn_nn_linattn_stats_forward(float *P, const float *kf, int ldk, const float *v, int ldv, int n, int d)
{
    if (n <= 0)
        return;
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, d, d, n, 1.0f, kf, ldk, v, ldv, 1.0f, P, d + 1);
    add_colsum(P + d, (size_t)d + 1, kf, ldk, n, d); /* column d: sum of phi(k) */
}

void asn_nn_linattn_build(float *M, const float *P, int d, int H)
{
    int dh = d / H, w = d + H;
    for (int a = 0; a < d; a++) {
        int ha = a / dh;
        for (int b = 0; b < d; b++)
            M[(size_t)a * w + b] = b / dh == ha ? P[(size_t)a * (d + 1) + b] : 0.0f;
        for (int h = 0; h < H; h++)
            M[(size_t)a * w + d + h] = h == ha ? P[(size_t)a * (d + 1) + d] : 0.0f;
    }
}

void asn_nn_linattn_forward(float *att, float *den, const float *qf, int ldq, const float *M, int n, int d,
                            int H, float *nd)
{
    if (n <= 0)
        return;
    int dh = d / H, w = d + H;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, w, d, 1.0f, qf, ldq, M, w, 0.0f, nd, w);
    for (int i = 0; i < n; i++) {
        const float *r = nd + (size_t)i * w;
        float *o = att + (size_t)i * d;
        for (int h = 0; h < H; h++) {
            float dn = r[d + h];
            den[(size_t)i * H + h] = dn;
            float inv = dn + ASN_NN_ATTN_EPS;
            for (int j = h * dh; j < (h + 1) * dh; j++)
                o[j] = r[j] / inv;
        }
    }
}

void asn_nn_linattn_backward(float *dqf, int lddq, float *dM, const float *datt, const float *att,
                             const float *den, const float *qf, int ldq, const float *M, int n, int d,
                             int H, float *nd)
{
    if (n <= 0)
        return;
    int dh = d / H, w = d + H;
    for (int i = 0; i < n; i++) {
        const float *da = datt + (size_t)i * d, *o = att + (size_t)i * d;
        float *r = nd + (size_t)i * w;
        for (int h = 0; h < H; h++) {
            float e = den[(size_t)i * H + h] + ASN_NN_ATTN_EPS;
            float s = 0;
            for (int j = h * dh; j < (h + 1) * dh; j++) {
                r[j] = da[j] / e;
                s += da[j] * o[j];
            }
            r[d + h] = -s / e;
        }
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, d, w, 1.0f, nd, w, M, w, 0.0f, dqf, lddq);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, d, w, n, 1.0f, qf, ldq, nd, w, 1.0f, dM, w);
}

void asn_nn_linattn_dbuild(float *dkv, float *dksum, const float *dM, int d, int H)
{
    int dh = d / H, w = d + H;
    for (int a = 0; a < d; a++) {
        int ha = a / dh;
        for (int b = 0; b < d; b++)
            dkv[(size_t)a * d + b] = b / dh == ha ? dM[(size_t)a * w + b] : 0.0f;
        dksum[a] = dM[(size_t)a * w + d + ha];
    }
}

void asn_nn_linattn_stats_backward(float *dkf, int lddk, float *dv, int lddv, const float *dkv,
                                   const float *dksum, const float *kf, int ldk, const float *v, int ldv,
                                   int n, int d)
{
    if (n <= 0)
        return;
    for (int i = 0; i < n; i++)
        memcpy(dkf + (size_t)i * lddk, dksum, (size_t)d * sizeof(float));
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, d, d, 1.0f, v, ldv, dkv, d, 1.0f, dkf, lddk);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, d, d, 1.0f, kf, ldk, dkv, d, 0.0f, dv, lddv);
}

/* ------------------------------------------------------------ mean pooling */

void asn_nn_colsum(double *sum, const float *inp, int ldi, int n, int C) { colsum_d(sum, inp, ldi, n, C); }

void asn_nn_mean_backward(float *dinp, int lddi, const float *dmean, int count, int n, int C)
{
    float inv = 1.0f / (float)count;
    for (int i = 0; i < n; i++) {
        float *d = dinp + (size_t)i * lddi;
        for (int j = 0; j < C; j++)
            d[j] += dmean[j] * inv;
    }
}

/* --------------------------------------------------------- soft truncation */

/* in pertoken.c, a kernel per instruction set (GCC's AVX2 copy of this
 * loop compared lane by lane: 4x slower than AVX-512's), the same
 * operations as vlogsigmoid here, the same bits */
void asn_nn_trunc_forward(float *out, const float *l, float scale, float thr, int n)
{
    asn_nn_pertoken_trunc(out, l, scale, thr, n);
}

ASN_CLONES
void asn_nn_trunc_backward(float *dl, double *dscale, double *dthr, const float *dout, const float *l,
                           float scale, float thr, int n)
{
    vf as = vsplat(0.0f), at = vsplat(0.0f);
    VEC_LOOP((size_t)n, {
        vf lv = vload(l + i, k), dy = vload(dout + i, k); /* lanes past k: dy = 0 */
        vf sn = vsigmoid(-(lv * scale + thr));             /* d logsigmoid(z) / dz */
        vstore(dl + i, dy * (1.0f + scale * sn), k);
        as += dy * sn * lv;
        at += dy * sn;
    });
    *dscale += vhsum(as);
    *dthr += vhsum(at);
}

/* ------------------------------------- equivariant local transform (token) */

ASN_CLONES
void asn_nn_equi_forward(float *out, const float *lp, const float *r, const float *c, const float *d,
                         const asn_nn_equi *q, int n)
{
    const asn_nn_mlp *m = q->m;
    const int NI = m->inner, ld = m->in;
    VEC_LOOP((size_t)n, {
        vf f0 = vload(lp + i, k), f1 = vload(r + i, k), f2 = vload(c + i, k), f3 = vload(d + i, k);
        vf acc = vsplat(m->bd[0]);
        for (int j = 0; j < NI; j++) {
            const float *wg = m->wg + (size_t)j * ld, *wu = m->wu + (size_t)j * ld;
            vf g = f0 * wg[0] + f1 * wg[1] + f2 * wg[2] + f3 * wg[3] + q->bias_g[j];
            vf u = f0 * wu[0] + f1 * wu[1] + f2 * wu[2] + f3 * wu[3] + q->bias_u[j];
            acc = acc + (g * vsigmoid(g) * u) * m->wd[j];
        }
        vf l = f0 * q->tau + acc;
        vf z = l * q->gw[0] + f0 * q->gw[1] + f1 * q->gw[2] + f2 * q->gw[3] + f3 * q->gw[4] + q->gb;
        vstore(out + i, l + vlogsigmoid(z), k);
    });
}

void asn_nn_equi_backward(float *dlp, float *dr, float *dc, float *dd, double *acc, const float *dout,
                          const float *lp, const float *r, const float *c, const float *d, const asn_nn_equi *q,
                          int n)
{
    const asn_nn_mlp *m = q->m;
    const int NI = m->inner, ld = m->in;
    double *a_tau = acc, *a_gw = acc + 1, *a_gb = acc + 6, *a_bd = acc + 7, *a_wd = acc + 8;
    double *a_wg = a_wd + NI, *a_bg = a_wg + 4 * (size_t)NI, *a_wu = a_bg + NI, *a_bu = a_wu + 4 * (size_t)NI;
    float g[ASN_NN_EQUI_MAXI], u[ASN_NN_EQUI_MAXI], sg[ASN_NN_EQUI_MAXI];
    for (int i = 0; i < n; i++) {
        const float f[4] = {lp[i], r[i], c[i], d[i]};
        float mo = m->bd[0];
        for (int j = 0; j < NI; j++) {
            const float *wg = m->wg + (size_t)j * ld, *wu = m->wu + (size_t)j * ld;
            g[j] = f[0] * wg[0] + f[1] * wg[1] + f[2] * wg[2] + f[3] * wg[3] + q->bias_g[j];
            u[j] = f[0] * wu[0] + f[1] * wu[1] + f[2] * wu[2] + f[3] * wu[3] + q->bias_u[j];
            sg[j] = asn_nn_sigmoidf(g[j]);
            mo += g[j] * sg[j] * u[j] * m->wd[j];
        }
        float l = f[0] * q->tau + mo;
        float z = l * q->gw[0] + f[0] * q->gw[1] + f[1] * q->gw[2] + f[2] * q->gw[3] + f[3] * q->gw[4] + q->gb;
        double dy = dout[i], dz = dy * asn_nn_sigmoidf(-z), dl = dy + q->gw[0] * dz;
        *a_tau += dl * f[0];
        a_gw[0] += dz * l;
        for (int k = 0; k < 4; k++)
            a_gw[1 + k] += dz * f[k];
        *a_gb += dz;
        *a_bd += dl;
        double df[4] = {q->tau * dl + q->gw[1] * dz, q->gw[2] * dz, q->gw[3] * dz, q->gw[4] * dz};
        for (int j = 0; j < NI; j++) {
            const float *wg = m->wg + (size_t)j * ld, *wu = m->wu + (size_t)j * ld;
            double a = (double)g[j] * sg[j] * u[j];
            a_wd[j] += dl * a;
            double da = dl * m->wd[j];
            double dg = da * u[j] * sg[j] * (1.0 + g[j] * (1.0 - sg[j])), du = da * g[j] * sg[j];
            for (int k = 0; k < 4; k++) {
                a_wg[(size_t)j * 4 + k] += dg * f[k];
                a_wu[(size_t)j * 4 + k] += du * f[k];
                df[k] += dg * wg[k] + du * wu[k];
            }
            a_bg[j] += dg;
            a_bu[j] += du;
        }
        dlp[i] = (float)df[0];
        dr[i] = (float)df[1];
        dc[i] = (float)df[2];
        dd[i] = (float)df[3];
    }
}

/* ------------------------------------------------------------- log_softmax */

/* the scan and the exp sums in pertoken.c: one kernel per instruction set,
 * the one asn_nn_pertoken_level picks */
asn_nn_lse asn_nn_lse_block(const float *x, int n, int *bad, int entropy)
{
    asn_nn_lse s = {-INFINITY, 0, 0, 0, INFINITY};
    float mx, mn;
    int nan;
    asn_nn_pertoken_scan(x, n, &mx, &mn, &s.count, &nan);
    if (nan)
        *bad = 1;
    s.max = mx;
    s.min = mn;
    if (s.max == -INFINITY || !(s.max <= FLT_MAX))
        return s;
    asn_nn_pertoken_expsum(x, n, s.max, &s.sum, entropy ? &s.wsum : NULL);
    return s;
}

asn_nn_lse asn_nn_lse_merge(asn_nn_lse a, asn_nn_lse b)
{
    if (a.max == -INFINITY)
        return b;
    if (b.max == -INFINITY)
        return a;
    asn_nn_lse r;
    r.count = a.count + b.count;
    r.min = a.min < b.min ? a.min : b.min;
    r.max = a.max > b.max ? a.max : b.max;
    double da = (double)a.max - r.max, db = (double)b.max - r.max;
    double sa = exp(da), sb = exp(db);
    r.sum = a.sum * sa + b.sum * sb;
    r.wsum = sa * (a.wsum + a.sum * da) + sb * (b.wsum + b.sum * db);
    return r;
}

double asn_nn_lse_value(asn_nn_lse s) { return (double)s.max + log(s.sum); }
double asn_nn_lse_entropy(asn_nn_lse s) { return log(s.sum) - s.wsum / s.sum; }

void asn_nn_logsoftmax_forward(float *lp, const float *x, double lse, int n)
{
    /* lse as hi + lo: x - hi is exact near the top of the row */
    float hi = (float)lse, lo = (float)(lse - hi);
    for (int i = 0; i < n; i++)
        lp[i] = (x[i] - hi) - lo;
}

ASN_CLONES
void asn_nn_logsoftmax_backward(float *dx, const float *dlp, const float *lp, double sum_dlp, int n)
{
    float s = (float)sum_dlp;
    VEC_LOOP((size_t)n, { vstore(dx + i, vload(dlp + i, k) - vexp(vload(lp + i, k)) * s, k); });
}
