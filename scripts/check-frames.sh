#!/bin/sh
# check-frames.sh HEADER DIR... - fails when a stack frame recorded by gcc's
# -fstack-usage (*.su files under DIR) is too large for a pool worker.
#
# The budget comes from HEADER (src/internal.h): MF_WORKER_STACK_MIN / 16, so
# that a worker's least stack holds sixteen of the largest frames. A frame
# whose size gcc cannot bound ("dynamic" without "bounded": an unbounded VLA
# or alloca) fails too. The build's test suite runs this on the library's own
# objects (test_stack_frames), so a Debug or Debug+ASan build checks its -O0
# frames; test_stack_frames_selftest shows it fails on a deliberately large one.
set -eu
[ $# -ge 2 ] || { echo "usage: $0 src/internal.h DIR..." >&2; exit 2; }
header=$1; shift
min=$(sed -n 's/^#define MF_WORKER_STACK_MIN ((size_t)1 << \([0-9]*\))$/\1/p' "$header")
[ -n "$min" ] || { echo "check-frames: no MF_WORKER_STACK_MIN ((size_t)1 << N) in $header" >&2; exit 2; }
budget=$(( (1 << min) / 16 ))
files=$(find "$@" -name '*.su' -type f | sort)
[ -n "$files" ] || { echo "check-frames: no .su files under $* (built without -fstack-usage?)" >&2; exit 2; }
# .su lines: file:line:col:function<TAB>bytes<TAB>static|dynamic|dynamic,bounded
# shellcheck disable=SC2086
cat $files | awk -F '\t' -v budget="$budget" '
  { n++; if ($2 + 0 > max) { max = $2 + 0; where = $1 }
    if ($2 + 0 > budget) { bad++; print "check-frames: " $1 " uses " $2 " bytes, over the budget of " budget }
    if ($3 == "dynamic") { bad++; print "check-frames: " $1 " has an unbounded dynamic frame" } }
  END { printf "check-frames: %d frames, largest %d bytes (%s), budget %d bytes (MF_WORKER_STACK_MIN / 16)\n", n, max, where, budget
        exit bad ? 1 : 0 }'
