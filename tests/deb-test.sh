#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# make deb-test: the packages `make deb` built (DIR, default build/deb),
# unpacked with dpkg -x into a temporary root: each package's file list
# holds what it must (and ringcast's configuration is a conffile), the
# unit names the packaged daemon, and the unpacked daemon runs with the
# unpacked configuration (its control socket moved into the temporary
# directory: /run/ringcast is systemd's to create): --check-config passes,
# ringcast-ctl status answers, a ringcast-sub receives verified chunks,
# SIGTERM ends it with exit 0. Not in `make test`: building the packages
# takes minutes.
set -u
DIR=${1:-build/deb}
ROOT=$(mktemp -d "${TMPDIR:-/tmp}/ringcast-deb.XXXXXX")
checks=0
daemon=
cleanup() { [ -n "$daemon" ] && kill "$daemon" 2>/dev/null; rm -rf "$ROOT"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { checks=$((checks + 1)); echo "ok: $*"; }

VERSION=$(cat VERSION)
ARCH=$(dpkg --print-architecture)
MA=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
for p in ringcast libringcast0 libringcast-client0 libringcast-dev; do
    deb="$DIR/${p}_${VERSION}_$ARCH.deb"
    [ -f "$deb" ] || fail "no $deb (run make deb)"
    dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|' > "$ROOT/$p.list"
    dpkg -x "$deb" "$ROOT/root" || fail "dpkg -x $deb"
done
ok "4 packages unpacked into $ROOT/root"

# has PACKAGE PATH...: each path is in the package's file list.
has() {
    p=$1; shift
    for f in "$@"; do grep -qx "$f" "$ROOT/$p.list" || fail "$p does not hold $f"; done
    ok "$p holds $*"
}
has ringcast /usr/bin/ringcast-readout /usr/bin/ringcast-ctl /usr/bin/ringcast-sub /usr/bin/ringcast-dump \
    /usr/bin/ringcast-sim /usr/bin/ringcast-memlock-need /lib/systemd/system/ringcast-readout.service \
    /etc/ringcast/ringcast.ini /usr/share/ringcast/ringcast.ini /usr/share/ringcast/ringcast-server.ini
has libringcast0 "/usr/lib/$MA/libringcast.so.$VERSION" "/usr/lib/$MA/libringcast.so.0"
has libringcast-client0 "/usr/lib/$MA/libringcast-client.so.$VERSION" "/usr/lib/$MA/libringcast-client.so.0"
has libringcast-dev /usr/include/ringcast/ringcast.h /usr/include/ringcast/record.h \
    "/usr/lib/$MA/libringcast.so" "/usr/lib/$MA/libringcast-client.so" "/usr/lib/$MA/libringcast.a" \
    "/usr/lib/$MA/pkgconfig/ringcast.pc" "/usr/lib/$MA/pkgconfig/ringcast-client.pc"
grep -q '^/usr/lib\|^/usr/include' "$ROOT/ringcast.list" && fail "ringcast holds library files"
grep -q '/usr/bin' "$ROOT/libringcast-dev.list" && fail "libringcast-dev holds programs"
ok "no file in the wrong package"
dpkg-deb -e "$DIR/ringcast_${VERSION}_$ARCH.deb" "$ROOT/ctrl"
grep -qx /etc/ringcast/ringcast.ini "$ROOT/ctrl/conffiles" || fail "/etc/ringcast/ringcast.ini is not a conffile"
ok "/etc/ringcast/ringcast.ini is a conffile"
grep -q '^ExecStart=/usr/bin/ringcast-readout -c /etc/ringcast/ringcast.ini' \
    "$ROOT/root/lib/systemd/system/ringcast-readout.service" || fail "the unit does not run /usr/bin/ringcast-readout"
grep -q '/usr/local' "$ROOT/root/lib/systemd/system/ringcast-readout.service" && fail "the unit names /usr/local"
grep -q '^ExecReload=' "$ROOT/root/lib/systemd/system/ringcast-readout.service" || fail "no ExecReload"
ok "the unit runs /usr/bin/ringcast-readout, reloads with SIGHUP, names no /usr/local"
grep -q "prefix=/usr$" "$ROOT/root/usr/lib/$MA/pkgconfig/ringcast-client.pc" || fail "ringcast-client.pc prefix"
ok "pkg-config files say prefix=/usr"

dpkg-deb -f "$DIR/ringcast_${VERSION}_$ARCH.deb" Depends | grep -q 'libringcast-client0 (>= ' \
    || fail "ringcast does not depend on libringcast-client0 (ringcast-sub links it)"
ok "ringcast depends on libringcast-client0"

# The unpacked daemon with the unpacked configuration; programs linked to the
# shared libraries (ringcast-sub, ringcast-ls) find them in the unpacked root.
export LD_LIBRARY_PATH="$ROOT/root/usr/lib/$MA"
B="$ROOT/root/usr/bin"
CFG="$ROOT/root/etc/ringcast/ringcast.ini"
PORT=$((20000 + ($$ + 17000) % 20000))
SOCK="$ROOT/ctl.sock"
"$B/ringcast-readout" --check-config "$CFG" >/dev/null || fail "--check-config of the packaged configuration"
ok "--check-config $CFG"
need=$("$B/ringcast-memlock-need" "$CFG" | sed -n 's/^rings //p')
[ "$need" = 67108864 ] || fail "ringcast-memlock-need: rings '$need'"
ok "ringcast-memlock-need (beside the packaged daemon, no RINGCAST_READOUT): rings $need"
"$B/ringcast-readout" -c "$CFG" -o control.socket="$SOCK" -o fabric.port="$PORT" \
    --stats-json "$ROOT/d.json" 2>"$ROOT/d.log" &
daemon=$!
i=0
until [ -S "$SOCK" ]; do
    i=$((i + 1)); [ $i -lt 600 ] || { cat "$ROOT/d.log"; fail "the daemon's control socket never appeared"; }
    kill -0 "$daemon" 2>/dev/null || { cat "$ROOT/d.log"; fail "the daemon ended"; }
    sleep 0.05
done
"$B/ringcast-ctl" --socket "$SOCK" --compact status | grep -q '"state":"running"' || fail "ringcast-ctl status"
ok "ringcast-ctl status: running"
timeout 60 "$B/ringcast-sub" --connect "127.0.0.1:$PORT" --tags all --verify --count 20000 --json \
    >"$ROOT/sub.json" 2>"$ROOT/sub.log" || { cat "$ROOT/sub.log"; fail "ringcast-sub"; }
grep -q '"verified":true' "$ROOT/sub.json" || fail "not verified: $(cat "$ROOT/sub.json")"
ok "ringcast-sub (packaged) received 20000 verified chunks from the packaged daemon"
kill -TERM "$daemon"; wait "$daemon"; st=$?; daemon=
[ "$st" -eq 0 ] || { tail "$ROOT/d.log"; fail "daemon exit status $st"; }
ok "SIGTERM: exit 0"
echo "deb-test: $checks checks passed"
