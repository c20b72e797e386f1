/* SPDX-License-Identifier: BSD-3-Clause */
/* sim_irq.h — internal to readout/: handing a sim-process card's interrupt
 * eventfd from the daemon to ringcast-sim. The daemon serves it on the
 * abstract unix socket "@ringcast-irq-<shm_name>" (SCM_RIGHTS, one message
 * per connection) from a small thread; ringcast-sim connects once after
 * attaching. No socket (a daemon in poll mode): no interrupts. */
#ifndef RCI_SIM_IRQ_H
#define RCI_SIM_IRQ_H
#include <stddef.h>

struct rci_sim_irq_server;

/* Serve evfd (not owned) under shm_name. 0 or -errno with the reason in err
 * (-EADDRINUSE: another daemon serves that name). */
int  rci_sim_irq_server_start(const char *shm_name, int evfd, struct rci_sim_irq_server **out,
                             char *err, size_t errlen);
void rci_sim_irq_server_stop(struct rci_sim_irq_server *s);

/* ringcast-sim: the daemon's eventfd in *fd (owned by the caller), 0; or
 * -ECONNREFUSED / -ENOENT when the daemon serves none (poll mode); other
 * -errno with the reason in err. */
int  rci_sim_irq_fetch(const char *shm_name, int *fd, char *err, size_t errlen);

#endif
