/* SPDX-License-Identifier: BSD-3-Clause */
/* schema.h — internal to config/: the schema table that drives parsing,
 * validation, --help-config and deploy/ringcast.ini, and the typed value
 * helpers built on the unit parsers of units.c.
 *
 * One table per section (schema_readout.c, schema_metrics.c, schema_mode.c, schema_fabric.c, schema_discovery.c, schema_card.c,
 * schema_sim.c); rci_cfg_sections[] (schema.c) lists them in printing order.
 * A row is written with designated initializers and RCI_CFG_FIELD(), which
 * takes offset, size and alignment from the params struct itself, so a row
 * cannot point at the wrong bytes. tests/unit/test_config.c checks that the
 * rows of each table cover every field of its struct exactly once.
 */
#ifndef RCI_CONFIG_SCHEMA_H
#define RCI_CONFIG_SCHEMA_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "config/config.h"

#define RCI_CFG_MAX_LINE     200u  /* characters per line of an INI file, without the line end */
#define RCI_CFG_HARD_LINE    4096u /* a longer line stops reading: the file is not text */
#define RCI_CFG_MAX_KEYS     64u   /* rows per section (the loader's bookkeeping is sized by it) */
#define RCI_CFG_NSECTIONS    8u
#define RCI_CFG_MAX_INSTANCES 16u  /* of a repeated section (the loader's bookkeeping is sized by it) */
#define RCI_CFG_TAG_STRIDE   65536u /* card.tag_base = auto gives index * this */
#define RCI_CFG_SHM_NAME_MAX 48u   /* leaves room for the suffixes the daemon appends ("-ring") */

enum rci_cfg_flag {
    RCI_CFG_F_AUTO = 1u << 0, /* "auto" is accepted: the section's resolve_auto() derives the value */
    RCI_CFG_F_POW2 = 1u << 1, /* the value must be a power of two */
    RCI_CFG_F_HEX  = 1u << 2, /* UINT printed as 0x hex (tags: 0x100000 reads better than 1048576) */
};

/* One key. min/max are in the stored base unit: bytes (SIZE), ns (DURATION),
 * per second (RATE), count (UINT), characters (STRING length); unused for
 * BOOL, PROB (always 0..1) and ENUM. */
struct rci_cfg_key {
    const char *key;
    enum rci_cfg_type type;
    const char *def;          /* default, parsed like user input ("auto" with RCI_CFG_F_AUTO) */
    uint64_t min, max;
    uint64_t multiple;        /* the value must be a multiple of this; 0 = no constraint */
    unsigned flags;           /* enum rci_cfg_flag */
    const char *choices;      /* ENUM: "a|b|c", index = stored value */
    const char *field;        /* the struct member, for the coverage test and messages */
    size_t offset, size, align;
    const char *help;         /* one line */
    /* STRING: a check of the text beyond length and characters (NULL: none);
     * 0, or -EINVAL with the reason in why. */
    int (*validate)(const char *text, char *why, size_t whylen);
    /* The value the example file shows, when the default would not explain
     * the key (a section the example shows commented out); NULL: def. */
    const char *example;
};

#define RCI_CFG_FIELD(type, member)                                        \
    .field = #member, .offset = offsetof(type, member),                   \
    .size = sizeof(((type *)0)->member),                                  \
    .align = _Alignof(__typeof__(((type *)0)->member))

/* A struct member that is not a key (card.index comes from [card.N]). */
struct rci_cfg_implicit {
    const char *field;
    size_t offset, size, align;
};

struct rci_cfg_section {
    const char *name;         /* "readout", or "card" for the repeated [card.N] */
    bool repeated;            /* [name.N], N = 0 .. max_instances-1 */
    unsigned max_instances;   /* repeated: at most RCI_CFG_MAX_INSTANCES */
    /* The section is normally absent: the example file shows instance 0
     * commented out (a present instance would change the configuration). */
    bool example_commented;
    const char *help;         /* one line */
    const struct rci_cfg_key *keys;
    size_t nkeys;
    const struct rci_cfg_implicit *implicit;
    size_t nimplicit;
    size_t cfg_offset;        /* where the params struct (of instance 0) lives in struct rci_config */
    size_t struct_size, struct_align;
    /* Called once per instance after parsing, for every RCI_CFG_F_AUTO key
     * whose value is "auto"; NULL if the section has no such key. */
    void (*resolve_auto)(const struct rci_cfg_key *k, void *params, unsigned index);
    /* Called for every instance when defaults are filled in, before any key. */
    void (*init_instance)(void *params, unsigned index);
};

extern const struct rci_cfg_section rci_cfg_section_readout;
extern const struct rci_cfg_section rci_cfg_section_mode;
extern const struct rci_cfg_section rci_cfg_section_fabric;
extern const struct rci_cfg_section rci_cfg_section_discovery;
extern const struct rci_cfg_section rci_cfg_section_card;
extern const struct rci_cfg_section rci_cfg_section_sim;
extern const struct rci_cfg_section rci_cfg_section_control;
extern const struct rci_cfg_section rci_cfg_section_metrics;
extern const struct rci_cfg_section *const rci_cfg_sections[RCI_CFG_NSECTIONS];

/* The params struct of instance `index` (0 for a section that is not repeated). */
void *rci_cfg_params(const struct rci_cfg_section *s, struct rci_config *cfg, unsigned index);
const void *rci_cfg_params_const(const struct rci_cfg_section *s, const struct rci_config *cfg,
                                unsigned index);
const struct rci_cfg_key *rci_cfg_find_key(const struct rci_cfg_section *s, const char *key);
/* Instance name as written in a section header: "readout", "card.3". */
void rci_cfg_instance_name(const struct rci_cfg_section *s, unsigned index, char *buf, size_t len);

/* A parsed value, before it is stored into its struct member. */
union rci_cfg_value {
    uint64_t u;               /* UINT, SIZE, DURATION */
    double d;                 /* PROB */
    bool b;                   /* BOOL */
    struct rci_rate rate;      /* RATE */
    const char *s;            /* STRING (points into the parsed text) */
    unsigned e;               /* ENUM index */
};

/* Parse text as the key's type and check the key's own constraints (range,
 * multiple, power of two, choices, string length and characters). Returns 0,
 * or -EINVAL/-ERANGE with the reason in why. "auto" is not handled here. */
int  rci_cfg_parse_value(const struct rci_cfg_key *k, const char *text, union rci_cfg_value *v,
                        char *why, size_t whylen);
void rci_cfg_store(const struct rci_cfg_key *k, void *params, const union rci_cfg_value *v);
/* Format the member's current value so that rci_cfg_parse_value reads it back. */
void rci_cfg_format_value(const struct rci_cfg_key *k, const void *params, char *buf, size_t len);
/* "1k..64k, multiple of 1k", "abcd|abce|c0ce", "0..1", "" (no constraint). */
void rci_cfg_format_range(const struct rci_cfg_key *k, char *buf, size_t len);
const char *rci_cfg_type_name(enum rci_cfg_type t);

/* Unit parsers with the reason for a failure in why (may be NULL). */
int rci_cfg_parse_size(const char *s, uint64_t *out, char *why, size_t whylen);
int rci_cfg_parse_duration(const char *s, uint64_t *ns, char *why, size_t whylen);
int rci_cfg_parse_rate(const char *s, struct rci_rate *out, char *why, size_t whylen);
int rci_cfg_parse_bool(const char *s, bool *out, char *why, size_t whylen);
int rci_cfg_parse_uint(const char *s, uint64_t *out, char *why, size_t whylen);
int rci_cfg_parse_double(const char *s, double *out, char *why, size_t whylen);
/* Shortest "%.Ng" text that strtod reads back to exactly d. */
char *rci_cfg_format_double(double d, char *buf, size_t len);

/* A tag range "first-last" or one tag, each decimal or 0x hex, first <= last
 * (schema_mode.c). 0 or -EINVAL with the reason in why. */
int rci_cfg_parse_tag_range(const char *text, uint64_t *first, uint64_t *last, char *why,
                           size_t whylen);

/* Levenshtein distance, case-insensitive (for "did you mean" suggestions). */
unsigned rci_cfg_edit_distance(const char *a, const char *b);

#endif
