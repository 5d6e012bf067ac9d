/* asn/linalg.h — the matrix product of inference, Y = X W^T, with a fixed
 * summation order per output element.
 *
 * BLAS libraries (OpenBLAS included) sum a row's
 * dot products in an order that depends on how many rows are in the batch
 * and on the thread count, so a sequence's logits would change with the
 * batch it happens to share. Here every output is
 *     sum over k in steps of 16 of 16 lane-wise partial sums,
 *     lanes added in a fixed binary tree,
 * whatever T, N, the thread count or the SIMD width: a sequence's logits are
 * bit-identical alone or in any batch. Quantized weights are dequantized a
 * block of rows at a time into f32 and multiplied the same way, so results
 * equal those of the dequantized F32 model exactly.
 *
 * Each kernel variant (ASN_MATMUL_KERNEL=avx512|avx2|neon|base) holds a 16-lane
 * sum in vectors of its own width: one AVX-512 register, two AVX2 halves,
 * four SSE2 (or NEON) quarters. The lanes and the tree are the same, so
 * avx512 and avx2 agree bit for bit and base differs only in rounding each
 * product apart (no FMA, below); test_matmul.c checks each variant against
 * a scalar model of the order.
 *
 * Multiply-adds are fused (FMA) on machines that have it (every x86-64-v3
 * CPU); a machine without FMA computes the same order unfused, so bits can
 * differ between such machines, never within one. */
#ifndef ASN_LINALG_H
#define ASN_LINALG_H

#include <stddef.h>
#include <stdint.h>

#include "asn/pool.h"

/* Y[t * ldy + r] = sum_k X[t * ldx + k] * W_r[k] (+ bias[r]) for t < T, r < N.
 * W holds N rows of K elements of ggml type wtype (row r at byte offset
 * r * row_bytes); bias may be NULL. Rows are split across the pool. */
void asn_matmul(asn_pool *pool, const float *X, int T, int ldx, int K, const void *W,
                uint32_t wtype, int N, const float *bias, float *Y, int ldy);

/* The same for f32 W with row stride ldw, in the calling thread. */
void asn_matmul_f32(const float *X, int T, int ldx, int K, const float *W, int ldw, int N, float *Y, int ldy);

/* The dot product of two f32 vectors in the order above. */
float asn_dot(const float *a, const float *b, int K);

/* out[i * ldo + j] = asn_dot(row i of X, column j of Wt) for i < nt, j < 16,
 * bit for bit, where X has row stride ldx and Wt is K rows of 16 floats
 * (Wt[k * 16 + j]): sixteen fixed-order dot products per token, a few
 * tokens sharing each load of Wt (attention's scores of a group of tokens
 * against a page of keys stored transposed). */
void asn_dot_cols16(const float *X, int ldx, int nt, int K, const float *Wt, float *out, int ldo);

/* The same product for quantized W in integer arithmetic (qmatmul.c): X is
 * quantized to 8 bits per block of W's super-block, W is never expanded to
 * f32. Each output has its own fixed order of float operations, so results
 * are bit-identical whatever T, N, the thread count or the kernel variant;
 * they differ from asn_matmul's by the activations' rounding (as
 * llama.cpp's quantized products do). Returns -1 (nothing computed) when
 * the type has no integer kernel or K is not a multiple of its super-block. */
int asn_qmatmul(asn_pool *pool, const float *X, int T, int ldx, int K, const void *W, uint32_t wtype,
                int N, const float *bias, float *Y, int ldy);
/* 1 if asn_qmatmul computes W of this type with K columns. */
int asn_qmatmul_supported(uint32_t wtype, int K);
/* The name of the f32 kernel this machine runs ("avx512", "avx2", "neon",
 * "base"; ASN_MATMUL_KERNEL forces one); "avx512+xpacked" where the AVX-512
 * outer products over packed tokens were timed at least as fast as the
 * AVX-512 tiles and take from 16 tokens on (the same bits). */
const char *asn_matmul_kernel(void);
/* The name of the integer kernel this machine runs ("avx512vnni",
 * "avx512", "avxvnni", "avx2", "neondot", "neon", "base";
 * ASN_MATMUL_KERNEL forces one). */
const char *asn_qmatmul_kernel(void);
/* Selects the integer kernel by name for the whole process (tests and
 * benchmarks compare them); -1 if this machine cannot run it. */
int asn_qmatmul_set_kernel(const char *name);

#endif
