/* attention.c — the self-attention block every architecture uses:
 *
 *   q, k, v = in Wq^T (+bq), in Wk^T (+bk), in Wv^T (+bv)   (or one fused Wqkv)
 *   q, k = rmsnorm per head (qwen3, gemma3), then rotary embedding
 *   k, v -> the sequence's KV pages
 *   a = softmax(cap * tanh(scale * q.k / cap)) v   over the visible positions
 *   out = a Wo^T (+bo)
 *
 * Visible positions of a token at p: [0, p] (causal), its whole batch item
 * (non-causal: bert), cut to the last n_swa positions in windowed layers.
 * Rotary tables are computed in double: plain, linear, YaRN, and the
 * per-pair divisors of Llama 3.1 and Phi-3's longrope. */
#include "engine.h"
#include "asn/cpu.h"
#include "asn/linalg.h"
#include "asn/vexp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- rotary */

/* YaRN's correction range: the pairs whose wavelength fits fewer than
 * beta_fast / more than beta_slow turns in the original context. */
static void yarn_dims(const asn_model_config *c, double base, double dims[2])
{
    double n = c->n_rot, ctx = c->n_ctx_orig > 0 ? c->n_ctx_orig : c->n_ctx_train;
    double lo = floor(n * log(ctx / (c->yarn_beta_fast * 2 * M_PI)) / (2 * log(base)));
    double hi = ceil(n * log(ctx / (c->yarn_beta_slow * 2 * M_PI)) / (2 * log(base)));
    dims[0] = lo > 0 ? lo : 0;
    dims[1] = hi < n - 1 ? hi : n - 1;
}

static void rope_fill(const asn_engine *en, rope_set *r, int from, int n)
{
    const asn_model_config *c = &en->m->cfg;
    int half = c->n_rot / 2, yarn = c->rope_scaling == ASN_ROPE_YARN && r->freq_scale != 1.0f;
    double mscale = c->rope_attn_factor, dims[2] = {0, 0};
    if (yarn) {
        yarn_dims(c, r->base, dims);
        mscale *= 1.0 + 0.1 * log(1.0 / r->freq_scale);
    }
    for (int p = from; p < n; p++)
        for (int k = 0; k < half; k++) {
            double theta;
            if (!yarn) {
                theta = p * pow((double)r->base, -2.0 * k / c->n_rot) * (double)r->freq_scale;
                if (en->rope_div)
                    theta /= (double)en->rope_div[k];
            } else {
                double extrap = p * pow((double)r->base, -2.0 * k / c->n_rot);
                if (en->rope_div)
                    extrap /= (double)en->rope_div[k];
                double interp = extrap * (double)r->freq_scale;
                double y = (k - dims[0]) / fmax(0.001, dims[1] - dims[0]);
                double mix = 1 - fmin(1, fmax(0, y)); /* 1: extrapolate (fast pairs) */
                theta = interp * (1 - mix) + extrap * mix;
            }
            r->cos[(size_t)p * half + k] = (float)(cos(theta) * mscale);
            r->sin[(size_t)p * half + k] = (float)(sin(theta) * mscale);
        }
}

void rope_tables(asn_engine *en, int n)
{
    const asn_model_config *c = &en->m->cfg;
    if (!c->n_rot)
        return;
    int half = c->n_rot / 2;
    for (int s = 0; s < 2; s++) {
        rope_set *r = &en->rope[s];
        if (n <= r->n)
            continue;
        r->base = s ? c->rope_base_swa : c->rope_base;
        r->freq_scale = s ? c->rope_freq_scale_swa : c->rope_freq_scale;
        r->cos = asn_xrealloc(r->cos, (size_t)n * half * sizeof(float));
        r->sin = asn_xrealloc(r->sin, (size_t)n * half * sizeof(float));
        rope_fill(en, r, r->n, n);
        r->n = n;
        if (!c->n_swa)
            break; /* no windowed layers: one table */
    }
}

void rope_free(asn_engine *en)
{
    for (int s = 0; s < 2; s++)
        free(en->rope[s].cos), free(en->rope[s].sin);
}

static void rope(const asn_model_config *c, const rope_set *r, float *v, int n_heads, int pos)
{
    int hd = c->head_dim, half = c->n_rot / 2;
    const float *cs = r->cos + (size_t)pos * half, *sn = r->sin + (size_t)pos * half;
    for (int h = 0; h < n_heads; h++) {
        float *x = v + (size_t)h * hd;
        for (int k = 0; k < half; k++) {
            int i0 = c->rope_neox ? k : 2 * k, i1 = c->rope_neox ? k + half : 2 * k + 1;
            float x0 = x[i0], x1 = x[i1];
            x[i0] = x0 * cs[k] - x1 * sn[k];
            x[i1] = x0 * sn[k] + x1 * cs[k];
        }
    }
}

/* RMS norm of each head of a row (q/k norms), in place. */
static void head_norm(float *v, int n_heads, int hd, const float *w, float eps)
{
    for (int h = 0; h < n_heads; h++)
        rmsnorm_row(v + (size_t)h * hd, v + (size_t)h * hd, w, hd, eps);
}

/* ---------------------------------------------------------- attention */

typedef struct attn_task {
    asn_engine *en;
    int layer, window; /* window: positions a token sees (0: all) */
} attn_task;

/* softmax_W: x[0..n) = softmax(cap * tanh(scale * x / cap)) (no cap when
 * 0), 16 positions at a time as 16 / W vectors of the target's native
 * width W (a wider vector would be split through memory, its compares
 * lane by lane): exp of asn/vexp.h, the maximum and the sum over 16
 * lane-wise partial results combined in one fixed tree. Every W gives the
 * same bits. Each pass takes whole chunks of 16 with constant-size copies,
 * then the rest padded with -inf. */
#define SM_PASS(W, BODY)                                                                          \
    do {                                                                                          \
        int j = 0;                                                                                \
        for (; j + 16 <= n; j += 16)                                                              \
            for (int q = 0; q < 16 / W; q++) {                                                    \
                memcpy(&v, x + j + q * W, sizeof v);                                              \
                BODY;                                                                             \
                memcpy(x + j + q * W, &v, sizeof v);                                              \
            }                                                                                     \
        if (j < n) {                                                                              \
            float pad[16];                                                                        \
            size_t k = (size_t)(n - j) * sizeof(float);                                           \
            for (int l = 0; l < 16; l++)                                                          \
                pad[l] = -INFINITY;                                                               \
            memcpy(pad, x + j, k);                                                                \
            for (int q = 0; q < 16 / W; q++) {                                                    \
                memcpy(&v, pad + q * W, sizeof v);                                                \
                BODY;                                                                             \
                memcpy(pad + q * W, &v, sizeof v);                                                \
            }                                                                                     \
            memcpy(x + j, pad, k);                                                                \
        }                                                                                         \
    } while (0)

#define SM_DEFINE(W)                                                                              \
    static inline __attribute__((always_inline)) void softmax_##W(float *x, int n, float scale,   \
                                                                  float cap)                      \
    {                                                                                             \
        v##W##f mx[16 / W], acc[16 / W], sc = splat##W(scale), v;                                 \
        for (int q = 0; q < 16 / W; q++)                                                          \
            mx[q] = splat##W(-INFINITY), acc[q] = splat##W(0.0f);                                 \
        SM_PASS(W, {                                                                              \
            v *= sc;                                                                              \
            if (cap > 0)                                                                          \
                for (int l = 0; l < W; l++)                                                       \
                    v[l] = cap * tanhf(v[l] / cap);                                               \
            mx[q] = sel##W(v > mx[q], v, mx[q]);                                                  \
        });                                                                                       \
        float m16[16], a16[16];                                                                   \
        memcpy(m16, mx, sizeof m16);                                                              \
        for (int w = 8; w >= 1; w /= 2)                                                           \
            for (int l = 0; l < w; l++)                                                           \
                m16[l] = m16[l + w] > m16[l] ? m16[l + w] : m16[l];                               \
        v##W##f m = splat##W(m16[0]);                                                             \
        SM_PASS(W, { v = exp##W(v - m); acc[q] += v; }); /* -inf (the padding) gives 0 */        \
        memcpy(a16, acc, sizeof a16);                                                             \
        for (int w = 8; w >= 1; w /= 2)                                                           \
            for (int l = 0; l < w; l++)                                                           \
                a16[l] += a16[l + w];                                                             \
        v##W##f sum = splat##W(a16[0]);                                                           \
        SM_PASS(W, v /= sum);                                                                     \
    }

SM_DEFINE(16)
SM_DEFINE(8)
SM_DEFINE(4)
#undef SM_PASS

/* pv_span_W: out[i * qd + d] = sum over j = j_lo..j_hi in order of
 * w[i][j] * v_j[d] for d < dn (<= 2 * W) and the ATT_GROUP tokens i (those
 * past nt are computed, not stored), where v_j is row j of the values from
 * element off on (rows are found page by page): two vectors of W lanes per
 * token in registers, W the target's native width (a wider GCC vector
 * would go through memory). Each lane sums in the same order whatever W,
 * so every width gives the same bits. pv_head_W: the chunks of one head,
 * full ones with constant sizes. */
#define PV_DEFINE(W, V)                                                                           \
    static inline __attribute__((always_inline)) void pv_span_##W(                                \
        const asn_engine *en, const seq *s, int layer, size_t off, const float *const *w, int j_lo, \
        int j_hi, int dn, float *out, int qd, int nt)                                             \
    {                                                                                             \
        size_t n0 = (size_t)(dn < W ? dn : W) * sizeof(float);                                    \
        size_t n1 = (size_t)(dn > W ? dn - W : 0) * sizeof(float);                                \
        V acc[ATT_GROUP][2];                                                                      \
        for (int i = 0; i < ATT_GROUP; i++)                                                       \
            acc[i][0] = acc[i][1] = (V){0};                                                       \
        for (int j0 = j_lo; j0 <= j_hi;) { /* a page at a time */                                 \
            int jn = (j0 / PAGE + 1) * PAGE <= j_hi ? (j0 / PAGE + 1) * PAGE : j_hi + 1;          \
            const float *vj = v_at(en, s, layer, j0) + off;                                       \
            for (int j = j0; j < jn; j++, vj += en->kvd) {                                        \
                V v0 = {0}, v1 = {0};                                                             \
                memcpy(&v0, vj, n0);                                                              \
                memcpy(&v1, vj + W, n1);                                                          \
                _Pragma("GCC unroll 8") for (int i = 0; i < ATT_GROUP; i++) {                     \
                    V wi = w[i][j] - (V){0}; /* a broadcast (x - 0 is x) */                       \
                    acc[i][0] += wi * v0;                                                         \
                    acc[i][1] += wi * v1;                                                         \
                }                                                                                 \
            }                                                                                     \
            j0 = jn;                                                                              \
        }                                                                                         \
        for (int i = 0; i < nt; i++) {                                                            \
            float o[2 * W];                                                                       \
            memcpy(o, &acc[i][0], sizeof(V)), memcpy(o + W, &acc[i][1], sizeof(V));              \
            memcpy(out + (size_t)i * qd, o, n0 + n1);                                             \
        }                                                                                         \
    }                                                                                             \
                                                                                                  \
    static inline __attribute__((always_inline)) void pv_head_##W(                                \
        const asn_engine *en, const seq *s, int layer, size_t off, const float *const *w, int j_lo, \
        int j_hi, int hd, float *out, int qd, int nt)                                             \
    {                                                                                             \
        for (int d0 = 0; d0 < hd; d0 += 2 * W) {                                                  \
            if (hd - d0 >= 2 * W)                                                                 \
                pv_span_##W(en, s, layer, off + d0, w, j_lo, j_hi, 2 * W, out + d0, qd, nt);      \
            else                                                                                  \
                pv_span_##W(en, s, layer, off + d0, w, j_lo, j_hi, hd - d0, out + d0, qd, nt);    \
        }                                                                                         \
    }

PV_DEFINE(16, v16f)
PV_DEFINE(8, v8f)
PV_DEFINE(4, v4f)

/* One copy per instruction set (attn_run), W its native vector width: the
 * loops over positions and head dimensions are element-wise (no reduction
 * changes order with the vector width, and multiply-adds are not fused in
 * this file), so every copy gives the same bits.
 *
 * A job is one head of a group of up to ATT_GROUP consecutive tokens of
 * one sequence (a prompt's tokens in prefill): their scores against each
 * KV page are sixteen dot products a token, the group's tokens sharing
 * each load of the page's transposed keys (asn_dot_cols16), and each V row
 * is loaded once for all of them. A token's results do not depend on its
 * group: each score is asn/linalg.h's fixed-order dot product, each output
 * sums its visible positions in order. */
static inline __attribute__((always_inline)) void attn_body(void *arg, int ith, int nth, int W)
{
    attn_task *a = arg;
    asn_engine *en = a->en;
    const asn_model_config *c = &en->m->cfg;
    int hd = c->head_dim, group = c->n_head / c->n_head_kv, qd = c->n_head * hd;
    float scale = c->attn_scale, cap = c->attn_softcap;
    /* score row of each token of the group, whole pages */
    size_t ld = ((size_t)en->n_ctx + PAGE - 1) / PAGE * PAGE;
    float *scores = asn_pool_scratch(en->pool, ith, ATT_GROUP * ld * sizeof(float));
    /* jobs dealt out in turn: in a prompt the later groups see more
     * positions, so contiguous halves would give one thread most of the work */
    for (int job = ith; job < en->n_grp * c->n_head; job += nth) {
        int g = job / c->n_head, h = job % c->n_head, kvh = h / group;
        int t0 = en->grp[g], nt = en->grp[g + 1] - t0;
        const seq *s = &en->seqs[en->tok_seq[t0]];
        int first = en->tok_pos[t0];
        /* token i sees positions [from_i, to_i] */
        int from[ATT_GROUP], to[ATT_GROUP];
        for (int i = 0; i < ATT_GROUP; i++) {
            int p = first + (i < nt ? i : nt - 1);
            to[i] = c->causal ? p : en->grp_end[g] - 1;
            from[i] = a->window && p - a->window + 1 > 0 ? p - a->window + 1 : 0;
        }
        int j_lo = from[0], j_hi = to[nt - 1];
        /* scores a page (16 positions) at a time, all tokens of the group
         * (a token's positions outside its own range are computed, never used) */
        for (int j0 = j_lo / PAGE * PAGE; j0 <= j_hi; j0 += PAGE) {
            const float *kt = k_page(en, s, a->layer, j0) + (size_t)kvh * hd * PAGE;
            asn_dot_cols16(en->q + (size_t)t0 * qd + (size_t)h * hd, qd, nt, hd, kt, scores + j0, (int)ld);
        }
        for (int i = 0; i < nt; i++) {
            float *x = scores + i * ld + from[i];
            int n = to[i] - from[i] + 1;
            if (W == 16)
                softmax_16(x, n, scale, cap);
            else if (W == 8)
                softmax_8(x, n, scale, cap);
            else
                softmax_4(x, n, scale, cap);
        }
        /* a token's weights outside its range are zero: every token of
         * the group then runs over the same positions, without a branch,
         * and gets the same sums (the accumulators start at +0 and never
         * become -0, so adding a zero product changes nothing) */
        for (int i = 0; i < nt; i++) {
            float *w = scores + i * ld;
            for (int j = j_lo; j < from[i]; j++)
                w[j] = 0.0f;
            for (int j = to[i] + 1; j <= j_hi; j++)
                w[j] = 0.0f;
        }
        const float *wr[ATT_GROUP];
        for (int i = 0; i < ATT_GROUP; i++)
            wr[i] = scores + (i < nt ? i : nt - 1) * ld;
        float *out = en->att + (size_t)t0 * qd + (size_t)h * hd;
        if (W == 16)
            pv_head_16(en, s, a->layer, (size_t)kvh * hd, wr, j_lo, j_hi, hd, out, qd, nt);
        else if (W == 8)
            pv_head_8(en, s, a->layer, (size_t)kvh * hd, wr, j_lo, j_hi, hd, out, qd, nt);
        else
            pv_head_4(en, s, a->layer, (size_t)kvh * hd, wr, j_lo, j_hi, hd, out, qd, nt);
    }
}

/* One copy of attn_body per instruction-set level, chosen by asn/cpu.h,
 * each with its native vector width. */
#if defined(__x86_64__)
__attribute__((target("arch=x86-64-v4"))) static void attn_v4(void *arg, int ith, int nth) { attn_body(arg, ith, nth, 16); }
__attribute__((target("arch=x86-64-v3"))) static void attn_v3(void *arg, int ith, int nth) { attn_body(arg, ith, nth, 8); }
#endif
static void attn_base(void *arg, int ith, int nth) { attn_body(arg, ith, nth, 4); }

static void attn_run(void *arg, int ith, int nth)
{
#if defined(__x86_64__)
    if (asn_cpu_has(ASN_CPU_V4))
        attn_v4(arg, ith, nth);
    else if (asn_cpu_has(ASN_CPU_V3))
        attn_v3(arg, ith, nth);
    else
#endif
        attn_base(arg, ith, nth);
}

void blk_attention(const fwd *f, const layer_w *L, int l, const float *in, float *out)
{
    asn_engine *en = f->en;
    const asn_model_config *c = &f->m->cfg;
    const int T = f->T, qd = c->n_head * c->head_dim, kvd = en->kvd;
    if (L->wqkv.data) { /* one product, then the rows split into q, k, v */
        int w = qd + 2 * kvd;
        blk_matmul(en, in, T, &L->wqkv, NULL, en->g);
        for (int r = 0; r < T; r++) {
            const float *row = en->g + (size_t)r * w;
            memcpy(en->q + (size_t)r * qd, row, (size_t)qd * sizeof(float));
            memcpy(en->k + (size_t)r * kvd, row + qd, (size_t)kvd * sizeof(float));
            memcpy(en->v + (size_t)r * kvd, row + qd + kvd, (size_t)kvd * sizeof(float));
        }
    } else {
        blk_matmul(en, in, T, &L->wq, L->bq, en->q);
        blk_matmul(en, in, T, &L->wk, L->bk, en->k);
        blk_matmul(en, in, T, &L->wv, L->bv, en->v);
    }
    int windowed = layer_windowed(c, l);
    const rope_set *rs = &en->rope[windowed && c->n_rot ? 1 : 0];
    for (int r = 0; r < T; r++) {
        float *q = en->q + (size_t)r * qd, *k = en->k + (size_t)r * kvd;
        if (L->q_norm)
            head_norm(q, c->n_head, c->head_dim, L->q_norm, c->rms_eps);
        if (L->k_norm)
            head_norm(k, c->n_head_kv, c->head_dim, L->k_norm, c->rms_eps);
        if (c->n_rot) {
            rope(c, rs, q, c->n_head, en->tok_pos[r]);
            rope(c, rs, k, c->n_head_kv, en->tok_pos[r]);
        }
        const seq *s = &en->seqs[en->tok_seq[r]];
        float *kt = k_page(en, s, l, en->tok_pos[r]) + en->tok_pos[r] % PAGE;
        for (int d = 0; d < kvd; d++)
            kt[(size_t)d * PAGE] = k[d];
        memcpy(v_at(en, s, l, en->tok_pos[r]), en->v + (size_t)r * kvd, (size_t)kvd * sizeof(float));
    }
    attn_task at = {en, l, windowed ? c->n_swa : 0};
    asn_pool_run(en->pool, attn_run, &at);
    blk_matmul(en, en->att, T, &L->wo, L->bo, out);
}
