/* sampler_net.c — the learned samplers: parameters (state_dict layout and
 * PyTorch's initialization), the workspace, the row scan, the forward and
 * backward passes of LocalProbabilityTransform and
 * SimpleDistributionAwareTransform built from the layers of layers.c, and
 * the dispatch to every architecture (SamplingNetwork's passes are
 * sampler_network.c's, EquivariantLocalTransform's sampler_equi.c's). Their
 * configuration is sampler_config.c's, their files sampler_file.c's; the
 * types these files share, sampler_pass.h.
 *
 * A pass over the vocabulary is a sequence of token-local steps run on
 * blocks of CHUNK tokens (threads take whole blocks), separated by the
 * reductions the architecture needs (log-sum-exp, the linear attention's
 * sums, the mean), which add per-block partial sums in block order. The
 * SamplingNetwork keeps each block's input for the backward pass and
 * recomputes the rest of the block, a block of tokens at a time. The
 * inference pass of the other two is pertoken.c's fused kernel. The
 * SamplingNetwork passes can also run on weighted representatives of the
 * tokens, for the fast pass of sampler_fast.c (asn__sampler_net_reps). */
#include "asn/sampler_net.h"
#include "learn/layers.h"
#include "learn/sampler_internal.h"
#include "learn/sampler_pass.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Logits per block of the first pass (maximum, log-sum-exp, finite count). */
#define SCAN_BLK 4096

/* ============================================================ parameters */

static size_t add_tensor(asn_sampler *s, const char *name, int n_dims, int64_t d0, int64_t d1, tinit init)
{
    if (s->nt == s->cap_t) {
        s->cap_t = s->cap_t ? 2 * s->cap_t : 16;
        s->t = asn_xrealloc(s->t, (size_t)s->cap_t * sizeof *s->t);
        s->init = asn_xrealloc(s->init, (size_t)s->cap_t * sizeof *s->init);
    }
    asn_sampler_tensor *t = &s->t[s->nt];
    t->name = asn_xstrdup(name);
    t->n_dims = n_dims;
    t->shape[0] = n_dims >= 1 ? d0 : 1;
    t->shape[1] = n_dims >= 2 ? d1 : 1;
    t->numel = (size_t)t->shape[0] * (size_t)t->shape[1];
    t->offset = s->np;
    s->init[s->nt] = init;
    s->np += t->numel;
    s->nt++;
    return t->offset;
}

static tinit uniform_init(int fan_in)
{
    tinit t = {INIT_UNIFORM, 1.0f / sqrtf((float)fan_in), {0, 0}};
    return t;
}
static tinit const_init(float a, float b)
{
    tinit t = {INIT_CONST, 0, {a, b}};
    return t;
}

/* nn.Linear(in, out): weight [out, in], bias [out], both U(+-1/sqrt(in)). */
static void add_linear(asn_sampler *s, const char *prefix, int in, int out, size_t *w, size_t *b)
{
    char name[256];
    snprintf(name, sizeof name, "%s.weight", prefix);
    *w = add_tensor(s, name, 2, out, in, uniform_init(in));
    snprintf(name, sizeof name, "%s.bias", prefix);
    *b = add_tensor(s, name, 1, out, 0, uniform_init(in));
}

static mlp_off add_mlp(asn_sampler *s, const char *prefix, int in, int hidden, int out)
{
    mlp_off m;
    char name[256];
    m.in = in;
    m.inner = asn_nn_mlp_inner(hidden);
    m.out = out;
    snprintf(name, sizeof name, "%s.gate_proj", prefix);
    add_linear(s, name, in, m.inner, &m.wg, &m.bg);
    snprintf(name, sizeof name, "%s.up_proj", prefix);
    add_linear(s, name, in, m.inner, &m.wu, &m.bu);
    snprintf(name, sizeof name, "%s.down_proj", prefix);
    add_linear(s, name, m.inner, out, &m.wd, &m.bd);
    return m;
}

/* The tensors in the order of the reference's state_dict (a module's own
 * parameters first, then its children in the order they were assigned). */
static void build_table(asn_sampler *s)
{
    const asn_sampler_config *c = &s->cfg;
    char name[256];
    switch (c->arch) {
    case ASN_SAMPLER_LOCAL:
        s->tr_scale = add_tensor(s, "truncation_scale", 0, 0, 0, const_init(1.0f, 1.0f));
        s->tr_thr = add_tensor(s, "truncation_threshold", 0, 0, 0, const_init(10.0f, 10.0f));
        s->mlp = add_mlp(s, "mlp", 1, c->hidden_dims, 1);
        break;
    case ASN_SAMPLER_EQUI: /* at initialization: LocalProbabilityTransform's truncation */
        s->eq_tau = add_tensor(s, "temperature_scale", 0, 0, 0, const_init(1.0f, 1.0f));
        s->eq_gw = add_tensor(s, "gate.weight", 2, 1, 7, const_init(1.0f, 0.0f));
        s->eq_gb = add_tensor(s, "gate.bias", 1, 1, 0, const_init(10.0f, 10.0f));
        s->mlp = add_mlp(s, "mlp", 6, c->hidden_dims, 1);
        break;
    case ASN_SAMPLER_DIST:
        if (!c->use_dynamic_truncation) /* softplus^-1(1) ~ 0.5413, softplus^-1(10) ~ 10 */
            s->tr_params = add_tensor(s, "truncation_params", 1, 2, 0, const_init(0.5413f, 10.0f));
        add_linear(s, "local_mlp.0", 1, c->hidden_dims, &s->loc_w, &s->loc_b);
        s->mlp = add_mlp(s, "global_mlp", c->hidden_dims + 2, c->hidden_dims, 1);
        if (c->use_dynamic_truncation)
            add_linear(s, "truncation_head", 2, 2, &s->th_w, &s->th_b);
        break;
    case ASN_SAMPLER_NETWORK: {
        int d = c->d_model;
        s->mlp = add_mlp(s, "encoder.mlp", 1, d, d);
        s->blk = asn_xcalloc((size_t)(c->n_blocks ? c->n_blocks : 1), sizeof *s->blk);
        for (int b = 0; b < c->n_blocks; b++) {
            blk_off *k = &s->blk[b];
            snprintf(name, sizeof name, "blocks.%d.qkv_proj", b);
            add_linear(s, name, d, 3 * d, &k->qkv_w, &k->qkv_b);
            snprintf(name, sizeof name, "blocks.%d.attention.o_proj", b);
            add_linear(s, name, d, d, &k->o_w, &k->o_b);
            snprintf(name, sizeof name, "blocks.%d.ffn", b);
            k->ffn = add_mlp(s, name, d, c->d_ff, d);
            snprintf(name, sizeof name, "blocks.%d.norm1.weight", b);
            k->n1_w = add_tensor(s, name, 1, d, 0, const_init(1.0f, 1.0f));
            snprintf(name, sizeof name, "blocks.%d.norm1.bias", b);
            k->n1_b = add_tensor(s, name, 1, d, 0, const_init(0.0f, 0.0f));
            snprintf(name, sizeof name, "blocks.%d.norm2.weight", b);
            k->n2_w = add_tensor(s, name, 1, d, 0, const_init(1.0f, 1.0f));
            snprintf(name, sizeof name, "blocks.%d.norm2.bias", b);
            k->n2_b = add_tensor(s, name, 1, d, 0, const_init(0.0f, 0.0f));
        }
        s->thead = add_mlp(s, "transformation_head", 2 * d, d, 1);
        s->trhead = add_mlp(s, "truncation_head", d, d / 2, 2);
        if (c->scale)
            s->shead = add_mlp(s, "scaling_head", d, d / 2, 1);
        break;
    }
    }
}

void asn_sampler_init(asn_sampler *s, uint64_t seed)
{
    /* Philox key: the seed and "sampler"; counter: (tensor, element / 4). */
    const uint64_t key[2] = {seed, 0x73616d706c6572ULL};
    for (int ti = 0; ti < s->nt; ti++) {
        const asn_sampler_tensor *t = &s->t[ti];
        const tinit *in = &s->init[ti];
        float *p = s->p + t->offset;
        if (in->kind == INIT_CONST) {
            for (size_t i = 0; i < t->numel; i++)
                p[i] = in->v[i < 1 ? 0 : 1];
            continue;
        }
        for (size_t i = 0; i < t->numel; i += 4) {
            uint64_t ctr[4] = {(uint64_t)ti, i / 4, 0, 0}, r[4];
            asn_philox4x64(ctr, key, r);
            for (size_t j = 0; j < 4 && i + j < t->numel; j++) {
                double u = (double)(r[j] >> 11) * 0x1.0p-53; /* [0, 1) */
                p[i + j] = (float)((2.0 * u - 1.0) * in->bound);
            }
        }
    }
}

asn_sampler *asn_sampler_new(const asn_sampler_config *cfg, uint64_t seed, asn_err *e)
{
    if (asn_sampler_config_check(cfg, e) < 0)
        return NULL;
    asn_sampler *s = asn_xcalloc(1, sizeof *s);
    s->cfg = *cfg;
    if (s->cfg.arch != ASN_SAMPLER_DIST)
        s->cfg.use_dynamic_truncation = 0;
    if (s->cfg.arch != ASN_SAMPLER_NETWORK)
        s->cfg.d_model = s->cfg.d_ff = s->cfg.n_blocks = s->cfg.n_heads = s->cfg.scale = 0;
    else
        s->cfg.hidden_dims = 0;
    build_table(s);
    s->p = asn_xcalloc(s->np, sizeof(float));
    s->g = asn_xcalloc(s->np, sizeof(float));
    asn_sampler_init(s, seed);
    return s;
}

void asn_sampler_free(asn_sampler *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->nt; i++)
        free((char *)s->t[i].name);
    free(s->t);
    free(s->init);
    free(s->p);
    free(s->g);
    free(s->blk);
    free(s);
}

const asn_sampler_config *asn_sampler_get_config(const asn_sampler *s) { return &s->cfg; }
size_t asn_sampler_n_params(const asn_sampler *s) { return s->np; }
float *asn_sampler_params(asn_sampler *s) { return s->p; }
const float *asn_sampler_params_const(const asn_sampler *s) { return s->p; }
float *asn_sampler_grads(asn_sampler *s) { return s->g; }
void asn_sampler_zero_grad(asn_sampler *s) { memset(s->g, 0, s->np * sizeof(float)); }
int asn_sampler_n_tensors(const asn_sampler *s) { return s->nt; }
const asn_sampler_tensor *asn_sampler_tensor_at(const asn_sampler *s, int i)
{
    return i >= 0 && i < s->nt ? &s->t[i] : NULL;
}
const asn_sampler_tensor *asn_sampler_find_tensor(const asn_sampler *s, const char *name)
{
    for (int i = 0; i < s->nt; i++)
        if (!strcmp(s->t[i].name, name))
            return &s->t[i];
    return NULL;
}

/* ============================================================ workspace */

/* Floats per token and fixed floats a thread's arena must hold. */
static size_t arena_floats(const asn_sampler_config *c)
{
    size_t per, fixed = 64;
    if (c->arch == ASN_SAMPLER_NETWORK) {
        size_t d = (size_t)c->d_model, H = (size_t)c->n_heads;
        size_t I = (size_t)asn_nn_mlp_inner(c->d_ff), E = (size_t)asn_nn_mlp_inner(d);
        if (E > I)
            I = E;
        per = 24 * d + 4 * H + 6 * I + 32;
        fixed += 2 * d * (d + H) + 64;
    } else {
        size_t H = (size_t)c->hidden_dims, I = (size_t)asn_nn_mlp_inner(c->hidden_dims);
        per = 4 * H + 6 * I + 32;
    }
    return per * CHUNK + fixed + 64 * 16; /* alignment slack */
}

asn_sampler_ws *asn_sampler_ws_new(const asn_sampler *s, int train)
{
    asn_sampler_ws *ws = asn_xcalloc(1, sizeof *ws);
    ws->cfg = s->cfg;
    ws->np = s->np;
    ws->train = train;
    ws->arena_cap = arena_floats(&s->cfg);
    const asn_sampler_config *c = &s->cfg;
    size_t d = (size_t)c->d_model, H = (size_t)c->n_heads;
    size_t I = (size_t)asn_nn_mlp_inner(c->arch == ASN_SAMPLER_NETWORK ? c->d_model : c->hidden_dims);
    ws->part_w = 4 * I + 8;
    if (c->arch == ASN_SAMPLER_NETWORK) {
        size_t w = d * (d + H) > d * (d + 1) ? d * (d + H) : d * (d + 1);
        if (w > ws->part_w)
            ws->part_w = w;
        ws->M = asn_xcalloc((size_t)(c->n_blocks ? c->n_blocks : 1) * d * (d + H), sizeof(float));
        ws->dkv = asn_xcalloc(d * d, sizeof(float));
        ws->dks = asn_xcalloc(d, sizeof(float));
        ws->c = asn_xcalloc(d, sizeof(float));
        ws->hc = asn_xcalloc(16 * d + 16, sizeof(float));
    }
    ws->tb_g = asn_xcalloc(I + 1, sizeof(float));
    ws->tb_u = asn_xcalloc(I + 1, sizeof(float));
    if (c->arch != ASN_SAMPLER_NETWORK)
        ws->pt_neg = asn_xcalloc(2 * (size_t)c->hidden_dims + 4 * I + 1, sizeof(float));
    return ws;
}

void asn_sampler_ws_free(asn_sampler_ws *ws)
{
    if (!ws)
        return;
    free(ws->xbuf);
    free(ws->idx);
    free(ws->lp);
    free(ws->dlp);
    free(ws->xs);
    free(ws->qf);
    free(ws->kv);
    free(ws->dq);
    free(ws->dh);
    free(ws->part);
    free(ws->part_dlp);
    free(ws->scan);
    free(ws->scan_count);
    free(ws->scan_bad);
    free(ws->M);
    free(ws->dkv);
    free(ws->dks);
    free(ws->c);
    free(ws->tb_g);
    free(ws->tb_u);
    free(ws->pt_neg);
    free(ws->ptf);
    free(ws->hc);
    if (ws->fast)
        ws->fast_free(ws->fast);
    asn__equi_free(ws->equi);
    for (int i = 0; i < ws->cap_threads; i++)
        free(ws->arenas[i].base);
    free(ws->arenas);
    free(ws->tgrad);
    free(ws);
}

static void ws_reserve(asn_sampler_ws *ws, int V, int nth)
{
    const asn_sampler_config *c = &ws->cfg;
    if (V > ws->cap_v) {
        size_t v = (size_t)V, d = (size_t)c->d_model;
        free(ws->xbuf), free(ws->idx), free(ws->lp), free(ws->dlp);
        ws->xbuf = asn_xmalloc(v * sizeof(float));
        ws->idx = asn_xmalloc(v * sizeof(int32_t));
        ws->lp = asn_xmalloc(v * sizeof(float));
        ws->dlp = ws->train ? asn_xmalloc(v * sizeof(float)) : NULL;
        if (c->arch == ASN_SAMPLER_NETWORK) {
            size_t slots = ws->train ? (size_t)c->n_blocks + 1 : 2;
            free(ws->xs), free(ws->qf), free(ws->kv), free(ws->dq), free(ws->dh);
            ws->xs = asn_xmalloc(slots * v * d * sizeof(float));
            ws->qf = asn_xmalloc(v * d * sizeof(float));
            ws->kv = ws->train ? asn_xmalloc(2 * v * d * sizeof(float)) : NULL;
            ws->dq = ws->train ? asn_xmalloc(v * d * sizeof(float)) : NULL;
            ws->dh = ws->train ? asn_xmalloc(v * d * sizeof(float)) : NULL;
        }
        ws->cap_v = V;
    }
    int nch = (V + CHUNK - 1) / CHUNK + 1;
    if (nch > ws->cap_chunks) {
        free(ws->part), free(ws->part_dlp);
        ws->part = asn_xmalloc((size_t)nch * ws->part_w * sizeof(double));
        ws->part_dlp = asn_xmalloc((size_t)nch * sizeof(double));
        ws->cap_chunks = nch;
    }
    int nscan = (V + SCAN_BLK - 1) / SCAN_BLK + 1;
    if (nscan > ws->cap_scan) {
        free(ws->scan), free(ws->scan_count), free(ws->scan_bad);
        ws->scan = asn_xmalloc((size_t)nscan * sizeof *ws->scan);
        ws->scan_count = asn_xmalloc((size_t)nscan * sizeof *ws->scan_count);
        ws->scan_bad = asn_xmalloc((size_t)nscan * sizeof *ws->scan_bad);
        ws->cap_scan = nscan;
    }
    if (nth > ws->cap_threads) {
        ws->arenas = asn_xrealloc(ws->arenas, (size_t)nth * sizeof *ws->arenas);
        for (int i = ws->cap_threads; i < nth; i++) {
            ws->arenas[i].base = asn_xmalloc(ws->arena_cap * sizeof(float));
            ws->arenas[i].cap = ws->arena_cap;
            ws->arenas[i].used = 0;
        }
        if (ws->train) {
            free(ws->tgrad);
            ws->tgrad = asn_xmalloc((size_t)nth * ws->np * sizeof(float));
        }
        ws->cap_threads = nth;
    }
}

/* ====================================================== passes over tokens */

/* ------------------------------------------------ scan: lse and -inf tokens */

typedef struct scan_ctx {
    asn_sampler_ws *ws;
    const float *logits;
    float *out;
    int V, nblk;
    const int64_t *start; /* compaction: first finite index of each block */
    int entropy;          /* the row's entropy wanted (DIST's scale head, EQUI's features) */
} scan_ctx;

static void scan_thread(void *ctx, int ith, int nth)
{
    scan_ctx *sc = ctx;
    int b0, b1;
    asn_split(sc->nblk, ith, nth, 1, &b0, &b1);
    for (int b = b0; b < b1; b++) {
        int lo = b * SCAN_BLK, hi = lo + SCAN_BLK < sc->V ? lo + SCAN_BLK : sc->V;
        int bad = 0;
        sc->ws->scan[b] = asn_nn_lse_block(sc->logits + lo, hi - lo, &bad, sc->entropy);
        sc->ws->scan_count[b] = sc->ws->scan[b].count;
        sc->ws->scan_bad[b] = bad;
    }
}

static void compact_thread(void *ctx, int ith, int nth)
{
    scan_ctx *sc = ctx;
    asn_sampler_ws *ws = sc->ws;
    int b0, b1;
    asn_split(sc->nblk, ith, nth, 1, &b0, &b1);
    for (int b = b0; b < b1; b++) {
        int lo = b * SCAN_BLK, hi = lo + SCAN_BLK < sc->V ? lo + SCAN_BLK : sc->V;
        int64_t pos = sc->start[b];
        for (int i = lo; i < hi; i++) {
            float x = sc->logits[i];
            if (x > -INFINITY) {
                ws->xbuf[pos] = x;
                ws->idx[pos++] = i;
            } else {
                sc->out[i] = -INFINITY;
            }
        }
    }
}

/* The row's log-sum-exp and entropy over its finite logits, and the finite
 * logits themselves (ws->x, ws->n). Returns -1 (out untouched) on NaN or
 * +inf; n = 0 (out all -inf) when nothing is finite. */
static int scan_row(asn_sampler_ws *ws, asn_pool *pool, const float *logits, int V, float *out, asn_err *e)
{
    int entropy = ws->cfg.arch == ASN_SAMPLER_DIST || ws->cfg.arch == ASN_SAMPLER_EQUI;
    scan_ctx sc = {ws, logits, out, V, (V + SCAN_BLK - 1) / SCAN_BLK, NULL, entropy};
    asn_pool_run(pool, scan_thread, &sc);
    asn_nn_lse tot = {-INFINITY, 0, 0, 0, INFINITY};
    int64_t n = 0;
    for (int b = 0; b < sc.nblk; b++) {
        if (ws->scan_bad[b]) {
            for (int i = b * SCAN_BLK; i < V; i++)
                if (!(logits[i] <= INFINITY) || logits[i] == INFINITY)
                    return asn_err_set(e, "sampler input: logit %d is %s", i, isnan(logits[i]) ? "NaN" : "+inf");
        }
        tot = asn_nn_lse_merge(tot, ws->scan[b]);
        n += ws->scan_count[b];
    }
    ws->V = V;
    ws->n = (int)n;
    ws->compact = n < V;
    ws->x = logits;
    if (n == 0) {
        for (int i = 0; i < V; i++)
            out[i] = -INFINITY;
        return 0;
    }
    ws->lse = asn_nn_lse_value(tot);
    ws->xmax = tot.max;
    ws->xmin = tot.min;
    ws->stats[0] = (float)((double)tot.max - ws->lse);
    ws->stats[1] = entropy ? (float)asn_nn_lse_entropy(tot) : NAN; /* NaN: not computed */
    if (ws->compact) {
        int64_t *start = asn_xmalloc((size_t)sc.nblk * sizeof *start), pos = 0;
        for (int b = 0; b < sc.nblk; b++) {
            start[b] = pos;
            pos += ws->scan_count[b];
        }
        sc.start = start;
        asn_pool_run(pool, compact_thread, &sc);
        free(start);
        ws->x = ws->xbuf;
    }
    return 0;
}

/* Through the input log_softmax: dlogits = dlp - p * (sum of dlp), 0 at
 * -inf logits; the backward passes left dlp in ws->dlp and each block of
 * tokens' sum in ws->part_dlp. */
static void lsm_back_chunk(pass *p, int c, int lo, int hi, arena *a, float *tg)
{
    asn_sampler_ws *ws = p->ws;
    int cn = hi - lo;
    float *dx = ws->compact ? arena_get(a, (size_t)cn) : p->out + lo;
    asn_nn_logsoftmax_backward(dx, ws->dlp + lo, ws->lp + lo, p->sum_dlp, cn);
    out_scatter(p, lo, cn, dx);
}

static void dlogits_pass(pass *p, asn_pool *pool, float *dlogits)
{
    asn_sampler_ws *ws = p->ws;
    sum_parts(&p->sum_dlp, ws->part_dlp, 1, n_chunks(ws), 1);
    if (ws->compact)
        for (int i = 0; i < ws->V; i++)
            dlogits[i] = 0.0f;
    p->out = dlogits;
    run_pass(p, pool, lsm_back_chunk);
}

/* Per-thread gradients: zeroed before a backward pass, added to the
 * sampler's in thread order after it. */
static void tgrad_begin(asn_sampler_ws *ws, int nth)
{
    memset(ws->tgrad, 0, (size_t)nth * ws->np * sizeof(float));
}
static void tgrad_end(asn_sampler *s, asn_sampler_ws *ws, int nth)
{
    for (int t = 0; t < nth; t++) {
        const float *g = ws->tgrad + (size_t)t * ws->np;
        for (size_t i = 0; i < ws->np; i++)
            s->g[i] += g[i];
    }
}

/* ================================================ LocalProbabilityTransform */

/* The log-probabilities of a block of tokens (kept in ws->lp for the
 * backward pass when training). */
static const float *local_lp(pass *p, int lo, int cn, arena *a)
{
    asn_sampler_ws *ws = p->ws;
    float *lp = ws->train ? ws->lp + lo : arena_get(a, (size_t)cn);
    asn_nn_logsoftmax_forward(lp, ws->x + lo, ws->lse, cn);
    return lp;
}

/* The fused kernel (pertoken.c) from the logits to the outputs (ws->pt,
 * set up by pertoken_setup); the log-probabilities kept for the backward
 * pass when training. */
static void pertoken_fwd_chunk(pass *p, int c, int lo, int hi, arena *a, float *tg)
{
    asn_sampler_ws *ws = p->ws;
    int cn = hi - lo;
    float *o = out_rows(p, lo, cn, a);
    asn_nn_pertoken_forward(o, ws->train ? ws->lp + lo : NULL, ws->x + lo, &ws->pt, cn);
    out_scatter(p, lo, cn, o);
}

/* The fast pass of the same kernel (ws->ptf, set up by pertoken_fast). */
static void pertoken_fast_chunk(pass *p, int c, int lo, int hi, arena *a, float *tg)
{
    asn_sampler_ws *ws = p->ws;
    int cn = hi - lo;
    float *o = out_rows(p, lo, cn, a);
    asn_nn_pertoken_fast_forward(o, ws->x + lo, &ws->pt, ws->ptf, cn);
    out_scatter(p, lo, cn, o);
}

/* The pass over the tokens after pertoken_setup: the fast one when asked
 * for (fast) and the row has more than exact_max finite tokens, and its
 * table has finite values; the exact one otherwise. */
static void pertoken_run(asn_sampler_ws *ws, pass *p, asn_pool *pool, int fast, int exact_max)
{
    ws->ptf_ni = 0;
    if (fast && ws->n > exact_max) {
        if (!ws->ptf)
            ws->ptf = asn_xmalloc(sizeof *ws->ptf);
        if (asn_nn_pertoken_fast_setup(ws->ptf, &ws->pt, ws->xmax, ws->xmin) == 0) {
            ws->ptf_ni = ws->ptf->ni;
            run_pass(p, pool, pertoken_fast_chunk);
            return;
        }
    }
    run_pass(p, pool, pertoken_fwd_chunk);
}

static void pertoken_setup(const asn_sampler *s, asn_sampler_ws *ws)
{
    ws->pt_m = mlp_view(&s->mlp, s->p);
    asn_nn_pertoken f = {&ws->pt_m, 0, NULL, NULL, NULL, NULL, ws->lse, ws->scale, ws->thr, NULL};
    if (s->cfg.arch == ASN_SAMPLER_DIST) {
        f.H = s->cfg.hidden_dims;
        f.w1 = s->p + s->loc_w;
        f.b1 = s->p + s->loc_b;
        f.bias_g = ws->tb_g;
        f.bias_u = ws->tb_u;
    }
    ws->pt = f;
    asn_nn_pertoken_prepare(&ws->pt, ws->pt_neg);
}

static void local_bwd_chunk(pass *p, int c, int lo, int hi, arena *a, float *tg)
{
    const asn_sampler *s = p->s;
    asn_sampler_ws *ws = p->ws;
    int cn = hi - lo;
    const float *lp = ws->lp + lo;
    asn_nn_mlp m = mlp_view(&s->mlp, s->p), dm = mlp_view(&s->mlp, tg);
    float *l = arena_get(a, (size_t)cn), *dl = arena_get(a, (size_t)cn);
    asn_nn_mlp1_forward(l, lp, &m, cn);
    for (int j = 0; j < cn; j++)
        l[j] += lp[j];
    const float *dout = dout_rows(p, lo, cn, a);
    double *part = ws->part + (size_t)c * ws->part_w;
    part[0] = part[1] = 0;
    asn_nn_trunc_backward(dl, &part[0], &part[1], dout, l, ws->scale, ws->thr, cn);
    /* l = lp + mlp(lp) */
    float *dlp = NULL;
    if (p->want_dlogits) {
        dlp = ws->dlp + lo;
        memcpy(dlp, dl, (size_t)cn * sizeof(float));
    }
    asn_nn_mlp1_backward(dlp, &dm, dl, lp, &m, cn);
    if (dlp)
        ws->part_dlp[c] = asn_nn_sum(dlp, cn);
}

/* ========================================= SimpleDistributionAwareTransform */

/* The row's truncation parameters from the statistics (dynamic) or the
 * learned pair (static), before softplus. */
static void dist_trunc_raw(const asn_sampler *s, const asn_sampler_ws *ws, float raw[2])
{
    if (s->cfg.use_dynamic_truncation) {
        const float *w = s->p + s->th_w, *b = s->p + s->th_b;
        for (int r = 0; r < 2; r++)
            raw[r] = (float)((double)w[2 * r] * ws->stats[0] + (double)w[2 * r + 1] * ws->stats[1] + b[r]);
    } else {
        raw[0] = s->p[s->tr_params];
        raw[1] = s->p[s->tr_params + 1];
    }
}

/* Forward of a block of tokens up to l = lp + mlp([silu(local(lp)), stats]),
 * keeping the activations in the arena. */
typedef struct dist_acts {
    float *pre, *loc, *g, *u, *a, *l;
} dist_acts;

static void dist_forward_rows(pass *p, const float *lp, int cn, arena *a, dist_acts *z)
{
    const asn_sampler *s = p->s;
    asn_sampler_ws *ws = p->ws;
    int H = s->cfg.hidden_dims, NI = s->mlp.inner;
    asn_nn_mlp m = mlp_view(&s->mlp, s->p);
    z->pre = arena_get(a, (size_t)cn * H);
    z->loc = arena_get(a, (size_t)cn * H);
    z->g = arena_get(a, (size_t)cn * NI);
    z->u = arena_get(a, (size_t)cn * NI);
    z->a = arena_get(a, (size_t)cn * NI);
    z->l = arena_get(a, (size_t)cn);
    asn_nn_linear_forward(z->pre, H, lp, 1, s->p + s->loc_w, 1, s->p + s->loc_b, cn, 1, H);
    asn_nn_silu_forward(z->loc, z->pre, (size_t)cn * H);
    asn_nn_mlp_forward(z->l, 1, z->g, z->u, z->a, z->loc, H, H, ws->tb_g, ws->tb_u, &m, cn);
    for (int j = 0; j < cn; j++)
        z->l[j] += lp[j];
}

/* Through the layers: hidden_dims above what the fused kernel holds. */
static void dist_fwd_chunk(pass *p, int c, int lo, int hi, arena *a, float *tg)
{
    int cn = hi - lo;
    dist_acts z;
    dist_forward_rows(p, local_lp(p, lo, cn, a), cn, a, &z);
    out_truncate(p, lo, cn, z.l, a);
}

static void dist_bwd_chunk(pass *p, int c, int lo, int hi, arena *a, float *tg)
{
    const asn_sampler *s = p->s;
    asn_sampler_ws *ws = p->ws;
    int cn = hi - lo, H = s->cfg.hidden_dims, NI = s->mlp.inner;
    const float *lp = ws->lp + lo;
    dist_acts z;
    dist_forward_rows(p, lp, cn, a, &z);
    const float *dout = dout_rows(p, lo, cn, a);
    double *part = ws->part + (size_t)c * ws->part_w;
    memset(part, 0, (2 + 2 * (size_t)NI) * sizeof(double));
    float *dl = arena_get(a, (size_t)cn);
    asn_nn_trunc_backward(dl, &part[0], &part[1], dout, z.l, ws->scale, ws->thr, cn);
    /* l = lp + global_mlp([loc, stats]); the statistics carry no gradient */
    asn_nn_mlp m = mlp_view(&s->mlp, s->p), dm = mlp_view(&s->mlp, tg);
    float *dloc = arena_get(a, (size_t)cn * H), *dpre = arena_get(a, (size_t)cn * H);
    float *scratch = arena_get(a, 3 * (size_t)cn * NI);
    memset(dloc, 0, (size_t)cn * H * sizeof(float));
    asn_nn_mlp_backward(dloc, H, &dm, part + 2, part + 2 + NI, dl, 1, z.g, z.u, z.a, z.loc, H, H, &m, cn, scratch);
    asn_nn_silu_backward(dpre, dloc, z.pre, (size_t)cn * H);
    float *dlp = NULL;
    if (p->want_dlogits) {
        dlp = ws->dlp + lo;
        memcpy(dlp, dl, (size_t)cn * sizeof(float));
    }
    asn_nn_linear_backward(dlp, 1, tg + s->loc_w, 1, tg + s->loc_b, dpre, H, lp, 1, s->p + s->loc_w, 1, cn, 1, H);
    if (dlp)
        ws->part_dlp[c] = asn_nn_sum(dlp, cn);
}

/* ================================================================ dispatch */

/* ============================================= EquivariantLocalTransform */

static asn__equi_view equi_view(const asn_sampler *s, float *base)
{
    asn__equi_view v = {mlp_view(&s->mlp, base), base + s->eq_tau, base + s->eq_gw, base + s->eq_gb};
    return v;
}

/* On the calling thread (sampler_equi.c), the output through ws->lp when
 * some logits are -inf. */
static void equi_forward(const asn_sampler *s, asn_sampler_ws *ws, float *out)
{
    asn__equi_view P = equi_view(s, s->p);
    float *o = ws->compact ? ws->lp : out;
    asn__equi_forward(&ws->equi, &P, ws->x, ws->n, ws->lse, ws->xmax, ws->stats[1], ws->step, o);
    if (ws->compact)
        for (int i = 0; i < ws->n; i++)
            out[ws->idx[i]] = o[i];
}

static void equi_backward(asn_sampler *s, asn_sampler_ws *ws, const float *dout, float *dlogits)
{
    asn__equi_view P = equi_view(s, s->p), G = equi_view(s, s->g);
    const float *d = dout;
    if (ws->compact) {
        for (int i = 0; i < ws->n; i++)
            ws->dlp[i] = dout[ws->idx[i]];
        d = ws->dlp;
    }
    float *dx = dlogits && ws->compact ? asn__equi_buf(ws->equi) : dlogits;
    asn__equi_backward(ws->equi, &P, &G, d, dx);
    if (dlogits && ws->compact) {
        memset(dlogits, 0, (size_t)ws->V * sizeof(float));
        for (int i = 0; i < ws->n; i++)
            dlogits[ws->idx[i]] = dx[i];
    }
}

void asn_sampler_ws_set_step(asn_sampler_ws *ws, int step) { ws->step = step < 0 ? 0 : step; }

/* The forward pass; fast: LOCAL and DIST take pertoken.c's fast pass on
 * rows of more than exact_max finite tokens. */
static int forward(const asn_sampler *s, asn_sampler_ws *ws, asn_pool *pool, const float *logits, int V, float *out,
                   int fast, int exact_max, asn_err *e)
{
    if (V <= 0)
        return asn_err_set(e, "sampler input: empty row");
    if (memcmp(&ws->cfg, &s->cfg, sizeof ws->cfg) || ws->np != s->np)
        return asn_err_set(e, "sampler workspace was made for another sampler");
    int nth = asn_pool_size(pool);
    ws->ready = 0;
    ws_reserve(ws, V, nth);
    if (scan_row(ws, pool, logits, V, out, e) < 0)
        return -1;
    ws->ready = ws->train;
    if (ws->n == 0)
        return 0;
    pass p;
    memset(&p, 0, sizeof p);
    p.s = s;
    p.ws = ws;
    p.out = out;
    switch (s->cfg.arch) {
    case ASN_SAMPLER_LOCAL:
        ws->scale = s->p[s->tr_scale];
        ws->thr = s->p[s->tr_thr];
        pertoken_setup(s, ws);
        pertoken_run(ws, &p, pool, fast, exact_max);
        break;
    case ASN_SAMPLER_DIST: {
        float raw[2];
        dist_trunc_raw(s, ws, raw);
        ws->scale = asn_nn_softplusf(raw[0]);
        ws->thr = asn_nn_softplusf(raw[1]);
        asn_nn_mlp m = mlp_view(&s->mlp, s->p);
        asn_nn_mlp_tail_bias(ws->tb_g, ws->tb_u, &m, s->cfg.hidden_dims, ws->stats);
        if (s->cfg.hidden_dims <= ASN_NN_DIST_MAXH) {
            pertoken_setup(s, ws);
            pertoken_run(ws, &p, pool, fast, exact_max);
        } else {
            run_pass(&p, pool, dist_fwd_chunk);
        }
        break;
    }
    case ASN_SAMPLER_NETWORK:
        asn__net_forward(&p, pool);
        break;
    case ASN_SAMPLER_EQUI:
        equi_forward(s, ws, out);
        break;
    }
    return 0;
}

int asn_sampler_forward(const asn_sampler *s, asn_sampler_ws *ws, asn_pool *pool, const float *logits, int V,
                        float *out, asn_err *e)
{
    return forward(s, ws, pool, logits, V, out, 0, 0, e);
}

int asn__sampler_forward_pertoken_fast(const asn_sampler *s, asn_sampler_ws *ws, asn_pool *pool, const float *logits,
                                       int V, float *out, int exact_max, int *pieces, asn_err *e)
{
    ws->ptf_ni = 0;
    int rc = forward(s, ws, pool, logits, V, out, 1, exact_max, e);
    ws->ready = 0; /* no backward pass through the fast one */
    *pieces = ws->ptf_ni;
    return rc;
}

int asn_sampler_backward(asn_sampler *s, asn_sampler_ws *ws, asn_pool *pool, const float *dout, float *dlogits,
                         asn_err *e)
{
    if (!ws->train)
        return asn_err_set(e, "sampler backward pass: the workspace was not made for training");
    if (!ws->ready)
        return asn_err_set(e, "sampler backward pass: no forward pass to go back through");
    if (memcmp(&ws->cfg, &s->cfg, sizeof ws->cfg) || ws->np != s->np)
        return asn_err_set(e, "sampler workspace was made for another sampler");
    int nth = asn_pool_size(pool);
    if (nth > ws->cap_threads)
        return asn_err_set(e, "sampler backward pass: more threads than in the forward pass");
    if (ws->n == 0) {
        if (dlogits)
            memset(dlogits, 0, (size_t)ws->V * sizeof(float));
        return 0;
    }
    if (s->cfg.arch == ASN_SAMPLER_EQUI) {
        equi_backward(s, ws, dout, dlogits);
        return 0;
    }
    pass p;
    memset(&p, 0, sizeof p);
    p.s = s;
    p.ws = ws;
    p.dout = dout;
    p.want_dlogits = dlogits != NULL;
    tgrad_begin(ws, nth);
    int nch = n_chunks(ws);
    switch (s->cfg.arch) {
    case ASN_SAMPLER_LOCAL: {
        run_pass(&p, pool, local_bwd_chunk);
        double tot[2];
        sum_parts(tot, ws->part, ws->part_w, nch, 2);
        s->g[s->tr_scale] += (float)tot[0];
        s->g[s->tr_thr] += (float)tot[1];
        break;
    }
    case ASN_SAMPLER_DIST: {
        run_pass(&p, pool, dist_bwd_chunk);
        int NI = s->mlp.inner, Hd = s->cfg.hidden_dims;
        size_t w = 2 + 2 * (size_t)NI;
        double *tot = asn_xmalloc(w * sizeof(double));
        sum_parts(tot, ws->part, ws->part_w, nch, w);
        asn_nn_mlp m = mlp_view(&s->mlp, s->p), dm = mlp_view(&s->mlp, s->g);
        asn_nn_mlp_tail_backward(NULL, &dm, tot + 2, tot + 2 + NI, &m, Hd, ws->stats);
        float raw[2];
        dist_trunc_raw(s, ws, raw);
        double dr0 = tot[0] * asn_nn_softplus_gradf(raw[0]), dr1 = tot[1] * asn_nn_softplus_gradf(raw[1]);
        if (s->cfg.use_dynamic_truncation) {
            float *dw = s->g + s->th_w, *db = s->g + s->th_b;
            dw[0] += (float)(dr0 * ws->stats[0]);
            dw[1] += (float)(dr0 * ws->stats[1]);
            dw[2] += (float)(dr1 * ws->stats[0]);
            dw[3] += (float)(dr1 * ws->stats[1]);
            db[0] += (float)dr0;
            db[1] += (float)dr1;
        } else {
            s->g[s->tr_params] += (float)dr0;
            s->g[s->tr_params + 1] += (float)dr1;
        }
        free(tot);
        break;
    }
    case ASN_SAMPLER_NETWORK:
        asn__net_backward(&p, pool);
        break;
    case ASN_SAMPLER_EQUI:
        break;
    }
    tgrad_end(s, ws, nth);
    if (dlogits)
        dlogits_pass(&p, pool, dlogits);
    return 0;
}

/* ================================================= for sampler_fast.c */

int asn__sampler_scan(const asn_sampler *s, asn_sampler_ws *ws, asn_pool *pool, const float *logits, int V,
                      float *out, asn__sampler_row *row, asn_err *e)
{
    if (V <= 0)
        return asn_err_set(e, "sampler input: empty row");
    if (memcmp(&ws->cfg, &s->cfg, sizeof ws->cfg) || ws->np != s->np)
        return asn_err_set(e, "sampler workspace was made for another sampler");
    ws->ready = 0;
    ws_reserve(ws, V, asn_pool_size(pool));
    if (scan_row(ws, pool, logits, V, out, e) < 0)
        return -1;
    row->x = ws->x;
    row->idx = ws->compact ? ws->idx : NULL;
    row->n = ws->n;
    row->lse = ws->lse;
    row->xmax = ws->xmax;
    row->xmin = ws->xmin;
    return 0;
}

void **asn__sampler_ws_fast(asn_sampler_ws *ws, void (*free_fn)(void *))
{
    ws->fast_free = free_fn;
    return &ws->fast;
}

void asn__sampler_net_reps(const asn_sampler *s, asn_sampler_ws *rws, asn_pool *pool, const float *lp, const float *w,
                           int R, double n_total, float *lmod, float *mult, float *scale, float *thr)
{
    ws_reserve(rws, R, asn_pool_size(pool));
    rws->ready = 0;
    rws->V = rws->n = R;
    rws->compact = 0;
    rws->x = lp; /* log_softmax with lse 0: lp itself */
    rws->lse = 0;
    rws->w = w;
    rws->n_mean = n_total;
    rws->lmod_out = lmod;
    pass p;
    memset(&p, 0, sizeof p);
    p.s = s;
    p.ws = rws;
    asn__net_forward(&p, pool);
    *mult = rws->mult;
    *scale = rws->scale;
    *thr = rws->thr;
    rws->w = NULL;
    rws->lmod_out = NULL;
}
