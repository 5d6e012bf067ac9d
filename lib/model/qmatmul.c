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
#include "asn/linalg.h"
#include "asn/gguf.h"
#include "qunpack.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { ROWS = 8 }; /* rows unpacked together and per thread block */

/* The activations: T rows of K quants, K / S scales, K / 16 sums. */
typedef struct qacts {
    const int8_t *q;
    const float *dx;
    const int16_t *bs;
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

static int super_block(uint32_t type)
{
    switch (type) {
    case ASN_T_Q8_0: case ASN_T_Q4_0: case ASN_T_Q4_1: case ASN_T_Q5_0: case ASN_T_Q5_1:
    case ASN_T_IQ4_NL:
        return 32;
    case ASN_T_Q2_K: case ASN_T_Q3_K: case ASN_T_Q4_K: case ASN_T_Q5_K: case ASN_T_Q6_K:
    case ASN_T_IQ4_XS:
        return 256;
    default:
        return 0;
    }
}

static int has_min(uint32_t type)
{
    return type == ASN_T_Q4_1 || type == ASN_T_Q5_1 || type == ASN_T_Q2_K || type == ASN_T_Q4_K ||
           type == ASN_T_Q5_K;
}

int asn_qmatmul_supported(uint32_t type, int K)
{
    int S = super_block(type);
    return S && K > 0 && K % S == 0;
}

/* --------------------------------------------------- activation quants */

/* Row x (K floats) to q (K int8), dx (K / S floats), bs (K / 16 int16).
 * Cloned per instruction set so that it vectorizes (roundf, the maximum
 * and fabsf give the same results vectorized or not). */
#if defined(__x86_64__)
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
static void quantize_acts(const float *x, int K, int S, int8_t *q, float *dx, int16_t *bs)
{
    for (int b = 0; b < K / S; b++) {
        const float *xb = x + (size_t)b * S;
        float amax = 0.0f;
        for (int j = 0; j < S; j++)
            amax = fabsf(xb[j]) > amax ? fabsf(xb[j]) : amax; /* fmaxf's result, vectorizable */
        float d = amax / 127.0f, id = amax > 0.0f ? 127.0f / amax : 0.0f;
        dx[b] = d;
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
}

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
    const float *dx = j->a.dx + (size_t)t * j->nsb;
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
        acc = step(acc, u->D[b * ROWS + r], dx[b], I);
        if (j->has_min)
            acc = step(acc, u->Dm[b * ROWS + r], dx[b], M);
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
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,bmi2")
#include <immintrin.h>

#define QK_INLINE static inline __attribute__((always_inline))

/* Blocks ahead that the decode kernel prefetches (ASN_QPF overrides, for tuning). */
static int PF = 4;

/* What the kernel needs to know of a type at compile time: weights signed
 * (else unsigned bytes, no sign trick), scales all 1, a min term. */
QK_INLINE int k_signed(uint32_t t)
{
    return t == ASN_T_Q8_0 || t == ASN_T_Q4_0 || t == ASN_T_Q5_0 || t == ASN_T_IQ4_NL ||
           t == ASN_T_Q3_K || t == ASN_T_Q6_K || t == ASN_T_IQ4_XS;
}
QK_INLINE int k_unit(uint32_t t)
{
    return t == ASN_T_Q8_0 || t == ASN_T_Q4_0 || t == ASN_T_Q5_0 || t == ASN_T_IQ4_NL ||
           t == ASN_T_Q4_1 || t == ASN_T_Q5_1;
}
QK_INLINE int k_bytes(uint32_t t)
{
    switch (t) {
    case ASN_T_Q8_0: return 34;
    case ASN_T_Q4_0: return 18;
    case ASN_T_Q4_1: return 20;
    case ASN_T_Q5_0: return 22;
    case ASN_T_Q5_1: return 24;
    case ASN_T_IQ4_NL: return 18;
    case ASN_T_Q2_K: return 84;
    case ASN_T_Q3_K: return 110;
    case ASN_T_Q4_K: return 144;
    case ASN_T_Q5_K: return 176;
    case ASN_T_Q6_K: return 210;
    default: return 136; /* IQ4_XS */
    }
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

/* Weights 32 g .. 32 g + 31 of a (super-)block, as qunpack.h writes them. */
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
        return _mm256_sub_epi8(_mm256_or_si256(lo, _mm256_slli_epi16(hi, 2)), _mm256_set1_epi8(4));
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
        return _mm256_sub_epi8(_mm256_or_si256(lo, _mm256_slli_epi16(hi, 4)), _mm256_set1_epi8(32));
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
        uint32_t a[3], s4, m4;
        memcpy(a, x + 4, 12);
        *D = k_half(x), *Dm = -k_half(x + 2);
        s4 = (a[2] & 0x0f0f0f0f) | ((a[0] >> 6) & 0x03030303) << 4;
        m4 = ((a[2] >> 4) & 0x0f0f0f0f) | ((a[1] >> 6) & 0x03030303) << 4;
        __m128i s = _mm_set_epi32(0, 0, (int)s4, (int)(a[0] & 0x3f3f3f3f));
        __m128i m = _mm_set_epi32(0, 0, (int)m4, (int)(a[1] & 0x3f3f3f3f));
        s = _mm_unpacklo_epi8(s, s), m = _mm_unpacklo_epi8(m, m); /* each twice: per 16 */
        _mm256_storeu_si256((__m256i *)sc, _mm256_cvtepu8_epi16(s));
        _mm256_storeu_si256((__m256i *)mn, _mm256_cvtepu8_epi16(m));
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

/* sum_j w[j] q[j] over 32 bytes, pairs weighted by sx: 8 int32 lanes.
 * Signed weights: |w| times q with w's sign (the first operand of maddubs
 * is unsigned; |w| <= 128, |q| <= 127 keep pair sums below 2^15). */
QK_INLINE __m256i k_dot(int sgn, __m256i w, __m256i aw, __m256i q, __m256i sx)
{
    __m256i p = sgn ? _mm256_maddubs_epi16(aw, _mm256_sign_epi8(q, w)) : _mm256_maddubs_epi16(w, q);
    return _mm256_madd_epi16(p, sx);
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

/* M of 8 outputs: lane p = sum_h mn_p[h] * bs_p[h] over 16 halves. */
QK_INLINE __m256i k_mins(const int16_t *const mn[8], const int16_t *const bs[8])
{
#define M(p) _mm256_madd_epi16(k_load(mn[p]), k_load(bs[p]))
    return reduce8(M(0), M(1), M(2), M(3), M(4), M(5), M(6), M(7));
#undef M
}

/* One token against the ROWS rows of the block, reading the weights in
 * their packed form (decode: each weight is used once). */
QK_INLINE void fused_t(const qjob *j, int r0, uint32_t t)
{
    const int S = t == ASN_T_Q8_0 || t == ASN_T_Q4_0 || t == ASN_T_Q4_1 || t == ASN_T_Q5_0 ||
                          t == ASN_T_Q5_1 || t == ASN_T_IQ4_NL
                      ? 32
                      : 256;
    const int sgn = k_signed(t), unit = k_unit(t), mins = has_min(t), nb = k_bytes(t);
    const uint8_t *row[ROWS];
    for (int r = 0; r < ROWS; r++)
        row[r] = j->W + (size_t)(r0 + r < j->N ? r0 + r : j->N - 1) * j->row_bytes;
    const int8_t *q = j->a.q;
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc = _mm256_setzero_ps();
    for (int b = 0; b < j->nsb; b++) {
        int16_t sc[ROWS][16], mn[ROWS][16];
        float D[ROWS], Dm[ROWS];
        /* The next block of rows, as much of it as this step reads of
         * this one: the prefetch stays one block ahead. */
        if (r0 + ROWS < j->N) {
            const char *next = (const char *)j->W + (size_t)(r0 + ROWS) * j->row_bytes + (size_t)b * ROWS * nb;
            for (int o = 0; o < ROWS * nb; o += 64)
                _mm_prefetch(next + o, _MM_HINT_T0);
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
                __m256i w = k_group(t, row[r] + (size_t)b * nb, g);
                __m256i sx = unit ? ones : k_sx(sc[r], g);
                a[r] = _mm256_add_epi32(a[r], k_dot(sgn, w, _mm256_sign_epi8(w, w), x, sx));
            }
        }
        __m256 vdx = _mm256_set1_ps(j->a.dx[b]);
        acc = vstep(acc, _mm256_loadu_ps(D), vdx, reduce8(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]));
        if (mins) {
            __m256i M;
            if (S == 256) {
                const int16_t *mp[8], *bp[8];
                for (int r = 0; r < ROWS; r++)
                    mp[r] = mn[r], bp[r] = j->a.bs + (size_t)b * 16;
                M = k_mins(mp, bp);
            } else {
                int bsum = j->a.bs[2 * b] + j->a.bs[2 * b + 1];
                M = _mm256_set1_epi32(bsum); /* mn = 1 on both halves */
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
QK_INLINE void unpack_t(const qjob *j, int r0, qrows *u, uint32_t t)
{
    const int S = j->S, nb = k_bytes(t), K = j->K;
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
                                    k_group(t, x + (size_t)b * nb, g));
        }
    }
}

QK_INLINE __m256 tile_4x2(const qjob *j, const qrows *u, int rb, int t0, int t1, uint32_t t)
{
    const int K = j->K, S = j->S;
    const int sgn = k_signed(t), unit = k_unit(t), mins = has_min(t);
    const int8_t *q0 = j->a.q + (size_t)t0 * K, *q1 = j->a.q + (size_t)t1 * K;
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc = _mm256_setzero_ps();
    for (int b = 0; b < j->nsb; b++) {
        __m256i a[8];
        for (int p = 0; p < 8; p++)
            a[p] = _mm256_setzero_si256();
#pragma GCC unroll 8
        for (int g = 0; g < S / 32; g++) {
            size_t k = (size_t)b * S + 32 * g;
            __m256i x0 = k_load(q0 + k), x1 = k_load(q1 + k);
            for (int r = 0; r < 4; r++) {
                __m256i w = k_load(u->w + (size_t)(rb + r) * K + k), aw = _mm256_sign_epi8(w, w);
                __m256i sx = unit ? ones : k_sx(u->sc + (size_t)(rb + r) * (K / 16) + b * 16, g);
                a[r] = _mm256_add_epi32(a[r], k_dot(sgn, w, aw, x0, sx));
                a[r + 4] = _mm256_add_epi32(a[r + 4], k_dot(sgn, w, aw, x1, sx));
            }
        }
        __m256 vdx = _mm256_setr_m128(_mm_set1_ps(j->a.dx[(size_t)t0 * j->nsb + b]),
                                      _mm_set1_ps(j->a.dx[(size_t)t1 * j->nsb + b]));
        const float *Db = u->D + (size_t)b * ROWS + rb, *Dmb = u->Dm + (size_t)b * ROWS + rb;
        acc = vstep(acc, _mm256_broadcast_ps((const __m128 *)Db), vdx,
                    reduce8(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]));
        if (mins) {
            __m256i M;
            if (S == 256) {
                const int16_t *mp[8], *bp[8];
                for (int p = 0; p < 8; p++) {
                    mp[p] = u->mn + (size_t)(rb + p % 4) * (K / 16) + b * 16;
                    bp[p] = j->a.bs + (size_t)(p < 4 ? t0 : t1) * (K / 16) + b * 16;
                }
                M = k_mins(mp, bp);
            } else {
                const int16_t *b0 = j->a.bs + (size_t)t0 * (K / 16) + 2 * b;
                const int16_t *b1 = j->a.bs + (size_t)t1 * (K / 16) + 2 * b;
                M = _mm256_setr_m128i(_mm_set1_epi32(b0[0] + b0[1]), _mm_set1_epi32(b1[0] + b1[1]));
            }
            acc = vstep(acc, _mm256_broadcast_ps((const __m128 *)Dmb), vdx, M);
        }
    }
    return acc;
}

QK_INLINE void block_t(const qjob *j, int r0, qrows *u, uint32_t t)
{
    if (j->T == 1) {
        fused_t(j, r0, t);
        return;
    }
    unpack_t(j, r0, u, t);
    int rn = j->N - r0 < ROWS ? j->N - r0 : ROWS;
    float out[8];
    for (int t0 = 0; t0 < j->T; t0 += 2) {
        int t1 = t0 + 1 < j->T ? t0 + 1 : t0;
        for (int rb = 0; rb < rn; rb += 4) {
            _mm256_storeu_ps(out, tile_4x2(j, u, rb, t0, t1, t));
            for (int p = 0; p < 8; p++) {
                int r = rb + p % 4, tt = p < 4 ? t0 : t1;
                if (r < rn && (p < 4 || t1 != t0))
                    j->Y[(size_t)tt * j->ldy + r0 + r] = out[p] + (j->bias ? j->bias[r0 + r] : 0.0f);
            }
        }
    }
}

/* One instance of the kernel per type, the type a constant in each. */
QK_INLINE void block_x86(const qjob *j, int r0, qrows *u)
{
    switch (j->type) {
    case ASN_T_Q8_0: block_t(j, r0, u, ASN_T_Q8_0); break;
    case ASN_T_Q4_0: block_t(j, r0, u, ASN_T_Q4_0); break;
    case ASN_T_Q4_1: block_t(j, r0, u, ASN_T_Q4_1); break;
    case ASN_T_Q5_0: block_t(j, r0, u, ASN_T_Q5_0); break;
    case ASN_T_Q5_1: block_t(j, r0, u, ASN_T_Q5_1); break;
    case ASN_T_IQ4_NL: block_t(j, r0, u, ASN_T_IQ4_NL); break;
    case ASN_T_Q2_K: block_t(j, r0, u, ASN_T_Q2_K); break;
    case ASN_T_Q3_K: block_t(j, r0, u, ASN_T_Q3_K); break;
    case ASN_T_Q4_K: block_t(j, r0, u, ASN_T_Q4_K); break;
    case ASN_T_Q5_K: block_t(j, r0, u, ASN_T_Q5_K); break;
    case ASN_T_Q6_K: block_t(j, r0, u, ASN_T_Q6_K); break;
    default: block_t(j, r0, u, ASN_T_IQ4_XS); break;
    }
}

#pragma GCC pop_options

/* One copy of the kernels per instruction-set level. */
__attribute__((target("arch=x86-64-v3"))) static void block_avx2(const qjob *j, int r0, qrows *u)
{
    block_x86(j, r0, u);
}

__attribute__((target("arch=x86-64-v4"))) static void block_avx512(const qjob *j, int r0, qrows *u)
{
    block_x86(j, r0, u);
}
#endif

/* ----------------------------------------------------------- dispatch */

typedef void (*block_fn)(const qjob *, int, qrows *);

typedef struct qkernel {
    const char *name;
    block_fn block;
} qkernel;

static const qkernel k_generic = {"base", block_generic};
#if defined(__x86_64__)
static const qkernel k_avx2 = {"avx2", block_avx2};
static const qkernel k_avx512 = {"avx512", block_avx512};
#endif
static const qkernel *chosen;

/* The kernel called `name` if this machine can run it, else NULL. */
static const qkernel *by_name(const char *name)
{
    if (!strcmp(name, "base"))
        return &k_generic;
#if defined(__x86_64__)
    __builtin_cpu_init();
    int v3 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
             __builtin_cpu_supports("f16c") && __builtin_cpu_supports("bmi2");
    int v4 = v3 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
    if (!strcmp(name, "avx2") && v3)
        return &k_avx2;
    if (!strcmp(name, "avx512") && v4)
        return &k_avx512;
#endif
    return NULL;
}

static const qkernel *pick(void)
{
    if (!chosen) {
        /* ASN_MATMUL_KERNEL=avx512|avx2|base forces a kernel, as for f32 */
        const char *force = getenv("ASN_MATMUL_KERNEL");
        const qkernel *k = force ? by_name(force) : NULL;
        if (!k)
            k = by_name("avx512");
        if (!k)
            k = by_name("avx2");
        chosen = k ? k : &k_generic;
#if defined(__x86_64__)
        if (getenv("ASN_QPF"))
            PF = atoi(getenv("ASN_QPF"));
#endif
    }
    return chosen;
}

int asn_qmatmul_set_kernel(const char *name)
{
    const qkernel *k = by_name(name);
    if (!k)
        return -1;
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

static void run(void *arg, int ith, int nth)
{
    const qtask *tk = arg;
    const qjob *j = tk->j;
    int lo, hi;
    asn_split(j->N, ith, nth, ROWS, &lo, &hi);
    if (hi <= lo)
        return;
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

int asn_qmatmul(asn_pool *pool, const float *X, int T, int ldx, int K, const void *W, uint32_t wtype,
                int N, const float *bias, float *Y, int ldy)
{
    if (!asn_qmatmul_supported(wtype, K) || T <= 0 || N <= 0)
        return -1;
    qjob j = {.T = T, .K = K, .N = N, .S = super_block(wtype), .type = wtype, .W = W,
              .row_bytes = asn_ttype_row_bytes(wtype, K), .bias = bias, .Y = Y, .ldy = ldy,
              .pool = pool};
    j.nsb = K / j.S;
    j.has_min = has_min(wtype);
    size_t qbytes = (size_t)T * K, dbytes = (size_t)T * j.nsb * sizeof(float),
           bbytes = (size_t)T * (K / 16) * sizeof(int16_t);
    uint8_t *m = asn_pool_shared_scratch(pool, dbytes + bbytes + qbytes + 64);
    float *dx = (float *)m;
    int16_t *bs = (int16_t *)(m + dbytes);
    int8_t *q = (int8_t *)(m + dbytes + bbytes);
    for (int t = 0; t < T; t++)
        quantize_acts(X + (size_t)t * ldx, K, j.S, q + (size_t)t * K, dx + (size_t)t * j.nsb,
                      bs + (size_t)t * (K / 16));
    j.a = (qacts){q, dx, bs};
    qtask tk = {&j, pick()};
    asn_pool_run(pool, run, &tk);
    return 0;
}
