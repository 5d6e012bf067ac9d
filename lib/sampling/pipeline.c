/* pipeline.c — the processor table (the families' rows, proc.h), parsing
 * and validating a processor's parameters by its row into its parameter
 * struct, building a heuristic from its JSON processor list, applying it to
 * a row, and the token draw. */
#include "proc.h"
#include "asn/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- the table */

/* The processor families (proc.h); a processor's row is in its family's file. */
static const asn_proc_iface *const FAMILIES[] = {
    asn_procs_hf, asn_procs_llama, asn_procs_json, asn_procs_learned, asn_procs_constraint,
};
#define N_FAMILIES ((int)(sizeof FAMILIES / sizeof FAMILIES[0]))

const asn_proc_iface *asn_proc_row_at(int i)
{
    for (int f = 0; f < N_FAMILIES; f++)
        for (const asn_proc_iface *r = FAMILIES[f]; r->name; r++)
            if (i-- == 0)
                return r;
    return NULL;
}

/* The first row of kind k, or NULL. */
static const asn_proc_iface *row_of_kind(asn_proc_kind k)
{
    for (int f = 0; f < N_FAMILIES; f++)
        for (const asn_proc_iface *r = FAMILIES[f]; r->name; r++)
            if (r->kind == k)
                return r;
    return NULL;
}

const char *asn_proc_name(asn_proc_kind k)
{
    const asn_proc_iface *r = row_of_kind(k);
    return r ? r->name : "?";
}

int asn_proc_is_constraint(asn_proc_kind k)
{
    const asn_proc_iface *r = row_of_kind(k);
    return r && (r->flags & ASN_PF_MASK_FIRST);
}

static const asn_proc_iface *find_row(const char *name)
{
    for (int f = 0; f < N_FAMILIES; f++)
        for (const asn_proc_iface *r = FAMILIES[f]; r->name; r++)
            if (!strcmp(r->name, name))
                return r;
    return NULL;
}

/* -------------------------------------------------------------- parameters */

static int check_bounds(const asn_param *ps, double v, asn_err *e)
{
    int b = ps->bounds;
    int bad = ((b & ASN_LO_INCL) && !(v >= ps->lo)) || ((b & ASN_LO_EXCL) && !(v > ps->lo)) ||
              ((b & ASN_HI_INCL) && !(v <= ps->hi)) || ((b & ASN_HI_EXCL) && !(v < ps->hi));
    if (!bad)
        return 0;
    char lo[40] = "", hi[40] = "", val[40];
    snprintf(val, sizeof val, "%g", v);
    if (b & (ASN_LO_INCL | ASN_LO_EXCL))
        snprintf(lo, sizeof lo, "%s %g", (b & ASN_LO_INCL) ? ">=" : ">", ps->lo);
    if (b & (ASN_HI_INCL | ASN_HI_EXCL))
        snprintf(hi, sizeof hi, "%s%s %g", lo[0] ? " and " : "", (b & ASN_HI_INCL) ? "<=" : "<", ps->hi);
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

static void *field(asn_proc *p, size_t off) { return (char *)p->params + off; }

static int parse_param(asn_proc *p, const asn_param *ps, const json_t *v, asn_err *e)
{
    double d;
    switch (ps->type) {
    case ASN_P_REAL:
        if (asn_json_number(v, &d))
            return asn_err_set(e, "parameter \"%s\" must be a number, not %s", ps->key,
                               asn_json_type_name(v));
        if (!isfinite(d))
            return asn_err_set(e, "parameter \"%s\" must be finite", ps->key);
        if (check_bounds(ps, d, e))
            return -1;
        *(double *)field(p, ps->off) = d;
        break;
    case ASN_P_INT:
    case ASN_P_INT_TRUNC:
        if (ps->type == ASN_P_INT && !json_is_integer(v))
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
        *(long *)field(p, ps->off) = (long)d;
        break;
    case ASN_P_IDS: {
        asn_ids *ids = field(p, ps->off);
        if (parse_int_list(v, &ids->v, &ids->n, ps->key, e))
            return -1;
        break;
    }
    case ASN_P_BOOL:
        if (!json_is_boolean(v))
            return asn_err_set(e, "parameter \"%s\" must be true or false, not %s", ps->key,
                               asn_json_type_name(v));
        *(int *)field(p, ps->off) = json_is_true(v);
        break;
    case ASN_P_ANY:
        break;
    case ASN_P_STR:
        if (!json_is_string(v))
            return asn_err_set(e, "parameter \"%s\" must be a string, not %s", ps->key,
                               asn_json_type_name(v));
        if (!json_string_length(v))
            return asn_err_set(e, "parameter \"%s\" must not be empty", ps->key);
        if (strlen(json_string_value(v)) != json_string_length(v))
            return asn_err_set(e, "parameter \"%s\" must not hold a NUL character", ps->key);
        break;
    case ASN_P_BREAKERS: {
        if (!json_is_array(v))
            return asn_err_set(e, "parameter \"%s\" must be a list of token-id lists", ps->key);
        asn_breakers *b = field(p, ps->off);
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x)
        {
            if (json_is_string(x))
                return asn_err_set(e, "parameter \"%s\": string breakers need a tokenizer; "
                                      "give each breaker as a list of token ids", ps->key);
            int before = b->n_ids;
            if (!json_is_array(x) || !json_array_size(x) ||
                parse_int_list(x, &b->ids, &b->n_ids, ps->key, e))
                return asn_err_set(e, "parameter \"%s\" must be a list of non-empty token-id lists",
                                   ps->key);
            b->len = asn_xrealloc(b->len, (size_t)(b->n + 1) * sizeof *b->len);
            b->len[b->n++] = b->n_ids - before;
        }
        break;
    }
    }
    if (ps->has_off)
        *(int *)field(p, ps->has_off) = 1;
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
    const asn_proc_iface *k = find_row(json_string_value(jn));
    if (!k)
        return asn_err_set(e, "unknown processor \"%s\"", json_string_value(jn));
    p->kind = k->kind;
    p->iface = k;
    p->params = k->size ? asn_xcalloc(1, k->size) : NULL;
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
        const asn_param *ps = &k->params[j];
        v = params ? json_object_get(params, ps->key) : NULL;
        if (v && !json_is_null(v)) {
            if (parse_param(p, ps, v, e))
                return -1;
        } else if (ps->required) {
            return asn_err_set(e, "parameter \"%s\" is required", ps->key);
        } else if (ps->type == ASN_P_REAL) {
            *(double *)field(p, ps->off) = ps->def;
        } else if (ps->type == ASN_P_INT || ps->type == ASN_P_INT_TRUNC) {
            *(long *)field(p, ps->off) = (long)ps->def;
        }
    }
    return k->init ? k->init(p, params, e) : 0;
}

/* Frees what parse_proc made (also after it failed half-way). */
static void clear_proc(asn_proc *p)
{
    if (!p->iface)
        return;
    if (p->iface->release)
        p->iface->release(p);
    for (int j = 0; p->params && p->iface->params[j].key; j++) {
        const asn_param *ps = &p->iface->params[j];
        if (ps->type == ASN_P_IDS) {
            free(((asn_ids *)field(p, ps->off))->v);
        } else if (ps->type == ASN_P_BREAKERS) {
            asn_breakers *b = field(p, ps->off);
            free(b->ids);
            free(b->len);
        }
    }
    free(p->params);
    memset(p, 0, sizeof *p);
}

json_t *asn_proc_params_json(const asn_proc *p)
{
    json_t *o = json_object();
    for (int j = 0; p->iface && p->params && p->iface->params[j].key; j++) {
        const asn_param *ps = &p->iface->params[j];
        const void *f = (const char *)p->params + ps->off;
        json_t *v = NULL;
        if (ps->has_off && !*(const int *)((const char *)p->params + ps->has_off))
            continue; /* optional, not given, no default */
        switch (ps->type) {
        case ASN_P_REAL: v = json_real(*(const double *)f); break;
        case ASN_P_INT:
        case ASN_P_INT_TRUNC: v = json_integer(*(const long *)f); break;
        case ASN_P_BOOL: v = json_boolean(*(const int *)f); break;
        case ASN_P_IDS: {
            const asn_ids *ids = f;
            v = json_array();
            for (int i = 0; i < ids->n; i++)
                json_array_append_new(v, json_integer(ids->v[i]));
            break;
        }
        case ASN_P_BREAKERS: {
            const asn_breakers *b = f;
            v = json_array();
            for (int i = 0, off = 0; i < b->n; off += b->len[i++]) {
                json_t *seq = json_array();
                for (int t = 0; t < b->len[i]; t++)
                    json_array_append_new(seq, json_integer(b->ids[off + t]));
                json_array_append_new(v, seq);
            }
            break;
        }
        case ASN_P_STR:
        case ASN_P_ANY: break;
        }
        if (v)
            json_object_set_new(o, ps->key, v);
    }
    return o;
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
        if ((h->procs[i].iface->flags & ASN_PF_LAST) && i != h->n - 1) {
            int k = i + 1;
            const char *pname = h->procs[i].iface->name;
            asn_err_set(e, "processor %d (%s): must be the last processor, since it samples from its own "
                           "truncated distribution", k, pname);
            asn_heuristic_clear(h);
            return -1;
        }
    h->name = asn_xstrdup(name);
    json_t *idp = NULL; /* a copy, made for a learned processor only */
    for (int i = 0; i < h->n; i++)
        if (asn_learned_sampler(&h->procs[i])) {
            if (!idp)
                idp = json_deep_copy(h->processors);
            asn_learned_id_params(&h->procs[i], json_object_get(json_array_get(idp, i), "params"));
        }
    asn_heuristic_id(name, idp ? idp : h->processors, h->id);
    json_decref(idp);
    return 0;
}

json_t *asn_processors_normalized(const json_t *processors)
{
    json_t *out = json_array();
    size_t i;
    const json_t *obj;
    json_array_foreach(processors, i, obj) {
        const json_t *jn = json_object_get(obj, "name"), *params = json_object_get(obj, "params");
        json_array_append_new(out, json_pack("{s:O,s:o}", "name", jn ? (json_t *)jn : json_null(), "params",
                                             json_is_object(params) ? json_incref((json_t *)params) : json_object()));
    }
    return out;
}

void asn_heuristic_id(const char *name, const json_t *processors, char id[13])
{
    json_t *norm = asn_processors_normalized(processors);
    json_t *canon = json_pack("{s:s,s:o}", "name", name, "processors", norm);
    asn_json_digest(canon, 12, id);
    json_decref(canon);
}

int asn_heuristic_id_of(const char *name, const json_t *processors, char id[13], asn_err *e)
{
    json_t *norm = asn_processors_normalized(processors);
    size_t i;
    json_t *obj;
    json_array_foreach(norm, i, obj) {
        const char *pname = json_string_value(json_object_get(obj, "name"));
        const char *key = pname ? asn_learned_path_param(pname) : NULL;
        json_t *params = json_object_get(obj, "params");
        const char *path = key ? json_string_value(json_object_get(params, key)) : NULL;
        if (!path)
            continue;
        char sha[65];
        if (asn_sha256_file(path, sha, e)) {
            json_decref(norm);
            return asn_err_prefix(e, "processor %zu (%s): parameter \"%s\"", i + 1, pname, key);
        }
        json_t *pc = json_deep_copy(params); /* params is the record's */
        json_object_set_new(pc, key, asn_learned_id_value(sha));
        json_object_set_new(obj, "params", pc);
    }
    asn_heuristic_id(name, norm, id);
    json_decref(norm);
    return 0;
}

void asn_heuristic_clear(asn_heuristic *h)
{
    for (int i = 0; i < h->n; i++)
        clear_proc(&h->procs[i]);
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
        if (h->procs[i].iface->complete)
            return 1;
    return 0;
}

int asn_heuristic_may_end(const asn_heuristic *h, const asn_seq_ctx *ctx)
{
    int any = 0;
    for (int i = 0; i < h->n; i++) {
        const asn_proc *p = &h->procs[i];
        if (p->iface->complete) {
            if (!p->iface->complete(p, ctx))
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

/* ------------------------------------------------------------- applying */

int asn_proc_apply(const asn_proc *p, float *row, int V, const asn_seq_ctx *ctx,
                   asn_seq_state *state, asn_workspace *ws, asn_err *e)
{
    asn_ws_reserve(ws, V);
    return p->iface->apply(p, row, V, ctx, state, ws, e);
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

int asn_pipeline_apply(const asn_heuristic *h, float *row, int V, const asn_seq_ctx *ctx,
                       asn_seq_state *state, asn_workspace *ws, asn_err *e)
{
    if (check_row(row, V, e))
        return -1;
    /* constraints mask the raw row first (as vLLM and xgrammar do), in the
     * order listed; then the other processors in theirs. Processors that
     * scale or shift values can push a finite logit to +inf (temperature
     * 0.01 on 1e37), where later ones would compute NaNs: the row is checked
     * after each of them (ASN_PF_OVERFLOW). */
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < h->n; i++) {
            const asn_proc *p = &h->procs[i];
            int first = (p->iface->flags & ASN_PF_MASK_FIRST) != 0;
            if (first != !pass)
                continue;
            if (asn_proc_apply(p, row, V, ctx, state, ws, e) ||
                ((p->iface->flags & ASN_PF_OVERFLOW) && check_row(row, V, e)))
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
    /* only the last processor may keep state (ASN_PF_LAST) */
    const asn_proc *p = h->n ? &h->procs[h->n - 1] : NULL;
    if (state && p && p->iface->accept)
        p->iface->accept(p, row, V, token, state);
}
