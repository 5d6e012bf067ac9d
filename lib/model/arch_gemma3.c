/* arch_gemma3.c — Gemma 3 (text): Gemma 2's layer with per-head q/k norms
 * instead of soft-capping; when the metadata sets a sliding window, five
 * windowed layers to one global, the windowed ones with their own rope base
 * (10000) and no rope scaling. */
#include "arch.h"

#include <math.h>

static const tensor_spec globals[] = {
    GMAT("token_embd.weight", tok_embd, D_EMBD, D_VOCAB, T_REQ),
    GVEC("output_norm.weight", output_norm, D_EMBD, T_REQ),
    GMAT("output.weight", output, D_EMBD, D_VOCAB, T_OPT),
    END_TENSORS,
};

static const tensor_spec layer[] = {
    VEC("attn_norm.weight", attn_norm, D_EMBD, T_REQ),
    T_ATTN_QKVO,
    VEC("attn_q_norm.weight", q_norm, D_HEAD, T_REQ),
    VEC("attn_k_norm.weight", k_norm, D_HEAD, T_REQ),
    VEC("post_attention_norm.weight", attn_post_norm, D_EMBD, T_REQ),
    VEC("ffn_norm.weight", ffn_norm, D_EMBD, T_REQ),
    T_FFN_GLU,
    VEC("post_ffw_norm.weight", ffn_post_norm, D_EMBD, T_REQ),
    END_TENSORS,
};

static int hparams(asn_model *m, asn_err *e)
{
    asn_model_config *c = &m->cfg;
    c->attn_softcap = 0; /* Gemma 3 has q/k norms instead */
    if (!arch_has_key(m, "rope.freq_base_swa"))
        c->rope_base_swa = 10000.0f;
    c->rope_freq_scale_swa = 1.0f;
    if (c->n_layer == 62 && !arch_has_key(m, "attention.scale"))
        c->attn_scale = 1.0f / sqrtf((float)(c->n_embd / c->n_head));
    return 0;
}

const asn_arch arch_gemma3 = {
    .name = "gemma3",
    .globals = globals,
    .layer_tensors = layer,
    .norm = NORM_RMS,
    .rope_neox = 1,
    .embed_scale_sqrt = 1,
    .swa_period = 6,
    .pooling = ASN_POOL_LAST,
    .hparams = hparams,
    .layer = gemma2_layer,
};
