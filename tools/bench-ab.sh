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
# is each point's --seconds. BENCH_AB_MODE=rma runs `ringcast-bench rma` instead
# (SIZES default 8k,64k) and prints, besides the rows' GB/s (the pipeline rows
# split by delivery), each run's value of the RMA targets (RMA delivery / raw-rma,
# subscriber CPU s/GB RMA / send) with mean and median per build. Pipeline rows'
# daemon and subscriber CPU s/GB are compared in either mode. BENCH_AB_MODES
# (default zerocopy,buffered) is the pipeline's --mode list, for example
# BENCH_AB_MODES=buffered to time buffered delivery alone.
set -eu
[ $# -ge 2 ] || { echo "usage: bench-ab.sh BEFORE_BENCH AFTER_BENCH [ROUNDS] [SIZES]" >&2; exit 2; }
abmode=${BENCH_AB_MODE:-pipeline}
case $abmode in pipeline) defsizes=8k,64k,1m ;; rma) defsizes=8k,64k ;;
    *) echo "bench-ab.sh: BENCH_AB_MODE is pipeline or rma" >&2; exit 2 ;; esac
modes=${BENCH_AB_MODES:-zerocopy,buffered}
case $modes in *[!a-z,]*|'') echo "bench-ab.sh: BENCH_AB_MODES is a list of zerocopy, buffered, auto" >&2; exit 2 ;; esac
before=$1 after=$2 rounds=${3:-3} sizes=${4:-$defsizes}
for b in "$before" "$after"; do
    [ -x "$b" ] || { echo "bench-ab.sh: $b is not an executable ringcast-bench" >&2; exit 2; }
done
command -v jq >/dev/null || { echo "bench-ab.sh: needs jq (apt-get install jq)" >&2; exit 2; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/bench-ab.XXXXXX")
rows="$dir/rows.jsonl"

run() { # run WHO BENCH ROUND: its rows, tagged
    # --mode only where the build knows it (older builds measure zerocopy
    # and buffered by default; newer ones add auto).
    mode=; [ "$abmode" = pipeline ] && "$2" --help 2>&1 | grep -q -- "--mode" && mode="--mode $modes"
    # shellcheck disable=SC2086
    "$2" "$abmode" --sizes "$sizes" --seconds "${BENCH_AB_SECONDS:-2}" --json $mode 2>>"$dir/stderr.log" |
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
  def line($name; $b; $a; $unit):
    "\($name): before \($b | map(fmt) | join(" ")) (mean \($b | mean | fmt), median \($b | median | fmt))"
    + " | after \($a | map(fmt) | join(" ")) (mean \($a | mean | fmt), median \($a | median | fmt))\($unit)";
  . as $all
  | ([$all[] | select(.test == "raw" or .test == "raw-rma" or .test == "zerocopy" or .test == "buffered")]
     | group_by([.chunk_size, .test, (.fill // "-"), (.delivery // "-")])[]
     | . as $g
     | ([$g[] | select(.who == "before") | .gbytes_per_s]) as $b
     | ([$g[] | select(.who == "after") | .gbytes_per_s]) as $a
     | select(($b | length) > 0 and ($a | length) > 0)
     | line("\($g[0].test) \($g[0].fill // "-") \($g[0].delivery // "")\(if $g[0].delivery then " " else "" end)\($g[0].chunk_size) B"; $b; $a; " GB/s")),
    ([$all[] | select(.test == "target" and (.target | startswith("rma_")))]
     | group_by([.target, .point])[]
     | . as $g
     | ([$g[] | select(.who == "before") | .measured]) as $b
     | ([$g[] | select(.who == "after") | .measured]) as $a
     | select(($b | length) > 0 and ($a | length) > 0)
     | line("target \($g[0].target) \($g[0].point)"; $b; $a; " (limit \($g[0].limit))")),
    ([$all[] | select(.delivery and .sub_cpu_s_per_gb)]
     | group_by([.chunk_size, .test, (.fill // "-"), .delivery])[]
     | . as $g
     | ("sub", "daemon") as $who
     | ([$g[] | select(.who == "before") | .["\($who)_cpu_s_per_gb"]]) as $b
     | ([$g[] | select(.who == "after") | .["\($who)_cpu_s_per_gb"]]) as $a
     | select(($b | length) > 0 and ($a | length) > 0)
     | line("\($who) CPU \($g[0].test) \($g[0].fill // "-") \($g[0].delivery) \($g[0].chunk_size) B"; $b; $a; " s/GB"))
' "$rows"
echo "rows: $rows" >&2
