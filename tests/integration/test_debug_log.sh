#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# log_level = debug says what a network problem needs (issue 16): the daemon
# (max_subscribers 1, a simulated card at 200k chunks/s, policy block) with
# subscriber A connected; B is refused (max_subscribers reached); A is killed
# with SIGKILL. The log must show at DEBUG the connection requests, A's HELLO
# contents, B's refusal with its reason and how A's connection ended; at
# info, none of those lines. Then a subscriber leaving normally at the end of
# --duration is logged as a normal leave (failed 0, no WARN), and what it
# and one stopped by SIGTERM said they handled in their BYE is what the
# daemon sent them less what it counts as never read. About 15 s.
. "$(dirname "$0")/lib.sh"
fail() {
    kill "$daemon" "$sub_a" $sub_e 2>/dev/null
    [ -f "$WORK/d.log" ] && grep -v "e-link" "$WORK/d.log" | tail -n 30 >&2
    echo "FAIL: $*" >&2
    exit 1
}
PORT=$(port_base 13000)

# run_case LEVEL: the scenario with the daemon at LEVEL; its log in $WORK/d.log.
run_case() {
    "$BIN/ringcast-readout" -c deploy/ringcast.ini -o fabric.port="$PORT" -o fabric.max_subscribers=1 \
        -o readout.log_level="$1" -o readout.wait_subscribers=1 -o sim.0.rate=200kchunks/s -o readout.stats_interval=0 \
        2>"$WORK/d.log" &
    daemon=$!
    "$BIN/ringcast-sub" --connect "127.0.0.1:$PORT" --tags all >/dev/null 2>"$WORK/a.log" &
    sub_a=$!
    i=0; until grep -q "subscribed: starting the cards" "$WORK/d.log"; do
        kill -0 "$daemon" 2>/dev/null || fail "the daemon ended"; i=$((i + 1)); [ $i -lt 600 ] || fail "A never subscribed"; sleep 0.05; done
    st=0; timeout 20 "$BIN/ringcast-sub" --connect "127.0.0.1:$PORT" --tags all --duration 1 \
        >/dev/null 2>"$WORK/b.log" || st=$?
    [ "$st" -ne 0 ] || { cat "$WORK/b.log"; fail "B was admitted with max_subscribers = 1"; }
    kill -KILL "$sub_a"; wait "$sub_a" 2>/dev/null
    i=0; until grep -q "subscriber 127.0.0.1:[0-9]* left" "$WORK/d.log"; do
        i=$((i + 1)); [ $i -lt 400 ] || fail "A's end not noticed"; sleep 0.05; done
    kill -TERM "$daemon"; wait "$daemon" || fail "daemon exit status $?"
    PORT=$((PORT + 1))
}

run_case debug
grep -q "DEBUG: publisher port [0-9]*: connection request from 127.0.0.1:[0-9]* (subscriber 1 of at most 1)" "$WORK/d.log" \
    || fail "no connection request line at debug"
grep -q "DEBUG: HELLO from 127.0.0.1:[0-9]*: versions [0-9]*..[0-9]*, receive buffer [0-9]* B, client 0x[0-9a-f]*" \
    "$WORK/d.log" || fail "no HELLO line at debug"
grep -q "DEBUG: publisher port [0-9]*: connection from 127.0.0.1:[0-9]* refused: max_subscribers reached" "$WORK/d.log" \
    || fail "no refusal with its reason at debug"
ok "debug: connection request, HELLO contents and the refusal with its reason"
grep -q "DEBUG: 127.0.0.1:[0-9]*: connection shut down (FI_SHUTDOWN)\|DEBUG: \(send\|receive\) completion error \(to\|from\) 127.0.0.1:[0-9]*: .*provider errno" \
    "$WORK/d.log" || fail "the killed subscriber's end not said at debug"
ok "debug: how the killed subscriber's connection ended"
run_case info
expect_eq "DEBUG lines at info" "$(grep -c "DEBUG:" "$WORK/d.log")" 0

# A normal leave looks normal: C (`ringcast-sub --duration 2`) leaves during
# a run at full rate (zero-copy, its sends outstanding when it says BYE):
# the daemon logs it at INFO as "left (BYE)" with failed 0 (what it had
# outstanding is counted "not sent"), and no WARN names it.
"$BIN/ringcast-readout" -c deploy/ringcast.ini -o fabric.port="$PORT" -o readout.wait_subscribers=1 \
    -o readout.stats_interval=0 --stats-json "$WORK/d.json" 2>"$WORK/d.log" &
daemon=$!
"$BIN/ringcast-sub" --connect "127.0.0.1:$PORT" --tags all >/dev/null 2>"$WORK/a.log" &
sub_a=$!
i=0; until grep -q "subscribed: starting the cards" "$WORK/d.log"; do
    kill -0 "$daemon" 2>/dev/null || fail "the daemon ended"; i=$((i + 1)); [ $i -lt 600 ] || fail "A never subscribed"; sleep 0.05; done
"$BIN/ringcast-sub" --connect "127.0.0.1:$PORT" --tags all --json >"$WORK/e.json" 2>"$WORK/e.log" &
sub_e=$!
i=0; until [ "$(grep -c "subscriber 127.0.0.1:[0-9]* joined" "$WORK/d.log")" -ge 2 ]; do
    i=$((i + 1)); [ $i -lt 400 ] || fail "E never joined"; sleep 0.05; done
timeout 30 "$BIN/ringcast-sub" --connect "127.0.0.1:$PORT" --tags all --duration 2 --json >"$WORK/c.json" 2>"$WORK/c.log" \
    || { cat "$WORK/c.log"; fail "C: exit status $?"; }
kill -TERM "$sub_e"; wait "$sub_e" || fail "E (SIGTERM) exit status $?"
c_addr=$(grep -o "subscriber 127.0.0.1:[0-9]* joined" "$WORK/d.log" | sed -n 3p | cut -d' ' -f2)
[ -n "$c_addr" ] || fail "C's join not logged"
i=0; until grep -q "subscriber $c_addr left" "$WORK/d.log"; do
    i=$((i + 1)); [ $i -lt 400 ] || fail "C's leave not logged"; sleep 0.05; done
kill -TERM "$daemon"; wait "$daemon" || fail "daemon exit status $?"
kill -TERM "$sub_a"; wait "$sub_a" 2>/dev/null
line=$(grep "subscriber $c_addr left" "$WORK/d.log")
echo "$line" | grep -q "INFO: subscriber $c_addr left (BYE): sent [0-9]*, dropped [0-9]* (by age [0-9]*, by quota [0-9]*), failed 0, not sent [0-9]*;" \
    || fail "C's normal leave logged as: $line"
expect_eq "WARN lines naming C" "$(grep "WARN" "$WORK/d.log" | grep -c "$c_addr")" 0
ok "a subscriber leaving at the end of --duration: $(echo "$line" | sed 's/.*left/left/')"

# The BYE's handled count (wire version 3): for C (--duration) and E
# (SIGTERM) chunks_sent - chunks_unread_at_leave is what the subscriber
# reports as received, and the total is the sum over those that left.
e_addr=$(grep -o "subscriber 127.0.0.1:[0-9]* joined" "$WORK/d.log" | sed -n 2p | cut -d' ' -f2)
for who in "C $c_addr c" "E $e_addr e"; do
    set -- $who
    line=$(python3 - "$WORK/d.json" "$2" "$WORK/$3.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
s = [x for x in d["subscribers"] if x["address"] == sys.argv[2]][0]
got = json.load(open(sys.argv[3]))["chunks"]
print(s["handled_reported"], s["chunks_handled"], got, s["chunks_sent"] - s["chunks_unread_at_leave"],
      s["chunks_sent"], s["chunks_unread_at_leave"])
PY
) || fail "$1: no subscriber entry for $2 in the daemon's JSON"
    set -- "$1" $line
    expect_eq "$1: its BYE carried the handled count" "$2" True
    expect_eq "$1: handled count in its BYE = chunks it received" "$3" "$4"
    expect_eq "$1: sent $6 - never read $7 = chunks it received" "$5" "$4"
done
total=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['chunks_unread_at_leave'], sum(s['chunks_unread_at_leave'] for s in d['subscribers']))" "$WORK/d.json")
set -- $total
expect_eq "chunks_unread_at_leave = the sum over subscribers" "$1" "$2"
echo "test_debug_log: $checks checks passed"
