/* heuristics.c — heuristics files in the reference format:
 *   sampling_pipelines: [{name, weight, processors: [{name, params}]}]
 * or one bare pipeline {name, weight, processors}. YAML or JSON (JSON is
 * YAML). Errors carry the file, line and column of the offending node. */
#include "asn/json.h"
#include "asn/sampling.h"
#include "asn/yaml.h"

#include <stdlib.h>
#include <string.h>

static int load_pipeline(asn_yaml *y, const json_t *pl, size_t idx, asn_heuristic *h, asn_err *e)
{
    char where[600];
    asn_yaml_where(y, pl, where, sizeof where);
    if (!json_is_object(pl))
        return asn_err_set(e, "%s: pipeline %zu must be a mapping {name, weight, processors}", where,
                           idx + 1);
    const json_t *jn = json_object_get(pl, "name");
    if (!json_is_string(jn))
        return asn_err_set(e, "%s: pipeline %zu: field \"name\" must be a string", where, idx + 1);
    const char *name = json_string_value(jn);
    const json_t *procs = json_object_get(pl, "processors");
    if (!procs)
        return asn_err_set(e, "%s: pipeline \"%s\": field \"processors\" is missing", where, name);
    if (asn_heuristic_init(h, name, procs, e)) {
        /* point at the processor that failed when we can */
        const char *msg = e->msg;
        size_t k = 0;
        if (json_is_array(procs) && sscanf(msg, "processor %zu", &k) == 1 && k >= 1 &&
            k <= json_array_size(procs))
            asn_yaml_where(y, json_array_get(procs, k - 1), where, sizeof where);
        return asn_err_prefix(e, "%s: pipeline \"%s\"", where, name);
    }
    const json_t *w = json_object_get(pl, "weight");
    if (w && !json_is_null(w) && asn_json_number(w, &h->weight)) {
        asn_heuristic_clear(h);
        return asn_err_set(e, "%s: pipeline \"%s\": field \"weight\" must be a number", where, name);
    }
    return 0;
}

static asn_heuristics *from_yaml(asn_yaml *y, asn_err *e)
{
    const char *path = asn_yaml_path(y);
    json_t *root = asn_yaml_root(y);
    asn_heuristics *hs = asn_xcalloc(1, sizeof *hs);
    char where[600];
    const json_t *list = NULL;
    size_t n = 1;
    if (json_is_object(root) && json_object_get(root, "sampling_pipelines")) {
        list = json_object_get(root, "sampling_pipelines");
        if (!json_is_array(list)) {
            asn_err_set(e, "%s: \"sampling_pipelines\" must be a list",
                        asn_yaml_where(y, list, where, sizeof where));
            goto fail;
        }
        n = json_array_size(list);
        if (!n) {
            asn_err_set(e, "%s: \"sampling_pipelines\" is empty",
                        asn_yaml_where(y, list, where, sizeof where));
            goto fail;
        }
    } else if (!json_is_object(root) || !json_object_get(root, "processors")) {
        asn_err_set(e, "%s: expected \"sampling_pipelines: [...]\" or one pipeline "
                       "{name, weight, processors}", path);
        goto fail;
    }
    hs->h = asn_xcalloc(n, sizeof *hs->h);
    for (size_t i = 0; i < n; i++) {
        const json_t *pl = list ? json_array_get(list, i) : root;
        if (load_pipeline(y, pl, i, &hs->h[i], e))
            goto fail;
        hs->n = (int)i + 1;
        for (int j = 0; j < hs->n - 1; j++)
            if (!strcmp(hs->h[j].name, hs->h[i].name)) {
                asn_err_set(e, "%s: pipeline name \"%s\" appears twice",
                            asn_yaml_where(y, pl, where, sizeof where), hs->h[i].name);
                goto fail;
            }
    }
    asn_yaml_free(y);
    return hs;
fail:
    asn_yaml_free(y);
    asn_heuristics_free(hs);
    return NULL;
}

asn_heuristics *asn_heuristics_load(const char *path, asn_err *e)
{
    asn_yaml *y = asn_yaml_load(path, e);
    return y ? from_yaml(y, e) : NULL;
}

asn_heuristics *asn_heuristics_parse(const char *name, const char *text, size_t len, asn_err *e)
{
    asn_yaml *y = asn_yaml_parse(name, text, len, e);
    return y ? from_yaml(y, e) : NULL;
}

void asn_heuristics_free(asn_heuristics *hs)
{
    if (!hs)
        return;
    for (int i = 0; i < hs->n; i++)
        asn_heuristic_clear(&hs->h[i]);
    free(hs->h);
    free(hs);
}

int asn_heuristics_find(const asn_heuristics *hs, const char *name)
{
    for (int i = 0; i < hs->n; i++)
        if (!strcmp(hs->h[i].name, name))
            return i;
    return -1;
}
