/* SPDX-License-Identifier: BSD-3-Clause */
/* bounce.c — gather-copy bounce buffers. A chunk made of more pieces than one
 * message carries (tcp takes 3 payload iovs, a 64 KiB chunk in 4 KiB blocks
 * is 17 pieces) costs one message per 3 pieces when sent zero copy; the
 * message rate, not the link, then limits it. rci_publisher_send_gather()
 * copies such a chunk's fragments into registered buffers instead, one
 * message per buffer (UCX's bcopy above the zcopy iov limit). The bytes are
 * counted as copied (gather_bytes); chunks whose pieces fit a message stay
 * zero copy. A buffer belongs to the header slot of the fragment it carries
 * and goes back with it (rci_zc_slot_done). Allocated and registered once at
 * create: the send path only takes, copies and gives back. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/errbuf.h"
#include "net/pub_internal.h"

#define RCI_BOUNCE_ALIGN 4096u

int rci_bounce_init(struct rci_publisher *p, char *err, size_t errlen)
{
    p->nbounce = p->fab.params.bounce_buffers;
    if (p->nbounce == 0)
        return 0;
    p->bounce_size = p->fab.params.buffered_page_size;
    if (p->bounce_size < RCI_PUB_MIN_RX_BUFFER || p->nbounce >= (1u << RCI_PUB_INDEX_BITS) / 2) {
        rci_set_err(err, errlen, "publisher: bounce_buffers needs buffered_page_size >= %u B and fewer "
                    "than 2^27 buffers", RCI_PUB_MIN_RX_BUFFER);
        return -EINVAL;
    }
    size_t bytes = (size_t)p->nbounce * p->bounce_size;
    p->bounce_mem = aligned_alloc(RCI_BOUNCE_ALIGN, (bytes + RCI_BOUNCE_ALIGN - 1) & ~(size_t)(RCI_BOUNCE_ALIGN - 1));
    p->bounce_free = calloc(p->nbounce, sizeof *p->bounce_free);
    if (!p->bounce_mem || !p->bounce_free)
        return rci_fabric_error(&p->fab, err, errlen, "rci_bounce_init(alloc)", -FI_ENOMEM);
    memset(p->bounce_mem, 0, bytes);   /* touched now, not on the first send */
    for (uint32_t i = 0; i < p->nbounce; i++)
        p->bounce_free[i] = p->nbounce - 1 - i;
    p->nbounce_free = p->nbounce;
    return rci_fabric_mr_reg(&p->fab, p->bounce_mem, bytes, FI_SEND, p->fab.ep, &p->bounce_mr, err,
                            errlen);
}

void rci_bounce_fini(struct rci_publisher *p)
{
    rci_fabric_mr_close(&p->bounce_mr);
    free(p->bounce_mem);
    free(p->bounce_free);
    p->bounce_mem = NULL;
    p->bounce_free = NULL;
    p->nbounce = p->nbounce_free = 0;
}

uint32_t rci_bounce_take(struct rci_publisher *p)
{
    return p->nbounce_free ? p->bounce_free[--p->nbounce_free] : RCI_PUB_NONE;
}

void rci_bounce_give(struct rci_publisher *p, uint32_t b)
{
    p->bounce_free[p->nbounce_free++] = b;
}

uint8_t *rci_bounce_addr(const struct rci_publisher *p, uint32_t b)
{
    return p->bounce_mem + (size_t)b * p->bounce_size;
}

uint32_t rci_bounce_gather(struct rci_publisher *p, uint32_t b, const struct iovec *src, unsigned n,
                           struct rci_pub_frag_cursor *c, uint64_t max)
{
    uint8_t *dst = rci_bounce_addr(p, b);
    uint64_t bytes = 0;
    if (max > p->bounce_size)
        max = p->bounce_size;
    while (bytes < max && c->piece < n) {
        size_t left = src[c->piece].iov_len - c->off;
        size_t take = left < max - bytes ? left : (size_t)(max - bytes);
        if (take)
            memcpy(dst + bytes, (const uint8_t *)src[c->piece].iov_base + c->off, take);
        bytes += take;
        c->off += take;
        if (c->off == src[c->piece].iov_len) {
            c->piece++;
            c->off = 0;
        }
    }
    c->done += bytes;
    p->st.gather_bytes += bytes;
    return (uint32_t)bytes;
}
