/* SPDX-License-Identifier: BSD-3-Clause */
/* prom_text.c — the Prometheus text exposition writer (prom_text.h). */
#include "common/prom_text.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LABELS 16u

void rci_prom_init(struct rci_prom *p)
{
    memset(p, 0, sizeof *p);
}

void rci_prom_fini(struct rci_prom *p)
{
    for (size_t i = 0; i < p->nnames; i++)
        free(p->names[i]);
    free(p->names);
    free(p->text);
    free(p->help);
    free(p->keys);
    free(p->slots);
    memset(p, 0, sizeof *p);
}

static __attribute__((format(printf, 2, 3))) int fail(struct rci_prom *p, const char *fmt, ...)
{
    if (!p->error[0]) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->error, sizeof p->error, fmt, ap);
        va_end(ap);
    }
    return -EINVAL;
}

static int out_of_memory(struct rci_prom *p)
{
    fail(p, "out of memory");
    return -ENOMEM;
}

/* ---- growable text ---------------------------------------------------------- */

static int reserve(char **buf, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 4096;
    while (n < need)
        n *= 2;
    char *b = realloc(*buf, n);
    if (!b)
        return -ENOMEM;
    *buf = b;
    *cap = n;
    return 0;
}

/* A piece of text being built: appended to p->text, cut back on failure. */
struct piece {
    struct rci_prom *p;
    size_t start;
    bool oom;
};

static void put(struct piece *w, const char *s, size_t n)
{
    struct rci_prom *p = w->p;
    if (w->oom || reserve(&p->text, &p->cap, p->len + n + 1) != 0) {
        w->oom = true;
        return;
    }
    memcpy(p->text + p->len, s, n);
    p->len += n;
    p->text[p->len] = '\0';
}

static void puts_(struct piece *w, const char *s)
{
    put(w, s, strlen(s));
}

/* Label values escape \, " and newline; HELP text \ and newline. */
static void put_escaped(struct piece *w, const char *s, bool quote)
{
    for (const char *run = s;; s++) {
        const char *esc = NULL;
        if (*s == '\\')
            esc = "\\\\";
        else if (*s == '\n')
            esc = "\\n";
        else if (*s == '"' && quote)
            esc = "\\\"";
        else if (*s != '\0')
            continue;
        put(w, run, (size_t)(s - run));
        if (!esc)
            return;
        puts_(w, esc);
        run = s + 1;
    }
}

static int finish(struct piece *w)
{
    if (!w->oom)
        return 0;
    w->p->len = w->start;
    if (w->p->text)
        w->p->text[w->p->len] = '\0';
    return out_of_memory(w->p);
}

/* ---- names -------------------------------------------------------------------- */

static bool name_chars(const char *s, bool colon)
{
    if (!s || !*s)
        return false;
    for (const char *c = s; *c; c++) {
        bool alpha = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || *c == '_' || (colon && *c == ':');
        bool digit = *c >= '0' && *c <= '9';
        if (!alpha && !(digit && c != s))
            return false;
    }
    return true;
}

bool rci_prom_valid_metric_name(const char *name)
{
    return name_chars(name, true);
}

bool rci_prom_valid_label_name(const char *name)
{
    return name_chars(name, false) && strncmp(name, "__", 2) != 0;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static bool name_used(const struct rci_prom *p, const char *name)
{
    for (size_t i = 0; i < p->nnames; i++)
        if (strcmp(p->names[i], name) == 0)
            return true;
    return false;
}

static int remember_name(struct rci_prom *p, const char *name)
{
    if (p->nnames == p->names_cap) {
        size_t n = p->names_cap ? 2 * p->names_cap : 64;
        char **names = realloc(p->names, n * sizeof *names);
        if (!names)
            return out_of_memory(p);
        p->names = names;
        p->names_cap = n;
    }
    char *copy = strdup(name);
    if (!copy)
        return out_of_memory(p);
    p->names[p->nnames++] = copy;
    return 0;
}

static const char *type_name(enum rci_prom_type t)
{
    switch (t) {
    case RCI_PROM_COUNTER: return "counter";
    case RCI_PROM_GAUGE: return "gauge";
    case RCI_PROM_UNTYPED: return "untyped";
    }
    return NULL;
}

/* Forget the label sets of the previous family. */
static void reset_series(struct rci_prom *p)
{
    p->keys_len = 0;
    p->used_slots = 0;
    if (p->slots)
        memset(p->slots, 0, p->nslots * sizeof *p->slots);
}

int rci_prom_family(struct rci_prom *p, const char *name, enum rci_prom_type type, const char *help)
{
    if (!rci_prom_valid_metric_name(name) || strlen(name) >= sizeof p->family)
        return fail(p, "bad metric name '%s'", name ? name : "(null)");
    if (!type_name(type))
        return fail(p, "%s: bad metric type %d", name, (int)type);
    if (type == RCI_PROM_COUNTER && !ends_with(name, "_total"))
        return fail(p, "%s: a counter's name must end in _total", name);
    if (name_used(p, name))
        return fail(p, "%s: a second family of that name", name);
    char *h = strdup(help ? help : "");
    if (!h)
        return out_of_memory(p);
    int rc = remember_name(p, name);
    if (rc != 0) {
        free(h);
        return rc;
    }
    free(p->help);
    p->help = h;
    strcpy(p->family, name);
    p->type = type;
    p->header_written = false;
    reset_series(p);
    return 0;
}

/* ---- label sets --------------------------------------------------------------- */

static uint64_t fnv1a(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

/* The label set's canonical key: names in order, each name=value\0, so that
 * the order of the caller's array does not matter. */
static int label_key(struct rci_prom *p, const struct rci_prom_label *labels, unsigned n, size_t *off,
                     size_t *len)
{
    unsigned order[MAX_LABELS];
    for (unsigned i = 0; i < n; i++) {
        unsigned j = i;
        while (j > 0 && strcmp(labels[order[j - 1]].name, labels[i].name) > 0) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = i;
    }
    *off = p->keys_len;
    for (unsigned i = 0; i < n; i++) {
        const struct rci_prom_label *l = &labels[order[i]];
        size_t a = strlen(l->name), b = strlen(l->value);
        if (reserve(&p->keys, &p->keys_cap, p->keys_len + a + b + 2) != 0)
            return out_of_memory(p);
        memcpy(p->keys + p->keys_len, l->name, a);
        p->keys[p->keys_len + a] = '=';
        memcpy(p->keys + p->keys_len + a + 1, l->value, b);
        p->keys[p->keys_len + a + 1 + b] = '\0';
        p->keys_len += a + b + 2;
    }
    *len = p->keys_len - *off;
    return 0;
}

static int grow_slots(struct rci_prom *p)
{
    size_t n = p->nslots ? 2 * p->nslots : 256;
    struct rci_prom_slot *s = calloc(n, sizeof *s);
    if (!s)
        return out_of_memory(p);
    for (size_t i = 0; i < p->nslots; i++) {
        if (p->slots[i].len == 0 && p->slots[i].hash == 0)
            continue;
        size_t j = p->slots[i].hash & (n - 1);
        while (s[j].hash || s[j].len)
            j = (j + 1) & (n - 1);
        s[j] = p->slots[i];
    }
    free(p->slots);
    p->slots = s;
    p->nslots = n;
    return 0;
}

/* Adds the key at keys[off, off+len) to the family's set; -EEXIST if there. */
static int add_series(struct rci_prom *p, size_t off, size_t len)
{
    if ((p->used_slots + 1) * 2 > p->nslots && grow_slots(p) != 0)
        return -ENOMEM;
    /* A series without labels has an empty key, and keys may still be NULL
     * then: no pointer arithmetic on it (undefined even with offset 0). */
    const char *key = len ? p->keys + off : "";
    uint64_t h = fnv1a(key, len) | 1u; /* never 0: 0 marks a free slot */
    size_t j = h & (p->nslots - 1);
    for (; p->slots[j].hash; j = (j + 1) & (p->nslots - 1))
        if (p->slots[j].hash == h && p->slots[j].len == len &&
            (len == 0 || memcmp(p->keys + p->slots[j].off, key, len) == 0))
            return -EEXIST;
    p->slots[j] = (struct rci_prom_slot){.hash = h, .off = off, .len = len};
    p->used_slots++;
    return 0;
}

static int check_labels(struct rci_prom *p, const struct rci_prom_label *labels, unsigned n)
{
    if (n > MAX_LABELS)
        return fail(p, "%s: more than %u labels", p->family, MAX_LABELS);
    for (unsigned i = 0; i < n; i++) {
        if (!rci_prom_valid_label_name(labels[i].name))
            return fail(p, "%s: bad label name '%s'", p->family, labels[i].name ? labels[i].name : "(null)");
        if (!labels[i].value)
            return fail(p, "%s: label %s without a value", p->family, labels[i].name);
        for (unsigned j = 0; j < i; j++)
            if (strcmp(labels[i].name, labels[j].name) == 0)
                return fail(p, "%s: label %s given twice", p->family, labels[i].name);
    }
    return 0;
}

/* ---- samples ------------------------------------------------------------------ */

static void put_header(struct piece *w)
{
    struct rci_prom *p = w->p;
    puts_(w, "# HELP ");
    puts_(w, p->family);
    puts_(w, " ");
    put_escaped(w, p->help, false);
    puts_(w, "\n# TYPE ");
    puts_(w, p->family);
    puts_(w, " ");
    puts_(w, type_name(p->type));
    puts_(w, "\n");
}

static int sample(struct rci_prom *p, const struct rci_prom_label *labels, unsigned n, const char *value)
{
    if (!p->family[0])
        return fail(p, "a sample before any family");
    int rc = check_labels(p, labels, n);
    if (rc != 0)
        return rc;
    size_t keys_mark = p->keys_len, off, len;
    rc = label_key(p, labels, n, &off, &len);
    if (rc == 0)
        rc = add_series(p, off, len);
    if (rc != 0) {
        p->keys_len = keys_mark;
        return rc == -EEXIST ? fail(p, "%s: a second series with the same labels", p->family) : rc;
    }
    struct piece w = {.p = p, .start = p->len};
    if (!p->header_written)
        put_header(&w);
    puts_(&w, p->family);
    for (unsigned i = 0; i < n; i++) {
        puts_(&w, i ? "," : "{");
        puts_(&w, labels[i].name);
        puts_(&w, "=\"");
        put_escaped(&w, labels[i].value, true);
        puts_(&w, "\"");
    }
    if (n)
        puts_(&w, "}");
    puts_(&w, " ");
    puts_(&w, value);
    puts_(&w, "\n");
    rc = finish(&w);
    if (rc != 0)
        return rc; /* the series stays in the set: the caller gives up the document anyway */
    p->header_written = true;
    return 0;
}

int rci_prom_counter(struct rci_prom *p, const struct rci_prom_label *labels, unsigned nlabels,
                     uint64_t value)
{
    if (p->family[0] && p->type != RCI_PROM_COUNTER && p->type != RCI_PROM_UNTYPED)
        return fail(p, "%s: an integer counter sample in a %s family", p->family, type_name(p->type));
    char v[24];
    snprintf(v, sizeof v, "%" PRIu64, value);
    return sample(p, labels, nlabels, v);
}

static int float_sample(struct rci_prom *p, const struct rci_prom_label *labels, unsigned nlabels,
                        double value);

int rci_prom_counter_f(struct rci_prom *p, const struct rci_prom_label *labels, unsigned nlabels,
                       double value)
{
    if (p->family[0] && p->type != RCI_PROM_COUNTER && p->type != RCI_PROM_UNTYPED)
        return fail(p, "%s: a counter sample in a %s family", p->family, type_name(p->type));
    if (!(value >= 0) || isinf(value))
        return fail(p, "%s: a counter must be finite and >= 0", p->family[0] ? p->family : "(no family)");
    return float_sample(p, labels, nlabels, value);
}

int rci_prom_gauge(struct rci_prom *p, const struct rci_prom_label *labels, unsigned nlabels, double value)
{
    if (p->family[0] && p->type == RCI_PROM_COUNTER)
        return fail(p, "%s: a gauge sample in a counter family", p->family);
    return float_sample(p, labels, nlabels, value);
}

static int float_sample(struct rci_prom *p, const struct rci_prom_label *labels, unsigned nlabels,
                        double value)
{
    char v[40];
    if (isnan(value))
        strcpy(v, "NaN");
    else if (isinf(value))
        strcpy(v, value > 0 ? "+Inf" : "-Inf");
    else /* the shortest of %.15g..%.17g that reads back as the same double */
        for (int prec = 15; prec <= 17; prec++) {
            snprintf(v, sizeof v, "%.*g", prec, value);
            if (strtod(v, NULL) == value)
                break;
        }
    return sample(p, labels, nlabels, v);
}

const char *rci_prom_text(const struct rci_prom *p, size_t *len)
{
    if (len)
        *len = p->len;
    return p->text ? p->text : "";
}

const char *rci_prom_error(const struct rci_prom *p)
{
    return p->error[0] ? p->error : NULL;
}
