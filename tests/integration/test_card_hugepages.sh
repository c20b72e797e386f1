#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# A hugepage ring whose descriptor registers hold IOVAs (as root): 2 MiB huge
# pages are reserved for the test and given back (the old
# /proc/sys/vm/nr_hugepages is restored by a trap); a hugetlbfs is mounted
# in a private mount namespace (so that other programs' DPDK does not start
# taking the pages). A pcie card with a bar_file and memory = hugetlbfs: the
# daemon's ring is a 4 MiB file of huge pages, START and END of the
# descriptor are the IOVA 0x1000000000.. (not the ring's virtual address),
# ringcast-sim translates them onto its own mapping of the file, and every
# chunk reaches a verifying subscriber zero copy (the publisher registered
# the hugepage ring with libfabric). About 5 s.
if [ "$(id -u)" -ne 0 ]; then
    echo "SKIP: needs root to reserve huge pages and mount hugetlbfs"; exit 0
fi
if [ -z "$RCI_HUGE_NS" ]; then   # once more, in a private mount namespace
    RCI_HUGE_NS=1 exec unshare --mount --propagation private sh "$0" "$@"
fi
. "$(dirname "$0")/lib.sh"

PORT=$(port_base 15000)
TAGS=0-0xffff
SHM=ringcast-it-huge$$
BAR="$WORK/bar0"
HUGE="$WORK/huge"
NR=/proc/sys/vm/nr_hugepages
FREE=/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages
PAGES=16            # the 4 MiB ring (2 pages) and what the DPDK EAL may take in hugepage mode

old_nr=$(cat $NR)
old_free=$(cat $FREE)
give_back() {
    [ -n "$daemon" ] && kill "$daemon" 2>/dev/null
    [ -n "$sim" ] && kill "$sim" 2>/dev/null
    wait 2>/dev/null
    umount "$HUGE" 2>/dev/null
    echo "$old_nr" > $NR
}
cleanup() { rc=$?; give_back; (exit $rc); on_exit; }
trap cleanup EXIT

echo $((old_nr + PAGES)) > $NR
got=$(( $(cat $FREE) - old_free ))
if [ "$got" -lt $PAGES ]; then
    echo "SKIP: the kernel gave $got of $PAGES huge pages (memory fragmented?)"; exit 0
fi
ok "reserved $PAGES huge pages of 2 MiB ($NR $old_nr -> $(cat $NR))"
mkdir -p "$HUGE"
mount -t hugetlbfs -o pagesize=2M nodev "$HUGE" || fail "cannot mount hugetlbfs"

CARD="-o card.0.type=pcie -o card.0.memory=hugetlbfs -o card.0.shm_name=$SHM -o card.0.ring_size=4M -o card.0.rd_update_bytes=512k"
n=40000
start_daemon huge $CARD -o card.0.bar_file="$BAR" -o readout.wait_subscribers=1
timeout --foreground -k 10 60 "$BIN/ringcast-sim" --bar-file "$BAR" -c deploy/ringcast.ini $CARD --run-chunks $n \
    --chunk-size 16-4000 >"$WORK/sim.out" 2>&1 &
sim=$!
i=0
until grep -q "serving BAR file" "$WORK/sim.out"; do
    kill -0 $sim 2>/dev/null || { cat "$WORK/sim.out" "$WORK/huge.log"; fail "ringcast-sim exited"; }
    i=$((i + 1)); [ $i -lt 300 ] || { cat "$WORK/sim.out"; fail "ringcast-sim never served the BAR"; }
    sleep 0.05
done
start_sub huge-a tcp msg --verify --count $n; sub_a=$sub
wait_sub huge-a "$sub_a"
# While the daemon runs: its ring is the hugetlbfs file, and huge pages are in use.
grep -q "$HUGE/$SHM-ring" /proc/$daemon/maps || { cat /proc/$daemon/maps; fail "ring not mapped from hugetlbfs"; }
ok "the daemon maps its ring from $HUGE/$SHM-ring"
used=$(( old_free + PAGES - $(cat $FREE) ))
expect_gt "huge pages in use during the run" "$used" 1
kill -TERM "$daemon"
wait_daemon huge
daemon=
wait "$sim" || { cat "$WORK/sim.out"; fail "ringcast-sim exit status"; }
sim=

grep -q "pcie card, ring 4 MiB (hugetlbfs memory)" "$WORK/huge.log" || { cat "$WORK/huge.log"; fail "not a hugetlbfs ring"; }
ok "daemon: pcie card, ring 4 MiB (hugetlbfs memory)"
f="$WORK/huge-a.json"
grep -q '"verified":true' "$f" || { cat "$f"; fail "subscriber: not verified"; }
expect_eq "subscriber chunks" "$(json_num chunks "$f")" $n
expect_eq "subscriber gaps" "$(json_num gaps "$f")" 0
expect_eq "subscriber corrupt" "$(json_num corrupt "$f")" 0
f="$WORK/huge.json"
expect_eq "chunks_decoded" "$(json_num chunks_decoded "$f")" $n
expect_eq "card_bad_status" "$(json_num card_bad_status "$f")" 0
expect_eq "keys_outstanding" "$(json_num keys_outstanding "$f")" 0
expect_gt "zero-copy sends from the registered ring" "$(pub huge sends)" 0
grep -q "host errors 0" "$WORK/sim.out" || { cat "$WORK/sim.out"; fail "simulator saw host errors"; }
ok "ringcast-sim: no host error (START..END matched its 4 MiB mapping)"

# The descriptor registers the host wrote hold bus addresses (IOVAs), not virtual addresses.
reg() { od -A n -t x8 -j "$1" -N 8 "$BAR" | tr -d ' '; }
expect_eq "DMA_DESC_0 START" "$(reg 0)" 0000001000000000
expect_eq "DMA_DESC_0 END" "$(reg 8)" 0000001000400000

give_back
trap on_exit EXIT
expect_eq "nr_hugepages given back" "$(cat $NR)" "$old_nr"
expect_eq "free huge pages as before" "$(cat $FREE)" "$old_free"
echo "card_hugepages: $checks checks passed"
