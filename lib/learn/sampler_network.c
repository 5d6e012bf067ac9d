/* sampler_network.c — SamplingNetwork's forward and backward passes: the
 * encoder, the blocks of linear attention and SwiGLU, the mean pooling and
 * the heads, on blocks of CHUNK tokens (sampler_pass.h), each block's input
 * kept for the backward pass and the rest recomputed a block at a time;
 * the reductions over the vocabulary (the attention's sums, the mean) add
 * per-block partial sums in block order. The same passes run on weighted
 * representatives of the tokens for sampler_fast.c (ws->w, ws->n_mean). */
#include "learn/sampler_pass.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Where block b's input rows live: one slot per block when training (the
 * backward pass needs them all), else two used in turn. */
static float *net_x(const asn_sampler_ws *ws, int b, int lo)
{
    size_t slot = ws->train ? (size_t)b : (size_t)(b & 1);
    return ws->xs + (slot * (size_t)ws->cap_v + (size_t)lo) * (size_t)ws->cfg.d_model;
}
static float *net_M(const asn_sampler_ws *ws, int b)
{
    size_t d = (size_t)ws->cfg.d_model, H = (size_t)ws->cfg.n_heads;
    return ws->M + (size_t)b * d * (d + H);
}

/* Encoder: h0 = mlp(lp), for rows lo..hi; keeps g, u, a in the arena. */
typedef struct enc_acts {
    float *g, *u, *a;
} enc_acts;
static void net_encode(pass *p, const float *lp, float *x0, int cn, arena *a, enc_acts *z)
{
    const asn_sampler *s = p->s;
    int d = s->cfg.d_model, NI = s->mlp.inner;
    asn_nn_mlp m = mlp_view(&s->mlp, s->p);
    z->g = arena_get(a, (size_t)cn * NI);
    z->u = arena_get(a, (size_t)cn * NI);
    z->a = arena_get(a, (size_t)cn * NI);
    asn_nn_mlp_forward(x0, d, z->g, z->u, z->a, lp, 1, 1, NULL, NULL, &m, cn);
}

/* First half of block b for a block of tokens: qkv, phi(q) (kept in
 * ws->qf for the second half), and this block's partial attention sums.
 * Returns qkv (in the arena); kf receives phi(k) when not NULL. */
static float *net_qkv(pass *p, int b, const float *x, int lo, int cn, arena *a, float **kf_out)
{
    const asn_sampler *s = p->s;
    asn_sampler_ws *ws = p->ws;
    int d = s->cfg.d_model;
    const blk_off *k = &s->blk[b];
    float *qkv = arena_get(a, (size_t)cn * 3 * d), *kf = arena_get(a, (size_t)cn * d);
    asn_nn_linear_forward(qkv, 3 * d, x, d, s->p + k->qkv_w, d, s->p + k->qkv_b, cn, d, 3 * d);
    float *qf = ws->qf + (size_t)lo * d;
    asn_nn_elu1_forward(qf, d, qkv, 3 * d, cn, d);
    asn_nn_elu1_forward(kf, d, qkv + d, 3 * d, cn, d);
    if (kf_out)
        *kf_out = kf;
    return qkv;
}

static void net_stats_part(pass *p, int c, int lo, const float *qkv, float *kf, int cn, arena *a)
{
    asn_sampler_ws *ws = p->ws;
    int d = ws->cfg.d_model;
    size_t w = (size_t)d * (d + 1);
    float *P = arena_get(a, w);
    memset(P, 0, w * sizeof(float));
    if (ws->w) /* representatives: phi(k) weighted by the tokens each stands for */
        for (int i = 0; i < cn; i++)
            for (int j = 0; j < d; j++)
                kf[(size_t)i * d + j] *= ws->w[lo + i];
    asn_nn_linattn_stats_forward(P, kf, d, qkv + 2 * d, 3 * d, cn, d);
    double *part = ws->part + (size_t)c * ws->part_w;
    for (size_t j = 0; j < w; j++)
        part[j] = P[j];
}

/* Second half of block b: attention output, residual + LayerNorm, SwiGLU,
 * residual + LayerNorm, into xo (the next block's input rows). */
typedef struct blk_acts {
    float *att, *den, *r1, *m1, *s1, *h1, *g, *u, *a, *r2, *m2, *s2;
} blk_acts;

static void net_block_rest(pass *p, int b, const float *x, const float *qf, int ldq, float *xo, int cn, arena *a,
                           blk_acts *z)
{
    const asn_sampler *s = p->s;
    asn_sampler_ws *ws = p->ws;
    int d = s->cfg.d_model, H = s->cfg.n_heads;
    const blk_off *k = &s->blk[b];
    int NI = k->ffn.inner;
    size_t cd = (size_t)cn * d;
    z->att = arena_get(a, cd);
    z->den = arena_get(a, (size_t)cn * H);
    z->r1 = arena_get(a, cd);
    z->m1 = arena_get(a, (size_t)cn);
    z->s1 = arena_get(a, (size_t)cn);
    z->h1 = arena_get(a, cd);
    z->g = arena_get(a, (size_t)cn * NI);
    z->u = arena_get(a, (size_t)cn * NI);
    z->a = arena_get(a, (size_t)cn * NI);
    z->r2 = arena_get(a, cd);
    z->m2 = arena_get(a, (size_t)cn);
    z->s2 = arena_get(a, (size_t)cn);
    float *nd = arena_get(a, (size_t)cn * (d + H));
    asn_nn_linattn_forward(z->att, z->den, qf, ldq, net_M(ws, b), cn, d, H, nd);
    asn_nn_linear_forward(z->r1, d, z->att, d, s->p + k->o_w, d, s->p + k->o_b, cn, d, d);
    for (size_t j = 0; j < cd; j++)
        z->r1[j] += x[j];
    asn_nn_layernorm_forward(z->h1, z->m1, z->s1, z->r1, s->p + k->n1_w, s->p + k->n1_b, cn, d);
    asn_nn_mlp m = mlp_view(&k->ffn, s->p);
    asn_nn_mlp_forward(z->r2, d, z->g, z->u, z->a, z->h1, d, d, NULL, NULL, &m, cn);
    for (size_t j = 0; j < cd; j++)
        z->r2[j] += z->h1[j];
    asn_nn_layernorm_forward(xo, z->m2, z->s2, z->r2, s->p + k->n2_w, s->p + k->n2_b, cn, d);
}

/* The block of tokens' part of the mean pooling: column sums of the last
 * block's output (weighted for representatives). */
static void net_pool_part(asn_sampler_ws *ws, int c, int lo, const float *x, int cn)
{
    int d = ws->cfg.d_model;
    double *part = ws->part + (size_t)c * ws->part_w;
    memset(part, 0, (size_t)d * sizeof(double));
    if (!ws->w) {
        asn_nn_colsum(part, x, d, cn, d);
        return;
    }
    for (int i = 0; i < cn; i++)
        for (int j = 0; j < d; j++)
            part[j] += (double)ws->w[lo + i] * x[(size_t)i * d + j];
}

static void net_fwd_encode_chunk(pass *p, int c, int lo, int hi, arena *a, float *tg)
{
    asn_sampler_ws *ws = p->ws;
    int cn = hi - lo;
    float *lp = ws->lp + lo;
    asn_nn_logsoftmax_forward(lp, ws->x + lo, ws->lse, cn);
    enc_acts ez;
    float *x0 = net_x(ws, 0, lo);
    net_encode(p, lp, x0, cn, a, &ez);
    if (ws->cfg.n_blocks > 0) {
        float *kf;
        float *qkv = net_qkv(p, 0, x0, lo, cn, a, &kf);
        net_stats_part(p, c, lo, qkv, kf, cn, a);
    } else {
        net_pool_part(ws, c, lo, x0, cn);
    }
}

static void net_fwd_block_chunk(pass *p, int c, int lo, int hi, arena *a, float *tg)
{
    asn_sampler_ws *ws = p->ws;
    int cn = hi - lo, d = ws->cfg.d_model, b = p->b;
    blk_acts z;
    float *xo = net_x(ws, b + 1, lo);
    net_block_rest(p, b, net_x(ws, b, lo), ws->qf + (size_t)lo * d, d, xo, cn, a, &z);
    a->used = 0;
    if (b + 1 < ws->cfg.n_blocks) {
        float *kf;
        float *qkv = net_qkv(p, b + 1, xo, lo, cn, a, &kf);
        net_stats_part(p, c, lo, qkv, kf, cn, a);
    } else {
        net_pool_part(ws, c, lo, xo, cn);
    }
}

/* The attention sums of block b from the blocks' partials. */
static void net_reduce_stats(asn_sampler_ws *ws, int b)
{
    int d = ws->cfg.d_model, H = ws->cfg.n_heads;
    size_t w = (size_t)d * (d + 1);
    double *tot = asn_xmalloc(w * sizeof(double));
    float *P = asn_xmalloc(w * sizeof(float));
    sum_parts(tot, ws->part, ws->part_w, n_chunks(ws), w);
    for (size_t j = 0; j < w; j++)
        P[j] = (float)tot[j];
    asn_nn_linattn_build(net_M(ws, b), P, d, H);
    free(tot);
    free(P);
}

/* Head caches on c (ws->hc): truncation head g, u, a, out(2); scaling head
 * g, u, a, out(1). */
typedef struct head_cache {
    float *tg, *tu, *ta, *tout, *sg, *su, *sa, *sout;
} head_cache;
static head_cache net_hc(const asn_sampler_ws *ws)
{
    size_t d = (size_t)ws->cfg.d_model;
    head_cache h = {ws->hc, ws->hc + d, ws->hc + 2 * d, ws->hc + 3 * d, ws->hc + 4 * d, ws->hc + 5 * d,
                    ws->hc + 6 * d, ws->hc + 7 * d};
    return h;
}

/* The pooled context and everything computed from it alone. */
static void net_heads_on_c(const asn_sampler *s, asn_sampler_ws *ws)
{
    int d = s->cfg.d_model;
    double *tot = asn_xmalloc((size_t)d * sizeof(double));
    sum_parts(tot, ws->part, ws->part_w, n_chunks(ws), (size_t)d);
    for (int j = 0; j < d; j++)
        ws->c[j] = (float)(tot[j] / (ws->w ? ws->n_mean : ws->n));
    free(tot);
    asn_nn_mlp th = mlp_view(&s->thead, s->p), tr = mlp_view(&s->trhead, s->p);
    asn_nn_mlp_tail_bias(ws->tb_g, ws->tb_u, &th, d, ws->c);
    head_cache h = net_hc(ws);
    asn_nn_mlp_forward(h.tout, 2, h.tg, h.tu, h.ta, ws->c, d, d, NULL, NULL, &tr, 1);
    ws->scale = asn_nn_softplusf(h.tout[0]);
    ws->thr = asn_nn_softplusf(h.tout[1]);
    if (s->cfg.scale) {
        asn_nn_mlp sh = mlp_view(&s->shead, s->p);
        asn_nn_mlp_forward(h.sout, 1, h.sg, h.su, h.sa, ws->c, d, d, NULL, NULL, &sh, 1);
        ws->mult = asn_nn_softplusf(h.sout[0]);
    } else {
        /* the reference's identity head returns the constant 1.0, so the
         * multiplier is softplus(1) (kept for checkpoint compatibility) */
        ws->mult = asn_nn_softplusf(1.0f);
    }
}

/* Transformation head for a block of tokens: l' and l = mult * (lp + l'). */
typedef struct head_acts {
    float *g, *u, *a, *lmod, *l;
} head_acts;
static void net_head_rows(pass *p, const float *h, const float *lp, int cn, arena *a, head_acts *z)
{
    const asn_sampler *s = p->s;
    asn_sampler_ws *ws = p->ws;
    int d = s->cfg.d_model, NI = s->thead.inner;
    asn_nn_mlp th = mlp_view(&s->thead, s->p);
    z->g = arena_get(a, (size_t)cn * NI);
    z->u = arena_get(a, (size_t)cn * NI);
    z->a = arena_get(a, (size_t)cn * NI);
    z->lmod = arena_get(a, (size_t)cn);
    z->l = arena_get(a, (size_t)cn);
    asn_nn_mlp_forward(z->lmod, 1, z->g, z->u, z->a, h, d, d, ws->tb_g, ws->tb_u, &th, cn);
    for (int j = 0; j < cn; j++)
        z->l[j] = ws->mult * (lp[j] + z->lmod[j]);
}

static void net_fwd_head_chunk(pass *p, int c, int lo, int hi, arena *a, float *tg)
{
    asn_sampler_ws *ws = p->ws;
    int cn = hi - lo;
    head_acts z;
    net_head_rows(p, net_x(ws, ws->cfg.n_blocks, lo), ws->lp + lo, cn, a, &z);
    if (ws->lmod_out)
        memcpy(ws->lmod_out + lo, z.lmod, (size_t)cn * sizeof(float));
    else
        out_truncate(p, lo, cn, z.l, a);
}

void asn__net_forward(pass *p, asn_pool *pool)
{
    asn_sampler_ws *ws = p->ws;
    const asn_sampler *s = p->s;
    run_pass(p, pool, net_fwd_encode_chunk);
    for (int b = 0; b < s->cfg.n_blocks; b++) {
        net_reduce_stats(ws, b);
        p->b = b;
        run_pass(p, pool, net_fwd_block_chunk);
    }
    net_heads_on_c(s, ws);
    run_pass(p, pool, net_fwd_head_chunk);
}

/* ------------------------------------------------- SamplingNetwork backward */

/* Head: from dout to dh (ws->dh) of the last block's output, with the
 * partial sums the context's gradient needs: part = [dscale, dthr, dmult,
 * sum dgate (NI), sum dup (NI)]. */
static void net_bwd_head_chunk(pass *p, int c, int lo, int hi, arena *a, float *tg)
{
    const asn_sampler *s = p->s;
    asn_sampler_ws *ws = p->ws;
    int cn = hi - lo, d = s->cfg.d_model, NI = s->thead.inner;
    const float *lp = ws->lp + lo, *h = net_x(ws, s->cfg.n_blocks, lo);
    head_acts z;
    net_head_rows(p, h, lp, cn, a, &z);
    const float *dout = dout_rows(p, lo, cn, a);
    double *part = ws->part + (size_t)c * ws->part_w;
    memset(part, 0, (3 + 2 * (size_t)NI) * sizeof(double));
    float *dl = arena_get(a, (size_t)cn), *dlmod = arena_get(a, (size_t)cn);
    asn_nn_trunc_backward(dl, &part[0], &part[1], dout, z.l, ws->scale, ws->thr, cn);
    /* l = mult * (lp + l') */
    double dmult = 0;
    for (int j = 0; j < cn; j++) {
        dmult += (double)dl[j] * (lp[j] + z.lmod[j]);
        dlmod[j] = dl[j] * ws->mult;
    }
    part[2] = dmult;
    if (p->want_dlogits)
        memcpy(ws->dlp + lo, dlmod, (size_t)cn * sizeof(float));
    asn_nn_mlp th = mlp_view(&s->thead, s->p), dth = mlp_view(&s->thead, tg);
    float *dh = ws->dh + (size_t)lo * d, *scratch = arena_get(a, 3 * (size_t)cn * NI);
    memset(dh, 0, (size_t)cn * d * sizeof(float));
    asn_nn_mlp_backward(dh, d, &dth, part + 3, part + 3 + NI, dlmod, 1, z.g, z.u, z.a, h, d, d, &th, cn, scratch);
}

/* The context's gradient (ws->c's slot in hc is reused: dc in ws->dks). */
static void net_bwd_heads_on_c(asn_sampler *s, asn_sampler_ws *ws)
{
    int d = s->cfg.d_model, NI = s->thead.inner;
    size_t w = 3 + 2 * (size_t)NI;
    double *tot = asn_xmalloc(w * sizeof(double));
    sum_parts(tot, ws->part, ws->part_w, n_chunks(ws), w);
    float *dc = ws->dks;
    memset(dc, 0, (size_t)d * sizeof(float));
    /* transformation head: the context part of its gate and up inputs */
    asn_nn_mlp th = mlp_view(&s->thead, s->p), dth = mlp_view(&s->thead, s->g);
    asn_nn_mlp_tail_backward(dc, &dth, tot + 3, tot + 3 + NI, &th, d, ws->c);
    /* truncation head: (scale, thr) = softplus(mlp(c)) */
    head_cache h = net_hc(ws);
    float dt2[2] = {(float)tot[0] * asn_nn_softplus_gradf(h.tout[0]), (float)tot[1] * asn_nn_softplus_gradf(h.tout[1])};
    asn_nn_mlp tr = mlp_view(&s->trhead, s->p), dtr = mlp_view(&s->trhead, s->g);
    float scratch[3 * 64];
    float *big = NULL, *sc = scratch;
    if (3 * (size_t)tr.inner > 3 * 64 || (s->cfg.scale && 3 * (size_t)s->shead.inner > 3 * 64))
        sc = big = asn_xmalloc(3 * (size_t)(tr.inner > s->shead.inner ? tr.inner : s->shead.inner) * sizeof(float));
    asn_nn_mlp_backward(dc, d, &dtr, NULL, NULL, dt2, 2, h.tg, h.tu, h.ta, ws->c, d, d, &tr, 1, sc);
    if (s->cfg.scale) {
        float dsc = (float)tot[2] * asn_nn_softplus_gradf(h.sout[0]);
        asn_nn_mlp sh = mlp_view(&s->shead, s->p), dsh = mlp_view(&s->shead, s->g);
        asn_nn_mlp_backward(dc, d, &dsh, NULL, NULL, &dsc, 1, h.sg, h.su, h.sa, ws->c, d, d, &sh, 1, sc);
    }
    free(big);
    free(tot);
}

/* Block b, first half of its backward pass for a block of tokens: ws->dh
 * holds d(loss)/d(block output); recomputes the block, back through
 * LayerNorm 2, the SwiGLU, LayerNorm 1 and o_proj into the attention; leaves
 * d(block input) through the residual in ws->dh, d(q) in ws->dq, phi(k) | v
 * in ws->kv, and this block of tokens' part of d(M). */
static void net_bwd_block_a(pass *p, int b, int c, int lo, int cn, arena *a, float *tg)
{
    const asn_sampler *s = p->s;
    asn_sampler_ws *ws = p->ws;
    int d = s->cfg.d_model, H = s->cfg.n_heads;
    const blk_off *k = &s->blk[b];
    int NI = k->ffn.inner;
    size_t cd = (size_t)cn * d;
    float *dh = ws->dh + (size_t)lo * d;
    if (b == s->cfg.n_blocks - 1) /* the mean over the vocabulary */
        asn_nn_mean_backward(dh, d, ws->dks, ws->n, cn, d);
    /* recompute */
    const float *x = net_x(ws, b, lo);
    float *kf;
    float *qkv = net_qkv(p, b, x, lo, cn, a, &kf);
    float *qf = ws->qf + (size_t)lo * d, *kv = ws->kv + (size_t)lo * 2 * d;
    for (int i = 0; i < cn; i++) {
        memcpy(kv + (size_t)i * 2 * d, kf + (size_t)i * d, (size_t)d * sizeof(float));
        memcpy(kv + (size_t)i * 2 * d + d, qkv + (size_t)i * 3 * d + 2 * d, (size_t)d * sizeof(float));
    }
    blk_acts z;
    float *xo = arena_get(a, cd);
    net_block_rest(p, b, x, qf, d, xo, cn, a, &z);
    /* LayerNorm 2, residual, SwiGLU */
    float *dr2 = arena_get(a, cd), *dh1 = arena_get(a, cd), *scratch = arena_get(a, 3 * (size_t)cn * NI);
    memset(dr2, 0, cd * sizeof(float));
    asn_nn_layernorm_backward(dr2, tg + k->n2_w, tg + k->n2_b, dh, z.r2, s->p + k->n2_w, z.m2, z.s2, cn, d);
    memcpy(dh1, dr2, cd * sizeof(float));
    asn_nn_mlp m = mlp_view(&k->ffn, s->p), dm = mlp_view(&k->ffn, tg);
    asn_nn_mlp_backward(dh1, d, &dm, NULL, NULL, dr2, d, z.g, z.u, z.a, z.h1, d, d, &m, cn, scratch);
    /* LayerNorm 1; the residual's part of d(x) goes to ws->dh */
    memset(dh, 0, cd * sizeof(float));
    asn_nn_layernorm_backward(dh, tg + k->n1_w, tg + k->n1_b, dh1, z.r1, s->p + k->n1_w, z.m1, z.s1, cn, d);
    /* o_proj, then the attention over phi(q) */
    float *datt = arena_get(a, cd), *dqf = arena_get(a, cd), *nd = arena_get(a, (size_t)cn * (d + H));
    size_t wm = (size_t)d * (d + H);
    float *dMp = arena_get(a, wm);
    memset(datt, 0, cd * sizeof(float));
    memset(dMp, 0, wm * sizeof(float));
    asn_nn_linear_backward(datt, d, tg + k->o_w, d, tg + k->o_b, dh, d, z.att, d, s->p + k->o_w, d, cn, d, d);
    asn_nn_linattn_backward(dqf, d, dMp, datt, z.att, z.den, qf, d, net_M(ws, b), cn, d, H, nd);
    asn_nn_elu1_backward(ws->dq + (size_t)lo * d, d, dqf, d, qkv, 3 * d, cn, d);
    double *part = ws->part + (size_t)c * ws->part_w;
    for (size_t j = 0; j < wm; j++)
        part[j] = dMp[j];
}

/* Block b, second half: through the attention sums into phi(k) and v, then
 * qkv_proj into ws->dh (d(block input)). */
static void net_bwd_block_b(pass *p, int b, int lo, int cn, arena *a, float *tg)
{
    const asn_sampler *s = p->s;
    asn_sampler_ws *ws = p->ws;
    int d = s->cfg.d_model;
    const blk_off *k = &s->blk[b];
    size_t cd = (size_t)cn * d;
    const float *kv = ws->kv + (size_t)lo * 2 * d;
    float *dkf = arena_get(a, cd), *dv = arena_get(a, cd), *dqkv = arena_get(a, 3 * cd);
    asn_nn_linattn_stats_backward(dkf, d, dv, d, ws->dkv, ws->dks, kv, 2 * d, kv + d, 2 * d, cn, d);
    const float *dq = ws->dq + (size_t)lo * d;
    for (int i = 0; i < cn; i++) {
        float *r = dqkv + (size_t)i * 3 * d;
        const float *kfi = kv + (size_t)i * 2 * d, *dkfi = dkf + (size_t)i * d;
        memcpy(r, dq + (size_t)i * d, (size_t)d * sizeof(float));
        for (int j = 0; j < d; j++) /* phi'(k) = min(phi(k), 1) */
            r[d + j] = dkfi[j] * (kfi[j] < 1.0f ? kfi[j] : 1.0f);
        memcpy(r + 2 * d, dv + (size_t)i * d, (size_t)d * sizeof(float));
    }
    asn_nn_linear_backward(ws->dh + (size_t)lo * d, d, tg + k->qkv_w, d, tg + k->qkv_b, dqkv, 3 * d,
                           net_x(ws, b, lo), d, s->p + k->qkv_w, d, cn, d, 3 * d);
}

static void net_bwd_encoder(pass *p, int c, int lo, int cn, arena *a, float *tg)
{
    const asn_sampler *s = p->s;
    asn_sampler_ws *ws = p->ws;
    int d = s->cfg.d_model, NI = s->mlp.inner;
    const float *lp = ws->lp + lo;
    enc_acts ez;
    float *x0 = arena_get(a, (size_t)cn * d), *scratch = arena_get(a, 3 * (size_t)cn * NI);
    net_encode(p, lp, x0, cn, a, &ez);
    asn_nn_mlp m = mlp_view(&s->mlp, s->p), dm = mlp_view(&s->mlp, tg);
    float *dlp = p->want_dlogits ? ws->dlp + lo : NULL;
    asn_nn_mlp_backward(dlp, 1, &dm, NULL, NULL, ws->dh + (size_t)lo * d, d, ez.g, ez.u, ez.a, lp, 1, 1, &m, cn,
                        scratch);
    if (dlp)
        ws->part_dlp[c] = asn_nn_sum(dlp, cn);
}

static void net_bwd_first_chunk(pass *p, int c, int lo, int hi, arena *a, float *tg)
{
    /* after the head: the last block's first half (or the encoder) */
    int nb = p->s->cfg.n_blocks;
    if (nb > 0) {
        net_bwd_block_a(p, nb - 1, c, lo, hi - lo, a, tg);
    } else {
        asn_nn_mean_backward(p->ws->dh + (size_t)lo * p->s->cfg.d_model, p->s->cfg.d_model, p->ws->dks, p->ws->n,
                             hi - lo, p->s->cfg.d_model);
        net_bwd_encoder(p, c, lo, hi - lo, a, tg);
    }
}

static void net_bwd_next_chunk(pass *p, int c, int lo, int hi, arena *a, float *tg)
{
    int b = p->b;
    net_bwd_block_b(p, b, lo, hi - lo, a, tg);
    a->used = 0;
    if (b > 0)
        net_bwd_block_a(p, b - 1, c, lo, hi - lo, a, tg);
    else
        net_bwd_encoder(p, c, lo, hi - lo, a, tg);
}

void asn__net_backward(pass *p, asn_pool *pool)
{
    asn_sampler *s = (asn_sampler *)p->s;
    asn_sampler_ws *ws = p->ws;
    int d = s->cfg.d_model, H = s->cfg.n_heads;
    run_pass(p, pool, net_bwd_head_chunk);
    net_bwd_heads_on_c(s, ws);
    run_pass(p, pool, net_bwd_first_chunk);
    size_t wm = (size_t)d * (d + H);
    double *tot = asn_xmalloc(wm * sizeof(double));
    float *dM = asn_xmalloc(wm * sizeof(float));
    for (int b = s->cfg.n_blocks - 1; b >= 0; b--) {
        sum_parts(tot, ws->part, ws->part_w, n_chunks(ws), wm);
        for (size_t j = 0; j < wm; j++)
            dM[j] = (float)tot[j];
        asn_nn_linattn_dbuild(ws->dkv, ws->dks, dM, d, H);
        p->b = b;
        run_pass(p, pool, net_bwd_next_chunk);
    }
    free(tot);
    free(dM);
}

