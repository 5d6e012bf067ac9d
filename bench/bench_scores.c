/* bench_scores.c — records/s of the labellers' work on generated candidates
 * (groups of 8 seeds, ~150 words a generation, Zipf-distributed words with
 * punctuation and numbers; a group's generations share about 70% of their
 * words), each against a baseline measured in the same run:
 *   - score-diversity, BLEU part: self-BLEU and distinct-n of every group
 *     (asn_bleu_group: tokenized once, one pass) vs scoring each generation
 *     with asn_sentence_bleu against the others, the references tokenized
 *     again for every hypothesis as sacrebleu's sentence_score does;
 *   - score-diversity, embedding part: embeddings (a group's texts batched
 *     up to score-diversity's default 1024 tokens a pass) and the eigenvalue
 *     entropy with the ~125M-parameter Llama of
 *     bench_util.h in Q8_0 (random weights, the SPM tokenizer of
 *     tests/data/models/tiny-spm-q8_0.gguf), or $ASN_BENCH_EMBED_MODEL, vs
 *     one text per forward pass;
 *   - score-ngram: index build time and size for a generated corpus, then
 *     labelling records/s and longest-match lookups/s, vs the reference's
 *     walk (binary search on the length, each length an independent
 *     existence query).
 * Usage: bench_scores [RECORDS (default 100000)] [THREADS (default 2)].
 * The embedding part runs on min(RECORDS, 16) records (two groups: a 125M
 * model embeds a few hundred tokens a second on two cores). */
#include "asn/bleu.h"
#include "asn/diversity.h"
#include "asn/model.h"
#include "asn/ngram.h"
#include "asn/vocab.h"

#include "bench_util.h"

#include <math.h>
#include <unistd.h>

enum { GROUP = 8, WORDS = 150, N_WORDS = 5000, SHARED_PCT = 70, EMBED_RECORDS = 16 };
/* score-diversity's default --batch-tokens */
#define BATCH_TOKENS 1024L

static uint64_t text_rs = 0x2545F4914F6CDD1DULL;
static double uni(void)
{
    text_rs ^= text_rs << 13, text_rs ^= text_rs >> 7, text_rs ^= text_rs << 17;
    return ((text_rs >> 11) + 0.5) * 0x1.0p-53;
}

/* ------------------------------------------------------------ the texts */

static char words[N_WORDS][16];
static double zipf_cdf[N_WORDS];

static void make_vocab(void)
{
    static const char *syl[] = {"the", "on", "in", "and", "at", "er", "ing", "is", "or", "an", "re", "st", "en", "ed", "al"};
    double h = 0;
    for (int i = 0; i < N_WORDS; i++) {
        int n = 1 + (int)(uni() * 3), k = 0;
        for (int j = 0; j < n; j++)
            k += sprintf(words[i] + k, "%s", syl[(int)(uni() * 15)]);
        if (i % 97 == 0) /* some numbers and punctuation-bearing words */
            sprintf(words[i], "%d.%d", i, i % 10);
        else if (i % 31 == 0)
            words[i][k] = ',', words[i][k + 1] = 0;
        else if (i % 17 == 0)
            words[i][k] = '.', words[i][k + 1] = 0;
        h += 1.0 / (i + 1);
        zipf_cdf[i] = h;
    }
    for (int i = 0; i < N_WORDS; i++)
        zipf_cdf[i] /= h;
}

static int zipf_word(void)
{
    double u = uni();
    int lo = 0, hi = N_WORDS - 1;
    while (lo < hi) {
        int m = (lo + hi) / 2;
        if (zipf_cdf[m] < u)
            lo = m + 1;
        else
            hi = m;
    }
    return lo;
}

/* n generations in groups of GROUP: a base of WORDS words per group, each
 * generation keeping SHARED_PCT% of it. */
static char **make_generations(int n)
{
    char **g = malloc((size_t)n * sizeof *g);
    int base[WORDS];
    for (int i = 0; i < n; i++) {
        if (i % GROUP == 0)
            for (int k = 0; k < WORDS; k++)
                base[k] = zipf_word();
        g[i] = malloc(WORDS * 17 + 1);
        size_t len = 0;
        for (int k = 0; k < WORDS; k++) {
            int w = uni() * 100 < SHARED_PCT ? base[k] : zipf_word();
            len += (size_t)sprintf(g[i] + len, "%s%s", k ? " " : "", words[w]);
        }
    }
    return g;
}

/* ------------------------------------------------------------------ BLEU */

static void bench_bleu(char **gen, int n)
{
    double t0 = now(), sink = 0;
    for (int i = 0; i + GROUP <= n; i += GROUP) {
        asn_bleu_group *g = asn_bleu_group_new((const char *const *)gen + i, NULL, GROUP);
        sink += asn_log_floor(asn_bleu_group_self_bleu(g));
        for (int o = 1; o <= 4; o++) {
            long d, t;
            asn_bleu_group_ngrams(g, o, &d, &t);
            sink += (double)d / (double)t;
        }
        asn_bleu_group_free(g);
    }
    double t_group = now() - t0;
    /* the baseline on a tenth of the groups (it is slow) */
    int nb = (n / GROUP / 10 > 0 ? n / GROUP / 10 : 1) * GROUP;
    nb = nb < n ? nb : n - n % GROUP;
    double sink2 = 0, sink_chk = 0;
    t0 = now();
    for (int i = 0; i + GROUP <= nb; i += GROUP) {
        double sum = 0;
        for (int h = 0; h < GROUP; h++) {
            const char *refs[GROUP];
            for (int j = 0, k = 0; j < GROUP; j++)
                if (j != h)
                    refs[k++] = gen[i + j];
            sum += asn_sentence_bleu(gen[i + h], refs, GROUP - 1, NULL);
        }
        sink2 += asn_log_floor(sum / GROUP);
    }
    double t_base = now() - t0;
    for (int i = 0; i + GROUP <= nb; i += GROUP) { /* same numbers? */
        asn_bleu_group *g = asn_bleu_group_new((const char *const *)gen + i, NULL, GROUP);
        sink_chk += asn_log_floor(asn_bleu_group_self_bleu(g));
        asn_bleu_group_free(g);
    }
    printf("score-diversity BLEU part (self-BLEU + distinct-1..4, groups of %d, ~%d words): %9.0f records/s; "
           "sentence_score per hypothesis: %7.0f records/s; ratio %.1fx%s\n",
           GROUP, WORDS, n / t_group, nb / t_base, (n / t_group) / (nb / t_base),
           fabs(sink2 - sink_chk) < 1e-9 * nb ? "" : "  (RESULTS DIFFER)");
    (void)sink;
}

/* ------------------------------------------------------------- embedding */

static void bench_embed(char **gen, int n, int threads)
{
    const char *root = getenv("ASN_ROOT"), *path = getenv("ASN_BENCH_EMBED_MODEL"), *t = getenv("TMPDIR");
    char vocab_from[4096], tmp[4096];
    snprintf(vocab_from, sizeof vocab_from, "%s/tests/data/models/tiny-spm-q8_0.gguf", root ? root : ".");
    snprintf(tmp, sizeof tmp, "%s/asn_bench_scores_%d.gguf", t && *t ? t : "/tmp", (int)getpid());
    if (!path) {
        write_model(tmp, ASN_T_Q8_0, vocab_from);
        path = tmp;
    }
    asn_err e;
    asn_model *m = asn_model_load(path, &e);
    const asn_vocab *v = m ? asn_model_vocab(m, &e) : NULL;
    if (!v) {
        printf("score-diversity embedding part: skipped (%s)\n", e.msg);
        asn_model_free(m);
        unlink(tmp);
        return;
    }
    const asn_model_config *c = asn_model_cfg(m);
    asn_pool *pool = asn_pool_new(threads);
    asn_engine *en = asn_engine_new(m, 1024, pool, &e);
    float *emb = malloc((size_t)n * (size_t)c->n_embd * sizeof *emb);
    double t_batch = 0, t_single = 0, t_entropy, sink = 0;
    long tokens = 0;
    for (int i = 0; i < n; i++) {
        int32_t *ids;
        size_t k;
        if (!asn_tokenize(v, gen[i], strlen(gen[i]), 1, 0, &ids, &k, &e))
            tokens += (long)k, free(ids);
    }
    /* warm up (the model's pages, the engine's buffers), then time */
    if (asn_embed_texts(en, v, c->n_embd, (const char *const *)gen, NULL, 1, 1024, 1L << 20, emb, &e)) {
        printf("score-diversity embedding part: %s\n", e.msg);
        goto out;
    }
    for (int pass = 0; pass < 2; pass++) {
        double t0 = now();
        for (int i = 0; i + GROUP <= n; i += GROUP)
            if (asn_embed_texts(en, v, c->n_embd, (const char *const *)gen + i, NULL, GROUP, 1024,
                                pass == 0 ? BATCH_TOKENS : 1, emb + (size_t)i * c->n_embd, &e)) {
                printf("score-diversity embedding part: %s\n", e.msg);
                goto out;
            }
        if (pass == 0)
            t_batch = now() - t0;
        else
            t_single = now() - t0;
    }
    enum { REPEAT = 200 };
    double t0 = now();
    for (int r = 0; r < REPEAT; r++)
        for (int i = 0; i + GROUP <= n; i += GROUP) {
            asn_entropy h;
            asn_embedding_entropy(emb + (size_t)i * c->n_embd, GROUP, c->n_embd, &h, &e);
            sink += h.score;
        }
    t_entropy = (now() - t0) / REPEAT;
    printf("score-diversity embedding part (%s, dim %d, %d layers, %d threads, %d records of ~%ld tokens): "
           "%6.1f records/s = %.0f tokens/s (entropy alone %.0f records/s); one text per forward pass: "
           "%6.1f records/s; ratio %.2fx\n",
           c->arch, c->n_embd, c->n_layer, threads, n, tokens / n, n / t_batch, tokens / t_batch, n / t_entropy,
           n / t_single, t_single / t_batch);
out:
    (void)sink;
    free(emb);
    asn_engine_free(en);
    asn_pool_free(pool);
    asn_model_free(m);
    unlink(tmp);
}

/* ----------------------------------------------------------------- ngram */

/* The reference's walk: binary search on the length, existence queries. */
static void reference_walk(const asn_ngram_index *ix, const uint32_t *ids, size_t n, int max_n, asn_ngram_label *out,
                           long *queries)
{
    *out = (asn_ngram_label){(long)n, 0, 0, 0};
    int was = 0;
    for (size_t i = 0; i < n;) {
        int best = 0, lo = 1, hi = (size_t)max_n < n - i ? max_n : (int)(n - i);
        while (lo <= hi) {
            int mid = lo + (hi - lo) / 2;
            ++*queries;
            if (asn_ngram_count(ix, ids + i, (size_t)mid) > 0)
                best = mid, lo = mid + 1;
            else
                hi = mid - 1;
        }
        if (best) {
            out->coverage += best, i += (size_t)best, was = 1;
        } else {
            out->breaks += was, i++, was = 0;
        }
    }
}

static void bench_ngram(char **gen, int n)
{
    enum { CORPUS_WORDS = 20000000, DOC = 2000 };
    char path[512];
    const char *t = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/asn_bench_ngram_%d.idx", t && *t ? t : "/tmp", (int)getpid());
    asn_err e;
    /* corpus: documents of Zipf words, and the generations' groups' words
     * appear in it now and then, so labels have real matches */
    double t0 = now();
    asn_ngram_builder *b = asn_ngram_builder_new(0);
    char *doc = malloc((size_t)DOC * 17 + 1);
    size_t bytes = 0;
    for (int d = 0; d < CORPUS_WORDS / DOC; d++) {
        size_t len = 0;
        for (int k = 0; k < DOC;) {
            if (uni() < 0.01 && n > 0) { /* a piece of a generation */
                const char *g = gen[(int)(uni() * n)];
                size_t gl = strlen(g), from = (size_t)(uni() * (double)gl / 2), take = gl / 8;
                memcpy(doc + len, g + from, take);
                len += take, k += 20;
                doc[len++] = ' ';
                continue;
            }
            len += (size_t)sprintf(doc + len, "%s ", words[zipf_word()]);
            k++;
        }
        bytes += len;
        asn_ngram_builder_add(b, doc, len, &e);
    }
    free(doc);
    double t_gen = now() - t0;
    t0 = now();
    asn_ngram_info info;
    if (asn_ngram_builder_write(b, path, &info, &e)) {
        printf("score-ngram: build failed: %s\n", e.msg);
        asn_ngram_builder_free(b);
        return;
    }
    asn_ngram_builder_free(b);
    double t_build = now() - t0;
    t0 = now();
    asn_ngram_index *ix = asn_ngram_open(path, &e);
    double t_open = now() - t0;
    if (!ix) {
        printf("score-ngram: %s\n", e.msg);
        return;
    }
    printf("score-ngram build: %.0f MB of text, %llu words, %llu distinct: index %.0f MB; words and vocabulary "
           "%.2f s (with generating the text), suffix array and write %.2f s; open and check %.2f s\n",
           bytes / 1e6, (unsigned long long)info.n_words, (unsigned long long)info.n_vocab, info.bytes / 1e6, t_gen,
           t_build, t_open);
    long sink = 0, cov = 0;
    t0 = now();
    for (int i = 0; i < n; i++) {
        uint32_t *ids;
        size_t k = asn_ngram_text_ids(ix, gen[i], strlen(gen[i]), &ids);
        asn_ngram_label l;
        asn_ngram_label_ids(ix, ids, k, ASN_NGRAM_MAX_N, &l);
        sink += l.breaks;
        cov += l.coverage;
        free(ids);
    }
    double t_label = now() - t0;
    /* lookups/s: longest-prefix queries at every word position */
    long q = 0;
    t0 = now();
    for (int i = 0; i < n / 10 + 1 && i < n; i++) {
        uint32_t *ids;
        size_t k = asn_ngram_text_ids(ix, gen[i], strlen(gen[i]), &ids);
        for (size_t j = 0; j < k; j++, q++)
            sink += asn_ngram_longest_prefix(ix, ids + j, k - j, ASN_NGRAM_MAX_N);
        free(ids);
    }
    double t_q = now() - t0;
    int nb = n / 10 + 1 < n ? n / 10 + 1 : n;
    long ref_queries = 0, ref_cov = 0, own_cov = 0;
    t0 = now();
    for (int i = 0; i < nb; i++) {
        uint32_t *ids;
        size_t k = asn_ngram_text_ids(ix, gen[i], strlen(gen[i]), &ids);
        asn_ngram_label l;
        reference_walk(ix, ids, k, ASN_NGRAM_MAX_N, &l, &ref_queries);
        ref_cov += l.coverage;
        free(ids);
    }
    double t_ref = now() - t0;
    for (int i = 0; i < nb; i++) {
        asn_ngram_label l;
        asn_ngram_label_text(ix, gen[i], strlen(gen[i]), ASN_NGRAM_MAX_N, &l);
        own_cov += l.coverage;
    }
    printf("score-ngram label (max_n %d, ~%d words, mean coverage %.1f): %8.0f records/s, %.0f longest-match "
           "lookups/s; the reference's walk of existence queries: %7.0f records/s (%.0f queries/s); ratio %.1fx%s\n",
           ASN_NGRAM_MAX_N, WORDS, (double)cov / n, n / t_label, q / t_q, nb / t_ref, ref_queries / t_ref,
           (n / t_label) / (nb / t_ref), ref_cov == own_cov ? "" : "  (RESULTS DIFFER)");
    (void)sink;
    asn_ngram_close(ix);
    unlink(path);
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 100000, threads = argc > 2 ? atoi(argv[2]) : 2;
    n -= n % GROUP;
    if (n < GROUP)
        n = GROUP;
    setvbuf(stdout, NULL, _IOLBF, 0);
    make_vocab();
    char **gen = make_generations(n);
    printf("bench_scores: %d generated candidates (groups of %d seeds, ~%d words each)\n", n, GROUP, WORDS);
    bench_bleu(gen, n);
    bench_embed(gen, n < EMBED_RECORDS ? n : EMBED_RECORDS, threads);
    bench_ngram(gen, n);
    for (int i = 0; i < n; i++)
        free(gen[i]);
    free(gen);
    return 0;
}
