/* lm.c — the trainable Llama of asn/lm.h: parameter layout, each layer's
 * forward and backward side by side, the model's forward and backward
 * passes, and GGUF export/import.
 *
 *   x = embed(tokens)
 *   per layer:  h = rmsnorm(x) * w_attn_norm
 *               q, k, v = h Wq^T, h Wk^T, h Wv^T;  rope(q), rope(k)
 *               x = x + attention(q, k, v) Wo^T          (causal, GQA)
 *               h = rmsnorm(x) * w_ffn_norm
 *               x = x + (silu(h Wgate^T) * h Wup^T) Wdown^T
 *   logits = (rmsnorm(x) * w_out_norm) Wembd^T            (tied output)
 *   loss = mean cross-entropy(logits, targets)
 *
 * The same math as lib/model/forward.c, in the same f32 arithmetic where
 * it is cheap to (RMSNorm, rope tables), so the exported model's logits
 * match this forward pass (within 1e-4, tests/unit/test_lm.c). Exponentials
 * use the library's vectorized expf (asn/sampling.h, within 2 ulp). */
#include "asn/lm.h"
#include "asn/vexp.h" /* asn_exp_shifted: a vectorized expf */

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Rows of queries per block in attention: scores are computed only up to
 * the block's last row (causal), so a block this size wastes at most half
 * a block of columns per row. */
enum { ATT_BLOCK = 64 };

/* Standard deviation of the initial weights (GPT-2, Llama reference code). */
#define INIT_STD 0.02

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

static void zero(asn_pool *pool, float *p, size_t n)
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

/* ============================================================ model */

typedef struct layer_p {
    float *attn_norm, *wq, *wk, *wv, *wo, *ffn_norm, *gate, *up, *down;
} layer_p;

/* Per-layer activations kept from forward for backward. */
typedef struct layer_a {
    float *res_in;  /* N x d: the layer's input (the residual stream) */
    float *ln1, *rstd1, *q, *k, *v, *att, *atty;
    float *res_mid; /* N x d: after attention */
    float *ln2, *rstd2, *g, *u, *sw;
} layer_a;

struct asn_lm {
    asn_lm_config cfg;
    asn_pool *pool;
    int qd, kvd, hd;
    size_t n_params;
    float *params, *grads;
    asn_lm_tensor *tensors;
    size_t n_tensors;
    float *rope_cos, *rope_sin; /* ctx x hd/2 */

    /* activations, sized for cap_N rows and cap_att attention floats */
    size_t cap_N, cap_att;
    int B, T, have_targets, have_logits;
    int32_t *tokens, *targets;
    float *acts; /* one block; the pointers below point into it */
    layer_a *la;
    float *res_out, *lnf, *rstdf, *logits, *losses, *proj;
    /* backward scratch (one layer's worth, reused) */
    float *d_res, *d_res2, *d_proj, *d_ln, *d_q, *d_k, *d_v, *d_atty, *d_g, *d_u, *d_sw;
    float *grads_buf; /* the backward scratch block */
    int n_valid;
};

static void layer_views(const asn_lm *lm, float *base, layer_p *L, int l, float **tok_embd, float **out_norm)
{
    /* layout = the tensor table's order */
    const asn_lm_tensor *t = lm->tensors;
    *tok_embd = base + t[0].offset;
    *out_norm = base + t[lm->n_tensors - 1].offset;
    if (!L)
        return;
    const asn_lm_tensor *lt = t + 1 + (size_t)l * 9;
    L->attn_norm = base + lt[0].offset;
    L->wq = base + lt[1].offset;
    L->wk = base + lt[2].offset;
    L->wv = base + lt[3].offset;
    L->wo = base + lt[4].offset;
    L->ffn_norm = base + lt[5].offset;
    L->gate = base + lt[6].offset;
    L->up = base + lt[7].offset;
    L->down = base + lt[8].offset;
}

int asn_lm_config_check(asn_lm_config *c, asn_err *e)
{
    if (c->n_head_kv == 0)
        c->n_head_kv = c->n_head;
    if (c->rope_base == 0)
        c->rope_base = ASN_LM_ROPE_BASE;
    if (c->rms_eps == 0)
        c->rms_eps = ASN_LM_RMS_EPS;
    if (c->n_vocab <= 0 || c->dim <= 0 || c->n_layer <= 0 || c->n_head <= 0 || c->n_head_kv <= 0 || c->ffn <= 0 ||
        c->ctx <= 0)
        return asn_err_set(e, "model sizes must be positive (vocab %d, dim %d, layers %d, heads %d, kv heads %d, "
                              "ffn %d, ctx %d)", c->n_vocab, c->dim, c->n_layer, c->n_head, c->n_head_kv, c->ffn,
                           c->ctx);
    if (c->dim % c->n_head || (c->dim / c->n_head) % 2)
        return asn_err_set(e, "dim (%d) must be a multiple of heads (%d) with an even head size", c->dim, c->n_head);
    if (c->n_head % c->n_head_kv)
        return asn_err_set(e, "heads (%d) must be a multiple of kv heads (%d)", c->n_head, c->n_head_kv);
    if (!(c->rope_base > 0) || !(c->rms_eps > 0))
        return asn_err_set(e, "rope base and rms epsilon must be positive");
    if ((double)c->n_vocab * c->dim > 1e9 || (double)c->ffn * c->dim > 1e9 || c->ctx > (1 << 20))
        return asn_err_set(e, "model too large for this trainer");
    return 0;
}

static void add_tensor(asn_lm *lm, size_t *off, const char *name, int n_dims, int64_t ne0, int64_t ne1)
{
    asn_lm_tensor *t = &lm->tensors[lm->n_tensors++];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->offset = *off;
    t->n_dims = n_dims;
    t->ne[0] = ne0;
    t->ne[1] = n_dims > 1 ? ne1 : 1;
    t->size = (size_t)t->ne[0] * (size_t)t->ne[1];
    t->decay = n_dims > 1;
    /* keep every tensor 16-float aligned */
    *off += (t->size + 15) & ~(size_t)15;
}

asn_lm *asn_lm_new(const asn_lm_config *cfg, asn_pool *pool, asn_err *e)
{
    asn_lm_config c = *cfg;
    if (asn_lm_config_check(&c, e))
        return NULL;
    asn_lm *lm = asn_xcalloc(1, sizeof *lm);
    lm->cfg = c;
    lm->pool = pool;
    lm->hd = c.dim / c.n_head;
    lm->qd = c.n_head * lm->hd;
    lm->kvd = c.n_head_kv * lm->hd;
    lm->tensors = asn_xcalloc(2 + (size_t)c.n_layer * 9, sizeof *lm->tensors);
    size_t off = 0;
    int d = c.dim;
    add_tensor(lm, &off, "token_embd.weight", 2, d, c.n_vocab);
    for (int l = 0; l < c.n_layer; l++) {
        char n[48];
#define T2(s, a, b) (snprintf(n, sizeof n, "blk.%d.%s", l, s), add_tensor(lm, &off, n, 2, a, b))
#define T1(s, a) (snprintf(n, sizeof n, "blk.%d.%s", l, s), add_tensor(lm, &off, n, 1, a, 1))
        T1("attn_norm.weight", d);
        T2("attn_q.weight", d, lm->qd);
        T2("attn_k.weight", d, lm->kvd);
        T2("attn_v.weight", d, lm->kvd);
        T2("attn_output.weight", lm->qd, d);
        T1("ffn_norm.weight", d);
        T2("ffn_gate.weight", d, c.ffn);
        T2("ffn_up.weight", d, c.ffn);
        T2("ffn_down.weight", c.ffn, d);
#undef T1
#undef T2
    }
    add_tensor(lm, &off, "output_norm.weight", 1, d, 1);
    lm->n_params = off;
    lm->params = asn_xcalloc(off, sizeof(float));
    lm->grads = asn_xcalloc(off, sizeof(float));
    lm->rope_cos = asn_xmalloc((size_t)c.ctx * (lm->hd / 2) * sizeof(float));
    lm->rope_sin = asn_xmalloc((size_t)c.ctx * (lm->hd / 2) * sizeof(float));
    asn_lm_rope_table(lm->rope_cos, lm->rope_sin, c.ctx, lm->hd, c.rope_base);
    lm->la = asn_xcalloc((size_t)c.n_layer, sizeof *lm->la);
    /* all parallelism comes from the pool (see asn/lm.h) */
    openblas_set_num_threads(1);
    return lm;
}

void asn_lm_free(asn_lm *lm)
{
    if (!lm)
        return;
    free(lm->params);
    free(lm->grads);
    free(lm->tensors);
    free(lm->rope_cos);
    free(lm->rope_sin);
    free(lm->acts);
    free(lm->grads_buf);
    free(lm->la);
    free(lm->tokens);
    free(lm->targets);
    free(lm);
}

const asn_lm_config *asn_lm_cfg(const asn_lm *lm) { return &lm->cfg; }
size_t asn_lm_n_params(const asn_lm *lm) { return lm->n_params; }
float *asn_lm_params(asn_lm *lm) { return lm->params; }
float *asn_lm_grads(asn_lm *lm) { return lm->grads; }
size_t asn_lm_n_tensors(const asn_lm *lm) { return lm->n_tensors; }
const asn_lm_tensor *asn_lm_tensor_at(const asn_lm *lm, size_t i) { return i < lm->n_tensors ? &lm->tensors[i] : NULL; }

const asn_lm_tensor *asn_lm_find_tensor(const asn_lm *lm, const char *name)
{
    for (size_t i = 0; i < lm->n_tensors; i++)
        if (!strcmp(lm->tensors[i].name, name))
            return &lm->tensors[i];
    return NULL;
}

/* N(0, 1) from one Philox block: Box-Muller on two 53-bit uniforms. */
static double gauss(const asn_rng_key *key, uint64_t i)
{
    uint64_t ctr[4] = {i, 0x6c6d696e6974ULL /* "lminit" */, 0, 0}, out[4];
    asn_philox4x64(ctr, key->k, out);
    double u1 = (double)(out[0] >> 11) * 0x1.0p-53, u2 = (double)(out[1] >> 11) * 0x1.0p-53;
    return sqrt(-2.0 * log(1.0 - u1)) * cos(2.0 * M_PI * u2);
}

void asn_lm_init_weights(asn_lm *lm, uint64_t seed)
{
    asn_rng_key key = asn_rng_key_make(seed, "asn-lm", "init");
    double proj_std = INIT_STD / sqrt(2.0 * lm->cfg.n_layer);
    memset(lm->params, 0, lm->n_params * sizeof(float));
    for (size_t ti = 0; ti < lm->n_tensors; ti++) {
        const asn_lm_tensor *t = &lm->tensors[ti];
        float *p = lm->params + t->offset;
        if (t->n_dims == 1) {
            for (size_t i = 0; i < t->size; i++)
                p[i] = 1.0f;
            continue;
        }
        int proj = strstr(t->name, "attn_output") || strstr(t->name, "ffn_down");
        double sd = proj ? proj_std : INIT_STD;
        for (size_t i = 0; i < t->size; i++)
            p[i] = (float)(sd * gauss(&key, t->offset + i));
    }
}

/* Carves the activation block for N rows (and att floats) out of one
 * allocation; a larger batch reallocates. */
static void grow_acts(asn_lm *lm, size_t N, size_t att)
{
    if (N <= lm->cap_N && att <= lm->cap_att)
        return;
    N = N > lm->cap_N ? N : lm->cap_N;
    att = att > lm->cap_att ? att : lm->cap_att;
    const asn_lm_config *c = &lm->cfg;
    size_t d = (size_t)c->dim, qd = (size_t)lm->qd, kvd = (size_t)lm->kvd, F = (size_t)c->ffn,
           V = (size_t)c->n_vocab;
    size_t per_layer = N * (d + d + 1 + qd + kvd + kvd + qd + d + d + 1 + F + F + F) + att;
    size_t total = per_layer * (size_t)c->n_layer + N * (d + d + 1 + V + 1 + d);
    free(lm->acts);
    float *p = lm->acts = asn_xmalloc(total * sizeof(float));
#define TAKE(n) (p += (n), p - (n))
    for (int l = 0; l < c->n_layer; l++) {
        layer_a *A = &lm->la[l];
        A->res_in = TAKE(N * d);
        A->ln1 = TAKE(N * d);
        A->rstd1 = TAKE(N);
        A->q = TAKE(N * qd);
        A->k = TAKE(N * kvd);
        A->v = TAKE(N * kvd);
        A->att = TAKE(att);
        A->atty = TAKE(N * qd);
        A->res_mid = TAKE(N * d);
        A->ln2 = TAKE(N * d);
        A->rstd2 = TAKE(N);
        A->g = TAKE(N * F);
        A->u = TAKE(N * F);
        A->sw = TAKE(N * F);
    }
    lm->res_out = TAKE(N * d);
    lm->lnf = TAKE(N * d);
    lm->rstdf = TAKE(N);
    lm->logits = TAKE(N * V);
    lm->losses = TAKE(N);
    lm->proj = TAKE(N * d);
    /* backward scratch */
    size_t gtotal = N * (d + d + d + d + qd + kvd + kvd + qd + F + F + F);
    free(lm->grads_buf);
    p = lm->grads_buf = asn_xmalloc(gtotal * sizeof(float));
    lm->d_res = TAKE(N * d);
    lm->d_res2 = TAKE(N * d);
    lm->d_proj = TAKE(N * d);
    lm->d_ln = TAKE(N * d);
    lm->d_q = TAKE(N * qd);
    lm->d_k = TAKE(N * kvd);
    lm->d_v = TAKE(N * kvd);
    lm->d_atty = TAKE(N * qd);
    lm->d_g = TAKE(N * F);
    lm->d_u = TAKE(N * F);
    lm->d_sw = TAKE(N * F);
#undef TAKE
    lm->tokens = asn_xrealloc(lm->tokens, N * sizeof(int32_t));
    lm->targets = asn_xrealloc(lm->targets, N * sizeof(int32_t));
    lm->cap_N = N;
    lm->cap_att = att;
}

int asn_lm_forward(asn_lm *lm, const int32_t *tokens, const int32_t *targets, int B, int T, double *loss,
                   asn_err *e)
{
    const asn_lm_config *c = &lm->cfg;
    if (B <= 0 || T <= 0)
        return asn_err_set(e, "empty batch (%d x %d)", B, T);
    if (T > c->ctx)
        return asn_err_set(e, "sequence length %d exceeds the context of %d", T, c->ctx);
    int N = B * T;
    for (int i = 0; i < N; i++) {
        if (tokens[i] < 0 || tokens[i] >= c->n_vocab)
            return asn_err_set(e, "token id %d out of range [0, %d)", tokens[i], c->n_vocab);
        if (targets && (targets[i] < -1 || targets[i] >= c->n_vocab))
            return asn_err_set(e, "target id %d out of range [-1, %d)", targets[i], c->n_vocab);
    }
    grow_acts(lm, (size_t)N, (size_t)B * c->n_head * T * T);
    lm->B = B;
    lm->T = T;
    memcpy(lm->tokens, tokens, (size_t)N * sizeof *tokens);
    asn_pool *pool = lm->pool;
    int d = c->dim, qd = lm->qd, kvd = lm->kvd, hd = lm->hd, F = c->ffn, V = c->n_vocab;
    float *tok_embd, *out_norm;
    layer_views(lm, lm->params, NULL, 0, &tok_embd, &out_norm);

    asn_lm_embedding_forward(pool, lm->la[0].res_in, tokens, tok_embd, N, d);
    for (int l = 0; l < c->n_layer; l++) {
        layer_p L;
        layer_views(lm, lm->params, &L, l, &tok_embd, &out_norm);
        layer_a *A = &lm->la[l];
        float *res_next = l + 1 < c->n_layer ? lm->la[l + 1].res_in : lm->res_out;
        asn_lm_rmsnorm_forward(pool, A->ln1, A->rstd1, A->res_in, L.attn_norm, N, d, c->rms_eps);
        asn_lm_matmul_forward(pool, A->q, A->ln1, L.wq, N, d, qd);
        asn_lm_matmul_forward(pool, A->k, A->ln1, L.wk, N, d, kvd);
        asn_lm_matmul_forward(pool, A->v, A->ln1, L.wv, N, d, kvd);
        asn_lm_rope_forward(pool, A->q, lm->rope_cos, lm->rope_sin, N, T, c->n_head, hd);
        asn_lm_rope_forward(pool, A->k, lm->rope_cos, lm->rope_sin, N, T, c->n_head_kv, hd);
        asn_lm_attention_forward(pool, A->atty, A->att, A->q, A->k, A->v, B, T, c->n_head, c->n_head_kv, hd);
        asn_lm_matmul_forward(pool, lm->proj, A->atty, L.wo, N, qd, d);
        asn_lm_residual_forward(pool, A->res_mid, A->res_in, lm->proj, (size_t)N * d);
        asn_lm_rmsnorm_forward(pool, A->ln2, A->rstd2, A->res_mid, L.ffn_norm, N, d, c->rms_eps);
        asn_lm_matmul_forward(pool, A->g, A->ln2, L.gate, N, d, F);
        asn_lm_matmul_forward(pool, A->u, A->ln2, L.up, N, d, F);
        asn_lm_swiglu_forward(pool, A->sw, A->g, A->u, (size_t)N * F);
        asn_lm_matmul_forward(pool, lm->proj, A->sw, L.down, N, F, d);
        asn_lm_residual_forward(pool, res_next, A->res_mid, lm->proj, (size_t)N * d);
    }
    asn_lm_rmsnorm_forward(pool, lm->lnf, lm->rstdf, lm->res_out, out_norm, N, d, c->rms_eps);
    asn_lm_matmul_forward(pool, lm->logits, lm->lnf, tok_embd, N, d, V);

    lm->have_targets = targets != NULL;
    lm->have_logits = targets == NULL;
    if (!targets) {
        if (loss)
            *loss = 0;
        return 0;
    }
    memcpy(lm->targets, targets, (size_t)N * sizeof *targets);
    asn_lm_crossentropy_forward(pool, lm->losses, lm->logits, lm->logits, targets, N, V);
    double sum = 0;
    int n = 0;
    for (int i = 0; i < N; i++)
        if (targets[i] >= 0) {
            sum += lm->losses[i];
            n++;
        }
    lm->n_valid = n;
    if (loss)
        *loss = n ? sum / n : 0.0;
    return 0;
}

const float *asn_lm_logits(const asn_lm *lm) { return lm->have_logits ? lm->logits : NULL; }

void asn_lm_zero_grad(asn_lm *lm) { zero(lm->pool, lm->grads, lm->n_params); }

int asn_lm_backward(asn_lm *lm, float scale, asn_err *e)
{
    if (!lm->have_targets)
        return asn_err_set(e, "backward needs a forward pass with targets");
    const asn_lm_config *c = &lm->cfg;
    asn_pool *pool = lm->pool;
    int B = lm->B, T = lm->T, N = B * T;
    int d = c->dim, qd = lm->qd, kvd = lm->kvd, hd = lm->hd, F = c->ffn, V = c->n_vocab;
    size_t Nd = (size_t)N * d;
    float *tok_embd, *out_norm, *g_tok_embd, *g_out_norm;
    layer_views(lm, lm->params, NULL, 0, &tok_embd, &out_norm);
    layer_views(lm, lm->grads, NULL, 0, &g_tok_embd, &g_out_norm);
    lm->have_targets = 0; /* the probabilities are consumed below */
    if (lm->n_valid == 0)
        return 0;

    float *dlogits = lm->logits; /* in place over the probabilities */
    asn_lm_crossentropy_backward(pool, dlogits, scale / (float)lm->n_valid, lm->logits, lm->targets, N, V);
    zero(pool, lm->d_ln, Nd);
    asn_lm_matmul_backward(pool, lm->d_ln, g_tok_embd, dlogits, lm->lnf, tok_embd, N, d, V);
    /* d_res: gradient of the residual stream between layers; d_res2: of
     * the stream between a layer's attention and its feed-forward half */
    float *d_out = lm->d_res, *d_mid = lm->d_res2;
    zero(pool, d_out, Nd);
    asn_lm_rmsnorm_backward(pool, d_out, g_out_norm, lm->d_ln, lm->res_out, out_norm, lm->rstdf, N, d);

    for (int l = c->n_layer - 1; l >= 0; l--) {
        layer_p L, G;
        layer_views(lm, lm->params, &L, l, &tok_embd, &out_norm);
        layer_views(lm, lm->grads, &G, l, &g_tok_embd, &g_out_norm);
        layer_a *A = &lm->la[l];
        /* x_out = x_mid + ffn(x_mid) */
        zero(pool, d_mid, Nd);
        zero(pool, lm->d_proj, Nd);
        asn_lm_residual_backward(pool, d_mid, lm->d_proj, d_out, Nd);
        zero(pool, lm->d_sw, (size_t)N * F);
        asn_lm_matmul_backward(pool, lm->d_sw, G.down, lm->d_proj, A->sw, L.down, N, F, d);
        zero(pool, lm->d_g, (size_t)N * F);
        zero(pool, lm->d_u, (size_t)N * F);
        asn_lm_swiglu_backward(pool, lm->d_g, lm->d_u, lm->d_sw, A->g, A->u, (size_t)N * F);
        zero(pool, lm->d_ln, Nd);
        asn_lm_matmul_backward(pool, lm->d_ln, G.gate, lm->d_g, A->ln2, L.gate, N, d, F);
        asn_lm_matmul_backward(pool, lm->d_ln, G.up, lm->d_u, A->ln2, L.up, N, d, F);
        asn_lm_rmsnorm_backward(pool, d_mid, G.ffn_norm, lm->d_ln, A->res_mid, L.ffn_norm, A->rstd2, N, d);
        /* x_mid = x_in + attention(x_in); d_out's buffer now takes d(x_in) */
        float *d_in = d_out;
        zero(pool, d_in, Nd);
        zero(pool, lm->d_proj, Nd);
        asn_lm_residual_backward(pool, d_in, lm->d_proj, d_mid, Nd);
        zero(pool, lm->d_atty, (size_t)N * qd);
        asn_lm_matmul_backward(pool, lm->d_atty, G.wo, lm->d_proj, A->atty, L.wo, N, qd, d);
        zero(pool, lm->d_q, (size_t)N * qd);
        zero(pool, lm->d_k, (size_t)N * kvd);
        zero(pool, lm->d_v, (size_t)N * kvd);
        asn_lm_attention_backward(pool, lm->d_q, lm->d_k, lm->d_v, lm->d_atty, A->att, A->q, A->k, A->v, B, T,
                                  c->n_head, c->n_head_kv, hd);
        asn_lm_rope_backward(pool, lm->d_q, lm->rope_cos, lm->rope_sin, N, T, c->n_head, hd);
        asn_lm_rope_backward(pool, lm->d_k, lm->rope_cos, lm->rope_sin, N, T, c->n_head_kv, hd);
        zero(pool, lm->d_ln, Nd);
        asn_lm_matmul_backward(pool, lm->d_ln, G.wq, lm->d_q, A->ln1, L.wq, N, d, qd);
        asn_lm_matmul_backward(pool, lm->d_ln, G.wk, lm->d_k, A->ln1, L.wk, N, d, kvd);
        asn_lm_matmul_backward(pool, lm->d_ln, G.wv, lm->d_v, A->ln1, L.wv, N, d, kvd);
        asn_lm_rmsnorm_backward(pool, d_in, G.attn_norm, lm->d_ln, A->res_in, L.attn_norm, A->rstd1, N, d);
    }
    asn_lm_embedding_backward(pool, g_tok_embd, d_out, lm->tokens, N, d);
    return 0;
}

int asn_lm_eval(asn_lm *lm, const int32_t *ids, size_t n, size_t max_preds, int B, int T, double *loss,
                asn_err *e)
{
    size_t preds = n > 0 ? n - 1 : 0;
    if (max_preds && max_preds < preds)
        preds = max_preds;
    if (!preds || B <= 0 || T <= 0)
        return asn_err_set(e, "nothing to evaluate (%zu tokens)", n);
    int32_t *inp = asn_xmalloc((size_t)B * T * sizeof *inp), *tgt = asn_xmalloc((size_t)B * T * sizeof *tgt);
    double sum = 0;
    size_t count = 0, pos = 0;
    int rc = 0;
    while (pos < preds && !rc) {
        /* full windows B at a time; a shorter last one alone */
        int len = preds - pos >= (size_t)T ? T : (int)(preds - pos), b = 0;
        while (b < B && pos + (size_t)len <= preds && (len == T || b == 0)) {
            memcpy(inp + (size_t)b * len, ids + pos, (size_t)len * sizeof *ids);
            memcpy(tgt + (size_t)b * len, ids + pos + 1, (size_t)len * sizeof *ids);
            pos += (size_t)len;
            b++;
            if (len < T)
                break;
        }
        double l;
        rc = asn_lm_forward(lm, inp, tgt, b, len, &l, e);
        sum += l * (double)b * len;
        count += (size_t)b * len;
    }
    free(inp);
    free(tgt);
    if (!rc)
        *loss = sum / (double)count;
    return rc;
}

typedef struct adamw_task {
    asn_lm *lm;
    const asn_adamw *h;
    long t;
    float lr, wd;
    float *m, *v;
} adamw_task;

static void adamw_run(void *arg, int ith, int nth)
{
    adamw_task *u = arg;
    for (size_t i = 0; i < u->lm->n_tensors; i++) {
        const asn_lm_tensor *t = &u->lm->tensors[i];
        int lo, hi;
        asn_split((int)t->size, ith, nth, 64, &lo, &hi);
        size_t o = t->offset + (size_t)lo;
        if (lo < hi)
            asn_adamw_step(u->h, u->t, u->lr, t->decay ? u->wd : 0.0f, u->lm->params + o, u->lm->grads + o,
                           u->m + o, u->v + o, (size_t)(hi - lo));
    }
}

void asn_lm_adamw_step(asn_lm *lm, const asn_adamw *h, long t, float lr, float weight_decay, float *m, float *v)
{
    adamw_task u = {lm, h, t, lr, weight_decay, m, v};
    asn_pool_run(lm->pool, adamw_run, &u);
}

/* ============================================================== GGUF */

void asn_lm_gguf_meta(const asn_lm *lm, asn_gguf_writer *w, const char *name)
{
    const asn_lm_config *c = &lm->cfg;
    asn_gguf_set_str(w, "general.architecture", "llama");
    asn_gguf_set_str(w, "general.name", name && *name ? name : "asn-lm");
    asn_gguf_set_u32(w, "general.file_type", 0); /* llama.cpp's LLAMA_FTYPE_ALL_F32 */
    asn_gguf_set_u32(w, "llama.vocab_size", (uint32_t)c->n_vocab);
    asn_gguf_set_u32(w, "llama.context_length", (uint32_t)c->ctx);
    asn_gguf_set_u32(w, "llama.embedding_length", (uint32_t)c->dim);
    asn_gguf_set_u32(w, "llama.block_count", (uint32_t)c->n_layer);
    asn_gguf_set_u32(w, "llama.feed_forward_length", (uint32_t)c->ffn);
    asn_gguf_set_u32(w, "llama.attention.head_count", (uint32_t)c->n_head);
    asn_gguf_set_u32(w, "llama.attention.head_count_kv", (uint32_t)c->n_head_kv);
    asn_gguf_set_u32(w, "llama.rope.dimension_count", (uint32_t)lm->hd);
    asn_gguf_set_f32(w, "llama.rope.freq_base", c->rope_base);
    asn_gguf_set_f32(w, "llama.attention.layer_norm_rms_epsilon", c->rms_eps);
}

static int fits_i32(int64_t v) { return v >= INT32_MIN && v <= INT32_MAX; }

int asn_lm_gguf_copy_tokenizer(asn_gguf_writer *w, const asn_gguf *src, asn_err *e)
{
    for (size_t i = 0; i < asn_gguf_n_kv(src); i++) {
        const asn_gguf_kv *kv = asn_gguf_kv_at(src, i);
        if (kv->key.n < 10 || memcmp(kv->key.p, "tokenizer.", 10))
            continue;
        char key[256];
        if (kv->key.n >= sizeof key)
            return asn_err_set(e, "%s: key too long", asn_gguf_path(src));
        memcpy(key, kv->key.p, kv->key.n);
        key[kv->key.n] = 0;
        switch (kv->type) {
        case ASN_GGUF_U8:
        case ASN_GGUF_U16:
        case ASN_GGUF_U32:
            asn_gguf_set_u32(w, key, (uint32_t)kv->v.u);
            break;
        case ASN_GGUF_U64:
            asn_gguf_set_u64(w, key, kv->v.u);
            break;
        case ASN_GGUF_I8:
        case ASN_GGUF_I16:
        case ASN_GGUF_I32:
        case ASN_GGUF_I64:
            if (!fits_i32(kv->v.i))
                return asn_err_set(e, "%s: %s: value out of 32-bit range", asn_gguf_path(src), key);
            asn_gguf_set_i32(w, key, (int32_t)kv->v.i);
            break;
        case ASN_GGUF_F32:
        case ASN_GGUF_F64:
            asn_gguf_set_f32(w, key, (float)kv->v.f);
            break;
        case ASN_GGUF_BOOL:
            asn_gguf_set_bool(w, key, kv->v.u != 0);
            break;
        case ASN_GGUF_STRING: {
            char *s = asn_xmalloc(kv->v.s.n + 1);
            memcpy(s, kv->v.s.p, kv->v.s.n);
            s[kv->v.s.n] = 0;
            asn_gguf_set_str(w, key, s);
            free(s);
            break;
        }
        case ASN_GGUF_ARRAY: {
            uint64_t n = kv->v.arr.n;
            asn_gguf_vtype et = kv->v.arr.type;
            if (et == ASN_GGUF_STRING) {
                char **v = asn_xcalloc(n ? n : 1, sizeof *v);
                for (uint64_t j = 0; j < n; j++) {
                    asn_gguf_str s = asn_gguf_arr_str(kv, j);
                    v[j] = asn_xmalloc(s.n + 1);
                    memcpy(v[j], s.p, s.n);
                    v[j][s.n] = 0;
                }
                asn_gguf_set_arr_str(w, key, (const char *const *)v, n);
                for (uint64_t j = 0; j < n; j++)
                    free(v[j]);
                free(v);
            } else if (et == ASN_GGUF_F32 || et == ASN_GGUF_F64) {
                float *v = asn_xmalloc((n ? n : 1) * sizeof *v);
                for (uint64_t j = 0; j < n; j++)
                    v[j] = (float)asn_gguf_arr_float(kv, j);
                asn_gguf_set_arr_f32(w, key, v, n);
                free(v);
            } else {
                int32_t *v = asn_xmalloc((n ? n : 1) * sizeof *v);
                for (uint64_t j = 0; j < n; j++) {
                    int64_t x = asn_gguf_arr_int(kv, j);
                    if (!fits_i32(x)) {
                        free(v);
                        return asn_err_set(e, "%s: %s: element %llu out of 32-bit range", asn_gguf_path(src), key,
                                           (unsigned long long)j);
                    }
                    v[j] = (int32_t)x;
                }
                asn_gguf_set_arr_i32(w, key, v, n);
                free(v);
            }
            break;
        }
        default:
            return asn_err_set(e, "%s: %s: value type %d cannot be copied", asn_gguf_path(src), key, (int)kv->type);
        }
    }
    return 0;
}

void asn_lm_gguf_tensors(const asn_lm *lm, asn_gguf_writer *w, const char *prefix, const float *data)
{
    for (size_t i = 0; i < lm->n_tensors; i++) {
        const asn_lm_tensor *t = &lm->tensors[i];
        char name[128];
        snprintf(name, sizeof name, "%s%s", prefix ? prefix : "", t->name);
        asn_gguf_add_tensor(w, name, ASN_T_F32, (uint32_t)t->n_dims, t->ne, data + t->offset);
    }
}

int asn_lm_gguf_read_tensors(const asn_lm *lm, const asn_gguf *g, const char *prefix, float *data, asn_err *e)
{
    for (size_t i = 0; i < lm->n_tensors; i++) {
        const asn_lm_tensor *t = &lm->tensors[i];
        char name[128];
        snprintf(name, sizeof name, "%s%s", prefix ? prefix : "", t->name);
        const asn_gguf_tensor *gt = asn_gguf_find_tensor(g, name);
        if (!gt)
            return asn_err_set(e, "%s: tensor %s is missing", asn_gguf_path(g), name);
        if (gt->type != ASN_T_F32)
            return asn_err_set(e, "%s: tensor %s has type %s, expected F32", asn_gguf_path(g), name,
                               asn_ttype_name(gt->type));
        if ((int)gt->n_dims != t->n_dims || gt->ne[0] != t->ne[0] || gt->ne[1] != t->ne[1])
            return asn_err_set(e, "%s: tensor %s has shape {%lld, %lld}, expected {%lld, %lld}", asn_gguf_path(g),
                               name, (long long)gt->ne[0], (long long)gt->ne[1], (long long)t->ne[0],
                               (long long)t->ne[1]);
        memcpy(data + t->offset, gt->data, t->size * sizeof(float));
    }
    return 0;
}

int asn_lm_config_from_gguf(const asn_gguf *g, asn_lm_config *c, asn_err *e)
{
    char *arch = NULL;
    if (asn_gguf_get_str(g, "general.architecture", 1, &arch, e))
        return -1;
    int ok = !strcmp(arch, "llama");
    free(arch);
    if (!ok)
        return asn_err_set(e, "%s: general.architecture is not \"llama\"", asn_gguf_path(g));
    memset(c, 0, sizeof *c);
    uint32_t v = 0;
    struct {
        const char *key;
        int *dst;
        int required;
    } keys[] = {
        {"llama.vocab_size", &c->n_vocab, 1},          {"llama.context_length", &c->ctx, 1},
        {"llama.embedding_length", &c->dim, 1},        {"llama.block_count", &c->n_layer, 1},
        {"llama.feed_forward_length", &c->ffn, 1},     {"llama.attention.head_count", &c->n_head, 1},
        {"llama.attention.head_count_kv", &c->n_head_kv, 0},
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        v = 0;
        if (asn_gguf_get_u32(g, keys[i].key, keys[i].required, &v, e))
            return -1;
        if (v > (1u << 30))
            return asn_err_set(e, "%s: %s = %u is out of range", asn_gguf_path(g), keys[i].key, v);
        *keys[i].dst = (int)v;
    }
    if (asn_gguf_get_f32(g, "llama.rope.freq_base", 0, &c->rope_base, e) ||
        asn_gguf_get_f32(g, "llama.attention.layer_norm_rms_epsilon", 0, &c->rms_eps, e))
        return -1;
    if (asn_lm_config_check(c, e))
        return asn_err_prefix(e, "%s", asn_gguf_path(g));
    return 0;
}

int asn_lm_save(const asn_lm *lm, const char *path, const char *name, const asn_gguf *vocab, asn_err *e)
{
    return asn_lm_checkpoint_save(lm, path, name, vocab, NULL, NULL, e);
}

/* ------------------------------------------------------- checkpoints */

int asn_lm_checkpoint_save(const asn_lm *lm, const char *path, const char *name, const asn_gguf *vocab,
                           const asn_lm_state *st, const char *const *extra, asn_err *e)
{
    asn_gguf_writer *w = asn_gguf_writer_new();
    asn_lm_gguf_meta(lm, w, name);
    if (vocab && asn_lm_gguf_copy_tokenizer(w, vocab, e)) {
        asn_gguf_writer_free(w);
        return -1;
    }
    if (st) {
        char el[64]; /* as text: an f32 would lose seconds on long runs */
        snprintf(el, sizeof el, "%.3f", st->elapsed);
        asn_gguf_set_u64(w, "asn.train.step", (uint64_t)st->step);
        asn_gguf_set_u64(w, "asn.train.tokens", st->tokens);
        asn_gguf_set_u64(w, "asn.train.windows", st->windows);
        asn_gguf_set_str(w, "asn.train.elapsed", el);
    }
    for (int i = 0; extra && extra[i] && extra[i + 1]; i += 2)
        asn_gguf_set_str(w, extra[i], extra[i + 1]);
    asn_lm_gguf_tensors(lm, w, "", lm->params);
    if (st) {
        asn_lm_gguf_tensors(lm, w, "adam.m.", st->m);
        asn_lm_gguf_tensors(lm, w, "adam.v.", st->v);
    }
    int rc = asn_gguf_write(w, path, e);
    asn_gguf_writer_free(w);
    return rc;
}

int asn_lm_checkpoint_load(asn_lm *lm, const asn_gguf *g, asn_lm_state *st, asn_err *e)
{
    asn_lm_config c;
    if (asn_lm_config_from_gguf(g, &c, e))
        return -1;
    const asn_lm_config *m = &lm->cfg;
    struct {
        const char *what;
        double have, want;
    } cmp[] = {{"vocab size", c.n_vocab, m->n_vocab}, {"dim", c.dim, m->dim},
               {"layers", c.n_layer, m->n_layer},     {"heads", c.n_head, m->n_head},
               {"kv-heads", c.n_head_kv, m->n_head_kv}, {"ffn", c.ffn, m->ffn},
               {"ctx", c.ctx, m->ctx},                {"rope-base", c.rope_base, m->rope_base},
               {"rms-eps", c.rms_eps, m->rms_eps}};
    for (size_t i = 0; i < sizeof cmp / sizeof cmp[0]; i++)
        if (cmp[i].have != cmp[i].want)
            return asn_err_set(e, "%s: the checkpoint has %s %g, the model %g", asn_gguf_path(g), cmp[i].what,
                               cmp[i].have, cmp[i].want);
    int64_t step = 0, tokens = 0, windows = 0;
    char *el = NULL;
    if (asn_lm_gguf_read_tensors(lm, g, "", lm->params, e) || asn_lm_gguf_read_tensors(lm, g, "adam.m.", st->m, e) ||
        asn_lm_gguf_read_tensors(lm, g, "adam.v.", st->v, e) ||
        asn_gguf_get_i64(g, "asn.train.step", 1, &step, e) || asn_gguf_get_i64(g, "asn.train.tokens", 1, &tokens, e) ||
        asn_gguf_get_i64(g, "asn.train.windows", 1, &windows, e) || asn_gguf_get_str(g, "asn.train.elapsed", 1, &el, e))
        return -1;
    st->step = (long)step;
    st->tokens = (uint64_t)tokens;
    st->windows = (uint64_t)windows;
    st->elapsed = strtod(el, NULL);
    free(el);
    return 0;
}
