#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# ringcast-bench end to end, briefly: every mode (decode, raw, pipeline,
# latency with its wake row, fanout, idle) at one chunk size with --json and --plot; each line is
# one JSON object with the fields of tools/README.md and sane values, the
# hygiene counters say what zero copy and buffered mode really do (no
# payload copy vs. the whole chunk copied), the CSV holds every row, the
# working directory is gone afterwards; bad options are usage errors. Rows of
# the real programs split the CPU into daemon, subscribers and simulated
# card (adding up to the total); --mode auto, --rate, --elinks and
# --publisher-threads reach the daemon; decode honours --sizes; model prints
# its stages and the cores of its targets; --version and --help answer.
. "$(dirname "$0")/lib.sh"

BENCH="$BIN/ringcast-bench"
out="$WORK/bench.jsonl"
TMPDIR="$WORK" timeout --foreground -k 10 300 "$BENCH" all --sizes 1k --seconds 0.3 --fanout-size 1k --json \
    --plot "$WORK/plot" >"$out" 2>"$WORK/bench.err" || {
    cat "$WORK/bench.err"
    find "$WORK" -name daemon.log -exec tail -n 20 {} \;   # the failed run's (kept) daemon log
    fail "ringcast-bench all failed"
}
ok "ringcast-bench all --json exit 0"

# One JSON object per line: the rows, then the targets' points.
lines=$(wc -l <"$out")
objects=$(jq -s 'length' "$out") || fail "output is not JSON"
expect_eq "JSON objects = lines" "$objects" "$lines"
targets=$(jq -s '[.[] | select(.test == "target")] | length' "$out")
expect_eq "target objects with id, point, measured, limit, pass" \
    "$(jq -s '[.[] | select(.test == "target" and (.target | type) == "string" and (.point | type) == "string"
              and (.measured | type) == "number" and (.limit | type) == "number" and (.pass | type) == "boolean")]
              | length' "$out")" "$targets"
# At 1 KiB only: the latency targets (both modes) and fan-out (k = 2, 4, 8).
for id in latency_p50_us latency_p99_us; do
    expect_eq "$id points (1k/zerocopy, 1k/buffered)" \
        "$(jq -s -c "[.[] | select(.target == \"$id\") | .point]" "$out")" '["1k/zerocopy","1k/buffered"]'
done
expect_eq "fanout_vs_one points" "$(jq -s -c '[.[] | select(.target == "fanout_vs_one") | .point]' "$out")" \
    '["k=2","k=4","k=8"]'
lines=$((lines - targets))

count() { jq -s "[.[] | select(.test != \"target\" and ($1))] | length" "$out"; }
expect_eq "rows (but the wake row: no bytes) without a positive rate or cpu_s_per_gb" \
    "$(count '.test != "wake" and ((.chunk_size > 0 and .gbytes_per_s > 0 and .chunks_per_s > 0 and .cpu_s_per_gb > 0) | not)')" 0
# The bandwidth target (issue 17): all without --mode measures auto (fill none) at 1 KiB and
# reports it against the best raw row, as text on stderr and one target object on stdout (no raw row
# of 1 MiB messages at --sizes 1k: the best raw row is not the link's peak, so no pass).
expect_eq "auto fill=none row at 1 KiB (all without --mode)" "$(count '.test == "auto" and .fill == "none" and .chunk_size == 1024')" 1
expect_eq "bandwidth_auto target point 1k: ratio to the raw peak, limit 0.9, no pass without a 1 MiB raw row" \
    "$(jq -s '[.[] | select(.test == "target" and .target == "bandwidth_auto" and .point == "1k" and .measured > 0
              and .limit == 0.9 and .pass == false)] | length' "$out")" 1
grep -q "bandwidth: what auto mode picks >= 0.90 x the link's peak .*: 1k [0-9.]* \(pass\|MISS\)" "$WORK/bench.err" ||
    fail "no bandwidth target line with the 1k ratio on stderr"
ok "bandwidth target line on stderr"
# The CPU ceilings beside it, recomputed here from the JSON rows: nproc / (the raw row with the least
# CPU per GB + the decoder's at 1 KiB + the auto row's simulated card [+ the memcpy row's CPU per GB, for
# a copying delivery]) / the best raw row's GB/s.
check_ceiling() { # check_ceiling LINE_TITLE COPY(0|1)
    want=$(jq -s --argjson cores "$(nproc)" --argjson copy "$2" '
        ([.[] | select(.test == "raw" and .cpu_s_per_gb > 0) | .cpu_s_per_gb] | min) as $raw
        | ([.[] | select(.test == "raw") | .gbytes_per_s] | max) as $peak
        | ([.[] | select(.test == "decode" and .chunk_size == 1024) | .cpu_s_per_gb] | first) as $dec
        | ([.[] | select(.test == "auto" and .fill == "none" and .chunk_size == 1024) | .sim_cpu_s_per_gb] | first) as $sim
        | ([.[] | select(.test == "memcpy") | .cpu_s_per_gb] | first) as $memcpy
        | $cores / ($raw + $dec + $sim + $copy * $memcpy) / $peak' "$out")
    got=$(sed -n "s/^  $1 .*: 1k \\([0-9.]*\\) (.*/\\1/p" "$WORK/bench.err")
    [ -n "$got" ] || { grep "ceiling" "$WORK/bench.err"; fail "no '$1' line with a 1k point on stderr"; }
    awk -v a="$got" -v b="$want" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 0.011 + 0.001 * b) }' ||
        fail "$1 at 1k: printed $got, the rows give $want"
    ok "$1 at 1k = $got (the rows give $want)"
}
check_ceiling "bandwidth ceiling from CPU" 0
check_ceiling "bandwidth ceiling of a copying delivery" 1
for t in decode memcpy raw; do
    expect_gt "$t rows" "$(count ".test == \"$t\"")" 0
done
expect_eq "decode rows at the --sizes sizes only" "$(jq -s -c '[.[] | select(.test == "decode") | .chunk_size]' "$out")" "[1024]"
# Every row of the real programs: daemon, subscriber and simulator CPU per GB,
# adding up to cpu_s_per_gb (each process's wait4; the card's thread is moved
# from the daemon to the simulator).
real_rows='.test == "zerocopy" or .test == "buffered" or .test == "latency" or .test == "fanout" or .test == "idle"'
expect_gt "rows of the real programs" "$(count "$real_rows")" 0
expect_eq "real-program rows whose CPU split is missing or does not add up" \
    "$(count "($real_rows) and ((.daemon_cpu_s_per_gb > 0 and .sub_cpu_s_per_gb >= 0 and .sim_cpu_s_per_gb >= 0
              and ((.daemon_cpu_s_per_gb + .sub_cpu_s_per_gb + .sim_cpu_s_per_gb - .cpu_s_per_gb) | fabs)
                  <= 0.01 * .cpu_s_per_gb + 0.002) | not)")" 0
expect_eq "sim-process rows (idle) with the simulator's own CPU" "$(count '.test == "idle" and .sim_cpu_s_per_gb > 0')" 2
for mode in zerocopy buffered; do
    for fill in none pattern; do
        expect_eq "$mode fill=$fill rows with ratio_to_raw, mallocs_per_chunk, copied_bytes_per_chunk" \
            "$(count ".test == \"$mode\" and .fill == \"$fill\" and .chunk_size == 1024 and .ratio_to_raw > 0
                      and (.mallocs_per_chunk | type) == \"number\" and .copied_bytes_per_chunk >= 0")" 1
    done
done
# Zero copy copies no payload byte; buffered copies every chunk whole.
expect_eq "zerocopy rows copying payload" "$(count '.test == "zerocopy" and .copied_bytes_per_chunk != 0')" 0
expect_eq "buffered rows copying 1024 B per chunk" "$(count '.test == "buffered" and .copied_bytes_per_chunk == 1024')" 2
for mode in zerocopy buffered; do
    expect_eq "$mode latency row with ordered percentiles" \
        "$(count ".test == \"latency\" and .mode == \"$mode\" and .p50_us > 0 and .p50_us <= .p99_us
                  and .p99_us <= .p999_us and .p999_us <= .max_us")" 1
done
# The latency mode's wake row (one eventfd wake-up of a thread on another, idle CPU) and the floor
# line beside target 3: 3 hand-offs x the row's p50, recomputed here. With one CPU: no row, and
# the line says "not measured".
if [ "$(nproc)" -lt 2 ]; then
    expect_eq "wake rows with one CPU" "$(count '.test == "wake"')" 0
    grep -q "^  latency floor from wake-ups .*: not measured" "$WORK/bench.err" || fail "floor line with one CPU"
else
    expect_eq "one wake row with ordered percentiles" \
        "$(count '.test == "wake" and .p50_us > 0 and .p50_us <= .p99_us and .p99_us <= .p999_us and .p999_us <= .max_us')" 1
    want=$(jq -s '[.[] | select(.test == "wake") | .p50_us * 3] | first | round' "$out")
    got=$(sed -n 's/^  latency floor from wake-ups .*: p50 \([0-9]*\) us (3 x .*/\1/p' "$WORK/bench.err")
    [ -n "$got" ] || { grep "latency floor" "$WORK/bench.err"; fail "no latency floor line on stderr"; }
    [ "$(( got - want ))" -ge -1 ] && [ "$(( got - want ))" -le 1 ] ||
        fail "latency floor: printed $got us, the wake row gives $want us"
    ok "latency floor = $got us (3 x the wake row's p50)"
fi
expect_eq "idle rows (poll, interrupt) with latency" \
    "$(jq -s -c '[.[] | select(.test == "idle" and .p50_us > 0) | .mode]' "$out")" '["poll","interrupt"]'
expect_eq "fanout rows with 1, 2, 4, 8 subscribers" \
    "$(jq -s -c '[.[] | select(.test == "fanout") | .subscribers]' "$out")" "[1,2,4,8]"

# mode rma (in all): raw-rma beside raw, and zero copy with send and RMA
# delivery, at 8 KiB and 64 KiB with 64 KiB blocks; its two targets.
for size in 8192 65536; do
    expect_eq "raw-rma row at $size B" "$(count ".test == \"raw-rma\" and .chunk_size == $size")" 1
    for d in send rma; do
        expect_eq "zerocopy $d-delivery row at $size B with 64 KiB blocks and the subscriber's CPU" \
            "$(count ".test == \"zerocopy\" and .delivery == \"$d\" and .block_size == 65536 and .chunk_size == $size
                      and .sub_cpu_s_per_gb > 0")" 1
    done
done
expect_eq "pipeline rows without a delivery" "$(count '(.test == "zerocopy" or .test == "buffered") and (.delivery | not)')" 0
for id in rma_vs_raw_rma rma_sub_cpu_vs_send; do
    expect_eq "$id points" "$(jq -s -c "[.[] | select(.target == \"$id\") | .point]" "$out")" '["8k","64k"]'
done

grep -q "^targets" "$WORK/bench.err" || fail "no targets summary on stderr"
ok "targets summary on stderr"
expect_eq "CSV rows (header + one per JSON line)" "$(wc -l <"$WORK/plot/bench.csv")" $((lines + 1))
if command -v gnuplot >/dev/null 2>&1; then
    [ -s "$WORK/plot/throughput.png" ] && [ -s "$WORK/plot/chunk_rate.png" ] || fail "gnuplot installed but no PNG"
    ok "PNG plots written"
else
    grep -q "gnuplot is not installed" "$WORK/bench.err" || fail "missing gnuplot not reported"
    ok "missing gnuplot reported, CSV written"
fi
expect_eq "working directories left behind" "$(find "$WORK" -maxdepth 1 -name 'ringcast-bench.*' | wc -l)" 0

# The new knobs reach the daemon: auto mode (at 256 B below buffered_threshold,
# so buffered), a limited rate, 4 e-links, 2 publisher threads.
out2="$WORK/bench-knobs.jsonl"
TMPDIR="$WORK" timeout --foreground -k 10 120 "$BENCH" pipeline --sizes 256 --seconds 0.3 --mode auto --rate 20Mchunks/s \
    --elinks 4 --publisher-threads 2 --json >"$out2" 2>"$WORK/bench-knobs.err" ||
    { cat "$WORK/bench-knobs.err"; fail "ringcast-bench pipeline --mode auto ... failed"; }
expect_eq "auto rows (fill none, pattern) copying the 256 B chunks (auto buffers below 16 KiB)" \
    "$(jq -s '[.[] | select(.test == "auto" and .chunk_size == 256 and .copied_bytes_per_chunk == 256)] | length' "$out2")" 2
expect_eq "zerocopy/buffered rows without --mode naming them" \
    "$(jq -s '[.[] | select(.test == "zerocopy" or .test == "buffered")] | length' "$out2")" 0
expect_eq "auto rows: only the two of --mode auto (no extra fill=none row with --mode given)" \
    "$(jq -s '[.[] | select(.test == "auto")] | length' "$out2")" 2

# model: two sizes, an extra target; stage rows for every stage and size,
# target rows with positive cores. 1 s runs: a stage's CPU is the difference
# of a run and its half, and at 0.3 s the noise of a run's fixed costs (start,
# drain, the end-of-run BYE) once made the publisher's difference 0 (a loaded CI run).
out3="$WORK/bench-model.jsonl"
TMPDIR="$WORK" timeout --foreground -k 10 120 "$BENCH" model --sizes 256,8k --seconds 1 --target 1GB/s,1k --json \
    >"$out3" 2>"$WORK/bench-model.err" || { cat "$WORK/bench-model.err"; fail "ringcast-bench model failed"; }
expect_eq "model_stage rows (5 stages x 2 sizes) with cpu_s_per_chunk and cpu_s_per_gb" \
    "$(jq -s '[.[] | select(.test == "model_stage" and .cpu_s_per_chunk >= 0 and .cpu_s_per_gb >= 0)] | length' "$out3")" 10
expect_gt "model_stage decode and send+completion rows above 0" \
    "$(jq -s '[.[] | select(.test == "model_stage" and (.stage == "decode" or .stage == "send+completion")
              and .cpu_s_per_chunk > 0)] | length' "$out3")" 3
expect_eq "model_target rows (the issue's two and --target) with cores" \
    "$(jq -s -c '[.[] | select(.test == "model_target" and .cores_daemon > 0 and .cores_subscriber > 0) | .target]' "$out3")" \
    '["24 links x 1 MHz x 100 B","2 x 200 Gb/s of 8 KiB chunks","1GB/s,1k"]'
expect_eq "model's 8 KiB target chunk rate (400 Gb/s / 8 / 8192)" \
    "$(jq -s '[.[] | select(.test == "model_target" and .chunk_size == 8192) | .chunks_per_s] | .[0]' "$out3")" 6103516

"$BENCH" --version | grep -q "^ringcast-bench [0-9]" || fail "--version"
ok "--version prints the version"
for opt in --elinks --rate --mode --delivery --publisher-threads --target --version model rma; do
    "$BENCH" --help | grep -q -- "$opt" || fail "--help does not mention $opt"
done
ok "--help names the new options and model"

for bad in "--sizes 4" "--sizes 1k,,2k" "--seconds 0" "--endpoint udp" "nosuchmode" "raw extra" \
           "--elinks 0" "--elinks 2049" "--rate fast" "--mode copy" "--mode auto,auto" \
           "--publisher-threads 17" "--target 1GB/s" "--target unlimited,1k" "--delivery write" \
           "--delivery rma,rma"; do
    # shellcheck disable=SC2086
    "$BENCH" $bad >/dev/null 2>&1 && fail "ringcast-bench $bad accepted"
    [ $? -eq 2 ] || fail "ringcast-bench $bad: exit status not 2"
    ok "ringcast-bench $bad: usage error"
done
echo "test_bench_smoke: $checks checks passed"
