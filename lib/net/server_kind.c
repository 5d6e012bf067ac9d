/* server_kind.c — what each kind of server can express of a heuristic, as
 * one table per kind: the processors it runs, the request field of each
 * parameter, and the order it applies them in (vLLM: penalties,
 * temperature, min_p, top_k, top_p; SGLang: penalties, temperature, top_k,
 * top_p, min_p; llama-server: any order of its samplers, sent as
 * "samplers"). A heuristic outside the table is refused, never
 * approximated.
 *
 * Constraints (json_schema, grammar, regex, choice: one per heuristic;
 * each server masks the logits with it before sampling, as asn does):
 *   vllm          "structured_outputs": {"json": schema | "grammar": GBNF |
 *                 "regex": pattern | "choice": [options],
 *                 "disable_any_whitespace": true for whitespace compact}
 *                 (vLLM before 0.10.2 spelled these guided_json,
 *                 guided_grammar, guided_regex, guided_choice)
 *   sglang        sampling_params "json_schema": the schema as JSON text,
 *                 "ebnf": GBNF, "regex": pattern; a choice as the regex
 *                 of its escaped options; JSON whitespace is a server
 *                 setting, so only whitespace "any" is accepted
 *   llama-server  "json_schema": schema, "grammar": GBNF; a choice as the
 *                 GBNF of its quoted options; no regex; JSON whitespace as
 *                 llama.cpp's converter writes it, so only whitespace "any" */
#include "asn/client.h"
#include "asn/json.h"
#include "asn/tool.h"
#include "asn/sbuf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct param_map {
    const char *asn;      /* the processor's parameter */
    const char *field;    /* the server's field; NULL: allowed only at `only` */
    double only;
} param_map;

typedef struct proc_map {
    const char *proc;     /* asn processor name */
    int rank;             /* where the server applies it (-1: anywhere, ordered by "samplers") */
    const char *sampler;  /* llama-server's sampler name */
    const char *as_field; /* a processor without parameters sent as field = as_value (greedy) */
    double as_value;
    param_map params[5];
} proc_map;

typedef struct kind_row {
    const char *name, *path;
    int min_tokens;       /* can mask end of generation (min_new_tokens) */
    proc_map procs[12];
} kind_row;

/* vLLM's sampler: repetition, then frequency and presence penalties, then
 * temperature, min_p, top_k, top_p. */
#define PENALTIES(REP, FREQ)                                                                                     \
    {"repetition_penalty", REP, NULL, NULL, 0, {{"penalty", "repetition_penalty", 0}, {"prompt_ignore_length", NULL, 0}}}, \
    {"frequency_penalty", FREQ, NULL, NULL, 0, {{"penalty", "frequency_penalty", 0}}},                          \
    {"presence_penalty", FREQ, NULL, NULL, 0, {{"penalty", "presence_penalty", 0}}}

static const kind_row KINDS[ASN_SERVER_KINDS] = {
    [ASN_SERVER_ASN] = {"asn", "/v1/completions", 1, {{0}}},
    [ASN_SERVER_VLLM] = {"vllm", "/v1/completions", 1, {
        PENALTIES(0, 1),
        {"temperature", 2, NULL, NULL, 0, {{"temperature", "temperature", 0}}},
        {"greedy", 2, NULL, "temperature", 0, {{0}}},
        {"min_p", 3, NULL, NULL, 0, {{"min_p", "min_p", 0}, {"min_tokens_to_keep", NULL, 1}}},
        {"top_k", 4, NULL, NULL, 0, {{"top_k", "top_k", 0}, {"min_tokens_to_keep", NULL, 1}}},
        {"top_p", 5, NULL, NULL, 0, {{"top_p", "top_p", 0}, {"min_tokens_to_keep", NULL, 1}}},
    }},
    [ASN_SERVER_SGLANG] = {"sglang", "/generate", 1, {
        PENALTIES(0, 1),
        {"temperature", 2, NULL, NULL, 0, {{"temperature", "temperature", 0}}},
        {"greedy", 2, NULL, "temperature", 0, {{0}}},
        {"top_k", 3, NULL, NULL, 0, {{"top_k", "top_k", 0}, {"min_tokens_to_keep", NULL, 1}}},
        {"top_p", 4, NULL, NULL, 0, {{"top_p", "top_p", 0}, {"min_tokens_to_keep", NULL, 1}}},
        {"min_p", 5, NULL, NULL, 0, {{"min_p", "min_p", 0}, {"min_tokens_to_keep", NULL, 1}}},
    }},
    [ASN_SERVER_LLAMA] = {"llama-server", "/completion", 0, {
        {"penalties", -1, "penalties", NULL, 0, {{"penalty_last_n", "repeat_last_n", 0}, {"penalty_repeat", "repeat_penalty", 0},
                                                 {"penalty_freq", "frequency_penalty", 0}, {"penalty_present", "presence_penalty", 0}}},
        {"llama_top_k", -1, "top_k", NULL, 0, {{"top_k", "top_k", 0}}},
        {"llama_typical", -1, "typ_p", NULL, 0, {{"typ_p", "typical_p", 0}, {"min_keep", "min_keep", 0}}},
        {"llama_top_p", -1, "top_p", NULL, 0, {{"top_p", "top_p", 0}, {"min_keep", "min_keep", 0}}},
        {"llama_min_p", -1, "min_p", NULL, 0, {{"min_p", "min_p", 0}, {"min_keep", "min_keep", 0}}},
        {"top_n_sigma", -1, "top_n_sigma", NULL, 0, {{"top_n_sigma", "top_n_sigma", 0}}},
        {"xtc", -1, "xtc", NULL, 0, {{"xtc_probability", "xtc_probability", 0}, {"xtc_threshold", "xtc_threshold", 0},
                                      {"min_keep", "min_keep", 0}}},
        {"llama_temp", -1, "temperature", NULL, 0, {{"temp", "temperature", 0}}},
        {"greedy", -1, "temperature", "temperature", 0, {{0}}},
    }},
};

int asn_server_kind_from_name(const char *name)
{
    for (int k = 0; k < ASN_SERVER_KINDS; k++)
        if (!strcmp(name, KINDS[k].name))
            return k;
    return -1;
}

const char *asn_server_kind_name(int kind)
{
    return kind >= 0 && kind < ASN_SERVER_KINDS ? KINDS[kind].name : "?";
}

const char *asn_server_path(int kind)
{
    return KINDS[kind].path;
}

static const proc_map *find_proc(int kind, const char *name)
{
    for (int i = 0; i < 12 && KINDS[kind].procs[i].proc; i++)
        if (!strcmp(KINDS[kind].procs[i].proc, name))
            return &KINDS[kind].procs[i];
    return NULL;
}

static const param_map *find_param(const proc_map *pm, const char *key)
{
    for (int i = 0; i < 5 && pm->params[i].asn; i++)
        if (!strcmp(pm->params[i].asn, key))
            return &pm->params[i];
    return NULL;
}

/* ---------------------------------------------------------- constraints */

static int is_constraint(const char *name)
{
    return !strcmp(name, "json_schema") || !strcmp(name, "grammar") || !strcmp(name, "regex") ||
           !strcmp(name, "choice");
}

/* The constraint's content: the schema (json_schema), the GBNF text
 * (grammar, a string), the pattern (regex) or the options (choice); files
 * named by "path" read. New reference, or NULL with e. */
static json_t *constraint_value(const char *name, const json_t *params, asn_err *e)
{
    const json_t *path = json_object_get(params, "path");
    char *text = NULL;
    size_t len;
    if (json_is_string(path) && asn_read_file(json_string_value(path), &text, &len, e))
        return NULL;
    json_t *v = NULL;
    if (!strcmp(name, "json_schema")) {
        json_error_t je;
        v = text ? json_loadb(text, len, JSON_DECODE_ANY, &je) : json_incref(json_object_get(params, "schema"));
        if (!v && text) {
            free(text);
            return asn_err_set(e, "%s: %d:%d: %s", json_string_value(path), je.line, je.column, je.text), NULL;
        }
    } else if (!strcmp(name, "grammar")) {
        v = text ? json_stringn(text, len) : json_incref(json_object_get(params, "gbnf"));
    } else {
        v = json_incref(json_object_get(params, !strcmp(name, "regex") ? "pattern" : "options"));
    }
    free(text);
    if (!v)
        asn_err_set(e, "processor %s has no content", name);
    return v;
}

/* The request field of a constraint for a kind (NULL: cannot). */
static const char *constraint_field(int kind, const char *name)
{
    static const char *const F[ASN_SERVER_KINDS][4] = {
        /* json_schema, grammar, regex, choice */
        [ASN_SERVER_VLLM] = {"json", "grammar", "regex", "choice"},
        [ASN_SERVER_SGLANG] = {"json_schema", "ebnf", "regex", "regex"},
        [ASN_SERVER_LLAMA] = {"json_schema", "grammar", NULL, "grammar"},
    };
    int k = !strcmp(name, "json_schema") ? 0 : !strcmp(name, "grammar") ? 1 : !strcmp(name, "regex") ? 2 : 3;
    return F[kind][k];
}

/* A choice as a regex (SGLang) or a GBNF rule (llama-server): the options
 * as alternatives, each escaped. */
static json_t *choice_as(int kind, const json_t *options)
{
    asn_sbuf out = ASN_SBUF_INIT;
    size_t i;
    const json_t *o;
    int llama = kind == ASN_SERVER_LLAMA;
    asn_sbuf_adds(&out, llama ? "root ::= " : "(");
    json_array_foreach(options, i, o)
    {
        const char *t = json_string_value(o);
        size_t tl = json_string_length(o);
        if (i)
            asn_sbuf_adds(&out, llama ? " | " : "|");
        if (llama)
            asn_sbuf_addc(&out, '"');
        for (size_t k = 0; k < tl; k++) {
            unsigned char c = (unsigned char)t[k];
            if (llama) {
                if (c == '"' || c == '\\')
                    asn_sbuf_addc(&out, '\\'), asn_sbuf_addc(&out, (char)c);
                else if (c < 0x20)
                    asn_sbuf_addf(&out, "\\x%02X", c);
                else
                    asn_sbuf_addc(&out, (char)c);
            } else {
                if (strchr(".^$*+?()[]{}|\\/-", c))
                    asn_sbuf_addc(&out, '\\');
                asn_sbuf_addc(&out, (char)c);
            }
        }
        if (llama)
            asn_sbuf_addc(&out, '"');
    }
    if (!llama)
        asn_sbuf_addc(&out, ')');
    json_t *v = json_stringn(out.buf, out.len);
    asn_sbuf_release(&out);
    return v;
}

static int check_constraint(int kind, const asn_heuristic *h, size_t i, const char *name, const json_t *params,
                            asn_err *e)
{
    const char *kn = KINDS[kind].name;
    if (!constraint_field(kind, name))
        return asn_err_set(e, "heuristic \"%s\": %s cannot express processor %zu (%s)", h->name, kn, i + 1, name);
    const json_t *ws = json_object_get(params, "whitespace");
    int compact = !ws || json_is_null(ws) || !strcmp(json_string_value(ws) ? json_string_value(ws) : "", "compact");
    if (compact && !strcmp(name, "json_schema") && kind != ASN_SERVER_VLLM)
        return asn_err_set(e, "heuristic \"%s\": %s cannot express processor %zu (%s) parameter \"whitespace\" "
                              "compact (the server sets its JSON whitespace); use whitespace: any",
                           h->name, kn, i + 1, name);
    json_t *v = constraint_value(name, params, e);
    if (!v)
        return asn_err_prefix(e, "heuristic \"%s\": processor %zu (%s)", h->name, i + 1, name);
    json_decref(v);
    return 0;
}

/* Sets the constraint's field in o (the body, or SGLang's sampling_params). */
static void set_constraint(int kind, const char *name, const json_t *params, json_t *o)
{
    asn_err e = {""};
    json_t *v = constraint_value(name, params, &e); /* checked by asn_server_check */
    if (!v)
        return;
    if (!strcmp(name, "choice") && kind != ASN_SERVER_VLLM) {
        json_t *c = choice_as(kind, v);
        json_decref(v);
        v = c;
    } else if (!strcmp(name, "json_schema") && kind == ASN_SERVER_SGLANG) {
        char *t = asn_json_dumps(v, 0);
        json_decref(v);
        v = json_string(t);
        free(t);
    }
    const char *field = constraint_field(kind, name);
    if (kind == ASN_SERVER_VLLM) {
        const json_t *ws = json_object_get(params, "whitespace");
        json_t *so = json_object();
        json_object_set_new(so, field, v);
        if (!strcmp(name, "json_schema"))
            json_object_set_new(so, "disable_any_whitespace",
                                json_boolean(!json_is_string(ws) || strcmp(json_string_value(ws), "any")));
        json_object_set_new(o, "structured_outputs", so);
    } else {
        json_object_set_new(o, field, v);
    }
}

int asn_server_check(int kind, const asn_heuristic *h, const asn_gen_settings *s, asn_err *e)
{
    const char *kn = KINDS[kind].name;
    if (s && s->min_new_tokens > 0 && !KINDS[kind].min_tokens)
        return asn_err_set(e, "%s cannot express --min-new-tokens %d (no minimum length parameter)", kn,
                           s->min_new_tokens);
    if (kind == ASN_SERVER_ASN)
        return 0;
    int last_rank = -1;
    const char *seen[32];
    double min_keep = NAN;
    size_t i, n_cons = 0;
    const json_t *p;
    json_array_foreach(h->processors, i, p)
    {
        const char *name = json_string_value(json_object_get(p, "name"));
        if (is_constraint(name)) { /* applied first wherever it stands, as asn does */
            if (++n_cons > 1)
                return asn_err_set(e, "heuristic \"%s\": %s takes one constraint; processor %zu (%s) is another",
                                   h->name, kn, i + 1, name);
            if (check_constraint(kind, h, i, name, json_object_get(p, "params"), e))
                return -1;
            if (i < 32)
                seen[i] = name;
            continue;
        }
        const proc_map *pm = find_proc(kind, name);
        if (!pm)
            return asn_err_set(e, "heuristic \"%s\": %s cannot express processor %zu (%s)", h->name, kn, i + 1, name);
        for (size_t k = 0; k < i && k < 32; k++)
            if (!strcmp(seen[k], name))
                return asn_err_set(e, "heuristic \"%s\": %s applies processor %zu (%s) once only", h->name, kn,
                                   i + 1, name);
        if (i < 32)
            seen[i] = name;
        if (pm->rank >= 0 && pm->rank < last_rank)
            return asn_err_set(e, "heuristic \"%s\": %s applies processor %zu (%s) before the ones above it; "
                                  "the order cannot be kept", h->name, kn, i + 1, name);
        if (!strcmp(name, "greedy") && i + 1 < json_array_size(h->processors))
            return asn_err_set(e, "heuristic \"%s\": %s has greedy (temperature 0) last only", h->name, kn);
        last_rank = pm->rank >= 0 ? pm->rank : last_rank;
        const char *key;
        const json_t *v;
        json_object_foreach((json_t *)json_object_get(p, "params"), key, v)
        {
            const param_map *pa = find_param(pm, key);
            double x;
            if (!pa || asn_json_number(v, &x))
                return asn_err_set(e, "heuristic \"%s\": %s cannot express processor %zu (%s) parameter \"%s\"",
                                   h->name, kn, i + 1, name, key);
            if (!pa->field && x != pa->only)
                return asn_err_set(e, "heuristic \"%s\": %s cannot express processor %zu (%s) parameter \"%s\" "
                                      "other than %g", h->name, kn, i + 1, name, key, pa->only);
            if (!strcmp(key, "min_keep")) {
                if (!isnan(min_keep) && x != min_keep)
                    return asn_err_set(e, "heuristic \"%s\": %s has one min_keep for every sampler; processor %zu "
                                          "(%s) gives another", h->name, kn, i + 1, name);
                min_keep = x;
            }
        }
    }
    return 0;
}

/* Neutral values, so that a server's own defaults (a model's generation
 * config) never change what is asked. */
static void neutral(int kind, json_t *o)
{
    if (kind == ASN_SERVER_LLAMA) { /* only the listed samplers run; their unset parameters at asn's defaults */
        json_object_set_new(o, "repeat_last_n", json_integer(64));
        json_object_set_new(o, "repeat_penalty", json_real(1));
        json_object_set_new(o, "frequency_penalty", json_real(0));
        json_object_set_new(o, "presence_penalty", json_real(0));
        json_object_set_new(o, "min_keep", json_integer(0));
        json_object_set_new(o, "mirostat", json_integer(0));       /* else the server's --mirostat replaces the chain */
        json_object_set_new(o, "dynatemp_range", json_real(0));    /* else temperature is dynamic */
        json_object_set_new(o, "logit_bias", json_array());        /* else the server's --logit-bias applies */
        json_object_set_new(o, "ignore_eos", json_false());
        json_object_set_new(o, "n_probs", json_integer(0));
        return;
    }
    json_object_set_new(o, "temperature", json_real(1));
    json_object_set_new(o, "top_p", json_real(1));
    json_object_set_new(o, "top_k", json_integer(kind == ASN_SERVER_VLLM ? -1 : -1));
    json_object_set_new(o, "min_p", json_real(0));
    json_object_set_new(o, "repetition_penalty", json_real(1));
    json_object_set_new(o, "presence_penalty", json_real(0));
    json_object_set_new(o, "frequency_penalty", json_real(0));
}

static void mapped_params(int kind, const asn_heuristic *h, json_t *o)
{
    json_t *samplers = json_array();
    size_t i;
    const json_t *p;
    json_array_foreach(h->processors, i, p)
    {
        const char *name = json_string_value(json_object_get(p, "name"));
        if (is_constraint(name)) {
            set_constraint(kind, name, json_object_get(p, "params"), o);
            continue;
        }
        const proc_map *pm = find_proc(kind, name);
        if (pm->as_field)
            json_object_set_new(o, pm->as_field, json_real(pm->as_value));
        if (pm->sampler)
            json_array_append_new(samplers, json_string(pm->sampler));
        const char *key;
        json_t *v;
        json_object_foreach((json_t *)json_object_get(p, "params"), key, v)
        {
            const param_map *pa = find_param(pm, key);
            if (pa->field)
                json_object_set(o, pa->field, v);
        }
    }
    if (kind == ASN_SERVER_LLAMA)
        json_object_set_new(o, "samplers", samplers);
    else
        json_decref(samplers);
}

json_t *asn_server_body(int kind, const asn_server_job *j)
{
    json_t *ids = json_array(), *stop = json_array();
    for (int i = 0; i < j->n_prompt; i++)
        json_array_append_new(ids, json_integer(j->prompt[i]));
    for (int i = 0; i < j->s->n_stop; i++)
        json_array_append_new(stop, json_string(j->s->stop[i]));
    json_t *o = json_object();
    if (j->model && kind != ASN_SERVER_SGLANG && kind != ASN_SERVER_LLAMA)
        json_object_set_new(o, "model", json_string(j->model));
    switch (kind) {
    case ASN_SERVER_ASN:
        json_object_set_new(o, "prompt", ids);
        json_object_set_new(o, "max_tokens", json_integer(j->s->max_new_tokens));
        json_object_set_new(o, "min_tokens", json_integer(j->s->min_new_tokens));
        json_object_set_new(o, "stop", stop);
        json_object_set_new(o, "seed", json_integer((json_int_t)j->seed));
        json_object_set_new(o, "asn_heuristic", asn_heuristic_json(j->h));
        json_object_set_new(o, "asn_prompt_id", json_string(j->prompt_id));
        json_object_set_new(o, "return_token_ids", json_true());
        break;
    case ASN_SERVER_VLLM:
        json_object_set_new(o, "prompt", ids);
        json_object_set_new(o, "max_tokens", json_integer(j->s->max_new_tokens));
        json_object_set_new(o, "min_tokens", json_integer(j->s->min_new_tokens));
        json_object_set_new(o, "stop", stop);
        json_object_set_new(o, "seed", json_integer((json_int_t)j->seed));
        neutral(kind, o);
        mapped_params(kind, j->h, o);
        json_object_set_new(o, "return_token_ids", json_true());
        /* vLLM before return_token_ids (0.10.2) names the tokens in logprobs as "token_id:N" */
        json_object_set_new(o, "logprobs", json_integer(0));
        json_object_set_new(o, "return_tokens_as_token_ids", json_true());
        json_object_set_new(o, "skip_special_tokens", json_false());
        break;
    case ASN_SERVER_SGLANG: {
        json_t *sp = json_object();
        json_object_set_new(sp, "max_new_tokens", json_integer(j->s->max_new_tokens));
        json_object_set_new(sp, "min_new_tokens", json_integer(j->s->min_new_tokens));
        json_object_set_new(sp, "stop", stop);
        json_object_set_new(sp, "sampling_seed", json_integer((json_int_t)j->seed));
        neutral(kind, sp);
        mapped_params(kind, j->h, sp);
        json_object_set_new(o, "input_ids", ids);
        json_object_set_new(o, "sampling_params", sp);
        break;
    }
    case ASN_SERVER_LLAMA:
        json_object_set_new(o, "prompt", ids);
        json_object_set_new(o, "n_predict", json_integer(j->s->max_new_tokens));
        json_object_set_new(o, "stop", stop);
        json_object_set_new(o, "seed", json_integer((json_int_t)(j->seed & 0xffffffffu)));
        json_object_set_new(o, "return_tokens", json_true());
        json_object_set_new(o, "cache_prompt", json_true());
        neutral(kind, o);
        mapped_params(kind, j->h, o);
        break;
    }
    return o;
}

/* vLLM's logprobs.tokens under return_tokens_as_token_ids: "token_id:N"
 * each; a new array of the ids, or NULL when one is not of that form. */
static json_t *ids_of_token_strings(const json_t *tokens)
{
    if (!json_is_array(tokens))
        return NULL;
    json_t *a = json_array();
    size_t i;
    const json_t *t;
    json_array_foreach(tokens, i, t)
    {
        const char *s = json_string_value(t);
        char *end;
        long long v = s && !strncmp(s, "token_id:", 9) ? strtoll(s + 9, &end, 10) : -1;
        if (v < 0 || end == s + 9 || *end) {
            json_decref(a);
            return NULL;
        }
        json_array_append_new(a, json_integer(v));
    }
    return a;
}

int asn_server_tokens(int kind, const char *body, size_t len, int32_t **ids, int *n, asn_err *e)
{
    json_error_t je;
    json_t *o = json_loadb(body, len, 0, &je), *a = NULL, *own = NULL;
    *ids = NULL;
    *n = 0;
    if (!o)
        return asn_err_set(e, "the response is not JSON: %s", je.text);
    if (kind == ASN_SERVER_ASN || kind == ASN_SERVER_VLLM) {
        const json_t *c0 = json_array_get(json_object_get(o, "choices"), 0);
        a = json_object_get(c0, "token_ids");
        if (!json_is_array(a) && kind == ASN_SERVER_VLLM)
            a = own = ids_of_token_strings(json_object_get(json_object_get(c0, "logprobs"), "tokens"));
    } else if (kind == ASN_SERVER_SGLANG) {
        const json_t *r = json_is_array(o) ? json_array_get(o, 0) : o;
        a = json_object_get(r, "output_ids");
        /* finished by an end token: {"type": "stop", "matched": ID}; the id
         * is the last of output_ids, added when a version leaves it out */
        const json_t *fr = json_object_get(json_object_get(r, "meta_info"), "finish_reason");
        const json_t *m = json_object_get(fr, "matched");
        const json_t *last = json_array_get(a, json_array_size(a) - 1);
        if (json_is_array(a) && json_is_integer(m) && !json_equal(last, m)) {
            a = own = json_deep_copy(a);
            json_array_append_new(own, json_integer(json_integer_value(m)));
        }
    } else {
        a = json_object_get(o, "tokens");
    }
    if (!json_is_array(a)) {
        json_decref(o);
        return asn_err_set(e, "the response has no generated token ids (%s)",
                           kind == ASN_SERVER_SGLANG ? "output_ids"
                           : kind == ASN_SERVER_LLAMA ? "tokens"
                           : kind == ASN_SERVER_VLLM  ? "choices[0].token_ids or logprobs.tokens \"token_id:N\""
                                                      : "choices[0].token_ids");
    }
    size_t k = json_array_size(a);
    *ids = asn_xmalloc((k ? k : 1) * sizeof **ids);
    for (size_t i = 0; i < k; i++) {
        const json_t *t = json_array_get(a, i);
        if (!json_is_integer(t) || json_integer_value(t) < 0 || json_integer_value(t) > INT32_MAX) {
            free(*ids);
            *ids = NULL;
            json_decref(own);
            json_decref(o);
            return asn_err_set(e, "the response's token id %zu is not a token id", i);
        }
        (*ids)[i] = (int32_t)json_integer_value(t);
    }
    *n = (int)k;
    json_decref(own);
    json_decref(o);
    return 0;
}
