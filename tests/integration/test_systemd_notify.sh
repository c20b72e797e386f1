#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# systemd Type=notify without systemd: the test listens on NOTIFY_SOCKET
# (notify_listen.py) and sets WATCHDOG_USEC as systemd would.
#  1. READY=1 once the cards run (with a STATUS), STATUS= every stats
#     interval, WATCHDOG=1 while the threads make progress, STOPPING=1 on
#     SIGTERM.
#  2. A stuck thread (readout.fault_publisher_hang_after: publisher thread 0
#     stops going round its loop): the daemon names it and WATCHDOG=1 stops.
#  3. A sim-process card whose ringcast-sim is SIGSTOPped is NOT a stuck
#     thread: the readout thread goes on polling, the firmware check reports
#     the card, and WATCHDOG=1 goes on.
. "$(dirname "$0")/lib.sh"
PORT=$(port_base 6151)
SOCK="$WORK/notify.sock"

python3 tests/integration/notify_listen.py "$SOCK" "$WORK/notify.txt" >/dev/null 2>&1 &
listener=$!
# The listener runs until killed: also when a check fails.
trap 'st0=$?; kill "$listener" 2>/dev/null; on_exit "$st0"' EXIT
i=0
until [ -S "$SOCK" ]; do
    i=$((i + 1)); [ $i -lt 100 ] || fail "the listener never bound $SOCK"
    sleep 0.05
done

wait_log() { # wait_log FILE PATTERN WHAT
    i=0
    until grep -q "$2" "$1"; do
        i=$((i + 1)); [ $i -lt 1200 ] || { grep -v 'Mchunk/s' "$1" | tail -n 30; tail -n 20 "$WORK/notify.txt"; fail "$3"; }
        sleep 0.05
    done
}
pings() { grep -c ' WATCHDOG=1$' "$WORK/notify.txt"; }

# -- 1 and 2: a simulated card, then a stuck publisher thread ---------------------
: >"$WORK/notify.txt"
NOTIFY_SOCKET="$SOCK" WATCHDOG_USEC=1000000 timeout --foreground -k 30 60 "$BIN/ringcast-readout" -c deploy/ringcast.ini \
    -o fabric.port="$PORT" -o readout.stats_interval=300ms -o sim.0.rate=20000chunks/s \
    -o readout.fault_publisher_hang_after=4s --stats-json "$WORK/d.json" 2>"$WORK/d.log" &
daemon=$!
wait_log "$WORK/notify.txt" ' READY=1$' "no READY=1"
grep -A1 ' READY=1$' "$WORK/notify.txt" | grep -q 'STATUS=running: 1 card, publishers listening on port' \
    || fail "READY=1 without its STATUS: $(cat "$WORK/notify.txt")"
grep -q "card.0: sim card" "$WORK/d.log" || fail "READY=1 before the card was set up"
ok "READY=1 with STATUS once the card runs and the publisher listens"
wait_log "$WORK/notify.txt" 'STATUS=running [0-9]* s: 1 card, [0-9.]* GB/s decoded, fullest ring' "no periodic STATUS"
ok "periodic STATUS: $(grep 'STATUS=running [0-9]' "$WORK/notify.txt" | tail -n 1 | cut -d' ' -f2-)"
wait_log "$WORK/d.log" "systemd watchdog: no progress for .* in publisher thread 0" "the stuck thread was not named"
before=$(pings)
expect_gt "WATCHDOG=1 while the threads made progress" "$before" 3
sleep 2.5
expect_eq "WATCHDOG=1 after publisher thread 0 got stuck (2.5 s)" "$(pings)" "$before"
grep -q "readout thread of card.0" "$WORK/d.log" && fail "the readout thread was called stuck: $(grep watchdog "$WORK/d.log")"
ok "only the stuck thread is named"
kill -TERM "$daemon"
wait_daemon d
wait_log "$WORK/notify.txt" ' STOPPING=1$' "no STOPPING=1 after SIGTERM"
ok "STOPPING=1 after SIGTERM, exit 0"

# -- 3: a SIGSTOPped ringcast-sim is not a stuck thread ------------------------------
: >"$WORK/notify.txt"
shm="rc-itnotify-$$"
ini="$WORK/proc.ini"
printf '[readout]\nstats_interval = 300ms\n[fabric]\nport = %s\n[card.0]\ntype = sim-process\nmemory = shm\nshm_name = %s\nring_size = 4M\n[sim.0]\nrate = 20000chunks/s\n' \
    "$PORT" "$shm" > "$ini"
NOTIFY_SOCKET="$SOCK" WATCHDOG_USEC=1000000 timeout --foreground -k 30 60 "$BIN/ringcast-readout" -c "$ini" \
    --stats-json "$WORK/p.json" 2>"$WORK/p.log" &
daemon=$!
wait_log "$WORK/p.log" "waiting for .ringcast-sim" "the daemon never set up the sim-process card"
timeout --foreground -k 10 60 "$BIN/ringcast-sim" -c "$ini" --card 0 >"$WORK/sim.log" 2>&1 &
sim=$!
wait_log "$WORK/p.log" "produced [1-9]" "nothing produced"
simpid=$(pgrep -P "$sim" ringcast-sim || echo "$sim")
kill -STOP "$simpid"
wait_log "$WORK/p.log" "card.0: firmware lost" "the stopped simulator was not reported"
before=$(pings)
sleep 2.5
after=$(pings)
kill -CONT "$simpid"
expect_gt "WATCHDOG=1 in 2.5 s with ringcast-sim stopped" "$((after - before))" 2
grep -q "systemd watchdog: no progress" "$WORK/p.log" && fail "a stopped simulator was taken for a stuck thread"
ok "a SIGSTOPped simulator is not a stuck thread"
kill -TERM "$daemon"
wait_daemon p
kill "$simpid" 2>/dev/null
wait "$sim" 2>/dev/null
echo "test_systemd_notify: $checks checks passed"
