/* Shards by prompt id, and the merge of shard outputs (asn/shard.h). */
#include "asn/shard.h"
#include "asn/json.h"
#include "asn/records.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int asn_shard_parse(const char *spec, asn_shard *s, asn_err *e)
{
    int k, n, used = 0;
    if (!spec || sscanf(spec, "%d/%d%n", &k, &n, &used) != 2 || spec[used] || n < 1 || k < 1 || k > n)
        return asn_err_set(e, "--shard must be K/N with 1 <= K <= N, not \"%s\"", spec ? spec : "");
    s->k = k;
    s->n = n;
    return 0;
}

int asn_shard_has(const asn_shard *s, const char *prompt_id)
{
    if (!s || !s->n)
        return 1;
    uint8_t d[32];
    asn_sha256(prompt_id, strlen(prompt_id), d);
    uint64_t h = 0;
    for (int i = 0; i < 8; i++)
        h = h << 8 | d[i];
    return (int)(h % (uint64_t)s->n) == s->k - 1;
}

/* ----------------------------------------------------------------- merge */

typedef struct shard_in {
    const char *path;
    FILE *f;
    char *line;
    size_t cap;
    long lineno;
    char *pid; /* prompt id of the line read ahead (NULL at the end) */
} shard_in;

/* Reads the next record's line and prompt id; -1 with e set on an error. */
static int shard_next(shard_in *s, asn_err *e)
{
    free(s->pid);
    s->pid = NULL;
    ssize_t n;
    while ((n = getline(&s->line, &s->cap, s->f)) >= 0) {
        s->lineno++;
        if (n == 0 || (n == 1 && s->line[0] == '\n'))
            continue;
        if (s->line[n - 1] != '\n')
            return asn_err_set(e, "%s:%ld: the last line is cut short", s->path, s->lineno);
        json_error_t je;
        json_t *rec = json_loads(s->line, JSON_DECODE_ANY, &je);
        const char *key = rec ? asn_rec_prompt_key(rec) : NULL;
        if (!rec)
            return asn_err_set(e, "%s:%ld: invalid JSON at column %d: %s", s->path, s->lineno, je.column, je.text);
        if (!key || !*key) {
            asn_err_set(e, "%s:%ld: %s", s->path, s->lineno, "field \"prompt_id\": missing or not a prompt id");
            json_decref(rec);
            return -1;
        }
        s->pid = asn_xstrdup(key);
        json_decref(rec);
        return 0;
    }
    if (ferror(s->f))
        return asn_err_set(e, "%s: read error", s->path);
    return 0;
}

int asn_shard_merge(char *const *ids, size_t n_ids, char *const *paths, int n_paths, FILE *out, asn_err *e)
{
    shard_in *sh = asn_xcalloc((size_t)n_paths, sizeof *sh);
    int rc = 0;
    for (int i = 0; i < n_paths && !rc; i++) {
        sh[i].path = paths[i];
        if (!(sh[i].f = strcmp(paths[i], "-") ? fopen(paths[i], "r") : stdin))
            rc = asn_err_set(e, "%s: %s", paths[i], strerror(errno));
        else
            rc = shard_next(&sh[i], e);
    }
    for (size_t p = 0; p < n_ids && !rc; p++) {
        int from = -1;
        for (int i = 0; i < n_paths && !rc; i++) {
            if (!sh[i].pid || strcmp(sh[i].pid, ids[p]))
                continue;
            if (from >= 0) {
                rc = asn_err_set(e, "%s:%ld: prompt %s is also in %s", sh[i].path, sh[i].lineno, ids[p], sh[from].path);
                break;
            }
            from = i;
            while (!rc && sh[i].pid && !strcmp(sh[i].pid, ids[p])) {
                if (fputs(sh[i].line, out) == EOF)
                    rc = asn_err_set(e, "write error: %s", strerror(errno)); /* ferror(out) tells the caller */
                else
                    rc = shard_next(&sh[i], e);
            }
        }
    }
    for (int i = 0; i < n_paths; i++) {
        if (!rc && sh[i].pid)
            rc = asn_err_set(e, "%s:%ld: prompt %s is not in the prompts, or its records are not together in input order",
                             sh[i].path, sh[i].lineno, sh[i].pid);
        if (sh[i].f && sh[i].f != stdin)
            fclose(sh[i].f);
        free(sh[i].line);
        free(sh[i].pid);
    }
    free(sh);
    return rc ? -1 : 0;
}

char **asn_shard_ids(char *const *files, size_t *n, asn_err *e)
{
    char **ids = NULL;
    size_t cap = 0;
    *n = 0;
    for (char *const *f = files; *f; f++) {
        asn_jsonl *in = asn_jsonl_open(*f, e);
        if (!in)
            goto fail;
        json_t *rec;
        int r;
        while ((r = asn_jsonl_next(in, &rec, e)) != 0) {
            const char *key = r > 0 ? asn_rec_prompt_key(rec) : NULL;
            if (r > 0 && !key)
                asn_err_set(e, "%s:%ld: the record has no \"prompt_id\" (nor \"prompt\")", asn_jsonl_path(in),
                            asn_jsonl_lineno(in));
            if (!key) {
                json_decref(rec);
                asn_jsonl_close(in);
                goto fail;
            }
            if (!*n || strcmp(ids[*n - 1], key)) {
                asn_grow((void **)&ids, &cap, *n + 2, sizeof *ids);
                ids[(*n)++] = asn_xstrdup(key);
            }
            json_decref(rec);
        }
        asn_jsonl_close(in);
    }
    asn_grow((void **)&ids, &cap, *n + 1, sizeof *ids);
    ids[*n] = NULL;
    return ids;
fail:
    if (ids) {
        ids[*n] = NULL;
        asn_shard_ids_free(ids);
    }
    return NULL;
}

void asn_shard_ids_free(char **ids)
{
    for (char **p = ids; p && *p; p++)
        free(*p);
    free(ids);
}
