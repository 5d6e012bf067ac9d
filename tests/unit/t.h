/* t.h — the few macros the C unit tests use. Each check prints
 * "ok - NAME" or "not ok - NAME: expected ..., got ..." (TAP style);
 * tests/run.sh counts the lines. */
#ifndef ASN_T_H
#define ASN_T_H

#include <math.h>
#include <stdio.h>
#include <string.h>

static int t_failed;

#define T_OK(name, cond, ...)                                                 \
    do {                                                                      \
        if (cond) {                                                           \
            printf("ok - %s\n", name);                                        \
        } else {                                                              \
            printf("not ok - %s: ", name);                                    \
            printf(__VA_ARGS__);                                              \
            printf("\n");                                                     \
            t_failed++;                                                       \
        }                                                                     \
    } while (0)

#define T_EQ_INT(name, got, exp)                                              \
    do {                                                                      \
        long long g_ = (long long)(got), e_ = (long long)(exp);               \
        T_OK(name, g_ == e_, "expected %lld, got %lld", e_, g_);              \
    } while (0)

#define T_EQ_STR(name, got, exp)                                              \
    do {                                                                      \
        const char *g_ = (got), *e_ = (exp);                                  \
        T_OK(name, g_ && e_ && !strcmp(g_, e_), "expected \"%s\", got \"%s\"", \
             e_ ? e_ : "(null)", g_ ? g_ : "(null)");                         \
    } while (0)

#define T_NEAR(name, got, exp, tol)                                           \
    do {                                                                      \
        double g_ = (got), e_ = (exp);                                        \
        T_OK(name, fabs(g_ - e_) <= (tol), "expected %.9g, got %.9g (tol %g)", e_, g_, (double)(tol)); \
    } while (0)

#define T_DONE() return t_failed ? 1 : 0

#endif
