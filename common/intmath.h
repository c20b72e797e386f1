/* SPDX-License-Identifier: BSD-3-Clause */
/* intmath.h — integer helpers more than one module needs. */
#ifndef RCI_INTMATH_H
#define RCI_INTMATH_H
#include <stdint.h>

/* Greatest common divisor (Euclid); rci_gcd_u64(0, b) = b. */
static inline uint64_t rci_gcd_u64(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

#endif
