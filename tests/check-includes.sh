#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Which folder may include what (issue 11; each folder's README states the same rule).
# Usage: tests/check-includes.sh [ROOT]   (default: the current directory)
# Prints every offending `#include "..."` as FILE:LINE and exits 1 if there is any.
#
# A library folder may include its own headers and the ones listed for it here;
# anything else (another library's internals, config/, tools/) is a violation.
# tools/, tests/ and api/ (the public library facade) may include any folder.
ROOT=${1:-.}
allowed() {   # $1 = folder, $2 = included path; returns 0 when allowed
    case "$1" in
    common)  case "$2" in common/*) return 0 ;; esac ;;
    dma)     case "$2" in dma/*|common/*) return 0 ;; esac ;;
    net)     case "$2" in net/*|ringcast/*|common/*|dma/*) return 0 ;; esac ;;
    readout/sim) case "$2" in readout/*|dma/*|common/*) return 0 ;; esac ;;
    readout) case "$2" in readout/sim/*) return 1 ;; readout/*|dma/*|common/*) return 0 ;; esac ;;
    pipeline) case "$2" in readout/sim/*) return 1 ;; pipeline/*|net/*|readout/*|dma/*|ringcast/*|common/*) return 0 ;; esac ;;
    config)  case "$2" in config/*|common/*|readout/*_params.h|readout/sim/sim_params.h|net/fabric_params.h|net/discovery_params.h|net/allow_list.h|pipeline/*_params.h) return 0 ;; esac ;;
    include/ringcast) case "$2" in ringcast/*) return 0 ;; esac ;;
    examples) case "$2" in ringcast/*) return 0 ;; esac ;;
    *) return 0 ;;
    esac
    return 1
}
bad=0
for dir in common dma net readout/sim readout pipeline config include/ringcast examples; do
    [ -d "$ROOT/$dir" ] || continue
    # readout/ alone: the card side, without its simulator subfolder.
    depth=; [ "$dir" = readout ] && depth="-maxdepth 1"
    for f in $(find "$ROOT/$dir" $depth -name '*.[ch]' | sort); do
        # `#include "x"` lines with their line numbers; system headers (<...>) are not checked.
        grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" | while IFS= read -r hit; do
            line=${hit%%:*}
            inc=$(printf '%s\n' "$hit" | sed 's/.*include[[:space:]]*"\([^"]*\)".*/\1/')
            # Includes relative to the file's own folder (no slash) are its own headers.
            case "$inc" in */*) ;; *) continue ;; esac
            allowed "$dir" "$inc" || echo "${f#"$ROOT"/}:$line: $dir/ may not include \"$inc\""
        done
    done
done > "${TMPDIR:-/tmp}/check-includes.$$"
# ringcast-sub is built as an outside program would be (Makefile): the public
# headers, the tools' own log and the header-only command-line helpers.
f="$ROOT/tools/ringcast-sub.c"
[ -f "$f" ] && grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" | while IFS= read -r hit; do
    inc=$(printf '%s\n' "$hit" | sed 's/.*include[[:space:]]*"\([^"]*\)".*/\1/')
    case "$inc" in ringcast/*|tools/log.h|tools/cli.h) ;; *) echo "tools/ringcast-sub.c:${hit%%:*}: ringcast-sub may include only ringcast/*.h, tools/log.h and tools/cli.h, not \"$inc\"" ;; esac
done >> "${TMPDIR:-/tmp}/check-includes.$$"
if [ -s "${TMPDIR:-/tmp}/check-includes.$$" ]; then
    cat "${TMPDIR:-/tmp}/check-includes.$$"; bad=1
fi
rm -f "${TMPDIR:-/tmp}/check-includes.$$"
exit $bad
