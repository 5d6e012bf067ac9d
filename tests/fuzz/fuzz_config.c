/* fuzz_config.c — libFuzzer target: arbitrary bytes as the YAML config
 * files other than heuristics: the YAML loader itself (every node's
 * file:line, as errors name them) and a learned sampler's model_config
 * (asn_sampler_config_from_json for each architecture, then its check).
 * Must never crash or leak, only return errors. */
#include "asn/sampler_net.h"
#include "asn/yaml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void walk(const asn_yaml *y, json_t *v, int depth)
{
    char where[256];
    asn_yaml_where(y, v, where, sizeof where);
    if (depth > 64)
        return;
    if (json_is_object(v)) {
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x)
            walk(y, x, depth + 1);
    } else if (json_is_array(v)) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x)
            walk(y, x, depth + 1);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    asn_err e;
    asn_yaml *y = asn_yaml_parse("fuzz.yaml", (const char *)data, size, &e);
    if (!y)
        return 0;
    json_t *root = asn_yaml_root(y);
    walk(y, root, 0);
    for (int a = ASN_SAMPLER_LOCAL; a <= ASN_SAMPLER_NETWORK; a++) {
        asn_sampler_config cfg;
        if (asn_sampler_config_from_json((asn_sampler_arch)a, root, &cfg, &e) == 0)
            (void)asn_sampler_config_check(&cfg, &e);
    }
    asn_yaml_free(y);
    return 0;
}
