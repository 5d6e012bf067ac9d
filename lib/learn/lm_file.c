/* lm_file.c — the trainable Llama as GGUF files: a model llama.cpp loads
 * (its llama.* metadata, tensors named as llama.cpp names them, the
 * tokenizer copied from the vocabulary's GGUF) and training checkpoints
 * (the model with the optimizer's moments and step beside it). Only the
 * public interface of lm.c is used. */
#include "asn/lm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void asn_lm_gguf_meta(const asn_lm *lm, asn_gguf_writer *w, const char *name)
{
    const asn_lm_config *c = asn_lm_cfg(lm);
    asn_gguf_set_str(w, "general.architecture", "llama");
    asn_gguf_set_str(w, "general.name", name && *name ? name : "asn-lm");
    asn_gguf_set_u32(w, "general.file_type", 0); /* llama.cpp's LLAMA_FTYPE_ALL_F32 */
    asn_gguf_set_u32(w, "llama.vocab_size", (uint32_t)c->n_vocab);
    asn_gguf_set_u32(w, "llama.context_length", (uint32_t)c->ctx);
    asn_gguf_set_u32(w, "llama.embedding_length", (uint32_t)c->dim);
    asn_gguf_set_u32(w, "llama.block_count", (uint32_t)c->n_layer);
    asn_gguf_set_u32(w, "llama.feed_forward_length", (uint32_t)c->ffn);
    asn_gguf_set_u32(w, "llama.attention.head_count", (uint32_t)c->n_head);
    asn_gguf_set_u32(w, "llama.attention.head_count_kv", (uint32_t)c->n_head_kv);
    asn_gguf_set_u32(w, "llama.rope.dimension_count", (uint32_t)(c->dim / c->n_head));
    asn_gguf_set_f32(w, "llama.rope.freq_base", c->rope_base);
    asn_gguf_set_f32(w, "llama.attention.layer_norm_rms_epsilon", c->rms_eps);
}

static int fits_i32(int64_t v) { return v >= INT32_MIN && v <= INT32_MAX; }

int asn_lm_gguf_copy_tokenizer(asn_gguf_writer *w, const asn_gguf *src, asn_err *e)
{
    for (size_t i = 0; i < asn_gguf_n_kv(src); i++) {
        const asn_gguf_kv *kv = asn_gguf_kv_at(src, i);
        if (kv->key.n < 10 || memcmp(kv->key.p, "tokenizer.", 10))
            continue;
        char key[256];
        if (kv->key.n >= sizeof key)
            return asn_err_set(e, "%s: key too long", asn_gguf_path(src));
        memcpy(key, kv->key.p, kv->key.n);
        key[kv->key.n] = 0;
        switch (kv->type) {
        case ASN_GGUF_U8:
        case ASN_GGUF_U16:
        case ASN_GGUF_U32:
            asn_gguf_set_u32(w, key, (uint32_t)kv->v.u);
            break;
        case ASN_GGUF_U64:
            asn_gguf_set_u64(w, key, kv->v.u);
            break;
        case ASN_GGUF_I8:
        case ASN_GGUF_I16:
        case ASN_GGUF_I32:
        case ASN_GGUF_I64:
            if (!fits_i32(kv->v.i))
                return asn_err_set(e, "%s: %s: value out of 32-bit range", asn_gguf_path(src), key);
            asn_gguf_set_i32(w, key, (int32_t)kv->v.i);
            break;
        case ASN_GGUF_F32:
        case ASN_GGUF_F64:
            asn_gguf_set_f32(w, key, (float)kv->v.f);
            break;
        case ASN_GGUF_BOOL:
            asn_gguf_set_bool(w, key, kv->v.u != 0);
            break;
        case ASN_GGUF_STRING: {
            char *s = asn_xmalloc(kv->v.s.n + 1);
            memcpy(s, kv->v.s.p, kv->v.s.n);
            s[kv->v.s.n] = 0;
            asn_gguf_set_str(w, key, s);
            free(s);
            break;
        }
        case ASN_GGUF_ARRAY: {
            uint64_t n = kv->v.arr.n;
            asn_gguf_vtype et = kv->v.arr.type;
            if (et == ASN_GGUF_STRING) {
                char **v = asn_xcalloc(n ? n : 1, sizeof *v);
                for (uint64_t j = 0; j < n; j++) {
                    asn_gguf_str s = asn_gguf_arr_str(kv, j);
                    v[j] = asn_xmalloc(s.n + 1);
                    memcpy(v[j], s.p, s.n);
                    v[j][s.n] = 0;
                }
                asn_gguf_set_arr_str(w, key, (const char *const *)v, n);
                for (uint64_t j = 0; j < n; j++)
                    free(v[j]);
                free(v);
            } else if (et == ASN_GGUF_F32 || et == ASN_GGUF_F64) {
                float *v = asn_xmalloc((n ? n : 1) * sizeof *v);
                for (uint64_t j = 0; j < n; j++)
                    v[j] = (float)asn_gguf_arr_float(kv, j);
                asn_gguf_set_arr_f32(w, key, v, n);
                free(v);
            } else {
                int32_t *v = asn_xmalloc((n ? n : 1) * sizeof *v);
                for (uint64_t j = 0; j < n; j++) {
                    int64_t x = asn_gguf_arr_int(kv, j);
                    if (!fits_i32(x)) {
                        free(v);
                        return asn_err_set(e, "%s: %s: element %llu out of 32-bit range", asn_gguf_path(src), key,
                                           (unsigned long long)j);
                    }
                    v[j] = (int32_t)x;
                }
                asn_gguf_set_arr_i32(w, key, v, n);
                free(v);
            }
            break;
        }
        default:
            return asn_err_set(e, "%s: %s: value type %d cannot be copied", asn_gguf_path(src), key, (int)kv->type);
        }
    }
    return 0;
}

void asn_lm_gguf_tensors(const asn_lm *lm, asn_gguf_writer *w, const char *prefix, const float *data)
{
    for (size_t i = 0; i < asn_lm_n_tensors(lm); i++) {
        const asn_lm_tensor *t = asn_lm_tensor_at(lm, i);
        char name[128];
        snprintf(name, sizeof name, "%s%s", prefix ? prefix : "", t->name);
        asn_gguf_add_tensor(w, name, ASN_T_F32, (uint32_t)t->n_dims, t->ne, data + t->offset);
    }
}

int asn_lm_gguf_read_tensors(const asn_lm *lm, const asn_gguf *g, const char *prefix, float *data, asn_err *e)
{
    for (size_t i = 0; i < asn_lm_n_tensors(lm); i++) {
        const asn_lm_tensor *t = asn_lm_tensor_at(lm, i);
        char name[128];
        snprintf(name, sizeof name, "%s%s", prefix ? prefix : "", t->name);
        const asn_gguf_tensor *gt = asn_gguf_find_tensor(g, name);
        if (!gt)
            return asn_err_set(e, "%s: tensor %s is missing", asn_gguf_path(g), name);
        if (gt->type != ASN_T_F32)
            return asn_err_set(e, "%s: tensor %s has type %s, expected F32", asn_gguf_path(g), name,
                               asn_ttype_name(gt->type));
        if ((int)gt->n_dims != t->n_dims || gt->ne[0] != t->ne[0] || gt->ne[1] != t->ne[1])
            return asn_err_set(e, "%s: tensor %s has shape {%lld, %lld}, expected {%lld, %lld}", asn_gguf_path(g),
                               name, (long long)gt->ne[0], (long long)gt->ne[1], (long long)t->ne[0],
                               (long long)t->ne[1]);
        memcpy(data + t->offset, gt->data, t->size * sizeof(float));
    }
    return 0;
}

int asn_lm_config_from_gguf(const asn_gguf *g, asn_lm_config *c, asn_err *e)
{
    char *arch = NULL;
    if (asn_gguf_get_str(g, "general.architecture", 1, &arch, e))
        return -1;
    int ok = !strcmp(arch, "llama");
    free(arch);
    if (!ok)
        return asn_err_set(e, "%s: general.architecture is not \"llama\"", asn_gguf_path(g));
    memset(c, 0, sizeof *c);
    uint32_t v = 0;
    struct {
        const char *key;
        int *dst;
        int required;
    } keys[] = {
        {"llama.vocab_size", &c->n_vocab, 1},          {"llama.context_length", &c->ctx, 1},
        {"llama.embedding_length", &c->dim, 1},        {"llama.block_count", &c->n_layer, 1},
        {"llama.feed_forward_length", &c->ffn, 1},     {"llama.attention.head_count", &c->n_head, 1},
        {"llama.attention.head_count_kv", &c->n_head_kv, 0},
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        v = 0;
        if (asn_gguf_get_u32(g, keys[i].key, keys[i].required, &v, e))
            return -1;
        if (v > (1u << 30))
            return asn_err_set(e, "%s: %s = %u is out of range", asn_gguf_path(g), keys[i].key, v);
        *keys[i].dst = (int)v;
    }
    if (asn_gguf_get_f32(g, "llama.rope.freq_base", 0, &c->rope_base, e) ||
        asn_gguf_get_f32(g, "llama.attention.layer_norm_rms_epsilon", 0, &c->rms_eps, e))
        return -1;
    if (asn_lm_config_check(c, e))
        return asn_err_prefix(e, "%s", asn_gguf_path(g));
    return 0;
}

int asn_lm_save(const asn_lm *lm, const char *path, const char *name, const asn_gguf *vocab, asn_err *e)
{
    return asn_lm_checkpoint_save(lm, path, name, vocab, NULL, NULL, e);
}

/* ------------------------------------------------------- checkpoints */

int asn_lm_checkpoint_save(const asn_lm *lm, const char *path, const char *name, const asn_gguf *vocab,
                           const asn_lm_state *st, const char *const *extra, asn_err *e)
{
    asn_gguf_writer *w = asn_gguf_writer_new();
    asn_lm_gguf_meta(lm, w, name);
    if (vocab && asn_lm_gguf_copy_tokenizer(w, vocab, e)) {
        asn_gguf_writer_free(w);
        return -1;
    }
    if (st) {
        char el[64]; /* as text: an f32 would lose seconds on long runs */
        snprintf(el, sizeof el, "%.3f", st->elapsed);
        asn_gguf_set_u64(w, "asn.train.step", (uint64_t)st->step);
        asn_gguf_set_u64(w, "asn.train.tokens", st->tokens);
        asn_gguf_set_u64(w, "asn.train.windows", st->windows);
        asn_gguf_set_str(w, "asn.train.elapsed", el);
    }
    for (int i = 0; extra && extra[i] && extra[i + 1]; i += 2)
        asn_gguf_set_str(w, extra[i], extra[i + 1]);
    asn_lm_gguf_tensors(lm, w, "", asn_lm_params_const(lm));
    if (st) {
        asn_lm_gguf_tensors(lm, w, "adam.m.", st->m);
        asn_lm_gguf_tensors(lm, w, "adam.v.", st->v);
    }
    int rc = asn_gguf_write(w, path, e);
    asn_gguf_writer_free(w);
    return rc;
}

int asn_lm_checkpoint_load(asn_lm *lm, const asn_gguf *g, asn_lm_state *st, asn_err *e)
{
    asn_lm_config c;
    if (asn_lm_config_from_gguf(g, &c, e))
        return -1;
    const asn_lm_config *m = asn_lm_cfg(lm);
    struct {
        const char *what;
        double have, want;
    } cmp[] = {{"vocab size", c.n_vocab, m->n_vocab}, {"dim", c.dim, m->dim},
               {"layers", c.n_layer, m->n_layer},     {"heads", c.n_head, m->n_head},
               {"kv-heads", c.n_head_kv, m->n_head_kv}, {"ffn", c.ffn, m->ffn},
               {"ctx", c.ctx, m->ctx},                {"rope-base", c.rope_base, m->rope_base},
               {"rms-eps", c.rms_eps, m->rms_eps}};
    for (size_t i = 0; i < sizeof cmp / sizeof cmp[0]; i++)
        if (cmp[i].have != cmp[i].want)
            return asn_err_set(e, "%s: the checkpoint has %s %g, the model %g", asn_gguf_path(g), cmp[i].what,
                               cmp[i].have, cmp[i].want);
    int64_t step = 0, tokens = 0, windows = 0;
    char *el = NULL;
    if (asn_lm_gguf_read_tensors(lm, g, "", asn_lm_params(lm), e) || asn_lm_gguf_read_tensors(lm, g, "adam.m.", st->m, e) ||
        asn_lm_gguf_read_tensors(lm, g, "adam.v.", st->v, e) ||
        asn_gguf_get_i64(g, "asn.train.step", 1, &step, e) || asn_gguf_get_i64(g, "asn.train.tokens", 1, &tokens, e) ||
        asn_gguf_get_i64(g, "asn.train.windows", 1, &windows, e) || asn_gguf_get_str(g, "asn.train.elapsed", 1, &el, e))
        return -1;
    st->step = (long)step;
    st->tokens = (uint64_t)tokens;
    st->windows = (uint64_t)windows;
    st->elapsed = strtod(el, NULL);
    free(el);
    return 0;
}
