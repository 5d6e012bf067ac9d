/* test_tokenizer.c — the tokenizers against llama.cpp:
 *  1. every test string of every SPM, BPE and WordPiece vocab of tests/data/vocab
 *     (llama.cpp's own vectors, NAME.gguf.inp/.out, tokenized with
 *     add_special = parse_special = false) and the chat-prompt vectors
 *     (NAME.gguf.special.inp/.out, both true), token for token;
 *  2. detokenization round trips where llama.cpp guarantees them;
 *  3. metadata: special ids, flags, the end-of-generation sets;
 *  4. pieces, streaming detokenization across split UTF-8 characters;
 *  5. hand-made vocabs (written with the GGUF writer) for the load errors,
 *     the default pre-tokenizer, BPE fallbacks and special-token rules,
 *     WordPiece's normalizer and word pieces, and the Gemma, Qwen3 turn
 *     tokens (end of generation, space prefix from the metadata);
 *  6. long inputs (no stack or regex limits hit).
 * The vocab files and vectors are copies of llama.cpp's models/ folder;
 * see tests/data/vocab/README.md. */
#include "asn/core.h"
#include "asn/gguf.h"
#include "asn/vocab.h"
#include "t.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char path_buf[4096];
static const char *data_path(const char *name)
{
    const char *root = getenv("ASN_ROOT");
    snprintf(path_buf, sizeof path_buf, "%s/tests/data/vocab/%s", root ? root : ".", name);
    return path_buf;
}

static char *read_all(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *p = asn_xmalloc((size_t)(len > 0 ? len : 0) + 1);
    *n = fread(p, 1, (size_t)len, f);
    p[*n] = 0;
    fclose(f);
    return p;
}

static asn_vocab *load(const char *file)
{
    asn_err e;
    asn_gguf *g = asn_gguf_open(data_path(file), &e);
    if (!g) {
        printf("not ok - open %s: %s\n", file, e.msg);
        t_failed++;
        return NULL;
    }
    asn_vocab *v = asn_vocab_load(g, &e);
    asn_gguf_close(g);
    if (!v) {
        printf("not ok - load %s: %s\n", file, e.msg);
        t_failed++;
    }
    return v;
}

static int32_t *tok(const asn_vocab *v, const char *s, size_t len, int add, int parse, size_t *n)
{
    int32_t *ids;
    asn_err e;
    if (asn_tokenize(v, s, len, add, parse, &ids, n, &e)) {
        printf("# tokenize failed: %s\n", e.msg);
        *n = 0;
        return NULL;
    }
    return ids;
}

/* "1 2 3" of ids, clipped, for messages */
static const char *fmt_ids(const int32_t *ids, size_t n, size_t from, char *buf, size_t cap)
{
    size_t k = 0;
    buf[0] = 0;
    for (size_t i = from; i < n && i < from + 8 && k + 16 < cap; i++)
        k += (size_t)snprintf(buf + k, cap - k, "%s%d", i > from ? " " : "", ids[i]);
    if (n > from + 8 && k + 4 < cap)
        snprintf(buf + k, cap - k, " ...");
    return buf;
}

/* ------------------------------------------------------ llama.cpp vectors */

typedef struct vec {
    char **text;
    size_t *len;
    int32_t **ids;
    size_t *n_ids;
    size_t n;
} vec;

static void vec_free(vec *t)
{
    for (size_t i = 0; i < t->n; i++) {
        free(t->text[i]);
        free(t->ids[i]);
    }
    free(t->text);
    free(t->len);
    free(t->ids);
    free(t->n_ids);
}

/* NAME.inp: tests each followed by "\n__ggml_vocab_test__\n"; NAME.out: one
 * line of space-separated ids per test. */
static int read_vectors(const char *base, vec *t)
{
    static const char sep[] = "\n__ggml_vocab_test__\n";
    char name[512];
    size_t ni = 0, no = 0;
    snprintf(name, sizeof name, "%s.inp", base);
    char *inp = read_all(data_path(name), &ni);
    snprintf(name, sizeof name, "%s.out", base);
    char *out = read_all(data_path(name), &no);
    memset(t, 0, sizeof *t);
    if (!inp || !out) {
        free(inp);
        free(out);
        return -1;
    }
    size_t cap = 0, pos = 0;
    while (pos < ni) {
        char *m = memmem(inp + pos, ni - pos, sep, sizeof sep - 1);
        size_t len = m ? (size_t)(m - (inp + pos)) : ni - pos;
        if (t->n == cap) {
            cap = cap ? 2 * cap : 64;
            t->text = asn_xrealloc(t->text, cap * sizeof *t->text);
            t->len = asn_xrealloc(t->len, cap * sizeof *t->len);
            t->ids = asn_xrealloc(t->ids, cap * sizeof *t->ids);
            t->n_ids = asn_xrealloc(t->n_ids, cap * sizeof *t->n_ids);
        }
        t->text[t->n] = asn_xmalloc(len + 1);
        memcpy(t->text[t->n], inp + pos, len);
        t->text[t->n][len] = 0;
        t->len[t->n] = len;
        t->ids[t->n] = NULL;
        t->n_ids[t->n] = 0;
        t->n++;
        pos += len + (m ? sizeof sep - 1 : 0);
    }
    size_t k = 0;
    char *p = out;
    while (k < t->n && p < out + no) {
        char *nl = memchr(p, '\n', (size_t)(out + no - p));
        if (!nl)
            nl = out + no;
        size_t cnt = 0, capi = 0;
        int32_t *ids = NULL;
        for (char *q = p; q < nl;) {
            while (q < nl && *q == ' ')
                q++;
            if (q >= nl)
                break;
            long id = strtol(q, &q, 10);
            asn_grow((void **)&ids, &capi, cnt + 1, sizeof *ids);
            ids[cnt++] = (int32_t)id;
        }
        t->ids[k] = ids;
        t->n_ids[k] = cnt;
        k++;
        p = nl + 1;
    }
    free(inp);
    free(out);
    return k == t->n ? 0 : -1;
}

/* A test string for a message: escaped, clipped. */
static const char *show(const char *s, size_t n, char *buf, size_t cap)
{
    size_t k = 0;
    for (size_t i = 0; i < n && k + 8 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\n')
            k += (size_t)snprintf(buf + k, cap - k, "\\n");
        else if (c == '\t')
            k += (size_t)snprintf(buf + k, cap - k, "\\t");
        else if (c < 0x20 || c == 0x7F)
            k += (size_t)snprintf(buf + k, cap - k, "\\x%02x", c);
        else
            buf[k++] = (char)c;
        if (k > 40) {
            k += (size_t)snprintf(buf + k, cap - k, "...");
            break;
        }
    }
    buf[k] = 0;
    return buf;
}

static int valid_utf8(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        unsigned c = p[i];
        size_t len = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
        if (!len || i + len > n)
            return 0;
        for (size_t k = 1; k < len; k++)
            if ((p[i + k] & 0xC0) != 0x80)
                return 0;
        i += len;
    }
    return 1;
}

/* concatenated pieces (no cleanup, no space removal, specials rendered) */
static char *concat_pieces(const asn_vocab *v, const int32_t *ids, size_t n, int special, size_t *len)
{
    size_t cap = 64, k = 0;
    char *s = asn_xmalloc(cap);
    for (size_t i = 0; i < n; i++) {
        size_t pl;
        const char *p = asn_vocab_piece(v, ids[i], special, &pl);
        asn_grow((void **)&s, &cap, k + pl + 1, 1);
        if (pl)
            memcpy(s + k, p, pl);
        k += pl;
    }
    s[k] = 0;
    *len = k;
    return s;
}

typedef struct vocab_case {
    const char *file;
    asn_vocab_kind kind;
    int special; /* has .special vectors */
} vocab_case;

static const vocab_case VOCABS[] = {
    {"ggml-vocab-llama-spm.gguf", ASN_VOCAB_SPM, 1},     {"ggml-vocab-phi-3.gguf", ASN_VOCAB_SPM, 1},
    {"ggml-vocab-llama-bpe.gguf", ASN_VOCAB_BPE, 1},     {"ggml-vocab-qwen2.gguf", ASN_VOCAB_BPE, 1},
    {"ggml-vocab-starcoder.gguf", ASN_VOCAB_BPE, 1},     {"ggml-vocab-refact.gguf", ASN_VOCAB_BPE, 0},
    {"ggml-vocab-gpt-2.gguf", ASN_VOCAB_BPE, 0},         {"ggml-vocab-mpt.gguf", ASN_VOCAB_BPE, 0},
    {"ggml-vocab-falcon.gguf", ASN_VOCAB_BPE, 0},        {"ggml-vocab-deepseek-llm.gguf", ASN_VOCAB_BPE, 0},
    {"ggml-vocab-deepseek-coder.gguf", ASN_VOCAB_BPE, 0}, {"ggml-vocab-bert-bge.gguf", ASN_VOCAB_WPM, 0},
};

/* Runs one vector file; returns the number of cases that passed. */
static size_t run_vectors(const asn_vocab *v, const char *file, const char *base, int special, size_t *total)
{
    vec t;
    char name[600], b1[160], b2[160], b3[80];
    if (read_vectors(base, &t)) {
        printf("not ok - %s: vectors %s.inp/.out unreadable or inconsistent\n", file, base);
        t_failed++;
        *total = 0;
        return 0;
    }
    size_t pass = 0;
    for (size_t i = 0; i < t.n; i++) {
        size_t n;
        int32_t *ids = tok(v, t.text[i], t.len[i], special, special, &n);
        size_t at = 0;
        while (at < n && at < t.n_ids[i] && ids[at] == t.ids[i][at])
            at++;
        int ok = n == t.n_ids[i] && at == n;
        snprintf(name, sizeof name, "%s%s case %zu \"%s\"", file, special ? " special" : "", i + 1,
                 show(t.text[i], t.len[i], b3, sizeof b3));
        T_OK(name, ok, "first difference at token %zu of %zu (expected %zu): expected [%s], got [%s]", at, n,
             t.n_ids[i], fmt_ids(t.ids[i], t.n_ids[i], at, b1, sizeof b1), fmt_ids(ids, n, at, b2, sizeof b2));
        pass += ok;
        free(ids);
    }
    *total = t.n;
    vec_free(&t);
    return pass;
}

/* detokenize(tokenize(x)) == x where llama.cpp guarantees it:
 *  - concatenated pieces give back every valid UTF-8 input of a BPE vocab
 *    (byte-level BPE loses nothing; invalid bytes become U+FFFD);
 *  - asn_detokenize gives back every input of an SPM vocab (byte fallback
 *    keeps invalid bytes; the space prefix is removed again), and every
 *    valid input of a BPE vocab without space cleanup (qwen2, deepseek,
 *    ...). BPE vocabs with cleanup (gpt2, llama3, falcon, ...) turn " ,"
 *    into "," and so on, as Hugging Face's decode does: not checked there.
 * Chat prompts (parse_special) do not round-trip in general: SPM re-adds
 * the space prefix after every special token and phi-3's special tokens
 * eat the whitespace after them; they are checked for the BPE vocabs only. */
static void round_trips(const asn_vocab *v, const char *file, const char *base, int special)
{
    vec t;
    if (read_vectors(base, &t))
        return;
    size_t checked = 0, bad = 0;
    char why[400] = "", b3[80];
    int spm = asn_vocab_kind_of(v) == ASN_VOCAB_SPM;
    int cleans = 0;
    {
        /* does this vocab clean spaces? "a ," comes back as "a," then */
        size_t n, len;
        char *out;
        asn_err e;
        int32_t *ids = tok(v, "a ,", 3, 0, 0, &n);
        if (!asn_detokenize(v, ids, n, 0, 0, &out, &len, &e)) {
            cleans = len == 2;
            free(out);
        }
        free(ids);
    }
    if (special && spm) {
        vec_free(&t);
        return;
    }
    for (size_t i = 0; i < t.n; i++) {
        int utf8 = valid_utf8(t.text[i], t.len[i]);
        size_t n;
        int32_t *ids = tok(v, t.text[i], t.len[i], special, special, &n);
        if (!spm && utf8) {
            size_t len;
            size_t skip = special && n && ids[0] == asn_vocab_bos(v) && asn_vocab_add_bos(v);
            char *s = concat_pieces(v, ids + skip, n - skip, 1, &len);
            checked++;
            if (len != t.len[i] || memcmp(s, t.text[i], len)) {
                if (!bad++)
                    snprintf(why, sizeof why, "pieces of case %zu \"%s\" concatenate to \"%s\"", i + 1,
                             show(t.text[i], t.len[i], b3, sizeof b3), s);
            }
            free(s);
        }
        if ((spm || (utf8 && !cleans)) && !special) {
            char *out;
            size_t len;
            asn_err e;
            checked++;
            if (asn_detokenize(v, ids, n, 0, 0, &out, &len, &e) || len != t.len[i] || memcmp(out, t.text[i], len)) {
                if (!bad++)
                    snprintf(why, sizeof why, "case %zu \"%s\" detokenizes to something else", i + 1,
                             show(t.text[i], t.len[i], b3, sizeof b3));
            }
            free(out);
        }
        free(ids);
    }
    char name[600];
    snprintf(name, sizeof name, "%s%s: %zu round trips give the input back", file, special ? " special" : "",
             checked);
    T_OK(name, !bad && checked > 0, "%zu failed; first: %s", bad, why);
    vec_free(&t);
}

static void test_vectors(void)
{
    size_t grand = 0, grand_pass = 0;
    for (size_t k = 0; k < sizeof VOCABS / sizeof *VOCABS; k++) {
        const vocab_case *c = &VOCABS[k];
        asn_vocab *v = load(c->file);
        if (!v)
            continue;
        char name[600];
        snprintf(name, sizeof name, "%s is %s", c->file,
                 c->kind == ASN_VOCAB_SPM ? "SPM" : c->kind == ASN_VOCAB_BPE ? "BPE" : "WPM");
        T_EQ_INT(name, asn_vocab_kind_of(v), c->kind);
        size_t total, pass = run_vectors(v, c->file, c->file, 0, &total);
        printf("# %s: %zu/%zu\n", c->file, pass, total);
        grand += total, grand_pass += pass;
        if (c->kind != ASN_VOCAB_WPM) /* WordPiece lowercases and drops accents and spaces */
            round_trips(v, c->file, c->file, 0);
        if (c->special) {
            char base[600];
            snprintf(base, sizeof base, "%s.special", c->file);
            pass = run_vectors(v, c->file, base, 1, &total);
            printf("# %s special: %zu/%zu\n", c->file, pass, total);
            grand += total, grand_pass += pass;
            round_trips(v, c->file, base, 1);
        }
        asn_vocab_free(v);
    }
    printf("# all vectors: %zu/%zu\n", grand_pass, grand);
}

/* ------------------------------------------------------------ metadata */

static int has_eog(const asn_vocab *v, const int32_t *want, size_t n_want, char *why, size_t cap)
{
    const int32_t *ids;
    size_t n = asn_vocab_eog_ids(v, &ids), k = 0;
    for (size_t i = 0; i < n; i++)
        k += (size_t)snprintf(why + k, k < cap ? cap - k : 0, "%d ", ids[i]);
    for (size_t i = 0; i < n_want; i++)
        if (!asn_vocab_is_eog(v, want[i]))
            return 0;
    for (size_t i = 1; i < n; i++)
        if (ids[i - 1] >= ids[i])
            return 0;
    return 1;
}

static void test_metadata(void)
{
    char why[512];
    asn_vocab *v = load("ggml-vocab-llama-spm.gguf");
    if (v) {
        T_EQ_INT("llama-spm: 32000 tokens", asn_vocab_n_tokens(v), 32000);
        T_EQ_STR("llama-spm: model", asn_vocab_model(v), "llama");
        T_EQ_INT("llama-spm: bos", asn_vocab_bos(v), 1);
        T_EQ_INT("llama-spm: eos", asn_vocab_eos(v), 2);
        T_EQ_INT("llama-spm: unk", asn_vocab_unk(v), 0);
        T_EQ_INT("llama-spm: add_bos", asn_vocab_add_bos(v), 1);
        T_EQ_INT("llama-spm: add_eos", asn_vocab_add_eos(v), 0);
        T_EQ_INT("llama-spm: add_space_prefix", asn_vocab_add_space_prefix(v), 1);
        T_EQ_INT("llama-spm: no eot", asn_vocab_eot(v), -1);
        int32_t eog[] = {2};
        T_OK("llama-spm: end of generation is </s>", has_eog(v, eog, 1, why, sizeof why) && !asn_vocab_is_eog(v, 1),
             "eog: %s", why);
        T_EQ_STR("llama-spm: text of 1", asn_vocab_text(v, 1, NULL), "<s>");
        T_EQ_INT("llama-spm: type of 0 is UNKNOWN", asn_vocab_type(v, 0), ASN_TOKEN_UNKNOWN);
        T_EQ_INT("llama-spm: type of 3 is BYTE", asn_vocab_type(v, 3), ASN_TOKEN_BYTE);
        T_EQ_INT("llama-spm: type out of range", asn_vocab_type(v, 32000), -1);
        T_OK("llama-spm: text out of range is NULL", asn_vocab_text(v, -1, NULL) == NULL, "not NULL");
        T_EQ_INT("llama-spm: find \"\\u2581Hello\"", asn_vocab_find(v, "\xE2\x96\x81Hello", 8), 15043);
        T_EQ_INT("llama-spm: find a missing text", asn_vocab_find(v, "no such token", 13), -1);
        T_OK("llama-spm: scores are read", asn_vocab_score(v, 15043) < 0 && asn_vocab_score(v, 15043) > -100000,
             "score %g", asn_vocab_score(v, 15043));
        T_OK("llama-spm: <s> is control", asn_vocab_is_control(v, 1) && !asn_vocab_is_control(v, 15043), "no");
        asn_vocab_free(v);
    }
    v = load("ggml-vocab-phi-3.gguf");
    if (v) {
        int32_t eog[] = {2, 32000, 32007};
        T_OK("phi-3: </s>, <|endoftext|> and <|end|> end a generation", has_eog(v, eog, 3, why, sizeof why),
             "eog: %s", why);
        T_EQ_INT("phi-3: eot is <|end|>", asn_vocab_eot(v), 32007);
        uint32_t a = asn_vocab_attr(v, 2);
        T_OK("phi-3: </s> is user-defined, forced control, rstrip",
             (a & ASN_TATTR_USER_DEFINED) && (a & ASN_TATTR_CONTROL) && (a & ASN_TATTR_RSTRIP), "attr 0x%x", a);
        T_OK("phi-3: <|user|> eats whitespace after it", asn_vocab_attr(v, 32010) & ASN_TATTR_RSTRIP, "attr 0x%x",
             asn_vocab_attr(v, 32010));
        T_OK("phi-3: <s> and <|endoftext|> do not", !(asn_vocab_attr(v, 1) & ASN_TATTR_RSTRIP) &&
             !(asn_vocab_attr(v, 32000) & ASN_TATTR_RSTRIP), "attrs 0x%x 0x%x", asn_vocab_attr(v, 1),
             asn_vocab_attr(v, 32000));
        asn_vocab_free(v);
    }
    v = load("ggml-vocab-llama-bpe.gguf");
    if (v) {
        T_EQ_STR("llama-bpe: pre", asn_vocab_pre(v), "llama-bpe");
        T_EQ_INT("llama-bpe: bos", asn_vocab_bos(v), 128000);
        T_EQ_INT("llama-bpe: eos", asn_vocab_eos(v), 128001);
        T_EQ_INT("llama-bpe: eot is <|eot_id|>", asn_vocab_eot(v), 128009);
        T_EQ_INT("llama-bpe: add_bos", asn_vocab_add_bos(v), 1);
        T_EQ_INT("llama-bpe: no space prefix", asn_vocab_add_space_prefix(v), 0);
        int32_t eog[] = {128001, 128009};
        T_OK("llama-bpe: 128001 and 128009 end a generation", has_eog(v, eog, 2, why, sizeof why) &&
             !asn_vocab_is_eog(v, 128000) && !asn_vocab_is_eog(v, 128006), "eog: %s", why);
        asn_vocab_free(v);
    }
    v = load("ggml-vocab-qwen2.gguf");
    if (v) {
        T_EQ_INT("qwen2: add_bos false", asn_vocab_add_bos(v), 0);
        T_EQ_INT("qwen2: eos <|im_end|>", asn_vocab_eos(v), 151645);
        T_EQ_INT("qwen2: eot <|im_end|>", asn_vocab_eot(v), 151645);
        int32_t eog[] = {151643, 151645, 151662, 151663, 151664};
        T_OK("qwen2: endoftext, im_end and the FIM pad/repo/file-sep tokens end a generation",
             has_eog(v, eog, 5, why, sizeof why) && !asn_vocab_is_eog(v, 151644), "eog: %s", why);
        T_EQ_INT("qwen2: <think> is user-defined", asn_vocab_type(v, 151667), ASN_TOKEN_USER_DEFINED);
        T_EQ_INT("qwen2: [PAD] fillers are unused", asn_vocab_type(v, 151900), ASN_TOKEN_UNUSED);
        asn_vocab_free(v);
    }
}

/* ------------------------------------------------------------- pieces */

static void test_pieces(void)
{
    char buf[64];
    asn_vocab *v = load("ggml-vocab-llama-spm.gguf");
    if (v) {
        int n = asn_token_to_piece(v, 15043, 0, buf, sizeof buf);
        T_OK("spm piece: \\u2581Hello is \" Hello\"", n == 6 && !memcmp(buf, " Hello", 6), "n %d", n);
        n = asn_token_to_piece(v, 13, 0, buf, sizeof buf);
        T_OK("spm piece: <0x0A> is a newline byte", n == 1 && buf[0] == '\n', "n %d", n);
        n = asn_token_to_piece(v, 3 + 0xF0, 0, buf, sizeof buf);
        T_OK("spm piece: <0xF0> is the byte 0xF0", n == 1 && (unsigned char)buf[0] == 0xF0, "n %d", n);
        T_EQ_INT("spm piece: <s> is empty unless rendered", asn_token_to_piece(v, 1, 0, buf, sizeof buf), 0);
        n = asn_token_to_piece(v, 1, 1, buf, sizeof buf);
        T_OK("spm piece: <s> rendered", n == 3 && !memcmp(buf, "<s>", 3), "n %d", n);
        T_EQ_INT("spm piece: <unk> is empty unless rendered", asn_token_to_piece(v, 0, 0, buf, sizeof buf), 0);
        T_EQ_INT("spm piece: too small a buffer gives minus the length", asn_token_to_piece(v, 15043, 0, buf, 3), -6);
        T_EQ_INT("spm piece: an id out of range is empty", asn_token_to_piece(v, 99999, 1, buf, sizeof buf), 0);

        char *out;
        size_t len;
        asn_err e;
        int32_t ids[] = {1, 15043, 3186};
        asn_detokenize(v, ids, 3, 1, 0, &out, &len, &e);
        T_EQ_STR("spm detokenize, BOS removed: the leading space stays", out, " Hello world");
        free(out);
        asn_detokenize(v, ids + 1, 2, 0, 0, &out, &len, &e);
        T_EQ_STR("spm detokenize without BOS: the leading space goes", out, "Hello world");
        free(out);
        asn_detokenize(v, ids, 3, 0, 1, &out, &len, &e);
        T_EQ_STR("spm detokenize, BOS rendered", out, "<s> Hello world");
        free(out);
        int32_t bad[] = {15043, 32000};
        int rc = asn_detokenize(v, bad, 2, 0, 0, &out, &len, &e);
        T_OK("spm detokenize: an id out of range is an error", rc == -1 && strstr(e.msg, "32000") && !out,
             "rc %d: %s", rc, e.msg);

        /* streaming: a character cut across byte tokens comes out whole */
        size_t n_ids;
        int32_t *t = tok(v, "a \xF0\x9F\xA6\x99 b\xC3\xA9", 10, 0, 0, &n_ids);
        asn_detok_stream st;
        asn_detok_stream_init(&st, v, 0);
        size_t cap = asn_vocab_max_piece(v) + 4, k = 0;
        char *sb = malloc(cap), acc[64];
        int ok = n_ids <= 16;
        for (size_t i = 0; ok && i < n_ids; i++) {
            int w = asn_detok_stream_push(&st, t[i], sb, cap);
            ok = w >= 0 && k + (size_t)w < sizeof acc;
            if (ok)
                memcpy(acc + k, sb, (size_t)w), k += (size_t)w;
            /* nothing is written between the first and the last byte of the emoji */
            ok = ok && (k == 0 || (unsigned char)acc[k - 1] < 0x80 || (unsigned char)acc[k - 1] >= 0xC0 ||
                        acc[k - 1] == '\x99' || acc[k - 1] == '\xA9');
        }
        int fl = asn_detok_stream_flush(&st, sb, cap);
        T_OK("stream: whole characters only, same bytes as the pieces", ok && fl == 0 && k == 11 &&
             !memcmp(acc, " a \xF0\x9F\xA6\x99 b\xC3\xA9", 11), "k %zu fl %d", k, fl);
        T_EQ_INT("stream: too small a buffer is refused", asn_detok_stream_push(&st, 15043, sb, 2), -1);
        asn_detok_stream_init(&st, v, 0);
        int w1 = asn_detok_stream_push(&st, 3 + 0xC3, sb, cap);
        int w2 = asn_detok_stream_flush(&st, sb, cap);
        T_OK("stream: flush writes an unfinished character's bytes", w1 == 0 && w2 == 1 &&
             (unsigned char)sb[0] == 0xC3, "%d %d", w1, w2);
        free(sb);
        free(t);
        asn_vocab_free(v);
    }
    v = load("ggml-vocab-gpt-2.gguf");
    if (v) {
        size_t n, len;
        char *out;
        asn_err e;
        int32_t *t = tok(v, "Hello , world . It ' s here 's", 30, 0, 0, &n);
        asn_detokenize(v, t, n, 0, 0, &out, &len, &e);
        T_EQ_STR("gpt-2 detokenize cleans up spaces as llama.cpp", out, "Hello, world. It's here's");
        free(out);
        free(t);
        int k = asn_token_to_piece(v, 50256, 0, NULL, 0);
        T_EQ_INT("gpt-2: <|endoftext|> is empty unless rendered", k, 0);
        asn_vocab_free(v);
    }
    v = load("ggml-vocab-qwen2.gguf");
    if (v) {
        size_t n, len;
        char *out;
        asn_err e;
        int32_t *t = tok(v, "Hello , world", 13, 0, 0, &n);
        asn_detokenize(v, t, n, 0, 0, &out, &len, &e);
        T_EQ_STR("qwen2 detokenize keeps spaces (no cleanup)", out, "Hello , world");
        free(out);
        free(t);
        asn_vocab_free(v);
    }
}

/* --------------------------------------------------- hand-made vocabs */

static char tmp_dir[] = "/tmp/asn-test-tokenizer-XXXXXX";

/* Writes w to NAME.gguf in the temporary folder and loads its vocab. */
static asn_vocab *write_load(asn_gguf_writer *w, const char *name, asn_err *e)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s.gguf", tmp_dir, name);
    int rc = asn_gguf_write(w, path, e);
    asn_gguf_writer_free(w);
    if (rc)
        return NULL;
    asn_gguf *g = asn_gguf_open(path, e);
    if (!g)
        return NULL;
    asn_vocab *v = asn_vocab_load(g, e);
    asn_gguf_close(g);
    return v;
}

/* Writes a vocab GGUF; keys with NULL values are left out. */
static asn_vocab *made(const char *name, const char *model, const char *pre, const char *const *toks, size_t n,
                       const float *scores, size_t n_scores, const int32_t *types, const char *const *merges,
                       size_t n_merges, asn_err *e)
{
    asn_gguf_writer *w = asn_gguf_writer_new();
    asn_gguf_set_str(w, "general.architecture", "llama");
    if (model)
        asn_gguf_set_str(w, "tokenizer.ggml.model", model);
    if (pre)
        asn_gguf_set_str(w, "tokenizer.ggml.pre", pre);
    if (toks)
        asn_gguf_set_arr_str(w, "tokenizer.ggml.tokens", toks, n);
    if (scores)
        asn_gguf_set_arr_f32(w, "tokenizer.ggml.scores", scores, n_scores);
    if (types)
        asn_gguf_set_arr_i32(w, "tokenizer.ggml.token_type", types, n);
    if (merges)
        asn_gguf_set_arr_str(w, "tokenizer.ggml.merges", merges, n_merges);
    return write_load(w, name, e);
}

static void expect_load_error(const char *name, asn_vocab *v, const asn_err *e, const char *want)
{
    T_OK(name, !v && strstr(e->msg, want), "expected an error with \"%s\", got %s", want, v ? "a vocab" : e->msg);
    asn_vocab_free(v);
}

/* The byte-level alphabet as token texts (256 tokens, id = byte's rank). */
static char **byte_alphabet(size_t extra, size_t *n)
{
    char **t = asn_xcalloc(256 + extra, sizeof *t);
    int k = 0;
    for (int b = 0; b < 256; b++) {
        int printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
        unsigned cp = printable ? (unsigned)b : 0x100u + (unsigned)k++;
        t[b] = asn_xmalloc(4);
        if (cp < 0x80) {
            t[b][0] = (char)cp, t[b][1] = 0;
        } else {
            t[b][0] = (char)(0xC0 | (cp >> 6)), t[b][1] = (char)(0x80 | (cp & 0x3F)), t[b][2] = 0;
        }
    }
    *n = 256;
    return t;
}

static void free_strs(char **t, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(t[i]);
    free(t);
}


/* tokenize(text) must be exactly want[0..n_want) */
static void expect_ids(const char *name, const asn_vocab *v, const char *text, size_t len, int add, int parse,
                       const int32_t *want, size_t n_want)
{
    char b1[160], b2[160];
    size_t n;
    int32_t *ids = tok(v, text, len, add, parse, &n);
    T_OK(name, n == n_want && (!n || !memcmp(ids, want, n * sizeof *ids)), "expected [%s], got [%s]",
         fmt_ids(want, n_want, 0, b1, sizeof b1), fmt_ids(ids, n, 0, b2, sizeof b2));
    free(ids);
}
#define IDS(...) (const int32_t[]){__VA_ARGS__}, sizeof((const int32_t[]){__VA_ARGS__}) / sizeof(int32_t)

/* WordPiece by the rules of BERT's tokenizer as llama.cpp runs it on a
 * converted vocab (word-initial pieces carry U+2581, continuations are
 * bare): each expectation below is worked out by hand from those rules. */
static const char *const WPM_TOKS[] = {
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "\xE2\x96\x81hello", "\xE2\x96\x81he", "llo", "ll", "o",
    "\xE2\x96\x81" "cafe", "\xE2\x96\x81,", "\xE2\x96\x81\xE4\xB8\xAD", "\xE2\x96\x81!", "\xE2\x96\x81world",
    "\xE2\x96\x81" "a", "\xE2\x96\x81$", "\xE2\x96\x81Hello", "s", "\xE2\x96\x81" "caf\xC3\xA9",
    "\xE2\x96\x81\xE1\x84\x92",
};
#define N_WPM (sizeof WPM_TOKS / sizeof *WPM_TOKS)

static asn_vocab *made_wpm(const char *name, int lowercase, int strip_accents, int with_cls, asn_err *e)
{
    int32_t types[N_WPM];
    for (size_t i = 0; i < N_WPM; i++)
        types[i] = i < 5 ? ASN_TOKEN_CONTROL : ASN_TOKEN_NORMAL;
    asn_gguf_writer *w = asn_gguf_writer_new();
    asn_gguf_set_str(w, "general.architecture", "bert");
    asn_gguf_set_str(w, "tokenizer.ggml.model", "bert");
    asn_gguf_set_str(w, "tokenizer.ggml.pre", "default");
    asn_gguf_set_arr_str(w, "tokenizer.ggml.tokens", WPM_TOKS, N_WPM);
    asn_gguf_set_arr_i32(w, "tokenizer.ggml.token_type", types, N_WPM);
    asn_gguf_set_u32(w, "tokenizer.ggml.unknown_token_id", 1);
    asn_gguf_set_u32(w, "tokenizer.ggml.seperator_token_id", 3);
    asn_gguf_set_u32(w, "tokenizer.ggml.padding_token_id", 0);
    asn_gguf_set_u32(w, "tokenizer.ggml.mask_token_id", 4);
    if (with_cls)
        asn_gguf_set_u32(w, "tokenizer.ggml.cls_token_id", 2);
    if (lowercase >= 0)
        asn_gguf_set_bool(w, "tokenizer.ggml.normalizer.lowercase", lowercase);
    if (strip_accents >= 0)
        asn_gguf_set_bool(w, "tokenizer.ggml.normalizer.strip_accents", strip_accents);
    return write_load(w, name, e);
}

static void test_wpm_made(void)
{
    asn_err e;
    asn_vocab *v = made_wpm("wpm", -1, -1, 1, &e);
    T_OK("hand-made WordPiece vocab loads", v != NULL, "%s", v ? "" : e.msg);
    if (!v)
        return;
    T_EQ_INT("wpm: kind", asn_vocab_kind_of(v), ASN_VOCAB_WPM);
    T_EQ_INT("wpm: cls_token_id is the BOS (the default 101 is past the vocab)", asn_vocab_bos(v), 2);
    T_EQ_INT("wpm: sep", asn_vocab_sep(v), 3);
    T_EQ_INT("wpm: unk", asn_vocab_unk(v), 1);
    T_EQ_INT("wpm: no eos", asn_vocab_eos(v), -1);
    T_EQ_INT("wpm: add_bos", asn_vocab_add_bos(v), 1);
    T_EQ_INT("wpm: no space prefix", asn_vocab_add_space_prefix(v), 0);
    T_EQ_STR("wpm: no pre-tokenizer", asn_vocab_pre(v), "default");
    expect_ids("wpm: [CLS], lowercased words, punctuation alone, [SEP]", v, "Hello, world!", 13, 1, 0,
               IDS(2, 5, 11, 14, 13, 3));
    expect_ids("wpm: no [CLS]/[SEP] without add_special", v, "hello", 5, 0, 0, IDS(5));
    expect_ids("wpm: longest match first, then a continuation", v, "hellos", 6, 0, 0, IDS(5, 18));
    expect_ids("wpm: continuations chain", v, "HELLOLLO", 8, 0, 0, IDS(5, 7));
    expect_ids("wpm: a word that cannot be cut to its end is one [UNK]", v, "helo world", 10, 0, 0, IDS(1, 14));
    expect_ids("wpm: accents stripped (precomposed)", v, "Caf\xC3\xA9", 5, 0, 0, IDS(10));
    expect_ids("wpm: accents stripped (combining mark)", v, "cafe\xCC\x81", 6, 0, 0, IDS(10));
    /* U+D55C decomposes to U+1112 U+1161 U+11AB; llama.cpp keeps the first */
    expect_ids("wpm: a Hangul syllable becomes its leading consonant (llama.cpp's NFD)", v, "\xED\x95\x9C", 3, 0, 0,
               IDS(20));
    expect_ids("wpm: CJK ideographs are words of their own", v, "\xE4\xB8\xAD\xE6\x96\x87", 6, 0, 0, IDS(12, 1));
    expect_ids("wpm: ASCII symbols split, the rest of the word is unknown", v, "a$b", 3, 0, 0, IDS(15, 16, 1));
    expect_ids("wpm: a format character inside a word is dropped", v, "hel\xE2\x80\x8Blo", 8, 0, 0, IDS(5));
    expect_ids("wpm: NBSP and tab are whitespace", v, "\xC2\xA0hello\thello", 13, 0, 0, IDS(5, 5));
    expect_ids("wpm: an invalid byte (U+FFFD) is dropped", v, "hello\xFF", 6, 0, 0, IDS(5));
    expect_ids("wpm: only whitespace gives no token", v, " \n\t ", 4, 0, 0, (const int32_t[]){0}, 0);
    expect_ids("wpm: [CLS] in the text with parse_special", v, "[CLS] hello", 11, 1, 1, IDS(2, 2, 5, 3));
    expect_ids("wpm: [CLS] in the text as words without it", v, "[CLS]", 5, 0, 0, IDS(1, 1, 1));

    int32_t ids[] = {2, 5, 11, 14, 13, 3};
    char *out;
    size_t len;
    asn_detokenize(v, ids, 6, 1, 0, &out, &len, &e);
    T_EQ_STR("wpm detokenize: [CLS] removed, U+2581 as spaces, space before , and ! cleaned", out, " hello, world!");
    free(out);
    asn_detokenize(v, ids, 6, 0, 1, &out, &len, &e);
    T_EQ_STR("wpm detokenize: special tokens rendered", out, "[CLS] hello, world![SEP]");
    free(out);
    int32_t ids2[] = {5, 7, 18};
    asn_detokenize(v, ids2, 3, 1, 0, &out, &len, &e);
    T_EQ_STR("wpm detokenize: continuations join the word", out, " hellollos");
    free(out);
    asn_vocab_free(v);

    v = made_wpm("wpm-cased", 0, -1, 0, &e);
    T_OK("cased WordPiece vocab loads", v != NULL, "%s", v ? "" : e.msg);
    if (v) {
        T_EQ_INT("wpm cased: no cls key, bos default 101 is past the vocab", asn_vocab_bos(v), -1);
        expect_ids("wpm cased: case kept", v, "Hello hello", 11, 1, 0, IDS(17, 5, 3));
        expect_ids("wpm cased: accents kept (strip_accents follows lowercase)", v, "caf\xC3\xA9", 5, 0, 0, IDS(19));
        asn_vocab_free(v);
    }
    asn_gguf_writer *w = asn_gguf_writer_new();
    asn_gguf_set_str(w, "tokenizer.ggml.model", "bert");
    asn_gguf_set_arr_str(w, "tokenizer.ggml.tokens", WPM_TOKS, N_WPM);
    asn_gguf_set_str(w, "tokenizer.ggml.normalizer.lowercase", "yes");
    expect_load_error("wpm: a normalizer key of the wrong type is an error naming it", write_load(w, "wpm-bad", &e), &e,
                      "tokenizer.ggml.normalizer.lowercase");
    v = made_wpm("wpm-strip", 0, 1, 1, &e);
    if (v) {
        expect_ids("wpm cased, strip_accents true: accents stripped, case kept", v, "caf\xC3\xA9 Hello", 11, 0, 0,
                   IDS(10, 17));
        asn_vocab_free(v);
    }
}

/* Gemma's SPM settings (add_space_prefix false, BOS added) and its turn
 * tokens, by llama.cpp's load rules: <end_of_turn> is found by its text as
 * the EOT and forced to control, and ends a generation with <eos>;
 * <start_of_turn> and <pad> do not. */
static void test_gemma_made(void)
{
    static const char *const toks[] = {"<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>",
                                       "<0x0A>", "h", "i", "hi", "\xE2\x96\x81hi", "\xE2\x96\x81"};
    float scores[] = {0, 0, 0, 0, 0, 0, 0, -3, -3, -1, -1, -2};
    int32_t types[] = {3, 3, 3, 2, 3, 4, 6, 1, 1, 1, 1, 1};
    asn_err e;
    for (int prefix_key = 0; prefix_key < 2; prefix_key++) {
        asn_gguf_writer *w = asn_gguf_writer_new();
        asn_gguf_set_str(w, "general.architecture", "gemma2");
        asn_gguf_set_str(w, "general.name", "gemma-2-2b-it");
        asn_gguf_set_str(w, "tokenizer.ggml.model", "llama");
        asn_gguf_set_str(w, "tokenizer.ggml.pre", "default");
        asn_gguf_set_arr_str(w, "tokenizer.ggml.tokens", toks, 12);
        asn_gguf_set_arr_f32(w, "tokenizer.ggml.scores", scores, 12);
        asn_gguf_set_arr_i32(w, "tokenizer.ggml.token_type", types, 12);
        asn_gguf_set_u32(w, "tokenizer.ggml.bos_token_id", 2);
        asn_gguf_set_u32(w, "tokenizer.ggml.eos_token_id", 1);
        asn_gguf_set_u32(w, "tokenizer.ggml.unknown_token_id", 3);
        asn_gguf_set_u32(w, "tokenizer.ggml.padding_token_id", 0);
        asn_gguf_set_bool(w, "tokenizer.ggml.add_bos_token", 1);
        asn_gguf_set_bool(w, "tokenizer.ggml.add_eos_token", 0);
        if (prefix_key)
            asn_gguf_set_bool(w, "tokenizer.ggml.add_space_prefix", 0);
        asn_vocab *v = write_load(w, prefix_key ? "gemma" : "gemma-prefix", &e);
        T_OK("gemma-style vocab loads", v != NULL, "%s", v ? "" : e.msg);
        if (!v)
            continue;
        if (prefix_key) {
            char why[256];
            int32_t eog[] = {1, 5};
            T_EQ_INT("gemma: add_space_prefix false from the metadata", asn_vocab_add_space_prefix(v), 0);
            T_EQ_INT("gemma: eot is <end_of_turn>", asn_vocab_eot(v), 5);
            T_OK("gemma: <eos> and <end_of_turn> end a generation, <start_of_turn>, <pad>, <bos> do not",
                 has_eog(v, eog, 2, why, sizeof why) && asn_vocab_eog_ids(v, &(const int32_t *){0}) == 2,
                 "eog: %s", why);
            T_OK("gemma: <end_of_turn> (user-defined) is forced to control",
                 (asn_vocab_attr(v, 5) & ASN_TATTR_CONTROL) && asn_vocab_is_control(v, 5), "attr 0x%x",
                 asn_vocab_attr(v, 5));
            expect_ids("gemma: BOS, turn tokens parsed, no space prefix after them", v,
                       "<start_of_turn>hi\n<end_of_turn>", 31, 1, 1, IDS(2, 4, 9, 6, 5));
            expect_ids("gemma: no space prefix on plain text", v, "hi", 2, 1, 0, IDS(2, 9));
        } else {
            T_EQ_INT("SPM without the key: space prefix (llama.cpp's default)", asn_vocab_add_space_prefix(v), 1);
            expect_ids("SPM without the key: \\u2581hi after a turn token", v, "<start_of_turn>hi", 17, 1, 1,
                       IDS(2, 4, 10));
        }
        asn_vocab_free(v);
    }
}

/* A Qwen3 base-model vocab names <|endoftext|> as its EOS; <|im_end|> is
 * found by its text (the EOT) and both end a generation, <|im_start|> and
 * <think> do not. */
static void test_qwen3_made(void)
{
    size_t nb;
    char **bt = byte_alphabet(0, &nb);
    const char *toks[262];
    for (size_t i = 0; i < 256; i++)
        toks[i] = bt[i];
    toks[256] = "<|endoftext|>", toks[257] = "<|im_start|>", toks[258] = "<|im_end|>", toks[259] = "<think>",
    toks[260] = "</think>", toks[261] = "hi";
    int32_t types[262];
    for (size_t i = 0; i < 262; i++)
        types[i] = i >= 256 && i < 259 ? ASN_TOKEN_CONTROL : i >= 259 && i < 261 ? ASN_TOKEN_USER_DEFINED
                                                                                 : ASN_TOKEN_NORMAL;
    const char *merges[] = {"h i"};
    asn_gguf_writer *w = asn_gguf_writer_new();
    asn_gguf_set_str(w, "general.architecture", "qwen3");
    asn_gguf_set_str(w, "tokenizer.ggml.model", "gpt2");
    asn_gguf_set_str(w, "tokenizer.ggml.pre", "qwen2");
    asn_gguf_set_arr_str(w, "tokenizer.ggml.tokens", toks, 262);
    asn_gguf_set_arr_i32(w, "tokenizer.ggml.token_type", types, 262);
    asn_gguf_set_arr_str(w, "tokenizer.ggml.merges", merges, 1);
    asn_gguf_set_u32(w, "tokenizer.ggml.eos_token_id", 256);
    asn_gguf_set_u32(w, "tokenizer.ggml.bos_token_id", 256);
    asn_gguf_set_bool(w, "tokenizer.ggml.add_bos_token", 0);
    asn_err e;
    asn_vocab *v = write_load(w, "qwen3", &e);
    T_OK("qwen3-style vocab loads", v != NULL, "%s", v ? "" : e.msg);
    if (v) {
        char why[256];
        int32_t eog[] = {256, 258};
        T_EQ_INT("qwen3: eot is <|im_end|>", asn_vocab_eot(v), 258);
        T_OK("qwen3: <|endoftext|> and <|im_end|> end a generation; <|im_start|>, <think> do not",
             has_eog(v, eog, 2, why, sizeof why) && asn_vocab_eog_ids(v, &(const int32_t *){0}) == 2, "eog: %s",
             why);
        expect_ids("qwen3: a ChatML turn with <think>, no BOS", v, "<|im_start|>hi<think>hi</think><|im_end|>", 41, 1,
                   1, IDS(257, 261, 259, 261, 260, 258));
        asn_vocab_free(v);
    }
    free_strs(bt, nb);
}

static void test_made(void)
{
    if (!mkdtemp(tmp_dir)) {
        printf("not ok - temporary folder: mkdtemp failed\n");
        t_failed++;
        return;
    }
    asn_err e;
    const char *spm_toks[] = {"<unk>", "<s>", "</s>", "\xE2\x96\x81", "a", "b", "\xE2\x96\x81" "a", "ab",
                              "\xE2\x96\x81" "ab"};
    float spm_scores[] = {0, 0, 0, -1, -2, -2, -1.5f, -0.5f, -0.1f};
    int32_t spm_types[] = {2, 3, 3, 1, 1, 1, 1, 1, 1};

    expect_load_error("no tokenizer.ggml.model: error", made("nomodel", NULL, NULL, spm_toks, 9, NULL, 0, NULL, NULL, 0, &e),
                      &e, "no tokenizer");
    expect_load_error("model t5: unsupported", made("t5", "t5", NULL, spm_toks, 9, NULL, 0, NULL, NULL, 0, &e), &e,
                      "unsupported tokenizer \"t5\"");
    expect_load_error("model foo: unknown", made("foo", "foo", NULL, spm_toks, 9, NULL, 0, NULL, NULL, 0, &e), &e,
                      "unknown tokenizer \"foo\"");
    expect_load_error("no token list: error", made("notoks", "llama", NULL, NULL, 0, NULL, 0, NULL, NULL, 0, &e), &e,
                      "tokenizer.ggml.tokens");
    expect_load_error("scores shorter than the tokens: error",
                      made("shortscores", "llama", NULL, spm_toks, 9, spm_scores, 4, NULL, NULL, 0, &e), &e,
                      "tokenizer.ggml.scores has 4 entries for 9 tokens");

    /* SPM merges by score; characters with no token and no byte token
     * become <unk> */
    asn_vocab *v = made("spm", "llama", NULL, spm_toks, 9, spm_scores, 9, spm_types, NULL, 0, &e);
    T_OK("hand-made SPM vocab loads", v != NULL, "%s", e.msg);
    if (v) {
        size_t n;
        char b1[128];
        int32_t *t = tok(v, "ab ab", 5, 1, 0, &n);
        int32_t want[] = {1, 8, 8};
        T_OK("hand-made SPM: BOS, then the best-scored merges", n == 3 && !memcmp(t, want, sizeof want),
             "got [%s]", fmt_ids(t, n, 0, b1, sizeof b1));
        free(t);
        t = tok(v, "ba", 2, 0, 0, &n);
        int32_t want2[] = {3, 5, 4};
        T_OK("hand-made SPM: no merge for \\u2581b, ba", n == 3 && !memcmp(t, want2, sizeof want2), "got [%s]",
             fmt_ids(t, n, 0, b1, sizeof b1));
        free(t);
        t = tok(v, "c", 1, 0, 0, &n);
        int32_t want3[] = {3, 0};
        T_OK("hand-made SPM: a byte without a byte token becomes <unk>", n == 2 && !memcmp(t, want3, sizeof want3),
             "got [%s]", fmt_ids(t, n, 0, b1, sizeof b1));
        free(t);
        asn_vocab_free(v);
    }

    /* byte-level BPE with the default pre-tokenizer (no pre key) */
    size_t nb;
    char **bt = byte_alphabet(0, &nb);
    const char *toks[300];
    for (size_t i = 0; i < 256; i++)
        toks[i] = bt[i];
    toks[256] = "12", toks[257] = "123", toks[258] = "1234", toks[259] = "ab", toks[260] = "<|end|>";
    const char *merges[] = {"1 2", "12 3", "123 4", "a b", "x y", "noSpace", "c d e"};
    expect_load_error("BPE without merges: error", made("nomerges", "gpt2", NULL, toks, 261, NULL, 0, NULL, NULL, 0, &e),
                      &e, "merges");
    expect_load_error("unknown pre-tokenizer: error",
                      made("badpre", "gpt2", "no-such-pre", toks, 261, NULL, 0, NULL, merges, 7, &e), &e,
                      "unknown pre-tokenizer type \"no-such-pre\"");
    expect_load_error("unsupported pre-tokenizer: error",
                      made("kimi", "gpt2", "kimi-k2", toks, 261, NULL, 0, NULL, merges, 7, &e), &e,
                      "pre-tokenizer \"kimi-k2\" is not supported");
    v = made("bpe-default", "gpt2", NULL, toks, 261, NULL, 0, NULL, merges, 7, &e);
    T_OK("hand-made BPE vocab (no pre key) loads", v != NULL, "%s", e.msg);
    if (v) {
        char b1[128];
        size_t n;
        T_EQ_STR("no pre key: the default pre-tokenizer", asn_vocab_pre(v), "default");
        T_EQ_INT("BPE default bos is 11 (llama.cpp's Falcon value)", asn_vocab_bos(v), 11);
        T_EQ_INT("BPE add_bos defaults to false", asn_vocab_add_bos(v), 0);
        int32_t *t = tok(v, "1234", 4, 0, 0, &n);
        int32_t want[] = {257, '4'};
        T_OK("default pre-tokenizer: digits cut in threes before merging ([0-9]{3})",
             n == 2 && !memcmp(t, want, sizeof want), "got [%s]", fmt_ids(t, n, 0, b1, sizeof b1));
        free(t);
        t = tok(v, "ab", 2, 0, 0, &n);
        T_OK("BPE merge", n == 1 && t[0] == 259, "got [%s]", fmt_ids(t, n, 0, b1, sizeof b1));
        free(t);
        t = tok(v, "xy", 2, 0, 0, &n);
        int32_t want2[] = {'x', 'y'};
        T_OK("a merge result that is no token falls back to one-byte tokens", n == 2 && !memcmp(t, want2, sizeof want2),
             "got [%s]", fmt_ids(t, n, 0, b1, sizeof b1));
        free(t);
        t = tok(v, "a<|end|>b", 9, 0, 0, &n);
        T_OK("a NORMAL-typed token named <|end|> is forced to control: not matched without parse_special",
             n > 3 && (asn_vocab_attr(v, 260) & ASN_TATTR_CONTROL) && asn_vocab_is_eog(v, 260), "got [%s]",
             fmt_ids(t, n, 0, b1, sizeof b1));
        free(t);
        t = tok(v, "a<|end|>b", 9, 0, 1, &n);
        int32_t want3[] = {'a', 260, 'b'};
        T_OK("... and matched with parse_special", n == 3 && !memcmp(t, want3, sizeof want3), "got [%s]",
             fmt_ids(t, n, 0, b1, sizeof b1));
        free(t);
        asn_vocab_free(v);
    }
    free_strs(bt, nb);
    test_wpm_made();
    test_gemma_made();
    test_qwen3_made();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_dir);
    if (system(cmd) != 0)
        printf("# could not remove %s\n", tmp_dir);
}

/* --------------------------------------------------------- long inputs */

static void test_long(void)
{
    static const struct {
        const char *file;
        const char *unit;
    } cases[] = {
        {"ggml-vocab-llama-bpe.gguf", "a"},   {"ggml-vocab-llama-bpe.gguf", " "},
        {"ggml-vocab-falcon.gguf", "7"},      {"ggml-vocab-deepseek-llm.gguf", "\xC3\xA9"},
        {"ggml-vocab-llama-spm.gguf", "xy"},  {"ggml-vocab-qwen2.gguf", "<|im_end|>"},
    };
    size_t len = 200000;
    char *s = asn_xmalloc(len + 16);
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        asn_vocab *v = load(cases[c].file);
        if (!v)
            continue;
        size_t ul = strlen(cases[c].unit), k = 0;
        while (k + ul <= len)
            memcpy(s + k, cases[c].unit, ul), k += ul;
        size_t n;
        int32_t *ids;
        asn_err e;
        int rc = asn_tokenize(v, s, k, 0, 1, &ids, &n, &e);
        size_t pl = 0;
        for (size_t i = 0; !rc && i < n; i++) {
            size_t l;
            asn_vocab_piece(v, ids[i], 1, &l);
            pl += l;
        }
        char name[256];
        snprintf(name, sizeof name, "%s: %zu bytes of \"%s\" tokenize and give %zu bytes of pieces", cases[c].file, k,
                 cases[c].unit, k);
        T_OK(name, !rc && n > 0 && (pl == k || asn_vocab_kind_of(v) == ASN_VOCAB_SPM), "rc %d (%s), %zu ids, %zu bytes",
             rc, rc ? e.msg : "", n, pl);
        free(ids);
        asn_vocab_free(v);
    }
    free(s);
}

int main(void)
{
    test_vectors();
    test_metadata();
    test_pieces();
    test_made();
    test_long();
    T_DONE();
}
