/* asn/remote.h — scoring through OpenAI-compatible servers (over the
 * client of asn/client.h): the prompt log-probabilities rank-bt's judges
 * read, and the rewards score-reward reads. Each kind's request and
 * response shapes are written out beside the code that makes and reads
 * them (lib/net/remote_judge.c, lib/net/remote_reward.c). */
#ifndef ASN_REMOTE_H
#define ASN_REMOTE_H

#include <jansson.h>
#include <stdint.h>

#include "asn/bt.h"
#include "asn/client.h"
#include "asn/core.h"
#include "asn/vocab.h"

/* ------------------------------------------- prompt log-probabilities */

/* 0 when the kind returns the log-probabilities of a prompt's own tokens
 * (asn, vllm: "echo"; sglang: input_token_logprobs); else -1 with e
 * saying why (llama-server returns log-probabilities of generated tokens
 * only). */
int asn_server_echo_check(int kind, asn_err *e);
const char *asn_server_echo_path(int kind);
/* The request body (new reference) scoring ids[0..n). */
json_t *asn_server_echo_body(int kind, const char *model, const int32_t *ids, int n);
/* lp[0..n) of a response: lp[0] NaN, lp[i] = log p(ids[i] | ids[<i]) as the
 * server sent it (null: NaN). -1 with e when the body has fewer than n. */
int asn_server_echo_logprobs(int kind, const char *body, size_t len, int n, double *lp, asn_err *e);

/* A judge model behind servers. */
typedef struct asn_remote_judge {
    asn_client *c;
    int kind;
    const char *model;     /* the server's model id (may be NULL) */
    long requests;         /* sent so far (for counts) */
} asn_remote_judge;

/* asn_pairwise_score through a server: each order of each pair is asked
 * twice, the question followed by "A" and by "B", and the last prompt
 * token's log-probability read (exact, where a top-k list of the next
 * token may miss one of them); the scores are then computed as the local
 * judge computes them (asn_pairwise_p_a, asn_pairwise_combine), so a
 * server returning the same log-probabilities gives the same bits. v,
 * chat, t: the judge's tokenizer, chat family and template. */
int asn_remote_pairwise(asn_remote_judge *j, const asn_vocab *v, int chat, const asn_judge_tmpl *t,
                        const asn_pair_req *req, int n, double *p, asn_err *e);

/* asn_llscorer_score through a server: prompt and answer sent as one
 * prompt, the answer's log-probabilities summed in order and divided by
 * its length (NaN for an empty answer), as asn_llscorer_score does. */
int asn_remote_ll(asn_remote_judge *j, const asn_ll_req *req, int n, double *mean, asn_err *e);

/* ------------------------------------------------------------- rewards */

/* 0 when the kind has a classify/reward endpoint (asn, vllm: /classify;
 * sglang: /classify of a model served with --is-embedding); else -1 with e. */
int asn_server_reward_check(int kind, asn_err *e);
const char *asn_server_reward_path(int kind);
/* The request body (new reference) of one conversation's tokens. */
json_t *asn_server_reward_body(int kind, const char *model, const int32_t *ids, int n);
/* The first output of the head (the reward) in a response, as sent. */
int asn_server_reward(int kind, const char *body, size_t len, double *reward, asn_err *e);

/* Rewards of n token lists through the servers (one request each, many in
 * flight): reward[i] for ids[i][0..lens[i]). */
int asn_remote_rewards(asn_client *c, int kind, const char *model, int32_t *const *ids, const int *lens, int n,
                       double *reward, asn_err *e);

#endif
