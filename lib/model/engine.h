/* engine.h — the engine's state, shared by forward.c (sequences, KV pages,
 * the decode step) and attention.c (rotary tables, attention over the
 * pages). */
#ifndef ASN_ENGINE_H
#define ASN_ENGINE_H

#include "arch.h"

#include <stddef.h>

enum { PAGE = 16 };     /* positions per KV page */
enum { ATT_GROUP = 4 }; /* tokens of one sequence that attention handles together (attn_run
                         * is written for 4) */

typedef struct seq {
    int used, len;
    int *pages;
    int npages, cap;
} seq;

/* cos/sin of every rotary pair's angle for positions [0, n) */
typedef struct rope_set {
    float *cos, *sin;
    int n;
    float base, freq_scale;
} rope_set;

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
    rope_set rope[2];        /* [0] every layer, [1] windowed layers */
    const float *rope_div;   /* per-pair divisors in use, or NULL */
    /* per-token scratch, grown to the largest batch */
    size_t cap_tokens;
    float *x, *h, *o, *q, *k, *v, *att, *g, *u;
    int *tok_seq, *tok_pos;
    int *grp, n_grp; /* attention groups: first token of each (see attn_run) */
    int *grp_end;    /* per group: the length its sequence will have (non-causal reach) */
    float *logits;   /* rows of the LM head's output */
    size_t cap_logits;
};

/* A page holds, per layer, the keys of its PAGE positions transposed
 * (kvd rows of PAGE floats: element d of position j at d * PAGE + j % PAGE)
 * and then the values, one row of kvd floats per position. */
static inline float *k_page(const asn_engine *en, const seq *s, int layer, int pos)
{
    float *pg = en->page[s->pages[pos / PAGE]];
    return pg + (size_t)layer * 2 * PAGE * (size_t)en->kvd;
}

static inline float *v_at(const asn_engine *en, const seq *s, int layer, int pos)
{
    float *pg = en->page[s->pages[pos / PAGE]];
    return pg + ((size_t)layer * 2 * PAGE + PAGE + (size_t)(pos % PAGE)) * (size_t)en->kvd;
}

/* Whether layer l attends through the sliding window. */
static inline int layer_windowed(const asn_model_config *c, int l)
{
    return c->n_swa > 0 && (c->swa_period <= 0 || l % c->swa_period < c->swa_period - 1);
}

/* Makes the rotary tables cover positions [0, n). */
void rope_tables(asn_engine *en, int n);
void rope_free(asn_engine *en);

#endif
