#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Subscribers that fail or fall behind: a SIGKILLed subscriber (tcp msg and
# tcp;ofi_rxm rdm) does not hold keys once it is declared dead and costs the
# other subscriber nothing; a slow subscriber under slow_policy = drop loses
# chunks (counted exactly) while the other gets all of them; under block
# (the default) nobody loses anything and the card is stalled instead.
# Subscribers holding views (ringcast-sub --hold-ms) beside a normal one on
# the same port: under block only their own flow stalls (their shares wait in
# their backlogs), under drop only they lose chunks, counted exactly.
. "$(dirname "$0")/lib.sh"

PORT=$(port_base 7919)
TAGS=0-0xffff   # card 0's e-links (tag base 0)




check_sub_exact() { # check_sub_exact NAME CHUNKS
    f="$WORK/$1.json"
    grep -q '"verified":true' "$f" || { cat "$f"; fail "$1: not verified"; }
    expect_eq "$1 chunks" "$(json_num chunks "$f")" "$2"
    expect_eq "$1 gaps" "$(json_num gaps "$f")" 0
    expect_eq "$1 corrupt" "$(json_num corrupt "$f")" 0
}

check_accounting() { # check_accounting NAME
    f="$WORK/$1.json"
    expect_eq "$1 keys_outstanding" "$(json_num keys_outstanding "$f")" 0
    expect_eq "$1 decoded = no_subscriber + published" \
        "$(( $(json_num chunks_no_subscriber "$f") + $(json_num chunks_published "$f") ))" \
        "$(json_num chunks_decoded "$f")"
    expect_eq "$1 shares = sent + dropped + failed + unsent" \
        "$(( $(json_num chunks_sent "$f") + $(json_num chunks_dropped "$f") + $(json_num shares_failed "$f") + $(json_num shares_unsent "$f") ))" \
        "$(json_num shares "$f")"
}

# sub_records NAME: the daemon's subscriber records, one per line.
sub_records() { grep -o '"subscribers":\[[^]]*\]' "$WORK/$1.json" | sed 's/},{/}\n{/g'; }
# record_of NAME CHUNKS_SENT: the record of the subscriber that was sent that many.
record_of() { sub_records "$1" | grep "\"chunks_sent\":$2," | head -n 1; }

# -- SIGKILL of one subscriber in mid-run --------------------------------------
sigkill_run() { # sigkill_run NAME PROVIDER ENDPOINT
    name=$1; prov=$2; ep=$3; n=60000
    # linger: the survivor may still be reading the tail when the run is over
    # (a completed send means the provider has it, not the subscriber; with
    # linger 0 the daemon's exit cut up to 255 chunks off on a loaded machine).
    start_daemon "$name" -o "fabric.provider=$prov" -o "fabric.endpoint=$ep" -o readout.wait_subscribers=2 \
        -o sim.0.run_chunks=$n -o sim.0.rate=30000chunks/s -o fabric.peer_timeout=1s -o fabric.heartbeat=200ms \
        -o readout.linger=20s
    start_sub "$name-a" "$prov" "$ep" --verify --count $n; sub_a=$sub
    start_sub "$name-b" "$prov" "$ep" --verify --duration 50; sub_b=$sub
    wait_cards_started "$name"
    sleep 0.5
    # $sub_b is lib.sh's `timeout` wrapper: kill the subscriber itself.
    pkill -KILL -P "$sub_b" ringcast-sub || fail "$name: no subscriber to kill"
    wait "$sub_b" 2>/dev/null
    wait_sub "$name-a" "$sub_a"
    wait_daemon "$name"
    check_sub_exact "$name-a" $n
    check_accounting "$name"
    expect_eq "$name subscriber records" "$(sub_records "$name" | grep -c address)" 2
    [ -n "$(record_of "$name" $n)" ] || { sub_records "$name"; fail "$name: no subscriber was sent all $n"; }
    ok "$name: the surviving subscriber was sent all $n chunks"
    PORT=$((PORT + 1))
}
sigkill_run kill-msg tcp msg
sigkill_run kill-rdm "tcp;ofi_rxm" rdm

# -- slow subscriber, policy drop ------------------------------------------------
n=20000
# slow_cut_after = 0: this checks that a slow reader's drops are counted
# exactly, so it must not be cut off. By default it would be, after 0.5 s:
# over tcp its sends wait behind its socket buffers (MBs, at 1 KiB/ms:
# seconds), so its oldest share ages although it reads (README.md, "Slow
# subscribers"; test_daemon_stall.sh tests the cut-off).
start_daemon drop -o readout.slow_policy=drop -o readout.wait_subscribers=2 -o sim.0.run_chunks=$n \
    -o sim.0.rate=10000chunks/s -o readout.slow_cut_after=0
start_sub drop-a tcp msg --verify --count $n; sub_a=$sub
start_sub drop-b tcp msg --verify --slow-us 1000 --duration 50; sub_b=$sub
wait_sub drop-a "$sub_a"
wait_daemon drop
sleep 0.5
kill -TERM "$sub_b"
wait "$sub_b"   # it saw gaps: exit status 1 is expected
check_sub_exact drop-a $n
check_accounting drop
fast=$(record_of drop $n)
slow=$(sub_records drop | grep -v "\"chunks_sent\":$n,")
[ -n "$fast" ] && [ -n "$slow" ] || { sub_records drop; fail "drop: subscriber records"; }
expect_eq "drop fast subscriber chunks_dropped" "$(echo "$fast" | grep -o '"chunks_dropped":[0-9]*' | cut -d: -f2)" 0
slow_sent=$(echo "$slow" | grep -o '"chunks_sent":[0-9]*' | cut -d: -f2)
slow_dropped=$(echo "$slow" | grep -o '"chunks_dropped":[0-9]*' | cut -d: -f2)
expect_gt "drop slow subscriber chunks_dropped" "$slow_dropped" 0
expect_eq "drop slow subscriber sent + dropped" $((slow_sent + slow_dropped)) $n
expect_eq "drop total chunks_dropped" "$(json_num chunks_dropped "$WORK/drop.json")" "$slow_dropped"
# A send completes when the provider has the data, not when the subscriber
# read it: what the slow one had not read when the daemon closed its
# connection is lost on its side. So: at most what was sent, none corrupt.
slow_received=$(json_num chunks "$WORK/drop-b.json")
expect_gt "drop slow subscriber received" "$slow_received" 0
[ "$slow_received" -le "$slow_sent" ] || fail "drop: slow subscriber received $slow_received > sent $slow_sent"
ok "drop slow subscriber received $slow_received <= sent $slow_sent"
expect_eq "drop slow subscriber corrupt" "$(json_num corrupt "$WORK/drop-b.json")" 0
PORT=$((PORT + 1))

# -- slow subscriber, policy block: nobody loses, the card stalls ----------------
n=4000
# readout.linger: the slow one is still reading when the run is over.
start_daemon block -o readout.wait_subscribers=2 -o sim.0.run_chunks=$n -o card.0.ring_size=256k \
    -o card.0.rd_update_bytes=64k -o readout.queue_size=64 -o readout.linger=20s
start_sub block-a tcp msg --verify --count $n; sub_a=$sub
start_sub block-b tcp msg --verify --count $n --slow-us 300; sub_b=$sub
wait_sub block-a "$sub_a"
wait_sub block-b "$sub_b"
wait_daemon block
check_sub_exact block-a $n
check_sub_exact block-b $n
check_accounting block
expect_eq "block chunks_sent" "$(json_num chunks_sent "$WORK/block.json")" $((2 * n))
expect_eq "block chunks_dropped" "$(json_num chunks_dropped "$WORK/block.json")" 0
expect_gt "block card_stall_ns (backpressure)" "$(json_num card_stall_ns "$WORK/block.json")" 0

PORT=$((PORT + 1))

# -- subscribers holding views: only their own flow stalls (block), only their own chunks go (drop) --
# Two holders (ringcast-sub --hold 1 --hold-ms MS: every view kept MS ms, so
# a send subscriber's 64 receive buffers, and an RMA subscriber's 2 MiB ring,
# are all held for that long) and a normal subscriber of the same tags on the
# SAME publisher port. 32 KiB chunks in 64 KiB blocks: one message each, one
# receive buffer each (no reassembly copy that would free the buffer).
hold_daemon() { # hold_daemon NAME OVERRIDES... ($hold_subs subscribers, default 3)
    hname=$1; shift
    start_daemon "$hname" -o fabric.provider=tcp -o fabric.endpoint=msg -o readout.wait_subscribers=${hold_subs:-3} \
        -o readout.linger=40s -o sim.0.run_chunks=$hold_n -o sim.0.chunk_size_min=32k -o sim.0.chunk_size_max=32k \
        -o card.0.block_size=64k -o sim.0.rate=400chunks/s -o control.socket="$WORK/$hname.sock" "$@"
}
# ctl_subs NAME: the daemon's subscribers now (ringcast-ctl subscribers: chunks_sent, backlog, deferred).
ctl_subs() { "$BIN/ringcast-ctl" --socket "$WORK/$1.sock" --compact subscribers; }

# Block: the normal one finishes its count while both holders still hold;
# all three end bit-exact, the holders' shares went through their backlogs,
# whose bound was never reached (the lane never waited for a holder).
hold_n=400
hold_daemon hold-block
# Each holder takes at least 12 s for the run (about 64 views per 2 s); the
# normal one about 2 (the run lasts 1 s): a wide margin on a loaded machine.
start_sub hold-block-send tcp msg --verify --count $hold_n --hold 1 --hold-ms 2000; sub_a=$sub
start_sub hold-block-rma tcp msg --verify --count $hold_n --hold 1 --hold-ms 2000 --delivery rma \
    --rma-ring-size 2097152; sub_b=$sub
start_sub hold-block-norm tcp msg --verify --count $hold_n; sub_c=$sub
wait_sub hold-block-norm "$sub_c"
ctl_subs hold-block >"$WORK/hold-block-mid.json" || fail "hold-block: ringcast-ctl subscribers"
# Both holders are still behind when the normal one has everything.
behind=$(python3 -c "
import json,sys
d=json.load(open(sys.argv[1]))
print(sum(1 for s in d['subscribers'] if s['chunks_sent'] < int(sys.argv[2]) and s['deferred'] + s['backlog'] > 0))" \
    "$WORK/hold-block-mid.json" $hold_n)
expect_eq "hold-block: holders still holding when the normal subscriber finished" "$behind" 2
wait_sub hold-block-send "$sub_a"
wait_sub hold-block-rma "$sub_b"
wait_daemon hold-block
for s in send rma norm; do
    check_sub_exact "hold-block-$s" $hold_n
done
expect_gt "hold-block-send views kept at once" "$(json_num held_max "$WORK/hold-block-send.json")" 32
expect_eq "hold-block-rma rma_fallbacks" "$(json_num rma_fallbacks "$WORK/hold-block-rma.json")" 0
check_accounting hold-block
expect_eq "hold-block chunks_sent" "$(json_num chunks_sent "$WORK/hold-block.json")" $((3 * hold_n))
expect_eq "hold-block chunks_dropped" "$(json_num chunks_dropped "$WORK/hold-block.json")" 0
expect_gt "hold-block shares_deferred" "$(json_num shares_deferred "$WORK/hold-block.json")" 0
expect_eq "hold-block backlog_full_waits (no lane waited for a holder)" \
    "$(json_num backlog_full_waits "$WORK/hold-block.json")" 0
PORT=$((PORT + 1))

# Drop: the holders lose chunks, each counted exactly: sent + dropped = the
# run; it read all it was sent (its BYE's count: unread 0) and missed exactly
# what was dropped (n - received; its --verify gaps cover all but trailing
# drops); the normal one loses nothing. The holders leave after 10 s (the
# run takes about 2), having read the tail of what they were sent.
hold_n=800
hold_daemon hold-drop -o readout.slow_policy=drop -o readout.slow_cut_after=0
start_sub hold-drop-send tcp msg --verify --duration 10 --hold 1 --hold-ms 500; sub_a=$sub
start_sub hold-drop-rma tcp msg --verify --duration 10 --hold 1 --hold-ms 500 --delivery rma \
    --rma-ring-size 2097152; sub_b=$sub
start_sub hold-drop-norm tcp msg --verify --count $hold_n; sub_c=$sub
wait_sub hold-drop-norm "$sub_c"
wait "$sub_a"; wait "$sub_b"   # gaps: exit status 1 is expected
wait_daemon hold-drop
check_sub_exact hold-drop-norm $hold_n
check_accounting hold-drop
drops=0
for s in send rma; do
    f="$WORK/hold-drop-$s.json"
    expect_eq "hold-drop-$s corrupt" "$(json_num corrupt "$f")" 0
    expect_eq "hold-drop-$s duplicates" "$(json_num duplicates "$f")" 0
    got=$(json_num chunks "$f"); missing=$(json_num missing "$f")
    rec=$(sub_records hold-drop | grep "\"chunks_handled\":$got," | head -n 1)
    [ -n "$rec" ] || { sub_records hold-drop; fail "hold-drop-$s: no daemon record with chunks_handled $got"; }
    sent=$(echo "$rec" | grep -o '"chunks_sent":[0-9]*' | cut -d: -f2)
    dropped=$(echo "$rec" | grep -o '"chunks_dropped":[0-9]*' | cut -d: -f2)
    expect_gt "hold-drop-$s chunks_dropped" "$dropped" 0
    expect_eq "hold-drop-$s sent + dropped" $((sent + dropped)) $hold_n
    expect_eq "hold-drop-$s received = sent (nothing unread)" "$got" "$sent"
    expect_eq "hold-drop-$s missed = dropped" $((hold_n - got)) "$dropped"
    [ "$missing" -le "$dropped" ] || fail "hold-drop-$s: --verify missing $missing > dropped $dropped"
    ok "hold-drop-$s: --verify gaps miss $missing of the $dropped dropped (the rest trail its last chunk)"
    drops=$((drops + dropped))
done
expect_eq "hold-drop chunks_dropped (the holders' only)" "$(json_num chunks_dropped "$WORK/hold-drop.json")" $drops

PORT=$((PORT + 1))

# Block with block_cut_after: an RMA holder gives its ring back in bursts of
# CREDIT (every 2 s), each of which ends its ring-full age, while the oldest
# share in its backlog waits on (it had 337 of the 400 deferred at 1 s, and
# takes about 13 s for them). That wait is its oldest share's, so it is cut
# off after about 3 s (counted, its deferred shares settled as not sent);
# before, its age never passed 2 s and block_cut_after never fired, however
# long its chunks waited in the backlog (holding their ring space).
hold_n=400
hold_subs=2 hold_daemon hold-cut -o readout.block_cut_after=3s
start_sub hold-cut-rma tcp msg --verify --duration 30 --exit-on-close --hold 1 --hold-ms 2000 --delivery rma \
    --rma-ring-size 2097152; sub_b=$sub
start_sub hold-cut-norm tcp msg --verify --count $hold_n; sub_c=$sub
wait_sub hold-cut-norm "$sub_c"
wait "$sub_b"   # cut off: gaps, exit status 1 is expected
wait_daemon hold-cut
check_sub_exact hold-cut-norm $hold_n
check_accounting hold-cut
expect_eq "hold-cut subscribers_cut_off (the RMA holder)" "$(json_num subscribers_cut_off "$WORK/hold-cut.json")" 1
expect_gt "hold-cut shares_unsent (its backlog at the cut)" "$(json_num shares_unsent "$WORK/hold-cut.json")" 0
expect_eq "hold-cut chunks_dropped" "$(json_num chunks_dropped "$WORK/hold-cut.json")" 0
got=$(json_num chunks "$WORK/hold-cut-rma.json")
[ "$got" -lt $hold_n ] || fail "hold-cut-rma: received all $got chunks: it was not cut off in time"
expect_eq "hold-cut-rma corrupt" "$(json_num corrupt "$WORK/hold-cut-rma.json")" 0
ok "hold-cut-rma: cut off after $got of $hold_n chunks"

PORT=$((PORT + 1))

# A reload from block to drop while both holders have backlogs: their
# deferred shares are sent or dropped, each counted once (sent + dropped =
# the run, per holder: nothing uncounted), in order (--verify: no duplicate,
# nothing late), received = sent and missed = dropped; the normal one loses
# nothing. slow_cut_after = 0: drop must not cut the holders off (as above).
hold_n=800
RCFG="$WORK/reload.ini"
sed -e 's|^slow_cut_after = .*|slow_cut_after = 0|' deploy/ringcast.ini > "$RCFG"
grep -q '^slow_policy = block$' "$RCFG" || fail "hold-reload: no slow_policy = block line to edit"
"$BIN/ringcast-readout" -c "$RCFG" -o readout.stats_interval=0 -o fabric.port="$PORT" -o fabric.provider=tcp \
    -o fabric.endpoint=msg -o readout.wait_subscribers=3 -o readout.linger=40s -o sim.0.run_chunks=$hold_n \
    -o sim.0.chunk_size_min=32k -o sim.0.chunk_size_max=32k -o card.0.block_size=64k -o sim.0.rate=400chunks/s \
    -o control.socket="$WORK/hold-reload.sock" --stats-json "$WORK/hold-reload.json" 2>"$WORK/hold-reload.log" &
daemon=$!
start_sub hold-reload-send tcp msg --verify --duration 50 --exit-on-close --hold 1 --hold-ms 2500; sub_a=$sub
start_sub hold-reload-rma tcp msg --verify --duration 50 --exit-on-close --hold 1 --hold-ms 2500 --delivery rma \
    --rma-ring-size 2097152; sub_b=$sub
start_sub hold-reload-norm tcp msg --verify --count $hold_n; sub_c=$sub
wait_cards_started hold-reload
# Until both holders have deferred shares waiting (the run lasts 2 s). Each
# holder keeps every view 2.5 s: the send holder has 64 buffers of 64 KiB,
# two 32 000-byte chunks each, so it takes about 51 chunks a second and its
# backlog lasts about 15 s, beyond this loop's 8 s even when a busy machine
# makes each probe (ringcast-ctl and python3) take half a second. A CI run
# under ASan reloaded 6.3 s after the start: with 0.5 s holds the send
# holder had taken its last chunk by then and there was nothing to drop.
# Bounded by time, not probes: slow probes must not end the wait early.
# The holders end at the daemon's end-of-run BYE (--exit-on-close), which
# follows everything sent to them: a fixed duration ended one in a CI run
# with 27 chunks sent and not yet read (2.5 s holds drain slowly).
t_end=$(($(date +%s) + 8))
until [ "$(ctl_subs hold-reload | python3 -c "
import json,sys
print(sum(1 for s in json.load(sys.stdin)['subscribers'] if s['deferred'] > 0))")" = 2 ]; do
    [ "$(date +%s)" -lt $t_end ] || fail "hold-reload: the holders never had deferred shares"; sleep 0.02
done
sed -i 's|^slow_policy = block$|slow_policy = drop|' "$RCFG"
out=$("$BIN/ringcast-ctl" --socket "$WORK/hold-reload.sock" --compact reload) || fail "hold-reload: reload: $out"
echo "$out" | grep -q '"key":"readout.slow_policy"' || fail "hold-reload: slow_policy not changed: $out"
wait_sub hold-reload-norm "$sub_c"
wait "$sub_a"; wait "$sub_b"   # gaps: exit status 1 is expected
wait_daemon hold-reload
check_sub_exact hold-reload-norm $hold_n
check_accounting hold-reload
expect_eq "hold-reload subscribers_cut_off" "$(json_num subscribers_cut_off "$WORK/hold-reload.json")" 0
expect_gt "hold-reload shares_deferred (before the reload)" "$(json_num shares_deferred "$WORK/hold-reload.json")" 0
for s in send rma; do
    f="$WORK/hold-reload-$s.json"
    for k in corrupt duplicates seq_late; do expect_eq "hold-reload-$s $k" "$(json_num $k "$f")" 0; done
    got=$(json_num chunks "$f")
    rec=$(sub_records hold-reload | grep "\"chunks_handled\":$got," | head -n 1)
    [ -n "$rec" ] || { sub_records hold-reload; fail "hold-reload-$s: no daemon record with chunks_handled $got"; }
    sent=$(echo "$rec" | grep -o '"chunks_sent":[0-9]*' | cut -d: -f2)
    dropped=$(echo "$rec" | grep -o '"chunks_dropped":[0-9]*' | cut -d: -f2)
    unsent=$(echo "$rec" | grep -o '"shares_unsent":[0-9]*' | cut -d: -f2)
    expect_gt "hold-reload-$s chunks_dropped" "$dropped" 0
    expect_eq "hold-reload-$s shares_unsent" "$unsent" 0
    expect_eq "hold-reload-$s sent + dropped" $((sent + dropped)) $hold_n
    expect_eq "hold-reload-$s received = sent (nothing unread)" "$got" "$sent"
    expect_eq "hold-reload-$s missed = dropped" $((hold_n - got)) "$dropped"
done

PORT=$((PORT + 1))

# Block, chunks of 200..700 KiB to an RMA holder (2 MiB ring: a record is at
# most 256 KiB, so most chunks take 2 or 3 records) that keeps every view
# 1.5 s, longer than fabric.peer_timeout (1 s): a chunk's later record finds
# the ring full and waits for CREDIT. That is slowness, not death: before,
# its waiting rest was taken for a send the provider never accepted and the
# live holder was declared dead (dead_by_stuck_send) after peer_timeout.
big_n=24
start_daemon hold-big -o fabric.provider=tcp -o fabric.endpoint=msg -o readout.wait_subscribers=2 \
    -o fabric.peer_timeout=1s -o fabric.heartbeat=200ms -o sim.0.run_chunks=$big_n -o card.0.block_size=64k \
    -o sim.0.chunk_size_min=200k -o sim.0.chunk_size_max=700k -o sim.0.rate=20chunks/s
start_sub hold-big-rma tcp msg --verify --count $big_n --hold 1 --hold-ms 1500 --delivery rma \
    --rma-ring-size 2097152; sub_b=$sub
start_sub hold-big-norm tcp msg --verify --count $big_n; sub_c=$sub
wait_sub hold-big-norm "$sub_c"
wait_sub hold-big-rma "$sub_b"
wait_daemon hold-big
check_sub_exact hold-big-norm $big_n
check_sub_exact hold-big-rma $big_n
check_accounting hold-big
expect_eq "hold-big dead_by_stuck_send" "$(pub hold-big dead_by_stuck_send)" 0
expect_eq "hold-big peers_dead" "$(pub hold-big peers_dead)" 0
expect_gt "hold-big fragments_deferred (a chunk's rest waited for CREDIT)" "$(pub hold-big fragments_deferred)" 0

echo "daemon_slow: $checks checks passed"
