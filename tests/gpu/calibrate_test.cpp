// `roofline calibrate` microbenchmarks: plausibility of every figure on the GPU at hand ([gpu]; they
// print SKIP without a device), and the JSON form of a hand-made calibration (no GPU needed).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "measure/calibrate.hpp"
#include "measure/device.hpp"

namespace {

using roofline::Calibration;
using roofline::CalibrationPoint;

// One quick calibration shared by the [gpu] test cases (it takes seconds).
const Calibration& quick_calibration(int device) {
    static const Calibration c = roofline::run_calibration(device, roofline::CalibrationOptions{true});
    return c;
}

// Datasheet HBM bandwidth by device name, 0 when unknown. H100 SXM5 HBM3: 3.35 TB/s (H100
// whitepaper); H200: 4.8 TB/s (H200 datasheet); A100 80GB SXM: 2.0 TB/s (A100 datasheet).
double datasheet_hbm_bytes_per_s(const std::string& name) {
    if (name.find("H100") != std::string::npos) return 3.35e12;
    if (name.find("H200") != std::string::npos) return 4.8e12;
    if (name.find("A100") != std::string::npos) return 2.0e12;
    return 0;
}

double value_of(const Calibration& c, const std::string& quantity) {
    const CalibrationPoint* p = c.find(quantity);
    INFO(quantity);
    REQUIRE(p != nullptr);
    return p->value;
}

}  // namespace

TEST_CASE("calibration of the GPU gives plausible figures", "[gpu]") {
    const auto q = roofline::query_cuda_devices();
    if (q.devices.empty()) {
        std::printf("SKIP: %s\n", q.problem.c_str());
        return;
    }
    const Calibration& c = quick_calibration(q.devices.front().index);
    INFO(c.device_name);
    CHECK(c.device_name == q.devices.front().name);
    CHECK(c.sm_count == q.devices.front().sm_count);
    CHECK(c.l2_bytes > 0);
    CHECK(c.sm_clock_hz > 0);
    CHECK(c.runtime_version > 0);
    CHECK(c.driver_version >= c.runtime_version / 1000 * 1000);  // the driver supports the runtime's major
    CHECK(c.date_utc.size() == 20);                              // "YYYY-MM-DDTHH:MM:SSZ"

    for (const auto& p : c.points) {
        INFO(p.quantity << " = " << p.value << " " << p.unit << " (spread " << p.spread << "): " << p.method);
        CHECK(std::isfinite(p.value));
        CHECK(p.value > 0);
        CHECK(p.spread >= 0);
        CHECK(!p.unit.empty());
        CHECK(!p.method.empty());
    }
    for (const char* qty :
         {"hbm_bytes_per_s", "hbm_read_bytes_per_s", "l2_bytes_per_s", "smem_bytes_per_s", "vector_flop_per_s.f32", "vector_flop_per_s.f16",
          "vector_flop_per_s.bf16", "vector_flop_per_s.f64", "matrix_flop_per_s.f16", "matrix_flop_per_s.bf16", "matrix_flop_per_s.tf32",
          "launch_overhead_s", "launch_latency_s", "sm_clock_observed_hz"}) {
        INFO(qty);
        CHECK(c.find(qty) != nullptr);
    }

    const double hbm = value_of(c, "hbm_bytes_per_s");
    const double sheet = datasheet_hbm_bytes_per_s(c.device_name);
    INFO("hbm copy " << hbm << " B/s, datasheet " << sheet);
    if (sheet > 0) {
        // A copy kernel reaches 80-93% of the datasheet figure on HBM parts; 0.3x catches a broken
        // kernel (or a PCIe variant's slower memory), 1.1x a wrong byte count or an L2-resident buffer.
        CHECK(hbm >= 0.3 * sheet);
        CHECK(hbm <= 1.1 * sheet);
    } else {
        CHECK(hbm > 1e11);  // every GPU the tool targets has > 100 GB/s of device memory
    }
    // The memory hierarchy is ordered: each level closer to the SMs is faster.
    CHECK(value_of(c, "l2_bytes_per_s") > hbm);
    CHECK(value_of(c, "smem_bytes_per_s") > value_of(c, "l2_bytes_per_s"));
    // Tensor cores beat the CUDA cores by 4-16x on every GPU with them.
    CHECK(value_of(c, "matrix_flop_per_s.f16") > value_of(c, "vector_flop_per_s.f32"));
    // Empty-kernel launches cost a few microseconds on every current driver.
    const double launch = value_of(c, "launch_overhead_s");
    CHECK(launch >= 1e-6);
    CHECK(launch <= 50e-6);
    CHECK(value_of(c, "launch_latency_s") > 0);
    // The observed clock under load is at most the rated peak (plus timer granularity) and
    // not far below it.
    const double clock = value_of(c, "sm_clock_observed_hz");
    CHECK(clock > 0.2 * c.sm_clock_hz);
    CHECK(clock < 1.1 * c.sm_clock_hz);

    REQUIRE(!c.gemm_efficiency.empty());
    bool has_f16 = false, has_bf16 = false;
    for (const auto& g : c.gemm_efficiency) {
        INFO(g.dtype << " " << g.m << "x" << g.n << "x" << g.k << ": " << g.flop_per_s << " FLOP/s, efficiency " << g.efficiency);
        has_f16 = has_f16 || g.dtype == "f16";
        has_bf16 = has_bf16 || g.dtype == "bf16";
        CHECK(g.seconds > 0);
        CHECK(g.flop_per_s > 0);
        CHECK(g.efficiency > 0);
        CHECK(g.efficiency < 1.5);  // the peak is the largest square GEMM; nothing is much faster
        CHECK(g.flop_per_s ==
              Approx(2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k) / g.seconds).epsilon(1e-9));
    }
    CHECK(has_f16);
    CHECK(has_bf16);
}

TEST_CASE("calibration JSON of the GPU has the schema and every point", "[gpu]") {
    const auto q = roofline::query_cuda_devices();
    if (q.devices.empty()) {
        std::printf("SKIP: %s\n", q.problem.c_str());
        return;
    }
    const Calibration& c = quick_calibration(q.devices.front().index);
    const nlohmann::json j = roofline::calibration_to_json(c);
    CHECK(j.at("schema") == "roofline-calibration/1");
    CHECK(j.at("device").at("name") == c.device_name);
    REQUIRE(j.at("points").size() == c.points.size());
    for (std::size_t i = 0; i < c.points.size(); ++i) {
        const auto& p = j.at("points")[i];
        INFO(c.points[i].quantity);
        CHECK(p.at("quantity") == c.points[i].quantity);
        CHECK(p.at("value").get<double>() == c.points[i].value);
        CHECK(p.at("unit") == c.points[i].unit);
        CHECK(p.at("spread").get<double>() == c.points[i].spread);
    }
    CHECK(j.at("gemm_efficiency").size() == c.gemm_efficiency.size());
}

// CPU only: no device needed.
TEST_CASE("calibration JSON round-trips a hand-made calibration") {
    Calibration c;
    c.device_name = "NVIDIA H100 80GB HBM3";
    c.cc_major = 9;
    c.cc_minor = 0;
    c.sm_count = 132;
    c.memory_bytes = 85'031'714'816LL;
    c.l2_bytes = 52'428'800;
    c.driver_version = 13000;
    c.runtime_version = 13000;
    c.sm_clock_hz = 1.98e9;
    c.date_utc = "2026-11-23T10:15:00Z";
    c.points = {{"hbm_bytes_per_s", 3.0123456789012345e12, "B/s", "copy kernel", 0.0125},
                {"matrix_flop_per_s.bf16", 6.6e14 + 0.1, "FLOP/s", "cuBLASLt GEMM", 1.0 / 3.0},
                {"launch_overhead_s", 2.345678e-6, "s", "empty kernel", 0.0}};
    c.gemm_efficiency = {{"bf16", 256, 256, 256, 1.234e-5, 2.0 * 256 * 256 * 256 / 1.234e-5, 0.0041},
                         {"f16", 8192, 8192, 128, 3.3e-5, 5.2e14, 0.79}};

    const nlohmann::json parsed = nlohmann::json::parse(roofline::calibration_to_json(c).dump());
    CHECK(parsed.at("schema") == "roofline-calibration/1");
    CHECK(parsed.at("date_utc") == c.date_utc);
    const auto& d = parsed.at("device");
    CHECK(d.at("name") == c.device_name);
    CHECK(d.at("compute_capability") == "9.0");
    CHECK(d.at("cc_major").get<int>() == 9);
    CHECK(d.at("cc_minor").get<int>() == 0);
    CHECK(d.at("sm_count").get<int>() == 132);
    CHECK(d.at("memory_bytes").get<long long>() == c.memory_bytes);
    CHECK(d.at("l2_bytes").get<long long>() == c.l2_bytes);
    CHECK(d.at("driver_version").get<int>() == 13000);
    CHECK(d.at("runtime_version").get<int>() == 13000);
    CHECK(d.at("sm_clock_hz").get<double>() == c.sm_clock_hz);

    REQUIRE(parsed.at("points").size() == c.points.size());
    for (std::size_t i = 0; i < c.points.size(); ++i) {
        const auto& p = parsed.at("points")[i];
        CHECK(p.at("quantity") == c.points[i].quantity);
        CHECK(p.at("value").get<double>() == c.points[i].value);  // exact: JSON keeps 17 digits
        CHECK(p.at("unit") == c.points[i].unit);
        CHECK(p.at("method") == c.points[i].method);
        CHECK(p.at("spread").get<double>() == c.points[i].spread);
    }
    REQUIRE(parsed.at("gemm_efficiency").size() == c.gemm_efficiency.size());
    for (std::size_t i = 0; i < c.gemm_efficiency.size(); ++i) {
        const auto& g = parsed.at("gemm_efficiency")[i];
        const auto& e = c.gemm_efficiency[i];
        CHECK(g.at("dtype") == e.dtype);
        CHECK(g.at("m").get<long long>() == e.m);
        CHECK(g.at("n").get<long long>() == e.n);
        CHECK(g.at("k").get<long long>() == e.k);
        CHECK(g.at("seconds").get<double>() == e.seconds);
        CHECK(g.at("flop_per_s").get<double>() == e.flop_per_s);
        CHECK(g.at("efficiency").get<double>() == e.efficiency);
    }
    CHECK(c.find("launch_overhead_s") == &c.points[2]);
    CHECK(c.find("l2_bytes_per_s") == nullptr);
}

// CPU only: the repetition summary behind every point.
TEST_CASE("rep_stats interpolates percentiles and the relative spread") {
    const auto s = roofline::rep_stats({5, 1, 4, 2, 3, 6, 7, 8, 9, 10, 11});  // 1..11 shuffled
    CHECK(s.median == Approx(6));
    CHECK(s.p10 == Approx(2));   // position 0.1 * 10 = 1 -> 2
    CHECK(s.p90 == Approx(10));  // position 9 -> 10
    CHECK(s.spread == Approx(8.0 / 6.0));
    const auto even = roofline::rep_stats({1, 2, 3, 4});
    CHECK(even.median == Approx(2.5));  // position 1.5
    CHECK(even.p10 == Approx(1.3));     // position 0.3
    CHECK(even.p90 == Approx(3.7));     // position 2.7
    const auto one = roofline::rep_stats({2.5});
    CHECK(one.median == 2.5);
    CHECK(one.spread == 0);
    const auto none = roofline::rep_stats({});
    CHECK(none.median == 0);
    CHECK(none.spread == 0);
}
