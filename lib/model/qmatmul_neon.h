/* qmatmul_neon.h — what qmatmul.c hands its aarch64 NEON kernels
 * (qmatmul_neon.c): one product's operands and one thread's scratch, as
 * qmatmul.c lays them out. */
#ifndef ASN_QMATMUL_NEON_H
#define ASN_QMATMUL_NEON_H

#include <stddef.h>
#include <stdint.h>

enum { QN_ROWS = 8 }; /* rows per block: qmatmul.c's ROWS */

typedef struct qn_job {
    uint32_t type;
    int T, K, N, S, nsb;
    const uint8_t *W; /* N packed rows of row_bytes */
    size_t row_bytes;
    /* the quantized activations: q[t * K + k], bs[t * K / 16 + h],
     * dx[b * T + t], bsum[b * T + t] */
    const int8_t *q;
    const int16_t *bs;
    const float *dx;
    const int32_t *bsum;
    const float *bias; /* NULL: none */
    float *Y;
    int ldy;
    /* the thread's scratch: w[QN_ROWS][K], sc and mn [QN_ROWS][K / 16],
     * D and Dm [nsb][QN_ROWS] */
    int8_t *w;
    int16_t *sc, *mn;
    float *D, *Dm;
} qn_job;

/* Rows r0 .. r0 + QN_ROWS - 1 (those below N) of Y for every token, with
 * the dot-product instructions (dot = 1, CPUs with ASN_CPU_DOTPROD only)
 * or plain NEON (dot = 0). */
void qn_block(const qn_job *j, int r0, int dot);

#endif
