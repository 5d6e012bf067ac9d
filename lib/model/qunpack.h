/* qunpack.h — every quantized weight type as one canonical form, for the
 * integer matrix product (qmatmul.c).
 *
 * A super-block of S weights (S = 32 for the types with 32-element blocks,
 * 256 for the k-quants and IQ4_XS) becomes
 *     w[j]       signed 8-bit integers (the quant, offset removed),
 *     sc[h]      an integer scale per 16 weights (h = j / 16),
 *     mn[h]      an integer min per 16 weights (types with a min only),
 *     D, Dm      two float factors,
 * so that weight j is D * sc[h] * w[j] + Dm * mn[h]: ggml's dequantized
 * value, up to the order of ggml's own float products. The dot product with
 * activations quantized to q[j] with scale dx per super-block is then
 *     (D * dx) * I + (Dm * dx) * M,
 *     I = sum_h sc[h] * sum_{j in h} w[j] q[j],   M = sum_h mn[h] * sum_{j in h} q[j],
 * with I and M exact integers: only the two float terms are rounded, in a
 * fixed order (see qmatmul.c).
 *
 * Block layouts are those of ggml's block structs (ggml-common.h), each
 * described at its unpacker below and checked against ggml's own
 * dequantizers by tests/unit/test_ttype.c.
 * These are the portable unpackers, the definition; qmatmul.c has SIMD
 * ones for the common types that write the same values. */
#ifndef ASN_QUNPACK_H
#define ASN_QUNPACK_H

#include <stdint.h>
#include <string.h>

#include "asn/gguf.h"
#include "half.h"

#define QU_INLINE static inline __attribute__((always_inline))

/* The 16 values of the IQ4_NL / IQ4_XS code book (ggml's kvalues_iq4nl). */
static const int8_t qu_iq4_values[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                         1,    13,   25,  38,  53,  69,  89,  113};

QU_INLINE float qu_half(const uint8_t *p)
{
    return asn_half_to_float((uint16_t)(p[0] | (p[1] << 8)));
}

/* The scales of one 32-weight group: the same on both halves. */
QU_INLINE void qu_scale32(int16_t *sx, int s)
{
    sx[0] = sx[1] = (int16_t)s;
}

/* The scales of one 32-weight group, one per 16 weights. */
QU_INLINE void qu_scale16(int16_t *sx, int s0, int s1)
{
    sx[0] = (int16_t)s0, sx[1] = (int16_t)s1;
}

/* ---------------------------------------------------- 32-element blocks */

/* Q8_0: half d, 32 int8. */
QU_INLINE void qu_q8_0(const uint8_t *x, int8_t *w, int16_t *sx, int16_t *mn, float *D, float *Dm)
{
    *D = qu_half(x), *Dm = 0;
    memcpy(w, x + 2, 32);
    qu_scale32(sx, 1);
    (void)mn;
}

/* Q4_0: half d, 16 bytes: element j the low nibble of byte j, element
 * j + 16 its high nibble; value d * (nibble - 8). */
QU_INLINE void qu_q4_0(const uint8_t *x, int8_t *w, int16_t *sx, int16_t *mn, float *D, float *Dm)
{
    *D = qu_half(x), *Dm = 0;
    for (int j = 0; j < 16; j++) {
        w[j] = (int8_t)((x[2 + j] & 15) - 8);
        w[j + 16] = (int8_t)((x[2 + j] >> 4) - 8);
    }
    qu_scale32(sx, 1);
    (void)mn;
}

/* Q4_1: half d, half m, 16 bytes of nibbles; value d * nibble + m. */
QU_INLINE void qu_q4_1(const uint8_t *x, int8_t *w, int16_t *sx, int16_t *mn, float *D, float *Dm)
{
    *D = qu_half(x), *Dm = qu_half(x + 2);
    for (int j = 0; j < 16; j++) {
        w[j] = (int8_t)(x[4 + j] & 15);
        w[j + 16] = (int8_t)(x[4 + j] >> 4);
    }
    qu_scale32(sx, 1);
    mn[0] = mn[1] = 1;
}

/* The fifth bits of Q5_0 / Q5_1: bit j of a little-endian 32-bit word. */
QU_INLINE void qu_5bit(const uint8_t *qh, const uint8_t *qs, int off, int8_t *w)
{
    uint32_t h = (uint32_t)qh[0] | (uint32_t)qh[1] << 8 | (uint32_t)qh[2] << 16 | (uint32_t)qh[3] << 24;
    for (int j = 0; j < 16; j++) {
        w[j] = (int8_t)(((qs[j] & 15) | (((h >> j) & 1) << 4)) - off);
        w[j + 16] = (int8_t)(((qs[j] >> 4) | (((h >> (j + 16)) & 1) << 4)) - off);
    }
}

/* Q5_0: half d, 4 bytes of fifth bits, 16 bytes of nibbles; d * (q - 16). */
QU_INLINE void qu_q5_0(const uint8_t *x, int8_t *w, int16_t *sx, int16_t *mn, float *D, float *Dm)
{
    *D = qu_half(x), *Dm = 0;
    qu_5bit(x + 2, x + 6, 16, w);
    qu_scale32(sx, 1);
    (void)mn;
}

/* Q5_1: half d, half m, fifth bits, nibbles; d * q + m. */
QU_INLINE void qu_q5_1(const uint8_t *x, int8_t *w, int16_t *sx, int16_t *mn, float *D, float *Dm)
{
    *D = qu_half(x), *Dm = qu_half(x + 2);
    qu_5bit(x + 4, x + 8, 0, w);
    qu_scale32(sx, 1);
    mn[0] = mn[1] = 1;
}

/* IQ4_NL: half d, 16 bytes of nibbles indexing the code book. */
QU_INLINE void qu_iq4_nl(const uint8_t *x, int8_t *w, int16_t *sx, int16_t *mn, float *D, float *Dm)
{
    *D = qu_half(x), *Dm = 0;
    for (int j = 0; j < 16; j++) {
        w[j] = qu_iq4_values[x[2 + j] & 15];
        w[j + 16] = qu_iq4_values[x[2 + j] >> 4];
    }
    qu_scale32(sx, 1);
    (void)mn;
}

/* ------------------------------------------------- 256-element k-quants */

/* Q2_K: 16 bytes of scales (low nibble scale, high nibble min, one per 16
 * weights), 64 bytes of 2-bit quants, half d, half dmin. Weight
 * 128 * i + 32 * s + l is bits 2s..2s+1 of byte 32 * i + l;
 * value d * sc * q - dmin * m. */
QU_INLINE void qu_q2_k(const uint8_t *x, int8_t *w, int16_t *sx, int16_t *mn, float *D, float *Dm)
{
    const uint8_t *sc = x, *qs = x + 16;
    *D = qu_half(x + 80), *Dm = -qu_half(x + 82);
    for (int i = 0; i < 2; i++)
        for (int s = 0; s < 4; s++)
            for (int l = 0; l < 32; l++)
                w[128 * i + 32 * s + l] = (int8_t)((qs[32 * i + l] >> (2 * s)) & 3);
    for (int g = 0; g < 8; g++)
        qu_scale16(sx + 2 * g, sc[2 * g] & 15, sc[2 * g + 1] & 15);
    for (int h = 0; h < 16; h++)
        mn[h] = (int16_t)(sc[h] >> 4);
}

/* The sixteen 6-bit scales of Q3_K (stored + 32) from their 12 bytes. */
QU_INLINE void qu_q3_k_scales(const uint8_t *s12, int16_t *sc)
{
    for (int h = 0; h < 16; h++) {
        int lo = (s12[h % 8] >> (4 * (h / 8))) & 15;
        int hi = (s12[8 + h % 4] >> (2 * (h / 4))) & 3;
        sc[h] = (int16_t)((lo | hi << 4) - 32);
    }
}

/* Q3_K: 32 bytes of high bits, 64 bytes of 2-bit low parts, 12 bytes of
 * sixteen 6-bit scales (stored + 32), half d. Weight 128 * i + 32 * s + l:
 * low bits 2s..2s+1 of byte 32 * i + l, high bit (4 * i + s) of byte l, and
 * q = low - 4 when that bit is clear; value d * (scale - 32) * q. */
QU_INLINE void qu_q3_k(const uint8_t *x, int8_t *w, int16_t *sx, int16_t *mn, float *D, float *Dm)
{
    const uint8_t *hm = x, *qs = x + 32, *s12 = x + 96;
    *D = qu_half(x + 108), *Dm = 0;
    for (int i = 0; i < 2; i++)
        for (int s = 0; s < 4; s++)
            for (int l = 0; l < 32; l++) {
                int lo = (qs[32 * i + l] >> (2 * s)) & 3;
                int hi = (hm[l] >> (4 * i + s)) & 1;
                w[128 * i + 32 * s + l] = (int8_t)(lo - (hi ? 0 : 4));
            }
    qu_q3_k_scales(s12, sx);
    (void)mn;
}

/* The 6-bit scale and min of sub-block s (of 8) of Q4_K / Q5_K, packed in
 * 12 bytes. */
QU_INLINE void qu_k_scale_min(const uint8_t *p, int s, int *sc, int *m)
{
    if (s < 4) {
        *sc = p[s] & 63;
        *m = p[s + 4] & 63;
    } else {
        *sc = (p[s + 4] & 15) | ((p[s - 4] >> 6) << 4);
        *m = (p[s + 4] >> 4) | ((p[s] >> 6) << 4);
    }
}

QU_INLINE void qu_k_scales(const uint8_t *p, int16_t *sx, int16_t *mn)
{
    for (int s = 0; s < 8; s++) {
        int sc, m;
        qu_k_scale_min(p, s, &sc, &m);
        qu_scale32(sx + 2 * s, sc);
        mn[2 * s] = mn[2 * s + 1] = (int16_t)m;
    }
}

/* Q4_K: half d, half dmin, 12 bytes of scales and mins, 128 bytes: weight
 * 64 * g + l the low nibble of byte 32 * g + l, weight 64 * g + 32 + l its
 * high nibble; value d * sc * q - dmin * m per 32 weights. */
QU_INLINE void qu_q4_k(const uint8_t *x, int8_t *w, int16_t *sx, int16_t *mn, float *D, float *Dm)
{
    const uint8_t *qs = x + 16;
    *D = qu_half(x), *Dm = -qu_half(x + 2);
    for (int g = 0; g < 4; g++)
        for (int l = 0; l < 32; l++) {
            w[64 * g + l] = (int8_t)(qs[32 * g + l] & 15);
            w[64 * g + 32 + l] = (int8_t)(qs[32 * g + l] >> 4);
        }
    qu_k_scales(x + 4, sx, mn);
}

/* Q5_K: as Q4_K with 32 bytes of fifth bits after the scales: bit s of
 * byte l is the fifth bit of weight 32 * s + l. */
QU_INLINE void qu_q5_k(const uint8_t *x, int8_t *w, int16_t *sx, int16_t *mn, float *D, float *Dm)
{
    const uint8_t *qh = x + 16, *qs = x + 48;
    *D = qu_half(x), *Dm = -qu_half(x + 2);
    for (int g = 0; g < 4; g++)
        for (int l = 0; l < 32; l++) {
            w[64 * g + l] = (int8_t)((qs[32 * g + l] & 15) | (((qh[l] >> (2 * g)) & 1) << 4));
            w[64 * g + 32 + l] = (int8_t)((qs[32 * g + l] >> 4) | (((qh[l] >> (2 * g + 1)) & 1) << 4));
        }
    qu_k_scales(x + 4, sx, mn);
}

/* Q6_K: 128 bytes of low nibbles, 64 bytes of 2-bit high parts, 16 int8
 * scales (one per 16 weights), half d. In half i (128 weights), weight
 * 32 * s + l: nibble (s / 2) of byte 64 * i + 32 * (s % 2) + l, high bits
 * 2s..2s+1 of byte 128 + 32 * i + l; value d * scale * (q - 32). */
QU_INLINE void qu_q6_k(const uint8_t *x, int8_t *w, int16_t *sx, int16_t *mn, float *D, float *Dm)
{
    const uint8_t *ql = x, *qh = x + 128;
    const int8_t *sc = (const int8_t *)(x + 192);
    *D = qu_half(x + 208), *Dm = 0;
    for (int i = 0; i < 2; i++)
        for (int s = 0; s < 4; s++)
            for (int l = 0; l < 32; l++) {
                int lo = (ql[64 * i + 32 * (s & 1) + l] >> (4 * (s >> 1))) & 15;
                int hi = (qh[32 * i + l] >> (2 * s)) & 3;
                w[128 * i + 32 * s + l] = (int8_t)((lo | hi << 4) - 32);
            }
    for (int g = 0; g < 8; g++)
        qu_scale16(sx + 2 * g, sc[2 * g], sc[2 * g + 1]);
    (void)mn;
}

/* The eight 6-bit scales of IQ4_XS (stored + 32), each for 32 weights:
 * low nibbles from bytes 4..7, high pairs from the 16-bit field at 2. */
QU_INLINE void qu_iq4_xs_scales(const uint8_t *x, int16_t *sx)
{
    unsigned sh = (unsigned)(x[2] | (x[3] << 8));
    for (int s = 0; s < 8; s++) {
        int ls = ((x[4 + s / 2] >> (4 * (s % 2))) & 15) | (int)(((sh >> (2 * s)) & 3) << 4);
        qu_scale32(sx + 2 * s, ls - 32);
    }
}

/* IQ4_XS: half d, 16 bits of high scale parts, 4 bytes of low scale
 * nibbles, 128 bytes of code-book nibbles (16 per 32 weights, as IQ4_NL);
 * sub-block s has scale ((low | high << 4) - 32). */
QU_INLINE void qu_iq4_xs(const uint8_t *x, int8_t *w, int16_t *sx, int16_t *mn, float *D, float *Dm)
{
    const uint8_t *qs = x + 8;
    *D = qu_half(x), *Dm = 0;
    qu_iq4_xs_scales(x, sx);
    for (int s = 0; s < 8; s++) {
        for (int j = 0; j < 16; j++) {
            w[32 * s + j] = qu_iq4_values[qs[16 * s + j] & 15];
            w[32 * s + j + 16] = qu_iq4_values[qs[16 * s + j] >> 4];
        }
    }
    (void)mn;
}

/* ------------------------------------------------------------- the table */

/* Every type with an unpacker: its id, unpacker, super-block (weights) and
 * bytes per super-block (ggml's block structs; test_qmatmul.c checks them
 * against asn_ttype_block). X(TYPE, FN, S, BYTES) for each row. */
#define QU_TYPES(X)                                                                               \
    X(ASN_T_Q8_0, qu_q8_0, 32, 34)                                                                \
    X(ASN_T_Q4_0, qu_q4_0, 32, 18)                                                                \
    X(ASN_T_Q4_1, qu_q4_1, 32, 20)                                                                \
    X(ASN_T_Q5_0, qu_q5_0, 32, 22)                                                                \
    X(ASN_T_Q5_1, qu_q5_1, 32, 24)                                                                \
    X(ASN_T_IQ4_NL, qu_iq4_nl, 32, 18)                                                            \
    X(ASN_T_Q2_K, qu_q2_k, 256, 84)                                                               \
    X(ASN_T_Q3_K, qu_q3_k, 256, 110)                                                              \
    X(ASN_T_Q4_K, qu_q4_k, 256, 144)                                                              \
    X(ASN_T_Q5_K, qu_q5_k, 256, 176)                                                              \
    X(ASN_T_Q6_K, qu_q6_k, 256, 210)                                                              \
    X(ASN_T_IQ4_XS, qu_iq4_xs, 256, 136)

/* The super-block of a type (0: no unpacker) and its size in bytes; with a
 * constant type both fold to constants in the kernels. */
QU_INLINE int qu_super(uint32_t type)
{
#define QU_CASE(T, FN, S, BYTES) case T: return S;
    switch (type) { QU_TYPES(QU_CASE) default: return 0; }
#undef QU_CASE
}

QU_INLINE int qu_bytes(uint32_t type)
{
#define QU_CASE(T, FN, S, BYTES) case T: return BYTES;
    switch (type) { QU_TYPES(QU_CASE) default: return 0; }
#undef QU_CASE
}

/* One row of weights (K elements, K / S super-blocks) unpacked: w[K],
 * sx[K / 16] and mn[K / 16] (one per 16 weights), D and Dm of super-block
 * b at D[b * ds], Dm[b * ds]. Returns 0, or -1 for a type without an
 * unpacker. */
QU_INLINE int qu_unpack_row(uint32_t type, const uint8_t *x, int K, int8_t *w, int16_t *sx,
                            int16_t *mn, float *D, float *Dm, int ds)
{
#define QU_CASE(T, FN, S, BYTES)                                                                  \
    case T:                                                                                       \
        for (int b = 0; b < K / (S); b++)                                                         \
            FN(x + (size_t)b * (BYTES), w + (size_t)b * (S), sx + (size_t)b * ((S) / 16),         \
               mn + (size_t)b * ((S) / 16), D + (size_t)b * ds, Dm + (size_t)b * ds);             \
        return 0;
    switch (type) {
        QU_TYPES(QU_CASE)
    default:
        return -1;
    }
#undef QU_CASE
}

#endif
