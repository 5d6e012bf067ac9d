/* score-reward — a scalar reward per candidate from a reward model (a
 * sequence classifier: Skywork-Reward-style, or any GGUF with llama.cpp's
 * cls.output head), the research pipeline's second scoring path beside the
 * judge tournament. */
#include "asn/chat.h"
#include "asn/encode.h"
#include "asn/json.h"
#include "asn/model.h"
#include "asn/remote.h"
#include "asn/record_loop.h"
#include "asn/tool.h"

#include <stdlib.h>
#include <string.h>

/* The command line, as asn_tool_parse fills it. */
typedef struct score_reward_options {
    const char *model;
    const char *template;
    const char *system;
    const char *kind;
    const char *tokenizer;
    const char *api_key;
    asn_strlist server;
    long inflight;
    long retries;
    double timeout;
    const char *shard; /* --shard, --merge: asn_tool_shards */
    asn_strlist merge;
    long threads;
    long ctx;
    long batch_tokens;
    int skip_bad;
    int progress;
    const char *chat_date;
} score_reward_options;

/* The options, with their defaults (the table below points into it). */
static score_reward_options opts = {
    .inflight = 64,
    .retries = 8,
    .timeout = 600,
    .batch_tokens = 2048,
};

static const asn_option options[] = {
    {"model", 'm', ASN_OPT_STRING, &opts.model, "FILE", "GGUF reward model with a classification head (or --server)"},
    {"server", 0, ASN_OPT_LIST, &opts.server, "URL", "score on this server's classify endpoint instead (repeat: several share the load)"},
    {"server-kind", 0, ASN_OPT_STRING, &opts.kind, "KIND", "with --server: asn (serve), vllm or sglang (default: asked of the server)"},
    {"tokenizer", 0, ASN_OPT_STRING, &opts.tokenizer, "GGUF", "with --server: tokenizer and chat template (default: --model's; its weights are not loaded)"},
    {"max-inflight", 0, ASN_OPT_INT, &opts.inflight, "N", "with --server: most requests in flight"},
    {"timeout", 0, ASN_OPT_DOUBLE, &opts.timeout, "S", "with --server: seconds a request may take"},
    {"retries", 0, ASN_OPT_INT, &opts.retries, "N", "with --server: tries after the first (429, 5xx, lost connections)"},
    {"api-key", 0, ASN_OPT_STRING, &opts.api_key, "KEY", "with --server: bearer key"},
    {"chat-template", 0, ASN_OPT_STRING, &opts.template, "NAME", "chat template of the conversation (default: the model's; none: prompt and generation concatenated)"},
    {"chat-date", 0, ASN_OPT_STRING, &opts.chat_date, "DATE", ASN_CHAT_DATE_HELP},
    {"system", 0, ASN_OPT_STRING, &opts.system, "TEXT", "a system message before the prompt (default: none)"},
    {"ctx", 'c', ASN_OPT_INT, &opts.ctx, "N", "score at most the last N tokens of a conversation (0: the model's context)"},
    {"batch-tokens", 0, ASN_OPT_INT, &opts.batch_tokens, "N", "tokens per forward pass"},
    {"threads", 't', ASN_OPT_INT, &opts.threads, "N", "threads (0: all cores)"},
    ASN_OPT_SKIP_BAD(&opts.skip_bad),
    {"progress", 0, ASN_OPT_FLAG, &opts.progress, NULL, "show progress even when stderr is not a terminal"},
    {"shard", 0, ASN_OPT_STRING, &opts.shard, "K/N", "only the records of the prompts of shard K of N (as gen-candidates --shard)"},
    {"merge", 0, ASN_OPT_LIST, &opts.merge, "FILE", "score nothing: merge these shard outputs in the order of the input's prompts"},
    {0},
};

static const asn_tool tool = {
    "score-reward", "-m REWARD_MODEL [OPTIONS] [FILE...]",
    "Label each candidate with the score a reward model gives it.",
    "Input: candidate records. Read: \"prompt\" and \"generation\". Each record\n"
    "gains\n"
    "  reward: the first output of the model's classification head\n"
    "over the conversation [system (--system)], user: prompt, assistant:\n"
    "generation, formatted by the chat template (the model's, or\n"
    "--chat-template NAME; none: system, prompt and generation concatenated as\n"
    "they are, the generation continuing the prompt), tokenized\n"
    "with the model's special tokens and the template's markers parsed. The head\n"
    "reads the last token's final normalized state (decoder reward models,\n"
    "rerankers), or the first token's through cls and tanh (BERT classifiers),\n"
    "as llama.cpp's converter lays them out (cls.output.weight). A conversation\n"
    "longer than --ctx keeps its last tokens. Records of a prompt are scored in\n"
    "one pass of at most --batch-tokens tokens; a reward does not depend on the\n"
    "batching or the thread count. Records keep their input order and every\n"
    "other field.\n"
    "\n"
    "Servers: --server URL sends each conversation's tokens (made here as\n"
    "above, with --tokenizer or --model GGUF) to the server's /classify: asn's\n"
    "serve and vLLM ({\"input\": [ids], \"use_activation\": false}, the reward\n"
    "in data[0].probs[0]) or SGLang ({\"input_ids\": [ids]}, the reward in\n"
    "embedding[0]); llama-server has no such endpoint and is refused. The\n"
    "context is --ctx, else the server's max_model_len (serve, vLLM), else the\n"
    "GGUF's. Against serve with the same GGUF the rewards are --model's, byte\n"
    "for byte.\n" ASN_SHARD_HELP,
    options,
};

typedef struct scorer {
    asn_model *m;
    const asn_vocab *v;
    asn_engine *en;
    int tmpl, max_tokens, n_cls;
    asn_client *c; /* --server */
    int kind;
    char *model;   /* the server's model id */
} scorer;

/* --server: the texts' rewards from the servers. */
static int remote_score(scorer *S, char *const *text, int k, float *out, asn_err *e)
{
    int32_t **ids = asn_xcalloc((size_t)k + 1, sizeof *ids);
    int *lens = asn_xcalloc((size_t)k + 1, sizeof *lens), rc = 0;
    double *r = asn_xcalloc((size_t)k + 1, sizeof *r);
    for (int i = 0; i < k && !rc; i++) {
        rc = asn_classify_tokenize(S->v, text[i], strlen(text[i]), S->max_tokens, &ids[i], &lens[i], e);
        if (!rc && lens[i] == 0)
            rc = asn_err_set(e, "text %d has no tokens", i);
    }
    if (!rc)
        rc = asn_remote_rewards(S->c, S->kind, S->model, ids, lens, k, r, e);
    for (int i = 0; i < k && !rc; i++)
        out[i] = (float)r[i];
    for (int i = 0; i < k; i++)
        free(ids[i]);
    free(ids), free(lens), free(r);
    return rc;
}

/* Scores the records of one prompt (in place); an asn_group_fn. */
static int score_prompt(json_t *recs, asn_group_map *gm, void *ctx, asn_err *e)
{
    scorer *S = ctx;
    size_t n = json_array_size(recs);
    char **text = asn_xcalloc(n + 1, sizeof *text);
    size_t *at = asn_xcalloc(n + 1, sizeof *at);
    int k = 0, rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        json_t *r = json_array_get(recs, i);
        const char *prompt = NULL, *gen = NULL;
        asn_err fe;
        if (asn_get_string(r, "prompt", 1, &prompt, &fe) || asn_get_string(r, "generation", 1, &gen, &fe)) {
            rc = asn_group_map_invalid(gm, i, &fe, e);
            continue;
        }
        asn_chat_msg msgs[3];
        int nm = 0;
        if (opts.system)
            msgs[nm++] = (asn_chat_msg){"system", opts.system};
        msgs[nm++] = (asn_chat_msg){"user", prompt};
        msgs[nm++] = (asn_chat_msg){"assistant", gen};
        if (S->tmpl == ASN_CHAT_NONE) { /* the generation continues the prompt */
            size_t ls = opts.system ? strlen(opts.system) : 0, lp = strlen(prompt), lg = strlen(gen);
            text[k] = asn_xmalloc(ls + lp + lg + 1);
            memcpy(text[k], opts.system ? opts.system : "", ls);
            memcpy(text[k] + ls, prompt, lp);
            memcpy(text[k] + ls + lp, gen, lg + 1);
        } else if (!(text[k] = asn_chat_format(S->tmpl, msgs, (size_t)nm, 0, e))) {
            rc = -1;
            break;
        }
        at[k++] = i;
    }
    float *out = asn_xmalloc(((size_t)k * (size_t)S->n_cls + 1) * sizeof *out);
    if (!rc && k)
        rc = S->c ? remote_score(S, text, k, out, e)
                  : asn_classify_texts(S->en, S->v, (const char *const *)text, NULL, k, S->max_tokens, opts.batch_tokens, out, e);
    for (int j = 0; j < k && !rc; j++)
        json_object_set_new(json_array_get(recs, at[j]), "reward", json_real(out[(size_t)j * S->n_cls]));
    for (int j = 0; j < k; j++)
        free(text[j]);
    free(text), free(at), free(out);
    return rc;
}

/* What main's steps share: the scorer, and what it was made from. */
typedef struct sr_ctx {
    scorer S;
    const char *path; /* the tokenizer's GGUF: --tokenizer with --server, else --model */
    asn_gguf *tok_gguf;
    asn_vocab *own_vocab;
    const asn_gguf *gg;
    asn_pool *pool;
} sr_ctx;

static void check_options(void)
{
    if (!opts.model && !(opts.server.n && opts.tokenizer))
        asn_usage_error(opts.server.n ? "--server needs --tokenizer GGUF (or --model GGUF) to make the tokens"
                                     : "--model (or --server) is required");
    if (!opts.server.n && opts.tokenizer)
        asn_usage_error("--tokenizer goes with --server");
    if (opts.inflight < 1 || opts.retries < 0 || !(opts.timeout > 0))
        asn_usage_error("--max-inflight must be >= 1, --retries >= 0, --timeout > 0");
    if (opts.ctx < 0)
        asn_usage_error("--ctx must be >= 0");
    if (opts.batch_tokens < 1)
        asn_usage_error("--batch-tokens must be >= 1");
}

/* --server: the tokenizer, the client, the server's kind, model and context. */
static void open_server(sr_ctx *g)
{
    asn_err e;
    scorer *S = &g->S;
    if (opts.kind && asn_server_kind_from_name(opts.kind) < 0)
        asn_usage_error("--server-kind must be asn, vllm or sglang");
    if (opts.kind && asn_server_reward_check(asn_server_kind_from_name(opts.kind), &e))
        asn_usage_error("--server-kind %s: %s", opts.kind, e.msg);
    g->tok_gguf = asn_gguf_open(g->path, &e);
    S->v = g->own_vocab = g->tok_gguf ? asn_vocab_load(g->tok_gguf, &e) : NULL;
    if (!S->v)
        asn_fatal("%s: %s", g->path, e.msg);
    g->gg = g->tok_gguf;
    S->n_cls = 1;
    asn_client_settings cs = {opts.server.v, opts.server.n, opts.api_key, (int)opts.inflight, opts.timeout, (int)opts.retries};
    if (!(S->c = asn_client_new(&cs, &e)))
        asn_usage_error("%s", e.msg);
    S->max_tokens = (int)opts.ctx;
    asn_server_info info;
    if (asn_server_probe(S->c, opts.kind, &info, &e))
        asn_fatal("%s", e.msg);
    asn_server_say(S->c, &info);
    S->kind = info.kind;
    if (asn_server_reward_check(S->kind, &e))
        asn_fatal("%s: %s", asn_client_url(S->c, 0), e.msg);
    if (S->kind != ASN_SERVER_SGLANG) { /* the model id, and its context */
        if (!info.model)
            asn_fatal("%s/v1/models: no model in the answer", asn_client_url(S->c, 0));
        S->model = info.model;
        info.model = NULL;
        if (!S->max_tokens && info.max_model_len > 0)
            S->max_tokens = info.max_model_len;
    }
    asn_server_info_free(&info);
    if (!S->max_tokens) { /* the GGUF's context */
        char *arch = NULL, key[160];
        uint32_t n = 0;
        if (asn_gguf_get_str(g->gg, "general.architecture", 1, &arch, &e))
            asn_fatal("%s: %s", g->path, e.msg);
        snprintf(key, sizeof key, "%s.context_length", arch);
        free(arch);
        if (asn_gguf_get_u32(g->gg, key, 1, &n, &e) || n < 1 || n > (1u << 30))
            asn_fatal("%s: no context length (%s); give --ctx", g->path, key);
        S->max_tokens = (int)n;
    }
}

/* --model: the reward model, with its classification head. */
static void open_model(sr_ctx *g)
{
    asn_err e;
    scorer *S = &g->S;
    if (!(S->m = asn_model_load(opts.model, &e)) || !(S->v = asn_model_vocab(S->m, &e)))
        asn_fatal("%s", e.msg);
    const asn_model_config *cfg = asn_model_cfg(S->m);
    if (!cfg->n_cls_out)
        asn_fatal("%s: the model has no classification head (cls.output.weight): not a reward model", opts.model);
    S->n_cls = cfg->n_cls_out;
    S->max_tokens = opts.ctx ? (int)opts.ctx : cfg->n_ctx_train;
    g->gg = asn_model_gguf(S->m);
}

/* The chat template, and the engine of a local model. */
static void finish_setup(sr_ctx *g)
{
    asn_err e;
    scorer *S = &g->S;
    char *tmpl_text = NULL;
    if (asn_gguf_get_str(g->gg, "tokenizer.chat_template", 0, &tmpl_text, &e))
        asn_fatal("%s", e.msg);
    S->tmpl = !opts.template && !tmpl_text ? ASN_CHAT_NONE : asn_chat_for_model(tmpl_text, opts.template, &e);
    free(tmpl_text);
    if (S->tmpl < 0)
        asn_fatal("%s: %s", g->path, e.msg);
    if (S->m) {
        g->pool = asn_pool_new((int)opts.threads);
        if (!(S->en = asn_engine_new(S->m, S->max_tokens, g->pool, &e)))
            asn_fatal("%s", e.msg);
    }
}

static void sr_free(sr_ctx *g)
{
    asn_engine_free(g->S.en);
    asn_pool_free(g->pool);
    asn_model_free(g->S.m);
    asn_client_free(g->S.c);
    free(g->S.model);
    asn_vocab_free(g->own_vocab);
    asn_gguf_close(g->tok_gguf);
}

int main(int argc, char **argv)
{
    int nops = asn_tool_parse(&tool, argc, argv);
    asn_err de;
    if (opts.chat_date && asn_chat_set_date(opts.chat_date, &de))
        asn_usage_error("--chat-date: %s", de.msg);
    if (asn_tool_shards(opts.shard, &opts.merge, nops ? argv + 1 : NULL))
        return 0;
    check_options();
    sr_ctx g = {.path = opts.server.n && opts.tokenizer ? opts.tokenizer : opts.model};
    if (opts.server.n)
        open_server(&g);
    else
        open_model(&g);
    finish_setup(&g);
    long skipped = asn_map_groups(nops ? argv + 1 : NULL, opts.skip_bad, opts.progress, score_prompt, &g.S);
    asn_warn_skipped(skipped);
    asn_close_out(stdout, "-");
    sr_free(&g);
    return 0;
}
