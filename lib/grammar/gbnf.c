/* gbnf.c — GBNF text to a byte grammar. The syntax is llama.cpp's
 * (grammars/README.md there): rules `name ::= alternatives` ended by a
 * newline outside parentheses, "literals" and [classes] with the escapes
 * \xHH \uHHHH \UHHHHHHHH \t \r \n \\ \" \[ \], `.` for any character,
 * groups, and the repetitions * + ? {m} {m,} {m,n}, rewritten into helper
 * rules as llama.cpp does. Characters are code points; lowering turns each
 * class into alternatives of UTF-8 byte sequences (the byte-range split of
 * a code-point range, as regex engines do), so the compiled grammar reads
 * bytes. */
#include "grammar_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_REPETITION = 2000 }; /* llama.cpp's MAX_REPETITION_THRESHOLD */
enum { P_CLS = 1, P_REF = 2 };

typedef struct pel {
    int t;
    uint32_t a; /* class index or rule id */
} pel;

typedef struct palt {
    pel *e;
    int n, cap;
} palt;

typedef struct prule {
    char *name;
    palt *alts;
    int n_alts;
    int defined;
    long ref_at; /* offset of the first reference, for "undefined rule" */
} prule;

typedef struct cls {
    uint32_t *r; /* inclusive code-point ranges, pairs */
    int n;
    int neg;
} cls;

typedef struct parser {
    const char *s, *p, *end;
    prule *rules;
    int n_rules;
    cls *cls;
    int n_cls;
    asn_err *e;
} parser;

/* --------------------------------------------------------------- errors */

static int perr(parser *ps, const char *at, const char *msg)
{
    int line = 1, col = 1;
    for (const char *q = ps->s; q < at && q < ps->end; q++) {
        if (*q == '\n')
            line++, col = 1;
        else if (((unsigned char)*q & 0xC0) != 0x80)
            col++;
    }
    return asn_err_set(ps->e, "%d:%d: %s", line, col, msg);
}

/* ------------------------------------------------------------- building */

static void alt_push(palt *a, int t, uint32_t arg)
{
    if (a->n == a->cap) {
        a->cap = a->cap ? 2 * a->cap : 8;
        a->e = asn_xrealloc(a->e, (size_t)a->cap * sizeof *a->e);
    }
    a->e[a->n++] = (pel){t, arg};
}

static palt *rule_new_alt(prule *r)
{
    r->alts = asn_xrealloc(r->alts, (size_t)(r->n_alts + 1) * sizeof *r->alts);
    memset(&r->alts[r->n_alts], 0, sizeof *r->alts);
    return &r->alts[r->n_alts++];
}

static int rule_id(parser *ps, const char *name, size_t len)
{
    for (int i = 0; i < ps->n_rules; i++)
        if (strlen(ps->rules[i].name) == len && !memcmp(ps->rules[i].name, name, len))
            return i;
    ps->rules = asn_xrealloc(ps->rules, (size_t)(ps->n_rules + 1) * sizeof *ps->rules);
    prule *r = &ps->rules[ps->n_rules];
    memset(r, 0, sizeof *r);
    r->name = asn_xmalloc(len + 1);
    memcpy(r->name, name, len);
    r->name[len] = 0;
    r->ref_at = -1;
    return ps->n_rules++;
}

static int new_rule(parser *ps, const char *base)
{
    char name[300];
    snprintf(name, sizeof name, "%.200s_%d", base, ps->n_rules);
    int id = rule_id(ps, name, strlen(name));
    ps->rules[id].defined = 1;
    return id;
}

static uint32_t new_cls(parser *ps, int neg)
{
    ps->cls = asn_xrealloc(ps->cls, (size_t)(ps->n_cls + 1) * sizeof *ps->cls);
    ps->cls[ps->n_cls] = (cls){NULL, 0, neg};
    return (uint32_t)ps->n_cls++;
}

static void cls_add(parser *ps, uint32_t c, uint32_t lo, uint32_t hi)
{
    cls *k = &ps->cls[c];
    k->r = asn_xrealloc(k->r, (size_t)(k->n + 1) * 2 * sizeof *k->r);
    k->r[2 * k->n] = lo;
    k->r[2 * k->n + 1] = hi;
    k->n++;
}

/* -------------------------------------------------------------- lexing */

static int word_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}

static void skip_space(parser *ps, int newline_ok)
{
    while (ps->p < ps->end) {
        char c = *ps->p;
        if (c == '#') {
            while (ps->p < ps->end && *ps->p != '\n' && *ps->p != '\r')
                ps->p++;
        } else if (c == ' ' || c == '\t' || (newline_ok && (c == '\n' || c == '\r'))) {
            ps->p++;
        } else {
            break;
        }
    }
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* One character (escape or UTF-8) at ps->p. */
static int parse_char(parser *ps, uint32_t *out)
{
    const char *at = ps->p;
    if (ps->p >= ps->end)
        return perr(ps, at, "unexpected end of input");
    unsigned char c = (unsigned char)*ps->p;
    if (c == '\\') {
        if (ps->p + 1 >= ps->end)
            return perr(ps, at, "unexpected end of input after '\\'");
        char k = ps->p[1];
        int nhex = k == 'x' ? 2 : k == 'u' ? 4 : k == 'U' ? 8 : 0;
        if (nhex) {
            uint32_t v = 0;
            for (int i = 0; i < nhex; i++) {
                int h = ps->p + 2 + i < ps->end ? hexval(ps->p[2 + i]) : -1;
                if (h < 0) {
                    char msg[64];
                    snprintf(msg, sizeof msg, "expecting %d hex digits after \\%c", nhex, k);
                    return perr(ps, at, msg);
                }
                v = v * 16 + (uint32_t)h;
            }
            if (v > 0x10FFFF)
                return perr(ps, at, "code point out of range (above U+10FFFF)");
            ps->p += 2 + nhex;
            *out = v;
            return 0;
        }
        const char *from = "trn\\\"[]", *to = "\t\r\n\\\"[]";
        const char *f = strchr(from, k);
        if (!f || !k)
            return perr(ps, at, "unknown escape");
        *out = (unsigned char)to[f - from];
        ps->p += 2;
        return 0;
    }
    int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (!n || ps->p + n > ps->end) { /* not UTF-8: the byte as a code point */
        *out = c;
        ps->p++;
        return 0;
    }
    uint32_t v = n == 1 ? c : n == 2 ? (c & 0x1Fu) : n == 3 ? (c & 0x0Fu) : (c & 0x07u);
    for (int i = 1; i < n; i++)
        v = (v << 6) | ((unsigned char)ps->p[i] & 0x3Fu);
    ps->p += n;
    *out = v;
    return 0;
}

/* ------------------------------------------------------------- parsing */

static int parse_alternates(parser *ps, int rid, int nested);

/* llama.cpp's rewrite of S{m,n}: S repeated m times, then n - m nested
 * optional rules (or one recursive rule when n is unbounded). */
static int repeat(parser *ps, int rid, palt *a, int last, const char *at, long lo, long hi)
{
    if (last == a->n)
        return perr(ps, at, "expecting an item before */+/?/{") - 1;
    int n_prev = a->n - last;
    pel *prev = asn_xmalloc((size_t)n_prev * sizeof *prev);
    memcpy(prev, a->e + last, (size_t)n_prev * sizeof *prev);
    if (lo == 0)
        a->n = last;
    for (long i = 1; i < lo; i++)
        for (int k = 0; k < n_prev; k++)
            alt_push(a, prev[k].t, prev[k].a);
    int no_max = hi < 0;
    long n_opt = no_max ? 1 : hi - lo;
    int last_rec = -1;
    for (long i = 0; i < n_opt; i++) {
        int rec = new_rule(ps, ps->rules[rid].name);
        a = NULL; /* rules may have moved */
        palt *x = rule_new_alt(&ps->rules[rec]);
        for (int k = 0; k < n_prev; k++)
            alt_push(x, prev[k].t, prev[k].a);
        if (i > 0 || no_max)
            alt_push(x, P_REF, (uint32_t)(no_max ? rec : last_rec));
        rule_new_alt(&ps->rules[rec]); /* the empty alternative */
        last_rec = rec;
    }
    free(prev);
    return last_rec;
}

static long parse_int(parser *ps)
{
    long v = 0;
    int any = 0;
    while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') {
        if (v < 100000000)
            v = v * 10 + (*ps->p - '0');
        ps->p++, any = 1;
    }
    return any ? v : -1;
}

/* One sequence into alternative index ai of rule rid. */
static int parse_sequence(parser *ps, int rid, int ai, int nested)
{
#define ALT (&ps->rules[rid].alts[ai])
    int last = ALT->n;
    while (ps->p < ps->end) {
        char c = *ps->p;
        const char *at = ps->p;
        long lo = -1, hi = -1;
        if (c == '"') {
            ps->p++;
            last = ALT->n;
            while (ps->p < ps->end && *ps->p != '"') {
                uint32_t ch;
                if (parse_char(ps, &ch))
                    return -1;
                uint32_t k = new_cls(ps, 0);
                cls_add(ps, k, ch, ch);
                alt_push(ALT, P_CLS, k);
            }
            if (ps->p >= ps->end)
                return perr(ps, at, "unterminated string literal");
            ps->p++;
            skip_space(ps, nested);
            continue;
        }
        if (c == '[') {
            ps->p++;
            int neg = ps->p < ps->end && *ps->p == '^';
            ps->p += neg;
            uint32_t k = new_cls(ps, neg);
            while (ps->p < ps->end && *ps->p != ']') {
                uint32_t a, b;
                if (parse_char(ps, &a))
                    return -1;
                b = a;
                if (ps->p + 1 < ps->end && ps->p[0] == '-' && ps->p[1] != ']') {
                    ps->p++;
                    const char *rat = ps->p;
                    if (parse_char(ps, &b))
                        return -1;
                    if (b < a)
                        return perr(ps, rat, "range end is below its start");
                }
                cls_add(ps, k, a, b);
            }
            if (ps->p >= ps->end)
                return perr(ps, at, "unterminated character class");
            ps->p++;
            last = ALT->n;
            alt_push(ALT, P_CLS, k);
            skip_space(ps, nested);
            continue;
        }
        if (word_char(c)) {
            const char *s = ps->p;
            while (ps->p < ps->end && word_char(*ps->p))
                ps->p++;
            int ref = rule_id(ps, s, (size_t)(ps->p - s));
            if (ps->rules[ref].ref_at < 0)
                ps->rules[ref].ref_at = s - ps->s;
            last = ALT->n;
            alt_push(ALT, P_REF, (uint32_t)ref);
            skip_space(ps, nested);
            continue;
        }
        if (c == '(') {
            ps->p++;
            skip_space(ps, 1);
            int sub = new_rule(ps, ps->rules[rid].name);
            if (parse_alternates(ps, sub, 1))
                return -1;
            if (ps->p >= ps->end || *ps->p != ')')
                return perr(ps, ps->p, "expecting ')'");
            ps->p++;
            last = ALT->n;
            alt_push(ALT, P_REF, (uint32_t)sub);
            skip_space(ps, nested);
            continue;
        }
        if (c == '.') {
            ps->p++;
            last = ALT->n;
            alt_push(ALT, P_CLS, new_cls(ps, 1));
            skip_space(ps, nested);
            continue;
        }
        if (c == '<' || c == '!')
            return perr(ps, at, "token references (<...>, !<...>) are not supported");
        if (c == '*')
            lo = 0, hi = -1;
        else if (c == '+')
            lo = 1, hi = -1;
        else if (c == '?')
            lo = 0, hi = 1;
        else if (c == '{') {
            ps->p++;
            skip_space(ps, nested);
            lo = parse_int(ps);
            if (lo < 0)
                return perr(ps, ps->p, "expecting an integer");
            skip_space(ps, nested);
            if (ps->p < ps->end && *ps->p == '}') {
                hi = lo;
            } else if (ps->p < ps->end && *ps->p == ',') {
                ps->p++;
                skip_space(ps, nested);
                hi = parse_int(ps);
                skip_space(ps, nested);
                if (ps->p >= ps->end || *ps->p != '}')
                    return perr(ps, ps->p, "expecting '}'");
            } else {
                return perr(ps, ps->p, "expecting ',' or '}'");
            }
            if (lo > MAX_REPETITION || hi > MAX_REPETITION)
                return perr(ps, at, "repetition count above 2000");
            if (hi >= 0 && hi < lo)
                return perr(ps, at, "repetition maximum below its minimum");
        } else {
            break;
        }
        ps->p++;
        skip_space(ps, nested);
        int rec = repeat(ps, rid, ALT, last, at, lo, hi);
        if (rec == -2)
            return -1;
        if (rec >= 0)
            alt_push(ALT, P_REF, (uint32_t)rec);
        /* the repeated item is no longer a single symbol */
        last = ALT->n;
    }
    return 0;
#undef ALT
}

static int parse_alternates(parser *ps, int rid, int nested)
{
    rule_new_alt(&ps->rules[rid]);
    if (parse_sequence(ps, rid, ps->rules[rid].n_alts - 1, nested))
        return -1;
    while (ps->p < ps->end && *ps->p == '|') {
        ps->p++;
        skip_space(ps, 1);
        rule_new_alt(&ps->rules[rid]);
        if (parse_sequence(ps, rid, ps->rules[rid].n_alts - 1, nested))
            return -1;
    }
    return 0;
}

static int parse_rule(parser *ps)
{
    const char *s = ps->p;
    while (ps->p < ps->end && word_char(*ps->p))
        ps->p++;
    if (ps->p == s)
        return perr(ps, s, "expecting a rule name");
    int rid = rule_id(ps, s, (size_t)(ps->p - s));
    skip_space(ps, 0);
    if (ps->end - ps->p < 3 || memcmp(ps->p, "::=", 3))
        return perr(ps, ps->p, "expecting ::=");
    if (ps->rules[rid].defined)
        return perr(ps, s, "rule defined twice");
    ps->rules[rid].defined = 1;
    ps->p += 3;
    skip_space(ps, 1);
    if (parse_alternates(ps, rid, 0))
        return -1;
    if (ps->p < ps->end) {
        if (*ps->p == '\r')
            ps->p += (ps->p + 1 < ps->end && ps->p[1] == '\n') ? 2 : 1;
        else if (*ps->p == '\n')
            ps->p++;
        else
            return perr(ps, ps->p, "expecting newline or end");
    }
    skip_space(ps, 1);
    return 0;
}

/* ------------------------------------------------------------ lowering */

typedef struct belem {
    int t;
    uint32_t a;
} belem;

typedef struct balt {
    belem *e;
    int n, cap;
} balt;

typedef struct brule {
    balt *alts;
    int n_alts;
} brule;

typedef struct lower {
    brule *r;
    int n_r;
    uint64_t (*sets)[4];
    int n_sets;
    uint32_t **cls_key; /* resolved ranges of class rules made so far */
    int *cls_nkey, *cls_rule, n_cls_rules;
} lower;

static void balt_push(balt *a, int t, uint32_t arg)
{
    if (a->n == a->cap) {
        a->cap = a->cap ? 2 * a->cap : 8;
        a->e = asn_xrealloc(a->e, (size_t)a->cap * sizeof *a->e);
    }
    a->e[a->n++] = (belem){t, arg};
}

static balt *brule_alt(lower *L, int r)
{
    brule *b = &L->r[r];
    b->alts = asn_xrealloc(b->alts, (size_t)(b->n_alts + 1) * sizeof *b->alts);
    memset(&b->alts[b->n_alts], 0, sizeof *b->alts);
    return &b->alts[b->n_alts++];
}

static int brule_new(lower *L)
{
    L->r = asn_xrealloc(L->r, (size_t)(L->n_r + 1) * sizeof *L->r);
    L->r[L->n_r] = (brule){NULL, 0};
    return L->n_r++;
}

static uint32_t set_id(lower *L, const uint64_t s[4])
{
    for (int i = 0; i < L->n_sets; i++)
        if (!memcmp(L->sets[i], s, 4 * sizeof *s))
            return (uint32_t)i;
    L->sets = asn_xrealloc(L->sets, (size_t)(L->n_sets + 1) * sizeof *L->sets);
    memcpy(L->sets[L->n_sets], s, 4 * sizeof *s);
    return (uint32_t)L->n_sets++;
}

static uint32_t byteset(lower *L, unsigned lo, unsigned hi)
{
    uint64_t s[4] = {0};
    for (unsigned b = lo; b <= hi; b++)
        s[b >> 6] |= 1ull << (b & 63);
    return set_id(L, s);
}

static int utf8_encode(uint32_t c, unsigned char *b)
{
    if (c < 0x80)
        return b[0] = (unsigned char)c, 1;
    if (c < 0x800)
        return b[0] = (unsigned char)(0xC0 | (c >> 6)), b[1] = (unsigned char)(0x80 | (c & 0x3F)), 2;
    if (c < 0x10000)
        return b[0] = (unsigned char)(0xE0 | (c >> 12)), b[1] = (unsigned char)(0x80 | ((c >> 6) & 0x3F)),
               b[2] = (unsigned char)(0x80 | (c & 0x3F)), 3;
    return b[0] = (unsigned char)(0xF0 | (c >> 18)), b[1] = (unsigned char)(0x80 | ((c >> 12) & 0x3F)),
           b[2] = (unsigned char)(0x80 | ((c >> 6) & 0x3F)), b[3] = (unsigned char)(0x80 | (c & 0x3F)), 4;
}

/* Appends to rule r the byte sequences of code points lo..hi (same UTF-8
 * length, no surrogates): split until every position is a byte range. */
static void utf8_split(lower *L, int r, uint32_t lo, uint32_t hi)
{
    unsigned char a[4], b[4];
    int n = utf8_encode(lo, a);
    for (int i = 1; i < n; i++) {
        uint32_t m = (1u << (6 * i)) - 1;
        if ((lo & ~m) != (hi & ~m)) {
            if (lo & m) {
                utf8_split(L, r, lo, lo | m);
                utf8_split(L, r, (lo | m) + 1, hi);
                return;
            }
            if ((hi & m) != m) {
                utf8_split(L, r, lo, (hi & ~m) - 1);
                utf8_split(L, r, hi & ~m, hi);
                return;
            }
        }
    }
    utf8_encode(hi, b);
    balt *x = brule_alt(L, r);
    for (int i = 0; i < n; i++)
        balt_push(x, E_BYTES, byteset(L, a[i], b[i]));
}

static int cmp_u32pair(const void *a, const void *b)
{
    const uint32_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* The class's code points as sorted disjoint ranges, surrogates removed.
 * Returns the number of ranges; *out is new. */
static int resolve(const cls *k, uint32_t **out)
{
    uint32_t *r = asn_xmalloc((size_t)(k->n + 1) * 2 * sizeof *r);
    if (k->n)
        memcpy(r, k->r, (size_t)k->n * 2 * sizeof *r);
    qsort(r, (size_t)k->n, 2 * sizeof *r, cmp_u32pair);
    int n = 0;
    for (int i = 0; i < k->n; i++) {
        if (n && r[2 * i] <= r[2 * n - 1] + 1) {
            if (r[2 * i + 1] > r[2 * n - 1])
                r[2 * n - 1] = r[2 * i + 1];
        } else {
            r[2 * n] = r[2 * i], r[2 * n + 1] = r[2 * i + 1], n++;
        }
    }
    if (k->neg) {
        uint32_t *c = asn_xmalloc((size_t)(n + 1) * 2 * sizeof *c);
        int m = 0;
        uint32_t next = 0;
        for (int i = 0; i < n; i++) {
            if (r[2 * i] > next)
                c[2 * m] = next, c[2 * m + 1] = r[2 * i] - 1, m++;
            next = r[2 * i + 1] + 1;
        }
        if (next <= 0x10FFFF)
            c[2 * m] = next, c[2 * m + 1] = 0x10FFFF, m++;
        free(r);
        r = c, n = m;
    }
    /* cut out the surrogates and everything above U+10FFFF */
    uint32_t *s = asn_xmalloc((size_t)(2 * n + 1) * 2 * sizeof *s);
    int m = 0;
    for (int i = 0; i < n; i++) {
        uint32_t lo = r[2 * i], hi = r[2 * i + 1] > 0x10FFFF ? 0x10FFFF : r[2 * i + 1];
        if (lo > hi)
            continue;
        if (lo < 0xD800 && hi >= 0xD800)
            s[2 * m] = lo, s[2 * m + 1] = 0xD7FF, m++, lo = 0xE000;
        else if (lo >= 0xD800 && lo <= 0xDFFF)
            lo = 0xE000;
        if (lo <= hi)
            s[2 * m] = lo, s[2 * m + 1] = hi, m++;
    }
    free(r);
    *out = s;
    return m;
}

/* Lowers one class into alternative x: an inline byte sequence for one
 * code point, one byte set for ASCII, else a reference to a rule of byte
 * sequences (one per class content). */
static void lower_cls(lower *L, const cls *k, int bx_rule, int bx_alt)
{
    uint32_t *r;
    int n = resolve(k, &r);
#define BX (&L->r[bx_rule].alts[bx_alt])
    if (n == 0) {
        balt_push(BX, E_BYTES, byteset(L, 1, 0)); /* matches nothing */
    } else if (n == 1 && r[0] == r[1]) {
        unsigned char b[4];
        int nb = utf8_encode(r[0], b);
        for (int i = 0; i < nb; i++)
            balt_push(BX, E_BYTES, byteset(L, b[i], b[i]));
    } else if (r[2 * n - 1] < 0x80) {
        uint64_t s[4] = {0};
        for (int i = 0; i < n; i++)
            for (uint32_t c = r[2 * i]; c <= r[2 * i + 1]; c++)
                s[c >> 6] |= 1ull << (c & 63);
        balt_push(BX, E_BYTES, set_id(L, s));
    } else {
        int rule = -1;
        for (int i = 0; i < L->n_cls_rules; i++)
            if (L->cls_nkey[i] == n && !memcmp(L->cls_key[i], r, (size_t)n * 2 * sizeof *r))
                rule = L->cls_rule[i];
        if (rule < 0) {
            rule = brule_new(L);
            /* ASCII part as one set, then each UTF-8 length apart */
            uint64_t s[4] = {0};
            int any_ascii = 0;
            static const uint32_t bounds[][2] = {{0x80, 0x7FF}, {0x800, 0xFFFF}, {0x10000, 0x10FFFF}};
            for (int i = 0; i < n; i++)
                for (uint32_t c = r[2 * i]; c <= r[2 * i + 1] && c < 0x80; c++)
                    s[c >> 6] |= 1ull << (c & 63), any_ascii = 1;
            if (any_ascii) {
                uint32_t id = set_id(L, s);
                balt_push(brule_alt(L, rule), E_BYTES, id);
            }
            for (int i = 0; i < n; i++)
                for (int b = 0; b < 3; b++) {
                    uint32_t lo = r[2 * i] > bounds[b][0] ? r[2 * i] : bounds[b][0];
                    uint32_t hi = r[2 * i + 1] < bounds[b][1] ? r[2 * i + 1] : bounds[b][1];
                    if (lo <= hi)
                        utf8_split(L, rule, lo, hi);
                }
            L->cls_key = asn_xrealloc(L->cls_key, (size_t)(L->n_cls_rules + 1) * sizeof *L->cls_key);
            L->cls_nkey = asn_xrealloc(L->cls_nkey, (size_t)(L->n_cls_rules + 1) * sizeof *L->cls_nkey);
            L->cls_rule = asn_xrealloc(L->cls_rule, (size_t)(L->n_cls_rules + 1) * sizeof *L->cls_rule);
            L->cls_key[L->n_cls_rules] = r;
            L->cls_nkey[L->n_cls_rules] = n;
            L->cls_rule[L->n_cls_rules++] = rule;
            r = NULL;
        }
        balt_push(BX, E_REF, (uint32_t)rule);
    }
    free(r);
#undef BX
}

/* ---------------------------------------------------------- validation */

/* Left recursion: a rule reachable from itself through references that
 * only nullable elements precede. Returns a rule on such a cycle, or -1. */
static int left_recursive(const lower *L)
{
    int n = L->n_r;
    char *nullable = asn_xcalloc((size_t)n, 1);
    for (int changed = 1; changed;) {
        changed = 0;
        for (int r = 0; r < n; r++) {
            if (nullable[r])
                continue;
            for (int a = 0; a < L->r[r].n_alts && !nullable[r]; a++) {
                const balt *x = &L->r[r].alts[a];
                int all = 1;
                for (int i = 0; i < x->n && all; i++)
                    all = x->e[i].t == E_REF && nullable[x->e[i].a];
                if (all)
                    nullable[r] = 1, changed = 1;
            }
        }
    }
    /* colors: 0 new, 1 on the path, 2 done; iterative DFS */
    char *color = asn_xcalloc((size_t)n, 1);
    int *stk = asn_xmalloc((size_t)n * 2 * sizeof *stk);
    int found = -1;
    for (int s = 0; s < n && found < 0; s++) {
        if (color[s])
            continue;
        int sp = 0;
        stk[sp++] = s, stk[sp++] = 0;
        color[s] = 1;
        while (sp && found < 0) {
            int r = stk[sp - 2], k = stk[sp - 1]++;
            /* k enumerates (alt, element) pairs in order */
            int a = 0, i = k, next = -1;
            while (a < L->r[r].n_alts) {
                const balt *x = &L->r[r].alts[a];
                int lim = 0;
                while (lim < x->n && x->e[lim].t == E_REF && nullable[x->e[lim].a])
                    lim++;
                if (lim < x->n && x->e[lim].t == E_REF)
                    lim++;
                if (i < lim) {
                    if (x->e[i].t == E_REF)
                        next = (int)x->e[i].a;
                    break;
                }
                i -= lim;
                a++;
            }
            if (a == L->r[r].n_alts) {
                color[r] = 2;
                sp -= 2;
                continue;
            }
            if (next < 0)
                continue;
            if (color[next] == 1)
                found = next;
            else if (!color[next]) {
                color[next] = 1;
                stk[sp++] = next, stk[sp++] = 0;
            }
        }
    }
    free(stk);
    free(color);
    free(nullable);
    return found;
}

/* --------------------------------------------------------------- parse */

static void parser_free(parser *ps)
{
    for (int i = 0; i < ps->n_rules; i++) {
        for (int a = 0; a < ps->rules[i].n_alts; a++)
            free(ps->rules[i].alts[a].e);
        free(ps->rules[i].alts);
        free(ps->rules[i].name);
    }
    free(ps->rules);
    for (int i = 0; i < ps->n_cls; i++)
        free(ps->cls[i].r);
    free(ps->cls);
}

static void lower_free(lower *L)
{
    for (int r = 0; r < L->n_r; r++) {
        for (int a = 0; a < L->r[r].n_alts; a++)
            free(L->r[r].alts[a].e);
        free(L->r[r].alts);
    }
    free(L->r);
    free(L->sets);
    for (int i = 0; i < L->n_cls_rules; i++)
        free(L->cls_key[i]);
    free(L->cls_key);
    free(L->cls_nkey);
    free(L->cls_rule);
}

asn_grammar *asn_gbnf_parse(const char *text, size_t len, asn_err *e)
{
    parser ps = {text, text, text + len, NULL, 0, NULL, 0, e};
    asn_grammar *g = NULL;
    lower L = {0};
    if (memchr(text, 0, len)) {
        perr(&ps, (const char *)memchr(text, 0, len), "NUL character in the grammar");
        goto done;
    }
    skip_space(&ps, 1);
    while (ps.p < ps.end)
        if (parse_rule(&ps))
            goto done;
    int root = -1;
    for (int i = 0; i < ps.n_rules; i++) {
        if (!ps.rules[i].defined) {
            char msg[300];
            snprintf(msg, sizeof msg, "undefined rule \"%.200s\"", ps.rules[i].name);
            perr(&ps, ps.s + ps.rules[i].ref_at, msg);
            goto done;
        }
        if (!strcmp(ps.rules[i].name, "root"))
            root = i;
    }
    if (root < 0) {
        asn_err_set(e, "%d:%d: no rule named \"root\"", 1, 1);
        goto done;
    }
    /* lower: parser rules keep their ids; class rules come after */
    for (int i = 0; i < ps.n_rules; i++)
        brule_new(&L);
    for (int r = 0; r < ps.n_rules; r++)
        for (int a = 0; a < ps.rules[r].n_alts; a++) {
            brule_alt(&L, r);
            const palt *x = &ps.rules[r].alts[a];
            for (int i = 0; i < x->n; i++) {
                if (x->e[i].t == P_REF)
                    balt_push(&L.r[r].alts[a], E_REF, x->e[i].a);
                else
                    lower_cls(&L, &ps.cls[x->e[i].a], r, a);
            }
        }
    int lr = left_recursive(&L);
    if (lr >= 0) {
        const char *name = lr < ps.n_rules ? ps.rules[lr].name : "?";
        asn_err_set(e, "left recursion in rule \"%s\" (a rule may not start with itself)", name);
        goto done;
    }
    /* flatten */
    g = asn_xcalloc(1, sizeof *g);
    g->n_rules = L.n_r;
    g->root = root;
    g->alt_off = asn_xmalloc((size_t)(L.n_r + 1) * sizeof *g->alt_off);
    int n_alts = 0, n_el = 0;
    for (int r = 0; r < L.n_r; r++) {
        n_alts += L.r[r].n_alts;
        for (int a = 0; a < L.r[r].n_alts; a++)
            n_el += L.r[r].alts[a].n + 1;
    }
    g->alt_start = asn_xmalloc((size_t)(n_alts ? n_alts : 1) * sizeof *g->alt_start);
    g->el = asn_xmalloc((size_t)(n_el ? n_el : 1) * sizeof *g->el);
    int ai = 0;
    for (int r = 0; r < L.n_r; r++) {
        g->alt_off[r] = ai;
        for (int a = 0; a < L.r[r].n_alts; a++) {
            g->alt_start[ai++] = g->n_el;
            const balt *x = &L.r[r].alts[a];
            for (int i = 0; i < x->n; i++)
                g->el[g->n_el++] = (gelem){(uint32_t)x->e[i].t, x->e[i].a};
            g->el[g->n_el++] = (gelem){E_END, 0};
        }
    }
    g->alt_off[L.n_r] = ai;
    g->sets = L.sets;
    g->n_sets = L.n_sets;
    L.sets = NULL;
done:
    lower_free(&L);
    parser_free(&ps);
    return g;
}

void asn_grammar_free(asn_grammar *g)
{
    if (!g)
        return;
    free(g->el);
    free(g->alt_off);
    free(g->alt_start);
    free(g->sets);
    free(g);
}

int asn_grammar_n_rules(const asn_grammar *g) { return g->n_rules; }
