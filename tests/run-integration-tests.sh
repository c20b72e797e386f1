#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Run every integration test script tests/integration/test_*.sh with the build dir.
#
# Most scripts spend their time waiting (timers, subscribers draining, daemons
# starting), so RCI_TEST_JOBS lanes (default 2) run them side by side: each
# lane takes the next script not yet taken, with its own port range
# (RCI_PORT_FIRST/RCI_PORT_SPAN, tests/integration/lib.sh port_base), and
# the tests stay what they must be anyway, correct on a busy 2-core machine.
# Scripts that need the machine to themselves run afterwards, alone:
# network namespaces and etcd (test_discovery), reserved hugepages
# (test_card_hugepages), CPU hogs (test_daemon_release).
# Output: one PASS/FAIL line per script in name order with its wall time (the
# lanes run side by side: the times add up to about JOBS x the stage's), the
# tail of each failed script's log, and a summary line with the stage's wall
# time; exit 1 if any failed.
BUILD=${1:-build}
JOBS=${RCI_TEST_JOBS:-2}
ALONE="test_discovery test_card_hugepages test_daemon_release"
mkdir -p "$BUILD/tests"
stage_start=$(date +%s)
results=$(mktemp -d "${TMPDIR:-/tmp}/ringcast-itrun.XXXXXX")
trap 'rm -rf "$results"' EXIT

run_one() { # run_one SCRIPT: PASS/FAIL line into $results/NAME
    name=$(basename "$1" .sh)
    log="$BUILD/tests/$name.log"
    t0=$(date +%s)
    # A hang catcher, far above any script's time: a hung script fails
    # instead of holding make test forever.
    if timeout -k 10 900 sh "$1" "$BUILD" >"$log" 2>&1; then
        # A test that could not run here says "SKIP: why": show it, not only PASS.
        skip=$(grep -m 1 '^SKIP' "$log")
        took="$(($(date +%s) - t0)) s"
        if [ -n "$skip" ]; then echo "PASS $name $took ($skip)"; else echo "PASS $name $took"; fi > "$results/$name"
    else
        { echo "FAIL $name $(($(date +%s) - t0)) s (log: $log)"; tail -n 40 "$log"; } > "$results/$name"
    fi
}

is_alone() { case " $ALONE " in *" $1 "*) return 0 ;; esac; return 1; }

# The shared scripts, the longest first (LONG: the five longest of a CI run,
# 50-82 s each; an order only, every script runs whatever this list says),
# so that the lanes end together instead of one lane finishing a long
# script alone at the end.
LONG="test_bench_smoke test_daemon_slow test_daemon_faults test_daemon_stream test_daemon_stall"
queue() {
    for name in $LONG; do
        [ -f "tests/integration/$name.sh" ] && echo "tests/integration/$name.sh"
    done
    for t in tests/integration/test_*.sh; do
        [ -f "$t" ] || continue
        name=$(basename "$t" .sh)
        is_alone "$name" && continue
        case " $LONG " in *" $name "*) continue ;; esac
        echo "$t"
    done
}

# Each lane, in its own ports, takes the next script nobody has taken yet:
# mkdir is atomic, so exactly one lane claims each script.
# Ports 10000-31999, below the kernel's ephemeral ports (lib.sh, port_base);
# 200 left at each lane's end for the scripts' PORT + n.
span=$((22000 / JOBS))
lane=0
while [ "$lane" -lt "$JOBS" ]; do
    (
        export RCI_PORT_FIRST=$((10000 + lane * span)) RCI_PORT_SPAN=$((span - 200))
        for t in $(queue); do
            mkdir "$results/claim.$(basename "$t" .sh)" 2>/dev/null && run_one "$t"
        done
    ) &
    lane=$((lane + 1))
done
wait
for name in $ALONE; do
    [ -f "tests/integration/$name.sh" ] && run_one "tests/integration/$name.sh"
done

pass=0; fail=0
for t in tests/integration/test_*.sh; do
    [ -f "$t" ] || continue
    r="$results/$(basename "$t" .sh)"
    cat "$r"
    if head -n 1 "$r" | grep -q '^PASS'; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
done
echo "integration: $pass passed, $fail failed, $(($(date +%s) - stage_start)) s"
[ "$fail" -eq 0 ]
