/* learn/pertoken.h — the per-token kernels, one per instruction set
 * (pertoken.c): LocalProbabilityTransform's and
 * SimpleDistributionAwareTransform's fused inference pass and its fast
 * pass of cubic pieces, and the element-wise kernels the layers (layers.h)
 * and SamplingNetwork's fast pass call. Shared by lib/learn (not a public
 * API). */
#ifndef ASN_LEARN_PERTOKEN_H
#define ASN_LEARN_PERTOKEN_H

#include "learn/mlp.h"

#include <stddef.h>
#include <stdint.h>

/* The largest hidden_dims of SimpleDistributionAwareTransform the fused
 * kernel below holds (its first layer's activations stay in registers). */
#define ASN_NN_DIST_MAXH 64

/* The inference pass of LocalProbabilityTransform (H = 0) and of
 * SimpleDistributionAwareTransform (H = hidden_dims <= ASN_NN_DIST_MAXH)
 * over n finite logits x, fused into one kernel (pertoken.c): lp = x - lse
 * (stored in lp when not NULL), l = lp + mlp(lp) (LOCAL) or lp + mlp([silu(lp
 * w1 + b1), statistics]) (DIST), out = l + logsigmoid(l * scale + thr).
 * Unlike the layers above it uses fused multiply-adds and its own exp
 * (within 1.5 ulp): the outputs agree with the layers' to float rounding,
 * and are the same bits on every instruction set it is compiled for.
 * prepare() fills `neg` (size() floats, which must outlive the calls) from
 * the other fields; forward() may then run from several threads. */
typedef struct asn_nn_pertoken {
    const asn_nn_mlp *m;          /* LOCAL: mlp; DIST: global_mlp */
    int H;                        /* DIST: hidden_dims; 0 for LOCAL */
    const float *w1, *b1;         /* DIST: local_mlp.0 (H entries each) */
    const float *bias_g, *bias_u; /* DIST: global_mlp's gate / up biases with the statistics folded in */
    double lse;                   /* the row's log-sum-exp */
    float scale, thr;             /* soft truncation */
    const float *neg;             /* negated weights (prepare) */
} asn_nn_pertoken;
size_t asn_nn_pertoken_size(const asn_nn_pertoken *f);
void asn_nn_pertoken_prepare(asn_nn_pertoken *f, float *buf);
void asn_nn_pertoken_forward(float *out, float *lp, const float *x, const asn_nn_pertoken *f, int n);
/* The fast pass of the same kernel (asn_sampler_forward_fast): given the
 * row, each token's output is a smooth function h(lp) of its lp alone.
 * fast_setup() evaluates h with the exact kernel at the Chebyshev-Lobatto
 * nodes of 32 intervals of t = K - x (K = xmax - HEAD + c, c the smallest
 * power of two from 1/64 with 15 c >= the row's range less HEAD, at most
 * ASN_NN_PTFAST_CMAX): 8 intervals per octave of t, t in [c, 16 c), so
 * that they are fine below the head and coarser far below it; fits a
 * polynomial of degree ASN_NN_PTFAST_DEG in each (through its nodes, in
 * double), and keeps them when they are within ASN_NN_PTFAST_COARSE_TOL
 * max(1, |h|) of h midway between the nodes of every interval (one
 * lookup per coefficient on AVX-512 instead of two); else the same with 64
 * intervals, 16 per octave. fast_forward() gives each token the polynomial of
 * its interval by Horner (its index and position u in [0, 1) from t's float
 * bits: exact), and the exact kernel's own output to the tokens within
 * ASN_NN_PTFAST_HEAD nats of the top (t < c) and those beyond the last
 * interval (t >= 16 c). Lane-wise,
 * correctly rounded operations and table lookups only: the same bits on
 * every instruction set. fast_setup() returns -1 (use the exact pass) when
 * a node's output is not finite. */
#define ASN_NN_PTFAST_NI 64 /* intervals: 64 (16 per octave) or 32 (8 per octave; see fast_setup) */
#define ASN_NN_PTFAST_DEG 3 /* 4 coefficients: one row of 16 bytes (degree 4: KL 2x lower, both far under 1e-6) */
#define ASN_NN_PTFAST_HEAD 4.0f
#define ASN_NN_PTFAST_COARSE_TOL 1e-5 /* a fifth of ASN_SAMPLER_FAST_HEAD_TOL */
#define ASN_NN_PTFAST_CMAX 1.0f
#define ASN_NN_PTFAST_NODES (ASN_NN_PTFAST_NI * ASN_NN_PTFAST_DEG + 1) /* at most */
/* log2 of the intervals per octave of ni (4 octaves in all) */
static inline int asn_nn_ptfast_ob(int ni) { return ni == 64 ? 4 : 3; }
typedef struct asn_nn_ptfast {
    /* row[j][k] = coef[k][j]: interval j's coefficients in 16 bytes, one
     * load per token (the AVX2 lookups) */
    float row[ASN_NN_PTFAST_NI][ASN_NN_PTFAST_DEG + 1];
    float K;          /* t = K - x */
    int ni, ob;       /* intervals in use (64 or 32), and log2 of those per octave (4 or 3) */
    int32_t ibase;    /* float bits of c >> (23 - ob): the first interval's index (t below c, the head,
                       * and from 16 c on take the exact kernel: outside the ni intervals from ibase) */
    float coef[ASN_NN_PTFAST_DEG + 1][ASN_NN_PTFAST_NI]; /* coef[k][j]: u^k, interval j */
} asn_nn_ptfast;
int asn_nn_pertoken_fast_setup(asn_nn_ptfast *t, const asn_nn_pertoken *f, float xmax, float xmin);
void asn_nn_pertoken_fast_forward(float *out, const float *x, const asn_nn_pertoken *f, const asn_nn_ptfast *t, int n);
/* The same intervals for another smooth function h of the logit
 * (SamplingNetwork's fast pass): ptfast_nodes() sets K and the first
 * of ni (64 or 32) intervals for a head of `head` nats (fast_setup's is
 * ASN_NN_PTFAST_HEAD) and writes the logits h is wanted at (3 ni + 1, at
 * most ASN_NN_PTFAST_NODES), returning their number; ptfast_fit()
 * fits the polynomials to h there (-1 when one is not finite);
 * ptfast_eval() writes out[i] = the polynomial of token i's interval for
 * the tokens inside the intervals and returns how many are not (or are in
 * an interval ptfast_drop() took out), their positions in rest and their
 * x in rest_x (out[i] undefined there; out may be x). ptfast_x() is the
 * logit at u in [0, 1] of interval j, ptfast_poly() its polynomial there
 * (in double); ptfast_mid_x() the logit midway between nodes q and q + 1
 * of interval j (q < DEG), and ptfast_strays() 1 when the polynomial of
 * interval j is off by more than tol max(1, |y|) from y[q] at one of them:
 * a fit checked between its nodes. */
int asn_nn_ptfast_nodes(asn_nn_ptfast *t, float xmax, float xmin, float head, int ni, float *xn);
int asn_nn_ptfast_fit(asn_nn_ptfast *t, const float *yn);
double asn_nn_ptfast_x(const asn_nn_ptfast *t, int j, double u);
double asn_nn_ptfast_poly(const asn_nn_ptfast *t, int j, double u);
double asn_nn_ptfast_mid_x(const asn_nn_ptfast *t, int j, int q);
int asn_nn_ptfast_strays(const asn_nn_ptfast *t, int j, const double *y, double tol);
void asn_nn_ptfast_drop(asn_nn_ptfast *t, int j);
int asn_nn_ptfast_eval(float *out, const float *x, const asn_nn_ptfast *t, int n, int32_t *rest, float *rest_x);
/* The instruction set the kernels run on: 2 AVX-512, 1 AVX2 + FMA, 0 any;
 * force(level) caps it (tests and benchmarks; -1 lifts the cap). */
int asn_nn_pertoken_level(void);
void asn_nn_pertoken_force(int level);
/* asn_nn_trunc_forward's kernel, one per instruction set (the same bits):
 * out = l + logsigmoid(l scale + thr). */
void asn_nn_pertoken_trunc(float *out, const float *l, float scale, float thr, int n);
/* The same function with the fast passes' exp and log1p (fused
 * multiply-adds, no division; within 2 ulp of it), the same bits on every
 * instruction set: SamplingNetwork's fast pass on its tail tokens. */
void asn_nn_pertoken_trunc_fast(float *out, const float *l, float scale, float thr, int n);
/* asn_nn_elu1_forward's kernel on n contiguous values (out may be x). */
void asn_nn_pertoken_elu1(float *out, const float *x, int n);
/* The scan of asn_nn_lse_block: the largest of n values, the smallest
 * finite one (+inf when none), the count of those above -inf, and *bad = 1
 * when one is NaN or +inf (else 0). */
void asn_nn_pertoken_scan(const float *x, int n, float *max, float *min, int64_t *count, int *bad);
/* The exp pass of asn_nn_lse_block, with the same exp and the same bits on
 * every instruction set: sum of exp(x - m) and, unless wsum is NULL, of
 * exp(x - m) (x - m) over n values (-inf adds 0). */
void asn_nn_pertoken_expsum(const float *x, int n, float m, double *sum, double *wsum);

#endif
