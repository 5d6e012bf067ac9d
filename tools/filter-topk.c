/* filter-topk — the reference's scoring and filtering (its process_and_score.py):
 * globally z-normalized quality and diversity, verifiable filtering, the
 * (a, b, c) grid of combined scores, and the top k of each (prompt, seed)
 * group; or chosen/rejected preference pairs. */
#include "asn/json.h"
#include "asn/records.h"
#include "asn/scores.h"
#include "asn/record_loop.h"
#include "asn/tool.h"
#include "asn/yaml.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The command line, as asn_tool_parse fills it. */
typedef struct filter_topk_options {
    const char *group;
    const char *sort_key;
    const char *weights;
    long top_k;
    int ignore_verifiable;
    int pairs;
    int skip_bad;
    int progress;
} filter_topk_options;

/* The options, with their defaults (the table below points into it). */
static filter_topk_options opts = {
    .group = "seed",
    .top_k = 5,
};

static const asn_option options[] = {
    {"top-k", 'k', ASN_OPT_INT, &opts.top_k, "K", "records kept per group (0: all)"},
    {"sort-key", 0, ASN_OPT_STRING, &opts.sort_key, "KEY", "rank by this combined score a{a}_b{b}_c{c} (default a0.1_b0.9_c0.9)"},
    {"weights", 'w', ASN_OPT_STRING, &opts.weights, "FILE", "rank by weights from YAML {quality, diversity, verifiable, reward} instead"},
    {"group", 0, ASN_OPT_STRING, &opts.group, "BY", "seed: groups are (prompt, seed); prompt: all seeds of a prompt"},
    {"ignore-verifiable-filtering", 0, ASN_OPT_FLAG, &opts.ignore_verifiable, NULL, "keep records whose verifiable reward is not 1"},
    {"pairs", 0, ASN_OPT_FLAG, &opts.pairs, NULL, "write chosen/rejected preference pairs (best vs worst of each group) instead"},
    ASN_OPT_SKIP_BAD(&opts.skip_bad),
    {"progress", 0, ASN_OPT_FLAG, &opts.progress, NULL, "show progress even when stderr is not a terminal"},
    {0},
};

static const asn_tool tool = {
    "filter-topk", "[OPTIONS] [FILE...]",
    "Score records as the reference does, keep the top k of each (prompt, seed) group, or write preference pairs.",
    "Input: scored candidate records, asn's or the research pipeline's (detected\n"
    "per file; a file of the latter is named on stderr), a prompt's records\n"
    "anywhere in the input. The input is read twice (standard input is first copied to a\n"
    "temporary file). Read: \"prompt_id\" (else \"prompt\") and \"seed\" to group;\n"
    "quality = \"quality\".\"bt\", else \"bradley_terry_rating\"; diversity =\n"
    "\"diversity\".\"embedding_entropy\" of records whose checks.diversity (the\n"
    "reference's incidence_vector.check_diversity) is true; \"verifiable_reward\".\n"
    "\n"
    "1. Over the whole input: mean and population standard deviation of every\n"
    "   quality and of every such diversity (a deviation below 1e-6 counts as\n"
    "   1). A record without a value gets the mean (normalized value 0).\n"
    "2. A group with any verifiable_reward keeps only records whose reward is 1\n"
    "   (not with --ignore-verifiable-filtering); a group left empty is skipped\n"
    "   with a warning.\n"
    "3. For every a in {0.1 0.3 0.5 0.7 0.9} (diversity), b in {0.5 0.6 0.7 0.8\n"
    "   0.9} (quality), c in {0.1 0.3 0.5 0.7 0.9} (correctness):\n"
    "     (b q + a d [checks.diversity] + c [group with verifiable rewards])\n"
    "     / (b + a [checks.diversity] + c [group with verifiable rewards])\n"
    "   under the key \"a{a}_b{b}_c{c}\" of combined_scores.\n"
    "4. The group sorted by the --sort-key score (or the --weights one), best\n"
    "   first, ties in input order; the first --top-k are written, each with\n"
    "     score: {quality, diversity, verifiable, weights, final, combined_scores}\n"
    "     rank:  1 for the best of its group\n"
    "   (quality and diversity normalized, null when not used; verifiable 1 in\n"
    "   a group with verifiable rewards, else null; weights {quality,\n"
    "   diversity, verifiable} = b, a, c of the ranking).\n"
    "With --weights, the YAML mapping {quality, diversity, verifiable, reward}\n"
    "(numbers >= 0, quality > 0, absent: 0) gives b, a, c and a fourth weight r\n"
    "for \"reward\" (score-reward's): normalized over the whole input as quality\n"
    "is (step 1; a record without one gets the mean), added last as\n"
    "  (b q + a d [..] + c [..] + r z_reward) / (b + a [..] + c [..] + r)\n"
    "when r > 0, and then written as score.reward and weights.reward.\n"
    "With --pairs, each group of two or more records with different scores\n"
    "gives {prompt, chosen, rejected, chosen_id, rejected_id, margin}: its best\n"
    "and its worst generation and the difference of their final scores (the\n"
    "prompt/chosen/rejected columns of TRL's and SimPO's preference data).\n",
    options,
};

/* The reference's weight grids (process_and_score.py). */
static const double A_GRID[] = {0.1, 0.3, 0.5, 0.7, 0.9}; /* diversity */
static const double B_GRID[] = {0.5, 0.6, 0.7, 0.8, 0.9}; /* quality */
static const double C_GRID[] = {0.1, 0.3, 0.5, 0.7, 0.9}; /* correctness */
enum { NA = 5, NB = 5, NC = 5, NGRID = NA * NB * NC };
/* A standard deviation below this counts as 1 (the reference's rule). */
#define MIN_STD 1e-6

static char grid_key[NGRID][100]; /* in the reference's order: b, then a, then c */
static double grid_w[NGRID][3];  /* a, b, c */

static void make_grid(void)
{
    int k = 0;
    for (int ib = 0; ib < NB; ib++)
        for (int ia = 0; ia < NA; ia++)
            for (int ic = 0; ic < NC; ic++, k++) {
                char a[32], b[32], c[32];
                asn_fmt_double(a, A_GRID[ia]), asn_fmt_double(b, B_GRID[ib]), asn_fmt_double(c, C_GRID[ic]);
                snprintf(grid_key[k], sizeof grid_key[k], "a%s_b%s_c%s", a, b, c);
                grid_w[k][0] = A_GRID[ia], grid_w[k][1] = B_GRID[ib], grid_w[k][2] = C_GRID[ic];
            }
}

/* ------------------------------------------------------------- fields */

typedef struct fields {
    int has_q, div, has_d, has_v, has_r;
    double q, d, v, r;
    long long seed;
} fields;

/* A number or null/absent (*has = 0); anything else is an error. */
static int opt_number(const json_t *obj, const char *key, const char *shown, int *has, double *out, asn_err *e)
{
    const json_t *v = json_object_get(obj, key);
    *has = 0;
    if (!v || json_is_null(v))
        return 0;
    if (json_is_boolean(v)) { /* Python: True == 1.0 */
        *has = 1, *out = json_is_true(v);
        return 0;
    }
    if (asn_json_number(v, out))
        return asn_err_set(e, "field \"%s\" must be a number or null, not %s", shown, asn_json_type_name(v));
    *has = 1;
    return 0;
}

static int read_fields(const json_t *rec, fields *f, asn_err *e)
{
    memset(f, 0, sizeof *f);
    if (!strcmp(opts.group, "seed") && asn_rec_seed(rec, &f->seed, e))
        return -1;
    const json_t *q = json_object_get(rec, "quality");
    if (q && !json_is_null(q) && !json_is_object(q))
        return asn_err_set(e, "field \"quality\" must be an object, not %s", asn_json_type_name(q));
    if (json_is_object(q) && json_object_get(q, "bt")) {
        if (opt_number(q, "bt", "quality.bt", &f->has_q, &f->q, e))
            return -1;
    } else if (opt_number(rec, "bradley_terry_rating", "bradley_terry_rating", &f->has_q, &f->q, e)) {
        return -1;
    }
    if ((f->div = asn_rec_checks(rec).diversity)) {
        const json_t *d = json_object_get(rec, "diversity");
        if (d && !json_is_null(d) && !json_is_object(d))
            return asn_err_set(e, "field \"diversity\" must be an object or null, not %s", asn_json_type_name(d));
        if (json_is_object(d) &&
            opt_number(d, "embedding_entropy", "diversity.embedding_entropy", &f->has_d, &f->d, e))
            return -1;
    }
    if (opt_number(rec, "verifiable_reward", "verifiable_reward", &f->has_v, &f->v, e))
        return -1;
    if (opt_number(rec, "reward", "reward", &f->has_r, &f->r, e))
        return -1;
    if (opts.pairs) {
        const char *s;
        if (asn_get_string(rec, "prompt", 1, &s, e) || asn_get_string(rec, "generation", 1, &s, e))
            return -1;
    }
    return 0;
}

/* ------------------------------------------------------- input, twice */

/* Standard input, when read, must be read twice: a pipe is copied to an
 * unlinked temporary file put in its place. *start: where to rewind to. */
static void make_stdin_rereadable(off_t *start)
{
    struct stat st;
    if (fstat(0, &st) == 0 && S_ISREG(st.st_mode) && (*start = lseek(0, 0, SEEK_CUR)) >= 0)
        return;
    const char *dir = getenv("TMPDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/filter-topk.XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0)
        asn_fatal("cannot create a temporary file in %s: %s", dir && *dir ? dir : "/tmp", strerror(errno));
    unlink(path);
    char *buf = asn_xmalloc(1 << 20);
    ssize_t n;
    while ((n = read(0, buf, 1 << 20)) != 0) {
        if (n < 0) {
            if (errno == EINTR)
                continue;
            asn_fatal("<stdin>: read error: %s", strerror(errno));
        }
        for (ssize_t w = 0; w < n;) {
            ssize_t k = write(fd, buf + w, (size_t)(n - w));
            if (k < 0 && errno != EINTR)
                asn_fatal("temporary copy of standard input: %s", strerror(errno));
            w += k > 0 ? k : 0;
        }
    }
    free(buf);
    if (dup2(fd, 0) < 0 || lseek(0, 0, SEEK_SET) < 0)
        asn_fatal("temporary copy of standard input: %s", strerror(errno));
    close(fd);
    *start = 0;
}

/* ------------------------------------------------------------ scoring */

typedef struct stats {
    long n;
    double mean, m2; /* Welford */
} stats;

static void stats_add(stats *s, double x)
{
    s->n++;
    double d = x - s->mean;
    s->mean += d / (double)s->n;
    s->m2 += d * (x - s->mean);
}

/* mean and population deviation (below MIN_STD: 1); no values: 0 and 1 */
static void stats_final(const stats *s, double *mean, double *std)
{
    *mean = s->n ? s->mean : 0;
    double sd = s->n ? sqrt(s->m2 / (double)s->n) : 0;
    *std = sd > MIN_STD ? sd : 1.0;
}

typedef struct item {
    size_t idx; /* in the prompt group */
    double zq, zd, zr, final;
    int div, ver;
    double comb[NGRID];
} item;

/* The reference's combined score, its operations in its order. */
static double combine(double zq, int div, double zd, int ver, double a, double b, double c)
{
    double total = 0, divisor = 0;
    total += b * zq;
    divisor += b;
    if (div) {
        total += a * zd;
        divisor += a;
    }
    if (ver) {
        total += c * 1.0;
        divisor += c;
    }
    return divisor > 0 ? total / divisor : 0;
}

/* combine with the reward term added last (--weights reward > 0). */
static double with_reward(double zq, int div, double zd, int ver, const double *w, double zr)
{
    double total = 0, divisor = 0;
    total += w[1] * zq;
    divisor += w[1];
    if (div) {
        total += w[0] * zd;
        divisor += w[0];
    }
    if (ver) {
        total += w[2] * 1.0;
        divisor += w[2];
    }
    total += w[3] * zr;
    divisor += w[3];
    return total / divisor;
}

static int by_final(const void *x, const void *y)
{
    const item *a = x, *b = y;
    if (a->final != b->final)
        return a->final > b->final ? -1 : 1;
    return (a->idx > b->idx) - (a->idx < b->idx);
}

typedef struct run {
    double qmean, qstd, dmean, dstd, rmean, rstd;
    double w[4];   /* a (diversity), b (quality), c (verifiable), r (reward) of the ranking */
    int key;       /* grid index of the sort key, -1 with --weights */
    long written, groups, emptied, no_pair;
    char first_emptied[600]; /* where the first group left out is, for the closing line */
} run;

static json_t *num_or_null(int has, double x) { return has && isfinite(x) ? json_real(x) : json_null(); }

static int write_out(json_t *v)
{
    int rc = asn_jsonl_write(stdout, v);
    json_decref(v);
    return rc;
}

/* Scores, ranks and writes one (prompt, seed) group: records `members`
 * (indices into recs) with their fields. */
static void do_group(run *R, json_t *recs, const size_t *members, const fields *fs, size_t n,
                     asn_group_reader *gr)
{
    int ver = 0;
    for (size_t i = 0; i < n; i++)
        ver |= fs[members[i]].has_v;
    item *it = asn_xmalloc((n + 1) * sizeof *it);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        const fields *f = &fs[members[i]];
        if (ver && !opts.ignore_verifiable && !(f->has_v && f->v == 1.0))
            continue;
        item *x = &it[m++];
        x->idx = members[i];
        x->zq = ((f->has_q ? f->q : R->qmean) - R->qmean) / R->qstd;
        x->div = f->div;
        x->zd = f->div ? ((f->has_d ? f->d : R->dmean) - R->dmean) / R->dstd : 0;
        x->zr = ((f->has_r ? f->r : R->rmean) - R->rmean) / R->rstd;
        x->ver = ver;
        for (int k = 0; k < NGRID; k++)
            x->comb[k] = combine(x->zq, x->div, x->zd, ver, grid_w[k][0], grid_w[k][1], grid_w[k][2]);
        x->final = R->key >= 0 ? x->comb[R->key] : combine(x->zq, x->div, x->zd, ver, R->w[0], R->w[1], R->w[2]);
        if (R->key < 0 && R->w[3] > 0) /* the reward term, last */
            x->final = with_reward(x->zq, x->div, x->zd, ver, R->w, x->zr);
    }
    R->groups++;
    if (!m) {
        long line;
        const char *file = asn_group_where(gr, members[0], &line);
        const char *p = asn_rec_prompt_key(json_array_get(recs, members[0]));
        char seed[40] = "";
        if (!strcmp(opts.group, "seed"))
            snprintf(seed, sizeof seed, " seed %lld", fs[members[0]].seed);
        if (!R->emptied++)
            snprintf(R->first_emptied, sizeof R->first_emptied, "prompt \"%.50s\"%s, %s:%ld", p, seed, file, line);
        free(it);
        return;
    }
    qsort(it, m, sizeof *it, by_final);
    if (opts.pairs) {
        if (m < 2 || !(it[0].final > it[m - 1].final)) {
            R->no_pair++;
        } else {
            json_t *best = json_array_get(recs, it[0].idx), *worst = json_array_get(recs, it[m - 1].idx);
            json_t *pair = json_object();
            json_object_set(pair, "prompt", json_object_get(best, "prompt"));
            json_object_set(pair, "chosen", json_object_get(best, "generation"));
            json_object_set(pair, "rejected", json_object_get(worst, "generation"));
            const json_t *ci = json_object_get(best, "id"), *ri = json_object_get(worst, "id");
            json_object_set_new(pair, "chosen_id", json_is_string(ci) ? json_copy((json_t *)ci) : json_null());
            json_object_set_new(pair, "rejected_id", json_is_string(ri) ? json_copy((json_t *)ri) : json_null());
            json_object_set_new(pair, "margin", json_real(it[0].final - it[m - 1].final));
            if (write_out(pair))
                asn_write_failed(stdout, "-", errno);
            R->written++;
        }
        free(it);
        return;
    }
    size_t keep = opts.top_k > 0 && (size_t)opts.top_k < m ? (size_t)opts.top_k : m;
    json_t *weights = json_pack("{s:f,s:f,s:f}", "quality", R->w[1], "diversity", R->w[0], "verifiable", R->w[2]);
    if (R->w[3] > 0)
        json_object_set_new(weights, "reward", json_real(R->w[3]));
    for (size_t k = 0; k < keep; k++) {
        const item *x = &it[k];
        json_t *rec = json_array_get(recs, x->idx), *sc = json_object(), *cs = json_object();
        json_object_set_new(sc, "quality", json_real(x->zq));
        json_object_set_new(sc, "diversity", num_or_null(x->div, x->zd));
        json_object_set_new(sc, "verifiable", x->ver ? json_real(1.0) : json_null());
        if (R->w[3] > 0)
            json_object_set_new(sc, "reward", json_real(x->zr));
        json_object_set(sc, "weights", weights);
        json_object_set_new(sc, "final", json_real(x->final));
        for (int g = 0; g < NGRID; g++)
            json_object_set_new(cs, grid_key[g], json_real(x->comb[g]));
        json_object_set_new(sc, "combined_scores", cs);
        json_object_set_new(rec, "score", sc);
        json_object_set_new(rec, "rank", json_integer((json_int_t)k + 1));
        if (asn_jsonl_write(stdout, rec))
            asn_write_failed(stdout, "-", errno);
        R->written++;
    }
    json_decref(weights);
    free(it);
}

/* ---------------------------------------------------------------- main */

static void read_weights(run *R)
{
    asn_err e;
    asn_yaml *y = asn_yaml_load(opts.weights, &e);
    if (!y)
        asn_fatal("%s", e.msg);
    json_t *root = asn_yaml_root(y);
    char where[4200];
    /* the weighed scores of asn/scores.h; R->w keeps them in this order */
    static const char *slot[4] = {"diversity", "quality", "verifiable", "reward"};
    char names[256] = "";
    for (int i = 0; i < asn_n_score_fields; i++)
        if (asn_score_fields[i].weighed)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", names[0] ? ", " : "",
                     asn_score_fields[i].name);
    if (!json_is_object(root))
        asn_fatal("%s: the weights must be a mapping {%s}", asn_yaml_where(y, root, where, sizeof where), names);
    const char *k;
    json_t *v;
    json_object_foreach(root, k, v) {
        const asn_score_field *sf = asn_score_field_named(k);
        int i = 0;
        while (sf && sf->weighed && i < 4 && strcmp(k, slot[i]))
            i++;
        if (!sf || !sf->weighed || i == 4)
            asn_fatal("%s: unknown key \"%s\" (the weights are %s)", asn_yaml_where(y, v, where, sizeof where), k,
                      names);
        double x;
        if (asn_json_number(v, &x) || !(x >= 0) || !isfinite(x))
            asn_fatal("%s: %s must be a number >= 0", asn_yaml_where(y, v, where, sizeof where), k);
        R->w[i] = x;
    }
    if (!(R->w[1] > 0))
        asn_fatal("%s: quality must be > 0 (every record has a quality term)", opts.weights);
    asn_yaml_free(y);
}

static void check_options(void)
{
    if (strcmp(opts.group, "seed") && strcmp(opts.group, "prompt"))
        asn_usage_error("--group must be seed or prompt, not \"%s\"", opts.group);
    if (opts.top_k < 0)
        asn_usage_error("--top-k must be >= 0");
    if (opts.sort_key && opts.weights)
        asn_usage_error("--sort-key and --weights are alternatives");
}

/* The weights of the final score: --weights, or a combined score of the
 * grid (--sort-key). */
static void choose_weights(run *R)
{
    make_grid();
    R->key = -1;
    if (opts.weights) {
        read_weights(R);
        return;
    }
    const char *key = opts.sort_key ? opts.sort_key : "a0.1_b0.9_c0.9";
    for (int k = 0; k < NGRID; k++)
        if (!strcmp(grid_key[k], key))
            R->key = k;
    if (R->key < 0)
        asn_usage_error("--sort-key \"%s\" is not a combined score: a{a}_b{b}_c{c} with a, c in 0.1 0.3 "
                        "0.5 0.7 0.9 and b in 0.5 0.6 0.7 0.8 0.9 (as a0.1_b0.9_c0.9)", key);
    memcpy(R->w, grid_w[R->key], sizeof grid_w[R->key]);
}

/* The input files, read twice (standard input too). */
typedef struct inputs {
    char **files;
    int uses_stdin;
    off_t start; /* of standard input */
    long skipped;
} inputs;

static void open_inputs(inputs *in, int nops, char **argv)
{
    static char *def[] = {"-", NULL};
    in->files = nops ? argv + 1 : def;
    for (char **f = in->files; *f; f++)
        in->uses_stdin |= !strcmp(*f, "-");
    if (in->uses_stdin)
        make_stdin_rereadable(&in->start);
}

/* Pass 1: every record checked; the normalization statistics. */
static void normalize(run *R, inputs *in)
{
    asn_err e;
    stats sq = {0}, sd = {0}, sr = {0};
    asn_group_reader *gr = asn_group_open(in->files, &e);
    if (!gr)
        asn_fatal("%s", e.msg);
    asn_group_on_file(gr, asn_note_record_format, NULL);
    json_t *recs;
    int r;
    while ((r = asn_group_next(gr, opts.skip_bad, &recs, &e)) > 0) {
        size_t i;
        json_t *rec;
        json_array_foreach(recs, i, rec) {
            fields f;
            if (read_fields(rec, &f, &e)) {
                long line;
                const char *file = asn_group_where(gr, i, &line);
                if (!opts.skip_bad) {
                    json_decref(recs);
                    asn_fatal("%s:%ld: %s", file, line, e.msg);
                }
                asn_warn("%s:%ld: %s", file, line, e.msg);
                in->skipped++;
                continue;
            }
            if (f.has_q)
                stats_add(&sq, f.q);
            if (f.div && f.has_d)
                stats_add(&sd, f.d);
            if (f.has_r)
                stats_add(&sr, f.r);
        }
        json_decref(recs);
    }
    if (r < 0)
        asn_fatal("%s", e.msg);
    in->skipped += asn_group_skipped(gr);
    asn_group_close(gr);
    stats_final(&sq, &R->qmean, &R->qstd);
    stats_final(&sd, &R->dmean, &R->dstd);
    stats_final(&sr, &R->rmean, &R->rstd);
}

/* Pass 2: groups scored, ranked, written. */
static void rank_all(run *R, const inputs *in)
{
    asn_err e;
    if (in->uses_stdin) {
        if (fseek(stdin, in->start, SEEK_SET))
            asn_fatal("<stdin>: cannot read it again: %s", strerror(errno));
        clearerr(stdin);
    }
    asn_group_reader *gr = asn_group_open(in->files, &e);
    if (!gr)
        asn_fatal("%s", e.msg);
    asn_progress *prog = asn_progress_new("records", 0, opts.progress);
    asn_catch_stop();
    size_t cap = 0;
    fields *fs = NULL;
    size_t *members = NULL, *sub_of = NULL;
    long long *seeds = NULL;
    json_t *recs;
    int r;
    while ((r = asn_group_next(gr, opts.skip_bad, &recs, &e)) > 0) {
        size_t n = json_array_size(recs), i;
        if (n > cap) {
            cap = n;
            fs = asn_xrealloc(fs, cap * sizeof *fs);
            members = asn_xrealloc(members, cap * sizeof *members);
            sub_of = asn_xrealloc(sub_of, cap * sizeof *sub_of);
            seeds = asn_xrealloc(seeds, cap * sizeof *seeds);
        }
        /* groups by seed (or one), in order of first appearance */
        size_t n_sub = 0;
        for (i = 0; i < n; i++) {
            asn_err fe;
            sub_of[i] = (size_t)-1;
            if (read_fields(json_array_get(recs, i), &fs[i], &fe))
                continue; /* reported in pass 1 */
            size_t s = 0;
            while (s < n_sub && seeds[s] != fs[i].seed)
                s++;
            if (s == n_sub)
                seeds[n_sub++] = fs[i].seed;
            sub_of[i] = s;
        }
        for (size_t s = 0; s < n_sub; s++) {
            size_t m = 0;
            for (i = 0; i < n; i++)
                if (sub_of[i] == s)
                    members[m++] = i;
            do_group(R, recs, members, fs, m, gr);
        }
        asn_progress_add(prog, (long)n);
        json_decref(recs);
        asn_stop_point(R->written, opts.pairs ? "pairs" : "records");
    }
    asn_progress_done(prog);
    if (r < 0)
        asn_fatal("%s", e.msg);
    asn_group_close(gr);
    free(fs), free(members), free(sub_of), free(seeds);
}

/* What was left out, on stderr. */
static void summarize(const run *R, const inputs *in)
{
    if (R->emptied) /* what the reference does, not a fault of the input: said once, not as a warning */
        fprintf(stderr,
                "%s: %ld of %ld group%s left out: none of %s generations was verified correct (verifiable reward 0; "
                "the first: %s); --ignore-verifiable-filtering keeps them\n",
                asn_progname(), R->emptied, R->groups, R->groups == 1 ? "" : "s", R->emptied == 1 ? "its" : "their",
                R->first_emptied);
    if (opts.pairs && R->no_pair)
        fprintf(stderr, "%s: %ld group%s gave no pair (fewer than two records, or all scored alike)\n",
                asn_progname(), R->no_pair, R->no_pair == 1 ? "" : "s");
    if (in->skipped)
        asn_warn("skipped %ld invalid record%s", in->skipped, in->skipped == 1 ? "" : "s");
}

int main(int argc, char **argv)
{
    int nops = asn_tool_parse(&tool, argc, argv);
    check_options();
    run R = {0};
    choose_weights(&R);
    inputs in = {0};
    open_inputs(&in, nops, argv);
    normalize(&R, &in);
    rank_all(&R, &in);
    summarize(&R, &in);
    asn_close_out(stdout, "-");
    return 0;
}
