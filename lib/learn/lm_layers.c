/* lm_layers.c — the layers of the trainable Llama (asn/lm.h), each one's
 * forward and backward pass side by side: embedding, RMSNorm, matmul
 * (OpenBLAS), rope, causal grouped-query attention, SwiGLU, residual and
 * cross-entropy, each split over the pool's threads in fixed ranges (the
 * same sums whatever the thread count). lm.c builds the model from them.
 * Exponentials use the library's vectorized expf (asn/vexp.h, within 2
 * ulp). */
#include "asn/lm.h"
#include "asn/vexp.h" /* asn_exp_shifted: a vectorized expf */
#include "learn/lm_internal.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Rows of queries per block in attention: scores are computed only up to
 * the block's last row (causal), so a block this size wastes at most half
 * a block of columns per row. */
enum { ATT_BLOCK = 64 };

/* ------------------------------------------------------------ threading */

/* Runs fn(ctx, lo, hi, ith) over [0, n) split across the pool in blocks of
 * `align` items; which thread gets which rows depends only on n and the
 * thread count. */
typedef void (*range_fn)(void *ctx, int lo, int hi, int ith);
typedef struct range_task {
    range_fn fn;
    void *ctx;
    int n, align;
} range_task;

static void range_run(void *arg, int ith, int nth)
{
    range_task *t = arg;
    int lo, hi;
    asn_split(t->n, ith, nth, t->align, &lo, &hi);
    if (lo < hi)
        t->fn(t->ctx, lo, hi, ith);
}

static void par_for(asn_pool *pool, int n, int align, range_fn fn, void *ctx)
{
    range_task t = {fn, ctx, n, align};
    asn_pool_run(pool, range_run, &t);
}

/* Sum of n floats in 8 interleaved partial sums (so the loop vectorizes),
 * combined in a fixed order. */
static float sum_f32(const float *x, int n)
{
    float p[8] = {0};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++)
            p[k] += x[i + k];
    for (; i < n; i++)
        p[i & 7] += x[i];
    return ((p[0] + p[4]) + (p[1] + p[5])) + ((p[2] + p[6]) + (p[3] + p[7]));
}

/* the same with 8 running maxima */
static float max_f32(const float *x, int n)
{
    float p[8] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++)
            p[k] = x[i + k] > p[k] ? x[i + k] : p[k];
    for (; i < n; i++)
        p[i & 7] = x[i] > p[i & 7] ? x[i] : p[i & 7];
    float m = p[0];
    for (int k = 1; k < 8; k++)
        m = p[k] > m ? p[k] : m;
    return m;
}

/* x[0..n) = softmax(x[0..n)), in place */
static void softmax_inplace(float *x, int n)
{
    asn_exp_shifted(x, max_f32(x, n), x, n);
    float inv = 1.0f / sum_f32(x, n);
    for (int i = 0; i < n; i++)
        x[i] *= inv;
}

/* ============================================================ layers */

/* ---------------------------------------------------------- embedding */

typedef struct emb_args {
    float *out;
    const float *dout;
    float *dwte;
    const int32_t *tokens;
    const float *wte;
    int N, d;
} emb_args;

static void emb_fwd_rows(void *p, int lo, int hi, int ith)
{
    emb_args *a = p;
    for (int i = lo; i < hi; i++)
        memcpy(a->out + (size_t)i * a->d, a->wte + (size_t)a->tokens[i] * a->d, (size_t)a->d * sizeof(float));
}

void asn_lm_embedding_forward(asn_pool *pool, float *out, const int32_t *tokens, const float *wte, int N, int d)
{
    emb_args a = {.out = out, .tokens = tokens, .wte = wte, .N = N, .d = d};
    par_for(pool, N, 16, emb_fwd_rows, &a);
}

/* Split by channel: every thread scans all rows in order, so a token that
 * occurs twice adds its gradients in the same order whatever the threads. */
static void emb_bwd_cols(void *p, int lo, int hi, int ith)
{
    emb_args *a = p;
    for (int i = 0; i < a->N; i++) {
        float *dw = a->dwte + (size_t)a->tokens[i] * a->d;
        const float *g = a->dout + (size_t)i * a->d;
        for (int j = lo; j < hi; j++)
            dw[j] += g[j];
    }
}

void asn_lm_embedding_backward(asn_pool *pool, float *dwte, const float *dout, const int32_t *tokens, int N, int d)
{
    emb_args a = {.dwte = dwte, .dout = dout, .tokens = tokens, .N = N, .d = d};
    par_for(pool, d, 16, emb_bwd_cols, &a);
}

/* ------------------------------------------------------------ rmsnorm */

typedef struct rms_args {
    float *out, *rstd, *dinp, *dweight;
    const float *inp, *weight, *dout, *rstd_in;
    int N, d;
    float eps;
} rms_args;

static void rms_fwd_rows(void *p, int lo, int hi, int ith)
{
    rms_args *a = p;
    int d = a->d;
    for (int r = lo; r < hi; r++) {
        const float *x = a->inp + (size_t)r * d;
        float *o = a->out + (size_t)r * d;
        double ss = 0; /* as lib/model/forward.c */
        for (int i = 0; i < d; i++)
            ss += (double)x[i] * (double)x[i];
        float s = (float)(1.0 / sqrt(ss / d + (double)a->eps));
        for (int i = 0; i < d; i++)
            o[i] = (x[i] * s) * a->weight[i];
        a->rstd[r] = s;
    }
}

void asn_lm_rmsnorm_forward(asn_pool *pool, float *out, float *rstd, const float *inp, const float *weight, int N,
                            int d, float eps)
{
    rms_args a = {.out = out, .rstd = rstd, .inp = inp, .weight = weight, .N = N, .d = d, .eps = eps};
    par_for(pool, N, 8, rms_fwd_rows, &a);
}

/* y_i = w_i x_i r with r = (mean x^2 + eps)^(-1/2):
 *   dx_i = r w_i dy_i - r^3 x_i / d * sum_j w_j dy_j x_j,   dw_i = sum_rows dy_i x_i r */
static void rms_bwd_rows(void *p, int lo, int hi, int ith)
{
    rms_args *a = p;
    int d = a->d;
    for (int r = lo; r < hi; r++) {
        const float *x = a->inp + (size_t)r * d, *dy = a->dout + (size_t)r * d;
        float *dx = a->dinp + (size_t)r * d;
        float s = a->rstd_in[r];
        double dot = 0;
        for (int i = 0; i < d; i++)
            dot += (double)(a->weight[i] * dy[i]) * (double)x[i];
        float c = (float)((double)s * s * s * dot / d);
        for (int i = 0; i < d; i++)
            dx[i] += s * (a->weight[i] * dy[i]) - c * x[i];
    }
}

static void rms_bwd_cols(void *p, int lo, int hi, int ith)
{
    rms_args *a = p;
    int d = a->d;
    for (int r = 0; r < a->N; r++) {
        const float *x = a->inp + (size_t)r * d, *dy = a->dout + (size_t)r * d;
        float s = a->rstd_in[r];
        for (int i = lo; i < hi; i++)
            a->dweight[i] += dy[i] * (x[i] * s);
    }
}

void asn_lm_rmsnorm_backward(asn_pool *pool, float *dinp, float *dweight, const float *dout, const float *inp,
                             const float *weight, const float *rstd, int N, int d)
{
    rms_args a = {.dinp = dinp, .dweight = dweight, .dout = dout, .inp = inp, .weight = weight,
                  .rstd_in = rstd, .N = N, .d = d};
    par_for(pool, N, 8, rms_bwd_rows, &a);
    par_for(pool, d, 8, rms_bwd_cols, &a);
}

/* ------------------------------------------------------------- matmul */

typedef struct mm_args {
    float *out, *dinp, *dweight;
    const float *inp, *weight, *dout;
    int N, C, OC;
} mm_args;

static void mm_fwd_rows(void *p, int lo, int hi, int ith)
{
    mm_args *a = p;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, hi - lo, a->OC, a->C, 1.0f, a->inp + (size_t)lo * a->C,
                a->C, a->weight, a->C, 0.0f, a->out + (size_t)lo * a->OC, a->OC);
}

void asn_lm_matmul_forward(asn_pool *pool, float *out, const float *inp, const float *weight, int N, int C, int OC)
{
    mm_args a = {.out = out, .inp = inp, .weight = weight, .N = N, .C = C, .OC = OC};
    par_for(pool, N, 16, mm_fwd_rows, &a);
}

/* Thread ith takes its share of dinp's rows and of dweight's rows:
 * dinp += dout W, dW += dout^T inp (summed over all N rows). */
static void mm_bwd_run(void *p, int ith, int nth)
{
    mm_args *a = p;
    int lo, hi;
    if (a->dinp) {
        asn_split(a->N, ith, nth, 16, &lo, &hi);
        if (lo < hi)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, hi - lo, a->C, a->OC, 1.0f,
                        a->dout + (size_t)lo * a->OC, a->OC, a->weight, a->C, 1.0f, a->dinp + (size_t)lo * a->C,
                        a->C);
    }
    asn_split(a->OC, ith, nth, 16, &lo, &hi);
    if (lo < hi)
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, hi - lo, a->C, a->N, 1.0f, a->dout + lo, a->OC,
                    a->inp, a->C, 1.0f, a->dweight + (size_t)lo * a->C, a->C);
}

void asn_lm_matmul_backward(asn_pool *pool, float *dinp, float *dweight, const float *dout, const float *inp,
                            const float *weight, int N, int C, int OC)
{
    mm_args a = {.dinp = dinp, .dweight = dweight, .dout = dout, .inp = inp, .weight = weight,
                 .N = N, .C = C, .OC = OC};
    asn_pool_run(pool, mm_bwd_run, &a);
}

/* --------------------------------------------------------------- rope */

/* In double, then rounded: the table lib/model/forward.c builds. */
void asn_lm_rope_table(float *cos_tab, float *sin_tab, int T, int hd, float base)
{
    int half = hd / 2;
    for (int p = 0; p < T; p++)
        for (int k = 0; k < half; k++) {
            double theta = p * pow((double)base, -2.0 * k / hd);
            cos_tab[(size_t)p * half + k] = (float)cos(theta);
            sin_tab[(size_t)p * half + k] = (float)sin(theta);
        }
}

typedef struct rope_args {
    float *x;
    const float *cs, *sn;
    int T, nh, hd, sign;
} rope_args;

/* sign +1 rotates by theta (forward), -1 by -theta: the rotation's
 * transpose, which is the backward. */
static void rope_rows(void *p, int lo, int hi, int ith)
{
    rope_args *a = p;
    int half = a->hd / 2;
    for (int r = lo; r < hi; r++) {
        int pos = r % a->T;
        const float *cs = a->cs + (size_t)pos * half, *sn = a->sn + (size_t)pos * half;
        for (int h = 0; h < a->nh; h++) {
            float *x = a->x + ((size_t)r * a->nh + h) * a->hd;
            for (int k = 0; k < half; k++) {
                float x0 = x[2 * k], x1 = x[2 * k + 1], s = a->sign > 0 ? sn[k] : -sn[k];
                x[2 * k] = x0 * cs[k] - x1 * s;
                x[2 * k + 1] = x0 * s + x1 * cs[k];
            }
        }
    }
}

void asn_lm_rope_forward(asn_pool *pool, float *x, const float *cos_tab, const float *sin_tab, int N, int T,
                         int n_heads, int hd)
{
    rope_args a = {x, cos_tab, sin_tab, T, n_heads, hd, 1};
    par_for(pool, N, 8, rope_rows, &a);
}

void asn_lm_rope_backward(asn_pool *pool, float *dx, const float *cos_tab, const float *sin_tab, int N, int T,
                          int n_heads, int hd)
{
    rope_args a = {dx, cos_tab, sin_tab, T, n_heads, hd, -1};
    par_for(pool, N, 8, rope_rows, &a);
}

/* ---------------------------------------------------------- attention */

typedef struct att_args {
    asn_pool *pool;
    float *out, *att, *dq, *dk, *dv;
    const float *q, *k, *v, *dout, *att_in;
    int B, T, nh, nkv, hd;
} att_args;

/* One (sequence, head) per job. Per block of query rows [r0, r1): scores
 * S = scale Q K^T over keys [0, r1), causal softmax row by row, out = P V. */
static void att_fwd_jobs(void *p, int lo, int hi, int ith)
{
    att_args *a = p;
    int T = a->T, hd = a->hd, qd = a->nh * hd, kvd = a->nkv * hd, group = a->nh / a->nkv;
    float scale = 1.0f / sqrtf((float)hd);
    for (int job = lo; job < hi; job++) {
        int b = job / a->nh, h = job % a->nh, kvh = h / group;
        const float *Q = a->q + (size_t)b * T * qd + (size_t)h * hd;
        const float *K = a->k + (size_t)b * T * kvd + (size_t)kvh * hd;
        const float *V = a->v + (size_t)b * T * kvd + (size_t)kvh * hd;
        float *P = a->att + (size_t)job * T * T;
        float *O = a->out + (size_t)b * T * qd + (size_t)h * hd;
        for (int r0 = 0; r0 < T; r0 += ATT_BLOCK) {
            int r1 = r0 + ATT_BLOCK < T ? r0 + ATT_BLOCK : T;
            float *S = P + (size_t)r0 * T;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, r1 - r0, r1, hd, scale, Q + (size_t)r0 * qd, qd, K,
                        kvd, 0.0f, S, T);
            for (int i = r0; i < r1; i++) {
                float *row = P + (size_t)i * T;
                softmax_inplace(row, i + 1);
                memset(row + i + 1, 0, (size_t)(T - i - 1) * sizeof *row);
            }
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r1 - r0, hd, r1, 1.0f, S, T, V, kvd, 0.0f,
                        O + (size_t)r0 * qd, qd);
        }
    }
}

void asn_lm_attention_forward(asn_pool *pool, float *out, float *att, const float *q, const float *k,
                              const float *v, int B, int T, int nh, int nkv, int hd)
{
    att_args a = {.out = out, .att = att, .q = q, .k = k, .v = v, .B = B, .T = T, .nh = nh, .nkv = nkv, .hd = hd};
    par_for(pool, B * nh, 1, att_fwd_jobs, &a);
}

/* One (sequence, key/value head) per job, so the query heads that share
 * K and V add their gradients to dK, dV in one thread, in head order.
 *   dP = dO V^T;  dV += P^T dO;  dS = P * (dP - rowsum(P * dP));
 *   dQ += scale dS K;  dK += scale dS^T Q */
static void att_bwd_jobs(void *p, int lo, int hi, int ith)
{
    att_args *a = p;
    int T = a->T, hd = a->hd, qd = a->nh * hd, kvd = a->nkv * hd, group = a->nh / a->nkv;
    float scale = 1.0f / sqrtf((float)hd);
    float *S = asn_pool_scratch(a->pool, ith, (size_t)ATT_BLOCK * T * sizeof(float));
    for (int job = lo; job < hi; job++) {
        int b = job / a->nkv, kvh = job % a->nkv;
        const float *K = a->k + (size_t)b * T * kvd + (size_t)kvh * hd;
        const float *V = a->v + (size_t)b * T * kvd + (size_t)kvh * hd;
        float *dK = a->dk + (size_t)b * T * kvd + (size_t)kvh * hd;
        float *dV = a->dv + (size_t)b * T * kvd + (size_t)kvh * hd;
        for (int h = kvh * group; h < (kvh + 1) * group; h++) {
            const float *Q = a->q + (size_t)b * T * qd + (size_t)h * hd;
            const float *dO = a->dout + (size_t)b * T * qd + (size_t)h * hd;
            const float *P = a->att_in + ((size_t)b * a->nh + h) * T * T;
            float *dQ = a->dq + (size_t)b * T * qd + (size_t)h * hd;
            for (int r0 = 0; r0 < T; r0 += ATT_BLOCK) {
                int r1 = r0 + ATT_BLOCK < T ? r0 + ATT_BLOCK : T, nr = r1 - r0;
                const float *Pb = P + (size_t)r0 * T;
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nr, r1, hd, 1.0f, dO + (size_t)r0 * qd, qd, V,
                            kvd, 0.0f, S, T);
                cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, r1, hd, nr, 1.0f, Pb, T, dO + (size_t)r0 * qd,
                            qd, 1.0f, dV, kvd);
                for (int i = 0; i < nr; i++) {
                    const float *pr = Pb + (size_t)i * T;
                    float *sr = S + (size_t)i * T;
                    int n = r0 + i + 1;
                    float dot = 0;
                    for (int j = 0; j < n; j++)
                        dot += pr[j] * sr[j];
                    for (int j = 0; j < n; j++)
                        sr[j] = pr[j] * (sr[j] - dot);
                    for (int j = n; j < r1; j++)
                        sr[j] = 0;
                }
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, nr, hd, r1, scale, S, T, K, kvd, 1.0f,
                            dQ + (size_t)r0 * qd, qd);
                cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, r1, hd, nr, scale, S, T, Q + (size_t)r0 * qd,
                            qd, 1.0f, dK, kvd);
            }
        }
    }
}

void asn_lm_attention_backward(asn_pool *pool, float *dq, float *dk, float *dv, const float *dout,
                               const float *att, const float *q, const float *k, const float *v, int B, int T,
                               int nh, int nkv, int hd)
{
    att_args a = {.pool = pool, .dq = dq, .dk = dk, .dv = dv, .dout = dout, .att_in = att, .q = q, .k = k, .v = v,
                  .B = B, .T = T, .nh = nh, .nkv = nkv, .hd = hd};
    par_for(pool, B * nkv, 1, att_bwd_jobs, &a);
}

/* ------------------------------------------------------------- swiglu */

/* Elementwise work is split in chunks of this many values (n may exceed
 * INT_MAX). */
enum { EW_CHUNK = 4096 };

typedef struct swi_args {
    asn_pool *pool;
    float *out, *dgate, *dup;
    const float *gate, *up, *dout;
    size_t n;
} swi_args;

/* e[i] = exp(-gate[i]) for a chunk, in per-thread scratch */
static float *exp_neg(const swi_args *a, size_t i0, size_t n, int ith)
{
    float *e = asn_pool_scratch(a->pool, ith, EW_CHUNK * sizeof(float));
    for (size_t i = 0; i < n; i++)
        e[i] = -a->gate[i0 + i];
    asn_exp_shifted(e, 0.0f, e, (int)n);
    return e;
}

static void swi_fwd(void *p, int lo, int hi, int ith)
{
    swi_args *a = p;
    for (int c = lo; c < hi; c++) {
        size_t i0 = (size_t)c * EW_CHUNK, n = a->n - i0 < EW_CHUNK ? a->n - i0 : EW_CHUNK;
        const float *e = exp_neg(a, i0, n, ith);
        for (size_t i = 0; i < n; i++)
            a->out[i0 + i] = a->gate[i0 + i] / (1.0f + e[i]) * a->up[i0 + i];
    }
}

/* silu'(g) = s (1 + g (1 - s)), s = sigmoid(g) */
static void swi_bwd(void *p, int lo, int hi, int ith)
{
    swi_args *a = p;
    for (int c = lo; c < hi; c++) {
        size_t i0 = (size_t)c * EW_CHUNK, n = a->n - i0 < EW_CHUNK ? a->n - i0 : EW_CHUNK;
        const float *e = exp_neg(a, i0, n, ith);
        for (size_t i = 0; i < n; i++) {
            float g = a->gate[i0 + i], s = 1.0f / (1.0f + e[i]), dy = a->dout[i0 + i];
            a->dgate[i0 + i] += dy * a->up[i0 + i] * (s * (1.0f + g * (1.0f - s)));
            a->dup[i0 + i] += dy * (g * s);
        }
    }
}

void asn_lm_swiglu_forward(asn_pool *pool, float *out, const float *gate, const float *up, size_t n)
{
    swi_args a = {.pool = pool, .out = out, .gate = gate, .up = up, .n = n};
    par_for(pool, (int)((n + EW_CHUNK - 1) / EW_CHUNK), 1, swi_fwd, &a);
}

void asn_lm_swiglu_backward(asn_pool *pool, float *dgate, float *dup, const float *dout, const float *gate,
                            const float *up, size_t n)
{
    swi_args a = {.pool = pool, .dgate = dgate, .dup = dup, .dout = dout, .gate = gate, .up = up, .n = n};
    par_for(pool, (int)((n + EW_CHUNK - 1) / EW_CHUNK), 1, swi_bwd, &a);
}

/* ----------------------------------------------------------- residual */

typedef struct res_args {
    float *out, *da, *db;
    const float *a, *b, *dout;
    size_t n;
} res_args;

static void res_fwd(void *p, int lo, int hi, int ith)
{
    res_args *r = p;
    size_t end = (size_t)hi * EW_CHUNK < r->n ? (size_t)hi * EW_CHUNK : r->n;
    for (size_t i = (size_t)lo * EW_CHUNK; i < end; i++)
        r->out[i] = r->a[i] + r->b[i];
}

static void res_bwd(void *p, int lo, int hi, int ith)
{
    res_args *r = p;
    size_t end = (size_t)hi * EW_CHUNK < r->n ? (size_t)hi * EW_CHUNK : r->n;
    for (size_t i = (size_t)lo * EW_CHUNK; i < end; i++) {
        r->da[i] += r->dout[i];
        r->db[i] += r->dout[i];
    }
}

void asn_lm_residual_forward(asn_pool *pool, float *out, const float *a, const float *b, size_t n)
{
    res_args r = {.out = out, .a = a, .b = b, .n = n};
    par_for(pool, (int)((n + EW_CHUNK - 1) / EW_CHUNK), 1, res_fwd, &r);
}

void asn_lm_residual_backward(asn_pool *pool, float *da, float *db, const float *dout, size_t n)
{
    res_args r = {.da = da, .db = db, .dout = dout, .n = n};
    par_for(pool, (int)((n + EW_CHUNK - 1) / EW_CHUNK), 1, res_bwd, &r);
}

/* Zeroes n floats, split across the pool (the backward pass clears a few
 * activation-sized buffers per layer). */
typedef struct zero_args {
    float *p;
    size_t n;
} zero_args;

static void zero_run(void *p, int lo, int hi, int ith)
{
    zero_args *z = p;
    size_t end = (size_t)hi * EW_CHUNK < z->n ? (size_t)hi * EW_CHUNK : z->n;
    memset(z->p + (size_t)lo * EW_CHUNK, 0, (end - (size_t)lo * EW_CHUNK) * sizeof(float));
}

void asn__lm_zero(asn_pool *pool, float *p, size_t n)
{
    zero_args z = {p, n};
    par_for(pool, (int)((n + EW_CHUNK - 1) / EW_CHUNK), 1, zero_run, &z);
}

/* ------------------------------------------------------ cross-entropy */

typedef struct xent_args {
    float *losses, *probs, *dlogits;
    const float *logits, *probs_in;
    const int32_t *targets;
    float dloss;
    int V;
} xent_args;

static void xent_fwd_rows(void *p, int lo, int hi, int ith)
{
    xent_args *a = p;
    int V = a->V;
    for (int r = lo; r < hi; r++) {
        const float *x = a->logits + (size_t)r * V;
        float *pr = a->probs + (size_t)r * V;
        int t = a->targets[r];
        float xt = t >= 0 ? x[t] : 0; /* before probs (which may be x) overwrite it */
        float mx = max_f32(x, V);
        asn_exp_shifted(x, mx, pr, V);
        float sum = sum_f32(pr, V), inv = 1.0f / sum;
        /* the loss from the logits (log-sum-exp), not from a rounded probability */
        a->losses[r] = t >= 0 ? (float)(log((double)sum) - ((double)xt - mx)) : 0.0f;
        for (int i = 0; i < V; i++)
            pr[i] *= inv;
    }
}

void asn_lm_crossentropy_forward(asn_pool *pool, float *losses, float *probs, const float *logits,
                                 const int32_t *targets, int N, int V)
{
    xent_args a = {.losses = losses, .probs = probs, .logits = logits, .targets = targets, .V = V};
    par_for(pool, N, 4, xent_fwd_rows, &a);
}

static void xent_bwd_rows(void *p, int lo, int hi, int ith)
{
    xent_args *a = p;
    int V = a->V;
    for (int r = lo; r < hi; r++) {
        const float *pr = a->probs_in + (size_t)r * V;
        float *dl = a->dlogits + (size_t)r * V;
        int t = a->targets[r];
        if (t < 0) {
            memset(dl, 0, (size_t)V * sizeof *dl);
            continue;
        }
        float pt = pr[t]; /* before dlogits (which may be probs) overwrite it */
        for (int i = 0; i < V; i++)
            dl[i] = pr[i] * a->dloss;
        dl[t] = (pt - 1.0f) * a->dloss;
    }
}

void asn_lm_crossentropy_backward(asn_pool *pool, float *dlogits, float dloss, const float *probs,
                                  const int32_t *targets, int N, int V)
{
    xent_args a = {.dlogits = dlogits, .probs_in = probs, .targets = targets, .dloss = dloss, .V = V};
    par_for(pool, N, 4, xent_bwd_rows, &a);
}
