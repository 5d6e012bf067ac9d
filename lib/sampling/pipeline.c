/* pipeline.c — the processor table (names, parameters, valid ranges),
 * building a heuristic from its JSON processor list, applying it to a row,
 * the token draw, and the per-thread workspace. */
#include "sampling_internal.h"
#include "asn/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------- parameter table */

typedef enum { T_REAL, T_INT, T_INT_TRUNC, T_IDS, T_BREAKERS, T_BOOL, T_STR, T_ANY } ptype;

enum { LO_INCL = 1, LO_EXCL = 2, HI_INCL = 4, HI_EXCL = 8 };

typedef struct pspec {
    const char *key;
    ptype type;
    int slot;      /* index into f[] (T_REAL) or i[] (T_INT, T_INT_TRUNC); T_STR is
                    * checked here and read from the params by its processor */
    int required;
    double def;    /* default when optional and absent */
    int bounds;    /* LO_* | HI_* flags */
    double lo, hi;
} pspec;

typedef struct kspec {
    const char *name;
    asn_proc_kind kind;
    pspec params[7];
} kspec;

#define R(k, s, req, d, b, lo, hi) {k, T_REAL, s, req, d, b, lo, hi}
#define I(k, s, req, d, b, lo, hi) {k, T_INT, s, req, d, b, lo, hi}
#define MTK {"min_tokens_to_keep", T_INT, 0, 0, 1, LO_INCL, 1, 0}
#define STR(k, req) {k, T_STR, 0, req, 0, 0, 0, 0}
#define ANY(k) {k, T_ANY, 0, 0, 0, 0, 0, 0} /* checked by the processor's init */

/* Ranges are those HuggingFace validates (sampling semantics doc §4), and
 * OpenAI's [-2, 2] for presence/frequency penalties. llama.cpp's samplers
 * validate almost nothing; out-of-range values there mean "off". */
static const kspec KINDS[] = {
    {"temperature", ASN_PROC_TEMPERATURE, {R("temperature", 0, 1, 0, LO_EXCL, 0, 0)}},
    {"top_k", ASN_PROC_TOP_K, {I("top_k", 1, 1, 0, LO_EXCL, 0, 0),
                               {"min_tokens_to_keep", T_INT, 0, 0, 1, 0, 0, 0}}},
    {"top_p", ASN_PROC_TOP_P, {R("top_p", 0, 1, 0, LO_INCL | HI_INCL, 0, 1), MTK}},
    {"min_p", ASN_PROC_MIN_P, {R("min_p", 0, 1, 0, LO_INCL | HI_INCL, 0, 1), MTK}},
    {"typical", ASN_PROC_TYPICAL, {R("mass", 0, 1, 0, LO_EXCL | HI_EXCL, 0, 1), MTK}},
    {"epsilon", ASN_PROC_EPSILON, {R("epsilon", 0, 1, 0, LO_EXCL | HI_EXCL, 0, 1),
                                   {"min_tokens_to_keep", T_INT_TRUNC, 0, 0, 1, LO_INCL, 1, 0}}},
    {"eta", ASN_PROC_ETA, {R("epsilon", 0, 1, 0, LO_EXCL | HI_EXCL, 0, 1),
                           {"min_tokens_to_keep", T_INT_TRUNC, 0, 0, 1, LO_INCL, 1, 0}}},
    {"repetition_penalty", ASN_PROC_REPETITION_PENALTY,
     {R("penalty", 0, 1, 0, LO_EXCL, 0, 0), I("prompt_ignore_length", 1, 0, 0, LO_INCL, 0, 0)}},
    {"presence_penalty", ASN_PROC_PRESENCE_PENALTY, {R("penalty", 0, 1, 0, LO_INCL | HI_INCL, -2, 2)}},
    {"frequency_penalty", ASN_PROC_FREQUENCY_PENALTY, {R("penalty", 0, 1, 0, LO_INCL | HI_INCL, -2, 2)}},
    {"no_repeat_ngram", ASN_PROC_NO_REPEAT_NGRAM, {I("ngram_size", 1, 1, 0, LO_EXCL, 0, 0)}},
    {"min_new_tokens", ASN_PROC_MIN_NEW_TOKENS,
     {I("min_new_tokens", 1, 1, 0, LO_INCL, 0, 0), I("prompt_length_to_skip", 2, 0, 0, LO_INCL, 0, 0),
      {"eos_token_id", T_IDS, 0, 0, 0, 0, 0, 0}}},
    {"greedy", ASN_PROC_GREEDY, {{0}}},
    {"llama_temp", ASN_PROC_LLAMA_TEMP, {R("temp", 0, 1, 0, 0, 0, 0)}},
    {"llama_top_k", ASN_PROC_LLAMA_TOP_K, {I("top_k", 1, 1, 0, 0, 0, 0)}},
    {"llama_top_p", ASN_PROC_LLAMA_TOP_P, {R("top_p", 0, 1, 0, 0, 0, 0), I("min_keep", 0, 0, 1, LO_INCL, 0, 0)}},
    {"llama_min_p", ASN_PROC_LLAMA_MIN_P, {R("min_p", 0, 1, 0, 0, 0, 0), I("min_keep", 0, 0, 1, LO_INCL, 0, 0)}},
    {"llama_typical", ASN_PROC_LLAMA_TYPICAL, {R("typ_p", 0, 1, 0, 0, 0, 0), I("min_keep", 0, 0, 1, LO_INCL, 0, 0)}},
    {"top_n_sigma", ASN_PROC_TOP_N_SIGMA, {R("top_n_sigma", 0, 1, 0, 0, 0, 0)}},
    {"xtc", ASN_PROC_XTC, {R("xtc_probability", 0, 1, 0, 0, 0, 0), R("xtc_threshold", 1, 1, 0, 0, 0, 0),
                           I("min_keep", 0, 0, 1, LO_INCL, 0, 0)}},
    {"penalties", ASN_PROC_PENALTIES,
     {I("penalty_last_n", 1, 0, 64, LO_INCL, -1, 0), R("penalty_repeat", 0, 0, 1, 0, 0, 0),
      R("penalty_freq", 1, 0, 0, 0, 0, 0), R("penalty_present", 2, 0, 0, 0, 0, 0)}},
    {"dry", ASN_PROC_DRY,
     {R("dry_multiplier", 0, 1, 0, 0, 0, 0), R("dry_base", 1, 0, 1.75, 0, 0, 0),
      I("dry_allowed_length", 1, 0, 2, LO_INCL, 0, 0), I("dry_penalty_last_n", 2, 0, -1, LO_INCL, -1, 0),
      {"seq_breakers", T_BREAKERS, 0, 0, 0, 0, 0, 0}, I("n_ctx", 3, 0, 0, LO_INCL, 0, 0)}},
    {"mirostat_v2", ASN_PROC_MIROSTAT_V2,
     {R("tau", 0, 1, 0, LO_INCL, 0, 0), R("eta", 1, 1, 0, LO_INCL, 0, 0)}},
    {"mirostat_v2_truncate", ASN_PROC_MIROSTAT_V2_TRUNCATE, {R("mu", 0, 1, 0, 0, 0, 0)}},
    {"json", ASN_PROC_JSON, {{"object", T_BOOL, 0, 0, 0, 0, 0, 0}}},
    /* a sampler file (GGUF); the alias takes the reference's
     * _AdaptiveSamplerWrapper arguments (proc_learned.c) */
    {"learned", ASN_PROC_LEARNED, {STR("path", 1), {"exact", T_BOOL, 0, 0, 0, 0, 0, 0}}},
    {"adaptive_sampler", ASN_PROC_LEARNED,
     {STR("sampler_checkpoint_path", 1), STR("sampler_model_name", 0), STR("sampler_config_path", 0),
      STR("device", 0)}},
    /* structured output (proc_constraint.c, docs/sampling.md "Constraints") */
    {"json_schema", ASN_PROC_JSON_SCHEMA, {ANY("schema"), ANY("path"), ANY("whitespace")}},
    {"grammar", ASN_PROC_GRAMMAR, {ANY("gbnf"), ANY("path")}},
    {"regex", ASN_PROC_REGEX, {ANY("pattern")}},
    {"choice", ASN_PROC_CHOICE, {ANY("options")}},
};
#define N_KINDS ((int)(sizeof KINDS / sizeof KINDS[0]))

const char *asn_proc_name(asn_proc_kind k)
{
    for (int i = 0; i < N_KINDS; i++)
        if (KINDS[i].kind == k)
            return KINDS[i].name;
    return "?";
}

static const kspec *find_kind(const char *name)
{
    for (int i = 0; i < N_KINDS; i++)
        if (!strcmp(KINDS[i].name, name))
            return &KINDS[i];
    return NULL;
}

static int check_bounds(const pspec *ps, double v, asn_err *e)
{
    int b = ps->bounds;
    int bad = ((b & LO_INCL) && !(v >= ps->lo)) || ((b & LO_EXCL) && !(v > ps->lo)) ||
              ((b & HI_INCL) && !(v <= ps->hi)) || ((b & HI_EXCL) && !(v < ps->hi));
    if (!bad)
        return 0;
    char lo[40] = "", hi[40] = "", val[40];
    snprintf(val, sizeof val, "%g", v);
    if (b & (LO_INCL | LO_EXCL))
        snprintf(lo, sizeof lo, "%s %g", (b & LO_INCL) ? ">=" : ">", ps->lo);
    if (b & (HI_INCL | HI_EXCL))
        snprintf(hi, sizeof hi, "%s%s %g", lo[0] ? " and " : "", (b & HI_INCL) ? "<=" : "<", ps->hi);
    return asn_err_set(e, "parameter \"%s\" must be %s%s, got %s", ps->key, lo, hi, val);
}

static int parse_int_list(const json_t *v, int32_t **out, int *n, const char *key, asn_err *e)
{
    if (!json_is_integer(v) && !json_is_array(v))
        return asn_err_set(e, "parameter \"%s\" must be a token id or a list of token ids", key);
    size_t i, n_el = json_is_array(v) ? json_array_size(v) : 1;
    for (i = 0; i < n_el; i++) {
        const json_t *x = json_is_array(v) ? json_array_get(v, i) : v;
        if (!json_is_integer(x) || json_integer_value(x) < 0 || json_integer_value(x) > INT32_MAX)
            return asn_err_set(e, "parameter \"%s\" must hold token ids (integers >= 0)", key);
        *out = asn_xrealloc(*out, (size_t)(*n + 1) * sizeof **out);
        (*out)[(*n)++] = (int32_t)json_integer_value(x);
    }
    return 0;
}

static int parse_param(asn_proc *p, const pspec *ps, int which, const json_t *v, asn_err *e)
{
    double d;
    switch (ps->type) {
    case T_REAL:
        if (asn_json_number(v, &d))
            return asn_err_set(e, "parameter \"%s\" must be a number, not %s", ps->key,
                               asn_json_type_name(v));
        if (!isfinite(d))
            return asn_err_set(e, "parameter \"%s\" must be finite", ps->key);
        if (check_bounds(ps, d, e))
            return -1;
        p->f[ps->slot] = d;
        break;
    case T_INT:
    case T_INT_TRUNC:
        if (ps->type == T_INT && !json_is_integer(v))
            return asn_err_set(e, "parameter \"%s\" must be an integer, not %s", ps->key,
                               asn_json_type_name(v));
        if (asn_json_number(v, &d))
            return asn_err_set(e, "parameter \"%s\" must be a number, not %s", ps->key,
                               asn_json_type_name(v));
        d = trunc(d); /* HF casts epsilon/eta's min_tokens_to_keep with int() */
        if (check_bounds(ps, d, e))
            return -1;
        if (fabs(d) > 2e9)
            return asn_err_set(e, "parameter \"%s\" is out of range", ps->key);
        p->i[ps->slot] = (long)d;
        break;
    case T_IDS:
        if (parse_int_list(v, &p->ids, &p->n_ids, ps->key, e))
            return -1;
        break;
    case T_BOOL:
        if (!json_is_boolean(v))
            return asn_err_set(e, "parameter \"%s\" must be true or false, not %s", ps->key,
                               asn_json_type_name(v));
        p->i[ps->slot] = json_is_true(v);
        break;
    case T_ANY:
        break;
    case T_STR:
        if (!json_is_string(v))
            return asn_err_set(e, "parameter \"%s\" must be a string, not %s", ps->key,
                               asn_json_type_name(v));
        if (!json_string_length(v))
            return asn_err_set(e, "parameter \"%s\" must not be empty", ps->key);
        if (strlen(json_string_value(v)) != json_string_length(v))
            return asn_err_set(e, "parameter \"%s\" must not hold a NUL character", ps->key);
        break;
    case T_BREAKERS: {
        if (!json_is_array(v))
            return asn_err_set(e, "parameter \"%s\" must be a list of token-id lists", ps->key);
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x)
        {
            if (json_is_string(x))
                return asn_err_set(e, "parameter \"%s\": string breakers need a tokenizer; "
                                      "give each breaker as a list of token ids", ps->key);
            int before = p->n_ids;
            if (!json_is_array(x) || !json_array_size(x) ||
                parse_int_list(x, &p->ids, &p->n_ids, ps->key, e))
                return asn_err_set(e, "parameter \"%s\" must be a list of non-empty token-id lists",
                                   ps->key);
            p->brk_len = asn_xrealloc(p->brk_len, (size_t)(p->n_brk + 1) * sizeof *p->brk_len);
            p->brk_len[p->n_brk++] = p->n_ids - before;
        }
        break;
    }
    }
    p->has[which] = 1;
    return 0;
}

/* Parses one {name, params} processor object into p. */
static int parse_proc(asn_proc *p, const json_t *obj, asn_err *e)
{
    memset(p, 0, sizeof *p);
    if (!json_is_object(obj))
        return asn_err_set(e, "must be an object {name, params}");
    json_t *jn = json_object_get(obj, "name");
    if (!json_is_string(jn))
        return asn_err_set(e, "field \"name\" must be a string");
    const kspec *k = find_kind(json_string_value(jn));
    if (!k)
        return asn_err_set(e, "unknown processor \"%s\"", json_string_value(jn));
    p->kind = k->kind;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v)
    {
        if (strcmp(key, "name") && strcmp(key, "params"))
            return asn_err_set(e, "unknown field \"%s\" (a processor has \"name\" and \"params\")", key);
    }
    json_t *params = json_object_get(obj, "params");
    if (params && !json_is_null(params) && !json_is_object(params))
        return asn_err_set(e, "field \"params\" must be a mapping");
    json_object_foreach(params, key, v)
    {
        int found = 0;
        for (int j = 0; k->params[j].key; j++)
            found |= !strcmp(k->params[j].key, key);
        if (!found)
            return asn_err_set(e, "unknown parameter \"%s\"", key);
    }
    for (int j = 0; k->params[j].key; j++) {
        const pspec *ps = &k->params[j];
        v = params ? json_object_get(params, ps->key) : NULL;
        if (v && !json_is_null(v)) {
            if (parse_param(p, ps, j, v, e))
                return -1;
        } else if (ps->required) {
            return asn_err_set(e, "parameter \"%s\" is required", ps->key);
        } else if (ps->type == T_REAL) {
            p->f[ps->slot] = ps->def;
        } else if (ps->type == T_INT || ps->type == T_INT_TRUNC) {
            p->i[ps->slot] = (long)ps->def;
        }
    }
    if (k->kind == ASN_PROC_LEARNED)
        return asn_learned_init(p, k->name, params, e);
    if (asn_proc_is_constraint(k->kind))
        return asn_constraint_proc_init(p, params, e);
    return 0;
}

/* ------------------------------------------------------------ heuristics */

int asn_heuristic_init(asn_heuristic *h, const char *name, const json_t *processors, asn_err *e)
{
    memset(h, 0, sizeof *h);
    h->weight = 1;
    if (!json_is_array(processors))
        return asn_err_set(e, "\"processors\" must be a list");
    size_t n = json_array_size(processors);
    h->procs = asn_xcalloc(n ? n : 1, sizeof *h->procs);
    h->processors = json_array();
    for (size_t i = 0; i < n; i++) {
        const json_t *obj = json_array_get(processors, i);
        if (parse_proc(&h->procs[i], obj, e)) {
            const json_t *jn = json_is_object(obj) ? json_object_get(obj, "name") : NULL;
            asn_err_prefix(e, "processor %zu (%s)", i + 1,
                           json_is_string(jn) ? json_string_value(jn) : "?");
            h->n = (int)i + 1;
            asn_heuristic_clear(h);
            return -1;
        }
        h->n = (int)i + 1;
        json_t *params = json_object_get(obj, "params");
        json_t *pp = json_is_object(params) ? json_incref(params) : json_object();
        json_array_append_new(h->processors, json_pack("{s:O,s:o}", "name",
                                                       json_object_get(obj, "name"), "params", pp));
    }
    for (int i = 0; i < h->n; i++)
        if ((h->procs[i].kind == ASN_PROC_MIROSTAT_V2) && i != h->n - 1) {
            asn_heuristic_clear(h);
            return asn_err_set(e, "processor %d (mirostat_v2): must be the last processor, since "
                                  "it samples from its own truncated distribution", i + 1);
        }
    h->name = asn_xstrdup(name);
    json_t *canon = json_pack("{s:s,s:O}", "name", name, "processors", h->processors);
    asn_json_digest(canon, 12, h->id);
    json_decref(canon);
    return 0;
}

void asn_heuristic_clear(asn_heuristic *h)
{
    for (int i = 0; i < h->n; i++) {
        free(h->procs[i].ids);
        free(h->procs[i].brk_len);
        asn_learned_release(&h->procs[i]);
        asn_constraint_proc_release(&h->procs[i]);
    }
    free(h->procs);
    free(h->name);
    json_decref(h->processors);
    memset(h, 0, sizeof *h);
}

const asn_proc *asn_heuristic_json_proc(const asn_heuristic *h)
{
    for (int i = 0; i < h->n; i++)
        if (h->procs[i].kind == ASN_PROC_JSON)
            return &h->procs[i];
    return NULL;
}

int asn_heuristic_constrained(const asn_heuristic *h)
{
    for (int i = 0; i < h->n; i++)
        if (h->procs[i].kind == ASN_PROC_JSON || asn_proc_is_constraint(h->procs[i].kind))
            return 1;
    return 0;
}

int asn_heuristic_may_end(const asn_heuristic *h, const asn_seq_ctx *ctx)
{
    int any = 0;
    for (int i = 0; i < h->n; i++) {
        const asn_proc *p = &h->procs[i];
        if (p->kind == ASN_PROC_JSON) {
            if (!asn_json_complete(ctx, (int)p->i[0]))
                return 0;
            any = 1;
        } else if (asn_proc_is_constraint(p->kind)) {
            if (!asn_constraint_proc_complete(p, ctx))
                return 0;
            any = 1;
        }
    }
    return any;
}

json_t *asn_heuristic_json(const asn_heuristic *h)
{
    return json_pack("{s:s,s:s,s:O}", "name", h->name, "id", h->id, "processors", h->processors);
}

/* ------------------------------------------------------------- workspace */

asn_workspace *asn_workspace_new(void) { return asn_xcalloc(1, sizeof(asn_workspace)); }

void asn_workspace_free(asn_workspace *ws)
{
    if (!ws)
        return;
    free(ws->e);
    free(ws->p);
    free(ws->f);
    free(ws->keys);
    free(ws->stamp);
    free(ws->count);
    free(ws->ord);
    asn_learned_ws_free(ws->learned);
    free(ws);
}

void asn_ws_reserve(asn_workspace *ws, int V)
{
    if (V <= ws->cap)
        return;
    size_t n = (size_t)V;
    ws->e = asn_xrealloc(ws->e, n * sizeof *ws->e);
    ws->p = asn_xrealloc(ws->p, n * sizeof *ws->p);
    ws->f = asn_xrealloc(ws->f, n * sizeof *ws->f);
    ws->keys = asn_xrealloc(ws->keys, n * sizeof *ws->keys);
    ws->ord = asn_xrealloc(ws->ord, n * sizeof *ws->ord);
    free(ws->stamp);
    ws->stamp = asn_xcalloc(n, sizeof *ws->stamp);
    ws->cur = 0;
    free(ws->count);
    ws->count = asn_xcalloc(n, sizeof *ws->count);
    ws->cap = V;
}

uint32_t asn_ws_new_mark(asn_workspace *ws)
{
    if (++ws->cur == 0) { /* wrapped: clear old marks */
        memset(ws->stamp, 0, (size_t)ws->cap * sizeof *ws->stamp);
        ws->cur = 1;
    }
    return ws->cur;
}

/* ------------------------------------------------------------- applying */

int asn_proc_apply(const asn_proc *p, float *row, int V, const asn_seq_ctx *ctx,
                   asn_seq_state *state, asn_workspace *ws, asn_err *e)
{
    if (p->kind == ASN_PROC_LEARNED)
        return asn_apply_learned(p, row, V, ctx, ws, e);
    asn_ws_reserve(ws, V);
    if (asn_proc_is_constraint(p->kind))
        return asn_apply_constraint(p, row, V, ctx, e);
    if (p->kind == ASN_PROC_JSON)
        return asn_apply_json(p, row, V, ctx, e);
    if (p->kind <= ASN_PROC_GREEDY)
        return asn_apply_hf(p, row, V, ctx, ws, e);
    return asn_apply_llama(p, row, V, ctx, state, ws, e);
}

static int check_row(const float *row, int V, asn_err *e)
{
    if (V <= 0)
        return asn_err_set(e, "empty logits row");
    int finite = 0;
    for (int i = 0; i < V; i++) {
        float x = row[i];
        if (isnan(x))
            return asn_err_set(e, "logit of token %d is NaN", i);
        if (x == INFINITY)
            return asn_err_set(e, "logit of token %d is +inf (overflow)", i);
        finite |= x != -INFINITY;
    }
    if (!finite)
        return asn_err_set(e, "every logit is -inf: no token can be drawn");
    return 0;
}

/* Processors that scale or shift values can push a finite logit to +inf
 * (temperature 0.01 on 1e37); later processors would then compute NaNs. A
 * learned sampler's output is checked too (it replaces the whole row). */
static int may_overflow(asn_proc_kind k)
{
    switch (k) {
    case ASN_PROC_TEMPERATURE:
    case ASN_PROC_LLAMA_TEMP:
    case ASN_PROC_REPETITION_PENALTY:
    case ASN_PROC_PRESENCE_PENALTY:
    case ASN_PROC_FREQUENCY_PENALTY:
    case ASN_PROC_PENALTIES:
    case ASN_PROC_DRY:
    case ASN_PROC_LEARNED:
        return 1;
    default:
        return 0;
    }
}

int asn_pipeline_apply(const asn_heuristic *h, float *row, int V, const asn_seq_ctx *ctx,
                       asn_seq_state *state, asn_workspace *ws, asn_err *e)
{
    if (check_row(row, V, e))
        return -1;
    /* constraints mask the raw row first (as vLLM and xgrammar do), in the
     * order listed; then the other processors in theirs */
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < h->n; i++) {
            const asn_proc *p = &h->procs[i];
            if (asn_proc_is_constraint(p->kind) != !pass)
                continue;
            if (asn_proc_apply(p, row, V, ctx, state, ws, e) || (may_overflow(p->kind) && check_row(row, V, e)))
                return asn_err_prefix(e, "processor %d (%s)", i + 1, asn_proc_name(p->kind));
        }
    }
    return 0;
}

int asn_sample_row(const float *row, int V, double u)
{
    float m = -INFINITY;
    for (int i = 0; i < V; i++)
        m = row[i] > m ? row[i] : m;
    double S = 0;
    for (int i = 0; i < V; i++) /* a removed token adds exp(-inf) = +0: nothing */
        if (row[i] != -INFINITY)
            S += (double)asn_expf(row[i] - m);
    double target = u * S, acc = 0;
    int last = -1;
    for (int i = 0; i < V; i++) {
        if (row[i] == -INFINITY)
            continue;
        last = i;
        acc += (double)asn_expf(row[i] - m);
        if (acc > target)
            return i;
    }
    return last; /* rounding left target at the very top: the last finite token */
}

void asn_pipeline_accept(const asn_heuristic *h, const float *row, int V, int token,
                         asn_seq_state *state)
{
    if (!state || !h->n || h->procs[h->n - 1].kind != ASN_PROC_MIROSTAT_V2)
        return;
    const asn_proc *p = &h->procs[h->n - 1];
    /* surprise of the chosen token under the renormalized kept distribution */
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
        state->mu = (float)(2 * p->f[0]);
    }
    state->mu -= (float)p->f[1] * (surprise - (float)p->f[0]);
}
