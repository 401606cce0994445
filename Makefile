# Front door for people used to `make`: the build itself is CMake + Ninja.
PREFIX ?= /usr/local
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: all deps build check install run example bench fuzz format lint clean

all: build

deps:
	@sh scripts/install-deps.sh

build: deps
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	    -DCMAKE_INSTALL_PREFIX=$(PREFIX) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

# Every test: the unit, golden and integration tests, then again under sanitizers.
check:
	@sh scripts/check.sh

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

# Build, then show memtool working on a scratch store.
run:
	@sh scripts/run.sh

# Benchmarks against the official SDK's memory tool and the syscall floor:
# writes BENCHMARKS.md, bench/results/*.csv and the plots (a few minutes).
bench: build
	@sh bench/run.sh --build $(BUILD)

# Each fuzz target for FUZZ_SECONDS (default 600) in a clang ASan+UBSan build.
FUZZ_SECONDS ?= 600
fuzz:
	@sh scripts/fuzz.sh $(FUZZ_SECONDS)

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD) build-san build-tsan
