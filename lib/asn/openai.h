/* asn/openai.h — the OpenAI-compatible completion API as asn speaks it:
 * request bodies of /v1/completions and /v1/chat/completions read into one
 * request (every field checked, errors naming the field), a sampling
 * heuristic made from the request's parameters, and the JSON of responses,
 * stream chunks and errors. No HTTP here: serve (tools/serve.c) puts it
 * behind a server, the fuzz target feeds it bytes.
 *
 * asn's extensions to the request (all optional):
 *   asn_heuristic    a heuristic by name (of the server's --heuristics file)
 *                    or as {name, processors} (a candidate record's
 *                    "heuristic"); replaces the sampling parameters
 *   asn_prompt_id    the prompt id that keys the random draws with seed and
 *                    heuristic id (gen-candidates' prompt_id); default: the
 *                    first 16 hex of SHA-256 of system 0x1F prompt (chat:
 *                    the system and the last user message), or of the
 *                    prompt text, or of the token ids written "1,2,3"
 *   min_tokens       end of generation masked before this many tokens
 *   return_token_ids each choice gets "token_ids" (vLLM's name)
 * structured output, one of (mapped onto asn's constraint processors,
 * which mask the logits before the heuristic's others):
 *   response_format  OpenAI's {"type": "json_schema", "json_schema":
 *                    {"schema": S, ...}} (json_schema {schema: S}),
 *                    {"type": "json_object"} (json_schema {schema:
 *                    {"type": "object"}}) or {"type": "text"} (none)
 *   json_schema      llama.cpp's: a schema (json_schema {schema})
 *   grammar          llama.cpp's: GBNF text (grammar {gbnf})
 * and, of the OpenAI legacy completions API (vLLM's layout):
 *   echo             completions: the prompt is echoed before each
 *                    choice's text and, with logprobs, its tokens come
 *                    first in logprobs: token_logprobs [null, lp1, ...]
 *                    (log p of each prompt token given those before it,
 *                    in full double precision), top_logprobs [null,
 *                    {piece: lp} of the top `logprobs` tokens and the
 *                    prompt's own]. max_tokens may then be 0 (only the
 *                    prompt is scored). Not with stream. */
#ifndef ASN_OPENAI_H
#define ASN_OPENAI_H

#include <jansson.h>
#include <stdint.h>

#include "asn/core.h"
#include "asn/gen.h"
#include "asn/vocab.h"

typedef struct asn_oai_limits {
    long max_tokens;     /* most new tokens a request may ask for */
    int max_n;           /* most choices */
    int max_prompt;      /* most prompt tokens (an id array) */
    int n_vocab;         /* ids must be below */
} asn_oai_limits;

typedef struct asn_oai_request {
    int chat;                  /* /v1/chat/completions */
    json_t *body;              /* the parsed body: the strings below live in it */
    const char *model;         /* NULL when absent */
    const char *prompt;        /* completions: a text prompt (else prompt_ids) */
    int32_t *prompt_ids;       /* completions: a token-id prompt */
    int n_prompt_ids;
    const json_t *messages;    /* chat: [{role, content}] checked */
    long max_tokens, min_tokens;
    int n;                     /* choices */
    int stream;
    int logprobs;              /* -1: none; else how many alternatives (completions: the number;
                                * chat: top_logprobs when logprobs is true) */
    int return_token_ids;
    int echo;                  /* completions: echo the prompt (and its log-probabilities) */
    int has_seed;
    uint64_t seed;
    const char **stop;         /* into body */
    int n_stop;
    char prompt_id[128];       /* asn_prompt_id or the default (see above) */
    const char *heuristic_name;    /* asn_heuristic given as a name */
    const json_t *heuristic_def;   /* asn_heuristic given as {name, processors} */
    json_t *processors;        /* else: from the sampling parameters (new reference) */
    json_t *constraint;        /* NULL, or the processor of response_format / json_schema / grammar */
} asn_oai_request;

/* Reads a request body. Returns 0, or -1 with e = what is wrong (a client
 * error: the caller answers 400). rq is zeroed first; free it with
 * asn_oai_request_free either way. */
int asn_oai_parse(const char *body, size_t len, int chat, const asn_oai_limits *lim, asn_oai_request *rq,
                  asn_err *e);
void asn_oai_request_free(asn_oai_request *rq);

/* The processors of the sampling parameters temperature (0: greedy),
 * top_k, top_p, min_p, typical_p, repetition_penalty, presence_penalty,
 * frequency_penalty, in the order HuggingFace applies them (penalties,
 * temperature, top_k, top_p, min_p, typical). New reference; NULL with e
 * for a parameter out of range. */
json_t *asn_oai_params_processors(const json_t *body, asn_err *e);

/* The structured output an object asks for: its "response_format"
 * (OpenAI's), "json_schema" or "grammar" (llama.cpp's), at most one, as a
 * constraint processor {name, params} (*proc new, or NULL when none or
 * {"type": "text"}). Request bodies and gen-candidates' prompt records
 * read it. -1 with e naming the field. */
int asn_oai_constraint(const json_t *obj, json_t **proc, asn_err *e);

/* The chat messages as asn_chat_msg (pointing into rq->body); *n gets the
 * count. The system message (first, if any) and the last user message in
 * *system and *user (NULL when absent). Caller frees the array. */
struct asn_chat_msg;
struct asn_chat_msg *asn_oai_messages(const asn_oai_request *rq, size_t *n, const char **system,
                                      const char **user);

/* The prompt echoed ("echo"): its ids and text, and its log-probabilities. */
typedef struct asn_oai_echo {
    const int32_t *ids;
    int n;
    const char *text;
    size_t len;
    const double *lps;         /* n (entry 0 unused: null) */
    const int32_t *top_ids;    /* n x the choice's top (row 0 unused; -1: none) */
    const double *top_lps;
} asn_oai_echo;

/* One finished (or, in a stream, partial) choice. */
typedef struct asn_oai_choice {
    const int32_t *tokens;
    int n_tokens;
    const char *text;          /* the text of these tokens (a stream chunk: the delta) */
    size_t text_len;
    asn_finish finish;         /* ASN_FINISH_NONE: not finished (stream chunk) */
    const float *logprobs;     /* NULL or per token */
    const int32_t *top_ids;    /* n_tokens x top */
    const float *top_lps;
    int top;
    const struct asn_oai_echo *echo; /* NULL, or the prompt echoed before the choice */
} asn_oai_choice;

/* The whole response (object "text_completion" or "chat.completion"):
 * choices in order, usage, each choice's asn_finish ("eos", "stop",
 * "length") beside finish_reason. v renders tokens for logprobs. */
json_t *asn_oai_response(const asn_oai_request *rq, const char *id, long created, const char *model,
                         const asn_vocab *v, const asn_oai_choice *ch, int n_choices, int n_prompt);
/* One stream chunk for choice `index` (finish set on the last). */
json_t *asn_oai_chunk(const asn_oai_request *rq, const char *id, long created, const char *model,
                      const asn_vocab *v, int index, const asn_oai_choice *ch);
/* {"error": {"message", "type", "param": null, "code"}}: type from the
 * status (400 invalid_request_error, 401 authentication_error, 404
 * not_found_error, 503 server_busy, else server_error). */
json_t *asn_oai_error(int status, const char *message);

/* The OpenAI finish_reason of a finish: "stop" (eos or a stop string) or "length". */
const char *asn_oai_finish_reason(asn_finish f);

#endif
