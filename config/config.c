/* SPDX-License-Identifier: BSD-3-Clause */
/* config.c — loading a configuration: defaults from the schema, the INI file
 * (through inih), -o overrides, the section structure ([card.N] and [mode.N] numbered
 * without gaps, [sim.N] only with its card), then the checks that involve
 * more than one key. Every error is reported with where it came from
 * ("file:line", "-o text") and loading goes on to find the others; any error
 * makes rci_config_load() fail as a whole.
 *
 * inih r55 cuts lines longer than its 200-byte buffer without telling, treats
 * indented lines as continuations of the previous value and does not report
 * empty sections, so read_line() feeds it one physical line at a time: it
 * counts lines itself, rejects long ones, strips blanks and comments at both
 * ends (as inih would) and follows section headers itself. */
#include "config/schema.h"
#include "common/cpus.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ini.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define MSG_LEN sizeof(((struct rci_config_error *)0)->msg)
#define WHERE_LEN 320

/* Where a key's value came from. */
struct origin {
    unsigned line;      /* the file line that set it; 0: not the file */
    int override;       /* the override that set it; -1: none */
};

/* Bookkeeping for one section instance ([readout], [card.3], ...). */
struct instance {
    bool present;            /* given in the file or created by an override */
    unsigned header_line;    /* its header in the file; 0: none */
    int created_by;          /* the override that created it; -1: none */
    struct origin origin[RCI_CFG_MAX_KEYS];
    bool is_auto[RCI_CFG_MAX_KEYS];
};

struct loader {
    struct rci_config *cfg;
    const char *file;                  /* for messages; NULL: no file */
    const char *const *overrides;
    FILE *errlog;
    struct rci_config_error *err;
    unsigned nerrors;
    /* reading the file */
    FILE *in;
    char *line;                        /* RCI_CFG_HARD_LINE + 1 bytes */
    bool stopped;                      /* not text: the rest of the file is not read */
    int read_errno;
    unsigned lineno;
    unsigned unanswered_line;          /* a key line inih has not handed to on_pair() */
    char unanswered_text[RCI_CFG_MAX_LINE + 1]; /* its text, for the message */
    unsigned first_syntax_line;        /* first line we found malformed (inih reports the same) */
    /* the section the current line belongs to */
    const struct rci_cfg_section *sec;  /* NULL: none yet, or a bad one */
    unsigned index;
    bool bad_section;                  /* its keys are skipped: the header was reported */
    struct instance inst[RCI_CFG_NSECTIONS][RCI_CFG_MAX_INSTANCES];
};

_Static_assert(RCI_MAX_CARDS <= RCI_CFG_MAX_INSTANCES && RCI_MAX_MODE_RULES <= RCI_CFG_MAX_INSTANCES,
               "the loader keeps RCI_CFG_MAX_INSTANCES instances per section");

static void report(struct loader *ld, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void report(struct loader *ld, const char *fmt, ...)
{
    char msg[MSG_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (ld->errlog) fprintf(ld->errlog, "%s\n", msg);
    if (ld->nerrors == 0 && ld->err) snprintf(ld->err->msg, sizeof ld->err->msg, "%s", msg);
    ld->nerrors++;
}

static unsigned section_slot(const struct rci_cfg_section *s)
{
    for (unsigned i = 0; i < RCI_CFG_NSECTIONS; i++)
        if (rci_cfg_sections[i] == s) return i;
    return 0; /* unreachable: every section comes from rci_cfg_sections */
}

static unsigned instance_count(const struct rci_cfg_section *s)
{
    return s->repeated ? s->max_instances : 1;
}

static struct instance *instance(struct loader *ld, const struct rci_cfg_section *s, unsigned index)
{
    return &ld->inst[section_slot(s)][index];
}

/* ---- where things came from ---- */

static const char *file_line(const struct loader *ld, unsigned line, char *buf, size_t len)
{
    snprintf(buf, len, "%s:%u", ld->file, line);
    return buf;
}

static const char *override_where(const struct loader *ld, int i, char *buf, size_t len)
{
    snprintf(buf, len, "-o %s", ld->overrides[i]);
    return buf;
}

/* Where a section instance was given: its header, or the override that created it. */
static const char *instance_where(const struct loader *ld, const struct instance *in, char *buf,
                                  size_t len)
{
    if (in->header_line) return file_line(ld, in->header_line, buf, len);
    if (in->created_by >= 0) return override_where(ld, in->created_by, buf, len);
    snprintf(buf, len, "%s", ld->file ? ld->file : "command line");
    return buf;
}

/* Where a key got its value; a default is located at its section. */
static const char *origin_where(const struct loader *ld, const struct instance *in,
                                const struct origin *o, char *buf, size_t len)
{
    if (o->override >= 0) return override_where(ld, o->override, buf, len);
    if (o->line) return file_line(ld, o->line, buf, len);
    return instance_where(ld, in, buf, len);
}

/* ---- suggestions ---- */

unsigned rci_cfg_edit_distance(const char *a, const char *b)
{
    enum { MAX = 64 };
    size_t la = strlen(a), lb = strlen(b);
    if (la >= MAX || lb >= MAX) return MAX;
    unsigned row[MAX + 1];
    for (size_t j = 0; j <= lb; j++) row[j] = (unsigned)j;
    for (size_t i = 1; i <= la; i++) {
        unsigned diag = row[0];
        row[0] = (unsigned)i;
        for (size_t j = 1; j <= lb; j++) {
            unsigned up = row[j];
            unsigned cost = (a[i - 1] | 0x20) == (b[j - 1] | 0x20) ? 0 : 1;
            unsigned best = diag + cost;
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

/* Close enough to be a typo: a third of the name, at least 2 edits. */
static bool is_close(const char *typed, const char *known)
{
    size_t allowed = strlen(known) / 3;
    return rci_cfg_edit_distance(typed, known) <= (allowed < 2 ? 2 : allowed);
}

static const struct rci_cfg_key *nearest_key(const struct rci_cfg_section *s, const char *key)
{
    const struct rci_cfg_key *best = NULL;
    unsigned best_d = ~0u;
    for (size_t i = 0; i < s->nkeys; i++) {
        unsigned d = rci_cfg_edit_distance(key, s->keys[i].key);
        if (d < best_d) {
            best_d = d;
            best = &s->keys[i];
        }
    }
    return best && is_close(key, best->key) ? best : NULL;
}

static void report_unknown_key(struct loader *ld, const char *where, const char *inst,
                               const struct rci_cfg_section *s, const char *key)
{
    char hint[128] = "";
    const struct rci_cfg_key *near = nearest_key(s, key);
    for (unsigned i = 0; !near && i < RCI_CFG_NSECTIONS; i++) {
        const struct rci_cfg_section *t = rci_cfg_sections[i];
        if (t != s && rci_cfg_find_key(t, key)) {
            snprintf(hint, sizeof hint, " ('%s' belongs in [%s%s])", key, t->name,
                     t->repeated ? ".N" : "");
            break;
        }
    }
    if (near) snprintf(hint, sizeof hint, " (did you mean '%s'?)", near->key);
    report(ld, "%s: [%s] %s: unknown key%s", where, inst, key, hint);
}

/* ---- sections ---- */

/* "0".."count-1" without leading zeros. */
static int parse_index(const char *text, unsigned count, unsigned *index)
{
    if (!*text || strspn(text, "0123456789") != strlen(text) || (text[0] == '0' && text[1]))
        return -EINVAL;
    if (strlen(text) > 3 || (unsigned)atoi(text) >= count) return -ERANGE;
    *index = (unsigned)atoi(text);
    return 0;
}

static void report_unknown_section(struct loader *ld, const char *where, const char *name,
                                   size_t base_len)
{
    char base[64], hint[96] = "";
    snprintf(base, sizeof base, "%.*s", (int)(base_len < 63 ? base_len : 63), name);
    const struct rci_cfg_section *near = NULL;
    unsigned near_d = ~0u;
    for (unsigned i = 0; i < RCI_CFG_NSECTIONS; i++) {
        unsigned d = rci_cfg_edit_distance(base, rci_cfg_sections[i]->name);
        if (d < near_d) {
            near_d = d;
            near = rci_cfg_sections[i];
        }
    }
    if (near && is_close(base, near->name))
        snprintf(hint, sizeof hint, " (did you mean [%s%s]?)", near->name,
                 near->repeated ? (name[base_len] ? name + base_len : ".N") : "");
    char known[160] = "";
    size_t n = 0;
    for (unsigned i = 0; i < RCI_CFG_NSECTIONS && n < sizeof known; i++)
        n += (size_t)snprintf(known + n, sizeof known - n, "%s[%s%s]", i ? ", " : "",
                              rci_cfg_sections[i]->name, rci_cfg_sections[i]->repeated ? ".N" : "");
    report(ld, "%s: [%s]: unknown section%s; known: %s", where, name, hint, known);
}

/* Map "card.3" to its section and index; reports and fails if it is not one. */
static int resolve_section(struct loader *ld, const char *name, const char *where,
                           const struct rci_cfg_section **out, unsigned *index)
{
    const char *dot = strchr(name, '.');
    size_t base_len = dot ? (size_t)(dot - name) : strlen(name);
    for (unsigned i = 0; i < RCI_CFG_NSECTIONS; i++) {
        const struct rci_cfg_section *s = rci_cfg_sections[i];
        if (strlen(s->name) != base_len || strncmp(s->name, name, base_len) != 0) continue;
        if (!s->repeated && dot) {
            report(ld, "%s: [%s]: [%s] takes no index", where, name, s->name);
            return -EINVAL;
        }
        if (s->repeated && !dot) {
            report(ld, "%s: [%s]: needs an index: [%s.0] .. [%s.%u]", where, name, s->name,
                   s->name, s->max_instances - 1);
            return -EINVAL;
        }
        *index = 0;
        if (dot && parse_index(dot + 1, s->max_instances, index) != 0) {
            report(ld, "%s: [%s]: the index must be a number 0..%u (no leading zeros)", where,
                   name, s->max_instances - 1);
            return -EINVAL;
        }
        *out = s;
        return 0;
    }
    report_unknown_section(ld, where, name, base_len);
    return -EINVAL;
}

static void begin_section(struct loader *ld, const char *name)
{
    char where[WHERE_LEN], first[WHERE_LEN];
    const struct rci_cfg_section *s;
    unsigned index;
    ld->sec = NULL;
    ld->bad_section = true;
    file_line(ld, ld->lineno, where, sizeof where);
    if (resolve_section(ld, name, where, &s, &index) != 0) return;
    struct instance *in = instance(ld, s, index);
    if (in->header_line)
        report(ld, "%s: [%s]: section given twice (first at %s); give each section once", where,
               name, file_line(ld, in->header_line, first, sizeof first));
    else
        in->header_line = ld->lineno;
    in->present = true;
    ld->sec = s;
    ld->index = index;
    ld->bad_section = false;
}

/* ---- applying one key = value ---- */

/* One rule for the file and for -o: blanks around the value are dropped,
 * quotes are not syntax. A value in quotes is refused rather than taken with
 * its quotes (provider "tcp" would fail far from here) or without them (then
 * "tcp ;x" would not mean what it says in a file). A file's ';' after a blank
 * starts a comment; -o has no comments, so such a value is refused there. */
static bool quoted_value(struct loader *ld, const char *where, const char *inst, const char *key,
                         const char *value, bool from_override)
{
    size_t n = strlen(value);
    if (n && (strchr("\"'", value[0]) || strchr("\"'", value[n - 1]))) {
        report(ld, "%s: [%s] %s = %s: quotes are not part of the value: write it without them "
                   "(e.g. provider = tcp;ofi_rxm)", where, inst, key, value);
        return true;
    }
    if (from_override && (strstr(value, " ;") || strstr(value, "\t;"))) {
        report(ld, "%s: [%s] %s = %s: a ';' after a blank starts a comment in a file; -o takes "
                   "no comments: remove it", where, inst, key, value);
        return true;
    }
    return false;
}

static void apply_setting(struct loader *ld, const struct rci_cfg_section *s, unsigned index,
                          const char *key, const char *value, struct origin o)
{
    char where[WHERE_LEN], prev_where[WHERE_LEN], inst[32], why[256];
    struct instance *in = instance(ld, s, index);
    rci_cfg_instance_name(s, index, inst, sizeof inst);
    origin_where(ld, in, &o, where, sizeof where);
    if (!*key) {
        report(ld, "%s: [%s]: '=' without a key before it", where, inst);
        return;
    }
    const struct rci_cfg_key *k = rci_cfg_find_key(s, key);
    if (!k) {
        report_unknown_key(ld, where, inst, s, key);
        return;
    }
    struct origin *prev = &in->origin[k - s->keys];
    if ((o.line && prev->line) || (o.override >= 0 && prev->override >= 0)) {
        report(ld, "%s: [%s] %s: duplicate key (first given at %s)", where, inst, key,
               origin_where(ld, in, prev, prev_where, sizeof prev_where));
        return;
    }
    if (o.line) prev->line = o.line;
    if (o.override >= 0) prev->override = o.override;
    if (quoted_value(ld, where, inst, key, value, o.override >= 0))
        return;
    if ((k->flags & RCI_CFG_F_AUTO) && strcmp(value, "auto") == 0) {
        in->is_auto[k - s->keys] = true;
        return;
    }
    union rci_cfg_value v;
    if (rci_cfg_parse_value(k, value, &v, why, sizeof why) != 0) {
        if (*value) report(ld, "%s: [%s] %s = %s: %s", where, inst, key, value, why);
        else report(ld, "%s: [%s] %s: %s", where, inst, key, why);
        return;
    }
    rci_cfg_store(k, rci_cfg_params(s, ld->cfg, index), &v);
    in->is_auto[k - s->keys] = false;
}

/* ---- reading the file through inih ---- */

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t') s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t')) s[--n] = '\0';
    return s;
}

/* inih's ini_find_chars_or_comment(): stops at c or at a ';' that follows a blank. */
static const char *find_char_or_comment(const char *s, char c)
{
    bool was_blank = false;
    for (; *s && *s != c && !(was_blank && *s == ';'); s++) was_blank = (*s == ' ' || *s == '\t');
    return s;
}

/* Drop a comment line or an inline comment the way inih would, so that inih's
 * line buffer only has to hold what matters. */
static char *strip_comment(char *text)
{
    if (text[0] == ';' || text[0] == '#') text[0] = '\0';
    else *(char *)find_char_or_comment(text, '\0') = '\0';
    return trim(text);
}

/* For lines inih also counts as errors (its return value names the first). */
static void syntax_error(struct loader *ld, unsigned line, const char *what)
{
    char where[WHERE_LEN];
    report(ld, "%s: %s", file_line(ld, line, where, sizeof where), what);
    if (!ld->first_syntax_line) ld->first_syntax_line = line;
}

/* A key line that inih did not hand to on_pair() had no '=' (or ':'). */
static void check_unanswered(struct loader *ld)
{
    if (!ld->unanswered_line) return;
    char what[RCI_CFG_MAX_LINE + 96];
    snprintf(what, sizeof what, "'%s': expected 'key = value', '[section]' or a comment "
             "(';' or '#')", ld->unanswered_text);
    syntax_error(ld, ld->unanswered_line, what);
    ld->unanswered_line = 0;
}

/* A "[name]" line, as inih reads it (text after ']' must be a comment). */
static void section_line(struct loader *ld, char *text)
{
    char *end = (char *)find_char_or_comment(text + 1, ']');
    if (*end != ']') {
        char what[RCI_CFG_MAX_LINE + 48];
        snprintf(what, sizeof what, "'%s': section header without ']'", text);
        syntax_error(ld, ld->lineno, what);
        ld->sec = NULL;
        ld->bad_section = true;
        return;
    }
    *end = '\0';
    const char *rest = end + 1;
    rest += strspn(rest, " \t");
    if (*rest && *rest != ';' && *rest != '#') { /* inih would ignore it silently */
        char where[WHERE_LEN];
        report(ld, "%s: [%s]: unexpected text after ']'",
               file_line(ld, ld->lineno, where, sizeof where), text + 1);
    }
    begin_section(ld, text + 1);
    *end = ']';
}

static void report_long_line(struct loader *ld, const char *line, size_t len, size_t limit,
                             const char *limit_note)
{
    char where[WHERE_LEN], inst[32] = "", key[48] = "";
    file_line(ld, ld->lineno, where, sizeof where);
    size_t klen = strcspn(line + strspn(line, " \t"), "= \t:");
    const char *kstart = line + strspn(line, " \t");
    if (ld->sec && klen && klen < sizeof key && kstart[0] != '[' && kstart[0] != ';' &&
        kstart[0] != '#') {
        rci_cfg_instance_name(ld->sec, ld->index, inst, sizeof inst);
        snprintf(key, sizeof key, "%.*s", (int)klen, kstart);
        report(ld, "%s: [%s] %s: line too long (%zu characters%s, at most %zu)", where, inst, key,
               len, limit_note, limit);
    } else {
        report(ld, "%s: line too long (%zu characters%s, at most %zu)", where, len, limit_note,
               limit);
    }
    if (kstart[0] == '[') ld->bad_section = true; /* do not put its keys into the previous one */
}

/* Reads one physical line into ld->line, at most RCI_CFG_HARD_LINE characters:
 * memory stays bounded whatever the file holds. Returns its length (line end
 * removed), or -1 at the end, on a read error (ld->read_errno), or after a
 * line that is too long to be text (reported; reading stops there). */
static ssize_t read_physical_line(struct loader *ld)
{
    size_t len = 0;
    int c;
    while ((c = getc(ld->in)) != EOF && c != '\n') {
        if (len == RCI_CFG_HARD_LINE) { /* not text: the rest would only be noise */
            char where[WHERE_LEN];
            report(ld, "%s: line longer than %u characters: not a configuration file; stopped "
                       "reading it here", file_line(ld, ld->lineno + 1, where, sizeof where),
                   RCI_CFG_HARD_LINE);
            ld->stopped = true;
            return -1;
        }
        ld->line[len++] = (char)c;
    }
    if (c == EOF && ferror(ld->in)) {
        ld->read_errno = errno ? errno : EIO;
        return -1;
    }
    if (c == EOF && len == 0)
        return -1;
    ld->line[len] = '\0';
    return (ssize_t)len;
}

/* Hands inih one physical line (or an empty one in place of a rejected line,
 * so that inih's line count stays ours). */
static char *read_line(char *str, int num, void *stream)
{
    struct loader *ld = stream;
    check_unanswered(ld);
    if (ld->stopped)
        return NULL;
    errno = 0;
    ssize_t n = read_physical_line(ld);
    if (n < 0)
        return NULL;
    ld->lineno++;
    size_t len = (size_t)n;
    while (len && (ld->line[len - 1] == '\n' || ld->line[len - 1] == '\r')) ld->line[--len] = '\0';
    str[0] = '\0';
    char *text = ld->line;
    if (ld->lineno == 1 && strncmp(text, "\xEF\xBB\xBF", 3) == 0) { /* UTF-8 byte order mark */
        text += 3;
        len -= 3;
    }
    if (strlen(text) != len) {
        char where[WHERE_LEN];
        report(ld, "%s: NUL byte in the line", file_line(ld, ld->lineno, where, sizeof where));
        return str;
    }
    if (len > RCI_CFG_MAX_LINE) {
        report_long_line(ld, text, len, RCI_CFG_MAX_LINE, "");
        return str;
    }
    text = strip_comment(trim(text));
    /* inih's buffer holds 199 characters; after stripping, only a line that
     * would be invalid anyway (schema strings keep "key = value" shorter) is longer */
    if (strlen(text) + 1 > (size_t)num) {
        report_long_line(ld, text, strlen(text), (size_t)num - 1,
                         " without blanks and comment at its ends");
        return str;
    }
    if (text[0] == '[') section_line(ld, text);
    else if (text[0]) {
        ld->unanswered_line = ld->lineno;
        snprintf(ld->unanswered_text, sizeof ld->unanswered_text, "%s", text);
    }
    memcpy(str, text, strlen(text) + 1);
    return str;
}

static int on_pair(void *user, const char *section, const char *name, const char *value)
{
    struct loader *ld = user;
    char where[WHERE_LEN];
    (void)section; /* read_line() follows the sections itself */
    ld->unanswered_line = 0;
    if (ld->bad_section) return 1;
    if (!ld->sec) {
        report(ld, "%s: %s: key before any section: put it under [readout], [mode.N], [fabric], "
                   "[card.N] or [sim.N]", file_line(ld, ld->lineno, where, sizeof where), name);
        return 1;
    }
    apply_setting(ld, ld->sec, ld->index, name, value,
                  (struct origin){.line = ld->lineno, .override = -1});
    return 1; /* errors are collected in ld; inih's return value then means syntax only */
}

/* Opens a regular file only: a FIFO would block the open (O_NONBLOCK keeps it
 * from blocking until we know what it is), a device such as /dev/zero or
 * /dev/urandom never ends. Returns NULL after reporting why not. */
static FILE *open_config_file(struct loader *ld, const char *file)
{
    int fd = open(file, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        report(ld, "%s: cannot open: %s", file, strerror(errno));
        return NULL;
    }
    struct stat st;
    const char *refused = NULL;
    if (fstat(fd, &st) != 0) {
        report(ld, "%s: cannot stat: %s", file, strerror(errno));
        refused = "";
    } else if (S_ISDIR(st.st_mode)) {
        report(ld, "%s: is a directory, not a configuration file", file);
        refused = "";
    } else if (!S_ISREG(st.st_mode)) {
        refused = S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISCHR(st.st_mode) ? "a character device"
                : S_ISBLK(st.st_mode) ? "a block device" : S_ISSOCK(st.st_mode) ? "a socket"
                : "not a regular file";
        report(ld, "%s: is %s, not a regular file: refused (a configuration must be a file)",
               file, refused);
    }
    FILE *in = NULL;
    if (!refused && fcntl(fd, F_SETFL, 0) == 0) /* back to blocking reads */
        in = fdopen(fd, "r");
    if (!in) {
        if (!refused)
            report(ld, "%s: cannot open: %s", file, strerror(errno));
        close(fd);
    }
    return in;
}

static void parse_file(struct loader *ld, const char *file)
{
    ld->in = open_config_file(ld, file);
    if (!ld->in)
        return;
    ld->line = malloc(RCI_CFG_HARD_LINE + 1);
    if (!ld->line) {
        report(ld, "%s: out of memory", file);
        fclose(ld->in);
        ld->in = NULL;
        return;
    }
    int rc = ini_parse_stream(read_line, ld, on_pair, ld);
    check_unanswered(ld);
    if (ld->read_errno)
        report(ld, "%s:%u: read error: %s", file, ld->lineno + 1, strerror(ld->read_errno));
    if (rc > 0 && (unsigned)rc != ld->first_syntax_line)
        report(ld, "%s:%d: syntax error", file, rc); /* inih found one our mirror missed */
    else if (rc < 0 && !ld->read_errno)
        report(ld, "%s: the INI parser failed (%d)", file, rc);
    fclose(ld->in);
    ld->in = NULL;
}

/* ---- overrides ---- */

static void apply_override(struct loader *ld, int i)
{
    char where[WHERE_LEN], buf[512];
    override_where(ld, i, where, sizeof where);
    if (strlen(ld->overrides[i]) >= sizeof buf) {
        report(ld, "%.80s...: too long (at most %zu characters)", where, sizeof buf - 1);
        return;
    }
    snprintf(buf, sizeof buf, "%s", ld->overrides[i]);
    char *eq = strchr(buf, '=');
    char *dot = eq ? memrchr(buf, '.', (size_t)(eq - buf)) : NULL;
    if (!eq || !dot || dot == buf) {
        report(ld, "%s: expected section.key=value (e.g. -o card.0.block_size=4k)", where);
        return;
    }
    *eq = '\0';
    *dot = '\0';
    const struct rci_cfg_section *s;
    unsigned index;
    if (resolve_section(ld, trim(buf), where, &s, &index) != 0) return;
    struct instance *in = instance(ld, s, index);
    if (!in->present) {
        in->present = true;
        in->created_by = i;
    }
    apply_setting(ld, s, index, trim(dot + 1), trim(eq + 1),
                  (struct origin){.line = 0, .override = i});
}

/* ---- defaults, structure, auto values ---- */

static void fill_instance_defaults(struct loader *ld, const struct rci_cfg_section *s,
                                   unsigned index)
{
    struct instance *in = instance(ld, s, index);
    void *params = rci_cfg_params(s, ld->cfg, index);
    in->created_by = -1;
    if (s->init_instance) s->init_instance(params, index);
    for (size_t r = 0; r < s->nkeys; r++) {
        const struct rci_cfg_key *k = &s->keys[r];
        union rci_cfg_value v;
        char why[256];
        in->origin[r] = (struct origin){.line = 0, .override = -1};
        if ((k->flags & RCI_CFG_F_AUTO) && strcmp(k->def, "auto") == 0)
            in->is_auto[r] = true;
        else if (rci_cfg_parse_value(k, k->def, &v, why, sizeof why) == 0)
            rci_cfg_store(k, params, &v);
        else
            report(ld, "schema: [%s] %s: default '%s' is invalid: %s", s->name, k->key, k->def,
                   why);
    }
}

/* Returns -EINVAL if the schema itself is unusable (nothing else can be checked then). */
static int fill_defaults(struct loader *ld)
{
    for (unsigned si = 0; si < RCI_CFG_NSECTIONS; si++) {
        const struct rci_cfg_section *s = rci_cfg_sections[si];
        if (s->nkeys > RCI_CFG_MAX_KEYS) { /* the loader's bookkeeping would overflow */
            report(ld, "schema: [%s] has %zu keys, RCI_CFG_MAX_KEYS is %u", s->name, s->nkeys,
                   RCI_CFG_MAX_KEYS);
            return -EINVAL;
        }
        if (s->repeated && (s->max_instances == 0 || s->max_instances > RCI_CFG_MAX_INSTANCES)) {
            report(ld, "schema: [%s.N] allows %u instances, 1..%u are possible", s->name,
                   s->max_instances, RCI_CFG_MAX_INSTANCES);
            return -EINVAL;
        }
        for (unsigned idx = 0; idx < instance_count(s); idx++) fill_instance_defaults(ld, s, idx);
    }
    return 0;
}

/* How many instances of a densely numbered section there are (the highest
 * given + 1); each gap below it is reported. */
static unsigned count_dense(struct loader *ld, const struct rci_cfg_section *s)
{
    char where[WHERE_LEN];
    unsigned n = 0;
    for (unsigned i = 0; i < s->max_instances; i++)
        if (instance(ld, s, i)->present) n = i + 1;
    for (unsigned i = 0; i + 1 < n; i++)
        if (!instance(ld, s, i)->present)
            report(ld, "%s: [%s.%u] is missing: [%s.N] must be numbered 0..n-1 without gaps "
                       "([%s.%u] is given)",
                   instance_where(ld, instance(ld, s, n - 1), where, sizeof where), s->name, i,
                   s->name, s->name, n - 1);
    return n;
}

static void check_structure(struct loader *ld)
{
    char where[WHERE_LEN];
    unsigned ncards = count_dense(ld, &rci_cfg_section_card);
    ld->cfg->nmodes = count_dense(ld, &rci_cfg_section_mode);
    for (unsigned i = 0; i < RCI_MAX_CARDS; i++) {
        const struct instance *sim = instance(ld, &rci_cfg_section_sim, i);
        ld->cfg->has_sim[i] = sim->present;
        if (sim->present && !instance(ld, &rci_cfg_section_card, i)->present)
            report(ld, "%s: [sim.%u]: there is no [card.%u] for this simulator",
                   instance_where(ld, sim, where, sizeof where), i, i);
    }
    ld->cfg->ncards = ncards;
}

static void resolve_autos(struct loader *ld)
{
    for (unsigned si = 0; si < RCI_CFG_NSECTIONS; si++) {
        const struct rci_cfg_section *s = rci_cfg_sections[si];
        for (unsigned idx = 0; s->resolve_auto && idx < instance_count(s); idx++)
            for (size_t r = 0; r < s->nkeys; r++)
                if (ld->inst[si][idx].is_auto[r])
                    s->resolve_auto(&s->keys[r], rci_cfg_params(s, ld->cfg, idx), idx);
    }
}

/* ---- checks involving more than one key ---- */

static void key_error(struct loader *ld, const struct rci_cfg_section *s, unsigned index,
                      const char *key, const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Report against `key`, located where its value came from. */
static void key_error(struct loader *ld, const struct rci_cfg_section *s, unsigned index,
                      const char *key, const char *fmt, ...)
{
    char where[WHERE_LEN], inst[32], what[384];
    const struct rci_cfg_key *k = rci_cfg_find_key(s, key);
    const struct instance *in = instance(ld, s, index);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    rci_cfg_instance_name(s, index, inst, sizeof inst);
    origin_where(ld, in, &in->origin[k - s->keys], where, sizeof where);
    report(ld, "%s: [%s] %s: %s", where, inst, key, what);
}

/* The value of a key as text ("64M", "c0ce"), for messages. */
static const char *value_text(const struct loader *ld, const struct rci_cfg_section *s,
                              unsigned index, const char *key, char *buf, size_t len)
{
    rci_cfg_format_value(rci_cfg_find_key(s, key), rci_cfg_params_const(s, ld->cfg, index), buf, len);
    return buf;
}

/* Given in the file or by an override, not left at its default. */
static bool key_given(struct loader *ld, const struct rci_cfg_section *s, unsigned index,
                      const char *key)
{
    const struct origin *o = &instance(ld, s, index)->origin[rci_cfg_find_key(s, key) - s->keys];
    return o->line || o->override >= 0;
}

static void missing_key(struct loader *ld, const struct rci_cfg_section *s, unsigned index,
                        const char *key, const char *example)
{
    char where[WHERE_LEN], inst[32];
    rci_cfg_instance_name(s, index, inst, sizeof inst);
    report(ld, "%s: [%s] %s: missing: every [%s.N] needs it (e.g. %s = %s)",
           instance_where(ld, instance(ld, s, index), where, sizeof where), inst, key, s->name,
           key, example);
}

/* Is every tag of rule j decided by a rule before it? Walks from its first
 * tag through the earlier ranges that hold the current tag. */
static bool covered_by_earlier(const struct rci_mode_rule *rule, unsigned j)
{
    uint64_t tag = rule[j].first;
    for (;;) {
        unsigned i = 0;
        while (i < j && !(rule[i].first <= tag && tag <= rule[i].last))
            i++;
        if (i == j)
            return false;
        if (rule[i].last >= rule[j].last)
            return true;
        tag = rule[i].last + 1; /* no overflow: rule[i].last < rule[j].last */
    }
}

/* Overlaps are how an exception goes before a wide rule; a rule that can
 * never apply is a mistake (most likely the order of the two). */
static void check_shadowed_rules(struct loader *ld)
{
    const struct rci_mode_rule *rule = ld->cfg->mode_rule;
    for (unsigned j = 1; j < ld->cfg->nmodes; j++) {
        if (!covered_by_earlier(rule, j))
            continue;
        char earlier[160] = "";
        size_t n = 0;
        for (unsigned i = 0; i < j && n < sizeof earlier; i++)
            if (rule[i].first <= rule[j].last && rule[j].first <= rule[i].last)
                n += (size_t)snprintf(earlier + n, sizeof earlier - n, "%s[mode.%u] %s",
                                      n ? ", " : "", i, rule[i].tags);
        key_error(ld, &rci_cfg_section_mode, j, "tags",
                  "%s never applies: every tag of it is decided by %s before it (the lowest N "
                  "whose tags hold a tag decides; put the narrower rule first)",
                  rule[j].tags, earlier);
    }
}

/* Each rule needs its tags and its mode; its range comes from tags (whose
 * text was checked when it was read). */
static void finish_mode_rules(struct loader *ld)
{
    const struct rci_cfg_section *s = &rci_cfg_section_mode;
    for (unsigned i = 0; i < ld->cfg->nmodes; i++) {
        struct rci_mode_rule *r = &ld->cfg->mode_rule[i];
        char why[256];
        if (!key_given(ld, s, i, "tags") || !r->tags[0])
            missing_key(ld, s, i, "tags", "0-3");
        else if (rci_cfg_parse_tag_range(r->tags, &r->first, &r->last, why, sizeof why) != 0)
            key_error(ld, s, i, "tags", "%s", why); /* unreachable: validated when read */
        if (!key_given(ld, s, i, "mode"))
            missing_key(ld, s, i, "mode", "buffered");
    }
    if (ld->nerrors == 0)
        check_shadowed_rules(ld);
}

static void check_fabric(struct loader *ld)
{
    const struct rci_cfg_section *s = &rci_cfg_section_fabric;
    const struct rci_fabric_params *f = &ld->cfg->fabric;
    char a[64], b[64];
    if (f->cq_size < f->tx_queue)
        key_error(ld, s, 0, "cq_size", "%u is less than tx_queue %u", f->cq_size, f->tx_queue);
    if (f->rx_buffer_size < f->buffered_page_size)
        key_error(ld, s, 0, "rx_buffer_size", "%s cannot hold a page of buffered_page_size %s",
                  value_text(ld, s, 0, "rx_buffer_size", a, sizeof a),
                  value_text(ld, s, 0, "buffered_page_size", b, sizeof b));
    if (f->heartbeat_ns >= f->peer_timeout_ns)
        key_error(ld, s, 0, "heartbeat", "%s is not less than peer_timeout %s: live peers would "
                  "be declared dead", value_text(ld, s, 0, "heartbeat", a, sizeof a),
                  value_text(ld, s, 0, "peer_timeout", b, sizeof b));
}

static bool uses_shm(const struct rci_card_params *c)
{
    return c->memory == RCI_MEM_SHM || c->memory == RCI_MEM_HUGETLBFS || c->type == RCI_CARD_SIM_PROCESS;
}

static void check_card_ring(struct loader *ld, unsigned i)
{
    const struct rci_cfg_section *s = &rci_cfg_section_card;
    const struct rci_card_params *c = &ld->cfg->card[i];
    char a[64], b[64];
    if (c->block_format != FELIX_FMT_C0CE && c->block_size != FELIX_MIN_BLOCK)
        key_error(ld, s, i, "block_format", "%s needs block_size = 1k (block_size is %s)",
                  value_text(ld, s, i, "block_format", a, sizeof a),
                  value_text(ld, s, i, "block_size", b, sizeof b));
    if (c->ring_size % c->block_size != 0)
        key_error(ld, s, i, "ring_size", "%s is not a multiple of block_size %s",
                  value_text(ld, s, i, "ring_size", a, sizeof a),
                  value_text(ld, s, i, "block_size", b, sizeof b));
    else if (c->ring_size / c->block_size < 4)
        key_error(ld, s, i, "ring_size", "%s holds fewer than 4 blocks of %s",
                  value_text(ld, s, i, "ring_size", a, sizeof a),
                  value_text(ld, s, i, "block_size", b, sizeof b));
    /* The card stops when the ring is full; a batch larger than half the ring
     * could keep the read pointer from ever moving. */
    if (c->rd_update_bytes > c->ring_size / 2)
        key_error(ld, s, i, "rd_update_bytes", "%s is more than half of ring_size %s",
                  value_text(ld, s, i, "rd_update_bytes", a, sizeof a),
                  value_text(ld, s, i, "ring_size", b, sizeof b));
    if ((c->memory == RCI_MEM_HUGETLB || c->memory == RCI_MEM_HUGETLBFS) &&
        c->ring_size % RCI_MEM_HUGE_PAGE != 0)
        key_error(ld, s, i, "ring_size", "%s is not a multiple of 2M, which memory = %s needs",
                  value_text(ld, s, i, "ring_size", a, sizeof a), rci_mem_backend_name(c->memory));
}

static void check_card_shm(struct loader *ld, unsigned i)
{
    const struct rci_cfg_section *s = &rci_cfg_section_card;
    const struct rci_card_params *c = &ld->cfg->card[i];
    /* the ringcast-sim process writes into the ring: it must be shared memory */
    if (c->type == RCI_CARD_SIM_PROCESS && c->memory != RCI_MEM_SHM)
        key_error(ld, s, i, "memory", "type = sim-process needs memory = shm");
    if (uses_shm(c) && !c->shm_name[0])
        key_error(ld, s, i, "shm_name", "empty, but memory = shm needs a name (or auto)");
    if (c->shm_name[0] && !rci_mem_shm_name_chars_ok(c->shm_name))
        key_error(ld, s, i, "shm_name", "'%s' may hold only A-Z a-z 0-9 . _ - and must not start "
                  "with '.'", c->shm_name);
}

/* PCI address DDDD:BB:DD.F in lower- or upper-case hex, as sysfs names it. */
static bool pci_address_ok(const char *a)
{
    static const char shape[] = "xxxx:xx:xx.x";
    if (strlen(a) != sizeof shape - 1)
        return false;
    for (unsigned i = 0; shape[i]; i++)
        if (shape[i] == 'x' ? !isxdigit((unsigned char)a[i]) : a[i] != shape[i])
            return false;
    return a[11] >= '0' && a[11] <= '7';   /* function 0..7 */
}

static void check_card_pcie(struct loader *ld, unsigned i)
{
    const struct rci_cfg_section *s = &rci_cfg_section_card;
    const struct rci_card_params *c = &ld->cfg->card[i];
    if (c->type != RCI_CARD_PCIE) {
        if (c->device[0] || c->bar_file[0])
            key_error(ld, s, i, c->device[0] ? "device" : "bar_file", "only type = pcie has one");
        return;
    }
    if (!c->device[0] == !c->bar_file[0])
        key_error(ld, s, i, "device", "type = pcie needs exactly one of device (a real card) and "
                  "bar_file (a file as BAR0)");
    if (c->device[0] && !pci_address_ok(c->device))
        key_error(ld, s, i, "device", "'%s' is not a PCI address DDDD:BB:DD.F (e.g. 0000:41:00.0)",
                  c->device);
    /* ringcast-sim --bar-file writes into the ring from its own process */
    if (c->bar_file[0] && c->memory != RCI_MEM_SHM && c->memory != RCI_MEM_HUGETLBFS)
        key_error(ld, s, i, "memory", "bar_file needs memory = shm or hugetlbfs (ringcast-sim maps the ring)");
    /* a real card writes into memory the IOMMU maps; a shm file is pointless there */
    if (c->device[0] && (c->memory == RCI_MEM_SHM || c->memory == RCI_MEM_HUGETLBFS))
        key_error(ld, s, i, "memory", "device needs memory = hugetlb (or anon): no other process maps the ring");
}

static void check_card_cpus(struct loader *ld, unsigned i)
{
    const struct rci_card_params *c = &ld->cfg->card[i];
    cpu_set_t set;
    char why[160];
    if (!c->cpus[0])
        return;
    if (rci_cpus_parse(c->cpus, &set, why, sizeof why) != 0) {
        key_error(ld, &rci_cfg_section_card, i, "cpus", "%s", why);
        return;
    }
    int missing = rci_cpus_first_missing(&set);
    if (missing >= 0)
        key_error(ld, &rci_cfg_section_card, i, "cpus", "CPU %d does not exist on this host (%ld "
                  "configured)", missing, sysconf(_SC_NPROCESSORS_CONF));
    else if (rci_cpus_parse_allowed(c->cpus, &set, why, sizeof why) != 0)   /* taskset, cgroup cpuset */
        key_error(ld, &rci_cfg_section_card, i, "cpus", "%s", why);
}

static void check_sim(struct loader *ld, unsigned i)
{
    const struct rci_cfg_section *s = &rci_cfg_section_sim;
    const struct rci_sim_params *sim = &ld->cfg->sim[i];
    char a[64], b[64];
    if (sim->chunk_size_min > sim->chunk_size_max)
        key_error(ld, s, i, "chunk_size_min", "%s is larger than chunk_size_max %s",
                  value_text(ld, s, i, "chunk_size_min", a, sizeof a),
                  value_text(ld, s, i, "chunk_size_max", b, sizeof b));
    if (sim->pause_every_ns && sim->pause_for_ns >= sim->pause_every_ns)
        key_error(ld, s, i, "pause_for", "%s is not shorter than pause_every %s",
                  value_text(ld, s, i, "pause_for", a, sizeof a),
                  value_text(ld, s, i, "pause_every", b, sizeof b));
    if (sim->replay_file[0] && access(sim->replay_file, R_OK) != 0)
        key_error(ld, s, i, "replay_file", "cannot read '%s': %s", sim->replay_file,
                  strerror(errno));
    if (ld->cfg->card[i].tag_base > UINT64_MAX - (sim->elinks - 1))
        key_error(ld, &rci_cfg_section_card, i, "tag_base",
                  "%" PRIu64 " + %u e-links passes the largest tag 2^64-1",
                  ld->cfg->card[i].tag_base, sim->elinks);
}

/* Cards must not share tags (a subscriber could not tell them apart) nor shm objects. */
static void check_cards_together(struct loader *ld, unsigned i, unsigned j)
{
    const struct rci_card_params *ci = &ld->cfg->card[i], *cj = &ld->cfg->card[j];
    uint64_t last_i = ci->tag_base + (ld->cfg->sim[i].elinks - 1);
    uint64_t last_j = cj->tag_base + (ld->cfg->sim[j].elinks - 1);
    if (ci->tag_base <= last_j && cj->tag_base <= last_i)
        key_error(ld, &rci_cfg_section_card, j, "tag_base",
                  "tags %" PRIu64 "..%" PRIu64 " overlap the tags %" PRIu64 "..%" PRIu64
                  " of [card.%u] (tag = tag_base + e-link, sim.N.elinks e-links)",
                  cj->tag_base, last_j, ci->tag_base, last_i, i);
    if (uses_shm(ci) && uses_shm(cj) && strcmp(ci->shm_name, cj->shm_name) == 0)
        key_error(ld, &rci_cfg_section_card, j, "shm_name", "'%s' is also the shm_name of [card.%u]",
                  cj->shm_name, i);
}

static void check_cross(struct loader *ld)
{
    check_fabric(ld);
    for (unsigned i = 0; i < ld->cfg->ncards; i++) {
        check_card_ring(ld, i);
        check_card_shm(ld, i);
        check_card_pcie(ld, i);
        check_card_cpus(ld, i);
        check_sim(ld, i);
    }
    if (ld->nerrors) return; /* tag ranges are only meaningful once each card is valid */
    for (unsigned j = 0; j < ld->cfg->ncards; j++)
        for (unsigned i = 0; i < j; i++) check_cards_together(ld, i, j);
}

/* ---- the entry point ---- */

int rci_config_load(struct rci_config *cfg, const char *file, const char *const *overrides,
                   unsigned noverrides, FILE *errlog, struct rci_config_error *err)
{
    if (err) memset(err, 0, sizeof *err);
    memset(cfg, 0, sizeof *cfg);
    struct loader *ld = calloc(1, sizeof *ld); /* ~20 KiB of bookkeeping: not on the stack */
    if (!ld) {
        if (errlog) fprintf(errlog, "configuration: out of memory\n");
        if (err) {
            snprintf(err->msg, sizeof err->msg, "configuration: out of memory");
            err->count = 1;
        }
        return -ENOMEM;
    }
    ld->cfg = cfg;
    ld->file = file;
    ld->overrides = overrides;
    ld->errlog = errlog;
    ld->err = err;
    snprintf(cfg->source, sizeof cfg->source, "%s", file ? file : "");
    if (fill_defaults(ld) == 0) {
        if (file) parse_file(ld, file);
        for (unsigned i = 0; overrides && i < noverrides; i++) apply_override(ld, (int)i);
        check_structure(ld);
        resolve_autos(ld);
        /* on top of bad values these would mostly report consequences, not causes
         * (a tags value refused, or a rule missing in the numbering, is also "missing") */
        if (ld->nerrors == 0) finish_mode_rules(ld);
        if (ld->nerrors == 0) check_cross(ld);
    }
    int rc = ld->nerrors ? -EINVAL : 0;
    if (err) err->count = ld->nerrors;
    if (rc) memset(cfg, 0, sizeof *cfg);
    free(ld->line);
    free(ld);
    return rc;
}
