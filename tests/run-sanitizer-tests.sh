#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Run tests from a sanitizer build and fail on any sanitizer report.
#   tests/run-sanitizer-tests.sh asan BUILD            every unit test program in BUILD and
#                                                      every integration script (ASan + UBSan)
#   tests/run-sanitizer-tests.sh tsan BUILD PROGRAM... these unit test programs and the
#                                                      daemon scripts in $RCI_TSAN_SCRIPTS (TSan)
# Every sanitizer writes its reports to files under BUILD/tests/sanitizer/
# (log_path) instead of stderr, so a report is noticed even from a process
# whose exit status nobody checks (a daemon or ringcast-sub in the background,
# a subscriber killed on purpose): tests/integration/lib.sh fails the script
# that produced one, and this runner fails if any report file exists at the end.
# Each program gets at most 10 minutes (SIGKILL: a TSan process spinning in an
# uninstrumented library does not act on SIGTERM).
kind=$1
BUILD=$2
shift 2
case "$kind" in asan|tsan) ;; *) echo "usage: $0 asan|tsan BUILD" >&2; exit 2 ;; esac
[ -n "$BUILD" ] && [ -d "$BUILD/tests" ] || { echo "$0: no test programs in '$BUILD'" >&2; exit 2; }

reports="$(pwd)/$BUILD/tests/sanitizer"
rm -rf "$reports"
mkdir -p "$reports"
export RCI_SANITIZER_REPORTS="$reports"

# halt_on_error: stop at the first report (ASan does by default; UBSan and
# TSan would go on); the exit codes are distinct from the tests' own 1 and 2.
# detect_leaks: LeakSanitizer at exit (ASan builds). second_deadlock_stack and
# history_size: complete TSan traces for both sides of a race.
export ASAN_OPTIONS="halt_on_error=1:exitcode=86:detect_leaks=1:detect_stack_use_after_return=1:log_path=$reports/report"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:exitcode=87:log_path=$reports/report"
export TSAN_OPTIONS="halt_on_error=1:exitcode=88:second_deadlock_stack=1:history_size=4:suppressions=$(pwd)/tests/tsan.supp:log_path=$reports/report"

status=0
if [ "$kind" = asan ]; then
    programs=$(cd "$BUILD/tests" && ls test_* | grep -v '\.log$')
else
    programs="$*"
fi
pass=0; fail=0
for name in $programs; do
    log="$BUILD/tests/$name.log"
    if timeout -s KILL 600 "$BUILD/tests/$name" >"$log" 2>&1; then
        pass=$((pass + 1)); echo "PASS $name ($kind)"
    else
        fail=$((fail + 1)); status=1; echo "FAIL $name ($kind, log: $log)"; tail -n 40 "$log"
    fi
done
echo "unit ($kind): $pass passed, $fail failed"

if [ "$kind" = asan ]; then
    ./tests/run-integration-tests.sh "$BUILD" || status=1
else
    pass=0; fail=0
    for t in ${RCI_TSAN_SCRIPTS:-tests/integration/tsan_daemon.sh}; do
        name=$(basename "$t" .sh)
        log="$BUILD/tests/$name.log"
        if sh "$t" "$BUILD" >"$log" 2>&1; then
            pass=$((pass + 1)); echo "PASS $name"
        else
            fail=$((fail + 1)); status=1; echo "FAIL $name (log: $log)"; tail -n 60 "$log"
        fi
    done
    echo "integration: $pass passed, $fail failed"
fi

# Reports of the unit programs, and any an integration script did not claim.
found=$(find "$reports" -type f | sort)
if [ -n "$found" ]; then
    for f in $found; do echo "== sanitizer report $f"; head -n 80 "$f"; done
    echo "$kind: $(echo "$found" | wc -l) sanitizer report(s) in $reports: FAIL"
    status=1
else
    echo "$kind: no sanitizer reports"
fi
exit $status
