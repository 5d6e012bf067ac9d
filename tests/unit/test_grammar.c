/* test_grammar.c — the constraint engine (asn/grammar.h):
 *  1. GBNF: texts accepted and refused by hand-written grammars (UTF-8
 *     classes, repetitions, groups), llama.cpp's own grammar files parsed
 *     as they are, and syntax errors with their line:column;
 *  2. JSON Schema: integer and number bounds checked against the
 *     arithmetic for every value in a range, members in any order, refused
 *     keywords with their JSON pointer;
 *  3. regex and choice: accepted and refused texts, errors with offsets;
 *  4. the fast mask equals the mask found by trying every token, at every
 *     state of random walks, for each kind of constraint, on an SPM vocab
 *     (byte-fallback pieces) and on Llama-3's 128k BPE vocab.
 * Texts drawn by `constrain --sample` are validated by Python's jsonschema
 * and re in tests/cli/constrain.sh. */
#include "t.h"

#include "asn/gguf.h"
#include "asn/grammar.h"
#include "asn/vocab.h"

#include <stdlib.h>
#include <string.h>

static char path_buf[4096];
static const char *data_path(const char *rel)
{
    const char *root = getenv("ASN_ROOT");
    snprintf(path_buf, sizeof path_buf, "%s/tests/data/%s", root ? root : ".", rel);
    return path_buf;
}

/* 1 when the grammar accepts the whole text and is complete after it. */
static int accepts(const asn_grammar *g, const char *text, size_t n)
{
    asn_gstate s;
    asn_gstate_start(g, &s);
    int ok = !asn_gstate_advance(g, &s, text, n) && asn_gstate_complete(&s);
    asn_gstate_clear(&s);
    return ok;
}

/* 1 when the text is a prefix of some sentence. */
static int prefix_ok(const asn_grammar *g, const char *text)
{
    asn_gstate s;
    asn_gstate_start(g, &s);
    int ok = !asn_gstate_advance(g, &s, text, strlen(text));
    asn_gstate_clear(&s);
    return ok;
}

static asn_grammar *gbnf(const char *text)
{
    asn_err e;
    asn_grammar *g = asn_gbnf_parse(text, strlen(text), &e);
    if (!g)
        printf("# %s: %s\n", text, e.msg);
    return g;
}

typedef struct acase {
    const char *text;
    int ok;
} acase;

static void check_cases(const char *name, const char *grammar, const acase *cs)
{
    asn_grammar *g = gbnf(grammar);
    T_OK(name, g != NULL, "grammar did not compile");
    if (!g)
        return;
    for (const acase *c = cs; c->text; c++) {
        char label[300];
        snprintf(label, sizeof label, "%s: \"%s\" %s", name, c->text, c->ok ? "accepted" : "refused");
        for (char *q = label; *q; q++) /* one line per check */
            if ((unsigned char)*q < 0x20)
                *q = '?';
        T_EQ_INT(label, accepts(g, c->text, strlen(c->text)), c->ok);
    }
    asn_grammar_free(g);
}

static void test_gbnf(void)
{
    static const acase plus[] = {{"a", 1}, {"aab", 1}, {"b", 0}, {"", 0}, {"abb", 0}, {NULL, 0}};
    check_cases("a+ b?", "root ::= \"a\"+ \"b\"?\n", plus);
    static const acase rep[] = {{"é中", 1}, {"ab", 1}, {"abc", 1}, {"abcd", 0}, {"a", 0}, {"a\"", 0},
                                {"\xF0\x9F\x98\x80x", 1}, {"a\xC3", 0}, {NULL, 0}};
    check_cases("negated class, {2,3}, UTF-8", "root ::= [^\"\\\\]{2,3}", rep);
    static const acase grp[] = {{"xyzx!", 1}, {"!", 1}, {"xy!", 0}, {"yz", 0}, {NULL, 0}};
    check_cases("group*", "# comment\nroot ::= ( \"x\" # inside\n | \"yz\" )* \"!\"\n", grp);
    static const acase greek[] = {{"αβω", 1}, {"a", 0}, {"αa", 0}, {"ϊ", 0}, {NULL, 0}};
    check_cases("code-point range", "root ::= [α-ω]+", greek);
    static const acase any[] = {{"\n", 1}, {"\xE2\x80\xA8", 1}, {"ab", 0}, {"\xED\xA0\x80", 0}, {NULL, 0}};
    check_cases("any character, no surrogates", "root ::= .", any);
    static const acase esc[] = {{"\t\"\\[]\n\x01\xE2\x82\xAC", 1}, {NULL, 0}};
    check_cases("escapes", "root ::= \"\\t\\\"\\\\\\[\\]\\n\\x01\\u20AC\"", esc);
    static const acase cnt[] = {{"ab", 0}, {"abab", 1}, {"ababab", 1}, {"abababab", 0}, {NULL, 0}};
    check_cases("literal{2,3}", "root ::= \"ab\"{2,3}", cnt);
    static const acase mixed[] = {{"a1", 1}, {"Z9", 1}, {"-0", 1}, {"a", 0}, {NULL, 0}};
    check_cases("class with several ranges", "root ::= [a-zA-Z\\x2D] [0-9]", mixed);

    /* a partial UTF-8 character is a valid prefix, not a sentence */
    asn_grammar *g = gbnf("root ::= [α-ω]+");
    T_OK("prefix: lead byte of α", prefix_ok(g, "\xCE"), "refused");
    T_OK("prefix: lead byte then ASCII refused", !prefix_ok(g, "\xCE" "a"), "accepted");
    asn_gstate s;
    asn_gstate_start(g, &s);
    asn_gstate_advance(g, &s, "\xCE", 1);
    T_OK("prefix: not complete inside a character", !asn_gstate_complete(&s), "complete");
    asn_gstate_clear(&s);
    asn_grammar_free(g);

    /* llama.cpp's grammars, unchanged, and texts they accept */
    static const struct {
        const char *file, *good, *bad;
    } files[] = {
        {"grammar/json.gbnf", "{\"a\": [1, 2.5e3, true, null], \"b\": {\"c\": \"d\\u00e9\"}}", "{\"a\" 1}"},
        {"grammar/list.gbnf", "- milk\n- eggs\n", "milk\n"},
        {"grammar/arithmetic.gbnf", "(x +12) *y = 3\n", "x = \n"},
        {"grammar/chess.gbnf", "1. e4 e5\n2. Nf3 Nc6\n", "1. e9 e5\n"},
        {"grammar/c.gbnf", "int main(){return 0;}", "int main("},
    };
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char *text;
        size_t n;
        asn_err e;
        char label[200];
        if (asn_read_file(data_path(files[i].file), &text, &n, &e)) {
            T_OK(files[i].file, 0, "%s", e.msg);
            continue;
        }
        asn_grammar *fg = asn_gbnf_parse(text, n, &e);
        snprintf(label, sizeof label, "%s parses", files[i].file);
        T_OK(label, fg != NULL, "%s", fg ? "" : e.msg);
        if (fg) {
            snprintf(label, sizeof label, "%s accepts a valid text", files[i].file);
            T_OK(label, accepts(fg, files[i].good, strlen(files[i].good)), "refused \"%s\"", files[i].good);
            snprintf(label, sizeof label, "%s refuses an invalid text", files[i].file);
            T_OK(label, !accepts(fg, files[i].bad, strlen(files[i].bad)), "accepted \"%s\"", files[i].bad);
        }
        asn_grammar_free(fg);
        free(text);
    }

    static const struct {
        const char *text, *msg;
    } errs[] = {
        {"root ::= \"a\"\nfoo ::= bar\n", "2:9: undefined rule \"bar\""},
        {"root ::= \"a", "1:10: unterminated string literal"},
        {"root := \"a\"", "1:6: expecting ::="},
        {"root ::= \"a\"{3,2}", "1:13: repetition maximum below its minimum"},
        {"foo ::= \"a\"", "1:1: no rule named \"root\""},
        {"root ::= \"a\"\nroot ::= \"b\"", "2:1: rule defined twice"},
        {"root ::= (\"a\"", "1:14: expecting ')'"},
        {"root ::= [b-a]", "1:13: range end is below its start"},
        {"root ::= \"\\q\"", "1:11: unknown escape"},
        {"root ::= * \"a\"", "1:10: expecting an item before */+/?/{"},
        {"root ::= \"a\" )", "1:14: expecting newline or end"},
        {"root ::= x\nx ::= x \"a\" | \"b\"", "left recursion in rule \"x\" (a rule may not start with itself)"},
        {"root ::= <[12]>", "1:10: token references (<...>, !<...>) are not supported"},
    };
    for (size_t i = 0; i < sizeof errs / sizeof *errs; i++) {
        asn_err e = {{0}};
        asn_grammar *bad = asn_gbnf_parse(errs[i].text, strlen(errs[i].text), &e);
        char label[200];
        snprintf(label, sizeof label, "GBNF error: %s", errs[i].msg);
        T_OK(label, !bad && !strcmp(e.msg, errs[i].msg), "got \"%s\"", bad ? "(compiled)" : e.msg);
        asn_grammar_free(bad);
    }
}

/* ---------------------------------------------------------- JSON Schema */

static asn_grammar *schema(const char *json, asn_ws_rule ws, asn_err *e)
{
    json_error_t je;
    json_t *s = json_loads(json, 0, &je);
    if (!s) {
        printf("# bad test schema: %s\n", je.text);
        return NULL;
    }
    char *text = asn_schema_to_gbnf(s, ws, e);
    json_decref(s);
    if (!text)
        return NULL;
    asn_grammar *g = asn_gbnf_parse(text, strlen(text), e);
    if (!g)
        printf("# generated GBNF did not compile: %s\n%s\n", e->msg, text);
    free(text);
    return g;
}

static void test_schema(void)
{
    asn_err e;
    /* integer bounds: every value of [-1200, 1200] against the arithmetic */
    static const struct {
        const char *s;
        long lo, hi; /* LONG_MIN/MAX: none */
    } ints[] = {
        {"{\"type\":\"integer\",\"minimum\":-17,\"maximum\":123}", -17, 123},
        {"{\"type\":\"integer\",\"minimum\":7}", 7, 100000},
        {"{\"type\":\"integer\",\"maximum\":-30}", -100000, -30},
        {"{\"type\":\"integer\",\"exclusiveMinimum\":99,\"exclusiveMaximum\":1001}", 100, 1000},
        {"{\"type\":\"integer\",\"minimum\":0,\"maximum\":0}", 0, 0},
        {"{\"type\":\"integer\",\"minimum\":-1000,\"maximum\":-1}", -1000, -1},
        {"{\"type\":\"integer\",\"minimum\":19,\"maximum\":1099}", 19, 1099},
    };
    for (size_t i = 0; i < sizeof ints / sizeof *ints; i++) {
        asn_grammar *g = schema(ints[i].s, ASN_WS_COMPACT, &e);
        T_OK(ints[i].s, g != NULL, "%s", e.msg);
        if (!g)
            continue;
        int wrong = 0;
        long first = 0;
        for (long x = -1200; x <= 1200; x++) {
            char t[32];
            snprintf(t, sizeof t, "%ld", x);
            int exp = x >= ints[i].lo && x <= ints[i].hi;
            if (accepts(g, t, strlen(t)) != exp && !wrong++)
                first = x;
        }
        char label[300];
        snprintf(label, sizeof label, "%s: exactly the integers in range", ints[i].s);
        T_OK(label, !wrong, "%d wrong, first %ld", wrong, first);
        T_OK("no leading zeros", !accepts(g, "007", 3) && !accepts(g, "-0", 2), "accepted");
        asn_grammar_free(g);
    }
    /* number bounds: decimals k/4 in [-60, 60] */
    static const struct {
        const char *s;
        double lo, hi;
    } nums[] = {
        {"{\"type\":\"number\",\"minimum\":-3,\"maximum\":12}", -3, 12},
        {"{\"type\":\"number\",\"minimum\":2}", 2, 1e9},
        {"{\"type\":\"number\",\"maximum\":-5}", -1e9, -5},
        {"{\"type\":\"number\",\"minimum\":0,\"maximum\":1}", 0, 1},
    };
    for (size_t i = 0; i < sizeof nums / sizeof *nums; i++) {
        asn_grammar *g = schema(nums[i].s, ASN_WS_COMPACT, &e);
        T_OK(nums[i].s, g != NULL, "%s", e.msg);
        if (!g)
            continue;
        int wrong = 0;
        char first[40] = "";
        for (int k = -240; k <= 240; k++) {
            double x = k / 4.0;
            char t[40];
            snprintf(t, sizeof t, "%.2f", x);
            if (x < 0 && x > -1)
                snprintf(t, sizeof t, "-0.%02d", (int)(-x * 100 + 0.5));
            int exp = x >= nums[i].lo && x <= nums[i].hi;
            if (accepts(g, t, strlen(t)) != exp && !wrong++)
                snprintf(first, sizeof first, "%s", t);
            if (k % 4 == 0) { /* integers written bare too */
                snprintf(t, sizeof t, "%d", k / 4);
                if (accepts(g, t, strlen(t)) != exp && !wrong++)
                    snprintf(first, sizeof first, "%s", t);
            }
        }
        char label[300];
        snprintf(label, sizeof label, "%s: exactly the numbers in range", nums[i].s);
        T_OK(label, !wrong, "%d wrong, first %s", wrong, first);
        asn_grammar_free(g);
    }

    const char *obj = "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"maxLength\":3},"
                      "\"age\":{\"type\":\"integer\"},\"tags\":{\"type\":\"array\",\"items\":{\"enum\":[\"a\",\"b\"]},"
                      "\"minItems\":1,\"maxItems\":2}},\"required\":[\"name\",\"age\"],\"additionalProperties\":false}";
    static const acase objs[] = {
        {"{\"name\":\"Ann\",\"age\":3}", 1},
        {"{\"age\":3,\"name\":\"Ann\"}", 1},
        {"{\"tags\":[\"b\"],\"age\":-1,\"name\":\"\"}", 1},
        {"{\"name\":\"Ann\"}", 0},
        {"{\"name\":\"Anne\",\"age\":3}", 0},
        {"{\"name\":\"Ann\",\"age\":3,\"name\":\"B\"}", 0},
        {"{\"name\":\"Ann\",\"age\":3,\"x\":1}", 0},
        {"{\"name\":\"Ann\",\"age\":3,\"tags\":[]}", 0},
        {"{\"name\":\"Ann\",\"age\":3,\"tags\":[\"a\",\"b\",\"a\"]}", 0},
        {"{\"name\":\"Ann\", \"age\":3}", 0},
        {NULL, 0}};
    asn_grammar *g = schema(obj, ASN_WS_COMPACT, &e);
    T_OK("object schema compiles", g != NULL, "%s", e.msg);
    for (const acase *c = objs; g && c->text; c++) {
        char label[300];
        snprintf(label, sizeof label, "object: %s %s", c->text, c->ok ? "accepted" : "refused");
        T_EQ_INT(label, accepts(g, c->text, strlen(c->text)), c->ok);
    }
    asn_grammar_free(g);
    g = schema(obj, ASN_WS_ANY, &e);
    T_OK("whitespace any: spaces and newlines between tokens",
         g && accepts(g, "{ \"name\" : \"Ann\",\n  \"age\": 3 }", strlen("{ \"name\" : \"Ann\",\n  \"age\": 3 }")),
         "refused");
    asn_grammar_free(g);

    const char *extra = "{\"properties\":{\"ab\":{\"type\":\"integer\"}},\"additionalProperties\":{\"type\":\"boolean\"},"
                        "\"$defs\":{}}";
    static const acase extras[] = {{"{\"ab\":1,\"a\":true}", 1},  {"{\"abc\":false}", 1}, {"{\"\":true}", 1},
                                   {"{\"ab\":true}", 0},        {"{\"b\":1}", 0},        {"{}", 1},
                                   {"{\"a\\\"\":true}", 1},     {NULL, 0}};
    g = schema(extra, ASN_WS_COMPACT, &e);
    for (const acase *c = extras; g && c->text; c++) {
        char label[300];
        snprintf(label, sizeof label, "extra keys: %s %s", c->text, c->ok ? "accepted" : "refused");
        T_EQ_INT(label, accepts(g, c->text, strlen(c->text)), c->ok);
    }
    asn_grammar_free(g);

    const char *rec = "{\"$defs\":{\"node\":{\"type\":\"object\",\"properties\":{\"v\":{\"type\":\"integer\"},"
                      "\"next\":{\"anyOf\":[{\"$ref\":\"#/$defs/node\"},{\"type\":\"null\"}]}},\"required\":[\"v\"],"
                      "\"additionalProperties\":false}},\"$ref\":\"#/$defs/node\"}";
    g = schema(rec, ASN_WS_COMPACT, &e);
    T_OK("recursive $ref", g && accepts(g, "{\"v\":1,\"next\":{\"next\":null,\"v\":2}}", 34) &&
                               !accepts(g, "{\"v\":1,\"next\":{}}", 17), "%s", g ? "wrong" : e.msg);
    asn_grammar_free(g);
    g = schema("{\"type\":[\"string\",\"null\"],\"pattern\":\"^[0-9]{3}-[a-z\\\"]+$\"}", ASN_WS_COMPACT, &e);
    T_OK("type union with pattern", g && accepts(g, "null", 4) && accepts(g, "\"123-ab\\\"c\"", 11) &&
                                        !accepts(g, "\"12-ab\"", 7), "%s", g ? "wrong" : e.msg);
    asn_grammar_free(g);
    g = schema("{\"type\":\"string\",\"pattern\":\"ab\",\"nullable\":true}", ASN_WS_COMPACT, &e);
    T_OK("unanchored pattern, nullable", g && accepts(g, "\"xaby\"", 6) && accepts(g, "null", 4) &&
                                             !accepts(g, "\"xy\"", 4), "%s", g ? "wrong" : e.msg);
    asn_grammar_free(g);
    g = schema("{\"prefixItems\":[{\"const\":1},{\"type\":\"boolean\"}],\"items\":false}", ASN_WS_COMPACT, &e);
    T_OK("prefixItems, items false", g && accepts(g, "[1,true]", 8) && accepts(g, "[1]", 3) &&
                                         !accepts(g, "[1,true,1]", 10) && !accepts(g, "[2]", 3),
         "%s", g ? "wrong" : e.msg);
    asn_grammar_free(g);

    g = schema("{\"type\":\"array\",\"items\":{\"type\":\"string\"}}", ASN_WS_COMPACT, &e);
    T_OK("unbounded array: any number of items", g && accepts(g, "[]", 2) && accepts(g, "[\"a\"]", 5) &&
                                                     accepts(g, "[\"a\",\"b\",\"c\"]", 13) && !accepts(g, "[1]", 3),
         "%s", g ? "wrong" : e.msg);
    asn_grammar_free(g);

    static const struct {
        const char *s, *msg;
    } errs[] = {
        {"{\"properties\":{\"d\":{\"type\":\"string\",\"format\":\"ipv6\"}}}",
         "/properties/d/format: unsupported format \"ipv6\""},
        {"{\"not\":{\"minLength\":1}}", "/not: unsupported keyword \"not\" (supported: not of types, or beside enum/const)"},
        {"{\"allOf\":[{\"type\":\"string\"},{\"type\":[\"integer\",\"null\"]}]}",
         "/allOf: the subschemas' types do not intersect"},
        {"{\"$ref\":\"#/$defs/missing\"}", "/$ref: reference \"#/$defs/missing\" does not resolve"},
        {"{\"type\":\"strin\"}",
         "/type: type must be one of string, number, integer, boolean, null, object, array (or a list of them)"},
        {"{\"items\":{\"minLength\":-1}}", "/items/minLength: minLength must be an integer in [0, 10^12)"},
        {"{\"type\":\"number\",\"minimum\":0.5}",
         "/minimum: \"minimum\" on a number must be an integer (fractional bounds are not supported)"},
        {"{\"type\":\"string\",\"pattern\":\"a(\"}", "/pattern: offset 2: missing closing parenthesis"},
        {"false", "/: the schema false accepts nothing"},
    };
    for (size_t i = 0; i < sizeof errs / sizeof *errs; i++) {
        json_t *s = json_loads(errs[i].s, JSON_DECODE_ANY, NULL);
        asn_err e2 = {{0}};
        char *t = asn_schema_to_gbnf(s, ASN_WS_COMPACT, &e2);
        char label[300];
        snprintf(label, sizeof label, "schema error: %s", errs[i].msg);
        T_OK(label, !t && !strcmp(e2.msg, errs[i].msg), "got \"%s\"", t ? "(compiled)" : e2.msg);
        free(t);
        json_decref(s);
    }
}

/* ------------------------------------------------------- regex, choice */

static void test_regex(void)
{
    static const struct {
        const char *re;
        acase cs[6];
    } res[] = {
        {"[a-z]+@[a-z]+\\.(com|org)", {{"bob@x.org", 1}, {"bob@x.net", 0}, {"@x.com", 0}, {NULL, 0}}},
        {"^\\d{3}-\\d{2,}$", {{"123-45", 1}, {"123-456", 1}, {"12-45", 0}, {"123-4", 0}, {NULL, 0}}},
        {"(?:ab|c)*d?", {{"", 1}, {"ababcd", 1}, {"abd", 1}, {"ad", 0}, {NULL, 0}}},
        {"a.c", {{"abc", 1}, {"a\xC3\xA9" "c", 1}, {"a\nc", 0}, {NULL, 0}}},
        {"[^\\s,]+,\\w\\W", {{"x1,_!", 1}, {"x y,a!", 0}, {"x,a1", 0}, {NULL, 0}}},
        {"x{2}y{1,}z{,3}", {{"xxyz{,3}", 1}, {"xxy", 0}, {NULL, 0}}},
        {"colou?r|grey", {{"color", 1}, {"colour", 1}, {"grey", 1}, {"colr", 0}, {NULL, 0}}},
        {"\\u00e9\\x41\\.\\(", {{"\xC3\xA9" "A.(", 1}, {NULL, 0}}},
    };
    for (size_t i = 0; i < sizeof res / sizeof *res; i++) {
        asn_err e;
        char *t = asn_regex_to_gbnf(res[i].re, &e);
        char label[300];
        snprintf(label, sizeof label, "regex %s", res[i].re);
        T_OK(label, t != NULL, "%s", t ? "" : e.msg);
        if (!t)
            continue;
        check_cases(label, t, res[i].cs);
        free(t);
    }
    static const struct {
        const char *re, *msg;
    } errs[] = {
        {"a(", "offset 2: missing closing parenthesis"},
        {"(a)\\1", "offset 3: unsupported escape (back-references, \\b, \\p{...} and the like)"},
        {"a(?=b)", "offset 1: unsupported group (lookaround, flags, ...)"},
        {"a^b", "offset 1: anchors are only supported at the start (^) and end ($) of the pattern"},
        {"\\bx", "offset 0: unsupported escape (back-references, \\b, \\p{...} and the like)"},
    };
    for (size_t i = 0; i < sizeof errs / sizeof *errs; i++) {
        asn_err e = {{0}};
        char *t = asn_regex_to_gbnf(errs[i].re, &e);
        char label[300];
        snprintf(label, sizeof label, "regex error: %s", errs[i].msg);
        T_OK(label, !t && !strcmp(e.msg, errs[i].msg), "got \"%s\"", t ? "(compiled)" : e.msg);
        free(t);
    }
    const char *opts[] = {"yes", "no", "n\"o\\", "日本"};
    asn_err e;
    char *t = asn_choice_to_gbnf(opts, 4, &e);
    static const acase cs[] = {{"yes", 1}, {"no", 1}, {"n\"o\\", 1}, {"日本", 1}, {"ye", 0}, {NULL, 0}};
    check_cases("choice", t, cs);
    free(t);
    T_OK("choice: empty list refused", !asn_choice_to_gbnf(opts, 0, &e) &&
                                           !strcmp(e.msg, "the list of options is empty"), "got \"%s\"", e.msg);
}

/* ------------------------------------------------------- fast == brute */

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t next_rand(void)
{
    rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
    return rng_state;
}

/* Random walks: at every state the fast mask must equal the brute one;
 * the next token is drawn from the mask. Returns the states compared. */
static int walk_compare(const char *name, asn_constraint *c, int walks, int steps)
{
    const asn_vocab *v = asn_constraint_vocab(c);
    int V = asn_vocab_n_tokens(v), W = (V + 63) / 64;
    uint64_t *a = malloc((size_t)W * 8), *b = malloc((size_t)W * 8);
    int states = 0, diff = 0, diff_tok = -1;
    for (int w = 0; w < walks; w++) {
        asn_gstate s;
        asn_gstate_start(asn_constraint_grammar(c), &s);
        for (int k = 0; k < steps; k++) {
            asn_constraint_mask(c, &s, a);
            asn_constraint_mask_brute(c, &s, b);
            states++;
            int n = 0;
            for (int i = 0; i < W; i++) {
                if (a[i] != b[i] && !diff++)
                    diff_tok = i * 64 + __builtin_ctzll(a[i] ^ b[i]);
                n += __builtin_popcountll(b[i]);
            }
            if (!n)
                break;
            /* prefer short tokens half the time, so walks reach structure */
            int pick = -1, tries = 0;
            while (pick < 0 && tries++ < 64) {
                int t = (int)(next_rand() % (uint64_t)V);
                if (!((b[t >> 6] >> (t & 63)) & 1))
                    continue;
                size_t len;
                asn_vocab_piece(v, t, 0, &len);
                if (len <= 2 || (next_rand() & 1))
                    pick = t;
            }
            if (pick < 0) {
                int r = (int)(next_rand() % (uint64_t)n);
                for (int t = 0; t < V && pick < 0; t++)
                    if (((b[t >> 6] >> (t & 63)) & 1) && !r--)
                        pick = t;
            }
            if (asn_vocab_is_eog(v, pick))
                break;
            if (asn_constraint_accept(c, &s, pick)) {
                diff++;
                break;
            }
        }
        asn_gstate_clear(&s);
    }
    char label[300];
    snprintf(label, sizeof label, "%s: fast mask == brute-force mask at %d states", name, states);
    T_OK(label, !diff, "%d differing states, first token %d", diff, diff_tok);
    free(a);
    free(b);
    return states;
}

static asn_vocab *load_vocab(const char *file)
{
    asn_err e;
    char rel[200];
    snprintf(rel, sizeof rel, "vocab/%s", file);
    asn_gguf *g = asn_gguf_open(data_path(rel), &e);
    if (!g) {
        T_OK(file, 0, "%s", e.msg);
        return NULL;
    }
    asn_vocab *v = asn_vocab_load(g, &e);
    asn_gguf_close(g);
    if (!v)
        T_OK(file, 0, "%s", e.msg);
    return v;
}

static asn_grammar *from_text(char *text)
{
    asn_err e;
    asn_grammar *g = text ? asn_gbnf_parse(text, strlen(text), &e) : NULL;
    if (text && !g)
        printf("# %s\n", e.msg);
    free(text);
    return g;
}

static void test_masks(const char *vocab_file, int walks, int steps)
{
    asn_vocab *v = load_vocab(vocab_file);
    if (!v)
        return;
    asn_err e;
    const char *schemas[] = {
        /* five typed fields, a nested array of objects, an enum */
        "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},\"age\":{\"type\":\"integer\","
        "\"minimum\":0,\"maximum\":150},\"score\":{\"type\":\"number\"},\"ok\":{\"type\":\"boolean\"},"
        "\"city\":{\"type\":[\"string\",\"null\"],\"maxLength\":12}},\"required\":[\"name\",\"age\"]}",
        "{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"integer\"},"
        "\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"maxItems\":3}},\"required\":[\"id\"],"
        "\"additionalProperties\":false},\"minItems\":1}",
        "{\"enum\":[\"red\",\"green\",\"blue\",42,null,{\"a\":[1]}]}",
    };
    asn_constraint *first = NULL;
    for (int i = 0; i < 3; i++) {
        json_t *s = json_loads(schemas[i], 0, NULL);
        asn_grammar *g = from_text(asn_schema_to_gbnf(s, i == 1 ? ASN_WS_ANY : ASN_WS_COMPACT, &e));
        json_decref(s);
        if (!g) {
            T_OK("schema compiles", 0, "%s", e.msg);
            continue;
        }
        asn_constraint *c = first ? asn_constraint_new_like(g, first) : asn_constraint_new(g, v);
        char label[100];
        snprintf(label, sizeof label, "%s: json_schema %d", vocab_file, i + 1);
        walk_compare(label, c, walks, steps);
        if (!first)
            first = c;
        else
            asn_constraint_free(c);
    }
    const char *files[] = {"grammar/json.gbnf", "grammar/c.gbnf"};
    for (int i = 0; i < 2; i++) {
        char *text;
        size_t n;
        if (asn_read_file(data_path(files[i]), &text, &n, &e))
            continue;
        asn_grammar *g = from_text(text);
        if (!g)
            continue;
        asn_constraint *c = asn_constraint_new_like(g, first);
        char label[100];
        snprintf(label, sizeof label, "%s: grammar %s", vocab_file, files[i]);
        walk_compare(label, c, walks, steps);
        asn_constraint_free(c);
    }
    asn_grammar *g = from_text(asn_regex_to_gbnf("(\\w+ ){2,4}[A-Z][a-z]*\\.( [0-9]{1,3}%)?", &e));
    if (g) {
        asn_constraint *c = asn_constraint_new_like(g, first);
        char label[100];
        snprintf(label, sizeof label, "%s: regex", vocab_file);
        walk_compare(label, c, walks, steps);
        asn_constraint_free(c);
    }
    const char *opts[] = {"positive", "negative", "neutral", "mixed feelings", "n/a"};
    g = from_text(asn_choice_to_gbnf(opts, 5, &e));
    if (g) {
        asn_constraint *c = asn_constraint_new_like(g, first);
        char label[100];
        snprintf(label, sizeof label, "%s: choice", vocab_file);
        walk_compare(label, c, walks, steps);
        asn_constraint_free(c);
    }
    asn_constraint_free(first);
    asn_vocab_free(v);
}

/* The full validator (the final check of asn_schema_to_gbnf_final): each
 * verdict as Python's jsonschema 4.10 gives it (draft 2020-12, or the
 * draft its $schema names; formats checked); multipleOf as the decimals compute (3 * 0.1 = 0.3, where
 * Python's float division says no). */
static void test_validator(void)
{
    static const struct {
        const char *schema, *text;
        int valid;
    } cases[] = {
        {"{\"oneOf\":[{\"type\":\"integer\"},{\"minimum\":0}]}", "3", 0},
        {"{\"oneOf\":[{\"type\":\"integer\"},{\"minimum\":0}]}", "-3", 1},
        {"{\"oneOf\":[{\"type\":\"integer\"},{\"minimum\":0}]}", "0.5", 1},
        {"{\"oneOf\":[{\"type\":\"integer\"},{\"minimum\":0}]}", "-0.5", 0},
        {"{\"not\":{\"type\":\"string\",\"maxLength\":2}}", "\"ab\"", 0},
        {"{\"not\":{\"type\":\"string\",\"maxLength\":2}}", "\"abc\"", 1},
        {"{\"not\":{\"type\":\"string\",\"maxLength\":2}}", "1", 1},
        {"{\"uniqueItems\":true}", "[1,1.0]", 0},
        {"{\"uniqueItems\":true}", "[{\"a\":[1]},{\"a\":[1]}]", 0},
        {"{\"uniqueItems\":true}", "[{\"a\":1},{\"a\":1,\"b\":2}]", 1},
        {"{\"uniqueItems\":true}", "[true,1]", 1},
        {"{\"if\":{\"minimum\":10},\"then\":{\"multipleOf\":5},\"else\":{\"maximum\":3}}", "15", 1},
        {"{\"if\":{\"minimum\":10},\"then\":{\"multipleOf\":5},\"else\":{\"maximum\":3}}", "12", 0},
        {"{\"if\":{\"minimum\":10},\"then\":{\"multipleOf\":5},\"else\":{\"maximum\":3}}", "2", 1},
        {"{\"if\":{\"minimum\":10},\"then\":{\"multipleOf\":5},\"else\":{\"maximum\":3}}", "4", 0},
        {"{\"dependentSchemas\":{\"a\":{\"properties\":{\"b\":{\"type\":\"string\"}}}}}", "{\"a\":1,\"b\":2}", 0},
        {"{\"dependentSchemas\":{\"a\":{\"properties\":{\"b\":{\"type\":\"string\"}}}}}", "{\"a\":1,\"b\":\"x\"}", 1},
        {"{\"dependentSchemas\":{\"a\":{\"properties\":{\"b\":{\"type\":\"string\"}}}}}", "{\"b\":2}", 1},
        {"{\"$schema\":\"http://json-schema.org/draft-07/schema#\",\"dependencies\":{\"a\":[\"c\"],\"b\":{\"required\":[\"d\"]}}}", "{\"a\":1}", 0},
        {"{\"$schema\":\"http://json-schema.org/draft-07/schema#\",\"dependencies\":{\"a\":[\"c\"],\"b\":{\"required\":[\"d\"]}}}", "{\"a\":1,\"c\":1}", 1},
        {"{\"$schema\":\"http://json-schema.org/draft-07/schema#\",\"dependencies\":{\"a\":[\"c\"],\"b\":{\"required\":[\"d\"]}}}", "{\"b\":1,\"d\":1}", 1},
        {"{\"$schema\":\"http://json-schema.org/draft-07/schema#\",\"dependencies\":{\"a\":[\"c\"],\"b\":{\"required\":[\"d\"]}}}", "{\"b\":1}", 0},
        {"{\"exclusiveMinimum\":0.5,\"maximum\":1.25}", "0.5", 0},
        {"{\"exclusiveMinimum\":0.5,\"maximum\":1.25}", "0.51", 1},
        {"{\"exclusiveMinimum\":0.5,\"maximum\":1.25}", "1.25", 1},
        {"{\"exclusiveMinimum\":0.5,\"maximum\":1.25}", "1.26", 0},
        {"{\"enum\":[{\"a\":[1,{\"b\":null}]}]}", "{\"a\":[1,{\"b\":null}]}", 1},
        {"{\"enum\":[{\"a\":[1,{\"b\":null}]}]}", "{\"a\":[1,{\"b\":false}]}", 0},
        {"{\"contains\":{\"const\":1},\"maxContains\":1}", "[1,2]", 1},
        {"{\"contains\":{\"const\":1},\"maxContains\":1}", "[1,1]", 0},
        {"{\"contains\":{\"const\":1},\"maxContains\":1}", "[2]", 0},
        {"{\"$defs\":{\"p\":{\"type\":\"integer\",\"minimum\":2}},\"allOf\":[{\"$ref\":\"#/$defs/p\"},{\"anyOf\":[{\"maximum\":3},{\"minimum\":9}]}]}", "2", 1},
        {"{\"$defs\":{\"p\":{\"type\":\"integer\",\"minimum\":2}},\"allOf\":[{\"$ref\":\"#/$defs/p\"},{\"anyOf\":[{\"maximum\":3},{\"minimum\":9}]}]}", "5", 0},
        {"{\"$defs\":{\"p\":{\"type\":\"integer\",\"minimum\":2}},\"allOf\":[{\"$ref\":\"#/$defs/p\"},{\"anyOf\":[{\"maximum\":3},{\"minimum\":9}]}]}", "9", 1},
        {"{\"$defs\":{\"p\":{\"type\":\"integer\",\"minimum\":2}},\"allOf\":[{\"$ref\":\"#/$defs/p\"},{\"anyOf\":[{\"maximum\":3},{\"minimum\":9}]}]}", "1", 0},
        {"{\"propertyNames\":{\"pattern\":\"^[a-z]+$\"}}", "{\"ab\":1}", 1},
        {"{\"propertyNames\":{\"pattern\":\"^[a-z]+$\"}}", "{\"aB\":1}", 0},
        {"{\"type\":\"string\",\"format\":\"date\"}", "\"2024-02-29\"", 1},
        {"{\"type\":\"string\",\"format\":\"date\"}", "\"2023-02-29\"", 0},
        {"{\"multipleOf\":0.1}", "0.3", 1},
        {"{\"multipleOf\":0.01}", "19.99", 1},
        {"{\"multipleOf\":0.1}", "0.35", 0},
        {"{\"multipleOf\":2.5}", "1e3", 1},
        {"{\"multipleOf\":1e-3}", "1.0005", 0},
        {"{\"multipleOf\":3}", "123456789012345678901234567890", 0}, /* beyond 64 bits: not judged */
        {"{\"type\":\"integer\"}", "[1", 0},                               /* not one value */
        {"{\"type\":\"integer\"}", " 7\n", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        json_t *s = json_loads(cases[i].schema, 0, NULL);
        char why[256], label[300];
        int got = asn_schema_check_text(s, cases[i].text, strlen(cases[i].text), why, sizeof why);
        snprintf(label, sizeof label, "validator: %s against %s", cases[i].text, cases[i].schema);
        T_OK(label, got == cases[i].valid, "got %d (%s)", got, got ? "valid" : why);
        json_decref(s);
    }
    /* which schemas get a final check, and what stays refused */
    static const struct {
        const char *schema;
        int final; /* -1: refused */
        const char *err;
    } kinds[] = {
        {"{\"type\":\"integer\",\"maximum\":9}", 0, NULL},
        {"{\"oneOf\":[{\"type\":\"integer\"},{\"minimum\":0}]}", 1, NULL},
        {"{\"type\":\"array\",\"uniqueItems\":true}", 1, NULL},
        {"{\"type\":\"number\",\"minimum\":0.5}", 1, NULL},
        {"{\"not\":{\"required\":[\"a\"]},\"unevaluatedProperties\":false}", -1,
         "/unevaluatedProperties: unsupported keyword \"unevaluatedProperties\""},
        {"{\"not\":{\"$ref\":\"#/$defs/x\"}}", -1, "/not/$ref: reference does not resolve"},
    };
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++) {
        json_t *s = json_loads(kinds[i].schema, 0, NULL);
        asn_err e = {0};
        int final = -1;
        char *g = asn_schema_to_gbnf_final(s, ASN_WS_COMPACT, &final, &e);
        if (!g)
            final = -1;
        char label[300];
        snprintf(label, sizeof label, "final check of %s", kinds[i].schema);
        T_OK(label, final == kinds[i].final && (!kinds[i].err || strstr(e.msg, kinds[i].err)), "final %d, %s", final,
             g ? "compiled" : e.msg);
        free(g);
        json_decref(s);
    }
}

int main(void)
{
    test_gbnf();
    test_schema();
    test_regex();
    test_validator();
    test_masks("ggml-vocab-phi-3.gguf", 4, 25);
    test_masks("ggml-vocab-llama-bpe.gguf", 1, 12);
    T_DONE();
}
