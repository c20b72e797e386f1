#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# A replayed block file arrives at a subscriber's --out file exactly.
# 1. Capture: ringcast-sim (own process) writes pattern data into the
#    daemon's shared-memory ring; a verifying subscriber records every chunk
#    (--out expected.out). The ring is large enough not to wrap, so once the
#    run is over its first `blocks` blocks are exactly what the card wrote:
#    they are copied out as the block file (a second subscriber keeps the
#    daemon lingering, and so the ring alive, until the copy is made).
# 2. Replay: a daemon whose simulated card replays that file; a subscriber
#    records every chunk (--out replayed.out), which must equal expected.out
#    byte for byte.
. "$(dirname "$0")/lib.sh"

PORT=$(port_base 3571)
TAGS=0-0xffff
N=3000
shm="rc-replay-$$"

printf '[readout]\nstats_interval = 0\nwait_subscribers = 2\nlinger = 30s\n[fabric]\nport = %s\n[card.0]\ntype = sim-process\nmemory = shm\nshm_name = %s\nring_size = 16M\n[sim.0]\nrun_chunks = %s\nchunk_size_min = 1\nchunk_size_max = 3000\nseed = 7\n' \
    "$PORT" "$shm" "$N" > "$WORK/capture.ini"
"$BIN/ringcast-readout" -c "$WORK/capture.ini" --stats-json "$WORK/capture.json" 2>"$WORK/capture.log" &
daemon=$!
timeout --foreground -k 10 60 "$BIN/ringcast-sub" --connect "127.0.0.1:$PORT" --tags "$TAGS" --verify --json --count "$N" \
    --out "$WORK/expected.out" >"$WORK/expected.json" 2>"$WORK/expected.log" &
sub_a=$!
timeout --foreground -k 10 60 "$BIN/ringcast-sub" --connect "127.0.0.1:$PORT" --tags "$TAGS" --duration 50 \
    >/dev/null 2>"$WORK/keeper.log" &
keeper=$!
i=0
until grep -q "starting the cards" "$WORK/capture.log"; do
    i=$((i + 1)); [ $i -lt 300 ] || { cat "$WORK/capture.log"; fail "capture: subscribers never subscribed"; }
    sleep 0.05
done
# Hold the ring open: once the run ends the daemon says BYE, its subscribers
# leave and it exits, removing /dev/shm/$shm-ring, maybe before dd below
# (an ASan run lost that race); the open file keeps the ring's bytes.
exec 3<"/dev/shm/$shm-ring" || fail "capture: no ring /dev/shm/$shm-ring"
timeout --foreground -k 10 60 "$BIN/ringcast-sim" -c "$WORK/capture.ini" --card 0 >"$WORK/sim.log" 2>&1 \
    || { cat "$WORK/sim.log"; fail "ringcast-sim exit status $?"; }
wait "$sub_a" || { cat "$WORK/expected.log" "$WORK/expected.json"; fail "capture subscriber failed"; }
grep -q '"verified":true' "$WORK/expected.json" || fail "capture: subscriber did not verify"
expect_eq "capture subscriber chunks" "$(json_num chunks "$WORK/expected.json")" "$N"
blocks=$(grep -o 'blocks [0-9]*' "$WORK/sim.log" | head -n 1 | cut -d' ' -f2)
expect_gt "capture blocks written" "$blocks" 0
dd of="$WORK/blocks.bin" bs=4096 count="$blocks" <&3 2>/dev/null || fail "cannot copy the ring /dev/shm/$shm-ring"
exec 3<&-
expect_eq "block file size" "$(wc -c < "$WORK/blocks.bin")" $((blocks * 4096))
kill -TERM "$keeper"; wait "$keeper" 2>/dev/null
wait_bounded "$daemon" 300 "capture daemon"
[ "$wb_st" -eq 0 ] || { cat "$WORK/capture.log"; fail "capture daemon exit status $wb_st"; }
expect_eq "capture keys_outstanding" "$(json_num keys_outstanding "$WORK/capture.json")" 0

PORT=$((PORT + 1))
"$BIN/ringcast-readout" -c deploy/ringcast.ini -o readout.stats_interval=0 -o fabric.port="$PORT" \
    -o readout.wait_subscribers=1 -o readout.linger=20s -o sim.0.replay_file="$WORK/blocks.bin" \
    --stats-json "$WORK/replay.json" 2>"$WORK/replay.log" &
daemon=$!
timeout --foreground -k 10 60 "$BIN/ringcast-sub" --connect "127.0.0.1:$PORT" --tags "$TAGS" --json --count "$N" \
    --out "$WORK/replayed.out" >"$WORK/replayed.json" 2>"$WORK/replayed.log" \
    || { cat "$WORK/replayed.log"; fail "replay subscriber failed"; }
wait_bounded "$daemon" 300 "replay daemon"
[ "$wb_st" -eq 0 ] || { cat "$WORK/replay.log"; fail "replay daemon exit status $wb_st"; }
expect_eq "replay chunks_produced" "$(json_num chunks_produced "$WORK/replay.json")" "$N"
expect_eq "replay chunks_sent" "$(json_num chunks_sent "$WORK/replay.json")" "$N"
expect_eq "replay keys_outstanding" "$(json_num keys_outstanding "$WORK/replay.json")" 0
cmp "$WORK/expected.out" "$WORK/replayed.out" || fail "replayed --out differs from the captured one"
ok "replayed --out file equals the captured one ($(wc -c < "$WORK/replayed.out") bytes, $N chunks)"

echo "daemon_replay: $checks checks passed"
