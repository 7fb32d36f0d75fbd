// sim/calibration: from microbenchmark results to a hardware spec that analyze accepts.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "model/model_json.hpp"
#include "ops/error.hpp"
#include "sim/calibration.hpp"
#include "sim/hardware.hpp"
#include "support.hpp"

using nlohmann::json;
using namespace roofline;

namespace {

json calibration_doc() {
    // Shaped like `roofline calibrate --raw` output; the values are round numbers chosen for the
    // test, not measurements.
    return json{
        {"schema", "roofline-calibration/1"},
        {"device",
         {{"name", "NVIDIA H100 80GB HBM3"},
          {"compute_capability", "9.0"},
          {"sm_count", 132},
          {"driver_version", 13000},
          {"runtime_version", 13000}}},
        {"date_utc", "2026-11-23T01:00:00Z"},
        {"points", json::array({
                       {{"quantity", "hbm_bytes_per_s"}, {"value", 3.0e12}, {"unit", "B/s"}, {"method", "copy"}, {"spread", 0.01}},
                       {{"quantity", "l2_bytes_per_s"}, {"value", 9.0e12}, {"unit", "B/s"}, {"method", "cg reads"}, {"spread", 0.02}},
                       {{"quantity", "matrix_flop_per_s.bf16"}, {"value", 7.0e14}, {"unit", "FLOP/s"}, {"method", "gemm"}, {"spread", 0.0}},
                       {{"quantity", "launch_overhead_s"}, {"value", 2.5e-6}, {"unit", "s"}, {"method", "empty"}, {"spread", 0.0}},
                       {{"quantity", "launch_latency_s"}, {"value", 9e-6}, {"unit", "s"}, {"method", "sync"}, {"spread", 0.0}},
                   })},
        {"gemm_efficiency", json::array()}};
}

}  // namespace

TEST_CASE("a calibration replaces the measured values of the base spec and cites the measurement", "[calibration]") {
    const json base = resolve_hardware_json("h100-sxm");
    const json spec = calibrated_spec(base, calibration_doc());
    const Hardware h = parse_hardware(spec, "calibrated.json");  // must load as a spec
    CHECK(h.name == "h100-sxm-calibrated");
    // Exactly the measured values, with the calibration as their source.
    CHECK(h.device_memory().bytes_per_s.value == 3.0e12);
    CHECK(h.device_memory().bytes_per_s.source == "calibrated");
    CHECK(h.matrix_flop_per_s.at(DType::bf16).value == 7.0e14);
    CHECK(h.launch_overhead_s.value == 2.5e-6);
    bool l2 = false;
    for (const auto& m : h.memory)
        if (m.name == "l2") l2 = m.bytes_per_s.value == 9.0e12;
    CHECK(l2);
    // Unmeasured values keep their datasheet source.
    const Hardware datasheet = builtin_hardware("h100-sxm");
    CHECK(h.matrix_flop_per_s.at(DType::f16).value == datasheet.matrix_flop_per_s.at(DType::f16).value);
    CHECK(h.matrix_flop_per_s.at(DType::f16).source == datasheet.matrix_flop_per_s.at(DType::f16).source);
    CHECK(h.device_memory().capacity_bytes.value == datasheet.device_memory().capacity_bytes.value);
    CHECK_THAT(h.sources.at("calibrated"), Catch::Contains("NVIDIA H100 80GB HBM3") && Catch::Contains("2026-11-23"));
}

TEST_CASE("calibration documents and device names are checked", "[calibration][errors]") {
    json bad = calibration_doc();
    bad["schema"] = "something-else";
    CHECK_THROWS_AS(calibrated_spec(resolve_hardware_json("h100-sxm"), bad), InputError);
    bad = calibration_doc();
    bad["points"][0]["value"] = -1;
    CHECK_THROWS_WITH(calibrated_spec(resolve_hardware_json("h100-sxm"), bad), Catch::Contains("/points/0/value"));
    CHECK(builtin_for_device("NVIDIA H100 80GB HBM3") == "h100-sxm");
    CHECK(builtin_for_device("NVIDIA H100 PCIe") == "h100-pcie");
    CHECK(builtin_for_device("NVIDIA H200") == "h200");
    CHECK(builtin_for_device("NVIDIA A100-SXM4-80GB") == "a100-sxm-80gb");
    CHECK_THROWS_WITH(builtin_for_device("Imaginary GPU 9000"), Catch::Contains("--base"));
}

TEST_CASE("raw calibration files: the committed one loads, wrong types name their JSON path", "[calibration]") {
    // tests/data/measured/h100-sxm-2026-11-23/calibration.json, written by `calibrate --raw` on an
    // H100: merged into h100-sxm it must load as a spec. A field of the wrong type is an InputError
    // naming its path, never nlohmann's type_error (found by fuzz/fuzz_calibration.cpp's contract).
    const json raw = read_json_file(test::source_path("tests/data/measured/h100-sxm-2026-11-23/calibration.json"));
    const json base = resolve_hardware_json("h100-sxm");
    CHECK_NOTHROW(parse_hardware(calibrated_spec(base, raw), "calibrated.json"));
    CHECK_NOTHROW(render_calibration(raw, "h100-sxm"));
    const std::pair<const char*, json> bad[] = {{"/device", json::array()},
                                                {"/date_utc", 20261123},
                                                {"/points/0/quantity", 7},
                                                {"/points/0/spread", "wide"},
                                                {"/gemm_efficiency/0/m", 2.5}};
    for (const auto& [path, value] : bad) {
        INFO(path);
        json doc = raw;
        doc[json::json_pointer(path)] = value;
        CHECK_THROWS_WITH(calibrated_spec(base, doc), Catch::Contains(std::string("calibration: ") + path));
    }
}
