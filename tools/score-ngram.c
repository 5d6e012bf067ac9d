/* score-ngram — longest-match n-gram coverage of candidates against a local
 * corpus (the offline equivalent of the reference's Infini-gram labeller),
 * and `score-ngram build`, which makes the corpus index. */
#include "asn/json.h"
#include "asn/ngram.h"
#include "asn/record_loop.h"
#include "asn/tool.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---------------------------------------------------------------- build */

/* The command line, as asn_tool_parse fills it. */
typedef struct score_ngram_options {
    const char *out;
    int lines;
    int verbose;
    const char *index;
    const char *shard; /* --shard, --merge: asn_tool_shards */
    asn_strlist merge;
    long max_n;
    int skip_bad;
    int progress;
} score_ngram_options;

/* The options, with their defaults (the table below points into it). */
static score_ngram_options opts = {
    .max_n = ASN_NGRAM_MAX_N,
};

static const asn_option build_options[] = {
    {"output", 'o', ASN_OPT_STRING, &opts.out, "INDEX", "index file to write (required)"},
    {"lines", 0, ASN_OPT_FLAG, &opts.lines, NULL, "every line is a document (default: every file)"},
    {"verbose", 'v', ASN_OPT_FLAG, &opts.verbose, NULL, "print the index's figures and times on stderr"},
    {0},
};

static const asn_tool build_tool = {
    "score-ngram build", "-o INDEX [OPTIONS] CORPUS...",
    "Build the word n-gram index (a suffix array over word ids) of text files.",
    "Words are what Python's str.split() gives (runs of non-whitespace, Unicode\n"
    "whitespace included), compared byte for byte. No n-gram spans two documents:\n"
    "a file is a document, or with --lines each line. CORPUS \"-\" reads stdin.\n"
    "The index holds the vocabulary, the corpus as word ids and its suffix array\n"
    "(format in lib/asn/ngram.h); it is memory-mapped when labelling. Memory while\n"
    "building: about 9 bytes per word plus the distinct words.\n",
    build_options,
};

/* Adds one corpus file: mapped when it is a regular file, else read. */
static void add_file(asn_ngram_builder *b, const char *path)
{
    asn_err e;
    if (strcmp(path, "-")) {
        int fd = open(path, O_RDONLY);
        struct stat st;
        if (fd < 0 || fstat(fd, &st))
            asn_fatal("%s: cannot open", path);
        if (S_ISREG(st.st_mode)) {
            size_t n = (size_t)st.st_size;
            void *p = n ? mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
            close(fd);
            if (n && p == MAP_FAILED)
                asn_fatal("%s: cannot map", path);
            if (n)
                madvise(p, n, MADV_SEQUENTIAL);
            int rc = asn_ngram_builder_add(b, p, n, &e);
            if (n)
                munmap(p, n);
            if (rc)
                asn_fatal("%s: %s", path, e.msg);
            return;
        }
        close(fd);
    }
    size_t n;
    char *buf = asn_read_all(path, &n);
    if (asn_ngram_builder_add(b, buf, n, &e))
        asn_fatal("%s: %s", path, e.msg);
    free(buf);
}

static int build_main(int argc, char **argv)
{
    int nops = asn_tool_parse(&build_tool, argc, argv);
    if (!opts.out)
        asn_usage_error("-o INDEX is required");
    if (!nops)
        asn_usage_error("no CORPUS files");
    double t0 = asn_now();
    asn_ngram_builder *b = asn_ngram_builder_new(opts.lines);
    for (int i = 1; i <= nops; i++)
        add_file(b, argv[i]);
    double t1 = asn_now();
    asn_err e;
    asn_ngram_info info;
    if (asn_ngram_builder_write(b, opts.out, &info, &e))
        asn_fatal("%s", e.msg);
    asn_ngram_builder_free(b);
    if (opts.verbose)
        fprintf(stderr,
                "%s: %llu words, %llu distinct, %llu documents; index %.1f MB; read %.2f s, sort and write %.2f s\n",
                asn_progname(), (unsigned long long)info.n_words, (unsigned long long)info.n_vocab,
                (unsigned long long)info.n_docs, (double)info.bytes / 1e6, t1 - t0, asn_now() - t1);
    return 0;
}

/* ---------------------------------------------------------------- label */

static const asn_option options[] = {
    {"index", 'i', ASN_OPT_STRING, &opts.index, "INDEX", "index made by score-ngram build (required)"},
    {"max-n|n", 0, ASN_OPT_INT, &opts.max_n, "N", "longest n-gram looked up"},
    ASN_OPT_SKIP_BAD(&opts.skip_bad),
    {"progress", 0, ASN_OPT_FLAG, &opts.progress, NULL, "show progress even when stderr is not a terminal"},
    {"shard", 0, ASN_OPT_STRING, &opts.shard, "K/N", "only the records of the prompts of shard K of N (as gen-candidates --shard)"},
    {"merge", 0, ASN_OPT_LIST, &opts.merge, "FILE", "label nothing: merge these shard outputs in the order of the input's prompts"},
    {0},
};

static const asn_tool tool = {
    "score-ngram", "--index INDEX [OPTIONS] [FILE...]\n       score-ngram build -o INDEX [OPTIONS] CORPUS...",
    "Label candidates with their longest-match n-gram coverage of a local corpus.",
    "Reads \"generation\" of each record and splits it into words as Python's\n"
    "str.split() does. From word i, the longest n-gram (at most --max-n words)\n"
    "that occurs in the corpus is found; if there is one, its length is added to\n"
    "the coverage and i jumps past it, else a break is counted when the previous\n"
    "step matched and i moves one word (the reference's label_infinigram walk).\n"
    "Each record gains\n"
    "  ngram: {coverage, breaks, longest, words}\n"
    "      coverage  words covered by matches; breaks  match-to-no-match steps;\n"
    "      longest   the longest match of the walk; words  words in the text\n"
    "  infinigram_scores: {infinigram_total_coverage, infinigram_breaks}\n"
    "      the same coverage and breaks under the reference's names\n"
    "An empty generation is labelled with zeros (the reference skips it).\n"
    "Records are independent: any order, every other field passed through.\n"
    "See score-ngram build --help for making the index.\n" ASN_SHARD_HELP,
    options,
};

static void label(const asn_ngram_index *ix, json_t *rec, const char *text, size_t len)
{
    asn_ngram_label l;
    asn_ngram_label_text(ix, text, len, (int)opts.max_n, &l);
    json_t *ng = json_object();
    json_object_set_new(ng, "coverage", json_integer(l.coverage));
    json_object_set_new(ng, "breaks", json_integer(l.breaks));
    json_object_set_new(ng, "longest", json_integer(l.longest));
    json_object_set_new(ng, "words", json_integer(l.words));
    json_object_set_new(rec, "ngram", ng);
    json_t *ref = json_object();
    json_object_set_new(ref, "infinigram_total_coverage", json_integer(l.coverage));
    json_object_set_new(ref, "infinigram_breaks", json_integer(l.breaks));
    json_object_set_new(rec, "infinigram_scores", ref);
}

/* An asn_record_fn: labels the record's "generation". */
static int label_record(json_t *rec, void *ctx, const char *path, long line, asn_err *e)
{
    const char *text = NULL;
    (void)path, (void)line;
    if (asn_get_string(rec, "generation", 1, &text, e))
        return -1;
    label(ctx, rec, text, json_string_length(json_object_get(rec, "generation")));
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "build"))
        return build_main(argc - 1, argv + 1);
    int nops = asn_tool_parse(&tool, argc, argv);
    if (asn_tool_shards(opts.shard, &opts.merge, nops ? argv + 1 : NULL))
        return 0;
    if (!opts.index)
        asn_usage_error("--index is required");
    if (opts.max_n < 1 || opts.max_n > 1000000)
        asn_usage_error("--max-n must be between 1 and 1000000");
    asn_err e;
    asn_ngram_index *ix = asn_ngram_open(opts.index, &e);
    if (!ix)
        asn_fatal("%s", e.msg);
    asn_map_records(nops ? argv + 1 : NULL, opts.skip_bad, opts.progress, label_record, ix);
    asn_close_out(stdout, "-");
    asn_ngram_close(ix);
    return 0;
}
