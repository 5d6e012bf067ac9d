/* learn/sampler_internal.h — what sampler_net.c lends sampler_fast.c (the
 * fast inference pass of SamplingNetwork): the row scan and the network run
 * on weighted representatives; the bound on sizes that sampler_config.c
 * and sampler_file.c share. Not a public API. */
#ifndef ASN_LEARN_SAMPLER_INTERNAL_H
#define ASN_LEARN_SAMPLER_INTERNAL_H

#include "asn/sampler_net.h"

/* The largest hidden size a config or a sampler file may give (sizes stay
 * far from int overflow). */
#define ASN__SAMPLER_MAX_DIM 65536

/* A row after the scan: its finite logits, their positions in the row
 * (NULL when every logit is finite), log-sum-exp, largest and smallest
 * logit. */
typedef struct asn__sampler_row {
    const float *x;
    const int32_t *idx;
    int n;
    double lse;
    float xmax, xmin;
} asn__sampler_row;

/* asn_sampler_forward's checks and first pass: -inf written to out where
 * the logit is -inf (all of out when none is finite: row->n = 0); -1 on
 * NaN / +inf (out untouched). */
int asn__sampler_scan(const asn_sampler *s, asn_sampler_ws *ws, asn_pool *pool, const float *logits, int V,
                      float *out, asn__sampler_row *row, asn_err *e);

/* SamplingNetwork on R rows of log-probabilities lp, row r standing for
 * w[r] tokens of a vocabulary of n_total in every sum and mean over the
 * vocabulary (the attention's sums, the mean pooling): the transformation
 * head's output l' of each row into lmod, and the row's multiplier and
 * truncation scale and threshold. rws: a workspace of the sampler used for
 * nothing else. */
void asn__sampler_net_reps(const asn_sampler *s, asn_sampler_ws *rws, asn_pool *pool, const float *lp, const float *w,
                           int R, double n_total, float *lmod, float *mult, float *scale, float *thr);

/* LocalProbabilityTransform and SimpleDistributionAwareTransform: the
 * forward pass through pertoken.c's fast pass (asn_nn_pertoken_fast_*) on
 * rows of more than exact_max finite tokens, the exact one otherwise;
 * asn_sampler_forward's arguments and errors. */
int asn__sampler_forward_pertoken_fast(const asn_sampler *s, asn_sampler_ws *ws, asn_pool *pool, const float *logits,
                                       int V, float *out, int exact_max, int *pieces, asn_err *e);

/* The workspace's slot for sampler_fast.c's state; the workspace frees it
 * with free_fn (so that sampler_net.c needs nothing of sampler_fast.c). */
void **asn__sampler_ws_fast(asn_sampler_ws *ws, void (*free_fn)(void *));

/* EquivariantLocalTransform (sampler_equi.c) on a row's n finite logits x
 * (log-sum-exp lse, largest xmax, entropy H): out (n) = the transform; the
 * state (made on first use, freed with asn__equi_free) keeps what the
 * backward pass needs. A view holds the parameters (or their gradients):
 * mlp (in 6, out 1), tau, gate weights gw (7) and bias gb. */
#include "learn/layers.h"
typedef struct asn__equi_view {
    asn_nn_mlp m;
    float *tau, *gw, *gb;
} asn__equi_view;
typedef struct asn__equi_state asn__equi_state;
#define ASN_EQUI_SORT_ALL 4096  /* rows of at most this many finite tokens: c from a full sort */
#define ASN_EQUI_TAIL_MASS 1e-4 /* the largest probability mass left below the sorted tokens */
float asn__equi_step_feature(int step);
void asn__equi_forward(asn__equi_state **st, const asn__equi_view *P, const float *x, int n, double lse, float xmax,
                       float H, int step, float *out);
/* Adds the parameters' gradients to G given dout (n, compact); dx (may be
 * NULL) receives d(loss)/d(x). */
void asn__equi_backward(asn__equi_state *st, const asn__equi_view *P, const asn__equi_view *G, const float *dout,
                        float *dx);
/* n floats of scratch in the state (after a forward pass). */
float *asn__equi_buf(asn__equi_state *st);
void asn__equi_free(asn__equi_state *st);

#endif
