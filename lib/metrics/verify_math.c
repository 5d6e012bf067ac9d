/* verify_math.c — answer checks for GSM8K and MATH as the reference
 * project's verifiers do them (open-instruct's GSM8KVerifier and
 * MathVerifier): number extraction, last \boxed{} answer, Hendrycks'
 * strip_string, Minerva's normalize_final_answer, and a numeric stand-in
 * for the sympy equality the reference also tries. Each function mirrors
 * one Python function; the comments name the quirks kept on purpose. */
#include "asn/verifiers.h"
#include "asn/json.h"
#include "asn/sbuf.h"
#include "metrics/pystr.h"

#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------ small strings */

/* Python's s.replace(a, b), all occurrences, left to right. */
static char *replace_all(const char *s, const char *a, const char *b)
{
    size_t na = strlen(a);
    asn_sbuf o;
    asn_sbuf_init(&o, 0);
    const char *p;
    while ((p = strstr(s, a))) {
        asn_sbuf_add(&o, s, (size_t)(p - s));
        asn_sbuf_adds(&o, b);
        s = p + na;
    }
    asn_sbuf_adds(&o, s);
    return asn_sbuf_detach(&o, NULL);
}

/* Replaces *s by s.replace(a, b). */
static void repl(char **s, const char *a, const char *b)
{
    if (!strstr(*s, a))
        return;
    char *r = replace_all(*s, a, b);
    free(*s);
    *s = r;
}

static size_t count_sub(const char *s, const char *a)
{
    size_t n = 0, na = strlen(a);
    for (const char *p = s; (p = strstr(p, a)); p += na)
        n++;
    return n;
}

/* Bytes of the UTF-8 character starting at s (1 for a stray byte). */
static size_t u8len(const char *s)
{
    unsigned char c = (unsigned char)*s;
    size_t n = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    for (size_t i = 1; i < n; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80)
            return 1;
    return n;
}

/* Number of code points (Python's len). */
static size_t u8count(const char *s, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i += u8len(s + i))
        k++;
    return k;
}

/* ------------------------------------------------------- shared regexes */

enum {
    RE_GSM_COMMA,
    RE_GSM_NUMBER,
    RE_MINERVA,
    RE_NF_DOLLARS,
    RE_NF_TEXT,
    RE_NF_TEXTBF,
    RE_NF_OVERLINE,
    RE_NF_BOXED,
    RE_NF_FRAC,
    RE_NF_SQRT,
    RE_NF_DIGITS,
    RE_PY_INT,
    N_RE
};

static const char *const re_src[N_RE] = {
    [RE_GSM_COMMA] = "(\\d),(\\d)",
    [RE_GSM_NUMBER] = "[-+]?\\d*\\.\\d+|\\d+",
    [RE_MINERVA] = "Final Answer: The final answer is(.*?). I hope it is correct.",
    [RE_NF_DOLLARS] = "(.*?)(\\$)(.*?)(\\$)(.*)",
    [RE_NF_TEXT] = "(\\\\text\\{)(.*?)(\\})",
    [RE_NF_TEXTBF] = "(\\\\textbf\\{)(.*?)(\\})",
    [RE_NF_OVERLINE] = "(\\\\overline\\{)(.*?)(\\})",
    [RE_NF_BOXED] = "(\\\\boxed\\{)(.*)(\\})",
    [RE_NF_FRAC] = "(frac)([^{])(.)",
    [RE_NF_SQRT] = "(sqrt)([^{])",
    /* str.isdigit(): decimal digits and the other Unicode digits
     * (superscripts, subscripts, circled ...): Numeric_Type=Digit */
    [RE_NF_DIGITS] = "^[\\p{Nd}\\x{B2}\\x{B3}\\x{B9}\\x{2070}\\x{2074}-\\x{2079}\\x{2080}-\\x{2089}"
                     "\\x{2460}-\\x{2468}\\x{2474}-\\x{247C}\\x{2488}-\\x{2490}\\x{24F5}-\\x{24FD}"
                     "\\x{24EA}\\x{24FF}\\x{2776}-\\x{277E}\\x{2780}-\\x{2788}\\x{278A}-\\x{2792}]+\\z",
    [RE_PY_INT] = "\\A[ \\t\\n\\r\\f\\v]*[-+]?\\d+(?:_\\d+)*[ \\t\\n\\r\\f\\v]*\\z",
};
static asn_regex *re_tab[N_RE];
static pthread_once_t re_once = PTHREAD_ONCE_INIT;

static void re_init(void)
{
    for (int i = 0; i < N_RE; i++) {
        asn_err e;
        re_tab[i] = asn_regex_new(re_src[i], 0, &e);
        if (!re_tab[i]) /* a fixed pattern: a bug, not an input error */
            abort();
    }
}

static const asn_regex *R(int i)
{
    pthread_once(&re_once, re_init);
    return re_tab[i];
}

/* -------------------------------------------------------------- GSM8K */

int asn_gsm8k_check(const char *response, const char *label, char **extracted)
{
    char *text = asn_regex_sub(R(RE_GSM_COMMA), "$1$2", response);
    size_t lso, leo;
    int found = asn_regex_last(R(RE_GSM_NUMBER), text, &lso, &leo);
    char *ans = found ? asn__xstrndup(text + lso, leo - lso) : asn_xstrdup(text);
    free(text);
    char *a = asn_py_lower(ans), *b = asn_py_lower(label);
    int ok = !strcmp(a, b);
    free(a);
    free(b);
    if (extracted)
        *extracted = ans;
    else
        free(ans);
    return ok;
}

char *asn_gsm8k_label(const json_t *gt)
{
    char buf[40];
    if (json_is_integer(gt)) {
        snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(gt));
        return asn_xstrdup(buf);
    }
    if (json_is_real(gt)) {
        asn_fmt_double(buf, json_real_value(gt));
        return asn_xstrdup(buf);
    }
    if (!json_is_string(gt))
        return NULL;
    const char *s = json_string_value(gt), *p = s, *q;
    while ((q = strstr(p, "####")))
        p = q + 4;
    if (p == s)
        return asn_xstrdup(s);
    /* a whole GSM8K solution: its answer follows "####" (digits grouped
     * with commas in a few of them) */
    char *t = asn_py_strip(p);
    char *u = asn_regex_sub(R(RE_GSM_COMMA), "$1$2", t);
    free(t);
    return u;
}

/* --------------------------------------------------------- MATH: boxed */

char *asn_math_last_boxed(const char *s)
{
    const char *sp = strstr(s, "\\boxed ");
    if (sp) { /* "\boxed " + string.split("\\boxed ")[-1].split("$")[0] */
        const char *last = sp, *q;
        while ((q = strstr(last + 1, "\\boxed ")))
            last = q;
        last += 7;
        size_t n = strcspn(last, "$");
        asn_sbuf o;
    asn_sbuf_init(&o, 0);
        asn_sbuf_adds(&o, "\\boxed ");
        asn_sbuf_add(&o, last, n);
        return asn_sbuf_detach(&o, NULL);
    }
    const char *idx = NULL, *q;
    for (q = s; (q = strstr(q, "\\boxed")); q++)
        idx = q;
    if (!idx)
        for (q = s; (q = strstr(q, "\\fbox")); q++)
            idx = q;
    if (!idx)
        return NULL;
    int open = 0;
    for (const char *i = idx; *i; i++) {
        if (*i == '{')
            open++;
        if (*i == '}') {
            open--;
            if (open == 0) /* only a closing brace can end it */
                return asn__xstrndup(idx, (size_t)(i - idx) + 1);
        }
    }
    return NULL;
}

char *asn_math_remove_boxed(const char *s)
{
    if (strstr(s, "\\boxed ")) {
        if (strncmp(s, "\\boxed ", 7))
            return NULL;
        return asn_xstrdup(s + 7);
    }
    size_t n = strlen(s);
    if (strncmp(s, "\\boxed{", 7) || n < 8 || s[n - 1] != '}')
        return NULL; /* n < 8: "\boxed{" alone fails s[-1] == "}" */
    return asn__xstrndup(s + 7, n - 8);
}

/* ---------------------------------------------- MATH: Hendrycks' strip */

/* fix_fracs: "\frac12" -> "\frac{1}{2}", "\frac1{2}" -> "\frac{1}{2}".
 * Returns NULL where the Python raises (an empty piece after "\frac"). */
static char *fix_fracs(const char *s)
{
    const char *first = strstr(s, "\\frac");
    if (!first)
        return asn_xstrdup(s);
    asn_sbuf o;
    asn_sbuf_init(&o, 0);
    asn_sbuf_add(&o, s, (size_t)(first - s));
    const char *p = first + 5;
    for (;;) {
        const char *next = strstr(p, "\\frac");
        size_t n = next ? (size_t)(next - p) : strlen(p);
        asn_sbuf_adds(&o, "\\frac");
        if (n == 0) { /* substr[0] of an empty string: IndexError */
            asn_sbuf_release(&o);
            return NULL;
        }
        if (p[0] == '{') {
            asn_sbuf_add(&o, p, n);
        } else {
            size_t la = u8len(p);
            if (la >= n) { /* fewer than two characters: give up, unchanged */
                asn_sbuf_release(&o);
                return asn_xstrdup(s);
            }
            size_t lb = u8len(p + la);
            asn_sbuf_adds(&o, "{");
            asn_sbuf_add(&o, p, la);
            if (p[la] != '{') {
                asn_sbuf_adds(&o, "}{");
                asn_sbuf_add(&o, p + la, lb);
                asn_sbuf_adds(&o, "}");
            } else {
                asn_sbuf_adds(&o, "}");
                asn_sbuf_add(&o, p + la, lb);
            }
            asn_sbuf_add(&o, p + la + lb, n - la - lb);
        }
        if (!next)
            break;
        p = next + 5;
    }
    return asn_sbuf_detach(&o, NULL);
}

/* fix_sqrt: "\sqrt2" -> "\sqrt{2}"; NULL where the Python raises. */
static char *fix_sqrt(const char *s)
{
    const char *first = strstr(s, "\\sqrt");
    if (!first)
        return asn_xstrdup(s);
    asn_sbuf o;
    asn_sbuf_init(&o, 0);
    asn_sbuf_add(&o, s, (size_t)(first - s));
    const char *p = first + 5;
    for (;;) {
        const char *next = strstr(p, "\\sqrt");
        size_t n = next ? (size_t)(next - p) : strlen(p);
        if (n == 0) {
            asn_sbuf_release(&o);
            return NULL;
        }
        if (p[0] != '{') {
            size_t la = u8len(p);
            asn_sbuf_adds(&o, "\\sqrt{");
            asn_sbuf_add(&o, p, la);
            asn_sbuf_adds(&o, "}");
            asn_sbuf_add(&o, p + la, n - la);
        } else {
            asn_sbuf_adds(&o, "\\sqrt");
            asn_sbuf_add(&o, p, n);
        }
        if (!next)
            break;
        p = next + 5;
    }
    return asn_sbuf_detach(&o, NULL);
}

/* int(x) would succeed: optional sign, Unicode digits, single underscores
 * between digits, white space around (spaces are gone by then). */
static int py_int_parses(const char *s)
{
    size_t so, eo;
    return asn_regex_search(R(RE_PY_INT), s, 0, &so, &eo);
}

/* str(int(x)) == x: the canonical decimal form. */
static int canonical_int(const char *s, size_t n)
{
    size_t i = 0;
    if (i < n && s[i] == '-')
        i++;
    if (i == n)
        return 0;
    if (s[i] == '0')
        return i + 1 == n && i == 0; /* "0" yes; "-0", "01" no */
    for (; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return 0;
    return 1;
}

/* fix_a_slash_b: "3/4" -> "\frac{3}{4}". NULL where int() raises. */
static char *fix_a_slash_b(const char *s)
{
    const char *sl = strchr(s, '/');
    if (!sl || strchr(sl + 1, '/'))
        return asn_xstrdup(s);
    char *a = asn__xstrndup(s, (size_t)(sl - s));
    int ok = py_int_parses(a) && py_int_parses(sl + 1);
    if (!ok) { /* ValueError: not caught by fix_a_slash_b */
        free(a);
        return NULL;
    }
    char *r;
    if (canonical_int(a, strlen(a)) && canonical_int(sl + 1, strlen(sl + 1))) {
        asn_sbuf o;
    asn_sbuf_init(&o, 0);
        asn_sbuf_adds(&o, "\\frac{");
        asn_sbuf_adds(&o, a);
        asn_sbuf_adds(&o, "}{");
        asn_sbuf_adds(&o, sl + 1);
        asn_sbuf_adds(&o, "}");
        r = asn_sbuf_detach(&o, NULL);
    } else { /* AssertionError: caught, unchanged */
        r = asn_xstrdup(s);
    }
    free(a);
    return r;
}

/* Replaces *s by f(*s); 0, or -1 (s freed) when f raises. */
static int apply(char **s, char *(*f)(const char *))
{
    char *r = f(*s);
    free(*s);
    *s = r;
    return r ? 0 : -1;
}

char *asn_math_strip_string(const char *in)
{
    char *s = asn_xstrdup(in);
    repl(&s, "\n", "");
    repl(&s, "\\!", "");
    repl(&s, "\\\\", "\\");
    repl(&s, "tfrac", "frac");
    repl(&s, "dfrac", "frac");
    repl(&s, "\\left", "");
    repl(&s, "\\right", "");
    repl(&s, "^{\\circ}", "");
    repl(&s, "^\\circ", "");
    repl(&s, "\\$", "");
    /* remove_right_units: asserts there is exactly one "\text{ " */
    size_t nu = count_sub(s, "\\text{ ");
    if (nu > 1) {
        free(s);
        return NULL;
    }
    if (nu == 1)
        *strstr(s, "\\text{ ") = 0;
    repl(&s, "\\%", "");
    repl(&s, " .", " 0.");
    repl(&s, "{.", "{0.");
    if (!*s)
        return s;
    if (s[0] == '.') {
        char *t = asn_xmalloc(strlen(s) + 2);
        t[0] = '0';
        strcpy(t + 1, s);
        free(s);
        s = t;
    }
    /* "k = 3" -> "3" when the left side is at most two characters */
    char *eq = strchr(s, '=');
    if (eq && !strchr(eq + 1, '=') && u8count(s, (size_t)(eq - s)) <= 2) {
        char *t = asn_xstrdup(eq + 1);
        free(s);
        s = t;
    }
    if (apply(&s, fix_sqrt))
        return NULL;
    repl(&s, " ", "");
    if (apply(&s, fix_fracs))
        return NULL;
    if (!strcmp(s, "0.5")) {
        free(s);
        s = asn_xstrdup("\\frac{1}{2}");
    }
    if (apply(&s, fix_a_slash_b))
        return NULL;
    return s;
}

int asn_math_hendrycks_equiv(const char *a, const char *b)
{
    char *x = asn_math_strip_string(a), *y = x ? asn_math_strip_string(b) : NULL;
    int eq = x && y ? !strcmp(x, y) : !strcmp(a, b);
    free(x);
    free(y);
    return eq;
}

/* --------------------------------------------- MATH: Minerva normalizer */

static const char *const subst[][2] = {
    {"an ", ""}, {"a ", ""}, {".$", "$"}, {"\\$", ""}, {"\\ ", ""}, {" ", ""},
    {"mbox", "text"}, {",\\text{and}", ","}, {"\\text{and}", ","}, {"\\text{m}", "\\text{}"},
};
static const char *const removed[] = {
    "square", "ways", "integers", "dollars", "mph", "inches", "ft", "hours", "km", "units",
    "\\ldots", "sue", "points", "feet", "minutes", "digits", "cents", "degrees", "cm", "gm",
    "pounds", "meters", "meals", "edges", "students", "childrentickets", "multiples",
    "\\text{s}", "\\text{.}", "\\text{\ns}", "\\text{}^2", "\\text{}^3", "\\text{\n}", "\\text{}",
    "\\mathrm{th}", "^\\circ", "^{\\circ}", "\\;", ",\\!", "{,}", "\"", "\\dots",
};

static void resub(char **s, int which, const char *rep)
{
    char *r = asn_regex_sub(R(which), rep, *s);
    free(*s);
    *s = r;
}

char *asn_math_normalize_final_answer(const char *in)
{
    const char *last = in, *q;
    while ((q = strchr(last, '=')))
        last = q + 1;
    char *s = asn_xstrdup(last);
    for (size_t i = 0; i < sizeof subst / sizeof *subst; i++)
        repl(&s, subst[i][0], subst[i][1]);
    for (size_t i = 0; i < sizeof removed / sizeof *removed; i++)
        repl(&s, removed[i], "");
    resub(&s, RE_NF_DOLLARS, "$$$3$$");
    resub(&s, RE_NF_TEXT, "$2");
    resub(&s, RE_NF_TEXTBF, "$2");
    resub(&s, RE_NF_OVERLINE, "$2");
    resub(&s, RE_NF_BOXED, "$2");
    resub(&s, RE_NF_FRAC, "frac{$2}{$3}");
    resub(&s, RE_NF_SQRT, "sqrt{$2}");
    repl(&s, "$", "");
    char *nc = replace_all(s, ",", "");
    size_t so, eo;
    if (asn_regex_search(R(RE_NF_DIGITS), nc, 0, &so, &eo)) {
        free(s);
        return nc;
    }
    free(nc);
    return s;
}

/* get_unnormalized_answer: the Minerva prompt's answer sentence. */
static char *minerva_answer(const char *text)
{
    asn_sbuf t;
    asn_sbuf_init(&t, 0);
    asn_sbuf_adds(&t, text);
    asn_sbuf_adds(&t, "I hope it is correct.");
    char *tx = asn_sbuf_detach(&t, NULL);
    size_t so, eo;
    char *r;
    if (asn_regex_group(R(RE_MINERVA), tx, 0, 1, &so, &eo)) {
        char *g = asn__xstrndup(tx + so, eo - so);
        r = asn_py_strip(g);
        free(g);
    } else {
        r = asn_xstrdup("[invalidanswer]");
    }
    free(tx);
    return r;
}

/* ------------------------------------------ MATH: numeric equivalence */

/* A small recursive-descent evaluator for the LaTeX a final answer is
 * written in. Anything it does not know makes the whole parse fail, so an
 * answer is either a plain real expression or not comparable. */
enum { N_POINTS = 3 };

typedef struct ev {
    const char *p;
    const double *vars; /* value of 'a'..'z', 'A'..'Z' at this point */
    int bad;
} ev;

static double ev_expr(ev *x);

static void ev_space(ev *x)
{
    for (;;) {
        while (*x->p == ' ' || *x->p == '\t' || *x->p == '\n')
            x->p++;
        /* LaTeX spacing: \, \; \: \! and "\ " */
        if (x->p[0] == '\\' && x->p[1] && strchr(",;:! ", x->p[1])) {
            x->p += 2;
            continue;
        }
        if (!strncmp(x->p, "\\left", 5) && !isalpha((unsigned char)x->p[5])) {
            x->p += 5;
            continue;
        }
        if (!strncmp(x->p, "\\right", 6) && !isalpha((unsigned char)x->p[6])) {
            x->p += 6;
            continue;
        }
        return;
    }
}

static int ev_cmd(ev *x, const char *name)
{
    size_t n = strlen(name);
    ev_space(x);
    if (x->p[0] == '\\' && !strncmp(x->p + 1, name, n) && !isalpha((unsigned char)x->p[1 + n])) {
        x->p += 1 + n;
        return 1;
    }
    return 0;
}

/* {expr} or a single digit or letter (as in \frac12, \sqrt2, x^2). */
static double ev_arg(ev *x)
{
    ev_space(x);
    if (*x->p == '{') {
        x->p++;
        double v = ev_expr(x);
        ev_space(x);
        if (*x->p != '}')
            x->bad = 1;
        else
            x->p++;
        return v;
    }
    char c = *x->p;
    if (isdigit((unsigned char)c)) {
        x->p++;
        return c - '0';
    }
    if (isalpha((unsigned char)c)) {
        x->p++;
        return x->vars[isupper((unsigned char)c) ? 26 + c - 'A' : c - 'a'];
    }
    if (ev_cmd(x, "pi"))
        return M_PI;
    x->bad = 1;
    return 0;
}

static double ev_primary(ev *x)
{
    ev_space(x);
    const char *p = x->p;
    if (isdigit((unsigned char)*p) || (*p == '.' && isdigit((unsigned char)p[1]))) {
        const char *q = p; /* digits and at most one dot (no exponent, no hex) */
        while (isdigit((unsigned char)*q))
            q++;
        if (*q == '.') {
            q++;
            while (isdigit((unsigned char)*q))
                q++;
        }
        char *tok = asn__xstrndup(p, (size_t)(q - p));
        double v = strtod(tok, NULL);
        free(tok);
        x->p = q;
        return v;
    }
    if (isalpha((unsigned char)*p)) {
        x->p++;
        return x->vars[isupper((unsigned char)*p) ? 26 + *p - 'A' : *p - 'a'];
    }
    if (*p == '(' || *p == '[' || *p == '{') {
        char close = *p == '(' ? ')' : *p == '[' ? ']' : '}';
        x->p++;
        double v = ev_expr(x);
        ev_space(x);
        if (*x->p != close)
            x->bad = 1;
        else
            x->p++;
        return v;
    }
    if (ev_cmd(x, "frac") || ev_cmd(x, "dfrac") || ev_cmd(x, "tfrac")) {
        double a = ev_arg(x), b = ev_arg(x);
        return a / b;
    }
    if (ev_cmd(x, "sqrt")) {
        ev_space(x);
        double root = 2;
        if (*x->p == '[') {
            x->p++;
            root = ev_expr(x);
            ev_space(x);
            if (*x->p != ']')
                x->bad = 1;
            else
                x->p++;
        }
        double a = ev_arg(x);
        return root == 2 ? sqrt(a) : pow(a, 1 / root);
    }
    if (ev_cmd(x, "pi"))
        return M_PI;
    x->bad = 1;
    return 0;
}

static double ev_power(ev *x)
{
    double b = ev_primary(x);
    ev_space(x);
    if (*x->p == '^') {
        x->p++;
        ev_space(x);
        double e;
        if (*x->p == '-' || *x->p == '+') { /* x^-1 */
            int neg = *x->p == '-';
            x->p++;
            e = ev_arg(x);
            e = neg ? -e : e;
        } else if (isdigit((unsigned char)*x->p)) { /* x^23: sympy reads the whole number */
            e = ev_primary(x);
        } else {
            e = ev_arg(x);
        }
        return pow(b, e);
    }
    return b;
}

static double ev_unary(ev *x)
{
    ev_space(x);
    if (*x->p == '-') {
        x->p++;
        return -ev_unary(x);
    }
    if (*x->p == '+') {
        x->p++;
        return ev_unary(x);
    }
    return ev_power(x);
}

static double ev_term(ev *x)
{
    double v = ev_unary(x);
    while (!x->bad) {
        ev_space(x);
        char c = *x->p;
        if (c == '*') {
            x->p++;
            v *= ev_unary(x);
        } else if (c == '/') {
            x->p++;
            v /= ev_unary(x);
        } else if (ev_cmd(x, "cdot") || ev_cmd(x, "times")) {
            v *= ev_unary(x);
        } else if (ev_cmd(x, "div")) {
            v /= ev_unary(x);
        } else if (c && (isalnum((unsigned char)c) || c == '(' || c == '{' || c == '\\' || c == '.')) {
            /* implicit product: 2x, 2\sqrt{3}, (a)(b) */
            const char *before = x->p;
            double w = ev_power(x);
            if (x->bad || x->p == before)
                break;
            v *= w;
        } else {
            break;
        }
    }
    return v;
}

static double ev_expr(ev *x)
{
    double v = ev_term(x);
    while (!x->bad) {
        ev_space(x);
        if (*x->p == '+') {
            x->p++;
            v += ev_term(x);
        } else if (*x->p == '-') {
            x->p++;
            v -= ev_term(x);
        } else {
            break;
        }
    }
    return v;
}

/* Values of s at the N_POINTS points; 0 if s is not an expression. */
static int ev_values(const char *s, double out[N_POINTS])
{
    for (int k = 0; k < N_POINTS; k++) {
        double vars[52];
        for (int i = 0; i < 52; i++) /* fixed, irrational-looking values */
            vars[i] = 0.5 + fmod((i + 1) * 0.6180339887498949 * (k + 1) + 0.1234 * k, 1.0) * 2.0;
        ev x = {s, vars, 0};
        double v = ev_expr(&x);
        ev_space(&x);
        if (x.bad || *x.p || !isfinite(v))
            return 0;
        out[k] = v;
    }
    return 1;
}

/* Relative tolerance for the numeric stand-in of sympy's simplify(a-b)==0:
 * tight enough that 0.333 and 1/3 differ, loose enough for rounding in
 * double arithmetic (sqrt(2)/2 vs 1/sqrt(2)). */
#define VALUE_EQ_RTOL 1e-12

int asn_math_value_equiv(const char *a, const char *b)
{
    double va[N_POINTS], vb[N_POINTS];
    if (!*a || !*b || !ev_values(a, va) || !ev_values(b, vb))
        return 0;
    for (int k = 0; k < N_POINTS; k++) {
        double scale = fmax(1.0, fmax(fabs(va[k]), fabs(vb[k])));
        if (fabs(va[k] - vb[k]) > VALUE_EQ_RTOL * scale)
            return 0;
    }
    return 1;
}

/* --------------------------------------------------- MATH: the verifier */

int asn_math_check(const char *response, const char *label, int flags, char **extracted)
{
    char *answers[3];
    int n = 0;
    char *boxed = asn_math_last_boxed(response);
    if (boxed) {
        char *inner = asn_math_remove_boxed(boxed);
        if (inner)
            answers[n++] = inner;
        free(boxed);
    }
    char *un = minerva_answer(response);
    char *mn = asn_math_normalize_final_answer(un);
    free(un);
    if (strcmp(mn, "[invalidanswer]"))
        answers[n++] = mn;
    else
        free(mn);
    if (!n) { /* the last $...$ */
        const char *d2 = NULL, *d1 = NULL;
        for (const char *q = response; (q = strchr(q, '$')); q++)
            d2 = d1, d1 = q;
        if (d2) {
            char *mid = asn__xstrndup(d2 + 1, (size_t)(d1 - d2 - 1));
            answers[n++] = asn_math_normalize_final_answer(mid);
            free(mid);
        }
    }
    if (!n) {
        answers[n++] = asn_math_normalize_final_answer(response);
        answers[n++] = asn_xstrdup(response);
    }
    int ok = 0;
    for (int i = 0; i < n && !ok; i++)
        ok = ((flags & ASN_MATH_VALUES) && asn_math_value_equiv(answers[i], label)) ||
             asn_math_hendrycks_equiv(answers[i], label);
    if (extracted)
        *extracted = answers[0], answers[0] = NULL;
    for (int i = 0; i < n; i++)
        free(answers[i]);
    return ok;
}
