#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# log_level = debug says what a network problem needs (issue 16): the daemon
# (max_subscribers 1, a simulated card at 200k chunks/s, policy block) with
# subscriber A connected; B is refused (max_subscribers reached); A is killed
# with SIGKILL. The log must show at DEBUG the connection requests, A's HELLO
# contents, B's refusal with its reason and how A's connection ended; at
# info, none of those lines. Then a subscriber leaving normally at the end of
# --duration and one stopped by SIGTERM are logged as normal leaves (failed 0,
# no WARN), and what they said they handled in their BYE is what the daemon
# sent them less what it counts as never read, over tcp and tcp;ofi_rxm.
# About 25 s.
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
    st=0; timeout --foreground -k 10 20 "$BIN/ringcast-sub" --connect "127.0.0.1:$PORT" --tags all --duration 1 \
        >/dev/null 2>"$WORK/b.log" || st=$?
    [ "$st" -ne 0 ] || { cat "$WORK/b.log"; fail "B was admitted with max_subscribers = 1"; }
    kill -KILL "$sub_a"; wait "$sub_a" 2>/dev/null
    i=0; until grep -q "subscriber 127.0.0.1:[0-9]* left" "$WORK/d.log"; do
        i=$((i + 1)); [ $i -lt 400 ] || fail "A's end not noticed"; sleep 0.05; done
    kill -TERM "$daemon"; wait_bounded "$daemon" 300 "the daemon"; [ "$wb_st" -eq 0 ] || fail "daemon exit status $wb_st"
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

# A normal leave looks normal: C (`ringcast-sub --count 20000`) leaves during
# a run at full rate (zero-copy, its sends outstanding when it says BYE),
# and E is stopped by SIGTERM: the daemon logs both at INFO as "left (BYE)"
# with failed 0 (what they had outstanding is counted "not sent"), and no
# WARN names them. Their BYE carries the chunks they handled (wire version
# 3): chunks_sent - chunks_unread_at_leave is what each reports received,
# and the total is the sum over those that left. Over tcp (msg) and
# tcp;ofi_rxm (rdm: a subscriber closing at once after its BYE made the
# publisher's sends to it fail, which ended it as dead before its BYE).
leave_case() { # leave_case NAME PROVIDER ENDPOINT
    "$BIN/ringcast-readout" -c deploy/ringcast.ini -o fabric.port="$PORT" -o readout.wait_subscribers=1 \
        -o fabric.provider="$2" -o fabric.endpoint="$3" -o readout.stats_interval=0 --stats-json "$WORK/d.json" \
        2>"$WORK/d.log" &
    daemon=$!
    i=0; until grep -q "listening on" "$WORK/d.log"; do
        kill -0 "$daemon" 2>/dev/null || fail "$1: the daemon ended"; i=$((i + 1)); [ $i -lt 600 ] || fail "$1: not listening"; sleep 0.05; done
    set -- "$1" --provider "$2" --endpoint "$3"
    "$BIN/ringcast-sub" --connect "127.0.0.1:$PORT" "$2" "$3" "$4" "$5" --tags all >/dev/null 2>"$WORK/a.log" &
    sub_a=$!
    i=0; until grep -q "subscribed: starting the cards" "$WORK/d.log"; do
        kill -0 "$daemon" 2>/dev/null || fail "$1: the daemon ended"; i=$((i + 1)); [ $i -lt 600 ] || fail "$1: A never subscribed"; sleep 0.05; done
    "$BIN/ringcast-sub" --connect "127.0.0.1:$PORT" "$2" "$3" "$4" "$5" --tags all --json >"$WORK/e.json" 2>"$WORK/e.log" &
    sub_e=$!
    i=0; until [ "$(grep -c "subscriber [^ ]*127.0.0.1:[0-9]* joined" "$WORK/d.log")" -ge 2 ]; do
        i=$((i + 1)); [ $i -lt 400 ] || fail "$1: E never joined"; sleep 0.05; done
    # --count, not --duration: a run of fixed length can end before a loaded
    # daemon answers its connection (seen over rdm: "never connected").
    st=0; timeout --foreground -k 10 60 "$BIN/ringcast-sub" --connect "127.0.0.1:$PORT" "$2" "$3" "$4" "$5" --tags all --count 20000 --json \
        >"$WORK/c.json" 2>"$WORK/c.log" || st=$?
    [ "$st" -eq 0 ] || { cat "$WORK/c.log" "$WORK/d.log"; fail "$1: C: exit status $st"; }
    kill -TERM "$sub_e"; wait "$sub_e" || fail "$1: E (SIGTERM) exit status $?"
    sub_e=
    e_addr=$(grep -o "subscriber [^ ]*127.0.0.1:[0-9]* joined" "$WORK/d.log" | sed -n 2p | cut -d' ' -f2)
    c_addr=$(grep -o "subscriber [^ ]*127.0.0.1:[0-9]* joined" "$WORK/d.log" | sed -n 3p | cut -d' ' -f2)
    [ -n "$c_addr" ] && [ -n "$e_addr" ] || fail "$1: the joins of C and E not logged"
    i=0; until grep -q "subscriber $c_addr left" "$WORK/d.log" && grep -q "subscriber $e_addr left" "$WORK/d.log"; do
        i=$((i + 1)); [ $i -lt 400 ] || fail "$1: the leaves of C and E not logged"; sleep 0.05; done
    kill -TERM "$daemon"; wait_bounded "$daemon" 300 "$1: the daemon"; [ "$wb_st" -eq 0 ] || fail "$1: daemon exit status $wb_st"
    kill -TERM "$sub_a"; wait "$sub_a" 2>/dev/null
    for who in "C $c_addr c" "E $e_addr e"; do
        set -- "$1" $who
        line=$(grep "subscriber $3 left" "$WORK/d.log")
        echo "$line" | grep -q "INFO: subscriber $3 left (BYE): sent [0-9]*, dropped [0-9]* (by age [0-9]*, by quota [0-9]*), failed 0, not sent [0-9]*;" \
            || fail "$1: $2's normal leave logged as: $line"
        expect_eq "$1: WARN lines naming $2" "$(grep "WARN" "$WORK/d.log" | grep -c "$3")" 0
        ok "$1: $2 leaving in order: $(echo "$line" | sed 's/.*left/left/')"
        line=$(python3 - "$WORK/d.json" "$3" "$WORK/$4.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
s = [x for x in d["subscribers"] if x["address"] == sys.argv[2]][0]
got = json.load(open(sys.argv[3]))["chunks"]
print(s["handled_reported"], s["chunks_handled"], got, s["chunks_sent"] - s["chunks_unread_at_leave"],
      s["chunks_sent"], s["chunks_unread_at_leave"])
PY
) || fail "$1: no subscriber entry for $3 in the daemon's JSON"
        set -- "$1" "$2" $line
        expect_eq "$1: $2's BYE carried the handled count" "$3" True
        expect_eq "$1: handled count in $2's BYE = chunks it received" "$4" "$5"
        expect_eq "$1: $2: sent $7 - never read $8 = chunks it received" "$6" "$5"
    done
    total=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['chunks_unread_at_leave'], sum(s['chunks_unread_at_leave'] for s in d['subscribers']))" "$WORK/d.json")
    set -- "$1" $total
    expect_eq "$1: chunks_unread_at_leave = the sum over subscribers" "$2" "$3"
    PORT=$((PORT + 1))
}
leave_case msg tcp msg
leave_case rdm "tcp;ofi_rxm" rdm
echo "test_debug_log: $checks checks passed"
