/* learn/sampler_internal.h — what sampler_net.c lends sampler_fast.c (the
 * fast inference pass of SamplingNetwork): the row scan and the network run
 * on weighted representatives. Not a public API. */
#ifndef ASN_LEARN_SAMPLER_INTERNAL_H
#define ASN_LEARN_SAMPLER_INTERNAL_H

#include "asn/sampler_net.h"

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

/* The workspace's slot for sampler_fast.c's state, freed with the
 * workspace by asn__sampler_fast_free. */
void **asn__sampler_ws_fast(asn_sampler_ws *ws);
void asn__sampler_fast_free(void *fast);

#endif
