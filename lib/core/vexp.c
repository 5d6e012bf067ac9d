/* vexp.c — exp over whole rows (asn/vexp.h's exp16, 16 floats at a time),
 * for the softmaxes of sampling, the sampler networks, the demo LM and the
 * judges. target_clones adds an AVX2 and an AVX-512 copy chosen at load
 * time; every copy gives the same bits (only IEEE +, -, *, / and
 * conversions, no FMA). */
#include "asn/vexp.h"

#include <math.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define ASN_CLONES __attribute__((target_clones("default", "avx2", "arch=x86-64-v4")))
#else
#define ASN_CLONES
#endif

float asn_expf(float x)
{
    return exp16(splat16(x))[0];
}

ASN_CLONES
void asn_exp_shifted(const float *x, float m, float *out, int n)
{
    const v16f mv = splat16(m);
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        v16f v;
        memcpy(&v, x + i, sizeof v);
        v = exp16(v - mv); /* -inf - m = -inf, below the floor: 0 */
        memcpy(out + i, &v, sizeof v);
    }
    if (i < n) {
        v16f v = splat16(-INFINITY);
        memcpy(&v, x + i, (size_t)(n - i) * sizeof *x);
        v = exp16(v - mv);
        memcpy(out + i, &v, (size_t)(n - i) * sizeof *x);
    }
}
