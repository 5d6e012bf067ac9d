/* test_optim.c — AdamW, gradient clipping and learning-rate schedules
 * (asn/optim.h) against PyTorch and transformers' formulas
 * (tests/fixtures/make_lm_fixtures.py writes tests/fixtures/lm/optim.json):
 *  - AdamW trajectories over 8-12 steps with changing rates, with and
 *    without weight decay, against torch.optim.AdamW in float64: within
 *    ADAM_TOL of max |param| (f32 arithmetic here);
 *  - clip_grad_norm_: the norm and the clipped gradients within CLIP_TOL;
 *  - every schedule's rate at every step to the end and beyond, within
 *    SCHED_TOL of the base rate; plus names, parsing and checks. */
#include "asn/json.h"
#include "asn/optim.h"
#include "t.h"

#include <stdlib.h>
#include <string.h>

/* f32 updates vs f64 over a dozen steps: a few f32 ulps of each value. */
#define ADAM_TOL 2e-6
#define CLIP_TOL 1e-6
/* the schedules are computed in double as transformers does */
#define SCHED_TOL 1e-12

static json_t *load(void)
{
    char path[4096];
    const char *root = getenv("ASN_ROOT");
    snprintf(path, sizeof path, "%s/tests/fixtures/lm/optim.json", root ? root : ".");
    json_error_t je;
    return json_load_file(path, 0, &je);
}

static float *floats(json_t *a, size_t *n)
{
    *n = json_array_size(a);
    float *v = malloc((*n ? *n : 1) * sizeof(float));
    for (size_t i = 0; i < *n; i++)
        v[i] = (float)json_number_value(json_array_get(a, i));
    return v;
}

static void test_adamw(json_t *cases)
{
    for (size_t c = 0; c < json_array_size(cases); c++) {
        json_t *k = json_array_get(cases, c);
        asn_adamw h = {(float)json_number_value(json_object_get(k, "beta1")),
                       (float)json_number_value(json_object_get(k, "beta2")),
                       (float)json_number_value(json_object_get(k, "eps"))};
        float wd = (float)json_number_value(json_object_get(k, "weight_decay"));
        size_t n;
        float *p = floats(json_object_get(k, "p0"), &n);
        float *m = calloc(n, sizeof(float)), *v = calloc(n, sizeof(float));
        json_t *grads = json_object_get(k, "grads"), *traj = json_object_get(k, "params");
        json_t *lrs = json_object_get(k, "lrs");
        double worst = 0;
        for (size_t s = 0; s < json_array_size(grads); s++) {
            size_t gn;
            float *g = floats(json_array_get(grads, s), &gn);
            asn_adamw_step(&h, (long)s + 1, (float)json_number_value(json_array_get(lrs, s)), wd, p, g, m, v, n);
            json_t *want = json_array_get(traj, s);
            double md = 0, mx = 0;
            for (size_t i = 0; i < n; i++) {
                double w = json_number_value(json_array_get(want, i));
                md = fmax(md, fabs(p[i] - w));
                mx = fmax(mx, fabs(w));
            }
            worst = fmax(worst, md / mx);
            free(g);
        }
        char name[128];
        snprintf(name, sizeof name, "AdamW case %zu (weight decay %g): %zu steps match torch.optim.AdamW", c, wd,
                 json_array_size(grads));
        T_OK(name, worst <= ADAM_TOL, "relative error %.3g > %g", worst, ADAM_TOL);
        free(p), free(m), free(v);
    }
    /* the first step moves every parameter by about lr (Adam's normalized step) */
    asn_adamw h = ASN_ADAMW_DEFAULTS;
    float p[3] = {1, -2, 0.5f}, g[3] = {0.3f, -7, 1e-3f}, m[3] = {0}, v[3] = {0};
    asn_adamw_step(&h, 1, 0.01f, 0.0f, p, g, m, v, 3);
    T_NEAR("AdamW first step: -lr * sign(g)", p[0], 0.99, 1e-6);
    T_NEAR("AdamW first step: against a large gradient too", p[1], -1.99, 1e-6);
    T_OK("AdamW defaults are torch's", h.beta1 == 0.9f && h.beta2 == 0.999f && h.eps == 1e-8f, "%g %g %g", h.beta1,
         h.beta2, h.eps);
    float q[1] = {2}, z[1] = {0}, mq[1] = {0}, vq[1] = {0};
    asn_adamw_step(&h, 1, 0.1f, 0.5f, q, z, mq, vq, 1);
    T_NEAR("AdamW decoupled weight decay with zero gradient: p * (1 - lr wd)", q[0], 2 * (1 - 0.05), 1e-6);
}

static void test_clip(json_t *cases)
{
    for (size_t c = 0; c < json_array_size(cases); c++) {
        json_t *k = json_array_get(cases, c);
        size_t n;
        float *g = floats(json_object_get(k, "grad"), &n);
        double max_norm = json_number_value(json_object_get(k, "max_norm"));
        double want = json_number_value(json_object_get(k, "norm"));
        double norm = asn_clip_grad_norm(g, n, max_norm);
        char name[128];
        snprintf(name, sizeof name, "clip case %zu: norm before clipping", c);
        T_NEAR(name, norm, want, CLIP_TOL * want);
        json_t *cl = json_object_get(k, "clipped");
        double md = 0;
        for (size_t i = 0; i < n; i++)
            md = fmax(md, fabs(g[i] - json_number_value(json_array_get(cl, i))));
        snprintf(name, sizeof name, "clip case %zu (norm %.3g, max %.3g): gradients as clip_grad_norm_", c, want,
                 max_norm);
        T_OK(name, md <= CLIP_TOL * fmax(1.0, max_norm), "max diff %.3g", md);
        free(g);
    }
    float g[2] = {3, 4};
    T_NEAR("grad norm", asn_grad_norm(g, 2), 5, 1e-12);
    T_NEAR("max_norm 0 only measures", asn_clip_grad_norm(g, 2, 0), 5, 1e-12);
    T_OK("max_norm 0 leaves the gradients", g[0] == 3 && g[1] == 4, "%g %g", g[0], g[1]);
    T_NEAR("clip coefficient", asn_clip_coef(5, 1), 1 / (5 + 1e-6), 1e-15);
    T_NEAR("clip coefficient is at most 1", asn_clip_coef(0.5, 1), 1, 0);
}

static void test_schedules(json_t *cases)
{
    for (size_t c = 0; c < json_array_size(cases); c++) {
        json_t *k = json_array_get(cases, c);
        asn_err e;
        asn_sched_kind kind;
        const char *kname = json_string_value(json_object_get(k, "kind"));
        if (asn_sched_parse(kname, &kind, &e)) {
            T_OK("schedule name parses", 0, "%s", e.msg);
            continue;
        }
        asn_sched s = asn_sched_make(kind, (long)json_integer_value(json_object_get(k, "warmup")),
                                     (long)json_integer_value(json_object_get(k, "total")));
        json_t *x;
        if ((x = json_object_get(k, "num_cycles")))
            s.num_cycles = json_number_value(x);
        if ((x = json_object_get(k, "power")))
            s.power = json_number_value(x);
        if ((x = json_object_get(k, "lr_end")))
            s.lr_end = json_number_value(x);
        if ((x = json_object_get(k, "min_lr_rate")))
            s.min_lr_rate = json_number_value(x);
        double base = json_number_value(json_object_get(k, "base_lr"));
        json_t *lrs = json_object_get(k, "lrs");
        double md = 0;
        long worst = -1;
        for (size_t i = 0; i < json_array_size(lrs); i++) {
            double d = fabs(asn_sched_lr(&s, base, (long)i) - json_number_value(json_array_get(lrs, i)));
            if (d > md)
                md = d, worst = (long)i;
        }
        char name[200];
        snprintf(name, sizeof name, "schedule %s (warmup %ld, total %ld, cycles %g, power %g, min rate %g): %zu steps",
                 asn_sched_name(kind), s.warmup_steps, s.total_steps, s.num_cycles, s.power, s.min_lr_rate,
                 json_array_size(lrs));
        T_OK(name, asn_sched_check(&s, base, &e) == 0 && md <= SCHED_TOL * base, "step %ld off by %.3g (%s)", worst,
             md, e.msg);
    }
    /* hand-checked values */
    asn_sched s = asn_sched_make(ASN_SCHED_COSINE, 10, 110);
    T_NEAR("cosine: warmup starts at 0", asn_sched_lr(&s, 1, 0), 0, 0);
    T_NEAR("cosine: warmup is linear", asn_sched_lr(&s, 1, 5), 0.5, 1e-15);
    T_NEAR("cosine: full rate after warmup", asn_sched_lr(&s, 1, 10), 1, 1e-15);
    T_NEAR("cosine: half way", asn_sched_lr(&s, 1, 60), 0.5, 1e-12);
    T_NEAR("cosine: 0 at the end", asn_sched_lr(&s, 1, 110), 0, 1e-12);
    s = asn_sched_make(ASN_SCHED_CONSTANT, 10, 0);
    T_NEAR("constant ignores warmup (as transformers)", asn_sched_lr(&s, 2, 0), 2, 0);
    s = asn_sched_make(ASN_SCHED_LINEAR, 0, 4);
    T_NEAR("linear: 3/4 after one step", asn_sched_lr(&s, 1, 1), 0.75, 1e-15);
    T_NEAR("linear: never negative", asn_sched_lr(&s, 1, 9), 0, 0);

    asn_err e;
    asn_sched_kind k;
    T_OK("unknown schedule name", asn_sched_parse("cosin", &k, &e) == -1 && strstr(e.msg, "cosine_with_restarts"),
         "%s", e.msg);
    for (int i = 0; i <= ASN_SCHED_COSINE_WITH_MIN_LR; i++) {
        char name[96];
        snprintf(name, sizeof name, "schedule name round trip: %s", asn_sched_name((asn_sched_kind)i));
        T_OK(name, asn_sched_parse(asn_sched_name((asn_sched_kind)i), &k, &e) == 0 && k == (asn_sched_kind)i, "%s",
             e.msg);
    }
    s = asn_sched_make(ASN_SCHED_COSINE, 10, 0);
    T_OK("cosine without a total is rejected", asn_sched_check(&s, 1e-3, &e) == -1, "accepted");
    s = asn_sched_make(ASN_SCHED_CONSTANT_WITH_WARMUP, -1, 10);
    T_OK("negative warmup is rejected", asn_sched_check(&s, 1e-3, &e) == -1, "accepted");
    s = asn_sched_make(ASN_SCHED_POLYNOMIAL, 0, 10);
    s.lr_end = 1e-3;
    T_OK("polynomial with lr_end >= lr is rejected", asn_sched_check(&s, 1e-3, &e) == -1, "accepted");
    s = asn_sched_make(ASN_SCHED_CONSTANT, 0, 0);
    T_OK("constant needs no total", asn_sched_check(&s, 1e-3, &e) == 0, "%s", e.msg);
}

int main(void)
{
    json_t *j = load();
    T_OK("optim fixture loads", j != NULL, "cannot read tests/fixtures/lm/optim.json");
    if (!j)
        T_DONE();
    test_adamw(json_object_get(j, "adamw"));
    test_clip(json_object_get(j, "clip"));
    test_schedules(json_object_get(j, "schedules"));
    json_decref(j);
    T_DONE();
}
