#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The real daemon on the simulated card, no network: every chunk produced by
# the simulator is decoded, nothing is outstanding at the end, every block
# format works, errors injected by the simulator are counted, and bad
# configuration is refused with exit status 2 and file:line.
. "$(dirname "$0")/lib.sh"

run_daemon() { # run_daemon NAME OVERRIDES...
    name=$1; shift
    stats="$WORK/$name.json"
    set -- -c deploy/ringcast.ini -o readout.stats_interval=0 "$@"
    timeout --foreground -k 30 60 "$BIN/ringcast-readout" "$@" --stats-json "$stats" 2>"$WORK/$name.log" \
        || { cat "$WORK/$name.log"; fail "$name: daemon exit status $?"; }
}

check_exact_run() { # check_exact_run NAME CHUNKS
    stats="$WORK/$1.json"
    expect_eq "$1 chunks_produced" "$(json_num chunks_produced "$stats")" "$2"
    expect_eq "$1 chunks_decoded" "$(json_num chunks_decoded "$stats")" "$2"
    expect_eq "$1 decode_errors" "$(json_num decode_errors "$stats")" 0
    expect_eq "$1 keys_outstanding" "$(json_num keys_outstanding "$stats")" 0
    expect_eq "$1 ring_bytes_in_use" "$(json_num ring_bytes_in_use "$stats")" 0
}

# Phase-2 blocks, chunks spanning blocks, a small ring that wraps many times.
run_daemon c0ce -o sim.0.run_chunks=200000 -o sim.0.chunk_size_min=16 -o sim.0.chunk_size_max=9000 \
    -o card.0.ring_size=1M -o card.0.rd_update_bytes=256k
check_exact_run c0ce 200000
# Classic 1 KiB blocks with 16-bit and 32-bit trailers.
run_daemon abcd -o card.0.block_format=abcd -o card.0.block_size=1k -o sim.0.run_chunks=50000 \
    -o sim.0.chunk_size_min=1 -o sim.0.chunk_size_max=3000 -o card.0.ring_size=256k -o card.0.rd_update_bytes=64k
check_exact_run abcd 50000
run_daemon abce -o card.0.block_format=abce -o card.0.block_size=1k -o sim.0.run_chunks=50000 \
    -o sim.0.chunk_size_max=3000 -o card.0.ring_size=256k -o card.0.rd_update_bytes=64k
check_exact_run abce 50000
# Two cards, each with its own ring and tag range.
run_daemon twocards -o sim.0.run_chunks=30000 -o card.1.type=sim -o sim.1.run_chunks=20000
check_exact_run twocards 50000

# The simulator as its own process (ringcast-sim) on the shared-memory ring.
shm="rc-it-$$"
printf '[readout]\nstats_interval = 0\n[card.0]\ntype = sim-process\nmemory = shm\nshm_name = %s\nring_size = 4M\n[sim.0]\nrun_chunks = 100000\nchunk_size_max = 5000\n' \
    "$shm" > "$WORK/proc.ini"
timeout --foreground -k 30 60 "$BIN/ringcast-readout" -c "$WORK/proc.ini" --stats-json "$WORK/proc.json" 2>"$WORK/proc.log" &
daemon=$!
timeout --foreground -k 10 60 "$BIN/ringcast-sim" -c "$WORK/proc.ini" --card 0 >"$WORK/sim.log" 2>&1 \
    || { cat "$WORK/sim.log"; fail "ringcast-sim exit status $?"; }
wait_bounded "$daemon" 300 "daemon with sim-process"
[ "$wb_st" -eq 0 ] || { cat "$WORK/proc.log"; fail "daemon with sim-process: exit status $wb_st"; }
check_exact_run proc 100000
[ ! -e "/dev/shm/$shm-ring" ] && [ ! -e "/dev/shm/$shm-bar" ] || fail "shm objects left in /dev/shm"
ok "no shm objects left behind"

# Injected errors are counted, nothing crashes, every key comes back.
run_daemon errors -o sim.0.run_chunks=100000 -o sim.0.err_truncated=0.01 -o sim.0.err_crc=0.01 \
    -o sim.0.err_malformed=0.001 -o sim.0.err_seqskip=0.001 -o sim.0.chunk_size_max=6000
stats="$WORK/errors.json"
expect_gt "errors chunks_truncated" "$(json_num chunks_truncated "$stats")" 0
expect_gt "errors chunks_crc" "$(json_num chunks_crc "$stats")" 0
expect_gt "errors err_malformed" "$(json_num err_malformed "$stats")" 0
expect_gt "errors err_seq_gap" "$(json_num err_seq_gap "$stats")" 0
expect_eq "errors keys_outstanding" "$(json_num keys_outstanding "$stats")" 0

# SIGTERM in the middle of an unlimited run: clean exit 0, nothing outstanding.
"$BIN/ringcast-readout" -c deploy/ringcast.ini -o readout.stats_interval=0 \
    --stats-json "$WORK/sigterm.json" 2>"$WORK/sigterm.log" &
pid=$!
i=0   # started (slow in sanitizer builds on a busy machine), then one second of data
until grep -q "card.0: sim card" "$WORK/sigterm.log"; do
    i=$((i + 1)); [ $i -lt 400 ] || fail "SIGTERM: the card never started"; sleep 0.05
done
sleep 1
kill -TERM "$pid"
wait "$pid" || fail "SIGTERM: exit status $?"
ok "SIGTERM: exit status 0"
expect_eq "SIGTERM keys_outstanding" "$(json_num keys_outstanding "$WORK/sigterm.json")" 0
expect_gt "SIGTERM chunks_decoded" "$(json_num chunks_decoded "$WORK/sigterm.json")" 0

# Statistics are logged every readout.stats_interval while running.
timeout --foreground -k 30 60 "$BIN/ringcast-readout" -c deploy/ringcast.ini -o readout.stats_interval=100ms \
    -o sim.0.run_time=1s 2>"$WORK/stats.log" || { cat "$WORK/stats.log"; fail "stats run"; }
lines=$(grep -c "card.0: .* Mchunk/s .* GB/s | produced" "$WORK/stats.log")
expect_gt "statistics lines in 1 s at 100 ms" "$lines" 3

# Configuration: --check-config exit statuses and a file:line message.
"$BIN/ringcast-readout" --check-config deploy/ringcast.ini >/dev/null || fail "--check-config of the example"
ok "--check-config deploy/ringcast.ini exits 0"
printf '[card.0]\nblock_size = 128k\n' > "$WORK/bad.ini"
st=0; "$BIN/ringcast-readout" --check-config "$WORK/bad.ini" >/dev/null 2>"$WORK/bad.log" || st=$?
expect_eq "bad config exit status" "$st" 2
grep -q "$WORK/bad.ini:2: \[card.0\] block_size" "$WORK/bad.log" || { cat "$WORK/bad.log"; fail "no file:line"; }
ok "bad config names file:line and key"

echo "daemon_readout: $checks checks passed"
