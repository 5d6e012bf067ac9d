/* proc_llama.c — llama.cpp's samplers (src/llama-sampling.cpp) on a full
 * row: llama's candidate array is the set of finite tokens, and "dropped"
 * is -inf. llama sums in float, sequentially, over candidates sorted by
 * descending logit; we sort the same way (ties: lower token id first, one
 * of the orders std::sort may produce). See docs/sampling.md §5. */
#include "sampling_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The finite tokens sorted by descending logit (ties: lower id first), as
 * token ids in `ord`; returns their count. Uses ws->keys. */
static int sort_desc(asn_workspace *ws, const float *x, int V, int32_t *ord)
{
    int n = 0;
    for (int i = 0; i < V; i++)
        if (x[i] != -INFINITY)
            ws->keys[n++] = ((uint64_t)~asn_fkey(x[i]) << 32) | (uint32_t)i;
    asn_sort_u64(ws->keys, n);
    for (int j = 0; j < n; j++)
        ord[j] = (int32_t)asn_pack_tok(ws->keys[j]);
    return n;
}

/* llama_sampler_softmax_impl on the sorted candidates: p = expf(l - l0) /
 * float sum. Writes p[j] for position j. */
static void llama_softmax(const float *x, const int32_t *ord, int n, float *p)
{
    float l0 = x[ord[0]], sum = 0;
    for (int j = 0; j < n; j++) {
        p[j] = expf(x[ord[j]] - l0);
        sum += p[j];
    }
    for (int j = 0; j < n; j++)
        p[j] /= sum;
}

/* Keeps the first `keep` sorted positions, drops the rest. */
static void keep_prefix(float *x, const int32_t *ord, int n, int keep)
{
    for (int j = keep; j < n; j++)
        x[ord[j]] = -INFINITY;
}

static int32_t *ord_buf(asn_workspace *ws) { return ws->ord; }

/* ------------------------------------------------------------ truncation */

static void llama_temp(const asn_proc *p, float *x, int V)
{
    float t = (float)p->f[0];
    if (t <= 0) { /* keep the first maximum only */
        int best = -1;
        for (int i = 0; i < V; i++)
            if (x[i] != -INFINITY && (best < 0 || x[i] > x[best]))
                best = i;
        for (int i = 0; i < V; i++)
            if (i != best)
                x[i] = -INFINITY;
        return;
    }
    for (int i = 0; i < V; i++)
        x[i] = x[i] / t;
}

static void llama_top_k(const asn_proc *p, float *x, int V, asn_workspace *ws)
{
    if (p->i[1] <= 0)
        return;
    int32_t *ord = ord_buf(ws);
    int n = sort_desc(ws, x, V, ord);
    keep_prefix(x, ord, n, p->i[1] < n ? (int)p->i[1] : n);
}

static void llama_top_p(const asn_proc *p, float *x, int V, asn_workspace *ws)
{
    float top_p = (float)p->f[0];
    if (top_p >= 1)
        return;
    int32_t *ord = ord_buf(ws);
    int n = sort_desc(ws, x, V, ord);
    llama_softmax(x, ord, n, ws->p);
    float cum = 0;
    int keep = n;
    for (int j = 0; j < n; j++) {
        cum += ws->p[j];
        if (cum >= top_p && j + 1 >= p->i[0]) {
            keep = j + 1;
            break;
        }
    }
    keep_prefix(x, ord, n, keep);
}

static void llama_min_p(const asn_proc *p, float *x, int V, asn_workspace *ws)
{
    float min_p = (float)p->f[0];
    if (min_p <= 0)
        return;
    float lmax = asn_row_max(x, V);
    float thr = lmax + logf(min_p);
    int kept = 0;
    for (int i = 0; i < V; i++)
        kept += x[i] != -INFINITY && x[i] >= thr;
    long min_keep = p->i[0];
    if (kept >= min_keep) {
        for (int i = 0; i < V; i++)
            if (x[i] < thr)
                x[i] = -INFINITY;
        return;
    }
    /* too few: keep the sorted prefix up to the first token below the
     * threshold at or after position max(1, min_keep) */
    int32_t *ord = ord_buf(ws);
    int n = sort_desc(ws, x, V, ord);
    int start = min_keep > 1 ? (int)min_keep : 1, i = start;
    for (; i < n; i++)
        if (x[ord[i]] < thr)
            break;
    keep_prefix(x, ord, n, i);
}

static void llama_typical(const asn_proc *p, float *x, int V, asn_workspace *ws)
{
    float typ_p = (float)p->f[0];
    if (typ_p >= 1)
        return;
    int32_t *ord = ord_buf(ws);
    int n = sort_desc(ws, x, V, ord);
    float *prob = ws->p, *shift = ws->e;
    llama_softmax(x, ord, n, prob);
    float H = 0;
    for (int j = 0; j < n; j++)
        H += -prob[j] * logf(prob[j]);
    /* sort positions by |-log p - H| ascending (ties: lower position first) */
    for (int j = 0; j < n; j++) {
        shift[j] = fabsf(-logf(prob[j]) - H);
        ws->keys[j] = asn_pack(shift[j], (uint32_t)j);
    }
    asn_sort_u64(ws->keys, n);
    float cum = 0;
    int last = n;
    long min_keep = p->i[0];
    for (int k = 0; k < n; k++) {
        cum += prob[asn_pack_tok(ws->keys[k])];
        if (cum > typ_p && (min_keep == 0 || k >= min_keep - 1)) {
            last = k + 1;
            break;
        }
    }
    uint32_t mark = asn_ws_new_mark(ws);
    for (int k = 0; k < last; k++)
        ws->stamp[ord[asn_pack_tok(ws->keys[k])]] = mark;
    for (int i = 0; i < V; i++)
        if (ws->stamp[i] != mark)
            x[i] = -INFINITY;
}

static void top_n_sigma(const asn_proc *p, float *x, int V)
{
    float nsig = (float)p->f[0];
    if (nsig <= 0)
        return;
    float mx = -INFINITY, sum = 0;
    int cnt = 0;
    for (int i = 0; i < V; i++)
        if (x[i] != -INFINITY) {
            mx = x[i] > mx ? x[i] : mx;
            sum += x[i];
            cnt++;
        }
    if (cnt < 2)
        return;
    float mean = sum / (float)cnt, acc = 0;
    for (int i = 0; i < V; i++)
        if (x[i] != -INFINITY)
            acc += (x[i] - mean) * (x[i] - mean);
    float sd = sqrtf(acc / (float)cnt);
    for (int i = 0; i < V; i++)
        if (x[i] < mx - nsig * sd)
            x[i] = -INFINITY;
}

static void xtc(const asn_proc *p, float *x, int V, const asn_seq_ctx *ctx, asn_workspace *ws)
{
    float prob = (float)p->f[0], thr = (float)p->f[1];
    if (prob <= 0 || thr > 0.5f)
        return;
    int32_t *ord = ord_buf(ws);
    int n = sort_desc(ws, x, V, ord);
    if (n < 2)
        return;
    /* llama draws from its own generator; ours is the counter RNG */
    float r = ctx ? (float)asn_rng_uniform(ctx->key, ctx->step, ASN_STREAM_XTC) : 0.0f;
    if (r > prob)
        return;
    llama_softmax(x, ord, n, ws->p);
    int pos_last = 0;
    for (int j = 0; j < n; j++) {
        if (ws->p[j] >= thr)
            pos_last = j;
        else
            break;
    }
    if (n - pos_last >= p->i[0] && pos_last > 0)
        for (int j = 0; j < pos_last; j++)
            x[ord[j]] = -INFINITY;
}

/* mirostat v2's truncation: keep the prefix of candidates whose surprise
 * -log2 p is at most mu (at least one). */
static void mirostat_truncate(float mu, float *x, int V, asn_workspace *ws)
{
    int32_t *ord = ord_buf(ws);
    int n = sort_desc(ws, x, V, ord);
    llama_softmax(x, ord, n, ws->p);
    int keep = n;
    for (int j = 0; j < n; j++)
        if (-log2f(ws->p[j]) > mu) {
            keep = j;
            break;
        }
    keep_prefix(x, ord, n, keep ? keep : 1);
}

/* ------------------------------------------------------------- penalties */

static void penalties(const asn_proc *p, float *x, int V, const asn_seq_ctx *ctx, asn_workspace *ws)
{
    long last_n = p->i[1];
    float rep = (float)p->f[0], freq = (float)p->f[1], pres = (float)p->f[2];
    int n = ctx ? ctx->n_ids : 0;
    if (last_n == 0 || (rep == 1 && freq == 0 && pres == 0) || n == 0)
        return;
    int start = last_n < 0 || last_n >= n ? 0 : n - (int)last_n;
    int32_t *cnt = ws->count;
    for (int j = start; j < n; j++)
        if (ctx->ids[j] >= 0 && ctx->ids[j] < V)
            cnt[ctx->ids[j]]++;
    for (int j = start; j < n; j++) {
        int t = ctx->ids[j];
        if (t < 0 || t >= V || !cnt[t])
            continue;
        float l = x[t];
        l = l <= 0 ? l * rep : l / rep;
        x[t] = l - ((float)cnt[t] * freq + pres);
        cnt[t] = 0;
    }
}

/* DRY (Don't Repeat Yourself, by p-e-w): penalizes the token that would
 * extend a repeat of the recent context, exponentially in its length. */
static void dry(const asn_proc *p, float *x, int V, const asn_seq_ctx *ctx, asn_workspace *ws)
{
    double mult = p->f[0], base = p->f[1];
    long allowed = p->i[1], last_n = p->i[2];
    int len = ctx ? ctx->n_ids : 0;
    long n_ctx = p->i[3] > 0 ? p->i[3] : len;
    if (mult == 0 || base < 1 || last_n == 0)
        return;
    if (last_n < 0)
        last_n = n_ctx;
    long N = len;
    if (last_n < N)
        N = last_n;
    if (n_ctx < N)
        N = n_ctx;
    if (N <= allowed)
        return;
    const int32_t *ids = ctx->ids;
#define RTOK(i) ids[len - 1 - (i)]
    /* rep_limit: how far back a repeat may reach before a sequence breaker */
    long rep_limit = N;
    for (long i = 0; i < N && rep_limit == N; i++) {
        long best_tail = -1;
        int off = 0;
        for (int b = 0; b < p->n_brk; b++) {
            const int32_t *seq = p->ids + off;
            int blen = p->brk_len[b];
            off += blen;
            if (seq[0] != RTOK(i))
                continue;
            long tail = blen - 1;
            if (tail > i)
                continue;
            int match = 1;
            for (long t = 0; t < tail && match; t++)
                match = seq[1 + t] == RTOK(i - 1 - t);
            if (match && tail > best_tail)
                best_tail = tail;
        }
        if (best_tail >= 0)
            rep_limit = i - best_tail;
    }
    if (rep_limit < allowed)
        return;
    /* for each k, the length of the match between the suffix and the text k back */
    int32_t *maxlen = ws->count; /* per token, 0 = none; restored to zero below */
    int32_t *touched = ws->ord;
    int ntouched = 0;
    for (long k = 1; k < N; k++) {
        long z = 0;
        while (z + k < N && RTOK(z) == RTOK(z + k))
            z++;
        long l = z < rep_limit ? z : rep_limit;
        if (l < allowed)
            continue;
        int tok = RTOK(k - 1);
        if (tok < 0 || tok >= V)
            continue;
        if (!maxlen[tok])
            touched[ntouched++] = tok;
        if (l + 1 > maxlen[tok])
            maxlen[tok] = (int32_t)(l + 1); /* stored +1 so that 0 means none */
    }
    int max_exp = base > 1.000001 ? (int)(88.7228391f / logf((float)base)) : 0;
    for (int j = 0; j < ntouched; j++) {
        int tok = touched[j];
        long l = maxlen[tok] - 1;
        maxlen[tok] = 0;
        int single_breaker = 0;
        int off = 0;
        for (int b = 0; b < p->n_brk; b++) {
            single_breaker |= p->brk_len[b] == 1 && p->ids[off] == tok;
            off += p->brk_len[b];
        }
        if (single_breaker)
            continue;
        long ex = l - allowed;
        if (max_exp > 0 && ex > max_exp)
            ex = max_exp;
        /* llama: float multiplier times a double power, subtracted in double */
        x[tok] = (float)((double)x[tok] - (double)(float)mult * pow((double)(float)base, (double)ex));
    }
#undef RTOK
}

int asn_apply_llama(const asn_proc *p, float *x, int V, const asn_seq_ctx *ctx, asn_seq_state *st,
                    asn_workspace *ws, asn_err *e)
{
    switch (p->kind) {
    case ASN_PROC_LLAMA_TEMP: llama_temp(p, x, V); break;
    case ASN_PROC_LLAMA_TOP_K: llama_top_k(p, x, V, ws); break;
    case ASN_PROC_LLAMA_TOP_P: llama_top_p(p, x, V, ws); break;
    case ASN_PROC_LLAMA_MIN_P: llama_min_p(p, x, V, ws); break;
    case ASN_PROC_LLAMA_TYPICAL: llama_typical(p, x, V, ws); break;
    case ASN_PROC_TOP_N_SIGMA: top_n_sigma(p, x, V); break;
    case ASN_PROC_XTC: xtc(p, x, V, ctx, ws); break;
    case ASN_PROC_PENALTIES: penalties(p, x, V, ctx, ws); break;
    case ASN_PROC_DRY: dry(p, x, V, ctx, ws); break;
    case ASN_PROC_MIROSTAT_V2_TRUNCATE: mirostat_truncate((float)p->f[0], x, V, ws); break;
    case ASN_PROC_MIROSTAT_V2: {
        float mu = st && st->has_mu ? st->mu : (float)(2 * p->f[0]);
        mirostat_truncate(mu, x, V, ws);
        break;
    }
    default: return asn_err_set(e, "not a llama.cpp sampler");
    }
    return 0;
}
