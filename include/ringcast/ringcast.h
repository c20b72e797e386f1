/* SPDX-License-Identifier: BSD-3-Clause */
/* ringcast/ringcast.h — the whole public ringcast API in one include:
 *   ringcast/version.h  RINGCAST_VERSION_*, rc_version()
 *   ringcast/common.h   RC_API, chunk flags RC_CHUNK_FLAG_*
 *   ringcast/sub.h      subscriber: connect, subscribe to tags, receive chunks
 *   ringcast/view.h     views: received chunks a program may keep (retain, release
 *                       from any thread, slice) without copying
 *   ringcast/pub.h      client publisher: send your own registered memory, zero copy
 *   ringcast/record.h   the record format of `ringcast-sub --out` files
 *   ringcast/readout.h  embed the readout: cards from a configuration, chunks in a
 *                       callback (libringcast only)
 * Link with `pkg-config --libs ringcast-client` (libfabric and nothing else)
 * or `pkg-config --libs ringcast` (the full library). API.md, installed to
 * share/doc/ringcast/, describes lifecycles and threads. */
#ifndef RINGCAST_H
#define RINGCAST_H
#include "ringcast/common.h"
#include "ringcast/version.h"
#include "ringcast/sub.h"
#include "ringcast/view.h"
#include "ringcast/discover.h"
#include "ringcast/pub.h"
#include "ringcast/record.h"
#include "ringcast/pattern.h"
#include "ringcast/readout.h"
#endif
