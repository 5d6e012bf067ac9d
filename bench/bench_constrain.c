/* bench_constrain.c — the per-token mask of the structured-output
 * constraints at the largest vocabulary of tests/data/vocab (Llama-3's BPE,
 * 128256 tokens), for three JSON Schemas (an object with five typed fields,
 * a nested array of objects, an enum), beside the brute-force mask (every
 * token tried from the state) measured in the same run.
 *
 * The states are those of random texts each schema allows (tokens drawn
 * from the mask). Times, per token on one core:
 *   first  - first pass over the states, caches empty at the start (so it
 *            includes every trie walk of a new stack top);
 *   warm   - again with the per-state masks dropped, stack-top entries kept
 *            (a long run meeting new states);
 *   hit    - the state's mask cached (a run meeting a state again);
 *   brute  - every token's bytes run through the state.
 * The fast masks are checked equal to the brute-force ones first.
 * Target (issue): mean <= 50 us and p99 <= 0.5 ms, compile <= 1 s. */
#include "asn/gguf.h"
#include "asn/grammar.h"

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

static const struct {
    const char *name, *schema;
} SCHEMAS[] = {
    {"object, five typed fields",
     "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},\"age\":{\"type\":\"integer\",\"minimum\":0,"
     "\"maximum\":150},\"score\":{\"type\":\"number\"},\"member\":{\"type\":\"boolean\"},\"city\":{\"type\":\"string\","
     "\"maxLength\":20}},\"required\":[\"name\",\"age\",\"score\",\"member\",\"city\"],\"additionalProperties\":false}"},
    {"nested array of objects",
     "{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"integer\"},\"label\":{\"type\":"
     "\"string\"},\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"maxItems\":4}},\"required\":[\"id\","
     "\"label\"],\"additionalProperties\":false},\"minItems\":1,\"maxItems\":5}"},
    {"enum",
     "{\"enum\":[\"red\",\"green\",\"blue\",\"cyan\",\"magenta\",\"yellow\",\"black\",\"white\",\"orange\",\"purple\"]}"},
};
enum { TEXTS = 12, MAX_STEPS = 48, BRUTE_STATES = 24 };

static uint64_t rs = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void)
{
    rs ^= rs << 13, rs ^= rs >> 7, rs ^= rs << 17;
    return rs;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void stats(const char *what, double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, cmp_d);
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += t[i];
    printf("    %-6s mean %9.1f us   p50 %9.1f us   p99 %9.1f us   max %9.1f us   (%d masks)\n", what,
           sum / n * 1e6, t[n / 2] * 1e6, t[(int)((n - 1) * 0.99)] * 1e6, t[n - 1] * 1e6, n);
}

int main(void)
{
    const char *root = getenv("ASN_ROOT");
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/data/vocab/ggml-vocab-llama-bpe.gguf", root ? root : ".");
    asn_err e;
    asn_gguf *gg = asn_gguf_open(path, &e);
    if (!gg) {
        fprintf(stderr, "bench_constrain: %s\n", e.msg);
        return 1;
    }
    asn_vocab *v = asn_vocab_load(gg, &e);
    asn_gguf_close(gg);
    int V = asn_vocab_n_tokens(v), W = (V + 63) / 64;
    double t0 = now();
    asn_constraint *base = asn_constraint_new(asn_gbnf_parse("root ::= \"\"", 11, &e), v);
    printf("bench_constrain: V = %d (llama-bpe); vocabulary trie built once in %.0f ms\n", V, (now() - t0) * 1e3);
    uint64_t *a = malloc((size_t)W * 8), *b = malloc((size_t)W * 8);
    int *allowed = malloc((size_t)V * sizeof *allowed), *shorts = malloc((size_t)V * sizeof *shorts);
    int bad = 0;
    for (size_t k = 0; k < sizeof SCHEMAS / sizeof *SCHEMAS; k++) {
        json_t *s = json_loads(SCHEMAS[k].schema, 0, NULL);
        t0 = now();
        char *text = asn_schema_to_gbnf(s, ASN_WS_COMPACT, &e);
        asn_grammar *g = text ? asn_gbnf_parse(text, strlen(text), &e) : NULL;
        if (!g) {
            fprintf(stderr, "bench_constrain: %s\n", e.msg);
            return 1;
        }
        asn_constraint *c = asn_constraint_new_like(g, base);
        double compile = now() - t0;
        free(text);
        json_decref(s);
        /* the states of random texts */
        asn_gstate *st = calloc(TEXTS * MAX_STEPS, sizeof *st);
        int ns = 0;
        for (int i = 0; i < TEXTS; i++) {
            asn_gstate cur;
            asn_gstate_start(g, &cur);
            for (int step = 0; step < MAX_STEPS; step++) {
                asn_gstate_copy(&st[ns], &cur);
                ns++;
                asn_constraint_mask(c, &cur, a);
                /* a token among the allowed ones; a one- or two-byte one half the
                 * time, so that texts reach their closing brackets */
                int n_all = 0, n_short = 0, want_short = rnd() & 1;
                for (int t = 0; t < V; t++)
                    if ((a[t >> 6] >> (t & 63)) & 1) {
                        size_t len;
                        asn_vocab_piece(v, t, 0, &len);
                        allowed[n_all++] = t;
                        if (len && len <= 2)
                            shorts[n_short++] = t;
                    }
                int pick = !n_all ? -1
                           : want_short && n_short ? shorts[rnd() % (uint64_t)n_short]
                                                   : allowed[rnd() % (uint64_t)n_all];
                if (pick < 0 || asn_vocab_is_eog(v, pick) || asn_constraint_accept(c, &cur, pick))
                    break;
            }
            asn_gstate_clear(&cur);
        }
        asn_constraint_free(c);
        /* fresh caches for the timed passes */
        text = asn_schema_to_gbnf(s = json_loads(SCHEMAS[k].schema, 0, NULL), ASN_WS_COMPACT, &e);
        c = asn_constraint_new_like(asn_gbnf_parse(text, strlen(text), &e), base);
        free(text);
        json_decref(s);
        double *tf = malloc((size_t)ns * sizeof *tf), *tw = malloc((size_t)ns * sizeof *tw),
               *th = malloc((size_t)ns * sizeof *th), *tb = malloc(BRUTE_STATES * sizeof *tb);
        for (int i = 0; i < ns; i++) {
            double t = now();
            asn_constraint_mask(c, &st[i], a);
            tf[i] = now() - t;
        }
        for (int i = 0; i < ns; i++) {
            asn_constraint_drop_caches(c, 0);
            double t = now();
            asn_constraint_mask(c, &st[i], a);
            tw[i] = now() - t;
        }
        for (int i = 0; i < ns; i++) {
            double t = now();
            asn_constraint_mask(c, &st[i], a);
            th[i] = now() - t;
        }
        int nb = 0;
        for (int i = 0; i < ns && nb < BRUTE_STATES; i += ns / BRUTE_STATES ? ns / BRUTE_STATES : 1) {
            double t = now();
            asn_constraint_mask_brute(c, &st[i], b);
            tb[nb++] = now() - t;
            asn_constraint_mask(c, &st[i], a);
            bad += memcmp(a, b, (size_t)W * 8) != 0;
        }
        printf("  %s: compile %.2f ms (schema -> GBNF -> grammar -> constraint), %d states of %d texts\n",
               SCHEMAS[k].name, compile * 1e3, ns, TEXTS);
        stats("first", tf, ns);
        stats("warm", tw, ns);
        stats("hit", th, ns);
        stats("brute", tb, nb);
        for (int i = 0; i < ns; i++)
            asn_gstate_clear(&st[i]);
        free(st), free(tf), free(tw), free(th), free(tb);
        asn_constraint_free(c);
    }
    printf("  fast mask == brute force at every state compared: %s\n", bad ? "NO" : "yes");
    free(a), free(b), free(allowed), free(shorts);
    asn_constraint_free(base);
    asn_vocab_free(v);
    return bad ? 1 : 0;
}
