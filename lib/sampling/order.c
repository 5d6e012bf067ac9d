/* order.c — partial ordering of a row. Truncation samplers need the order of
 * the tokens near their cut, not of the whole vocabulary: these helpers
 * collect the tokens on one side of a value cut and sort just those. */
#include "sampling_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Spans below the maximum tried in turn when collecting the top of a row;
 * a language model's nucleus is usually within a few nats of its max. */
const float asn_spans[] = {4.0f, 8.0f, 16.0f, 32.0f, 64.0f, INFINITY};
const int asn_n_spans = sizeof asn_spans / sizeof asn_spans[0];

/* ------------------------------------------------------------- u64 sort */

static void insertion(uint64_t *a, int n)
{
    for (int i = 1; i < n; i++) {
        uint64_t v = a[i];
        int j = i;
        for (; j > 0 && a[j - 1] > v; j--)
            a[j] = a[j - 1];
        a[j] = v;
    }
}

/* LSD radix sort on 16-bit digits, skipping digits that are constant. */
static void radix(uint64_t *a, int n)
{
    uint64_t *tmp = asn_xmalloc((size_t)n * sizeof *tmp);
    uint32_t *cnt = asn_xmalloc(65536 * sizeof *cnt);
    uint64_t *src = a, *dst = tmp;
    for (int shift = 0; shift < 64; shift += 16) {
        memset(cnt, 0, 65536 * sizeof *cnt);
        for (int i = 0; i < n; i++)
            cnt[(src[i] >> shift) & 0xffff]++;
        if (cnt[(src[0] >> shift) & 0xffff] == (uint32_t)n)
            continue; /* every element has this digit */
        uint32_t sum = 0;
        for (int d = 0; d < 65536; d++) {
            uint32_t c = cnt[d];
            cnt[d] = sum;
            sum += c;
        }
        for (int i = 0; i < n; i++)
            dst[cnt[(src[i] >> shift) & 0xffff]++] = src[i];
        uint64_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != a)
        memcpy(a, src, (size_t)n * sizeof *a);
    free(cnt);
    free(tmp);
}

static void quick(uint64_t *a, int n)
{
    while (n > 24) {
        uint64_t x = a[0], y = a[n / 2], z = a[n - 1];
        uint64_t piv = x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y));
        int i = 0, j = n - 1;
        for (;;) {
            while (a[i] < piv)
                i++;
            while (a[j] > piv)
                j--;
            if (i >= j)
                break;
            uint64_t t = a[i];
            a[i] = a[j];
            a[j] = t;
            i++, j--;
        }
        /* recurse into the smaller half */
        if (j + 1 < n - j - 1) {
            quick(a, j + 1);
            a += j + 1;
            n -= j + 1;
        } else {
            quick(a + j + 1, n - j - 1);
            n = j + 1;
        }
    }
    insertion(a, n);
}

void asn_sort_u64(uint64_t *a, int n)
{
    if (n > 4096)
        radix(a, n);
    else
        quick(a, n);
}

/* -------------------------------------------------------------- collect */

int asn_collect_sorted(asn_workspace *ws, const float *key, int V, float cut, int below)
{
    int n = asn_collect(key, V, cut, below, ws->keys);
    asn_sort_u64(ws->keys, n);
    return n;
}

float asn_kth_largest(asn_workspace *ws, const float *x, int V, int k)
{
    if (k > V)
        return -INFINITY;
    float m = asn_row_max(x, V);
    if (k == 1)
        return m;
    for (int s = 0; s < asn_n_spans; s++) {
        float cut = m - asn_spans[s];
        int n = asn_collect(x, V, cut, 0, ws->keys);
        if (n < k && s + 1 < asn_n_spans)
            continue;
        asn_sort_u64(ws->keys, n);
        return n >= k ? asn_pack_val(ws->keys[n - k]) : -INFINITY;
    }
    return -INFINITY; /* not reached: the last span collects everything */
}
