/* pretok.c — the pre-tokenizers of byte-level BPE: which regexes a
 * tokenizer.ggml.pre name stands for (llama.cpp's table in
 * src/llama-vocab.cpp; the patterns come from each model's tokenizer.json),
 * and the splitting itself, with llama.cpp's semantics:
 *
 *  - the llama3, qwen2, qwen3.5, gpt2 and newline patterns run as
 *    hand-written matchers (as in llama.cpp's unicode.cpp, whose quirks they
 *    keep: ASCII-only case folding in contractions, "\s+(?!\S)" giving back
 *    exactly one whitespace character, ...);
 *  - any other pattern runs on PCRE2. llama.cpp runs those on std::regex
 *    over a "collapsed" text where each non-ASCII code point is replaced by
 *    one byte naming its class (whitespace -> \v, letter, number, ...), and
 *    \p{L}, \p{N}, ... by classes of those bytes plus their ASCII members.
 *    Patterns with such classes are run the same way here, on one byte per
 *    code point (PCRE2 without UTF: \s is then ASCII whitespace, as for
 *    std::regex), so the classes are exactly llama.cpp's, including its
 *    quirks (\p{Lu} is any letter, \p{S} lacks '~', Unicode 15.1 tables).
 *    Patterns without them (literal ranges such as [一-龥]) run on the real
 *    code points with PCRE2_UTF | PCRE2_UCP, non-ASCII whitespace mapped to
 *    \v first as llama.cpp does.
 *
 * Each regex re-splits every piece of the previous one; text between
 * matches stays a piece of its own (nothing is dropped). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tok_internal.h"

#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- patterns */

/* The patterns llama.cpp matches by hand (compared as strings, as there). */
#define P_GPT2 "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"
#define P_CONTRACT "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
#define P_LLAMA3 P_CONTRACT "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define P_LLAMA3_ORIG "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define P_QWEN2 P_CONTRACT "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define P_QWEN35 P_CONTRACT "|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define P_NEWLINES "[^\\n]+|[\\n]+"

static const char *const R_DEFAULT[] = {"[\\p{P}\\$\\+<=>\\^~\\|]+", P_GPT2, "\\p{N}+", "[0-9][0-9][0-9]", NULL};
static const char *const R_LLAMA3[] = {P_LLAMA3, NULL};
static const char *const R_JAIS2[] = {
    P_CONTRACT "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
    "\\s{512}(?!\\S)|\\s{256}(?!\\S)|\\s{128}(?!\\S)|\\s{64}(?!\\S)|\\s{32}(?!\\S)|\\s{16}(?!\\S)|"
    "\\s{8}(?!\\S)|\\s{4}(?!\\S)|\\s{1,2}(?!\\S)|\\s{1}",
    NULL};
static const char *const R_DEEPSEEK_LLM[] = {
    "[\r\n]",
    "\\s?[A-Za-z\\x{B5}\\x{C0}-\\x{D6}\\x{D8}-\\x{F6}\\x{F8}-\\x{1BA}\\x{1BC}-\\x{1BF}"
    "\\x{1C4}-\\x{293}\\x{295}-\\x{2AF}\\x{370}-\\x{373}\\x{376}\\x{377}\\x{37B}-\\x{37D}\\x{37F}"
    "\\x{386}\\x{388}-\\x{38A}\\x{38C}\\x{38E}-\\x{3A1}\\x{3A3}-\\x{3F5}\\x{3F7}-\\x{481}"
    "\\x{48A}-\\x{52F}\\x{531}-\\x{556}\\x{10A0}-\\x{10C5}\\x{13A0}-\\x{13F5}\\x{13F8}-\\x{13FD}"
    "\\x{1C90}-\\x{1CBA}\\x{1CBD}-\\x{1CBF}\\x{1D00}-\\x{1D2B}\\x{1D6B}-\\x{1D77}\\x{1D79}-\\x{1D9A}"
    "\\x{1E00}-\\x{1F15}\\x{1F18}-\\x{1F1D}\\x{1F20}-\\x{1F45}\\x{1F48}-\\x{1F4D}\\x{1F50}-\\x{1F57}"
    "\\x{1F59}\\x{1F5B}\\x{1F5D}\\x{1F5F}-\\x{1F7D}\\x{1F80}-\\x{1FB4}\\x{1FB6}-\\x{1FBC}\\x{1FBE}"
    "\\x{1FC2}-\\x{1FC4}\\x{1FC6}-\\x{1FCC}\\x{1FD0}-\\x{1FD3}\\x{1FD6}-\\x{1FDB}\\x{1FE0}-\\x{1FEC}"
    "\\x{1FF2}-\\x{1FF4}\\x{1FF6}-\\x{1FFC}\\x{2102}\\x{2107}\\x{210A}-\\x{2113}\\x{2115}"
    "\\x{2119}-\\x{211D}\\x{2124}\\x{2126}\\x{2128}\\x{212A}-\\x{212D}\\x{212F}-\\x{2134}\\x{2139}"
    "\\x{213C}-\\x{213F}\\x{2145}-\\x{2149}\\x{214E}\\x{2183}\\x{2184}\\x{2C00}-\\x{2C7B}"
    "\\x{2C7E}-\\x{2CE4}\\x{2CEB}-\\x{2CEE}\\x{2CF2}\\x{2CF3}\\x{A640}-\\x{A66D}\\x{A680}-\\x{A69B}"
    "\\x{A722}-\\x{A76F}\\x{A771}-\\x{A787}\\x{A78B}-\\x{A78E}\\x{AB70}-\\x{ABBF}\\x{FB00}-\\x{FB06}"
    "\\x{FB13}-\\x{FB17}\\x{FF21}-\\x{FF3A}\\x{FF41}-\\x{FF5A}\\x{10400}-\\x{1044F}"
    "\\x{104B0}-\\x{104D3}\\x{104D8}-\\x{104FB}\\x{10C80}-\\x{10CB2}\\x{10CC0}-\\x{10CF2}"
    "\\x{118A0}-\\x{118DF}\\x{1E900}-\\x{1E943}]+",
    "\\s?[!-/:-~\\x{FF01}-\\x{FF0F}\\x{FF1A}-\\x{FF5E}\\x{2018}-\\x{201F}\\x{3000}-\\x{3002}]+",
    "\\s+$",
    "[\\x{4E00}-\\x{9FA5}\\x{800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+",
    "\\p{N}+",
    NULL};
static const char *const R_DEEPSEEK3[] = {
    "\\p{N}{1,3}",
    "[\\x{4E00}-\\x{9FA5}\\x{3040}-\\x{309F}\\x{30A0}-\\x{30FF}]+",
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
    NULL};
static const char *const R_YOUTU[] = {
    "[\\x{AC00}-\\x{D7A3}\\x{3131}-\\x{318E}]+|[\\x{FF01}\\x{2026}\\x{201C}\\x{201D}\\x{2018}\\x{2019}\\x{2014}\\x{FF1A}\\x{FF1B}\\x{FF0C}\\x{3001}-\\x{303F}\\x{FE30}-\\x{FE4F}]+|[\\x{3105}-\\x{312F}]+|[\\x{4E00}-\\x{9FA5}\\x{3040}-\\x{309F}\\x{30A0}-\\x{30FF}]+",
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+" P_CONTRACT
    "?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*" P_CONTRACT
    "?|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL};
static const char *const R_DEEPSEEK_CODER[] = {"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", "[\\x{4E00}-\\x{9FA5}\\x{800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+", "\\p{N}", NULL};
static const char *const R_FALCON[] = {"[\\p{P}\\$\\+<=>\\^~\\|`]+", P_GPT2, "[0-9][0-9][0-9]", NULL};
static const char *const R_STARCODER[] = {"\\p{N}", P_GPT2, NULL};
static const char *const R_GPT2[] = {P_GPT2, NULL};
static const char *const R_QWEN2[] = {P_QWEN2, NULL};
static const char *const R_QWEN35[] = {P_QWEN35, NULL};
static const char *const R_PORO[] = {" ?[^(\\s|.,!?\\x{2026}\\x{3002}\\x{FF0C}\\x{3001}\\x{964}\\x{6D4}\\x{60C})]+", NULL};
static const char *const R_VIKING[] = {" ?[^(\\s|.,!?\\x{2026}\\x{3002}\\x{FF0C}\\x{3001}\\x{964}\\x{6D4}\\x{60C})]+", "\\p{N}", NULL};
static const char *const R_TEKKEN[] = {
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL};
static const char *const R_CHAMELEON[] = {
    "<sentinel:[0-9]+>", "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z", "([\\t\\n]|    |  )", "\\p{N}",
    "[\\p{P}!-/:-@\\[-`{-~]", P_GPT2, NULL};
static const char *const R_GPT4O[] = {
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+" P_CONTRACT
    "?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*" P_CONTRACT
    "?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL};
static const char *const R_GRANITE_EMB_MULTI[] = {
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}\\p{M}])([^a-z]))*((?=[\\p{L}\\p{M}])([^A-Z]))+" P_CONTRACT
    "?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}\\p{M}])([^a-z]))+((?=[\\p{L}\\p{M}])([^A-Z]))*" P_CONTRACT
    "?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL};
static const char *const R_BAILINGMOE[] = {
    "'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+",
    NULL};
static const char *const R_SEED_CODER[] = {
    P_CONTRACT "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1}| ?[^\\s\\p{L}\\p{N}\\r\\n]+|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL};
static const char *const R_LAGUNA[] = {P_NEWLINES, P_QWEN2, NULL};
static const char *const R_EXAONE_MOE[] = {
    P_CONTRACT "|[^\\r\\n\\p{L}\\p{N}]?(?:\\p{L}\\p{M}*(?: \\p{L}\\p{M}*)*)+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]?|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+",
    NULL};
static const char *const R_MINICPM5[] = {
    "\\p{N}{1,3}",
    P_CONTRACT "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}+| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL};

#define IGN ASN_PRE_IGNORE_MERGES
#define NOC ASN_PRE_NO_CLEAN
#define BOS ASN_PRE_ADD_BOS

/* tokenizer.ggml.pre names (space-separated) -> patterns and flags. */
static const struct pre_def {
    const char *names;
    const char *const *regex; /* NULL: known to llama.cpp, not supported here */
    unsigned flags;
} PRE_DEFS[] = {
    {"default", R_DEFAULT, 0},
    {"llama3 llama-v3 llama-bpe falcon3 falcon-h1 pixtral midm-2.0 lfm2 jina-v5-nano", R_LLAMA3, IGN | BOS},
    {"dbrx smaug-bpe", R_LLAMA3, 0},
    {"glm4 chatglm-bpe", R_LLAMA3, ASN_PRE_NO_BOS},
    {"jais-2", R_JAIS2, 0},
    {"deepseek-llm", R_DEEPSEEK_LLM, NOC},
    {"deepseek-coder", R_DEEPSEEK_CODER, NOC},
    {"deepseek-v3 hunyuan-dense joyai-llm", R_DEEPSEEK3, NOC},
    {"youtu", R_YOUTU, NOC | IGN},
    {"falcon", R_FALCON, 0},
    {"starcoder refact codeshell exaone minerva-7b mellum2", R_STARCODER, 0},
    {"command-r smollm", R_STARCODER, NOC},
    {"gpt-2 phi-2 jina-es jina-de gigachat jina-v2-es jina-v2-de a.x-4.0 mellum modern-bert "
     "jina-v1-en jina-v2-code roberta-bpe mpt olmo jais exaone4",
     R_GPT2, 0},
    {"trillion granite-docling", R_GPT2, NOC},
    {"qwen2 deepseek-r1-qwen kormo f2llmv2 hunyuan solar-open", R_QWEN2, NOC},
    {"stablelm2 megrez", R_QWEN2, 0},
    {"grok-2", R_QWEN2, NOC},
    {"qwen35", R_QWEN35, NOC},
    {"poro-chat", R_PORO, NOC},
    {"bloom gpt3-finnish", R_PORO, 0},
    {"viking", R_VIKING, NOC},
    {"tekken", R_TEKKEN, NOC | IGN | BOS},
    {"chameleon", R_CHAMELEON, NOC | BOS},
    {"gpt-4o llama4 kanana2 talkie minimax-m2", R_GPT4O, NOC},
    {"granite-embed-multi-97m", R_GRANITE_EMB_MULTI, NOC | IGN},
    {"bailingmoe bailingmoe2 llada-moe", R_BAILINGMOE, NOC},
    {"seed-coder", R_SEED_CODER, NOC},
    {"laguna", R_LAGUNA, NOC},
    {"exaone-moe", R_EXAONE_MOE, 0},
    {"minicpm5", R_MINICPM5, IGN},
    /* custom digit grouping, Han handling or no byte-level alphabet */
    {"kimi-k2 afmoe tiny_aya cohere2moe superbpe gemma4 granite-embed-multi-311m sarvam-moe whitespace",
     NULL, 0},
};

/* -------------------------------------------------------------- compile */

enum pass_kind { PASS_PCRE_COLLAPSED, PASS_PCRE_UTF, PASS_GPT2, PASS_LLAMA3, PASS_QWEN2, PASS_QWEN35, PASS_NEWLINES };

typedef struct pass {
    enum pass_kind kind;
    pcre2_code *re;
} pass;

struct asn_pretok {
    char *name;
    unsigned flags;
    pass *pass;
    int n_pass;
    int need_collapsed, need_utf;
};

/* Collapsed bytes standing for non-ASCII code points (llama.cpp's values). */
enum { COL_OTHER = 0xD0, COL_NUMBER = 0xD1, COL_LETTER = 0xD2, COL_PUNCT = 0xD3, COL_MARK = 0xD4, COL_SYMBOL = 0xD5 };

/* The \p classes llama.cpp collapses: name, collapsed byte, ASCII members
 * (its table; note '~' is missing from the symbols). */
static const struct ucat_class {
    const char *name;
    int byte;
    const char *ascii;
} UCAT[] = {
    {"\\p{N}", COL_NUMBER, "0-9"},
    {"\\p{L}", COL_LETTER, "A-Za-z"},
    {"\\p{P}", COL_PUNCT, "!-#%-*,-/:-;?-@\\[-\\]_\\{\\}"},
    {"\\p{M}", COL_MARK, ""},
    {"\\p{S}", COL_SYMBOL, "\\$\\+<->\\^`\\|"},
    {"\\p{Lu}", COL_LETTER, "A-Za-z"},
    {"\\p{Ll}", COL_LETTER, "A-Za-z"},
    {"\\p{Lt}", COL_LETTER, "A-Za-z"},
    {"\\p{Lm}", COL_LETTER, "A-Za-z"},
    {"\\p{Lo}", COL_LETTER, "A-Za-z"},
};
#define N_UCAT (sizeof UCAT / sizeof *UCAT)

static int uses_classes(const char *re)
{
    for (size_t k = 0; k < N_UCAT; k++)
        if (strstr(re, UCAT[k].name))
            return 1;
    return 0;
}

/* The pattern over collapsed text: each \p{X} becomes a class of its
 * collapsed byte and ASCII members (bracketed unless already inside []). */
static char *collapse_pattern(const char *re)
{
    size_t n = strlen(re), cap = n * 8 + 64, k = 0;
    char *out = asn_xmalloc(cap);
    int inside = 0;
    for (size_t i = 0; i < n; i++) {
        if (re[i] == '[' && (i == 0 || re[i - 1] != '\\')) {
            out[k++] = '[';
            inside = 1;
            continue;
        }
        if (inside && re[i] == ']' && re[i - 1] != '\\') {
            out[k++] = ']';
            inside = 0;
            continue;
        }
        const struct ucat_class *c = NULL;
        for (size_t u = 0; u < N_UCAT && re[i] == '\\'; u++)
            if (!strncmp(re + i, UCAT[u].name, strlen(UCAT[u].name)))
                c = &UCAT[u];
        if (c) {
            k += (size_t)snprintf(out + k, cap - k, "%s\\x%02X%s%s", inside ? "" : "[", c->byte, c->ascii,
                                  inside ? "" : "]");
            i += strlen(c->name) - 1;
            continue;
        }
        out[k++] = re[i];
    }
    out[k] = 0;
    return out;
}

static int compile_pass(pass *p, const char *re, asn_err *e)
{
    static const struct {
        const char *re;
        enum pass_kind kind;
    } custom[] = {
        {P_GPT2, PASS_GPT2},     {P_LLAMA3, PASS_LLAMA3},     {P_LLAMA3_ORIG, PASS_LLAMA3},
        {P_QWEN2, PASS_QWEN2},   {P_QWEN35, PASS_QWEN35},     {P_NEWLINES, PASS_NEWLINES},
    };
    for (size_t i = 0; i < sizeof custom / sizeof *custom; i++)
        if (!strcmp(re, custom[i].re)) {
            p->kind = custom[i].kind;
            return 0;
        }
    char *src = NULL;
    uint32_t opts = PCRE2_DOLLAR_ENDONLY; /* ECMAScript '$': the end only */
    if (uses_classes(re)) {
        p->kind = PASS_PCRE_COLLAPSED;
        src = collapse_pattern(re);
    } else {
        p->kind = PASS_PCRE_UTF;
        src = asn_xstrdup(re);
        opts |= PCRE2_UTF | PCRE2_UCP;
    }
    int err;
    PCRE2_SIZE at;
    p->re = pcre2_compile((PCRE2_SPTR)src, PCRE2_ZERO_TERMINATED, opts, &err, &at, NULL);
    free(src);
    if (!p->re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(err, msg, sizeof msg);
        return asn_err_set(e, "pre-tokenizer regex %s: %s at offset %zu", re, (char *)msg, (size_t)at);
    }
    pcre2_jit_compile(p->re, PCRE2_JIT_COMPLETE); /* falls back to the interpreter if JIT is missing */
    return 0;
}

static int name_in(const char *names, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = names; *p;) {
        const char *end = strchr(p, ' ');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && !memcmp(p, name, n))
            return 1;
        p += len + (end != NULL);
    }
    return 0;
}

asn_pretok *asn_pretok_new(const char *name, asn_err *e)
{
    const char *use = name ? name : "default";
    const struct pre_def *d = NULL;
    for (size_t i = 0; i < sizeof PRE_DEFS / sizeof *PRE_DEFS && !d; i++)
        if (name_in(PRE_DEFS[i].names, use))
            d = &PRE_DEFS[i];
    if (!d)
        return asn_err_set(e, "unknown pre-tokenizer type \"%s\"", use), NULL;
    if (!d->regex)
        return asn_err_set(e, "pre-tokenizer \"%s\" is not supported", use), NULL;
    asn_ucd_init();
    asn_pretok *p = asn_xcalloc(1, sizeof *p);
    p->name = asn_xstrdup(use);
    p->flags = d->flags;
    while (d->regex[p->n_pass])
        p->n_pass++;
    p->pass = asn_xcalloc((size_t)p->n_pass, sizeof *p->pass);
    for (int i = 0; i < p->n_pass; i++) {
        if (compile_pass(&p->pass[i], d->regex[i], e)) {
            asn_pretok_free(p);
            return NULL;
        }
        p->need_collapsed |= p->pass[i].kind == PASS_PCRE_COLLAPSED;
        p->need_utf |= p->pass[i].kind == PASS_PCRE_UTF;
    }
    return p;
}

void asn_pretok_free(asn_pretok *p)
{
    if (!p)
        return;
    for (int i = 0; i < p->n_pass; i++)
        pcre2_code_free(p->pass[i].re);
    free(p->pass);
    free(p->name);
    free(p);
}

unsigned asn_pretok_flags(const asn_pretok *p) { return p->flags; }
const char *asn_pretok_name(const asn_pretok *p) { return p->name; }

/* -------------------------------------------------------------- scratch */

struct asn_pretok_scratch {
    uint8_t *fl;            /* matcher flags per code point */
    size_t fl_cap;
    unsigned char *col;     /* collapsed text */
    size_t col_cap;
    char *utf;              /* UTF-8 text for PASS_PCRE_UTF */
    size_t utf_cap;
    size_t *boff;           /* byte offset of each code point in utf, n + 1 entries */
    size_t boff_cap;
    asn_pieces tmp;
    pcre2_match_data *md;
    pcre2_match_context *mctx;
    pcre2_jit_stack *jit;
};

asn_pretok_scratch *asn_pretok_scratch_new(void) { return asn_xcalloc(1, sizeof(asn_pretok_scratch)); }

void asn_pretok_scratch_free(asn_pretok_scratch *s)
{
    if (!s)
        return;
    free(s->fl);
    free(s->col);
    free(s->utf);
    free(s->boff);
    free(s->tmp.len);
    pcre2_match_data_free(s->md);
    pcre2_match_context_free(s->mctx);
    pcre2_jit_stack_free(s->jit);
    free(s);
}

static void push_len(asn_pieces *p, size_t len)
{
    if (!len)
        return;
    asn_grow((void **)&p->len, &p->cap, p->n + 1, sizeof *p->len);
    p->len[p->n++] = len;
}

/* ------------------------------------------------- hand-written matchers */

/* Matcher flags of a code point; 0 outside the piece being split. */
enum { F_L = 1, F_N = 2, F_M = 4, F_WS = 8, F_IN = 16 };

typedef struct span {
    const uint32_t *cp;
    const uint8_t *fl;
    size_t ini, end;  /* the piece: [ini, end) */
    size_t prev;      /* end of the last piece emitted */
    asn_pieces *out;
} span;

static inline unsigned fl_at(const span *s, size_t pos) { return pos >= s->ini && pos < s->end ? s->fl[pos] : 0; }
#define OUT_OF_RANGE 0xFFFFFFFFu
static inline uint32_t cp_at(const span *s, size_t pos) { return pos >= s->ini && pos < s->end ? s->cp[pos] : OUT_OF_RANGE; }

/* Emits [prev, end) and returns its length. */
static size_t emit(span *s, size_t end)
{
    size_t len = end - s->prev;
    push_len(s->out, len);
    s->prev = end;
    return len;
}

static inline uint32_t ascii_lower(uint32_t c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

/* 's 't 're 've 'm 'll 'd at pos (case-folded or not): its length, or 0. */
static size_t contraction(const span *s, size_t pos, int fold)
{
    if (s->cp[pos] != '\'' || pos + 1 >= s->end)
        return 0;
    uint32_t a = cp_at(s, pos + 1);
    if (fold)
        a = ascii_lower(a);
    if (a == 's' || a == 't' || a == 'm' || a == 'd')
        return 2;
    if (pos + 2 >= s->end)
        return 0;
    uint32_t b = cp_at(s, pos + 2);
    if (fold)
        b = ascii_lower(b);
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l'))
        return 3;
    return 0;
}

/* Whitespace run at pos; *last_nl = end of its last CR/LF (0 if none). */
static size_t ws_run(const span *s, size_t pos, size_t *last_nl)
{
    size_t n = 0;
    *last_nl = 0;
    while (fl_at(s, pos + n) & F_WS) {
        uint32_t c = s->cp[pos + n];
        if (c == '\r' || c == '\n')
            *last_nl = pos + n + 1;
        n++;
    }
    return n;
}

/* The last alternatives of both matchers, at a run of nws whitespace
 * characters: \s+(?!\S) takes all but the last one when more text follows,
 * \s+ all of them; no whitespace: no match, one character is a piece of
 * its own. Returns the new position. */
static size_t space_tail(span *s, size_t pos, size_t nws)
{
    if (nws > 1 && cp_at(s, pos + nws) != OUT_OF_RANGE)
        pos += nws - 1;
    else
        pos += nws ? nws : 1;
    emit(s, pos);
    return pos;
}

/* 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S) */
static void split_gpt2(span *s)
{
    for (size_t pos = s->ini; pos < s->end;) {
        uint32_t c = s->cp[pos];
        size_t k = contraction(s, pos, 0);
        if (k) {
            pos += emit(s, pos + k);
            continue;
        }
        unsigned f2 = c == ' ' ? fl_at(s, pos + 1) : fl_at(s, pos);
        if (f2 & F_L) {
            pos += c == ' ';
            while (fl_at(s, pos) & F_L)
                pos++;
            emit(s, pos);
            continue;
        }
        if (f2 & F_N) {
            pos += c == ' ';
            while (fl_at(s, pos) & F_N)
                pos++;
            emit(s, pos);
            continue;
        }
        if (!(f2 & (F_WS | F_L | F_N)) && (f2 & F_IN)) {
            pos += c == ' ';
            for (unsigned f = fl_at(s, pos); !(f & (F_WS | F_L | F_N)) && (f & F_IN); f = fl_at(s, ++pos))
                ;
            emit(s, pos);
            continue;
        }
        size_t last_nl, nws = ws_run(s, pos, &last_nl);
        pos = space_tail(s, pos, nws);
    }
}

/* llama3 (max_digits 3, letters \p{L}), qwen2 (1, \p{L}), qwen3.5 (1,
 * [\p{L}\p{M}]):
 * (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?LETTERS+|\p{N}{1,max}|
 *  ?[^\s LETTERS \p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+ */
static void split_llama3(span *s, size_t max_digits, unsigned letter)
{
    for (size_t pos = s->ini; pos < s->end;) {
        uint32_t c = s->cp[pos];
        unsigned f = fl_at(s, pos);
        size_t k = contraction(s, pos, 1);
        if (k) {
            pos += emit(s, pos + k);
            continue;
        }
        if (!(c == '\r' || c == '\n' || (f & F_N)) && ((f & letter) || (fl_at(s, pos + 1) & letter))) {
            pos++;
            while (fl_at(s, pos) & letter)
                pos++;
            emit(s, pos);
            continue;
        }
        if (f & F_N) {
            size_t ini = pos;
            while (fl_at(s, pos) & F_N)
                if (++pos - ini >= max_digits) {
                    emit(s, pos);
                    ini = pos;
                }
            emit(s, pos);
            continue;
        }
        unsigned f2 = c == ' ' ? fl_at(s, pos + 1) : f;
        if (!(f2 & (F_WS | letter | F_N)) && (f & F_IN)) {
            pos += c == ' ';
            while (!(f2 & (F_WS | letter | F_N)) && (f2 & F_IN))
                f2 = fl_at(s, ++pos);
            for (uint32_t c2 = cp_at(s, pos); c2 == '\r' || c2 == '\n'; c2 = cp_at(s, ++pos))
                ;
            emit(s, pos);
            continue;
        }
        size_t last_nl, nws = ws_run(s, pos, &last_nl);
        if (last_nl) { /* \s*[\r\n]+ */
            pos = last_nl;
            emit(s, pos);
            continue;
        }
        pos = space_tail(s, pos, nws);
    }
}

/* [^\n]+|[\n]+ : runs of newlines and runs of anything else */
static void split_newlines(span *s)
{
    for (size_t pos = s->ini; pos < s->end;) {
        int nl = s->cp[pos] == '\n';
        while (pos < s->end && (s->cp[pos] == '\n') == nl)
            pos++;
        emit(s, pos);
    }
}

/* ---------------------------------------------------------------- PCRE2 */

static int pcre_error(int rc, asn_err *e)
{
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(rc, msg, sizeof msg);
    return asn_err_set(e, "pre-tokenizer: regex match failed: %s", (char *)msg);
}

static int pcre_match(const pass *p, const unsigned char *subj, size_t len, size_t start,
                      asn_pretok_scratch *s, asn_err *e)
{
    uint32_t opts = p->kind == PASS_PCRE_UTF ? PCRE2_NO_UTF_CHECK : 0;
    int rc = pcre2_match(p->re, subj, len, start, opts, s->md, s->mctx);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT && !s->jit) {
        /* a long run of one class: give JIT a bigger stack and try again */
        s->jit = pcre2_jit_stack_create(32 * 1024, 512 * 1024 * 1024, NULL);
        s->mctx = pcre2_match_context_create(NULL);
        if (!s->jit || !s->mctx)
            return asn_err_set(e, "pre-tokenizer: out of memory for the regex stack");
        pcre2_jit_stack_assign(s->mctx, NULL, s->jit);
        rc = pcre2_match(p->re, subj, len, start, opts, s->md, s->mctx);
    }
    if (rc < 0 && rc != PCRE2_ERROR_NOMATCH)
        return pcre_error(rc, e);
    return rc;
}

/* Code point index of a byte offset of s->utf (a character boundary). */
static size_t cp_of_byte(const asn_pretok_scratch *s, size_t n, size_t b)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (s->boff[mid] < b)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* One regex over the piece [ini, end): matches and the text between them. */
static int split_pcre(const pass *p, size_t ini, size_t end, size_t n, asn_pretok_scratch *s, asn_pieces *out,
                      asn_err *e)
{
    int utf = p->kind == PASS_PCRE_UTF;
    const unsigned char *subj = utf ? (const unsigned char *)s->utf + s->boff[ini] : s->col + ini;
    size_t len = utf ? s->boff[end] - s->boff[ini] : end - ini;
    size_t at = 0, prev = 0; /* bytes into the piece */
    while (at <= len) {
        int rc = pcre_match(p, subj, len, at, s, e);
        if (rc < 0) {
            if (rc == PCRE2_ERROR_NOMATCH)
                break;
            return -1;
        }
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(s->md);
        size_t ms = ov[0], me = ov[1];
        if (me <= ms) { /* empty match (no supported pattern has one): move on */
            if (ms >= len)
                break;
            at = ms + 1;
            while (utf && at < len && (subj[at] & 0xC0) == 0x80)
                at++;
            continue;
        }
        if (utf) {
            size_t base = s->boff[ini];
            size_t cs = cp_of_byte(s, n, base + ms), ce = cp_of_byte(s, n, base + me), cpv = cp_of_byte(s, n, base + prev);
            push_len(out, cs - cpv);
            push_len(out, ce - cs);
        } else {
            push_len(out, ms - prev);
            push_len(out, me - ms);
        }
        prev = at = me;
    }
    if (prev < len)
        push_len(out, utf ? end - cp_of_byte(s, n, s->boff[ini] + prev) : len - prev);
    return 0;
}

/* ---------------------------------------------------------------- split */

static void build_texts(const asn_pretok *p, const uint32_t *cps, size_t n, asn_pretok_scratch *s)
{
    if (p->need_collapsed) {
        asn_grow((void **)&s->col, &s->col_cap, n + 1, 1);
        for (size_t i = 0; i < n; i++) {
            uint32_t c = cps[i];
            if (c < 128) {
                s->col[i] = (unsigned char)c;
                continue;
            }
            uint8_t u = asn_ucd(c);
            static const unsigned char by_cat[8] = {COL_OTHER, COL_NUMBER, COL_LETTER, COL_OTHER,
                                                    COL_MARK,  COL_PUNCT,  COL_SYMBOL, COL_OTHER};
            s->col[i] = (u & ASN_UC_SPACE) ? 0x0B : by_cat[u & ASN_UC_CAT_MASK];
        }
    }
    if (p->need_utf) {
        asn_grow((void **)&s->utf, &s->utf_cap, 4 * n + 1, 1);
        asn_grow((void **)&s->boff, &s->boff_cap, n + 1, sizeof *s->boff);
        size_t b = 0;
        for (size_t i = 0; i < n; i++) {
            uint32_t c = cps[i];
            if (c >= 0x80 && (asn_ucd(c) & ASN_UC_SPACE))
                c = 0x0B; /* as llama.cpp: std::wregex's \s knows only ASCII */
            else if (c >= 0xD800 && c <= 0xDFFF)
                c = 0xE000; /* PCRE2 cannot hold surrogates; any class-less character does */
            s->boff[i] = b;
            b += (size_t)asn_utf8_encode(c, s->utf + b);
        }
        s->boff[n] = b;
    }
}

int asn_pretok_split(const asn_pretok *p, const uint32_t *cps, size_t n, asn_pieces *out, asn_pretok_scratch *s,
                     asn_err *e)
{
    out->n = 0;
    if (!n)
        return 0;
    asn_grow((void **)&s->fl, &s->fl_cap, n, 1);
    for (size_t i = 0; i < n; i++) {
        uint8_t u = asn_ucd(cps[i]), c = u & ASN_UC_CAT_MASK;
        s->fl[i] = (uint8_t)(F_IN | (c == ASN_UC_LETTER ? F_L : 0) | (c == ASN_UC_NUMBER ? F_N : 0) |
                             (c == ASN_UC_MARK ? F_M : 0) | ((u & ASN_UC_SPACE) ? F_WS : 0));
    }
    build_texts(p, cps, n, s);
    if ((p->need_collapsed || p->need_utf) && !s->md) {
        s->md = pcre2_match_data_create(4, NULL);
    }

    /* pieces of the previous pass in cur, of this one in nxt */
    asn_pieces *cur = &s->tmp, *nxt = out;
    cur->n = 0;
    push_len(cur, n);
    for (int i = 0; i < p->n_pass; i++) {
        nxt->n = 0;
        size_t start = 0;
        for (size_t k = 0; k < cur->n; k++) {
            size_t end = start + cur->len[k];
            span sp = {cps, s->fl, start, end, start, nxt};
            switch (p->pass[i].kind) {
            case PASS_GPT2: split_gpt2(&sp); break;
            case PASS_LLAMA3: split_llama3(&sp, 3, F_L); break;
            case PASS_QWEN2: split_llama3(&sp, 1, F_L); break;
            case PASS_QWEN35: split_llama3(&sp, 1, F_L | F_M); break;
            case PASS_NEWLINES: split_newlines(&sp); break;
            default:
                if (split_pcre(&p->pass[i], start, end, n, s, nxt, e))
                    return -1;
            }
            start = end;
        }
        asn_pieces *t = cur;
        cur = nxt;
        nxt = t;
    }
    if (cur != out) { /* an odd number of swaps left the result in tmp */
        asn_pieces t = *out;
        *out = *cur;
        *cur = t;
    }
    return 0;
}
