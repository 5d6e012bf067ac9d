/* test_matmul.c — the f32 matrix product (asn_matmul, asn_matmul_f32,
 * asn_dot, asn_dot_cols16) against a scalar model of its summation order (asn/linalg.h):
 * 16 lane-wise partial sums over k = 0, 16, 32, ... (the last block
 * zero-padded), lanes added (i, i+8), (i, i+4), (i, i+2), (i, i+1).
 * Every kernel variant this machine can run (ASN_MATMUL_KERNEL, each in a
 * child process since the choice is made once; avx512 the tiles alone,
 * avx512x with the X-packed kernels) must equal the model bit
 * for bit — fused multiply-adds for avx512 and avx2 (and on aarch64 for
 * neon and base alike), unfused for base on x86 — at
 * sizes that are not multiples of any tile or of 16, with row strides, in
 * row chunks, with 1 and 3 threads; so the variants equal one another
 * wherever they share FMA, and every output is the same alone or in any
 * batch. The model itself is checked against float64. */
#include "asn/cpu.h"
#include "asn/gguf.h"
#include "asn/linalg.h"
#include "asn/pool.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "t.h"

static uint64_t rng = 88172645463325252ull;
static float rndf(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)((double)(rng >> 40) / 16777216.0 * 2.0 - 1.0);
}

/* The order of asn/linalg.h, one lane at a time. This file is compiled
 * with -ffp-contract=off: w * x + a rounds twice unless fmaf is called. */
static float model_dot(const float *x, const float *w, int K, int fused)
{
    float a[16] = {0};
    for (int k0 = 0; k0 < K; k0 += 16)
        for (int i = 0; i < 16; i++) {
            float xv = k0 + i < K ? x[k0 + i] : 0.0f, wv = k0 + i < K ? w[k0 + i] : 0.0f;
            if (fused) {
                a[i] = fmaf(wv, xv, a[i]);
            } else {
                float p = wv * xv;
                a[i] = a[i] + p;
            }
        }
    for (int h = 8; h > 0; h /= 2)
        for (int i = 0; i < h; i++)
            a[i] = a[i] + a[i + h];
    return a[0];
}

static int same_bits(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

typedef struct shape {
    int T, N, K;
} shape;

/* T and N around every tile size (1..8 tokens or rows, remainders of 2, 3,
 * 5, 6, 8), K around 16; the last ones span several row chunks. From 3 to
 * 127 tokens, while T x K is at most 2^19, AVX2 takes outer products over
 * X packed (groups of 16 tokens, of 8 up to 8 tokens, the last group
 * padded; tiles of 6 rows, 12 up to 8 tokens; K in blocks of 1024): the
 * shapes from 3 tokens on (from 64 the threads pack X's groups between
 * them), the last lines with T in 8..77 around 8 and 16, rows past
 * multiples of 6 and 12, K under 16 (lanes with no term) and past 1024
 * with a partial last 16. From 128 tokens on, or past 2^19, it packs 16
 * rows of W and X in groups of 6 tokens (the last group padded with zero
 * tokens): the last seven shapes, rows past 16, a last group of 1..5
 * tokens, K under 16 and past 1024. */
static const shape shapes[] = {
    {1, 1, 1},    {1, 7, 5},     {2, 3, 15},   {3, 5, 16},   {4, 6, 17},   {5, 9, 31},
    {6, 11, 32},  {7, 13, 33},   {8, 17, 47},  {9, 10, 64},  {10, 12, 100}, {11, 19, 129},
    {13, 23, 255}, {16, 16, 256}, {17, 25, 257}, {1, 67, 768}, {3, 31, 768}, {25, 40, 1000},
    {2, 150, 1000}, {7, 130, 1024}, {64, 70, 96},
    {8, 16, 16},  {12, 33, 48},  {19, 47, 769}, {23, 17, 1537}, {8, 20, 5}, {30, 16, 1}, {14, 49, 1045},
    {8, 25, 100}, {8, 12, 1040},  {9, 13, 35},  {16, 6, 80},  {17, 31, 513}, {24, 7, 15},  {31, 50, 200},
    {32, 37, 768}, {33, 11, 3},   {40, 19, 600}, {47, 26, 1100}, {63, 5, 64},  {64, 23, 17},
    {65, 20, 100}, {77, 33, 530}, {128, 16, 16}, {131, 35, 40}, {133, 17, 9}, {200, 19, 700},
    {520, 21, 1010}, {600, 17, 1537}, {256, 48, 1031},
};

/* Runs every shape on the kernel this process picked; fused: which model
 * to match (-1: whichever the first output matches, for machines where
 * that is the compiler's choice). Returns the number of failed checks. */
static int check_kernel(const char *name, int fused)
{
    int failed = 0;
    double worst = 0; /* error relative to sum |w x|, over all outputs */
    asn_pool *pools[2] = {asn_pool_new(1), asn_pool_new(3)};
    int n_model = 0, n_threads = 0, n_f32 = 0, n_dot = 0, n_cols = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int T = shapes[s].T, N = shapes[s].N, K = shapes[s].K;
        int ldx = K + 3, ldw = K + 5, ldy = N + 2;
        float *X = malloc(sizeof *X * (size_t)T * ldx), *W = malloc(sizeof *W * (size_t)N * ldw),
              *Wc = malloc(sizeof *Wc * (size_t)N * K), *bias = malloc(sizeof *bias * (size_t)N),
              *Y = malloc(sizeof *Y * (size_t)T * ldy), *Y3 = malloc(sizeof *Y3 * (size_t)T * ldy),
              *Yf = malloc(sizeof *Yf * (size_t)T * ldy);
        for (size_t i = 0; i < (size_t)T * ldx; i++)
            X[i] = rndf();
        for (size_t i = 0; i < (size_t)N * ldw; i++)
            W[i] = rndf();
        for (int r = 0; r < N; r++) {
            memcpy(Wc + (size_t)r * K, W + (size_t)r * ldw, sizeof *Wc * (size_t)K);
            bias[r] = rndf();
        }
        asn_matmul(pools[0], X, T, ldx, K, Wc, ASN_T_F32, N, bias, Y, ldy);
        asn_matmul(pools[1], X, T, ldx, K, Wc, ASN_T_F32, N, bias, Y3, ldy);
        asn_matmul_f32(X, T, ldx, K, W, ldw, N, Yf, ldy);
        if (fused < 0) {
            float m = model_dot(X, W, K, 1) + bias[0];
            fused = same_bits(Y[0], m) ? 1 : 0;
        }
        for (int t = 0; t < T; t++)
            for (int r = 0; r < N; r++) {
                const float *x = X + (size_t)t * ldx, *w = W + (size_t)r * ldw;
                float m = model_dot(x, w, K, fused);
                size_t o = (size_t)t * ldy + r;
                if (!same_bits(Y[o], m + bias[r]) && n_model++ < 3)
                    printf("# %s T=%d N=%d K=%d t=%d r=%d: %.9g, the model %.9g\n", name, T, N, K, t, r,
                           Y[o], m + bias[r]);
                if (!same_bits(Y3[o], Y[o]))
                    n_threads++;
                if (!same_bits(Yf[o], m))
                    n_f32++;
                double exact = 0, mag = 0;
                for (int k = 0; k < K; k++)
                    exact += (double)x[k] * w[k], mag += fabs((double)x[k] * w[k]);
                double err = fabs((double)m - exact) / (mag > 0 ? mag : 1);
                worst = err > worst ? err : worst;
            }
        float d = asn_dot(X, W, K);
        if (!same_bits(d, model_dot(X, W, K, fused)))
            n_dot++;
        /* 16 rows of W transposed (rows past N: row 0 again) */
        float *Wt = malloc(sizeof *Wt * (size_t)K * 16);
        for (int k = 0; k < K; k++)
            for (int j = 0; j < 16; j++)
                Wt[(size_t)k * 16 + j] = W[(size_t)(j < N ? j : 0) * ldw + k];
        /* the first nt tokens of X (every count up to 7), outputs 20 apart */
        int nt = T < 7 ? T : 7;
        float c16[7 * 20];
        for (int n = 1; n <= nt; n++) {
            memset(c16, 0, sizeof c16);
            asn_dot_cols16(X, ldx, n, K, Wt, c16, 20);
            for (int i = 0; i < n; i++)
                for (int j = 0; j < 16; j++)
                    if (!same_bits(c16[i * 20 + j],
                                   model_dot(X + (size_t)i * ldx, W + (size_t)(j < N ? j : 0) * ldw, K, fused)))
                        n_cols++;
            for (int i = 0; i < 7; i++) /* nothing written past token n, nor between rows */
                for (int j = i < n ? 16 : 0; j < 20; j++)
                    n_cols += c16[i * 20 + j] != 0;
        }
        free(Wt);
        free(X), free(W), free(Wc), free(bias), free(Y), free(Y3), free(Yf);
    }
    char tn[160];
#define CHECK(what, n)                                                                             \
    do {                                                                                           \
        snprintf(tn, sizeof tn, "matmul %s (%s): %s", name, fused ? "fused" : "unfused", what);    \
        T_OK(tn, (n) == 0, "%d outputs differ", n);                                                \
        failed += (n) != 0;                                                                        \
    } while (0)
    CHECK("asn_matmul equals the order model bit for bit at every shape", n_model);
    CHECK("3 threads equal 1 thread", n_threads);
    CHECK("asn_matmul_f32 with row strides equals the order model", n_f32);
    CHECK("asn_dot equals the order model", n_dot);
    CHECK("asn_dot_cols16 (1-7 tokens x 16 transposed rows) equals the order model", n_cols);
    /* the name asn_matmul_kernel gives is the kernel forced, or the one this
     * CPU's features select (independently of matmul.c's choice) */
#if defined(__x86_64__)
    const char *top = asn_cpu_has(ASN_CPU_V4) ? "avx512" : asn_cpu_has(ASN_CPU_AVX2 | ASN_CPU_FMA) ? "avx2" : "base";
#elif defined(__aarch64__)
    const char *top = asn_cpu_has(ASN_CPU_NEON) ? "neon" : "base";
#else
    const char *top = "base";
#endif
    const char *want = !strcmp(name, "avx512x") ? "avx512+xpacked" : strcmp(name, "default") ? name : top;
    /* the default on AVX-512 may add the X-packed kernels it timed faster */
    const char *got = asn_matmul_kernel();
    int same = !strcmp(got, want) || (!strcmp(name, "default") && !strcmp(want, "avx512") &&
                                      !strcmp(got, "avx512+xpacked"));
    snprintf(tn, sizeof tn, "matmul %s: asn_matmul_kernel() says %s", name, want);
    T_OK(tn, same, "it says %s", got);
    failed += !same;
    /* f32 sums of up to 1000 terms: a few K * 2^-24 of sum |w x| at most */
    snprintf(tn, sizeof tn, "matmul %s: the order model is within 1000 * 2^-24 of float64 (relative to sum |w x|)", name);
    T_OK(tn, worst <= 1000.0 / 16777216.0, "worst %g", worst);
    failed += !(worst <= 1000.0 / 16777216.0);
    asn_pool_free(pools[0]);
    asn_pool_free(pools[1]);
    return failed;
}

/* Runs check_kernel in a child with ASN_MATMUL_KERNEL=name (NULL: the
 * machine's choice); the kernel is picked once per process. */
static void in_child(const char *name, int fused)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        if (name)
            setenv("ASN_MATMUL_KERNEL", name, 1);
        int failed = check_kernel(name ? name : "default", fused);
        fflush(stdout);
        _exit(failed ? 1 : 0);
    }
    int status = 0;
    char tn[80];
    snprintf(tn, sizeof tn, "matmul %s: the checking process ran to the end", name ? name : "default");
    T_OK(tn, pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status),
         "fork or wait failed, or killed by signal %d", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    if (pid > 0 && WIFEXITED(status) && WEXITSTATUS(status))
        t_failed++; /* the child printed which check */
}

int main(void)
{
#if defined(__x86_64__)
    int avx512 = asn_cpu_has(ASN_CPU_V4), avx2 = asn_cpu_has(ASN_CPU_AVX2 | ASN_CPU_FMA);
    in_child("base", 0);
    if (avx2)
        in_child("avx2", 1);
    else
        printf("ok - matmul avx2: # SKIP no AVX2/FMA on this machine\n");
    if (avx512) {
        in_child("avx512", 1);
        in_child("avx512x", 1);
    } else {
        printf("ok - matmul avx512: # SKIP no AVX-512 on this machine\n");
        printf("ok - matmul avx512x: # SKIP no AVX-512 on this machine\n");
    }
    in_child(NULL, avx2);
#elif defined(__aarch64__)
    /* base: GCC vectors contracted to FMLA (-ffp-contract=fast); neon:
     * vfmaq_f32; both fused, so equal to each other */
    in_child("base", 1);
    if (asn_cpu_has(ASN_CPU_NEON))
        in_child("neon", 1);
    else
        printf("ok - matmul neon: # SKIP no NEON on this machine\n");
    in_child(NULL, 1);
#else
    in_child(NULL, -1);
#endif
    T_DONE();
}
