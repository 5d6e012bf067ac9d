/* asn/client.h — generating through OpenAI-compatible servers: what each
 * server kind can express of a heuristic (a table per kind, refusing what
 * it cannot), the request body of one candidate, the tokens of a response,
 * and a libcurl client that keeps many requests in flight over several
 * servers with timeouts, retries and servers taken out of rotation. */
#ifndef ASN_CLIENT_H
#define ASN_CLIENT_H

#include <jansson.h>
#include <stdint.h>

#include "asn/core.h"
#include "asn/gen.h"
#include "asn/sampling.h"

typedef enum asn_server_kind {
    ASN_SERVER_ASN,    /* asn's serve: every heuristic, by definition */
    ASN_SERVER_VLLM,   /* /v1/completions with vLLM's extra parameters */
    ASN_SERVER_SGLANG, /* /generate with SGLang's sampling_params */
    ASN_SERVER_LLAMA,  /* llama-server's /completion (llama.cpp samplers, ordered) */
    ASN_SERVER_KINDS
} asn_server_kind;

/* "asn", "vllm", "sglang", "llama-server"; -1 for another name. */
int asn_server_kind_from_name(const char *name);
const char *asn_server_kind_name(int kind);
/* The endpoint a kind generates on ("/v1/completions", "/generate", "/completion"). */
const char *asn_server_path(int kind);

/* 0 when the kind can run h exactly (its processors, their parameters and
 * their order) with settings s; else -1 with e = 'heuristic "NAME": KIND
 * cannot express processor N (NAME) parameter "P"', or why the order or a
 * setting cannot be kept. */
int asn_server_check(int kind, const asn_heuristic *h, const asn_gen_settings *s, asn_err *e);

/* What one candidate asks for. */
typedef struct asn_server_job {
    const char *model;          /* the server's model id (may be NULL) */
    const char *prompt_id;
    const int32_t *prompt;      /* prompt token ids */
    int n_prompt;
    const asn_heuristic *h;     /* checked by asn_server_check */
    uint64_t seed;
    const asn_gen_settings *s;  /* min/max new tokens, stops */
} asn_server_job;

/* The request body (new reference) of a job for a kind. */
json_t *asn_server_body(int kind, const asn_server_job *j);

/* The generated token ids of a response body: *ids new, *n their count.
 * -1 with e when the body is not a response of the kind or has no ids. */
int asn_server_tokens(int kind, const char *body, size_t len, int32_t **ids, int *n, asn_err *e);

/* ---------------------------------------------------------------- client */

typedef struct asn_client_settings {
    const char *const *urls;    /* base URLs ("http://127.0.0.1:8000") */
    int n_urls;
    const char *api_key;        /* Authorization: Bearer (may be NULL) */
    int max_inflight;           /* requests in flight over all servers */
    double timeout_s;           /* one request, connection included */
    int retries;                /* tries after the first, per request */
} asn_client_settings;

typedef struct asn_client asn_client;

asn_client *asn_client_new(const asn_client_settings *s, asn_err *e);
void asn_client_free(asn_client *c);

/* Called once per request as answers arrive (any order), in the calling
 * thread: i, and the 2xx body. Return 0, or -1 with e to stop the run. */
typedef int (*asn_client_done)(void *ctx, int i, const char *body, size_t len, asn_err *e);

/* POSTs bodies[0..n) (JSON text) to path, spread over the servers in
 * rotation. 429, 5xx, timeouts and connection failures are retried with
 * backoff (Retry-After honoured), on another server when there is one; a
 * server that fails to connect is left out for a while (doubling), then
 * tried again. Another 4xx, a request out of tries, or done failing ends
 * the run: -1 with e. */
int asn_client_post_all(asn_client *c, const char *path, char *const *bodies, int n, asn_client_done done,
                        void *ctx, asn_err *e);

/* GET path from the first server that answers; *body new. */
int asn_client_get(asn_client *c, const char *path, char **body, size_t *len, asn_err *e);

/* GET path from server srv only (index into the settings' urls); *status
 * the HTTP status of a 4xx answer (0 when the server did not answer). */
int asn_client_get_at(asn_client *c, int srv, const char *path, char **body, size_t *len, long *status, asn_err *e);

int asn_client_n_servers(const asn_client *c);
const char *asn_client_url(const asn_client *c, int srv); /* without a trailing slash */

/* At most limit requests in flight on server srv (its slots: more only
 * queue there, and llama-server's HTTP threads stall on idle kept-alive
 * connections beyond them); 0: --max-inflight alone. */
void asn_client_set_limit(asn_client *c, int srv, int limit);

/* ------------------------------------------------------------ detection */

/* What a server says of itself (lib/net/detect.c). */
typedef struct asn_server_info {
    int kind;
    char how[96];       /* what told the kind ("/v1/models owned_by \"vllm\"", "GET /props"); "" when given */
    char *model;        /* /v1/models data[0].id (NULL: none) */
    char *sha256;       /* serve's digest of its GGUF (NULL: not said) */
    int max_model_len;  /* the model's context (0: not said) */
    int slots;          /* llama-server's total_slots, serve's batch (0: not said) */
    int limit;          /* requests the client keeps in flight there (0: no limit of its own) */
} asn_server_info;

/* The kind of a /v1/models answer by its data[0].owned_by (or serve's
 * "asn" object); -1 when it names none of the kinds. */
int asn_server_models_kind(const json_t *models);

/* Asks the servers of c: the kind named by kind_name, or when NULL
 * detected (/v1/models owned_by, else /props, /get_model_info, /version);
 * the model's id, digest and context; each server's limit of requests in
 * flight: llama-server's slots, twice serve's batch. -1 with e when the kind
 * cannot be told. */
int asn_server_probe(asn_client *c, const char *kind_name, asn_server_info *info, asn_err *e);
void asn_server_info_free(asn_server_info *info);
/* "PROG: URL is KIND (detected: HOW)" on stderr when the kind was detected. */
void asn_server_say(const asn_client *c, const asn_server_info *info);

/* Requests sent (tries included) and retried, for progress lines. */
void asn_client_counts(const asn_client *c, long *sent, long *retried);

#endif
