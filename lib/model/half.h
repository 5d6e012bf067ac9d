/* half.h — IEEE binary16 to float, inline for the loops that convert one
 * scale per block (dequantizers and the integer matrix product). */
#ifndef ASN_HALF_H
#define ASN_HALF_H

#include <stdint.h>
#include <string.h>

/* binary16: 1 sign, 5 exponent (bias 15), 10 mantissa bits. Every half is
 * exactly representable as a float, so this direction never rounds. Written
 * with selects instead of branches so that row loops vectorize. */
static inline float asn_half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t o = (uint32_t)(h & 0x7fff) << 13; /* exponent and mantissa in place */
    uint32_t exp = o & 0x0f800000;
    o += (uint32_t)(127 - 15) << 23; /* rebias the exponent from 15 to 127 */
    /* inf and NaN: exponent all ones (NaN payload kept) */
    o += exp == 0x0f800000 ? (uint32_t)(128 - 16) << 23 : 0;
    /* zero and subnormals, m * 2^-24: build 2^-14 * (1 + m/1024) and take
     * 2^-14 away, both exact */
    float f, sub;
    uint32_t u = o + (1u << 23);
    memcpy(&sub, &u, 4);
    sub -= 0x1p-14f;
    uint32_t subu;
    memcpy(&subu, &sub, 4);
    u = sign | (exp == 0 ? subu : o);
    memcpy(&f, &u, 4);
    return f;
}

#endif
