# SPDX-License-Identifier: BSD-3-Clause
# Shared helpers for the integration tests (sourced, not run).
BUILD=${1:-build}
BIN="$BUILD/bin"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ringcast-it.XXXXXX")
checks=0

# Sanitizer builds (tests/run-sanitizer-tests.sh) write reports to files in
# $RCI_SANITIZER_REPORTS instead of stderr, because many programs here run in
# the background or are killed on purpose and nobody looks at their exit
# status. Any report written while this script ran fails it; the report is
# shown and kept (renamed after the script) so the runner fails too.
sanitizer_reports_check() {
    [ -n "$RCI_SANITIZER_REPORTS" ] || return 0
    script=$(basename "$0" .sh)
    n=0
    for f in "$RCI_SANITIZER_REPORTS"/report.*; do
        [ -f "$f" ] || continue
        n=$((n + 1))
        echo "SANITIZER REPORT ($f):" >&2
        cat "$f" >&2
        mv "$f" "$RCI_SANITIZER_REPORTS/$script.$(basename "$f")"
    done
    [ "$n" -eq 0 ] || { echo "FAIL: $n sanitizer report(s) while $script ran" >&2; return 1; }
}
# under_sanitizer: true in a sanitizer build's run. Some checks measure what
# the sanitizer runtime changes, and should be skipped then: ASan's mlock()
# interceptor does nothing (VmLck stays 0), and its quarantine of freed memory
# (256 MiB) makes RSS grow.
under_sanitizer() { [ -n "$RCI_SANITIZER_REPORTS" ]; }

# on_exit [STATUS]: the script's end. A trap that runs other commands first
# must save $? and pass it (trap 'st0=$?; cleanup; on_exit "$st0"' EXIT):
# on_exit would otherwise take the last of those commands' status for the
# script's, and a failed script would exit 0.
on_exit() {
    st=${1:-$?}
    if [ -n "$RCI_SANITIZER_REPORTS" ]; then
        wait 2>/dev/null   # programs still in the background write their reports when they end
        sanitizer_reports_check || st=1
    fi
    # A failed script keeps its daemon and subscriber logs: the runner's log
    # has only the failing check's line, and a CI clone is removed after it.
    if [ "$st" -eq 0 ]; then
        rm -rf "$WORK"
    else
        echo "$(basename "$0"): its files (daemon and subscriber logs) are kept in $WORK" >&2
    fi
    exit $st
}
trap on_exit EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

# port_base K: the first port of this script: a spot in [RCI_PORT_FIRST,
# RCI_PORT_FIRST + RCI_PORT_SPAN) picked from the PID and the script's own
# offset K. tests/run-integration-tests.sh gives scripts that run at the same
# time disjoint ranges; alone the range is 20000-39999. ($$ is this script's
# PID also inside $(...).)
port_base() { echo $(( ${RCI_PORT_FIRST:-20000} + ($$ + $1) % ${RCI_PORT_SPAN:-20000} )); }
ok()   { checks=$((checks + 1)); echo "ok: $*"; }

# pub NAME FIELD: a counter of the publisher object in $WORK/NAME.json (the daemon's JSON).
pub() { grep -o '"publisher":{[^}]*}' "$WORK/$1.json" | head -n 1 | grep -o "\"$2\":[0-9]*" | cut -d: -f2; }

# json_num KEY FILE: the first numeric value of "KEY" in a JSON file.
json_num() { grep -o "\"$1\":[0-9][0-9]*" "$2" | head -n 1 | cut -d: -f2; }

# expect_eq WHAT ACTUAL EXPECTED
expect_eq() { [ "$2" = "$3" ] || fail "$1: got '$2', expected '$3'"; ok "$1 = $3"; }
# expect_gt WHAT ACTUAL MIN
expect_gt() { [ -n "$2" ] && [ "$2" -gt "$3" ] || fail "$1: got '$2', expected > $3"; ok "$1 = $2 > $3"; }

# check_sub_exact NAME CHUNKS [KEY...]: ringcast-sub --verify --json's
# $WORK/NAME.json got exactly CHUNKS chunks, verified, with no gap, no
# corruption, no duplicate, nothing lost or late in the stream and no bad RMA
# record; each further KEY must be 0 too.
check_sub_exact() {   # (sh has no locals: cse_* names, so the caller's $name and $n stay)
    cse_f="$WORK/$1.json"; cse_name=$1; cse_n=$2; shift 2
    grep -q '"verified":true' "$cse_f" || { cat "$cse_f"; fail "$cse_name: not verified"; }
    expect_eq "$cse_name chunks" "$(json_num chunks "$cse_f")" "$cse_n"
    for cse_k in gaps corrupt duplicates seq_lost seq_late rma_bad_records "$@"; do
        expect_eq "$cse_name $cse_k" "$(json_num "$cse_k" "$cse_f")" 0
    done
}

# until_logged FILE PATTERN WHAT: wait (20 s at most) until FILE has a line
# matching PATTERN; else show FILE and fail with WHAT.
until_logged() {
    ul_i=0
    until grep -q "$2" "$1" 2>/dev/null; do
        ul_i=$((ul_i + 1)); [ $ul_i -lt 400 ] || { cat "$1"; fail "$3"; }
        sleep 0.05
    done
}

# shm_lock_hazard NAME STATUS PROVIDER: true when the daemon ($WORK/NAME.log)
# ended with STATUS 3 because a publisher thread got stuck posting to a
# subscriber SIGKILLed over shm while it held its region's lock (libfabric
# 1.17; net/README.md, "A subscriber killed over shm"). Tests that kill shm
# subscribers check what they can of such a run and run it again.
shm_lock_hazard() {
    [ "$2" -eq 3 ] && [ "$3" = shm ] && grep -q "publisher thread [0-9]* is stuck" "$WORK/$1.log"
}

# shm_hazard_checked NAME STATUS PROVIDER OTHER OTHER-PID: when
# shm_lock_hazard holds, end the other subscriber (OTHER, its pid), check
# that what it got before is sound and say so (true); false otherwise.
shm_hazard_checked() {
    shm_lock_hazard "$1" "$2" "$3" || return 1
    kill -TERM "$5" 2>/dev/null
    wait "$5"
    for shc_k in gaps corrupt duplicates; do
        expect_eq "$4 $shc_k (before the stuck post)" "$(json_num "$shc_k" "$WORK/$4.json")" 0
    done
    ok "$1: libfabric 1.17 shm's dead-peer lock hit: the stuck thread was named, exit status 3"
}

# For tests with subscribers ($PORT, $TAGS set by the test):
# start_sub NAME PROVIDER ENDPOINT OPTIONS...: a subscriber in the background ($sub).
start_sub() {
    sname=$1; prov=$2; ep=$3; shift 3
    # -k: a subscriber that does not end on SIGTERM is killed 10 s later, so
    # the test goes on (every script's `timeout` has a -k). Under ASan, an
    # ending ringcast-sub sometimes never finishes LeakSanitizer's exit-time
    # scan: its tracer waits in waitpid for the stopped main thread, which
    # runs on (seen in CI and in 2 of 6 test_control runs on a loaded machine;
    # the cause is not found). --foreground keeps timeout from following the
    # TERM with a SIGCONT to the group, one signal less at that moment.
    timeout --foreground -k 10 60 "$BIN/ringcast-sub" --connect "127.0.0.1:$PORT" --provider "$prov" --endpoint "$ep" \
        --tags "$TAGS" --json "$@" >"$WORK/$sname.json" 2>"$WORK/$sname.log" &
    sub=$!
}

# start_daemon NAME OVERRIDES...: ringcast-readout on deploy/ringcast.ini and
# $PORT in the background ($daemon); log and --stats-json in $WORK/NAME.log/.json.
start_daemon() {
    name=$1; shift
    "$BIN/ringcast-readout" -c deploy/ringcast.ini -o readout.stats_interval=0 \
        -o fabric.port="$PORT" "$@" --stats-json "$WORK/$name.json" 2>"$WORK/$name.log" &
    daemon=$!
}

# wait_cards_started NAME: until the daemon (log $WORK/NAME.log) saw its
# readout.wait_subscribers subscribe and started the cards (15 s at most).
wait_cards_started() {
    i=0
    until grep -q "subscribed: starting the cards" "$WORK/$1.log"; do
        i=$((i + 1)); [ $i -lt 300 ] || { cat "$WORK/$1.log"; fail "$1: subscribers never subscribed"; }
        sleep 0.05
    done
}

wait_daemon() { # wait_daemon NAME
    wait "$daemon"; st=$?
    [ "$st" -eq 0 ] || { cat "$WORK/$1.log"; fail "$1: daemon exit status $st"; }
}

wait_sub() { # wait_sub NAME PID
    wait "$2"; st=$?
    [ "$st" -eq 0 ] || { cat "$WORK/$1.log" "$WORK/$1.json"; fail "$1: ringcast-sub exit status $st"; }
}
