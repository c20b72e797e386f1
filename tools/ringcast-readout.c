/* SPDX-License-Identifier: BSD-3-Clause */
/* ringcast-readout — the readout daemon. main() parses the options, loads and
 * checks the configuration (config/), then either prints it (--check-config)
 * or runs the daemon. Exit status: 0 success, 1 runtime failure,
 * 2 configuration or usage error. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "tools/log.h"
#include "tools/readout_daemon.h"

#define EXIT_RUNTIME 1
#define EXIT_CONFIG 2

enum long_only_option {
    OPT_CHECK_CONFIG = 256,
    OPT_HELP_CONFIG,
    OPT_PRINT_EXAMPLE,
    OPT_STATS_JSON,
    OPT_VERSION,
};

struct options {
    const char *config_file;     /* -c */
    const char *check_file;      /* --check-config */
    const char *stats_json;      /* --stats-json, for the daemon */
    const char **overrides;      /* -o, in command-line order */
    unsigned noverrides;
    bool help, version, help_config, print_example;
};

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: ringcast-readout [-c FILE] [-o section.key=value]... [--stats-json FILE]\n"
            "       ringcast-readout --check-config FILE [-o section.key=value]...\n"
            "       ringcast-readout --help-config | --print-example-config | --version | --help\n"
            "\n"
            "The ringcast readout daemon, configured by an INI file (see --help-config).\n"
            "It runs every [card.N] (simulated cards: a firmware thread per card), a readout\n"
            "thread per DMA ring decoding FELIX blocks into chunks, and readout.publisher_threads\n"
            "publisher threads (default 1) that send each chunk to every subscriber of its tag\n"
            "over libfabric. Publisher thread i listens on [fabric] address, port + i; every\n"
            "port serves every tag, so a subscriber connects to any one of them (ringcast-sub\n"
            "--connect HOST:PORT); spread subscribers over the ports to spread the sending.\n"
            "Chunks of tags nobody subscribed go back to the ring at once. It logs statistics\n"
            "every readout.stats_interval and stops when every card finished its run\n"
            "(sim.N.run_chunks, sim.N.run_time) or on SIGINT/SIGTERM, after draining: every\n"
            "chunk's key is back in the ring.\n"
            "\n"
            "  -c, --config FILE          configuration file (without one: defaults, no cards)\n"
            "  -o section.key=value       set one key, checked like the file; repeatable\n"
            "                             (e.g. -o card.0.ring_size=256M)\n"
            "      --check-config FILE    check FILE and the -o overrides, print the effective\n"
            "                             configuration to stdout and exit (errors on stderr)\n"
            "      --help-config          list every section and key: type, default, range\n"
            "      --print-example-config print the documented example (deploy/ringcast.ini);\n"
            "                             with -o: those keys set (deploy/ringcast-server.ini)\n"
            "      --stats-json FILE      write the final statistics to FILE as one JSON object\n"
            "                             (FILE is created at start: exit 2 if it cannot be)\n"
            "  -h, --help                 print this help\n"
            "      --version              print the version\n"
            "\n"
            "Exit status: 0 success, 1 runtime failure, 2 configuration or usage error,\n"
            "3 a thread was stuck (readout.thread_stuck_after): the run was ended so a supervisor restarts it.\n");
}

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "ringcast-readout: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nTry 'ringcast-readout --help'.\n");
    return -1;
}

/* The option getopt_long just refused, as the user wrote it. */
static const char *option_name(char **argv)
{
    static char short_name[3];
    const char *arg = argv[optind - 1];
    if (strncmp(arg, "--", 2) == 0 || optopt <= 0 || optopt > 127) return arg;
    snprintf(short_name, sizeof short_name, "-%c", optopt);
    return short_name;
}

/* Returns 0, or -1 after a usage error was printed. */
static int parse_options(int argc, char **argv, struct options *opt)
{
    static const struct option longopts[] = {
        {"config", required_argument, NULL, 'c'},
        {"check-config", required_argument, NULL, OPT_CHECK_CONFIG},
        {"help-config", no_argument, NULL, OPT_HELP_CONFIG},
        {"print-example-config", no_argument, NULL, OPT_PRINT_EXAMPLE},
        {"stats-json", required_argument, NULL, OPT_STATS_JSON},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, OPT_VERSION},
        {NULL, 0, NULL, 0},
    };
    int c;
    opterr = 0; /* we print our own messages */
    while ((c = getopt_long(argc, argv, ":c:o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'c': opt->config_file = optarg; break;
        case 'o': opt->overrides[opt->noverrides++] = optarg; break;
        case OPT_CHECK_CONFIG: opt->check_file = optarg; break;
        case OPT_HELP_CONFIG: opt->help_config = true; break;
        case OPT_PRINT_EXAMPLE: opt->print_example = true; break;
        case OPT_STATS_JSON: opt->stats_json = optarg; break;
        case 'h': opt->help = true; break;
        case OPT_VERSION: opt->version = true; break;
        case ':': return usage_error("option '%s' needs an argument", option_name(argv));
        default: return usage_error("unknown option '%s'", option_name(argv));
        }
    }
    if (optind < argc) return usage_error("unexpected argument '%s'", argv[optind]);
    if (opt->config_file && opt->check_file && strcmp(opt->config_file, opt->check_file) != 0)
        return usage_error("%s", "-c and --check-config name different files");
    return 0;
}

/* The running daemon: cards, rings and readout threads (tools/readout_daemon.c). */
/* --stats-json is opened before the run: a path that cannot be written is a
 * usage error now, not a lost run's statistics later. */
static int run_daemon(const struct rci_config *cfg, const struct options *opt, const char *argv0)
{
    const char *stats_json = opt->stats_json;
    rci_daemon_set_source(opt->config_file, opt->overrides, opt->noverrides);
    FILE *stats = NULL;
    if (stats_json && !(stats = fopen(stats_json, "w"))) {
        fprintf(stderr, "ringcast-readout: --stats-json %s: cannot write: %s\n", stats_json,
                strerror(errno));
        return EXIT_CONFIG;
    }
    rci_log_init(argv0, cfg->daemon.log_level);
    rci_log_set_repeat_interval(cfg->daemon.log_repeat_interval_ns);
    rci_info("ringcast-readout %s starting with %s", RCI_VERSION,
            cfg->source[0] ? cfg->source : "defaults");
    int status = rci_daemon_run(cfg, stats, stats_json);
    rci_log_flush(true);
    if (stats && fclose(stats) != 0) {
        rci_error("--stats-json %s: %s", stats_json, strerror(errno));
        status = EXIT_RUNTIME;
    }
    if (status == RCI_DAEMON_EXIT_STUCK) {   /* a stuck thread may still run: no exit() handlers under it */
        fflush(NULL);
        _exit(status);
    }
    return status;
}

/* --print-example-config -o ...: the example with the overrides must load
 * like any configuration (checked on the plain example, in a temporary file). */
static bool example_overrides_valid(const struct options *opt)
{
    static struct rci_config cfg; /* large: keep it off the stack */
    struct rci_config_error err;
    char path[64];
    FILE *f = tmpfile();
    if (!f) {
        fprintf(stderr, "ringcast-readout: temporary file: %s\n", strerror(errno));
        return false;
    }
    rci_config_print_example(f);
    snprintf(path, sizeof path, "/proc/self/fd/%d", fileno(f));
    bool ok = fflush(f) == 0 &&
              rci_config_load(&cfg, path, opt->overrides, opt->noverrides, stderr, &err) == 0;
    if (!ok)
        fprintf(stderr, "ringcast-readout: the example with these -o is not valid\n");
    fclose(f);
    return ok;
}

/* --help, --version, --help-config, --print-example-config: print and exit 0. */
static bool print_information(const struct options *opt)
{
    if (opt->help) usage(stdout);
    else if (opt->version) printf("ringcast-readout %s\n", RCI_VERSION);
    else if (opt->help_config) rci_config_print_help(stdout);
    else if (opt->print_example) rci_config_print_example_with(stdout, opt->overrides, opt->noverrides);
    else return false;
    return true;
}

int main(int argc, char **argv)
{
    struct options opt = {0};
    opt.overrides = calloc((size_t)argc, sizeof *opt.overrides); /* at most one per argument */
    if (!opt.overrides) {
        fprintf(stderr, "ringcast-readout: out of memory\n");
        return EXIT_RUNTIME;
    }
    int status = 0;
    if (parse_options(argc, argv, &opt) != 0) status = EXIT_CONFIG;
    else if (opt.print_example && opt.noverrides && !example_overrides_valid(&opt)) status = EXIT_CONFIG;
    else if (print_information(&opt)) status = fflush(stdout) == 0 ? 0 : EXIT_RUNTIME;
    else {
        static struct rci_config cfg; /* large: keep it off the stack */
        struct rci_config_error err;
        const char *file = opt.check_file ? opt.check_file : opt.config_file;
        if (rci_config_load(&cfg, file, opt.overrides, opt.noverrides, stderr, &err) != 0) {
            fprintf(stderr, "ringcast-readout: %u configuration error%s\n", err.count,
                    err.count == 1 ? "" : "s");
            status = EXIT_CONFIG;
        } else if (cfg.ncards == 0) {  /* valid, but the daemon would have nothing to do */
            fprintf(stderr, "%s: no [card.N] section: nothing to read out\n"
                    "ringcast-readout: 1 configuration error\n", cfg.source[0] ? cfg.source : "configuration");
            status = EXIT_CONFIG;
        } else if (opt.check_file) {
            rci_config_print(&cfg, stdout);
            status = fflush(stdout) == 0 ? 0 : EXIT_RUNTIME;
        } else {
            status = run_daemon(&cfg, &opt, argv[0]);
        }
    }
    free(opt.overrides);
    return status;
}
