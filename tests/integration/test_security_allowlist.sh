#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# [fabric] allow, end to end: the real daemon and a real ringcast-sub on
# loopback (source address 127.0.0.1), over tcp (msg: checked at the
# connection request) and tcp;ofi_rxm (rdm: checked at HELLO). With
# allow = 10.0.0.0/8 the subscriber is refused: it gets no chunk, says why,
# and the daemon counts the refusal; with allow = 127.0.0.0/8 it gets every
# chunk it asked for. About 20 s.
. "$(dirname "$0")/lib.sh"

PORT=$(port_base 7000)
TAGS=0-7

# start_daemon NAME ALLOW PROVIDER ENDPOINT: a daemon publishing until SIGTERM.
start_daemon() {
    "$BIN/ringcast-readout" -c deploy/ringcast.ini -o readout.stats_interval=0 \
        -o fabric.port="$PORT" -o fabric.allow="$2" -o fabric.provider="$3" -o fabric.endpoint="$4" \
        -o sim.0.rate=20000chunks/s --stats-json "$WORK/$1.json" 2>"$WORK/$1.log" &
    daemon=$!
}

stop_daemon() { # stop_daemon NAME
    kill -TERM "$daemon"
    wait_daemon "$1"
}

refused() { # refused NAME PROVIDER ENDPOINT
    name=$1
    start_daemon "$name" "10.0.0.0/8, fd00::/8" "$2" "$3"
    wait_listening "$name"
    start_sub "$name-sub" "$2" "$3" --duration 4
    wait "$sub"
    stop_daemon "$name"
    f="$WORK/$name-sub.json"
    expect_eq "$name: chunks received" "$(json_num chunks "$f")" 0
    expect_gt "$name: connect_failures" "$(json_num connect_failures "$f")" 0
    expect_gt "$name: daemon connections_refused" "$(json_num connections_refused "$WORK/$name.json")" 0
    expect_eq "$name: daemon connections" "$(json_num connections "$WORK/$name.json")" 0
    # what the subscriber says: only that it never connected (MSG names "Connection
    # refused" or a cancelled receive, depending on timing; RDM names nothing)
    grep -q -i "$4" "$WORK/$name-sub.log" || { cat "$WORK/$name-sub.log"; fail "$name: no '$4' in the subscriber's log"; }
    ok "$name: the subscriber's log says '$4'"
    PORT=$((PORT + 1))
}

accepted() { # accepted NAME PROVIDER ENDPOINT
    name=$1
    start_daemon "$name" "10.0.0.0/8, 127.0.0.0/8" "$2" "$3"
    start_sub "$name-sub" "$2" "$3" --verify --count 2000
    wait_sub "$name-sub" "$sub"
    stop_daemon "$name"
    f="$WORK/$name-sub.json"
    expect_gt "$name: chunks received (--count 2000)" "$(json_num chunks "$f")" 1999
    grep -q '"verified":true' "$f" || { cat "$f"; fail "$name: not verified"; }
    expect_eq "$name: daemon connections_refused" "$(json_num connections_refused "$WORK/$name.json")" 0
    expect_eq "$name: daemon connections" "$(json_num connections "$WORK/$name.json")" 1
    PORT=$((PORT + 1))
}

refused msg-refused tcp msg "never connected"
accepted msg-accepted tcp msg
refused rdm-refused "tcp;ofi_rxm" rdm "never connected"
accepted rdm-accepted "tcp;ofi_rxm" rdm

# A bad network is a configuration error at its line (exit status 2, nothing started).
printf '[fabric]\nallow = 127.0.0.0/8, 10.1.2.3/16\n' >"$WORK/bad.ini"
"$BIN/ringcast-readout" -c "$WORK/bad.ini" 2>"$WORK/bad.log"; st=$?
expect_eq "bad allow: exit status" "$st" 2
grep -q "bad.ini:2: \[fabric\] allow = .*did you mean 10.1.0.0/16?" "$WORK/bad.log" \
    || { cat "$WORK/bad.log"; fail "bad allow: message"; }
ok "bad allow: reported at its line with a suggestion"
echo "all $checks checks passed"
