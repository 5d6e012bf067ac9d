/* bt.c — Swiss-system pairing and Bradley-Terry ratings (asn/bt.h). The
 * judges that produce the games live in judge.c. */
#include "asn/bt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------ Swiss pairing */

int asn_swiss_init(asn_swiss *s, int n, int extra_rounds, asn_rng_key key, asn_err *e)
{
    memset(s, 0, sizeof *s);
    if (n < 0 || extra_rounds < 0)
        return asn_err_set(e, "swiss: bad arguments (players %d, extra rounds %d)", n, extra_rounds);
    if ((size_t)n > 65536)
        return asn_err_set(e, "swiss: %d players is more than 65536", n);
    s->n = n;
    int log2n = 0;
    while ((1L << log2n) < n)
        log2n++;
    s->rounds = n < 2 ? 0 : log2n + extra_rounds;
    s->key = key;
    size_t k = n ? (size_t)n : 1;
    s->points = asn_xcalloc(k, sizeof *s->points);
    s->games = asn_xcalloc(k, sizeof *s->games);
    s->byes = asn_xcalloc(k, sizeof *s->byes);
    s->order = asn_xcalloc(k, sizeof *s->order);
    s->taken = asn_xcalloc(k, 1);
    s->met = asn_xcalloc(k * k, 1);
    return 0;
}

void asn_swiss_free(asn_swiss *s)
{
    free(s->points);
    free(s->games);
    free(s->byes);
    free(s->order);
    free(s->taken);
    free(s->met);
    memset(s, 0, sizeof *s);
}

/* Standings: points descending, then player number (a stable sort of the
 * players in input order, as the reference's sorted()). */
static int by_standing(const void *a, const void *b, void *ctx)
{
    const double *pts = ctx;
    int x = *(const int *)a, y = *(const int *)b;
    if (pts[x] != pts[y])
        return pts[x] > pts[y] ? -1 : 1;
    return (x > y) - (x < y);
}

int asn_swiss_pair(asn_swiss *s, int *pairs, int *bye)
{
    *bye = -1;
    int n = s->n, np = 0;
    if (s->round >= s->rounds || n < 2)
        return 0;
    for (int i = 0; i < n; i++)
        s->order[i] = i;
    if (s->round == 0) {
        /* Fisher-Yates from the end, one counter per draw */
        for (int i = n - 1; i > 0; i--) {
            int j = (int)(asn_rng_uniform(s->key, (uint64_t)(n - 1 - i), 0) * (double)(i + 1));
            if (j > i) /* cannot happen with u < 1; kept for safety */
                j = i;
            int t = s->order[i];
            s->order[i] = s->order[j];
            s->order[j] = t;
        }
        for (int i = 0; i + 1 < n; i += 2, np++) {
            pairs[2 * np] = s->order[i];
            pairs[2 * np + 1] = s->order[i + 1];
        }
        if (n % 2)
            *bye = s->order[n - 1];
    } else {
        qsort_r(s->order, (size_t)n, sizeof *s->order, by_standing, s->points);
        memset(s->taken, 0, (size_t)n);
        for (int i = 0; i < n; i++) {
            int p = s->order[i];
            if (s->taken[p])
                continue;
            int first = -1, fresh = -1;
            for (int k = i + 1; k < n && fresh < 0; k++) {
                int q = s->order[k];
                if (s->taken[q])
                    continue;
                if (first < 0)
                    first = q;
                if (!s->met[(size_t)p * n + q])
                    fresh = q;
            }
            if (first < 0) { /* nobody left: p gets the bye */
                *bye = p;
                break;
            }
            int q = fresh >= 0 ? fresh : first;
            s->taken[p] = s->taken[q] = 1;
            pairs[2 * np] = p;
            pairs[2 * np + 1] = q;
            np++;
        }
    }
    if (*bye >= 0) {
        s->points[*bye] += ASN_SWISS_BYE_POINTS;
        s->byes[*bye]++;
    }
    s->round++;
    return np;
}

void asn_swiss_record(asn_swiss *s, int a, int b, double score_a)
{
    s->points[a] += score_a;
    s->points[b] += 1.0 - score_a;
    s->games[a]++;
    s->games[b]++;
    s->met[(size_t)a * s->n + b] = s->met[(size_t)b * s->n + a] = 1;
}

/* ----------------------------------------------------- Bradley-Terry */

static double sigmoid(double x) { return x >= 0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x)); }

/* log sigmoid(x), accurate for large |x| */
static double log_sigmoid(double x) { return x >= 0 ? -log1p(exp(-x)) : x - log1p(exp(x)); }

double asn_bt_objective(int n, const asn_bt_game *g, size_t m, double prior, const double *r, double *grad)
{
    double L = 0;
    if (grad)
        memset(grad, 0, (size_t)n * sizeof *grad);
    for (size_t k = 0; k < m; k++) {
        double d = r[g[k].i] - r[g[k].j], s = g[k].s;
        L += s * log_sigmoid(d) + (1 - s) * log_sigmoid(-d);
        if (grad) {
            double err = s - sigmoid(d);
            grad[g[k].i] += err;
            grad[g[k].j] -= err;
        }
    }
    if (prior > 0)
        for (int i = 0; i < n; i++) {
            L += prior * 0.5 * (log_sigmoid(r[i]) + log_sigmoid(-r[i]));
            if (grad)
                grad[i] += prior * (0.5 - sigmoid(r[i]));
        }
    return L;
}

/* The negative Hessian of the objective, A = sum_g w_g (e_i - e_j)(e_i - e_j)^T
 * + diag(prior sigma'(r)), as its game weights and diagonal, with the
 * gauge term (1/n) 1 1^T added when there is no prior (the likelihood
 * alone does not change when every rating moves together). */
typedef struct hess {
    int n;
    const asn_bt_game *g;
    size_t m;
    double *w, *diag;
    int gauge;
} hess;

static void hess_mul(const hess *h, const double *x, double *y)
{
    double mean = 0;
    for (int i = 0; i < h->n; i++) {
        y[i] = h->diag[i] * x[i];
        mean += x[i];
    }
    mean /= h->n;
    for (size_t k = 0; k < h->m; k++) {
        double t = h->w[k] * (x[h->g[k].i] - x[h->g[k].j]);
        y[h->g[k].i] += t;
        y[h->g[k].j] -= t;
    }
    if (h->gauge)
        for (int i = 0; i < h->n; i++)
            y[i] += mean;
}

static double dot(const double *a, const double *b, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

/* Solves A x = b by conjugate gradients preconditioned with A's diagonal,
 * to a relative residual of 1e-14 (or 4n + 100 iterations). work: 4n. */
static void cg_solve(const hess *h, const double *b, double *x, double *work)
{
    int n = h->n;
    double *rr = work, *z = work + n, *p = work + 2 * n, *q = work + 3 * n;
    /* the preconditioner: A's diagonal (prior part + game weights + gauge) */
    double *dinv = malloc((size_t)n * sizeof *dinv);
    for (int i = 0; i < n; i++)
        dinv[i] = h->diag[i] + (h->gauge ? 1.0 / n : 0.0);
    for (size_t k = 0; k < h->m; k++) {
        dinv[h->g[k].i] += h->w[k];
        dinv[h->g[k].j] += h->w[k];
    }
    for (int i = 0; i < n; i++)
        dinv[i] = dinv[i] > 0 ? 1.0 / dinv[i] : 1.0;
    memset(x, 0, (size_t)n * sizeof *x);
    memcpy(rr, b, (size_t)n * sizeof *rr);
    double bn = sqrt(dot(b, b, n));
    for (int i = 0; i < n; i++)
        z[i] = dinv[i] * rr[i];
    memcpy(p, z, (size_t)n * sizeof *p);
    double rz = dot(rr, z, n);
    for (int it = 0; it < 4 * n + 100 && bn > 0; it++) {
        hess_mul(h, p, q);
        double pq = dot(p, q, n);
        if (!(pq > 0))
            break;
        double alpha = rz / pq;
        for (int i = 0; i < n; i++) {
            x[i] += alpha * p[i];
            rr[i] -= alpha * q[i];
        }
        if (sqrt(dot(rr, rr, n)) <= 1e-14 * bn)
            break;
        for (int i = 0; i < n; i++)
            z[i] = dinv[i] * rr[i];
        double rz2 = dot(rr, z, n);
        for (int i = 0; i < n; i++)
            p[i] = z[i] + (rz2 / rz) * p[i];
        rz = rz2;
    }
    free(dinv);
}

static double max_abs(const double *v, int n)
{
    double m = 0;
    for (int i = 0; i < n; i++)
        m = fabs(v[i]) > m ? fabs(v[i]) : m;
    return m;
}

/* Whether every player can reach every other along "scored something
 * against" edges (i -> j when i scored > 0 against j): the condition for
 * the plain likelihood to have a finite maximum (Ford 1957; Hunter 2004,
 * assumption 1), checked by a search forward and one backward from
 * player 0. */
static int strongly_connected(int n, const asn_bt_game *g, size_t m)
{
    int *stack = asn_xmalloc((size_t)n * sizeof *stack), ok = 1;
    unsigned char *seen = asn_xmalloc((size_t)n);
    for (int dir = 0; dir < 2 && ok; dir++) {
        memset(seen, 0, (size_t)n);
        int top = 0, reached = 1;
        stack[top++] = 0;
        seen[0] = 1;
        /* simple and O(n m): groups hold hundreds of players */
        while (top) {
            int v = stack[--top];
            for (size_t k = 0; k < m; k++) {
                int i = g[k].i, j = g[k].j;
                /* i -> j when i scored > 0; j -> i when j did */
                int to = -1;
                if (dir == 0)
                    to = (i == v && g[k].s > 0) ? j : (j == v && g[k].s < 1) ? i : -1;
                else
                    to = (j == v && g[k].s > 0) ? i : (i == v && g[k].s < 1) ? j : -1;
                if (to >= 0 && !seen[to]) {
                    seen[to] = 1;
                    reached++;
                    stack[top++] = to;
                }
            }
        }
        ok = reached == n;
    }
    free(stack);
    free(seen);
    return ok;
}

/* Newton steps allowed, and the rating magnitude taken as divergence (a
 * rating of 60 is a win probability of 1 - 1e-26: no data asks for it). */
enum { BT_MAX_ITER = 200 };
#define BT_DIVERGED 60.0

int asn_bt_fit(int n, const asn_bt_game *g, size_t m, double prior, double *r, asn_bt_info *info,
               asn_err *e)
{
    if (info)
        *info = (asn_bt_info){0, 0};
    if (n <= 0)
        return 0;
    if (!(prior >= 0) || !isfinite(prior))
        return asn_err_set(e, "bradley-terry: the prior must be >= 0");
    for (size_t k = 0; k < m; k++)
        if (g[k].i < 0 || g[k].i >= n || g[k].j < 0 || g[k].j >= n || g[k].i == g[k].j ||
            !(g[k].s >= 0 && g[k].s <= 1))
            return asn_err_set(e, "bradley-terry: game %zu (%d vs %d, score %g) is not valid", k, g[k].i,
                               g[k].j, g[k].s);
    if (prior == 0 && !strongly_connected(n, g, m))
        return asn_err_set(e, "bradley-terry: no finite maximum-likelihood ratings (some players won, or "
                              "lost, every game against the others, or never met them); use a prior > 0");
    double *grad = asn_xmalloc((size_t)n * sizeof *grad), *step = asn_xmalloc((size_t)n * sizeof *step);
    double *trial = asn_xmalloc((size_t)n * sizeof *trial), *work = asn_xmalloc(4 * (size_t)n * sizeof *work);
    hess h = {n, g, m, asn_xmalloc((m ? m : 1) * sizeof(double)), asn_xmalloc((size_t)n * sizeof(double)),
              prior == 0};
    memset(r, 0, (size_t)n * sizeof *r);
    double L = asn_bt_objective(n, g, m, prior, r, grad), gmax = max_abs(grad, n);
    int it = 0, rc = 0;
    while (gmax > ASN_BT_TOL) {
        if (it == BT_MAX_ITER || max_abs(r, n) > BT_DIVERGED) {
            rc = asn_err_set(e, "bradley-terry: no finite maximum-likelihood ratings (a player or group "
                                "won or lost every game, or the comparisons are not connected); use a "
                                "prior > 0");
            break;
        }
        for (size_t k = 0; k < m; k++) {
            double p = sigmoid(r[g[k].i] - r[g[k].j]);
            h.w[k] = p * (1 - p);
        }
        for (int i = 0; i < n; i++) {
            double p = sigmoid(r[i]);
            h.diag[i] = prior * p * (1 - p);
        }
        cg_solve(&h, grad, step, work);
        /* backtracking (Armijo) on the objective; near the optimum the
         * full step is taken (the differences are at rounding level) */
        double slope = dot(grad, step, n), t = 1;
        for (int k = 0; k < 60; k++) {
            for (int i = 0; i < n; i++)
                trial[i] = r[i] + t * step[i];
            double Lt = asn_bt_objective(n, g, m, prior, trial, NULL);
            if (Lt >= L + 1e-4 * t * slope || gmax < 1e-6)
                break;
            t *= 0.5;
        }
        memcpy(r, trial, (size_t)n * sizeof *r);
        L = asn_bt_objective(n, g, m, prior, r, grad);
        gmax = max_abs(grad, n);
        it++;
    }
    if (info)
        *info = (asn_bt_info){it, gmax};
    double mean = 0;
    for (int i = 0; i < n; i++)
        mean += r[i];
    mean /= n;
    for (int i = 0; i < n; i++)
        r[i] -= mean;
    free(grad), free(step), free(trial), free(work), free(h.w), free(h.diag);
    return rc;
}

void asn_bt_fit_reference(int n, const asn_bt_game *g, size_t m, double *r)
{
    if (n <= 0)
        return;
    double *grad = asn_xmalloc((size_t)n * sizeof *grad);
    unsigned char *played = asn_xcalloc((size_t)n, 1);
    for (size_t k = 0; k < m; k++)
        played[g[k].i] = played[g[k].j] = 1;
    memset(r, 0, (size_t)n * sizeof *r);
    for (int step = 0; step < ASN_BT_REF_STEPS; step++) {
        memset(grad, 0, (size_t)n * sizeof *grad);
        for (size_t k = 0; k < m; k++) {
            double d = r[g[k].i] - r[g[k].j];
            d = d < -ASN_BT_REF_CLAMP ? -ASN_BT_REF_CLAMP : d > ASN_BT_REF_CLAMP ? ASN_BT_REF_CLAMP : d;
            double err = g[k].s - 1.0 / (1.0 + exp(-d));
            grad[g[k].i] += err;
            grad[g[k].j] -= err;
        }
        for (int i = 0; i < n; i++)
            r[i] += ASN_BT_REF_LR * grad[i];
    }
    double mean = 0;
    int np = 0;
    for (int i = 0; i < n; i++)
        if (played[i])
            mean += r[i], np++;
    if (np)
        mean /= np;
    for (int i = 0; i < n; i++)
        r[i] = played[i] ? r[i] - mean : NAN;
    free(grad);
    free(played);
}
