/* replay.c — candidates replayed through the engine: raw logits and the
 * rows their tokens were drawn from, a chunk of steps at a time. */
#include "asn/replay.h"
#include "asn/chat.h"
#include "asn/gen.h"
#include "asn/records.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- records */

static int field_err(asn_err *e, const char *field, const char *what)
{
    return asn_err_set(e, "field \"%s\": %s", field, what);
}

static const char *get_str(const json_t *rec, const char *field, int required, asn_err *e, int *bad)
{
    const json_t *v = json_object_get(rec, field);
    if (!v || json_is_null(v)) {
        if (required)
            *bad = 1, field_err(e, field, "missing");
        return NULL;
    }
    if (!json_is_string(v)) {
        *bad = 1;
        field_err(e, field, "must be a string");
        return NULL;
    }
    return json_string_value(v);
}

int asn_candidate_from_json(asn_candidate *c, const json_t *rec, const asn_vocab *v, asn_err *e)
{
    memset(c, 0, sizeof *c);
    int bad = 0;
    const char *pid = get_str(rec, "prompt_id", 1, e, &bad);
    const char *prompt = bad ? NULL : get_str(rec, "prompt", 1, e, &bad);
    const char *system = bad ? NULL : get_str(rec, "system", 0, e, &bad);
    if (bad)
        return -1;
    const json_t *h = json_object_get(rec, "heuristic");
    if (!json_is_object(h))
        return field_err(e, "heuristic", h ? "must be an object {name, processors}" : "missing");
    const json_t *hn = json_object_get(h, "name");
    if (!json_is_string(hn))
        return field_err(e, "heuristic.name", hn ? "must be a string" : "missing");
    const json_t *seed = json_object_get(rec, "seed");
    if (!json_is_integer(seed) || json_integer_value(seed) < 0)
        return field_err(e, "seed", seed ? "must be a non-negative integer" : "missing");
    const json_t *toks = json_object_get(rec, "tokens");
    if (!json_is_array(toks))
        return field_err(e, "tokens", toks ? "must be an array of token ids" : "missing");
    const json_t *st = json_object_get(rec, "settings");
    if (st && !json_is_object(st))
        return field_err(e, "settings", "must be an object");
    const json_t *tn = json_object_get(st, "chat_template"), *mn = json_object_get(st, "min_new_tokens");
    if (tn && !json_is_string(tn) && !json_is_null(tn))
        return field_err(e, "settings.chat_template", "must be a string");
    if (mn && !(json_is_integer(mn) && json_integer_value(mn) >= 0))
        return field_err(e, "settings.min_new_tokens", "must be a non-negative integer");
    int tmpl = asn_chat_from_name(json_is_string(tn) ? json_string_value(tn) : "none");
    if (tmpl < 0)
        return asn_err_set(e, "field \"settings.chat_template\": unknown template \"%s\"", json_string_value(tn));
    /* the date a dated template (llama3.1) wrote into the prompt */
    const json_t *cd = json_object_get(st, "chat_date");
    if (cd && (!json_is_string(cd) || asn_chat_set_date(json_string_value(cd), e)))
        return field_err(e, "settings.chat_date", "must be a date DD Mon YYYY");

    if (asn_heuristic_init(&c->heuristic, json_string_value(hn), json_object_get(h, "processors"), e))
        return asn_err_prefix(e, "field \"heuristic\"");
    const json_t *hid = json_object_get(h, "id");
    if (json_is_string(hid) && strcmp(json_string_value(hid), c->heuristic.id)) {
        asn_err_set(e, "field \"heuristic.id\": %s does not match its processors (%s)", json_string_value(hid),
                    c->heuristic.id);
        goto fail;
    }
    size_t n = json_array_size(toks);
    if (n > INT32_MAX / 2) {
        field_err(e, "tokens", "too many");
        goto fail;
    }
    c->gen = asn_xmalloc((n ? n : 1) * sizeof *c->gen);
    int n_vocab = (int)asn_vocab_n_tokens(v);
    for (size_t i = 0; i < n; i++) {
        const json_t *t = json_array_get(toks, i);
        if (!json_is_integer(t) || json_integer_value(t) < 0 || json_integer_value(t) >= n_vocab) {
            asn_err_set(e, "field \"tokens\": element %zu is not a token id of this model (0..%d)", i, n_vocab - 1);
            goto fail;
        }
        c->gen[i] = (int32_t)json_integer_value(t);
    }
    c->n_gen = (int)n;
    if (asn_gen_prompt_tokens(v, tmpl, system, prompt, &c->prompt, &c->n_prompt, e)) {
        asn_err_prefix(e, "field \"prompt\"");
        goto fail;
    }
    c->prompt_id = asn_xstrdup(pid);
    c->seed = (uint64_t)json_integer_value(seed);
    c->min_new_tokens = mn ? (int)json_integer_value(mn) : 0;
    return 0;
fail:
    asn_candidate_clear(c);
    return -1;
}

int asn_candidate_from_reference(asn_candidate *c, const json_t *rec, const asn_vocab *v, int chat, asn_err *e)
{
    memset(c, 0, sizeof *c);
    int bad = 0;
    const char *prompt = get_str(rec, "prompt", 1, e, &bad);
    const char *gen = bad ? NULL : get_str(rec, "generation", 1, e, &bad);
    const char *system = bad ? NULL : get_str(rec, "system_prompt", 0, e, &bad);
    if (bad)
        return -1;
    const json_t *si = json_object_get(rec, "sampler_info");
    if (!json_is_object(si))
        return field_err(e, "sampler_info", si ? "must be an object {name, config}" : "missing");
    const json_t *sn = json_object_get(si, "name");
    if (!json_is_string(sn))
        return field_err(e, "sampler_info.name", sn ? "must be a string" : "missing");
    long long seed;
    if (asn_rec_seed(rec, &seed, e))
        return -1;
    if (asn_heuristic_init(&c->heuristic, json_string_value(sn), json_object_get(si, "config"), e))
        return asn_err_prefix(e, "field \"sampler_info\"");
    size_t n;
    if (asn_tokenize(v, gen, strlen(gen), 0, 0, &c->gen, &n, e)) {
        asn_err_prefix(e, "field \"generation\"");
        goto fail;
    }
    c->n_gen = (int)n;
    if (asn_gen_prompt_tokens(v, chat, system, prompt, &c->prompt, &c->n_prompt, e)) {
        asn_err_prefix(e, "field \"prompt\"");
        goto fail;
    }
    char pid[17];
    asn_prompt_id(system, prompt, pid);
    c->prompt_id = asn_xstrdup(pid);
    c->seed = (uint64_t)seed;
    return 0;
fail:
    asn_candidate_clear(c);
    return -1;
}

void asn_candidate_clear(asn_candidate *c)
{
    free(c->prompt_id);
    free(c->prompt);
    free(c->gen);
    if (c->heuristic.procs || c->heuristic.name)
        asn_heuristic_clear(&c->heuristic);
    memset(c, 0, sizeof *c);
}

/* ------------------------------------------------------------ replayer */

struct asn_replayer {
    asn_model *m;
    const asn_vocab *v;
    asn_engine *en;
    int V, n_ctx, seq;
    const int32_t *eog;
    int n_eog;
    asn_workspace *ws;
    /* the current candidate */
    const asn_candidate *c;
    int32_t *hist;      /* prompt + generation */
    size_t hist_cap;
    int pos;
    asn_rng_key key;
    asn_seq_state st;
    float *logits, *row; /* scratch when the caller wants no raw / target rows */
    size_t logits_cap;
};

asn_replayer *asn_replayer_new(asn_model *m, asn_pool *pool, int n_ctx, asn_err *e)
{
    const asn_vocab *v = asn_model_vocab(m, e);
    if (!v)
        return NULL;
    asn_engine *en = asn_engine_new(m, n_ctx, pool, e);
    if (!en)
        return NULL;
    asn_replayer *r = asn_xcalloc(1, sizeof *r);
    r->m = m;
    r->v = v;
    r->en = en;
    r->V = asn_model_cfg(m)->n_vocab;
    r->n_ctx = n_ctx > 0 ? n_ctx : asn_model_cfg(m)->n_ctx_train;
    r->seq = -1;
    size_t n_eog = asn_vocab_eog_ids(v, &r->eog);
    r->n_eog = (int)n_eog;
    r->ws = asn_workspace_new();
    r->row = asn_xmalloc((size_t)r->V * sizeof *r->row);
    return r;
}

void asn_replayer_free(asn_replayer *r)
{
    if (!r)
        return;
    asn_engine_free(r->en);
    asn_workspace_free(r->ws);
    free(r->hist);
    free(r->logits);
    free(r->row);
    free(r);
}

int asn_replay_begin(asn_replayer *r, const asn_candidate *c, asn_err *e)
{
    if (r->seq >= 0)
        asn_seq_free(r->en, r->seq);
    r->seq = -1;
    r->c = NULL;
    if (c->n_prompt < 1)
        return asn_err_set(e, "the prompt has no tokens");
    for (long i = 0; i < (long)c->n_prompt + c->n_gen; i++) {
        int32_t t = i < c->n_prompt ? c->prompt[i] : c->gen[i - c->n_prompt];
        if (t < 0 || t >= r->V) /* the vocabulary may name more tokens than the model has rows */
            return i < c->n_prompt
                       ? asn_err_set(e, "prompt token %ld (%d) is not a token id of this model (0..%d)", i, (int)t,
                                     r->V - 1)
                       : asn_err_set(e, "field \"tokens\": element %ld is not a token id of this model (0..%d)",
                                     i - c->n_prompt, r->V - 1);
    }
    long total = (long)c->n_prompt + c->n_gen;
    if (total - 1 > r->n_ctx)
        return asn_err_set(e, "prompt (%d tokens) and generation (%d) exceed the context of %d", c->n_prompt,
                           c->n_gen, r->n_ctx);
    if ((size_t)total > r->hist_cap) {
        r->hist_cap = (size_t)total;
        free(r->hist);
        r->hist = asn_xmalloc(r->hist_cap * sizeof *r->hist);
    }
    memcpy(r->hist, c->prompt, (size_t)c->n_prompt * sizeof *r->hist);
    memcpy(r->hist + c->n_prompt, c->gen, (size_t)c->n_gen * sizeof *r->hist);
    r->seq = asn_seq_new(r->en);
    if (c->n_prompt > 1) {
        asn_batch_item it = {r->seq, r->hist, c->n_prompt - 1, NULL, 0, NULL, NULL};
        if (asn_engine_decode(r->en, &it, 1, e)) {
            asn_seq_free(r->en, r->seq);
            r->seq = -1;
            return -1;
        }
    }
    r->c = c;
    r->pos = 0;
    r->key = asn_rng_key_make(c->seed, c->prompt_id, c->heuristic.id);
    asn_seq_state_init(&r->st);
    return 0;
}

int asn_replay_pos(const asn_replayer *r) { return r->pos; }

int asn_replay_next(asn_replayer *r, int max_steps, float *raw, float *target, uint8_t *drawn, asn_err *e)
{
    const asn_candidate *c = r->c;
    if (!c)
        return asn_err_set(e, "no candidate is being replayed");
    int k = c->n_gen - r->pos < max_steps ? c->n_gen - r->pos : max_steps;
    if (k <= 0)
        return 0;
    size_t V = (size_t)r->V;
    float *lg = raw;
    if (!lg) {
        if ((size_t)k * V > r->logits_cap) {
            r->logits_cap = (size_t)k * V;
            free(r->logits);
            r->logits = asn_xmalloc(r->logits_cap * sizeof *r->logits);
        }
        lg = r->logits;
    }
    /* the step that drew gen[pos] sees the logits of position n_prompt - 1 + pos */
    asn_batch_item it = {r->seq, r->hist + c->n_prompt - 1 + r->pos, k, lg, 1, NULL, NULL};
    if (asn_engine_decode(r->en, &it, 1, e))
        return -1;
    for (int j = 0; j < k; j++) {
        int step = r->pos + j;
        float *row = target ? target + (size_t)j * V : r->row, *in = lg + (size_t)j * V;
        asn_seq_ctx ctx = {r->hist, c->n_prompt + step, c->n_prompt, r->eog, r->n_eog, r->key, (uint64_t)step, r->v};
        asn_gen_mask_eog(&c->heuristic, NULL, c->min_new_tokens, in, &ctx);
        memcpy(row, in, V * sizeof *row);
        if (asn_pipeline_apply(&c->heuristic, row, r->V, &ctx, &r->st, r->ws, e))
            return asn_err_prefix(e, "heuristic \"%s\", step %d", c->heuristic.name, step);
        int32_t tok = c->gen[step];
        if (drawn)
            drawn[j] = asn_sample_row(row, r->V, asn_rng_uniform(r->key, (uint64_t)step, ASN_STREAM_DRAW)) == tok;
        asn_pipeline_accept(&c->heuristic, row, r->V, tok, &r->st);
    }
    r->pos += k;
    return k;
}
