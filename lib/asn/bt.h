/* asn/bt.h — quality ratings from pairwise judgements, as rank-bt computes
 * them (as the reference's tournament code does):
 *   - Swiss-system pairing: ceil(log2 n) + extra rounds, random pairs in
 *     round 1, then each player against the best-placed one it has not met;
 *   - the Bradley-Terry model: its exact maximum-likelihood ratings, and the
 *     reference project's fixed 1000-step gradient ascent for comparison;
 *   - the judges that score a pair of answers with a model: a generative
 *     judge asked "A or B?" in both orders, and a reference model's mean
 *     token log-likelihood of each answer.
 *
 * Scores are always "how much the first player beat the second", in [0, 1]
 * (1: won, 0: lost, 0.5: a draw or an undecided judge). */
#ifndef ASN_BT_H
#define ASN_BT_H

#include <stddef.h>
#include <stdint.h>

#include "asn/core.h"
#include "asn/model.h"
#include "asn/vocab.h"

/* ------------------------------------------------------ Swiss pairing */

/* Points a bye is worth (the reference's value). */
#define ASN_SWISS_BYE_POINTS 0.5

typedef struct asn_swiss {
    int n;              /* players, numbered 0..n-1 in input order */
    int rounds;         /* ceil(log2 n) + extra rounds; 0 when n < 2 */
    int round;          /* rounds paired so far */
    double *points;     /* per player: scores of its games + byes */
    int *games;         /* per player: games recorded */
    int *byes;          /* per player: byes received */
    unsigned char *met; /* n x n: 1 once i and j have played */
    int *order;         /* scratch: players by standing */
    unsigned char *taken;
    asn_rng_key key;
} asn_swiss;

/* A tournament of n >= 0 players with ceil(log2 n) + extra_rounds rounds
 * (extra_rounds >= 0). Round 1's random pairs come from `key` (Philox
 * counters 0, 1, ... of stream 0), so the pairing is a pure function of
 * (n, key, the results recorded). 0, or -1 with e set for bad arguments. */
int asn_swiss_init(asn_swiss *s, int n, int extra_rounds, asn_rng_key key, asn_err *e);
void asn_swiss_free(asn_swiss *s);

/* Pairs the next round: writes np pairs to pairs[0..2np) (pairs[2k] plays
 * pairs[2k+1]) and the player with the bye to *bye (-1 when none); the bye
 * is credited ASN_SWISS_BYE_POINTS at once. Returns np (n / 2), or 0 when
 * every round has been paired. pairs holds n ints.
 *   Round 1: the players shuffled (Fisher-Yates), consecutive ones paired,
 *   the last one left over gets the bye.
 *   Later rounds: players by points, most first (equal points: lower
 *   number first); repeatedly the first unpaired player is paired with the
 *   first unpaired one below it it has not met, or, when it has met them
 *   all, with the next one; the one left over gets the bye. This is the
 *   reference's greedy rule: a rematch happens only when the player to pair
 *   has met every player still unpaired. */
int asn_swiss_pair(asn_swiss *s, int *pairs, int *bye);

/* Records a game: a scored score_a (in [0, 1]) against b, b scored
 * 1 - score_a. */
void asn_swiss_record(asn_swiss *s, int a, int b, double score_a);

/* ----------------------------------------------------- Bradley-Terry */

/* One judged game: player i scored s (in [0, 1]) against player j. */
typedef struct asn_bt_game {
    int i, j;
    double s;
} asn_bt_game;

/* The prior of the maximum-likelihood fit: every player is credited this
 * many pseudo-games drawn (score 0.5) against a virtual player of rating 0.
 * It keeps ratings finite when a player won (or lost) every game or the
 * comparison graph is disconnected, and moves well-determined ratings by
 * about prior / games played. */
#define ASN_BT_PRIOR_GAMES 0.1
/* The fit has converged when no rating's log-likelihood gradient exceeds
 * this (in games: the gradient for a player is its observed minus its
 * expected score). */
#define ASN_BT_TOL 1e-10
/* The reference's gradient ascent (label_ratings.py): steps, learning rate,
 * and the clamp of the rating difference inside its sigmoid. */
#define ASN_BT_REF_STEPS 1000
#define ASN_BT_REF_LR 0.05
#define ASN_BT_REF_CLAMP 35.0

/* The objective the fit maximizes, the Bradley-Terry log-likelihood with
 * fractional scores plus the prior:
 *   L(r) = sum over games [s log sigmoid(r_i - r_j) + (1 - s) log sigmoid(r_j - r_i)]
 *        + prior * sum over players [0.5 log sigmoid(r_k) + 0.5 log sigmoid(-r_k)]
 * Returns L; when grad is not NULL, writes dL/dr (n values). */
double asn_bt_objective(int n, const asn_bt_game *g, size_t m, double prior, const double *r,
                        double *grad);

typedef struct asn_bt_info {
    int iterations;  /* Newton steps taken */
    double grad_max; /* largest |dL/dr| at the end (before centering) */
} asn_bt_info;

/* Maximum-likelihood ratings r[0..n) (natural log-odds scale: player i
 * beats j with probability sigmoid(r_i - r_j)), mean-centered after the
 * fit. Newton's method with a backtracking line search; each step's linear
 * system (a weighted graph Laplacian plus the prior's diagonal) is solved
 * by Jacobi-preconditioned conjugate gradients, so a step costs O(games)
 * per CG iteration and the result is the same on every run. Iterates until
 * max |dL/dr| <= ASN_BT_TOL. prior >= 0: with prior 0 the plain MLE, which
 * exists only when the comparison graph is connected and no group of
 * players won every game against the rest; otherwise the fit fails with
 * an error saying so. Players without games get the prior's rating (0
 * before centering). info may be NULL. 0, or -1 with e set. */
int asn_bt_fit(int n, const asn_bt_game *g, size_t m, double prior, double *r, asn_bt_info *info,
               asn_err *e);

/* The reference project's ratings: r = 0; ASN_BT_REF_STEPS times, for every
 * game add (s - sigmoid(clamp(r_i - r_j))) to i's gradient and subtract it
 * from j's, then r += ASN_BT_REF_LR * gradient; finally subtract the mean
 * over the players that played. Players without games get NaN (the
 * reference gives them no rating). */
void asn_bt_fit_reference(int n, const asn_bt_game *g, size_t m, double *r);

/* --------------------------------------------------------------- judges */

/* A pairwise question template: text with the placeholders {input} (the
 * user's question), {response_a} and {response_b} (the two answers), each
 * exactly once, {response_a} before {response_b}; "{{" and "}}" stand for
 * literal braces (the reference's Python str.format placeholders). */
typedef struct asn_judge_tmpl asn_judge_tmpl;

/* The built-in template (the text of configs/judges/pairwise.txt). */
extern const char asn_judge_default_template[];

/* Parses a template; `name` (a file name) prefixes errors. NULL with e set
 * for an unknown placeholder, a missing or repeated one, or an unmatched
 * brace. */
asn_judge_tmpl *asn_judge_tmpl_parse(const char *text, const char *name, asn_err *e);
/* The same from a file (UTF-8 text, used byte for byte). */
asn_judge_tmpl *asn_judge_tmpl_load(const char *path, asn_err *e);
void asn_judge_tmpl_free(asn_judge_tmpl *t);
/* The filled-in text (caller frees). */
char *asn_judge_tmpl_format(const asn_judge_tmpl *t, const char *input, const char *a, const char *b);

/* The generative pairwise judge. For each pair (x, y) it formats the
 * question twice (x as A and y as B, then swapped), through the judge
 * model's chat template as one user turn with the generation prompt, and
 * reads the next-token log-probabilities of the tokens "A" and "B" (the
 * bare strings, no leading space). Each order's P(A) is renormalized over
 * the two tokens (0.5 when their total probability is below
 * ASN_JUDGE_MIN_MASS, as the reference does); the pair's score is the mean
 * of P(x better) over both orders, which removes a constant position bias:
 * a judge that always answers "A" scores every pair 0.5. */
#define ASN_JUDGE_MIN_MASS 1e-9

typedef struct asn_pairwise asn_pairwise;

/* A judge over model m (borrowed), with chat family `chat` (an ASN_CHAT_*
 * id), reading the template t (borrowed), running at most `batch`
 * sequences per forward pass on `pool` (may be NULL), with a context of
 * n_ctx tokens (0: the model's training context). Errors: "A" or "B" is
 * not a single token of m's vocabulary; no vocabulary; a context the
 * model cannot have. */
asn_pairwise *asn_pairwise_new(asn_model *m, int chat, const asn_judge_tmpl *t, int batch, int n_ctx,
                               asn_pool *pool, asn_err *e);
void asn_pairwise_free(asn_pairwise *j);

/* One request: answers[a] against answers[b] on `input`. */
typedef struct asn_pair_req {
    const char *input;
    const char *a, *b;
} asn_pair_req;

/* Scores n requests: p[k] = the debiased probability that req[k].a is the
 * better answer (NaN when the model's outputs were not finite). All 2n
 * texts share the key-value cache of their longest common token prefix
 * (computed once), and are decoded `batch` at a time. A request's result
 * does not depend on the other requests. 0, or -1 with e set (a text
 * longer than the model's context, ...). */
int asn_pairwise_score(asn_pairwise *j, const asn_pair_req *req, int n, double *p, asn_err *e);

/* The parts of the pairwise judge a client of a server needs (rank-bt
 * --judge-server): the ids of the answer tokens "A" and "B"; the question's
 * token ids (x as A, y as B, through chat family `chat` as one user turn
 * with the generation prompt); P("A") renormalized over the two tokens from
 * their next-token log-probabilities (0.5 below ASN_JUDGE_MIN_MASS, NaN when
 * either is not finite); and the debiased score of x from the P("A") of
 * both orders (x as A, then y as A). asn_pairwise_score computes exactly
 * these, so a server returning the same log-probabilities gives the same
 * scores. */
int asn_pairwise_answer_ids(const asn_vocab *v, int32_t ids[2], asn_err *e);
int asn_pairwise_question(const asn_vocab *v, int chat, const asn_judge_tmpl *t, const char *input, const char *a,
                          const char *b, int32_t **ids, int *n, asn_err *e);
double asn_pairwise_p_a(double lp_a, double lp_b);
double asn_pairwise_combine(double pa_xy, double pa_yx);

/* The reference-likelihood judge: mean log-probability per token of each
 * answer's tokens under a reference model, given the answer's prompt
 * tokens. */
typedef struct asn_llscorer asn_llscorer;

/* n_ctx: the context in tokens (0: the model's training context). */
asn_llscorer *asn_llscorer_new(asn_model *m, int batch, int n_ctx, asn_pool *pool, asn_err *e);
void asn_llscorer_free(asn_llscorer *s);

typedef struct asn_ll_req {
    const int32_t *prompt; /* the formatted prompt's tokens (n_prompt >= 1) */
    int n_prompt;
    const int32_t *tokens; /* the answer's tokens */
    int n;
} asn_ll_req;

/* mean[k] = (1/n) sum_i log p(tokens[i] | prompt, tokens[<i]) in nats
 * (log-softmax in double of the model's f32 logits), NaN when n is 0.
 * Requests with the same prompt tokens share its cache. 0, or -1 with e
 * set (a token id out of range, a sequence longer than the context). */
int asn_llscorer_score(asn_llscorer *s, const asn_ll_req *req, int n, double *mean, asn_err *e);

/* Every token's log-probability given the tokens before it: lp[0] = NaN,
 * lp[i] = log p(tokens[i] | tokens[<i]) for i >= 1, each computed exactly
 * as asn_llscorer_score computes its terms (the same bits: the engine's
 * logits do not depend on how a sequence is split into passes), so a mean
 * over an answer's positions equals asn_llscorer_score's. With top > 0,
 * also the top most likely tokens at each position i >= 1 and their
 * log-probabilities (top_ids, top_lps: n rows of top; row 0 unused, ties:
 * lower id first; -1 and NaN past the vocabulary). serve's prompt
 * log-probabilities ("echo"). 0, or -1 with e set. */
int asn_llscorer_tokens(asn_llscorer *s, const int32_t *tokens, int n, double *lp, int top, int32_t *top_ids,
                        double *top_lps, asn_err *e);

/* The pair score of two mean log-likelihoods: sigmoid((sa - sb) / tau); a
 * NaN mean (an empty answer) loses to any number and draws (0.5) with
 * another NaN. */
double asn_ll_pair_score(double sa, double sb, double tau);

#endif
