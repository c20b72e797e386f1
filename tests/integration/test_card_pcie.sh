#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# card.N.type = pcie without hardware. The daemon maps a file as BAR0 with the
# MMIO accessors a VFIO mapping uses and programs the ring's IOVA (not its
# virtual address); `ringcast-sim --bar-file` plays the firmware on that file.
# A fixed run over a 1 MiB ring (dozens of wraps) reaches two verifying
# subscribers bit-exact, with no bad status read and nothing left over; the
# simulator exits when the daemon lets the file go. A second daemon on the
# same BAR file is refused (card in use); a card without firmware is named at
# start; card.N.device (VFIO) fails cleanly and honestly on a machine without
# VFIO (or, where VFIO exists, without that device). ringcast-regs dumps the
# running card's registers. About 10 s.
. "$(dirname "$0")/lib.sh"
# A failed check leaves no daemon or simulator behind.
cleanup() { rc=$?; for p in $daemon $sim $holder; do kill "$p" 2>/dev/null; done; (exit $rc); on_exit; }
trap cleanup EXIT

PORT=$(port_base 13000)
TAGS=0-0xffff
SHM=ringcast-it-pcie$$
BAR="$WORK/bar0"
CARD="-o card.0.type=pcie -o card.0.memory=shm -o card.0.shm_name=$SHM"
PCIE="$CARD -o card.0.bar_file=$BAR"   # the daemon's; ringcast-sim gets the file as --bar-file

check_sub_exact() { # check_sub_exact NAME CHUNKS
    f="$WORK/$1.json"
    grep -q '"verified":true' "$f" || { cat "$f"; fail "$1: not verified"; }
    expect_eq "$1 chunks" "$(json_num chunks "$f")" "$2"
    for k in gaps corrupt duplicates seq_lost seq_late; do
        expect_eq "$1 $k" "$(json_num $k "$f")" 0
    done
}

# start_sim NAME OPTIONS...: ringcast-sim --bar-file in the background ($sim); waits until it serves.
start_sim() {
    simname=$1; shift
    timeout --foreground -k 10 60 "$BIN/ringcast-sim" --bar-file "$BAR" -c deploy/ringcast.ini $CARD "$@" \
        >"$WORK/$simname.out" 2>&1 &
    sim=$!
    i=0
    until grep -q "serving BAR file" "$WORK/$simname.out"; do
        kill -0 $sim 2>/dev/null || { cat "$WORK/$simname.out"; kill "$daemon"; fail "$simname: exited"; }
        i=$((i + 1)); [ $i -lt 300 ] || { cat "$WORK/$simname.out"; kill "$daemon"; fail "$simname: never served the BAR"; }
        sleep 0.05
    done
}

# 1. A fixed run through the BAR file: chunks of 16 B .. 9000 B, a 1 MiB ring.
n=30000
RING="-o card.0.ring_size=1M -o card.0.rd_update_bytes=128k"
start_daemon barfile $PCIE $RING -o readout.wait_subscribers=2 -o fabric.provider=tcp -o fabric.endpoint=msg
start_sim barfile-sim $RING --run-chunks $n --chunk-size 16-9000
start_sub barfile-a tcp msg --verify --count $n; sub_a=$sub
start_sub barfile-b tcp msg --verify --count $n; sub_b=$sub
wait_sub barfile-a "$sub_a"
wait_sub barfile-b "$sub_b"
# The registers of the running card, read only.
"$BIN/ringcast-regs" --bar-file "$BAR" >"$WORK/regs.txt" 2>&1 || { cat "$WORK/regs.txt"; fail "ringcast-regs"; }
grep -q "^DMA_DESC_ENABLE 0x01$" "$WORK/regs.txt" || { cat "$WORK/regs.txt"; fail "regs: enable bits"; }
grep -Eq "^0 +yes +0x0000001000000000 0x0000001000100000 0x1040 +64 yes +ToHost +0x00000010000[0-9a-f]{5} 0x00000010000[0-9a-f]{5} " \
    "$WORK/regs.txt" || { cat "$WORK/regs.txt"; fail "regs: descriptor 0"; }
ok "ringcast-regs: descriptor 0 enabled over IOVA 0x1000000000..0x1000100000, ToHost, wrap, 64 words"
kill -TERM "$daemon"
wait_daemon barfile
wait "$sim" || { cat "$WORK/barfile-sim.out"; fail "ringcast-sim --bar-file exit status $?"; }
check_sub_exact barfile-a $n
check_sub_exact barfile-b $n
f="$WORK/barfile.json"
expect_eq "barfile chunks_decoded" "$(json_num chunks_decoded "$f")" $n
expect_eq "barfile chunks_sent" "$(json_num chunks_sent "$f")" $((2 * n))
expect_eq "barfile card_bad_status" "$(json_num card_bad_status "$f")" 0
expect_eq "barfile decode_errors" "$(json_num decode_errors "$f")" 0
expect_eq "barfile keys_outstanding" "$(json_num keys_outstanding "$f")" 0
expect_eq "barfile ring_bytes_in_use" "$(json_num ring_bytes_in_use "$f")" 0
echo "   status reads that still showed the previous lap: $(json_num card_status_lagging "$f")"
grep -q "pcie card, ring 1 MiB" "$WORK/barfile.log" || { cat "$WORK/barfile.log"; fail "barfile: not a pcie card"; }
ok "barfile: the daemon ran a pcie card"
grep -q "the daemon let the BAR file go" "$WORK/barfile-sim.out" || { cat "$WORK/barfile-sim.out"; fail "barfile: simulator did not see the daemon go"; }
grep -q "chunks $n " "$WORK/barfile-sim.out" || { cat "$WORK/barfile-sim.out"; fail "barfile: simulator did not write $n chunks"; }
grep -q "host errors 0" "$WORK/barfile-sim.out" || { cat "$WORK/barfile-sim.out"; fail "barfile: host errors"; }
ok "barfile: ringcast-sim wrote $n chunks, saw no host error and exited when the daemon let the file go"
PORT=$((PORT + 1))

# 2. The card is in use: a second daemon on the same BAR file is refused.
start_daemon holder $PCIE -o readout.wait_subscribers=1
i=0
until grep -q "pcie card" "$WORK/holder.log"; do
    i=$((i + 1)); [ $i -lt 300 ] || { cat "$WORK/holder.log"; fail "holder: never set up"; }
    sleep 0.05
done
holder=$daemon
PORT=$((PORT + 1))
"$BIN/ringcast-readout" -c deploy/ringcast.ini -o fabric.port=$PORT -o card.0.type=pcie \
    -o card.0.bar_file="$BAR" -o card.0.memory=shm -o card.0.shm_name=${SHM}b 2>"$WORK/second.log"
st=$?
expect_eq "second daemon on the same BAR file: exit status" $st 1
grep -q "card.0: card in use: bar_file $BAR is locked by process $holder" "$WORK/second.log" \
    || { cat "$WORK/second.log"; fail "second: no 'card in use' error naming pid $holder"; }
ok "second daemon: 'card in use ... locked by process $holder'"
kill -TERM "$holder"
daemon=$holder
wait_daemon holder

# 3. No firmware behind the BAR file: named when the card starts.
PORT=$((PORT + 1))
"$BIN/ringcast-readout" -c deploy/ringcast.ini -o fabric.port=$PORT $PCIE 2>"$WORK/nofw.log"
expect_eq "no firmware: exit status" $? 1
grep -q "card.0: the card did not take DMA descriptor 0: its status stayed outside the ring for 2 s" \
    "$WORK/nofw.log" || { cat "$WORK/nofw.log"; fail "no firmware: not named"; }
ok "no firmware: 'the card did not take DMA descriptor 0'"

# 4. A real card through VFIO: here it must fail cleanly, saying what is missing.
PORT=$((PORT + 1))
"$BIN/ringcast-readout" -c deploy/ringcast.ini -o fabric.port=$PORT -o card.0.type=pcie \
    -o card.0.device=0000:41:00.0 -o card.0.memory=anon 2>"$WORK/vfio.log"
expect_eq "device 0000:41:00.0: exit status" $? 1
if [ ! -e /dev/vfio/vfio ]; then
    grep -q "card.0: VFIO is not available: /dev/vfio/vfio does not exist" "$WORK/vfio.log" \
        || { cat "$WORK/vfio.log"; fail "vfio: no honest 'VFIO is not available'"; }
    ok "device: 'VFIO is not available: /dev/vfio/vfio does not exist'"
elif [ ! -e /sys/bus/pci/devices/0000:41:00.0 ]; then
    grep -q "card.0: no PCI device 0000:41:00.0" "$WORK/vfio.log" \
        || { cat "$WORK/vfio.log"; fail "vfio: no 'no PCI device'"; }
    ok "device: 'no PCI device 0000:41:00.0'"
else
    echo "   (a device 0000:41:00.0 exists here: only the exit status was checked)"
fi
grep -q "ERROR" "$WORK/vfio.log" && ! grep -qi "sanitizer\|segmentation" "$WORK/vfio.log" \
    || { cat "$WORK/vfio.log"; fail "vfio: no clean error"; }
ok "device: a clean error"

echo "card_pcie: $checks checks passed"
