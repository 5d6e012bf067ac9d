/* transpose8.h — the 8 x 8 transpose of eight 256-bit vectors of 32-bit
 * lanes (f32 in matmul.c's packs, int16 pairs in qmatmul.c's panels),
 * written with generic vector shuffles so that any target compiles it. */
#ifndef ASN_MODEL_TRANSPOSE8_H
#define ASN_MODEL_TRANSPOSE8_H

typedef float v8 __attribute__((vector_size(32)));

/* r[i][j] becomes r[j][i]. */
static inline __attribute__((always_inline)) void transpose8(v8 r[8])
{
    v8 t[8], u[8];
    _Pragma("GCC unroll 4") for (int i = 0; i < 8; i += 2) {
        t[i] = __builtin_shufflevector(r[i], r[i + 1], 0, 8, 1, 9, 4, 12, 5, 13);
        t[i + 1] = __builtin_shufflevector(r[i], r[i + 1], 2, 10, 3, 11, 6, 14, 7, 15);
    }
    _Pragma("GCC unroll 2") for (int i = 0; i < 8; i += 4)
        _Pragma("GCC unroll 2") for (int h = 0; h < 2; h++) {
            u[i + h * 2] = __builtin_shufflevector(t[i + h], t[i + h + 2], 0, 1, 8, 9, 4, 5, 12, 13);
            u[i + h * 2 + 1] = __builtin_shufflevector(t[i + h], t[i + h + 2], 2, 3, 10, 11, 6, 7, 14, 15);
        }
    /* u[c], c < 4: columns c and c + 4 of rows 0-3; u[4 + c]: of rows 4-7 */
    _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++) {
        r[c] = __builtin_shufflevector(u[c], u[c + 4], 0, 1, 2, 3, 8, 9, 10, 11);
        r[c + 4] = __builtin_shufflevector(u[c], u[c + 4], 4, 5, 6, 7, 12, 13, 14, 15);
    }
}

#endif
