/* SPDX-License-Identifier: BSD-3-Clause */
/* discovery_internal.h — internal to net/discovery*.c: the handle shared by
 * the front (discovery.c, which also holds the dir backend) and the etcd
 * backend (discovery_etcd.c). */
#ifndef RCI_DISCOVERY_INTERNAL_H
#define RCI_DISCOVERY_INTERNAL_H
#include "net/discovery.h"

#define RCI_DISC_MAX_OWN       64u   /* entries one handle announces */
#define RCI_DISC_MAX_ENDPOINTS 8u    /* etcd://a,b,c */

enum rci_disc_kind { RCI_DISC_DIR, RCI_DISC_ETCD };

struct rci_disc {
    struct rci_discovery_params p;
    enum rci_disc_kind kind;
    char path[256];                          /* dir: the directory */
    uint64_t dead_removed;                   /* dir: files of dead daemons of this host removed */
    /* What this handle announced: names to remove at withdraw. */
    size_t nown;
    char own[RCI_DISC_MAX_OWN][128];
    /* etcd */
    unsigned nendpoints, current;            /* current: the endpoint that answered last */
    char endpoint[RCI_DISC_MAX_ENDPOINTS][160]; /* "http://HOST:PORT" */
    void *curl;                              /* CURL * */
    int64_t lease;                           /* 0: none */
    bool registered;                         /* lease alive and every entry put */
    uint64_t leases_lost;                    /* keepalives that found the lease expired */
};

int  rci_disc_etcd_open(struct rci_disc *d, const char *spec, char *err, size_t errlen);
void rci_disc_etcd_close(struct rci_disc *d);
int  rci_disc_etcd_announce(struct rci_disc *d, const struct rci_disc_entry *e, size_t n, char *err,
                            size_t errlen);
int  rci_disc_etcd_withdraw(struct rci_disc *d, char *err, size_t errlen);
int  rci_disc_etcd_list(struct rci_disc *d, struct rci_disc_entry *out, size_t max, size_t *n,
                        struct rci_disc_list_stats *st, char *err, size_t errlen);
/* Note a name this handle announced (for withdraw). */
int  rci_disc_remember(struct rci_disc *d, const char *name);
/* Sort an entry read back (now_ms != 0: an entry not refreshed within its
 * ttl is stale; check_pid: so is one of this host whose pid is gone)
 * into out[] (or count it): shared by both backends. */
void rci_disc_take(const char *text, size_t len, const char *where, struct rci_disc_entry *out, size_t max,
                   size_t *n, struct rci_disc_list_stats *st, uint64_t now_ms, bool check_pid);

#endif
