#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The control socket and reload without restart, at full rate (simulated card
# unlimited, policy block) with two verifying subscribers, A (tags 0-3) and B
# (all tags).
# - ringcast-ctl status / subscribers answer JSON; unknown and malformed
#   requests get {"ok":false,...} and the daemon goes on;
# - 20 reloads (SIGHUP and `ringcast-ctl reload`, alternating), switching the
#   send mode zerocopy <-> buffered, the stats interval and the log level;
#   a changed ring_size is kept and named; a broken file is refused with its
#   file:line and changes nothing; B loses nothing across all of them;
# - card 0 stop / start: the card stops producing and produces again, B loses
#   nothing;
# - kick A: A is closed (its keys come back) and reconnects; last, a reload
#   whose allow list excludes 127.0.0.1 closes A and B (subscribers_cut_by_allow)
#   and refuses their reconnections; before that, max_subscribers lowered
#   live refuses a third subscriber, raised above the start value is kept with
#   its reason, and [metrics] listen / [discovery] url start and stop live;
# - SIGTERM: exit 0, no key outstanding. About 40 s.
. "$(dirname "$0")/lib.sh"
# A failure must not leave the daemon and the subscribers running.
fail() {
    kill "$daemon" "$sub_a" "$sub_b" 2>/dev/null
    [ -f "$WORK/d.log" ] && tail -n 20 "$WORK/d.log" >&2
    echo "FAIL: $*" >&2
    exit 1
}

PORT=$(port_base 11000)
SOCK="$WORK/ctl.sock"
CFG="$WORK/cfg.ini"
TAGS=all
ctl() { "$BIN/ringcast-ctl" --socket "$SOCK" --compact "$@"; }

# Day-one items (issue 16): ringcast-sub -h and --version; --check-config
# prints tags in hex; the hint for a sim-process card names the -o overrides.
"$BIN/ringcast-sub" -h | grep -q "^usage: ringcast-sub" || fail "ringcast-sub -h"
"$BIN/ringcast-sub" --version | grep -qx "ringcast-sub $(cat VERSION)" || fail "ringcast-sub --version"
ok "ringcast-sub -h and --version"
# Sizes take the INI files' suffixes; anything else is a usage error (2).
"$BIN/ringcast-sub" --connect 127.0.0.1:1 --stream 0 --stream-ring-size 64M --rx-buffer-size 1M --duration 0.1 \
    --json >/dev/null 2>"$WORK/sizes.err"; st=$?
[ "$st" -ne 2 ] || { cat "$WORK/sizes.err"; fail "ringcast-sub refused 64M / 1M sizes"; }
for bad in 64m 64MB 1.5M -64k 0x; do
    "$BIN/ringcast-sub" --connect 127.0.0.1:1 --stream 0 --stream-ring-size "$bad" 2>"$WORK/sizes.err"; st=$?
    [ "$st" -eq 2 ] && grep -q "stream-ring-size '$bad'" "$WORK/sizes.err" || fail "--stream-ring-size $bad: status $st"
done
ok "ringcast-sub sizes: 64M and 1M taken, 64m 64MB 1.5M -64k 0x refused (status 2)"
"$BIN/ringcast-readout" --check-config deploy/ringcast.ini -o card.0.tag_base=1048576 | grep -qx "tag_base = 0x100000" \
    || fail "--check-config does not print tag_base = 0x100000"
ok "--check-config prints tag_base = 0x100000"
"$BIN/ringcast-readout" -c deploy/ringcast.ini -o card.0.type=sim-process -o card.0.memory=shm \
    -o card.0.shm_name="rcctl$$" -o fabric.port="$PORT" -o readout.stats_interval=0 2>"$WORK/hint.log" &
daemon=$!
i=0; until grep -q "waiting for \`ringcast-sim" "$WORK/hint.log"; do
    i=$((i + 1)); [ $i -lt 600 ] || { cat "$WORK/hint.log"; fail "no sim-process hint"; }; sleep 0.05; done
grep -q "ringcast-sim -c deploy/ringcast.ini --card 0 -o 'card.0.type=sim-process' -o 'card.0.memory=shm' -o 'card.0.shm_name=rcctl$$' -o 'fabric.port=$PORT' -o 'readout.stats_interval=0'\`" \
    "$WORK/hint.log" || { cat "$WORK/hint.log"; fail "the sim-process hint leaves out the -o overrides"; }
kill -TERM "$daemon"; wait_bounded "$daemon" 300 "sim-process hint: the daemon"
ok "the sim-process hint names the daemon's -o overrides"
PORT=$((PORT + 1))

# The configuration file the reloads edit: the example with an allow list.
sed -e 's|^allow =$|allow = 127.0.0.0/8|' deploy/ringcast.ini > "$CFG"
grep -q '^allow = 127.0.0.0/8$' "$CFG" || fail "cannot edit the example configuration"
set_key() { sed -i "s|^$1 = .*|$1 = $2|" "$CFG"; }   # set_key KEY VALUE (first match)

"$BIN/ringcast-readout" -c "$CFG" -o control.socket="$SOCK" -o fabric.port="$PORT" \
    -o readout.wait_subscribers=2 --stats-json "$WORK/d.json" 2>"$WORK/d.log" &
daemon=$!
i=0
until [ -S "$SOCK" ]; do i=$((i + 1)); [ $i -lt 600 ] || { cat "$WORK/d.log"; fail "no control socket"; }; sleep 0.05; done
expect_eq "control socket mode" "$(stat -c %a "$SOCK")" 660

timeout --foreground -k 10 120 "$BIN/ringcast-sub" --connect "127.0.0.1:$PORT" --tags all --verify --json >"$WORK/b.json" 2>"$WORK/b.log" &
sub_b=$!
timeout --foreground -k 10 120 "$BIN/ringcast-sub" --connect "127.0.0.1:$PORT" --tags 0-3 --verify --json >"$WORK/a.json" 2>"$WORK/a.log" &
sub_a=$!
until grep -q "subscribed: starting the cards" "$WORK/d.log"; do
    i=$((i + 1)); [ $i -lt 1200 ] || { cat "$WORK/d.log"; fail "subscribers never subscribed"; }; sleep 0.05
done

# ---- status, subscribers, bad requests
out=$(ctl status) || fail "status: exit $?: $out"
echo "$out" | grep -q '"state":"running"' || fail "status: not running: $out"
echo "$out" | grep -q '"ok":true' || fail "status: $out"
ok "status answers JSON, state running"
out=$(ctl subscribers) || fail "subscribers: $out"
n=$(echo "$out" | grep -o '"address":"' | wc -l)
expect_eq "subscribers listed" "$n" 2
echo "$out" | grep -q '"address":"127.0.0.1:[0-9]*"' || fail "subscribers: no address: $out"
echo "$out" | grep -q '"tags":\["0x0-0x3"\]' || fail "subscribers: A's tags 0-3 not listed: $out"
echo "$out" | grep -q '"tags":\["0x0-0xffffffffffffffff"\]' || fail "subscribers: B's tags (all) not listed: $out"
ok "subscribers lists addresses and tags (A: 0x0-0x3, B: all)"
st=0; ctl frobnicate >/dev/null 2>&1 || st=$?
expect_eq "ringcast-ctl frobnicate: exit status (usage)" "$st" 2
st=0; ctl card 0 sideways >/dev/null 2>&1 || st=$?
expect_eq "ringcast-ctl card 0 sideways: exit status" "$st" 2
st=0; ctl card 9 stop >/dev/null 2>&1 || st=$?
expect_eq "ringcast-ctl card 9 stop: exit status (the daemon refuses)" "$st" 1
st=0; "$BIN/ringcast-ctl" --socket "$WORK/nothing" status >/dev/null 2>&1 || st=$?
expect_eq "ringcast-ctl on a socket nobody listens on: exit status" "$st" 3
# Raw requests a client could send: garbage, a huge line, nothing at all.
python3 - "$SOCK" <<'PY' || fail "raw requests"
import socket, sys, json
def ask(data, expect_ok):
    s = socket.socket(socket.AF_UNIX); s.settimeout(5); s.connect(sys.argv[1])
    s.sendall(data); s.shutdown(socket.SHUT_WR)
    got = b""
    while True:
        b = s.recv(65536)
        if not b: break
        got += b
    a = json.loads(got)
    assert a["ok"] == expect_ok, (data[:40], a)
for bad in [b"\x00\xff\x01garbage\n", b"status " + b"x" * 5000 + b"\n", b"", b"\n", b"kick\n",
            b"log-level loud\n", b"card 99999 stop\n", b"status status\n", b"\xc3\xa9t\xc3\xa9\n"]:
    ask(bad, False)
ask(b"status", True)
PY
ok "malformed requests answered {\"ok\":false}, the daemon goes on"
kill -0 "$daemon" || fail "the daemon died"

# ---- 20 reloads at full rate
r=0
while [ $r -lt 20 ]; do
    if [ $((r % 2)) -eq 0 ]; then set_key mode buffered; set_key log_level debug; set_key stats_interval 1s
    else set_key mode zerocopy; set_key log_level info; set_key stats_interval 0; fi
    if [ $((r % 4)) -lt 2 ]; then
        kill -HUP "$daemon"
        i=0; until [ "$(grep -c 'reload [0-9]* of' "$WORK/d.log")" -gt $r ]; do
            i=$((i + 1)); [ $i -lt 200 ] || fail "SIGHUP reload $r not logged"; sleep 0.05; done
    else
        out=$(ctl reload) || fail "reload $r: $out"
        echo "$out" | grep -q '"key":"readout.mode"' || fail "reload $r: readout.mode not changed: $out"
    fi
    kill -0 "$daemon" || fail "the daemon died at reload $r"
    sleep 0.2
    r=$((r + 1))
done
expect_eq "reloads logged" "$(grep -c 'reload [0-9]* of' "$WORK/d.log")" 20
grep -q "reload: changed: .*readout.mode" "$WORK/d.log" || fail "the log does not name readout.mode"
ok "20 reloads (10 SIGHUP, 10 ringcast-ctl), the daemon running"
set_key ring_size 32M
out=$(ctl reload) || fail "reload with ring_size: $out"
echo "$out" | grep -q '"kept":\[{"file":"32M","key":"card.0.ring_size","reason":"set at the start: a restart changes it","running":"64M"}\]' \
    || fail "ring_size change not named as kept: $out"
grep -q "kept their running values.*card.0.ring_size" "$WORK/d.log" || fail "kept key not logged"
ok "a changed ring_size keeps its running value, named in the answer and the log"
cp "$CFG" "$WORK/good.ini"
printf 'slow_policy = sideways\n' >> "$CFG"   # in the last section: an unknown key there
st=0; out=$(ctl reload 2>/dev/null) || st=$?
expect_eq "reload of a broken file: exit status" "$st" 1
echo "$out" | grep -q "cfg.ini:[0-9]*: \[[a-z0-9.]*\] slow_policy: unknown key" || fail "no file:line error: $out"
grep -q "reload refused: .*cfg.ini:[0-9]*: \[[a-z0-9.]*\] slow_policy" "$WORK/d.log" || fail "refusal not logged"
ok "a broken file is refused whole with its file:line"
cp "$WORK/good.ini" "$CFG"

# ---- card stop / start
ctl card 0 stop >/dev/null || fail "card 0 stop"
sleep 0.5
p1=$(ctl status | grep -o '"chunks_produced":[0-9]*' | cut -d: -f2)
sleep 0.5
p2=$(ctl status | grep -o '"chunks_produced":[0-9]*' | cut -d: -f2)
expect_eq "chunks produced while card 0 is stopped" "$p2" "$p1"
ctl card 0 start >/dev/null || fail "card 0 start"
sleep 1
p3=$(ctl status | grep -o '"chunks_produced":[0-9]*' | cut -d: -f2)
expect_gt "chunks produced after card 0 start" "$p3" "$p2"

# ---- kick, then an allow list that excludes A
# A is the one subscribed to 0-3 (keys are sorted: "address" comes before "tags").
a_addr=$(ctl subscribers | grep -o '"address":"127.0.0.1:[0-9]*"[^}]*"tags":\["0x0-0x3"\]' | cut -d'"' -f4)
[ -n "$a_addr" ] || fail "A not listed"
ctl kick "$a_addr" >/dev/null || fail "kick $a_addr"
st=0; ctl kick 127.0.0.1:1 >/dev/null 2>&1 || st=$?
expect_eq "kick of an unknown subscriber: exit status" "$st" 1
i=0; until [ "$(ctl subscribers | grep -o '"address"' | wc -l)" -eq 2 ] && ! ctl subscribers | grep -q "\"$a_addr\""; do
    i=$((i + 1)); [ $i -lt 200 ] || fail "A did not come back after the kick"; sleep 0.05; done
ok "kick closed A ($a_addr); it reconnected"
# ---- live max_subscribers, [metrics] and [discovery]
set_key max_subscribers 2
out=$(ctl reload) || fail "reload with max_subscribers 2: $out"
echo "$out" | grep -q '"changed":\[[^]]*"key":"fabric.max_subscribers"' || fail "max_subscribers not changed: $out"
# --duration 3: ringcast-sub retries a refused connection until its run ends;
# 1 s could end it before a loaded daemon got to its handshake (seen at load
# 20: "the peer closed it" instead of the refusal).
st=0; timeout --foreground -k 10 30 "$BIN/ringcast-sub" --connect "127.0.0.1:$PORT" --tags all --duration 3 >/dev/null 2>"$WORK/c.log" || st=$?
[ "$st" -ne 0 ] || { cat "$WORK/c.log"; fail "a third subscriber was admitted with max_subscribers = 2"; }
i=0; until grep -q "connection(s) refused, the last: .*max_subscribers reached" "$WORK/d.log"; do
    i=$((i + 1)); [ $i -lt 200 ] || fail "no max_subscribers refusal logged"; sleep 0.05; done
ok "a reload lowering max_subscribers to 2 refuses a third subscriber"
set_key max_subscribers 100
out=$(ctl reload) || fail "reload with max_subscribers 100: $out"
echo "$out" | grep -q '{"file":"100","key":"fabric.max_subscribers","reason":"above 64, the value the daemon started with[^"]*","running":"2"}' \
    || fail "max_subscribers above the start value not kept with its reason: $out"
set_key max_subscribers 64
out=$(ctl reload) || fail "reload with max_subscribers 64: $out"
# --count: admitted means it gets chunks, however long a loaded daemon takes.
timeout --foreground -k 10 30 "$BIN/ringcast-sub" --connect "127.0.0.1:$PORT" --tags all --count 100 >/dev/null 2>"$WORK/c.log" \
    || { cat "$WORK/c.log"; fail "a third subscriber refused after max_subscribers went back to 64"; }
ok "max_subscribers above the start value is kept with the reason; back to 64 admits a third one"
MPORT=$((PORT + 3))
mkdir "$WORK/disc"
sed -i "s|^listen =\$|listen = 127.0.0.1:$MPORT|; s|^url =\$|url = dir:$WORK/disc|" "$CFG"
out=$(ctl reload) || fail "reload with [metrics] and [discovery]: $out"
echo "$out" | grep -q '"key":"metrics.listen"' || fail "metrics.listen not changed: $out"
echo "$out" | grep -q '"key":"discovery.url"' || fail "discovery.url not changed: $out"
curl -sf "http://127.0.0.1:$MPORT/metrics" | grep -q "^ringcast_" || fail "no metrics at 127.0.0.1:$MPORT after the reload"
i=0; until [ "$(ls "$WORK/disc" | grep -c json)" -eq 1 ]; do
    i=$((i + 1)); [ $i -lt 200 ] || fail "no discovery entry in $WORK/disc after the reload"; sleep 0.05; done
sed -i "s|^listen = 127.0.0.1:$MPORT\$|listen =|; s|^url = dir:.*|url =|" "$CFG"
out=$(ctl reload) || fail "reload without [metrics] listen and [discovery] url: $out"
! curl -sf "http://127.0.0.1:$MPORT/metrics" >/dev/null 2>&1 || fail "metrics still served after listen was emptied"
expect_eq "discovery entries after url was emptied" "$(ls "$WORK/disc" | grep -c json)" 0
ok "a reload starts and stops the metrics listener and the discovery entries"
# B's verification covers everything up to here; the allow list closes it too.
set_key allow "10.0.0.0/8"
out=$(ctl reload) || fail "reload with allow: $out"
echo "$out" | grep -q '"key":"fabric.allow"' || fail "allow not changed: $out"
i=0; while ctl subscribers | grep -q '"address":"127.0.0.1:'; do
    i=$((i + 1)); [ $i -lt 200 ] || fail "subscribers still there after the allow list excluded them"; sleep 0.05; done
ok "the reloaded allow list closed A and B"
sleep 1
kill -TERM "$daemon"
wait_bounded "$daemon" 300 "the daemon"; st=$wb_st
[ "$st" -eq 0 ] || { tail -30 "$WORK/d.log"; fail "daemon exit status $st"; }
kill -TERM "$sub_a" "$sub_b" 2>/dev/null
wait "$sub_a"; wait "$sub_b"
expect_eq "keys outstanding at the end" "$(json_num keys_outstanding "$WORK/d.json")" 0
expect_eq "subscribers_kicked" "$(json_num subscribers_kicked "$WORK/d.json")" 1
expect_eq "subscribers_cut_by_allow" "$(json_num subscribers_cut_by_allow "$WORK/d.json")" 2
expect_gt "connections refused (A and B, by the allow list)" "$(json_num connections_refused "$WORK/d.json")" 0
grep -q '"verified":true' "$WORK/b.json" || { cat "$WORK/b.json"; fail "B not verified"; }
expect_eq "B: gaps across 20 reloads, card stop/start, kick and allow change of A" "$(json_num gaps "$WORK/b.json")" 0
expect_eq "B: corrupt" "$(json_num corrupt "$WORK/b.json")" 0
expect_gt "B: chunks" "$(json_num chunks "$WORK/b.json")" 1000
echo "test_control: $checks checks passed"
