/* report — the run report from an asn index: a self-contained HTML page
 * (leaderboard, charts, dataset statistics, provenance) and a text summary. */
#include "asn/report.h"
#include "asn/tool.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *opt_db, *opt_out, *opt_title;

static const asn_option options[] = {
    {"db", 'd', ASN_OPT_STRING, &opt_db, "FILE", "SQLite index written by index (required)"},
    {"output", 'o', ASN_OPT_STRING, &opt_out, "DIR", "folder for report.html and summary.txt (created; required)"},
    {"title", 0, ASN_OPT_STRING, &opt_title, "TEXT", "name of the run in the page (default: the database's file name)"},
    {0},
};

static const asn_tool tool = {
    "report", "--db FILE -o DIR",
    "Write an HTML report and a text summary of an asn index: leaderboard, charts, statistics, provenance.",
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
    "template, seeds, scoring weights. The same database gives the same bytes.\n",
    options,
};

int main(int argc, char **argv)
{
    if (asn_tool_parse(&tool, argc, argv))
        asn_usage_error("unexpected operand %s", argv[1]);
    if (!opt_db)
        asn_usage_error("--db is required");
    if (!opt_out)
        asn_usage_error("-o DIR is required");
    asn_err e;
    asn_report *r = asn_report_load(opt_db, &e);
    if (!r)
        asn_fatal("%s", e.msg);
    if (mkdir(opt_out, 0777) && errno != EEXIST)
        asn_fatal("%s: %s", opt_out, strerror(errno));
    const char *title = opt_title;
    if (!title)
        title = strrchr(opt_db, '/') ? strrchr(opt_db, '/') + 1 : opt_db;

    size_t n = strlen(opt_out) + 32;
    char *html = asn_xmalloc(n), *text = asn_xmalloc(n);
    snprintf(html, n, "%s/report.html", opt_out);
    snprintf(text, n, "%s/summary.txt", opt_out);
    FILE *f = asn_open_out(html);
    if (asn_report_write_html(r, title, f, &e)) {
        if (ferror(f))
            asn_write_failed(f, html, errno);
        asn_fatal("%s: %s", html, e.msg);
    }
    asn_close_out(f, html);
    f = asn_open_out(text);
    if (asn_report_write_text(r, title, f, &e)) {
        if (ferror(f))
            asn_write_failed(f, text, errno);
        asn_fatal("%s: %s", text, e.msg);
    }
    asn_close_out(f, text);

    printf("report: %s\nsummary: %s\n", html, text);
    if (asn_report_write_brief(r, stdout, &e))
        asn_fatal("%s", e.msg);
    asn_close_out(stdout, "-");
    asn_report_free(r);
    free(html), free(text);
    return 0;
}
