/* validate.c — a JSON value against a JSON Schema (draft 2020-12, and
 * drafts 4 to 2019-09 where they differ: boolean exclusive bounds, item
 * lists with additionalItems, dependencies, keywords beside $ref ignored
 * up to draft 7, and a keyword the draft $schema names does not have
 * ignored, as Python's jsonschema does: const or if under draft 4). It serves the converter's finite cases (the values of an
 * enum or const filtered by the keywords beside them, a oneOf branch that
 * is a list of values checked against the others) and the final check of
 * a schema compiled from a relaxed form (asn_schema_to_gbnf_final): the
 * finished value is judged against the schema itself. Three answers:
 * valid, invalid, or not judged (a keyword this validator does not
 * evaluate: unevaluated*, $dynamicRef, $recursiveRef, a reference that
 * does not resolve, a pattern PCRE2 cannot compile, a format the grammar
 * does not know; gv_check finds those in a schema before any value).
 * Numbers compare by value (1 and 1.0 are one value); multipleOf is
 * decided on the shortest decimals of the two numbers (0.3 is a multiple
 * of 0.1); lengths count code points; patterns are searched for with
 * PCRE2, as JSON Schema's ECMAScript regexes; formats by the caller's
 * function (relax.c: the grammar of a string of that format). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "grammar_internal.h"

#include <math.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { V_DEPTH = 64 };

typedef struct vctx {
    const json_t *root;
    gv_format_fn fmt; /* NULL: formats not judged */
    int old_ref; /* $schema names draft 3 to 7: keywords beside $ref are ignored */
    int draft;   /* gv_draft: keywords of other drafts are ignored */
    char *why;
    size_t cap;
} vctx;

static int unjudged(vctx *x, const char *k)
{
    if (x->why && !x->why[0])
        snprintf(x->why, x->cap, "%s", k);
    return -1;
}

int gv_equal(const json_t *a, const json_t *b)
{
    if (json_is_number(a) && json_is_number(b))
        return json_number_value(a) == json_number_value(b);
    if (json_typeof(a) != json_typeof(b))
        return 0;
    if (json_is_array(a)) {
        if (json_array_size(a) != json_array_size(b))
            return 0;
        for (size_t i = 0; i < json_array_size(a); i++)
            if (!gv_equal(json_array_get(a, i), json_array_get(b, i)))
                return 0;
        return 1;
    }
    if (json_is_object(a)) {
        if (json_object_size(a) != json_object_size(b))
            return 0;
        const char *k;
        const json_t *v;
        json_object_foreach((json_t *)a, k, v)
        {
            const json_t *w = json_object_get(b, k);
            if (!w || !gv_equal(v, w))
                return 0;
        }
        return 1;
    }
    return json_equal(a, b);
}

static int is_type(const json_t *v, const char *t)
{
    if (!strcmp(t, "integer"))
        return json_is_integer(v) || (json_is_real(v) && json_real_value(v) == floor(json_real_value(v)));
    if (!strcmp(t, "number"))
        return json_is_number(v);
    if (!strcmp(t, "string"))
        return json_is_string(v);
    if (!strcmp(t, "boolean"))
        return json_is_boolean(v);
    if (!strcmp(t, "null"))
        return json_is_null(v);
    if (!strcmp(t, "object"))
        return json_is_object(v);
    return !strcmp(t, "array") && json_is_array(v);
}

static long long n_chars(const char *s)
{
    long long n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

/* 1 when the pattern matches somewhere in s, 0 when not, -1 when it does not compile. */
static int search(const char *pattern, const char *s, size_t len)
{
    int err;
    PCRE2_SIZE at;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_ALT_BSUX, &err, &at, NULL);
    if (!re)
        return -1;
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    int rc = pcre2_match(re, (PCRE2_SPTR)s, len, 0, 0, md, NULL);
    pcre2_match_data_free(md);
    pcre2_code_free(re);
    return rc >= 0 ? 1 : rc == PCRE2_ERROR_NOMATCH ? 0 : -1;
}

const json_t *gv_pointer(const json_t *root, const char *ref, int *syntax)
{
    if (syntax)
        *syntax = 0;
    if (ref[0] != '#' || (ref[1] && ref[1] != '/')) {
        if (syntax)
            *syntax = 1;
        return NULL;
    }
    const json_t *cur = root;
    const char *q = ref + 1;
    while (*q == '/' && cur) {
        q++;
        const char *end = strchr(q, '/');
        size_t n = end ? (size_t)(end - q) : strlen(q);
        char key[512];
        size_t k = 0;
        for (size_t i = 0; i < n && k + 1 < sizeof key; i++) {
            if (q[i] == '~' && i + 1 < n && (q[i + 1] == '0' || q[i + 1] == '1'))
                key[k++] = q[i + 1] == '0' ? '~' : '/', i++;
            else
                key[k++] = q[i];
        }
        key[k] = 0;
        cur = json_is_object(cur) ? json_object_get(cur, key)
              : json_is_array(cur) ? json_array_get(cur, (size_t)strtoul(key, NULL, 10))
                                   : NULL;
        q += n;
    }
    return cur;
}

static int valid(vctx *x, const json_t *s, const json_t *v, int depth);

static const char *sval(const json_t *j)
{
    return json_is_string(j) ? json_string_value(j) : "";
}

/* Every element of the list valid (all = 1) / how many valid (all = 0). */
static int count_valid(vctx *x, const json_t *l, const json_t *v, int depth, int *n)
{
    *n = 0;
    size_t i;
    const json_t *b;
    json_array_foreach(l, i, b)
    {
        int r = valid(x, b, v, depth + 1);
        if (r < 0)
            return -1;
        *n += r;
    }
    return 0;
}

static int bound_ok(const json_t *s, const json_t *v)
{
    double d = json_number_value(v);
    const json_t *mn = json_object_get(s, "minimum"), *mx = json_object_get(s, "maximum");
    const json_t *emn = json_object_get(s, "exclusiveMinimum"), *emx = json_object_get(s, "exclusiveMaximum");
    if (json_is_number(mn) && (json_is_true(emn) ? d <= json_number_value(mn) : d < json_number_value(mn)))
        return 0;
    if (json_is_number(mx) && (json_is_true(emx) ? d >= json_number_value(mx) : d > json_number_value(mx)))
        return 0;
    if (json_is_number(emn) && d <= json_number_value(emn))
        return 0;
    if (json_is_number(emx) && d >= json_number_value(emx))
        return 0;
    return 1;
}

/* x as m * 10^e, m its shortest decimal digits that read back as x
 * (at most 17). */
static void decimal_parts(double x, unsigned long long *m, int *e)
{
    char buf[48];
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, sizeof buf, "%.*e", p - 1, fabs(x));
        if (strtod(buf, NULL) == fabs(x))
            break;
    }
    unsigned long long d = 0;
    int frac = 0, seen_dot = 0;
    const char *q = buf;
    for (; *q && *q != 'e'; q++) {
        if (*q == '.') {
            seen_dot = 1;
            continue;
        }
        d = d * 10 + (unsigned long long)(*q - '0');
        frac += seen_dot;
    }
    *m = d;
    *e = (*q == 'e' ? atoi(q + 1) : 0) - frac;
}

/* 1 when v is an integer multiple of d (> 0), both read as their
 * shortest decimals (so 0.3 is a multiple of 0.1, as the numbers are
 * written); exact. */
static int multiple_of(double v, double d)
{
    if (v == 0)
        return 1;
    unsigned long long mv, md;
    int ev, ed;
    decimal_parts(v, &mv, &ev);
    decimal_parts(d, &md, &ed);
    if (ev >= ed) { /* mv * 10^(ev-ed) mod md */
        unsigned __int128 r = mv % md;
        for (int i = 0; i < ev - ed && r; i++)
            r = r * 10 % md;
        return r == 0;
    }
    for (int i = 0; i < ed - ev; i++) { /* mv / 10^(ed-ev), then mod md */
        if (mv % 10)
            return 0;
        mv /= 10;
    }
    return mv % md == 0;
}

static const char *const IGNORED[] = {"title", "description", "$schema", "$id", "id", "$comment", "default",
                                      "examples", "example", "readOnly", "writeOnly", "deprecated", "$defs",
                                      "definitions", "$anchor", "nullable", "contentEncoding", "contentMediaType",
                                      "contentSchema", "$dynamicAnchor", "$recursiveAnchor", "$vocabulary",
                                      "then", "else", "minContains", "maxContains", NULL};
/* Keywords of JSON Schema this validator does not evaluate. */
static const char *const UNJUDGED[] = {"unevaluatedItems", "unevaluatedProperties", "$dynamicRef", "$recursiveRef",
                                       NULL};

int gv_listed(const char *const *l, const char *k)
{
    for (; *l; l++)
        if (!strcmp(*l, k))
            return 1;
    return 0;
}

int gv_draft(const json_t *root)
{
    const char *d = json_string_value(json_object_get(root, "$schema"));
    static const struct {
        const char *name;
        int draft;
    } D[] = {{"draft-03", 3}, {"draft-04", 4}, {"draft-06", 6}, {"draft-07", 7}, {"2019-09", 2019}, {"2020-12", 2020}};
    for (size_t i = 0; d && i < sizeof D / sizeof D[0]; i++)
        if (strstr(d, D[i].name))
            return D[i].draft;
    return 0;
}

/* Keywords with the drafts that have them: [since, until) (0: open). */
static const struct {
    const char *k;
    int since, until;
} DRAFT_KEYWORDS[] = {
    {"const", 6, 0},           {"contains", 6, 0},         {"propertyNames", 6, 0},  {"if", 7, 0},
    {"then", 7, 0},            {"else", 7, 0},             {"dependentRequired", 2019, 0},
    {"dependentSchemas", 2019, 0}, {"minContains", 2019, 0}, {"maxContains", 2019, 0},
    {"unevaluatedItems", 2019, 0}, {"unevaluatedProperties", 2019, 0}, {"$recursiveRef", 2019, 2020},
    {"prefixItems", 2020, 0},  {"$dynamicRef", 2020, 0},   {"dependencies", 0, 2019},
};

int gv_foreign(int draft, const char *k)
{
    if (!draft)
        return 0;
    for (size_t i = 0; i < sizeof DRAFT_KEYWORDS / sizeof DRAFT_KEYWORDS[0]; i++)
        if (!strcmp(DRAFT_KEYWORDS[i].k, k))
            return draft < DRAFT_KEYWORDS[i].since || (DRAFT_KEYWORDS[i].until && draft >= DRAFT_KEYWORDS[i].until);
    return 0;
}

const char *const GV_ONE_SCHEMA[] = {"not", "if", "then", "else", "items", "additionalItems",
                                     "additionalProperties", "contains", "propertyNames", NULL};
const char *const GV_SCHEMA_LISTS[] = {"allOf", "anyOf", "oneOf", "prefixItems", "items", NULL};
const char *const GV_SCHEMA_MAPS[] = {"properties", "patternProperties", "$defs", "definitions",
                                      "dependentSchemas", "dependencies", NULL};

/* Removes from s and its subschemas the keywords foreign to draft; 1 when
 * some was found (with strip 0, nothing is removed: only found). */
static int foreign_walk(json_t *s, int draft, int strip, int depth)
{
    if (!json_is_object(s) || depth > 200)
        return 0;
    int found = 0;
    const char *k;
    json_t *a;
    void *tmp;
    json_object_foreach_safe(s, tmp, k, a)
    {
        if (gv_foreign(draft, k)) {
            found = 1;
            if (!strip)
                return 1;
            json_object_del(s, k);
            continue;
        }
        if (gv_listed(GV_ONE_SCHEMA, k))
            found |= foreign_walk(a, draft, strip, depth + 1);
        size_t i;
        json_t *e;
        if (gv_listed(GV_SCHEMA_LISTS, k) && json_is_array(a))
            json_array_foreach(a, i, e) found |= foreign_walk(e, draft, strip, depth + 1);
        const char *pk;
        if (gv_listed(GV_SCHEMA_MAPS, k) && json_is_object(a))
            json_object_foreach(a, pk, e) found |= foreign_walk(e, draft, strip, depth + 1);
        if (found && !strip)
            return 1;
    }
    return found;
}

json_t *gv_for_draft(const json_t *root)
{
    int draft = gv_draft(root);
    if (!draft || !foreign_walk((json_t *)root, draft, 0, 0))
        return NULL;
    json_t *c = json_deep_copy(root);
    foreign_walk(c, draft, 1, 0);
    return c;
}

static int valid(vctx *x, const json_t *s, const json_t *v, int depth)
{
    if (depth > V_DEPTH)
        return unjudged(x, "$ref");
    if (json_is_boolean(s))
        return json_is_true(s);
    if (!json_is_object(s))
        return unjudged(x, "(a schema that is not an object)");
    const char *k;
    const json_t *a;
    int n;
    const json_t *sref = json_object_get(s, "$ref");
    json_object_foreach((json_t *)s, k, a)
    {
        if (gv_foreign(x->draft, k))
            continue;
        if (gv_listed(UNJUDGED, k))
            return unjudged(x, k);
        if (gv_listed(IGNORED, k) || (sref && x->old_ref && strcmp(k, "$ref")))
            continue;
        int r = 1;
        if (!strcmp(k, "type")) {
            r = 0;
            if (json_is_string(a))
                r = is_type(v, json_string_value(a));
            for (size_t i = 0; json_is_array(a) && i < json_array_size(a); i++)
                r |= json_is_string(json_array_get(a, i)) && is_type(v, json_string_value(json_array_get(a, i)));
        } else if (!strcmp(k, "enum")) {
            r = 0;
            for (size_t i = 0; json_is_array(a) && i < json_array_size(a); i++)
                r |= gv_equal(json_array_get(a, i), v);
        } else if (!strcmp(k, "const")) {
            r = gv_equal(a, v);
        } else if (!strcmp(k, "not")) {
            r = valid(x, a, v, depth + 1);
            r = r < 0 ? r : !r;
        } else if (!strcmp(k, "if")) {
            int c = valid(x, a, v, depth + 1);
            const json_t *br = c < 0 ? NULL : json_object_get(s, c ? "then" : "else");
            r = c < 0 ? c : br ? valid(x, br, v, depth + 1) : 1;
        } else if (!strcmp(k, "allOf") || !strcmp(k, "anyOf") || !strcmp(k, "oneOf")) {
            if (!json_is_array(a) || count_valid(x, a, v, depth, &n))
                return unjudged(x, k);
            r = !strcmp(k, "allOf") ? n == (int)json_array_size(a) : !strcmp(k, "anyOf") ? n > 0 : n == 1;
        } else if (!strcmp(k, "$ref")) {
            const json_t *t = json_is_string(a) ? gv_pointer(x->root, json_string_value(a), NULL) : NULL;
            if (!t)
                return unjudged(x, k);
            r = valid(x, t, v, depth + 1);
        } else if (!strcmp(k, "format")) {
            if (json_is_string(v) && json_is_string(a) && (r = x->fmt ? x->fmt(json_string_value(a), v) : -1) < 0)
                return unjudged(x, k);
        } else if (json_is_object(v)) {
            const char *pk;
            const json_t *pv;
            if (!strcmp(k, "required")) {
                for (size_t i = 0; json_is_array(a) && i < json_array_size(a) && r; i++)
                    r = json_object_get(v, sval(json_array_get(a, i))) != NULL;
            } else if (!strcmp(k, "minProperties") || !strcmp(k, "maxProperties")) {
                double m = json_number_value(a), sz = (double)json_object_size(v);
                r = k[1] == 'i' ? sz >= m : sz <= m;
            } else if (!strcmp(k, "dependentRequired") || !strcmp(k, "dependentSchemas") ||
                       !strcmp(k, "dependencies")) {
                json_object_foreach((json_t *)a, pk, pv)
                {
                    if (!json_object_get(v, pk))
                        continue;
                    if (json_is_array(pv)) {
                        for (size_t i = 0; i < json_array_size(pv) && r; i++)
                            r = json_object_get(v, sval(json_array_get(pv, i))) != NULL;
                    } else {
                        r = valid(x, pv, v, depth + 1);
                    }
                    if (r <= 0)
                        return r;
                }
            } else if (!strcmp(k, "propertyNames")) {
                json_object_foreach((json_t *)v, pk, pv)
                {
                    json_t *name = json_string(pk);
                    int q = valid(x, a, name, depth + 1);
                    json_decref(name);
                    if (q <= 0)
                        return q;
                }
            } else if (!strcmp(k, "properties") || !strcmp(k, "patternProperties") ||
                       !strcmp(k, "additionalProperties")) {
                const json_t *props = json_object_get(s, "properties"), *pats = json_object_get(s, "patternProperties");
                json_object_foreach((json_t *)v, pk, pv)
                {
                    int covered = 0, q;
                    const json_t *ps = json_object_get(props, pk);
                    if (ps) {
                        covered = 1;
                        if (!strcmp(k, "properties") && (q = valid(x, ps, pv, depth + 1)) <= 0)
                            return q;
                    }
                    const char *pat;
                    const json_t *sch;
                    json_object_foreach((json_t *)pats, pat, sch)
                    {
                        int m = search(pat, pk, strlen(pk));
                        if (m < 0)
                            return unjudged(x, "patternProperties");
                        covered |= m;
                        if (m && !strcmp(k, "patternProperties") && (q = valid(x, sch, pv, depth + 1)) <= 0)
                            return q;
                    }
                    if (!covered && !strcmp(k, "additionalProperties") && (q = valid(x, a, pv, depth + 1)) <= 0)
                        return q;
                }
            }
        } else if (json_is_array(v)) {
            size_t nv = json_array_size(v);
            const json_t *pre = json_object_get(s, "prefixItems"), *items = json_object_get(s, "items");
            size_t np = json_is_array(pre) ? json_array_size(pre) : json_is_array(items) ? json_array_size(items) : 0;
            if (!strcmp(k, "minItems"))
                r = (double)nv >= json_number_value(a);
            else if (!strcmp(k, "maxItems"))
                r = (double)nv <= json_number_value(a);
            else if (!strcmp(k, "uniqueItems") && json_is_true(a)) {
                for (size_t i = 0; i < nv && r; i++)
                    for (size_t j = i + 1; j < nv && r; j++)
                        r = !gv_equal(json_array_get(v, i), json_array_get(v, j));
            } else if (!strcmp(k, "contains")) {
                int q;
                double hits = 0;
                for (size_t i = 0; i < nv; i++) {
                    if ((q = valid(x, a, json_array_get(v, i), depth + 1)) < 0)
                        return q;
                    hits += q;
                }
                const json_t *mn = json_object_get(s, "minContains"), *mx = json_object_get(s, "maxContains");
                r = hits >= (json_is_number(mn) ? json_number_value(mn) : 1) &&
                    (!json_is_number(mx) || hits <= json_number_value(mx));
            } else if (!strcmp(k, "prefixItems") || (!strcmp(k, "items") && json_is_array(a))) {
                for (size_t i = 0; i < nv && i < json_array_size(a) && r > 0; i++)
                    r = valid(x, json_array_get(a, i), json_array_get(v, i), depth + 1);
            } else if ((!strcmp(k, "items") && !json_is_array(a)) ||
                       (!strcmp(k, "additionalItems") && json_is_array(items) && !json_is_array(pre))) {
                for (size_t i = np; i < nv && r > 0; i++)
                    r = valid(x, a, json_array_get(v, i), depth + 1);
            }
        } else if (json_is_string(v)) {
            const char *t = json_string_value(v);
            if (!strcmp(k, "minLength"))
                r = (double)n_chars(t) >= json_number_value(a);
            else if (!strcmp(k, "maxLength"))
                r = (double)n_chars(t) <= json_number_value(a);
            else if (!strcmp(k, "pattern")) {
                if (!json_is_string(a) || (r = search(json_string_value(a), t, json_string_length(v))) < 0)
                    return unjudged(x, k);
            }
        } else if (json_is_number(v)) {
            if (!strcmp(k, "multipleOf")) {
                if (!json_is_number(a) || !(json_number_value(a) > 0))
                    return unjudged(x, k);
                r = multiple_of(json_number_value(v), json_number_value(a));
            } else if (strstr(k, "imum")) {
                r = bound_ok(s, v);
            }
        }
        if (r <= 0)
            return r;
    }
    return 1;
}

/* ------------------------------------------------- the schema beforehand */

static int check_fail(char *why, size_t cap, const char *ptr, const char *msg, const char *k)
{
    snprintf(why, cap, "%s: %s \"%s\"", ptr[0] ? ptr : "/", msg, k);
    return -1;
}

static void child(char *out, size_t cap, const char *ptr, const char *key)
{
    size_t n = (size_t)snprintf(out, cap, "%s/", ptr);
    for (; *key && n + 3 < cap; key++) {
        if (*key == '~' || *key == '/')
            n += (size_t)snprintf(out + n, cap - n, "~%c", *key == '~' ? '0' : '1');
        else
            out[n++] = *key;
    }
    out[n < cap ? n : cap - 1] = 0;
}

static int check_schema(const json_t *root, const json_t *s, const char *ptr, char *why, size_t cap, int depth, gv_format_fn fmt);

static int check_list(const json_t *root, const json_t *l, const char *ptr, char *why, size_t cap, int depth, gv_format_fn fmt)
{
    size_t i;
    const json_t *x;
    char p[1024];
    json_array_foreach(l, i, x)
    {
        char key[32];
        snprintf(key, sizeof key, "%zu", i);
        child(p, sizeof p, ptr, key);
        if (check_schema(root, x, p, why, cap, depth + 1, fmt))
            return -1;
    }
    return 0;
}

static int check_map(const json_t *root, const json_t *m, const char *ptr, char *why, size_t cap, int depth, gv_format_fn fmt)
{
    const char *k;
    const json_t *x;
    char p[1024];
    json_object_foreach((json_t *)m, k, x)
    {
        child(p, sizeof p, ptr, k);
        if (!json_is_array(x) && check_schema(root, x, p, why, cap, depth + 1, fmt))
            return -1;
    }
    return 0;
}

static int check_schema(const json_t *root, const json_t *s, const char *ptr, char *why, size_t cap, int depth, gv_format_fn fmt)
{
    if (depth > 200)
        return check_fail(why, cap, ptr, "subschemas nest too deep:", "");
    if (!json_is_object(s))
        return 0;
    const char *k;
    const json_t *a;
    char p[1024];
    json_object_foreach((json_t *)s, k, a)
    {
        child(p, sizeof p, ptr, k);
        if (gv_foreign(gv_draft(root), k))
            continue;
        if (gv_listed(UNJUDGED, k))
            return check_fail(why, cap, p, "unsupported keyword", k);
        if (!strcmp(k, "$ref")) {
            int syntax;
            if (!json_is_string(a) || !gv_pointer(root, json_string_value(a), &syntax))
                return check_fail(why, cap, p, "reference does not resolve or is not local:",
                                  json_is_string(a) ? json_string_value(a) : "");
        } else if (!strcmp(k, "pattern") && json_is_string(a) && search(json_string_value(a), "", 0) < 0) {
            return check_fail(why, cap, p, "pattern does not compile:", json_string_value(a));
        } else if (!strcmp(k, "format") && json_is_string(a)) {
            json_t *empty = json_string("");
            int f = fmt(json_string_value(a), empty);
            json_decref(empty);
            if (f < 0)
                return check_fail(why, cap, p, "unsupported format", json_string_value(a));
        } else if (!strcmp(k, "patternProperties") && json_is_object(a)) {
            const char *pat;
            const json_t *sch;
            json_object_foreach((json_t *)a, pat, sch) if (search(pat, "", 0) < 0) return check_fail(
                why, cap, p, "pattern does not compile:", pat);
        }
        if (gv_listed(GV_ONE_SCHEMA, k) && (json_is_object(a) || json_is_boolean(a)) &&
            check_schema(root, a, p, why, cap, depth + 1, fmt))
            return -1;
        if (gv_listed(GV_SCHEMA_LISTS, k) && json_is_array(a) && check_list(root, a, p, why, cap, depth, fmt))
            return -1;
        if (gv_listed(GV_SCHEMA_MAPS, k) && json_is_object(a) && check_map(root, a, p, why, cap, depth, fmt))
            return -1;
    }
    return 0;
}

int gv_check(const json_t *root, gv_format_fn fmt, char *why, size_t cap)
{
    why[0] = 0;
    return check_schema(root, root, "", why, cap, 0, fmt);
}

static int old_dialect(const json_t *root)
{
    int d = gv_draft(root);
    return d >= 3 && d <= 7;
}

int gv_search(const char *pattern, const char *s)
{
    return search(pattern, s, strlen(s));
}

int gv_valid(const json_t *root, const json_t *schema, const json_t *v, gv_format_fn fmt, char *why, size_t cap)
{
    vctx x = {root, fmt, old_dialect(root), gv_draft(root), why, cap};
    if (why && cap)
        why[0] = 0;
    return valid(&x, schema, v, 0);
}

