#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# make test: unit tests, then integration tests; one closing summary line.
BUILD=${1:-build}
mkdir -p "$BUILD/tests"
out="$BUILD/tests/summary.txt"
: > "$out"
./tests/run-unit-tests.sh "$BUILD" > "$out.u"; u=$?
cat "$out.u"
./tests/run-integration-tests.sh "$BUILD" > "$out.i"; i=$?
cat "$out.i"
cat "$out.u" "$out.i" > "$out"
p=$(sed -n 's/^[a-z]*: \([0-9]*\) passed.*/\1/p' "$out" | awk '{s+=$1} END {print s+0}')
f=$(sed -n 's/^[a-z]*: [0-9]* passed, \([0-9]*\) failed.*/\1/p' "$out" | awk '{s+=$1} END {print s+0}')
echo "$p passed, $f failed"
[ "$u" -eq 0 ] && [ "$i" -eq 0 ] && [ "$f" -eq 0 ]
