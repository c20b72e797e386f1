#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Buffered pages leave when the publisher thread's queues run empty, not
# after flush_timeout (pipeline/README.md, "Buffered pages: sent when the
# queues run empty"): buffered mode with flush_timeout = 10 s, 150 chunks of
# 1 KiB at 50 chunks/s stamped by the simulator (fill = timestamp; a 256 KiB
# page holds all of them), one subscriber measuring card-write-to-callback
# latency. Every chunk arrives, the pages went out as the queue emptied
# (pages_flushed_idle > 0, none by the timeout) and the median latency is far
# below half a second: waiting for the timeout or the end of the 3 s run it
# was over a second. About 5 s.
. "$(dirname "$0")/lib.sh"
cleanup() { rc=$?; for p in $daemon $sub; do kill "$p" 2>/dev/null; done; (exit $rc); on_exit; }
trap cleanup EXIT

PORT=$(port_base 18000)
TAGS=0-0xffff
n=150

start_daemon idle -o readout.mode=buffered -o fabric.flush_timeout=10s -o readout.wait_subscribers=1 \
    -o fabric.buffered_page_size=256k -o fabric.rx_buffer_size=256k \
    -o sim.0.fill=timestamp -o sim.0.rate=50chunks/s -o sim.0.run_chunks=$n
start_sub idle-a tcp msg --latency --rx-buffer-size 262144 --count $n; sub_a=$sub
wait_sub idle-a "$sub_a"
wait_daemon idle
f="$WORK/idle-a.json"
expect_eq "subscriber chunks" "$(json_num chunks "$f")" $n
expect_eq "latency samples" "$(json_num samples "$f")" $n
expect_gt "pages_flushed_idle" "$(pub idle pages_flushed_idle)" 0
expect_eq "pages_flushed_by_timeout" "$(pub idle pages_flushed_by_timeout)" 0
p50=$(json_num p50_us "$f")
[ -n "$p50" ] && [ "$p50" -lt 500000 ] || { cat "$f"; fail "latency p50 ${p50} us: the pages waited (flush_timeout 10 s)"; }
ok "latency p50 $p50 us < 500 ms (flush_timeout 10 s)"
echo "test_daemon_latency: $checks checks passed"
