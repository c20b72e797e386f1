#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# memlock-need.sh FILE [-o section.key=value]...: how much memory
# ringcast-readout locks or pins with this configuration, in bytes, from the
# effective configuration `ringcast-readout --check-config` prints. The
# daemon: $RINGCAST_READOUT if set, else the ringcast-readout beside this
# script (installed as $(PREFIX)/bin/ringcast-memlock-need), else the build
# tree's (deploy/../build/bin), else the one on PATH. Prints three lines:
#   rings N        mlock'ed DMA rings: the sum of card.N.ring_size. With tcp
#                  (and any provider that does not pin memory) this is all
#                  (measured: VmLck in /proc/PID/status equals it).
#   registered N   what the publisher registers with libfabric: the rings, the
#                  zero-copy header slots, the buffered pages, the gather-copy
#                  bounce buffers (bounce_buffers x buffered_page_size), and the control
#                  receive/send buffers (sizes as in net/pub_internal.h and
#                  net/wire.h: 4 receives of 16400 bytes per subscriber slot
#                  plus 4 spare, 4 sends of 32 bytes per slot plus 8), each
#                  rounded up to 4 KiB pages. An RDMA provider (verbs) pins
#                  all of it, plus buffers of its own that are not counted here.
#   limit_mib N    a LimitMEMLOCK= for an RDMA provider: registered + 25 %
#                  headroom for the provider's own buffers, in MiB.
# Exit status: that of --check-config (2: the configuration has errors).
set -e
bin=${RINGCAST_READOUT:-}
if [ -z "$bin" ]; then
    here=$(dirname "$0")
    for candidate in "$here/ringcast-readout" "$here/../build/bin/ringcast-readout"; do
        if [ -x "$candidate" ]; then bin=$candidate; break; fi
    done
fi
bin=${bin:-ringcast-readout}
if ! command -v "$bin" >/dev/null 2>&1; then
    echo "memlock-need.sh: cannot find ringcast-readout ($bin): set RINGCAST_READOUT" >&2
    exit 2
fi
cfg=$("$bin" --check-config "$@")
printf '%s\n' "$cfg" | awk '
function bytes(v,   n, u) {
    n = v + 0; u = substr(v, length(v))
    if (u == "k") return n * 1024
    if (u == "M") return n * 1048576
    if (u == "G") return n * 1073741824
    if (u == "T") return n * 1099511627776
    return n
}
function pages(b) { return int((b + 4095) / 4096) * 4096 }
/^\[/ { section = $1; next }
section ~ /^\[card\./ && $1 == "ring_size" { rings += bytes($3) }
section == "[fabric]" && $1 == "header_slots" { slots = $3 }
section == "[fabric]" && $1 == "header_slot_size" { slot_size = bytes($3) }
section == "[fabric]" && $1 == "buffered_pages" { npages = $3 }
section == "[fabric]" && $1 == "buffered_page_size" { page_size = bytes($3) }
section == "[fabric]" && $1 == "bounce_buffers" { nbounce = $3 }
section == "[fabric]" && $1 == "max_subscribers" { subs = $3 }
section == "[fabric]" && $1 == "endpoint" { rdm = ($3 == "rdm") }
END {
    rx = 4 * (subs + rdm) * 16400
    ctrl = (4 * subs + 8) * 32
    registered = rings + pages(slots * slot_size) + pages(npages * page_size) + pages(nbounce * page_size) + pages(rx) + pages(ctrl)
    printf "rings %.0f\nregistered %.0f\nlimit_mib %d\n", rings, registered,
           int((registered * 1.25 + 1048575) / 1048576)
}'
