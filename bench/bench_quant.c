/* bench_quant.c — the engine on the GGUF files users download, beside the
 * machine's limits and, when given, llama.cpp on the same files:
 *   - limits measured in this run: streaming read bandwidth over 1 GiB
 *     (STREAM-style, all threads), peak f32 FMA GFLOPS and peak int8
 *     multiply-add GOPS of tight register-only loops;
 *   - per model: prefill tokens/s (one 512-token prompt), batch-1 decode
 *     tokens/s (128 tokens from an empty sequence), each the mean of 3
 *     runs after a warm-up as llama-bench's are, and 32 and 256 streams
 *     forked from a 20-token prompt (44 steps each: 64 positions, as
 *     llama-batched -n 64), with the
 *     integer kernel that ran;
 *   - with LLAMA_BENCH=path/to/llama-bench: its pp512 / tg128 on the same
 *     file and threads, and asn ÷ llama.cpp; with LLAMA_BATCHED=path/to/
 *     llama-batched: its decode speed at 32 and 256 sequences (-kvu, a
 *     20-token prompt, -n 64) beside asn's streams.
 * Usage: bench_quant [-t THREADS] [-r ROUNDS] MODEL.gguf...   (no model:
 * limits only). Each of asn's figures is measured just before llama.cpp's
 * for the same thing (prefill and decode, then the streams). With -r, each
 * model is measured ROUNDS times, asn and llama.cpp alternately, and a
 * last line gives each figure's median and
 * the ratio of the medians: on a shared or virtual machine, whose
 * bandwidth moves from one minute to the next, a single run can be off by
 * a quarter either way.
 * Run it on an idle machine: a build on another core halves every figure. */
#include "asn/cpu.h"
#include "asn/linalg.h"
#include "asn/model.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The shared 125M writer is not used here: the models are the files given. */
#pragma GCC diagnostic ignored "-Wunused-function"
#include "bench_util.h"

/* ------------------------------------------------------------- limits */

#include <immintrin.h>

/* 12 independent FMA chains of 8 lanes (AVX2) or 16 (AVX-512). */
#define FMA_LOOP(NAME, TARGET, VT, SET1, FMADD, LANES)                                            \
    __attribute__((target(TARGET))) static void *NAME(void *arg)                                   \
    {                                                                                              \
        lim_arg *a = arg;                                                                          \
        VT m = SET1(0.999f), c = SET1(0.001f), acc[12];                                            \
        for (int k = 0; k < 12; k++)                                                               \
            acc[k] = SET1((float)k);                                                               \
        for (size_t it = 0; it < a->n; it++)                                                       \
            for (int k = 0; k < 12; k++)                                                           \
                acc[k] = FMADD(acc[k], m, c);                                                      \
        float s = 0, l[LANES];                                                                     \
        for (int k = 0; k < 12; k++) {                                                             \
            memcpy(l, &acc[k], sizeof l);                                                          \
            s += l[0];                                                                             \
        }                                                                                          \
        a->out = s;                                                                                \
        return NULL;                                                                               \
    }
FMA_LOOP(fma_avx2, "avx2,fma", __m256, _mm256_set1_ps, _mm256_fmadd_ps, 8)
FMA_LOOP(fma_avx512, "avx512f,fma", __m512, _mm512_set1_ps, _mm512_fmadd_ps, 16)

/* Billions of operations per second of a tight loop on every thread: the
 * loop runs n iterations of ops_per_iter operations. */
static double peak_gops(int threads, void *(*loop)(void *), double ops_per_iter)
{
    lim_arg a[64];
    size_t n = 20000000;
    for (int i = 0; i < threads; i++)
        a[i] = (lim_arg){NULL, n, 0};
    double t0 = now();
    run_threads(threads, loop, a);
    return ops_per_iter * (double)n * threads / (now() - t0) / 1e9;
}

/* int8 multiply-adds: 8 chains of maddubs + madd + add (AVX2) or of
 * vpdpbusd (AVX-512 VNNI): 32 / 64 byte products per instruction chain. */
__attribute__((target("avx2"))) static void *int8_avx2(void *arg)
{
    lim_arg *a = arg;
    __m256i x = _mm256_set1_epi8(3), y = _mm256_set1_epi8(-2), one = _mm256_set1_epi16(1), acc[8];
    for (int k = 0; k < 8; k++)
        acc[k] = _mm256_set1_epi32(k);
    for (size_t it = 0; it < a->n; it++)
        for (int k = 0; k < 8; k++) {
            __asm__("" : "+x"(x));
            acc[k] = _mm256_add_epi32(acc[k], _mm256_madd_epi16(_mm256_maddubs_epi16(x, y), one));
        }
    int s = 0;
    for (int k = 0; k < 8; k++)
        s += _mm256_extract_epi32(acc[k], 0);
    a->out = s;
    return NULL;
}

__attribute__((target("avx512f,avx512bw,avx512vnni"))) static void *int8_vnni(void *arg)
{
    lim_arg *a = arg;
    __m512i x = _mm512_set1_epi8(3), y = _mm512_set1_epi8(-2), acc[8];
    for (int k = 0; k < 8; k++)
        acc[k] = _mm512_set1_epi32(k);
    for (size_t it = 0; it < a->n; it++)
        for (int k = 0; k < 8; k++)
            acc[k] = _mm512_dpbusd_epi32(acc[k], x, y);
    int s = 0;
    for (int k = 0; k < 8; k++)
        s += _mm_cvtsi128_si32(_mm512_castsi512_si128(acc[k]));
    a->out = s;
    return NULL;
}

/* --------------------------------------------------------------- engine */

typedef struct figures {
    double pp, tg, s32, s256;
} figures;

static double streams(asn_engine *en, const int32_t *prompt, int V, int B)
{
    asn_err e;
    int root = asn_seq_new(en), steps = 44;
    asn_batch_item it = {root, prompt, 20, NULL, 0, NULL, NULL};
    asn_engine_decode(en, &it, 1, &e);
    asn_batch_item *items = malloc((size_t)B * sizeof *items);
    int32_t *tok = malloc((size_t)B * sizeof *tok);
    float *logits = malloc((size_t)B * V * sizeof *logits);
    for (int b = 0; b < B; b++) {
        tok[b] = (int32_t)(b * 31 % V);
        items[b] = (asn_batch_item){asn_seq_fork(en, root), &tok[b], 1, logits + (size_t)b * V, 0, NULL, NULL};
    }
    double t0 = now();
    for (int st = 0; st < steps; st++)
        if (asn_engine_decode(en, items, B, &e)) {
            fprintf(stderr, "bench_quant: %s\n", e.msg);
            exit(1);
        }
    double tps = B * steps / (now() - t0);
    for (int b = 0; b < B; b++)
        asn_seq_free(en, items[b].seq);
    asn_seq_free(en, root);
    free(items), free(tok), free(logits);
    return tps;
}

/* asn's figures for one model: prefill and decode (part 0), or the
 * streams (part 1), so that each runs just before llama.cpp's figure for
 * the same thing (the machine's bandwidth moves from minute to minute). */
static figures measure(const char *path, int threads, int part)
{
    asn_err e;
    asn_model *m = asn_model_load(path, &e);
    if (!m) {
        fprintf(stderr, "bench_quant: %s\n", e.msg);
        exit(1);
    }
    int V = asn_model_cfg(m)->n_vocab;
    asn_pool *pool = asn_pool_new(threads);
    asn_engine *en = asn_engine_new(m, 1024, pool, &e);
    int32_t prompt[512];
    for (int i = 0; i < 512; i++)
        prompt[i] = (int32_t)(1 + i * 7919 % (V - 1));
    float *logits = malloc((size_t)V * sizeof *logits);
    figures f = {0};
    if (part == 1) {
        f.s32 = streams(en, prompt, V, 32);
        f.s256 = streams(en, prompt, V, 256);
    } else {
        /* as llama-bench measures pp512 and tg128: a warm-up run (it also
         * pages the file in), then the mean tokens/s of 3 runs, each a new
         * sequence; decode 128 tokens one at a time from an empty one */
        enum { REPS = 3 };
        for (int rep = 0; rep <= REPS; rep++) {
            int s = asn_seq_new(en);
            asn_batch_item it = {s, prompt, 512, logits, 0, NULL, NULL};
            double t0 = now();
            asn_engine_decode(en, &it, 1, &e);
            f.pp += rep ? 512 / (now() - t0) / REPS : 0;
            asn_seq_free(en, s);
        }
        for (int rep = 0; rep <= REPS; rep++) {
            int s = asn_seq_new(en);
            double t0 = now();
            for (int i = 0; i < 128; i++) {
                asn_batch_item it = {s, &prompt[i], 1, logits, 0, NULL, NULL};
                asn_engine_decode(en, &it, 1, &e);
            }
            f.tg += rep ? 128 / (now() - t0) / REPS : 0;
            asn_seq_free(en, s);
        }
    }
    free(logits);
    asn_engine_free(en);
    asn_pool_free(pool);
    asn_model_free(m);
    return f;
}

/* llama-bench's mean tokens/s for pp512 and tg128 (CSV output), or 0. */
static void llama_bench(const char *bin, const char *path, int threads, double *pp, double *tg)
{
    char cmd[8192], line[8192];
    snprintf(cmd, sizeof cmd, "'%s' -m '%s' -t %d -p 512 -n 128 -r 3 -o csv 2>/dev/null", bin, path, threads);
    *pp = *tg = 0;
    FILE *p = popen(cmd, "r");
    if (!p)
        return;
    int col_p = -1, col_n = -1, col_ts = -1;
    while (fgets(line, sizeof line, p)) {
        char *fields[128];
        int nf = 0;
        for (char *s = line, *tok; nf < 128 && (tok = strsep(&s, ",")); nf++) {
            size_t l = strlen(tok);
            while (l && (tok[l - 1] == '\n' || tok[l - 1] == '"'))
                tok[--l] = 0;
            fields[nf] = tok + (tok[0] == '"');
        }
        if (col_ts < 0) {
            for (int i = 0; i < nf; i++) {
                if (!strcmp(fields[i], "n_prompt")) col_p = i;
                if (!strcmp(fields[i], "n_gen")) col_n = i;
                if (!strcmp(fields[i], "avg_ts")) col_ts = i;
            }
            continue;
        }
        if (col_p < 0 || col_n < 0 || nf <= col_ts)
            continue;
        if (atoi(fields[col_p]) > 0)
            *pp = atof(fields[col_ts]);
        else if (atoi(fields[col_n]) > 0)
            *tg = atof(fields[col_ts]);
    }
    pclose(p);
}

/* llama-batched's decode tokens/s with B sequences, or 0. */
static double llama_batched(const char *bin, const char *path, int threads, int B)
{
    char cmd[8192], line[8192];
    /* 20 tokens with the SPM and Qwen2 vocabularies' tokenizers, or near it */
    snprintf(cmd, sizeof cmd,
             "'%s' -m '%s' -t %d -np %d -n 64 -kvu -p 'The quick brown fox jumps over the lazy dog while seven "
             "bakers argue about the price' 2>&1",
             bin, path, threads, B);
    FILE *p = popen(cmd, "r");
    double v = 0;
    while (p && fgets(line, sizeof line, p)) {
        char *sp = strstr(line, "speed: ");
        if (sp && strstr(line, "decoded"))
            v = atof(sp + 7);
    }
    if (p)
        pclose(p);
    return v;
}

/* The median of n figures (n <= 16), sorted in place. */
static double median(double *v, int n)
{
    for (int i = 1; i < n; i++)
        for (int k = i; k > 0 && v[k] < v[k - 1]; k--) {
            double t = v[k];
            v[k] = v[k - 1], v[k - 1] = t;
        }
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double ratio(double a, double b) { return b > 0 ? a / b : 0; }

/* One model, `rounds` times: asn's figures and llama.cpp's (where given)
 * per round, then the medians. */
static void bench_model(const char *path, int threads, int rounds, const char *lb, const char *lbat)
{
    enum { MAXR = 16, NF = 8 }; /* asn pp tg s32 s256, llama pp tg s32 s256 */
    double v[NF][MAXR] = {{0}};
    const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    for (int r = 0; r < rounds; r++) {
        figures f = measure(path, threads, 0);
        v[0][r] = f.pp, v[1][r] = f.tg;
        printf("%-28s asn: prefill %7.1f  decode %6.1f tok/s\n", name, f.pp, f.tg);
        if (lb) {
            llama_bench(lb, path, threads, &v[4][r], &v[5][r]);
            printf("%-28s llama.cpp: prefill %7.1f  decode %6.1f   asn/llama.cpp: prefill %.2f  decode %.2f\n",
                   "", v[4][r], v[5][r], ratio(f.pp, v[4][r]), ratio(f.tg, v[5][r]));
        }
        f = measure(path, threads, 1);
        v[2][r] = f.s32, v[3][r] = f.s256;
        printf("%-28s asn: 32 streams %7.1f  256 streams %7.1f tok/s\n", "", f.s32, f.s256);
        if (lbat) {
            v[6][r] = llama_batched(lbat, path, threads, 32), v[7][r] = llama_batched(lbat, path, threads, 256);
            printf("%-28s llama-batched: 32 streams %7.1f  256 streams %7.1f   asn/llama.cpp: %.2f / %.2f\n", "",
                   v[6][r], v[7][r], ratio(f.s32, v[6][r]), ratio(f.s256, v[7][r]));
        }
        fflush(stdout);
    }
    if (rounds < 2)
        return;
    double m[NF];
    for (int i = 0; i < NF; i++)
        m[i] = median(v[i], rounds);
    printf("%-28s median of %d: asn %.1f / %.1f / %.1f / %.1f", "", rounds, m[0], m[1], m[2], m[3]);
    if (lb || lbat)
        printf("  llama.cpp %.1f / %.1f / %.1f / %.1f  asn/llama.cpp %.2f / %.2f / %.2f / %.2f", m[4], m[5], m[6],
               m[7], ratio(m[0], m[4]), ratio(m[1], m[5]), ratio(m[2], m[6]), ratio(m[3], m[7]));
    printf("  (prefill / decode / 32 / 256 streams)\n");
    fflush(stdout);
}

int main(int argc, char **argv)
{
    int threads = 2, rounds = 1, first = 1;
    for (; first + 1 < argc && argv[first][0] == '-'; first += 2) {
        if (!strcmp(argv[first], "-t"))
            threads = atoi(argv[first + 1]);
        else if (!strcmp(argv[first], "-r"))
            rounds = atoi(argv[first + 1]);
        else
            break;
    }
    if (threads < 1 || rounds < 1 || rounds > 16) {
        fprintf(stderr, "usage: bench_quant [-t THREADS] [-r ROUNDS (1-16)] MODEL.gguf...\n");
        return 2;
    }
    int v4 = asn_cpu_has(ASN_CPU_AVX512F), vnni = asn_cpu_has(ASN_CPU_AVX512VNNI);
    double bw = read_bandwidth(threads);
    printf("bench_quant: %d threads; read bandwidth %.1f GB/s; peak f32 FMA %.0f GFLOPS (%s); "
           "peak int8 %.0f GOPS (%s)\n",
           threads, bw / 1e9, peak_gops(threads, v4 ? fma_avx512 : fma_avx2, 2.0 * 12 * (v4 ? 16 : 8)),
           v4 ? "AVX-512" : "AVX2", peak_gops(threads, vnni ? int8_vnni : int8_avx2, 2.0 * 8 * (vnni ? 64 : 32)),
           vnni ? "AVX-512 VNNI" : "AVX2 maddubs");
    printf("kernels: f32 %s, integer %s\n", asn_matmul_kernel(), asn_qmatmul_kernel());
    const char *lb = getenv("LLAMA_BENCH"), *lbat = getenv("LLAMA_BATCHED");
    for (int i = first; i < argc; i++)
        bench_model(argv[i], threads, rounds, lb, lbat);
    return 0;
}
