/* learn/layers.h — the layers the learned samplers are built from, each a
 * _forward and a _backward next to each other with the same arguments
 * (llm.c style), over n rows of activations (row-major, leading dimensions
 * given where a layer reads or writes a slice of a wider row).
 *
 * Conventions: backward functions ADD into parameter gradients (dw, dbias)
 * and into input gradients (dinp) unless the comment says "sets"; NULL
 * skips a gradient. f32 storage; sums over rows within a call use double.
 * Shared by lib/learn (not a public API). */
#ifndef ASN_LEARN_LAYERS_H
#define ASN_LEARN_LAYERS_H

#include "learn/mlp.h"
#include "learn/pertoken.h"

#include <stddef.h>
#include <stdint.h>

/* torch.nn.LayerNorm's default eps. */
#define ASN_NN_LN_EPS 1e-5f
/* Added to the linear attention's denominator (reference LinearAttention). */
#define ASN_NN_ATTN_EPS 1e-6f
/* F.softplus(x) returns x itself above this (PyTorch's default threshold). */
#define ASN_NN_SOFTPLUS_THRESHOLD 20.0f

/* --------------------------------------------------------- scalar helpers */

float asn_nn_sigmoidf(float x);
float asn_nn_softplusf(float x);           /* F.softplus, threshold 20 */
float asn_nn_softplus_gradf(float x);      /* its derivative as PyTorch computes it */

/* ----------------------------------------------------------------- Linear */

/* out[i, :oc] = inp[i, :in] . w[j, :in] + bias[j]  (w: oc rows of row
 * stride ldw >= in; bias may be NULL). out must not overlap inp. */
void asn_nn_linear_forward(float *out, int ldo, const float *inp, int ldi, const float *w, int ldw,
                           const float *bias, int n, int in, int oc);
/* dinp += dout w; dw += dout^T inp; dbias += column sums of dout. */
void asn_nn_linear_backward(float *dinp, int lddi, float *dw, int lddw, float *dbias, const float *dout,
                            int lddo, const float *inp, int ldi, const float *w, int ldw, int n, int in,
                            int oc);

/* --------------------------------------------------------------- LayerNorm */

/* Over the C entries of each of n contiguous rows, eps ASN_NN_LN_EPS; keeps
 * each row's mean and 1/std for the backward pass. */
void asn_nn_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w,
                              const float *b, int n, int C);
void asn_nn_layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                               const float *w, const float *mean, const float *rstd, int n, int C);

/* ------------------------------------------------------- elementwise maps */

/* SwiGLU's gating: a = silu(g) * u over `count` contiguous entries. */
void asn_nn_swiglu_forward(float *a, const float *g, const float *u, size_t count);
/* Sets dg, du. */
void asn_nn_swiglu_backward(float *dg, float *du, const float *da, const float *g, const float *u,
                            size_t count);

/* silu(x) = x * sigmoid(x). */
void asn_nn_silu_forward(float *out, const float *inp, size_t count);
/* Sets dinp. */
void asn_nn_silu_backward(float *dinp, const float *dout, const float *inp, size_t count);

/* The linear attention's feature map phi(x) = elu(x) + 1 (x + 1 above 0,
 * exp(x) below), on the first w entries of n rows. */
void asn_nn_elu1_forward(float *out, int ldo, const float *inp, int ldi, int n, int w);
/* Sets dinp. */
void asn_nn_elu1_backward(float *dinp, int lddi, const float *dout, int lddo, const float *inp, int ldi, int n,
                          int w);

/* -------------------------------------------------------------- SwiGLU MLP */

/* The rows' inputs may end in a constant tail (the same for every row, as
 * SamplingNetwork's pooled context or the global statistics): then inp holds
 * only the first in_used columns and bias_g / bias_u are the gate and up
 * biases plus the tail's contribution (asn_nn_mlp_tail_bias); NULL bias_g /
 * bias_u means in_used == in and the plain biases. g, u, a: n x inner. */
void asn_nn_mlp_tail_bias(float *bias_g, float *bias_u, const asn_nn_mlp *m, int in_used, const float *tail);
void asn_nn_mlp_forward(float *out, int ldo, float *g, float *u, float *a, const float *inp, int ldi,
                        int in_used, const float *bias_g, const float *bias_u, const asn_nn_mlp *m, int n);
/* dm: the gradient view (its first in_used columns of wg / wu get the
 * rows' part; the tail's part is asn_nn_mlp_tail_backward's). scratch holds
 * 3 * n * inner floats. sum_dg / sum_du (may be NULL) receive (+=) the
 * column sums of d(gate) and d(up), which the tail's gradients need. */
void asn_nn_mlp_backward(float *dinp, int lddi, const asn_nn_mlp *dm, double *sum_dg, double *sum_du,
                         const float *dout, int lddo, const float *g, const float *u, const float *a,
                         const float *inp, int ldi, int in_used, const asn_nn_mlp *m, int n, float *scratch);
/* The tail's gradients from the summed d(gate), d(up) over all rows:
 * dm->wg[:, in_used:] += sum_dg tail^T (same for up), dtail (may be NULL)
 * += wg[:, in_used:]^T sum_dg + wu[:, in_used:]^T sum_du. */
void asn_nn_mlp_tail_backward(float *dtail, const asn_nn_mlp *dm, const double *sum_dg, const double *sum_du,
                              const asn_nn_mlp *m, int in_used, const float *tail);

/* The same MLP for in = out = 1 (one scalar per row), fused and vectorized
 * across rows: out[i] = mlp(x[i]). The backward pass recomputes what it
 * needs from x; dx (may be NULL) is added to; gradients go to dm. */
void asn_nn_mlp1_forward(float *out, const float *x, const asn_nn_mlp *m, int n);
void asn_nn_mlp1_backward(float *dx, const asn_nn_mlp *dm, const float *dout, const float *x,
                          const asn_nn_mlp *m, int n);

/* ------------------------------------- equivariant local transform (token) */

/* The per-token network of EquivariantLocalTransform (sampler_equi.c) on n
 * tokens whose features come as four planes: lp (log-probability), r
 * (logit minus the row's largest), c (probability mass of the tokens more
 * probable than it), d = |lp + entropy|. With f = [lp, r, c, d, H, s] (H
 * the entropy and s the step feature, the same for every token: folded
 * into bias_g / bias_u and gb):
 *   l   = tau lp + mlp(f)                  (SwiGLU, in 6, out 1)
 *   z   = gw . [l, lp, r, c, d] + gb        (the truncation gate)
 *   out = l + logsigmoid(z).
 * Vectorized like the layers above (no FMA, the same bits on every
 * instruction set). */
typedef struct asn_nn_equi {
    const asn_nn_mlp *m;
    const float *bias_g, *bias_u; /* gate / up biases with the constant features folded in */
    float tau;
    const float *gw;              /* the gate's weights on l, lp, r, c, d */
    float gb;                     /* the gate's bias with the constant features folded in */
} asn_nn_equi;
#define ASN_NN_EQUI_MAXI 64 /* the largest inner size the kernels hold */
void asn_nn_equi_forward(float *out, const float *lp, const float *r, const float *c, const float *d,
                         const asn_nn_equi *q, int n);
/* Backward of the same n tokens given dout: sets dlp, dr, dc, dd (the
 * network's gradient with respect to each token's features, not through
 * lp's definition) and adds the parameters' gradients, summed over the
 * tokens in double, to acc: [tau, gw (5), gb, bd, wd (NI), wg (NI x 4, the
 * token features' columns), bg (NI), wu (NI x 4), bu (NI)] (bg and bu are
 * also the sums the constant features' gradients need). */
#define ASN_NN_EQUI_ACC(NI) (8 + 11 * (size_t)(NI))
void asn_nn_equi_backward(float *dlp, float *dr, float *dc, float *dd, double *acc, const float *dout,
                          const float *lp, const float *r, const float *c, const float *d, const asn_nn_equi *q,
                          int n);

/* ------------------------------------------------- linear attention (elu+1) */

/* Non-causal linear attention over all rows, per head (d = H * dh):
 *   out_i = phi(q_i) KV / (phi(q_i) . ksum + 1e-6),
 *   KV = sum_j phi(k_j)^T v_j (dh x dh per head), ksum = sum_j phi(k_j).
 * The sums over rows are kept as one d x (d + H) matrix M: block-diagonal
 * KV in the first d columns, head h's ksum in column d + h (rows of head
 * h), so that [numerators | denominators] = phi(q) M is one product.
 *
 * stats: adds the rows' phi(k)^T [v | 1] to P (d x (d + 1), row-major); kf
 * = phi(k). build: M from the summed P. */
void asn_nn_linattn_stats_forward(float *P, const float *kf, int ldk, const float *v, int ldv, int n, int d);
void asn_nn_linattn_build(float *M, const float *P, int d, int H);
/* att (n x d) and den (n x H, denominators without the 1e-6); qf = phi(q);
 * nd: n x (d + H) scratch. */
void asn_nn_linattn_forward(float *att, float *den, const float *qf, int ldq, const float *M, int n, int d,
                            int H, float *nd);
/* Sets dqf (n x d); adds the rows' qf^T [dnum | dden] to dM (d x (d + H));
 * nd: n x (d + H) scratch. */
void asn_nn_linattn_backward(float *dqf, int lddq, float *dM, const float *datt, const float *att,
                             const float *den, const float *qf, int ldq, const float *M, int n, int d,
                             int H, float *nd);
/* From the summed dM: dKV (d x d, its block-diagonal part) and dksum (d). */
void asn_nn_linattn_dbuild(float *dkv, float *dksum, const float *dM, int d, int H);
/* Sets dkf = v dKV^T + dksum and dv = kf dKV (n rows of d each). */
void asn_nn_linattn_stats_backward(float *dkf, int lddk, float *dv, int lddv, const float *dkv,
                                   const float *dksum, const float *kf, int ldk, const float *v, int ldv,
                                   int n, int d);

/* ------------------------------------------------------------ mean pooling */

/* Adds the column sums of n rows of C to sum (the mean is sum / count, taken
 * by the caller once every block of rows is summed). */
void asn_nn_colsum(double *sum, const float *inp, int ldi, int n, int C);
/* dinp[i, :] += dmean / count. */
void asn_nn_mean_backward(float *dinp, int lddi, const float *dmean, int count, int n, int C);

/* --------------------------------------------------------- soft truncation */

/* out = l + logsigmoid(l * scale + thr). */
void asn_nn_trunc_forward(float *out, const float *l, float scale, float thr, int n);
/* Sets dl; adds to *dscale, *dthr. */
void asn_nn_trunc_backward(float *dl, double *dscale, double *dthr, const float *dout, const float *l,
                           float scale, float thr, int n);

/* ------------------------------------------------------------- log_softmax */

/* Running (max, sum of exp(x - max)) over blocks of a row, merged in block
 * order; also sum of exp(x - max) * (x - max), which gives the entropy, and
 * the number and smallest of the finite entries. */
typedef struct asn_nn_lse {
    float max;
    double sum, wsum;
    int64_t count;
    float min;
} asn_nn_lse;
/* The statistics of n values (-inf entries count as probability 0); NaN
 * and +inf are reported by *bad = 1. Without entropy, wsum is 0 (the sum
 * is the same, and a little faster to get). */
asn_nn_lse asn_nn_lse_block(const float *x, int n, int *bad, int entropy);
asn_nn_lse asn_nn_lse_merge(asn_nn_lse a, asn_nn_lse b);
/* log-sum-exp and entropy (-sum p log p) of a row from its statistics. */
double asn_nn_lse_value(asn_nn_lse s);
double asn_nn_lse_entropy(asn_nn_lse s);
/* lp = x - lse (all finite). */
void asn_nn_logsoftmax_forward(float *lp, const float *x, double lse, int n);
/* dx = dlp - exp(lp) * sum_dlp (sum_dlp: the sum of dlp over the row).
 * Sets dx. */
void asn_nn_logsoftmax_backward(float *dx, const float *dlp, const float *lp, double sum_dlp, int n);

/* Sum of n floats in double. */
double asn_nn_sum(const float *x, int n);

#endif
