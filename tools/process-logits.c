/* process-logits — apply a heuristic's processors to logit rows from any
 * engine, and optionally draw the token asn would draw. */
#include "asn/json.h"
#include "asn/sampling.h"
#include "asn/record_loop.h"
#include "asn/tool.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The command line, as asn_tool_parse fills it. */
typedef struct process_logits_options {
    int sample;
    int skip_bad;
    int schema;
    const char *heuristics;
    const char *heuristic;
} process_logits_options;

/* The options, with their defaults (the table below points into it). */
static process_logits_options opts;

static const asn_option options[] = {
    {"sample", 0, ASN_OPT_FLAG, &opts.sample, NULL, "also draw a token from the processed row (field \"token\")"},
    {"heuristics", 'H', ASN_OPT_STRING, &opts.heuristics, "FILE", "heuristics YAML; with --heuristic, overrides each record's processors"},
    {"heuristic", 0, ASN_OPT_STRING, &opts.heuristic, "NAME", "the pipeline of --heuristics to apply"},
    ASN_OPT_SKIP_BAD(&opts.skip_bad),
    {"schema", 0, ASN_OPT_FLAG, &opts.schema, NULL, "print the JSON Schema of a processor, made from the processor table (schemas/processor.schema.json), and exit"},
    {0},
};

static const asn_tool tool = {
    "process-logits", "[OPTIONS] [FILE...]",
    "Apply logits processors to JSONL logit rows and write the processed rows.",
    "Input records (one JSON object per line; other fields pass through):\n"
    "  logits        array of numbers, null meaning -inf (required)\n"
    "  processors    [{name, params}] in the heuristics-file format (required\n"
    "                unless --heuristic is given)\n"
    "  input_ids     token history, oldest first, prompt included (optional)\n"
    "  prompt_length how many of input_ids are prompt (optional, default 0;\n"
    "                presence/frequency penalties count only the rest)\n"
    "  eos_token_ids end-of-generation ids for min_new_tokens without its own\n"
    "                eos_token_id (optional)\n"
    "  seed, id, step  RNG key for --sample (defaults 0, \"\", 0)\n"
    "Output: the record with \"logits\" replaced by the processed row (null for\n"
    "-inf) and, with --sample, \"token\": the id drawn by inverse CDF with the\n"
    "counter RNG keyed by (seed, id, heuristic id) at counter step. Inline\n"
    "processors form a heuristic with the empty name.\n"
    "--schema prints what schemas/processor.schema.json holds: a processor's\n"
    "names, parameters (types, ranges, defaults) and which processors a\n"
    "gen-heuristics grid may sweep, from the rows of the processor table.\n",
    options,
};

typedef struct buf_i32 {
    int32_t *v;
    size_t n, cap;
} buf_i32;

static int read_ids(const json_t *rec, const char *key, buf_i32 *b, asn_err *e)
{
    b->n = 0;
    json_t *a = json_object_get(rec, key);
    if (!a || json_is_null(a))
        return 0;
    if (!json_is_array(a))
        return asn_err_set(e, "field \"%s\" must be an array of token ids", key);
    size_t i;
    json_t *x;
    json_array_foreach(a, i, x)
    {
        if (!json_is_integer(x) || json_integer_value(x) < 0 || json_integer_value(x) > INT32_MAX)
            return asn_err_set(e, "field \"%s\": element %zu must be a token id (integer >= 0)", key, i);
        asn_grow((void **)&b->v, &b->cap, b->n + 1, sizeof *b->v);
        b->v[b->n++] = (int32_t)json_integer_value(x);
    }
    return 0;
}

static int read_logits(const json_t *rec, float **row, size_t *cap, int *V, asn_err *e)
{
    json_t *a = json_object_get(rec, "logits");
    if (!a)
        return asn_err_set(e, "field \"logits\" is missing");
    if (!json_is_array(a) || !json_array_size(a))
        return asn_err_set(e, "field \"logits\" must be a non-empty array of numbers");
    size_t n = json_array_size(a);
    if (n > INT32_MAX)
        return asn_err_set(e, "field \"logits\" is too long");
    asn_grow((void **)row, cap, n, sizeof **row);
    for (size_t i = 0; i < n; i++) {
        json_t *x = json_array_get(a, i);
        double d;
        if (json_is_null(x))
            (*row)[i] = -INFINITY;
        else if (!asn_json_number(x, &d))
            (*row)[i] = (float)d;
        else
            return asn_err_set(e, "field \"logits\": element %zu must be a number or null, not %s",
                               i, asn_json_type_name(x));
    }
    *V = (int)n;
    return 0;
}

typedef struct state {
    const asn_heuristic *fixed;
    asn_workspace *ws;
    float *row;
    size_t cap;
    buf_i32 ids, eos;
} state;

static int process_in(json_t *rec, const asn_heuristic *fixed, asn_workspace *ws, float **row,
                      size_t *cap, buf_i32 *ids, buf_i32 *eos, asn_err *e);

/* Processes one record in place (an asn_record_fn). */
static int process(json_t *rec, void *ctx, const char *path, long line, asn_err *e)
{
    state *s = ctx;
    (void)path, (void)line;
    return process_in(rec, s->fixed, s->ws, &s->row, &s->cap, &s->ids, &s->eos, e);
}

static int process_in(json_t *rec, const asn_heuristic *fixed, asn_workspace *ws, float **row,
                      size_t *cap, buf_i32 *ids, buf_i32 *eos, asn_err *e)
{
    int V;
    if (read_logits(rec, row, cap, &V, e) || read_ids(rec, "input_ids", ids, e) ||
        read_ids(rec, "eos_token_ids", eos, e))
        return -1;
    long long plen = 0, seed = 0, step = 0;
    const char *id = "";
    if (asn_get_int(rec, "prompt_length", 0, &plen, e) || asn_get_int(rec, "seed", 0, &seed, e) ||
        asn_get_int(rec, "step", 0, &step, e) || asn_get_string(rec, "id", 0, &id, e))
        return -1;
    if (plen < 0 || (size_t)plen > ids->n)
        return asn_err_set(e, "field \"prompt_length\" must be between 0 and the length of input_ids");
    if (seed < 0 || step < 0)
        return asn_err_set(e, "fields \"seed\" and \"step\" must be >= 0");

    asn_heuristic local;
    const asn_heuristic *h = fixed;
    if (!h) {
        json_t *procs = json_object_get(rec, "processors");
        if (!procs)
            return asn_err_set(e, "field \"processors\" is missing");
        if (asn_heuristic_init(&local, "", procs, e))
            return asn_err_prefix(e, "field \"processors\"");
        h = &local;
    }
    asn_seq_ctx ctx = {
        .ids = ids->v, .n_ids = (int)ids->n, .n_prompt = (int)plen,
        .eos = eos->v, .n_eos = (int)eos->n,
        .key = asn_rng_key_make((uint64_t)seed, id, h->id), .step = (uint64_t)step,
    };
    asn_seq_state st;
    asn_seq_state_init(&st);
    int rc = asn_pipeline_apply(h, *row, V, &ctx, &st, ws, e);
    if (!rc) {
        json_t *out = json_array();
        int finite = 0;
        for (int i = 0; i < V; i++) {
            json_array_append_new(out, asn_json_f32((*row)[i]));
            finite |= (*row)[i] != -INFINITY;
        }
        json_object_set_new(rec, "logits", out);
        if (opts.sample) {
            if (!finite)
                rc = asn_err_set(e, "the processors removed every token: nothing to sample");
            else
                json_object_set_new(rec, "token", json_integer(asn_sample_row(
                                                      *row, V, asn_rng_uniform(ctx.key, ctx.step, ASN_STREAM_DRAW))));
        }
    }
    if (h == &local)
        asn_heuristic_clear(&local);
    return rc;
}

/* --schema: the processor schema, as committed in schemas/. */
static void print_schema(void)
{
    json_t *s = asn_proc_schema();
    char *text = json_dumps(s, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (!text || printf("%s\n", text) < 0)
        asn_write_failed(stdout, "-", errno);
    free(text);
    json_decref(s);
    asn_close_out(stdout, "-");
}

int main(int argc, char **argv)
{
    int nops = asn_tool_parse(&tool, argc, argv);
    if (opts.schema) {
        if (nops || opts.heuristics || opts.heuristic || opts.sample)
            asn_usage_error("--schema takes no other option and no file");
        print_schema();
        return 0;
    }
    if (!!opts.heuristics != !!opts.heuristic)
        asn_usage_error("--heuristics and --heuristic go together");
    asn_err e;
    asn_heuristics *hs = NULL;
    const asn_heuristic *fixed = NULL;
    if (opts.heuristics) {
        if (!(hs = asn_heuristics_load(opts.heuristics, &e)))
            asn_fatal("%s", e.msg);
        int k = asn_heuristics_find(hs, opts.heuristic);
        if (k < 0)
            asn_fatal("%s: no pipeline named \"%s\"", opts.heuristics, opts.heuristic);
        fixed = &hs->h[k];
    }
    state st = {fixed, asn_workspace_new(), NULL, 0, {0}, {0}};
    asn_map_records(nops ? argv + 1 : NULL, opts.skip_bad, 0, process, &st);
    asn_close_out(stdout, "-");
    free(st.row);
    free(st.ids.v);
    free(st.eos.v);
    asn_workspace_free(st.ws);
    asn_heuristics_free(hs);
    return 0;
}
