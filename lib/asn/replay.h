/* asn/replay.h — replaying a candidate: the model's raw logits and the
 * distribution each generated token was drawn from, step by step.
 *
 * A candidate record (gen-candidates output) says how it was made: the
 * prompt and system message, the chat template and min_new_tokens of its
 * settings, the heuristic, the seed and the generated token ids. Replaying
 * prefills the prompt once and then feeds the recorded tokens in chunks,
 * so the logits of the step that drew token t are those generation saw
 * (the engine is batch- and chunk-invariant), and the heuristic applied to
 * them with the same history, state and random key gives the target: the
 * exact row the token was drawn from (-inf where the heuristic removed a
 * token). Memory is one chunk of rows, whatever the generation's length. */
#ifndef ASN_REPLAY_H
#define ASN_REPLAY_H

#include <jansson.h>
#include <stdint.h>

#include "asn/model.h"
#include "asn/sampling.h"
#include "asn/vocab.h"

/* What a candidate record says about how it was generated. */
typedef struct asn_candidate {
    char *prompt_id;
    int32_t *prompt;    /* the prompt as the model saw it (template, BOS) */
    int n_prompt;
    int32_t *gen;       /* the generated tokens */
    int n_gen;
    asn_heuristic heuristic;
    uint64_t seed;
    int min_new_tokens;
} asn_candidate;

/* Reads a candidate record: prompt_id, prompt, system, heuristic {name,
 * processors}, seed, tokens, settings {chat_template, min_new_tokens}; the
 * prompt is formatted and tokenized with v as gen-candidates does. Errors
 * name the field ("field \"tokens\": ..."); the caller adds file and line. */
int asn_candidate_from_json(asn_candidate *c, const json_t *rec, const asn_vocab *v, asn_err *e);
/* Reads a record of the research pipeline's (prompt, system_prompt,
 * sampler_info {name, config}, seed, generation), as its supervised
 * training reads one: the prompt formatted with chat family `chat` (the
 * model's; its records do not name one), the generation tokenized (no
 * BOS, special tokens as text) as the generated tokens, min_new_tokens 0. */
int asn_candidate_from_reference(asn_candidate *c, const json_t *rec, const asn_vocab *v, int chat, asn_err *e);
void asn_candidate_clear(asn_candidate *c);

typedef struct asn_replayer asn_replayer;

/* A replayer over m (n_ctx 0: the model's training context); threads from
 * pool (may be NULL). */
asn_replayer *asn_replayer_new(asn_model *m, asn_pool *pool, int n_ctx, asn_err *e);
void asn_replayer_free(asn_replayer *r);

/* Starts replaying c (borrowed until the replay ends or the next begin):
 * prefills the prompt. Fails if prompt + generation exceed the context or a
 * token is out of range. */
int asn_replay_begin(asn_replayer *r, const asn_candidate *c, asn_err *e);

/* The next steps, at most max_steps: for each, raw[k * V ..] receives the
 * model's logits (may be NULL to skip ahead) and target[k * V ..] (may be
 * NULL) the row the token was drawn from. The logits are those the
 * heuristic received: the model's, with the end-of-generation ids at -inf
 * while fewer than min_new_tokens tokens were generated (as generation masks
 * them before the heuristic), so a learned processor is trained on the rows
 * it will see. drawn[k] (may be NULL) is 1 when
 * drawing from that row with the candidate's seed gives the recorded token
 * again (0 means the record does not come from this model and settings).
 * Returns the number of steps written (0 when the generation is done), -1
 * with e set (a heuristic that fails on a row). */
int asn_replay_next(asn_replayer *r, int max_steps, float *raw, float *target, uint8_t *drawn, asn_err *e);

/* Steps replayed so far for the current candidate. */
int asn_replay_pos(const asn_replayer *r);

#endif
