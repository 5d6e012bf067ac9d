/* index — upsert JSONL records (prompts, candidates, annotations, pairs)
 * into a SQLite database keyed by id, or merge shard databases. */
#include "asn/json.h"
#include "asn/store.h"
#include "asn/tool.h"

#include <stdlib.h>

/* The command line, as asn_tool_parse fills it. */
typedef struct index_options {
    const char *db;
    int merge;
    int skip_bad;
    int progress;
} index_options;

/* The options, with their defaults (the table below points into it). */
static index_options opts;

static const asn_option options[] = {
    {"db", 'd', ASN_OPT_STRING, &opts.db, "FILE", "SQLite database (created if missing; required)"},
    {"merge", 0, ASN_OPT_FLAG, &opts.merge, NULL, "the operands are asn databases to merge in, not JSONL"},
    ASN_OPT_SKIP_BAD(&opts.skip_bad),
    {"progress", 0, ASN_OPT_FLAG, &opts.progress, NULL, "show progress even when stderr is not a terminal"},
    {0},
};

static const asn_tool tool = {
    "index", "--db FILE [OPTIONS] [FILE...]",
    "Upsert records into a SQLite index keyed by id (idempotent), or merge indexes.",
    "Every record needs a string \"id\" (pair records get pair/<chosen_id>/<rejected_id>).\n"
    "A record whose id is already stored is merged into it (JSON merge patch,\n"
    "but a null is stored as a null, not a deletion): fields added by later\n"
    "tools (quality, diversity, score, ...) join the stored record, so indexing\n"
    "after each stage keeps one row per candidate, and indexing a file again\n"
    "changes nothing. Table:\n"
    "records(id, kind, prompt_id, heuristic_id, heuristic_name, seed, json);\n"
    "views: candidates, heuristic_stats, prompt_stats. The database uses WAL mode\n"
    "and one transaction per 1000 records: a killed run leaves the records of\n"
    "its committed transactions, and running it again completes it. With\n"
    "--merge, each FILE is another asn database (for instance one per shard)\n"
    "whose records are upserted. Schema: PRAGMA user_version 1; an index of an\n"
    "older asn is migrated, a newer one refused.\n",
    options,
};

int main(int argc, char **argv)
{
    int nops = asn_tool_parse(&tool, argc, argv);
    if (!opts.db)
        asn_usage_error("--db is required");
    if (opts.merge && !nops)
        asn_usage_error("--merge needs the databases to merge");
    asn_err e;
    asn_store *s = asn_store_open(opts.db, &e);
    if (!s)
        asn_fatal("%s", e.msg);
    long n = 0, bad = 0;
    if (opts.merge) {
        for (int i = 1; i <= nops; i++)
            if (asn_store_merge(s, argv[i], &e))
                asn_fatal("%s", e.msg);
    } else {
        char *def[] = {"-", NULL};
        asn_progress *bar = asn_progress_new("records", 0, opts.progress);
        asn_catch_stop();
        for (char **f = nops ? argv + 1 : def; *f; f++) {
            asn_jsonl *in = asn_jsonl_open(*f, &e);
            if (!in)
                asn_fatal("%s", e.msg);
            json_t *rec;
            int r;
            while ((r = asn_jsonl_next(in, &rec, &e)) != 0) {
                if (r > 0 && asn_store_put(s, rec, &e))
                    asn_err_prefix(&e, "%s:%ld", asn_jsonl_path(in), asn_jsonl_lineno(in)), r = -1;
                json_decref(rec);
                if (r < 0) {
                    if (!opts.skip_bad || r == -2) {
                        asn_store_close(s); /* commits what was indexed before */
                        asn_fatal("%s", e.msg);
                    }
                    asn_warn("%s", e.msg);
                    bad++;
                    continue;
                }
                n++;
                asn_progress_add(bar, 1);
                if (asn_stop_requested()) { /* what was indexed is committed */
                    if (asn_store_flush(s, &e))
                        asn_fatal("%s", e.msg);
                    asn_store_close(s);
                    asn_stop_point(n, "records (committed; indexing the input again completes the index)");
                }
            }
            asn_jsonl_close(in);
        }
        asn_progress_done(bar);
    }
    if (asn_store_flush(s, &e))
        asn_fatal("%s", e.msg);
    asn_store_close(s);
    if (bad)
        asn_warn("skipped %ld invalid record%s", bad, bad == 1 ? "" : "s");
    return 0;
}
