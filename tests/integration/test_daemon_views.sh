#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Views (ringcast/view.h) and a wrong RMA key, through the real daemon:
#  - hold: `ringcast-sub --hold N --verify` keeps the last N chunks' views and
#    releases them late and out of order, checking each one's bytes again at
#    release; an RMA subscriber (N = 200) and a send subscriber (N = 40) of
#    chunks of 16 B .. 9000 B (several records per chunk on RMA: handed on as
#    one view of several pieces, not copied) receive a fixed run exactly, no
#    held view changed while kept, no view left out, every key back at the
#    daemon (tcp, and tcp;ofi_rxm with 10000 chunks);
#  - wrong key: an RMA subscriber announcing a key that is not its ring's
#    (--test-wrong-rma-key). No provider here tells the writer
#    (reference/rma-and-more.md): tcp drops the connection at the first
#    write, shm drops the writes silently and the subscriber, receiving
#    nothing, times the publisher out. Either way the connection is closed
#    and counted (peers_dead), every key comes back exactly once
#    (keys_outstanding 0, bad_releases 0), the wrong subscriber never hands
#    on a byte, and a send subscriber beside it receives the run exactly
#    (tcp, shm);
#  - chunks larger than the subscriber's receive buffer (--rx-buffer-size
#    4096): one view of a piece per fragment, not copied (chunks_gathered).
#    About 40 s.
. "$(dirname "$0")/lib.sh"

PORT=$(port_base 14000)
TAGS=0-0xffff

check_daemon_clean() { # check_daemon_clean NAME
    f="$WORK/$1.json"
    expect_eq "$1 keys_outstanding" "$(json_num keys_outstanding "$f")" 0
    expect_eq "$1 ring_bytes_in_use" "$(json_num ring_bytes_in_use "$f")" 0
    expect_eq "$1 bad_releases (keys released twice)" "$(json_num bad_releases "$f")" 0
}

# Hold: both deliveries, verifying, the daemon waits for both.
hold_run() { # hold_run NAME PROVIDER ENDPOINT CHUNKS
    name=$1; prov=$2; ep=$3; n=$4
    start_daemon "$name" -o "fabric.provider=$prov" -o "fabric.endpoint=$ep" -o readout.wait_subscribers=2 \
        -o readout.linger=20s -o sim.0.run_chunks=$n -o sim.0.chunk_size_min=16 -o sim.0.chunk_size_max=9000
    start_sub "$name-rma" "$prov" "$ep" --verify --count $n --delivery rma --hold 200; sub_a=$sub
    start_sub "$name-send" "$prov" "$ep" --verify --count $n --hold 40; sub_b=$sub
    wait_sub "$name-rma" "$sub_a"
    wait_sub "$name-send" "$sub_b"
    wait_daemon "$name"
    for s in rma send; do
        check_sub_exact "$name-$s" $n held_corrupt views_outstanding
        expect_eq "$name-$s held (every chunk kept a while)" "$(json_num held "$WORK/$name-$s.json")" $n
    done
    expect_eq "$name-rma rma_fallbacks" "$(json_num rma_fallbacks "$WORK/$name-rma.json")" 0
    expect_gt "$name-rma rma_chunks_gathered (several records, one view)" \
        "$(json_num rma_chunks_gathered "$WORK/$name-rma.json")" 0
    expect_eq "$name-rma rma_chunks_copied" "$(json_num rma_chunks_copied "$WORK/$name-rma.json")" 0
    expect_eq "$name chunks_sent" "$(json_num chunks_sent "$WORK/$name.json")" $((2 * n))
    check_daemon_clean "$name"
    PORT=$((PORT + 1))
}
hold_run views-hold tcp msg 20000
# The same on tcp;ofi_rxm (rdm), for issue 13's "tcp, tcp;ofi_rxm and shm".
hold_run views-hold-rxm "tcp;ofi_rxm" rdm 10000

# wrong_key NAME PROVIDER ENDPOINT SECONDS
wrong_key() {
    name=$1; prov=$2; ep=$3; secs=$4; n=20000
    start_daemon "$name" -o "fabric.provider=$prov" -o "fabric.endpoint=$ep" -o readout.wait_subscribers=2 -o readout.linger=20s \
        -o fabric.peer_timeout=1s -o fabric.heartbeat=200ms -o sim.0.run_chunks=$n -o sim.0.rate=5000chunks/s
    start_sub "$name-bad" "$prov" "$ep" --duration "$secs" --delivery rma --test-wrong-rma-key; sub_a=$sub
    start_sub "$name-send" "$prov" "$ep" --verify --count $n; sub_b=$sub
    # The daemon's log too when the send subscriber fails: it says what the publisher did.
    wait "$sub_b" || { cat "$WORK/$name.log" "$WORK/$name-send.log" "$WORK/$name-bad.log"; \
                       fail "$name-send: ringcast-sub failed"; }
    wait_sub "$name-bad" "$sub_a"
    wait_daemon "$name"
    check_sub_exact "$name-send" $n held_corrupt views_outstanding
    f="$WORK/$name-bad.json"
    expect_eq "$name-bad chunks (nothing it could not verify)" "$(json_num chunks "$f")" 0
    expect_eq "$name-bad rma_records" "$(json_num rma_records "$f")" 0
    expect_gt "$name-bad disconnects" "$(json_num disconnects "$f")" 0
    expect_gt "$name rma_records written (lost at the subscriber)" "$(pub "$name" rma_records)" 0
    expect_gt "$name peers_dead (connection closed, counted)" "$(pub "$name" peers_dead)" 0
    check_daemon_clean "$name"
    PORT=$((PORT + 1))
}
wrong_key views-badkey-tcp tcp msg 5
wrong_key views-badkey-shm shm rdm 9

# Chunks larger than the subscriber's receive buffer (send delivery, tcp):
# each comes in several fragments and is handed on as one view of one piece
# per fragment, each in its own receive buffer, not copied (chunks_gathered);
# kept (--hold 8), released late and out of order, the bytes checked again at
# release; every view and receive buffer back at the end. About 4 s.
name=views-big; n=3000
start_daemon "$name" -o fabric.provider=tcp -o fabric.endpoint=msg -o readout.wait_subscribers=1 \
    -o readout.linger=20s -o sim.0.run_chunks=$n -o sim.0.chunk_size_min=4097 -o sim.0.chunk_size_max=20000
start_sub "$name-send" tcp msg --verify --count $n --hold 8 --rx-buffer-size 4096; sub_a=$sub
wait_sub "$name-send" "$sub_a"
wait_daemon "$name"
check_sub_exact "$name-send" $n held_corrupt views_outstanding rx_buffers_held reassembly_drops
f="$WORK/$name-send.json"
expect_eq "$name-send held (every chunk kept a while)" "$(json_num held "$f")" $n
expect_eq "$name-send reassembled (every chunk in fragments)" "$(json_num reassembled "$f")" $n
expect_gt "$name-send chunks_gathered (one view, a piece per fragment)" "$(json_num chunks_gathered "$f")" 0
expect_eq "$name-send gathered + copied" \
    $(($(json_num chunks_gathered "$f") + $(json_num chunks_reassembled_copied "$f"))) $n
check_daemon_clean "$name"
PORT=$((PORT + 1))

echo "test_daemon_views: $checks checks passed"
