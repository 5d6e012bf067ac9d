/* forward.c — the multi-sequence engine: a paged KV cache whose pages are
 * shared between a sequence and the sequences forked from it (copied on
 * first write), and the batched forward pass over every new token of every
 * sequence in a batch:
 *
 *   x = embed(tokens)                  (scaled; + positions, types, norm: bert)
 *   per layer: the architecture's layer function (arch_*.c)
 *   logits = final_norm(x) Wout^T      (soft-capped: gemma2)
 *   embed  = mean of final_norm(x) over the item
 *   cls    = cls_out(tanh(cls pooled + b)) + b
 *
 * Every step reads only the token's own row and its own sequence's cache,
 * in a fixed order, so a sequence's results do not depend on its batch. */
#include "engine.h"
#include "asn/linalg.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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
    if (m->w.pos_embd.data && n_ctx > c->n_ctx_train) {
        asn_err_set(e, "%s: context %d exceeds the %d learned positions", m->path, n_ctx, c->n_ctx_train);
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
    en->rope_div = m->w.rope_freqs;
    if (m->w.rope_long) /* longrope: the long factors past the original context */
        en->rope_div = n_ctx > c->n_ctx_orig ? m->w.rope_long : m->w.rope_short;
    return en;
}

const asn_model *asn_engine_model(const asn_engine *en) { return en->m; }

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
    rope_free(en);
    free(en->x), free(en->h), free(en->o), free(en->q), free(en->k), free(en->v);
    free(en->att), free(en->g), free(en->u);
    free(en->tok_seq), free(en->tok_pos), free(en->grp), free(en->grp_end);
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

static void grow_scratch(asn_engine *en, size_t T)
{
    if (T <= en->cap_tokens)
        return;
    const asn_model_config *c = &en->m->cfg;
    size_t d = (size_t)c->n_embd, qd = (size_t)c->n_head * c->head_dim, ff = (size_t)c->n_ff;
    size_t wide = 2 * ff > qd + 2 * (size_t)en->kvd ? 2 * ff : qd + 2 * (size_t)en->kvd; /* fused products */
    en->x = asn_xrealloc(en->x, T * d * sizeof(float));
    en->h = asn_xrealloc(en->h, T * d * sizeof(float));
    en->o = asn_xrealloc(en->o, T * d * sizeof(float));
    en->q = asn_xrealloc(en->q, T * qd * sizeof(float));
    en->k = asn_xrealloc(en->k, T * (size_t)en->kvd * sizeof(float));
    en->v = asn_xrealloc(en->v, T * (size_t)en->kvd * sizeof(float));
    en->att = asn_xrealloc(en->att, T * qd * sizeof(float));
    en->g = asn_xrealloc(en->g, T * wide * sizeof(float));
    en->u = asn_xrealloc(en->u, T * (ff > d ? ff : d) * sizeof(float)); /* also the pooled state */
    en->tok_seq = asn_xrealloc(en->tok_seq, T * sizeof(int));
    en->grp = asn_xrealloc(en->grp, (T + 1) * sizeof(int));
    en->grp_end = asn_xrealloc(en->grp_end, (T + 1) * sizeof(int));
    en->tok_pos = asn_xrealloc(en->tok_pos, T * sizeof(int));
    en->cap_tokens = T;
}

/* ------------------------------------------------------------ embed */

/* x = token embedding * scale (+ token type 0 + learned position, then
 * layer norm, when the model has them: bert). */
static void embed_tokens(const fwd *f, const asn_batch_item *items, int n_items)
{
    const asn_model *m = f->m;
    const asn_model_config *c = &m->cfg;
    const int d = f->d;
    const size_t row_bytes = asn_ttype_row_bytes(m->w.tok_embd.type, d);
    float *tmp = f->o;
    size_t t = 0;
    for (int i = 0; i < n_items; i++)
        for (int j = 0; j < items[i].n; j++, t++) {
            float *x = f->x + t * d;
            asn_dequantize_row(m->w.tok_embd.type,
                               (const uint8_t *)m->w.tok_embd.data + (size_t)items[i].tokens[j] * row_bytes, x, d);
            if (c->embed_scale != 1.0f)
                for (int k = 0; k < d; k++)
                    x[k] *= c->embed_scale;
            if (m->w.type_embd.data) {
                asn_dequantize_row(m->w.type_embd.type, m->w.type_embd.data, tmp, d);
                for (int k = 0; k < d; k++)
                    x[k] += tmp[k];
            }
            if (m->w.pos_embd.data) {
                size_t pb = asn_ttype_row_bytes(m->w.pos_embd.type, d);
                asn_dequantize_row(m->w.pos_embd.type,
                                   (const uint8_t *)m->w.pos_embd.data + (size_t)f->en->tok_pos[t] * pb, tmp, d);
                for (int k = 0; k < d; k++)
                    x[k] = tmp[k] + x[k];
            }
        }
    if (m->w.tok_norm)
        blk_layernorm(f, f->x, f->x, m->w.tok_norm, m->w.tok_norm_b);
}

/* ----------------------------------------------------------- outputs */

/* The final norm of rows [from, from + n) of x into out (a copy when the
 * model has none: bert). */
static void final_norm(const fwd *f, float *out, const float *x, size_t n)
{
    const asn_model *m = f->m;
    fwd rows = *f;
    rows.T = (int)n;
    if (!m->w.output_norm)
        memmove(out, x, n * (size_t)f->d * sizeof(float));
    else if (m->arch->norm == NORM_LAYER)
        blk_layernorm(&rows, out, x, m->w.output_norm, m->w.output_norm_b);
    else
        blk_rmsnorm(&rows, out, x, m->w.output_norm);
}

/* The classification head over one pooled, normalized state h (n_embd,
 * overwritten): cls_out(tanh(cls h + b)) + b, n_cls_out values. */
static void cls_head(asn_engine *en, float *h, float *out)
{
    const model_w *w = &en->m->w;
    int d = en->m->cfg.n_embd;
    if (w->cls.data) {
        float *t = en->o;
        blk_matmul(en, h, 1, &w->cls, w->cls_b, t);
        for (int k = 0; k < d; k++)
            h[k] = tanhf(t[k]);
    }
    blk_matmul(en, h, 1, &w->cls_out, w->cls_out_b, out);
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
        if (it->logits && !m->w.output.data)
            return asn_err_set(e, "%s: the model has no language-model head (logits)", m->path);
        if (it->cls && !c->n_cls_out)
            return asn_err_set(e, "%s: the model has no classification head (cls.output)", m->path);
        T += (size_t)it->n;
        if (len + it->n > max_pos)
            max_pos = len + it->n;
    }
    if (!T)
        return 0;
    grow_scratch(en, T);
    rope_tables(en, max_pos);
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
        for (int j = 0; j < items[i].n; j += ATT_GROUP) {
            en->grp_end[en->n_grp] = en->seqs[items[i].seq].len + items[i].n;
            en->grp[en->n_grp++] = (int)t + j;
        }
    en->grp[en->n_grp] = (int)t;

    const int d = c->n_embd;
    fwd f = {en, m, (int)T, d, en->x, en->h, en->o};
    embed_tokens(&f, items, n_items);
    for (int l = 0; l < c->n_layer; l++)
        m->arch->layer(&f, &m->layers[l], l);

    /* outputs: the final norm of the rows asked for, then one LM-head
     * product over all of them (the head is read once per step) */
    size_t n_out = 0;
    t = 0;
    for (int i = 0; i < n_items; i++) {
        const asn_batch_item *it = &items[i];
        size_t first = t, n = (size_t)it->n;
        t += n;
        if (it->embed || it->cls) {
            /* en->o: this item's normalized rows, then the pooled state */
            final_norm(&f, en->o, en->x + first * d, n);
            float *pooled = en->u;
            if (it->embed || c->cls_pooling == ASN_POOL_MEAN) {
                for (int k = 0; k < d; k++) {
                    double acc = 0;
                    for (size_t r = 0; r < n; r++)
                        acc += en->o[r * d + k];
                    pooled[k] = (float)(acc / (double)n);
                }
                if (it->embed)
                    memcpy(it->embed, pooled, (size_t)d * sizeof(float));
            }
            if (it->cls) {
                if (c->cls_pooling == ASN_POOL_CLS)
                    memcpy(pooled, en->o, (size_t)d * sizeof(float));
                else if (c->cls_pooling != ASN_POOL_MEAN) /* last token */
                    memcpy(pooled, en->o + (n - 1) * d, (size_t)d * sizeof(float));
                cls_head(en, pooled, it->cls);
            }
        }
        if (it->logits) {
            size_t from = it->all_logits ? first : first + n - 1;
            for (size_t r = from; r < first + n; r++, n_out++) /* n_out <= r: in place is safe */
                final_norm(&f, en->h + n_out * d, en->x + r * d, 1);
        }
    }
    if (n_out) {
        size_t V = (size_t)c->n_vocab;
        if (n_out * V > en->cap_logits) {
            en->logits = asn_xrealloc(en->logits, n_out * V * sizeof(float));
            en->cap_logits = n_out * V;
        }
        blk_matmul(en, en->h, (int)n_out, &m->w.output, NULL, en->logits);
        if (c->final_softcap > 0)
            for (size_t r = 0; r < n_out * V; r++)
                en->logits[r] = c->final_softcap * tanhf(en->logits[r] / c->final_softcap);
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
