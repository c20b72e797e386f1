#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# bench-ab.sh BEFORE AFTER [ROUNDS] [SIZES]: interleaved A/B of two builds.
#
# BEFORE and AFTER are ringcast-bench programs of two builds (for example an
# older revision built in a git worktree: `git worktree add /tmp/old REV &&
# make -C /tmp/old -j2`, then /tmp/old/build/bin/ringcast-bench). Each round
# runs `ringcast-bench pipeline --sizes SIZES --json` of both, the order
# alternating from round to round, so that a change of the machine's load
# falls on both alike: on a shared machine single tables move 2-3x between
# runs, and only interleaved runs compared by median say which build is
# faster. Prints, per row (test, fill, size), every run's GB/s and the mean
# and median of each build, and keeps all rows in $TMPDIR/bench-ab.XXXXXX.
# Needs jq. ROUNDS defaults to 3, SIZES to 8k,64k,1m; BENCH_AB_SECONDS (default 2)
# is each point's --seconds.
set -eu
[ $# -ge 2 ] || { echo "usage: bench-ab.sh BEFORE_BENCH AFTER_BENCH [ROUNDS] [SIZES]" >&2; exit 2; }
before=$1 after=$2 rounds=${3:-3} sizes=${4:-8k,64k,1m}
for b in "$before" "$after"; do
    [ -x "$b" ] || { echo "bench-ab.sh: $b is not an executable ringcast-bench" >&2; exit 2; }
done
command -v jq >/dev/null || { echo "bench-ab.sh: needs jq (apt-get install jq)" >&2; exit 2; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/bench-ab.XXXXXX")
rows="$dir/rows.jsonl"

run() { # run WHO BENCH ROUND: its rows, tagged
    # --mode only where the build knows it (older builds measure zerocopy
    # and buffered by default; newer ones add auto).
    mode=; "$2" --help 2>&1 | grep -q -- "--mode" && mode="--mode zerocopy,buffered"
    # shellcheck disable=SC2086
    "$2" pipeline --sizes "$sizes" --seconds "${BENCH_AB_SECONDS:-2}" --json $mode 2>>"$dir/stderr.log" |
        jq -c --arg who "$1" --argjson round "$3" '. + {who: $who, round: $round}' >>"$rows"
}

r=1
while [ "$r" -le "$rounds" ]; do
    if [ $((r % 2)) -eq 1 ]; then run before "$before" "$r"; run after "$after" "$r"
    else run after "$after" "$r"; run before "$before" "$r"; fi
    echo "round $r of $rounds done (load $(cut -d' ' -f1 /proc/loadavg))" >&2
    r=$((r + 1))
done

jq -s -r '
  def median: sort | if length % 2 == 1 then .[length / 2 | floor]
                     else (.[length / 2 - 1] + .[length / 2]) / 2 end;
  def mean: add / length;
  def fmt: . * 1000 | round / 1000 | tostring;
  [.[] | select(.test == "raw" or .test == "zerocopy" or .test == "buffered")]
  | group_by([.chunk_size, .test, (.fill // "-")])[]
  | . as $g
  | ([$g[] | select(.who == "before") | .gbytes_per_s]) as $b
  | ([$g[] | select(.who == "after") | .gbytes_per_s]) as $a
  | select(($b | length) > 0 and ($a | length) > 0)
  | "\($g[0].test) \($g[0].fill // "-") \($g[0].chunk_size) B: before \($b | map(fmt) | join(" "))"
    + " (mean \($b | mean | fmt), median \($b | median | fmt)) | after \($a | map(fmt) | join(" "))"
    + " (mean \($a | mean | fmt), median \($a | median | fmt)) GB/s"
' "$rows"
echo "rows: $rows" >&2
