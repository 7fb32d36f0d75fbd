// The small-kernel terms of the native runtime (issue #15), against the fit set they were taken
// from: the H200 measurements of 2026-11-26 in tests/data/measured/h200-2026-11-26b/ (launch
// chains and a training step of small branches). These are fit data: the tests check that the
// terms stay wired and fitted, not how well they transfer; docs/ACCURACY.md reports that on the
// held-out sets.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/model_json.hpp"
#include "reports/validate.hpp"
#include "sim/analysis.hpp"
#include "sim/builtin_hardware.hpp"
#include "support.hpp"

namespace {

const std::string kDir = "tests/data/measured/h200-2026-11-26b/";

nlohmann::json read(const std::string& rel) {
    std::ifstream in(test::source_path(rel));
    return nlohmann::json::parse(in);
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n == 0 ? 0.0 : (n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
}

}  // namespace

TEST_CASE("the executor's host: 256 tiny launches take the measured issue interval each", "[fidelity][small]") {
    // Expected: the step of each chain as measured, untraced and traced; tolerance 5%: the
    // intervals were taken from these same steps (step / 256), so only the first kernel's own
    // time and the step's events stand between them.
    const roofline::Hardware hw = roofline::builtin_hardware("h200");
    for (const char* op : {"add", "matmul", "layernorm"}) {
        INFO(op);
        const std::string file = kDir + "chain-" + op + ".json";
        const nlohmann::json m = read(file);
        REQUIRE(m["step"]["timing"] == "untraced");
        const roofline::Graph g = roofline::load_model_arg(test::source_path(std::string("tests/data/small/chain-") + op + ".json"));
        const double untraced = roofline::analyze(g, hw).schedule.step_time_s;
        CHECK(untraced == Approx(m["step"]["median_s"].get<double>()).epsilon(0.05));
        roofline::AnalysisOptions traced;
        traced.executor.traced = true;
        CHECK(roofline::analyze(g, hw, traced).schedule.step_time_s == Approx(m["step"]["traced_median_s"].get<double>()).epsilon(0.05));
    }
}

TEST_CASE("small kernels: GEMM and norm latencies on the fit set", "[fidelity][small]") {
    // The small-kernel fit set (72 branches' GEMMs from 64^3 to 2048^3, layernorms of 128-2048 rows
    // of 256-2048): per-family median |error| of the kernels the terms were fitted on. Before the
    // terms (commit 3d02272's model) the GEMMs were 40% too fast and the layernorms 70%; expected
    // now within 12% (GEMMs) and 25% (layernorm forward and backward; the backward's three kernels
    // carry no fitted term of their own beyond the norm latency of dx).
    const roofline::ValidateOptions opt;
    std::vector<roofline::ValidationCase> cases;
    const auto doc =
        roofline::run_validation(roofline::load_measurements({test::source_path(kDir + "small-train.json")}, opt), opt, &cases);
    std::vector<double> gemm, norm;
    for (const auto& c : cases) {
        if (c.op == "e2e" || c.predicted_s <= 0) continue;
        const double e = std::fabs(c.predicted_s / c.measured_s - 1);
        if (c.family == "matmul") gemm.push_back(e);
        if (c.family == "layernorm") norm.push_back(e);
    }
    INFO(roofline::render_validation(doc));
    CHECK(gemm.size() == 75);
    CHECK(norm.size() == 18);
    CHECK(median(gemm) <= 0.12);
    CHECK(median(norm) <= 0.25);
}
