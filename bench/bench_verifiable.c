/* bench_verifiable.c — records/s of score-verifiable on generated
 * candidates (a quarter each GSM8K, MATH, IFEval with one to three Google
 * instructions, and records of no verifiable dataset; ~150-word
 * generations), against a baseline measured in the same run: the same
 * records read and written back unchanged through the same JSONL code, so
 * the ratio is the cost of the checks over plain pass-through.
 *   - checks only: the library's checks on in-memory strings, per dataset;
 *   - the tool: bin/score-verifiable on the generated file, output to
 *     /dev/null (wall time, one process, one thread).
 * Usage: bench_verifiable [RECORDS (default 100000)] [BIN_DIR (default bin)]. */
#include "asn/json.h"
#include "asn/verifiers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t rng = 88172645463325252ULL;
static uint32_t rnd(uint32_t n)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (uint32_t)((rng >> 11) % n);
}

static const char *const WORDS[] = {
    "the", "answer", "is", "we", "have", "so", "then", "total", "of", "apples", "each", "and", "more", "than",
    "because", "Therefore", "let", "x", "be", "number", "first", "second", "step", "compute", "which", "gives",
    "This", "means", "that", "price", "dollars", "per", "hour", "she", "he", "they", "buys", "sells", "AND", "NOT",
};
enum { NW = sizeof WORDS / sizeof *WORDS, GEN_WORDS = 150 };

typedef struct buf {
    char *p;
    size_t n, cap;
} buf;
static void add(buf *b, const char *s)
{
    size_t m = strlen(s);
    asn_grow((void **)&b->p, &b->cap, b->n + m + 1, 1);
    memcpy(b->p + b->n, s, m + 1);
    b->n += m;
}

/* A generation of ~GEN_WORDS words with numbers, commas and sentences. */
static void prose(buf *b)
{
    char num[32];
    for (int i = 0; i < GEN_WORDS; i++) {
        if (i)
            add(b, rnd(12) == 0 ? ". " : rnd(15) == 0 ? ", " : " ");
        if (rnd(10) == 0) {
            snprintf(num, sizeof num, "%u", rnd(5000));
            add(b, num);
        } else {
            add(b, WORDS[rnd(NW)]);
        }
    }
}

static const char *const INSTR[][2] = {
    {"punctuation:no_comma", "{}"},
    {"length_constraints:number_words", "{\"relation\":\"at least\",\"num_words\":100}"},
    {"length_constraints:number_sentences", "{\"relation\":\"less than\",\"num_sentences\":12}"},
    {"detectable_format:number_highlighted_sections", "{\"num_highlights\":2}"},
    {"keywords:existence", "{\"keywords\":[\"answer\",\"price\"]}"},
    {"keywords:forbidden_words", "{\"forbidden_words\":[\"apples\",\"hour\"]}"},
    {"change_case:capital_word_frequency", "{\"capital_relation\":\"less than\",\"capital_frequency\":5}"},
    {"language:response_language", "{\"language\":\"en\"}"},
    {"detectable_format:title", "{}"},
    {"keywords:letter_frequency", "{\"letter\":\"a\",\"let_relation\":\"at least\",\"let_frequency\":20}"},
    {"startend:end_checker", "{\"end_phrase\":\"Any other questions?\"}"},
    {"detectable_format:json_format", "{}"},
};
enum { NI = sizeof INSTR / sizeof *INSTR };

/* One candidate record as JSON text. */
static char *record(long i)
{
    buf g = {0};
    prose(&g);
    json_t *r = json_object();
    char id[64];
    snprintf(id, sizeof id, "p%ld/0123456789ab/%ld", i / 8, i % 8);
    json_object_set_new(r, "id", json_string(id));
    json_object_set_new(r, "prompt_id", json_string(id));
    json_object_set_new(r, "prompt", json_string("A question of some length, as prompts are."));
    json_object_set_new(r, "seed", json_integer(i % 8));
    json_object_set_new(r, "tokens", json_pack("[i,i,i,i,i,i,i,i]", 1, 2, 3, 4, 5, 6, 7, 8));
    char num[32];
    switch (i % 4) {
    case 0:
        snprintf(num, sizeof num, "%u", rnd(1000));
        add(&g, "\n#### ");
        add(&g, num);
        json_object_set_new(r, "dataset", json_string("gsm8k"));
        json_object_set_new(r, "ground_truth", json_string(num));
        break;
    case 1: {
        char box[80];
        snprintf(box, sizeof box, " so $x = \\boxed{\\frac{%u}{%u}}$.", 1 + rnd(9), 2 + rnd(9));
        add(&g, box);
        json_object_set_new(r, "dataset", json_string("MATH"));
        json_object_set_new(r, "ground_truth", json_string(rnd(2) ? "\\frac{1}{2}" : "0.5"));
        break;
    }
    case 2: {
        json_t *ids = json_array(), *kws = json_array();
        int k = 1 + (int)rnd(3);
        for (int j = 0; j < k; j++) {
            int w = (int)rnd(NI);
            json_array_append_new(ids, json_string(INSTR[w][0]));
            json_array_append_new(kws, json_loads(INSTR[w][1], 0, NULL));
        }
        json_object_set_new(r, "dataset", json_string("ifeval"));
        json_object_set_new(r, "instruction_id_list", ids);
        json_object_set_new(r, "kwargs", kws);
        break;
    }
    default:
        json_object_set_new(r, "dataset", json_string("writing"));
    }
    json_object_set_new(r, "generation", json_string(g.p));
    free(g.p);
    char *s = asn_json_dumps(r, 0);
    json_decref(r);
    return s;
}

/* The library's checks alone, as the tool calls them. */
static int check_one(const json_t *r)
{
    const char *ds = json_string_value(json_object_get(r, "dataset"));
    const char *gen = json_string_value(json_object_get(r, "generation"));
    if (!strcmp(ds, "gsm8k"))
        return asn_gsm8k_check(gen, json_string_value(json_object_get(r, "ground_truth")), NULL);
    if (!strcmp(ds, "MATH"))
        return asn_math_check(gen, json_string_value(json_object_get(r, "ground_truth")), ASN_MATH_VALUES, NULL);
    if (!strcmp(ds, "ifeval")) {
        const json_t *ids = json_object_get(r, "instruction_id_list"), *kws = json_object_get(r, "kwargs");
        int all = 1, ok;
        asn_err e;
        for (size_t i = 0; i < json_array_size(ids); i++)
            if (!asn_ifeval_check(json_string_value(json_array_get(ids, i)), json_array_get(kws, i), gen, &ok, &e))
                all &= ok;
        return all;
    }
    return -1;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 100000;
    const char *bin = argc > 2 ? argv[2] : "bin";
    if (n < 4) {
        fprintf(stderr, "usage: bench_verifiable [RECORDS >= 4] [BIN_DIR]\n");
        return 2;
    }
    char path[1024];
    const char *tmp = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/bench_verifiable_XXXXXX", tmp && *tmp ? tmp : P_tmpdir);
    int fd = mkstemp(path);
    if (fd < 0) {
        perror("bench_verifiable: mkstemp");
        return 1;
    }
    FILE *f = fdopen(fd, "w");
    for (long i = 0; i < n; i++) {
        char *s = record(i);
        fprintf(f, "%s\n", s);
        free(s);
    }
    fclose(f);

    /* baseline: read and write back unchanged */
    asn_err e;
    FILE *null = fopen("/dev/null", "w");
    double t0 = now();
    asn_jsonl *in = asn_jsonl_open(path, &e);
    json_t *r;
    json_t *all = json_array();
    while (in && asn_jsonl_next(in, &r, &e) > 0) {
        asn_jsonl_write(null, r);
        json_array_append_new(all, r);
    }
    asn_jsonl_close(in);
    double t_pass = now() - t0;

    /* the checks alone, per dataset */
    double t_ds[4] = {0};
    long n_ds[4] = {0}, passed = 0;
    for (size_t i = 0; i < json_array_size(all); i++) {
        double a = now();
        int v = check_one(json_array_get(all, i));
        t_ds[i % 4] += now() - a;
        n_ds[i % 4]++;
        passed += v == 1;
    }
    double t_checks = t_ds[0] + t_ds[1] + t_ds[2] + t_ds[3];
    json_decref(all);
    fclose(null);

    /* the tool, end to end */
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "%s/score-verifiable -q '%s' > /dev/null", bin, path);
    t0 = now();
    int rc = system(cmd);
    double t_tool = now() - t0;
    unlink(path);

    printf("bench_verifiable: %ld generated candidates (~%d words each), one thread\n", n, GEN_WORDS);
    printf("%-28s %12s %14s\n", "", "seconds", "records/s");
    printf("%-28s %12.3f %14.0f\n", "baseline: JSONL pass-through", t_pass, n / t_pass);
    static const char *const names[] = {"checks: gsm8k", "checks: MATH", "checks: ifeval (1-3 instr.)", "checks: not verifiable"};
    for (int k = 0; k < 4; k++)
        printf("%-28s %12.3f %14.0f\n", names[k], t_ds[k], n_ds[k] / (t_ds[k] > 0 ? t_ds[k] : 1e-9));
    printf("%-28s %12.3f %14.0f\n", "checks: all", t_checks, n / t_checks);
    if (rc == 0) {
        printf("%-28s %12.3f %14.0f\n", "score-verifiable (the tool)", t_tool, n / t_tool);
        printf("tool / pass-through time: %.2fx (%ld of %ld checked records passed)\n", t_tool / t_pass, passed,
               n - n_ds[3]);
    } else {
        printf("score-verifiable did not run (%s/score-verifiable, status %d): build it first\n", bin, rc);
    }
    return rc == 0 ? 0 : 1;
}
