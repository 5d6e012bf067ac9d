/* perplexity — per-token log-probabilities, mean negative log-likelihood and
 * perplexity of texts under a model. */
#include "asn/json.h"
#include "asn/model.h"
#include "asn/record_loop.h"
#include "asn/tool.h"
#include "asn/vocab.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The command line, as asn_tool_parse fills it. */
typedef struct perplexity_options {
    const char *model;
    const char *text;
    long threads;
    long ctx;
    int skip_bad;
} perplexity_options;

/* The options, with their defaults (the table below points into it). */
static perplexity_options opts;

static const asn_option options[] = {
    {"model", 'm', ASN_OPT_STRING, &opts.model, "FILE", "GGUF model (required)"},
    {"text", 0, ASN_OPT_STRING, &opts.text, "FILE", "score the whole of a plain-text FILE (- for stdin) instead of JSONL"},
    {"threads", 't', ASN_OPT_INT, &opts.threads, "N", "threads (0: all cores)"},
    {"ctx", 'c', ASN_OPT_INT, &opts.ctx, "N", "context size (0: the model's)"},
    ASN_OPT_SKIP_BAD(&opts.skip_bad),
    {0},
};

static const asn_tool tool = {
    "perplexity", "-m MODEL [OPTIONS] [FILE...]",
    "Score texts under a model: log-probability of every token, mean NLL, perplexity.",
    "Input: JSONL records with \"text\" (other fields pass through), or with --text\n"
    "a plain-text file scored as one record. The text is tokenized with BOS as\n"
    "the model adds it; special tokens written in the text are not parsed (text\n"
    "is data). Each record gains:\n"
    "  tokens    the token ids\n"
    "  logprobs  log p(token i | tokens before it), natural log; null for the first\n"
    "  nll       mean of -logprobs over the scored tokens\n"
    "  ppl       exp(nll)\n"
    "  n_vocab   the model's vocabulary size\n"
    "A text longer than the context (--ctx) is an error.\n",
    options,
};

typedef struct scorer {
    asn_model *m;
    const asn_vocab *v;
    asn_engine *en;
    float *logits;
    size_t cap;
} scorer;

/* Adds tokens, logprobs, nll, ppl, n_vocab to rec for `text`. */
static int score(scorer *s, json_t *rec, const char *text, size_t len, asn_err *e)
{
    int32_t *ids;
    size_t n;
    if (asn_tokenize(s->v, text, len, 1, 0, &ids, &n, e))
        return -1;
    if (n == 0) {
        free(ids);
        return asn_err_set(e, "the text has no tokens");
    }
    /* in chunks, so memory stays at CHUNK rows of logits whatever the
     * length (the engine gives the same logits chunked or not) */
    enum { CHUNK = 64 };
    int V = asn_model_cfg(s->m)->n_vocab;
    if ((size_t)(CHUNK + 1) * (size_t)V > s->cap) {
        s->cap = (size_t)(CHUNK + 1) * (size_t)V;
        s->logits = asn_xrealloc(s->logits, s->cap * sizeof *s->logits);
    }
    json_t *jt = json_array(), *jl = json_array();
    double sum = 0;
    int seq = asn_seq_new(s->en), rc = 0;
    /* row 0 holds the logits of the token before the chunk */
    for (size_t c0 = 0; c0 < n && !rc; c0 += CHUNK) {
        int cn = n - c0 < CHUNK ? (int)(n - c0) : CHUNK;
        asn_batch_item it = {seq, ids + c0, cn, s->logits + V, 1, NULL, NULL};
        if ((rc = asn_engine_decode(s->en, &it, 1, e)))
            break;
        for (int j = 0; j < cn; j++) {
            size_t i = c0 + (size_t)j;
            json_array_append_new(jt, json_integer(ids[i]));
            if (i == 0) {
                json_array_append_new(jl, json_null());
                continue;
            }
            /* log-softmax of the previous position's logits, in double */
            const float *row = s->logits + (size_t)j * V;
            float mx = -INFINITY;
            for (int k = 0; k < V; k++)
                mx = row[k] > mx ? row[k] : mx;
            double z = 0;
            for (int k = 0; k < V; k++)
                z += exp((double)row[k] - mx);
            double lp = (double)row[ids[i]] - mx - log(z);
            sum -= lp;
            json_array_append_new(jl, json_real(lp));
        }
        memcpy(s->logits, s->logits + (size_t)cn * V, (size_t)V * sizeof *s->logits);
    }
    asn_seq_free(s->en, seq);
    if (rc) {
        json_decref(jt);
        json_decref(jl);
        free(ids);
        return -1;
    }
    json_object_set_new(rec, "tokens", jt);
    json_object_set_new(rec, "logprobs", jl);
    if (n > 1) {
        double nll = sum / (double)(n - 1);
        json_object_set_new(rec, "nll", json_real(nll));
        json_object_set_new(rec, "ppl", isfinite(exp(nll)) ? json_real(exp(nll)) : json_null());
    } else { /* one token: nothing to score */
        json_object_set_new(rec, "nll", json_null());
        json_object_set_new(rec, "ppl", json_null());
    }
    json_object_set_new(rec, "n_vocab", json_integer(V));
    free(ids);
    return 0;
}

/* An asn_record_fn: scores the record's "text". */
static int score_record(json_t *rec, void *ctx, const char *path, long line, asn_err *e)
{
    const char *text = NULL;
    (void)path, (void)line;
    if (asn_get_string(rec, "text", 1, &text, e))
        return -1;
    return score(ctx, rec, text, json_string_length(json_object_get(rec, "text")), e);
}

int main(int argc, char **argv)
{
    int nops = asn_tool_parse(&tool, argc, argv);
    if (!opts.model)
        asn_usage_error("--model is required");
    if (opts.text && nops)
        asn_usage_error("--text takes the input; no FILE operands with it");
    asn_err e;
    scorer s = {0};
    if (!(s.m = asn_model_load(opts.model, &e)) || !(s.v = asn_model_vocab(s.m, &e)))
        asn_fatal("%s", e.msg);
    asn_pool *pool = asn_pool_new((int)opts.threads);
    if (!(s.en = asn_engine_new(s.m, (int)opts.ctx, pool, &e)))
        asn_fatal("%s", e.msg);
    if (opts.text) {
        size_t len;
        char *text = asn_read_all(opts.text, &len);
        json_t *rec = json_object();
        if (score(&s, rec, text, len, &e))
            asn_fatal("%s: %s", opts.text, e.msg);
        asn_jsonl_write(stdout, rec);
        json_decref(rec);
        free(text);
    } else {
        asn_map_records(nops ? argv + 1 : NULL, opts.skip_bad, 0, score_record, &s);
    }
    asn_close_out(stdout, "-");
    free(s.logits);
    asn_engine_free(s.en);
    asn_pool_free(pool);
    asn_model_free(s.m);
    return 0;
}
