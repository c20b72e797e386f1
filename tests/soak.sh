#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# make soak: the daemon at full rate for SOAK_SECONDS (default 600) with three
# verifying subscribers over tcp; the third is SIGKILLed and restarted every
# SOAK_KILL_EVERY seconds (default 30). Reports chunks, bytes, gaps of the two
# survivors (must be 0), keys outstanding at the end (must be 0) and the
# daemon's RSS after warm-up and at the end (must not grow beyond warm-up).
# Usage: tests/soak.sh [BUILD]; extra daemon overrides in SOAK_OPTS.
# Exit status 0 when every check holds.
BUILD=${1:-build}
BIN="$BUILD/bin"
SECONDS_TOTAL=${SOAK_SECONDS:-600}
KILL_EVERY=${SOAK_KILL_EVERY:-30}
WARMUP=${SOAK_WARMUP:-60}
PORT=$((30000 + $$ % 20000))
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ringcast-soak.XXXXXX")
echo "soak: ${SECONDS_TOTAL} s, victim killed every ${KILL_EVERY} s, logs in $WORK"

rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
json_num() { grep -o "\"$1\":[0-9][0-9]*" "$2" | head -n 1 | cut -d: -f2; }
sub() { # sub NAME: a verifying subscriber of every tag, in the background ($!)
    "$BIN/ringcast-sub" --connect "127.0.0.1:$PORT" --tags all --verify --json \
        --duration $((SECONDS_TOTAL + 60)) >"$WORK/$1.json" 2>"$WORK/$1.log" &
}

# shellcheck disable=SC2086
"$BIN/ringcast-readout" -c deploy/ringcast.ini -o fabric.port="$PORT" -o readout.stats_interval=10s \
    -o readout.wait_subscribers=3 $SOAK_OPTS --stats-json "$WORK/daemon.json" 2>"$WORK/daemon.log" &
daemon=$!
sleep 1
sub survivor-a; a=$!
sub survivor-b; b=$!
sub victim-0; victim=$!

start=$(date +%s); kills=0; rss_warm=""
while :; do
    sleep "$KILL_EVERY"
    now=$(($(date +%s) - start))
    [ -z "$rss_warm" ] && [ "$now" -ge "$WARMUP" ] && rss_warm=$(rss_kb "$daemon")
    [ "$now" -ge "$SECONDS_TOTAL" ] && break
    kill -KILL "$victim"; wait "$victim" 2>/dev/null
    kills=$((kills + 1))
    sub "victim-$kills"; victim=$!
    echo "soak: ${now} s, victim restarted $kills times, daemon RSS $(rss_kb "$daemon") KiB"
done
rss_end=$(rss_kb "$daemon")
kill -INT "$a" "$b" "$victim"
wait "$a"; st_a=$?
wait "$b"; st_b=$?
wait "$victim"
kill -TERM "$daemon"; wait "$daemon"; st_d=$?

fails=0
check() { # check WHAT OK?
    if [ "$2" -eq 1 ]; then echo "  ok:   $1"; else echo "  FAIL: $1"; fails=$((fails + 1)); fi
}
echo "soak results (${SECONDS_TOTAL} s, $kills kills):"
for s in survivor-a survivor-b; do
    f="$WORK/$s.json"
    echo "  $s: chunks $(json_num chunks "$f"), bytes $(json_num bytes "$f"), gaps $(json_num gaps "$f"),"\
         "corrupt $(json_num corrupt "$f"), duplicates $(json_num duplicates "$f"), reordered $(json_num reordered "$f")"
    check "$s no gaps, corrupt or duplicate chunks" \
        "$([ "$(json_num gaps "$f")" = 0 ] && [ "$(json_num corrupt "$f")" = 0 ] && [ "$(json_num duplicates "$f")" = 0 ] && echo 1 || echo 0)"
done
check "survivors exit 0" "$([ "$st_a" = 0 ] && [ "$st_b" = 0 ] && echo 1 || echo 0)"
d="$WORK/daemon.json"
echo "  daemon: produced $(json_num chunks_produced "$d"), sent $(json_num chunks_sent "$d"),"\
     "failed $(json_num shares_failed "$d"), keys_outstanding $(json_num keys_outstanding "$d"), exit $st_d"
check "daemon exit 0" "$([ "$st_d" = 0 ] && echo 1 || echo 0)"
check "keys_outstanding 0" "$([ "$(json_num keys_outstanding "$d")" = 0 ] && echo 1 || echo 0)"
echo "  daemon RSS after ${WARMUP} s warm-up: ${rss_warm} KiB, at the end: ${rss_end} KiB"
check "RSS grew by less than 1 MiB after warm-up" \
    "$([ -n "$rss_warm" ] && [ $((rss_end - rss_warm)) -lt 1024 ] && echo 1 || echo 0)"
[ "$fails" -eq 0 ] && { rm -rf "$WORK"; echo "soak: passed"; exit 0; }
echo "soak: $fails check(s) failed; logs kept in $WORK"
exit 1
