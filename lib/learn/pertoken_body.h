/* learn/pertoken_body.h — the body of pertoken.c's kernels, included once
 * per instruction set. The including file defines V (a vector of VL
 * floats), SFX(name) (the name with the instruction set's suffix) and, on
 * V, lane by lane:
 *   vset(x)                  x in every lane
 *   vadd, vsub, vmul, vdiv   IEEE +, -, *, /
 *   vfma(a, b, c)            a * b + c rounded once
 *   vmin(a, b), vmax(a, b)   a < b ? a : b, a > b ? a : b
 *   vclamp170(x)             x clamped to [-170, 170]
 *   vround(x)                to the nearest integer, ties to even
 *   vscale(p, n)             p * 2^n rounded once, n an integer in [-246, 246]
 *   vscale_normal(p, n)      (optional) the same where p * 2^n is normal
 *   vkeep_ge(x, t, lo)       t >= lo ? x : 0
 *   vsel_gt(a, c, x, y)      a > c ? x : y
 *   vneg(x), vabs(x)         x with its sign bit flipped, cleared
 *   vpow2t(n)                2^trunc(n) for n integral in [-127, 128]
 *                            (the exponent field (n + 127) << 23 as a float)
 *   vmask_gt(a, c)           bit l set where a > c (a NaN: clear)
 *   vmask_nlt(a, c)          bit l set where !(a < c) (a NaN: set)
 *   vloadn(p, k), vstoren(p, v, k)  the first k lanes (the others load as 0)
 * and, for the fast pass, VI (a vector of VL int32) and
 *   vgeo(t, base, ni, &j, &u)  with ob = 4 (ni = 64) or 3 (ni = 32), the
 *                            interval j = ((bits(t) >> (23 - ob)) - base)
 *                            mod ni (as the level's vpoly or vlut takes
 *                            it) and u = the low 23 - ob bits of t's
 *                            mantissa as a fraction in [0, 1) (exact);
 *                            returns the mask of lanes (bit l for lane l)
 *                            where (bits(t) >> (23 - ob)) - base is not in
 *                            [0, ni): t below the first interval (or
 *                            negative) or from the end of the last
 *   vlut(tab, j, ni)         tab[j] lane by lane (ni entries)
 *   vpoly(T, j, u, ni)       (optional, in place of vlut) the polynomial
 *                            of interval j at u, lane by lane: c[d] =
 *                            T->coef[d][j], then Horner from c[DEG] down
 *                            (fma(p, u, c[d])), as the default does
 * Every operation is lane-wise and correctly rounded, so every instruction
 * set gives the same bits. */

/* exp(x), within 1.5 ulp (relative error below 1.25e-7; checked on every
 * float of [-87, 88]), 0 or inf beyond the float range: x clamped to
 * [-170, 170], 2^n e^r with n = round(x log2 e), r = x - n ln 2 with ln 2
 * rounded to float, e^r = 1 + r' q(r), r' = r + n (ln 2 - float(ln 2)) the
 * reduction's rounding put back, q of degree 5 (near-minimax for (e^r - 1) /
 * r on |r| <= 0.354). The correction is off the chain of dependent steps,
 * which is what bounds the speed here. */
static inline V SFX(pt_exp_parts)(V x, V *n)
{
    *n = vround(vmul(x, vset(1.44269504088896341f)));
    V r = vfma(*n, vset(-0.693147182f), x);
    V rc = vfma(*n, vset(1.90465429995e-09f), r);
    V q = vfma(vset(1.3935451844e-03f), r, vset(8.3705982496e-03f));
    q = vfma(q, r, vset(4.1666448366e-02f));
    q = vfma(q, r, vset(1.6666491938e-01f));
    q = vfma(q, r, vset(5.0000000152e-01f));
    q = vfma(q, r, vset(1.0000000121e+00f));
    return vfma(rc, q, vset(1.0f)); /* e^r, in [0.7, 1.42] */
}
static inline V SFX(pt_exp)(V x)
{
    V n;
    V p = SFX(pt_exp_parts)(vclamp170(x), &n);
    return vscale(p, n);
}

/* pt_exp(t) for t in [-100, 0] where it is at least 2^-124 (t >= -86),
 * else 0: the product by 2^n is then exact, so vscale_normal may be the
 * cheaper sum of n and the exponent field. */
#ifndef vscale_normal
#define vscale_normal vscale
#endif
static inline V SFX(pt_exp_tail0)(V t)
{
    V n;
    V p = SFX(pt_exp_parts)(t, &n);
    return vkeep_ge(vscale_normal(p, n), t, -86.0f);
}

/* out = l + logsigmoid(l * scale + thr); logsigmoid(z) = min(z, 0) -
 * log1p(e), e = exp(-|z|) in (0, 1], log1p(e) = e P(e), P of degree 8
 * (near-minimax on [0, 1]: |e P(e) - log1p(e)| < 2e-8, relative error near
 * e = 0 below 4e-8). */
static inline V SFX(pt_trunc)(V l, float scale, float thr)
{
    V z = vfma(l, vset(scale), vset(thr));
    V e = SFX(pt_exp)(vmin(z, vsub(vset(0.0f), z)));
    V p = vfma(vset(5.1261021410e-03f), e, vset(-2.9074064677e-02f));
    p = vfma(p, e, vset(7.7516086740e-02f));
    p = vfma(p, e, vset(-1.3602247622e-01f));
    p = vfma(p, e, vset(1.9076880736e-01f));
    p = vfma(p, e, vset(-2.4835398989e-01f));
    p = vfma(p, e, vset(3.3318121708e-01f));
    p = vfma(p, e, vset(-4.9999444976e-01f));
    p = vfma(p, e, vset(9.9999996593e-01f));
    return vadd(l, vsub(vmin(z, vset(0.0f)), vmul(e, p)));
}

/* Both networks compute the negated gates -g (and -u, -pre) from negated
 * weights (pt_prep), so that exp(-g) needs no negation: -g * -u = g * u and
 * -pre / (1 + exp(-pre)) = -silu(pre) exactly, the sign folded into the
 * next layer's weights. */

/* The tokens of a row go through in groups of PT_GROUP: first l of every
 * vector of the group into a buffer, then the truncation of every one. Each
 * half is a short chain of dependent steps per vector, independent from
 * vector to vector, so that the processor overlaps many vectors (one pass
 * over both halves per vector is one long chain, and runs at its latency).
 * The same operations on the same values: the same bits. */
#ifndef PT_GROUP
#define PT_GROUP 256
#endif

/* out = l + logsigmoid(l * scale + thr) of the k tokens of lbuf */
static inline __attribute__((always_inline)) void SFX(pt_trunc_group)(float *out, const float *lbuf, int k, float scale,
                                                                      float thr)
{
    for (int i = 0; i < k; i += VL) {
        const int kk = k - i < VL ? k - i : VL;
        vstoren(out + i, SFX(pt_trunc)(vloadn(lbuf + i, VL), scale, thr), kk);
    }
}

/* pt_trunc over n values (the fast passes' truncation, SamplingNetwork's
 * tail tokens) */
static void SFX(pt_trunc_fast)(float *out, const float *l, float scale, float thr, int n)
{
    for (int i = 0; i < n; i += VL) {
        const int k = n - i < VL ? n - i : VL;
        vstoren(out + i, SFX(pt_trunc)(vloadn(l + i, k), scale, thr), k);
    }
}

/* LocalProbabilityTransform: l = lp + mlp(lp); w holds -wg, -bg, -wu, -bu
 * (NI each). */
static inline __attribute__((always_inline)) void SFX(pt_local)(float *out, float *lpo, const float *x,
                                                                const asn_nn_pertoken *f, const float *w, int n)
{
    const asn_nn_mlp *m = f->m;
    const int NI = m->inner;
    const float *ng = w, *nbg = w + NI, *nu = w + 2 * NI, *nbu = w + 3 * NI;
    const float hi = (float)f->lse, lo = (float)(f->lse - (double)hi);
    float lbuf[PT_GROUP] __attribute__((aligned(64)));
    for (int i0 = 0; i0 < n; i0 += PT_GROUP) {
        const int gn = n - i0 < PT_GROUP ? n - i0 : PT_GROUP;
        for (int i = 0; i < gn; i += VL) {
            const int k = gn - i < VL ? gn - i : VL;
            V lp = vsub(vsub(vloadn(x + i0 + i, k), vset(hi)), vset(lo));
            if (lpo)
                vstoren(lpo + i0 + i, lp, k);
            V acc = vset(m->bd[0]);
            for (int j = 0; j < NI; j++) {
                V g = vfma(lp, vset(ng[j]), vset(nbg[j]));
                V gu = vmul(g, vfma(lp, vset(nu[j]), vset(nbu[j])));
                acc = vfma(vdiv(gu, vadd(vset(1.0f), SFX(pt_exp)(g))), vset(m->wd[j]), acc);
            }
            vstoren(lbuf + i, vadd(acc, lp), VL);
        }
        SFX(pt_trunc_group)(out + i0, lbuf, gn, f->scale, f->thr);
    }
}

/* SimpleDistributionAwareTransform: l = lp + mlp([silu(lp w1 + b1), tail]),
 * the tail folded into the gate and up biases; w holds -w1, -b1 (H each),
 * -bias_g, -bias_u (NI each). H is a constant in the specialized copies. */
static inline __attribute__((always_inline)) void SFX(pt_dist)(float *out, float *lpo, const float *x,
                                                               const asn_nn_pertoken *f, const float *w, const int H,
                                                               int n)
{
    const asn_nn_mlp *m = f->m;
    const int NI = m->inner, ld = m->in;
    const float *nw1 = w, *nb1 = w + H, *nbg = w + 2 * H, *nbu = w + 2 * H + NI;
    const float hi = (float)f->lse, lo = (float)(f->lse - (double)hi);
    float lbuf[PT_GROUP] __attribute__((aligned(64)));
    for (int i0 = 0; i0 < n; i0 += PT_GROUP) {
        const int gn = n - i0 < PT_GROUP ? n - i0 : PT_GROUP;
        for (int i = 0; i < gn; i += VL) {
            const int k = gn - i < VL ? gn - i : VL;
            V lp = vsub(vsub(vloadn(x + i0 + i, k), vset(hi)), vset(lo));
            if (lpo)
                vstoren(lpo + i0 + i, lp, k);
            V loc[ASN_NN_DIST_MAXH]; /* -silu(lp w1 + b1) */
            for (int h = 0; h < H; h++) {
                V pre = vfma(lp, vset(nw1[h]), vset(nb1[h]));
                loc[h] = vdiv(pre, vadd(vset(1.0f), SFX(pt_exp)(pre)));
            }
            V acc = vset(m->bd[0]);
            for (int j = 0; j < NI; j++) {
                const float *wg = m->wg + (size_t)j * ld, *wu = m->wu + (size_t)j * ld;
                V g = vset(nbg[j]), u = vset(nbu[j]);
                for (int h = 0; h < H; h++) {
                    g = vfma(loc[h], vset(wg[h]), g);
                    u = vfma(loc[h], vset(wu[h]), u);
                }
                acc = vfma(vdiv(vmul(g, u), vadd(vset(1.0f), SFX(pt_exp)(g))), vset(m->wd[j]), acc);
            }
            vstoren(lbuf + i, vadd(acc, lp), VL);
        }
        SFX(pt_trunc_group)(out + i0, lbuf, gn, f->scale, f->thr);
    }
}

static void SFX(pt_forward)(float *out, float *lpo, const float *x, const asn_nn_pertoken *f, const float *w, int n)
{
    if (!f->H) {
        SFX(pt_local)(out, lpo, x, f, w, n);
        return;
    }
    switch (f->H) { /* the usual sizes with constant loop bounds */
    case 8:
        SFX(pt_dist)(out, lpo, x, f, w, 8, n);
        break;
    case 16:
        SFX(pt_dist)(out, lpo, x, f, w, 16, n);
        break;
    case 32:
        SFX(pt_dist)(out, lpo, x, f, w, 32, n);
        break;
    default:
        SFX(pt_dist)(out, lpo, x, f, w, f->H, n);
        break;
    }
}

#ifndef vpoly
static inline V SFX(pt_poly)(const asn_nn_ptfast *T, VI j, V u, const int ni)
{
    V p = vlut(T->coef[ASN_NN_PTFAST_DEG], j, ni);
    for (int d = ASN_NN_PTFAST_DEG - 1; d >= 0; d--)
        p = vfma(p, u, vlut(T->coef[d], j, ni));
    return p;
}
#define vpoly SFX(pt_poly)
#endif

/* The fast pass (pertoken.h, asn_nn_ptfast): each token the polynomial of its
 * interval of t = K - x, by Horner; the tokens of the head and beyond the
 * last interval, gathered a group at a time, through the exact kernel (the
 * exact pass's bits: every operation is lane-wise). out may be x. ni is
 * T->ni, a constant in each copy. */
static inline __attribute__((always_inline)) void SFX(pt_fast_ni)(float *out, const float *x,
                                                                  const asn_nn_pertoken *f,
                                                                  const asn_nn_ptfast *T, int n, const int ni)
{
    int32_t pos[PT_GROUP];
    float xb[PT_GROUP], ob[PT_GROUP];
    const float K = T->K; /* t = K - x */
    const int32_t base = T->ibase;
    for (int i0 = 0; i0 < n; i0 += PT_GROUP) {
        const int gn = n - i0 < PT_GROUP ? n - i0 : PT_GROUP;
        int ne = 0;
        for (int i = 0; i < gn; i += VL) {
            const int k = gn - i < VL ? gn - i : VL;
            V t = vsub(vset(K), vloadn(x + i0 + i, k));
            VI j;
            V u;
            uint32_t m = vgeo(t, base, ni, &j, &u);
            if (k < VL)
                m &= (1u << k) - 1;
            V p = vpoly(T, j, u, ni);
            while (m) { /* before the store: out may be x */
                const int l = i + __builtin_ctz(m);
                xb[ne] = x[i0 + l];
                pos[ne++] = l;
                m &= m - 1;
            }
            vstoren(out + i0 + i, p, k);
        }
        if (ne) {
            SFX(pt_forward)(ob, NULL, xb, f, f->neg, ne);
            for (int q = 0; q < ne; q++)
                out[i0 + pos[q]] = ob[q];
        }
    }
}
static void SFX(pt_fast)(float *out, const float *x, const asn_nn_pertoken *f, const asn_nn_ptfast *T, int n)
{
    if (T->ni == 32)
        SFX(pt_fast_ni)(out, x, f, T, n, 32);
    else
        SFX(pt_fast_ni)(out, x, f, T, n, 64);
}

/* The polynomials alone, for a caller with its own function beyond the
 * intervals (SamplingNetwork's fast pass): out[i] for the tokens inside
 * them, and the positions and x of the others and of those whose
 * polynomial is NaN (+inf: an interval dropped) in rest and rest_x, as many
 * as returned (their out[i] is left undefined). out may be x. */
static inline __attribute__((always_inline)) int SFX(pt_poly_rest_ni)(float *out, const float *x,
                                                                      const asn_nn_ptfast *T, int n,
                                                                      int32_t *rest, float *rest_x, const int ni)
{
    const float K = T->K;
    const int32_t base = T->ibase;
    int ne = 0;
    for (int i = 0; i < n; i += VL) {
        const int k = n - i < VL ? n - i : VL;
        V t = vsub(vset(K), vloadn(x + i, k));
        VI j;
        V u;
        uint32_t m = vgeo(t, base, ni, &j, &u);
        V p = vpoly(T, j, u, ni);
        m |= vmask_nlt(p, vset(INFINITY)); /* the intervals dropped (NaN) */
        if (k < VL)
            m &= (1u << k) - 1;
        while (m) { /* before the store: out may be x */
            const int l = i + __builtin_ctz(m);
            rest_x[ne] = x[l];
            rest[ne++] = l;
            m &= m - 1;
        }
        vstoren(out + i, p, k);
    }
    return ne;
}
static int SFX(pt_poly_rest)(float *out, const float *x, const asn_nn_ptfast *T, int n, int32_t *rest, float *rest_x)
{
    return T->ni == 32 ? SFX(pt_poly_rest_ni)(out, x, T, n, rest, rest_x, 32)
                       : SFX(pt_poly_rest_ni)(out, x, T, n, rest, rest_x, 64);
}

/* Sums over n values of e = exp(x - m) and, with ent, of e (x - m) (-inf
 * entries and those below m - 86 add 0: at most 2^-124 each, beside the 1
 * of the maximum), for a row's log-sum-exp and entropy: token i goes to
 * lane i mod 32 of 32 float sums whatever VL is, which are added in lane
 * order in double. Without ent, where PT_EXP_CLAMP is 0 (the x86 copies,
 * whose float-to-integer conversion is defined for every input), x - m is
 * not clamped at -100, which only keeps 0 * (x - m) finite: e is the
 * same, 0 below -86. ent is a constant in each copy. */
static inline __attribute__((always_inline)) void SFX(pt_expsum_ent)(const float *x, int n, float m, double *sum,
                                                                     double *wsum, const int ent)
{
    enum { NV = 32 / VL };
    float ls[32], lw[32], tail[32];
    const int nf = n & ~31; /* whole groups of 32; the rest padded with -inf */
    for (int j = 0; j < 32; j++)
        tail[j] = nf + j < n ? x[nf + j] : -INFINITY;
    /* one group of VL lanes at a time: two accumulators live, not 2 NV */
    for (int q = 0; q < NV; q++) {
        V s = vset(0.0f), w = vset(0.0f);
        for (int i = 0; i < n; i += 32) {
            V t = vsub(vloadn((i < nf ? x + i : tail) + q * VL, VL), vset(m));
            if (ent || PT_EXP_CLAMP)
                t = vmax(t, vset(-100.0f));
            V e = SFX(pt_exp_tail0)(t); /* 0 below -86 (-inf: 0 * -100 with ent) */
            s = vadd(s, e);
            if (ent)
                w = vfma(e, t, w);
        }
        vstoren(ls + q * VL, s, VL);
        vstoren(lw + q * VL, w, VL);
    }
    double a = 0, b = 0;
    for (int j = 0; j < 32; j++) {
        a += ls[j];
        b += lw[j];
    }
    *sum = a;
    *wsum = b;
}
static void SFX(pt_expsum)(const float *x, int n, float m, double *sum, double *wsum)
{
    if (wsum)
        SFX(pt_expsum_ent)(x, n, m, sum, wsum, 1);
    else {
        double unused;
        SFX(pt_expsum_ent)(x, n, m, sum, &unused, 0);
    }
}

/* The largest value, the smallest finite one, the count of those above
 * -inf, and whether a NaN or +inf is among n values: two vectors a step,
 * four chains of dependent steps (none of these depends on the order). */
static void SFX(pt_scan_all)(const float *x, int n, float *max, float *min, int64_t *count, int *bad)
{
    V mx[2] = {vset(-INFINITY), vset(-INFINITY)}, mn[2] = {vset(INFINITY), vset(INFINITY)};
    int64_t cnt = 0;
    uint32_t nan = 0;
    for (int i = 0; i < n; i += 2 * VL)
        for (int h = 0; h < 2; h++) {
            const int at = i + h * VL, k = n - at < VL ? n - at : VL;
            if (k <= 0)
                break;
            V v = vloadn(x + at, k);
            if (k < VL) { /* the lanes past the end: -inf */
                float b[VL];
                vstoren(b, v, VL);
                for (int l = k; l < VL; l++)
                    b[l] = -INFINITY;
                v = vloadn(b, VL);
            }
            mx[h] = vmax(mx[h], v);
            mn[h] = vmin(mn[h], vsel_gt(v, vset(-INFINITY), v, vset(INFINITY)));
            cnt += __builtin_popcount(vmask_gt(v, vset(-INFINITY)));
            nan |= vmask_nlt(v, vset(INFINITY));
        }
    float a[VL], b[VL];
    vstoren(a, vmax(mx[0], mx[1]), VL);
    vstoren(b, vmin(mn[0], mn[1]), VL);
    float hi = -INFINITY, lo = INFINITY;
    for (int l = 0; l < VL; l++) {
        hi = a[l] > hi ? a[l] : hi;
        lo = b[l] < lo ? b[l] : lo;
    }
    *max = hi;
    *min = lo;
    *count = cnt;
    *bad = nan != 0;
}

/* pt_scan_all's results, first on the assumption that all n values are
 * finite (the usual row): the largest and the smallest, and a sum of x * 0
 * that is NaN when one is not (infinite or NaN); only then pt_scan_all. */
static void SFX(pt_scan)(const float *x, int n, float *max, float *min, int64_t *count, int *bad)
{
    V mx[2] = {vset(-INFINITY), vset(-INFINITY)}, mn[2] = {vset(INFINITY), vset(INFINITY)};
    V z[2] = {vset(0.0f), vset(0.0f)};
    const int nv = n - n % (2 * VL);
    for (int i = 0; i < nv; i += 2 * VL)
        for (int h = 0; h < 2; h++) {
            V v = vloadn(x + i + h * VL, VL);
            mx[h] = vmax(mx[h], v);
            mn[h] = vmin(mn[h], v);
            z[h] = vfma(v, vset(0.0f), z[h]);
        }
    float a[VL], b[VL], c[VL];
    vstoren(a, vmax(mx[0], mx[1]), VL);
    vstoren(b, vmin(mn[0], mn[1]), VL);
    vstoren(c, vadd(z[0], z[1]), VL);
    float hi = -INFINITY, lo = INFINITY, zs = 0.0f;
    for (int l = 0; l < VL; l++) {
        hi = a[l] > hi ? a[l] : hi;
        lo = b[l] < lo ? b[l] : lo;
        zs += c[l];
    }
    for (int i = nv; i < n; i++) {
        hi = x[i] > hi ? x[i] : hi;
        lo = x[i] < lo ? x[i] : lo;
        zs += x[i] * 0.0f;
    }
    if (zs != 0.0f) { /* a NaN or an infinity */
        SFX(pt_scan_all)(x, n, max, min, count, bad);
        return;
    }
    *max = hi;
    *min = lo;
    *count = n;
    *bad = 0;
}

/* layers.c's soft truncation, out = l + logsigmoid(l scale + thr), with
 * its operations in its order (no fused multiply-add; its exp and log1p),
 * so its bits: logsigmoid(z) = min(z, 0) - log1p(exp(-|z|)). */
static inline V SFX(ref_exp)(V x)
{
    const V lo = vset(-87.3f), hi = vset(88.3f), magic = vset(12582912.0f);
    const V x0 = x;
    x = vsel_gt(x, hi, hi, x);
    x = vsel_gt(lo, x0, lo, x);
    V n = vsub(vadd(vmul(x, vset(1.44269504088896341f)), magic), magic);
    V r = vsub(x, vmul(n, vset(0.693359375f)));
    r = vsub(r, vmul(n, vset(-2.12194440e-4f)));
    V p = vset(1.9875691500e-4f);
    p = vadd(vmul(p, r), vset(1.3981999507e-3f));
    p = vadd(vmul(p, r), vset(8.3334519073e-3f));
    p = vadd(vmul(p, r), vset(4.1665795894e-2f));
    p = vadd(vmul(p, r), vset(1.6666665459e-1f));
    p = vadd(vmul(p, r), vset(5.0000001201e-1f));
    p = vadd(vadd(vmul(vmul(p, r), r), r), vset(1.0f));
    return vsel_gt(lo, x0, vset(0.0f), vmul(p, vpow2t(n)));
}
static inline V SFX(ref_log1p01)(V e)
{
    V u = vadd(vset(1.0f), e);
    V c = vsub(e, vsub(u, vset(1.0f)));
    const V big = vset(1.41421356f);
    V m = vsel_gt(u, big, vmul(u, vset(0.5f)), u);
    V k = vsel_gt(u, big, vset(0.693147181f), vset(0.0f));
    V s = vdiv(vsub(m, vset(1.0f)), vadd(m, vset(1.0f)));
    V z = vmul(s, s);
    V p = vset(1.0f / 11);
    p = vadd(vmul(p, z), vset(1.0f / 9));
    p = vadd(vmul(p, z), vset(1.0f / 7));
    p = vadd(vmul(p, z), vset(1.0f / 5));
    p = vadd(vmul(p, z), vset(1.0f / 3));
    p = vadd(vmul(p, z), vset(1.0f));
    return vadd(vadd(k, vmul(vmul(vset(2.0f), s), p)), c);
}
static void SFX(pt_trunc_ref)(float *out, const float *l, float scale, float thr, int n)
{
    for (int i = 0; i < n; i += VL) {
        const int k = n - i < VL ? n - i : VL;
        V lv = vloadn(l + i, k);
        V z = vadd(vmul(lv, vset(scale)), vset(thr));
        V ls = vsub(vmin(z, vset(0.0f)), SFX(ref_log1p01)(SFX(ref_exp)(vneg(vabs(z)))));
        vstoren(out + i, vadd(lv, ls), k);
    }
}

/* layers.c's elu + 1 (x > 0 ? x + 1 : exp(min(x, 0))), its bits */
static void SFX(pt_elu1_ref)(float *out, const float *x, int n)
{
    for (int i = 0; i < n; i += VL) {
        const int k = n - i < VL ? n - i : VL;
        V v = vloadn(x + i, k);
        vstoren(out + i, vsel_gt(v, vset(0.0f), vadd(v, vset(1.0f)), SFX(ref_exp)(vmin(v, vset(0.0f)))), k);
    }
}

/* the parameters of this copy, so that the next one can define its own */
#undef V
#undef VL
#undef SFX
#undef vset
#undef vadd
#undef vsub
#undef vmul
#undef vdiv
#undef vfma
#undef vmin
#undef vmax
#undef vclamp170
#undef vround
#undef vscale
#undef vscale_normal
#undef vkeep_ge
#undef vsel_gt
#undef vneg
#undef vabs
#undef vpow2t
#undef vmask_gt
#undef vmask_nlt
#undef vloadn
#undef vstoren
#undef VI
#undef vgeo
#undef vlut
#undef vpoly
