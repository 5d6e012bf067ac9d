/* bench_sampler_net.c — learned samplers: forward time per step (one row of
 * V logits) at V = 32k and 128k for each architecture, 1 and 2 threads (an
 * asn_pool of that size, OpenBLAS on one thread inside it), the exact pass
 * and the fast pass (asn_sampler_forward_fast: SamplingNetwork,
 * LocalProbabilityTransform, SimpleDistributionAwareTransform) with its
 * error against the exact one; then one training step (forward + loss
 * + backward) per row at V = 32k, as rows/s and tokens/s.
 *
 * Baselines measured in the same run: a plain log_softmax of the same row
 * (libm expf, one thread) is the unit every time is also given in ("x
 * softmax"), and the fast pass is given as a speedup over the exact one.
 * Times are the fastest of the runs made in `budget` seconds (argv[1],
 * default 0.3; at least 3 runs; argv[2], when given, times only the
 * samplers whose label starts with it, and no training step): what the code costs when nothing else
 * competes for the cores; the median is printed next to it as a measure of
 * the noise. "cpu" is the calling thread's CPU time (1 thread), the others
 * wall time.
 *
 * Rows: log-probabilities of a Zipf(1.1) distribution plus N(0,1) noise,
 * all finite (the usual input: raw logits). Local and distribution-aware
 * transforms are timed at hidden_dims 8, 16 and 32 (the reference ships no
 * config for them); SamplingNetwork at d_model 8, 16 (network.yaml) and
 * 32 (the reference's sizes, scale off / on), 4 blocks, with its
 * arithmetic counted as the reference computes it (multiply-add = 2 flops).
 * Targets at V = 128k on one thread (the shipped configs: hidden size 8,
 * d_model 16 for SamplingNetwork),
 * for the default pass, the fast one (the exact pass of Local and Dist is
 * compared with them too): LocalProbabilityTransform <= 0.1 ms,
 * SimpleDistributionAwareTransform <= 0.25 ms, SamplingNetwork <= 0.5 ms (EquivariantLocalTransform,
 * asn's own, has none: it sorts the tokens near the top). */
#include "asn/pool.h"
#include "asn/sampler_net.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
/* CPU time of the calling thread: with one thread, the cost of a pass even
 * on a machine busy with other work (wall time is what a quiet one gives). */
static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t rng_state = 88172645463325252ULL;
static double uni(void)
{
    rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
    return ((rng_state >> 11) + 0.5) * 0x1.0p-53;
}
static double gauss(void) { return sqrt(-2 * log(uni())) * cos(2 * M_PI * uni()); }

static void make_row(float *x, int V)
{
    for (int i = 0; i < V; i++)
        x[i] = (float)(-1.1 * log(i + 1.0) + gauss());
    for (int i = V - 1; i > 0; i--) {
        int j = (int)(uni() * (i + 1));
        float t = x[i];
        x[i] = x[j], x[j] = t;
    }
}

/* Flops per token of SamplingNetwork as the reference computes it. */
static double net_flops_per_token(const asn_sampler_config *c)
{
    double d = c->d_model, H = c->n_heads, dh = d / H;
    double E = (double)((2 * c->d_model) / 3), F = (double)((2 * c->d_ff) / 3); /* SwiGLU inner sizes */
    double enc = 2 * 2 * E + 2 * E * d;
    /* qkv_proj; phi(k)^T v, phi(q) (KV), phi(q) . ksum per head; o_proj; SwiGLU */
    double blk = 2 * d * 3 * d + (2 * d * dh + 2 * d * dh + 2 * d) + 2 * d * d + (2 * 2 * d * F + 2 * F * d);
    double head = 2 * 2 * (2 * d) * E + 2 * E; /* transformation head on [h, c] */
    return enc + c->n_blocks * blk + head;
}

static void die(const char *what, const asn_err *e)
{
    fprintf(stderr, "bench_sampler_net: %s: %s\n", what, e->msg);
    exit(1);
}

/* ----------------------------------------------------------------- timing */

/* The fastest and the median of the runs made in `budget` seconds (at
 * least 3, at most 4096), of wall time or of the calling thread's CPU time. */
typedef struct timing {
    double best, med;
} timing;

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef int (*run_fn)(void *ctx);

static timing time_runs(run_fn fn, void *ctx, double budget, int cpu)
{
    static double t[4096];
    int n = 0;
    if (fn(ctx) < 0) /* warm-up: buffers, clones, pages */
        exit(1);
    double t0 = now();
    do {
        double a = cpu ? cpu_now() : now();
        fn(ctx);
        t[n++] = (cpu ? cpu_now() : now()) - a;
    } while ((now() - t0 < budget || n < 3) && n < 4096);
    qsort(t, (size_t)n, sizeof t[0], cmp_d);
    timing r = {t[0], t[n / 2]};
    return r;
}

/* The baseline: log_softmax of the row, the plain way. */
typedef struct sm_ctx {
    const float *x;
    float *out;
    int V;
} sm_ctx;
static int run_softmax(void *c_)
{
    sm_ctx *c = c_;
    float m = -INFINITY;
    for (int i = 0; i < c->V; i++)
        m = c->x[i] > m ? c->x[i] : m;
    double s = 0;
    for (int i = 0; i < c->V; i++)
        s += expf(c->x[i] - m);
    float lse = m + (float)log(s);
    for (int i = 0; i < c->V; i++)
        c->out[i] = c->x[i] - lse;
    return 0;
}

typedef struct fw_ctx {
    asn_sampler *s;
    asn_sampler_ws *ws;
    asn_pool *pool;
    const float *x, *target;
    float *out, *dout;
    int V, fast;
} fw_ctx;
static int run_forward(void *c_)
{
    fw_ctx *c = c_;
    asn_err e;
    int rc = c->fast ? asn_sampler_forward_fast(c->s, c->ws, c->pool, c->x, c->V, c->out, &e)
                     : asn_sampler_forward(c->s, c->ws, c->pool, c->x, c->V, c->out, &e);
    if (rc < 0)
        die("forward", &e);
    return 0;
}
static int run_train(void *c_)
{
    fw_ctx *c = c_;
    asn_err e;
    asn_sampler_loss l;
    if (asn_sampler_forward(c->s, c->ws, c->pool, c->x, c->V, c->out, &e) < 0 ||
        asn_truncated_logits_loss_row(c->out, c->target, c->V, 1.0f, 1.0f, &l, c->dout, &e) < 0 ||
        asn_sampler_backward(c->s, c->ws, c->pool, c->dout, NULL, &e) < 0)
        die("training step", &e);
    return 0;
}

/* KL(softmax(a) || softmax(b)) and max |a - b| over the head (a within 10
 * of its top). */
static double kl_head(const float *a, const float *b, int V, double *head)
{
    double ma = -INFINITY, mb = -INFINITY, sa = 0, sb = 0, kl = 0;
    for (int i = 0; i < V; i++)
        ma = fmax(ma, a[i]), mb = fmax(mb, b[i]);
    for (int i = 0; i < V; i++)
        sa += exp(a[i] - ma), sb += exp(b[i] - mb);
    double la = ma + log(sa), lb = mb + log(sb);
    *head = 0;
    for (int i = 0; i < V; i++) {
        kl += exp(a[i] - la) * ((a[i] - la) - (b[i] - lb));
        if (a[i] >= ma - 10)
            *head = fmax(*head, fabs((double)a[i] - b[i]));
    }
    return kl;
}

typedef struct bcase {
    const char *label;
    asn_sampler_config cfg;
    double target; /* ms at V = 128k, one thread (the fast pass); 0: none */
    int train;  /* timed in the training section */
} bcase;

int main(int argc, char **argv)
{
    double budget = argc > 1 ? atof(argv[1]) : 0.3;
    const char *only = argc > 2 ? argv[2] : NULL;
    static const int Vs[] = {32000, 128000};
    bcase cases[] = {
        {"Local h=8", {ASN_SAMPLER_LOCAL, 8, 0, 0, 0, 0, 0, 0}, 0.1, 1},
        {"Local h=16", {ASN_SAMPLER_LOCAL, 16, 0, 0, 0, 0, 0, 0}, 0, 0},
        {"Local h=32", {ASN_SAMPLER_LOCAL, 32, 0, 0, 0, 0, 0, 0}, 0, 1},
        {"Dist h=8", {ASN_SAMPLER_DIST, 8, 0, 0, 0, 0, 0, 0}, 0.25, 1},
        {"Dist h=8 dyn", {ASN_SAMPLER_DIST, 8, 1, 0, 0, 0, 0, 0}, 0.25, 0},
        {"Dist h=16", {ASN_SAMPLER_DIST, 16, 0, 0, 0, 0, 0, 0}, 0, 0},
        {"Dist h=32", {ASN_SAMPLER_DIST, 32, 0, 0, 0, 0, 0, 0}, 0, 1},
        {"Equi h=8", {ASN_SAMPLER_EQUI, 8, 0, 0, 0, 0, 0, 0}, 0, 1},
        {"Net d=8", {ASN_SAMPLER_NETWORK, 0, 0, 8, 16, 4, 2, 0}, 0.5, 1},
        {"Net d=16", {ASN_SAMPLER_NETWORK, 0, 0, 16, 32, 4, 4, 0}, 0.5, 1},
        {"Net d=32", {ASN_SAMPLER_NETWORK, 0, 0, 32, 64, 4, 4, 0}, 0, 1},
        {"Net scale", {ASN_SAMPLER_NETWORK, 0, 0, 32, 64, 4, 4, 1}, 0, 1},
    };
    int n_cases = (int)(sizeof cases / sizeof cases[0]);
    asn_pool *pool2 = asn_pool_new(2);
    openblas_set_num_threads(1);
    int V_max = Vs[1];
    float *x = malloc((size_t)V_max * sizeof(float)), *out = malloc((size_t)V_max * sizeof(float));
    float *ref = malloc((size_t)V_max * sizeof(float)), *target = malloc((size_t)V_max * sizeof(float));
    float *dout = malloc((size_t)V_max * sizeof(float));
    make_row(x, V_max);
    int missed = 0;

#ifndef ASN_CLONES_AVX2_TOP
    if (getenv("ASN_CPU")) /* it caps asn's kernels, not the copies GCC's resolver picks */
        printf("note: ASN_CPU does not reach the loops GCC compiles per instruction set (ASN_CLONES); for "
               "a smaller CPU class, measure a build made by make O=build/avx2top AVX2_TOP=1\n");
#endif
    printf("bench_sampler_net: forward ms per step (one row, all tokens finite; fastest run, median in "
           "parentheses); OpenBLAS on 1 thread per pool thread\n");
    timing sm[2];
    for (int vi = 0; vi < 2; vi++) {
        sm_ctx c = {x, out, Vs[vi]};
        sm[vi] = time_runs(run_softmax, &c, budget, 1);
        printf("baseline: plain log_softmax (libm expf, 1 thread) at V = %d: %.3f ms (%.3f)\n", Vs[vi], sm[vi].best * 1e3,
               sm[vi].med * 1e3);
    }
    printf("\n%-13s %6s %-5s %17s %17s %17s %9s %s\n", "sampler", "V", "pass", "1 thr cpu", "1 thread", "2 threads",
           "x softmax", "");
    for (int k = 0; k < n_cases; k++) {
        if (only && strncmp(cases[k].label, only, strlen(only)))
            continue;
        asn_err e;
        asn_sampler *s = asn_sampler_new(&cases[k].cfg, 1, &e);
        if (!s)
            die(cases[k].label, &e);
        int net = cases[k].cfg.arch == ASN_SAMPLER_NETWORK;
        int has_fast = net || cases[k].cfg.arch == ASN_SAMPLER_LOCAL || cases[k].cfg.arch == ASN_SAMPLER_DIST;
        asn_sampler_ws *ws = asn_sampler_ws_new(s, 0);
        for (int vi = 0; vi < 2; vi++) {
            int V = Vs[vi];
            timing ex_cpu = {0, 0};
            for (int fast = 0; fast <= has_fast; fast++) {
                fw_ctx c = {s, ws, NULL, x, NULL, out, NULL, V, fast};
                timing c1 = time_runs(run_forward, &c, budget, 1), w1 = time_runs(run_forward, &c, budget, 0);
                c.pool = pool2;
                timing w2 = time_runs(run_forward, &c, budget, 0);
                char extra[256] = "";
                if (!fast) {
                    ex_cpu = c1;
                    asn_sampler_forward(s, ws, NULL, x, V, ref, &e);
                }
                if (net && !fast) {
                    double gf = net_flops_per_token(&cases[k].cfg) * V * 1e-9;
                    snprintf(extra, sizeof extra, "%.2f GFLOP, %.1f GFLOP/s", gf, gf / c1.best);
                } else if (fast && !net) {
                    asn_sampler_forward_fast(s, ws, NULL, x, V, out, &e);
                    asn_sampler_fast_info info;
                    asn_sampler_fast_get_info(ws, &info);
                    double head, kl = kl_head(ref, out, V, &head);
                    snprintf(extra, sizeof extra,
                             "%.1fx faster than exact (median %.1fx); %d pieces; KL %.1e, head max|d| %.1e",
                             ex_cpu.best / c1.best, ex_cpu.med / c1.med, info.pieces, kl, head);
                } else if (net) {
                    asn_sampler_fast_info info;
                    asn_sampler_fast_get_info(ws, &info);
                    asn_sampler_forward_fast(s, ws, NULL, x, V, out, &e);
                    double head, kl = kl_head(ref, out, V, &head);
                    snprintf(extra, sizeof extra,
                             "%.0fx faster than exact (median %.0fx); %d rows, %d pieces (%d dropped); KL %.1e, head max|d| %.1e",
                             ex_cpu.best / c1.best, ex_cpu.med / c1.med, info.reps, info.pieces, info.dropped, kl, head);
                }
                /* the target counts for the default pass (the fast one); the
                 * exact one of Local and Dist is compared with it too */
                if (V == 128000 && cases[k].target > 0 && (fast == has_fast || !net)) {
                    int miss = c1.best * 1e3 > cases[k].target && w1.best * 1e3 > cases[k].target;
                    missed += miss && fast == has_fast;
                    size_t at = strlen(extra);
                    snprintf(extra + at, sizeof extra - at, "%starget %g ms %s%s", at ? "; " : "", cases[k].target,
                             fast ? (miss ? "MISSED" : "met") : (miss ? "over" : "met"),
                             fast ? "" : " (the exact pass; the fast one is the default)");
                }
                char a[32], b[32], d[32];
                snprintf(a, sizeof a, "%.3f (%.3f)", c1.best * 1e3, c1.med * 1e3);
                snprintf(b, sizeof b, "%.3f (%.3f)", w1.best * 1e3, w1.med * 1e3);
                snprintf(d, sizeof d, "%.3f (%.3f)", w2.best * 1e3, w2.med * 1e3);
                printf("%-13s %6d %-5s %17s %17s %17s %9.1f %s\n", cases[k].label, V, fast ? "fast" : "exact", a, b, d,
                       c1.best / sm[vi].best, extra);
                fflush(stdout);
            }
        }
        asn_sampler_ws_free(ws);
        asn_sampler_free(s);
    }

    int V = Vs[0];
    for (int i = 0; i < V; i++) /* a min-p-like target */
        target[i] = x[i] > -2.0f ? x[i] / 0.7f : -INFINITY;
    printf("\ntraining step (forward + TruncatedLogitsLoss + backward) per row at V = %d: ms (fastest, median), "
           "rows/s and tokens/s of the fastest\n",
           V);
    printf("%-13s %17s %17s %9s %12s %14s\n", "sampler", "1 thread", "2 threads", "x softmax", "rows/s (1t)",
           "tokens/s (1t)");
    for (int k = 0; k < n_cases; k++) {
        if (!cases[k].train || only)
            continue;
        asn_err e;
        asn_sampler *s = asn_sampler_new(&cases[k].cfg, 1, &e);
        asn_sampler_ws *ws = asn_sampler_ws_new(s, 1);
        fw_ctx c = {s, ws, NULL, x, target, out, dout, V, 0};
        timing t1 = time_runs(run_train, &c, budget, 0);
        c.pool = pool2;
        timing t2 = time_runs(run_train, &c, budget, 0);
        char a[32], b[32];
        snprintf(a, sizeof a, "%.3f (%.3f)", t1.best * 1e3, t1.med * 1e3);
        snprintf(b, sizeof b, "%.3f (%.3f)", t2.best * 1e3, t2.med * 1e3);
        printf("%-13s %17s %17s %9.1f %12.0f %14.3g\n", cases[k].label, a, b, t1.best / sm[0].best, 1.0 / t1.best,
               V / t1.best);
        asn_sampler_ws_free(ws);
        asn_sampler_free(s);
    }
    asn_pool_free(pool2);
    free(x), free(out), free(ref), free(target), free(dout);
    printf("targets at V = 128000 on one thread, fast pass (Local h=8 0.1 ms, Dist h=8 0.25 ms, SamplingNetwork 0.5 ms): "
           "%d missed\n", missed);
    return 0;
}
