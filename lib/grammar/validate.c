/* validate.c — a JSON value against a JSON Schema, for the converter's
 * finite cases: the values of an enum or const are filtered by the other
 * keywords beside them (`not` included), and a oneOf branch that is a list
 * of values is checked against the other branches. Three answers: valid,
 * invalid, or not judged (a keyword this validator does not evaluate:
 * the caller refuses the schema, naming it). Numbers compare by value
 * (1 and 1.0 are one value); lengths count code points; patterns are
 * searched for with PCRE2, as JSON Schema's ECMAScript regexes. */
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

static const char *const IGNORED[] = {"title", "description", "$schema", "$id", "id", "$comment", "default",
                                      "examples", "example", "readOnly", "writeOnly", "deprecated", "$defs",
                                      "definitions", "$anchor", "nullable", "contentEncoding", "contentMediaType",
                                      NULL};
static const char *const HANDLED[] = {"type", "enum", "const", "not", "allOf", "anyOf", "oneOf", "$ref", "properties",
                                      "required", "additionalProperties", "patternProperties", "minProperties",
                                      "maxProperties", "propertyNames", "dependentRequired", "items", "prefixItems",
                                      "additionalItems", "minItems", "maxItems", "uniqueItems", "contains",
                                      "minLength", "maxLength", "pattern", "minimum", "maximum", "exclusiveMinimum",
                                      "exclusiveMaximum", "multipleOf", "format", NULL};

static int listed(const char *const *l, const char *k)
{
    for (; *l; l++)
        if (!strcmp(*l, k))
            return 1;
    return 0;
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
    json_object_foreach((json_t *)s, k, a)
    {
        if (listed(IGNORED, k) || !listed(HANDLED, k)) {
            if (!listed(IGNORED, k) && (!strcmp(k, "if") || !strcmp(k, "then") || !strcmp(k, "else") ||
                                        !strcmp(k, "dependencies") || !strcmp(k, "dependentSchemas") ||
                                        !strncmp(k, "unevaluated", 11) || !strcmp(k, "$dynamicRef") ||
                                        !strcmp(k, "$recursiveRef") || !strcmp(k, "minContains") ||
                                        !strcmp(k, "maxContains")))
                return unjudged(x, k);
            continue;
        }
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
            if (json_is_string(v))
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
            } else if (!strcmp(k, "dependentRequired")) {
                json_object_foreach((json_t *)a, pk, pv) if (json_object_get(v, pk)) for (size_t i = 0;
                                                                                         i < json_array_size(pv) && r; i++)
                    r = json_object_get(v, sval(json_array_get(pv, i))) != NULL;
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
                int q, any = 0;
                for (size_t i = 0; i < nv; i++) {
                    if ((q = valid(x, a, json_array_get(v, i), depth + 1)) < 0)
                        return q;
                    any |= q;
                }
                r = any;
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
                double d = json_number_value(a), q = json_number_value(v) / d;
                if (!(d > 0) || !isfinite(q))
                    return unjudged(x, k);
                r = q == floor(q) || fabs(q - nearbyint(q)) < 1e-9 * fabs(q); /* 0.3 / 0.1 */
                if (r && q != floor(q) && json_number_value(v) != nearbyint(q) * d)
                    return unjudged(x, k); /* inexact in binary: not judged */
            } else if (strstr(k, "imum")) {
                r = bound_ok(s, v);
            }
        }
        if (r <= 0)
            return r;
    }
    return 1;
}

int gv_search(const char *pattern, const char *s)
{
    return search(pattern, s, strlen(s));
}

int gv_valid(const json_t *root, const json_t *schema, const json_t *v, char *why, size_t cap)
{
    vctx x = {root, why, cap};
    if (why && cap)
        why[0] = 0;
    return valid(&x, schema, v, 0);
}
