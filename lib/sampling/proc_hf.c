/* proc_hf.c — the HuggingFace logits processors (transformers'
 * generation/logits_process.py), in the float32 arithmetic that matches
 * torch on CPU (docs/sampling.md §2-3), plus OpenAI-style presence and
 * frequency penalties and greedy. Truncation filters never sort the whole
 * vocabulary: they collect the tokens near their cut (order.c). */
#include "sampling_internal.h"

#include <math.h>
#include <string.h>

/* ------------------------------------------------------------ temperature */

static void temperature(const asn_proc *p, float *x, int V)
{
    asn_scale_f32(x, (float)p->f[0], V); /* true division, as torch on CPU */
}

/* ------------------------------------------------------------------ top_k */

static void top_k(const asn_proc *p, float *x, int V, asn_workspace *ws)
{
    long k = p->i[1] > p->i[S_MTK] ? p->i[1] : p->i[S_MTK];
    if (k >= V)
        return;
    float t = asn_kth_largest(ws, x, V, (int)k);
    for (int i = 0; i < V; i++)
        if (x[i] < t)
            x[i] = -INFINITY;
}

/* ------------------------------------------------------------------ top_p */

/* Torch sorts ascending and removes positions whose cumulative probability
 * (double accumulator, rounded to float) is <= 1 - top_p. The ascending sum
 * at a token is the mass of every token below it plus its own: we collect
 * the top of the row, take the mass below the collected set in one sum, and
 * walk the collected tokens upwards. */
static void top_p(const asn_proc *p, float *x, int V, asn_workspace *ws)
{
    const float thr = (float)(1.0 - p->f[0]);
    const int mtk = (int)(p->i[S_MTK] < V ? p->i[S_MTK] : V);
    float m;
    asn_softmax_ref(x, V, ws->e, ws->p, &m);
    const float *q = ws->p;
    for (int s = 0; s < asn_n_spans; s++) {
        const int last = s + 1 == asn_n_spans;
        const float cut = m - asn_spans[s];
        int n = asn_collect_sorted(ws, x, V, cut, 0);
        if (n < mtk && !last)
            continue;
        double below = asn_sum_below(q, x, cut, V);
        double c = below;
        int first = n; /* first collected position whose cumsum exceeds thr */
        for (int j = 0; j < n; j++) {
            c += (double)q[asn_pack_tok(ws->keys[j])];
            if ((float)c > thr) {
                first = j;
                break;
            }
        }
        if (first == 0 && (float)below > thr && !last)
            continue; /* the cut lies below the collected tokens */
        if (first > n - mtk)
            first = n - mtk; /* the mtk most probable are always kept */
        if (first <= 0 && n == V)
            return;
        if (first < 0)
            first = 0; /* everything collected is kept; nothing below survives */
        asn_keep_only(x, V, ws->keys + first, n - first);
        return;
    }
}

/* ------------------------------------------------------------------ min_p */

/* Protects the `mtk` highest-probability tokens: the top of the row by logit
 * (ties: the higher index, as a descending topk would list it first). */
static void protect_top(asn_workspace *ws, const float *x, int V, int mtk, uint32_t mark)
{
    float t = asn_kth_largest(ws, x, V, mtk);
    int n = asn_collect_sorted(ws, x, V, t, 0); /* every token >= t, ascending */
    for (int j = n - 1; j >= 0 && j >= n - mtk; j--)
        ws->stamp[asn_pack_tok(ws->keys[j])] = mark;
}

static void min_p(const asn_proc *p, float *x, int V, asn_workspace *ws)
{
    const float *q = ws->p;
    asn_softmax_ref(x, V, ws->e, ws->p, NULL);
    const float pmax = asn_row_max(q, V);
    const float thr = (float)p->f[0] * pmax;
    int mtk = (int)(p->i[S_MTK] < V ? p->i[S_MTK] : V);
    if (mtk <= 1) { /* the argmax always passes */
        for (int i = 0; i < V; i++)
            x[i] = q[i] < thr ? -INFINITY : x[i];
        return;
    }
    uint32_t mark = asn_ws_new_mark(ws);
    protect_top(ws, x, V, mtk, mark);
    for (int i = 0; i < V; i++)
        if (q[i] < thr && ws->stamp[i] != mark)
            x[i] = -INFINITY;
}

/* ---------------------------------------------------------------- typical */

static void typical(const asn_proc *p, float *x, int V, asn_workspace *ws)
{
    float m;
    double S = asn_softmax_ref(x, V, ws->e, ws->p, &m);
    const float *q = ws->p;
    float *l = ws->f, *P = ws->e; /* e is not needed past q */
    const float lse = (float)log(S);
    for (int i = 0; i < V; i++)
        l[i] = (x[i] - m) - lse;
    asn_exp_shifted(l, 0.0f, P, V);
    /* nansum: removed tokens, and tokens so far below the maximum that
     * l = -inf (P = 0), give NaN terms that do not count */
    double H = -asn_nansum_prod(l, P, V);
    const float Hf = (float)H;
    float *s = l; /* s overwrites l */
    for (int i = 0; i < V; i++)
        s[i] = x[i] == -INFINITY ? INFINITY : fabsf(-l[i] - Hf);
    const float smin = asn_row_min(s, V);
    const float mass = (float)p->f[0];
    const int mtk = (int)(p->i[S_MTK] < V ? p->i[S_MTK] : V);
    for (int sp = 0; sp < asn_n_spans; sp++) {
        const int last = sp + 1 == asn_n_spans;
        int n = asn_collect_sorted(ws, s, V, smin + asn_spans[sp], 1);
        double c = 0;
        int L = -1;
        for (int j = 0; j < n; j++) {
            c += (double)q[asn_pack_tok(ws->keys[j])];
            if (!((float)c < mass)) {
                L = j;
                break;
            }
        }
        if ((L < 0 || n < mtk) && !last)
            continue;
        if (n == 0)
            return; /* cannot happen for finite rows: every s <= +inf */
        if (L < 0)
            L = n - 1; /* HF clamps the cut index to V - 1 */
        const float tau = asn_pack_val(ws->keys[L]);
        if (mtk <= 1) { /* the most typical token has s = smin <= tau */
            for (int i = 0; i < V; i++)
                x[i] = s[i] > tau ? -INFINITY : x[i];
            return;
        }
        uint32_t mark = asn_ws_new_mark(ws);
        for (int j = 0; j < mtk && j < n; j++)
            ws->stamp[asn_pack_tok(ws->keys[j])] = mark;
        for (int i = 0; i < V; i++)
            if (s[i] > tau && ws->stamp[i] != mark)
                x[i] = -INFINITY;
        return;
    }
}

/* -------------------------------------------------------- epsilon and eta */

/* Removes tokens with probability below `bound` whose logit is below the
 * mtk-th largest (protection by logit value: ties all survive). */
static void remove_improbable(float *x, const float *q, int V, float bound, int mtk, asn_workspace *ws)
{
    float kth = asn_kth_largest(ws, x, V, mtk < V ? mtk : V);
    for (int i = 0; i < V; i++)
        x[i] = q[i] < bound && x[i] < kth ? -INFINITY : x[i];
}

static void epsilon(const asn_proc *p, float *x, int V, asn_workspace *ws)
{
    asn_softmax_ref(x, V, ws->e, ws->p, NULL);
    remove_improbable(x, ws->p, V, (float)p->f[0], (int)p->i[S_MTK], ws);
}

/* Hewitt et al. 2022: eta = min(eps, sqrt(eps) * exp(-H)), H in nats. */
static void eta(const asn_proc *p, float *x, int V, asn_workspace *ws)
{
    float m;
    double S = asn_softmax_ref(x, V, ws->e, ws->p, &m);
    const float *q = ws->p;
    const float lse = m + (float)log(S);
    /* lhat = x - lse clamped at -FLT_MAX: removed tokens give q * lhat = 0 */
    float *lh = ws->f;
    for (int i = 0; i < V; i++)
        lh[i] = x[i] - lse;
    double H = -asn_nansum_prod(q, lh, V);
    const float epsf = (float)p->f[0];
    const float bound = fminf(epsf, sqrtf(epsf) * expf(-(float)H));
    remove_improbable(x, q, V, bound, (int)p->i[S_MTK], ws);
}

/* -------------------------------------------------- history-driven ones */

static const int32_t *hist(const asn_seq_ctx *c, int *n)
{
    *n = c ? c->n_ids : 0;
    return c ? c->ids : NULL;
}

static void repetition_penalty(const asn_proc *p, float *x, int V, const asn_seq_ctx *ctx,
                               asn_workspace *ws)
{
    int n;
    const int32_t *ids = hist(ctx, &n);
    const float pen = (float)p->f[0];
    uint32_t mark = asn_ws_new_mark(ws);
    for (int j = (int)p->i[1]; j < n; j++) {
        int t = ids[j];
        if (t < 0 || t >= V || ws->stamp[t] == mark)
            continue;
        ws->stamp[t] = mark; /* each token once, however often it occurred */
        x[t] = x[t] < 0 ? x[t] * pen : x[t] / pen;
    }
}

/* OpenAI: logit -= count * frequency_penalty + [count > 0] * presence_penalty,
 * counting generated tokens only (not the prompt). */
static void openai_penalty(const asn_proc *p, float *x, int V, const asn_seq_ctx *ctx,
                           asn_workspace *ws, int frequency)
{
    int n;
    const int32_t *ids = hist(ctx, &n);
    int start = ctx ? ctx->n_prompt : 0;
    const float pen = (float)p->f[0];
    int32_t *cnt = ws->count;
    for (int j = start; j < n; j++)
        if (ids[j] >= 0 && ids[j] < V)
            cnt[ids[j]]++;
    for (int j = start; j < n; j++) {
        int t = ids[j];
        if (t < 0 || t >= V || !cnt[t])
            continue;
        x[t] -= frequency ? (float)cnt[t] * pen : pen;
        cnt[t] = 0; /* leaves the counts zero for the next use */
    }
}

static void no_repeat_ngram(const asn_proc *p, float *x, int V, const asn_seq_ctx *ctx)
{
    int L;
    const int32_t *ids = hist(ctx, &L);
    const int ng = (int)p->i[1];
    if (L < ng)
        return;
    const int32_t *prefix = ids + L - (ng - 1);
    for (int i = 0; i + ng <= L; i++) {
        if (ng > 1 && memcmp(ids + i, prefix, (size_t)(ng - 1) * sizeof *ids))
            continue;
        int t = ids[i + ng - 1];
        if (t >= 0 && t < V)
            x[t] = -INFINITY;
    }
}

static void min_new_tokens(const asn_proc *p, float *x, int V, const asn_seq_ctx *ctx)
{
    int n;
    hist(ctx, &n);
    long skip = p->has[1] ? p->i[2] : (ctx ? ctx->n_prompt : 0);
    if ((long)n - skip >= p->i[1])
        return;
    const int32_t *eos = p->has[2] ? p->ids : (ctx ? ctx->eos : NULL);
    int ne = p->has[2] ? p->n_ids : (ctx ? ctx->n_eos : 0);
    for (int j = 0; j < ne; j++)
        if (eos[j] >= 0 && eos[j] < V)
            x[eos[j]] = -INFINITY;
}

/* First maximal index (strict > scan), as torch.argmax and llama.cpp. */
static void greedy(float *x, int V)
{
    int best = 0;
    for (int i = 1; i < V; i++)
        if (x[i] > x[best])
            best = i;
    for (int i = 0; i < V; i++)
        if (i != best)
            x[i] = -INFINITY;
}

int asn_apply_hf(const asn_proc *p, float *x, int V, const asn_seq_ctx *ctx, asn_workspace *ws,
                 asn_err *e)
{
    switch (p->kind) {
    case ASN_PROC_TEMPERATURE: temperature(p, x, V); break;
    case ASN_PROC_TOP_K: top_k(p, x, V, ws); break;
    case ASN_PROC_TOP_P: top_p(p, x, V, ws); break;
    case ASN_PROC_MIN_P: min_p(p, x, V, ws); break;
    case ASN_PROC_TYPICAL: typical(p, x, V, ws); break;
    case ASN_PROC_EPSILON: epsilon(p, x, V, ws); break;
    case ASN_PROC_ETA: eta(p, x, V, ws); break;
    case ASN_PROC_REPETITION_PENALTY: repetition_penalty(p, x, V, ctx, ws); break;
    case ASN_PROC_PRESENCE_PENALTY: openai_penalty(p, x, V, ctx, ws, 0); break;
    case ASN_PROC_FREQUENCY_PENALTY: openai_penalty(p, x, V, ctx, ws, 1); break;
    case ASN_PROC_NO_REPEAT_NGRAM: no_repeat_ngram(p, x, V, ctx); break;
    case ASN_PROC_MIN_NEW_TOKENS: min_new_tokens(p, x, V, ctx); break;
    case ASN_PROC_GREEDY: greedy(x, V); break;
    default: return asn_err_set(e, "not an HF processor");
    }
    return 0;
}
