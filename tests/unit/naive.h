/* naive.h — the HF truncation rules written the plain way: full softmax,
 * full sort of the vocabulary (qsort, ties by token index), then the rule
 * as docs/sampling.md states it. The tests use it as an oracle for the library's
 * partial-sort implementation at large V; the benchmark uses it as the
 * baseline. Header-only so both can include it. */
#ifndef ASN_NAIVE_H
#define ASN_NAIVE_H

#include <math.h>
#include <stdlib.h>

typedef struct { float v; int i; } vi;
static int asc(const void *a, const void *b) /* by value, then index */
{
    const vi *x = a, *y = b;
    return x->v < y->v ? -1 : x->v > y->v ? 1 : x->i - y->i;
}

static void softmax_ref(const float *x, int V, float *p)
{
    float m = -INFINITY;
    for (int i = 0; i < V; i++)
        m = fmaxf(m, x[i]);
    double S = 0;
    for (int i = 0; i < V; i++)
        S += expf(x[i] - m);
    for (int i = 0; i < V; i++)
        p[i] = (float)(expf(x[i] - m) / S);
}

static void naive_top_p(float *x, int V, double top_p, int mtk)
{
    vi *s = malloc((size_t)V * sizeof *s);
    float *p = malloc((size_t)V * sizeof *p);
    softmax_ref(x, V, p);
    for (int i = 0; i < V; i++)
        s[i] = (vi){x[i], i};
    qsort(s, (size_t)V, sizeof *s, asc);
    double c = 0;
    float thr = (float)(1.0 - top_p);
    for (int j = 0; j < V; j++) {
        c += p[s[j].i];
        if ((float)c <= thr && j < V - mtk)
            x[s[j].i] = -INFINITY;
    }
    free(s);
    free(p);
}

static void naive_typical(float *x, int V, double mass, int mtk)
{
    float *p = malloc((size_t)V * sizeof *p), *sc = malloc((size_t)V * sizeof *sc);
    vi *s = malloc((size_t)V * sizeof *s);
    softmax_ref(x, V, p);
    float m = -INFINITY;
    for (int i = 0; i < V; i++)
        m = fmaxf(m, x[i]);
    double S = 0;
    for (int i = 0; i < V; i++)
        S += expf(x[i] - m);
    float lse = (float)log(S);
    double H = 0;
    for (int i = 0; i < V; i++) {
        float l = (x[i] - m) - lse;
        if (x[i] != -INFINITY)
            H -= (double)(l * expf(l));
    }
    for (int i = 0; i < V; i++) {
        float l = (x[i] - m) - lse;
        sc[i] = x[i] == -INFINITY ? INFINITY : fabsf(-l - (float)H);
        s[i] = (vi){sc[i], i};
    }
    qsort(s, (size_t)V, sizeof *s, asc);
    double c = 0;
    int L = 0;
    for (int j = 0; j < V; j++) {
        c += p[s[j].i];
        if ((float)c < (float)mass)
            L++;
    }
    if (L > V - 1)
        L = V - 1;
    float tau = s[L].v;
    for (int j = mtk; j < V; j++)
        if (sc[s[j].i] > tau)
            x[s[j].i] = -INFINITY;
    free(p);
    free(sc);
    free(s);
}

static void naive_top_k(float *x, int V, int k)
{
    vi *s = malloc((size_t)V * sizeof *s);
    for (int i = 0; i < V; i++)
        s[i] = (vi){x[i], i};
    qsort(s, (size_t)V, sizeof *s, asc);
    float t = s[V - k].v;
    for (int i = 0; i < V; i++)
        if (x[i] < t)
            x[i] = -INFINITY;
    free(s);
}


/* min_p with the mtk protection done by sorting descending (old HF). */
static void naive_min_p(float *x, int V, double min_p, int mtk)
{
    float *p = malloc((size_t)V * sizeof *p);
    vi *s = malloc((size_t)V * sizeof *s);
    softmax_ref(x, V, p);
    for (int i = 0; i < V; i++)
        s[i] = (vi){x[i], i};
    qsort(s, (size_t)V, sizeof *s, asc);
    float thr = (float)min_p * p[s[V - 1].i];
    for (int j = 0; j < V - mtk; j++)
        if (p[s[j].i] < thr)
            x[s[j].i] = -INFINITY;
    free(p);
    free(s);
}

/* epsilon (eta when use_eta): p < bound and x below the mtk-th largest logit. */
static void naive_epsilon(float *x, int V, double eps, int mtk, int use_eta)
{
    float *p = malloc((size_t)V * sizeof *p);
    vi *s = malloc((size_t)V * sizeof *s);
    softmax_ref(x, V, p);
    for (int i = 0; i < V; i++)
        s[i] = (vi){x[i], i};
    qsort(s, (size_t)V, sizeof *s, asc);
    float kth = s[V - mtk].v, bound = (float)eps;
    if (use_eta) {
        double S = 0;
        for (int i = 0; i < V; i++)
            S += expf(x[i] - s[V - 1].v);
        float lse = s[V - 1].v + (float)log(S);
        double H = 0;
        for (int i = 0; i < V; i++) {
            float lh = x[i] - lse;
            H -= (double)(p[i] * (lh < -3.4e38f ? -3.4e38f : lh));
        }
        bound = fminf((float)eps, sqrtf((float)eps) * expf(-(float)H));
    }
    for (int i = 0; i < V; i++)
        if (p[i] < bound && x[i] < kth)
            x[i] = -INFINITY;
    free(p);
    free(s);
}

#endif
