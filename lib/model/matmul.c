/* matmul.c — Y = X W^T with a fixed per-element summation order (see
 * asn/linalg.h), register-tiled, one kernel per instruction-set level.
 *
 * Each output element owns one 16-lane accumulator fed k = 0, 16, 32, ...
 * and reduced by the same tree, whatever the tile it falls in: tiles change
 * speed, never bits. The tiles are dot products (DEFINE_TILE: rows x tokens
 * of 16-lane accumulators) or, on AVX2 from 3 tokens on (on AVX-512 from
 * 16 tokens where timed faster, xpack_wins_v4), outer products:
 * over the tokens of X packed transposed while X is small (DEFINE_XPACKED:
 * each lane a vector over 32, 16 or 8 tokens, W read in place), else over 16
 * rows of W packed transposed (DEFINE_PACKED: each lane a vector over the
 * 16 rows), the same multiply-adds in the same order. This file is
 * compiled with -ffp-contract=fast (see the Makefile) so the multiply-add
 * fuses where the target has FMA. */
#include "asn/core.h"
#include "asn/cpu.h"
#include "asn/linalg.h"
#include "asn/gguf.h"
#include "matmul_neon.h"
#include "transpose8.h"

#include <stdlib.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

/* Native vector widths: one 16-lane accumulator is one v16 (AVX-512), two
 * v8 halves (AVX2) or four v4 quarters (SSE2, NEON); part p holds lanes
 * p * width ... (p + 1) * width - 1. A vector wider than the target's
 * registers would be split by the compiler through memory and general
 * registers, so each kernel uses only its own width. */
typedef float v16 __attribute__((vector_size(64)));
/* v8: transpose8.h */
typedef float v4 __attribute__((vector_size(16)));

/* The helpers are inlined into each target's kernel: no vector crosses an
 * ABI boundary. */
#pragma GCC diagnostic ignored "-Wpsabi"

/* The lanes of one vector reduced pairwise, (i, i + width/2) first, down to
 * (i, i+1); with the parts added first ((i, i+8) across parts, ...) this is
 * the one tree of every kernel: (i, i+8), (i, i+4), (i, i+2), (i, i+1).
 *
 * hsum_v16_many: res[i] = the sum of a[i]'s 16 lanes by that tree, for
 * i < n, sixteen sums at a time: each level adds the lanes the tree adds,
 * gathered from two vectors by one permute each (vpermt2ps), so that the
 * pairs of a level share one vector add. After level 1, vector m holds the eight pair sums
 * of a[2m] then those of a[2m + 1]; after level 4, lane q is a[q]'s sum.
 * A tile of 5 x 5 tokens spent 200 shuffles and adds on its sums one at
 * a time, against 90 here: 73 -> 79 GFLOPS at T = 256, K = 256 on one
 * Zen 4 core, none at K = 896, where the sums are a smaller share. */
static inline __attribute__((always_inline)) void hsum_v16_many(const v16 *a, int n, float *res)
{
    for (int g = 0; g < n; g += 16) {
        v16 x[16], b[8], c[4], d[2];
        _Pragma("GCC unroll 16") for (int i = 0; i < 16; i++)
            x[i] = g + i < n ? a[g + i] : (v16){0};
        _Pragma("GCC unroll 8") for (int m = 0; m < 8; m++)
            b[m] = __builtin_shufflevector(x[2 * m], x[2 * m + 1], 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20,
                                           21, 22, 23) +
                   __builtin_shufflevector(x[2 * m], x[2 * m + 1], 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27,
                                           28, 29, 30, 31);
        _Pragma("GCC unroll 4") for (int m = 0; m < 4; m++)
            c[m] = __builtin_shufflevector(b[2 * m], b[2 * m + 1], 0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24,
                                           25, 26, 27) +
                   __builtin_shufflevector(b[2 * m], b[2 * m + 1], 4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28,
                                           29, 30, 31);
        _Pragma("GCC unroll 2") for (int m = 0; m < 2; m++)
            d[m] = __builtin_shufflevector(c[2 * m], c[2 * m + 1], 0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21, 24,
                                           25, 28, 29) +
                   __builtin_shufflevector(c[2 * m], c[2 * m + 1], 2, 3, 6, 7, 10, 11, 14, 15, 18, 19, 22, 23, 26,
                                           27, 30, 31);
        v16 e = __builtin_shufflevector(d[0], d[1], 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30) +
                __builtin_shufflevector(d[0], d[1], 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
        _Pragma("GCC unroll 16") for (int i = 0; i < 16; i++)
            if (g + i < n)
                res[g + i] = e[i];
    }
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

/* The narrower vectors' sums one at a time (their tiles hold few). */
#define HSUM_MANY_EACH(NAME, V, HSUM)                                                              \
    static inline __attribute__((always_inline)) void NAME(const V *a, int n, float *res)          \
    {                                                                                              \
        _Pragma("GCC unroll 16") for (int i = 0; i < n; i++)                                       \
            res[i] = HSUM(a[i]);                                                                   \
    }
HSUM_MANY_EACH(hsum_v8_many, v8, hsum_v8)
HSUM_MANY_EACH(hsum_v4_many, v4, hsum_v4)

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
#define DEFINE_TILE(NAME, V, VW, HSUM_MANY)                                                       \
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
        V folded[MAXR * MAXT];                                                                    \
        float sums[MAXR * MAXT];                                                                  \
        _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                                       \
            _Pragma("GCC unroll 8") for (int t = 0; t < T; t++) {                                 \
                /* parts folded (i, i+8), then (i, i+4) while lanes span parts */                 \
                _Pragma("GCC unroll 8") for (int h = NP / 2; h > 0; h /= 2)                       \
                    _Pragma("GCC unroll 8") for (int p = 0; p < h; p++)                           \
                        acc[r][t][p] += acc[r][t][p + h];                                         \
                folded[r * T + t] = acc[r][t][0];                                                 \
            }                                                                                     \
        HSUM_MANY(folded, R * T, sums);                                                           \
        _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                                       \
            _Pragma("GCC unroll 8") for (int t = 0; t < T; t++)                                   \
                out[r * MAXT + t] = sums[r * T + t];                                              \
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

DEFINE_TILE(tile16, v16, 16, hsum_v16_many)
DEFINE_TILE(tile8, v8, 8, hsum_v8_many)
DEFINE_TILE(tile4, v4, 4, hsum_v4_many)

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

/* DEFINE_COLS16: out[i * ldo + j] = dot(token i, column j of Wt) for i <
 * nt, j < 16, where token i is row i of X and Wt is K rows of 16 floats
 * (Wt[k * 16 + j]): the products of the tiles above, transposed. The tiles
 * give output (t, j) one 16-lane accumulator whose lane l takes k = l, l +
 * 16, ...; here that lane is a vector p_l whose lanes are the columns j
 * (16 / VW vectors of VW), so p_l[j] gets the same multiply-adds in the
 * same order, one load of Wt's row k feeding up to TT tokens. Lanes l and
 * l + 8 are summed one after the other, each over its whole k chain, and
 * added (the tree's first level), then (l, l+4), (l, l+2), (l, l+1) add
 * whole vectors: the same bits as asn_dot(x, column j), without horizontal
 * sums. */
#define DEFINE_COLS16(NAME, TARGET, V, VW, TT)                                                     \
    static inline __attribute__((always_inline)) void NAME##_tile(const float *X, int ldx, int K,  \
                                                                  const float *Wt, float *out,     \
                                                                  int ldo, const int TN)           \
    {                                                                                              \
        enum { NH = 16 / VW };                                                                     \
        V s[8][TT][NH];                                                                            \
        _Pragma("GCC unroll 16") for (int l = 0; l < 16; l++) {                                    \
            V p[TT][NH];                                                                           \
            _Pragma("GCC unroll 8") for (int i = 0; i < TN; i++)                                   \
                _Pragma("GCC unroll 4") for (int h = 0; h < NH; h++)                               \
                    p[i][h] = (V){0};                                                              \
            for (int k = l; k < K; k += 16) {                                                      \
                V w[NH];                                                                           \
                _Pragma("GCC unroll 4") for (int h = 0; h < NH; h++)                               \
                    memcpy(&w[h], Wt + (size_t)k * 16 + h * VW, sizeof w[h]);                      \
                _Pragma("GCC unroll 8") for (int i = 0; i < TN; i++) {                             \
                    float xi = X[(size_t)i * ldx + k];                                             \
                    _Pragma("GCC unroll 4") for (int h = 0; h < NH; h++)                           \
                        p[i][h] += w[h] * xi;                                                      \
                }                                                                                  \
            }                                                                                      \
            _Pragma("GCC unroll 8") for (int i = 0; i < TN; i++)                                   \
                _Pragma("GCC unroll 4") for (int h = 0; h < NH; h++)                               \
                    s[l & 7][i][h] = l < 8 ? p[i][h] : s[l & 7][i][h] + p[i][h];                   \
        }                                                                                          \
        _Pragma("GCC unroll 4") for (int w = 4; w > 0; w /= 2)                                     \
            _Pragma("GCC unroll 8") for (int l = 0; l < w; l++)                                    \
                _Pragma("GCC unroll 8") for (int i = 0; i < TN; i++)                               \
                    _Pragma("GCC unroll 4") for (int h = 0; h < NH; h++)                           \
                        s[l][i][h] += s[l + w][i][h];                                              \
        for (int i = 0; i < TN; i++)                                                               \
            memcpy(out + (size_t)i * ldo, s[0][i], 16 * sizeof(float));                            \
    }                                                                                              \
                                                                                                   \
    TARGET static void NAME(const float *X, int ldx, int nt, int K, const float *Wt, float *out,   \
                            int ldo)                                                               \
    {                                                                                              \
        for (int i0 = 0; i0 < nt; i0 += TT) {                                                      \
            const float *x = X + (size_t)i0 * ldx;                                                 \
            float *o = out + (size_t)i0 * ldo;                                                     \
            switch (nt - i0 < TT ? nt - i0 : TT) {                                                 \
            case 1: NAME##_tile(x, ldx, K, Wt, o, ldo, 1); break;                                  \
            case 2: COLS16_CASE(NAME, TT, 2); break;                                               \
            case 3: COLS16_CASE(NAME, TT, 3); break;                                               \
            case 4: COLS16_CASE(NAME, TT, 4); break;                                               \
            }                                                                                      \
        }                                                                                          \
    }

#define COLS16_CASE(NAME, TT, N)                                                                   \
    do {                                                                                           \
        if (TT >= N)                                                                               \
            NAME##_tile(x, ldx, K, Wt, o, ldo, N);                                                 \
    } while (0)

/* The same outer products over many tokens, both operands packed: 16 rows
 * of W transposed (PACK) and X in groups of TT tokens (xpack's layout,
 * with GW = VW = TT), then tiles of TT tokens by the 16 columns. Lane l of
 * output (t, j) is p_l[t][j], fed W[j][k] * X[t][k] for k = l, l + 16,
 * ... in increasing k: one broadcast of X[t][k] times the packed W[.][k]
 * for all 16 columns, so a tile holds TT * 16 / VW accumulators and loads
 * 16 / VW vectors of W and TT scalars of X for TT * 16 / VW multiply-adds
 * (6 tokens on AVX2: 12 accumulators, 2 W halves and a broadcast in 16
 * registers). Both packs put each lane's blocks one after the other, so a
 * lane reads two contiguous runs, the TT broadcasts of a step from one
 * line: with X read in place (6 lines per step, 16 lanes picking their
 * element out of each) the tiles ran at 65 GFLOPS on one core at T = 512,
 * K = 2048, N = 768, against 96 here (110 without the pack of W). A lane
 * runs over all its blocks at once, its sums then stored in sum[]. A lane's zero-padded terms (k >= K)
 * are not computed: an accumulator starts at +0 and never becomes -0, so
 * adding +0 would leave it unchanged. Then p_l + p_{l+8} (the tree's first
 * level), (l, l+4), (l, l+2), (l, l+1) add whole vectors, as DEFINE_COLS16
 * does. The tokens padding the last group are computed and not stored.
 *
 * The pack of W, Wp[l][b][j] = W[j][16 b + l] (zero past K and for j >=
 * the rows there are): 16 * roundup(K, 16) floats (48 KB for K = 768), in
 * L2 while every tile of tokens passes over it. */

/* The last partial block of 16 k, and rows past nrows, one float at a time. */
static inline __attribute__((always_inline)) void pack_tail(const float *W, int ldw, int nrows, int K,
                                                            int b0, float *Wp)
{
    int nb = (K + 15) / 16;
    for (int b = b0; b < nb; b++)
        for (int l = 0; l < 16; l++)
            for (int j = 0; j < 16; j++) {
                int k = b * 16 + l;
                Wp[((size_t)l * nb + b) * 16 + j] = j < nrows && k < K ? W[(size_t)j * ldw + k] : 0.0f;
            }
}

#define DEFINE_PACKED(NAME, TARGET, V, VW, TT, PACK)                                               \
    static inline __attribute__((always_inline)) void NAME##_tile(const float *Xp, int K,          \
                                                                  const float *Wp, int tn,         \
                                                                  const float *bias, float *Y,     \
                                                                  int ldy, int rn)                 \
    {                                                                                              \
        enum { NP = 16 / VW };                                                                     \
        V sum[16][TT][NP];                                                                         \
        int nb = (K + 15) / 16;                                                                    \
        for (int l = 0; l < 16; l++) {                                                             \
            int n = l < K ? (K - l + 15) / 16 : 0; /* lane l's blocks: 16 b + l < K */             \
            V acc[TT][NP];                                                                         \
            _Pragma("GCC unroll 8") for (int t = 0; t < TT; t++)                                   \
                _Pragma("GCC unroll 4") for (int p = 0; p < NP; p++)                               \
                    acc[t][p] = (V){0};                                                            \
            const float *wp = Wp + (size_t)l * nb * 16, *xp = Xp + (size_t)l * nb * TT;            \
            for (int b = 0; b < n; b++) {                                                          \
                V w[NP];                                                                           \
                _Pragma("GCC unroll 4") for (int p = 0; p < NP; p++)                               \
                    memcpy(&w[p], wp + (size_t)b * 16 + p * VW, sizeof w[p]);                      \
                _Pragma("GCC unroll 8") for (int t = 0; t < TT; t++) {                             \
                    float xs = xp[(size_t)b * TT + t]; /* broadcast */                             \
                    _Pragma("GCC unroll 4") for (int p = 0; p < NP; p++)                           \
                        acc[t][p] += w[p] * xs;                                                    \
                }                                                                                  \
            }                                                                                      \
            _Pragma("GCC unroll 8") for (int t = 0; t < TT; t++)                                   \
                _Pragma("GCC unroll 4") for (int p = 0; p < NP; p++)                               \
                    sum[l][t][p] = acc[t][p];                                                      \
        }                                                                                          \
        for (int t = 0; t < tn; t++) {                                                             \
            float out[16];                                                                         \
            _Pragma("GCC unroll 4") for (int p = 0; p < NP; p++) {                                 \
                V s[8], bv = (V){0};                                                               \
                _Pragma("GCC unroll 8") for (int l = 0; l < 8; l++)                                \
                    s[l] = sum[l][t][p] + sum[l + 8][t][p];                                        \
                _Pragma("GCC unroll 4") for (int h = 4; h > 0; h /= 2)                             \
                    _Pragma("GCC unroll 8") for (int l = 0; l < h; l++)                            \
                        s[l] += s[l + h];                                                          \
                if (bias)                                                                          \
                    for (int j = 0; j < VW && p * VW + j < rn; j++)                                \
                        bv[j] = bias[p * VW + j];                                                  \
                s[0] += bv; /* + 0 without a bias, as the tiles do */                              \
                memcpy(out + p * VW, &s[0], sizeof s[0]);                                          \
            }                                                                                      \
            memcpy(Y + (size_t)t * ldy, out, sizeof *out * (size_t)rn);                            \
        }                                                                                          \
    }                                                                                              \
                                                                                                   \
    TARGET static void NAME(const float *Xp, int T, int K, const float *W, int ldw, int nrows,     \
                            const float *bias, float *Y, int ldy, float *Wp)                       \
    {                                                                                              \
        size_t gstride = (size_t)TT * ((K + 15) / 16) * 16;                                        \
        for (int r0 = 0; r0 < nrows; r0 += 16) {                                                   \
            int rn = nrows - r0 < 16 ? nrows - r0 : 16;                                            \
            const float *b = bias ? bias + r0 : NULL;                                              \
            int next = nrows - r0 - 16 < 16 ? nrows - r0 - 16 : 16;                                \
            PACK(W + (size_t)r0 * ldw, ldw, rn, K, Wp, next > 0 ? next : 0);                       \
            for (int t0 = 0; t0 < T; t0 += TT)                                                     \
                NAME##_tile(Xp + (size_t)(t0 / TT) * gstride, K, Wp, T - t0 < TT ? T - t0 : TT, b, \
                            Y + (size_t)t0 * ldy + r0, ldy, rn);                                   \
        }                                                                                          \
    }

/* The mirror image for fewer tokens: X packed (xpack), W read in place.
 * Output (t, j) lane l is p_l[j][t], fed W[j][k] * X[t][k] for k = l,
 * l + 16, ... in increasing k, here as a vector over TV * VW tokens per
 * row: per k, TV loads of the packed tokens and R broadcasts of W[j][k]
 * straight from the rows, R * TV multiply-adds (6 rows x 16 tokens on
 * AVX2: 12 accumulators, 2 token vectors and a broadcast). The lanes run
 * one after the other over xpack_kb(nb) blocks of 16 k: lane l reads one
 * float from each of the tile's row lines, which stay in L1 for the 16
 * lanes, so W is read from memory once and never packed; meanwhile lanes
 * 0 .. R-1 of the first group of tokens fetch the next tile's rows into
 * L2 (without it, 58 against 73 GFLOPS at T = 8, N = 32768). Sums kept in
 * sum[] between blocks, the tree over whole vectors, the bias after, as
 * DEFINE_PACKED does; then each row's vector of tokens is stored down a
 * column of Y.
 *
 * The pack, per group of GW = TV * VW tokens: Xp[g][l][b][t] = X[GW g +
 * t][16 b + l], the group's width rounded up to VW (zero tokens past T,
 * computed and not stored), GW * 16 * roundup(K, 16) / 16 floats apart. */
/* The blocks of a lane pass over R rows: all nb when R nb <= 384 lines,
 * else nb in equal parts of at most 288 / R (R = 6 for the AVX2 kernels,
 * the 12-row one for up to 8 tokens included). A pass touches R rows x kb
 * lines of W and kb blocks of packed tokens, to stay within a 32 KB L1:
 * one core, AVX2 (R = 6), T = 128, K = 2048 (nb = 128), N = 768: 84
 * GFLOPS in parts of 48, 75 of 64; but a second pass costs more than a
 * few lines: K = 896 (nb = 56), T = 256, N = 4864: 94 GFLOPS in one pass,
 * 82 in parts of 48 and 8. */
static inline int xpack_kb(int nb, int R)
{
    if (nb * R <= 384)
        return nb;
    int most = 288 / R, parts = (nb + most - 1) / most;
    return (nb + parts - 1) / parts;
}

static size_t xpack_floats(int T, int K, int GW)
{
    return (size_t)((T + GW - 1) / GW) * GW * (size_t)((K + 15) / 16) * 16;
}

/* The first n (at most 8) floats of v to y; the tiles' row counts (8, 6,
 * 4) as stores of known size. */
static inline __attribute__((always_inline)) void store_row8(float *y, v8 v, int n)
{
    if (n == 8)
        memcpy(y, &v, 8 * sizeof(float));
    else if (n == 6) { /* 4 + 2, from the two halves: no trip through memory */
        v4 lo = __builtin_shufflevector(v, v, 0, 1, 2, 3), hi = __builtin_shufflevector(v, v, 4, 5, 6, 7);
        memcpy(y, &lo, sizeof lo);
        memcpy(y + 4, &hi, 2 * sizeof(float));
    } else if (n == 4)
        memcpy(y, &v, 4 * sizeof(float));
    else
        for (int j = 0; j < n; j++)
            y[j] = v[j];
}

#define DEFINE_XPACKED(NAME, TARGET, V, VW, R, TV, LR)                                             \
    static inline __attribute__((always_inline)) void NAME##_tile(const float *Xp, int K,          \
                                                                  const float *W, int ldw, int TN, \
                                                                  int rn, int tn, const float *bias, \
                                                                  float *Y, int ldy,               \
                                                                  const float *next, int nnext)    \
    {                                                                                              \
        V sum[16][R][TV];                                                                          \
        int nb = (K + 15) / 16, G = TN * VW;                                                       \
        const float *w_[R];                                                                        \
        _Pragma("GCC unroll 16") for (int r = 0; r < R; r++) /* rows past rn: row 0 again */       \
            w_[r] = W + (size_t)(r < rn ? r : 0) * ldw;                                            \
        const int kb = xpack_kb(nb, LR);                                                           \
        for (int b0 = 0; b0 < nb; b0 += kb) {                                                      \
            for (int l = 0; l < 16; l++) {                                                         \
                int n = l < K ? (K - l + 15) / 16 : 0, bend = b0 + kb < n ? b0 + kb : n;           \
                V acc[R][TV];                                                                      \
                _Pragma("GCC unroll 16") for (int r = 0; r < R; r++)                               \
                    _Pragma("GCC unroll 4") for (int p = 0; p < TN; p++)                           \
                        acc[r][p] = b0 ? sum[l][r][p] : (V){0};                                    \
                const float *xp = Xp + (size_t)l * nb * G;                                         \
                /* lane l < nnext fetches the next tile's row l into L2 */                         \
                const float *pf = l < nnext ? next + (size_t)l * ldw : NULL;                       \
                for (int b = b0; b < bend; b++) {                                                  \
                    V x[TV];                                                                       \
                    if (pf)                                                                        \
                        __builtin_prefetch(pf + (size_t)b * 16, 0, 2);                             \
                    _Pragma("GCC unroll 4") for (int p = 0; p < TN; p++) {                         \
                        memcpy(&x[p], xp + (size_t)b * G + p * VW, sizeof x[p]);                   \
                        IN_REG(x[p]);                                                              \
                    }                                                                              \
                    _Pragma("GCC unroll 16") for (int r = 0; r < R; r++) {                         \
                        float ws = w_[r][(size_t)b * 16 + l]; /* broadcast */                      \
                        _Pragma("GCC unroll 4") for (int p = 0; p < TN; p++)                       \
                            acc[r][p] += x[p] * ws;                                                \
                    }                                                                              \
                }                                                                                  \
                _Pragma("GCC unroll 16") for (int r = 0; r < R; r++)                               \
                    _Pragma("GCC unroll 4") for (int p = 0; p < TN; p++)                           \
                        sum[l][r][p] = acc[r][p];                                                  \
            }                                                                                      \
        }                                                                                          \
        enum { RP = (R + 7) / 8 * 8 }; /* rows in groups of 8 for the transpose */                 \
        V res[RP][TV];                                                                             \
        for (int r = 0; r < RP; r++)                                                               \
            for (int p = 0; p < TN; p++) {                                                         \
                if (r >= rn) {                                                                     \
                    res[r][p] = (V){0};                                                            \
                    continue;                                                                      \
                }                                                                                  \
                V s[8];                                                                            \
                _Pragma("GCC unroll 8") for (int l = 0; l < 8; l++)                                \
                    s[l] = sum[l][r][p] + sum[l + 8][r][p];                                        \
                _Pragma("GCC unroll 4") for (int h = 4; h > 0; h /= 2)                             \
                    _Pragma("GCC unroll 8") for (int l = 0; l < h; l++)                            \
                        s[l] += s[l + h];                                                          \
                s[0] += bias ? bias[r] : 0.0f; /* + 0 without a bias, as the tiles do */           \
                res[r][p] = s[0];                                                                  \
            }                                                                                      \
        /* each token's rows contiguous in Y: 8 rows x 8 tokens transposed */                      \
        for (int g = 0; g < RP; g += 8)                                                            \
            for (int p = 0; p < TN; p++)                                                           \
                for (int h = 0; h < VW / 8; h++) { /* 8 tokens at a time */                        \
                    v8 c[8];                                                                       \
                    _Pragma("GCC unroll 8") for (int i = 0; i < 8; i++)                            \
                        memcpy(&c[i], (const float *)&res[g + i][p] + 8 * h, sizeof c[i]);         \
                    transpose8(c);                                                                 \
                    int nr = rn - g < 8 ? rn - g : 8, t0 = p * VW + 8 * h;                         \
                    for (int t = 0; t < 8 && t0 + t < tn; t++)                                     \
                        store_row8(Y + (size_t)(t0 + t) * ldy + g, c[t], nr);                      \
                }                                                                                  \
    }                                                                                              \
                                                                                                   \
    TARGET static void NAME(const float *Xp, int T, int K, const float *W, int ldw, int nrows,     \
                            const float *bias, float *Y, int ldy)                                  \
    {                                                                                              \
        enum { GW = TV * VW };                                                                     \
        size_t gstride = (size_t)GW * ((K + 15) / 16) * 16;                                        \
        for (int r0 = 0; r0 < nrows; r0 += R) {                                                    \
            int rn = nrows - r0 < R ? nrows - r0 : R;                                              \
            const float *w = W + (size_t)r0 * ldw, *b = bias ? bias + r0 : NULL;                   \
            int nn = nrows - r0 - R < R ? nrows - r0 - R : R;                                      \
            for (int t0 = 0; t0 < T; t0 += GW) {                                                   \
                int tn = T - t0 < GW ? T - t0 : GW, TN = (tn + VW - 1) / VW;                       \
                const float *xp = Xp + (size_t)(t0 / GW) * gstride;                                \
                int nnext = t0 ? 0 : nn > 0 ? nn : 0; /* with the first group of tokens */        \
                float *y = Y + (size_t)t0 * ldy + r0;                                              \
                switch (TN) {                                                                      \
                case 1: NAME##_tile(xp, K, w, ldw, 1, rn, tn, b, y, ldy, w + (size_t)R * ldw, nnext); break; \
                case 2: XPACKED_CASE(NAME, R, TV, 2); break;                                          \
                case 3: XPACKED_CASE(NAME, R, TV, 3); break;                                          \
                case 4: XPACKED_CASE(NAME, R, TV, 4); break;                                          \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

#define XPACKED_CASE(NAME, R, TV, N)                                                                \
    do {                                                                                           \
        if (TV >= N)                                                                               \
            NAME##_tile(xp, K, w, ldw, N, rn, tn, b, y, ldy, w + (size_t)R * ldw, nnext);          \
    } while (0)

typedef void (*packed_fn)(const float *, int, int, const float *, int, int, const float *, float *, int, float *);

/* X packed with W read in place (DEFINE_XPACKED) from XPACK_MIN_T tokens
 * while the pack, T x K floats, is at most XPACK_MAX_FLOATS (2 MB), and
 * below PACKED_MIN_T tokens where both can be packed (DEFINE_PACKED); the
 * tiles of DEFINE_TILE below XPACK_MIN_T. Measured on AVX2 (a Zen 4 core
 * pair), 2 threads, 12 matrices of K x N in turn (W from memory), GFLOPS
 * X-packed / both packed, the best of 3 runs: T = 32: 140 / 98 at K = N =
 * 768, 153 / 73 at K = 768, N = 2048, 170 / 129 at K = 896, N = 4864;
 * T = 96: 178 / 180, 184 / 189, 188 / 192; T = 128: 183 / 179, 173 /
 * 174, 187 / 185; T = 192: 160 / 163, 170 / 183, 191 / 202; T = 512: 179
 * / 197, 179 / 197, 186 / 196. Past the bound (T = 512, K = 2048, N =
 * 768), both packed give 192, the W-packed tiles reading X in place 128.
 * On one core, X-packed against the tiles: 27 / 23 GFLOPS at T = 3, 57 /
 * 35 at 6, a tie at 2. */
enum { XPACK_MIN_T = 3, XPACK_MAX_FLOATS = 1 << 19, PACKED_MIN_T = 128 };

/* The X-packed kernels of this machine and the tokens they take from the
 * tiles (xpack_avx2_choice: from XPACK_MIN_T on; xpack_v4_choice, where
 * xpack_wins_v4 measured them at least as fast: see there). */
typedef void (*xpacked_fn)(const float *, int, int, const float *, int, int, const float *, float *, int);
typedef void (*xpack_fn)(const float *, int, int, int, int, int, float *);
typedef struct xpack_choice {
    xpacked_fn big;   /* groups of gw tokens in vectors of vw */
    xpacked_fn small; /* up to small_t tokens, in one vector of small_t */
    xpack_fn pack;
    int gw, vw, small_t;
    int lo, hi;       /* the tokens it takes, */
    size_t hi_floats; /* and more than hi while the pack is at most this */
    int fill4;        /* taken only where at least fill4 / 4 of the vectors' lanes hold tokens */
} xpack_choice;
static xpack_choice xpk; /* .big NULL: none */

typedef void (*cols16_fn)(const float *, int, int, int, const float *, float *, int);
static cols16_fn cols16_impl;

typedef void (*block_fn)(const float *, int, int, int, const float *, int, int, const float *, float *, int);
typedef float (*dot_fn)(const float *, const float *, int);
static dot_fn dot_impl;
static const char *kernel_name; /* the f32 kernel chosen (asn_matmul_kernel) */
static block_fn block_impl;
static block_fn stream_impl;  /* one token, f32 weights read from memory */
static packed_fn packed_impl; /* NULL: the tiles only (AVX2 has it) */
static int packed_tt;         /* its tiles' tokens: X packed in groups of as many */

#if defined(__x86_64__)
#define V4_TARGET __attribute__((target("arch=x86-64-v4")))
#define V3_TARGET __attribute__((target("arch=x86-64-v3")))
#define V1_TARGET __attribute__((target("arch=x86-64")))
/* Tile shapes by measurement (one core, T = 32..128, K and N 768..2048):
 * AVX-512, 32 registers: 5 rows x 5 tokens, 25 accumulators; AVX2, 16
 * registers: 2 x 3, 12 accumulator halves + 2 rows + 1 token; SSE2, 16
 * registers: 1 x 3, 12 accumulator quarters. A single token takes 4, 6
 * and 3 rows at once, but f32 weights streamed from memory (decode) go a
 * row at a time (stream_*: one read stream per thread; 125M f32 decode,
 * 2 threads, 101 -> 124 tok/s with AVX2 and 112 -> 117 with AVX-512).
 * From 3 tokens on, AVX2 takes the outer products instead: xpacked_avx2
 * (DEFINE_XPACKED: 6 rows x 16 tokens; 12 x 8 up to 8 tokens) while X is
 * at most XPACK_MAX_FLOATS and below PACKED_MIN_T tokens, else packed_avx2
 * (DEFINE_PACKED: 6 tokens x 16 rows, X and W packed). */
DEFINE_BLOCK(block_avx512, V4_TARGET, tile16, 5, 5, 4)
DEFINE_BLOCK(block_avx2, V3_TARGET, tile8, 2, 3, 6)
DEFINE_BLOCK(block_base, V1_TARGET, tile4, 1, 3, 3)
DEFINE_BLOCK(stream_avx512, V4_TARGET, tile16, 5, 5, 1)
DEFINE_BLOCK(stream_avx2, V3_TARGET, tile8, 2, 3, 1)
DEFINE_DOT(dot_avx512, V4_TARGET, tile16)
DEFINE_DOT(dot_avx2, V3_TARGET, tile8)
DEFINE_DOT(dot_base, V1_TARGET, tile4)
DEFINE_COLS16(cols16_avx512, V4_TARGET, v16, 16, 4)
DEFINE_COLS16(cols16_avx2, V3_TARGET, v8, 8, 4)
DEFINE_COLS16(cols16_base, V1_TARGET, v4, 4, 2)
/* 16 rows packed for the tiles above, an 8 x 8 transpose at a time; the
 * `next` rows after them are fetched into L2 meanwhile, to be there when
 * their turn comes after this pack's tiles. */
V3_TARGET static void pack_avx2(const float *W, int ldw, int nrows, int K, float *Wp, int next)
{
    int nb = (K + 15) / 16, full = nrows == 16 ? K / 16 : 0;
    for (int b = 0; b < full; b++) {
        for (int i = 0; i < next; i++)
            __builtin_prefetch(W + (size_t)(16 + i) * ldw + b * 16, 0, 2);
        _Pragma("GCC unroll 2") for (int rh = 0; rh < 16; rh += 8)
            _Pragma("GCC unroll 2") for (int kh = 0; kh < 16; kh += 8) {
                v8 r[8];
                _Pragma("GCC unroll 8") for (int i = 0; i < 8; i++)
                    memcpy(&r[i], W + (size_t)(rh + i) * ldw + b * 16 + kh, sizeof r[i]);
                transpose8(r);
                _Pragma("GCC unroll 8") for (int c = 0; c < 8; c++)
                    memcpy(Wp + ((size_t)(kh + c) * nb + b) * 16 + rh, &r[c], sizeof r[c]);
            }
    }
    pack_tail(W, ldw, nrows, K, full, Wp);
}
DEFINE_PACKED(packed_avx2, V3_TARGET, v8, 8, 6, pack_avx2)
/* 8 k of n tokens (rows of X, ldx apart; zero rows past n) transposed:
 * k0 + j's w tokens to d + j * step. */
static inline __attribute__((always_inline)) void xpack8(const float *X, int ldx, int n, float *d, size_t step,
                                                         int w)
{
    v8 r[8];
    _Pragma("GCC unroll 8") for (int i = 0; i < 8; i++) {
        r[i] = (v8){0};
        if (i < n)
            memcpy(&r[i], X + (size_t)i * ldx, sizeof r[i]);
    }
    transpose8(r);
    _Pragma("GCC unroll 8") for (int j = 0; j < 8; j++)
        store_row8(d + (size_t)j * step, r[j], w);
}

/* xpack, an 8 x 8 transpose at a time (8 k by 8 tokens; a group narrower
 * than 8, as the W-packed tiles' 6 tokens, takes the first rows of it),
 * tokens past T as zero rows, the blocks past K one float at a time */
V3_TARGET static void xpack_avx2(const float *X, int T, int ldx, int K, int GW, int VW, float *Xp)
{
    int nb = (K + 15) / 16;
    for (int t0 = 0; t0 < T; t0 += GW) {
        int tn = T - t0 < GW ? T - t0 : GW, G = (tn + VW - 1) / VW * VW;
        float *xp = Xp + (size_t)(t0 / GW) * GW * nb * 16;
        size_t step = (size_t)nb * G;
        for (int p = 0; p < G; p += 8) {
            int w = G - p < 8 ? G - p : 8, n = tn - p; /* the tokens p .. p + w - 1, n of them in X */
            const float *x = X + (size_t)(t0 + p) * ldx;
            for (int k0 = 0; k0 < nb * 16; k0 += 8) {
                float *d = xp + ((size_t)(k0 % 16) * nb + k0 / 16) * G + p; /* + j * step: k0 + j */
                if (k0 + 8 <= K) {
                    if (w == 8 && n >= 8) /* the usual cases with constant sizes */
                        xpack8(x + k0, ldx, 8, d, step, 8);
                    else if (w == 6 && n >= 6)
                        xpack8(x + k0, ldx, 6, d, step, 6);
                    else if (w == 4 && n >= 4)
                        xpack8(x + k0, ldx, 4, d, step, 4);
                    else
                        xpack8(x + k0, ldx, n, d, step, w);
                } else {
                    for (int j = 0; j < 8; j++)
                        for (int i = 0; i < w; i++)
                            d[(size_t)j * step + i] = i < n && k0 + j < K ? x[(size_t)i * ldx + k0 + j] : 0.0f;
                }
            }
        }
    }
}
/* X packed: 6 rows x 16 tokens, and 12 rows x 8 tokens for up to 8 tokens */
DEFINE_XPACKED(xpacked_avx2, V3_TARGET, v8, 8, 6, 2, 6)
DEFINE_XPACKED(xpacked8_avx2, V3_TARGET, v8, 8, 12, 1, 6)
/* The same on AVX-512: 6 rows x 32 tokens, 12 accumulators of 16 tokens
 * (each multiply-add takes its broadcast of W from memory), and 8 rows x
 * 16 tokens up to 16 tokens (one core, T = 16: 84.5 GFLOPS at K = 768,
 * N = 32768, against 72.7 with 6 rows; 69.6 against 76.9 at K = 2048, N =
 * 8192) */
DEFINE_XPACKED(xpacked_avx512, V4_TARGET, v16, 16, 6, 2, 6)
DEFINE_XPACKED(xpacked16_avx512, V4_TARGET, v16, 16, 8, 1, 8)

/* On AVX-512 the outer products over X packed (xpacked_avx512) beat the
 * 5 x 5 tiles on a Zen 4 core, whose AVX-512 runs as two 256-bit halves:
 * GFLOPS tiles / X-packed at K = 768, N = 32768 (W streamed from memory),
 * 58.1 / 84.5 at T = 16, 72.1 / 88.1 at 32, 84.4 / 97.7 at 64; at T = 32,
 * K = 2048, N = 8192: 67.7 / 91.5 (the AVX2 X-packed kernel: 83 at T =
 * 32, K = 768, and 75 at K = 2048). One core also gains at 256 and 512
 * tokens, but 2 threads sharing a pack larger than one core's L2 do not: a
 * 512-token prefill of the 125M F32 model (X 1.5 MB), 2 threads, fell
 * from 990 to 940 tokens/s; 256 streams of it (0.75 MB) were a tie, of
 * the Qwen2.5-0.5B shape (0.9 MB) 163-174 -> 178-182 tokens/s. So up to
 * 128 tokens, beyond while the pack is at most 1 MB, and only where at
 * least 3/4 of the vectors' lanes hold tokens (20 tokens, in two
 * vectors of 16: 65 against the tiles' 66; 24 a tie). Where the FMA units
 * are 512 bits wide the balance may differ; both give the same bits, so
 * the choice is made by timing them on this machine at first use: T = 32,
 * K = 768, 128 rows (in L2), the better of 5 alternated runs each, the
 * X-packed kernels taken when not slower. */
enum { XPACK_V4_LO = 16, XPACK_V4_HI = 128, XPACK_V4_HI_FLOATS = 1 << 18 };
static const xpack_choice xpack_avx2_choice = {xpacked_avx2, xpacked8_avx2, xpack_avx2, 16, 8, 8, XPACK_MIN_T, 1 << 30, 0, 0},
                          xpack_v4_choice = {xpacked_avx512, xpacked16_avx512, xpack_avx2, 32, 16, 16, XPACK_V4_LO,
                                             XPACK_V4_HI, XPACK_V4_HI_FLOATS, 3};

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int xpack_wins_v4(void)
{
    enum { T = 32, K = 768, N = 128 };
    const xpack_choice *c = &xpack_v4_choice;
    float *X = asn_xmalloc(sizeof(float) * (T * K + N * K + T * N) + xpack_floats(T, K, c->gw) * sizeof(float));
    float *W = X + T * K, *Y = W + N * K, *Xp = Y + T * N;
    for (int i = 0; i < T * K + N * K; i++)
        X[i] = (float)((i * 7919) % 1000) * 1e-3f - 0.5f;
    double best[2] = {1e9, 1e9};
    for (int r = 0; r < 5; r++)
        for (int k = 0; k < 2; k++) {
            double t0 = mono_now();
            if (k == 0) {
                block_avx512(X, T, K, K, W, K, N, NULL, Y, N);
            } else {
                c->pack(X, T, K, K, c->gw, c->vw, Xp);
                c->big(Xp, T, K, W, K, N, NULL, Y, N);
            }
            double dt = mono_now() - t0;
            best[k] = dt < best[k] ? dt : best[k];
        }
    free(X);
    return best[1] <= best[0];
}

/* Chooses the kernels once (pick_block's pthread_once). */
static void choose_kernels(void)
{
    /* ASN_MATMUL_KERNEL=avx512|avx512x|avx2|base forces a kernel (tests
     * compare them): avx512 the AVX-512 tiles alone, avx512x with the
     * X-packed kernels untimed */
    const char *force = getenv("ASN_MATMUL_KERNEL");
    int base = force && !strcmp(force, "base"), avx2 = force && !strcmp(force, "avx2");
    if (base)
        block_impl = block_base, dot_impl = dot_base, cols16_impl = cols16_base, kernel_name = "base";
    else if (!avx2 && asn_cpu_has(ASN_CPU_V4)) {
        block_impl = block_avx512, dot_impl = dot_avx512, cols16_impl = cols16_avx512, stream_impl = stream_avx512,
        kernel_name = "avx512";
        if (force ? !strcmp(force, "avx512x") : xpack_wins_v4())
            xpk = xpack_v4_choice, kernel_name = "avx512+xpacked";
    } else if (avx2 || asn_cpu_has(ASN_CPU_AVX2 | ASN_CPU_FMA))
        block_impl = block_avx2, dot_impl = dot_avx2, cols16_impl = cols16_avx2, packed_impl = packed_avx2,
        packed_tt = 6, xpk = xpack_avx2_choice, stream_impl = stream_avx2, kernel_name = "avx2";
    else
        block_impl = block_base, dot_impl = dot_base, cols16_impl = cols16_base, kernel_name = "base";
    if (!stream_impl)
        stream_impl = block_impl;
}
#else
/* Other architectures: 128-bit GCC vectors (NEON on aarch64), the same
 * order. Whether the multiply-add fuses is the target's (-ffp-contract=fast).
 * Tiles sized for aarch64's 32 vector registers (24 accumulator quarters),
 * not measured. */
DEFINE_BLOCK(block_generic, , tile4, 2, 3, 6)
DEFINE_DOT(dot_generic, , tile4)
DEFINE_COLS16(cols16_generic, , v4, 4, 4)

static void choose_kernels(void)
{
    dot_impl = dot_generic;
    block_impl = block_generic;
    cols16_impl = cols16_generic;
    kernel_name = "base";
#if defined(__aarch64__)
    /* NEON intrinsics (matmul_neon.c), the same bits; ASN_MATMUL_KERNEL=base
     * keeps the generic code */
    const char *force = getenv("ASN_MATMUL_KERNEL");
    if (!(force && !strcmp(force, "base")) && asn_cpu_has(ASN_CPU_NEON))
        block_impl = mm_neon_block, dot_impl = mm_neon_dot, kernel_name = "neon";
#endif
    stream_impl = block_impl;
}
#endif

/* The kernels, chosen on first use by whichever thread gets there first
 * (attention calls asn_dot_cols16 from every worker). */
static block_fn pick_block(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, choose_kernels);
    return block_impl;
}

/* ------------------------------------------------------------- driver */

enum { ROWS_PER_BLOCK = 16, XPACK_ROWS = 48 };

/* From this many tokens on, the W-packed outer products (where the target
 * has them, and X is too large to be packed alone) replace the tiles.
 * Measured before the X-packed tiles, with X read in place, on AVX2, one
 * core, K = 768: with W streamed from memory (N = 32768), as a model's
 * weights are, packed 57 against the tiles' 44 GFLOPS at 8 tokens, 76
 * against 65 at 16, 93 against 82 at 32, a tie at 4; with W in L3 the
 * tiles stay ahead up to 32 tokens (107 against 91 at 16). */
enum { PACK_MIN_T = 8 };

/* The floats of the pack (DEFINE_PACKED) for K (16 rows, K rounded up to 16). */
static size_t pack_floats(int K) { return (size_t)(K + 15) / 16 * 256; }

/* The packed kernel for T tokens, or NULL for the tiles. */
static packed_fn pick_packed(int T)
{
    pick_block();
    return T >= PACK_MIN_T ? packed_impl : NULL;
}

/* The X-packed kernel for T tokens (its group of tokens and vector width
 * in *gw and *vw), or NULL; T x K at most XPACK_MAX_FLOATS here. */
static xpacked_fn pick_xpacked(int T, int K, int *gw, int *vw)
{
    pick_block();
    size_t floats = (size_t)T * (size_t)K;
    if (packed_impl && T >= PACKED_MIN_T)
        return NULL;
    if (!xpk.big || T < xpk.lo || floats > XPACK_MAX_FLOATS || (T > xpk.hi && floats > xpk.hi_floats))
        return NULL;
    int lanes = T <= xpk.small_t ? xpk.small_t : T / xpk.gw * xpk.gw + (T % xpk.gw + xpk.vw - 1) / xpk.vw * xpk.vw;
    if (4 * T < xpk.fill4 * lanes)
        return NULL;
    if (T <= xpk.small_t) {
        *gw = *vw = xpk.small_t;
        return xpk.small;
    }
    *gw = xpk.gw, *vw = xpk.vw;
    return xpk.big;
}

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
    packed_fn packed;   /* NULL: block */
    xpacked_fn xpacked; /* NULL: packed or block */
    const float *Xp;    /* X packed for xpacked or packed */
} mm_task;

/* Whether m's kernel reads X packed, in groups of *gw tokens in vectors of
 * *vw: the X-packed kernel's (set by pick_xpacked), or the both-packed
 * tiles' tokens. */
static int x_groups(const mm_task *m, int *gw, int *vw)
{
    if (m->xpacked)
        return 1;
    if (!m->packed)
        return 0;
    *gw = *vw = packed_tt;
    return 1;
}

/* Rows [r0, r0 + rn) of W (f32, stride ldw) times every token; Wp: room
 * for the pack, where packed. */
static void mm_rows(const mm_task *m, const float *W, int ldw, int r0, int rn, float *Wp)
{
    const float *bias = m->bias ? m->bias + r0 : NULL;
    if (m->xpacked)
        m->xpacked(m->Xp, m->T, m->K, W, ldw, rn, bias, m->Y + r0, m->ldy);
    else if (m->packed)
        m->packed(m->Xp, m->T, m->K, W, ldw, rn, bias, m->Y + r0, m->ldy, Wp);
    else
        m->block(m->X, m->T, m->ldx, m->K, W, ldw, rn, bias, m->Y + r0, m->ldy);
}

static void mm_run(void *arg, int ith, int nth)
{
    mm_task *m = arg;
    int lo, hi;
    asn_split(m->N, ith, nth, ROWS_PER_BLOCK, &lo, &hi);
    if (hi <= lo)
        return;
    size_t pack = m->packed && !m->xpacked ? pack_floats(m->K) : 0;
    if (m->wtype == ASN_T_F32) {
        float *Wp = pack ? asn_pool_scratch(m->pool, ith, pack * sizeof(float)) : NULL;
        mm_rows(m, (const float *)(m->W + (size_t)lo * m->row_bytes), m->K, lo, hi - lo, Wp);
        return;
    }
    /* nr rows dequantized into buf, then the pack after them; X packed takes
     * XPACK_ROWS, a multiple of its tiles' 6 and 12 rows */
    int nr = m->xpacked ? XPACK_ROWS : ROWS_PER_BLOCK;
    size_t nbuf = (size_t)nr * (size_t)m->K;
    float *buf = asn_pool_scratch(m->pool, ith, (nbuf + pack) * sizeof(float));
    for (int r0 = lo; r0 < hi; r0 += nr) {
        int rn = hi - r0 < nr ? hi - r0 : nr;
        for (int r = 0; r < rn; r++)
            asn_dequantize_row(m->wtype, m->W + (size_t)(r0 + r) * m->row_bytes,
                               buf + (size_t)r * m->K, m->K);
        mm_rows(m, buf, m->K, r0, rn, pack ? buf + nbuf : NULL);
    }
}

/* From this many tokens on, the threads pack X's groups of tokens between
 * them (a pool run of its own) rather than the caller alone: in a 512-token
 * prefill on 2 threads the single packer took 4% of the time while the
 * other thread waited. */
enum { XPACK_SPLIT_T = 64 };

typedef struct xpack_task {
    const float *X;
    int T, ldx, K, gw, vw;
    float *Xp;
} xpack_task;

/* Each thread packs whole groups: a group's place in the pack does not
 * depend on the others. */
static void xpack_run(void *arg, int ith, int nth)
{
    const xpack_task *x = arg;
    int lo, hi;
    asn_split((x->T + x->gw - 1) / x->gw, ith, nth, 1, &lo, &hi);
    int t0 = lo * x->gw, t1 = hi * x->gw < x->T ? hi * x->gw : x->T;
    if (t1 > t0)
        xpk.pack(x->X + (size_t)t0 * x->ldx, t1 - t0, x->ldx, x->K, x->gw, x->vw,
                   x->Xp + xpack_floats(t0, x->K, x->gw));
}

void asn_matmul(asn_pool *pool, const float *X, int T, int ldx, int K, const void *W,
                uint32_t wtype, int N, const float *bias, float *Y, int ldy)
{
    int gw = 0, vw = 0;
    mm_task m = {X, T, ldx, K, W, wtype, asn_ttype_row_bytes(wtype, K), N, bias, Y, ldy, pool,
                 pick_block(), pick_packed(T), pick_xpacked(T, K, &gw, &vw), NULL};
    if (wtype == ASN_T_F32 && T == 1)
        m.block = stream_impl;
    if (x_groups(&m, &gw, &vw)) { /* X packed once, read by every thread */
        float *Xp = asn_pool_shared_scratch(pool, xpack_floats(T, K, gw) * sizeof(float));
        xpack_task xt = {X, T, ldx, K, gw, vw, Xp};
        if (T >= XPACK_SPLIT_T)
            asn_pool_run(pool, xpack_run, &xt);
        else
            xpk.pack(X, T, ldx, K, gw, vw, Xp);
        m.Xp = Xp;
    }
    asn_pool_run(pool, mm_run, &m);
}

void asn_matmul_f32(const float *X, int T, int ldx, int K, const float *W, int ldw, int N, float *Y, int ldy)
{
    if (N <= 0)
        return;
    int gw = 0, vw = 0;
    mm_task m = {X, T, ldx, K, NULL, ASN_T_F32, 0, N, NULL, Y, ldy, NULL,
                 pick_block(), pick_packed(T), pick_xpacked(T, K, &gw, &vw), NULL};
    /* this call's own buffer (it runs in any thread): X packed, then the
     * pack of W where W is packed too */
    float *buf = NULL;
    size_t xf = 0;
    if (x_groups(&m, &gw, &vw)) {
        xf = xpack_floats(T, K, gw);
        buf = asn_xmalloc((xf + (m.xpacked ? 0 : pack_floats(K))) * sizeof(float));
        xpk.pack(X, T, ldx, K, gw, vw, buf);
        m.Xp = buf;
    }
    mm_rows(&m, W, ldw, 0, N, m.xpacked || !buf ? NULL : buf + xf);
    free(buf);
}

void asn_dot_cols16(const float *X, int ldx, int nt, int K, const float *Wt, float *out, int ldo)
{
    pick_block();
    cols16_impl(X, ldx, nt, K, Wt, out, ldo);
}

float asn_dot(const float *a, const float *b, int K)
{
    pick_block();
    return dot_impl(a, b, K);
}

const char *asn_matmul_kernel(void)
{
    pick_block();
    return kernel_name;
}
