/* asn/interval.h — confidence intervals of a proportion (an accuracy: k
 * successes in n trials), as evaluate reports them. */
#ifndef ASN_INTERVAL_H
#define ASN_INTERVAL_H

/* z of a two-sided 95% normal interval: the 0.975 quantile of N(0, 1). */
#define ASN_Z95 1.959963984540054

/* Wilson's score interval (Wilson 1927; Agresti & Coull 1998, eq. 3): with
 * p = k / n,
 *   centre = (p + z^2 / 2n) / (1 + z^2 / n)
 *   half   = z / (1 + z^2 / n) * sqrt(p (1 - p) / n + z^2 / 4n^2)
 * and [centre - half, centre + half] clamped to [0, 1] (only rounding can
 * take it outside), the lower bound exactly 0 when k = 0 and the upper
 * exactly 1 when k = n (their values in exact arithmetic). Defined for 0 <= k <= n, n >= 1; returns -1 (lo and hi
 * unchanged) otherwise. */
int asn_wilson_interval(long k, long n, double z, double *lo, double *hi);

#endif
