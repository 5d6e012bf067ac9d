/* test_replay.c — replaying candidates (lib/gen/replay.c). The reference
 * is generation itself: candidates made by asn_generate with heuristics
 * that use the token history (penalties, dry, no_repeat_ngram), a state
 * (mirostat_v2), the random key (xtc) and min_new_tokens must be drawn
 * again, token for token, from the replayed target rows; the replayed raw
 * logits of step 0 equal a plain prefill of the prompt; the rows do not
 * depend on the chunk size; bad records get errors naming the field. */
#include "asn/gen.h"
#include "asn/json.h"
#include "asn/replay.h"
#include "t.h"

#include <stdlib.h>

static const char *model_path(void)
{
    static char buf[1024];
    const char *root = getenv("ASN_ROOT");
    snprintf(buf, sizeof buf, "%s/tests/data/models/tiny-spm-q8_0.gguf", root ? root : ".");
    return buf;
}

static const char *const HEURISTICS[] = {
    "[{\"name\":\"temperature\",\"params\":{\"temperature\":0.9}},{\"name\":\"min_p\",\"params\":{\"min_p\":0.05}}]",
    "[{\"name\":\"repetition_penalty\",\"params\":{\"penalty\":1.3}},{\"name\":\"top_k\",\"params\":{\"top_k\":20}}]",
    "[{\"name\":\"xtc\",\"params\":{\"xtc_probability\":0.5,\"xtc_threshold\":0.05}}]",
    "[{\"name\":\"temperature\",\"params\":{\"temperature\":1.2}},{\"name\":\"mirostat_v2\",\"params\":{\"tau\":3.0,\"eta\":0.2}}]",
    "[{\"name\":\"no_repeat_ngram\",\"params\":{\"ngram_size\":2}},{\"name\":\"frequency_penalty\",\"params\":{\"penalty\":0.5}}]",
    "[{\"name\":\"dry\",\"params\":{\"dry_multiplier\":0.8,\"dry_base\":1.75,\"dry_allowed_length\":2}}]",
};
enum { NH = sizeof HEURISTICS / sizeof *HEURISTICS, NSEED = 3, MAXN = 40, MINN = 12 };

int main(void)
{
    asn_err e;
    asn_model *m = asn_model_load(model_path(), &e);
    if (!m) {
        printf("not ok - load model: %s\n", e.msg);
        return 1;
    }
    const asn_vocab *v = asn_model_vocab(m, &e);
    int V = asn_model_cfg(m)->n_vocab;
    asn_heuristic hs[NH];
    for (int i = 0; i < NH; i++) {
        json_t *p = json_loads(HEURISTICS[i], 0, NULL);
        char name[16];
        snprintf(name, sizeof name, "h%d", i);
        if (asn_heuristic_init(&hs[i], name, p, &e)) {
            printf("not ok - heuristic %d: %s\n", i, e.msg);
            return 1;
        }
        json_decref(p);
    }
    int32_t *prompt;
    int n_prompt;
    if (asn_gen_prompt_tokens(v, 0, NULL, "The quick brown fox", &prompt, &n_prompt, &e)) {
        printf("not ok - prompt: %s\n", e.msg);
        return 1;
    }
    asn_gen_settings gs = {.min_new_tokens = MINN, .max_new_tokens = MAXN};
    asn_generator *g = asn_generator_new(m, NULL, 8, 0, &gs, &e);
    asn_gen_job jobs[NH * NSEED];
    memset(jobs, 0, sizeof jobs);
    for (int i = 0; i < NH * NSEED; i++)
        jobs[i] = (asn_gen_job){.prompt_id = "p0", .prompt_tokens = prompt, .n_prompt = n_prompt, .heuristic = &hs[i / NSEED], .seed = (uint64_t)(i % NSEED)};
    T_OK("generate", g && !asn_generate(g, jobs, NH * NSEED, NULL, NULL, &e), "%s", e.msg);

    asn_replayer *r = asn_replayer_new(m, NULL, 0, &e);
    T_OK("replayer", r != NULL, "%s", e.msg);
    float *raw = malloc((size_t)MAXN * V * sizeof *raw), *tgt = malloc((size_t)MAXN * V * sizeof *tgt);
    float *raw2 = malloc((size_t)MAXN * V * sizeof *raw2), *tgt2 = malloc((size_t)MAXN * V * sizeof *tgt2);
    uint8_t drawn[MAXN];
    int all_drawn = 1, same_chunks = 1, removed_eos = 1, total = 0;
    const int32_t *eog;
    size_t n_eog = asn_vocab_eog_ids(v, &eog);
    for (int i = 0; i < NH * NSEED; i++) {
        asn_candidate c = {(char *)"p0", prompt, n_prompt, jobs[i].tokens, jobs[i].n_tokens, hs[i / NSEED],
                           (uint64_t)(i % NSEED), MINN};
        /* one chunk for everything */
        int n = 0;
        if (asn_replay_begin(r, &c, &e) || (n = asn_replay_next(r, MAXN, raw, tgt, drawn, &e)) != c.n_gen) {
            printf("not ok - replay %d: %s\n", i, e.msg);
            t_failed++;
            continue;
        }
        T_EQ_INT("replay is done", asn_replay_next(r, 5, NULL, NULL, NULL, &e), 0);
        for (int j = 0; j < n; j++)
            all_drawn &= drawn[j];
        for (int j = 0; j < n && j < MINN; j++)
            for (size_t k = 0; k < n_eog; k++)
                removed_eos &= tgt[(size_t)j * V + eog[k]] == -INFINITY;
        total += n;
        /* chunks of 3, with the first 4 steps skipped without outputs */
        asn_replay_begin(r, &c, &e);
        int got = asn_replay_next(r, 4 < n ? 4 : n, NULL, NULL, NULL, &e);
        while (got > 0 && asn_replay_pos(r) < n) {
            int at = asn_replay_pos(r);
            got = asn_replay_next(r, 3, raw2 + (size_t)at * V, tgt2 + (size_t)at * V, NULL, &e);
        }
        int from = 4 < n ? 4 : n;
        same_chunks &= !memcmp(raw + (size_t)from * V, raw2 + (size_t)from * V, (size_t)(n - from) * V * sizeof *raw) &&
                       !memcmp(tgt + (size_t)from * V, tgt2 + (size_t)from * V, (size_t)(n - from) * V * sizeof *tgt);
        if (i == 0) {
            /* step 0's raw logits are the prompt's last position */
            asn_engine *en = asn_engine_new(m, 0, NULL, &e);
            int seq = asn_seq_new(en);
            float *last = malloc((size_t)V * sizeof *last);
            asn_batch_item it = {seq, prompt, n_prompt, last, 0, NULL, NULL};
            T_OK("prefill", !asn_engine_decode(en, &it, 1, &e), "%s", e.msg);
            for (size_t k = 0; k < n_eog; k++) /* the heuristic receives them masked (min_new_tokens) */
                last[eog[k]] = -INFINITY;
            T_OK("step 0 raw logits = prefill logits, end of generation masked", !memcmp(last, raw, (size_t)V * sizeof *raw),
                 "differ");
            int unmasked_after = 1;
            for (int j = MINN; j < n; j++)
                for (size_t k = 0; k < n_eog; k++)
                    unmasked_after &= raw[(size_t)j * V + eog[k]] > -INFINITY;
            T_OK("raw rows keep the end-of-generation ids from step min_new_tokens on", unmasked_after, "masked");
            free(last);
            asn_engine_free(en);
        }
    }
    T_OK("every recorded token is drawn again from its replayed target", all_drawn, "a token was not");
    T_OK("replayed rows do not depend on the chunk size", same_chunks, "they do");
    T_OK("min_new_tokens masks the end-of-generation ids in the targets", removed_eos, "not masked");
    T_OK("replayed steps", total > NH * NSEED * MINN, "only %d", total);

    /* a changed token is detected: its own step and the history after it */
    {
        int32_t *toks = malloc((size_t)jobs[3].n_tokens * sizeof *toks);
        memcpy(toks, jobs[3].tokens, (size_t)jobs[3].n_tokens * sizeof *toks);
        toks[2] = (toks[2] + 1) % V;
        asn_candidate c = {(char *)"p0", prompt, n_prompt, toks, jobs[3].n_tokens, hs[1], 0, MINN};
        asn_replay_begin(r, &c, &e);
        int n = asn_replay_next(r, MAXN, NULL, NULL, drawn, &e);
        T_OK("a changed token is not drawn again", n > 2 && !drawn[2] && drawn[0] && drawn[1], "drawn[2] = %d",
             drawn[2]);
        free(toks);
    }

    /* records: the JSON form and its errors */
    {
        json_t *h = asn_heuristic_json(&hs[0]);
        json_t *toks = json_array();
        for (int j = 0; j < jobs[0].n_tokens; j++)
            json_array_append_new(toks, json_integer(jobs[0].tokens[j]));
        json_t *rec = json_pack("{s:s,s:s,s:n,s:o,s:i,s:o,s:{s:s,s:i}}", "prompt_id", "p0", "prompt",
                                "The quick brown fox", "system", "heuristic", h, "seed", 0, "tokens", toks,
                                "settings", "chat_template", "none", "min_new_tokens", MINN);
        asn_candidate c;
        T_OK("candidate from JSON", !asn_candidate_from_json(&c, rec, v, &e), "%s", e.msg);
        T_OK("same prompt tokens", c.n_prompt == n_prompt && !memcmp(c.prompt, prompt, (size_t)n_prompt * 4), "differ");
        T_EQ_INT("min_new_tokens", c.min_new_tokens, MINN);
        T_EQ_STR("heuristic id", c.heuristic.id, hs[0].id);
        asn_replay_begin(r, &c, &e);
        int n = asn_replay_next(r, MAXN, NULL, NULL, drawn, &e), ok = n == jobs[0].n_tokens;
        for (int j = 0; ok && j < n; j++)
            ok = drawn[j];
        T_OK("the JSON record replays", ok, "n %d", n);
        asn_candidate_clear(&c);
        struct {
            const char *field, *json, *want;
        } bad[] = {
            {"tokens", "\"x\"", "field \"tokens\""},
            {"tokens", "[1, -3]", "field \"tokens\": element 1"},
            {"tokens", "[1, 99999999]", "element 1"},
            {"seed", "-1", "field \"seed\""},
            {"prompt", "7", "field \"prompt\""},
            {"heuristic", "{\"name\": \"x\", \"processors\": [{\"name\": \"top_q\"}]}", "field \"heuristic\""},
            {"heuristic", "{\"name\": \"x\", \"id\": \"000000000000\", \"processors\": []}", "heuristic.id"},
            {"settings", "{\"chat_template\": \"nope\"}", "settings.chat_template"},
            {"settings", "{\"min_new_tokens\": -2}", "settings.min_new_tokens"},
        };
        for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
            json_t *b = json_deep_copy(rec);
            json_object_set_new(b, bad[k].field, json_loads(bad[k].json, JSON_DECODE_ANY, NULL));
            int rc = asn_candidate_from_json(&c, b, v, &e);
            char name[96];
            snprintf(name, sizeof name, "bad record: %s = %s", bad[k].field, bad[k].json);
            T_OK(name, rc < 0 && strstr(e.msg, bad[k].want), "rc %d, \"%s\"", rc, rc < 0 ? e.msg : "");
            json_decref(b);
        }
        json_t *b = json_deep_copy(rec);
        json_object_del(b, "tokens");
        T_OK("missing tokens", asn_candidate_from_json(&c, b, v, &e) < 0 && strstr(e.msg, "\"tokens\": missing"),
             "%s", e.msg);
        json_decref(b);
        json_decref(rec);
    }

    for (int i = 0; i < NH * NSEED; i++)
        asn_gen_job_clear(&jobs[i]);
    for (int i = 0; i < NH; i++)
        asn_heuristic_clear(&hs[i]);
    free(raw), free(tgt), free(raw2), free(tgt2);
    free(prompt);
    asn_replayer_free(r);
    asn_generator_free(g);
    asn_model_free(m);
    T_DONE();
}
