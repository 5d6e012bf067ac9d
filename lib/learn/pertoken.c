/* pertoken.c — the inference kernels of LocalProbabilityTransform and
 * SimpleDistributionAwareTransform: one pass over a row's finite logits,
 * from the logit to the output (log_softmax, the per-token SwiGLU network,
 * the soft truncation), a vector of tokens at a time, never storing an
 * activation.
 *
 * Unlike layers.c, these use fused multiply-adds: the body
 * (pertoken_body.h) is compiled three times, for AVX-512, for AVX2 + FMA
 * and for any machine (GCC vectors, fmaf lane by lane), and every
 * operation in it is lane-wise and correctly rounded, so the three give the
 * same bits; the best one the processor has is picked at run time. */
#include "asn/cpu.h"
#include "learn/pertoken.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define PT_X86 1
#include <immintrin.h>
#endif

#pragma GCC diagnostic ignored "-Wpsabi"

/* ------------------------------------------------------------ any machine */

typedef float pt_vf __attribute__((vector_size(64)));
typedef int32_t pt_vi __attribute__((vector_size(64)));

#define V pt_vf
#define VL 16
#define SFX(name) name##_generic
#define PT_EXP_CLAMP 1 /* pt_expsum: C's conversion of -inf to an integer is undefined */
static inline V gen_set(float x) { return (V){0} + x; }
static inline V gen_add(V a, V b) { return a + b; }
static inline V gen_sub(V a, V b) { return a - b; }
static inline V gen_mul(V a, V b) { return a * b; }
static inline V gen_div(V a, V b) { return a / b; }
static inline V gen_fma(V a, V b, V c)
{
    V r;
    for (int l = 0; l < VL; l++)
        r[l] = fmaf(a[l], b[l], c[l]);
    return r;
}
static inline V gen_min(V a, V b)
{
    pt_vi m = a < b;
    return (V)((m & (pt_vi)a) | (~m & (pt_vi)b));
}
static inline V gen_max(V a, V b)
{
    pt_vi m = a > b;
    return (V)((m & (pt_vi)a) | (~m & (pt_vi)b));
}
static inline V gen_round(V x)
{
    V r;
    for (int l = 0; l < VL; l++)
        r[l] = nearbyintf(x[l]); /* the default rounding mode: to nearest, ties to even */
    return r;
}
/* p * 2^n1 * 2^n2, n1 = floor(n / 2), n2 = n - n1: the first product is
 * exact (a normal number), the second rounds once, as vscalefps does. */
static inline V gen_scale(V p, V n)
{
    pt_vi ni = __builtin_convertvector(n, pt_vi), n1 = ni >> 1, n2 = ni - n1;
    return (p * (V)((n1 + 127) << 23)) * (V)((n2 + 127) << 23);
}
static inline V gen_load(const float *p, int k)
{
    V v = {0};
    memcpy(&v, p, (size_t)k * sizeof(float));
    return v;
}
static inline void gen_store(float *p, V v, int k) { memcpy(p, &v, (size_t)k * sizeof(float)); }
typedef uint32_t pt_vu __attribute__((vector_size(64)));
#define VI pt_vi
static inline uint32_t gen_geo(V t, int32_t base, const int ni, pt_vi *j, V *u)
{
    const int ob = asn_nn_ptfast_ob(ni);
    pt_vu b = (pt_vu)t;
    pt_vi jr = (pt_vi)(b >> (23 - ob)) - base;
    *j = jr & (ni - 1);
    *u = (V)(((b << ob) & 0x7FFFFFu) | 0x3F800000u) - 1.0f;
    uint32_t m = 0;
    for (int l = 0; l < VL; l++)
        m |= (uint32_t)((jr[l] & ~(ni - 1)) != 0) << l;
    return m;
}
static inline V gen_lut(const float *tab, pt_vi j, const int ni)
{
    V r;
    for (int l = 0; l < VL; l++)
        r[l] = tab[j[l]];
    return r;
}
static inline V gen_keep_ge(V x, V t, float lo)
{
    pt_vi m = t >= lo;
    return (V)(m & (pt_vi)x);
}
#define vkeep_ge gen_keep_ge
static inline V gen_sel_gt(V a, V c, V x, V y)
{
    pt_vi m = a > c;
    return (V)((m & (pt_vi)x) | (~m & (pt_vi)y));
}
static inline uint32_t gen_mask_gt(V a, V c)
{
    uint32_t m = 0;
    for (int l = 0; l < VL; l++)
        m |= (uint32_t)(a[l] > c[l]) << l;
    return m;
}
static inline uint32_t gen_mask_nlt(V a, V c)
{
    uint32_t m = 0;
    for (int l = 0; l < VL; l++)
        m |= (uint32_t)!(a[l] < c[l]) << l;
    return m;
}
#define vsel_gt gen_sel_gt
static inline V gen_neg(V x) { return (V)((pt_vi)x ^ (int32_t)0x80000000); }
static inline V gen_abs(V x) { return (V)((pt_vi)x & 0x7fffffff); }
static inline V gen_pow2t(V n) { return (V)((__builtin_convertvector(n, pt_vi) + 127) << 23); }
#define vneg gen_neg
#define vabs gen_abs
#define vpow2t gen_pow2t
#define vmask_gt gen_mask_gt
#define vmask_nlt gen_mask_nlt
#define vgeo gen_geo
#define vlut gen_lut
#define vset gen_set
#define vadd gen_add
#define vsub gen_sub
#define vmul gen_mul
#define vdiv gen_div
#define vfma gen_fma
#define vmin gen_min
#define vmax gen_max
#define vclamp170(x) gen_min(gen_max(x, gen_set(-170.0f)), gen_set(170.0f))
#define vround gen_round
#define vscale gen_scale
#define vloadn gen_load
#define vstoren gen_store
#include "learn/pertoken_body.h"

#ifdef PT_X86
/* ------------------------------------------------------------ AVX2 + FMA */

/* Two 8-float registers per vector: 16 tokens, their two halves' chains
 * interleaved. */
#pragma GCC push_options
#pragma GCC target("avx2,fma")
typedef struct a2v {
    __m256 a, b;
} a2v;
#define V a2v
#define VL 16
#define SFX(name) name##_avx2
#undef PT_EXP_CLAMP
#define PT_EXP_CLAMP 0
#define A2_1(f, x) ((a2v){f((x).a), f((x).b)})
#define A2_2(f, x, y) ((a2v){f((x).a, (y).a), f((x).b, (y).b)})
#define A2_3(f, x, y, z) ((a2v){f((x).a, (y).a, (z).a), f((x).b, (y).b, (z).b)})
static inline a2v a2_set(float x) { return (a2v){_mm256_set1_ps(x), _mm256_set1_ps(x)}; }
static inline a2v a2_add(a2v x, a2v y) { return A2_2(_mm256_add_ps, x, y); }
static inline a2v a2_sub(a2v x, a2v y) { return A2_2(_mm256_sub_ps, x, y); }
static inline a2v a2_mul(a2v x, a2v y) { return A2_2(_mm256_mul_ps, x, y); }
static inline a2v a2_div(a2v x, a2v y) { return A2_2(_mm256_div_ps, x, y); }
static inline a2v a2_fma(a2v x, a2v y, a2v z) { return A2_3(_mm256_fmadd_ps, x, y, z); }
static inline a2v a2_min(a2v x, a2v y) { return A2_2(_mm256_min_ps, x, y); }
static inline a2v a2_max(a2v x, a2v y) { return A2_2(_mm256_max_ps, x, y); }
static inline __m256 a2_round1(__m256 x) { return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
static inline a2v a2_round(a2v x) { return A2_1(a2_round1, x); }
static inline __m256 a2_pow2(__m256i k) { return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k, _mm256_set1_epi32(127)), 23)); }
static inline __m256 a2_scale1(__m256 p, __m256 n)
{
    __m256i ni = _mm256_cvtps_epi32(n), n1 = _mm256_srai_epi32(ni, 1), n2 = _mm256_sub_epi32(ni, n1);
    return _mm256_mul_ps(_mm256_mul_ps(p, a2_pow2(n1)), a2_pow2(n2));
}
static inline a2v a2_scale(a2v p, a2v n) { return A2_2(a2_scale1, p, n); }
/* n added to p's exponent field: p * 2^n when that is normal */
static inline __m256 a2_scale_normal1(__m256 p, __m256 n)
{
    return _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(p), _mm256_slli_epi32(_mm256_cvtps_epi32(n), 23)));
}
static inline a2v a2_scale_normal(a2v p, a2v n) { return A2_2(a2_scale_normal1, p, n); }
static inline __m256 a2_keep_ge1(__m256 x, __m256 t, float lo) { return _mm256_and_ps(x, _mm256_cmp_ps(t, _mm256_set1_ps(lo), _CMP_GE_OQ)); }
static inline a2v a2_keep_ge(a2v x, a2v t, float lo) { return (a2v){a2_keep_ge1(x.a, t.a, lo), a2_keep_ge1(x.b, t.b, lo)}; }
static inline __m256 a2_sel_gt1(__m256 a, __m256 c, __m256 x, __m256 y) { return _mm256_blendv_ps(y, x, _mm256_cmp_ps(a, c, _CMP_GT_OQ)); }
static inline a2v a2_sel_gt(a2v a, a2v c, a2v x, a2v y) { return (a2v){a2_sel_gt1(a.a, c.a, x.a, y.a), a2_sel_gt1(a.b, c.b, x.b, y.b)}; }
static inline __m256 a2_xor1(__m256 x, int32_t b) { return _mm256_xor_ps(x, _mm256_castsi256_ps(_mm256_set1_epi32(b))); }
static inline __m256 a2_and1(__m256 x, int32_t b) { return _mm256_and_ps(x, _mm256_castsi256_ps(_mm256_set1_epi32(b))); }
static inline a2v a2_neg(a2v x) { return (a2v){a2_xor1(x.a, (int32_t)0x80000000), a2_xor1(x.b, (int32_t)0x80000000)}; }
static inline a2v a2_abs(a2v x) { return (a2v){a2_and1(x.a, 0x7fffffff), a2_and1(x.b, 0x7fffffff)}; }
static inline __m256 a2_pow2t1(__m256 n) { return a2_pow2(_mm256_cvttps_epi32(n)); }
static inline a2v a2_pow2t(a2v n) { return A2_1(a2_pow2t1, n); }
static inline uint32_t a2_mask_gt(a2v a, a2v c)
{
    return (uint32_t)_mm256_movemask_ps(_mm256_cmp_ps(a.a, c.a, _CMP_GT_OQ)) |
           (uint32_t)_mm256_movemask_ps(_mm256_cmp_ps(a.b, c.b, _CMP_GT_OQ)) << 8;
}
static inline uint32_t a2_mask_nlt(a2v a, a2v c)
{
    return (uint32_t)_mm256_movemask_ps(_mm256_cmp_ps(a.a, c.a, _CMP_NLT_UQ)) |
           (uint32_t)_mm256_movemask_ps(_mm256_cmp_ps(a.b, c.b, _CMP_NLT_UQ)) << 8;
}
static inline a2v a2_load(const float *p, int k)
{
    if (k == VL)
        return (a2v){_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)};
    float b[VL] = {0};
    memcpy(b, p, (size_t)k * sizeof(float));
    return (a2v){_mm256_loadu_ps(b), _mm256_loadu_ps(b + 8)};
}
static inline void a2_store(float *p, a2v v, int k)
{
    if (k == VL) {
        _mm256_storeu_ps(p, v.a);
        _mm256_storeu_ps(p + 8, v.b);
        return;
    }
    float b[VL];
    _mm256_storeu_ps(b, v.a);
    _mm256_storeu_ps(b + 8, v.b);
    memcpy(p, b, (size_t)k * sizeof(float));
}
typedef struct a2i {
    __m256i a, b;
} a2i;
#define VI a2i
/* j as the byte offset of its row in T->row (16 j) */
static inline uint32_t a2_geo1(__m256 t, int32_t base, const int ni, __m256i *q, __m256 *u)
{
    const int ob = asn_nn_ptfast_ob(ni);
    __m256i b = _mm256_castps_si256(t);
    __m256i jr = _mm256_sub_epi32(_mm256_srli_epi32(b, 23 - ob - 4), _mm256_set1_epi32(base * 16));
    *q = _mm256_and_si256(jr, _mm256_set1_epi32((ni - 1) * 16));
    __m256i f = _mm256_or_si256(_mm256_and_si256(_mm256_slli_epi32(b, ob), _mm256_set1_epi32(0x7FFFFF)),
                                _mm256_set1_epi32(0x3F800000));
    *u = _mm256_sub_ps(_mm256_castsi256_ps(f), _mm256_set1_ps(1.0f));
    __m256i in = _mm256_cmpeq_epi32(_mm256_and_si256(jr, _mm256_set1_epi32(~(ni * 16 - 1))), _mm256_setzero_si256());
    return ~(uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(in)) & 0xFFu;
}
static inline uint32_t a2_geo(a2v t, int32_t base, const int ni, a2i *j, a2v *u)
{
    return a2_geo1(t.a, base, ni, &j->a, &u->a) | a2_geo1(t.b, base, ni, &j->b, &u->b) << 8;
}
/* c[3] u^3 + ... + c[0] by Horner, as pertoken_body.h's vpoly */
static inline __m256 a2_horner(const __m256 *c, __m256 u)
{
    return _mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_fmadd_ps(c[3], u, c[2]), u, c[1]), u, c[0]);
}
/* The polynomial of 8 tokens' intervals (T->row: byte offsets 16 j in q)
 * at u: their rows, two tokens (k, k + 4) to a register, transposed in
 * each 128-bit half into c[d] = T->coef[d][j] (4 gathers cost more). Each
 * half of a vector of 16 tokens goes through this in turn (fewer registers
 * live at once). */
static inline __m256 a2_pair(const char *r, int32_t q0, int32_t q1)
{
    return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps((const float *)(r + q0))),
                                _mm_loadu_ps((const float *)(r + q1)), 1);
}
static inline __m256 a2_poly1(const asn_nn_ptfast *T, __m256i j, __m256 u)
{
    /* the offsets two to a 64-bit register (a store read back 4 bytes at a
     * time waits on store forwarding) */
    const __m128i jl = _mm256_castsi256_si128(j), jh = _mm256_extracti128_si256(j, 1);
    const uint64_t e0 = (uint64_t)_mm_cvtsi128_si64(jl), e1 = (uint64_t)_mm_extract_epi64(jl, 1),
                   e2 = (uint64_t)_mm_cvtsi128_si64(jh), e3 = (uint64_t)_mm_extract_epi64(jh, 1);
    const int32_t q[8] = {(int32_t)(uint32_t)e0, (int32_t)(e0 >> 32), (int32_t)(uint32_t)e1, (int32_t)(e1 >> 32),
                          (int32_t)(uint32_t)e2, (int32_t)(e2 >> 32), (int32_t)(uint32_t)e3, (int32_t)(e3 >> 32)};
    const char *r = (const char *)T->row;
    const __m256 a0 = a2_pair(r, q[0], q[4]), a1 = a2_pair(r, q[1], q[5]), a2 = a2_pair(r, q[2], q[6]),
                 a3 = a2_pair(r, q[3], q[7]);
    const __m256 t0 = _mm256_unpacklo_ps(a0, a1), t1 = _mm256_unpacklo_ps(a2, a3), t2 = _mm256_unpackhi_ps(a0, a1),
                 t3 = _mm256_unpackhi_ps(a2, a3);
    const __m256 c[4] = {_mm256_shuffle_ps(t0, t1, _MM_SHUFFLE(1, 0, 1, 0)), _mm256_shuffle_ps(t0, t1, _MM_SHUFFLE(3, 2, 3, 2)),
                         _mm256_shuffle_ps(t2, t3, _MM_SHUFFLE(1, 0, 1, 0)), _mm256_shuffle_ps(t2, t3, _MM_SHUFFLE(3, 2, 3, 2))};
    return a2_horner(c, u);
}
static inline __m256 a2_lut8(const float *tab, __m256i j) { return _mm256_permutevar8x32_ps(_mm256_loadu_ps(tab), j); }
/* 1 if all 8 offsets q (16 j) are in the last n of ni intervals */
static inline int a2_all_last(__m256i q, int ni, int n)
{
    return _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(q, _mm256_set1_epi32((ni - n) * 16 - 1)))) == 0xFF;
}
/* The same where all 8 tokens are in the last 16 intervals, as nearly all
 * are in the usual row (its bulk lies far below the maximum): c[d] by
 * 8-entry lookups (vpermps reads the low 3 bits of each index), one where
 * all are in the last 8 intervals, else two and a blend on bit 3 of j; no
 * row loads and no transposition. Else a2_poly1. */
static inline __m256 a2_poly8(const asn_nn_ptfast *T, __m256i q, __m256 u, const int ni)
{
    const __m256i j = _mm256_srli_epi32(q, 4);
    __m256 c[ASN_NN_PTFAST_DEG + 1];
    if (a2_all_last(q, ni, 8)) {
        for (int d = 0; d <= ASN_NN_PTFAST_DEG; d++)
            c[d] = a2_lut8(T->coef[d] + ni - 8, j);
        return a2_horner(c, u);
    }
    if (a2_all_last(q, ni, 16)) {
        const __m256 hi = _mm256_castsi256_ps(_mm256_slli_epi32(q, 24)); /* bit 3 of j as the sign */
        for (int d = 0; d <= ASN_NN_PTFAST_DEG; d++)
            c[d] = _mm256_blendv_ps(a2_lut8(T->coef[d] + ni - 16, j), a2_lut8(T->coef[d] + ni - 8, j), hi);
        return a2_horner(c, u);
    }
    return a2_poly1(T, q, u);
}
static inline a2v a2_poly(const asn_nn_ptfast *T, a2i j, a2v u, const int ni)
{
    return (a2v){a2_poly8(T, j.a, u.a, ni), a2_poly8(T, j.b, u.b, ni)};
}
#define vgeo a2_geo
#define vpoly a2_poly
#define vset a2_set
#define vadd a2_add
#define vsub a2_sub
#define vmul a2_mul
#define vdiv a2_div
#define vfma a2_fma
#define vmin a2_min
#define vmax a2_max
#define vclamp170(x) a2_min(a2_max(x, a2_set(-170.0f)), a2_set(170.0f))
#define vround a2_round
#define vscale a2_scale
#define vscale_normal a2_scale_normal
#define vkeep_ge a2_keep_ge
#define vsel_gt a2_sel_gt
#define vneg a2_neg
#define vabs a2_abs
#define vpow2t a2_pow2t
#define vmask_gt a2_mask_gt
#define vmask_nlt a2_mask_nlt
#define vloadn a2_load
#define vstoren a2_store
#include "learn/pertoken_body.h"
#pragma GCC pop_options

/* ---------------------------------------------------------------- AVX-512 */

/* Two 16-float registers per vector: 32 tokens, their chains interleaved
 * (one vector's chain of dependent steps is too long for the processor to
 * overlap the next one's on its own). */
#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq")
typedef struct a5v {
    __m512 a, b;
} a5v;
#define V a5v
#define VL 32
#define SFX(name) name##_avx512
#define A5_1(f, x) ((a5v){f((x).a), f((x).b)})
#define A5_2(f, x, y) ((a5v){f((x).a, (y).a), f((x).b, (y).b)})
#define A5_3(f, x, y, z) ((a5v){f((x).a, (y).a, (z).a), f((x).b, (y).b, (z).b)})
static inline a5v a5_set(float x) { return (a5v){_mm512_set1_ps(x), _mm512_set1_ps(x)}; }
static inline a5v a5_add(a5v x, a5v y) { return A5_2(_mm512_add_ps, x, y); }
static inline a5v a5_sub(a5v x, a5v y) { return A5_2(_mm512_sub_ps, x, y); }
static inline a5v a5_mul(a5v x, a5v y) { return A5_2(_mm512_mul_ps, x, y); }
static inline a5v a5_div(a5v x, a5v y) { return A5_2(_mm512_div_ps, x, y); }
static inline a5v a5_fma(a5v x, a5v y, a5v z) { return A5_3(_mm512_fmadd_ps, x, y, z); }
static inline a5v a5_min(a5v x, a5v y) { return A5_2(_mm512_min_ps, x, y); }
static inline a5v a5_max(a5v x, a5v y) { return A5_2(_mm512_max_ps, x, y); }
static inline __m512 a5_round1(__m512 x) { return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
static inline a5v a5_round(a5v x) { return A5_1(a5_round1, x); }
/* min(max(x, -170), 170) in one step: the smaller magnitude of x and 170,
 * with x's sign */
static inline __m512 a5_clamp1(__m512 x) { return _mm512_range_ps(x, _mm512_set1_ps(170.0f), 2); }
static inline a5v a5_clamp170(a5v x) { return A5_1(a5_clamp1, x); }
static inline a5v a5_scale(a5v p, a5v n) { return A5_2(_mm512_scalef_ps, p, n); }
static inline __m512 a5_keep_ge1(__m512 x, __m512 t, float lo)
{
    return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(t, _mm512_set1_ps(lo), _CMP_GE_OQ), x);
}
static inline a5v a5_keep_ge(a5v x, a5v t, float lo) { return (a5v){a5_keep_ge1(x.a, t.a, lo), a5_keep_ge1(x.b, t.b, lo)}; }
static inline __m512 a5_sel_gt1(__m512 a, __m512 c, __m512 x, __m512 y)
{
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, c, _CMP_GT_OQ), y, x);
}
static inline a5v a5_sel_gt(a5v a, a5v c, a5v x, a5v y) { return (a5v){a5_sel_gt1(a.a, c.a, x.a, y.a), a5_sel_gt1(a.b, c.b, x.b, y.b)}; }
static inline __m512 a5_xor1(__m512 x, int32_t b) { return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(x), _mm512_set1_epi32(b))); }
static inline __m512 a5_and1(__m512 x, int32_t b) { return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(b))); }
static inline a5v a5_neg(a5v x) { return (a5v){a5_xor1(x.a, (int32_t)0x80000000), a5_xor1(x.b, (int32_t)0x80000000)}; }
static inline a5v a5_abs(a5v x) { return (a5v){a5_and1(x.a, 0x7fffffff), a5_and1(x.b, 0x7fffffff)}; }
static inline __m512 a5_pow2t1(__m512 n)
{
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(_mm512_cvttps_epi32(n), _mm512_set1_epi32(127)), 23));
}
static inline a5v a5_pow2t(a5v n) { return A5_1(a5_pow2t1, n); }
static inline uint32_t a5_mask_gt(a5v a, a5v c)
{
    return (uint32_t)_mm512_cmp_ps_mask(a.a, c.a, _CMP_GT_OQ) | (uint32_t)_mm512_cmp_ps_mask(a.b, c.b, _CMP_GT_OQ) << 16;
}
static inline uint32_t a5_mask_nlt(a5v a, a5v c)
{
    return (uint32_t)_mm512_cmp_ps_mask(a.a, c.a, _CMP_NLT_UQ) | (uint32_t)_mm512_cmp_ps_mask(a.b, c.b, _CMP_NLT_UQ) << 16;
}
static inline __mmask16 a5_mask(int k) { return (__mmask16)(k >= 16 ? 0xffff : k <= 0 ? 0 : (1u << k) - 1); }
static inline a5v a5_load(const float *p, int k)
{
    return (a5v){_mm512_maskz_loadu_ps(a5_mask(k), p), _mm512_maskz_loadu_ps(a5_mask(k - 16), p + 16)};
}
static inline void a5_store(float *p, a5v v, int k)
{
    _mm512_mask_storeu_ps(p, a5_mask(k), v.a);
    _mm512_mask_storeu_ps(p + 16, a5_mask(k - 16), v.b);
}
typedef struct a5i {
    __m512i a, b;
} a5i;
#define VI a5i
static inline uint32_t a5_geo1(__m512 t, int32_t base, const int ni, __m512i *j, __m512 *u)
{
    const int ob = asn_nn_ptfast_ob(ni);
    __m512i b = _mm512_castps_si512(t);
    __m512i jr = _mm512_sub_epi32(_mm512_srli_epi32(b, 23 - ob), _mm512_set1_epi32(base));
    *j = jr; /* the lookups (a5_lut_1) read its low 5 or 6 bits only */
    __m512i f = _mm512_or_si512(_mm512_and_si512(_mm512_slli_epi32(b, ob), _mm512_set1_epi32(0x7FFFFF)),
                                _mm512_set1_epi32(0x3F800000));
    *u = _mm512_sub_ps(_mm512_castsi512_ps(f), _mm512_set1_ps(1.0f));
    return _mm512_test_epi32_mask(jr, _mm512_set1_epi32(~(ni - 1)));
}
static inline uint32_t a5_geo(a5v t, int32_t base, const int ni, a5i *j, a5v *u)
{
    return a5_geo1(t.a, base, ni, &j->a, &u->a) | a5_geo1(t.b, base, ni, &j->b, &u->b) << 16;
}
/* 32 intervals: one 32-entry permute (vpermi2ps); 64: two, the one of bit
 * 5 of the index kept */
static inline __m512 a5_lut_1(const float *tab, __m512i j, const int ni)
{
    if (ni == 32)
        return _mm512_permutex2var_ps(_mm512_loadu_ps(tab), j, _mm512_loadu_ps(tab + 16));
    __m512 lo = _mm512_permutex2var_ps(_mm512_loadu_ps(tab), j, _mm512_loadu_ps(tab + 16));
    __m512 hi = _mm512_permutex2var_ps(_mm512_loadu_ps(tab + 32), j, _mm512_loadu_ps(tab + 48));
    return _mm512_mask_blend_ps(_mm512_test_epi32_mask(j, _mm512_set1_epi32(32)), lo, hi);
}
static inline a5v a5_lut(const float *tab, a5i j, const int ni) { return (a5v){a5_lut_1(tab, j.a, ni), a5_lut_1(tab, j.b, ni)}; }
#define vgeo a5_geo
#define vlut a5_lut
#define vset a5_set
#define vadd a5_add
#define vsub a5_sub
#define vmul a5_mul
#define vdiv a5_div
#define vfma a5_fma
#define vmin a5_min
#define vmax a5_max
#define vclamp170 a5_clamp170
#define vround a5_round
#define vscale a5_scale
#define vkeep_ge a5_keep_ge
#define vsel_gt a5_sel_gt
#define vneg a5_neg
#define vabs a5_abs
#define vpow2t a5_pow2t
#define vmask_gt a5_mask_gt
#define vmask_nlt a5_mask_nlt
#define vloadn a5_load
#define vstoren a5_store
#include "learn/pertoken_body.h"
#pragma GCC pop_options
#endif

/* ---------------------------------------------------------------- dispatch */

/* The best level the CPU runs, found once (pthread_once: every worker of a
 * batch asks); the level a test forces is read and written atomically. */
static int pt_forced = -1, pt_best;
static pthread_once_t pt_once = PTHREAD_ONCE_INIT;

static void pt_choose(void)
{
#ifdef PT_X86
    pt_best = asn_cpu_has(ASN_CPU_AVX512F | ASN_CPU_AVX512DQ) ? 2 : asn_cpu_has(ASN_CPU_AVX2 | ASN_CPU_FMA) ? 1 : 0;
#else
    pt_best = 0;
#endif
}

/* fn's copy for the level asn_nn_pertoken_level picks, on the arguments */
#ifdef PT_X86
#define PT_RUN(fn, ...)                                                                                  \
    do {                                                                                                 \
        switch (asn_nn_pertoken_level()) {                                                               \
        case 2: fn##_avx512(__VA_ARGS__); break;                                                         \
        case 1: fn##_avx2(__VA_ARGS__); break;                                                           \
        default: fn##_generic(__VA_ARGS__); break;                                                       \
        }                                                                                                \
    } while (0)
#else
#define PT_RUN(fn, ...) fn##_generic(__VA_ARGS__)
#endif

void asn_nn_pertoken_force(int level) { __atomic_store_n(&pt_forced, level, __ATOMIC_RELAXED); }

int asn_nn_pertoken_level(void)
{
    pthread_once(&pt_once, pt_choose);
    int forced = __atomic_load_n(&pt_forced, __ATOMIC_RELAXED);
    return forced >= 0 && forced < pt_best ? forced : pt_best;
}

size_t asn_nn_pertoken_size(const asn_nn_pertoken *f)
{
    return f->H ? 2 * (size_t)f->H + 2 * (size_t)f->m->inner : 4 * (size_t)f->m->inner;
}

void asn_nn_pertoken_prepare(asn_nn_pertoken *f, float *w)
{
    const asn_nn_mlp *m = f->m;
    int NI = m->inner, H = f->H;
    if (!H) {
        for (int j = 0; j < NI; j++) {
            w[j] = -m->wg[j];
            w[NI + j] = -m->bg[j];
            w[2 * NI + j] = -m->wu[j];
            w[3 * NI + j] = -m->bu[j];
        }
    } else {
        for (int h = 0; h < H; h++) {
            w[h] = -f->w1[h];
            w[H + h] = -f->b1[h];
        }
        for (int j = 0; j < NI; j++) {
            w[2 * H + j] = -f->bias_g[j];
            w[2 * H + NI + j] = -f->bias_u[j];
        }
    }
    f->neg = w;
}

void asn_nn_pertoken_forward(float *out, float *lp, const float *x, const asn_nn_pertoken *f, int n)
{
    if (n <= 0)
        return;
    PT_RUN(pt_forward, out, lp, x, f, f->neg, n);
}

void asn_nn_pertoken_elu1(float *out, const float *x, int n)
{
    if (n <= 0)
        return;
    PT_RUN(pt_elu1_ref, out, x, n);
}

void asn_nn_pertoken_trunc(float *out, const float *l, float scale, float thr, int n)
{
    if (n <= 0)
        return;
    PT_RUN(pt_trunc_ref, out, l, scale, thr, n);
}

void asn_nn_pertoken_trunc_fast(float *out, const float *l, float scale, float thr, int n)
{
    if (n <= 0)
        return;
    PT_RUN(pt_trunc_fast, out, l, scale, thr, n);
}

void asn_nn_pertoken_scan(const float *x, int n, float *max, float *min, int64_t *count, int *bad)
{
    PT_RUN(pt_scan, x, n, max, min, count, bad);
}

void asn_nn_pertoken_expsum(const float *x, int n, float m, double *sum, double *wsum)
{
    PT_RUN(pt_expsum, x, n, m, sum, wsum);
}

/* ------------------------------------------------------------- fast pass */

_Static_assert(ASN_NN_PTFAST_DEG == 3, "the AVX2 lookup (a2_poly1) transposes rows of 4 coefficients");

/* The nodes u_i = (1 - cos(pi i / DEG)) / 2 (Chebyshev-Lobatto on [0, 1])
 * and the inverse of their Vandermonde matrix: coef_k = sum_i inv[k][i]
 * y_i. Computed once, in double (ptf_nodes_once). */
static double ptf_u[ASN_NN_PTFAST_DEG + 1], ptf_inv[ASN_NN_PTFAST_DEG + 1][ASN_NN_PTFAST_DEG + 1];
static pthread_once_t ptf_once = PTHREAD_ONCE_INIT;
static void ptf_nodes(double *u, double inv[ASN_NN_PTFAST_DEG + 1][ASN_NN_PTFAST_DEG + 1])
{
    enum { N = ASN_NN_PTFAST_DEG + 1 };
    double a[N][2 * N];
    for (int i = 0; i < N; i++)
        u[i] = i == 0 ? 0.0 : i == N - 1 ? 1.0 : 0.5 * (1.0 - cos(M_PI * i / (N - 1)));
    for (int i = 0; i < N; i++)
        for (int k = 0; k < 2 * N; k++)
            a[i][k] = k < N ? pow(u[i], k) : (k - N == i);
    for (int c = 0; c < N; c++) { /* Gauss-Jordan, partial pivoting */
        int p = c;
        for (int r = c + 1; r < N; r++)
            if (fabs(a[r][c]) > fabs(a[p][c]))
                p = r;
        for (int k = 0; k < 2 * N; k++) {
            double t = a[c][k];
            a[c][k] = a[p][k];
            a[p][k] = t;
        }
        double d = a[c][c];
        for (int k = 0; k < 2 * N; k++)
            a[c][k] /= d;
        for (int r = 0; r < N; r++)
            if (r != c) {
                double m = a[r][c];
                for (int k = 0; k < 2 * N; k++)
                    a[r][k] -= m * a[c][k];
            }
    }
    /* a = [I | V^-1], V[i][k] = u_i^k: coef = V^-1 y */
    for (int k = 0; k < N; k++)
        for (int i = 0; i < N; i++)
            inv[k][i] = a[k][N + i];
}
static void ptf_nodes_once(void) { ptf_nodes(ptf_u, ptf_inv); }


/* The power of two c where the intervals start (t = c) */
static double ptf_c(const asn_nn_ptfast *T)
{
    uint32_t cb = (uint32_t)T->ibase << (23 - T->ob);
    float c;
    memcpy(&c, &cb, sizeof c);
    return c;
}

double asn_nn_ptfast_x(const asn_nn_ptfast *T, int j, double u)
{
    const int per = 1 << T->ob;
    double c = ptf_c(T), w = ldexp(c, j / per) / per, t0 = ldexp(c, j / per) + (j % per) * w;
    return (double)T->K - (t0 + u * w);
}

int asn_nn_ptfast_nodes(asn_nn_ptfast *T, float xmax, float xmin, float head, int ni, float *xn)
{
    enum { D = ASN_NN_PTFAST_DEG, OCT = 4 }; /* 4 octaves of t */
    T->ni = ni == 32 ? 32 : 64;
    T->ob = asn_nn_ptfast_ob(T->ni);
    double range = (double)xmax - (double)xmin;
    float c = 1.0f / 64;
    while ((double)((1 << OCT) - 1) * c < range - head && c < ASN_NN_PTFAST_CMAX)
        c *= 2;
    T->K = (xmax - head) + c;
    uint32_t cb;
    memcpy(&cb, &c, sizeof cb);
    T->ibase = (int32_t)(cb >> (23 - T->ob));
    pthread_once(&ptf_once, ptf_nodes_once);
    for (int j = 0; j < T->ni; j++)
        for (int i = 0; i < D + (j == T->ni - 1); i++)
            xn[j * D + i] = (float)asn_nn_ptfast_x(T, j, ptf_u[i]);
    return T->ni * D + 1;
}

double asn_nn_ptfast_poly(const asn_nn_ptfast *T, int j, double u)
{
    double p = T->coef[ASN_NN_PTFAST_DEG][j];
    for (int d = ASN_NN_PTFAST_DEG - 1; d >= 0; d--)
        p = p * u + T->coef[d][j];
    return p;
}

void asn_nn_ptfast_drop(asn_nn_ptfast *T, int j)
{
    for (int k = 0; k <= ASN_NN_PTFAST_DEG; k++)
        T->coef[k][j] = T->row[j][k] = NAN;
}

int asn_nn_ptfast_fit(asn_nn_ptfast *T, const float *yn)
{
    enum { D = ASN_NN_PTFAST_DEG };
    const int NI = T->ni;
    for (int i = 0; i < NI * D + 1; i++)
        if (!isfinite(yn[i]))
            return -1;
    pthread_once(&ptf_once, ptf_nodes_once);
    const double(*inv)[D + 1] = ptf_inv;
    for (int j = 0; j < NI; j++)
        for (int k = 0; k <= D; k++) {
            double s = 0;
            for (int i = 0; i <= D; i++)
                s += inv[k][i] * yn[j * D + i];
            T->coef[k][j] = (float)s;
        }
    for (int j = 0; j < NI; j++)
        for (int k = 0; k <= D; k++)
            T->row[j][k] = T->coef[k][j];
    return 0;
}

/* midway between the nodes 0, 1/4, 3/4, 1 */
static const double ptf_mid[ASN_NN_PTFAST_DEG] = {0.125, 0.5, 0.875};

double asn_nn_ptfast_mid_x(const asn_nn_ptfast *T, int j, int q) { return asn_nn_ptfast_x(T, j, ptf_mid[q]); }

int asn_nn_ptfast_strays(const asn_nn_ptfast *T, int j, const double *y, double tol)
{
    for (int q = 0; q < ASN_NN_PTFAST_DEG; q++)
        if (!(fabs(asn_nn_ptfast_poly(T, j, ptf_mid[q]) - y[q]) <= tol * fmax(1.0, fabs(y[q]))))
            return 1;
    return 0;
}

int asn_nn_pertoken_fast_setup(asn_nn_ptfast *T, const asn_nn_pertoken *f, float xmax, float xmin)
{
    /* 32 intervals, kept when within COARSE_TOL of the kernel midway
     * between their nodes */
    enum { D = ASN_NN_PTFAST_DEG };
    float xn[ASN_NN_PTFAST_NODES], yn[ASN_NN_PTFAST_NODES];
    int nn = asn_nn_ptfast_nodes(T, xmax, xmin, ASN_NN_PTFAST_HEAD, 32, xn);
    asn_nn_pertoken_forward(yn, NULL, xn, f, nn);
    if (asn_nn_ptfast_fit(T, yn) == 0) {
        for (int j = 0; j < 32; j++)
            for (int q = 0; q < D; q++)
                xn[D * j + q] = (float)asn_nn_ptfast_mid_x(T, j, q);
        asn_nn_pertoken_forward(yn, NULL, xn, f, D * 32);
        int ok = 1;
        for (int j = 0; j < 32 && ok; j++) {
            double y[D];
            for (int q = 0; q < D; q++)
                y[q] = yn[D * j + q];
            ok = !asn_nn_ptfast_strays(T, j, y, ASN_NN_PTFAST_COARSE_TOL);
        }
        if (ok)
            return 0;
    }
    nn = asn_nn_ptfast_nodes(T, xmax, xmin, ASN_NN_PTFAST_HEAD, 64, xn);
    asn_nn_pertoken_forward(yn, NULL, xn, f, nn);
    return asn_nn_ptfast_fit(T, yn);
}

void asn_nn_pertoken_fast_forward(float *out, const float *x, const asn_nn_pertoken *f, const asn_nn_ptfast *T, int n)
{
    if (n <= 0)
        return;
    PT_RUN(pt_fast, out, x, f, T, n);
}

int asn_nn_ptfast_eval(float *out, const float *x, const asn_nn_ptfast *T, int n, int32_t *rest, float *rest_x)
{
    if (n <= 0)
        return 0;
#ifdef PT_X86
    switch (asn_nn_pertoken_level()) {
    case 2:
        return pt_poly_rest_avx512(out, x, T, n, rest, rest_x);
    case 1:
        return pt_poly_rest_avx2(out, x, T, n, rest, rest_x);
    default:
        break;
    }
#endif
    return pt_poly_rest_generic(out, x, T, n, rest, rest_x);
}
