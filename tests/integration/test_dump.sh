#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# ringcast-dump on a real `ringcast-sub --out` file (2000 chunks of 10..300
# bytes, 1 % CRC-flagged by the simulator): every record listed, per-tag
# statistics equal to what the subscriber counted (records per tag, flagged
# without --verify), --tag and --json; then damaged copies (cut in a header,
# cut in a payload, a length past the end, nonzero padding, unknown flag bits)
# each refused with exit status 1 and the byte offset of the damaged record.
# About 5 s.
. "$(dirname "$0")/lib.sh"

PORT=$(port_base 13000)
DUMP="$BIN/ringcast-dump"

"$BIN/ringcast-readout" -c deploy/ringcast.ini -o readout.stats_interval=0 -o fabric.port="$PORT" \
    -o readout.wait_subscribers=1 -o readout.linger=10s -o sim.0.run_chunks=2000 -o sim.0.err_crc=0.01 \
    -o sim.0.chunk_size_min=10 -o sim.0.chunk_size_max=300 2>"$WORK/d.log" &
daemon=$!
timeout --foreground -k 10 60 "$BIN/ringcast-sub" --connect "127.0.0.1:$PORT" --tags all --count 2000 --out "$WORK/out.rec" \
    --json >"$WORK/sub.json" 2>"$WORK/sub.log" || { cat "$WORK/sub.log"; fail "ringcast-sub"; }
wait_daemon d
F="$WORK/out.rec"

"$DUMP" "$F" >"$WORK/dump.txt" || fail "dump of a sound file: exit $?"
expect_eq "records listed" "$(grep -c '  tag 0x' "$WORK/dump.txt")" 2000
tail -n 1 "$WORK/dump.txt" | grep -q "^2000 records (2000 shown), $(stat -c %s "$F") bytes: sound$" \
    || fail "summary line: $(tail -n 1 "$WORK/dump.txt")"
ok "summary line names 2000 records and the file size"
"$DUMP" --stats --json "$F" >"$WORK/stats.json" || fail "--stats --json"
flagged=$(grep -o '"flagged":[0-9]*' "$WORK/stats.json" | cut -d: -f2 | paste -sd+ | bc)
expect_eq "flagged records (dump) = flagged chunks (ringcast-sub without --verify)" "$flagged" \
    "$(json_num flagged "$WORK/sub.json")"
expect_gt "flagged records" "$flagged" 0
for t in 0 3 7; do
    n=$(grep "^{\"tag\":$t," "$WORK/stats.json" | grep -o '"records":[0-9]*' | cut -d: -f2)
    expect_eq "tag $t: records (dump) = chunks (ringcast-sub per_tag)" "$n" \
        "$(grep -o "\"$t\":[0-9]*" "$WORK/sub.json" | tail -n 1 | cut -d: -f2)"
done
"$DUMP" --json --tag 3 --bytes 8 "$F" >"$WORK/t3.json" || fail "--tag 3"
expect_eq "--tag 3: records" "$(wc -l <"$WORK/t3.json")" \
    "$(grep "^{\"tag\":3," "$WORK/stats.json" | grep -o '"records":[0-9]*' | cut -d: -f2)"
grep -v '"tag":3,' "$WORK/t3.json" | grep -q . && fail "--tag 3 printed another tag"
grep -q '^{"offset":[0-9]*,"tag":3,"flags":[0-9]*,"length":[0-9]*,"first":"[0-9a-f]\{16\}"}$' "$WORK/t3.json" \
    || fail "--json --bytes 8: $(head -n 1 "$WORK/t3.json")"
ok "--tag and --json --bytes"

st=0; "$DUMP" "$WORK/missing.rec" 2>/dev/null || st=$?
expect_eq "a missing file: exit status" "$st" 2
st=0; "$DUMP" 2>/dev/null || st=$?
expect_eq "no file: exit status" "$st" 2
: >"$WORK/empty.rec"
"$DUMP" "$WORK/empty.rec" | grep -q "^0 records (0 shown), 0 bytes: sound$" || fail "an empty file"
ok "an empty file is sound"

# damaged COPY KIND: make a damaged copy, print the offset of the record damaged.
damaged() {
    python3 - "$F" "$WORK/bad.rec" "$1" <<'PY'
import struct, sys
data = bytearray(open(sys.argv[1], "rb").read())
kind = sys.argv[3]
offsets, off = [], 0
while off < len(data):
    offsets.append(off)
    length = struct.unpack_from("<I", data, off + 12)[0]
    off += 16 + ((length + 7) & ~7)
mid = offsets[len(offsets) // 2]
if kind == "cut-header":
    data = data[:offsets[-1] + 10]; bad = offsets[-1]
elif kind == "cut-payload":
    data = data[:len(data) - 3]; bad = offsets[-1]
elif kind == "length":
    struct.pack_into("<I", data, mid + 12, 0xFFFFFFF0); bad = mid
elif kind == "padding":
    bad = next(o for o in offsets if struct.unpack_from("<I", data, o + 12)[0] % 8 and o > mid)
    length = struct.unpack_from("<I", data, bad + 12)[0]
    data[bad + 16 + length] = 0x5A
elif kind == "flags":
    struct.pack_into("<I", data, mid + 8, 0x80); bad = mid
open(sys.argv[2], "wb").write(data)
print(bad)
PY
}
for kind in cut-header cut-payload length padding flags; do
    at=$(damaged $kind) || fail "$kind: making the copy"
    st=0; "$DUMP" "$WORK/bad.rec" >"$WORK/bad.out" 2>"$WORK/bad.err" || st=$?
    expect_eq "$kind: exit status" "$st" 1
    grep -q "bad.rec: damaged at byte offset $at (record [0-9]*): " "$WORK/bad.err" \
        || fail "$kind: expected offset $at: $(cat "$WORK/bad.err")"
    ok "$kind: refused at byte offset $at ($(sed 's/.*): //' "$WORK/bad.err"))"
done
echo "test_dump: $checks checks passed"
