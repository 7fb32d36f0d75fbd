// reports/compare: predicted vs measured on fixture files measured on an H100 SXM on 2026-11-23
// (tests/data/measured/h100-sxm-2026-11-23, written by `roofline measure`; see docs/ACCURACY.md).
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "model/model_json.hpp"
#include "ops/error.hpp"
#include "reports/compare.hpp"
#include "reports/report.hpp"
#include "sim/analysis.hpp"
#include "support.hpp"

using nlohmann::json;
using namespace roofline;

namespace {

const std::string kMeasured = "tests/data/measured/h100-sxm-2026-11-23/";

json predicted_suite(const std::string& hw = "h100-sxm") {
    const Graph g = load_model_arg(test::source_path("tests/data/suite/kernel-suite.json"), {});
    const Hardware h = resolve_hardware(hw);
    const Analysis a = analyze(g, h, {});
    return json::parse(report_json_text(ReportContext{g, h, a, "inference", nullptr}));
}

json measured(const std::string& name) { return read_json_file(test::source_path(kMeasured + name)); }

const nlohmann::ordered_json& row(const nlohmann::ordered_json& cmp, const std::string& name) {
    for (const auto& r : cmp["kernels"])
        if (r["name"] == name) return r;
    FAIL("no row " << name);
    return cmp;
}

}  // namespace

TEST_CASE("compare joins the kernel suite's prediction and measurement node by node", "[compare]") {
    const json m = measured("suite.json");
    const auto cmp = compare_documents(predicted_suite(), "predicted.json", m, "suite.json");
    CHECK(cmp["schema"] == "roofline-comparison/1");
    // Every one of the 39 suite nodes launched at least one kernel and has a prediction.
    CHECK(cmp["summary"]["kernels"] == 39);
    CHECK(cmp["summary"]["unmatched_nodes"] == 0);
    // Per-row arithmetic: error = (predicted - measured) / measured.
    const auto& g = row(cmp, "gemm_4096^3");
    const double p = g["predicted_s"].get<double>(), t = g["measured_s"].get<double>();
    CHECK(g["time_error_pct"].get<double>() == Approx((p - t) / t * 100.0));
    // The measured median of the fixture, taken as is (166 us on the H100).
    CHECK(t == Approx(m["nodes"][9]["median_s"].get<double>()));
    // Tensor-core FLOPs from the counters: exactly 2 x 4096^3 (one tensor op = one FLOP on GH100).
    CHECK(g["measured_flops"].get<double>() == Approx(2.0 * 4096 * 4096 * 4096).epsilon(1e-9));
    // Statistics over the rows: the median of |error| recomputed here.
    std::vector<double> errs;
    for (const auto& r : cmp["kernels"]) errs.push_back(std::fabs(r["time_error_pct"].get<double>()));
    std::sort(errs.begin(), errs.end());
    CHECK(cmp["summary"]["median_abs_error_pct"].get<double>() == Approx(errs[errs.size() / 2]));
    // Worst offenders are ordered by absolute time discrepancy.
    double last = 1e30;
    for (const auto& w : cmp["summary"]["worst"]) {
        const auto& r = row(cmp, w.get<std::string>());
        const double d = std::fabs(r["predicted_s"].get<double>() - r["measured_s"].get<double>());
        CHECK(d <= last);
        last = d;
    }
    // Step time comes from the measurement's device-event timing.
    CHECK(cmp["summary"]["measured_step_s"].get<double>() == m["step"]["median_s"].get<double>());
}

TEST_CASE("the GEMM model stays within its measured accuracy on the H100 fixture", "[compare][accuracy]") {
    // A regression guard on the model, not a target: GEMMs of at least 1 GFLOP in the suite,
    // predicted with the spec calibrated on the same H100 (tests/data/measured/.../h100-calibrated.json)
    // against their CUPTI times. Bound: 20% median error (measured 2026-11-23; see ACCURACY.md).
    const auto cmp = compare_documents(predicted_suite(test::source_path(kMeasured + "h100-calibrated.json")), "p.json",
                                       measured("suite.json"), "suite.json");
    std::vector<double> errs;
    for (const auto& r : cmp["kernels"])
        if (r["op"] == "matmul" && r["predicted_flops"].get<double>() >= 1e9) errs.push_back(std::fabs(r["time_error_pct"].get<double>()));
    REQUIRE(errs.size() >= 12);
    std::sort(errs.begin(), errs.end());
    CHECK(errs[errs.size() / 2] <= 20.0);
}

TEST_CASE("compare refuses documents that do not describe the same graph", "[compare][errors]") {
    const json m = measured("suite.json");
    json other = predicted_suite();
    other["model"]["name"] = "something-else";
    CHECK_THROWS_WITH(compare_documents(other, "p.json", m, "m.json"), Catch::Contains("p.json") && Catch::Contains("m.json"));
    json mode = predicted_suite();
    mode["settings"]["mode"] = "training";
    CHECK_THROWS_WITH(compare_documents(mode, "p.json", m, "m.json"), Catch::Contains("same mode"));
    json bad = m;
    bad["schema"] = "roofline-report/1";
    CHECK_THROWS_WITH(compare_documents(predicted_suite(), "p.json", bad, "m.json"), Catch::Contains("m.json: /schema"));
    json broken = m;
    broken["nodes"][0].erase("median_s");
    CHECK_THROWS_AS(compare_documents(predicted_suite(), "p.json", broken, "m.json"), InputError);
}

TEST_CASE("roofline compare works offline on saved files and writes deterministic JSON", "[compare][cli]") {
    const std::string pred = test::tmp_path("cmp-pred.json"), a = test::tmp_path("cmp-a.json"), b = test::tmp_path("cmp-b.json");
    REQUIRE(test::run_cli("analyze '" + test::source_path("tests/data/suite/kernel-suite.json") + "' -q -o '" + pred + "'").code == 0);
    const std::string meas = test::source_path(kMeasured + "suite.json");
    const auto r = test::run_cli("compare '" + pred + "' '" + meas + "' -o '" + a + "'");
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Catch::Contains("worst offenders") && Catch::Contains("median"));
    REQUIRE(test::run_cli("compare -q '" + pred + "' '" + meas + "' -o '" + b + "'").code == 0);
    std::ifstream fa(a), fb(b);
    std::stringstream sa, sb;
    sa << fa.rdbuf();
    sb << fb.rdbuf();
    CHECK(sa.str() == sb.str());
    // A measurement of another graph: exit 2, nothing written.
    const std::string c = test::tmp_path("cmp-c.json");
    std::remove(c.c_str());
    const auto bad =
        test::run_cli("compare '" + pred + "' '" + test::source_path(kMeasured + "gpt2-small-train.json") + "' -o '" + c + "'");
    CHECK(bad.code == 2);
    CHECK_FALSE(std::ifstream(c).good());
}

TEST_CASE("the H100 measurements check out against what the kernels must do", "[compare][fidelity]") {
    // Before trusting the fixture: counters and times against quantities known exactly.
    const json m = measured("suite.json");
    REQUIRE(m["counters"]["collected"] == true);
    std::map<std::string, json> kernel;
    for (const auto& n : m["nodes"]) kernel[n["name"].get<std::string>()] = n["kernels"][0];
    const double mb16 = 4096.0 * 4096 * 2;  // one bf16 [4096, 4096] tensor
    auto dram = [&](const std::string& k) {
        const json& d = kernel.at(k)["derived"];
        return d["dram_read_bytes"].get<double>() + d["dram_write_bytes"].get<double>();
    };
    // A streaming kernel moves each input and the output once through DRAM: relu 2 tensors, add 3.
    // 5%: the counters see a little less (lines still in L2 from the previous kernel) or more.
    CHECK(dram("relu_16m") == Approx(2 * mb16).epsilon(0.05));
    CHECK(dram("add_16m") == Approx(3 * mb16).epsilon(0.05));
    // f32 arithmetic of a bf16 add: one FADD per element, exactly.
    CHECK(kernel.at("add_16m")["derived"]["fp32_flops"].get<double>() == 4096.0 * 4096);
    CHECK(kernel.at("mul_16m")["derived"]["fp32_flops"].get<double>() == 4096.0 * 4096);
    // cuBLASLt GEMM: tensor ops = 2 M N K (one op per FLOP on GH100).
    CHECK(kernel.at("gemm_4096^3")["derived"]["tensor_ops"].get<double>() == 2.0 * 4096 * 4096 * 4096);
    // Times are stable over the 30 repetitions: (p90 - p10) / median under 15% for every kernel
    // above 5 us (measured: median 3.8%, worst 7.5%).
    for (const auto& n : m["nodes"])
        for (const auto& k : n["kernels"]) {
            const double med = k["median_s"].get<double>();
            if (med < 5e-6) continue;
            INFO(n["name"].get<std::string>());
            CHECK((k["p90_s"].get<double>() - k["p10_s"].get<double>()) / med < 0.15);
        }
}
