/* asn/vexp.h — exp over 16 floats at a time with GCC vector extensions,
 * for the loops that exponentiate rows (softmax in sampling and attention).
 * Only IEEE +, -, *, / and conversions: compiled without FMA contraction,
 * every instruction-set clone of a caller gives the same bits. */
#ifndef ASN_VEXP_H
#define ASN_VEXP_H

#include <stdint.h>

#pragma GCC diagnostic ignored "-Wpsabi"
typedef float v16f __attribute__((vector_size(64)));
typedef int32_t v16i __attribute__((vector_size(64)));

static inline v16f splat16(float x) { return (v16f){x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x}; }
static inline v16f sel16(v16i mask, v16f a, v16f b)
{
    return (v16f)(((v16i)a & mask) | ((v16i)b & ~mask));
}

/* exp(x): x = n ln2 + r with |r| <= ln2/2, e^r by a degree-7 Taylor
 * polynomial in float Horner form, 2^n applied as two exponent-field
 * multiplies so that results down into the subnormal range come out right.
 * Within 2 ulp of glibc's expf on [-104, 88.7] (test_sampling.c); 0 below
 * -104, where expf's result is 0 or a subnormal under 2^-149. Rounding of n
 * uses the 1.5 * 2^23 trick (round to nearest even, no branch). */
static inline v16f exp16(v16f x)
{
    const v16f lo = splat16(-104.0f), hi = splat16(88.7f), magic = splat16(12582912.0f);
    v16i under = x < lo;
    x = sel16(under, lo, x);
    x = sel16(x > hi, hi, x);
    v16f fn = (x * splat16(1.44269504088896341f) + magic) - magic;
    v16i n = __builtin_convertvector(fn, v16i);
    v16f r = (x - fn * splat16(0.693359375f)) - fn * splat16(-2.12194440e-4f);
    v16f p = splat16(1.0f / 5040.0f);
    p = p * r + splat16(1.0f / 720.0f);
    p = p * r + splat16(1.0f / 120.0f);
    p = p * r + splat16(1.0f / 24.0f);
    p = p * r + splat16(1.0f / 6.0f);
    p = p * r + splat16(0.5f);
    p = p * r + splat16(1.0f);
    p = p * r + splat16(1.0f);
    v16i n1 = n >> 1, n2 = n - n1;
    v16f s1 = (v16f)((n1 + 127) << 23), s2 = (v16f)((n2 + 127) << 23);
    return sel16(under, splat16(0.0f), p * s1 * s2);
}

/* The same over rows (lib/core/vexp.c), in a copy per instruction set. */
float asn_expf(float x);                                         /* exp16's lane 0 */
void asn_exp_shifted(const float *x, float m, float *out, int n); /* out = exp(x - m) */

#endif
