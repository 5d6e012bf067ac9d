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
typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));
typedef float v4f __attribute__((vector_size(16)));
typedef int32_t v4i __attribute__((vector_size(16)));
typedef float v1f __attribute__((vector_size(4)));
typedef int32_t v1i __attribute__((vector_size(4)));

static inline __attribute__((always_inline)) v16f splat16(float x) { return (v16f){x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x}; }
static inline __attribute__((always_inline)) v8f splat8(float x) { return (v8f){x, x, x, x, x, x, x, x}; }
static inline __attribute__((always_inline)) v4f splat4(float x) { return (v4f){x, x, x, x}; }
static inline __attribute__((always_inline)) v1f splat1(float x) { return (v1f){x}; }

/* mask ? a : b, lane by lane */
#define ASN_VSEL_DEFINE(W)                                                                        \
    static inline __attribute__((always_inline)) v##W##f sel##W(v##W##i mask, v##W##f a, v##W##f b)                              \
    {                                                                                             \
        return (v##W##f)(((v##W##i)a & mask) | ((v##W##i)b & ~mask));                              \
    }
ASN_VSEL_DEFINE(16)
ASN_VSEL_DEFINE(8)
ASN_VSEL_DEFINE(4)
ASN_VSEL_DEFINE(1)

/* exp(x): x = n ln2 + r with |r| <= ln2/2, e^r by a degree-7 Taylor
 * polynomial in float Horner form, 2^n applied as two exponent-field
 * multiplies so that results down into the subnormal range come out right.
 * Within 2 ulp of glibc's expf on [-104, 88.7] (test_sampling.c); 0 below
 * -104, where expf's result is 0 or a subnormal under 2^-149. Rounding of n
 * uses the 1.5 * 2^23 trick (round to nearest even, no branch).
 *
 * expW works on W lanes: a caller uses its target's native width (16 with
 * AVX-512, 8 with AVX2, 4 with SSE2 or NEON), since a vector wider than the
 * registers is split through memory, its compares lane by lane. exp1 and
 * asn_exp1 are one lane. Every lane of every width takes the same steps:
 * the same bits (test_vexp.c checks it). */
#define ASN_VEXP_DEFINE(W)                                                                        \
    static inline __attribute__((always_inline)) v##W##f exp##W(v##W##f x)                                                      \
    {                                                                                             \
        const v##W##f lo = splat##W(-104.0f), hi = splat##W(88.7f), magic = splat##W(12582912.0f); \
        v##W##i under = x < lo;                                                                    \
        x = sel##W(under, lo, x);                                                                  \
        x = sel##W(x > hi, hi, x);                                                                 \
        v##W##f fn = (x * splat##W(1.44269504088896341f) + magic) - magic;                         \
        v##W##i n = __builtin_convertvector(fn, v##W##i);                                          \
        v##W##f r = (x - fn * splat##W(0.693359375f)) - fn * splat##W(-2.12194440e-4f);            \
        v##W##f p = splat##W(1.0f / 5040.0f);                                                      \
        p = p * r + splat##W(1.0f / 720.0f);                                                       \
        p = p * r + splat##W(1.0f / 120.0f);                                                       \
        p = p * r + splat##W(1.0f / 24.0f);                                                        \
        p = p * r + splat##W(1.0f / 6.0f);                                                         \
        p = p * r + splat##W(0.5f);                                                                \
        p = p * r + splat##W(1.0f);                                                                \
        p = p * r + splat##W(1.0f);                                                                \
        v##W##i n1 = n >> 1, n2 = n - n1;                                                          \
        v##W##f s1 = (v##W##f)((n1 + 127) << 23), s2 = (v##W##f)((n2 + 127) << 23);                \
        return sel##W(under, splat##W(0.0f), p * s1 * s2);                                         \
    }
ASN_VEXP_DEFINE(16)
ASN_VEXP_DEFINE(8)
ASN_VEXP_DEFINE(4)
ASN_VEXP_DEFINE(1)

static inline float asn_exp1(float x)
{
    if (x != x) /* NaN: what the vector lanes give, without converting NaN to an integer */
        return x + x;
    return exp1(splat1(x))[0];
}

/* The same over rows (lib/core/vexp.c), in a copy per instruction set. */
float asn_expf(float x);                                         /* asn_exp1 */
void asn_exp_shifted(const float *x, float m, float *out, int n); /* out = exp(x - m) */

#endif
