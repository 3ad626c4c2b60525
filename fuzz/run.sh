#!/bin/sh
# run.sh TARGET SECONDS BUILD_DIR - runs one libFuzzer target for SECONDS at nice 19 on
# a working corpus seeded from fuzz/corpus/TARGET; crash inputs land in BUILD_DIR/fuzz-artifacts/.
set -e
t=$1; secs=${2:-60}; b=${3:-build-fuzz}
src=$(cd "$(dirname "$0")" && pwd)
work=$b/fuzz-corpus/$t
mkdir -p "$work" "$b/fuzz-artifacts"
bin=$(find "$b" -type f -name "$t" -perm -u+x | head -n 1)
[ -n "$bin" ] || { echo "run.sh: no $t binary under $b" >&2; exit 1; }
echo "fuzz: $t for ${secs}s (corpus $work) start $(date +%s)"
rc=0
nice -n 19 "$bin" -max_total_time="$secs" -max_len=4096 -timeout=120 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$b/fuzz-artifacts/$t-" "$work" "$src/corpus/$t" || rc=$?
echo "fuzz: $t end $(date +%s) rc $rc"
exit $rc
