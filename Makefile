# moefr - top-level wrapper around CMake. `make run` and `make test` are the
# two commands a fresh machine needs; each installs what it is missing.
BUILD   ?= build
PREFIX  ?= $(CURDIR)/$(BUILD)/install
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
PY      := /usr/bin/python3

BUILD_DEPS := cmake gcc g++ make pkg-config

.PHONY: all build deps install run test clean

all: build

deps:
	@scripts/deps.sh $(BUILD_DEPS)

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) >/dev/null
	cmake --build $(BUILD) -j$(JOBS)

install: build
	cmake --install $(BUILD) --prefix $(PREFIX) >/dev/null

test: build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

clean:
	rm -rf $(BUILD) build-*
