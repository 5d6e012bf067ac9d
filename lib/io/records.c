/* records.c — field access under asn's and the reference's names, and the
 * prompt-grouped record reader. */
#include "asn/records.h"

#include <math.h>
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

/* A set of strings (prompt keys already finished), open addressing. */
typedef struct strset {
    char **slot;
    size_t cap, n;
} strset;

static uint64_t hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static int set_has(const strset *s, const char *k)
{
    if (!s->cap)
        return 0;
    for (size_t i = hash(k) & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
        if (!s->slot[i])
            return 0;
        if (!strcmp(s->slot[i], k))
            return 1;
    }
}

static void set_add(strset *s, const char *k)
{
    if (2 * (s->n + 1) > s->cap) {
        strset t = {asn_xcalloc(s->cap ? 2 * s->cap : 64, sizeof(char *)), s->cap ? 2 * s->cap : 64, 0};
        for (size_t i = 0; i < s->cap; i++)
            if (s->slot[i])
                set_add(&t, s->slot[i]), free(s->slot[i]);
        free(s->slot);
        *s = t;
    }
    size_t i = hash(k) & (s->cap - 1);
    while (s->slot[i])
        i = (i + 1) & (s->cap - 1);
    s->slot[i] = asn_xstrdup(k);
    s->n++;
}

struct asn_group_reader {
    char *const *files;
    int fi;
    asn_jsonl *in;
    json_t *ahead;   /* the first record of the next group */
    long ahead_line;
    int ahead_file;
    strset done;
    long skipped, records;
    int *where_file; /* per record of the last group: index in files, line */
    long *where_line;
    size_t where_cap;
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
    if (files[0] && !(g->in = asn_jsonl_open(files[0], e))) {
        free(g);
        return NULL;
    }
    return g;
}

/* The next valid record of the stream, with its line; 0 at the end. */
static int next_record(asn_group_reader *g, int skip_invalid, json_t **rec, long *line, asn_err *e)
{
    for (;;) {
        if (!g->in)
            return 0;
        int r = asn_jsonl_next(g->in, rec, e);
        if (r == 0) {
            asn_jsonl_close(g->in);
            g->in = NULL;
            if (g->files[++g->fi] && !(g->in = asn_jsonl_open(g->files[g->fi], e)))
                return -1;
            continue;
        }
        if (r > 0 && !asn_rec_prompt_key(*rec)) {
            json_decref(*rec);
            r = asn_err_set(e, "%s:%ld: record has neither \"prompt_id\" nor \"prompt\"",
                            asn_jsonl_path(g->in), asn_jsonl_lineno(g->in));
        }
        if (r == -1 && skip_invalid) {
            g->skipped++;
            continue;
        }
        if (r < 0)
            return -1;
        *line = asn_jsonl_lineno(g->in);
        return 1;
    }
}

int asn_group_next(asn_group_reader *g, int skip_invalid, json_t **group, asn_err *e)
{
    *group = NULL;
    json_t *rec;
    long line;
    if (!g->ahead) {
        int r = next_record(g, skip_invalid, &rec, &line, e);
        if (r <= 0)
            return r;
        g->ahead = rec;
        g->ahead_line = line;
        g->ahead_file = g->fi;
    }
    const char *key = asn_rec_prompt_key(g->ahead);
    if (set_has(&g->done, key))
        return asn_err_set(e, "%s:%ld: the records of prompt \"%.80s\" are not contiguous (sort the "
                              "input by prompt, or keep the order asn wrote)",
                           g->in ? asn_jsonl_path(g->in) : "input", g->ahead_line, key);
    json_t *arr = json_array();
    json_array_append_new(arr, g->ahead);
    where_set(g, 0, g->ahead_file, g->ahead_line);
    g->ahead = NULL;
    int r;
    while ((r = next_record(g, skip_invalid, &rec, &line, e)) > 0) {
        if (strcmp(asn_rec_prompt_key(rec), asn_rec_prompt_key(json_array_get(arr, 0)))) {
            g->ahead = rec;
            g->ahead_line = line;
            g->ahead_file = g->fi;
            break;
        }
        where_set(g, json_array_size(arr), g->fi, line);
        json_array_append_new(arr, rec);
    }
    if (r < 0) {
        json_decref(arr);
        return -1;
    }
    set_add(&g->done, asn_rec_prompt_key(json_array_get(arr, 0)));
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
    json_decref(g->ahead);
    asn_jsonl_close(g->in);
    for (size_t i = 0; i < g->done.cap; i++)
        free(g->done.slot[i]);
    free(g->done.slot);
    free(g->where_file);
    free(g->where_line);
    free(g);
}
