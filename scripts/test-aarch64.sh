#!/bin/sh
# test-aarch64.sh NATIVE_BUILD ARM_BUILD JOBS - the aarch64 part of `make test`
# (make test-aarch64, which first installs the cross toolchain and qemu-user).
#  1. cross-builds moefr for aarch64 in ARM_BUILD (cmake/aarch64-linux-gnu.cmake);
#  2. runs the CTest suite under qemu-aarch64 once per kernel path the build
#     compiles in (ARM_BUILD/moefr_isa_paths.txt, from MOEFR_ISA_PATHS), with
#     MOEFR_ISA forcing it; the tests qemu-user cannot run are skipped by name,
#     each with its reason, below;
#  3. the cross-architecture bit check: tests/xarch_hash's lines from the
#     native x86 build must equal its lines under qemu for every Arm path.
# Fails on the first failure. Prints how long it took.
set -eu
native=${1:-build}
arm=${2:-build-aarch64}
jobs=${3:-2}
start=$(date +%s)
lap=$start
took() { now=$(date +%s); echo "   ($1: $((now - lap)) s)"; lap=$now; }

# Tests that cannot run under user-mode emulation, and why: every test labelled
# python (listed from the build below, so a new one is never forgotten).
skip_reason() {
  case $1 in
    python_*) echo "the host's x86 /usr/bin/python3 cannot load the aarch64 libmoefr.so through ctypes" ;;
  esac
}

echo "== test-aarch64: cross-build in $arm"
cmake -S . -B "$arm" -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$arm" -j"$jobs"
took "cross-build"
skips=$(cd "$arm" && ctest -N -L '^python$' | sed -n 's/^ *Test *#[0-9]*: //p')
[ -n "$skips" ] || { echo "test-aarch64: no python-labelled test found to skip (ctest -L python)" >&2; exit 1; }

# Programs the tests start themselves (test_install's consumers, the CLI under
# test_cli.py, test_hostile's log child) go through the emulator as well.
MOEFR_TEST_EMULATOR=$(command -v qemu-aarch64)
# the multiarch arm64 root, not the sysroot (cmake/aarch64-linux-gnu.cmake says why)
QEMU_LD_PREFIX=/
export MOEFR_TEST_EMULATOR QEMU_LD_PREFIX

paths=$(cat "$arm/moefr_isa_paths.txt")
[ -n "$paths" ] || { echo "test-aarch64: $arm/moefr_isa_paths.txt lists no kernel path" >&2; exit 1; }
# The path moefr picks by itself on qemu's CPU (every extension qemu knows) must be one of them.
best=$(qemu-aarch64 "$arm/tests/xarch_hash" --isa)
case " $(echo $paths) " in
  *" $best "*) ;;
  *) echo "test-aarch64: moefr's default path under qemu is '$best', which MOEFR_ISA_PATHS ($(echo $paths)) lacks" >&2
     exit 1 ;;
esac
echo "== test-aarch64: kernel paths: $(echo $paths) (default under qemu: $best)"

echo "== test-aarch64: skipped under qemu-user, by name:"
skip_re=""
for t in $skips; do
  echo "   SKIPPED $t: $(skip_reason "$t")"
  skip_re="$skip_re${skip_re:+|}$t"
done
echo "   (inside tests: test_determinism's fork()ed-child run when it has worker threads,"
echo "    and test_install's valgrind run, each printing SKIPPED with its reason)"

all=$(cd "$arm" && ctest -N | sed -n 's/^ *Test *#[0-9]*: //p')
once=""  # test_xarch_paths loops over every path itself: in the first pass only
for p in $paths; do
  # Tests pinned to another path (name@other, label isa-other) run in that
  # path's pass; name@p is name itself once MOEFR_ISA=p: run only one of them.
  others=$(for q in $paths; do [ "$q" = "$p" ] || printf '%s|' "$q"; done)
  same=$(echo "$all" | awk -v s="@$p" '{ n[$1] = 1 } END { for (t in n) { b = substr(t, 1, length(t) - length(s))
           if (substr(t, length(b) + 1) == s && (b in n)) printf "|%s", t } }')
  same="$same$once"
  once="|test_xarch_paths"
  echo "== test-aarch64: CTest suite under qemu-aarch64, MOEFR_ISA=$p"
  echo "   (not run twice: $(echo "${same#|}" | tr '|' ' '); each is the same program as one run in this pass or in the first)"
  if [ -n "$others" ]; then
    (cd "$arm" && MOEFR_ISA=$p ctest -j"$jobs" --output-on-failure -E "^($skip_re$same)\$" -LE "^isa-(${others%|})\$")
  else
    (cd "$arm" && MOEFR_ISA=$p ctest -j"$jobs" --output-on-failure -E "^($skip_re$same)\$")
  fi
  took "suite on $p"
done

echo "== test-aarch64: cross-architecture bit check (tests/xarch_hash.c)"
cmake --build "$native" -j"$jobs" --target xarch_hash >/dev/null
"$native/tests/xarch_hash" >"$arm/xarch_x86.txt"
n=$(wc -l <"$arm/xarch_x86.txt")
[ "$n" -gt 100 ] || { echo "test-aarch64: xarch_hash printed only $n lines on x86" >&2; exit 1; }
for p in $paths; do
  MOEFR_ISA=$p qemu-aarch64 "$arm/tests/xarch_hash" >"$arm/xarch_aarch64_$p.txt"
  if ! cmp -s "$arm/xarch_x86.txt" "$arm/xarch_aarch64_$p.txt"; then
    echo "test-aarch64: aarch64 path $p gives other bits than x86:" >&2
    diff "$arm/xarch_x86.txt" "$arm/xarch_aarch64_$p.txt" | head -20 >&2
    exit 1
  fi
  echo "   $n output hashes: x86 ($("$native/tests/xarch_hash" --isa)) = aarch64 $p"
done

took "bit check"
echo "== test-aarch64: ok in $(($(date +%s) - start)) s"
