/* qmatmul.c — Y = X W^T for quantized W in integer arithmetic, without
 * ever expanding W to f32.
 *
 * Each row of X is quantized once per product to 8-bit integers with one
 * f32 scale per super-block of W (32 or 256 elements, dx = amax / 127), and
 * sums of 16 quants. Each row of W is unpacked to the canonical form of
 * qunpack.h, a block of rows at a time, and multiplied with every token.
 * Every output is
 *     acc = 0;  for each super-block b in order:
 *         acc = acc + ((D_b * dx_b) * (float)I_b);
 *         acc = acc + ((Dm_b * dx_b) * (float)M_b)      (types with a min)
 *     y = acc + bias
 * with I_b, M_b exact integers and these float operations in this order,
 * unfused (this file is compiled with -ffp-contract=off). So a result does
 * not depend on the batch, the tile it falls in, the thread count or the
 * kernel variant: the SIMD kernels compute the integers in any order and
 * the float steps lane by lane, one lane per output.
 *
 * Accuracy is that of llama.cpp's quantized dot products (activations in
 * 8 bits per block); asn_engine_set_exact selects the exact path instead
 * (weights dequantized to f32, asn/linalg.h). */
#include "asn/cpu.h"
#include "asn/linalg.h"
#include "asn/gguf.h"
#include "qunpack.h"
#include "transpose8.h"

#include <math.h>
#include <stdlib.h>
#include <pthread.h>
#include <string.h>

enum { ROWS = 8 }; /* rows unpacked together and per thread block */

/* The activations: T rows of K quants (q[t * K + k]) and K / 16 sums of 16
 * (bs[t * K / 16 + h]); the scale and the sum of the quants of each
 * super-block b, block-major so that a tile's tokens are adjacent:
 * dx[b * T + t], bsum[b * T + t] (both padded by 4 entries). */
typedef struct qacts {
    const int8_t *q;
    const int16_t *q16; /* the quants widened, for the int16 panels (qg_form's w16); else NULL */
    const int16_t *bs;
    const float *dx;
    const int32_t *bsum;
} qacts;

typedef struct qjob {
    int T, K, N, S, nsb, has_min;
    uint32_t type;
    const uint8_t *W;
    size_t row_bytes;
    qacts a;
    const float *bias;
    float *Y;
    int ldy;
    asn_pool *pool;
} qjob;

/* The unpacked form of ROWS rows: w[ROWS][K], sc and mn [ROWS][K/16],
 * and D, Dm as [nsb][ROWS] (one vector per super-block). */
typedef struct qrows {
    int8_t *w;
    int16_t *sc, *mn;
    float *D, *Dm;
} qrows;

/* A panel of R rows repacked for the panel kernels (qgemm_x86.h):
 * wq[k / 4][R] words of four weights (k..k+3 of each row; in int16,
 * wq[k / 2][R] words of two), scv[K / 16][R]
 * the scales (int16 pairs, or plain int32 with VNNI), cv[nsb][8][R] pairs
 * of mins or -off * scales, D and Dm [nsb][R]. */
typedef struct qpanel {
    int8_t *wq;
    int32_t *scv, *cv;
    float *D, *Dm;
} qpanel;

static int has_min(uint32_t type)
{
    return type == ASN_T_Q4_1 || type == ASN_T_Q5_1 || type == ASN_T_Q2_K || type == ASN_T_Q4_K ||
           type == ASN_T_Q5_K;
}

int asn_qmatmul_supported(uint32_t type, int K)
{
    int S = qu_super(type);
    return S && K > 0 && K % S == 0;
}

/* --------------------------------------------------- activation quants */

/* Row x (K floats) to q (K int8), dx (K / S floats), bs (K / 16 int16).
 * One copy per instruction set so that it vectorizes (roundf, the maximum
 * and fabsf give the same results vectorized or not). */
static inline __attribute__((always_inline)) void quantize_body(const float *x, int K, int S, int T, int8_t *q,
                                                                 float *dx, int16_t *bs, int32_t *bsum)
{
    for (int b = 0; b < K / S; b++) {
        const float *xb = x + (size_t)b * S;
        float amax = 0.0f;
        for (int j = 0; j < S; j++)
            amax = fabsf(xb[j]) > amax ? fabsf(xb[j]) : amax; /* fmaxf's result, vectorizable */
        float d = amax / 127.0f, id = amax > 0.0f ? 127.0f / amax : 0.0f;
        dx[(size_t)b * T] = d;
        for (int j = 0; j < S; j++) {
            float v = roundf(xb[j] * id); /* within [-127, 127] for finite x */
            q[(size_t)b * S + j] = (int8_t)(v >= 127.0f ? 127 : v <= -127.0f ? -127 : v == v ? (int)v : 0);
        }
    }
    for (int h = 0; h < K / 16; h++) {
        int s = 0;
        for (int j = 0; j < 16; j++)
            s += q[16 * h + j];
        bs[h] = (int16_t)s;
    }
    for (int b = 0; b < K / S; b++) {
        int s = 0;
        for (int h = b * (S / 16); h < (b + 1) * (S / 16); h++)
            s += bs[h];
        bsum[(size_t)b * T] = s;
    }
}

#define QA_ARGS const float *x, int K, int S, int T, int8_t *q, float *dx, int16_t *bs, int32_t *bsum
#if defined(__x86_64__)
__attribute__((target("arch=x86-64-v4"))) static void quantize_v4(QA_ARGS) { quantize_body(x, K, S, T, q, dx, bs, bsum); }
__attribute__((target("arch=x86-64-v3"))) static void quantize_v3(QA_ARGS) { quantize_body(x, K, S, T, q, dx, bs, bsum); }
#endif
static void quantize_base(QA_ARGS) { quantize_body(x, K, S, T, q, dx, bs, bsum); }

/* The copy for this CPU (asn/cpu.h). */
static void quantize_acts(QA_ARGS)
{
#if defined(__x86_64__)
    if (asn_cpu_has(ASN_CPU_V4))
        quantize_v4(x, K, S, T, q, dx, bs, bsum);
    else if (asn_cpu_has(ASN_CPU_V3))
        quantize_v3(x, K, S, T, q, dx, bs, bsum);
    else
#endif
        quantize_base(x, K, S, T, q, dx, bs, bsum);
}
#undef QA_ARGS

/* ----------------------------------------------------- the float steps */

/* The per-output float steps of the header comment, shared by all
 * kernels (the SIMD ones do the same per lane). */
static inline __attribute__((always_inline)) float step(float acc, float D, float dx, int I)
{
    float t = D * dx;
    t = t * (float)I;
    return acc + t;
}

/* ------------------------------------------------------ unpacking rows */

static inline __attribute__((always_inline)) void unpack_rows(const qjob *j, int r0, qrows *u)
{
    for (int r = 0; r < ROWS; r++) {
        int rr = r0 + r < j->N ? r0 + r : j->N - 1; /* past the end: a copy, discarded */
        qu_unpack_row(j->type, j->W + (size_t)rr * j->row_bytes, j->K, u->w + (size_t)r * j->K,
                      u->sc + (size_t)r * (j->K / 16), u->mn + (size_t)r * (j->K / 16), u->D + r,
                      u->Dm + r, ROWS);
    }
}

/* ------------------------------------------------------ generic kernel */

/* Output (row r of the block, token t): the definition, one output at a time. */
static float dot_generic(const qjob *j, const qrows *u, int r, int t)
{
    const int8_t *w = u->w + (size_t)r * j->K, *q = j->a.q + (size_t)t * j->K;
    const int16_t *sc = u->sc + (size_t)r * (j->K / 16), *mn = u->mn + (size_t)r * (j->K / 16);
    const int16_t *bs = j->a.bs + (size_t)t * (j->K / 16);
    const float *dx = j->a.dx + t;
    float acc = 0.0f;
    for (int b = 0; b < j->nsb; b++) {
        int I = 0, M = 0;
        for (int h = b * (j->S / 16); h < (b + 1) * (j->S / 16); h++) {
            int s = 0;
            for (int k = 16 * h; k < 16 * h + 16; k++)
                s += w[k] * q[k];
            I += sc[h] * s;
            if (j->has_min)
                M += mn[h] * bs[h];
        }
        acc = step(acc, u->D[b * ROWS + r], dx[(size_t)b * j->T], I);
        if (j->has_min)
            acc = step(acc, u->Dm[b * ROWS + r], dx[(size_t)b * j->T], M);
    }
    return acc;
}

static void block_generic(const qjob *j, int r0, qrows *u)
{
    unpack_rows(j, r0, u);
    int rn = j->N - r0 < ROWS ? j->N - r0 : ROWS;
    for (int t = 0; t < j->T; t++)
        for (int r = 0; r < rn; r++)
            j->Y[(size_t)t * j->ldy + r0 + r] =
                dot_generic(j, u, r, t) + (j->bias ? j->bias[r0 + r] : 0.0f);
}

/* ---------------------------------------------------------- x86 kernels */

#if defined(__x86_64__)
#include <immintrin.h>
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c,bmi2"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,bmi2")
#endif

#define QK_INLINE static inline __attribute__((always_inline))

/* What the kernel needs to know of a type at compile time: weights signed
 * (else unsigned bytes, no sign trick), scales all 1, a min term, and an
 * offset: Q6_K and Q3_K weights are multiplied as the unsigned quants
 * u = w + off, and off * sum_h sc[h] * sum(q over h) is taken off the
 * integer total (the same integer, fewer instructions than signs). */
QK_INLINE int k_signed(uint32_t t)
{
    return t == ASN_T_Q8_0 || t == ASN_T_Q4_0 || t == ASN_T_Q5_0 || t == ASN_T_IQ4_NL ||
           t == ASN_T_IQ4_XS;
}
QK_INLINE int k_off_shift(uint32_t t) /* log2 of the offset, 0: none */
{
    return t == ASN_T_Q6_K ? 5 : t == ASN_T_Q3_K ? 2 : 0;
}
QK_INLINE int k_unit(uint32_t t)
{
    return t == ASN_T_Q8_0 || t == ASN_T_Q4_0 || t == ASN_T_Q5_0 || t == ASN_T_IQ4_NL ||
           t == ASN_T_Q4_1 || t == ASN_T_Q5_1;
}
QK_INLINE float k_half(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}

QK_INLINE __m256i k_load(const void *p)
{
    return _mm256_loadu_si256((const __m256i *)p);
}

/* 16 bytes of nibbles as 32 bytes: low nibbles, then high nibbles. */
QK_INLINE __m256i k_nibbles16(const uint8_t *p)
{
    __m128i v = _mm_loadu_si128((const __m128i *)p);
    __m256i t = _mm256_set_m128i(_mm_srli_epi16(v, 4), v);
    return _mm256_and_si256(t, _mm256_set1_epi8(15));
}

/* The 32 bits of a little-endian word as 32 bytes of 0 or 16. */
QK_INLINE __m256i k_bits16(const uint8_t *p)
{
    uint32_t h;
    memcpy(&h, p, 4);
    __m256i v = _mm256_set1_epi32((int)h);
    const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2,
                                            2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    v = _mm256_and_si256(_mm256_shuffle_epi8(v, spread), bit);
    return _mm256_and_si256(_mm256_cmpeq_epi8(v, bit), _mm256_set1_epi8(16));
}

QK_INLINE __m256i k_iq4(__m256i nib)
{
    const __m256i tab = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)qu_iq4_values));
    return _mm256_shuffle_epi8(tab, nib);
}

/* Weights 32 g .. 32 g + 31 of a (super-)block, as qunpack.h writes them
 * (plus the offset of Q3_K and Q6_K, see k_off_shift). */
QK_INLINE __m256i k_group(uint32_t t, const uint8_t *x, int g)
{
    const __m256i m4 = _mm256_set1_epi8(15), m3 = _mm256_set1_epi8(3), m1 = _mm256_set1_epi8(1);
    switch (t) {
    case ASN_T_Q8_0: return k_load(x + 2);
    case ASN_T_Q4_0: return _mm256_sub_epi8(k_nibbles16(x + 2), _mm256_set1_epi8(8));
    case ASN_T_Q4_1: return k_nibbles16(x + 4);
    case ASN_T_Q5_0:
        return _mm256_sub_epi8(_mm256_or_si256(k_nibbles16(x + 6), k_bits16(x + 2)), _mm256_set1_epi8(16));
    case ASN_T_Q5_1: return _mm256_or_si256(k_nibbles16(x + 8), k_bits16(x + 4));
    case ASN_T_IQ4_NL: return k_iq4(k_nibbles16(x + 2));
    case ASN_T_Q2_K:
        return _mm256_and_si256(_mm256_srli_epi16(k_load(x + 16 + 32 * (g / 4)), 2 * (g % 4)), m3);
    case ASN_T_Q3_K: {
        __m256i lo = _mm256_and_si256(_mm256_srli_epi16(k_load(x + 32 + 32 * (g / 4)), 2 * (g % 4)), m3);
        __m256i hi = _mm256_and_si256(_mm256_srli_epi16(k_load(x), g), m1);
        return _mm256_or_si256(lo, _mm256_slli_epi16(hi, 2)); /* w + 4 */
    }
    case ASN_T_Q4_K:
        return _mm256_and_si256(_mm256_srli_epi16(k_load(x + 16 + 32 * (g / 2)), 4 * (g % 2)), m4);
    case ASN_T_Q5_K: {
        __m256i lo = _mm256_and_si256(_mm256_srli_epi16(k_load(x + 48 + 32 * (g / 2)), 4 * (g % 2)), m4);
        __m256i hi = _mm256_and_si256(_mm256_srli_epi16(k_load(x + 16), g), m1);
        return _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4));
    }
    case ASN_T_Q6_K: {
        int i = g / 4, s = g % 4;
        __m256i lo = _mm256_and_si256(_mm256_srli_epi16(k_load(x + 64 * i + 32 * (s & 1)), 4 * (s >> 1)), m4);
        __m256i hi = _mm256_and_si256(_mm256_srli_epi16(k_load(x + 128 + 32 * i), 2 * s), m3);
        return _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4)); /* w + 32 */
    }
    default: /* IQ4_XS */
        return k_iq4(k_nibbles16(x + 8 + 16 * g));
    }
}

/* The scales (one per 16 weights, 16 int16: only the first S / 16 matter),
 * mins and the two factors of a (super-)block. */
QK_INLINE void k_meta(uint32_t t, const uint8_t *x, int16_t *sc, int16_t *mn, float *D, float *Dm)
{
    switch (t) {
    case ASN_T_Q8_0: case ASN_T_Q4_0: case ASN_T_Q5_0: case ASN_T_IQ4_NL:
        *D = k_half(x), *Dm = 0;
        return;
    case ASN_T_Q4_1: case ASN_T_Q5_1:
        *D = k_half(x), *Dm = k_half(x + 2);
        mn[0] = mn[1] = 1;
        return;
    case ASN_T_Q4_K: case ASN_T_Q5_K: {
        /* the 12 bytes p of 6-bit scales and mins, in vector registers:
         * sc[0..3] = p[0..3] & 63, mn[0..3] = p[4..7] & 63,
         * sc[4..7] = (p[8..11] & 15) | (p[0..3] >> 6) << 4,
         * mn[4..7] = (p[8..11] >> 4) | (p[4..7] >> 6) << 4 */
        *D = k_half(x), *Dm = -k_half(x + 2);
        __m128i p = _mm_loadu_si128((const __m128i *)(x + 4)); /* 4 bytes past: the quants */
        __m128i lo = _mm_and_si128(p, _mm_set1_epi8(63));
        __m128i top = _mm_and_si128(_mm_srli_epi16(p, 2), _mm_set1_epi8(0x30));
        __m128i p8 = _mm_shuffle_epi8(p, _mm_setr_epi8(8, 9, 10, 11, 8, 9, 10, 11, -1, -1, -1, -1, -1, -1, -1, -1));
        __m128i nib = _mm_blend_epi16(p8, _mm_srli_epi16(p8, 4), 0x0c); /* bytes 4..7 shifted */
        __m128i hi = _mm_or_si128(_mm_and_si128(nib, _mm_set1_epi8(15)), top);
        __m128i sm = _mm_unpacklo_epi32(lo, hi); /* sc0-3, sc4-7, mn0-3, mn4-7 */
        _mm256_storeu_si256((__m256i *)sc, _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(sm, sm)));
        _mm256_storeu_si256((__m256i *)mn, _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(sm, sm)));
        return;
    }
    case ASN_T_Q6_K:
        *D = k_half(x + 208), *Dm = 0;
        _mm256_storeu_si256((__m256i *)sc, _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(x + 192))));
        return;
    case ASN_T_Q2_K: {
        __m128i v = _mm_loadu_si128((const __m128i *)x);
        *D = k_half(x + 80), *Dm = -k_half(x + 82);
        _mm256_storeu_si256((__m256i *)sc, _mm256_cvtepu8_epi16(_mm_and_si128(v, _mm_set1_epi8(15))));
        _mm256_storeu_si256((__m256i *)mn,
                            _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(v, 4), _mm_set1_epi8(15))));
        return;
    }
    case ASN_T_Q3_K:
        *D = k_half(x + 108), *Dm = 0;
        qu_q3_k_scales(x + 96, sc);
        return;
    default: /* IQ4_XS */
        *D = k_half(x), *Dm = 0;
        qu_iq4_xs_scales(x, sc);
        return;
    }
}

/* The products of one 32-weight group with one token's quants, summed in
 * pairs: 16 int16 lanes. Signed weights: |w| times q with w's sign (the
 * first operand of maddubs is unsigned; |w| <= 128, |q| <= 127 keep pair
 * sums below 2^15). */
QK_INLINE __m256i k_pairs(int sgn, __m256i w, __m256i aw, __m256i q)
{
    return sgn ? _mm256_maddubs_epi16(aw, _mm256_sign_epi8(q, w)) : _mm256_maddubs_epi16(w, q);
}

/* The integer instruction set of a kernel variant: 0 maddubs + madd
 * (AVX2), 1 vpdpbusd in its AVX-512 VNNI encoding, 2 in its AVX-VNNI (VEX)
 * encoding. Written as asm so that one source serves every variant. */
/* (target: clang checks the asm operands where the function is defined) */
QK_INLINE __attribute__((target("avx2"))) __m256i k_dpbusd(int vnni, __m256i acc, __m256i u, __m256i q)
{
    if (vnni == 2)
        __asm__("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(u), "x"(q));
    else
        __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(u), "v"(q));
    return acc;
}

/* With VNNI, the weights of unit-scale types are multiplied as unsigned
 * bytes: signed ones offset by 128 (flipped top bit), and 128 * sum(q)
 * taken off the integer total afterwards. */
QK_INLINE int k_offset(int vnni, uint32_t t)
{
    return vnni && k_unit(t) && k_signed(t);
}

QK_INLINE __m256i k_weights(int vnni, uint32_t t, const uint8_t *x, int g)
{
    if (!k_offset(vnni, t))
        return k_group(t, x, g);
    /* Q4_0 and Q5_0: one addition instead of taking the middle off and
     * adding 128 */
    if (t == ASN_T_Q4_0)
        return _mm256_add_epi8(k_nibbles16(x + 2), _mm256_set1_epi8(120));
    if (t == ASN_T_Q5_0)
        return _mm256_add_epi8(_mm256_or_si256(k_nibbles16(x + 6), k_bits16(x + 2)), _mm256_set1_epi8(112));
    return _mm256_xor_si256(k_group(t, x, g), _mm256_set1_epi8((char)0x80));
}

/* vpdpwssd: acc + pairwise products of int16 lanes, as k_dpbusd. */
QK_INLINE __attribute__((target("avx2"))) __m256i k_dpwssd(int vnni, __m256i acc, __m256i a, __m256i b)
{
    if (vnni == 2)
        __asm__("%{vex%} vpdpwssd %2, %1, %0" : "+x"(acc) : "x"(a), "x"(b));
    else
        __asm__("vpdpwssd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
    return acc;
}

/* acc + the 8-lane sum of one 32-weight group times one token's quants:
 * with VNNI one vpdpbusd (unit scales) or maddubs + vpdpwssd (scales). */
QK_INLINE __m256i k_acc(int vnni, uint32_t t, __m256i acc, __m256i w, __m256i aw, __m256i q, __m256i sx)
{
    if (vnni && k_unit(t))
        return k_dpbusd(vnni, acc, w, q);
    __m256i p = k_pairs(k_signed(t), w, aw, q);
    return vnni ? k_dpwssd(vnni, acc, p, sx) : _mm256_add_epi32(acc, _mm256_madd_epi16(p, sx));
}

/* The scale operand of group g: its two per-16 scales, 8 lanes each, from
 * the 16 scales of the super-block. */
QK_INLINE __m256i k_sx(const int16_t *sc, int g)
{
    static const int8_t pick[4][32] = {
        {0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3},
        {4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7},
        {8, 9, 8, 9, 8, 9, 8, 9, 8, 9, 8, 9, 8, 9, 8, 9, 10, 11, 10, 11, 10, 11, 10, 11, 10, 11, 10, 11, 10, 11, 10, 11},
        {12, 13, 12, 13, 12, 13, 12, 13, 12, 13, 12, 13, 12, 13, 12, 13, 14, 15, 14, 15, 14, 15, 14, 15, 14, 15, 14, 15, 14, 15, 14, 15},
    };
    __m256i s = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(sc + 8 * (g / 4))));
    return _mm256_shuffle_epi8(s, k_load(pick[g % 4]));
}

/* Eight vectors of 8 int32 lanes to one: lane p = the total of vector p. */
QK_INLINE __m256i reduce8(__m256i a0, __m256i a1, __m256i a2, __m256i a3, __m256i a4, __m256i a5,
                          __m256i a6, __m256i a7)
{
    __m256i h0 = _mm256_hadd_epi32(a0, a1), h1 = _mm256_hadd_epi32(a2, a3);
    __m256i h2 = _mm256_hadd_epi32(a4, a5), h3 = _mm256_hadd_epi32(a6, a7);
    __m256i lo = _mm256_hadd_epi32(h0, h1), hi = _mm256_hadd_epi32(h2, h3);
    return _mm256_add_epi32(_mm256_permute2x128_si256(lo, hi, 0x20),
                            _mm256_permute2x128_si256(lo, hi, 0x31));
}

/* acc + (D * dx) * I lane by lane: step() on 8 outputs. */
QK_INLINE __m256 vstep(__m256 acc, __m256 D, __m256 dx, __m256i I)
{
    __m256 t = _mm256_mul_ps(D, dx);
    t = _mm256_mul_ps(t, _mm256_cvtepi32_ps(I));
    return _mm256_add_ps(acc, t);
}

/* Eight outputs' sum_h mn_p[h] * bs_p[h] over 16 halves (mins, or scales
 * for the offset of Q3_K and Q6_K): lane p. */
QK_INLINE __m256i k_mins(const int16_t *const mn[8], const int16_t *const bs[8])
{
#define M(p) _mm256_madd_epi16(k_load(mn[p]), k_load(bs[p]))
    return reduce8(M(0), M(1), M(2), M(3), M(4), M(5), M(6), M(7));
#undef M
}

/* One token against the ROWS rows of the block, reading the weights in
 * their packed form (decode: each weight is used once). */
QK_INLINE void fused_t(const qjob *j, int r0, uint32_t t, int vnni)
{
    const int S = qu_super(t);
    const int unit = k_unit(t), mins = has_min(t), nb = qu_bytes(t);
    const uint8_t *row[ROWS];
    for (int r = 0; r < ROWS; r++)
        row[r] = j->W + (size_t)(r0 + r < j->N ? r0 + r : j->N - 1) * j->row_bytes;
    const int8_t *q = j->a.q;
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc = _mm256_setzero_ps();
    for (int b = 0; b < j->nsb; b++) {
        int16_t sc[ROWS][16], mn[ROWS][16];
        float D[ROWS], Dm[ROWS];
        /* The block of rows after the next, as much of it as this step
         * reads of this one, into L2: the prefetch stays two blocks ahead.
         * Measured on Zen 4, 2 threads, 125M Q4_K_M decode against one
         * block ahead into L1: 336 -> 401 tokens/s (AVX2), 376 -> 458
         * (AVX-512 VNNI); Q8_0 and the Qwen shape within the noise. */
        if (r0 + 2 * ROWS < j->N) {
            const char *next = (const char *)j->W + (size_t)(r0 + 2 * ROWS) * j->row_bytes + (size_t)b * ROWS * nb;
            for (int o = 0; o < ROWS * nb; o += 64)
                _mm_prefetch(next + o, _MM_HINT_T1);
        }
        for (int r = 0; r < ROWS; r++)
            k_meta(t, row[r] + (size_t)b * nb, sc[r], mn[r], &D[r], &Dm[r]);
        __m256i a[ROWS];
        for (int r = 0; r < ROWS; r++)
            a[r] = _mm256_setzero_si256();
#pragma GCC unroll 8
        for (int g = 0; g < S / 32; g++) {
            __m256i x = k_load(q + (size_t)b * S + 32 * g);
            for (int r = 0; r < ROWS; r++) {
                __m256i w = k_weights(vnni, t, row[r] + (size_t)b * nb, g);
                __m256i sx = unit ? ones : k_sx(sc[r], g);
                a[r] = k_acc(vnni, t, a[r], w, _mm256_sign_epi8(w, w), x, sx);
            }
        }
        __m256 vdx = _mm256_set1_ps(j->a.dx[b]);
        __m256i I = reduce8(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]);
        if (k_offset(vnni, t))
            I = _mm256_sub_epi32(I, _mm256_set1_epi32(128 * j->a.bsum[b]));
        /* per-16 sums of the token's quants against each row's scales or mins */
        const int16_t *sp[8], *mp[8], *bp[8];
        for (int r = 0; r < ROWS; r++)
            sp[r] = sc[r], mp[r] = mn[r], bp[r] = j->a.bs + (size_t)b * 16;
        if (k_off_shift(t))
            I = _mm256_sub_epi32(I, _mm256_slli_epi32(k_mins(sp, bp), k_off_shift(t)));
        acc = vstep(acc, _mm256_loadu_ps(D), vdx, I);
        if (mins) {
            __m256i M;
            if (S == 256) {
                M = k_mins(mp, bp);
            } else {
                M = _mm256_set1_epi32(j->a.bsum[b]); /* mn = 1 on both halves */
            }
            acc = vstep(acc, _mm256_loadu_ps(Dm), vdx, M);
        }
    }
    float out[8];
    _mm256_storeu_ps(out, acc);
    int rn = j->N - r0 < ROWS ? j->N - r0 : ROWS;
    for (int r = 0; r < rn; r++)
        j->Y[r0 + r] = out[r] + (j->bias ? j->bias[r0 + r] : 0.0f);
}

/* The ROWS rows of the block unpacked once (w, per-16 scales and mins, the
 * factors), then every token against them in tiles of 4 rows x 2 tokens:
 * lane p = (row p % 4, token t0 or t1). */
QK_INLINE void unpack_t(const qjob *j, int r0, qrows *u, uint32_t t, int vnni)
{
    const int S = j->S, nb = qu_bytes(t), K = j->K;
    for (int r = 0; r < ROWS; r++) {
        const uint8_t *x = j->W + (size_t)(r0 + r < j->N ? r0 + r : j->N - 1) * j->row_bytes;
        for (int b = 0; b < j->nsb; b++) {
            int16_t sc[16], mn[16];
            k_meta(t, x + (size_t)b * nb, sc, mn, &u->D[b * ROWS + r], &u->Dm[b * ROWS + r]);
            if (!k_unit(t))
                memcpy(u->sc + (size_t)r * (K / 16) + b * (S / 16), sc, sizeof(int16_t) * (S / 16));
            if (has_min(t) && S == 256)
                memcpy(u->mn + (size_t)r * (K / 16) + b * (S / 16), mn, sizeof(int16_t) * (S / 16));
#pragma GCC unroll 8
            for (int g = 0; g < S / 32; g++)
                _mm256_storeu_si256((__m256i *)(u->w + (size_t)r * K + (size_t)b * S + 32 * g),
                                    k_weights(vnni, t, x + (size_t)b * nb, g));
        }
    }
}

/* 4 rows x NT tokens (NT = 2 or 4) of the unpacked block: NT / 2 vectors
 * of 8 outputs, lane p of vector v = (row rb + p % 4, token tk[2v + p / 4]). */
QK_INLINE void tile_4xn(const qjob *j, const qrows *u, int rb, const int *tk, int NT, uint32_t t, int vnni,
                        __m256 *out)
{
    const int K = j->K, S = j->S;
    const int unit = k_unit(t), mins = has_min(t);
    const int8_t *qt[4];
    for (int i = 0; i < NT; i++)
        qt[i] = j->a.q + (size_t)tk[i] * K;
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int b = 0; b < j->nsb; b++) {
        __m256i a[16];
        for (int p = 0; p < 4 * NT; p++)
            a[p] = _mm256_setzero_si256();
#pragma GCC unroll 8
        for (int g = 0; g < S / 32; g++) {
            size_t k = (size_t)b * S + 32 * g;
            __m256i x[4];
            for (int i = 0; i < NT; i++)
                x[i] = k_load(qt[i] + k);
            for (int r = 0; r < 4; r++) {
                __m256i w = k_load(u->w + (size_t)(rb + r) * K + k), aw = _mm256_sign_epi8(w, w);
                __m256i sx = unit ? ones : k_sx(u->sc + (size_t)(rb + r) * (K / 16) + b * 16, g);
                for (int i = 0; i < NT; i++)
                    a[4 * i + r] = k_acc(vnni, t, a[4 * i + r], w, aw, x[i], sx);
            }
        }
        const float *Db = u->D + (size_t)b * ROWS + rb, *Dmb = u->Dm + (size_t)b * ROWS + rb;
        for (int v = 0; v < NT / 2; v++) {
            int t0 = tk[2 * v], t1 = tk[2 * v + 1];
            /* lanes 0-3 token t0, 4-7 token t1: tokens are adjacent
             * (tk[2v + 1] = tk[2v] + 1, or past T: discarded lanes) */
            const __m256i pick = _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1);
            __m256 vdx = _mm256_permutevar8x32_ps(
                _mm256_castps128_ps256(_mm_castsi128_ps(_mm_loadl_epi64((const __m128i *)(j->a.dx + (size_t)b * j->T + t0)))), pick);
            __m256i vbs = _mm256_permutevar8x32_epi32(
                _mm256_castsi128_si256(_mm_loadl_epi64((const __m128i *)(j->a.bsum + (size_t)b * j->T + t0))), pick);
            __m256i *av = a + 8 * v;
            __m256i I = reduce8(av[0], av[1], av[2], av[3], av[4], av[5], av[6], av[7]);
            const int16_t *b0 = j->a.bs + (size_t)t0 * (K / 16) + (size_t)b * (S / 16);
            const int16_t *b1 = j->a.bs + (size_t)t1 * (K / 16) + (size_t)b * (S / 16);
            if (k_offset(vnni, t))
                I = _mm256_sub_epi32(I, _mm256_slli_epi32(vbs, 7));
            /* per-16 sums of each lane's token against its row's scales or mins */
            const int16_t *sp[8], *mp[8], *bp[8];
            for (int p = 0; p < 8; p++) {
                sp[p] = u->sc + (size_t)(rb + p % 4) * (K / 16) + b * 16;
                mp[p] = u->mn + (size_t)(rb + p % 4) * (K / 16) + b * 16;
                bp[p] = p < 4 ? b0 : b1;
            }
            if (k_off_shift(t))
                I = _mm256_sub_epi32(I, _mm256_slli_epi32(k_mins(sp, bp), k_off_shift(t)));
            acc[v] = vstep(acc[v], _mm256_broadcast_ps((const __m128 *)Db), vdx, I);
            if (mins) {
                __m256i M;
                if (S == 256) {
                    M = k_mins(mp, bp);
                } else {
                    M = vbs; /* mn = 1 on both halves */
                }
                acc[v] = vstep(acc[v], _mm256_broadcast_ps((const __m128 *)Dmb), vdx, M);
            }
        }
    }
    for (int v = 0; v < NT / 2; v++)
        out[v] = acc[v];
}

/* T == 1: the fused kernel; else unpack the block and run tiles of 4 rows
 * x NT tokens (the last tile repeats its last token). */
QK_INLINE void block_t(const qjob *j, int r0, qrows *u, uint32_t t, int NT, int vnni)
{
    if (j->T == 1) {
        fused_t(j, r0, t, vnni);
        return;
    }
    unpack_t(j, r0, u, t, vnni);
    int rn = j->N - r0 < ROWS ? j->N - r0 : ROWS;
    for (int t0 = 0; t0 < j->T; t0 += NT) {
        int tk[4];
        for (int i = 0; i < NT; i++)
            tk[i] = t0 + i < j->T ? t0 + i : j->T - 1;
        for (int rb = 0; rb < rn; rb += 4) {
            __m256 o[2];
            float out[16];
            tile_4xn(j, u, rb, tk, NT, t, vnni, o);
            for (int v = 0; v < NT / 2; v++)
                _mm256_storeu_ps(out + 8 * v, o[v]);
            for (int i = 0; i < NT && t0 + i < j->T; i++)
                for (int r = rb; r < rb + 4 && r < rn; r++)
                    j->Y[(size_t)(t0 + i) * j->ldy + r0 + r] =
                        out[8 * (i / 2) + 4 * (i % 2) + (r - rb)] + (j->bias ? j->bias[r0 + r] : 0.0f);
        }
    }
}

/* ------------------------------------------------ panels (qgemm_x86.h) */

/* How a variant multiplies a type's weights (see qgemm_x86.h): as unsigned
 * bytes u = w + off (adj: what to add to k_group's bytes to get u), or
 * widened to int16 (w16: the full-range signed types without VNNI, times
 * their scale where they have one); with VNNI the types with scales sum
 * each run of weights under one scale exactly and multiply by it (g32:
 * runs of 32, where pairs of scales are equal); cv: a super-block of 256
 * whose offset share is taken off with the stored -off * sc[h]. */
typedef struct qg_form {
    int off, adj, w16, g32, cv;
} qg_form;

QK_INLINE qg_form qg_form_of(uint32_t t, int vnni)
{
    qg_form f = {0, 0, 0, 0, 0};
    f.g32 = t == ASN_T_Q4_K || t == ASN_T_Q5_K || t == ASN_T_IQ4_XS;
    switch (t) {
    case ASN_T_Q8_0: case ASN_T_IQ4_NL:
        if (vnni)
            f.off = f.adj = 128;
        else
            f.w16 = 1;
        break;
    case ASN_T_Q4_0: f.off = f.adj = vnni ? 128 : 8; break;
    case ASN_T_Q5_0: f.off = f.adj = vnni ? 128 : 16; break;
    case ASN_T_Q3_K: f.off = 4, f.cv = 1; break;  /* k_group gives w + 4 */
    case ASN_T_Q6_K: f.off = 32, f.cv = 1; break; /* and w + 32 */
    case ASN_T_IQ4_XS:
        if (vnni)
            f.off = f.adj = 128, f.cv = 1;
        else
            f.w16 = 1;
        break;
    default: break; /* Q4_1, Q5_1, Q2_K, Q4_K, Q5_K: unsigned quants, mins */
    }
    return f;
}

/* qg_form_of's w16 for code outside these x86 kernels (only where a
 * panel kernel runs: it is compiled for AVX2). */
static int qg_wide(uint32_t t, int vnni)
{
    return qg_form_of(t, vnni).w16;
}

QK_INLINE int32_t qg_ld32(const void *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

QK_INLINE int32_t qg_pair(int a, int b)
{
    return (int32_t)((uint32_t)(uint16_t)a | (uint32_t)(uint16_t)b << 16);
}

/* qg_repack for the int16 form (w16): w * sc[h] (|w| <= 128, |sc| <= 32),
 * the pair k, k + 1 a word; 8 rows at a time, transposed in registers. */
QK_INLINE void qg_repack16(const qjob *j, int r0, int R, uint32_t t, qpanel *p)
{
    const int S = qu_super(t), nb = qu_bytes(t);
    int32_t *wq = (int32_t *)p->wq;
    for (int r8 = 0; r8 < R; r8 += 8) {
        const uint8_t *x[8];
        for (int r = 0; r < 8; r++)
            x[r] = j->W + (size_t)(r0 + r8 + r < j->N ? r0 + r8 + r : j->N - 1) * j->row_bytes;
        for (int b = 0; b < j->nsb; b++) {
            int16_t sc[8][16], mn[16];
            for (int r = 0; r < 8; r++)
                k_meta(t, x[r] + (size_t)b * nb, sc[r], mn, &p->D[(size_t)b * R + r8 + r],
                       &p->Dm[(size_t)b * R + r8 + r]);
            for (int g = 0; g < S / 32; g++) {
                __m256i w[8], lo[8], hi[8];
                for (int r = 0; r < 8; r++) {
                    w[r] = k_group(t, x[r] + (size_t)b * nb, g);
                    lo[r] = _mm256_cvtepi8_epi16(_mm256_castsi256_si128(w[r]));
                    hi[r] = _mm256_cvtepi8_epi16(_mm256_extracti128_si256(w[r], 1));
                    if (!k_unit(t)) {
                        lo[r] = _mm256_mullo_epi16(lo[r], _mm256_set1_epi16(sc[r][2 * g]));
                        hi[r] = _mm256_mullo_epi16(hi[r], _mm256_set1_epi16(sc[r][2 * g + 1]));
                    }
                }
                v8 tl[8], th[8]; /* the words as lanes of transpose8's vectors */
                for (int r = 0; r < 8; r++)
                    tl[r] = (v8)lo[r], th[r] = (v8)hi[r];
                transpose8(tl);
                transpose8(th);
                int32_t *o = wq + ((size_t)b * (S / 2) + 16 * g) * R + r8;
                for (int i = 0; i < 8; i++) {
                    _mm256_storeu_si256((__m256i *)(o + (size_t)i * R), (__m256i)tl[i]);
                    _mm256_storeu_si256((__m256i *)(o + (size_t)(8 + i) * R), (__m256i)th[i]);
                }
            }
        }
    }
}

QK_INLINE void qg_repack(const qjob *j, int r0, int R, uint32_t t, int vnni, qpanel *p)
{
    const int S = qu_super(t), nb = qu_bytes(t);
    const qg_form f = qg_form_of(t, vnni);
    if (f.w16) {
        qg_repack16(j, r0, R, t, p);
        return;
    }
    int32_t *wq = (int32_t *)p->wq;
    for (int r = 0; r < R; r++) {
        const uint8_t *x = j->W + (size_t)(r0 + r < j->N ? r0 + r : j->N - 1) * j->row_bytes;
        for (int b = 0; b < j->nsb; b++) {
            int16_t sc[16], mn[16];
            const uint8_t *xb = x + (size_t)b * nb;
            k_meta(t, xb, sc, mn, &p->D[(size_t)b * R + r], &p->Dm[(size_t)b * R + r]);
            if (!k_unit(t))
                for (int h = 0; h < S / 16; h++)
                    p->scv[((size_t)b * (S / 16) + h) * R + r] = vnni ? sc[h] : qg_pair(sc[h], sc[h]);
            if (S == 256 && (f.cv || has_min(t)))
                for (int q = 0; q < 8; q++)
                    p->cv[((size_t)b * 8 + q) * R + r] =
                        f.cv ? qg_pair(-f.off * sc[2 * q], -f.off * sc[2 * q + 1]) : qg_pair(mn[2 * q], mn[2 * q + 1]);
#pragma GCC unroll 8
            for (int g = 0; g < S / 32; g++) {
                int32_t u[8];
                _mm256_storeu_si256((__m256i *)u, _mm256_add_epi8(k_group(t, xb, g), _mm256_set1_epi8((char)f.adj)));
                for (int i = 0; i < 8; i++)
                    wq[((size_t)b * (S / 4) + 8 * g + i) * R + r] = u[i];
            }
        }
    }
}

/* One instance of the kernel per type, the type a constant in each. */
QK_INLINE void block_x86(const qjob *j, int r0, qrows *u, int NT, int vnni)
{
    switch (j->type) {
#define QK_CASE(T, FN, S, BYTES) case T: block_t(j, r0, u, T, NT, vnni); break;
        QU_TYPES(QK_CASE)
#undef QK_CASE
    }
}

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

/* One copy of the kernels per instruction-set level: AVX2 (16 vector
 * registers: tiles of 4 x 2), AVX2 with AVX-VNNI, AVX-512 (32 registers:
 * 4 x 4), AVX-512 with VNNI. */
__attribute__((target("arch=x86-64-v3"))) static void block_avx2(const qjob *j, int r0, qrows *u)
{
    block_x86(j, r0, u, 2, 0);
}

__attribute__((target("arch=x86-64-v3,avxvnni"))) static void block_avxvnni(const qjob *j, int r0, qrows *u)
{
    block_x86(j, r0, u, 2, 2);
}

__attribute__((target("arch=x86-64-v4"))) static void block_avx512(const qjob *j, int r0, qrows *u)
{
    block_x86(j, r0, u, 4, 0);
}

__attribute__((target("arch=x86-64-v4,avx512vnni"))) static void block_avx512vnni(const qjob *j, int r0, qrows *u)
{
    block_x86(j, r0, u, 4, 1);
}

/* The panel kernels: 16 rows x 4 tokens per tile (AVX2: the 16 vector
 * registers; 256 Qwen2.5-0.5B-shape Q8_0 streams on 2 threads went from
 * 188-202 to 208-212 tokens/s against 16 x 2, Q4_K_M a tie; AVX-VNNI, not
 * measured, keeps 16 x 2), 32 x 4 with AVX-512. */
#define QG_SUFFIX avx2
#define QG_TARGET "arch=x86-64-v3"
#define QG_L 8
#define QG_VNNI 0
#define QG_NR 2
#define QG_NT 4
#include "qgemm_x86.h"

#define QG_SUFFIX avxvnni
#define QG_TARGET "arch=x86-64-v3,avxvnni"
#define QG_L 8
#define QG_VNNI 2
#define QG_NR 2
#define QG_NT 2
#include "qgemm_x86.h"

#define QG_SUFFIX avx512vnni
#define QG_TARGET "arch=x86-64-v4,avx512vnni"
#define QG_L 16
#define QG_VNNI 1
#define QG_NR 2
#define QG_NT 4
#include "qgemm_x86.h"
#endif

#if defined(__aarch64__)
#include "qmatmul_neon.h"
/* The NEON kernels (qmatmul_neon.c), given the job in their own terms. */
static void block_neon_as(const qjob *j, int r0, qrows *u, int dot)
{
    _Static_assert((int)QN_ROWS == (int)ROWS, "qmatmul_neon.h's block of rows");
    qn_job n = {.type = j->type, .T = j->T, .K = j->K, .N = j->N, .S = j->S, .nsb = j->nsb, .W = j->W,
                .row_bytes = j->row_bytes, .q = j->a.q, .bs = j->a.bs, .dx = j->a.dx, .bsum = j->a.bsum,
                .bias = j->bias, .Y = j->Y, .ldy = j->ldy, .w = u->w, .sc = u->sc, .mn = u->mn, .D = u->D,
                .Dm = u->Dm};
    qn_block(&n, r0, dot);
}
static void block_neon(const qjob *j, int r0, qrows *u) { block_neon_as(j, r0, u, 0); }
static void block_neondot(const qjob *j, int r0, qrows *u) { block_neon_as(j, r0, u, 1); }
#endif

/* ----------------------------------------------------------- dispatch */

typedef void (*block_fn)(const qjob *, int, qrows *);
typedef void (*panel_fn)(const qjob *, int, qpanel *);

/* A kernel: block runs ROWS rows against every token (and is the decode
 * path); where there is one, panel runs R rows against two or more tokens. */
typedef struct qkernel {
    const char *name;
    block_fn block;
    panel_fn panel;
    int R, vnni; /* the panel's rows and its integer instructions (qg_form_of) */
} qkernel;

static const qkernel k_generic = {"base", block_generic, NULL, 0, 0};
#if defined(__x86_64__)
static const qkernel k_avx2 = {"avx2", block_avx2, panel_avx2, 16, 0};
static const qkernel k_avxvnni = {"avxvnni", block_avxvnni, panel_avxvnni, 16, 2};
/* AVX-512 without VNNI batches through the AVX2 panels: faster than its
 * own 4 x 4 tiles (1241 vs 917 tokens/s prefill, 125M Q8_0, 2 threads) */
static const qkernel k_avx512 = {"avx512", block_avx512, panel_avx2, 16, 0};
static const qkernel k_avx512vnni = {"avx512vnni", block_avx512vnni, panel_avx512vnni, 32, 1};
#endif
#if defined(__aarch64__)
static const qkernel k_neon = {"neon", block_neon, NULL, 0, 0};
static const qkernel k_neondot = {"neondot", block_neondot, NULL, 0, 0};
#endif
static const qkernel *chosen;

/* The kernel called `name` if this machine can run it, else NULL. */
static const qkernel *by_name(const char *name)
{
    if (!strcmp(name, "base"))
        return &k_generic;
#if defined(__x86_64__)
    int v3 = asn_cpu_has(ASN_CPU_V3), v4 = asn_cpu_has(ASN_CPU_V4);
    if (!strcmp(name, "avx2") && v3)
        return &k_avx2;
    if (!strcmp(name, "avxvnni") && v3 && asn_cpu_has(ASN_CPU_AVXVNNI))
        return &k_avxvnni;
    if (!strcmp(name, "avx512") && v4)
        return &k_avx512;
    if (!strcmp(name, "avx512vnni") && v4 && asn_cpu_has(ASN_CPU_AVX512VNNI))
        return &k_avx512vnni;
#endif
#if defined(__aarch64__)
    if (!strcmp(name, "neon") && asn_cpu_has(ASN_CPU_NEON))
        return &k_neon;
    if (!strcmp(name, "neondot") && asn_cpu_has(ASN_CPU_NEON | ASN_CPU_DOTPROD))
        return &k_neondot;
#endif
    return NULL;
}

static pthread_once_t chosen_once = PTHREAD_ONCE_INIT;

static void choose(void)
{
    /* ASN_MATMUL_KERNEL=avx512|avx2|base forces a kernel, as for f32 */
    const char *force = getenv("ASN_MATMUL_KERNEL");
    const qkernel *k = force ? by_name(force) : NULL;
    /* the first this machine runs, fastest first */
    static const char *order[] = {"avx512vnni", "avx512", "avxvnni", "avx2", "neondot", "neon"};
    for (size_t i = 0; !k && i < sizeof order / sizeof order[0]; i++)
        k = by_name(order[i]);
    chosen = k ? k : &k_generic;
}

/* The kernel, chosen once (by whichever thread gets there first) unless
 * asn_qmatmul_set_kernel chose one. */
static const qkernel *pick(void)
{
    pthread_once(&chosen_once, choose);
    return chosen;
}

int asn_qmatmul_set_kernel(const char *name)
{
    const qkernel *k = by_name(name);
    if (!k)
        return -1;
    pthread_once(&chosen_once, choose); /* the default, so it cannot overwrite this later */
    chosen = k;
    return 0;
}

const char *asn_qmatmul_kernel(void)
{
    return pick()->name;
}

typedef struct qtask {
    const qjob *j;
    const qkernel *k;
} qtask;

/* Rows lo..hi in panels of k->R rows. */
static void run_panels(const qjob *j, const qkernel *k, int ith, int lo, int hi)
{
    size_t K = (size_t)j->K, R = (size_t)k->R, nsb = (size_t)j->nsb;
    /* wq: room for the int16 form (qg_repack16) */
    size_t wq = 2 * R * K, scv = R * (K / 16) * 4, cv = R * nsb * 8 * 4, d = R * nsb * sizeof(float);
    uint8_t *m = asn_pool_scratch(j->pool, ith, wq + scv + cv + 2 * d + 4 * 64);
    uint8_t *a = (uint8_t *)(((uintptr_t)m + 63) & ~(uintptr_t)63);
    qpanel p;
    p.wq = (int8_t *)a;
    p.scv = (int32_t *)(a + wq);
    p.cv = (int32_t *)(a + wq + scv);
    p.D = (float *)(a + wq + scv + cv);
    p.Dm = p.D + R * nsb;
    for (int r0 = lo; r0 < hi; r0 += k->R)
        k->panel(j, r0, &p);
}

static void run(void *arg, int ith, int nth)
{
    const qtask *tk = arg;
    const qjob *j = tk->j;
    int panels = j->T > 1 && tk->k->panel;
    int lo, hi;
    asn_split(j->N, ith, nth, panels ? tk->k->R : ROWS, &lo, &hi);
    if (hi <= lo)
        return;
    if (panels) {
        run_panels(j, tk->k, ith, lo, hi);
        return;
    }
    size_t K = (size_t)j->K, nsb = (size_t)j->nsb;
    /* w, then sc and mn (K / 16 int16 each), then D and Dm */
    size_t bytes = ROWS * K + 2 * ROWS * (K / 16) * 2 + 2 * ROWS * nsb * sizeof(float) + 64;
    uint8_t *m = asn_pool_scratch(j->pool, ith, bytes);
    qrows u;
    u.w = (int8_t *)m;
    u.sc = (int16_t *)(m + ROWS * K);
    u.mn = u.sc + ROWS * (K / 16);
    u.D = (float *)(u.mn + ROWS * (K / 16));
    u.Dm = u.D + ROWS * nsb;
    for (int r0 = lo; r0 < hi; r0 += ROWS)
        tk->k->block(j, r0, &u);
}

/* The activations of a batch, tokens split across the pool. */
typedef struct qquant {
    const float *X;
    int ldx;
    const qjob *j;
    int8_t *q;
    int16_t *q16;
    float *dx;
    int16_t *bs;
    int32_t *bsum;
} qquant;

static void quant_run(void *arg, int ith, int nth)
{
    qquant *a = arg;
    const qjob *j = a->j;
    int lo, hi;
    asn_split(j->T, ith, nth, 1, &lo, &hi);
    for (int t = lo; t < hi; t++) {
        int8_t *q = a->q + (size_t)t * j->K;
        quantize_acts(a->X + (size_t)t * a->ldx, j->K, j->S, j->T, q, a->dx + t, a->bs + (size_t)t * (j->K / 16),
                      a->bsum + t);
        if (a->q16)
            for (int k = 0; k < j->K; k++)
                a->q16[(size_t)t * j->K + k] = q[k];
    }
}

/* 1 if kernel k's panels take type t's weights and the quants in int16. */
static int panel_wide(const qkernel *k, uint32_t t)
{
#if defined(__x86_64__)
    return k->panel && qg_wide(t, k->vnni);
#else
    (void)k, (void)t;
    return 0;
#endif
}

int asn_qmatmul(asn_pool *pool, const float *X, int T, int ldx, int K, const void *W, uint32_t wtype,
                int N, const float *bias, float *Y, int ldy)
{
    if (!asn_qmatmul_supported(wtype, K) || T <= 0 || N <= 0)
        return -1;
    qjob j = {.T = T, .K = K, .N = N, .S = qu_super(wtype), .type = wtype, .W = W,
              .row_bytes = asn_ttype_row_bytes(wtype, K), .bias = bias, .Y = Y, .ldy = ldy,
              .pool = pool};
    j.nsb = K / j.S;
    j.has_min = has_min(wtype);
    const qkernel *k = pick();
    int wide = T > 1 && panel_wide(k, wtype);
    size_t qbytes = (size_t)T * K, dbytes = ((size_t)T * j.nsb + 4) * sizeof(float),
           bbytes = (size_t)T * (K / 16) * sizeof(int16_t), wbytes = wide ? 2 * qbytes : 0;
    uint8_t *m = asn_pool_shared_scratch(pool, 2 * dbytes + bbytes + wbytes + qbytes + 64);
    float *dx = (float *)m;
    int32_t *bsum = (int32_t *)(m + dbytes);
    int16_t *bs = (int16_t *)(m + 2 * dbytes);
    int16_t *q16 = wide ? (int16_t *)(m + 2 * dbytes + bbytes) : NULL;
    int8_t *q = (int8_t *)(m + 2 * dbytes + bbytes + wbytes);
    qquant qq = {X, ldx, &j, q, q16, dx, bs, bsum};
    if (T >= 8)
        asn_pool_run(pool, quant_run, &qq);
    else
        quant_run(&qq, 0, 1);
    for (int i = 0; i < 4; i++) /* the padding: defined values in lanes that are discarded */
        dx[(size_t)T * j.nsb + i] = 0, bsum[(size_t)T * j.nsb + i] = 0;
    j.a = (qacts){q, q16, bs, dx, bsum};
    qtask tk = {&j, k};
    asn_pool_run(pool, run, &tk);
    return 0;
}
