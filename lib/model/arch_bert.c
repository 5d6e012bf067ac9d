/* arch_bert.c — BERT encoders (all-MiniLM, bge, e5 as llama.cpp's
 * converter writes them): token + token-type 0 + learned position
 * embeddings, layer-normed; bidirectional attention over the whole text;
 * post-norm layers (layer norm of x + attention, of x + feed-forward); GELU
 * (erf, as transformers computes it). Embeddings pool the last layer's
 * states (mean pooling: asn_batch_item.embed); a classification head reads
 * the first token ([CLS]) through cls (tanh) and cls.output. */
#include "arch.h"

static const tensor_spec globals[] = {
    GMAT("token_embd.weight", tok_embd, D_EMBD, D_VOCAB, T_REQ),
    GMAT("token_types.weight", type_embd, D_EMBD, D_ANY, T_OPT),
    GMAT("position_embd.weight", pos_embd, D_EMBD, D_CTX, T_REQ),
    GVEC("token_embd_norm.weight", tok_norm, D_EMBD, T_REQ),
    GVEC("token_embd_norm.bias", tok_norm_b, D_EMBD, T_REQ),
    T_CLS_HEAD,
    END_TENSORS,
};

static const tensor_spec layer[] = {
    T_ATTN_QKVO,
    VEC("attn_q.bias", bq, D_Q, T_OPT),
    VEC("attn_k.bias", bk, D_KV, T_OPT),
    VEC("attn_v.bias", bv, D_KV, T_OPT),
    VEC("attn_output.bias", bo, D_EMBD, T_OPT),
    VEC("attn_output_norm.weight", attn_out_norm, D_EMBD, T_REQ),
    VEC("attn_output_norm.bias", attn_out_norm_b, D_EMBD, T_REQ),
    MAT("ffn_up.weight", up, D_EMBD, D_FF, T_REQ),
    VEC("ffn_up.bias", b_up, D_FF, T_OPT),
    MAT("ffn_down.weight", down, D_FF, D_EMBD, T_REQ),
    VEC("ffn_down.bias", b_down, D_EMBD, T_OPT),
    VEC("layer_output_norm.weight", layer_out_norm, D_EMBD, T_REQ),
    VEC("layer_output_norm.bias", layer_out_norm_b, D_EMBD, T_REQ),
    END_TENSORS,
};

/* x = norm(x + attn(x)); x = norm(x + ffn(x)) */
static void bert_layer(const fwd *f, const layer_w *L, int l)
{
    blk_attention(f, L, l, f->x, f->o);
    blk_add(f, f->x, f->o);
    blk_layernorm(f, f->x, f->x, L->attn_out_norm, L->attn_out_norm_b);
    blk_ffn(f, L, FFN_GELU, f->x, f->o);
    blk_add(f, f->x, f->o);
    blk_layernorm(f, f->x, f->x, L->layer_out_norm, L->layer_out_norm_b);
}

const asn_arch arch_bert = {
    .name = "bert",
    .globals = globals,
    .layer_tensors = layer,
    .norm = NORM_LAYER,
    .no_rope = 1,
    .non_causal = 1,
    .pooling = ASN_POOL_CLS,
    .layer = bert_layer,
};
