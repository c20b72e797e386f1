#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Blocks dropped for a block-stream subscriber never make one chunk of two
# (README.md, "Block stream"; net/rma_ring.h, RCI_RMA_IMM_STREAM_GAP).
# Under slow_policy = drop the daemon drops the blocks a slow stream
# subscriber has no room for. An e-link's block sequence has 5 bits: a hole
# of 32 (64, ...) of its blocks shows no sequence gap, and before the gap
# marks the decoder joined the head of the chunk open before the hole to the
# tail of another chunk after it (--verify: corrupt; or the next head came
# first: bad_start). One e-link, 1 KiB blocks and chunks of two or three
# blocks make every hole cut a chunk. Now the first span after a hole is
# marked, the subscriber counts the marks (gap_marks, at least one per gap
# --verify sees), drops the chunks open there (chunks_dropped), and hands on no
# corrupt chunk; every block comes back to the daemon.
. "$(dirname "$0")/lib.sh"

PORT=$(port_base 15000)
stream_of() { grep -o '"stream":{[^}]*}' "$WORK/$1.json" | head -n 1 | grep -o "\"$2\":[0-9]*" | cut -d: -f2; }

name=stream-gap; n=20000
start_daemon "$name" -o fabric.provider=tcp -o fabric.endpoint=msg -o readout.slow_policy=drop \
    -o readout.slow_cut_after=0 -o readout.wait_subscribers=1 -o sim.0.run_chunks=$n -o sim.0.rate=8000chunks/s \
    -o sim.0.elinks=1 -o card.0.block_size=1k -o sim.0.chunk_size_min=1500 -o sim.0.chunk_size_max=2500 \
    -o fabric.stream_span=32k
timeout --foreground -k 10 60 "$BIN/ringcast-sub" --connect "127.0.0.1:$PORT" --provider tcp --endpoint msg \
    --stream 0 --json --verify --slow-us 300 --duration 40 --stream-ring-size 65536 \
    >"$WORK/$name-s.json" 2>"$WORK/$name-s.log" &
sub_s=$!
wait_daemon "$name"
kill -TERM "$sub_s" 2>/dev/null
wait "$sub_s"   # exit status 1: verification saw the gaps
f="$WORK/$name-s.json"
expect_gt "$name blocks_dropped" "$(stream_of "$name" blocks_dropped)" 0
expect_gt "$name-s verify gaps" "$(json_num gaps "$f")" 0
# Each hole loses at least one chunk; two holes may cut out one run of chunks.
gaps=$(json_num gaps "$f")
expect_gt "$name-s gap_marks (at least one per gap seen)" "$(stream_of "$name-s" gap_marks)" $((gaps - 1))
expect_gt "$name-s chunks_dropped (open at a mark)" "$(stream_of "$name-s" chunks_dropped)" 0
expect_eq "$name-s corrupt" "$(json_num corrupt "$f")" 0
expect_eq "$name-s duplicates" "$(json_num duplicates "$f")" 0
expect_eq "$name-s bad_start (a head while one was open)" "$(stream_of "$name-s" bad_start)" 0
expect_eq "$name-s bad_spans" "$(stream_of "$name-s" bad_spans)" 0
d="$WORK/$name.json"
expect_eq "$name keys_outstanding" "$(json_num keys_outstanding "$d")" 0
expect_eq "$name ring_bytes_in_use" "$(json_num ring_bytes_in_use "$d")" 0
expect_eq "$name bad_tap_releases" "$(json_num bad_tap_releases "$d")" 0
expect_eq "$name tap_releases = tap_blocks" "$(json_num tap_releases "$d")" "$(json_num tap_blocks "$d")"
echo "test_daemon_stream_gap: $checks checks passed"
