/* qmatmul_neon.c — qmatmul.c's integer kernels for aarch64 (NEON):
 *   neondot  the ARMv8.2 dot product SDOT: 16 int8 products summed into
 *            4 int32 lanes by one instruction (CPUs with ASN_CPU_DOTPROD);
 *   neon     ARMv8.0: SMULL + SMLAL2 (16 products as 8 int16 pair sums)
 *            then SADALP into 4 int32 lanes, 3 instructions.
 * Both compute the exact integers I and M of qmatmul.c's header comment (in
 * whatever order suits the registers) and then its float steps in its
 * order, lane by lane, one lane per output: results equal `base`'s bit for
 * bit. This file is compiled with -ffp-contract=off (the Makefile's
 * default), so a step's multiplies and add stay apart.
 *
 * A single token (decode) reads the packed weights once, 8 rows at a time,
 * unpacking each 32-weight group in registers; a batch unpacks 8 rows to
 * int8 once and runs tiles of 4 rows x 4 tokens over them, 16 int32x4
 * accumulators held in registers across a super-block.
 *
 * On other architectures this file compiles to nothing. */
#if defined(__aarch64__)
#include "qmatmul_neon.h"
#include "qunpack.h"

#include <arm_neon.h>
#include <string.h>

#define QN_INLINE static inline __attribute__((always_inline))

/* ---------------------------------------------------------- type traits */

/* Scales all 1 (the 32-weight types). */
QN_INLINE int n_unit(uint32_t t)
{
    return qu_super(t) == 32;
}

/* One scale per 32 weights (both halves of a group share it). */
QN_INLINE int n_s32(uint32_t t)
{
    return t == ASN_T_Q4_K || t == ASN_T_Q5_K || t == ASN_T_IQ4_XS;
}

/* A min term (Dm * dx * M). */
QN_INLINE int n_min(uint32_t t)
{
    return t == ASN_T_Q4_1 || t == ASN_T_Q5_1 || t == ASN_T_Q2_K || t == ASN_T_Q4_K || t == ASN_T_Q5_K;
}

QN_INLINE float n_half(const uint8_t *p)
{
    __fp16 h;
    memcpy(&h, p, 2);
    return (float)h; /* exact, as qu_half */
}

/* ---------------------------------------------------- integer products */

/* acc + the 16 products w[i] * q[i], summed into 4 lanes (which product
 * lands in which lane differs between the two: only the total is used).
 * SDOT is written as asm so one source serves both kernels; it is only
 * reached from the function compiled for +dotprod. */
QN_INLINE int32x4_t n_dot16(int dot, int32x4_t acc, int8x16_t w, int8x16_t q)
{
    if (dot) {
        __asm__("sdot %0.4s, %1.16b, %2.16b" : "+w"(acc) : "w"(w), "w"(q));
        return acc;
    }
    /* |w q| <= 128 * 127: a pair of products fits int16 */
    int16x8_t p = vmull_s8(vget_low_s8(w), vget_low_s8(q));
    p = vmlal_high_s8(p, w, q);
    return vpadalq_s16(acc, p);
}

/* The same from zero. */
QN_INLINE int32x4_t n_dot16z(int dot, int8x16_t w, int8x16_t q)
{
    if (dot)
        return n_dot16(dot, vdupq_n_s32(0), w, q);
    return vpaddlq_s16(vmlal_high_s8(vmull_s8(vget_low_s8(w), vget_low_s8(q)), w, q));
}

/* acc + the 32 products of one group (weights w0, w1; quants q0, q1)
 * times their scales sc[0] (first 16) and sc[1] (last 16). */
QN_INLINE int32x4_t n_acc(int dot, uint32_t t, int32x4_t acc, int8x16_t w0, int8x16_t w1, int8x16_t q0,
                          int8x16_t q1, const int16_t *sc)
{
    if (n_unit(t))
        return n_dot16(dot, n_dot16(dot, acc, w0, q0), w1, q1);
    if (n_s32(t))
        return vmlaq_n_s32(acc, n_dot16(dot, n_dot16z(dot, w0, q0), w1, q1), sc[0]);
    acc = vmlaq_n_s32(acc, n_dot16z(dot, w0, q0), sc[0]);
    return vmlaq_n_s32(acc, n_dot16z(dot, w1, q1), sc[1]);
}

/* Four vectors to one: lane i = the total of vector i. */
QN_INLINE int32x4_t n_sum4(int32x4_t a0, int32x4_t a1, int32x4_t a2, int32x4_t a3)
{
    return vpaddq_s32(vpaddq_s32(a0, a1), vpaddq_s32(a2, a3));
}

/* sum_h mn[h] * bs[h] over the 16 halves of a super-block, in 4 lanes. */
QN_INLINE int32x4_t n_mins(const int16_t *mn, const int16_t *bs)
{
    int16x8_t m0 = vld1q_s16(mn), m1 = vld1q_s16(mn + 8), b0 = vld1q_s16(bs), b1 = vld1q_s16(bs + 8);
    int32x4_t s = vmull_s16(vget_low_s16(m0), vget_low_s16(b0));
    s = vmlal_high_s16(s, m0, b0);
    s = vmlal_s16(s, vget_low_s16(m1), vget_low_s16(b1));
    return vmlal_high_s16(s, m1, b1);
}

/* acc + (D * dx) * I lane by lane: qmatmul.c's step() on 4 outputs. */
QN_INLINE float32x4_t n_step(float32x4_t acc, float32x4_t D, float dx, int32x4_t I)
{
    float32x4_t t = vmulq_n_f32(D, dx);
    t = vmulq_f32(t, vcvtq_f32_s32(I));
    return vaddq_f32(acc, t);
}

/* ------------------------------------------------ weights in registers */

QN_INLINE uint8x16_t n_shr(uint8x16_t v, int n) /* n need not be an immediate */
{
    return vshlq_u8(v, vdupq_n_s8((int8_t)-n));
}

/* 16 bytes of nibbles: the low nibbles (weights 0-15) and the high (16-31). */
QN_INLINE void n_nibbles(const uint8_t *p, uint8x16_t *lo, uint8x16_t *hi)
{
    uint8x16_t v = vld1q_u8(p);
    *lo = vandq_u8(v, vdupq_n_u8(15));
    *hi = vshrq_n_u8(v, 4);
}

/* Bits 0-15 and 16-31 of the little-endian word at p as bytes of 0 or 16. */
QN_INLINE void n_bits16(const uint8_t *p, uint8x16_t *lo, uint8x16_t *hi)
{
    uint32_t h;
    memcpy(&h, p, 4);
    const uint8x16_t v = vreinterpretq_u8_u32(vdupq_n_u32(h));
    const uint8x16_t ilo = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1};
    const uint8x16_t ihi = {2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3};
    const uint8x16_t bit = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
    *lo = vandq_u8(vtstq_u8(vqtbl1q_u8(v, ilo), bit), vdupq_n_u8(16));
    *hi = vandq_u8(vtstq_u8(vqtbl1q_u8(v, ihi), bit), vdupq_n_u8(16));
}

QN_INLINE int8x16_t n_s8(uint8x16_t v)
{
    return vreinterpretq_s8_u8(v);
}

QN_INLINE int8x16_t n_iq4(uint8x16_t nib)
{
    return vqtbl1q_s8(vld1q_s8(qu_iq4_values), nib);
}

/* Weights 32 g .. 32 g + 31 of the (super-)block at x, as qunpack.h writes
 * them: w0 the first 16, w1 the last. */
QN_INLINE void n_group(uint32_t t, const uint8_t *x, int g, int8x16_t *w0, int8x16_t *w1)
{
    const uint8x16_t m4 = vdupq_n_u8(15), m3 = vdupq_n_u8(3), m1 = vdupq_n_u8(1);
    uint8x16_t a, b, c, d;
    switch (t) {
    case ASN_T_Q8_0:
        *w0 = vld1q_s8((const int8_t *)x + 2), *w1 = vld1q_s8((const int8_t *)x + 18);
        return;
    case ASN_T_Q4_0:
        n_nibbles(x + 2, &a, &b);
        *w0 = vsubq_s8(n_s8(a), vdupq_n_s8(8)), *w1 = vsubq_s8(n_s8(b), vdupq_n_s8(8));
        return;
    case ASN_T_Q4_1:
        n_nibbles(x + 4, &a, &b);
        *w0 = n_s8(a), *w1 = n_s8(b);
        return;
    case ASN_T_Q5_0:
        n_nibbles(x + 6, &a, &b);
        n_bits16(x + 2, &c, &d);
        *w0 = vsubq_s8(n_s8(vorrq_u8(a, c)), vdupq_n_s8(16));
        *w1 = vsubq_s8(n_s8(vorrq_u8(b, d)), vdupq_n_s8(16));
        return;
    case ASN_T_Q5_1:
        n_nibbles(x + 8, &a, &b);
        n_bits16(x + 4, &c, &d);
        *w0 = n_s8(vorrq_u8(a, c)), *w1 = n_s8(vorrq_u8(b, d));
        return;
    case ASN_T_IQ4_NL:
        n_nibbles(x + 2, &a, &b);
        *w0 = n_iq4(a), *w1 = n_iq4(b);
        return;
    case ASN_T_Q2_K: {
        const uint8_t *p = x + 16 + 32 * (g / 4);
        *w0 = n_s8(vandq_u8(n_shr(vld1q_u8(p), 2 * (g % 4)), m3));
        *w1 = n_s8(vandq_u8(n_shr(vld1q_u8(p + 16), 2 * (g % 4)), m3));
        return;
    }
    case ASN_T_Q3_K: { /* (low 2 bits | high bit << 2) - 4 */
        const uint8_t *p = x + 32 + 32 * (g / 4);
        for (int h = 0; h < 2; h++) {
            uint8x16_t lo = vandq_u8(n_shr(vld1q_u8(p + 16 * h), 2 * (g % 4)), m3);
            uint8x16_t hb = vandq_u8(n_shr(vld1q_u8(x + 16 * h), g), m1);
            int8x16_t w = vsubq_s8(n_s8(vorrq_u8(lo, vshlq_n_u8(hb, 2))), vdupq_n_s8(4));
            *(h ? w1 : w0) = w;
        }
        return;
    }
    case ASN_T_Q4_K: {
        const uint8_t *p = x + 16 + 32 * (g / 2);
        *w0 = n_s8(vandq_u8(n_shr(vld1q_u8(p), 4 * (g % 2)), m4));
        *w1 = n_s8(vandq_u8(n_shr(vld1q_u8(p + 16), 4 * (g % 2)), m4));
        return;
    }
    case ASN_T_Q5_K: {
        const uint8_t *p = x + 48 + 32 * (g / 2);
        for (int h = 0; h < 2; h++) {
            uint8x16_t lo = vandq_u8(n_shr(vld1q_u8(p + 16 * h), 4 * (g % 2)), m4);
            uint8x16_t hb = vandq_u8(n_shr(vld1q_u8(x + 16 + 16 * h), g), m1);
            *(h ? w1 : w0) = n_s8(vorrq_u8(lo, vshlq_n_u8(hb, 4)));
        }
        return;
    }
    case ASN_T_Q6_K: { /* (low nibble | 2 high bits << 4) - 32 */
        int i = g / 4, s = g % 4;
        const uint8_t *p = x + 64 * i + 32 * (s & 1), *ph = x + 128 + 32 * i;
        for (int h = 0; h < 2; h++) {
            uint8x16_t lo = vandq_u8(n_shr(vld1q_u8(p + 16 * h), 4 * (s >> 1)), m4);
            uint8x16_t hi = vandq_u8(n_shr(vld1q_u8(ph + 16 * h), 2 * s), m3);
            int8x16_t w = vsubq_s8(n_s8(vorrq_u8(lo, vshlq_n_u8(hi, 4))), vdupq_n_s8(32));
            *(h ? w1 : w0) = w;
        }
        return;
    }
    default: /* IQ4_XS */
        n_nibbles(x + 8 + 16 * g, &a, &b);
        *w0 = n_iq4(a), *w1 = n_iq4(b);
        return;
    }
}

/* The 8 six-bit scales and mins of Q4_K / Q5_K from their 12 bytes p, each
 * written twice (per 16 weights):
 *   sc[0..3] = p[0..3] & 63, mn[0..3] = p[4..7] & 63,
 *   sc[4..7] = (p[8..11] & 15) | (p[0..3] >> 6) << 4,
 *   mn[4..7] = (p[8..11] >> 4) | (p[4..7] >> 6) << 4. */
QN_INLINE void n_k_scales(const uint8_t *p, int16_t *sc, int16_t *mn)
{
    uint8x8_t a = vld1_u8(p);
    uint32_t c;
    memcpy(&c, p + 8, 4);
    const int8x8_t sh = {0, 0, 0, 0, -4, -4, -4, -4};
    uint8x8_t nib = vand_u8(vshl_u8(vreinterpret_u8_u32(vdup_n_u32(c)), sh), vdup_n_u8(15));
    uint32x2_t lo = vreinterpret_u32_u8(vand_u8(a, vdup_n_u8(63)));                   /* sc0-3, mn0-3 */
    uint32x2_t hi = vreinterpret_u32_u8(vorr_u8(nib, vshl_n_u8(vshr_n_u8(a, 6), 4))); /* sc4-7, mn4-7 */
    uint8x8_t s8 = vreinterpret_u8_u32(vzip1_u32(lo, hi)), m8 = vreinterpret_u8_u32(vzip2_u32(lo, hi));
    vst1q_s16(sc, vreinterpretq_s16_u16(vmovl_u8(vzip1_u8(s8, s8))));
    vst1q_s16(sc + 8, vreinterpretq_s16_u16(vmovl_u8(vzip2_u8(s8, s8))));
    vst1q_s16(mn, vreinterpretq_s16_u16(vmovl_u8(vzip1_u8(m8, m8))));
    vst1q_s16(mn + 8, vreinterpretq_s16_u16(vmovl_u8(vzip2_u8(m8, m8))));
}

/* The scales and mins (per 16 weights; 256-weight types only) and the two
 * factors of the (super-)block at x, as qunpack.h writes them. */
QN_INLINE void n_meta(uint32_t t, const uint8_t *x, int16_t *sc, int16_t *mn, float *D, float *Dm)
{
    switch (t) {
    case ASN_T_Q8_0: case ASN_T_Q4_0: case ASN_T_Q5_0: case ASN_T_IQ4_NL:
        *D = n_half(x), *Dm = 0;
        return;
    case ASN_T_Q4_1: case ASN_T_Q5_1:
        *D = n_half(x), *Dm = n_half(x + 2);
        return;
    case ASN_T_Q4_K: case ASN_T_Q5_K:
        *D = n_half(x), *Dm = -n_half(x + 2);
        n_k_scales(x + 4, sc, mn);
        return;
    case ASN_T_Q6_K: {
        int8x16_t s = vld1q_s8((const int8_t *)x + 192);
        *D = n_half(x + 208), *Dm = 0;
        vst1q_s16(sc, vmovl_s8(vget_low_s8(s)));
        vst1q_s16(sc + 8, vmovl_high_s8(s));
        return;
    }
    case ASN_T_Q2_K: {
        uint8x16_t v = vld1q_u8(x), lo = vandq_u8(v, vdupq_n_u8(15)), hi = vshrq_n_u8(v, 4);
        *D = n_half(x + 80), *Dm = -n_half(x + 82);
        vst1q_s16(sc, vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(lo))));
        vst1q_s16(sc + 8, vreinterpretq_s16_u16(vmovl_high_u8(lo)));
        vst1q_s16(mn, vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(hi))));
        vst1q_s16(mn + 8, vreinterpretq_s16_u16(vmovl_high_u8(hi)));
        return;
    }
    case ASN_T_Q3_K:
        *D = n_half(x + 108), *Dm = 0;
        qu_q3_k_scales(x + 96, sc);
        return;
    default: /* IQ4_XS */
        *D = n_half(x), *Dm = 0;
        qu_iq4_xs_scales(x, sc);
        return;
    }
}

/* --------------------------------------------------- one token (decode) */

/* One token against the QN_ROWS rows of the block, reading the weights in
 * their packed form (each is used once): row by row, one int32x4
 * accumulator over each super-block (the token's quants reloaded from L1
 * for each row: fewer live registers than holding them for 8 rows); then
 * 2 x 4 outputs of float steps. */
QN_INLINE void n_fused(const qn_job *j, int r0, uint32_t t, int dot)
{
    const int S = qu_super(t), nb = qu_bytes(t);
    const uint8_t *row[QN_ROWS];
    for (int r = 0; r < QN_ROWS; r++)
        row[r] = j->W + (size_t)(r0 + r < j->N ? r0 + r : j->N - 1) * j->row_bytes;
    float32x4_t acc[2] = {vdupq_n_f32(0), vdupq_n_f32(0)};
    for (int b = 0; b < j->nsb; b++) {
        /* the next block of rows, as much of it as this step reads of this
         * one: the prefetch stays one block ahead */
        if (r0 + QN_ROWS < j->N) {
            const uint8_t *next = j->W + (size_t)(r0 + QN_ROWS) * j->row_bytes + (size_t)b * QN_ROWS * nb;
            for (int o = 0; o < QN_ROWS * nb; o += 64)
                __builtin_prefetch(next + o);
        }
        const int8_t *q = j->q + (size_t)b * S;
        const int16_t *bs = j->bs + (size_t)b * (S / 16);
        int32x4_t I[QN_ROWS], M[QN_ROWS];
        float D[QN_ROWS], Dm[QN_ROWS];
#pragma GCC unroll 1
        for (int r = 0; r < QN_ROWS; r++) {
            const uint8_t *x = row[r] + (size_t)b * nb;
            int16_t sc[16], mn[16];
            n_meta(t, x, sc, mn, &D[r], &Dm[r]);
            int32x4_t a = vdupq_n_s32(0);
            const int8_t *qr = q;
            __asm__("" : "+r"(qr)); /* not hoisted out of the row loop (16 registers, spilled) */
#pragma GCC unroll 8
            for (int g = 0; g < S / 32; g++) {
                int8x16_t w0, w1;
                n_group(t, x, g, &w0, &w1);
                a = n_acc(dot, t, a, w0, w1, vld1q_s8(qr + 32 * g), vld1q_s8(qr + 32 * g + 16), sc + 2 * g);
            }
            I[r] = a;
            if (n_min(t) && S == 256)
                M[r] = n_mins(mn, bs);
        }
        float dx = j->dx[b];
        for (int v = 0; v < 2; v++) {
            const int32x4_t *Iv = I + 4 * v, *Mv = M + 4 * v;
            acc[v] = n_step(acc[v], vld1q_f32(D + 4 * v), dx, n_sum4(Iv[0], Iv[1], Iv[2], Iv[3]));
            if (n_min(t)) {
                int32x4_t m = S == 32 ? vdupq_n_s32(j->bsum[b]) /* mn = 1 on both halves */
                                      : n_sum4(Mv[0], Mv[1], Mv[2], Mv[3]);
                acc[v] = n_step(acc[v], vld1q_f32(Dm + 4 * v), dx, m);
            }
        }
    }
    float out[QN_ROWS];
    vst1q_f32(out, acc[0]);
    vst1q_f32(out + 4, acc[1]);
    int rn = j->N - r0 < QN_ROWS ? j->N - r0 : QN_ROWS;
    for (int r = 0; r < rn; r++)
        j->Y[r0 + r] = out[r] + (j->bias ? j->bias[r0 + r] : 0.0f);
}

/* ----------------------------------------------------- a batch (prefill) */

/* The QN_ROWS rows of the block unpacked once to the scratch: weights as
 * int8, per-16 scales and mins, the factors as [nsb][QN_ROWS]. */
QN_INLINE void n_unpack(const qn_job *j, int r0, uint32_t t)
{
    const int S = qu_super(t), nb = qu_bytes(t), K = j->K;
    for (int r = 0; r < QN_ROWS; r++) {
        const uint8_t *x = j->W + (size_t)(r0 + r < j->N ? r0 + r : j->N - 1) * j->row_bytes;
        for (int b = 0; b < j->nsb; b++) {
            int16_t sc[16], mn[16];
            n_meta(t, x + (size_t)b * nb, sc, mn, &j->D[b * QN_ROWS + r], &j->Dm[b * QN_ROWS + r]);
            if (S == 256) {
                memcpy(j->sc + (size_t)r * (K / 16) + b * 16, sc, sizeof sc);
                if (n_min(t))
                    memcpy(j->mn + (size_t)r * (K / 16) + b * 16, mn, sizeof mn);
            }
            int8_t *w = j->w + (size_t)r * K + (size_t)b * S;
#pragma GCC unroll 8
            for (int g = 0; g < S / 32; g++) {
                int8x16_t w0, w1;
                n_group(t, x + (size_t)b * nb, g, &w0, &w1);
                vst1q_s8(w + 32 * g, w0);
                vst1q_s8(w + 32 * g + 16, w1);
            }
        }
    }
}

/* Rows rb .. rb + 3 of the unpacked block against tokens tk[0..3]: 16
 * int32x4 accumulators (row r, token i) per super-block, then out[i] =
 * the 4 rows' outputs for token i. */
QN_INLINE void n_tile(const qn_job *j, int rb, const int *tk, uint32_t t, int dot, float32x4_t *out)
{
    const int S = qu_super(t), K = j->K;
    const int8_t *qt[4];
    for (int i = 0; i < 4; i++)
        qt[i] = j->q + (size_t)tk[i] * K;
    float32x4_t acc[4];
    for (int i = 0; i < 4; i++)
        acc[i] = vdupq_n_f32(0);
    for (int b = 0; b < j->nsb; b++) {
        int32x4_t a[4][4];
        for (int r = 0; r < 4; r++)
            for (int i = 0; i < 4; i++)
                a[r][i] = vdupq_n_s32(0);
        for (int g = 0; g < S / 32; g++) {
            size_t k = (size_t)b * S + 32 * g;
            int8x16_t x0[4], x1[4];
            for (int i = 0; i < 4; i++)
                x0[i] = vld1q_s8(qt[i] + k), x1[i] = vld1q_s8(qt[i] + k + 16);
            for (int r = 0; r < 4; r++) {
                const int8_t *w = j->w + (size_t)(rb + r) * K + k;
                int8x16_t w0 = vld1q_s8(w), w1 = vld1q_s8(w + 16);
                const int16_t *sc = j->sc + (size_t)(rb + r) * (K / 16) + k / 16;
                for (int i = 0; i < 4; i++)
                    a[r][i] = n_acc(dot, t, a[r][i], w0, w1, x0[i], x1[i], sc);
            }
        }
        float32x4_t D = vld1q_f32(j->D + (size_t)b * QN_ROWS + rb);
        float32x4_t Dm = vld1q_f32(j->Dm + (size_t)b * QN_ROWS + rb);
        for (int i = 0; i < 4; i++) {
            float dx = j->dx[(size_t)b * j->T + tk[i]];
            acc[i] = n_step(acc[i], D, dx, n_sum4(a[0][i], a[1][i], a[2][i], a[3][i]));
            if (n_min(t)) {
                int32x4_t M;
                if (S == 32) {
                    M = vdupq_n_s32(j->bsum[(size_t)b * j->T + tk[i]]);
                } else {
                    const int16_t *bs = j->bs + (size_t)tk[i] * (K / 16) + b * 16;
                    const int16_t *mn = j->mn + (size_t)rb * (K / 16) + b * 16;
                    M = n_sum4(n_mins(mn, bs), n_mins(mn + K / 16, bs), n_mins(mn + 2 * (K / 16), bs),
                               n_mins(mn + 3 * (K / 16), bs));
                }
                acc[i] = n_step(acc[i], Dm, dx, M);
            }
        }
    }
    for (int i = 0; i < 4; i++)
        out[i] = acc[i];
}

/* T == 1: the fused kernel; else unpack the block and run its tiles (the
 * last token tile repeats its last token; its outputs are discarded). */
QN_INLINE void n_block_t(const qn_job *j, int r0, uint32_t t, int dot)
{
    if (j->T == 1) {
        n_fused(j, r0, t, dot);
        return;
    }
    n_unpack(j, r0, t);
    int rn = j->N - r0 < QN_ROWS ? j->N - r0 : QN_ROWS;
    for (int t0 = 0; t0 < j->T; t0 += 4) {
        int tk[4];
        for (int i = 0; i < 4; i++)
            tk[i] = t0 + i < j->T ? t0 + i : j->T - 1;
        for (int rb = 0; rb < rn; rb += 4) {
            float32x4_t o[4];
            float out[4][4];
            n_tile(j, rb, tk, t, dot, o);
            for (int i = 0; i < 4; i++)
                vst1q_f32(out[i], o[i]);
            for (int i = 0; i < 4 && t0 + i < j->T; i++)
                for (int r = rb; r < rb + 4 && r < rn; r++)
                    j->Y[(size_t)(t0 + i) * j->ldy + r0 + r] =
                        out[i][r - rb] + (j->bias ? j->bias[r0 + r] : 0.0f);
        }
    }
}

/* One instance per type (the type a constant in each) and per instruction
 * set. */
#define QN_CASE(T, FN, S, BYTES) case T: n_block_t(j, r0, T, DOT); break;

/* SDOT is an ARMv8.2 extension (GNU as wants both named); a CPU with it
 * implements ARMv8.2. */
#if defined(__clang__)
#define QN_DOTPROD __attribute__((target("dotprod")))
#else
#define QN_DOTPROD __attribute__((target("arch=armv8.2-a+dotprod")))
#endif
QN_DOTPROD static void block_dot(const qn_job *j, int r0)
{
#define DOT 1
    switch (j->type) { QU_TYPES(QN_CASE) }
#undef DOT
}

static void block_plain(const qn_job *j, int r0)
{
#define DOT 0
    switch (j->type) { QU_TYPES(QN_CASE) }
#undef DOT
}
#undef QN_CASE

void qn_block(const qn_job *j, int r0, int dot)
{
    if (dot)
        block_dot(j, r0);
    else
        block_plain(j, r0);
}
#endif
