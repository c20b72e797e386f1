#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# A dead simulator is noticed (issue 12 item 1). A sim-process card's
# ringcast-sim is SIGKILLed: the daemon says so naming the card; with
# on_firmware_loss = wait a new ringcast-sim takes over the running DMA and
# `produced` goes on from where the dead one left it (never backwards); with
# stop, a hung (SIGSTOPped) one is found by its silent heartbeat, the card is
# stopped and the daemon ends by itself. A ringcast-sim whose daemon was
# SIGKILLed notices and exits.
. "$(dirname "$0")/lib.sh"

shm="rc-itloss-$$"
ini="$WORK/loss.ini"
printf '[readout]\nstats_interval = 200ms\n[card.0]\ntype = sim-process\nmemory = shm\nshm_name = %s\nring_size = 4M\n[sim.0]\nrate = 100000chunks/s\nchunk_size_max = 2000\n' \
    "$shm" > "$ini"

wait_log() { # wait_log FILE PATTERN WHAT
    i=0
    until grep -q "$2" "$1"; do
        i=$((i + 1)); [ $i -lt 200 ] || { cat "$1"; fail "$3"; }
        sleep 0.05
    done
}
# produced_values LOG: the periodic "produced N" figures, one a line.
produced_values() { grep -o 'produced [0-9]*' "$1" | cut -d' ' -f2; }

# -- wait: a successor takes over ---------------------------------------------
timeout --foreground -k 30 60 "$BIN/ringcast-readout" -c "$ini" --stats-json "$WORK/wait.json" 2>"$WORK/wait.log" &
daemon=$!
wait_log "$WORK/wait.log" "waiting for .ringcast-sim" "wait: the daemon never set up the card"
timeout --foreground -k 10 60 "$BIN/ringcast-sim" -c "$ini" --card 0 >"$WORK/sim-a.log" 2>&1 &
sim_a=$!
wait_log "$WORK/wait.log" "produced [1-9]" "wait: nothing produced"
sleep 0.5
pkill -KILL -P "$sim_a" ringcast-sim || fail "wait: no ringcast-sim to kill"
wait "$sim_a" 2>/dev/null
wait_log "$WORK/wait.log" "card.0: firmware lost: ringcast-sim pid [0-9]* died" "wait: the loss was not reported"
ok "wait: the daemon reported the dead simulator, naming the card"
timeout --foreground -k 10 60 "$BIN/ringcast-sim" -c "$ini" --card 0 --run-chunks 20000 >"$WORK/sim-b.log" 2>&1 \
    || { cat "$WORK/sim-b.log" "$WORK/wait.log"; fail "wait: the new ringcast-sim failed"; }
ok "wait: a new ringcast-sim took over and finished its run"
wait_bounded "$daemon" 300 "wait: the daemon"
[ "$wb_st" -eq 0 ] || { cat "$WORK/wait.log"; fail "wait: daemon exit status $wb_st"; }
f="$WORK/wait.json"
expect_eq "wait firmware_losses" "$(json_num firmware_losses "$f")" 1
expect_gt "wait chunks_produced (both simulators)" "$(json_num chunks_produced "$f")" 20000
[ "$(json_num chunks_decoded "$f")" -le "$(json_num chunks_produced "$f")" ] \
    || fail "wait: decoded $(json_num chunks_decoded "$f") > produced $(json_num chunks_produced "$f")"
ok "wait: decoded <= produced"
produced_values "$WORK/wait.log" | sort -n -c || { produced_values "$WORK/wait.log"; fail "wait: produced went backwards"; }
ok "wait: produced never went backwards"
expect_eq "wait keys_outstanding" "$(json_num keys_outstanding "$f")" 0

# -- stop: a hung simulator (SIGSTOP) is noticed by its silent heartbeat; the
# card is stopped and the daemon ends by itself --------------------------------
timeout --foreground -k 30 60 "$BIN/ringcast-readout" -c "$ini" -o card.0.on_firmware_loss=stop \
    --stats-json "$WORK/stop.json" 2>"$WORK/stop.log" &
daemon=$!
wait_log "$WORK/stop.log" "waiting for .ringcast-sim" "stop: the daemon never set up the card"
timeout --foreground -k 10 60 "$BIN/ringcast-sim" -c "$ini" --card 0 >"$WORK/sim-c.log" 2>&1 &
sim_c=$!
wait_log "$WORK/stop.log" "produced [1-9]" "stop: nothing produced"
pkill -STOP -P "$sim_c" ringcast-sim || fail "stop: no ringcast-sim to stop"
wait_bounded "$daemon" 300 "stop: the daemon"; st=$wb_st
pkill -KILL -P "$sim_c" ringcast-sim
wait "$sim_c" 2>/dev/null
[ "$st" -eq 0 ] || { cat "$WORK/stop.log"; fail "stop: daemon exit status $st"; }
grep -q "card.0: firmware lost: ringcast-sim pid [0-9]* is alive but its firmware heartbeat is .* old (stopped or hung); on_firmware_loss = stop: stopping the card" \
    "$WORK/stop.log" || { cat "$WORK/stop.log"; fail "stop: the hang was not reported"; }
ok "stop: a hung ringcast-sim was reported, the card stopped and the daemon ended by itself"
expect_eq "stop keys_outstanding" "$(json_num keys_outstanding "$WORK/stop.json")" 0

# -- an orphaned ringcast-sim exits --------------------------------------------
"$BIN/ringcast-readout" -c "$ini" 2>"$WORK/orphan.log" &
daemon=$!
wait_log "$WORK/orphan.log" "waiting for .ringcast-sim" "orphan: the daemon never set up the card"
timeout --foreground -k 10 60 "$BIN/ringcast-sim" -c "$ini" --card 0 >"$WORK/sim-d.log" 2>&1 &
sim_d=$!
wait_log "$WORK/orphan.log" "produced [1-9]" "orphan: nothing produced"
kill -KILL "$daemon"
wait_bounded "$daemon" 60 "orphan: the SIGKILLed daemon"
st=0; wait "$sim_d" || st=$?
[ "$st" -eq 1 ] || { cat "$WORK/sim-d.log"; fail "orphan: ringcast-sim exit status $st, expected 1"; }
grep -q "the daemon is gone" "$WORK/sim-d.log" || { cat "$WORK/sim-d.log"; fail "orphan: no reason given"; }
ok "orphan: ringcast-sim noticed its daemon died and exited 1"
rm -f "/dev/shm/$shm-ring" "/dev/shm/$shm-bar"
