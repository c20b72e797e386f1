/* SPDX-License-Identifier: BSD-3-Clause */
/* schema_mode.c — the [mode.N] sections: struct rci_mode_rule (config.h), the
 * send mode of a range of tags. Rows follow the pattern described in
 * schema_fabric.c. tags is kept as written (so the effective configuration
 * prints it back) and checked here as it is read; the loader fills first and
 * last from it once every value is in (finish_mode_rules() in config.c),
 * which also insists on tags and mode being given: a rule without either
 * would not say what it is for. */
#include "config/schema.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define T struct rci_mode_rule

/* One tag: decimal or 0x hex, blanks around it allowed ("0 - 7"). */
static int parse_tag(const char *text, size_t len, uint64_t *tag, char *why, size_t whylen)
{
    char buf[RCI_MODE_TAGS_MAX];
    while (len && (*text == ' ' || *text == '\t')) {
        text++;
        len--;
    }
    while (len && (text[len - 1] == ' ' || text[len - 1] == '\t')) len--;
    if (len == 0 || len >= sizeof buf) {
        snprintf(why, whylen, "%s", len ? "a tag is too long" : "a tag is missing around '-'");
        return -EINVAL;
    }
    memcpy(buf, text, len);
    buf[len] = '\0';
    return rci_cfg_parse_uint(buf, tag, why, whylen);
}

int rci_cfg_parse_tag_range(const char *text, uint64_t *first, uint64_t *last, char *why,
                           size_t whylen)
{
    const char *dash = strchr(text, '-');
    size_t len = strlen(text);
    if (dash && strchr(dash + 1, '-')) {
        snprintf(why, whylen, "expected first-last or one tag (decimal or 0x hex)");
        return -EINVAL;
    }
    size_t first_len = dash ? (size_t)(dash - text) : len;
    int rc = parse_tag(text, first_len, first, why, whylen);
    if (rc == 0)
        rc = dash ? parse_tag(dash + 1, len - first_len - 1, last, why, whylen) : 0;
    if (rc != 0)
        return -EINVAL;
    if (!dash)
        *last = *first;
    if (*first > *last) {
        snprintf(why, whylen, "the first tag %" PRIu64 " is larger than the last %" PRIu64, *first,
                 *last);
        return -EINVAL;
    }
    return 0;
}

static int validate_tags(const char *text, char *why, size_t whylen)
{
    uint64_t first, last;
    return rci_cfg_parse_tag_range(text, &first, &last, why, whylen);
}

static const struct rci_cfg_key mode_keys[] = {
    /* default empty (min 0): a missing tags key is reported by the loader as missing */
    {.key = "tags", .type = RCI_CFG_STRING, .def = "", .min = 0, .max = RCI_MODE_TAGS_MAX - 1,
     RCI_CFG_FIELD(T, tags), .validate = validate_tags, .example = "0-3",
     .help = "Required: the tags of this rule, first-last (inclusive) or one tag, decimal or 0x hex."},
    {.key = "mode", .type = RCI_CFG_ENUM, .def = "zerocopy", .choices = "zerocopy|buffered|auto",
     RCI_CFG_FIELD(T, mode), .example = "buffered",
     .help = "Required: from the ring (zerocopy), copied into pages (buffered), or auto: buffered below buffered_threshold, else zero copy or gather-copied (bounce_buffers)."},
    {.key = "buffered_threshold", .type = RCI_CFG_SIZE, .def = "16k", .min = 1, .max = 64ull << 20,
     RCI_CFG_FIELD(T, buffered_threshold),
     .help = "With mode = auto: chunks of these tags smaller than this are sent buffered."},
};

static const struct rci_cfg_implicit mode_implicit[] = {
    {.field = "first", .offset = offsetof(T, first), .size = sizeof(((T *)0)->first),
     .align = _Alignof(__typeof__(((T *)0)->first))},
    {.field = "last", .offset = offsetof(T, last), .size = sizeof(((T *)0)->last),
     .align = _Alignof(__typeof__(((T *)0)->last))},
};

const struct rci_cfg_section rci_cfg_section_mode = {
    .name = "mode",
    .repeated = true,
    .max_instances = RCI_MAX_MODE_RULES,
    .example_commented = true,
    .help = "Send mode of a tag range, numbered 0..n-1 without gaps; the lowest N whose tags "
            "hold a chunk's tag decides (ranges may overlap), other tags follow [readout] mode.",
    .keys = mode_keys,
    .nkeys = sizeof mode_keys / sizeof mode_keys[0],
    .implicit = mode_implicit,
    .nimplicit = sizeof mode_implicit / sizeof mode_implicit[0],
    .cfg_offset = offsetof(struct rci_config, mode_rule),
    .struct_size = sizeof(T),
    .struct_align = _Alignof(T),
};
