/* regex.c — regular expressions and choice lists to GBNF, and the GBNF
 * spelling helpers.
 *
 * The dialect is the common subset of PCRE2, Python's re and ECMAScript:
 * literals, escapes (\t \n \r \f \v \xHH \uHHHH, \ before punctuation),
 * `.` (any character but \n), classes [...] and [^...] with ranges, \d \w \s
 * and their negations (ASCII, as Python's re.ASCII), groups (...) (?:...)
 * (?<name>...) (?P<name>...), alternation, and the quantifiers * + ? {m}
 * {m,} {m,n} (lazy forms accepted: they match the same texts). The whole
 * text must match: a leading ^ and a trailing $ are accepted and change
 * nothing. Back-references, lookaround, \b, inline flags and possessive
 * quantifiers are refused with their offset. A pattern is first compiled
 * with PCRE2 (with PCRE2_ALT_BSUX: \uHHHH and \xHH as ECMAScript reads
 * them), so one that does not compile is reported with PCRE2's message. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "grammar_internal.h"
#include "gtext.h"

#include <pcre2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------ GBNF spelling */

void sb_gchar(asn_sbuf *b, uint32_t c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == ' ' || c == '_')
        asn_sbuf_addf(b, "%c", (char)c);
    else if (c < 0x100)
        asn_sbuf_addf(b, "\\x%02X", (unsigned)c);
    else if (c < 0x10000)
        asn_sbuf_addf(b, "\\u%04X", (unsigned)c);
    else
        asn_sbuf_addf(b, "\\U%08X", (unsigned)c);
}

/* Decodes one UTF-8 character of s[0..n); a byte that does not start a
 * valid sequence is taken as itself. Returns the bytes used. */
static int utf8_next(const char *s, size_t n, uint32_t *out)
{
    unsigned char c = (unsigned char)s[0];
    int k = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (!k || (size_t)k > n) {
        *out = c;
        return 1;
    }
    uint32_t v = k == 1 ? c : k == 2 ? (c & 0x1Fu) : k == 3 ? (c & 0x0Fu) : (c & 0x07u);
    for (int i = 1; i < k; i++) {
        if (((unsigned char)s[i] & 0xC0) != 0x80) {
            *out = c;
            return 1;
        }
        v = (v << 6) | ((unsigned char)s[i] & 0x3Fu);
    }
    *out = v;
    return k;
}

void sb_gliteral(asn_sbuf *b, const char *s, size_t n)
{
    asn_sbuf_adds(b, "\"");
    for (size_t i = 0; i < n;) {
        uint32_t c;
        int k = utf8_next(s + i, n - i, &c);
        if (k == 1 && c >= 0x80) /* a stray byte: only \x can say it, and GBNF reads \x as a code point */
            c = (unsigned char)s[i];
        sb_gchar(b, c);
        i += (size_t)k;
    }
    asn_sbuf_adds(b, "\"");
}

void sb_gclass(asn_sbuf *b, const uint32_t *r, int n)
{
    if (!n) {
        asn_sbuf_adds(b, "[^\\x00-\\U0010FFFF]");
        return;
    }
    asn_sbuf_adds(b, "[");
    for (int i = 0; i < n; i++) {
        sb_gchar(b, r[2 * i]);
        if (r[2 * i + 1] != r[2 * i]) {
            asn_sbuf_adds(b, "-");
            sb_gchar(b, r[2 * i + 1]);
        }
    }
    asn_sbuf_adds(b, "]");
}

/* ------------------------------------------------------------ classes */

typedef struct cset {
    uint32_t *r;
    int n, cap;
} cset;

static void cs_add(cset *c, uint32_t lo, uint32_t hi)
{
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 8;
        c->r = asn_xrealloc(c->r, (size_t)c->cap * 2 * sizeof *c->r);
    }
    c->r[2 * c->n] = lo, c->r[2 * c->n + 1] = hi;
    c->n++;
}

static int cmp_pair(const void *a, const void *b)
{
    const uint32_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

static void cs_norm(cset *c)
{
    qsort(c->r, (size_t)c->n, 2 * sizeof *c->r, cmp_pair);
    int m = 0;
    for (int i = 0; i < c->n; i++) {
        if (m && c->r[2 * i] <= c->r[2 * m - 1] + 1) {
            if (c->r[2 * i + 1] > c->r[2 * m - 1])
                c->r[2 * m - 1] = c->r[2 * i + 1];
        } else {
            c->r[2 * m] = c->r[2 * i], c->r[2 * m + 1] = c->r[2 * i + 1], m++;
        }
    }
    c->n = m;
}

static void cs_negate(cset *c)
{
    cs_norm(c);
    cset o = {0};
    uint32_t next = 0;
    for (int i = 0; i < c->n; i++) {
        if (c->r[2 * i] > next)
            cs_add(&o, next, c->r[2 * i] - 1);
        next = c->r[2 * i + 1] + 1;
    }
    if (next <= 0x10FFFF)
        cs_add(&o, next, 0x10FFFF);
    free(c->r);
    *c = o;
}

static int cs_has(const cset *c, uint32_t x)
{
    for (int i = 0; i < c->n; i++)
        if (x >= c->r[2 * i] && x <= c->r[2 * i + 1])
            return 1;
    return 0;
}

/* Removes [lo, hi] from a normalized set. */
static void cs_remove(cset *c, uint32_t lo, uint32_t hi)
{
    cset o = {0};
    for (int i = 0; i < c->n; i++) {
        uint32_t a = c->r[2 * i], z = c->r[2 * i + 1];
        if (z < lo || a > hi) {
            cs_add(&o, a, z);
            continue;
        }
        if (a < lo)
            cs_add(&o, a, lo - 1);
        if (z > hi)
            cs_add(&o, hi + 1, z);
    }
    free(c->r);
    *c = o;
}

/* \d \w \s and negations into c. */
static int class_escape(char k, cset *c)
{
    cset t = {0};
    char lk = (char)(k | 0x20);
    if (lk == 'd')
        cs_add(&t, '0', '9');
    else if (lk == 'w')
        cs_add(&t, '0', '9'), cs_add(&t, 'a', 'z'), cs_add(&t, 'A', 'Z'), cs_add(&t, '_', '_');
    else if (lk == 's')
        cs_add(&t, ' ', ' '), cs_add(&t, '\t', '\r'); /* \t \n \v \f \r */
    else
        return 0;
    if (k != lk)
        cs_negate(&t);
    for (int i = 0; i < t.n; i++)
        cs_add(c, t.r[2 * i], t.r[2 * i + 1]);
    free(t.r);
    return 1;
}

/* ------------------------------------------------------------- parser */

typedef struct rx {
    const char *s;
    size_t i, n;
    int json;
    asn_err *e;
    gnfa *nfa; /* set: the parse builds this automaton instead of GBNF text */
} rx;

/* A piece of the automaton under construction: its entry and exit states. */
typedef struct frag {
    int s, e;
} frag;

enum { MAX_NFA = 60000 };

static int st_new(rx *r)
{
    gnfa *a = r->nfa;
    if (a->n == a->cap) {
        a->cap = a->cap ? 2 * a->cap : 64;
        a->s = asn_xrealloc(a->s, (size_t)a->cap * sizeof *a->s);
    }
    memset(&a->s[a->n], 0, sizeof a->s[a->n]);
    a->s[a->n].to = -1;
    return a->n++;
}

static void st_eps(rx *r, int from, int to)
{
    gnfa_state *x = &r->nfa->s[from];
    x->eps = asn_xrealloc(x->eps, (size_t)(x->neps + 1) * sizeof *x->eps);
    x->eps[x->neps++] = to;
}

/* The empty piece. */
static frag fr_empty(rx *r)
{
    int x = st_new(r);
    return (frag){x, x};
}

/* One character of the (normalized) set. */
static frag fr_set(rx *r, const uint32_t *rg, int n)
{
    int a = st_new(r), z = st_new(r);
    gnfa_state *x = &r->nfa->s[a];
    x->r = asn_xmalloc((size_t)(n ? 2 * n : 1) * sizeof *x->r);
    memcpy(x->r, rg, (size_t)n * 2 * sizeof *x->r);
    x->nr = n, x->to = z;
    return (frag){a, z};
}

static frag fr_cat(rx *r, frag a, frag b)
{
    st_eps(r, a.e, b.s);
    return (frag){a.s, b.e};
}

/* a? (star = 0) or a* (star = 1). */
static frag fr_opt(rx *r, frag a, int star)
{
    int s = st_new(r), e = st_new(r);
    st_eps(r, s, a.s), st_eps(r, s, e), st_eps(r, a.e, e);
    if (star)
        st_eps(r, a.e, a.s);
    return (frag){s, e};
}

static int rx_err(rx *r, size_t at, const char *msg)
{
    return asn_err_set(r->e, "offset %zu: %s", at, msg);
}

static int hexv(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* One character as a JSON string writes it: the raw bytes, or an escape
 * for quotes, backslashes and control characters. */
static void json_char(asn_sbuf *b, uint32_t c)
{
    static const char *esc[] = {['\b'] = "\\b", ['\f'] = "\\f", ['\n'] = "\\n", ['\r'] = "\\r",
                                ['\t'] = "\\t", ['"'] = "\\\"", ['\\'] = "\\\\"};
    char tmp[8];
    const char *s = c < sizeof esc / sizeof *esc ? esc[c] : NULL;
    if (!s && c < 0x20) {
        snprintf(tmp, sizeof tmp, "\\u%04x", (unsigned)c);
        s = tmp;
    }
    if (s) {
        sb_gliteral(b, s, strlen(s));
        return;
    }
    asn_sbuf_adds(b, "\"");
    sb_gchar(b, c);
    asn_sbuf_adds(b, "\"");
}

/* A set as GBNF: a class, plus (json) the escaped forms of its members
 * that a JSON string cannot hold raw. */
static void emit_set(rx *r, cset *c, asn_sbuf *b, frag *f)
{
    cs_norm(c);
    if (r->nfa) {
        *f = fr_set(r, c->r, c->n);
        return;
    }
    if (!r->json) {
        sb_gclass(b, c->r, c->n);
        return;
    }
    cset raw = {0};
    for (int i = 0; i < c->n; i++)
        cs_add(&raw, c->r[2 * i], c->r[2 * i + 1]);
    cs_remove(&raw, 0, 0x1F);
    cs_remove(&raw, '"', '"');
    cs_remove(&raw, '\\', '\\');
    asn_sbuf_adds(b, "(");
    sb_gclass(b, raw.r, raw.n);
    for (uint32_t x = 0; x < 0x20; x++)
        if (cs_has(c, x))
            asn_sbuf_adds(b, " | "), json_char(b, x);
    if (cs_has(c, '"'))
        asn_sbuf_adds(b, " | "), json_char(b, '"');
    if (cs_has(c, '\\'))
        asn_sbuf_adds(b, " | "), json_char(b, '\\');
    asn_sbuf_adds(b, ")");
    free(raw.r);
}

/* An escape after '\' at r->i (r->i at the escaped character). in_class:
 * inside [...]. Either adds to c (classes) or sets *ch. Returns 1 for a
 * set, 0 for one character, -1 on error. */
static int parse_escape(rx *r, cset *c, uint32_t *ch, int in_class)
{
    size_t at = r->i - 1;
    if (r->i >= r->n)
        return rx_err(r, at, "pattern ends after '\\'");
    char k = r->s[r->i];
    if (class_escape(k, c)) {
        r->i++;
        return 1;
    }
    static const char simple[] = "tnrfv0", value[] = "\t\n\r\f\v";
    const char *f = strchr(simple, k);
    if (f && k) {
        r->i++;
        *ch = k == '0' ? 0 : (uint32_t)(unsigned char)value[f - simple];
        return 0;
    }
    if (k == 'x' || k == 'u') {
        int nh = k == 'x' ? 2 : 4;
        uint32_t v = 0;
        for (int j = 0; j < nh; j++) {
            int h = r->i + 1 + (size_t)j < r->n ? hexv(r->s[r->i + 1 + (size_t)j]) : -1;
            if (h < 0)
                return rx_err(r, at, "expecting hex digits after \\x or \\u");
            v = v * 16 + (uint32_t)h;
        }
        r->i += 1 + (size_t)nh;
        *ch = v;
        return 0;
    }
    if (k == 'b' && in_class) {
        r->i++;
        *ch = '\b';
        return 0;
    }
    if ((k >= 'a' && k <= 'z') || (k >= 'A' && k <= 'Z') || (k >= '0' && k <= '9'))
        return rx_err(r, at, "unsupported escape (back-references, \\b, \\p{...} and the like)");
    r->i += (size_t)utf8_next(r->s + r->i, r->n - r->i, ch);
    return 0;
}

static int parse_class(rx *r, asn_sbuf *b, frag *f)
{
    size_t at = r->i;
    r->i++; /* '[' */
    int neg = r->i < r->n && r->s[r->i] == '^';
    r->i += (size_t)neg;
    cset c = {0};
    int first = 1;
    while (r->i < r->n && (r->s[r->i] != ']' || first)) {
        first = 0;
        uint32_t lo;
        if (r->s[r->i] == '\\') {
            r->i++;
            int k = parse_escape(r, &c, &lo, 1);
            if (k < 0)
                goto fail;
            if (k == 1)
                continue;
        } else if (r->s[r->i] == '[' && r->i + 1 < r->n && r->s[r->i + 1] == ':') {
            rx_err(r, r->i, "POSIX classes [:name:] are not supported");
            goto fail;
        } else {
            r->i += (size_t)utf8_next(r->s + r->i, r->n - r->i, &lo);
        }
        uint32_t hi = lo;
        if (r->i + 1 < r->n && r->s[r->i] == '-' && r->s[r->i + 1] != ']') {
            size_t rat = r->i;
            r->i++;
            if (r->s[r->i] == '\\') {
                r->i++;
                cset dummy = {0};
                int k = parse_escape(r, &dummy, &hi, 1);
                free(dummy.r);
                if (k != 0) {
                    if (k > 0)
                        rx_err(r, rat, "a class escape cannot end a range");
                    goto fail;
                }
            } else {
                r->i += (size_t)utf8_next(r->s + r->i, r->n - r->i, &hi);
            }
            if (hi < lo) {
                rx_err(r, rat, "range out of order");
                goto fail;
            }
        }
        cs_add(&c, lo, hi);
    }
    if (r->i >= r->n) {
        rx_err(r, at, "missing ]");
        goto fail;
    }
    r->i++;
    if (neg)
        cs_negate(&c);
    emit_set(r, &c, b, f);
    free(c.r);
    return 0;
fail:
    free(c.r);
    return -1;
}

static int parse_alt(rx *r, asn_sbuf *b, int depth, frag *f);

/* One atom; 0 when there is none at r->i. */
static int parse_atom(rx *r, asn_sbuf *b, int depth, int *got, frag *f)
{
    *got = 0;
    if (r->i >= r->n)
        return 0;
    char c = r->s[r->i];
    size_t at = r->i;
    if (c == '|' || c == ')')
        return 0;
    *got = 1;
    if (c == '(') {
        r->i++;
        if (r->i < r->n && r->s[r->i] == '?') {
            if (r->i + 1 < r->n && r->s[r->i + 1] == ':')
                r->i += 2;
            else if (r->i + 1 < r->n && (r->s[r->i + 1] == '<' || r->s[r->i + 1] == 'P') &&
                     r->i + 2 < r->n && r->s[r->i + 2] != '=' && r->s[r->i + 2] != '!') {
                const char *gt = memchr(r->s + r->i, '>', r->n - r->i);
                if (!gt)
                    return rx_err(r, at, "unterminated group name");
                r->i = (size_t)(gt - r->s) + 1;
            } else {
                return rx_err(r, at, "unsupported group (lookaround, flags, ...)");
            }
        }
        if (parse_alt(r, b, depth + 1, f))
            return -1;
        if (r->i >= r->n || r->s[r->i] != ')')
            return rx_err(r, at, "missing )");
        r->i++;
        return 0;
    }
    if (c == '[')
        return parse_class(r, b, f);
    if (c == '.') {
        r->i++;
        cset s = {0};
        cs_add(&s, '\n', '\n');
        cs_negate(&s);
        emit_set(r, &s, b, f);
        free(s.r);
        return 0;
    }
    if ((c == '^' || c == '$') && r->nfa) { /* the start and end of the text, as symbols (gnfa_regex) */
        uint32_t one[2] = {c == '^' ? GNFA_BOT : GNFA_EOT, c == '^' ? GNFA_BOT : GNFA_EOT};
        r->i++;
        *f = fr_set(r, one, 1);
        return 0;
    }
    if (c == '^' || c == '$')
        return rx_err(r, at, "anchors are only supported at the start (^) and end ($) of the pattern");
    if (c == '*' || c == '+' || c == '?' || c == '{')
        return rx_err(r, at, "nothing to repeat");
    uint32_t ch;
    if (c == '\\') {
        r->i++;
        cset s = {0};
        int k = parse_escape(r, &s, &ch, 0);
        if (k < 0) {
            free(s.r);
            return -1;
        }
        if (k == 1) {
            emit_set(r, &s, b, f);
            free(s.r);
            return 0;
        }
        free(s.r);
    } else {
        r->i += (size_t)utf8_next(r->s + r->i, r->n - r->i, &ch);
    }
    if (r->nfa) {
        uint32_t one[2] = {ch, ch};
        *f = fr_set(r, one, 1);
    } else if (r->json) {
        json_char(b, ch);
    } else {
        asn_sbuf_adds(b, "\"");
        sb_gchar(b, ch);
        asn_sbuf_adds(b, "\"");
    }
    return 0;
}

static long parse_num(rx *r)
{
    long v = -1;
    while (r->i < r->n && r->s[r->i] >= '0' && r->s[r->i] <= '9') {
        v = (v < 0 ? 0 : v) * 10 + (r->s[r->i] - '0');
        if (v > 100000)
            v = 100000;
        r->i++;
    }
    return v;
}

/* The atom af (parsed from atom_at) repeated lo to hi times (hi < 0: no
 * upper bound); the copies are parsed again from atom_at. */
static int nfa_repeat(rx *r, size_t atom_at, frag *af, long lo, long hi)
{
    size_t after = r->i;
    int got;
    asn_sbuf junk = {0};
    frag acc = fr_empty(r), copy = *af;
    long n = hi >= 0 ? hi : lo + 1;
    for (long k = 0; k < n; k++) {
        if (k) {
            r->i = atom_at;
            if (parse_atom(r, &junk, 0, &got, &copy))
                goto fail;
        }
        acc = fr_cat(r, acc, k < lo ? copy : fr_opt(r, copy, hi < 0));
        if (r->nfa->n > MAX_NFA) {
            rx_err(r, atom_at, "pattern too large for an automaton");
            goto fail;
        }
    }
    free(junk.buf);
    r->i = after;
    *af = acc;
    return 0;
fail:
    free(junk.buf);
    return -1;
}

static int parse_seq(rx *r, asn_sbuf *b, int depth, frag *f)
{
    int any = 0;
    if (r->nfa)
        *f = fr_empty(r);
    for (;;) {
        asn_sbuf atom = {0};
        int got;
        size_t atom_at = r->i;
        frag af = {0, 0};
        if (parse_atom(r, &atom, depth, &got, &af)) {
            free(atom.buf);
            return -1;
        }
        if (!got) {
            free(atom.buf);
            break;
        }
        /* quantifier */
        if (r->i < r->n && strchr("*+?{", r->s[r->i])) {
            size_t at = r->i;
            char q = r->s[r->i];
            char spec[64] = "";
            if (q == '{') {
                size_t save = r->i;
                r->i++;
                long lo = parse_num(r), hi = lo;
                if (lo >= 0 && r->i < r->n && r->s[r->i] == ',') {
                    r->i++;
                    hi = parse_num(r);
                }
                if (lo < 0 || r->i >= r->n || r->s[r->i] != '}') {
                    /* not a quantifier: PCRE2 and Python take '{' literally */
                    r->i = save;
                    goto no_quant;
                }
                r->i++;
                if (lo > 2000 || hi > 2000) {
                    free(atom.buf);
                    return rx_err(r, at, "repetition count above 2000");
                }
                if (r->nfa) {
                    if (nfa_repeat(r, atom_at, &af, lo, hi)) {
                        free(atom.buf);
                        return -1;
                    }
                } else if (hi >= 0)
                    snprintf(spec, sizeof spec, "{%ld,%ld}", lo, hi);
                else
                    snprintf(spec, sizeof spec, "{%ld,}", lo);
            } else {
                r->i++;
                spec[0] = q, spec[1] = 0;
                if (r->nfa && q == '+') {
                    size_t after = r->i;
                    frag copy;
                    r->i = atom_at;
                    if (parse_atom(r, &atom, depth, &got, &copy)) {
                        free(atom.buf);
                        return -1;
                    }
                    r->i = after;
                    af = fr_cat(r, af, fr_opt(r, copy, 1));
                } else if (r->nfa)
                    af = fr_opt(r, af, q == '*');
            }
            if (r->i < r->n && r->s[r->i] == '?')
                r->i++; /* lazy: same language */
            else if (r->i < r->n && r->s[r->i] == '+') {
                free(atom.buf);
                return rx_err(r, r->i, "possessive quantifiers are not supported");
            }
            if (r->i < r->n && strchr("*+?", r->s[r->i])) {
                free(atom.buf);
                return rx_err(r, r->i, "nothing to repeat");
            }
            if (r->nfa) {
                *f = fr_cat(r, *f, af);
                if (r->nfa->n > MAX_NFA) {
                    free(atom.buf);
                    return rx_err(r, at, "pattern too large for an automaton");
                }
            }
            asn_sbuf_adds(b, any ? " (" : "(");
            asn_sbuf_add(b, atom.buf, atom.len);
            asn_sbuf_adds(b, ")");
            asn_sbuf_adds(b, spec);
            free(atom.buf);
            any = 1;
            continue;
        }
    no_quant:
        if (r->nfa)
            *f = fr_cat(r, *f, af);
        if (any)
            asn_sbuf_adds(b, " ");
        asn_sbuf_add(b, atom.buf, atom.len);
        free(atom.buf);
        any = 1;
        if (r->i < r->n && r->s[r->i] == '{') { /* a literal '{' */
            r->i++;
            asn_sbuf_adds(b, " ");
            if (r->nfa) {
                uint32_t one[2] = {'{', '{'};
                *f = fr_cat(r, *f, fr_set(r, one, 1));
            }
            if (r->json)
                json_char(b, '{');
            else
                asn_sbuf_adds(b, "\"\\x7B\"");
        }
    }
    if (!any)
        asn_sbuf_adds(b, "\"\"");
    return 0;
}

static int parse_alt(rx *r, asn_sbuf *b, int depth, frag *f)
{
    if (depth > 200)
        return rx_err(r, r->i, "groups nested too deeply");
    frag one;
    asn_sbuf_adds(b, "(");
    if (parse_seq(r, b, depth, &one))
        return -1;
    if (r->nfa && r->i < r->n && r->s[r->i] == '|') {
        int s = st_new(r), e = st_new(r);
        st_eps(r, s, one.s), st_eps(r, one.e, e);
        one = (frag){s, e};
    }
    while (r->i < r->n && r->s[r->i] == '|') {
        r->i++;
        asn_sbuf_adds(b, " | ");
        frag next;
        if (parse_seq(r, b, depth, &next))
            return -1;
        if (r->nfa)
            st_eps(r, one.s, next.s), st_eps(r, next.e, one.e);
    }
    asn_sbuf_adds(b, ")");
    if (r->nfa)
        *f = one;
    return 0;
}

static int pcre_check(const char *pattern, asn_err *e)
{
    int err;
    PCRE2_SIZE at;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_ALT_BSUX, &err, &at, NULL);
    if (!re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(err, msg, sizeof msg);
        return asn_err_set(e, "offset %zu: %s", (size_t)at, (const char *)msg);
    }
    pcre2_code_free(re);
    return 0;
}

/* 1 when s has a | outside groups and classes (then a leading ^ or
 * trailing $ anchors one branch only). */
static int top_level_alt(const char *s)
{
    int depth = 0, cls = 0;
    for (; *s; s++) {
        if (*s == '\\' && s[1])
            s++;
        else if (cls)
            cls = *s != ']';
        else if (*s == '[')
            cls = 1, s += s[1] == '^', s += s[1] == ']'; /* a ] first in a class is a member */
        else if (*s == '(')
            depth++;
        else if (*s == ')')
            depth--;
        else if (*s == '|' && !depth)
            return 1;
    }
    return 0;
}

int asn_regex_expr(const char *pattern, int json, asn_sbuf *b, int *anchors, struct asn_err *e)
{
    if (pcre_check(pattern, e))
        return -1;
    size_t n = strlen(pattern);
    rx r = {pattern, 0, n, json, e, NULL};
    int anch = 0;
    /* a search (json): ^a|b$ is not ^(a|b)$ (a whole match: anchors change nothing) */
    if (json && (pattern[0] == '^' || (n && pattern[n - 1] == '$')) && top_level_alt(pattern))
        return rx_err(&r, 0, "anchors are only supported at the start (^) and end ($) of the pattern, outside an alternation");
    if (n && pattern[0] == '^')
        r.i = 1, anch |= 1;
    /* a trailing unescaped $ */
    if (n > r.i && pattern[n - 1] == '$') {
        size_t bs = 0;
        for (size_t k = n - 1; k > 0 && pattern[k - 1] == '\\'; k--)
            bs++;
        if (!(bs & 1))
            r.n = n - 1, anch |= 2;
    }
    if (anchors)
        *anchors = anch;
    frag f;
    if (parse_alt(&r, b, 0, &f))
        return -1;
    if (r.i < r.n)
        return rx_err(&r, r.i, "unmatched )");
    return 0;
}

int gnfa_regex(const char *pattern, gnfa *a, asn_err *e)
{
    memset(a, 0, sizeof *a);
    if (pcre_check(pattern, e))
        return -1;
    size_t n = strlen(pattern);
    rx r = {pattern, 0, n, 1, e, a};
    asn_sbuf junk = {0};
    frag f;
    int bad = parse_alt(&r, &junk, 0, &f);
    free(junk.buf);
    if (!bad && r.i < r.n)
        bad = rx_err(&r, r.i, "unmatched )");
    if (bad) {
        gnfa_free(a);
        return -1;
    }
    /* a search: anything before the match and after it (the text is read
     * between GNFA_BOT and GNFA_EOT, which ^ and $ match) */
    uint32_t all[2] = {0, GNFA_EOT};
    f = fr_cat(&r, fr_opt(&r, fr_set(&r, all, 1), 1), f);
    f = fr_cat(&r, f, fr_opt(&r, fr_set(&r, all, 1), 1));
    a->start = f.s, a->accept = f.e;
    return 0;
}

void gnfa_free(gnfa *a)
{
    for (int i = 0; i < a->n; i++)
        free(a->s[i].r), free(a->s[i].eps);
    free(a->s);
    memset(a, 0, sizeof *a);
}

void sb_json_class(asn_sbuf *b, const uint32_t *rg, int n)
{
    cset c = {0};
    for (int i = 0; i < n; i++)
        cs_add(&c, rg[2 * i], rg[2 * i + 1]);
    rx r = {"", 0, 0, 1, NULL, NULL};
    emit_set(&r, &c, b, NULL);
    free(c.r);
}

char *asn_regex_to_gbnf(const char *pattern, asn_err *e)
{
    asn_sbuf b = {0};
    asn_sbuf_adds(&b, "root ::= ");
    if (asn_regex_expr(pattern, 0, &b, NULL, e)) {
        free(b.buf);
        return NULL;
    }
    asn_sbuf_adds(&b, "\n");
    return b.buf;
}

char *asn_choice_to_gbnf(const char *const *options, int n, asn_err *e)
{
    if (n < 1) {
        asn_err_set(e, "the list of options is empty");
        return NULL;
    }
    asn_sbuf b = {0};
    asn_sbuf_adds(&b, "root ::= ");
    for (int i = 0; i < n; i++) {
        if (i)
            asn_sbuf_adds(&b, " | ");
        sb_gliteral(&b, options[i], strlen(options[i]));
    }
    asn_sbuf_adds(&b, "\n");
    return b.buf;
}
