# Two commands: `make run` and `make test`. Each installs what is missing, configures, builds on
# every core, then runs or tests. Everything else here is a helper for them.
SHELL := /bin/bash
BUILD ?= build
ASAN_BUILD ?= build-asan
JOBS ?= $(shell nproc)
# Debian packages the build needs (see ../shared/notes/build.md for the verified recipes).
PACKAGES := cmake g++ ninja-build nlohmann-json3-dev libboost-graph-dev catch2 libbenchmark-dev libcli11-dev libfmt-dev
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: run test deps configure build test-asan bench clean

run: build
	./$(BUILD)/roofline analyze gpt2-small --hw h100-sxm --mode training -o report.json

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	$(MAKE) test-asan

deps:
	@missing=""; for p in $(PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) apt-get update && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y --no-install-recommends $$missing; \
	fi

configure: deps
	@[ -f $(BUILD)/CMakeCache.txt ] || cmake -S . -B $(BUILD) -G "$(shell command -v ninja >/dev/null 2>&1 && echo Ninja || echo 'Unix Makefiles')" -DCMAKE_BUILD_TYPE=RelWithDebInfo

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# The sanitizer build (ASan + UBSan) runs the same suite; benchmarks are left out of it.
test-asan: deps
	@[ -f $(ASAN_BUILD)/CMakeCache.txt ] || cmake -S . -B $(ASAN_BUILD) -G "$(shell command -v ninja >/dev/null 2>&1 && echo Ninja || echo 'Unix Makefiles')" \
	  -DCMAKE_BUILD_TYPE=Debug -DROOFLINE_SANITIZE=ON -DROOFLINE_BUILD_BENCH=OFF
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ctest --output-on-failure -j $(JOBS)

bench: build
	./$(BUILD)/bench/roofline_bench

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
