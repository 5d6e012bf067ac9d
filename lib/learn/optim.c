/* optim.c — AdamW, gradient clipping and learning-rate schedules over flat
 * float arrays (see asn/optim.h for the formulas and whose semantics they
 * follow). */
#include "asn/optim.h"

#include <math.h>
#include <string.h>

/* torch.nn.utils.clip_grad_norm_ adds this to the norm before dividing. */
#define CLIP_NORM_EPS 1e-6

/* ----------------------------------------------------------------- AdamW */

void asn_adamw_step(const asn_adamw *h, long t, float lr, float weight_decay, float *param,
                    const float *grad, float *m, float *v, size_t n)
{
    /* the scalars in double, as torch computes them in Python */
    double bc1 = 1.0 - pow((double)h->beta1, (double)t);
    double bc2 = 1.0 - pow((double)h->beta2, (double)t);
    float step_size = (float)((double)lr / bc1);
    float bc2_sqrt = (float)sqrt(bc2);
    float decay = 1.0f - lr * weight_decay;
    float b1 = h->beta1, b2 = h->beta2, c1 = 1.0f - h->beta1, c2 = 1.0f - h->beta2, eps = h->eps;
    for (size_t i = 0; i < n; i++) {
        float g = grad[i];
        float p = param[i] * decay;
        float mi = m[i] * b1 + g * c1;
        float vi = v[i] * b2 + g * g * c2;
        float denom = sqrtf(vi) / bc2_sqrt + eps;
        param[i] = p - step_size * (mi / denom);
        m[i] = mi;
        v[i] = vi;
    }
}

/* ---------------------------------------------------------- clipping */

double asn_grad_norm(const float *grad, size_t n)
{
    double ss = 0;
    for (size_t i = 0; i < n; i++)
        ss += (double)grad[i] * (double)grad[i];
    return sqrt(ss);
}

double asn_clip_coef(double norm, double max_norm)
{
    if (max_norm <= 0)
        return 1.0;
    double c = max_norm / (norm + CLIP_NORM_EPS);
    return c < 1.0 ? c : 1.0;
}

double asn_clip_grad_norm(float *grad, size_t n, double max_norm)
{
    double norm = asn_grad_norm(grad, n);
    double c = asn_clip_coef(norm, max_norm);
    if (c < 1.0) {
        float cf = (float)c;
        for (size_t i = 0; i < n; i++)
            grad[i] *= cf;
    }
    return norm;
}

/* ---------------------------------------------------------- schedules */

static const char *const SCHED_NAMES[] = {
    [ASN_SCHED_CONSTANT] = "constant",
    [ASN_SCHED_CONSTANT_WITH_WARMUP] = "constant_with_warmup",
    [ASN_SCHED_LINEAR] = "linear",
    [ASN_SCHED_COSINE] = "cosine",
    [ASN_SCHED_COSINE_WITH_RESTARTS] = "cosine_with_restarts",
    [ASN_SCHED_POLYNOMIAL] = "polynomial",
    [ASN_SCHED_COSINE_WITH_MIN_LR] = "cosine_with_min_lr",
};
enum { N_SCHED = sizeof SCHED_NAMES / sizeof SCHED_NAMES[0] };

asn_sched asn_sched_make(asn_sched_kind kind, long warmup_steps, long total_steps)
{
    /* defaults of transformers' get_*_schedule_with_warmup functions */
    asn_sched s = {kind, warmup_steps, total_steps, 0.5, 1.0, 1e-7, 0.0};
    if (kind == ASN_SCHED_COSINE_WITH_RESTARTS)
        s.num_cycles = 1.0;
    return s;
}

const char *asn_sched_name(asn_sched_kind kind)
{
    return (unsigned)kind < N_SCHED ? SCHED_NAMES[kind] : "unknown";
}

int asn_sched_parse(const char *name, asn_sched_kind *out, asn_err *e)
{
    for (int i = 0; i < N_SCHED; i++)
        if (!strcmp(name, SCHED_NAMES[i])) {
            *out = (asn_sched_kind)i;
            return 0;
        }
    char list[256] = "";
    for (int i = 0; i < N_SCHED; i++) {
        strcat(list, i ? ", " : "");
        strcat(list, SCHED_NAMES[i]);
    }
    return asn_err_set(e, "unknown schedule \"%s\" (one of: %s)", name, list);
}

int asn_sched_check(const asn_sched *s, double base_lr, asn_err *e)
{
    if ((unsigned)s->kind >= N_SCHED)
        return asn_err_set(e, "unknown schedule kind %d", (int)s->kind);
    if (s->warmup_steps < 0)
        return asn_err_set(e, "warmup steps must be >= 0 (got %ld)", s->warmup_steps);
    int decays = s->kind != ASN_SCHED_CONSTANT && s->kind != ASN_SCHED_CONSTANT_WITH_WARMUP;
    if (decays && s->total_steps <= 0)
        return asn_err_set(e, "schedule %s needs a positive number of training steps (got %ld)",
                           asn_sched_name(s->kind), s->total_steps);
    if (!(s->num_cycles >= 0) || !(s->power >= 0))
        return asn_err_set(e, "schedule %s: cycles and power must be >= 0", asn_sched_name(s->kind));
    if (s->kind == ASN_SCHED_POLYNOMIAL && !(base_lr > s->lr_end))
        return asn_err_set(e, "polynomial schedule: lr_end (%g) must be smaller than the learning rate (%g)",
                           s->lr_end, base_lr);
    if (s->kind == ASN_SCHED_COSINE_WITH_MIN_LR && !(s->min_lr_rate >= 0 && s->min_lr_rate <= 1))
        return asn_err_set(e, "cosine_with_min_lr: min_lr_rate must be in [0, 1] (got %g)", s->min_lr_rate);
    return 0;
}

/* The lr_lambda functions of transformers/optimization.py, in double. */
static double sched_factor(const asn_sched *s, double base_lr, long step)
{
    if (s->kind == ASN_SCHED_CONSTANT)
        return 1.0;
    long w = s->warmup_steps, total = s->total_steps;
    if (step < w)
        return (double)step / (double)(w > 1 ? w : 1);
    double progress = (double)(step - w) / (double)(total - w > 1 ? total - w : 1);
    switch (s->kind) {
    case ASN_SCHED_CONSTANT_WITH_WARMUP:
        return 1.0;
    case ASN_SCHED_LINEAR: {
        double f = (double)(total - step) / (double)(total - w > 1 ? total - w : 1);
        return f > 0 ? f : 0.0;
    }
    case ASN_SCHED_COSINE:
    case ASN_SCHED_COSINE_WITH_MIN_LR: {
        double f = 0.5 * (1.0 + cos(M_PI * s->num_cycles * 2.0 * progress));
        if (s->kind == ASN_SCHED_COSINE_WITH_MIN_LR)
            f = f * (1.0 - s->min_lr_rate) + s->min_lr_rate;
        return f > 0 ? f : 0.0;
    }
    case ASN_SCHED_COSINE_WITH_RESTARTS: {
        if (progress >= 1.0)
            return 0.0;
        double f = 0.5 * (1.0 + cos(M_PI * fmod(s->num_cycles * progress, 1.0)));
        return f > 0 ? f : 0.0;
    }
    case ASN_SCHED_POLYNOMIAL: {
        long decay_steps = total - w;
        if (step > total || decay_steps <= 0) /* transformers divides by zero at the latter */
            return s->lr_end / base_lr;
        double remaining = 1.0 - (double)(step - w) / (double)decay_steps;
        return ((base_lr - s->lr_end) * pow(remaining, s->power) + s->lr_end) / base_lr;
    }
    default:
        return 1.0;
    }
}

double asn_sched_lr(const asn_sched *s, double base_lr, long step)
{
    return base_lr * sched_factor(s, base_lr, step);
}
