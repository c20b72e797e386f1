/* SPDX-License-Identifier: BSD-3-Clause */
/* config_print.c — the three texts made from the schema table: the effective
 * configuration (an INI file that loads back to the same values), the
 * --help-config reference, and the documented example deploy/ringcast.ini. */
#include "config/schema.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define VALUE_LEN 256

static const char syntax_help[] =
    "Syntax: [section] headers and 'key = value' lines; lines starting with ';' or '#' and\n"
    "text after ' ;' are comments; a line holds at most 200 characters.\n"
    "Sizes: 4096, 4k, 64M, 1G, 1.5k, 0x1000, 64MiB (k/M/G/T = powers of 1024; kB/MB/GB are\n"
    "refused as ambiguous). Durations: 250ns, 50us, 1ms, 3s (a unit is required, except for 0).\n"
    "Rates: unlimited, 2.5GB/s, 800MB/s, 10Mchunks/s, 5000chunks/s (k/M/G = powers of 1000).\n"
    "Booleans: true/false, yes/no, on/off, 1/0. Integers: decimal or 0x hex.\n"
    "Cards: [card.0], [card.1], ... numbered without gaps; [sim.N] configures the simulator of\n"
    "card N and needs [card.N]. [mode.0], [mode.1], ... (numbered without gaps) set the send\n"
    "mode of tag ranges; the lowest N whose tags hold a chunk's tag decides.\n"
    "Every key can be set on the command line with\n"
    "-o section.key=value (e.g. -o card.0.ring_size=256M), checked like the file.\n";

/* One line per key: "key = value" ("key =" when the value is empty). */
static void print_key_value(FILE *out, const char *key, const char *value)
{
    if (value[0]) fprintf(out, "%s = %s\n", key, value);
    else fprintf(out, "%s =\n", key);
}

static void print_instance(FILE *out, const struct rci_cfg_section *s, const struct rci_config *cfg,
                           unsigned index)
{
    char name[32], value[VALUE_LEN];
    rci_cfg_instance_name(s, index, name, sizeof name);
    fprintf(out, "\n[%s]\n", name);
    const void *params = rci_cfg_params_const(s, cfg, index);
    for (size_t r = 0; r < s->nkeys; r++) {
        rci_cfg_format_value(&s->keys[r], params, value, sizeof value);
        print_key_value(out, s->keys[r].key, value);
    }
}

void rci_config_print(const struct rci_config *cfg, FILE *out)
{
    fprintf(out, "# ringcast effective configuration (%s%s)\n",
            cfg->source[0] ? "from " : "defaults and command line",
            cfg->source[0] ? cfg->source : "");
    print_instance(out, &rci_cfg_section_readout, cfg, 0);
    print_instance(out, &rci_cfg_section_metrics, cfg, 0);
    for (unsigned i = 0; i < cfg->nmodes; i++) print_instance(out, &rci_cfg_section_mode, cfg, i);
    print_instance(out, &rci_cfg_section_fabric, cfg, 0);
    print_instance(out, &rci_cfg_section_discovery, cfg, 0);
    print_instance(out, &rci_cfg_section_control, cfg, 0);
    /* every card runs a simulator, so its [sim.N] is in effect even when not given */
    for (unsigned i = 0; i < cfg->ncards; i++) {
        print_instance(out, &rci_cfg_section_card, cfg, i);
        print_instance(out, &rci_cfg_section_sim, cfg, i);
    }
}

static void print_section_help(FILE *out, const struct rci_cfg_section *s)
{
    char range[160];
    if (s->repeated)
        fprintf(out, "\n[%s.N]  (N = 0..%u)  %s\n", s->name, s->max_instances - 1, s->help);
    else
        fprintf(out, "\n[%s]  %s\n", s->name, s->help);
    for (size_t r = 0; r < s->nkeys; r++) {
        const struct rci_cfg_key *k = &s->keys[r];
        rci_cfg_format_range(k, range, sizeof range);
        fprintf(out, "  %-24s %-11s default: %-12s allowed: %s\n", k->key,
                rci_cfg_type_name(k->type), k->def[0] ? k->def : "(empty)", range);
        fprintf(out, "  %-24s %s\n", "", k->help);
    }
}

void rci_config_print_help(FILE *out)
{
    fprintf(out, "ringcast configuration keys (INI file, or -o section.key=value)\n\n%s",
            syntax_help);
    for (unsigned i = 0; i < RCI_CFG_NSECTIONS; i++) print_section_help(out, rci_cfg_sections[i]);
}

/* syntax_help as comment lines */
static void print_commented(FILE *out, const char *text)
{
    while (*text) {
        size_t n = strcspn(text, "\n");
        fprintf(out, "# %.*s\n", (int)n, text);
        text += n + (text[n] == '\n');
    }
}

/* The value an override "section.key=value" gives key k of the section's
 * first instance, or NULL. */
static const char *overridden(const struct rci_cfg_section *s, const struct rci_cfg_key *k,
                              const char *const *ov, unsigned nov)
{
    char name[96];
    rci_cfg_instance_name(s, 0, name, sizeof name);
    size_t nl = strlen(name), kl = strlen(k->key);
    for (unsigned i = nov; i-- > 0;) {   /* the last one wins, as when loading */
        const char *o = ov[i];
        if (strncmp(o, name, nl) == 0 && o[nl] == '.' && strncmp(o + nl + 1, k->key, kl) == 0 &&
            o[nl + 1 + kl] == '=')
            return o + nl + 2 + kl;
    }
    return NULL;
}

/* A section that is normally absent is shown commented out ("# key = value"),
 * with example values where the default would not explain the key. */
static void print_example_section(FILE *out, const struct rci_cfg_section *s, const char *const *ov,
                                  unsigned nov)
{
    char range[160];
    const char *lead = s->example_commented ? "# " : "";
    /* A normally absent section with a key set here is present: its header
     * is not commented out (its other keys still are). */
    bool present = !s->example_commented;
    for (size_t r = 0; r < s->nkeys && !present; r++)
        present = overridden(s, &s->keys[r], ov, nov) != NULL;
    fprintf(out, "\n# %s\n%s%s[%s%s]\n", s->help,
            present ? "" : "# (optional: an example, uncomment to use)\n", present ? "" : lead,
            s->name, s->repeated ? ".0" : "");
    for (size_t r = 0; r < s->nkeys; r++) {
        const struct rci_cfg_key *k = &s->keys[r];
        rci_cfg_format_range(k, range, sizeof range);
        const char *set = overridden(s, k, ov, nov);
        fprintf(out, "\n# %s (%s: %s)\n", k->help, rci_cfg_type_name(k->type), range);
        if (set) {
            fprintf(out, "# (default: %s; set here)\n", k->def[0] ? k->def : "empty");
            print_key_value(out, k->key, set);
            continue;
        }
        fputs(lead, out);
        print_key_value(out, k->key, s->example_commented && k->example ? k->example : k->def);
    }
}

void rci_config_print_example_with(FILE *out, const char *const *ov, unsigned nov)
{
    if (nov == 0) {
        fprintf(out, "# ringcast example configuration: every key with its default value.\n"
                     "# Generated from the schema in config/ by `ringcast-readout "
                     "--print-example-config`\n");
    } else {
        fprintf(out, "# ringcast configuration: every key with its default value except");
        for (unsigned i = 0; i < nov; i++)
            fprintf(out, "%s %s", i ? "," : "", ov[i]);
        fprintf(out, "\n# (marked \"set here\"). Generated from the schema in config/ by\n"
                     "# `ringcast-readout --print-example-config");
        for (unsigned i = 0; i < nov; i++)
            fprintf(out, " -o %s", ov[i]);
        fprintf(out, "`\n");
    }
    fprintf(out, "# (make config-example); copy it and edit the copy. The full reference:\n"
                 "# `ringcast-readout --help-config`.\n#\n");
    print_commented(out, syntax_help);
    for (unsigned i = 0; i < RCI_CFG_NSECTIONS; i++)
        print_example_section(out, rci_cfg_sections[i], ov, nov);
}

void rci_config_print_example(FILE *out)
{
    rci_config_print_example_with(out, NULL, 0);
}
