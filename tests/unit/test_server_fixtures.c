/* test_server_fixtures.c — the client's parsers on the servers' own
 * answers (tests/data/servers/, see its README): llama-server's, recorded
 * from a live server; vLLM's and SGLang's, written from their sources.
 * Token ids are compared with what each fixture's "expect" holds, or (for
 * llama-server) with the ids of completion_probabilities, the server's own
 * second account of the same tokens; kinds with what each server's
 * /v1/models owned_by says. */
#include "asn/client.h"
#include "asn/json.h"
#include "asn/remote.h"
#include "t.h"

#include <stdlib.h>
#include <string.h>

static char path_buf[4096];
static const char *data_path(const char *name)
{
    const char *root = getenv("ASN_ROOT");
    snprintf(path_buf, sizeof path_buf, "%s/tests/data/servers/%s", root ? root : ".", name);
    return path_buf;
}

static json_t *load(const char *name)
{
    json_error_t je;
    json_t *o = json_load_file(data_path(name), 0, &je);
    if (!o)
        fprintf(stderr, "%s: %d: %s\n", path_buf, je.line, je.text);
    return o;
}

/* The tokens of fixture name's response, parsed as kind, against expect. */
static void tokens_case(const char *name, int kind)
{
    json_t *f = load(name);
    char *body = asn_json_dumps(json_object_get(f, "response"), 0);
    const json_t *want = json_object_get(json_object_get(f, "expect"), "token_ids");
    const char *err = json_string_value(json_object_get(json_object_get(f, "expect"), "error"));
    int32_t *ids = NULL;
    int n = 0;
    asn_err e = {""};
    int rc = asn_server_tokens(kind, body, strlen(body), &ids, &n, &e);
    int same = rc == 0 && json_is_array(want) && (size_t)n == json_array_size(want);
    for (int i = 0; same && i < n; i++)
        same = ids[i] == json_integer_value(json_array_get(want, (size_t)i));
    if (err)
        T_OK(name, rc == -1 && strstr(e.msg, err), "rc %d: %s", rc, e.msg);
    else
        T_OK(name, same, "rc %d, %d ids: %s", rc, n, e.msg);
    free(ids);
    free(body);
    json_decref(f);
}

static void models_case(const char *name)
{
    json_t *f = load(name);
    const json_t *x = json_object_get(f, "expect");
    int kind = asn_server_models_kind(json_object_get(f, "response"));
    T_EQ_STR(name, asn_server_kind_name(kind), json_string_value(json_object_get(x, "kind")));
    json_decref(f);
}

static void test_vllm_sglang(void)
{
    models_case("vllm/models.json");
    models_case("sglang/models.json");
    tokens_case("vllm/completion-token-ids.json", ASN_SERVER_VLLM);
    tokens_case("vllm/completion-logprobs-only.json", ASN_SERVER_VLLM);
    tokens_case("vllm/completion-no-ids.json", ASN_SERVER_VLLM);
    tokens_case("sglang/generate-eos.json", ASN_SERVER_SGLANG);
    tokens_case("sglang/generate-eos-trimmed.json", ASN_SERVER_SGLANG);
    tokens_case("sglang/generate-length.json", ASN_SERVER_SGLANG);
    tokens_case("sglang/generate-stop-string.json", ASN_SERVER_SGLANG);
    json_t *f = load("vllm/version.json"), *g = load("sglang/get_model_info.json");
    T_OK("vllm /version and sglang /get_model_info have the members detection asks for",
         json_is_string(json_object_get(json_object_get(f, "response"), "version")) &&
             json_is_string(json_object_get(json_object_get(g, "response"), "model_path")), "missing");
    json_decref(f);
    json_decref(g);
}

/* Each exchange of a recorded llama-server file, by method and path. */
static json_t *exchanges(const char *name)
{
    json_t *all = json_array();
    FILE *fp = fopen(data_path(name), "rb");
    char line[1 << 16];
    while (fp && fgets(line, sizeof line, fp))
        json_array_append_new(all, json_loads(line, 0, NULL));
    if (fp)
        fclose(fp);
    return all;
}

static void test_llama_server(void)
{
    json_t *misc = exchanges("llama-server/misc.jsonl"), *gen = exchanges("llama-server/generate.jsonl");
    T_OK("llama-server's recordings read", json_array_size(misc) == 11 && json_array_size(gen) == 30, "%zu, %zu",
         json_array_size(misc), json_array_size(gen));
    size_t i;
    const json_t *x;
    int posts = 0, agree = 0, probs = 0, models = 0, errors = 0;
    json_array_foreach(misc, i, x)
    {
        const char *path = json_string_value(json_object_get(x, "path"));
        const json_t *resp = json_object_get(x, "response");
        long status = (long)json_integer_value(json_object_get(x, "status"));
        if (!strcmp(path, "/v1/models"))
            models += asn_server_models_kind(resp) == ASN_SERVER_LLAMA;
        if (!strcmp(path, "/completion") && status == 200 && json_object_get(resp, "completion_probabilities")) {
            /* the tokens against completion_probabilities[k].id */
            char *body = asn_json_dumps(resp, 0);
            int32_t *ids;
            int n;
            asn_err e;
            const json_t *cp = json_object_get(resp, "completion_probabilities");
            if (!asn_server_tokens(ASN_SERVER_LLAMA, body, strlen(body), &ids, &n, &e) &&
                (size_t)n == json_array_size(cp)) {
                probs = 1;
                for (int k = 0; k < n; k++)
                    probs &= ids[k] == json_integer_value(json_object_get(json_array_get(cp, (size_t)k), "id"));
                free(ids);
            }
            free(body);
        }
        if (status >= 400) /* what the client shows of an error: error.message */
            errors += json_is_string(json_object_get(json_object_get(resp, "error"), "message"));
    }
    T_OK("llama-server /v1/models: owned_by llamacpp", models == 1, "%d", models);
    T_OK("llama-server /completion tokens are completion_probabilities' ids", probs, "differ");
    T_OK("llama-server errors (404s, invalid token, bad JSON) carry error.message", errors == 4, "%d", errors);
    json_array_foreach(gen, i, x)
    {
        if (strcmp(json_string_value(json_object_get(x, "method")), "POST"))
            continue;
        posts++;
        const json_t *resp = json_object_get(x, "response");
        char *body = asn_json_dumps(resp, 0);
        int32_t *ids;
        int n;
        asn_err e;
        if (!asn_server_tokens(ASN_SERVER_LLAMA, body, strlen(body), &ids, &n, &e)) {
            agree += n == json_integer_value(json_object_get(resp, "tokens_predicted"));
            free(ids);
        }
        free(body);
    }
    T_OK("llama-server: each of 28 answers gives tokens_predicted ids", posts == 28 && agree == 28, "%d of %d", agree,
         posts);
    json_decref(misc);
    json_decref(gen);
}

int main(void)
{
    test_vllm_sglang();
    test_llama_server();
    T_DONE();
}
