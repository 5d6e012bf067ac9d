/* judge.c — the model judges of rank-bt (asn/bt.h): the pairwise question
 * template, the generative A/B judge, and the reference-likelihood
 * scorer. Both judges decode many sequences per forward pass, each forked
 * from the key-value cache of the prefix they share. */
#include "asn/bt.h"
#include "asn/chat.h"
#include "asn/vexp.h"
#include "asn/vocab.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Token positions decoded per forward pass (all sequences together): it
 * bounds the engine's activation scratch. */
enum { PASS_TOKENS = 2048 };
/* Logit rows kept per forward pass by the likelihood scorer (floats:
 * rows x n_vocab), about 64 MiB. */
#define PASS_LOGIT_FLOATS ((size_t)1 << 24)

/* ------------------------------------------------------------ template */

/* The research pipeline's pairwise-judge question (its reward scorer's
 * prompt template), byte for byte: the same question, the same tokens. */

const char asn_judge_default_template[] =
    "Please act as an impartial judge and evaluate the quality of the responses provided by two AI assistants to the user question displayed below. You should choose the assistant that follows the user's instructions and answers the user's question better.\n"
    "Your evaluation should consider factors such as the helpfulness, relevance, accuracy, depth, creativity, and level of detail of their responses. Avoid any position biases and ensure that the order in which the responses were presented does not influence your decision. Do not allow the length of the responses to influence your evaluation. Do not favor certain names of the assistants. Be as objective as possible.\n"
    "Please directly output your final verdict by strictly following this format: \"A\" if assistant A is better, \"B\" if assistant B is better.\n"
    "[User Question]\n"
    "{input}\n"
    "[The Start of Assistant A's Answer]\n"
    "{response_a}\n"
    "[The End of Assistant A's Answer]\n"
    "[The Start of Assistant B's Answer]\n"
    "{response_b}\n"
    "[The End of Assistant B's Answer]\n";

enum { PART_TEXT, PART_INPUT, PART_A, PART_B };

typedef struct part {
    int kind;
    char *text; /* PART_TEXT */
    size_t len;
} part;

struct asn_judge_tmpl {
    part *parts;
    int n;
};

static void add_text(asn_judge_tmpl *t, const char *s, size_t len)
{
    if (!len)
        return;
    if (t->n && t->parts[t->n - 1].kind == PART_TEXT) {
        part *p = &t->parts[t->n - 1];
        p->text = asn_xrealloc(p->text, p->len + len + 1);
        memcpy(p->text + p->len, s, len);
        p->len += len;
        p->text[p->len] = 0;
        return;
    }
    t->parts = asn_xrealloc(t->parts, (size_t)(t->n + 1) * sizeof *t->parts);
    part *p = &t->parts[t->n++];
    p->kind = PART_TEXT;
    p->text = asn_xmalloc(len + 1);
    memcpy(p->text, s, len);
    p->text[len] = 0;
    p->len = len;
}

asn_judge_tmpl *asn_judge_tmpl_parse(const char *text, const char *name, asn_err *e)
{
    static const char *names[] = {"input", "response_a", "response_b"};
    asn_judge_tmpl *t = asn_xcalloc(1, sizeof *t);
    int seen[3] = {0, 0, 0}, line = 1;
    const char *s = text;
    while (*s) {
        if ((s[0] == '{' && s[1] == '{') || (s[0] == '}' && s[1] == '}')) {
            add_text(t, s, 1);
            s += 2;
            continue;
        }
        if (*s == '}') {
            asn_err_set(e, "%s:%d: single '}' (write \"}}\" for a literal brace)", name, line);
            goto fail;
        }
        if (*s != '{') {
            line += *s == '\n';
            add_text(t, s++, 1);
            continue;
        }
        const char *end = strchr(s, '}');
        int k = -1;
        for (int i = 0; end && i < 3; i++)
            if ((size_t)(end - s - 1) == strlen(names[i]) && !memcmp(s + 1, names[i], strlen(names[i])))
                k = i;
        if (k < 0) {
            asn_err_set(e, "%s:%d: unknown placeholder \"%.*s\" (the placeholders are {input}, "
                           "{response_a}, {response_b}; write \"{{\" for a literal brace)",
                        name, line, end && end - s < 40 ? (int)(end - s + 1) : 12, s);
            goto fail;
        }
        if (seen[k]++) {
            asn_err_set(e, "%s:%d: {%s} appears twice", name, line, names[k]);
            goto fail;
        }
        if (k == 1 && seen[2]) {
            asn_err_set(e, "%s:%d: {response_a} must come before {response_b}", name, line);
            goto fail;
        }
        t->parts = asn_xrealloc(t->parts, (size_t)(t->n + 1) * sizeof *t->parts);
        t->parts[t->n++] = (part){PART_INPUT + k, NULL, 0};
        s = end + 1;
    }
    for (int i = 0; i < 3; i++)
        if (!seen[i]) {
            asn_err_set(e, "%s: the template has no {%s}", name, names[i]);
            goto fail;
        }
    return t;
fail:
    asn_judge_tmpl_free(t);
    return NULL;
}

asn_judge_tmpl *asn_judge_tmpl_load(const char *path, asn_err *e)
{
    char *text;
    size_t n;
    if (asn_read_file(path, &text, &n, e))
        return NULL;
    asn_judge_tmpl *t = NULL;
    if (strlen(text) != n)
        asn_err_set(e, "%s: the template holds a NUL byte", path);
    else
        t = asn_judge_tmpl_parse(text, path, e);
    free(text);
    return t;
}

void asn_judge_tmpl_free(asn_judge_tmpl *t)
{
    if (!t)
        return;
    for (int i = 0; i < t->n; i++)
        free(t->parts[i].text);
    free(t->parts);
    free(t);
}

char *asn_judge_tmpl_format(const asn_judge_tmpl *t, const char *input, const char *a, const char *b)
{
    size_t n = 0;
    const char *val[4];
    size_t len[4];
    val[PART_INPUT] = input, val[PART_A] = a, val[PART_B] = b;
    for (int k = PART_INPUT; k <= PART_B; k++)
        len[k] = strlen(val[k]);
    for (int i = 0; i < t->n; i++)
        n += t->parts[i].kind == PART_TEXT ? t->parts[i].len : len[t->parts[i].kind];
    char *out = asn_xmalloc(n + 1), *o = out;
    for (int i = 0; i < t->n; i++) {
        const part *p = &t->parts[i];
        const char *src = p->kind == PART_TEXT ? p->text : val[p->kind];
        size_t l = p->kind == PART_TEXT ? p->len : len[p->kind];
        memcpy(o, src, l);
        o += l;
    }
    *o = 0;
    return out;
}

/* ----------------------------------------------------- batched decoding */

/* Called for each logits row a decode produces: row predicts the token
 * after tokens[pos] of sequence k. */
typedef void (*row_fn)(void *ctx, int k, int pos, const float *row);

/* Appends tok[k][0..n[k]) to sequence seq[k] for the ns sequences (every
 * n[k] >= 1), PASS_TOKENS positions per forward pass, and hands every row
 * of logits (all = 1) or only each sequence's last row (all = 0) to fn. */
static int decode_rows(asn_engine *en, int V, const int *seq, const int32_t *const *tok, const int *n, int ns,
                       int all, float **buf, size_t *cap, row_fn fn, void *ctx, asn_err *e)
{
    int *done = asn_xcalloc((size_t)ns, sizeof *done), rc = 0;
    asn_batch_item *items = asn_xmalloc((size_t)ns * sizeof *items);
    int *idx = asn_xmalloc((size_t)ns * sizeof *idx);
    for (;;) {
        int active = 0;
        for (int k = 0; k < ns; k++)
            active += done[k] < n[k];
        if (!active)
            break;
        int chunk = PASS_TOKENS / active;
        if (all && (size_t)chunk * (size_t)active * (size_t)V > PASS_LOGIT_FLOATS)
            chunk = (int)(PASS_LOGIT_FLOATS / ((size_t)active * (size_t)V));
        chunk = chunk < 1 ? 1 : chunk;
        size_t rows = 0;
        int ni = 0;
        for (int k = 0; k < ns; k++) {
            if (done[k] >= n[k])
                continue;
            int m = n[k] - done[k] < chunk ? n[k] - done[k] : chunk;
            int want = all ? m : done[k] + m == n[k];
            items[ni] = (asn_batch_item){seq[k], tok[k] + done[k], m, NULL, all, NULL, NULL};
            rows += (size_t)want;
            idx[ni++] = k;
        }
        if (rows * (size_t)V > *cap) {
            *cap = rows * (size_t)V;
            *buf = asn_xrealloc(*buf, *cap * sizeof **buf);
        }
        size_t off = 0;
        for (int i = 0; i < ni; i++) {
            int k = idx[i], m = items[i].n, want = all ? m : done[k] + m == n[k];
            if (want) {
                items[i].logits = *buf + off * (size_t)V;
                off += (size_t)want;
            }
        }
        if ((rc = asn_engine_decode(en, items, ni, e)))
            break;
        for (int i = 0; i < ni; i++) {
            int k = idx[i], m = items[i].n;
            if (items[i].logits)
                for (int r = all ? 0 : m - 1, row = 0; r < m; r++, row++)
                    fn(ctx, k, done[k] + r, items[i].logits + (size_t)row * (size_t)V);
            done[k] += m;
        }
    }
    free(done);
    free(items);
    free(idx);
    return rc;
}

/* Log-softmax of a row at the given ids: expf(x - max) (the sampling
 * library's vectorized exp, within 2 ulp of expf) summed in double, as the
 * sampling library computes a softmax; it agrees with a double-precision
 * log-softmax (perplexity's) to about 1e-7. A row with a NaN, or without
 * a finite maximum, gives NaN. scratch holds V floats. */
static void row_logprobs(const float *row, int V, float *scratch, const int32_t *ids, int nids, double *out)
{
    float mx = -INFINITY;
    for (int k = 0; k < V; k++) /* a NaN is skipped here, and makes the sum NaN */
        mx = row[k] > mx ? row[k] : mx;
    if (!isfinite(mx)) {
        for (int i = 0; i < nids; i++)
            out[i] = NAN;
        return;
    }
    asn_exp_shifted(row, mx, scratch, V);
    double acc[8] = {0};
    int k = 0;
    for (; k + 8 <= V; k += 8)
        for (int j = 0; j < 8; j++)
            acc[j] += (double)scratch[k + j];
    for (int j = 0; k < V; k++, j++)
        acc[j] += (double)scratch[k];
    double lz = log(((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7])));
    for (int i = 0; i < nids; i++)
        out[i] = (double)row[ids[i]] - (double)mx - lz;
}

/* The longest prefix shared by every sequence, leaving each at least one
 * token of its own (so that each gets its logits). */
static int common_prefix(const int32_t *const *tok, const int *n, int ns)
{
    if (ns <= 0)
        return 0;
    int L = n[0] - 1;
    for (int k = 1; k < ns; k++) {
        int lim = L < n[k] - 1 ? L : n[k] - 1, i = 0;
        while (i < lim && tok[k][i] == tok[0][i])
            i++;
        L = i;
    }
    return L > 0 ? L : 0;
}

/* ------------------------------------------------------- pairwise judge */

struct asn_pairwise {
    asn_model *m;
    const asn_vocab *v;
    const asn_judge_tmpl *t;
    int chat, batch, V;
    int32_t ids[2]; /* "A", "B" */
    asn_engine *en;
    float *buf, *scratch;
    size_t cap;
};

asn_pairwise *asn_pairwise_new(asn_model *m, int chat, const asn_judge_tmpl *t, int batch, int n_ctx, asn_pool *pool,
                               asn_err *e)
{
    const asn_vocab *v = asn_model_vocab(m, e);
    if (!v)
        return NULL;
    int32_t ids[2];
    for (int i = 0; i < 2; i++) {
        const char *s = i ? "B" : "A";
        if ((ids[i] = asn_vocab_find(v, s, 1)) < 0) {
            asn_err_set(e, "%s: the vocabulary has no single token \"%s\" (a pairwise judge answers with "
                           "the tokens \"A\" and \"B\")",
                        asn_model_path(m), s);
            return NULL;
        }
    }
    if (asn_chat_name(chat) == NULL) {
        asn_err_set(e, "pairwise judge: chat template id %d is not a family", chat);
        return NULL;
    }
    asn_engine *en = asn_engine_new(m, n_ctx, pool, e);
    if (!en)
        return NULL;
    asn_pairwise *j = asn_xcalloc(1, sizeof *j);
    int V = asn_model_cfg(m)->n_vocab;
    *j = (asn_pairwise){m, v, t, chat, batch > 0 ? batch : 1, V, {ids[0], ids[1]},
                        en, NULL, asn_xmalloc((size_t)V * sizeof(float)), 0};
    return j;
}

void asn_pairwise_free(asn_pairwise *j)
{
    if (!j)
        return;
    asn_engine_free(j->en);
    free(j->buf);
    free(j->scratch);
    free(j);
}

typedef struct pw_ctx {
    asn_pairwise *j;
    double *pa; /* per sequence of the batch: P("A") renormalized over A, B */
} pw_ctx;

double asn_pairwise_p_a(double lp_a, double lp_b)
{
    double mass = exp(lp_a) + exp(lp_b);
    if (!isfinite(lp_a) || !isfinite(lp_b) || isnan(mass))
        return NAN;
    if (mass <= ASN_JUDGE_MIN_MASS)
        return 0.5;
    return 1.0 / (1.0 + exp(lp_b - lp_a));
}

double asn_pairwise_combine(double pa_xy, double pa_yx)
{
    double a1 = pa_xy, a2 = 1.0 - pa_yx, b1 = 1.0 - pa_xy, b2 = pa_yx;
    double avg_a = (a1 + a2) / 2, avg_b = (b1 + b2) / 2;
    double den = avg_a + avg_b > ASN_JUDGE_MIN_MASS ? avg_a + avg_b : ASN_JUDGE_MIN_MASS;
    return avg_a / den;
}

static void pw_row(void *ctx, int k, int pos, const float *row)
{
    pw_ctx *c = ctx;
    double lp[2];
    row_logprobs(row, c->j->V, c->j->scratch, c->j->ids, 2, lp);
    c->pa[k] = asn_pairwise_p_a(lp[0], lp[1]);
    (void)pos;
}

int asn_pairwise_answer_ids(const asn_vocab *v, int32_t ids[2], asn_err *e)
{
    for (int i = 0; i < 2; i++) {
        const char *s = i ? "B" : "A";
        if ((ids[i] = asn_vocab_find(v, s, 1)) < 0)
            return asn_err_set(e, "the vocabulary has no single token \"%s\" (a pairwise judge answers with "
                                  "the tokens \"A\" and \"B\")", s);
    }
    return 0;
}

int asn_pairwise_question(const asn_vocab *v, int chat, const asn_judge_tmpl *t, const char *input, const char *a,
                          const char *b, int32_t **ids, int *n, asn_err *e)
{
    char *q = asn_judge_tmpl_format(t, input, a, b);
    asn_chat_msg msg = {"user", q};
    char *text = asn_chat_format(chat, &msg, 1, 1, e);
    free(q);
    if (!text)
        return -1;
    size_t nn;
    int rc = asn_tokenize(v, text, strlen(text), 1, 1, ids, &nn, e);
    free(text);
    if (rc)
        return -1;
    if (nn == 0 || nn > (size_t)1 << 30) {
        free(*ids);
        return asn_err_set(e, "the judge's question has no tokens");
    }
    *n = (int)nn;
    return 0;
}

int asn_pairwise_score(asn_pairwise *j, const asn_pair_req *req, int n, double *p, asn_err *e)
{
    if (n <= 0)
        return 0;
    int nt = 2 * n, rc = 0;
    int32_t **tok = asn_xcalloc((size_t)nt, sizeof *tok);
    int *len = asn_xcalloc((size_t)nt, sizeof *len);
    double *pa = asn_xmalloc((size_t)nt * sizeof *pa);
    for (int k = 0; k < n && !rc; k++)
        rc = asn_pairwise_question(j->v, j->chat, j->t, req[k].input, req[k].a, req[k].b, &tok[2 * k], &len[2 * k], e) ||
             asn_pairwise_question(j->v, j->chat, j->t, req[k].input, req[k].b, req[k].a, &tok[2 * k + 1],
                                   &len[2 * k + 1], e);
    int L = rc ? 0 : common_prefix((const int32_t *const *)tok, len, nt), prefix = -1;
    if (!rc && L > 0) {
        prefix = asn_seq_new(j->en);
        asn_batch_item it = {prefix, tok[0], L, NULL, 0, NULL, NULL};
        rc = asn_engine_decode(j->en, &it, 1, e);
    }
    int *seq = asn_xmalloc((size_t)j->batch * sizeof *seq), *rest = asn_xmalloc((size_t)j->batch * sizeof *rest);
    const int32_t **from = asn_xmalloc((size_t)j->batch * sizeof *from);
    for (int b0 = 0; b0 < nt && !rc; b0 += j->batch) {
        int nb = nt - b0 < j->batch ? nt - b0 : j->batch;
        for (int k = 0; k < nb; k++) {
            seq[k] = prefix >= 0 ? asn_seq_fork(j->en, prefix) : asn_seq_new(j->en);
            from[k] = tok[b0 + k] + L;
            rest[k] = len[b0 + k] - L;
        }
        pw_ctx c = {j, pa + b0};
        rc = decode_rows(j->en, j->V, seq, from, rest, nb, 0, &j->buf, &j->cap, pw_row, &c, e);
        for (int k = 0; k < nb; k++)
            asn_seq_free(j->en, seq[k]);
    }
    if (prefix >= 0)
        asn_seq_free(j->en, prefix);
    /* both orders, combined as the reference does: P(a better) averaged
     * over the orders, normalized with P(b better) */
    for (int k = 0; k < n && !rc; k++)
        p[k] = asn_pairwise_combine(pa[2 * k], pa[2 * k + 1]);
    for (int k = 0; k < nt; k++)
        free(tok[k]);
    free(tok), free(len), free(pa), free(seq), free(rest), free(from);
    return rc;
}

/* ------------------------------------------------ reference likelihood */

struct asn_llscorer {
    asn_model *m;
    int batch, V;
    asn_engine *en;
    float *buf, *scratch;
    size_t cap;
};

asn_llscorer *asn_llscorer_new(asn_model *m, int batch, int n_ctx, asn_pool *pool, asn_err *e)
{
    asn_engine *en = asn_engine_new(m, n_ctx, pool, e);
    if (!en)
        return NULL;
    asn_llscorer *s = asn_xcalloc(1, sizeof *s);
    int V = asn_model_cfg(m)->n_vocab;
    *s = (asn_llscorer){m, batch > 0 ? batch : 1, V, en, NULL, asn_xmalloc((size_t)V * sizeof(float)), 0};
    return s;
}

void asn_llscorer_free(asn_llscorer *s)
{
    if (!s)
        return;
    asn_engine_free(s->en);
    free(s->buf);
    free(s->scratch);
    free(s);
}

typedef struct ll_ctx {
    int V;
    float *scratch;
    const int32_t **tok; /* per decoded sequence: the answer's tokens */
    const int *req;      /* per decoded sequence: its request in the batch */
    double *sum;         /* per request of the batch */
} ll_ctx;

static void ll_row(void *ctx, int q, int pos, const float *row)
{
    ll_ctx *c = ctx;
    double lp;
    row_logprobs(row, c->V, c->scratch, &c->tok[q][pos + 1], 1, &lp);
    c->sum[c->req[q]] += lp;
}

static int same_prompt(const asn_ll_req *a, const asn_ll_req *b)
{
    return a->n_prompt == b->n_prompt && !memcmp(a->prompt, b->prompt, (size_t)a->n_prompt * sizeof *a->prompt);
}

int asn_llscorer_score(asn_llscorer *s, const asn_ll_req *req, int n, double *mean, asn_err *e)
{
    int rc = 0, V = s->V, B = s->batch;
    double *sum = asn_xmalloc((size_t)B * sizeof *sum);
    int *seq = asn_xmalloc((size_t)B * sizeof *seq), *rest = asn_xmalloc((size_t)B * sizeof *rest);
    int *map = asn_xmalloc((size_t)B * sizeof *map);
    const int32_t **from = asn_xmalloc((size_t)B * sizeof *from);
    float *row0 = asn_xmalloc((size_t)V * sizeof *row0);
    for (int k0 = 0; k0 < n && !rc;) {
        /* a run of requests with the same prompt shares its cache */
        int k1 = k0 + 1;
        while (k1 < n && same_prompt(&req[k0], &req[k1]))
            k1++;
        if (req[k0].n_prompt < 1) {
            rc = asn_err_set(e, "the prompt has no tokens");
            break;
        }
        for (int k = k0; k < k1 && !rc; k++)
            for (int i = 0; i < req[k].n; i++)
                if (req[k].tokens[i] < 0 || req[k].tokens[i] >= V) {
                    rc = asn_err_set(e, "token id %d is outside the reference model's vocabulary of %d",
                                     req[k].tokens[i], V);
                    break;
                }
        if (rc)
            break;
        /* the prompt, once: its last row gives each answer's first token */
        int prefix = asn_seq_new(s->en);
        asn_batch_item it = {prefix, req[k0].prompt, req[k0].n_prompt, row0, 0, NULL, NULL};
        rc = asn_engine_decode(s->en, &it, 1, e);
        for (int b0 = k0; b0 < k1 && !rc; b0 += B) {
            int nb = k1 - b0 < B ? k1 - b0 : B, ns = 0;
            for (int k = 0; k < nb; k++) {
                const asn_ll_req *r = &req[b0 + k];
                sum[k] = 0;
                if (r->n >= 1)
                    row_logprobs(row0, V, s->scratch, r->tokens, 1, &sum[k]);
                if (r->n >= 2) { /* the last token needs no decoding */
                    seq[ns] = asn_seq_fork(s->en, prefix);
                    from[ns] = r->tokens;
                    rest[ns] = r->n - 1;
                    map[ns++] = k;
                }
            }
            ll_ctx c = {V, s->scratch, from, map, sum};
            if (ns)
                rc = decode_rows(s->en, V, seq, from, rest, ns, 1, &s->buf, &s->cap, ll_row, &c, e);
            for (int q = 0; q < ns; q++)
                asn_seq_free(s->en, seq[q]);
            for (int k = 0; k < nb; k++)
                mean[b0 + k] = req[b0 + k].n ? sum[k] / req[b0 + k].n : NAN;
        }
        asn_seq_free(s->en, prefix);
        k0 = k1;
    }
    free(sum), free(seq), free(rest), free(map), free(from), free(row0);
    return rc;
}

typedef struct tok_ctx {
    int V, top;
    float *scratch;
    const int32_t *tok;
    double *lp;
    int32_t *top_ids;
    double *top_lps;
} tok_ctx;

/* The top most likely ids of a row (ties: the lower id first). */
static void row_top(const float *row, int V, int top, int32_t *ids)
{
    int n = 0;
    for (int k = 0; k < V; k++) {
        if (n == top && !(row[k] > row[ids[n - 1]]))
            continue;
        int at = n < top ? n++ : n - 1;
        while (at > 0 && row[k] > row[ids[at - 1]]) {
            ids[at] = ids[at - 1];
            at--;
        }
        ids[at] = k;
    }
    for (int i = n; i < top; i++)
        ids[i] = -1;
}

static void tok_row(void *ctx, int q, int pos, const float *row)
{
    tok_ctx *c = ctx;
    row_logprobs(row, c->V, c->scratch, &c->tok[pos + 1], 1, &c->lp[pos + 1]);
    if (c->top > 0) {
        int32_t *ids = c->top_ids + (size_t)(pos + 1) * (size_t)c->top;
        double *lps = c->top_lps + (size_t)(pos + 1) * (size_t)c->top;
        row_top(row, c->V, c->top, ids);
        int m = 0;
        while (m < c->top && ids[m] >= 0)
            m++;
        for (int i = m; i < c->top; i++)
            lps[i] = NAN;
        row_logprobs(row, c->V, c->scratch, ids, m, lps);
    }
    (void)q;
}

int asn_llscorer_tokens(asn_llscorer *s, const int32_t *tokens, int n, double *lp, int top, int32_t *top_ids,
                        double *top_lps, asn_err *e)
{
    if (n < 1)
        return asn_err_set(e, "no tokens to score");
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= s->V)
            return asn_err_set(e, "token id %d is outside the model's vocabulary of %d", tokens[i], s->V);
    lp[0] = NAN;
    if (top > 0)
        for (int i = 0; i < top; i++)
            top_ids[i] = -1, top_lps[i] = NAN;
    if (n == 1)
        return 0;
    int seq = asn_seq_new(s->en), rest = n - 1;
    const int32_t *from = tokens;
    tok_ctx c = {s->V, top, s->scratch, tokens, lp, top_ids, top_lps};
    int rc = decode_rows(s->en, s->V, &seq, &from, &rest, 1, 1, &s->buf, &s->cap, tok_row, &c, e);
    asn_seq_free(s->en, seq);
    return rc;
}

double asn_ll_pair_score(double sa, double sb, double tau)
{
    if (isnan(sa) || isnan(sb))
        return isnan(sa) && isnan(sb) ? 0.5 : isnan(sa) ? 0.0 : 1.0;
    double x = (sa - sb) / tau;
    return x >= 0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x));
}
