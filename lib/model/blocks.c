/* blocks.c — the building blocks architectures wire their layers from
 * (attention is attention.c): norms, residual adds, feed-forward kinds, and
 * the weight product every block uses. Each row is computed alone, in a
 * fixed order, so no result depends on the batch. */
#include "engine.h"
#include "asn/linalg.h"

#include <math.h>
#include <string.h>

void blk_matmul(asn_engine *en, const float *X, int T, const wmat *w, const float *bias, float *Y)
{
    if (!en->exact && asn_qmatmul_supported(w->type, w->cols))
        asn_qmatmul(en->pool, X, T, w->cols, w->cols, w->data, w->type, w->rows, bias, Y, w->rows);
    else
        asn_matmul(en->pool, X, T, w->cols, w->cols, w->data, w->type, w->rows, bias, Y, w->rows);
}

void rmsnorm_row(float *out, const float *x, const float *w, int d, float eps)
{
    double ss = 0;
    for (int i = 0; i < d; i++)
        ss += (double)x[i] * (double)x[i];
    float scale = (float)(1.0 / sqrt(ss / d + (double)eps));
    for (int i = 0; i < d; i++)
        out[i] = (x[i] * scale) * w[i];
}

void blk_rmsnorm(const fwd *f, float *out, const float *in, const float *w)
{
    float eps = f->m->cfg.rms_eps;
    for (int r = 0; r < f->T; r++)
        rmsnorm_row(out + (size_t)r * f->d, in + (size_t)r * f->d, w, f->d, eps);
}

/* (x - mean) / sqrt(var + eps) * w + b, mean and variance in double. */
static void layernorm_row(float *out, const float *x, const float *w, const float *b, int d, float eps)
{
    double s = 0, ss = 0;
    for (int i = 0; i < d; i++)
        s += x[i];
    double mean = s / d;
    for (int i = 0; i < d; i++)
        ss += ((double)x[i] - mean) * ((double)x[i] - mean);
    double inv = 1.0 / sqrt(ss / d + (double)eps);
    for (int i = 0; i < d; i++)
        out[i] = (float)(((double)x[i] - mean) * inv) * w[i] + (b ? b[i] : 0.0f);
}

void blk_layernorm(const fwd *f, float *out, const float *in, const float *w, const float *b)
{
    float eps = f->m->cfg.norm_eps;
    for (int r = 0; r < f->T; r++)
        layernorm_row(out + (size_t)r * f->d, in + (size_t)r * f->d, w, b, f->d, eps);
}

void blk_add(const fwd *f, float *x, const float *y)
{
    for (size_t r = 0; r < (size_t)f->T * (size_t)f->d; r++)
        x[r] += y[r];
}

static float silu(float x) { return x / (1.0f + expf(-x)); }
static float gelu_tanh(float x)
{
    return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
}
static float gelu_erf(float x) { return 0.5f * x * (1.0f + erff(x * 0.7071067811865476f)); }

void blk_ffn(const fwd *f, const layer_w *L, enum ffn_kind kind, const float *in, float *out)
{
    asn_engine *en = f->en;
    const size_t T = (size_t)f->T, ff = (size_t)f->m->cfg.n_ff;
    switch (kind) {
    case FFN_SWIGLU:
    case FFN_GEGLU_TANH:
        blk_matmul(en, in, f->T, &L->gate, NULL, en->g);
        blk_matmul(en, in, f->T, &L->up, NULL, en->u);
        for (size_t r = 0; r < T * ff; r++) {
            float gv = en->g[r];
            en->g[r] = (kind == FFN_SWIGLU ? silu(gv) : gelu_tanh(gv)) * en->u[r];
        }
        blk_matmul(en, en->g, f->T, &L->down, NULL, out);
        break;
    case FFN_SWIGLU_FUSED: /* each row of up x: gate values, then up values */
        blk_matmul(en, in, f->T, &L->up, NULL, en->g);
        for (size_t r = 0; r < T; r++)
            for (size_t i = 0; i < ff; i++)
                en->u[r * ff + i] = silu(en->g[r * 2 * ff + i]) * en->g[r * 2 * ff + ff + i];
        blk_matmul(en, en->u, f->T, &L->down, NULL, out);
        break;
    case FFN_GELU:
        blk_matmul(en, in, f->T, &L->up, L->b_up, en->g);
        for (size_t r = 0; r < T * ff; r++)
            en->g[r] = gelu_erf(en->g[r]);
        blk_matmul(en, en->g, f->T, &L->down, L->b_down, out);
        break;
    }
}
