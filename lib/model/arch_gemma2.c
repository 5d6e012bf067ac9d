/* arch_gemma2.c — Gemma 2: embeddings times sqrt(n_embd), sandwich norms
 * (a norm before and after attention and feed-forward), GeGLU with tanh
 * GELU, attention scores soft-capped (50) and logits soft-capped (30),
 * every other layer (0, 2, ...) a 4096-position sliding window. GGUF norm
 * weights already hold Gemma's 1 + w. */
#include "arch.h"

#include <math.h>

static const tensor_spec globals[] = {
    GMAT("token_embd.weight", tok_embd, D_EMBD, D_VOCAB, T_REQ),
    GVEC("output_norm.weight", output_norm, D_EMBD, T_REQ),
    END_TENSORS,
};

static const tensor_spec layer[] = {
    VEC("attn_norm.weight", attn_norm, D_EMBD, T_REQ),
    T_ATTN_QKVO,
    VEC("post_attention_norm.weight", attn_post_norm, D_EMBD, T_REQ),
    VEC("ffn_norm.weight", ffn_norm, D_EMBD, T_REQ),
    T_FFN_GLU,
    VEC("post_ffw_norm.weight", ffn_post_norm, D_EMBD, T_REQ),
    END_TENSORS,
};

/* x += norm(attn(norm(x))); x += norm(ffn(norm(x))). Shared by gemma3,
 * whose q/k norms blk_attention applies. */
void gemma2_layer(const fwd *f, const layer_w *L, int l)
{
    blk_rmsnorm(f, f->h, f->x, L->attn_norm);
    blk_attention(f, L, l, f->h, f->o);
    blk_rmsnorm(f, f->o, f->o, L->attn_post_norm);
    blk_add(f, f->x, f->o);
    blk_rmsnorm(f, f->h, f->x, L->ffn_norm);
    blk_ffn(f, L, FFN_GEGLU_TANH, f->h, f->o);
    blk_rmsnorm(f, f->o, f->o, L->ffn_post_norm);
    blk_add(f, f->x, f->o);
}

/* The 27B model scales queries by 1/sqrt(n_embd / n_head) (Gemma's
 * query_pre_attn_scalar), the others by 1/sqrt(head_dim). */
static int hparams(asn_model *m, asn_err *e)
{
    asn_model_config *c = &m->cfg;
    if (c->n_layer == 46 && !arch_has_key(m, "attention.scale"))
        c->attn_scale = 1.0f / sqrtf((float)(c->n_embd / c->n_head));
    return 0;
}

const asn_arch arch_gemma2 = {
    .name = "gemma2",
    .globals = globals,
    .layer_tensors = layer,
    .norm = NORM_RMS,
    .rope_neox = 1,
    .embed_scale_sqrt = 1,
    .n_swa = 4096,
    .swa_period = 2,
    .attn_softcap = 50.0f,
    .final_softcap = 30.0f,
    .pooling = ASN_POOL_LAST,
    .hparams = hparams,
    .layer = gemma2_layer,
};
