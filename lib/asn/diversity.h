/* asn/diversity.h — the embedding entropy of a group of texts and the log
 * transform of the reference project's diversity labeller
 * (efficient_diversity.py): what score-diversity writes next to self-BLEU
 * (asn/bleu.h). */
#ifndef ASN_DIVERSITY_H
#define ASN_DIVERSITY_H

#include <stddef.h>

#include "asn/core.h"
#include "asn/encode.h"
#include "asn/model.h"
#include "asn/vocab.h"

/* The reference's floor before its natural logs: log(max(x, 1e-9)). */
#define ASN_DIVERSITY_LOG_FLOOR 1e-9
/* Eigenvalues (and normalized eigenvalues) at or below this are dropped, as
 * the reference does with numpy's eigvalsh output. */
#define ASN_DIVERSITY_EIG_MIN 1e-9

/* log(max(x, ASN_DIVERSITY_LOG_FLOOR)). */
double asn_log_floor(double x);

/* Cosine similarities of n rows of dim floats into sim (n * n doubles, row
 * major), as sklearn's cosine_similarity: rows scaled to unit norm (a zero
 * row stays zero), then all dot products; computed in double. */
void asn_cosine_matrix(const float *emb, int n, int dim, double *sim);

typedef struct asn_entropy {
    double bits;  /* -sum p log2 p over the eigenvalues kept, normalized to sum 1 */
    double score; /* the reference's embedding_entropy: log(max(bits, 1e-9)); 0.0
                     (not logged, as the reference returns) when no eigenvalue is kept */
    int rank;     /* eigenvalues kept */
} asn_entropy;

/* The eigenvalue entropy of the cosine similarity matrix of n embeddings
 * (rows of dim floats): symmetric eigenvalues by LAPACK (dsyevd), those >
 * ASN_DIVERSITY_EIG_MIN kept and normalized to sum 1, normalized values >
 * ASN_DIVERSITY_EIG_MIN kept, entropy in bits. n == 0 gives all zeros.
 * Returns 0, or -1 with e set if LAPACK fails. */
int asn_embedding_entropy(const float *emb, int n, int dim, asn_entropy *out, asn_err *e);

/* The embeddings themselves: asn_embed_texts of asn/encode.h. */

#endif
