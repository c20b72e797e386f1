#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# ringcast-sub --peer-timeout: a subscriber whose publisher falls silent (the
# daemon SIGSTOPped while it sends) says so after its --peer-timeout of 1.5 s,
# not after the library's default 5 s, and reconnects once the daemon goes on.
# A bad value is a usage error (exit 2) naming the option. Over tcp (msg) and
# tcp;ofi_rxm (rdm). About 20 s.
. "$(dirname "$0")/lib.sh"

PORT=$(port_base 8311)
TAGS=all

for bad in 1 0 -3 abc 3601 nan; do
    st=0; "$BIN/ringcast-sub" --connect 127.0.0.1:1 --tags all --peer-timeout "$bad" 2>"$WORK/bad.log" || st=$?
    expect_eq "--peer-timeout $bad: exit status" "$st" 2
    grep -q "^ringcast-sub: --peer-timeout '$bad': expected seconds > 1 (the heartbeat) and <= 3600" "$WORK/bad.log" \
        || { cat "$WORK/bad.log"; fail "--peer-timeout $bad: the error does not name the option and its range"; }
done
ok "bad --peer-timeout values are usage errors naming the option"

# seconds_since T0: wall seconds since T0 (date +%s.%N), 2 decimals.
seconds_since() { awk -v t0="$1" -v t1="$(date +%s.%N)" 'BEGIN { printf "%.2f", t1 - t0 }'; }

silent() { # silent PROVIDER ENDPOINT
    name=silent-$2
    start_daemon "$name" -o fabric.provider="$1" -o fabric.endpoint="$2" -o sim.0.rate=2000chunks/s \
        -o readout.wait_subscribers=1
    wait_listening "$name"
    start_sub "$name-sub" "$1" "$2" --peer-timeout 1.5 --duration 40; s=$sub
    wait_cards_started "$name"
    sleep 1
    kill -STOP "$daemon"
    t0=$(date +%s.%N)
    i=0
    until grep -q "publisher silent (timeout)" "$WORK/$name-sub.log"; do
        i=$((i + 1))
        [ $i -lt 200 ] || { kill -CONT "$daemon"; cat "$WORK/$name-sub.log"; fail "$name: silence not noticed in 10 s"; }
        sleep 0.05
    done
    took=$(seconds_since "$t0")
    kill -CONT "$daemon"
    # At least the timeout less the time since the last message before the
    # stop (2000 chunks/s: ms); well below the default 5 s.
    awk -v t="$took" 'BEGIN { exit !(t >= 1.0 && t < 4.5) }' \
        || { cat "$WORK/$name-sub.log"; fail "$name: silence noticed after $took s, expected 1.5 s (1.0..4.5)"; }
    ok "$name: the publisher's silence noticed after $took s (--peer-timeout 1.5)"
    until_logged "$WORK/$name-sub.log" "resubscribed at 127.0.0.1:$PORT" "$name: no reconnect after the daemon went on"
    ok "$name: reconnected once the daemon went on"
    kill -TERM "$s"
    wait_bounded "$s" 60 "$name-sub"
    kill -TERM "$daemon"
    wait_daemon "$name"
    expect_gt "$name-sub reconnects" "$(json_num reconnects "$WORK/$name-sub.json")" 0
    expect_eq "$name-sub corrupt" "$(json_num corrupt "$WORK/$name-sub.json")" 0
    PORT=$((PORT + 1))
}
silent tcp msg
silent "tcp;ofi_rxm" rdm

echo "test_sub_peer_timeout: $checks checks passed"
