/* arch_qwen2.c — Qwen2 and Qwen2.5: Llama's layer with q/k/v biases and
 * rotary embeddings on halves ("neox"). */
#include "arch.h"

static const tensor_spec globals[] = {T_EMBD_OUT, T_CLS_HEAD, END_TENSORS};

static const tensor_spec layer[] = {
    VEC("attn_norm.weight", attn_norm, D_EMBD, T_REQ),
    T_ATTN_QKVO,
    VEC("attn_q.bias", bq, D_Q, T_OPT),
    VEC("attn_k.bias", bk, D_KV, T_OPT),
    VEC("attn_v.bias", bv, D_KV, T_OPT),
    VEC("ffn_norm.weight", ffn_norm, D_EMBD, T_REQ),
    T_FFN_GLU,
    END_TENSORS,
};

const asn_arch arch_qwen2 = {
    .name = "qwen2",
    .globals = globals,
    .layer_tensors = layer,
    .norm = NORM_RMS,
    .rope_neox = 1,
    .pooling = ASN_POOL_LAST,
    .layer = llama_layer,
};
