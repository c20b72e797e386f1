#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Figures after SIGTERM add up (issue 12 item 9, issue 16):
# 1. Four free-running cards and a subscriber over tcp, stopped by SIGTERM: 0 keys
#    outstanding and 0 ring bytes in use (the read pointer passed the keys the
#    publisher gave back last), per card bytes_produced = bytes_decoded +
#    bytes_cut_at_stop (chunks the stop cut off before their last piece) and
#    chunks_produced = chunks_decoded; the summary gives stall time per card.
# 2. Over tcp;ofi_rxm (RDM) a subscriber hears BYE at the daemon's shutdown,
#    not its own peer timeout.
# 3. A finished run (not a signal), at the default readout.linger, reaches a
#    subscriber still reading whole: every chunk sent, then the publisher's
#    BYE, answered with the count it handled (= sent). Before, the daemon's
#    end closed the connection once the sends had completed (in the socket)
#    and the subscriber lost the tail without a gap to see (2674 of 3000,
#    exit status 0); tcp msg and tcp;ofi_rxm.
. "$(dirname "$0")/lib.sh"

PORT=$(port_base 4241)
TAGS=all

# --- 1. accounting after SIGTERM, four cards ------------------------------------
cards="-o card.0.ring_size=8M"
for i in 1 2 3; do cards="$cards -o card.$i.type=sim -o card.$i.ring_size=8M -o sim.$i.seed=$((i + 1))"; done
# shellcheck disable=SC2086  # one word per override
start_daemon four -o readout.wait_subscribers=1 $cards
start_sub four-sub tcp msg --duration 60
wait_cards_started four
sleep 1   # the cards run free: stopped mid-chunk
kill -TERM "$daemon"
wait_daemon four
kill -TERM "$sub"; wait "$sub" 2>/dev/null
f="$WORK/four.json"
expect_eq "four keys_outstanding" "$(json_num keys_outstanding "$f")" 0
expect_eq "four ring_bytes_in_use" "$(json_num ring_bytes_in_use "$f")" 0
expect_gt "four chunks_decoded" "$(json_num chunks_decoded "$f")" 0
# per card, from the cards array: one object per line
grep -o '{"card":[^}]*}' "$f" >"$WORK/cards.txt"
expect_eq "four card objects" "$(grep -c . "$WORK/cards.txt")" 4
while read -r card; do
    echo "$card" >"$WORK/card.json"
    n=$(json_num card "$WORK/card.json")
    produced=$(json_num bytes_produced "$WORK/card.json")
    decoded=$(json_num bytes_decoded "$WORK/card.json")
    cut=$(json_num bytes_cut_at_stop "$WORK/card.json")
    expect_eq "card.$n bytes_produced = bytes_decoded + bytes_cut_at_stop ($decoded + $cut)" \
        "$produced" "$((decoded + cut))"
    expect_eq "card.$n chunks_produced = chunks_decoded" "$(json_num chunks_produced "$WORK/card.json")" \
        "$(json_num chunks_decoded "$WORK/card.json")"
    expect_eq "card.$n ring_bytes_in_use" "$(json_num ring_bytes_in_use "$WORK/card.json")" 0
    grep -q "summary: card.$n: .* card stalled [0-9.]* s and ring full [0-9.]* s of the [0-9.]* s run" \
        "$WORK/four.log" || { grep summary "$WORK/four.log"; fail "no summary line for card.$n"; }
done <"$WORK/cards.txt"
grep -q "summary: [0-9.]* s, 4 cards together: " "$WORK/four.log" || fail "summary does not say it adds 4 cards"
ok "summary: one line per card with its own stall time, totals say they are over 4 cards"

# --- 2. RDM subscribers hear BYE at shutdown ---------------------------------------
PORT=$((PORT + 1))
start_daemon rdm -o readout.wait_subscribers=1 -o fabric.provider='tcp;ofi_rxm' -o fabric.endpoint=rdm
start_sub rdm-sub 'tcp;ofi_rxm' rdm --duration 60
wait_cards_started rdm
sleep 0.5
kill -TERM "$daemon"
wait_daemon rdm
i=0  # the subscriber's own peer_timeout (5 s) would also end it: wait for whichever comes
until grep -q "disconnected from" "$WORK/rdm-sub.log" || [ $i -ge 200 ]; do sleep 0.1; i=$((i + 1)); done
kill -TERM "$sub"; wait "$sub" 2>/dev/null
grep -q "disconnected from 127.0.0.1:$PORT: publisher said BYE" "$WORK/rdm-sub.log" \
    || { cat "$WORK/rdm-sub.log"; fail "rdm subscriber was not told BYE at shutdown"; }
ok "rdm: $(grep 'disconnected from' "$WORK/rdm-sub.log" | head -n 1 | sed 's/^.*WARN: //')"

# --- 3. the end of a finished run reaches a slow reader whole ----------------------
end_run() { # end_run NAME PROVIDER ENDPOINT
    PORT=$((PORT + 1)); n=3000
    start_daemon "$1" -o readout.wait_subscribers=1 -o fabric.provider="$2" -o fabric.endpoint="$3" \
        -o sim.0.run_chunks=$n -o sim.0.chunk_size_min=2000 -o sim.0.chunk_size_max=3000
    # 0.3 ms per chunk: about 1 s of reading, most of it after the run ended.
    start_sub "$1-sub" "$2" "$3" --verify --count $n --slow-us 300 --exit-on-close; s=$sub
    wait_daemon "$1"
    wait_sub "$1-sub" "$s"
    expect_eq "$1-sub chunks (all of the run)" "$(json_num chunks "$WORK/$1-sub.json")" $n
    expect_eq "$1-sub gaps" "$(json_num gaps "$WORK/$1-sub.json")" 0
    grep -q "publisher said BYE" "$WORK/$1-sub.log" || { cat "$WORK/$1-sub.log"; fail "$1: no BYE at the end"; }
    expect_eq "$1 chunks_sent" "$(json_num chunks_sent "$WORK/$1.json")" $n
    expect_eq "$1 chunks_unread_at_leave" "$(json_num chunks_unread_at_leave "$WORK/$1.json")" 0
    expect_eq "$1 peers_dead" "$(pub "$1" peers_dead)" 0
}
end_run end-msg tcp msg
end_run end-rdm 'tcp;ofi_rxm' rdm

echo "shutdown: $checks checks passed"
