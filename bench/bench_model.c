/* bench_model.c — the engine on a random-weight Llama-shaped model of about
 * 125M parameters (dim 768, 12 layers, 12 query / 4 KV heads, ffn 2048,
 * vocab 32000, untied output), in F32 and Q8_0, on N threads (default 2):
 *   - prompt prefill tokens/s (one 512-token prompt);
 *   - decode tokens/s at batch 1, 8, 32, 128 (sequences forked from one
 *     64-token prompt, 16 steps each);
 *   - achieved GFLOPS of the decode's matrix products, as a fraction of
 *     OpenBLAS sgemm on the same shapes measured in the same run;
 *   - batch-1 decode weight bytes/s as a fraction of measured memory read
 *     bandwidth (the bound of a memory-bound decode).
 * Targets (issue): batch-128 decode >= 50% of sgemm GFLOPS; batch-1 decode
 * >= 60% of the bandwidth bound. Usage: bench_model [THREADS] [DIR]. */
#include "asn/gguf.h"
#include "asn/model.h"

#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"

/* ------------------------------------------------------------ baselines */

/* sgemm GFLOPS over the decode's shapes at M rows (OpenBLAS, same threads). */
static double sgemm_gflops(int M, int threads)
{
    openblas_set_num_threads(threads);
    struct { int n, k; } shp[] = {{HEADS * 64, DIM}, {KV_HEADS * 64, DIM}, {KV_HEADS * 64, DIM}, {DIM, DIM},
                                  {FF, DIM}, {FF, DIM}, {DIM, FF}};
    float *W = malloc((size_t)FF * DIM * sizeof *W), *X = malloc((size_t)M * FF * sizeof *X),
          *Y = malloc((size_t)M * FF * sizeof *Y);
    for (size_t i = 0; i < (size_t)FF * DIM; i++)
        W[i] = rnd();
    for (size_t i = 0; i < (size_t)M * FF; i++)
        X[i] = rnd();
    double flops = 0, t0 = now();
    int reps = 0;
    do {
        for (size_t s = 0; s < sizeof shp / sizeof shp[0]; s++) {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, shp[s].n, shp[s].k, 1, X, shp[s].k, W,
                        shp[s].k, 0, Y, shp[s].n);
            flops += 2.0 * M * shp[s].n * shp[s].k;
        }
        reps++;
    } while (now() - t0 < 1.0 || reps < 3);
    double g = flops / (now() - t0) / 1e9;
    free(W), free(X), free(Y);
    return g;
}

/* --------------------------------------------------------------- engine */

static void run(const char *path, const char *label, double bytes_per_token, int threads,
                double bw, const double *sgemm)
{
    asn_err e;
    asn_model *m = asn_model_load(path, &e);
    if (!m) {
        fprintf(stderr, "bench_model: %s\n", e.msg);
        exit(1);
    }
    asn_pool *pool = asn_pool_new(threads);
    asn_engine *en = asn_engine_new(m, 1024, pool, &e);
    int32_t prompt[512];
    for (int i = 0; i < 512; i++)
        prompt[i] = (int32_t)(i * 7919 % VOCAB);
    float *logits = malloc((size_t)128 * VOCAB * sizeof *logits);

    int s = asn_seq_new(en);
    asn_batch_item it = {s, prompt, 512, logits, 0, NULL, NULL};
    double t0 = now();
    asn_engine_decode(en, &it, 1, &e);
    double prefill = 512 / (now() - t0);
    asn_seq_free(en, s);
    printf("%-5s prefill (512-token prompt): %8.1f tokens/s\n", label, prefill);

    /* matmul flops per decoded token (layers + LM head) */
    double flops_tok = 2.0 * (LAYERS * ((double)DIM * (HEADS * 64 + 2 * KV_HEADS * 64) + (double)DIM * DIM +
                                        3.0 * DIM * FF) + (double)DIM * VOCAB);
    static const int batches[] = {1, 8, 32, 128};
    for (int bi = 0; bi < 4; bi++) {
        int B = batches[bi], steps = 16;
        int root = asn_seq_new(en);
        it = (asn_batch_item){root, prompt, 64, NULL, 0, NULL, NULL};
        asn_engine_decode(en, &it, 1, &e);
        asn_batch_item items[128];
        int32_t tok[128];
        for (int b = 0; b < B; b++) {
            tok[b] = (int32_t)(b * 31 % VOCAB);
            items[b] = (asn_batch_item){asn_seq_fork(en, root), &tok[b], 1, logits + (size_t)b * VOCAB, 0, NULL, NULL};
        }
        t0 = now();
        for (int st = 0; st < steps; st++)
            if (asn_engine_decode(en, items, B, &e)) {
                fprintf(stderr, "bench_model: %s\n", e.msg);
                exit(1);
            }
        double dt = now() - t0, tps = B * steps / dt, gf = flops_tok * tps / 1e9;
        printf("%-5s decode batch %3d: %8.1f tokens/s  %6.1f GFLOPS = %3.0f%% of sgemm (%.1f GFLOPS at M=%d)",
               label, B, tps, gf, 100 * gf / sgemm[bi], sgemm[bi], B);
        if (B == 1)
            printf("  weights %.2f GB/s = %3.0f%% of read bandwidth", bytes_per_token * tps / 1e9,
                   100 * bytes_per_token * tps / bw);
        printf("\n");
        for (int b = 0; b < B; b++)
            asn_seq_free(en, items[b].seq);
        asn_seq_free(en, root);
    }
    free(logits);
    asn_engine_free(en);
    asn_pool_free(pool);
    asn_model_free(m);
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 2;
    const char *dir = argc > 2 ? argv[2] : "build/bench";
    char p32[4096], p8[4096];
    snprintf(p32, sizeof p32, "%s/model-125m-f32.gguf", dir);
    snprintf(p8, sizeof p8, "%s/model-125m-q8_0.gguf", dir);
    double b32 = write_model(p32, ASN_T_F32, NULL), b8 = write_model(p8, ASN_T_Q8_0, NULL);
    double bw = read_bandwidth(threads);
    double sg[4];
    static const int Ms[] = {1, 8, 32, 128};
    for (int i = 0; i < 4; i++)
        sg[i] = sgemm_gflops(Ms[i], threads);
    printf("bench_model: ~125M-parameter Llama (dim %d, %d layers, %d/%d heads, ffn %d, vocab %d), %d threads\n",
           DIM, LAYERS, HEADS, KV_HEADS, FF, VOCAB, threads);
    printf("memory read bandwidth: %.2f GB/s; OpenBLAS sgemm (OPENBLAS_CORETYPE=%s): ", bw / 1e9,
           getenv("OPENBLAS_CORETYPE") ? getenv("OPENBLAS_CORETYPE") : "unset");
    for (int i = 0; i < 4; i++)
        printf("M=%d %.1f GFLOPS%s", Ms[i], sg[i], i < 3 ? ", " : "\n");
    run(p32, "F32", b32, threads, bw, sg);
    run(p8, "Q8_0", b8, threads, bw, sg);
    if (!getenv("ASN_BENCH_KEEP")) {
        remove(p32);
        remove(p8);
    }
    return 0;
}
