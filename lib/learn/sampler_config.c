/* sampler_config.c — a learned sampler's configuration: the architectures'
 * names, the checks of their hyper-parameters, and a config read from
 * JSON or from a YAML file (the research pipeline's model configs: each
 * architecture's constructor arguments, unknown keys refused). */
#include "asn/sampler_net.h"
#include "asn/yaml.h"
#include "learn/sampler_internal.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

static const char *const ARCH_NAMES[] = {"LocalProbabilityTransform", "SimpleDistributionAwareTransform",
                                         "SamplingNetwork", "EquivariantLocalTransform"};
#define N_ARCH 4

const char *asn_sampler_arch_name(asn_sampler_arch arch)
{
    return (unsigned)arch < N_ARCH ? ARCH_NAMES[arch] : "unknown";
}

int asn_sampler_arch_parse(const char *name, asn_sampler_arch *out, asn_err *e)
{
    for (int i = 0; i < N_ARCH; i++)
        if (name && !strcmp(name, ARCH_NAMES[i])) {
            *out = (asn_sampler_arch)i;
            return 0;
        }
    return asn_err_set(e, "unknown sampler architecture \"%s\" (expected LocalProbabilityTransform, "
                          "SimpleDistributionAwareTransform, SamplingNetwork or EquivariantLocalTransform)",
                       name ? name : "");
}

/* The SwiGLU layers' inner sizes must be >= 1 (a zero-width layer is
 * meaningless), and the network's sizes must stay far from int overflow
 * (ASN__SAMPLER_MAX_DIM: sampler_internal.h). */
#define MAX_BLOCKS 1024

int asn_sampler_config_check(const asn_sampler_config *c, asn_err *e)
{
    switch (c->arch) {
    case ASN_SAMPLER_LOCAL:
    case ASN_SAMPLER_DIST:
        if (c->hidden_dims < 2 || c->hidden_dims > ASN__SAMPLER_MAX_DIM)
            return asn_err_set(e, "%s: hidden_dims must be 2..%d (inner size int(2 * hidden_dims / 3) >= 1), got %d",
                               asn_sampler_arch_name(c->arch), ASN__SAMPLER_MAX_DIM, c->hidden_dims);
        return 0;
    case ASN_SAMPLER_EQUI:
        if (c->hidden_dims < 2 || asn_nn_mlp_inner(c->hidden_dims) > ASN_NN_EQUI_MAXI)
            return asn_err_set(e, "EquivariantLocalTransform: hidden_dims must be 2..%d, got %d",
                               (3 * ASN_NN_EQUI_MAXI + 2) / 2, c->hidden_dims);
        return 0;
    case ASN_SAMPLER_NETWORK:
        if (c->d_model < 4 || c->d_model > ASN__SAMPLER_MAX_DIM)
            return asn_err_set(e, "SamplingNetwork: d_model must be 4..%d, got %d", ASN__SAMPLER_MAX_DIM,
                               c->d_model);
        if (c->d_ff < 2 || c->d_ff > ASN__SAMPLER_MAX_DIM)
            return asn_err_set(e, "SamplingNetwork: d_ff must be 2..%d, got %d", ASN__SAMPLER_MAX_DIM,
                               c->d_ff);
        if (c->n_blocks < 0 || c->n_blocks > MAX_BLOCKS)
            return asn_err_set(e, "SamplingNetwork: n_blocks must be 0..%d, got %d", MAX_BLOCKS, c->n_blocks);
        if (c->n_heads < 1 || c->d_model % c->n_heads)
            return asn_err_set(e, "SamplingNetwork: d_model = %d is not divisible by n_heads = %d", c->d_model,
                               c->n_heads);
        return 0;
    }
    return asn_err_set(e, "unknown sampler architecture %d", (int)c->arch);
}

typedef struct cfg_key {
    const char *name;
    int is_bool, required;
    size_t off;
} cfg_key;

#define CK(f, b, r) {#f, b, r, offsetof(asn_sampler_config, f)}
static const cfg_key KEYS_LOCAL[] = {CK(hidden_dims, 0, 1), {NULL, 0, 0, 0}};
static const cfg_key KEYS_DIST[] = {CK(hidden_dims, 0, 1), CK(use_dynamic_truncation, 1, 1), {NULL, 0, 0, 0}};
static const cfg_key KEYS_NET[] = {CK(d_model, 0, 1), CK(d_ff, 0, 1), CK(n_blocks, 0, 1), CK(n_heads, 0, 1),
                                   CK(scale, 1, 0), {NULL, 0, 0, 0}};
static const cfg_key *const ARCH_KEYS[] = {KEYS_LOCAL, KEYS_DIST, KEYS_NET, KEYS_LOCAL};

static int config_from_json(asn_sampler_arch arch, const json_t *obj, asn_sampler_config *cfg, const asn_yaml *y,
                            asn_err *e)
{
    char where[512];
    const char *cls = asn_sampler_arch_name(arch);
    if ((unsigned)arch >= N_ARCH)
        return asn_err_set(e, "unknown sampler architecture %d", (int)arch);
    if (!json_is_object(obj))
        return asn_err_set(e, "%s: a sampler config must be a mapping of %s's arguments",
                           y ? asn_yaml_path(y) : "config", cls);
    asn_sampler_config c;
    memset(&c, 0, sizeof c);
    c.arch = arch;
    const cfg_key *keys = ARCH_KEYS[arch];
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)obj, k, v)
    {
        const cfg_key *ck = NULL;
        for (const cfg_key *q = keys; q->name; q++)
            if (!strcmp(q->name, k))
                ck = q;
        const char *at = y ? asn_yaml_where(y, v, where, sizeof where) : "config";
        if (!ck) {
            char list[256] = "";
            for (const cfg_key *q = keys; q->name; q++)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", q == keys ? "" : ", ", q->name);
            return asn_err_set(e, "%s: unknown key \"%s\" for %s (its arguments: %s)", at, k, cls, list);
        }
        int *dst = (int *)((char *)&c + ck->off);
        if (ck->is_bool) {
            if (json_is_boolean(v))
                *dst = json_is_true(v);
            else if (json_is_integer(v) && (json_integer_value(v) == 0 || json_integer_value(v) == 1))
                *dst = (int)json_integer_value(v);
            else
                return asn_err_set(e, "%s: %s must be true or false", at, k);
        } else {
            if (!json_is_integer(v) || json_integer_value(v) < 0 ||
                json_integer_value(v) > ASN__SAMPLER_MAX_DIM)
                return asn_err_set(e, "%s: %s must be an integer 0..%d", at, k, ASN__SAMPLER_MAX_DIM);
            *dst = (int)json_integer_value(v);
        }
    }
    for (const cfg_key *q = keys; q->name; q++)
        if (q->required && !json_object_get(obj, q->name))
            return asn_err_set(e, "%s: %s needs \"%s\"", y ? asn_yaml_path(y) : "config", cls, q->name);
    if (asn_sampler_config_check(&c, e) < 0)
        return y ? asn_err_prefix(e, "%s", asn_yaml_path(y)) : -1;
    *cfg = c;
    return 0;
}

int asn_sampler_config_from_json(asn_sampler_arch arch, const json_t *obj, asn_sampler_config *cfg, asn_err *e)
{
    return config_from_json(arch, obj, cfg, NULL, e);
}

int asn_sampler_config_load(asn_sampler_arch arch, const char *path, asn_sampler_config *cfg, asn_err *e)
{
    asn_yaml *y = asn_yaml_load(path, e);
    if (!y)
        return -1;
    int rc = config_from_json(arch, asn_yaml_root(y), cfg, y, e);
    asn_yaml_free(y);
    return rc;
}
