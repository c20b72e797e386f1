#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Ring memory is released only when the provider has let go of it
# (net/README.md, "Dead peers"). A verifying subscriber is stopped (SIGSTOP)
# past peer_timeout while 20-60 KiB chunks (above rxm's 16 KiB eager size:
# rxm reads them from the ring when the subscriber asks) are sent to it, so
# the daemon declares it dead while its sends are still outstanding; then it
# is resumed. It may have lost chunks (gaps), but must never receive a chunk
# whose bytes were overwritten: 0 corrupt, 0 bad-length messages. Every key
# comes back and the daemon exits 0. Over tcp (msg) and tcp;ofi_rxm (rdm).
#
# Also: a long -FI_EAGAIN streak on one subscriber's fragmented send does not
# freeze the publisher thread: a second subscriber of the same thread keeps
# getting data and heartbeats and is never timed out.
. "$(dirname "$0")/lib.sh"

PORT=$(port_base 4241)
TAGS=0-0xffff

# malformed_sum NAME: every malformed message the subscriber counted.
malformed_sum() {
    grep -o '"malformed":{[^}]*}' "$WORK/$1.json" | grep -o ':[0-9]*' | tr -d : |
        awk '{ s += $1 } END { print s + 0 }'
}

check_keys_back() { # check_keys_back NAME
    f="$WORK/$1.json"
    expect_eq "$1 keys_outstanding" "$(json_num keys_outstanding "$f")" 0
    expect_eq "$1 shares = sent + dropped + failed + unsent" \
        "$(( $(json_num chunks_sent "$f") + $(json_num chunks_dropped "$f") + $(json_num shares_failed "$f") + $(json_num shares_unsent "$f") ))" \
        "$(json_num shares "$f")"
}

# wait_subscribed NAME: until the daemon logged a subscription (15 s at most).
wait_subscribed() {
    i=0
    until grep -q "tag range.* subscribed" "$WORK/$1.log"; do
        i=$((i + 1)); [ $i -lt 300 ] || { cat "$WORK/$1.log"; fail "$1: nobody subscribed"; }
        sleep 0.05
    done
}

# -- SIGSTOP past peer_timeout, then SIGCONT -----------------------------------
stop_run() { # stop_run PROVIDER ENDPOINT
    name="stop-$2"
    start_daemon "$name" -o fabric.provider="$1" -o fabric.endpoint="$2" -o card.0.ring_size=4M \
        -o sim.0.chunk_size_min=20000 -o sim.0.chunk_size_max=60000 -o sim.0.rate=20000chunks/s \
        -o fabric.peer_timeout=1s -o fabric.heartbeat=200ms -o readout.slow_policy=drop \
        -o readout.slow_cut_after=0
    # slow_cut_after = 0: the release after death by silence is what is tested
    # here (the slow policy's cut-off, 500 ms by default, won that race under
    # ASan: test_daemon_stall.sh covers its release).
    # 14 s: stopped from about 1 s after it subscribed, for 3 s; told nothing
    # that reaches it, it notices by its own peer timeout (ringcast-sub: 5 s
    # after the last message it read), reconnects and gets data again.
    start_sub "$name-sub" "$1" "$2" --verify --duration 14; s=$sub
    wait_subscribed "$name"
    sleep 1
    pkill -STOP -P "$s" ringcast-sub || fail "$name: no subscriber to stop"
    sleep 3   # 3 x peer_timeout: declared dead by silence or a stuck send
    pkill -CONT -P "$s" ringcast-sub
    wait "$s"   # gaps make it exit 1: checked below
    kill -TERM "$daemon"
    wait_daemon "$name"
    f="$WORK/$name-sub.json"
    grep -q '"chunks"' "$f" || { cat "$WORK/$name-sub.log"; fail "$name: no subscriber summary"; }
    echo "   $name: subscriber $(json_num chunks "$f") chunks, $(json_num gaps "$f") gaps," \
        "$(json_num reconnects "$f") reconnects, $(json_num corrupt "$f") corrupt, $(malformed_sum "$name-sub") malformed;" \
        "daemon: $(pub "$name" peers_dead) dead, $(pub "$name" keys_released_by_peer_death) keys released by death"
    expect_eq "$name corrupt chunks" "$(json_num corrupt "$f")" 0
    expect_eq "$name duplicate chunks" "$(json_num duplicates "$f")" 0
    expect_eq "$name malformed messages" "$(malformed_sum "$name-sub")" 0
    expect_eq "$name truncated messages" "$(json_num truncated "$f")" 0
    expect_gt "$name peers_dead" "$(pub "$name" peers_dead)" 0
    expect_gt "$name subscriber reconnects" "$(json_num reconnects "$f")" 0
    expect_gt "$name subscriber chunks" "$(json_num chunks "$f")" 0
    check_keys_back "$name"
    PORT=$((PORT + 1))
}

# -- a long -FI_EAGAIN streak on one subscriber's sends -------------------------
# fault_eagain_streak: the Nth data post starts 6 s in which every post to that
# subscriber is refused; with 20-60 KiB chunks (several fragments each) a
# later fragment of a chunk meets it. The thread must not wait for it: the
# other subscriber of the same publisher thread keeps getting heartbeats
# (its own peer timeout is ringcast-sub's 5 s, shorter than the streak) and
# is never cut off, and the streaked one gets the rest of its chunk after
# the streak. The publisher's peer_timeout (10 s) is longer than the streak,
# so nobody is declared dead. Under block nothing is lost.
streak_run() { # streak_run PROVIDER ENDPOINT
    name="streak-$2"; n=2000
    start_daemon "$name" -o fabric.provider="$1" -o fabric.endpoint="$2" -o readout.wait_subscribers=2 \
        -o readout.linger=30s -o sim.0.run_chunks=$n -o sim.0.chunk_size_min=20000 \
        -o sim.0.chunk_size_max=60000 -o fabric.peer_timeout=10s -o fabric.fault_eagain_every=15000 \
        -o fabric.fault_eagain_streak=6s
    start_sub "$name-a" "$1" "$2" --verify --count $n; a=$sub
    start_sub "$name-b" "$1" "$2" --verify --count $n; b=$sub
    wait_sub "$name-a" "$a"
    wait_sub "$name-b" "$b"
    wait_daemon "$name"
    echo "   $name: $(pub "$name" faults_eagain_streaks) streaks, $(pub "$name" faults_eagain) posts refused," \
        "$(pub "$name" fragments_deferred) fragmented sends deferred, $(pub "$name" again_resuming) sends held back"
    expect_gt "$name streaks" "$(pub "$name" faults_eagain_streaks)" 0
    expect_gt "$name posts refused" "$(pub "$name" faults_eagain)" 0
    expect_gt "$name fragments deferred to progress" "$(pub "$name" fragments_deferred)" 0
    for x in a b; do
        f="$WORK/$name-$x.json"
        expect_eq "$name-$x chunks" "$(json_num chunks "$f")" $n
        expect_eq "$name-$x gaps" "$(json_num gaps "$f")" 0
        expect_eq "$name-$x corrupt" "$(json_num corrupt "$f")" 0
        expect_eq "$name-$x reconnects (never timed out)" "$(json_num reconnects "$f")" 0
    done
    expect_eq "$name peers_dead" "$(pub "$name" peers_dead)" 0
    check_keys_back "$name"
    PORT=$((PORT + 1))
}

# -- FI_AV_REMOVE_CLEANUP=0 set by the user: an rxm publisher refuses to start --
# (without it a removed subscriber's sends could go on reading the ring).
cleanup_refused() {
    name=nocleanup
    FI_AV_REMOVE_CLEANUP=0 timeout --foreground -k 30 30 "$BIN/ringcast-readout" -c deploy/ringcast.ini -o fabric.port="$PORT" \
        -o fabric.provider="tcp;ofi_rxm" -o fabric.endpoint=rdm 2>"$WORK/$name.log"
    st=$?
    [ "$st" -ne 0 ] && [ "$st" -ne 124 ] || { cat "$WORK/$name.log"; fail "$name: exit status $st"; }
    grep -q "FI_AV_REMOVE_CLEANUP=0 in the environment" "$WORK/$name.log" ||
        { cat "$WORK/$name.log"; fail "$name: no message naming FI_AV_REMOVE_CLEANUP"; }
    ok "$name: an rxm publisher with FI_AV_REMOVE_CLEANUP=0 exits $st, naming it"
    PORT=$((PORT + 1))
}

cleanup_refused
for v in "tcp;ofi_rxm rdm" "tcp msg"; do
    set -- $v
    stop_run "$1" "$2"
done
streak_run "tcp;ofi_rxm" rdm
echo "test_daemon_release: $checks checks passed"
