/* sampling_internal.h — the row machinery the files of lib/sampling share
 * and nobody else sees: the workspace (workspace.c), row arithmetic
 * (vecmath.c) and partial ordering (order.c). The processor interface is
 * proc.h. */
#ifndef ASN_SAMPLING_INTERNAL_H
#define ASN_SAMPLING_INTERNAL_H

#include <stdint.h>

#include "asn/sampling.h"
#include "asn/vexp.h" /* exp16, asn_exp_shifted */

struct asn_workspace {
    int cap;         /* V the buffers hold */
    float *e;        /* exp(x - max) */
    float *p;        /* probabilities */
    float *f;        /* spare float row (typical's s, ...) */
    uint64_t *keys;  /* packed sort keys */
    uint32_t *stamp; /* per-token marks, valid where == cur */
    uint32_t cur;
    int32_t *count;  /* per-token counts for penalties (kept zero between uses) */
    int32_t *ord;    /* token ids in some order */
    struct asn_learned_ws *learned; /* sampler workspaces, one per sampler
                                     * configuration, made on first use */
};

/* Frees the learned processor's workspaces (proc_learned.c). */
void asn_learned_ws_free(struct asn_learned_ws *l);
/* For the heuristic id: a learned processor's params (a copy) with the
 * sampler file's path replaced by "sha256:" and the file's digest, so that
 * the id (and with it every draw) follows the sampler, not where it lies;
 * other kinds are left alone. */
void asn_learned_id_params(const asn_proc *p, json_t *params);

/* Makes every buffer hold V entries. */
void asn_ws_reserve(asn_workspace *ws, int V);
/* A fresh mark value: tokens marked before are unmarked now. */
uint32_t asn_ws_new_mark(asn_workspace *ws);

/* ------------------------------------------------------------- vecmath.c */

float asn_row_max(const float *x, int n);
float asn_row_min(const float *x, int n);
int asn_collect(const float *key, int n, float cut, int below, uint64_t *out);
double asn_sum_f32(const float *x, int n);
void asn_div_f32(const float *e, double S, float *p, int n); /* p = (float)(e / S) */
void asn_scale_f32(float *x, float t, int n);                /* x = x / t */
double asn_sum_below(const float *q, const float *x, float cut, int n); /* sum q where !(x >= cut) */
double asn_nansum_prod(const float *a, const float *b, int n); /* sum of a*b, NaN terms skipped (torch.nansum) */
/* The softmax of docs/sampling.md "Arithmetic": m = max, e = expf(x - m), S = double
 * sum, p = (float)(e / S) (p may be NULL). Returns S. */
double asn_softmax_ref(const float *x, int n, float *e, float *p, float *max_out);

/* --------------------------------------------------------------- order.c */

/* Monotone map float → uint32: a < b as floats iff key(a) < key(b). */
static inline uint32_t asn_fkey(float f)
{
    union { float f; uint32_t u; } v = {f};
    return (v.u & 0x80000000u) ? ~v.u : (v.u | 0x80000000u);
}
static inline float asn_fkey_inv(uint32_t k)
{
    union { float f; uint32_t u; } v;
    v.u = (k & 0x80000000u) ? (k & 0x7fffffffu) : ~k;
    return v.f;
}
/* Packs (value, token) so that sorting the u64 ascending orders by value,
 * then by token index ascending. */
static inline uint64_t asn_pack(float v, uint32_t tok) { return ((uint64_t)asn_fkey(v) << 32) | tok; }
static inline uint32_t asn_pack_tok(uint64_t k) { return (uint32_t)k; }
static inline float asn_pack_val(uint64_t k) { return asn_fkey_inv((uint32_t)(k >> 32)); }

void asn_sort_u64(uint64_t *a, int n); /* ascending */
/* Sets the row to -inf except the tokens packed in keys (asn_pack of the
 * token's own value), which keep their values. */
void asn_keep_only(float *x, int n, const uint64_t *keys, int nkeys);

/* Collects the tokens whose key is >= cut (or <= cut when `below`), packed
 * as (key, token) into ws->keys, sorted ascending. Returns the count. */
int asn_collect_sorted(asn_workspace *ws, const float *key, int V, float cut, int below);

/* The k-th largest value of x (k >= 1, counting duplicates; -inf if fewer
 * than k values are finite). */
float asn_kth_largest(asn_workspace *ws, const float *x, int V, int k);

/* Cuts for collecting the top of a row: tokens within `span` of the max. */
extern const float asn_spans[];
extern const int asn_n_spans;

#endif
