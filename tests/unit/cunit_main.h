/* SPDX-License-Identifier: BSD-3-Clause */
/* cunit_main.h — every CUnit test binary ends with RCI_CUNIT_MAIN(register_fn).
 * CUnit 2.1's CU_basic_run_tests() returns 0 even when tests fail, so the
 * exit status comes from CU_get_number_of_failures(). */
#ifndef RCI_CUNIT_MAIN_H
#define RCI_CUNIT_MAIN_H
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>

#define RCI_CUNIT_MAIN(register_fn)                                            \
    int main(void)                                                            \
    {                                                                         \
        if (CU_initialize_registry() != CUE_SUCCESS) return 2;                \
        register_fn();                                                        \
        if (CU_get_error() != CUE_SUCCESS) {                                  \
            fprintf(stderr, "CUnit registry error: %s\n", CU_get_error_msg());\
            return 2;                                                         \
        }                                                                     \
        CU_basic_set_mode(CU_BRM_NORMAL);                                     \
        CU_basic_run_tests();                                                 \
        unsigned failed = CU_get_number_of_failures();                        \
        unsigned run = CU_get_number_of_tests_run();                          \
        unsigned tfail = CU_get_number_of_tests_failed();                     \
        CU_cleanup_registry();                                                \
        if (run == 0) { fprintf(stderr, "no test ran\n"); return 1; }         \
        return (failed || tfail) ? 1 : 0;                                     \
    }

/* Add a suite with its tests: RCI_SUITE("name", {"t1", fn1}, {"t2", fn2}). */
#define RCI_SUITE(name, ...)                                                   \
    do {                                                                      \
        CU_pSuite s_ = CU_add_suite(name, NULL, NULL);                        \
        struct { const char *n; CU_TestFunc f; } t_[] = {__VA_ARGS__};        \
        for (size_t i_ = 0; s_ && i_ < sizeof t_ / sizeof t_[0]; i_++)        \
            CU_add_test(s_, t_[i_].n, t_[i_].f);                              \
    } while (0)

#endif
