/* SPDX-License-Identifier: BSD-3-Clause */
/* prom_text.h — a writer of the Prometheus text exposition format (version
 * 0.0.4), the format a /metrics endpoint answers with. Debian packages no C
 * Prometheus client; this is the small part of one that ringcast needs.
 *
 * Usage: rci_prom_init, then per metric family rci_prom_family (name, type,
 * help) followed by its samples (rci_prom_counter / rci_prom_gauge with
 * labels), then rci_prom_text for the document, rci_prom_fini.
 *
 * What it guarantees about the document (each a rule of the format that a
 * scraper or `promtool check metrics` enforces):
 *   - each family's # HELP and # TYPE lines come once, before its samples,
 *     and only if it has a sample (a family without series is left out);
 *   - a name is used by one family only (a second rci_prom_family with the
 *     same name is refused), and all samples of a family are together;
 *   - metric and label names are checked against [a-zA-Z_:][a-zA-Z0-9_:]*
 *     (labels without ':' and not starting with "__");
 *   - label values are escaped (\\, \" and \n), as is HELP text (\\, \n);
 *   - no two samples of a family have the same label set (refused);
 *   - counters are written as exact integers, gauges as the shortest %.15g..%.17g that reads back exactly, NaN and
 *     +Inf/-Inf as the format spells them.
 * A refused call leaves the document as it was and records the first error
 * (rci_prom_error): the caller answers 500 instead of a broken document.
 * Allocation: the document grows as needed (malloc); not for a hot path. */
#ifndef RCI_PROM_TEXT_H
#define RCI_PROM_TEXT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum rci_prom_type { RCI_PROM_COUNTER, RCI_PROM_GAUGE, RCI_PROM_UNTYPED };

struct rci_prom_label {
    const char *name;
    const char *value;
};

struct rci_prom {
    char *text;                 /* the document so far, NUL-terminated */
    size_t len, cap;
    /* Names of the families begun, for the one-family-per-name rule. */
    char **names;
    size_t nnames, names_cap;
    /* The current family. */
    char family[128];
    enum rci_prom_type type;
    char *help;
    bool header_written;
    /* Label sets of the current family's samples (open addressing, offsets
     * of each set's text in keys). */
    char *keys;
    size_t keys_len, keys_cap;
    struct rci_prom_slot { uint64_t hash; size_t off, len; } *slots;
    size_t nslots, used_slots;
    char error[256];            /* first error, "" if none */
};

void rci_prom_init(struct rci_prom *p);
void rci_prom_fini(struct rci_prom *p);

/* Begin a family. name is the full sample name: a counter's ends in
 * "_total" (refused otherwise). 0, or -EINVAL (bad or reused name, bad
 * type) / -ENOMEM with rci_prom_error set. */
int rci_prom_family(struct rci_prom *p, const char *name, enum rci_prom_type type, const char *help);

/* One sample of the current family with nlabels labels (labels may be NULL
 * when nlabels is 0). A counter's value is an exact integer; a gauge's a
 * double. Refused (-EINVAL) without a family, with the wrong kind of value
 * for the family's type, a bad label name, a label named twice, or a label
 * set the family already has. */
int rci_prom_counter(struct rci_prom *p, const struct rci_prom_label *labels, unsigned nlabels,
                     uint64_t value);
/* A counter in a unit that is not a count (seconds): a finite value >= 0. */
int rci_prom_counter_f(struct rci_prom *p, const struct rci_prom_label *labels, unsigned nlabels,
                       double value);
int rci_prom_gauge(struct rci_prom *p, const struct rci_prom_label *labels, unsigned nlabels,
                   double value);

/* The document (valid until the next call), and its length. */
const char *rci_prom_text(const struct rci_prom *p, size_t *len);
/* The first error, or NULL when every call succeeded. */
const char *rci_prom_error(const struct rci_prom *p);

/* Checks, exposed for the tests. */
bool rci_prom_valid_metric_name(const char *name);
bool rci_prom_valid_label_name(const char *name);

#endif
