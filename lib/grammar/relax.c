/* relax.c — schemas the grammar cannot express exactly, made from a
 * relaxed schema plus a final check of the finished value.
 *
 * asn_schema_to_gbnf_final converts the schema as it is first. When that
 * is refused for a keyword of a kind below, every keyword of that kind in
 * the schema is relaxed into one that accepts a superset, and the
 * conversion is tried again, one kind more each time, until it compiles or
 * a refusal of another kind is met. The grammar then steers token by token
 * by the relaxed schema and the full validator (validate.c) judges the
 * finished value against the schema itself. Kinds (and what each does to
 * every subschema holding such a keyword):
 *   oneOf     oneOf read as anyOf (anyOf beside it: oneOf dropped)
 *   not       `not` dropped (kept beside enum/const, where it filters values)
 *   if        if / then / else dropped
 *   unique    uniqueItems dropped
 *   presence  dependentRequired, dependencies, dependentSchemas,
 *             minProperties, maxProperties dropped
 *   bounds    fractional minimum / maximum widened to the enclosing
 *             integers, exclusive bounds on numbers to inclusive ones, bounds
 *             beyond 1e15 dropped
 * A number with bounds takes every exponent form of the signs they allow
 * (1e-06 beside minimum 1: a superset) in all of these grammars, and in
 * the schema's own when the validator judges it (the final check then
 * applies though nothing was relaxed); otherwise the exact grammar
 * without exponents.
 *   enum      enum / const holding objects or arrays replaced by the types
 *             of their values
 *   allof     anyOf / oneOf inside a subschema of allOf dropped there
 *   merge     a keyword given differently by two subschemas of allOf kept
 *             in the first only
 *   multiple  multipleOf dropped
 *   contains  contains, minContains, maxContains dropped
 *   names     propertyNames dropped
 * Before any of this the whole schema is checked (gv_check): a keyword the
 * validator cannot judge is refused with its pointer. */
#include "grammar_internal.h"
#include "asn/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    R_ONEOF = 1 << 0,
    R_NOT = 1 << 1,
    R_IF = 1 << 2,
    R_UNIQUE = 1 << 3,
    R_PRESENCE = 1 << 4,
    R_BOUNDS = 1 << 5,
    R_ENUM = 1 << 6,
    R_ALLOF = 1 << 7,
    R_MERGE = 1 << 8,
    R_MULTIPLE = 1 << 9,
    R_CONTAINS = 1 << 10,
    R_NAMES = 1 << 11,
};

/* A refusal of the converter, as the kind of relaxation that lifts it:
 * the first entry whose text the message holds. */
static const struct {
    const char *text;
    unsigned kind;
} KINDS[] = {
    {"oneOf whose branches may overlap", R_ONEOF},
    {"keyword \"not\"", R_NOT},
    {"\"not\" (supported", R_NOT},
    {"not of integer beside number", R_NOT},
    {"keyword \"if\"", R_IF},
    {"keyword \"then\"", R_IF},
    {"keyword \"else\"", R_IF},
    {"keyword \"uniqueItems\"", R_UNIQUE},
    {"keyword \"dependentRequired\"", R_PRESENCE},
    {"keyword \"dependencies\"", R_PRESENCE},
    {"keyword \"dependentSchemas\"", R_PRESENCE},
    {"keyword \"minProperties\"", R_PRESENCE},
    {"keyword \"maxProperties\"", R_PRESENCE},
    {"counting this many undeclared properties", R_PRESENCE},
    {"a dependency must be a list of names", R_PRESENCE},
    {"fractional bounds are not supported", R_BOUNDS},
    {"exclusive bounds are supported on integers only", R_BOUNDS},
    {"out of the supported range (|x| <= 1e15)", R_BOUNDS},
    {"several members in enum/const", R_ENUM},
    {"anyOf/oneOf inside allOf", R_ALLOF},
    {"differs between subschemas", R_MERGE},
    {"keyword \"multipleOf\"", R_MULTIPLE},
    {"keyword \"contains\"", R_CONTAINS},
    {"keyword \"minContains\"", R_CONTAINS},
    {"keyword \"maxContains\"", R_CONTAINS},
    {"keyword \"propertyNames\"", R_NAMES},
};

static unsigned kind_of(const char *msg)
{
    for (size_t i = 0; i < sizeof KINDS / sizeof KINDS[0]; i++)
        if (strstr(msg, KINDS[i].text))
            return KINDS[i].kind;
    return 0;
}

/* The keyword a "keyword \"K\" differs between subschemas" message names. */
static void merge_keyword(const char *msg, char *out, size_t cap)
{
    out[0] = 0;
    const char *q = strstr(msg, "keyword \"");
    if (!q)
        return;
    q += 9;
    size_t n = 0;
    while (q[n] && q[n] != '"' && n + 1 < cap)
        n++;
    memcpy(out, q, n);
    out[n] = 0;
}

/* The keywords of R_MERGE, as "\0"-separated names ended by an empty one. */
static const char *merge_has(const char *mk, const json_t *s)
{
    for (; mk && *mk; mk += strlen(mk) + 1)
        if (json_object_get(s, mk))
            return mk;
    return NULL;
}

static void relax(json_t *s, unsigned kinds, const char *mk, const json_t *root, int depth);

static void relax_list(json_t *l, unsigned kinds, const char *mk, const json_t *root, int depth)
{
    size_t i;
    json_t *x;
    json_array_foreach(l, i, x) relax(x, kinds, mk, root, depth + 1);
}

static int is_compound(const json_t *v)
{
    return json_is_object(v) || json_is_array(v);
}

/* Bounds of s widened to what the grammar writes (R_BOUNDS). */
static void widen_bounds(json_t *s)
{
    const json_t *t = json_object_get(s, "type");
    int integer = json_is_string(t) && !strcmp(json_string_value(t), "integer");
    static const char *const B[4] = {"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"};
    for (int i = 0; i < 4; i++) {
        json_t *b = json_object_get(s, B[i]);
        if (!json_is_number(b))
            continue;
        double d = json_number_value(b);
        if (fabs(d) > 1e15) {
            json_object_del(s, B[i]);
            continue;
        }
        if (integer)
            continue;
        int lower = i < 2;
        double w = lower ? floor(d) : ceil(d);
        const char *plain = lower ? "minimum" : "maximum";
        json_t *cur = json_object_get(s, plain);
        if (i & 1) { /* exclusive: inclusive at the enclosing integer */
            if (json_is_number(cur)) {
                double c = json_number_value(cur);
                w = lower ? fmax(w, floor(c)) : fmin(w, ceil(c));
            }
            json_object_del(s, B[i]);
        }
        json_object_set_new(s, plain, json_real(w));
    }
}

static void relax(json_t *s, unsigned kinds, const char *mk, const json_t *root, int depth)
{
    if (!json_is_object(s) || depth > 200)
        return;
    if ((kinds & R_ONEOF) && json_object_get(s, "oneOf")) {
        if (!json_object_get(s, "anyOf"))
            json_object_set(s, "anyOf", json_object_get(s, "oneOf"));
        json_object_del(s, "oneOf");
    }
    if ((kinds & R_NOT) && json_object_get(s, "not") && !json_object_get(s, "enum") && !json_object_get(s, "const"))
        json_object_del(s, "not");
    if (kinds & R_IF) {
        json_object_del(s, "if");
        json_object_del(s, "then");
        json_object_del(s, "else");
    }
    if (kinds & R_UNIQUE)
        json_object_del(s, "uniqueItems");
    if (kinds & R_PRESENCE) {
        static const char *const P[] = {"dependentRequired", "dependencies", "dependentSchemas", "minProperties",
                                        "maxProperties", NULL};
        for (int i = 0; P[i]; i++)
            json_object_del(s, P[i]);
    }
    if (kinds & R_BOUNDS)
        widen_bounds(s);
    if (kinds & R_MULTIPLE)
        json_object_del(s, "multipleOf");
    if (kinds & R_CONTAINS) {
        json_object_del(s, "contains");
        json_object_del(s, "minContains");
        json_object_del(s, "maxContains");
    }
    if (kinds & R_NAMES)
        json_object_del(s, "propertyNames");
    if (kinds & R_ENUM) {
        json_t *en = json_object_get(s, "enum"), *cn = json_object_get(s, "const");
        int compound = is_compound(cn);
        for (size_t i = 0; json_is_array(en) && i < json_array_size(en); i++)
            compound |= is_compound(json_array_get(en, i));
        if (compound && !json_object_get(s, "type")) {
            json_t *types = json_array();
            for (size_t i = 0; i < (en ? json_array_size(en) : 1); i++) {
                const char *t = asn_json_type_name(en ? json_array_get(en, i) : cn);
                int seen = 0;
                for (size_t j = 0; j < json_array_size(types); j++)
                    seen |= !strcmp(json_string_value(json_array_get(types, j)), t);
                if (!seen)
                    json_array_append_new(types, json_string(t));
            }
            json_object_set_new(s, "type", types);
        }
        if (compound) {
            json_object_del(s, "enum");
            json_object_del(s, "const");
        }
    }
    json_t *all = json_object_get(s, "allOf");
    if ((kinds & (R_ALLOF | R_MERGE)) && json_is_array(all)) {
        json_t *parts = json_array();
        json_t *seen = json_object(); /* the R_MERGE keywords given so far */
        for (const char *m = mk; m && *m; m += strlen(m) + 1)
            if (json_object_get(s, m))
                json_object_set_new(seen, m, json_true());
        for (size_t i = 0; i < json_array_size(all); i++) {
            json_t *part = json_array_get(all, i);
            const json_t *ref = json_object_get(part, "$ref");
            if (json_is_string(ref) && json_object_size(part) == 1) { /* the target, as a copy */
                const json_t *t = gv_pointer(root, json_string_value(ref), NULL);
                if (t && json_is_object(t) && ((kinds & R_ALLOF && (json_object_get(t, "anyOf") || json_object_get(t, "oneOf"))) ||
                                               merge_has(mk, t)))
                    part = (json_t *)t;
            }
            json_t *cp = json_is_object(part) ? json_deep_copy(part) : json_incref(part);
            if (json_is_object(cp) && (kinds & R_ALLOF)) {
                json_object_del(cp, "anyOf");
                json_object_del(cp, "oneOf");
            }
            for (const char *m = mk; json_is_object(cp) && (kinds & R_MERGE) && *m; m += strlen(m) + 1)
                if (json_object_get(cp, m)) {
                    if (json_object_get(seen, m))
                        json_object_del(cp, m);
                    json_object_set_new(seen, m, json_true());
                }
            json_array_append_new(parts, cp);
        }
        json_decref(seen);
        json_object_set_new(s, "allOf", parts);
    }
    const char *k;
    json_t *v;
    json_object_foreach(s, k, v)
    {
        if (gv_listed(GV_ONE_SCHEMA, k) && json_is_object(v))
            relax(v, kinds, mk, root, depth + 1);
        else if (gv_listed(GV_SCHEMA_LISTS, k) && json_is_array(v))
            relax_list(v, kinds, mk, root, depth);
        else if (gv_listed(GV_SCHEMA_MAPS, k) && json_is_object(v)) {
            const char *pk;
            json_t *pv;
            json_object_foreach(v, pk, pv) relax(pv, kinds, mk, root, depth + 1);
        }
    }
}

/* 1 when s is of the format (the grammar of a string of that format
 * decides), 0 when not, -1 when the grammar does not know the format. */
static int format_ok(const char *fmt, const json_t *v)
{
    json_t *sch = json_pack("{s:s,s:s}", "type", "string", "format", fmt);
    asn_err e;
    char *gbnf = asn_schema_to_gbnf(sch, ASN_WS_COMPACT, &e);
    json_decref(sch);
    if (!gbnf)
        return -1;
    asn_grammar *g = asn_gbnf_parse(gbnf, strlen(gbnf), &e);
    free(gbnf);
    if (!g)
        return -1;
    char *text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    asn_gstate st = {0};
    asn_gstate_start(g, &st);
    int ok = text && !asn_gstate_advance(g, &st, text, strlen(text)) && asn_gstate_complete(&st);
    asn_gstate_clear(&st);
    asn_grammar_free(g);
    free(text);
    return ok;
}

static int merge_listed(const char *mk, const char *m)
{
    for (; *mk; mk += strlen(mk) + 1)
        if (!strcmp(mk, m))
            return 1;
    return 0;
}

char *asn_schema_to_gbnf_final(const json_t *schema, asn_ws_rule ws, int *final, asn_err *e)
{
    *final = 0;
    int approx = 0;
    char *g = gs_to_gbnf(schema, ws, 1, &approx, e);
    if (g && approx) { /* exponent forms of bounded numbers: the final check judges them */
        char why[600];
        if (!gv_check(schema, format_ok, why, sizeof why)) {
            *final = 1;
            return g;
        }
        free(g);
        return asn_schema_to_gbnf(schema, ws, e); /* exact, without those forms */
    }
    if (g || !json_is_object(schema))
        return g;
    unsigned kinds = 0, k;
    char mk[1024] = ""; /* R_MERGE's keywords: "a\0b\0\0" */
    size_t mk_len = 0;
    json_t *r = NULL;
    int checked = 0;
    while ((k = kind_of(e->msg)) && (!(kinds & k) || k == R_MERGE)) {
        if (k == R_MERGE) {
            char m[256];
            merge_keyword(e->msg, m, sizeof m);
            size_t n = strlen(m);
            if (!m[0] || merge_listed(mk, m) || mk_len + n + 2 > sizeof mk)
                break;
            memcpy(mk + mk_len, m, n + 1);
            mk_len += n + 1;
            mk[mk_len] = 0;
        }
        if (!checked) { /* the value must be judged in full */
            char why[600];
            if (gv_check(schema, format_ok, why, sizeof why)) {
                asn_err_set(e, "%s (the final check cannot judge it)", why);
                return NULL;
            }
            checked = 1;
        }
        kinds |= k;
        json_decref(r);
        r = json_deep_copy(schema);
        relax(r, kinds, mk, r, 0);
        g = gs_to_gbnf(r, ws, 1, NULL, e);
        if (g) {
            *final = 1;
            break;
        }
    }
    json_decref(r);
    return g;
}

int asn_schema_check_text(const json_t *schema, const char *text, size_t len, char *why, size_t cap)
{
    json_error_t je;
    json_t *v = json_loadb(text, len, JSON_DECODE_ANY, &je);
    if (!v) { /* an integer beyond 64 bits among them: not judged */
        if (why && cap)
            snprintf(why, cap, "not one JSON value: %s", je.text);
        return 0;
    }
    char w[256];
    int r = gv_valid(schema, schema, v, format_ok, w, sizeof w);
    json_decref(v);
    if (r <= 0 && why && cap)
        snprintf(why, cap, r < 0 ? "keyword \"%s\" could not be judged" : "the value fails the schema", w);
    return r > 0;
}
