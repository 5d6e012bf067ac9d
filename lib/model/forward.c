/* forward.c — the multi-sequence engine: a paged KV cache whose pages are
 * shared between a sequence and the sequences forked from it (copied on
 * first write), and the batched transformer forward pass over every new
 * token of every sequence in a batch:
 *
 *   x = embed(tokens)
 *   per layer:  h = rmsnorm(x) * w_attn_norm
 *               q, k, v = h Wq^T (+bq), h Wk^T (+bk), h Wv^T (+bv); rope(q, k)
 *               x += attention(q, cached k, v) Wo^T       (causal, GQA)
 *               h = rmsnorm(x) * w_ffn_norm
 *               x += (silu(h Wgate^T) * (h Wup^T)) Wdown^T
 *   logits = (rmsnorm(x) * w_out_norm) Wout^T
 *
 * Every step reads only the token's own row and its own sequence's cache,
 * in a fixed order, so a sequence's results do not depend on its batch. */
#include "model_internal.h"
#include "asn/linalg.h"
#include "asn/vexp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { PAGE = 16 }; /* positions per KV page */
enum { ATT_GROUP = 4 }; /* tokens of one sequence that attention handles together (attn_run
                          * is written for 4) */

typedef struct seq {
    int used, len;
    int *pages;
    int npages, cap;
} seq;

struct asn_engine {
    const asn_model *m;
    asn_pool *pool;
    int exact; /* quantized weights dequantized to f32 (asn_matmul) */
    int n_ctx, kvd;
    size_t page_floats; /* n_layer * 2 * PAGE * kvd */
    float **page;
    int *ref;
    int n_pages;
    int *free_pages, n_free;
    seq *seqs;
    int n_seqs;
    /* rope table: cos/sin for positions [0, rope_n) */
    float *rope_cos, *rope_sin;
    int rope_n;
    /* per-token scratch, grown to the largest batch */
    size_t cap_tokens;
    float *x, *h, *q, *k, *v, *att, *g, *u;
    int *tok_seq, *tok_pos;
    int *grp, n_grp; /* attention groups: first token of each (see attn_run) */
    float *logits; /* rows of the LM head's output */
    size_t cap_logits;
};

/* ----------------------------------------------------------- KV pages */

static int page_alloc(asn_engine *en)
{
    int p;
    if (en->n_free) {
        p = en->free_pages[--en->n_free];
    } else {
        p = en->n_pages++;
        en->page = asn_xrealloc(en->page, (size_t)en->n_pages * sizeof *en->page);
        en->ref = asn_xrealloc(en->ref, (size_t)en->n_pages * sizeof *en->ref);
        en->free_pages = asn_xrealloc(en->free_pages, (size_t)en->n_pages * sizeof *en->free_pages);
        en->page[p] = asn_xmalloc(en->page_floats * sizeof(float));
    }
    en->ref[p] = 1;
    return p;
}

static void page_release(asn_engine *en, int p)
{
    if (--en->ref[p] == 0)
        en->free_pages[en->n_free++] = p;
}

static float *kv_at(const asn_engine *en, const seq *s, int layer, int which, int pos)
{
    float *pg = en->page[s->pages[pos / PAGE]];
    return pg + (((size_t)layer * 2 + (size_t)which) * PAGE + (size_t)(pos % PAGE)) * (size_t)en->kvd;
}

/* Makes positions [s->len, s->len + n) writable: a shared partial page is
 * copied, new pages are added. */
static void reserve(asn_engine *en, seq *s, int n)
{
    if (s->len % PAGE && en->ref[s->pages[s->len / PAGE]] > 1) {
        int old = s->pages[s->len / PAGE], p = page_alloc(en);
        memcpy(en->page[p], en->page[old], en->page_floats * sizeof(float));
        page_release(en, old);
        s->pages[s->len / PAGE] = p;
    }
    int need = (s->len + n + PAGE - 1) / PAGE;
    if (s->cap < need) {
        s->cap = need * 2;
        s->pages = asn_xrealloc(s->pages, (size_t)s->cap * sizeof *s->pages);
    }
    while (s->npages < need)
        s->pages[s->npages++] = page_alloc(en);
}

/* ------------------------------------------------------------- engine */

asn_engine *asn_engine_new(const asn_model *m, int n_ctx, asn_pool *pool, asn_err *e)
{
    const asn_model_config *c = &m->cfg;
    if (n_ctx <= 0)
        n_ctx = c->n_ctx_train;
    if (n_ctx <= 0) {
        asn_err_set(e, "%s: context size must be positive", m->path);
        return NULL;
    }
    asn_engine *en = asn_xcalloc(1, sizeof *en);
    en->m = m;
    en->pool = pool;
    const char *ex = getenv("ASN_EXACT_MATMUL");
    en->exact = ex && *ex && strcmp(ex, "0");
    en->n_ctx = n_ctx;
    en->kvd = c->n_head_kv * c->head_dim;
    en->page_floats = (size_t)c->n_layer * 2 * PAGE * (size_t)en->kvd;
    return en;
}

void asn_engine_set_exact(asn_engine *en, int exact)
{
    en->exact = exact;
}

void asn_engine_free(asn_engine *en)
{
    if (!en)
        return;
    for (int i = 0; i < en->n_pages; i++)
        free(en->page[i]);
    free(en->page);
    free(en->ref);
    free(en->free_pages);
    for (int i = 0; i < en->n_seqs; i++)
        free(en->seqs[i].pages);
    free(en->seqs);
    free(en->rope_cos);
    free(en->rope_sin);
    free(en->x), free(en->h), free(en->q), free(en->k), free(en->v);
    free(en->att), free(en->g), free(en->u);
    free(en->tok_seq), free(en->tok_pos), free(en->grp);
    free(en->logits);
    free(en);
}

int asn_seq_new(asn_engine *en)
{
    int id = 0;
    while (id < en->n_seqs && en->seqs[id].used)
        id++;
    if (id == en->n_seqs) {
        en->seqs = asn_xrealloc(en->seqs, (size_t)(en->n_seqs + 1) * sizeof *en->seqs);
        en->seqs[en->n_seqs++] = (seq){0};
    }
    seq *s = &en->seqs[id];
    s->used = 1;
    s->len = 0;
    s->npages = 0;
    return id;
}

int asn_seq_fork(asn_engine *en, int parent)
{
    int id = asn_seq_new(en);
    seq *s = &en->seqs[id], *p = &en->seqs[parent];
    if (s->cap < p->npages) {
        s->pages = asn_xrealloc(s->pages, (size_t)p->npages * sizeof *s->pages);
        s->cap = p->npages;
    }
    for (int i = 0; i < p->npages; i++) {
        s->pages[i] = p->pages[i];
        en->ref[p->pages[i]]++;
    }
    s->npages = p->npages;
    s->len = p->len;
    return id;
}

void asn_seq_free(asn_engine *en, int id)
{
    seq *s = &en->seqs[id];
    for (int i = 0; i < s->npages; i++)
        page_release(en, s->pages[i]);
    s->npages = 0;
    s->len = 0;
    s->used = 0;
}

int asn_seq_len(const asn_engine *en, int id) { return en->seqs[id].len; }

/* --------------------------------------------------------------- math */

static void rmsnorm(float *out, const float *x, const float *w, int d, float eps)
{
    double ss = 0;
    for (int i = 0; i < d; i++)
        ss += (double)x[i] * (double)x[i];
    float scale = (float)(1.0 / sqrt(ss / d + (double)eps));
    for (int i = 0; i < d; i++)
        out[i] = (x[i] * scale) * w[i];
}

/* cos/sin of every rotary pair's angle for positions < n, in double. */
static void rope_table(asn_engine *en, int n)
{
    const asn_model_config *c = &en->m->cfg;
    if (n <= en->rope_n)
        return;
    int half = c->n_rot / 2;
    en->rope_cos = asn_xrealloc(en->rope_cos, (size_t)n * half * sizeof(float));
    en->rope_sin = asn_xrealloc(en->rope_sin, (size_t)n * half * sizeof(float));
    for (int p = en->rope_n; p < n; p++)
        for (int k = 0; k < half; k++) {
            double theta = p * pow((double)c->rope_base, -2.0 * k / c->n_rot) * (double)c->rope_freq_scale;
            if (en->m->rope_freqs)
                theta /= (double)en->m->rope_freqs[k];
            en->rope_cos[(size_t)p * half + k] = (float)cos(theta);
            en->rope_sin[(size_t)p * half + k] = (float)sin(theta);
        }
    en->rope_n = n;
}

static void rope(const asn_engine *en, float *v, int n_heads, int pos)
{
    const asn_model_config *c = &en->m->cfg;
    int hd = c->head_dim, half = c->n_rot / 2;
    const float *cs = en->rope_cos + (size_t)pos * half, *sn = en->rope_sin + (size_t)pos * half;
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

/* One layer's attention over the batch's groups (en->grp). */
typedef struct attn_task {
    asn_engine *en;
    int layer;
} attn_task;

/* x[0..n) = softmax(scale * x), 16 positions at a time: exp of asn/vexp.h,
 * the sum over 16 lane-wise partial sums added in a fixed tree. Inlined
 * into attn_run's clones; every clone gives the same bits. */
static inline __attribute__((always_inline)) void softmax(float *x, int n, float scale)
{
    v16f mx = splat16(-INFINITY), sc = splat16(scale), v;
    for (int j = 0; j < n; j += 16) {
        size_t k = (size_t)(n - j < 16 ? n - j : 16) * sizeof(float);
        v = splat16(-INFINITY);
        memcpy(&v, x + j, k);
        v *= sc;
        memcpy(x + j, &v, k);
        mx = sel16(v > mx, v, mx);
    }
    for (int w = 8; w >= 1; w /= 2)
        for (int l = 0; l < w; l++)
            mx[l] = mx[l + w] > mx[l] ? mx[l + w] : mx[l];
    v16f acc = {0}, m = splat16(mx[0]);
    for (int j = 0; j < n; j += 16) {
        size_t k = (size_t)(n - j < 16 ? n - j : 16) * sizeof(float);
        v = splat16(-INFINITY);
        memcpy(&v, x + j, k);
        v = exp16(v - m); /* -inf (the padding) gives 0 */
        memcpy(x + j, &v, k);
        acc += v;
    }
    for (int w = 8; w >= 1; w /= 2)
        for (int l = 0; l < w; l++)
            acc[l] += acc[l + w];
    v16f sum = splat16(acc[0]);
    for (int j = 0; j < n; j += 16) {
        size_t k = (size_t)(n - j < 16 ? n - j : 16) * sizeof(float);
        memcpy(&v, x + j, k);
        v /= sum;
        memcpy(x + j, &v, k);
    }
}

/* Cloned per instruction set: the loops over positions and head
 * dimensions are element-wise (no reduction changes order with the vector
 * width, and multiply-adds are not fused in this file), so every clone
 * gives the same bits.
 *
 * A job is one head of a group of up to ATT_GROUP consecutive tokens of
 * one sequence (a prompt's tokens in prefill): their scores against each
 * KV page are one small matrix product, and each V row is loaded once for
 * all of them. A token's results do not depend on its group: each score is
 * asn/linalg.h's fixed-order dot product, each output sums its positions in
 * order. */
#if defined(__x86_64__)
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
static void attn_run(void *arg, int ith, int nth)
{
    attn_task *a = arg;
    asn_engine *en = a->en;
    const asn_model_config *c = &en->m->cfg;
    int hd = c->head_dim, group = c->n_head / c->n_head_kv, qd = c->n_head * hd;
    float scale = 1.0f / sqrtf((float)hd);
    size_t ld = (size_t)en->n_ctx; /* score row of each token of the group */
    float *scores = asn_pool_scratch(en->pool, ith, ATT_GROUP * ld * sizeof(float));
    int lo, hi;
    asn_split(en->n_grp * c->n_head, ith, nth, 1, &lo, &hi);
    for (int job = lo; job < hi; job++) {
        int g = job / c->n_head, h = job % c->n_head, kvh = h / group;
        int t0 = en->grp[g], nt = en->grp[g + 1] - t0;
        const seq *s = &en->seqs[en->tok_seq[t0]];
        int first = en->tok_pos[t0], last = en->tok_pos[t0 + nt - 1];
        /* scores a page (16 positions) at a time, all tokens of the group
         * (a token's positions past its own are computed, never used) */
        for (int j0 = 0; j0 <= last; j0 += PAGE) {
            int nj = last + 1 - j0 < PAGE ? last + 1 - j0 : PAGE;
            asn_matmul_f32(en->q + (size_t)t0 * qd + (size_t)h * hd, nt, qd, hd,
                           kv_at(en, s, a->layer, 0, j0) + (size_t)kvh * hd, en->kvd, nj, scores + j0, (int)ld);
        }
        for (int i = 0; i < nt; i++)
            softmax(scores + i * ld, first + i + 1, scale);
        /* out[d] = sum over j in order of w_j * v_j[d], 32 dimensions of
         * every token of the group at a time in registers; token i sees
         * positions up to first + i */
        for (int d0 = 0; d0 < hd; d0 += 32) {
            /* accumulators as variables, not an array, so they stay in
             * registers; ATT_GROUP = 4 */
            v16f a00 = {0}, a01 = {0}, a10 = {0}, a11 = {0}, a20 = {0}, a21 = {0}, a30 = {0}, a31 = {0};
            int dn = hd - d0 < 32 ? hd - d0 : 32;
            size_t n0 = (size_t)(dn < 16 ? dn : 16) * sizeof(float), n1 = (size_t)(dn - 16 > 0 ? dn - 16 : 0) * sizeof(float);
            const float *w0 = scores, *w1 = scores + ld, *w2 = scores + 2 * ld, *w3 = scores + 3 * ld;
            for (int j = 0; j <= last; j++) {
                const float *vj = kv_at(en, s, a->layer, 1, j) + (size_t)kvh * hd + d0;
                v16f v0 = {0}, v1 = {0}, w;
                memcpy(&v0, vj, n0);
                memcpy(&v1, vj + 16, n1);
#define ATT_ACC(I)                                                                                \
    if (I < nt && j <= first + I) {                                                               \
        w = (v16f){0} + w##I[j]; /* broadcast */                                                  \
        a##I##0 += w * v0;                                                                        \
        a##I##1 += w * v1;                                                                        \
    }
                ATT_ACC(0) ATT_ACC(1) ATT_ACC(2) ATT_ACC(3)
#undef ATT_ACC
            }
            float *out = en->att + (size_t)t0 * qd + (size_t)h * hd + d0;
#define ATT_OUT(I)                                                                                \
    if (I < nt) {                                                                                 \
        float o_[32];                                                                             \
        memcpy(o_, &a##I##0, 64), memcpy(o_ + 16, &a##I##1, 64);                                  \
        memcpy(out + (size_t)I * qd, o_, n0 + n1);                                                \
    }
            ATT_OUT(0) ATT_OUT(1) ATT_OUT(2) ATT_OUT(3)
#undef ATT_OUT
        }
    }
}

static void grow_scratch(asn_engine *en, size_t T)
{
    if (T <= en->cap_tokens)
        return;
    const asn_model_config *c = &en->m->cfg;
    size_t d = (size_t)c->n_embd, qd = (size_t)c->n_head * c->head_dim, ff = (size_t)c->n_ff;
    size_t wide = ff > qd ? ff : qd;
    wide = wide > d ? wide : d;
    en->x = asn_xrealloc(en->x, T * d * sizeof(float));
    en->h = asn_xrealloc(en->h, T * wide * sizeof(float));
    en->q = asn_xrealloc(en->q, T * qd * sizeof(float));
    en->k = asn_xrealloc(en->k, T * (size_t)en->kvd * sizeof(float));
    en->v = asn_xrealloc(en->v, T * (size_t)en->kvd * sizeof(float));
    en->att = asn_xrealloc(en->att, T * qd * sizeof(float));
    en->g = asn_xrealloc(en->g, T * ff * sizeof(float));
    en->u = asn_xrealloc(en->u, T * ff * sizeof(float));
    en->tok_seq = asn_xrealloc(en->tok_seq, T * sizeof(int));
    en->grp = asn_xrealloc(en->grp, (T + 1) * sizeof(int));
    en->tok_pos = asn_xrealloc(en->tok_pos, T * sizeof(int));
    en->cap_tokens = T;
}

static void matmul(asn_engine *en, const float *X, int T, const wmat *w, const float *bias, float *Y)
{
    if (!en->exact && asn_qmatmul_supported(w->type, w->cols))
        asn_qmatmul(en->pool, X, T, w->cols, w->cols, w->data, w->type, w->rows, bias, Y, w->rows);
    else
        asn_matmul(en->pool, X, T, w->cols, w->cols, w->data, w->type, w->rows, bias, Y, w->rows);
}

/* ------------------------------------------------------------- decode */

int asn_engine_decode(asn_engine *en, const asn_batch_item *items, int n_items, asn_err *e)
{
    const asn_model *m = en->m;
    const asn_model_config *c = &m->cfg;
    size_t T = 0;
    int max_pos = 0;
    for (int i = 0; i < n_items; i++) {
        const asn_batch_item *it = &items[i];
        if (it->seq < 0 || it->seq >= en->n_seqs || !en->seqs[it->seq].used)
            return asn_err_set(e, "batch item %d: no sequence %d", i, it->seq);
        for (int j = 0; j < i; j++)
            if (items[j].seq == it->seq)
                return asn_err_set(e, "batch item %d: sequence %d appears twice", i, it->seq);
        if (it->n <= 0)
            return asn_err_set(e, "batch item %d: no tokens", i);
        int len = en->seqs[it->seq].len;
        if (len + it->n > en->n_ctx)
            return asn_err_set(e, "sequence of %d tokens exceeds the context of %d", len + it->n, en->n_ctx);
        for (int j = 0; j < it->n; j++)
            if (it->tokens[j] < 0 || it->tokens[j] >= c->n_vocab)
                return asn_err_set(e, "token id %d out of range [0, %d)", it->tokens[j], c->n_vocab);
        T += (size_t)it->n;
        if (len + it->n > max_pos)
            max_pos = len + it->n;
    }
    if (!T)
        return 0;
    grow_scratch(en, T);
    rope_table(en, max_pos);
    size_t t = 0;
    for (int i = 0; i < n_items; i++) {
        seq *s = &en->seqs[items[i].seq];
        reserve(en, s, items[i].n);
        for (int j = 0; j < items[i].n; j++, t++) {
            en->tok_seq[t] = items[i].seq;
            en->tok_pos[t] = s->len + j;
        }
    }
    /* attention groups: up to ATT_GROUP consecutive tokens of one item */
    en->n_grp = 0;
    t = 0;
    for (int i = 0; i < n_items; t += (size_t)items[i].n, i++)
        for (int j = 0; j < items[i].n; j += ATT_GROUP)
            en->grp[en->n_grp++] = (int)t + j;
    en->grp[en->n_grp] = (int)t;
    const int d = c->n_embd, qd = c->n_head * c->head_dim, kvd = en->kvd, ff = c->n_ff;
    const size_t row_bytes = asn_ttype_row_bytes(m->tok_embd.type, d);
    t = 0;
    for (int i = 0; i < n_items; i++)
        for (int j = 0; j < items[i].n; j++, t++)
            asn_dequantize_row(m->tok_embd.type,
                               (const uint8_t *)m->tok_embd.data + (size_t)items[i].tokens[j] * row_bytes,
                               en->x + t * d, d);

    for (int l = 0; l < c->n_layer; l++) {
        const layer_w *L = &m->layers[l];
        for (size_t r = 0; r < T; r++)
            rmsnorm(en->h + r * d, en->x + r * d, L->attn_norm, d, c->rms_eps);
        matmul(en, en->h, (int)T, &L->wq, L->bq, en->q);
        matmul(en, en->h, (int)T, &L->wk, L->bk, en->k);
        matmul(en, en->h, (int)T, &L->wv, L->bv, en->v);
        for (size_t r = 0; r < T; r++) {
            rope(en, en->q + r * qd, c->n_head, en->tok_pos[r]);
            rope(en, en->k + r * kvd, c->n_head_kv, en->tok_pos[r]);
            const seq *s = &en->seqs[en->tok_seq[r]];
            memcpy(kv_at(en, s, l, 0, en->tok_pos[r]), en->k + r * kvd, (size_t)kvd * sizeof(float));
            memcpy(kv_at(en, s, l, 1, en->tok_pos[r]), en->v + r * kvd, (size_t)kvd * sizeof(float));
        }
        attn_task at = {en, l};
        asn_pool_run(en->pool, attn_run, &at);
        matmul(en, en->att, (int)T, &L->wo, NULL, en->h);
        for (size_t r = 0; r < T * (size_t)d; r++)
            en->x[r] += en->h[r];
        for (size_t r = 0; r < T; r++)
            rmsnorm(en->h + r * d, en->x + r * d, L->ffn_norm, d, c->rms_eps);
        matmul(en, en->h, (int)T, &L->gate, NULL, en->g);
        matmul(en, en->h, (int)T, &L->up, NULL, en->u);
        for (size_t r = 0; r < T * (size_t)ff; r++) {
            float gv = en->g[r];
            en->g[r] = gv / (1.0f + expf(-gv)) * en->u[r];
        }
        matmul(en, en->g, (int)T, &L->down, NULL, en->h);
        for (size_t r = 0; r < T * (size_t)d; r++)
            en->x[r] += en->h[r];
    }

    /* outputs: the final norm of the rows asked for, then one LM-head
     * product over all of them (the head is read once per step) */
    size_t n_out = 0;
    t = 0;
    for (int i = 0; i < n_items; i++) {
        const asn_batch_item *it = &items[i];
        size_t first = t, n = (size_t)it->n;
        t += n;
        if (it->embed) {
            for (size_t r = first; r < first + n; r++)
                rmsnorm(en->h + r * d, en->x + r * d, m->output_norm, d, c->rms_eps);
            for (int k = 0; k < d; k++) {
                double acc = 0;
                for (size_t r = first; r < first + n; r++)
                    acc += en->h[r * d + k];
                it->embed[k] = (float)(acc / (double)n);
            }
        }
        if (it->logits) {
            size_t from = it->all_logits ? first : first + n - 1;
            for (size_t r = from; r < first + n; r++, n_out++) /* n_out <= r: in place is safe */
                rmsnorm(en->h + n_out * d, en->x + r * d, m->output_norm, d, c->rms_eps);
        }
    }
    if (n_out) {
        size_t V = (size_t)c->n_vocab;
        if (n_out * V > en->cap_logits) {
            en->logits = asn_xrealloc(en->logits, n_out * V * sizeof(float));
            en->cap_logits = n_out * V;
        }
        matmul(en, en->h, (int)n_out, &m->output, NULL, en->logits);
        size_t o = 0;
        for (int i = 0; i < n_items; i++) {
            if (!items[i].logits)
                continue;
            size_t rows = items[i].all_logits ? (size_t)items[i].n : 1;
            memcpy(items[i].logits, en->logits + o * V, rows * V * sizeof(float));
            o += rows;
        }
    }
    for (int i = 0; i < n_items; i++)
        en->seqs[items[i].seq].len += items[i].n;
    return 0;
}
