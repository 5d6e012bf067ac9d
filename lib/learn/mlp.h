/* learn/mlp.h — the SwiGLU MLP's parameter view, shared by the layers
 * (layers.h: its forward and backward passes) and the fused per-token
 * kernels (pertoken.h). Shared by lib/learn (not a public API). */
#ifndef ASN_LEARN_MLP_H
#define ASN_LEARN_MLP_H

/* down(silu(gate(x)) * up(x)), all with bias, inner size int(2 * hidden / 3)
 * (reference SwiGLUMLP). A view of its parameters (or of their gradients):
 * wg, wu are inner x in, wd is out x inner. */
typedef struct asn_nn_mlp {
    int in, inner, out;
    float *wg, *bg, *wu, *bu, *wd, *bd;
} asn_nn_mlp;

static inline int asn_nn_mlp_inner(int hidden) { return (2 * hidden) / 3; }

#endif
