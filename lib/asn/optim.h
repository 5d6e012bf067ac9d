/* asn/optim.h — what every asn trainer shares to turn gradients into
 * updates: AdamW with decoupled weight decay (torch.optim.AdamW), gradient
 * clipping by global norm (torch.nn.utils.clip_grad_norm_), and learning-rate
 * schedules with warmup (the semantics of HuggingFace transformers'
 * get_scheduler).
 *
 * Everything works on flat float arrays, so a trainer lays its parameters,
 * gradients and moments out however it likes and calls these per array (or
 * per parameter group, when groups differ in weight decay). */
#ifndef ASN_OPTIM_H
#define ASN_OPTIM_H

#include <stddef.h>

#include "asn/core.h"

/* ----------------------------------------------------------------- AdamW */

/* Hyper-parameters that stay fixed over a run; the learning rate and the
 * weight decay are passed to each step (schedules, parameter groups). */
typedef struct asn_adamw {
    float beta1, beta2, eps;
} asn_adamw;

/* torch.optim.AdamW's defaults: betas (0.9, 0.999), eps 1e-8. */
#define ASN_ADAMW_DEFAULTS ((asn_adamw){0.9f, 0.999f, 1e-8f})

/* One AdamW update of n parameters, as torch.optim.AdamW (amsgrad off,
 * maximize off) computes it for step number t (t >= 1: the first update is
 * t = 1):
 *     p -= lr * weight_decay * p                  (decoupled decay)
 *     m  = beta1 * m + (1 - beta1) * g
 *     v  = beta2 * v + (1 - beta2) * g^2
 *     p -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
 * m and v start at zero and are updated in place. */
void asn_adamw_step(const asn_adamw *h, long t, float lr, float weight_decay, float *param,
                    const float *grad, float *m, float *v, size_t n);

/* ---------------------------------------------------------- clipping */

/* The Euclidean norm of n gradients, summed in double. */
double asn_grad_norm(const float *grad, size_t n);

/* Scales grad so that its global norm is at most max_norm, as
 * torch.nn.utils.clip_grad_norm_ does: coefficient max_norm / (norm + 1e-6)
 * when that is below 1, no change otherwise. Returns the norm before
 * clipping. max_norm <= 0 only measures. */
double asn_clip_grad_norm(float *grad, size_t n, double max_norm);

/* Scales a norm already measured (e.g. over several arrays with
 * asn_grad_norm): the coefficient asn_clip_grad_norm would apply. */
double asn_clip_coef(double norm, double max_norm);

/* ---------------------------------------------------------- schedules */

typedef enum asn_sched_kind {
    ASN_SCHED_CONSTANT = 0,         /* 1; warmup ignored, as in transformers */
    ASN_SCHED_CONSTANT_WITH_WARMUP, /* linear warmup, then 1 */
    ASN_SCHED_LINEAR,               /* warmup, then linear decay to 0 at total_steps */
    ASN_SCHED_COSINE,               /* warmup, then cosine of num_cycles (0.5: down to 0) */
    ASN_SCHED_COSINE_WITH_RESTARTS, /* warmup, then num_cycles hard restarts of a cosine to 0 */
    ASN_SCHED_POLYNOMIAL,           /* warmup, then (lr - lr_end) * remaining^power + lr_end */
    ASN_SCHED_COSINE_WITH_MIN_LR,   /* cosine that ends at min_lr_rate * lr */
} asn_sched_kind;

typedef struct asn_sched {
    asn_sched_kind kind;
    long warmup_steps; /* >= 0 */
    long total_steps;  /* > 0 for the decaying schedules */
    double num_cycles; /* cosine: 0.5, cosine_with_restarts: 1 (transformers' defaults) */
    double power;      /* polynomial: 1 */
    double lr_end;     /* polynomial: 1e-7 (an absolute rate) */
    double min_lr_rate; /* cosine_with_min_lr: 0 (a fraction of the base rate) */
} asn_sched;

/* A schedule of this kind with transformers' defaults for the extra
 * parameters. */
asn_sched asn_sched_make(asn_sched_kind kind, long warmup_steps, long total_steps);

/* Names as in transformers' SchedulerType ("constant", "constant_with_warmup",
 * "linear", "cosine", "cosine_with_restarts", "polynomial",
 * "cosine_with_min_lr"). Parse fails with an error listing them. */
const char *asn_sched_name(asn_sched_kind kind);
int asn_sched_parse(const char *name, asn_sched_kind *out, asn_err *e);

/* Checks a schedule for a base rate: negative steps, a decaying schedule
 * with no total, polynomial with lr_end >= base_lr (transformers raises
 * there too), negative cycles or power. */
int asn_sched_check(const asn_sched *s, double base_lr, asn_err *e);

/* The learning rate of update number `step` (0-based: the first update is
 * step 0), i.e. base_lr * lr_lambda(step) of transformers' LambdaLR, the
 * rate the HF Trainer uses for its step-th optimizer step. With warmup the
 * first update therefore has rate 0, as there. */
double asn_sched_lr(const asn_sched *s, double base_lr, long step);

#endif
