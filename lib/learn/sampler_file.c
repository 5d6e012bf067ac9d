/* sampler_file.c — learned samplers as GGUF files: the architecture and
 * its hyper-parameters as metadata (general.architecture "asn-sampler"),
 * the parameters as tensors named as in the PyTorch state_dict; reading
 * checks every tensor's presence, shape, type and finiteness, and refuses
 * tensors the architecture does not have (other than train.*). Only the
 * public interface of sampler_net.c is used. */
#include "asn/gguf.h"
#include "asn/sampler_net.h"
#include "learn/sampler_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GGUF_ARCH "asn-sampler"

asn_gguf_writer *asn_sampler_writer(const asn_sampler *s)
{
    const asn_sampler_config *c = asn_sampler_get_config(s);
    asn_gguf_writer *w = asn_gguf_writer_new();
    asn_gguf_set_str(w, "general.architecture", GGUF_ARCH);
    asn_gguf_set_str(w, GGUF_ARCH ".type", asn_sampler_arch_name(c->arch));
    switch (c->arch) {
    case ASN_SAMPLER_LOCAL:
    case ASN_SAMPLER_EQUI:
        asn_gguf_set_u32(w, GGUF_ARCH ".hidden_dims", (uint32_t)c->hidden_dims);
        break;
    case ASN_SAMPLER_DIST:
        asn_gguf_set_u32(w, GGUF_ARCH ".hidden_dims", (uint32_t)c->hidden_dims);
        asn_gguf_set_bool(w, GGUF_ARCH ".use_dynamic_truncation", c->use_dynamic_truncation);
        break;
    case ASN_SAMPLER_NETWORK:
        asn_gguf_set_u32(w, GGUF_ARCH ".d_model", (uint32_t)c->d_model);
        asn_gguf_set_u32(w, GGUF_ARCH ".d_ff", (uint32_t)c->d_ff);
        asn_gguf_set_u32(w, GGUF_ARCH ".n_blocks", (uint32_t)c->n_blocks);
        asn_gguf_set_u32(w, GGUF_ARCH ".n_heads", (uint32_t)c->n_heads);
        asn_gguf_set_bool(w, GGUF_ARCH ".scale", c->scale);
        break;
    }
    const float *p = asn_sampler_params_const(s);
    for (int i = 0; i < asn_sampler_n_tensors(s); i++) {
        const asn_sampler_tensor *t = asn_sampler_tensor_at(s, i);
        int64_t ne[2] = {t->n_dims == 2 ? t->shape[1] : t->shape[0], t->shape[0]};
        asn_gguf_add_tensor(w, t->name, ASN_T_F32, t->n_dims == 2 ? 2 : 1, ne, p + t->offset);
    }
    return w;
}

int asn_sampler_save(const asn_sampler *s, const char *path, asn_err *e)
{
    asn_gguf_writer *w = asn_sampler_writer(s);
    int rc = asn_gguf_write(w, path, e);
    asn_gguf_writer_free(w);
    return rc;
}

static int get_size(const asn_gguf *g, const char *key, int *out, asn_err *e)
{
    uint32_t v = 0;
    if (asn_gguf_get_u32(g, key, 1, &v, e) < 0)
        return -1;
    if (v > ASN__SAMPLER_MAX_DIM)
        return asn_err_set(e, "%s: %s = %u is too large", asn_gguf_path(g), key, v);
    *out = (int)v;
    return 0;
}

asn_sampler *asn_sampler_from_gguf(const asn_gguf *g, asn_err *e)
{
    const char *path = asn_gguf_path(g);
    char *arch = NULL, *type = NULL;
    asn_sampler_config c;
    memset(&c, 0, sizeof c);
    if (asn_gguf_get_str(g, "general.architecture", 1, &arch, e) < 0)
        return NULL;
    if (strcmp(arch, GGUF_ARCH)) {
        asn_err_set(e, "%s: general.architecture is \"%s\", not \"" GGUF_ARCH "\" (not a sampler file)", path,
                    arch);
        free(arch);
        return NULL;
    }
    free(arch);
    if (asn_gguf_get_str(g, GGUF_ARCH ".type", 1, &type, e) < 0)
        return NULL;
    int rc = asn_sampler_arch_parse(type, &c.arch, e);
    free(type);
    if (rc < 0) {
        asn_err_prefix(e, "%s", path);
        return NULL;
    }
    switch (c.arch) {
    case ASN_SAMPLER_LOCAL:
    case ASN_SAMPLER_EQUI:
        rc = get_size(g, GGUF_ARCH ".hidden_dims", &c.hidden_dims, e);
        break;
    case ASN_SAMPLER_DIST:
        rc = get_size(g, GGUF_ARCH ".hidden_dims", &c.hidden_dims, e);
        if (!rc)
            rc = asn_gguf_get_bool(g, GGUF_ARCH ".use_dynamic_truncation", 1, &c.use_dynamic_truncation, e);
        break;
    case ASN_SAMPLER_NETWORK:
        rc = get_size(g, GGUF_ARCH ".d_model", &c.d_model, e);
        if (!rc)
            rc = get_size(g, GGUF_ARCH ".d_ff", &c.d_ff, e);
        if (!rc)
            rc = get_size(g, GGUF_ARCH ".n_blocks", &c.n_blocks, e);
        if (!rc)
            rc = get_size(g, GGUF_ARCH ".n_heads", &c.n_heads, e);
        if (!rc)
            rc = asn_gguf_get_bool(g, GGUF_ARCH ".scale", 0, &c.scale, e);
        break;
    }
    if (rc < 0)
        return NULL;
    asn_sampler *s = asn_sampler_new(&c, 0, e);
    if (!s) {
        asn_err_prefix(e, "%s", path);
        return NULL;
    }
    float *p = asn_sampler_params(s);
    for (int i = 0; i < asn_sampler_n_tensors(s); i++) {
        const asn_sampler_tensor *t = asn_sampler_tensor_at(s, i);
        const asn_gguf_tensor *gt = asn_gguf_find_tensor(g, t->name);
        int nd = t->n_dims == 2 ? 2 : 1;
        int64_t ne0 = t->n_dims == 2 ? t->shape[1] : t->shape[0], ne1 = nd == 2 ? t->shape[0] : 1;
        if (!gt) {
            asn_err_set(e, "%s: tensor %s is missing (a %s needs it)", path, t->name,
                        asn_sampler_arch_name(c.arch));
            goto fail;
        }
        if ((int)gt->n_dims != nd || gt->ne[0] != ne0 || gt->ne[1] != ne1) {
            asn_err_set(e, "%s: tensor %s has shape [%lld, %lld] (GGUF order), expected [%lld, %lld]", path,
                        t->name, (long long)gt->ne[0], (long long)gt->ne[1], (long long)ne0, (long long)ne1);
            goto fail;
        }
        if (gt->type != ASN_T_F32 && gt->type != ASN_T_F16 && gt->type != ASN_T_BF16) {
            asn_err_set(e, "%s: tensor %s is %s (F32, F16 or BF16 expected)", path, t->name,
                        asn_ttype_name(gt->type));
            goto fail;
        }
        float *dst = p + t->offset;
        if (asn_dequantize_row(gt->type, gt->data, dst, (int64_t)t->numel) < 0) {
            asn_err_set(e, "%s: tensor %s: cannot read its data", path, t->name);
            goto fail;
        }
        for (size_t j = 0; j < t->numel; j++)
            if (!isfinite(dst[j])) {
                asn_err_set(e, "%s: tensor %s holds a non-finite value at %zu", path, t->name, j);
                goto fail;
            }
    }
    for (size_t i = 0; i < asn_gguf_n_tensors(g); i++) {
        const asn_gguf_tensor *gt = asn_gguf_tensor_at(g, i);
        char name[256];
        size_t n = gt->name.n < sizeof name - 1 ? gt->name.n : sizeof name - 1;
        memcpy(name, gt->name.p, n);
        name[n] = 0;
        if (!asn_sampler_find_tensor(s, name) && strncmp(name, "train.", 6)) {
            asn_err_set(e, "%s: unexpected tensor %s for a %s with these hyper-parameters", path, name,
                        asn_sampler_arch_name(c.arch));
            goto fail;
        }
    }
    return s;
fail:
    asn_sampler_free(s);
    return NULL;
}

asn_sampler *asn_sampler_load(const char *path, asn_err *e)
{
    asn_gguf *g = asn_gguf_open(path, e);
    if (!g) {
        /* torch.save writes a zip archive (or, before PyTorch 1.6, a pickle) */
        unsigned char head[4] = {0};
        FILE *f = fopen(path, "rb");
        size_t n = f ? fread(head, 1, sizeof head, f) : 0;
        if (f)
            fclose(f);
        if ((n == 4 && !memcmp(head, "PK\x03\x04", 4)) || (n >= 2 && head[0] == 0x80 && head[1] <= 5))
            asn_err_set(e, "%s: a PyTorch checkpoint, not an asn sampler file (GGUF); convert it with "
                           "scripts/convert-torch-sampler.py --config CONFIG.yaml %s sampler.gguf",
                        path, path);
        return NULL;
    }
    asn_sampler *s = asn_sampler_from_gguf(g, e);
    asn_gguf_close(g);
    return s;
}
