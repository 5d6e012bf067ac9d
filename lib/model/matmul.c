/* matmul.c — Y = X W^T with a fixed per-element summation order (see
 * asn/linalg.h), register-tiled, one kernel per instruction-set level.
 *
 * Each output element owns one 16-lane accumulator fed k = 0, 16, 32, ...
 * and reduced by the same tree, whatever the tile it falls in: tiles change
 * speed, never bits. This file is compiled with -ffp-contract=fast (see the
 * Makefile) so the multiply-add fuses where the target has FMA. */
#include "asn/cpu.h"
#include "asn/linalg.h"
#include "asn/gguf.h"
#include "matmul_neon.h"

#include <stdlib.h>
#include <pthread.h>
#include <string.h>

/* Native vector widths: one 16-lane accumulator is one v16 (AVX-512), two
 * v8 halves (AVX2) or four v4 quarters (SSE2, NEON); part p holds lanes
 * p * width ... (p + 1) * width - 1. A vector wider than the target's
 * registers would be split by the compiler through memory and general
 * registers, so each kernel uses only its own width. */
typedef float v16 __attribute__((vector_size(64)));
typedef float v8 __attribute__((vector_size(32)));
typedef float v4 __attribute__((vector_size(16)));

/* The helpers are inlined into each target's kernel: no vector crosses an
 * ABI boundary. */
#pragma GCC diagnostic ignored "-Wpsabi"

/* The lanes of one vector reduced pairwise, (i, i + width/2) first, down to
 * (i, i+1); with the parts added first ((i, i+8) across parts, ...) this is
 * the one tree of every kernel: (i, i+8), (i, i+4), (i, i+2), (i, i+1). */
static inline __attribute__((always_inline)) float hsum_v16(v16 a)
{
    a += __builtin_shufflevector(a, a, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7);
    a += __builtin_shufflevector(a, a, 4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11);
    a += __builtin_shufflevector(a, a, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13);
    a += __builtin_shufflevector(a, a, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14);
    return a[0];
}

static inline __attribute__((always_inline)) float hsum_v8(v8 a)
{
    a += __builtin_shufflevector(a, a, 4, 5, 6, 7, 0, 1, 2, 3);
    a += __builtin_shufflevector(a, a, 2, 3, 0, 1, 6, 7, 4, 5);
    a += __builtin_shufflevector(a, a, 1, 0, 3, 2, 5, 4, 7, 6);
    return a[0];
}

static inline __attribute__((always_inline)) float hsum_v4(v4 a)
{
    a += __builtin_shufflevector(a, a, 2, 3, 0, 1);
    a += __builtin_shufflevector(a, a, 1, 0, 3, 2);
    return a[0];
}

enum { MAXR = 8, MAXT = 8 };

/* Keeps a loaded vector in a register: without it GCC folds the load into
 * each multiply-add that uses it, reading memory once per use. (A vector
 * used once is left to GCC, which folds its load.) */
#if defined(__x86_64__) && !defined(__clang__) /* clang: not for vectors wider than the function's target */
#define IN_REG(v) __asm__("" : "+v"(v))
#elif defined(__aarch64__)
#define IN_REG(v) __asm__("" : "+w"(v))
#else
#define IN_REG(v) ((void)0)
#endif

/* One tile of tn = N tokens (N <= TT): R rows at once or one row at a time. */
#define TILE_CASE(NAME, N)                                                                        \
    do {                                                                                          \
        if (TT >= N)                                                                              \
            rows == R ? NAME(x, ldx, wi, ldw, K, R, N, oi) : NAME(x, ldx, wi, ldw, K, 1, N, oi);  \
    } while (0)

/* NAME(X, ldx, W, ldw, K, R, T, out): out[r * MAXT + t] = dot(W row r, X row
 * t) for r < R, t < T (R <= MAXR, T <= MAXT, compile-time constants), with
 * vectors of type V (VW lanes, 16 / VW parts per accumulator). The
 * accumulator array is indexed only by constants once the loops are
 * unrolled, so the compiler keeps it in registers; a tile must fit the
 * target's vector registers (R * T * 16 / VW accumulators, plus the loaded
 * operands), or accumulators spill to the stack. NAME##_any: a tile of
 * rn <= R rows and tn <= TT tokens, with R and the token count
 * compile-time constants in every call to NAME. */
#define DEFINE_TILE(NAME, V, VW, HSUM)                                                            \
    static inline __attribute__((always_inline)) V NAME##_load(const float *p)                    \
    {                                                                                             \
        V v;                                                                                      \
        memcpy(&v, p, sizeof v);                                                                  \
        return v;                                                                                 \
    }                                                                                             \
                                                                                                  \
    static inline __attribute__((always_inline)) void NAME(const float *X, int ldx, const float *W, \
                                                           int ldw, int K, int R, int T, float *out) \
    {                                                                                             \
        enum { NP = 16 / VW };                                                                    \
        V acc[MAXR][MAXT][NP];                                                                    \
        const float *w_[MAXR], *x_[MAXT];                                                         \
        for (int r = 0; r < MAXR; r++)                                                            \
            w_[r] = W + (size_t)(r < R ? r : 0) * ldw;                                            \
        for (int t = 0; t < MAXT; t++)                                                            \
            x_[t] = X + (size_t)(t < T ? t : 0) * ldx;                                            \
        _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                                       \
            _Pragma("GCC unroll 8") for (int t = 0; t < T; t++)                                   \
                _Pragma("GCC unroll 8") for (int p = 0; p < NP; p++)                              \
                    acc[r][t][p] = (V){0};                                                        \
        int k = 0;                                                                                \
        for (; k + 16 <= K; k += 16) {                                                            \
            /* the shorter side of the tile held in registers, the other streamed */              \
            _Pragma("GCC unroll 8") for (int p = 0; p < NP; p++) {                                \
                if (R <= T) {                                                                     \
                    V w[MAXR];                                                                    \
                    _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                           \
                        w[r] = NAME##_load(w_[r] + k + p * VW);                                   \
                    _Pragma("GCC unroll 8") for (int t = 0; t < T; t++) {                         \
                        V x = NAME##_load(x_[t] + k + p * VW);                                    \
                        if (R > 1)                                                                \
                            IN_REG(x);                                                            \
                        _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                       \
                            acc[r][t][p] += w[r] * x;                                             \
                    }                                                                             \
                } else {                                                                          \
                    V x[MAXT];                                                                    \
                    _Pragma("GCC unroll 8") for (int t = 0; t < T; t++) {                         \
                        x[t] = NAME##_load(x_[t] + k + p * VW);                                   \
                        IN_REG(x[t]); /* R > T >= 1: used R times */                              \
                    }                                                                             \
                    _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) {                         \
                        V w = NAME##_load(w_[r] + k + p * VW);                                    \
                        if (T > 1)                                                                \
                            IN_REG(w);                                                            \
                        _Pragma("GCC unroll 8") for (int t = 0; t < T; t++)                       \
                            acc[r][t][p] += w * x[t];                                             \
                    }                                                                             \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
        if (k < K) { /* zero-padded tail: the same lanes, the same order */                       \
            float wb[MAXR][16], xb[MAXT][16];                                                     \
            size_t n = (size_t)(K - k) * sizeof(float);                                           \
            _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) {                                 \
                memset(wb[r], 0, sizeof wb[r]);                                                   \
                memcpy(wb[r], w_[r] + k, n);                                                      \
            }                                                                                     \
            _Pragma("GCC unroll 8") for (int t = 0; t < T; t++) {                                 \
                memset(xb[t], 0, sizeof xb[t]);                                                   \
                memcpy(xb[t], x_[t] + k, n);                                                      \
            }                                                                                     \
            _Pragma("GCC unroll 8") for (int p = 0; p < NP; p++)                                  \
                _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                               \
                    _Pragma("GCC unroll 8") for (int t = 0; t < T; t++)                           \
                        acc[r][t][p] += NAME##_load(wb[r] + p * VW) * NAME##_load(xb[t] + p * VW); \
        }                                                                                         \
        _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                                       \
            _Pragma("GCC unroll 8") for (int t = 0; t < T; t++) {                                 \
                /* parts folded (i, i+8), then (i, i+4) while lanes span parts */                 \
                _Pragma("GCC unroll 8") for (int h = NP / 2; h > 0; h /= 2)                       \
                    _Pragma("GCC unroll 8") for (int p = 0; p < h; p++)                           \
                        acc[r][t][p] += acc[r][t][p + h];                                         \
                out[r * MAXT + t] = HSUM(acc[r][t][0]);                                           \
            }                                                                                     \
    }                                                                                             \
                                                                                                  \
    static inline __attribute__((always_inline)) void NAME##_any(const float *x, int ldx,         \
                                                                 const float *w, int ldw, int K,  \
                                                                 int R, int TT, int rn, int tn,   \
                                                                 float *out)                      \
    {                                                                                             \
        int rows = rn == R ? R : 1, reps = rn == R ? 1 : rn;                                      \
        for (int i = 0; i < reps; i++) {                                                          \
            const float *wi = w + (size_t)i * ldw;                                                \
            float *oi = out + i * MAXT;                                                           \
            switch (tn) {                                                                         \
            case 1: TILE_CASE(NAME, 1); break;                                                    \
            case 2: TILE_CASE(NAME, 2); break;                                                    \
            case 3: TILE_CASE(NAME, 3); break;                                                    \
            case 4: TILE_CASE(NAME, 4); break;                                                    \
            case 5: TILE_CASE(NAME, 5); break;                                                    \
            case 6: TILE_CASE(NAME, 6); break;                                                    \
            case 7: TILE_CASE(NAME, 7); break;                                                    \
            case 8: TILE_CASE(NAME, 8); break;                                                    \
            }                                                                                     \
        }                                                                                         \
    }

DEFINE_TILE(tile16, v16, 16, hsum_v16)
DEFINE_TILE(tile8, v8, 8, hsum_v8)
DEFINE_TILE(tile4, v4, 4, hsum_v4)

/* Multiplies all T rows of X by `nrows` rows of W (f32, stride ldw) in tiles
 * of RR rows by TT tokens. Rows go in chunks of about 256 KB so that a chunk
 * stays in L2 while every token passes over it. */
#define DEFINE_ROWS(TILE)                                                                         \
    static inline __attribute__((always_inline)) void TILE##_rows(                                \
        const float *X, int T, int ldx, int K, const float *W, int ldw, int nrows,                \
        const float *bias, float *Y, int ldy, int RR, int TT)                                     \
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
                    TILE##_any(x, ldx, w, ldw, K, RR, TT, rn, tn, out);                           \
                    for (int r = 0; r < rn; r++)                                                  \
                        for (int t = 0; t < tn; t++)                                              \
                            Y[(size_t)(t0 + t) * ldy + r0 + r] =                                  \
                                out[r * MAXT + t] + (bias ? bias[r0 + r] : 0.0f);                 \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
    }

DEFINE_ROWS(tile16)
DEFINE_ROWS(tile8)
DEFINE_ROWS(tile4)

/* A kernel: tiles of RR rows by TT tokens, or R1 rows by one token when
 * there is a single token (decode), where there is nothing to share a
 * loaded row of W with. */
#define DEFINE_BLOCK(NAME, TARGET, TILE, RR, TT, R1)                                              \
    TARGET static void NAME(const float *X, int T, int ldx, int K, const float *W, int ldw,       \
                            int nrows, const float *bias, float *Y, int ldy)                      \
    {                                                                                             \
        if (T == 1)                                                                               \
            TILE##_rows(X, T, ldx, K, W, ldw, nrows, bias, Y, ldy, R1, 1);                        \
        else                                                                                      \
            TILE##_rows(X, T, ldx, K, W, ldw, nrows, bias, Y, ldy, RR, TT);                       \
    }

#define DEFINE_DOT(NAME, TARGET, TILE)                                                            \
    TARGET static float NAME(const float *a, const float *b, int K)                               \
    {                                                                                             \
        float out[MAXR * MAXT];                                                                   \
        TILE(a, K, b, K, K, 1, 1, out);                                                           \
        return out[0];                                                                            \
    }

/* out[j] = dot(x, column j of Wt) for j < 16, Wt K rows of 16 (Wt[k * 16 +
 * j]): the products of the tiles above, transposed. The tiles give output
 * (t, j) one 16-lane accumulator whose lane l takes k = l, l + 16, ...;
 * here that lane is a vector p_l whose lanes are the columns j, so p_l[j]
 * gets the same multiply-adds in the same order. Lanes l and l + 8 are
 * summed one after the other, each over its whole k chain, and added at
 * once (the tree's first level), then (l, l+4), (l, l+2), (l, l+1) add
 * whole vectors: the same bits as asn_dot(x, column j), sixteen at a time
 * without horizontal sums, with eight vectors live (all sixteen p_l would
 * not fit beside the operands in 16 registers). */
#define DEFINE_COLS16(NAME, TARGET, V, VW)                                                         \
    TARGET static inline __attribute__((always_inline)) V NAME##_lane(const float *x, int K,       \
                                                                       const float *Wt, int c, int l) \
    {                                                                                              \
        V p = (V){0};                                                                              \
        for (int k = l; k < K; k += 16) {                                                          \
            V w;                                                                                   \
            memcpy(&w, Wt + (size_t)k * 16 + c, sizeof w);                                         \
            p += w * x[k];                                                                         \
        }                                                                                          \
        return p;                                                                                  \
    }                                                                                              \
                                                                                                   \
    TARGET static void NAME(const float *x, int K, const float *Wt, float *out)                    \
    {                                                                                              \
        _Pragma("GCC unroll 4") for (int c = 0; c < 16; c += VW) {                                 \
            V s[8];                                                                                \
            _Pragma("GCC unroll 8") for (int l = 0; l < 8; l++)                                    \
                s[l] = NAME##_lane(x, K, Wt, c, l) + NAME##_lane(x, K, Wt, c, l + 8);              \
            _Pragma("GCC unroll 4") for (int h = 4; h > 0; h /= 2)                                 \
                _Pragma("GCC unroll 8") for (int l = 0; l < h; l++)                                \
                    s[l] += s[l + h];                                                              \
            memcpy(out + c, &s[0], sizeof s[0]);                                                   \
        }                                                                                          \
    }

typedef void (*cols16_fn)(const float *, int, const float *, float *);
static cols16_fn cols16_impl;

typedef void (*block_fn)(const float *, int, int, int, const float *, int, int, const float *, float *, int);
typedef float (*dot_fn)(const float *, const float *, int);
static dot_fn dot_impl;

#if defined(__x86_64__)
#define V4_TARGET __attribute__((target("arch=x86-64-v4")))
#define V3_TARGET __attribute__((target("arch=x86-64-v3")))
#define V1_TARGET __attribute__((target("arch=x86-64")))
/* Tile shapes by measurement (one core, T = 32..128, K and N 768..2048):
 * AVX-512, 32 registers: 5 rows x 5 tokens, 25 accumulators; AVX2, 16
 * registers: 2 x 3, 12 accumulator halves + 2 rows + 1 token; SSE2, 16
 * registers: 1 x 3, 12 accumulator quarters. A single token (decode, W
 * streamed from memory) takes 4, 6 and 3 rows, the fastest counts there. */
DEFINE_BLOCK(block_avx512, V4_TARGET, tile16, 5, 5, 4)
DEFINE_BLOCK(block_avx2, V3_TARGET, tile8, 2, 3, 6)
DEFINE_BLOCK(block_base, V1_TARGET, tile4, 1, 3, 3)
DEFINE_DOT(dot_avx512, V4_TARGET, tile16)
DEFINE_DOT(dot_avx2, V3_TARGET, tile8)
DEFINE_DOT(dot_base, V1_TARGET, tile4)
DEFINE_COLS16(cols16_avx512, V4_TARGET, v16, 16)
DEFINE_COLS16(cols16_avx2, V3_TARGET, v8, 8)
DEFINE_COLS16(cols16_base, V1_TARGET, v4, 4)

static block_fn block_impl;

/* Chooses the kernels once (pick_block's pthread_once). */
static void choose_kernels(void)
{
    /* ASN_MATMUL_KERNEL=avx512|avx2|base forces a kernel (tests compare them) */
    const char *force = getenv("ASN_MATMUL_KERNEL");
    if (force && !strcmp(force, "base"))
        block_impl = block_base, dot_impl = dot_base, cols16_impl = cols16_base;
    else if (force && !strcmp(force, "avx2"))
        block_impl = block_avx2, dot_impl = dot_avx2, cols16_impl = cols16_avx2;
    else if (asn_cpu_has(ASN_CPU_V4))
        block_impl = block_avx512, dot_impl = dot_avx512, cols16_impl = cols16_avx512;
    else if (asn_cpu_has(ASN_CPU_AVX2 | ASN_CPU_FMA))
        block_impl = block_avx2, dot_impl = dot_avx2, cols16_impl = cols16_avx2;
    else
        block_impl = block_base, dot_impl = dot_base, cols16_impl = cols16_base;
}
#else
/* Other architectures: 128-bit GCC vectors (NEON on aarch64), the same
 * order. Whether the multiply-add fuses is the target's (-ffp-contract=fast).
 * Tiles sized for aarch64's 32 vector registers (24 accumulator quarters),
 * not measured. */
DEFINE_BLOCK(block_generic, , tile4, 2, 3, 6)
DEFINE_DOT(dot_generic, , tile4)
DEFINE_COLS16(cols16_generic, , v4, 4)

static block_fn block_impl;

static void choose_kernels(void)
{
    dot_impl = dot_generic;
    block_impl = block_generic;
    cols16_impl = cols16_generic;
#if defined(__aarch64__)
    /* NEON intrinsics (matmul_neon.c), the same bits; ASN_MATMUL_KERNEL=base
     * keeps the generic code */
    const char *force = getenv("ASN_MATMUL_KERNEL");
    if (!(force && !strcmp(force, "base")) && asn_cpu_has(ASN_CPU_NEON))
        block_impl = mm_neon_block, dot_impl = mm_neon_dot;
#endif
}
#endif

/* The kernels, chosen on first use by whichever thread gets there first
 * (attention calls asn_matmul_f32 from every worker). */
static block_fn pick_block(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, choose_kernels);
    return block_impl;
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

void asn_dot_cols16(const float *x, int K, const float *Wt, float *out)
{
    pick_block();
    cols16_impl(x, K, Wt, out);
}

float asn_dot(const float *a, const float *b, int K)
{
    pick_block();
    return dot_impl(a, b, K);
}
