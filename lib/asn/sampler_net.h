/* asn/sampler_net.h — learned samplers: the three network architectures of
 * the reference project (LocalProbabilityTransform,
 * SimpleDistributionAwareTransform, SamplingNetwork) with their forward and
 * hand-written backward passes, the loss they are trained with
 * (TruncatedLogitsLoss), and sampler files (GGUF).
 *
 * A network maps one row of V logits to V log-probabilities. Tokens whose
 * logit is -inf (removed by an earlier processor) stay -inf and are not seen
 * by the network at all: its log_softmax, its statistics (max, entropy) and
 * every sum or mean over the vocabulary run over the finite tokens only.
 * Everything is f32; products of V x d matrices go through OpenBLAS. The
 * inference pass of the local and distribution-aware transforms (hidden_dims
 * <= 64) is one fused kernel per token (fused multiply-adds, its own exp;
 * the same bits on AVX-512, AVX2 and other machines), which agrees with the
 * layer-by-layer computation the backward pass recomputes to float rounding.
 *
 * Work is split into fixed blocks of tokens and every sum over the
 * vocabulary adds per-block partial sums in block order, so a forward pass
 * gives the same bits whatever the number of threads. Gradients are
 * summed per thread, then over threads in thread order: deterministic for a
 * given thread count.
 *
 * Sampler files are GGUF: general.architecture = "asn-sampler",
 * asn-sampler.type = the reference class name, one key per reference
 * hyper-parameter (asn-sampler.hidden_dims, .use_dynamic_truncation,
 * .d_model, .d_ff, .n_blocks, .n_heads, .scale) and one tensor per entry of
 * the reference's PyTorch state_dict, under the same name (no "_orig_mod."
 * prefix), dimensions in GGUF order (ne[0] = PyTorch's last dimension);
 * scalar parameters are one-element tensors. */
#ifndef ASN_SAMPLER_NET_H
#define ASN_SAMPLER_NET_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "asn/core.h"
#include "asn/gguf.h"
#include "asn/pool.h"

/* ------------------------------------------------------------ configuration */

typedef enum asn_sampler_arch {
    ASN_SAMPLER_LOCAL = 0,   /* LocalProbabilityTransform */
    ASN_SAMPLER_DIST = 1,    /* SimpleDistributionAwareTransform */
    ASN_SAMPLER_NETWORK = 2, /* SamplingNetwork */
    /* asn's own (not in the reference): a per-token network like
     * LocalProbabilityTransform whose inputs are what the truncation
     * heuristics threshold on: each token's log-probability, its logit
     * minus the largest (min_p), the mass of the more probable tokens
     * (top_p), |lp + entropy| (typical), and the row's entropy and step
     * (asn_sampler_ws_set_step); a learned temperature and a learned
     * truncation gate over the same features (lib/learn/sampler_equi.c).
     * Permutation-equivariant; config: hidden_dims (2..97). */
    ASN_SAMPLER_EQUI = 3,    /* EquivariantLocalTransform */
} asn_sampler_arch;

/* The reference constructors' keyword arguments (their config YAML files
 * hold exactly these keys). */
typedef struct asn_sampler_config {
    asn_sampler_arch arch;
    int hidden_dims;            /* LOCAL, DIST */
    int use_dynamic_truncation; /* DIST: truncation from a Linear(2, 2) of the statistics */
    int d_model, d_ff, n_blocks, n_heads; /* NETWORK */
    int scale;                  /* NETWORK: learned scaling head (reference default: false) */
} asn_sampler_config;

/* "LocalProbabilityTransform", ... */
const char *asn_sampler_arch_name(asn_sampler_arch arch);
/* The class name (exact) to the enum; -1 with an error listing the names. */
int asn_sampler_arch_parse(const char *name, asn_sampler_arch *out, asn_err *e);

/* Sizes the reference accepts: every size >= 1 and every SwiGLU layer with
 * an inner size int(2 * hidden / 3) >= 1 (so hidden_dims >= 2, d_model >=
 * 4), d_model a multiple of n_heads. */
int asn_sampler_config_check(const asn_sampler_config *cfg, asn_err *e);
/* A config from a JSON object (a reference config YAML loaded with
 * asn_yaml): the keys are the constructor's arguments for that class,
 * required unless the reference has a default (only `scale`); unknown keys
 * are an error, as they are for the reference (a TypeError there). Sizes
 * must be integers, flags booleans (or 0 / 1). */
int asn_sampler_config_from_json(asn_sampler_arch arch, const json_t *obj, asn_sampler_config *cfg,
                                 asn_err *e);
/* The same from a YAML file; errors name the file (and line when known). */
int asn_sampler_config_load(asn_sampler_arch arch, const char *path, asn_sampler_config *cfg, asn_err *e);

/* ---------------------------------------------------------------- samplers */

/* One parameter tensor: its state_dict key, PyTorch shape (n_dims 0 for a
 * scalar) and place in the flat parameter / gradient arrays. */
typedef struct asn_sampler_tensor {
    const char *name;
    int n_dims;
    int64_t shape[2];
    size_t offset, numel;
} asn_sampler_tensor;

typedef struct asn_sampler asn_sampler;

/* A sampler with parameters initialized as the reference's constructors do
 * (PyTorch defaults: Linear weights and biases uniform in +-1/sqrt(fan_in),
 * LayerNorm weight 1 and bias 0; truncation scale 1.0 and threshold 10.0;
 * static truncation parameters [0.5413, 10.0]), drawn from Philox with
 * `seed`; gradients zero. NULL with an error for a bad config. */
asn_sampler *asn_sampler_new(const asn_sampler_config *cfg, uint64_t seed, asn_err *e);
void asn_sampler_free(asn_sampler *s);
/* Draws the initial parameters again (as asn_sampler_new). */
void asn_sampler_init(asn_sampler *s, uint64_t seed);

const asn_sampler_config *asn_sampler_get_config(const asn_sampler *s);
/* All parameters in one array (tensors in state_dict order, each row-major
 * in PyTorch's layout) and the gradients in the same layout. */
size_t asn_sampler_n_params(const asn_sampler *s);
float *asn_sampler_params(asn_sampler *s);
const float *asn_sampler_params_const(const asn_sampler *s);
float *asn_sampler_grads(asn_sampler *s);
void asn_sampler_zero_grad(asn_sampler *s);
int asn_sampler_n_tensors(const asn_sampler *s);
const asn_sampler_tensor *asn_sampler_tensor_at(const asn_sampler *s, int i);
const asn_sampler_tensor *asn_sampler_find_tensor(const asn_sampler *s, const char *name);

/* Sampler files. Saving writes F32 tensors. Loading checks the
 * architecture, the type and hyper-parameters (asn_sampler_config_check),
 * and that the tensors are exactly the expected ones (names and shapes; F32,
 * F16 or BF16 data, finite values); errors name the file and what is wrong
 * (a PyTorch checkpoint gets a pointer to scripts/convert-torch-sampler.py). */
int asn_sampler_save(const asn_sampler *s, const char *path, asn_err *e);
/* What asn_sampler_save writes, as a writer the caller may add to (a
 * trainer's checkpoint adds its state under "train." keys and tensors, which
 * loading ignores) and then writes and frees. The writer points into s. */
asn_gguf_writer *asn_sampler_writer(const asn_sampler *s);
asn_sampler *asn_sampler_load(const char *path, asn_err *e);
asn_sampler *asn_sampler_from_gguf(const asn_gguf *g, asn_err *e);

/* ------------------------------------------------------ forward / backward */

/* Working memory of forward and backward passes, for one sampler (or
 * others of the same configuration) and one row at a time, grown on
 * demand. `train` keeps what the backward pass needs: for a SamplingNetwork
 * (n_blocks + 6) * d_model + 4 floats per token of the vocabulary (each
 * block's input; the rest of a block is recomputed), for the other two 4.
 * Without it a forward pass keeps 3 * d_model + 3 floats per token
 * (SamplingNetwork) or 3, plus a few MiB per thread. */
typedef struct asn_sampler_ws asn_sampler_ws;
asn_sampler_ws *asn_sampler_ws_new(const asn_sampler *s, int train);
void asn_sampler_ws_free(asn_sampler_ws *ws);

/* out = network(logits) for one row of V logits (out may be logits).
 * -inf logits give -inf; NaN or +inf logits are an error (out untouched).
 * A row with no finite logit comes back all -inf. pool may be NULL (the
 * calling thread alone). With a pool of several threads, OpenBLAS is called
 * from each of them: set it to one thread (openblas_set_num_threads(1)) to
 * avoid oversubscription. */
int asn_sampler_forward(const asn_sampler *s, asn_sampler_ws *ws, asn_pool *pool, const float *logits,
                        int V, float *out, asn_err *e);
/* After a forward pass with a `train` workspace: adds d(loss)/d(parameters)
 * to the sampler's gradients, given dout = d(loss)/d(out) (V entries, read
 * at the finite tokens only). dlogits (may be NULL) receives d(loss)/d(logits)
 * (0 at -inf logits). The forward pass's logits need not be kept. */
int asn_sampler_backward(asn_sampler *s, asn_sampler_ws *ws, asn_pool *pool, const float *dout,
                         float *dlogits, asn_err *e);
/* The generation step (0 = the first generated token) of the rows the
 * following passes on ws see; an input of EquivariantLocalTransform only
 * (the other architectures ignore it). Default 0. */
void asn_sampler_ws_set_step(asn_sampler_ws *ws, int step);

/* -------------------------------------------------------- fast inference */

/* A SamplingNetwork's features of a token depend only on its own
 * log-probability lp and on sums over the vocabulary, so tokens of
 * near-equal lp get near-equal outputs. The fast pass evaluates the
 * network on representatives instead of every token, and none is left out:
 *   - the head, the tokens within head_range nats of the top lp (at most
 *     head_max of them, the top ones by lp), one representative each;
 *   - the other tokens in bins of bin_width nats of lp (down to 64 nats
 *     below the top; beyond, 64 bins per octave of the distance), one
 *     representative per non-empty bin at its members' mean lp, standing for
 *     all of them (weight = count) in the attention's sums and the mean
 *     pooling;
 * then gives each token the transformation head's output l' of its own
 * representative (head) or interpolated in lp between the representatives
 * (piecewise cubic; the others), and finishes exactly as the exact pass
 * from the token's exact lp: l = multiplier (lp + l'), out = l +
 * logsigmoid(l scale + threshold). Below the head and 4 nats below the
 * top, that output is itself a smooth function of the logit: it is fitted
 * with the per-token fast passes' 64 cubic pieces (learn/pertoken.h,
 * asn_nn_ptfast_*), and a piece that strays from the interpolation by more
 * than 2e-6 max(1, |out|) midway between its nodes is left to the
 * interpolation, as are the tokens beyond the last piece. The network runs on about head_max +
 * (lp range of the row) / bin_width rows whatever V is (some 300 for a
 * Zipf-like row of 128k logits with the defaults: 60 to 200 times faster
 * than the exact pass at V = 128k, see bench_sampler_net). Rows with at most
 * exact_max finite tokens go through the exact pass (the same bits).
 *
 * Tolerance, with the defaults, checked by tests/unit/test_sampler_fast.c
 * on Zipf-like rows, rows with a long flat tail, with -inf tokens, one
 * dominant token, logits spread over 60 nats, all logits equal and the
 * demo model's logit rows, for the reference initialization and networks
 * with weights 3 times larger: KL(softmax(exact) || softmax(fast)) over the
 * whole vocabulary <= ASN_SAMPLER_FAST_KL_TOL, and on the head (the tokens
 * whose exact output is within 10 of the top one) |exact - fast| <=
 * ASN_SAMPLER_FAST_HEAD_TOL * max(1, max |exact|) — float rounding of the
 * network's own sums is of that order (the errors measured are 1e-14 to
 * 1e-9 and 1e-7 to 2e-5 respectively, about the same with 25 times finer
 * bins). -inf tokens stay -inf; the outputs are the same bits whatever the
 * number of threads (the bins' sums are integers, the network's sums run
 * in fixed blocks). */
#define ASN_SAMPLER_FAST_KL_TOL 1e-6
#define ASN_SAMPLER_FAST_HEAD_TOL 5e-5
typedef struct asn_sampler_fast_opts {
    float bin_width;  /* nats, 1e-4..1 (default 0.05) */
    float head_range; /* nats, 0..1000 (default 10) */
    int head_max;     /* 0..2^24 (default 64) */
    int exact_max;    /* >= 0 (default 1024) */
} asn_sampler_fast_opts;
void asn_sampler_fast_defaults(asn_sampler_fast_opts *o);
/* The options of the workspace's fast passes (defaults until set). */
int asn_sampler_ws_set_fast(asn_sampler_ws *ws, const asn_sampler_fast_opts *o, asn_err *e);
/* out = the fast pass (above) for a SamplingNetwork; for
 * LocalProbabilityTransform and SimpleDistributionAwareTransform their own
 * fast pass: a token's output is a function of its log-probability alone
 * given the row, evaluated exactly at the nodes of 32 intervals (8 per
 * octave of the distance below the top; 64, 16 per octave, when the 32
 * cubics stray from it by more than 1e-5 midway between nodes) and
 * interpolated (piecewise cubic) for every token but those within 4 nats
 * of the top and those far below the intervals, which take the exact
 * kernel (learn/pertoken.h, asn_nn_pertoken_fast_*); the same KL bound, and
 * the head bound with the head's own max |exact| for scale
 * (test_sampler_fast.c); rows of at most exact_max finite tokens take the
 * exact pass; 3.5 to 10 times faster at V = 128k (bench_sampler_net). EquivariantLocalTransform: the exact pass.
 * Same arguments and errors as asn_sampler_forward (out may be logits);
 * the workspace is not left ready for a backward pass. */
int asn_sampler_forward_fast(const asn_sampler *s, asn_sampler_ws *ws, asn_pool *pool, const float *logits, int V,
                             float *out, asn_err *e);
/* What the last fast pass on ws did: SamplingNetwork's representatives
 * (rows the network ran on), head tokens among them, bins; the cubic
 * pieces in use (32 or 64, 0 for none: the exact pass or, for
 * SamplingNetwork, the interpolation alone), and how many of them were left
 * to the interpolation (SamplingNetwork). */
typedef struct asn_sampler_fast_info {
    int reps, head, bins;
    int pieces, dropped;
} asn_sampler_fast_info;
void asn_sampler_fast_get_info(asn_sampler_ws *ws, asn_sampler_fast_info *info);

/* -------------------------------------------------------------------- loss */

/* TruncatedLogitsLoss (reference, "mean" reduction) for B rows of V:
 *   kl      = mean over rows of sum over tokens the target keeps (finite) of
 *             p_t (log p_t - log p_pred), p = softmax;
 *   penalty = mean over rows of the predicted probability of the tokens the
 *             target removed (-inf);
 *   total   = kl + gamma * penalty.
 * dpred (may be NULL) receives d(total)/d(pred), 0 where pred is -inf.
 * Errors (out untouched; dpred may be partly written): gamma < 0, a NaN or +inf logit, a row whose
 * prediction or target is all -inf, a token the target keeps and the
 * prediction removed (KL would be infinite). */
typedef struct asn_sampler_loss {
    double total, kl, penalty;
} asn_sampler_loss;

int asn_truncated_logits_loss(const float *pred, const float *target, int B, int V, float gamma,
                              asn_sampler_loss *out, float *dpred, asn_err *e);
/* One row, its gradient multiplied by grad_scale (1/B for a mean over B rows
 * processed one at a time). */
int asn_truncated_logits_loss_row(const float *pred, const float *target, int V, float gamma,
                                  float grad_scale, asn_sampler_loss *out, float *dpred, asn_err *e);

/* The policy-gradient loss of reward-driven fine-tuning on one row: pred
 * the network's output, ref the reference network's (the policy the
 * tokens were drawn from, when on-policy), token the drawn token, advantage
 * its record's. With lp = log softmax(pred)[token], r = lp - log
 * softmax(ref)[token], rho = e^r:
 *   pg    = -advantage * lp                                 (clip = 0)
 *         = -min(A rho, A clip(rho, 1 - clip, 1 + clip)),
 *           at most -3A for A < 0 (PPO's clipped, dual-clipped ratio)
 *   kl    = rho - 1 - r       (k3 estimate of the KL to the reference)
 *   total = pg + kl_beta * kl
 * dpred (may be NULL) gets grad_scale * d(total)/d(pred) ADDED (so that it
 * can follow TruncatedLogitsLoss's gradient on the same row). A token that
 * pred or ref removes (-inf) gives 0. Errors: token out of range, clip
 * outside [0, 1), kl_beta < 0, a non-finite advantage, NaN or +inf logits. */
typedef struct asn_policy_loss_opts {
    double clip, kl_beta;
} asn_policy_loss_opts;
typedef struct asn_policy_loss {
    double total, pg, kl;
    int clipped; /* the ratio was on the clipped side: no policy-gradient term */
} asn_policy_loss;
int asn_policy_loss_row(const float *pred, const float *ref, int V, int token, double advantage,
                        const asn_policy_loss_opts *o, float grad_scale, asn_policy_loss *out, float *dpred,
                        asn_err *e);

#endif
