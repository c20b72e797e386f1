/* SPDX-License-Identifier: BSD-3-Clause */
/* bench_pipeline.c — ringcast-bench's runs of the real daemon and
 * subscribers (see bench_pipeline.h). */
#include "tools/bench_pipeline.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <dirent.h>
#include <unistd.h>

#include "common/errbuf.h"
#include "tools/bench_report.h"
#include "common/monotonic.h"

#define LISTEN_TIMEOUT_NS   (15ull * 1000000000ull)
/* Beyond the run time: connecting, draining, writing statistics. */
#define RUN_GRACE_NS        (60ull * 1000000000ull)
#define COUNT_RUN_LIMIT_NS  (180ull * 1000000000ull)
#define SUB_EXIT_TIMEOUT_NS (10ull * 1000000000ull)
#define BLOCK_OVERHEAD      8u          /* header and one trailer */
#define DEFAULT_MAX_PIECES  64u         /* the [card.N] default */
#define SUB_RX_DEFAULT      65536u      /* ringcast-sub's default receive buffer */
#define SUB_RX_HEADROOM     4096u       /* DATA header, rounded to a page */
#define THREAD_SAMPLE_NS    20000000ull /* the daemon's threads' CPU, every 20 ms */
#define MAX_THREADS         64u

uint16_t rci_bench_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = 0,
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof a;
    uint16_t port = 0;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    close(fd);
    return port;
}

static bool port_free(uint16_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return false;
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    bool ok = bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
    close(fd);
    return ok;
}

/* `count` consecutive ports that were free a moment ago, the first returned (0 if none found). */
static uint16_t free_ports(unsigned count)
{
    for (int attempt = 0; attempt < 32; attempt++) {
        uint16_t port = rci_bench_free_port();
        bool ok = port != 0 && (unsigned)port + count - 1 <= 65535u;
        for (unsigned i = 1; ok && i < count; i++)
            ok = port_free((uint16_t)(port + i));
        if (ok)
            return port;
    }
    return 0;
}

/* Is something listening on the TCP port? /proc/net/tcp{,6}, so the daemon
 * sees no probe connection. */
static bool port_listening(uint16_t port)
{
    static const char *const tables[] = { "/proc/net/tcp", "/proc/net/tcp6" };
    for (size_t t = 0; t < 2; t++) {
        FILE *f = fopen(tables[t], "r");
        if (!f)
            continue;
        char line[512];
        bool found = false;
        while (!found && fgets(line, sizeof line, f)) {
            unsigned local_port, state;
            if (sscanf(line, " %*u: %*[0-9A-Fa-f]:%x %*[0-9A-Fa-f]:%*x %x", &local_port, &state) == 2)
                found = local_port == port && state == 0x0A;   /* TCP_LISTEN */
        }
        fclose(f);
        if (found)
            return true;
    }
    return false;
}

/* ---- files ----------------------------------------------------------------- */

static void path_in(char *buf, size_t len, const char *dir, const char *name)
{
    snprintf(buf, len, "%s/%s", dir, name);
}

/* Whole file, NUL-terminated (caller frees); NULL if unreadable. */
static char *read_text(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        len += fread(buf + len, 1, cap - 1 - len, f);
        if (len < cap - 1)
            break;
        char *bigger = realloc(buf, cap * 2);
        if (!bigger) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = bigger;
        cap *= 2;
    }
    fclose(f);
    if (buf)
        buf[len] = '\0';
    return buf;
}

/* The number after the first "key": in a JSON text. */
static bool json_number(const char *text, const char *key, double *out)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *at = text ? strstr(text, pat) : NULL;
    if (!at)
        return false;
    char *end;
    *out = strtod(at + strlen(pat), &end);
    return end != at + strlen(pat);
}

static bool json_u64(const char *text, const char *key, uint64_t *out)
{
    double v;
    if (!json_number(text, key, &v) || v < 0)
        return false;
    *out = (uint64_t)v;
    return true;
}

const char *rci_bench_fill_name(enum rci_sim_fill f)
{
    switch (f) {
    case RCI_FILL_NONE: return "none";
    case RCI_FILL_TIMESTAMP: return "timestamp";
    case RCI_FILL_PATTERN: break;
    }
    return "pattern";
}

/* A chunk spans this many blocks at most (the decoder's piece limit). */
static uint32_t pieces_needed(uint32_t chunk_size, uint32_t block_size)
{
    return chunk_size / (block_size - BLOCK_OVERHEAD) + 2u;
}

static int write_config(const struct rci_bench_pipe_params *p, uint16_t port, const char *path,
                        char *err, size_t errlen)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        rci_set_err(err, errlen, "pipeline: %s: %s", path, strerror(errno));
        return -errno;
    }
    char rate[64] = "unlimited", run[48], elinks[32] = "";
    if (p->rate_chunks > 0)
        snprintf(rate, sizeof rate, "%.0fchunks/s", p->rate_chunks);
    else if (p->rate)
        snprintf(rate, sizeof rate, "%s", p->rate);
    if (p->elinks)
        snprintf(elinks, sizeof elinks, "elinks = %" PRIu32 "\n", p->elinks);
    if (p->run_chunks)
        snprintf(run, sizeof run, "run_chunks = %" PRIu64, p->run_chunks);
    else
        snprintf(run, sizeof run, "run_time = %.0fms", p->seconds * 1e3);
    uint32_t pieces = pieces_needed(p->chunk_size, p->block_size);
    char card[160] = "type = sim\n";
    if (p->sim_process)
        snprintf(card, sizeof card, "type = sim-process\nmemory = shm\nshm_name = rcbench%ld\n"
                 "ring_size = 4M\nrd_update_bytes = 64k\nwait = %s\n", (long)getpid(),
                 p->interrupt ? "interrupt" : "poll");
    fprintf(f,
            "# written by ringcast-bench for one measurement\n"
            "[readout]\nstats_interval = 0\nmode = %s\nwait_subscribers = %u\npublisher_threads = %u\n"
            "[fabric]\nprovider = %s\nendpoint = %s\naddress = 127.0.0.1\nport = %u\n"
            "[card.0]\n%sblock_size = %u\nmax_chunk_pieces = %u\n"
            "[sim.0]\n%schunk_size_min = %" PRIu32 "\nchunk_size_max = %" PRIu32 "\nfill = %s\n"
            "rate = %s\n%s\n",
            p->mode, p->subscribers, p->publisher_threads ? p->publisher_threads : 1u, p->provider,
            p->rdm ? "rdm" : "msg", (unsigned)port, card, p->block_size,
            pieces < DEFAULT_MAX_PIECES ? DEFAULT_MAX_PIECES : pieces, elinks,
            p->chunk_size, p->chunk_size, rci_bench_fill_name(p->fill), rate, run);
    if (fclose(f) != 0) {
        rci_set_err(err, errlen, "pipeline: %s: %s", path, strerror(errno));
        return -EIO;
    }
    return 0;
}

/* ---- children -------------------------------------------------------------- */

/* fork + exec with stdout/stderr to files; extra environment in env
 * ("NAME=value", NULL-terminated, may be NULL). Returns the pid or -errno. */
static pid_t spawn(char *const argv[], const char *out_path, const char *err_path, char *const env[])
{
    pid_t pid = fork();
    if (pid != 0)
        return pid < 0 ? -errno : pid;
    int out = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int errfd = open(err_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (out < 0 || errfd < 0 || dup2(out, STDOUT_FILENO) < 0 || dup2(errfd, STDERR_FILENO) < 0)
        _exit(127);
    for (size_t i = 0; env && env[i]; i++)
        putenv(env[i]);
    execv(argv[0], argv);
    dprintf(STDERR_FILENO, "ringcast-bench: cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

/* Reap pid within timeout_ns; -ETIMEDOUT if it is still running (left alive). */
static int reap(pid_t pid, uint64_t timeout_ns, int *status)
{
    uint64_t deadline = rci_now_ns() + timeout_ns;
    for (;;) {
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid)
            return 0;
        if (r < 0)
            return -errno;
        if (rci_now_ns() > deadline)
            return -ETIMEDOUT;
        rci_sleep_ns(5000000);
    }
}

/* ---- CPU of processes and threads ----------------------------------------- */

/* The name and user + system CPU seconds of /proc/.../stat; false if unreadable. */
static bool read_stat(const char *path, char *name, size_t namelen, double *cpu_s)
{
    char buf[1024];
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    const char *lp = strchr(buf, '('), *rp = strrchr(buf, ')');   /* the name may hold spaces */
    unsigned long long ut, st;
    if (!lp || !rp || rp < lp ||
        sscanf(rp + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        return false;
    if (name)
        snprintf(name, namelen, "%.*s", (int)(rp - lp - 1), lp + 1);
    *cpu_s = (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
    return true;
}

struct thread_cpu {
    long tid;
    char name[17];
    double cpu_s;                 /* the largest value seen: CPU time only grows */
};

struct thread_table {
    struct thread_cpu t[MAX_THREADS];
    unsigned n;
};

static struct thread_cpu *thread_slot(struct thread_table *tt, long tid)
{
    for (unsigned i = 0; i < tt->n; i++)
        if (tt->t[i].tid == tid)
            return &tt->t[i];
    if (tt->n == MAX_THREADS)
        return NULL;
    tt->t[tt->n] = (struct thread_cpu){ .tid = tid };
    return &tt->t[tt->n++];
}

/* Every thread of pid now: /proc/PID/task/TID/stat. */
static void sample_threads(pid_t pid, struct thread_table *tt)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/%ld/task", (long)pid);
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char *end, path[128], name[17];
        long tid = strtol(e->d_name, &end, 10);
        double cpu;
        if (*end || end == e->d_name)
            continue;
        snprintf(path, sizeof path, "%s/%ld/stat", dir, tid);
        struct thread_cpu *slot = read_stat(path, name, sizeof name, &cpu) ? thread_slot(tt, tid) : NULL;
        if (slot && cpu >= slot->cpu_s) {
            slot->cpu_s = cpu;
            memcpy(slot->name, name, sizeof name);
        }
    }
    closedir(d);
}

static bool name_starts(const char *name, const char *prefix) { return !strncmp(name, prefix, strlen(prefix)); }

static void sum_threads(const struct thread_table *tt, struct rci_bench_pipe_result *out)
{
    for (unsigned i = 0; i < tt->n; i++) {
        const struct thread_cpu *t = &tt->t[i];
        double *to = name_starts(t->name, "rc-readout") ? &out->readout_thread_cpu
                     : name_starts(t->name, "rc-publish") ? &out->publish_thread_cpu
                     : name_starts(t->name, "rc-sim")     ? &out->sim_thread_cpu
                                                          : &out->other_thread_cpu;
        *to += t->cpu_s;
    }
}

static double rusage_seconds(const struct rusage *ru)
{
    return (double)ru->ru_utime.tv_sec + ru->ru_utime.tv_usec / 1e6 + (double)ru->ru_stime.tv_sec +
           ru->ru_stime.tv_usec / 1e6;
}

/* reap, with the child's resource usage (its user + system seconds), and
 * while waiting its threads' CPU every THREAD_SAMPLE_NS when tt is given. */
static int reap_usage(pid_t pid, uint64_t timeout_ns, int *status, double *cpu_s, struct thread_table *tt)
{
    uint64_t deadline = rci_now_ns() + timeout_ns, next_sample = 0;
    for (;;) {
        struct rusage ru;
        pid_t r = wait4(pid, status, WNOHANG, &ru);
        if (r == pid) {
            *cpu_s = rusage_seconds(&ru);
            return 0;
        }
        if (r < 0)
            return -errno;
        uint64_t now = rci_now_ns();
        if (now > deadline)
            return -ETIMEDOUT;
        if (tt && now >= next_sample) {
            sample_threads(pid, tt);
            next_sample = now + THREAD_SAMPLE_NS;
        }
        rci_sleep_ns(5000000);
    }
}

static void kill_and_reap(pid_t pid)
{
    int st;
    if (pid > 0 && reap(pid, 0, &st) == -ETIMEDOUT) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
    }
}

static bool exited_ok(int status) { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }

struct run_files {
    char config[512], daemon_json[512], daemon_log[512], allocs[512];
    char sub_json[RCI_BENCH_MAX_SUBSCRIBERS][512], sub_log[RCI_BENCH_MAX_SUBSCRIBERS][512];
};

static void name_files(const struct rci_bench_pipe_params *p, struct run_files *fl)
{
    path_in(fl->config, sizeof fl->config, p->workdir, "bench.ini");
    path_in(fl->daemon_json, sizeof fl->daemon_json, p->workdir, "daemon.json");
    path_in(fl->daemon_log, sizeof fl->daemon_log, p->workdir, "daemon.log");
    path_in(fl->allocs, sizeof fl->allocs, p->workdir, "daemon.allocs");
    for (unsigned i = 0; i < p->subscribers; i++) {
        char name[32];
        snprintf(name, sizeof name, "sub%u.json", i);
        path_in(fl->sub_json[i], sizeof fl->sub_json[i], p->workdir, name);
        snprintf(name, sizeof name, "sub%u.log", i);
        path_in(fl->sub_log[i], sizeof fl->sub_log[i], p->workdir, name);
    }
    unlink(fl->daemon_json);
    unlink(fl->allocs);
}

static pid_t start_daemon(const struct rci_bench_pipe_params *p, const struct run_files *fl)
{
    char exe[512];
    path_in(exe, sizeof exe, p->bindir, "ringcast-readout");
    char *argv[] = { exe, "-c", (char *)fl->config, "--stats-json", (char *)fl->daemon_json, NULL };
    static char preload[600], count_file[600];
    char *env[] = { preload, count_file, NULL };
    snprintf(preload, sizeof preload, "LD_PRELOAD=%s", p->alloc_shim ? p->alloc_shim : "");
    snprintf(count_file, sizeof count_file, "RCI_ALLOC_COUNT_FILE=%s", fl->allocs);
    return spawn(argv, fl->daemon_log, fl->daemon_log, p->alloc_shim ? env : NULL);
}

static pid_t start_subscriber(const struct rci_bench_pipe_params *p, const struct run_files *fl,
                              unsigned i, uint16_t port)
{
    char exe[512], connect[64], rx[32];
    path_in(exe, sizeof exe, p->bindir, "ringcast-sub");
    unsigned threads = p->publisher_threads ? p->publisher_threads : 1u;
    snprintf(connect, sizeof connect, "127.0.0.1:%u", (unsigned)port + i % threads);
    /* Receive buffers that hold a whole chunk, as the raw stream's do: the
     * publisher then cuts a chunk only where the transport's iov limit
     * makes it, and the subscriber reassembles only those. */
    uint32_t rx_size = p->chunk_size + SUB_RX_HEADROOM;
    snprintf(rx, sizeof rx, "%u", rx_size < SUB_RX_DEFAULT ? SUB_RX_DEFAULT : rx_size);
    bool rma = p->delivery && !strcmp(p->delivery, "rma");
    if (p->delivery && !strcmp(p->delivery, "stream")) {   /* the card's block stream */
        char *sargv[] = { exe, "--connect", connect, "--provider", (char *)p->provider, "--endpoint",
                          p->rdm ? "rdm" : "msg", "--stream", "0", "--json", p->latency ? "--latency" : NULL,
                          NULL };
        return spawn(sargv, fl->sub_json[i], fl->sub_log[i], NULL);
    }
    char *argv[] = { exe, "--connect", connect, "--provider", (char *)p->provider, "--endpoint",
                     p->rdm ? "rdm" : "msg", "--tags", "all", "--json", "--rx-buffer-size", rx,
                     "--delivery", rma ? "rma" : "send", p->latency ? "--latency" : NULL, NULL };
    return spawn(argv, fl->sub_json[i], fl->sub_log[i], NULL);
}

static pid_t start_sim(const struct rci_bench_pipe_params *p, const struct run_files *fl)
{
    char exe[512], out[560];
    path_in(exe, sizeof exe, p->bindir, "ringcast-sim");
    path_in(out, sizeof out, p->workdir, "sim.log");
    char *argv[] = { exe, "-c", (char *)fl->config, "-q", NULL };
    return spawn(argv, out, out, NULL);
}

/* The process's user + system CPU seconds so far (/proc/PID/stat); < 0 if unreadable. */
static double proc_cpu_seconds(pid_t pid)
{
    char path[64];
    double cpu;
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    return read_stat(path, NULL, 0, &cpu) ? cpu : -1;
}

/* The daemon's CPU share in the middle of a timed run: 2 s settling, then
 * until 2 s before the run's end. */
static double steady_cpu(pid_t daemon, double seconds)
{
    if (seconds < 6)
        return -1;
    rci_sleep_ns(2000000000ull);
    double c0 = proc_cpu_seconds(daemon);
    uint64_t t0 = rci_now_ns();
    rci_sleep_ns((uint64_t)((seconds - 4) * 1e9));
    double c1 = proc_cpu_seconds(daemon);
    double dt = (double)(rci_now_ns() - t0) / 1e9;
    return c0 < 0 || c1 < 0 ? -1 : (c1 - c0) / dt;
}

static int wait_listening(pid_t daemon, uint16_t port, const struct run_files *fl, char *err,
                          size_t errlen)
{
    uint64_t deadline = rci_now_ns() + LISTEN_TIMEOUT_NS;
    while (!port_listening(port)) {
        int st;
        if (reap(daemon, 0, &st) == 0) {
            rci_set_err(err, errlen, "pipeline: ringcast-readout exited (status %d) before listening; see %s",
                       WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), fl->daemon_log);
            return -ECHILD;
        }
        if (rci_now_ns() > deadline) {
            rci_set_err(err, errlen, "pipeline: ringcast-readout not listening on port %u after 15 s; see %s",
                       (unsigned)port, fl->daemon_log);
            return -ETIMEDOUT;
        }
        rci_sleep_ns(2000000);
    }
    return 0;
}

/* ---- results --------------------------------------------------------------- */

static int read_daemon(const struct rci_bench_pipe_params *p, const struct run_files *fl,
                       struct rci_bench_pipe_result *out, char *err, size_t errlen)
{
    char *j = read_text(fl->daemon_json);
    uint64_t errors = 0, dropped = 0;
    bool ok = j && json_number(j, "seconds", &out->seconds) &&
              json_u64(j, "chunks_decoded", &out->chunks_decoded) &&
              json_u64(j, "chunks_sent", &out->chunks_sent) && json_u64(j, "bytes_sent", &out->bytes_sent) &&
              json_u64(j, "buffered_records", &out->buffered_records) &&
              json_u64(j, "decode_errors", &errors) && json_u64(j, "chunks_dropped", &dropped);
    /* The publisher's buffered_bytes counts exactly the payload bytes copied
     * into pages, gather_bytes those copied into bounce buffers (mode auto);
     * where the daemon's JSON does not carry them, every record is one chunk
     * of the run's fixed size. */
    uint64_t gathered = 0;
    if (ok && !json_u64(j, "buffered_bytes", &out->copied_bytes))
        out->copied_bytes = out->buffered_records * p->chunk_size;
    if (ok && json_u64(j, "gather_bytes", &gathered))
        out->copied_bytes += gathered;
    free(j);
    if (!ok) {
        rci_set_err(err, errlen, "pipeline: %s is missing or incomplete; see %s", fl->daemon_json, fl->daemon_log);
        return -EPROTO;
    }
    /* A block stream sends no chunk shares: the subscribers' figures count (read_subscribers). */
    bool stream = p->delivery && !strcmp(p->delivery, "stream");
    if (errors || dropped || (out->chunks_sent == 0 && !stream) || out->seconds <= 0) {
        rci_set_err(err, errlen, "pipeline: %" PRIu64 " decode errors, %" PRIu64 " chunks dropped, %" PRIu64
                   " sent in %.3f s: not a valid measurement; see %s", errors, dropped, out->chunks_sent,
                   out->seconds, fl->daemon_json);
        return -EPROTO;
    }
    if (p->alloc_shim) {
        char *a = read_text(fl->allocs);
        unsigned long long n;
        out->counted_allocations = a && sscanf(a, "allocations %llu", &n) == 1;
        out->allocations = out->counted_allocations ? n : 0;
        free(a);
        if (!out->counted_allocations) {
            rci_set_err(err, errlen, "pipeline: the allocation counter wrote no %s", fl->allocs);
            return -EPROTO;
        }
    }
    return 0;
}

static int read_subscribers(const struct rci_bench_pipe_params *p, const struct run_files *fl,
                            struct rci_bench_pipe_result *out, char *err, size_t errlen)
{
    out->sub_chunks_min = UINT64_MAX;
    for (unsigned i = 0; i < p->subscribers; i++) {
        char *j = read_text(fl->sub_json[i]);
        uint64_t chunks, bytes = 0;
        bool ok = j && json_u64(j, "chunks", &chunks) && json_u64(j, "bytes", &bytes);
        if (ok && p->delivery && !strcmp(p->delivery, "stream")) {
            /* A block stream: what the subscribers decoded is what was delivered. */
            if (i == 0)
                out->chunks_sent = out->bytes_sent = 0;
            out->chunks_sent += chunks;
            out->bytes_sent += bytes;
        }
        if (ok && i == 0 && p->latency)
            ok = json_u64(j, "samples", &out->latency_samples) && json_number(j, "p50_us", &out->p50_us) &&
                 json_number(j, "p99_us", &out->p99_us) && json_number(j, "p999_us", &out->p999_us) &&
                 json_number(j, "max_us", &out->max_us) && out->latency_samples > 0;
        free(j);
        if (!ok) {
            rci_set_err(err, errlen, "pipeline: subscriber %u: %s is missing or incomplete; see %s", i,
                       fl->sub_json[i], fl->sub_log[i]);
            return -EPROTO;
        }
        if (chunks < out->sub_chunks_min)
            out->sub_chunks_min = chunks;
    }
    return 0;
}

/* ---- one run --------------------------------------------------------------- */

static int stop_subscribers(const pid_t *subs, unsigned n, const struct run_files *fl, double *cpu_sum,
                            char *err, size_t errlen)
{
    int rc = 0;
    for (unsigned i = 0; i < n; i++)
        if (subs[i] > 0)
            kill(subs[i], SIGTERM);
    for (unsigned i = 0; i < n; i++) {
        int st;
        if (subs[i] <= 0)
            continue;
        double cpu = 0;
        if (reap_usage(subs[i], SUB_EXIT_TIMEOUT_NS, &st, &cpu, NULL) != 0) {
            kill_and_reap(subs[i]);
            st = -1;
        }
        *cpu_sum += cpu;
        if (rc == 0 && !exited_ok(st)) {
            rci_set_err(err, errlen, "pipeline: subscriber %u failed; see %s", i, fl->sub_log[i]);
            rc = -ECHILD;
        }
    }
    return rc;
}

static int run_children(const struct rci_bench_pipe_params *p, const struct run_files *fl, uint16_t port,
                        struct rci_bench_pipe_result *out, char *err, size_t errlen)
{
    pid_t subs[RCI_BENCH_MAX_SUBSCRIBERS] = {0}, sim = 0;
    pid_t daemon = start_daemon(p, fl);
    if (daemon < 0) {
        rci_set_err(err, errlen, "pipeline: fork: %s", strerror((int)-daemon));
        return (int)daemon;
    }
    int rc = wait_listening(daemon, port, fl, err, errlen);
    if (rc == 0 && p->sim_process) {
        sim = start_sim(p, fl);
        if (sim < 0) {
            rci_set_err(err, errlen, "pipeline: fork: %s", strerror((int)-sim));
            rc = (int)sim;
        }
    }
    for (unsigned i = 0; rc == 0 && i < p->subscribers; i++) {
        subs[i] = start_subscriber(p, fl, i, port);
        if (subs[i] < 0) {
            rci_set_err(err, errlen, "pipeline: fork: %s", strerror((int)-subs[i]));
            rc = (int)subs[i];
        }
    }
    if (rc == 0) {
        uint64_t limit = p->run_chunks ? COUNT_RUN_LIMIT_NS : (uint64_t)(p->seconds * 1e9) + RUN_GRACE_NS;
        int st;
        out->daemon_steady_cpu = p->sim_process && !p->run_chunks ? steady_cpu(daemon, p->seconds) : -1;
        struct thread_table *tt = calloc(1, sizeof *tt);
        rc = reap_usage(daemon, limit, &st, &out->daemon_cpu_seconds, tt);
        if (tt)
            sum_threads(tt, out);
        free(tt);
        if (rc == -ETIMEDOUT)
            rci_set_err(err, errlen, "pipeline: ringcast-readout did not finish in time; see %s", fl->daemon_log);
        else if (rc == 0 && !exited_ok(st)) {
            rci_set_err(err, errlen, "pipeline: ringcast-readout failed (status %d); see %s",
                       WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), fl->daemon_log);
            rc = -ECHILD;
        }
    }
    kill_and_reap(daemon);
    if (sim > 0) {   /* it exits when its run is over or the daemon closed the card */
        int st;
        if (reap_usage(sim, SUB_EXIT_TIMEOUT_NS, &st, &out->sim_cpu_seconds, NULL) != 0) {
            kill(sim, SIGTERM);
            kill_and_reap(sim);
        }
    } else {
        out->sim_cpu_seconds = out->sim_thread_cpu;
    }
    int sub_rc = stop_subscribers(subs, p->subscribers, fl, &out->sub_cpu_seconds, rc ? NULL : err, rc ? 0 : errlen);
    return rc ? rc : sub_rc;
}

int rci_bench_pipe_run(const struct rci_bench_pipe_params *p, struct rci_bench_pipe_result *out,
                      char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (p->subscribers < 1 || p->subscribers > RCI_BENCH_MAX_SUBSCRIBERS) {
        rci_set_err(err, errlen, "pipeline: %u subscribers: expected 1..%u", p->subscribers,
                   RCI_BENCH_MAX_SUBSCRIBERS);
        return -EINVAL;
    }
    struct run_files *fl = calloc(1, sizeof *fl);
    if (!fl) {
        rci_set_err(err, errlen, "pipeline: out of memory");
        return -ENOMEM;
    }
    name_files(p, fl);
    uint16_t port = free_ports(p->publisher_threads ? p->publisher_threads : 1u);
    int rc = port ? write_config(p, port, fl->config, err, errlen) : -EADDRINUSE;
    if (!port)
        rci_set_err(err, errlen, "pipeline: no free TCP port on 127.0.0.1");
    double cpu0 = rci_bench_cpu_seconds(RUSAGE_CHILDREN);
    if (rc == 0)
        rc = run_children(p, fl, port, out, err, errlen);
    out->cpu_seconds = rci_bench_cpu_seconds(RUSAGE_CHILDREN) - cpu0;
    if (rc == 0)
        rc = read_daemon(p, fl, out, err, errlen);
    if (rc == 0)
        rc = read_subscribers(p, fl, out, err, errlen);
    free(fl);
    return rc;
}
