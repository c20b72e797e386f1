/* SPDX-License-Identifier: BSD-3-Clause */
/* prefault.h — make every page of a fresh allocation resident now.
 *
 * Memory the daemon allocates at start for the worst case (the chunk pool's
 * piece store, a lane's subscriber sets) is otherwise touched bit by bit as
 * more is in use at once than ever before, so its RSS grew with each slow
 * subscriber (issue 12 item 8) until all of it was in; made resident at
 * create, RSS stays flat. A volatile store per page: the compiler may not
 * drop it as a write of zeros to calloc'ed memory. */
#ifndef RCI_PREFAULT_H
#define RCI_PREFAULT_H

#include <stddef.h>

static inline void rci_prefault(void *mem, size_t bytes)
{
    volatile char *p = mem;
    for (size_t off = 0; off < bytes; off += 4096)
        p[off] = 0;
}

#endif
