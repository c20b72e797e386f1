#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Block streams through the real daemon (README.md, "Block stream";
# pipeline/README.md): a stream subscriber (ringcast-sub --stream 0: the
# card's blocks written as they are into its ring, decoded there) and a tag
# subscriber of every tag receive a fixed run bit-exact and gap-free
# together, over tcp (msg), tcp;ofi_rxm (rdm) and shm (rdm, 4 KiB blocks);
# a 64 KiB stream ring wraps hundreds of times; a stream subscriber
# SIGKILLed mid-run gives every block back (keys_outstanding 0) and the tag
# subscriber sees no gap; --out and --hold work on the stream's views; under slow_policy = drop a stream subscriber that
# stops reading loses only its own blocks (the daemon's blocks_dropped), and
# a slow one's decoder counts the sequence gaps, with no corrupt chunk; a stream of a
# card the daemon does not have is refused, with the reason, at both ends; a
# stream subscriber kicked mid-run (tcp, rxm) reconnects and its decoder goes
# on: no bad span, no corrupt or duplicate chunk, every key back; the
# daemon restarted with a larger block size: the same stream subscriber
# comes back (its ring realigned) and gets the second run bit-exact, and a
# third run (same block size) without a sequence gap.
. "$(dirname "$0")/lib.sh"

PORT=$(port_base 14000)
TAGS=0-0xffff

check_daemon_clean() { # check_daemon_clean NAME
    f="$WORK/$1.json"
    expect_eq "$1 keys_outstanding" "$(json_num keys_outstanding "$f")" 0
    expect_eq "$1 ring_bytes_in_use" "$(json_num ring_bytes_in_use "$f")" 0
    expect_eq "$1 rma_bad_credits" "$(pub "$1" rma_bad_credits)" 0
    # The block tap: every block taken went to it and came back exactly once.
    expect_eq "$1 bad_tap_releases" "$(json_num bad_tap_releases "$f")" 0
    expect_eq "$1 tap_releases = tap_blocks" "$(json_num tap_releases "$f")" "$(json_num tap_blocks "$f")"
    expect_gt "$1 tap_blocks" "$(json_num tap_blocks "$f")" 0
}

stream_of() { grep -o '"stream":{[^}]*}' "$WORK/$1.json" | head -n 1 | grep -o "\"$2\":[0-9]*" | cut -d: -f2; }

# start_stream NAME PROVIDER ENDPOINT OPTIONS...: a stream subscriber of card 0 ($sub).
start_stream() {
    sname=$1; prov=$2; ep=$3; shift 3
    timeout --foreground -k 10 60 "$BIN/ringcast-sub" --connect "127.0.0.1:$PORT" --provider "$prov" \
        --endpoint "$ep" --stream 0 --json "$@" >"$WORK/$sname.json" 2>"$WORK/$sname.log" &
    sub=$!
}

check_stream_clean() { # check_stream_clean NAME: the decoder saw a clean stream
    for k in bad_spans bad_header seq_gaps malformed orphans oversize bad_start chunks_dropped chunks_incomplete; do
        expect_eq "$1 stream $k" "$(stream_of "$1" $k)" 0
    done
}

# mixed_run NAME PROVIDER ENDPOINT CHUNKS STREAM-OPTIONS -- DAEMON-OVERRIDES...
mixed_run() {
    name=$1; prov=$2; ep=$3; n=$4; shift 4
    s_opts=
    while [ "$1" != "--" ]; do s_opts="$s_opts $1"; shift; done
    shift
    start_daemon "$name" -o "fabric.provider=$prov" -o "fabric.endpoint=$ep" -o readout.wait_subscribers=2 \
        -o readout.linger=20s -o sim.0.run_chunks="$n" "$@"
    # shellcheck disable=SC2086
    start_stream "$name-stream" "$prov" "$ep" --verify --count "$n" $s_opts; sub_a=$sub
    start_sub "$name-tags" "$prov" "$ep" --verify --count "$n"; sub_b=$sub
    wait_sub "$name-stream" "$sub_a"
    wait_sub "$name-tags" "$sub_b"
    wait_daemon "$name"
    check_sub_exact "$name-stream" "$n"
    check_sub_exact "$name-tags" "$n"
    check_stream_clean "$name-stream"
    expect_eq "$name-stream delivery" "$(grep -o '"delivery":"[a-z]*"' "$WORK/$name-stream.json")" '"delivery":"stream"'
    expect_gt "$name-stream spans" "$(stream_of "$name-stream" spans)" 0
    expect_eq "$name stream spans = the subscriber's" "$(stream_of "$name" spans)" "$(stream_of "$name-stream" spans)"
    expect_eq "$name stream_subscribers" "$(pub "$name" stream_subscribers)" 1
    expect_eq "$name blocks_dropped" "$(stream_of "$name" blocks_dropped)" 0
    expect_eq "$name chunks_sent (the tag subscriber's)" "$(json_num chunks_sent "$WORK/$name.json")" "$n"
    check_daemon_clean "$name"
    PORT=$((PORT + 1))
}

# tcp: also --out (every chunk recorded from its view) and --hold (views
# kept and released late and out of order: the ring's blocks come back then).
mixed_run stream-tcp tcp msg 20000 --out "$WORK/stream-tcp.rec" --hold 100 -- -o sim.0.chunk_size_min=16 \
    -o sim.0.chunk_size_max=9000
expect_eq "stream-tcp-stream out_records" "$(json_num out_records "$WORK/stream-tcp-stream.json")" 20000
expect_eq "stream-tcp-stream out_lost" "$(json_num out_lost "$WORK/stream-tcp-stream.json")" 0
expect_gt "stream-tcp-stream held" "$(json_num held "$WORK/stream-tcp-stream.json")" 1000
expect_eq "stream-tcp-stream held_corrupt" "$(json_num held_corrupt "$WORK/stream-tcp-stream.json")" 0
expect_eq "stream-tcp-stream views_outstanding" "$(json_num views_outstanding "$WORK/stream-tcp-stream.json")" 0
"$BIN/ringcast-dump" "$WORK/stream-tcp.rec" --stats >"$WORK/stream-tcp.dump" || fail "ringcast-dump of the stream's --out"
ok "stream-tcp: ringcast-dump reads the stream's --out file"
mixed_run stream-rxm "tcp;ofi_rxm" rdm 20000 -- -o sim.0.chunk_size_min=16 -o sim.0.chunk_size_max=9000
# shm: spans of at most its inject size (4096 B): one 4 KiB block per write.
mixed_run stream-shm shm rdm 10000 -- -o sim.0.chunk_size_min=16 -o sim.0.chunk_size_max=9000
# A 256 KiB ring (64 blocks, writes of at most 8) wraps ~350 times under
# 20000 chunks of up to 3 blocks on 8 interleaved e-links (chunks left open
# hold at most 24 blocks: a ring smaller than what open chunks hold loses
# chunks, counted, as a card's ring would).
mixed_run stream-wrap tcp msg 20000 --stream-ring-size 262144 -- -o sim.0.chunk_size_min=8 \
    -o sim.0.chunk_size_max=9000
expect_gt "stream-wrap credits_sent (wraps)" "$(stream_of stream-wrap-stream credits_sent)" 1000

# SIGKILL of the stream subscriber mid-run: every block comes back, the tag
# subscriber gets every chunk. A shm run that meets libfabric 1.17's
# dead-peer lock (lib.sh, shm_lock_hazard) is checked and run again, at most
# 3 times.
kill_attempt() { # kill_attempt NAME PROVIDER ENDPOINT: 0 done, 1 the shm hazard (checked)
    name=$1; prov=$2; ep=$3; n=40000
    start_daemon "$name" -o "fabric.provider=$prov" -o "fabric.endpoint=$ep" -o readout.wait_subscribers=2 \
        -o sim.0.run_chunks=$n -o sim.0.rate=20000chunks/s -o fabric.peer_timeout=1s -o fabric.heartbeat=200ms \
        -o sim.0.chunk_size_min=16 -o sim.0.chunk_size_max=9000 -o readout.thread_stuck_after=4s
    start_sub "$name-tags" "$prov" "$ep" --verify --count $n; sub_a=$sub
    start_stream "$name-stream" "$prov" "$ep" --verify --duration 50; sub_b=$sub
    wait_cards_started "$name"
    sleep 0.5
    victim=$(pgrep -P "$sub_b" ringcast-sub)
    [ -n "$victim" ] || fail "$name: no subscriber to kill"
    kill -KILL "$victim"
    wait "$sub_b" 2>/dev/null
    wait_bounded "$daemon" 300 "$name: the daemon"; st=$wb_st
    PORT=$((PORT + 1))
    shm_hazard_checked "$name" "$st" "$prov" "$name-tags" "$sub_a" && return 1
    [ "$st" -eq 0 ] || { cat "$WORK/$name.log"; fail "$name: daemon exit status $st"; }
    wait "$sub_a" || { cat "$WORK/$name.log" "$WORK/$name-tags.log"; fail "$name-tags: ringcast-sub failed"; }
    check_sub_exact "$name-tags" $n
    expect_eq "$name stream_subscribers" "$(pub "$name" stream_subscribers)" 1
    expect_gt "$name stream spans before the kill" "$(stream_of "$name" spans)" 0
    expect_eq "$name peers_dead" "$(pub "$name" peers_dead)" 1
    check_daemon_clean "$name"
}
kill_run() { # kill_run NAME PROVIDER ENDPOINT
    kill_attempt "$1-1" "$2" "$3" || kill_attempt "$1-2" "$2" "$3" || kill_attempt "$1-3" "$2" "$3" || \
        fail "$1: every attempt hit the shm dead-peer lock"
}
kill_run stream-kill-tcp tcp msg
kill_run stream-kill-rxm "tcp;ofi_rxm" rdm
kill_run stream-kill-shm shm rdm

# slow_policy = drop: a stream subscriber that stops reading (--stall-after:
# it gives no space back) loses only its own blocks; the tag subscriber gets
# every chunk and the card is not held.
name=stream-drop; n=9000
start_daemon "$name" -o fabric.provider=tcp -o fabric.endpoint=msg -o readout.slow_policy=drop \
    -o readout.wait_subscribers=2 -o sim.0.run_chunks=$n -o sim.0.rate=3000chunks/s -o card.0.ring_size=4M
start_sub "$name-v" tcp msg --verify --count $n --duration 40; sub_v=$sub
start_stream "$name-s" tcp msg --stall-after 300 --duration 50 --stream-ring-size 262144; sub_s=$sub
wait_sub "$name-v" "$sub_v"
wait_daemon "$name"
kill -TERM "$sub_s" 2>/dev/null
wait "$sub_s"
check_sub_exact "$name-v" $n
expect_gt "$name blocks_dropped (the stalled stream subscriber's own)" "$(stream_of "$name" blocks_dropped)" 0
check_daemon_clean "$name"
PORT=$((PORT + 1))

# slow_policy = drop with a slow stream subscriber (it decodes, slowly:
# --slow-us): the blocks it has no room for are dropped for it; its decoder
# counts the sequence gaps, drops the chunks they cut, and hands on no corrupt
# chunk; every key comes back.
name=stream-gaps; n=6000
start_daemon "$name" -o fabric.provider=tcp -o fabric.endpoint=msg -o readout.slow_policy=drop \
    -o readout.slow_cut_after=0 -o readout.wait_subscribers=1 -o sim.0.run_chunks=$n -o sim.0.rate=3000chunks/s \
    -o sim.0.chunk_size_min=16 -o sim.0.chunk_size_max=9000
start_stream "$name-s" tcp msg --verify --slow-us 2000 --duration 40 --stream-ring-size 131072; sub_s=$sub
wait_daemon "$name"
kill -TERM "$sub_s" 2>/dev/null
wait "$sub_s"   # exit status 1: verification saw the gaps
expect_gt "$name blocks_dropped" "$(stream_of "$name" blocks_dropped)" 0
expect_gt "$name-s decoder seq_gaps" "$(stream_of "$name-s" seq_gaps)" 0
expect_gt "$name-s verify gaps" "$(json_num gaps "$WORK/$name-s.json")" 0
expect_eq "$name-s corrupt" "$(json_num corrupt "$WORK/$name-s.json")" 0
expect_eq "$name-s bad_spans" "$(stream_of "$name-s" bad_spans)" 0
check_daemon_clean "$name"
PORT=$((PORT + 1))

# Two publisher threads, a stream subscriber on each (ports PORT and
# PORT + 1) and a tag subscriber: every block is held by both threads and
# goes back once, after the last (card.block_threads); both streams exact.
name=stream-threads; n=20000
start_daemon "$name" -o fabric.provider=tcp -o fabric.endpoint=msg -o readout.publisher_threads=2 \
    -o readout.wait_subscribers=3 -o readout.linger=20s -o sim.0.run_chunks=$n -o sim.0.chunk_size_min=16 \
    -o sim.0.chunk_size_max=9000
start_stream "$name-s0" tcp msg --verify --count $n; sub_a=$sub
PORT=$((PORT + 1)); start_stream "$name-s1" tcp msg --verify --count $n; sub_b=$sub; PORT=$((PORT - 1))
start_sub "$name-tags" tcp msg --verify --count $n; sub_c=$sub
wait_sub "$name-s0" "$sub_a"
wait_sub "$name-s1" "$sub_b"
wait_sub "$name-tags" "$sub_c"
wait_daemon "$name"
check_sub_exact "$name-s0" $n
check_sub_exact "$name-s1" $n
check_sub_exact "$name-tags" $n
check_stream_clean "$name-s0"
check_stream_clean "$name-s1"
expect_eq "$name stream_subscribers (both threads)" "$(pub "$name" stream_subscribers)" 2
check_daemon_clean "$name"
PORT=$((PORT + 2))

# The daemon kicks the stream subscriber mid-run (ringcast-ctl kick): it
# reconnects and its ring, spans and decoder go on across the reconnect: the
# chunks open at the kick are cut (counted), the blocks missed show as
# sequence gaps, no span is bad, no chunk corrupt or twice; every key back.
reconnect_run() { # reconnect_run NAME PROVIDER ENDPOINT
    # 6 s of data: the reconnect takes about 1 s, and a loaded machine once
    # ended a 3 s run before the kicked subscriber was back (reconnects = 0).
    name=$1; prov=$2; ep=$3; n=120000; sock="$WORK/$name.sock"
    start_daemon "$name" -o "fabric.provider=$prov" -o "fabric.endpoint=$ep" -o readout.wait_subscribers=1 \
        -o control.socket="$sock" -o sim.0.run_chunks=$n -o sim.0.rate=20000chunks/s \
        -o sim.0.chunk_size_min=16 -o sim.0.chunk_size_max=9000
    start_stream "$name-s" "$prov" "$ep" --verify --duration 14 --stream-ring-size 262144; sub_s=$sub
    wait_cards_started "$name"
    sleep 0.5
    addr=$("$BIN/ringcast-ctl" --socket "$sock" --compact subscribers | grep -o '"address":"[^"]*"' | head -n 1 |
           cut -d'"' -f4)
    [ -n "$addr" ] || fail "$name: the stream subscriber is not listed"
    "$BIN/ringcast-ctl" --socket "$sock" kick "$addr" >/dev/null || fail "$name: kick $addr"
    wait_daemon "$name"
    wait "$sub_s"   # exit status 1: verification saw the gap of the reconnect
    expect_gt "$name-s reconnects" "$(json_num reconnects "$WORK/$name-s.json")" 0
    expect_gt "$name stream subscribers (before and after the kick)" "$(pub "$name" stream_subscribers)" 1
    expect_eq "$name-s corrupt" "$(json_num corrupt "$WORK/$name-s.json")" 0
    expect_eq "$name-s duplicates" "$(json_num duplicates "$WORK/$name-s.json")" 0
    expect_eq "$name-s bad_spans" "$(stream_of "$name-s" bad_spans)" 0
    expect_eq "$name-s views_outstanding" "$(json_num views_outstanding "$WORK/$name-s.json")" 0
    check_daemon_clean "$name"
    PORT=$((PORT + 1))
}
reconnect_run stream-reconnect-tcp tcp msg
reconnect_run stream-reconnect-rxm "tcp;ofi_rxm" rdm

# The daemon restarted with a larger block size: the stream subscriber's
# ring ended run 1 (1 KiB blocks) at an offset the new block size does not
# divide; it moves on to one every block size divides before its HELLO
# (skipped_bytes), is not refused and gets run 2 bit-exact, decoded by a new
# decoder. Run 1's end is where its blocks ended (the sim fills every block
# at unlimited rate: 4422 blocks here); the new block size is the smallest
# power of two from 2 KiB that does not divide it, so the old start_offset
# would be refused. Run 3 (restarted again, same block size): the decoder
# starts anew too (the e-links' block sequences restart: no sequence gap).
rs=stream-restarts; n1=3000; n2=3000; n3=2000
# restart_run NAME CHUNKS BLOCK-SIZE: one run of the daemon for $sub_s.
restart_run() {
    start_daemon "$1" -o fabric.provider=tcp -o fabric.endpoint=msg -o readout.wait_subscribers=1 \
        -o readout.linger=20s -o sim.0.run_chunks="$2" -o card.0.block_size="$3" -o sim.0.chunk_size_min=16 \
        -o sim.0.chunk_size_max=3000
    # A daemon still running 10 s after the subscriber ended never had it
    # back (it would wait for it for ever); after the last run it ends as
    # soon as the subscriber, done, said BYE.
    i=0
    while kill -0 "$daemon" 2>/dev/null; do
        kill -0 "$sub_s" 2>/dev/null || i=$((i + 1))
        [ $i -lt 100 ] || { kill -TERM "$daemon"; wait_bounded "$daemon" 300 "$rs: the daemon"; cat "$WORK/$rs-s.log" "$WORK/$rs-s.json"
                            fail "$rs-s: ended, and run $1 ($3 B blocks) never had it back"; }
        sleep 0.1
    done
    wait_daemon "$1"
    check_daemon_clean "$1"
    expect_eq "$1 stream_refused" "$(pub "$1" stream_refused)" 0
    expect_eq "$1 stream_subscribers" "$(pub "$1" stream_subscribers)" 1
}
start_stream "$rs-s" tcp msg --verify --count $((n1 + n2 + n3)) --duration 40; sub_s=$sub
restart_run "$rs-1" $n1 1k
end1=$(stream_of "$rs-1" bytes)
bs2=2048
while [ $bs2 -lt 65536 ] && [ $((end1 % bs2)) -eq 0 ]; do bs2=$((bs2 * 2)); done
[ $((end1 % bs2)) -ne 0 ] || fail "$rs: run 1 ended at $end1, 64 KiB-aligned: nothing to realign (pick another n1)"
ok "$rs: run 1 ended at $end1 B, not a multiple of the new $bs2 B blocks"
restart_run "$rs-2" $n2 $bs2
restart_run "$rs-3" $n3 $bs2
wait_sub "$rs-s" "$sub_s"
check_sub_exact "$rs-s" $((n1 + n2 + n3)) refused
check_stream_clean "$rs-s"
expect_eq "$rs-s publisher_restarts" "$(json_num publisher_restarts "$WORK/$rs-s.json")" 2
expect_eq "$rs-s block_size (runs 2 and 3)" "$(stream_of "$rs-s" block_size)" $bs2
expect_gt "$rs-s skipped_bytes (realigned)" "$(stream_of "$rs-s" skipped_bytes)" 0
PORT=$((PORT + 1))

# A card the daemon does not have: BYE(refused) with the reason, at both ends.
name=stream-refused
start_daemon "$name" -o fabric.provider=tcp -o fabric.endpoint=msg -o sim.0.run_chunks=10 -o readout.wait_subscribers=1
wait_listening "$name"
timeout -k 5 30 "$BIN/ringcast-sub" --connect "127.0.0.1:$PORT" --stream 7 --duration 5 --json \
    >"$WORK/$name-s.json" 2>"$WORK/$name-s.log"
grep -q "no such card" "$WORK/$name-s.log" || { cat "$WORK/$name-s.log"; fail "$name: the subscriber does not say why"; }
ok "$name: the subscriber says why"
expect_gt "$name-s refused" "$(json_num refused "$WORK/$name-s.json")" 0
kill -TERM "$daemon"
wait_daemon "$name"
expect_gt "$name stream_refused" "$(pub "$name" stream_refused)" 0
grep -q "block stream refused: the publisher has no such card" "$WORK/$name.log" || \
    { cat "$WORK/$name.log"; fail "$name: the daemon does not log the refusal"; }
ok "$name: the daemon logs the refusal"

echo "test_daemon_stream: $checks checks passed"
