/* SPDX-License-Identifier: BSD-3-Clause */
/* ringcast/view.h — views: a received chunk that a program may keep without
 * copying it (public API, in libringcast-client and libringcast).
 *
 * A subscriber with rc_sub_params.on_view set hands each chunk to on_view()
 * as a view: tag, flags and the payload as one or more (pointer, length)
 * pieces that point into the subscriber's own memory (receive buffers on
 * send delivery, ring space on RMA delivery, the reassembly buffer for a
 * chunk sent in fragments that had to be copied). The pieces, in order,
 * are the chunk's bytes.
 *
 * Why several pieces: a chunk larger than one receive buffer (send
 * delivery) arrives as several messages, each in its own buffer; on RMA
 * delivery a chunk larger than one record (or with more card-ring pieces
 * than one remote write carries) arrives as several records, each with its
 * own header in the ring. The subscriber hands such a chunk on as one view
 * of one piece per fragment, without copying (up to RC_VIEW_MAX_PIECES
 * fragments). It copies into one piece instead, counted in
 * rc_sub_stats.chunks_reassembled_copied / rma_chunks_copied, a chunk of
 * more fragments, one that would make more than half the receive buffers
 * busy (or leave none to receive its rest), or one taking more than half
 * the ring. Every other view has exactly one piece.
 *
 * Lifetime: a view passed to on_view() is valid until on_view() returns,
 * unless the program takes a reference with rc_view_retain(); it then stays
 * valid, with the memory behind it untouched, until the matching
 * rc_view_release(). Views are reference counted: each retain (and each
 * slice, which retains its parent) needs one release. The memory behind a
 * view is given back (a receive buffer posted again, RMA ring space
 * credited to the publisher) only after the last reference to it is
 * released, in any order (a view of several fragments holds all their
 * receive buffers until then). A program that holds views therefore holds
 * the subscriber's receive capacity: once every receive buffer (send) or the
 * ring (RMA) is held, that subscriber receives nothing more until a
 * release (keeping at most rx_buffers / 2 views never holds them all); the publisher treats it as any slow subscriber (its
 * slow_policy: block stalls only this subscriber's flow, drop loses only
 * its chunks, counted at the publisher). Every view must be released
 * before rc_sub_destroy(): memory behind a view held then is freed with
 * the subscriber (stats.views_outstanding says how many are held).
 *
 * Threads: rc_view_retain(), rc_view_release(), rc_view_slice() and the
 * accessors may be called from any thread, concurrently, for views the
 * caller holds a reference to (or, inside on_view(), the view passed in).
 * They never run callbacks. Release and retain are one atomic operation
 * each (no lock, no allocation); a release that frees the last reference
 * pushes the view onto a lock-free free list or frees a slice. The
 * receive buffer or ring space it frees is reposted or credited by the
 * subscriber's own thread in a later rc_sub_poll().
 */
#ifndef RINGCAST_VIEW_H
#define RINGCAST_VIEW_H
#include <stddef.h>
#include <stdint.h>
#include "ringcast/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most pieces of a view handed to on_view() (records of one chunk gathered
 * without copying). Slices have at most as many as their parent. */
#define RC_VIEW_MAX_PIECES 64u

struct rc_view;

struct rc_view_piece {
    const void *data;
    size_t len;
};

RC_API uint64_t rc_view_tag(const struct rc_view *v);
RC_API uint32_t rc_view_flags(const struct rc_view *v);   /* RC_CHUNK_FLAG_* */
RC_API size_t rc_view_len(const struct rc_view *v);       /* payload bytes, all pieces */
RC_API unsigned rc_view_piece_count(const struct rc_view *v);
/* Piece i (0 .. piece_count - 1); {NULL, 0} for an index outside. */
RC_API struct rc_view_piece rc_view_piece(const struct rc_view *v, unsigned i);
/* Copy len bytes from offset of the view's payload to dst (across pieces).
 * Returns the bytes copied: fewer when the range goes past the end. */
RC_API size_t rc_view_copy(const struct rc_view *v, size_t offset, void *dst, size_t len);

/* Take one more reference: the view (and the memory behind it) stays valid
 * until a matching rc_view_release(). Returns v (NULL for NULL). */
RC_API struct rc_view *rc_view_retain(struct rc_view *v);
/* Drop one reference; the last one gives the memory back (see above).
 * NULL is fine. Never call it for the view on_view() got unless retained. */
RC_API void rc_view_release(struct rc_view *v);
/* A new view of bytes [offset, offset + len) of v, holding a reference to v
 * (released when the slice's last reference is). The caller owns one
 * reference to the slice. NULL when the range is not inside v (offset +
 * len > rc_view_len(v)) or when no memory was left for it (a slice is one
 * small malloc). A range of length 0 inside v is a view of no piece. */
RC_API struct rc_view *rc_view_slice(struct rc_view *v, size_t offset, size_t len);

#ifdef __cplusplus
}
#endif
#endif
