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

/* Lanes reduced pairwise: (i, i+8), then (i, i+4), (i, i+2), (i, i+1), as
 * vector adds of shuffled copies (the same additions as the scalar tree). */
static inline __attribute__((always_inline)) float hsum(v16 a)
{
    a += __builtin_shufflevector(a, a, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7);
    a += __builtin_shufflevector(a, a, 4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11);
    a += __builtin_shufflevector(a, a, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13);
    a += __builtin_shufflevector(a, a, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14);
    return a[0];
}

enum { MAXR = 4, MAXT = 4 };

/* out[r * MAXT + t] = dot(W row r, X row t) for r < R, t < T (R, T <= 4,
 * compile-time constants). Accumulators are separate variables, not an
 * array, so that they stay in registers. */
static inline __attribute__((always_inline)) void tile(const float *X, int ldx, const float *W,
                                                       int ldw, int K, int R, int T, float *out)
{
    v16 a00 = {0};
    v16 a01 = {0};
    v16 a02 = {0};
    v16 a03 = {0};
    v16 a10 = {0};
    v16 a11 = {0};
    v16 a12 = {0};
    v16 a13 = {0};
    v16 a20 = {0};
    v16 a21 = {0};
    v16 a22 = {0};
    v16 a23 = {0};
    v16 a30 = {0};
    v16 a31 = {0};
    v16 a32 = {0};
    v16 a33 = {0};
    const float *w_[MAXR], *x_[MAXT];
    for (int r = 0; r < MAXR; r++)
        w_[r] = W + (size_t)(r < R ? r : 0) * ldw;
    for (int t = 0; t < MAXT; t++)
        x_[t] = X + (size_t)(t < T ? t : 0) * ldx;
    int k = 0;
    for (; k + 16 <= K; k += 16) {
        v16 w0 = load16(w_[0] + k), x0 = load16(x_[0] + k), w1 = {0}, w2 = {0}, w3 = {0}, x1 = {0}, x2 = {0}, x3 = {0};
        if (R > 1) w1 = load16(w_[1] + k);
        if (R > 2) w2 = load16(w_[2] + k);
        if (R > 3) w3 = load16(w_[3] + k);
        if (T > 1) x1 = load16(x_[1] + k);
        if (T > 2) x2 = load16(x_[2] + k);
        if (T > 3) x3 = load16(x_[3] + k);
        if (R > 0 && T > 0) a00 += w0 * x0;
        if (R > 0 && T > 1) a01 += w0 * x1;
        if (R > 0 && T > 2) a02 += w0 * x2;
        if (R > 0 && T > 3) a03 += w0 * x3;
        if (R > 1 && T > 0) a10 += w1 * x0;
        if (R > 1 && T > 1) a11 += w1 * x1;
        if (R > 1 && T > 2) a12 += w1 * x2;
        if (R > 1 && T > 3) a13 += w1 * x3;
        if (R > 2 && T > 0) a20 += w2 * x0;
        if (R > 2 && T > 1) a21 += w2 * x1;
        if (R > 2 && T > 2) a22 += w2 * x2;
        if (R > 2 && T > 3) a23 += w2 * x3;
        if (R > 3 && T > 0) a30 += w3 * x0;
        if (R > 3 && T > 1) a31 += w3 * x1;
        if (R > 3 && T > 2) a32 += w3 * x2;
        if (R > 3 && T > 3) a33 += w3 * x3;
    }
    if (k < K) { /* zero-padded tail: the same lanes, the same order */
        v16 w0 = {0}, w1 = {0}, w2 = {0}, w3 = {0}, x0 = {0}, x1 = {0}, x2 = {0}, x3 = {0};
        size_t n = (size_t)(K - k) * sizeof(float);
        memcpy(&w0, w_[0] + k, n);
        memcpy(&x0, x_[0] + k, n);
        if (R > 1) memcpy(&w1, w_[1] + k, n);
        if (R > 2) memcpy(&w2, w_[2] + k, n);
        if (R > 3) memcpy(&w3, w_[3] + k, n);
        if (T > 1) memcpy(&x1, x_[1] + k, n);
        if (T > 2) memcpy(&x2, x_[2] + k, n);
        if (T > 3) memcpy(&x3, x_[3] + k, n);
        if (R > 0 && T > 0) a00 += w0 * x0;
        if (R > 0 && T > 1) a01 += w0 * x1;
        if (R > 0 && T > 2) a02 += w0 * x2;
        if (R > 0 && T > 3) a03 += w0 * x3;
        if (R > 1 && T > 0) a10 += w1 * x0;
        if (R > 1 && T > 1) a11 += w1 * x1;
        if (R > 1 && T > 2) a12 += w1 * x2;
        if (R > 1 && T > 3) a13 += w1 * x3;
        if (R > 2 && T > 0) a20 += w2 * x0;
        if (R > 2 && T > 1) a21 += w2 * x1;
        if (R > 2 && T > 2) a22 += w2 * x2;
        if (R > 2 && T > 3) a23 += w2 * x3;
        if (R > 3 && T > 0) a30 += w3 * x0;
        if (R > 3 && T > 1) a31 += w3 * x1;
        if (R > 3 && T > 2) a32 += w3 * x2;
        if (R > 3 && T > 3) a33 += w3 * x3;
    }
    if (R > 0 && T > 0) out[0 * MAXT + 0] = hsum(a00);
    if (R > 0 && T > 1) out[0 * MAXT + 1] = hsum(a01);
    if (R > 0 && T > 2) out[0 * MAXT + 2] = hsum(a02);
    if (R > 0 && T > 3) out[0 * MAXT + 3] = hsum(a03);
    if (R > 1 && T > 0) out[1 * MAXT + 0] = hsum(a10);
    if (R > 1 && T > 1) out[1 * MAXT + 1] = hsum(a11);
    if (R > 1 && T > 2) out[1 * MAXT + 2] = hsum(a12);
    if (R > 1 && T > 3) out[1 * MAXT + 3] = hsum(a13);
    if (R > 2 && T > 0) out[2 * MAXT + 0] = hsum(a20);
    if (R > 2 && T > 1) out[2 * MAXT + 1] = hsum(a21);
    if (R > 2 && T > 2) out[2 * MAXT + 2] = hsum(a22);
    if (R > 2 && T > 3) out[2 * MAXT + 3] = hsum(a23);
    if (R > 3 && T > 0) out[3 * MAXT + 0] = hsum(a30);
    if (R > 3 && T > 1) out[3 * MAXT + 1] = hsum(a31);
    if (R > 3 && T > 2) out[3 * MAXT + 2] = hsum(a32);
    if (R > 3 && T > 3) out[3 * MAXT + 3] = hsum(a33);
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

#define DEFINE_DOT(NAME, TARGET)                                                                  \
    __attribute__((target(TARGET))) static float NAME(const float *a, const float *b, int K)      \
    {                                                                                             \
        float out[MAXR * MAXT];                                                                   \
        tile(a, K, b, K, K, 1, 1, out);                                                           \
        return out[0];                                                                            \
    }

DEFINE_BLOCK(block_avx512, "arch=x86-64-v4", 4, 4)
DEFINE_BLOCK(block_avx2, "arch=x86-64-v3", 2, 2)
DEFINE_BLOCK(block_base, "arch=x86-64", 2, 2)
DEFINE_DOT(dot_avx512, "arch=x86-64-v4")
DEFINE_DOT(dot_avx2, "arch=x86-64-v3")
DEFINE_DOT(dot_base, "arch=x86-64")

typedef void (*block_fn)(const float *, int, int, int, const float *, int, int, const float *, float *, int);
typedef float (*dot_fn)(const float *, const float *, int);
static dot_fn dot_impl;

static block_fn pick_block(void)
{
    static block_fn fn;
    if (!fn) {
        __builtin_cpu_init();
        /* ASN_MATMUL_KERNEL=avx512|avx2|base forces a kernel (tests compare them) */
        const char *force = getenv("ASN_MATMUL_KERNEL");
        if (force && !strcmp(force, "base"))
            fn = block_base, dot_impl = dot_base;
        else if (force && !strcmp(force, "avx2"))
            fn = block_avx2, dot_impl = dot_avx2;
        else if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
            __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
            fn = block_avx512, dot_impl = dot_avx512;
        else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
            fn = block_avx2, dot_impl = dot_avx2;
        else
            fn = block_base, dot_impl = dot_base;
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

void asn_matmul_f32(const float *X, int T, int ldx, int K, const float *W, int ldw, int N, float *Y, int ldy)
{
    pick_block()(X, T, ldx, K, W, ldw, N, NULL, Y, ldy);
}

float asn_dot(const float *a, const float *b, int K)
{
    if (!dot_impl)
        pick_block();
    return dot_impl(a, b, K);
}
