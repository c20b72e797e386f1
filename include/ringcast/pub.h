/* SPDX-License-Identifier: BSD-3-Clause */
/* ringcast/pub.h — the client publisher: publish chunks from your program's
 * own registered memory, zero copy, to ringcast subscribers (public API, in
 * libringcast-client and libringcast; includes only other public ringcast
 * headers and system headers).
 *
 * What it offers is what netio's SendEndpointZeroCopy offers: a pool of
 * registered header slots (one per send in flight), a send of
 * [header, data pieces...] where the pieces stay in your memory, a completion
 * callback that hands your key back, the number of free slots, and the keys of
 * sends that will never complete once a subscriber is gone. The header of a
 * send is the ringcast DATA header: (tag, flags) plus the chunk's length,
 * which is what a subscriber's on_data() receives with the payload.
 * Subscribers are ringcast subscribers (ringcast/sub.h, ringcast-sub): they
 * connect, say HELLO and subscribe to tag ranges; you ask whom a tag goes to
 * with rc_pub_subscribers_of() and send to each.
 *
 * Lifecycle (as libuv documents its handles):
 *   create   rc_pub_create(): validates the parameters, opens the fabric and
 *            listens on address:port at once, allocates and registers every
 *            buffer (nothing is allocated later). No callback runs.
 *   register rc_pub_register(): register the memory your pieces lie in (at
 *            most RC_PUB_MAX_REGIONS regions, each once, before sending from
 *            it). The memory must stay valid and unchanged while a send from
 *            it is outstanding (until its key came back).
 *   poll     rc_pub_progress() (never blocks) or rc_pub_wait() (blocks up to
 *            a timeout): accept subscribers, answer HELLO/SUBSCRIBE, send
 *            heartbeats, detect dead subscribers, and read completions. Call
 *            one of them in a loop; nothing happens between calls (there is
 *            no thread of its own). Subscribers join only while you poll.
 *   send     rc_pub_send(): zero-copy send of one chunk to one subscriber
 *            under your 64-bit key. 0 = accepted: on_send_complete(key, st)
 *            runs exactly once later, from a progress call, when the provider
 *            no longer reads the memory (or with an error when the subscriber
 *            died: then too the memory is no longer read).
 *   stop     there is no separate stop: stop sending, keep polling until
 *            every accepted key came back (rc_pub_get_stats(): slots_free ==
 *            slots_total), then destroy. rc_pub_close_peer() stops one
 *            subscriber (BYE).
 *   destroy  rc_pub_destroy(): closes every connection and the fabric, then
 *            calls on_send_complete(key, -ECANCELED) for every key still
 *            outstanding, from inside rc_pub_destroy(), and frees everything.
 *            Those callbacks only tell you which keys were not sent: free or
 *            reuse the registered memory after rc_pub_destroy() returned (then
 *            the fabric is closed and nothing reads it any more).
 *
 * Threads: a publisher belongs to one thread. Every rc_pub_* call on it (and
 * so every callback) must come from that thread, or from several threads with
 * your own lock around each call; nothing inside locks. Different publishers
 * may run in different threads.
 *
 * Callbacks run only inside: rc_pub_progress(), rc_pub_wait() and
 * rc_pub_destroy(). Never inside rc_pub_send() (also not when it returns
 * -EAGAIN: it never reads completions; poll, then retry), rc_pub_create,
 * rc_pub_register, rc_pub_free_slots, rc_pub_close_peer (the subscriber's
 * GONE event comes from the next progress call), rc_pub_pending_sends or the
 * getters. So your state does not change under you in the middle of a send.
 * A callback must not call rc_pub_* functions of the same publisher; it may
 * release the key's memory, or note it for the loop.
 *
 * Hot path (send, progress): no malloc, no locks, no system calls other than
 * the provider's. Errors: functions return 0 (or a count) / -errno; setup
 * errors fill err (name the failing libfabric call and the address).
 */
#ifndef RINGCAST_PUB_H
#define RINGCAST_PUB_H
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include "ringcast/common.h"

#ifdef __cplusplus
extern "C" {
#endif

struct rc_pub;

/* One subscriber connection: index and generation, so the id of a subscriber
 * that left never reaches its successor. 0 is never a valid id. */
typedef uint64_t rc_pub_peer;

enum rc_pub_endpoint { RC_PUB_EP_MSG = 0, RC_PUB_EP_RDM = 1 };

/* What on_peer_event() reports. */
enum rc_pub_event {
    RC_PUB_EVENT_JOINED = 1,        /* HELLO accepted, WELCOME sent */
    RC_PUB_EVENT_SUBSCRIPTIONS = 2, /* its tag set changed */
    RC_PUB_EVENT_GONE = 3,          /* closed (BYE) or dead; its outstanding keys came or come
                                     * back through on_send_complete(-ECONNRESET) or
                                     * rc_pub_pending_sends() */
};

struct rc_pub_callbacks {
    void *ctx;   /* first argument of every callback */
    /* Required. Once per accepted key. status 0: sent (the provider is done
     * with the memory); -ECONNRESET: the subscriber died or was closed;
     * -ECANCELED: rc_pub_destroy(); other -errno: the provider's error. */
    void (*on_send_complete)(void *ctx, uint64_t key, int status);
    /* Optional. */
    void (*on_peer_event)(void *ctx, rc_pub_peer peer, enum rc_pub_event ev);
};

struct rc_pub_params {
    char provider[64];             /* "tcp", "tcp;ofi_rxm", "verbs", "shm", ... */
    enum rc_pub_endpoint endpoint;
    char address[128];             /* listen on this address (IPv4, IPv6, host name) */
    uint16_t port;
    uint32_t header_slots;         /* sends in flight at most (one slot per DATA message) */
    uint32_t max_subscribers;      /* connected at the same time (1..65536) */
    uint32_t max_tags_per_subscriber; /* 0 = no limit */
    uint32_t tx_queue, rx_queue;   /* requested provider queue sizes */
    uint32_t cq_size;              /* completion queue entries (raised to what is needed) */
    uint64_t heartbeat_ns;         /* send a HEARTBEAT this often; < peer_timeout_ns */
    uint64_t peer_timeout_ns;      /* a subscriber silent this long is dead */
    uint64_t poll_spin_ns;         /* rc_pub_wait spins this long before sleeping */
    char allow[192];               /* accepted subscriber networks, "10.1.0.0/16, fd00::/8"; "" = all */
    struct rc_pub_callbacks cb;
};

struct rc_pub_stats {
    uint64_t sends;                /* accepted sends (keys) */
    uint64_t send_bytes;           /* their payload bytes */
    uint64_t messages;             /* DATA messages posted (a fragmented send posts several) */
    uint64_t fragmented_sends;     /* sends split because of the iov limit or the receiver's buffer */
    uint64_t again_no_slot;        /* -EAGAIN: no free header slot */
    uint64_t again_provider;       /* -EAGAIN: provider queue full */
    uint64_t send_errors;          /* sends refused with an error */
    uint64_t unregistered_pieces;  /* pieces outside every registered region (-EFAULT) */
    uint64_t keys_completed_ok;
    uint64_t keys_completed_error; /* keys returned with status < 0 */
    uint64_t connections;          /* subscribers accepted */
    uint64_t connections_refused;  /* max_subscribers, allow list, protocol version */
    uint64_t peers_closed;         /* orderly: BYE or rc_pub_close_peer() */
    uint64_t peers_dead;           /* connection lost, silence, stuck sends */
    uint64_t keys_released_by_peer_death;
    uint64_t malformed_total;      /* rejected incoming messages */
    uint64_t slots_total, slots_free;
    uint64_t peers_active;
};

/* Defaults: tcp, msg, 127.0.0.1:RC_SUB_DEFAULT_PORT's value 12345 (change it
 * when a daemon runs on this host), 1024 header slots, 64 subscribers, no tag
 * limit, queues 256/256, CQ 1024, heartbeat 500 ms, peer timeout 3 s, spin
 * 20 us, allow everyone (the daemon's [fabric] defaults). Callbacks zero. */
RC_API void rc_pub_params_default(struct rc_pub_params *p);

/* Validate, listen, allocate and register every buffer. Returns 0 and *out,
 * or -errno with the reason in err (e.g. -EADDRINUSE, -EINVAL). */
RC_API int rc_pub_create(const struct rc_pub_params *params, struct rc_pub **out, char *err,
                         size_t errlen);

#define RC_PUB_MAX_REGIONS 16u
/* Register [addr, addr + len) as memory pieces may be sent from. 0, -EINVAL
 * (addr NULL or len 0), -ENOSPC (RC_PUB_MAX_REGIONS reached) or the
 * provider's -errno (err says why; e.g. the memlock limit). The memory stays registered until rc_pub_destroy(). */
RC_API int rc_pub_register(struct rc_pub *p, const void *addr, size_t len, char *err,
                           size_t errlen);

/* Zero-copy send of one chunk (tag, flags = RC_CHUNK_FLAG_*, payload pieces
 * iov[0..n-1], all inside registered regions) to one subscriber.
 *   0          accepted: on_send_complete(key) runs exactly once, later;
 *   -EAGAIN    nothing sent (no free header slot, or the provider queue is
 *              full); no completion was read and no callback ran; the key
 *              is still yours: call rc_pub_progress()/rc_pub_wait(), retry;
 *   -ENOTCONN  peer unknown, gone, or not yet through HELLO;
 *   -EFAULT    a piece is outside every registered region;
 *   -EMSGSIZE  the chunk needs more fragments than slots or the protocol allow;
 *   -EINVAL    iov is NULL while n > 0 (n = 0 sends an empty chunk);
 *   other      the provider refused; the key is still yours.
 * A chunk is split into several DATA messages when it has more pieces than
 * the provider's iov limit allows or does not fit the subscriber's receive
 * buffer; the subscriber reassembles it. */
RC_API int rc_pub_send(struct rc_pub *p, rc_pub_peer peer, uint64_t tag, uint32_t flags,
                       const struct iovec *iov, unsigned n, uint64_t key);

/* Do what is due without blocking. Returns the number of events handled
 * (>= 0) or -errno when the fabric itself failed (then destroy). */
RC_API int rc_pub_progress(struct rc_pub *p);
/* Like progress, but wait up to timeout_ns for something to do (spinning
 * poll_spin_ns, then sleeping on the provider's file descriptors). Returns
 * what progress returned (0 on timeout). */
RC_API int rc_pub_wait(struct rc_pub *p, uint64_t timeout_ns);

/* Lowest number of free header slots since the previous call (a watermark,
 * like netio's get_num_available_buffers). */
RC_API uint32_t rc_pub_free_slots(struct rc_pub *p);

/* Subscribers whose tag set contains tag: up to max ids in out; returns how
 * many there are (may exceed max). */
RC_API unsigned rc_pub_subscribers_of(struct rc_pub *p, uint64_t tag, rc_pub_peer *out,
                                      unsigned max);
/* Every subscriber through HELLO: up to max ids; returns how many there are. */
RC_API unsigned rc_pub_peers(struct rc_pub *p, rc_pub_peer *out, unsigned max);
/* Printable address of a subscriber ("" for an unknown id); valid until the
 * next call into the publisher. */
RC_API const char *rc_pub_peer_name(struct rc_pub *p, rc_pub_peer peer);

/* Say BYE to a subscriber and close it (no callback runs inside: its
 * RC_PUB_EVENT_GONE comes from the next progress call). Its outstanding sends
 * will never complete: take their keys with rc_pub_pending_sends() now, or
 * progress returns them through on_send_complete(key, -ECONNRESET).
 * 0 or -ENOTCONN. */
RC_API int rc_pub_close_peer(struct rc_pub *p, rc_pub_peer peer);
/* Keys of sends to a closed or dead subscriber that will never complete
 * (netio's get_pending_sends): up to max are written to keys[] and are yours
 * again (no callback runs for them). Returns their count (call again while it
 * equals max), 0 when none are left, -ENOTCONN for an unknown id, -EBUSY
 * while the subscriber is alive. */
RC_API int rc_pub_pending_sends(struct rc_pub *p, rc_pub_peer peer, uint64_t *keys, unsigned max);

RC_API void rc_pub_get_stats(const struct rc_pub *p, struct rc_pub_stats *st);
/* The last problem met inside progress ("" if none). */
RC_API const char *rc_pub_last_error(const struct rc_pub *p);

/* Close everything; outstanding keys come back as on_send_complete(key,
 * -ECANCELED) from inside this call. NULL is fine. */
RC_API void rc_pub_destroy(struct rc_pub *p);

#ifdef __cplusplus
}
#endif
#endif
