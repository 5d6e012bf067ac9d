/* ifeval.c — instruction-following checks: the 25 instructions of Google's
 * IFEval registry (instruction_following_eval/instructions.py, strict mode),
 * the reference project's older func_name constraints, and the Python re
 * semantics that every verifier shares (PCRE2 in Unicode mode). Python's
 * str semantics are pystr.c's, the language detection langdetect.c's. */
#include "asn/verifiers.h"
#include "asn/sbuf.h"
#include "asn/json.h"
#include "metrics/pystr.h"

#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

/* --------------------------------------------------------------- regexes */

struct asn_regex {
    pcre2_code *code;
};

asn_regex *asn_regex_new(const char *pattern, int flags, asn_err *e)
{
    uint32_t opts = PCRE2_UTF | PCRE2_UCP;
    if (flags & ASN_RE_ICASE)
        opts |= PCRE2_CASELESS;
    if (flags & ASN_RE_MULTILINE)
        opts |= PCRE2_MULTILINE;
    if (flags & ASN_RE_DOTALL)
        opts |= PCRE2_DOTALL;
    pcre2_compile_context *cc = pcre2_compile_context_create(NULL);
    pcre2_set_newline(cc, PCRE2_NEWLINE_LF); /* Python: only \n ends a line */
    int err;
    PCRE2_SIZE at;
    pcre2_code *code = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, opts, &err, &at, cc);
    pcre2_compile_context_free(cc);
    if (!code) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(err, msg, sizeof msg);
        asn_err_set(e, "bad regular expression \"%.200s\": %s at offset %zu", pattern, (char *)msg, (size_t)at);
        return NULL;
    }
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE); /* the interpreter serves if JIT is missing */
    asn_regex *re = asn_xmalloc(sizeof *re);
    re->code = code;
    return re;
}

void asn_regex_free(asn_regex *re)
{
    if (!re)
        return;
    pcre2_code_free(re->code);
    free(re);
}

/* One match at or after start; opts for the empty-match retry. 1, 0, or 0
 * on a matcher error (resource limits: treated as no match). */
static int re_match(const asn_regex *re, const char *s, size_t n, size_t start, uint32_t opts,
                    pcre2_match_data *md)
{
    int rc = pcre2_match(re->code, (PCRE2_SPTR)s, n, start, opts | PCRE2_NO_UTF_CHECK, md, NULL);
    return rc > 0;
}

int asn_regex_group(const asn_regex *re, const char *s, size_t start, int group, size_t *so, size_t *eo)
{
    size_t n = strlen(s);
    if (start > n)
        return 0;
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re->code, NULL);
    int found = re_match(re, s, n, start, 0, md);
    if (found) {
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        uint32_t ng = pcre2_get_ovector_count(md);
        if (group < 0 || (uint32_t)group >= ng || ov[2 * group] == PCRE2_UNSET) {
            *so = *eo = ov[0];
        } else {
            *so = ov[2 * group];
            *eo = ov[2 * group + 1];
        }
    }
    pcre2_match_data_free(md);
    return found;
}

int asn_regex_search(const asn_regex *re, const char *s, size_t start, size_t *so, size_t *eo)
{
    return asn_regex_group(re, s, start, 0, so, eo);
}

/* Calls f(so, eo, arg) for each non-overlapping match, left to right, with
 * Python's rule for empty matches (allowed, but not twice at one place). */
static void re_each(const asn_regex *re, const char *s, void (*f)(size_t, size_t, void *), void *arg)
{
    size_t n = strlen(s), at = 0;
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re->code, NULL);
    uint32_t opts = 0;
    while (at <= n) {
        if (!re_match(re, s, n, at, opts, md)) {
            if (!opts)
                break;
            /* no non-empty match here: step one character */
            size_t l;
            if (at >= n)
                break;
            asn__u8dec(s + at, n - at, &l);
            at += l;
            opts = 0;
            continue;
        }
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        f(ov[0], ov[1], arg);
        at = ov[1];
        opts = ov[0] == ov[1] ? PCRE2_NOTEMPTY_ATSTART | PCRE2_ANCHORED : 0;
        if (opts && at >= n)
            break;
    }
    pcre2_match_data_free(md);
}

static void count_cb(size_t so, size_t eo, void *arg)
{
    (void)so, (void)eo;
    ++*(size_t *)arg;
}

size_t asn_regex_count(const asn_regex *re, const char *s)
{
    size_t k = 0;
    re_each(re, s, count_cb, &k);
    return k;
}

typedef struct last_st {
    size_t so, eo;
    int found;
} last_st;
static void last_cb(size_t so, size_t eo, void *arg)
{
    last_st *st = arg;
    st->so = so, st->eo = eo, st->found = 1;
}

int asn_regex_last(const asn_regex *re, const char *s, size_t *so, size_t *eo)
{
    last_st st = {0, 0, 0};
    re_each(re, s, last_cb, &st);
    *so = st.so;
    *eo = st.eo;
    return st.found;
}

char *asn_regex_sub(const asn_regex *re, const char *repl, const char *s)
{
    size_t n = strlen(s);
    PCRE2_SIZE cap = n * 2 + 64;
    char *out = asn_xmalloc(cap);
    uint32_t opts = PCRE2_SUBSTITUTE_GLOBAL | PCRE2_SUBSTITUTE_OVERFLOW_LENGTH | PCRE2_SUBSTITUTE_UNSET_EMPTY |
                    PCRE2_NO_UTF_CHECK;
    for (;;) {
        PCRE2_SIZE len = cap;
        int rc = pcre2_substitute(re->code, (PCRE2_SPTR)s, n, 0, opts, NULL, NULL, (PCRE2_SPTR)repl,
                                  PCRE2_ZERO_TERMINATED, (PCRE2_UCHAR *)out, &len);
        if (rc >= 0)
            return out;
        if (rc == PCRE2_ERROR_NOMEMORY) {
            cap = len + 1;
            out = asn_xrealloc(out, cap);
            continue;
        }
        /* a bad replacement string is a bug in a fixed table; a matcher
         * limit on absurd input leaves the text unchanged */
        free(out);
        return asn_xstrdup(s);
    }
}

/* A compiled fixed pattern, built once. */
typedef struct fixed_re {
    const char *src;
    int flags;
    asn_regex *re;
} fixed_re;

static pthread_mutex_t fixed_mu = PTHREAD_MUTEX_INITIALIZER;

static const asn_regex *fixed(fixed_re *f)
{
    pthread_mutex_lock(&fixed_mu);
    if (!f->re) {
        asn_err e;
        f->re = asn_regex_new(f->src, f->flags, &e);
        if (!f->re)
            abort(); /* a fixed pattern that does not compile is a bug */
    }
    pthread_mutex_unlock(&fixed_mu);
    return f->re;
}
#define FIXED(name, src, flags) static fixed_re name = {src, flags, NULL}

/* ---------------------------------------------------------- word counts */

FIXED(re_word, "\\w+", 0);

size_t asn_ifeval_count_words(const char *text) { return asn_regex_count(fixed(&re_word), text); }

/* ------------------------------------------------------ sentence counts */

/* Abbreviations that do not end a sentence: the common English ones of
 * Punkt's English model (titles, months, days, company forms). */
static const char *const abbrevs[] = {
    "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "mt", "vs", "inc", "ltd", "co", "corp", "bros",
    "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec", "mon", "tue",
    "tues", "wed", "thu", "thur", "thurs", "fri", "sat", "sun", "gen", "gov", "sen", "rep", "lt", "col",
    "capt", "sgt", "rev", "hon", "fig", "figs", "vol", "approx", "dept", "est", "cf", "al", "ca", "ph.d",
    NULL,
};

static int closing_punct(uint32_t c)
{
    return c == '"' || c == '\'' || c == ')' || c == ']' || c == '}' || c == 0x2019 || c == 0x201D || c == 0xBB;
}

typedef struct tok {
    const char *s;
    size_t n;
} tok;

typedef struct toks {
    tok *v;
    size_t n, cap;
} toks;

static void tok_cb(const char *s, size_t n, void *arg)
{
    toks *t = arg;
    asn_grow((void **)&t->v, &t->cap, t->n + 1, sizeof *t->v);
    t->v[t->n++] = (tok){s, n};
}

/* First code point of a token. */
static uint32_t first_cp(tok t)
{
    size_t l;
    for (size_t i = 0; i < t.n; i += l) {
        uint32_t c = asn__u8dec(t.s + i, t.n - i, &l);
        if (asn__cp_isalpha(c) || (c >= '0' && c <= '9'))
            return c;
        if (!closing_punct(c) && c != '(' && c != '[' && c != 0x201C && c != 0x2018)
            return c;
    }
    return 0;
}

/* Does token t (followed by `next`, NULL at the end) end a sentence? */
static int ends_sentence(tok t, const tok *next)
{
    size_t n = t.n, l;
    /* drop closing quotes and brackets */
    while (n > 0) {
        size_t k = n - 1;
        while (k > 0 && ((unsigned char)t.s[k] & 0xC0) == 0x80)
            k--;
        uint32_t c = asn__u8dec(t.s + k, n - k, &l);
        if (!closing_punct(c))
            break;
        n = k;
    }
    if (n == 0)
        return 0;
    char last = t.s[n - 1];
    if (last == '?' || last == '!')
        return 1;
    if (last != '.')
        return 0;
    if (!next)
        return 1;
    uint32_t nc = first_cp(*next);
    int next_lower = asn__cp_islower(nc);
    /* an ellipsis ends a sentence only before a capital */
    if (n >= 2 && t.s[n - 2] == '.')
        return !next_lower;
    size_t wn = n - 1; /* the word without its final period */
    const char *w = t.s;
    while (wn > 0 && !asn__cp_isalpha((unsigned char)w[0]) && !(w[0] >= '0' && w[0] <= '9') &&
           ((unsigned char)w[0] < 0x80)) /* leading quotes and brackets */
        w++, wn--;
    if (wn == 0)
        return 1;
    /* a number: "in 1990. Then" ends, "1. point" does not */
    int digits = 1;
    for (size_t i = 0; i < wn; i++)
        if (!(w[i] >= '0' && w[i] <= '9') && w[i] != ',' && w[i] != '.')
            digits = 0;
    if (digits)
        return !next_lower;
    /* an initial ("J. Smith") or dotted abbreviation ("e.g.", "U.S.") */
    size_t letters = 0;
    int dotted = 0, other = 0;
    for (size_t i = 0; i < wn; i += l) {
        uint32_t c = asn__u8dec(w + i, wn - i, &l);
        if (c == '.')
            dotted = 1;
        else if (asn__cp_isalpha(c))
            letters++;
        else
            other = 1;
    }
    if (!other && (letters == 1 || dotted))
        return 0;
    char low[16];
    if (wn < sizeof low) {
        for (size_t i = 0; i < wn; i++)
            low[i] = (char)tolower((unsigned char)w[i]);
        low[wn] = 0;
        for (const char *const *a = abbrevs; *a; a++)
            if (!strcmp(low, *a))
                return 0;
    }
    return 1;
}

size_t asn_ifeval_count_sentences(const char *text)
{
    toks t = {0};
    asn__py_split_ws(text, tok_cb, &t);
    size_t count = 0;
    int open = 0;
    for (size_t i = 0; i < t.n; i++) {
        open = 1;
        if (ends_sentence(t.v[i], i + 1 < t.n ? &t.v[i + 1] : NULL)) {
            count++;
            open = 0;
        }
    }
    count += open;
    free(t.v);
    return count;
}

/* ------------------------------------------------ capital word counts */

/* NLTKWordTokenizer's substitutions, in its order (nltk/tokenize/
 * destructive.py), with replacements in PCRE2 syntax. */
typedef struct rule {
    fixed_re re;
    const char *repl;
} rule;
#define RULE(src, repl) {{src, 0, NULL}, repl}

static rule nltk_start[] = {
    RULE("([«“‘„]|[`]+)", " $1 "),
    RULE("^\"", "``"),
    RULE("(``)", " $1 "),
    RULE("([ \\(\\[{<])(\"|\\'{2})", "$1 `` "),
    RULE("(?i)(\\')(?!re|ve|ll|m|t|s|d|n)(\\w)\\b", "$1 $2"),
    RULE("([^\\.])(\\.)([\\]\\)}>\"\\'»”’ ]*)\\s*$", "$1 $2 $3 "),
    RULE("([:,])([^\\d])", " $1 $2"),
    RULE("([:,])$", " $1 "),
    RULE("\\.{2,}", " $0 "),
    RULE("[;@#$%&]", " $0 "),
    RULE("([^\\.])(\\.)([\\]\\)}>\"\\']*)\\s*$", "$1 $2$3 "),
    RULE("[?!]", " $0 "),
    RULE("([^'])' ", "$1 ' "),
    RULE("[*]", " $0 "),
    RULE("[\\]\\[\\(\\)\\{\\}\\<\\>]", " $0 "),
    RULE("--", " -- "),
};
static rule nltk_end[] = {
    RULE("([»”’])", " $1 "),
    RULE("''", " '' "),
    RULE("\"", " '' "),
    RULE("([^' ])('[sS]|'[mM]|'[dD]|') ", "$1 $2 "),
    RULE("([^' ])('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) ", "$1 $2 "),
    RULE("(?i)\\b(can)(?#X)(not)\\b", " $1 $2 "),
    RULE("(?i)\\b(d)(?#X)('ye)\\b", " $1 $2 "),
    RULE("(?i)\\b(gim)(?#X)(me)\\b", " $1 $2 "),
    RULE("(?i)\\b(gon)(?#X)(na)\\b", " $1 $2 "),
    RULE("(?i)\\b(got)(?#X)(ta)\\b", " $1 $2 "),
    RULE("(?i)\\b(lem)(?#X)(me)\\b", " $1 $2 "),
    RULE("(?i)\\b(more)(?#X)('n)\\b", " $1 $2 "),
    RULE("(?i)\\b(wan)(?#X)(na)(?=\\s)", " $1 $2 "),
    RULE("(?i) ('t)(?#X)(is)\\b", " $1 $2 "),
    RULE("(?i) ('t)(?#X)(was)\\b", " $1 $2 "),
};

static void apply_rules(char **s, rule *r, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char *t = asn_regex_sub(fixed(&r[i].re), r[i].repl, *s);
        free(*s);
        *s = t;
    }
}

static void upper_cb(const char *s, size_t n, void *arg)
{
    char *w = asn__xstrndup(s, n);
    if (asn_py_isupper(w))
        ++*(size_t *)arg;
    free(w);
}

size_t asn_ifeval_count_capital_words(const char *text)
{
    char *s = asn_xstrdup(text);
    apply_rules(&s, nltk_start, sizeof nltk_start / sizeof *nltk_start);
    asn_sbuf b = {0};
    asn_sbuf_adds(&b, " ");
    asn_sbuf_adds(&b, s);
    asn_sbuf_adds(&b, " ");
    free(s);
    s = b.buf;
    apply_rules(&s, nltk_end, sizeof nltk_end / sizeof *nltk_end);
    size_t k = 0;
    asn__py_split_ws(s, upper_cb, &k);
    free(s);
    return k;
}

/* ------------------------------------------------------- JSON, as Python */

/* json.loads acceptance: any JSON value, NaN / Infinity / -Infinity,
 * numbers of any size, duplicate keys; control characters in strings
 * rejected (strict); white space is " \t\n\r". */
typedef struct pj {
    const char *p;
    int depth;
} pj;

static void pj_ws(pj *j)
{
    while (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')
        j->p++;
}

static int pj_value(pj *j);

static int pj_string(pj *j)
{
    if (*j->p != '"')
        return 0;
    j->p++;
    for (;;) {
        unsigned char c = (unsigned char)*j->p;
        if (c == '"') {
            j->p++;
            return 1;
        }
        if (c < 0x20) /* includes the end of text */
            return 0;
        if (c == '\\') {
            j->p++;
            char e = *j->p;
            if (e == 'u') {
                for (int i = 1; i <= 4; i++)
                    if (!isxdigit((unsigned char)j->p[i]))
                        return 0;
                j->p += 5;
                continue;
            }
            if (!e || !strchr("\"\\/bfnrt", e))
                return 0;
        }
        j->p++;
    }
}

static int pj_number(pj *j)
{
    const char *p = j->p;
    if (*p == '-')
        p++;
    if (!strncmp(p, "Infinity", 8)) {
        j->p = p + 8;
        return 1;
    }
    if (*p == '0')
        p++;
    else if (*p >= '1' && *p <= '9')
        while (isdigit((unsigned char)*p))
            p++;
    else
        return 0;
    if (*p == '.' && isdigit((unsigned char)p[1])) {
        p++;
        while (isdigit((unsigned char)*p))
            p++;
    }
    if ((*p == 'e' || *p == 'E')) {
        const char *q = p + 1;
        if (*q == '+' || *q == '-')
            q++;
        if (isdigit((unsigned char)*q)) {
            while (isdigit((unsigned char)*q))
                q++;
            p = q;
        }
    }
    j->p = p;
    return 1;
}

/* The members of an object (key: value pairs) or array after its opening
 * bracket, up to and including `close`. */
static int pj_members(pj *j, char close)
{
    pj_ws(j);
    if (*j->p == close) {
        j->p++;
        return 1;
    }
    for (;;) {
        if (close == '}') {
            pj_ws(j);
            if (!pj_string(j))
                return 0;
            pj_ws(j);
            if (*j->p != ':')
                return 0;
            j->p++;
        }
        if (!pj_value(j))
            return 0;
        pj_ws(j);
        if (*j->p == ',') {
            j->p++;
            continue;
        }
        if (*j->p != close)
            return 0;
        j->p++;
        return 1;
    }
}

static int pj_value(pj *j)
{
    /* Python raises RecursionError (not ValueError) past its limit: deep
     * nesting is no answer anyone would give */
    if (++j->depth > 900)
        return 0;
    pj_ws(j);
    int ok = 0;
    char c = *j->p;
    if (c == '{' || c == '[') {
        j->p++;
        ok = pj_members(j, c == '{' ? '}' : ']');
    } else if (c == '"') {
        ok = pj_string(j);
    } else if (!strncmp(j->p, "true", 4) || !strncmp(j->p, "null", 4)) {
        j->p += 4;
        ok = 1;
    } else if (!strncmp(j->p, "false", 5)) {
        j->p += 5;
        ok = 1;
    } else if (!strncmp(j->p, "NaN", 3)) {
        j->p += 3;
        ok = 1;
    } else {
        ok = pj_number(j);
    }
    j->depth--;
    return ok;
}

static int py_json_loads_ok(const char *s)
{
    pj j = {s, 0};
    if (!pj_value(&j))
        return 0;
    pj_ws(&j);
    return *j.p == 0;
}

/* ------------------------------------------------------ Google's checks */

const char *const asn_ifeval_ids[] = {
    "keywords:existence",
    "keywords:frequency",
    "keywords:forbidden_words",
    "keywords:letter_frequency",
    "language:response_language",
    "length_constraints:number_sentences",
    "length_constraints:number_paragraphs",
    "length_constraints:number_words",
    "length_constraints:nth_paragraph_first_word",
    "detectable_content:number_placeholders",
    "detectable_content:postscript",
    "detectable_format:number_bullet_lists",
    "detectable_format:constrained_response",
    "detectable_format:number_highlighted_sections",
    "detectable_format:multiple_sections",
    "detectable_format:json_format",
    "detectable_format:title",
    "combination:two_responses",
    "combination:repeat_prompt",
    "startend:end_checker",
    "change_case:capital_word_frequency",
    "change_case:english_capital",
    "change_case:english_lowercase",
    "punctuation:no_comma",
    "startend:quotation",
    NULL,
};

/* kwargs access: a null value counts as absent. */
static const json_t *kw(const json_t *kwargs, const char *key)
{
    const json_t *v = json_is_object(kwargs) ? json_object_get(kwargs, key) : NULL;
    return v && !json_is_null(v) ? v : NULL;
}

static int kw_str(const json_t *kwargs, const char *key, const char **out, asn_err *e)
{
    const json_t *v = kw(kwargs, key);
    if (!v)
        return asn_err_set(e, "argument \"%s\" is missing", key);
    if (!json_is_string(v))
        return asn_err_set(e, "argument \"%s\" must be a string, not %s", key, asn_json_type_name(v));
    *out = json_string_value(v);
    return 0;
}

/* A non-negative integer (Google draws a random one for None or < 0). */
static int kw_int(const json_t *kwargs, const char *key, long long *out, asn_err *e)
{
    const json_t *v = kw(kwargs, key);
    if (!v)
        return asn_err_set(e, "argument \"%s\" is missing", key);
    double d;
    if (json_is_integer(v))
        *out = json_integer_value(v);
    else if (!json_is_boolean(v) && !asn_json_number(v, &d) && d == floor(d) && fabs(d) < 9e15)
        *out = (long long)d;
    else
        return asn_err_set(e, "argument \"%s\" must be an integer, not %s", key, asn_json_type_name(v));
    if (*out < 0)
        return asn_err_set(e, "argument \"%s\" must not be negative", key);
    return 0;
}

/* "less than" -> 0, "at least" -> 1 (Google's _COMPARISON_RELATION). */
static int kw_relation(const json_t *kwargs, const char *key, int *at_least, asn_err *e)
{
    const char *r = NULL;
    if (kw_str(kwargs, key, &r, e))
        return -1;
    if (!strcmp(r, "less than"))
        *at_least = 0;
    else if (!strcmp(r, "at least"))
        *at_least = 1;
    else
        return asn_err_set(e, "argument \"%s\" must be \"less than\" or \"at least\", not \"%s\"", key, r);
    return 0;
}

static int compare(long long actual, int at_least, long long threshold)
{
    return at_least ? actual >= threshold : actual < threshold;
}

/* A list of strings (a non-empty one: Google draws random words for an
 * empty or missing list). */
static int kw_strlist(const json_t *kwargs, const char *key, const json_t **out, asn_err *e)
{
    const json_t *v = kw(kwargs, key);
    if (!v || (json_is_array(v) && json_array_size(v) == 0))
        return asn_err_set(e, "argument \"%s\" is missing", key);
    if (!json_is_array(v))
        return asn_err_set(e, "argument \"%s\" must be a list of strings, not %s", key, asn_json_type_name(v));
    for (size_t i = 0; i < json_array_size(v); i++)
        if (!json_is_string(json_array_get(v, i)))
            return asn_err_set(e, "argument \"%s\" must be a list of strings", key);
    *out = v;
    return 0;
}

/* re.search(pattern, value, flags) with a pattern from the data. */
static int dyn_search(const char *pattern, int flags, const char *value, int *found, asn_err *e)
{
    asn_regex *re = asn_regex_new(pattern, flags, e);
    if (!re)
        return -1;
    size_t so, eo;
    *found = asn_regex_search(re, value, 0, &so, &eo);
    asn_regex_free(re);
    return 0;
}

static int dyn_count(const char *pattern, int flags, const char *value, size_t *count, asn_err *e)
{
    asn_regex *re = asn_regex_new(pattern, flags, e);
    if (!re)
        return -1;
    *count = asn_regex_count(re, value);
    asn_regex_free(re);
    return 0;
}

/* Pieces of s between occurrences of sep (str.split(sep)); caller frees v. */
static size_t split_str(const char *s, const char *sep, tok **v)
{
    size_t n = 0, cap = 0, m = strlen(sep);
    *v = NULL;
    const char *p = s, *q;
    while ((q = strstr(p, sep))) {
        asn_grow((void **)v, &cap, n + 1, sizeof **v);
        (*v)[n++] = (tok){p, (size_t)(q - p)};
        p = q + m;
    }
    asn_grow((void **)v, &cap, n + 1, sizeof **v);
    (*v)[n++] = (tok){p, strlen(p)};
    return n;
}

/* Pieces of s between the matches of re (re.split, no groups). */
typedef struct split_st {
    const char *s;
    size_t last;
    toks *t;
} split_st;
static void split_cb(size_t so, size_t eo, void *arg)
{
    split_st *st = arg;
    tok_cb(st->s + st->last, so - st->last, st->t);
    st->last = eo;
}
static size_t re_split(const asn_regex *re, const char *s, tok **v)
{
    toks t = {0};
    split_st st = {s, 0, &t};
    re_each(re, s, split_cb, &st);
    tok_cb(s + st.last, strlen(s) - st.last, &t);
    *v = t.v;
    return t.n;
}

static int blank(tok t)
{
    size_t b, e;
    asn__strip_span(t.s, t.n, &b, &e);
    return b == e;
}

FIXED(re_para_sep, "\\s?\\*\\*\\*\\s?", 0);
FIXED(re_placeholder, "\\[.*?\\]", 0);
FIXED(re_bullet_star, "^\\s*\\*[^\\*].*$", ASN_RE_MULTILINE);
FIXED(re_bullet_dash, "^\\s*-.*$", ASN_RE_MULTILINE);
FIXED(re_ps_pps, "\\s*p\\.\\s?p\\.\\s?s.*$", ASN_RE_MULTILINE);
FIXED(re_ps_ps, "\\s*p\\.\\s?s\\..*$", ASN_RE_MULTILINE);
FIXED(re_highlight, "\\*[^\\n\\*]*\\*", 0);
FIXED(re_highlight2, "\\*\\*[^\\n\\*]*\\*\\*", 0);
FIXED(re_title, "<<[^\\n]+>>", 0);

typedef struct hl_st {
    const char *s;
    size_t n;
    int dbl;
} hl_st;
static void highlight_cb(size_t so, size_t eo, void *arg)
{
    hl_st *st = arg;
    const char *p = st->s + so;
    size_t n = eo - so;
    if (st->dbl) { /* removeprefix("**").removesuffix("**") */
        p += 2, n -= 2;
        if (n >= 2 && p[n - 1] == '*' && p[n - 2] == '*')
            n -= 2;
    } else { /* strip("*") */
        while (n && *p == '*')
            p++, n--;
        while (n && p[n - 1] == '*')
            n--;
    }
    if (!blank((tok){p, n}))
        st->n++;
}

typedef struct title_st {
    const char *s;
    int found;
} title_st;
static void title_cb(size_t so, size_t eo, void *arg)
{
    title_st *st = arg;
    const char *p = st->s + so;
    size_t n = eo - so;
    while (n && *p == '<') /* lstrip("<").rstrip(">") */
        p++, n--;
    while (n && p[n - 1] == '>')
        n--;
    if (!blank((tok){p, n}))
        st->found = 1;
}

/* Escapes nothing: Google builds these patterns by concatenation. */
static char *concat3(const char *a, const char *b, const char *c)
{
    asn_sbuf o = {0};
    asn_sbuf_adds(&o, a);
    asn_sbuf_adds(&o, b);
    asn_sbuf_adds(&o, c);
    return asn_sbuf_detach(&o, NULL);
}

static const char *const constrained_options[] = {"My answer is yes.", "My answer is no.", "My answer is maybe."};

static int ck_existence(const char *id, const json_t *k, const char *value, int *ok, asn_err *e)
{
    const json_t *list = NULL;
    (void)id;
    if (kw_strlist(k, "keywords", &list, e))
        return -1;
    *ok = 1;
    for (size_t i = 0; i < json_array_size(list) && *ok; i++)
        if (dyn_search(json_string_value(json_array_get(list, i)), ASN_RE_ICASE, value, ok, e))
            return -1;
    return 0;
}

static int ck_frequency(const char *id, const json_t *k, const char *value, int *ok, asn_err *e)
{
    long long n = 0;
    int at_least = 0;
    const char *str = NULL;
    (void)id;
    if (kw_str(k, "keyword", &str, e) || kw_int(k, "frequency", &n, e) || kw_relation(k, "relation", &at_least, e))
        return -1;
    char *key = asn_py_strip(str);
    size_t c = 0;
    int rc = *key ? dyn_count(key, ASN_RE_ICASE, value, &c, e) : asn_err_set(e, "argument \"keyword\" is empty");
    free(key);
    if (rc)
        return -1;
    *ok = compare((long long)c, at_least, n);
    return 0;
}

static int ck_forbidden_words(const char *id, const json_t *k, const char *value, int *ok, asn_err *e)
{
    const json_t *list = NULL;
    (void)id;
    if (kw_strlist(k, "forbidden_words", &list, e))
        return -1;
    *ok = 1;
    for (size_t i = 0; i < json_array_size(list) && *ok; i++) {
        char *pat = concat3("\\b", json_string_value(json_array_get(list, i)), "\\b");
        int found = 0, rc = dyn_search(pat, ASN_RE_ICASE, value, &found, e);
        free(pat);
        if (rc)
            return -1;
        *ok = !found;
    }
    return 0;
}

static int ck_letter_frequency(const char *id, const json_t *k, const char *value, int *ok, asn_err *e)
{
    long long n = 0;
    int at_least = 0;
    const char *str = NULL;
    (void)id;
    if (kw_str(k, "letter", &str, e) || kw_int(k, "let_frequency", &n, e) ||
        kw_relation(k, "let_relation", &at_least, e))
        return -1;
    if (asn__u8count(str) != 1)
        return asn_err_set(e, "argument \"letter\" must be one character, not \"%s\"", str);
    char *s1 = asn_py_strip(str), *letter = asn_py_lower(s1), *low = asn_py_lower(value);
    free(s1);
    size_t c = 0, L = strlen(letter);
    if (L)
        for (const char *p = low; (p = strstr(p, letter)); p += L)
            c++;
    free(letter);
    free(low);
    *ok = compare((long long)c, at_least, n);
    return 0;
}

static int ck_response_language(const char *id, const json_t *k, const char *value, int *ok, asn_err *e)
{
    const char *str = NULL;
    (void)id;
    if (kw_str(k, "language", &str, e))
        return -1;
    const char *lang = asn_ifeval_detect_language(value);
    *ok = !lang || !strcmp(lang, str);
    return 0;
}

static int ck_number_sentences(const char *id, const json_t *k, const char *value, int *ok, asn_err *e)
{
    long long n = 0;
    int at_least = 0;
    (void)id;
    if (kw_int(k, "num_sentences", &n, e) || kw_relation(k, "relation", &at_least, e))
        return -1;
    *ok = compare((long long)asn_ifeval_count_sentences(value), at_least, n);
    return 0;
}

static int ck_number_paragraphs(const char *id, const json_t *k, const char *value, int *ok, asn_err *e)
{
    long long n = 0;
    (void)id;
    if (kw_int(k, "num_paragraphs", &n, e))
        return -1;
    tok *v;
    size_t np = re_split(fixed(&re_para_sep), value, &v), count = np;
    *ok = -1;
    for (size_t i = 0; i < np; i++)
        if (blank(v[i])) {
            if (i == 0 || i == np - 1)
                count--;
            else
                *ok = 0;
        }
    if (*ok)
        *ok = (long long)count == n;
    free(v);
    return 0;
}

static int ck_number_words(const char *id, const json_t *k, const char *value, int *ok, asn_err *e)
{
    long long n = 0;
    int at_least = 0;
    (void)id;
    if (kw_int(k, "num_words", &n, e) || kw_relation(k, "relation", &at_least, e))
        return -1;
    *ok = compare((long long)asn_ifeval_count_words(value), at_least, n);
    return 0;
}

static int ck_nth_paragraph_first_word(const char *id, const json_t *k, const char *value, int *ok, asn_err *e)
{
    long long n = 0, nth = 0;
    const char *str = NULL;
    (void)id;
    if (kw_int(k, "num_paragraphs", &n, e) || kw_int(k, "nth_paragraph", &nth, e) ||
        kw_str(k, "first_word", &str, e))
        return -1;
    if (nth <= 0 || nth > n)
        return asn_err_set(e, "argument \"nth_paragraph\" must be between 1 and num_paragraphs");
    tok *v;
    size_t np = split_str(value, "\n\n", &v), count = np;
    for (size_t i = 0; i < np; i++)
        count -= blank(v[i]);
    *ok = 0;
    if ((size_t)nth <= count) {
        size_t b, en;
        asn__strip_span(v[nth - 1].s, v[nth - 1].n, &b, &en);
        if (b < en) {
            /* paragraph.split()[0], lstrip("'"), lstrip('"'), then up
             * to the first punctuation mark, lower-cased */
            const char *p = v[nth - 1].s + b, *end = v[nth - 1].s + en;
            size_t l, wl = 0;
            while (p + wl < end) {
                uint32_t c = asn__u8dec(p + wl, (size_t)(end - p - wl), &l);
                if (asn__py_space(c))
                    break;
                wl += l;
            }
            while (wl && *p == '\'')
                p++, wl--;
            while (wl && *p == '"')
                p++, wl--;
            size_t cut = strcspn(p, ".,?!'\"");
            char *w = asn__xstrndup(p, cut < wl ? cut : wl);
            char *lw = asn_py_lower(w), *fw = asn_py_lower(str);
            *ok = (long long)count == n && !strcmp(lw, fw);
            free(w);
            free(lw);
            free(fw);
        }
    }
    free(v);
    return 0;
}

static int ck_number_placeholders(const char *id, const json_t *k, const char *value, int *ok, asn_err *e)
{
    long long n = 0;
    (void)id;
    if (kw_int(k, "num_placeholders", &n, e))
        return -1;
    *ok = (long long)asn_regex_count(fixed(&re_placeholder), value) >= n;
    return 0;
}

static int ck_postscript(const char *id, const json_t *k, const char *value, int *ok, asn_err *e)
{
    const char *str = NULL;
    (void)id;
    if (kw_str(k, "postscript_marker", &str, e))
        return -1;
    char *marker = asn_py_strip(str), *low = asn_py_lower(value);
    size_t c = 0;
    int rc = 0;
    if (!strcmp(marker, "P.P.S")) {
        c = asn_regex_count(fixed(&re_ps_pps), low);
    } else if (!strcmp(marker, "P.S.")) {
        c = asn_regex_count(fixed(&re_ps_ps), low);
    } else {
        char *lm = asn_py_lower(marker), *pat = concat3("\\s*", lm, ".*$");
        rc = dyn_count(pat, ASN_RE_MULTILINE, low, &c, e);
        free(lm);
        free(pat);
    }
    free(marker);
    free(low);
    if (rc)
        return -1;
    *ok = c > 0;
    return 0;
}

static int ck_number_bullet_lists(const char *id, const json_t *k, const char *value, int *ok, asn_err *e)
{
    long long n = 0;
    (void)id;
    if (kw_int(k, "num_bullets", &n, e))
        return -1;
    size_t c = asn_regex_count(fixed(&re_bullet_star), value) + asn_regex_count(fixed(&re_bullet_dash), value);
    *ok = (long long)c == n;
    return 0;
}

static int ck_constrained_response(const char *id, const json_t *k, const char *value, int *ok, asn_err *e)
{
    (void)id, (void)k, (void)e;
    char *v = asn_py_strip(value);
    *ok = 0;
    for (size_t i = 0; i < 3; i++)
        *ok |= strstr(v, constrained_options[i]) != NULL;
    free(v);
    return 0;
}

static int ck_number_highlighted_sections(const char *id, const json_t *k, const char *value, int *ok, asn_err *e)
{
    long long n = 0;
    (void)id;
    if (kw_int(k, "num_highlights", &n, e))
        return -1;
    hl_st st = {value, 0, 0};
    re_each(fixed(&re_highlight), value, highlight_cb, &st);
    st.dbl = 1;
    re_each(fixed(&re_highlight2), value, highlight_cb, &st);
    *ok = (long long)st.n >= n;
    return 0;
}

static int ck_multiple_sections(const char *id, const json_t *k, const char *value, int *ok, asn_err *e)
{
    long long n = 0;
    const char *str = NULL;
    (void)id;
    if (kw_str(k, "section_spliter", &str, e) || kw_int(k, "num_sections", &n, e))
        return -1;
    char *sp = asn_py_strip(str), *pat = concat3("\\s?", sp, "\\s?\\d+\\s?");
    size_t c = 0;
    int rc = dyn_count(pat, 0, value, &c, e);
    free(sp);
    free(pat);
    if (rc)
        return -1;
    *ok = (long long)c >= n;
    return 0;
}

static int ck_json_format(const char *id, const json_t *k, const char *value, int *ok, asn_err *e)
{
    (void)id, (void)k, (void)e;
    char *v = asn_py_strip(value);
    const char *p = v;
    static const char *const pre[] = {"```json", "```Json", "```JSON", "```"};
    for (size_t i = 0; i < 4; i++) /* chained removeprefix calls */
        if (asn__starts_with(p, pre[i]))
            p += strlen(pre[i]);
    char *t = asn_xstrdup(p);
    if (asn__ends_with(t, "```"))
        t[strlen(t) - 3] = 0;
    char *u = asn_py_strip(t);
    *ok = py_json_loads_ok(u);
    free(v);
    free(t);
    free(u);
    return 0;
}

static int ck_title(const char *id, const json_t *k, const char *value, int *ok, asn_err *e)
{
    (void)id, (void)k, (void)e;
    title_st st = {value, 0};
    re_each(fixed(&re_title), value, title_cb, &st);
    *ok = st.found;
    return 0;
}

static int ck_two_responses(const char *id, const json_t *k, const char *value, int *ok, asn_err *e)
{
    (void)id, (void)k, (void)e;
    tok *v;
    size_t np = split_str(value, "******", &v), valid = 0;
    tok r[2];
    *ok = -1;
    for (size_t i = 0; i < np && *ok; i++) {
        if (blank(v[i])) {
            if (i != 0 && i != np - 1)
                *ok = 0;
        } else {
            if (valid < 2)
                r[valid] = v[i];
            valid++;
        }
    }
    if (*ok) {
        *ok = 0;
        if (valid == 2) {
            size_t b0, e0, b1, e1;
            asn__strip_span(r[0].s, r[0].n, &b0, &e0);
            asn__strip_span(r[1].s, r[1].n, &b1, &e1);
            *ok = e0 - b0 != e1 - b1 || memcmp(r[0].s + b0, r[1].s + b1, e0 - b0);
        }
    }
    free(v);
    return 0;
}

static int ck_repeat_prompt(const char *id, const json_t *k, const char *value, int *ok, asn_err *e)
{
    const char *str = NULL;
    (void)id;
    if (kw_str(k, "prompt_to_repeat", &str, e))
        return -1;
    if (!*str)
        return asn_err_set(e, "argument \"prompt_to_repeat\" is empty");
    char *a = asn_py_strip(value), *al = asn_py_lower(a), *b = asn_py_strip(str), *bl = asn_py_lower(b);
    *ok = asn__starts_with(al, bl);
    free(a), free(al), free(b), free(bl);
    return 0;
}

static int ck_end_checker(const char *id, const json_t *k, const char *value, int *ok, asn_err *e)
{
    const char *str = NULL;
    (void)id;
    if (kw_str(k, "end_phrase", &str, e))
        return -1;
    char *a = asn_py_strip(value);
    char *p = a;
    size_t len = strlen(p);
    while (len && p[len - 1] == '"') /* .strip("\"") */
        p[--len] = 0;
    while (*p == '"')
        p++;
    char *al = asn_py_lower(p), *b = asn_py_strip(str), *bl = asn_py_lower(b);
    *ok = asn__ends_with(al, bl);
    free(a), free(al), free(b), free(bl);
    return 0;
}

static int ck_capital_word_frequency(const char *id, const json_t *k, const char *value, int *ok, asn_err *e)
{
    int at_least = 0;
    (void)id;
    const json_t *f = kw(k, "capital_frequency");
    if (!f)
        return asn_err_set(e, "argument \"capital_frequency\" is missing");
    double d;
    if (json_is_boolean(f) || asn_json_number(f, &d))
        return asn_err_set(e, "argument \"capital_frequency\" must be a number, not %s", asn_json_type_name(f));
    if (kw_relation(k, "capital_relation", &at_least, e))
        return -1;
    double c = (double)asn_ifeval_count_capital_words(value);
    *ok = at_least ? c >= d : c < d;
    return 0;
}

static int ck_english_case(const char *id, const json_t *k, const char *value, int *ok, asn_err *e)
{
    (void)k, (void)e;
    int upper = !strcmp(id, "change_case:english_capital");
    if (!(upper ? asn_py_isupper(value) : asn_py_islower(value))) {
        *ok = 0;
        return 0;
    }
    const char *lang = asn_ifeval_detect_language(value);
    *ok = !lang || !strcmp(lang, "en");
    return 0;
}

static int ck_no_comma(const char *id, const json_t *k, const char *value, int *ok, asn_err *e)
{
    (void)id, (void)k, (void)e;
    *ok = strchr(value, ',') == NULL;
    return 0;
}

static int ck_quotation(const char *id, const json_t *k, const char *value, int *ok, asn_err *e)
{
    (void)id, (void)k, (void)e;
    char *v = asn_py_strip(value);
    size_t len = strlen(v);
    *ok = asn__u8count(v) > 1 && v[0] == '"' && v[len - 1] == '"';
    free(v);
    return 0;
}

/* The instructions of Google's IFEval (instructions_registry.py): each id
 * with the arguments its check reads and the check (*ok: whether the
 * response follows it; asn_ifeval_check adds the strict reading's rule). A
 * new instruction is one function above and one row here. */
static const struct {
    const char *id;     /* instructions_registry.py's id */
    const char *kwargs; /* the arguments the check reads, in that order */
    int (*check)(const char *id, const json_t *kwargs, const char *value, int *ok, asn_err *e);
} instructions[] = {
    {"keywords:existence", "keywords", ck_existence},
    {"keywords:frequency", "keyword frequency relation", ck_frequency},
    {"keywords:forbidden_words", "forbidden_words", ck_forbidden_words},
    {"keywords:letter_frequency", "letter let_frequency let_relation", ck_letter_frequency},
    {"language:response_language", "language", ck_response_language},
    {"length_constraints:number_sentences", "num_sentences relation", ck_number_sentences},
    {"length_constraints:number_paragraphs", "num_paragraphs", ck_number_paragraphs},
    {"length_constraints:number_words", "num_words relation", ck_number_words},
    {"length_constraints:nth_paragraph_first_word", "num_paragraphs nth_paragraph first_word",
     ck_nth_paragraph_first_word},
    {"detectable_content:number_placeholders", "num_placeholders", ck_number_placeholders},
    {"detectable_content:postscript", "postscript_marker", ck_postscript},
    {"detectable_format:number_bullet_lists", "num_bullets", ck_number_bullet_lists},
    {"detectable_format:constrained_response", "", ck_constrained_response},
    {"detectable_format:number_highlighted_sections", "num_highlights", ck_number_highlighted_sections},
    {"detectable_format:multiple_sections", "section_spliter num_sections", ck_multiple_sections},
    {"detectable_format:json_format", "", ck_json_format},
    {"detectable_format:title", "", ck_title},
    {"combination:two_responses", "", ck_two_responses},
    {"combination:repeat_prompt", "prompt_to_repeat", ck_repeat_prompt},
    {"startend:end_checker", "end_phrase", ck_end_checker},
    {"change_case:capital_word_frequency", "capital_frequency capital_relation", ck_capital_word_frequency},
    {"change_case:english_capital", "", ck_english_case},
    {"change_case:english_lowercase", "", ck_english_case},
    {"punctuation:no_comma", "", ck_no_comma},
    {"startend:quotation", "", ck_quotation},
};

static int check(const char *id, const json_t *k, const char *value, int *ok, asn_err *e)
{
    for (size_t i = 0; i < sizeof instructions / sizeof *instructions; i++)
        if (!strcmp(id, instructions[i].id))
            return instructions[i].check(id, k, value, ok, e);
    return asn_err_set(e, "unknown instruction \"%s\"", id);
}

int asn_ifeval_check(const char *instruction_id, const json_t *kwargs, const char *response, int *followed,
                     asn_err *e)
{
    int ok = 0;
    if (check(instruction_id, kwargs, response, &ok, e))
        return -1;
    size_t b, en;
    asn__strip_span(response, strlen(response), &b, &en);
    *followed = b < en && ok; /* strict: an empty response follows nothing */
    return 0;
}

/* -------------------------------------- the reference's func_name checks */

/* Reads argument `key` of a reference constraint: 1 found, 0 absent (the
 * Python call then lacks a required argument: TypeError, score 0). */
static int rarg(const json_t *c, const char *key, const json_t **v)
{
    *v = kw(c, key);
    return *v != NULL;
}

static int rnum(const json_t *c, const char *key, double *out)
{
    const json_t *v;
    return rarg(c, key, &v) && !json_is_boolean(v) && !asn_json_number(v, out);
}

static int rstr(const json_t *c, const char *key, const char **out)
{
    const json_t *v;
    if (!rarg(c, key, &v) || !json_is_string(v))
        return 0;
    *out = json_string_value(v);
    return 1;
}

/* Python's round(): half to even. */
static double py_round(double x)
{
    double r = round(x);
    if (fabs(x - trunc(x)) == 0.5)
        r = 2.0 * round(x / 2.0);
    return r;
}

static int quantified(double actual, double n, const char *q, double around_tol)
{
    if (!strcmp(q, "at least"))
        return actual >= n;
    if (!strcmp(q, "at most"))
        return actual <= n;
    if (!strcmp(q, "around"))
        return fabs(actual - n) <= around_tol;
    return 0;
}

FIXED(re_ref_word, "\\b\\w+\\b", 0);
FIXED(re_ref_sentence, "(?<!\\w\\.\\w.)(?<![A-Z][a-z]\\.)(?<=\\.|\\?)\\s", 0);
FIXED(re_ref_placeholder, "\\[(.*?)\\]", 0);
FIXED(re_ref_title, "<<(.*?)>>", 0);
FIXED(re_ref_highlight, "\\*(.*?)\\*", 0);
FIXED(re_ref_capital, "\\b[A-Z]+\\b", 0);

typedef struct kwc_st {
    const char *s, *word;
    size_t n;
} kwc_st;
static void kwc_cb(size_t so, size_t eo, void *arg)
{
    kwc_st *st = arg;
    st->n += eo - so == strlen(st->word) && !memcmp(st->s + so, st->word, eo - so);
}

static void bullet_line(const char *s, size_t n, size_t *count)
{
    size_t b, e;
    asn__strip_span(s, n, &b, &e);
    *count += b < e && (s[b] == '*' || s[b] == '-');
}

/* 1 when every string of list is (want = 1) or none is (want = 0) a
 * substring of text, both lower-cased; 0 for a list that is not a list of
 * strings (the Python raises, the score is 0). */
static int all_contained(const json_t *list, const char *text, int want)
{
    if (!json_is_array(list))
        return 0;
    char *low = asn_py_lower(text);
    int ok = 1;
    for (size_t i = 0; i < json_array_size(list) && ok; i++) {
        const json_t *k = json_array_get(list, i);
        if (!json_is_string(k)) {
            ok = 0;
            break;
        }
        char *kl = asn_py_lower(json_string_value(k));
        ok = (strstr(low, kl) != NULL) == want;
        free(kl);
    }
    free(low);
    return ok;
}

/* Each reference function's parameters after `text`: a non-null argument
 * of another name is a TypeError in the Python call (score 0). */
static const struct {
    const char *name, *params;
} ref_params[] = {
    {"verify_keywords", "keyword_list"}, {"verify_keyword_frequency", "word N"},
    {"validate_forbidden_words", "forbidden_words"}, {"verify_letter_frequency", "letter N"},
    {"validate_response_language", "language"}, {"verify_paragraph_count", "N"},
    {"validate_word_constraint", "N quantifier"}, {"verify_sentence_constraint", "N quantifier"},
    {"validate_paragraphs", "N first_word i"}, {"verify_postscript", "postscript_marker"},
    {"validate_placeholders", "N"}, {"verify_bullet_points", "N"}, {"validate_title", ""},
    {"validate_choice", "options"}, {"validate_highlighted_sections", "N"},
    {"validate_sections", "N section_splitter"}, {"validate_json_format", ""},
    {"validate_repeat_prompt", "original_prompt"}, {"validate_two_responses", ""},
    {"validate_uppercase", ""}, {"validate_lowercase", ""},
    {"validate_frequency_capital_words", "N quantifier"}, {"validate_end", "end_phrase"},
    {"validate_quotation", ""}, {"validate_no_commas", ""},
};

/* 1 when every non-null argument of c is a parameter of f. */
static int ref_args_fit(const char *params, const json_t *c)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)c, key, v) {
        if (json_is_null(v) || !strcmp(key, "func_name"))
            continue;
        size_t n = strlen(key);
        const char *p = params;
        int found = 0;
        while (*p && !found) {
            size_t m = strcspn(p, " ");
            found = m == n && !strncmp(p, key, n);
            p += m + (p[m] == ' ');
        }
        if (!found)
            return 0;
    }
    return 1;
}

/* The reference's functions; -2 for an unknown name, else 0 with *ok
 * (argument errors give 0, as the reference's except clause does). */
static int ref_func(const char *f, const json_t *c, const char *text, int *ok)
{
    const char *s = NULL;
    const json_t *v;
    double n = 0;
    *ok = 0;
    size_t fi = 0, nf = sizeof ref_params / sizeof *ref_params;
    while (fi < nf && strcmp(ref_params[fi].name, f))
        fi++;
    if (fi == nf)
        return -2;
    if (!ref_args_fit(ref_params[fi].params, c))
        return 0;
    if (!strcmp(f, "verify_keywords")) {
        *ok = rarg(c, "keyword_list", &v) && all_contained(v, text, 1);
    } else if (!strcmp(f, "verify_keyword_frequency")) {
        if (!rstr(c, "word", &s) || !rnum(c, "N", &n))
            return 0;
        char *low = asn_py_lower(text), *w = asn_py_lower(s);
        kwc_st st = {low, w, 0};
        re_each(fixed(&re_ref_word), low, kwc_cb, &st);
        *ok = (double)st.n == n;
        free(low);
        free(w);
    } else if (!strcmp(f, "validate_forbidden_words")) {
        *ok = rarg(c, "forbidden_words", &v) && all_contained(v, text, 0);
    } else if (!strcmp(f, "verify_letter_frequency")) {
        if (!rstr(c, "letter", &s) || !rnum(c, "N", &n) || asn__u8count(s) != 1)
            return 0;
        size_t k = 0, L = strlen(s);
        for (const char *p = text; (p = strstr(p, s)); p += L)
            k++;
        *ok = (double)k == n;
    } else if (!strcmp(f, "validate_response_language")) {
        if (!rstr(c, "language", &s))
            return 0;
        const char *lang = asn_ifeval_detect_language(text);
        *ok = lang && !strcmp(lang, s); /* langdetect's exception: score 0 */
    } else if (!strcmp(f, "verify_paragraph_count")) {
        if (!rnum(c, "N", &n))
            return 0;
        /* "\n".join(line.strip() for line in text.splitlines()).strip() */
        asn_sbuf cl = {0};
        const char *p = text;
        int first = 1;
        while (*p) {
            size_t len = strcspn(p, "\n\r\v\f\x1c\x1d\x1e");
            if (!first)
                asn_sbuf_adds(&cl, "\n");
            first = 0;
            size_t b, e;
            asn__strip_span(p, len, &b, &e);
            asn_sbuf_add(&cl, p + b, e - b);
            p += len;
            if (*p == '\r' && p[1] == '\n')
                p++;
            if (*p)
                p++;
        }
        char *cleaned = asn_py_strip(asn_sbuf_str(&cl));
        asn_sbuf_release(&cl);
        tok *pieces;
        size_t np = split_str(cleaned, "* * *", &pieces), nonblank = 0;
        for (size_t i = 0; i < np; i++)
            nonblank += !blank(pieces[i]);
        *ok = nonblank == np && (double)np == n;
        free(pieces);
        free(cleaned);
    } else if (!strcmp(f, "validate_word_constraint")) {
        if (!rnum(c, "N", &n) || !rstr(c, "quantifier", &s))
            return 0;
        toks t = {0};
        asn__py_split_ws(text, tok_cb, &t);
        *ok = quantified((double)t.n, n, s, fmax(py_round(n * 0.1), 1));
        free(t.v);
    } else if (!strcmp(f, "verify_sentence_constraint")) {
        if (!rnum(c, "N", &n) || !rstr(c, "quantifier", &s))
            return 0;
        size_t k = asn_regex_count(fixed(&re_ref_sentence), text) + 1;
        *ok = quantified((double)k, n, s, 1);
    } else if (!strcmp(f, "validate_paragraphs")) {
        double i;
        if (!rnum(c, "N", &n) || !rstr(c, "first_word", &s) || !rnum(c, "i", &i))
            return 0;
        tok *v_;
        size_t np = split_str(text, "\n\n", &v_);
        long long idx = (long long)i - 1; /* Python: negative indexes count from the end */
        if (idx < 0)
            idx += (long long)np;
        if ((double)np == n && idx >= 0 && idx < (long long)np) {
            size_t b, e;
            asn__strip_span(v_[idx].s, v_[idx].n, &b, &e);
            *ok = e - b >= strlen(s) && !memcmp(v_[idx].s + b, s, strlen(s));
        }
        free(v_);
    } else if (!strcmp(f, "verify_postscript")) {
        if (!rstr(c, "postscript_marker", &s))
            return 0;
        const char *at = strstr(text, s);
        if (at) {
            char *rest = asn_py_strip(at);
            *ok = asn__u8count(rest) > asn__u8count(s);
            free(rest);
        }
    } else if (!strcmp(f, "validate_placeholders")) {
        if (!rnum(c, "N", &n))
            return 0;
        *ok = (double)asn_regex_count(fixed(&re_ref_placeholder), text) >= n;
    } else if (!strcmp(f, "verify_bullet_points")) {
        if (!rnum(c, "N", &n))
            return 0;
        size_t k = 0;
        for (const char *p = text;;) {
            size_t len = strcspn(p, "\n");
            bullet_line(p, len, &k);
            if (!p[len])
                break;
            p += len + 1;
        }
        *ok = (double)k == n;
    } else if (!strcmp(f, "validate_title")) {
        *ok = asn_regex_count(fixed(&re_ref_title), text) > 0;
    } else if (!strcmp(f, "validate_choice")) {
        if (!rarg(c, "options", &v))
            return 0;
        /* `text in option` for each option (the reverse of what the name
         * says); a string option list iterates its characters */
        if (json_is_string(v)) {
            const char *o = json_string_value(v);
            size_t l;
            for (size_t i = 0; o[i] && !*ok; i += l) {
                asn__u8dec(o + i, strlen(o + i), &l);
                *ok = !*text || (strlen(text) == l && !memcmp(o + i, text, l));
            }
        } else if (json_is_array(v)) {
            for (size_t i = 0; i < json_array_size(v) && !*ok; i++) {
                const json_t *o = json_array_get(v, i);
                if (!json_is_string(o))
                    return 0; /* TypeError */
                *ok = strstr(json_string_value(o), text) != NULL;
            }
        }
    } else if (!strcmp(f, "validate_highlighted_sections")) {
        if (!rnum(c, "N", &n))
            return 0;
        *ok = (double)asn_regex_count(fixed(&re_ref_highlight), text) >= n;
    } else if (!strcmp(f, "validate_sections")) {
        if (!rnum(c, "N", &n) || !rstr(c, "section_splitter", &s) || !*s)
            return 0;
        tok *v_;
        size_t np = split_str(text, s, &v_);
        if (v_[0].n == 0)
            np--;
        *ok = (double)np == n;
        free(v_);
    } else if (!strcmp(f, "validate_json_format")) {
        *ok = py_json_loads_ok(text);
    } else if (!strcmp(f, "validate_repeat_prompt")) {
        if (!rstr(c, "original_prompt", &s))
            return 0;
        *ok = asn__starts_with(text, s);
    } else if (!strcmp(f, "validate_two_responses")) {
        tok *v_;
        size_t np = split_str(text, "******", &v_);
        if (np == 2) {
            size_t b0, e0, b1, e1;
            asn__strip_span(v_[0].s, v_[0].n, &b0, &e0);
            asn__strip_span(v_[1].s, v_[1].n, &b1, &e1);
            *ok = e0 - b0 != e1 - b1 || memcmp(v_[0].s + b0, v_[1].s + b1, e0 - b0);
        }
        free(v_);
    } else if (!strcmp(f, "validate_uppercase") || !strcmp(f, "validate_lowercase")) {
        char *m = f[9] == 'u' ? asn_py_upper(text) : asn_py_lower(text);
        *ok = !strcmp(m, text);
        free(m);
    } else if (!strcmp(f, "validate_frequency_capital_words")) {
        if (!rnum(c, "N", &n) || !rstr(c, "quantifier", &s))
            return 0;
        double k = (double)asn_regex_count(fixed(&re_ref_capital), text);
        *ok = !strcmp(s, "around") ? k == n : quantified(k, n, s, 0);
    } else if (!strcmp(f, "validate_end")) {
        if (!rstr(c, "end_phrase", &s))
            return 0;
        *ok = asn__ends_with(text, s);
    } else if (!strcmp(f, "validate_quotation")) {
        *ok = text[0] == '"' && asn__ends_with(text, "\"");
    } else if (!strcmp(f, "validate_no_commas")) {
        *ok = strchr(text, ',') == NULL;
    } else {
        return -2;
    }
    return 0;
}

/* remove_thinking_section: no <|assistant|>, after the last </think>,
 * without <answer> tags, stripped. */
static char *remove_thinking(const char *prediction)
{
    asn_sbuf a = {0};
    const char *p = prediction, *q;
    while ((q = strstr(p, "<|assistant|>"))) {
        asn_sbuf_add(&a, p, (size_t)(q - p));
        p = q + 13;
    }
    asn_sbuf_adds(&a, p);
    char *s = asn_py_strip(asn_sbuf_str(&a));
    asn_sbuf_release(&a);
    const char *last = s;
    while ((q = strstr(last, "</think>")))
        last = q + 8;
    asn_sbuf b = {0};
    p = last;
    for (;;) {
        const char *x = strstr(p, "<answer>"), *y = strstr(p, "</answer>");
        q = x && (!y || x < y) ? x : y;
        if (!q)
            break;
        asn_sbuf_add(&b, p, (size_t)(q - p));
        p = q + (q == x ? 8 : 9);
    }
    asn_sbuf_adds(&b, p);
    char *r = asn_py_strip(asn_sbuf_str(&b));
    asn_sbuf_release(&b);
    free(s);
    return r;
}

int asn_ifeval_ref_check(const json_t *constraint, const char *response, int *followed, asn_err *e)
{
    json_t *parsed = NULL;
    if (json_is_string(constraint)) {
        json_error_t je;
        parsed = json_loads(json_string_value(constraint), JSON_DECODE_ANY, &je);
        if (!parsed)
            return asn_err_set(e, "the constraint is not JSON: %s", je.text);
        constraint = parsed;
    }
    int rc = 0;
    const json_t *fn = json_is_object(constraint) ? json_object_get(constraint, "func_name") : NULL;
    if (!json_is_object(constraint)) {
        rc = asn_err_set(e, "the constraint must be an object, not %s", asn_json_type_name(constraint));
    } else if (!json_is_string(fn)) {
        rc = asn_err_set(e, "the constraint has no \"func_name\"");
    } else {
        /* with no other key the raw prediction is checked, else the answer
         * part (and only the non-null arguments are passed) */
        int bare = json_object_size(constraint) == 1;
        char *answer = bare ? asn_xstrdup(response) : remove_thinking(response);
        int ok = 0;
        if (ref_func(json_string_value(fn), constraint, answer, &ok) == -2)
            rc = asn_err_set(e, "unknown func_name \"%s\"", json_string_value(fn));
        else
            *followed = ok;
        free(answer);
    }
    json_decref(parsed);
    return rc;
}
