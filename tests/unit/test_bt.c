/* test_bt.c — Swiss pairing, Bradley-Terry ratings and the judges
 * (asn/bt.h). The ratings are checked against independent references:
 * scipy's optimizer and a plain-Python transcription of the reference
 * project's gradient ascent (tests/fixtures/bt/cases.json, from
 * make_bt_fixtures.py); against players of known strength; and through the
 * gradient at the solution. The judges run on the tiny judges of
 * tests/data/rank/ (whose answers are known) and on tiny-spm-q8_0. */
#include "asn/bt.h"
#include "asn/chat.h"
#include "asn/vocab.h"
#include "t.h"

#include <jansson.h>
#include <stdlib.h>

static char path_buf[4096];
static const char *data_path(const char *name)
{
    const char *root = getenv("ASN_ROOT");
    snprintf(path_buf, sizeof path_buf, "%s/tests/%s", root ? root : ".", name);
    return path_buf;
}

/* Ratings agree with the fit of scipy and with the reference algorithm. */
#define MLE_TOL 1e-7 /* scipy stops at a gradient of 1e-13; asn at 1e-10 */
#define REF_TOL 1e-9 /* the same 1000 steps in the same order */

static void test_fixtures(void)
{
    json_error_t je;
    json_t *all = json_load_file(data_path("fixtures/bt/cases.json"), 0, &je);
    T_OK("bt fixtures load", json_is_array(all), "tests/fixtures/bt/cases.json: %s", je.text);
    size_t ci;
    json_t *c;
    json_array_foreach(all, ci, c) {
        const char *name = json_string_value(json_object_get(c, "name"));
        int n = (int)json_integer_value(json_object_get(c, "n"));
        double prior = json_number_value(json_object_get(c, "prior"));
        json_t *gs = json_object_get(c, "games");
        size_t m = json_array_size(gs), k;
        asn_bt_game *g = malloc((m + 1) * sizeof *g);
        json_t *x;
        json_array_foreach(gs, k, x) g[k] = (asn_bt_game){(int)json_integer_value(json_array_get(x, 0)),
                                                           (int)json_integer_value(json_array_get(x, 1)),
                                                           json_number_value(json_array_get(x, 2))};
        double *r = malloc((size_t)n * sizeof *r), worst = 0, *grad = malloc((size_t)n * sizeof *grad);
        asn_bt_info info;
        asn_err e = {{0}};
        int rc = asn_bt_fit(n, g, m, prior, r, &info, &e);
        char tn[256];
        snprintf(tn, sizeof tn, "bt mle %s: fit succeeds", name);
        T_OK(tn, rc == 0, "%s", e.msg);
        int at = 0;
        for (int i = 0; i < n; i++) {
            double d = fabs(r[i] - json_number_value(json_array_get(json_object_get(c, "mle"), (size_t)i)));
            if (d > worst)
                worst = d, at = i;
        }
        snprintf(tn, sizeof tn, "bt mle %s: ratings equal scipy's within %g", name, MLE_TOL);
        T_OK(tn, worst <= MLE_TOL, "player %d off by %.3g (%d Newton steps)", at, worst, info.iterations);
        snprintf(tn, sizeof tn, "bt mle %s: converged (gradient <= %g) in few steps", name, ASN_BT_TOL);
        T_OK(tn, info.grad_max <= ASN_BT_TOL && info.iterations <= 30, "gradient %.3g after %d steps",
             info.grad_max, info.iterations);
        double mean = 0;
        for (int i = 0; i < n; i++)
            mean += r[i];
        snprintf(tn, sizeof tn, "bt mle %s: mean-centered", name);
        T_NEAR(tn, mean / n, 0, 1e-12);
        if (prior == 0) { /* the plain likelihood: its gradient vanishes at the fit */
            asn_bt_objective(n, g, m, 0, r, grad);
            double gm = 0;
            for (int i = 0; i < n; i++)
                gm = fabs(grad[i]) > gm ? fabs(grad[i]) : gm;
            snprintf(tn, sizeof tn, "bt mle %s: log-likelihood gradient ~0 at the solution", name);
            T_OK(tn, gm <= 1e-9, "max |gradient| %.3g", gm);
        }
        asn_bt_fit_reference(n, g, m, r);
        worst = 0;
        int nan_ok = 1;
        for (int i = 0; i < n; i++) {
            json_t *v = json_array_get(json_object_get(c, "reference"), (size_t)i);
            if (json_is_null(v)) {
                nan_ok &= isnan(r[i]);
                continue;
            }
            double d = fabs(r[i] - json_number_value(v));
            if (!(d <= worst))
                worst = d, at = i;
        }
        snprintf(tn, sizeof tn, "bt reference %s: ratings equal the reference algorithm's within %g", name,
                 REF_TOL);
        T_OK(tn, worst <= REF_TOL && nan_ok, "player %d off by %.3g (players without games NaN: %d)", at,
             worst, nan_ok);
        free(g), free(r), free(grad);
    }
    json_decref(all);
}

/* ---------------------------------------------------- simulated players */

static double spearman(const double *a, const double *b, int n)
{
    /* ranks by insertion sort (continuous values: no ties) */
    double *ra = malloc((size_t)n * sizeof *ra), *rb = malloc((size_t)n * sizeof *rb);
    for (int i = 0; i < n; i++) {
        int ca = 0, cb = 0;
        for (int j = 0; j < n; j++)
            ca += a[j] < a[i], cb += b[j] < b[i];
        ra[i] = ca, rb[i] = cb;
    }
    double d2 = 0;
    for (int i = 0; i < n; i++)
        d2 += (ra[i] - rb[i]) * (ra[i] - rb[i]);
    free(ra), free(rb);
    return 1 - 6 * d2 / ((double)n * ((double)n * n - 1));
}

/* A standard normal from two Philox uniforms (Box-Muller). */
static double normal(asn_rng_key k, uint64_t i)
{
    double u = asn_rng_uniform(k, 2 * i, 1), v = asn_rng_uniform(k, 2 * i + 1, 1);
    return sqrt(-2 * log(1 - u)) * cos(2 * M_PI * v);
}

static double sig(double x) { return 1 / (1 + exp(-x)); }

static void test_recovery(void)
{
    asn_rng_key key = asn_rng_key_make(7, "test_bt", "recovery");
    enum { N = 30, ROUNDS = 4 };
    double truth[N], r[N];
    for (int i = 0; i < N; i++)
        truth[i] = 1.5 * normal(key, (uint64_t)i);
    /* every pair plays ROUNDS games, outcome ~ Bernoulli(sigmoid(difference)) */
    asn_bt_game *g = malloc(N * N * ROUNDS * sizeof *g);
    size_t m = 0;
    uint64_t ctr = 0;
    for (int k = 0; k < ROUNDS; k++)
        for (int i = 0; i < N; i++)
            for (int j = i + 1; j < N; j++)
                g[m++] = (asn_bt_game){i, j, asn_rng_uniform(key, ctr++, 0) < sig(truth[i] - truth[j]) ? 1.0 : 0.0};
    asn_err e;
    asn_bt_info info;
    T_OK("bt recovery: all-pairs fit succeeds", asn_bt_fit(N, g, m, ASN_BT_PRIOR_GAMES, r, &info, &e) == 0, "%s",
         e.msg);
    double rho = spearman(truth, r, N);
    T_OK("bt recovery: all pairs x4, Spearman >= 0.9 against the true strengths", rho >= 0.9, "rho %.3f", rho);
    double mt = 0, err = 0;
    for (int i = 0; i < N; i++)
        mt += truth[i] / N;
    for (int i = 0; i < N; i++)
        err += (r[i] - (truth[i] - mt)) * (r[i] - (truth[i] - mt)) / N;
    T_OK("bt recovery: ratings near the true strengths (rms < 0.5)", sqrt(err) < 0.5, "rms %.3f", sqrt(err));
    /* without a prior the log-likelihood's gradient vanishes at the fit */
    double grad[N], gm = 0;
    T_OK("bt recovery: the plain MLE exists here", asn_bt_fit(N, g, m, 0, r, &info, &e) == 0, "%s", e.msg);
    asn_bt_objective(N, g, m, 0, r, grad);
    for (int i = 0; i < N; i++)
        gm = fabs(grad[i]) > gm ? fabs(grad[i]) : gm;
    T_OK("bt recovery: gradient of the log-likelihood ~0 at the MLE", gm <= 1e-9, "max |gradient| %.3g", gm);
    /* ... and it is a maximum: any small move lowers the likelihood */
    double L0 = asn_bt_objective(N, g, m, 0, r, NULL), worse = 1;
    for (int i = 0; i < N; i++) {
        r[i] += 1e-3;
        worse = fmin(worse, L0 - asn_bt_objective(N, g, m, 0, r, NULL));
        r[i] -= 2e-3;
        worse = fmin(worse, L0 - asn_bt_objective(N, g, m, 0, r, NULL));
        r[i] += 1e-3;
    }
    T_OK("bt recovery: the MLE is a maximum", worse > 0, "a move raised the likelihood by %.3g", -worse);
    free(g);

    /* a Swiss tournament with a noisy judge: enough rounds recover the order */
    enum { P = 64 };
    double t2[P], r2[P];
    for (int i = 0; i < P; i++)
        t2[i] = 1.5 * normal(key, 1000 + (uint64_t)i);
    asn_swiss s;
    asn_swiss_init(&s, P, 24, asn_rng_key_make(1, "test_bt", "swiss-recovery"), &e);
    int pairs[P], bye, np;
    asn_bt_game *gs = malloc((size_t)P * 40 * sizeof *gs);
    size_t ng = 0;
    while ((np = asn_swiss_pair(&s, pairs, &bye)) > 0)
        for (int k = 0; k < np; k++) {
            int a = pairs[2 * k], b = pairs[2 * k + 1];
            double sc = sig(t2[a] - t2[b]) + 0.2 * (asn_rng_uniform(key, ctr++, 2) - 0.5);
            sc = sc < 0 ? 0 : sc > 1 ? 1 : sc;
            asn_swiss_record(&s, a, b, sc);
            gs[ng++] = (asn_bt_game){a, b, sc};
        }
    asn_bt_fit(P, gs, ng, ASN_BT_PRIOR_GAMES, r2, NULL, &e);
    rho = spearman(t2, r2, P);
    T_OK("bt recovery: Swiss with 30 rounds and a noisy judge, Spearman >= 0.9", rho >= 0.9, "rho %.3f", rho);
    asn_swiss_free(&s);
    free(gs);
}

static void test_fit_edges(void)
{
    asn_err e;
    double r[4] = {9, 9, 9, 9};
    T_OK("bt: no players", asn_bt_fit(0, NULL, 0, 0.1, r, NULL, &e) == 0, "%s", e.msg);
    T_OK("bt: one player, no games: rating 0", asn_bt_fit(1, NULL, 0, 0.1, r, NULL, &e) == 0 && r[0] == 0,
         "rating %g", r[0]);
    asn_bt_game bad = {0, 0, 0.5};
    T_OK("bt: a player against itself is an error", asn_bt_fit(2, &bad, 1, 0.1, r, NULL, &e) < 0, "accepted");
    asn_bt_game out = {0, 1, 1.5};
    T_OK("bt: a score outside [0, 1] is an error", asn_bt_fit(2, &out, 1, 0.1, r, NULL, &e) < 0, "accepted");
    asn_bt_game sweep[2] = {{0, 1, 1.0}, {1, 0, 0.0}};
    T_OK("bt: without a prior, an unbeaten player has no finite MLE",
         asn_bt_fit(2, sweep, 2, 0, r, NULL, &e) < 0 && strstr(e.msg, "prior"), "got %s", e.msg);
    T_OK("bt: with the prior it is finite",
         asn_bt_fit(2, sweep, 2, ASN_BT_PRIOR_GAMES, r, NULL, &e) == 0 && r[0] > 1 && r[0] < 10 && r[1] == -r[0],
         "ratings %g %g", r[0], r[1]);
    /* the closed form for two players: 2 games won by 0 (prior p):
     * 2 (1 - s(d)) + p (0.5 - s(r0)) = 0 with r1 = -r0, d = 2 r0 */
    double d = r[0] - r[1], lhs = 2 * (1 - sig(d)) + ASN_BT_PRIOR_GAMES * (0.5 - sig(r[0]));
    T_NEAR("bt: two players, closed form", lhs, 0, 1e-10);
    asn_bt_game even = {0, 1, 0.5};
    T_OK("bt: a draw gives equal ratings", asn_bt_fit(2, &even, 1, 0.1, r, NULL, &e) == 0 && r[0] == 0 && r[1] == 0,
         "ratings %g %g", r[0], r[1]);
}

/* ------------------------------------------------------------------ swiss */

/* Checks a round's pairing against the rule, given the standings before it. */
static int check_round(const asn_swiss *s, const double *pts, const int *pairs, int np, int bye, int first,
                       char *why, size_t cap)
{
    int n = s->n, *seen = calloc((size_t)n, sizeof *seen), ok = 1;
    for (int k = 0; k < 2 * np; k++)
        seen[pairs[k]]++;
    if (bye >= 0)
        seen[bye]++;
    for (int i = 0; i < n; i++)
        if (seen[i] != 1)
            ok = 0, snprintf(why, cap, "player %d appears %d times", i, seen[i]);
    if (ok && (np != n / 2 || (bye >= 0) != (n % 2)))
        ok = 0, snprintf(why, cap, "%d pairs, bye %d for %d players", np, bye, n);
    if (ok && !first) {
        /* standings: points down, number up; each pair's first player is
         * the best unpaired; its opponent the best unpaired one it has not
         * met, or the next one when it has met them all */
        int *order = malloc((size_t)n * sizeof *order), *taken = calloc((size_t)n, sizeof *taken);
        for (int i = 0; i < n; i++)
            order[i] = i;
        for (int i = 1; i < n; i++)
            for (int j = i; j > 0 && (pts[order[j]] > pts[order[j - 1]] ||
                                      (pts[order[j]] == pts[order[j - 1]] && order[j] < order[j - 1]));
                 j--) {
                int t = order[j];
                order[j] = order[j - 1];
                order[j - 1] = t;
            }
        for (int k = 0; k < np && ok; k++) {
            int p = pairs[2 * k], q = pairs[2 * k + 1], best = -1, fresh = -1;
            for (int i = 0; i < n; i++)
                if (!taken[order[i]]) {
                    best = order[i];
                    break;
                }
            if (p != best)
                ok = 0, snprintf(why, cap, "pair %d starts with %d, not the leader %d", k, p, best);
            taken[p] = 1;
            for (int i = 0; i < n && fresh < 0; i++)
                if (!taken[order[i]] && !s->met[(size_t)p * n + order[i]])
                    fresh = order[i];
            int next = -1;
            for (int i = 0; i < n && next < 0; i++)
                if (!taken[order[i]])
                    next = order[i];
            if (ok && q != (fresh >= 0 ? fresh : next))
                ok = 0, snprintf(why, cap, "pair %d: %d plays %d, not %d", k, p, q, fresh >= 0 ? fresh : next);
            taken[q] = 1;
        }
        free(order), free(taken);
    }
    free(seen);
    return ok;
}

static void test_swiss(void)
{
    asn_err e;
    asn_swiss s;
    struct { int n, extra, rounds; } rc[] = {{0, 1, 0}, {1, 1, 0}, {2, 1, 2}, {2, 0, 1}, {3, 1, 3},
                                             {8, 1, 4}, {9, 2, 6}, {396, 1, 10}};
    for (size_t i = 0; i < sizeof rc / sizeof *rc; i++) {
        asn_swiss_init(&s, rc[i].n, rc[i].extra, asn_rng_key_make(0, "p", "g"), &e);
        char tn[128];
        snprintf(tn, sizeof tn, "swiss: %d players, %d extra: ceil(log2 n) + extra rounds", rc[i].n, rc[i].extra);
        T_EQ_INT(tn, s.rounds, rc[i].rounds);
        asn_swiss_free(&s);
    }
    T_OK("swiss: negative extra rounds is an error", asn_swiss_init(&s, 4, -1, asn_rng_key_make(0, "p", "g"), &e) < 0,
         "accepted");

    /* many tournaments with a noisy judge: every round follows the rule */
    int bad = 0, rounds_ok = 1, byes_ok = 1;
    char why[256] = "";
    for (int t = 0; t < 200 && !bad; t++) {
        int n = 2 + t % 23;
        asn_rng_key k = asn_rng_key_make((uint64_t)t, "p", "swiss-rule");
        asn_swiss_init(&s, n, t % 3, k, &e);
        int *pairs = malloc((size_t)n * sizeof *pairs), bye, np, played = 0;
        double *pts = malloc((size_t)n * sizeof *pts);
        for (;;) {
            memcpy(pts, s.points, (size_t)n * sizeof *pts);
            int first = s.round == 0;
            double before_bye = 0;
            np = asn_swiss_pair(&s, pairs, &bye);
            if (!np)
                break;
            played++;
            if (bye >= 0)
                before_bye = pts[bye];
            if (!check_round(&s, pts, pairs, np, bye, first, why, sizeof why))
                bad = 1;
            if (bye >= 0 && s.points[bye] != before_bye + 0.5)
                byes_ok = 0;
            for (int q = 0; q < np; q++) {
                int a = pairs[2 * q], b = pairs[2 * q + 1];
                double u = asn_rng_uniform(k, (uint64_t)(1000 + played * n + q), 3);
                asn_swiss_record(&s, a, b, u < 0.1 ? 0.5 : u < 0.55 ? 1.0 : u);
            }
        }
        rounds_ok &= played == s.rounds;
        free(pairs), free(pts);
        asn_swiss_free(&s);
    }
    T_OK("swiss: 200 tournaments, every round paired by the rule (greedy, rematch only when unavoidable for "
         "the player)", !bad, "%s", why);
    T_OK("swiss: every tournament plays its rounds", rounds_ok, "a tournament stopped early");
    T_OK("swiss: a bye is worth 0.5 points", byes_ok, "wrong bye credit");

    /* determinism, and the key matters */
    int p1[16], p2[16], p3[16], b1, b2, b3, diff = 0;
    asn_swiss a, b, c;
    asn_swiss_init(&a, 16, 1, asn_rng_key_make(3, "prompt", "g"), &e);
    asn_swiss_init(&b, 16, 1, asn_rng_key_make(3, "prompt", "g"), &e);
    asn_swiss_init(&c, 16, 1, asn_rng_key_make(4, "prompt", "g"), &e);
    asn_swiss_pair(&a, p1, &b1), asn_swiss_pair(&b, p2, &b2), asn_swiss_pair(&c, p3, &b3);
    for (int i = 0; i < 16; i++)
        diff += p3[i] != p1[i];
    T_OK("swiss: the same key pairs round 1 the same way", !memcmp(p1, p2, sizeof p1) && b1 == b2, "differ");
    T_OK("swiss: another seed pairs round 1 another way", diff > 0, "same pairs");
    asn_swiss_free(&a), asn_swiss_free(&b), asn_swiss_free(&c);

    /* round 1 is uniform: each of 5 players gets the bye about 1/5 of the time */
    int count[5] = {0};
    for (int t = 0; t < 5000; t++) {
        asn_swiss_init(&a, 5, 0, asn_rng_key_make((uint64_t)t, "u", "u"), &e);
        int pr[5], by;
        asn_swiss_pair(&a, pr, &by);
        count[by]++;
        asn_swiss_free(&a);
    }
    int uni = 1;
    for (int i = 0; i < 5; i++)
        uni &= count[i] > 850 && count[i] < 1150;
    T_OK("swiss: round-1 byes uniform over players (5000 draws)", uni, "counts %d %d %d %d %d", count[0],
         count[1], count[2], count[3], count[4]);

    /* two players: round 2 is a rematch; one player: no rounds */
    asn_swiss_init(&a, 2, 1, asn_rng_key_make(0, "p", "g"), &e);
    int pr[2], by, n1 = asn_swiss_pair(&a, pr, &by);
    asn_swiss_record(&a, pr[0], pr[1], 0.75);
    int n2 = asn_swiss_pair(&a, pr, &by), n3 = asn_swiss_pair(&a, pr, &by);
    T_OK("swiss: two players meet twice, then the tournament ends", n1 == 1 && n2 == 1 && n3 == 0 && by == -1,
         "pairs %d %d %d", n1, n2, n3);
    asn_swiss_free(&a);
    asn_swiss_init(&a, 1, 3, asn_rng_key_make(0, "p", "g"), &e);
    T_OK("swiss: one player plays no round", asn_swiss_pair(&a, pr, &by) == 0 && by == -1, "paired");
    asn_swiss_free(&a);
}

/* ---------------------------------------------------------------- judges */

static void test_template(void)
{
    asn_err e;
    asn_judge_tmpl *t = asn_judge_tmpl_parse(asn_judge_default_template, "built-in", &e);
    T_OK("judge template: the built-in one parses", t != NULL, "%s", e.msg);
    char *s = asn_judge_tmpl_format(t, "Q?", "first", "second");
    T_OK("judge template: answers land in order", strstr(s, "[User Question]\nQ?\n") &&
                                                       strstr(s, "Answer]\nfirst\n[The End of Assistant A") &&
                                                       strstr(s, "Answer]\nsecond\n[The End of Assistant B"),
         "%s", s);
    free(s);
    asn_judge_tmpl_free(t);
    /* the shipped file is the built-in text */
    FILE *f = fopen(data_path("../configs/judges/pairwise.txt"), "rb");
    char buf[8192] = "";
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = 0;
    T_OK("judge template: configs/judges/pairwise.txt is the built-in template",
         !strcmp(buf, asn_judge_default_template), "they differ");
    /* the question the research pipeline builds (Python's str.format of its
     * template, recorded in tests/data/compat/; tests/cli/compat_reference.sh
     * checks the recording) */
    char *in = NULL, *ra = NULL, *rb = NULL, *want = NULL;
    size_t ln;
    asn_read_file(data_path("data/compat/judge-input.txt"), &in, &ln, &e);
    asn_read_file(data_path("data/compat/judge-a.txt"), &ra, &ln, &e);
    asn_read_file(data_path("data/compat/judge-b.txt"), &rb, &ln, &e);
    asn_read_file(data_path("data/compat/judge-question.txt"), &want, &ln, &e);
    t = asn_judge_tmpl_parse(asn_judge_default_template, "built-in", &e);
    s = in && ra && rb && want && t ? asn_judge_tmpl_format(t, in, ra, rb) : NULL;
    T_OK("judge template: the question is byte-identical to the research pipeline's", s && !strcmp(s, want),
         "%s", s ? s : "(test data missing)");
    free(s), free(in), free(ra), free(rb), free(want);
    asn_judge_tmpl_free(t);
    t = asn_judge_tmpl_parse("{{x}} {input} {{ {response_a}}} {response_b}", "t", &e);
    s = t ? asn_judge_tmpl_format(t, "I", "a{b}", "B") : NULL;
    T_EQ_STR("judge template: braces and values", s, "{x} I { a{b}} B");
    free(s);
    asn_judge_tmpl_free(t);
    struct { const char *text, *want; } bad[] = {
        {"{input} {response_a}", "no {response_b}"},
        {"{input} {response_b} {response_a}", "before"},
        {"{input} {response_a} {response_b} {input}", "twice"},
        {"{input} {response_a} {response_b} {answer}", "unknown placeholder \"{answer}\""},
        {"{input} {response_a} {response_b} }", "single '}'"},
        {"{input}\n{response_a}\n{response_b} {", "t:3: unknown placeholder"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        t = asn_judge_tmpl_parse(bad[i].text, "t", &e);
        char tn[128];
        snprintf(tn, sizeof tn, "judge template: bad template %zu is an error naming the problem", i);
        T_OK(tn, !t && strstr(e.msg, bad[i].want), "got %s", t ? "(accepted)" : e.msg);
        asn_judge_tmpl_free(t);
    }
}

static void test_pair_score(void)
{
    T_NEAR("ll pair score: sigmoid((a - b) / tau)", asn_ll_pair_score(-1.0, -1.2, 0.1), sig(2.0), 1e-15);
    T_NEAR("ll pair score: antisymmetric", asn_ll_pair_score(-1.2, -1.0, 0.1), 1 - sig(2.0), 1e-15);
    T_OK("ll pair score: no overflow", asn_ll_pair_score(0, -1e6, 1e-3) == 1 && asn_ll_pair_score(-1e6, 0, 1e-3) == 0,
         "got %g", asn_ll_pair_score(0, -1e6, 1e-3));
    T_OK("ll pair score: an empty answer (NaN) loses; two draw",
         asn_ll_pair_score(NAN, -5, 0.1) == 0 && asn_ll_pair_score(-5, NAN, 0.1) == 1 &&
             asn_ll_pair_score(NAN, NAN, 0.1) == 0.5,
         "wrong");
}

static void test_pairwise_models(void)
{
    asn_err e;
    asn_model *ma = asn_model_load(data_path("data/rank/judge-always-a.gguf"), &e);
    asn_model *mb = asn_model_load(data_path("data/rank/judge-bang.gguf"), &e);
    asn_model *mn = asn_model_load(data_path("data/rank/judge-no-b.gguf"), &e);
    T_OK("pairwise: the test judges load", ma && mb && mn, "%s", e.msg);
    if (!ma || !mb || !mn)
        return;
    asn_judge_tmpl *t = asn_judge_tmpl_parse(asn_judge_default_template, "built-in", &e);
    int chat = asn_chat_from_name("chatml");
    asn_pairwise *ja = asn_pairwise_new(ma, chat, t, 3, 0, NULL, &e);
    T_OK("pairwise: judge over the always-A model", ja != NULL, "%s", e.msg);
    asn_pairwise *jn = asn_pairwise_new(mn, chat, t, 3, 0, NULL, &e);
    T_OK("pairwise: a vocabulary without the token \"B\" is an error", !jn && strstr(e.msg, "\"B\""), "got %s",
         jn ? "a judge" : e.msg);
    asn_pair_req req[4] = {{"Which?", "yes", "no"}, {"Which?", "no", "yes"}, {"Which?", "!!!", "..."},
                           {"Other question", "a much longer answer", "b"}};
    double p[4];
    int rc = asn_pairwise_score(ja, req, 4, p, &e);
    T_OK("pairwise: an always-A judge scores every pair 0.5 after both orders",
         rc == 0 && p[0] == 0.5 && p[1] == 0.5 && p[2] == 0.5 && p[3] == 0.5, "rc %d: %.17g %.17g %.17g %.17g",
         rc, p[0], p[1], p[2], p[3]);
    asn_pairwise *jb = asn_pairwise_new(mb, chat, t, 2, 0, NULL, &e);
    asn_pair_req rb[3] = {{"Q", "!!!...", "......"}, {"Q", "......", "!!!..."}, {"Q", "!.....", "!!...."}};
    double pb[3], pb1[3];
    rc = asn_pairwise_score(jb, rb, 3, pb, &e);
    T_OK("pairwise: the '!' judge prefers the answer with more '!', whichever order",
         rc == 0 && pb[0] > 0.5 && pb[1] < 0.5 && pb[2] < 0.5, "%.6f %.6f %.6f (%s)", pb[0], pb[1], pb[2],
         rc ? e.msg : "");
    T_NEAR("pairwise: swapping the pair gives 1 - p", pb[0] + pb[1], 1.0, 1e-12);
    for (int i = 0; i < 3; i++) /* each alone, batch 1: the same numbers */
        asn_pairwise_score(jb, &rb[i], 1, &pb1[i], &e);
    T_OK("pairwise: a pair's score does not depend on its batch", !memcmp(pb, pb1, sizeof pb), "%.17g vs %.17g",
         pb[2], pb1[2]);
    asn_pairwise_free(ja), asn_pairwise_free(jb);
    asn_judge_tmpl_free(t);
    asn_model_free(ma), asn_model_free(mb), asn_model_free(mn);
}

/* The scorer sums expf(x - max) (float, 2 ulp) in double: its log-softmax
 * is within ~1e-7 of a double-precision one. */
#define LL_TOL 1e-6

static void test_llscorer(void)
{
    asn_err e;
    asn_model *m = asn_model_load(data_path("data/models/tiny-spm-q8_0.gguf"), &e);
    const asn_vocab *v = m ? asn_model_vocab(m, &e) : NULL;
    T_OK("ll: tiny-spm-q8_0 loads", v != NULL, "%s", e.msg);
    if (!v)
        return;
    int32_t prompt[] = {1, 15043, 3186}, ans1[] = {29892, 920, 526, 366, 29973}, ans2[] = {2}, ans3[] = {450, 4799};
    asn_ll_req req[4] = {{prompt, 3, ans1, 5}, {prompt, 3, ans2, 1}, {prompt, 3, ans3, 2}, {prompt, 3, ans3, 0}};
    asn_llscorer *s = asn_llscorer_new(m, 2, 0, NULL, &e);
    double mean[4];
    int rc = asn_llscorer_score(s, req, 4, mean, &e);
    T_OK("ll: scores", rc == 0, "%s", e.msg);
    T_OK("ll: no tokens: NaN", isnan(mean[3]), "got %g", mean[3]);
    /* independently: the whole sequence decoded alone, every row */
    int V = asn_model_cfg(m)->n_vocab, ok = 1;
    asn_engine *en = asn_engine_new(m, 0, NULL, &e);
    for (int k = 0; k < 3; k++) {
        int32_t seq[16];
        int L = 3 + req[k].n;
        memcpy(seq, prompt, sizeof prompt);
        memcpy(seq + 3, req[k].tokens, (size_t)req[k].n * sizeof *seq);
        float *lg = malloc((size_t)L * V * sizeof *lg);
        int id = asn_seq_new(en);
        asn_batch_item it = {id, seq, L, lg, 1, NULL, NULL};
        asn_engine_decode(en, &it, 1, &e);
        double sum = 0;
        for (int i = 3; i < L; i++) {
            const float *row = lg + (size_t)(i - 1) * V;
            double mx = -INFINITY, z = 0;
            for (int j = 0; j < V; j++)
                mx = row[j] > mx ? row[j] : mx;
            for (int j = 0; j < V; j++)
                z += exp(row[j] - mx);
            sum += row[seq[i]] - mx - log(z);
        }
        ok &= fabs(sum / req[k].n - mean[k]) <= LL_TOL;
        asn_seq_free(en, id);
        free(lg);
    }
    T_OK("ll: mean log-probabilities equal a plain decode of prompt + answer (double log-softmax, 1e-6)", ok,
         "%.15g", mean[0]);
    int32_t badtok[] = {40000};
    asn_ll_req rb = {prompt, 3, badtok, 1};
    T_OK("ll: a token id outside the vocabulary is an error", asn_llscorer_score(s, &rb, 1, mean, &e) < 0 &&
                                                                  strstr(e.msg, "40000"), "got %s", e.msg);
    asn_engine_free(en);
    asn_llscorer_free(s);
    asn_model_free(m);
}

int main(void)
{
    test_fixtures();
    test_recovery();
    test_fit_edges();
    test_swiss();
    test_template();
    test_pair_score();
    test_pairwise_models();
    test_llscorer();
    T_DONE();
}
