/* record_loop.c — the loops of the record-labelling programs
 * (asn/record_loop.h): records or prompt groups through a callback to
 * stdout, --shard and --merge. */
#include "asn/record_loop.h"
#include "asn/json.h"
#include "asn/records.h"
#include "asn/shard.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static asn_shard map_shard; /* what asn_map_* keep (n = 0: everything) */

int asn_tool_shards(const char *shard, const asn_strlist *merge, char **files)
{
    asn_err e;
    if (shard && merge->n)
        asn_usage_error("--merge does not go with --shard");
    if (shard && asn_shard_parse(shard, &map_shard, &e))
        asn_usage_error("%s", e.msg);
    if (!merge->n)
        return 0;
    char *def[] = {"-", NULL};
    size_t n;
    char **ids = asn_shard_ids(files && files[0] ? files : def, &n, &e);
    if (!ids || asn_shard_merge(ids, n, (char *const *)merge->v, merge->n, stdout, &e)) {
        char buf[4200];
        if (ids && ferror(stdout))
            asn_fatal("%s: %s", asn_out_name(stdout, "-", buf, sizeof buf), e.msg);
        fflush(stdout);
        asn_fatal("%s", e.msg);
    }
    asn_shard_ids_free(ids);
    errno = 0;
    if (fflush(stdout) || ferror(stdout))
        asn_write_failed(stdout, "-", errno);
    return 1;
}

/* Whether rec (from path:line) is in the shard; errors end the program. */
static int map_keeps(const json_t *rec, const char *path, long line)
{
    if (!map_shard.n)
        return 1;
    const char *key = asn_rec_prompt_key(rec);
    if (!key)
        asn_fatal("%s:%ld: --shard: the record has no \"prompt_id\" (nor \"prompt\")", path, line);
    return asn_shard_has(&map_shard, key);
}

long asn_map_records(char **files, int skip_invalid, int show_progress, asn_record_fn fn, void *ctx)
{
    char *def[] = {"-", NULL};
    if (!files || !files[0])
        files = def;
    asn_progress *bar = asn_progress_new("records", 0, show_progress);
    long bad = 0, written = 0;
    asn_err e;
    asn_catch_stop();
    for (char **f = files; *f; f++) {
        asn_jsonl *in = asn_jsonl_open(*f, &e);
        if (!in)
            asn_fatal("%s", e.msg);
        json_t *rec;
        int r;
        while ((r = asn_jsonl_next(in, &rec, &e)) != 0) {
            if (r > 0 && !map_keeps(rec, asn_jsonl_path(in), asn_jsonl_lineno(in))) {
                json_decref(rec);
                continue;
            }
            if (r > 0 && fn(rec, ctx, asn_jsonl_path(in), asn_jsonl_lineno(in), &e))
                asn_err_prefix(&e, "%s:%ld", asn_jsonl_path(in), asn_jsonl_lineno(in)), r = -1;
            if (r < 0) {
                json_decref(rec);
                if (!skip_invalid || r == -2)
                    asn_fatal("%s", e.msg);
                asn_warn("%s", e.msg);
                bad++;
                continue;
            }
            if (asn_jsonl_write(stdout, rec))
                asn_write_failed(stdout, "-", errno);
            json_decref(rec);
            asn_progress_add(bar, 1);
            asn_stop_point(++written, "records");
        }
        asn_jsonl_close(in);
    }
    asn_progress_done(bar);
    asn_warn_skipped(bad);
    return bad;
}

struct asn_group_map {
    asn_group_reader *gr;
    int skip_invalid;
    long skipped;
    unsigned char *drop; /* per record of the group: left out as invalid */
    size_t cap;
};

const char *asn_group_map_where(const asn_group_map *m, size_t i, long *line)
{
    return asn_group_where(m->gr, i, line);
}

int asn_group_map_invalid(asn_group_map *m, size_t i, const asn_err *why, asn_err *e)
{
    long line;
    const char *f = asn_group_where(m->gr, i, &line);
    if (!m->skip_invalid)
        return asn_err_set(e, "%s:%ld: %s", f, line, why->msg);
    asn_warn("%s:%ld: %s", f, line, why->msg);
    m->drop[i] = 1;
    m->skipped++;
    return 0;
}

void asn_note_record_format(const char *path, int format, void *ctx)
{
    (void)ctx;
    if (format == ASN_REC_REFERENCE)
        fprintf(stderr, "%s: %s: reading %s\n", asn_progname(), strcmp(path, "-") ? path : "<stdin>",
                asn_rec_format_name(format));
}

long asn_map_groups(char **files, int skip_invalid, int show_progress, asn_group_fn fn, void *ctx)
{
    char *def[] = {"-", NULL};
    if (!files || !files[0])
        files = def;
    asn_err e;
    asn_group_map m = {.skip_invalid = skip_invalid};
    if (!(m.gr = asn_group_open(files, &e)))
        asn_fatal("%s", e.msg);
    asn_group_on_file(m.gr, asn_note_record_format, NULL);
    asn_progress *bar = asn_progress_new("records", 0, show_progress);
    json_t *recs;
    int r;
    long written = 0;
    asn_catch_stop();
    while ((r = asn_group_next(m.gr, skip_invalid, &recs, &e)) > 0) {
        size_t n = json_array_size(recs), i;
        long line;
        const char *where = asn_group_where(m.gr, 0, &line);
        if (!map_keeps(json_array_get(recs, 0), where, line)) {
            json_decref(recs);
            continue;
        }
        asn_grow((void **)&m.drop, &m.cap, n, 1);
        memset(m.drop, 0, n);
        if (fn(recs, &m, ctx, &e)) {
            json_decref(recs);
            asn_fatal("%s", e.msg);
        }
        for (i = n; i-- > 0;)
            if (m.drop[i])
                json_array_remove(recs, i);
        json_t *rec;
        json_array_foreach(recs, i, rec)
            if (asn_jsonl_write(stdout, rec))
                asn_write_failed(stdout, "-", errno);
        asn_progress_add(bar, (long)json_array_size(recs));
        written += (long)json_array_size(recs);
        json_decref(recs);
        asn_stop_point(written, "records");
    }
    asn_progress_done(bar);
    if (r < 0)
        asn_fatal("%s", e.msg);
    m.skipped += asn_group_skipped(m.gr);
    asn_group_close(m.gr);
    free(m.drop);
    return m.skipped;
}

void asn_warn_skipped(long n)
{
    if (n)
        asn_warn("skipped %ld invalid record%s", n, n == 1 ? "" : "s");
}
