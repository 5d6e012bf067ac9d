/* remote_reward.c — score-reward through servers: one conversation's
 * tokens (formatted and tokenized by the client, cut to the context as
 * asn_classify_texts cuts them) per request, the head's first output back.
 *
 * asn (serve) and vllm, POST /classify (vLLM's classification API):
 *   {"model": M, "input": [ids], "use_activation": false}
 *   (vLLM applies softmax, or a sigmoid to a one-output head, unless
 *   use_activation is false; its releases before 0.11 name it
 *   "activation", sent too)
 *   -> {"id": "classify-...", "object": "list", "created": T, "model": M,
 *       "data": [{"index": 0, "label": "LABEL_0", "probs": [r, ...],
 *                 "num_classes": K}],
 *       "usage": {"prompt_tokens": P, "total_tokens": P, "completion_tokens": 0}}
 * sglang, POST /classify (a reward model served with --is-embedding):
 *   {"model": M, "input_ids": [ids]}
 *   -> {"embedding": [r, ...], "meta_info": {"id": ..., "prompt_tokens": P, ...}}
 *   (or a list of such objects)
 * llama-server has no classification head (its poolings give embeddings
 * and reranking scores) and is refused. */
#include "asn/json.h"
#include "asn/remote.h"

#include <stdlib.h>
#include <string.h>

int asn_server_reward_check(int kind, asn_err *e)
{
    if (kind == ASN_SERVER_ASN || kind == ASN_SERVER_VLLM || kind == ASN_SERVER_SGLANG)
        return 0;
    return asn_err_set(e, "%s has no classify/reward endpoint for a reward model's head", asn_server_kind_name(kind));
}

const char *asn_server_reward_path(int kind)
{
    (void)kind;
    return "/classify";
}

json_t *asn_server_reward_body(int kind, const char *model, const int32_t *ids, int n)
{
    json_t *a = json_array(), *o = json_object();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_integer(ids[i]));
    if (model)
        json_object_set_new(o, "model", json_string(model));
    if (kind == ASN_SERVER_SGLANG) {
        json_object_set_new(o, "input_ids", a);
        return o;
    }
    json_object_set_new(o, "input", a);
    json_object_set_new(o, "use_activation", json_false());
    if (kind == ASN_SERVER_VLLM)
        json_object_set_new(o, "activation", json_false());
    return o;
}

int asn_server_reward(int kind, const char *body, size_t len, double *reward, asn_err *e)
{
    json_error_t je;
    json_t *o = json_loadb(body, len, 0, &je);
    if (!o)
        return asn_err_set(e, "the response is not JSON: %s", je.text);
    const json_t *v;
    const char *where;
    if (kind == ASN_SERVER_SGLANG) {
        v = json_array_get(json_object_get(json_is_array(o) ? json_array_get(o, 0) : o, "embedding"), 0);
        where = "embedding[0]";
    } else {
        v = json_array_get(json_object_get(json_array_get(json_object_get(o, "data"), 0), "probs"), 0);
        where = "data[0].probs[0]";
    }
    int rc = v && !asn_json_number(v, reward) ? 0 : asn_err_set(e, "the response has no number %s", where);
    json_decref(o);
    return rc;
}

typedef struct reward_run {
    int kind;
    double *reward;
} reward_run;

static int reward_done(void *ctx, int i, const char *body, size_t len, asn_err *e)
{
    reward_run *r = ctx;
    return asn_server_reward(r->kind, body, len, &r->reward[i], e);
}

int asn_remote_rewards(asn_client *c, int kind, const char *model, int32_t *const *ids, const int *lens, int n,
                       double *reward, asn_err *e)
{
    if (n <= 0)
        return 0;
    char **bodies = asn_xcalloc((size_t)n, sizeof *bodies);
    for (int i = 0; i < n; i++) {
        json_t *b = asn_server_reward_body(kind, model, ids[i], lens[i]);
        bodies[i] = asn_json_dumps(b, 0);
        json_decref(b);
    }
    reward_run r = {kind, reward};
    int rc = asn_client_post_all(c, asn_server_reward_path(kind), bodies, n, reward_done, &r, e);
    for (int i = 0; i < n; i++)
        free(bodies[i]);
    free(bodies);
    return rc;
}
