/* verify — integrity of a candidates file: the reference's per-prompt
 * checks (seeds, duplicates, counts), record structure, token ids, text
 * against tokens, one model, and replays of random candidates. Writes the
 * records of the prompts that pass; explains the others on stderr. */
#include "asn/chat.h"
#include "asn/gen.h"
#include "asn/json.h"
#include "asn/records.h"
#include "asn/record_loop.h"
#include "asn/tool.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* The command line, as asn_tool_parse fills it. */
typedef struct verify_options {
    const char *heuristics;
    const char *model;
    const char *report;
    long expected_seeds;
    long replay;
    long seed;
    long threads;
    int skip_bad;
} verify_options;

/* The options, with their defaults (the table below points into it). */
static verify_options opts = {
    .expected_seeds = -1,
};

static const asn_option options[] = {
    {"expected-seeds", 0, ASN_OPT_INT, &opts.expected_seeds, "N", "every prompt must have N distinct seeds (-1: any)"},
    {"heuristics", 'H', ASN_OPT_STRING, &opts.heuristics, "FILE", "every prompt must have as many distinct heuristics as FILE has pipelines"},
    {"model", 'm', ASN_OPT_STRING, &opts.model, "FILE", "the generating model: check token ids, texts, the digest; needed for --replay"},
    {"replay", 0, ASN_OPT_INT, &opts.replay, "N", "regenerate N random candidates and require identical tokens"},
    {"seed", 's', ASN_OPT_INT, &opts.seed, "N", "which candidates --replay picks"},
    {"threads", 't', ASN_OPT_INT, &opts.threads, "N", "threads for --replay (0: all cores)"},
    {"report", 0, ASN_OPT_STRING, &opts.report, "FILE", "write a JSON report of the checks"},
    ASN_OPT_SKIP_BAD(&opts.skip_bad),
    {0},
};

static const asn_tool tool = {
    "verify", "[OPTIONS] [CANDIDATES.jsonl...]",
    "Check a candidates file; write the records of the prompts that pass.",
    "A prompt is discarded when one of its records is malformed (fields and\n"
    "types of schemas/candidate.schema.json, id = prompt_id/heuristic id/seed,\n"
    "heuristic id = digest of its name and processors, a learned sampler's\n"
    "path counted by the digest of the file it names, read now;\n"
    "n_tokens = len(tokens)),\n"
    "lacks a seed, repeats a (seed, heuristic) pair, lacks one (every heuristic\n"
    "must have every seed of the prompt), has a number of distinct\n"
    "seeds other than --expected-seeds or of heuristics other than the pipelines\n"
    "of --heuristics, was made by another model than the first record's, or,\n"
    "with --model, has a token id out of range or a generation that differs from\n"
    "its detokenized tokens (special tokens removed, cut at a stop string), or\n"
    "carries the prompt's own \"constraint\" and a generation that does not\n"
    "satisfy it (unless cut: finish length) or a \"valid\" that says otherwise.\n"
    "A line that is not a JSON object is an error naming FILE:LINE and the\n"
    "column (exit status 1), or with --skip-bad is left out and counted in the\n"
    "summary.\n"
    "A discarded prompt is not an error (exit status 0). --replay runs after the\n"
    "records are written: a mismatch makes the exit status 1.\n"
    "\n"
    "The research pipeline's records (detected per file, named on stderr) are\n"
    "grouped by prompt text and checked as its verify_datagen_and_transform\n"
    "checks them: prompt, generation, sampler_info {name, config} and a seed,\n"
    "no (seed, sampler_info) pair twice, the seed and sampler counts; they\n"
    "have no tokens, so --model and --replay check only asn's records.\n"
    "Records convert-records --to asn made of them (none of tokens, n_tokens,\n"
    "finish, model and settings) are checked as asn's but for those fields;\n"
    "--model and --replay skip them too.\n",
    options,
};

typedef struct reasons {
    json_t *list; /* strings */
} reasons;

__attribute__((format(printf, 2, 3))) static void why(reasons *r, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    for (size_t i = 0; i < json_array_size(r->list); i++)
        if (!strcmp(json_string_value(json_array_get(r->list, i)), buf))
            return;
    json_array_append_new(r->list, json_string(buf));
}

/* The fields of a record that only generating it gives: a record
 * converted from the research pipeline's (convert-records --to asn) has
 * none of them. */
static const char *const gen_fields[] = {"tokens", "n_tokens", "finish", "model", "settings"};

static int converted(const json_t *c)
{
    for (size_t i = 0; i < sizeof gen_fields / sizeof *gen_fields; i++)
        if (json_object_get(c, gen_fields[i]))
            return 0;
    return 1;
}

/* The id of a record's heuristic {name, processors} as gen-candidates
 * gives it (a learned processor's sampler file read for its digest), kept
 * in ids_seen (compact JSON of {name, processors} -> id) per distinct
 * heuristic; NULL, with a reason, when a sampler file cannot be read. */
static const char *heuristic_id(const json_t *h, json_t *ids_seen, reasons *r)
{
    json_t *canon = json_pack("{s:O,s:O}", "name", json_object_get(h, "name"), "processors",
                              json_object_get(h, "processors"));
    char *key = json_dumps(canon, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(canon);
    const char *id = json_string_value(json_object_get(ids_seen, key));
    if (!id) {
        char digest[13];
        asn_err e = {0};
        if (asn_heuristic_id_of(json_string_value(json_object_get(h, "name")), json_object_get(h, "processors"),
                                digest, &e)) {
            why(r, "heuristic \"%s\": cannot check its id: %s", json_string_value(json_object_get(h, "name")),
                e.msg);
            free(key);
            return NULL;
        }
        json_object_set_new(ids_seen, key, json_string(digest));
        id = json_string_value(json_object_get(ids_seen, key));
    }
    free(key);
    return id;
}

/* Structure of one record; a reason when it is wrong. */
static void check_record(const json_t *c, reasons *r, const char **model_sha, json_t *ids_seen)
{
    static const char *strs[] = {"id", "prompt_id", "prompt", "generation"};
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
        if (!json_is_string(json_object_get(c, strs[i])))
            return why(r, "a record lacks the string field \"%s\"", strs[i]);
    const json_t *h = json_object_get(c, "heuristic"), *toks = json_object_get(c, "tokens");
    const json_t *model = json_object_get(c, "model"), *settings = json_object_get(c, "settings");
    if (!json_is_object(h) || !json_is_string(json_object_get(h, "name")) ||
        !json_is_string(json_object_get(h, "id")) || !json_is_array(json_object_get(h, "processors")))
        return why(r, "a record's \"heuristic\" is not {name, id, processors}");
    const json_t *seed = json_object_get(c, "seed");
    if (!json_is_integer(seed) || json_integer_value(seed) < 0)
        return why(r, "a record has no seed");
    char id[512];
    snprintf(id, sizeof id, "%s/%s/%lld", json_string_value(json_object_get(c, "prompt_id")),
             json_string_value(json_object_get(h, "id")), (long long)json_integer_value(seed));
    if (strcmp(id, json_string_value(json_object_get(c, "id"))))
        why(r, "record %s: id is not prompt_id/heuristic id/seed", json_string_value(json_object_get(c, "id")));
    const char *digest = heuristic_id(h, ids_seen, r);
    if (digest && strcmp(digest, json_string_value(json_object_get(h, "id"))))
        why(r, "heuristic \"%s\": id does not match its name and processors",
            json_string_value(json_object_get(h, "name")));
    if (converted(c))
        return; /* no tokens, model or settings to check */
    if (!json_is_string(json_object_get(c, "finish")))
        return why(r, "a record lacks the string field \"finish\"");
    if (!json_is_array(toks) || !json_is_object(model) || !json_is_string(json_object_get(model, "sha256")) ||
        !json_is_object(settings))
        return why(r, "a record lacks \"tokens\", \"model\" or \"settings\"");
    size_t i;
    const json_t *t;
    json_array_foreach(toks, i, t) if (!json_is_integer(t) || json_integer_value(t) < 0) return why(
        r, "record %s has a token that is not an id", json_string_value(json_object_get(c, "id")));
    if (!json_is_integer(json_object_get(c, "n_tokens")) ||
        json_integer_value(json_object_get(c, "n_tokens")) != (json_int_t)json_array_size(toks))
        why(r, "record %s: n_tokens differs from the length of tokens", json_string_value(json_object_get(c, "id")));
    const char *fin = json_string_value(json_object_get(c, "finish"));
    if (strcmp(fin, "eos") && strcmp(fin, "stop") && strcmp(fin, "length"))
        why(r, "record %s: finish must be eos, stop or length", json_string_value(json_object_get(c, "id")));
    const char *sha = json_string_value(json_object_get(model, "sha256"));
    if (!*model_sha)
        *model_sha = sha; /* borrowed from the first group; kept alive below */
    else if (strcmp(sha, *model_sha))
        why(r, "made by another model (sha256 %.16s...)", sha);
}

/* The prompt's own constraint of a record ({name, params, valid}) as a
 * heuristic of one processor; -1 with e when it is not one. */
static int record_constraint(const json_t *c, asn_heuristic *h, asn_err *e)
{
    json_t *pc = json_deep_copy(json_object_get(c, "constraint"));
    json_object_del(pc, "valid");
    json_t *list = json_pack("[o]", pc);
    int rc = asn_heuristic_init(h, "constraint", list, e);
    json_decref(list);
    if (!rc && !asn_proc_is_constraint(h->procs[0].kind)) {
        asn_heuristic_clear(h);
        return asn_err_set(e, "not a json_schema, grammar, regex or choice processor");
    }
    return rc;
}

/* A record with the prompt's own constraint: the generation validates
 * unless it was cut (finish length), and "valid" says whether it does. */
static void check_constraint(const json_t *c, reasons *r)
{
    const json_t *pc = json_object_get(c, "constraint");
    const char *id = json_string_value(json_object_get(c, "id"));
    if (!pc)
        return;
    asn_heuristic h;
    asn_err e;
    if (!json_is_object(pc) || !json_is_boolean(json_object_get(pc, "valid")) || record_constraint(c, &h, &e))
        return why(r, "record %s: \"constraint\" is not {name, params, valid}", id);
    const json_t *g = json_object_get(c, "generation");
    const char *fin = json_string_value(json_object_get(c, "finish"));
    int ok = asn_constraint_proc_valid(&h.procs[0], json_string_value(g), json_string_length(g));
    asn_heuristic_clear(&h);
    int cut = !strcmp(fin, "length");
    if (!cut && !ok)
        why(r, "record %s: the generation does not satisfy its constraint (finish %s)", id, fin);
    else if (json_is_true(json_object_get(pc, "valid")) != (ok && !cut))
        why(r, "record %s: \"valid\" is %s, the generation %s", id, json_is_true(json_object_get(pc, "valid")) ? "true" : "false",
            cut ? "was cut (finish length)" : "satisfies its constraint");
}

/* A record of the research pipeline's (no ids, tokens or model): what its
 * verify_datagen_and_transform reads, prompt text, seed and sampler_info,
 * and what its later stages read, the generation. */
static void check_reference_record(const json_t *c, reasons *r)
{
    if (!json_is_string(json_object_get(c, "prompt")) || !json_is_string(json_object_get(c, "generation")))
        return why(r, "a record lacks the string field \"%s\"",
                   json_is_string(json_object_get(c, "prompt")) ? "generation" : "prompt");
    const json_t *si = json_object_get(c, "sampler_info");
    if (!json_is_object(si) || !json_is_string(json_object_get(si, "name")) ||
        !json_is_array(json_object_get(si, "config")))
        return why(r, "a record's \"sampler_info\" is not {name, config}");
    const json_t *seed = json_object_get(c, "seed");
    if (!seed || json_is_null(seed))
        why(r, "Entry with missing 'seed' found.");
}

/* With the model: token ids in range, generation = detokenized tokens. */
static void check_text(const json_t *c, const asn_vocab *v, reasons *r)
{
    const json_t *toks = json_object_get(c, "tokens");
    size_t n = json_array_size(toks);
    int32_t *ids = asn_xmalloc((n ? n : 1) * sizeof *ids);
    int32_t V = asn_vocab_n_tokens(v);
    for (size_t i = 0; i < n; i++) {
        json_int_t t = json_integer_value(json_array_get(toks, i));
        if (t >= V) {
            why(r, "record %s has a token id out of the vocabulary (%lld)", json_string_value(json_object_get(c, "id")), t);
            free(ids);
            return;
        }
        ids[i] = (int32_t)t;
    }
    char *text;
    size_t len;
    asn_err e;
    /* a stop token-id sequence the tokens end with is not in the text */
    int32_t *sids;
    int *soff, ns;
    if (asn_gen_stop_ids_from_json(json_object_get(json_object_get(c, "settings"), "stop_token_ids"), V, &sids, &soff,
                                   &ns, &e)) {
        free(ids);
        return why(r, "record %s: settings.stop_token_ids: %s", json_string_value(json_object_get(c, "id")), e.msg);
    }
    for (int k = 0; k < ns; k++) {
        size_t L = (size_t)(soff[k + 1] - soff[k]);
        if (L <= n && !memcmp(ids + n - L, sids + soff[k], L * sizeof *ids)) {
            n -= L;
            break;
        }
    }
    free(sids), free(soff);
    if (asn_detokenize(v, ids, n, 1, 0, &text, &len, &e)) {
        free(ids);
        return why(r, "record %s: tokens do not detokenize", json_string_value(json_object_get(c, "id")));
    }
    const json_t *stops = json_object_get(json_object_get(c, "settings"), "stop");
    size_t cut = len, k;
    const json_t *s;
    json_array_foreach(stops, k, s)
    {
        const char *p = json_is_string(s) && json_string_length(s) ? memmem(text, len, json_string_value(s), json_string_length(s)) : NULL;
        if (p && (size_t)(p - text) < cut)
            cut = (size_t)(p - text);
    }
    json_t *expect = asn_json_text(text, cut);
    if (!json_equal(expect, json_object_get(c, "generation")))
        why(r, "record %s: generation differs from its detokenized tokens", json_string_value(json_object_get(c, "id")));
    json_decref(expect);
    free(text);
    free(ids);
}

/* Per prompt: seeds, duplicates, counts; the research pipeline's records
 * (ref) need not have every (seed, heuristic) pair, as its verify has it. */
static void check_group(const json_t *group, reasons *r, int n_heuristics, int ref)
{
    size_t n = json_array_size(group);
    json_t *pairs = json_object(), *seeds = json_object(), *hs = json_object();
    for (size_t i = 0; i < n; i++) {
        const json_t *c = json_array_get(group, i);
        long long seed;
        asn_err e;
        char hk[4096];
        if (asn_rec_seed(c, &seed, &e)) {
            why(r, "a record has no seed");
            continue;
        }
        const char *h = asn_rec_heuristic_key(c, hk, sizeof hk);
        if (!h) {
            why(r, "a record has no heuristic");
            continue;
        }
        char key[4200], sk[32];
        snprintf(key, sizeof key, "%lld\x1f%s", seed, h);
        snprintf(sk, sizeof sk, "%lld", seed);
        if (json_object_get(pairs, key))
            why(r, "heuristic \"%s\" appears twice with seed %lld", asn_rec_heuristic_name(c) ? asn_rec_heuristic_name(c) : h, seed);
        json_object_set_new(pairs, key, json_true());
        json_object_set_new(seeds, sk, json_true());
        json_object_set_new(hs, h, json_true());
    }
    if (!ref && json_object_size(pairs) != json_object_size(seeds) * json_object_size(hs))
        why(r, "%zu candidates for %zu seeds x %zu heuristics: some (seed, heuristic) pairs are missing",
            json_object_size(pairs), json_object_size(seeds), json_object_size(hs));
    if (opts.expected_seeds >= 0 && (long)json_object_size(seeds) != opts.expected_seeds)
        why(r, "%lld distinct seeds, %ld expected", (long long)json_object_size(seeds), opts.expected_seeds);
    if (n_heuristics >= 0 && (int)json_object_size(hs) != n_heuristics)
        why(r, "%lld distinct heuristics, %d expected", (long long)json_object_size(hs), n_heuristics);
    json_decref(pairs);
    json_decref(seeds);
    json_decref(hs);
}

/* ---------------------------------------------------------------- replay */

/* Regenerates one candidate as gen-candidates made it; 1 if identical. */
static int replay(asn_model *m, asn_pool *pool, const json_t *c, char *msg, size_t cap)
{
    asn_err e;
    const json_t *st = json_object_get(c, "settings"), *h = json_object_get(c, "heuristic");
    asn_heuristic heur;
    if (asn_heuristic_init(&heur, json_string_value(json_object_get(h, "name")), json_object_get(h, "processors"), &e)) {
        snprintf(msg, cap, "heuristic: %s", e.msg);
        return 0;
    }
    asn_heuristic pc;
    int has_pc = json_object_get(c, "constraint") != NULL;
    if (has_pc && record_constraint(c, &pc, &e)) {
        snprintf(msg, cap, "constraint: %s", e.msg);
        asn_heuristic_clear(&heur);
        return 0;
    }
    const json_t *stops = json_object_get(st, "stop");
    const char **sv = asn_xcalloc(json_array_size(stops) + 1, sizeof *sv);
    for (size_t i = 0; i < json_array_size(stops); i++)
        sv[i] = json_string_value(json_array_get(stops, i));
    asn_gen_settings gs = {.min_new_tokens = (int)json_integer_value(json_object_get(st, "min_new_tokens")),
                           .max_new_tokens = (int)json_integer_value(json_object_get(st, "max_new_tokens")),
                           .stop = sv, .n_stop = (int)json_array_size(stops)};
    int32_t *sids = NULL;
    int *soff = NULL;
    if (asn_gen_stop_ids_from_json(json_object_get(st, "stop_token_ids"), asn_model_cfg(m)->n_vocab, &sids, &soff,
                                   &gs.n_stop_ids, &e)) {
        snprintf(msg, cap, "settings.stop_token_ids: %s", e.msg);
        free(sv);
        asn_heuristic_clear(&heur);
        return 0;
    }
    gs.stop_ids = sids, gs.stop_off = soff;
    int tmpl = asn_chat_from_name(json_string_value(json_object_get(st, "chat_template")) ? json_string_value(json_object_get(st, "chat_template")) : "none");
    const json_t *sys = json_object_get(c, "system");
    int32_t *ids = NULL;
    int n, ok = 0;
    asn_generator *g = NULL;
    if (tmpl < 0)
        snprintf(msg, cap, "unknown chat template in settings");
    else if (asn_gen_prompt_tokens(asn_model_vocab(m, &e), tmpl, json_is_string(sys) ? json_string_value(sys) : NULL,
                                   json_string_value(json_object_get(c, "prompt")), &ids, &n, &e) ||
             !(g = asn_generator_new(m, pool, 1, 0, &gs, &e)))
        snprintf(msg, cap, "%s", e.msg);
    else {
        asn_gen_job j = {.prompt_id = json_string_value(json_object_get(c, "prompt_id")), .prompt_tokens = ids, .n_prompt = n, .heuristic = &heur, .seed = (uint64_t)json_integer_value(json_object_get(c, "seed")), .constraint = has_pc ? &pc : NULL};
        if (asn_generate(g, &j, 1, NULL, NULL, &e)) {
            snprintf(msg, cap, "%s", e.msg);
        } else {
            const json_t *toks = json_object_get(c, "tokens");
            ok = (size_t)j.n_tokens == json_array_size(toks);
            for (int i = 0; ok && i < j.n_tokens; i++)
                ok = json_integer_value(json_array_get(toks, (size_t)i)) == j.tokens[i];
            if (!ok)
                snprintf(msg, cap, "regenerated tokens differ");
        }
        asn_gen_job_clear(&j);
    }
    asn_generator_free(g);
    free(ids);
    free(sv);
    free(sids), free(soff);
    asn_heuristic_clear(&heur);
    if (has_pc)
        asn_heuristic_clear(&pc);
    return ok;
}

/* The run: what main's steps share. */
typedef struct verify_ctx {
    int n_heuristics; /* in --heuristics; -1: not checked */
    asn_model *m;
    const asn_vocab *v;
    char model_sha[65];
    json_t *discarded, *picked, *mism;
    long prompts, kept, written, malformed;
    const char *first_sha;
    json_t *first_sha_owner; /* keeps first_sha alive */
    json_t *ids_seen;        /* heuristic ids computed (heuristic_id) */
} verify_ctx;

static void check_options(void)
{
    if (opts.replay < 0)
        asn_usage_error("--replay must be >= 0");
    if (opts.replay && !opts.model)
        asn_usage_error("--replay needs --model");
}

/* --heuristics (how many pipelines) and --model (vocabulary, digest). */
static void load_inputs(verify_ctx *g)
{
    asn_err e;
    g->n_heuristics = -1;
    if (opts.heuristics) {
        asn_heuristics *hs = asn_heuristics_load(opts.heuristics, &e);
        if (!hs)
            asn_fatal("%s", e.msg);
        g->n_heuristics = hs->n;
        asn_heuristics_free(hs);
    }
    if (opts.model) {
        if (!(g->m = asn_model_load(opts.model, &e)) || !(g->v = asn_model_vocab(g->m, &e)))
            asn_fatal("%s", e.msg);
        const char *s = asn_model_sha256(g->m, &e);
        if (!s)
            asn_fatal("%s", e.msg);
        snprintf(g->model_sha, sizeof g->model_sha, "%s", s);
    }
    g->first_sha = g->model_sha[0] ? g->model_sha : NULL;
    g->discarded = json_array();
    g->picked = json_array();
    g->mism = json_array();
    g->ids_seen = json_object();
}

/* The checks of one prompt's group; the reasons it is discarded in rs. */
static void check_prompt(verify_ctx *g, json_t *group, reasons *rs)
{
    size_t i;
    json_t *c;
    int ref = 1;
    json_array_foreach(group, i, c)
    {
        if (asn_rec_format(c) == ASN_REC_REFERENCE) {
            check_reference_record(c, rs);
            continue;
        }
        ref = 0;
        check_record(c, rs, &g->first_sha, g->ids_seen);
        if (!json_array_size(rs->list))
            check_constraint(c, rs);
        if (!g->first_sha_owner && !g->model_sha[0] && g->first_sha)
            g->first_sha_owner = json_incref(c); /* keeps first_sha alive */
        if (g->v && !json_array_size(rs->list) && !converted(c))
            check_text(c, g->v, rs);
    }
    check_group(group, rs, g->n_heuristics, ref);
}

/* Writes a kept group, and picks the records to replay. */
static void keep_group(verify_ctx *g, json_t *group, asn_rng_key key, long *seen)
{
    size_t i;
    json_t *c;
    g->kept++;
    json_array_foreach(group, i, c)
    {
        if (asn_jsonl_write(stdout, c))
            asn_write_failed(stdout, "-", errno);
        g->written++;
        /* reservoir sampling of the records to replay (counter RNG);
         * the research pipeline's records have no tokens to replay */
        if (opts.replay && asn_rec_format(c) == ASN_REC_ASN && !converted(c)) {
            (*seen)++;
            if ((long)json_array_size(g->picked) < opts.replay)
                json_array_append(g->picked, c);
            else {
                long k = (long)(asn_rng_uniform(key, (uint64_t)*seen, 0) * (double)*seen);
                if (k < opts.replay)
                    json_array_set(g->picked, (size_t)k, c);
            }
        }
    }
}

/* Reads the groups, checks them, writes the kept ones. */
static void check_all(verify_ctx *g, int nops, char **argv)
{
    asn_err e;
    char *def[] = {"-", NULL};
    asn_group_reader *gr = asn_group_open(nops ? argv + 1 : def, &e);
    if (!gr)
        asn_fatal("%s", e.msg);
    asn_group_on_file(gr, asn_note_record_format, NULL);
    json_t *group;
    long seen = 0;
    asn_rng_key key = asn_rng_key_make((uint64_t)opts.seed, "verify", "replay");
    int r;
    asn_catch_stop();
    while ((r = asn_group_next(gr, opts.skip_bad, &group, &e)) > 0) {
        asn_stop_point(g->written, "records");
        g->prompts++;
        reasons rs = {json_array()};
        check_prompt(g, group, &rs);
        const char *pid = asn_rec_prompt_key(json_array_get(group, 0));
        if (json_array_size(rs.list)) {
            long line;
            const char *file = asn_group_where(gr, 0, &line);
            char where[4200];
            snprintf(where, sizeof where, "%s:%ld", file ? file : "<stdin>", line);
            json_array_append_new(g->discarded,
                                  json_pack("{s:s,s:s,s:o}", "prompt_id", pid, "where", where, "reasons", rs.list));
            json_decref(group);
            continue;
        }
        json_decref(rs.list);
        keep_group(g, group, key, &seen);
        json_decref(group);
    }
    if (r < 0)
        asn_fatal("%s", e.msg);
    fflush(stdout);
    g->malformed = asn_group_skipped(gr);
    asn_group_close(gr);
}

/* --replay: regenerates the picked records. */
static void replay_picked(verify_ctx *g)
{
    if (!opts.replay || !json_array_size(g->picked))
        return;
    asn_pool *pool = asn_pool_new((int)opts.threads);
    size_t i;
    json_t *c;
    json_array_foreach(g->picked, i, c)
    {
        char msg[1200];
        if (!replay(g->m, pool, c, msg, sizeof msg))
            json_array_append_new(g->mism, json_pack("{s:O,s:s}", "id", json_object_get(c, "id"), "reason", msg));
    }
    asn_pool_free(pool);
}

/* The summary on stderr, and --report. */
static void summarize(const verify_ctx *g)
{
    fprintf(stderr, "verify: %ld prompt%s read, %zu discarded, %ld written (%ld record%s)", g->prompts,
            g->prompts == 1 ? "" : "s", json_array_size(g->discarded), g->kept, g->written,
            g->written == 1 ? "" : "s");
    if (g->malformed)
        fprintf(stderr, "; %ld malformed line%s skipped", g->malformed, g->malformed == 1 ? "" : "s");
    if (opts.replay)
        fprintf(stderr, "; replayed %zu, %zu differ", json_array_size(g->picked), json_array_size(g->mism));
    fputc('\n', stderr);
    for (size_t i = 0; i < json_array_size(g->discarded) && i < 10; i++) {
        json_t *d = json_array_get(g->discarded, i), *rl = json_object_get(d, "reasons");
        fprintf(stderr, "verify: %s: discarded prompt %s:", json_string_value(json_object_get(d, "where")),
                json_string_value(json_object_get(d, "prompt_id")));
        for (size_t k = 0; k < json_array_size(rl) && k < 3; k++)
            fprintf(stderr, "%s %s", k ? ";" : "", json_string_value(json_array_get(rl, k)));
        fputc('\n', stderr);
    }
    for (size_t i = 0; i < json_array_size(g->mism); i++)
        fprintf(stderr, "verify: replay of %s: %s\n",
                json_string_value(json_object_get(json_array_get(g->mism, i), "id")),
                json_string_value(json_object_get(json_array_get(g->mism, i), "reason")));
    if (opts.report) {
        json_t *rep = json_pack("{s:i,s:i,s:i,s:i,s:i,s:o,s:{s:i,s:o}}", "prompts_read", (int)g->prompts,
                                "prompts_discarded", (int)json_array_size(g->discarded), "prompts_written",
                                (int)g->kept, "records_written", (int)g->written, "malformed_lines",
                                (int)g->malformed, "discarded", json_incref(g->discarded), "replay", "checked",
                                (int)json_array_size(g->picked), "mismatches", json_incref(g->mism));
        FILE *f = asn_open_out(opts.report);
        asn_jsonl_write(f, rep);
        asn_close_out(f, opts.report);
        json_decref(rep);
    }
}

static void verify_free(verify_ctx *g)
{
    json_decref(g->discarded);
    json_decref(g->mism);
    json_decref(g->picked);
    json_decref(g->first_sha_owner);
    json_decref(g->ids_seen);
    asn_model_free(g->m);
}

int main(int argc, char **argv)
{
    int nops = asn_tool_parse(&tool, argc, argv);
    check_options();
    verify_ctx g = {0};
    load_inputs(&g);
    check_all(&g, nops, argv);
    replay_picked(&g);
    summarize(&g);
    int status = json_array_size(g.mism) ? 1 : 0;
    verify_free(&g);
    asn_close_out(stdout, "-");
    return status;
}
