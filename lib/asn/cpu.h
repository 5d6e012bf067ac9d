/* asn/cpu.h — what this CPU (and its operating system) can run, the one
 * detector every kernel choice reads. x86-64: CPUID for the instructions,
 * XGETBV for the registers the OS saves. aarch64: the kernel's hardware
 * capabilities (getauxval(AT_HWCAP) on Linux; elsewhere NEON, plus what the
 * compiler was told the target has). Other architectures report none. */
#ifndef ASN_CPU_H
#define ASN_CPU_H

enum {
    ASN_CPU_AVX2 = 1u << 0,
    ASN_CPU_FMA = 1u << 1,
    ASN_CPU_F16C = 1u << 2,
    ASN_CPU_BMI2 = 1u << 3,
    ASN_CPU_AVX512F = 1u << 4,
    ASN_CPU_AVX512BW = 1u << 5,
    ASN_CPU_AVX512VL = 1u << 6,
    ASN_CPU_AVX512DQ = 1u << 7,
    ASN_CPU_AVX512VNNI = 1u << 8,
    ASN_CPU_AVXVNNI = 1u << 9,
    ASN_CPU_NEON = 1u << 10,    /* aarch64 Advanced SIMD (HWCAP_ASIMD) */
    ASN_CPU_DOTPROD = 1u << 11, /* ARMv8.2 SDOT/UDOT (HWCAP_ASIMDDP) */
    /* the x86-64 levels the kernels are built for */
    ASN_CPU_V3 = ASN_CPU_AVX2 | ASN_CPU_FMA | ASN_CPU_F16C | ASN_CPU_BMI2,
    ASN_CPU_V4 = ASN_CPU_V3 | ASN_CPU_AVX512F | ASN_CPU_AVX512BW | ASN_CPU_AVX512VL | ASN_CPU_AVX512DQ,
};

/* The features (ASN_CPU_* bits), detected once; the environment variable
 * ASN_CPU=avx2, avxvnni or base caps them at that level. */
unsigned asn_cpu_features(void);
/* Whether every feature of mask is present. */
static inline int asn_cpu_has(unsigned mask) { return (asn_cpu_features() & mask) == mask; }

/* A function compiled three times, for the baseline, AVX2 and AVX-512,
 * the copy chosen by GCC's resolver when the program loads (not capped by
 * ASN_CPU): for loops whose every copy gives the same bits (IEEE +, -, *,
 * / and conversions only). Without GCC on x86-64, or under the sanitizers,
 * one copy. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#ifdef ASN_CLONES_AVX2_TOP /* a build that runs as an AVX2-only CPU would (benchmarks of that class) */
#define ASN_CLONES __attribute__((target_clones("default", "avx2")))
#else
#define ASN_CLONES __attribute__((target_clones("default", "avx2", "arch=x86-64-v4")))
#endif
#else
#define ASN_CLONES
#endif

#endif
