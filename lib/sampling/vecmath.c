/* vecmath.c — the row-wide arithmetic every processor repeats: max,
 * softmax in the reference arithmetic (float exp by asn_exp_shifted of
 * lib/core/vexp.c, double sum, float division), sums.
 *
 * Loops are plain C written so the compiler vectorizes them; target_clones
 * adds an AVX2 and an AVX-512 copy chosen at load time. Results are bit-
 * identical across the clones because the code uses only IEEE +, -, *, /
 * and conversions (no FMA: -ffp-contract=off), and sums keep a fixed
 * association (8 interleaved partial sums, combined in a fixed order). */
#include "asn/cpu.h"
#include "sampling_internal.h"
#include "asn/vexp.h"

#include <math.h>
#include <string.h>

/* Eight floats at a time with GCC's vector extensions (asn/vexp.h): at the
 * baseline ISA this is two SSE registers, in the AVX2 / AVX-512 clones one
 * YMM register. Comparisons give lane masks (all ones or zero) for
 * branch-free selects. The helpers are static and inlined: no vector
 * crosses an ABI boundary. */

ASN_CLONES
float asn_row_max(const float *x, int n)
{
    v8f m = splat8(-INFINITY);
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        v8f v;
        memcpy(&v, x + i, sizeof v);
        m = sel8(v > m, v, m);
    }
    float r = -INFINITY;
    for (int j = 0; j < 8; j++)
        r = m[j] > r ? m[j] : r;
    for (; i < n; i++)
        r = x[i] > r ? x[i] : r;
    return r;
}

/* Sums of products and masked sums: 8 interleaved double accumulators, a
 * fixed association, vectorizable. */
#define SUM8(n, term)                                                                      \
    do {                                                                                   \
        double s_[8] = {0};                                                                \
        int i = 0;                                                                         \
        for (; i + 8 <= (n); i += 8)                                                       \
            for (int j = 0; j < 8; j++) {                                                  \
                int k = i + j;                                                             \
                s_[j] += (term);                                                           \
            }                                                                              \
        for (int j = 0; i < (n); i++, j++) {                                               \
            int k = i;                                                                     \
            s_[j] += (term);                                                               \
        }                                                                                  \
        return ((s_[0] + s_[1]) + (s_[2] + s_[3])) + ((s_[4] + s_[5]) + (s_[6] + s_[7])); \
    } while (0)

ASN_CLONES
double asn_sum_f32(const float *x, int n)
{
    SUM8(n, (double)x[k]);
}

ASN_CLONES
double asn_sum_below(const float *q, const float *x, float cut, int n)
{
    SUM8(n, x[k] >= cut ? 0.0 : (double)q[k]);
}

ASN_CLONES
double asn_nansum_prod(const float *a, const float *b, int n)
{
    SUM8(n, a[k] * b[k] != a[k] * b[k] ? 0.0 : (double)(a[k] * b[k]));
}

ASN_CLONES
void asn_div_f32(const float *e, double S, float *p, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (float)((double)e[i] / S);
}

/* Appends asn_pack(key[i], i) for every i with key[i] >= cut (below = 0) or
 * key[i] <= cut (below = 1), in index order; returns the count. Blocks of 8
 * with no hit, the common case, cost one compare. */
ASN_CLONES
int asn_collect(const float *key, int n, float cut, int below, uint64_t *out)
{
    const v8f c = splat8(cut);
    int cnt = 0, i = 0;
    for (; i + 8 <= n; i += 8) {
        v8f v;
        memcpy(&v, key + i, sizeof v);
        v8i m = below ? (v <= c) : (v >= c);
        v8i a = m | __builtin_shufflevector(m, m, 4, 5, 6, 7, 0, 1, 2, 3);
        a = a | __builtin_shufflevector(a, a, 2, 3, 0, 1, 6, 7, 4, 5);
        a = a | __builtin_shufflevector(a, a, 1, 0, 3, 2, 5, 4, 7, 6);
        if (!a[0])
            continue;
        for (int j = 0; j < 8; j++)
            if (m[j])
                out[cnt++] = asn_pack(key[i + j], (uint32_t)(i + j));
    }
    for (; i < n; i++)
        if (below ? key[i] <= cut : key[i] >= cut)
            out[cnt++] = asn_pack(key[i], (uint32_t)i);
    return cnt;
}

ASN_CLONES
float asn_row_min(const float *x, int n)
{
    v8f m = splat8(INFINITY);
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        v8f v;
        memcpy(&v, x + i, sizeof v);
        m = sel8(v < m, v, m);
    }
    float r = INFINITY;
    for (int j = 0; j < 8; j++)
        r = m[j] < r ? m[j] : r;
    for (; i < n; i++)
        r = x[i] < r ? x[i] : r;
    return r;
}

ASN_CLONES
void asn_keep_only(float *x, int n, const uint64_t *keys, int nkeys)
{
    /* the kept tokens' values travel in the keys themselves */
    for (int i = 0; i < n; i++)
        x[i] = -INFINITY;
    for (int j = 0; j < nkeys; j++)
        x[asn_pack_tok(keys[j])] = asn_pack_val(keys[j]);
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
