/* bench_rank.c — records/s of the two ends of the scoring pipeline, run as
 * the programs users run (bin/filter-topk, bin/rank-bt) on generated
 * candidate files:
 *   - filter-topk on RECORDS candidates (default 100000: 1000 prompts x 4
 *     seeds x 25 heuristics with quality, diversity and, for a fifth of the
 *     prompts, verifiable rewards), against the baseline of reading and
 *     writing the same records (jansson parse + asn's writer, in process);
 *     the tool reads the input twice and writes 125 combined scores a
 *     record, so a ratio near 1/3 means it costs what its I/O costs;
 *   - rank-bt --judge reference-ll on RANK_RECORDS candidates (default
 *     10000: 100 prompts x 4 seeds x 25 heuristics, 16 tokens an answer)
 *     with tests/data/models/tiny-spm-q8_0.gguf (or $ASN_BENCH_JUDGE_MODEL),
 *     the Swiss pairing and Bradley-Terry time reported apart from the
 *     judge's (rank-bt -v).
 * Run from the repository root (make bench). Usage:
 *   bench_rank [RECORDS] [RANK_RECORDS] [THREADS (default 2)] */
#include "asn/json.h"

#include <jansson.h>
#include <stdio.h>
#include <sys/resource.h>
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

static uint64_t rs = 0x853C49E6748FEA9BULL;
static double uni(void)
{
    rs ^= rs << 13, rs ^= rs >> 7, rs ^= rs << 17;
    return ((rs >> 11) + 0.5) * 0x1.0p-53;
}

enum { SEEDS = 4, HEURISTICS = 25, ANSWER_TOKENS = 16 };

/* Candidates, prompt by prompt; scored ones carry the annotations that
 * filter-topk reads, the others the tokens that rank-bt's reference-ll
 * judge scores. */
static void write_candidates(const char *path, long n, int scored)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(1);
    }
    long prompts = (n + SEEDS * HEURISTICS - 1) / (SEEDS * HEURISTICS), k = 0;
    for (long p = 0; p < prompts && k < n; p++)
        for (int s = 0; s < SEEDS && k < n; s++)
            for (int h = 0; h < HEURISTICS && k < n; h++, k++) {
                fprintf(f,
                        "{\"id\":\"p%06ld/%012x/%d\",\"prompt_id\":\"p%06ld\",\"prompt\":\"Question number %ld: "
                        "what is worth knowing about it?\",\"system\":null,\"heuristic\":{\"name\":\"h%d\",\"id\":"
                        "\"%012x\",\"processors\":[]},\"seed\":%d,\"generation\":\"An answer of some length, "
                        "number %d of %d.\",",
                        p, h, s, p, p, h, h, s, h, s);
                if (scored) {
                    fprintf(f, "\"quality\":{\"bt\":%.6f,\"games\":6},\"bradley_terry_rating\":%.6f,", uni() * 4 - 2,
                            uni() * 4 - 2);
                    fprintf(f, "\"checks\":{\"diversity\":%s,\"verifiable\":%s,\"factual\":false},",
                            p % 3 ? "true" : "false", p % 5 ? "false" : "true");
                    fprintf(f, "\"diversity\":{\"self_bleu\":-1.5,\"embedding_entropy\":%.6f,\"sample_count\":4}",
                            uni());
                    if (p % 5 == 0)
                        fprintf(f, ",\"verifiable_reward\":%d", uni() < 0.6);
                } else {
                    fprintf(f, "\"tokens\":[");
                    for (int t = 0; t < ANSWER_TOKENS; t++)
                        fprintf(f, "%s%d", t ? "," : "", 100 + (int)(uni() * 30000));
                    fprintf(f, "],\"settings\":{\"system\":null,\"chat_template\":\"none\",\"min_new_tokens\":0,"
                               "\"max_new_tokens\":%d,\"stop\":[]}",
                            ANSWER_TOKENS);
                }
                fprintf(f, "}\n");
            }
    fclose(f);
}

static double child_cpu(void)
{
    struct rusage ru;
    getrusage(RUSAGE_CHILDREN, &ru);
    return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_sec +
           1e-6 * (double)ru.ru_stime.tv_usec;
}

/* Runs a shell command; returns its wall time, and its CPU time in *cpu
 * (what a shared machine's load does not inflate). */
static double run(const char *cmd, double *cpu)
{
    double t0 = now(), c0 = child_cpu();
    if (system(cmd) != 0) {
        fprintf(stderr, "bench_rank: failed: %s\n", cmd);
        exit(1);
    }
    *cpu = child_cpu() - c0;
    return now() - t0;
}

static double cpu_now(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_sec +
           1e-6 * (double)ru.ru_stime.tv_usec;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 100000, nr = argc > 2 ? atol(argv[2]) : 10000;
    int threads = argc > 3 ? atoi(argv[3]) : 2;
    /* the programs: beside this benchmark's build folder (O=... builds too) */
    char bin[4096], cmd[32768];
    snprintf(bin, sizeof bin, "%s", argv[0]);
    char *slash = strrchr(bin, '/');
    snprintf(slash ? slash + 1 : bin, sizeof bin - (size_t)(slash ? slash + 1 - bin : 0), "../../bin");
    const char *model = getenv("ASN_BENCH_JUDGE_MODEL");
    if (!model)
        model = "tests/data/models/tiny-spm-q8_0.gguf";
    if (access(model, R_OK)) {
        fprintf(stderr, "bench_rank: %s not found (run from the repository root, or set ASN_BENCH_JUDGE_MODEL)\n",
                model);
        return 1;
    }
    const char *tmp = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char scored[4096], cands[4096], out[4096], err[4096];
    long pid = (long)getpid();
    snprintf(scored, sizeof scored, "%s/bench_rank.%ld.scored.jsonl", tmp, pid);
    snprintf(cands, sizeof cands, "%s/bench_rank.%ld.cands.jsonl", tmp, pid);
    snprintf(out, sizeof out, "%s/bench_rank.%ld.out", tmp, pid);
    snprintf(err, sizeof err, "%s/bench_rank.%ld.err", tmp, pid);

    /* filter-topk */
    write_candidates(scored, n, 1);
    double t0 = now(), c0 = cpu_now();
    {
        asn_err e;
        asn_jsonl *in = asn_jsonl_open(scored, &e);
        FILE *o = fopen("/dev/null", "w");
        json_t *rec;
        while (asn_jsonl_next(in, &rec, &e) > 0) {
            asn_jsonl_write(o, rec);
            json_decref(rec);
        }
        asn_jsonl_close(in);
        fclose(o);
    }
    double t_base = now() - t0, c_base = cpu_now() - c0, c_ft, c_pairs;
    snprintf(cmd, sizeof cmd, "%s/filter-topk %s > %s", bin, scored, out);
    double t_ft = run(cmd, &c_ft);
    snprintf(cmd, sizeof cmd, "%s/filter-topk --pairs %s > %s", bin, scored, out);
    double t_pairs = run(cmd, &c_pairs);
    printf("bench_rank: filter-topk, %ld candidates: %.0f records/s wall, %.0f per CPU second (top 5 of each "
           "group); --pairs %.0f records/s wall, %.0f per CPU second; read+write baseline %.0f records/s wall, "
           "%.0f per CPU second: ratio %.2f (CPU)\n",
           n, (double)n / t_ft, (double)n / c_ft, (double)n / t_pairs, (double)n / c_pairs, (double)n / t_base,
           (double)n / c_base, c_base / c_ft);

    /* rank-bt, reference-ll */
    write_candidates(cands, nr, 0);
    snprintf(cmd, sizeof cmd, "%s/rank-bt -j reference-ll -m %s -t %d -v %s > %s 2> %s", bin, model, threads, cands,
             out, err);
    double c_rb, t_rb = run(cmd, &c_rb);
    FILE *f = fopen(err, "r");
    char line[1024] = "";
    double judge = 0, bt = 0;
    while (f && fgets(line, sizeof line, f)) {
        const char *j = strstr(line, "answers scored in "), *b = strstr(line, "pairing and ratings: ");
        if (j && b)
            judge = atof(j + 18), bt = atof(b + 21);
    }
    if (f)
        fclose(f);
    printf("bench_rank: rank-bt reference-ll (%s, %d threads), %ld candidates of %d tokens: %.0f records/s "
           "(%.2f s wall, %.2f s CPU); judge %.2f s (%.0f answers/s), Swiss pairing + Bradley-Terry %.3f s "
           "(%.0f records/s, %.2f%% of the run)\n",
           model, threads, nr, ANSWER_TOKENS, (double)nr / t_rb, t_rb, c_rb, judge,
           judge > 0 ? (double)nr / judge : 0, bt, bt > 0 ? (double)nr / bt : 0, 100 * bt / t_rb);
    remove(scored), remove(cands), remove(out), remove(err);
    return 0;
}
