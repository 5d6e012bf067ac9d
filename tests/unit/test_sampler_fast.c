/* test_sampler_fast.c — the fast inference pass of SamplingNetwork
 * (asn_sampler_forward_fast) against the exact pass (asn_sampler_forward,
 * itself checked against PyTorch by test_sampler_net.c):
 *  - KL(softmax(exact) || softmax(fast)) over the whole vocabulary <=
 *    ASN_SAMPLER_FAST_KL_TOL and |exact - fast| <= ASN_SAMPLER_FAST_HEAD_TOL
 *    * max(1, max |exact|) on the head (the tokens within 10 of the top
 *    output), on
 *    Zipf-like rows, rows with a long flat tail, with -inf tokens, one
 *    dominant token, a wide range of logits, tokens thousands of nats below
 *    the others and all logits equal, for the
 *    reference initialization and weights 3 times larger, and on the logit
 *    rows of the demo model (examples/models/demo-base.gguf);
 *  - -inf exactly where the logit is -inf, no NaN; a single finite token;
 *    an all -inf row; NaN / +inf inputs are errors;
 *  - the same bits with 1, 2 and 3 threads;
 *  - every token evaluated on its own (head_max and head_range large) gives
 *    the exact pass's outputs to float rounding;
 *  - LocalProbabilityTransform and SimpleDistributionAwareTransform (their
 *    own fast pass: interpolation in lp, see pertoken.h): the same KL bound,
 *    and the head bound against the head's own outputs, on Zipf-like,
 *    random and the rows above at V = 32k (Zipf and random at 128k), for the
 *    reference initialization, weights 3 times larger and a sharp
 *    truncation near the top; the same bits with 1-3 threads, on every
 *    instruction set and in place; rows of at most exact_max finite tokens:
 *    the exact pass's bits;
 *  - bad options. */
#include "asn/model.h"
#include "asn/pool.h"
#include "asn/sampler_net.h"
#include "learn/layers.h"
#include "t.h"

#include <cblas.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_s = 0x2545F4914F6CDD1DULL;
static double urand(void) /* (0, 1) */
{
    rng_s ^= rng_s << 13, rng_s ^= rng_s >> 7, rng_s ^= rng_s << 17;
    return ((rng_s >> 11) + 0.5) * 0x1.0p-53;
}
static double gauss(void) { return sqrt(-2 * log(urand())) * cos(2 * M_PI * urand()); }

/* ------------------------------------------------------------------ rows */

static void row_zipf(float *x, int V)
{
    for (int i = 0; i < V; i++)
        x[(i * 7919) % V] = (float)(-1.1 * log(i + 1.0) + gauss());
}
static void row_flat_tail(float *x, int V) /* 40 candidates, then a long flat tail */
{
    for (int i = 0; i < V; i++)
        x[i] = i < 40 ? (float)(6.0 - 0.15 * i + 0.5 * gauss()) : (float)(-7.0 + 0.02 * gauss());
}
static void row_inf(float *x, int V) /* a min-p-like cut and scattered -inf */
{
    row_zipf(x, V);
    for (int i = 0; i < V; i++)
        if (i % 5 == 2 || x[i] < -9.0f)
            x[i] = -INFINITY;
}
static void row_peak(float *x, int V)
{
    for (int i = 0; i < V; i++)
        x[i] = (float)(2.0 * gauss());
    x[V / 3] = 30.0f;
}
static void row_wide(float *x, int V) /* logits spread over some 60 nats */
{
    for (int i = 0; i < V; i++)
        x[i] = (float)(-5.0 * log(i + 1.0) + 3.0 * gauss());
}
static void row_extreme(float *x, int V) /* some 3e4 nats below the rest: the geometric bins */
{
    row_zipf(x, V);
    for (int i = 0; i < V; i++)
        if (i % 7 == 3)
            x[i] = -30000.0f - (float)(i % 5);
        else if (i % 11 == 4)
            x[i] = (float)(-1000.0 - 10.0 * urand());
}
static void row_equal(float *x, int V)
{
    for (int i = 0; i < V; i++)
        x[i] = 1.25f;
}

typedef struct row_kind {
    const char *name;
    void (*fill)(float *, int);
} row_kind;
static const row_kind ROWS[] = {{"Zipf", row_zipf},         {"flat tail", row_flat_tail}, {"-inf tokens", row_inf},
                                {"one dominant", row_peak}, {"wide range", row_wide},     {"extreme range", row_extreme},
                                {"all equal", row_equal}};
#define N_ROWS ((int)(sizeof ROWS / sizeof ROWS[0]))

/* ----------------------------------------------------------- comparisons */

typedef struct cmp {
    double kl, head, all, scale, hscale;
    int inf_ok, nan;
} cmp;

/* KL(softmax(a) || softmax(b)) over the finite tokens, in double; max |a -
 * b| over the head (a within 10 of its top) and over all finite tokens,
 * max(1, max |a|); -inf in the same places. */
static cmp compare(const float *a, const float *b, const float *logits, int V)
{
    cmp c = {0, 0, 0, 1, 1, 1, 0};
    double ma = -INFINITY, mb = -INFINITY;
    for (int i = 0; i < V; i++) {
        c.nan |= isnan(a[i]) || isnan(b[i]);
        if ((logits[i] == -INFINITY) != (b[i] == -INFINITY) || (a[i] == -INFINITY) != (b[i] == -INFINITY))
            c.inf_ok = 0;
        ma = fmax(ma, a[i]);
        mb = fmax(mb, b[i]);
    }
    double sa = 0, sb = 0;
    for (int i = 0; i < V; i++)
        if (a[i] > -INFINITY && b[i] > -INFINITY) {
            sa += exp(a[i] - ma);
            sb += exp(b[i] - mb);
        }
    double la = ma + log(sa), lb = mb + log(sb);
    for (int i = 0; i < V; i++) {
        if (!(a[i] > -INFINITY && b[i] > -INFINITY))
            continue;
        c.kl += exp(a[i] - la) * ((a[i] - la) - (b[i] - lb));
        double d = fabs((double)a[i] - b[i]);
        c.all = fmax(c.all, d);
        c.scale = fmax(c.scale, fabs(a[i]));
        if (a[i] >= ma - 10) {
            c.head = fmax(c.head, d);
            c.hscale = fmax(c.hscale, fabs(a[i]));
        }
    }
    return c;
}

static asn_sampler_config cfg_net(int d, int ff, int nb, int nh, int scale)
{
    asn_sampler_config c = {ASN_SAMPLER_NETWORK, 0, 0, d, ff, nb, nh, scale};
    return c;
}

/* A sampler of the given shape, its weights multiplied by `gain` (and the
 * LayerNorm and truncation parameters moved off their initial constants). */
static asn_sampler *net_new(const asn_sampler_config *c, uint64_t seed, float gain)
{
    asn_err e;
    asn_sampler *s = asn_sampler_new(c, seed, &e);
    if (!s)
        return NULL;
    float *p = asn_sampler_params(s);
    for (int t = 0; t < asn_sampler_n_tensors(s); t++) {
        const asn_sampler_tensor *ti = asn_sampler_tensor_at(s, t);
        int fixed = strstr(ti->name, "norm") != NULL;
        for (size_t j = 0; j < ti->numel; j++)
            p[ti->offset + j] = fixed ? p[ti->offset + j] + (float)(0.2 * gauss()) : p[ti->offset + j] * gain;
    }
    return s;
}

/* LocalProbabilityTransform and SimpleDistributionAwareTransform: the head
 * error is measured against the head's own outputs (max(1, max |exact| on
 * the head)), not the row's, which the far tokens can make large. */
static int pt_head_rel;
static int rows_poly, rows_dropped; /* rows whose tail took the cubic pieces, and dropped some */
static int rows_p32, rows_p64;      /* rows with 32 pieces, with 64 */

/* exact vs fast on one row; the fast pass with 1 thread, then 2 and 3 (same
 * bits). */
static void check_row(const char *label, asn_sampler *s, const float *x, int V, asn_pool *p2, asn_pool *p3)
{
    asn_err e;
    char name[256];
    asn_sampler_ws *ws = asn_sampler_ws_new(s, 0), *wf = asn_sampler_ws_new(s, 0);
    float *a = malloc(V * sizeof(float)), *b = malloc(V * sizeof(float)), *b2 = malloc(V * sizeof(float));
    int ok = asn_sampler_forward(s, ws, NULL, x, V, a, &e) == 0;
    ok = ok && asn_sampler_forward_fast(s, wf, NULL, x, V, b, &e) == 0;
    snprintf(name, sizeof name, "%s: exact and fast passes run", label);
    T_OK(name, ok, "%s", e.msg);
    if (ok) {
        cmp c = compare(a, b, x, V);
        asn_sampler_fast_info info;
        asn_sampler_fast_get_info(wf, &info);
        printf("# %s: KL %.2e, head max |d| %.2e (max |out| %.3g), all %.2e; %d representatives (%d head, %d bins) "
               "for V = %d; %d cubic pieces, %d dropped\n",
               label, c.kl, c.head, c.scale, c.all, info.reps, info.head, info.bins, V, info.pieces, info.dropped);
        rows_poly += info.pieces > 0;
        rows_p32 += info.pieces == 32;
        rows_p64 += info.pieces == 64;
        rows_dropped += info.dropped > 0;
        snprintf(name, sizeof name, "%s: KL(exact || fast) <= %g", label, ASN_SAMPLER_FAST_KL_TOL);
        T_OK(name, c.kl <= ASN_SAMPLER_FAST_KL_TOL, "KL %g", c.kl);
        snprintf(name, sizeof name, "%s: head |exact - fast| <= %g max(1, max |exact|)", label,
                 ASN_SAMPLER_FAST_HEAD_TOL);
        T_OK(name, c.head <= ASN_SAMPLER_FAST_HEAD_TOL * c.scale, "max %g (max |out| %g)", c.head, c.scale);
        if (pt_head_rel) {
            printf("# %s: head max |d| / max(1, max |exact| on the head) %.2e\n", label, c.head / c.hscale);
            snprintf(name, sizeof name, "%s: head |exact - fast| <= %g max(1, max |exact| on the head)", label,
                     ASN_SAMPLER_FAST_HEAD_TOL);
            T_OK(name, c.head <= ASN_SAMPLER_FAST_HEAD_TOL * c.hscale, "max %g (head max |out| %g)", c.head, c.hscale);
        }
        snprintf(name, sizeof name, "%s: -inf exactly where the logit is -inf, no NaN", label);
        T_OK(name, c.inf_ok && !c.nan, "-inf %s, NaN %d", c.inf_ok ? "ok" : "misplaced", c.nan);
        asn_pool *pools[2] = {p2, p3};
        for (int k = 0; k < 2; k++) {
            ok = asn_sampler_forward_fast(s, wf, pools[k], x, V, b2, &e) == 0;
            snprintf(name, sizeof name, "%s: %d threads give the same bits", label, k + 2);
            T_OK(name, ok && !memcmp(b, b2, V * sizeof(float)), "%s", ok ? "outputs differ" : e.msg);
        }
        /* in place (out = logits, the learned processor's use) */
        memcpy(b2, x, V * sizeof(float));
        ok = asn_sampler_forward_fast(s, wf, NULL, b2, V, b2, &e) == 0;
        snprintf(name, sizeof name, "%s: in place (out = logits), the same bits", label);
        T_OK(name, ok && !memcmp(b, b2, V * sizeof(float)), "%s", ok ? "outputs differ" : e.msg);
        /* the interpolation's copies per instruction set (sampler_fast.c) */
        int same = 1, top = asn_nn_pertoken_level();
        for (int level = 0; level < top; level++) {
            asn_nn_pertoken_force(level);
            same &= asn_sampler_forward_fast(s, wf, NULL, x, V, b2, &e) == 0 && !memcmp(b, b2, V * sizeof(float));
        }
        asn_nn_pertoken_force(-1);
        snprintf(name, sizeof name, "%s: the same bits on every instruction set", label);
        T_OK(name, same, "outputs differ");
    }
    free(a), free(b), free(b2);
    asn_sampler_ws_free(ws);
    asn_sampler_ws_free(wf);
}

static void test_rows(asn_pool *p2, asn_pool *p3)
{
    struct {
        const char *what;
        asn_sampler_config cfg;
        float gain;
        int V;
    } nets[] = {
        {"reference network (d 32, 4 blocks)", cfg_net(32, 64, 4, 4, 0), 1.0f, 20000},
        {"weights x3 (d 32, 4 blocks)", cfg_net(32, 64, 4, 4, 0), 3.0f, 20000},
        {"weights x3, scaling head (d 16, 2 blocks)", cfg_net(16, 24, 2, 2, 1), 3.0f, 5000},
        {"no blocks", cfg_net(8, 12, 0, 2, 0), 1.0f, 3000},
    };
    for (int k = 0; k < (int)(sizeof nets / sizeof nets[0]); k++) {
        asn_sampler *s = net_new(&nets[k].cfg, 100 + k, nets[k].gain);
        int V = nets[k].V;
        float *x = malloc(V * sizeof(float));
        for (int r = 0; r < N_ROWS; r++) {
            char label[200];
            snprintf(label, sizeof label, "fast pass, %s, %s row", nets[k].what, ROWS[r].name);
            ROWS[r].fill(x, V);
            check_row(label, s, x, V, p2, p3);
        }
        free(x);
        asn_sampler_free(s);
    }
    /* a large vocabulary, once */
    asn_sampler_config c = cfg_net(32, 64, 4, 4, 0);
    asn_sampler *s = net_new(&c, 7, 3.0f);
    int V = 128000;
    float *x = malloc(V * sizeof(float));
    row_zipf(x, V);
    check_row("fast pass, weights x3, Zipf row, V = 128000", s, x, V, p2, p3);
    free(x);
    asn_sampler_free(s);
    /* both ways of the tail (sampler_fast.c, poly_setup) were checked above */
    T_OK("the tail's cubic pieces ran on some rows, and on some left pieces to the interpolation",
         rows_poly > 0 && rows_dropped > 0, "%d rows with the pieces, %d with some dropped", rows_poly, rows_dropped);
}

/* The logit rows of the demo model after a few tokens. */
static void test_model_rows(asn_pool *p2, asn_pool *p3)
{
    char path[4096];
    const char *root = getenv("ASN_ROOT");
    snprintf(path, sizeof path, "%s/examples/models/demo-base.gguf", root ? root : ".");
    asn_err e;
    asn_model *m = asn_model_load(path, &e);
    T_OK("demo model loads (logit rows for the fast pass)", m != NULL, "%s", e.msg);
    if (!m)
        return;
    asn_engine *en = asn_engine_new(m, 32, NULL, &e);
    int V = asn_model_cfg(m)->n_vocab, n = 6;
    int32_t toks[6];
    for (int i = 0; i < n; i++)
        toks[i] = (i * 373 + 11) % V;
    float *lg = malloc((size_t)n * V * sizeof(float));
    asn_batch_item it = {en ? asn_seq_new(en) : 0, toks, n, lg, 1, NULL, NULL};
    int ok = en && asn_engine_decode(en, &it, 1, &e) == 0;
    T_OK("demo model decodes", ok, "%s", e.msg);
    if (ok) {
        asn_sampler_config c = cfg_net(32, 64, 4, 4, 1);
        asn_sampler *s = net_new(&c, 11, 3.0f);
        for (int r = 0; r < n; r += 2) {
            char label[200];
            snprintf(label, sizeof label, "fast pass, weights x3, demo model logits after %d tokens", r + 1);
            check_row(label, s, lg + (size_t)r * V, V, p2, p3);
        }
        /* the same row cut to its top tokens (-inf elsewhere) */
        float *x = lg + (size_t)(n - 1) * V, mx = -INFINITY;
        for (int i = 0; i < V; i++)
            mx = fmaxf(mx, x[i]);
        for (int i = 0; i < V; i++)
            if (x[i] < mx - 6.0f)
                x[i] = -INFINITY;
        check_row("fast pass, weights x3, demo model logits cut 6 below the top", s, x, V, p2, p3);
        /* ... which has fewer than exact_max finite tokens: the exact pass */
        asn_sampler_ws *ws = asn_sampler_ws_new(s, 0), *wf = asn_sampler_ws_new(s, 0);
        float *a = malloc(V * sizeof(float)), *b = malloc(V * sizeof(float));
        asn_sampler_forward(s, ws, NULL, x, V, a, &e);
        asn_sampler_forward_fast(s, wf, NULL, x, V, b, &e);
        T_OK("fast pass, fewer finite tokens than exact_max: the exact pass's bits", !memcmp(a, b, V * sizeof(float)),
             "outputs differ");
        free(a), free(b);
        asn_sampler_ws_free(ws);
        asn_sampler_ws_free(wf);
        asn_sampler_free(s);
    }
    free(lg);
    asn_engine_free(en);
    asn_model_free(m);
}

/* Every token its own representative: the exact pass's function. */
static void test_all_head(void)
{
    asn_sampler_config c = cfg_net(16, 24, 2, 4, 1);
    asn_sampler *s = net_new(&c, 3, 1.0f);
    asn_err e;
    int V = 3000;
    float *x = malloc(V * sizeof(float)), *a = malloc(V * sizeof(float)), *b = malloc(V * sizeof(float));
    row_zipf(x, V);
    asn_sampler_ws *ws = asn_sampler_ws_new(s, 0), *wf = asn_sampler_ws_new(s, 0);
    asn_sampler_fast_opts o;
    asn_sampler_fast_defaults(&o);
    o.head_max = V;
    o.head_range = 1000.0f;
    o.exact_max = 0;
    int ok = asn_sampler_ws_set_fast(wf, &o, &e) == 0 && asn_sampler_forward(s, ws, NULL, x, V, a, &e) == 0 &&
             asn_sampler_forward_fast(s, wf, NULL, x, V, b, &e) == 0;
    T_OK("fast pass with every token in the head runs", ok, "%s", e.msg);
    asn_sampler_fast_info info;
    asn_sampler_fast_get_info(wf, &info);
    T_EQ_INT("fast pass with every token in the head: one representative per token", info.reps, V);
    double worst = 0, mx = 0;
    for (int i = 0; i < V; i++) {
        worst = fmax(worst, fabs((double)a[i] - b[i]));
        mx = fmax(mx, fabs(a[i]));
    }
    T_OK("fast pass with every token in the head = exact pass (to float rounding)", ok && worst <= 1e-5 * mx,
         "max |d| %g (max |out| %g)", worst, mx);
    /* no head at all, and coarse bins: still within the stated bounds */
    o.head_max = 0;
    o.bin_width = 0.05f;
    ok = asn_sampler_ws_set_fast(wf, &o, &e) == 0 && asn_sampler_forward_fast(s, wf, NULL, x, V, b, &e) == 0;
    cmp cm = compare(a, b, x, V);
    T_OK("fast pass without a head: KL and head error within the bounds",
         ok && cm.kl <= ASN_SAMPLER_FAST_KL_TOL && cm.head <= ASN_SAMPLER_FAST_HEAD_TOL * cm.scale, "KL %g, head %g",
         cm.kl, cm.head);
    free(x), free(a), free(b);
    asn_sampler_ws_free(ws);
    asn_sampler_ws_free(wf);
    asn_sampler_free(s);
}

static void test_edges(void)
{
    asn_sampler_config c = cfg_net(8, 12, 2, 2, 1);
    asn_sampler *s = net_new(&c, 5, 1.0f);
    asn_sampler_ws *ws = asn_sampler_ws_new(s, 0), *wf = asn_sampler_ws_new(s, 0);
    asn_err e;
    asn_sampler_fast_opts o;
    asn_sampler_fast_defaults(&o);
    o.exact_max = 0; /* the fast pass itself on these small rows */
    asn_sampler_ws_set_fast(wf, &o, &e);
    int V = 500;
    float *x = malloc(V * sizeof(float)), *a = malloc(V * sizeof(float)), *b = malloc(V * sizeof(float));
    for (int i = 0; i < V; i++)
        x[i] = i == 17 ? 2.0f : -INFINITY;
    int rc = asn_sampler_forward_fast(s, wf, NULL, x, V, b, &e);
    asn_sampler_forward(s, ws, NULL, x, V, a, &e);
    int bad = rc != 0 || !isfinite(b[17]) || fabs(a[17] - b[17]) > 1e-5 * fmax(1, fabs(a[17]));
    for (int i = 0; i < V; i++)
        bad |= i != 17 && b[i] != -INFINITY;
    T_OK("fast pass: a single finite token = the exact pass's output, the rest -inf", !bad, "rc %d, out %g vs %g",
         rc, b[17], a[17]);
    x[17] = -INFINITY;
    rc = asn_sampler_forward_fast(s, wf, NULL, x, V, b, &e);
    bad = rc != 0;
    for (int i = 0; i < V; i++)
        bad |= b[i] != -INFINITY;
    T_OK("fast pass: an all -inf row stays all -inf", !bad, "rc %d", rc);
    row_zipf(x, V);
    x[3] = NAN;
    memset(b, 0, V * sizeof(float));
    T_OK("fast pass: NaN logit is an error, output untouched",
         asn_sampler_forward_fast(s, wf, NULL, x, V, b, &e) < 0 && b[0] == 0.0f, "accepted");
    x[3] = INFINITY;
    T_OK("fast pass: +inf logit is an error", asn_sampler_forward_fast(s, wf, NULL, x, V, b, &e) < 0, "accepted");
    /* in place */
    row_zipf(x, V);
    asn_sampler_forward_fast(s, wf, NULL, x, V, b, &e);
    asn_sampler_forward_fast(s, wf, NULL, x, V, x, &e);
    T_OK("fast pass: in place (out = logits)", !memcmp(x, b, V * sizeof(float)), "differs");
    /* a workspace of another sampler */
    asn_sampler_config c2 = cfg_net(16, 24, 2, 2, 1);
    asn_sampler *s2 = net_new(&c2, 5, 1.0f);
    T_OK("fast pass: a workspace made for another sampler is an error",
         asn_sampler_forward_fast(s2, wf, NULL, x, V, b, &e) < 0, "accepted");
    asn_sampler_free(s2);
    /* options */
    asn_sampler_fast_defaults(&o);
    o.bin_width = 0.0f;
    T_OK("fast pass options: bin_width 0 is an error", asn_sampler_ws_set_fast(wf, &o, &e) < 0, "accepted");
    asn_sampler_fast_defaults(&o);
    o.head_max = -1;
    T_OK("fast pass options: head_max < 0 is an error", asn_sampler_ws_set_fast(wf, &o, &e) < 0, "accepted");
    asn_sampler_fast_defaults(&o);
    o.head_range = NAN;
    T_OK("fast pass options: head_range NaN is an error", asn_sampler_ws_set_fast(wf, &o, &e) < 0, "accepted");
    asn_sampler_fast_defaults(&o);
    o.exact_max = -1;
    T_OK("fast pass options: exact_max < 0 is an error", asn_sampler_ws_set_fast(wf, &o, &e) < 0, "accepted");
    free(x), free(a), free(b);
    asn_sampler_ws_free(ws);
    asn_sampler_ws_free(wf);
    asn_sampler_free(s);
}

/* LocalProbabilityTransform and SimpleDistributionAwareTransform: the
 * per-token fast pass (interpolation of the row's function of lp, see
 * pertoken.h) against the exact pass, on rows of 32k and 128k logits, for the
 * reference initialization, weights 3 times larger, and a truncation moved
 * to cut sharply 3 nats below the top (scale 4), as a trained sampler's may. */
static void row_random(float *x, int V) /* no structure: N(0, 2) logits */
{
    for (int i = 0; i < V; i++)
        x[i] = (float)(2.0 * gauss());
}

static asn_sampler *pt_new(asn_sampler_arch arch, int dyn, uint64_t seed, float gain, int sharp)
{
    asn_sampler_config c = {arch, 8, dyn, 0, 0, 0, 0, 0};
    asn_sampler *s = net_new(&c, seed, gain);
    if (!s || !sharp)
        return s;
    float *p = asn_sampler_params(s);
    for (int t = 0; t < asn_sampler_n_tensors(s); t++) {
        const asn_sampler_tensor *ti = asn_sampler_tensor_at(s, t);
        if (!strcmp(ti->name, "truncation_scale"))
            p[ti->offset] = 4.0f;
        else if (!strcmp(ti->name, "truncation_threshold"))
            p[ti->offset] = 12.0f;
        else if (!strcmp(ti->name, "truncation_params")) { /* softplus(raw): scale 4, threshold 12 */
            p[ti->offset] = (float)log(expm1(4.0));
            p[ti->offset + 1] = (float)log(expm1(12.0));
        }
    }
    return s;
}

static void test_pertoken_archs(asn_pool *p2, asn_pool *p3)
{
    struct {
        const char *what;
        asn_sampler_arch arch;
        int dyn, sharp;
        float gain;
    } nets[] = {
        {"Local", ASN_SAMPLER_LOCAL, 0, 0, 1.0f},
        {"Local, weights x3", ASN_SAMPLER_LOCAL, 0, 0, 3.0f},
        {"Local, weights x3, sharp cut", ASN_SAMPLER_LOCAL, 0, 1, 3.0f},
        {"Dist", ASN_SAMPLER_DIST, 0, 0, 1.0f},
        {"Dist dynamic, weights x3", ASN_SAMPLER_DIST, 1, 0, 3.0f},
        {"Dist, weights x3, sharp cut", ASN_SAMPLER_DIST, 0, 1, 3.0f},
    };
    static const row_kind rows[] = {{"Zipf", row_zipf},         {"random", row_random},
                                    {"flat tail", row_flat_tail}, {"-inf tokens", row_inf},
                                    {"one dominant", row_peak},   {"wide range", row_wide},
                                    {"extreme range", row_extreme}, {"all equal", row_equal}};
    int n_rows = (int)(sizeof rows / sizeof rows[0]);
    pt_head_rel = 1;
    for (int k = 0; k < (int)(sizeof nets / sizeof nets[0]); k++) {
        asn_sampler *s = pt_new(nets[k].arch, nets[k].dyn, 200 + k, nets[k].gain, nets[k].sharp);
        T_OK("per-token sampler made", s != NULL, "failed");
        if (!s)
            continue;
        for (int vi = 0; vi < 2; vi++) {
            int V = vi ? 128000 : 32000;
            float *x = malloc(V * sizeof(float));
            for (int r = 0; r < (vi ? 2 : n_rows); r++) { /* 128k: Zipf and random rows */
                char label[200];
                snprintf(label, sizeof label, "fast pass, %s, %s row, V = %d", nets[k].what, rows[r].name, V);
                rows[r].fill(x, V);
                check_row(label, s, x, V, p2, p3);
            }
            free(x);
        }
        /* exact_max: rows of few finite tokens take the exact pass */
        asn_err e;
        asn_sampler_ws *ws = asn_sampler_ws_new(s, 0), *wf = asn_sampler_ws_new(s, 0);
        int V = 3000;
        float *x = malloc(V * sizeof(float)), *a = malloc(V * sizeof(float)), *b = malloc(V * sizeof(float));
        row_zipf(x, V);
        asn_sampler_forward(s, ws, NULL, x, V, a, &e);
        asn_sampler_fast_opts o;
        asn_sampler_fast_defaults(&o);
        o.exact_max = V;
        asn_sampler_ws_set_fast(wf, &o, &e);
        asn_sampler_forward_fast(s, wf, NULL, x, V, b, &e);
        char name[200];
        snprintf(name, sizeof name, "%s: at most exact_max finite tokens: the exact pass's bits", nets[k].what);
        T_OK(name, !memcmp(a, b, V * sizeof(float)), "outputs differ");
        o.exact_max = V - 1;
        asn_sampler_ws_set_fast(wf, &o, &e);
        asn_sampler_forward_fast(s, wf, NULL, x, V, b, &e);
        snprintf(name, sizeof name, "%s: more than exact_max finite tokens: the fast pass (not the same bits)",
                 nets[k].what);
        T_OK(name, memcmp(a, b, V * sizeof(float)) != 0, "the exact pass's bits");
        /* in place (the learned processor's use), head tokens included */
        asn_sampler_forward_fast(s, wf, NULL, x, V, x, &e);
        snprintf(name, sizeof name, "%s: the fast pass in place (out = logits) gives the same bits", nets[k].what);
        T_OK(name, !memcmp(x, b, V * sizeof(float)), "differs");
        free(x), free(a), free(b);
        asn_sampler_ws_free(ws);
        asn_sampler_ws_free(wf);
        asn_sampler_free(s);
    }
}

int main(void)
{
    openblas_set_num_threads(1);
    asn_pool *p2 = asn_pool_new(2), *p3 = asn_pool_new(3);
    test_rows(p2, p3);
    test_model_rows(p2, p3);
    test_all_head();
    test_edges();
    rows_p32 = rows_p64 = 0;
    test_pertoken_archs(p2, p3);
    /* both sizes of the per-token passes' table (pertoken.c,
     * asn_nn_pertoken_fast_setup) were checked above */
    T_OK("Local and Dist rows took 32 cubic pieces (their fit checked) on some rows, 64 on others",
         rows_p32 > 0 && rows_p64 > 0, "%d rows with 32, %d with 64", rows_p32, rows_p64);
    asn_pool_free(p2);
    asn_pool_free(p3);
    T_DONE();
}
