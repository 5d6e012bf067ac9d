/* evaluate — answer accuracy of a model and its samplers on verifiable sets
 * (the research pipeline's benchmarks/gsm8k_*.py): `evaluate prompts` makes
 * the few-shot prompts of a test split, gen-candidates generates them under
 * each heuristic (learned samplers included), score-verifiable checks the
 * answers, and `evaluate` tabulates n, accuracy and Wilson's 95% interval per
 * heuristic and dataset. */
#include "asn/interval.h"
#include "asn/json.h"
#include "asn/sbuf.h"
#include "asn/tool.h"
#include "asn/verifiers.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The command line, as asn_tool_parse fills it. */
typedef struct evaluate_options {
    /* prompts */
    const char *dataset;
    const char *train;
    long shots;
    long shot_seed;
    int first_shots;
    long limit;
    const char *question_key;
    const char *answer_key;
    /* summary */
    const char *format;
    double z;
    /* both */
    const char *out;
} evaluate_options;

/* The options, with their defaults (the tables below point into it). */
static evaluate_options opts = {
    .shots = -1,
    .format = "tsv",
    .z = ASN_Z95,
    .out = "-",
};

/* ---------------------------------------------------------------- prompts */

/* How one dataset's records become few-shot examples. */
typedef struct dataset_format {
    const char *name;
    const char *question_key; /* the record's question */
    const char *answer_key;   /* the worked answer shown in the examples */
    const char *question_label;
    const char *answer_label;
    long default_shots;
} dataset_format;

/* The layouts of the reference's gsm8k_*.py (get_one_example) and the same
 * for MATH; 5 and 4 examples are the usual few-shot counts (the reference's
 * --num-shots default; Minerva's MATH prompt). */
static const dataset_format formats[] = {
    {.name = "gsm8k", .question_key = "question", .answer_key = "answer",
     .question_label = "Question: ", .answer_label = "\nAnswer:", .default_shots = 5},
    {.name = "math", .question_key = "problem", .answer_key = "solution",
     .question_label = "Problem: ", .answer_label = "\nSolution:", .default_shots = 4},
    {.name = "ifeval", .question_key = "prompt", .answer_key = NULL,
     .question_label = "", .answer_label = "", .default_shots = 0},
    {0},
};

static const asn_option prompt_options[] = {
    {"dataset", 'd', ASN_OPT_STRING, &opts.dataset, "NAME", "gsm8k, math or ifeval (required)"},
    {"train", 0, ASN_OPT_STRING, &opts.train, "FILE", "the train split the examples come from (JSONL)"},
    {"shots", 'k', ASN_OPT_INT, &opts.shots, "K", "examples before each question (default: 5 gsm8k, 4 math, 0 ifeval)"},
    {"shot-seed", 's', ASN_OPT_INT, &opts.shot_seed, "N", "seed of the choice of the examples"},
    {"first-shots", 0, ASN_OPT_FLAG, &opts.first_shots, NULL, "the first K train records instead, in file order (the reference's choice)"},
    {"num-questions", 'n', ASN_OPT_INT, &opts.limit, "N", "only the first N test records (0: all)"},
    {"question-key", 0, ASN_OPT_STRING, &opts.question_key, "FIELD", "the question's field (default: question, problem, prompt)"},
    {"answer-key", 0, ASN_OPT_STRING, &opts.answer_key, "FIELD", "the worked answer's field (default: answer, solution)"},
    {"output", 'o', ASN_OPT_STRING, &opts.out, "FILE", "write to FILE instead of stdout"},
    {0},
};

static const asn_tool prompt_tool = {
    "evaluate prompts", "-d DATASET [--train FILE] [OPTIONS] TEST.jsonl",
    "Make the few-shot prompt records of a test split for gen-candidates.",
    "Each test record (a JSON object per line) becomes one prompt record:\n"
    "  id            the record's \"id\" when it is a string, else DATASET-N (N:\n"
    "                its 1-based place among the test records)\n"
    "  prompt        the K examples, then the question, as below\n"
    "  dataset       DATASET, for score-verifiable\n"
    "  ground_truth  gsm8k: the record's answer (score-verifiable reads the\n"
    "                number after \"####\"); math: the record's \"answer\" when\n"
    "                it has one, else the inside of the last \\boxed{} of its\n"
    "                solution; ifeval: none (instruction_id_list and kwargs\n"
    "                are copied instead)\n"
    "Formats (Q: the question field, A: the answer field):\n"
    "  gsm8k   example \"Question: \" Q \"\\nAnswer: \" A; question\n"
    "          \"Question: \" Q \"\\nAnswer:\" (the reference's gsm8k_*.py)\n"
    "  math    example \"Problem: \" Q \"\\nSolution: \" A; question\n"
    "          \"Problem: \" Q \"\\nSolution:\"\n"
    "  ifeval  the prompt alone (no examples)\n"
    "and every example is followed by \"\\n\\n\". The prompt is the examples\n"
    "then the question, the same examples for every question.\n"
    "Choice of the K examples (from --train): the K train records with the\n"
    "smallest SHA-256 of the text \"SEED:LINE\" (SEED the --shot-seed in\n"
    "decimal, LINE the record's 1-based line number in the file, blank lines\n"
    "counted), in increasing order of that digest (hex, compared as text).\n"
    "With --first-shots: the first K records of --train in file order, as the\n"
    "reference takes them (it takes them from the test file itself: give it\n"
    "as --train too to reproduce that).\n"
    "A test or train record without a string question (or answer, in the\n"
    "examples) is an error naming FILE:LINE and the field.\n\n" ASN_EXIT_HELP,
    prompt_options,
};

/* A train record kept as a candidate example. */
typedef struct shot {
    char digest[65];
    long line;
    char *question, *answer;
} shot;

static int shot_cmp(const void *a, const void *b)
{
    const shot *x = a, *y = b;
    int c = strcmp(x->digest, y->digest);
    return c ? c : (x->line > y->line) - (x->line < y->line);
}

/* Field key of rec as a string, or fatal with PATH:LINE. */
static const char *need_string(const json_t *rec, const char *key, const char *path, long line)
{
    const char *s = NULL;
    asn_err e;
    if (asn_get_string(rec, key, 1, &s, &e))
        asn_fatal("%s:%ld: %s", path, line, e.msg);
    return s;
}

/* The examples text of --train (the K chosen records, each followed by a
 * blank line). */
static char *make_examples(const dataset_format *f, const char *qkey, const char *akey)
{
    asn_sbuf b = {0};
    if (opts.shots == 0) {
        asn_sbuf_adds(&b, "");
        return asn_sbuf_detach(&b, NULL);
    }
    asn_err e;
    asn_jsonl *r = asn_jsonl_open(opts.train, &e);
    if (!r)
        asn_fatal("%s", e.msg);
    shot *v = NULL;
    size_t n = 0, cap = 0;
    json_t *rec;
    int rc;
    while ((rc = asn_jsonl_next(r, &rec, &e)) == 1) {
        long line = asn_jsonl_lineno(r);
        const char *path = asn_jsonl_path(r);
        const char *q = need_string(rec, qkey, path, line), *a = need_string(rec, akey, path, line);
        if (opts.first_shots && n == (size_t)opts.shots) {
            json_decref(rec);
            continue;
        }
        asn_grow((void **)&v, &cap, n + 1, sizeof *v);
        shot *s = &v[n++];
        char key[64];
        int kn = snprintf(key, sizeof key, "%ld:%ld", opts.shot_seed, line);
        asn_sha256_hex(key, (size_t)kn, s->digest);
        s->line = line;
        s->question = asn_xstrdup(q);
        s->answer = asn_xstrdup(a);
        json_decref(rec);
    }
    if (rc < 0)
        asn_fatal("%s", e.msg);
    if (n < (size_t)opts.shots)
        asn_fatal("%s: %zu records, fewer than --shots %ld", asn_jsonl_path(r), n, opts.shots);
    asn_jsonl_close(r);
    if (!opts.first_shots)
        qsort(v, n, sizeof *v, shot_cmp);
    for (size_t i = 0; i < (size_t)opts.shots; i++)
        asn_sbuf_addf(&b, "%s%s%s %s\n\n", f->question_label, v[i].question, f->answer_label, v[i].answer);
    for (size_t i = 0; i < n; i++)
        free(v[i].question), free(v[i].answer);
    free(v);
    return asn_sbuf_detach(&b, NULL);
}

/* The MATH ground truth of a test record: "answer", else the inside of the
 * solution's last \boxed{}. */
static char *math_truth(const json_t *rec, const char *akey, const char *path, long line)
{
    const char *a = NULL;
    asn_err e;
    if (asn_get_string(rec, "answer", 0, &a, &e))
        asn_fatal("%s:%ld: %s", path, line, e.msg);
    if (a)
        return asn_xstrdup(a);
    const char *sol = need_string(rec, akey, path, line);
    char *boxed = asn_math_last_boxed(sol);
    char *in = boxed ? asn_math_remove_boxed(boxed) : NULL;
    free(boxed);
    if (!in)
        asn_fatal("%s:%ld: field \"%s\" has no \\boxed{} answer (nor is there an \"answer\")", path, line, akey);
    return in;
}

static int prompts_main(int argc, char **argv)
{
    int nops = asn_tool_parse(&prompt_tool, argc, argv);
    if (!opts.dataset)
        asn_usage_error("--dataset is required");
    const dataset_format *f = formats;
    while (f->name && strcmp(f->name, opts.dataset))
        f++;
    if (!f->name)
        asn_usage_error("--dataset must be gsm8k, math or ifeval, not \"%s\"", opts.dataset);
    if (nops != 1)
        asn_usage_error("one TEST.jsonl file is needed");
    if (opts.shots < 0)
        opts.shots = f->default_shots;
    if (opts.shots > 0 && !f->answer_key)
        asn_usage_error("--shots: %s prompts have no examples", f->name);
    if (opts.shots > 0 && !opts.train)
        asn_usage_error("--shots %ld needs --train FILE", opts.shots);
    if (opts.shots > 10000)
        asn_usage_error("--shots must be at most 10000");
    if (opts.limit < 0)
        asn_usage_error("--num-questions must be 0 or more");
    const char *qkey = opts.question_key ? opts.question_key : f->question_key;
    const char *akey = opts.answer_key ? opts.answer_key : f->answer_key;
    char *examples = make_examples(f, qkey, akey);

    asn_err e;
    asn_jsonl *r = asn_jsonl_open(argv[1], &e);
    if (!r)
        asn_fatal("%s", e.msg);
    FILE *out = asn_open_out(opts.out);
    json_t *rec;
    int rc = 0;
    long count = 0;
    asn_sbuf p = {0};
    while ((!opts.limit || count < opts.limit) && (rc = asn_jsonl_next(r, &rec, &e)) == 1) {
        long line = asn_jsonl_lineno(r);
        const char *path = asn_jsonl_path(r);
        count++;
        const char *q = need_string(rec, qkey, path, line);
        asn_sbuf_reset(&p);
        asn_sbuf_addf(&p, "%s%s%s%s", examples, f->question_label, q, f->answer_label);
        json_t *o = json_object();
        const json_t *id = json_object_get(rec, "id");
        if (json_is_string(id))
            json_object_set(o, "id", (json_t *)id);
        else
            json_object_set_new(o, "id", json_sprintf("%s-%ld", f->name, count));
        json_object_set_new(o, "prompt", json_string(asn_sbuf_str(&p)));
        json_object_set_new(o, "dataset", json_string(f->name));
        if (!strcmp(f->name, "gsm8k")) {
            json_object_set_new(o, "ground_truth", json_string(need_string(rec, akey, path, line)));
        } else if (!strcmp(f->name, "math")) {
            char *t = math_truth(rec, akey, path, line);
            json_object_set_new(o, "ground_truth", json_string(t));
            free(t);
        } else {
            const json_t *ids = json_object_get(rec, "instruction_id_list");
            if (!json_is_array(ids))
                asn_fatal("%s:%ld: field \"instruction_id_list\" must be a list, not %s", path, line,
                          ids ? asn_json_type_name(ids) : "missing");
            json_object_set(o, "instruction_id_list", (json_t *)ids);
            const json_t *kw = json_object_get(rec, "kwargs");
            if (kw)
                json_object_set(o, "kwargs", (json_t *)kw);
        }
        if (asn_jsonl_write(out, o))
            asn_write_failed(out, opts.out, errno);
        json_decref(o);
        json_decref(rec);
    }
    if (rc < 0)
        asn_fatal("%s", e.msg);
    asn_sbuf_release(&p);
    asn_jsonl_close(r);
    free(examples);
    asn_close_out(out, opts.out);
    return 0;
}

/* ---------------------------------------------------------------- summary */

static const asn_option options[] = {
    {"format", 0, ASN_OPT_STRING, &opts.format, "NAME", "tsv, markdown or json"},
    {"z", 0, ASN_OPT_DOUBLE, &opts.z, "Z", "normal quantile of the interval (1.959963984540054: 95%)"},
    {"output", 'o', ASN_OPT_STRING, &opts.out, "FILE", "write to FILE instead of stdout"},
    {0},
};

static const asn_tool tool = {
    "evaluate", "[OPTIONS] [SCORED.jsonl...]\n       evaluate prompts -d DATASET [--train FILE] [OPTIONS] TEST.jsonl",
    "Tabulate answer accuracy per heuristic and dataset, with Wilson's 95% interval.",
    "Reads score-verifiable's records (FILE - or none is stdin) and counts,\n"
    "per heuristic (\"heuristic\".name: learned samplers are heuristics too)\n"
    "and dataset (\"verifiable\".dataset, case folded and without an \"owner/\"\n"
    "part: gsm8k, math, ifeval), in order of first appearance:\n"
    "  n          records checked (verifiable_reward 0 or 1)\n"
    "  correct    records with verifiable_reward 1\n"
    "  accuracy   correct / n (a wrong or missing answer counts as wrong, as\n"
    "             in the reference's gsm8k_*.py)\n"
    "  ci_low, ci_high  Wilson's score interval of accuracy at --z (95%):\n"
    "             centre (p + z^2/2n) / (1 + z^2/n), half-width\n"
    "             z / (1 + z^2/n) sqrt(p(1-p)/n + z^2/4n^2), clamped to [0, 1];\n"
    "             it treats the n records as independent draws: with several\n"
    "             seeds per question it is narrower than an interval over\n"
    "             questions would be\n"
    "  no_answer  checked records whose answer could not be extracted\n"
    "             (gsm8k, math: \"verifiable\".extracted null)\n"
    "  unscored   records of a verifiable dataset left unchecked (a field the\n"
    "             check needs is missing: verifiable_reward null)\n"
    "  prompts    distinct prompt_id among the checked records\n"
    "Records of other datasets (\"verifiable\" null) are left out. Output:\n"
    "  tsv       a header line, then a row per group (numbers as Python's repr)\n"
    "  markdown  the same as a table, rates with 4 decimals\n"
    "  json      {\"z\", \"interval\": \"wilson\", \"rows\": [{heuristic, dataset,\n"
    "            n, correct, accuracy, ci_low, ci_high, no_answer, unscored,\n"
    "            prompts}]} (accuracy and bounds null when n is 0)\n"
    "A record without verifiable_reward (not scored), or with a value other\n"
    "than 0, 1 or null, is an error naming FILE:LINE and the field.\n"
    "See evaluate prompts --help for making the prompts, and\n"
    "pipelines/eval.mk for the whole evaluation.\n\n" ASN_EXIT_HELP,
    options,
};

/* One (heuristic, dataset) row. */
typedef struct group {
    char *heuristic, *dataset;
    long n, correct, no_answer, unscored;
    json_t *prompts; /* prompt_id -> true */
} group;

typedef struct tally {
    group *v;
    size_t n, cap;
} tally;

static group *group_of(tally *t, const char *h, const char *d)
{
    for (size_t i = 0; i < t->n; i++)
        if (!strcmp(t->v[i].heuristic, h) && !strcmp(t->v[i].dataset, d))
            return &t->v[i];
    asn_grow((void **)&t->v, &t->cap, t->n + 1, sizeof *t->v);
    group *g = &t->v[t->n++];
    memset(g, 0, sizeof *g);
    g->heuristic = asn_xstrdup(h);
    g->dataset = asn_xstrdup(d);
    g->prompts = json_object();
    return g;
}

/* Counts one record; -1 with e for a bad one. */
static int count_record(tally *t, const json_t *rec, asn_err *e)
{
    const json_t *vr = json_object_get(rec, "verifiable_reward");
    if (!vr)
        return asn_err_set(e, "field \"verifiable_reward\" is missing (run score-verifiable first)");
    const json_t *v = json_object_get(rec, "verifiable");
    if (json_is_null(v) && json_is_null(vr))
        return 0; /* not a verifiable dataset */
    const char *d = NULL, *h = NULL;
    if (!json_is_object(v))
        return asn_err_set(e, "field \"verifiable\" must be an object (score-verifiable without --no-detail), not %s",
                           v ? asn_json_type_name(v) : "missing");
    if (asn_get_string(v, "dataset", 1, &d, e))
        return asn_err_prefix(e, "field \"verifiable\"");
    const json_t *heur = json_object_get(rec, "heuristic");
    if (!json_is_object(heur))
        return asn_err_set(e, "field \"heuristic\" must be an object, not %s",
                           heur ? asn_json_type_name(heur) : "missing");
    if (asn_get_string(heur, "name", 1, &h, e))
        return asn_err_prefix(e, "field \"heuristic\"");
    /* the name as score-verifiable matches it: case folded, "owner/" left out */
    const char *slash = strrchr(d, '/');
    char name[64];
    snprintf(name, sizeof name, "%s", slash ? slash + 1 : d);
    for (char *c = name; *c; c++)
        *c = (char)tolower((unsigned char)*c);
    group *g = group_of(t, h, name);
    if (json_is_null(vr)) {
        g->unscored++;
        return 0;
    }
    if (!json_is_integer(vr) || (json_integer_value(vr) != 0 && json_integer_value(vr) != 1))
        return asn_err_set(e, "field \"verifiable_reward\" must be 0, 1 or null");
    g->n++;
    g->correct += json_integer_value(vr);
    if (strcmp(d, "ifeval") && json_is_null(json_object_get(v, "extracted")))
        g->no_answer++;
    const char *pid = NULL;
    if (asn_get_string(rec, "prompt_id", 0, &pid, e))
        return -1;
    if (pid)
        json_object_set_new(g->prompts, pid, json_true());
    return 0;
}

/* A number as Python's repr, or "null" / the empty cell. */
static void put_num(asn_sbuf *b, int have, double x, const char *none)
{
    char buf[32];
    if (!have) {
        asn_sbuf_adds(b, none);
        return;
    }
    asn_fmt_double(buf, x);
    asn_sbuf_adds(b, buf);
}

/* A cell of the markdown table: "|" escaped, newlines as spaces. */
static void put_md(asn_sbuf *b, const char *s)
{
    for (; *s; s++) {
        if (*s == '|')
            asn_sbuf_adds(b, "\\|");
        else if (*s == '\n' || *s == '\r' || *s == '\t')
            asn_sbuf_addc(b, ' ');
        else
            asn_sbuf_addc(b, *s);
    }
}

/* A TSV cell: tab, newline and backslash escaped as \t, \n, \\. */
static void put_tsv(asn_sbuf *b, const char *s)
{
    for (; *s; s++) {
        if (*s == '\t')
            asn_sbuf_adds(b, "\\t");
        else if (*s == '\n')
            asn_sbuf_adds(b, "\\n");
        else if (*s == '\r')
            asn_sbuf_adds(b, "\\r");
        else if (*s == '\\')
            asn_sbuf_adds(b, "\\\\");
        else
            asn_sbuf_addc(b, *s);
    }
}

static void write_table(const tally *t, asn_sbuf *b, int md)
{
    static const char *cols[] = {"heuristic", "dataset", "n", "correct", "accuracy", "ci_low",
                                 "ci_high", "no_answer", "unscored", "prompts", NULL};
    const char *sep = md ? " | " : "\t";
    if (md)
        asn_sbuf_adds(b, "| ");
    for (int i = 0; cols[i]; i++)
        asn_sbuf_addf(b, "%s%s", i ? sep : "", cols[i]);
    asn_sbuf_adds(b, md ? " |\n|---|---|--:|--:|--:|--:|--:|--:|--:|--:|\n" : "\n");
    for (size_t i = 0; i < t->n; i++) {
        const group *g = &t->v[i];
        double lo = 0, hi = 0, acc = g->n ? (double)g->correct / (double)g->n : 0;
        int have = g->n > 0 && !asn_wilson_interval(g->correct, g->n, opts.z, &lo, &hi);
        if (md) {
            asn_sbuf_adds(b, "| ");
            put_md(b, g->heuristic);
            asn_sbuf_adds(b, sep);
            put_md(b, g->dataset);
            asn_sbuf_addf(b, " | %ld | %ld | ", g->n, g->correct);
            if (have)
                asn_sbuf_addf(b, "%.4f | %.4f | %.4f", acc, lo, hi);
            else
                asn_sbuf_adds(b, "- | - | -");
        } else {
            put_tsv(b, g->heuristic);
            asn_sbuf_adds(b, sep);
            put_tsv(b, g->dataset);
            asn_sbuf_addf(b, "\t%ld\t%ld\t", g->n, g->correct);
            put_num(b, have, acc, "");
            asn_sbuf_adds(b, sep);
            put_num(b, have, lo, "");
            asn_sbuf_adds(b, sep);
            put_num(b, have, hi, "");
        }
        asn_sbuf_addf(b, "%s%ld%s%ld%s%zu%s\n", sep, g->no_answer, sep, g->unscored, sep,
                      json_object_size(g->prompts), md ? " |" : "");
    }
}

static json_t *json_num(int have, double x)
{
    return have ? json_real(x) : json_null();
}

static json_t *table_json(const tally *t)
{
    json_t *o = json_object(), *rows = json_array();
    json_object_set_new(o, "z", json_real(opts.z));
    json_object_set_new(o, "interval", json_string("wilson"));
    for (size_t i = 0; i < t->n; i++) {
        const group *g = &t->v[i];
        double lo = 0, hi = 0, acc = g->n ? (double)g->correct / (double)g->n : 0;
        int have = g->n > 0 && !asn_wilson_interval(g->correct, g->n, opts.z, &lo, &hi);
        json_t *r = json_object();
        json_object_set_new(r, "heuristic", json_string(g->heuristic));
        json_object_set_new(r, "dataset", json_string(g->dataset));
        json_object_set_new(r, "n", json_integer(g->n));
        json_object_set_new(r, "correct", json_integer(g->correct));
        json_object_set_new(r, "accuracy", json_num(have, acc));
        json_object_set_new(r, "ci_low", json_num(have, lo));
        json_object_set_new(r, "ci_high", json_num(have, hi));
        json_object_set_new(r, "no_answer", json_integer(g->no_answer));
        json_object_set_new(r, "unscored", json_integer(g->unscored));
        json_object_set_new(r, "prompts", json_integer((json_int_t)json_object_size(g->prompts)));
        json_array_append_new(rows, r);
    }
    json_object_set_new(o, "rows", rows);
    return o;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "prompts"))
        return prompts_main(argc - 1, argv + 1);
    int nops = asn_tool_parse(&tool, argc, argv);
    int fmt = !strcmp(opts.format, "tsv") ? 0 : !strcmp(opts.format, "markdown") ? 1 : !strcmp(opts.format, "json") ? 2 : -1;
    if (fmt < 0)
        asn_usage_error("--format must be tsv, markdown or json, not \"%s\"", opts.format);
    if (!(opts.z > 0 && opts.z < 100))
        asn_usage_error("--z must be between 0 and 100");
    tally t = {0};
    char *stdin_only[] = {"-", NULL};
    char **files = nops ? argv + 1 : stdin_only;
    int nfiles = nops ? nops : 1;
    for (int i = 0; i < nfiles; i++) {
        asn_err e;
        asn_jsonl *r = asn_jsonl_open(files[i], &e);
        if (!r)
            asn_fatal("%s", e.msg);
        json_t *rec;
        int rc;
        while ((rc = asn_jsonl_next(r, &rec, &e)) == 1) {
            if (count_record(&t, rec, &e))
                asn_fatal("%s:%ld: %s", asn_jsonl_path(r), asn_jsonl_lineno(r), e.msg);
            json_decref(rec);
        }
        if (rc < 0)
            asn_fatal("%s", e.msg);
        asn_jsonl_close(r);
    }
    FILE *out = asn_open_out(opts.out);
    asn_sbuf b = {0};
    if (fmt == 2) {
        json_t *o = table_json(&t);
        char *s = asn_json_dumps(o, 0);
        asn_sbuf_adds(&b, s);
        asn_sbuf_addc(&b, '\n');
        free(s);
        json_decref(o);
    } else {
        write_table(&t, &b, fmt == 1);
    }
    if (b.len && fwrite(b.buf, 1, b.len, out) != b.len)
        asn_write_failed(out, opts.out, errno);
    asn_sbuf_release(&b);
    asn_close_out(out, opts.out);
    for (size_t i = 0; i < t.n; i++) {
        free(t.v[i].heuristic);
        free(t.v[i].dataset);
        json_decref(t.v[i].prompts);
    }
    free(t.v);
    return 0;
}
