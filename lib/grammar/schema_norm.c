/* schema_norm.c — each JSON Schema subschema rewritten, before schema.c
 * converts it, into the keywords the converter understands: draft 4's
 * forms in today's, allOf (and $ref beside other keywords) merged, the
 * keywords beside anyOf / oneOf moved into each branch (branches that
 * only list required names become conditions on the names present),
 * keywords that hold whatever the grammar does dropped, and the keywords
 * no grammar can express refused with their JSON pointer. */
#include "schema_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Keywords of JSON Schema (drafts 4 to 2020-12) that validate and that the
 * grammar cannot express (beyond the special cases gs_normalize() rewrites):
 * refused with their pointer. A keyword in neither this list nor the
 * understood or annotation ones is not JSON Schema: ignored, as JSON
 * Schema says of unknown keywords. */
static const char *const REFUSED[] = {"not", "if", "then", "else", "dependentSchemas", "dependencies",
                                      "contains", "minContains", "maxContains",
                                      "propertyNames", "unevaluatedItems",
                                      "unevaluatedProperties", "uniqueItems", "multipleOf",
                                      "additionalItems", "$dynamicRef", "$recursiveRef", NULL};
static const char *const MORE_ANNOTATIONS[] = {"$dynamicAnchor", "$recursiveAnchor", "$vocabulary",
                                               "contentEncoding", "contentMediaType", "contentSchema", NULL};

enum { MAX_MERGE_DEPTH = 16 };

/* The types a "type" value names, as a list (new); NULL when absent. */
static json_t *type_list(const json_t *t)
{
    if (!t)
        return NULL;
    if (json_is_array(t))
        return json_copy((json_t *)t);
    return json_pack("[O]", t);
}

static int type_has(const json_t *l, const char *t)
{
    size_t i;
    const json_t *x;
    json_array_foreach(l, i, x) if (json_is_string(x) && !strcmp(json_string_value(x), t)) return 1;
    return 0;
}

/* Intersection of two "type" values (integer within number). */
static json_t *type_meet(const json_t *a, const json_t *b)
{
    json_t *la = type_list(a), *lb = type_list(b), *out = json_array();
    size_t i;
    const json_t *x;
    json_array_foreach(la, i, x)
    {
        const char *t = json_string_value(x);
        if (!t)
            continue;
        if (type_has(lb, t) || (!strcmp(t, "integer") && type_has(lb, "number")))
            json_array_append_new(out, json_string(t));
        else if (!strcmp(t, "number") && type_has(lb, "integer") && !type_has(out, "integer"))
            json_array_append_new(out, json_string("integer"));
    }
    json_decref(la), json_decref(lb);
    if (json_array_size(out) == 1) {
        json_t *one = json_incref(json_array_get(out, 0));
        json_decref(out);
        return one;
    }
    return out;
}

static int is_lower(const char *k)
{
    return !strcmp(k, "minimum") || !strcmp(k, "exclusiveMinimum") || !strcmp(k, "minLength") ||
           !strcmp(k, "minItems") || !strcmp(k, "minProperties");
}

static int is_upper(const char *k)
{
    return !strcmp(k, "maximum") || !strcmp(k, "exclusiveMaximum") || !strcmp(k, "maxLength") ||
           !strcmp(k, "maxItems") || !strcmp(k, "maxProperties");
}

/* Every property of b's "properties" is one of a's. */
static int props_within(const json_t *b, const json_t *a)
{
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)json_object_get(b, "properties"), k, v)
    {
        (void)v;
        if (!json_object_get(json_object_get(a, "properties"), k))
            return 0;
    }
    return 1;
}

/* Merges b (normalized, no allOf/$ref/anyOf) into acc: what both demand. */
static int merge_into(conv *c, json_t *acc, const json_t *b, const char *ptr)
{
    char p[1024];
    const json_t *aa = json_object_get(acc, "additionalProperties"), *ab = json_object_get(b, "additionalProperties");
    int ra = aa && !json_is_true(aa), rb = ab && !json_is_true(ab);
    if ((ra && !props_within(b, acc)) || (rb && !props_within(acc, b)) || (ra && rb && !json_equal(aa, ab))) {
        gs_ptr_child(p, sizeof p, ptr, "allOf");
        return gs_serr(c, p, "%s", "subschemas with additionalProperties and different properties cannot be merged");
    }
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)b, k, v)
    {
        json_t *cur = json_object_get(acc, k);
        if (!cur || json_equal(cur, v)) {
            json_object_set(acc, k, v);
            continue;
        }
        if (gv_listed(GS_ANNOTATIONS, k) || gv_listed(MORE_ANNOTATIONS, k))
            continue;
        if (!strcmp(k, "properties") && json_is_object(cur) && json_is_object(v)) {
            json_t *m = json_copy(cur);
            const char *pk;
            json_t *pv;
            json_object_foreach(v, pk, pv)
            {
                json_t *old = json_object_get(m, pk);
                if (!old || json_equal(old, pv))
                    json_object_set(m, pk, pv);
                else
                    json_object_set_new(m, pk, json_pack("{s:[O,O]}", "allOf", old, pv));
            }
            json_object_set_new(acc, k, m);
        } else if (!strcmp(k, "required") && json_is_array(cur) && json_is_array(v)) {
            json_t *m = json_copy(cur);
            size_t i;
            json_t *x;
            json_array_foreach(v, i, x)
            {
                int seen = 0;
                for (size_t j = 0; j < json_array_size(m); j++)
                    seen |= json_equal(json_array_get(m, j), x);
                if (!seen)
                    json_array_append(m, x);
            }
            json_object_set_new(acc, k, m);
        } else if (!strcmp(k, "type")) {
            json_t *t = type_meet(cur, v);
            if (json_is_array(t) && !json_array_size(t)) {
                json_decref(t);
                gs_ptr_child(p, sizeof p, ptr, "allOf");
                return gs_serr(c, p, "%s", "the subschemas' types do not intersect");
            }
            json_object_set_new(acc, k, t);
        } else if ((is_lower(k) || is_upper(k)) && json_is_number(cur) && json_is_number(v)) {
            double x = json_number_value(cur), y = json_number_value(v);
            if (is_lower(k) ? y > x : y < x)
                json_object_set(acc, k, v);
        } else if (!strcmp(k, "enum") && json_is_array(cur) && json_is_array(v)) {
            json_t *m = json_array();
            size_t i;
            json_t *x;
            json_array_foreach(cur, i, x) for (size_t j = 0; j < json_array_size(v); j++) if (json_equal(x, json_array_get(v, j)))
            {
                json_array_append(m, x);
                break;
            }
            json_object_set_new(acc, k, m);
        } else if (!strcmp(k, "not")) { /* not A and not B: not (A or B) */
            json_object_set_new(acc, k, json_pack("{s:[O,O]}", "anyOf", cur, v));
        } else if (!strcmp(k, "items") || !strcmp(k, "additionalProperties")) {
            json_object_set_new(acc, k, json_pack("{s:[O,O]}", "allOf", cur, v));
        } else {
            gs_ptr_child(p, sizeof p, ptr, "allOf");
            char msg[600];
            snprintf(msg, sizeof msg, "keyword \"%s\" differs between subschemas: they cannot be merged", k);
            return gs_serr(c, p, "%s", msg);
        }
    }
    return 0;
}

/* A subschema of allOf, normalized, its $ref resolved. */
static json_t *merge_part(conv *c, const json_t *s, const char *ptr, int depth)
{
    if (depth > MAX_MERGE_DEPTH)
        return gs_serr(c, ptr, "%s", "allOf and $ref nest too deep to merge"), NULL;
    if (json_is_true(s))
        return json_object();
    json_t *n = gs_normalize(c, s, ptr, depth + 1);
    if (!n)
        return NULL;
    const json_t *ref = json_object_get(n, "$ref");
    if (json_is_string(ref)) {
        const json_t *t;
        char p[1024];
        snprintf(p, sizeof p, "%s", json_string_value(ref) + 1);
        if (gs_resolve_ref(c, json_string_value(ref), ptr, &t)) {
            json_decref(n);
            return NULL;
        }
        json_t *r = merge_part(c, t, p, depth + 1);
        if (r) /* the annotations beside $ref are dropped */
            json_object_del(r, "$ref");
        json_decref(n);
        return r;
    }
    if (json_object_get(n, "anyOf") || json_object_get(n, "oneOf")) {
        json_decref(n);
        return gs_serr(c, ptr, "%s", "anyOf/oneOf inside allOf is not supported"), NULL;
    }
    return n;
}

static int has_validator(const json_t *s, const char *except)
{
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)s, k, v)
    {
        (void)v;
        if (strcmp(k, except) && strcmp(k, "nullable") && !gv_listed(GS_ANNOTATIONS, k) && !gv_listed(MORE_ANNOTATIONS, k))
            return 1;
    }
    return 0;
}

/* `not` of types (without enum or const beside it): the types left, as
 * "type". Any other `not` is refused. */
static int not_types(conv *c, json_t *r, const char *ptr)
{
    char p[1024];
    gs_ptr_child(p, sizeof p, ptr, "not");
    json_t *n = gs_normalize(c, json_object_get(r, "not"), p, 1);
    if (!n)
        return -1;
    int ok = json_is_false(n) || (json_is_object(n) && json_object_get(n, "type") && !has_validator(n, "type"));
    if (!ok) {
        json_decref(n);
        return gs_serr(c, p, "%s", "unsupported keyword \"not\" (supported: not of types, or beside enum/const)");
    }
    static const char *const ALL[] = {"object", "array", "string", "number", "integer", "boolean", "null", NULL};
    json_t *have = type_list(json_object_get(r, "type")), *out = json_array();
    if (!have) { /* every type; number stands for integer */
        have = json_array();
        for (int i = 0; ALL[i]; i++)
            if (strcmp(ALL[i], "integer"))
                json_array_append_new(have, json_string(ALL[i]));
    }
    json_t *drop = json_is_object(n) ? type_list(json_object_get(n, "type")) : json_array();
    size_t i;
    const json_t *x;
    int err = 0;
    json_array_foreach(have, i, x)
    {
        const char *t = json_string_value(x);
        if (!t)
            continue;
        int gone = type_has(drop, t) || (!strcmp(t, "integer") && type_has(drop, "number"));
        if (!gone && !strcmp(t, "number") && type_has(drop, "integer") && !type_has(drop, "number"))
            err = 1; /* the numbers that are not integers */
        if (!gone)
            json_array_append_new(out, json_string(t));
    }
    json_decref(have), json_decref(drop), json_decref(n);
    if (err || !json_array_size(out)) {
        json_decref(out);
        return gs_serr(c, p, "%s", err ? "not of integer beside number is not supported"
                                    : "no type is left: the schema accepts nothing");
    }
    json_object_set_new(r, "type", out);
    json_object_del(r, "not");
    return 0;
}

/* Whether the anyOf/oneOf list br has only branches {"required": [names]}
 * (annotations aside). */
static int required_only(const json_t *br)
{
    size_t i, j;
    const json_t *x, *n;
    if (!json_is_array(br) || !json_array_size(br))
        return 0;
    json_array_foreach(br, i, x)
    {
        const json_t *req = json_object_get(x, "required");
        if (!json_is_array(req))
            return 0;
        json_array_foreach(req, j, n) if (!json_is_string(n)) return 0;
        const char *k;
        const json_t *v;
        json_object_foreach((json_t *)x, k, v) if (strcmp(k, "required") && !gv_listed(GS_ANNOTATIONS, k)) return 0;
    }
    return 1;
}

/* Every name that required, dependentRequired and the required lists of
 * REQ_ANY / REQ_ONE mention (a new list, repeats included). */
static json_t *presence_names(const json_t *r)
{
    json_t *out = json_array();
    const json_t *req = json_object_get(r, "required"), *dr = json_object_get(r, "dependentRequired");
    if (json_is_array(req))
        json_array_extend(out, (json_t *)req);
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)dr, k, v)
    {
        json_array_append_new(out, json_string(k));
        if (json_is_array(v))
            json_array_extend(out, (json_t *)v);
    }
    for (int g = 0; g < 2; g++) {
        size_t i;
        const json_t *l;
        json_array_foreach(json_object_get(r, g ? REQ_ONE : REQ_ANY), i, l) json_array_extend(out, (json_t *)l);
    }
    return out;
}

/* Whether the properties of r and the names the branches br require are
 * at most MAX_ANY_ORDER (objects whose members object_body tracks). */
static int few_names(const json_t *r, const json_t *br)
{
    json_t *names = json_copy(json_object_get(r, "properties"));
    if (!json_is_object(names))
        json_decref(names), names = json_object();
    size_t i, j;
    const json_t *x, *nm;
    json_array_foreach(br, i, x) json_array_foreach(json_object_get(x, "required"), j, nm)
        json_object_set_new(names, json_string_value(nm), json_true());
    int ok = json_object_size(names) <= MAX_ANY_ORDER;
    json_decref(names);
    return ok;
}

/* The schema s rewritten into the keywords schema.c's conv_norm understands (new
 * reference), or NULL with the error: unknown keywords dropped; draft 4's
 * boolean exclusive bounds and item lists in today's form; allOf (and $ref
 * beside other keywords) merged; keywords beside anyOf/oneOf moved into
 * each branch; keywords that hold whatever the grammar does (uniqueItems
 * false, multipleOf 1 on integers, min/maxProperties the properties
 * already imply) dropped; the rest of REFUSED refused. */
json_t *gs_normalize(conv *c, const json_t *s, const char *ptr, int depth)
{
    char p[1024];
    if (!json_is_object(s))
        return json_incref((json_t *)s);
    json_t *r = json_object();
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)s, k, v) if (gv_listed(GS_KNOWN, k) || gv_listed(GS_ANNOTATIONS, k) || gv_listed(REFUSED, k) ||
                                               !strcmp(k, "allOf") || !strcmp(k, "format"))
        json_object_set(r, k, v);
    /* draft 4: exclusiveMinimum: true beside minimum */
    static const char *const EX[2][2] = {{"exclusiveMinimum", "minimum"}, {"exclusiveMaximum", "maximum"}};
    for (int i = 0; i < 2; i++) {
        json_t *x = json_object_get(r, EX[i][0]);
        if (json_is_boolean(x)) {
            json_t *b = json_object_get(r, EX[i][1]);
            if (json_is_true(x) && b) {
                json_object_set(r, EX[i][0], b);
                json_object_del(r, EX[i][1]);
            } else {
                json_object_del(r, EX[i][0]);
            }
        }
    }
    /* draft 4 tuples: items as a list, additionalItems for the rest */
    json_t *items = json_object_get(r, "items");
    if (json_is_array(items) && !json_object_get(r, "prefixItems")) {
        json_object_set(r, "prefixItems", items);
        json_t *more = json_object_get(r, "additionalItems");
        if (more)
            json_object_set(r, "items", more);
        else
            json_object_del(r, "items");
        json_object_del(r, "additionalItems");
    } else if (json_object_get(r, "additionalItems") && !json_is_array(items)) {
        json_object_del(r, "additionalItems"); /* ignored without an item list */
    }
    /* $ref beside validating keywords: both hold (drafts 3 to 7: they are ignored) */
    json_t *ref = json_object_get(r, "$ref");
    if (ref && c->old_ref && has_validator(r, "$ref")) {
        json_t *only = json_pack("{s:O}", "$ref", ref);
        json_decref(r);
        return only;
    }
    if (ref && has_validator(r, "$ref")) {
        json_t *all = json_object_get(r, "allOf");
        all = all ? json_copy(all) : json_array();
        json_array_append_new(all, json_pack("{s:O}", "$ref", ref));
        json_object_del(r, "$ref");
        json_object_set_new(r, "allOf", all);
    }
    /* allOf with a subschema that is an anyOf/oneOf: one branch each (A and
     * (B or C) = (A and B) or (A and C)) */
    json_t *all0 = json_object_get(r, "allOf");
    for (size_t i = 0; json_is_array(all0) && i < json_array_size(all0) && depth < MAX_MERGE_DEPTH; i++) {
        const json_t *part = json_array_get(all0, i), *t = part;
        const json_t *pref = json_object_get(part, "$ref");
        if (json_is_string(pref) && !has_validator(part, "$ref")) {
            gs_ptr_child(p, sizeof p, ptr, "allOf");
            char pi[1024];
            gs_ptr_index(pi, sizeof pi, p, i);
            if (gs_resolve_ref(c, json_string_value(pref), pi, &t))
                goto fail;
        }
        const char *ak = json_object_get(t, "anyOf") ? "anyOf" : json_object_get(t, "oneOf") ? "oneOf" : NULL;
        const json_t *br = ak ? json_object_get(t, ak) : NULL;
        if (!json_is_array(br) || !json_array_size(br) || has_validator(t, ak) || json_object_get(r, "anyOf") ||
            json_object_get(r, "oneOf"))
            continue;
        json_t *branches = json_array();
        for (size_t b = 0; b < json_array_size(br); b++) {
            json_t *one = json_copy(r), *list = json_copy(all0);
            json_array_set(list, i, json_array_get(br, b));
            json_object_set_new(one, "allOf", list);
            json_array_append_new(branches, one);
        }
        json_t *out = json_pack("{s:o}", ak, branches);
        json_decref(r);
        return out;
    }
    /* allOf: merged into one schema; a lone $ref stays a reference */
    json_t *all = json_object_get(r, "allOf");
    if (json_is_array(all) && json_array_size(all) == 1 && !has_validator(r, "allOf")) {
        json_t *one = json_array_get(all, 0);
        if (json_is_object(one) && json_is_string(json_object_get(one, "$ref")) && !has_validator(one, "$ref")) {
            json_object_set(r, "$ref", json_object_get(one, "$ref"));
            json_object_del(r, "allOf");
            all = NULL;
        }
    }
    if (all) {
        gs_ptr_child(p, sizeof p, ptr, "allOf");
        if (!json_is_array(all) || !json_array_size(all)) {
            gs_serr(c, p, "%s", "allOf must be a non-empty list of schemas");
            goto fail;
        }
        json_incref(all);
        json_object_del(r, "allOf");
        json_t *acc = NULL;
        if (json_object_get(r, "anyOf") || json_object_get(r, "oneOf")) {
            /* keep anyOf aside: the merged rest goes into each branch below */
            acc = json_object();
        }
        json_t *base = acc ? NULL : merge_part(c, r, ptr, depth);
        if (!acc && !base) {
            json_decref(all);
            goto fail;
        }
        if (!acc)
            acc = base;
        for (size_t i = 0; i < json_array_size(all); i++) {
            char pi[1024];
            gs_ptr_index(pi, sizeof pi, p, i);
            json_t *part = merge_part(c, json_array_get(all, i), pi, depth);
            if (!part || merge_into(c, acc, part, ptr)) {
                json_decref(part);
                json_decref(acc);
                json_decref(all);
                goto fail;
            }
            json_decref(part);
        }
        json_decref(all);
        if (json_object_get(r, "anyOf") || json_object_get(r, "oneOf")) {
            json_object_foreach(acc, k, v) if (!json_object_get(r, k)) json_object_set(r, k, v);
            json_decref(acc);
        } else {
            json_decref(r);
            r = acc;
            if (!json_object_size(r))
                return r;
        }
    }
    /* anyOf/oneOf whose branches only list required names: conditions on
     * the names present (object_body); oneOf of several holds of objects only */
    const char *rkey = json_object_get(r, "anyOf") ? "anyOf" : json_object_get(r, "oneOf") ? "oneOf" : NULL;
    if (rkey && !depth && required_only(json_object_get(r, rkey)) && few_names(r, json_object_get(r, rkey))) {
        json_t *lists = json_array(), *br = json_object_get(r, rkey);
        size_t i;
        json_t *x;
        json_array_foreach(br, i, x) json_array_append(lists, json_object_get(x, "required"));
        int one = !strcmp(rkey, "oneOf");
        json_object_set_new(r, one ? REQ_ONE : REQ_ANY, lists);
        if (one && json_array_size(br) > 1) {
            json_t *tl = type_list(json_object_get(r, "type"));
            if (!tl || type_has(tl, "object"))
                json_object_set_new(r, "type", json_string("object"));
            json_decref(tl);
        }
        json_object_del(r, rkey);
    }
    /* dependencies that list names: dependentRequired */
    json_t *deps = json_object_get(r, "dependencies");
    if (json_is_object(deps) && !json_object_get(r, "dependentRequired")) {
        int lists = 1;
        json_object_foreach(deps, k, v) lists &= json_is_array(v);
        if (lists) {
            json_object_set(r, "dependentRequired", deps);
            json_object_del(r, "dependencies");
        }
    }
    /* anyOf/oneOf beside validating keywords: each branch gets them */
    const char *anykey = json_object_get(r, "anyOf") ? "anyOf" : json_object_get(r, "oneOf") ? "oneOf" : NULL;
    if (anykey && has_validator(r, anykey) && json_is_array(json_object_get(r, anykey))) {
        json_t *rest = json_object(), *branches = json_array(), *any = json_object_get(r, anykey);
        json_object_foreach(r, k, v) if (strcmp(k, anykey) && strcmp(k, "nullable") && !gv_listed(GS_ANNOTATIONS, k))
            json_object_set(rest, k, v);
        size_t i;
        json_t *x;
        json_array_foreach(any, i, x) json_array_append_new(branches, json_pack("{s:[O,O]}", "allOf", rest, x));
        json_t *out = json_pack("{s:o}", anykey, branches);
        if (json_object_get(r, "nullable"))
            json_object_set(out, "nullable", json_object_get(r, "nullable"));
        json_decref(rest);
        json_decref(r);
        r = out;
    }
    /* keywords that hold whatever the grammar does */
    json_t *t = json_object_get(r, "type");
    if (json_is_false(json_object_get(r, "uniqueItems")))
        json_object_del(r, "uniqueItems");
    json_t *mi = json_object_get(r, "maxItems");
    if (json_object_get(r, "uniqueItems") && json_is_integer(mi) && json_integer_value(mi) <= 1)
        json_object_del(r, "uniqueItems");
    json_t *mo = json_object_get(r, "multipleOf");
    if (json_is_number(mo) && json_number_value(mo) == 1 && json_is_string(t) &&
        (!strcmp(json_string_value(t), "integer") || !strcmp(json_string_value(t), "number"))) {
        json_object_set_new(r, "type", json_string("integer"));
        json_object_del(r, "multipleOf");
    }
    json_t *minp = json_object_get(r, "minProperties"), *maxp = json_object_get(r, "maxProperties");
    json_t *req = json_object_get(r, "required"), *props = json_object_get(r, "properties");
    if (json_is_integer(minp) && json_integer_value(minp) <= (json_int_t)json_array_size(req))
        json_object_del(r, "minProperties"); /* required names are distinct */
    if (json_is_integer(maxp) && json_is_false(json_object_get(r, "additionalProperties")) &&
        json_integer_value(maxp) >= (json_int_t)json_object_size(props))
        json_object_del(r, "maxProperties");
    /* a required property not declared: declared with the schema of
     * additionalProperties (any value when absent or true) */
    json_t *add = json_object_get(r, "additionalProperties");
    json_t *pats = json_object_get(r, "patternProperties");
    if (!depth && (json_is_array(req) || json_object_get(r, "dependentRequired") || json_object_get(r, REQ_ANY) ||
                   json_object_get(r, REQ_ONE)) && (!add || json_is_true(add) || json_is_object(add) || json_is_object(pats)) &&
        (!props || json_is_object(props))) { /* not in a part being merged: its siblings may declare it */
        json_t *np = props ? json_copy(props) : json_object();
        size_t i, added = 0;
        json_t *x, *names = presence_names(r);
        json_array_foreach(names, i, x) if (json_is_string(x) && !json_object_get(np, json_string_value(x)))
        {
            /* a name a pattern matches: its schema comes from the pattern (object_body) */
            const char *pat;
            json_t *ps;
            int matched = 0;
            json_object_foreach(pats, pat, ps) matched |= gv_search(pat, json_string_value(x)) == 1;
            if (!matched && json_is_false(add))
                continue;
            json_object_set_new(np, json_string_value(x),
                                !matched && json_is_object(add) ? json_incref(add) : json_object());
            added++;
        }
        if (added)
            json_object_set(r, "properties", np);
        json_decref(np);
        json_decref(names);
    }
    /* with enum or const, the other keywords filter the values (conv_norm);
     * a part being merged is checked once merged */
    if (depth || json_object_get(r, "enum") || json_object_get(r, "const"))
        return r;
    if (json_object_get(r, "not") && not_types(c, r, ptr))
        goto fail;
    json_object_foreach(r, k, v) if (gv_listed(REFUSED, k))
    {
        gs_ptr_child(p, sizeof p, ptr, k);
        gs_serr(c, p, "unsupported keyword \"%s\"", k);
        goto fail;
    }
    return r;
fail:
    json_decref(r);
    return NULL;
}
