#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The folders' include rules (tests/check-includes.sh; issue 11): the tree as
# it is passes, and a planted violation in each library folder is reported
# with its file:line, so the check itself can fail. Also: every source file
# has its SPDX licence line, and programs link only the libraries they use.
. "$(dirname "$0")/lib.sh"
checks=0

out=$(sh tests/check-includes.sh .) || { echo "$out"; fail "the source tree breaks the include rules"; }
ok "the source tree keeps the include rules"

# A copy of the library folders with one forbidden include each.
mkdir -p "$WORK/tree"
cp -r dma net readout pipeline config include "$WORK/tree/"
plant() {   # plant FILE INCLUDE: append a forbidden include to FILE in the copy
    printf '#include "%s"\n' "$2" >> "$WORK/tree/$1"
}
plant dma/dma_ring.c net/wire.h
plant net/wire.c readout/chunk.h
plant readout/decoder.c net/publisher.h
plant config/config.c tools/log.h
plant include/ringcast/sub.h net/wire.h
plant readout/readout.c readout/sim/sim_card.h      # the card side never needs its simulator
plant pipeline/fanout.c readout/sim/configured_card.h
if sh tests/check-includes.sh "$WORK/tree" > "$WORK/violations.txt"; then
    fail "planted violations were not reported"
fi
for want in 'dma/dma_ring.c:[0-9]*: dma/ may not include "net/wire.h"' \
            'net/wire.c:[0-9]*: net/ may not include "readout/chunk.h"' \
            'readout/decoder.c:[0-9]*: readout/ may not include "net/publisher.h"' \
            'config/config.c:[0-9]*: config/ may not include "tools/log.h"' \
            'include/ringcast/sub.h:[0-9]*: include/ringcast/ may not include "net/wire.h"' \
            'readout/readout.c:[0-9]*: readout/ may not include "readout/sim/sim_card.h"' \
            'pipeline/fanout.c:[0-9]*: pipeline/ may not include "readout/sim/configured_card.h"'; do
    grep -q "^$want\$" "$WORK/violations.txt" || { cat "$WORK/violations.txt"; fail "not reported: $want"; }
    ok "reported: $want"
done
expect_eq "violations reported" "$(wc -l < "$WORK/violations.txt" | tr -d ' ')" 7

# Each folder's README states its include rule, and no README names a path
# or name of the layout before issue 11's move.
for d in common dma readout readout/sim net pipeline config include api tools tests examples; do
    grep -q 'May include' "$d/README.md" 2>/dev/null || fail "$d/README.md does not state what $d/ may include"
done
ok "every folder README states its include rule"
old_paths=$(grep -rn 'tools/daemon_publish\|readout/sim_\|dma/errbuf\|dma/monotonic\|net/sub_table\|readout/fanout\|readout/chunk_queue\|readout/dpdk_env' \
    --include='*.md' . | grep -v '^./build' || true)
[ -z "$old_paths" ] || { echo "$old_paths"; fail "READMEs name paths of the old layout (above)"; }
ok "no README names a path of the old layout"

# Every source file carries its licence (LICENSE, BSD-3-Clause) in an SPDX line.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    sources=$(git ls-files '*.c' '*.h' '*.sh' '*.py' Makefile .ci/run)
else
    sources=$(find . -path ./build\* -prune -o \( -name '*.[ch]' -o -name '*.sh' -o -name '*.py' -o -name Makefile \) -print)
fi
missing=$(for f in $sources; do head -n 3 "$f" | grep -q 'SPDX-License-Identifier: BSD-3-Clause' || echo "$f"; done)
[ -z "$missing" ] || { echo "$missing"; fail "source files without an SPDX line (above)"; }
ok "every source file has an SPDX line ($(echo "$sources" | wc -l | tr -d ' ') files)"
grep -q '^BSD 3-Clause License' LICENSE || fail "LICENSE is not the BSD-3-Clause text"
ok "LICENSE is BSD-3-Clause"

# Programs load only the libraries they use (Makefile: the tools' archive and
# --as-needed): a tool without a fabric does not load libfabric, whose psm
# provider's libinfinipath sleeps about 0.2 s in its constructor. Checked on
# the binaries' NEEDED entries, so a link line that drags libfabric back in fails.
for prog in ringcast-ctl ringcast-dump ringcast-regs ringcast-sim ringcast-ls; do
    needed=$(readelf -d "$BIN/$prog") || fail "readelf -d $BIN/$prog"
    echo "$needed" | grep -q 'NEEDED.*libfabric' && fail "$prog links libfabric, which it does not use"
    ok "$prog does not link libfabric"
done
readelf -d "$BIN/ringcast-readout" | grep -q 'NEEDED.*libfabric' || fail "ringcast-readout does not link libfabric"
ok "ringcast-readout links libfabric (the check above can see it)"

echo "test_layering: $checks checks passed"
