/* test_verifiers.c — GSM8K, MATH and IFEval checks against the Python
 * originals (tests/fixtures/verifiers.jsonl, written by
 * make_verifier_fixtures.py from the reference's verifiers.py and Google's
 * instructions.py), plus hand-made cases for what the fixtures cannot pin:
 * sentence counts, language detection, the numeric MATH equivalence, the
 * extracted answers and the error paths. */
#include "t.h"

#include "asn/json.h"
#include "asn/verifiers.h"

#include <stdlib.h>

static const char *fixture(const char *rel)
{
    static char buf[4096];
    const char *root = getenv("ASN_ROOT");
    snprintf(buf, sizeof buf, "%s/tests/%s", root ? root : ".", rel);
    return buf;
}

static const char *S(const json_t *o, const char *k) { return json_string_value(json_object_get(o, k)); }
static int B(const json_t *o, const char *k) { return json_is_true(json_object_get(o, k)); }

/* A name for a fixture case: kind, line and a short view of its text. */
static const char *case_name(const char *kind, long line, const char *text)
{
    static char buf[200];
    snprintf(buf, sizeof buf, "%s (fixture line %ld: \"%.60s\")", kind, line, text ? text : "");
    for (char *p = buf; *p; p++)
        if (*p == '\n')
            *p = ' ';
    return buf;
}

static void fixtures(void)
{
    asn_err e;
    asn_jsonl *in = asn_jsonl_open(fixture("fixtures/verifiers.jsonl"), &e);
    T_OK("verifier fixtures open", in != NULL, "%s", in ? "" : e.msg);
    if (!in)
        return;
    json_t *r;
    long n = 0, kinds[10] = {0};
    static const char *const kind_names[] = {"gsm8k", "math_boxed", "math_strip", "math_normalize", "math_equiv",
                                             "math", "ifeval", "ifeval_ref", "count_words", "count_capital_words"};
    while (asn_jsonl_next(in, &r, &e) > 0) {
        n++;
        long line = asn_jsonl_lineno(in);
        const char *kind = S(r, "kind");
        for (int k = 0; k < 10; k++)
            kinds[k] += !strcmp(kind, kind_names[k]);
        if (!strcmp(kind, "gsm8k")) {
            char *label = asn_gsm8k_label(json_object_get(r, "label"));
            int got = asn_gsm8k_check(S(r, "response"), label, NULL);
            T_EQ_INT(case_name("gsm8k verdict as the reference", line, S(r, "response")), got, B(r, "expect"));
            free(label);
        } else if (!strcmp(kind, "math_boxed")) {
            char *b = asn_math_last_boxed(S(r, "text"));
            const char *exp = S(r, "expect");
            T_OK(case_name("last_boxed_only_string", line, S(r, "text")),
                 (!b && !exp) || (b && exp && !strcmp(b, exp)), "expected %s, got %s", exp ? exp : "None",
                 b ? b : "NULL");
            char *rb = b ? asn_math_remove_boxed(b) : NULL;
            const char *exr = S(r, "expect_removed");
            T_OK(case_name("remove_boxed", line, S(r, "text")), (!rb && !exr) || (rb && exr && !strcmp(rb, exr)),
                 "expected %s, got %s", exr ? exr : "None", rb ? rb : "NULL");
            free(b);
            free(rb);
        } else if (!strcmp(kind, "math_strip")) {
            char *s = asn_math_strip_string(S(r, "text"));
            const char *exp = S(r, "expect");
            T_OK(case_name("strip_string (NULL where Python raises)", line, S(r, "text")),
                 (!s && !exp) || (s && exp && !strcmp(s, exp)), "expected %s, got %s", exp ? exp : "raise",
                 s ? s : "NULL");
            free(s);
        } else if (!strcmp(kind, "math_normalize")) {
            char *s = asn_math_normalize_final_answer(S(r, "text"));
            T_EQ_STR(case_name("normalize_final_answer", line, S(r, "text")), s, S(r, "expect"));
            free(s);
        } else if (!strcmp(kind, "math_equiv")) {
            T_EQ_INT(case_name("hendrycks_is_equiv", line, S(r, "a")), asn_math_hendrycks_equiv(S(r, "a"), S(r, "b")),
                     B(r, "expect"));
        } else if (!strcmp(kind, "math")) {
            int got = asn_math_check(S(r, "response"), S(r, "label"), 0, NULL);
            T_EQ_INT(case_name("MathVerifier verdict (strings only)", line, S(r, "response")), got, B(r, "expect"));
        } else if (!strcmp(kind, "ifeval")) {
            int ok = -1;
            int rc = asn_ifeval_check(S(r, "id"), json_object_get(r, "kwargs"), S(r, "response"), &ok, &e);
            char name[300];
            snprintf(name, sizeof name, "%s", case_name(S(r, "id"), line, S(r, "response")));
            T_OK(name, rc == 0 && ok == B(r, "expect"), "expected %d, got %d (rc %d: %s)", B(r, "expect"), ok, rc,
                 rc ? e.msg : "");
        } else if (!strcmp(kind, "ifeval_ref")) {
            int ok = -1;
            int rc = asn_ifeval_ref_check(json_object_get(r, "constraint"), S(r, "response"), &ok, &e);
            T_OK(case_name("reference func_name check", line, S(r, "response")), rc == 0 && ok == B(r, "expect"),
                 "expected %d, got %d (rc %d: %s)", B(r, "expect"), ok, rc, rc ? e.msg : "");
        } else if (!strcmp(kind, "count_words")) {
            T_EQ_INT(case_name("count_words", line, S(r, "text")), asn_ifeval_count_words(S(r, "text")),
                     json_integer_value(json_object_get(r, "expect")));
        } else if (!strcmp(kind, "count_capital_words")) {
            T_EQ_INT(case_name("capital words of nltk.word_tokenize", line, S(r, "text")),
                     asn_ifeval_count_capital_words(S(r, "text")), json_integer_value(json_object_get(r, "expect")));
        } else {
            T_OK("known fixture kind", 0, "line %ld: kind %s", line, kind);
        }
        json_decref(r);
    }
    asn_jsonl_close(in);
    T_OK("fixtures cover every kind", n > 250, "only %ld cases", n);
    for (int k = 0; k < 10; k++)
        T_OK("fixtures have cases of each kind", kinds[k] > 0, "none of %s", kind_names[k]);
}

/* ------------------------------------------------------------- GSM8K */

static void gsm8k(void)
{
    struct {
        const char *resp, *extracted;
    } c[] = {
        {"So 1,234 apples and the answer is 72.", "72"},
        {"It is -5 degrees.", "5"},   /* sign kept on decimals only */
        {"It is -5.5 degrees.", "-5.5"},
        {"1,2,3", "3"},               /* one pass: "12,3" */
        {"3,000,000 people", "3000000"},
        {"no numbers", "no numbers"}, /* the whole response */
        {"1.2.3", ".3"},
        {"+7 and -.5", "-.5"},
        {"", ""},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        char *ex;
        asn_gsm8k_check(c[i].resp, "x", &ex);
        char name[120];
        snprintf(name, sizeof name, "gsm8k extracts \"%s\" from \"%s\"", c[i].extracted, c[i].resp);
        T_EQ_STR(name, ex, c[i].extracted);
        free(ex);
    }
    T_EQ_INT("gsm8k passes a right answer", asn_gsm8k_check("The answer is 18.", "18", NULL), 1);
    T_EQ_INT("gsm8k fails a wrong answer", asn_gsm8k_check("The answer is 19.", "18", NULL), 0);
    T_EQ_INT("gsm8k: 5.50 is not 5.5 (string comparison)", asn_gsm8k_check("5.50", "5.5", NULL), 0);
    T_EQ_INT("gsm8k: the last number wins, not the first", asn_gsm8k_check("18, no wait, 20", "18", NULL), 0);

    json_t *j = json_loads("[72, 72.0, \"#### 1,000\", \"Janet ... so 16 - 3 = 13.\\n#### 13 \", \"9\", true, null, {}]",
                           0, NULL);
    const char *exp[] = {"72", "72.0", "1000", "13", "9", NULL, NULL, NULL};
    for (size_t i = 0; i < 8; i++) {
        char *l = asn_gsm8k_label(json_array_get(j, i));
        char name[80];
        snprintf(name, sizeof name, "gsm8k label %zu as Python's str() or the #### answer", i);
        T_OK(name, (!l && !exp[i]) || (l && exp[i] && !strcmp(l, exp[i])), "expected %s, got %s",
             exp[i] ? exp[i] : "NULL", l ? l : "NULL");
        free(l);
    }
    json_decref(j);
}

/* --------------------------------------------------------------- MATH */

static void math(void)
{
    struct {
        const char *a, *b;
        int eq;
    } v[] = {
        {"0.5", "\\frac{1}{2}", 1},
        {"0.25", "\\frac14", 1},
        {"\\dfrac{3}{4}", "0.75", 1},
        {"\\sqrt{2}/2", "\\frac{\\sqrt{2}}{2}", 1},
        {"\\frac{1}{\\sqrt{2}}", "\\frac{\\sqrt2}{2}", 1},
        {"2\\sqrt{3}", "\\sqrt{12}", 1},
        {"x^2-1", "(x-1)(x+1)", 1},
        {"2x+1", "1+2x", 1},
        {"2x+1", "2x-1", 0},
        {"\\left(3\\right)", "3", 1},
        {"-\\frac{1}{2}", "-0.5", 1},
        {"3 \\cdot 4", "12", 1},
        {"2^{10}", "1024", 1},
        {"x^23", "x^{23}", 1},
        {"\\sqrt[3]{8}", "2", 1},
        {"\\pi", "3.141592653589793", 1},
        {"0.333", "\\frac{1}{3}", 0},
        {"(1,2)", "(1,2)", 0},          /* not an expression: strings decide */
        {"5 \\text{ cm}", "5", 0},
        {"x = 5", "5", 0},
        {"1,000", "1000", 0},
        {"", "", 0},
        {"\\frac{1}{0}", "\\frac{1}{0}", 0}, /* not finite */
    };
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        char name[160];
        snprintf(name, sizeof name, "value equivalence of \"%s\" and \"%s\"", v[i].a, v[i].b);
        T_EQ_INT(name, asn_math_value_equiv(v[i].a, v[i].b), v[i].eq);
    }
    char *ex = NULL;
    T_EQ_INT("MATH: 0.25 boxed against \\frac14 needs values", asn_math_check("\\boxed{0.25}", "\\frac{1}{4}", 0, NULL), 0);
    T_EQ_INT("MATH: 0.25 boxed against \\frac14 with values",
             asn_math_check("\\boxed{0.25}", "\\frac{1}{4}", ASN_MATH_VALUES, &ex), 1);
    T_EQ_STR("MATH: extracted is the boxed answer", ex, "0.25");
    free(ex);
    asn_math_check("we get \\boxed{\\frac{a}{\\text{b}}} at last", "x", ASN_MATH_VALUES, &ex);
    T_EQ_STR("MATH: nested braces stay in the boxed answer", ex, "\\frac{a}{\\text{b}}");
    free(ex);
    ex = (char *)"";
    asn_math_check("\\fbox{3}", "3", ASN_MATH_VALUES, &ex);
    T_EQ_STR("MATH: \\fbox yields no boxed answer (falls back to the text)", ex, "\\fbox{3}");
    free(ex);
    T_EQ_INT("MATH: the last boxed answer wins", asn_math_check("\\boxed{1} no, \\boxed{2}", "2", ASN_MATH_VALUES, NULL), 1);
    T_EQ_INT("MATH: an earlier boxed answer does not count",
             asn_math_check("\\boxed{1} no, \\boxed{2}", "1", ASN_MATH_VALUES, NULL), 0);
    T_EQ_INT("MATH: units are dropped", asn_math_check("\\boxed{12 \\text{ inches}}", "12", 0, NULL), 1);
    T_EQ_INT("MATH: \\left/\\right and spaces", asn_math_check("\\boxed{\\left( 1, 2 \\right)}", "(1,2)", 0, NULL), 1);
    T_EQ_INT("MATH: degrees", asn_math_check("\\boxed{45^\\circ}", "45", 0, NULL), 1);
    T_EQ_INT("MATH: a wrong answer fails", asn_math_check("\\boxed{13}", "12", ASN_MATH_VALUES, NULL), 0);
}

/* ---------------------------------------------------- sentence counting */

static void sentences(void)
{
    struct {
        const char *text;
        size_t n;
    } c[] = {
        {"", 0},
        {"   \n ", 0},
        {"One sentence without a stop", 1},
        {"Hello world. This is a test.", 2},
        {"Is it? Yes! Fine.", 3},
        {"Mr. Smith met Dr. Jones. They talked.", 2},
        {"Call me at 5 p.m. tomorrow.", 1},
        {"See e.g. the appendix. Then stop.", 2},
        {"J. R. R. Tolkien wrote it.", 1},
        {"He was born in 1990. Then he moved.", 2},
        {"Step 1. do this", 1},
        {"The value is 3.14 exactly.", 1},
        {"Wait... what happened? Nothing.", 2}, /* "..." before lower case goes on */
        {"Wait... and then more.", 1},
        {"He said \"Stop.\" Then he left.", 2},
        {"Line one\nLine two\nLine three", 1},
        {"no space.after the dot", 1},
        {"- item one.\n- item two.", 2},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        char name[160];
        snprintf(name, sizeof name, "sentences in \"%s\"", c[i].text);
        for (char *p = name; *p; p++)
            if (*p == '\n')
                *p = ' ';
        T_EQ_INT(name, asn_ifeval_count_sentences(c[i].text), c[i].n);
    }
    json_t *kw = json_pack("{s:i, s:s}", "num_sentences", 3, "relation", "less than");
    int ok;
    asn_err e;
    T_OK("number_sentences less than 3 passes 2 sentences",
         !asn_ifeval_check("length_constraints:number_sentences", kw, "One. Two.", &ok, &e) && ok, "got %d", ok);
    T_OK("number_sentences less than 3 fails 3 sentences",
         !asn_ifeval_check("length_constraints:number_sentences", kw, "One. Two. Three.", &ok, &e) && !ok, "got %d", ok);
    json_object_set_new(kw, "relation", json_string("at least"));
    T_OK("number_sentences at least 3 passes 3 sentences",
         !asn_ifeval_check("length_constraints:number_sentences", kw, "One. Two. Three.", &ok, &e) && ok, "got %d", ok);
    json_decref(kw);
}

/* -------------------------------------------------- language detection */

static void languages(void)
{
    struct {
        const char *text, *lang;
    } c[] = {
        {"The quick brown fox jumps over the lazy dog and runs away.", "en"},
        {"THIS IS WRITTEN IN CAPITAL LETTERS FOR THE TEST.", "en"},
        {"El perro corre por el parque y la niña lo sigue con una pelota.", "es"},
        {"O cachorro corre no parque e a menina não para de rir com ele.", "pt"},
        {"Le chien court dans le parc et la petite fille le suit avec un ballon.", "fr"},
        {"Der Hund läuft durch den Park und das Mädchen folgt ihm mit einem Ball.", "de"},
        {"Il cane corre nel parco e la bambina lo segue con una palla.", "it"},
        {"Pies biegnie przez park, a dziewczynka idzie za nim z piłką.", "pl"},
        {"Con chó chạy qua công viên và cô bé đi theo nó với một quả bóng.", "vi"},
        {"Mbwa anakimbia katika bustani na msichana anamfuata kwa mpira.", "sw"},
        {"Koira juoksee puistossa ja tyttö seuraa sitä pallon kanssa, mutta ei ole.", "fi"},
        {"Собака бежит по парку, а девочка следует за ней с мячом.", "ru"},
        {"Собака біжить парком, і дівчинка йде за нею з м'ячем.", "uk"},
        {"Кучето тича в парка, а момичето върви след него с топка.", "bg"},
        {"الكلب يركض في الحديقة والفتاة تتبعه بالكرة.", "ar"},
        {"سگ در پارک می‌دود و دختر با توپ دنبالش می‌کند.", "fa"},
        {"کتا پارک میں دوڑ رہا ہے اور لڑکی گیند کے ساتھ اس کے پیچھے ہے۔", "ur"},
        {"कुत्ता पार्क में दौड़ता है और लड़की गेंद के साथ उसके पीछे है।", "hi"},
        {"कुत्रा बागेत धावतो आणि मुलगी चेंडू घेऊन त्याच्या मागे आहे.", "mr"},
        {"कुकुर पार्कमा दौडिरहेको छ र केटी बल लिएर पछि लागेकी छ।", "ne"},
        {"কুকুরটি পার্কে দৌড়াচ্ছে এবং মেয়েটি বল নিয়ে তার পিছনে আছে।", "bn"},
        {"நாய் பூங்காவில் ஓடுகிறது.", "ta"},
        {"కుక్క పార్కులో పరిగెడుతోంది.", "te"},
        {"ನಾಯಿ ಉದ್ಯಾನದಲ್ಲಿ ಓಡುತ್ತಿದೆ.", "kn"},
        {"നായ പാർക്കിൽ ഓടുന്നു.", "ml"},
        {"કૂતરો બગીચામાં દોડે છે.", "gu"},
        {"ਕੁੱਤਾ ਪਾਰਕ ਵਿੱਚ ਦੌੜਦਾ ਹੈ।", "pa"},
        {"สุนัขวิ่งในสวนสาธารณะ", "th"},
        {"הכלב רץ בפארק והילדה הולכת אחריו.", "he"},
        {"개가 공원에서 뛰고 있고 소녀가 공을 들고 따라갑니다.", "ko"},
        {"犬が公園を走っていて、女の子がボールを持って追いかけています。", "ja"},
        {"狗在公园里跑，小女孩拿着球跟着它。", "zh-cn"},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        char name[200];
        snprintf(name, sizeof name, "language of \"%.40s\" is %s", c[i].text, c[i].lang);
        T_EQ_STR(name, asn_ifeval_detect_language(c[i].text), c[i].lang);
    }
    T_OK("no letters: no language (Google counts the instruction followed)",
         asn_ifeval_detect_language("12345 !!! 678") == NULL, "got %s", asn_ifeval_detect_language("12345 !!! 678"));
}

/* ---------------------------------------------------- errors and helpers */

static void errors(void)
{
    asn_err e;
    int ok = 7;
    T_OK("unknown instruction id is an error", asn_ifeval_check("keywords:nope", NULL, "x", &ok, &e) == -1 &&
                                                    strstr(e.msg, "unknown instruction"), "%s", e.msg);
    json_t *kw = json_pack("{s:s}", "relation", "at least");
    T_OK("a missing argument is an error naming it",
         asn_ifeval_check("length_constraints:number_words", kw, "x", &ok, &e) == -1 && strstr(e.msg, "num_words"),
         "%s", e.msg);
    json_decref(kw);
    kw = json_pack("{s:i, s:s}", "num_words", 3, "relation", "at most");
    T_OK("a relation other than less than / at least is an error",
         asn_ifeval_check("length_constraints:number_words", kw, "x", &ok, &e) == -1 && strstr(e.msg, "relation"),
         "%s", e.msg);
    json_decref(kw);
    kw = json_pack("{s:s, s:n}", "num_words", "3", "relation");
    T_OK("a string where a number belongs is an error",
         asn_ifeval_check("length_constraints:number_words", kw, "x", &ok, &e) == -1 && strstr(e.msg, "integer"),
         "%s", e.msg);
    json_decref(kw);
    kw = json_pack("{s:[s]}", "keywords", "(unclosed");
    T_OK("a keyword that is not a regular expression is an error",
         asn_ifeval_check("keywords:existence", kw, "x", &ok, &e) == -1 && strstr(e.msg, "regular expression"), "%s",
         e.msg);
    json_decref(kw);
    kw = json_pack("{s:i, s:n, s:s}", "num_paragraphs", 2, "nth_paragraph", "first_word", "a");
    T_OK("null arguments count as missing", asn_ifeval_check("length_constraints:nth_paragraph_first_word", kw, "x",
                                                              &ok, &e) == -1 && strstr(e.msg, "nth_paragraph"),
         "%s", e.msg);
    json_decref(kw);
    kw = json_pack("{s:i, s:s, s:s}", "num_highlights", 1, "unrelated", "x", "other", "y");
    T_OK("unknown kwargs are ignored",
         !asn_ifeval_check("detectable_format:number_highlighted_sections", kw, "*a*", &ok, &e) && ok, "%s", e.msg);
    json_decref(kw);
    T_OK("strict mode: a blank response follows nothing",
         !asn_ifeval_check("punctuation:no_comma", NULL, " \n\t", &ok, &e) && !ok, "got %d", ok);
    json_t *c = json_pack("{s:s}", "func_name", "no_such_check");
    T_OK("reference format: unknown func_name is an error", asn_ifeval_ref_check(c, "x", &ok, &e) == -1, "rc 0");
    json_decref(c);
    c = json_string("{not json");
    T_OK("reference format: unparsable constraint is an error", asn_ifeval_ref_check(c, "x", &ok, &e) == -1, "rc 0");
    json_decref(c);
    c = json_pack("{s:i}", "N", 3);
    T_OK("reference format: no func_name is an error", asn_ifeval_ref_check(c, "x", &ok, &e) == -1, "rc 0");
    json_decref(c);
    for (const char *const *id = asn_ifeval_ids; *id; id++) {
        /* every id is known: an error, if any, is about its arguments */
        int rc = asn_ifeval_check(*id, NULL, "x", &ok, &e);
        T_OK("every registry id is implemented", rc == 0 || !strstr(e.msg, "unknown"), "%s: %s", *id, e.msg);
    }
}

static void helpers(void)
{
    asn_err e;
    asn_regex *re = asn_regex_new("\\w+", 0, &e);
    T_EQ_INT("regex: \\w is Unicode", asn_regex_count(re, "naïve café 日本"), 3);
    char *s = asn_regex_sub(re, "<$0>", "ab cd");
    T_EQ_STR("regex: substitution of every match", s, "<ab> <cd>");
    free(s);
    asn_regex_free(re);
    re = asn_regex_new("x*", 0, &e);
    T_EQ_INT("regex: empty matches counted as Python does", asn_regex_count(re, "axxb"), 4);
    asn_regex_free(re);
    T_OK("regex: a bad pattern is an error", asn_regex_new("(", 0, &e) == NULL && strstr(e.msg, "regular"), "%s", e.msg);
    s = asn_py_strip("\xc2\xa0 \t text \xe3\x80\x80\n");
    T_EQ_STR("strip removes Unicode white space", s, "text");
    free(s);
    s = asn_py_lower("ÀÉÎ Straße ДОМ");
    T_EQ_STR("lower maps Unicode letters", s, "àéî straße дом");
    free(s);
    T_EQ_INT("isupper: all cased characters upper", asn_py_isupper("HELLO, WORLD 123"), 1);
    T_EQ_INT("isupper: needs a cased character", asn_py_isupper("123 !"), 0);
    T_EQ_INT("islower: one capital spoils it", asn_py_islower("hello World"), 0);
    T_EQ_INT("islower: non-Latin lower case", asn_py_islower("привет"), 1);
}

int main(void)
{
    fixtures();
    gsm8k();
    math();
    sentences();
    languages();
    errors();
    helpers();
    T_DONE();
}
