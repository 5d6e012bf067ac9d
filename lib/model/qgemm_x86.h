/* qgemm_x86.h — the batched integer product on x86 (prefill, several
 * streams): a panel of R rows of W against every token, one output per
 * vector lane. Included by qmatmul.c once per variant, with
 *     QG_SUFFIX  the name of the variant (avx2, avxvnni, avx512vnni)
 *     QG_L       rows per vector: 8 (256-bit) or 16 (512-bit)
 *     QG_VNNI    0: vpmaddubsw + vpmaddwd, 1: AVX-512 VNNI, 2: AVX-VNNI
 *     QG_NR      vectors of rows per tile (R = QG_NR * QG_L rows a panel)
 *     QG_NT      tokens per tile
 *     QG_TARGET  the target attribute of its functions
 *
 * The panel is repacked once (qg_repack) so that the four weights k..k+3
 * of the R rows are one vector per QG_L rows: a multiply-add of that
 * vector with a token's four quants k..k+3 broadcast to every lane adds to
 * each lane its own row's partial dot product. Each lane then holds the
 * exact integer I_b (and M_b) of its output at the end of a super-block,
 * with no horizontal sum, and the float steps of qmatmul.c's header run
 * lane by lane in the same order: the same bits as every other kernel.
 *
 * Weights are multiplied as unsigned bytes u = w + off where the type
 * allows it (vpdpbusd and vpmaddubsw take one unsigned operand), and the
 * offset's share, off * sum_h sc[h] * bs[h], is taken off the integer:
 * for unit scales it is off * bsum (the accumulator starts there), for
 * per-16 scales a dot product of the stored -off * sc[h] with the token's
 * per-16 sums. Without VNNI, the full-range signed types (Q8_0, IQ4_NL,
 * IQ4_XS) are multiplied in int16 instead: one vpmaddwd of a pair of
 * weights (times their scale) with a pair of quants. Keeping them signed
 * in bytes takes a vpsignb per product, as llama.cpp does, and on Zen 4
 * vpsignb competes with vpmaddubsw and vpmaddwd for their ports (a step of
 * 256 multiply-adds took 12.8 cycles with its 10 vpsignb, 8.1 without). */

#define QG_FN static inline __attribute__((always_inline, target(QG_TARGET)))
#define QG_CAT2(a, b) a##_##b
#define QG_CAT(a, b) QG_CAT2(a, b)
#define QG(name) QG_CAT(name, QG_SUFFIX)

#if QG_L == 16
typedef __m512i QG(vi);
typedef __m512 QG(vf);
#define QG_LOAD(p) _mm512_loadu_si512((const void *)(p))
#define QG_SET1(x) _mm512_set1_epi32(x)
#define QG_ZERO() _mm512_setzero_si512()
#define QG_ADD(a, b) _mm512_add_epi32(a, b)
#define QG_MULLO(a, b) _mm512_mullo_epi32(a, b)
#define QG_MADDUBS(a, b) _mm512_maddubs_epi16(a, b)
#define QG_DPBUSD(acc, a, b) _mm512_dpbusd_epi32(acc, a, b)
#define QG_DPWSSD(acc, a, b) _mm512_dpwssd_epi32(acc, a, b)
#define QG_FZERO() _mm512_setzero_ps()
#define QG_FSET1(x) _mm512_set1_ps(x)
#define QG_FLOAD(p) _mm512_loadu_ps(p)
#define QG_FMUL(a, b) _mm512_mul_ps(a, b)
#define QG_FADD(a, b) _mm512_add_ps(a, b)
#define QG_CVT(a) _mm512_cvtepi32_ps(a)
#define QG_FSTORE(p, a) _mm512_storeu_ps(p, a)
#else
typedef __m256i QG(vi);
typedef __m256 QG(vf);
#define QG_LOAD(p) _mm256_loadu_si256((const __m256i *)(const void *)(p))
#define QG_SET1(x) _mm256_set1_epi32(x)
#define QG_ZERO() _mm256_setzero_si256()
#define QG_ADD(a, b) _mm256_add_epi32(a, b)
#define QG_MULLO(a, b) _mm256_mullo_epi32(a, b)
#define QG_MADDUBS(a, b) _mm256_maddubs_epi16(a, b)
#define QG_DPBUSD(acc, a, b) _mm256_dpbusd_avx_epi32(acc, a, b)
#define QG_DPWSSD(acc, a, b) _mm256_dpwssd_avx_epi32(acc, a, b)
#define QG_FZERO() _mm256_setzero_ps()
#define QG_FSET1(x) _mm256_set1_ps(x)
#define QG_FLOAD(p) _mm256_loadu_ps(p)
#define QG_FMUL(a, b) _mm256_mul_ps(a, b)
#define QG_FADD(a, b) _mm256_add_ps(a, b)
#define QG_CVT(a) _mm256_cvtepi32_ps(a)
#define QG_FSTORE(p, a) _mm256_storeu_ps(p, a)
#endif

#define QG_R (QG_NR * QG_L)

/* acc + the int16 lanes of p times those of s, pairwise. */
QG_FN QG(vi) QG(madd)(QG(vi) acc, QG(vi) p, QG(vi) s)
{
#if QG_VNNI
    return QG_DPWSSD(acc, p, s);
#else
    return _mm256_add_epi32(acc, _mm256_madd_epi16(p, s)); /* without VNNI: the 256-bit variants only */
#endif
}

/* acc[v][i] += the products of quads k_lo .. k_hi - 1 of the super-block
 * (wq, its repacked weights; qb[i], token i's quants): with VNNI one
 * vpdpbusd each; without, the vpmaddubsw pairs widened against the scales
 * s (NULL: ones). */
QG_FN void QG(quads)(const int32_t *wq, const int8_t *const *qb, int k_lo, int k_hi, const QG(vi) *s,
                     QG(vi) acc[QG_NR][QG_NT])
{
#pragma GCC unroll 8
    for (int k4 = k_lo; k4 < k_hi; k4++) {
        QG(vi) w[QG_NR];
        for (int v = 0; v < QG_NR; v++)
            w[v] = QG_LOAD(wq + (size_t)k4 * QG_R + v * QG_L);
        for (int i = 0; i < QG_NT; i++) {
            QG(vi) x = QG_SET1(qg_ld32(qb[i] + 4 * k4));
            for (int v = 0; v < QG_NR; v++) {
#if QG_VNNI
                (void)s;
                acc[v][i] = QG_DPBUSD(acc[v][i], w[v], x);
#else
                acc[v][i] = QG(madd)(acc[v][i], QG_MADDUBS(w[v], x), s ? s[v] : QG_SET1(0x10001));
#endif
            }
        }
    }
}

#if !QG_VNNI
/* acc[v][i] += the products of the S / 2 pairs of a super-block in int16
 * (wq, its weights times their scales; qb[i], token i's quants). */
QG_FN void QG(pairs)(const int32_t *wq, const int16_t *const *qb, int S, QG(vi) acc[QG_NR][QG_NT])
{
#pragma GCC unroll 8
    for (int k2 = 0; k2 < S / 2; k2++) {
        QG(vi) w[QG_NR];
        for (int v = 0; v < QG_NR; v++)
            w[v] = QG_LOAD(wq + (size_t)k2 * QG_R + v * QG_L);
        for (int i = 0; i < QG_NT; i++) {
            QG(vi) x = QG_SET1(qg_ld32(qb[i] + 2 * k2));
            for (int v = 0; v < QG_NR; v++)
                acc[v][i] = QG(madd)(acc[v][i], w[v], x);
        }
    }
}
#endif

/* One tile: the QG_NR vectors of rows of the panel against tokens tk[]. */
QG_FN void QG(tile)(const qjob *j, const qpanel *p, const int *tk, uint32_t t, QG(vf) out[QG_NR][QG_NT])
{
    const int K = j->K, S = j->S, T = j->T;
    const qg_form f = qg_form_of(t, QG_VNNI);
    const int unit = k_unit(t), mins = has_min(t);
    const int8_t *qt[QG_NT];
    for (int i = 0; i < QG_NT; i++)
        qt[i] = j->a.q + (size_t)tk[i] * K;
    QG(vf) facc[QG_NR][QG_NT];
    for (int v = 0; v < QG_NR; v++)
        for (int i = 0; i < QG_NT; i++)
            facc[v][i] = QG_FZERO();
    for (int b = 0; b < j->nsb; b++) {
        QG(vi) acc[QG_NR][QG_NT];
        for (int i = 0; i < QG_NT; i++) {
            QG(vi) a0 = unit && f.off ? QG_SET1(-f.off * j->a.bsum[(size_t)b * T + tk[i]]) : QG_ZERO();
            for (int v = 0; v < QG_NR; v++)
                acc[v][i] = a0;
        }
        const int32_t *wq = (const int32_t *)p->wq + (size_t)b * (S / 4) * QG_R;
        const int8_t *qb[QG_NT]; /* the tokens' quants of this super-block */
        for (int i = 0; i < QG_NT; i++)
            qb[i] = qt[i] + (size_t)b * S;
        if (f.w16) {
#if !QG_VNNI
            const int16_t *qw[QG_NT];
            for (int i = 0; i < QG_NT; i++)
                qw[i] = j->a.q16 + (size_t)tk[i] * K + (size_t)b * S;
            QG(pairs)((const int32_t *)p->wq + (size_t)b * (S / 2) * QG_R, qw, S, acc);
#endif
        } else if (unit) {
            QG(quads)(wq, qb, 0, S / 4, NULL, acc);
        } else {
            const int32_t *scv = p->scv + (size_t)b * (S / 16) * QG_R;
#if QG_VNNI
            /* exact sums over each run of weights that share a scale (16,
             * or 32 where pairs of scales are equal), then one multiply
             * by the scale */
            const int G = f.g32 ? 2 : 1;
            for (int h = 0; h < S / 16; h += G) {
                QG(vi) tmp[QG_NR][QG_NT];
                for (int v = 0; v < QG_NR; v++)
                    for (int i = 0; i < QG_NT; i++)
                        tmp[v][i] = QG_ZERO();
                QG(quads)(wq, qb, 4 * h, 4 * (h + G), NULL, tmp);
                for (int v = 0; v < QG_NR; v++)
                    for (int i = 0; i < QG_NT; i++)
                        acc[v][i] = QG_ADD(acc[v][i], QG_MULLO(tmp[v][i], QG_LOAD(scv + (size_t)h * QG_R + v * QG_L)));
            }
#else
            for (int h = 0; h < S / 16; h++) {
                QG(vi) s[QG_NR];
                for (int v = 0; v < QG_NR; v++)
                    s[v] = QG_LOAD(scv + (size_t)h * QG_R + v * QG_L);
                QG(quads)(wq, qb, 4 * h, 4 * h + 4, s, acc);
            }
#endif
        }
        /* the offset's share or the mins (super-blocks of 256), then the
         * float steps, lane by lane */
        const int32_t *cv = p->cv + (size_t)b * 8 * QG_R;
        for (int i = 0; i < QG_NT; i++) {
            const int16_t *bs = j->a.bs + (size_t)tk[i] * (K / 16) + (size_t)b * 16;
            QG(vf) dx = QG_FSET1(j->a.dx[(size_t)b * T + tk[i]]);
            for (int v = 0; v < QG_NR; v++) {
                QG(vi) m = QG_SET1(mins && S == 32 ? j->a.bsum[(size_t)b * T + tk[i]] : 0);
                if (S == 256 && (f.cv || mins)) {
                    if (!mins)
                        m = acc[v][i];
                    for (int pp = 0; pp < 8; pp++)
                        m = QG(madd)(m, QG_LOAD(cv + (size_t)pp * QG_R + v * QG_L), QG_SET1(qg_ld32(bs + 2 * pp)));
                    if (!mins)
                        acc[v][i] = m;
                }
                QG(vf) d = QG_FMUL(QG_FLOAD(p->D + (size_t)b * QG_R + v * QG_L), dx);
                facc[v][i] = QG_FADD(facc[v][i], QG_FMUL(d, QG_CVT(acc[v][i])));
                if (mins) {
                    QG(vf) dm = QG_FMUL(QG_FLOAD(p->Dm + (size_t)b * QG_R + v * QG_L), dx);
                    facc[v][i] = QG_FADD(facc[v][i], QG_FMUL(dm, QG_CVT(m)));
                }
            }
        }
    }
    for (int v = 0; v < QG_NR; v++)
        for (int i = 0; i < QG_NT; i++)
            out[v][i] = facc[v][i];
}

/* Rows r0 .. r0 + R - 1 (fewer at the end of W) against every token. */
QG_FN void QG(panel_t)(const qjob *j, int r0, qpanel *p, uint32_t t)
{
    qg_repack(j, r0, QG_R, t, QG_VNNI, p);
    int rn = j->N - r0 < QG_R ? j->N - r0 : QG_R;
    for (int t0 = 0; t0 < j->T; t0 += QG_NT) {
        int tk[QG_NT];
        for (int i = 0; i < QG_NT; i++)
            tk[i] = t0 + i < j->T ? t0 + i : j->T - 1;
        QG(vf) o[QG_NR][QG_NT];
        QG(tile)(j, p, tk, t, o);
        float y[QG_L];
        for (int i = 0; i < QG_NT && t0 + i < j->T; i++)
            for (int v = 0; v < QG_NR; v++) {
                QG_FSTORE(y, o[v][i]);
                float *out = j->Y + (size_t)(t0 + i) * j->ldy + r0;
                for (int l = 0; l < QG_L && v * QG_L + l < rn; l++)
                    out[v * QG_L + l] = y[l] + (j->bias ? j->bias[r0 + v * QG_L + l] : 0.0f);
            }
    }
}

/* One instance per type, the type a constant in each. */
static __attribute__((target(QG_TARGET))) void QG(panel)(const qjob *j, int r0, qpanel *p)
{
    switch (j->type) {
#define QG_CASE(T, FN, S, BYTES) case T: QG(panel_t)(j, r0, p, T); break;
        QU_TYPES(QG_CASE)
#undef QG_CASE
    }
}

#undef QG_LOAD
#undef QG_SET1
#undef QG_ZERO
#undef QG_ADD
#undef QG_MULLO
#undef QG_MADDUBS
#undef QG_DPBUSD
#undef QG_DPWSSD
#undef QG_FZERO
#undef QG_FSET1
#undef QG_FLOAD
#undef QG_FMUL
#undef QG_FADD
#undef QG_CVT
#undef QG_FSTORE
#undef QG_R
#undef QG_FN
#undef QG_TARGET
#undef QG
#undef QG_CAT
#undef QG_CAT2
#undef QG_SUFFIX
#undef QG_L
#undef QG_VNNI
#undef QG_NR
#undef QG_NT
