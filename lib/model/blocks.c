/* blocks.c — the building blocks architectures wire their layers from
 * (attention is attention.c): norms, residual adds, feed-forward kinds, and
 * the weight product every block uses. Each row is computed alone, in a
 * fixed order, so no result depends on the batch or on the thread that
 * computes it. */
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

/* Row-wise blocks on the pool: rows [lo, hi) of a split in fixed blocks, so
 * each row is computed alone, in its own fixed order, by whichever thread
 * (the same bits at every thread count). Below ROWS_MIN rows (decode) the
 * caller does them all: waking the workers would cost more. */
enum { ROWS_MIN = 8 };

typedef struct rows_task {
    const fwd *f;
    float *out;
    const float *in, *w, *b;
    int n;    /* rows */
    int kind; /* blk_ffn's activation (enum ffn_kind) */
    void (*fn)(const struct rows_task *t, int lo, int hi);
} rows_task;

static void rows_run(void *arg, int ith, int nth)
{
    const rows_task *t = arg;
    int lo, hi;
    asn_split(t->n, ith, nth, 1, &lo, &hi);
    if (hi > lo)
        t->fn(t, lo, hi);
}

static void rows_do(rows_task *t)
{
    if (t->n >= ROWS_MIN && t->f->en && t->f->en->pool)
        asn_pool_run(t->f->en->pool, rows_run, t);
    else
        t->fn(t, 0, t->n);
}

static void rmsnorm_rows(const rows_task *t, int lo, int hi)
{
    const int d = t->f->d;
    const float eps = t->f->m->cfg.rms_eps;
    for (int r = lo; r < hi; r++)
        rmsnorm_row(t->out + (size_t)r * d, t->in + (size_t)r * d, t->w, d, eps);
}

void blk_rmsnorm(const fwd *f, float *out, const float *in, const float *w)
{
    rows_task t = {f, out, in, w, NULL, f->T, 0, rmsnorm_rows};
    rows_do(&t);
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

static void layernorm_rows(const rows_task *t, int lo, int hi)
{
    const int d = t->f->d;
    const float eps = t->f->m->cfg.norm_eps;
    for (int r = lo; r < hi; r++)
        layernorm_row(t->out + (size_t)r * d, t->in + (size_t)r * d, t->w, t->b, d, eps);
}

void blk_layernorm(const fwd *f, float *out, const float *in, const float *w, const float *b)
{
    rows_task t = {f, out, in, w, b, f->T, 0, layernorm_rows};
    rows_do(&t);
}

static void add_rows(const rows_task *t, int lo, int hi)
{
    const size_t d = (size_t)t->f->d;
    for (size_t r = (size_t)lo * d; r < (size_t)hi * d; r++)
        t->out[r] += t->in[r];
}

void blk_add(const fwd *f, float *x, const float *y)
{
    rows_task t = {f, x, y, NULL, NULL, f->T, 0, add_rows};
    rows_do(&t);
}

static float silu(float x) { return x / (1.0f + expf(-x)); }
static float gelu_tanh(float x)
{
    return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
}
static float gelu_erf(float x) { return 0.5f * x * (1.0f + erff(x * 0.7071067811865476f)); }

/* The activation of rows [lo, hi): SWIGLU and GEGLU_TANH g = act(g) * u in
 * place; SWIGLU_FUSED u = silu(gate half of g) * (up half of g); GELU g =
 * gelu(g). */
static void ffn_act_rows(const rows_task *t, int lo, int hi)
{
    asn_engine *en = t->f->en;
    const size_t ff = (size_t)t->f->m->cfg.n_ff;
    switch ((enum ffn_kind)t->kind) {
    case FFN_SWIGLU:
    case FFN_GEGLU_TANH:
        for (size_t r = (size_t)lo * ff; r < (size_t)hi * ff; r++) {
            float gv = en->g[r];
            en->g[r] = (t->kind == FFN_SWIGLU ? silu(gv) : gelu_tanh(gv)) * en->u[r];
        }
        break;
    case FFN_SWIGLU_FUSED:
        for (size_t r = (size_t)lo; r < (size_t)hi; r++)
            for (size_t i = 0; i < ff; i++)
                en->u[r * ff + i] = silu(en->g[r * 2 * ff + i]) * en->g[r * 2 * ff + ff + i];
        break;
    case FFN_GELU:
        for (size_t r = (size_t)lo * ff; r < (size_t)hi * ff; r++)
            en->g[r] = gelu_erf(en->g[r]);
        break;
    }
}

void blk_ffn(const fwd *f, const layer_w *L, enum ffn_kind kind, const float *in, float *out)
{
    asn_engine *en = f->en;
    rows_task act = {f, NULL, NULL, NULL, NULL, f->T, (int)kind, ffn_act_rows};
    switch (kind) {
    case FFN_SWIGLU:
    case FFN_GEGLU_TANH:
        blk_matmul(en, in, f->T, &L->gate, NULL, en->g);
        blk_matmul(en, in, f->T, &L->up, NULL, en->u);
        rows_do(&act);
        blk_matmul(en, en->g, f->T, &L->down, NULL, out);
        break;
    case FFN_SWIGLU_FUSED: /* each row of up x: gate values, then up values */
        blk_matmul(en, in, f->T, &L->up, NULL, en->g);
        rows_do(&act);
        blk_matmul(en, en->u, f->T, &L->down, NULL, out);
        break;
    case FFN_GELU:
        blk_matmul(en, in, f->T, &L->up, L->b_up, en->g);
        rows_do(&act);
        blk_matmul(en, en->g, f->T, &L->down, L->b_down, out);
        break;
    }
}
