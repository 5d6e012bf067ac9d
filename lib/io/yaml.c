/* yaml.c — YAML → JSON values with source positions, on libyaml's event
 * parser. Only the first document is read. */
#include "asn/yaml.h"

#include <errno.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

typedef struct pos {
    const json_t *v;
    int line, col;
} pos;

typedef struct anchor {
    char *name;
    json_t *v;
    int open; /* a collection still being read: an alias to it would recurse */
} anchor;

struct asn_yaml {
    char *path;
    json_t *root;
    pos *pos;
    size_t npos, cappos;
    anchor *anchors;
    size_t nanch, capanch;
};

static void remember(asn_yaml *y, const json_t *v, yaml_mark_t m)
{
    asn_grow((void **)&y->pos, &y->cappos, y->npos + 1, sizeof *y->pos);
    y->pos[y->npos++] = (pos){v, (int)m.line + 1, (int)m.column + 1};
}

static void add_anchor(asn_yaml *y, const yaml_char_t *name, json_t *v)
{
    if (!name)
        return;
    asn_grow((void **)&y->anchors, &y->capanch, y->nanch + 1, sizeof *y->anchors);
    y->anchors[y->nanch++] = (anchor){asn_xstrdup((const char *)name), v,
                                        json_is_array(v) || json_is_object(v)};
}

static void close_anchor(asn_yaml *y, const json_t *v)
{
    for (size_t i = 0; i < y->nanch; i++)
        if (y->anchors[i].v == v)
            y->anchors[i].open = 0;
}

/* ------------------------------------------------------ scalar resolution */

static int matches(const char *re, const char *s)
{
    regex_t r;
    if (regcomp(&r, re, REG_EXTENDED | REG_NOSUB))
        return 0;
    int ok = regexec(&r, s, 0, NULL, 0) == 0;
    regfree(&r);
    return ok;
}

static json_t *resolve_plain(const char *s)
{
    if (!*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") || !strcmp(s, "NULL"))
        return json_null();
    if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE"))
        return json_true();
    if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE"))
        return json_false();
    if (matches("^[-+]?[0-9]+$", s)) {
        errno = 0;
        long long x = strtoll(s, NULL, 10);
        if (!errno)
            return json_integer(x);
    }
    if (matches("^0x[0-9a-fA-F]+$", s))
        return json_integer(strtoll(s + 2, NULL, 16));
    if (matches("^0o[0-7]+$", s))
        return json_integer(strtoll(s + 2, NULL, 8));
    if (matches("^[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?$", s)) {
        double d = strtod(s, NULL);
        return isfinite(d) ? json_real(d) : NULL; /* NULL: out of range */
    }
    /* .inf and .nan have no JSON form; they stay strings and the consumer
     * rejects them where a number is needed. */
    return json_string(s);
}

/* ---------------------------------------------------------------- parser */

/* Collections nested deeper than this are refused: the reader recurses
 * once per level, and a file of 10000 "[" would otherwise overflow the
 * stack. */
enum { YAML_MAX_DEPTH = 256 };

typedef struct parser {
    asn_yaml *y;
    yaml_parser_t p;
    asn_err *e;
    int depth; /* collections open around the current event */
} parser;

static int perr(parser *ps, yaml_mark_t m, const char *what)
{
    return asn_err_set(ps->e, "%s:%d:%d: %s", ps->y->path, (int)m.line + 1, (int)m.column + 1, what);
}

static int next(parser *ps, yaml_event_t *ev)
{
    if (yaml_parser_parse(&ps->p, ev))
        return 0;
    const char *prob = ps->p.problem ? ps->p.problem : "YAML syntax error";
    char msg[512];
    if (ps->p.context)
        snprintf(msg, sizeof msg, "%s %s", ps->p.context, prob);
    else
        snprintf(msg, sizeof msg, "%s", prob);
    return perr(ps, ps->p.problem_mark, msg);
}

static json_t *node(parser *ps, yaml_event_t *ev);

static json_t *sequence(parser *ps, yaml_event_t *start)
{
    json_t *arr = json_array();
    remember(ps->y, arr, start->start_mark);
    add_anchor(ps->y, start->data.sequence_start.anchor, arr);
    for (;;) {
        yaml_event_t ev;
        if (next(ps, &ev))
            goto fail;
        if (ev.type == YAML_SEQUENCE_END_EVENT) {
            yaml_event_delete(&ev);
            close_anchor(ps->y, arr);
            return arr;
        }
        json_t *v = node(ps, &ev);
        yaml_event_delete(&ev);
        if (!v)
            goto fail;
        json_array_append_new(arr, v);
    }
fail:
    json_decref(arr);
    return NULL;
}

static json_t *mapping(parser *ps, yaml_event_t *start)
{
    json_t *obj = json_object();
    remember(ps->y, obj, start->start_mark);
    add_anchor(ps->y, start->data.mapping_start.anchor, obj);
    for (;;) {
        yaml_event_t kev;
        if (next(ps, &kev))
            goto fail;
        if (kev.type == YAML_MAPPING_END_EVENT) {
            yaml_event_delete(&kev);
            close_anchor(ps->y, obj);
            return obj;
        }
        if (kev.type != YAML_SCALAR_EVENT) {
            perr(ps, kev.start_mark, "mapping keys must be scalars");
            yaml_event_delete(&kev);
            goto fail;
        }
        char *key = asn_xstrdup((const char *)kev.data.scalar.value);
        yaml_mark_t km = kev.start_mark;
        yaml_event_delete(&kev);
        if (json_object_get(obj, key)) {
            char msg[300];
            snprintf(msg, sizeof msg, "duplicate key \"%.200s\"", key);
            free(key);
            perr(ps, km, msg);
            goto fail;
        }
        yaml_event_t vev;
        if (next(ps, &vev)) {
            free(key);
            goto fail;
        }
        json_t *v = node(ps, &vev);
        yaml_event_delete(&vev);
        if (!v) {
            free(key);
            goto fail;
        }
        json_object_set_new(obj, key, v);
        free(key);
    }
fail:
    json_decref(obj);
    return NULL;
}

static json_t *node(parser *ps, yaml_event_t *ev)
{
    switch (ev->type) {
    case YAML_SCALAR_EVENT: {
        const char *s = (const char *)ev->data.scalar.value;
        json_t *v = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE ? resolve_plain(s)
                                                                      : json_string(s);
        if (!v) { /* bytes jansson refuses as UTF-8, or an overflowing number */
            json_t *probe = json_string(s);
            perr(ps, ev->start_mark, probe ? "number out of range" : "scalar is not valid UTF-8");
            json_decref(probe);
            return NULL;
        }
        remember(ps->y, v, ev->start_mark);
        add_anchor(ps->y, ev->data.scalar.anchor, v);
        return v;
    }
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT: {
        if (ps->depth >= YAML_MAX_DEPTH) {
            char msg[80];
            snprintf(msg, sizeof msg, "collections nested deeper than %d levels", YAML_MAX_DEPTH);
            perr(ps, ev->start_mark, msg);
            return NULL;
        }
        ps->depth++;
        json_t *v = ev->type == YAML_SEQUENCE_START_EVENT ? sequence(ps, ev) : mapping(ps, ev);
        ps->depth--;
        return v;
    }
    case YAML_ALIAS_EVENT:
        for (size_t i = ps->y->nanch; i-- > 0;)
            if (!strcmp(ps->y->anchors[i].name, (const char *)ev->data.alias.anchor)) {
                if (ps->y->anchors[i].open) {
                    perr(ps, ev->start_mark, "recursive alias");
                    return NULL;
                }
                return json_incref(ps->y->anchors[i].v);
            }
        perr(ps, ev->start_mark, "unknown alias");
        return NULL;
    default:
        perr(ps, ev->start_mark, "unexpected YAML event");
        return NULL;
    }
}

asn_yaml *asn_yaml_parse(const char *name, const char *text, size_t len, asn_err *e)
{
    asn_yaml *y = asn_xcalloc(1, sizeof *y);
    y->path = asn_xstrdup(name);
    parser ps = {.y = y, .e = e};
    yaml_parser_initialize(&ps.p);
    yaml_parser_set_input_string(&ps.p, (const unsigned char *)text, len);
    int ok = 0;
    yaml_event_t ev;
    /* stream start, then document start (or stream end for an empty file) */
    while (!next(&ps, &ev)) {
        yaml_event_type_t t = ev.type;
        if (t == YAML_STREAM_START_EVENT || t == YAML_DOCUMENT_START_EVENT) {
            yaml_event_delete(&ev);
            continue;
        }
        if (t == YAML_STREAM_END_EVENT) {
            perr(&ps, ev.start_mark, "empty YAML document");
            yaml_event_delete(&ev);
            break;
        }
        y->root = node(&ps, &ev);
        yaml_event_delete(&ev);
        ok = y->root != NULL;
        break;
    }
    yaml_parser_delete(&ps.p);
    if (!ok) {
        asn_yaml_free(y);
        return NULL;
    }
    return y;
}

asn_yaml *asn_yaml_load(const char *path, asn_err *e)
{
    char *buf;
    size_t n;
    if (asn_read_file(path, &buf, &n, e))
        return NULL;
    asn_yaml *y = asn_yaml_parse(path, buf, n, e);
    free(buf);
    return y;
}

void asn_yaml_free(asn_yaml *y)
{
    if (!y)
        return;
    json_decref(y->root);
    for (size_t i = 0; i < y->nanch; i++)
        free(y->anchors[i].name);
    free(y->anchors);
    free(y->pos);
    free(y->path);
    free(y);
}

json_t *asn_yaml_root(const asn_yaml *y) { return y->root; }
const char *asn_yaml_path(const asn_yaml *y) { return y->path; }

const char *asn_yaml_where(const asn_yaml *y, const json_t *v, char *buf, size_t n)
{
    for (size_t i = 0; y && i < y->npos; i++)
        if (y->pos[i].v == v) {
            snprintf(buf, n, "%s:%d:%d", y->path, y->pos[i].line, y->pos[i].col);
            return buf;
        }
    snprintf(buf, n, "%s", y ? y->path : "?");
    return buf;
}
