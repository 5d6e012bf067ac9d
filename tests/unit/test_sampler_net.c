/* test_sampler_net.c — the learned samplers (lib/learn):
 *  - every layer's backward pass against central finite differences of its
 *    forward pass (Linear, LayerNorm, SwiGLU MLP with a constant tail and
 *    its fused scalar form, silu, elu+1, linear attention, mean pooling,
 *    soft truncation, log_softmax, TruncatedLogitsLoss);
 *  - the fused inference kernel of the local and distribution-aware
 *    transforms against the same math in double, and the same bits on
 *    every instruction set (AVX-512, AVX2 + FMA, any);
 *  - each architecture's parameter and input gradients against finite
 *    differences of loss(forward), on a row with -inf tokens, one block of
 *    tokens and several, one thread and two;
 *  - outputs, loss and gradients of the five reference models against an
 *    independent PyTorch float64 implementation
 *    (tests/reference/sampler_ref.py wrote tests/fixtures/sampler/), |asn -
 *    ref| <= 1e-5 * max |ref| per tensor, V = 50 (with -inf tokens) and 5000;
 *  - -inf tokens (finite tokens only, never NaN), NaN / +inf inputs,
 *    permutation equivariance, thread-count invariance of the forward pass;
 *  - sampler files (save / load round trip, bad files), the reference
 *    configs, initialization. */
#include "asn/sampler_net.h"
#include "asn/yaml.h"
#include "learn/layers.h"
#include "t.h"

#include <cblas.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------- utilities */

static uint64_t rng_s = 0x9E3779B97F4A7C15ULL;
static double urand(void) /* [0, 1) */
{
    rng_s ^= rng_s << 13, rng_s ^= rng_s >> 7, rng_s ^= rng_s << 17;
    return (double)(rng_s >> 11) * 0x1.0p-53;
}
static float frand(float lo, float hi) { return lo + (hi - lo) * (float)urand(); }
static float *randv(size_t n, float lo, float hi)
{
    float *v = malloc(n * sizeof(float) + 1);
    for (size_t i = 0; i < n; i++)
        v[i] = frand(lo, hi);
    return v;
}
static float *zerov(size_t n) { return calloc(n + 1, sizeof(float)); }

static char path_buf[4096];
static const char *test_path(const char *name)
{
    const char *root = getenv("ASN_ROOT");
    snprintf(path_buf, sizeof path_buf, "%s/tests/%s", root ? root : ".", name);
    return path_buf;
}
static char tmp_dir[256];
static char tmp_buf[512];
static const char *tmp_path(const char *name)
{
    snprintf(tmp_buf, sizeof tmp_buf, "%s/%s", tmp_dir, name);
    return tmp_buf;
}

/* Central differences of f with respect to the n floats at x (every
 * `step`-th one), against the analytic gradient g; passes when every
 * difference is within tol * max|g| (+ abs_tol). */
typedef double (*fd_fn)(void *ctx);
static void fd_check(const char *name, float *x, const float *g, size_t n, size_t step, fd_fn f, void *ctx, float h,
                     double tol, double abs_tol)
{
    double gmax = 0, worst = 0, wfd = 0, wan = 0;
    size_t wi = 0;
    for (size_t i = 0; i < n; i++)
        gmax = fmax(gmax, fabs(g[i]));
    for (size_t i = 0; i < n; i += step) {
        float x0 = x[i], xp = x0 + h * fmaxf(1.0f, fabsf(x0)), xm = x0 - h * fmaxf(1.0f, fabsf(x0));
        x[i] = xp;
        double lp = f(ctx);
        x[i] = xm;
        double lm = f(ctx);
        x[i] = x0;
        double fd = (lp - lm) / ((double)xp - xm);
        double err = fabs(fd - g[i]);
        if (err > worst)
            worst = err, wi = i, wfd = fd, wan = g[i];
    }
    char label[256];
    snprintf(label, sizeof label, "finite differences: %s", name);
    T_OK(label, worst <= tol * gmax + abs_tol, "worst at %zu: analytic %.6g, numeric %.6g (max |grad| %.3g)", wi, wan,
         wfd, gmax);
}

static double dot_d(const float *a, const float *b, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += (double)a[i] * b[i];
    return s;
}

/* ---------------------------------------------------------------- layers */

typedef struct lin_ctx {
    int n, in, oc, ldi, ldo, ldw;
    float *inp, *w, *b, *out, *r;
} lin_ctx;
static double lin_f(void *c_)
{
    lin_ctx *c = c_;
    asn_nn_linear_forward(c->out, c->ldo, c->inp, c->ldi, c->w, c->ldw, c->b, c->n, c->in, c->oc);
    double s = 0;
    for (int i = 0; i < c->n; i++)
        s += dot_d(c->out + (size_t)i * c->ldo, c->r + (size_t)i * c->oc, (size_t)c->oc);
    return s;
}
static void test_linear(int in)
{
    lin_ctx c = {5, in, 4, in + 2, 6, in + 1, NULL, NULL, NULL, NULL, NULL};
    c.inp = randv((size_t)c.n * c.ldi, -1, 1);
    c.w = randv((size_t)c.oc * c.ldw, -1, 1);
    c.b = randv((size_t)c.oc, -1, 1);
    c.out = zerov((size_t)c.n * c.ldo);
    c.r = randv((size_t)c.n * c.oc, -1, 1);
    float *dout = zerov((size_t)c.n * c.ldo), *dinp = zerov((size_t)c.n * c.ldi);
    float *dw = zerov((size_t)c.oc * c.ldw), *db = zerov((size_t)c.oc);
    for (int i = 0; i < c.n; i++)
        memcpy(dout + (size_t)i * c.ldo, c.r + (size_t)i * c.oc, (size_t)c.oc * sizeof(float));
    asn_nn_linear_backward(dinp, c.ldi, dw, c.ldw, db, dout, c.ldo, c.inp, c.ldi, c.w, c.ldw, c.n, c.in, c.oc);
    char name[64];
    snprintf(name, sizeof name, "Linear (in %d) input", in);
    fd_check(name, c.inp, dinp, (size_t)c.n * c.ldi, 1, lin_f, &c, 1e-2f, 1e-3, 1e-4);
    snprintf(name, sizeof name, "Linear (in %d) weight", in);
    fd_check(name, c.w, dw, (size_t)c.oc * c.ldw, 1, lin_f, &c, 1e-2f, 1e-3, 1e-4);
    snprintf(name, sizeof name, "Linear (in %d) bias", in);
    fd_check(name, c.b, db, (size_t)c.oc, 1, lin_f, &c, 1e-2f, 1e-3, 1e-4);
    free(c.inp), free(c.w), free(c.b), free(c.out), free(c.r), free(dout), free(dinp), free(dw), free(db);
}

typedef struct ln_ctx {
    int n, C;
    float *inp, *w, *b, *out, *mean, *rstd, *r;
} ln_ctx;
static double ln_f(void *c_)
{
    ln_ctx *c = c_;
    asn_nn_layernorm_forward(c->out, c->mean, c->rstd, c->inp, c->w, c->b, c->n, c->C);
    return dot_d(c->out, c->r, (size_t)c->n * c->C);
}
static void test_layernorm(void)
{
    ln_ctx c = {4, 20, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    size_t nc = (size_t)c.n * c.C;
    c.inp = randv(nc, -2, 2);
    c.w = randv((size_t)c.C, 0.5f, 1.5f);
    c.b = randv((size_t)c.C, -0.5f, 0.5f);
    c.out = zerov(nc), c.mean = zerov((size_t)c.n), c.rstd = zerov((size_t)c.n);
    c.r = randv(nc, -1, 1);
    ln_f(&c);
    /* against a direct computation */
    double worst = 0;
    for (int i = 0; i < c.n; i++) {
        double m = 0, v = 0;
        for (int j = 0; j < c.C; j++)
            m += c.inp[i * c.C + j] / (double)c.C;
        for (int j = 0; j < c.C; j++)
            v += (c.inp[i * c.C + j] - m) * (c.inp[i * c.C + j] - m) / c.C;
        for (int j = 0; j < c.C; j++) {
            double y = (c.inp[i * c.C + j] - m) / sqrt(v + 1e-5) * c.w[j] + c.b[j];
            worst = fmax(worst, fabs(y - c.out[i * c.C + j]));
        }
    }
    T_OK("LayerNorm forward matches the formula (eps 1e-5)", worst < 1e-5, "max error %g", worst);
    float *dinp = zerov(nc), *dw = zerov((size_t)c.C), *db = zerov((size_t)c.C);
    asn_nn_layernorm_backward(dinp, dw, db, c.r, c.inp, c.w, c.mean, c.rstd, c.n, c.C);
    fd_check("LayerNorm input", c.inp, dinp, nc, 1, ln_f, &c, 1e-2f, 1e-2, 1e-4);
    fd_check("LayerNorm weight", c.w, dw, (size_t)c.C, 1, ln_f, &c, 1e-2f, 1e-3, 1e-4);
    fd_check("LayerNorm bias", c.b, db, (size_t)c.C, 1, ln_f, &c, 1e-2f, 1e-3, 1e-4);
    free(c.inp), free(c.w), free(c.b), free(c.out), free(c.mean), free(c.rstd), free(c.r);
    free(dinp), free(dw), free(db);
}

/* A SwiGLU MLP whose inputs end in a constant tail. */
typedef struct mlp_ctx {
    int n, in, in_used, hidden, out;
    asn_nn_mlp m;
    float *params, *inp, *tail, *y, *g, *u, *a, *bg, *bu, *r;
} mlp_ctx;
static asn_nn_mlp mlp_at(float *p, int in, int inner, int out)
{
    asn_nn_mlp m = {in, inner, out, NULL, NULL, NULL, NULL, NULL, NULL};
    m.wg = p, p += (size_t)inner * in;
    m.bg = p, p += inner;
    m.wu = p, p += (size_t)inner * in;
    m.bu = p, p += inner;
    m.wd = p, p += (size_t)out * inner;
    m.bd = p;
    return m;
}
static size_t mlp_size(int in, int inner, int out) { return 2 * ((size_t)inner * in + inner) + (size_t)out * inner + out; }
static double mlp_f(void *c_)
{
    mlp_ctx *c = c_;
    asn_nn_mlp_tail_bias(c->bg, c->bu, &c->m, c->in_used, c->tail);
    asn_nn_mlp_forward(c->y, c->out, c->g, c->u, c->a, c->inp, c->in_used, c->in_used, c->bg, c->bu, &c->m, c->n);
    return dot_d(c->y, c->r, (size_t)c->n * c->out);
}
static void test_mlp(void)
{
    mlp_ctx c;
    memset(&c, 0, sizeof c);
    c.n = 5, c.in = 6, c.in_used = 4, c.hidden = 9, c.out = 3;
    int NI = asn_nn_mlp_inner(c.hidden);
    T_EQ_INT("SwiGLU inner size int(2 * 9 / 3)", NI, 6);
    T_EQ_INT("SwiGLU inner size int(2 * 32 / 3)", asn_nn_mlp_inner(32), 21);
    size_t np = mlp_size(c.in, NI, c.out);
    c.params = randv(np, -0.8f, 0.8f);
    c.m = mlp_at(c.params, c.in, NI, c.out);
    c.inp = randv((size_t)c.n * c.in_used, -1.5f, 1.5f);
    c.tail = randv((size_t)(c.in - c.in_used), -1, 1);
    c.y = zerov((size_t)c.n * c.out);
    c.g = zerov((size_t)c.n * NI), c.u = zerov((size_t)c.n * NI), c.a = zerov((size_t)c.n * NI);
    c.bg = zerov((size_t)NI), c.bu = zerov((size_t)NI);
    c.r = randv((size_t)c.n * c.out, -1, 1);
    mlp_f(&c);
    float *grads = zerov(np), *dinp = zerov((size_t)c.n * c.in_used), *dtail = zerov((size_t)c.in);
    float *scratch = zerov(3 * (size_t)c.n * NI);
    double sdg[16] = {0}, sdu[16] = {0};
    asn_nn_mlp dm = mlp_at(grads, c.in, NI, c.out);
    asn_nn_mlp_backward(dinp, c.in_used, &dm, sdg, sdu, c.r, c.out, c.g, c.u, c.a, c.inp, c.in_used, c.in_used, &c.m,
                        c.n, scratch);
    asn_nn_mlp_tail_backward(dtail, &dm, sdg, sdu, &c.m, c.in_used, c.tail);
    fd_check("SwiGLU MLP parameters", c.params, grads, np, 1, mlp_f, &c, 1e-2f, 1e-2, 1e-4);
    fd_check("SwiGLU MLP input", c.inp, dinp, (size_t)c.n * c.in_used, 1, mlp_f, &c, 1e-2f, 1e-2, 1e-4);
    fd_check("SwiGLU MLP constant tail", c.tail, dtail, (size_t)(c.in - c.in_used), 1, mlp_f, &c, 1e-2f, 1e-2, 1e-4);
    free(c.params), free(c.inp), free(c.tail), free(c.y), free(c.g), free(c.u), free(c.a), free(c.bg), free(c.bu);
    free(c.r), free(grads), free(dinp), free(dtail), free(scratch);
}

/* The fused scalar MLP against the generic one, and its gradients. */
typedef struct mlp1_ctx {
    int n;
    asn_nn_mlp m;
    float *params, *x, *y, *r;
} mlp1_ctx;
static double mlp1_f(void *c_)
{
    mlp1_ctx *c = c_;
    asn_nn_mlp1_forward(c->y, c->x, &c->m, c->n);
    return dot_d(c->y, c->r, (size_t)c->n);
}
static void test_mlp1(int hidden)
{
    mlp1_ctx c;
    c.n = 37;
    int NI = asn_nn_mlp_inner(hidden);
    size_t np = mlp_size(1, NI, 1);
    c.params = randv(np, -0.8f, 0.8f);
    c.m = mlp_at(c.params, 1, NI, 1);
    c.x = randv((size_t)c.n, -12, 0);
    c.y = zerov((size_t)c.n);
    c.r = randv((size_t)c.n, -1, 1);
    mlp1_f(&c);
    float *y2 = zerov((size_t)c.n), *g = zerov((size_t)c.n * NI), *u = zerov((size_t)c.n * NI);
    float *a = zerov((size_t)c.n * NI);
    asn_nn_mlp_forward(y2, 1, g, u, a, c.x, 1, 1, NULL, NULL, &c.m, c.n);
    double worst = 0;
    for (int i = 0; i < c.n; i++)
        worst = fmax(worst, fabs(y2[i] - c.y[i]) / fmax(1, fabs(y2[i])));
    char name[96];
    snprintf(name, sizeof name, "fused scalar MLP (hidden %d) = generic SwiGLU MLP", hidden);
    T_OK(name, worst < 1e-5, "max relative difference %g", worst);
    float *grads = zerov(np), *dx = zerov((size_t)c.n);
    asn_nn_mlp dm = mlp_at(grads, 1, NI, 1);
    asn_nn_mlp1_backward(dx, &dm, c.r, c.x, &c.m, c.n);
    snprintf(name, sizeof name, "fused scalar MLP (hidden %d) parameters", hidden);
    fd_check(name, c.params, grads, np, 1, mlp1_f, &c, 1e-2f, 1e-2, 1e-4);
    snprintf(name, sizeof name, "fused scalar MLP (hidden %d) input", hidden);
    fd_check(name, c.x, dx, (size_t)c.n, 1, mlp1_f, &c, 1e-3f, 1e-2, 1e-4);
    free(c.params), free(c.x), free(c.y), free(c.r), free(y2), free(g), free(u), free(a), free(grads), free(dx);
}

/* The fused inference kernel of LocalProbabilityTransform and
 * SimpleDistributionAwareTransform (pertoken.c) against the same math in
 * double, and the same bits on every instruction set this machine runs. */
static double silu_d(double x) { return x / (1 + exp(-x)); }
static double logsig_d(double z) { return fmin(z, 0) - log1p(exp(-fabs(z))); }
static void pertoken_ref(double *out, const float *x, int n, const asn_nn_pertoken *f)
{
    const asn_nn_mlp *m = f->m;
    int NI = m->inner, H = f->H;
    double loc[ASN_NN_DIST_MAXH];
    for (int i = 0; i < n; i++) {
        double lp = (double)x[i] - f->lse, acc = m->bd[0];
        for (int h = 0; h < H; h++)
            loc[h] = silu_d(lp * f->w1[h] + f->b1[h]);
        for (int j = 0; j < NI; j++) {
            double g, u;
            if (!H) {
                g = lp * m->wg[j] + m->bg[j];
                u = lp * m->wu[j] + m->bu[j];
            } else {
                g = f->bias_g[j], u = f->bias_u[j];
                for (int h = 0; h < H; h++) {
                    g += loc[h] * m->wg[(size_t)j * m->in + h];
                    u += loc[h] * m->wu[(size_t)j * m->in + h];
                }
            }
            acc += m->wd[j] * silu_d(g) * u;
        }
        double l = lp + acc;
        out[i] = l + logsig_d(l * f->scale + f->thr);
    }
}

/* layers.c's soft truncation, one value at a time: Cephes' expf, log1p by
 * atanh's series (the same operations, in the same order) */
static float exp_ref(float x)
{
    const float x0 = x;
    if (x > 88.3f)
        x = 88.3f;
    if (-87.3f > x0)
        x = -87.3f;
    float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    float r = x - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    int32_t e = ((int32_t)n + 127) << 23;
    float f;
    memcpy(&f, &e, sizeof f);
    return -87.3f > x0 ? 0.0f : p * f;
}
static float log1p01_ref(float e)
{
    float u = 1.0f + e, c = e - (u - 1.0f);
    int big = u > 1.41421356f;
    float m = big ? u * 0.5f : u, k = big ? 0.693147181f : 0.0f;
    float s = (m - 1.0f) / (m + 1.0f), z = s * s, p = 1.0f / 11;
    p = p * z + 1.0f / 9;
    p = p * z + 1.0f / 7;
    p = p * z + 1.0f / 5;
    p = p * z + 1.0f / 3;
    p = p * z + 1.0f;
    return k + 2.0f * s * p + c;
}
static float trunc_ref(float l, float scale, float thr)
{
    float z = l * scale + thr;
    float mn = z < 0.0f ? z : 0.0f;
    return l + (mn - log1p01_ref(exp_ref(-fabsf(z))));
}

static void test_pertoken(void)
{
    static const int hs[] = {0, 0, 2, 8, 13, 16, 32, ASN_NN_DIST_MAXH};
    static const int ns[] = {1, 15, 16, 17, 33, 1000};
    int top = asn_nn_pertoken_level();
    printf("# fused LOCAL / DIST kernel: instruction set level %d of 2 on this machine\n", top);
    for (int k = 0; k < (int)(sizeof hs / sizeof hs[0]); k++) {
        int H = hs[k], hidden = H ? H : (k == 0 ? 8 : 33), NI = asn_nn_mlp_inner(hidden), in = H ? H + 2 : 1;
        float *params = randv(mlp_size(in, NI, 1), -0.8f, 0.8f), *w1 = randv(64, -1.5f, 1.5f), *b1 = randv(64, -1, 1);
        float *bg = randv(64, -1, 1), *bu = randv(64, -1, 1);
        asn_nn_mlp m = mlp_at(params, in, NI, 1);
        asn_nn_pertoken f = {&m, H, w1, b1, bg, bu, 3.1415926535, 1.3f, 8.5f, NULL};
        float *neg = zerov(asn_nn_pertoken_size(&f));
        asn_nn_pertoken_prepare(&f, neg);
        int nmax = 1000;
        float *x = randv((size_t)nmax, -28, 6), *o0 = zerov((size_t)nmax), *o1 = zerov((size_t)nmax);
        float *lp = zerov((size_t)nmax);
        double *ref = malloc((size_t)nmax * sizeof(double));
        x[0] = 3.1415926535f; /* lp = 0 */
        pertoken_ref(ref, x, nmax, &f);
        double worst = 0, scale = 1;
        int same = 1, lp_ok = 1;
        for (int t = 0; t < (int)(sizeof ns / sizeof ns[0]); t++) {
            int n = ns[t];
            asn_nn_pertoken_force(0);
            asn_nn_pertoken_forward(o0, lp, x, &f, n);
            float hi = (float)f.lse, lo = (float)(f.lse - hi);
            for (int i = 0; i < n; i++) {
                worst = fmax(worst, fabs(o0[i] - ref[i]));
                scale = fmax(scale, fabs(ref[i]));
                lp_ok &= lp[i] == (x[i] - hi) - lo;
            }
            for (int level = 1; level <= top; level++) {
                asn_nn_pertoken_force(level);
                memset(o1, 0, (size_t)nmax * sizeof(float));
                asn_nn_pertoken_forward(o1, NULL, x, &f, n);
                same &= !memcmp(o0, o1, (size_t)n * sizeof(float)) && o1[n] == 0.0f;
            }
        }
        asn_nn_pertoken_force(-1);
        char name[160];
        const char *arch = H ? "distribution-aware" : "local";
        snprintf(name, sizeof name, "fused %s kernel (hidden %d) = the same in double", arch, hidden);
        T_OK(name, worst <= 2e-6 * scale, "max |d| %g (max |ref| %g)", worst, scale);
        snprintf(name, sizeof name, "fused %s kernel (hidden %d): lp = (x - hi) - lo", arch, hidden);
        T_OK(name, lp_ok, "differs");
        snprintf(name, sizeof name, "fused %s kernel (hidden %d): the same bits on every instruction set", arch,
                 hidden);
        T_OK(name, same, "outputs differ (or write past n)");
        free(params), free(w1), free(b1), free(bg), free(bu), free(neg), free(x), free(o0), free(o1), free(lp);
        free(ref);
    }
    /* the exp pass of the log-sum-exp */
    int n = 1000;
    float *x = randv((size_t)n, -120, 5);
    x[5] = -INFINITY;
    x[7] = -3e38f; /* x - m far below the exp's range, finite */
    double s0 = 0, w0 = 0, rs = 0, rw = 0;
    for (int i = 0; i < n; i++)
        if (x[i] > -INFINITY) {
            double t = (double)x[i] - 5.0, e = exp(t);
            rs += e;
            rw += e * t;
        }
    asn_nn_pertoken_force(0);
    asn_nn_pertoken_expsum(x, n, 5.0f, &s0, &w0);
    int same = 1, same_sum = 1;
    for (int level = 0; level <= top; level++) {
        double s1, w1, s2;
        asn_nn_pertoken_force(level);
        asn_nn_pertoken_expsum(x, n, 5.0f, &s1, &w1);
        asn_nn_pertoken_expsum(x, n, 5.0f, &s2, NULL); /* the sum alone */
        same &= s1 == s0 && w1 == w0;
        same_sum &= s2 == s0;
    }
    asn_nn_pertoken_force(-1);
    T_OK("exp sums of the log-sum-exp: the sum alone (no entropy) has the same bits on every instruction set",
         same_sum, "differ");
    T_OK("exp sums of the log-sum-exp = the same in double", fabs(s0 - rs) <= 1e-6 * rs && fabs(w0 - rw) <= 1e-6 * fabs(rw),
         "sum %.9g vs %.9g, weighted %.9g vs %.9g", s0, rs, w0, rw);
    T_OK("exp sums of the log-sum-exp: the same bits on every instruction set", same, "differ");
    free(x);
    /* the scan before it: max, smallest finite, count above -inf, NaN or
     * +inf; every length up to 70 (the partial vectors) on every level */
    int scan_ok = 1;
    char why[200] = "";
    for (int len = 1; len <= 70 && scan_ok; len++)
        for (int kind = 0; kind < 4 && scan_ok; kind++) {
            float *v = randv((size_t)len, -30, 30);
            if (kind >= 1)
                v[len / 2] = -INFINITY;
            if (kind == 2)
                v[len - 1] = NAN;
            if (kind == 3)
                v[0] = INFINITY;
            float rmax = -INFINITY, rmin = INFINITY;
            int64_t rcount = 0;
            int rbad = 0;
            for (int i = 0; i < len; i++) {
                if (isnan(v[i]) || v[i] == INFINITY) {
                    rbad = 1;
                    continue;
                }
                if (v[i] > rmax)
                    rmax = v[i];
                if (v[i] > -INFINITY) {
                    rcount++;
                    if (v[i] < rmin)
                        rmin = v[i];
                }
            }
            for (int level = 0; level <= top; level++) {
                float mx, mn;
                int64_t cnt;
                int bad;
                asn_nn_pertoken_force(level);
                asn_nn_pertoken_scan(v, len, &mx, &mn, &cnt, &bad);
                if (bad != rbad || (!rbad && (mx != rmax || mn != rmin || cnt != rcount))) {
                    scan_ok = 0;
                    snprintf(why, sizeof why, "level %d, %d values, kind %d: max %g min %g count %lld bad %d "
                             "(want %g %g %lld %d)", level, len, kind, mx, mn, (long long)cnt, bad, rmax, rmin,
                             (long long)rcount, rbad);
                    break;
                }
            }
            asn_nn_pertoken_force(-1);
            free(v);
        }
    T_OK("the log-sum-exp's scan: max, smallest finite, count, NaN/+inf as a plain loop, on every level", scan_ok,
         "%s", why);
    /* the soft truncation: the same float operations one value at a time */
    int tn = 3000, tr_ok = 1;
    float *tl = randv((size_t)tn, -120, 40), *to = malloc((size_t)tn * sizeof(float));
    tl[0] = 0.0f, tl[1] = -0.0f, tl[2] = 1e-30f, tl[3] = -200.0f, tl[4] = 300.0f, tl[5] = -INFINITY;
    const float scales[3] = {0.7f, 3.1f, 0.01f}, thrs[3] = {2.5f, -40.0f, 0.0f};
    for (int c = 0; c < 3 && tr_ok; c++)
        for (int level = 0; level <= top && tr_ok; level++) {
            asn_nn_pertoken_force(level);
            for (int len = tn - 37; len <= tn; len += 37) /* partial vectors at the end */
                asn_nn_pertoken_trunc(to, tl, scales[c], thrs[c], len);
            for (int i = 0; i < tn; i++) {
                float want = trunc_ref(tl[i], scales[c], thrs[c]);
                if (memcmp(&want, &to[i], sizeof want)) {
                    tr_ok = 0;
                    snprintf(why, sizeof why, "level %d, l %.9g scale %g thr %g: %.9g, want %.9g", level, tl[i],
                             scales[c], thrs[c], to[i], want);
                    break;
                }
            }
        }
    asn_nn_pertoken_force(-1);
    T_OK("the soft truncation: the bits of its float operations one value at a time, on every level", tr_ok, "%s",
         why);
    /* elu + 1, in place, every length to 70 */
    int elu_ok = 1;
    for (int level = 0; level <= top && elu_ok; level++) {
        asn_nn_pertoken_force(level);
        for (int len = 1; len <= 70 && elu_ok; len++) {
            for (int i = 0; i < len; i++)
                to[i] = tl[i] * 0.5f;
            asn_nn_pertoken_elu1(to, to, len);
            for (int i = 0; i < len; i++) {
                float x = tl[i] * 0.5f, want = x > 0.0f ? x + 1.0f : exp_ref(x < 0.0f ? x : 0.0f);
                if (memcmp(&want, &to[i], sizeof want)) {
                    elu_ok = 0;
                    snprintf(why, sizeof why, "level %d, x %.9g: %.9g, want %.9g", level, x, to[i], want);
                    break;
                }
            }
        }
    }
    asn_nn_pertoken_force(-1);
    T_OK("elu + 1: the bits of its float operations one value at a time, on every level", elu_ok, "%s", why);
    free(tl), free(to);
}

typedef struct map_ctx {
    int kind; /* 0 silu, 1 elu+1 */
    size_t n;
    float *x, *y, *r;
} map_ctx;
static double map_f(void *c_)
{
    map_ctx *c = c_;
    if (c->kind == 0)
        asn_nn_silu_forward(c->y, c->x, c->n);
    else
        asn_nn_elu1_forward(c->y, 0, c->x, 0, 1, (int)c->n);
    return dot_d(c->y, c->r, c->n);
}
static void test_maps(void)
{
    for (int kind = 0; kind < 2; kind++) {
        map_ctx c = {kind, 19, randv(19, -4, 4), zerov(19), randv(19, -1, 1)};
        c.x[3] = 0.5f;
        map_f(&c);
        double worst = 0;
        for (size_t i = 0; i < c.n; i++) {
            double x = c.x[i], ref = kind == 0 ? x / (1 + exp(-x)) : (x > 0 ? x + 1 : exp(x));
            worst = fmax(worst, fabs(ref - c.y[i]) / fmax(1, fabs(ref)));
        }
        T_OK(kind == 0 ? "silu forward" : "elu+1 forward", worst < 1e-6, "max relative error %g", worst);
        float *dx = zerov(c.n);
        if (kind == 0)
            asn_nn_silu_backward(dx, c.r, c.x, c.n);
        else
            asn_nn_elu1_backward(dx, 0, c.r, 0, c.x, 0, 1, (int)c.n);
        fd_check(kind == 0 ? "silu" : "elu+1", c.x, dx, c.n, 1, map_f, &c, 1e-3f, 1e-2, 1e-4);
        /* SwiGLU gating */
        free(dx);
        free(c.x), free(c.y), free(c.r);
    }
}

/* Linear attention from raw q, k, v (phi applied), heads of 4. */
typedef struct att_ctx {
    int n, d, H;
    float *qkv, *qf, *kf, *P, *M, *att, *den, *nd, *r;
} att_ctx;
static double att_f(void *c_)
{
    att_ctx *c = c_;
    int n = c->n, d = c->d;
    asn_nn_elu1_forward(c->qf, d, c->qkv, 3 * d, n, d);
    asn_nn_elu1_forward(c->kf, d, c->qkv + d, 3 * d, n, d);
    memset(c->P, 0, (size_t)d * (d + 1) * sizeof(float));
    asn_nn_linattn_stats_forward(c->P, c->kf, d, c->qkv + 2 * d, 3 * d, n, d);
    asn_nn_linattn_build(c->M, c->P, d, c->H);
    asn_nn_linattn_forward(c->att, c->den, c->qf, d, c->M, n, d, c->H, c->nd);
    return dot_d(c->att, c->r, (size_t)n * d);
}
static void test_attention(void)
{
    att_ctx c = {9, 8, 2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    int n = c.n, d = c.d, H = c.H, dh = d / H;
    c.qkv = randv((size_t)n * 3 * d, -1.5f, 1.5f);
    c.qf = zerov((size_t)n * d), c.kf = zerov((size_t)n * d);
    c.P = zerov((size_t)d * (d + 1)), c.M = zerov((size_t)d * (d + H));
    c.att = zerov((size_t)n * d), c.den = zerov((size_t)n * H), c.nd = zerov((size_t)n * (d + H));
    c.r = randv((size_t)n * d, -1, 1);
    att_f(&c);
    /* against the per-head formula */
    double worst = 0;
    for (int i = 0; i < n; i++)
        for (int h = 0; h < H; h++) {
            double den = 1e-6, num[16] = {0};
            for (int j = 0; j < n; j++) {
                double qk = 0;
                for (int a = h * dh; a < (h + 1) * dh; a++)
                    qk += (double)c.qf[i * d + a] * c.kf[j * d + a];
                den += qk;
                for (int b = 0; b < dh; b++)
                    num[b] += qk * c.qkv[j * 3 * d + 2 * d + h * dh + b];
            }
            for (int b = 0; b < dh; b++)
                worst = fmax(worst, fabs(num[b] / den - c.att[i * d + h * dh + b]));
        }
    T_OK("linear attention forward matches phi(q) (sum phi(k)^T v) / (phi(q) . sum phi(k) + 1e-6)", worst < 1e-5,
         "max error %g", worst);
    float *dqf = zerov((size_t)n * d), *dM = zerov((size_t)d * (d + H)), *dkv = zerov((size_t)d * d);
    float *dks = zerov((size_t)d), *dkf = zerov((size_t)n * d), *dv = zerov((size_t)n * d);
    float *dqkv = zerov((size_t)n * 3 * d);
    asn_nn_linattn_backward(dqf, d, dM, c.r, c.att, c.den, c.qf, d, c.M, n, d, H, c.nd);
    asn_nn_linattn_dbuild(dkv, dks, dM, d, H);
    asn_nn_linattn_stats_backward(dkf, d, dv, d, dkv, dks, c.kf, d, c.qkv + 2 * d, 3 * d, n, d);
    asn_nn_elu1_backward(dqkv, 3 * d, dqf, d, c.qkv, 3 * d, n, d);
    asn_nn_elu1_backward(dqkv + d, 3 * d, dkf, d, c.qkv + d, 3 * d, n, d);
    for (int i = 0; i < n; i++)
        memcpy(dqkv + (size_t)i * 3 * d + 2 * d, dv + (size_t)i * d, (size_t)d * sizeof(float));
    fd_check("linear attention q, k, v", c.qkv, dqkv, (size_t)n * 3 * d, 1, att_f, &c, 1e-3f, 1e-2, 1e-4);
    free(c.qkv), free(c.qf), free(c.kf), free(c.P), free(c.M), free(c.att), free(c.den), free(c.nd), free(c.r);
    free(dqf), free(dM), free(dkv), free(dks), free(dkf), free(dv), free(dqkv);
}

typedef struct mean_ctx {
    int n, C;
    float *x, *r;
} mean_ctx;
static double mean_f(void *c_)
{
    mean_ctx *c = c_;
    double sum[8] = {0};
    asn_nn_colsum(sum, c->x, c->C, c->n, c->C);
    double s = 0;
    for (int j = 0; j < c->C; j++)
        s += sum[j] / c->n * c->r[j];
    return s;
}
static void test_mean(void)
{
    mean_ctx c = {7, 5, randv(35, -1, 1), randv(5, -1, 1)};
    float *dx = zerov(35);
    asn_nn_mean_backward(dx, c.C, c.r, c.n, c.n, c.C);
    fd_check("mean pooling", c.x, dx, 35, 1, mean_f, &c, 1e-2f, 1e-3, 1e-5);
    free(c.x), free(c.r), free(dx);
}

typedef struct trunc_ctx {
    int n;
    float *l, *y, *r, st[2];
} trunc_ctx;
static double trunc_f(void *c_)
{
    trunc_ctx *c = c_;
    asn_nn_trunc_forward(c->y, c->l, c->st[0], c->st[1], c->n);
    return dot_d(c->y, c->r, (size_t)c->n);
}
static void test_trunc(void)
{
    trunc_ctx c = {21, randv(21, -20, 2), zerov(21), randv(21, -1, 1), {1.3f, 6.0f}};
    c.l[0] = -200.0f, c.l[1] = 100.0f; /* far tails: no overflow, no NaN */
    trunc_f(&c);
    double worst = 0;
    for (int i = 0; i < c.n; i++) {
        double z = (double)c.l[i] * c.st[0] + c.st[1];
        double ref = c.l[i] + (z < 0 ? z - log1p(exp(z)) : -log1p(exp(-z)));
        worst = fmax(worst, fabs(ref - c.y[i]) / fmax(1, fabs(ref)));
    }
    T_OK("soft truncation forward: l + logsigmoid(l * scale + threshold)", worst < 1e-6, "max relative error %g", worst);
    float *dl = zerov(21), dst[2];
    double ds = 0, dt = 0;
    asn_nn_trunc_backward(dl, &ds, &dt, c.r, c.l, c.st[0], c.st[1], c.n);
    dst[0] = (float)ds, dst[1] = (float)dt;
    fd_check("soft truncation input", c.l + 2, dl + 2, 19, 1, trunc_f, &c, 1e-3f, 1e-2, 1e-4);
    fd_check("soft truncation scale and threshold", c.st, dst, 2, 1, trunc_f, &c, 1e-3f, 1e-2, 1e-4);
    /* softplus and its gradient, threshold 20 */
    T_NEAR("softplus(1)", asn_nn_softplusf(1.0f), log1p(exp(1.0)), 1e-6);
    T_NEAR("softplus(25) = 25 (threshold 20)", asn_nn_softplusf(25.0f), 25.0, 0);
    T_NEAR("softplus'(0.3)", asn_nn_softplus_gradf(0.3f), 1 / (1 + exp(-0.3)), 1e-6);
    free(c.l), free(c.y), free(c.r), free(dl);
}

typedef struct lsm_ctx {
    int n;
    float *x, *y, *r;
} lsm_ctx;
static double lsm_f(void *c_)
{
    lsm_ctx *c = c_;
    int bad = 0;
    asn_nn_lse s = asn_nn_lse_block(c->x, c->n, &bad, 1);
    asn_nn_logsoftmax_forward(c->y, c->x, asn_nn_lse_value(s), c->n);
    return dot_d(c->y, c->r, (size_t)c->n);
}
static void test_logsoftmax(void)
{
    lsm_ctx c = {23, randv(23, -5, 5), zerov(23), randv(23, -1, 1)};
    lsm_f(&c);
    double m = -INFINITY, s = 0, ent = 0;
    for (int i = 0; i < c.n; i++)
        m = fmax(m, c.x[i]);
    for (int i = 0; i < c.n; i++)
        s += exp(c.x[i] - m);
    double worst = 0;
    for (int i = 0; i < c.n; i++) {
        double lp = c.x[i] - m - log(s);
        ent -= exp(lp) * lp;
        worst = fmax(worst, fabs(lp - c.y[i]));
    }
    T_OK("log_softmax forward", worst < 1e-6, "max error %g", worst);
    /* statistics merged over blocks, with -inf entries, equal one block's */
    float *x2 = malloc(40 * sizeof(float));
    for (int i = 0; i < 40; i++)
        x2[i] = i % 3 == 1 && i / 3 < c.n ? c.x[i / 3] : -INFINITY;
    int bad = 0;
    asn_nn_lse a = {-INFINITY, 0, 0, 0, INFINITY};
    for (int b = 0; b < 40; b += 7)
        a = asn_nn_lse_merge(a, asn_nn_lse_block(x2 + b, b + 7 < 40 ? 7 : 40 - b, &bad, 1));
    int n3 = 0;
    for (int i = 0; i < 40; i++)
        n3 += x2[i] > -INFINITY;
    double lse_ref = m + log(s);
    if (n3 < c.n) { /* only the tokens that made it into x2 */
        double m2 = -INFINITY, s2 = 0;
        ent = 0;
        for (int i = 0; i < 40; i++)
            if (x2[i] > -INFINITY)
                m2 = fmax(m2, x2[i]);
        for (int i = 0; i < 40; i++)
            if (x2[i] > -INFINITY)
                s2 += exp(x2[i] - m2);
        for (int i = 0; i < 40; i++)
            if (x2[i] > -INFINITY)
                ent -= exp(x2[i] - m2 - log(s2)) * (x2[i] - m2 - log(s2));
        lse_ref = m2 + log(s2);
    }
    T_NEAR("log-sum-exp merged over blocks with -inf entries", asn_nn_lse_value(a), lse_ref, 1e-6);
    T_NEAR("entropy merged over blocks", asn_nn_lse_entropy(a), ent, 1e-6);
    T_EQ_INT("-inf entries are not bad input", bad, 0);
    x2[5] = NAN;
    asn_nn_lse_block(x2, 40, &bad, 1);
    T_EQ_INT("NaN is reported", bad, 1);
    bad = 0;
    x2[5] = INFINITY;
    asn_nn_lse_block(x2, 40, &bad, 1);
    T_EQ_INT("+inf is reported", bad, 1);
    free(x2);
    float *dx = zerov(23);
    asn_nn_logsoftmax_backward(dx, c.r, c.y, asn_nn_sum(c.r, c.n), c.n);
    fd_check("log_softmax", c.x, dx, (size_t)c.n, 1, lsm_f, &c, 1e-3f, 1e-2, 1e-4);
    free(c.x), free(c.y), free(c.r), free(dx);
}

/* ------------------------------------------------------------------ loss */

typedef struct loss_ctx {
    int V;
    float gamma, *pred, *target;
} loss_ctx;
static double loss_f(void *c_)
{
    loss_ctx *c = c_;
    asn_sampler_loss l;
    asn_err e;
    if (asn_truncated_logits_loss_row(c->pred, c->target, c->V, c->gamma, 1.0f, &l, NULL, &e) < 0)
        return NAN;
    return l.total;
}
static void test_loss(void)
{
    int V = 30;
    loss_ctx c = {V, 2.5f, randv(V, -4, 4), randv(V, -4, 4)};
    for (int i = 0; i < V; i += 4)
        c.target[i] = -INFINITY;
    c.pred[5] = c.target[5] = -INFINITY; /* removed from both */
    asn_sampler_loss l;
    asn_err e;
    float *d = zerov(V);
    T_OK("TruncatedLogitsLoss on one row", asn_truncated_logits_loss_row(c.pred, c.target, V, c.gamma, 1.0f, &l, d, &e) == 0,
         "%s", e.msg);
    /* direct formula */
    double mp = -INFINITY, sp = 0, mt = -INFINITY, st = 0, kl = 0, pen = 0;
    for (int i = 0; i < V; i++) {
        if (c.pred[i] > -INFINITY)
            mp = fmax(mp, c.pred[i]);
        if (c.target[i] > -INFINITY)
            mt = fmax(mt, c.target[i]);
    }
    for (int i = 0; i < V; i++) {
        if (c.pred[i] > -INFINITY)
            sp += exp(c.pred[i] - mp);
        if (c.target[i] > -INFINITY)
            st += exp(c.target[i] - mt);
    }
    for (int i = 0; i < V; i++) {
        if (c.target[i] > -INFINITY) {
            double lq = c.target[i] - mt - log(st), lpp = c.pred[i] - mp - log(sp);
            kl += exp(lq) * (lq - lpp);
        } else if (c.pred[i] > -INFINITY) {
            pen += exp(c.pred[i] - mp - log(sp));
        }
    }
    T_NEAR("loss KL term", l.kl, kl, 1e-9);
    T_NEAR("loss penalty term", l.penalty, pen, 1e-9);
    T_NEAR("loss total = KL + gamma * penalty", l.total, kl + 2.5 * pen, 1e-9);
    T_OK("loss gradient is 0 at -inf predictions", d[5] == 0.0f, "got %g", d[5]);
    /* finite differences around the -inf entry (5) */
    fd_check("TruncatedLogitsLoss prediction", c.pred, d, 5, 1, loss_f, &c, 1e-3f, 1e-2, 1e-5);
    fd_check("TruncatedLogitsLoss prediction (rest)", c.pred + 6, d + 6, (size_t)V - 6, 1, loss_f, &c, 1e-3f, 1e-2, 1e-5);
    /* batch mean */
    float *P2 = malloc(2 * V * sizeof(float)), *T2 = malloc(2 * V * sizeof(float)), *D2 = zerov(2 * V);
    memcpy(P2, c.pred, V * sizeof(float)), memcpy(P2 + V, c.pred, V * sizeof(float));
    memcpy(T2, c.target, V * sizeof(float)), memcpy(T2 + V, c.target, V * sizeof(float));
    T2[V + 1] = -INFINITY;
    asn_sampler_loss lb, l2;
    asn_truncated_logits_loss(P2, T2, 2, V, c.gamma, &lb, D2, &e);
    asn_truncated_logits_loss_row(P2 + V, T2 + V, V, c.gamma, 1.0f, &l2, NULL, &e);
    T_NEAR("batch loss is the mean of the rows", lb.total, (l.total + l2.total) / 2, 1e-9);
    T_NEAR("batch gradient is the row gradient / B", D2[3], d[3] / 2, 1e-7);
    /* errors */
    T_OK("negative gamma is an error", asn_truncated_logits_loss_row(c.pred, c.target, V, -1, 1, &l, NULL, &e) < 0, "accepted");
    float keep = c.pred[1];
    c.pred[1] = -INFINITY; /* target keeps token 1 */
    T_OK("a kept token the prediction removed is an error",
         asn_truncated_logits_loss_row(c.pred, c.target, V, 1, 1, &l, NULL, &e) < 0, "accepted");
    c.pred[1] = NAN;
    T_OK("NaN prediction is an error", asn_truncated_logits_loss_row(c.pred, c.target, V, 1, 1, &l, NULL, &e) < 0,
         "accepted");
    c.pred[1] = keep;
    free(c.pred), free(c.target), free(d), free(P2), free(T2), free(D2);
}

/* --------------------------------------------------------- architectures */

typedef struct arch_ctx {
    asn_sampler *s;
    asn_sampler_ws *ws;
    asn_pool *pool;
    int V;
    float gamma;
    float *logits, *target, *out;
} arch_ctx;
static double arch_f(void *c_)
{
    arch_ctx *c = c_;
    asn_err e;
    asn_sampler_loss l;
    if (asn_sampler_forward(c->s, c->ws, c->pool, c->logits, c->V, c->out, &e) < 0)
        return NAN;
    if (asn_truncated_logits_loss_row(c->out, c->target, c->V, c->gamma, 1.0f, &l, NULL, &e) < 0)
        return NAN;
    return l.total;
}

/* A row like a language model's, with n_inf -inf tokens; the target: its
 * temperature-0.8 distribution cut at 5% of the top probability. */
static void make_row(float *logits, float *target, int V, int n_inf)
{
    for (int i = 0; i < V; i++)
        logits[i] = frand(-3, 3) - 1.1f * logf((float)((i * 7919) % V + 1));
    for (int k = 0; k < n_inf; k++)
        logits[(k * 37 + 11) % V] = -INFINITY;
    float m = -INFINITY;
    for (int i = 0; i < V; i++)
        m = fmaxf(m, logits[i]);
    for (int i = 0; i < V; i++)
        target[i] = logits[i] >= m + 0.8f * logf(0.05f) ? logits[i] / 0.8f : -INFINITY;
}

static void test_arch_fd(const char *label, const asn_sampler_config *cfg, int V, int n_inf, int threads,
                         size_t step)
{
    asn_err e;
    asn_sampler *s = asn_sampler_new(cfg, 42, &e);
    if (!s) {
        T_OK(label, 0, "%s", e.msg);
        return;
    }
    /* move every parameter away from its initial constant */
    float *p = asn_sampler_params(s);
    for (int t = 0; t < asn_sampler_n_tensors(s); t++) {
        const asn_sampler_tensor *ti = asn_sampler_tensor_at(s, t);
        if (strstr(ti->name, "norm") || (strstr(ti->name, "truncation") && !strstr(ti->name, "head")))
            for (size_t j = 0; j < ti->numel; j++)
                p[ti->offset + j] += frand(-0.3f, 0.3f);
    }
    asn_pool *pool = threads > 1 ? asn_pool_new(threads) : NULL;
    arch_ctx c = {s, asn_sampler_ws_new(s, 0), pool, V, 1.5f, malloc(V * sizeof(float)), malloc(V * sizeof(float)),
                  malloc(V * sizeof(float))};
    make_row(c.logits, c.target, V, n_inf);
    asn_sampler_ws *tws = asn_sampler_ws_new(s, 1);
    float *dout = zerov(V), *dlogits = zerov(V);
    asn_sampler_loss l;
    int ok = asn_sampler_forward(s, tws, pool, c.logits, V, c.out, &e) == 0;
    ok = ok && asn_truncated_logits_loss_row(c.out, c.target, V, c.gamma, 1.0f, &l, dout, &e) == 0;
    asn_sampler_zero_grad(s);
    ok = ok && asn_sampler_backward(s, tws, pool, dout, dlogits, &e) == 0;
    char name[160];
    snprintf(name, sizeof name, "%s: forward, loss and backward run", label);
    T_OK(name, ok, "%s", e.msg);
    if (ok) {
        int nan = 0, infs_ok = 1;
        for (int i = 0; i < V; i++) {
            nan |= isnan(c.out[i]);
            if ((c.logits[i] == -INFINITY) != (c.out[i] == -INFINITY))
                infs_ok = 0;
        }
        snprintf(name, sizeof name, "%s: -inf exactly where the input is -inf, no NaN", label);
        T_OK(name, !nan && infs_ok, "nan %d, -inf positions %s", nan, infs_ok ? "ok" : "wrong");
        /* training and inference forward passes agree bit for bit */
        float *o2 = malloc(V * sizeof(float));
        asn_sampler_forward(s, c.ws, pool, c.logits, V, o2, &e);
        snprintf(name, sizeof name, "%s: inference forward = training forward", label);
        T_OK(name, !memcmp(o2, c.out, V * sizeof(float)), "outputs differ");
        free(o2);
        snprintf(name, sizeof name, "%s: parameters", label);
        fd_check(name, p, asn_sampler_grads(s), asn_sampler_n_params(s), step, arch_f, &c, 1e-2f, 2e-2, 1e-4);
        for (int i = 0; i < V; i++) /* no finite differences through -inf */
            if (c.logits[i] == -INFINITY) {
                T_OK("d loss / d logits is 0 at -inf logits", dlogits[i] == 0.0f, "got %g", dlogits[i]);
                break;
            }
        /* The distribution-aware transform's statistics (max, entropy) are
         * constants for the gradient, as in the reference (torch.no_grad):
         * its d/dlogits is not the derivative finite differences measure
         * (it is checked against PyTorch instead). */
        if (cfg->arch == ASN_SAMPLER_DIST)
            goto done;
        float *fl = malloc(V * sizeof(float)), *fg = malloc(V * sizeof(float));
        int nf = 0;
        for (int i = 0; i < V; i++)
            if (c.logits[i] > -INFINITY)
                fl[nf] = c.logits[i], fg[nf++] = dlogits[i];
        /* finite differences on the finite logits only: perturb in place */
        double worst = 0, gmax = 0;
        for (int i = 0; i < nf; i++)
            gmax = fmax(gmax, fabs(fg[i]));
        for (int i = 0, j = 0; i < V && j < 12; i++) {
            if (c.logits[i] == -INFINITY || i % 3)
                continue;
            j++;
            float x0 = c.logits[i], h = 1e-2f;
            c.logits[i] = x0 + h;
            double lp = arch_f(&c);
            c.logits[i] = x0 - h;
            double lm = arch_f(&c);
            c.logits[i] = x0;
            double fd = (lp - lm) / ((double)(x0 + h) - (x0 - h));
            worst = fmax(worst, fabs(fd - dlogits[i]));
        }
        snprintf(name, sizeof name, "finite differences: %s: logits", label);
        T_OK(name, worst <= 2e-2 * gmax + 1e-4, "worst error %g (max |grad| %g)", worst, gmax);
        free(fl), free(fg);
    }
done:
    asn_sampler_ws_free(c.ws);
    asn_sampler_ws_free(tws);
    asn_pool_free(pool);
    free(c.logits), free(c.target), free(c.out), free(dout), free(dlogits);
    asn_sampler_free(s);
}

static asn_sampler_config cfg_local(int h)
{
    asn_sampler_config c = {ASN_SAMPLER_LOCAL, h, 0, 0, 0, 0, 0, 0};
    return c;
}
static asn_sampler_config cfg_dist(int h, int dyn)
{
    asn_sampler_config c = {ASN_SAMPLER_DIST, h, dyn, 0, 0, 0, 0, 0};
    return c;
}
static asn_sampler_config cfg_net(int d, int ff, int nb, int nh, int scale)
{
    asn_sampler_config c = {ASN_SAMPLER_NETWORK, 0, 0, d, ff, nb, nh, scale};
    return c;
}

static void test_arch_grads(void)
{
    asn_sampler_config c;
    c = cfg_local(8);
    test_arch_fd("LocalProbabilityTransform", &c, 40, 3, 1, 1);
    c = cfg_dist(8, 0);
    test_arch_fd("SimpleDistributionAwareTransform (static)", &c, 40, 3, 1, 1);
    c = cfg_dist(8, 1);
    test_arch_fd("SimpleDistributionAwareTransform (dynamic)", &c, 40, 3, 1, 1);
    c = cfg_dist(ASN_NN_DIST_MAXH + 2, 0); /* forward through the layers, not the fused kernel */
    test_arch_fd("SimpleDistributionAwareTransform (wide)", &c, 40, 3, 1, 13);
    c = cfg_net(8, 12, 2, 2, 0);
    test_arch_fd("SamplingNetwork", &c, 40, 3, 1, 1);
    c = cfg_net(8, 12, 2, 2, 1);
    test_arch_fd("SamplingNetwork (scale)", &c, 40, 3, 1, 1);
    c = cfg_net(8, 12, 0, 2, 1);
    test_arch_fd("SamplingNetwork (no blocks)", &c, 40, 3, 1, 1);
    /* several blocks of tokens, two threads */
    c = cfg_local(8);
    test_arch_fd("LocalProbabilityTransform, V 700, 2 threads", &c, 700, 40, 2, 3);
    c = cfg_dist(8, 1);
    test_arch_fd("SimpleDistributionAwareTransform, V 700, 2 threads", &c, 700, 40, 2, 7);
    c = cfg_net(8, 12, 2, 2, 1);
    test_arch_fd("SamplingNetwork (scale), V 700, 2 threads", &c, 700, 40, 2, 17);
}

/* ------------------------------------------------- against the reference */

static const float *gguf_f32(const asn_gguf *g, const char *name, size_t n)
{
    const asn_gguf_tensor *t = asn_gguf_find_tensor(g, name);
    if (!t || t->type != ASN_T_F32 || t->nbytes != n * sizeof(float))
        return NULL;
    return t->data;
}

/* max |a - b| / max |b| over the finite entries of b; -inf must match. */
static double rel_err(const float *a, const float *b, size_t n, int *mismatch)
{
    double m = 0, err = 0;
    for (size_t i = 0; i < n; i++) {
        if (isinf(b[i]) || isinf(a[i]) || isnan(a[i])) {
            if (!(a[i] == b[i]))
                *mismatch = 1;
            continue;
        }
        m = fmax(m, fabs(b[i]));
        err = fmax(err, fabs((double)a[i] - b[i]));
    }
    return m > 0 ? err / m : err;
}

#define REF_TOL 1e-5 /* the bound: |asn - ref| <= 1e-5 * max |ref|, per tensor */

static void test_reference(const char *model, int V)
{
    char path[256], label[256];
    asn_err e;
    snprintf(path, sizeof path, "fixtures/sampler/%s.gguf", model);
    asn_sampler *s = asn_sampler_load(test_path(path), &e);
    snprintf(label, sizeof label, "reference %s: sampler file (written by the converter) loads", model);
    T_OK(label, s != NULL, "%s", e.msg);
    snprintf(path, sizeof path, "fixtures/sampler/%s_v%d.gguf", model, V);
    asn_gguf *g = asn_gguf_open(test_path(path), &e);
    snprintf(label, sizeof label, "reference %s V=%d: expected values open", model, V);
    T_OK(label, g != NULL, "%s", e.msg);
    if (!s || !g) {
        asn_sampler_free(s);
        asn_gguf_close(g);
        return;
    }
    const float *logits = gguf_f32(g, "logits", V), *target = gguf_f32(g, "target", V);
    const float *ref_out = gguf_f32(g, "out", V), *ref_dl = gguf_f32(g, "dlogits", V);
    double lt = 0, lk = 0, lpn = 0;
    float gamma = 0;
    const asn_gguf_kv *kv;
    if ((kv = asn_gguf_find(g, "loss.total")))
        lt = kv->v.f;
    if ((kv = asn_gguf_find(g, "loss.kl")))
        lk = kv->v.f;
    if ((kv = asn_gguf_find(g, "loss.penalty")))
        lpn = kv->v.f;
    asn_gguf_get_f32(g, "loss.gamma", 1, &gamma, &e);
    float *out = zerov(V), *dout = zerov(V), *dl = zerov(V), *out2 = zerov(V);
    asn_sampler_ws *ws = asn_sampler_ws_new(s, 1);
    asn_sampler_loss l = {0, 0, 0};
    asn_sampler_zero_grad(s);
    int ok = logits && target && ref_out && ref_dl;
    ok = ok && asn_sampler_forward(s, ws, NULL, logits, V, out, &e) == 0;
    ok = ok && asn_truncated_logits_loss_row(out, target, V, gamma, 1.0f, &l, dout, &e) == 0;
    ok = ok && asn_sampler_backward(s, ws, NULL, dout, dl, &e) == 0;
    snprintf(label, sizeof label, "reference %s V=%d: forward, loss, backward", model, V);
    T_OK(label, ok, "%s", e.msg);
    if (ok) {
        int mism = 0;
        double eo = rel_err(out, ref_out, V, &mism);
        snprintf(label, sizeof label, "reference %s V=%d: output (-inf where the reference has -inf)", model, V);
        T_OK(label, eo <= REF_TOL && !mism, "relative error %g, -inf mismatch %d", eo, mism);
        printf("# %s V=%d: output max |asn - ref| / max |ref| = %.2e\n", model, V, eo);
        double el = fmax(fabs(l.total - lt) / fabs(lt), fmax(fabs(l.kl - lk) / fabs(lk), fabs(l.penalty - lpn) / fabs(lpn)));
        snprintf(label, sizeof label, "reference %s V=%d: loss total, KL, penalty", model, V);
        T_OK(label, el <= REF_TOL, "relative error %g (total %.9g vs %.9g)", el, l.total, lt);
        mism = 0;
        double ed = rel_err(dl, ref_dl, V, &mism);
        snprintf(label, sizeof label, "reference %s V=%d: d loss / d logits", model, V);
        T_OK(label, ed <= REF_TOL && !mism, "relative error %g", ed);
        double worst = 0;
        const char *wname = "";
        int missing = 0;
        for (int t = 0; t < asn_sampler_n_tensors(s); t++) {
            const asn_sampler_tensor *ti = asn_sampler_tensor_at(s, t);
            char gname[128];
            snprintf(gname, sizeof gname, "grad.%s", ti->name);
            const float *rg = gguf_f32(g, gname, ti->numel);
            if (!rg) {
                missing++;
                continue;
            }
            int m2 = 0;
            double eg = rel_err(asn_sampler_grads(s) + ti->offset, rg, ti->numel, &m2);
            snprintf(label, sizeof label, "reference %s V=%d: gradient of %s", model, V, ti->name);
            T_OK(label, eg <= REF_TOL && !m2, "relative error %g", eg);
            if (eg > worst)
                worst = eg, wname = ti->name;
        }
        snprintf(label, sizeof label, "reference %s V=%d: every parameter has a reference gradient", model, V);
        T_EQ_INT(label, missing, 0);
        printf("# %s V=%d: gradients max |asn - ref| / max |ref| = %.2e (%s); d/dlogits %.2e; loss %.2e\n", model, V,
               worst, wname, ed, el);
        /* the same with two threads: forward bit for bit */
        asn_pool *pool = asn_pool_new(2);
        openblas_set_num_threads(1);
        asn_sampler_forward(s, ws, pool, logits, V, out2, &e);
        snprintf(label, sizeof label, "reference %s V=%d: two threads give the same output bits", model, V);
        T_OK(label, !memcmp(out, out2, V * sizeof(float)), "outputs differ");
        asn_pool_free(pool);
    }
    asn_sampler_ws_free(ws);
    free(out), free(dout), free(dl), free(out2);
    asn_gguf_close(g);
    asn_sampler_free(s);
}

/* The policy-gradient loss of train-sampler --rl against PyTorch's autograd
 * on the formulas (tests/reference/sampler_ref.py, policy_v50.gguf): the
 * reference project's -A log p, PPO's clipped ratio inside and on both
 * clipped sides, the dual clip, and the k3 KL term. */
static double kv_f(const asn_gguf *g, const char *fmt, int i)
{
    char key[64];
    snprintf(key, sizeof key, fmt, i);
    const asn_gguf_kv *kv = asn_gguf_find(g, key);
    return !kv ? NAN : kv->type == ASN_GGUF_F64 || kv->type == ASN_GGUF_F32 ? kv->v.f : (double)kv->v.u;
}

static void test_policy_reference(void)
{
    enum { V = 50 };
    asn_err e;
    asn_gguf *g = asn_gguf_open(test_path("fixtures/sampler/policy_v50.gguf"), &e);
    T_OK("policy loss reference: expected values open", g != NULL, "%s", e.msg);
    if (!g)
        return;
    const float *pred = gguf_f32(g, "pred", V), *ref = gguf_f32(g, "ref", V);
    int n = (int)kv_f(g, "cases", 0);
    T_OK("policy loss reference: rows and cases", pred && ref && n >= 9, "cases %d", n);
    for (int i = 0; pred && ref && i < n; i++) {
        char label[160], name[32];
        snprintf(name, sizeof name, "dpred.%d", i);
        const float *want = gguf_f32(g, name, V);
        asn_policy_loss_opts o = {kv_f(g, "case.%d.clip", i), kv_f(g, "case.%d.kl_beta", i)};
        double adv = kv_f(g, "case.%d.advantage", i);
        int token = (int)kv_f(g, "case.%d.token", i);
        float d[V];
        for (int k = 0; k < V; k++)
            d[k] = 0.25f; /* the gradient is added to what is there */
        asn_policy_loss l;
        int rc = asn_policy_loss_row(pred, ref, V, token, adv, &o, 1.0f, &l, d, &e);
        for (int k = 0; k < V; k++)
            d[k] -= 0.25f;
        double lt = kv_f(g, "case.%d.total", i), lp = kv_f(g, "case.%d.pg", i), lk = kv_f(g, "case.%d.kl", i);
        snprintf(label, sizeof label, "policy loss case %d (A %g, clip %g, kl %g): total, pg and kl as PyTorch's", i,
                 adv, o.clip, o.kl_beta);
        T_OK(label, rc == 0 && fabs(l.total - lt) <= 1e-6 * fmax(1, fabs(lt)) && fabs(l.pg - lp) <= 1e-6 * fmax(1, fabs(lp)) &&
             fabs(l.kl - lk) <= 1e-6 * fmax(1, fabs(lk)), "total %.9g vs %.9g, pg %.9g vs %.9g, kl %.9g vs %.9g", l.total, lt,
             l.pg, lp, l.kl, lk);
        int mism = 0;
        double ed = want ? rel_err(d, want, V, &mism) : 1;
        snprintf(label, sizeof label, "policy loss case %d: d total / d pred as PyTorch's autograd", i);
        T_OK(label, ed <= REF_TOL && !mism, "relative error %g", ed);
    }
    asn_policy_loss l;
    asn_policy_loss_opts o = {0.2, 0.1};
    T_OK("policy loss: a token outside the vocabulary is an error",
         pred && asn_policy_loss_row(pred, ref, V, V, 1.0, &o, 1.0f, &l, NULL, &e) < 0, "accepted");
    o.clip = 1.0;
    T_OK("policy loss: clip 1 is an error", pred && asn_policy_loss_row(pred, ref, V, 0, 1.0, &o, 1.0f, &l, NULL, &e) < 0,
         "accepted");
    o.clip = 0;
    T_OK("policy loss: a NaN advantage is an error",
         pred && asn_policy_loss_row(pred, ref, V, 0, NAN, &o, 1.0f, &l, NULL, &e) < 0, "accepted");
    asn_gguf_close(g);
}

/* --------------------------------------------------------- -inf and more */

static void test_inf_rows(void)
{
    asn_err e;
    asn_sampler_config cfgs[3] = {cfg_local(16), cfg_dist(16, 1), cfg_net(16, 24, 2, 4, 1)};
    for (int k = 0; k < 3; k++) {
        asn_sampler *s = asn_sampler_new(&cfgs[k], 7, &e);
        asn_sampler_ws *ws = asn_sampler_ws_new(s, 0);
        const char *arch = asn_sampler_arch_name(cfgs[k].arch);
        char label[200];
        int V = 300;
        float *x = malloc(V * sizeof(float)), *o = malloc(V * sizeof(float)), *t = malloc(V * sizeof(float));
        make_row(x, t, V, 0);
        /* the finite tokens alone vs the same tokens among -inf ones */
        int nfin = 0;
        float *xc = malloc(V * sizeof(float)), *oc = malloc(V * sizeof(float));
        for (int i = 0; i < V; i++) {
            if (i % 4 == 1)
                x[i] = -INFINITY;
            else
                xc[nfin++] = x[i];
        }
        asn_sampler_forward(s, ws, NULL, x, V, o, &e);
        asn_sampler_forward(s, ws, NULL, xc, nfin, oc, &e);
        double worst = 0;
        int bad = 0;
        for (int i = 0, j = 0; i < V; i++) {
            if (x[i] == -INFINITY) {
                bad |= o[i] != -INFINITY;
                continue;
            }
            worst = fmax(worst, fabs(o[i] - oc[j++]));
        }
        snprintf(label, sizeof label, "%s: a row with -inf tokens = its finite tokens alone", arch);
        T_OK(label, worst < 1e-4 && !bad, "max difference %g, -inf kept %d", worst, !bad);
        /* in place */
        memcpy(t, x, V * sizeof(float));
        asn_sampler_forward(s, ws, NULL, t, V, t, &e);
        snprintf(label, sizeof label, "%s: in place (out = logits)", arch);
        T_OK(label, !memcmp(t, o, V * sizeof(float)), "differs");
        /* a permutation of the tokens permutes the output */
        for (int i = 0; i < nfin; i++)
            t[i] = xc[(i * 7 + 3) % nfin];
        asn_sampler_forward(s, ws, NULL, t, nfin, x, &e);
        worst = 0;
        for (int i = 0; i < nfin; i++)
            worst = fmax(worst, fabs(x[i] - oc[(i * 7 + 3) % nfin]));
        snprintf(label, sizeof label, "%s: permutation equivariant", arch);
        T_OK(label, worst < 1e-4, "max difference %g", worst);
        /* one finite token; none */
        for (int i = 0; i < V; i++)
            x[i] = i == 17 ? 3.0f : -INFINITY;
        int rc = asn_sampler_forward(s, ws, NULL, x, V, o, &e);
        bad = rc != 0 || !isfinite(o[17]);
        for (int i = 0; i < V; i++)
            bad |= i != 17 && o[i] != -INFINITY;
        snprintf(label, sizeof label, "%s: a single finite token gives a finite output, no NaN", arch);
        T_OK(label, !bad, "rc %d, out[17] %g", rc, o[17]);
        x[17] = -INFINITY;
        rc = asn_sampler_forward(s, ws, NULL, x, V, o, &e);
        bad = rc != 0;
        for (int i = 0; i < V; i++)
            bad |= o[i] != -INFINITY;
        snprintf(label, sizeof label, "%s: an all -inf row stays all -inf", arch);
        T_OK(label, !bad, "rc %d", rc);
        x[17] = NAN;
        memset(o, 0, V * sizeof(float));
        snprintf(label, sizeof label, "%s: NaN logit is an error", arch);
        T_OK(label, asn_sampler_forward(s, ws, NULL, x, V, o, &e) < 0 && o[0] == 0.0f, "accepted");
        x[17] = INFINITY;
        snprintf(label, sizeof label, "%s: +inf logit is an error", arch);
        T_OK(label, asn_sampler_forward(s, ws, NULL, x, V, o, &e) < 0, "accepted");
        snprintf(label, sizeof label, "%s: backward without a training workspace is an error", arch);
        T_OK(label, asn_sampler_backward(s, ws, NULL, o, NULL, &e) < 0, "accepted");
        free(x), free(o), free(t), free(xc), free(oc);
        asn_sampler_ws_free(ws);
        asn_sampler_free(s);
    }
}

/* --------------------------------------------------- files and configs */

static void test_files(void)
{
    asn_err e;
    asn_sampler_config cfgs[4] = {cfg_local(32), cfg_dist(24, 0), cfg_dist(24, 1), cfg_net(32, 64, 4, 4, 1)};
    for (int k = 0; k < 4; k++) {
        asn_sampler *s = asn_sampler_new(&cfgs[k], 11 + k, &e);
        const char *p = tmp_path("s.gguf");
        char label[160];
        snprintf(label, sizeof label, "%s%s: save", asn_sampler_arch_name(cfgs[k].arch), k == 2 ? " (dynamic)" : "");
        T_OK(label, asn_sampler_save(s, p, &e) == 0, "%s", e.msg);
        asn_sampler *r = asn_sampler_load(p, &e);
        snprintf(label, sizeof label, "%s%s: load what was saved", asn_sampler_arch_name(cfgs[k].arch),
                 k == 2 ? " (dynamic)" : "");
        T_OK(label, r && !memcmp(asn_sampler_get_config(r), asn_sampler_get_config(s), sizeof(asn_sampler_config)) &&
                        asn_sampler_n_params(r) == asn_sampler_n_params(s) &&
                        !memcmp(asn_sampler_params(r), asn_sampler_params(s), asn_sampler_n_params(s) * sizeof(float)),
             "%s", r ? "config or parameters differ" : e.msg);
        asn_sampler_free(r);
        asn_sampler_free(s);
    }
    /* GGUF layout: keys and tensor names, shapes in GGUF order */
    asn_sampler_config c = cfg_net(32, 64, 4, 4, 0);
    asn_sampler *s = asn_sampler_new(&c, 1, &e);
    asn_sampler_save(s, tmp_path("n.gguf"), &e);
    asn_gguf *g = asn_gguf_open(tmp_path("n.gguf"), &e);
    char *str = NULL;
    uint32_t u = 0;
    int b = -1;
    asn_gguf_get_str(g, "general.architecture", 1, &str, &e);
    T_EQ_STR("file: general.architecture", str, "asn-sampler");
    free(str);
    str = NULL;
    asn_gguf_get_str(g, "asn-sampler.type", 1, &str, &e);
    T_EQ_STR("file: asn-sampler.type", str, "SamplingNetwork");
    free(str);
    asn_gguf_get_u32(g, "asn-sampler.d_ff", 1, &u, &e);
    T_EQ_INT("file: asn-sampler.d_ff", u, 64);
    asn_gguf_get_bool(g, "asn-sampler.scale", 1, &b, &e);
    T_EQ_INT("file: asn-sampler.scale", b, 0);
    const asn_gguf_tensor *t = asn_gguf_find_tensor(g, "blocks.0.attention.o_proj.weight");
    T_OK("file: blocks.0.attention.o_proj.weight is 32 x 32 F32", t && t->n_dims == 2 && t->ne[0] == 32 && t->ne[1] == 32 && t->type == ASN_T_F32, "missing or wrong");
    t = asn_gguf_find_tensor(g, "blocks.3.qkv_proj.weight");
    T_OK("file: blocks.3.qkv_proj.weight has ne [32, 96]", t && t->ne[0] == 32 && t->ne[1] == 96, "missing or wrong");
    T_OK("file: no scaling_head without scale", !asn_gguf_find_tensor(g, "scaling_head.down_proj.bias"), "present");
    asn_gguf_close(g);
    /* bad files */
    asn_gguf_writer *w = asn_gguf_writer_new();
    asn_gguf_set_str(w, "general.architecture", "llama");
    asn_gguf_write(w, tmp_path("bad.gguf"), &e);
    asn_gguf_writer_free(w);
    asn_sampler *r = asn_sampler_load(tmp_path("bad.gguf"), &e);
    T_OK("a model file is not a sampler file", !r && strstr(e.msg, "asn-sampler"), "%s", r ? "loaded" : e.msg);
    asn_sampler_free(r);
    /* a tensor missing, another unexpected, a wrong shape */
    for (int k = 0; k < 3; k++) {
        w = asn_gguf_writer_new();
        asn_gguf_set_str(w, "general.architecture", "asn-sampler");
        asn_gguf_set_str(w, "asn-sampler.type", "LocalProbabilityTransform");
        asn_gguf_set_u32(w, "asn-sampler.hidden_dims", 6);
        asn_sampler_config lc = cfg_local(6);
        asn_sampler *ls = asn_sampler_new(&lc, 3, &e);
        for (int i = 0; i < asn_sampler_n_tensors(ls); i++) {
            const asn_sampler_tensor *ti = asn_sampler_tensor_at(ls, i);
            if (k == 0 && i == 3)
                continue;
            int64_t ne[2] = {ti->n_dims == 2 ? ti->shape[1] : ti->shape[0], ti->shape[0]};
            if (k == 2 && i == 4)
                ne[0] += 1;
            float buf[64] = {0};
            asn_gguf_add_tensor(w, ti->name, ASN_T_F32, ti->n_dims == 2 ? 2 : 1, ne, buf);
        }
        if (k == 1) {
            int64_t ne[1] = {1};
            float z = 0;
            asn_gguf_add_tensor(w, "_orig_mod.truncation_scale", ASN_T_F32, 1, ne, &z);
        }
        asn_gguf_write(w, tmp_path("bad.gguf"), &e);
        asn_gguf_writer_free(w);
        asn_sampler_free(ls);
        r = asn_sampler_load(tmp_path("bad.gguf"), &e);
        const char *what[] = {"missing", "unexpected", "shape"};
        char label[100];
        snprintf(label, sizeof label, "sampler file with a tensor %s is refused", what[k]);
        T_OK(label, !r && strstr(e.msg, what[k]), "%s", r ? "loaded" : e.msg);
        asn_sampler_free(r);
    }
    /* a PyTorch checkpoint (torch.save's zip archive) */
    FILE *f = fopen(tmp_path("sampler_model.bin"), "wb");
    fwrite("PK\x03\x04" "archive", 1, 11, f);
    fclose(f);
    r = asn_sampler_load(tmp_path("sampler_model.bin"), &e);
    T_OK("a PyTorch checkpoint gets an error naming the converter", !r && strstr(e.msg, "convert-torch-sampler"), "%s",
         r ? "loaded" : e.msg);
    asn_sampler_free(r);
    unlink(tmp_path("sampler_model.bin"));
    unlink(tmp_path("bad.gguf"));
    unlink(tmp_path("s.gguf"));
    unlink(tmp_path("n.gguf"));
    asn_sampler_free(s);
}

static void test_init(void)
{
    asn_err e;
    asn_sampler_config c = cfg_net(32, 64, 4, 4, 1);
    asn_sampler *s = asn_sampler_new(&c, 5, &e);
    /* the shipped config's parameter count, from the reference's shapes */
    size_t d = 32, E = 21, F = 42, T = 21, R = 10;
    size_t enc = 2 * (E * 1 + E) + d * E + d;
    size_t blk = (3 * d * d + 3 * d) + (d * d + d) + (2 * (F * d + F) + d * F + d) + 4 * d;
    size_t heads = (2 * (T * 2 * d + T) + T + 1) + (2 * (R * d + R) + 2 * R + 2) + (2 * (R * d + R) + R + 1);
    T_EQ_INT("SamplingNetwork (d_model 32, scale) parameter count", asn_sampler_n_params(s), enc + 4 * blk + heads);
    int bounds_ok = 1, ln_ok = 1;
    const float *p = asn_sampler_params(s);
    for (int t = 0; t < asn_sampler_n_tensors(s); t++) {
        const asn_sampler_tensor *ti = asn_sampler_tensor_at(s, t);
        if (strstr(ti->name, "norm")) {
            float want = strstr(ti->name, "weight") ? 1.0f : 0.0f;
            for (size_t j = 0; j < ti->numel; j++)
                ln_ok &= p[ti->offset + j] == want;
            continue;
        }
        /* Linear: U(+-1/sqrt(fan_in)) for weight and bias; fan_in from the weight */
        char wname[128];
        snprintf(wname, sizeof wname, "%.*s.weight", (int)(strrchr(ti->name, '.') - ti->name), ti->name);
        const asn_sampler_tensor *wt = asn_sampler_find_tensor(s, wname);
        double bound = 1.0 / sqrt((double)wt->shape[1]);
        double mx = 0;
        for (size_t j = 0; j < ti->numel; j++)
            mx = fmax(mx, fabs(p[ti->offset + j]));
        bounds_ok &= mx <= bound && (ti->numel < 20 || mx > 0.8 * bound);
    }
    T_OK("Linear parameters uniform within 1/sqrt(fan_in)", bounds_ok, "out of bounds");
    T_OK("LayerNorm weight 1, bias 0", ln_ok, "wrong");
    asn_sampler_free(s);
    c = cfg_local(32);
    s = asn_sampler_new(&c, 5, &e);
    T_NEAR("truncation_scale starts at 1.0", asn_sampler_params(s)[asn_sampler_find_tensor(s, "truncation_scale")->offset], 1.0, 0);
    T_NEAR("truncation_threshold starts at 10.0",
           asn_sampler_params(s)[asn_sampler_find_tensor(s, "truncation_threshold")->offset], 10.0, 0);
    T_EQ_STR("state_dict order: own parameters first", asn_sampler_tensor_at(s, 0)->name, "truncation_scale");
    asn_sampler_free(s);
    c = cfg_dist(32, 0);
    s = asn_sampler_new(&c, 5, &e);
    const asn_sampler_tensor *tp = asn_sampler_find_tensor(s, "truncation_params");
    T_OK("truncation_params start at [0.5413, 10.0]",
         tp && asn_sampler_params(s)[tp->offset] == 0.5413f && asn_sampler_params(s)[tp->offset + 1] == 10.0f, "wrong");
    asn_sampler *s2 = asn_sampler_new(&c, 5, &e), *s3 = asn_sampler_new(&c, 6, &e);
    T_OK("initialization is a function of the seed",
         !memcmp(asn_sampler_params(s), asn_sampler_params(s2), asn_sampler_n_params(s) * sizeof(float)) &&
             memcmp(asn_sampler_params(s), asn_sampler_params(s3), asn_sampler_n_params(s) * sizeof(float)),
         "not so");
    asn_sampler_free(s), asn_sampler_free(s2), asn_sampler_free(s3);
}

static void test_configs(void)
{
    asn_err e;
    asn_sampler_config c;
    int rc = asn_sampler_config_load(ASN_SAMPLER_NETWORK, test_path("data/reference-configs/model_config.yaml"), &c, &e);
    T_OK("reference model_config.yaml loads", rc == 0 && c.d_model == 32 && c.d_ff == 64 && c.n_blocks == 4 &&
                                                 c.n_heads == 4 && !c.scale, "%s", rc ? e.msg : "wrong values");
    rc = asn_sampler_config_load(ASN_SAMPLER_NETWORK, test_path("data/reference-configs/model_config_scale.yaml"), &c, &e);
    T_OK("reference model_config_scale.yaml loads", rc == 0 && c.scale == 1, "%s", rc ? e.msg : "scale not set");
    const struct {
        asn_sampler_arch arch;
        const char *yaml;
        int ok;
        const char *what;
    } cases[] = {
        {ASN_SAMPLER_LOCAL, "hidden_dims: 32\n", 1, "LocalProbabilityTransform config"},
        {ASN_SAMPLER_DIST, "hidden_dims: 32\nuse_dynamic_truncation: True\n", 1, "SimpleDistributionAwareTransform config"},
        {ASN_SAMPLER_DIST, "hidden_dims: 32\nuse_dynamic_truncation: false\n", 1, "static truncation config"},
        {ASN_SAMPLER_NETWORK, "d_model: 32\nd_ff: 64\nn_blocks: 4\nn_heads: 4\n", 1, "scale defaults to false"},
        {ASN_SAMPLER_DIST, "hidden_dims: 32\n", 0, "missing use_dynamic_truncation is an error"},
        {ASN_SAMPLER_LOCAL, "hidden_dims: 32\nd_model: 4\n", 0, "unknown key is an error"},
        {ASN_SAMPLER_NETWORK, "d_model: 30\nd_ff: 64\nn_blocks: 4\nn_heads: 4\n", 0, "d_model not divisible by n_heads"},
        {ASN_SAMPLER_LOCAL, "hidden_dims: 32.5\n", 0, "non-integer size is an error"},
        {ASN_SAMPLER_LOCAL, "hidden_dims: 1\n", 0, "zero-width SwiGLU is an error"},
        {ASN_SAMPLER_DIST, "hidden_dims: 8\nuse_dynamic_truncation: maybe\n", 0, "non-boolean flag is an error"},
        {ASN_SAMPLER_LOCAL, "- 1\n", 0, "a list is not a config"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        asn_yaml *y = asn_yaml_parse("cfg.yaml", cases[i].yaml, strlen(cases[i].yaml), &e);
        rc = y ? asn_sampler_config_from_json(cases[i].arch, asn_yaml_root(y), &c, &e) : -1;
        T_OK(cases[i].what, (rc == 0) == cases[i].ok, "%s", rc ? e.msg : "accepted");
        asn_yaml_free(y);
    }
    asn_sampler_arch a;
    T_OK("class names parse", asn_sampler_arch_parse("SimpleDistributionAwareTransform", &a, &e) == 0 && a == ASN_SAMPLER_DIST,
         "%s", e.msg);
    T_OK("unknown class name is an error", asn_sampler_arch_parse("Sampler", &a, &e) < 0, "accepted");
}

int main(void)
{
    const char *t = getenv("TMPDIR");
    snprintf(tmp_dir, sizeof tmp_dir, "%s/asn-sampler-XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(tmp_dir)) {
        printf("not ok - temporary directory: cannot create %s\n", tmp_dir);
        return 1;
    }
    openblas_set_num_threads(1);
    test_linear(7);
    test_linear(1);
    test_layernorm();
    test_mlp();
    test_mlp1(32);
    test_mlp1(60);
    test_pertoken();
    test_maps();
    test_attention();
    test_mean();
    test_trunc();
    test_logsoftmax();
    test_loss();
    test_arch_grads();
    const char *models[] = {"local", "dist_static", "dist_dynamic", "net", "net_scale"};
    for (int m = 0; m < 5; m++) {
        test_reference(models[m], 50);
        test_reference(models[m], 5000);
    }
    test_policy_reference();
    test_inf_rows();
    test_files();
    test_init();
    test_configs();
    rmdir(tmp_dir);
    T_DONE();
}
