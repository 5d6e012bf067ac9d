/* test_qmatmul.c — the integer matrix product of quantized weights
 * (asn_qmatmul) against float64 references, and its determinism:
 *   - every type, against a float64 dot product of the dequantized weights
 *     with the activations quantized as the header describes (computed here
 *     on its own): agreement to f32 rounding (1e-5 relative);
 *   - against the unquantized activations: within the bound that 8-bit
 *     activations allow (sum |w| * dx / 2);
 *   - bit-identical across kernel variants, batch sizes (each token alone
 *     or in any batch), row counts not a multiple of the tile, and thread
 *     counts;
 *   - ASN_MATMUL_KERNEL selects a kernel the machine runs and is ignored
 *     for one it cannot (make test-arm runs this on an emulated CPU
 *     without the dot product). */
#include "asn/gguf.h"
#include "asn/linalg.h"
#include "asn/pool.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "model/qunpack.h"
#include "t.h"

typedef struct qt {
    uint32_t type;
    int S;          /* super-block */
    int half[2];    /* byte offsets of f16 fields (-1: none) */
} qt;

static const qt types[] = {
    {ASN_T_Q8_0, 32, {0, -1}},   {ASN_T_Q4_0, 32, {0, -1}},   {ASN_T_Q4_1, 32, {0, 2}},
    {ASN_T_Q5_0, 32, {0, -1}},   {ASN_T_Q5_1, 32, {0, 2}},    {ASN_T_IQ4_NL, 32, {0, -1}},
    {ASN_T_Q2_K, 256, {80, 82}}, {ASN_T_Q3_K, 256, {108, -1}}, {ASN_T_Q4_K, 256, {0, 2}},
    {ASN_T_Q5_K, 256, {0, 2}},   {ASN_T_Q6_K, 256, {208, -1}}, {ASN_T_IQ4_XS, 256, {0, -1}},
};

static uint64_t rng = 88172645463325252ull;
static uint32_t rnd32(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}
static float rndf(void) { return (float)((rnd32() & 0xffffff) / 16777216.0 * 2.0 - 1.0); }

/* Random blocks: random bytes, scale fields set to finite halves. */
static uint8_t *random_weights(const qt *t, int N, int K, size_t *row_bytes)
{
    int be, bb;
    asn_ttype_block(t->type, &be, &bb);
    *row_bytes = (size_t)(K / be) * bb;
    uint8_t *W = malloc(*row_bytes * N);
    for (size_t i = 0; i < *row_bytes * N; i++)
        W[i] = (uint8_t)rnd32();
    for (size_t b = 0; b < (size_t)N * (K / be); b++)
        for (int f = 0; f < 2; f++)
            if (t->half[f] >= 0) {
                uint16_t h = asn_f32_to_f16((f ? 0.002f : 0.01f) * (0.5f + (rnd32() % 1000) / 1000.0f));
                W[b * bb + t->half[f]] = (uint8_t)h;
                W[b * bb + t->half[f] + 1] = (uint8_t)(h >> 8);
            }
    return W;
}

/* The activation quantization, written out from the header's description. */
static void ref_quant(const float *x, int K, int S, double *xq, double *dxs)
{
    for (int b = 0; b < K / S; b++) {
        float amax = 0;
        for (int j = 0; j < S; j++)
            amax = fabsf(x[b * S + j]) > amax ? fabsf(x[b * S + j]) : amax;
        float d = amax / 127.0f, id = amax > 0 ? 127.0f / amax : 0.0f;
        dxs[b] = d;
        for (int j = 0; j < S; j++)
            xq[b * S + j] = (double)roundf(x[b * S + j] * id) * d;
    }
}

static int run(asn_pool *pool, const char *kernel, const float *X, int T, int K, const uint8_t *W,
               uint32_t type, int N, const float *bias, float *Y)
{
    if (asn_qmatmul_set_kernel(kernel))
        return -2;
    return asn_qmatmul(pool, X, T, K, K, W, type, N, bias, Y, N);
}

/* ASN_MATMUL_KERNEL=name in a child (the choice is made once per process,
 * so before this process makes its own): the kernel it gets, as an index
 * into kernels (-1: another name), and whether that child could select the
 * kernel by name (*can). */
static int forced(const char *const *kernels, int nk, const char *name, int *can)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        setenv("ASN_MATMUL_KERNEL", name, 1);
        const char *got = asn_qmatmul_kernel();
        int ok = asn_qmatmul_set_kernel(name) == 0;
        for (int i = 0; i < nk; i++)
            if (!strcmp(got, kernels[i]))
                _exit(2 * i + ok);
        _exit(254 + ok);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
        return -2;
    *can = WEXITSTATUS(status) & 1;
    return WEXITSTATUS(status) >= 254 ? -1 : WEXITSTATUS(status) / 2;
}

int main(void)
{
    const char *kernels[] = {"base", "avx2", "avxvnni", "avx512", "avx512vnni", "neon", "neondot"};
    const int nk = (int)(sizeof kernels / sizeof kernels[0]);
    /* each name forced, then the machine's own choice: before this
     * process selects any */
    unsetenv("ASN_MATMUL_KERNEL");
    int got[16], can[16];
    for (int i = 0; i < nk; i++)
        got[i] = forced(kernels, nk, kernels[i], &can[i]);
    const char *def = asn_qmatmul_kernel();
    printf("# this machine's integer kernel: %s\n", def);
    asn_pool *pool2 = asn_pool_new(2), *pool3 = asn_pool_new(3);
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        const qt *t = &types[ti];
        const char *tn = asn_ttype_name(t->type);
        int K = t->S == 32 ? 160 : 512, N = 21, T = 9;
        size_t rb;
        uint8_t *W = random_weights(t, N, K, &rb);
        float *X = malloc(sizeof(float) * T * K), *bias = malloc(sizeof(float) * N);
        for (int i = 0; i < T * K; i++)
            X[i] = rndf() * (i % 7 == 0 ? 4.0f : 1.0f);
        for (int i = 0; i < N; i++)
            bias[i] = rndf();
        float *Y = malloc(sizeof(float) * T * N), *Y2 = malloc(sizeof(float) * T * N);
        char name[160];

        /* float64 references */
        double *w = malloc(sizeof(double) * K), *xq = malloc(sizeof(double) * K),
               *dxs = malloc(sizeof(double) * K);
        float *wf = malloc(sizeof(float) * K);
        T_OK(tn, asn_qmatmul_supported(t->type, K), "not supported");
        int rc = run(pool2, "base", X, T, K, W, t->type, N, bias, Y);
        T_EQ_INT("asn_qmatmul returns 0", rc, 0);
        double worst_q = 0, worst_bound = 0;
        for (int n = 0; n < N; n++) {
            asn_dequantize_row(t->type, W + rb * n, wf, K);
            for (int k = 0; k < K; k++)
                w[k] = wf[k];
            for (int s = 0; s < T; s++) {
                const float *x = X + (size_t)s * K;
                ref_quant(x, K, t->S, xq, dxs);
                double yq = bias[n], y = bias[n], bound = 0, mag = 0;
                for (int k = 0; k < K; k++) {
                    yq += w[k] * xq[k];
                    y += w[k] * x[k];
                    bound += fabs(w[k]) * dxs[k / t->S] / 2;
                    mag += fabs(w[k] * x[k]);
                }
                double got = Y[(size_t)s * N + n];
                double eq = fabs(got - yq) / (mag + fabs(bias[n]) + 1e-30);
                worst_q = eq > worst_q ? eq : worst_q;
                double eb = fabs(got - y) / (bound * 1.001 + 1e-6 * (mag + 1));
                worst_bound = eb > worst_bound ? eb : worst_bound;
            }
        }
        snprintf(name, sizeof name, "%s: equals float64 with quantized activations (rel err %.2g)", tn, worst_q);
        T_OK(name, worst_q <= 1e-5, "relative error %g > 1e-5", worst_q);
        snprintf(name, sizeof name, "%s: within the 8-bit activation bound of float64", tn);
        T_OK(name, worst_bound <= 1.0, "error %.3g x the bound", worst_bound);

        /* determinism */
        for (size_t ki = 1; ki < sizeof kernels / sizeof kernels[0]; ki++) {
            rc = run(pool2, kernels[ki], X, T, K, W, t->type, N, bias, Y2);
            if (rc == -2) {
                printf("ok - %s: kernel %s (not on this machine, skipped)\n", tn, kernels[ki]);
                continue;
            }
            snprintf(name, sizeof name, "%s: kernel %s bit-identical to base", tn, kernels[ki]);
            T_OK(name, !memcmp(Y, Y2, sizeof(float) * T * N), "outputs differ");
            for (int s = 0; s < T; s++) {
                float one[64];
                asn_qmatmul(NULL, X + (size_t)s * K, 1, K, K, W, t->type, N, bias, one, N);
                if (memcmp(one, Y + (size_t)s * N, sizeof(float) * N)) {
                    snprintf(name, sizeof name, "%s: kernel %s token %d alone equals batch", tn, kernels[ki], s);
                    T_OK(name, 0, "outputs differ");
                }
            }
            /* three threads, a batch of 3, the last 7 rows only */
            asn_qmatmul(pool3, X, 3, K, K, W + rb * 14, t->type, 7, bias + 14, Y2, 7);
            int same = 1;
            for (int s = 0; s < 3; s++)
                for (int n = 0; n < 7; n++)
                    same &= !memcmp(&Y2[s * 7 + n], &Y[(size_t)s * N + 14 + n], sizeof(float));
            snprintf(name, sizeof name, "%s: kernel %s: 3 threads, partial rows, batch 3 equal", tn, kernels[ki]);
            T_OK(name, same, "outputs differ");
        }
        free(W), free(X), free(bias), free(Y), free(Y2), free(w), free(xq), free(dxs), free(wf);
    }
    /* the kernels' own table of block sizes against the type table */
#define QU_CHECK(T, FN, S, BYTES)                                                                 \
    {                                                                                             \
        int be_, bb_;                                                                             \
        asn_ttype_block(T, &be_, &bb_);                                                           \
        T_OK("qunpack.h " #T " super-block and bytes", be_ == S && bb_ == BYTES && qu_super(T) == S && qu_bytes(T) == BYTES, \
             "%d/%d in the type table", be_, bb_);                                                \
    }
    QU_TYPES(QU_CHECK)
#undef QU_CHECK
    T_OK("F32 has no integer kernel", !asn_qmatmul_supported(ASN_T_F32, 64), "supported");
    T_OK("K not a multiple of the super-block", !asn_qmatmul_supported(ASN_T_Q4_K, 896), "supported");
    T_OK("unknown kernel name refused", asn_qmatmul_set_kernel("sse9") == -1, "accepted");
    /* a forced kernel the machine cannot run is ignored: the machine's own
     * choice runs instead */
    for (int i = 0; i < nk; i++) {
        char name[160];
        snprintf(name, sizeof name, "ASN_MATMUL_KERNEL=%s %s", kernels[i],
                 can[i] ? "selects it" : "is ignored (not on this machine)");
        T_OK(name, got[i] >= 0 && !strcmp(kernels[got[i]], can[i] ? kernels[i] : def), "got %s",
             got[i] >= 0 ? kernels[got[i]] : "another name");
    }
    asn_pool_free(pool2);
    asn_pool_free(pool3);
    T_DONE();
}
