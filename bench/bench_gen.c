/* bench_gen.c — candidate generation on the ~125M-parameter random-weight
 * model (F32, llama.cpp's 32000-token SPM test vocabulary), 2 threads:
 *   shape 1 (anchor): 1 prompt, 32 sequences, 53 new tokens;
 *   shape 2 (seeds):  4 prompts x 33 heuristics (the temperature-0.7 row
 *                     of configs/heuristics/qwen.yaml) x 4 seeds x 64 tokens;
 * (a) asn's generator as gen-candidates runs it (batch 128 live sequences,
 *     prompt KV shared by fork) against (b) the same engine generating one
 *     sequence at a time, each with its own prefill (measured on a subset,
 *     as rates). Every candidate generates exactly its token budget
 *     (min_new_tokens = max_new_tokens). Target: (a) >= 8x (b) on shape 2.
 * Anchor: llama.cpp's llama-batched, same model shape, 2 threads, 32 streams
 * x 53 tokens from one prompt: 335 generated tokens/s on this kind of
 * machine. Usage: bench_gen [THREADS] [ROOT]. */
#include "asn/gen.h"
#include "asn/sampling.h"

#include "bench_util.h"

#include <string.h>

typedef struct shape {
    const char *name;
    int n_prompts, n_seeds, n_new;
    int all_heuristics; /* the 33 of one temperature, else 1 */
} shape;

static double run(asn_model *m, asn_pool *pool, int batch, int share, const shape *sh,
                  asn_heuristic **hs, int n_hs, int32_t **prompts, int n_prompt_toks, int limit,
                  long *tokens)
{
    asn_err e;
    asn_gen_settings gs = {.min_new_tokens = sh->n_new, .max_new_tokens = sh->n_new};
    asn_generator *g = asn_generator_new(m, pool, batch, 1024, &gs, &e);
    if (!g) {
        fprintf(stderr, "bench_gen: %s\n", e.msg);
        exit(1);
    }
    int n = sh->n_prompts * n_hs * sh->n_seeds;
    if (limit && n > limit)
        n = limit;
    asn_gen_job *jobs = calloc((size_t)n, sizeof *jobs);
    int32_t **copies = calloc((size_t)n, sizeof *copies);
    char ids[8][24];
    for (int i = 0; i < n; i++) {
        int p = i / (n_hs * sh->n_seeds), h = i / sh->n_seeds % n_hs, s = i % sh->n_seeds;
        snprintf(ids[p], sizeof ids[p], "prompt%d", p);
        const int32_t *toks = prompts[p];
        if (!share) { /* a private copy: no prefix sharing */
            copies[i] = malloc((size_t)n_prompt_toks * sizeof(int32_t));
            memcpy(copies[i], prompts[p], (size_t)n_prompt_toks * sizeof(int32_t));
            toks = copies[i];
        }
        jobs[i] = (asn_gen_job){.prompt_id = ids[p], .prompt_tokens = toks, .n_prompt = n_prompt_toks, .heuristic = hs[h], .seed = (uint64_t)s};
    }
    double t0 = now();
    if (asn_generate(g, jobs, n, NULL, NULL, &e)) {
        fprintf(stderr, "bench_gen: %s\n", e.msg);
        exit(1);
    }
    double dt = now() - t0;
    *tokens = 0;
    for (int i = 0; i < n; i++) {
        *tokens += jobs[i].n_tokens;
        asn_gen_job_clear(&jobs[i]);
        free(copies[i]);
    }
    free(copies);
    free(jobs);
    asn_generator_free(g);
    return dt / n; /* seconds per candidate */
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 2;
    const char *root = argc > 2 ? argv[2] : ".";
    char vocab[4096], heur[4096], path[4096];
    snprintf(vocab, sizeof vocab, "%s/tests/data/vocab/ggml-vocab-llama-spm.gguf", root);
    snprintf(heur, sizeof heur, "%s/configs/heuristics/qwen.yaml", root);
    snprintf(path, sizeof path, "%s/build/bench/gen-125m-f32.gguf", root);
    write_model(path, ASN_T_F32, vocab);
    asn_err e;
    asn_model *m = asn_model_load(path, &e);
    asn_heuristics *all = asn_heuristics_load(heur, &e);
    if (!m || !all) {
        fprintf(stderr, "bench_gen: %s\n", e.msg);
        return 1;
    }
    asn_heuristic *row[64];
    int n_row = 0;
    for (int i = 0; i < all->n; i++) {
        const char *nm = all->h[i].name;
        size_t L = strlen(nm);
        if (((L >= 9 && !strcmp(nm + L - 9, " temp 0.7")) || !strcmp(nm, "temp 0.7")) && n_row < 64)
            row[n_row++] = &all->h[i];
    }
    int one = asn_heuristics_find(all, "top_p 0.95 temp 0.7");
    asn_heuristic *single = &all->h[one >= 0 ? one : 0];
    enum { PROMPT = 48 };
    int32_t *prompts[4];
    for (int p = 0; p < 4; p++) {
        prompts[p] = malloc(PROMPT * sizeof(int32_t));
        prompts[p][0] = 1; /* BOS */
        for (int i = 1; i < PROMPT; i++)
            prompts[p][i] = (int32_t)(300 + (p * 7919 + i * 104729) % 31000);
    }
    asn_pool *pool = asn_pool_new(threads);
    printf("bench_gen: ~125M-parameter random Llama (F32), %d threads; %d heuristics in the temp-0.7 row\n",
           threads, n_row);
    shape shapes[2] = {{"shape 1: 1 prompt x 32 seqs x 53 tokens", 1, 32, 53, 0},
                       {"shape 2: 4 prompts x 33 heuristics x 4 seeds x 64 tokens", 4, 4, 64, 1}};
    for (int s = 0; s < 2; s++) {
        shape *sh = &shapes[s];
        asn_heuristic **hs = sh->all_heuristics ? row : &single;
        int n_hs = sh->all_heuristics ? n_row : 1;
        long ta, tb;
        double a = run(m, pool, 128, 1, sh, hs, n_hs, prompts, PROMPT, 0, &ta);
        double b = run(m, pool, 1, 0, sh, hs, n_hs, prompts, PROMPT, 8, &tb);
        int n = sh->n_prompts * n_hs * sh->n_seeds;
        printf("%s (%d candidates)\n", sh->name, n);
        printf("  (a) batched, shared prompts: %7.2f candidates/s %8.1f generated tokens/s\n", 1 / a,
               (double)ta / (a * n));
        printf("  (b) one at a time:           %7.2f candidates/s %8.1f generated tokens/s (8 candidates)\n",
               1 / b, (double)tb / (b * 8));
        printf("  (a)/(b) = %.1fx%s\n", b / a, s == 0 ? "; llama-batched anchor 335 tokens/s" : "; target >= 8x");
    }
    for (int p = 0; p < 4; p++)
        free(prompts[p]);
    asn_pool_free(pool);
    asn_heuristics_free(all);
    asn_model_free(m);
    remove(path);
    return 0;
}
