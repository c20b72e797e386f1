#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# ringcast-bench end to end, briefly: every mode (decode, raw, pipeline,
# latency, fanout, idle) at one chunk size with --json and --plot; each line is
# one JSON object with the fields of tools/README.md and sane values, the
# hygiene counters say what zero copy and buffered mode really do (no
# payload copy vs. the whole chunk copied), the CSV holds every row, the
# working directory is gone afterwards; bad options are usage errors.
. "$(dirname "$0")/lib.sh"

BENCH="$BIN/ringcast-bench"
out="$WORK/bench.jsonl"
TMPDIR="$WORK" timeout 300 "$BENCH" all --sizes 1k --seconds 0.3 --fanout-size 1k --json \
    --plot "$WORK/plot" >"$out" 2>"$WORK/bench.err" || { cat "$WORK/bench.err"; fail "ringcast-bench all failed"; }
ok "ringcast-bench all --json exit 0"

# One JSON object per line.
lines=$(wc -l <"$out")
objects=$(jq -s 'length' "$out") || fail "output is not JSON"
expect_eq "JSON objects = lines" "$objects" "$lines"

count() { jq -s "[.[] | select($1)] | length" "$out"; }
expect_eq "rows without a positive rate or cpu_s_per_gb" \
    "$(count '(.chunk_size > 0 and .gbytes_per_s > 0 and .chunks_per_s > 0 and .cpu_s_per_gb > 0) | not')" 0
for t in decode memcpy raw; do
    expect_gt "$t rows" "$(count ".test == \"$t\"")" 0
done
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
expect_eq "idle rows (poll, interrupt) with latency" \
    "$(jq -s -c '[.[] | select(.test == "idle" and .p50_us > 0) | .mode]' "$out")" '["poll","interrupt"]'
expect_eq "fanout rows with 1, 2, 4, 8 subscribers" \
    "$(jq -s -c '[.[] | select(.test == "fanout") | .subscribers]' "$out")" "[1,2,4,8]"

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

for bad in "--sizes 4" "--sizes 1k,,2k" "--seconds 0" "--endpoint udp" "nosuchmode" "raw extra"; do
    # shellcheck disable=SC2086
    "$BENCH" $bad >/dev/null 2>&1 && fail "ringcast-bench $bad accepted"
    [ $? -eq 2 ] || fail "ringcast-bench $bad: exit status not 2"
    ok "ringcast-bench $bad: usage error"
done
echo "test_bench_smoke: $checks checks passed"
