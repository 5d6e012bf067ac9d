/* test_sampler_equi.c — EquivariantLocalTransform (lib/learn/sampler_equi.c)
 * against an independent float64 implementation written here from its
 * definition (the mass above a token by comparing it with every other
 * token, O(V^2)):
 *   - outputs, V = 40 and 300 with -inf tokens, several steps;
 *   - the parameters' and the logits' gradients against central finite
 *     differences of the float64 forward pass (h = 1e-6);
 *   - a 20000-token Zipf-like row, where only the tokens near the top are
 *     sorted: outputs against the float64 pass (the mass below the cut is
 *     at most 1e-4);
 *   - permutation equivariance (bit for bit), -inf tokens (= the finite
 *     tokens alone), that min_p is representable (hand-set weights give
 *     min_p's kept set), the file round trip and configs. */
#include "asn/sampler_net.h"
#include "t.h"

#include <cblas.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static double urand(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (double)(rng >> 11) * 0x1.0p-53;
}

/* The parameters in double, by name. */
typedef struct ref_net {
    int NI;
    double tau, gw[7], gb, wg[64][6], bg[64], wu[64][6], bu[64], wd[64], bd;
} ref_net;

static const float *tensor(asn_sampler *s, const char *name)
{
    const asn_sampler_tensor *t = asn_sampler_find_tensor(s, name);
    return t ? asn_sampler_params(s) + t->offset : NULL;
}

static void ref_from(ref_net *r, asn_sampler *s)
{
    r->NI = (int)asn_sampler_find_tensor(s, "mlp.gate_proj.bias")->numel;
    r->tau = tensor(s, "temperature_scale")[0];
    for (int k = 0; k < 7; k++)
        r->gw[k] = tensor(s, "gate.weight")[k];
    r->gb = tensor(s, "gate.bias")[0];
    const float *wg = tensor(s, "mlp.gate_proj.weight"), *wu = tensor(s, "mlp.up_proj.weight");
    for (int j = 0; j < r->NI; j++) {
        for (int k = 0; k < 6; k++)
            r->wg[j][k] = wg[j * 6 + k], r->wu[j][k] = wu[j * 6 + k];
        r->bg[j] = tensor(s, "mlp.gate_proj.bias")[j];
        r->bu[j] = tensor(s, "mlp.up_proj.bias")[j];
        r->wd[j] = tensor(s, "mlp.down_proj.weight")[j];
    }
    r->bd = tensor(s, "mlp.down_proj.bias")[0];
}

/* The definition, in double: out[i] for the finite x[i] (-inf elsewhere). */
static void ref_forward(const ref_net *r, const double *x, int V, int step, double *out)
{
    double m = -INFINITY, z = 0, H = 0;
    for (int i = 0; i < V; i++)
        if (x[i] > m)
            m = x[i];
    for (int i = 0; i < V; i++)
        if (isfinite(x[i]))
            z += exp(x[i] - m);
    double lse = m + log(z);
    for (int i = 0; i < V; i++)
        if (isfinite(x[i]))
            H -= exp(x[i] - lse) * (x[i] - lse);
    double s = step / (step + 32.0);
    for (int i = 0; i < V; i++) {
        if (!isfinite(x[i])) {
            out[i] = -INFINITY;
            continue;
        }
        double lp = x[i] - lse, c = 0;
        for (int j = 0; j < V; j++)
            if (isfinite(x[j]) && x[j] > x[i])
                c += exp(x[j] - lse);
        double f[6] = {lp, x[i] - m, c, fabs(lp + H), H, s}, mo = r->bd;
        for (int j = 0; j < r->NI; j++) {
            double g = r->bg[j], u = r->bu[j];
            for (int k = 0; k < 6; k++)
                g += r->wg[j][k] * f[k], u += r->wu[j][k] * f[k];
            mo += r->wd[j] * g / (1 + exp(-g)) * u;
        }
        double l = r->tau * lp + mo;
        double zz = r->gw[0] * l + r->gb;
        for (int k = 0; k < 6; k++)
            zz += r->gw[1 + k] * f[k];
        out[i] = l + (zz < 0 ? zz - log1p(exp(zz)) : -log1p(exp(-zz)));
    }
}

static double ref_loss(const ref_net *r, const double *x, const double *w, int V, int step, double *buf)
{
    ref_forward(r, x, V, step, buf);
    double L = 0;
    for (int i = 0; i < V; i++)
        if (isfinite(x[i]))
            L += w[i] * buf[i];
    return L;
}

static asn_sampler *make_net(int hidden, uint64_t seed)
{
    asn_sampler_config c = {ASN_SAMPLER_EQUI, hidden, 0, 0, 0, 0, 0, 0};
    asn_err e;
    asn_sampler *s = asn_sampler_new(&c, seed, &e);
    if (!s)
        return NULL;
    float *p = asn_sampler_params(s);
    for (size_t i = 0; i < asn_sampler_n_params(s); i++) /* away from the constant initializations */
        p[i] += (float)(0.4 * urand() - 0.2);
    return s;
}

/* Logits at least 0.02 apart (no two cross under finite differences),
 * shuffled, with n_inf of them -inf. */
static void make_row(float *x, int V, int n_inf, double spread)
{
    for (int i = 0; i < V; i++)
        x[i] = (float)(-spread * i / V - 0.02 * i);
    for (int i = V - 1; i > 0; i--) {
        int j = (int)(urand() * (i + 1));
        float t = x[i];
        x[i] = x[j], x[j] = t;
    }
    for (int k = 0; k < n_inf; k++)
        x[(int)(urand() * V)] = -INFINITY;
}

static void test_against_ref(int V, int n_inf, int step)
{
    char name[200];
    asn_err e;
    asn_sampler *s = make_net(8, 7 + (uint64_t)V);
    ref_net r;
    ref_from(&r, s);
    float *x = malloc(V * sizeof(float)), *out = malloc(V * sizeof(float));
    float *dout = malloc(V * sizeof(float)), *dx = malloc(V * sizeof(float));
    double *xd = calloc((size_t)V, sizeof(double)), *w = malloc(V * sizeof(double)), *ro = malloc(V * sizeof(double));
    make_row(x, V, n_inf, 6.0);
    for (int i = 0; i < V; i++)
        xd[i] = x[i], w[i] = urand() - 0.5, dout[i] = (float)w[i];
    asn_sampler_ws *ws = asn_sampler_ws_new(s, 1);
    asn_sampler_ws_set_step(ws, step);
    int ok = asn_sampler_forward(s, ws, NULL, x, V, out, &e) == 0;
    ref_forward(&r, xd, V, step, ro);
    double worst = 0, big = 0;
    int inf_ok = 1;
    for (int i = 0; i < V; i++) {
        if (!isfinite(ro[i])) {
            inf_ok &= out[i] == -INFINITY;
            continue;
        }
        worst = fmax(worst, fabs(out[i] - ro[i]));
        big = fmax(big, fabs(ro[i]));
    }
    snprintf(name, sizeof name, "V %d, %d -inf, step %d: outputs = float64 definition", V, n_inf, step);
    T_OK(name, ok && inf_ok && worst <= 1e-5 * fmax(1, big), "%s worst %g (max %g), -inf %s", ok ? "" : e.msg, worst,
         big, inf_ok ? "ok" : "wrong");

    asn_sampler_zero_grad(s);
    ok = asn_sampler_backward(s, ws, NULL, dout, dx, &e) == 0;
    /* parameters: finite differences of the float64 forward pass */
    const float *g = asn_sampler_grads(s);
    float *p = asn_sampler_params(s);
    double pw = 0, pg = 0;
    for (size_t i = 0; i < asn_sampler_n_params(s); i++) {
        float p0 = p[i];
        double h = 1e-3; /* the parameters are float: perturb by a representable step */
        p[i] = (float)(p0 + h);
        ref_from(&r, s);
        double lp = ref_loss(&r, xd, w, V, step, ro);
        p[i] = (float)(p0 - h);
        ref_from(&r, s);
        double lm = ref_loss(&r, xd, w, V, step, ro);
        p[i] = p0;
        double fd = (lp - lm) / ((double)(float)(p0 + h) - (double)(float)(p0 - h));
        pw = fmax(pw, fabs(fd - g[i]));
        pg = fmax(pg, fabs(fd));
    }
    ref_from(&r, s);
    snprintf(name, sizeof name, "V %d, %d -inf, step %d: parameter gradients = finite differences (float64)", V,
             n_inf, step);
    T_OK(name, ok && pw <= 2e-3 * pg + 1e-5, "%s worst %g (max %g)", ok ? "" : e.msg, pw, pg);
    /* logits */
    double xw = 0, xg = 0;
    int zero_ok = 1;
    for (int i = 0; i < V; i++) {
        if (!isfinite(xd[i])) {
            zero_ok &= dx[i] == 0.0f;
            continue;
        }
        double x0 = xd[i], h = 1e-6;
        xd[i] = x0 + h;
        double lp = ref_loss(&r, xd, w, V, step, ro);
        xd[i] = x0 - h;
        double lm = ref_loss(&r, xd, w, V, step, ro);
        xd[i] = x0;
        double fd = (lp - lm) / (2 * h);
        xw = fmax(xw, fabs(fd - dx[i]));
        xg = fmax(xg, fabs(fd));
    }
    snprintf(name, sizeof name, "V %d, %d -inf, step %d: logit gradients = finite differences (float64)", V, n_inf,
             step);
    T_OK(name, ok && zero_ok && xw <= 2e-3 * xg + 1e-5, "worst %g (max %g), 0 at -inf %s", xw, xg,
         zero_ok ? "ok" : "no");
    asn_sampler_ws_free(ws);
    asn_sampler_free(s);
    free(x), free(out), free(dout), free(dx), free(xd), free(w), free(ro);
}

static int cmp_desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x > y ? -1 : x < y;
}

/* A 20000-token row: only the tokens near the top are sorted. The float64
 * pass here sorts them all (O(V log V) version of the definition). */
static void test_large(void)
{
    enum { V = 20000 };
    asn_err e;
    asn_sampler *s = make_net(8, 99);
    ref_net r;
    ref_from(&r, s);
    float *x = malloc(V * sizeof(float)), *out = malloc(V * sizeof(float));
    double *xs = malloc(V * sizeof(double));
    for (int i = 0; i < V; i++) /* Zipf-like: log-probabilities ~ -1.1 log(rank) */
        x[i] = (float)(-1.1 * log(1.0 + ((i * 7919) % V)) + 0.3 * urand());
    asn_sampler_ws *ws = asn_sampler_ws_new(s, 0);
    int ok = asn_sampler_forward(s, ws, NULL, x, V, out, &e) == 0;
    double m = -INFINITY, z = 0, H = 0;
    for (int i = 0; i < V; i++)
        m = fmax(m, x[i]), xs[i] = x[i];
    for (int i = 0; i < V; i++)
        z += exp(x[i] - m);
    double lse = m + log(z);
    for (int i = 0; i < V; i++)
        H -= exp(x[i] - lse) * (x[i] - lse);
    qsort(xs, V, sizeof *xs, cmp_desc);
    double worst = 0;
    for (int i = 0; i < V; i += 37) {
        /* c: binary search for the first position with xs <= x[i] */
        int lo = 0, hi = V;
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            if (xs[mid] > x[i])
                lo = mid + 1;
            else
                hi = mid;
        }
        double c = 0;
        for (int j = 0; j < lo; j++)
            c += exp(xs[j] - lse);
        double lp = x[i] - lse, f[6] = {lp, x[i] - m, c, fabs(lp + H), H, 0}, mo = r.bd;
        for (int j = 0; j < r.NI; j++) {
            double g = r.bg[j], u = r.bu[j];
            for (int k = 0; k < 6; k++)
                g += r.wg[j][k] * f[k], u += r.wu[j][k] * f[k];
            mo += r.wd[j] * g / (1 + exp(-g)) * u;
        }
        double l = r.tau * lp + mo, zz = r.gw[0] * l + r.gb;
        for (int k = 0; k < 6; k++)
            zz += r.gw[1 + k] * f[k];
        double ref = l + (zz < 0 ? zz - log1p(exp(zz)) : -log1p(exp(-zz)));
        worst = fmax(worst, fabs(out[i] - ref));
    }
    T_OK("V 20000 (tokens near the top sorted): outputs = float64 definition within 1e-3", ok && worst <= 1e-3,
         "worst %g", worst);
    /* permutation equivariance, bit for bit */
    int *perm = malloc(V * sizeof(int));
    float *xp = malloc(V * sizeof(float)), *op = malloc(V * sizeof(float));
    for (int i = 0; i < V; i++)
        perm[i] = i;
    for (int i = V - 1; i > 0; i--) {
        int j = (int)(urand() * (i + 1)), t = perm[i];
        perm[i] = perm[j], perm[j] = t;
    }
    for (int i = 0; i < V; i += 100) /* some ties */
        x[i] = x[(i + 50) % V];
    asn_sampler_forward(s, ws, NULL, x, V, out, &e);
    for (int i = 0; i < V; i++)
        xp[i] = x[perm[i]];
    asn_sampler_forward(s, ws, NULL, xp, V, op, &e);
    int same = 1;
    for (int i = 0; i < V; i++)
        same &= op[i] == out[perm[i]];
    T_OK("permutation equivariance, with ties, bit for bit", same, "outputs differ");
    /* -inf tokens: the same as the finite tokens alone */
    for (int i = 0; i < 300; i++)
        xp[i] = i % 3 ? x[i] : -INFINITY;
    asn_sampler_forward(s, ws, NULL, xp, 300, op, &e);
    int nf = 0;
    for (int i = 0; i < 300; i++)
        if (i % 3)
            xs[nf++] = x[i];
    float *xf = malloc(300 * sizeof(float)), *of = malloc(300 * sizeof(float));
    for (int i = 0; i < nf; i++)
        xf[i] = (float)xs[i];
    asn_sampler_forward(s, ws, NULL, xf, nf, of, &e);
    same = 1;
    for (int i = 0, k = 0; i < 300; i++)
        same &= i % 3 ? op[i] == of[k++] : op[i] == -INFINITY;
    T_OK("a row with -inf tokens = its finite tokens alone", same, "outputs differ");
    asn_sampler_ws_free(ws);
    asn_sampler_free(s);
    free(x), free(out), free(xs), free(perm), free(xp), free(op), free(xf), free(of);
}

/* min_p is representable: with the gate on r alone (weight 50, threshold
 * log(0.1)) and no MLP, the kept set is min_p 0.1's and the kept tokens
 * keep their relative probabilities. */
static void test_min_p(void)
{
    asn_err e;
    asn_sampler_config c = {ASN_SAMPLER_EQUI, 2, 0, 0, 0, 0, 0, 0};
    asn_sampler *s = asn_sampler_new(&c, 1, &e);
    size_t np = asn_sampler_n_params(s);
    memset(asn_sampler_params(s), 0, np * sizeof(float));
    float *p = asn_sampler_params(s);
    p[asn_sampler_find_tensor(s, "temperature_scale")->offset] = 1;
    float *gw = p + asn_sampler_find_tensor(s, "gate.weight")->offset;
    gw[2] = 50.0f;
    p[asn_sampler_find_tensor(s, "gate.bias")->offset] = -50.0f * logf(0.1f);
    enum { V = 200 };
    float x[V], out[V];
    make_row(x, V, 0, 8.0);
    asn_sampler_ws *ws = asn_sampler_ws_new(s, 0);
    asn_sampler_forward(s, ws, NULL, x, V, out, &e);
    float m = -INFINITY, om = -INFINITY;
    for (int i = 0; i < V; i++)
        m = fmaxf(m, x[i]), om = fmaxf(om, out[i]);
    int ok = 1;
    for (int i = 0; i < V; i++) {
        int keep = x[i] - m >= logf(0.1f) + 0.1f, drop = x[i] - m < logf(0.1f) - 0.1f;
        if (keep)
            ok &= fabsf((out[i] - om) - (x[i] - m)) < 1e-3f;
        if (drop)
            ok &= out[i] - om < (x[i] - m) - 4.0f;
    }
    T_OK("min_p is representable: the gate on logit - max keeps min_p 0.1's tokens", ok, "kept set differs");
    asn_sampler_ws_free(ws);
    asn_sampler_free(s);
}

static void test_files(void)
{
    asn_err e;
    char dir[] = "/tmp/asn-equi-XXXXXX", path[64];
    if (!mkdtemp(dir))
        return;
    snprintf(path, sizeof path, "%s/s.gguf", dir);
    asn_sampler *s = make_net(8, 5);
    int ok = asn_sampler_save(s, path, &e) == 0;
    asn_sampler *t = ok ? asn_sampler_load(path, &e) : NULL;
    ok = t && asn_sampler_get_config(t)->arch == ASN_SAMPLER_EQUI && asn_sampler_get_config(t)->hidden_dims == 8 &&
         asn_sampler_n_params(t) == asn_sampler_n_params(s) &&
         !memcmp(asn_sampler_params(t), asn_sampler_params(s), asn_sampler_n_params(s) * sizeof(float));
    T_OK("sampler file round trip", ok, "%s", e.msg);
    asn_sampler_arch a;
    T_OK("the class name parses", asn_sampler_arch_parse("EquivariantLocalTransform", &a, &e) == 0 &&
                                      a == ASN_SAMPLER_EQUI, "%s", e.msg);
    asn_sampler_config c = {ASN_SAMPLER_EQUI, 200, 0, 0, 0, 0, 0, 0};
    T_OK("hidden_dims too large is an error", asn_sampler_config_check(&c, &e) < 0 && strstr(e.msg, "hidden_dims"),
         "no error");
    unlink(path);
    rmdir(dir);
    asn_sampler_free(s);
    asn_sampler_free(t);
}

int main(void)
{
    openblas_set_num_threads(1);
    test_against_ref(40, 0, 0);
    test_against_ref(40, 4, 5);
    test_against_ref(300, 30, 47);
    test_large();
    test_min_p();
    test_files();
    T_DONE();
}
