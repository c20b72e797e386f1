#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The setting of issue 10 item 1 where a live subscriber was cut off and then
# fed released ring memory with no fault injected at all: four cards of mixed
# chunk sizes (64 B to 60 KiB, rxm's rendezvous sizes among them), two
# publisher threads, three verifying subscribers over tcp;ofi_rxm, and two CPU
# hogs beside them on this 2-core machine. Under the default settings
# (slow_policy = block) nobody is declared dead or cut off by load, and every
# subscriber receives every chunk of every card, bit-exact, without a gap.
#
# Not in `make test` (about 100 s with two CPU hogs; `make soak` runs it).
# First run (2026-11-23) failed: one subscriber had 0 corrupt but lost 32
# messages to its stream-order logic (seq_lost 32, seq_late 32: declared
# lost, then they came). The cause: rxm completed a run of 20-60 KiB
# rendezvous messages 2.6 s after the eager ones behind them, and the
# subscriber gave up waiting after half the peer timeout. It now waits while
# the connection lives (net/subscriber.c, "stream order"); since then
# (2026-11-24) every subscriber gets all 65 500 chunks, 0 gaps.
# Run: sh tests/loaded-rxm.sh build   (about 60 s)
. "$(dirname "$0")/integration/lib.sh"

PORT=$((20000 + ($$ + 5309) % 20000))
TAGS=all
checks=0

hogs=""
for i in 1 2; do
    timeout 120 sh -c 'while :; do :; done' &
    hogs="$hogs $!"
done
trap 'st_=$?; kill $hogs 2>/dev/null; (exit $st_); on_exit' EXIT

# card N: e-links, chunk sizes, chunks in the run
n0=20000; n1=1500; n2=40000; n3=4000
cards="-o card.0.ring_size=16M -o sim.0.run_chunks=$n0"
cards="$cards -o card.1.type=sim -o card.1.ring_size=16M -o card.1.block_size=64k -o sim.1.seed=2"
cards="$cards -o sim.1.chunk_size_min=20k -o sim.1.chunk_size_max=60k -o sim.1.run_chunks=$n1"
cards="$cards -o card.2.type=sim -o card.2.ring_size=16M -o sim.2.seed=3 -o sim.2.elinks=64"
cards="$cards -o sim.2.chunk_size_min=64 -o sim.2.chunk_size_max=64 -o sim.2.run_chunks=$n2"
cards="$cards -o card.3.type=sim -o card.3.ring_size=16M -o sim.3.seed=4"
cards="$cards -o sim.3.chunk_size_min=4k -o sim.3.chunk_size_max=16k -o sim.3.run_chunks=$n3"
total=$((n0 + n1 + n2 + n3))
# shellcheck disable=SC2086  # one word per override
start_daemon loaded -o fabric.provider='tcp;ofi_rxm' -o fabric.endpoint=rdm \
    -o readout.publisher_threads=2 -o readout.wait_subscribers=3 -o readout.linger=30s $cards
subs=""
for s in a b c; do
    base=$PORT
    [ "$s" = c ] && PORT=$((base + 1))   # the third on the second publisher thread
    start_sub "loaded-$s" 'tcp;ofi_rxm' rdm --verify --count $total --duration 100
    PORT=$base
    subs="$subs $sub"
done
wait_cards_started loaded
for pid in $subs; do wait "$pid" || true; done
wait_daemon loaded
kill $hogs 2>/dev/null

for s in a b c; do
    f="$WORK/loaded-$s.json"
    grep -q '"verified":true' "$f" || { cat "$f" "$WORK/loaded-$s.log"; fail "loaded-$s: not verified"; }
    expect_eq "loaded-$s chunks" "$(json_num chunks "$f")" $total
    for k in gaps corrupt duplicates disconnects; do expect_eq "loaded-$s $k" "$(json_num $k "$f")" 0; done
done
f="$WORK/loaded.json"
for k in subscribers_cut_off peers_dead keys_outstanding; do
    expect_eq "daemon $k" "$(json_num $k "$f")" 0
done

echo "test_daemon_loaded: $checks checks passed"
