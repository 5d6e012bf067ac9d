/* matmul_neon.c — matmul.c's f32 kernel for aarch64 (`neon`), in NEON
 * intrinsics.
 *
 * asn/linalg.h fixes each output's order: a 16-lane accumulator fed
 * k = 0, 16, 32, ... (the last block zero-padded) and its lanes added
 * (i, i+8), (i, i+4), (i, i+2), (i, i+1). Here the accumulator is four
 * float32x4 quarters (lanes 4p .. 4p + 3 in quarter p), each fed by FMLA
 * (vfmaq_f32: one rounding per multiply-add, as every x86-64-v3 kernel and
 * matmul.c's generic code on aarch64): no sum is reassociated, so the bits
 * are those of the other fused kernels and of test_matmul.c's model.
 *
 * A tile of 2 rows x 3 tokens keeps 24 quarters in registers (of 32),
 * with the two rows' quarters loaded once per step and the tokens'
 * streamed: per quarter step 5 loads feed 6 FMLA. A single token (decode)
 * takes 4 rows (16 quarters, 4 row streams from memory, room left for the
 * loads in flight; 6 rows spilled).
 *
 * On other architectures this file compiles to nothing. */
#if defined(__aarch64__)
#include "matmul_neon.h"

#include <arm_neon.h>
#include <stddef.h>

#define MN_INLINE static inline __attribute__((always_inline))

enum { RR = 2, TT = 3, R1 = 4, MAXR = 4, MAXT = 3 };

/* The four quarters of one accumulator folded by the tree: parts (p, p+2),
 * then (0, 1), then lanes (i, i+2), then (0, 1). */
MN_INLINE float f_hsum(float32x4_t a0, float32x4_t a1, float32x4_t a2, float32x4_t a3)
{
    float32x4_t a = vaddq_f32(vaddq_f32(a0, a2), vaddq_f32(a1, a3));
    a = vaddq_f32(a, vextq_f32(a, a, 2));
    return vgetq_lane_f32(a, 0) + vgetq_lane_f32(a, 1);
}

/* Quarter p of a step of which n elements are left (n >= 16: a whole
 * step), the rest zero. The tail is built in registers, not copied to a
 * buffer: a call to memcpy would make the compiler keep accumulators in
 * memory across the main loop. */
MN_INLINE float32x4_t f_load(const float *p, int n)
{
    if (n >= 4)
        return vld1q_f32(p);
    float32x4_t v = vdupq_n_f32(0);
    if (n > 0)
        v = vsetq_lane_f32(p[0], v, 0);
    if (n > 1)
        v = vsetq_lane_f32(p[1], v, 1);
    if (n > 2)
        v = vsetq_lane_f32(p[2], v, 2);
    return v;
}

/* One step of 16 k (n of them left, the rest zero): acc[r][t][p] += W row
 * r * X row t, quarter p, for rows at w[r], tokens at x[t]. */
MN_INLINE void f_step(float32x4_t (*acc)[MAXT][4], const float *const *w, const float *const *x, int R, int T,
                      int n)
{
#pragma GCC unroll 4
    for (int p = 0; p < 4; p++) {
        float32x4_t wv[MAXR];
#pragma GCC unroll 4
        for (int r = 0; r < R; r++)
            wv[r] = f_load(w[r] + 4 * p, n - 4 * p);
#pragma GCC unroll 3
        for (int t = 0; t < T; t++) {
            float32x4_t xv = f_load(x[t] + 4 * p, n - 4 * p);
#pragma GCC unroll 4
            for (int r = 0; r < R; r++)
                acc[r][t][p] = vfmaq_f32(acc[r][t][p], wv[r], xv);
        }
    }
}

/* out[r * MAXT + t] = dot(W row r, X row t), r < R, t < T (constants once
 * inlined: the accumulators are indexed by constants only and stay in
 * registers). The last step is zero-padded: the same lanes, the same
 * order. */
MN_INLINE void f_tile(const float *X, int ldx, const float *W, int ldw, int K, int R, int T, float *out)
{
    float32x4_t acc[MAXR][MAXT][4];
    for (int r = 0; r < R; r++)
        for (int t = 0; t < T; t++)
            for (int p = 0; p < 4; p++)
                acc[r][t][p] = vdupq_n_f32(0);
    const float *w[MAXR], *x[MAXT];
    for (int r = 0; r < R; r++)
        w[r] = W + (size_t)r * ldw;
    for (int t = 0; t < T; t++)
        x[t] = X + (size_t)t * ldx;
    int k = 0;
    for (; k + 16 <= K; k += 16) {
        f_step(acc, w, x, R, T, 16);
        for (int r = 0; r < R; r++)
            w[r] += 16;
        for (int t = 0; t < T; t++)
            x[t] += 16;
    }
    if (k < K)
        f_step(acc, w, x, R, T, K - k);
    for (int r = 0; r < R; r++)
        for (int t = 0; t < T; t++)
            out[r * MAXT + t] = f_hsum(acc[r][t][0], acc[r][t][1], acc[r][t][2], acc[r][t][3]);
}

/* A tile of rn <= R rows and tn <= TT tokens: R rows at once when rn = R,
 * else one row at a time. */
MN_INLINE void f_tile_any(const float *x, int ldx, const float *w, int ldw, int K, int R, int rn, int tn,
                          float *out)
{
    int rows = rn == R ? R : 1, reps = rn == R ? 1 : rn;
    for (int i = 0; i < reps; i++) {
        const float *wi = w + (size_t)i * ldw;
        float *oi = out + i * MAXT;
        if (tn == 1)
            rows == R ? f_tile(x, ldx, wi, ldw, K, R, 1, oi) : f_tile(x, ldx, wi, ldw, K, 1, 1, oi);
        else if (tn == 2)
            rows == R ? f_tile(x, ldx, wi, ldw, K, R, 2, oi) : f_tile(x, ldx, wi, ldw, K, 1, 2, oi);
        else
            rows == R ? f_tile(x, ldx, wi, ldw, K, R, 3, oi) : f_tile(x, ldx, wi, ldw, K, 1, 3, oi);
    }
}

/* All T tokens against nrows rows in tiles of R rows x tt tokens, rows in
 * chunks of about 256 KB so that a chunk stays in L2 while every token
 * passes over it. */
MN_INLINE void f_rows(const float *X, int T, int ldx, int K, const float *W, int ldw, int nrows,
                      const float *bias, float *Y, int ldy, int R, int tt)
{
    float out[MAXR * MAXT];
    int chunk = (65536 / (K > 0 ? K : 1)) / R * R;
    if (chunk < R)
        chunk = R;
    for (int c0 = 0; c0 < nrows; c0 += chunk) {
        int cend = c0 + chunk < nrows ? c0 + chunk : nrows;
        for (int t0 = 0; t0 < T; t0 += tt) {
            int tn = T - t0 < tt ? T - t0 : tt;
            for (int r0 = c0; r0 < cend; r0 += R) {
                int rn = cend - r0 < R ? cend - r0 : R;
                f_tile_any(X + (size_t)t0 * ldx, ldx, W + (size_t)r0 * ldw, ldw, K, R, rn, tn, out);
                for (int r = 0; r < rn; r++)
                    for (int t = 0; t < tn; t++)
                        Y[(size_t)(t0 + t) * ldy + r0 + r] = out[r * MAXT + t] + (bias ? bias[r0 + r] : 0.0f);
            }
        }
    }
}

void mm_neon_block(const float *X, int T, int ldx, int K, const float *W, int ldw, int nrows,
                   const float *bias, float *Y, int ldy)
{
    if (T == 1)
        f_rows(X, T, ldx, K, W, ldw, nrows, bias, Y, ldy, R1, 1);
    else
        f_rows(X, T, ldx, K, W, ldw, nrows, bias, Y, ldy, RR, TT);
}

float mm_neon_dot(const float *a, const float *b, int K)
{
    float out[MAXR * MAXT];
    f_tile(a, K, b, K, K, 1, 1, out);
    return out[0];
}
#endif
