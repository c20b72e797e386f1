#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Run every integration test script tests/integration/test_*.sh with the build dir.
BUILD=${1:-build}
pass=0; fail=0
for t in tests/integration/test_*.sh; do
    [ -f "$t" ] || continue
    name=$(basename "$t" .sh)
    log="$BUILD/tests/$name.log"
    mkdir -p "$BUILD/tests"
    if sh "$t" "$BUILD" >"$log" 2>&1; then
        pass=$((pass + 1))
        # A test that could not run here says "SKIP: why": show it, not only PASS.
        skip=$(grep -m 1 '^SKIP' "$log")
        if [ -n "$skip" ]; then echo "PASS $name ($skip)"; else echo "PASS $name"; fi
    else
        fail=$((fail + 1)); echo "FAIL $name (log: $log)"; tail -n 40 "$log"
    fi
done
echo "integration: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
