/* generate.c — the candidate generator: continuous batching over the
 * engine, prompts prefilled once and shared by fork, sampling of every live
 * sequence in parallel (each with its own workspace), deterministic per job. */
#include "asn/gen.h"
#include "asn/chat.h"

#include <math.h>
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
    j->tokens = NULL;
    j->generation = NULL;
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

int asn_gen_prompt_tokens(const asn_vocab *v, int chat_template, const char *system,
                          const char *prompt, int32_t **ids, int *n, asn_err *e)
{
    asn_chat_msg msgs[2];
    size_t nm = 0;
    if (system && *system)
        msgs[nm++] = (asn_chat_msg){"system", system};
    msgs[nm++] = (asn_chat_msg){"user", prompt};
    char *text = asn_chat_format(chat_template, msgs, nm, 1, e);
    if (!text)
        return -1;
    size_t len;
    int rc = asn_tokenize(v, text, strlen(text), 1, 1, ids, &len, e);
    free(text);
    if (rc)
        return -1;
    if (len == 0) {
        free(*ids);
        return asn_err_set(e, "the prompt has no tokens");
    }
    *n = (int)len;
    return 0;
}

/* ------------------------------------------------------------ generator */

typedef struct root {
    const int32_t *toks;
    int n;
    int seq;          /* -1 until prefilled */
    int remaining;    /* jobs of this prompt not forked yet */
    float *logits;    /* last position's logits */
} root;

typedef struct slot {
    int job;          /* -1: free */
    root *r;
    int seq;          /* -1 until forked */
    int32_t *hist;    /* prompt + generated */
    int n_gen;
    int fresh;        /* logits hold the next step's row */
    float *logits;
    asn_seq_state st;
    asn_rng_key key;
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

typedef struct step_task {
    asn_generator *g;
    asn_gen_job *jobs;
    slot *slots;
    int n_slots;
    int *failed;     /* per slot: sampling failed, message in errs */
    asn_err *errs;
} step_task;

void asn_gen_mask_eog(const asn_heuristic *h, int min_new_tokens, float *row, const asn_seq_ctx *ctx)
{
    /* a constrained heuristic may end as soon as its text is complete */
    int n_gen = ctx->n_ids - ctx->n_prompt;
    if (n_gen < min_new_tokens && !asn_heuristic_may_end(h, ctx))
        for (int k = 0; k < ctx->n_eos; k++)
            row[ctx->eos[k]] = -INFINITY;
}

int asn_gen_process_row(const asn_heuristic *h, int min_new_tokens, float *row, int V, const asn_seq_ctx *ctx,
                        asn_seq_state *st, asn_workspace *ws, asn_err *e)
{
    int n_gen = ctx->n_ids - ctx->n_prompt;
    asn_gen_mask_eog(h, min_new_tokens, row, ctx); /* min_new_tokens first (HF order) */
    if (asn_pipeline_apply(h, row, V, ctx, st, ws, e))
        return asn_err_prefix(e, "heuristic \"%s\", step %d", h->name, n_gen);
    return 0;
}

/* Samples one token for a slot whose logits are fresh; sets its job's
 * outputs when it finishes. */
static int sample_slot(asn_generator *g, asn_gen_job *job, slot *sl, asn_workspace *ws, asn_err *e)
{
    const asn_gen_settings *s = &g->s;
    float *row = sl->logits;
    asn_seq_ctx ctx = {sl->hist, job->n_prompt + sl->n_gen, job->n_prompt, g->eog, (int)g->n_eog,
                       sl->key, (uint64_t)sl->n_gen, g->v};
    if (asn_gen_process_row(job->heuristic, s->min_new_tokens, row, g->V, &ctx, &sl->st, ws, e))
        return -1;
    int tok = asn_sample_row(row, g->V, asn_rng_uniform(sl->key, (uint64_t)sl->n_gen, ASN_STREAM_DRAW));
    if (tok < 0)
        return asn_err_set(e, "heuristic \"%s\", step %d: every token was removed", job->heuristic->name,
                           sl->n_gen);
    asn_pipeline_accept(job->heuristic, row, g->V, tok, &sl->st);
    sl->hist[job->n_prompt + sl->n_gen++] = tok;
    sl->fresh = 0;
    const int32_t *gen = sl->hist + job->n_prompt;
    asn_finish fin = ASN_FINISH_NONE;
    char *text = NULL;
    size_t len = 0;
    if (asn_vocab_is_eog(g->v, tok))
        fin = ASN_FINISH_EOS;
    if (s->n_stop || fin || sl->n_gen >= s->max_new_tokens) {
        if (asn_detokenize(g->v, gen, (size_t)sl->n_gen, 1, 0, &text, &len, e))
            return -1;
        const char *at = find_stop(s, text, len);
        if (at && fin == ASN_FINISH_NONE) {
            fin = ASN_FINISH_STOP;
            len = (size_t)(at - text);
            text[len] = 0;
        } else if (at) { /* a stop string before the EOS: cut there too */
            len = (size_t)(at - text);
            text[len] = 0;
            fin = ASN_FINISH_STOP;
        }
        if (fin == ASN_FINISH_NONE && sl->n_gen >= s->max_new_tokens)
            fin = ASN_FINISH_LENGTH;
    }
    if (fin == ASN_FINISH_NONE) {
        free(text);
        return 0;
    }
    job->finish = fin;
    job->generation = text;
    job->generation_len = len;
    job->n_tokens = sl->n_gen;
    job->tokens = asn_xmalloc((size_t)sl->n_gen * sizeof *job->tokens);
    memcpy(job->tokens, gen, (size_t)sl->n_gen * sizeof *job->tokens);
    return 0;
}

static void step_run(void *arg, int ith, int nth)
{
    step_task *t = arg;
    int lo, hi;
    asn_split(t->n_slots, ith, nth, 1, &lo, &hi);
    for (int i = lo; i < hi; i++) {
        slot *sl = &t->slots[i];
        if (sl->job < 0 || !sl->fresh)
            continue;
        t->failed[i] = sample_slot(t->g, &t->jobs[sl->job], sl, t->g->ws[ith], &t->errs[i]) != 0;
    }
}

int asn_generate(asn_generator *g, asn_gen_job *jobs, int n, asn_gen_progress progress, void *pctx,
                 asn_err *e)
{
    int B = g->batch, rc = -1;
    /* one root per distinct prompt_tokens pointer */
    root *roots = asn_xcalloc((size_t)(n ? n : 1), sizeof *roots);
    int *job_root = asn_xmalloc((size_t)(n ? n : 1) * sizeof *job_root), n_roots = 0;
    for (int i = 0; i < n; i++) {
        /* jobs of a prompt are usually adjacent: try the last root first */
        int r = n_roots && roots[n_roots - 1].toks == jobs[i].prompt_tokens ? n_roots - 1 : 0;
        while (r < n_roots && roots[r].toks != jobs[i].prompt_tokens)
            r++;
        if (r == n_roots)
            roots[n_roots++] = (root){jobs[i].prompt_tokens, jobs[i].n_prompt, -1, 0, NULL};
        if (jobs[i].n_prompt + g->s.max_new_tokens > g->n_ctx) {
            asn_err_set(e, "prompt %s: %d prompt tokens + %d new exceed the context of %d",
                        jobs[i].prompt_id, jobs[i].n_prompt, g->s.max_new_tokens, g->n_ctx);
            free(roots);
            free(job_root);
            return -1;
        }
        roots[r].remaining++;
        job_root[i] = r;
        jobs[i].finish = ASN_FINISH_NONE;
    }
    slot *slots = asn_xcalloc((size_t)B, sizeof *slots);
    for (int i = 0; i < B; i++) {
        slots[i].job = -1;
        slots[i].logits = asn_xmalloc((size_t)g->V * sizeof(float));
    }
    asn_batch_item *items = asn_xmalloc((size_t)2 * B * sizeof *items);
    asn_err *errs = asn_xcalloc((size_t)B, sizeof *errs);
    int *failed = asn_xcalloc((size_t)B, sizeof *failed);
    int next = 0, live = 0;
    long done = 0, tokens = 0;
    for (;;) {
        /* admit jobs into free slots, in the order given */
        for (int i = 0; i < B && next < n; i++) {
            if (slots[i].job >= 0)
                continue;
            asn_gen_job *j = &jobs[next];
            slot *sl = &slots[i];
            sl->job = next;
            sl->r = &roots[job_root[next]];
            sl->seq = -1;
            sl->n_gen = 0;
            sl->fresh = 0;
            sl->hist = asn_xrealloc(sl->hist, (size_t)(j->n_prompt + g->s.max_new_tokens) * sizeof *sl->hist);
            memcpy(sl->hist, j->prompt_tokens, (size_t)j->n_prompt * sizeof *sl->hist);
            asn_seq_state_init(&sl->st);
            sl->key = asn_rng_key_make(j->seed, j->prompt_id, j->heuristic->id);
            live++;
            next++;
        }
        if (!live)
            break;
        /* one forward: prompts not yet prefilled, and every pending token */
        int ni = 0;
        for (int i = 0; i < B; i++) {
            root *r = slots[i].r;
            if (slots[i].job >= 0 && slots[i].seq < 0 && r->seq < 0) {
                r->seq = asn_seq_new(g->en);
                r->logits = asn_xmalloc((size_t)g->V * sizeof(float));
                items[ni++] = (asn_batch_item){r->seq, r->toks, r->n, r->logits, 0, NULL, NULL};
            }
        }
        for (int i = 0; i < B; i++) {
            slot *sl = &slots[i];
            if (sl->job >= 0 && sl->seq >= 0 && !sl->fresh)
                items[ni++] = (asn_batch_item){sl->seq, &sl->hist[jobs[sl->job].n_prompt + sl->n_gen - 1],
                                               1, sl->logits, 0, NULL, NULL};
        }
        if (ni && asn_engine_decode(g->en, items, ni, e))
            goto out;
        for (int i = 0; i < B; i++) {
            slot *sl = &slots[i];
            if (sl->job < 0)
                continue;
            if (sl->seq < 0) { /* branch from the prefilled prompt */
                root *r = sl->r;
                sl->seq = asn_seq_fork(g->en, r->seq);
                memcpy(sl->logits, r->logits, (size_t)g->V * sizeof(float));
                if (--r->remaining == 0) {
                    asn_seq_free(g->en, r->seq);
                    free(r->logits);
                    r->logits = NULL;
                }
            }
            sl->fresh = 1;
        }
        /* sample every live sequence, in parallel */
        step_task st = {g, jobs, slots, B, failed, errs};
        asn_pool_run(g->pool, step_run, &st);
        for (int i = 0; i < B; i++) {
            slot *sl = &slots[i];
            if (sl->job < 0)
                continue;
            if (failed[i]) {
                asn_err_set(e, "prompt %s: %s", jobs[sl->job].prompt_id, errs[i].msg);
                goto out;
            }
            tokens++;
            if (g->s.on_token)
                g->s.on_token(g->s.token_ctx, sl->job, sl->hist[jobs[sl->job].n_prompt + sl->n_gen - 1]);
            if (jobs[sl->job].finish != ASN_FINISH_NONE) {
                asn_seq_free(g->en, sl->seq);
                sl->job = -1;
                sl->seq = -1;
                live--;
                done++;
                if (progress)
                    progress(pctx, done, tokens);
            }
        }
    }
    rc = 0;
out:
    for (int i = 0; i < B; i++) {
        if (slots[i].job >= 0 && slots[i].seq >= 0)
            asn_seq_free(g->en, slots[i].seq);
        free(slots[i].hist);
        free(slots[i].logits);
    }
    for (int r = 0; r < n_roots; r++)
        if (roots[r].logits) {
            asn_seq_free(g->en, roots[r].seq);
            free(roots[r].logits);
        }
    free(slots);
    free(items);
    free(errs);
    free(failed);
    free(roots);
    free(job_root);
    return rc;
}
