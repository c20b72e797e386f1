#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Run every CUnit test binary under $1/tests; print one summary line.
BUILD=${1:-build}
pass=0; fail=0; failed=""
for t in "$BUILD"/tests/test_*; do
    [ -x "$t" ] || continue
    name=$(basename "$t")
    log="$BUILD/tests/$name.log"
    if "$t" >"$log" 2>&1; then
        pass=$((pass + 1)); echo "PASS $name"
    else
        fail=$((fail + 1)); failed="$failed $name"; echo "FAIL $name (log: $log)"
        tail -n 40 "$log"
    fi
done
echo "unit: $pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
