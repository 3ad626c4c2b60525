# moefr - top-level wrapper around CMake. Each command installs what it is
# missing (scripts/deps.sh):
#   make run    build and run the example (the main job)
#   make test   the contributor's check before a commit: the Release build's
#               whole CTest suite (C tests per kernel path, CLI, Python,
#               install tree, fuzz corpora replayed, frame check); minutes
#   make check  the whole matrix, what CI (.ci/run) runs: `make test`, then
#               ASan+UBSan, TSan, valgrind, Debug, Debug+ASan+UBSan and
#               aarch64 under qemu with the cross-arch bit check
#
# Extending: add Debian packages your tests need with `TEST_DEPS += pkg`, and
# hook a new matrix entry into `make check` with `check: test-yourthing` (the
# prerequisites of `check` accumulate; keep the recipe-less form).
BUILD   ?= build
PREFIX  ?= $(CURDIR)/$(BUILD)/install
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
PY      := /usr/bin/python3

# Packages `make` itself needs, and packages the test suite needs on top.
BUILD_DEPS := cmake gcc g++ make pkg-config libblis-serial-dev
TEST_DEPS  := python3 python3-numpy python3-torch valgrind binutils
# x86-64: oneDNN's header, for GroupedMatmul on the avx512 path (libdnnl2 is loaded at run time)
ifeq ($(shell uname -m),x86_64)
BUILD_DEPS += libdnnl-dev
endif

# The PyTorch 2 interpreter of the Python tests: a venv made with the first python3 on PATH (not
# Debian's, which keeps PyTorch 1.13), holding torch==$(TORCH2) (pinned: an unpinned torch is a
# multi-GB CUDA build), numpy, and the pip package's build backend. Made once, reused; `make venv`.
VENV   ?= $(CURDIR)/.venv-torch2
TORCH2 ?= 2.13.0
VENV_PY  := $(VENV)/bin/python
VENV_PKGS := torch==$(TORCH2) numpy scikit-build-core
PIP_LINKS := $(if $(wildcard /opt/wheels),--find-links /opt/wheels)

EXAMPLE_BUILD := $(BUILD)/example
# CMake's generated makefiles would otherwise print every directory change.
MAKEFLAGS += --no-print-directory

.PHONY: all build deps test-deps install example run test test-ctest check clean venv

all: build

deps:
	@scripts/deps.sh $(BUILD_DEPS)

test-deps: venv
	@scripts/deps.sh $(BUILD_DEPS) $(TEST_DEPS)

venv: $(VENV)/.done-$(TORCH2)
$(VENV)/.done-$(TORCH2):
	@scripts/deps.sh python3-venv
	@echo "venv: $(VENV) with $(VENV_PKGS)"
	@command -v python3 >/dev/null || { echo "venv: no python3 on PATH" >&2; exit 1; }
	python3 -m venv $(VENV)
	$(VENV_PY) -m pip install -q $(PIP_LINKS) $(VENV_PKGS)
	$(VENV_PY) -c 'import torch, numpy; assert torch.__version__.split("+")[0] == "$(TORCH2)", torch.__version__'
	@touch $@

# Python tests run on Debian's PyTorch 1.13 and, as <test>@torch2, on the venv's PyTorch 2.
PY_CMAKE = -DMOEFR_PYTHON_TORCH2=$(if $(wildcard $(VENV)/.done-$(TORCH2)),$(VENV_PY))

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(PY_CMAKE) $(CMAKE_FLAGS) >/dev/null
	cmake --build $(BUILD) -j$(JOBS)

install: build
	cmake --install $(BUILD) --prefix $(PREFIX) >/dev/null

# The example is built exactly as a CANN project would build it: its own
# CMakeLists, pointed at the installed tree through ASCEND_HOME_PATH.
example: install
	ASCEND_HOME_PATH=$(PREFIX) cmake -S examples -B $(EXAMPLE_BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build $(EXAMPLE_BUILD) -j$(JOBS)

# The first sample (aclnnMoeFinalizeRoutingV2Grad on a small case), then a whole MoE layer through
# CANN's C API, forward and backward, on 256 tokens of hidden size 1024, 16 experts of intermediate
# size 512, top-2, checked against float64 and timed (examples/moe_layer_chain.cpp).
RUN_SHAPE ?= 256,1024,512,16,2
run: example
	$(EXAMPLE_BUILD)/opapi_test
	$(EXAMPLE_BUILD)/moe_layer_chain --shape $(RUN_SHAPE) --repeat 5

# `make test` = the Release suite. `make check` = every target listed as a
# prerequisite of `check`, in order, each printing how long it took.
test: test-ctest
check: test-ctest

test-ctest: test-deps build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)
	@echo "make: $@ done at $$(date +%T)"

# The benchmark table (docs/BENCHMARKS.md); BENCH_ARGS=--quick for a short run.
BENCH_ARGS ?=
.PHONY: bench
bench: build
	$(BUILD)/moefr_bench $(BENCH_ARGS)

clean:
	rm -rf $(BUILD) build-*

# ---- Issue 4: sanitizers, valgrind and fuzzing (docs/RELIABILITY.md) ----
# test-asan: the whole CTest suite under ASan+UBSan (UB aborts: no recovery).
# test-tsan: the threaded tests under TSan. test-valgrind: memcheck of the
# example and of a few tests built without sanitizers. `make fuzz` runs each
# libFuzzer target for FUZZ_SECONDS (clang; corpora grow in $(FUZZ_BUILD)); `make fuzz-ops`
# runs fuzz_ops once per registered operator (the binary lists them), FUZZ_SECONDS each.
ASAN_BUILD   ?= build-asan
TSAN_BUILD   ?= build-tsan
FUZZ_BUILD   ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := fuzz_grad_plan fuzz_grad_exec fuzz_fwd_exec fuzz_npy fuzz_ops
TSAN_TESTS   := test_concurrency test_determinism test_executor test_runtime test_ops_threads
VALGRIND     := valgrind -q --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite,indirect
.PHONY: test-asan test-tsan test-valgrind fuzz fuzz-ops
check: test-asan test-tsan test-valgrind

# ASan+UBSan builds (test-asan, test-debug-asan): UB aborts, leaks are reported.
ASAN_CMAKE := -DMOEFR_SANITIZE=address,undefined -DMOEFR_TEST_DEFAULT_PATH=OFF \
  "-DCMAKE_C_FLAGS=-fno-sanitize-recover=all" "-DCMAKE_CXX_FLAGS=-fno-sanitize-recover=all"
ASAN_ENV   := ASAN_OPTIONS=detect_leaks=1:strict_string_checks=1 UBSAN_OPTIONS=print_stacktrace=1

test-asan: test-deps
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(ASAN_CMAKE) >/dev/null
	cmake --build $(ASAN_BUILD) -j$(JOBS)
	cd $(ASAN_BUILD) && $(ASAN_ENV) ctest --output-on-failure -j$(JOBS)
	@echo "make: $@ done at $$(date +%T)"

test-tsan: test-deps
	cmake -S . -B $(TSAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMOEFR_SANITIZE=thread -DMOEFR_TEST_DEFAULT_PATH=OFF >/dev/null
	cmake --build $(TSAN_BUILD) -j$(JOBS) --target $(TSAN_TESTS)
	cd $(TSAN_BUILD) && TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
	  ctest --output-on-failure -j$(JOBS) -R '^($(subst $() ,|,$(TSAN_TESTS)))([@/].*)?$$'
	@echo "make: $@ done at $$(date +%T)"

test-valgrind: test-deps build example
	@for t in "$(EXAMPLE_BUILD)/opapi_test" "$(BUILD)/tests/test_hostile" "$(BUILD)/tests/test_executor" \
	          "$(BUILD)/tests/test_concurrency"; do \
	  echo "valgrind: $$t"; MOEFR_TEST_ITER=4 $(VALGRIND) $$t >/dev/null || exit 1; done
	@echo "valgrind: $(BUILD)/tests/test_determinism (MOEFR_GRAD_ORDER=row)"; \
	  MOEFR_TEST_ITER=4 MOEFR_GRAD_ORDER=row $(VALGRIND) $(BUILD)/tests/test_determinism >/dev/null
	@echo "make: $@ done at $$(date +%T)"

fuzz:
	@scripts/deps.sh $(BUILD_DEPS) clang libclang-rt-14-dev
	CC=clang CXX=clang++ cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMOEFR_FUZZ=ON \
	  -DMOEFR_SANITIZE=address,undefined "-DCMAKE_C_FLAGS=-fsanitize=fuzzer-no-link -fno-sanitize-recover=all" >/dev/null
	cmake --build $(FUZZ_BUILD) -j$(JOBS) --target $(FUZZ_TARGETS)
	@for t in $(FUZZ_TARGETS); do fuzz/run.sh $$t $(FUZZ_SECONDS) $(FUZZ_BUILD) || exit 1; done

fuzz-ops:
	@scripts/deps.sh $(BUILD_DEPS) clang libclang-rt-14-dev
	CC=clang CXX=clang++ cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMOEFR_FUZZ=ON \
	  -DMOEFR_SANITIZE=address,undefined "-DCMAKE_C_FLAGS=-fsanitize=fuzzer-no-link -fno-sanitize-recover=all" >/dev/null
	cmake --build $(FUZZ_BUILD) -j$(JOBS) --target fuzz_ops
	@bin=$$(find $(FUZZ_BUILD) -type f -name fuzz_ops -perm -u+x | head -n 1); \
	  for o in $$(FUZZ_OPS_LIST=1 $$bin); do MOEFR_FUZZ_OP=$$o fuzz/run.sh fuzz_ops $(FUZZ_SECONDS) $(FUZZ_BUILD) || exit 1; done

# ---- Issue 12: the host API and the aclnn objects under valgrind (test-valgrind runs it) ----
VALGRIND_HOST_TESTS := test_host_api test_objects test_cann_idioms
.PHONY: test-valgrind-host
test-valgrind: test-valgrind-host
test-valgrind-host: test-deps build
	@for t in $(VALGRIND_HOST_TESTS); do \
	  echo "valgrind: $(BUILD)/tests/$$t"; $(VALGRIND) $(BUILD)/tests/$$t >/dev/null || exit 1; done
# the host API's many-threads case under TSan too
TSAN_TESTS += test_host_api
# HCCL's host API, threads as ranks (issue 38): under TSan and valgrind too
TSAN_TESTS += test_hccl
VALGRIND_HOST_TESTS += test_hccl
# ---- Issue 14: aarch64 as a target (README "aarch64", docs/DESIGN.md) ----
# test-aarch64: cross-builds in $(ARM_BUILD) with Debian's toolchain, runs the
# CTest suite under qemu-aarch64 once per kernel path the build has (tests qemu
# cannot run are skipped by name, with the reason printed), then compares
# tests/xarch_hash's output hashes on x86 and under qemu (scripts/test-aarch64.sh).
ARM_BUILD ?= build-aarch64
ARM_DEPS  := gcc-aarch64-linux-gnu g++-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user libblis-serial-dev:arm64 libstdc++6:arm64
.PHONY: test-aarch64
check: test-aarch64

test-aarch64: test-deps build
	@scripts/deps.sh $(ARM_DEPS)
	@scripts/test-aarch64.sh $(BUILD) $(ARM_BUILD) $(JOBS)
	@echo "make: $@ done at $$(date +%T)"
# ---- Issue 23: the build types users make (docs/RELIABILITY.md) ----
# test-debug: the whole suite in a Debug build (-O0: the frames that once
# overflowed the pool's worker stacks; test_stack_frames checks them).
# test-debug-asan: the same under ASan+UBSan. Both run in `make check`.
DEBUG_BUILD      ?= build-debug
DEBUG_ASAN_BUILD ?= build-debug-asan
.PHONY: test-debug test-debug-asan
check: test-debug test-debug-asan

test-debug: test-deps
	cmake -S . -B $(DEBUG_BUILD) -DCMAKE_BUILD_TYPE=Debug -DMOEFR_TEST_DEFAULT_PATH=OFF $(PY_CMAKE) >/dev/null
	cmake --build $(DEBUG_BUILD) -j$(JOBS)
	cd $(DEBUG_BUILD) && ctest --output-on-failure -j$(JOBS)
	@echo "make: $@ done at $$(date +%T)"

test-debug-asan: test-deps
	cmake -S . -B $(DEBUG_ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug $(ASAN_CMAKE) >/dev/null
	cmake --build $(DEBUG_ASAN_BUILD) -j$(JOBS)
	cd $(DEBUG_ASAN_BUILD) && $(ASAN_ENV) ctest --output-on-failure -j$(JOBS)
	@echo "make: $@ done at $$(date +%T)"
