/* sampler_equi.c — EquivariantLocalTransform: a per-token network, like
 * LocalProbabilityTransform, whose input is not the log-probability alone
 * but the quantities the truncation heuristics threshold on, so that
 * min_p, top_p, typical, epsilon and eta are representable:
 *   lp  the token's log-probability (log_softmax of the finite logits);
 *   r   its logit minus the largest one (min_p: r >= log min_p);
 *   c   the probability mass of the tokens strictly more probable than it
 *       (top_p keeps the tokens with c < top_p);
 *   d   |lp + H|, H the entropy (typical sampling's surprise deviation);
 * and, the same for every token of the row, H and the step feature
 * s = step / (step + 32) (0 at the first generated token). The network
 * (layers.c, asn_nn_equi_forward) gives l = tau lp + mlp(f) and the soft
 * truncation out = l + logsigmoid(gw . [l, lp, r, c, d, H, s] + gb).
 * Every feature is a function of the token's own logit and of the multiset
 * of the row's logits: the transform is permutation-equivariant.
 *
 * c without sorting the vocabulary: the tokens within D nats of the
 * largest logit (D the smallest of 4, 8, ..., 64 that leaves at most
 * ASN_EQUI_TAIL_MASS of probability below it; every token when none does,
 * or when the row has at most ASN_EQUI_SORT_ALL finite tokens) are sorted
 * by logit, and c is their exact running sum in double (tied tokens get the
 * same c); a token below the cut gets the mass of the tokens above the cut
 * (its error is at most the mass below the cut). O(V + K log K) for K
 * tokens above the cut, deterministic, the same whatever the order of the
 * tokens. Rows are processed on the calling thread.
 *
 * The backward pass is exact for this definition: through lp (log_softmax),
 * r (the largest logit), H (the entropy) and c (every token's probability),
 * with the cut and the order held fixed (c is piecewise smooth: it jumps
 * where two logits cross). */
#include "learn/layers.h"
#include "learn/sampler_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct asn__equi_state {
    int cap;
    float *lp, *r, *c, *d;     /* the features */
    float *dlp, *dr, *dc, *dd; /* backward */
    float *buf;                /* compact outputs / gradients */
    int32_t *order;            /* tokens above the cut, most probable first */
    int32_t *order2;           /* radix sort's second buffer */
    uint32_t *key, *key2;      /* and its keys */
    double *acc;
    int n, n_head, amax;
    float H, s, gb;
    double m_head;             /* probability mass above the cut */
    float *bias_g, *bias_u;
    int cap_i;
};

void asn__equi_free(asn__equi_state *st)
{
    if (!st)
        return;
    free(st->lp), free(st->r), free(st->c), free(st->d);
    free(st->dlp), free(st->dr), free(st->dc), free(st->dd);
    free(st->buf), free(st->order), free(st->acc);
    free(st->order2), free(st->key), free(st->key2);
    free(st->bias_g), free(st->bias_u);
    free(st);
}

static void reserve(asn__equi_state *st, int n, int NI)
{
    if (n > st->cap) {
        size_t v = (size_t)n;
        float **f[] = {&st->lp, &st->r, &st->c, &st->d, &st->dlp, &st->dr, &st->dc, &st->dd, &st->buf};
        for (size_t i = 0; i < sizeof f / sizeof *f; i++) {
            free(*f[i]);
            *f[i] = asn_xmalloc(v * sizeof(float));
        }
        free(st->order), free(st->order2), free(st->key), free(st->key2);
        st->order = asn_xmalloc(v * sizeof(int32_t));
        st->order2 = asn_xmalloc(v * sizeof(int32_t));
        st->key = asn_xmalloc(v * sizeof(uint32_t));
        st->key2 = asn_xmalloc(v * sizeof(uint32_t));
        st->cap = n;
    }
    if (NI > st->cap_i) {
        free(st->acc), free(st->bias_g), free(st->bias_u);
        st->acc = asn_xmalloc(ASN_NN_EQUI_ACC(NI) * sizeof(double));
        st->bias_g = asn_xmalloc((size_t)NI * sizeof(float));
        st->bias_u = asn_xmalloc((size_t)NI * sizeof(float));
        st->cap_i = NI;
    }
}

float asn__equi_step_feature(int step) { return step <= 0 ? 0.0f : (float)((double)step / (step + 32.0)); }

/* A key whose ascending order is x's descending order: the IEEE bits
 * made monotone (negatives flipped, positives given the top bit), then
 * inverted; -0 counts as +0, as x's comparison does. */
static uint32_t desc_key(float x)
{
    uint32_t u;
    if (x == 0.0f)
        x = 0.0f;
    memcpy(&u, &x, sizeof u);
    u = (u & 0x80000000u) ? ~u : u | 0x80000000u;
    return ~u;
}

/* st->order[0..k), tokens in increasing index, sorted by logit descending,
 * ties in increasing index: a stable LSD radix sort on desc_key, a byte a
 * pass (a pass where every key has the same byte is skipped). */
static void sort_by_logit(asn__equi_state *st, const float *x, int k)
{
    int32_t *o = st->order, *o2 = st->order2;
    uint32_t *key = st->key, *key2 = st->key2;
    for (int i = 0; i < k; i++)
        key[i] = desc_key(x[o[i]]);
    for (int shift = 0; shift < 32; shift += 8) {
        size_t count[257] = {0};
        for (int i = 0; i < k; i++)
            count[(key[i] >> shift & 255) + 1]++;
        if (count[(key[0] >> shift & 255) + 1] == (size_t)k)
            continue;
        for (int b = 0; b < 256; b++)
            count[b + 1] += count[b];
        for (int i = 0; i < k; i++) {
            size_t at = count[key[i] >> shift & 255]++;
            key2[at] = key[i], o2[at] = o[i];
        }
        uint32_t *tk = key;
        key = key2, key2 = tk;
        int32_t *to = o;
        o = o2, o2 = to;
    }
    if (o != st->order)
        memcpy(st->order, o, (size_t)k * sizeof *o);
}

/* c for every token (see the top of the file). */
static void cum_mass(asn__equi_state *st, const float *x, int n)
{
    int D = 0; /* 0: every token */
    if (n > ASN_EQUI_SORT_ALL) {
        double bucket[65] = {0}; /* mass by whole nats below the largest logit */
        for (int i = 0; i < n; i++) {
            float r = -st->r[i];
            int b = r < 64.0f ? (int)r : 64;
            bucket[b] += exp((double)st->lp[i]);
        }
        double below = 0;
        for (int b = 64; b >= 0; b--) {
            below += bucket[b];
            bucket[b] = below; /* mass at or below b nats */
        }
        for (int cut = 4; cut <= 64 && !D; cut *= 2)
            if (bucket[cut] <= ASN_EQUI_TAIL_MASS)
                D = cut;
    }
    int k = 0;
    for (int i = 0; i < n; i++)
        if (!D || -st->r[i] < (float)D)
            st->order[k++] = i;
    if (k > 0)
        sort_by_logit(st, x, k);
    double S = 0;
    for (int a = 0; a < k;) {
        int b = a;
        double m = 0;
        for (; b < k && x[st->order[b]] == x[st->order[a]]; b++)
            m += exp((double)st->lp[st->order[b]]);
        for (int q = a; q < b; q++)
            st->c[st->order[q]] = (float)S;
        S += m;
        a = b;
    }
    st->n_head = k;
    st->m_head = S;
    if (k < n)
        for (int i = 0; i < n; i++)
            if (-st->r[i] >= (float)D)
                st->c[i] = (float)S;
}

static void fold_constants(asn__equi_state *st, const asn__equi_view *P)
{
    const asn_nn_mlp *m = &P->m;
    float tail[2] = {st->H, st->s};
    asn_nn_mlp_tail_bias(st->bias_g, st->bias_u, m, 4, tail);
    st->gb = P->gb[0] + P->gw[5] * st->H + P->gw[6] * st->s;
}

static asn_nn_equi kernel_args(const asn__equi_state *st, const asn__equi_view *P)
{
    asn_nn_equi q = {&P->m, st->bias_g, st->bias_u, P->tau[0], P->gw, st->gb};
    return q;
}

void asn__equi_forward(asn__equi_state **pst, const asn__equi_view *P, const float *x, int n, double lse, float xmax,
                       float H, int step, float *out)
{
    asn__equi_state *st = *pst;
    if (!st)
        st = *pst = asn_xcalloc(1, sizeof *st);
    reserve(st, n, P->m.inner);
    st->n = n;
    st->H = H;
    st->s = asn__equi_step_feature(step);
    st->amax = 0;
    asn_nn_logsoftmax_forward(st->lp, x, lse, n);
    for (int i = 0; i < n; i++) {
        st->r[i] = x[i] - xmax;
        st->d[i] = fabsf(st->lp[i] + H);
        if (x[i] == xmax && x[st->amax] != xmax)
            st->amax = i;
    }
    if (x[0] == xmax)
        st->amax = 0;
    cum_mass(st, x, n);
    fold_constants(st, P);
    asn_nn_equi q = kernel_args(st, P);
    asn_nn_equi_forward(out, st->lp, st->r, st->c, st->d, &q, n);
}

float *asn__equi_buf(asn__equi_state *st) { return st->buf; }

void asn__equi_backward(asn__equi_state *st, const asn__equi_view *P, const asn__equi_view *G, const float *dout,
                        float *dx)
{
    const asn_nn_mlp *m = &P->m;
    const int n = st->n, NI = m->inner, ld = m->in;
    double *acc = st->acc;
    memset(acc, 0, ASN_NN_EQUI_ACC(NI) * sizeof(double));
    asn_nn_equi q = kernel_args(st, P);
    asn_nn_equi_backward(st->dlp, st->dr, st->dc, st->dd, acc, dout, st->lp, st->r, st->c, st->d, &q, n);
    double *a_gw = acc + 1, *a_wd = acc + 8, *a_wg = a_wd + NI, *a_bg = a_wg + 4 * (size_t)NI;
    double *a_wu = a_bg + NI, *a_bu = a_wu + 4 * (size_t)NI;
    /* the parameters: the tokens' columns, then the constant features' */
    G->tau[0] += (float)acc[0];
    for (int k = 0; k < 5; k++)
        G->gw[k] += (float)a_gw[k];
    G->gw[5] += (float)(acc[6] * st->H);
    G->gw[6] += (float)(acc[6] * st->s);
    G->gb[0] += (float)acc[6];
    G->m.bd[0] += (float)acc[7];
    double dH = P->gw[5] * acc[6];
    for (int j = 0; j < NI; j++) {
        G->m.wd[j] += (float)a_wd[j];
        for (int k = 0; k < 4; k++) {
            G->m.wg[(size_t)j * ld + k] += (float)a_wg[(size_t)j * 4 + k];
            G->m.wu[(size_t)j * ld + k] += (float)a_wu[(size_t)j * 4 + k];
        }
        G->m.wg[(size_t)j * ld + 4] += (float)(a_bg[j] * st->H);
        G->m.wg[(size_t)j * ld + 5] += (float)(a_bg[j] * st->s);
        G->m.wu[(size_t)j * ld + 4] += (float)(a_bu[j] * st->H);
        G->m.wu[(size_t)j * ld + 5] += (float)(a_bu[j] * st->s);
        G->m.bg[j] += (float)a_bg[j];
        G->m.bu[j] += (float)a_bu[j];
        dH += a_bg[j] * m->wg[(size_t)j * ld + 4] + a_bu[j] * m->wu[(size_t)j * ld + 4];
    }
    if (!dx)
        return;
    /* d = |lp + H| */
    double sum_dlp = 0, sum_dr = 0, K = 0;
    for (int i = 0; i < n; i++) {
        float sg = st->lp[i] + st->H >= 0 ? 1.0f : -1.0f;
        double dd = (double)st->dd[i] * sg;
        st->dlp[i] = (float)(st->dlp[i] + dd);
        dH += dd;
        sum_dlp += st->dlp[i];
        sum_dr += st->dr[i];
        K += (double)st->dc[i] * st->c[i];
    }
    /* dc_i reaches every token above i: B_k = the sum of dc over the tokens
     * strictly below k (the tokens below the cut are below every token
     * above it), walking the sorted tokens from the least probable up;
     * tied tokens (equal c, adjacent) share one B. dd (used) holds B, 0
     * below the cut */
    double B = 0;
    if (st->n_head < n) {
        memset(st->dd, 0, (size_t)n * sizeof(float));
        for (int a = 0; a < st->n_head; a++)
            st->dd[st->order[a]] = 1.0f;
        for (int i = 0; i < n; i++)
            if (st->dd[i] == 0.0f)
                B += st->dc[i];
            else
                st->dd[i] = 0.0f;
    }
    for (int b = st->n_head; b > 0;) {
        int a = b - 1;
        const float cv = st->c[st->order[a]];
        while (a > 0 && st->c[st->order[a - 1]] == cv)
            a--;
        double grp = 0;
        for (int t = a; t < b; t++) {
            st->dd[st->order[t]] = (float)B;
            grp += st->dc[st->order[t]];
        }
        B += grp;
        b = a;
    }
    for (int i = 0; i < n; i++) {
        double p = exp((double)st->lp[i]);
        double g = st->dlp[i] - p * sum_dlp + st->dr[i] - dH * p * (st->lp[i] + st->H) + p * (st->dd[i] - K);
        dx[i] = (float)g;
    }
    dx[st->amax] = (float)(dx[st->amax] - sum_dr);
}
