/* vexp.c — exp over whole rows (asn/vexp.h's exp8, 8 floats at a time),
 * for the softmaxes of sampling, the sampler networks, the demo LM and the
 * judges. target_clones adds an AVX2 and an AVX-512 copy chosen at load
 * time; every copy gives the same bits (only IEEE +, -, *, / and
 * conversions, no FMA). */
#include "asn/cpu.h"
#include "asn/vexp.h"

#include <math.h>
#include <string.h>

/* one lane of the vector exp: the same steps, the same bits */
float asn_expf(float x)
{
    return asn_exp1(x);
}

ASN_CLONES
void asn_exp_shifted(const float *x, float m, float *out, int n)
{
    const v8f mv = splat8(m);
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        v8f v;
        memcpy(&v, x + i, sizeof v);
        v = exp8(v - mv); /* -inf - m = -inf, below the floor: 0 */
        memcpy(out + i, &v, sizeof v);
    }
    for (; i < n; i++)
        out[i] = asn_exp1(x[i] - m);
}
