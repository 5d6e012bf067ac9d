/* score-diversity — self-BLEU, embedding entropy and distinct-n of each
 * (prompt, heuristic) group of candidates across seeds, written on every
 * record of the group. */
#include "asn/bleu.h"
#include "asn/diversity.h"
#include "asn/json.h"
#include "asn/model.h"
#include "asn/records.h"
#include "asn/record_loop.h"
#include "asn/tool.h"
#include "asn/vocab.h"

#include <stdlib.h>
#include <string.h>

/* The command line, as asn_tool_parse fills it. */
typedef struct score_diversity_options {
    const char *model;
    const char *shard; /* --shard, --merge: asn_tool_shards */
    asn_strlist merge;
    long threads;
    long ctx;
    long batch_tokens;
    int skip_bad;
    int progress;
} score_diversity_options;

/* The options, with their defaults (the table below points into it). */
static score_diversity_options opts = {
    .batch_tokens = 1024,
};

static const asn_option options[] = {
    {"embed-model", 'm', ASN_OPT_STRING, &opts.model, "FILE", "GGUF model whose pooled hidden states embed the texts (required)"},
    {"ctx", 'c', ASN_OPT_INT, &opts.ctx, "N", "embed at most the first N tokens of a text (0: the model's context)"},
    {"batch-tokens", 0, ASN_OPT_INT, &opts.batch_tokens, "N", "tokens per embedding forward pass"},
    {"threads", 't', ASN_OPT_INT, &opts.threads, "N", "threads (0: all cores)"},
    ASN_OPT_SKIP_BAD(&opts.skip_bad),
    {"progress", 0, ASN_OPT_FLAG, &opts.progress, NULL, "show progress even when stderr is not a terminal"},
    {"shard", 0, ASN_OPT_STRING, &opts.shard, "K/N", "only the records of the prompts of shard K of N (as gen-candidates --shard)"},
    {"merge", 0, ASN_OPT_LIST, &opts.merge, "FILE", "label nothing: merge these shard outputs in the order of the input's prompts"},
    {0},
};

static const asn_tool tool = {
    "score-diversity", "-m EMBED_MODEL [OPTIONS] [FILE...]",
    "Label each (prompt, heuristic) group of candidates with its diversity across seeds.",
    "Input: candidate records, asn's or the research pipeline's (detected per file;\n"
    "a file of the latter is named on stderr), a prompt's records anywhere in the\n"
    "input (grouped in the order of their first record).\n"
    "Read: \"prompt_id\" (else \"prompt\"), \"heuristic\".\"id\" (else the reference's\n"
    "\"sampler_info\") and \"generation\". A group is a prompt's records of one\n"
    "heuristic (its seeds). Every record gains\n"
    "  diversity: {self_bleu, embedding_entropy, sample_count,\n"
    "              distinct_1, distinct_2, distinct_3, distinct_4}\n"
    "as the reference's diversity labeller computes them:\n"
    "  self_bleu          log(max(mean sentence BLEU of each generation against\n"
    "                     all the others, 1e-9)); BLEU as sacrebleu's sentence_score\n"
    "                     (effective_order, 13a tokens, 0..100)\n"
    "  embedding_entropy  log(max(entropy in bits of the normalized eigenvalues\n"
    "                     (> 1e-9) of the cosine similarity matrix of the\n"
    "                     embeddings, 1e-9)); 0 when no eigenvalue is kept\n"
    "  sample_count       records in the group\n"
    "  distinct_n         distinct n-grams / all n-grams of the group's 13a tokens\n"
    "                     (null when it has no n-grams of order n)\n"
    "An embedding is the mean over a generation's tokens of the embedding\n"
    "model's final normalized hidden state (a BERT encoder such as the\n"
    "reference's all-MiniLM-L6-v2: its last layer, mean-pooled as\n"
    "sentence-transformers does); the text is tokenized alone with the model's\n"
    "special tokens (BOS, or [CLS] ... [SEP]), no chat template, cut to --ctx\n"
    "tokens.\n"
    "A group of one record gets diversity: null (the reference drops it);\n"
    "their number is reported on stderr. Records keep their input order and\n"
    "every other field.\n" ASN_SHARD_HELP,
    options,
};

typedef struct labeller {
    asn_model *m;
    const asn_vocab *v;
    asn_engine *en;
    int dim, max_tokens;
    long singles, groups;
} labeller;

/* The distinct-n ratio, or null without n-grams. */
static json_t *distinct_json(const asn_bleu_group *bg, int order)
{
    long d, t;
    asn_bleu_group_ngrams(bg, order, &d, &t);
    return t ? json_real((double)d / (double)t) : json_null();
}

/* Labels the records of one prompt (a JSON array, in place); an
 * asn_group_fn. Invalid records go to asn_group_map_invalid. */
static int label_prompt(json_t *recs, asn_group_map *gm, void *ctx, asn_err *e)
{
    labeller *L = ctx;
    size_t n = json_array_size(recs);
    char **key = asn_xcalloc(n + 1, sizeof *key);
    const char **text = asn_xcalloc(n + 1, sizeof *text);
    size_t *len = asn_xcalloc(n + 1, sizeof *len);
    int *sub = asn_xcalloc(n + 1, sizeof *sub), *keep = asn_xcalloc(n + 1, sizeof *keep);
    int rc = 0;
    char kbuf[4096];
    for (size_t i = 0; i < n; i++) {
        json_t *r = json_array_get(recs, i);
        const char *k = asn_rec_heuristic_key(r, kbuf, sizeof kbuf), *t = NULL;
        asn_err fe;
        int bad = 0;
        if (!k)
            bad = asn_err_set(&fe, "field \"heuristic\" is missing (nor the reference's \"sampler_info\")");
        else if (asn_get_string(r, "generation", 1, &t, &fe))
            bad = -1;
        if (bad) {
            if ((rc = asn_group_map_invalid(gm, i, &fe, e)))
                break;
            continue;
        }
        keep[i] = 1;
        key[i] = asn_xstrdup(k);
        text[i] = t;
        len[i] = json_string_length(json_object_get(r, "generation"));
    }
    /* groups: records of one heuristic key, numbered by first appearance */
    int n_sub = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        if (!keep[i])
            continue;
        sub[i] = -1;
        for (size_t j = 0; j < i && sub[i] < 0; j++)
            if (keep[j] && !strcmp(key[j], key[i]))
                sub[i] = sub[j];
        if (sub[i] < 0)
            sub[i] = n_sub++;
    }
    /* all texts of groups of two or more, embedded together */
    int *count = asn_xcalloc((size_t)n_sub + 1, sizeof *count);
    for (size_t i = 0; i < n && !rc; i++)
        if (keep[i])
            count[sub[i]]++;
    const char **etext = asn_xcalloc(n + 1, sizeof *etext);
    size_t *elen = asn_xcalloc(n + 1, sizeof *elen);
    int n_emb = 0;
    for (int s = 0; s < n_sub && !rc; s++)
        for (size_t i = 0; i < n; i++)
            if (keep[i] && sub[i] == s && count[s] > 1)
                etext[n_emb] = text[i], elen[n_emb++] = len[i];
    float *emb = asn_xmalloc(((size_t)n_emb * (size_t)L->dim + 1) * sizeof *emb);
    if (!rc && n_emb)
        rc = asn_embed_texts(L->en, L->v, L->dim, etext, elen, n_emb, L->max_tokens, opts.batch_tokens, emb, e);
    /* each group: BLEU and distinct-n over its texts, entropy over its rows */
    int row = 0;
    for (int s = 0; s < n_sub && !rc; s++) {
        if (count[s] < 2) {
            for (size_t i = 0; i < n; i++)
                if (keep[i] && sub[i] == s)
                    json_object_set_new(json_array_get(recs, i), "diversity", json_null());
            L->singles++;
            continue;
        }
        L->groups++;
        const char **gt = asn_xcalloc((size_t)count[s], sizeof *gt);
        size_t *gl = asn_xcalloc((size_t)count[s], sizeof *gl);
        int k = 0;
        for (size_t i = 0; i < n; i++)
            if (keep[i] && sub[i] == s)
                gt[k] = text[i], gl[k++] = len[i];
        asn_bleu_group *bg = asn_bleu_group_new(gt, gl, k);
        asn_entropy h;
        rc = asn_embedding_entropy(emb + (size_t)row * L->dim, k, L->dim, &h, e);
        row += k;
        if (!rc) {
            json_t *d = json_object();
            json_object_set_new(d, "self_bleu", json_real(asn_log_floor(asn_bleu_group_self_bleu(bg))));
            json_object_set_new(d, "embedding_entropy", json_real(h.score));
            json_object_set_new(d, "sample_count", json_integer(k));
            static const char *names[] = {"distinct_1", "distinct_2", "distinct_3", "distinct_4"};
            for (int o = 1; o <= ASN_BLEU_MAX_ORDER; o++)
                json_object_set_new(d, names[o - 1], distinct_json(bg, o));
            for (size_t i = 0; i < n; i++)
                if (keep[i] && sub[i] == s)
                    json_object_set(json_array_get(recs, i), "diversity", d);
            json_decref(d);
        }
        asn_bleu_group_free(bg);
        free(gt);
        free(gl);
    }
    for (size_t i = 0; i < n; i++)
        free(key[i]);
    free(key), free(text), free(len), free(sub), free(keep), free(count), free(etext), free(elen), free(emb);
    return rc;
}

int main(int argc, char **argv)
{
    int nops = asn_tool_parse(&tool, argc, argv);
    if (asn_tool_shards(opts.shard, &opts.merge, nops ? argv + 1 : NULL))
        return 0;
    if (!opts.model)
        asn_usage_error("--embed-model is required");
    if (opts.ctx < 0)
        asn_usage_error("--ctx must be >= 0");
    if (opts.batch_tokens < 1)
        asn_usage_error("--batch-tokens must be >= 1");
    asn_err e;
    labeller L = {0};
    if (!(L.m = asn_model_load(opts.model, &e)) || !(L.v = asn_model_vocab(L.m, &e)))
        asn_fatal("%s", e.msg);
    const asn_model_config *cfg = asn_model_cfg(L.m);
    L.dim = cfg->n_embd;
    L.max_tokens = opts.ctx ? (int)opts.ctx : cfg->n_ctx_train;
    asn_pool *pool = asn_pool_new((int)opts.threads);
    if (!(L.en = asn_engine_new(L.m, L.max_tokens, pool, &e)))
        asn_fatal("%s", e.msg);

    long skipped = asn_map_groups(nops ? argv + 1 : NULL, opts.skip_bad, opts.progress, label_prompt, &L);
    if (L.singles)
        fprintf(stderr, "%s: %ld group%s of one record: diversity null\n", asn_progname(), L.singles,
                L.singles == 1 ? "" : "s");
    asn_warn_skipped(skipped);
    asn_close_out(stdout, "-");
    asn_engine_free(L.en);
    asn_pool_free(pool);
    asn_model_free(L.m);
    return 0;
}
