/* records.c — field access under asn's and the reference's names, and the
 * prompt-grouped record reader. */
#include "asn/records.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *asn_rec_prompt_key(const json_t *rec)
{
    const json_t *v = json_object_get(rec, "prompt_id");
    if (json_is_string(v))
        return json_string_value(v);
    v = json_object_get(rec, "prompt");
    return json_is_string(v) ? json_string_value(v) : NULL;
}

const char *asn_rec_heuristic_key(const json_t *rec, char *buf, size_t cap)
{
    const json_t *h = json_object_get(rec, "heuristic");
    const json_t *id = json_is_object(h) ? json_object_get(h, "id") : NULL;
    if (json_is_string(id)) {
        snprintf(buf, cap, "%s", json_string_value(id));
        return buf;
    }
    const json_t *si = json_object_get(rec, "sampler_info");
    if (!si)
        return NULL;
    char *s = asn_json_dumps(si, ASN_JSON_SORT_KEYS);
    snprintf(buf, cap, "%s", s);
    free(s);
    return buf;
}

const char *asn_rec_heuristic_name(const json_t *rec)
{
    const json_t *h = json_object_get(rec, "heuristic");
    if (!json_is_object(h))
        h = json_object_get(rec, "sampler_info");
    const json_t *n = json_is_object(h) ? json_object_get(h, "name") : NULL;
    return json_is_string(n) ? json_string_value(n) : NULL;
}

int asn_rec_seed(const json_t *rec, long long *seed, asn_err *e)
{
    const json_t *v = json_object_get(rec, "seed");
    double d = json_is_real(v) ? json_real_value(v) : 0.5;
    if (json_is_integer(v)) {
        *seed = json_integer_value(v);
    } else if (json_is_real(v) && d == floor(d) && fabs(d) < 9e15) {
        *seed = (long long)d;
    } else if (json_is_string(v) && json_string_length(v) > 0 &&
               strspn(json_string_value(v), "0123456789") == json_string_length(v) &&
               json_string_length(v) < 18) {
        *seed = atoll(json_string_value(v));
    } else {
        return asn_err_set(e, v ? "field \"seed\" must be an integer >= 0" : "field \"seed\" is missing");
    }
    if (*seed < 0)
        return asn_err_set(e, "field \"seed\" must be an integer >= 0");
    return 0;
}

const char *asn_rec_generation(const json_t *rec)
{
    const json_t *v = json_object_get(rec, "generation");
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static int flag(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    return json_is_true(v) || (json_is_integer(v) && json_integer_value(v) != 0);
}

asn_checks asn_rec_checks(const json_t *rec)
{
    asn_checks c = {0, 0, 0};
    const json_t *v = json_object_get(rec, "checks");
    if (json_is_object(v)) {
        c.diversity = flag(v, "diversity");
        c.verifiable = flag(v, "verifiable");
        c.factual = flag(v, "factual");
    } else if (json_is_object(v = json_object_get(rec, "incidence_vector"))) {
        c.diversity = flag(v, "check_diversity");
        c.verifiable = flag(v, "check_ifeval_or_math_or_gsm8k");
        c.factual = flag(v, "check_factual");
    }
    return c;
}

/* --------------------------------------------------------------- groups */

int asn_rec_format(const json_t *rec)
{
    if (json_object_get(rec, "heuristic") || json_object_get(rec, "prompt_id"))
        return ASN_REC_ASN;
    return json_object_get(rec, "sampler_info") ? ASN_REC_REFERENCE : ASN_REC_ASN;
}

const char *asn_rec_format_name(int format)
{
    return format == ASN_REC_REFERENCE ? "the research pipeline's records (grouped by prompt text; sampler_info, "
                                         "system_prompt, incidence_vector)"
                                       : "asn's records (grouped by prompt_id)";
}

/* Prompt keys -> group ids, open addressing; the keys are the only text
 * kept (one per prompt). */
typedef struct keymap {
    char **key;
    size_t *id;
    size_t cap, n;
} keymap;

static uint64_t hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

/* The group id of key, added (as id n) when new. */
static size_t key_id(keymap *m, const char *k)
{
    if (2 * (m->n + 1) > m->cap) {
        keymap t = {asn_xcalloc(m->cap ? 2 * m->cap : 64, sizeof(char *)),
                    asn_xcalloc(m->cap ? 2 * m->cap : 64, sizeof(size_t)), m->cap ? 2 * m->cap : 64, 0};
        for (size_t i = 0; i < m->cap; i++)
            if (m->key[i]) {
                size_t j = hash(m->key[i]) & (t.cap - 1);
                while (t.key[j])
                    j = (j + 1) & (t.cap - 1);
                t.key[j] = m->key[i], t.id[j] = m->id[i];
            }
        t.n = m->n;
        free(m->key), free(m->id);
        *m = t;
    }
    size_t i = hash(k) & (m->cap - 1);
    for (; m->key[i]; i = (i + 1) & (m->cap - 1))
        if (!strcmp(m->key[i], k))
            return m->id[i];
    m->key[i] = asn_xstrdup(k);
    m->id[i] = m->n;
    return m->n++;
}

typedef struct recpos {
    long long off;
    size_t len;
    long line;
    int file;
    size_t group;
} recpos;

struct asn_group_reader {
    char *const *files;
    int nfiles;
    FILE **fp;       /* per file; stdin is copied to a temporary file first */
    int *format;     /* per file: ASN_REC_*, -1 before its first record */
    int indexed;     /* the first pass ran */
    recpos *rec;     /* every valid record, in input order */
    size_t nrec, rec_cap;
    size_t ngroups;
    size_t *order;   /* record indices grouped: group g is order[gstart[g] .. gstart[g + 1]) */
    size_t *gstart;
    size_t next;     /* the next group to return */
    size_t end;      /* groups before this one are returned; then err */
    int failed;
    asn_err err;
    asn_group_file_fn on_file;
    void *on_file_ctx;
    long skipped, records;
    int *where_file; /* per record of the last group: index in files, line */
    long *where_line;
    size_t where_cap;
    char *line;
    size_t line_cap;
};

static void where_set(asn_group_reader *g, size_t i, int file, long line)
{
    size_t cap = g->where_cap;
    asn_grow((void **)&g->where_file, &cap, i + 1, sizeof *g->where_file);
    asn_grow((void **)&g->where_line, &g->where_cap, i + 1, sizeof *g->where_line);
    g->where_file[i] = file;
    g->where_line[i] = line;
}

const char *asn_group_where(const asn_group_reader *g, size_t i, long *line)
{
    const char *f = g->files[g->where_file[i]];
    *line = g->where_line[i];
    return strcmp(f, "-") ? f : "<stdin>";
}

asn_group_reader *asn_group_open(char *const *files, asn_err *e)
{
    asn_group_reader *g = asn_xcalloc(1, sizeof *g);
    g->files = files;
    while (files[g->nfiles])
        g->nfiles++;
    g->fp = asn_xcalloc((size_t)g->nfiles + 1, sizeof *g->fp);
    g->format = asn_xmalloc(((size_t)g->nfiles + 1) * sizeof *g->format);
    for (int i = 0; i < g->nfiles; i++) {
        g->format[i] = -1;
        if (strcmp(files[i], "-")) {
            if (!(g->fp[i] = fopen(files[i], "rb"))) {
                asn_err_set(e, "%s: %s", files[i], strerror(errno));
                asn_group_close(g);
                return NULL;
            }
            continue;
        }
        /* stdin: copied, so that a prompt's records can be read again */
        FILE *t = tmpfile();
        char buf[1 << 16];
        size_t k;
        if (!t) {
            asn_err_set(e, "<stdin>: cannot make a temporary copy: %s", strerror(errno));
            asn_group_close(g);
            return NULL;
        }
        while ((k = fread(buf, 1, sizeof buf, stdin)) > 0)
            if (fwrite(buf, 1, k, t) != k) {
                asn_err_set(e, "<stdin>: cannot copy to a temporary file: %s", strerror(errno));
                fclose(t);
                asn_group_close(g);
                return NULL;
            }
        if (ferror(stdin) || fflush(t) || fseeko(t, 0, SEEK_SET)) {
            asn_err_set(e, "<stdin>: read error: %s", strerror(errno));
            fclose(t);
            asn_group_close(g);
            return NULL;
        }
        g->fp[i] = t;
    }
    return g;
}

void asn_group_on_file(asn_group_reader *g, asn_group_file_fn fn, void *ctx)
{
    g->on_file = fn;
    g->on_file_ctx = ctx;
}

int asn_group_file_format(const asn_group_reader *g, int file)
{
    return file >= 0 && file < g->nfiles ? g->format[file] : -1;
}

/* The first pass: every record's place and prompt, in order; then the
 * records grouped by prompt in order of first appearance. An error stops
 * the pass: the groups complete before it are returned, except the one
 * the stream was in (as a streaming reader would have it), then the
 * error. */
static void index_input(asn_group_reader *g, int skip_invalid)
{
    keymap km = {0};
    size_t last_group = (size_t)-1;
    for (int fi = 0; fi < g->nfiles && !g->failed; fi++) {
        asn_jsonl *in = asn_jsonl_over(g->fp[fi], strcmp(g->files[fi], "-") ? g->files[fi] : "<stdin>");
        for (;;) {
            json_t *rec;
            asn_err e;
            int r = asn_jsonl_next(in, &rec, &e);
            if (r == 0)
                break;
            if (r > 0 && !asn_rec_prompt_key(rec)) {
                json_decref(rec);
                r = asn_err_set(&e, "%s:%ld: record has neither \"prompt_id\" nor \"prompt\"", asn_jsonl_path(in),
                                asn_jsonl_lineno(in));
            }
            if (r == -1 && skip_invalid) {
                g->skipped++;
                continue;
            }
            if (r < 0) {
                g->failed = 1;
                g->err = e;
                break;
            }
            if (g->format[fi] < 0) {
                g->format[fi] = asn_rec_format(rec);
                if (g->on_file)
                    g->on_file(g->files[fi], g->format[fi], g->on_file_ctx);
            }
            asn_grow((void **)&g->rec, &g->rec_cap, g->nrec + 1, sizeof *g->rec);
            recpos *p = &g->rec[g->nrec++];
            p->off = asn_jsonl_offset(in, &p->len);
            p->line = asn_jsonl_lineno(in);
            p->file = fi;
            p->group = last_group = key_id(&km, asn_rec_prompt_key(rec));
            json_decref(rec);
        }
        asn_jsonl_close(in);
    }
    g->ngroups = km.n;
    for (size_t i = 0; i < km.cap; i++)
        free(km.key[i]);
    free(km.key), free(km.id);
    /* counting sort of the records by group, input order kept within one */
    g->gstart = asn_xcalloc(g->ngroups + 1, sizeof *g->gstart);
    g->order = asn_xmalloc((g->nrec ? g->nrec : 1) * sizeof *g->order);
    for (size_t i = 0; i < g->nrec; i++)
        g->gstart[g->rec[i].group + 1]++;
    for (size_t k = 0; k < g->ngroups; k++)
        g->gstart[k + 1] += g->gstart[k];
    size_t *fill = asn_xmalloc((g->ngroups + 1) * sizeof *fill);
    memcpy(fill, g->gstart, (g->ngroups + 1) * sizeof *fill);
    for (size_t i = 0; i < g->nrec; i++)
        g->order[fill[g->rec[i].group]++] = i;
    free(fill);
    g->end = g->ngroups;
    if (g->failed && last_group != (size_t)-1) /* the group the stream was in */
        g->end = last_group < g->end ? last_group : g->end;
    g->indexed = 1;
}

int asn_group_next(asn_group_reader *g, int skip_invalid, json_t **group, asn_err *e)
{
    *group = NULL;
    if (!g->indexed)
        index_input(g, skip_invalid);
    if (g->next >= g->end) {
        if (g->failed) {
            *e = g->err;
            return -1;
        }
        return 0;
    }
    size_t gi = g->next++;
    json_t *arr = json_array();
    for (size_t k = g->gstart[gi]; k < g->gstart[gi + 1]; k++) {
        const recpos *p = &g->rec[g->order[k]];
        FILE *f = g->fp[p->file];
        asn_grow((void **)&g->line, &g->line_cap, p->len + 1, 1);
        json_t *rec = NULL;
        if (fseeko(f, (off_t)p->off, SEEK_SET) == 0 && fread(g->line, 1, p->len, f) == p->len)
            rec = asn_jsonl_parse_line(g->line, p->len);
        if (!rec) {
            json_decref(arr);
            return asn_err_set(e, "%s:%ld: the record changed while it was read (read error: %s)",
                               strcmp(g->files[p->file], "-") ? g->files[p->file] : "<stdin>", p->line,
                               ferror(f) ? strerror(errno) : "different text");
        }
        where_set(g, k - g->gstart[gi], p->file, p->line);
        json_array_append_new(arr, rec);
    }
    g->records += (long)json_array_size(arr);
    *group = arr;
    return 1;
}

long asn_group_skipped(const asn_group_reader *g) { return g->skipped; }
long asn_group_records(const asn_group_reader *g) { return g->records; }

void asn_group_close(asn_group_reader *g)
{
    if (!g)
        return;
    for (int i = 0; i < g->nfiles; i++)
        if (g->fp[i])
            fclose(g->fp[i]);
    free(g->fp);
    free(g->format);
    free(g->rec);
    free(g->order);
    free(g->gstart);
    free(g->where_file);
    free(g->where_line);
    free(g->line);
    free(g);
}
