#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Discovery across hosts (issue 14), on network namespaces joined by veth pairs
# to a bridge in a namespace of its own, all made and removed here: etcd on
# host E, readout hosts A and B (simulated cards with tag_base 0 and 0x10000),
# subscriber hosts S and T. Traffic stays inside these namespaces.
#   1. etcd (started after the first daemons: unreachable at their start),
#      tcp and tcp;ofi_rxm: two subscribers of tags of both cards get
#      fixed runs of both, bit-exact and gap-free (S by on_view; T also with
#      --hold: it keeps views of both publishers' connections and releases
#      them late and out of order, checked again at release, and writes
#      --out from the views), and ringcast-ls lists both.
#   2. etcd: SIGKILL daemon B while A and B stream: within the ttl B's entry
#      is gone and the subscriber says so, A's data goes on without a gap (S
#      and T verify it); B restarted: the subscriber finds it and gets its new
#      fixed run whole, after which B ends (the subscriber leaves it at its
#      end-of-run BYE) and its entry goes. Then etcd is stopped and restarted
#      while A runs: no subscriber loses a chunk, A's entry comes back, the
#      ended B's does not.
#   3. The same SIGKILL and restart with the directory backend (dir:).
# Needs root and `ip netns`; prints a SKIP line otherwise.
. "$(dirname "$0")/lib.sh"

if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null 2>&1; then
    echo "SKIP: discovery across network namespaces needs root and ip (iproute2)"; exit 0
fi
command -v etcd >/dev/null 2>&1 || { echo "SKIP: etcd (Debian etcd-server) is not installed"; exit 0; }

NS=rcd$$
NET=10.77.0
PORT=$(port_base 0)
ETCD_URL="etcd://$NET.1:2379"
PIDS=""

# A pid in PIDS is `timeout --foreground`'s (ip netns exec execs it): its
# program is its child and outlives a SIGKILL of it, so children go first
# (a failed run once left two 600 s subscribers running for minutes).
cleanup() {
    for p in $PIDS; do pkill -9 -P "$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; done
    for h in e a b s t br; do ip netns del "$NS$h" 2>/dev/null; done
}
trap 'st0=$?; cleanup; on_exit "$st0"' EXIT

# One bridge namespace; each host a namespace with eth0 on the bridge.
make_hosts() {
    ip netns add "${NS}br" && ip -n "${NS}br" link add br0 type bridge && ip -n "${NS}br" link set br0 up ||
        { echo "SKIP: cannot make network namespaces here (ip netns add failed)"; exit 0; }
    i=1
    for h in e a b s t; do
        ip netns add "$NS$h" &&
        ip -n "$NS$h" link add eth0 type veth peer name "p$h" netns "${NS}br" &&
        ip -n "${NS}br" link set "p$h" master br0 up &&
        ip -n "$NS$h" addr add "$NET.$i/24" dev eth0 &&
        ip -n "$NS$h" link set eth0 up && ip -n "$NS$h" link set lo up || fail "namespace $NS$h"
        i=$((i + 1))
    done
}
# on HOST CMD...: in the foreground (background jobs use ip netns exec
# directly, so that $! is the program's pid: ip netns exec execs it).
on() { h=$1; shift; ip netns exec "$NS$h" "$@"; }

start_etcd() {
    ip netns exec "${NS}e" etcd --name rc --data-dir "$WORK/etcd" --listen-client-urls "http://$NET.1:2379" \
        --advertise-client-urls "http://$NET.1:2379" --listen-peer-urls http://127.0.0.1:2380 \
        --initial-advertise-peer-urls http://127.0.0.1:2380 --initial-cluster rc=http://127.0.0.1:2380 \
        >>"$WORK/etcd.log" 2>&1 &
    etcd_pid=$!; PIDS="$PIDS $etcd_pid"
    i=0
    until on s "$BIN/ringcast-ls" "$ETCD_URL" >/dev/null 2>&1; do
        i=$((i + 1)); [ $i -lt 100 ] || { tail -n 20 "$WORK/etcd.log"; fail "etcd did not come up"; }
        sleep 0.1
    done
}

# daemon HOST NAME URL OVERRIDES...: ringcast-readout on host A (tag base 0)
# or B (0x10000), announcing at URL with a 2 s ttl; pid in $daemon.
daemon() {
    h=$1; name=$2; url=$3; shift 3
    case $h in a) addr=$NET.2; base=0 ;; b) addr=$NET.3; base=0x10000 ;; esac
    ip netns exec "$NS$h" "$BIN/ringcast-readout" -c deploy/ringcast.ini -o readout.stats_interval=0 \
        -o fabric.address="$addr" -o fabric.port="$PORT" -o card.0.tag_base="$base" \
        -o card.0.shm_name="rcd$$$h" -o discovery.url="$url" -o discovery.ttl=2s "$@" \
        --stats-json "$WORK/$name.json" 2>"$WORK/$name.log" &
    daemon=$!; PIDS="$PIDS $daemon"
}

# subscriber HOST NAME URL OPTIONS...: ringcast-sub --discover in the background ($sub).
subscriber() {
    h=$1; sname=$2; url=$3; shift 3
    ip netns exec "$NS$h" timeout --foreground -k 10 90 "$BIN/ringcast-sub" --discover "$url" --json "$@" \
        >"$WORK/$sname.json" 2>"$WORK/$sname.log" &
    sub=$!; PIDS="$PIDS $sub"
}

wait_log() { # wait_log FILE PATTERN WHAT SECONDS
    i=0
    until grep -q "$2" "$1"; do
        i=$((i + 1)); [ $i -lt $(($4 * 10)) ] || { cat "$1"; fail "$3 (not within $4 s)"; }
        sleep 0.1
    done
}

check_exact() { # check_exact NAME CHUNKS
    f="$WORK/$1.json"
    grep -q '"verified":true' "$f" || { cat "$f" "$WORK/$1.log"; fail "$1: not verified"; }
    expect_eq "$1 chunks" "$(json_num chunks "$f")" "$2"
    for k in gaps corrupt duplicates seq_lost; do expect_eq "$1 $k" "$(json_num $k "$f")" 0; done
}

# Per-publisher chunks of the subscriber summary: publisher_chunks NAME HOSTADDR
publisher_chunks() {
    grep -o "{\"host\":\"$2\",[^}]*}" "$WORK/$1.json" | grep -o '"chunks":[0-9]*' | cut -d: -f2
}

TAGS=0-7,0x10000-0x10007
N=20000

# ---- 1. fixed runs of both cards through etcd --------------------------------
# The first daemons start before etcd: unreachable at start, they announce
# once it is up.
make_hosts
for prov in tcp "tcp;ofi_rxm"; do
    ep=msg; [ "$prov" = tcp ] || ep=rdm
    tag=$(echo "$prov" | tr -c 'a-z\n' _)
    daemon a "fixed-a-$tag" "$ETCD_URL" -o fabric.provider="$prov" -o fabric.endpoint=$ep \
        -o readout.wait_subscribers=2 -o readout.linger=20s -o sim.0.run_chunks=$N; da=$daemon
    daemon b "fixed-b-$tag" "$ETCD_URL" -o fabric.provider="$prov" -o fabric.endpoint=$ep \
        -o readout.wait_subscribers=2 -o readout.linger=20s -o sim.0.run_chunks=$N; db=$daemon
    if [ "$prov" = tcp ]; then
        wait_log "$WORK/fixed-a-$tag.log" "discovery: cannot announce" "A says etcd is unreachable" 15
        ok "A started without etcd and says so"
        start_etcd
    fi
    wait_log "$WORK/fixed-a-$tag.log" "publishers\? announced" "$prov: daemon A announced" 10
    wait_log "$WORK/fixed-b-$tag.log" "publishers\? announced" "$prov: daemon B announced" 10
    on s "$BIN/ringcast-ls" "$ETCD_URL" >"$WORK/ls-$tag.txt" || fail "ringcast-ls $ETCD_URL"
    expect_eq "$prov: ringcast-ls lists A and B" "$(grep -c "$prov" "$WORK/ls-$tag.txt")" 2
    grep -q "^$NET.3 .*0x10000-0x107ff" "$WORK/ls-$tag.txt" || { cat "$WORK/ls-$tag.txt"; fail "B's tags"; }
    on s "$BIN/ringcast-ls" "$ETCD_URL" --json | grep -q "\"host\":\"$NET.2\"" || fail "ringcast-ls --json"
    subscriber s "fixed-s-$tag" "$ETCD_URL" --tags "$TAGS" --verify --count $((2 * N)); sub_s=$sub
    subscriber t "fixed-t-$tag" "$ETCD_URL" --tags "$TAGS" --verify --count $((2 * N)) --hold 16 \
        --out "$WORK/fixed-t-$tag.rec"
    wait_sub "fixed-t-$tag" "$sub"
    wait_sub "fixed-s-$tag" "$sub_s"
    check_exact "fixed-s-$tag" $((2 * N))
    check_exact "fixed-t-$tag" $((2 * N))
    f="$WORK/fixed-t-$tag.json"
    expect_eq "$prov: --discover --hold views kept" "$(json_num held "$f")" $((2 * N))
    for k in held_corrupt views_outstanding out_lost; do expect_eq "$prov: --discover --hold $k" "$(json_num $k "$f")" 0; done
    expect_eq "$prov: --discover --out records" "$(json_num out_records "$f")" $((2 * N))
    expect_eq "$prov: --out file size" "$(stat -c %s "$WORK/fixed-t-$tag.rec")" "$(json_num out_bytes "$f")"
    "$BIN/ringcast-dump" --json "$WORK/fixed-t-$tag.rec" >"$WORK/fixed-t-$tag.dump" || fail "$prov: --out file damaged"
    expect_eq "$prov: --out file records (ringcast-dump)" "$(wc -l <"$WORK/fixed-t-$tag.dump")" $((2 * N))
    daemon=$da; wait_daemon "fixed-a-$tag"
    daemon=$db; wait_daemon "fixed-b-$tag"
    # Each daemon's whole run went to both subscribers and was read: S and T
    # may leave a daemon at its end-of-run BYE before they end (it is then no
    # longer in their list of publishers), so the daemons' figures say it.
    for h in a b; do
        expect_eq "$prov: $h's run sent to S and T" "$(json_num chunks_sent "$WORK/fixed-$h-$tag.json")" $((2 * N))
        expect_eq "$prov: $h's run unread when they left" \
            "$(json_num chunks_unread_at_leave "$WORK/fixed-$h-$tag.json")" 0
    done
done
expect_eq "entries withdrawn at a clean exit" "$(on s "$BIN/ringcast-ls" "$ETCD_URL" | grep -c "$NET")" 0

# ---- 2./3. SIGKILL and restart a daemon; etcd down and back -----------------
# kill_restart URL NAME: A streams (rate-limited, endless), B streams; S
# subscribes to both cards, T to A's only; then B dies and comes back with
# a fixed run of M chunks, which S must get whole.
M=5000
kill_restart() {
    url=$1; n=$2
    daemon a "$n-a" "$url" -o sim.0.rate=5kchunks/s; da=$daemon
    daemon b "$n-b1" "$url" -o sim.0.rate=5kchunks/s; db=$daemon
    subscriber s "$n-s" "$url" --tags "$TAGS" --verify --duration 600
    ss=$sub
    subscriber t "$n-t" "$url" --tags 0-7 --verify --duration 600
    st=$sub
    wait_log "$WORK/$n-s.log" "$NET.3:$PORT: connected" "$n: S connected to B" 15
    wait_log "$WORK/$n-s.log" "$NET.2:$PORT: connected" "$n: S connected to A" 15
    wait_log "$WORK/$n-t.log" "$NET.2:$PORT: connected" "$n: T connected to A" 15
    sleep 1
    t0=$(date +%s%N)
    kill -9 "$db"; wait "$db" 2>/dev/null
    wait_log "$WORK/$n-s.log" "$NET.3:$PORT: gone" "$n: S says B is gone" 8
    gone_ms=$((($(date +%s%N) - t0) / 1000000))
    echo "   $n: B's entry gone for the subscriber $gone_ms ms after SIGKILL (ttl 2 s)"
    [ "$(on s "$BIN/ringcast-ls" "$url" | grep -c "$NET.3")" = 0 ] || fail "$n: B still listed"
    ok "$n: B's entry gone within the ttl"
    daemon b "$n-b2" "$url" -o readout.wait_subscribers=1 -o readout.linger=30s -o sim.0.run_chunks=$M
    db=$daemon
    wait_log "$WORK/$n-s.log" "$NET.3:$PORT: restarted" "$n: S found the restarted B" 10
    wait_log "$WORK/$n-b2.log" "every card finished its run" "$n: B's new run" 20
    i=0
    until [ "$(on s "$BIN/ringcast-ls" "$url" --json | grep -o "\"host\":\"$NET.[23]\"" | wc -l)" = 2 ] ||
          [ $i -ge 50 ]; do i=$((i + 1)); sleep 0.1; done
}

finish_streams() { # finish_streams NAME: stop subscribers, then A and B; check
    n=$1
    kill -TERM "$ss" "$st"
    wait "$ss"; s1=$?; wait "$st"; s2=$?
    [ $s1 -eq 0 ] && [ $s2 -eq 0 ] || { cat "$WORK/$n-s.log" "$WORK/$n-s.json" "$WORK/$n-t.json"; fail "$n: subscriber status $s1 $s2"; }
    for s in "$n-s" "$n-t"; do
        grep -q '"verified":true' "$WORK/$s.json" || { cat "$WORK/$s.json"; fail "$s: not verified"; }
        for k in gaps corrupt duplicates seq_lost; do expect_eq "$s $k" "$(json_num $k "$WORK/$s.json")" 0; done
    done
    expect_gt "$n: S's restarts" "$(grep -o '"restarts":[0-9]*' "$WORK/$n-s.json" | cut -d: -f2)" 0
    expect_gt "$n: chunks of A at T" "$(publisher_chunks "$n-t" $NET.2)" 1000
    kill -TERM "$da" "$db" 2>/dev/null   # B may have left already: its run ended, its subscriber left
    daemon=$da; wait_daemon "$n-a"
    [ -n "$b2_reaped" ] || { daemon=$db; wait_daemon "$n-b2"; }
    # S left B at its end-of-run BYE (so B is no longer in S's list of
    # publishers): B's figures say S got its new run whole, and S's
    # verification above says without a gap or a lost sequence number.
    expect_eq "$n: B's new run sent to S" "$(json_num chunks_sent "$WORK/$n-b2.json")" $M
    expect_eq "$n: of it unread by S when it left" "$(json_num chunks_unread_at_leave "$WORK/$n-b2.json")" 0
}

b2_reaped=
kill_restart "$ETCD_URL" etcd
# B's fixed run is over: its end-of-run BYE lets S leave it, and B ends,
# removing its entry while etcd is still there.
wait "$db"; b2_st=$?; b2_reaped=1
[ "$b2_st" -eq 0 ] || { cat "$WORK/etcd-b2.log"; fail "etcd: B's daemon exit status $b2_st"; }
ok "etcd: B ended after its run (S left it at its BYE)"
# etcd away for longer than the ttl while A runs.
kill -TERM "$etcd_pid"; wait "$etcd_pid" 2>/dev/null
sleep 3
grep -q "discovery: cannot announce" "$WORK/etcd-a.log" || { cat "$WORK/etcd-a.log"; fail "A did not notice etcd leave"; }
ok "A noticed etcd leave and kept publishing"
start_etcd
i=0
until [ "$(on s "$BIN/ringcast-ls" "$ETCD_URL" | grep -c "$NET.2")" = 1 ]; do
    i=$((i + 1)); [ $i -lt 60 ] || { on s "$BIN/ringcast-ls" "$ETCD_URL"; fail "A's entry did not come back"; }
    sleep 0.1
done
ok "A's entry back in etcd"
[ "$(on s "$BIN/ringcast-ls" "$ETCD_URL" | grep -c "$NET.3")" = 0 ] || \
    { on s "$BIN/ringcast-ls" "$ETCD_URL"; fail "etcd: the ended B is listed again"; }
ok "the ended B's entry stays gone"
sleep 1
finish_streams etcd
expect_gt "etcd: S's failed lookups while etcd was away" "$(json_num lookup_failures "$WORK/etcd-s.json")" 0
expect_gt "etcd: A's failed announcements" "$(grep -o '"discovery":{[^}]*}' "$WORK/etcd-a.json" | grep -o '"failures":[0-9]*' | cut -d: -f2)" 0

kill -TERM "$etcd_pid"; wait "$etcd_pid" 2>/dev/null
DIR_URL="dir:$WORK/discovery"
b2_reaped=
kill_restart "$DIR_URL" dir
finish_streams dir
# The killed B's file was removed by the restarted B (a dead pid of its host),
# the others at their clean exits.
expect_eq "dir: no entry files left" "$(ls "$WORK/discovery" | grep -c json)" 0

echo "test_discovery: $checks checks passed"
