/* bench_util.h — what the benchmarks share: a clock, and the random-weight
 * Llama-shaped model of about 125M parameters (dim 768, 12 layers, 12/4
 * heads, ffn 2048, vocab 32000, untied output) written as GGUF. */
#ifndef ASN_BENCH_UTIL_H
#define ASN_BENCH_UTIL_H

#include "asn/gguf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <pthread.h>

enum { VOCAB = 32000, DIM = 768, LAYERS = 12, HEADS = 12, KV_HEADS = 4, FF = 2048 };

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t rs = 0x9E3779B97F4A7C15ULL;
static float rnd(void)
{
    rs ^= rs << 13, rs ^= rs >> 7, rs ^= rs << 17;
    return (float)((rs >> 40) * 0x1.0p-24 - 0.5) * 0.1f;
}

/* Writes the model once per type; returns the weight bytes read per token. */
/* Writes the model; returns the weight bytes read per decoded token. A
 * tokenizer is included when vocab_from (a GGUF with tokenizer.* keys) is
 * given, with its token count as the vocabulary. */
/* Copies the tokenizer.* keys of another GGUF into w. */
static void copy_tokenizer(asn_gguf_writer *w, const char *from)
{
    asn_err e;
    asn_gguf *g = asn_gguf_open(from, &e);
    if (!g) {
        fprintf(stderr, "bench: %s\n", e.msg);
        exit(1);
    }
    for (size_t i = 0; i < asn_gguf_n_kv(g); i++) {
        const asn_gguf_kv *kv = asn_gguf_kv_at(g, i);
        char key[256];
        snprintf(key, sizeof key, "%.*s", (int)kv->key.n, kv->key.p);
        if (strncmp(key, "tokenizer.", 10))
            continue;
        uint64_t n = kv->v.arr.n;
        if (kv->type == ASN_GGUF_STRING) {
            char *v = strndup(kv->v.s.p, kv->v.s.n);
            asn_gguf_set_str(w, key, v);
            free(v);
        } else if (kv->type == ASN_GGUF_BOOL) {
            asn_gguf_set_bool(w, key, (int)kv->v.u);
        } else if (kv->type == ASN_GGUF_U32 || kv->type == ASN_GGUF_I32) {
            asn_gguf_set_u32(w, key, (uint32_t)kv->v.u);
        } else if (kv->type == ASN_GGUF_ARRAY && kv->v.arr.type == ASN_GGUF_STRING) {
            char **v = malloc(n * sizeof *v);
            for (uint64_t k = 0; k < n; k++) {
                asn_gguf_str x = asn_gguf_arr_str(kv, k);
                v[k] = strndup(x.p, x.n);
            }
            asn_gguf_set_arr_str(w, key, (const char *const *)v, n);
            for (uint64_t k = 0; k < n; k++)
                free(v[k]);
            free(v);
        } else if (kv->type == ASN_GGUF_ARRAY && kv->v.arr.type == ASN_GGUF_F32) {
            float *v = malloc(n * sizeof *v);
            for (uint64_t k = 0; k < n; k++)
                v[k] = (float)asn_gguf_arr_float(kv, k);
            asn_gguf_set_arr_f32(w, key, v, n);
            free(v);
        } else if (kv->type == ASN_GGUF_ARRAY) {
            int32_t *v = malloc(n * sizeof *v);
            for (uint64_t k = 0; k < n; k++)
                v[k] = (int32_t)asn_gguf_arr_int(kv, k);
            asn_gguf_set_arr_i32(w, key, v, n);
            free(v);
        }
    }
    asn_gguf_close(g);
}

static double write_model(const char *path, uint32_t type, const char *vocab_from)
{
    asn_gguf_writer *w = asn_gguf_writer_new();
    if (vocab_from)
        copy_tokenizer(w, vocab_from);
    asn_gguf_set_str(w, "general.architecture", "llama");
    asn_gguf_set_u32(w, "llama.context_length", 2048);
    asn_gguf_set_u32(w, "llama.embedding_length", DIM);
    asn_gguf_set_u32(w, "llama.block_count", LAYERS);
    asn_gguf_set_u32(w, "llama.feed_forward_length", FF);
    asn_gguf_set_u32(w, "llama.attention.head_count", HEADS);
    asn_gguf_set_u32(w, "llama.attention.head_count_kv", KV_HEADS);
    asn_gguf_set_f32(w, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
    asn_gguf_set_u32(w, "llama.vocab_size", VOCAB);
    double bytes = 0;
    int hd = DIM / HEADS;
    struct { const char *name; int cols, rows; } mats[] = {
        {"attn_q.weight", DIM, HEADS * hd}, {"attn_k.weight", DIM, KV_HEADS * hd},
        {"attn_v.weight", DIM, KV_HEADS * hd}, {"attn_output.weight", HEADS * hd, DIM},
        {"ffn_gate.weight", DIM, FF}, {"ffn_up.weight", DIM, FF}, {"ffn_down.weight", FF, DIM},
    };
    float *buf = malloc((size_t)VOCAB * DIM * sizeof *buf);
    void *q = malloc(asn_ttype_row_bytes(type, DIM) * VOCAB + asn_ttype_row_bytes(type, FF) * DIM);
    float *ones = malloc(DIM * sizeof *ones);
    for (int i = 0; i < DIM; i++)
        ones[i] = 1.0f;
#define MAT(NAME, C, R, COUNT)                                                                 \
    do {                                                                                       \
        for (size_t i_ = 0; i_ < (size_t)(C) * (R); i_++)                                      \
            buf[i_] = rnd();                                                                   \
        size_t rb_ = asn_ttype_row_bytes(type, C);                                             \
        for (int r_ = 0; r_ < (R); r_++)                                                       \
            asn_quantize_row(type, buf + (size_t)r_ * (C), (char *)q + (size_t)r_ * rb_, C);   \
        int64_t ne_[2] = {C, R};                                                               \
        asn_gguf_add_tensor(w, NAME, type, 2, ne_, q);                                         \
        if (COUNT)                                                                             \
            bytes += (double)rb_ * (R);                                                        \
    } while (0)
    MAT("token_embd.weight", DIM, VOCAB, 0);
    MAT("output.weight", DIM, VOCAB, 1);
    int64_t ne1[1] = {DIM};
    asn_gguf_add_tensor(w, "output_norm.weight", ASN_T_F32, 1, ne1, ones);
    for (int l = 0; l < LAYERS; l++) {
        char n[64];
        snprintf(n, sizeof n, "blk.%d.attn_norm.weight", l);
        asn_gguf_add_tensor(w, n, ASN_T_F32, 1, ne1, ones);
        snprintf(n, sizeof n, "blk.%d.ffn_norm.weight", l);
        asn_gguf_add_tensor(w, n, ASN_T_F32, 1, ne1, ones);
        for (size_t k = 0; k < sizeof mats / sizeof mats[0]; k++) {
            snprintf(n, sizeof n, "blk.%d.%s", l, mats[k].name);
            MAT(n, mats[k].cols, mats[k].rows, 1);
        }
    }
    asn_err e;
    if (asn_gguf_write(w, path, &e)) {
        fprintf(stderr, "bench_model: %s\n", e.msg);
        exit(1);
    }
    asn_gguf_writer_free(w);
    free(buf);
    free(q);
    free(ones);
    return bytes;
}

/* ----------------------------------------------------------- limits */

typedef struct lim_arg {
    const float *p;
    size_t n;
    double out;
} lim_arg;

static inline void run_threads(int threads, void *(*fn)(void *), lim_arg *a)
{
    pthread_t th[64];
    for (int i = 1; i < threads; i++)
        pthread_create(&th[i], NULL, fn, &a[i]);
    fn(&a[0]);
    for (int i = 1; i < threads; i++)
        pthread_join(th[i], NULL);
}

typedef float v8f __attribute__((vector_size(32)));

/* Sum of a buffer with 8 independent 8-lane accumulators: the loads, not
 * the adds, are the bound. */
__attribute__((target("avx2"))) static inline void *read_part(void *arg)
{
    lim_arg *a = arg;
    v8f s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0}, s4 = {0}, s5 = {0}, s6 = {0}, s7 = {0}, x;
    for (size_t i = 0; i + 64 <= a->n; i += 64) {
#define L(S, O) memcpy(&x, a->p + i + (O), 32), S += x;
        L(s0, 0) L(s1, 8) L(s2, 16) L(s3, 24) L(s4, 32) L(s5, 40) L(s6, 48) L(s7, 56)
#undef L
    }
    v8f s = s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7;
    a->out = s[0] + s[7];
    return NULL;
}

/* Streaming read bandwidth (bytes/s) over 1 GiB with `threads` threads, as
 * STREAM measures it (best of 4). */
static inline double read_bandwidth(int threads)
{
    size_t n = (size_t)1 << 28;
    float *p = malloc(n * sizeof *p);
    for (size_t i = 0; i < n; i++)
        p[i] = 1.0f;
    double best = 0;
    for (int rep = 0; rep < 4; rep++) {
        lim_arg a[64];
        for (int i = 0; i < threads; i++)
            a[i] = (lim_arg){p + n / threads * i, n / threads, 0};
        double t0 = now();
        run_threads(threads, read_part, a);
        double bw = (double)n * sizeof *p / (now() - t0);
        best = bw > best ? bw : best;
    }
    free(p);
    return best;
}

#endif
