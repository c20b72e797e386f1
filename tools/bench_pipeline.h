/* SPDX-License-Identifier: BSD-3-Clause */
/* bench_pipeline.h — ringcast-bench's pipeline runs: the real programs, as a
 * user runs them.
 *
 * One run writes a configuration file (one simulated card, fixed chunk
 * size, fill, rate, run length; [readout] mode; [fabric] provider/endpoint
 * on 127.0.0.1 and a free port), starts build/bin/ringcast-readout with
 * --stats-json (optionally under the allocation counter, LD_PRELOAD), waits
 * until it listens, starts `subscribers` ringcast-sub --tags all --json
 * (--latency when asked; receive buffers of max(64 KiB, chunk + 4 KiB),
 * like the raw stream's, which hold one chunk); the daemon holds the card until all subscribed
 * (readout.wait_subscribers), runs for the time or chunk count, drains and
 * exits; then the subscribers get SIGTERM and print their summaries. With
 * sim_process the card is of type sim-process (4 MiB shm ring, wait = poll
 * or interrupt) and build/bin/ringcast-sim -c FILE is started after the
 * daemon listens; the daemon's own CPU time comes from wait4. Every
 * child is reaped; the CPU time of all comes from getrusage(RUSAGE_CHILDREN),
 * each process's from wait4, the daemon's threads' from /proc/PID/task.
 * Files stay in workdir (the caller removes it).
 */
#ifndef RCI_BENCH_PIPELINE_H
#define RCI_BENCH_PIPELINE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "readout/sim/sim_params.h"

#define RCI_BENCH_MAX_SUBSCRIBERS 16u

struct rci_bench_pipe_params {
    const char *bindir;            /* holds ringcast-readout and ringcast-sub */
    const char *alloc_shim;        /* LD_PRELOAD allocation counter for the daemon; NULL: none */
    const char *workdir;           /* configuration, logs and JSON files go here */
    const char *provider;
    bool rdm;
    uint32_t chunk_size;
    uint32_t block_size;           /* [card.0] block_size (c0ce) */
    const char *mode;              /* readout.mode: "zerocopy", "buffered" or "auto" */
    const char *delivery;          /* ringcast-sub --delivery: NULL or "send" (default), "rma"; or
                                      "stream": ringcast-sub --stream 0 (the card's block stream;
                                      chunks and bytes sent are then the subscribers' own) */
    enum rci_sim_fill fill;
    double seconds;                /* sim run_time (used when run_chunks is 0) */
    uint64_t run_chunks;           /* sim run_chunks; 0 = a timed run */
    double rate_chunks;            /* chunks per second; 0 = `rate` */
    const char *rate;              /* sim.0.rate as in the INI when rate_chunks is 0; NULL = unlimited */
    uint32_t elinks;               /* sim.0.elinks; 0 = the default */
    unsigned publisher_threads;    /* readout.publisher_threads; 0 = the default (1). Subscriber i
                                      connects to port + i % publisher_threads */
    unsigned subscribers;          /* 1..RCI_BENCH_MAX_SUBSCRIBERS */
    bool latency;                  /* subscribers measure fill = timestamp latency */
    bool sim_process;              /* card.0 is a sim-process card: a ringcast-sim child writes */
    bool interrupt;                /* card.0.wait = interrupt (else poll) */
};

struct rci_bench_pipe_result {
    double seconds;                /* the daemon's run: card start to drained */
    uint64_t chunks_decoded;
    uint64_t chunks_sent, bytes_sent;     /* shares: every subscriber's chunks */
    uint64_t buffered_records;     /* chunks copied into pages */
    uint64_t copied_bytes;         /* payload bytes copied into pages */
    double cpu_seconds;            /* daemon, simulator and subscribers, user + system */
    double daemon_cpu_seconds;     /* the daemon process, user + system (wait4); with a sim card
                                      this includes the rc-sim-N thread (sim_cpu_seconds) */
    double sim_cpu_seconds;        /* the simulated card: the daemon's rc-sim-* threads, or the
                                      ringcast-sim process (wait4) of a sim-process card */
    double sub_cpu_seconds;        /* every subscriber process (wait4), summed */
    /* The daemon's threads by name (/proc/PID/task/TID/stat, sampled every
     * THREAD_SAMPLE_NS while it runs; CPU a thread used after the last
     * sample before it ended shows up in none of these, only in
     * daemon_cpu_seconds): rc-readout-*, rc-publish*, rc-sim-*, all others. */
    double readout_thread_cpu, publish_thread_cpu, sim_thread_cpu, other_thread_cpu;
    double daemon_steady_cpu;      /* sim_process runs: the daemon's CPU share (of one core)
                                      from 2 s after the subscribers started to 2 s before
                                      the run's end (/proc/PID/stat); < 0: not measured */
    bool counted_allocations;
    uint64_t allocations;          /* in the daemon, whole life (alloc_shim) */
    uint64_t sub_chunks_min;       /* fewest chunks a subscriber received */
    double p50_us, p99_us, p999_us, max_us;   /* first subscriber (latency runs) */
    uint64_t latency_samples;
};

/* 0, or -errno with the reason (and where the logs are) in err. */
int rci_bench_pipe_run(const struct rci_bench_pipe_params *p, struct rci_bench_pipe_result *out,
                      char *err, size_t errlen);

/* A TCP port on 127.0.0.1 that was free a moment ago (0 if none). */
uint16_t rci_bench_free_port(void);
/* The simulator's fill as in the INI: "none", "pattern" or "timestamp". */
const char *rci_bench_fill_name(enum rci_sim_fill f);

#endif
