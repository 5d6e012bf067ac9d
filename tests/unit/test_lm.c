/* test_lm.c — the trainable Llama (asn/lm.h):
 *  - every layer's forward against a plain double-precision implementation
 *    written here, and its backward against central finite differences of
 *    that implementation (double, step FD_H): both within FWD_TOL / BWD_TOL
 *    relative to the largest reference value of each tensor;
 *  - the whole model's gradient on a tiny config against finite differences
 *    of the same double-precision model, assembled from those layers;
 *  - loss and every parameter gradient of a small model on a fixed batch
 *    against PyTorch float64 autograd (tests/fixtures/make_lm_fixtures.py):
 *    |asn - ref| <= REF_TOL * max|ref| per tensor;
 *  - the exported GGUF loads with asn_model_load and its logits (the
 *    inference engine's) match the trainer's forward pass within LOGIT_TOL;
 *  - gradient accumulation, reproducibility across runs and thread counts,
 *    initialization, errors; evaluation, the model's AdamW step,
 *    checkpoints;
 *  - the corpus: tokenization in pieces equals tokenizing the whole text,
 *    documents with BOS/EOS, the token cache, the training windows. */
#include "asn/gguf.h"
#include "asn/json.h"
#include "asn/lm.h"
#include "asn/model.h"
#include "asn/optim.h"
#include "asn/vocab.h"
#include "t.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Finite-difference step (double): truncation error ~ h^2, rounding ~ 1e-16 / h. */
#define FD_H 1e-5
/* f32 forward vs a double forward: a few units of f32 rounding on sums of
 * tens to hundreds of terms. */
#define FWD_TOL 2e-5
/* f32 backward vs double finite differences, relative to max |gradient|. */
#define BWD_TOL 1e-4
/* The brief of the trainer's tests: f32 against PyTorch's f64. */
#define REF_TOL 1e-4
/* Trainer logits vs the inference engine's (different f32 summation orders). */
#define LOGIT_TOL 1e-4

static const char *fixture(const char *name)
{
    static char buf[4][4096];
    static int k;
    const char *root = getenv("ASN_ROOT");
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/tests/fixtures/lm/%s", root ? root : ".", name);
    return buf[k];
}

/* ------------------------------------------------------------ random data */

static uint64_t rng_state = 0x9E3779B97F4A7C15ULL;

static double urand(void) /* [-1, 1) */
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(rng_state >> 11) * 0x1.0p-52 - 1.0;
}

/* A float array of random values and its exact double copy. */
typedef struct vec {
    float *f;
    double *d;
    size_t n;
} vec;

static vec vec_rand(size_t n, double scale, double offset)
{
    vec v = {malloc(n * sizeof(float)), malloc(n * sizeof(double)), n};
    for (size_t i = 0; i < n; i++) {
        v.f[i] = (float)(offset + scale * urand());
        v.d[i] = v.f[i];
    }
    return v;
}

static void vec_free(vec *v)
{
    free(v->f);
    free(v->d);
}

static float *fzeros(size_t n) { return calloc(n, sizeof(float)); }

/* max |a - b| / max(max |b|, floor) */
static double rel_err_fd(const float *a, const double *b, size_t n, double floor_)
{
    double md = 0, mb = floor_;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        md = d > md || d != d ? d : md;
        mb = fabs(b[i]) > mb ? fabs(b[i]) : mb;
    }
    return md / mb;
}

/* ---------------------------------------------- double-precision layers */

static void ref_embedding(double *out, const int32_t *tok, const double *wte, int N, int d)
{
    for (int i = 0; i < N; i++)
        memcpy(out + (size_t)i * d, wte + (size_t)tok[i] * d, (size_t)d * sizeof(double));
}

static void ref_rmsnorm(double *out, const double *x, const double *w, int N, int d, double eps)
{
    for (int r = 0; r < N; r++) {
        double ss = 0;
        for (int i = 0; i < d; i++)
            ss += x[r * d + i] * x[r * d + i];
        double s = 1.0 / sqrt(ss / d + eps);
        for (int i = 0; i < d; i++)
            out[r * d + i] = x[r * d + i] * s * w[i];
    }
}

static void ref_matmul(double *out, const double *x, const double *w, int N, int C, int OC)
{
    for (int r = 0; r < N; r++)
        for (int o = 0; o < OC; o++) {
            double acc = 0;
            for (int c = 0; c < C; c++)
                acc += x[r * C + c] * w[o * C + c];
            out[r * OC + o] = acc;
        }
}

static void ref_rope(double *out, const double *x, int N, int T, int nh, int hd, double base)
{
    for (int r = 0; r < N; r++)
        for (int h = 0; h < nh; h++)
            for (int k = 0; k < hd / 2; k++) {
                double th = (r % T) * pow(base, -2.0 * k / hd), c = cos(th), s = sin(th);
                const double *xp = x + ((size_t)r * nh + h) * hd;
                double *op = out + ((size_t)r * nh + h) * hd;
                op[2 * k] = xp[2 * k] * c - xp[2 * k + 1] * s;
                op[2 * k + 1] = xp[2 * k] * s + xp[2 * k + 1] * c;
            }
}

static void ref_attention(double *out, double *att, const double *q, const double *k, const double *v, int B, int T,
                          int nh, int nkv, int hd)
{
    int qd = nh * hd, kvd = nkv * hd;
    double *p = malloc((size_t)T * sizeof(double));
    for (int b = 0; b < B; b++)
        for (int h = 0; h < nh; h++) {
            int kh = h / (nh / nkv);
            for (int i = 0; i < T; i++) {
                double mx = -INFINITY, sum = 0;
                for (int j = 0; j <= i; j++) {
                    double s = 0;
                    for (int x = 0; x < hd; x++)
                        s += q[(size_t)(b * T + i) * qd + h * hd + x] * k[(size_t)(b * T + j) * kvd + kh * hd + x];
                    p[j] = s / sqrt((double)hd);
                    mx = p[j] > mx ? p[j] : mx;
                }
                for (int j = 0; j <= i; j++)
                    sum += (p[j] = exp(p[j] - mx));
                for (int x = 0; x < hd; x++) {
                    double acc = 0;
                    for (int j = 0; j <= i; j++)
                        acc += p[j] / sum * v[(size_t)(b * T + j) * kvd + kh * hd + x];
                    out[(size_t)(b * T + i) * qd + h * hd + x] = acc;
                }
                if (att)
                    for (int j = 0; j < T; j++)
                        att[(((size_t)b * nh + h) * T + i) * T + j] = j <= i ? p[j] / sum : 0.0;
            }
        }
    free(p);
}

static void ref_swiglu(double *out, const double *g, const double *u, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = g[i] / (1.0 + exp(-g[i])) * u[i];
}

/* per-row -log softmax(logits)[target], 0 where the target is -1 */
static void ref_xent(double *losses, const double *logits, const int32_t *tg, int N, int V)
{
    for (int r = 0; r < N; r++) {
        const double *x = logits + (size_t)r * V;
        double mx = -INFINITY, sum = 0;
        for (int i = 0; i < V; i++)
            mx = x[i] > mx ? x[i] : mx;
        for (int i = 0; i < V; i++)
            sum += exp(x[i] - mx);
        losses[r] = tg[r] < 0 ? 0.0 : log(sum) + mx - x[tg[r]];
    }
}

/* ----------------------------------------------------- finite differences */

/* A layer under test: fn recomputes out (n_out doubles) from the double
 * inputs; the gradient of sum(dout * out) w.r.t. each input is compared
 * with the C backward's. */
typedef struct fd_in {
    const char *name;
    vec *x;
    const float *grad; /* the C backward's gradient for x */
} fd_in;

typedef void (*fd_fn)(void *ctx, double *out);

static double objective(fd_fn fn, void *ctx, double *out, size_t n_out, const double *dout)
{
    fn(ctx, out);
    double s = 0;
    for (size_t i = 0; i < n_out; i++)
        s += dout[i] * out[i];
    return s;
}

/* "1 thread" / "2 threads": the layer tests run under both */
static const char *tlabel = "";

static void fd_check(const char *layer, fd_fn fn, void *ctx, size_t n_out, const double *dout, fd_in *ins, int n_in)
{
    double *out = malloc(n_out * sizeof(double));
    for (int k = 0; k < n_in; k++) {
        vec *x = ins[k].x;
        double *num = malloc(x->n * sizeof(double));
        for (size_t i = 0; i < x->n; i++) {
            double save = x->d[i];
            x->d[i] = save + FD_H;
            double lp = objective(fn, ctx, out, n_out, dout);
            x->d[i] = save - FD_H;
            double lm = objective(fn, ctx, out, n_out, dout);
            x->d[i] = save;
            num[i] = (lp - lm) / (2 * FD_H);
        }
        char name[160];
        snprintf(name, sizeof name, "%s backward [%s]: d/d%s matches finite differences", layer, tlabel,
                 ins[k].name);
        double err = rel_err_fd(ins[k].grad, num, x->n, 1e-12);
        T_OK(name, err <= BWD_TOL, "relative error %.3g > %g", err, BWD_TOL);
        free(num);
    }
    free(out);
}

static void fwd_check(const char *layer, const float *got, fd_fn fn, void *ctx, size_t n_out)
{
    double *out = malloc(n_out * sizeof(double));
    fn(ctx, out);
    char name[160];
    snprintf(name, sizeof name, "%s forward [%s] matches the double-precision layer", layer, tlabel);
    double err = rel_err_fd(got, out, n_out, 1e-12);
    T_OK(name, err <= FWD_TOL, "relative error %.3g > %g", err, FWD_TOL);
    free(out);
}

/* ------------------------------------------------------------ layer tests */

typedef struct layer_ctx {
    vec *a, *b, *c;
    const int32_t *tok;
    int N, T, d, C, OC, B, nh, nkv, hd, V;
    double eps, base;
} layer_ctx;

static void f_embedding(void *p, double *out)
{
    layer_ctx *c = p;
    ref_embedding(out, c->tok, c->a->d, c->N, c->d);
}

static void test_embedding(asn_pool *pool)
{
    int N = 37, d = 24, V = 9;
    int32_t tok[37];
    for (int i = 0; i < N; i++)
        tok[i] = (int32_t)((i * 7) % V); /* repeats: gradients add up */
    vec wte = vec_rand((size_t)V * d, 1, 0), dout = vec_rand((size_t)N * d, 1, 0);
    float *out = fzeros((size_t)N * d), *dwte = fzeros((size_t)V * d);
    asn_lm_embedding_forward(pool, out, tok, wte.f, N, d);
    asn_lm_embedding_backward(pool, dwte, dout.f, tok, N, d);
    layer_ctx c = {.a = &wte, .tok = tok, .N = N, .d = d};
    fwd_check("embedding", out, f_embedding, &c, (size_t)N * d);
    fd_in ins[] = {{"wte", &wte, dwte}};
    fd_check("embedding", f_embedding, &c, (size_t)N * d, dout.d, ins, 1);
    vec_free(&wte), vec_free(&dout), free(out), free(dwte);
}

static void f_rmsnorm(void *p, double *out)
{
    layer_ctx *c = p;
    ref_rmsnorm(out, c->a->d, c->b->d, c->N, c->d, c->eps);
}

static void test_rmsnorm(asn_pool *pool)
{
    int N = 19, d = 40;
    vec x = vec_rand((size_t)N * d, 2, 0.3), w = vec_rand((size_t)d, 0.5, 1), dout = vec_rand((size_t)N * d, 1, 0);
    float *out = fzeros((size_t)N * d), *rstd = fzeros((size_t)N), *dx = fzeros((size_t)N * d), *dw = fzeros((size_t)d);
    asn_lm_rmsnorm_forward(pool, out, rstd, x.f, w.f, N, d, 1e-5f);
    asn_lm_rmsnorm_backward(pool, dx, dw, dout.f, x.f, w.f, rstd, N, d);
    layer_ctx c = {.a = &x, .b = &w, .N = N, .d = d, .eps = (double)1e-5f};
    fwd_check("rmsnorm", out, f_rmsnorm, &c, (size_t)N * d);
    fd_in ins[] = {{"inp", &x, dx}, {"weight", &w, dw}};
    fd_check("rmsnorm", f_rmsnorm, &c, (size_t)N * d, dout.d, ins, 2);
    vec_free(&x), vec_free(&w), vec_free(&dout), free(out), free(rstd), free(dx), free(dw);
}

static void f_matmul(void *p, double *out)
{
    layer_ctx *c = p;
    ref_matmul(out, c->a->d, c->b->d, c->N, c->C, c->OC);
}

static void test_matmul(asn_pool *pool)
{
    int N = 35, C = 21, OC = 18; /* not multiples of the split blocks */
    vec x = vec_rand((size_t)N * C, 1, 0), w = vec_rand((size_t)OC * C, 1, 0), dout = vec_rand((size_t)N * OC, 1, 0);
    float *out = fzeros((size_t)N * OC), *dx = fzeros((size_t)N * C), *dw = fzeros((size_t)OC * C);
    asn_lm_matmul_forward(pool, out, x.f, w.f, N, C, OC);
    asn_lm_matmul_backward(pool, dx, dw, dout.f, x.f, w.f, N, C, OC);
    layer_ctx c = {.a = &x, .b = &w, .N = N, .C = C, .OC = OC};
    fwd_check("matmul", out, f_matmul, &c, (size_t)N * OC);
    fd_in ins[] = {{"inp", &x, dx}, {"weight", &w, dw}};
    fd_check("matmul", f_matmul, &c, (size_t)N * OC, dout.d, ins, 2);
    vec_free(&x), vec_free(&w), vec_free(&dout), free(out), free(dx), free(dw);
}

static void f_rope(void *p, double *out)
{
    layer_ctx *c = p;
    ref_rope(out, c->a->d, c->N, c->T, c->nh, c->hd, c->base);
}

static void test_rope(asn_pool *pool)
{
    int B = 2, T = 13, nh = 3, hd = 8, N = B * T;
    size_t n = (size_t)N * nh * hd;
    vec x = vec_rand(n, 1, 0), dout = vec_rand(n, 1, 0);
    float *cs = fzeros((size_t)T * hd / 2), *sn = fzeros((size_t)T * hd / 2);
    asn_lm_rope_table(cs, sn, T, hd, 100.0f); /* a small base: large angles */
    float *y = fzeros(n), *dx = fzeros(n);
    memcpy(y, x.f, n * sizeof(float));
    asn_lm_rope_forward(pool, y, cs, sn, N, T, nh, hd);
    memcpy(dx, dout.f, n * sizeof(float));
    asn_lm_rope_backward(pool, dx, cs, sn, N, T, nh, hd);
    layer_ctx c = {.a = &x, .N = N, .T = T, .nh = nh, .hd = hd, .base = 100.0};
    fwd_check("rope", y, f_rope, &c, n);
    fd_in ins[] = {{"x", &x, dx}};
    fd_check("rope", f_rope, &c, n, dout.d, ins, 1);
    vec_free(&x), vec_free(&dout), free(cs), free(sn), free(y), free(dx);
}

static void f_attention(void *p, double *out)
{
    layer_ctx *c = p;
    ref_attention(out, NULL, c->a->d, c->b->d, c->c->d, c->B, c->T, c->nh, c->nkv, c->hd);
}

static void test_attention(asn_pool *pool, int B, int T, int nh, int nkv, int hd)
{
    int N = B * T, qd = nh * hd, kvd = nkv * hd;
    char layer[96];
    snprintf(layer, sizeof layer, "attention (B %d, T %d, heads %d/%d, hd %d)", B, T, nh, nkv, hd);
    vec q = vec_rand((size_t)N * qd, 1.5, 0), k = vec_rand((size_t)N * kvd, 1.5, 0), v = vec_rand((size_t)N * kvd, 1, 0);
    vec dout = vec_rand((size_t)N * qd, 1, 0);
    float *out = fzeros((size_t)N * qd), *att = fzeros((size_t)B * nh * T * T);
    float *dq = fzeros((size_t)N * qd), *dk = fzeros((size_t)N * kvd), *dv = fzeros((size_t)N * kvd);
    asn_lm_attention_forward(pool, out, att, q.f, k.f, v.f, B, T, nh, nkv, hd);
    asn_lm_attention_backward(pool, dq, dk, dv, dout.f, att, q.f, k.f, v.f, B, T, nh, nkv, hd);
    layer_ctx c = {.a = &q, .b = &k, .c = &v, .B = B, .T = T, .nh = nh, .nkv = nkv, .hd = hd};
    fwd_check(layer, out, f_attention, &c, (size_t)N * qd);
    double *ratt = malloc((size_t)B * nh * T * T * sizeof(double)), *rout = malloc((size_t)N * qd * sizeof(double));
    ref_attention(rout, ratt, q.d, k.d, v.d, B, T, nh, nkv, hd);
    char name[160];
    snprintf(name, sizeof name, "%s [%s]: saved probabilities (zero above the diagonal)", layer, tlabel);
    double err = rel_err_fd(att, ratt, (size_t)B * nh * T * T, 1e-12);
    T_OK(name, err <= FWD_TOL, "relative error %.3g", err);
    fd_in ins[] = {{"q", &q, dq}, {"k", &k, dk}, {"v", &v, dv}};
    fd_check(layer, f_attention, &c, (size_t)N * qd, dout.d, ins, 3);
    free(ratt), free(rout);
    vec_free(&q), vec_free(&k), vec_free(&v), vec_free(&dout);
    free(out), free(att), free(dq), free(dk), free(dv);
}

static void f_swiglu(void *p, double *out)
{
    layer_ctx *c = p;
    ref_swiglu(out, c->a->d, c->b->d, (size_t)c->N);
}

static void test_swiglu(asn_pool *pool)
{
    int n = 9000; /* more than one chunk of the elementwise split */
    vec g = vec_rand((size_t)n, 6, 0), u = vec_rand((size_t)n, 2, 0), dout = vec_rand((size_t)n, 1, 0);
    float *out = fzeros((size_t)n), *dg = fzeros((size_t)n), *du = fzeros((size_t)n);
    asn_lm_swiglu_forward(pool, out, g.f, u.f, (size_t)n);
    asn_lm_swiglu_backward(pool, dg, du, dout.f, g.f, u.f, (size_t)n);
    layer_ctx c = {.a = &g, .b = &u, .N = n};
    fwd_check("swiglu", out, f_swiglu, &c, (size_t)n);
    fd_in ins[] = {{"gate", &g, dg}, {"up", &u, du}};
    fd_check("swiglu", f_swiglu, &c, (size_t)n, dout.d, ins, 2);
    vec_free(&g), vec_free(&u), vec_free(&dout), free(out), free(dg), free(du);
}

static void f_residual(void *p, double *out)
{
    layer_ctx *c = p;
    for (int i = 0; i < c->N; i++)
        out[i] = c->a->d[i] + c->b->d[i];
}

static void test_residual(asn_pool *pool)
{
    int n = 9000; /* more than one chunk of the elementwise split */
    vec a = vec_rand((size_t)n, 1, 0), b = vec_rand((size_t)n, 1, 0), dout = vec_rand((size_t)n, 1, 0);
    float *out = fzeros((size_t)n), *da = fzeros((size_t)n), *db = fzeros((size_t)n);
    asn_lm_residual_forward(pool, out, a.f, b.f, (size_t)n);
    asn_lm_residual_backward(pool, da, db, dout.f, (size_t)n);
    layer_ctx c = {.a = &a, .b = &b, .N = n};
    fwd_check("residual", out, f_residual, &c, (size_t)n);
    fd_in ins[] = {{"a", &a, da}, {"b", &b, db}};
    fd_check("residual", f_residual, &c, (size_t)n, dout.d, ins, 2);
    vec_free(&a), vec_free(&b), vec_free(&dout), free(out), free(da), free(db);
}

static void f_xent(void *p, double *out)
{
    layer_ctx *c = p;
    ref_xent(out, c->a->d, c->tok, c->N, c->V);
}

static void test_crossentropy(asn_pool *pool)
{
    int N = 7, V = 33;
    int32_t tg[7] = {3, 0, 32, -1, 5, 5, 17};
    vec x = vec_rand((size_t)N * V, 4, 0);
    float *losses = fzeros((size_t)N), *probs = fzeros((size_t)N * V);
    asn_lm_crossentropy_forward(pool, losses, probs, x.f, tg, N, V);
    layer_ctx c = {.a = &x, .tok = tg, .N = N, .V = V};
    fwd_check("crossentropy", losses, f_xent, &c, (size_t)N);
    /* objective: dloss * sum of the losses; backward in place over probs */
    float dloss = 0.37f;
    asn_lm_crossentropy_backward(pool, probs, dloss, probs, tg, N, V);
    double dl[7];
    for (int i = 0; i < N; i++)
        dl[i] = dloss;
    fd_in ins[] = {{"logits", &x, probs}};
    fd_check("crossentropy", f_xent, &c, (size_t)N, dl, ins, 1);
    vec_free(&x), free(losses), free(probs);
}

/* ------------------------------------------------- the whole model, in double */

typedef struct ref_model {
    asn_lm_config c;
    const asn_lm *lm; /* for the tensor table */
    double *p;        /* parameters, in the lm's layout */
    const int32_t *tok, *tg;
    int B, T;
} ref_model;

static const double *P(const ref_model *m, const char *name)
{
    return m->p + asn_lm_find_tensor(m->lm, name)->offset;
}

static double ref_model_loss(const ref_model *m)
{
    const asn_lm_config *c = &m->c;
    int N = m->B * m->T, d = c->dim, hd = d / c->n_head, qd = c->n_head * hd, kvd = c->n_head_kv * hd, F = c->ffn;
    double *x = malloc((size_t)N * d * sizeof(double)), *h = malloc((size_t)N * d * sizeof(double));
    double *q = malloc((size_t)N * qd * sizeof(double)), *k = malloc((size_t)N * kvd * sizeof(double));
    double *v = malloc((size_t)N * kvd * sizeof(double)), *o = malloc((size_t)N * qd * sizeof(double));
    double *t1 = malloc((size_t)N * (qd > F ? qd : F) * sizeof(double)), *t2 = malloc((size_t)N * F * sizeof(double));
    double *y = malloc((size_t)N * d * sizeof(double)), *lg = malloc((size_t)N * c->n_vocab * sizeof(double));
    ref_embedding(x, m->tok, P(m, "token_embd.weight"), N, d);
    for (int l = 0; l < c->n_layer; l++) {
        char n[64];
#define W(s) (snprintf(n, sizeof n, "blk.%d.%s", l, s), P(m, n))
        ref_rmsnorm(h, x, W("attn_norm.weight"), N, d, c->rms_eps);
        ref_matmul(t1, h, W("attn_q.weight"), N, d, qd);
        ref_rope(q, t1, N, m->T, c->n_head, hd, c->rope_base);
        ref_matmul(t1, h, W("attn_k.weight"), N, d, kvd);
        ref_rope(k, t1, N, m->T, c->n_head_kv, hd, c->rope_base);
        ref_matmul(v, h, W("attn_v.weight"), N, d, kvd);
        ref_attention(o, NULL, q, k, v, m->B, m->T, c->n_head, c->n_head_kv, hd);
        ref_matmul(y, o, W("attn_output.weight"), N, qd, d);
        for (int i = 0; i < N * d; i++)
            x[i] += y[i];
        ref_rmsnorm(h, x, W("ffn_norm.weight"), N, d, c->rms_eps);
        ref_matmul(t1, h, W("ffn_gate.weight"), N, d, F);
        ref_matmul(t2, h, W("ffn_up.weight"), N, d, F);
        ref_swiglu(t1, t1, t2, (size_t)N * F);
        ref_matmul(y, t1, W("ffn_down.weight"), N, F, d);
        for (int i = 0; i < N * d; i++)
            x[i] += y[i];
#undef W
    }
    ref_rmsnorm(h, x, P(m, "output_norm.weight"), N, d, c->rms_eps);
    ref_matmul(lg, h, P(m, "token_embd.weight"), N, d, c->n_vocab);
    double *losses = malloc((size_t)N * sizeof(double)), sum = 0;
    int nv = 0;
    ref_xent(losses, lg, m->tg, N, c->n_vocab);
    for (int i = 0; i < N; i++)
        if (m->tg[i] >= 0)
            sum += losses[i], nv++;
    free(x), free(h), free(q), free(k), free(v), free(o), free(t1), free(t2), free(y), free(lg), free(losses);
    return sum / nv;
}

static void test_model_fd(asn_pool *pool)
{
    asn_err e;
    asn_lm_config c = {.n_vocab = 11, .dim = 8, .n_layer = 2, .n_head = 2, .n_head_kv = 1, .ffn = 12, .ctx = 8};
    asn_lm *lm = asn_lm_new(&c, pool, &e);
    T_OK("tiny model: created", lm != NULL, "%s", e.msg);
    if (!lm)
        return;
    size_t np = asn_lm_n_params(lm);
    float *p = asn_lm_params(lm);
    for (size_t i = 0; i < np; i++)
        p[i] = (float)(0.4 * urand());
    for (size_t t = 0; t < asn_lm_n_tensors(lm); t++) {
        const asn_lm_tensor *tn = asn_lm_tensor_at(lm, t);
        if (tn->n_dims == 1)
            for (size_t i = 0; i < tn->size; i++)
                p[tn->offset + i] += 1.0f;
    }
    int B = 2, T = 6;
    int32_t tok[12] = {1, 5, 10, 3, 3, 0, 7, 2, 9, 4, 6, 8};
    int32_t tg[12] = {5, 10, 3, -1, 0, 7, 2, 9, 4, 6, 8, 1};
    double loss;
    int rc = asn_lm_forward(lm, tok, tg, B, T, &loss, &e);
    T_OK("tiny model: forward", rc == 0, "%s", e.msg);
    asn_lm_zero_grad(lm);
    rc = asn_lm_backward(lm, 1.0f, &e);
    T_OK("tiny model: backward", rc == 0, "%s", e.msg);
    ref_model m = {*asn_lm_cfg(lm), lm, malloc(np * sizeof(double)), tok, tg, B, T};
    for (size_t i = 0; i < np; i++)
        m.p[i] = p[i];
    double ref = ref_model_loss(&m);
    T_NEAR("tiny model: loss equals the double-precision model's", loss, ref, FWD_TOL * fabs(ref));
    const float *g = asn_lm_grads(lm);
    for (size_t t = 0; t < asn_lm_n_tensors(lm); t++) {
        const asn_lm_tensor *tn = asn_lm_tensor_at(lm, t);
        double *num = malloc(tn->size * sizeof(double));
        for (size_t i = 0; i < tn->size; i++) {
            double *x = &m.p[tn->offset + i], save = *x;
            *x = save + FD_H;
            double lp = ref_model_loss(&m);
            *x = save - FD_H;
            double lm_ = ref_model_loss(&m);
            *x = save;
            num[i] = (lp - lm_) / (2 * FD_H);
        }
        char name[160];
        snprintf(name, sizeof name, "tiny model: gradient of %s matches finite differences", tn->name);
        double err = rel_err_fd(g + tn->offset, num, tn->size, 1e-12);
        T_OK(name, err <= BWD_TOL, "relative error %.3g > %g", err, BWD_TOL);
        free(num);
    }
    free(m.p);
    asn_lm_free(lm);
}

/* ------------------------------------------------------ PyTorch reference */

typedef struct torch_ref {
    asn_lm_config c;
    int B, T;
    int32_t *tokens, *targets;
    json_t *j;
    double loss;
} torch_ref;

static int load_torch(torch_ref *r)
{
    json_error_t je;
    r->j = json_load_file(fixture("model.json"), 0, &je);
    if (!r->j)
        return -1;
    json_t *c = json_object_get(r->j, "config");
    r->c = (asn_lm_config){
        .n_vocab = (int)json_integer_value(json_object_get(c, "n_vocab")),
        .dim = (int)json_integer_value(json_object_get(c, "dim")),
        .n_layer = (int)json_integer_value(json_object_get(c, "n_layer")),
        .n_head = (int)json_integer_value(json_object_get(c, "n_head")),
        .n_head_kv = (int)json_integer_value(json_object_get(c, "n_head_kv")),
        .ffn = (int)json_integer_value(json_object_get(c, "ffn")),
        .ctx = (int)json_integer_value(json_object_get(c, "ctx")),
        .rope_base = (float)json_number_value(json_object_get(c, "rope_base")),
        .rms_eps = (float)json_number_value(json_object_get(c, "rms_eps")),
    };
    r->B = (int)json_integer_value(json_object_get(r->j, "B"));
    r->T = (int)json_integer_value(json_object_get(r->j, "T"));
    int N = r->B * r->T;
    r->tokens = malloc((size_t)N * sizeof(int32_t));
    r->targets = malloc((size_t)N * sizeof(int32_t));
    for (int i = 0; i < N; i++) {
        r->tokens[i] = (int32_t)json_integer_value(json_array_get(json_object_get(r->j, "tokens"), (size_t)i));
        r->targets[i] = (int32_t)json_integer_value(json_array_get(json_object_get(r->j, "targets"), (size_t)i));
    }
    r->loss = json_number_value(json_object_get(r->j, "loss"));
    return 0;
}

static void free_torch(torch_ref *r)
{
    json_decref(r->j);
    free(r->tokens);
    free(r->targets);
}

/* Copies the fixture's "params" (or "grads") into a flat array of the lm's layout. */
static int torch_tensors(const torch_ref *r, const asn_lm *lm, const char *key, double *out)
{
    json_t *obj = json_object_get(r->j, key);
    for (size_t t = 0; t < asn_lm_n_tensors(lm); t++) {
        const asn_lm_tensor *tn = asn_lm_tensor_at(lm, t);
        json_t *a = json_object_get(obj, tn->name);
        if (!a || json_array_size(a) != tn->size)
            return -1;
        for (size_t i = 0; i < tn->size; i++)
            out[tn->offset + i] = json_number_value(json_array_get(a, i));
    }
    return 0;
}

static asn_lm *torch_model(const torch_ref *r, asn_pool *pool)
{
    asn_err e;
    asn_lm *lm = asn_lm_new(&r->c, pool, &e);
    if (!lm)
        return NULL;
    size_t np = asn_lm_n_params(lm);
    double *p = calloc(np, sizeof(double));
    if (torch_tensors(r, lm, "params", p)) {
        free(p);
        asn_lm_free(lm);
        return NULL;
    }
    for (size_t i = 0; i < np; i++)
        asn_lm_params(lm)[i] = (float)p[i];
    free(p);
    return lm;
}

static void test_torch(asn_pool *pool, const char *label)
{
    torch_ref r;
    char name[200];
    if (load_torch(&r)) {
        T_OK("PyTorch fixture loads", 0, "cannot read %s", fixture("model.json"));
        return;
    }
    asn_lm *lm = torch_model(&r, pool);
    snprintf(name, sizeof name, "PyTorch model (%s): built from the fixture's weights", label);
    T_OK(name, lm != NULL, "bad config or tensors in the fixture");
    if (!lm) {
        free_torch(&r);
        return;
    }
    asn_err e;
    double loss;
    asn_lm_zero_grad(lm);
    int rc = asn_lm_forward(lm, r.tokens, r.targets, r.B, r.T, &loss, &e) || asn_lm_backward(lm, 1.0f, &e);
    snprintf(name, sizeof name, "PyTorch model (%s): forward and backward", label);
    T_OK(name, rc == 0, "%s", e.msg);
    snprintf(name, sizeof name, "PyTorch model (%s): loss", label);
    T_NEAR(name, loss, r.loss, REF_TOL * fabs(r.loss));
    size_t np = asn_lm_n_params(lm);
    double *g = calloc(np, sizeof(double));
    torch_tensors(&r, lm, "grads", g);
    for (size_t t = 0; t < asn_lm_n_tensors(lm); t++) {
        const asn_lm_tensor *tn = asn_lm_tensor_at(lm, t);
        double err = rel_err_fd(asn_lm_grads(lm) + tn->offset, g + tn->offset, tn->size, 1e-30);
        snprintf(name, sizeof name, "PyTorch model (%s): gradient of %s", label, tn->name);
        T_OK(name, err <= REF_TOL, "max |asn - torch| / max |torch| = %.3g > %g", err, REF_TOL);
    }
    free(g);
    asn_lm_free(lm);
    free_torch(&r);
}

/* Same thread count, same bits; another thread count, the same within f32 noise. */
static void test_reproducible(asn_pool *p1, asn_pool *p2)
{
    torch_ref r;
    if (load_torch(&r))
        return;
    float *g[3] = {0};
    double loss[3];
    size_t np = 0;
    asn_pool *pools[3] = {p2, p2, p1};
    for (int k = 0; k < 3; k++) {
        asn_lm *lm = torch_model(&r, pools[k]);
        asn_err e;
        asn_lm_zero_grad(lm);
        asn_lm_forward(lm, r.tokens, r.targets, r.B, r.T, &loss[k], &e);
        asn_lm_backward(lm, 1.0f, &e);
        np = asn_lm_n_params(lm);
        g[k] = malloc(np * sizeof(float));
        memcpy(g[k], asn_lm_grads(lm), np * sizeof(float));
        asn_lm_free(lm);
    }
    T_OK("two runs on 2 threads: bit-identical loss and gradients",
         loss[0] == loss[1] && !memcmp(g[0], g[1], np * sizeof(float)), "they differ");
    double md = 0, mg = 0;
    for (size_t i = 0; i < np; i++) {
        md = fmax(md, fabs((double)g[0][i] - g[2][i]));
        mg = fmax(mg, fabs((double)g[2][i]));
    }
    T_OK("1 vs 2 threads: gradients agree within f32 rounding", md <= 1e-5 * mg, "max diff %.3g (max %.3g)", md, mg);
    for (int k = 0; k < 3; k++)
        free(g[k]);
    free_torch(&r);
}

/* Two micro-batches with scale 1/2 give the gradient of the whole batch. */
static void test_accumulation(asn_pool *pool)
{
    torch_ref r;
    if (load_torch(&r))
        return;
    int N = r.B * r.T;
    for (int i = 0; i < N; i++) /* every position scored: the mean of the halves' means is the mean */
        r.targets[i] = r.targets[i] < 0 ? 0 : r.targets[i];
    asn_lm *a = torch_model(&r, pool), *b = torch_model(&r, pool);
    asn_err e;
    asn_lm_zero_grad(a);
    asn_lm_forward(a, r.tokens, r.targets, r.B, r.T, NULL, &e);
    asn_lm_backward(a, 1.0f, &e);
    asn_lm_zero_grad(b);
    for (int k = 0; k < r.B; k++) {
        asn_lm_forward(b, r.tokens + k * r.T, r.targets + k * r.T, 1, r.T, NULL, &e);
        asn_lm_backward(b, 1.0f / r.B, &e);
    }
    double md = 0, mg = 0;
    for (size_t i = 0; i < asn_lm_n_params(a); i++) {
        md = fmax(md, fabs((double)asn_lm_grads(a)[i] - asn_lm_grads(b)[i]));
        mg = fmax(mg, fabs((double)asn_lm_grads(a)[i]));
    }
    T_OK("gradient accumulation: 2 micro-batches of 1 = 1 batch of 2", md <= 1e-6 * mg, "max diff %.3g (max %.3g)",
         md, mg);
    asn_lm_free(a);
    asn_lm_free(b);
    free_torch(&r);
}

/* ----------------------------------------------------------- GGUF export */

static char tmpdir[256];

static const char *tmp_path(const char *name)
{
    static char buf[512];
    snprintf(buf, sizeof buf, "%s/%s", tmpdir, name);
    return buf;
}

/* The engine's logits for each sequence, one fresh sequence each. */
static void engine_logits(const char *label, asn_lm *lm, const int32_t *tokens, int B, int T)
{
    asn_err e;
    char name[200];
    const char *path = tmp_path("model.gguf");
    asn_model *m = asn_model_load(path, &e);
    snprintf(name, sizeof name, "%s: the exported GGUF loads", label);
    T_OK(name, m != NULL, "%s", e.msg);
    if (!m)
        return;
    const asn_model_config *mc = asn_model_cfg(m);
    const asn_lm_config *c = asn_lm_cfg(lm);
    snprintf(name, sizeof name, "%s: loaded hyper-parameters", label);
    T_OK(name, mc->n_vocab == c->n_vocab && mc->n_embd == c->dim && mc->n_layer == c->n_layer &&
                   mc->n_head == c->n_head && mc->n_head_kv == c->n_head_kv && mc->n_ff == c->ffn &&
                   mc->n_ctx_train == c->ctx && mc->tied_output && !mc->rope_neox && mc->rope_base == c->rope_base &&
                   mc->rms_eps == c->rms_eps,
         "config differs");
    asn_engine *en = asn_engine_new(m, 0, NULL, &e);
    int V = c->n_vocab;
    float *got = malloc((size_t)T * V * sizeof(float));
    if (asn_lm_forward(lm, tokens, NULL, B, T, NULL, &e))
        T_OK("trainer forward without targets", 0, "%s", e.msg);
    const float *want = asn_lm_logits(lm);
    double md = 0;
    for (int b = 0; b < B; b++) {
        int s = asn_seq_new(en);
        asn_batch_item it = {s, tokens + b * T, T, got, 1, NULL, NULL};
        if (asn_engine_decode(en, &it, 1, &e))
            T_OK("engine decode", 0, "%s", e.msg);
        for (size_t i = 0; i < (size_t)T * V; i++)
            md = fmax(md, fabs((double)got[i] - want[(size_t)b * T * V + i]));
        asn_seq_free(en, s);
    }
    snprintf(name, sizeof name, "%s: engine logits = trainer logits", label);
    T_OK(name, md <= LOGIT_TOL, "max |diff| %.3g > %g", md, LOGIT_TOL);
    free(got);
    asn_engine_free(en);
    asn_model_free(m);
}

static void test_export(asn_pool *pool)
{
    asn_err e;
    /* the PyTorch model: no tokenizer, llama.vocab_size gives the size */
    torch_ref r;
    if (!load_torch(&r)) {
        asn_lm *lm = torch_model(&r, pool);
        int rc = asn_lm_save(lm, tmp_path("model.gguf"), "test", NULL, &e);
        T_OK("export without a tokenizer", rc == 0, "%s", e.msg);
        engine_logits("export without a tokenizer", lm, r.tokens, r.B, r.T);
        asn_lm_free(lm);
        free_torch(&r);
    }
    /* a model over the fixture vocabulary, tokenizer copied in */
    asn_gguf *vg = asn_gguf_open(fixture("vocab.gguf"), &e);
    T_OK("fixture vocab opens", vg != NULL, "%s", e.msg);
    if (!vg)
        return;
    const asn_gguf_kv *tk = asn_gguf_find(vg, "tokenizer.ggml.tokens");
    asn_lm_config c = {.n_vocab = (int)tk->v.arr.n, .dim = 32, .n_layer = 2, .n_head = 4, .n_head_kv = 2,
                       .ffn = 48, .ctx = 100, .rope_base = 500.0f, .rms_eps = 1e-6f};
    asn_lm *lm = asn_lm_new(&c, pool, &e);
    asn_lm_init_weights(lm, 7);
    float *p = asn_lm_params(lm); /* larger matrices than the init, so every layer matters */
    for (size_t t = 0; t < asn_lm_n_tensors(lm); t++) {
        const asn_lm_tensor *tn = asn_lm_tensor_at(lm, t);
        for (size_t i = 0; tn->n_dims == 2 && i < tn->size; i++)
            p[tn->offset + i] *= 5.0f;
    }
    int rc = asn_lm_save(lm, tmp_path("model.gguf"), "with tokenizer", vg, &e);
    T_OK("export with a tokenizer", rc == 0, "%s", e.msg);
    int32_t tok[2 * 90];
    for (int i = 0; i < 180; i++)
        tok[i] = (int32_t)((i * 37 + 11) % c.n_vocab);
    engine_logits("export with a tokenizer", lm, tok, 2, 90);
    asn_model *m = asn_model_load(tmp_path("model.gguf"), &e);
    const asn_vocab *v = m ? asn_model_vocab(m, &e) : NULL;
    T_OK("export with a tokenizer: the model's vocab loads", v != NULL, "%s", e.msg);
    if (v) {
        T_EQ_INT("exported vocab: token count", asn_vocab_n_tokens(v), c.n_vocab);
        T_EQ_STR("exported vocab: pre-tokenizer", asn_vocab_pre(v), "gpt-2");
        int32_t *ids;
        size_t n;
        asn_tokenize(v, "the earth", 9, 0, 0, &ids, &n, &e);
        T_OK("exported vocab tokenizes", n > 0 && n < 9, "%zu tokens", n);
        free(ids);
    }
    /* reading the tensors back gives the same parameters */
    asn_gguf *g = asn_gguf_open(tmp_path("model.gguf"), &e);
    float *back = calloc(asn_lm_n_params(lm), sizeof(float));
    rc = asn_lm_gguf_read_tensors(lm, g, "", back, &e);
    T_OK("exported tensors read back", rc == 0 && !memcmp(back, p, asn_lm_n_params(lm) * sizeof(float)), "%s",
         rc ? e.msg : "values differ");
    asn_lm_config c2;
    rc = asn_lm_config_from_gguf(g, &c2, &e);
    T_OK("config read back", rc == 0 && c2.n_vocab == c.n_vocab && c2.dim == c.dim && c2.n_layer == c.n_layer &&
                                 c2.n_head == c.n_head && c2.n_head_kv == c.n_head_kv && c2.ffn == c.ffn &&
                                 c2.ctx == c.ctx && c2.rope_base == c.rope_base && c2.rms_eps == c.rms_eps,
         "%s", rc ? e.msg : "differs");
    rc = asn_lm_gguf_read_tensors(lm, g, "adam_m.", back, &e);
    T_OK("missing tensors are an error", rc == -1 && strstr(e.msg, "adam_m.token_embd.weight"), "%s", e.msg);
    free(back);
    asn_gguf_close(g);
    asn_model_free(m);
    asn_lm_free(lm);
    asn_gguf_close(vg);
}

/* --------------------------------------------- eval, update, checkpoints */

static void test_training_helpers(asn_pool *pool)
{
    asn_err e;
    asn_lm_config c = {.n_vocab = 30, .dim = 16, .n_layer = 2, .n_head = 2, .ffn = 24, .ctx = 8};
    asn_lm *lm = asn_lm_new(&c, pool, &e);
    asn_lm_init_weights(lm, 3);
    size_t np = asn_lm_n_params(lm);
    float *p = asn_lm_params(lm);
    for (size_t i = 0; i < np; i++) /* larger than the init: losses that differ per window */
        p[i] *= 10.0f;

    /* eval = the prediction-weighted mean over the windows, one by one */
    int32_t ids[50];
    for (int i = 0; i < 50; i++)
        ids[i] = (int32_t)((i * 7 + i / 3) % 30);
    double got, sum = 0, l;
    int rc = asn_lm_eval(lm, ids, 50, 0, 3, 8, &got, &e);
    for (int w = 0; w < 7; w++) {
        int len = w < 6 ? 8 : 1;
        asn_lm_forward(lm, ids + w * 8, ids + w * 8 + 1, 1, len, &l, &e);
        sum += l * len;
    }
    T_OK("eval: all 49 predictions in windows of 8, the last one short", rc == 0 && fabs(got - sum / 49) < 1e-6,
         "got %.9g, expected %.9g", got, sum / 49);
    asn_lm_forward(lm, ids, ids + 1, 1, 8, &l, &e);
    rc = asn_lm_eval(lm, ids, 50, 8, 3, 8, &got, &e);
    T_OK("eval: max_preds keeps the first predictions", rc == 0 && fabs(got - l) < 1e-6, "got %.9g, expected %.9g",
         got, l);
    T_OK("eval: a stream of one token is an error", asn_lm_eval(lm, ids, 1, 0, 3, 8, &got, &e) == -1, "accepted");

    /* the model's AdamW step = asn_adamw_step per tensor, decay on matrices only */
    float *g = asn_lm_grads(lm), *m = calloc(np, sizeof(float)), *v = calloc(np, sizeof(float));
    float *p2 = malloc(np * sizeof(float)), *m2 = calloc(np, sizeof(float)), *v2 = calloc(np, sizeof(float));
    for (size_t i = 0; i < np; i++)
        g[i] = (float)urand();
    memcpy(p2, p, np * sizeof(float));
    asn_adamw h = {0.9f, 0.95f, 1e-8f};
    asn_lm_adamw_step(lm, &h, 1, 0.01f, 0.1f, m, v);
    for (size_t t = 0; t < asn_lm_n_tensors(lm); t++) {
        const asn_lm_tensor *tn = asn_lm_tensor_at(lm, t);
        asn_adamw_step(&h, 1, 0.01f, tn->decay ? 0.1f : 0.0f, p2 + tn->offset, g + tn->offset, m2 + tn->offset,
                       v2 + tn->offset, tn->size);
    }
    T_OK("model AdamW step = per-tensor AdamW, decay on matrices only",
         !memcmp(p, p2, np * sizeof(float)) && !memcmp(m, m2, np * sizeof(float)) && !memcmp(v, v2, np * sizeof(float)),
         "differ");

    /* checkpoint round trip */
    asn_lm_state st = {17, 12345, 204, 99.5, m, v};
    const char *extra[] = {"asn.test.key", "value", NULL};
    rc = asn_lm_checkpoint_save(lm, tmp_path("ckpt.gguf"), "ckpt", NULL, &st, extra, &e);
    T_OK("checkpoint written", rc == 0, "%s", e.msg);
    asn_lm *lm2 = asn_lm_new(&c, pool, &e);
    asn_lm_state st2 = {0, 0, 0, 0, calloc(np, sizeof(float)), calloc(np, sizeof(float))};
    asn_gguf *gg = asn_gguf_open(tmp_path("ckpt.gguf"), &e);
    rc = gg ? asn_lm_checkpoint_load(lm2, gg, &st2, &e) : -1;
    char *val = NULL;
    if (gg)
        asn_gguf_get_str(gg, "asn.test.key", 0, &val, &e);
    T_OK("checkpoint read back: parameters, moments, state, extra keys",
         rc == 0 && !memcmp(asn_lm_params(lm2), p, np * sizeof(float)) && !memcmp(st2.m, m, np * sizeof(float)) &&
             !memcmp(st2.v, v, np * sizeof(float)) && st2.step == 17 && st2.tokens == 12345 && st2.windows == 204 &&
             st2.elapsed == 99.5 && val && !strcmp(val, "value"),
         "%s", rc ? e.msg : "differs");
    free(val);
    asn_lm_config c3 = c;
    c3.ffn = 32;
    asn_lm *lm3 = asn_lm_new(&c3, pool, &e);
    rc = gg ? asn_lm_checkpoint_load(lm3, gg, &st2, &e) : 0;
    T_OK("checkpoint of another shape: an error naming the difference", rc == -1 && strstr(e.msg, "ffn 24, the model 32"),
         "%s", e.msg);
    asn_gguf_close(gg);
    asn_model *mm = asn_model_load(tmp_path("ckpt.gguf"), &e);
    T_OK("a checkpoint loads as a model", mm != NULL, "%s", e.msg);
    asn_model_free(mm);
    unlink(tmp_path("ckpt.gguf"));
    free(st2.m), free(st2.v), free(m), free(v), free(p2), free(m2), free(v2);
    asn_lm_free(lm);
    asn_lm_free(lm2);
    asn_lm_free(lm3);
}

/* ---------------------------------------------------------------- corpus */

static int same_ids(const int32_t *a, size_t na, const int32_t *b, size_t nb)
{
    return na == nb && (na == 0 || !memcmp(a, b, na * sizeof *a));
}

static void test_corpus(asn_pool *p1, asn_pool *p2)
{
    asn_err e;
    asn_gguf *g = asn_gguf_open(fixture("vocab.gguf"), &e);
    asn_vocab *v = g ? asn_vocab_load(g, &e) : NULL;
    T_OK("corpus: fixture vocab loads", v != NULL, "%s", e.msg);
    if (!v) {
        asn_gguf_close(g);
        return;
    }
    int32_t bos = asn_vocab_bos(v), eos = asn_vocab_eos(v);
    /* 2.5 MB of varied lines: several pieces of 1 MiB */
    size_t cap = 3u << 20, len = 0;
    char *text = malloc(cap);
    for (int i = 0; len + 200 < cap - (512u << 10); i++)
        len += (size_t)snprintf(text + len, 200, "%sline %d: the waters, and %d firmaments!%s\n",
                                i % 7 ? "" : "  ", i * 37 % 1000, i, i % 5 ? "" : "\n");
    int32_t *whole, *a, *b;
    size_t nw, na, nb;
    asn_tokenize(v, text, len, 0, 0, &whole, &nw, &e);
    int ra = asn_lm_tokenize_corpus(v, text, len, NULL, p1, &a, &na, &e);
    int rb = asn_lm_tokenize_corpus(v, text, len, NULL, p2, &b, &nb, &e);
    T_OK("corpus: tokenized in pieces = the whole text, after BOS", ra == 0 && na == nw + 1 && a[0] == bos &&
                                                                       same_ids(a + 1, na - 1, whole, nw),
         "%zu ids, whole text %zu", na, nw);
    T_OK("corpus: the same ids on 1 and 2 threads", rb == 0 && same_ids(a, na, b, nb), "differ");
    free(whole), free(a), free(b);

    const char *docs = "one two\n\nthree\n\n\n\nfour\n\n";
    ra = asn_lm_tokenize_corpus(v, docs, strlen(docs), "\n\n", p2, &a, &na, &e);
    int32_t *t1, *t2, *t3, *t4;
    size_t n1, n2, n3, n4;
    asn_tokenize(v, "one two", 7, 0, 0, &t1, &n1, &e);
    asn_tokenize(v, "three", 5, 0, 0, &t2, &n2, &e);
    asn_tokenize(v, "four", 4, 0, 0, &t3, &n3, &e);
    n4 = n1 + n2 + n3 + 6;
    t4 = malloc(n4 * sizeof *t4);
    size_t k = 0;
    t4[k++] = bos, memcpy(t4 + k, t1, n1 * 4), k += n1, t4[k++] = eos;
    t4[k++] = bos, memcpy(t4 + k, t2, n2 * 4), k += n2, t4[k++] = eos;
    t4[k++] = bos, memcpy(t4 + k, t3, n3 * 4), k += n3, t4[k++] = eos;
    T_OK("corpus: documents get BOS and EOS, empty ones are skipped", ra == 0 && same_ids(a, na, t4, n4),
         "%zu ids, expected %zu", na, n4);
    free(a), free(t1), free(t2), free(t3), free(t4);

    /* the cache */
    char path[600], cache[600];
    snprintf(path, sizeof path, "%s", tmp_path("corpus.txt"));
    snprintf(cache, sizeof cache, "%s", tmp_path("corpus.tokens"));
    FILE *f = fopen(path, "wb");
    fwrite(text, 1, 100000, f);
    fclose(f);
    asn_lm_corpus_info info;
    ra = asn_lm_corpus_load(path, v, "vocab-1", NULL, cache, p2, &a, &na, &info, &e);
    T_OK("corpus file: tokenized, cache written", ra == 0 && !info.from_cache && info.bytes == 100000 &&
                                                      !info.warning[0] && access(cache, F_OK) == 0,
         "%s %s", e.msg, info.warning);
    rb = asn_lm_corpus_load(path, v, "vocab-1", NULL, cache, p2, &b, &nb, &info, &e);
    T_OK("corpus file: the second load reads the cache", rb == 0 && info.from_cache && same_ids(a, na, b, nb),
         "from_cache %d", info.from_cache);
    free(b);
    rb = asn_lm_corpus_load(path, v, "vocab-2", NULL, cache, p2, &b, &nb, &info, &e);
    T_OK("corpus file: another vocab id rebuilds the cache", rb == 0 && !info.from_cache && same_ids(a, na, b, nb),
         "from_cache %d", info.from_cache);
    free(b);
    rb = asn_lm_corpus_load(path, v, "vocab-2", "\n\n", cache, p2, &b, &nb, &info, &e);
    T_OK("corpus file: another document separator rebuilds it", rb == 0 && !info.from_cache && nb > na,
         "from_cache %d, %zu ids", info.from_cache, nb);
    free(b);
    if (truncate(cache, 200) == 0) {
        rb = asn_lm_corpus_load(path, v, "vocab-2", "\n\n", cache, p2, &b, &nb, &info, &e);
        T_OK("corpus file: a truncated cache is rebuilt", rb == 0 && !info.from_cache && nb > na, "from_cache %d",
             info.from_cache);
        free(b);
    }
    rb = asn_lm_corpus_load(tmp_path("missing.txt"), v, "vocab-2", NULL, cache, p2, &b, &nb, &info, &e);
    T_OK("corpus file: a missing file is an error naming it", rb == -1 && strstr(e.msg, "missing.txt"), "%s",
         e.msg);
    unlink(path);
    unlink(cache);

    /* windows: in range, a pure function of (key, index), reaching both ends */
    asn_rng_key key = asn_rng_key_make(5, "train-lm", "windows");
    size_t lo = (size_t)-1, hi = 0;
    int ok = 1;
    for (uint64_t i = 0; i < 20000; i++) {
        size_t w = asn_lm_window(key, i, 1000, 64);
        ok &= w <= 1000 - 64 - 1 && w == asn_lm_window(key, i, 1000, 64);
        lo = w < lo ? w : lo;
        hi = w > hi ? w : hi;
    }
    T_OK("windows: inside the stream, deterministic, covering it", ok && lo == 0 && hi == 935, "lo %zu hi %zu", lo,
         hi);
    T_EQ_INT("windows: a stream of exactly len + 1 tokens has one window", asn_lm_window(key, 3, 65, 64), 0);
    free(a);
    free(text);
    asn_vocab_free(v);
    asn_gguf_close(g);
}

/* ---------------------------------------------------------- init, errors */

static void test_init_and_errors(asn_pool *pool)
{
    asn_err e;
    asn_lm_config c = {.n_vocab = 300, .dim = 64, .n_layer = 4, .n_head = 4, .ffn = 96, .ctx = 32};
    asn_lm *a = asn_lm_new(&c, pool, &e), *b = asn_lm_new(&c, pool, &e);
    T_EQ_INT("n_head_kv defaults to n_head", asn_lm_cfg(a)->n_head_kv, 4);
    T_NEAR("rope base default", asn_lm_cfg(a)->rope_base, 10000.0, 0);
    size_t np = asn_lm_n_params(a), expect = 300 * 64 + 64 + 4 * (2 * 64 + 4 * 64 * 64 + 3 * 64 * 96);
    size_t count = 0;
    for (size_t t = 0; t < asn_lm_n_tensors(a); t++)
        count += asn_lm_tensor_at(a, t)->size;
    T_EQ_INT("parameter count", count, expect);
    T_OK("flat array holds every tensor", np >= count, "%zu < %zu", np, count);
    asn_lm_init_weights(a, 42);
    asn_lm_init_weights(b, 42);
    T_OK("init: same seed, same weights", !memcmp(asn_lm_params(a), asn_lm_params(b), np * sizeof(float)), "differ");
    asn_lm_init_weights(b, 43);
    T_OK("init: another seed, other weights", memcmp(asn_lm_params(a), asn_lm_params(b), np * sizeof(float)), "same");
    const asn_lm_tensor *te = asn_lm_find_tensor(a, "token_embd.weight");
    const asn_lm_tensor *tn = asn_lm_find_tensor(a, "blk.2.ffn_norm.weight");
    const asn_lm_tensor *to = asn_lm_find_tensor(a, "blk.1.attn_output.weight");
    double s2 = 0, so = 0, mean = 0;
    for (size_t i = 0; i < te->size; i++)
        s2 += (double)asn_lm_params(a)[te->offset + i] * asn_lm_params(a)[te->offset + i],
            mean += asn_lm_params(a)[te->offset + i];
    for (size_t i = 0; i < to->size; i++)
        so += (double)asn_lm_params(a)[to->offset + i] * asn_lm_params(a)[to->offset + i];
    T_NEAR("init: embedding std 0.02", sqrt(s2 / te->size), 0.02, 0.0005);
    T_NEAR("init: embedding mean 0", mean / te->size, 0, 0.0005);
    T_NEAR("init: attn_output std 0.02 / sqrt(2 layers)", sqrt(so / to->size), 0.02 / sqrt(8.0), 0.0005);
    T_OK("init: norm gains 1", asn_lm_params(a)[tn->offset] == 1.0f && !tn->decay && te->decay, "gain %g",
         asn_lm_params(a)[tn->offset]);
    T_OK("unknown tensor name", asn_lm_find_tensor(a, "output.weight") == NULL, "found");

    int32_t tok[4] = {1, 2, 300, 4}, tg[4] = {1, 2, 3, 4};
    T_OK("token out of range", asn_lm_forward(a, tok, tg, 1, 4, NULL, &e) == -1 && strstr(e.msg, "300"), "%s", e.msg);
    tok[2] = 3;
    tg[1] = -2;
    T_OK("target out of range", asn_lm_forward(a, tok, tg, 1, 4, NULL, &e) == -1 && strstr(e.msg, "-2"), "%s", e.msg);
    int32_t *big = calloc(40, sizeof(int32_t));
    T_OK("sequence longer than ctx", asn_lm_forward(a, big, NULL, 1, 40, NULL, &e) == -1 && strstr(e.msg, "context"),
         "%s", e.msg);
    free(big);
    asn_lm_forward(a, tok, NULL, 1, 4, NULL, &e);
    T_OK("backward without targets", asn_lm_backward(a, 1, &e) == -1, "accepted");
    T_OK("logits after a forward pass without targets", asn_lm_logits(a) != NULL, "NULL");
    tg[0] = 5, tg[1] = -1, tg[2] = 7, tg[3] = 8; /* not the inputs: tied embeddings favour those */
    double loss = -1;
    asn_lm_forward(a, tok, tg, 1, 4, &loss, &e);
    T_OK("logits are gone after a forward pass with targets", asn_lm_logits(a) == NULL, "not NULL");
    T_NEAR("initial loss is about log(vocab)", loss, log(300.0), 0.05);
    asn_lm_free(a);
    asn_lm_free(b);

    asn_lm_config bad[] = {
        {.n_vocab = 10, .dim = 30, .n_layer = 1, .n_head = 4, .ffn = 8, .ctx = 8},
        {.n_vocab = 10, .dim = 12, .n_layer = 1, .n_head = 4, .ffn = 8, .ctx = 8},
        {.n_vocab = 10, .dim = 16, .n_layer = 1, .n_head = 4, .n_head_kv = 3, .ffn = 8, .ctx = 8},
        {.n_vocab = 0, .dim = 16, .n_layer = 1, .n_head = 4, .ffn = 8, .ctx = 8},
        {.n_vocab = 10, .dim = 16, .n_layer = 1, .n_head = 4, .ffn = 8, .ctx = 0},
    };
    const char *why[] = {"dim not a multiple of heads", "odd head size", "heads not a multiple of kv heads",
                         "no vocabulary", "no context"};
    for (int i = 0; i < 5; i++) {
        char name[96];
        snprintf(name, sizeof name, "config rejected: %s", why[i]);
        asn_lm *lm = asn_lm_new(&bad[i], pool, &e);
        T_OK(name, lm == NULL && e.msg[0], "accepted");
        asn_lm_free(lm);
    }
}

int main(void)
{
    snprintf(tmpdir, sizeof tmpdir, "%s/asn-test-lm-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(tmpdir)) {
        printf("not ok - temporary directory\n");
        return 1;
    }
    asn_pool *p1 = asn_pool_new(1), *p2 = asn_pool_new(2);
    for (int k = 0; k < 2; k++) {
        asn_pool *pool = k ? p2 : NULL;
        tlabel = k ? "2 threads" : "1 thread";
        test_embedding(pool);
        test_rmsnorm(pool);
        test_matmul(pool);
        test_rope(pool);
        test_attention(pool, 1, 5, 2, 2, 4);
        test_attention(pool, 2, 70, 4, 2, 4); /* two query blocks, grouped heads */
        test_swiglu(pool);
        test_crossentropy(pool);
        test_residual(pool);
    }
    test_model_fd(p2);
    test_torch(p1, "1 thread");
    test_torch(p2, "2 threads");
    test_reproducible(p1, p2);
    test_accumulation(p2);
    test_export(p2);
    test_init_and_errors(p2);
    test_training_helpers(p2);
    test_corpus(p1, p2);
    unlink(tmp_path("model.gguf"));
    rmdir(tmpdir);
    asn_pool_free(p1);
    asn_pool_free(p2);
    T_DONE();
}
