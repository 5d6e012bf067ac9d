/* test_openai.c — request bodies of the OpenAI-compatible API (fields,
 * defaults, errors naming the field, prompt ids against Python's hashlib),
 * the sampling parameters as processors, the server kinds' tables (what
 * each refuses, and the bodies sent), and the token ids of responses in the
 * layouts the servers' API references give (vLLM's return_token_ids,
 * SGLang's /generate output_ids, llama-server's /completion tokens); the
 * prompt log-probabilities of vLLM's "echo" (a response vLLM 0.16 gave, as
 * quoted in llama.cpp's pull request 15189) and of SGLang's
 * input_token_logprobs (its native API's layout); the rewards of vLLM's
 * /classify (the response its API documentation shows, as SGLang's
 * documents it too) and of SGLang's /classify of a reward model. */
#include "asn/client.h"
#include "asn/json.h"
#include "asn/openai.h"
#include "asn/remote.h"
#include "t.h"

#include <math.h>
#include <stdlib.h>

static const asn_oai_limits LIM = {64, 4, 100, 1000};

static int parse(const char *body, int chat, asn_oai_request *rq, asn_err *e)
{
    return asn_oai_parse(body, strlen(body), chat, &LIM, rq, e);
}

/* The request is refused and the message holds word. */
static void refused(const char *name, const char *body, int chat, const char *word)
{
    asn_oai_request rq;
    asn_err e = {""};
    int rc = parse(body, chat, &rq, &e);
    T_OK(name, rc == -1 && strstr(e.msg, word), "rc %d, message \"%s\" (wanted \"%s\")", rc, e.msg, word);
    asn_oai_request_free(&rq);
}

static void test_parse(void)
{
    asn_oai_request rq;
    asn_err e;
    T_OK("a text prompt", !parse("{\"prompt\": \"Hello\"}", 0, &rq, &e), "%s", e.msg);
    T_EQ_STR("  ... its text", rq.prompt, "Hello");
    T_EQ_INT("  ... max_tokens defaults to 16 (OpenAI's)", rq.max_tokens, 16);
    T_EQ_INT("  ... n 1, no stream, no logprobs, no seed", rq.n * 1000 + rq.stream * 100 + (rq.logprobs + 1) * 10 + rq.has_seed, 1000);
    T_EQ_STR("  ... prompt id: sha256(0x1F Hello)[:16] (hashlib)", rq.prompt_id, "d93260b3e7323617");
    T_EQ_INT("  ... no parameters, no processors", json_array_size(rq.processors), 0);
    asn_oai_request_free(&rq);

    T_OK("a token-id prompt, as [[ids]] too", !parse("{\"prompt\": [[1, 2, 3]], \"seed\": 7, \"n\": 2, \"logprobs\": 3, "
                                                      "\"stop\": \"\\n\", \"max_tokens\": 64}", 0, &rq, &e), "%s", e.msg);
    T_EQ_INT("  ... its ids", rq.n_prompt_ids * 1000 + rq.prompt_ids[0] * 100 + rq.prompt_ids[2], 3103);
    T_EQ_STR("  ... prompt id of \"1,2,3\" (hashlib)", rq.prompt_id, "b2bcff2c4e0cb20b");
    T_EQ_INT("  ... seed, n, logprobs, one stop, max_tokens", (long long)rq.seed * 10000 + rq.n * 1000 + rq.logprobs * 100 + rq.n_stop * 10 + (rq.max_tokens == 64), 72311);
    asn_oai_request_free(&rq);

    T_OK("chat: system and last user message key the prompt id",
         !parse("{\"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"}, {\"role\": \"user\", \"content\": \"Hi\"}],"
                " \"logprobs\": true, \"top_logprobs\": 2, \"max_completion_tokens\": 5}", 1, &rq, &e), "%s", e.msg);
    T_EQ_STR("  ... sha256(Be brief. 0x1F Hi)[:16] (hashlib)", rq.prompt_id, "6ae03290f831426d");
    T_EQ_INT("  ... top_logprobs and max_completion_tokens", rq.logprobs * 100 + rq.max_tokens, 205);
    asn_oai_request_free(&rq);

    T_OK("asn_prompt_id and a heuristic by name",
         !parse("{\"prompt\": \"x\", \"asn_prompt_id\": \"p-1\", \"asn_heuristic\": \"warm\"}", 0, &rq, &e), "%s", e.msg);
    T_OK("  ... kept", !strcmp(rq.prompt_id, "p-1") && !strcmp(rq.heuristic_name, "warm") && !rq.processors, "%s", rq.prompt_id);
    asn_oai_request_free(&rq);

    refused("not JSON", "{\"prompt\": ", 0, "not JSON");
    refused("not an object", "[]", 0, "JSON object");
    refused("duplicate keys", "{\"prompt\": \"a\", \"prompt\": \"b\"}", 0, "duplicate");
    refused("max_tokens over the limit", "{\"prompt\": \"a\", \"max_tokens\": 65}", 0, "\"max_tokens\" must be 1 to 64");
    refused("min_tokens over max_tokens", "{\"prompt\": \"a\", \"max_tokens\": 5, \"min_tokens\": 6}", 0, "\"min_tokens\"");
    refused("n over the limit", "{\"prompt\": \"a\", \"n\": 5}", 0, "\"n\"");
    refused("a token id out of the vocabulary", "{\"prompt\": [1, 1000]}", 0, "item 1");
    refused("a prompt longer than the limit", "{\"prompt\": [" "1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,"
                                                  "1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]}", 0, "101 tokens");
    refused("two prompts", "{\"prompt\": [\"a\", \"b\"]}", 0, "one prompt per request");
    refused("an empty prompt", "{\"prompt\": \"\"}", 0, "empty");
    refused("a NUL in the prompt", "{\"prompt\": \"a\\u0000b\"}", 0, "NUL");
    refused("temperature below 0", "{\"prompt\": \"a\", \"temperature\": -0.5}", 0, "\"temperature\"");
    refused("top_k not an integer", "{\"prompt\": \"a\", \"top_k\": 2.5}", 0, "\"top_k\"");
    refused("a negative seed", "{\"prompt\": \"a\", \"seed\": -1}", 0, "\"seed\"");
    refused("stream not a boolean", "{\"prompt\": \"a\", \"stream\": 1}", 0, "\"stream\"");
    refused("a stop that is not a string", "{\"prompt\": \"a\", \"stop\": [\"x\", 3]}", 0, "item 1");
    refused("logprobs over 20", "{\"prompt\": \"a\", \"logprobs\": 21}", 0, "\"logprobs\"");
    refused("a message without content", "{\"messages\": [{\"role\": \"user\"}]}", 1, "item 0");
    refused("an asn_heuristic of the wrong type", "{\"prompt\": \"a\", \"asn_heuristic\": 3}", 0, "asn_heuristic");
    refused("a model that is not a string", "{\"prompt\": \"a\", \"model\": 1}", 0, "\"model\"");
}

static void test_params(void)
{
    asn_err e;
    json_t *b = json_loads("{\"temperature\": 0.7, \"top_p\": 0.9, \"top_k\": 40, \"min_p\": 0.05, \"repetition_penalty\": 1.1,"
                           " \"presence_penalty\": 0.5}", 0, NULL);
    json_t *p = asn_oai_params_processors(b, &e);
    char *s = p ? asn_json_dumps(p, 0) : NULL;
    T_EQ_STR("sampling parameters in HuggingFace's order", s,
             "[{\"name\":\"repetition_penalty\",\"params\":{\"penalty\":1.1}},{\"name\":\"presence_penalty\",\"params\":{\"penalty\":0.5}},"
             "{\"name\":\"temperature\",\"params\":{\"temperature\":0.7}},{\"name\":\"top_k\",\"params\":{\"top_k\":40}},"
             "{\"name\":\"top_p\",\"params\":{\"top_p\":0.9}},{\"name\":\"min_p\",\"params\":{\"min_p\":0.05}}]");
    free(s);
    json_decref(p);
    json_decref(b);
    b = json_loads("{\"temperature\": 0, \"top_p\": 0.5}", 0, NULL);
    p = asn_oai_params_processors(b, &e);
    s = p ? asn_json_dumps(p, 0) : NULL;
    T_EQ_STR("temperature 0 is greedy", s, "[{\"name\":\"greedy\",\"params\":{}}]");
    free(s);
    json_decref(p);
    json_decref(b);
}

static void heur(asn_heuristic *h, const char *name, const char *procs)
{
    asn_err e;
    json_t *p = json_loads(procs, 0, NULL);
    if (asn_heuristic_init(h, name, p, &e))
        printf("not ok - heuristic %s: %s\n", name, e.msg);
    json_decref(p);
}

static void kind_case(const char *name, int kind, const char *procs, const char *want)
{
    asn_heuristic h;
    heur(&h, "h", procs);
    asn_gen_settings gs = {.max_new_tokens = 8};
    asn_err e = {""};
    int rc = asn_server_check(kind, &h, &gs, &e);
    if (!want)
        T_OK(name, rc == 0, "refused: %s", e.msg);
    else
        T_OK(name, rc == -1 && strstr(e.msg, want), "rc %d, \"%s\" (wanted \"%s\")", rc, e.msg, want);
    asn_heuristic_clear(&h);
}

static void test_kinds(void)
{
    T_EQ_INT("kind names", asn_server_kind_from_name("vllm") * 100 + asn_server_kind_from_name("llama-server") * 10 +
                               (asn_server_kind_from_name("tgi") == -1), ASN_SERVER_VLLM * 100 + ASN_SERVER_LLAMA * 10 + 1);
    const char *hf = "[{\"name\":\"repetition_penalty\",\"params\":{\"penalty\":1.1}},{\"name\":\"temperature\",\"params\":{\"temperature\":0.7}},"
                     "{\"name\":\"min_p\",\"params\":{\"min_p\":0.05}},{\"name\":\"top_k\",\"params\":{\"top_k\":40}},{\"name\":\"top_p\",\"params\":{\"top_p\":0.9}}]";
    kind_case("vllm: penalties, temperature, min_p, top_k, top_p", ASN_SERVER_VLLM, hf, NULL);
    kind_case("sglang: min_p after top_p only", ASN_SERVER_SGLANG, hf, "processor 4 (top_k) before");
    kind_case("vllm: top_p before temperature refused", ASN_SERVER_VLLM,
              "[{\"name\":\"top_p\",\"params\":{\"top_p\":0.9}},{\"name\":\"temperature\",\"params\":{\"temperature\":0.7}}]",
              "processor 2 (temperature) before");
    kind_case("vllm: eta refused", ASN_SERVER_VLLM, "[{\"name\":\"eta\",\"params\":{\"epsilon\":0.001}}]",
              "vllm cannot express processor 1 (eta)");
    kind_case("vllm: min_tokens_to_keep other than 1 refused", ASN_SERVER_VLLM,
              "[{\"name\":\"top_k\",\"params\":{\"top_k\":4,\"min_tokens_to_keep\":3}}]", "parameter \"min_tokens_to_keep\" other than 1");
    kind_case("vllm: a processor twice refused", ASN_SERVER_VLLM,
              "[{\"name\":\"top_k\",\"params\":{\"top_k\":4}},{\"name\":\"top_k\",\"params\":{\"top_k\":2}}]", "once only");
    kind_case("vllm: greedy before another processor refused", ASN_SERVER_VLLM, "[{\"name\":\"greedy\",\"params\":{}},{\"name\":\"temperature\",\"params\":{\"temperature\":1}}]",
              "greedy");
    kind_case("llama-server: its samplers in any order", ASN_SERVER_LLAMA,
              "[{\"name\":\"llama_top_k\",\"params\":{\"top_k\":40}},{\"name\":\"llama_temp\",\"params\":{\"temp\":0.8}},"
              "{\"name\":\"llama_min_p\",\"params\":{\"min_p\":0.05}}]", NULL);
    kind_case("llama-server: HF's top_p refused", ASN_SERVER_LLAMA, "[{\"name\":\"top_p\",\"params\":{\"top_p\":0.9}}]",
              "llama-server cannot express processor 1 (top_p)");
    kind_case("llama-server: two min_keep refused", ASN_SERVER_LLAMA,
              "[{\"name\":\"llama_top_p\",\"params\":{\"top_p\":0.9,\"min_keep\":1}},{\"name\":\"llama_min_p\",\"params\":{\"min_p\":0.1,\"min_keep\":2}}]",
              "one min_keep");
    kind_case("llama-server: mirostat refused", ASN_SERVER_LLAMA, "[{\"name\":\"mirostat_v2\",\"params\":{\"tau\":5,\"eta\":0.1}}]",
              "processor 1 (mirostat_v2)");
    kind_case("asn: everything", ASN_SERVER_ASN, "[{\"name\":\"typical\",\"params\":{\"mass\":0.9}},{\"name\":\"eta\",\"params\":{\"epsilon\":0.001}}]", NULL);

    /* bodies */
    asn_heuristic h;
    heur(&h, "h", "[{\"name\":\"llama_top_k\",\"params\":{\"top_k\":40}},{\"name\":\"llama_temp\",\"params\":{\"temp\":0.8}}]");
    int32_t prompt[] = {1, 15043};
    const char *stops[] = {"\n"};
    asn_gen_settings gs = {.max_new_tokens = 8, .stop = stops, .n_stop = 1};
    asn_server_job j = {"m", "p", prompt, 2, &h, 5, &gs};
    json_t *b = asn_server_body(ASN_SERVER_LLAMA, &j);
    char *s = asn_json_dumps(b, 0);
    T_EQ_STR("llama-server body: ids, n_predict, its defaults neutralized, samplers in the heuristic's order", s,
             "{\"prompt\":[1,15043],\"n_predict\":8,\"stop\":[\"\\n\"],\"seed\":5,\"return_tokens\":true,\"cache_prompt\":true,"
             "\"repeat_last_n\":64,\"repeat_penalty\":1.0,\"frequency_penalty\":0.0,\"presence_penalty\":0.0,\"min_keep\":0,"
             "\"mirostat\":0,\"dynatemp_range\":0.0,\"logit_bias\":[],\"ignore_eos\":false,\"n_probs\":0,"
             "\"top_k\":40,\"temperature\":0.8,\"samplers\":[\"top_k\",\"temperature\"]}");
    free(s);
    json_decref(b);
    asn_heuristic_clear(&h);
    heur(&h, "h", "[{\"name\":\"temperature\",\"params\":{\"temperature\":0.7}},{\"name\":\"top_p\",\"params\":{\"top_p\":0.9}}]");
    b = asn_server_body(ASN_SERVER_VLLM, &j);
    s = asn_json_dumps(b, 0);
    T_EQ_STR("vllm body: every parameter set, neutral where the heuristic has none", s,
             "{\"model\":\"m\",\"prompt\":[1,15043],\"max_tokens\":8,\"min_tokens\":0,\"stop\":[\"\\n\"],\"seed\":5,"
             "\"temperature\":0.7,\"top_p\":0.9,\"top_k\":-1,\"min_p\":0.0,\"repetition_penalty\":1.0,\"presence_penalty\":0.0,"
             "\"frequency_penalty\":0.0,\"return_token_ids\":true,\"logprobs\":0,\"return_tokens_as_token_ids\":true,\"skip_special_tokens\":false}");
    free(s);
    json_decref(b);
    asn_heuristic_clear(&h);
}

static void tokens_case(const char *name, int kind, const char *body, int n_want, int last)
{
    int32_t *ids;
    int n;
    asn_err e = {""};
    int rc = asn_server_tokens(kind, body, strlen(body), &ids, &n, &e);
    if (n_want < 0)
        T_OK(name, rc == -1, "accepted");
    else
        T_OK(name, rc == 0 && n == n_want && ids[n - 1] == last, "rc %d n %d: %s", rc, n, e.msg);
    free(ids);
}

static void test_responses(void)
{
    tokens_case("vllm /v1/completions with return_token_ids", ASN_SERVER_VLLM,
                "{\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,"
                "\"text\":\" Paris.\",\"logprobs\":null,\"finish_reason\":\"stop\",\"stop_reason\":null,\"prompt_logprobs\":null,"
                "\"prompt_token_ids\":[1,2],\"token_ids\":[3681,29889,2]}],\"usage\":{\"prompt_tokens\":2,\"total_tokens\":5,"
                "\"completion_tokens\":3}}", 3, 2);
    tokens_case("sglang /generate output_ids", ASN_SERVER_SGLANG,
                "{\"text\":\" Paris.\",\"output_ids\":[3681,29889],\"meta_info\":{\"id\":\"x\",\"finish_reason\":{\"type\":\"length\","
                "\"length\":2},\"prompt_tokens\":2,\"completion_tokens\":2}}", 2, 29889);
    tokens_case("llama-server /completion tokens", ASN_SERVER_LLAMA,
                "{\"index\":0,\"content\":\" Paris.\",\"tokens\":[3681,29889],\"id_slot\":0,\"stop\":true,\"model\":\"m\","
                "\"tokens_predicted\":2,\"tokens_evaluated\":2,\"stop_type\":\"limit\",\"stopping_word\":\"\"}", 2, 29889);
    tokens_case("a response without ids is refused", ASN_SERVER_VLLM, "{\"choices\":[{\"text\":\"x\"}]}", -1, 0);
    tokens_case("a negative id is refused", ASN_SERVER_LLAMA, "{\"tokens\":[5,-1]}", -1, 0);
    tokens_case("not JSON is refused", ASN_SERVER_ASN, "<html>", -1, 0);

    /* a response and an error as serve writes them */
    asn_oai_request rq;
    asn_err e;
    parse("{\"prompt\": \"x\", \"return_token_ids\": true}", 0, &rq, &e);
    int32_t toks[] = {5, 6};
    asn_oai_choice c = {toks, 2, "ab", 2, ASN_FINISH_EOS, NULL, NULL, NULL, 0, NULL};
    json_t *r = asn_oai_response(&rq, "cmpl-1", 7, "m", NULL, &c, 1, 3);
    char *s = asn_json_dumps(r, 0);
    T_EQ_STR("a completion response (OpenAI's layout, asn_finish, token_ids)", s,
             "{\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"created\":7,\"model\":\"m\",\"choices\":[{\"index\":0,\"text\":\"ab\","
             "\"logprobs\":null,\"finish_reason\":\"stop\",\"asn_finish\":\"eos\",\"token_ids\":[5,6]}],"
             "\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2,\"total_tokens\":5}}");
    free(s);
    json_decref(r);
    asn_oai_request_free(&rq);
    r = asn_oai_error(503, "busy");
    s = asn_json_dumps(r, 0);
    T_EQ_STR("an error", s, "{\"error\":{\"message\":\"busy\",\"type\":\"server_busy\",\"param\":null,\"code\":503}}");
    free(s);
    json_decref(r);
}

static void test_echo(void)
{
    asn_err e = {""};
    double lp[9];
    const char *vllm =
        "{\"id\":\"cmpl-8c16f81d43846721\",\"object\":\"text_completion\",\"created\":1772367069,\"model\":\"Intel/"
        "Qwen3-Coder-Next-int4-AutoRound\",\"choices\":[{\"index\":0,\"text\":\"The step of boiling water is: 1\",\"logprobs\":"
        "{\"text_offset\":[0,3,8,11,19,25,28,29,30],\"token_logprobs\":[null,-8.818763732910156,-1.552642822265625,"
        "-13.55989933013916,-2.0115487575531006,-2.2331151962280273,-8.53701114654541,-1.2870503664016724,"
        "-0.41059786081314087],\"tokens\":[\"The\",\" step\",\" of\",\" boiling\",\" water\",\" is\",\":\",\" \",\"1\"],"
        "\"top_logprobs\":[null,{\" step\":-8.818763732910156,\" is\":-0.7875133752822876},{\" of\":-1.552642822265625},"
        "{\" boiling\":-13.55989933013916},{\" water\":-2.0115487575531006},{\" is\":-2.2331151962280273},"
        "{\":\":-8.53701114654541},{\" \":-1.2870503664016724},{\"1\":-0.41059786081314087}]},\"finish_reason\":\"length\"}]}";
    int rc = asn_server_echo_logprobs(ASN_SERVER_VLLM, vllm, strlen(vllm), 8, lp, &e);
    T_OK("vllm echo: the 8 prompt tokens' log-probabilities (the generated 9th left)",
         rc == 0 && isnan(lp[0]) && lp[1] == -8.818763732910156 && lp[7] == -1.2870503664016724, "rc %d: %s", rc, e.msg);
    rc = asn_server_echo_logprobs(ASN_SERVER_VLLM, vllm, strlen(vllm), 10, lp, &e);
    T_OK("vllm echo: fewer entries than prompt tokens is an error", rc == -1 && strstr(e.msg, "token_logprobs"), "%s", e.msg);
    const char *sgl = "{\"text\":\"x\",\"output_ids\":[5],\"meta_info\":{\"id\":\"a\",\"prompt_tokens\":3,"
                      "\"input_token_logprobs\":[[null,1,null],[-2.5,15043,null],[-0.125,3186,null]],"
                      "\"output_token_logprobs\":[[-0.5,5,null]]}}";
    rc = asn_server_echo_logprobs(ASN_SERVER_SGLANG, sgl, strlen(sgl), 3, lp, &e);
    T_OK("sglang input_token_logprobs: [logprob, id, text] per prompt token", rc == 0 && isnan(lp[0]) && lp[1] == -2.5 &&
         lp[2] == -0.125, "rc %d: %s", rc, e.msg);
    int32_t ids[] = {1, 15043, 3186};
    json_t *b = asn_server_echo_body(ASN_SERVER_VLLM, "m", ids, 3);
    char *s = asn_json_dumps(b, 0);
    T_EQ_STR("vllm echo body", s, "{\"model\":\"m\",\"prompt\":[1,15043,3186],\"echo\":true,\"logprobs\":1,\"max_tokens\":1,"
                                  "\"temperature\":0}");
    free(s);
    json_decref(b);
    b = asn_server_echo_body(ASN_SERVER_SGLANG, "m", ids, 3);
    s = asn_json_dumps(b, 0);
    T_EQ_STR("sglang body: input_ids, return_logprob from position 0", s,
             "{\"input_ids\":[1,15043,3186],\"sampling_params\":{\"max_new_tokens\":1,\"temperature\":0},"
             "\"return_logprob\":true,\"logprob_start_len\":0}");
    free(s);
    json_decref(b);
    T_OK("llama-server has no prompt log-probabilities", asn_server_echo_check(ASN_SERVER_LLAMA, &e) == -1 &&
         asn_server_echo_check(ASN_SERVER_SGLANG, &e) == 0, "%s", e.msg);

    /* serve's echo: prompt first, null for its first token, full precision */
    asn_oai_request rq;
    T_OK("echo allows max_tokens 0", !parse("{\"prompt\": [1, 2], \"echo\": true, \"logprobs\": 1, \"max_tokens\": 0}", 0, &rq, &e),
         "%s", e.msg);
    int32_t pids[] = {1, 2}, tops[] = {-1, 7};
    double plp[] = {NAN, -0.1234567890123456789}, tlp[] = {NAN, -0.01};
    asn_oai_echo ec = {pids, 2, "ab", 2, plp, tops, tlp};
    asn_oai_choice c = {NULL, 0, NULL, 0, ASN_FINISH_LENGTH, NULL, NULL, NULL, 1, &ec};
    json_t *r = asn_oai_response(&rq, "c", 1, "m", NULL, &c, 1, 2);
    s = asn_json_dumps(json_object_get(json_array_get(json_object_get(r, "choices"), 0), "logprobs"), 0);
    T_EQ_STR("echo logprobs: [null, lp] in 17 digits, the top and the prompt token", s,
             "{\"tokens\":[\"\",\"\"],\"token_logprobs\":[null,-0.12345678901234568],\"top_logprobs\":[null,{\"\":-0.01}]}");
    free(s);
    json_decref(r);
    asn_oai_request_free(&rq);
    refused("echo is for completions", "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"echo\": true}", 1,
            "echo");
    refused("max_tokens 0 needs echo", "{\"prompt\": \"x\", \"max_tokens\": 0}", 0, "max_tokens");
}

static void test_reward(void)
{
    asn_err e = {""};
    double r = 0;
    const char *vllm = "{\"id\":\"classify-9bf17f2847b046c7b2d5495f4b4f9682\",\"object\":\"list\",\"created\":1745383213,"
                       "\"model\":\"jason9693/Qwen2.5-1.5B-apeach\",\"data\":[{\"index\":0,\"label\":\"Default\",\"probs\":"
                       "[0.565970778465271,0.4340292513370514],\"num_classes\":2}],\"usage\":{\"prompt_tokens\":10,"
                       "\"total_tokens\":10,\"completion_tokens\":0,\"prompt_tokens_details\":null}}";
    int rc = asn_server_reward(ASN_SERVER_VLLM, vllm, strlen(vllm), &r, &e);
    T_OK("vllm /classify: the first output", rc == 0 && r == 0.565970778465271, "rc %d r %g: %s", rc, r, e.msg);
    const char *sgl = "[{\"embedding\":[-3.6875],\"meta_info\":{\"id\":\"b2a\",\"prompt_tokens\":42}}]";
    rc = asn_server_reward(ASN_SERVER_SGLANG, sgl, strlen(sgl), &r, &e);
    T_OK("sglang /classify: embedding[0] of the first", rc == 0 && r == -3.6875, "rc %d r %g: %s", rc, r, e.msg);
    rc = asn_server_reward(ASN_SERVER_ASN, "{\"data\":[]}", 11, &r, &e);
    T_OK("no output is an error", rc == -1 && strstr(e.msg, "probs"), "%s", e.msg);
    int32_t ids[] = {1, 2};
    json_t *b = asn_server_reward_body(ASN_SERVER_VLLM, "m", ids, 2);
    char *s = asn_json_dumps(b, 0);
    T_EQ_STR("vllm /classify body: ids, no activation (both names)", s,
             "{\"model\":\"m\",\"input\":[1,2],\"use_activation\":false,\"activation\":false}");
    free(s);
    json_decref(b);
    b = asn_server_reward_body(ASN_SERVER_SGLANG, NULL, ids, 2);
    s = asn_json_dumps(b, 0);
    T_EQ_STR("sglang /classify body", s, "{\"input_ids\":[1,2]}");
    free(s);
    json_decref(b);
    T_OK("llama-server has no reward endpoint", asn_server_reward_check(ASN_SERVER_LLAMA, &e) == -1, "accepted");
}

int main(void)
{
    test_parse();
    test_echo();
    test_reward();
    test_params();
    test_kinds();
    test_responses();
    T_DONE();
}
