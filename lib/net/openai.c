/* openai.c — OpenAI-compatible request bodies in, responses out (see
 * asn/openai.h). Every field a request may carry is checked here; the
 * server only runs what this accepted. */
#include "asn/openai.h"
#include "asn/chat.h"
#include "asn/json.h"
#include "asn/sbuf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *asn_oai_finish_reason(asn_finish f)
{
    return f == ASN_FINISH_LENGTH ? "length" : "stop";
}

void asn_oai_request_free(asn_oai_request *rq)
{
    free(rq->prompt_ids);
    free(rq->stop);
    json_decref(rq->processors);
    json_decref(rq->constraint);
    json_decref(rq->body);
    memset(rq, 0, sizeof *rq);
}

/* An optional number field within [lo, hi]; *has set when present. */
static int get_range(const json_t *o, const char *key, double lo, double hi, double *out, int *has, asn_err *e)
{
    double v = NAN;
    if (asn_get_number(o, key, 0, &v, e))
        return -1;
    if (has)
        *has = !isnan(v);
    if (isnan(v))
        return 0;
    if (!(v >= lo && v <= hi))
        return asn_err_set(e, "field \"%s\" must be in [%g, %g]", key, lo, hi);
    *out = v;
    return 0;
}

static int get_long(const json_t *o, const char *key, long lo, long hi, long *out, asn_err *e)
{
    long long v = *out;
    if (asn_get_int(o, key, 0, &v, e))
        return -1;
    if (v < lo || v > hi)
        return asn_err_set(e, "field \"%s\" must be %ld to %ld", key, lo, hi);
    *out = (long)v;
    return 0;
}

static int get_bool(const json_t *o, const char *key, int *out, asn_err *e)
{
    const json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_boolean(v))
        return asn_err_set(e, "field \"%s\" must be true or false", key);
    *out = json_is_true(v);
    return 0;
}

static void add_proc(json_t *procs, const char *name, json_t *params)
{
    json_array_append_new(procs, json_pack("{s:s,s:o}", "name", name, "params", params));
}

json_t *asn_oai_params_processors(const json_t *body, asn_err *e)
{
    double temp = 1, top_p = 1, min_p = 0, typ = 1, rep = 1, pres = 0, freq = 0, top_k = -1;
    int has;
    if (get_range(body, "temperature", 0, 100, &temp, &has, e) || get_range(body, "top_p", 0, 1, &top_p, &has, e) ||
        get_range(body, "min_p", 0, 1, &min_p, &has, e) || get_range(body, "typical_p", 0, 1, &typ, &has, e) ||
        get_range(body, "repetition_penalty", 1e-6, 100, &rep, &has, e) ||
        get_range(body, "presence_penalty", -2, 2, &pres, &has, e) ||
        get_range(body, "frequency_penalty", -2, 2, &freq, &has, e) ||
        get_range(body, "top_k", -1, 1e9, &top_k, &has, e))
        return NULL;
    if (top_k != floor(top_k))
        return asn_err_set(e, "field \"top_k\" must be an integer"), NULL;
    if (typ <= 0)
        return asn_err_set(e, "field \"typical_p\" must be in (0, 1]"), NULL;
    json_t *procs = json_array();
    if (rep != 1)
        add_proc(procs, "repetition_penalty", json_pack("{s:f}", "penalty", rep));
    if (pres != 0)
        add_proc(procs, "presence_penalty", json_pack("{s:f}", "penalty", pres));
    if (freq != 0)
        add_proc(procs, "frequency_penalty", json_pack("{s:f}", "penalty", freq));
    if (temp == 0) { /* greedy: the rest cannot change the choice */
        add_proc(procs, "greedy", json_object());
        return procs;
    }
    if (temp != 1)
        add_proc(procs, "temperature", json_pack("{s:f}", "temperature", temp));
    if (top_k > 0)
        add_proc(procs, "top_k", json_pack("{s:I}", "top_k", (json_int_t)top_k));
    if (top_p < 1)
        add_proc(procs, "top_p", json_pack("{s:f}", "top_p", top_p));
    if (min_p > 0)
        add_proc(procs, "min_p", json_pack("{s:f}", "min_p", min_p));
    if (typ < 1)
        add_proc(procs, "typical", json_pack("{s:f}", "mass", typ));
    return procs;
}

static int parse_prompt(asn_oai_request *rq, const asn_oai_limits *lim, asn_err *e)
{
    const json_t *p = json_object_get(rq->body, "prompt");
    if (json_is_string(p)) {
        if (!json_string_length(p))
            return asn_err_set(e, "field \"prompt\" is empty");
        if (strlen(json_string_value(p)) != json_string_length(p))
            return asn_err_set(e, "field \"prompt\" holds a NUL character");
        rq->prompt = json_string_value(p);
        return 0;
    }
    /* a list of ids, or a list of one list of ids (a batch of one) */
    if (json_is_array(p) && json_array_size(p) == 1 && json_is_array(json_array_get(p, 0)))
        p = json_array_get(p, 0);
    if (!json_is_array(p) || !json_array_size(p))
        return asn_err_set(e, "field \"prompt\" must be a string or a non-empty array of token ids "
                              "(one prompt per request)");
    size_t n = json_array_size(p);
    if (n > (size_t)lim->max_prompt)
        return asn_err_set(e, "field \"prompt\": %zu tokens, more than the limit of %d", n, lim->max_prompt);
    rq->prompt_ids = asn_xmalloc(n * sizeof *rq->prompt_ids);
    for (size_t i = 0; i < n; i++) {
        const json_t *t = json_array_get(p, i);
        if (json_is_string(t) || json_is_array(t))
            return asn_err_set(e, "field \"prompt\": one prompt per request (item %zu is another)", i);
        if (!json_is_integer(t) || json_integer_value(t) < 0 || json_integer_value(t) >= lim->n_vocab)
            return asn_err_set(e, "field \"prompt\": item %zu must be a token id from 0 to %d", i, lim->n_vocab - 1);
        rq->prompt_ids[i] = (int32_t)json_integer_value(t);
    }
    rq->n_prompt_ids = (int)n;
    return 0;
}

static int parse_messages(asn_oai_request *rq, asn_err *e)
{
    const json_t *m = json_object_get(rq->body, "messages");
    if (!json_is_array(m) || !json_array_size(m))
        return asn_err_set(e, "field \"messages\" must be a non-empty array of {role, content}");
    size_t i;
    const json_t *msg;
    json_array_foreach(m, i, msg)
    {
        const json_t *role = json_object_get(msg, "role"), *content = json_object_get(msg, "content");
        if (!json_is_object(msg) || !json_is_string(role) || !json_is_string(content))
            return asn_err_set(e, "field \"messages\": item %zu must be {\"role\": string, \"content\": string}", i);
        if (strlen(json_string_value(content)) != json_string_length(content) ||
            strlen(json_string_value(role)) != json_string_length(role))
            return asn_err_set(e, "field \"messages\": item %zu holds a NUL character", i);
    }
    rq->messages = m;
    return 0;
}

static int parse_stop(asn_oai_request *rq, asn_err *e)
{
    const json_t *s = json_object_get(rq->body, "stop");
    if (!s || json_is_null(s))
        return 0;
    if (json_is_string(s)) {
        rq->stop = asn_xmalloc(sizeof *rq->stop);
        rq->stop[rq->n_stop++] = json_string_value(s);
        return 0;
    }
    if (!json_is_array(s) || json_array_size(s) > 16)
        return asn_err_set(e, "field \"stop\" must be a string or an array of at most 16 strings");
    rq->stop = asn_xcalloc(json_array_size(s) + 1, sizeof *rq->stop);
    for (size_t i = 0; i < json_array_size(s); i++) {
        const json_t *t = json_array_get(s, i);
        if (!json_is_string(t) || !json_string_length(t) || strlen(json_string_value(t)) != json_string_length(t))
            return asn_err_set(e, "field \"stop\": item %zu must be a non-empty string", i);
        rq->stop[rq->n_stop++] = json_string_value(t);
    }
    return 0;
}

static int parse_heuristic(asn_oai_request *rq, asn_err *e)
{
    const json_t *h = json_object_get(rq->body, "asn_heuristic");
    if (!h || json_is_null(h)) {
        rq->processors = asn_oai_params_processors(rq->body, e);
        return rq->processors ? 0 : -1;
    }
    if (json_is_string(h)) {
        rq->heuristic_name = json_string_value(h);
        return 0;
    }
    if (!json_is_object(h) || !json_is_string(json_object_get(h, "name")) ||
        !json_is_array(json_object_get(h, "processors")))
        return asn_err_set(e, "field \"asn_heuristic\" must be a heuristic name or {\"name\", \"processors\"}");
    rq->heuristic_def = h;
    return 0;
}

int asn_oai_constraint(const json_t *obj, json_t **proc, asn_err *e)
{
    *proc = NULL;
    const json_t *rf = json_object_get(obj, "response_format"), *js = json_object_get(obj, "json_schema"),
                 *gr = json_object_get(obj, "grammar");
    rf = json_is_null(rf) ? NULL : rf, js = json_is_null(js) ? NULL : js, gr = json_is_null(gr) ? NULL : gr;
    if (!!rf + !!js + !!gr > 1)
        return asn_err_set(e, "give one of \"response_format\", \"json_schema\" and \"grammar\"");
    if (gr) {
        if (!json_is_string(gr) || !json_string_length(gr))
            return asn_err_set(e, "field \"grammar\" must be GBNF text");
        *proc = json_pack("{s:s,s:{s:O}}", "name", "grammar", "params", "gbnf", gr);
        return 0;
    }
    if (js) {
        if (!json_is_object(js) && !json_is_boolean(js))
            return asn_err_set(e, "field \"json_schema\" must be a JSON Schema (an object)");
        *proc = json_pack("{s:s,s:{s:O}}", "name", "json_schema", "params", "schema", js);
        return 0;
    }
    if (!rf)
        return 0;
    const char *type = json_string_value(json_object_get(rf, "type"));
    if (!json_is_object(rf) || !type)
        return asn_err_set(e, "field \"response_format\" must be {\"type\": \"text\" | \"json_object\" | \"json_schema\"}");
    if (!strcmp(type, "text"))
        return 0;
    if (!strcmp(type, "json_object")) {
        *proc = json_pack("{s:s,s:{s:{s:s}}}", "name", "json_schema", "params", "schema", "type", "object");
        return 0;
    }
    if (strcmp(type, "json_schema"))
        return asn_err_set(e, "field \"response_format.type\": \"%s\" is not text, json_object or json_schema", type);
    const json_t *schema = json_object_get(json_object_get(rf, "json_schema"), "schema");
    if (!json_is_object(schema) && !json_is_boolean(schema))
        return asn_err_set(e, "field \"response_format.json_schema.schema\" must be a JSON Schema (an object)");
    *proc = json_pack("{s:s,s:{s:O}}", "name", "json_schema", "params", "schema", schema);
    return 0;
}

static void default_prompt_id(asn_oai_request *rq)
{
    if (rq->chat) {
        size_t n;
        const char *sys, *user;
        free(asn_oai_messages(rq, &n, &sys, &user));
        asn_prompt_id(sys, user ? user : "", rq->prompt_id);
    } else if (rq->prompt) {
        asn_prompt_id(NULL, rq->prompt, rq->prompt_id);
    } else {
        asn_sbuf s = ASN_SBUF_INIT;
        for (int i = 0; i < rq->n_prompt_ids; i++)
            asn_sbuf_addf(&s, i ? ",%d" : "%d", rq->prompt_ids[i]);
        asn_prompt_id(NULL, asn_sbuf_str(&s), rq->prompt_id);
        asn_sbuf_release(&s);
    }
}

int asn_oai_parse(const char *body, size_t len, int chat, const asn_oai_limits *lim, asn_oai_request *rq,
                  asn_err *e)
{
    memset(rq, 0, sizeof *rq);
    rq->chat = chat;
    json_error_t je;
    rq->body = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    if (!rq->body)
        return asn_err_set(e, "the body is not JSON: line %d, column %d: %s", je.line, je.column, je.text);
    if (!json_is_object(rq->body))
        return asn_err_set(e, "the body must be a JSON object");
    const json_t *model = json_object_get(rq->body, "model");
    if (model && !json_is_null(model) && !json_is_string(model))
        return asn_err_set(e, "field \"model\" must be a string");
    rq->model = json_string_value(model);
    if (chat ? parse_messages(rq, e) : parse_prompt(rq, lim, e))
        return -1;
    long max_tokens = !chat && 16 < lim->max_tokens ? 16 : lim->max_tokens, min_tokens = 0, n = 1;
    if (chat && json_object_get(rq->body, "max_completion_tokens") &&
        !json_object_get(rq->body, "max_tokens"))
        json_object_set(rq->body, "max_tokens", json_object_get(rq->body, "max_completion_tokens"));
    if (get_bool(rq->body, "echo", &rq->echo, e))
        return -1;
    if (rq->echo && chat)
        return asn_err_set(e, "field \"echo\" is for /v1/completions");
    if (get_long(rq->body, "max_tokens", rq->echo ? 0 : 1, lim->max_tokens, &max_tokens, e) ||
        get_long(rq->body, "min_tokens", 0, max_tokens, &min_tokens, e) ||
        get_long(rq->body, "n", 1, lim->max_n, &n, e))
        return -1;
    rq->max_tokens = max_tokens;
    rq->min_tokens = min_tokens;
    rq->n = (int)n;
    if (get_bool(rq->body, "stream", &rq->stream, e) ||
        get_bool(rq->body, "return_token_ids", &rq->return_token_ids, e))
        return -1;
    if (rq->echo && rq->stream)
        return asn_err_set(e, "field \"echo\" does not go with \"stream\"");
    rq->logprobs = -1;
    if (chat) {
        int want = 0;
        long top = 0;
        if (get_bool(rq->body, "logprobs", &want, e) || get_long(rq->body, "top_logprobs", 0, 20, &top, e))
            return -1;
        if (want)
            rq->logprobs = (int)top;
    } else {
        long lp = -1;
        const json_t *v = json_object_get(rq->body, "logprobs");
        if (v && !json_is_null(v) && get_long(rq->body, "logprobs", 0, 20, &lp, e))
            return -1;
        rq->logprobs = (int)lp;
    }
    const json_t *seed = json_object_get(rq->body, "seed");
    if (seed && !json_is_null(seed)) {
        if (!json_is_integer(seed) || json_integer_value(seed) < 0)
            return asn_err_set(e, "field \"seed\" must be an integer >= 0");
        rq->has_seed = 1;
        rq->seed = (uint64_t)json_integer_value(seed);
    }
    if (parse_stop(rq, e) || parse_heuristic(rq, e) || asn_oai_constraint(rq->body, &rq->constraint, e))
        return -1;
    const char *pid = NULL;
    if (asn_get_string(rq->body, "asn_prompt_id", 0, &pid, e))
        return -1;
    if (pid) {
        if (!*pid || strlen(pid) >= sizeof rq->prompt_id || strlen(pid) != json_string_length(json_object_get(rq->body, "asn_prompt_id")))
            return asn_err_set(e, "field \"asn_prompt_id\" must be 1 to 127 characters");
        snprintf(rq->prompt_id, sizeof rq->prompt_id, "%s", pid);
    } else {
        default_prompt_id(rq);
    }
    return 0;
}

asn_chat_msg *asn_oai_messages(const asn_oai_request *rq, size_t *n, const char **system, const char **user)
{
    size_t k = json_array_size(rq->messages);
    asn_chat_msg *m = asn_xcalloc(k ? k : 1, sizeof *m);
    *system = *user = NULL;
    for (size_t i = 0; i < k; i++) {
        const json_t *msg = json_array_get(rq->messages, i);
        m[i].role = json_string_value(json_object_get(msg, "role"));
        m[i].content = json_string_value(json_object_get(msg, "content"));
        if (i == 0 && !strcmp(m[i].role, "system"))
            *system = m[i].content;
        if (!strcmp(m[i].role, "user"))
            *user = m[i].content;
    }
    *n = k;
    return m;
}

/* ---------------------------------------------------------- responses */

static json_t *token_text(const asn_vocab *v, int32_t id)
{
    size_t len = 0;
    const char *p = v ? asn_vocab_piece(v, id, 1, &len) : NULL;
    return asn_json_text(p ? p : "", p ? len : 0);
}

static json_t *token_bytes(const asn_vocab *v, int32_t id)
{
    size_t len = 0;
    const char *p = v ? asn_vocab_piece(v, id, 1, &len) : NULL;
    json_t *a = json_array();
    for (size_t i = 0; p && i < len; i++)
        json_array_append_new(a, json_integer((unsigned char)p[i]));
    return a;
}

/* A token's piece as a JSON object key: valid UTF-8, cut at a NUL. */
static json_t *token_key(const asn_vocab *v, int32_t id)
{
    size_t len = 0;
    const char *p = v ? asn_vocab_piece(v, id, 1, &len) : NULL;
    char *key = asn_xmalloc(len + 1);
    memcpy(key, p ? p : "", len);
    key[len] = 0;
    json_t *kt = asn_json_text(key, strlen(key));
    free(key);
    return kt;
}

/* A double in full precision (JSON has no NaN or infinity: null). */
static json_t *real_or_null(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

/* Completions: {tokens, token_logprobs, top_logprobs}; chat: {content: [...]}. */
static json_t *logprobs_json(const asn_oai_request *rq, const asn_vocab *v, const asn_oai_choice *c)
{
    if (rq->chat) {
        json_t *content = json_array();
        for (int i = 0; i < c->n_tokens; i++) {
            json_t *tops = json_array();
            for (int k = 0; k < c->top; k++) {
                int32_t id = c->top_ids[(size_t)i * c->top + k];
                json_array_append_new(tops, json_pack("{s:o,s:o,s:o}", "token", token_text(v, id), "logprob",
                                                      asn_json_f32(c->top_lps[(size_t)i * c->top + k]), "bytes",
                                                      token_bytes(v, id)));
            }
            json_array_append_new(content, json_pack("{s:o,s:o,s:o,s:o}", "token", token_text(v, c->tokens[i]),
                                                     "logprob", asn_json_f32(c->logprobs[i]), "bytes",
                                                     token_bytes(v, c->tokens[i]), "top_logprobs", tops));
        }
        return json_pack("{s:o}", "content", content);
    }
    json_t *toks = json_array(), *lps = json_array(), *tops = json_array();
    const asn_oai_echo *ec = c->echo;
    for (int i = 0; ec && i < ec->n; i++) { /* the prompt's tokens */
        json_array_append_new(toks, token_text(v, ec->ids[i]));
        if (i == 0) {
            json_array_append_new(lps, json_null());
            json_array_append_new(tops, json_null());
            continue;
        }
        json_array_append_new(lps, real_or_null(ec->lps[i]));
        json_t *t = json_object();
        for (int k = 0; k <= c->top; k++) {
            int32_t id = k < c->top ? ec->top_ids[(size_t)i * c->top + k] : ec->ids[i];
            double lp = k < c->top ? ec->top_lps[(size_t)i * c->top + k] : ec->lps[i];
            if (id < 0)
                continue;
            json_t *kt = token_key(v, id);
            if (!json_object_get(t, json_string_value(kt)))
                json_object_set_new(t, json_string_value(kt), real_or_null(lp));
            json_decref(kt);
        }
        json_array_append_new(tops, t);
    }
    for (int i = 0; i < c->n_tokens && c->logprobs; i++) {
        json_array_append_new(toks, token_text(v, c->tokens[i]));
        json_array_append_new(lps, asn_json_f32(c->logprobs[i]));
        json_t *t = json_object();
        for (int k = 0; k < c->top; k++) {
            json_t *kt = token_key(v, c->top_ids[(size_t)i * c->top + k]);
            json_object_set_new(t, json_string_value(kt), asn_json_f32(c->top_lps[(size_t)i * c->top + k]));
            json_decref(kt);
        }
        json_array_append_new(tops, t);
    }
    return json_pack("{s:o,s:o,s:o}", "tokens", toks, "token_logprobs", lps, "top_logprobs", tops);
}

static json_t *ids_json(const int32_t *t, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_integer(t[i]));
    return a;
}

static json_t *choice_json(const asn_oai_request *rq, const asn_vocab *v, int index, const asn_oai_choice *c,
                           int chunk)
{
    json_t *text;
    if (c->echo) {
        size_t gl = c->text ? c->text_len : 0, el = c->echo->len;
        char *both = asn_xmalloc(el + gl + 1);
        memcpy(both, c->echo->text, el);
        if (gl)
            memcpy(both + el, c->text, gl);
        text = asn_json_text(both, el + gl);
        free(both);
    } else {
        text = asn_json_text(c->text ? c->text : "", c->text ? c->text_len : 0);
    }
    json_t *o;
    if (rq->chat)
        o = json_pack("{s:i,s:o}", "index", index, chunk ? "delta" : "message",
                      chunk ? json_pack("{s:o}", "content", text)
                            : json_pack("{s:s,s:o}", "role", "assistant", "content", text));
    else
        o = json_pack("{s:i,s:o}", "index", index, "text", text);
    json_object_set_new(o, "logprobs",
                        rq->logprobs >= 0 && (c->logprobs || c->echo) ? logprobs_json(rq, v, c) : json_null());
    json_object_set_new(o, "finish_reason",
                        c->finish != ASN_FINISH_NONE ? json_string(asn_oai_finish_reason(c->finish)) : json_null());
    if (c->finish != ASN_FINISH_NONE)
        json_object_set_new(o, "asn_finish", json_string(asn_finish_name(c->finish)));
    if (rq->return_token_ids)
        json_object_set_new(o, "token_ids", ids_json(c->tokens, c->n_tokens));
    return o;
}

json_t *asn_oai_response(const asn_oai_request *rq, const char *id, long created, const char *model,
                         const asn_vocab *v, const asn_oai_choice *ch, int n_choices, int n_prompt)
{
    json_t *choices = json_array();
    long gen = 0;
    for (int i = 0; i < n_choices; i++) {
        json_array_append_new(choices, choice_json(rq, v, i, &ch[i], 0));
        gen += ch[i].n_tokens;
    }
    return json_pack("{s:s,s:s,s:I,s:s,s:o,s:{s:i,s:I,s:I}}", "id", id, "object",
                     rq->chat ? "chat.completion" : "text_completion", "created", (json_int_t)created, "model",
                     model, "choices", choices, "usage", "prompt_tokens", n_prompt, "completion_tokens",
                     (json_int_t)gen, "total_tokens", (json_int_t)(gen + n_prompt));
}

json_t *asn_oai_chunk(const asn_oai_request *rq, const char *id, long created, const char *model,
                      const asn_vocab *v, int index, const asn_oai_choice *ch)
{
    json_t *choices = json_array();
    json_array_append_new(choices, choice_json(rq, v, index, ch, 1));
    return json_pack("{s:s,s:s,s:I,s:s,s:o}", "id", id, "object",
                     rq->chat ? "chat.completion.chunk" : "text_completion", "created", (json_int_t)created,
                     "model", model, "choices", choices);
}

json_t *asn_oai_error(int status, const char *message)
{
    const char *type = status == 400 ? "invalid_request_error"
                       : status == 401 ? "authentication_error"
                       : status == 404 ? "not_found_error"
                       : status == 503 ? "server_busy"
                       : status == 413 ? "invalid_request_error"
                                       : "server_error";
    return json_pack("{s:{s:s,s:s,s:n,s:i}}", "error", "message", message, "type", type, "param", "code", status);
}
