// [gpu] tests: run only where a CUDA device is present; elsewhere they print SKIP and ctest
// reports them as skipped.
#include <catch2/catch.hpp>
#include <cstdio>

#include "measure/device.hpp"

TEST_CASE("a CUDA device reports a plausible configuration", "[gpu]") {
    const roofline::DeviceQuery q = roofline::query_cuda_devices();
    if (q.devices.empty()) {
        std::printf("SKIP: %s\n", q.problem.c_str());
        return;
    }
    for (const auto& d : q.devices) {
        INFO(d.name);
        // Every GPU the tool targets has compute capability >= 7.5 (T4) and at least one SM.
        CHECK(d.cc_major * 10 + d.cc_minor >= 75);
        CHECK(d.sm_count > 0);
        CHECK(d.global_memory_bytes > 0);
    }
}
