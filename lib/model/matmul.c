/* matmul.c — Y = X W^T with a fixed per-element summation order (see
 * asn/linalg.h), register-tiled, one kernel per instruction-set level.
 *
 * Each output element owns one 16-lane accumulator fed k = 0, 16, 32, ...
 * and reduced by the same tree, whatever the tile it falls in: tiles change
 * speed, never bits. This file is compiled with -ffp-contract=fast (see the
 * Makefile) so the multiply-add fuses where the target has FMA. */
#include "asn/linalg.h"
#include "asn/gguf.h"

#include <stdlib.h>
#include <string.h>

typedef float v16 __attribute__((vector_size(64)));

/* The helpers are inlined into each target's kernel: no vector crosses an
 * ABI boundary. */
#pragma GCC diagnostic ignored "-Wpsabi"

static inline __attribute__((always_inline)) v16 load16(const float *p)
{
    v16 v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* Lanes reduced pairwise: (i, i+8), then (i, i+4), (i, i+2), (i, i+1). */
static inline __attribute__((always_inline)) float hsum(v16 a)
{
    float l[16];
    memcpy(l, &a, sizeof l);
    for (int w = 8; w >= 1; w /= 2)
        for (int i = 0; i < w; i++)
            l[i] = l[i] + l[i + w];
    return l[0];
}

enum { MAXR = 4, MAXT = 4 };

/* out[r * MAXT + t] = dot(W row r, X row t) for r < R, t < T. */
static inline __attribute__((always_inline)) void tile(const float *X, int ldx, const float *W,
                                                       int ldw, int K, int R, int T, float *out)
{
    v16 acc[MAXR][MAXT];
    for (int r = 0; r < R; r++)
        for (int t = 0; t < T; t++)
            acc[r][t] = (v16){0};
    int k = 0;
    for (; k + 16 <= K; k += 16) {
        v16 w[MAXR], x[MAXT];
        for (int r = 0; r < R; r++)
            w[r] = load16(W + (size_t)r * ldw + k);
        for (int t = 0; t < T; t++)
            x[t] = load16(X + (size_t)t * ldx + k);
        for (int r = 0; r < R; r++)
            for (int t = 0; t < T; t++)
                acc[r][t] += w[r] * x[t];
    }
    if (k < K) { /* zero-padded tail: the same lanes, the same order */
        v16 w[MAXR] = {{0}}, x[MAXT] = {{0}};
        for (int r = 0; r < R; r++)
            memcpy(&w[r], W + (size_t)r * ldw + k, (size_t)(K - k) * sizeof(float));
        for (int t = 0; t < T; t++)
            memcpy(&x[t], X + (size_t)t * ldx + k, (size_t)(K - k) * sizeof(float));
        for (int r = 0; r < R; r++)
            for (int t = 0; t < T; t++)
                acc[r][t] += w[r] * x[t];
    }
    for (int r = 0; r < R; r++)
        for (int t = 0; t < T; t++)
            out[r * MAXT + t] = hsum(acc[r][t]);
}

/* A tile of rn <= R rows and tn <= 4 tokens, with R and the token count
 * compile-time constants in every call to tile(). */
static inline __attribute__((always_inline)) void tile_any(const float *x, int ldx, const float *w,
                                                           int ldw, int K, int R, int rn, int tn,
                                                           float *out)
{
    int rows = rn == R ? R : 1, reps = rn == R ? 1 : rn;
    for (int i = 0; i < reps; i++) {
        const float *wi = w + (size_t)i * ldw;
        float *oi = out + i * MAXT;
        switch (tn) {
        case 1: rows == R ? tile(x, ldx, wi, ldw, K, R, 1, oi) : tile(x, ldx, wi, ldw, K, 1, 1, oi); break;
        case 2: rows == R ? tile(x, ldx, wi, ldw, K, R, 2, oi) : tile(x, ldx, wi, ldw, K, 1, 2, oi); break;
        case 3: rows == R ? tile(x, ldx, wi, ldw, K, R, 3, oi) : tile(x, ldx, wi, ldw, K, 1, 3, oi); break;
        default: rows == R ? tile(x, ldx, wi, ldw, K, R, 4, oi) : tile(x, ldx, wi, ldw, K, 1, 4, oi); break;
        }
    }
}

/* Multiplies all T rows of X by `nrows` rows of W (f32, stride ldw). Rows
 * go in chunks of about 256 KB so that a chunk stays in L2 while every
 * token passes over it. */
#define DEFINE_BLOCK(NAME, TARGET, RR, TT)                                                        \
    __attribute__((target(TARGET))) static void NAME(const float *X, int T, int ldx, int K,       \
                                                     const float *W, int ldw, int nrows,          \
                                                     const float *bias, float *Y, int ldy)         \
    {                                                                                             \
        float out[MAXR * MAXT];                                                                   \
        int chunk = (65536 / (K > 0 ? K : 1)) / RR * RR;                                          \
        if (chunk < RR)                                                                           \
            chunk = RR;                                                                           \
        for (int c0 = 0; c0 < nrows; c0 += chunk) {                                               \
            int cend = c0 + chunk < nrows ? c0 + chunk : nrows;                                   \
            for (int t0 = 0; t0 < T; t0 += TT) {                                                  \
                int tn = T - t0 < TT ? T - t0 : TT;                                               \
                for (int r0 = c0; r0 < cend; r0 += RR) {                                          \
                    int rn = cend - r0 < RR ? cend - r0 : RR;                                     \
                    const float *x = X + (size_t)t0 * ldx, *w = W + (size_t)r0 * ldw;             \
                    tile_any(x, ldx, w, ldw, K, RR, rn, tn, out);                                 \
                    for (int r = 0; r < rn; r++)                                                  \
                        for (int t = 0; t < tn; t++)                                              \
                            Y[(size_t)(t0 + t) * ldy + r0 + r] =                                  \
                                out[r * MAXT + t] + (bias ? bias[r0 + r] : 0.0f);                 \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
    }

DEFINE_BLOCK(block_avx512, "arch=x86-64-v4", 4, 4)
DEFINE_BLOCK(block_avx2, "arch=x86-64-v3", 2, 3)
DEFINE_BLOCK(block_base, "arch=x86-64", 2, 2)

typedef void (*block_fn)(const float *, int, int, int, const float *, int, int, const float *, float *, int);

static block_fn pick_block(void)
{
    static block_fn fn;
    if (!fn) {
        __builtin_cpu_init();
        /* ASN_MATMUL_KERNEL=avx512|avx2|base forces a kernel (tests compare them) */
        const char *force = getenv("ASN_MATMUL_KERNEL");
        if (force && !strcmp(force, "base"))
            fn = block_base;
        else if (force && !strcmp(force, "avx2"))
            fn = block_avx2;
        else if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
            __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
            fn = block_avx512;
        else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
            fn = block_avx2;
        else
            fn = block_base;
    }
    return fn;
}

/* ------------------------------------------------------------- driver */

enum { ROWS_PER_BLOCK = 16 };

typedef struct mm_task {
    const float *X;
    int T, ldx, K;
    const uint8_t *W;
    uint32_t wtype;
    size_t row_bytes;
    int N;
    const float *bias;
    float *Y;
    int ldy;
    asn_pool *pool;
    block_fn block;
} mm_task;

static void mm_run(void *arg, int ith, int nth)
{
    mm_task *m = arg;
    int lo, hi;
    asn_split(m->N, ith, nth, ROWS_PER_BLOCK, &lo, &hi);
    if (m->wtype == ASN_T_F32) {
        if (hi > lo)
            m->block(m->X, m->T, m->ldx, m->K, (const float *)(m->W + (size_t)lo * m->row_bytes),
                     m->K, hi - lo, m->bias ? m->bias + lo : NULL, m->Y + lo, m->ldy);
        return;
    }
    float *buf = asn_pool_scratch(m->pool, ith, (size_t)ROWS_PER_BLOCK * (size_t)m->K * sizeof(float));
    for (int r0 = lo; r0 < hi; r0 += ROWS_PER_BLOCK) {
        int rn = hi - r0 < ROWS_PER_BLOCK ? hi - r0 : ROWS_PER_BLOCK;
        for (int r = 0; r < rn; r++)
            asn_dequantize_row(m->wtype, m->W + (size_t)(r0 + r) * m->row_bytes,
                               buf + (size_t)r * m->K, m->K);
        m->block(m->X, m->T, m->ldx, m->K, buf, m->K, rn, m->bias ? m->bias + r0 : NULL,
                 m->Y + r0, m->ldy);
    }
}

void asn_matmul(asn_pool *pool, const float *X, int T, int ldx, int K, const void *W,
                uint32_t wtype, int N, const float *bias, float *Y, int ldy)
{
    mm_task m = {X, T, ldx, K, W, wtype, asn_ttype_row_bytes(wtype, K), N, bias, Y, ldy, pool,
                 pick_block()};
    asn_pool_run(pool, mm_run, &m);
}

float asn_dot(const float *a, const float *b, int K)
{
    float out;
    pick_block()(a, 1, K, K, b, K, 1, NULL, &out, 1);
    return out;
}
