/* sampler_loss.c — TruncatedLogitsLoss (reference loss.py), forward and
 * backward: KL(target || predicted) over the tokens the target keeps, plus
 * gamma times the predicted mass on the tokens it removed. Sums in double.
 *
 * With p = softmax(pred) and q = softmax(target), K the kept tokens and R
 * the removed ones (q = 0 there):
 *   KL      = sum_K q (log q - log p)        d/dpred_i = p_i - q_i
 *   penalty = sum_R p                       d/dpred_i = p_i ([i in R] - penalty)
 */
#include "asn/sampler_net.h"

#include <math.h>
#include <string.h>

/* max and sum of exp(x - max) over the finite entries; -1 on NaN / +inf. */
static int row_lse(const float *x, int V, double *lse, int *n_finite, int *bad_at)
{
    float m = -INFINITY;
    int n = 0;
    for (int i = 0; i < V; i++) {
        if (isnan(x[i]) || x[i] == INFINITY) {
            *bad_at = i;
            return -1;
        }
        if (x[i] > -INFINITY) {
            n++;
            if (x[i] > m)
                m = x[i];
        }
    }
    *n_finite = n;
    if (!n)
        return 0;
    double s = 0;
    for (int i = 0; i < V; i++)
        if (x[i] > -INFINITY)
            s += exp((double)x[i] - m);
    *lse = m + log(s);
    return 0;
}

int asn_truncated_logits_loss_row(const float *pred, const float *target, int V, float gamma, float grad_scale,
                                  asn_sampler_loss *out, float *dpred, asn_err *e)
{
    if (!(gamma >= 0))
        return asn_err_set(e, "TruncatedLogitsLoss: gamma must be non-negative, got %g", (double)gamma);
    double lp_pred = 0, lp_tgt = 0;
    int np = 0, nt = 0, bad = 0;
    if (row_lse(pred, V, &lp_pred, &np, &bad) < 0)
        return asn_err_set(e, "TruncatedLogitsLoss: prediction %d is %s", bad, isnan(pred[bad]) ? "NaN" : "+inf");
    if (row_lse(target, V, &lp_tgt, &nt, &bad) < 0)
        return asn_err_set(e, "TruncatedLogitsLoss: target %d is %s", bad, isnan(target[bad]) ? "NaN" : "+inf");
    if (!np || !nt)
        return asn_err_set(e, "TruncatedLogitsLoss: the %s removes every token", np ? "target" : "prediction");
    double kl = 0, pen = 0;
    for (int i = 0; i < V; i++) {
        if (target[i] > -INFINITY) {
            if (!(pred[i] > -INFINITY))
                return asn_err_set(e, "TruncatedLogitsLoss: the target keeps token %d, which the prediction removed "
                                      "(infinite KL)", i);
            double lq = (double)target[i] - lp_tgt, lpp = (double)pred[i] - lp_pred;
            kl += exp(lq) * (lq - lpp);
        } else if (pred[i] > -INFINITY) {
            pen += exp((double)pred[i] - lp_pred);
        }
    }
    if (dpred)
        for (int i = 0; i < V; i++) {
            if (!(pred[i] > -INFINITY)) {
                dpred[i] = 0.0f;
                continue;
            }
            double p = exp((double)pred[i] - lp_pred);
            int kept = target[i] > -INFINITY;
            double q = kept ? exp((double)target[i] - lp_tgt) : 0.0;
            dpred[i] = (float)(grad_scale * ((p - q) + gamma * p * ((kept ? 0.0 : 1.0) - pen)));
        }
    out->kl = kl;
    out->penalty = pen;
    out->total = kl + gamma * pen;
    return 0;
}

int asn_truncated_logits_loss(const float *pred, const float *target, int B, int V, float gamma,
                              asn_sampler_loss *out, float *dpred, asn_err *e)
{
    if (B <= 0 || V <= 0)
        return asn_err_set(e, "TruncatedLogitsLoss: empty batch");
    asn_sampler_loss sum = {0, 0, 0};
    for (int r = 0; r < B; r++) {
        asn_sampler_loss row = {0, 0, 0};
        size_t o = (size_t)r * V;
        if (asn_truncated_logits_loss_row(pred + o, target + o, V, gamma, 1.0f / (float)B, &row,
                                          dpred ? dpred + o : NULL, e) < 0)
            return asn_err_prefix(e, "row %d", r);
        sum.kl += row.kl;
        sum.penalty += row.penalty;
    }
    out->kl = sum.kl / B;
    out->penalty = sum.penalty / B;
    out->total = out->kl + gamma * out->penalty;
    return 0;
}

/* The policy-gradient loss of --rl, forward and backward, on one row. With
 * p = softmax(pred), p_ref = softmax(ref), lp = log p(a), r = lp - log
 * p_ref(a), rho = e^r:
 *   clip = 0:  pg = -A lp                       d/dpred_i = -A (d_ia - p_i)
 *   clip = E:  pg = -min(A rho, A clip(rho, 1 - E, 1 + E)), and for A < 0 at
 *              most -3A (dual clip)             d/dpred_i = -A rho (d_ia - p_i)
 *              where the unclipped side is the smaller, 0 elsewhere
 *   kl         = e^r - 1 - r (r's k3 estimate)  d/dpred_i = (e^r - 1) (d_ia - p_i)
 *   total      = pg + kl_beta kl */
int asn_policy_loss_row(const float *pred, const float *ref, int V, int token, double advantage,
                        const asn_policy_loss_opts *o, float grad_scale, asn_policy_loss *out, float *dpred,
                        asn_err *e)
{
    if (token < 0 || token >= V)
        return asn_err_set(e, "policy loss: token %d is outside the vocabulary (%d)", token, V);
    if (!(o->clip >= 0 && o->clip < 1) || !(o->kl_beta >= 0) || !isfinite(advantage))
        return asn_err_set(e, "policy loss: clip must be in [0, 1), kl_beta >= 0 and the advantage finite");
    double lse = 0, lse_ref = 0;
    int n = 0, n_ref = 0, bad = 0;
    if (row_lse(pred, V, &lse, &n, &bad) < 0 || row_lse(ref, V, &lse_ref, &n_ref, &bad) < 0)
        return asn_err_set(e, "policy loss: logit %d is NaN or +inf", bad);
    out->pg = out->kl = out->total = 0;
    out->clipped = 0;
    /* a token the network or the reference removed: no term (its log-probability is -inf) */
    if (!(pred[token] > -INFINITY) || !(ref[token] > -INFINITY))
        return 0;
    const double A = advantage, lp = (double)pred[token] - lse, r = lp - ((double)ref[token] - lse_ref);
    const double rho = exp(r);
    double w = 0; /* d total / d lp */
    if (o->clip == 0) {
        out->pg = -A * lp;
        w = -A;
    } else {
        double lo = 1.0 - o->clip, hi = 1.0 + o->clip, c = rho < lo ? lo : rho > hi ? hi : rho;
        double obj = A * rho < A * c ? A * rho : A * c;
        if (A < 0 && obj < 3.0 * A)
            obj = 3.0 * A;
        out->pg = -obj;
        out->clipped = (A > 0 && rho > hi) || (A < 0 && (rho < lo || rho > 3.0));
        if (!out->clipped)
            w = -A * rho;
    }
    out->kl = rho - 1.0 - r;
    w += o->kl_beta * (rho - 1.0);
    out->total = out->pg + o->kl_beta * out->kl;
    if (dpred && w != 0) {
        double s = w * grad_scale;
        for (int i = 0; i < V; i++)
            if (pred[i] > -INFINITY)
                dpred[i] = (float)(dpred[i] - s * exp((double)pred[i] - lse));
        dpred[token] = (float)(dpred[token] + s);
    }
    return 0;
}
