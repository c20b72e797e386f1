#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Fault injection against the real daemon, over tcp (msg) and tcp;ofi_rxm
# (rdm): provider -FI_EAGAIN storms and error completions ([fabric] fault_*),
# corrupt blocks from the simulated card, a card that goes quiet and
# resumes, and misbehaving subscribers
# (bad_peer: gone before subscribing, 100 000 tags, garbage). Each time the
# daemon keeps running, its counters are exact, no key is lost (and its
# memory does not grow over repeated rounds of bad peers).
. "$(dirname "$0")/lib.sh"

PORT=$(port_base 0)
TAGS=0-0xffff
BAD="$BUILD/tests/integration/bad_peer"



check_keys_back() { # check_keys_back NAME
    f="$WORK/$1.json"
    expect_eq "$1 keys_outstanding" "$(json_num keys_outstanding "$f")" 0
    expect_eq "$1 shares = sent + dropped + failed + unsent" \
        "$(( $(json_num chunks_sent "$f") + $(json_num chunks_dropped "$f") + $(json_num shares_failed "$f") + $(json_num shares_unsent "$f") ))" \
        "$(json_num shares "$f")"
    expect_eq "$1 decoded + queued - dispatched = no_subscriber + published + abandoned" \
        "$(( $(json_num chunks_no_subscriber "$f") + $(json_num chunks_published "$f") + $(json_num chunks_abandoned "$f") ))" \
        "$(( $(json_num chunks_decoded "$f") + $(json_num chunks_queued "$f") - $(json_num chunks_dispatched "$f") ))"
}

# -FI_EAGAIN storms: every 3000th data send starts 400 refusals in a row.
# The daemon waits them out: a verifying subscriber still gets every chunk.
storm_run() { # storm_run PROVIDER ENDPOINT
    name="storm-$2"; n=60000
    start_daemon "$name" -o fabric.provider="$1" -o fabric.endpoint="$2" -o readout.wait_subscribers=1 \
        -o readout.linger=20s -o sim.0.run_chunks=$n -o sim.0.chunk_size_min=16 -o sim.0.chunk_size_max=3000 \
        -o fabric.fault_eagain_every=3000 -o fabric.fault_eagain_burst=400
    start_sub "$name-sub" "$1" "$2" --verify --count $n; s=$sub
    wait_sub "$name-sub" "$s"
    wait_daemon "$name"
    f="$WORK/$name-sub.json"
    expect_eq "$name subscriber chunks" "$(json_num chunks "$f")" $n
    expect_eq "$name gaps" "$(json_num gaps "$f")" 0
    expect_eq "$name corrupt" "$(json_num corrupt "$f")" 0
    expect_gt "$name faults_eagain" "$(pub "$name" faults_eagain)" 0
    [ "$(pub "$name" again_provider)" -ge "$(pub "$name" faults_eagain)" ] ||
        fail "$name: again_provider < faults_eagain"
    ok "$name: every injected -FI_EAGAIN seen as provider back-pressure"
    check_keys_back "$name"
    PORT=$((PORT + 1))
}

# Error completions: every 1500th successful data completion becomes an
# error. Each one costs its subscriber the connection (declared dead, keys
# back); ringcast-sub reconnects and goes on. Counted exactly. Chunks of
# 20-60 KB (above rxm's eager size, read from the ring late): the payload is
# verified, so a key released while its send still reads the ring would show
# as corrupt data (gaps are expected: the subscriber was away). 1500, not
# 3000: on a loaded machine rxm once moved so little in 8 s that only one
# error came; the test needs two to see the connection come back and fail again.
# Over rdm the subscriber may learn of its death only from the publisher's
# silence (its peer timeout, 5 s): one such wait and the reconnect took all
# of 8 s under ASan on a busy machine (one error), so rdm runs 16 s.
error_run() { # error_run PROVIDER ENDPOINT
    name="senderr-$2"; secs=8
    [ "$2" = rdm ] && secs=16
    start_daemon "$name" -o fabric.provider="$1" -o fabric.endpoint="$2" -o card.0.ring_size=8M \
        -o sim.0.chunk_size_min=20000 -o sim.0.chunk_size_max=60000 -o fabric.fault_send_error_every=1500 \
        -o fabric.peer_timeout=1s
    start_sub "$name-sub" "$1" "$2" --verify --duration $secs; s=$sub
    wait "$s"   # gaps make it exit 1: checked below
    kill -TERM "$daemon"
    wait_daemon "$name"
    f="$WORK/$name-sub.json"
    injected=$(pub "$name" faults_send_error)
    expect_gt "$name faults_send_error" "$injected" 1
    expect_eq "$name completions_error = injected" "$(pub "$name" completions_error)" "$injected"
    [ "$(pub "$name" peers_dead)" -ge "$injected" ] || fail "$name: fewer dead peers than errors"
    ok "$name: every error completion declared its subscriber dead"
    expect_gt "$name subscriber reconnects" "$(json_num reconnects "$f")" 0
    expect_gt "$name subscriber chunks (after the reconnect too)" "$(json_num chunks "$f")" 64
    expect_gt "$name subscriber chunks" "$(json_num chunks "$f")" 0
    expect_eq "$name corrupt chunks" "$(json_num corrupt "$f")" 0
    expect_eq "$name duplicate chunks" "$(json_num duplicates "$f")" 0
    echo "   $name: $(pub "$name" drained_peers) dead RDM peers drained ($(pub "$name" drain_timeouts) with sends left at the removal, $(pub "$name" drain_no_proof) without proof), $(json_num gaps "$f") gaps while away"
    check_keys_back "$name"
    PORT=$((PORT + 1))
}

# Corrupt blocks (a trailer whose length does not fit) at a rate of 1e-3:
# counted as decode errors, never delivered; everything else arrives intact.
corrupt_run() {
    name=corrupt; n=100000
    start_daemon "$name" -o readout.wait_subscribers=1 -o readout.linger=20s -o sim.0.run_chunks=$n \
        -o sim.0.err_malformed=0.001 -o sim.0.chunk_size_min=16 -o sim.0.chunk_size_max=2000
    start_sub "$name-sub" tcp msg --json --duration 30; s=$sub
    wait_daemon "$name"
    kill -INT "$s" 2>/dev/null; wait "$s"
    f="$WORK/$name.json"
    errors=$(json_num decode_errors "$f")
    expect_gt "$name decode_errors" "$errors" 0
    expect_eq "$name malformed blocks decoded = injected" "$(json_num err_malformed "$f")" "$(json_num injected_malformed "$f")"
    expect_eq "$name subscriber chunks = chunks sent" "$(json_num chunks "$WORK/$name-sub.json")" \
        "$(json_num chunks_sent "$f")"
    check_keys_back "$name"
    PORT=$((PORT + 1))
}

# The detector goes quiet for 0.4 s of every second (sim pause_every/pause_for):
# the daemon waits and goes on; the subscriber gets every chunk. At 30000
# chunks/s, 60000 chunks take 2 s without quiet times and 3.3 s with them.
pause_run() {
    name=pause; n=60000
    start_daemon "$name" -o readout.wait_subscribers=1 -o readout.linger=20s -o sim.0.run_chunks=$n \
        -o sim.0.rate=30000chunks/s -o sim.0.pause_every=1s -o sim.0.pause_for=400ms
    start_sub "$name-sub" tcp msg --verify --count $n; s=$sub
    wait_sub "$name-sub" "$s"
    wait_daemon "$name"
    f="$WORK/$name-sub.json"
    expect_eq "$name subscriber chunks" "$(json_num chunks "$f")" $n
    expect_eq "$name gaps" "$(json_num gaps "$f")" 0
    secs=$(grep -o '"seconds":[0-9.]*' "$f" | cut -d: -f2)
    awk -v s="$secs" 'BEGIN { exit !(s >= 2.8) }' || fail "$name: run took $secs s: no quiet times?"
    ok "$name: the run took $secs s (quiet times happened), nothing lost"
    check_keys_back "$name"
    PORT=$((PORT + 1))
}

# rss_kb PID: resident set of a process in KiB.
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }

# bad_peer MODE ARGS...: one bad peer, 120 s at most (each waits 10 s at most
# for any answer; a hung one must fail this script, not its 900 s limit).
bad_peer() {
    bp_mode=$1; shift
    "$BAD" "$bp_mode" 127.0.0.1 "$PORT" "$@" & bp_pid=$!
    wait_bounded $bp_pid 120 "bad_peer $bp_mode"
    [ "$wb_st" -eq 0 ] || fail "bad_peer $bp_mode: exit status $wb_st"
}

bad_round() { # bad_round PROVIDER ENDPOINT: one of each kind of bad peer
    for i in 1 2 3; do bad_peer vanish "$1" "$2"; done
    bad_peer many-tags "$1" "$2" 100000 >"$WORK/many.json"
    bad_peer garbage "$1" "$2" 1000
}

# Misbehaving subscribers next to a verifying one: 5 rounds of 3 that leave
# before subscribing, one asking for 100 000 tags (1024 disjoint ranges are
# accepted, the 97 further requests refused) and one sending 1000 malformed
# messages. The good subscriber gets every chunk; memory stays flat.
bad_peer_run() { # bad_peer_run PROVIDER ENDPOINT
    name="badpeers-$2"; rounds=5
    start_daemon "$name" -o fabric.provider="$1" -o fabric.endpoint="$2" -o sim.0.rate=50000chunks/s \
        -o sim.0.chunk_size_min=16 -o sim.0.chunk_size_max=3000 -o fabric.peer_timeout=1s
    # The good one runs until the rounds are over: 5 of them took more than
    # start_sub's usual 60 s limit under ASan on a busy machine.
    sub_limit=600; start_sub "$name-good" "$1" "$2" --verify --duration 600; good=$sub; sub_limit=60
    sleep 1
    bad_round "$1" "$2"
    expect_eq "$name many-tags refused" "$(json_num sub_refused "$WORK/many.json")" 97
    rss_first=$(rss_kb "$daemon")
    r=1; while [ $r -lt $rounds ]; do bad_round "$1" "$2"; r=$((r + 1)); done
    sleep 2   # rdm: vanished peers are found by silence (peer_timeout 1 s)
    rss_last=$(rss_kb "$daemon")
    kill -INT "$good"; wait_sub "$name-good" "$good"
    kill -TERM "$daemon"; wait_daemon "$name"
    echo "   $name: daemon RSS after round 1: $rss_first KiB, after round $rounds: $rss_last KiB"
    if under_sanitizer; then   # ASan's quarantine of freed memory grows RSS
        echo "   $name: RSS not asserted in a sanitizer build"
    elif [ "$2" = msg ]; then
        [ $((rss_last - rss_first)) -lt 2048 ] || fail "$name: RSS grew by $((rss_last - rss_first)) KiB"
        ok "$name: RSS grew by less than 2 MiB over $((rounds - 1)) rounds"
    else
        # tcp;ofi_rxm keeps growing its buffer pools with every connection that
        # carried data (measured: about 0.5 MiB per such subscriber, none for
        # connections without data, flat for one long connection); see
        # net/README.md, "Memory". Reported, not asserted.
        echo "   $name: RSS not asserted over rxm (net/README.md, Memory)"
    fi
    f="$WORK/$name-good.json"
    expect_eq "$name good subscriber gaps" "$(json_num gaps "$f")" 0
    expect_eq "$name good subscriber corrupt" "$(json_num corrupt "$f")" 0
    expect_gt "$name good subscriber chunks" "$(json_num chunks "$f")" 0
    expect_eq "$name connections" "$(pub "$name" connections)" $((1 + rounds * 5))
    expect_eq "$name subscriptions_refused" "$(pub "$name" subscriptions_refused)" $((rounds * 97))
    expect_eq "$name malformed messages" "$(pub "$name" malformed_total)" $((rounds * 1000))
    check_keys_back "$name"
    PORT=$((PORT + 1))
}

# A send the provider keeps without writing it (tcp msg; net/README.md,
# "Stalled sends"): the 100th data message (a gather-copied fragment of a
# 1 MiB chunk) is reported posted and never handed to the provider. Under
# slow_policy = block with block_cut_after = 0 its key would hold the card for
# ever once the ring is full (64 x 1 MiB); the publisher finds the socket's
# send queue empty at two probes peer_timeout apart and closes the
# connection: the key comes back, the subscriber reconnects and gets the
# rest of the run (200 chunks at 50/s), and the daemon exits.
held_run() {
    name="held-msg"; n=200
    start_daemon "$name" -o readout.wait_subscribers=1 -o sim.0.run_chunks=$n -o readout.mode=auto \
        -o fabric.bounce_buffers=32 -o card.0.max_chunk_pieces=300 -o sim.0.chunk_size_min=1048576 \
        -o sim.0.chunk_size_max=1048576 -o card.0.ring_size=64M -o readout.slow_policy=block \
        -o readout.block_cut_after=0 -o fabric.peer_timeout=1s -o fabric.heartbeat=200ms \
        -o fabric.fault_hold_after=100 -o sim.0.rate=50chunks/s
    start_sub "$name-sub" tcp msg --verify --duration 40; s=$sub
    i=0   # without the rule the held key stops the card for ever: 30 s at most
    while kill -0 "$daemon" 2>/dev/null; do
        i=$((i + 1)); [ $i -lt 300 ] || { kill -KILL "$daemon" "$s"; cat "$WORK/$name.log"; fail "$name: the run never ended"; }
        sleep 0.1
    done
    wait_daemon "$name"
    kill -TERM "$s" 2>/dev/null; wait "$s"
    f="$WORK/$name.json"
    expect_eq "$name chunks_produced" "$(json_num chunks_produced "$f")" $n
    expect_eq "$name faults_held" "$(pub "$name" faults_held)" 1
    expect_eq "$name stalls_provider_held" "$(pub "$name" stalls_provider_held)" 1
    expect_eq "$name dead_by_provider_stall" "$(pub "$name" dead_by_provider_stall)" 1
    expect_gt "$name stall_probes" "$(pub "$name" stall_probes)" 1
    expect_eq "$name bounce buffers back" "$(pub "$name" bounce_free)" 32
    check_keys_back "$name"
    f="$WORK/$name-sub.json"
    expect_gt "$name subscriber reconnects" "$(json_num reconnects "$f")" 0
    expect_eq "$name subscriber corrupt" "$(json_num corrupt "$f")" 0
    PORT=$((PORT + 1))
}

held_run
for v in "tcp msg" "tcp;ofi_rxm rdm"; do
    set -- $v
    storm_run "$1" "$2"
    error_run "$1" "$2"
    bad_peer_run "$1" "$2"
done
corrupt_run
pause_run
echo "test_daemon_faults: $checks checks passed"
