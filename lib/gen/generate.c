/* generate.c — the candidate generator: continuous batching over the
 * engine, prompts prefilled once and shared by fork, sampling of every live
 * sequence in parallel (each with its own workspace), deterministic per job. */
#include "asn/gen.h"
#include "asn/chat.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

const char *asn_finish_name(asn_finish f)
{
    switch (f) {
    case ASN_FINISH_EOS: return "eos";
    case ASN_FINISH_STOP: return "stop";
    case ASN_FINISH_LENGTH: return "length";
    default: return "none";
    }
}

void asn_gen_job_clear(asn_gen_job *j)
{
    free(j->tokens);
    free(j->generation);
    free(j->logprobs);
    free(j->top_ids);
    free(j->top_lps);
    free(j->error);
    j->tokens = NULL;
    j->generation = NULL;
    j->logprobs = NULL;
    j->top_ids = NULL;
    j->top_lps = NULL;
    j->error = NULL;
    j->n_tokens = 0;
    j->finish = ASN_FINISH_NONE;
}

void asn_prompt_id(const char *system, const char *prompt, char out[17])
{
    size_t sl = system ? strlen(system) : 0, pl = strlen(prompt);
    char *buf = asn_xmalloc(sl + pl + 1), hex[65];
    memcpy(buf, system ? system : "", sl);
    buf[sl] = 0x1f;
    memcpy(buf + sl + 1, prompt, pl);
    asn_sha256_hex(buf, sl + pl + 1, hex);
    free(buf);
    memcpy(out, hex, 16);
    out[16] = 0;
}

char *asn_gen_prompt_text(int chat_template, const char *system, const char *prompt, asn_err *e)
{
    asn_chat_msg msgs[2];
    size_t nm = 0;
    if (system && *system)
        msgs[nm++] = (asn_chat_msg){"system", system};
    msgs[nm++] = (asn_chat_msg){"user", prompt};
    return asn_chat_format(chat_template, msgs, nm, 1, e);
}

int asn_gen_tokenize_prompt(const asn_vocab *v, const char *text, int32_t **ids, int *n, asn_err *e)
{
    size_t len;
    if (asn_tokenize(v, text, strlen(text), 1, 1, ids, &len, e))
        return -1;
    /* a text that opens with the BOS token's own text (a template that
     * writes it) gets no second one */
    int32_t bos = asn_vocab_bos(v);
    if (len >= 2 && bos >= 0 && (*ids)[0] == bos && (*ids)[1] == bos) {
        memmove(*ids, *ids + 1, (len - 1) * sizeof **ids);
        len--;
    }
    if (len == 0) {
        free(*ids);
        return asn_err_set(e, "the prompt has no tokens");
    }
    *n = (int)len;
    return 0;
}

int asn_gen_prompt_tokens(const asn_vocab *v, int chat_template, const char *system,
                          const char *prompt, int32_t **ids, int *n, asn_err *e)
{
    char *text = asn_gen_prompt_text(chat_template, system, prompt, e);
    if (!text)
        return -1;
    int rc = asn_gen_tokenize_prompt(v, text, ids, n, e);
    free(text);
    return rc;
}

/* ------------------------------------------------------------ generator */

/* A prompt prefilled once; its jobs fork from it. */
typedef struct root {
    int32_t *toks;    /* a copy of the prompt */
    int n;
    int seq;          /* -1 until prefilled */
    int remaining;    /* jobs of this prompt not forked yet; 0: idle (kept, asn_gen_stream_keep) */
    float *logits;    /* last position's logits */
    unsigned long last_use; /* when it last became idle */
    struct root *next;
} root;

typedef struct slot {
    asn_gen_job *job; /* NULL: free */
    root *r;
    int seq;          /* -1 until forked */
    int32_t *hist;    /* prompt + generated */
    int n_gen;
    int fresh;        /* logits hold the next step's row */
    int failed;       /* sampling failed this step (message in err) */
    float *logits;
    float *raw;       /* with top_logprobs: the row before the heuristic */
    asn_seq_state st;
    asn_rng_key key;
    double kept;      /* tokens left finite by the heuristic, summed over the steps */
    asn_err err;
} slot;

struct asn_generator {
    asn_model *m;
    const asn_vocab *v;
    asn_pool *pool;
    asn_engine *en;
    int batch, V, n_ctx;
    asn_gen_settings s;
    const int32_t *eog;
    size_t n_eog;
    asn_workspace **ws;
};

asn_generator *asn_generator_new(asn_model *m, asn_pool *pool, int batch, int n_ctx,
                                 const asn_gen_settings *s, asn_err *e)
{
    if (batch < 1 || s->max_new_tokens < 1 || s->min_new_tokens < 0) {
        asn_err_set(e, "batch and max_new_tokens must be >= 1, min_new_tokens >= 0");
        return NULL;
    }
    const asn_vocab *v = asn_model_vocab(m, e);
    if (!v)
        return NULL;
    asn_engine *en = asn_engine_new(m, n_ctx, pool, e);
    if (!en)
        return NULL;
    asn_generator *g = asn_xcalloc(1, sizeof *g);
    g->m = m;
    g->v = v;
    g->pool = pool;
    g->en = en;
    g->batch = batch;
    g->V = asn_model_cfg(m)->n_vocab;
    g->n_ctx = n_ctx > 0 ? n_ctx : asn_model_cfg(m)->n_ctx_train;
    g->s = *s;
    g->n_eog = asn_vocab_eog_ids(v, &g->eog);
    int nt = asn_pool_size(pool);
    g->ws = asn_xcalloc((size_t)nt, sizeof *g->ws);
    for (int i = 0; i < nt; i++)
        g->ws[i] = asn_workspace_new();
    return g;
}

void asn_generator_free(asn_generator *g)
{
    if (!g)
        return;
    for (int i = 0; i < asn_pool_size(g->pool); i++)
        asn_workspace_free(g->ws[i]);
    free(g->ws);
    asn_engine_free(g->en);
    free(g);
}

/* The first occurrence of any stop string in text, or NULL. */
static const char *find_stop(const asn_gen_settings *s, const char *text, size_t n)
{
    const char *first = NULL;
    for (int i = 0; i < s->n_stop; i++) {
        size_t sl = strlen(s->stop[i]);
        const char *p = sl ? memmem(text, n, s->stop[i], sl) : NULL;
        if (p && (!first || p < first))
            first = p;
    }
    return first;
}

int asn_gen_ending(const asn_vocab *v, const asn_gen_settings *s, const int32_t *gen, int n, asn_finish *fin,
                   char **text, size_t *len, asn_err *e)
{
    *fin = ASN_FINISH_NONE;
    *text = NULL;
    *len = 0;
    if (n > 0 && asn_vocab_is_eog(v, gen[n - 1]))
        *fin = ASN_FINISH_EOS;
    int kept = n; /* the tokens the text is made of */
    for (int k = 0; k < s->n_stop_ids && !*fin; k++) {
        int L = s->stop_off[k + 1] - s->stop_off[k];
        if (L > 0 && L <= n && !memcmp(gen + n - L, s->stop_ids + s->stop_off[k], (size_t)L * sizeof *gen)) {
            *fin = ASN_FINISH_STOP;
            kept = n - L;
        }
    }
    if (!s->n_stop && !*fin && n < s->max_new_tokens)
        return 0;
    if (asn_detokenize(v, gen, (size_t)kept, 1, 0, text, len, e))
        return -1;
    const char *at = find_stop(s, *text, *len);
    if (at) { /* a stop string, before an EOS too: cut there */
        *len = (size_t)(at - *text);
        (*text)[*len] = 0;
        *fin = ASN_FINISH_STOP;
    }
    if (*fin == ASN_FINISH_NONE && n >= s->max_new_tokens)
        *fin = ASN_FINISH_LENGTH;
    return 0;
}

int asn_gen_stop_ids_from_json(const json_t *j, int32_t n_vocab, int32_t **ids, int **off, int *n, asn_err *e)
{
    *ids = NULL, *off = NULL, *n = 0;
    if (!j || json_is_null(j))
        return 0;
    if (!json_is_array(j))
        return asn_err_set(e, "stop token ids must be a list of lists of token ids");
    size_t total = 0, k, i;
    const json_t *seq, *t;
    json_array_foreach(j, k, seq) {
        if (!json_is_array(seq) || !json_array_size(seq))
            return asn_err_set(e, "stop token ids: element %zu is not a non-empty list of token ids", k);
        total += json_array_size(seq);
    }
    *ids = asn_xmalloc((total ? total : 1) * sizeof **ids);
    *off = asn_xmalloc((json_array_size(j) + 1) * sizeof **off);
    size_t at = 0;
    (*off)[0] = 0;
    json_array_foreach(j, k, seq) {
        json_array_foreach(seq, i, t) {
            if (!json_is_integer(t) || json_integer_value(t) < 0 || json_integer_value(t) >= n_vocab) {
                free(*ids), free(*off);
                *ids = NULL, *off = NULL;
                return asn_err_set(e, "stop token ids: element %zu.%zu is not a token id of this model (0..%d)", k, i,
                                   (int)n_vocab - 1);
            }
            (*ids)[at++] = (int32_t)json_integer_value(t);
        }
        (*off)[k + 1] = (int)at;
    }
    *n = (int)json_array_size(j);
    return 0;
}

int asn_gen_stop_ids_parse(const char *const *texts, int n_texts, int32_t n_vocab, int32_t **ids, int **off,
                           asn_err *e)
{
    json_t *j = json_array();
    for (int k = 0; k < n_texts; k++) {
        json_t *seq = json_array();
        const char *s = texts[k];
        for (;;) {
            char *end;
            long long v = strtoll(s, &end, 10);
            if (end == s || v < 0 || v > INT32_MAX || (*end && *end != ',')) {
                json_decref(seq), json_decref(j);
                return asn_err_set(e, "\"%.60s\" is not a comma-separated list of token ids", texts[k]);
            }
            json_array_append_new(seq, json_integer(v));
            if (!*end)
                break;
            s = end + 1;
        }
        json_array_append_new(j, seq);
    }
    int n;
    int rc = asn_gen_stop_ids_from_json(j, n_vocab, ids, off, &n, e);
    json_decref(j);
    return rc ? -1 : n;
}

json_t *asn_gen_stop_ids_json(const int32_t *ids, const int *off, int n)
{
    json_t *j = json_array();
    for (int k = 0; k < n; k++) {
        json_t *seq = json_array();
        for (int i = off[k]; i < off[k + 1]; i++)
            json_array_append_new(seq, json_integer(ids[i]));
        json_array_append_new(j, seq);
    }
    return j;
}

void asn_gen_mask_eog(const asn_heuristic *h, const asn_heuristic *pc, int min_new_tokens, float *row,
                      const asn_seq_ctx *ctx)
{
    int n_gen = ctx->n_ids - ctx->n_prompt;
    if (n_gen >= min_new_tokens)
        return;
    /* constrained text may end as soon as every constraint is complete */
    int may_end = pc ? asn_heuristic_may_end(pc, ctx) && (!asn_heuristic_constrained(h) || asn_heuristic_may_end(h, ctx))
                     : asn_heuristic_may_end(h, ctx);
    if (!may_end)
        for (int k = 0; k < ctx->n_eos; k++)
            row[ctx->eos[k]] = -INFINITY;
}

int asn_gen_process_row(const asn_heuristic *h, const asn_heuristic *pc, int min_new_tokens, float *row, int V,
                        const asn_seq_ctx *ctx, asn_seq_state *st, asn_workspace *ws, asn_err *e)
{
    int n_gen = ctx->n_ids - ctx->n_prompt;
    asn_gen_mask_eog(h, pc, min_new_tokens, row, ctx); /* min_new_tokens first (HF order) */
    if (pc && asn_pipeline_apply(pc, row, V, ctx, NULL, ws, e))
        return asn_err_prefix(e, "the prompt's constraint, step %d", n_gen);
    if (asn_pipeline_apply(h, row, V, ctx, st, ws, e))
        return asn_err_prefix(e, "heuristic \"%s\", step %d", h->name, n_gen);
    return 0;
}

static const asn_gen_settings *job_settings(const asn_generator *g, const asn_gen_job *j)
{
    return j->settings ? j->settings : &g->s;
}

/* Log-probabilities of the raw row for step k: the drawn token's and the
 * top_logprobs most likely (by value, then lower id). */
static void keep_logprobs(const asn_generator *g, asn_gen_job *job, const float *raw, int k, int tok)
{
    int V = g->V, K = job->top_logprobs;
    float mx = -INFINITY;
    for (int i = 0; i < V; i++)
        if (raw[i] > mx)
            mx = raw[i];
    double sum = 0;
    for (int i = 0; i < V; i++)
        sum += exp((double)raw[i] - mx);
    double lse = mx + log(sum);
    job->logprobs[k] = (float)(raw[tok] - lse);
    int32_t *ids = job->top_ids + (size_t)k * K;
    float *lps = job->top_lps + (size_t)k * K;
    int n = 0;
    for (int i = 0; i < V; i++) { /* insertion into a sorted list of K */
        if (n == K && !(raw[i] > raw[ids[n - 1]]))
            continue;
        int at = n < K ? n++ : K - 1;
        while (at > 0 && raw[i] > raw[ids[at - 1]]) {
            ids[at] = ids[at - 1];
            at--;
        }
        ids[at] = i;
    }
    for (int i = 0; i < K; i++)
        lps[i] = i < n ? (float)(raw[ids[i]] - lse) : -INFINITY;
}

/* Samples one token for a slot whose logits are fresh; sets its job's
 * outputs when it finishes. */
static int sample_slot(asn_generator *g, slot *sl, asn_workspace *ws, asn_err *e)
{
    asn_gen_job *job = sl->job;
    const asn_gen_settings *s = job_settings(g, job);
    float *row = sl->logits;
    if (job->top_logprobs > 0)
        memcpy(sl->raw, row, (size_t)g->V * sizeof *row);
    asn_seq_ctx ctx = {sl->hist, job->n_prompt + sl->n_gen, job->n_prompt, g->eog, (int)g->n_eog,
                       sl->key, (uint64_t)sl->n_gen, g->v};
    if (asn_gen_process_row(job->heuristic, job->constraint, s->min_new_tokens, row, g->V, &ctx, &sl->st, ws, e))
        return -1;
    int kept = 0;
    for (int i = 0; i < g->V; i++)
        kept += row[i] != -INFINITY;
    sl->kept += kept;
    int tok = asn_sample_row(row, g->V, asn_rng_uniform(sl->key, (uint64_t)sl->n_gen, ASN_STREAM_DRAW));
    if (tok < 0)
        return asn_err_set(e, "heuristic \"%s\", step %d: every token was removed", job->heuristic->name,
                           sl->n_gen);
    asn_pipeline_accept(job->heuristic, row, g->V, tok, &sl->st);
    if (job->top_logprobs > 0)
        keep_logprobs(g, job, sl->raw, sl->n_gen, tok);
    sl->hist[job->n_prompt + sl->n_gen++] = tok;
    sl->fresh = 0;
    const int32_t *gen = sl->hist + job->n_prompt;
    asn_finish fin;
    char *text;
    size_t len;
    if (asn_gen_ending(g->v, s, gen, sl->n_gen, &fin, &text, &len, e))
        return -1;
    if (fin == ASN_FINISH_NONE) {
        free(text);
        return 0;
    }
    job->finish = fin;
    job->kept_mean = sl->kept / sl->n_gen;
    job->generation = text;
    job->generation_len = len;
    job->n_tokens = sl->n_gen;
    job->tokens = asn_xmalloc((size_t)sl->n_gen * sizeof *job->tokens);
    memcpy(job->tokens, gen, (size_t)sl->n_gen * sizeof *job->tokens);
    return 0;
}

/* ---------------------------------------------------------------- stream */

struct asn_gen_stream {
    asn_generator *g;
    asn_gen_events ev;
    slot *slots;
    asn_batch_item *items;
    root *roots;            /* live roots, and idle ones (at most keep) */
    int keep, n_idle;       /* asn_gen_stream_keep */
    unsigned long clock;
    long prefills, reused;  /* asn_gen_stream_counts */
    asn_gen_job **wait;     /* added, not admitted yet (FIFO; NULL: cancelled) */
    size_t w_head, w_n, w_cap;
    int live, pending;
};

asn_gen_stream *asn_gen_stream_new(asn_generator *g, const asn_gen_events *ev)
{
    asn_gen_stream *s = asn_xcalloc(1, sizeof *s);
    s->g = g;
    if (ev)
        s->ev = *ev;
    s->slots = asn_xcalloc((size_t)g->batch, sizeof *s->slots);
    for (int i = 0; i < g->batch; i++) {
        s->slots[i].seq = -1;
        s->slots[i].logits = asn_xmalloc((size_t)g->V * sizeof(float));
    }
    s->items = asn_xmalloc((size_t)2 * g->batch * sizeof *s->items);
    return s;
}

static void root_release(asn_gen_stream *s, root *r)
{
    if (--r->remaining > 0)
        return;
    if (r->seq >= 0) { /* prefilled: kept, and the longest idle one freed when too many are */
        r->last_use = ++s->clock;
        if (++s->n_idle <= s->keep)
            return;
        for (root *o = s->roots; o; o = o->next)
            if (o->remaining == 0 && o->last_use < r->last_use)
                r = o;
        s->n_idle--;
    }
    if (r->seq >= 0)
        asn_seq_free(s->g->en, r->seq);
    free(r->logits);
    free(r->toks);
    for (root **p = &s->roots; *p; p = &(*p)->next)
        if (*p == r) {
            *p = r->next;
            break;
        }
    free(r);
}

void asn_gen_stream_free(asn_gen_stream *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->g->batch; i++) {
        if (s->slots[i].job && s->slots[i].seq >= 0)
            asn_seq_free(s->g->en, s->slots[i].seq);
        free(s->slots[i].hist);
        free(s->slots[i].logits);
        free(s->slots[i].raw);
    }
    while (s->roots) {
        root *r = s->roots;
        s->roots = r->next;
        if (r->seq >= 0)
            asn_seq_free(s->g->en, r->seq);
        free(r->logits);
        free(r->toks);
        free(r);
    }
    free(s->slots);
    free(s->items);
    free(s->wait);
    free(s);
}

void asn_gen_stream_keep(asn_gen_stream *s, int n)
{
    s->keep = n > 0 ? n : 0;
}

void asn_gen_stream_counts(const asn_gen_stream *s, long *prefills, long *reused)
{
    *prefills = s->prefills;
    *reused = s->reused;
}

int asn_gen_stream_pending(const asn_gen_stream *s)
{
    return s->pending;
}

/* The live root of a job's prompt: the same tokens (the same pointer, or
 * equal contents: a server's requests for one prompt share its prefill). */
static root *root_of(asn_gen_stream *s, const asn_gen_job *job)
{
    root *r = s->roots;
    while (r && !(r->n == job->n_prompt &&
                  (r->toks == job->prompt_tokens ||
                   !memcmp(r->toks, job->prompt_tokens, (size_t)r->n * sizeof *r->toks))))
        r = r->next;
    return r;
}

int asn_gen_stream_add(asn_gen_stream *s, asn_gen_job *job, asn_err *e)
{
    const asn_gen_settings *js = job_settings(s->g, job);
    if (js->max_new_tokens < 1 || js->min_new_tokens < 0)
        return asn_err_set(e, "max_new_tokens must be >= 1, min_new_tokens >= 0");
    if (job->n_prompt < 1)
        return asn_err_set(e, "prompt %s: no tokens", job->prompt_id);
    if (job->n_prompt + js->max_new_tokens > s->g->n_ctx)
        return asn_err_set(e, "prompt %s: %d prompt tokens + %d new exceed the context of %d", job->prompt_id,
                           job->n_prompt, js->max_new_tokens, s->g->n_ctx);
    if (job->top_logprobs < 0 || job->top_logprobs > s->g->V)
        return asn_err_set(e, "top_logprobs must be 0 to %d", s->g->V);
    root *r = root_of(s, job);
    if (!r) {
        r = asn_xcalloc(1, sizeof *r);
        int32_t *own = asn_xmalloc((size_t)job->n_prompt * sizeof *own); /* outlives any one job */
        memcpy(own, job->prompt_tokens, (size_t)job->n_prompt * sizeof *own);
        *r = (root){own, job->n_prompt, -1, 0, NULL, 0, s->roots};
        s->roots = r;
    }
    if (r->remaining++ == 0 && r->seq >= 0) { /* an idle root in use again */
        s->n_idle--;
        s->reused++;
    }
    job->finish = ASN_FINISH_NONE;
    if (job->top_logprobs > 0) {
        size_t K = (size_t)job->top_logprobs, M = (size_t)js->max_new_tokens;
        job->logprobs = asn_xrealloc(job->logprobs, M * sizeof *job->logprobs);
        job->top_ids = asn_xrealloc(job->top_ids, M * K * sizeof *job->top_ids);
        job->top_lps = asn_xrealloc(job->top_lps, M * K * sizeof *job->top_lps);
    }
    if (s->w_head > 0 && s->w_head == s->w_n)
        s->w_head = s->w_n = 0;
    asn_grow((void **)&s->wait, &s->w_cap, s->w_n + 1, sizeof *s->wait);
    s->wait[s->w_n++] = job;
    s->pending++;
    return 0;
}


static void slot_release(asn_gen_stream *s, slot *sl)
{
    if (sl->seq >= 0)
        asn_seq_free(s->g->en, sl->seq);
    else
        root_release(s, sl->r);
    sl->job = NULL;
    sl->seq = -1;
    s->live--;
    s->pending--;
}

void asn_gen_stream_cancel(asn_gen_stream *s, asn_gen_job *job)
{
    for (size_t i = s->w_head; i < s->w_n; i++)
        if (s->wait[i] == job) {
            s->wait[i] = NULL;
            root_release(s, root_of(s, job));
            s->pending--;
            return;
        }
    for (int i = 0; i < s->g->batch; i++)
        if (s->slots[i].job == job) {
            slot_release(s, &s->slots[i]);
            return;
        }
}

typedef struct step_task {
    asn_gen_stream *s;
} step_task;

static void step_run(void *arg, int ith, int nth)
{
    asn_gen_stream *s = ((step_task *)arg)->s;
    int lo, hi;
    asn_split(s->g->batch, ith, nth, 1, &lo, &hi);
    for (int i = lo; i < hi; i++) {
        slot *sl = &s->slots[i];
        if (!sl->job || !sl->fresh)
            continue;
        sl->failed = sample_slot(s->g, sl, s->g->ws[ith], &sl->err) != 0;
    }
}

int asn_gen_stream_step(asn_gen_stream *s, asn_err *e)
{
    asn_generator *g = s->g;
    int B = g->batch;
    /* admit waiting jobs into free slots, in the order added */
    for (int i = 0; i < B && s->w_head < s->w_n; i++) {
        slot *sl = &s->slots[i];
        if (sl->job)
            continue;
        asn_gen_job *j = s->wait[s->w_head++];
        if (!j) { /* cancelled */
            i--;
            continue;
        }
        sl->job = j;
        sl->r = root_of(s, j);
        sl->seq = -1;
        sl->n_gen = 0;
        sl->fresh = 0;
        sl->failed = 0;
        sl->hist = asn_xrealloc(sl->hist, (size_t)(j->n_prompt + job_settings(g, j)->max_new_tokens) *
                                              sizeof *sl->hist);
        memcpy(sl->hist, j->prompt_tokens, (size_t)j->n_prompt * sizeof *sl->hist);
        if (j->top_logprobs > 0 && !sl->raw)
            sl->raw = asn_xmalloc((size_t)g->V * sizeof *sl->raw);
        asn_seq_state_init(&sl->st);
        sl->kept = 0;
        sl->key = asn_rng_key_make(j->seed, j->prompt_id, j->heuristic->id);
        s->live++;
    }
    if (!s->live)
        return 0;
    /* one forward: prompts not yet prefilled, and every pending token */
    int ni = 0;
    for (int i = 0; i < B; i++) {
        root *r = s->slots[i].r;
        if (s->slots[i].job && s->slots[i].seq < 0 && r->seq < 0) {
            r->seq = asn_seq_new(g->en);
            r->logits = asn_xmalloc((size_t)g->V * sizeof(float));
            s->prefills++;
            s->items[ni++] = (asn_batch_item){r->seq, r->toks, r->n, r->logits, 0, NULL, NULL};
        }
    }
    for (int i = 0; i < B; i++) {
        slot *sl = &s->slots[i];
        if (sl->job && sl->seq >= 0 && !sl->fresh)
            s->items[ni++] = (asn_batch_item){sl->seq, &sl->hist[sl->job->n_prompt + sl->n_gen - 1], 1,
                                              sl->logits, 0, NULL, NULL};
    }
    if (ni && asn_engine_decode(g->en, s->items, ni, e)) {
        /* nothing was appended: roots prefilled in this pass start over */
        for (root *r = s->roots; r; r = r->next)
            if (r->seq >= 0 && asn_seq_len(g->en, r->seq) == 0) {
                asn_seq_free(g->en, r->seq);
                r->seq = -1;
                free(r->logits);
                r->logits = NULL;
            }
        return -1;
    }
    for (int i = 0; i < B; i++) {
        slot *sl = &s->slots[i];
        if (!sl->job)
            continue;
        if (sl->seq < 0) { /* branch from the prefilled prompt */
            root *r = sl->r;
            sl->seq = asn_seq_fork(g->en, r->seq);
            memcpy(sl->logits, r->logits, (size_t)g->V * sizeof(float));
            root_release(s, r);
        }
        sl->fresh = 1;
    }
    /* sample every live sequence, in parallel */
    step_task st = {s};
    asn_pool_run(g->pool, step_run, &st);
    for (int i = 0; i < B; i++) {
        slot *sl = &s->slots[i];
        asn_gen_job *j = sl->job;
        if (!j)
            continue;
        if (sl->failed) {
            j->error = asn_xstrdup(sl->err.msg);
            slot_release(s, sl);
            if (s->ev.done)
                s->ev.done(s->ev.ctx, j);
            continue;
        }
        if (s->ev.token)
            s->ev.token(s->ev.ctx, j, sl->hist[j->n_prompt + sl->n_gen - 1]);
        if (j->finish != ASN_FINISH_NONE) {
            slot_release(s, sl);
            if (s->ev.done)
                s->ev.done(s->ev.ctx, j);
        }
    }
    return 0;
}

/* ------------------------------------------------------------ one batch */

typedef struct batch_run {
    asn_generator *g;
    asn_gen_job *jobs;
    asn_gen_progress progress;
    void *pctx;
    long done, tokens;
    asn_gen_job *failed;
} batch_run;

static void batch_token(void *ctx, asn_gen_job *job, int32_t token)
{
    batch_run *b = ctx;
    b->tokens++;
    if (b->g->s.on_token)
        b->g->s.on_token(b->g->s.token_ctx, (int)(job - b->jobs), token);
}

static void batch_done(void *ctx, asn_gen_job *job)
{
    batch_run *b = ctx;
    if (job->error) {
        if (!b->failed)
            b->failed = job;
        return;
    }
    b->done++;
    if (b->progress)
        b->progress(b->pctx, b->done, b->tokens);
}

double asn_gen_memory_estimate(const asn_model_config *c, int n_seqs, int positions, double *kv_bytes)
{
    /* the f32 KV cache: per position and layer a key and a value row */
    double kv = (double)n_seqs * positions * c->n_layer * 2.0 * c->n_head_kv * c->head_dim * sizeof(float);
    /* per sequence: a row of logits, the activations of a token, a row of
     * attention scores over its positions (the prefill of a prompt holds
     * them for all its tokens: counted once per position) */
    double scratch = (double)n_seqs * ((double)c->n_vocab * 2 + 8.0 * c->n_embd + 3.0 * c->n_ff +
                                       (double)c->n_head * positions) * sizeof(float) +
                     (double)positions * (8.0 * c->n_embd + 3.0 * c->n_ff) * sizeof(float);
    if (kv_bytes)
        *kv_bytes = kv;
    return kv + scratch;
}

/* b bytes as "1.25 GiB" / "12.5 MiB" */
static const char *fmt_bytes(char *buf, double b)
{
    if (b >= 1024.0 * 1024 * 1024)
        snprintf(buf, 32, "%.2f GiB", b / (1024.0 * 1024 * 1024));
    else
        snprintf(buf, 32, "%.1f MiB", b / (1024.0 * 1024));
    return buf;
}

/* Refuses a run whose KV cache and scratch cannot fit, before any work:
 * the batch's sequences each as long as the longest prompt plus
 * max_new_tokens (at most the context). */
static int memory_check(asn_generator *g, const asn_gen_job *jobs, int n, asn_err *e)
{
    int longest = 0;
    for (int i = 0; i < n; i++)
        if (jobs[i].n_prompt > longest)
            longest = jobs[i].n_prompt;
    long want = (long)longest + g->s.max_new_tokens;
    int positions = want < g->n_ctx ? (int)want : g->n_ctx, n_seqs = n < g->batch ? n : g->batch;
    const asn_model_config *c = asn_model_cfg(g->m);
    double kv, need = asn_gen_memory_estimate(c, n_seqs, positions, &kv), avail = asn_mem_available();
    if (avail < 0 || need <= avail)
        return 0;
    char b1[32], b2[32], b3[32], b4[32];
    return asn_err_set(e, "--batch %d sequences of up to %d positions (--ctx %d; the longest prompt %d + "
                          "--max-new-tokens %d) need about %s (KV cache %s: %d layers x 2 x %d floats a "
                          "position; scratch %s), more than the %s this process may still allocate "
                          "(MemAvailable, ulimit -v): lower --batch or --ctx",
                       n_seqs, positions, g->n_ctx, longest, g->s.max_new_tokens, fmt_bytes(b1, need),
                       fmt_bytes(b2, kv), c->n_layer, c->n_head_kv * c->head_dim, fmt_bytes(b3, need - kv),
                       fmt_bytes(b4, avail));
}

int asn_generate(asn_generator *g, asn_gen_job *jobs, int n, asn_gen_progress progress, void *pctx,
                 asn_err *e)
{
    if (memory_check(g, jobs, n, e))
        return -1;
    const char *was = asn_alloc_context("the KV cache and scratch of generation");
    batch_run b = {g, jobs, progress, pctx, 0, 0, NULL};
    asn_gen_events ev = {batch_token, batch_done, &b};
    asn_gen_stream *s = asn_gen_stream_new(g, &ev);
    int rc = -1;
    for (int i = 0; i < n; i++)
        if (asn_gen_stream_add(s, &jobs[i], e))
            goto out;
    while (asn_gen_stream_pending(s) && !b.failed)
        if (asn_gen_stream_step(s, e))
            goto out;
    if (b.failed) {
        asn_err_set(e, "prompt %s: %s", b.failed->prompt_id, b.failed->error);
        goto out;
    }
    rc = 0;
out:
    asn_gen_stream_free(s);
    asn_alloc_context(was);
    return rc;
}
