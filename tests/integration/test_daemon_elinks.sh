#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# slow_policy = block never drops (issue 10 item 3): 2048 e-links of small
# chunks on a 1 MiB ring. Every block of an e-link ends with a FIRST whose
# LAST comes 2048 blocks (8 MiB) later, more than the ring holds: the decoder
# copies those open chunk heads out of the full ring (chunks_spilled) instead
# of dropping them. A verifying subscriber gets every chunk; nothing is
# counted lost, per card or per e-link.
. "$(dirname "$0")/lib.sh"

PORT=$(port_base 4409)
TAGS=0-0xffff
n=100000

start_daemon elinks -o readout.wait_subscribers=1 -o readout.slow_policy=block \
    -o card.0.ring_size=1M -o card.0.rd_update_bytes=64k -o sim.0.elinks=2048 -o sim.0.chunk_size_min=8 \
    -o sim.0.chunk_size_max=300 -o sim.0.run_chunks=$n
start_sub elinks-sub tcp msg --verify --count $n --duration 40
wait_sub elinks-sub "$sub"
wait_daemon elinks
f="$WORK/elinks-sub.json"
grep -q '"verified":true' "$f" || { cat "$f"; fail "subscriber: not verified"; }
expect_eq "subscriber chunks" "$(json_num chunks "$f")" $n
expect_eq "subscriber gaps" "$(json_num gaps "$f")" 0
d="$WORK/elinks.json"
expect_eq "chunks_dropped_ring" "$(json_num chunks_dropped_ring "$d")" 0
expect_eq "chunks_lost" "$(json_num chunks_lost "$d")" 0
expect_eq "e-links with losses" "$(grep -c '"elinks_lost":\[{' "$d")" 0
expect_gt "chunks_spilled" "$(json_num chunks_spilled "$d")" 0
! grep -q "chunks lost by e-link" "$WORK/elinks.log" || fail "the log names lost chunks"
ok "2048 e-links under block: $n chunks, none lost ($checks checks)"
