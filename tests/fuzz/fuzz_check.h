/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_check.h — FZ_CHECK(cond, fmt, ...): a property every accepted input
 * must keep. A failure names the target (FZ_TARGET, defined before this
 * include), file:line and the condition, then aborts, which libFuzzer
 * reports as a crash with the input that caused it. */
#ifndef RCI_FUZZ_CHECK_H
#define RCI_FUZZ_CHECK_H
#include <stdio.h>
#include <stdlib.h>

#define FZ_CHECK(cond, ...)                                                   \
    do {                                                                      \
        if (!(cond)) {                                                        \
            fprintf(stderr, "%s: %s:%d: check failed: %s: ", FZ_TARGET,       \
                    __FILE__, __LINE__, #cond);                               \
            fprintf(stderr, __VA_ARGS__);                                     \
            fputc('\n', stderr);                                              \
            abort();                                                          \
        }                                                                     \
    } while (0)

#endif
