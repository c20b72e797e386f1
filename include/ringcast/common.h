/* SPDX-License-Identifier: BSD-3-Clause */
/* ringcast/common.h — what every public ringcast header shares: the export
 * macro and the chunk flags. Part of the installed API (include/ringcast/,
 * documented in API.md); it includes only system headers. */
#ifndef RINGCAST_COMMON_H
#define RINGCAST_COMMON_H

/* RC_API marks a function of the public API. The libraries are built with
 * -fvisibility=hidden, so only functions declared with RC_API are exported
 * from libringcast-client.so and libringcast.so. */
#if defined(__GNUC__) || defined(__clang__)
#define RC_API __attribute__((visibility("default")))
#else
#define RC_API
#endif

/* Chunk flags: what the card said about a chunk (the OR over the trailers of
 * its subchunks). A subscriber gets them in on_data(); a client publisher
 * passes them to rc_pub_send(); --out records carry them. A flagged chunk is
 * still delivered, with whatever payload the card wrote. The values are those
 * of the readout's own definitions (readout/chunk.h; static assertions in
 * api/full_constants.c tie the two). */
#define RC_CHUNK_FLAG_TRUNCATED  (1u << 0)  /* the card cut the chunk short */
#define RC_CHUNK_FLAG_ERROR      (1u << 1)  /* the front end reported an error */
#define RC_CHUNK_FLAG_CRC_ERROR  (1u << 2)  /* CRC check failed on the link */
#define RC_CHUNK_FLAG_BUSY       (1u << 3)  /* the front end was busy (data may be missing) */
#define RC_CHUNK_FLAGS_ALL       0xfu

#endif
