# Two commands: `make run` and `make test`. Each installs what is missing, configures, builds on
# every core, then runs or tests. Everything else here is a helper for them.
SHELL := /bin/bash
BUILD ?= build
ASAN_BUILD ?= build-asan
JOBS ?= $(shell nproc)
# Debian packages the build needs. python3-dev, pybind11-dev and python3-pytest: the Python module
# and its tests (python/; python3-torch and python3-torchvision, ~640 MB, are left out: the
# from_torch tests say SKIP without them).
PACKAGES := cmake g++ ninja-build nlohmann-json3-dev libboost-graph-dev catch2 libbenchmark-dev libcli11-dev libfmt-dev libmimalloc-dev \
            libonnx-dev libprotobuf-dev protobuf-compiler \
            python3-dev pybind11-dev python3-pytest \
            chromium clang-format
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 300
FUZZ_TARGETS ?= fuzz_onnx fuzz_model_json fuzz_hf_config fuzz_hardware fuzz_cluster fuzz_measurements fuzz_compare fuzz_cli fuzz_calibration
PROPERTY_GRAPHS ?= 1000000
.PHONY: run test deps configure build test-asan bench fuzz property clean

run: build
	./$(BUILD)/roofline analyze gpt2-small --hw h100-sxm --mode training -o report.json --html report.html

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
	# The accuracy thresholds (label "accuracy": a leave-one-GPU-out validation of 112,040 public
	# cases) test the model, not memory safety; the normal build runs them.
	cd $(ASAN_BUILD) && ctest --output-on-failure -j $(JOBS) -LE accuracy

# The property test on PROPERTY_GRAPHS random graphs (10^6, minutes; `make test` runs 10^4):
# tests/unit/property_test.cpp.
property: build
	ROOFLINE_PROPERTY_GRAPHS=$(PROPERTY_GRAPHS) ./$(BUILD)/tests/roofline_unit_tests "random graphs keep the invariants"

# libFuzzer targets of every loader under ASan + UBSan (clang; fuzz/README.md). Not part of
# `make test`: each target runs FUZZ_SECONDS on its corpus, new inputs go to build-fuzz. Paths are
# absolute: fuzz_cli works in a temporary directory.
fuzz: deps
	@command -v clang++ >/dev/null || { echo "installing: clang"; $(SUDO) apt-get install -y --no-install-recommends clang; }
	@[ -f $(FUZZ_BUILD)/CMakeCache.txt ] || CC=clang CXX=clang++ cmake -S . -B $(FUZZ_BUILD) -G "$(shell command -v ninja >/dev/null 2>&1 && echo Ninja || echo 'Unix Makefiles')" \
	  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DROOFLINE_FUZZ=ON -DROOFLINE_WITH_CUDA=OFF -DROOFLINE_BUILD_TESTS=OFF -DROOFLINE_BUILD_BENCH=OFF -DROOFLINE_WERROR=OFF
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target $(FUZZ_TARGETS)
	for t in $(FUZZ_TARGETS); do \
	  mkdir -p $(FUZZ_BUILD)/corpus/$$t && \
	  ./$(FUZZ_BUILD)/fuzz/$$t -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -rss_limit_mb=4096 -timeout=10 \
	    -dict=$(CURDIR)/fuzz/$$t.dict $(abspath $(FUZZ_BUILD))/corpus/$$t $(CURDIR)/fuzz/corpus/$$t || exit 1; \
	done

bench: build
	./$(BUILD)/bench/roofline_bench

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
