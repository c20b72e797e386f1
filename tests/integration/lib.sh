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
    # A failed check leaves its daemon and subscribers running, and a daemon
    # without a run limit runs for ever: end them (they would hold the wait
    # below until the runner's 900 s limit, and go on loading the machine).
    [ "$st" -eq 0 ] || pkill -TERM -P $$ 2>/dev/null || true
    end_children 60
    [ -z "$RCI_SANITIZER_REPORTS" ] || sanitizer_reports_check || st=1
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
# end_children SECONDS: wait for this script's programs still running (under
# a sanitizer they write their reports when they end), SECONDS at most, then
# SIGKILL what is left. Every status is ignored (|| true): some scripts run
# with set -e, and a failing command here would end them with status 1.
end_children() {
    ec_kids=$(pgrep -P $$) || true
    [ -n "$ec_kids" ] || return 0
    ( sleep "$1"; kill -KILL $ec_kids 2>/dev/null ) & ec_dog=$!
    wait $ec_kids 2>/dev/null || true
    pkill -P $ec_dog 2>/dev/null || true
    kill $ec_dog 2>/dev/null || true
}

fail() { echo "FAIL: $*" >&2; exit 1; }

# port_base K: the first port of this script: a spot in [RCI_PORT_FIRST,
# RCI_PORT_FIRST + RCI_PORT_SPAN) picked from the PID and the script's own
# offset K. tests/run-integration-tests.sh gives scripts that run at the same
# time disjoint ranges; alone the range is 10000-31999. Every range stays
# below Linux's ephemeral ports (32768-60999, ip_local_port_range), which
# the kernel hands to outgoing connections: a CI run's daemon found its port
# 35086 taken ("Address already in use") by some client's local end. ($$ is
# this script's PID also inside $(...).)
port_base() { echo $(( ${RCI_PORT_FIRST:-10000} + ($$ + $1) % ${RCI_PORT_SPAN:-22000} )); }
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
# start_sub NAME PROVIDER ENDPOINT OPTIONS...: a subscriber in the background
# ($sub), ended with SIGTERM after $sub_limit seconds (60 unless set).
start_sub() {
    sname=$1; prov=$2; ep=$3; shift 3
    # -k: a subscriber that does not end on SIGTERM is killed 10 s later, so
    # the test goes on (every script's `timeout` has a -k). Under ASan, an
    # ending ringcast-sub sometimes never finishes LeakSanitizer's exit-time
    # scan: its tracer waits in waitpid for the stopped main thread, which
    # runs on (seen in CI and in 2 of 6 test_control runs on a loaded machine;
    # the cause is not found). --foreground keeps timeout from following the
    # TERM with a SIGCONT to the group, one signal less at that moment.
    timeout --foreground -k 10 "${sub_limit:-60}" "$BIN/ringcast-sub" --connect "127.0.0.1:$PORT" --provider "$prov" --endpoint "$ep" \
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

# wait_listening NAME: until the daemon (log $WORK/NAME.log, pid $daemon)
# listens (30 s at most). A subscriber with a short --duration started before
# that can spend its run on refused connects and end before a loaded daemon
# reads its handshake (CI: "never connected ... Connection refused").
wait_listening() {
    wl_i=0
    until grep -q "listening on" "$WORK/$1.log"; do
        kill -0 "$daemon" 2>/dev/null || { cat "$WORK/$1.log"; fail "$1: the daemon ended before it listened"; }
        wl_i=$((wl_i + 1)); [ $wl_i -lt 600 ] || { cat "$WORK/$1.log"; fail "$1: never listening"; }
        sleep 0.05
    done
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

# show_stuck PID: what a process that should have ended is doing: each
# thread's state, wait channel and tracer, its child processes (LeakSanitizer
# runs its exit-time scan from one, which stops every thread with ptrace),
# and each thread's backtrace when gdb is installed and can attach.
show_stuck() {
    for ss_t in /proc/"$1"/task/*; do
        [ -d "$ss_t" ] || continue
        echo "  thread ${ss_t##*/} ($(cat "$ss_t/comm" 2>/dev/null)):" \
            "$(grep -E '^(State|TracerPid):' "$ss_t/status" 2>/dev/null | tr '\t\n' '  ')wchan $(cat "$ss_t/wchan" 2>/dev/null)"
    done
    ps -o pid,stat,wchan:32,comm --ppid "$1" 2>/dev/null | sed 's/^/  child: /'
    if command -v gdb >/dev/null 2>&1; then
        timeout -k 5 60 gdb -p "$1" -batch -ex 'thread apply all bt 16' 2>&1 | grep -E '^(Thread|#)' | head -n 300
    fi
}

# wait_bounded PID SECONDS WHAT: wait for the background process PID, at
# most SECONDS; its exit status in $wb_st. One still running then is shown
# (show_stuck), killed, and the script fails naming WHAT: a hung process
# costs this script, not the whole run's 900 s limit, and leaves a trace of
# where it hung instead of a bare timeout.
wait_bounded() {
    wb_end=$(($(date +%s) + $2))
    while [ -d "/proc/$1" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null; do
        if [ "$(date +%s)" -ge $wb_end ]; then
            echo "$3: pid $1 still running after $2 s:" >&2
            show_stuck "$1" >&2
            kill -KILL "$1" 2>/dev/null; wait "$1" 2>/dev/null
            fail "$3: did not end within $2 s (its threads above)"
        fi
        sleep 0.1
    done
    wb_st=0; wait "$1" || wb_st=$?
}

# wait_daemon NAME: the daemon's end, exit status 0. 300 s is far beyond any
# run here (the longest linger is 40 s), so only a hang reaches it.
wait_daemon() {
    wait_bounded "$daemon" 300 "$1: the daemon"; st=$wb_st
    [ "$st" -eq 0 ] || { cat "$WORK/$1.log"; fail "$1: daemon exit status $st"; }
}

wait_sub() { # wait_sub NAME PID
    wait "$2"; st=$?
    [ "$st" -eq 0 ] || { cat "$WORK/$1.log" "$WORK/$1.json"; fail "$1: ringcast-sub exit status $st"; }
}
