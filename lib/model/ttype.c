/* ttype.c — ggml tensor types: the table of block sizes, IEEE half and
 * bfloat16 conversions, dequantization of the types asn computes with and
 * the reference quantizers for the types asn writes.
 *
 * Block layouts and the arithmetic of every dequantizer follow ggml
 * (ggml-common.h, ggml-quants.c) operation by
 * operation in f32, so a row dequantized here equals ggml's bit for bit.
 * Quantized data may sit at any byte address (general.alignment can be 1,
 * and open_mem buffers have no alignment at all), so blocks are read byte
 * by byte or through memcpy, never through a cast pointer. */
#include "asn/gguf.h"
#include "half.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "GGUF tensor data is little-endian; asn reads it in place");

/* ------------------------------------------------------------ type table */

typedef struct ttype_info {
    const char *name;
    int block_elems;
    int block_bytes;
    int supported; /* asn can dequantize it */
} ttype_info;

/* Sizes from the block structs of ggml-common.h (QK_K = 256). Every id ggml
 * assigns has a name, so that messages about a type asn cannot compute with
 * say which one it is; ids ggml retired (4, 5, 31-33, 36-38) stay unknown. */
static const ttype_info ttypes[] = {
    [ASN_T_F32] = {"F32", 1, 4, 1},
    [ASN_T_F16] = {"F16", 1, 2, 1},
    [ASN_T_Q4_0] = {"Q4_0", 32, 18, 1},  /* half d, 16 bytes of nibbles */
    [ASN_T_Q4_1] = {"Q4_1", 32, 20, 1},  /* half d, half m, 16 bytes */
    [ASN_T_Q5_0] = {"Q5_0", 32, 22, 1},  /* half d, 4 bytes qh, 16 bytes */
    [ASN_T_Q5_1] = {"Q5_1", 32, 24, 1},  /* half d, half m, 4 + 16 bytes */
    [ASN_T_Q8_0] = {"Q8_0", 32, 34, 1},  /* half d, 32 int8 */
    [ASN_T_Q8_1] = {"Q8_1", 32, 36, 0},  /* half d, half s, 32 int8 */
    [ASN_T_Q2_K] = {"Q2_K", 256, 84, 1}, /* 16 scales, 64 qs, half d, half dmin */
    [ASN_T_Q3_K] = {"Q3_K", 256, 110, 1},/* 32 hmask, 64 qs, 12 scales, half d */
    [ASN_T_Q4_K] = {"Q4_K", 256, 144, 1},/* half d, half dmin, 12 scales, 128 qs */
    [ASN_T_Q5_K] = {"Q5_K", 256, 176, 1},/* half d, half dmin, 12 scales, 32 qh, 128 qs */
    [ASN_T_Q6_K] = {"Q6_K", 256, 210, 1},/* 128 ql, 64 qh, 16 int8 scales, half d */
    [ASN_T_Q8_K] = {"Q8_K", 256, 292, 0},/* float d, 256 int8, 16 int16 sums */
    [ASN_T_IQ2_XXS] = {"IQ2_XXS", 256, 66, 0},
    [ASN_T_IQ2_XS] = {"IQ2_XS", 256, 74, 0},
    [ASN_T_IQ3_XXS] = {"IQ3_XXS", 256, 98, 0},
    [ASN_T_IQ1_S] = {"IQ1_S", 256, 50, 0},
    [ASN_T_IQ4_NL] = {"IQ4_NL", 32, 18, 1},  /* half d, 16 bytes of table indices */
    [ASN_T_IQ3_S] = {"IQ3_S", 256, 110, 0},
    [ASN_T_IQ2_S] = {"IQ2_S", 256, 82, 0},
    [ASN_T_IQ4_XS] = {"IQ4_XS", 256, 136, 1},/* half d, u16 scales_h, 4 scales_l, 128 qs */
    [ASN_T_I8] = {"I8", 1, 1, 0},
    [ASN_T_I16] = {"I16", 1, 2, 0},
    [ASN_T_I32] = {"I32", 1, 4, 0},
    [ASN_T_I64] = {"I64", 1, 8, 0},
    [ASN_T_F64] = {"F64", 1, 8, 0},
    [ASN_T_IQ1_M] = {"IQ1_M", 256, 56, 0},
    [ASN_T_BF16] = {"BF16", 1, 2, 1},
    [ASN_T_TQ1_0] = {"TQ1_0", 256, 54, 0},
    [ASN_T_TQ2_0] = {"TQ2_0", 256, 66, 0},
    [ASN_T_MXFP4] = {"MXFP4", 32, 17, 0},
    [ASN_T_NVFP4] = {"NVFP4", 64, 36, 0},
    [ASN_T_Q1_0] = {"Q1_0", 128, 18, 0},
    [ASN_T_Q2_0] = {"Q2_0", 64, 18, 0},
};
#define N_TTYPES (sizeof ttypes / sizeof ttypes[0])

static const ttype_info *ttype_get(uint32_t type)
{
    if (type >= N_TTYPES || !ttypes[type].name)
        return NULL;
    return &ttypes[type];
}

const char *asn_ttype_name(uint32_t type)
{
    /* Unknown ids get a name from a small ring of buffers, so that a caller
     * can format a message with two of them. */
    static _Thread_local char buf[4][24];
    static _Thread_local unsigned slot;
    const ttype_info *t = ttype_get(type);
    if (t)
        return t->name;
    char *b = buf[slot++ % 4];
    snprintf(b, sizeof buf[0], "type %u", type);
    return b;
}

int asn_ttype_block(uint32_t type, int *block_elems, int *block_bytes)
{
    const ttype_info *t = ttype_get(type);
    if (block_elems)
        *block_elems = t ? t->block_elems : 0;
    if (block_bytes)
        *block_bytes = t ? t->block_bytes : 0;
    return t ? 0 : -1;
}

int asn_ttype_supported(uint32_t type)
{
    const ttype_info *t = ttype_get(type);
    return t && t->supported;
}

size_t asn_ttype_row_bytes(uint32_t type, int64_t n)
{
    const ttype_info *t = ttype_get(type);
    if (!t || n < 0)
        return 0;
    return (size_t)(n / t->block_elems) * (size_t)t->block_bytes;
}

/* ------------------------------------------------------ half and bfloat16 */

static inline uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static inline float f32_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* binary16 to float: half.h (exact; vectorizes in the row loops, F16 rows
 * are dequantized on the forward pass). */
static inline float f16_to_f32(uint16_t h)
{
    return asn_half_to_float(h);
}

float asn_f16_to_f32(uint16_t h)
{
    return f16_to_f32(h);
}

uint16_t asn_f32_to_f16(float f)
{
    uint32_t x = f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    uint32_t ax = x & 0x7fffffff;
    if (ax > 0x7f800000) /* NaN: quiet, top payload bits kept */
        return sign | 0x7e00 | (uint16_t)((ax >> 13) & 0x3ff);
    /* 65520 = 0x477ff000 is halfway between the largest half (65504, odd
     * mantissa) and 65536: ties go to even, i.e. to infinity. */
    if (ax >= 0x477ff000)
        return sign | 0x7c00;
    if (ax >= 0x38800000) { /* result is a normal half (>= 2^-14) */
        /* Round the 13 dropped mantissa bits to nearest even; a carry
         * ripples into the exponent, which is what rounding up means. */
        uint32_t r = ax + 0x0fff + ((ax >> 13) & 1);
        r -= (uint32_t)(127 - 15) << 23;
        return sign | (uint16_t)(r >> 13);
    }
    /* Subnormal half: the result counts units of 2^-24. Values up to 2^-25
     * (a tie between 0 and the smallest subnormal) round to zero. */
    if (ax <= 0x33000000)
        return sign;
    uint32_t e = ax >> 23;                         /* 102 .. 112 */
    uint32_t mant = (ax & 0x7fffff) | 0x800000;    /* value = mant * 2^(e-150) */
    uint32_t shift = 126 - e;                      /* 14 .. 24 */
    uint32_t q = mant >> shift, rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1)))
        q++; /* may reach 0x400, the smallest normal: still the right bits */
    return sign | (uint16_t)q;
}

float asn_bf16_to_f32(uint16_t h)
{
    return f32_from_bits((uint32_t)h << 16);
}

uint16_t asn_f32_to_bf16(float f)
{
    uint32_t x = f32_bits(f);
    if ((x & 0x7fffffff) > 0x7f800000) /* NaN: keep it NaN and quiet */
        return (uint16_t)((x >> 16) | 0x40);
    /* Round to nearest even on the low 16 bits; overflow carries into inf. */
    return (uint16_t)((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

/* ---------------------------------------------------------- dequantizers */

static inline uint16_t rd16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

static void dequant_f32(const uint8_t *x, float *y, int64_t n)
{
    memcpy(y, x, (size_t)n * 4);
}

static void dequant_f16(const uint8_t *x, float *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = f16_to_f32(rd16(x + 2 * i));
}

static void dequant_bf16(const uint8_t *x, float *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = f32_from_bits((uint32_t)rd16(x + 2 * i) << 16);
}

/* Q8_0: value j = d * qs[j]. */
static void dequant_q8_0(const uint8_t *x, float *y, int64_t n)
{
    for (int64_t b = 0; b < n / 32; b++, x += 34, y += 32) {
        const float d = f16_to_f32(rd16(x));
        const int8_t *qs = (const int8_t *)(x + 2);
        for (int j = 0; j < 32; j++)
            y[j] = (float)qs[j] * d;
    }
}

/* Q4_0: the low nibble of qs[j] is element j, the high nibble element
 * j + 16; value = (nibble - 8) * d. */
static void dequant_q4_0(const uint8_t *x, float *y, int64_t n)
{
    for (int64_t b = 0; b < n / 32; b++, x += 18, y += 32) {
        const float d = f16_to_f32(rd16(x));
        const uint8_t *qs = x + 2;
        for (int j = 0; j < 16; j++)
            y[j] = (float)((qs[j] & 0x0f) - 8) * d;
        for (int j = 0; j < 16; j++)
            y[j + 16] = (float)((qs[j] >> 4) - 8) * d;
    }
}

/* Q4_1: Q4_0's nibble order without the offset; value = nibble * d + m. */
static void dequant_q4_1(const uint8_t *x, float *y, int64_t n)
{
    for (int64_t b = 0; b < n / 32; b++, x += 20, y += 32) {
        const float d = f16_to_f32(rd16(x));
        const float m = f16_to_f32(rd16(x + 2));
        const uint8_t *qs = x + 4;
        for (int j = 0; j < 16; j++)
            y[j] = (float)(qs[j] & 0x0f) * d + m;
        for (int j = 0; j < 16; j++)
            y[j + 16] = (float)(qs[j] >> 4) * d + m;
    }
}

/* 1 << j for j < 32. Testing bit j of a word against this table instead of
 * shifting the word by j keeps the loop vectorizable without per-lane
 * variable shifts (SSE2 has none). */
static const uint32_t bit_j[32] = {
    1u << 0,  1u << 1,  1u << 2,  1u << 3,  1u << 4,  1u << 5,  1u << 6,  1u << 7,
    1u << 8,  1u << 9,  1u << 10, 1u << 11, 1u << 12, 1u << 13, 1u << 14, 1u << 15,
    1u << 16, 1u << 17, 1u << 18, 1u << 19, 1u << 20, 1u << 21, 1u << 22, 1u << 23,
    1u << 24, 1u << 25, 1u << 26, 1u << 27, 1u << 28, 1u << 29, 1u << 30, 1u << 31,
};

/* The 5-bit quants of Q5_0 and Q5_1: the low 4 bits in Q4_0's nibble
 * order, the fifth bit (16) of element j in bit j of the little-endian
 * word at qh. */
static void q5_unpack(const uint8_t *qh, const uint8_t *qs, int q[32])
{
    uint32_t h;
    memcpy(&h, qh, 4);
    for (int j = 0; j < 16; j++) {
        q[j] = qs[j] & 0x0f;
        q[j + 16] = qs[j] >> 4;
    }
    for (int j = 0; j < 32; j++)
        q[j] |= h & bit_j[j] ? 16 : 0;
}

/* Q5_0: value = (q - 16) * d. */
static void dequant_q5_0(const uint8_t *x, float *y, int64_t n)
{
    for (int64_t b = 0; b < n / 32; b++, x += 22, y += 32) {
        const float d = f16_to_f32(rd16(x));
        int q[32];
        q5_unpack(x + 2, x + 6, q);
        for (int j = 0; j < 32; j++)
            y[j] = (float)(q[j] - 16) * d;
    }
}

/* Q5_1: value = q * d + m. */
static void dequant_q5_1(const uint8_t *x, float *y, int64_t n)
{
    for (int64_t b = 0; b < n / 32; b++, x += 24, y += 32) {
        const float d = f16_to_f32(rd16(x));
        const float m = f16_to_f32(rd16(x + 2));
        int q[32];
        q5_unpack(x + 4, x + 8, q);
        for (int j = 0; j < 32; j++)
            y[j] = (float)q[j] * d + m;
    }
}

/* Q2_K: 16 sub-blocks of 16, each with a 4-bit scale (low nibble) and a
 * 4-bit min (high nibble); 2-bit quants, four to a byte, but not four
 * neighbours: each half of 128 outputs reads its 32 bytes of qs four times,
 * at bit shifts 0, 2, 4, 6, and each pass yields 32 outputs of two
 * sub-blocks (bytes 0-15, then 16-31). Value = (d * scale) * q - (dmin *
 * min). The passes are single loops of 32 that pick their sub-block's
 * scale: two loops of 16 would be unrolled and then not vectorized. */
static void dequant_q2_k(const uint8_t *x, float *y, int64_t n)
{
    for (int64_t b = 0; b < n / 256; b++, x += 84) {
        const uint8_t *sc = x, *q = x + 16;
        const float d = f16_to_f32(rd16(x + 80));
        const float dmin = f16_to_f32(rd16(x + 82));
        for (int half = 0; half < 2; half++, q += 32) {
            for (int shift = 0; shift < 8; shift += 2, sc += 2, y += 32) {
                const float dl0 = d * (float)(sc[0] & 0x0f), ml0 = dmin * (float)(sc[0] >> 4);
                const float dl1 = d * (float)(sc[1] & 0x0f), ml1 = dmin * (float)(sc[1] >> 4);
                for (int l = 0; l < 32; l++) {
                    const float dl = l < 16 ? dl0 : dl1, ml = l < 16 ? ml0 : ml1;
                    y[l] = dl * (float)((q[l] >> shift) & 3) - ml;
                }
            }
        }
    }
}

/* The 16 6-bit scales of Q3_K: the low 4 bits of scale i are the low (i <
 * 8) or high (i >= 8) nibble of byte i % 8; the high 2 bits are the bit
 * pair i / 4 of byte 8 + i % 4. */
static int q3k_scale(const uint8_t *sb, int i)
{
    return ((sb[i % 8] >> (4 * (i / 8))) & 0x0f) | (((sb[8 + i % 4] >> (2 * (i / 4))) & 3) << 4);
}

/* Q3_K: Q2_K's layout of 2-bit quants plus a third bit in hmask, where a
 * set bit means q and a clear one q - 4 (an inverted sign bit): pass g of
 * the 8 passes (g = 4 * half + shift / 2) takes bit g of hmask[l] for its
 * output l (0 .. 31). Value = (d * (scale - 32)) * q. */
static void dequant_q3_k(const uint8_t *x, float *y, int64_t n)
{
    for (int64_t b = 0; b < n / 256; b++, x += 110) {
        const uint8_t *hm = x, *q = x + 32, *sb = x + 96;
        const float d = f16_to_f32(rd16(x + 108));
        int g = 0;
        for (int half = 0; half < 2; half++, q += 32) {
            for (int shift = 0; shift < 8; shift += 2, g++, y += 32) {
                const float dl0 = d * (float)(q3k_scale(sb, 2 * g) - 32);
                const float dl1 = d * (float)(q3k_scale(sb, 2 * g + 1) - 32);
                for (int l = 0; l < 32; l++) {
                    const int v = ((q[l] >> shift) & 3) - 4 + 4 * ((hm[l] >> g) & 1);
                    y[l] = (l < 16 ? dl0 : dl1) * (float)v;
                }
            }
        }
    }
}

/* Q4_K: 8 sub-blocks of 32, each with a 6-bit scale and a 6-bit min packed
 * into 12 bytes; value = (d * scale) * q - (dmin * min). */
static void q4k_scale_min(int s, const uint8_t *sb, uint8_t *sc, uint8_t *m)
{
    if (s < 4) {
        *sc = sb[s] & 63;
        *m = sb[s + 4] & 63;
    } else {
        *sc = (uint8_t)((sb[s + 4] & 0x0f) | ((sb[s - 4] >> 6) << 4));
        *m = (uint8_t)((sb[s + 4] >> 4) | ((sb[s] >> 6) << 4));
    }
}

/* Q4_K (bits = 4, 144-byte blocks) and Q5_K (bits = 5, 176 bytes: 32
 * bytes of fifth bits after the scales, bit s of qh[l] adds 16 to weight
 * 32 s + l). */
static inline __attribute__((always_inline)) void dequant_k45(const uint8_t *x, float *y, int64_t n, int bits)
{
    const int bb = bits == 5 ? 176 : 144;
    for (int64_t b = 0; b < n / 256; b++, x += bb) {
        const float d = f16_to_f32(rd16(x));
        const float dmin = f16_to_f32(rd16(x + 2));
        const uint8_t *scales = x + 4, *qh = x + 16, *q = x + (bits == 5 ? 48 : 16);
        /* four groups of 64 outputs: sub-block 2g from the low nibbles of 32
         * bytes, sub-block 2g+1 from their high nibbles */
        for (int g = 0; g < 4; g++, q += 32, y += 64) {
            uint8_t sc, m;
            q4k_scale_min(2 * g, scales, &sc, &m);
            const float d1 = d * (float)sc, m1 = dmin * (float)m;
            q4k_scale_min(2 * g + 1, scales, &sc, &m);
            const float d2 = d * (float)sc, m2 = dmin * (float)m;
            for (int l = 0; l < 32; l++) {
                int h1 = bits == 5 ? ((qh[l] >> (2 * g)) & 1) << 4 : 0;
                y[l] = d1 * (float)((q[l] & 0x0f) | h1) - m1;
            }
            for (int l = 0; l < 32; l++) {
                int h2 = bits == 5 ? ((qh[l] >> (2 * g + 1)) & 1) << 4 : 0;
                y[l + 32] = d2 * (float)((q[l] >> 4) | h2) - m2;
            }
        }
    }
}

static void dequant_q4_k(const uint8_t *x, float *y, int64_t n)
{
    dequant_k45(x, y, n, 4);
}

static void dequant_q5_k(const uint8_t *x, float *y, int64_t n)
{
    dequant_k45(x, y, n, 5);
}

/* Q6_K: 16 sub-blocks of 16 with int8 scales; 6-bit quants split into 4 low
 * bits (ql) and 2 high bits (qh); d comes last. Two halves of 128 outputs,
 * value = (d * scale) * (q - 32). */
static void dequant_q6_k(const uint8_t *x, float *y, int64_t n)
{
    for (int64_t b = 0; b < n / 256; b++, x += 210) {
        const uint8_t *ql = x, *qh = x + 128;
        const int8_t *sc = (const int8_t *)(x + 192);
        const float d = f16_to_f32(rd16(x + 208));
        for (int half = 0; half < 2; half++, ql += 64, qh += 32, sc += 8, y += 128) {
            /* outputs l, l+32, l+64, l+96 use scales l/16 + 0, 2, 4, 6 */
            for (int s = 0; s < 2; s++) {
                const float d0 = d * (float)sc[s], d1 = d * (float)sc[s + 2];
                const float d2 = d * (float)sc[s + 4], d3 = d * (float)sc[s + 6];
                for (int l = 16 * s; l < 16 * s + 16; l++) {
                    int q0 = ((ql[l] & 0x0f) | (((qh[l] >> 0) & 3) << 4)) - 32;
                    int q1 = ((ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4)) - 32;
                    int q2 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                    int q3 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                    y[l] = d0 * (float)q0;
                    y[l + 32] = d1 * (float)q1;
                    y[l + 64] = d2 * (float)q2;
                    y[l + 96] = d3 * (float)q3;
                }
            }
        }
    }
}

/* The non-linear 4-bit grid of IQ4_NL and IQ4_XS: index -> value. */
static const int8_t iq4_grid[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                    1,    13,   25,  38,  53,  69,  89,  113};

/* 32 outputs of IQ4_NL or an IQ4_XS sub-block, value = scale * grid[q]
 * (nibble order of Q4_0). The 16 possible products are formed once and
 * looked up: the same f32 products, without a gather per element. */
static void iq4_sub_block(float scale, const uint8_t *qs, float *y)
{
    float v[16];
    for (int k = 0; k < 16; k++)
        v[k] = scale * (float)iq4_grid[k];
    for (int j = 0; j < 16; j++) {
        y[j] = v[qs[j] & 0x0f];
        y[j + 16] = v[qs[j] >> 4];
    }
}

static void dequant_iq4_nl(const uint8_t *x, float *y, int64_t n)
{
    for (int64_t b = 0; b < n / 32; b++, x += 18, y += 32)
        iq4_sub_block(f16_to_f32(rd16(x)), x + 2, y);
}

/* IQ4_XS: 8 sub-blocks of 32 with 6-bit scales (offset 32): the low 4 bits
 * in the nibbles of scales_l (sub-block 2i in the low nibble of byte i),
 * the high 2 bits in bit pairs of the 16-bit scales_h. */
static void dequant_iq4_xs(const uint8_t *x, float *y, int64_t n)
{
    for (int64_t b = 0; b < n / 256; b++, x += 136) {
        const float d = f16_to_f32(rd16(x));
        const unsigned sh = rd16(x + 2);
        const uint8_t *sl = x + 4, *qs = x + 8;
        for (int s = 0; s < 8; s++, qs += 16, y += 32) {
            int ls = ((sl[s / 2] >> (4 * (s % 2))) & 0x0f) | (((sh >> (2 * s)) & 3) << 4);
            iq4_sub_block(d * (float)(ls - 32), qs, y);
        }
    }
}

int asn_dequantize_row(uint32_t type, const void *src, float *dst, int64_t n)
{
    const uint8_t *x = src;
    const ttype_info *t = ttype_get(type);
    if (!t || !t->supported || n < 0 || n % t->block_elems)
        return -1;
    switch (type) {
    case ASN_T_F32: dequant_f32(x, dst, n); break;
    case ASN_T_F16: dequant_f16(x, dst, n); break;
    case ASN_T_BF16: dequant_bf16(x, dst, n); break;
    case ASN_T_Q8_0: dequant_q8_0(x, dst, n); break;
    case ASN_T_Q4_0: dequant_q4_0(x, dst, n); break;
    case ASN_T_Q4_1: dequant_q4_1(x, dst, n); break;
    case ASN_T_Q5_0: dequant_q5_0(x, dst, n); break;
    case ASN_T_Q5_1: dequant_q5_1(x, dst, n); break;
    case ASN_T_Q2_K: dequant_q2_k(x, dst, n); break;
    case ASN_T_Q3_K: dequant_q3_k(x, dst, n); break;
    case ASN_T_Q4_K: dequant_q4_k(x, dst, n); break;
    case ASN_T_Q5_K: dequant_q5_k(x, dst, n); break;
    case ASN_T_Q6_K: dequant_q6_k(x, dst, n); break;
    case ASN_T_IQ4_NL: dequant_iq4_nl(x, dst, n); break;
    case ASN_T_IQ4_XS: dequant_iq4_xs(x, dst, n); break;
    default: return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ quantizers */

static inline void wr16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

/* ggml's quantize_row_q8_0_ref: d = amax / 127, q = round(x / d) with halves
 * away from zero (roundf). The scale is stored as a half but the quants are
 * computed with the unrounded f32 scale, as ggml does. Non-finite inputs
 * give valid (meaningless) blocks instead of undefined conversions. */
static void quant_q8_0(const float *x, uint8_t *y, int64_t n)
{
    for (int64_t b = 0; b < n / 32; b++, x += 32, y += 34) {
        float amax = 0.0f;
        for (int j = 0; j < 32; j++)
            amax = fmaxf(amax, fabsf(x[j]));
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        wr16(y, asn_f32_to_f16(d));
        for (int j = 0; j < 32; j++) {
            float v = roundf(x[j] * id);
            int q = v >= 127.0f ? 127 : v <= -128.0f ? -128 : v == v ? (int)v : 0;
            y[2 + j] = (uint8_t)(int8_t)q;
        }
    }
}

/* The value of largest magnitude in a block of 32 (the first of equal
 * magnitudes; 0 if all are 0 or NaN), the scale of Q4_0 and Q5_0. */
static float signed_absmax(const float *x)
{
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < 32; j++) {
        if (amax < fabsf(x[j])) {
            amax = fabsf(x[j]);
            max = x[j];
        }
    }
    return max;
}

/* Smallest and largest value of a block of 32 as ggml's reference
 * quantizers find them (starting from +-FLT_MAX; NaN is skipped). */
static void block_min_max(const float *x, float *min, float *max)
{
    *min = FLT_MAX;
    *max = -FLT_MAX;
    for (int j = 0; j < 32; j++) {
        if (x[j] < *min)
            *min = x[j];
        if (x[j] > *max)
            *max = x[j];
    }
}

/* A quant level from v = (scaled value + offset + 0.5): ggml truncates
 * toward zero and caps at top. For finite input v lies in [0, top + 1.5],
 * so trunc is floor; the checks keep non-finite input defined. */
static inline int level(float v, int top)
{
    return v >= (float)top ? top : v > 0.0f ? (int)v : 0;
}

/* ggml's quantize_row_q4_0_ref: d = (the value of largest magnitude) / -8,
 * q = min(15, trunc(x / d + 8.5)); element j goes to the low nibble of byte
 * j, element j + 16 to its high nibble. */
static void quant_q4_0(const float *x, uint8_t *y, int64_t n)
{
    for (int64_t b = 0; b < n / 32; b++, x += 32, y += 18) {
        const float d = signed_absmax(x) / -8.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        wr16(y, asn_f32_to_f16(d));
        for (int j = 0; j < 16; j++)
            y[2 + j] = (uint8_t)(level(x[j] * id + 8.5f, 15) | (level(x[j + 16] * id + 8.5f, 15) << 4));
    }
}

/* ggml's quantize_row_q4_1_ref: d = (max - min) / 15, m = min (both stored
 * as halves), q = min(15, trunc((x - min) / d + 0.5)) with the f32 d. */
static void quant_q4_1(const float *x, uint8_t *y, int64_t n)
{
    for (int64_t b = 0; b < n / 32; b++, x += 32, y += 20) {
        float min, max;
        block_min_max(x, &min, &max);
        const float d = (max - min) / 15.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        wr16(y, asn_f32_to_f16(d));
        wr16(y + 2, asn_f32_to_f16(min));
        for (int j = 0; j < 16; j++)
            y[4 + j] = (uint8_t)(level((x[j] - min) * id + 0.5f, 15) |
                                 (level((x[j + 16] - min) * id + 0.5f, 15) << 4));
    }
}

/* Packs 32 5-bit levels as Q5_0 and Q5_1 store them: the low 4 bits in
 * Q4_0's nibble order at qs, the fifth bit of element j in bit j of the
 * little-endian word at qh. */
static void q5_pack(const int q[32], uint8_t *qh, uint8_t *qs)
{
    uint32_t h = 0;
    for (int j = 0; j < 32; j++)
        h |= (uint32_t)(q[j] >> 4) << j;
    memcpy(qh, &h, 4);
    for (int j = 0; j < 16; j++)
        qs[j] = (uint8_t)((q[j] & 0x0f) | ((q[j + 16] & 0x0f) << 4));
}

/* ggml's quantize_row_q5_0_ref: Q4_0's rule with 32 levels, d = (the value
 * of largest magnitude) / -16, q = min(31, trunc(x / d + 16.5)). */
static void quant_q5_0(const float *x, uint8_t *y, int64_t n)
{
    for (int64_t b = 0; b < n / 32; b++, x += 32, y += 22) {
        const float d = signed_absmax(x) / -16.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        int q[32];
        for (int j = 0; j < 32; j++)
            q[j] = level(x[j] * id + 16.5f, 31);
        wr16(y, asn_f32_to_f16(d));
        q5_pack(q, y + 2, y + 6);
    }
}

/* ggml's quantize_row_q5_1_ref: Q4_1's rule with 32 levels, d = (max -
 * min) / 31, q = trunc((x - min) / d + 0.5) (at most 31 for finite x). */
static void quant_q5_1(const float *x, uint8_t *y, int64_t n)
{
    for (int64_t b = 0; b < n / 32; b++, x += 32, y += 24) {
        float min, max;
        block_min_max(x, &min, &max);
        const float d = (max - min) / 31.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        int q[32];
        for (int j = 0; j < 32; j++)
            q[j] = level((x[j] - min) * id + 0.5f, 31);
        wr16(y, asn_f32_to_f16(d));
        wr16(y + 2, asn_f32_to_f16(min));
        q5_pack(q, y + 4, y + 8);
    }
}

int asn_quantize_row(uint32_t type, const float *src, void *dst, int64_t n)
{
    uint8_t *y = dst;
    if (n < 0)
        return -1;
    switch (type) {
    case ASN_T_F32:
        memcpy(y, src, (size_t)n * 4);
        return 0;
    case ASN_T_F16:
        for (int64_t i = 0; i < n; i++)
            wr16(y + 2 * i, asn_f32_to_f16(src[i]));
        return 0;
    case ASN_T_BF16:
        for (int64_t i = 0; i < n; i++)
            wr16(y + 2 * i, asn_f32_to_bf16(src[i]));
        return 0;
    case ASN_T_Q8_0:
    case ASN_T_Q4_0:
    case ASN_T_Q4_1:
    case ASN_T_Q5_0:
    case ASN_T_Q5_1:
        break;
    default:
        return -1;
    }
    if (n % 32)
        return -1;
    switch (type) {
    case ASN_T_Q8_0: quant_q8_0(src, y, n); break;
    case ASN_T_Q4_0: quant_q4_0(src, y, n); break;
    case ASN_T_Q4_1: quant_q4_1(src, y, n); break;
    case ASN_T_Q5_0: quant_q5_0(src, y, n); break;
    case ASN_T_Q5_1: quant_q5_1(src, y, n); break;
    }
    return 0;
}
