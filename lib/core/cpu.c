/* cpu.c — CPU feature detection (asn/cpu.h). */
#include "asn/cpu.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>

static unsigned features;

static void detect(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid_count(1, 0, &a, &b, &c, &d))
        return;
    int fma = c >> 12 & 1, osxsave = c >> 27 & 1, f16c = c >> 29 & 1;
    if (!osxsave)
        return;
    unsigned lo, hi;
    __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    int ymm = (lo & 6) == 6, zmm = (lo & 0xe6) == 0xe6; /* SSE, AVX, opmask and ZMM state */
    if (!ymm || !__get_cpuid_count(7, 0, &a, &b, &c, &d))
        return;
    unsigned f = 0;
    if (b >> 5 & 1)
        f |= ASN_CPU_AVX2;
    if (fma)
        f |= ASN_CPU_FMA;
    if (f16c)
        f |= ASN_CPU_F16C;
    if (b >> 8 & 1)
        f |= ASN_CPU_BMI2;
    if (zmm) {
        if (b >> 16 & 1)
            f |= ASN_CPU_AVX512F;
        if (b >> 17 & 1)
            f |= ASN_CPU_AVX512DQ;
        if (b >> 30 & 1)
            f |= ASN_CPU_AVX512BW;
        if (b >> 31 & 1)
            f |= ASN_CPU_AVX512VL;
        if (c >> 11 & 1)
            f |= ASN_CPU_AVX512VNNI;
    }
    if (__get_cpuid_count(7, 1, &a, &b, &c, &d) && (a >> 4 & 1))
        f |= ASN_CPU_AVXVNNI;
    features = f;
}

/* ASN_CPU=avx2 | avxvnni | base: report no more than that level, so that
 * one machine measures and tests what a smaller CPU runs (every kernel
 * choice reads this detector). */
static void detect_capped(void)
{
    detect();
    const char *cap = getenv("ASN_CPU");
    if (!cap)
        return;
    if (!strcmp(cap, "avx2"))
        features &= ASN_CPU_V3;
    else if (!strcmp(cap, "avxvnni"))
        features &= ASN_CPU_V3 | ASN_CPU_AVXVNNI;
    else if (!strcmp(cap, "base"))
        features = 0;
}

unsigned asn_cpu_features(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, detect_capped);
    return features;
}
#elif defined(__aarch64__)
#if defined(__linux__)
#include <sys/auxv.h>
#endif

/* The bits of AT_HWCAP (the Linux kernel's arch/arm64 uapi hwcap.h). */
enum { HWCAP_BIT_ASIMD = 1 << 1, HWCAP_BIT_ASIMDDP = 1 << 20 };

static unsigned features;

static void detect(void)
{
#if defined(__linux__)
    unsigned long h = getauxval(AT_HWCAP);
    if (h & HWCAP_BIT_ASIMD)
        features |= ASN_CPU_NEON;
    if (h & HWCAP_BIT_ASIMDDP)
        features |= ASN_CPU_DOTPROD;
#else
    features = ASN_CPU_NEON; /* part of every aarch64 ABI */
#if defined(__ARM_FEATURE_DOTPROD)
    features |= ASN_CPU_DOTPROD;
#endif
#endif
}

unsigned asn_cpu_features(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, detect);
    return features;
}
#else
unsigned asn_cpu_features(void) { return 0; }
#endif
