#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Broken configurations through the real daemon: every file in
# tests/integration/bad-config/ is rejected with exit status 2, nothing on
# stdout, and the message its first line expects on stderr (file:line, the
# section and key, what is wrong; for -o overrides the override itself).
#
# File format (the directives are INI comments, so line numbers are the file's own):
#   ; expect: REGEX        first line, required: an extended regex one stderr line must match;
#                          FILE stands for the path the daemon was given
#   ; args: -o a.b=c ...   optional: more command-line arguments (overrides)
#   ; run: check|start|both  optional, default check: `--check-config FILE`, a full start
#                          `-c FILE`, or both
#   ; file: missing|directory|unreadable  optional: give the daemon a path that does not
#                          exist, a directory, or a file it may not read (as user nobody)
# About 5 s.
. "$(dirname "$0")/lib.sh"

DIR=tests/integration/bad-config
ncases=0

directive() { # directive NAME FILE: the value of "; NAME: value", empty if none
    sed -n "s/^; $1: //p" "$2" | head -n 1
}

# Escape a path for use inside an extended regex.
regex_quote() { printf '%s' "$1" | sed 's/[].[^$*+?(){}|\\]/\\&/g'; }

# The path the daemon is given for case file $1 (may prepare it), and how to run it ($as).
prepare_path() {
    as=""
    case "$(directive file "$1")" in
    "") path=$1 ;;
    missing) path="$WORK/does-not-exist.ini" ;;
    directory) path="$WORK/a-directory.ini"; mkdir -p "$path" ;;
    unreadable)
        mkdir -p "$WORK/open"; chmod 755 "$WORK" "$WORK/open"
        path="$WORK/open/unreadable.ini"; cp "$1" "$path"; chmod 000 "$path"
        # root reads any file: run as nobody, who may not
        [ "$(id -u)" -eq 0 ] && as="setpriv --reuid=nobody --regid=nogroup --clear-groups --" ;;
    # not files: each must be refused at once, without blocking or reading on
    dev-zero) path=/dev/zero ;;
    dev-urandom) path=/dev/urandom ;;
    fifo) path="$WORK/a-fifo.ini"; rm -f "$path"; mkfifo "$path" ;;
    endless-line) # a regular file of one 1 MB line after the first: reading must stop
        path="$WORK/endless-line.ini"
        { echo "[card.0]"; head -c 1000000 /dev/zero | tr '\0' 'a'; } >"$path" ;;
    *) fail "$1: unknown '; file:' directive" ;;
    esac
}

# run_case CASE MODE: run the daemon once and check status, stdout and stderr.
run_case() {
    f=$1; mode=$2; name=$(basename "$f" .ini)
    expect=$(directive expect "$f")
    [ -n "$expect" ] || fail "$f: no '; expect:' first line"
    args=$(directive args "$f")
    prepare_path "$f"
    regex=$(printf '%s' "$expect" | sed "s|FILE|$(regex_quote "$path" | sed 's/[|&]/\\&/g')|g")
    if [ "$mode" = check ]; then
        # shellcheck disable=SC2086  # args are words on purpose
        $as timeout --foreground -k 30 20 "$BIN/ringcast-readout" --check-config "$path" $args \
            >"$WORK/$name.out" 2>"$WORK/$name.err"; st=$?
    else
        # shellcheck disable=SC2086
        $as timeout --foreground -k 30 20 "$BIN/ringcast-readout" -c "$path" $args \
            >"$WORK/$name.out" 2>"$WORK/$name.err"; st=$?
    fi
    show() { echo "--- stderr:"; cat "$WORK/$name.err"; echo "--- expected: $regex"; }
    [ "$st" -eq 2 ] || { show; fail "$name ($mode): exit status $st, expected 2"; }
    [ ! -s "$WORK/$name.out" ] || { cat "$WORK/$name.out"; fail "$name ($mode): printed on stdout"; }
    grep -E -q -e "$regex" "$WORK/$name.err" || { show; fail "$name ($mode): message not found"; }
    if [ "$(directive run "$f")" != start ]; then # the loader's summary line comes last
        tail -n 1 "$WORK/$name.err" | grep -E -q '^ringcast-readout: [0-9]+ configuration errors?$' \
            || { show; fail "$name ($mode): no summary line"; }
    fi
    ok "$name ($mode): exit 2, $(head -n 1 "$WORK/$name.err" | cut -c1-110)"
}

for f in "$DIR"/*.ini; do
    ncases=$((ncases + 1))
    case "$(directive run "$f")" in
    ""|check) run_case "$f" check ;;
    start) run_case "$f" start ;;
    both) run_case "$f" check; run_case "$f" start ;;
    *) fail "$f: unknown '; run:' directive" ;;
    esac
done
[ "$ncases" -ge 30 ] || fail "only $ncases cases in $DIR"
echo "all $checks checks passed ($ncases broken configurations)"
