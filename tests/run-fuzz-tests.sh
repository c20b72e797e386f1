#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Run every libFuzzer target BUILD/fuzz/fuzz_* for SECONDS seconds each with a
# fixed seed, starting from its committed seed corpus tests/fuzz/corpus/<name>/.
# A crash, leak, timeout or sanitizer report fails the run; the input that
# caused it is saved as BUILD/fuzz/artifacts/<name>-crash-<sha1> (reproduce:
# BUILD/fuzz/<name> FILE). Inputs the run finds go to BUILD/fuzz/work/<name>/,
# not into the committed corpus.
BUILD=${1:-build-fuzz}
SECONDS_EACH=${2:-30}
SEED=${RCI_FUZZ_SEED:-1}
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"

pass=0; fail=0
mkdir -p "$BUILD/fuzz/artifacts" "$BUILD/tests"
for fuzzer in "$BUILD"/fuzz/fuzz_*; do
    [ -x "$fuzzer" ] || continue
    name=$(basename "$fuzzer")
    seeds="tests/fuzz/corpus/$name"
    work="$BUILD/fuzz/work/$name"
    log="$BUILD/tests/$name.log"
    [ -d "$seeds" ] && [ -n "$(ls "$seeds")" ] || { echo "FAIL $name: no seed corpus in $seeds"; fail=$((fail + 1)); continue; }
    rm -rf "$work"; mkdir -p "$work"
    dict=""
    [ -f "tests/fuzz/$name.dict" ] && dict="-dict=tests/fuzz/$name.dict"
    # -timeout: one input running longer than 10 s is a hang; -rss_limit_mb: a leak or blow-up.
    set -- "$fuzzer" -seed="$SEED" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$BUILD/fuzz/artifacts/$name-" $dict "$work" "$seeds"
    echo "running: $*"
    if "$@" >"$log" 2>&1; then
        runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
        cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1)
        echo "PASS $name: $runs inputs in ${SECONDS_EACH}s from $(ls "$seeds" | wc -l) seeds, $cov, corpus $(ls "$work" | wc -l) new"
        pass=$((pass + 1))
    else
        fail=$((fail + 1)); echo "FAIL $name (log: $log)"; grep -A40 -m1 -E '==ERROR|runtime error|check failed|SUMMARY' "$log" | head -n 60
        ls "$BUILD/fuzz/artifacts/$name-"* 2>/dev/null
    fi
done
echo "fuzz: $pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
