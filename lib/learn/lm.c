/* lm.c — the trainable Llama of asn/lm.h: parameter layout, the model's
 * forward and backward passes, evaluation and the AdamW step.
 *
 *   x = embed(tokens)
 *   per layer:  h = rmsnorm(x) * w_attn_norm
 *               q, k, v = h Wq^T, h Wk^T, h Wv^T;  rope(q), rope(k)
 *               x = x + attention(q, k, v) Wo^T          (causal, GQA)
 *               h = rmsnorm(x) * w_ffn_norm
 *               x = x + (silu(h Wgate^T) * h Wup^T) Wdown^T
 *   logits = (rmsnorm(x) * w_out_norm) Wembd^T            (tied output)
 *   loss = mean cross-entropy(logits, targets)
 *
 * The same math as lib/model/forward.c, in the same f32 arithmetic where
 * it is cheap to (RMSNorm, rope tables), so the exported model's logits
 * match this forward pass (within 1e-4, tests/unit/test_lm.c). The layers
 * are lm_layers.c's, the files lm_file.c's. */
#include "asn/lm.h"
#include "learn/lm_internal.h"

#include <cblas.h> /* openblas_set_num_threads */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Standard deviation of the initial weights (GPT-2, Llama reference code). */
#define INIT_STD 0.02

/* ============================================================ model */

typedef struct layer_p {
    float *attn_norm, *wq, *wk, *wv, *wo, *ffn_norm, *gate, *up, *down;
} layer_p;

/* Per-layer activations kept from forward for backward. */
typedef struct layer_a {
    float *res_in;  /* N x d: the layer's input (the residual stream) */
    float *ln1, *rstd1, *q, *k, *v, *att, *atty;
    float *res_mid; /* N x d: after attention */
    float *ln2, *rstd2, *g, *u, *sw;
} layer_a;

struct asn_lm {
    asn_lm_config cfg;
    asn_pool *pool;
    int qd, kvd, hd;
    size_t n_params;
    float *params, *grads;
    asn_lm_tensor *tensors;
    size_t n_tensors;
    float *rope_cos, *rope_sin; /* ctx x hd/2 */

    /* activations, sized for cap_N rows and cap_att attention floats */
    size_t cap_N, cap_att;
    int B, T, have_targets, have_logits;
    int32_t *tokens, *targets;
    float *acts; /* one block; the pointers below point into it */
    layer_a *la;
    float *res_out, *lnf, *rstdf, *logits, *losses, *proj;
    /* backward scratch (one layer's worth, reused) */
    float *d_res, *d_res2, *d_proj, *d_ln, *d_q, *d_k, *d_v, *d_atty, *d_g, *d_u, *d_sw;
    float *grads_buf; /* the backward scratch block */
    int n_valid;
};

static void layer_views(const asn_lm *lm, float *base, layer_p *L, int l, float **tok_embd, float **out_norm)
{
    /* layout = the tensor table's order */
    const asn_lm_tensor *t = lm->tensors;
    *tok_embd = base + t[0].offset;
    *out_norm = base + t[lm->n_tensors - 1].offset;
    if (!L)
        return;
    const asn_lm_tensor *lt = t + 1 + (size_t)l * 9;
    L->attn_norm = base + lt[0].offset;
    L->wq = base + lt[1].offset;
    L->wk = base + lt[2].offset;
    L->wv = base + lt[3].offset;
    L->wo = base + lt[4].offset;
    L->ffn_norm = base + lt[5].offset;
    L->gate = base + lt[6].offset;
    L->up = base + lt[7].offset;
    L->down = base + lt[8].offset;
}

int asn_lm_config_check(asn_lm_config *c, asn_err *e)
{
    if (c->n_head_kv == 0)
        c->n_head_kv = c->n_head;
    if (c->rope_base == 0)
        c->rope_base = ASN_LM_ROPE_BASE;
    if (c->rms_eps == 0)
        c->rms_eps = ASN_LM_RMS_EPS;
    if (c->n_vocab <= 0 || c->dim <= 0 || c->n_layer <= 0 || c->n_head <= 0 || c->n_head_kv <= 0 || c->ffn <= 0 ||
        c->ctx <= 0)
        return asn_err_set(e, "model sizes must be positive (vocab %d, dim %d, layers %d, heads %d, kv heads %d, "
                              "ffn %d, ctx %d)", c->n_vocab, c->dim, c->n_layer, c->n_head, c->n_head_kv, c->ffn,
                           c->ctx);
    if (c->dim % c->n_head || (c->dim / c->n_head) % 2)
        return asn_err_set(e, "dim (%d) must be a multiple of heads (%d) with an even head size", c->dim, c->n_head);
    if (c->n_head % c->n_head_kv)
        return asn_err_set(e, "heads (%d) must be a multiple of kv heads (%d)", c->n_head, c->n_head_kv);
    if (!(c->rope_base > 0) || !(c->rms_eps > 0))
        return asn_err_set(e, "rope base and rms epsilon must be positive");
    if ((double)c->n_vocab * c->dim > 1e9 || (double)c->ffn * c->dim > 1e9 || c->ctx > (1 << 20))
        return asn_err_set(e, "model too large for this trainer");
    return 0;
}

static void add_tensor(asn_lm *lm, size_t *off, const char *name, int n_dims, int64_t ne0, int64_t ne1)
{
    asn_lm_tensor *t = &lm->tensors[lm->n_tensors++];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->offset = *off;
    t->n_dims = n_dims;
    t->ne[0] = ne0;
    t->ne[1] = n_dims > 1 ? ne1 : 1;
    t->size = (size_t)t->ne[0] * (size_t)t->ne[1];
    t->decay = n_dims > 1;
    /* keep every tensor 16-float aligned */
    *off += (t->size + 15) & ~(size_t)15;
}

asn_lm *asn_lm_new(const asn_lm_config *cfg, asn_pool *pool, asn_err *e)
{
    asn_lm_config c = *cfg;
    if (asn_lm_config_check(&c, e))
        return NULL;
    asn_lm *lm = asn_xcalloc(1, sizeof *lm);
    lm->cfg = c;
    lm->pool = pool;
    lm->hd = c.dim / c.n_head;
    lm->qd = c.n_head * lm->hd;
    lm->kvd = c.n_head_kv * lm->hd;
    lm->tensors = asn_xcalloc(2 + (size_t)c.n_layer * 9, sizeof *lm->tensors);
    size_t off = 0;
    int d = c.dim;
    add_tensor(lm, &off, "token_embd.weight", 2, d, c.n_vocab);
    for (int l = 0; l < c.n_layer; l++) {
        char n[48];
#define T2(s, a, b) (snprintf(n, sizeof n, "blk.%d.%s", l, s), add_tensor(lm, &off, n, 2, a, b))
#define T1(s, a) (snprintf(n, sizeof n, "blk.%d.%s", l, s), add_tensor(lm, &off, n, 1, a, 1))
        T1("attn_norm.weight", d);
        T2("attn_q.weight", d, lm->qd);
        T2("attn_k.weight", d, lm->kvd);
        T2("attn_v.weight", d, lm->kvd);
        T2("attn_output.weight", lm->qd, d);
        T1("ffn_norm.weight", d);
        T2("ffn_gate.weight", d, c.ffn);
        T2("ffn_up.weight", d, c.ffn);
        T2("ffn_down.weight", c.ffn, d);
#undef T1
#undef T2
    }
    add_tensor(lm, &off, "output_norm.weight", 1, d, 1);
    lm->n_params = off;
    lm->params = asn_xcalloc(off, sizeof(float));
    lm->grads = asn_xcalloc(off, sizeof(float));
    lm->rope_cos = asn_xmalloc((size_t)c.ctx * (lm->hd / 2) * sizeof(float));
    lm->rope_sin = asn_xmalloc((size_t)c.ctx * (lm->hd / 2) * sizeof(float));
    asn_lm_rope_table(lm->rope_cos, lm->rope_sin, c.ctx, lm->hd, c.rope_base);
    lm->la = asn_xcalloc((size_t)c.n_layer, sizeof *lm->la);
    /* all parallelism comes from the pool (see asn/lm.h) */
    openblas_set_num_threads(1);
    return lm;
}

void asn_lm_free(asn_lm *lm)
{
    if (!lm)
        return;
    free(lm->params);
    free(lm->grads);
    free(lm->tensors);
    free(lm->rope_cos);
    free(lm->rope_sin);
    free(lm->acts);
    free(lm->grads_buf);
    free(lm->la);
    free(lm->tokens);
    free(lm->targets);
    free(lm);
}

const asn_lm_config *asn_lm_cfg(const asn_lm *lm) { return &lm->cfg; }
size_t asn_lm_n_params(const asn_lm *lm) { return lm->n_params; }
float *asn_lm_params(asn_lm *lm) { return lm->params; }
const float *asn_lm_params_const(const asn_lm *lm) { return lm->params; }
float *asn_lm_grads(asn_lm *lm) { return lm->grads; }
size_t asn_lm_n_tensors(const asn_lm *lm) { return lm->n_tensors; }
const asn_lm_tensor *asn_lm_tensor_at(const asn_lm *lm, size_t i) { return i < lm->n_tensors ? &lm->tensors[i] : NULL; }

const asn_lm_tensor *asn_lm_find_tensor(const asn_lm *lm, const char *name)
{
    for (size_t i = 0; i < lm->n_tensors; i++)
        if (!strcmp(lm->tensors[i].name, name))
            return &lm->tensors[i];
    return NULL;
}

/* N(0, 1) from one Philox block: Box-Muller on two 53-bit uniforms. */
static double gauss(const asn_rng_key *key, uint64_t i)
{
    uint64_t ctr[4] = {i, 0x6c6d696e6974ULL /* "lminit" */, 0, 0}, out[4];
    asn_philox4x64(ctr, key->k, out);
    double u1 = (double)(out[0] >> 11) * 0x1.0p-53, u2 = (double)(out[1] >> 11) * 0x1.0p-53;
    return sqrt(-2.0 * log(1.0 - u1)) * cos(2.0 * M_PI * u2);
}

void asn_lm_init_weights(asn_lm *lm, uint64_t seed)
{
    asn_rng_key key = asn_rng_key_make(seed, "asn-lm", "init");
    double proj_std = INIT_STD / sqrt(2.0 * lm->cfg.n_layer);
    memset(lm->params, 0, lm->n_params * sizeof(float));
    for (size_t ti = 0; ti < lm->n_tensors; ti++) {
        const asn_lm_tensor *t = &lm->tensors[ti];
        float *p = lm->params + t->offset;
        if (t->n_dims == 1) {
            for (size_t i = 0; i < t->size; i++)
                p[i] = 1.0f;
            continue;
        }
        int proj = strstr(t->name, "attn_output") || strstr(t->name, "ffn_down");
        double sd = proj ? proj_std : INIT_STD;
        for (size_t i = 0; i < t->size; i++)
            p[i] = (float)(sd * gauss(&key, t->offset + i));
    }
}

/* Carves the activation block for N rows (and att floats) out of one
 * allocation; a larger batch reallocates. */
static void grow_acts(asn_lm *lm, size_t N, size_t att)
{
    if (N <= lm->cap_N && att <= lm->cap_att)
        return;
    N = N > lm->cap_N ? N : lm->cap_N;
    att = att > lm->cap_att ? att : lm->cap_att;
    const asn_lm_config *c = &lm->cfg;
    size_t d = (size_t)c->dim, qd = (size_t)lm->qd, kvd = (size_t)lm->kvd, F = (size_t)c->ffn,
           V = (size_t)c->n_vocab;
    size_t per_layer = N * (d + d + 1 + qd + kvd + kvd + qd + d + d + 1 + F + F + F) + att;
    size_t total = per_layer * (size_t)c->n_layer + N * (d + d + 1 + V + 1 + d);
    free(lm->acts);
    float *p = lm->acts = asn_xmalloc(total * sizeof(float));
#define TAKE(n) (p += (n), p - (n))
    for (int l = 0; l < c->n_layer; l++) {
        layer_a *A = &lm->la[l];
        A->res_in = TAKE(N * d);
        A->ln1 = TAKE(N * d);
        A->rstd1 = TAKE(N);
        A->q = TAKE(N * qd);
        A->k = TAKE(N * kvd);
        A->v = TAKE(N * kvd);
        A->att = TAKE(att);
        A->atty = TAKE(N * qd);
        A->res_mid = TAKE(N * d);
        A->ln2 = TAKE(N * d);
        A->rstd2 = TAKE(N);
        A->g = TAKE(N * F);
        A->u = TAKE(N * F);
        A->sw = TAKE(N * F);
    }
    lm->res_out = TAKE(N * d);
    lm->lnf = TAKE(N * d);
    lm->rstdf = TAKE(N);
    lm->logits = TAKE(N * V);
    lm->losses = TAKE(N);
    lm->proj = TAKE(N * d);
    /* backward scratch */
    size_t gtotal = N * (d + d + d + d + qd + kvd + kvd + qd + F + F + F);
    free(lm->grads_buf);
    p = lm->grads_buf = asn_xmalloc(gtotal * sizeof(float));
    lm->d_res = TAKE(N * d);
    lm->d_res2 = TAKE(N * d);
    lm->d_proj = TAKE(N * d);
    lm->d_ln = TAKE(N * d);
    lm->d_q = TAKE(N * qd);
    lm->d_k = TAKE(N * kvd);
    lm->d_v = TAKE(N * kvd);
    lm->d_atty = TAKE(N * qd);
    lm->d_g = TAKE(N * F);
    lm->d_u = TAKE(N * F);
    lm->d_sw = TAKE(N * F);
#undef TAKE
    lm->tokens = asn_xrealloc(lm->tokens, N * sizeof(int32_t));
    lm->targets = asn_xrealloc(lm->targets, N * sizeof(int32_t));
    lm->cap_N = N;
    lm->cap_att = att;
}

int asn_lm_forward(asn_lm *lm, const int32_t *tokens, const int32_t *targets, int B, int T, double *loss,
                   asn_err *e)
{
    const asn_lm_config *c = &lm->cfg;
    if (B <= 0 || T <= 0)
        return asn_err_set(e, "empty batch (%d x %d)", B, T);
    if (T > c->ctx)
        return asn_err_set(e, "sequence length %d exceeds the context of %d", T, c->ctx);
    int N = B * T;
    for (int i = 0; i < N; i++) {
        if (tokens[i] < 0 || tokens[i] >= c->n_vocab)
            return asn_err_set(e, "token id %d out of range [0, %d)", tokens[i], c->n_vocab);
        if (targets && (targets[i] < -1 || targets[i] >= c->n_vocab))
            return asn_err_set(e, "target id %d out of range [-1, %d)", targets[i], c->n_vocab);
    }
    grow_acts(lm, (size_t)N, (size_t)B * c->n_head * T * T);
    lm->B = B;
    lm->T = T;
    memcpy(lm->tokens, tokens, (size_t)N * sizeof *tokens);
    asn_pool *pool = lm->pool;
    int d = c->dim, qd = lm->qd, kvd = lm->kvd, hd = lm->hd, F = c->ffn, V = c->n_vocab;
    float *tok_embd, *out_norm;
    layer_views(lm, lm->params, NULL, 0, &tok_embd, &out_norm);

    asn_lm_embedding_forward(pool, lm->la[0].res_in, tokens, tok_embd, N, d);
    for (int l = 0; l < c->n_layer; l++) {
        layer_p L;
        layer_views(lm, lm->params, &L, l, &tok_embd, &out_norm);
        layer_a *A = &lm->la[l];
        float *res_next = l + 1 < c->n_layer ? lm->la[l + 1].res_in : lm->res_out;
        asn_lm_rmsnorm_forward(pool, A->ln1, A->rstd1, A->res_in, L.attn_norm, N, d, c->rms_eps);
        asn_lm_matmul_forward(pool, A->q, A->ln1, L.wq, N, d, qd);
        asn_lm_matmul_forward(pool, A->k, A->ln1, L.wk, N, d, kvd);
        asn_lm_matmul_forward(pool, A->v, A->ln1, L.wv, N, d, kvd);
        asn_lm_rope_forward(pool, A->q, lm->rope_cos, lm->rope_sin, N, T, c->n_head, hd);
        asn_lm_rope_forward(pool, A->k, lm->rope_cos, lm->rope_sin, N, T, c->n_head_kv, hd);
        asn_lm_attention_forward(pool, A->atty, A->att, A->q, A->k, A->v, B, T, c->n_head, c->n_head_kv, hd);
        asn_lm_matmul_forward(pool, lm->proj, A->atty, L.wo, N, qd, d);
        asn_lm_residual_forward(pool, A->res_mid, A->res_in, lm->proj, (size_t)N * d);
        asn_lm_rmsnorm_forward(pool, A->ln2, A->rstd2, A->res_mid, L.ffn_norm, N, d, c->rms_eps);
        asn_lm_matmul_forward(pool, A->g, A->ln2, L.gate, N, d, F);
        asn_lm_matmul_forward(pool, A->u, A->ln2, L.up, N, d, F);
        asn_lm_swiglu_forward(pool, A->sw, A->g, A->u, (size_t)N * F);
        asn_lm_matmul_forward(pool, lm->proj, A->sw, L.down, N, F, d);
        asn_lm_residual_forward(pool, res_next, A->res_mid, lm->proj, (size_t)N * d);
    }
    asn_lm_rmsnorm_forward(pool, lm->lnf, lm->rstdf, lm->res_out, out_norm, N, d, c->rms_eps);
    asn_lm_matmul_forward(pool, lm->logits, lm->lnf, tok_embd, N, d, V);

    lm->have_targets = targets != NULL;
    lm->have_logits = targets == NULL;
    if (!targets) {
        if (loss)
            *loss = 0;
        return 0;
    }
    memcpy(lm->targets, targets, (size_t)N * sizeof *targets);
    asn_lm_crossentropy_forward(pool, lm->losses, lm->logits, lm->logits, targets, N, V);
    double sum = 0;
    int n = 0;
    for (int i = 0; i < N; i++)
        if (targets[i] >= 0) {
            sum += lm->losses[i];
            n++;
        }
    lm->n_valid = n;
    if (loss)
        *loss = n ? sum / n : 0.0;
    return 0;
}

const float *asn_lm_logits(const asn_lm *lm) { return lm->have_logits ? lm->logits : NULL; }

void asn_lm_zero_grad(asn_lm *lm) { asn__lm_zero(lm->pool, lm->grads, lm->n_params); }

int asn_lm_backward(asn_lm *lm, float scale, asn_err *e)
{
    if (!lm->have_targets)
        return asn_err_set(e, "backward needs a forward pass with targets");
    const asn_lm_config *c = &lm->cfg;
    asn_pool *pool = lm->pool;
    int B = lm->B, T = lm->T, N = B * T;
    int d = c->dim, qd = lm->qd, kvd = lm->kvd, hd = lm->hd, F = c->ffn, V = c->n_vocab;
    size_t Nd = (size_t)N * d;
    float *tok_embd, *out_norm, *g_tok_embd, *g_out_norm;
    layer_views(lm, lm->params, NULL, 0, &tok_embd, &out_norm);
    layer_views(lm, lm->grads, NULL, 0, &g_tok_embd, &g_out_norm);
    lm->have_targets = 0; /* the probabilities are consumed below */
    if (lm->n_valid == 0)
        return 0;

    float *dlogits = lm->logits; /* in place over the probabilities */
    asn_lm_crossentropy_backward(pool, dlogits, scale / (float)lm->n_valid, lm->logits, lm->targets, N, V);
    asn__lm_zero(pool, lm->d_ln, Nd);
    asn_lm_matmul_backward(pool, lm->d_ln, g_tok_embd, dlogits, lm->lnf, tok_embd, N, d, V);
    /* d_res: gradient of the residual stream between layers; d_res2: of
     * the stream between a layer's attention and its feed-forward half */
    float *d_out = lm->d_res, *d_mid = lm->d_res2;
    asn__lm_zero(pool, d_out, Nd);
    asn_lm_rmsnorm_backward(pool, d_out, g_out_norm, lm->d_ln, lm->res_out, out_norm, lm->rstdf, N, d);

    for (int l = c->n_layer - 1; l >= 0; l--) {
        layer_p L, G;
        layer_views(lm, lm->params, &L, l, &tok_embd, &out_norm);
        layer_views(lm, lm->grads, &G, l, &g_tok_embd, &g_out_norm);
        layer_a *A = &lm->la[l];
        /* x_out = x_mid + ffn(x_mid) */
        asn__lm_zero(pool, d_mid, Nd);
        asn__lm_zero(pool, lm->d_proj, Nd);
        asn_lm_residual_backward(pool, d_mid, lm->d_proj, d_out, Nd);
        asn__lm_zero(pool, lm->d_sw, (size_t)N * F);
        asn_lm_matmul_backward(pool, lm->d_sw, G.down, lm->d_proj, A->sw, L.down, N, F, d);
        asn__lm_zero(pool, lm->d_g, (size_t)N * F);
        asn__lm_zero(pool, lm->d_u, (size_t)N * F);
        asn_lm_swiglu_backward(pool, lm->d_g, lm->d_u, lm->d_sw, A->g, A->u, (size_t)N * F);
        asn__lm_zero(pool, lm->d_ln, Nd);
        asn_lm_matmul_backward(pool, lm->d_ln, G.gate, lm->d_g, A->ln2, L.gate, N, d, F);
        asn_lm_matmul_backward(pool, lm->d_ln, G.up, lm->d_u, A->ln2, L.up, N, d, F);
        asn_lm_rmsnorm_backward(pool, d_mid, G.ffn_norm, lm->d_ln, A->res_mid, L.ffn_norm, A->rstd2, N, d);
        /* x_mid = x_in + attention(x_in); d_out's buffer now takes d(x_in) */
        float *d_in = d_out;
        asn__lm_zero(pool, d_in, Nd);
        asn__lm_zero(pool, lm->d_proj, Nd);
        asn_lm_residual_backward(pool, d_in, lm->d_proj, d_mid, Nd);
        asn__lm_zero(pool, lm->d_atty, (size_t)N * qd);
        asn_lm_matmul_backward(pool, lm->d_atty, G.wo, lm->d_proj, A->atty, L.wo, N, qd, d);
        asn__lm_zero(pool, lm->d_q, (size_t)N * qd);
        asn__lm_zero(pool, lm->d_k, (size_t)N * kvd);
        asn__lm_zero(pool, lm->d_v, (size_t)N * kvd);
        asn_lm_attention_backward(pool, lm->d_q, lm->d_k, lm->d_v, lm->d_atty, A->att, A->q, A->k, A->v, B, T,
                                  c->n_head, c->n_head_kv, hd);
        asn_lm_rope_backward(pool, lm->d_q, lm->rope_cos, lm->rope_sin, N, T, c->n_head, hd);
        asn_lm_rope_backward(pool, lm->d_k, lm->rope_cos, lm->rope_sin, N, T, c->n_head_kv, hd);
        asn__lm_zero(pool, lm->d_ln, Nd);
        asn_lm_matmul_backward(pool, lm->d_ln, G.wq, lm->d_q, A->ln1, L.wq, N, d, qd);
        asn_lm_matmul_backward(pool, lm->d_ln, G.wk, lm->d_k, A->ln1, L.wk, N, d, kvd);
        asn_lm_matmul_backward(pool, lm->d_ln, G.wv, lm->d_v, A->ln1, L.wv, N, d, kvd);
        asn_lm_rmsnorm_backward(pool, d_in, G.attn_norm, lm->d_ln, A->res_in, L.attn_norm, A->rstd1, N, d);
    }
    asn_lm_embedding_backward(pool, g_tok_embd, d_out, lm->tokens, N, d);
    return 0;
}

int asn_lm_eval(asn_lm *lm, const int32_t *ids, size_t n, size_t max_preds, int B, int T, double *loss,
                asn_err *e)
{
    size_t preds = n > 0 ? n - 1 : 0;
    if (max_preds && max_preds < preds)
        preds = max_preds;
    if (!preds || B <= 0 || T <= 0)
        return asn_err_set(e, "nothing to evaluate (%zu tokens)", n);
    int32_t *inp = asn_xmalloc((size_t)B * T * sizeof *inp), *tgt = asn_xmalloc((size_t)B * T * sizeof *tgt);
    double sum = 0;
    size_t count = 0, pos = 0;
    int rc = 0;
    while (pos < preds && !rc) {
        /* full windows B at a time; a shorter last one alone */
        int len = preds - pos >= (size_t)T ? T : (int)(preds - pos), b = 0;
        while (b < B && pos + (size_t)len <= preds && (len == T || b == 0)) {
            memcpy(inp + (size_t)b * len, ids + pos, (size_t)len * sizeof *ids);
            memcpy(tgt + (size_t)b * len, ids + pos + 1, (size_t)len * sizeof *ids);
            pos += (size_t)len;
            b++;
            if (len < T)
                break;
        }
        double l;
        rc = asn_lm_forward(lm, inp, tgt, b, len, &l, e);
        sum += l * (double)b * len;
        count += (size_t)b * len;
    }
    free(inp);
    free(tgt);
    if (!rc)
        *loss = sum / (double)count;
    return rc;
}

typedef struct adamw_task {
    asn_lm *lm;
    const asn_adamw *h;
    long t;
    float lr, wd;
    float *m, *v;
} adamw_task;

static void adamw_run(void *arg, int ith, int nth)
{
    adamw_task *u = arg;
    for (size_t i = 0; i < u->lm->n_tensors; i++) {
        const asn_lm_tensor *t = &u->lm->tensors[i];
        int lo, hi;
        asn_split((int)t->size, ith, nth, 64, &lo, &hi);
        size_t o = t->offset + (size_t)lo;
        if (lo < hi)
            asn_adamw_step(u->h, u->t, u->lr, t->decay ? u->wd : 0.0f, u->lm->params + o, u->lm->grads + o,
                           u->m + o, u->v + o, (size_t)(hi - lo));
    }
}

void asn_lm_adamw_step(asn_lm *lm, const asn_adamw *h, long t, float lr, float weight_decay, float *m, float *v)
{
    adamw_task u = {lm, h, t, lr, weight_decay, m, v};
    asn_pool_run(lm->pool, adamw_run, &u);
}
