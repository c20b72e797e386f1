#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The daemon as user nobody, as deploy/ringcast-readout.service runs it:
# with only CAP_IPC_LOCK (ambient) it starts, locks its ring (VmLck equals
# what deploy/memlock-need.sh computes), serves a verifying subscriber, writes
# its statistics where it was told and exits 0 on SIGTERM, leaving nothing in
# /dev/shm or its runtime directory. Without the capability, under the
# default 8 MiB memlock limit, it still serves but says the ring is not
# locked. Needs root (to become nobody); about 15 s.
. "$(dirname "$0")/lib.sh"

if [ "$(id -u)" -ne 0 ]; then
    echo "SKIP: needs root to switch to user nobody (setpriv)"; exit 0
fi
PORT=$(port_base 13000)
TAGS=0-7
NOBODY="setpriv --reuid=nobody --regid=nogroup --clear-groups"
CAPS="--inh-caps=+ipc_lock --ambient-caps=+ipc_lock"

# What nobody may write: its state directory and its runtime directory (DPDK's
# EAL puts its runtime files under XDG_RUNTIME_DIR when it is not root).
chmod 755 "$WORK"
mkdir "$WORK/state" "$WORK/run"
chown nobody:nogroup "$WORK/state" "$WORK/run"
# nobody runs the subscriber too. It finds its shared client library through
# $ORIGIN/../lib, which the loader makes an absolute path: nobody cannot follow
# it when a directory above the build is closed to others (a clone in a
# `mktemp -d` directory or under /root). A copy of the two in $WORK (opened to
# nobody above) runs wherever the tree lives. The daemon links no project
# library: it runs from $BIN, reached through the relative path.
mkdir "$WORK/bin" "$WORK/lib"
cp "$BIN/ringcast-sub" "$WORK/bin/"
cp -P "$BIN"/../lib/libringcast-client.so* "$WORK/lib/"
SUB="$WORK/bin/ringcast-sub"
# Only nobody's files count: other test scripts run at the same time as root
# (shm providers, simulated cards) and come and go in /dev/shm meanwhile.
shm_of_nobody() { find /dev/shm -mindepth 1 -maxdepth 1 -user nobody -printf '%f\n' | sort; }
shm_of_nobody >"$WORK/shm.before"

# run_unprivileged NAME CAPS: daemon as nobody (+CAPS) until SIGTERM, one subscriber.
run_unprivileged() {
    name=$1
    # shellcheck disable=SC2086  # $NOBODY and the caps are words on purpose
    $NOBODY $2 env XDG_RUNTIME_DIR="$WORK/run" "$BIN/ringcast-readout" -c deploy/ringcast.ini \
        -o readout.stats_interval=0 -o fabric.port="$PORT" -o sim.0.rate=50000chunks/s \
        --stats-json "$WORK/state/$name.json" 2>"$WORK/$name.log" &
    daemon=$!
    i=0
    until grep -q "publishing on" "$WORK/$name.log"; do
        i=$((i + 1)); [ $i -lt 100 ] && kill -0 "$daemon" 2>/dev/null \
            || { cat "$WORK/$name.log"; fail "$name: did not start"; }
        sleep 0.1
    done
    # the process itself: who it is, what it may do, what it locked
    status=/proc/$daemon/status
    expect_eq "$name: uid" "$(awk '/^Uid:/ {print $3}' "$status")" 65534
    cap_eff=$(awk '/^CapEff:/ {print $2}' "$status")
    # shellcheck disable=SC2086
    $NOBODY timeout --foreground -k 10 60 "$SUB" --connect "127.0.0.1:$PORT" --tags "$TAGS" --verify \
        --count 5000 --json >"$WORK/$name-sub.json" 2>"$WORK/$name-sub.log"; st=$?
    [ "$st" -eq 0 ] || { cat "$WORK/$name-sub.log"; fail "$name: subscriber exit status $st"; }
    # Read once the subscriber got its chunks: the cards (and their locked
    # rings) are surely set up by then; "publishing on" may come first.
    locked_kb=$(awk '/^VmLck:/ {print $2}' "$status")
    kill -TERM "$daemon"
    wait_daemon "$name"
    grep -q '"verified":true' "$WORK/$name-sub.json" || { cat "$WORK/$name-sub.json"; fail "$name: not verified"; }
    expect_gt "$name: chunks received" "$(json_num chunks "$WORK/$name-sub.json")" 4999
    [ -s "$WORK/state/$name.json" ] || fail "$name: no statistics in $WORK/state"
    expect_eq "$name: keys_outstanding at exit" "$(json_num keys_outstanding "$WORK/state/$name.json")" 0
    expect_eq "$name: statistics file owner" "$(stat -c %U "$WORK/state/$name.json")" nobody
    PORT=$((PORT + 1))
}

need=$(RINGCAST_READOUT="$BIN/ringcast-readout" sh deploy/memlock-need.sh deploy/ringcast.ini \
       | awk '$1 == "rings" {print $2}')
expect_gt "memlock-need.sh: rings" "$need" 0

run_unprivileged with-ipc-lock "$CAPS"
expect_eq "with-ipc-lock: effective capabilities (CAP_IPC_LOCK only)" "$cap_eff" 0000000000004000
# ASan's mlock() interceptor does nothing: VmLck stays 0 in a sanitizer run.
under_sanitizer || expect_eq "with-ipc-lock: VmLck bytes = memlock-need.sh rings" $((locked_kb * 1024)) "$need"
if grep -q "not locked" "$WORK/with-ipc-lock.log"; then
    cat "$WORK/with-ipc-lock.log"; fail "with-ipc-lock: ring not locked"
fi
ok "with-ipc-lock: no 'not locked' warning"

run_unprivileged no-caps ""
expect_eq "no-caps: effective capabilities" "$cap_eff" 0000000000000000
# (ASan's mlock() succeeds without locking: no refusal, no warning to see.)
if ! under_sanitizer && [ "$need" -gt $(( $(ulimit -l) * 1024 )) ]; then
    expect_eq "no-caps: VmLck (ring larger than the memlock limit)" "$locked_kb" 0
    grep -q "ring is not locked in memory" "$WORK/no-caps.log" || { cat "$WORK/no-caps.log"; fail "no-caps: no warning"; }
    ok "no-caps: the log says the ring is not locked"
fi

# nothing left behind
shm_of_nobody >"$WORK/shm.after"
expect_eq "files of user nobody left in /dev/shm" "$(comm -13 "$WORK/shm.before" "$WORK/shm.after" | tr '\n' ' ')" ""
# DPDK removes its per-process directory at exit but keeps the (empty) dpdk/ above it
expect_eq "files left in the runtime directory" \
    "$(find "$WORK/run" -mindepth 1 ! -path "$WORK/run/dpdk" | tr '\n' ' ')" ""
echo "all $checks checks passed"
