#!/bin/sh
# make run: the daemon on the simulated card with deploy/ringcast.ini for
# about 10 s, live statistics every second, then a summary.
set -eu
BUILD=${1:-build}
SECONDS_TO_RUN=${RINGCAST_DEMO_SECONDS:-10}
stats="$BUILD/run-stats.json"
echo "== ringcast demo: deploy/ringcast.ini, simulated card, ${SECONDS_TO_RUN} s"
"$BUILD/bin/ringcast-readout" -c deploy/ringcast.ini -o "sim.0.run_time=${SECONDS_TO_RUN}s" \
    --stats-json "$stats"
echo "== final statistics ($stats):"
cat "$stats"
