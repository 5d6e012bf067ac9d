/* test_sampling.c — the sampling library against
 *  1. every vector of tests/data/sampling/vectors.jsonl (float32 torch and
 *     llama.cpp arithmetic; the pass rule is pass_rule below, with ties as
 *     docs/sampling.md's Arithmetic section treats them);
 *  2. edge cases: ties, one finite token, V = 1, NaN/+inf input, top_k > V,
 *     top_p = 1, penalties computed by hand, greedy, min_new_tokens;
 *  3. a naive full-sort implementation of the HF truncation rules, written
 *     here straight from the rules, on large rows (V = 32000 and 128000),
 *     where the library collects only the top of the row;
 *  4. the token draw (inverse CDF, frequencies) and asn_expf's accuracy. */
#include "asn/json.h"
#include "asn/sampling.h"
#include "asn/vexp.h"
#include "t.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>

static asn_workspace *ws;

/* ------------------------------------------------------------- vectors */

static int pass_rule(const float *got, const json_t *exp, int V, int ambiguous, char *why, size_t n)
{
    for (int i = 0; i < V; i++) {
        json_t *x = json_array_get(exp, (size_t)i);
        int exp_removed = json_is_null(x), got_removed = got[i] == -INFINITY;
        if (exp_removed != got_removed) {
            if (ambiguous)
                continue;
            snprintf(why, n, "token %d: expected %s, got %s", i, exp_removed ? "removed" : "kept",
                     got_removed ? "removed" : "kept");
            return 0;
        }
        if (exp_removed)
            continue;
        double e;
        asn_json_number(x, &e);
        float ef = (float)e;
        if (!(fabsf(got[i] - ef) <= 1e-5f * fmaxf(fabsf(ef), 1e-6f))) {
            snprintf(why, n, "token %d: expected %.9g, got %.9g", i, ef, got[i]);
            return 0;
        }
    }
    return 1;
}

static void test_vectors(void)
{
    const char *root = getenv("ASN_ROOT");
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/data/sampling/vectors.jsonl", root ? root : ".");
    asn_err e;
    asn_jsonl *r = asn_jsonl_open(path, &e);
    T_OK("vectors file opens", r != NULL, "%s", r ? "" : e.msg);
    if (!r)
        return;
    json_t *rec;
    int n = 0;
    float *row = NULL;
    int32_t *ids = NULL;
    while (asn_jsonl_next(r, &rec, &e) == 1) {
        n++;
        const char *name = json_string_value(json_object_get(rec, "name"));
        json_t *lg = json_object_get(rec, "logits"), *ex = json_object_get(rec, "expected");
        json_t *hist = json_object_get(rec, "input_ids");
        int V = (int)json_array_size(lg);
        row = realloc(row, (size_t)V * sizeof *row);
        for (int i = 0; i < V; i++) {
            double d;
            json_t *x = json_array_get(lg, (size_t)i);
            row[i] = json_is_null(x) ? -INFINITY : (asn_json_number(x, &d), (float)d);
        }
        int nh = (int)json_array_size(hist);
        ids = realloc(ids, (size_t)(nh + 1) * sizeof *ids);
        for (int i = 0; i < nh; i++)
            ids[i] = (int32_t)json_integer_value(json_array_get(hist, (size_t)i));
        asn_heuristic h;
        asn_seq_ctx ctx = {.ids = ids, .n_ids = nh};
        char why[1100] = "";
        int ok = asn_heuristic_init(&h, name, json_object_get(rec, "processors"), &e) == 0;
        if (!ok)
            snprintf(why, sizeof why, "%s", e.msg);
        else if (asn_pipeline_apply(&h, row, V, &ctx, NULL, ws, &e))
            ok = 0, snprintf(why, sizeof why, "%s", e.msg);
        else
            ok = pass_rule(row, ex, V, json_is_true(json_object_get(rec, "ambiguous")), why, sizeof why);
        char tname[300];
        snprintf(tname, sizeof tname, "vector %s", name);
        T_OK(tname, ok, "%s", why);
        if (h.procs)
            asn_heuristic_clear(&h);
        json_decref(rec);
    }
    asn_jsonl_close(r);
    free(row);
    free(ids);
    T_OK("all 570 vectors read", n == 570, "read %d", n);
}

/* ---------------------------------------------------------- edge cases */

static asn_heuristic make(const char *json)
{
    asn_heuristic h;
    asn_err e;
    json_error_t je;
    json_t *v = json_loads(json, 0, &je);
    if (!v || asn_heuristic_init(&h, "t", v, &e)) {
        printf("not ok - building %s: %s\n", json, v ? e.msg : je.text);
        exit(1);
    }
    json_decref(v);
    return h;
}

static int apply(const char *json, float *row, int V, const asn_seq_ctx *ctx, asn_err *e)
{
    asn_heuristic h = make(json);
    int rc = asn_pipeline_apply(&h, row, V, ctx, NULL, ws, e);
    asn_heuristic_clear(&h);
    return rc;
}

static int count_kept(const float *row, int V)
{
    int k = 0;
    for (int i = 0; i < V; i++)
        k += row[i] != -INFINITY;
    return k;
}

static const char *ALL_FILTERS[] = {
    "[{\"name\":\"top_k\",\"params\":{\"top_k\":3}}]",
    "[{\"name\":\"top_p\",\"params\":{\"top_p\":0.5}}]",
    "[{\"name\":\"min_p\",\"params\":{\"min_p\":0.5}}]",
    "[{\"name\":\"typical\",\"params\":{\"mass\":0.5}}]",
    "[{\"name\":\"epsilon\",\"params\":{\"epsilon\":0.5}}]",
    "[{\"name\":\"eta\",\"params\":{\"epsilon\":0.5}}]",
    "[{\"name\":\"greedy\"}]",
    "[{\"name\":\"llama_top_k\",\"params\":{\"top_k\":2}}]",
    "[{\"name\":\"llama_top_p\",\"params\":{\"top_p\":0.5}}]",
    "[{\"name\":\"llama_min_p\",\"params\":{\"min_p\":0.5}}]",
    "[{\"name\":\"llama_typical\",\"params\":{\"typ_p\":0.5}}]",
    "[{\"name\":\"top_n_sigma\",\"params\":{\"top_n_sigma\":0.5}}]",
    "[{\"name\":\"xtc\",\"params\":{\"xtc_probability\":1.0,\"xtc_threshold\":0.1}}]",
    "[{\"name\":\"mirostat_v2\",\"params\":{\"tau\":1.0,\"eta\":0.1}}]",
    NULL,
};

static void test_edges(void)
{
    asn_err e;
    char name[300];
    /* one finite token and V = 1: every filter keeps it */
    for (int k = 0; ALL_FILTERS[k]; k++) {
        float row[6] = {-INFINITY, -INFINITY, -INFINITY, 0.25f, -INFINITY, -INFINITY};
        int rc = apply(ALL_FILTERS[k], row, 6, NULL, &e);
        snprintf(name, sizeof name, "single finite token survives %s", ALL_FILTERS[k]);
        T_OK(name, rc == 0 && count_kept(row, 6) == 1 && row[3] == 0.25f, "rc %d kept %d", rc, count_kept(row, 6));
        float one[1] = {-3.0f};
        rc = apply(ALL_FILTERS[k], one, 1, NULL, &e);
        snprintf(name, sizeof name, "V=1 %s", ALL_FILTERS[k]);
        T_OK(name, rc == 0 && one[0] == -3.0f, "rc %d value %g", rc, one[0]);
    }
    /* NaN and +inf are rejected with the token named */
    float bad[4] = {0, 1, NAN, 2};
    int rc = apply(ALL_FILTERS[0], bad, 4, NULL, &e);
    T_OK("NaN input is a clear error", rc == -1 && strstr(e.msg, "token 2 is NaN"), "rc %d \"%s\"", rc, e.msg);
    float inf[3] = {0, INFINITY, 2};
    rc = apply(ALL_FILTERS[0], inf, 3, NULL, &e);
    T_OK("+inf input is a clear error", rc == -1 && strstr(e.msg, "token 1 is +inf"), "rc %d \"%s\"", rc, e.msg);
    float none[3] = {-INFINITY, -INFINITY, -INFINITY};
    rc = apply(ALL_FILTERS[0], none, 3, NULL, &e);
    T_OK("all -inf input is a clear error", rc == -1 && strstr(e.msg, "every logit is -inf"), "rc %d \"%s\"", rc, e.msg);

    /* ties: HF top_k keeps the whole tie group; llama's keeps exactly k */
    float ties[6] = {1, 3, 3, 3, 0, 2};
    apply("[{\"name\":\"top_k\",\"params\":{\"top_k\":2}}]", ties, 6, NULL, &e);
    T_EQ_INT("top_k keeps every token tied with the k-th", count_kept(ties, 6), 3);
    float ties2[6] = {1, 3, 3, 3, 0, 2};
    apply("[{\"name\":\"llama_top_k\",\"params\":{\"top_k\":2}}]", ties2, 6, NULL, &e);
    T_EQ_INT("llama_top_k keeps exactly k", count_kept(ties2, 6), 2);
    float big[4] = {1, 2, 3, 4};
    apply("[{\"name\":\"top_k\",\"params\":{\"top_k\":100}}]", big, 4, NULL, &e);
    T_EQ_INT("top_k larger than V is a no-op", count_kept(big, 4), 4);
    /* top_p = 1 removes only tokens whose float probability is exactly 0 */
    float tp1[5] = {0, -200, 1, -50, 2};
    apply("[{\"name\":\"top_p\",\"params\":{\"top_p\":1}}]", tp1, 5, NULL, &e);
    T_OK("top_p = 1 removes only zero-probability tokens",
         tp1[1] == -INFINITY && tp1[3] == -50 && count_kept(tp1, 5) == 4, "kept %d", count_kept(tp1, 5));
    /* greedy: the first of tied maxima */
    float g[5] = {1, 5, 2, 5, 0};
    apply("[{\"name\":\"greedy\",\"params\":{}}]", g, 5, NULL, &e);
    T_OK("greedy keeps the first maximum", g[1] == 5 && count_kept(g, 5) == 1, "kept %d", count_kept(g, 5));

    /* presence/frequency penalties count generated tokens only */
    int32_t hist[] = {0, 0, 1, /* prompt */ 1, 2, 2, 2};
    asn_seq_ctx ctx = {.ids = hist, .n_ids = 7, .n_prompt = 3};
    float pr[4] = {1, 1, 1, 1};
    apply("[{\"name\":\"presence_penalty\",\"params\":{\"penalty\":0.5}}]", pr, 4, &ctx, &e);
    T_OK("presence_penalty: generated tokens lose the penalty once, prompt ignored",
         pr[0] == 1 && pr[1] == 0.5f && pr[2] == 0.5f && pr[3] == 1, "%g %g %g %g", pr[0], pr[1], pr[2], pr[3]);
    float fr[4] = {1, 1, 1, 1};
    apply("[{\"name\":\"frequency_penalty\",\"params\":{\"penalty\":0.25}}]", fr, 4, &ctx, &e);
    T_OK("frequency_penalty: penalty times the count in the generation",
         fr[0] == 1 && fr[1] == 0.75f && fr[2] == 0.25f && fr[3] == 1, "%g %g %g %g", fr[0], fr[1], fr[2], fr[3]);
    float fr2[4] = {1, 1, 1, 1};
    apply("[{\"name\":\"frequency_penalty\",\"params\":{\"penalty\":0.25}}]", fr2, 4, &ctx, &e);
    T_OK("penalty counts do not leak between calls", fr2[2] == 0.25f, "%g", fr2[2]);
    /* min_new_tokens takes the prompt length and EOS ids from the context */
    int32_t eos[] = {3};
    asn_seq_ctx c2 = {.ids = hist, .n_ids = 7, .n_prompt = 3, .eos = eos, .n_eos = 1};
    float mn[4] = {1, 1, 1, 1};
    apply("[{\"name\":\"min_new_tokens\",\"params\":{\"min_new_tokens\":5}}]", mn, 4, &c2, &e);
    T_OK("min_new_tokens masks the context's EOS before N new tokens", mn[3] == -INFINITY && count_kept(mn, 4) == 3, "kept %d", count_kept(mn, 4));
    float mn2[4] = {1, 1, 1, 1};
    apply("[{\"name\":\"min_new_tokens\",\"params\":{\"min_new_tokens\":4}}]", mn2, 4, &c2, &e);
    T_EQ_INT("min_new_tokens allows EOS at N new tokens", count_kept(mn2, 4), 4);
    float mn3[1] = {1};
    int32_t eos0[] = {0};
    asn_seq_ctx c3 = {.ids = hist, .n_ids = 7, .n_prompt = 3, .eos = eos0, .n_eos = 1};
    rc = apply("[{\"name\":\"min_new_tokens\",\"params\":{\"min_new_tokens\":9}}]", mn3, 1, &c3, &e);
    T_OK("masking every token leaves an empty row, and the draw says so",
         rc == 0 && mn3[0] == -INFINITY && asn_sample_row(mn3, 1, 0.5) == -1, "rc %d", rc);
}

/* --------------------------------------------------- parameter checking */

static void test_validation(void)
{
    static const struct {
        const char *procs, *needle;
    } cases[] = {
        {"[{\"name\":\"temperature\",\"params\":{\"temperature\":0}}]", "\"temperature\" must be > 0"},
        {"[{\"name\":\"top_k\",\"params\":{\"top_k\":2.5}}]", "\"top_k\" must be an integer"},
        {"[{\"name\":\"top_k\",\"params\":{\"top_k\":0}}]", "\"top_k\" must be > 0"},
        {"[{\"name\":\"top_p\",\"params\":{\"top_p\":1.5}}]", "\"top_p\" must be >= 0 and <= 1"},
        {"[{\"name\":\"min_p\",\"params\":{\"min_p\":-0.1}}]", "\"min_p\" must be >= 0 and <= 1"},
        {"[{\"name\":\"typical\",\"params\":{\"mass\":1}}]", "\"mass\" must be > 0 and < 1"},
        {"[{\"name\":\"epsilon\",\"params\":{\"epsilon\":0}}]", "\"epsilon\" must be > 0 and < 1"},
        {"[{\"name\":\"top_p\",\"params\":{\"top_p\":0.5,\"min_tokens_to_keep\":0}}]", "\"min_tokens_to_keep\" must be >= 1"},
        {"[{\"name\":\"repetition_penalty\",\"params\":{\"penalty\":-1}}]", "\"penalty\" must be > 0"},
        {"[{\"name\":\"no_repeat_ngram\",\"params\":{\"ngram_size\":0}}]", "\"ngram_size\" must be > 0"},
        {"[{\"name\":\"presence_penalty\",\"params\":{\"penalty\":3}}]", "must be >= -2 and <= 2"},
        {"[{\"name\":\"top_p\",\"params\":{\"p\":0.5}}]", "unknown parameter \"p\""},
        {"[{\"name\":\"top_p\",\"params\":{}}]", "\"top_p\" is required"},
        {"[{\"name\":\"nucleus\",\"params\":{}}]", "unknown processor \"nucleus\""},
        {"[{\"name\":\"top_p\",\"params\":{\"top_p\":\"0.5\"}}]", "must be a number, not string"},
        {"[{\"name\":\"min_new_tokens\",\"params\":{\"min_new_tokens\":5,\"eos_token_id\":4294967297}}]", "token ids (integers >= 0)"},
        {"[{\"name\":\"min_new_tokens\",\"params\":{\"min_new_tokens\":5,\"eos_token_id\":-1}}]", "token ids (integers >= 0)"},
        {"[{\"name\":\"top_p\",\"parmas\":{\"top_p\":0.5}}]", "unknown field \"parmas\""},
        {"[{\"name\":\"mirostat_v2\",\"params\":{\"tau\":5,\"eta\":0.1}},{\"name\":\"temperature\",\"params\":{\"temperature\":1}}]", "must be the last"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        asn_heuristic h;
        asn_err e = {""};
        json_t *v = json_loads(cases[i].procs, 0, NULL);
        int rc = asn_heuristic_init(&h, "t", v, &e);
        json_decref(v);
        char name[200];
        snprintf(name, sizeof name, "rejects %s", cases[i].procs);
        T_OK(name, rc == -1 && strstr(e.msg, cases[i].needle), "rc %d, message \"%s\"", rc, e.msg);
    }
    /* an integer is fine where HF demands a float; epsilon's mtk is truncated */
    asn_heuristic h = make("[{\"name\":\"temperature\",\"params\":{\"temperature\":1}},"
                           "{\"name\":\"epsilon\",\"params\":{\"epsilon\":0.1,\"min_tokens_to_keep\":2.7}}]");
    json_t *pj = asn_proc_params_json(&h.procs[1]);
    char *pt = json_dumps(pj, JSON_SORT_KEYS | JSON_COMPACT);
    T_EQ_STR("temperature: 1 accepted; epsilon min_tokens_to_keep 2.7 -> 2", pt,
             "{\"epsilon\":0.10000000000000001,\"min_tokens_to_keep\":2}");
    free(pt);
    json_decref(pj);
    asn_heuristic_clear(&h);
}

#include "naive.h"

static double gauss(unsigned *st)
{
    double u1 = (rand_r(st) + 1.0) / ((double)RAND_MAX + 2), u2 = (rand_r(st) + 1.0) / ((double)RAND_MAX + 2);
    return sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
}

/* Zipf(1.1) log-probabilities plus noise, permuted; `scale` mimics temperature. */
static void lm_row(float *x, int V, unsigned seed, float scale, int neg_inf_every)
{
    unsigned st = seed;
    for (int i = 0; i < V; i++)
        x[i] = (float)((-1.1 * log(i + 1.0) + gauss(&st)) / scale);
    for (int i = V - 1; i > 0; i--) {
        int j = rand_r(&st) % (i + 1);
        float t = x[i];
        x[i] = x[j];
        x[j] = t;
    }
    if (neg_inf_every)
        for (int i = 0; i < V; i += neg_inf_every)
            x[i] = -INFINITY;
}

static int same_mask(const float *a, const float *b, int V, int *first)
{
    for (int i = 0; i < V; i++)
        if ((a[i] == -INFINITY) != (b[i] == -INFINITY)) {
            *first = i;
            return 0;
        }
    return 1;
}

static void test_against_naive(void)
{
    static const int Vs[] = {32000, 128000};
    static const float scales[] = {0.3f, 1.0f, 2.5f};
    char js[200], name[300];
    asn_err e;
    for (int vi_ = 0; vi_ < 2; vi_++)
        for (int si = 0; si < 3; si++)
            for (int kind = 0; kind < 6; kind++) {
                int V = Vs[vi_];
                float *a = malloc((size_t)V * sizeof *a), *b = malloc((size_t)V * sizeof *b);
                static const double tps[] = {0.5, 0.9, 0.98, 1.0}, masses[] = {0.2, 0.9, 0.95};
                static const int ks[] = {1, 20, 128, 5000};
                static const double mps[] = {0.01, 0.1, 0.9, 1.0}, eps[] = {1e-5, 3e-4, 0.01, 0.2};
                int nparams = kind == 1 ? 3 : 4;
                for (int pi = 0; pi < nparams; pi++) {
                    unsigned seed = (unsigned)(1000 * vi_ + 100 * si + 10 * kind + pi);
                    lm_row(a, V, seed, scales[si], pi == 1 ? 7 : 0);
                    memcpy(b, a, (size_t)V * sizeof *a);
                    int mtk = pi == 2 ? 3 : 1;
                    if (kind == 0) {
                        snprintf(js, sizeof js, "[{\"name\":\"top_p\",\"params\":{\"top_p\":%g,\"min_tokens_to_keep\":%d}}]", tps[pi], mtk);
                        naive_top_p(b, V, tps[pi], mtk);
                    } else if (kind == 1) {
                        snprintf(js, sizeof js, "[{\"name\":\"typical\",\"params\":{\"mass\":%g,\"min_tokens_to_keep\":%d}}]", masses[pi], mtk);
                        naive_typical(b, V, masses[pi], mtk);
                    } else if (kind == 2) {
                        snprintf(js, sizeof js, "[{\"name\":\"top_k\",\"params\":{\"top_k\":%d}}]", ks[pi]);
                        naive_top_k(b, V, ks[pi]);
                    } else if (kind == 3) {
                        snprintf(js, sizeof js, "[{\"name\":\"min_p\",\"params\":{\"min_p\":%g,\"min_tokens_to_keep\":%d}}]", mps[pi], mtk);
                        naive_min_p(b, V, mps[pi], mtk);
                    } else {
                        const char *nm = kind == 4 ? "epsilon" : "eta";
                        snprintf(js, sizeof js, "[{\"name\":\"%s\",\"params\":{\"epsilon\":%g,\"min_tokens_to_keep\":%d}}]", nm, eps[pi], mtk);
                        naive_epsilon(b, V, eps[pi], mtk, kind == 5);
                    }
                    apply(js, a, V, NULL, &e);
                    int first = -1;
                    snprintf(name, sizeof name, "V=%d scale %.1f %s equals the full-sort rule (kept %d)", V,
                             scales[si], js, count_kept(b, V));
                    T_OK(name, same_mask(a, b, V, &first), "token %d differs: lib %g, naive %g; kept lib %d naive %d",
                         first, first >= 0 ? a[first] : 0, first >= 0 ? b[first] : 0, count_kept(a, V), count_kept(b, V));
                }
                free(a);
                free(b);
            }
}

/* ------------------------------------------------------------ the draw */

static void test_draw(void)
{
    float row[3] = {logf(0.1f), logf(0.2f), logf(0.7f)};
    T_EQ_INT("draw u=0.05 -> token 0", asn_sample_row(row, 3, 0.05), 0);
    T_EQ_INT("draw u=0.25 -> token 1", asn_sample_row(row, 3, 0.25), 1);
    T_EQ_INT("draw u=0.31 -> token 2", asn_sample_row(row, 3, 0.31), 2);
    T_EQ_INT("draw u->1 -> last token", asn_sample_row(row, 3, 0.9999999999), 2);
    float holes[4] = {-INFINITY, 0, -INFINITY, 0};
    T_EQ_INT("draw skips removed tokens", asn_sample_row(holes, 4, 0.0), 1);
    T_EQ_INT("draw u=0.75 over two equal tokens", asn_sample_row(holes, 4, 0.75), 3);

    /* frequencies of 200k draws keyed by step match the probabilities */
    asn_rng_key k = asn_rng_key_make(42, "prompt", "heur");
    int cnt[3] = {0};
    for (int s = 0; s < 200000; s++)
        cnt[asn_sample_row(row, 3, asn_rng_uniform(k, (uint64_t)s, ASN_STREAM_DRAW))]++;
    T_NEAR("draw frequency of p=0.1", cnt[0] / 200000.0, 0.1, 0.005);
    T_NEAR("draw frequency of p=0.7", cnt[2] / 200000.0, 0.7, 0.005);

    /* mirostat v2: mu starts at 2 tau, then mu -= eta (surprise - tau) */
    asn_heuristic h = make("[{\"name\":\"mirostat_v2\",\"params\":{\"tau\":3.0,\"eta\":0.5}}]");
    asn_seq_state st;
    asn_seq_state_init(&st);
    float r[4] = {0, 0, 0, 0};
    asn_err e;
    asn_pipeline_apply(&h, r, 4, NULL, &st, ws, &e); /* all four at surprise 2 bits <= mu = 6 */
    asn_pipeline_accept(&h, r, 4, 1, &st);
    T_NEAR("mirostat_v2 mu update", st.mu, 6.0 - 0.5 * (2.0 - 3.0), 1e-6);
    asn_heuristic_clear(&h);
}

static void test_expf(void)
{
    int worst = 0;
    float at = 0;
    for (float x = -103.9f; x < 88.7f; x += 0.000731f) {
        float a = asn_expf(x), b = expf(x);
        int32_t ia, ib;
        memcpy(&ia, &a, 4);
        memcpy(&ib, &b, 4);
        int d = abs(ia - ib);
        if (d > worst)
            worst = d, at = x;
    }
    T_OK("asn_expf within 2 ulp of expf on [-104, 88.7]", worst <= 2, "worst %d ulp at %.9g", worst, at);
    T_OK("asn_expf(-inf) = 0, exp(-200) = 0", asn_expf(-INFINITY) == 0 && asn_expf(-200) == 0, "no");
    float xs[5] = {-INFINITY, -105, -1, 0, 3}, out[5];
    asn_exp_shifted(xs, 1.0f, out, 5);
    T_OK("asn_exp_shifted", out[0] == 0 && out[1] == 0 && out[3] == asn_expf(-1) && out[4] == asn_expf(2), "no");
}

/* Every kind has a row of the processor table, and its row's name gives
 * the kind back (the rows are found by name, not by enum position). */
static void test_table(void)
{
    int ok = 0;
    for (int k = 0; k < ASN_PROC_COUNT; k++) {
        const char *name = asn_proc_name((asn_proc_kind)k);
        char procs[200];
        snprintf(procs, sizeof procs, "[{\"name\":\"%s\"}]", name);
        json_t *v = json_loads(procs, 0, NULL);
        asn_heuristic h;
        asn_err e;
        /* a row with required parameters says so by name: it was found */
        int rc = asn_heuristic_init(&h, "t", v, &e);
        json_decref(v);
        if (!rc) {
            ok += h.procs[0].kind == (asn_proc_kind)k;
            asn_heuristic_clear(&h);
        } else {
            ok += strcmp(name, "?") && !strstr(e.msg, "unknown processor");
        }
    }
    T_OK("every processor kind has a row, found by its name", ok == ASN_PROC_COUNT, "%d of %d", ok,
         (int)ASN_PROC_COUNT);
}

int main(void)
{
    ws = asn_workspace_new();
    test_table();
    test_vectors();
    test_edges();
    test_validation();
    test_against_naive();
    test_draw();
    test_expf();
    asn_workspace_free(ws);
    T_DONE();
}
