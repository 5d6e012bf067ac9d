/* generate — ad-hoc generation from one prompt with one heuristic,
 * streaming text to stdout as tokens arrive. */
#include "asn/chat.h"
#include "asn/gen.h"
#include "asn/json.h"
#include "asn/model.h"
#include "asn/sampling.h"
#include "asn/tool.h"
#include "asn/vocab.h"
#include "asn/sbuf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The command line, as asn_tool_parse fills it. */
typedef struct generate_options {
    const char *model;
    const char *file;
    const char *system;
    const char *template;
    const char *heuristics;
    const char *heuristic;
    long seed;
    long max_new;
    long min_new;
    long threads;
    long ctx;
    long top_k;
    double temp;
    double top_p;
    double min_p;
    double typical;
    double rep;
    int greedy;
    int verbose;
    asn_strlist stop;
    const char *chat_date;
} generate_options;

/* The options, with their defaults (the table below points into it). */
static generate_options opts = {
    .max_new = 256,
    .threads = 0,
    .ctx = 0,
    .temp = -1,
    .top_p = -1,
    .min_p = -1,
    .typical = -1,
    .rep = -1,
};

static const asn_option options[] = {
    {"model", 'm', ASN_OPT_STRING, &opts.model, "FILE", "GGUF model (required)"},
    {"file", 'f', ASN_OPT_STRING, &opts.file, "FILE", "read the prompt from FILE (- for stdin)"},
    {"system", 0, ASN_OPT_STRING, &opts.system, "TEXT", "system message"},
    {"chat-template", 0, ASN_OPT_STRING, &opts.template, "NAME", "chat template (chatml, llama3, ..., none); default: the model's, none without one"},
    {"chat-date", 0, ASN_OPT_STRING, &opts.chat_date, "DATE", ASN_CHAT_DATE_HELP},
    {"heuristics", 'H', ASN_OPT_STRING, &opts.heuristics, "FILE", "heuristics YAML (with --heuristic)"},
    {"heuristic", 0, ASN_OPT_STRING, &opts.heuristic, "NAME", "pipeline of --heuristics to sample with"},
    {"temperature", 0, ASN_OPT_DOUBLE, &opts.temp, "T", "inline heuristic: temperature (-1: off)"},
    {"top-k", 0, ASN_OPT_INT, &opts.top_k, "K", "inline heuristic: top_k (0: off)"},
    {"top-p", 0, ASN_OPT_DOUBLE, &opts.top_p, "P", "inline heuristic: top_p (-1: off)"},
    {"min-p", 0, ASN_OPT_DOUBLE, &opts.min_p, "P", "inline heuristic: min_p (-1: off)"},
    {"typical", 0, ASN_OPT_DOUBLE, &opts.typical, "MASS", "inline heuristic: typical (-1: off)"},
    {"repetition-penalty", 0, ASN_OPT_DOUBLE, &opts.rep, "R", "inline heuristic: repetition_penalty (-1: off)"},
    {"greedy", 0, ASN_OPT_FLAG, &opts.greedy, NULL, "inline heuristic: always the most probable token"},
    {"seed", 's', ASN_OPT_INT, &opts.seed, "N", "random seed"},
    {"max-new-tokens", 'n', ASN_OPT_INT, &opts.max_new, "N", "stop after N new tokens"},
    {"min-new-tokens", 0, ASN_OPT_INT, &opts.min_new, "N", "no end-of-generation token before N new tokens"},
    {"stop", 0, ASN_OPT_LIST, &opts.stop, "TEXT", "stop before this text"},
    {"threads", 't', ASN_OPT_INT, &opts.threads, "N", "threads (0: all cores)"},
    {"ctx", 'c', ASN_OPT_INT, &opts.ctx, "N", "context size (0: the model's)"},
    {"verbose", 'v', ASN_OPT_FLAG, &opts.verbose, NULL, "print the formatted prompt and speed on stderr"},
    {0},
};

static const asn_tool tool = {
    "generate", "-m MODEL [OPTIONS] [PROMPT]",
    "Generate a continuation of one prompt, streaming it to stdout.",
    "The prompt is the PROMPT argument, else --file, else stdin. It goes through\n"
    "the chat template (with --system) and is tokenized with BOS as the model\n"
    "adds it and special tokens parsed. Sampling uses --heuristic from\n"
    "--heuristics, or the inline flags applied in HuggingFace's order\n"
    "(repetition_penalty, temperature, top_k, top_p, min_p, typical), or, with\n"
    "none of them, the model's raw distribution. Token t is drawn with the\n"
    "counter RNG keyed by (--seed, prompt id, heuristic id) at step t, so the\n"
    "same options give the same text. Generation ends at an end-of-generation\n"
    "token, a --stop text (not printed) or --max-new-tokens.\n",
    options,
};

/* The inline heuristic as a processor list, in HF generate()'s order. */
static json_t *inline_processors(void)
{
    json_t *p = json_array();
#define ADD(NAME, KEY, VAL) json_array_append_new(p, json_pack("{s:s,s:{s:o}}", "name", NAME, "params", KEY, VAL))
    if (opts.rep >= 0)
        ADD("repetition_penalty", "penalty", json_real(opts.rep));
    if (opts.temp >= 0)
        ADD("temperature", "temperature", json_real(opts.temp));
    if (opts.top_k > 0)
        ADD("top_k", "top_k", json_integer(opts.top_k));
    if (opts.top_p >= 0)
        ADD("top_p", "top_p", json_real(opts.top_p));
    if (opts.min_p >= 0)
        ADD("min_p", "min_p", json_real(opts.min_p));
    if (opts.typical >= 0)
        ADD("typical", "mass", json_real(opts.typical));
    if (opts.greedy)
        json_array_append_new(p, json_pack("{s:s,s:{}}", "name", "greedy", "params"));
#undef ADD
    return p;
}

/* Length of the longest suffix of text[0..n) that is a proper prefix of a
 * stop string: those bytes are held back until we know. */
static size_t held_for_stop(const char *text, size_t n)
{
    size_t best = 0;
    for (int i = 0; i < opts.stop.n; i++) {
        size_t sl = strlen(opts.stop.v[i]);
        for (size_t k = sl > 1 ? sl - 1 : 0; k > best; k--)
            if (k <= n && !memcmp(text + n - k, opts.stop.v[i], k)) {
                best = k;
                break;
            }
    }
    return best;
}

static const char *find_stop(const char *text, size_t n)
{
    const char *first = NULL;
    for (int i = 0; i < opts.stop.n; i++) {
        const char *p = memmem(text, n, opts.stop.v[i], strlen(opts.stop.v[i]));
        if (p && (!first || p < first))
            first = p;
    }
    return first;
}

/* Streamed output: pieces as tokens arrive, holding back what could be the
 * start of a stop string. */
typedef struct stream {
    const asn_vocab *v;
    asn_detok_stream ds;
    char *piece;
    size_t cap;
    asn_sbuf out;
    size_t printed;
} stream;

static void append(stream *s, const char *p, size_t k)
{
    asn_sbuf_add(&s->out, p, k);
}

static void on_token(void *ctx, int job, int32_t tok)
{
    stream *s = ctx;
    (void)job;
    if (asn_vocab_is_eog(s->v, tok))
        return;
    int k = asn_detok_stream_push(&s->ds, tok, s->piece, s->cap);
    append(s, s->piece, (size_t)(k > 0 ? k : 0));
    if (find_stop(s->out.buf, s->out.len))
        return; /* printed at the end, cut */
    size_t ready = s->out.len - held_for_stop(s->out.buf, s->out.len);
    if (ready > s->printed) {
        fwrite(s->out.buf + s->printed, 1, ready - s->printed, stdout);
        fflush(stdout);
        s->printed = ready;
    }
}

/* What main's steps share. */
typedef struct gen_ctx {
    char *prompt;
    asn_heuristics *hs; /* --heuristics, or NULL: the inline processors in own */
    asn_heuristic own, *h;
    asn_model *m;
    const asn_vocab *v;
    int tmpl;
    char *text; /* the prompt as rendered */
    int32_t *ids;
    int n_ids;
    asn_pool *pool;
    stream st;
    asn_gen_job job;
} gen_ctx;

static void check_options(int nops)
{
    asn_err de;
    if (opts.chat_date && asn_chat_set_date(opts.chat_date, &de))
        asn_usage_error("--chat-date: %s", de.msg);
    if (!opts.model)
        asn_usage_error("--model is required");
    if (!!opts.heuristics != !!opts.heuristic)
        asn_usage_error("--heuristics and --heuristic go together");
    if (nops > 1)
        asn_usage_error("one PROMPT argument at most (quote it)");
    if (opts.max_new < 1 || opts.min_new < 0 || opts.seed < 0)
        asn_usage_error("--max-new-tokens must be >= 1, --min-new-tokens and --seed >= 0");
}

/* The heuristic: --heuristic of --heuristics, or the inline processors. */
static void load_heuristic(gen_ctx *g)
{
    asn_err e;
    g->h = &g->own;
    if (opts.heuristics) {
        if (!(g->hs = asn_heuristics_load(opts.heuristics, &e)))
            asn_fatal("%s", e.msg);
        int k = asn_heuristics_find(g->hs, opts.heuristic);
        if (k < 0)
            asn_fatal("%s: no pipeline named \"%s\"", opts.heuristics, opts.heuristic);
        g->h = &g->hs->h[k];
    } else {
        json_t *procs = inline_processors();
        if (asn_heuristic_init(&g->own, "inline", procs, &e))
            asn_usage_error("%s", e.msg);
        json_decref(procs);
    }
}

/* Model, tokenizer, chat template. */
static void load_model(gen_ctx *g)
{
    asn_err e;
    const char *was = asn_alloc_context("loading the model");
    g->m = asn_model_load(opts.model, &e);
    asn_alloc_context(was);
    if (!g->m)
        asn_fatal("%s", e.msg);
    if (!(g->v = asn_model_vocab(g->m, &e)))
        asn_fatal("%s", e.msg);
    char *tmpl_text = NULL;
    if (asn_gguf_get_str(asn_model_gguf(g->m), "tokenizer.chat_template", 0, &tmpl_text, &e))
        asn_fatal("%s", e.msg);
    /* a model without a template is a base model here: its prompt goes as is */
    g->tmpl = !opts.template && !tmpl_text ? ASN_CHAT_NONE : asn_chat_for_model(tmpl_text, opts.template, &e);
    if (g->tmpl < 0)
        asn_fatal("%s: %s", opts.model, e.msg);
    free(tmpl_text);
}

/* The prompt, rendered by the template and tokenized. */
static void make_prompt(gen_ctx *g)
{
    asn_err e;
    if (!(g->text = asn_gen_prompt_text(g->tmpl, opts.system, g->prompt, &e)))
        asn_fatal("%s", e.msg);
    if (asn_gen_tokenize_prompt(g->v, g->text, &g->ids, &g->n_ids, &e))
        asn_fatal("%s", e.msg);
    if (opts.verbose) { /* the prompt as rendered, the tokenizer's BOS written out */
        size_t bl = 0;
        const char *bos = g->ids[0] == asn_vocab_bos(g->v) ? asn_vocab_piece(g->v, g->ids[0], 1, &bl) : "";
        fprintf(stderr, "generate: prompt (%s):\n%.*s%s\n", asn_chat_name(g->tmpl), (int)bl, bos, g->text);
    }
}

/* Generates, streaming the text to stdout. */
static void run(gen_ctx *g)
{
    asn_err e;
    char pid[17];
    asn_prompt_id(opts.system, g->prompt, pid);
    g->pool = asn_pool_new((int)opts.threads);
    stream *st = &g->st;
    *st = (stream){g->v, {0}, asn_xmalloc(asn_vocab_max_piece(g->v) + 8), asn_vocab_max_piece(g->v) + 8,
                   ASN_SBUF_INIT, 0};
    asn_detok_stream_init(&st->ds, g->v, 0);
    asn_gen_settings gs = {.min_new_tokens = (int)opts.min_new, .max_new_tokens = (int)opts.max_new,
                           .stop = opts.stop.v, .n_stop = opts.stop.n, .on_token = on_token, .token_ctx = st};
    asn_generator *gen = asn_generator_new(g->m, g->pool, 1, (int)opts.ctx, &gs, &e);
    if (!gen)
        asn_fatal("%s", e.msg);
    g->job = (asn_gen_job){.prompt_id = pid, .prompt_tokens = g->ids, .n_prompt = (int)g->n_ids,
                           .heuristic = g->h, .seed = (uint64_t)opts.seed};
    double t0 = (double)clock() / CLOCKS_PER_SEC;
    if (asn_generate(gen, &g->job, 1, NULL, NULL, &e))
        asn_fatal("%s", e.msg);
    /* the rest of the streamed text, up to a stop string */
    if (g->job.finish != ASN_FINISH_STOP) {
        int k = asn_detok_stream_flush(&st->ds, st->piece, st->cap);
        append(st, st->piece, (size_t)(k > 0 ? k : 0));
    }
    const char *stop_at = find_stop(st->out.buf, st->out.len);
    size_t end = stop_at ? (size_t)(stop_at - st->out.buf) : st->out.len;
    if (end > st->printed)
        fwrite(st->out.buf + st->printed, 1, end - st->printed, stdout);
    fputc('\n', stdout);
    asn_close_out(stdout, "-");
    long n_new = g->job.n_tokens;
    if (opts.verbose) {
        double dt = (double)clock() / CLOCKS_PER_SEC - t0;
        fprintf(stderr, "generate: %d prompt + %ld new tokens, %.1f tokens/s (CPU time)\n", g->n_ids, n_new,
                dt > 0 ? (double)((long)g->n_ids + n_new) / dt : 0.0);
    }
    g->job.prompt_id = NULL; /* pid goes out of scope */
    asn_generator_free(gen);
}

static void gen_free(gen_ctx *g)
{
    asn_sbuf_release(&g->st.out);
    free(g->st.piece);
    asn_gen_job_clear(&g->job);
    free(g->ids);
    free(g->text);
    free(g->prompt);
    free(opts.stop.v);
    asn_pool_free(g->pool);
    asn_model_free(g->m);
    if (g->hs)
        asn_heuristics_free(g->hs);
    else
        asn_heuristic_clear(&g->own);
}

int main(int argc, char **argv)
{
    int nops = asn_tool_parse(&tool, argc, argv);
    check_options(nops);
    gen_ctx g = {0};
    size_t plen;
    g.prompt = nops ? asn_xstrdup(argv[1]) : asn_read_all(opts.file ? opts.file : "-", &plen);
    load_heuristic(&g);
    load_model(&g);
    make_prompt(&g);
    run(&g);
    gen_free(&g);
    return 0;
}
