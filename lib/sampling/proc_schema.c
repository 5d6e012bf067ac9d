/* proc_schema.c — the JSON Schema of a processor {name, params}
 * (schemas/processor.schema.json), made from the processor table: the
 * names, each row's parameters with their types, ranges, defaults and
 * descriptions, and which processors a gen-heuristics grid may sweep. The
 * committed file is this function's output (process-logits --schema);
 * tests/cli/schemas.sh fails when they differ. */
#include "proc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ----------------------------------------------------- the hand-written part */

static const char *const TITLE = "Logits processor";
static const char *const DESCRIPTION =
    "One step of a sampling pipeline, {name, params}, as in the reference project's heuristics YAML files. "
    "Parameter names, types and ranges are those asn accepts (HuggingFace's validation for the HF processors, "
    "OpenAI's [-2, 2] for presence/frequency penalties; the llama.cpp samplers take any value and treat "
    "out-of-range ones as off). An optional parameter that is null or absent takes its default. Unknown "
    "parameters are errors. Integer parameters must be written without a fraction: asn rejects 2.0 where an "
    "integer is demanded, although JSON Schema cannot tell 2.0 from 2; their magnitude is at most 2e9. Made "
    "from the processor table (lib/sampling/proc.h) by process-logits --schema.";
static const char *const PARAMS_DESCRIPTION =
    "The processor's parameters (may be omitted or null when it has no required ones).";
static const char *const SWEEP_PROCESSOR_DESCRIPTION =
    "The processors a gen-heuristics grid may sweep (heuristics-grid.schema.json): those that take a single "
    "number alone, that is with one required parameter, a number, or with none required and some that are "
    "numbers.";
static const char *const SWEEP_VALUES_DESCRIPTION =
    "A grid's sweep {processor, param, values}: the parameter each sweepable processor takes alone, and the "
    "values it accepts.";

/* The magnitude bound of integer parameters (pipeline.c). */
#define INT_MAX_ABS 2000000000.0

/* ------------------------------------------------------------- parameters */

/* A number as JSON: an integer when it is one. */
static json_t *number(double x)
{
    if (x == trunc(x) && fabs(x) < 1e15)
        return json_integer((json_int_t)x);
    return json_real(x);
}

static json_t *type(const char *t, int nullable)
{
    return nullable ? json_pack("[s,s]", t, "null") : json_string(t);
}

static int numeric(asn_ptype t) { return t == ASN_P_REAL || t == ASN_P_INT || t == ASN_P_INT_TRUNC; }

/* The range keywords of an integer parameter: the row's bounds, else the
 * magnitude bound. */
static void int_range(json_t *o, const asn_param *ps)
{
    double lo = -INT_MAX_ABS, hi = INT_MAX_ABS;
    if (ps->bounds & ASN_LO_INCL)
        lo = ps->lo;
    else if (ps->bounds & ASN_LO_EXCL)
        lo = floor(ps->lo) + 1;
    if (ps->bounds & ASN_HI_INCL)
        hi = ps->hi;
    else if (ps->bounds & ASN_HI_EXCL)
        hi = ceil(ps->hi) - 1;
    json_object_set_new(o, "minimum", number(lo));
    json_object_set_new(o, "maximum", number(hi));
}

/* The same for a number truncated to an integer before the checks (HF's
 * int()): trunc(x) >= lo and trunc(x) <= hi, as bounds on x. */
static void trunc_range(json_t *o, const asn_param *ps)
{
    double lo = -INT_MAX_ABS, hi = INT_MAX_ABS;
    if (ps->bounds & ASN_LO_INCL)
        lo = ceil(ps->lo);
    else if (ps->bounds & ASN_LO_EXCL)
        lo = floor(ps->lo) + 1;
    if (ps->bounds & ASN_HI_INCL)
        hi = floor(ps->hi);
    else if (ps->bounds & ASN_HI_EXCL)
        hi = ceil(ps->hi) - 1;
    if (lo >= 1)
        json_object_set_new(o, "minimum", number(lo));
    else
        json_object_set_new(o, "exclusiveMinimum", number(lo - 1));
    if (hi >= 0)
        json_object_set_new(o, "exclusiveMaximum", number(hi + 1));
    else
        json_object_set_new(o, "maximum", number(hi));
}

static void real_range(json_t *o, const asn_param *ps)
{
    if (ps->bounds & ASN_LO_INCL)
        json_object_set_new(o, "minimum", number(ps->lo));
    if (ps->bounds & ASN_LO_EXCL)
        json_object_set_new(o, "exclusiveMinimum", number(ps->lo));
    if (ps->bounds & ASN_HI_INCL)
        json_object_set_new(o, "maximum", number(ps->hi));
    if (ps->bounds & ASN_HI_EXCL)
        json_object_set_new(o, "exclusiveMaximum", number(ps->hi));
}

static json_t *token_ids(void)
{
    return json_pack("{s:s,s:{s:s}}", "type", "array", "items", "$ref", "#/$defs/token_id");
}

/* The schema of one parameter, as parse_param (pipeline.c) checks it. */
static json_t *param_schema(const asn_proc_iface *r, const asn_param *ps)
{
    int opt = !ps->required;
    json_t *o = json_object();
    switch (ps->type) {
    case ASN_P_REAL:
        json_object_set_new(o, "type", type("number", opt));
        real_range(o, ps);
        break;
    case ASN_P_INT:
        json_object_set_new(o, "type", type("integer", opt));
        int_range(o, ps);
        break;
    case ASN_P_INT_TRUNC:
        json_object_set_new(o, "type", type("number", opt));
        trunc_range(o, ps);
        break;
    case ASN_P_BOOL:
        json_object_set_new(o, "type", type("boolean", opt));
        break;
    case ASN_P_STR:
        json_object_set_new(o, "type", type("string", opt));
        json_object_set_new(o, "minLength", json_integer(1));
        break;
    case ASN_P_IDS: {
        json_t *any = json_array();
        if (opt)
            json_array_append_new(any, json_pack("{s:s}", "type", "null"));
        json_array_append_new(any, json_pack("{s:s}", "$ref", "#/$defs/token_id"));
        json_array_append_new(any, token_ids());
        json_object_set_new(o, "anyOf", any);
        break;
    }
    case ASN_P_BREAKERS: {
        json_t *seq = token_ids();
        json_object_set_new(seq, "minItems", json_integer(1));
        json_object_set_new(o, "type", type("array", opt));
        json_object_set_new(o, "items", seq);
        break;
    }
    case ASN_P_ANY: {
        json_error_t je;
        json_t *s = ps->schema ? json_loads(ps->schema, 0, &je) : json_object();
        if (!json_is_object(s)) {
            fprintf(stderr, "processor %s, parameter %s: the schema is not a JSON object: %s\n", r->name,
                    ps->key, je.text);
            abort();
        }
        json_object_update(o, s);
        json_decref(s);
        break;
    }
    }
    if (opt && (numeric(ps->type) || ps->type == ASN_P_BOOL))
        json_object_set_new(o, "default", ps->type == ASN_P_BOOL ? json_false() : number(ps->def));
    if (ps->doc)
        json_object_set_new(o, "description", json_string(ps->doc));
    return o;
}

/* Whether the row's params must be given. */
static int needs_params(const asn_proc_iface *r)
{
    int need = r->params_rule != NULL;
    for (int j = 0; r->params[j].key; j++)
        need |= r->params[j].required;
    return need;
}

/* $defs/NAME: the parameters of row r. */
static json_t *row_schema(const asn_proc_iface *r)
{
    char desc[2048];
    snprintf(desc, sizeof desc, "Parameters of %s. %s", r->name, r->doc ? r->doc : "");
    json_t *o = json_pack("{s:s,s:o}", "description", desc, "type", type("object", !needs_params(r)));
    json_t *props = json_object(), *req = json_array();
    for (int j = 0; r->params[j].key; j++) {
        json_object_set_new(props, r->params[j].key, param_schema(r, &r->params[j]));
        if (r->params[j].required)
            json_array_append_new(req, json_string(r->params[j].key));
    }
    json_object_set_new(o, "properties", props);
    json_object_set_new(o, "additionalProperties", json_false());
    if (json_array_size(req))
        json_object_set_new(o, "required", req);
    else
        json_decref(req);
    if (r->params_rule) {
        json_error_t je;
        json_t *rule = json_loads(r->params_rule, 0, &je);
        if (!json_is_object(rule)) {
            fprintf(stderr, "processor %s: params_rule is not a JSON object: %s\n", r->name, je.text);
            abort();
        }
        json_object_update(o, rule);
        json_decref(rule);
    }
    return o;
}

/* {"if": {name (or key) is value}, "then": then} */
static json_t *if_then(const char *key, const char *value, json_t *then)
{
    return json_pack("{s:{s:{s:{s:s}},s:[s]},s:o}", "if", "properties", key, "const", value, "required", key,
                     "then", then);
}

/* ------------------------------------------------------------------ sweeps */

/* The parameter gen-heuristics may sweep alone: the single required one
 * when it is a number; NULL when there is none or it is not a number, or
 * when more than one is required. With none required, every numeric
 * parameter may be (*any = 1, NULL returned). */
static const asn_param *swept(const asn_proc_iface *r, int *any)
{
    const asn_param *req = NULL;
    int n_req = 0, n_num = 0;
    for (int j = 0; r->params[j].key; j++) {
        n_num += numeric(r->params[j].type);
        if (r->params[j].required)
            req = &r->params[j], n_req++;
    }
    *any = !n_req && !r->params_rule && n_num > 0;
    return n_req == 1 && numeric(req->type) ? req : NULL;
}

static json_t *values_of(const char *name, const char *key)
{
    char ref[512];
    snprintf(ref, sizeof ref, "#/$defs/%s/properties/%s", name, key);
    return json_pack("{s:{s:s}}", "items", "$ref", ref);
}

/* What a sweep of row r must hold, or NULL when r cannot be swept. */
static json_t *sweep_rule(const asn_proc_iface *r)
{
    int any;
    const asn_param *p = swept(r, &any);
    if (p)
        return json_pack("{s:{s:{s:s},s:o}}", "properties", "param", "const", p->key, "values",
                         values_of(r->name, p->key));
    if (!any)
        return NULL;
    json_t *keys = json_array(), *each = json_array();
    for (int j = 0; r->params[j].key; j++) {
        if (!numeric(r->params[j].type))
            continue;
        json_array_append_new(keys, json_string(r->params[j].key));
        json_array_append_new(each, if_then("param", r->params[j].key,
                                            json_pack("{s:{s:o}}", "properties", "values",
                                                      values_of(r->name, r->params[j].key))));
    }
    return json_pack("{s:{s:{s:o}},s:o}", "properties", "param", "enum", keys, "allOf", each);
}

/* ------------------------------------------------------------------ schema */

json_t *asn_proc_schema(void)
{
    json_t *names = json_array(), *all = json_array(), *sweepable = json_array(), *sweeps = json_array();
    json_t *defs = json_pack("{s:{s:s,s:i,s:i,s:s}}", "token_id", "type", "integer", "minimum", 0, "maximum",
                             2147483647, "description", "A token id.");
    const asn_proc_iface *r;
    for (int i = 0; (r = asn_proc_row_at(i)); i++) {
        char ref[300];
        snprintf(ref, sizeof ref, "#/$defs/%s", r->name);
        json_array_append_new(names, json_string(r->name));
        json_t *then = json_pack("{s:{s:{s:s}}}", "properties", "params", "$ref", ref);
        if (needs_params(r))
            json_object_set_new(then, "required", json_pack("[s]", "params"));
        json_array_append_new(all, if_then("name", r->name, then));
        json_object_set_new(defs, r->name, row_schema(r));
        json_t *rule = sweep_rule(r);
        if (rule) {
            json_array_append_new(sweepable, json_string(r->name));
            json_array_append_new(sweeps, if_then("processor", r->name, rule));
        }
    }
    json_object_set_new(defs, "sweep_processor",
                        json_pack("{s:s,s:o}", "description", SWEEP_PROCESSOR_DESCRIPTION, "enum", sweepable));
    json_object_set_new(defs, "sweep_values",
                        json_pack("{s:s,s:o}", "description", SWEEP_VALUES_DESCRIPTION, "allOf", sweeps));
    json_t *s = json_pack("{s:s,s:s,s:s,s:s,s:s,s:[s]}", "$schema", "https://json-schema.org/draft/2020-12/schema",
                          "$id", "https://asn.invalid/schemas/processor.schema.json", "title", TITLE,
                          "description", DESCRIPTION, "type", "object", "required", "name");
    json_object_set_new(s, "properties",
                        json_pack("{s:{s:s,s:o},s:{s:s,s:[s,s]}}", "name", "description", "The processor.", "enum",
                                  names, "params", "description", PARAMS_DESCRIPTION, "type", "object", "null"));
    json_object_set_new(s, "additionalProperties", json_false());
    json_object_set_new(s, "allOf", all);
    json_object_set_new(s, "$defs", defs);
    return s;
}
