/* detect.c — what a server is, asked of the server: its kind (when
 * --server-kind is not given), its model id, digest and context, and its
 * slots.
 *
 * Each kind says who it is in GET /v1/models, data[i].owned_by, as written
 * in its source:
 *   asn (serve)   "asn", and an "asn" object (sha256, chat_template)
 *   vllm          "vllm"      (ModelCard, vllm/entrypoints/openai/protocol.py)
 *   sglang        "sglang"    (ModelCard, sglang/srt/entrypoints/openai/protocol.py)
 *   llama-server  "llamacpp"  (tools/server/server-context.cpp)
 * A proxy in front may rewrite that list, so without a known owned_by each
 * kind's own endpoint is tried in turn:
 *   llama-server  GET /props: {"default_generation_settings": ..., "total_slots": N, ...}
 *   sglang        GET /get_model_info: {"model_path": ..., "is_generation": ...}
 *   vllm          GET /version: {"version": "0.x.y"}
 * llama-server's /props also gives total_slots, the requests it runs at
 * once: the client keeps at most that many in flight there. serve's "asn"
 * object gives its batch and queue: the client keeps twice the batch in
 * flight there (at most the queue), so that a finished sequence's slot
 * takes a waiting request at once rather than after a round trip. */
#include "asn/client.h"
#include "asn/json.h"
#include "asn/tool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *owned_by;
    int kind;
} OWNERS[] = {
    {"asn", ASN_SERVER_ASN},
    {"vllm", ASN_SERVER_VLLM},
    {"sglang", ASN_SERVER_SGLANG},
    {"llamacpp", ASN_SERVER_LLAMA},
};

/* The kind's own endpoint and the member its answer always has. */
static const struct {
    const char *path, *member;
    int kind;
} PROBES[] = {
    {"/props", "default_generation_settings", ASN_SERVER_LLAMA},
    {"/get_model_info", "model_path", ASN_SERVER_SGLANG},
    {"/version", "version", ASN_SERVER_VLLM},
};

int asn_server_models_kind(const json_t *models)
{
    const json_t *m0 = json_array_get(json_object_get(models, "data"), 0);
    if (json_is_object(json_object_get(m0, "asn")))
        return ASN_SERVER_ASN;
    const char *o = json_string_value(json_object_get(m0, "owned_by"));
    for (size_t i = 0; o && i < sizeof OWNERS / sizeof *OWNERS; i++)
        if (!strcmp(o, OWNERS[i].owned_by))
            return OWNERS[i].kind;
    return -1;
}

/* GET path from server srv as JSON (NULL: no such endpoint or not JSON). */
static json_t *get_json(asn_client *c, int srv, const char *path, int *answered, asn_err *e)
{
    char *body = NULL;
    size_t len;
    long status;
    int rc = asn_client_get_at(c, srv, path, &body, &len, &status, e);
    if (answered && status)
        *answered = 1;
    if (rc)
        return NULL;
    json_t *o = json_loadb(body, len, JSON_DECODE_ANY, NULL);
    free(body);
    return o;
}

/* What server srv of a kind that says so runs at once (slots) and how
 * many requests the client keeps in flight there (limit): llama-server's
 * total_slots (/props) for both; serve's batch (its /v1/models "asn"
 * object; models: that answer when already read), and twice that, at most its queue, so
 * that a finished sequence's slot takes a queued request at once. 0 when
 * the server does not say. */
static int server_limit(asn_client *c, int srv, int kind, const json_t *models, int *slots, int *limit)
{
    asn_err e;
    json_t *own = models ? NULL : get_json(c, srv, kind == ASN_SERVER_ASN ? "/v1/models" : "/props", NULL, &e);
    const json_t *o = models ? models : own;
    int got = 0;
    if (kind == ASN_SERVER_ASN) {
        const json_t *a = json_object_get(json_array_get(json_object_get(o, "data"), 0), "asn");
        json_int_t batch = json_integer_value(json_object_get(a, "batch"));
        json_int_t queue = json_integer_value(json_object_get(a, "queue"));
        if ((got = batch > 0 && batch < (1 << 20) && queue > 0))
            *slots = (int)batch, *limit = (int)(2 * batch < queue ? 2 * batch : queue);
    } else {
        json_int_t n = json_integer_value(json_object_get(o, "total_slots"));
        if ((got = n > 0 && n < (1 << 20)))
            *slots = *limit = (int)n;
    }
    json_decref(own);
    return got;
}

int asn_server_probe(asn_client *c, const char *kind_name, asn_server_info *info, asn_err *e)
{
    memset(info, 0, sizeof *info);
    info->kind = -1;
    if (kind_name && (info->kind = asn_server_kind_from_name(kind_name)) < 0)
        return asn_err_set(e, "unknown server kind \"%s\" (asn, vllm, sglang or llama-server)", kind_name);
    asn_err e2 = {""};
    int srv = 0, n = asn_client_n_servers(c), answered = 0;
    json_t *models = NULL;
    for (srv = 0; srv < n && !models && !answered; srv++) /* the first that answers */
        models = get_json(c, srv, "/v1/models", &answered, &e2);
    srv = models || answered ? srv - 1 : 0;
    if (!models && !answered) /* nobody there */
        return asn_err_set(e, "%s", e2.msg);
    const json_t *m0 = json_array_get(json_object_get(models, "data"), 0);
    if (json_is_string(json_object_get(m0, "id")))
        info->model = asn_xstrdup(json_string_value(json_object_get(m0, "id")));
    const char *sha = json_string_value(json_object_get(json_object_get(m0, "asn"), "sha256"));
    if (sha)
        info->sha256 = asn_xstrdup(sha);
    json_int_t ctx = json_integer_value(json_object_get(m0, "max_model_len"));
    if (ctx <= 0) /* llama-server: the slot context in meta.n_ctx */
        ctx = json_integer_value(json_object_get(json_object_get(m0, "meta"), "n_ctx"));
    info->max_model_len = ctx > 0 && ctx < (1 << 30) ? (int)ctx : 0;
    if (info->kind < 0) {
        info->kind = asn_server_models_kind(models);
        const char *o = json_string_value(json_object_get(m0, "owned_by"));
        if (info->kind >= 0)
            snprintf(info->how, sizeof info->how, "/v1/models %s", info->kind == ASN_SERVER_ASN && !o ? "has \"asn\""
                                                                                                      : "owned_by");
        if (info->kind >= 0 && o)
            snprintf(info->how, sizeof info->how, "/v1/models owned_by \"%.40s\"", o);
    }
    for (size_t p = 0; info->kind < 0 && p < sizeof PROBES / sizeof *PROBES; p++) {
        json_t *o = get_json(c, srv, PROBES[p].path, NULL, &e2);
        if (json_object_get(o, PROBES[p].member)) {
            info->kind = PROBES[p].kind;
            snprintf(info->how, sizeof info->how, "GET %s", PROBES[p].path);
        }
        json_decref(o);
    }
    if (info->kind < 0) {
        json_decref(models);
        asn_server_info_free(info);
        return asn_err_set(e, "%s: cannot tell the server's kind (no known owned_by in /v1/models, no /props, "
                              "/get_model_info or /version); give --server-kind", asn_client_url(c, srv));
    }
    for (int i = 0; i < n && (info->kind == ASN_SERVER_ASN || info->kind == ASN_SERVER_LLAMA); i++) {
        int slots = 0, limit = 0;
        if (!server_limit(c, i, info->kind, i == srv && info->kind == ASN_SERVER_ASN ? models : NULL, &slots, &limit))
            continue;
        asn_client_set_limit(c, i, limit);
        if (i == srv)
            info->slots = slots, info->limit = limit;
    }
    json_decref(models);
    return 0;
}

void asn_server_info_free(asn_server_info *info)
{
    free(info->model);
    free(info->sha256);
    info->model = info->sha256 = NULL;
}

void asn_server_say(const asn_client *c, const asn_server_info *info)
{
    if (!info->how[0])
        return;
    fprintf(stderr, "%s: %s is %s (detected: %s", asn_progname(), asn_client_url(c, 0),
            asn_server_kind_name(info->kind), info->how);
    if (info->slots)
        fprintf(stderr, "; %d %s, at most %d requests in flight there", info->slots,
                info->kind == ASN_SERVER_ASN ? "in a batch" : "slots", info->limit);
    fprintf(stderr, ")\n");
}
