// The hardware catalog: every built-in spec loads, is internally consistent, and yields the
// ridge points published for it; the loader rejects bad specs with file and JSON path.
#include <fstream>
#include <catch2/catch.hpp>
#include <cmath>
#include <nlohmann/json.hpp>

#include "sim/hardware.hpp"
#include "sim/roofline.hpp"
#include "support.hpp"

using namespace roofline;

namespace {

std::vector<std::string> catalog() {
    std::vector<std::string> all = test::kGpuSpecs;
    all.insert(all.end(), test::kTpuSpecs.begin(), test::kTpuSpecs.end());
    return all;
}

double hbm_ridge_bf16(const Hardware& hw) { return ridge_point(hw.matrix_flop_per_s.at(DType::bf16).value, hw.device_memory()); }

}  // namespace

TEST_CASE("every catalog spec loads and is internally consistent", "[hardware]") {
    for (const std::string& name : catalog()) {
        INFO(name);
        const Hardware hw = builtin_hardware(name);
        CHECK(hw.name == name);
        CHECK(!hw.sources.empty());
        // Tensor cores / MXUs run f16 or bf16; P100 and P4 have none and say so with an empty map.
        const bool no_matrix_units = std::string(name) == "p100-pcie-16gb" || std::string(name) == "p4";
        CHECK((hw.matrix_flop_per_s.count(DType::f16) + hw.matrix_flop_per_s.count(DType::bf16) >= 1) != no_matrix_units);
        // Device memory first, bandwidth grows toward the compute units; every on-chip level is
        // smaller than device memory. (Aggregate shared memory can exceed L2: V100 80 x 96 KiB =
        // 7.5 MiB over a 6 MiB L2, A10 72 x 100 KiB over 6 MiB.)
        for (std::size_t i = 1; i < hw.memory.size(); ++i) {
            CHECK(hw.memory[i].bytes_per_s.value > hw.memory[i - 1].bytes_per_s.value);
            CHECK(hw.memory[i].capacity_bytes.value < hw.device_memory().capacity_bytes.value);
        }
        // Matrix units are faster than vector units for the same dtype (the point of having them).
        for (const auto& [d, peak] : hw.matrix_flop_per_s) {
            if (hw.vector_flop_per_s.count(d)) CHECK(peak.value > hw.vector_flop_per_s.at(d).value);
        }
        // Ridge points exist and are positive for every compute ceiling against every level.
        for (const auto& [d, peak] : hw.matrix_flop_per_s) {
            for (const MemoryLevel& l : hw.memory) CHECK(ridge_point(peak.value, l) > 0);
        }
        if (hw.kind == HardwareKind::gpu) {
            REQUIRE(hw.gpu.has_value());
            CHECK(hw.gpu->warp_size.value == 32);
            // Every sourced value names a citation that exists (the loader enforces it; spot-check).
            CHECK(hw.sources.count(hw.gpu->sm_count.source) == 1);
        } else {
            REQUIRE(hw.tpu.has_value());
            CHECK(hw.tpu->mxu_rows.value == 128);
        }
    }
}

TEST_CASE("bf16 ridge points over device memory match the datasheet figures", "[hardware]") {
    // Dense bf16 peak / device-memory bandwidth, FLOP/byte. Tolerance 2%: the note rounds, and the
    // TPU bandwidths are approximate ("~") there.
    const std::pair<const char*, double> expected[] = {
        {"h100-sxm", 295}, {"a100-sxm-80gb", 153}, {"a100-sxm-40gb", 201}, {"h200", 206},
        {"tpu-v5e", 240},  {"tpu-v4", 229},        {"tpu-v5p", 166},
    };
    for (const auto& [name, ridge] : expected) {
        INFO(name);
        CHECK(hbm_ridge_bf16(builtin_hardware(name)) == Approx(ridge).epsilon(0.02));
    }
}

TEST_CASE("H100 SXM dense peaks are the whitepaper's, not the sparse figures", "[hardware]") {
    // NVIDIA H100 whitepaper v1.04 Table 3: 989.4 dense bf16 TFLOP/s (1978.9 with sparsity).
    const Hardware hw = builtin_hardware("h100-sxm");
    CHECK(hw.matrix_flop_per_s.at(DType::bf16).value == Approx(989.4e12).epsilon(0.005));
    CHECK(hw.matrix_flop_per_s.at(DType::fp8_e4m3).value == Approx(1978.9e12).epsilon(0.005));
    CHECK(hw.vector_flop_per_s.at(DType::f32).value == Approx(66.9e12).epsilon(0.01));
    CHECK(hw.device_memory().bytes_per_s.value == Approx(3.352e12).epsilon(0.001));
    CHECK(hw.gpu->sm_count.value == 132);
}

TEST_CASE("the loader rejects bad specs naming file and JSON path", "[hardware][errors]") {
    const std::string dir = test::source_path("tests/data/hw/");
    CHECK_THROWS_WITH(load_hardware_file(dir + "bad-unknown-key.json"),
                      Catch::Contains("bad-unknown-key.json: /memory/0/bandwith_bytes_per_s: unknown key"));
    CHECK_THROWS_WITH(load_hardware_file(dir + "bad-missing-key.json"),
                      Catch::Contains("bad-missing-key.json: /memory/1: missing key 'bytes_per_s'"));
    CHECK_THROWS_WITH(load_hardware_file(dir + "bad-negative-rate.json"),
                      Catch::Contains("/vector_flop_per_s/f32/value: must be positive"));
    CHECK_THROWS_WITH(load_hardware_file(dir + "bad-unknown-source.json"),
                      Catch::Contains("/clock_hz/source: source 'nowhere' is not a key of /sources"));
    const Hardware ok = load_hardware_file(dir + "round-gpu.json");
    nlohmann::json doc = nlohmann::json::parse(R"({"format": "roofline-hardware/1"})");
    CHECK_THROWS_WITH(parse_hardware(doc, "x.json"), Catch::Contains("x.json: /: missing key 'sources'"));
    CHECK_THROWS_WITH(builtin_hardware("h900"), Catch::Contains("unknown hardware 'h900' (built in: "));
    CHECK(ok.name == "round-gpu");
    // Typed at load: the compute capability as MAJOR.MINOR, device memory first and once.
    std::ifstream in(dir + "round-gpu.json");
    const nlohmann::json good = nlohmann::json::parse(in);
    nlohmann::json bad_cc = good;
    bad_cc["gpu"]["compute_capability"] = "sm90";
    CHECK_THROWS_WITH(parse_hardware(bad_cc, "cc.json"),
                      Catch::Contains("cc.json: /gpu/compute_capability: expected \"MAJOR.MINOR\" (e.g. \"9.0\"), got \"sm90\""));
    nlohmann::json two_devices = good;
    two_devices["memory"].push_back(good["memory"][0]);
    two_devices["memory"].back()["name"] = "dram";
    two_devices["memory"].back().erase("memory_technology");
    CHECK_THROWS_WITH(parse_hardware(two_devices, "dev.json"),
                      Catch::Contains("dev.json: /memory/" + std::to_string(good["memory"].size()) +
                                      "/name: device memory ('dram') must be the first level"));
}
