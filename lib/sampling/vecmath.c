/* vecmath.c — the row-wide arithmetic every processor repeats: max, exp of
 * shifted logits, softmax in the reference arithmetic (float exp, double
 * sum, float division), sums.
 *
 * Loops are plain C written so the compiler vectorizes them; target_clones
 * adds an AVX2 and an AVX-512 copy chosen at load time. Results are bit-
 * identical across the clones because the code uses only IEEE +, -, *, /
 * and conversions (no FMA: -ffp-contract=off), and sums keep a fixed
 * association (8 interleaved partial sums, combined in a fixed order). */
#include "sampling_internal.h"

#include <math.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define ASN_CLONES __attribute__((target_clones("default", "avx2", "arch=x86-64-v4")))
#else
#define ASN_CLONES
#endif

/* exp(x) for float x: x = n ln2 + r with |r| <= ln2/2, e^r by a degree-6
 * polynomial (Taylor coefficients, rounded to float; max error < 1.5 ulp on
 * [-104, 88] against glibc's correctly rounded expf, checked in
 * test_sampling.c), 2^n applied as two exponent-field multiplies so that
 * results down to the subnormal range come out right. */
static inline float exp_core(float x)
{
    const float log2e = 1.44269504088896341f;
    const float ln2_hi = 0.693359375f, ln2_lo = -2.12194440e-4f;
    if (x < -104.0f)
        x = -104.0f;
    if (x > 88.7f)
        x = 88.7f;
    float fn = x * log2e;
    /* round to nearest without calling rintf (keeps the loop vectorizable) */
    fn = fn >= 0 ? fn + 0.5f : fn - 0.5f;
    int n = (int)fn;
    float nf = (float)n;
    float r = (x - nf * ln2_hi) - nf * ln2_lo;
    float p = 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    int n1 = n / 2, n2 = n - n1;
    union { uint32_t u; float f; } s1 = {(uint32_t)(n1 + 127) << 23}, s2 = {(uint32_t)(n2 + 127) << 23};
    return p * s1.f * s2.f;
}

float asn_expf(float x)
{
    if (x == -INFINITY)
        return 0;
    return x < -104.0f ? 0.0f : exp_core(x);
}

ASN_CLONES
void asn_exp_shifted(const float *x, float m, float *out, int n)
{
    for (int i = 0; i < n; i++) {
        float d = x[i] - m; /* -inf stays -inf */
        float v = exp_core(d);
        out[i] = d < -104.0f ? 0.0f : v;
    }
}

ASN_CLONES
float asn_row_max(const float *x, int n)
{
    float m = -INFINITY;
    for (int i = 0; i < n; i++)
        m = x[i] > m ? x[i] : m;
    return m;
}

ASN_CLONES
double asn_sum_f32(const float *x, int n)
{
    double s[8] = {0};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++)
            s[j] += (double)x[i + j];
    for (int j = 0; i < n; i++, j++)
        s[j] += (double)x[i];
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

ASN_CLONES
void asn_div_f32(const float *e, double S, float *p, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (float)((double)e[i] / S);
}

ASN_CLONES
void asn_scale_f32(float *x, float t, int n)
{
    for (int i = 0; i < n; i++)
        x[i] = x[i] / t;
}

double asn_softmax_ref(const float *x, int n, float *e, float *p, float *max_out)
{
    float m = asn_row_max(x, n);
    asn_exp_shifted(x, m, e, n);
    double S = asn_sum_f32(e, n);
    if (p)
        asn_div_f32(e, S, p, n);
    if (max_out)
        *max_out = m;
    return S;
}
