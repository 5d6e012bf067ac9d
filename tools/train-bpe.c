/* train-bpe — train a byte-level BPE vocabulary on text and write it as a
 * vocab-only GGUF that asn's tokenizer and llama.cpp load as "gpt2". */
#include "asn/bpe.h"
#include "asn/gguf.h"
#include "asn/tool.h"
#include "asn/vocab.h"
#include "asn/sbuf.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The command line, as asn_tool_parse fills it. */
typedef struct train_bpe_options {
    const char *output;
    const char *pre;
    const char *bos;
    const char *eos;
    const char *pad;
    long vocab;
    long min_count;
    asn_strlist special;
    int check;
    int verbose;
    int progress;
} train_bpe_options;

/* The options, with their defaults (the table below points into it). */
static train_bpe_options opts = {
    .pre = ASN_BPE_PRE,
    .bos = ASN_BPE_BOS,
    .eos = ASN_BPE_EOS,
    .vocab = ASN_BPE_VOCAB_SIZE,
    .min_count = ASN_BPE_MIN_COUNT,
};

static const asn_option options[] = {
    {"output", 'o', ASN_OPT_STRING, &opts.output, "FILE", "vocab GGUF to write (required)"},
    {"vocab-size|n", 0, ASN_OPT_INT, &opts.vocab, "N", "tokens in all: the 256 bytes, the learned ones and the special ones"},
    {"pre", 0, ASN_OPT_STRING, &opts.pre, "NAME", "pre-tokenizer (tokenizer.ggml.pre): smollm (the GPT-2 regex, digits one by one, text restored exactly), or gpt-2 (whose detokenizer drops the space before , . ! ? 's ...)"},
    {"bos", 0, ASN_OPT_STRING, &opts.bos, "TEXT", "BOS token, added before every text (\"\": none)"},
    {"eos", 0, ASN_OPT_STRING, &opts.eos, "TEXT", "EOS token, the end of generation (\"\": none)"},
    {"pad", 0, ASN_OPT_STRING, &opts.pad, "TEXT", "padding token (default: none)"},
    {"special", 0, ASN_OPT_LIST, &opts.special, "TEXT", "another control token"},
    {"min-count", 0, ASN_OPT_INT, &opts.min_count, "N", "never merge a pair seen fewer than N times"},
    {"check", 0, ASN_OPT_FLAG, &opts.check, NULL, "load the written vocab and check it on the input (see below)"},
    {"verbose", 'v', ASN_OPT_FLAG, &opts.verbose, NULL, "corpus and training statistics on stderr"},
    {"progress", 0, ASN_OPT_FLAG, &opts.progress, NULL, "show progress even when stderr is not a terminal"},
    {0},
};

static const asn_tool tool = {
    "train-bpe", "-o VOCAB.gguf [OPTIONS] [FILE...]",
    "Train a byte-level BPE vocabulary on UTF-8 text and write it as a vocab-only GGUF.",
    "Input: FILEs (- or none: stdin), UTF-8 text; a file that is not is an error\n"
    "naming its line. Each file is split with the pre-tokenizer's regex (no piece\n"
    "spans two files), the distinct pieces are counted, and the most frequent pair\n"
    "of adjacent tokens is merged into a new token until the vocabulary is full.\n"
    "Ties go to the pair whose texts come first in byte order, so the same input\n"
    "gives the same file, byte for byte. Merging stops early (a smaller\n"
    "vocabulary, with a warning) when no pair occurs --min-count times.\n"
    "\nIds: 0-255 the bytes (id = byte value), then the learned tokens in the order\n"
    "they were learned, then BOS, EOS, the padding token and the --special ones.\n"
    "The GGUF holds tokenizer.ggml.model \"gpt2\", .pre, .tokens (GPT-2's\n"
    "byte-to-unicode alphabet), .token_type, .merges, .bos/eos/padding_token_id\n"
    "and .add_bos_token true.\n"
    "\n--check reads the written file back with asn's tokenizer and fails (exit 1)\n"
    "unless every input tokenizes into pieces that give its bytes back, into as\n"
    "many tokens as training predicted, and every learned token tokenizes to\n"
    "itself (or, when its bytes cannot stand alone, as part of a UTF-8 character\n"
    "or of a longer piece, to its two halves). It prints bytes per token.\n",
    options,
};

static void on_merge(void *ctx, int32_t done, int32_t wanted)
{
    asn_progress **bar = ctx;
    if (!*bar)
        *bar = asn_progress_new("merges", wanted, opts.progress);
    asn_progress_add(*bar, 1);
}

/* --check: the written file, read back by the library's tokenizer. */
static void check(const asn_bpe *b, char **texts, const size_t *lens, const char *const *paths, int n)
{
    asn_err e;
    asn_gguf *g = asn_gguf_open(opts.output, &e);
    asn_vocab *v = g ? asn_vocab_load(g, &e) : NULL;
    if (!v)
        asn_fatal("check: %s", e.msg);
    asn_gguf_close(g);
    if (asn_vocab_n_tokens(v) != asn_bpe_n_tokens(b))
        asn_fatal("check: the vocab has %d tokens, training made %d", (int)asn_vocab_n_tokens(v),
                  (int)asn_bpe_n_tokens(b));
    uint64_t tokens = 0, bytes = 0;
    asn_sbuf back = ASN_SBUF_INIT;
    for (int i = 0; i < n; i++) {
        int32_t *ids;
        size_t nid;
        if (asn_tokenize(v, texts[i], lens[i], 0, 0, &ids, &nid, &e))
            asn_fatal("check: %s: %s", paths[i], e.msg);
        asn_sbuf_reset(&back);
        for (size_t j = 0; j < nid; j++) {
            size_t pl;
            const char *p = asn_vocab_piece(v, ids[j], 0, &pl);
            asn_sbuf_add(&back, p, pl);
        }
        if (back.len != lens[i] || memcmp(asn_sbuf_str(&back), texts[i], back.len))
            asn_fatal("check: %s: the tokens do not give the text back", paths[i]);
        tokens += nid;
        bytes += lens[i];
        free(ids);
    }
    asn_sbuf_release(&back);
    if (tokens != asn_bpe_text_tokens(b))
        asn_fatal("check: the tokenizer splits the input into %llu tokens, training predicted %llu",
                  (unsigned long long)tokens, (unsigned long long)asn_bpe_text_tokens(b));
    /* learned tokens: tokenized alone, each must come back as itself,
     * unless its bytes cannot stand alone (a part of a UTF-8 character, as
     * " \xC3" of " \xC3\xA9", or of a longer pre-tokenizer piece): then
     * they split exactly between its two halves */
    int32_t split = 0, bad = 0, first_bad = -1;
    for (int32_t r = 0; r < asn_bpe_n_merges(b); r++) {
        int32_t id = 256 + r;
        size_t len;
        const char *s = asn_bpe_token(b, id, &len);
        int32_t *ids;
        size_t nid;
        if (asn_tokenize(v, s, len, 0, 0, &ids, &nid, &e))
            asn_fatal("check: token %d: %s", (int)id, e.msg);
        if (nid != 1 || ids[0] != id) {
            int32_t l, rr;
            asn_bpe_merge(b, r, &l, &rr);
            size_t nl, nr;
            const char *ls = asn_bpe_token(b, l, &nl), *rs = asn_bpe_token(b, rr, &nr);
            int32_t *a1, *a2;
            size_t n1, n2;
            if (asn_tokenize(v, ls, nl, 0, 0, &a1, &n1, &e) || asn_tokenize(v, rs, nr, 0, 0, &a2, &n2, &e))
                asn_fatal("check: token %d: %s", (int)id, e.msg);
            int cut = n1 + n2 == nid && !memcmp(ids, a1, n1 * sizeof *ids) && !memcmp(ids + n1, a2, n2 * sizeof *ids);
            if (cut)
                split++;
            else if (bad++ == 0)
                first_bad = id;
            free(a1);
            free(a2);
        }
        free(ids);
    }
    if (bad)
        asn_fatal("check: %d learned tokens do not tokenize to themselves (the first: %d)", (int)bad, (int)first_bad);
    fprintf(stderr,
            "%s: check: %llu bytes -> %llu tokens (%.3f bytes/token), as training predicted; text restored; "
            "%d learned tokens tokenize to themselves, %d occur only inside longer text\n",
            asn_progname(), (unsigned long long)bytes, (unsigned long long)tokens,
            tokens ? (double)bytes / (double)tokens : 0.0, (int)(asn_bpe_n_merges(b) - split), (int)split);
    asn_vocab_free(v);
}

/* What main's steps share. */
typedef struct tb_ctx {
    long n_sp; /* special tokens */
    asn_bpe_words *w;
    const char *const *paths;
    int n;
    char **texts; /* kept for --check */
    size_t *lens;
    asn_bpe *b;
    double t_read, t_train; /* seconds */
} tb_ctx;

static void check_options(tb_ctx *g)
{
    if (!opts.output)
        asn_usage_error("--output is required");
    if (opts.vocab < 256 || opts.vocab > INT32_MAX)
        asn_usage_error("--vocab-size must be at least 256");
    if (opts.min_count < 1)
        asn_usage_error("--min-count must be at least 1");
    g->n_sp = (*opts.bos != 0) + (*opts.eos != 0) + (opts.pad != NULL) + opts.special.n;
    if (opts.vocab < 256 + g->n_sp)
        asn_usage_error("--vocab-size %ld leaves no room for the 256 bytes and %ld special tokens", opts.vocab,
                        g->n_sp);
}

/* The pieces of every input's text. */
static void read_inputs(tb_ctx *g, int nops, char **argv)
{
    asn_err e;
    if (!(g->w = asn_bpe_words_new(opts.pre, &e)))
        asn_usage_error("--pre: %s", e.msg);
    static const char *stdin_only[] = {"-"};
    g->paths = nops ? (const char *const *)argv + 1 : stdin_only;
    g->n = nops ? nops : 1;
    g->texts = asn_xcalloc((size_t)g->n, sizeof *g->texts);
    g->lens = asn_xcalloc((size_t)g->n, sizeof *g->lens);
    double t0 = asn_now();
    for (int i = 0; i < g->n; i++) {
        g->texts[i] = asn_read_all(g->paths[i], &g->lens[i]);
        if (asn_bpe_words_add(g->w, g->texts[i], g->lens[i], &e))
            asn_fatal("%s: %s", strcmp(g->paths[i], "-") ? g->paths[i] : "stdin", e.msg);
        if (!opts.check) {
            free(g->texts[i]);
            g->texts[i] = NULL;
        }
    }
    g->t_read = asn_now() - t0;
}

/* The merges, written to --output. */
static void train(tb_ctx *g)
{
    asn_err e;
    asn_bpe_opts o;
    asn_bpe_opts_init(&o);
    o.vocab_size = (int32_t)opts.vocab;
    o.min_count = opts.min_count;
    o.bos = *opts.bos ? opts.bos : NULL;
    o.eos = *opts.eos ? opts.eos : NULL;
    o.pad = opts.pad;
    o.special = opts.special.v;
    o.n_special = (size_t)opts.special.n;
    asn_progress *bar = NULL;
    o.progress = on_merge;
    o.progress_ctx = &bar;
    double t0 = asn_now();
    g->b = asn_bpe_train(g->w, &o, &e);
    asn_progress_done(bar);
    if (!g->b)
        asn_fatal("%s", e.msg);
    g->t_train = asn_now() - t0;
    if (asn_bpe_write(g->b, opts.output, &e))
        asn_fatal("%s", e.msg);
}

static void report(const tb_ctx *g)
{
    const asn_bpe *b = g->b;
    if (asn_bpe_n_tokens(b) < opts.vocab)
        asn_warn("only %d merges reach --min-count %ld: %d tokens instead of %ld", (int)asn_bpe_n_merges(b),
                 opts.min_count, (int)asn_bpe_n_tokens(b), opts.vocab);
    if (opts.verbose) {
        uint64_t bytes = asn_bpe_words_bytes(g->w), toks = asn_bpe_text_tokens(b);
        fprintf(stderr,
                "%s: %llu bytes, %llu pieces, %zu distinct (%.2f s); %d merges (%.2f s); %d tokens "
                "(256 bytes, %d learned, %d special); %.3f bytes/token on the input\n",
                asn_progname(), (unsigned long long)bytes, (unsigned long long)asn_bpe_words_pieces(g->w),
                asn_bpe_words_distinct(g->w), g->t_read, (int)asn_bpe_n_merges(b), g->t_train,
                (int)asn_bpe_n_tokens(b), (int)asn_bpe_n_merges(b), (int)g->n_sp,
                toks ? (double)bytes / (double)toks : 0.0);
    }
}

static void tb_free(tb_ctx *g)
{
    for (int i = 0; i < g->n; i++)
        free(g->texts[i]);
    free(g->texts);
    free(g->lens);
    asn_bpe_free(g->b);
    asn_bpe_words_free(g->w);
}

int main(int argc, char **argv)
{
    int nops = asn_tool_parse(&tool, argc, argv);
    tb_ctx g = {0};
    check_options(&g);
    read_inputs(&g, nops, argv);
    train(&g);
    report(&g);
    if (opts.check)
        check(g.b, g.texts, g.lens, g.paths, g.n);
    tb_free(&g);
    return 0;
}
