/* serve — asn's engine behind an OpenAI-compatible HTTP API: requests join
 * one batched decode as they arrive (continuous batching over the stream of
 * lib/gen/generate.c, the generator gen-candidates uses), and a seeded
 * request returns the same tokens whatever else the server is doing. */
#include "asn/bt.h"
#include "asn/chat.h"
#include "asn/encode.h"
#include "asn/gen.h"
#include "asn/http.h"
#include "asn/json.h"
#include "asn/openai.h"
#include "asn/tool.h"
#include "asn/sbuf.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

/* The command line, as asn_tool_parse fills it. */
typedef struct serve_options {
    const char *model;
    const char *heuristics;
    const char *host;
    const char *api_key;
    const char *name;
    const char *template;
    const char *port_file;
    long port;
    long threads;
    long batch;
    long ctx;
    long queue;
    long max_tokens;
    long keep_prompts;
    long max_body;
    long max_n;
    int allow_files;
    int verbose;
    const char *chat_date;
} serve_options;

/* The options, with their defaults (the table below points into it). */
static serve_options opts = {
    .host = "127.0.0.1",
    .port = 8000,
    .batch = 16,
    .queue = 64,
    .max_tokens = 4096,
    .keep_prompts = 8,
    .max_body = 1 << 20,
    .max_n = 16,
};

static const asn_option options[] = {
    {"model", 'm', ASN_OPT_STRING, &opts.model, "FILE", "GGUF model (required)"},
    {"heuristics", 'H', ASN_OPT_STRING, &opts.heuristics, "FILE", "heuristics YAML: requests may name these (asn_heuristic)"},
    {"host", 0, ASN_OPT_STRING, &opts.host, "ADDR", "IPv4 address to listen on"},
    {"port", 'p', ASN_OPT_INT, &opts.port, "N", "port (0: any free one)"},
    {"port-file", 0, ASN_OPT_STRING, &opts.port_file, "FILE", "write the port to FILE once listening"},
    {"api-key", 0, ASN_OPT_STRING, &opts.api_key, "KEY", "require \"Authorization: Bearer KEY\" (all but /health)"},
    {"model-name", 0, ASN_OPT_STRING, &opts.name, "NAME", "the model's id in the API (default: general.name, else the file name)"},
    {"chat-template", 0, ASN_OPT_STRING, &opts.template, "NAME", "chat template (default: the model's; none without one)"},
    {"chat-date", 0, ASN_OPT_STRING, &opts.chat_date, "DATE", ASN_CHAT_DATE_HELP},
    {"threads", 't', ASN_OPT_INT, &opts.threads, "N", "threads (0: all cores)"},
    {"batch", 'b', ASN_OPT_INT, &opts.batch, "N", "sequences decoding at once"},
    {"ctx", 'c', ASN_OPT_INT, &opts.ctx, "N", "context size (0: the model's)"},
    {"queue", 'q', ASN_OPT_INT, &opts.queue, "N", "most requests accepted at once (waiting or running); more get 503"},
    {"keep-prompts", 0, ASN_OPT_INT, &opts.keep_prompts, "N", "prefilled prompts kept for later requests with the same prompt"},
    {"max-tokens", 0, ASN_OPT_INT, &opts.max_tokens, "N", "most new tokens a request may ask for"},
    {"max-n", 0, ASN_OPT_INT, &opts.max_n, "N", "most choices (n) a request may ask for"},
    {"max-body", 0, ASN_OPT_INT, &opts.max_body, "BYTES", "largest request body (413 beyond)"},
    {"allow-sampler-files", 0, ASN_OPT_FLAG, &opts.allow_files, NULL, "requests may define learned heuristics (they name files on this machine)"},
    {"verbose", 'v', ASN_OPT_FLAG, &opts.verbose, NULL, "one line per request on stderr"},
    {0},
};

static const asn_tool tool = {
    "serve", "-m MODEL [OPTIONS]",
    "Serve the engine over an OpenAI-compatible HTTP API.",
    "Endpoints: POST /v1/completions (prompt: text or token ids), POST\n"
    "/v1/chat/completions (messages through the chat template), both streamed\n"
    "(\"stream\": true, server-sent events) or not; GET /v1/models; GET /health;\n"
    "POST /classify (a model with a classification head: vLLM's classification\n"
    "API, {\"input\": texts or token ids}; \"use_activation\": false gives the\n"
    "head's raw outputs, score-reward's rewards).\n"
    "Sampling: temperature (0: greedy), top_k, top_p, min_p, typical_p,\n"
    "repetition_penalty, presence_penalty, frequency_penalty, min_tokens,\n"
    "max_tokens, stop, seed, n (choice i draws with seed + i), logprobs.\n"
    "asn_heuristic (a name of --heuristics, or {name, processors}) replaces\n"
    "the sampling parameters by any asn heuristic; asn_prompt_id sets the prompt\n"
    "id that keys the draws. With the same prompt tokens, heuristic, seed,\n"
    "prompt id and settings, the tokens are gen-candidates' (byte-identical),\n"
    "whatever else the server runs. Each choice carries asn_finish (eos, stop,\n"
    "length) and, with \"return_token_ids\": true, token_ids.\n"
    "Prompt log-probabilities: \"echo\": true with \"logprobs\": K on\n"
    "/v1/completions puts the prompt's tokens first in logprobs (token_logprobs\n"
    "[null, log p(t1 | t0), ...] in full double precision, and the top K at\n"
    "each position), as vLLM does; max_tokens may then be 0. These are the\n"
    "numbers rank-bt's judges compute (rank-bt --judge-server).\n"
    "Structured output: OpenAI's response_format ({\"type\": \"json_schema\",\n"
    "\"json_schema\": {\"schema\": ...}} or {\"type\": \"json_object\"}) and\n"
    "llama.cpp's json_schema (a schema) and grammar (GBNF) become asn's\n"
    "json_schema and grammar processors, added to the request's heuristic.\n"
    "Limits: a full queue answers 503 with Retry-After; bad requests get a 4xx\n"
    "JSON error {\"error\": {\"message\", \"type\", \"code\"}}.\n",
    options,
};

/* ------------------------------------------------------------- state */

typedef struct req req;

/* A /classify request: token lists through the classification head, run
 * by the engine's thread. */
typedef struct cls_job {
    int32_t **ids;
    int *lens, n;
    float *out;   /* n x n_cls */
    char *error;
    int done;
    int act;      /* use_activation */
    long total;   /* tokens */
    asn_http_conn *conn; /* the request, until it is answered (S.mu) */
    int gone;     /* the request ended while the engine ran the job: the engine frees it */
} cls_job;

typedef struct server {
    asn_model *m;
    const asn_vocab *v;
    int V, n_ctx, tmpl;
    char *name;
    const char *sha;
    asn_heuristics *hs;
    asn_generator *gen;
    asn_gen_stream *stream;
    asn_pool *pool;
    asn_llscorer *scorer;   /* echo: prompt log-probabilities (made at the first) */
    asn_engine *cls_en;     /* /classify (made at the first) */
    int n_cls;              /* the classification head's outputs (0: none) */
    cls_job **cls_inbox;
    size_t n_cls_inbox, cls_cap;
    pthread_mutex_t mu, tok_mu;
    pthread_cond_t work;
    req **inbox;
    size_t n_inbox, inbox_cap;
    req **active;           /* requests the engine holds */
    size_t n_active, active_cap;
    int accepted;           /* accepted and not finished by the engine */
    int quit;
    long served;
    long prefilled, reused; /* the stream's counts after the last step (S.mu) */
    req **wake;             /* requests with news since the last step: woken together */
    size_t n_wake, wake_cap;
} server;

struct req {
    server *s;
    asn_http_conn *conn;    /* woken with news (tokens, choices done) until it is answered */
    int wake_queued;        /* in S.wake */
    asn_oai_request rq;
    asn_heuristic own;
    const asn_heuristic *h;
    int own_h;
    int32_t *toks;
    int n_toks;
    asn_gen_settings gs;
    asn_gen_job *jobs;
    int n, n_done;
    int refs, cancel, engine_gone;
    char id[48];
    long created;
    /* streaming: tokens so far per choice, what was sent */
    int32_t **ctoks;
    int *n_ctoks, *sent_tok, *fin_sent, *finished;
    size_t *sent_text;
    asn_sbuf out;
    size_t out_pos;
    int done_sent;
    /* echo: the prompt's log-probabilities and text */
    double *echo_lps, *echo_top_lps;
    int32_t *echo_top_ids;
    char *echo_text;
    size_t echo_len;
    asn_oai_echo echo;
};

static server S;

static void req_free(req *r)
{
    for (int i = 0; i < r->n; i++) {
        asn_gen_job_clear(&r->jobs[i]);
        if (r->ctoks)
            free(r->ctoks[i]);
    }
    if (r->own_h)
        asn_heuristic_clear(&r->own);
    free(r->jobs);
    free(r->toks);
    free(r->ctoks);
    free(r->n_ctoks);
    free(r->sent_tok);
    free(r->fin_sent);
    free(r->finished);
    free(r->sent_text);
    asn_sbuf_release(&r->out);
    free(r->echo_lps);
    free(r->echo_top_lps);
    free(r->echo_top_ids);
    free(r->echo_text);
    asn_oai_request_free(&r->rq);
    free(r);
}

/* With S.mu held. */
static void req_unref(req *r)
{
    if (--r->refs == 0)
        req_free(r);
}

/* ------------------------------------------------------------- engine */

/* News of r (with S.mu held): its request is woken after the engine's
 * step, with every other one that had news in it, so that the server's
 * thread wakes about once a step, not once a token. */
static void news(req *r)
{
    if (!r->conn || r->wake_queued)
        return;
    r->wake_queued = 1;
    r->refs++; /* held in S.wake */
    asn_grow((void **)&S.wake, &S.wake_cap, S.n_wake + 1, sizeof *S.wake);
    S.wake[S.n_wake++] = r;
}

/* Wakes the requests that had news (with S.mu held). */
static void wake_all(void)
{
    for (size_t i = 0; i < S.n_wake; i++) {
        req *r = S.wake[i];
        r->wake_queued = 0;
        if (r->conn)
            asn_http_wake(r->conn);
        req_unref(r);
    }
    S.n_wake = 0;
}

static void ev_token(void *ctx, asn_gen_job *job, int32_t tok)
{
    req *r = job->user;
    if (!r->ctoks)
        return;
    int i = (int)(job - r->jobs);
    pthread_mutex_lock(&S.mu);
    r->ctoks[i][r->n_ctoks[i]++] = tok;
    news(r);
    pthread_mutex_unlock(&S.mu);
}

/* The engine lets go of a request (with S.mu held). */
static void engine_release(req *r)
{
    for (size_t i = 0; i < S.n_active; i++)
        if (S.active[i] == r) {
            S.active[i] = S.active[--S.n_active];
            break;
        }
    r->engine_gone = 1;
    S.accepted--;
    req_unref(r);
}

static void ev_done(void *ctx, asn_gen_job *job)
{
    req *r = job->user;
    pthread_mutex_lock(&S.mu);
    if (r->finished)
        r->finished[job - r->jobs] = 1;
    news(r); /* before the engine lets go of r */
    if (++r->n_done == r->n)
        engine_release(r);
    pthread_mutex_unlock(&S.mu);
}

/* echo: the prompt's log-probabilities (in the engine's thread). With
 * max_tokens 0 the request ends here. */
static void echo_prompt(req *r)
{
    asn_err e;
    int top = r->rq.logprobs > 0 ? r->rq.logprobs : 0, rc = 0;
    if (!S.scorer && !(S.scorer = asn_llscorer_new(S.m, 1, 0, S.pool, &e)))
        rc = -1;
    if (!rc) {
        r->echo_lps = asn_xmalloc((size_t)r->n_toks * sizeof *r->echo_lps);
        r->echo_top_ids = asn_xmalloc(((size_t)r->n_toks * (size_t)top + 1) * sizeof *r->echo_top_ids);
        r->echo_top_lps = asn_xmalloc(((size_t)r->n_toks * (size_t)top + 1) * sizeof *r->echo_top_lps);
        rc = asn_llscorer_tokens(S.scorer, r->toks, r->n_toks, r->echo_lps, top, r->echo_top_ids, r->echo_top_lps, &e);
    }
    if (!rc) {
        pthread_mutex_lock(&S.tok_mu);
        rc = asn_detokenize(S.v, r->toks, (size_t)r->n_toks, 0, 1, &r->echo_text, &r->echo_len, &e);
        pthread_mutex_unlock(&S.tok_mu);
    }
    r->echo = (asn_oai_echo){r->toks, r->n_toks, r->echo_text, r->echo_len, r->echo_lps, r->echo_top_ids,
                             r->echo_top_lps};
    for (int k = 0; k < r->n; k++) {
        if (rc)
            r->jobs[k].error = asn_xstrdup(e.msg);
        else if (r->rq.max_tokens == 0)
            r->jobs[k].finish = ASN_FINISH_LENGTH;
        else
            continue;
        ev_done(NULL, &r->jobs[k]);
    }
}

static void cls_free(cls_job *j)
{
    for (int i = 0; i < j->n && j->ids; i++)
        free(j->ids[i]);
    free(j->ids), free(j->lens), free(j->out), free(j->error);
    free(j);
}

static void classify_jobs(cls_job **cj, size_t nc)
{
    asn_err e;
    for (size_t i = 0; i < nc; i++) {
        int rc = 0;
        if (!S.cls_en && !(S.cls_en = asn_engine_new(S.m, S.n_ctx, S.pool, &e)))
            rc = -1;
        if (!rc)
            rc = asn_classify_tokens(S.cls_en, cj[i]->ids, cj[i]->lens, cj[i]->n, 2048, cj[i]->out, &e);
        pthread_mutex_lock(&S.mu);
        if (rc)
            cj[i]->error = asn_xstrdup(e.msg);
        cj[i]->done = 1;
        S.accepted--;
        if (cj[i]->gone)
            cls_free(cj[i]);
        else if (cj[i]->conn)
            asn_http_wake(cj[i]->conn);
        pthread_mutex_unlock(&S.mu);
    }
}

static void engine_loop(void)
{
    req **batch = NULL;
    size_t cap = 0;
    for (;;) {
        pthread_mutex_lock(&S.mu);
        if (asn_stop_requested())
            S.quit = 1;
        if (S.quit) { /* asn_http_stop wakes every waiting request */
            wake_all();
            pthread_mutex_unlock(&S.mu);
            break;
        }
        /* requests whose client went away: their jobs leave the stream */
        for (size_t i = 0; i < S.n_active;) {
            req *r = S.active[i];
            if (!r->cancel) {
                i++;
                continue;
            }
            for (int k = 0; k < r->n; k++)
                if (r->jobs[k].finish == ASN_FINISH_NONE && !r->jobs[k].error)
                    asn_gen_stream_cancel(S.stream, &r->jobs[k]);
            engine_release(r); /* swaps the last one into i */
        }
        size_t n = S.n_inbox, nc = S.n_cls_inbox;
        cls_job *cj[64];
        nc = nc < 64 ? nc : 64;
        if (nc) { /* (no memcpy from an empty inbox) */
            memcpy(cj, S.cls_inbox, nc * sizeof *cj);
            memmove(S.cls_inbox, S.cls_inbox + nc, (S.n_cls_inbox - nc) * sizeof *cj);
            S.n_cls_inbox -= nc;
        }
        asn_grow((void **)&batch, &cap, n + 1, sizeof *batch);
        if (n)
            memcpy(batch, S.inbox, n * sizeof *batch);
        S.n_inbox = 0;
        for (size_t i = 0; i < n; i++) {
            asn_grow((void **)&S.active, &S.active_cap, S.n_active + 1, sizeof *S.active);
            S.active[S.n_active++] = batch[i];
        }
        if (nc) { /* classification first: one pass each, then the decode goes on */
            pthread_mutex_unlock(&S.mu);
            classify_jobs(cj, nc);
            pthread_mutex_lock(&S.mu);
        }
        if (!n && !asn_gen_stream_pending(S.stream)) {
            if (nc) {
                pthread_mutex_unlock(&S.mu);
                continue;
            }
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 200000000;
            if (ts.tv_nsec >= 1000000000)
                ts.tv_sec++, ts.tv_nsec -= 1000000000;
            pthread_cond_timedwait(&S.work, &S.mu, &ts);
            pthread_mutex_unlock(&S.mu);
            continue;
        }
        pthread_mutex_unlock(&S.mu);
        asn_err e;
        for (size_t i = 0; i < n; i++) {
            req *r = batch[i];
            pthread_mutex_lock(&S.mu);
            r->refs++; /* held while the engine reads it */
            pthread_mutex_unlock(&S.mu);
            if (r->rq.echo)
                echo_prompt(r);
            for (int k = 0; k < r->n; k++)
                if (r->jobs[k].finish == ASN_FINISH_NONE && !r->jobs[k].error &&
                    asn_gen_stream_add(S.stream, &r->jobs[k], &e)) { /* checked before: cannot happen */
                    r->jobs[k].error = asn_xstrdup(e.msg);
                    ev_done(NULL, &r->jobs[k]);
                }
            pthread_mutex_lock(&S.mu);
            req_unref(r);
            pthread_mutex_unlock(&S.mu);
        }
        int failed = asn_gen_stream_step(S.stream, &e);
        long prefilled, reused;
        asn_gen_stream_counts(S.stream, &prefilled, &reused);
        pthread_mutex_lock(&S.mu);
        S.prefilled = prefilled, S.reused = reused;
        pthread_mutex_unlock(&S.mu);
        if (failed) {
            asn_warn("engine: %s", e.msg);
            pthread_mutex_lock(&S.mu);
            while (S.n_active) { /* fail what runs; the server goes on */
                req *r = S.active[0];
                for (int k = 0; k < r->n; k++)
                    if (r->jobs[k].finish == ASN_FINISH_NONE && !r->jobs[k].error) {
                        asn_gen_stream_cancel(S.stream, &r->jobs[k]);
                        r->jobs[k].error = asn_xstrdup(e.msg);
                        r->n_done++;
                    }
                news(r);
                engine_release(r);
            }
            pthread_mutex_unlock(&S.mu);
        }
        pthread_mutex_lock(&S.mu);
        wake_all();
        pthread_mutex_unlock(&S.mu);
    }
    free(batch);
}

/* ----------------------------------------------------------- requests */

static void error_json(asn_http_response *out, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void error_json(asn_http_response *out, int status, const char *fmt, ...)
{
    char msg[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    json_t *j = asn_oai_error(status, msg);
    asn_http_json(out, status, asn_json_dumps(j, 0));
    json_decref(j);
    if (status == 503)
        out->retry_after = 1;
}

static int uses_files(const json_t *procs)
{
    size_t i;
    const json_t *p;
    json_array_foreach(procs, i, p)
    {
        const char *n = json_string_value(json_object_get(p, "name"));
        if (n && (!strcmp(n, "learned") || !strcmp(n, "adaptive_sampler")))
            return 1;
        if (json_object_get(json_object_get(p, "params"), "path")) /* a constraint's file */
            return 1;
    }
    return 0;
}

/* Builds a request from its body; answers the client's errors itself. */
static req *build(const asn_http_request *hr, int chat, asn_http_response *out)
{
    req *r = asn_xcalloc(1, sizeof *r);
    r->s = &S;
    asn_err e;
    asn_oai_limits lim = {opts.max_tokens, (int)opts.max_n, S.n_ctx, S.V};
    if (asn_oai_parse(hr->body, hr->len, chat, &lim, &r->rq, &e)) {
        error_json(out, 400, "%s", e.msg);
        goto fail;
    }
    asn_oai_request *rq = &r->rq;
    if (rq->model && strcmp(rq->model, S.name)) {
        error_json(out, 404, "model \"%s\" is not served here (this server has \"%s\")", rq->model, S.name);
        goto fail;
    }
    if (rq->heuristic_name) {
        int k = S.hs ? asn_heuristics_find(S.hs, rq->heuristic_name) : -1;
        if (k < 0) {
            error_json(out, 400, "field \"asn_heuristic\": no heuristic named \"%s\"%s", rq->heuristic_name,
                       S.hs ? " in the server's --heuristics" : " (the server has no --heuristics)");
            goto fail;
        }
        r->h = &S.hs->h[k];
    }
    if (rq->heuristic_name && rq->constraint) { /* the named heuristic and the constraint */
        json_t *procs = json_deep_copy(r->h->processors);
        json_array_append(procs, rq->constraint);
        int bad = asn_heuristic_init(&r->own, r->h->name, procs, &e);
        json_decref(procs);
        if (bad) {
            error_json(out, 400, "structured output: %s", e.msg);
            goto fail;
        }
        r->own_h = 1;
        r->h = &r->own;
    } else if (!rq->heuristic_name) {
        json_t *procs = json_deep_copy(rq->heuristic_def ? json_object_get(rq->heuristic_def, "processors") : rq->processors);
        if (rq->constraint)
            json_array_append(procs, rq->constraint);
        json_decref(rq->processors);
        rq->processors = procs; /* kept with the request */
        const char *hname = rq->heuristic_def ? json_string_value(json_object_get(rq->heuristic_def, "name")) : "params";
        if (!opts.allow_files && uses_files(procs)) {
            error_json(out, 400, "field \"asn_heuristic\": learned samplers and constraint paths name files; this "
                                 "server allows them only by name (--heuristics) or with --allow-sampler-files");
            goto fail;
        }
        if (asn_heuristic_init(&r->own, hname, procs, &e)) {
            error_json(out, 400, "%s: %s", rq->constraint ? "structured output" : "field \"asn_heuristic\"", e.msg);
            goto fail;
        }
        r->own_h = 1;
        r->h = &r->own;
        const char *want = rq->heuristic_def && !rq->constraint ? json_string_value(json_object_get(rq->heuristic_def, "id")) : NULL;
        if (want && strcmp(want, r->own.id)) {
            error_json(out, 400, "field \"asn_heuristic\": id \"%s\" given, its processors make \"%s\"", want,
                       r->own.id);
            goto fail;
        }
    }
    /* the prompt's tokens */
    pthread_mutex_lock(&S.tok_mu);
    int rc = 0;
    if (rq->prompt_ids) {
        r->toks = asn_xmalloc((size_t)rq->n_prompt_ids * sizeof *r->toks);
        memcpy(r->toks, rq->prompt_ids, (size_t)rq->n_prompt_ids * sizeof *r->toks);
        r->n_toks = rq->n_prompt_ids;
    } else {
        char *text = NULL;
        if (chat) {
            size_t nm;
            const char *sys, *user;
            asn_chat_msg *msgs = asn_oai_messages(rq, &nm, &sys, &user);
            text = asn_chat_format(S.tmpl, msgs, nm, 1, &e);
            free(msgs);
        } else {
            text = asn_xstrdup(rq->prompt);
        }
        size_t len = 0;
        rc = !text || asn_tokenize(S.v, text, strlen(text), 1, 1, &r->toks, &len, &e);
        r->n_toks = (int)len;
        free(text);
    }
    pthread_mutex_unlock(&S.tok_mu);
    if (rc) {
        error_json(out, 400, "the prompt: %s", e.msg);
        goto fail;
    }
    if (r->n_toks < 1 || r->n_toks + rq->max_tokens > S.n_ctx) {
        error_json(out, 400, "%d prompt tokens + max_tokens %ld exceed the context of %d", r->n_toks,
                   rq->max_tokens, S.n_ctx);
        goto fail;
    }
    uint64_t seed = rq->seed;
    if (!rq->has_seed && getrandom(&seed, sizeof seed, 0) != sizeof seed)
        seed = (uint64_t)time(NULL);
    if (!rq->has_seed)
        seed >>= 1; /* a JSON integer */
    r->gs = (asn_gen_settings){.min_new_tokens = (int)rq->min_tokens, .max_new_tokens = (int)rq->max_tokens,
                               .stop = rq->stop, .n_stop = rq->n_stop};
    r->n = rq->n;
    r->jobs = asn_xcalloc((size_t)r->n, sizeof *r->jobs);
    for (int i = 0; i < r->n; i++)
        r->jobs[i] = (asn_gen_job){.prompt_id = rq->prompt_id, .prompt_tokens = r->toks, .n_prompt = r->n_toks,
                                   .heuristic = r->h, .seed = seed + (uint64_t)i, .settings = &r->gs,
                                   .top_logprobs = rq->logprobs < 0 ? 0 : rq->logprobs ? rq->logprobs : 1,
                                   .user = r};
    if (rq->stream) {
        r->ctoks = asn_xcalloc((size_t)r->n, sizeof *r->ctoks);
        r->n_ctoks = asn_xcalloc((size_t)r->n, sizeof *r->n_ctoks);
        r->sent_tok = asn_xcalloc((size_t)r->n, sizeof *r->sent_tok);
        r->fin_sent = asn_xcalloc((size_t)r->n, sizeof *r->fin_sent);
        r->finished = asn_xcalloc((size_t)r->n, sizeof *r->finished);
        r->sent_text = asn_xcalloc((size_t)r->n, sizeof *r->sent_text);
        for (int i = 0; i < r->n; i++)
            r->ctoks[i] = asn_xmalloc((size_t)rq->max_tokens * sizeof **r->ctoks);
    }
    r->created = (long)time(NULL);
    static long counter;
    pthread_mutex_lock(&S.mu);
    long k = ++counter;
    pthread_mutex_unlock(&S.mu);
    snprintf(r->id, sizeof r->id, "%s-%ld-%ld", chat ? "chatcmpl" : "cmpl", r->created, k);
    return r;
fail:
    req_free(r);
    return NULL;
}

/* Hands a request to the engine; 0, or -1 when the queue is full. */
static int submit(req *r, asn_http_conn *conn)
{
    pthread_mutex_lock(&S.mu);
    if (S.accepted >= opts.queue || S.quit) {
        pthread_mutex_unlock(&S.mu);
        return -1;
    }
    S.accepted++;
    r->refs = 2; /* the connection and the engine */
    r->conn = conn;
    asn_grow((void **)&S.inbox, &S.inbox_cap, S.n_inbox + 1, sizeof *S.inbox);
    S.inbox[S.n_inbox++] = r;
    pthread_cond_signal(&S.work);
    pthread_mutex_unlock(&S.mu);
    return 0;
}

static const char *first_error(const req *r)
{
    for (int i = 0; i < r->n; i++)
        if (r->jobs[i].error)
            return r->jobs[i].error;
    return NULL;
}

static asn_oai_choice choice_of(const req *r, const asn_gen_job *j)
{
    asn_oai_choice c = {j->tokens, j->n_tokens, j->generation, j->generation_len, j->finish,
                        j->logprobs, j->top_ids, j->top_lps, r->rq.logprobs > 0 ? r->rq.logprobs : 0,
                        r->rq.echo ? &r->echo : NULL};
    return c;
}

/* The connection lets go of r (with S.mu held): the engine drops what is
 * left of it. */
static void conn_release(req *r)
{
    r->conn = NULL;
    if (!r->engine_gone) {
        r->cancel = 1;
        pthread_cond_signal(&S.work);
    }
    req_unref(r);
}

/* A whole answer (the request's later): 0 until every choice is done. */
static int answer_whole(void *ctx, asn_http_response *out)
{
    req *r = ctx;
    pthread_mutex_lock(&S.mu);
    if (r->n_done < r->n && !S.quit) {
        pthread_mutex_unlock(&S.mu);
        return 0;
    }
    int finished = r->n_done == r->n;
    r->conn = NULL;
    if (!finished)
        r->cancel = 1;
    pthread_mutex_unlock(&S.mu);
    const char *err = finished ? first_error(r) : NULL;
    if (!finished) {
        error_json(out, 503, "the server is shutting down");
    } else if (err) {
        error_json(out, 400, "%s", err);
    } else {
        asn_oai_choice *ch = asn_xcalloc((size_t)r->n, sizeof *ch);
        for (int i = 0; i < r->n; i++)
            ch[i] = choice_of(r, &r->jobs[i]);
        json_t *j = asn_oai_response(&r->rq, r->id, r->created, S.name, S.v, ch, r->n, r->n_toks);
        asn_http_json(out, 200, asn_json_dumps(j, 0));
        json_decref(j);
        free(ch);
    }
    pthread_mutex_lock(&S.mu);
    req_unref(r);
    pthread_mutex_unlock(&S.mu);
    return 1;
}

/* The request ended before its answer (the server stops). */
static void whole_gone(void *ctx)
{
    pthread_mutex_lock(&S.mu);
    conn_release(ctx);
    pthread_mutex_unlock(&S.mu);
}

/* ----------------------------------------------------------- streaming */

static void out_add(req *r, const char *s, size_t n) { asn_sbuf_add(&r->out, s, n); }

static void out_event(req *r, json_t *j)
{
    char *s = asn_json_dumps(j, 0);
    json_decref(j);
    out_add(r, "data: ", 6);
    out_add(r, s, strlen(s));
    out_add(r, "\n\n", 2);
    free(s);
}

/* Bytes at the end of text that may not be sent yet: the start of a stop
 * string, or of a UTF-8 character. */
static size_t held_back(const req *r, const char *t, size_t n)
{
    size_t hold = 0;
    for (int i = 0; i < r->rq.n_stop; i++) {
        size_t sl = strlen(r->rq.stop[i]);
        for (size_t k = sl - 1; k > hold && k > 0; k--)
            if (k <= n && !memcmp(t + n - k, r->rq.stop[i], k)) {
                hold = k;
                break;
            }
    }
    size_t u = 0; /* an unfinished UTF-8 sequence */
    for (size_t k = 1; k <= 3 && k <= n; k++) {
        unsigned char c = (unsigned char)t[n - k];
        if ((c & 0xC0) == 0x80)
            continue;
        if (c >= 0xC0 && k < (c >= 0xF0 ? 4u : c >= 0xE0 ? 3u : 2u))
            u = k;
        break;
    }
    return hold > u ? hold : u;
}

/* New chunks for every choice (with S.mu held); 1 if any. */
static int make_chunks(req *r)
{
    int any = 0;
    for (int i = 0; i < r->n; i++) {
        asn_gen_job *j = &r->jobs[i];
        if (r->fin_sent[i])
            continue;
        int done = r->finished[i];
        int nt = r->n_ctoks[i];
        if (done && j->error) {
            json_t *err = asn_oai_error(400, j->error);
            out_event(r, err);
            r->fin_sent[i] = 1;
            any = 1;
            continue;
        }
        if (nt == r->sent_tok[i] && !done)
            continue;
        char *text = NULL;
        size_t len = 0, upto;
        asn_err e;
        if (done) {
            text = j->generation;
            upto = len = j->generation_len;
        } else {
            pthread_mutex_lock(&S.tok_mu);
            int bad = asn_detokenize(S.v, r->ctoks[i], (size_t)nt, 1, 0, &text, &len, &e);
            pthread_mutex_unlock(&S.tok_mu);
            if (bad)
                len = 0;
            upto = len - held_back(r, text, len);
        }
        size_t from = r->sent_text[i] < upto ? r->sent_text[i] : upto;
        asn_oai_choice c = {r->ctoks[i] + r->sent_tok[i], nt - r->sent_tok[i], text ? text + from : "", upto - from,
                            done ? j->finish : ASN_FINISH_NONE,
                            j->top_logprobs && j->logprobs ? j->logprobs + r->sent_tok[i] : NULL,
                            j->top_ids ? j->top_ids + (size_t)r->sent_tok[i] * j->top_logprobs : NULL,
                            j->top_lps ? j->top_lps + (size_t)r->sent_tok[i] * j->top_logprobs : NULL,
                            r->rq.logprobs > 0 ? r->rq.logprobs : 0, NULL};
        if (upto > from || c.n_tokens || done) {
            out_event(r, asn_oai_chunk(&r->rq, r->id, r->created, S.name, S.v, i, &c));
            any = 1;
        }
        r->sent_text[i] = upto > r->sent_text[i] ? upto : r->sent_text[i];
        r->sent_tok[i] = nt;
        if (done)
            r->fin_sent[i] = 1;
        else
            free(text);
    }
    return any;
}

static ssize_t stream_read(void *ctx, char *buf, size_t max)
{
    req *r = ctx;
    pthread_mutex_lock(&S.mu);
    for (;;) {
        if (r->out_pos < r->out.len) {
            size_t k = r->out.len - r->out_pos < max ? r->out.len - r->out_pos : max;
            memcpy(buf, r->out.buf + r->out_pos, k);
            r->out_pos += k;
            if (r->out_pos == r->out.len) {
                r->out_pos = 0;
                asn_sbuf_reset(&r->out);
            }
            pthread_mutex_unlock(&S.mu);
            return (ssize_t)k;
        }
        if (r->done_sent) {
            pthread_mutex_unlock(&S.mu);
            return 0;
        }
        if (make_chunks(r))
            continue;
        int all = 1;
        for (int i = 0; i < r->n; i++)
            all &= r->fin_sent[i];
        if (all) {
            out_add(r, "data: [DONE]\n\n", 14);
            r->done_sent = 1;
            continue;
        }
        int quit = S.quit;
        pthread_mutex_unlock(&S.mu);
        return quit ? -1 : ASN_HTTP_LATER; /* asked again at the next news */
    }
}

/* The stream ended, or the client went away. */
static void stream_done(void *ctx)
{
    pthread_mutex_lock(&S.mu);
    conn_release(ctx);
    pthread_mutex_unlock(&S.mu);
}

/* ------------------------------------------------------------ classify */

static int cls_answer(void *ctx, asn_http_response *out);
static void cls_gone(void *ctx);

/* POST /classify, vLLM's classification API: {"model", "input": text |
 * [texts] | [ids] | [[ids]], "use_activation" (or "activation"): true}
 * -> {"id", "object": "list", "created", "model", "data": [{"index",
 * "label": "LABEL_k" (the largest output), "probs": [...], "num_classes"}],
 * "usage"}. probs are the head's outputs through a softmax (a sigmoid for
 * one output) as vLLM gives them, or as they are with use_activation
 * false: the numbers score-reward -m writes. A text is tokenized with
 * special tokens added and parsed, and cut to the last --ctx tokens. The
 * engine's thread runs the job; the answer is the request's later. */
static void classify(const asn_http_request *hr, asn_http_response *out)
{
    if (!S.n_cls)
        return error_json(out, 400, "this server's model has no classification head (cls.output.weight)");
    json_error_t je;
    json_t *body = json_loadb(hr->body, hr->len, JSON_REJECT_DUPLICATES, &je);
    cls_job *job = asn_xcalloc(1, sizeof *job);
    const json_t *model = json_object_get(body, "model"), *in = json_object_get(body, "input");
    asn_err e;
    job->act = 1;
    if (!body)
        { error_json(out, 400, "the body is not JSON: line %d, column %d: %s", je.line, je.column, je.text); goto done; }
    if (!json_is_object(body))
        { error_json(out, 400, "the body must be a JSON object"); goto done; }
    if (model && !json_is_null(model) && (!json_is_string(model) || strcmp(json_string_value(model), S.name)))
        { error_json(out, 404, "field \"model\": this server has \"%s\"", S.name); goto done; }
    for (int k = 0; k < 2; k++) {
        const json_t *a = json_object_get(body, k ? "activation" : "use_activation");
        if (a && !json_is_null(a) && !json_is_boolean(a))
            { error_json(out, 400, "field \"%s\" must be true or false", k ? "activation" : "use_activation"); goto done; }
        if (json_is_false(a))
            job->act = 0;
    }
    /* input: one item, or a list of them; an item is a text or a list of ids */
    json_t *items = json_array();
    if (json_is_string(in) || (json_is_array(in) && json_array_size(in) && json_is_integer(json_array_get(in, 0))))
        json_array_append(items, (json_t *)in);
    else if (json_is_array(in))
        json_array_extend(items, (json_t *)in);
    job->n = (int)json_array_size(items);
    if (!job->n || job->n > 256) {
        json_decref(items);
        error_json(out, 400, "field \"input\" must be a text, a list of token ids, or a list of 1 to 256 of them");
        goto done;
    }
    job->ids = asn_xcalloc((size_t)job->n, sizeof *job->ids);
    job->lens = asn_xcalloc((size_t)job->n, sizeof *job->lens);
    for (int i = 0; i < job->n; i++) {
        const json_t *it = json_array_get(items, (size_t)i);
        if (json_is_string(it)) {
            pthread_mutex_lock(&S.tok_mu);
            int rc = asn_classify_tokenize(S.v, json_string_value(it), json_string_length(it), S.n_ctx, &job->ids[i],
                                           &job->lens[i], &e);
            pthread_mutex_unlock(&S.tok_mu);
            if (rc)
                { json_decref(items); error_json(out, 400, "field \"input\": item %d: %s", i, e.msg); goto done; }
        } else if (json_is_array(it) && json_array_size(it) && json_array_size(it) <= (size_t)S.n_ctx) {
            job->lens[i] = (int)json_array_size(it);
            job->ids[i] = asn_xmalloc((size_t)job->lens[i] * sizeof **job->ids);
            for (int k = 0; k < job->lens[i]; k++) {
                const json_t *t = json_array_get(it, (size_t)k);
                if (!json_is_integer(t) || json_integer_value(t) < 0 || json_integer_value(t) >= S.V) {
                    json_decref(items);
                    error_json(out, 400, "field \"input\": item %d, token %d must be a token id from 0 to %d", i, k, S.V - 1);
                    goto done;
                }
                job->ids[i][k] = (int32_t)json_integer_value(t);
            }
        } else {
            json_decref(items);
            error_json(out, 400, "field \"input\": item %d must be a text or a list of 1 to %d token ids", i, S.n_ctx);
            goto done;
        }
        if (job->lens[i] < 1)
            { json_decref(items); error_json(out, 400, "field \"input\": item %d has no tokens", i); goto done; }
        job->total += job->lens[i];
    }
    json_decref(items);
    job->out = asn_xmalloc((size_t)job->n * (size_t)S.n_cls * sizeof *job->out);
    pthread_mutex_lock(&S.mu);
    if (S.accepted >= opts.queue || S.quit) {
        pthread_mutex_unlock(&S.mu);
        error_json(out, 503, "the server is busy: %ld requests are waiting or running", opts.queue);
        goto done;
    }
    S.accepted++;
    job->conn = hr->conn;
    asn_grow((void **)&S.cls_inbox, &S.cls_cap, S.n_cls_inbox + 1, sizeof *S.cls_inbox);
    S.cls_inbox[S.n_cls_inbox++] = job;
    pthread_cond_signal(&S.work);
    pthread_mutex_unlock(&S.mu);
    json_decref(body);
    out->later = cls_answer;
    out->done = cls_gone;
    out->ctx = job;
    return;
done:
    cls_free(job);
    json_decref(body);
}

/* The job leaves the engine's inbox, if it is there (with S.mu held); 1 if
 * it was. */
static int cls_unqueue(cls_job *job)
{
    for (size_t i = 0; i < S.n_cls_inbox; i++)
        if (S.cls_inbox[i] == job) {
            memmove(S.cls_inbox + i, S.cls_inbox + i + 1, (S.n_cls_inbox - i - 1) * sizeof *S.cls_inbox);
            S.n_cls_inbox--;
            return 1;
        }
    return 0;
}

/* The request ended before its answer (the server stops). */
static void cls_gone(void *ctx)
{
    cls_job *job = ctx;
    pthread_mutex_lock(&S.mu);
    job->conn = NULL;
    if (job->done || cls_unqueue(job))
        cls_free(job);
    else
        job->gone = 1; /* the engine runs it: it frees it */
    pthread_mutex_unlock(&S.mu);
}

/* A /classify answer (the request's later): 0 until the engine ran it. */
static int cls_answer(void *ctx, asn_http_response *out)
{
    cls_job *job = ctx;
    pthread_mutex_lock(&S.mu);
    if (!job->done && !S.quit) {
        pthread_mutex_unlock(&S.mu);
        return 0;
    }
    job->conn = NULL;
    if (!job->done && !cls_unqueue(job)) { /* (the engine stops only between jobs) */
        job->gone = 1;
        pthread_mutex_unlock(&S.mu);
        error_json(out, 503, "the server is shutting down");
        return 1;
    }
    pthread_mutex_unlock(&S.mu);
    if (!job->done) {
        error_json(out, 503, "the server is shutting down");
    } else if (job->error) {
        error_json(out, 400, "%s", job->error);
    } else {
        static long counter;
        long created = (long)time(NULL);
        char id[64];
        pthread_mutex_lock(&S.mu);
        snprintf(id, sizeof id, "classify-%ld-%ld", created, ++counter);
        pthread_mutex_unlock(&S.mu);
        json_t *data = json_array();
        for (int i = 0; i < job->n; i++) {
            const float *o = job->out + (size_t)i * S.n_cls;
            int best = 0;
            double mx = o[0], z = 0;
            for (int k = 1; k < S.n_cls; k++)
                if (o[k] > o[best])
                    best = k, mx = o[k];
            for (int k = 0; k < S.n_cls; k++)
                z += exp((double)o[k] - mx);
            json_t *probs = json_array();
            for (int k = 0; k < S.n_cls; k++) {
                double v = !job->act ? (double)o[k] : S.n_cls == 1 ? 1.0 / (1.0 + exp(-(double)o[k])) : exp((double)o[k] - mx) / z;
                json_array_append_new(probs, isfinite(v) ? json_real(v) : json_null());
            }
            char label[32];
            snprintf(label, sizeof label, "LABEL_%d", best);
            json_array_append_new(data, json_pack("{s:i,s:s,s:o,s:i}", "index", i, "label", label, "probs", probs,
                                                  "num_classes", S.n_cls));
        }
        json_t *j = json_pack("{s:s,s:s,s:I,s:s,s:o,s:{s:I,s:I,s:i}}", "id", id, "object", "list", "created",
                              (json_int_t)created, "model", S.name, "data", data, "usage", "prompt_tokens",
                              (json_int_t)job->total, "total_tokens", (json_int_t)job->total, "completion_tokens", 0);
        asn_http_json(out, 200, asn_json_dumps(j, 0));
        json_decref(j);
    }
    cls_free(job);
    return 1;
}

/* -------------------------------------------------------------- routes */

static int authorized(const asn_http_request *hr)
{
    if (!opts.api_key)
        return 1;
    const char *a = hr->authorization;
    return a && !strncmp(a, "Bearer ", 7) && !strcmp(a + 7, opts.api_key);
}

static void handle(void *ctx, const asn_http_request *hr, asn_http_response *out)
{
    (void)ctx;
    const char *p = hr->path;
    int get = !strcmp(hr->method, "GET"), post = !strcmp(hr->method, "POST");
    if (!strcmp(p, "/health")) {
        pthread_mutex_lock(&S.mu);
        char buf[160];
        snprintf(buf, sizeof buf, "{\"status\":\"ok\",\"accepted\":%d,\"queue\":%ld}", S.accepted, opts.queue);
        pthread_mutex_unlock(&S.mu);
        asn_http_json(out, 200, asn_xstrdup(buf));
        return;
    }
    if (!authorized(hr)) {
        error_json(out, 401, "a valid \"Authorization: Bearer KEY\" header is required");
        return;
    }
    if (!strcmp(p, "/classify") || !strcmp(p, "/v1/classify")) {
        if (!post)
            { error_json(out, 405, "use POST for %s", p); return; }
        return classify(hr, out);
    }
    int chat = !strcmp(p, "/v1/chat/completions");
    if (!strcmp(p, "/v1/models")) {
        if (!get)
            { error_json(out, 405, "use GET for %s", p); return; }
        pthread_mutex_lock(&S.mu);
        long prefills = S.prefilled, reused = S.reused;
        pthread_mutex_unlock(&S.mu);
        json_t *j = json_pack("{s:s,s:[{s:s,s:s,s:i,s:s,s:i,s:{s:s,s:s,s:i,s:i,s:i,s:I,s:I}}]}", "object", "list", "data",
                              "id", S.name, "object", "model", "created", 0, "owned_by", "asn", "max_model_len", S.n_ctx,
                              "asn", "sha256", S.sha, "chat_template", asn_chat_name(S.tmpl), "n_vocab", S.V,
                              "batch", (int)opts.batch, "queue", (int)opts.queue, "prompts_prefilled",
                              (json_int_t)prefills, "prompts_reused", (json_int_t)reused);
        asn_http_json(out, 200, asn_json_dumps(j, 0));
        json_decref(j);
        return;
    }
    if (!chat && strcmp(p, "/v1/completions"))
        { error_json(out, 404, "no endpoint %s", p); return; }
    if (!post)
        { error_json(out, 405, "use POST for %s", p); return; }
    req *r = build(hr, chat, out);
    if (!r)
        return;
    if (opts.verbose)
        asn_warn("%s %s: %d prompt tokens, n=%d, max_tokens=%ld, heuristic \"%s\"", r->id, p, r->n_toks, r->n,
                 r->rq.max_tokens, r->h->name);
    if (submit(r, hr->conn)) {
        req_free(r);
        { error_json(out, 503, "the server is busy: %ld requests are waiting or running", opts.queue); return; }
    }
    if (!r->rq.stream) {
        out->later = answer_whole;
        out->done = whole_gone;
        out->ctx = r;
        return;
    }
    out->status = 200;
    out->content_type = "text/event-stream";
    out->read = stream_read;
    out->done = stream_done;
    out->ctx = r;
}

static void check_options(int nops)
{
    asn_err de;
    if (opts.chat_date && asn_chat_set_date(opts.chat_date, &de))
        asn_usage_error("--chat-date: %s", de.msg);
    if (nops)
        asn_usage_error("no operands expected");
    if (!opts.model)
        asn_usage_error("--model is required");
    if (opts.batch < 1 || opts.queue < 1 || opts.max_tokens < 1 || opts.max_body < 64 || opts.max_n < 1)
        asn_usage_error("--batch, --queue, --max-tokens and --max-n must be >= 1, --max-body >= 64");
}

/* The model, its digest, chat template and name; --heuristics. */
static void load_model(void)
{
    asn_err e;
    S.m = asn_model_load(opts.model, &e);
    S.v = S.m ? asn_model_vocab(S.m, &e) : NULL;
    if (!S.v || !(S.sha = asn_model_sha256(S.m, &e)))
        asn_fatal("%s", e.msg);
    if (opts.heuristics && !(S.hs = asn_heuristics_load(opts.heuristics, &e)))
        asn_fatal("%s", e.msg);
    char *tmpl_text = NULL, *gname = NULL;
    const asn_gguf *gg = asn_model_gguf(S.m);
    if (asn_gguf_get_str(gg, "tokenizer.chat_template", 0, &tmpl_text, &e) ||
        asn_gguf_get_str(gg, "general.name", 0, &gname, &e))
        asn_fatal("%s", e.msg);
    S.tmpl = !opts.template && !tmpl_text ? ASN_CHAT_NONE : asn_chat_for_model(tmpl_text, opts.template, &e);
    if (S.tmpl < 0)
        asn_fatal("%s: %s", opts.model, e.msg);
    free(tmpl_text);
    const char *base = strrchr(opts.model, '/') ? strrchr(opts.model, '/') + 1 : opts.model;
    S.name = asn_xstrdup(opts.name ? opts.name : gname ? gname : base);
    free(gname);
    S.V = asn_model_cfg(S.m)->n_vocab;
    S.n_cls = asn_model_cfg(S.m)->n_cls_out;
    S.n_ctx = opts.ctx > 0 ? (int)opts.ctx : asn_model_cfg(S.m)->n_ctx_train;
}

/* The batched generator and its stream; the locks. */
static void start_engine(void)
{
    asn_err e;
    S.pool = asn_pool_new((int)opts.threads);
    asn_gen_settings gs = {.max_new_tokens = 1};
    if (!(S.gen = asn_generator_new(S.m, S.pool, (int)opts.batch, S.n_ctx, &gs, &e)))
        asn_fatal("%s", e.msg);
    asn_gen_events ev = {ev_token, ev_done, NULL};
    S.stream = asn_gen_stream_new(S.gen, &ev);
    asn_gen_stream_keep(S.stream, (int)opts.keep_prompts);
    pthread_mutex_init(&S.mu, NULL);
    pthread_mutex_init(&S.tok_mu, NULL);
    pthread_cond_init(&S.work, NULL);
}

/* The HTTP server, and its port in --port-file. */
static asn_http_server *listen_http(void)
{
    asn_err e;
    asn_http_settings hs = {opts.host, (int)opts.port, (size_t)opts.max_body, (int)opts.queue + 16, 600};
    asn_http_server *srv = asn_http_start(&hs, handle, NULL, &e);
    if (!srv)
        asn_fatal("%s", e.msg);
    fprintf(stderr, "serve: %s on http://%s:%d (batch %ld, queue %ld)\n", S.name, opts.host, asn_http_port(srv),
            opts.batch, opts.queue);
    if (opts.port_file) {
        FILE *f = asn_open_out(opts.port_file);
        fprintf(f, "%d\n", asn_http_port(srv));
        asn_close_out(f, opts.port_file);
    }
    return srv;
}

static void server_free(void)
{
    asn_gen_stream_free(S.stream);
    asn_llscorer_free(S.scorer);
    asn_engine_free(S.cls_en);
    free(S.cls_inbox);
    asn_generator_free(S.gen);
    asn_pool_free(S.pool);
    asn_heuristics_free(S.hs);
    asn_model_free(S.m);
    free(S.active);
    free(S.inbox);
    free(S.wake);
    free(S.name);
}

int main(int argc, char **argv)
{
    int nops = asn_tool_parse(&tool, argc, argv);
    check_options(nops);
    signal(SIGPIPE, SIG_IGN);
    load_model();
    start_engine();
    asn_catch_stop();
    asn_http_server *srv = listen_http();
    engine_loop();
    asn_http_stop(srv);
    server_free();
    return 0;
}
