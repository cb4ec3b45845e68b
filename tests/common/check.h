/* Tiny test helpers: fail loudly on the first wrong value, saying which, expected and got. */
#ifndef CUDARL_TEST_CHECK_H
#define CUDARL_TEST_CHECK_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond)                                                               \
    do {                                                                          \
        if (!(cond)) {                                                            \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);       \
            exit(1);                                                              \
        }                                                                         \
    } while (0)

#define CHECK_MSG(cond, ...)                                                      \
    do {                                                                          \
        if (!(cond)) {                                                            \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);       \
            fprintf(stderr, __VA_ARGS__);                                         \
            fputc('\n', stderr);                                                  \
            exit(1);                                                              \
        }                                                                         \
    } while (0)

/* |got - want| <= atol + rtol * |want|; NaN never passes. */
#define CHECK_CLOSE(what, got, want, atol, rtol)                                  \
    do {                                                                          \
        double g_ = (double)(got), w_ = (double)(want);                          \
        if (!(fabs(g_ - w_) <= (atol) + (rtol) * fabs(w_))) {                     \
            fprintf(stderr, "FAIL %s:%d: %s: expected %.9g, got %.9g (atol %g, rtol %g)\n", \
                    __FILE__, __LINE__, what, w_, g_, (double)(atol), (double)(rtol)); \
            exit(1);                                                              \
        }                                                                         \
    } while (0)

#define CHECK_OK(expr)                                                            \
    do {                                                                          \
        cudarl_status s_ = (expr);                                                \
        if (s_ != CUDARL_OK) {                                                    \
            fprintf(stderr, "FAIL %s:%d: %s returned %s: %s\n", __FILE__, __LINE__, #expr, \
                    cudarl_status_name(s_), cudarl_last_error());                 \
            exit(1);                                                              \
        }                                                                         \
    } while (0)

#endif
