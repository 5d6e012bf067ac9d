/* test_interval.c — Wilson's score interval (asn/interval.h):
 *  1. against published values: Agresti & Coull's and statsmodels'
 *     proportion_confint(method="wilson") give (0.2366, 0.7634) for 5 of 10
 *     and (0, 0.2775) for 0 of 10;
 *  2. against the formula evaluated in Python float64 (the bounds below
 *     printed with %.17g) to 1e-15, the bounds at k = 0 and k = n exactly
 *     0 and 1;
 *  3. bad counts are refused. */
#include "asn/interval.h"
#include "t.h"

static void published(void)
{
    double lo = -1, hi = -1;
    asn_wilson_interval(5, 10, ASN_Z95, &lo, &hi);
    T_NEAR("wilson 5/10 lo (published)", lo, 0.2366, 5e-5);
    T_NEAR("wilson 5/10 hi (published)", hi, 0.7634, 5e-5);
    asn_wilson_interval(0, 10, ASN_Z95, &lo, &hi);
    T_NEAR("wilson 0/10 lo (published)", lo, 0.0, 0.0);
    T_NEAR("wilson 0/10 hi (published)", hi, 0.2775, 5e-5);
}

static void python_float64(void)
{
    static const struct {
        long k, n;
        double lo, hi;
    } cases[] = {
        {0, 10, 0, 0.2775327998628892},
        {5, 10, 0.236593090512564, 0.76340690948743606},
        {10, 10, 0.72246720013711074, 1},
        {1, 1, 0.20654931437723745, 1},
        {37, 50, 0.60446842735151174, 0.84128472506447616},
        {1, 3, 0.061491944720396152, 0.79234039919795229},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double lo = -1, hi = -1;
        char name[64];
        int rc = asn_wilson_interval(cases[i].k, cases[i].n, ASN_Z95, &lo, &hi);
        snprintf(name, sizeof name, "wilson %ld/%ld defined", cases[i].k, cases[i].n);
        T_EQ_INT(name, rc, 0);
        snprintf(name, sizeof name, "wilson %ld/%ld lo", cases[i].k, cases[i].n);
        T_NEAR(name, lo, cases[i].lo, 1e-15);
        snprintf(name, sizeof name, "wilson %ld/%ld hi", cases[i].k, cases[i].n);
        T_NEAR(name, hi, cases[i].hi, 1e-15);
    }
}

static void refused(void)
{
    double lo = 7, hi = 7;
    T_EQ_INT("wilson n = 0 refused", asn_wilson_interval(0, 0, ASN_Z95, &lo, &hi), -1);
    T_EQ_INT("wilson k > n refused", asn_wilson_interval(3, 2, ASN_Z95, &lo, &hi), -1);
    T_EQ_INT("wilson k < 0 refused", asn_wilson_interval(-1, 2, ASN_Z95, &lo, &hi), -1);
    T_OK("wilson refused leaves the bounds", lo == 7 && hi == 7, "lo %g hi %g", lo, hi);
}

int main(void)
{
    published();
    python_float64();
    double lo, hi;
    asn_wilson_interval(0, 7, ASN_Z95, &lo, &hi);
    T_OK("wilson 0/7 lo is exactly 0", lo == 0.0, "%.17g", lo);
    asn_wilson_interval(7, 7, ASN_Z95, &lo, &hi);
    T_OK("wilson 7/7 hi is exactly 1", hi == 1.0, "%.17g", hi);
    refused();
    T_DONE();
}
