/* score-verifiable — verifiable rewards: GSM8K and MATH answer checks and
 * IFEval instruction checks (lib/asn/verifiers.h), chosen by each record's
 * dataset, written as verifiable_reward plus a verifiable detail object. */
#include "asn/json.h"
#include "asn/record_loop.h"
#include "asn/tool.h"
#include "asn/verifiers.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The command line, as asn_tool_parse fills it. */
typedef struct score_verifiable_options {
    const char *dataset;
    const char *shard; /* --shard, --merge: asn_tool_shards */
    asn_strlist merge;
    int skip_bad;
    int quiet;
    int progress;
    int no_detail;
    int strings_only;
    long max_warnings;
} score_verifiable_options;

/* The options, with their defaults (the table below points into it). */
static score_verifiable_options opts = {
    .max_warnings = 20,
};

static const asn_option options[] = {
    {"dataset", 'd', ASN_OPT_STRING, &opts.dataset, "NAME",
     "score every record as NAME (gsm8k, math or ifeval), whatever its \"dataset\" says"},
    {"math-strings-only", 0, ASN_OPT_FLAG, &opts.strings_only, NULL,
     "MATH: compare normalized strings only, without the numeric stand-in for sympy"},
    {"no-detail", 0, ASN_OPT_FLAG, &opts.no_detail, NULL, "write verifiable_reward only, not the verifiable object"},
    {"max-warnings", 0, ASN_OPT_INT, &opts.max_warnings, "N", "per-record warnings shown before the rest are only counted"},
    ASN_OPT_SKIP_BAD(&opts.skip_bad),
    {"quiet", 'q', ASN_OPT_FLAG, &opts.quiet, NULL, "no warnings about unscored records and no summary"},
    {"progress", 0, ASN_OPT_FLAG, &opts.progress, NULL, "show the progress bar even when stderr is not a terminal"},
    {"shard", 0, ASN_OPT_STRING, &opts.shard, "K/N", "only the records of the prompts of shard K of N (as gen-candidates --shard)"},
    {"merge", 0, ASN_OPT_LIST, &opts.merge, "FILE", "label nothing: merge these shard outputs in the order of the input's prompts"},
    {0},
};

static const asn_tool tool = {
    "score-verifiable", "[OPTIONS] [FILE...]",
    "Label candidates with verifiable rewards: GSM8K and MATH answers, IFEval instructions.",
    "Reads candidate records (JSONL; FILE - or none is stdin) and writes each one\n"
    "back with two fields added, in input order; every other field passes through.\n"
    "The check is chosen by the record's \"dataset\" (case does not matter; a\n"
    "\"owner/name\" form counts by its name):\n"
    "  gsm8k   the last number in \"generation\" against \"ground_truth\" (a number,\n"
    "          or a solution whose answer follows \"####\"), the reference's rules\n"
    "  math    the last \\boxed{} answer (else the Minerva \"Final Answer\" sentence,\n"
    "          else the last $...$) against \"ground_truth\", equal after Hendrycks'\n"
    "          normalization or in value (a numeric stand-in for the reference's\n"
    "          sympy check; --math-strings-only leaves it out)\n"
    "  ifeval  Google's IFEval instructions: \"instruction_id_list\" and \"kwargs\"\n"
    "          (top level, or inside \"ground_truth\"), strict mode; or the\n"
    "          reference's {\"func_name\": ...} constraint in \"ground_truth\"\n"
    "Fields written:\n"
    "  verifiable_reward  1 (answer right / all instructions followed), 0, or null\n"
    "                     when the dataset is not one of these or a field the check\n"
    "                     needs is missing or unusable\n"
    "  verifiable         {dataset, passed: [one boolean per check], extracted: the\n"
    "                     answer compared (null for ifeval)}, with \"error\" instead\n"
    "                     of results when a field is missing; null when the dataset\n"
    "                     is not verifiable\n"
    "Records whose check lacks a field get a warning naming file, line and field,\n"
    "and are counted in the summary on stderr. A malformed line, or a record of a\n"
    "verifiable dataset without a string \"generation\", is an error (exit 1) unless\n"
    "--skip-bad.\n" ASN_SHARD_HELP,
    options,
};

typedef enum { DS_NONE, DS_GSM8K, DS_MATH, DS_IFEVAL } dataset;
static const char *const ds_name[] = {NULL, "gsm8k", "MATH", "ifeval"};

static dataset parse_dataset(const char *s)
{
    if (!s)
        return DS_NONE;
    const char *slash = strrchr(s, '/');
    if (slash)
        s = slash + 1;
    if (!strcasecmp(s, "gsm8k"))
        return DS_GSM8K;
    if (!strcasecmp(s, "math"))
        return DS_MATH;
    if (!strcasecmp(s, "ifeval"))
        return DS_IFEVAL;
    return DS_NONE;
}

/* What happened to one record. */
typedef struct verdict {
    int reward;       /* 1, 0, or -1 for null */
    json_t *passed;   /* array of booleans, or NULL */
    char *extracted;  /* or NULL */
    char *error;      /* why the reward is null (a field problem), or NULL */
} verdict;

static void fail(verdict *v, const asn_err *e)
{
    v->reward = -1;
    v->error = asn_xstrdup(e->msg);
}

static void answer_check(dataset ds, const json_t *rec, const char *gen, verdict *v)
{
    asn_err e;
    const json_t *gt = json_object_get(rec, "ground_truth");
    if (!gt || json_is_null(gt)) {
        asn_err_set(&e, "field \"ground_truth\" is missing");
        fail(v, &e);
        return;
    }
    char *label = NULL;
    if (ds == DS_GSM8K) {
        label = asn_gsm8k_label(gt);
    } else if (json_is_string(gt)) {
        label = asn_xstrdup(json_string_value(gt));
    } else if (json_is_number(gt)) {
        /* the reference's strip_string would fail on a number; asn compares
         * its decimal form */
        label = asn_gsm8k_label(gt);
    }
    if (!label) {
        asn_err_set(&e, "field \"ground_truth\" must be a string or a number, not %s", asn_json_type_name(gt));
        fail(v, &e);
        return;
    }
    int ok = ds == DS_GSM8K ? asn_gsm8k_check(gen, label, &v->extracted) : asn_math_check(gen, label, opts.strings_only ? 0 : ASN_MATH_VALUES, &v->extracted);
    free(label);
    v->reward = ok;
    v->passed = json_array();
    json_array_append_new(v->passed, json_boolean(ok));
}

/* Google's format: instruction_id_list + kwargs (in rec or in obj). */
static void google_check(const json_t *ids, const json_t *kwargs, const char *where, const char *gen, verdict *v)
{
    asn_err e;
    if (!json_is_array(ids) || json_array_size(ids) == 0) {
        asn_err_set(&e, "field \"%sinstruction_id_list\" must be a non-empty list of strings", where);
        fail(v, &e);
        return;
    }
    if (kwargs && !json_is_null(kwargs) &&
        (!json_is_array(kwargs) || json_array_size(kwargs) != json_array_size(ids))) {
        asn_err_set(&e, "field \"%skwargs\" must be a list with one object per instruction (%zu)", where,
                    json_array_size(ids));
        fail(v, &e);
        return;
    }
    json_t *passed = json_array();
    int all = 1;
    for (size_t i = 0; i < json_array_size(ids); i++) {
        const json_t *id = json_array_get(ids, i);
        const json_t *kw = json_is_array(kwargs) ? json_array_get(kwargs, i) : NULL;
        if (!json_is_string(id)) {
            asn_err_set(&e, "field \"%sinstruction_id_list\"[%zu] must be a string, not %s", where, i,
                        asn_json_type_name(id));
        } else if (kw && !json_is_null(kw) && !json_is_object(kw)) {
            asn_err_set(&e, "field \"%skwargs\"[%zu] must be an object, not %s", where, i, asn_json_type_name(kw));
        } else {
            int ok;
            if (!asn_ifeval_check(json_string_value(id), kw, gen, &ok, &e)) {
                json_array_append_new(passed, json_boolean(ok));
                all &= ok;
                continue;
            }
            asn_err_prefix(&e, "%s (\"%skwargs\"[%zu])", json_string_value(id), where, i);
        }
        json_decref(passed);
        fail(v, &e);
        return;
    }
    v->reward = all;
    v->passed = passed;
}

static void ifeval_check(const json_t *rec, const char *gen, verdict *v)
{
    asn_err e;
    const json_t *ids = json_object_get(rec, "instruction_id_list");
    if (ids && !json_is_null(ids)) {
        google_check(ids, json_object_get(rec, "kwargs"), "", gen, v);
        return;
    }
    const json_t *gt = json_object_get(rec, "ground_truth");
    json_t *parsed = NULL;
    if (json_is_string(gt)) { /* the reference stores its constraint as JSON text */
        json_error_t je;
        parsed = json_loads(json_string_value(gt), JSON_DECODE_ANY, &je);
    }
    const json_t *obj = parsed ? parsed : gt;
    if (json_is_object(obj) && json_object_get(obj, "instruction_id_list")) {
        google_check(json_object_get(obj, "instruction_id_list"), json_object_get(obj, "kwargs"), "ground_truth.",
                     gen, v);
    } else if (json_is_object(obj) && json_object_get(obj, "func_name")) {
        int ok;
        if (asn_ifeval_ref_check(obj, gen, &ok, &e)) {
            asn_err_prefix(&e, "field \"ground_truth\"");
            fail(v, &e);
        } else {
            v->reward = ok;
            v->passed = json_array();
            json_array_append_new(v->passed, json_boolean(ok));
        }
    } else {
        asn_err_set(&e, "field \"instruction_id_list\" is missing (nor is there a constraint in \"ground_truth\")");
        fail(v, &e);
    }
    json_decref(parsed);
}

typedef struct counts {
    long records, passed, failed, unverifiable, missing, warned;
} counts;

/* Labels one record. 0, or -1 with e set for a record error. */
static int label(json_t *rec, void *ctx, const char *file, long line, asn_err *e)
{
    counts *c = ctx;
    const char *dsfield = NULL;
    if (!opts.dataset && asn_get_string(rec, "dataset", 0, &dsfield, e))
        return -1;
    dataset ds = parse_dataset(opts.dataset ? opts.dataset : dsfield);
    verdict v = {-1, NULL, NULL, NULL};
    if (ds != DS_NONE) {
        const char *gen = NULL;
        if (asn_get_string(rec, "generation", 1, &gen, e))
            return -1;
        if (ds == DS_IFEVAL)
            ifeval_check(rec, gen, &v);
        else
            answer_check(ds, rec, gen, &v);
    }
    json_object_set_new(rec, "verifiable_reward", v.reward < 0 ? json_null() : json_integer(v.reward));
    if (!opts.no_detail) {
        json_t *d = json_null();
        if (ds != DS_NONE) {
            d = json_object();
            json_object_set_new(d, "dataset", json_string(ds_name[ds]));
            json_object_set_new(d, "passed", v.passed ? json_incref(v.passed) : json_null());
            json_object_set_new(d, "extracted", v.extracted ? json_string(v.extracted) : json_null());
            if (v.error)
                json_object_set_new(d, "error", json_string(v.error));
        }
        json_object_set_new(rec, "verifiable", d);
    }
    c->records++;
    if (ds == DS_NONE)
        c->unverifiable++;
    else if (v.error) {
        c->missing++;
        if (!opts.quiet && c->warned++ < opts.max_warnings)
            asn_warn("%s:%ld: %s; verifiable_reward is null", file, line, v.error);
    } else if (v.reward)
        c->passed++;
    else
        c->failed++;
    json_decref(v.passed);
    free(v.extracted);
    free(v.error);
    return 0;
}

int main(int argc, char **argv)
{
    int nops = asn_tool_parse(&tool, argc, argv);
    if (asn_tool_shards(opts.shard, &opts.merge, nops ? argv + 1 : NULL))
        return 0;
    if (opts.dataset && parse_dataset(opts.dataset) == DS_NONE)
        asn_usage_error("--dataset must be gsm8k, math or ifeval, not \"%s\"", opts.dataset);
    if (opts.max_warnings < 0)
        asn_usage_error("--max-warnings must be >= 0");
    counts c = {0};
    long bad = asn_map_records(nops ? argv + 1 : NULL, opts.skip_bad, opts.progress, label, &c);
    asn_close_out(stdout, "-");
    if (!opts.quiet) {
        if (c.warned > opts.max_warnings)
            asn_warn("%ld more records with missing fields were not shown", c.warned - opts.max_warnings);
        fprintf(stderr,
                "%s: %ld record%s: %ld passed, %ld failed, %ld not verifiable, %ld with missing fields "
                "(null reward)\n",
                asn_progname(), c.records, c.records == 1 ? "" : "s", c.passed, c.failed, c.unverifiable, c.missing);
    }
    (void)bad; /* asn_map_records has said how many */
    return 0;
}
