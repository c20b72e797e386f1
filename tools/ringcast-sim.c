/* SPDX-License-Identifier: BSD-3-Clause */
/* ringcast-sim — the simulated card's firmware as its own process. It attaches
 * to the BAR and the DMA ring a ringcast-readout daemon created in shared
 * memory for a card of type sim-process, waits until the daemon starts the
 * card and enables its DMA descriptor, writes FELIX blocks into the ring,
 * prints a summary and exits (on SIGINT/SIGTERM, at the run length, or when
 * the daemon closes the card).
 *
 * Every simulator option becomes a "sim.N.key=value" override of the
 * configuration module, so options and INI files are parsed and checked by
 * the same code. Exit status: 0 success, 1 runtime failure, 2 usage or
 * configuration error. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config/config.h"
#include "common/monotonic.h"
#include "readout/sim/sim_card.h"
#include "readout/sim/sim_mmio.h"

#define EXIT_RUNTIME 1
#define EXIT_USAGE 2
#define MAX_OVERRIDES 64

enum long_only_option {
    OPT_SHM = 256, OPT_BAR_FILE, OPT_CARD, OPT_ELINKS, OPT_CHUNK_SIZE, OPT_RATE, OPT_FILL, OPT_RUN_CHUNKS,
    OPT_RUN_TIME, OPT_REPLAY, OPT_LOOP, OPT_FORMAT, OPT_BLOCK_SIZE, OPT_SEED, OPT_ERR_TRUNCATED,
    OPT_ERR_CRC, OPT_ERR_MALFORMED, OPT_ERR_SEQSKIP, OPT_ATTACH_TIMEOUT, OPT_VERSION,
};

struct options {
    const char *shm;               /* --shm */
    const char *bar_file;          /* --bar-file */
    const char *config_file;       /* -c */
    unsigned card;                 /* --card */
    const char *format, *block_size;
    uint64_t attach_timeout_ns;
    bool quiet;
    /* "key=value" of [sim.N] (N filled in later) and -o overrides as given */
    char sim_keys[MAX_OVERRIDES][320];
    unsigned nsim;
    const char *user_overrides[MAX_OVERRIDES];
    unsigned nuser;
};

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: ringcast-sim --shm NAME [simulator options]\n"
            "       ringcast-sim -c FILE [--card N] [-o section.key=value]... [simulator options]\n"
            "       ringcast-sim --bar-file PATH -c FILE [--card N] [-o ...] [simulator options]\n"
            "       ringcast-sim --help | --version\n"
            "\n"
            "The simulated card's firmware as a process, for a card of type sim-process: it\n"
            "attaches to /dev/shm/NAME-bar and /dev/shm/NAME-ring, which ringcast-readout\n"
            "creates, waits until the daemon starts the card and enables its DMA descriptor,\n"
            "writes FELIX ToHost blocks into the ring (never overtaking the daemon's read\n"
            "pointer), prints a summary and exits on SIGINT/SIGTERM, when the run length is\n"
            "reached, or when the daemon closes the card.\n"
            "\n"
            "With --bar-file, the card of FILE is of type pcie with a bar_file: the firmware\n"
            "serves the registers of that file, which ringcast-readout maps as the card's\n"
            "BAR0 exactly as a VFIO mapping, and writes into the ring shm object; it exits\n"
            "on SIGINT/SIGTERM or when the daemon lets the file go.\n"
            "\n"
            "Card:\n"
            "  --bar-file PATH          play the firmware of a pcie card on this BAR file\n"
            "                           (needs -c; overrides card.N.bar_file)\n"
            "  --shm NAME               base name of the card's shm objects; with -c it\n"
            "                           overrides card.N.shm_name\n"
            "  -c, --config FILE        take [card.N] and [sim.N] from FILE\n"
            "      --card N             the card of FILE (default 0)\n"
            "  -o section.key=value     set one key of FILE, checked like the file; repeatable\n"
            "      --format abcd|abce|c0ce, --block-size SIZE\n"
            "                           must agree with the daemon's card (checked at attach);\n"
            "                           without them the daemon's values are used\n"
            "      --attach-timeout DURATION\n"
            "                           wait this long for the daemon's objects (default 10s)\n"
            "Simulator (the [sim.N] keys, see ringcast-readout --help-config; defaults from there):\n"
            "      --elinks N           e-links 0..N-1, round robin\n"
            "      --chunk-size A[-B]   fixed size A, or uniform in A..B (e.g. 100-9000, 1k-4k)\n"
            "      --rate R             unlimited, bytes per second (2.5GB/s) or chunks per second\n"
            "                           (10Mchunks/s)\n"
            "      --fill pattern|none|timestamp  verifiable payload, headers and trailers only,\n"
            "                           or a CLOCK_MONOTONIC stamp in each chunk (latency)\n"
            "      --err-truncated P, --err-crc P\n"
            "                           probability per chunk of the truncation / CRC flag\n"
            "      --err-malformed P, --err-seqskip P\n"
            "                           probability per block of a malformed block / skipped\n"
            "                           sequence number\n"
            "      --replay FILE        write the raw blocks of FILE instead of generating\n"
            "      --loop               replay FILE again and again (default: once)\n"
            "      --run-chunks N       stop after N chunks\n"
            "      --run-time DURATION  stop after this long (e.g. 10s)\n"
            "      --seed N             seed of chunk sizes and error injection\n"
            "  -q, --quiet              no summary\n"
            "  -h, --help               print this help\n"
            "      --version            print the version\n"
            "\n"
            "Exit status: 0 success, 1 runtime failure, 2 usage or configuration error.\n");
}

static int usage_error(const char *what, const char *arg)
{
    fprintf(stderr, "ringcast-sim: %s%s\nTry 'ringcast-sim --help'.\n", what, arg ? arg : "");
    return -1;
}

static int add_sim_key(struct options *o, const char *key, const char *value)
{
    if (o->nsim >= MAX_OVERRIDES)
        return usage_error("too many options", NULL);
    snprintf(o->sim_keys[o->nsim++], sizeof o->sim_keys[0], "%s=%s", key, value);
    return 0;
}

/* "A" or "A-B": both sizes parse as config sizes (checked by the loader). */
static int add_chunk_size(struct options *o, const char *arg)
{
    char lo[64];
    const char *dash = strchr(arg, '-');
    if (!dash)
        return add_sim_key(o, "chunk_size_min", arg) || add_sim_key(o, "chunk_size_max", arg);
    if ((size_t)(dash - arg) >= sizeof lo || dash == arg || !dash[1])
        return usage_error("--chunk-size wants A or A-B, not ", arg);
    memcpy(lo, arg, (size_t)(dash - arg));
    lo[dash - arg] = '\0';
    return add_sim_key(o, "chunk_size_min", lo) || add_sim_key(o, "chunk_size_max", dash + 1);
}

static int sim_option(struct options *o, int c, const char *arg)
{
    switch (c) {
    case OPT_ELINKS:        return add_sim_key(o, "elinks", arg);
    case OPT_CHUNK_SIZE:    return add_chunk_size(o, arg);
    case OPT_RATE:          return add_sim_key(o, "rate", arg);
    case OPT_FILL:          return add_sim_key(o, "fill", arg);
    case OPT_RUN_CHUNKS:    return add_sim_key(o, "run_chunks", arg);
    case OPT_RUN_TIME:      return add_sim_key(o, "run_time", arg);
    case OPT_REPLAY:        return add_sim_key(o, "replay_file", arg);
    case OPT_LOOP:          return add_sim_key(o, "replay_loop", "true");
    case OPT_SEED:          return add_sim_key(o, "seed", arg);
    case OPT_ERR_TRUNCATED: return add_sim_key(o, "err_truncated", arg);
    case OPT_ERR_CRC:       return add_sim_key(o, "err_crc", arg);
    case OPT_ERR_MALFORMED: return add_sim_key(o, "err_malformed", arg);
    case OPT_ERR_SEQSKIP:   return add_sim_key(o, "err_seqskip", arg);
    }
    return usage_error("internal: unknown option", NULL);
}

static const struct option longopts[] = {
    {"shm", required_argument, NULL, OPT_SHM},
    {"bar-file", required_argument, NULL, OPT_BAR_FILE},
    {"config", required_argument, NULL, 'c'},
    {"card", required_argument, NULL, OPT_CARD},
    {"elinks", required_argument, NULL, OPT_ELINKS},
    {"chunk-size", required_argument, NULL, OPT_CHUNK_SIZE},
    {"rate", required_argument, NULL, OPT_RATE},
    {"fill", required_argument, NULL, OPT_FILL},
    {"run-chunks", required_argument, NULL, OPT_RUN_CHUNKS},
    {"run-time", required_argument, NULL, OPT_RUN_TIME},
    {"replay", required_argument, NULL, OPT_REPLAY},
    {"loop", no_argument, NULL, OPT_LOOP},
    {"format", required_argument, NULL, OPT_FORMAT},
    {"block-size", required_argument, NULL, OPT_BLOCK_SIZE},
    {"seed", required_argument, NULL, OPT_SEED},
    {"err-truncated", required_argument, NULL, OPT_ERR_TRUNCATED},
    {"err-crc", required_argument, NULL, OPT_ERR_CRC},
    {"err-malformed", required_argument, NULL, OPT_ERR_MALFORMED},
    {"err-seqskip", required_argument, NULL, OPT_ERR_SEQSKIP},
    {"attach-timeout", required_argument, NULL, OPT_ATTACH_TIMEOUT},
    {"quiet", no_argument, NULL, 'q'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, OPT_VERSION},
    {NULL, 0, NULL, 0},
};

/* Returns 0 to run, 1 after --help/--version, -1 after a usage error. */
static int parse_options(int argc, char **argv, struct options *o)
{
    o->attach_timeout_ns = 10000000000ull;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":c:o:qh", longopts, NULL)) != -1) {
        uint64_t v;
        switch (c) {
        case OPT_SHM: o->shm = optarg; break;
        case OPT_BAR_FILE: o->bar_file = optarg; break;
        case 'c': o->config_file = optarg; break;
        case OPT_CARD:
            if (rci_parse_uint(optarg, &v) != 0 || v >= RCI_MAX_CARDS)
                return usage_error("--card wants 0..7, not ", optarg);
            o->card = (unsigned)v;
            break;
        case 'o':
            if (o->nuser >= MAX_OVERRIDES)
                return usage_error("too many -o options", NULL);
            o->user_overrides[o->nuser++] = optarg;
            break;
        case OPT_FORMAT: o->format = optarg; break;
        case OPT_BLOCK_SIZE: o->block_size = optarg; break;
        case OPT_ATTACH_TIMEOUT:
            if (rci_parse_duration(optarg, &o->attach_timeout_ns) != 0)
                return usage_error("--attach-timeout wants a duration (e.g. 10s), not ", optarg);
            break;
        case 'q': o->quiet = true; break;
        case 'h': usage(stdout); return 1;
        case OPT_VERSION: printf("ringcast-sim %s\n", RCI_VERSION); return 1;
        case ':': return usage_error("missing argument for ", argv[optind - 1]);
        case '?': return usage_error("unknown option ", argv[optind - 1]);
        default:
            if (sim_option(o, c, optarg) != 0)
                return -1;
        }
    }
    if (optind < argc)
        return usage_error("unexpected argument ", argv[optind]);
    if (!o->shm && !o->config_file)
        return usage_error("give --shm NAME or -c FILE", NULL);
    if (o->nuser && !o->config_file)
        return usage_error("-o needs -c FILE", NULL);
    if (o->bar_file && !o->config_file)
        return usage_error("--bar-file needs -c FILE (the daemon's configuration)", NULL);
    return 0;
}

/* ---- configuration ---------------------------------------------------------- */

struct setup {
    struct rci_config cfg;          /* large: static in main */
    struct rci_card_params cp;
    struct rci_sim_params sp;
};

/* Load FILE (or defaults) with every override; cfg.card[N] / sim[N]. */
static int load_config(const struct options *o, struct setup *s)
{
    static char storage[MAX_OVERRIDES * 2 + 8][400];
    const char *ov[MAX_OVERRIDES * 2 + 8];
    unsigned n = 0, card = o->config_file ? o->card : 0;
    if (!o->config_file) {
        /* no file: the card exists only so that [sim.0] may; its ring is the daemon's */
        snprintf(storage[n], sizeof storage[0], "card.0.type=sim-process");
        ov[n] = storage[n], n++;
        snprintf(storage[n], sizeof storage[0], "card.0.memory=shm");
        ov[n] = storage[n], n++;
    }
    for (unsigned i = 0; i < o->nuser; i++)
        ov[n++] = o->user_overrides[i];
    if (o->bar_file) {
        snprintf(storage[n], sizeof storage[0], "card.%u.bar_file=%s", card, o->bar_file);
        ov[n] = storage[n], n++;
    }
    if (o->shm) {
        snprintf(storage[n], sizeof storage[0], "card.%u.shm_name=%s", card, o->shm);
        ov[n] = storage[n], n++;
    }
    if (o->config_file && o->format) {
        snprintf(storage[n], sizeof storage[0], "card.%u.block_format=%s", card, o->format);
        ov[n] = storage[n], n++;
    }
    if (o->config_file && o->block_size) {
        snprintf(storage[n], sizeof storage[0], "card.%u.block_size=%s", card, o->block_size);
        ov[n] = storage[n], n++;
    }
    for (unsigned i = 0; i < o->nsim; i++) {
        snprintf(storage[n], sizeof storage[0], "sim.%u.%s", card, o->sim_keys[i]);
        ov[n] = storage[n], n++;
    }
    struct rci_config_error err;
    if (rci_config_load(&s->cfg, o->config_file, ov, n, NULL, &err) != 0) {
        fprintf(stderr, "ringcast-sim: %s\n", err.msg);
        return -1;
    }
    if (card >= s->cfg.ncards) {
        fprintf(stderr, "ringcast-sim: %s has no [card.%u]\n", o->config_file, card);
        return -1;
    }
    if (o->bar_file && (s->cfg.card[card].type != RCI_CARD_PCIE || s->cfg.card[card].device[0])) {
        fprintf(stderr, "ringcast-sim: %s: [card.%u] is not a pcie card with a bar_file: "
                "--bar-file plays only that card's firmware\n", o->config_file, card);
        return -1;
    }
    if (o->config_file && !o->bar_file && s->cfg.card[card].type != RCI_CARD_SIM_PROCESS) {
        fprintf(stderr, "ringcast-sim: %s: [card.%u] type is not sim-process: the daemon runs its "
                "simulator itself\n", o->config_file, card);
        return -1;
    }
    s->sp = s->cfg.sim[card];
    s->cp = s->cfg.card[card];
    return 0;
}

static int parse_format(const char *s, enum felix_format *f)
{
    static const char *const names[] = { "abcd", "abce", "c0ce" };
    for (unsigned i = 0; i < 3; i++)
        if (strcmp(s, names[i]) == 0) {
            *f = (enum felix_format)i;
            return 0;
        }
    return -EINVAL;
}

/* Without a file the card is what the daemon described in its BAR; the
 * format and size given on the command line must agree (attach checks). */
static int card_from_options(const struct options *o, struct rci_card_params *cp)
{
    if (o->format && parse_format(o->format, &cp->block_format) != 0) {
        usage_error("--format wants abcd, abce or c0ce, not ", o->format);
        return -1;
    }
    uint64_t bs;
    if (o->block_size) {
        if (rci_parse_size(o->block_size, &bs) != 0 || bs > UINT32_MAX) {
            usage_error("--block-size wants a size (e.g. 4k), not ", o->block_size);
            return -1;
        }
        cp->block_size = (uint32_t)bs;
    }
    return 0;
}

/* ---- run ------------------------------------------------------------------------ */

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

static void install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

/* Retry while the daemon has not created the objects yet. */
static int attach_with_wait(const struct options *o, struct setup *s, struct rci_sim_process **proc)
{
    char err[512];
    uint64_t deadline = rci_now_ns() + o->attach_timeout_ns;
    for (;;) {
        int rc;
        if (o->config_file) {
            rc = rci_sim_card_attach(&s->cp, &s->sp, proc, err, sizeof err);
        } else {
            rc = rci_sim_bar_describe(s->cp.shm_name, &s->cp, err, sizeof err);
            if (rc == 0 && card_from_options(o, &s->cp) != 0)
                return EXIT_USAGE;
            if (rc == 0)
                rc = rci_sim_card_attach(&s->cp, &s->sp, proc, err, sizeof err);
        }
        if (rc == 0)
            return 0;
        if (rc != -ENOENT || rci_now_ns() >= deadline || stop_requested) {
            fprintf(stderr, "ringcast-sim: %s\n", err);
            return rc == -EINVAL ? EXIT_USAGE : EXIT_RUNTIME;
        }
        rci_sleep_ns(100000000ull);
    }
}

static const char *exit_reason(enum rci_sim_exit why)
{
    switch (why) {
    case RCI_SIM_EXIT_SIGNAL: return "stopped by a signal";
    case RCI_SIM_EXIT_FINISHED: return "finished its run";
    case RCI_SIM_EXIT_HOST_CLOSED: return "the daemon closed the card";
    case RCI_SIM_EXIT_HOST_GONE: return "the daemon is gone (its pid died and its heartbeat stopped)";
    }
    return "?";
}

static void print_stats(const char *what, const char *why, double seconds,
                        const struct rci_card_stats *stp)
{
    struct rci_card_stats st = *stp;
    double s = seconds > 0 ? seconds : 1e-9;
    printf("ringcast-sim %s: %s, %.3f s after attaching\n", what, why, seconds);
    printf("  chunks %" PRIu64 " (%.3f M/s), payload %" PRIu64 " bytes (%.3f GB/s), blocks %" PRIu64 "\n",
           st.chunks_produced, st.chunks_produced / s / 1e6, st.bytes_produced,
           st.bytes_produced / s / 1e9, st.blocks_written);
    printf("  stalled by backpressure %.3f s (%" PRIu64 " times)\n", st.stall_ns / 1e9,
           st.stall_events);
    printf("  injected: truncated %" PRIu64 ", crc %" PRIu64 ", malformed %" PRIu64
           ", seqskip %" PRIu64 "; replay loops %" PRIu64 "; host errors %" PRIu64 "\n",
           st.injected_truncated, st.injected_crc, st.injected_malformed, st.injected_seqskip,
           st.replay_loops, st.host_errors);
}

static void print_summary(struct rci_sim_process *proc, const char *shm, enum rci_sim_exit why,
                          double seconds)
{
    struct rci_card_stats st;
    rci_sim_process_get_stats(proc, &st);
    print_stats(shm, exit_reason(why), seconds, &st);
    const char *fw_error = rci_sim_process_last_error(proc);
    if (fw_error[0])
        printf("  last refusal: %s\n", fw_error);
}

/* ---- --bar-file: the firmware behind a BAR file -------------------------------- */

static int create_mmio_with_wait(const struct options *o, struct setup *s, struct rci_sim_mmio **m)
{
    char err[512];
    uint64_t deadline = rci_now_ns() + o->attach_timeout_ns;
    for (;;) {
        int rc = rci_sim_mmio_create(&s->cp, &s->sp, s->cp.bar_file, m, err, sizeof err);
        if (rc == 0)
            return 0;
        if (rc != -ENOENT || rci_now_ns() >= deadline || stop_requested) {
            fprintf(stderr, "ringcast-sim: %s\n", err);
            return rc == -EINVAL ? EXIT_USAGE : EXIT_RUNTIME;
        }
        rci_sleep_ns(100000000ull);
    }
}

static int run_bar_file(const struct options *o, struct setup *s)
{
    struct rci_sim_mmio *m = NULL;
    int rc = create_mmio_with_wait(o, s, &m);
    if (rc != 0)
        return rc;
    if (!o->quiet)
        printf("ringcast-sim %s: serving BAR file %s (descriptor %u, ring %" PRIu64 " bytes, %" PRIu32
               "-byte blocks); waiting for the daemon to enable the descriptor\n", s->cp.shm_name,
               s->cp.bar_file, s->cp.dma_descriptor, s->cp.ring_size, s->cp.block_size);
    fflush(stdout);
    uint64_t t0 = rci_now_ns();
    enum rci_sim_exit why = rci_sim_mmio_run(m, &stop_requested);
    struct rci_card_stats st;
    rci_sim_mmio_get_stats(m, &st);
    if (!o->quiet)
        print_stats(s->cp.bar_file, why == RCI_SIM_EXIT_SIGNAL ? "stopped by a signal"
                    : "the daemon let the BAR file go", (rci_now_ns() - t0) / 1e9, &st);
    rci_sim_mmio_destroy(m);
    return 0;
}

int main(int argc, char **argv)
{
    static struct options o;
    static struct setup s;
    int rc = parse_options(argc, argv, &o);
    if (rc != 0)
        return rc > 0 ? 0 : EXIT_USAGE;
    if (load_config(&o, &s) != 0)
        return EXIT_USAGE;
    install_signals();
    if (o.bar_file)
        return run_bar_file(&o, &s);
    struct rci_sim_process *proc = NULL;
    rc = attach_with_wait(&o, &s, &proc);
    if (rc != 0)
        return rc;
    if (!o.quiet)
        printf("ringcast-sim %s: attached (descriptor %u, ring %" PRIu64 " bytes, %" PRIu32
               "-byte blocks); waiting for the daemon to start the card\n",
               s.cp.shm_name, s.cp.dma_descriptor, s.cp.ring_size, s.cp.block_size);
    fflush(stdout);
    uint64_t t0 = rci_now_ns();
    enum rci_sim_exit why = rci_sim_process_run(proc, &stop_requested);
    if (!o.quiet)
        print_summary(proc, s.cp.shm_name, why, (rci_now_ns() - t0) / 1e9);
    rci_sim_card_detach(proc);
    if (why == RCI_SIM_EXIT_HOST_GONE) {
        fprintf(stderr, "ringcast-sim %s: %s: exiting\n", s.cp.shm_name, exit_reason(why));
        return EXIT_RUNTIME;
    }
    return 0;
}
