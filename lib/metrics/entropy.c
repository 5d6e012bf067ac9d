/* entropy.c — embedding entropy of a group (see asn/diversity.h): cosine
 * similarity matrix, symmetric eigenvalues through LAPACK's dsyevd (the
 * Fortran entry point OpenBLAS exports, declared by <lapack.h>; no LAPACKE
 * library needed), Shannon entropy in bits of the normalized spectrum; and
 * the embeddings themselves, from a model through the batched engine. */
#include "asn/diversity.h"

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

int asn_embed_texts(asn_engine *en, const asn_vocab *v, int dim, const char *const *texts, const size_t *lens,
                    int n, int max_tokens, long batch_tokens, float *out, asn_err *e)
{
    if (max_tokens <= 0)
        return asn_err_set(e, "asn_embed_texts: max_tokens must be positive");
    int32_t **ids = asn_xcalloc((size_t)n + 1, sizeof *ids);
    size_t *len = asn_xcalloc((size_t)n + 1, sizeof *len);
    asn_batch_item *items = asn_xcalloc((size_t)n + 1, sizeof *items);
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        rc = asn_tokenize(v, texts[i], lens ? lens[i] : strlen(texts[i]), 1, 0, &ids[i], &len[i], e);
        if (len[i] > (size_t)max_tokens)
            len[i] = (size_t)max_tokens;
        if (!rc && len[i] == 0)
            memset(out + (size_t)i * dim, 0, (size_t)dim * sizeof *out);
    }
    /* consecutive texts into batches of at most batch_tokens tokens */
    for (int i = 0; i < n && !rc;) {
        int k = 0;
        long tokens = 0;
        for (; i < n; i++) {
            if (len[i] == 0)
                continue;
            if (k > 0 && tokens + (long)len[i] > batch_tokens)
                break;
            items[k++] = (asn_batch_item){asn_seq_new(en), ids[i], (int)len[i], NULL, 0, out + (size_t)i * dim, NULL};
            tokens += (long)len[i];
        }
        if (k)
            rc = asn_engine_decode(en, items, k, e);
        for (int j = 0; j < k; j++)
            asn_seq_free(en, items[j].seq);
    }
    for (int i = 0; i < n; i++)
        free(ids[i]);
    free(ids);
    free(len);
    free(items);
    return rc;
}
