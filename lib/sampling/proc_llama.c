/* proc_llama.c — llama.cpp's samplers (src/llama-sampling.cpp) on a full
 * row: llama's candidate array is the set of finite tokens, and "dropped"
 * is -inf. llama sums in float, sequentially, over candidates sorted by
 * descending logit; we sort the same way (ties: lower token id first, one
 * of the orders std::sort may produce). See docs/sampling.md §5. */
#include "proc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- parameters */

typedef struct temp_params {
    double temp;
} temp_params;

typedef struct top_k_params {
    long k;
} top_k_params;

/* llama_top_p (top_p), llama_min_p (min_p), llama_typical (typ_p) */
typedef struct keep_params {
    double cut;
    long min_keep;
} keep_params;

typedef struct sigma_params {
    double n; /* top_n_sigma */
} sigma_params;

typedef struct xtc_params {
    double probability, threshold;
    long min_keep;
} xtc_params;

typedef struct penalties_params {
    long last_n;
    double repeat, freq, present;
} penalties_params;

typedef struct dry_params {
    double multiplier, base;
    long allowed_length, last_n, n_ctx;
    asn_breakers breakers; /* seq_breakers */
} dry_params;

typedef struct mirostat_params {
    double tau, eta;
} mirostat_params;

typedef struct truncate_params {
    double mu;
} truncate_params;

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

static int llama_temp(const asn_proc *p, float *x, int V, const asn_seq_ctx *ctx, asn_seq_state *st, asn_workspace *ws,
                      asn_err *e)
{
    float t = (float)((const temp_params *)p->params)->temp;
    if (t <= 0) { /* keep the first maximum only */
        int best = -1;
        for (int i = 0; i < V; i++)
            if (x[i] != -INFINITY && (best < 0 || x[i] > x[best]))
                best = i;
        for (int i = 0; i < V; i++)
            if (i != best)
                x[i] = -INFINITY;
        return 0;
    }
    for (int i = 0; i < V; i++)
        x[i] = x[i] / t;
    return 0;
}

static int llama_top_k(const asn_proc *p, float *x, int V, const asn_seq_ctx *ctx, asn_seq_state *st, asn_workspace *ws,
                       asn_err *e)
{
    long k = ((const top_k_params *)p->params)->k;
    if (k <= 0)
        return 0;
    int32_t *ord = ord_buf(ws);
    int n = sort_desc(ws, x, V, ord);
    keep_prefix(x, ord, n, k < n ? (int)k : n);
    return 0;
}

static int llama_top_p(const asn_proc *p, float *x, int V, const asn_seq_ctx *ctx, asn_seq_state *st, asn_workspace *ws,
                       asn_err *e)
{
    const keep_params *a = p->params;
    float top_p = (float)a->cut;
    if (top_p >= 1)
        return 0;
    int32_t *ord = ord_buf(ws);
    int n = sort_desc(ws, x, V, ord);
    llama_softmax(x, ord, n, ws->p);
    float cum = 0;
    int keep = n;
    for (int j = 0; j < n; j++) {
        cum += ws->p[j];
        if (cum >= top_p && j + 1 >= a->min_keep) {
            keep = j + 1;
            break;
        }
    }
    keep_prefix(x, ord, n, keep);
    return 0;
}

static int llama_min_p(const asn_proc *p, float *x, int V, const asn_seq_ctx *ctx, asn_seq_state *st, asn_workspace *ws,
                       asn_err *e)
{
    const keep_params *a = p->params;
    float min_p = (float)a->cut;
    if (min_p <= 0)
        return 0;
    float lmax = asn_row_max(x, V);
    float thr = lmax + logf(min_p);
    int kept = 0;
    for (int i = 0; i < V; i++)
        kept += x[i] != -INFINITY && x[i] >= thr;
    long min_keep = a->min_keep;
    if (kept >= min_keep) {
        for (int i = 0; i < V; i++)
            if (x[i] < thr)
                x[i] = -INFINITY;
        return 0;
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
    return 0;
}

static int llama_typical(const asn_proc *p, float *x, int V, const asn_seq_ctx *ctx, asn_seq_state *st, asn_workspace *ws,
                         asn_err *e)
{
    const keep_params *a = p->params;
    float typ_p = (float)a->cut;
    if (typ_p >= 1)
        return 0;
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
    long min_keep = a->min_keep;
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
    return 0;
}

static int top_n_sigma(const asn_proc *p, float *x, int V, const asn_seq_ctx *ctx, asn_seq_state *st, asn_workspace *ws,
                       asn_err *e)
{
    float nsig = (float)((const sigma_params *)p->params)->n;
    if (nsig <= 0)
        return 0;
    float mx = -INFINITY, sum = 0;
    int cnt = 0;
    for (int i = 0; i < V; i++)
        if (x[i] != -INFINITY) {
            mx = x[i] > mx ? x[i] : mx;
            sum += x[i];
            cnt++;
        }
    if (cnt < 2)
        return 0;
    float mean = sum / (float)cnt, acc = 0;
    for (int i = 0; i < V; i++)
        if (x[i] != -INFINITY)
            acc += (x[i] - mean) * (x[i] - mean);
    float sd = sqrtf(acc / (float)cnt);
    for (int i = 0; i < V; i++)
        if (x[i] < mx - nsig * sd)
            x[i] = -INFINITY;
    return 0;
}

static int xtc(const asn_proc *p, float *x, int V, const asn_seq_ctx *ctx, asn_seq_state *st, asn_workspace *ws,
               asn_err *e)
{
    const xtc_params *a = p->params;
    float prob = (float)a->probability, thr = (float)a->threshold;
    if (prob <= 0 || thr > 0.5f)
        return 0;
    int32_t *ord = ord_buf(ws);
    int n = sort_desc(ws, x, V, ord);
    if (n < 2)
        return 0;
    /* llama draws from its own generator; ours is the counter RNG */
    float r = ctx ? (float)asn_rng_uniform(ctx->key, ctx->step, ASN_STREAM_XTC) : 0.0f;
    if (r > prob)
        return 0;
    llama_softmax(x, ord, n, ws->p);
    int pos_last = 0;
    for (int j = 0; j < n; j++) {
        if (ws->p[j] >= thr)
            pos_last = j;
        else
            break;
    }
    if (n - pos_last >= a->min_keep && pos_last > 0)
        for (int j = 0; j < pos_last; j++)
            x[ord[j]] = -INFINITY;
    return 0;
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

static int mirostat_v2_truncate(const asn_proc *p, float *x, int V, const asn_seq_ctx *ctx, asn_seq_state *st, asn_workspace *ws,
                                asn_err *e)
{
    mirostat_truncate((float)((const truncate_params *)p->params)->mu, x, V, ws);
    return 0;
}

/* mu starts at 2 tau and is carried per sequence (asn_seq_state). */
static int mirostat_v2(const asn_proc *p, float *x, int V, const asn_seq_ctx *ctx, asn_seq_state *st, asn_workspace *ws,
                       asn_err *e)
{
    const mirostat_params *a = p->params;
    float mu = st && st->has_mu ? st->mu : (float)(2 * a->tau);
    mirostat_truncate(mu, x, V, ws);
    return 0;
}

/* After the draw: the surprise of the chosen token under the renormalized
 * kept distribution moves mu: mu -= eta * (surprise - tau). */
static void mirostat_v2_accept(const asn_proc *p, const float *row, int V, int token, asn_seq_state *state)
{
    const mirostat_params *a = p->params;
    float m = -INFINITY;
    for (int i = 0; i < V; i++)
        m = row[i] > m ? row[i] : m;
    float S = 0;
    for (int i = 0; i < V; i++)
        S += asn_expf(row[i] - m);
    float psel = asn_expf(row[token] - m) / S;
    float surprise = -log2f(psel);
    if (!state->has_mu) {
        state->has_mu = 1;
        state->mu = (float)(2 * a->tau);
    }
    state->mu -= (float)a->eta * (surprise - (float)a->tau);
}

/* ------------------------------------------------------------- penalties */

static int penalties(const asn_proc *p, float *x, int V, const asn_seq_ctx *ctx, asn_seq_state *st, asn_workspace *ws,
                     asn_err *e)
{
    const penalties_params *a = p->params;
    long last_n = a->last_n;
    float rep = (float)a->repeat, freq = (float)a->freq, pres = (float)a->present;
    int n = ctx ? ctx->n_ids : 0;
    if (last_n == 0 || (rep == 1 && freq == 0 && pres == 0) || n == 0)
        return 0;
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
    return 0;
}

/* DRY (Don't Repeat Yourself, by p-e-w): penalizes the token that would
 * extend a repeat of the recent context, exponentially in its length. */
static int dry(const asn_proc *p, float *x, int V, const asn_seq_ctx *ctx, asn_seq_state *st, asn_workspace *ws,
               asn_err *e)
{
    const dry_params *a = p->params;
    const asn_breakers *brk = &a->breakers;
    double mult = a->multiplier, base = a->base;
    long allowed = a->allowed_length, last_n = a->last_n;
    int len = ctx ? ctx->n_ids : 0;
    long n_ctx = a->n_ctx > 0 ? a->n_ctx : len;
    if (mult == 0 || base < 1 || last_n == 0)
        return 0;
    if (last_n < 0)
        last_n = n_ctx;
    long N = len;
    if (last_n < N)
        N = last_n;
    if (n_ctx < N)
        N = n_ctx;
    if (N <= allowed)
        return 0;
    const int32_t *ids = ctx->ids;
#define RTOK(i) ids[len - 1 - (i)]
    /* rep_limit: how far back a repeat may reach before a sequence breaker */
    long rep_limit = N;
    for (long i = 0; i < N && rep_limit == N; i++) {
        long best_tail = -1;
        int off = 0;
        for (int b = 0; b < brk->n; b++) {
            const int32_t *seq = brk->ids + off;
            int blen = brk->len[b];
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
        return 0;
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
        for (int b = 0; b < brk->n; b++) {
            single_breaker |= brk->len[b] == 1 && brk->ids[off] == tok;
            off += brk->len[b];
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
    return 0;
}

/* ------------------------------------------------------------- the rows */

/* llama.cpp validates almost nothing: out-of-range values mean "off". */
#define MIN_KEEP(T) \
    ASN_INT("min_keep", T, min_keep, 0, 1, ASN_LO_INCL, 0, 0, "Candidates always kept (>= 0, default 1).")

const asn_proc_iface asn_procs_llama[] = {
    {.name = "llama_temp", .kind = ASN_PROC_LLAMA_TEMP, .size = sizeof(temp_params),
     .doc = "llama.cpp temperature: temp <= 0 keeps only the first maximum.",
     .params = {ASN_REAL("temp", temp_params, temp, 1, 0, 0, 0, 0, "Any number.")},
     .flags = ASN_PF_OVERFLOW, .apply = llama_temp},
    {.name = "llama_top_k", .kind = ASN_PROC_LLAMA_TOP_K, .size = sizeof(top_k_params),
     .doc = "llama.cpp top-k: keep exactly min(k, n) candidates; k <= 0 is a no-op.",
     .params = {ASN_INT("top_k", top_k_params, k, 1, 0, 0, 0, 0, "Any integer.")},
     .apply = llama_top_k},
    {.name = "llama_top_p", .kind = ASN_PROC_LLAMA_TOP_P, .size = sizeof(keep_params),
     .doc = "llama.cpp top-p; top_p >= 1 is a no-op.",
     .params = {ASN_REAL("top_p", keep_params, cut, 1, 0, 0, 0, 0, "Any number."), MIN_KEEP(keep_params)},
     .apply = llama_top_p},
    {.name = "llama_min_p", .kind = ASN_PROC_LLAMA_MIN_P, .size = sizeof(keep_params),
     .doc = "llama.cpp min-p, in logit space; min_p <= 0 is a no-op.",
     .params = {ASN_REAL("min_p", keep_params, cut, 1, 0, 0, 0, 0, "Any number."), MIN_KEEP(keep_params)},
     .apply = llama_min_p},
    {.name = "llama_typical", .kind = ASN_PROC_LLAMA_TYPICAL, .size = sizeof(keep_params),
     .doc = "llama.cpp locally typical sampling; typ_p >= 1 is a no-op.",
     .params = {ASN_REAL("typ_p", keep_params, cut, 1, 0, 0, 0, 0, "Any number."), MIN_KEEP(keep_params)},
     .apply = llama_typical},
    {.name = "top_n_sigma", .kind = ASN_PROC_TOP_N_SIGMA, .size = sizeof(sigma_params),
     .doc = "llama.cpp top-n-sigma: remove logits below max - n * std; n <= 0 is a no-op.",
     .params = {ASN_REAL("top_n_sigma", sigma_params, n, 1, 0, 0, 0, 0, "Any number.")},
     .apply = top_n_sigma},
    {.name = "xtc", .kind = ASN_PROC_XTC, .size = sizeof(xtc_params),
     .doc = "llama.cpp XTC (exclude top choices).",
     .params = {ASN_REAL("xtc_probability", xtc_params, probability, 1, 0, 0, 0, 0,
                         "Probability that the step fires (<= 0: no-op)."),
                ASN_REAL("xtc_threshold", xtc_params, threshold, 1, 0, 0, 0, 0,
                         "Probability threshold (> 0.5: no-op)."),
                MIN_KEEP(xtc_params)},
     .apply = xtc},
    {.name = "penalties", .kind = ASN_PROC_PENALTIES, .size = sizeof(penalties_params),
     .doc = "llama.cpp repetition / frequency / presence penalties over the last penalty_last_n tokens.",
     .params = {ASN_INT("penalty_last_n", penalties_params, last_n, 0, 64, ASN_LO_INCL, -1, 0,
                        "Window size; 0 disables, -1 means the whole history (default 64)."),
                ASN_REAL("penalty_repeat", penalties_params, repeat, 0, 1, 0, 0, 0,
                         "Multiplicative repetition penalty (default 1)."),
                ASN_REAL("penalty_freq", penalties_params, freq, 0, 0, 0, 0, 0, "Frequency penalty (default 0)."),
                ASN_REAL("penalty_present", penalties_params, present, 0, 0, 0, 0, 0,
                         "Presence penalty (default 0).")},
     .flags = ASN_PF_OVERFLOW, .apply = penalties},
    {.name = "dry", .kind = ASN_PROC_DRY, .size = sizeof(dry_params),
     .doc = "llama.cpp DRY (don't repeat yourself) penalty.",
     .params = {ASN_REAL("dry_multiplier", dry_params, multiplier, 1, 0, 0, 0, 0, "Penalty multiplier (0: off)."),
                ASN_REAL("dry_base", dry_params, base, 0, 1.75, 0, 0, 0,
                         "Base of the exponential penalty (default 1.75; < 1: off)."),
                ASN_INT("dry_allowed_length", dry_params, allowed_length, 0, 2, ASN_LO_INCL, 0, 0,
                        "Repeats up to this length are not penalized (>= 0, default 2)."),
                ASN_INT("dry_penalty_last_n", dry_params, last_n, 0, -1, ASN_LO_INCL, -1, 0,
                        "Window size; -1 means n_ctx (>= -1, default -1)."),
                {"seq_breakers", ASN_P_BREAKERS, offsetof(dry_params, breakers), 0, 0, 0, 0, 0, 0,
                 "Sequence breakers, each a non-empty list of token ids (string breakers would need a tokenizer).",
                 NULL},
                ASN_INT("n_ctx", dry_params, n_ctx, 0, 0, ASN_LO_INCL, 0, 0,
                        "Context size that dry_penalty_last_n = -1 stands for (>= 0; default 0 = the whole "
                        "history).")},
     .flags = ASN_PF_OVERFLOW, .apply = dry},
    /* samples from its own truncated distribution: last in its heuristic */
    {.name = "mirostat_v2", .kind = ASN_PROC_MIROSTAT_V2, .size = sizeof(mirostat_params),
     .doc = "llama.cpp Mirostat v2 (stateful); must be the last processor of its pipeline.",
     .params = {ASN_REAL("tau", mirostat_params, tau, 1, 0, ASN_LO_INCL, 0, 0, "Target surprise in bits (>= 0)."),
                ASN_REAL("eta", mirostat_params, eta, 1, 0, ASN_LO_INCL, 0, 0, "Learning rate (>= 0).")},
     .flags = ASN_PF_LAST, .apply = mirostat_v2, .accept = mirostat_v2_accept},
    {.name = "mirostat_v2_truncate", .kind = ASN_PROC_MIROSTAT_V2_TRUNCATE, .size = sizeof(truncate_params),
     .doc = "Mirostat v2's truncation step alone, with a given mu.",
     .params = {ASN_REAL("mu", truncate_params, mu, 1, 0, 0, 0, 0, "Surprise bound in bits.")},
     .apply = mirostat_v2_truncate},
    {0},
};
