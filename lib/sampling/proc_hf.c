/* proc_hf.c — the HuggingFace logits processors (transformers'
 * generation/logits_process.py), in the float32 arithmetic that matches
 * torch on CPU (docs/sampling.md §2-3), plus OpenAI-style presence and
 * frequency penalties and greedy. Truncation filters never sort the whole
 * vocabulary: they collect the tokens near their cut (order.c). */
#include "proc.h"

#include <math.h>
#include <string.h>

/* ------------------------------------------------------------- parameters */

typedef struct temperature_params {
    double t;
} temperature_params;

typedef struct top_k_params {
    long k;
    long mtk; /* min_tokens_to_keep */
} top_k_params;

/* top_p, min_p, typical (mass), epsilon, eta (epsilon): a cut and mtk */
typedef struct cut_params {
    double cut;
    long mtk;
} cut_params;

typedef struct repetition_params {
    double penalty;
    long ignore; /* prompt_ignore_length */
} repetition_params;

typedef struct penalty_params { /* presence_penalty, frequency_penalty */
    double penalty;
} penalty_params;

typedef struct ngram_params {
    long n;
} ngram_params;

typedef struct min_new_params {
    long min_new;
    long skip;    /* prompt_length_to_skip */
    int has_skip;
    int has_eos;
    asn_ids eos;  /* eos_token_id */
} min_new_params;

/* ------------------------------------------------------------ temperature */

static int temperature(const asn_proc *p, float *x, int V, const asn_seq_ctx *ctx, asn_seq_state *st, asn_workspace *ws,
                       asn_err *e)
{
    const temperature_params *a = p->params;
    asn_scale_f32(x, (float)a->t, V); /* true division, as torch on CPU */
    return 0;
}

/* ------------------------------------------------------------------ top_k */

static int top_k(const asn_proc *p, float *x, int V, const asn_seq_ctx *ctx, asn_seq_state *st, asn_workspace *ws,
                 asn_err *e)
{
    const top_k_params *a = p->params;
    long k = a->k > a->mtk ? a->k : a->mtk;
    if (k >= V)
        return 0;
    float t = asn_kth_largest(ws, x, V, (int)k);
    for (int i = 0; i < V; i++)
        if (x[i] < t)
            x[i] = -INFINITY;
    return 0;
}

/* ------------------------------------------------------------------ top_p */

/* Torch sorts ascending and removes positions whose cumulative probability
 * (double accumulator, rounded to float) is <= 1 - top_p. The ascending sum
 * at a token is the mass of every token below it plus its own: we collect
 * the top of the row, take the mass below the collected set in one sum, and
 * walk the collected tokens upwards. */
static int top_p(const asn_proc *p, float *x, int V, const asn_seq_ctx *ctx, asn_seq_state *st, asn_workspace *ws,
                 asn_err *e)
{
    const cut_params *a = p->params;
    const float thr = (float)(1.0 - a->cut);
    const int mtk = (int)(a->mtk < V ? a->mtk : V);
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
            return 0;
        if (first < 0)
            first = 0; /* everything collected is kept; nothing below survives */
        asn_keep_only(x, V, ws->keys + first, n - first);
        return 0;
    }
    return 0;
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

static int min_p(const asn_proc *p, float *x, int V, const asn_seq_ctx *ctx, asn_seq_state *st, asn_workspace *ws,
                 asn_err *e)
{
    const cut_params *a = p->params;
    const float *q = ws->p;
    asn_softmax_ref(x, V, ws->e, ws->p, NULL);
    const float pmax = asn_row_max(q, V);
    const float thr = (float)a->cut * pmax;
    int mtk = (int)(a->mtk < V ? a->mtk : V);
    if (mtk <= 1) { /* the argmax always passes */
        for (int i = 0; i < V; i++)
            x[i] = q[i] < thr ? -INFINITY : x[i];
        return 0;
    }
    uint32_t mark = asn_ws_new_mark(ws);
    protect_top(ws, x, V, mtk, mark);
    for (int i = 0; i < V; i++)
        if (q[i] < thr && ws->stamp[i] != mark)
            x[i] = -INFINITY;
    return 0;
}

/* ---------------------------------------------------------------- typical */

static int typical(const asn_proc *p, float *x, int V, const asn_seq_ctx *ctx, asn_seq_state *st, asn_workspace *ws,
                   asn_err *e)
{
    const cut_params *a = p->params;
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
    const float mass = (float)a->cut;
    const int mtk = (int)(a->mtk < V ? a->mtk : V);
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
            return 0; /* cannot happen for finite rows: every s <= +inf */
        if (L < 0)
            L = n - 1; /* HF clamps the cut index to V - 1 */
        const float tau = asn_pack_val(ws->keys[L]);
        if (mtk <= 1) { /* the most typical token has s = smin <= tau */
            for (int i = 0; i < V; i++)
                x[i] = s[i] > tau ? -INFINITY : x[i];
            return 0;
        }
        uint32_t mark = asn_ws_new_mark(ws);
        for (int j = 0; j < mtk && j < n; j++)
            ws->stamp[asn_pack_tok(ws->keys[j])] = mark;
        for (int i = 0; i < V; i++)
            if (s[i] > tau && ws->stamp[i] != mark)
                x[i] = -INFINITY;
        return 0;
    }
    return 0;
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

static int epsilon(const asn_proc *p, float *x, int V, const asn_seq_ctx *ctx, asn_seq_state *st, asn_workspace *ws,
                   asn_err *e)
{
    const cut_params *a = p->params;
    asn_softmax_ref(x, V, ws->e, ws->p, NULL);
    remove_improbable(x, ws->p, V, (float)a->cut, (int)a->mtk, ws);
    return 0;
}

/* Hewitt et al. 2022: eta = min(eps, sqrt(eps) * exp(-H)), H in nats. */
static int eta(const asn_proc *p, float *x, int V, const asn_seq_ctx *ctx, asn_seq_state *st, asn_workspace *ws,
               asn_err *e)
{
    const cut_params *a = p->params;
    float m;
    double S = asn_softmax_ref(x, V, ws->e, ws->p, &m);
    const float *q = ws->p;
    const float lse = m + (float)log(S);
    /* lhat = x - lse clamped at -FLT_MAX: removed tokens give q * lhat = 0 */
    float *lh = ws->f;
    for (int i = 0; i < V; i++)
        lh[i] = x[i] - lse;
    double H = -asn_nansum_prod(q, lh, V);
    const float epsf = (float)a->cut;
    const float bound = fminf(epsf, sqrtf(epsf) * expf(-(float)H));
    remove_improbable(x, q, V, bound, (int)a->mtk, ws);
    return 0;
}

/* -------------------------------------------------- history-driven ones */

static const int32_t *hist(const asn_seq_ctx *c, int *n)
{
    *n = c ? c->n_ids : 0;
    return c ? c->ids : NULL;
}

static int repetition_penalty(const asn_proc *p, float *x, int V, const asn_seq_ctx *ctx, asn_seq_state *st, asn_workspace *ws,
                              asn_err *e)
{
    const repetition_params *a = p->params;
    int n;
    const int32_t *ids = hist(ctx, &n);
    const float pen = (float)a->penalty;
    uint32_t mark = asn_ws_new_mark(ws);
    for (int j = (int)a->ignore; j < n; j++) {
        int t = ids[j];
        if (t < 0 || t >= V || ws->stamp[t] == mark)
            continue;
        ws->stamp[t] = mark; /* each token once, however often it occurred */
        x[t] = x[t] < 0 ? x[t] * pen : x[t] / pen;
    }
    return 0;
}

/* OpenAI: logit -= count * frequency_penalty + [count > 0] * presence_penalty,
 * counting generated tokens only (not the prompt). */
static void openai_penalty(const asn_proc *p, float *x, int V, const asn_seq_ctx *ctx,
                           asn_workspace *ws, int frequency)
{
    const penalty_params *a = p->params;
    int n;
    const int32_t *ids = hist(ctx, &n);
    int start = ctx ? ctx->n_prompt : 0;
    const float pen = (float)a->penalty;
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

static int presence_penalty(const asn_proc *p, float *x, int V, const asn_seq_ctx *ctx, asn_seq_state *st, asn_workspace *ws,
                            asn_err *e)
{
    openai_penalty(p, x, V, ctx, ws, 0);
    return 0;
}

static int frequency_penalty(const asn_proc *p, float *x, int V, const asn_seq_ctx *ctx, asn_seq_state *st, asn_workspace *ws,
                             asn_err *e)
{
    openai_penalty(p, x, V, ctx, ws, 1);
    return 0;
}

static int no_repeat_ngram(const asn_proc *p, float *x, int V, const asn_seq_ctx *ctx, asn_seq_state *st, asn_workspace *ws,
                           asn_err *e)
{
    const ngram_params *a = p->params;
    int L;
    const int32_t *ids = hist(ctx, &L);
    const int ng = (int)a->n;
    if (L < ng)
        return 0;
    const int32_t *prefix = ids + L - (ng - 1);
    for (int i = 0; i + ng <= L; i++) {
        if (ng > 1 && memcmp(ids + i, prefix, (size_t)(ng - 1) * sizeof *ids))
            continue;
        int t = ids[i + ng - 1];
        if (t >= 0 && t < V)
            x[t] = -INFINITY;
    }
    return 0;
}

static int min_new_tokens(const asn_proc *p, float *x, int V, const asn_seq_ctx *ctx, asn_seq_state *st, asn_workspace *ws,
                          asn_err *e)
{
    const min_new_params *a = p->params;
    int n;
    hist(ctx, &n);
    long skip = a->has_skip ? a->skip : (ctx ? ctx->n_prompt : 0);
    if ((long)n - skip >= a->min_new)
        return 0;
    const int32_t *eos = a->has_eos ? a->eos.v : (ctx ? ctx->eos : NULL);
    int ne = a->has_eos ? a->eos.n : (ctx ? ctx->n_eos : 0);
    for (int j = 0; j < ne; j++)
        if (eos[j] >= 0 && eos[j] < V)
            x[eos[j]] = -INFINITY;
    return 0;
}

/* First maximal index (strict > scan), as torch.argmax and llama.cpp. */
static int greedy(const asn_proc *p, float *x, int V, const asn_seq_ctx *ctx, asn_seq_state *st, asn_workspace *ws,
                  asn_err *e)
{
    int best = 0;
    for (int i = 1; i < V; i++)
        if (x[i] > x[best])
            best = i;
    for (int i = 0; i < V; i++)
        if (i != best)
            x[i] = -INFINITY;
    return 0;
}

/* ------------------------------------------------------------- the rows */

/* Ranges are those HuggingFace validates, and OpenAI's [-2, 2] for the
 * presence and frequency penalties. */
#define MTK(T) ASN_INT("min_tokens_to_keep", T, mtk, 0, 1, ASN_LO_INCL, 1, 0, "Keep at least this many tokens (default 1).")
#define MTK_TRUNC(T)                                                                                          \
    {"min_tokens_to_keep", ASN_P_INT_TRUNC, offsetof(T, mtk), 0, 0, 1, ASN_LO_INCL, 1, 0,                     \
     "Keep at least this many tokens (default 1); truncated to an integer as HF's int() does, so 2.7 means 2.", \
     NULL}

const asn_proc_iface asn_procs_hf[] = {
    {.name = "temperature", .kind = ASN_PROC_TEMPERATURE, .size = sizeof(temperature_params),
     .doc = "HF TemperatureLogitsWarper: divide the logits by T.",
     .params = {ASN_REAL("temperature", temperature_params, t, 1, 0, ASN_LO_EXCL, 0, 0,
                         "T > 0 (an integer such as 1 is accepted).")},
     .flags = ASN_PF_OVERFLOW, .apply = temperature},
    {.name = "top_k", .kind = ASN_PROC_TOP_K, .size = sizeof(top_k_params),
     .doc = "HF TopKLogitsWarper: keep the tokens tied with or above the k-th largest logit.",
     .params = {ASN_INT("top_k", top_k_params, k, 1, 0, ASN_LO_EXCL, 0, 0, "k > 0."),
                ASN_INT("min_tokens_to_keep", top_k_params, mtk, 0, 1, 0, 0, 0,
                        "k is raised to at least this value (not range-checked, as in HF; default 1).")},
     .apply = top_k},
    {.name = "top_p", .kind = ASN_PROC_TOP_P, .size = sizeof(cut_params),
     .doc = "HF TopPLogitsWarper (nucleus): keep the smallest prefix holding probability mass top_p.",
     .params = {ASN_REAL("top_p", cut_params, cut, 1, 0, ASN_LO_INCL | ASN_HI_INCL, 0, 1, "0 <= top_p <= 1."),
                MTK(cut_params)},
     .apply = top_p},
    {.name = "min_p", .kind = ASN_PROC_MIN_P, .size = sizeof(cut_params),
     .doc = "HF MinPLogitsWarper: remove tokens with p < min_p * max p.",
     .params = {ASN_REAL("min_p", cut_params, cut, 1, 0, ASN_LO_INCL | ASN_HI_INCL, 0, 1, "0 <= min_p <= 1."),
                MTK(cut_params)},
     .apply = min_p},
    {.name = "typical", .kind = ASN_PROC_TYPICAL, .size = sizeof(cut_params),
     .doc = "HF TypicalLogitsWarper (locally typical sampling).",
     .params = {ASN_REAL("mass", cut_params, cut, 1, 0, ASN_LO_EXCL | ASN_HI_EXCL, 0, 1, "0 < mass < 1."),
                MTK(cut_params)},
     .apply = typical},
    {.name = "epsilon", .kind = ASN_PROC_EPSILON, .size = sizeof(cut_params),
     .doc = "HF EpsilonLogitsWarper: remove tokens with p < epsilon.",
     .params = {ASN_REAL("epsilon", cut_params, cut, 1, 0, ASN_LO_EXCL | ASN_HI_EXCL, 0, 1, "0 < epsilon < 1."),
                MTK_TRUNC(cut_params)},
     .apply = epsilon},
    {.name = "eta", .kind = ASN_PROC_ETA, .size = sizeof(cut_params),
     .doc = "HF EtaLogitsWarper: entropy-dependent epsilon cut (the parameter is called epsilon, as in the "
            "reference).",
     .params = {ASN_REAL("epsilon", cut_params, cut, 1, 0, ASN_LO_EXCL | ASN_HI_EXCL, 0, 1, "0 < epsilon < 1."),
                MTK_TRUNC(cut_params)},
     .apply = eta},
    {.name = "repetition_penalty", .kind = ASN_PROC_REPETITION_PENALTY, .size = sizeof(repetition_params),
     .doc = "HF RepetitionPenaltyLogitsProcessor: each token of the history is penalized once.",
     .params = {ASN_REAL("penalty", repetition_params, penalty, 1, 0, ASN_LO_EXCL, 0, 0,
                         "penalty > 0 (< 1 rewards repetition)."),
                ASN_INT("prompt_ignore_length", repetition_params, ignore, 0, 0, ASN_LO_INCL, 0, 0,
                        "How many leading ids of the history are ignored (default 0).")},
     .flags = ASN_PF_OVERFLOW, .apply = repetition_penalty},
    {.name = "presence_penalty", .kind = ASN_PROC_PRESENCE_PENALTY, .size = sizeof(penalty_params),
     .doc = "OpenAI presence penalty: subtract penalty from the logit of every token that occurs in the "
            "generated part of the history (after the record's prompt_length).",
     .params = {ASN_REAL("penalty", penalty_params, penalty, 1, 0, ASN_LO_INCL | ASN_HI_INCL, -2, 2,
                         "-2 <= penalty <= 2.")},
     .flags = ASN_PF_OVERFLOW, .apply = presence_penalty},
    {.name = "frequency_penalty", .kind = ASN_PROC_FREQUENCY_PENALTY, .size = sizeof(penalty_params),
     .doc = "OpenAI frequency penalty: subtract count * penalty from the logit of every token, count being its "
            "occurrences in the generated part of the history (after the record's prompt_length).",
     .params = {ASN_REAL("penalty", penalty_params, penalty, 1, 0, ASN_LO_INCL | ASN_HI_INCL, -2, 2,
                         "-2 <= penalty <= 2.")},
     .flags = ASN_PF_OVERFLOW, .apply = frequency_penalty},
    {.name = "no_repeat_ngram", .kind = ASN_PROC_NO_REPEAT_NGRAM, .size = sizeof(ngram_params),
     .doc = "HF NoRepeatNGramLogitsProcessor: ban tokens that would repeat an n-gram of the history.",
     .params = {ASN_INT("ngram_size", ngram_params, n, 1, 0, ASN_LO_EXCL, 0, 0, "n > 0.")},
     .apply = no_repeat_ngram},
    {.name = "min_new_tokens", .kind = ASN_PROC_MIN_NEW_TOKENS, .size = sizeof(min_new_params),
     .doc = "HF MinNewTokensLengthLogitsProcessor: mask EOS until enough tokens were generated.",
     .params = {ASN_INT("min_new_tokens", min_new_params, min_new, 1, 0, ASN_LO_INCL, 0, 0,
                        "Tokens to generate before EOS is allowed (>= 0)."),
                {"prompt_length_to_skip", ASN_P_INT, offsetof(min_new_params, skip),
                 offsetof(min_new_params, has_skip), 0, 0, ASN_LO_INCL, 0, 0,
                 "How many ids of the history are prompt (>= 0, default 0).", NULL},
                {"eos_token_id", ASN_P_IDS, offsetof(min_new_params, eos), offsetof(min_new_params, has_eos),
                 0, 0, 0, 0, 0, "The EOS id or ids (default: the record's eos_token_ids).", NULL}},
     .apply = min_new_tokens},
    {.name = "greedy", .kind = ASN_PROC_GREEDY,
     .doc = "Keep only the first token holding the maximum logit (argmax).", .apply = greedy},
    {0},
};
