#!/bin/sh
# run.sh TARGET SECONDS BUILD_DIR - runs one libFuzzer target for SECONDS at nice 19 on
# a working corpus seeded from fuzz/corpus/TARGET; crash inputs land in BUILD_DIR/fuzz-artifacts/.
# For fuzz_ops, MOEFR_FUZZ_OP=<aclnn name> pins one operator (its own corpus and artifact names).
set -e
t=$1; secs=${2:-60}; b=${3:-build-fuzz}
src=$(cd "$(dirname "$0")" && pwd)
tag=$t${MOEFR_FUZZ_OP:+-$MOEFR_FUZZ_OP}
work=$b/fuzz-corpus/$tag
mkdir -p "$work" "$b/fuzz-artifacts"
bin=$(find "$b" -type f -name "$t" -perm -u+x | head -n 1)
[ -n "$bin" ] || { echo "run.sh: no $t binary under $b" >&2; exit 1; }
echo "fuzz: $tag for ${secs}s (corpus $work) start $(date +%s)"
rc=0
nice -n 19 "$bin" -max_total_time="$secs" -max_len=4096 -timeout=120 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$b/fuzz-artifacts/$tag-" "$work" "$src/corpus/$t" || rc=$?
echo "fuzz: $tag end $(date +%s) rc $rc"
exit $rc
