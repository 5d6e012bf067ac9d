/* test_diversity.c — self-BLEU, distinct-n and embedding entropy against
 * independent references: sacrebleu itself (tests/fixtures/bleu.jsonl, from
 * make_bleu_fixtures.py) within 1e-6, and numpy (tests/fixtures/entropy.jsonl,
 * from make_entropy_fixtures.py); plus the closed forms (identical
 * embeddings: entropy 0; orthogonal: log2 n). */
#include "asn/bleu.h"
#include "asn/diversity.h"
#include "asn/json.h"
#include "t.h"

#include <stdlib.h>

/* sacrebleu agreement asked for by the issue */
#define BLEU_TOL 1e-6
#define ENTROPY_TOL 1e-9

static char path_buf[4096];
static const char *fixture(const char *name)
{
    const char *root = getenv("ASN_ROOT");
    snprintf(path_buf, sizeof path_buf, "%s/tests/fixtures/%s", root ? root : ".", name);
    return path_buf;
}

/* The strings of a JSON array (borrowed) and their count. */
static const char **strings(const json_t *arr, int *n)
{
    *n = (int)json_array_size(arr);
    const char **v = calloc((size_t)*n + 1, sizeof *v);
    for (int i = 0; i < *n; i++)
        v[i] = json_string_value(json_array_get(arr, (size_t)i));
    return v;
}

static void test_pyspace(void)
{
    static const char *spaces[] = {"\t", "\n", "\v", "\f", "\r", "\x1c", "\x1d", "\x1e", "\x1f", " ",
                                   "\xc2\x85", "\u00a0", "\u1680", "\u2000", "\u2005", "\u200a", "\u2028",
                                   "\u2029", "\u202f", "\u205f", "\u3000"};
    static const char *others[] = {"a", "\x1b", "\x7f", "\u00a1", "\u200b", "\u2030", "\u180e", "\ufeff", "\u3001"};
    int bad = 0;
    for (size_t i = 0; i < sizeof spaces / sizeof *spaces; i++)
        bad += asn_pyspace_len(spaces[i], strlen(spaces[i])) != strlen(spaces[i]);
    for (size_t i = 0; i < sizeof others / sizeof *others; i++)
        bad += asn_pyspace_len(others[i], strlen(others[i])) != 0;
    T_EQ_INT("whitespace is Python's str.isspace()", bad, 0);
    T_EQ_INT("a truncated code point is not whitespace", asn_pyspace_len("\xe3\x80", 2), 0);
}

static void test_bleu_fixtures(void)
{
    asn_err e;
    asn_jsonl *in = asn_jsonl_open(fixture("bleu.jsonl"), &e);
    T_OK("bleu fixture opens", in != NULL, "%s", in ? "" : e.msg);
    if (!in)
        return;
    int n_tok = 0, bad_tok = 0, n_sent = 0, bad_sent = 0, bad_stats = 0, n_grp = 0, bad_grp = 0;
    int n_dist = 0, bad_dist = 0;
    double worst = 0;
    json_t *r;
    while (asn_jsonl_next(in, &r, &e) > 0) {
        const char *kind = json_string_value(json_object_get(r, "kind"));
        if (!strcmp(kind, "tok13a")) {
            const json_t *t = json_object_get(r, "text");
            char *got = asn_tok13a(json_string_value(t), json_string_length(t), NULL);
            const char *exp = json_string_value(json_object_get(r, "tok"));
            n_tok++;
            if (strcmp(got, exp)) {
                if (bad_tok++ < 5)
                    printf("# 13a of \"%s\": expected \"%s\", got \"%s\"\n", json_string_value(t), exp, got);
            }
            free(got);
        } else if (!strcmp(kind, "sentence")) {
            int nr;
            const char **refs = strings(json_object_get(r, "refs"), &nr);
            asn_bleu_stats st;
            double got = asn_sentence_bleu(json_string_value(json_object_get(r, "hyp")), refs, nr, &st);
            double exp = json_real_value(json_object_get(r, "bleu"));
            double d = fabs(got - exp);
            worst = d > worst ? d : worst;
            n_sent++;
            if (d > BLEU_TOL && bad_sent++ < 5)
                printf("# BLEU of \"%s\": expected %.12g, got %.12g\n",
                       json_string_value(json_object_get(r, "hyp")), exp, got);
            int ok = st.sys_len == json_integer_value(json_object_get(r, "sys_len")) &&
                     st.ref_len == json_integer_value(json_object_get(r, "ref_len"));
            for (int k = 0; k < ASN_BLEU_MAX_ORDER; k++)
                ok &= st.correct[k] == json_integer_value(json_array_get(json_object_get(r, "counts"), (size_t)k)) &&
                      st.total[k] == json_integer_value(json_array_get(json_object_get(r, "totals"), (size_t)k));
            if (!ok && bad_stats++ < 5)
                printf("# statistics of \"%s\" differ from sacrebleu's\n", json_string_value(json_object_get(r, "hyp")));
            free(refs);
        } else if (!strcmp(kind, "group")) {
            int nt;
            const char **texts = strings(json_object_get(r, "texts"), &nt);
            asn_bleu_group *g = asn_bleu_group_new(texts, NULL, nt);
            double mean = asn_bleu_group_self_bleu(g);
            double exp = json_real_value(json_object_get(r, "mean"));
            double lexp = json_real_value(json_object_get(r, "self_bleu"));
            n_grp++;
            if ((fabs(mean - exp) > BLEU_TOL || fabs(asn_log_floor(mean) - lexp) > BLEU_TOL) && bad_grp++ < 5)
                printf("# self-BLEU of a group of %d: expected %.12g (log %.12g), got %.12g (log %.12g)\n", nt, exp,
                       lexp, mean, asn_log_floor(mean));
            asn_bleu_group_free(g);
            free(texts);
        } else if (!strcmp(kind, "distinct")) {
            int nt;
            const char **texts = strings(json_object_get(r, "texts"), &nt);
            asn_bleu_group *g = asn_bleu_group_new(texts, NULL, nt);
            n_dist++;
            for (int o = 1; o <= ASN_BLEU_MAX_ORDER; o++) {
                long distinct, total;
                asn_bleu_group_ngrams(g, o, &distinct, &total);
                const json_t *ed = json_array_get(json_object_get(r, "distinct"), (size_t)o - 1);
                long et = (long)json_integer_value(json_array_get(json_object_get(r, "totals"), (size_t)o - 1));
                int ok = total == et && (json_is_null(ed) ? total == 0
                                                          : fabs((double)distinct / (double)total -
                                                                 json_real_value(ed)) <= 1e-12);
                if (!ok && bad_dist++ < 5)
                    printf("# distinct-%d of a group of %d: %ld/%ld, expected total %ld\n", o, nt, distinct, total, et);
            }
            asn_bleu_group_free(g);
            free(texts);
        }
        json_decref(r);
    }
    asn_jsonl_close(in);
    char name[160];
    snprintf(name, sizeof name, "13a tokenization equals sacrebleu's (%d texts)", n_tok);
    T_OK(name, n_tok > 50 && bad_tok == 0, "%d of %d differ", bad_tok, n_tok);
    snprintf(name, sizeof name, "sentence BLEU equals sacrebleu's within 1e-6 (%d cases, worst %.2g)", n_sent, worst);
    T_OK(name, n_sent > 100 && bad_sent == 0, "%d of %d differ", bad_sent, n_sent);
    T_OK("BLEU statistics (matches, totals, lengths) equal sacrebleu's", n_sent > 100 && bad_stats == 0,
         "%d of %d differ", bad_stats, n_sent);
    snprintf(name, sizeof name, "self-BLEU and its log equal the reference's within 1e-6 (%d groups)", n_grp);
    T_OK(name, n_grp > 20 && bad_grp == 0, "%d of %d differ", bad_grp, n_grp);
    T_OK("distinct-n equals a count over sacrebleu's n-grams", n_dist > 20 && bad_dist == 0, "%d differ", bad_dist);
}

static void test_bleu_edges(void)
{
    const char *same[] = {"The cat sat on the mat.", "The cat sat on the mat."};
    asn_bleu_group *g = asn_bleu_group_new(same, NULL, 2);
    T_NEAR("identical texts: BLEU 100", asn_bleu_group_self_bleu(g), 100.0, 1e-9);
    asn_bleu_group_free(g);
    const char *none[] = {"alpha beta", "gamma delta"};
    g = asn_bleu_group_new(none, NULL, 2);
    T_NEAR("no overlap: BLEU 0, log floored at 1e-9", asn_log_floor(asn_bleu_group_self_bleu(g)), log(1e-9), 1e-12);
    asn_bleu_group_free(g);
    const char *one[] = {"alone"};
    g = asn_bleu_group_new(one, NULL, 1);
    T_NEAR("a group of one: self-BLEU 0 (as the reference)", asn_bleu_group_self_bleu(g), 0.0, 0);
    asn_bleu_group_free(g);
    /* texts with NUL bytes use their lengths */
    const char *nul[] = {"a\0b c", "a\0b c"};
    size_t lens[] = {5, 5};
    g = asn_bleu_group_new(nul, lens, 2);
    long d, t;
    asn_bleu_group_ngrams(g, 1, &d, &t);
    T_OK("texts are read to their length, NUL bytes included", d == 2 && t == 4, "distinct %ld total %ld", d, t);
    asn_bleu_group_free(g);
    /* a hypothesis scored alone against the others equals sentence BLEU */
    const char *grp[] = {"a b c d e", "a b c", "a b c d e f g", "x a b"};
    g = asn_bleu_group_new(grp, NULL, 4);
    int ok = 1;
    for (int i = 0; i < 4; i++) {
        const char *refs[3];
        for (int j = 0, k = 0; j < 4; j++)
            if (j != i)
                refs[k++] = grp[j];
        ok &= fabs(asn_bleu_group_sentence(g, i) - asn_sentence_bleu(grp[i], refs, 3, NULL)) < 1e-12;
    }
    T_OK("group scores equal sentence BLEU against the others", ok, "they differ");
    asn_bleu_group_free(g);
}

static void test_entropy_fixtures(void)
{
    asn_err e;
    asn_jsonl *in = asn_jsonl_open(fixture("entropy.jsonl"), &e);
    T_OK("entropy fixture opens", in != NULL, "%s", in ? "" : e.msg);
    if (!in)
        return;
    json_t *r;
    int n = 0;
    while (asn_jsonl_next(in, &r, &e) > 0) {
        const json_t *emb = json_object_get(r, "emb");
        int rows = (int)json_array_size(emb), dim = (int)json_array_size(json_array_get(emb, 0));
        float *x = calloc((size_t)rows * (size_t)dim + 1, sizeof *x);
        for (int i = 0; i < rows; i++)
            for (int k = 0; k < dim; k++)
                x[(size_t)i * dim + k] = (float)json_number_value(json_array_get(json_array_get(emb, (size_t)i), (size_t)k));
        asn_entropy h;
        int rc = asn_embedding_entropy(x, rows, dim, &h, &e);
        double bits = json_real_value(json_object_get(r, "bits")), score = json_real_value(json_object_get(r, "score"));
        int rank = (int)json_integer_value(json_object_get(r, "rank"));
        char name[160];
        snprintf(name, sizeof name, "embedding entropy equals numpy's, case %d (%d x %d)", ++n, rows, dim);
        T_OK(name, rc == 0 && fabs(h.bits - bits) <= ENTROPY_TOL && fabs(h.score - score) <= ENTROPY_TOL && h.rank == rank,
             "expected bits %.12g score %.12g rank %d, got %.12g %.12g %d", bits, score, rank, h.bits, h.score, h.rank);
        free(x);
        json_decref(r);
    }
    asn_jsonl_close(in);
    T_OK("entropy fixture has cases", n >= 20, "only %d", n);
}

static void test_entropy_closed_forms(void)
{
    enum { N = 6, D = 10 };
    float x[N * D];
    asn_err e;
    asn_entropy h;
    for (int i = 0; i < N; i++)
        for (int k = 0; k < D; k++)
            x[i * D + k] = (float)(k + 1) * 0.25f;
    asn_embedding_entropy(x, N, D, &h, &e);
    T_NEAR("identical embeddings: entropy 0 bits", h.bits, 0.0, 1e-12);
    T_NEAR("identical embeddings: score = log(1e-9)", h.score, log(1e-9), 1e-12);
    for (int n = 2; n <= N; n++) {
        memset(x, 0, sizeof x);
        for (int i = 0; i < n; i++)
            x[i * D + i + 1] = (float)(i + 1);
        asn_embedding_entropy(x, n, D, &h, &e);
        char name[96];
        snprintf(name, sizeof name, "%d orthogonal embeddings: entropy log2(%d) bits, score log(log2 %d)", n, n, n);
        T_OK(name, fabs(h.bits - log2(n)) < 1e-12 && fabs(h.score - log(log2(n))) < 1e-12 && h.rank == n,
             "expected %.12g, got %.12g (score %.12g)", log2(n), h.bits, h.score);
    }
    memset(x, 0, sizeof x);
    asn_embedding_entropy(x, 3, D, &h, &e);
    T_OK("all-zero embeddings: no eigenvalue kept, score 0.0 (as the reference)", h.rank == 0 && h.score == 0.0,
         "rank %d score %g", h.rank, h.score);
    asn_embedding_entropy(x, 0, D, &h, &e);
    T_OK("no embeddings: zeros", h.rank == 0 && h.score == 0.0 && h.bits == 0.0, "rank %d", h.rank);
}

int main(void)
{
    test_pyspace();
    test_bleu_fixtures();
    test_bleu_edges();
    test_entropy_fixtures();
    test_entropy_closed_forms();
    T_DONE();
}
