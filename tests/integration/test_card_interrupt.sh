#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# card.N.wait = interrupt: the idle readout thread sleeps on the card's
# data-interrupt eventfd. A sim-process card (the eventfd handed to
# ringcast-sim over the unix socket @ringcast-irq-<shm_name>) and an
# in-process sim card, both at a low rate so that the ring goes empty
# between chunks: every chunk reaches a verifying subscriber, the readout
# slept on the interrupt and interrupts ended those sleeps, nothing is left
# over. card.0.cpus pins the readout thread, fabric.cpus the publisher
# threads; a CPU outside the process's set is refused naming the key. A card
# that raises no interrupt (pcie) is refused at start. About 15 s.
. "$(dirname "$0")/lib.sh"
# A failed check leaves no daemon or simulator behind.
cleanup() { rc=$?; for p in $daemon $sim $holder; do kill "$p" 2>/dev/null; done; (exit $rc); on_exit; }
trap cleanup EXIT

PORT=$(port_base 17000)
CPU_SETSIZE_MAX=1023   # the largest CPU number a list may name (CPU_SETSIZE - 1)
TAGS=0-0xffff
SHM=ringcast-it-irq$$

check_run() { # check_run NAME CHUNKS
    f="$WORK/$1-a.json"
    grep -q '"verified":true' "$f" || { cat "$f"; fail "$1: not verified"; }
    expect_eq "$1 subscriber chunks" "$(json_num chunks "$f")" "$2"
    expect_eq "$1 gaps" "$(json_num gaps "$f")" 0
    f="$WORK/$1.json"
    expect_gt "$1 irq_waits" "$(json_num irq_waits "$f")" 0
    expect_gt "$1 interrupts" "$(json_num interrupts "$f")" 0
    expect_eq "$1 keys_outstanding" "$(json_num keys_outstanding "$f")" 0
    expect_eq "$1 decode_errors" "$(json_num decode_errors "$f")" 0
}

# 1. sim-process card: ringcast-sim gets the eventfd over the unix socket.
n=3000
CARD="-o card.0.type=sim-process -o card.0.memory=shm -o card.0.shm_name=$SHM -o card.0.wait=interrupt"
start_daemon proc $CARD -o readout.wait_subscribers=1
timeout --foreground -k 10 60 "$BIN/ringcast-sim" -c deploy/ringcast.ini $CARD --rate 2000chunks/s --run-chunks $n \
    >"$WORK/sim.out" 2>&1 &
sim=$!
start_sub proc-a tcp msg --verify --count $n; sub_a=$sub
wait_sub proc-a "$sub_a"
wait_daemon proc
wait "$sim" || { cat "$WORK/sim.out"; fail "ringcast-sim exit status"; }
check_run proc $n
PORT=$((PORT + 1))

# 2. in-process simulated card.
start_daemon thread -o card.0.wait=interrupt -o readout.wait_subscribers=1 \
    -o sim.0.rate=2000chunks/s -o sim.0.run_chunks=$n
start_sub thread-a tcp msg --verify --count $n; sub_a=$sub
wait_sub thread-a "$sub_a"
wait_daemon thread
check_run thread $n
PORT=$((PORT + 1))

# 3. card.0.cpus pins the readout thread, fabric.cpus the publisher threads
# (the last and the first CPU this process may use; the same one on a
# single-CPU host). The daemon says so in its log.
allowed=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
first=${allowed%%[-,]*}
last=${allowed##*[-,]}
thread_cpus() { # thread_cpus COMM: Cpus_allowed_list of the daemon's thread COMM (waits for it)
    tid=
    i=0
    while [ -z "$tid" ]; do
        for t in /proc/$daemon/task/*; do
            [ "$(cat $t/comm 2>/dev/null)" = "$1" ] && tid=$(basename $t)
        done
        i=$((i + 1)); [ $i -lt 200 ] || { cat "$WORK/pinned.log"; fail "pinned: no thread $1"; }
        [ -n "$tid" ] || sleep 0.05
    done
    sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/$daemon/task/$tid/status
}
start_daemon pinned -o card.0.cpus=$last -o fabric.cpus=$first -o readout.publisher_threads=2 \
    -o sim.0.rate=1000chunks/s -o sim.0.run_time=3s
expect_eq "readout thread's CPUs (card.0.cpus = $last)" "$(thread_cpus rc-readout-0)" "$last"
expect_eq "publisher thread 0's CPUs (fabric.cpus = $first)" "$(thread_cpus rc-publish0)" "$first"
expect_eq "publisher thread 1's CPUs (fabric.cpus = $first)" "$(thread_cpus rc-publish1)" "$first"
wait_daemon pinned
grep -q "publisher threads pinned to CPUs $first (fabric.cpus)" "$WORK/pinned.log" \
    || { cat "$WORK/pinned.log"; fail "pinned: fabric.cpus not in the log"; }
ok "pinned: fabric.cpus in the log"
PORT=$((PORT + 1))

# A CPU this process may not use is a configuration error naming the key.
"$BIN/ringcast-readout" --check-config deploy/ringcast.ini -o fabric.cpus=$((CPU_SETSIZE_MAX)) \
    >"$WORK/cpus.out" 2>&1
expect_eq "fabric.cpus = $CPU_SETSIZE_MAX: exit status" $? 2
grep -q "fabric.cpus.*CPU $CPU_SETSIZE_MAX is not one this process may run on (it may use $allowed)" \
    "$WORK/cpus.out" || { cat "$WORK/cpus.out"; fail "fabric.cpus: no clear error"; }
ok "fabric.cpus outside this process's CPUs: refused naming the key"

# 4. A card without interrupts.
"$BIN/ringcast-readout" -c deploy/ringcast.ini -o fabric.port=$PORT -o card.0.type=pcie \
    -o card.0.bar_file="$WORK/bar0" -o card.0.memory=shm -o card.0.shm_name=${SHM}p \
    -o card.0.wait=interrupt 2>"$WORK/pcie.log"
expect_eq "pcie card with wait = interrupt: exit status" $? 1
grep -q "card.0: card.0 readout: wait = interrupt, but a pcie card raises no interrupt" "$WORK/pcie.log" \
    || { cat "$WORK/pcie.log"; fail "pcie: not refused clearly"; }
ok "pcie card with wait = interrupt: refused"

echo "card_interrupt: $checks checks passed"
