#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The daemon under ThreadSanitizer (make test-tsan; not a test_*.sh, so the
# plain integration run skips it): simulator thread, readout thread, publisher
# thread and release callbacks of a real run to two verifying subscribers, in
# auto mode (small chunks buffered into pages, large ones zero copy), with
# /metrics scraped all along (the HTTP thread reads the cards, the pipeline
# and the publisher threads' views while they run) and statistics lines
# every 200 ms (per-e-link figures, STATUS). Short,
# and without time limits beyond hang protection: TSan slows everything 5-15x.
. "$(dirname "$0")/lib.sh"

PORT=$(port_base 0)
TAGS=0-0xffff
n=20000

MPORT=$((PORT + 1))
"$BIN/ringcast-readout" -c deploy/ringcast.ini -o readout.stats_interval=200ms -o fabric.port="$PORT" \
    -o metrics.listen="127.0.0.1:$MPORT" \
    -o readout.wait_subscribers=2 -o readout.linger=60s -o readout.mode=auto \
    -o readout.buffered_threshold=512 -o sim.0.run_chunks=$n -o sim.0.chunk_size_min=8 \
    -o sim.0.chunk_size_max=3000 --stats-json "$WORK/tsan.json" 2>"$WORK/tsan.log" &
daemon=$!
(while kill -0 "$daemon" 2>/dev/null; do
    curl -sf -o "$WORK/scrape.txt" "http://127.0.0.1:$MPORT/metrics" && echo >>"$WORK/scrapes"
    sleep 0.2
done) &
scraper=$!
start_sub tsan-a tcp msg --verify --count $n; sub_a=$sub
start_sub tsan-b tcp msg --verify --count $n; sub_b=$sub
wait_sub tsan-a "$sub_a"
wait_sub tsan-b "$sub_b"
wait_daemon tsan
wait "$scraper"
expect_gt "scrapes of /metrics during the run" "$(wc -l <"$WORK/scrapes" 2>/dev/null || echo 0)" 0

for x in a b; do
    f="$WORK/tsan-$x.json"
    grep -q '"verified":true' "$f" || { cat "$f"; fail "tsan-$x: not verified"; }
    expect_eq "tsan-$x chunks" "$(json_num chunks "$f")" $n
    expect_eq "tsan-$x gaps" "$(json_num gaps "$f")" 0
    expect_eq "tsan-$x corrupt" "$(json_num corrupt "$f")" 0
done
f="$WORK/tsan.json"
expect_eq "tsan chunks_sent" "$(json_num chunks_sent "$f")" $((2 * n))
expect_eq "tsan keys_outstanding" "$(json_num keys_outstanding "$f")" 0
expect_eq "tsan decode_errors" "$(json_num decode_errors "$f")" 0
echo "tsan_daemon: $checks checks passed"
