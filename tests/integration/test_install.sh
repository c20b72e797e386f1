#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The library as an outside user meets it: `make install` into a temporary
# DESTDIR, then only the installed files. Checks the installed layout (headers,
# versioned libraries and their symlinks, pkg-config files with the prefix
# and libdir of the install, API.md, LICENSE), the SONAMEs, that the client
# library needs libfabric and liburcu-cds and nothing else of ours, that each library exports
# exactly the RC_API functions of the installed headers (nm -D), builds
# examples/ and README.md's library example with pkg-config (from a copy
# outside the source tree), and runs the examples against the real daemon and
# against each other.
. "$(dirname "$0")/lib.sh"

# A sanitizer build's shared libraries need the sanitizer runtime in every
# program that loads them, which an outside user's build does not link; the
# plain build (make test runs it first) covers installing.
if under_sanitizer; then
    echo "skipped under a sanitizer build (see the comment above)"
    exit 0
fi

PORT=$(port_base 0)
PREFIX=/opt/ringcast-it
LIBDIR=$PREFIX/lib64
DEST="$WORK/dest"
make -s --no-print-directory BUILD="$BUILD" PREFIX=$PREFIX LIBDIR=$LIBDIR DESTDIR="$DEST" install \
    >"$WORK/install.log" 2>&1 || { cat "$WORK/install.log"; fail "make install"; }
ROOT="$DEST$PREFIX"
LIB="$DEST$LIBDIR"
version=$(cat VERSION)
major=${version%%.*}

# ---- what was installed -------------------------------------------------------
for h in include/ringcast/*.h; do
    cmp -s "$h" "$ROOT/include/ringcast/$(basename "$h")" || fail "header $h not installed as it is"
done
ok "headers installed: $(ls "$ROOT/include/ringcast" | tr '\n' ' ')"
for f in share/doc/ringcast/API.md share/doc/ringcast/LICENSE; do
    [ -s "$ROOT/$f" ] || fail "$f not installed"
done
ok "API.md and LICENSE installed"
for l in libringcast libringcast-client; do
    [ -f "$LIB/$l.so.$version" ] || fail "$LIB/$l.so.$version missing"
    expect_eq "$l.so.$major ->" "$(readlink "$LIB/$l.so.$major")" "$l.so.$version"
    expect_eq "$l.so ->" "$(readlink "$LIB/$l.so")" "$l.so.$version"
    expect_eq "$l SONAME" "$(readelf -d "$LIB/$l.so.$version" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')" \
        "$l.so.$major"
done
[ -f "$LIB/libringcast.a" ] || fail "libringcast.a not installed"

# pkg-config files name the install's prefix and libdir (not DESTDIR); with
# PKG_CONFIG_SYSROOT_DIR the flags point into DESTDIR.
export PKG_CONFIG_PATH="$LIB/pkgconfig"
export PKG_CONFIG_SYSROOT_DIR="$DEST"
for pc in ringcast ringcast-client; do
    [ -f "$LIB/pkgconfig/$pc.pc" ] || fail "$pc.pc not installed in $LIBDIR/pkgconfig"
    expect_eq "$pc.pc prefix" "$(sed -n 's/^prefix=//p' "$LIB/pkgconfig/$pc.pc")" "$PREFIX"
    expect_eq "$pc.pc libdir" "$(sed -n 's/^libdir=//p' "$LIB/pkgconfig/$pc.pc")" "$LIBDIR"
    expect_eq "$pc modversion" "$(pkg-config --modversion $pc)" "$version"
done
expect_eq "ringcast-client --libs" "$(echo $(pkg-config --libs ringcast-client))" "-L$LIB -lringcast-client"
expect_eq "ringcast-client --cflags" "$(echo $(pkg-config --cflags ringcast-client))" "-I$ROOT/include"

# ---- the client library needs libfabric, liburcu-cds (the lock-free stacks of
# net/mem_pool.c and net/mr_cache.c), libcurl and jansson (discovery), and no
# DPDK, RCU flavour (the daemon's subscription table uses those) or inih
needed=$(readelf -d "$LIB/libringcast-client.so.$version" | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p' | tr '\n' ' ')
echo "libringcast-client NEEDED: $needed"
case "$needed" in *libfabric*) ;; *) fail "libringcast-client does not need libfabric: $needed" ;; esac
for bad in rte_ dpdk urcu-memb urcu-qsbr urcu-mb urcu-bp urcu.so inih; do
    case "$needed" in *$bad*) fail "libringcast-client needs $bad: $needed" ;; esac
done
ok "libringcast-client needs no DPDK, RCU flavour or inih"

# ---- exports: exactly the RC_API functions of the installed headers -----------
# api_functions HEADER...: every function the headers declare (a line at
# column 0 with "name(" that is not a macro, type, comment or static inline);
# each must be declared RC_API, else it would be hidden.
api_functions() {
    decls=$(grep -h '^[A-Za-z_].*[a-z0-9_](' "$@" | grep -v '^\(static\|typedef\|struct\|enum\|extern\)')
    echo "$decls" | grep -v '^RC_API ' | grep . >&2 && fail "public functions declared without RC_API (above)"
    echo "$decls" | sed -n 's/^[^(]*[ *]\([a-z_][a-z0-9_]*\)(.*/\1/p' | sort -u
}
exports() { nm -D --defined-only "$1" | awk '{print $NF}' | sort -u; }
inc="$ROOT/include/ringcast"
api_functions "$inc/version.h" "$inc/sub.h" "$inc/view.h" "$inc/discover.h" "$inc/pub.h" "$inc/pattern.h" > "$WORK/client.api"
api_functions "$inc"/*.h > "$WORK/full.api"
# rc_mem_forget (pub.h: before the program frees memory sent through the
# registration cache) is part of both.
grep -qx rc_mem_forget "$WORK/client.api" || fail "rc_mem_forget is not an RC_API function of pub.h"
[ "$(wc -l < "$WORK/client.api")" -gt 20 ] || fail "too few RC_API functions found in the headers"
exports "$LIB/libringcast-client.so.$version" > "$WORK/client.nm"
exports "$LIB/libringcast.so.$version" > "$WORK/full.nm"
diff -u "$WORK/client.api" "$WORK/client.nm" || fail "libringcast-client exports differ from the headers (- header, + nm)"
ok "libringcast-client exports the $(wc -l < "$WORK/client.api") public functions, nothing else"
diff -u "$WORK/full.api" "$WORK/full.nm" || fail "libringcast exports differ from the headers (- header, + nm)"
ok "libringcast exports the $(wc -l < "$WORK/full.api") public functions, nothing else"

# ---- the public headers include only each other and system headers ------------
bad_inc=$(grep -H '^#include "' "$inc"/*.h | grep -v '#include "ringcast/[a-z_]*\.h"' || true)
[ -z "$bad_inc" ] || fail "public headers include something else than ringcast/*.h: $bad_inc"
for h in $(grep -ho '^#include "ringcast/[a-z_]*\.h"' "$inc"/*.h | sed 's/.*"ringcast\/\(.*\)"/\1/' | sort -u); do
    [ -f "$inc/$h" ] || fail "a public header includes ringcast/$h, which is not installed"
done
ok "public headers include only ringcast/*.h (all installed) and system headers"
# ... and compile as C++ (extern "C", no C-only constructs), every one alone.
for h in "$inc"/*.h; do
    printf '#include <ringcast/%s>\nint main() { return 0; }\n' "$(basename "$h")" > "$WORK/hdr.cc"
    c++ -std=c++11 -Wall -Wextra -Werror $(pkg-config --cflags ringcast) -c "$WORK/hdr.cc" -o "$WORK/hdr.o" \
        || fail "ringcast/$(basename "$h") does not compile on its own as C++"
done
ok "each public header compiles on its own as C++"

# ---- build from the installed files only -------------------------------------
cp -r examples "$WORK/examples"
make -s -C "$WORK/examples" >"$WORK/examples.log" 2>&1 || { cat "$WORK/examples.log"; fail "building examples/"; }
ok "examples/ built with pkg-config ringcast-client (and ringcast for embed_readout)"
sed -n '/^## Use it as a library/,/^## /p' README.md | sed -n '/^```c$/,/^```$/p' | sed '1d;$d' > "$WORK/readme.c"
[ -s "$WORK/readme.c" ] || fail "no C example under '## Use it as a library' in README.md"
# shellcheck disable=SC2046
# As README.md prints it (ringcast-client), and against the full library.
(cd "$WORK" && cc readme.c -o readme $(pkg-config --cflags --libs ringcast-client) \
    && cc -std=c11 -Wall -Wextra -Werror readme.c -o readme-full $(pkg-config --cflags --libs ringcast)) \
    || fail "README.md's example does not build against the installed ringcast"
ok "README.md's example built with pkg-config ringcast-client and ringcast"
# The static library: `pkg-config --static` names what it needs (libfabric, DPDK, liburcu, inih).
case " $(pkg-config --static --libs ringcast-client) " in *" -lfabric "*) ;;
    *) fail "pkg-config --static ringcast-client does not name -lfabric" ;; esac
static_libs=$(pkg-config --static --libs ringcast | sed 's/-lringcast\( \|$\)/-l:libringcast.a\1/')
# shellcheck disable=SC2046,SC2086
(cd "$WORK" && cc readme.c -o readme-static $(pkg-config --cflags ringcast) $static_libs) \
    || fail "README.md's example does not link against libringcast.a with pkg-config --static ringcast"
ldd "$WORK/readme-static" | grep -q 'libringcast' && { ldd "$WORK/readme-static"; fail "readme-static loads a shared libringcast"; }
ok "README.md's example linked with libringcast.a and pkg-config --static ringcast alone"

export LD_LIBRARY_PATH="$LIB"
for prog in "$WORK/examples/count_tags/count_tags" "$WORK/readme" "$WORK/readme-full" "$WORK/examples/embed_readout/embed"; do
    ldd "$prog" | grep -q "$LIB/libringcast" || { ldd "$prog"; fail "$prog does not load the installed library"; }
done
ok "examples load the installed libraries"

# ---- run: count_tags against the daemon ---------------------------------------
# The installed ringcast-sub records the same run with --out, which
# read_records then reads with ringcast/record.h's parser. The daemon
# lingers until both left: a completed send is not a chunk read (README,
# "Delivery acknowledgement"), so without it a subscriber still reading the
# end of the run loses it when the daemon exits.
N=40000
start_daemon d -o readout.wait_subscribers=2 -o readout.linger=30s -o sim.0.run_chunks=$N
timeout --foreground -k 10 90 "$ROOT/bin/ringcast-sub" --connect "127.0.0.1:$PORT" --tags all --count $N --out "$WORK/run.rec" \
    --json >"$WORK/rsub.json" 2>"$WORK/rsub.log" &
rsub=$!
timeout --foreground -k 10 90 "$WORK/examples/count_tags/count_tags" 127.0.0.1 "$PORT" $N >"$WORK/count.out" 2>"$WORK/count.err" \
    || { cat "$WORK/count.out" "$WORK/count.err" "$WORK/d.log"; fail "count_tags exit status"; }
wait "$rsub" || { cat "$WORK/rsub.log"; fail "installed ringcast-sub --out: exit status"; }
wait_daemon d
cat "$WORK/count.out"
expect_eq "chunks produced" "$(json_num chunks_produced "$WORK/d.json")" $N
expect_eq "count_tags total" "$(sed -n 's/^total: \([0-9]*\) chunks.*/\1/p' "$WORK/count.out")" $N
expect_eq "count_tags per-tag sum" "$(sed -n 's/^tag [^:]*: \([0-9]*\) chunks.*/\1/p' "$WORK/count.out" \
    | awk '{s += $1} END {print s}')" $N
expect_eq "count_tags tags (the simulator's e-links)" "$(grep -c '^tag ' "$WORK/count.out")" 8
expect_eq "rc_version()" "$(sed -n 's/.*(ringcast \(.*\))$/\1/p' "$WORK/count.out")" "$version"
"$WORK/examples/read_records/read_records" "$WORK/run.rec" >"$WORK/records.out" 2>&1 \
    || { cat "$WORK/records.out"; fail "read_records exit status"; }
expect_eq "read_records on ringcast-sub --out" "$(cat "$WORK/records.out")" \
    "$N records, $(sed -n 's/^tag [^:]*: [0-9]* chunks, \([0-9]*\) bytes.*/\1/p' "$WORK/count.out" \
    | awk '{s += $1} END {print s}') payload bytes, 8 tags, 0 flagged"

# ---- run: the zero-copy publisher and its subscriber --------------------------
PORT=$((PORT + 1))
Z=5000
timeout --foreground -k 10 90 "$WORK/examples/zero_copy/publish" "$PORT" $Z 3000 >"$WORK/pub.out" 2>"$WORK/pub.err" &
pub=$!
timeout --foreground -k 10 90 "$WORK/examples/zero_copy/receive" 127.0.0.1 "$PORT" $Z >"$WORK/recv.out" 2>"$WORK/recv.err" \
    || { cat "$WORK/recv.out" "$WORK/recv.err"; kill $pub; fail "receive exit status"; }
wait $pub || { cat "$WORK/pub.out" "$WORK/pub.err"; fail "publish exit status"; }
cat "$WORK/pub.out" "$WORK/recv.out"
expect_eq "receive" "$(cat "$WORK/recv.out")" "received $Z chunks, 0 bad"
expect_eq "publish sends completed" "$(sed -n 's/.*: \([0-9]*\) sends completed.*/\1/p' "$WORK/pub.out")" $Z
expect_eq "publish sends failed" "$(sed -n 's/.* \([0-9]*\) failed.*/\1/p' "$WORK/pub.out")" 0

# ---- run: the readout embedded, two simulated cards, the installed example INI --
"$WORK/examples/embed_readout/embed" "$ROOT/share/ringcast/ringcast.ini" sim.0.run_chunks=30000 \
    card.1.type=sim sim.1.run_chunks=20000 >"$WORK/embed.out" 2>"$WORK/embed.err" \
    || { cat "$WORK/embed.out" "$WORK/embed.err"; fail "embed exit status"; }
cat "$WORK/embed.out"
expect_eq "embed card 0 received" "$(sed -n 's/^card 0: received \([0-9]*\) chunks.*/\1/p' "$WORK/embed.out")" 30000
expect_eq "embed card 1 received" "$(sed -n 's/^card 1: received \([0-9]*\) chunks.*/\1/p' "$WORK/embed.out")" 20000
expect_eq "embed card 0 in flight" "$(sed -n 's/^card 0: .*in flight \([0-9]*\),.*/\1/p' "$WORK/embed.out")" 0
"$WORK/examples/embed_readout/embed" "$WORK/no-such.ini" >"$WORK/embed-bad.out" 2>&1 \
    && fail "embed with a missing configuration file exited 0"
grep -q 'no-such.ini' "$WORK/embed-bad.out" || { cat "$WORK/embed-bad.out"; fail "rc_daq_open error does not name the file"; }
ok "rc_daq_open refuses a missing file, naming it"

echo "test_install: $checks checks passed"
