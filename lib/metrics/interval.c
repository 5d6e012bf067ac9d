/* interval.c — Wilson's score interval of a proportion. */
#include "asn/interval.h"

#include <math.h>

int asn_wilson_interval(long k, long n, double z, double *lo, double *hi)
{
    if (n < 1 || k < 0 || k > n)
        return -1;
    double nn = (double)n, p = (double)k / nn, z2 = z * z;
    double denom = 1.0 + z2 / nn;
    double centre = (p + z2 / (2.0 * nn)) / denom;
    double half = z / denom * sqrt(p * (1.0 - p) / nn + z2 / (4.0 * nn * nn));
    double a = centre - half, b = centre + half;
    /* exactly 0 at k = 0 and 1 at k = n, where rounding leaves a few ulps */
    *lo = k == 0 || a < 0.0 ? 0.0 : a;
    *hi = k == n || b > 1.0 ? 1.0 : b;
    return 0;
}
