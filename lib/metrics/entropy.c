/* entropy.c — embedding entropy of a group (see asn/diversity.h): cosine
 * similarity matrix, symmetric eigenvalues through LAPACK's dsyevd (the
 * Fortran entry point OpenBLAS exports, declared by <lapack.h>; no LAPACKE
 * library needed), Shannon entropy in bits of the normalized spectrum. The
 * embeddings themselves come from encode.c. */
#include "asn/diversity.h"

#include <cblas.h>
#include <lapack.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

double asn_log_floor(double x) { return log(x > ASN_DIVERSITY_LOG_FLOOR ? x : ASN_DIVERSITY_LOG_FLOOR); }

void asn_cosine_matrix(const float *emb, int n, int dim, double *sim)
{
    double *u = asn_xmalloc(((size_t)n * (size_t)dim + 1) * sizeof *u);
    for (int i = 0; i < n; i++) {
        const float *x = emb + (size_t)i * dim;
        double ss = 0;
        for (int k = 0; k < dim; k++)
            ss += (double)x[k] * x[k];
        double nrm = sqrt(ss);
        if (nrm == 0) /* sklearn's normalize leaves zero rows as they are */
            nrm = 1;
        for (int k = 0; k < dim; k++)
            u[(size_t)i * dim + k] = x[k] / nrm;
    }
    for (int i = 0; i < n; i++)
        for (int j = i; j < n; j++) {
            const double *a = u + (size_t)i * dim, *b = u + (size_t)j * dim;
            double s = 0;
            for (int k = 0; k < dim; k++)
                s += a[k] * b[k];
            sim[(size_t)i * n + j] = sim[(size_t)j * n + i] = s;
        }
    free(u);
}

int asn_embedding_entropy(const float *emb, int n, int dim, asn_entropy *out, asn_err *e)
{
    memset(out, 0, sizeof *out);
    if (n <= 0)
        return 0;
    double *a = asn_xmalloc((size_t)n * (size_t)n * sizeof *a);
    double *w = asn_xmalloc((size_t)n * sizeof *w);
    asn_cosine_matrix(emb, n, dim, a);
    /* eigenvalues only: LAPACK asks for lwork >= 2n + 1, liwork >= 1 */
    lapack_int N = n, lwork = 2 * n + 1, liwork = 1, info = 0;
    double *work = asn_xmalloc((size_t)lwork * sizeof *work);
    lapack_int iwork[1];
    char jobz = 'N', uplo = 'L';
    /* OpenBLAS's threads would change the eigenvalues' last bits with the
     * machine's core count */
    openblas_set_num_threads(1);
    LAPACK_dsyevd(&jobz, &uplo, &N, a, &N, w, work, &lwork, iwork, &liwork, &info);
    free(work);
    free(a);
    if (info != 0) {
        free(w);
        return asn_err_set(e, "LAPACK dsyevd failed (info %d)", (int)info);
    }
    /* as the reference: eigenvalues > 1e-9, normalized, those > 1e-9 again */
    double sum = 0;
    int kept = 0;
    for (int i = 0; i < n; i++)
        if (w[i] > ASN_DIVERSITY_EIG_MIN)
            sum += w[i], kept++;
    if (kept == 0) {
        free(w);
        return 0;
    }
    double h = 0;
    int rank = 0;
    for (int i = 0; i < n; i++) {
        if (!(w[i] > ASN_DIVERSITY_EIG_MIN))
            continue;
        double p = w[i] / sum;
        if (p > ASN_DIVERSITY_EIG_MIN)
            h -= p * log2(p), rank++;
    }
    free(w);
    out->bits = h;
    out->rank = rank;
    out->score = rank ? asn_log_floor(h) : 0.0;
    return 0;
}
