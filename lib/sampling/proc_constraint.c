/* proc_constraint.c — the structured-output processors json_schema,
 * grammar, regex and choice: parameters to GBNF (checked when the
 * heuristic is built), the compiled constraint per vocabulary (made on the
 * first row, shared by every thread), and the mask on a row. */
#include "proc.h"
#include "asn/grammar.h"
#include "asn/json.h"
#include "asn/sbuf.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct asn_cproc {
    char *gbnf;
    json_t *check; /* the schema of the final check, or NULL */
    pthread_mutex_t mu;
    asn_constraint *c; /* for vocab v, made on first use */
    const asn_vocab *v;
};

/* The parameters themselves (schema, gbnf, pattern, options, path,
 * whitespace) are read once, by constraint_init, into the GBNF. */
typedef struct constraint_params {
    struct asn_cproc *cons;
} constraint_params;

/* Text of a string parameter, or of the file named by "path". */
static char *text_param(const json_t *params, const char *key, const char *what, asn_err *e)
{
    const json_t *v = json_object_get(params, key), *path = json_object_get(params, "path");
    if (v && path)
        return asn_err_set(e, "give \"%s\" or \"path\", not both", key), NULL;
    if (!v && !path)
        return asn_err_set(e, "parameter \"%s\" (%s) or \"path\" (a file holding it) is required", key, what),
               NULL;
    if (path) {
        if (!json_is_string(path))
            return asn_err_set(e, "parameter \"path\" must be a string"), NULL;
        char *data;
        size_t len;
        if (asn_read_file(json_string_value(path), &data, &len, e))
            return asn_err_prefix(e, "parameter \"path\""), NULL;
        return data;
    }
    if (!json_is_string(v))
        return asn_err_set(e, "parameter \"%s\" must be a string, not %s", key, asn_json_type_name(v)), NULL;
    return asn_xstrdup(json_string_value(v));
}

int asn_constraint_proc_gbnf(asn_proc_kind kind, const json_t *params, char **gbnf, json_t **check, asn_err *e)
{
    *gbnf = NULL;
    if (check)
        *check = NULL;
    const char *field = "gbnf";
    char *g = NULL;
    if (kind == ASN_PROC_GRAMMAR) {
        char *t = text_param(params, "gbnf", "GBNF text", e);
        if (!t)
            return -1;
        g = t;
        if (json_object_get(params, "path"))
            field = "path";
    } else if (kind == ASN_PROC_REGEX) {
        const json_t *p = json_object_get(params, "pattern");
        field = "pattern";
        if (!json_is_string(p))
            return asn_err_set(e, "parameter \"pattern\" must be a string");
        if (strlen(json_string_value(p)) != json_string_length(p))
            return asn_err_set(e, "parameter \"pattern\": NUL characters are not supported");
        if (!(g = asn_regex_to_gbnf(json_string_value(p), e)))
            return asn_err_prefix(e, "parameter \"pattern\"");
    } else if (kind == ASN_PROC_CHOICE) {
        const json_t *o = json_object_get(params, "options");
        field = "options";
        if (!json_is_array(o))
            return asn_err_set(e, "parameter \"options\" must be a list of strings");
        size_t n = json_array_size(o);
        const char **opts = asn_xcalloc(n ? n : 1, sizeof *opts);
        for (size_t i = 0; i < n; i++) {
            const json_t *x = json_array_get(o, i);
            if (!json_is_string(x) || strlen(json_string_value(x)) != json_string_length(x)) {
                free(opts);
                return asn_err_set(e, "parameter \"options\": item %zu must be a string (without NUL)", i + 1);
            }
            opts[i] = json_string_value(x);
        }
        g = asn_choice_to_gbnf(opts, (int)n, e);
        free(opts);
        if (!g)
            return asn_err_prefix(e, "parameter \"options\"");
    } else {
        const json_t *ws = json_object_get(params, "whitespace");
        asn_ws_rule rule = ASN_WS_COMPACT;
        if (ws && !json_is_null(ws)) {
            if (json_is_string(ws) && !strcmp(json_string_value(ws), "any"))
                rule = ASN_WS_ANY;
            else if (!json_is_string(ws) || strcmp(json_string_value(ws), "compact"))
                return asn_err_set(e, "parameter \"whitespace\" must be \"compact\" or \"any\"");
        }
        const json_t *schema = json_object_get(params, "schema");
        json_t *loaded = NULL;
        field = "schema";
        if (schema && json_object_get(params, "path"))
            return asn_err_set(e, "give \"schema\" or \"path\", not both");
        if (!schema) {
            char *t = text_param(params, "schema", "a JSON Schema", e);
            if (!t)
                return -1;
            json_error_t je;
            loaded = json_loads(t, JSON_DECODE_ANY, &je);
            free(t);
            if (!loaded)
                return asn_err_set(e, "parameter \"path\": %d:%d: %s", je.line, je.column, je.text);
            schema = loaded;
            field = "path";
        }
        int final = 0;
        g = asn_schema_to_gbnf_final(schema, rule, &final, e);
        if (g && final) {
            if (!check) {
                free(g);
                json_decref(loaded);
                return asn_err_set(e, "parameter \"%s\": the schema needs a final check of the value here", field);
            }
            *check = json_deep_copy(schema);
        }
        json_decref(loaded);
        if (!g)
            return asn_err_prefix(e, "parameter \"%s\"", field);
    }
    /* compile once now, so that every error comes before any generation */
    asn_grammar *gr = asn_gbnf_parse(g, strlen(g), e);
    if (!gr) {
        free(g);
        if (check)
            json_decref(*check), *check = NULL;
        return asn_err_prefix(e, "parameter \"%s\"", field);
    }
    asn_grammar_free(gr);
    *gbnf = g;
    return 0;
}

/* After the parameters were checked: the GBNF compiled once (errors name
 * the parameter and position). */
static int constraint_init(asn_proc *p, const json_t *params, asn_err *e)
{
    char *g;
    json_t *check;
    if (asn_constraint_proc_gbnf(p->kind, params, &g, &check, e))
        return -1;
    struct asn_cproc *cp = asn_xcalloc(1, sizeof *cp);
    cp->gbnf = g;
    cp->check = check;
    pthread_mutex_init(&cp->mu, NULL);
    ((constraint_params *)p->params)->cons = cp;
    return 0;
}

static void constraint_release(asn_proc *p)
{
    constraint_params *a = p->params;
    if (!a->cons)
        return;
    asn_constraint_free(a->cons->c);
    pthread_mutex_destroy(&a->cons->mu);
    free(a->cons->gbnf);
    json_decref(a->cons->check);
    free(a->cons);
    a->cons = NULL;
}

static int constraint_apply(const asn_proc *p, float *row, int V, const asn_seq_ctx *ctx, asn_seq_state *st,
                            asn_workspace *ws, asn_err *e);

static struct asn_cproc *cproc(const asn_proc *p)
{
    return p->params ? ((const constraint_params *)p->params)->cons : NULL;
}

/* The constraint for this vocabulary (made once; a new vocab replaces it). */
static asn_constraint *get_constraint(const asn_proc *p, const asn_vocab *v, asn_err *e)
{
    struct asn_cproc *cp = cproc(p);
    pthread_mutex_lock(&cp->mu);
    if (cp->c && cp->v != v) {
        pthread_mutex_unlock(&cp->mu);
        asn_err_set(e, "one heuristic used with two tokenizers: load it once per model");
        return NULL;
    }
    if (!cp->c) {
        asn_grammar *g = asn_gbnf_parse(cp->gbnf, strlen(cp->gbnf), e);
        if (g) {
            cp->c = asn_constraint_new(g, v);
            cp->v = v;
        }
    }
    asn_constraint *c = cp->c;
    pthread_mutex_unlock(&cp->mu);
    return c;
}

int asn_constraint_proc_valid(const asn_proc *p, const char *text, size_t len)
{
    asn_err e;
    const struct asn_cproc *cp = p->iface && p->iface->apply == constraint_apply ? cproc(p) : NULL;
    if (!cp)
        return 0;
    asn_grammar *g = asn_gbnf_parse(cp->gbnf, strlen(cp->gbnf), &e);
    if (!g)
        return 0;
    asn_gstate s = {0};
    asn_gstate_start(g, &s);
    int ok = !asn_gstate_advance(g, &s, text, len) && asn_gstate_complete(&s);
    asn_gstate_clear(&s);
    asn_grammar_free(g);
    return ok && (!cp->check || asn_schema_check_text(cp->check, text, len, NULL, 0));
}

/* The final check of the generated tokens' bytes (as generated: the
 * pieces one after another), for a schema compiled with one. */
static int final_check(const struct asn_cproc *cp, const asn_seq_ctx *ctx)
{
    if (!cp->check)
        return 1;
    asn_sbuf b = {0};
    for (int i = ctx->n_prompt; i < ctx->n_ids; i++) {
        size_t len;
        const char *piece = asn_vocab_piece(ctx->vocab, ctx->ids[i], 0, &len);
        if (!asn_vocab_is_eog(ctx->vocab, ctx->ids[i]))
            asn_sbuf_add(&b, piece, len);
    }
    int ok = asn_schema_check_text(cp->check, b.buf ? b.buf : "", b.len, NULL, 0);
    free(b.buf);
    return ok;
}

/* 1 when a token other than an end of generation is set in bits (a mask
 * of the vocabulary's n tokens): the text may go on. */
static int token_continues(const uint64_t *bits, int n, const asn_vocab *v)
{
    const int32_t *eog;
    size_t ne = asn_vocab_eog_ids(v, &eog);
    for (int t = 0; t < n; t++)
        if ((bits[t >> 6] >> (t & 63)) & 1) {
            int is_eog = 0;
            for (size_t j = 0; j < ne && !is_eog; j++)
                is_eog = eog[j] == t;
            if (!is_eog)
                return 1;
        }
    return 0;
}

/* Whether the end of generation may come in state s (after the generated
 * tokens of ctx): the value is complete and the final check accepts it, or
 * it is a dead end (complete, and no token but an end of generation can
 * follow), where the candidate ends and its record says the value is
 * invalid (docs/sampling.md, "Checked when the value completes"). bits:
 * the mask of s, or NULL to make it only when it is needed. */
static int end_allowed(const asn_proc *p, asn_constraint *c, const asn_gstate *s, const uint64_t *bits,
                       const asn_seq_ctx *ctx)
{
    if (!asn_gstate_complete(s))
        return 0;
    if (final_check(cproc(p), ctx) || !asn_gstate_can_continue(s))
        return 1;
    int n = asn_vocab_n_tokens(ctx->vocab);
    uint64_t *own = bits ? NULL : asn_xmalloc((size_t)(n + 63) / 64 * sizeof *own);
    if (own)
        asn_constraint_mask(c, s, own);
    int dead = !token_continues(bits ? bits : own, n, ctx->vocab);
    free(own);
    return dead;
}

/* 1 when the end of generation may come after the generated tokens
 * (ctx->ids[n_prompt..]): a complete sentence of the constraint, or a dead
 * end of its final check (end_allowed); needs ctx->vocab. */
static int constraint_complete(const asn_proc *p, const asn_seq_ctx *ctx)
{
    asn_err e;
    if (!ctx || !ctx->vocab)
        return 0;
    asn_constraint *c = get_constraint(p, ctx->vocab, &e);
    if (!c)
        return 0;
    asn_gstate s = {0};
    int ok = !asn_constraint_state_after(c, ctx->ids + ctx->n_prompt, ctx->n_ids - ctx->n_prompt, &s, NULL) &&
             end_allowed(p, c, &s, NULL, ctx);
    asn_gstate_clear(&s);
    return ok;
}

/* Masks the row to the tokens the constraint allows after the generated
 * tokens (ctx->ids[n_prompt..]); needs ctx->vocab. */
static int constraint_apply(const asn_proc *p, float *row, int V, const asn_seq_ctx *ctx, asn_seq_state *st,
                            asn_workspace *ws, asn_err *e)
{
    if (!ctx || !ctx->vocab)
        return asn_err_set(e, "the %s constraint needs the model's tokenizer", p->iface->name);
    asn_constraint *c = get_constraint(p, ctx->vocab, e);
    if (!c)
        return -1;
    asn_gstate s = {0};
    int refused = 0;
    if (asn_constraint_state_after(c, ctx->ids + ctx->n_prompt, ctx->n_ids - ctx->n_prompt, &s, &refused)) {
        asn_gstate_clear(&s);
        return asn_err_set(e, "generated token %d (id %d) does not satisfy the constraint", refused,
                           ctx->ids[ctx->n_prompt + refused]);
    }
    int n = asn_vocab_n_tokens(ctx->vocab);
    uint64_t *bits = asn_xmalloc((size_t)(n + 63) / 64 * sizeof *bits);
    asn_constraint_mask(c, &s, bits);
    /* a complete value that fails the final check may not end here: the
     * end is masked while some token can continue it (a dead end, such as
     * a closed object, keeps it, so the candidate ends and records the
     * value as invalid) */
    if (asn_gstate_complete(&s) && !end_allowed(p, c, &s, bits, ctx)) {
        const int32_t *eog;
        size_t ne = asn_vocab_eog_ids(ctx->vocab, &eog);
        for (size_t j = 0; j < ne; j++)
            if (eog[j] < n)
                bits[eog[j] >> 6] &= ~(1ull << (eog[j] & 63));
    }
    asn_gstate_clear(&s);
    int any = 0;
    for (int t = 0; t < V; t++) {
        if (t >= n || !((bits[t >> 6] >> (t & 63)) & 1))
            row[t] = -INFINITY;
        else
            any |= row[t] != -INFINITY;
    }
    free(bits);
    if (!any)
        return asn_err_set(e, "no token of the vocabulary can continue the constrained text here");
    return 0;
}

/* Structured output (docs/sampling.md "Constraints"): each masks the raw
 * row before the heuristic's other processors. Its parameters are checked
 * by asn_constraint_proc_gbnf (constraint_init). */
#define CONSTRAINT .size = sizeof(constraint_params), .flags = ASN_PF_MASK_FIRST, .init = constraint_init, \
                   .release = constraint_release, .apply = constraint_apply, .complete = constraint_complete
/* The values' schemas, as init checks them (asn_param.schema). */
#define ONE_OF(a, b) "{\"oneOf\": [{\"required\": [\"" a "\"]}, {\"required\": [\"" b "\"]}]}"
#define A_STRING "{\"type\": \"string\"}"
#define A_PATH "{\"type\": \"string\", \"minLength\": 1}"
const asn_proc_iface asn_procs_constraint[] = {
    {.name = "json_schema", .kind = ASN_PROC_JSON_SCHEMA,
     .doc = "The text must be a JSON value valid under the schema (docs/sampling.md, Constraints). Masks the raw "
            "row before the heuristic's other processors; end of generation exactly when the value is complete. "
            "Unsupported keywords are refused when the heuristic loads.",
     .params = {ASN_ANY("schema", "{\"type\": [\"object\", \"boolean\"]}", "The JSON Schema."),
                ASN_ANY("path", A_PATH, "A file holding the JSON Schema (instead of schema)."),
                ASN_ANY("whitespace", "{\"enum\": [\"compact\", \"any\", null]}",
                        "compact (default): no whitespace; any: up to 20 spaces, tabs or newlines around every "
                        "{ } [ ] , :")},
     .params_rule = ONE_OF("schema", "path"), CONSTRAINT},
    {.name = "grammar", .kind = ASN_PROC_GRAMMAR,
     .doc = "The text must be a sentence of the GBNF grammar (llama.cpp's syntax, start rule root).",
     .params = {ASN_ANY("gbnf", A_STRING, "The grammar's text."),
                ASN_ANY("path", A_PATH, "A .gbnf file (instead of gbnf).")},
     .params_rule = ONE_OF("gbnf", "path"), CONSTRAINT},
    {.name = "regex", .kind = ASN_PROC_REGEX,
     .doc = "The whole text must match the pattern (the dialect of docs/sampling.md).",
     .params = {ASN_ANY("pattern", A_STRING, "The regular expression.")},
     .params_rule = "{\"required\": [\"pattern\"]}", CONSTRAINT},
    {.name = "choice", .kind = ASN_PROC_CHOICE, .doc = "The text is exactly one of the options.",
     .params = {ASN_ANY("options", "{\"type\": \"array\", \"items\": {\"type\": \"string\"}, \"minItems\": 1}",
                        "The texts allowed.")},
     .params_rule = "{\"required\": [\"options\"]}", CONSTRAINT},
    {0},
};
