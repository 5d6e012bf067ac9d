/* matmul_neon.h — matmul.c's f32 kernel for aarch64 (matmul_neon.c). */
#ifndef ASN_MATMUL_NEON_H
#define ASN_MATMUL_NEON_H

/* Y[t * ldy + r] = dot(X row t, W row r) (+ bias[r]) for t < T, r < nrows,
 * in asn/linalg.h's order with fused multiply-adds. */
void mm_neon_block(const float *X, int T, int ldx, int K, const float *W, int ldw, int nrows,
                   const float *bias, float *Y, int ldy);
/* The dot product of two vectors in the same order. */
float mm_neon_dot(const float *a, const float *b, int K);

#endif
