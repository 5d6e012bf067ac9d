/* asn/gen.h — generating candidates: many (prompt, heuristic, seed) jobs
 * decoded together by the engine. Each prompt is prefilled once and every
 * job of that prompt forks from its KV; all live sequences decode in one
 * batched forward; a finished sequence's slot goes to the next job at once.
 *
 * A job's tokens depend only on the model, the prompt's tokens, the
 * heuristic, the seed and the settings: not on the batch size, the thread
 * count, the other jobs, or the order jobs are given in. */
#ifndef ASN_GEN_H
#define ASN_GEN_H

#include <stdint.h>

#include "asn/model.h"
#include <jansson.h>

#include "asn/sampling.h"
#include "asn/vocab.h"

typedef enum asn_finish {
    ASN_FINISH_NONE = 0,
    ASN_FINISH_EOS,    /* sampled an end-of-generation token (kept in tokens) */
    ASN_FINISH_STOP,   /* the text reached a stop string */
    ASN_FINISH_LENGTH, /* max_new_tokens */
} asn_finish;

const char *asn_finish_name(asn_finish f); /* "eos", "stop", "length" */

typedef struct asn_gen_settings {
    int min_new_tokens;  /* end-of-generation ids masked before this many */
    int max_new_tokens;
    const char *const *stop; /* stop strings (may be NULL) */
    int n_stop;
    /* stop token-id sequences: sequence k is stop_ids[stop_off[k] ..
     * stop_off[k + 1]); generation stops when the tokens end with one (the
     * sequence is kept in tokens, not in the text) */
    const int32_t *stop_ids;
    const int *stop_off; /* n_stop_ids + 1 offsets */
    int n_stop_ids;
    /* Optional: called after each step, in the calling thread, for every
     * sampled token (job = index in the jobs array), for streaming. */
    void (*on_token)(void *ctx, int job, int32_t token);
    void *token_ctx;
} asn_gen_settings;

/* One candidate to generate. Inputs are borrowed; outputs are owned by the
 * job after asn_generate (free with asn_gen_job_clear). Jobs of the same
 * prompt must share the same prompt_tokens pointer (that is what makes them
 * share the prompt's KV). */
typedef struct asn_gen_job {
    const char *prompt_id;          /* RNG key part */
    const int32_t *prompt_tokens;
    int n_prompt;
    const asn_heuristic *heuristic; /* RNG key part: its id */
    uint64_t seed;                  /* RNG key part */
    /* outputs */
    int32_t *tokens;
    int n_tokens;
    asn_finish finish;
    char *generation;               /* detokenized, special tokens removed, cut at a stop string */
    size_t generation_len;          /* bytes (the text may hold NUL or invalid UTF-8) */
    /* optional inputs (zero: none) */
    const asn_gen_settings *settings; /* this job's min/max new tokens and stops (NULL: the generator's) */
    const asn_heuristic *constraint; /* the prompt's own constraint (a heuristic of one json_schema,
                                      * grammar, regex or choice processor), applied to the raw row
                                      * before the heuristic; not part of the RNG key */
    int top_logprobs;               /* > 0: keep the log-probabilities (below), with this many alternatives */
    /* optional outputs */
    float *logprobs;                /* with top_logprobs: each token's log-probability under the model
                                     * (log-softmax of the logits, before the heuristic) */
    int32_t *top_ids;               /* with top_logprobs: n_tokens x top_logprobs most likely ids, */
    float *top_lps;                 /* most likely first (ties: lower id), and their log-probabilities */
    double kept_mean;               /* the nucleus: tokens the heuristic left possible (not -inf), mean per step */
    char *error;                    /* a job that failed in a stream: why (asn_generate fails instead) */
    void *user;                     /* the caller's */
} asn_gen_job;

void asn_gen_job_clear(asn_gen_job *j);

typedef struct asn_generator asn_generator;

/* A generator over a loaded model (and its vocab). batch = most sequences
 * decoding at once (>= 1); n_ctx = positions per sequence (0: the model's). */
asn_generator *asn_generator_new(asn_model *m, asn_pool *pool, int batch, int n_ctx,
                                 const asn_gen_settings *s, asn_err *e);
void asn_generator_free(asn_generator *g);

/* Bytes n_seqs sequences of up to `positions` positions need while they are
 * generated: the f32 KV cache (n_seqs x positions x n_layer x 2 x
 * n_head_kv x head_dim floats; *kv_bytes when not NULL) and scratch (logits,
 * activations, attention rows). An estimate from the model's config. */
double asn_gen_memory_estimate(const asn_model_config *c, int n_seqs, int positions, double *kv_bytes);

/* Called as jobs finish, with the number finished so far and the tokens
 * generated so far (for progress displays); may be NULL. */
typedef void (*asn_gen_progress)(void *ctx, long jobs_done, long tokens);

/* Runs every job to completion. Fails (with e) only for errors that stop
 * the run: a prompt longer than the context, a heuristic that removes every
 * token, and, before anything runs, a batch whose KV cache and scratch
 * (asn_gen_memory_estimate) exceed the memory the process may still
 * allocate (asn_mem_available), with the estimate. */
int asn_generate(asn_generator *g, asn_gen_job *jobs, int n, asn_gen_progress progress, void *ctx,
                 asn_err *e);

/* ------------------------------------------------------------ streams */

/* A stream runs jobs that arrive at any time (a server's requests): each
 * asn_gen_stream_step admits waiting jobs into free slots in the order they
 * were added, runs one batched forward and draws one token for every live
 * job. The tokens of a job are the ones asn_generate gives it. */
typedef struct asn_gen_stream asn_gen_stream;

typedef struct asn_gen_events {
    void (*token)(void *ctx, asn_gen_job *job, int32_t token); /* each token drawn (may be NULL) */
    void (*done)(void *ctx, asn_gen_job *job); /* finished (job->finish) or failed (job->error) */
    void *ctx;
} asn_gen_events;

asn_gen_stream *asn_gen_stream_new(asn_generator *g, const asn_gen_events *ev);
/* Frees the stream's sequences; jobs still in it are left unfinished. */
void asn_gen_stream_free(asn_gen_stream *s);
/* Adds a job (borrowed until done). Jobs of the same prompt share the same
 * prompt_tokens pointer, as for asn_generate. Fails when the job cannot run
 * (its prompt and max_new_tokens exceed the context, bad settings). */
int asn_gen_stream_add(asn_gen_stream *s, asn_gen_job *job, asn_err *e);
/* Takes an unfinished job out (its caller is gone); no done event. */
void asn_gen_stream_cancel(asn_gen_stream *s, asn_gen_job *job);
/* Keeps up to n prefilled prompts (0, the default: none) after their last
 * job has started, the longest unused freed first: a job added later with
 * the same prompt tokens (a server's requests for one prompt arrive over
 * time) starts from the kept prefill instead of computing it again. The
 * tokens are the same either way (a prefill is batch-invariant); the cost
 * is the kept prompts' KV cache. */
void asn_gen_stream_keep(asn_gen_stream *s, int n);
/* Prompts prefilled so far, and jobs that started from a kept prefill. */
void asn_gen_stream_counts(const asn_gen_stream *s, long *prefills, long *reused);
/* Jobs added and not done yet. */
int asn_gen_stream_pending(const asn_gen_stream *s);
/* One step (nothing when no job is pending). Fails only when the engine
 * does (a job's own failure is its error). */
int asn_gen_stream_step(asn_gen_stream *s, asn_err *e);

/* How a generation ends, from its tokens (gen[0..n)) and the settings: the
 * text (detokenized, special tokens removed, cut at the first stop string,
 * or before a stop token-id sequence the tokens end with)
 * and the finish reason (ASN_FINISH_NONE while it goes on). Text is
 * computed when it can matter (stops set, or the generation ended); *text
 * is new or NULL. What the generator does after each token, for a client
 * that gets the tokens from elsewhere. */
int asn_gen_ending(const asn_vocab *v, const asn_gen_settings *s, const int32_t *gen, int n, asn_finish *fin,
                   char **text, size_t *len, asn_err *e);

/* Stop token-id sequences from their JSON form, [[id, ...], ...] (NULL:
 * none): *ids and *off (new, the caller frees both) as asn_gen_settings
 * holds them, *n of them. Ids must be in 0..n_vocab-1 and no sequence
 * empty; 0, or -1 with e set naming the element. */
int asn_gen_stop_ids_from_json(const json_t *j, int32_t n_vocab, int32_t **ids, int **off, int *n, asn_err *e);
/* The same from command-line texts, each "ID,ID,..." one sequence;
 * returns their number, or -1 with e set. */
int asn_gen_stop_ids_parse(const char *const *texts, int n_texts, int32_t n_vocab, int32_t **ids, int **off,
                           asn_err *e);
/* Their JSON form. */
json_t *asn_gen_stop_ids_json(const int32_t *ids, const int *off, int n);

/* The end-of-generation ids (ctx->eos) set to -inf while fewer than
 * min_new_tokens tokens were generated, unless the text is constrained (h
 * holds json, json_schema, grammar, regex or choice, or the prompt's
 * constraint pc is given) and every constraint is complete: the row a
 * heuristic receives. pc may be NULL. */
void asn_gen_mask_eog(const asn_heuristic *h, const asn_heuristic *pc, int min_new_tokens, float *row,
                      const asn_seq_ctx *ctx);

/* The row a generation step draws from, in place: the end-of-generation
 * ids masked as asn_gen_mask_eog says, then the prompt's constraint pc (may
 * be NULL), then the heuristic. ctx->n_ids - ctx->n_prompt tokens are
 * generated so far. */
int asn_gen_process_row(const asn_heuristic *h, const asn_heuristic *pc, int min_new_tokens, float *row, int V,
                        const asn_seq_ctx *ctx, asn_seq_state *st, asn_workspace *ws, asn_err *e);

/* The prompt text: the system message (when non-empty) and the user
 * message through the chat template (ASN_CHAT_* id) with the assistant's
 * turn opened. malloc'd; NULL with e set on a bad id. */
char *asn_gen_prompt_text(int chat_template, const char *system, const char *prompt, asn_err *e);

/* A prompt text tokenized as a prompt: BOS as the model adds it, special
 * tokens parsed, and exactly one BOS (a text that itself opens with the
 * BOS token's text does not get a second). *ids is new (caller frees). */
int asn_gen_tokenize_prompt(const asn_vocab *v, const char *text, int32_t **ids, int *n, asn_err *e);

/* The prompt as the model sees it: asn_gen_prompt_text, tokenized by
 * asn_gen_tokenize_prompt. *ids is new (caller frees). */
int asn_gen_prompt_tokens(const asn_vocab *v, int chat_template, const char *system,
                          const char *prompt, int32_t **ids, int *n, asn_err *e);

/* The stable prompt id: first 16 hex digits of SHA-256 of
 * system (empty if NULL) 0x1F prompt. out holds 17 bytes. */
void asn_prompt_id(const char *system, const char *prompt, char out[17]);

#endif
