/* constrain — checks texts against constraints token by token, as a
 * constrained decoder would see them: for each record {"json_schema": ... |
 * "grammar": ... | "regex": ... | "choice": [...], "text": ...} the text is
 * tokenized with the model's tokenizer and each token must be in the mask
 * of the state before it; the constraint must be complete at the end. */
#include "asn/gguf.h"
#include "asn/grammar.h"
#include "asn/json.h"
#include "asn/sampling.h"
#include "asn/record_loop.h"
#include "asn/tool.h"
#include "asn/vocab.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The command line, as asn_tool_parse fills it. */
typedef struct constrain_options {
    const char *model;
    int times;
    int gbnf;
    int skip_bad;
    int progress;
    int quiet;
    long sample;
    long seed;
    long max_tokens;
} constrain_options;

/* The options, with their defaults (the table below points into it). */
static constrain_options opts = {
    .max_tokens = 200,
};

static const asn_option options[] = {
    {"model", 'm', ASN_OPT_STRING, &opts.model, "FILE", "GGUF file whose tokenizer to use (a model or a vocab-only file; required)"},
    {"times", 0, ASN_OPT_FLAG, &opts.times, NULL, "add compile_ms, mask_us_mean, mask_us_max and mask_us (each token's) to each record (not deterministic)"},
    {"gbnf", 0, ASN_OPT_FLAG, &opts.gbnf, NULL, "add the constraint's GBNF text as \"gbnf\""},
    {"sample", 0, ASN_OPT_INT, &opts.sample, "N", "also write N random texts the constraint allows as \"samples\""},
    {"seed", 's', ASN_OPT_INT, &opts.seed, "N", "seed of --sample (default 0)"},
    {"max-tokens", 0, ASN_OPT_INT, &opts.max_tokens, "N", "--sample: ends a text after N tokens, marked \"finish\": \"length\" (default 200)"},
    ASN_OPT_SKIP_BAD(&opts.skip_bad),
    {"progress", 0, ASN_OPT_FLAG, &opts.progress, NULL, "show a progress line on stderr"},
    {"quiet", 'q', ASN_OPT_FLAG, &opts.quiet, NULL, "no summary on stderr"},
    {0},
};

static const asn_tool tool = {
    "constrain", "-m MODEL.gguf [OPTIONS] [FILE.jsonl ...]",
    "Check texts against JSON Schemas, GBNF grammars, regexes or choice lists, token by token.",
    "Each record holds one constraint, as the processors of docs/sampling.md take\n"
    "it: \"json_schema\" (a schema; \"whitespace\": \"compact\" or \"any\" beside it),\n"
    "\"grammar\" (GBNF text), \"regex\" (a pattern) or \"choice\" (a list of strings),\n"
    "and \"text\". The text is tokenized without BOS and with special tokens\n"
    "as plain text; each token must be allowed by the mask of the state\n"
    "before it. Written back with: compiled (false: \"error\" says why),\n"
    "tokens, allowed (every token was in its mask), refused_at (index of the\n"
    "first token that was not, or null), complete (the constraint is complete\n"
    "after the last token) and valid (allowed and complete). A schema whose\n"
    "grammar is made from a relaxed form (docs/sampling.md, \"Checked when the\n"
    "value completes\") adds final_check: true; complete then also requires the\n"
    "full validator to accept the text, as the end of generation does.\n"
    "With --sample N, \"samples\" holds N texts drawn token by token: a first byte\n"
    "uniformly among those of the allowed tokens, then a token uniformly among\n"
    "the allowed ones starting with it; the end once allowed, with probability\n"
    "1/2 (with a final check: once the value also passes it). Each is {\"text\",\n"
    "\"finish\": \"eos\" | \"length\"}; the text of an \"eos\" sample is complete and\n"
    "valid; a dead end (a complete value the final check refuses that no\n"
    "token can continue) is \"length\". \"text\" is optional then.\n"
    "The summary on stderr gives the shares and the mask time per token\n"
    "(mean, p50, p99). A constraint that is one of the 8 most recent records'\n"
    "(the same GBNF) is not compiled again: it keeps its mask caches, as a\n"
    "server keeps a compiled grammar; compile_ms is then the lookup's.\n",
    options,
};

static const char *const KEYS[] = {"json_schema", "grammar", "regex", "choice"};
static const asn_proc_kind KINDS[] = {ASN_PROC_JSON_SCHEMA, ASN_PROC_GRAMMAR, ASN_PROC_REGEX, ASN_PROC_CHOICE};
static const char *const PARAM[] = {"schema", "gbnf", "pattern", "options"};

/* Constraints compiled for recent records, by GBNF text: records that
 * repeat a constraint (a schema's instances one after another) reuse it
 * and its mask caches, as a server reuses a request's compiled grammar. */
enum { N_RECENT = 8 };

typedef struct recent {
    char *gbnf;
    asn_constraint *k;
} recent;

/* The final check of a schema compiled from a relaxed form (NULL: none):
 * 1 when the bytes are a value the full validator accepts. */
static int final_ok(const json_t *check, const char *text, size_t len)
{
    return !check || asn_schema_check_text(check, text, len, NULL, 0);
}

typedef struct ctx {
    const asn_vocab *v;
    asn_constraint *base; /* owns the vocabulary trie the others share */
    recent rc[N_RECENT];  /* most recent first */
    long records, compiled, valid, allowed, complete;
    double *times;        /* every mask time, µs */
    size_t n_times, cap_times;
    double compile_sum;
} ctx;

static void add_time(ctx *c, double us)
{
    if (c->n_times == c->cap_times) {
        c->cap_times = c->cap_times ? 2 * c->cap_times : 4096;
        c->times = realloc(c->times, c->cap_times * sizeof *c->times);
        if (!c->times)
            asn_fatal("out of memory");
    }
    c->times[c->n_times++] = us;
}

/* A first byte uniformly among those the allowed tokens start with, then
 * a token uniformly among the allowed ones starting with it (so that the
 * one-byte closers of a structure get their share). */
static int pick(const asn_vocab *v, const uint64_t *bits, int V, double u1, double u2)
{
    int count[256] = {0}, nb = 0;
    for (int t = 0; t < V; t++)
        if ((bits[t >> 6] >> (t & 63)) & 1) {
            size_t len;
            const char *p = asn_vocab_piece(v, t, 0, &len);
            if (len && !count[(unsigned char)p[0]]++)
                nb++;
        }
    if (!nb)
        return -1;
    int k = (int)(u1 * nb), b = 0;
    for (b = 0; b < 256; b++)
        if (count[b] && !k--)
            break;
    k = (int)(u2 * count[b]);
    for (int t = 0; t < V; t++)
        if ((bits[t >> 6] >> (t & 63)) & 1) {
            size_t len;
            const char *p = asn_vocab_piece(v, t, 0, &len);
            if (len && (unsigned char)p[0] == b && !k--)
                return t;
        }
    return -1;
}

/* N random texts of constraint k: deterministic in (seed, record, sample). */
static json_t *samples(ctx *c, asn_constraint *k, const json_t *check, long rec_no)
{
    json_t *out = json_array();
    int V = asn_vocab_n_tokens(c->v);
    uint64_t *bits = asn_xmalloc((size_t)(V + 63) / 64 * sizeof *bits);
    for (long i = 0; i < opts.sample; i++) {
        char id[64];
        snprintf(id, sizeof id, "%ld/%ld", rec_no, i);
        asn_rng_key key = asn_rng_key_make((uint64_t)opts.seed, id, "constrain");
        asn_gstate s;
        asn_gstate_start(asn_constraint_grammar(k), &s);
        int32_t *ids = asn_xmalloc((size_t)opts.max_tokens * sizeof *ids);
        int n = 0;
        size_t cap = 16, m = 0;
        char *text = asn_xmalloc(cap);
        const char *finish = "length";
        while (n < opts.max_tokens) {
            asn_constraint_mask(k, &s, bits);
            if (asn_gstate_complete(&s) && final_ok(check, text, m) &&
                (!asn_gstate_can_continue(&s) || asn_rng_uniform(key, (uint64_t)n, 7) < 0.5)) {
                finish = "eos";
                break;
            }
            const int32_t *eog;
            size_t ne = asn_vocab_eog_ids(c->v, &eog);
            for (size_t j = 0; j < ne; j++) /* the end was just decided */
                bits[eog[j] >> 6] &= ~(1ull << (eog[j] & 63));
            int t = pick(c->v, bits, V, asn_rng_uniform(key, (uint64_t)n, 0), asn_rng_uniform(key, (uint64_t)n, 1));
            if (t < 0 || asn_constraint_accept(k, &s, t))
                break; /* a state no token can continue (a dead end of the final check too): left as "length" */
            ids[n++] = t;
            /* the bytes as generated (no detokenizer cleanup) */
            size_t pl;
            const char *p = asn_vocab_piece(c->v, t, 0, &pl);
            while (m + pl + 1 > cap)
                cap *= 2, text = asn_xrealloc(text, cap);
            memcpy(text + m, p, pl);
            m += pl;
        }
        json_array_append_new(out, json_pack("{s:o,s:s}", "text", asn_json_text(text, m), "finish", finish));
        free(text);
        free(ids);
        asn_gstate_clear(&s);
    }
    free(bits);
    return out;
}

static int check(json_t *rec, void *vctx, const char *path, long line, asn_err *e)
{
    ctx *c = vctx;
    int which = -1;
    for (int i = 0; i < 4; i++)
        if (json_object_get(rec, KEYS[i])) {
            if (which >= 0)
                return asn_err_set(e, "fields \"%s\" and \"%s\": give one constraint per record", KEYS[which],
                                   KEYS[i]);
            which = i;
        }
    if (which < 0)
        return asn_err_set(e, "no constraint: expected one of \"json_schema\", \"grammar\", \"regex\", \"choice\"");
    const json_t *jt = json_object_get(rec, "text");
    if (!json_is_string(jt) && (jt || !opts.sample))
        return asn_err_set(e, "field \"text\" must be a string");
    c->records++;
    json_t *params = json_object();
    json_object_set(params, PARAM[which], json_object_get(rec, KEYS[which]));
    if (which == 0 && json_object_get(rec, "whitespace"))
        json_object_set(params, "whitespace", json_object_get(rec, "whitespace"));
    double t0 = asn_now();
    char *gbnf = NULL;
    json_t *fc = NULL; /* the schema of the final check */
    asn_err ce;
    asn_grammar *g = NULL;
    int ok = !asn_constraint_proc_gbnf(KINDS[which], params, &gbnf, &fc, &ce);
    json_decref(params);
    int hit = -1;
    for (int i = 0; ok && i < N_RECENT && hit < 0; i++)
        if (c->rc[i].gbnf && !strcmp(c->rc[i].gbnf, gbnf))
            hit = i;
    if (ok && hit < 0)
        g = asn_gbnf_parse(gbnf, strlen(gbnf), &ce);
    if (hit < 0 && !g) {
        json_decref(fc);
        json_object_set_new(rec, "compiled", json_false());
        json_object_set_new(rec, "error", json_sprintf("field \"%s\": %s", KEYS[which], ce.msg));
        free(gbnf);
        return 0;
    }
    recent r = hit >= 0 ? c->rc[hit] : (recent){asn_xstrdup(gbnf), asn_constraint_new_like(g, c->base)};
    if (hit < 0) { /* the oldest goes */
        hit = N_RECENT - 1;
        free(c->rc[hit].gbnf);
        asn_constraint_free(c->rc[hit].k);
    }
    memmove(&c->rc[1], &c->rc[0], (size_t)hit * sizeof c->rc[0]);
    c->rc[0] = r;
    asn_constraint *k = r.k;
    double compile_ms = (asn_now() - t0) * 1e3;
    c->compiled++;
    c->compile_sum += compile_ms;
    json_object_set_new(rec, "compiled", json_true());
    if (fc)
        json_object_set_new(rec, "final_check", json_true());
    if (opts.gbnf)
        json_object_set_new(rec, "gbnf", json_string(gbnf));
    if (opts.sample)
        json_object_set_new(rec, "samples", samples(c, k, fc, c->records));
    if (!jt) {
        free(gbnf);
        json_decref(fc);
        return 0;
    }
    int32_t *ids;
    size_t n;
    if (asn_tokenize(c->v, json_string_value(jt), json_string_length(jt), 0, 0, &ids, &n, e)) {
        free(gbnf);
        json_decref(fc);
        return -1;
    }
    int W = (asn_vocab_n_tokens(c->v) + 63) / 64;
    uint64_t *bits = asn_xmalloc((size_t)W * sizeof *bits);
    asn_gstate s;
    asn_gstate_start(asn_constraint_grammar(k), &s);
    long refused = -1;
    double sum = 0, mx = 0;
    json_t *each = opts.times ? json_array() : NULL;
    for (size_t i = 0; i < n; i++) {
        double t = asn_now();
        asn_constraint_mask(k, &s, bits);
        double us = (asn_now() - t) * 1e6;
        add_time(c, us);
        if (each)
            json_array_append_new(each, json_real(round(us * 10) / 10));
        sum += us, mx = us > mx ? us : mx;
        int ok = (bits[ids[i] >> 6] >> (ids[i] & 63)) & 1;
        if (!ok || asn_constraint_accept(k, &s, ids[i])) {
            refused = (long)i;
            break;
        }
    }
    int complete = refused < 0 && asn_gstate_complete(&s) &&
                   final_ok(fc, json_string_value(jt), json_string_length(jt));
    c->allowed += refused < 0;
    c->complete += complete;
    c->valid += refused < 0 && complete;
    json_object_set_new(rec, "tokens", json_integer((json_int_t)n));
    json_object_set_new(rec, "allowed", json_boolean(refused < 0));
    json_object_set_new(rec, "refused_at", refused < 0 ? json_null() : json_integer(refused));
    json_object_set_new(rec, "complete", json_boolean(complete));
    json_object_set_new(rec, "valid", json_boolean(refused < 0 && complete));
    if (opts.times) {
        long steps = refused < 0 ? (long)n : refused + 1;
        json_object_set_new(rec, "compile_ms", json_real(compile_ms));
        json_object_set_new(rec, "mask_us_mean", steps ? json_real(sum / (double)steps) : json_null());
        json_object_set_new(rec, "mask_us_max", steps ? json_real(mx) : json_null());
        json_object_set_new(rec, "mask_us", each);
    }
    asn_gstate_clear(&s);
    free(bits);
    free(ids);
    free(gbnf);
    json_decref(fc);
    (void)path, (void)line;
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int nops = asn_tool_parse(&tool, argc, argv);
    if (!opts.model)
        asn_usage_error("-m MODEL.gguf is required");
    asn_err e;
    asn_gguf *gg = asn_gguf_open(opts.model, &e);
    if (!gg)
        asn_fatal("%s", e.msg);
    asn_vocab *v = asn_vocab_load(gg, &e);
    asn_gguf_close(gg);
    if (!v)
        asn_fatal("%s: %s", opts.model, e.msg);
    ctx c = {0};
    c.v = v;
    asn_jsonl_keep_big_integers(1); /* a schema holding one is refused, not the run */
    asn_grammar *g0 = asn_gbnf_parse("root ::= \"\"", 11, &e);
    c.base = asn_constraint_new(g0, v);
    long bad = asn_map_records(nops ? argv + 1 : NULL, opts.skip_bad, opts.progress, check, &c);
    asn_close_out(stdout, "-");
    if (!opts.quiet) {
        if (c.n_times)
            qsort(c.times, c.n_times, sizeof *c.times, cmp_double);
        double mean = 0;
        for (size_t i = 0; i < c.n_times; i++)
            mean += c.times[i];
        mean = c.n_times ? mean / (double)c.n_times : 0;
        double p50 = c.n_times ? c.times[c.n_times / 2] : 0;
        double p99 = c.n_times ? c.times[(size_t)((double)(c.n_times - 1) * 0.99)] : 0;
        fprintf(stderr,
                "%s: %ld record%s: %ld compiled, %ld valid (%ld all tokens allowed, %ld complete); "
                "V = %d; compile %.2f ms mean; mask per token %.1f us mean, %.1f p50, %.1f p99 (%zu masks)\n",
                asn_progname(), c.records, ASN_PLURAL(c.records), c.compiled, c.valid, c.allowed, c.complete, asn_vocab_n_tokens(v),
                c.compiled ? c.compile_sum / (double)c.compiled : 0, mean, p50, p99, c.n_times);
    }
    (void)bad;
    free(c.times);
    for (int i = 0; i < N_RECENT; i++)
        free(c.rc[i].gbnf), asn_constraint_free(c.rc[i].k);
    asn_constraint_free(c.base);
    asn_vocab_free(v);
    return 0;
}
