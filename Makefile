# moefr - top-level wrapper around CMake. `make run` and `make test` are the
# two commands a fresh machine needs; each installs what it is missing.
#
# Extending: add Debian packages your tests need with `TEST_DEPS += pkg`, and
# hook a new test target into `make test` with `test: test-yourthing` (the
# prerequisites of `test` accumulate; keep the recipe-less form).
BUILD   ?= build
PREFIX  ?= $(CURDIR)/$(BUILD)/install
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
PY      := /usr/bin/python3

# Packages `make` itself needs, and packages the test suite needs on top.
BUILD_DEPS := cmake gcc g++ make pkg-config
TEST_DEPS  := python3 python3-numpy python3-torch valgrind binutils

EXAMPLE_BUILD := $(BUILD)/example
# CMake's generated makefiles would otherwise print every directory change.
MAKEFLAGS += --no-print-directory

.PHONY: all build deps test-deps install example run test test-ctest clean

all: build

deps:
	@scripts/deps.sh $(BUILD_DEPS)

test-deps:
	@scripts/deps.sh $(BUILD_DEPS) $(TEST_DEPS)

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) >/dev/null
	cmake --build $(BUILD) -j$(JOBS)

install: build
	cmake --install $(BUILD) --prefix $(PREFIX) >/dev/null

# The example is built exactly as a CANN project would build it: its own
# CMakeLists, pointed at the installed tree through ASCEND_HOME_PATH.
example: install
	ASCEND_HOME_PATH=$(PREFIX) cmake -S examples -B $(EXAMPLE_BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build $(EXAMPLE_BUILD) -j$(JOBS)

run: example
	$(EXAMPLE_BUILD)/opapi_test

# `make test` = every target listed as a prerequisite of `test`, in order.
test: test-ctest

test-ctest: test-deps build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

# The benchmark table (docs/BENCHMARKS.md); BENCH_ARGS=--quick for a short run.
BENCH_ARGS ?=
.PHONY: bench
bench: build
	$(BUILD)/moefr_bench $(BENCH_ARGS)

clean:
	rm -rf $(BUILD) build-*
