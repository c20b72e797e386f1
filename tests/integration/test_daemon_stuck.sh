#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# A stuck thread (readout.thread_stuck_after; README.md, "Stuck threads"):
# publisher thread 0 (shm) stops going round its loop and does not come back for
# the stop either (readout.fault_publisher_hang_after with
# fault_publisher_hang_through_stop: as a thread inside a libfabric call that
# never returns). The daemon names it, ends the run, leaves it behind at the
# stop instead of waiting for it for ever, reports it in --stats-json and
# /metrics, and exits with status 3; a subscriber of it got only verified
# data up to the hang. The same for a readout thread that hangs through the
# stop (card.N.fault_readout_hang_after with _through_stop). Without the watch
# the daemon runs until killed. About 25 s.
. "$(dirname "$0")/lib.sh"
PORT=$(port_base 7311)
TAGS=0-0xffff
MPORT=$((PORT + 1000))

# sub_got_verified_data PID: stop the subscriber $name-sub (PID) and check
# it received chunks before the hang, every one verified.
sub_got_verified_data() {
    kill -TERM "$1" 2>/dev/null
    wait "$1"
    expect_gt "$name-sub chunks before the hang" "$(json_num chunks "$WORK/$name-sub.json")" 0
    for k in gaps corrupt duplicates; do
        expect_eq "$name-sub $k" "$(json_num "$k" "$WORK/$name-sub.json")" 0
    done
}

name=stuck
start_daemon "$name" -o sim.0.rate=5000chunks/s -o readout.wait_subscribers=1 \
    -o fabric.provider=shm -o fabric.endpoint=rdm \
    -o readout.fault_publisher_hang_after=2s -o readout.fault_publisher_hang_through_stop=true \
    -o readout.thread_stuck_after=2s -o metrics.listen="127.0.0.1:$MPORT" -o metrics.hold_after_run=3s
start_sub "$name-sub" shm rdm --verify --duration 40
sub_v=$sub
wait_cards_started "$name"

# While it hangs (and before the 2 s watch fires), the thread is not yet called stuck.
until_logged "$WORK/$name.log" "hanging on purpose" "the publisher never hung"
until_logged "$WORK/$name.log" "publisher thread 0 is stuck" "the stuck thread was never named"
ok "the stuck publisher thread is named: $(grep -o 'publisher thread 0 is stuck[^;]*' "$WORK/$name.log")"

# The metrics say so too (held after the run: hold_after_run).
until_logged "$WORK/$name.log" "left behind" "the stop waited for the stuck thread"
ok "the stop left the stuck thread behind"
m=$(curl -s "http://127.0.0.1:$MPORT/metrics" | grep '^ringcast_threads_stuck ')
expect_eq "ringcast_threads_stuck" "$m" "ringcast_threads_stuck 1"

wait_bounded "$daemon" 300 "the daemon"; st=$wb_st
expect_eq "daemon exit status (3: a thread was stuck)" "$st" 3
grep -q "ended because a thread was stuck (1 stuck, 1 left behind at the stop): exit status 3" "$WORK/$name.log" \
    || { cat "$WORK/$name.log"; fail "no closing line about the stuck thread"; }
ok "the closing line names the stuck thread"
# Over shm the endpoint left open under the stuck thread keeps its 16 MiB
# region file; the daemon removes it (fi_close, which would, never runs).
[ ! -e "/dev/shm/127.0.0.1:$PORT" ] || fail "/dev/shm/127.0.0.1:$PORT left behind"
grep -q "removed /dev/shm/127.0.0.1:$PORT" "$WORK/$name.log" || fail "no line about the removed shm region"
ok "the stuck publisher's shm region file is removed"
f="$WORK/$name.json"
expect_eq "threads_stuck" "$(json_num threads_stuck "$f")" 1
expect_eq "threads_abandoned" "$(json_num threads_abandoned "$f")" 1
expect_eq "thread_stuck_episodes" "$(json_num thread_stuck_episodes "$f")" 1

# The subscriber got data before the hang, all of it verified.
sub_got_verified_data "$sub_v"

# The readout thread of card 0 hangs through the stop (card.0.fault_readout_hang_after
# with _through_stop): named, the run ended, left behind at the stop (not
# joined: the daemon would wait for ever), exit status 3; its subscriber got
# only verified data.
PORT=$((PORT + 2))
name=stuck-readout
start_daemon "$name" -o sim.0.rate=5000chunks/s -o readout.wait_subscribers=1 \
    -o card.0.fault_readout_hang_after=2s -o card.0.fault_readout_hang_through_stop=true \
    -o readout.thread_stuck_after=2s
start_sub "$name-sub" tcp msg --verify --duration 40
sub_r=$sub
wait_cards_started "$name"
until_logged "$WORK/$name.log" "the readout thread of card.0 is stuck" "the stuck readout thread was never named"
ok "the stuck readout thread is named: $(grep -o 'the readout thread of card.0 is stuck[^;]*' "$WORK/$name.log")"
wait_bounded "$daemon" 300 "$name: the daemon"; rst=$wb_st
expect_eq "$name daemon exit status (3: a thread was stuck)" "$rst" 3
grep -q "card.0: its readout thread has not turned its loop .* left behind" "$WORK/$name.log" \
    || { cat "$WORK/$name.log"; fail "the stop did not leave the stuck readout thread behind"; }
ok "the stop left the stuck readout thread behind"
expect_eq "$name threads_stuck" "$(json_num threads_stuck "$WORK/$name.json")" 1
expect_eq "$name threads_abandoned" "$(json_num threads_abandoned "$WORK/$name.json")" 1
sub_got_verified_data "$sub_r"

# thread_stuck_after = 0: never called stuck; the hang ends at the stop (no
# through_stop) and SIGTERM ends the daemon normally.
PORT=$((PORT + 1))
name=never
start_daemon "$name" -o sim.0.rate=5000chunks/s -o readout.fault_publisher_hang_after=1s -o readout.thread_stuck_after=0
until_logged "$WORK/$name.log" "hanging on purpose" "the publisher never hung"
sleep 2
kill -TERM "$daemon"
wait_daemon "$name"
grep -q "is stuck" "$WORK/$name.log" && fail "thread_stuck_after = 0 called a thread stuck"
expect_eq "$name threads_stuck" "$(json_num threads_stuck "$WORK/$name.json")" 0

echo "test_daemon_stuck: $checks checks passed"
