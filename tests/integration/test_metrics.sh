#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# [metrics] listen: scraped with curl while a run goes on and after it ended
# (metrics.hold_after_run), both scrapes checked by `promtool check metrics`
# (Debian's prometheus package; SKIPped visibly when it is missing) and by
# metrics_compare.py (one family per name, HELP/TYPE once, no duplicate
# series, counters never go down); the final scrape equals the run's
# --stats-json counter by counter (every family's "(json: ...)" figure), and
# every figure of the JSON is shown by some family. The same run fills a
# small ring behind a slow subscriber: ring alarms in the log, the JSON and
# the metrics. Subscribers' tags in the log, the JSON and the metrics.
. "$(dirname "$0")/lib.sh"
PORT=$(port_base 7919)
MPORT=$((PORT + 2))
URL="http://127.0.0.1:$MPORT/metrics"
TAGS=all

promtool_check() { # promtool_check FILE
    if command -v promtool >/dev/null 2>&1; then
        promtool check metrics <"$1" >"$1.promtool" 2>&1 || { cat "$1.promtool"; fail "promtool check metrics $1"; }
        ok "promtool check metrics: $(basename "$1") clean"
    else
        echo "SKIP: promtool missing (apt-get install prometheus): $(basename "$1") not checked by promtool"
    fi
}

"$BIN/ringcast-readout" -c deploy/ringcast.ini -o fabric.port="$PORT" -o readout.publisher_threads=2 \
    -o readout.wait_subscribers=2 -o readout.stats_interval=1s -o card.0.ring_size=4M -o sim.0.run_chunks=30000 \
    -o metrics.listen="127.0.0.1:$MPORT" -o readout.linger=30s -o metrics.hold_after_run=60s --stats-json "$WORK/d.json" 2>"$WORK/d.log" &
daemon=$!
i=0
until grep -q "metrics at http://127.0.0.1:$MPORT/metrics" "$WORK/d.log"; do
    i=$((i + 1)); [ $i -lt 300 ] || { cat "$WORK/d.log"; fail "the daemon never served metrics"; }
    sleep 0.05
done
ok "metrics served at $URL"

# Before the cards start: a valid document already.
curl -sf "$URL" >"$WORK/m0.txt" || fail "scrape before the run"
grep -q '^ringcast_state{state="waiting"} 1$' "$WORK/m0.txt" || fail "state before the run: $(grep ringcast_state "$WORK/m0.txt")"
ok "state waiting before the subscribers came"

# A slow subscriber of e-links 0-3 on port 0 (the ring fills behind it),
# one of every tag on port 1.
timeout --foreground -k 10 60 "$BIN/ringcast-sub" --connect "127.0.0.1:$PORT" --tags 0-3 --verify --slow-us 100 \
    --count 15000 --json >"$WORK/a.json" 2>"$WORK/a.log" &
suba=$!
timeout --foreground -k 10 60 "$BIN/ringcast-sub" --connect "127.0.0.1:$((PORT + 1))" --tags all --count 30000 --json \
    >"$WORK/b.json" 2>"$WORK/b.log" &
subb=$!
wait_cards_started d

# During the run.
sleep 0.5
curl -sf "$URL" >"$WORK/m1.txt" || fail "scrape during the run"
grep -q '^ringcast_state{state="running"} 1$' "$WORK/m1.txt" || fail "state during the run"
ok "scraped during the run ($(wc -l <"$WORK/m1.txt") lines)"
promtool_check "$WORK/m1.txt"
python3 tests/integration/metrics_compare.py lint "$WORK/m1.txt" || fail "lint of the scrape during the run"
ok "format rules hold during the run"

# Other paths and methods.
expect_eq "GET /nothing" "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$MPORT/nothing")" 404
expect_eq "POST /metrics" "$(curl -s -o /dev/null -w '%{http_code}' -X POST "$URL")" 405
ctype=$(curl -s -o /dev/null -w '%{content_type}' "$URL")
expect_eq "content type" "$ctype" "text/plain; version=0.0.4; charset=utf-8"

# After the run: the final figures, held for this scrape.
i=0
until grep -q "serving the final figures" "$WORK/d.log"; do
    i=$((i + 1)); [ $i -lt 1200 ] || { cat "$WORK/d.log"; fail "the run never finished"; }
    sleep 0.05
done
curl -sf "$URL" >"$WORK/m2.txt" || fail "scrape after the run"
kill -TERM "$daemon"
wait_daemon d
wait_sub a "$suba"
wait_sub b "$subb"
ok "run finished, daemon exit 0 after SIGTERM ended the hold"
grep -q '^ringcast_state{state="stopped"} 1$' "$WORK/m2.txt" || fail "state after the run"
promtool_check "$WORK/m2.txt"
python3 tests/integration/metrics_compare.py lint "$WORK/m2.txt" || fail "lint of the final scrape"
python3 tests/integration/metrics_compare.py monotonic "$WORK/m1.txt" "$WORK/m2.txt" || fail "counters went down"
ok "counters of the scrape during the run <= final ones"
out=$(python3 tests/integration/metrics_compare.py compare "$WORK/m2.txt" "$WORK/d.json") ||
    { echo "$out"; fail "final scrape differs from --stats-json"; }
n=$(echo "$out" | sed -n 's/^\([0-9]*\) series compared.*/\1/p')
expect_gt "series equal to --stats-json, every JSON figure shown" "$n" 100
expect_eq "chunks decoded (JSON)" "$(json_num chunks_decoded "$WORK/d.json")" 30000

# Ring alarms: the slow subscriber filled the 4 MiB ring; all clear at the end.
full=$(json_num ring_alarms_full "$WORK/d.json")
cleared=$(json_num ring_alarms_cleared "$WORK/d.json")
expect_gt "ring alarms full (JSON)" "$full" 0
expect_gt "ring alarms cleared (JSON)" "$cleared" 0
grep -q "card.0: ring alarm: the ring is full" "$WORK/d.log" || fail "no full-ring alarm in the log"
# (Repeats within log_repeat_interval are counted, not printed: the count's line is not an alarm.)
last=$(grep "card.0: ring alarm" "$WORK/d.log" | grep -v "more like this" | tail -n 1)
case "$last" in *"ring alarm over"*) ;; *) fail "the last alarm line is not the all-clear: $last" ;; esac
ok "alarm lines in the log, the last one the all-clear"
expect_eq "ring alarms full (metrics)" "$(sed -n 's/^ringcast_card_ring_alarms_full_total{card="0"} //p' "$WORK/m2.txt")" "$full"

# Tags of each subscriber.
grep -q "1 tag range subscribed: 0x0-0x3" "$WORK/d.log" || fail "subscribed tags not in the log"
grep -q '"tags":"0x0-0x3"' "$WORK/d.json" || fail "subscribed tags not in the JSON"
grep -q 'ringcast_subscriber_info{thread="0",peer="[0-9]*",address="[^"]*",tags="0x0-0x3"} 1' "$WORK/m2.txt" ||
    fail "subscribed tags not in the metrics"
grep -q "| tags 0x0-0x3" "$WORK/d.log" || fail "subscribed tags not in the periodic subscriber lines"
ok "subscribed tags in the log, JSON and metrics"

# A listen address that cannot be served: refused at start, exit 1.
"$BIN/ringcast-readout" -c deploy/ringcast.ini -o fabric.port="$PORT" -o metrics.listen=192.0.2.1:$MPORT \
    >/dev/null 2>"$WORK/bad.log"
st=$?
expect_eq "exit status with an address not of this host" "$st" 1
grep -q "metrics.listen = 192.0.2.1:$MPORT: cannot serve HTTP there" "$WORK/bad.log" || { cat "$WORK/bad.log"; fail "no reason given"; }
ok "the reason is named"

# -- A card with errors: per-e-link figures in the log, the JSON and the metrics
# (log_repeat_interval = 0: every interval's WARN printed, not one per e-link per 10 s) --
"$BIN/ringcast-readout" -c deploy/ringcast.ini -o fabric.port="$PORT" -o readout.stats_interval=200ms -o readout.log_repeat_interval=0 \
    -o sim.0.run_chunks=20000 -o sim.0.rate=20000chunks/s -o sim.0.err_crc=0.01 -o sim.0.err_malformed=0.002 \
    -o sim.0.err_seqskip=0.002 -o metrics.listen="127.0.0.1:$MPORT" -o metrics.hold_after_run=60s \
    --stats-json "$WORK/e.json" 2>"$WORK/e.log" &
daemon=$!
i=0
until grep -q "serving the final figures" "$WORK/e.log"; do
    i=$((i + 1)); [ $i -lt 1200 ] || { tail -n 30 "$WORK/e.log"; fail "errors: the run never finished"; }
    sleep 0.05
done
curl -sf "$URL" >"$WORK/e.txt" || fail "errors: scrape after the run"
kill -TERM "$daemon"
wait_daemon e
promtool_check "$WORK/e.txt"
out=$(python3 tests/integration/metrics_compare.py compare "$WORK/e.txt" "$WORK/e.json") ||
    { echo "$out"; fail "errors: final scrape differs from --stats-json"; }
ok "errors: $(echo "$out" | tail -n 1)"
crc=$(json_num chunks_crc "$WORK/e.json")
expect_gt "errors: CRC-flagged chunks (JSON)" "$crc" 0
grep -q "flagged [1-9][0-9]* (crc [1-9]" "$WORK/e.log" || fail "errors: the card line does not count flagged chunks"
ok "errors: the periodic card line counts CRC-flagged chunks"
grep -q "WARN: card.0 e-link [0-9]*: .*CRC-flagged chunks" "$WORK/e.log" || fail "errors: no WARN naming an e-link's CRC errors"
grep -q "WARN: card.0 e-link [0-9]*: .*malformed blocks" "$WORK/e.log" || fail "errors: no WARN naming an e-link's malformed blocks"
grep -q "WARN: card.0 e-link [0-9]*: .*blocks missing (sequence gap)" "$WORK/e.log" || fail "errors: no WARN naming an e-link's sequence gap"
ok "errors: WARN lines name the e-link for CRC flags, malformed blocks and sequence gaps"
expect_gt "errors: e-links listed with their losses and errors (JSON)" "$(grep -o '"elinks_lost":\[{' "$WORK/e.json" | wc -l)" 0
echo "test_metrics: $checks checks passed"
