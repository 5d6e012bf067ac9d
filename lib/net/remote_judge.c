/* remote_judge.c — rank-bt's judges through servers: the log-probability
 * of each prompt token given those before it, by kind.
 *
 * asn (serve) and vllm, POST /v1/completions (OpenAI's legacy "echo"):
 *   {"model": M, "prompt": [ids], "echo": true, "logprobs": 0 | 1,
 *    "max_tokens": 0 (asn) | 1 (vllm: older versions refuse 0),
 *    "temperature": 0}
 *   -> {"choices": [{"logprobs": {"tokens": [...],
 *        "token_logprobs": [null, lp1, ..., lp(n-1), <generated>...],
 *        "top_logprobs": [null, {...}, ...]}, ...}], ...}
 *   the prompt's entries come first; the first is null (nothing before it).
 * sglang, POST /generate (its native API):
 *   {"input_ids": [ids], "sampling_params": {"max_new_tokens": 1,
 *    "temperature": 0}, "return_logprob": true, "logprob_start_len": 0}
 *   -> {"meta_info": {"input_token_logprobs": [[lp | null, id, text | null],
 *        ...], "output_token_logprobs": [...], ...}, ...}
 *   (a list of one such object for a batch of one).
 * llama-server returns log-probabilities of generated tokens only (its
 * /completion n_probs); it is refused rather than approximated from a
 * top-k list. */
#include "asn/remote.h"
#include "asn/json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int asn_server_echo_check(int kind, asn_err *e)
{
    if (kind == ASN_SERVER_ASN || kind == ASN_SERVER_VLLM || kind == ASN_SERVER_SGLANG)
        return 0;
    return asn_err_set(e, "%s returns no log-probabilities of prompt tokens (no \"echo\"), which the judges need",
                       asn_server_kind_name(kind));
}

const char *asn_server_echo_path(int kind)
{
    return kind == ASN_SERVER_SGLANG ? "/generate" : "/v1/completions";
}

static json_t *ids_json(const int32_t *ids, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_integer(ids[i]));
    return a;
}

json_t *asn_server_echo_body(int kind, const char *model, const int32_t *ids, int n)
{
    if (kind == ASN_SERVER_SGLANG)
        return json_pack("{s:o,s:{s:i,s:i},s:b,s:i}", "input_ids", ids_json(ids, n), "sampling_params",
                         "max_new_tokens", 1, "temperature", 0, "return_logprob", 1, "logprob_start_len", 0);
    json_t *o = json_object();
    if (model)
        json_object_set_new(o, "model", json_string(model));
    json_object_set_new(o, "prompt", ids_json(ids, n));
    json_object_set_new(o, "echo", json_true());
    json_object_set_new(o, "logprobs", json_integer(kind == ASN_SERVER_ASN ? 0 : 1));
    json_object_set_new(o, "max_tokens", json_integer(kind == ASN_SERVER_ASN ? 0 : 1));
    json_object_set_new(o, "temperature", json_integer(0));
    return o;
}

int asn_server_echo_logprobs(int kind, const char *body, size_t len, int n, double *lp, asn_err *e)
{
    json_error_t je;
    json_t *o = json_loadb(body, len, 0, &je);
    if (!o)
        return asn_err_set(e, "the response is not JSON: %s", je.text);
    const json_t *a;
    const char *where;
    if (kind == ASN_SERVER_SGLANG) {
        const json_t *r = json_is_array(o) ? json_array_get(o, 0) : o;
        a = json_object_get(json_object_get(r, "meta_info"), "input_token_logprobs");
        where = "meta_info.input_token_logprobs";
    } else {
        a = json_object_get(json_object_get(json_array_get(json_object_get(o, "choices"), 0), "logprobs"),
                            "token_logprobs");
        where = "choices[0].logprobs.token_logprobs";
    }
    int rc = 0;
    if (!json_is_array(a) || json_array_size(a) < (size_t)n) {
        rc = asn_err_set(e, "the response has no %s for the %d prompt tokens", where, n);
        goto out;
    }
    lp[0] = NAN;
    for (int i = 1; i < n; i++) {
        const json_t *x = json_array_get(a, (size_t)i);
        if (kind == ASN_SERVER_SGLANG)
            x = json_array_get(x, 0);
        double v = NAN;
        if (x && !json_is_null(x) && asn_json_number(x, &v)) {
            rc = asn_err_set(e, "the response's %s[%d] is not a number", where, i);
            goto out;
        }
        lp[i] = v;
    }
out:
    json_decref(o);
    return rc;
}

/* ------------------------------------------------------------ requests */

typedef struct echo_run {
    int kind;
    const int *n;      /* per request: its token count */
    double **lp;       /* per request: n log-probabilities */
} echo_run;

static int echo_done(void *ctx, int i, const char *body, size_t len, asn_err *e)
{
    echo_run *r = ctx;
    return asn_server_echo_logprobs(r->kind, body, len, r->n[i], r->lp[i], e);
}

/* Scores seqs[0..m) (each ns[k] tokens): lp[k] gets their log-probabilities. */
static int echo_all(asn_remote_judge *j, int32_t *const *seqs, const int *ns, int m, double **lp, asn_err *e)
{
    if (m == 0)
        return 0;
    char **bodies = asn_xcalloc((size_t)m, sizeof *bodies);
    for (int k = 0; k < m; k++) {
        json_t *b = asn_server_echo_body(j->kind, j->model, seqs[k], ns[k]);
        bodies[k] = asn_json_dumps(b, 0);
        json_decref(b);
    }
    echo_run r = {j->kind, ns, lp};
    int rc = asn_client_post_all(j->c, asn_server_echo_path(j->kind), bodies, m, echo_done, &r, e);
    j->requests += m;
    for (int k = 0; k < m; k++)
        free(bodies[k]);
    free(bodies);
    return rc;
}

int asn_remote_pairwise(asn_remote_judge *j, const asn_vocab *v, int chat, const asn_judge_tmpl *t,
                        const asn_pair_req *req, int n, double *p, asn_err *e)
{
    int32_t ab[2];
    if (n <= 0)
        return 0;
    if (asn_pairwise_answer_ids(v, ab, e))
        return -1;
    /* per pair: (x as A) + "A", (x as A) + "B", (y as A) + "A", (y as A) + "B" */
    int m = 4 * n, rc = 0;
    int32_t **seqs = asn_xcalloc((size_t)m, sizeof *seqs);
    int *ns = asn_xcalloc((size_t)m, sizeof *ns);
    double **lp = asn_xcalloc((size_t)m, sizeof *lp);
    for (int k = 0; k < n && !rc; k++)
        for (int o = 0; o < 2 && !rc; o++) {
            int32_t *q;
            int nq;
            rc = asn_pairwise_question(v, chat, t, req[k].input, o ? req[k].b : req[k].a, o ? req[k].a : req[k].b,
                                       &q, &nq, e);
            for (int w = 0; w < 2 && !rc; w++) {
                int s = 4 * k + 2 * o + w;
                seqs[s] = asn_xmalloc(((size_t)nq + 1) * sizeof **seqs);
                memcpy(seqs[s], q, (size_t)nq * sizeof *q);
                seqs[s][nq] = ab[w];
                ns[s] = nq + 1;
                lp[s] = asn_xmalloc(((size_t)nq + 1) * sizeof **lp);
            }
            if (!rc)
                free(q);
        }
    if (!rc)
        rc = echo_all(j, seqs, ns, m, lp, e);
    for (int k = 0; k < n && !rc; k++) {
        double pa[2];
        for (int o = 0; o < 2; o++) {
            int s = 4 * k + 2 * o;
            pa[o] = asn_pairwise_p_a(lp[s][ns[s] - 1], lp[s + 1][ns[s + 1] - 1]);
        }
        p[k] = asn_pairwise_combine(pa[0], pa[1]);
    }
    for (int s = 0; s < m; s++)
        free(seqs[s]), free(lp[s]);
    free(seqs), free(ns), free(lp);
    return rc;
}

int asn_remote_ll(asn_remote_judge *j, const asn_ll_req *req, int n, double *mean, asn_err *e)
{
    int32_t **seqs = asn_xcalloc((size_t)(n ? n : 1), sizeof *seqs);
    int *ns = asn_xcalloc((size_t)(n ? n : 1), sizeof *ns), *at = asn_xcalloc((size_t)(n ? n : 1), sizeof *at);
    double **lp = asn_xcalloc((size_t)(n ? n : 1), sizeof *lp);
    int m = 0, rc = 0;
    for (int k = 0; k < n; k++) {
        mean[k] = NAN;
        if (req[k].n_prompt < 1) {
            rc = asn_err_set(e, "the prompt has no tokens");
            break;
        }
        if (req[k].n < 1) /* an empty answer: NaN, nothing to ask */
            continue;
        int len = req[k].n_prompt + req[k].n;
        seqs[m] = asn_xmalloc((size_t)len * sizeof **seqs);
        memcpy(seqs[m], req[k].prompt, (size_t)req[k].n_prompt * sizeof **seqs);
        memcpy(seqs[m] + req[k].n_prompt, req[k].tokens, (size_t)req[k].n * sizeof **seqs);
        ns[m] = len;
        lp[m] = asn_xmalloc((size_t)len * sizeof **lp);
        at[m++] = k;
    }
    if (!rc)
        rc = echo_all(j, seqs, ns, m, lp, e);
    for (int q = 0; q < m && !rc; q++) {
        const asn_ll_req *r = &req[at[q]];
        double sum = 0;
        for (int i = r->n_prompt; i < ns[q]; i++)
            sum += lp[q][i];
        mean[at[q]] = sum / r->n;
    }
    for (int q = 0; q < m; q++)
        free(seqs[q]), free(lp[q]);
    free(seqs), free(ns), free(at), free(lp);
    return rc;
}
