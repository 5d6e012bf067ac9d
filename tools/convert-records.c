/* convert-records — asn's candidate records in the research pipeline's
 * format (its generation, rating and filtered records), for its scripts,
 * and its records in asn's. */
#include "asn/gen.h"
#include "asn/json.h"
#include "asn/records.h"
#include "asn/record_loop.h"
#include "asn/sampling.h"
#include "asn/tool.h"

#include <stdlib.h>
#include <string.h>

/* The command line, as asn_tool_parse fills it. */
typedef struct convert_records_options {
    const char *to;
    int skip_invalid;
    int progress;
} convert_records_options;

/* The options, with their defaults (the table below points into it). */
static convert_records_options opts = {
    .to = "reference",
};

static const asn_option options[] = {
    {"to", 0, ASN_OPT_STRING, &opts.to, "FORMAT", "the format to write: reference (the research pipeline's) or asn"},
    {"skip-invalid", 0, ASN_OPT_FLAG, &opts.skip_invalid, NULL, "warn about malformed records, drop them and go on"},
    {"progress", 0, ASN_OPT_FLAG, &opts.progress, NULL, "show the progress bar even when stderr is not a terminal"},
    {0},
};

static const asn_tool tool = {
    "convert-records", "[OPTIONS] [FILE...]",
    "Write asn's candidate records in the research pipeline's format, or its records in asn's.",
    "--to reference (the default) reads asn's records (gen-candidates output,\n"
    "labelled or filtered by any stage) and writes each one, in input order,\n"
    "as the research pipeline's generation_candidates_multi writes a\n"
    "generation record and its labelling scripts extend it:\n"
    "  prompt, the source record's own fields   kept as they are\n"
    "  system_prompt                            from system\n"
    "  sampler_info {name, config}              from heuristic {name, processors}\n"
    "  generation, seed                         kept\n"
    "  incidence_vector {check_factual,         from checks {factual, verifiable,\n"
    "    check_ifeval_or_math_or_gsm8k,           diversity} (a record that has an\n"
    "    check_diversity}                         incidence_vector keeps it)\n"
    "  bradley_terry_rating, verifiable_reward, diversity {self_bleu,\n"
    "    embedding_entropy}                     kept (rank-bt, score-verifiable and\n"
    "                                           score-diversity write them so)\n"
    "  normalized_quality, normalized_diversity, combined_scores\n"
    "                                           from filter-topk's score {quality,\n"
    "                                           diversity, combined_scores}\n"
    "The fields only asn has (id, prompt_id, heuristic, system, checks, score,\n"
    "rank) are left out, so that the result is grouped by prompt text and its\n"
    "sampler_info is what the research pipeline's scripts compare; tokens,\n"
    "model, settings, quality and the other labels pass through (its scripts\n"
    "ignore fields they do not know). asn's tools read the result as the\n"
    "research pipeline's records. A record without prompt, generation, seed or\n"
    "heuristic {name, processors} is an error naming file, line and field\n"
    "(with --skip-invalid: a warning, and the record is left out).\n"
    "\n"
    "--to asn reads the research pipeline's generation, rating or filtered\n"
    "records and writes each one, in input order, as asn's records:\n"
    "  system                                   from system_prompt (null when none)\n"
    "  prompt_id                                the hash of system and prompt, as\n"
    "                                           gen-candidates derives it\n"
    "  heuristic {name, id, processors}         from sampler_info {name, config}\n"
    "  id                                       prompt_id/heuristic id/seed\n"
    "  seed                                     as an integer\n"
    "  checks {diversity, verifiable, factual}  from incidence_vector (kept too)\n"
    "  score {quality, diversity,               from normalized_quality,\n"
    "    combined_scores}                         normalized_diversity, combined_scores\n"
    "Every other field is kept. What the research pipeline's records do not\n"
    "carry is not made up: tokens, n_tokens, finish, model and settings stay\n"
    "absent, as do filter-topk's rank and score {final, weights, verifiable};\n"
    "a prompt id given in asn's prompt file is derived again from the texts.\n"
    "asn's records pass through. A record without prompt, generation, seed\n"
    "or sampler_info {name, config} is an error naming file, line and field.\n"
    "(Every asn tool also reads the research pipeline's records as they are,\n"
    "detected per file; converting gives them asn's ids and field names.)\n",
    options,
};

/* The fields both formats share: prompt and generation strings and a seed
 * (the research pipeline's may be a string); else -1 with e naming the
 * field. */
static int text_and_seed(const json_t *rec, long long *seed, asn_err *e)
{
    static const char *need[] = {"prompt", "generation"};
    for (size_t i = 0; i < 2; i++)
        if (!json_is_string(json_object_get(rec, need[i])))
            return asn_err_set(e, "field \"%s\" %s", need[i], json_object_get(rec, need[i]) ? "must be a string" : "is missing");
    return asn_rec_seed(rec, seed, e);
}

/* A record of the research pipeline's rewritten in place as asn's (the
 * inverse of --to reference):
 *   system_prompt             -> system (null when absent)
 *   prompt_id                 <- asn_prompt_id(system, prompt)
 *   sampler_info {name, config} -> heuristic {name, id, processors}
 *                                (processors normalized, id as
 *                                asn_heuristic_id gives it)
 *   seed                      an integer (asn_rec_seed's forms)
 *   id                        <- prompt_id/heuristic id/seed
 *   incidence_vector          kept, and also as checks {diversity,
 *                                verifiable, factual} (as gen-candidates
 *                                --sources writes both)
 *   normalized_quality, normalized_diversity, combined_scores
 *                             -> score {quality, diversity, combined_scores}
 * Every other field is kept. A record that is already asn's (it has
 * heuristic or prompt_id) is left as it is. Needs prompt and generation
 * strings, a seed and sampler_info {name, config list}; else -1 with e
 * naming the field. */
static int rec_to_asn(json_t *rec, asn_err *e)
{
    if (json_object_get(rec, "heuristic") || json_object_get(rec, "prompt_id"))
        return 0; /* asn's already */
    if (!json_object_get(rec, "sampler_info"))
        return asn_err_set(e, "field \"sampler_info\" is missing (neither asn's record nor the research pipeline's)");
    long long seed;
    if (text_and_seed(rec, &seed, e))
        return -1;
    const json_t *si = json_object_get(rec, "sampler_info");
    const json_t *name = json_is_object(si) ? json_object_get(si, "name") : NULL;
    const json_t *config = json_is_object(si) ? json_object_get(si, "config") : NULL;
    if (!json_is_string(name) || !json_is_array(config))
        return asn_err_set(e, "field \"sampler_info\" must be {name, config: [processors]}");
    size_t i;
    const json_t *p;
    json_array_foreach(config, i, p)
        if (!json_is_object(p) || !json_is_string(json_object_get(p, "name")))
            return asn_err_set(e, "field \"sampler_info\": config[%zu] must be {name, params}", i);
    const json_t *sys = json_object_get(rec, "system_prompt");
    if (sys && !json_is_string(sys) && !json_is_null(sys))
        return asn_err_set(e, "field \"system_prompt\" must be a string or null");
    const char *system = json_is_string(sys) ? json_string_value(sys) : NULL;
    const char *prompt = json_string_value(json_object_get(rec, "prompt"));
    char pid[17], hid[13];
    asn_prompt_id(system, prompt, pid);
    asn_heuristic_id(json_string_value(name), config, hid);
    json_object_set_new(rec, "id", json_sprintf("%s/%s/%lld", pid, hid, seed));
    json_object_set_new(rec, "prompt_id", json_string(pid));
    json_object_set_new(rec, "system", system ? json_string(system) : json_null());
    json_object_set_new(rec, "heuristic", json_pack("{s:O,s:s,s:o}", "name", name, "id", hid, "processors",
                                                    asn_processors_normalized(config)));
    json_object_set_new(rec, "seed", json_integer(seed));
    if (json_is_object(json_object_get(rec, "incidence_vector")) && !json_object_get(rec, "checks")) {
        asn_checks c = asn_rec_checks(rec);
        json_object_set_new(rec, "checks", json_pack("{s:b,s:b,s:b}", "diversity", c.diversity, "verifiable",
                                                     c.verifiable, "factual", c.factual));
    }
    const json_t *q = json_object_get(rec, "normalized_quality"), *d = json_object_get(rec, "normalized_diversity");
    const json_t *cs = json_object_get(rec, "combined_scores");
    if (q || d || cs) {
        json_t *score = json_object();
        if (q)
            json_object_set(score, "quality", (json_t *)q);
        json_object_set(score, "diversity", d ? (json_t *)d : json_null());
        if (cs)
            json_object_set(score, "combined_scores", (json_t *)cs);
        json_object_set_new(rec, "score", score);
    }
    static const char *theirs[] = {"sampler_info", "system_prompt", "normalized_quality", "normalized_diversity",
                                   "combined_scores"};
    for (size_t k = 0; k < sizeof theirs / sizeof *theirs; k++)
        json_object_del(rec, theirs[k]);
    return 0;
}

static int to_asn(json_t *rec, void *ctx, const char *path, long line, asn_err *e)
{
    (void)ctx, (void)path, (void)line;
    return rec_to_asn(rec, e);
}

static int convert(json_t *rec, void *ctx, const char *path, long line, asn_err *e)
{
    (void)ctx, (void)path, (void)line;
    if (asn_rec_format(rec) == ASN_REC_REFERENCE && !json_object_get(rec, "heuristic"))
        return 0; /* already the research pipeline's */
    long long seed;
    if (text_and_seed(rec, &seed, e))
        return -1;
    const json_t *h = json_object_get(rec, "heuristic");
    if (!json_is_object(h) || !json_is_string(json_object_get(h, "name")) ||
        !json_is_array(json_object_get(h, "processors")))
        return asn_err_set(e, "field \"heuristic\" must be {name, processors}");
    json_t *si = json_pack("{s:O,s:O}", "name", json_object_get(h, "name"), "config", json_object_get(h, "processors"));
    json_object_set_new(rec, "sampler_info", si);
    const json_t *sys = json_object_get(rec, "system");
    json_object_set(rec, "system_prompt", sys && json_is_string(sys) ? (json_t *)sys : json_null());
    if (!json_object_get(rec, "incidence_vector")) {
        asn_checks c = asn_rec_checks(rec);
        json_object_set_new(rec, "incidence_vector",
                            json_pack("{s:b,s:b,s:b}", "check_factual", c.factual, "check_ifeval_or_math_or_gsm8k",
                                      c.verifiable, "check_diversity", c.diversity));
    }
    const json_t *score = json_object_get(rec, "score");
    if (json_is_object(score)) {
        const json_t *q = json_object_get(score, "quality"), *d = json_object_get(score, "diversity");
        const json_t *cs = json_object_get(score, "combined_scores");
        if (q && !json_is_null(q))
            json_object_set(rec, "normalized_quality", (json_t *)q);
        if (d && !json_is_null(d))
            json_object_set(rec, "normalized_diversity", (json_t *)d);
        if (json_is_object(cs))
            json_object_set(rec, "combined_scores", (json_t *)cs);
    }
    static const char *asn_only[] = {"id", "prompt_id", "heuristic", "system", "checks", "score", "rank"};
    for (size_t i = 0; i < sizeof asn_only / sizeof *asn_only; i++)
        json_object_del(rec, asn_only[i]);
    return 0;
}

int main(int argc, char **argv)
{
    int nops = asn_tool_parse(&tool, argc, argv);
    int to_reference = !strcmp(opts.to, "reference");
    if (!to_reference && strcmp(opts.to, "asn"))
        asn_usage_error("--to must be reference or asn, not \"%s\"", opts.to);
    asn_map_records(nops ? argv + 1 : NULL, opts.skip_invalid, opts.progress, to_reference ? convert : to_asn, NULL);
    asn_close_out(stdout, "-");
    return 0;
}
