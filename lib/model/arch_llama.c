/* arch_llama.c — Llama (1, 2, 3, 3.1 with rope_freqs; Mistral 7B converts to
 * it too, with a sliding window when the metadata sets
 * llama.attention.sliding_window): pre-norm, rotary embeddings on adjacent
 * pairs, grouped-query attention, SwiGLU. */
#include "arch.h"

static const tensor_spec globals[] = {
    T_EMBD_OUT,
    GVEC("rope_freqs.weight", rope_freqs, D_ROT2, T_OPT),
    T_CLS_HEAD,
    END_TENSORS,
};

static const tensor_spec layer[] = {
    VEC("attn_norm.weight", attn_norm, D_EMBD, T_REQ),
    T_ATTN_QKVO,
    VEC("ffn_norm.weight", ffn_norm, D_EMBD, T_REQ),
    T_FFN_GLU,
    END_TENSORS,
};

/* x += attn(norm(x)); x += ffn(norm(x)). Shared by qwen2 and qwen3, whose
 * biases and q/k norms blk_attention applies when present. */
void llama_layer(const fwd *f, const layer_w *L, int l)
{
    blk_rmsnorm(f, f->h, f->x, L->attn_norm);
    blk_attention(f, L, l, f->h, f->o);
    blk_add(f, f->x, f->o);
    blk_rmsnorm(f, f->h, f->x, L->ffn_norm);
    blk_ffn(f, L, FFN_SWIGLU, f->h, f->o);
    blk_add(f, f->x, f->o);
}

const asn_arch arch_llama = {
    .name = "llama",
    .globals = globals,
    .layer_tensors = layer,
    .norm = NORM_RMS,
    .pooling = ASN_POOL_LAST,
    .layer = llama_layer,
};
