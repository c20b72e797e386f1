#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Output files that cannot be written (issue 12 items 3 and 5).
# 1. ringcast-readout --stats-json to a path that cannot be written is refused
#    at start (exit 2, the cards never start), not after the run.
# 2. ringcast-sub --out on a full disk (/dev/full) and past a file size limit
#    (RLIMIT_FSIZE, SIGXFSZ ignored by ringcast-sub): every record is counted,
#    written or lost (written + lost = received), the file ends at the last
#    complete record (its size = records written x record size), the reason is
#    said and the exit status is 1.
. "$(dirname "$0")/lib.sh"

PORT=$(port_base 7919)
TAGS=all
N=20000

# --- 1. --stats-json checked at start ---------------------------------------
stats_refused() { # stats_refused NAME PATH
    timeout --foreground -k 30 20 "$BIN/ringcast-readout" -c deploy/ringcast.ini -o readout.stats_interval=0 \
        -o fabric.port="$PORT" -o sim.0.run_chunks=1000 --stats-json "$2" 2>"$WORK/$1.log"; st=$?
    [ "$st" -eq 2 ] || { cat "$WORK/$1.log"; fail "$1: exit status $st, expected 2"; }
    grep -q "^ringcast-readout: --stats-json $2: cannot write: " "$WORK/$1.log" \
        || { cat "$WORK/$1.log"; fail "$1: no message naming --stats-json"; }
    ! grep -q "starting with\|summary:" "$WORK/$1.log" || { cat "$WORK/$1.log"; fail "$1: the daemon ran"; }
    ok "$1: --stats-json $2 refused at start: $(head -n 1 "$WORK/$1.log")"
}
stats_refused stats-no-dir "$WORK/no-such-dir/stats.json"
mkdir "$WORK/a-dir"
stats_refused stats-is-dir "$WORK/a-dir"

# --- 2. ringcast-sub --out that cannot hold everything ------------------------
# 1 KiB chunks: every record is 16 + 1024 bytes
REC=1040
out_run() { # out_run NAME OUTPATH [ULIMIT_F]: a fixed run of N chunks into --out
    run=$1   # not "name": start_daemon sets that
    PORT=$((PORT + 1))
    start_daemon "$run-daemon" -o readout.wait_subscribers=1 -o readout.linger=20s \
        -o sim.0.run_chunks=$N -o sim.0.chunk_size_min=1024 -o sim.0.chunk_size_max=1024
    limit=${3:-unlimited}
    ( ulimit -f "$limit" && exec timeout --foreground -k 10 60 "$BIN/ringcast-sub" --connect "127.0.0.1:$PORT" \
        --tags "$TAGS" --json --count "$N" --out "$2" ) >"$WORK/$run.json" 2>"$WORK/$run.log"
    sub_st=$?
    wait_daemon "$run-daemon"
}
check_out_accounting() { # check_out_accounting NAME OUTPATH
    run=$1
    [ "$sub_st" -eq 1 ] || { cat "$WORK/$run.log" "$WORK/$run.json"; fail "$run: exit status $sub_st, expected 1"; }
    chunks=$(json_num chunks "$WORK/$run.json")
    written=$(json_num out_records "$WORK/$run.json")
    lost=$(json_num out_lost "$WORK/$run.json")
    expect_eq "$run chunks received" "$chunks" "$N"
    expect_eq "$run out_records + out_lost" "$((written + lost))" "$N"
    expect_gt "$run out_lost" "$lost" 0
    grep -q "^.*ERROR: --out $2: write failed: .*; $written records written, $lost lost" "$WORK/$run.log" \
        || { cat "$WORK/$run.log"; fail "$run: no message with the loss"; }
    ok "$run: $(grep 'ERROR: --out' "$WORK/$run.log" | sed 's/^.*ERROR: //')"
}

out_run full /dev/full
check_out_accounting full /dev/full
expect_eq "full out_records" "$written" 0

out_run fsize "$WORK/limited.out" 1000
check_out_accounting fsize "$WORK/limited.out"
expect_gt "fsize out_records" "$written" 0
size=$(wc -c <"$WORK/limited.out")
expect_eq "fsize file size (= out_records x $REC: ends at the last complete record)" "$size" \
    "$((written * REC))"
expect_eq "fsize out_bytes" "$(json_num out_bytes "$WORK/fsize.json")" "$size"
grep -q "the file ends at the last complete record" "$WORK/fsize.log" || fail "fsize: truncation not said"
# the last record's header is whole: its length field says 1024
last_len=$(od -A n -t u4 -j $(((written - 1) * REC + 12)) -N 4 "$WORK/limited.out" | tr -d ' ')
expect_eq "fsize last record's length field" "$last_len" 1024

echo "outputs: $checks checks passed"
