#!/usr/bin/env bash
# test_install.sh - installs the build into a scratch prefix and uses it the way downstream projects
# do: CANN's sample build (ASCEND_HOME_PATH), find_package(moefr), pkg-config; checks the tree and ELF names.
#
# usage: test_install.sh BUILD_DIR SOURCE_DIR VERSION WORK_DIR [C_COMPILER CXX_COMPILER]
set -euo pipefail
build=$1 src=$2 version=$3 work=$4
cc=${5:-cc} cxx=${6:-c++}
major=${version%%.*}
py=/usr/bin/python3
# Cross builds run the programs built here through qemu-user (make test-aarch64
# sets MOEFR_TEST_EMULATOR and QEMU_LD_PREFIX); empty for native builds.
emu=${MOEFR_TEST_EMULATOR:-}

fail() { echo "test_install: FAIL: $*" >&2; exit 1; }
step() { echo "== $*"; }

rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix
lib=$prefix/lib64
# Quiet sub-builds; their log is shown only when they fail.
quiet() { "$@" >"$work/last.log" 2>&1 || { cat "$work/last.log" >&2; fail "command failed: $*"; }; }

step "cmake --install into $prefix"
quiet cmake --install "$build" --prefix "$prefix"

step "install tree (SPEC section 1)"
for f in include/acl/acl.h include/aclnn/acl_meta.h include/aclnn/aclnn_base.h \
         include/aclnnop/aclnn_moe_finalize_routing_v2_grad.h include/aclnnop/aclnn_moe_finalize_routing_v2.h \
         include/aclnnop/aclnn_moe_init_routing.h include/aclnnop/aclnn_moe_finalize_routing.h \
         include/aclnnop/aclnn_swi_glu.h include/aclnnop/aclnn_swi_glu_grad.h \
         include/aclnnop/aclnn_dynamic_quant.h include/aclnnop/aclnn_dynamic_quant_v2.h \
         include/aclnnop/aclnn_dynamic_quant_v3.h include/aclnnop/aclnn_dynamic_quant_v4.h \
         include/aclnnop/aclnn_trans_quant_param.h include/aclnnop/aclnn_trans_quant_param_v2.h \
         include/aclnnop/aclnn_trans_quant_param_v3.h \
         include/aclnnop/aclnn_grouped_matmul.h include/aclnnop/aclnn_grouped_matmul_v2.h \
         include/aclnnop/aclnn_grouped_matmul_v3.h include/aclnnop/aclnn_grouped_matmul_v4.h \
         include/aclnnop/aclnn_grouped_matmul_v5.h include/aclnnop/aclnn_moe_re_routing.h \
         include/aclnnop/aclnn_grouped_matmul_add.h include/aclnnop/aclnn_grouped_matmul_add_v2.h \
         include/aclnnop/aclnn_moe_init_routing_v3.h \
         include/aclnnop/aclnn_moe_init_routing_quant.h include/aclnnop/aclnn_moe_init_routing_quant_v2.h \
         include/aclnnop/aclnn_moe_token_permute_with_routing_map.h \
         include/aclnnop/aclnn_moe_token_permute_with_routing_map_grad.h \
         include/aclnnop/aclnn_moe_token_unpermute_with_routing_map.h \
         include/aclnnop/aclnn_moe_token_unpermute_with_routing_map_grad.h \
         include/aclnnop/aclnn_moe_gating_top_k.h include/aclnnop/aclnn_moe_fused_topk.h \
         include/aclnnop/aclnn_grouped_matmul_swiglu_quant.h include/aclnnop/aclnn_grouped_matmul_swiglu_quant_weight_nz.h \
         include/aclnnop/aclnn_grouped_matmul_finalize_routing_weight_nz.h \
         include/aclnnop/aclnn_grouped_matmul_finalize_routing_weight_nz_v2.h \
         lib64/libmoefr.so.$version lib64/libmoefr.so lib64/libmoefr.a lib64/pkgconfig/moefr.pc \
         lib64/cmake/moefr/moefrConfig.cmake lib64/cmake/moefr/moefrConfigVersion.cmake \
         lib64/cmake/moefr/moefrTargets.cmake include/acl/acl_base.h include/acl/acl_rt.h \
         include/acl/error_codes/rt_error_codes.h include/acl/error_codes/ge_error_codes.h set_env.sh \
         include/hccl/hccl.h include/hccl/hccl_types.h include/hccl/hccl_comm.h; do
  [ -f "$prefix/$f" ] || fail "missing $f"
done
real=$(readlink -f "$lib/libmoefr.so.$version")
[ ! -L "$lib/libmoefr.so.$version" ] || fail "libmoefr.so.$version should be the real file"
soname=$(readelf -d "$real" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = "libmoefr.so.$major" ] || fail "SONAME is '$soname', want libmoefr.so.$major"
echo "SONAME $soname"
for name in libmoefr.so libascendcl.so libnnopbase.so libopapi.so libopapi_math.so libopapi_transformer.so libopapi_nn.so \
            libhccl.so; do
  [ -L "$lib/$name" ] || fail "$name is not a symlink"
  [ "$(readlink -f "$lib/$name")" = "$real" ] || fail "$name resolves to $(readlink -f "$lib/$name"), not $real"
  got=$(readelf -d "$lib/$name" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
  [ "$got" = "libmoefr.so.$major" ] || fail "$name has SONAME '$got'"
  echo "$name -> $(readlink "$lib/$name") (SONAME $got)"
done
# Only moefr's libraries in lib64: a stray library there would shadow a real toolkit's.
extra=$(cd "$lib" && ls -1 | grep -E '\.(so|a)(\.|$)' |
  grep -v -x -E "libmoefr\.so(\.$major|\.$version)?|libmoefr\.a|lib(ascendcl|nnopbase|opapi|opapi_math|opapi_transformer|opapi_nn|hccl)\.so" || true)
[ -z "$extra" ] || fail "unexpected libraries in lib64: $extra"
for sym in aclInit aclrtMalloc aclCreateTensor aclnnMoeFinalizeRoutingV2GradGetWorkspaceSize \
           aclnnMoeFinalizeRoutingV2Grad aclGetRecentErrMsg aclrtCreateContext aclrtEventElapsedTime \
           aclrtMemcpyAsync aclCreateIntArray aclDataTypeSize aclFloatToFloat16 aclnnInit moefrFreeArray \
           aclnnMoeInitRoutingGetWorkspaceSize aclnnMoeInitRouting aclnnMoeFinalizeRoutingGetWorkspaceSize \
           aclnnMoeFinalizeRouting \
           aclnnMoeGatingTopKSoftmaxGetWorkspaceSize aclnnMoeGatingTopKSoftmax \
           aclnnMoeGatingTopKSoftmaxV2GetWorkspaceSize aclnnMoeGatingTopKSoftmaxV2 \
           aclnnSwiGluGetWorkspaceSize aclnnSwiGlu aclnnSwiGluGradGetWorkspaceSize aclnnSwiGluGrad \
           aclnnGroupedMatmulGetWorkspaceSize aclnnGroupedMatmulV2 aclnnGroupedMatmulV3GetWorkspaceSize \
           aclnnGroupedMatmulV4GetWorkspaceSize aclnnGroupedMatmulV4 aclnnGroupedMatmulV5GetWorkspaceSize moefrBlas \
           aclnnGroupedMatmulAddGetWorkspaceSize aclnnGroupedMatmulAdd \
           aclnnGroupedMatmulAddV2GetWorkspaceSize aclnnGroupedMatmulAddV2 \
           aclnnMoeReRoutingGetWorkspaceSize aclnnMoeReRouting \
           aclnnMoeInitRoutingV3GetWorkspaceSize aclnnMoeInitRoutingV3\
           aclnnMoeInitRoutingQuantGetWorkspaceSize aclnnMoeInitRoutingQuant \
           aclnnMoeInitRoutingQuantV2GetWorkspaceSize aclnnMoeInitRoutingQuantV2 \
           aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize aclnnMoeTokenPermuteWithRoutingMap \
           aclnnMoeTokenPermuteWithRoutingMapGradGetWorkspaceSize aclnnMoeTokenPermuteWithRoutingMapGrad \
           aclnnMoeTokenUnpermuteWithRoutingMapGetWorkspaceSize aclnnMoeTokenUnpermuteWithRoutingMap \
           aclnnMoeTokenUnpermuteWithRoutingMapGradGetWorkspaceSize aclnnMoeTokenUnpermuteWithRoutingMapGrad \
           aclnnMoeTokenPermuteWithEpGetWorkspaceSize aclnnMoeTokenPermuteWithEp \
           aclnnMoeTokenPermuteWithEpGradGetWorkspaceSize aclnnMoeTokenPermuteWithEpGrad \
           aclnnMoeTokenUnpermuteWithEpGetWorkspaceSize aclnnMoeTokenUnpermuteWithEp \
           aclnnMoeTokenUnpermuteWithEpGradGetWorkspaceSize aclnnMoeTokenUnpermuteWithEpGrad \
           aclnnMoeGatingTopKGetWorkspaceSize aclnnMoeGatingTopK aclnnMoeFusedTopkGetWorkspaceSize aclnnMoeFusedTopk \
           HcclCommInitAll HcclCommDestroy HcclGetCommName HcclCommGetHandleWithName HcclGetRankSize HcclGetRankId \
           HcclBarrier HcclGetErrorString HcclAllReduce HcclAllGather HcclReduceScatter HcclBroadcast HcclAlltoAll \
           HcclAlltoAllV HcclSend HcclRecv HcclAllGatherV HcclReduceScatterV \
           aclnnGroupedMatmulSwigluQuantGetWorkspaceSize aclnnGroupedMatmulSwigluQuant \
           aclnnGroupedMatmulSwigluQuantWeightNZGetWorkspaceSize aclnnGroupedMatmulSwigluQuantWeightNZ \
           aclnnGroupedMatmulFinalizeRoutingWeightNzGetWorkspaceSize aclnnGroupedMatmulFinalizeRoutingWeightNz \
           aclnnGroupedMatmulFinalizeRoutingWeightNzV2GetWorkspaceSize aclnnGroupedMatmulFinalizeRoutingWeightNzV2 \
           aclnnTransQuantParam aclnnTransQuantParamV2GetWorkspaceSize aclnnTransQuantParamV2 \
           aclnnTransQuantParamV3GetWorkspaceSize aclnnTransQuantParamV3; do
  # grep reads to the end: with -q it may exit before nm has written all, and
  # pipefail would report nm's SIGPIPE as a missing symbol
  nm -D --defined-only "$real" | grep " T $sym\$" >/dev/null || fail "$sym not exported"
done
if nm -D --defined-only "$real" | awk '{print $3}' | grep -q '^mf_'; then
  fail "internal mf_ symbols are exported"
fi

step "CANN-style sample: examples/ built unchanged with ASCEND_HOME_PATH=$prefix"
# -Werror: the public headers must be warning-free in a C++ program.
ASCEND_HOME_PATH=$prefix quiet cmake -S "$src/examples" -B "$work/example" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_CXX_FLAGS="-Wall -Wextra -Werror"
quiet cmake --build "$work/example"
readelf -d "$work/example/opapi_test" | grep -q "NEEDED.*\[libmoefr.so.$major\]" ||
  fail "opapi_test does not load libmoefr.so.$major"
# No LD_LIBRARY_PATH: the sample must find the library the way CMake linked it.
env -u LD_LIBRARY_PATH $emu "$work/example/opapi_test" >"$work/example.out" 2>&1 || {
  cat "$work/example.out" >&2; fail "opapi_test exited non-zero"; }
cat "$work/example.out"
"$py" "$src/tests/install/check_example.py" <"$work/example.out" || fail "example printed wrong numbers"
# The sample frees everything it allocates: valgrind must find no error and no definite leak.
if [ -n "$emu" ]; then
  echo "valgrind: SKIPPED under $emu (x86 valgrind cannot run an aarch64 program)"
elif command -v valgrind >/dev/null 2>&1; then
  valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
    "$work/example/opapi_test" >"$work/example.vg" 2>&1 || { cat "$work/example.vg" >&2; fail "valgrind on opapi_test"; }
  cmp -s "$work/example.out" "$work/example.vg" || fail "opapi_test prints other numbers under valgrind"
  echo "valgrind: opapi_test clean"
fi

step "CANN-style MoE layer chain: examples/moe_layer_chain (forward + backward vs float64)"
env -u LD_LIBRARY_PATH $emu "$work/example/moe_layer_chain" >"$work/chain.out" 2>&1 || {
  cat "$work/chain.out" >&2; fail "moe_layer_chain exited non-zero"; }
tail -n 1 "$work/chain.out"
if [ -z "$emu" ] && command -v valgrind >/dev/null 2>&1; then
  valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
    "$work/example/moe_layer_chain" 1 >"$work/chain.vg" 2>&1 || { cat "$work/chain.vg" >&2; fail "valgrind on moe_layer_chain"; }
  echo "valgrind: moe_layer_chain clean"
fi

# Issue 38: an HCCL program as CANN's samples write it, linked the way hicann/hccl's example Makefiles link
# (-lhccl -lascendcl), ranks as threads.
step "HCCL sample: -lhccl -lascendcl, one thread per rank"
quiet "$cxx" -std=c++14 -Werror -Wall -O2 "$src/tests/install/hccl_threads.cpp" -I"$prefix/include" \
  -L"$lib" -lhccl -lascendcl -Wl,-rpath,"$lib" -pthread -o "$work/hccl_threads"
readelf -d "$work/hccl_threads" | grep -q "NEEDED.*\[libmoefr.so.$major\]" ||
  fail "hccl_threads does not load libmoefr.so.$major"
out=$(env -u LD_LIBRARY_PATH $emu "$work/hccl_threads") || fail "hccl_threads failed: $out"
echo "$out"

step "find_package(moefr) consumer (shared and static)"
# Debian-family CMake does not search lib64 under a prefix, so name the package dir.
quiet cmake -S "$src/tests/install/consumer" -B "$work/consumer" -Dmoefr_DIR="$lib/cmake/moefr" \
  -DCMAKE_C_COMPILER="$cc" -DMOEFR_EXPECT_VERSION="$version"
quiet cmake --build "$work/consumer"
for exe in consumer_shared consumer_static; do
  out=$($emu "$work/consumer/$exe") || fail "$exe failed: $out"
  echo "$exe: $out"
  case $out in *"moefr $version "*) ;; *) fail "$exe reports another version: $out" ;; esac
done
readelf -d "$work/consumer/consumer_shared" | grep -q "NEEDED.*\[libmoefr.so.$major\]" ||
  fail "consumer_shared does not load libmoefr.so.$major"
! readelf -d "$work/consumer/consumer_static" | grep -q "NEEDED.*libmoefr" ||
  fail "consumer_static still loads libmoefr dynamically"

step "pkg-config consumer"
export PKG_CONFIG_PATH=$lib/pkgconfig
[ "$(pkg-config --modversion moefr)" = "$version" ] || fail "pkg-config reports $(pkg-config --modversion moefr)"
libdir=$(pkg-config --variable=libdir moefr)
[ "$(readlink -f "$libdir")" = "$(readlink -f "$lib")" ] || fail "pkg-config libdir $libdir is not $lib"
# shellcheck disable=SC2046
"$cc" -std=c11 -Wall -Wextra -Werror -pedantic $(pkg-config --cflags moefr) \
  "$src/tests/install/consumer/main.c" -o "$work/consumer_pc" $(pkg-config --libs moefr) \
  -Wl,-rpath,"$libdir" || fail "pkg-config build failed"
out=$($emu "$work/consumer_pc") || fail "consumer_pc failed: $out"
echo "consumer_pc: $out"

# Installed programs must find the installed library on their own (no LD_LIBRARY_PATH).
for exe in "$prefix"/bin/*; do
  [ -x "$exe" ] || continue
  out=$(env -u LD_LIBRARY_PATH $emu "$exe" --version 2>&1) || fail "$exe --version failed: $out"
  case $out in *"$version"*) echo "$(basename "$exe"): $out" ;; *) fail "$exe --version says: $out" ;; esac
done

# Issue 12: host-API programs written as CANN's docs write them, built unchanged with both build files.
step "set_env.sh: sourced like CANN's"
(
  set +u
  # shellcheck disable=SC1091
  . "$prefix/set_env.sh"
  [ "$ASCEND_HOME_PATH" = "$prefix" ] || fail "set_env.sh: ASCEND_HOME_PATH=$ASCEND_HOME_PATH"
  [ "$ASCEND_TOOLKIT_HOME" = "$prefix" ] || fail "set_env.sh: ASCEND_TOOLKIT_HOME=$ASCEND_TOOLKIT_HOME"
  [ "$ASCEND_OPP_PATH" = "$prefix" ] || fail "set_env.sh: ASCEND_OPP_PATH=$ASCEND_OPP_PATH"
  [ "$ASCEND_CUSTOM_PATH" = "$prefix" ] || fail "set_env.sh: ASCEND_CUSTOM_PATH=$ASCEND_CUSTOM_PATH"
  got=$(env -i bash -c ". '$prefix/bin/setenv.bash' && echo \$ASCEND_HOME_PATH:\$ASCEND_OPP_PATH:\$ASCEND_CUSTOM_PATH")
  [ "$got" = "$prefix:$prefix:$prefix" ] || fail "bin/setenv.bash: ASCEND_HOME_PATH:ASCEND_OPP_PATH:ASCEND_CUSTOM_PATH=$got"
  case ":$LD_LIBRARY_PATH:" in *":$lib:"*) ;; *) fail "set_env.sh: LD_LIBRARY_PATH=$LD_LIBRARY_PATH" ;; esac
  case ":$PATH:" in *":$prefix/bin:"*) ;; *) fail "set_env.sh: PATH=$PATH" ;; esac
  case ":$PYTHONPATH:" in *":$prefix/lib/python3/dist-packages:"*) ;; *) fail "set_env.sh: PYTHONPATH=$PYTHONPATH" ;; esac
  "$py" -c "import moefr" || fail "set_env.sh: python cannot import moefr"
  # POSIX sh (no BASH_SOURCE) falls back to the install prefix
  got=$(env -i sh -c ". '$prefix/set_env.sh' && echo \$ASCEND_HOME_PATH")
  [ "$got" = "$prefix" ] || fail "set_env.sh under sh: ASCEND_HOME_PATH=$got"
) || exit 1
echo "set_env.sh ok"

# Issue 22: the opt-in CPU torch_npu (python/torch_npu_shim), on PYTHONPATH only with the switch.
step "set_env.sh --torch-npu: import torch_npu from the install tree"
shim=$prefix/lib/python3/torch_npu_shim
for f in torch_npu/__init__.py torch_npu/_not_provided.py torch_npu/npu/__init__.py README.md; do
  [ -f "$shim/$f" ] || fail "missing lib/python3/torch_npu_shim/$f"
done
[ ! -e "$prefix/lib/python3/dist-packages/torch_npu" ] || fail "torch_npu must not be in dist-packages (opt-in only)"
arch=native
[ -z "$emu" ] || arch=cross
probe="import os, sys, torch, torch_npu
p = os.path.realpath(sys.argv[1])
assert os.path.realpath(torch_npu.__file__) == p + '/lib/python3/torch_npu_shim/torch_npu/__init__.py', torch_npu.__file__
import moefr
assert os.path.realpath(moefr.__file__).startswith(p + '/lib/python3/dist-packages/moefr/'), moefr.__file__
assert torch.npu is torch_npu.npu and torch.npu.current_device() == 0 and not torch.npu.is_available()
torch.npu.current_stream().synchronize()
x = torch.ones(2)
assert x.npu() is not x and torch.equal(x.npu(), x)
if sys.argv[2] == 'native':  # a cross build's library is not this Python's architecture
    assert torch_npu.npu_moe_compute_expert_tokens(torch.tensor([0, 1, 1], dtype=torch.int32).npu(), 2).tolist() == [1, 3]
assert not hasattr(torch_npu, 'npu_moe_distribute_dispatch') and not hasattr(torch.npu, 'memory_allocated')
try:
    torch.npu.memory_allocated()
except NotImplementedError as e:
    assert isinstance(e, AttributeError) and 'torch.npu.memory_allocated' in str(e) and os.path.isfile(
        p + '/lib/python3/torch_npu_shim/README.md'), e
else:
    raise AssertionError('torch.npu.memory_allocated did not raise')
print('torch_npu from', torch_npu.__file__)"
# Each run starts from an empty environment, so only what the scripts set is seen (from $work: no source tree).
clean() { env -i HOME="$HOME" PATH=/usr/bin:/bin "$@"; }
for how in "bash|. '$prefix/set_env.sh' --torch-npu" "bash|. '$prefix/bin/setenv.bash' --torch-npu" \
           "sh|MOEFR_TORCH_NPU=1 . '$prefix/set_env.sh'"; do
  (cd "$work" && clean "${how%%|*}" -c "${how#*|} && exec $py -c \"\$0\" '$prefix' '$arch'" "$probe") ||
    fail "import torch_npu after ${how%%|*}: ${how#*|}"
done
# without the switch: no torch_npu (Debian's python has none); with it, the shim comes before dist-packages
(cd "$work" && clean bash -c ". '$prefix/set_env.sh' && exec $py -c 'import torch_npu'") >/dev/null 2>&1 &&
  fail "import torch_npu works without --torch-npu"
got=$(clean bash -c ". '$prefix/set_env.sh' --torch-npu && echo \$PYTHONPATH")
[ "$got" = "$shim:$prefix/lib/python3/dist-packages" ] || fail "set_env.sh --torch-npu: PYTHONPATH=$got"
# the shim directory alone on PYTHONPATH finds the moefr installed next to it
(cd "$work" && clean env PYTHONPATH="$shim" "$py" -c "$probe" "$prefix" "$arch") || fail "import torch_npu with only $shim"
echo "torch_npu shim ok"

step "host-API programs, current guide's CMakeLists (libopapi_math, skip rpath, set_env.sh)"
(
  set +u
  # shellcheck disable=SC1091
  . "$prefix/set_env.sh"
  quiet cmake -S "$src/tests/install/host_guide" -B "$work/host_guide" -DCMAKE_CXX_COMPILER="$cxx" \
    -DCMAKE_SKIP_RPATH=TRUE "-DCMAKE_CXX_FLAGS=-Wall -Wextra -Werror"
  quiet cmake --build "$work/host_guide"
  for exe in host_api objects; do
    readelf -d "$work/host_guide/bin/$exe" | grep -q "NEEDED.*\[libmoefr.so.$major\]" ||
      fail "$exe does not load libmoefr.so.$major"
    $emu "$work/host_guide/bin/$exe" || fail "$exe (current guide build) failed"
  done
) || exit 1

step "host-API programs, older guide's CMakeLists (libopapi), ASCEND_HOME_PATH only"
ASCEND_HOME_PATH=$prefix quiet cmake -S "$src/tests/install/host_legacy" -B "$work/host_legacy" \
  -DCMAKE_CXX_COMPILER="$cxx" "-DCMAKE_CXX_FLAGS=-Wall -Wextra -Werror"
quiet cmake --build "$work/host_legacy"
for exe in host_api objects; do
  env -u LD_LIBRARY_PATH $emu "$work/host_legacy/$exe" || fail "$exe (older guide build) failed"
  if [ -n "$emu" ]; then
    echo "valgrind: $exe SKIPPED under $emu (x86 valgrind cannot run an aarch64 program)"
  elif command -v valgrind >/dev/null 2>&1; then
    valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
      "$work/host_legacy/$exe" >"$work/$exe.vg" 2>&1 || { cat "$work/$exe.vg" >&2; fail "valgrind on $exe"; }
    echo "valgrind: $exe clean"
  fi
done

echo "test_install: ok"
