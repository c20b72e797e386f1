#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# ringcast-doctor on this host, in both outputs: without a configuration (a
# host being prepared for a real card) and with card.0.device it says
# honestly what is missing (no IOMMU, no VFIO, no card where that is so) and
# exits 1; --json is valid JSON of the documented shape with the same
# verdicts; a configuration of simulated cards only has no FAIL (as root) and
# exits 0; the memlock limit fails as an unprivileged user without
# CAP_IPC_LOCK; a missing provider is named with those present; a bad
# configuration exits 2. About 2 s.
. "$(dirname "$0")/lib.sh"

DOC="$BIN/ringcast-doctor"
CARD="-o card.0.type=pcie -o card.0.device=0000:41:00.0 -o card.0.memory=hugetlb"

# status_of FILE NAME: the status of check NAME in a JSON output.
status_of() {
    python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
print([c["status"] for c in d["checks"] if c["name"] == sys.argv[2]][0])' "$1" "$2"
}
detail_of() {
    python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
print([c["detail"] for c in d["checks"] if c["name"] == sys.argv[2]][0])' "$1" "$2"
}

# What this host lacks decides what must FAIL (never assumed).
expect_missing() { # expect_missing OUTPUT.txt
    if [ -z "$(ls /sys/class/iommu 2>/dev/null)" ]; then
        grep -q "^FAIL  iommu  *no IOMMU is active" "$1" || { cat "$1"; fail "no IOMMU not said"; }
        ok "text: FAIL iommu (no IOMMU here)"
    fi
    if [ ! -e /dev/vfio/vfio ]; then
        grep -q "^FAIL  vfio  *no VFIO: /dev/vfio/vfio does not exist" "$1" || { cat "$1"; fail "no VFIO not said"; }
        ok "text: FAIL vfio (no VFIO here)"
    fi
}

# 1. No configuration: checks for a real card.
"$DOC" >"$WORK/none.txt" 2>&1
expect_eq "no configuration: exit status" $? 1
expect_missing "$WORK/none.txt"
if ! grep -qs 0x10dc /sys/bus/pci/devices/*/vendor; then
    grep -q "^FAIL  card  *no FELIX/Wupper card on this host" "$WORK/none.txt" \
        || { cat "$WORK/none.txt"; fail "no card not said"; }
    ok "text: FAIL card (no card here)"
fi
grep -q "^ *fix: modprobe vfio-pci\|^PASS  vfio" "$WORK/none.txt" || { cat "$WORK/none.txt"; fail "no fix for vfio"; }
ok "text: a fix under each failure"
grep -Eq "^[0-9]+ passed, [0-9]+ warnings, [1-9][0-9]* failed$" "$WORK/none.txt" \
    || { cat "$WORK/none.txt"; fail "no summary line"; }
ok "text: summary line"

# 2. A configured card, JSON, a provider that is not there.
"$DOC" -c deploy/ringcast.ini $CARD -o fabric.provider=verbs --json >"$WORK/card.json" 2>"$WORK/card.err"
expect_eq "card.0.device, --json: exit status" $? 1
python3 -m json.tool "$WORK/card.json" >/dev/null || { cat "$WORK/card.json"; fail "--json: not valid JSON"; }
ok "--json: valid JSON"
python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
assert list(d) == ["checks"], d.keys()
for c in d["checks"]:
    assert list(c) == ["name", "status", "detail", "fix"], c
    assert c["status"] in ("PASS", "WARN", "FAIL"), c
    assert c["detail"], c
    assert (c["fix"] == "") == (c["status"] == "PASS"), c
print(" ".join(c["name"] for c in d["checks"]))' "$WORK/card.json" >"$WORK/names" \
    || { cat "$WORK/card.json"; fail "--json: not the documented shape"; }
expect_eq "--json: checks" "$(cat "$WORK/names")" \
    "iommu vfio card.0 hugepages memlock fabric.provider cpu.governor numa"
[ -z "$(ls /sys/class/iommu 2>/dev/null)" ] && expect_eq "--json: iommu" "$(status_of "$WORK/card.json" iommu)" FAIL
[ ! -e /dev/vfio/vfio ] && expect_eq "--json: vfio" "$(status_of "$WORK/card.json" vfio)" FAIL
if [ ! -e /sys/bus/pci/devices/0000:41:00.0 ]; then
    expect_eq "--json: card.0" "$(status_of "$WORK/card.json" card.0)" FAIL
    detail_of "$WORK/card.json" card.0 | grep -q "^no PCI device 0000:41:00.0" \
        || { cat "$WORK/card.json"; fail "card.0: detail"; }
    ok "--json: card.0 'no PCI device 0000:41:00.0'"
fi
expect_eq "--json: fabric.provider verbs" "$(status_of "$WORK/card.json" fabric.provider)" FAIL
detail_of "$WORK/card.json" fabric.provider | grep -q "no provider verbs .*present: .*tcp" \
    || { cat "$WORK/card.json"; fail "fabric.provider: providers present not named"; }
ok "--json: the missing provider named with those present"
free=$(cat /sys/devices/system/node/node*/hugepages/hugepages-2048kB/free_hugepages 2>/dev/null | awk '{s+=$1} END {print s+0}')
if [ "$free" -lt 32 ]; then
    expect_eq "--json: hugepages (64 MiB ring, $free free)" "$(status_of "$WORK/card.json" hugepages)" FAIL
fi

# 3. Simulated cards only, as root: nothing fails; the provider is there.
if [ "$(id -u)" -eq 0 ]; then
    "$DOC" -c deploy/ringcast.ini >"$WORK/sim.txt" 2>&1
    expect_eq "simulated cards, root: exit status" $? 0
    grep -q "^PASS  fabric.provider  *libfabric provider tcp offers msg endpoints" "$WORK/sim.txt" \
        || { cat "$WORK/sim.txt"; fail "tcp provider not found"; }
    ok "text: PASS fabric.provider tcp"
    # 4. As nobody without CAP_IPC_LOCK, RLIMIT_MEMLOCK 1 MiB < the 64 MiB ring.
    setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all \
        sh -c "ulimit -l 1024; $DOC -c deploy/ringcast.ini" >"$WORK/nobody.txt" 2>&1
    expect_eq "nobody, memlock 1 MiB: exit status" $? 1
    grep -q "^FAIL  memlock  *RLIMIT_MEMLOCK 1 MiB is less than the rings' 64 MiB" "$WORK/nobody.txt" \
        || { cat "$WORK/nobody.txt"; fail "memlock not failed"; }
    ok "text: FAIL memlock as nobody"
fi

# 5. A configuration error.
"$DOC" -c deploy/ringcast.ini -o card.0.device=41:00.0 >"$WORK/bad.txt" 2>&1
expect_eq "bad configuration: exit status" $? 2
grep -q "device" "$WORK/bad.txt" || { cat "$WORK/bad.txt"; fail "bad configuration not named"; }
ok "bad configuration named"

echo "doctor: $checks checks passed"
