/* report — the run report from an asn index: a self-contained HTML page
 * (leaderboard, charts, dataset statistics, provenance) and a text summary;
 * or (--history) the SVG chart of a learned sampler's training log. */
#include "asn/report.h"
#include "asn/tool.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The command line, as asn_tool_parse fills it. */
typedef struct report_options {
    const char *db;
    const char *out;
    const char *title;
    const char *analysis;
    const char *plots;
    const char *history;
} report_options;

/* The options, with their defaults (the table below points into it). */
static report_options opts;

static const asn_option options[] = {
    {"db", 'd', ASN_OPT_STRING, &opts.db, "FILE", "SQLite index written by index (required)"},
    {"output", 'o', ASN_OPT_STRING, &opts.out, "DIR", "folder for report.html and summary.txt (created; required); with --history, the SVG file"},
    {"analysis", 0, ASN_OPT_STRING, &opts.analysis, "FILE", "add the learned sampler's analysis: the output of analyze-sampler --json"},
    {"plots", 0, ASN_OPT_STRING, &opts.plots, "DIR", "with --analysis: include the SVG plots of analyze-sampler --plot-dir DIR"},
    {"history", 0, ASN_OPT_STRING, &opts.history, "LOG", "instead of the report: the training history chart of train-sampler's log LOG (--log) into the SVG file -o"},
    {"title", 0, ASN_OPT_STRING, &opts.title, "TEXT", "name of the run in the page (default: the model and the counts, \"demo-base: 25 heuristics on 14 prompts\")"},
    {0},
};

static const asn_tool tool = {
    "report", "--db FILE -o DIR [--analysis FILE [--plots DIR]] | --history LOG -o FILE.svg",
    "Write an HTML report and a text summary of an asn index (leaderboard, charts, statistics, provenance), or the SVG chart of a training log.",
    "Writes DIR/report.html (one file: inline CSS and SVG, no script, nothing\n"
    "fetched) and DIR/summary.txt, then prints their paths and a few lines.\n"
    "Per heuristic (its candidates' annotations averaged): mean final score\n"
    "(score.final of the kept candidates), quality (quality.bt, else\n"
    "bradley_terry_rating), win rate (Swiss points per game), diversity\n"
    "(diversity.embedding_entropy and self_bleu), mean length (n_tokens), kept\n"
    "count (records with rank), verifiable reward, n-gram coverage and the\n"
    "nucleus (gen-candidates --nucleus: tokens kept per step) when any\n"
    "record has them. Temperature = the temperature processor's parameter;\n"
    "family = the other processors' names (\"temp only\", \"official\", and\n"
    "\"learned\" for a pipeline with a learned sampler, which is highlighted).\n"
    "Charts: quality against diversity (one point per heuristic, colour =\n"
    "temperature, shape = family) and mean quality over temperature per\n"
    "family. Values no record carries show as n/a; a chart that needs them is\n"
    "left out with a note. Also: prompts, candidates, kept, pairs, finish\n"
    "reasons, annotation coverage; models and judges with their SHA-256, chat\n"
    "template, seeds, scoring weights, the program that generated them.\n"
    "With --analysis: a section on the learned sampler against its targets\n"
    "(mean KL from each step's target to the raw and the learned distribution,\n"
    "truncated mass, the KL ratio, a chart of mean KL by step, and with --plots\n"
    "the first 8 step plots). The same inputs give the same bytes.\n"
    "\n"
    "With --history LOG (no --db): the training history of a learned sampler,\n"
    "one SVG chart written to -o FILE: loss and KL(target || sampler) of each\n"
    "line of train-sampler's log (fields step, loss, kl) against the optimizer\n"
    "step, one polyline each, on a log scale (decades) when the values are\n"
    "positive and span a factor of 10 or more. A line whose step is not after\n"
    "the previous one's (a run resumed from an earlier checkpoint appends to\n"
    "its log) replaces the rows from that step on. A line that is not JSON or\n"
    "lacks a field, and an empty log, are errors (FILE:LINE). The same log\n"
    "gives the same bytes.\n",
    options,
};

static void check_options(int nops, char **argv)
{
    if (nops)
        asn_usage_error("unexpected operand %s", argv[1]);
    if (opts.history) {
        if (opts.db || opts.analysis || opts.plots || opts.title)
            asn_usage_error("--history takes no --db, --analysis, --plots or --title");
        if (!opts.out)
            asn_usage_error("-o FILE.svg is required");
        return;
    }
    if (!opts.db)
        asn_usage_error("--db is required");
    if (!opts.out)
        asn_usage_error("-o DIR is required");
}

/* The index, --analysis, and the output folder. */
static asn_report *load(void)
{
    asn_err e;
    asn_report *r = asn_report_load(opts.db, &e);
    if (!r)
        asn_fatal("%s", e.msg);
    if (opts.plots && !opts.analysis)
        asn_usage_error("--plots needs --analysis");
    if (opts.analysis && !(r->analysis = asn_report_analysis_load(opts.analysis, opts.plots, &e)))
        asn_fatal("%s", e.msg);
    if (mkdir(opts.out, 0777) && errno != EEXIST)
        asn_fatal("%s: %s", opts.out, strerror(errno));
    return r;
}

/* The default title: what the run is, from its records (not from where the
 * database lies, so that the same records give the same page): "demo-base:
 * 25 heuristics on 14 prompts"; the database's file name when no model is
 * recorded. A new string, or NULL when --title or the file name is the
 * title (*title). */
static char *make_title(const asn_report *r, const char **title)
{
    *title = opts.title;
    if (!*title && !r->models.n)
        *title = strrchr(opts.db, '/') ? strrchr(opts.db, '/') + 1 : opts.db;
    if (*title)
        return NULL;
    size_t len = 96;
    for (int i = 0; i < r->models.n; i++)
        len += strlen(r->models.v[i].value) + 2;
    char *made = asn_xmalloc(len);
    made[0] = 0;
    for (int i = 0; i < r->models.n; i++)
        strcat(strcat(made, i ? ", " : ""), r->models.v[i].value);
    snprintf(made + strlen(made), 96, ": %d heuristic%s on %ld prompt%s", r->nh, ASN_PLURAL(r->nh), r->prompts,
             ASN_PLURAL(r->prompts));
    *title = made;
    return made;
}

/* One page of the report, by write (the HTML page or the summary). */
static void write_page(const char *path, const asn_report *r, const char *title,
                       int (*write)(const asn_report *, const char *, FILE *, asn_err *))
{
    asn_err e;
    FILE *f = asn_open_out(path);
    if (write(r, title, f, &e)) {
        if (ferror(f))
            asn_write_failed(f, path, errno);
        asn_fatal("%s: %s", path, e.msg);
    }
    asn_close_out(f, path);
}

/* --history: the chart of a training log, into -o. */
static int write_history(void)
{
    asn_err e;
    asn_history *h = asn_history_load(opts.history, &e);
    if (!h)
        asn_fatal("%s", e.msg);
    FILE *f = asn_open_out(opts.out);
    if (asn_history_svg(h, f, &e))
        asn_write_failed(f, opts.out, errno);
    asn_close_out(f, opts.out);
    printf("history: %s (%d log step%s)\n", opts.out, h->n, ASN_PLURAL(h->n));
    asn_close_out(stdout, "-");
    asn_history_free(h);
    return 0;
}

int main(int argc, char **argv)
{
    int nops = asn_tool_parse(&tool, argc, argv);
    check_options(nops, argv);
    if (opts.history)
        return write_history();
    asn_report *r = load();
    const char *title;
    char *made = make_title(r, &title);
    size_t n = strlen(opts.out) + 32;
    char *html = asn_xmalloc(n), *text = asn_xmalloc(n);
    snprintf(html, n, "%s/report.html", opts.out);
    snprintf(text, n, "%s/summary.txt", opts.out);
    write_page(html, r, title, asn_report_write_html);
    write_page(text, r, title, asn_report_write_text);
    asn_err e;
    printf("report: %s\nsummary: %s\n", html, text);
    if (asn_report_write_brief(r, stdout, &e))
        asn_fatal("%s", e.msg);
    asn_close_out(stdout, "-");
    asn_report_free(r);
    free(html), free(text), free(made);
    return 0;
}
