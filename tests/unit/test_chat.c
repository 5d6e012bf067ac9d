/* test_chat.c — chat templates: family detection on the templates real
 * models ship (tests/data/chat/templates/, from llama.cpp's
 * models/templates), and formatting against the expected strings of
 * llama.cpp's tests/test-chat-template.cpp (tests/data/chat/format.jsonl,
 * each case naming its source). See tests/data/chat/README.md. */
#include "asn/chat.h"
#include "asn/json.h"
#include "t.h"

#include <stdlib.h>

static char path_buf[4096];
static const char *data_path(const char *name)
{
    const char *root = getenv("ASN_ROOT");
    snprintf(path_buf, sizeof path_buf, "%s/tests/data/chat/%s", root ? root : ".", name);
    return path_buf;
}

/* Whole file as a NUL-terminated string; NULL if it cannot be read. */
static char *slurp(const char *name)
{
    FILE *f = fopen(data_path(name), "rb");
    if (!f)
        return NULL;
    char *p = NULL;
    size_t n = 0, cap = 0, got;
    do {
        asn_grow((void **)&p, &cap, n + 4096 + 1, 1);
        got = fread(p + n, 1, 4096, f);
        n += got;
    } while (got > 0);
    fclose(f);
    p[n] = 0;
    return p;
}

/* s with newlines, tabs, quotes and backslashes escaped, so a failing check
 * stays on its one TAP line and shows every whitespace byte. */
static char *esc(const char *s)
{
    if (!s)
        return asn_xstrdup("(null)");
    size_t n = strlen(s);
    char *o = asn_xmalloc(2 * n + 1), *q = o;
    for (; *s; s++) {
        const char *r = *s == '\n' ? "\\n" : *s == '\t' ? "\\t" : *s == '\r' ? "\\r"
                      : *s == '"'  ? "\\\"" : *s == '\\' ? "\\\\" : NULL;
        if (r) {
            memcpy(q, r, 2);
            q += 2;
        } else {
            *q++ = *s;
        }
    }
    *q = 0;
    return o;
}

static void check_str(const char *name, const char *got, const char *exp)
{
    char *g = esc(got), *x = esc(exp);
    T_OK(name, got && exp && !strcmp(got, exp), "expected \"%s\", got \"%s\"", x, g);
    free(g);
    free(x);
}

static const char *family_name(int id)
{
    return id < 0 ? "unknown" : asn_chat_name(id);
}

/* The conversation of llama.cpp's tests/test-chat-template.cpp, which its
 * expected strings (and the cases without "messages") are written for. */
static const asn_chat_msg LLAMA_CPP_CONVERSATION[] = {
    {"system", "You are a helpful assistant"},
    {"user", "Hello"},
    {"assistant", "Hi there"},
    {"user", "Who are you"},
    {"assistant", "   I am an assistant   "},
    {"user", "Another question"},
};
#define N_CONV (sizeof LLAMA_CPP_CONVERSATION / sizeof LLAMA_CPP_CONVERSATION[0])

/* Appends the [role, content] pairs of JSON array `arr` to msgs. */
static int add_messages(const json_t *arr, asn_chat_msg **msgs, size_t *n, size_t *cap)
{
    if (!json_is_array(arr))
        return -1;
    for (size_t i = 0; i < json_array_size(arr); i++) {
        const json_t *pair = json_array_get(arr, i);
        const char *role = json_string_value(json_array_get(pair, 0));
        const char *content = json_string_value(json_array_get(pair, 1));
        if (!role || !content)
            return -1;
        asn_grow((void **)msgs, cap, *n + 1, sizeof **msgs);
        (*msgs)[(*n)++] = (asn_chat_msg){role, content};
    }
    return 0;
}

/* ------------------------------------------------------------- detection */

static void test_detect_files(void)
{
    asn_err e;
    asn_jsonl *r = asn_jsonl_open(data_path("detect.jsonl"), &e);
    T_OK("detect.jsonl opens", r != NULL, "%s", e.msg);
    if (!r)
        return;
    json_t *rec;
    int n = 0, rc;
    while ((rc = asn_jsonl_next(r, &rec, &e)) == 1) {
        const char *file = NULL, *text = NULL, *family = NULL;
        asn_get_string(rec, "template_file", 0, &file, NULL);
        asn_get_string(rec, "template", 0, &text, NULL);
        family = json_string_value(json_object_get(rec, "family")); /* null: unknown */
        char *owned = file ? slurp(file) : NULL;
        const char *tmpl = file ? owned : text;
        char name[512];
        snprintf(name, sizeof name, "detect %s -> %s", file ? file : text,
                 family ? family : "unknown");
        if (!tmpl) {
            T_OK(name, 0, "cannot read %s", file ? data_path(file) : "(no template)");
        } else {
            check_str(name, family_name(asn_chat_detect(tmpl)), family ? family : "unknown");
        }
        free(owned);
        json_decref(rec);
        n++;
    }
    T_OK("detect.jsonl reads to the end", rc == 0, "%s", e.msg);
    asn_jsonl_close(r);
    T_OK("detect.jsonl has the real templates", n >= 16, "%d cases", n);
}

/* Every family's name maps back to it; llama.cpp's names are also accepted
 * by asn_chat_detect, "none" and "dots1" only by asn_chat_from_name. */
static void test_names(void)
{
    int bad = 0, first_bad = -1;
    for (int id = 0; id < ASN_CHAT_COUNT; id++) {
        const char *nm = asn_chat_name(id);
        int llama_name = id != ASN_CHAT_NONE && id != ASN_CHAT_DOTS1 && id < ASN_CHAT_LLAMA3_1; /* asn's own: not llama.cpp names */
        if (!nm || asn_chat_from_name(nm) != id ||
            asn_chat_detect(nm) != (llama_name ? id : -1)) {
            bad++;
            if (first_bad < 0)
                first_bad = id;
        }
    }
    T_OK("every family name round-trips through from_name and detect", bad == 0,
         "%d families wrong, first id %d (%s)", bad, first_bad, family_name(first_bad));
    T_OK("asn_chat_name is NULL out of range", !asn_chat_name(-1) && !asn_chat_name(ASN_CHAT_COUNT),
         "got a name");
    T_EQ_INT("asn_chat_from_name rejects an unknown name", asn_chat_from_name("llama-3"), -1);
    T_EQ_INT("asn_chat_from_name(NULL)", asn_chat_from_name(NULL), -1);
    T_EQ_INT("asn_chat_detect(NULL)", asn_chat_detect(NULL), -1);
    T_EQ_INT("a text starting with mistral is the llama2 family", asn_chat_detect("mistral-7b"),
             ASN_CHAT_LLAMA2);
}

/* ------------------------------------------------------------ formatting */

static void run_format_case(const json_t *rec, int lineno)
{
    const char *cname = "?", *source = "?", *text = NULL, *file = NULL, *tname = NULL;
    const char *family = NULL, *expected = NULL;
    asn_get_string(rec, "case", 1, &cname, NULL);
    asn_get_string(rec, "source", 0, &source, NULL);
    asn_get_string(rec, "template", 0, &text, NULL);
    asn_get_string(rec, "template_file", 0, &file, NULL);
    asn_get_string(rec, "template_name", 0, &tname, NULL);
    asn_get_string(rec, "family", 1, &family, NULL);
    asn_get_string(rec, "expected", 1, &expected, NULL);
    const json_t *gen_v = json_object_get(rec, "add_generation_prompt");
    int gen = gen_v ? json_is_true(gen_v) : 1;
    long long past = -1;
    asn_get_int(rec, "past", 0, &past, NULL);

    char name[512];
    snprintf(name, sizeof name, "format %s: %s", family ? family : "?", cname);
    if (!family || !expected) {
        T_OK(name, 0, "format.jsonl:%d lacks family or expected", lineno);
        return;
    }

    char *owned = file ? slurp(file) : NULL;
    int id;
    if (tname)
        id = asn_chat_from_name(tname);
    else
        id = asn_chat_detect(file ? owned : text);
    if (file && !owned) {
        T_OK(name, 0, "cannot read %s", data_path(file));
        return;
    }
    free(owned);
    if (id < 0 || strcmp(asn_chat_name(id), family)) {
        T_OK(name, 0, "template detected as %s, the case is for %s", family_name(id), family);
        return;
    }

    asn_chat_msg *msgs = NULL;
    size_t n = 0, cap = 0;
    const json_t *m = json_object_get(rec, "messages");
    if (m) {
        if (add_messages(m, &msgs, &n, &cap) < 0)
            n = (size_t)-1;
    } else {
        asn_grow((void **)&msgs, &cap, N_CONV, sizeof *msgs);
        memcpy(msgs, LLAMA_CPP_CONVERSATION, sizeof LLAMA_CPP_CONVERSATION);
        n = N_CONV;
    }
    const json_t *extra = json_object_get(rec, "extra_messages");
    if (n != (size_t)-1 && extra && add_messages(extra, &msgs, &n, &cap) < 0)
        n = (size_t)-1;
    if (n == (size_t)-1 || past > (long long)n) {
        T_OK(name, 0, "format.jsonl:%d: bad messages or past", lineno);
        free(msgs);
        return;
    }

    asn_err e = {{0}};
    char *got = asn_chat_format(id, msgs, n, gen, &e);
    if (got && past >= 0) {
        /* llama.cpp's common_chat_format_single: the new message's text is
         * what formatting the whole history adds to the formatted past (no
         * generation prompt), after a newline when the past ended with one. */
        char *before = asn_chat_format(id, msgs, (size_t)past, 0, &e);
        size_t k = before ? strlen(before) : 0;
        if (!before || strncmp(got, before, k)) {
            T_OK(name, 0, "formatting the past is not a prefix of the whole (%s)", source);
            free(before);
            free(got);
            free(msgs);
            return;
        }
        int nl = gen && k && before[k - 1] == '\n';
        char *diff = asn_xmalloc(strlen(got + k) + 2);
        snprintf(diff, strlen(got + k) + 2, "%s%s", nl ? "\n" : "", got + k);
        free(before);
        free(got);
        got = diff;
    }
    if (!got)
        T_OK(name, 0, "asn_chat_format failed: %s", e.msg);
    else
        check_str(name, got, expected);
    free(got);
    free(msgs);
}

static void test_format_cases(void)
{
    asn_err e;
    asn_jsonl *r = asn_jsonl_open(data_path("format.jsonl"), &e);
    T_OK("format.jsonl opens", r != NULL, "%s", e.msg);
    if (!r)
        return;
    json_t *rec;
    int n = 0, rc;
    while ((rc = asn_jsonl_next(r, &rec, &e)) == 1) {
        run_format_case(rec, (int)asn_jsonl_lineno(r));
        json_decref(rec);
        n++;
    }
    T_OK("format.jsonl reads to the end", rc == 0, "%s", e.msg);
    asn_jsonl_close(r);
    T_OK("format.jsonl has every llama.cpp case", n >= 60, "%d cases", n);
}

/* What the expected strings above do not pin down. */
static void test_format_edges(void)
{
    asn_err e = {{0}};
    char *s = asn_chat_format(ASN_CHAT_CHATML, NULL, 0, 1, &e);
    check_str("chatml, no messages, generation prompt only", s, "<|im_start|>assistant\n");
    free(s);
    s = asn_chat_format(ASN_CHAT_LLAMA3, NULL, 0, 0, &e);
    check_str("llama3, no messages, no prompt: empty string", s, "");
    free(s);

    /* llama.cpp trims with isspace() in the C locale: \t \n \v \f \r and
     * space, never bytes of a UTF-8 sequence (U+00A0 stays). */
    asn_chat_msg m[] = {{"user", "\t\v\f\r\n x \xc2\xa0\n"}};
    s = asn_chat_format(ASN_CHAT_LLAMA3, m, 1, 0, &e);
    check_str("llama3 trims ASCII whitespace only", s,
              "<|start_header_id|>user<|end_header_id|>\n\nx \xc2\xa0<|eot_id|>");
    free(s);

    /* gemma: several system messages are joined, then written once before
     * the next user turn; a system text with no user turn after it is lost. */
    asn_chat_msg g[] = {{"system", " A "}, {"system", "B"}, {"user", "Q"}, {"system", "C"}};
    s = asn_chat_format(ASN_CHAT_GEMMA, g, 4, 1, &e);
    check_str("gemma merges system texts into the next user turn", s,
              "<start_of_turn>user\nAB\n\nQ<end_of_turn>\n<start_of_turn>model\n");
    free(s);

    s = asn_chat_format(-1, m, 1, 1, &e);
    T_OK("format with an id below range fails", !s && strstr(e.msg, "-1"), "got %s / %s",
         s ? s : "NULL", e.msg);
    free(s);
    s = asn_chat_format(ASN_CHAT_COUNT, m, 1, 1, &e);
    T_OK("format with an id past the last family fails", !s && e.msg[0], "got %s", s ? s : "NULL");
    free(s);
    asn_chat_msg bad[] = {{"user", "x"}, {"assistant", NULL}};
    e.msg[0] = 0;
    s = asn_chat_format(ASN_CHAT_CHATML, bad, 2, 1, &e);
    T_OK("a message without content is an error naming it", !s && strstr(e.msg, "message 1") &&
         strstr(e.msg, "content"), "got %s / \"%s\"", s ? s : "NULL", e.msg);
    free(s);
    asn_chat_msg norole[] = {{NULL, "x"}};
    s = asn_chat_format(ASN_CHAT_CHATML, norole, 1, 1, &e);
    T_OK("a message without role is an error", !s && strstr(e.msg, "role"), "got \"%s\"", e.msg);
    free(s);
}

/* ---------------------------------------------------- choice for a model */

static void test_for_model(void)
{
    asn_err e = {{0}};
    T_EQ_INT("no template in the model: chatml, as llama.cpp",
             asn_chat_for_model(NULL, NULL, &e), ASN_CHAT_CHATML);
    T_EQ_INT("an empty template counts as none in the model",
             asn_chat_for_model("", NULL, &e), ASN_CHAT_CHATML);
    char *llama31 = slurp("templates/meta-llama-Llama-3.1-8B-Instruct.jinja");
    T_EQ_INT("Llama 3.1's template picks llama3.1 (its Jinja rendering: the dated system block)", asn_chat_for_model(llama31, NULL, &e),
             ASN_CHAT_LLAMA3_1);
    T_EQ_INT("asn_chat_detect keeps llama.cpp's family for it", asn_chat_detect(llama31), ASN_CHAT_LLAMA3);
    T_EQ_INT("an override wins over the model's template",
             asn_chat_for_model(llama31, "none", &e), ASN_CHAT_NONE);
    T_EQ_INT("an override applies without a model template",
             asn_chat_for_model(NULL, "mistral-v7-tekken", &e), ASN_CHAT_MISTRAL_V7_TEKKEN);
    free(llama31);

    e.msg[0] = 0;
    int id = asn_chat_for_model("{{ messages }}", "llama-3", &e);
    T_OK("an unknown override is an error that lists the names",
         id == -1 && strstr(e.msg, "\"llama-3\"") && strstr(e.msg, "llama3") &&
             strstr(e.msg, "none") && strstr(e.msg, "solar-open"),
         "got %d, \"%s\"", id, e.msg);
    e.msg[0] = 0;
    id = asn_chat_for_model("{% for m in messages %}{{ m.content }}{% endfor %}", NULL, &e);
    T_OK("an undetectable template is an error that says what to do",
         id == -1 && strstr(e.msg, "tokenizer.chat_template") && strstr(e.msg, "by name"),
         "got %d, \"%s\"", id, e.msg);
    T_EQ_INT("errors need no asn_err", asn_chat_for_model("x", "bogus", NULL), -1);
}

int main(void)
{
    test_detect_files();
    test_names();
    test_format_cases();
    test_format_edges();
    test_for_model();
    T_DONE();
}
