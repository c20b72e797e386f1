/* SPDX-License-Identifier: BSD-3-Clause */
/* sub_internal.h — what net/ may ask of an rc_sub beyond the public API
 * (ringcast/sub.h). */
#ifndef RCI_SUB_INTERNAL_H
#define RCI_SUB_INTERNAL_H
#include "ringcast/sub.h"

/* The connection will not be polled any more (multi_sub.c parks it while
 * the program holds views of it): a chunk it is gathering can never be
 * completed, so its gathered view is released now (its buffers or records
 * go back) and the chunk counted in reassembly_drops. Afterwards
 * views_outstanding counts only views the program holds. */
void rci_sub_park(struct rc_sub *s);

#endif
