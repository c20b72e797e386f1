/* SPDX-License-Identifier: BSD-3-Clause */
/* read_records — read a `ringcast-sub --out FILE` file with the header-only
 * parser of ringcast/record.h and summarise it.
 *
 *   read_records FILE
 *
 * Prints "N records, B payload bytes, T tags, F flagged" and exits 0 when
 * the file is a whole number of records; exits 1 (saying where) when it ends
 * inside a record or cannot be read. */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ringcast/record.h>

#define MAX_TAGS 4096

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s FILE\n", argv[0]);
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    /* A window over the file: records are parsed from buf[0..have). */
    size_t cap = 1 << 20, have = 0;
    uint8_t *buf = malloc(cap);
    if (!buf) {
        fclose(f);
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    uint64_t records = 0, bytes = 0, flagged = 0, offset = 0, tags[MAX_TAGS];
    unsigned ntags = 0;
    int status = 0;
    for (;;) {
        size_t got = fread(buf + have, 1, cap - have, f);
        have += got;
        size_t used = 0, n;
        struct rc_record r;
        while ((n = rc_record_parse(buf + used, have - used, &r)) > 0) {
            records++;
            bytes += r.len;
            flagged += (r.flags & RC_CHUNK_FLAGS_ALL) != 0;
            unsigned t = 0;
            while (t < ntags && tags[t] != r.tag)
                t++;
            if (t == ntags && ntags < MAX_TAGS)
                tags[ntags++] = r.tag;
            used += n;
        }
        offset += used;
        memmove(buf, buf + used, have - used);
        have -= used;
        if (got == 0)
            break;
        if (have == cap) {   /* one record larger than the window: grow it */
            uint8_t *bigger = realloc(buf, cap * 2);
            if (!bigger) {
                status = 1;
                break;
            }
            buf = bigger;
            cap *= 2;
        }
    }
    if (ferror(f)) {
        perror(argv[1]);
        status = 1;
    } else if (have) {
        fprintf(stderr, "%s: %zu bytes at offset %" PRIu64 " are not a whole record\n", argv[1], have,
                offset);
        status = 1;
    }
    fclose(f);
    free(buf);
    printf("%" PRIu64 " records, %" PRIu64 " payload bytes, %u tags, %" PRIu64 " flagged\n", records,
           bytes, ntags, flagged);
    return status;
}
