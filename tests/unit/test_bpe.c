/* test_bpe.c — the BPE trainer (asn/bpe.h):
 *  1. the pre-tokenizer split, against pieces written out by hand from the
 *     GPT-2 regex's rules;
 *  2. merges on tiny texts worked out by hand: counts, ties, pairs whose
 *     text already exists, min_count, special tokens;
 *  3. a vocabulary trained on tests/data/bpe/train.txt, read back by the
 *     library's tokenizer (asn_vocab_load): metadata and types; the
 *     validation text (tests/data/bpe/valid.txt: unseen words, digits,
 *     contractions, whitespace runs, CR, accents, CJK, emoji) round-trips;
 *     the training text splits into exactly as many tokens as training
 *     predicted; every learned token is reachable (merging its bytes by rank
 *     gives it back, and the tokenizer gives it alone);
 *  4. determinism: the same words fed in another chunking and order give a
 *     byte-identical GGUF;
 *  5. errors. */
#include "asn/bpe.h"
#include "asn/core.h"
#include "asn/gguf.h"
#include "asn/vocab.h"
#include "t.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Vocabulary size for the fixture: a few hundred merges of ~42 KB of text
 * (tests/cli/train_bpe.sh checks the same size against a Python trainer). */
#define FIXTURE_VOCAB 512

static char path_buf[4096];
static const char *data_path(const char *name)
{
    const char *root = getenv("ASN_ROOT");
    snprintf(path_buf, sizeof path_buf, "%s/tests/data/bpe/%s", root ? root : ".", name);
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

static char tmp_buf[2][4096];
static const char *tmp_path(int k)
{
    const char *t = getenv("TMPDIR");
    snprintf(tmp_buf[k], sizeof tmp_buf[k], "%s/asn-test-bpe-%d-%d.gguf", t ? t : "/tmp", (int)getpid(), k);
    return tmp_buf[k];
}

/* Trains on one text with default options but vocab_size and min_count. */
static asn_bpe *train_text(const char *pre, const char *text, int32_t vocab, int64_t min_count, asn_err *e)
{
    asn_bpe_words *w = asn_bpe_words_new(pre, e);
    if (!w)
        return NULL;
    asn_bpe *b = NULL;
    if (!asn_bpe_words_add(w, text, strlen(text), e)) {
        asn_bpe_opts o;
        asn_bpe_opts_init(&o);
        o.vocab_size = vocab;
        o.min_count = min_count;
        b = asn_bpe_train(w, &o, e);
    }
    asn_bpe_words_free(w);
    return b;
}

/* "left+right" of merge r, for messages and comparisons. */
static const char *merge_str(const asn_bpe *b, int32_t r)
{
    static char buf[512];
    int32_t l, rr;
    asn_bpe_merge(b, r, &l, &rr);
    size_t nl, nr;
    const char *ls = asn_bpe_token(b, l, &nl), *rs = asn_bpe_token(b, rr, &nr);
    if (!ls || !rs || nl + nr + 2 > sizeof buf)
        return "(none)";
    memcpy(buf, ls, nl);
    buf[nl] = '+';
    memcpy(buf + nl + 1, rs, nr);
    buf[nl + nr + 1] = 0;
    return buf;
}

/* ------------------------------------------------------------ 1. split */

/* The distinct pieces of text are exactly `want` (a '|'-separated list of
 * distinct pieces, "" for none): checked through the counts, and through a
 * vocabulary that may merge anything (min_count 1): every learned token
 * lies inside one piece. */
static void check_split(const char *name, const char *pre, const char *text, int n_distinct, int n_pieces)
{
    asn_err e;
    asn_bpe_words *w = asn_bpe_words_new(pre, &e);
    if (!w) {
        T_OK(name, 0, "%s", e.msg);
        return;
    }
    int rc = asn_bpe_words_add(w, text, strlen(text), &e);
    T_OK(name, rc == 0 && (int)asn_bpe_words_distinct(w) == n_distinct && (int)asn_bpe_words_pieces(w) == n_pieces,
         "rc %d, %d distinct pieces of %d, expected %d of %d", rc, (int)asn_bpe_words_distinct(w),
         (int)asn_bpe_words_pieces(w), n_distinct, n_pieces);
    asn_bpe_words_free(w);
}

/* With min_count 1 and room for everything, BPE merges each distinct piece
 * into one token, so the learned tokens include exactly the pieces of two
 * bytes or more: the pieces can be read back from the vocabulary. */
static void check_pieces(const char *name, const char *pre, const char *text, const char *const *pieces, int n)
{
    asn_err e;
    asn_bpe *b = train_text(pre, text, 4096, 1, &e);
    if (!b) {
        T_OK(name, 0, "%s", e.msg);
        return;
    }
    int ok = 1;
    const char *missing = NULL;
    for (int i = 0; i < n && ok; i++) {
        size_t len = strlen(pieces[i]);
        if (len < 2)
            continue;
        int found = 0;
        for (int32_t id = 256; id < 256 + asn_bpe_n_merges(b) && !found; id++) {
            size_t tl;
            const char *t = asn_bpe_token(b, id, &tl);
            found = tl == len && !memcmp(t, pieces[i], len);
        }
        if (!found)
            ok = 0, missing = pieces[i];
    }
    /* and nothing longer than a piece: every token lies inside one */
    for (int32_t id = 256; id < 256 + asn_bpe_n_merges(b) && ok; id++) {
        size_t tl;
        const char *t = asn_bpe_token(b, id, &tl);
        int inside = 0;
        for (int i = 0; i < n && !inside; i++) {
            size_t len = strlen(pieces[i]);
            for (size_t k = 0; k + tl <= len && !inside; k++)
                inside = !memcmp(pieces[i] + k, t, tl);
        }
        if (!inside)
            ok = 0, missing = t;
    }
    T_OK(name, ok, "piece or token \"%s\" not as expected", missing ? missing : "");
    asn_bpe_free(b);
}

static void test_split(void)
{
    /* GPT-2 rules: contractions, an optional space before letters, numbers
     * or punctuation runs, whitespace runs giving back their last
     * character to the word after them, leftover whitespace alone */
    const char *p1[] = {"Hello", " world", "'s", " it", "'ll", " 42", ",", " --!!", "  ", " x", "\n\n", "\t", "y", " \n"};
    check_split("split: distinct and total pieces", "gpt-2", "Hello world's it'll 42, --!!   x\n\n\ty \n", 14, 14);
    check_pieces("split: gpt-2 pieces", "gpt-2", "Hello world's it'll 42, --!!   x\n\n\ty \n", p1, 14);
    check_split("split: repeated pieces counted", "gpt-2", "a a a b", 3, 4); /* "a", " a" x2, " b" */
    /* contractions are case-sensitive in GPT-2's regex: "'S" is punctuation + letters */
    const char *p2[] = {"DON", "'", "T", " don", "'t"};
    check_pieces("split: contractions are case-sensitive", "gpt-2", "DON'T don't", p2, 5);
    /* letters and numbers beyond ASCII */
    const char *p3[] = {"caf\xC3\xA9", " \xCE\xB1\xCE\xB2", " \xC2\xBD\xC2\xB2", " \xF0\x9F\x99\x82"};
    check_pieces("split: Unicode letters, numbers, symbols", "gpt-2", "caf\xC3\xA9 \xCE\xB1\xCE\xB2 \xC2\xBD\xC2\xB2 \xF0\x9F\x99\x82", p3, 4);
    /* smollm: every digit alone first */
    const char *p4[] = {"abc", "1", "2", "3", " x", "4", "5"};
    check_pieces("split: smollm digits one by one", "smollm", "abc123 x45", p4, 7);
    check_split("split: smollm counts", "smollm", "abc123 x45", 7, 7);
    check_split("split: empty text", "gpt-2", "", 0, 0);
}

/* ----------------------------------------------------------- 2. merges */

static void test_merges(void)
{
    asn_err e;
    /* "ab" x3 as a whole word, "b c" pieces: pairs a+b 3, then ties */
    asn_bpe *b = train_text(NULL, "ab ab ab", 256 + 2 + 2, 1, &e);
    T_OK("merges: trains", b != NULL, "%s", b ? "" : e.msg);
    if (b) {
        T_EQ_INT("merges: two learned", asn_bpe_n_merges(b), 2);
        T_EQ_STR("merges: the most frequent pair first", merge_str(b, 0), "a+b");
        T_EQ_STR("merges: then \" \"+ab", merge_str(b, 1), " +ab");
        T_EQ_INT("merges: the text is 3 tokens", asn_bpe_text_tokens(b), 3);
        T_EQ_INT("merges: 256 + 2 + BOS + EOS tokens", asn_bpe_n_tokens(b), 260);
        T_EQ_INT("merges: BOS after the learned tokens", asn_bpe_bos(b), 258);
        T_EQ_INT("merges: EOS after BOS", asn_bpe_eos(b), 259);
        T_EQ_INT("merges: no padding token", asn_bpe_pad(b), -1);
        size_t n;
        const char *s = asn_bpe_token(b, 258, &n);
        T_OK("merges: BOS text", s && n == strlen(ASN_BPE_BOS) && !memcmp(s, ASN_BPE_BOS, n), "got %.*s", (int)n, s ? s : "");
        asn_bpe_free(b);
    }
    /* ties: x+y and a+b both once: a+b first (byte order of the left text) */
    b = train_text(NULL, "xy\nab\n", 256 + 2 + 2, 1, &e);
    if (b) {
        T_EQ_STR("merges: a tie goes to the smaller left text", merge_str(b, 0), "a+b");
        T_EQ_STR("merges: then the other", merge_str(b, 1), "x+y");
        asn_bpe_free(b);
    }
    /* ties on the left text go to the smaller right text; a prefix first */
    b = train_text(NULL, "ab\nac\n", 256 + 1 + 2, 1, &e);
    if (b) {
        T_EQ_STR("merges: same left, smaller right first", merge_str(b, 0), "a+b");
        asn_bpe_free(b);
    }
    /* min_count: pairs seen once are not merged with the default (2) */
    b = train_text(NULL, "ab ab ab cd", 4096, ASN_BPE_MIN_COUNT, &e);
    if (b) {
        /* a+b (3), " "+ab (2); c+d and " "+c once */
        T_EQ_INT("merges: min_count 2 stops early", asn_bpe_n_merges(b), 2);
        T_EQ_INT("merges: smaller vocabulary", asn_bpe_n_tokens(b), 256 + 2 + 2);
        asn_bpe_free(b);
    }
    /* overlapping pairs: "aaaa" is (aa)(aa); "aaa" is (aa)a */
    b = train_text(NULL, "aaaa", 256 + 2 + 2, 1, &e);
    if (b) {
        T_EQ_STR("merges: a+a", merge_str(b, 0), "a+a");
        T_EQ_STR("merges: aa+aa (left to right, no overlap)", merge_str(b, 1), "aa+aa");
        asn_bpe_free(b);
    }
    /* padding and extra special tokens, in order, after BOS and EOS */
    asn_bpe_words *w = asn_bpe_words_new(NULL, &e);
    asn_bpe_words_add(w, "ab ab", 5, &e);
    asn_bpe_opts o;
    asn_bpe_opts_init(&o);
    o.pad = "<|pad|>";
    const char *extra[] = {"<|user|>", "<|assistant|>"};
    o.special = extra;
    o.n_special = 2;
    o.min_count = 1;
    o.vocab_size = 300;
    b = asn_bpe_train(w, &o, &e);
    if (b) {
        int32_t n = asn_bpe_n_tokens(b);
        T_EQ_INT("special: padding after EOS", asn_bpe_pad(b), n - 3);
        size_t len;
        const char *s = asn_bpe_token(b, n - 1, &len);
        T_OK("special: --special tokens last, in order", s && len == 13 && !memcmp(s, "<|assistant|>", 13), "got %.*s",
             (int)len, s ? s : "");
        asn_bpe_free(b);
    }
    o.bos = o.eos = o.pad = NULL;
    o.n_special = 0;
    b = asn_bpe_train(w, &o, &e);
    if (b) {
        T_OK("special: none", asn_bpe_bos(b) == -1 && asn_bpe_eos(b) == -1 && asn_bpe_n_tokens(b) == 256 + asn_bpe_n_merges(b),
             "bos %d eos %d", (int)asn_bpe_bos(b), (int)asn_bpe_eos(b));
        asn_bpe_free(b);
    }
    asn_bpe_words_free(w);
}

/* ------------------------------------------------- 3. the fixture vocab */

/* Merges a piece's bytes by rank, as a BPE tokenizer does (lowest rank
 * first, leftmost first), with b's merges: the naive way, written apart
 * from both the trainer and the library's tokenizer. Returns the count of
 * symbols left (ids in out). */
static size_t naive_encode(const asn_bpe *b, const char *s, size_t n, int32_t *out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = (unsigned char)s[i];
    for (;;) {
        int32_t best = -1;
        size_t at = 0;
        for (size_t i = 0; i + 1 < n; i++) {
            for (int32_t r = 0; r < asn_bpe_n_merges(b) && (best < 0 || r < best); r++) {
                int32_t l, rr;
                asn_bpe_merge(b, r, &l, &rr);
                if (out[i] == l && out[i + 1] == rr) {
                    best = r, at = i;
                    break;
                }
            }
        }
        if (best < 0)
            return n;
        out[at] = 256 + best;
        memmove(out + at + 1, out + at + 2, (n - at - 2) * sizeof *out);
        n--;
    }
}

/* The pieces of ids, concatenated. */
static char *pieces_of(const asn_vocab *v, const int32_t *ids, size_t n, size_t *len)
{
    size_t cap = 64, k = 0;
    char *s = asn_xmalloc(cap);
    for (size_t i = 0; i < n; i++) {
        size_t pl;
        const char *p = asn_vocab_piece(v, ids[i], 0, &pl);
        asn_grow((void **)&s, &cap, k + pl + 1, 1);
        if (pl) /* control tokens have no piece */
            memcpy(s + k, p, pl);
        k += pl;
    }
    s[k] = 0;
    *len = k;
    return s;
}

static asn_vocab *load_written(const char *path)
{
    asn_err e;
    asn_gguf *g = asn_gguf_open(path, &e);
    asn_vocab *v = g ? asn_vocab_load(g, &e) : NULL;
    asn_gguf_close(g);
    T_OK("fixture: the written GGUF loads with asn_vocab_load", v != NULL, "%s", v ? "" : e.msg);
    return v;
}

static void test_fixture(const char *pre)
{
    char name[256];
#define NAME(s) (snprintf(name, sizeof name, "fixture %s: %s", pre, s), name)
    size_t ntrain, nvalid;
    char *train = read_all(data_path("train.txt"), &ntrain);
    char *valid = read_all(data_path("valid.txt"), &nvalid);
    T_OK(NAME("read train.txt and valid.txt"), train && valid, "missing %s", data_path(train ? "valid.txt" : "train.txt"));
    if (!train || !valid) {
        free(train);
        free(valid);
        return;
    }
    asn_err e;
    asn_bpe_words *w = asn_bpe_words_new(pre, &e);
    T_OK(NAME("count"), w && !asn_bpe_words_add(w, train, ntrain, &e), "%s", e.msg);
    asn_bpe_opts o;
    asn_bpe_opts_init(&o);
    o.vocab_size = FIXTURE_VOCAB;
    asn_bpe *b = asn_bpe_train(w, &o, &e);
    T_OK(NAME("train"), b != NULL, "%s", b ? "" : e.msg);
    if (!b) {
        asn_bpe_words_free(w);
        free(train);
        free(valid);
        return;
    }
    T_EQ_INT(NAME("full vocabulary"), asn_bpe_n_tokens(b), FIXTURE_VOCAB);
    T_OK(NAME("writes"), !asn_bpe_write(b, tmp_path(0), &e), "%s", e.msg);

    asn_vocab *v = load_written(tmp_path(0));
    if (v) {
        T_EQ_INT(NAME("kind BPE"), asn_vocab_kind_of(v), ASN_VOCAB_BPE);
        T_EQ_STR(NAME("model"), asn_vocab_model(v), "gpt2");
        T_EQ_STR(NAME("pre"), asn_vocab_pre(v), pre);
        T_EQ_INT(NAME("tokens"), asn_vocab_n_tokens(v), FIXTURE_VOCAB);
        T_EQ_INT(NAME("BOS id"), asn_vocab_bos(v), asn_bpe_bos(b));
        T_EQ_INT(NAME("EOS id"), asn_vocab_eos(v), asn_bpe_eos(b));
        T_OK(NAME("adds BOS, not EOS"), asn_vocab_add_bos(v) && !asn_vocab_add_eos(v), "add_bos %d add_eos %d",
             asn_vocab_add_bos(v), asn_vocab_add_eos(v));
        T_OK(NAME("EOS ends generation"), asn_vocab_is_eog(v, asn_bpe_eos(b)), "not EOG");
        T_EQ_INT(NAME("byte token type NORMAL"), asn_vocab_type(v, 'a'), ASN_TOKEN_NORMAL);
        T_EQ_INT(NAME("learned token type NORMAL"), asn_vocab_type(v, 300), ASN_TOKEN_NORMAL);
        T_EQ_INT(NAME("BOS type CONTROL"), asn_vocab_type(v, asn_bpe_bos(b)), ASN_TOKEN_CONTROL);
        /* token texts in the byte-to-unicode alphabet: " " is U+0120, "\n" U+010A */
        T_EQ_INT(NAME("space is \"\xC4\xA0\""), asn_vocab_find(v, "\xC4\xA0", 2), ' ');
        T_EQ_INT(NAME("newline is \"\xC4\x8A\""), asn_vocab_find(v, "\xC4\x8A", 2), '\n');
        size_t pl;
        const char *p = asn_vocab_piece(v, 0xE9, 0, &pl);
        T_OK(NAME("every byte token renders as its byte"), p && pl == 1 && (unsigned char)p[0] == 0xE9, "piece of 0xE9");

        /* the training text: as many tokens as training predicted, and back */
        int32_t *ids;
        size_t n;
        T_OK(NAME("tokenize train.txt"), !asn_tokenize(v, train, ntrain, 0, 0, &ids, &n, &e), "%s", e.msg);
        T_EQ_INT(NAME("train.txt: the tokenizer's count is training's"), n, asn_bpe_text_tokens(b));
        size_t len;
        char *back = pieces_of(v, ids, n, &len);
        T_OK(NAME("train.txt: pieces give the text back"), len == ntrain && !memcmp(back, train, len), "lengths %zu %zu", len, ntrain);
        printf("# %s: train.txt %zu bytes, %zu tokens, %.3f bytes/token\n", pre, ntrain, n, (double)ntrain / (double)n);
        free(back);
        free(ids);

        /* the validation text: detokenize(tokenize(text)) == text */
        T_OK(NAME("tokenize valid.txt"), !asn_tokenize(v, valid, nvalid, 1, 0, &ids, &n, &e), "%s", e.msg);
        T_EQ_INT(NAME("valid.txt: BOS first"), n ? ids[0] : -1, asn_bpe_bos(b));
        back = pieces_of(v, ids, n, &len);
        T_OK(NAME("valid.txt: pieces give the text back"), len == nvalid && !memcmp(back, valid, len), "lengths %zu %zu", len, nvalid);
        free(back);
        /* the streaming detokenizer concatenates the pieces */
        asn_detok_stream st;
        asn_detok_stream_init(&st, v, 0);
        size_t cap = asn_vocab_max_piece(v) + 4, k = 0;
        char *buf = asn_xmalloc(cap), *all = asn_xmalloc(nvalid + 64);
        int ok = 1;
        for (size_t i = 0; i < n && ok; i++) {
            int got = asn_detok_stream_push(&st, ids[i], buf, cap);
            ok = got >= 0 && k + (size_t)got <= nvalid;
            if (ok)
                memcpy(all + k, buf, (size_t)got), k += (size_t)got;
        }
        int got = asn_detok_stream_flush(&st, buf, cap);
        if (ok && got > 0 && k + (size_t)got <= nvalid)
            memcpy(all + k, buf, (size_t)got), k += (size_t)got;
        T_OK(NAME("valid.txt: streamed detokenization gives the text back"), ok && k == nvalid && !memcmp(all, valid, k),
             "got %zu bytes of %zu", k, nvalid);
        free(buf);
        free(all);
        /* asn_detokenize: exact where the pre-tokenizer does no space
         * cleanup (smollm); gpt-2 cleans " ," " ." " 's" ... as llama.cpp */
        char *text;
        size_t tl;
        T_OK(NAME("detokenize valid.txt"), !asn_detokenize(v, ids, n, 1, 0, &text, &tl, &e), "%s", e.msg);
        if (!strcmp(pre, "smollm"))
            T_OK(NAME("valid.txt: asn_detokenize gives the text back"), tl == nvalid && !memcmp(text, valid, tl),
                 "lengths %zu %zu", tl, nvalid);
        /* tokenize(detokenize(ids)) == ids */
        int32_t *ids2;
        size_t n2;
        back = pieces_of(v, ids + 1, n - 1, &len);
        T_OK(NAME("valid.txt: tokenize(detokenize(ids)) == ids"),
             !asn_tokenize(v, back, len, 1, 0, &ids2, &n2, &e) && n2 == n && !memcmp(ids2, ids, n * sizeof *ids),
             "%zu ids, expected %zu", n2, n);
        free(ids2);
        free(back);
        free(text);
        free(ids);

        /* reachability: every learned token is what merging its own bytes
         * by rank gives, and what the tokenizer gives for its text (unless
         * its bytes cannot stand alone: part of a UTF-8 character or of a
         * longer pre-tokenizer piece) */
        int32_t naive_bad = -1, tok_bad = -1, cut = 0;
        int32_t *out = asn_xmalloc(4096 * sizeof *out);
        for (int32_t r = 0; r < asn_bpe_n_merges(b); r++) {
            int32_t id = 256 + r;
            size_t tn;
            const char *t = asn_bpe_token(b, id, &tn);
            if (tn > 4096 || naive_encode(b, t, tn, out) != 1 || out[0] != id) {
                if (naive_bad < 0)
                    naive_bad = id;
                continue;
            }
            if (asn_tokenize(v, t, tn, 0, 0, &ids, &n, &e))
                n = 0, ids = NULL;
            if (n != 1 || ids[0] != id) {
                /* cut: the token's halves tokenize separately */
                int32_t l, rr;
                asn_bpe_merge(b, r, &l, &rr);
                size_t nl;
                asn_bpe_token(b, l, &nl);
                int32_t *a = NULL;
                size_t na;
                int is_cut = !asn_tokenize(v, t, nl, 0, 0, &a, &na, &e) && na < n && !memcmp(a, ids, na * sizeof *a);
                free(a);
                if (is_cut)
                    cut++;
                else if (tok_bad < 0)
                    tok_bad = id;
            }
            free(ids);
        }
        free(out);
        T_OK(NAME("every merge reachable by merging by rank"), naive_bad < 0, "token %d is not", (int)naive_bad);
        T_OK(NAME("every learned token tokenizes to itself (or to its halves)"), tok_bad < 0, "token %d does not", (int)tok_bad);
        T_OK(NAME("few tokens that cannot stand alone"), cut <= 4, "%d", (int)cut);
        asn_vocab_free(v);
    }

    /* determinism: the same text fed in parts, in reverse order, cut after
     * a newline that stands alone between two non-spaces (a piece of its
     * own, whether the text goes on or ends there) */
    asn_bpe_words *w2 = asn_bpe_words_new(pre, &e);
    size_t end = ntrain;
    int parts = 0;
    while (end > 0) {
        size_t start = end - 1;
        while (start > 0 && !(start >= 2 && train[start - 1] == '\n' && !strchr(" \t\n\r\v\f", train[start - 2]) &&
                              !strchr(" \t\n\r\v\f", train[start]) && end - start > 2000))
            start--;
        asn_bpe_words_add(w2, train + start, end - start, &e);
        end = start;
        parts++;
    }
    T_OK(NAME("same pieces in another chunking"), asn_bpe_words_distinct(w2) == asn_bpe_words_distinct(w) &&
         asn_bpe_words_pieces(w2) == asn_bpe_words_pieces(w) && parts > 5,
         "%zu/%zu distinct, %d parts", asn_bpe_words_distinct(w2), asn_bpe_words_distinct(w), parts);
    asn_bpe *b2 = asn_bpe_train(w2, &o, &e);
    size_t n1 = 0, n2 = 0;
    char *f1 = NULL, *f2 = NULL;
    if (b2 && !asn_bpe_write(b2, tmp_path(1), &e)) {
        f1 = read_all(tmp_path(0), &n1);
        f2 = read_all(tmp_path(1), &n2);
    }
    T_OK(NAME("deterministic: byte-identical GGUF"), f1 && f2 && n1 == n2 && !memcmp(f1, f2, n1), "%zu vs %zu bytes", n1, n2);
    free(f1);
    free(f2);
    unlink(tmp_path(0));
    unlink(tmp_path(1));
    asn_bpe_free(b2);
    asn_bpe_words_free(w2);
    asn_bpe_free(b);
    asn_bpe_words_free(w);
    free(train);
    free(valid);
#undef NAME
}

/* ------------------------------------------------------------ 5. errors */

static void test_errors(void)
{
    asn_err e;
    T_OK("error: unknown pre-tokenizer", !asn_bpe_words_new("llama3", &e) && strstr(e.msg, "llama3"), "%s", e.msg);
    asn_bpe_words *w = asn_bpe_words_new(NULL, &e);
    T_EQ_STR("default pre-tokenizer", asn_bpe_words_pre(w), ASN_BPE_PRE);
    const char bad[] = "fine\nstill fine\nbad \xC3\x28 here\n";
    T_OK("error: invalid UTF-8 names line and column", asn_bpe_words_add(w, bad, sizeof bad - 1, &e) == -1 &&
         strstr(e.msg, "line 3, column 5"), "%s", e.msg);
    T_OK("error: invalid UTF-8 counts nothing", asn_bpe_words_pieces(w) == 0, "%llu pieces",
         (unsigned long long)asn_bpe_words_pieces(w));
    T_OK("error: overlong form", asn_bpe_words_add(w, "\xC0\xAF", 2, &e) == -1, "accepted");
    T_OK("error: surrogate", asn_bpe_words_add(w, "\xED\xA0\x80", 3, &e) == -1, "accepted");
    T_OK("error: past U+10FFFF", asn_bpe_words_add(w, "\xF4\x90\x80\x80", 4, &e) == -1, "accepted");
    T_OK("error: truncated sequence", asn_bpe_words_add(w, "ab\xE2\x82", 4, &e) == -1, "accepted");
    asn_bpe_opts o;
    asn_bpe_opts_init(&o);
    T_OK("error: nothing counted", !asn_bpe_train(w, &o, &e) && strstr(e.msg, "no text"), "%s", e.msg);
    asn_bpe_words_add(w, "some text", 9, &e);
    o.vocab_size = 257;
    T_OK("error: no room for the special tokens", !asn_bpe_train(w, &o, &e) && strstr(e.msg, "no room"), "%s", e.msg);
    asn_bpe_opts_init(&o);
    o.pad = "<|end_of_text|>";
    T_OK("error: a special token twice", !asn_bpe_train(w, &o, &e) && strstr(e.msg, "twice"), "%s", e.msg);
    o.pad = "<|a b|>";
    T_OK("error: a special token with a space", !asn_bpe_train(w, &o, &e) && strstr(e.msg, "space"), "%s", e.msg);
    o.pad = "";
    T_OK("error: an empty special token", !asn_bpe_train(w, &o, &e) && strstr(e.msg, "empty"), "%s", e.msg);
    asn_bpe_opts_init(&o);
    o.min_count = 0;
    T_OK("error: min_count 0", !asn_bpe_train(w, &o, &e), "accepted");
    asn_bpe_words_free(w);
    asn_bpe_words_free(NULL);
    asn_bpe_free(NULL);
}

int main(void)
{
    test_split();
    test_merges();
    test_fixture("gpt-2");
    test_fixture("smollm");
    test_errors();
    T_DONE();
}
