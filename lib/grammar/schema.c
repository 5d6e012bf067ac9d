/* schema.c — JSON Schema to GBNF.
 *
 * Each subschema becomes a rule (identical bodies share one); $ref targets
 * get their rule before they are converted, so recursive schemas work. An
 * object's members may come in any order, each at most once: the rule of
 * an object with up to MAX_ANY_ORDER properties tracks the set already
 * written (one rule per reachable set), larger objects take their
 * properties in schema order. Keys not declared (additionalProperties
 * absent, true or a schema) are any other string: a rule built from the
 * trie of the declared names refuses exactly those. Keywords that validate
 * and are not understood are refused with their JSON pointer; annotations
 * (title, description, default, examples, ...) are ignored. */
#include "schema_internal.h"
#include "gtext.h"
#include "asn/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bounds past this many digits are refused (int64 arithmetic). */
#define MAX_BOUND 1e15

enum { U_VALUE = 1, U_STRING = 2, U_NUMBER = 4, U_INTEGER = 8, U_CHAR = 16, U_WS = 32 };

/* ------------------------------------------------------------- rules */

/* The rule named for this body (a new one unless the same body exists). */
static const char *add_rule(conv *c, const char *body, char *name_out)
{
    for (int i = 0; i < c->n_bodies; i++)
        if (!strcmp(c->bodies[i].key, body)) {
            strcpy(name_out, c->bodies[i].name);
            return name_out;
        }
    snprintf(name_out, 24, "r%d", c->n_rules++);
    c->bodies = asn_xrealloc(c->bodies, (size_t)(c->n_bodies + 1) * sizeof *c->bodies);
    c->bodies[c->n_bodies].key = asn_xstrdup(body);
    strcpy(c->bodies[c->n_bodies++].name, name_out);
    asn_sbuf_addf(&c->rules, "%s ::= %s\n", name_out, body);
    return name_out;
}

/* Whitespace between tokens: " ws " or " ". */
static const char *W(conv *c)
{
    if (c->ws == ASN_WS_COMPACT)
        return " ";
    c->used |= U_WS;
    return " ws ";
}

static void prim_rules(conv *c, asn_sbuf *b)
{
    if (c->used & U_WS)
        asn_sbuf_addf(b, "ws ::= [ \\t\\n\\r]{0,%d}\n", ASN_WS_MAX);
    if (c->used & (U_STRING | U_CHAR | U_VALUE))
        asn_sbuf_adds(b, "char ::= [^\"\\\\\\x00-\\x1F] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4})\n");
    if (c->used & (U_STRING | U_VALUE))
        asn_sbuf_adds(b, "string ::= \"\\\"\" char* \"\\\"\"\n");
    if (c->used & (U_NUMBER | U_VALUE))
        asn_sbuf_adds(b, "number ::= \"-\"? (\"0\" | [1-9] [0-9]*) (\".\" [0-9]+)? ([eE] [-+]? [0-9]+)?\n");
    if (c->used & U_INTEGER)
        asn_sbuf_adds(b, "integer ::= \"-\"? (\"0\" | [1-9] [0-9]*)\n");
    if (c->used & U_VALUE) {
        const char *w = c->ws == ASN_WS_COMPACT ? " " : " ws ";
        asn_sbuf_addf(b, "value ::= object | array | string | number | \"true\" | \"false\" | \"null\"\n");
        asn_sbuf_addf(b, "object ::= \"{\"%s(string%s\":\"%svalue (%s\",\"%sstring%s\":\"%svalue)*%s)? \"}\"\n", w, w,
                  w, w, w, w, w, w);
        asn_sbuf_addf(b, "array ::= \"[\"%s(value (%s\",\"%svalue)*%s)? \"]\"\n", w, w, w, w);
    }
}

static int conv_schema(conv *c, const json_t *s, const char *ptr, char *name_out);

/* ----------------------------------------------------------- numbers */

/* Digit strings lo..hi of the same length n as a GBNF expression. */
static void digits_range(asn_sbuf *b, const char *lo, const char *hi, int n)
{
    if (!n) {
        asn_sbuf_adds(b, "\"\"");
        return;
    }
    if (!strncmp(lo, hi, (size_t)n)) {
        asn_sbuf_add(b, "\"", 1), asn_sbuf_add(b, lo, (size_t)n), asn_sbuf_add(b, "\"", 1);
        return;
    }
    if (lo[0] == hi[0]) {
        asn_sbuf_addf(b, "\"%c\" ", lo[0]);
        digits_range(b, lo + 1, hi + 1, n - 1);
        return;
    }
    int lo_zero = 1, hi_nine = 1;
    for (int i = 1; i < n; i++)
        lo_zero &= lo[i] == '0', hi_nine &= hi[i] == '9';
    char a = lo_zero ? lo[0] : (char)(lo[0] + 1), z = hi_nine ? hi[0] : (char)(hi[0] - 1);
    asn_sbuf_adds(b, "(");
    int alt = 0;
    char nines[24], zeros[24];
    memset(nines, '9', sizeof nines), memset(zeros, '0', sizeof zeros);
    if (!lo_zero) {
        asn_sbuf_addf(b, "\"%c\" (", lo[0]);
        digits_range(b, lo + 1, nines, n - 1);
        asn_sbuf_adds(b, ")");
        alt = 1;
    }
    if (a <= z) {
        asn_sbuf_addf(b, "%s[%c-%c]", alt ? " | " : "", a, z);
        if (n > 1)
            asn_sbuf_addf(b, " [0-9]{%d}", n - 1);
        alt = 1;
    }
    if (!hi_nine) {
        asn_sbuf_addf(b, "%s\"%c\" (", alt ? " | " : "", hi[0]);
        digits_range(b, zeros, hi + 1, n - 1);
        asn_sbuf_adds(b, ")");
    }
    asn_sbuf_adds(b, ")");
}

/* Non-negative integers a..b (b < 0: no upper bound), as alternatives
 * appended after "|" separators; returns how many were written. */
static int uint_range(asn_sbuf *b, long long a, long long z, int alt)
{
    if (z >= 0 && a > z)
        return alt;
    if (a == 0) {
        asn_sbuf_addf(b, "%s\"0\"", alt ? " | " : "");
        alt = 1, a = 1;
        if (z == 0)
            return alt;
    }
    char lo[24], hi[24];
    long long p = 1;
    for (int d = 1; d <= 18; d++, p *= 10) {
        long long dlo = p, dhi = p * 10 - 1;
        if (dhi < a)
            continue;
        if (z >= 0 && dlo > z)
            break;
        long long x = a > dlo ? a : dlo;
        if (z < 0 && x == dlo) { /* every number of d digits or more */
            asn_sbuf_addf(b, "%s[1-9] [0-9]{%d,}", alt ? " | " : "", d - 1);
            return 1;
        }
        long long y = z >= 0 && z < dhi ? z : dhi;
        snprintf(lo, sizeof lo, "%lld", x);
        snprintf(hi, sizeof hi, "%lld", y);
        asn_sbuf_adds(b, alt ? " | (" : "(");
        digits_range(b, lo, hi, d);
        asn_sbuf_adds(b, ")");
        alt = 1;
    }
    return alt;
}

static int bound(conv *c, const json_t *s, const char *key, const char *ptr, int integer, double *out)
{
    const json_t *v = json_object_get(s, key);
    if (!v)
        return 0;
    char p[1024];
    gs_ptr_child(p, sizeof p, ptr, key);
    if (!json_is_number(v))
        return gs_serr(c, p, "\"%s\" must be a number", key) - 1;
    double d = json_number_value(v);
    if (fabs(d) > MAX_BOUND)
        return gs_serr(c, p, "bound \"%s\" is out of the supported range (|x| <= 1e15)", key) - 1;
    if (!integer && d != floor(d))
        return gs_serr(c, p, "\"%s\" on a number must be an integer (fractional bounds are not supported)",
                    key) - 1;
    *out = d;
    return 1;
}

static int integer_body(conv *c, const json_t *s, const char *ptr, asn_sbuf *b)
{
    double v;
    int k;
    long long lo = 0, hi = 0;
    int has_lo = 0, has_hi = 0;
    if ((k = bound(c, s, "minimum", ptr, 1, &v)) < 0)
        return -1;
    if (k)
        lo = (long long)ceil(v), has_lo = 1;
    if ((k = bound(c, s, "exclusiveMinimum", ptr, 1, &v)) < 0)
        return -1;
    if (k) {
        long long x = (long long)floor(v) + 1;
        if (!has_lo || x > lo)
            lo = x;
        has_lo = 1;
    }
    if ((k = bound(c, s, "maximum", ptr, 1, &v)) < 0)
        return -1;
    if (k)
        hi = (long long)floor(v), has_hi = 1;
    if ((k = bound(c, s, "exclusiveMaximum", ptr, 1, &v)) < 0)
        return -1;
    if (k) {
        long long x = (long long)ceil(v) - 1;
        if (!has_hi || x < hi)
            hi = x;
        has_hi = 1;
    }
    if (!has_lo && !has_hi) {
        c->used |= U_INTEGER;
        asn_sbuf_adds(b, "integer");
        return 0;
    }
    if (has_lo && has_hi && lo > hi)
        return gs_serr(c, ptr, "%s", "no integer lies within minimum and maximum");
    asn_sbuf_adds(b, "(");
    int alt = 0;
    if (!has_lo || lo < 0) { /* negatives: -(1 .. -lo) within hi */
        long long a = has_hi && hi < 0 ? -hi : 1;
        long long z = has_lo ? -lo : -1;
        asn_sbuf_adds(b, "\"-\" (");
        uint_range(b, a, z, 0);
        asn_sbuf_adds(b, ")");
        alt = 1;
    }
    if (!has_hi || hi >= 0)
        uint_range(b, has_lo && lo > 0 ? lo : 0, has_hi ? hi : -1, alt);
    asn_sbuf_adds(b, ")");
    return 0;
}

/* A number with integer bounds: without an exponent, exactly (its
 * fraction free below the upper bound, zeros only at it). With an
 * exponent (1e-06), exactly when the bounds only fix a sign (minimum 0 or
 * maximum 0 alone); otherwise, when c->wide_exp, every exponent form of a
 * sign the bounds allow (a superset: c->approx is set, the final check
 * judges the value), else none. */
static int number_body(conv *c, const json_t *s, const char *ptr, asn_sbuf *b)
{
    double v;
    int k;
    long long L = 0, H = 0;
    int has_lo = 0, has_hi = 0;
    if (json_object_get(s, "exclusiveMinimum") || json_object_get(s, "exclusiveMaximum")) {
        char p[1024];
        gs_ptr_child(p, sizeof p, ptr, json_object_get(s, "exclusiveMinimum") ? "exclusiveMinimum" : "exclusiveMaximum");
        return gs_serr(c, p, "%s", "exclusive bounds are supported on integers only");
    }
    if ((k = bound(c, s, "minimum", ptr, 0, &v)) < 0)
        return -1;
    if (k)
        L = (long long)v, has_lo = 1;
    if ((k = bound(c, s, "maximum", ptr, 0, &v)) < 0)
        return -1;
    if (k)
        H = (long long)v, has_hi = 1;
    if (!has_lo && !has_hi) {
        c->used |= U_NUMBER;
        asn_sbuf_adds(b, "number");
        return 0;
    }
    if (has_lo && has_hi && L > H)
        return gs_serr(c, ptr, "%s", "minimum is above maximum");
    const char *frac = "(\".\" [0-9]+)?", *zfrac = "(\".\" \"0\"+)?";
    asn_sbuf_adds(b, "(");
    int alt = 0;
    /* x >= 0: integer part I with I >= max(L, 0); below H any fraction, at H only zeros */
    if (!has_hi || H >= 0) {
        long long a = has_lo && L > 0 ? L : 0;
        if (!has_hi || H - 1 >= a) {
            asn_sbuf_adds(b, "((");
            uint_range(b, a, has_hi ? H - 1 : -1, 0);
            asn_sbuf_addf(b, ") %s)", frac);
            alt = 1;
        }
        if (has_hi && H >= a) {
            asn_sbuf_addf(b, "%s(\"%lld\" %s)", alt ? " | " : "", H, zfrac);
            alt = 1;
        }
    }
    /* x < 0 written -I.F: I >= -H when H < 0; I < -L, or I = -L with zeros */
    if (!has_lo || L < 0) {
        long long a = has_hi && H < 0 ? -H : 0;
        long long z = has_lo ? -L : -1;
        if (z < 0 || z - 1 >= a) {
            asn_sbuf_addf(b, "%s(\"-\" (", alt ? " | " : "");
            uint_range(b, a, z < 0 ? -1 : z - 1, 0);
            asn_sbuf_addf(b, ") %s)", frac);
            alt = 1;
        }
        if (z >= 0 && z >= a && z > 0) {
            asn_sbuf_addf(b, "%s(\"-%lld\" %s)", alt ? " | " : "", z, zfrac);
            alt = 1;
        }
    }
    const char *mant = "(\"0\" | [1-9] [0-9]*) (\".\" [0-9]+)?", *ex = "[eE] [-+]? [0-9]+";
    int pos = !has_hi || H >= 0, neg = !has_lo || L < 0;
    if (has_lo && !has_hi && L == 0) /* x >= 0 */
        asn_sbuf_addf(b, "%s(%s %s)", alt ? " | " : "", mant, ex);
    else if (has_hi && !has_lo && H == 0) /* x <= 0: negative or zero */
        asn_sbuf_addf(b, "%s(\"-\" %s %s) | (\"0\" (\".\" \"0\"+)? %s)", alt ? " | " : "", mant, ex, ex);
    else if (c->wide_exp && (pos || neg)) {
        asn_sbuf_addf(b, "%s(%s%s %s)", alt ? " | " : "", pos && neg ? "\"-\"? " : pos ? "" : "\"-\" ", mant, ex);
        c->approx = 1;
    }
    asn_sbuf_adds(b, ")");
    return 0;
}

/* ----------------------------------------------------------- strings */

/* String formats as regexes of the contents (JSON Schema's, after RFC 3339,
 * RFC 4122, RFC 1034 and a common form of RFC 5321 addresses). */
/* a calendar date: 31, 30 or 28 days, the 29th of February in leap years */
#define DATE_RE                                                                                              \
    "(\\d{4}-((0[13578]|1[02])-(0[1-9]|[12]\\d|3[01])|(0[469]|11)-(0[1-9]|[12]\\d|30)|02-(0[1-9]|1\\d|2[0-8]))" \
    "|(\\d\\d(0[48]|[2468][048]|[13579][26])|([02468][048]|[13579][26])00)-02-29)"
#define TIME_RE "([01]\\d|2[0-3]):[0-5]\\d:([0-5]\\d|60)(\\.\\d+)?([Zz]|[+-]([01]\\d|2[0-3]):[0-5]\\d)"
#define LABEL_RE "[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
#define OCTET_RE "(25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)"
#define HEX4 "[0-9a-fA-F]{4}"
/* RFC 3986: URI (scheme ":" hier-part, query, fragment) and relative-ref;
 * a host is a reg-name (which covers IPv4 addresses); IP-literals ([v6]) are
 * not generated. */
#define PCT_RE "%[0-9A-Fa-f]{2}"
#define PCHAR_RE "([A-Za-z0-9._~!$&'()*+,;=:@-]|" PCT_RE ")"
#define SEG_RE PCHAR_RE "*"
#define AUTH_RE "(([A-Za-z0-9._~!$&'()*+,;=:-]|" PCT_RE ")*@)?([A-Za-z0-9._~!$&'()*+,;=-]|" PCT_RE ")*(:[0-9]*)?"
#define QF_RE "(\\?(" PCHAR_RE "|[/?])*)?(#(" PCHAR_RE "|[/?])*)?"
#define URI_RE                                                                                               \
    "[A-Za-z][A-Za-z0-9+.-]*:(//" AUTH_RE "(/" SEG_RE ")*|/(" PCHAR_RE "+(/" SEG_RE ")*)?|" PCHAR_RE        \
    "+(/" SEG_RE ")*|)" QF_RE
#define RELREF_RE                                                                                            \
    "(//" AUTH_RE "(/" SEG_RE ")*|/(" PCHAR_RE "+(/" SEG_RE ")*)?|([A-Za-z0-9._~!$&'()*+,;=@-]|" PCT_RE   \
    ")+(/" SEG_RE ")*|)" QF_RE
static const struct {
    const char *name, *re;
} FORMATS[] = {
    {"date", DATE_RE},
    {"time", TIME_RE},
    {"date-time", DATE_RE "[Tt]" TIME_RE},
    {"email", "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@" LABEL_RE "(\\." LABEL_RE ")+"},
    {"uuid", HEX4 HEX4 "-" HEX4 "-" HEX4 "-" HEX4 "-" HEX4 HEX4 HEX4},
    {"ipv4", "(" OCTET_RE "\\.){3}" OCTET_RE},
    {"hostname", LABEL_RE "(\\." LABEL_RE ")*"},
    {"uri", URI_RE},
    {"uri-reference", "(" URI_RE "|" RELREF_RE ")"},
};

/* The formats JSON Schema defines (draft 2020-12, 7.3): one of them that is
 * not in FORMATS is refused; any other name is not a format of JSON Schema
 * and, as the specification says of unknown formats, constrains nothing. */
static const char *const STANDARD_FORMATS[] = {"date-time", "date", "time", "duration", "email", "idn-email",
                                               "hostname", "idn-hostname", "ipv4", "ipv6", "uri", "uri-reference",
                                               "iri", "iri-reference", "uuid", "uri-template", "json-pointer",
                                               "relative-json-pointer", "regex", NULL};

/* Lengths past GBNF's repetition limit (2000) are counted in blocks of
 * 1000^l characters: e_l is exactly 1000^l characters, m_l at most
 * 1000^l - 1, so that a count costs a few rules per digit (base 1000)
 * instead of one rule per character. */
enum { BLOCK = 1000 };
#define MAX_COUNT 1000000000000LL /* 1000^4 */

static void block_rule(conv *c, int l, char *e_out, char *m_out)
{
    char e[24] = "char", m[24] = "\"\"", body[80];
    for (int i = 1; i <= l; i++) {
        char pe[24], pm[24];
        strcpy(pe, e), strcpy(pm, m);
        snprintf(body, sizeof body, "%s{%d}", pe, BLOCK);
        add_rule(c, body, e);
        snprintf(body, sizeof body, "%s{0,%d} %s", pe, BLOCK - 1, pm);
        add_rule(c, body, m);
    }
    if (e_out)
        strcpy(e_out, e);
    if (m_out)
        strcpy(m_out, m);
}

/* At most n characters (n < MAX_COUNT). */
static void at_most(conv *c, asn_sbuf *b, long long n)
{
    if (n < BLOCK) {
        asn_sbuf_addf(b, "char{0,%lld}", n);
        return;
    }
    int l = 0;
    long long p = 1;
    while (p * BLOCK <= n)
        p *= BLOCK, l++;
    long long d = n / p, rest = n % p;
    char e[24], m[24];
    block_rule(c, l, e, m);
    /* fewer than d blocks of p, then fewer than p; or d blocks, then at most rest */
    asn_sbuf_adds(b, "(");
    if (d > 1)
        asn_sbuf_addf(b, "%s{0,%lld} ", e, d - 1);
    asn_sbuf_addf(b, "%s | %s{%lld} ", m, e, d);
    at_most(c, b, rest);
    asn_sbuf_adds(b, ")");
}

/* char{lo,hi} (hi < 0: no upper bound) for any counts below MAX_COUNT. */
static void counted_chars(conv *c, asn_sbuf *b, long long lo, long long hi)
{
    c->used |= U_CHAR;
    if (lo <= 2000 && hi <= 2000) {
        if (hi >= 0)
            asn_sbuf_addf(b, "char{%lld,%lld}", lo, hi);
        else
            asn_sbuf_addf(b, "char{%lld,}", lo);
        return;
    }
    /* exactly lo: its base-1000 digits as blocks */
    long long p = 1;
    int l = 0;
    while (p * BLOCK <= lo)
        p *= BLOCK, l++;
    asn_sbuf_adds(b, "(");
    for (; l >= 0; l--, p /= BLOCK) {
        long long d = lo / p % BLOCK;
        char e[24];
        block_rule(c, l, e, NULL);
        if (d)
            asn_sbuf_addf(b, "%s{%lld} ", e, d);
    }
    if (hi < 0)
        asn_sbuf_adds(b, "char*");
    else
        at_most(c, b, hi - lo);
    asn_sbuf_adds(b, ")");
}

/* A string in every one of the regexes' languages (searched for, as
 * pattern is) of lo to hi code points (hi < 0: no bound): the product of
 * their automata and a counter (dfa.c). ptr names the keyword refused
 * when the automaton is too large. */
static int automaton_string(conv *c, const char *const *res, int n, long long lo, long long hi, const char *ptr,
                            asn_sbuf *b)
{
    gdfa *d = NULL;
    asn_err e2;
    for (int i = 0; i < n; i++) {
        gdfa *x = gdfa_regex(res[i], &e2), *y = x;
        if (x && d) {
            y = gdfa_product(d, x, GDFA_AND, &e2);
            gdfa_free(x), gdfa_free(d);
        }
        d = y;
        if (!d)
            return gs_serr(c, ptr, "%s", e2.msg);
    }
    char name[24];
    snprintf(name, sizeof name, "r%d", c->n_rules++);
    int bad = gdfa_gbnf(d, lo, hi, name, &c->rules, &e2);
    gdfa_free(d);
    if (bad)
        return gs_serr(c, ptr, "%s", e2.msg);
    asn_sbuf_addf(b, "\"\\\"\" %s", name);
    return 0;
}

static int string_body(conv *c, const json_t *s, const char *ptr, asn_sbuf *b)
{
    const json_t *fmt = json_object_get(s, "format");
    if (json_is_string(fmt) && !gv_listed(STANDARD_FORMATS, json_string_value(fmt)))
        fmt = NULL; /* not a format of JSON Schema: an annotation */
    const json_t *pat0 = json_object_get(s, "pattern"), *mn0 = json_object_get(s, "minLength"),
                 *mx0 = json_object_get(s, "maxLength");
    if ((fmt && (pat0 || mn0 || mx0)) || (pat0 && (mn0 || mx0))) {
        /* several of format, pattern, lengths: one automaton */
        char p[1024];
        const char *res[2];
        int n = 0;
        char *fre = NULL;
        if (fmt) {
            gs_ptr_child(p, sizeof p, ptr, "format");
            const char *re = NULL;
            for (size_t i = 0; json_is_string(fmt) && i < sizeof FORMATS / sizeof FORMATS[0]; i++)
                if (!strcmp(FORMATS[i].name, json_string_value(fmt)))
                    re = FORMATS[i].re;
            if (!re)
                return gs_serr(c, p, "unsupported format \"%s\"", json_is_string(fmt) ? json_string_value(fmt) : "");
            fre = asn_xmalloc(strlen(re) + 8);
            sprintf(fre, "^(?:%s)$", re);
            res[n++] = fre;
        }
        if (pat0) {
            gs_ptr_child(p, sizeof p, ptr, "pattern");
            if (!json_is_string(pat0)) {
                free(fre);
                return gs_serr(c, p, "%s", "pattern must be a string");
            }
            res[n++] = json_string_value(pat0);
        }
        const char *which = mx0 ? "maxLength" : mn0 ? "minLength" : "pattern";
        if (mn0 && (!json_is_integer(mn0) || json_integer_value(mn0) < 0 || json_integer_value(mn0) >= MAX_COUNT))
            which = NULL, gs_ptr_child(p, sizeof p, ptr, "minLength");
        if (mx0 && (!json_is_integer(mx0) || json_integer_value(mx0) < 0 || json_integer_value(mx0) >= MAX_COUNT))
            which = NULL, gs_ptr_child(p, sizeof p, ptr, "maxLength");
        if (!which) {
            free(fre);
            return gs_serr(c, p, "%s", "minLength and maxLength must be integers in [0, 10^12)");
        }
        gs_ptr_child(p, sizeof p, ptr, which);
        long long lo = mn0 ? (long long)json_integer_value(mn0) : 0, hi = mx0 ? (long long)json_integer_value(mx0) : -1;
        int bad = automaton_string(c, res, n, lo, hi, p, b);
        free(fre);
        return bad;
    }
    if (fmt) {
        char p[1024];
        gs_ptr_child(p, sizeof p, ptr, "format");
        if (!json_is_string(fmt))
            return gs_serr(c, p, "%s", "format must be a string");
        const char *re = NULL;
        for (size_t i = 0; i < sizeof FORMATS / sizeof FORMATS[0]; i++)
            if (!strcmp(FORMATS[i].name, json_string_value(fmt)))
                re = FORMATS[i].re;
        if (!re && gv_listed(STANDARD_FORMATS, json_string_value(fmt)))
            return gs_serr(c, p, "unsupported format \"%s\"", json_string_value(fmt));
        asn_sbuf x = {0};
        asn_err e2;
        if (asn_regex_expr(re, 1, &x, NULL, &e2)) {
            free(x.buf);
            return gs_serr(c, p, "%s", e2.msg);
        }
        asn_sbuf_adds(b, "\"\\\"\" ");
        asn_sbuf_add(b, x.buf, x.len);
        asn_sbuf_adds(b, " \"\\\"\"");
        free(x.buf);
        return 0;
    }
    const json_t *pat = json_object_get(s, "pattern");
    const json_t *mn = json_object_get(s, "minLength"), *mx = json_object_get(s, "maxLength");
    char p[1024];
    if (mn && (!json_is_integer(mn) || json_integer_value(mn) < 0 || json_integer_value(mn) >= MAX_COUNT)) {
        gs_ptr_child(p, sizeof p, ptr, "minLength");
        return gs_serr(c, p, "%s", "minLength must be an integer in [0, 10^12)");
    }
    if (mx && (!json_is_integer(mx) || json_integer_value(mx) < 0 || json_integer_value(mx) >= MAX_COUNT)) {
        gs_ptr_child(p, sizeof p, ptr, "maxLength");
        return gs_serr(c, p, "%s", "maxLength must be an integer in [0, 10^12)");
    }
    if (pat) {
        gs_ptr_child(p, sizeof p, ptr, "pattern");
        if (!json_is_string(pat))
            return gs_serr(c, p, "%s", "pattern must be a string");
        asn_sbuf x = {0};
        int anch = 0;
        asn_err e2;
        if (asn_regex_expr(json_string_value(pat), 1, &x, &anch, &e2)) {
            /* anchors inside the pattern (^a|b$): its automaton can say it */
            free(x.buf);
            const char *one = json_string_value(pat);
            asn_err e3, *keep = c->e;
            c->e = &e3;
            size_t mark = c->rules.len;
            int bad = automaton_string(c, &one, 1, 0, -1, p, b);
            c->e = keep;
            if (bad) {
                c->rules.len = mark; /* the rules it wrote before it gave up */
                if (c->rules.buf)
                    c->rules.buf[mark] = 0;
                return gs_serr(c, p, "%s", e2.msg);
            }
            return 0;
        }
        c->used |= U_CHAR;
        asn_sbuf_addf(b, "\"\\\"\" %s", anch & 1 ? "" : "char* ");
        asn_sbuf_add(b, x.buf, x.len);
        asn_sbuf_addf(b, " %s\"\\\"\"", anch & 2 ? "" : "char* ");
        free(x.buf);
        return 0;
    }
    if (!mn && !mx) {
        c->used |= U_STRING;
        asn_sbuf_adds(b, "string");
        return 0;
    }
    long long lo = mn ? (long long)json_integer_value(mn) : 0;
    long long hi = mx ? (long long)json_integer_value(mx) : -1;
    if (hi >= 0 && hi < lo)
        return gs_serr(c, ptr, "%s", "maxLength is below minLength");
    c->used |= U_CHAR;
    asn_sbuf_adds(b, "\"\\\"\" ");
    counted_chars(c, b, lo, hi);
    asn_sbuf_adds(b, " \"\\\"\"");
    return 0;
}

/* ----------------------------------------------------------- objects */

/* A JSON string that is none of the n (encoded) keys: one rule per node of
 * the keys' trie. Writes the start rule's name. */
typedef struct knode {
    uint32_t *ch; /* children's code points */
    int *kid;
    int n;
    int end;      /* a key ends here */
} knode;

static int key_trie_add(knode **t, int *nt, const char *s, size_t len)
{
    int cur = 0;
    for (size_t i = 0; i < len;) {
        uint32_t c = (unsigned char)s[i];
        int k = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : 4;
        if (k > 1) {
            c &= k == 2 ? 0x1F : k == 3 ? 0x0F : 0x07;
            for (int j = 1; j < k && i + (size_t)j < len; j++)
                c = (c << 6) | ((unsigned char)s[i + (size_t)j] & 0x3F);
        }
        i += (size_t)k;
        int next = -1;
        for (int j = 0; j < (*t)[cur].n; j++)
            if ((*t)[cur].ch[j] == c)
                next = (*t)[cur].kid[j];
        if (next < 0) {
            *t = asn_xrealloc(*t, (size_t)(*nt + 1) * sizeof **t);
            memset(&(*t)[*nt], 0, sizeof **t);
            next = (*nt)++;
            knode *p = &(*t)[cur];
            p->ch = asn_xrealloc(p->ch, (size_t)(p->n + 1) * sizeof *p->ch);
            p->kid = asn_xrealloc(p->kid, (size_t)(p->n + 1) * sizeof *p->kid);
            p->ch[p->n] = c, p->kid[p->n] = next, p->n++;
        }
        cur = next;
    }
    (*t)[cur].end = 1;
    return 0;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static void not_key_rule(conv *c, knode *t, int node, char *name_out)
{
    asn_sbuf b = {0};
    char kid[24];
    c->used |= U_CHAR;
    /* the string may end here unless a key ends here */
    int alt = 0;
    if (!t[node].end)
        asn_sbuf_adds(&b, "\"\\\"\""), alt = 1;
    /* a character no key continues with, then anything */
    uint32_t *r = asn_xmalloc((size_t)(2 * t[node].n + 8) * sizeof *r);
    uint32_t *cs = asn_xmalloc((size_t)(t[node].n + 3) * sizeof *cs);
    int m = 0;
    cs[m++] = '"', cs[m++] = '\\';
    for (int j = 0; j < t[node].n; j++)
        cs[m++] = t[node].ch[j];
    qsort(cs, (size_t)m, sizeof *cs, cmp_u32);
    int nr = 0;
    uint32_t next = 0x20;
    for (int j = 0; j < m; j++) {
        if (cs[j] < next)
            continue;
        if (cs[j] > next)
            r[2 * nr] = next, r[2 * nr + 1] = cs[j] - 1, nr++;
        next = cs[j] + 1;
    }
    r[2 * nr] = next, r[2 * nr + 1] = 0x10FFFF, nr++;
    asn_sbuf_adds(&b, alt ? " | " : "");
    asn_sbuf_adds(&b, "(");
    sb_gclass(&b, r, nr);
    asn_sbuf_adds(&b, " | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4})) char* \"\\\"\"");
    for (int j = 0; j < t[node].n; j++) {
        not_key_rule(c, t, t[node].kid[j], kid);
        asn_sbuf_adds(&b, " | \"");
        sb_gchar(&b, t[node].ch[j]);
        asn_sbuf_addf(&b, "\" %s", kid);
    }
    add_rule(c, b.buf, name_out);
    free(b.buf);
    free(r);
    free(cs);
}

typedef struct prop {
    const char *name;
    char kv[24]; /* rule: "name" : value */
    int required;
} prop;

static int count_required(const prop *pr, int n)
{
    int k = 0;
    for (int j = 0; j < n; j++)
        k += pr[j].required;
    return k;
}

/* The conditions on which members an object has, for objects of up to
 * MAX_ANY_ORDER declared properties: sets of them as bit masks over the
 * declared properties, and the count of undeclared members (e, counted up
 * to e_cap). */
typedef struct presence {
    const char *what;        /* the first keyword that makes one (for messages), NULL: none */
    unsigned req;            /* required */
    unsigned *dep_if, *dep_then; /* dependentRequired: present dep_if[i] -> dep_then[i] present */
    int n_dep;
    unsigned *any, *one;     /* REQ_ANY / REQ_ONE: the branches that can hold */
    int n_any, n_one, has_any, has_one;
    long long min_p, max_p;  /* -1: none */
    int e_cap;
} presence;

static void presence_clear(presence *pc)
{
    free(pc->dep_if), free(pc->dep_then), free(pc->any), free(pc->one);
}

/* The mask of the names in list l (strings); -1 when one is not declared. */
static long long names_mask(const json_t *l, const prop *pr, int n)
{
    unsigned m = 0;
    size_t i;
    const json_t *x;
    json_array_foreach(l, i, x)
    {
        int j = 0;
        while (j < n && strcmp(pr[j].name, json_string_value(x)))
            j++;
        if (j == n)
            return -1;
        m |= 1u << j;
    }
    return m;
}

static int presence_read(conv *c, const json_t *s, const char *ptr, const prop *pr, int n, int extras, presence *pc)
{
    char p[1024];
    memset(pc, 0, sizeof *pc);
    pc->min_p = pc->max_p = -1;
    static const char *const KEYS[] = {"minProperties", "maxProperties", "dependentRequired", REQ_ANY, REQ_ONE};
    static const char *const SHOWN[] = {"minProperties", "maxProperties", "dependentRequired", "anyOf", "oneOf"};
    for (int i = 0; i < 5; i++)
        if (json_object_get(s, KEYS[i]) && !pc->what)
            pc->what = SHOWN[i];
    for (int i = 0; i < 2; i++) {
        const json_t *m = json_object_get(s, KEYS[i]);
        gs_ptr_child(p, sizeof p, ptr, KEYS[i]);
        if (m && (!json_is_integer(m) || json_integer_value(m) < 0))
            return gs_serr(c, p, "%s must be a non-negative integer", KEYS[i]);
        if (m)
            *(i ? &pc->max_p : &pc->min_p) = json_integer_value(m);
    }
    const json_t *dr = json_object_get(s, "dependentRequired");
    gs_ptr_child(p, sizeof p, ptr, "dependentRequired");
    if (dr && !json_is_object(dr))
        return gs_serr(c, p, "%s", "dependentRequired must be an object of lists of names");
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)dr, k, v)
    {
        size_t i;
        const json_t *x;
        int ok = json_is_array(v);
        json_array_foreach(v, i, x) ok &= json_is_string(x);
        if (!ok) {
            char pk[1024];
            gs_ptr_child(pk, sizeof pk, p, k);
            return gs_serr(c, pk, "%s", "a dependency must be a list of names");
        }
    }
    for (int g = 0; g < 2; g++) {
        const json_t *l = json_object_get(s, g ? REQ_ONE : REQ_ANY);
        *(g ? &pc->has_one : &pc->has_any) = l != NULL;
    }
    for (int j = 0; j < n && j < MAX_ANY_ORDER; j++)
        pc->req |= (unsigned)pr[j].required << j;
    if (n > MAX_ANY_ORDER || !pc->what)
        return 0;
    if (extras && (pc->min_p >= 0 || pc->max_p >= 0)) {
        long long cap = pc->max_p >= 0 ? pc->max_p : pc->min_p;
        if (((long long)1 << n) * (cap + 1) > 4096) {
            gs_ptr_child(p, sizeof p, ptr, pc->max_p >= 0 ? "maxProperties" : "minProperties");
            return gs_serr(c, p, "%s", "counting this many undeclared properties is not supported");
        }
        pc->e_cap = (int)cap;
    }
    size_t nd = json_object_size(dr);
    pc->dep_if = asn_xcalloc(nd + 1, sizeof *pc->dep_if);
    pc->dep_then = asn_xcalloc(nd + 1, sizeof *pc->dep_then);
    json_object_foreach((json_t *)dr, k, v)
    {
        json_t *one = json_pack("[s]", k);
        long long a = names_mask(one, pr, n), t = names_mask(v, pr, n);
        json_decref(one);
        if (a < 0) /* not declared: cannot be present (normalize declares it otherwise) */
            continue;
        pc->dep_if[pc->n_dep] = (unsigned)a;
        pc->dep_then[pc->n_dep++] = t < 0 ? ~0u : (unsigned)t; /* ~0u: a name that cannot be present */
    }
    for (int g = 0; g < 2; g++) {
        const json_t *l = json_object_get(s, g ? REQ_ONE : REQ_ANY);
        unsigned *m = asn_xcalloc(json_array_size(l) + 1, sizeof *m);
        int nm = 0;
        size_t i;
        const json_t *x;
        json_array_foreach(l, i, x)
        {
            long long b = names_mask(x, pr, n);
            if (b >= 0) /* a branch that requires an undeclared name never holds */
                m[nm++] = (unsigned)b;
        }
        if (g)
            pc->one = m, pc->n_one = nm;
        else
            pc->any = m, pc->n_any = nm;
    }
    return 0;
}

/* Whether an object whose declared members are S, with e undeclared ones,
 * satisfies the conditions. */
static int presence_accepts(const presence *pc, unsigned S, int e)
{
    if ((S & pc->req) != pc->req)
        return 0;
    for (int i = 0; i < pc->n_dep; i++)
        if ((S & pc->dep_if[i]) && (S & pc->dep_then[i]) != pc->dep_then[i])
            return 0;
    int any = 0, one = 0;
    for (int i = 0; i < pc->n_any; i++)
        any |= (S & pc->any[i]) == pc->any[i];
    for (int i = 0; i < pc->n_one; i++)
        one += (S & pc->one[i]) == pc->one[i];
    if ((pc->has_any && !any) || (pc->has_one && one != 1))
        return 0;
    long long count = __builtin_popcount(S) + e;
    return count >= pc->min_p && (pc->max_p < 0 || count <= pc->max_p);
}

/* The members not declared when patternProperties' patterns overlap the
 * declared names, each other or additionalProperties: the names are
 * shared out by automata (dfa.c), a name matching exactly the patterns of
 * set T (and not declared) taking the schemas of T together, one
 * matching none additionalProperties. Writes the rule of one such member
 * (empty when there is none). */
enum { MAX_PATTERNS = 4 };

static int pattern_members(conv *c, const json_t *pats, const prop *pr, int n, const json_t *add, const char *ptr,
                           char *extra)
{
    char pq[1024];
    gs_ptr_child(pq, sizeof pq, ptr, "patternProperties");
    int m = (int)json_object_size(pats);
    if (m > MAX_PATTERNS)
        return gs_serr(c, pq, "%s", "more than 4 patterns in patternProperties beside other names is not supported");
    gdfa *d[MAX_PATTERNS], *decl, *any = gdfa_any();
    const json_t *sch[MAX_PATTERNS];
    const char **names = asn_xcalloc((size_t)n + 1, sizeof *names);
    for (int j = 0; j < n; j++)
        names[j] = pr[j].name;
    decl = gdfa_names(names, n);
    free(names);
    int k = 0, bad = 0;
    const char *pat;
    const json_t *ps;
    asn_err e2;
    json_object_foreach((json_t *)pats, pat, ps)
    {
        sch[k] = ps;
        if (!(d[k] = gdfa_regex(pat, &e2))) {
            char pi[1024];
            gs_ptr_child(pi, sizeof pi, pq, pat);
            gs_serr(c, pi, "%s", e2.msg);
            bad = 1;
            break;
        }
        k++;
    }
    asn_sbuf alts = {0};
    /* T = 0: additionalProperties */
    for (unsigned T = 0; !bad && T < 1u << k; T++) {
        json_t *v;
        if (!T) {
            if (json_is_false(add))
                continue;
            v = add ? json_incref((json_t *)add) : json_true();
        } else {
            v = json_pack("{s:[]}", "allOf");
            int no = 0;
            for (int i = 0; i < k; i++)
                if (T >> i & 1) {
                    no |= json_is_false(sch[i]);
                    json_array_append(json_object_get(v, "allOf"), (json_t *)sch[i]);
                }
            if (no) {
                json_decref(v);
                continue;
            }
        }
        gdfa *L = any, *x;
        for (int i = 0; L && i <= k; i++) {
            x = gdfa_product(L, i < k ? d[i] : decl, i < k && T >> i & 1 ? GDFA_AND : GDFA_ANDNOT, &e2);
            if (L != any)
                gdfa_free(L);
            L = x;
        }
        if (!L) {
            gs_serr(c, pq, "%s", e2.msg);
            json_decref(v);
            bad = 1;
            break;
        }
        if (!gdfa_empty(L)) {
            char key[24], vr[24], pv[1024];
            snprintf(key, sizeof key, "r%d", c->n_rules++);
            gs_ptr_child(pv, sizeof pv, ptr, T ? "patternProperties" : "additionalProperties");
            if (gdfa_gbnf(L, 0, -1, key, &c->rules, &e2) ? gs_serr(c, pq, "%s", e2.msg) : conv_schema(c, v, pv, vr))
                bad = 1;
            else
                asn_sbuf_addf(&alts, "%s\"\\\"\" %s%s\":\"%s%s", alts.len ? " | " : "", key, W(c), W(c), vr);
        }
        gdfa_free(L);
        json_decref(v);
    }
    for (int i = 0; i < k; i++)
        gdfa_free(d[i]);
    gdfa_free(decl), gdfa_free(any);
    if (!bad && alts.len)
        add_rule(c, asn_sbuf_str(&alts), extra);
    asn_sbuf_release(&alts);
    return bad ? -1 : 0;
}

static int object_body(conv *c, const json_t *s, const char *ptr, asn_sbuf *b)
{
    const json_t *props = json_object_get(s, "properties"), *req = json_object_get(s, "required");
    const json_t *add = json_object_get(s, "additionalProperties");
    char p[1024];
    if (props && !json_is_object(props)) {
        gs_ptr_child(p, sizeof p, ptr, "properties");
        return gs_serr(c, p, "%s", "properties must be an object");
    }
    if (req && !json_is_array(req)) {
        gs_ptr_child(p, sizeof p, ptr, "required");
        return gs_serr(c, p, "%s", "required must be a list of strings");
    }
    int np = props ? (int)json_object_size(props) : 0;
    int nreq_extra = 0;
    prop *pr = asn_xcalloc((size_t)(np + (req ? json_array_size(req) : 0) + 1), sizeof *pr);
    int n = 0;
    const char *key;
    const json_t *sub;
    char pp[1024], pk[1024];
    gs_ptr_child(pp, sizeof pp, ptr, "properties");
    /* patternProperties: one schema for every pattern (the same schema
     * given to several patterns is one pattern, their alternatives) */
    const json_t *pats = json_object_get(s, "patternProperties"), *pat_schema = NULL;
    asn_sbuf patkey = {0};
    int universal = 0, general = 0; /* general: names shared out by automata (pattern_members) */
    if (pats) {
        char pq[1024];
        gs_ptr_child(pq, sizeof pq, ptr, "patternProperties");
        if (!json_is_object(pats)) {
            gs_serr(c, pq, "%s", "patternProperties must be an object");
            goto fail;
        }
        const char *pat;
        const json_t *ps;
        json_object_foreach((json_t *)pats, pat, ps)
        {
            char pi[1024];
            gs_ptr_child(pi, sizeof pi, pq, pat);
            if (pat_schema && !json_equal(pat_schema, ps))
                general = 1;
            pat_schema = ps;
            asn_sbuf x = {0};
            int anch = 0;
            asn_err e2;
            if (asn_regex_expr(pat, 1, &x, &anch, &e2)) {
                asn_sbuf_release(&x);
                gdfa *d = gdfa_regex(pat, &e2); /* anchors inside the pattern: automata can say it */
                if (!d) {
                    gs_serr(c, pi, "%s", e2.msg);
                    goto fail;
                }
                gdfa_free(d);
                general = 1;
                continue;
            }
            c->used |= U_CHAR;
            asn_sbuf_addf(&patkey, "%s(%s", patkey.len ? " | " : "", anch & 1 ? "" : "char* ");
            asn_sbuf_add(&patkey, x.buf, x.len);
            asn_sbuf_addf(&patkey, " %s)", anch & 2 ? "" : "char*");
            asn_sbuf_release(&x);
            /* matches every name: it may match the empty string where it is not anchored */
            universal |= anch != 3 && gv_search(pat, "") == 1;
        }
        json_object_foreach((json_t *)props, key, sub)
        {
            /* a name declared with any value (a required name, see normalize) may come as a pattern's */
            int any = json_is_true(sub) || (json_is_object(sub) && !json_object_size(sub));
            json_object_foreach((json_t *)pats, pat, ps) general |= gv_search(pat, key) == 1 && !universal && !any;
        }
        general |= !universal && !json_is_false(add);
    }
    json_object_foreach((json_t *)props, key, sub)
    {
        pr[n].name = key;
        char vr[24];
        gs_ptr_child(pk, sizeof pk, pp, key);
        /* the schemas of the patterns that match the name apply too */
        json_t *both = json_pack("{s:[O]}", "allOf", sub), *all = json_object_get(both, "allOf");
        const char *pat;
        const json_t *ps;
        json_object_foreach((json_t *)pats, pat, ps) if (!general ? universal || gv_search(pat, key) == 1
                                                                    : gv_search(pat, key) == 1)
        {
            json_array_append((json_t *)all, (json_t *)(general ? ps : pat_schema));
            if (!general)
                break;
        }
        if (json_array_size(all) == 1)
            json_decref(both), both = NULL;
        int bad = conv_schema(c, both ? both : sub, pk, vr);
        json_decref(both);
        if (bad)
            goto fail;
        asn_sbuf kv = {0};
        json_t *js = json_string(key);
        char *enc = json_dumps(js, JSON_ENCODE_ANY);
        json_decref(js);
        sb_gliteral(&kv, enc, strlen(enc));
        free(enc);
        asn_sbuf_addf(&kv, "%s\":\"%s%s", W(c), W(c), vr);
        add_rule(c, kv.buf, pr[n].kv);
        free(kv.buf);
        n++;
    }
    for (size_t i = 0; req && i < json_array_size(req); i++) {
        const json_t *r = json_array_get(req, i);
        gs_ptr_index(pk, sizeof pk, ptr, i);
        if (!json_is_string(r)) {
            gs_ptr_child(pk, sizeof pk, ptr, "required");
            gs_serr(c, pk, "%s", "required must be a list of strings");
            goto fail;
        }
        int found = 0;
        for (int j = 0; j < n; j++)
            if (!strcmp(pr[j].name, json_string_value(r)))
                pr[j].required = 1, found = 1;
        if (!found)
            nreq_extra++;
    }
    if (nreq_extra) {
        gs_ptr_child(pk, sizeof pk, ptr, "required");
        gs_serr(c, pk, "%s", "a required property must be listed in properties");
        goto fail;
    }
    /* extra members */
    char extra[24] = "";
    if (general) {
        if (pattern_members(c, pats, pr, n, add, ptr, extra))
            goto fail;
    } else if (pat_schema && !universal) { /* additionalProperties is false */
        char vr[24];
        gs_ptr_child(pk, sizeof pk, ptr, "patternProperties");
        if (conv_schema(c, pat_schema, pk, vr))
            goto fail;
        asn_sbuf kv = {0};
        asn_sbuf_addf(&kv, "\"\\\"\" (%s) \"\\\"\"%s\":\"%s%s", asn_sbuf_str(&patkey), W(c), W(c), vr);
        add_rule(c, asn_sbuf_str(&kv), extra);
        asn_sbuf_release(&kv);
    } else if (pat_schema || !add || json_is_true(add) || json_is_object(add)) {
        char vr[24], nk[24];
        gs_ptr_child(pk, sizeof pk, ptr, pat_schema ? "patternProperties" : "additionalProperties");
        if (pat_schema) { /* every other name matches the pattern */
            if (conv_schema(c, pat_schema, pk, vr))
                goto fail;
        } else if (add && json_is_object(add)) {
            if (conv_schema(c, add, pk, vr))
                goto fail;
        } else {
            c->used |= U_VALUE;
            strcpy(vr, "value");
        }
        knode *t = asn_xcalloc(1, sizeof *t);
        int nt = 1;
        for (int j = 0; j < n; j++) {
            json_t *js = json_string(pr[j].name);
            char *enc = json_dumps(js, JSON_ENCODE_ANY);
            json_decref(js);
            key_trie_add(&t, &nt, enc + 1, strlen(enc) - 2);
            free(enc);
        }
        not_key_rule(c, t, 0, nk);
        for (int j = 0; j < nt; j++)
            free(t[j].ch), free(t[j].kid);
        free(t);
        asn_sbuf kv = {0};
        asn_sbuf_addf(&kv, "\"\\\"\" %s%s\":\"%s%s", nk, W(c), W(c), vr);
        add_rule(c, kv.buf, extra);
        free(kv.buf);
    } else if (!json_is_false(add)) {
        gs_ptr_child(pk, sizeof pk, ptr, "additionalProperties");
        gs_serr(c, pk, "%s", "additionalProperties must be a boolean or a schema");
        goto fail;
    }
    const char *w = W(c);
    presence pc;
    if (presence_read(c, s, ptr, pr, n, extra[0] != 0, &pc))
        goto fail;
    if (n <= MAX_ANY_ORDER) {
        /* after at least one member, with set S of declared ones written and
         * e undeclared ones (counted up to pc.e_cap): rule more[S][e] */
        int ns = 1 << n, ne = pc.e_cap + 1;
        char(*more)[24] = asn_xcalloc((size_t)ns * (size_t)ne, sizeof *more);
        unsigned char *live = asn_xcalloc((size_t)ns * (size_t)ne, 1);
        for (int S = ns - 1; S >= 0; S--)
            for (int e = ne - 1; e >= 0; e--) {
                int st = S * ne + e, e2 = e + 1 > pc.e_cap ? (pc.max_p >= 0 ? -1 : e) : e + 1;
                live[st] = presence_accepts(&pc, (unsigned)S, e);
                for (int j = 0; j < n; j++)
                    live[st] |= !(S >> j & 1) && live[(S | 1 << j) * ne + e];
                live[st] |= extra[0] && e2 > e && live[S * ne + e2];
            }
        for (int S = ns - 1; S >= 0; S--)
            for (int e = ne - 1; e >= 0; e--) {
                int st = S * ne + e, e2 = e + 1 > pc.e_cap ? (pc.max_p >= 0 ? -1 : e) : e + 1;
                if (!live[st])
                    continue;
                asn_sbuf x = {0};
                int alt = 0;
                if (presence_accepts(&pc, (unsigned)S, e))
                    asn_sbuf_addf(&x, "%s\"}\"", w + 1), alt = 1;
                for (int j = 0; j < n; j++)
                    if (!(S >> j & 1) && live[(S | 1 << j) * ne + e]) {
                        asn_sbuf_addf(&x, "%s%s\",\"%s%s %s", alt ? " | " : "", w + 1, w, pr[j].kv,
                                      more[(S | 1 << j) * ne + e]);
                        alt = 1;
                    }
                if (extra[0] && e2 == e) {
                    /* more[S][e] refers to itself: name it first */
                    char self[24];
                    snprintf(self, sizeof self, "r%d", c->n_rules++);
                    asn_sbuf_addf(&x, "%s%s\",\"%s%s %s", alt ? " | " : "", w + 1, w, extra, self);
                    asn_sbuf_addf(&c->rules, "%s ::= %s\n", self, x.buf);
                    strcpy(more[st], self);
                } else {
                    if (extra[0] && e2 > e && live[S * ne + e2])
                        asn_sbuf_addf(&x, "%s%s\",\"%s%s %s", alt ? " | " : "", w + 1, w, extra, more[S * ne + e2]);
                    add_rule(c, x.buf, more[st]);
                }
                free(x.buf);
            }
        if (!live[0]) { /* no set of members satisfies the conditions */
            asn_sbuf_adds(b, "[^\\x00-\\U0010FFFF]");
        } else {
            asn_sbuf_addf(b, "\"{\"%s(", w);
            int alt = 0;
            if (presence_accepts(&pc, 0, 0))
                asn_sbuf_adds(b, "\"}\""), alt = 1;
            for (int j = 0; j < n; j++)
                if (live[(1 << j) * ne]) {
                    asn_sbuf_addf(b, "%s%s %s", alt ? " | " : "", pr[j].kv, more[(1 << j) * ne]);
                    alt = 1;
                }
            int e1 = pc.e_cap >= 1 ? 1 : pc.max_p >= 0 ? -1 : 0;
            if (extra[0] && e1 >= 0 && live[e1])
                asn_sbuf_addf(b, "%s%s %s", alt ? " | " : "", extra, more[e1]);
            asn_sbuf_adds(b, ")");
        }
        free(more);
        free(live);
        presence_clear(&pc);
    } else if (pc.what) {
        gs_ptr_child(pk, sizeof pk, ptr, pc.what);
        presence_clear(&pc);
        gs_serr(c, pk, "keyword \"%s\" on an object of more than 8 declared properties is not supported", pc.what);
        goto fail;
    } else if (count_required(pr, n) <= MAX_ANY_ORDER) {
        /* any order, tracking the required properties written (set S of
         * their indices among the required); an optional one may repeat */
        int nr = 0, *ri = asn_xcalloc((size_t)n + 1, sizeof *ri); /* property -> required index or -1 */
        for (int j = 0; j < n; j++)
            ri[j] = pr[j].required ? nr++ : -1;
        int ns = 1 << nr;
        char(*more)[24] = asn_xcalloc((size_t)ns, sizeof *more);
        for (int S = 0; S < ns; S++) /* names first: the rules refer to each other */
            snprintf(more[S], sizeof more[S], "r%d", c->n_rules++);
        for (int S = ns - 1; S >= 0; S--) {
            asn_sbuf x = {0};
            int alt = 0;
            if (S == ns - 1)
                asn_sbuf_addf(&x, "%s\"}\"", w + 1), alt = 1;
            for (int j = 0; j < n; j++) {
                if (ri[j] >= 0 && (S >> ri[j] & 1))
                    continue;
                asn_sbuf_addf(&x, "%s%s\",\"%s%s %s", alt ? " | " : "", w + 1, w, pr[j].kv,
                          more[ri[j] >= 0 ? S | 1 << ri[j] : S]);
                alt = 1;
            }
            if (extra[0])
                asn_sbuf_addf(&x, "%s%s\",\"%s%s %s", alt ? " | " : "", w + 1, w, extra, more[S]);
            asn_sbuf_addf(&c->rules, "%s ::= %s\n", more[S], x.buf);
            free(x.buf);
        }
        asn_sbuf_addf(b, "\"{\"%s(", w);
        int alt = 0;
        if (!nr)
            asn_sbuf_adds(b, "\"}\""), alt = 1;
        for (int j = 0; j < n; j++) {
            asn_sbuf_addf(b, "%s%s %s", alt ? " | " : "", pr[j].kv, more[ri[j] >= 0 ? 1 << ri[j] : 0]);
            alt = 1;
        }
        if (extra[0])
            asn_sbuf_addf(b, "%s%s %s", alt ? " | " : "", extra, more[0]);
        asn_sbuf_adds(b, ")");
        free(more);
        free(ri);
    } else {
        /* schema order: state i = the last member written was property i-1 */
        char(*after)[24] = asn_xcalloc((size_t)n + 1, sizeof *after);
        for (int i = n; i >= 0; i--) {
            asn_sbuf x = {0};
            int alt = 0, blocked = 0;
            for (int j = i; j < n && !blocked; j++) {
                asn_sbuf_addf(&x, "%s%s\",\"%s%s %s", alt ? " | " : "", w + 1, w, pr[j].kv, after[j + 1]);
                alt = 1;
                blocked = pr[j].required;
            }
            if (!blocked)
                asn_sbuf_addf(&x, "%s%s\"}\"", alt ? " | " : "", w + 1), alt = 1;
            char self[24];
            snprintf(self, sizeof self, "r%d", c->n_rules++);
            if (extra[0])
                asn_sbuf_addf(&x, " | %s\",\"%s%s %s", w + 1, w, extra, self);
            asn_sbuf_addf(&c->rules, "%s ::= %s\n", self, x.buf);
            strcpy(after[i], self);
            free(x.buf);
        }
        asn_sbuf_addf(b, "\"{\"%s(", w);
        int alt = 0, blocked = 0;
        for (int j = 0; j < n && !blocked; j++) {
            asn_sbuf_addf(b, "%s%s %s", alt ? " | " : "", pr[j].kv, after[j + 1]);
            alt = 1;
            blocked = pr[j].required;
        }
        if (!blocked)
            asn_sbuf_addf(b, "%s\"}\"", alt ? " | " : "");
        if (extra[0])
            asn_sbuf_addf(b, " | %s %s", extra, after[0]);
        asn_sbuf_adds(b, ")");
        free(after);
    }
    free(pr);
    asn_sbuf_release(&patkey);
    return 0;
fail:
    free(pr);
    asn_sbuf_release(&patkey);
    return -1;
}

/* ------------------------------------------------------------ arrays */

static int array_body(conv *c, const json_t *s, const char *ptr, asn_sbuf *b)
{
    const json_t *items = json_object_get(s, "items"), *prefix = json_object_get(s, "prefixItems");
    const json_t *mn = json_object_get(s, "minItems"), *mx = json_object_get(s, "maxItems");
    char p[1024];
    if (mn && (!json_is_integer(mn) || json_integer_value(mn) < 0 || json_integer_value(mn) > 2000)) {
        gs_ptr_child(p, sizeof p, ptr, "minItems");
        return gs_serr(c, p, "%s", "minItems must be an integer in [0, 2000]");
    }
    if (mx && (!json_is_integer(mx) || json_integer_value(mx) < 0 || json_integer_value(mx) > 2000)) {
        gs_ptr_child(p, sizeof p, ptr, "maxItems");
        return gs_serr(c, p, "%s", "maxItems must be an integer in [0, 2000]");
    }
    if (prefix && !json_is_array(prefix)) {
        gs_ptr_child(p, sizeof p, ptr, "prefixItems");
        return gs_serr(c, p, "%s", "prefixItems must be a list of schemas");
    }
    if (items && json_is_array(items)) {
        gs_ptr_child(p, sizeof p, ptr, "items");
        return gs_serr(c, p, "%s", "items as a list (draft 4 tuples) is not supported: use prefixItems");
    }
    int k = prefix ? (int)json_array_size(prefix) : 0;
    long lo = mn ? (long)json_integer_value(mn) : 0;
    long hi = mx ? (long)json_integer_value(mx) : -1;
    char (*pr)[24] = asn_xcalloc((size_t)k + 1, sizeof *pr);
    char it[24] = "";
    for (int i = 0; i < k; i++) {
        char pi[1024];
        gs_ptr_child(p, sizeof p, ptr, "prefixItems");
        gs_ptr_index(pi, sizeof pi, p, (size_t)i);
        if (conv_schema(c, json_array_get(prefix, (size_t)i), pi, pr[i])) {
            free(pr);
            return -1;
        }
    }
    if (items && json_is_false(items)) {
        if (hi < 0 || hi > k)
            hi = k;
    } else {
        gs_ptr_child(p, sizeof p, ptr, "items");
        if (items ? conv_schema(c, items, p, it) : (c->used |= U_VALUE, strcpy(it, "value"), 0)) {
            free(pr);
            return -1;
        }
    }
    if (hi >= 0 && hi < lo) {
        free(pr);
        return gs_serr(c, ptr, "%s", "maxItems is below minItems (or items is false)");
    }
    const char *w = W(c);
    /* tail[i]: i items written; loop from L = max(k, lo) when unbounded */
    long L = hi >= 0 ? hi : (k > lo ? k : lo > 1 ? lo : 1);
    char (*tail)[24] = asn_xcalloc((size_t)L + 2, sizeof *tail);
    for (long i = L; i >= 1; i--) {
        asn_sbuf x = {0};
        int alt = 0;
        if (i >= lo)
            asn_sbuf_addf(&x, "%s\"]\"", w + 1), alt = 1;
        const char *el = i < k ? pr[i] : it;
        if (hi < 0 && i == L) {
            char self[24];
            snprintf(self, sizeof self, "r%d", c->n_rules++);
            asn_sbuf_addf(&x, "%s%s\",\"%s%s %s", alt ? " | " : "", w + 1, w, el, self);
            asn_sbuf_addf(&c->rules, "%s ::= %s\n", self, x.buf);
            strcpy(tail[i], self);
        } else {
            if (i < hi || hi < 0)
                asn_sbuf_addf(&x, "%s%s\",\"%s%s %s", alt ? " | " : "", w + 1, w, el, tail[i + 1]);
            add_rule(c, x.buf, tail[i]);
        }
        free(x.buf);
    }
    asn_sbuf_addf(b, "\"[\"%s(", w);
    int alt = 0;
    if (lo == 0)
        asn_sbuf_adds(b, "\"]\""), alt = 1;
    if (hi != 0)
        asn_sbuf_addf(b, "%s%s %s", alt ? " | " : "", k > 0 ? pr[0] : it, tail[1]);
    asn_sbuf_adds(b, ")");
    free(tail);
    free(pr);
    return 0;
}

/* ---------------------------------------------------------- literals */

/* A value as the texts that equal it. A number is equal to itself written
 * with trailing zeros after a point (JSON Schema compares numbers by
 * value: 2, 2.0 and 2.00 are one value); the digits are the shortest that
 * read back as the value. Exponent forms are not generated. */
static void literal(asn_sbuf *b, const json_t *v)
{
    if (json_is_number(v)) {
        double d = json_number_value(v);
        char num[64];
        if (json_is_integer(v) || (d == floor(d) && fabs(d) < 1e15)) {
            snprintf(num, sizeof num, "%lld", json_is_integer(v) ? (long long)json_integer_value(v) : (long long)d);
            asn_sbuf_addf(b, "(\"%s\" (\".\" \"0\"+)?)", num);
            return;
        }
        for (int prec = 1; prec <= 17; prec++) {
            snprintf(num, sizeof num, "%.*g", prec, d);
            if (strtod(num, NULL) == d)
                break;
        }
        if (!strchr(num, 'e') && strchr(num, '.')) {
            asn_sbuf_addf(b, "(\"%s\" \"0\"*)", num);
            return;
        }
    }
    char *enc = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    sb_gliteral(b, enc, strlen(enc));
    free(enc);
}

/* ------------------------------------------------------------ schema */

static const char *const TYPES[] = {"string", "number", "integer", "boolean", "null", "object", "array", NULL};

static int type_body(conv *c, const json_t *s, const char *t, const char *ptr, asn_sbuf *b)
{
    if (!strcmp(t, "string"))
        return string_body(c, s, ptr, b);
    if (!strcmp(t, "integer"))
        return integer_body(c, s, ptr, b);
    if (!strcmp(t, "number"))
        return number_body(c, s, ptr, b);
    if (!strcmp(t, "boolean"))
        return asn_sbuf_adds(b, "(\"true\" | \"false\")"), 0;
    if (!strcmp(t, "null"))
        return asn_sbuf_adds(b, "\"null\""), 0;
    if (!strcmp(t, "object"))
        return object_body(c, s, ptr, b);
    return array_body(c, s, ptr, b);
}

/* ------------------------------------------------------------- oneOf */

/* The JSON types a value of schema s may have, as bits (1 object, 2
 * array, 4 string, 8 number, 16 boolean, 32 null; integer is number);
 * all bits when it is not evident. */
enum { T_ALL = 63 };

static unsigned value_types(const json_t *v)
{
    return json_is_object(v) ? 1 : json_is_array(v) ? 2 : json_is_string(v) ? 4 : json_is_number(v) ? 8
           : json_is_boolean(v) ? 16 : 32;
}

static unsigned schema_types(const json_t *s)
{
    if (!json_is_object(s))
        return T_ALL;
    const json_t *t = json_object_get(s, "type"), *en = json_object_get(s, "enum"), *cn = json_object_get(s, "const");
    unsigned m = 0;
    if (cn)
        return value_types(cn);
    if (json_is_array(en)) {
        size_t i;
        const json_t *x;
        json_array_foreach(en, i, x) m |= value_types(x);
        return m;
    }
    if (!t || json_object_get(s, "anyOf") || json_object_get(s, "oneOf") || json_object_get(s, "allOf") ||
        json_object_get(s, "$ref"))
        return T_ALL;
    size_t n = json_is_array(t) ? json_array_size(t) : 1;
    for (size_t i = 0; i < n; i++) {
        const char *x = json_string_value(json_is_array(t) ? json_array_get(t, i) : t);
        if (!x)
            return T_ALL;
        m |= !strcmp(x, "object") ? 1 : !strcmp(x, "array") ? 2 : !strcmp(x, "string") ? 4
             : !strcmp(x, "boolean") ? 16 : !strcmp(x, "null") ? 32 : 8;
    }
    if (json_is_true(json_object_get(s, "nullable")))
        m |= 32;
    return m;
}

/* The values schema s allows for property `name` when it requires it and
 * fixes it with const or enum (a discriminator); NULL otherwise. */
static const json_t *fixed_values(const json_t *s, const char *name, json_t **tmp)
{
    const json_t *req = json_object_get(s, "required");
    int required = 0;
    size_t i;
    const json_t *x;
    json_array_foreach(req, i, x) required |= json_is_string(x) && !strcmp(json_string_value(x), name);
    const json_t *p = json_object_get(json_object_get(s, "properties"), name);
    if (!required || !json_is_object(p))
        return NULL;
    const json_t *all = json_object_get(p, "allOf"); /* merged: each part's values hold a superset */
    for (i = 0; json_is_array(all) && i < json_array_size(all); i++) {
        x = json_array_get(all, i);
        if (json_object_get(x, "const") || json_is_array(json_object_get(x, "enum")))
            p = x;
    }
    if (json_object_get(p, "const"))
        return *tmp = json_pack("[O]", json_object_get(p, "const"));
    return json_is_array(json_object_get(p, "enum")) ? json_object_get(p, "enum") : NULL;
}

/* 1 when a requires a property that b does not allow (b's
 * additionalProperties is false and it does not declare it). */
static int requires_excluded(const json_t *a, const json_t *b)
{
    if (!json_is_false(json_object_get(b, "additionalProperties")) || !(schema_types(b) == 1))
        return 0;
    size_t i;
    const json_t *x;
    json_array_foreach(json_object_get(a, "required"), i, x) if (json_is_string(x) &&
                                                                !json_object_get(json_object_get(b, "properties"),
                                                                                 json_string_value(x))) return 1;
    return 0;
}

/* 1 when a and b (strings) have patterns that no string matches both
 * (their automata's product is empty). */
static int patterns_disjoint(const json_t *a, const json_t *b)
{
    const char *pa = json_string_value(json_object_get(a, "pattern")), *pb = json_string_value(json_object_get(b, "pattern"));
    if (!pa || !pb)
        return 0;
    asn_err e2;
    gdfa *x = gdfa_regex(pa, &e2), *y = x ? gdfa_regex(pb, &e2) : NULL, *z = y ? gdfa_product(x, y, GDFA_AND, &e2) : NULL;
    int empty = z && gdfa_empty(z);
    gdfa_free(x), gdfa_free(y), gdfa_free(z);
    return empty;
}

/* 1 when no value satisfies both a and b (normalized branches): their
 * types differ, both require a property whose const/enum values differ,
 * one requires a property the other does not allow, or both are strings
 * whose patterns cannot match one string. */
static int pair_disjoint(const json_t *a, const json_t *b)
{
    if (!(schema_types(a) & schema_types(b)) || requires_excluded(a, b) || requires_excluded(b, a))
        return 1;
    if (schema_types(a) == 4 && schema_types(b) == 4 && patterns_disjoint(a, b))
        return 1;
    if (schema_types(a) != 1 && schema_types(b) != 1) /* a non-object may satisfy both */
        return 0;
    const char *name;
    const json_t *pv;
    json_object_foreach((json_t *)json_object_get(a, "properties"), name, pv)
    {
        (void)pv;
        json_t *t1 = NULL, *t2 = NULL;
        const json_t *v1 = fixed_values(a, name, &t1), *v2 = fixed_values(b, name, &t2);
        int disc = v1 && v2;
        for (size_t x = 0; disc && x < json_array_size(v1); x++)
            for (size_t y = 0; disc && y < json_array_size(v2); y++)
                disc = !json_equal(json_array_get(v1, x), json_array_get(v2, y));
        json_decref(t1), json_decref(t2);
        if (disc)
            return 1;
    }
    return 0;
}

/* 1 when a or b is a list of values (enum or const) of which none is valid
 * under both. */
static int values_disjoint(conv *c, const json_t *a, const json_t *b)
{
    if (!json_is_object(a) || !json_is_object(b))
        return 0;
    if (!json_object_get(a, "enum") && !json_object_get(a, "const")) {
        const json_t *t = a;
        a = b, b = t;
    }
    const json_t *en = json_object_get(a, "enum"), *cn = json_object_get(a, "const");
    if (!json_is_array(en) && !cn)
        return 0;
    size_t n = json_is_array(en) ? json_array_size(en) : 1;
    for (size_t i = 0; i < n; i++) {
        const json_t *v = json_is_array(en) ? json_array_get(en, i) : cn;
        int x = gv_valid(c->root, a, v, NULL, NULL, 0), y = x > 0 ? gv_valid(c->root, b, v, NULL, NULL, 0) : 0;
        if (x < 0 || y != 0)
            return 0;
    }
    return 1;
}

/* 1 when no value can satisfy two branches of oneOf (so that anyOf's
 * grammar is exact): every pair of branches is disjoint (pair_disjoint).
 * $refs of the branches are followed one level. */
static int oneof_disjoint(conv *c, const json_t *arr)
{
    size_t n = json_array_size(arr);
    const json_t **b = asn_xcalloc(n ? n : 1, sizeof *b);
    json_t **own = asn_xcalloc(n ? n : 1, sizeof *own);
    asn_err e2, *keep = c->e;
    c->e = &e2;
    for (size_t i = 0; i < n; i++) { /* each branch merged (allOf, keywords beside it) */
        b[i] = json_array_get(arr, i);
        const json_t *r = json_object_get(b[i], "$ref");
        if (json_is_string(r) && gs_resolve_ref(c, json_string_value(r), "", &b[i]))
            b[i] = NULL;
        if (b[i] && json_is_object(b[i]))
            b[i] = own[i] = gs_normalize(c, b[i], "", 0);
    }
    c->e = keep;
    int ok = 1;
    for (size_t i = 0; ok && i < n; i++)
        for (size_t j = i + 1; ok && j < n; j++)
            ok = b[i] && b[j] && (pair_disjoint(b[i], b[j]) || values_disjoint(c, b[i], b[j]));
    for (size_t i = 0; i < n; i++)
        json_decref(own[i]);
    free(own);
    free(b);
    return ok;
}

static int conv_norm(conv *c, const json_t *s, const char *ptr, char *name_out)
{
    if (json_is_true(s) || (json_is_object(s) && !json_object_size(s))) {
        c->used |= U_VALUE;
        strcpy(name_out, "value");
        return 0;
    }
    if (json_is_false(s))
        return gs_serr(c, ptr, "%s", "the schema false accepts nothing");
    if (!json_is_object(s))
        return gs_serr(c, ptr, "%s", "a schema must be an object or a boolean");
    const char *key;
    const json_t *v;
    char p[1024];
    const json_t *ref = json_object_get(s, "$ref");
    if (ref) {
        gs_ptr_child(p, sizeof p, ptr, "$ref");
        if (!json_is_string(ref))
            return gs_serr(c, p, "%s", "$ref must be a string");
        json_object_foreach((json_t *)s, key, v) if (gv_listed(GS_KNOWN, key) && strcmp(key, "$ref"))
        {
            gs_ptr_child(p, sizeof p, ptr, key);
            return gs_serr(c, p, "keyword \"%s\" beside $ref is not supported", key);
        }
        const char *r = json_string_value(ref);
        for (int i = 0; i < c->n_refs; i++)
            if (!strcmp(c->refs[i].key, r)) {
                strcpy(name_out, c->refs[i].name);
                return 0;
            }
        const json_t *target = NULL;
        if (gs_resolve_ref(c, r, ptr, &target))
            return -1;
        c->refs = asn_xrealloc(c->refs, (size_t)(c->n_refs + 1) * sizeof *c->refs);
        named *nm = &c->refs[c->n_refs++];
        nm->key = asn_xstrdup(r);
        snprintf(nm->name, sizeof nm->name, "r%d", c->n_rules++);
        char name[24], sub[24];
        strcpy(name, nm->name);
        char tp[1024];
        snprintf(tp, sizeof tp, "%s", r + 1);
        if (conv_schema(c, target, tp, sub))
            return -1;
        asn_sbuf_addf(&c->rules, "%s ::= %s\n", name, sub);
        strcpy(name_out, name);
        return 0;
    }
    asn_sbuf b = {0};
    int alt = 0;
    const json_t *any = json_object_get(s, "anyOf");
    const char *anykey = "anyOf";
    if (!any)
        any = json_object_get(s, "oneOf"), anykey = "oneOf";
    const json_t *en = json_object_get(s, "enum"), *cn = json_object_get(s, "const");
    const json_t *type = json_object_get(s, "type");
    if (any) {
        gs_ptr_child(p, sizeof p, ptr, anykey);
        if (!json_is_array(any) || !json_array_size(any))
            goto bad_any;
        json_object_foreach((json_t *)s, key, v) if (gv_listed(GS_KNOWN, key) && strcmp(key, anykey) &&
                                                     strcmp(key, "nullable"))
        {
            gs_ptr_child(p, sizeof p, ptr, key);
            gs_serr(c, p, "keyword \"%s\" beside anyOf/oneOf is not supported", key);
            goto fail;
        }
        if (!strcmp(anykey, "oneOf") && json_array_size(any) > 1 && !oneof_disjoint(c, any)) {
            gs_serr(c, p, "%s", "oneOf whose branches may overlap is not supported (only one may match): use anyOf");
            goto fail;
        }
        asn_sbuf_adds(&b, "(");
        for (size_t i = 0; i < json_array_size(any); i++) {
            char pi[1024], sub[24];
            gs_ptr_index(pi, sizeof pi, p, i);
            if (conv_schema(c, json_array_get(any, i), pi, sub))
                goto fail;
            asn_sbuf_addf(&b, "%s%s", alt ? " | " : "", sub);
            alt = 1;
        }
        asn_sbuf_adds(&b, ")");
    } else if (en || cn) {
        gs_ptr_child(p, sizeof p, ptr, en ? "enum" : "const");
        if (en && (!json_is_array(en) || !json_array_size(en))) {
            gs_serr(c, p, "%s", "enum must be a non-empty list");
            goto fail;
        }
        size_t ne = en ? json_array_size(en) : 1;
        /* the values that the other keywords beside them allow */
        json_t *rest = json_copy((json_t *)s);
        json_object_del(rest, en ? "enum" : "const");
        json_object_del(rest, "nullable");
        asn_sbuf_adds(&b, "(");
        for (size_t i = 0; i < ne; i++) {
            const json_t *x = en ? json_array_get(en, i) : cn;
            char why[128];
            int ok = gv_valid(c->root, rest, x, NULL, why, sizeof why);
            if (ok < 0) {
                json_decref(rest);
                gs_ptr_child(p, sizeof p, ptr, why);
                gs_serr(c, p, "keyword \"%s\" beside enum/const is not supported", why);
                goto fail;
            }
            if (!ok)
                continue;
            if (json_is_object(x) && json_object_size(x) > 1) {
                json_decref(rest);
                gs_serr(c, p, "%s", "an object with several members in enum/const is not supported");
                goto fail;
            }
            asn_sbuf_adds(&b, alt ? " | " : "");
            literal(&b, x);
            alt = 1;
        }
        json_decref(rest);
        if (!alt)
            asn_sbuf_adds(&b, "[^\\x00-\\U0010FFFF]");
        asn_sbuf_adds(&b, ")");
    } else {
        /* the types, given or implied by the keywords present */
        const char *types[8];
        int nt = 0;
        if (type) {
            gs_ptr_child(p, sizeof p, ptr, "type");
            size_t n = json_is_array(type) ? json_array_size(type) : 1;
            for (size_t i = 0; i < n; i++) {
                const json_t *t = json_is_array(type) ? json_array_get(type, i) : type;
                if (!json_is_string(t) || !gv_listed(TYPES, json_string_value(t))) {
                    gs_serr(c, p, "%s", "type must be one of string, number, integer, boolean, null, object, array (or a list of them)");
                    goto fail;
                }
                if (nt < 8)
                    types[nt++] = json_string_value(t);
            }
        } else {
            static const char *const OBJ[] = {"properties", "required", "additionalProperties", "patternProperties",
                                              "minProperties", "maxProperties", "dependentRequired", REQ_ANY, REQ_ONE, NULL};
            static const char *const ARR[] = {"items", "prefixItems", "minItems", "maxItems", NULL};
            static const char *const STR[] = {"minLength", "maxLength", "pattern", "format", NULL};
            static const char *const NUM[] = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", NULL};
            /* keywords of one type constrain that type only: any other
             * type is valid as it is (JSON Schema's rule) */
            int typed = 0;
            json_object_foreach((json_t *)s, key, v)
            typed |= gv_listed(OBJ, key) || gv_listed(ARR, key) || gv_listed(STR, key) || gv_listed(NUM, key);
            static const char *const ALL[] = {"object", "array", "string", "number", "boolean", "null"};
            for (int i = 0; typed && i < 6; i++)
                types[nt++] = ALL[i];
        }
        if (!nt) {
            c->used |= U_VALUE;
            asn_sbuf_adds(&b, "value");
            alt = 1;
        }
        asn_sbuf_adds(&b, nt > 1 ? "(" : "");
        for (int i = 0; i < nt; i++) {
            asn_sbuf_adds(&b, alt ? " | " : "");
            if (type_body(c, s, types[i], ptr, &b))
                goto fail;
            alt = 1;
        }
        asn_sbuf_adds(&b, nt > 1 ? ")" : "");
    }
    const json_t *nl = json_object_get(s, "nullable");
    if (nl && !json_is_boolean(nl)) {
        gs_ptr_child(p, sizeof p, ptr, "nullable");
        gs_serr(c, p, "%s", "nullable must be true or false");
        goto fail;
    }
    if (json_is_true(nl)) {
        asn_sbuf x = {0};
        asn_sbuf_addf(&x, "(%s | \"null\")", b.buf);
        free(b.buf);
        b = x;
    }
    add_rule(c, b.buf, name_out);
    free(b.buf);
    return 0;
bad_any:
    gs_serr(c, p, "%s", "anyOf/oneOf must be a non-empty list of schemas");
fail:
    free(b.buf);
    return -1;
}

/* Nesting of subschemas past which a schema is refused: recursion that
 * merging unrolls (allOf of a $ref whose target holds the same allOf) has
 * no end. */
enum { MAX_NESTING = 200 };

static int conv_schema(conv *c, const json_t *s, const char *ptr, char *name_out)
{
    if (!json_is_object(s))
        return conv_norm(c, s, ptr, name_out);
    if (c->depth >= MAX_NESTING)
        return gs_serr(c, ptr, "%s", "subschemas nest too deep (recursion through allOf or $ref beside other keywords)");
    json_t *n = gs_normalize(c, s, ptr, 0);
    if (!n)
        return -1;
    c->depth++;
    int rc = conv_norm(c, n, ptr, name_out);
    c->depth--;
    json_decref(n);
    return rc;
}

/* The pointer (in out) of an integer beyond 64 bits in v, as the record
 * reader leaves it (asn/json.h); 1 if there is one. */
static int find_big_integer(const json_t *v, const char *ptr, char *out, size_t cap, const char **digits)
{
    char p[1024];
    if (json_is_object(v)) {
        const json_t *d = json_object_get(v, ASN_JSON_BIG_INTEGER);
        if (json_object_size(v) == 1 && json_is_string(d)) {
            snprintf(out, cap, "%s", ptr);
            *digits = json_string_value(d);
            return 1;
        }
        const char *k;
        const json_t *x;
        json_object_foreach((json_t *)v, k, x)
        {
            gs_ptr_child(p, sizeof p, ptr, k);
            if (find_big_integer(x, p, out, cap, digits))
                return 1;
        }
    }
    for (size_t i = 0; json_is_array(v) && i < json_array_size(v); i++) {
        gs_ptr_index(p, sizeof p, ptr, i);
        if (find_big_integer(json_array_get(v, i), p, out, cap, digits))
            return 1;
    }
    return 0;
}

char *asn_schema_to_gbnf(const json_t *schema, asn_ws_rule ws, asn_err *e)
{
    return gs_to_gbnf(schema, ws, 0, NULL, e);
}

char *gs_to_gbnf(const json_t *schema, asn_ws_rule ws, int wide, int *approx, asn_err *e)
{
    json_t *own = gv_for_draft(schema); /* keywords of other drafts ignored */
    if (own)
        schema = own;
    conv c = {0};
    c.wide_exp = wide;
    char big[1024];
    const char *digits;
    if (find_big_integer(schema, "", big, sizeof big, &digits)) {
        c.e = e;
        gs_serr(&c, big, "integer %s does not fit in 64 bits (not supported)", digits);
        json_decref(own);
        return NULL;
    }
    c.root = schema;
    const char *dialect = json_string_value(json_object_get(schema, "$schema"));
    c.old_ref = dialect && (strstr(dialect, "draft-03") || strstr(dialect, "draft-04") ||
                            strstr(dialect, "draft-06") || strstr(dialect, "draft-07"));
    c.ws = ws;
    c.e = e;
    char top[24];
    char *out = NULL;
    if (!conv_schema(&c, schema, "", top)) {
        asn_sbuf b = {0};
        asn_sbuf_addf(&b, "root ::= %s\n", top);
        asn_sbuf_add(&b, c.rules.buf, c.rules.len);
        prim_rules(&c, &b);
        out = b.buf;
    }
    free(c.rules.buf);
    for (int i = 0; i < c.n_refs; i++)
        free(c.refs[i].key);
    for (int i = 0; i < c.n_bodies; i++)
        free(c.bodies[i].key);
    free(c.refs);
    free(c.bodies);
    if (approx)
        *approx = c.approx;
    json_decref(own);
    return out;
}
