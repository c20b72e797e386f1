#!/bin/sh
# The folders' include rules (tests/check-includes.sh; issue 11): the tree as
# it is passes, and a planted violation in each library folder is reported
# with its file:line, so the check itself can fail.
. "$(dirname "$0")/lib.sh"
checks=0

out=$(sh tests/check-includes.sh .) || { echo "$out"; fail "the source tree breaks the include rules"; }
ok "the source tree keeps the include rules"

# A copy of the library folders with one forbidden include each.
mkdir -p "$WORK/tree"
cp -r dma net readout config include "$WORK/tree/"
plant() {   # plant FILE INCLUDE: append a forbidden include to FILE in the copy
    printf '#include "%s"\n' "$2" >> "$WORK/tree/$1"
}
plant dma/dma_ring.c net/wire.h
plant net/wire.c readout/chunk.h
plant readout/decoder.c net/publisher.h
plant config/config.c tools/log.h
plant include/ringcast/sub.h net/wire.h
if sh tests/check-includes.sh "$WORK/tree" > "$WORK/violations.txt"; then
    fail "planted violations were not reported"
fi
for want in 'dma/dma_ring.c:[0-9]*: dma/ may not include "net/wire.h"' \
            'net/wire.c:[0-9]*: net/ may not include "readout/chunk.h"' \
            'readout/decoder.c:[0-9]*: readout/ may not include "net/publisher.h"' \
            'config/config.c:[0-9]*: config/ may not include "tools/log.h"' \
            'include/ringcast/sub.h:[0-9]*: include/ringcast/ may not include "net/wire.h"'; do
    grep -q "^$want\$" "$WORK/violations.txt" || { cat "$WORK/violations.txt"; fail "not reported: $want"; }
    ok "reported: $want"
done
expect_eq "violations reported" "$(wc -l < "$WORK/violations.txt" | tr -d ' ')" 5

echo "test_layering: $checks checks passed"
