/* arch_qwen3.c — Qwen3: Llama's layer without biases, with an RMS norm of
 * every q and k head before the rotary embedding (on halves). A reranker
 * or reward model adds cls.output, read at the last token. */
#include "arch.h"

static const tensor_spec globals[] = {T_EMBD_OUT, T_CLS_HEAD, END_TENSORS};

static const tensor_spec layer[] = {
    VEC("attn_norm.weight", attn_norm, D_EMBD, T_REQ),
    T_ATTN_QKVO,
    VEC("attn_q_norm.weight", q_norm, D_HEAD, T_REQ),
    VEC("attn_k_norm.weight", k_norm, D_HEAD, T_REQ),
    VEC("ffn_norm.weight", ffn_norm, D_EMBD, T_REQ),
    T_FFN_GLU,
    END_TENSORS,
};

const asn_arch arch_qwen3 = {
    .name = "qwen3",
    .globals = globals,
    .layer_tensors = layer,
    .norm = NORM_RMS,
    .rope_neox = 1,
    .pooling = ASN_POOL_LAST,
    .layer = llama_layer,
};
