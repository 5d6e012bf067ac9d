/* ttype.c — ggml tensor types: the table of block sizes, IEEE half and
 * bfloat16 conversions, dequantization of the types asn computes with and
 * the reference quantizers for the types asn writes.
 *
 * Block layouts and the arithmetic of every dequantizer follow ggml
 * (ggml-common.h, ggml-quants.c: see docs/gguf-notes.md §6) operation by
 * operation in f32, so a row dequantized here equals ggml's bit for bit.
 * Quantized data may sit at any byte address (general.alignment can be 1,
 * and open_mem buffers have no alignment at all), so blocks are read byte
 * by byte or through memcpy, never through a cast pointer. */
#include "asn/gguf.h"

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

/* Sizes from the block structs of ggml-common.h (QK_K = 256). */
static const ttype_info ttypes[] = {
    [ASN_T_F32] = {"F32", 1, 4, 1},
    [ASN_T_F16] = {"F16", 1, 2, 1},
    [ASN_T_Q4_0] = {"Q4_0", 32, 18, 1},  /* half d, 16 bytes of nibbles */
    [ASN_T_Q4_1] = {"Q4_1", 32, 20, 0},  /* half d, half m, 16 bytes */
    [ASN_T_Q5_0] = {"Q5_0", 32, 22, 0},  /* half d, 4 bytes qh, 16 bytes */
    [ASN_T_Q5_1] = {"Q5_1", 32, 24, 0},  /* half d, half m, 4 + 16 bytes */
    [ASN_T_Q8_0] = {"Q8_0", 32, 34, 1},  /* half d, 32 int8 */
    [ASN_T_Q8_1] = {"Q8_1", 32, 36, 0},  /* half d, half s, 32 int8 */
    [ASN_T_Q2_K] = {"Q2_K", 256, 84, 0}, /* 16 scales, 64 qs, half d, half dmin */
    [ASN_T_Q3_K] = {"Q3_K", 256, 110, 0},/* 32 hmask, 64 qs, 12 scales, half d */
    [ASN_T_Q4_K] = {"Q4_K", 256, 144, 1},/* half d, half dmin, 12 scales, 128 qs */
    [ASN_T_Q5_K] = {"Q5_K", 256, 176, 0},/* as Q4_K plus 32 bytes qh */
    [ASN_T_Q6_K] = {"Q6_K", 256, 210, 1},/* 128 ql, 64 qh, 16 int8 scales, half d */
    [ASN_T_Q8_K] = {"Q8_K", 256, 292, 0},/* float d, 256 int8, 16 int16 sums */
    [ASN_T_BF16] = {"BF16", 1, 2, 1},
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

/* binary16: 1 sign, 5 exponent (bias 15), 10 mantissa bits. Every half is
 * exactly representable as a float, so this direction never rounds. Written
 * with selects instead of branches so that row loops vectorize: F16 rows
 * are dequantized on the forward pass. */
static inline float f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t o = (uint32_t)(h & 0x7fff) << 13; /* exponent and mantissa in place */
    uint32_t exp = o & 0x0f800000;
    o += (uint32_t)(127 - 15) << 23; /* rebias the exponent from 15 to 127 */
    /* inf and NaN: exponent all ones (NaN payload kept) */
    o += exp == 0x0f800000 ? (uint32_t)(128 - 16) << 23 : 0;
    /* zero and subnormals, m * 2^-24: build 2^-14 * (1 + m/1024) and take
     * 2^-14 away, both exact */
    uint32_t sub = f32_bits(f32_from_bits(o + (1u << 23)) - 0x1p-14f);
    return f32_from_bits(sign | (exp == 0 ? sub : o));
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

static void dequant_q4_k(const uint8_t *x, float *y, int64_t n)
{
    for (int64_t b = 0; b < n / 256; b++, x += 144) {
        const float d = f16_to_f32(rd16(x));
        const float dmin = f16_to_f32(rd16(x + 2));
        const uint8_t *scales = x + 4, *q = x + 16;
        /* four groups of 64 outputs: sub-block 2g from the low nibbles of 32
         * bytes, sub-block 2g+1 from their high nibbles */
        for (int g = 0; g < 4; g++, q += 32, y += 64) {
            uint8_t sc, m;
            q4k_scale_min(2 * g, scales, &sc, &m);
            const float d1 = d * (float)sc, m1 = dmin * (float)m;
            q4k_scale_min(2 * g + 1, scales, &sc, &m);
            const float d2 = d * (float)sc, m2 = dmin * (float)m;
            for (int l = 0; l < 32; l++)
                y[l] = d1 * (float)(q[l] & 0x0f) - m1;
            for (int l = 0; l < 32; l++)
                y[l + 32] = d2 * (float)(q[l] >> 4) - m2;
        }
    }
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
    case ASN_T_Q4_K: dequant_q4_k(x, dst, n); break;
    case ASN_T_Q6_K: dequant_q6_k(x, dst, n); break;
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

/* ggml's quantize_row_q4_0_ref: d = (the value of largest magnitude) / -8,
 * q = min(15, trunc(x / d + 8.5)); element j goes to the low nibble of byte
 * j, element j + 16 to its high nibble. */
static void quant_q4_0(const float *x, uint8_t *y, int64_t n)
{
    for (int64_t b = 0; b < n / 32; b++, x += 32, y += 18) {
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < 32; j++) {
            if (amax < fabsf(x[j])) {
                amax = fabsf(x[j]);
                max = x[j];
            }
        }
        const float d = max / -8.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        wr16(y, asn_f32_to_f16(d));
        for (int j = 0; j < 16; j++) {
            int q[2];
            for (int k = 0; k < 2; k++) {
                /* for finite input v lies in [0.5, 16.5]: trunc is floor */
                float v = x[j + 16 * k] * id + 8.5f;
                q[k] = v >= 15.0f ? 15 : v > 0.0f ? (int)v : 0;
            }
            y[2 + j] = (uint8_t)(q[0] | (q[1] << 4));
        }
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
        if (n % 32)
            return -1;
        quant_q8_0(src, y, n);
        return 0;
    case ASN_T_Q4_0:
        if (n % 32)
            return -1;
        quant_q4_0(src, y, n);
        return 0;
    default:
        return -1;
    }
}
