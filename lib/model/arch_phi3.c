/* arch_phi3.c — Phi-3 and Phi-3.5 (mini, medium): Llama's layer with the
 * q, k, v rows fused in one tensor (or split) and gate and up fused in
 * ffn_up (gate first); rotary embeddings on halves, longrope's short and
 * long per-pair divisors and attention factor for the 128k models. The
 * sliding window in Phi-3's metadata is ignored, as llama.cpp does. */
#include "arch.h"

static const tensor_spec globals[] = {
    T_EMBD_OUT,
    GVEC("rope_factors_long.weight", rope_long, D_ROT2, T_OPT),
    GVEC("rope_factors_short.weight", rope_short, D_ROT2, T_OPT),
    END_TENSORS,
};

static const tensor_spec layer[] = {
    VEC("attn_norm.weight", attn_norm, D_EMBD, T_REQ),
    MAT("attn_qkv.weight", wqkv, D_EMBD, D_QKV, T_OPT),
    MAT("attn_q.weight", wq, D_EMBD, D_Q, T_OPT),
    MAT("attn_k.weight", wk, D_EMBD, D_KV, T_OPT),
    MAT("attn_v.weight", wv, D_EMBD, D_KV, T_OPT),
    MAT("attn_output.weight", wo, D_Q, D_EMBD, T_REQ),
    VEC("ffn_norm.weight", ffn_norm, D_EMBD, T_REQ),
    MAT("ffn_up.weight", up, D_EMBD, D_FF2, T_REQ),
    MAT("ffn_down.weight", down, D_FF, D_EMBD, T_REQ),
    END_TENSORS,
};

static void phi3_layer(const fwd *f, const layer_w *L, int l)
{
    blk_rmsnorm(f, f->h, f->x, L->attn_norm);
    blk_attention(f, L, l, f->h, f->o);
    blk_add(f, f->x, f->o);
    blk_rmsnorm(f, f->h, f->x, L->ffn_norm);
    blk_ffn(f, L, FFN_SWIGLU_FUSED, f->h, f->o);
    blk_add(f, f->x, f->o);
}

static int hparams(asn_model *m, asn_err *e)
{
    m->cfg.n_swa = 0;
    return 0;
}

const asn_arch arch_phi3 = {
    .name = "phi3",
    .globals = globals,
    .layer_tensors = layer,
    .norm = NORM_RMS,
    .rope_neox = 1,
    .pooling = ASN_POOL_LAST,
    .hparams = hparams,
    .layer = phi3_layer,
};
