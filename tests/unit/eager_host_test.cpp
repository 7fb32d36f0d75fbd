// The eager host (sim/eager_host.hpp, roofline-host/1): reading a probe's file and its errors,
// deriving the model's host terms from it, and using it in analyze, plan and validate.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "html_support.hpp"
#include "model/graph.hpp"
#include "model/model_json.hpp"
#include "ops/error.hpp"
#include "reports/validate.hpp"
#include "sim/analysis.hpp"
#include "sim/builtin_hardware.hpp"
#include "sim/eager_host.hpp"
#include "support.hpp"

using htmltest::slurp;
using htmltest::spit;
using roofline::AnalysisOptions;
using roofline::EagerHost;
using roofline::InputError;

namespace {

const std::string kProbe = "tests/data/hosts/h200-vm-2026-11-26.json";

std::string host_file(const std::string& name, const std::string& body) {
    const std::string d = test::tmp_path("eager-host");
    std::filesystem::create_directories(d);
    spit(d + "/" + name, body);
    return d + "/" + name;
}

}  // namespace

TEST_CASE("eager host: a probe's file and the terms it gives", "[host]") {
    const EagerHost h = roofline::load_eager_host(test::source_path(kProbe));
    CHECK(h.name == "h200-vm-2026-11-26");
    CHECK(h.add_call_s == Approx(7.284e-6).epsilon(1e-3));
    REQUIRE(h.conv_call_s);
    REQUIRE(h.timed_add_s);
    AnalysisOptions o;
    const double fitted_overlap = o.eager_overlap_p;
    roofline::apply_eager_host(h, o);
    // x + y is three dispatcher steps (the op, its output, its launch: sim/analysis.cpp) and a
    // convolution six (conv2d -> convolution -> _convolution -> cudnn_convolution, output, launch);
    // the probe's nn.Conv2d also adds its bias in place (ATen's cuDNN path: output.add_), an add's
    // cost: the terms are the measurements split by those counts. Exact: the same arithmetic.
    CHECK(o.eager_op_host_s == h.add_call_s / 3);
    CHECK(o.eager_cudnn_host_s == Approx(*h.conv_call_s - 6 * h.add_call_s / 3 - h.add_call_s).epsilon(1e-12));
    CHECK_FALSE(o.eager_cudnn_backward_host_s);  // not probed: the gradient calls use the forward's
    CHECK(o.eager_timing_host_s == Approx(*h.timed_add_s - h.add_call_s).epsilon(1e-12));
    CHECK(o.eager_overlap_p == fitted_overlap);  // a model term, not the host's

    // Only what the file measured changes.
    AnalysisOptions partial;
    const AnalysisOptions fitted;
    roofline::apply_eager_host(
        roofline::load_eager_host(host_file("add-only.json", R"({"format": "roofline-host/1", "name": "a", "add_call_s": 9e-6})")),
        partial);
    CHECK(partial.eager_op_host_s == 3e-6);
    CHECK(partial.eager_cudnn_host_s == fitted.eager_cudnn_host_s);
    CHECK(partial.eager_timing_host_s == fitted.eager_timing_host_s);
    CHECK(partial.eager_backward_call_host_s == fitted.eager_backward_call_host_s);
}

TEST_CASE("eager host: the autograd engine's start, once per backward call", "[host]") {
    // tests/data/hosts/h200-vm-2026-11-27.json measured one torch.autograd.grad over a multiply:
    // the engine's start is that less one op's dispatch (add_call_s). Exact: the same arithmetic.
    const EagerHost h = roofline::load_eager_host(test::source_path("tests/data/hosts/h200-vm-2026-11-27.json"));
    REQUIRE(h.backward_call_s);
    AnalysisOptions o;
    roofline::apply_eager_host(h, o);
    CHECK(o.eager_backward_call_host_s == Approx(*h.backward_call_s - h.add_call_s).epsilon(1e-12));
    // A backward call less than one dispatch is a bad file.
    CHECK_THROWS_WITH(roofline::load_eager_host(host_file(
                          "bad-bwd.json", R"({"format": "roofline-host/1", "name": "b", "add_call_s": 9e-6, "backward_call_s": 1e-6})")),
                      Catch::Contains("/backward_call_s"));
}

TEST_CASE("eager host: a convolution's backward call probed on its own", "[host]") {
    // tests/data/hosts/h100-vm-2026-11-27.json also timed torch.autograd.grad of the probe's
    // nn.Conv2d: the multiply's backward call (engine start, one gradient op: here the bias's
    // sum) plus cuDNN's data- and weight-gradient calls, each a convolution's six dispatcher
    // steps and cuDNN's own host work. Exact: the same arithmetic. On that machine: (152.5 -
    // 93.9) / 2 - 6 x 10.9 / 3 = 7.5 us, near the forward call's 8.6 us.
    const EagerHost h = roofline::load_eager_host(test::source_path("tests/data/hosts/h100-vm-2026-11-27.json"));
    REQUIRE(h.conv_backward_call_s);
    REQUIRE(h.backward_call_s);
    AnalysisOptions o;
    roofline::apply_eager_host(h, o);
    REQUIRE(o.eager_cudnn_backward_host_s);
    CHECK(*o.eager_cudnn_backward_host_s ==
          Approx((*h.conv_backward_call_s - *h.backward_call_s) / 2 - 6 * h.add_call_s / 3).epsilon(1e-12));
    CHECK(*o.eager_cudnn_backward_host_s == Approx(7.5e-6).margin(0.2e-6));
    CHECK(o.eager_cudnn_host_s == Approx(8.6e-6).margin(0.2e-6));
    // A convolution's backward call shorter than the multiply's is a bad file.
    CHECK_THROWS_WITH(
        roofline::load_eager_host(host_file("bad-conv-bwd.json", R"({"format": "roofline-host/1", "name": "b", "add_call_s": 9e-6,
                                                           "backward_call_s": 80e-6, "conv_backward_call_s": 50e-6})")),
        Catch::Contains("/conv_backward_call_s"));
}

TEST_CASE("eager host: a bad file names the file and the key", "[host][errors]") {
    struct Bad {
        const char* body;
        const char* message;
    };
    const Bad cases[] = {
        {R"({"format": "roofline-host/1", "name": "a"})", "/add_call_s: missing"},
        {R"({"format": "roofline-host/2", "name": "a", "add_call_s": 7e-6})", "/format: expected \"roofline-host/1\""},
        {R"({"format": "roofline-host/1", "name": "a", "add_call_s": 7.28})", "check the unit"},
        {R"({"format": "roofline-host/1", "name": "a", "add_call_s": "7e-6"})", "/add_call_s: expected a number of seconds"},
        {R"({"format": "roofline-host/1", "name": "a", "add_call_s": 7e-6, "launch_s": 1e-6})", "launch_s"},
        {R"({"format": "roofline-host/1", "name": "a", "add_call_s": 7e-6, "timed_add_s": 5e-6})",
         "/timed_add_s: is less than /add_call_s"},
        {R"({"format": "roofline-host/1", "name": "a", "add_call_s": 7e-6, "conv_call_s": 1e-6})",
         "/conv_call_s: is less than /add_call_s"},
        {R"({"format": "roofline-host/1", "name": "", "add_call_s": 7e-6})", "/name: must not be empty"},
        {R"([1, 2])", "expected a roofline-host/1 object"},
        {R"({"format": "roofline-host/1", "name": "a", "add_call_s": )", "parse error"},
    };
    int i = 0;
    for (const Bad& b : cases) {
        const std::string f = host_file("bad" + std::to_string(i++) + ".json", b.body);
        INFO(b.body);
        CHECK_THROWS_WITH(roofline::load_eager_host(f), Catch::Contains(f) && Catch::Contains(b.message));
    }
    const auto r = test::run_cli("analyze gpt2-small --runtime eager --host '" + host_file("bad-cli.json", cases[2].body) + "' -q");
    CHECK(r.code == 2);
    CHECK_THAT(r.out, Catch::Contains("/add_call_s") && Catch::Contains("check the unit"));
    const auto native = test::run_cli("analyze gpt2-small --host '" + test::source_path(kProbe) + "' -q");
    CHECK(native.code == 2);
    CHECK_THAT(native.out, Catch::Contains("add --runtime eager"));
}

TEST_CASE("eager host: a faster host shortens a host-bound step, and reports name it", "[host][cli]") {
    // GPT-2 small inference at batch 1 x 16 on an H200 in fp32: ~100 tiny kernels, host-bound under
    // eager; the probed host dispatches a step (add_call / 3 = 2.4 us) at half the fitted 4.9 us,
    // so the step must come out between 0.4x and 0.75x the fitted host's (host-bound, not all host).
    const roofline::Hardware hw = roofline::builtin_hardware("h200");
    roofline::ModelOverrides ov;
    ov.batch = 1;
    ov.seq = 16;
    ov.dtype = roofline::DType::f32;
    ov.eval = true;
    const roofline::Graph g = roofline::load_model_arg("gpt2-small", ov);
    AnalysisOptions fitted;
    fitted.runtime = roofline::Runtime::eager;
    AnalysisOptions probed = fitted;
    roofline::apply_eager_host(roofline::load_eager_host(test::source_path(kProbe)), probed);
    const double slow = roofline::analyze(g, hw, fitted).schedule.step_time_s;
    const double fast = roofline::analyze(g, hw, probed).schedule.step_time_s;
    CHECK(fast / slow > 0.4);
    CHECK(fast / slow < 0.75);

    // The same through the CLI: --host changes the step by the same kind of factor and the report
    // names the host; without --host the report has none.
    const std::string base = "analyze gpt2-small --hw h200 --dtype f32 --runtime eager --batch 1 --seq 16 -q -o '";
    std::filesystem::create_directories(test::tmp_path("eager-host"));  // this case may run alone (ctest runs each case)
    const std::string out = test::tmp_path("eager-host/report.json"), out0 = test::tmp_path("eager-host/report0.json");
    REQUIRE(test::run_cli(base + out + "' --host '" + test::source_path(kProbe) + "'").code == 0);
    REQUIRE(test::run_cli(base + out0 + "'").code == 0);
    const auto doc = nlohmann::json::parse(slurp(out)), doc0 = nlohmann::json::parse(slurp(out0));
    CHECK(doc["settings"]["host"]["name"] == "h200-vm-2026-11-26");
    CHECK_FALSE(doc0["settings"].contains("host"));
    const double cli_ratio = doc["totals"]["step_time_s"].get<double>() / doc0["totals"]["step_time_s"].get<double>();
    CHECK(cli_ratio > 0.4);
    CHECK(cli_ratio < 0.75);
    const auto plan =
        test::run_cli("plan gpt2-small --hw h200 --runtime eager --batch 1 --seq 16 -q --host '" + test::source_path(kProbe) + "'");
    CHECK(plan.code == 0);
}

TEST_CASE("validate --host: the probed machine's own small ops", "[host][validate]") {
    // 120 elementwise calls (add and tanh, 60 shapes each) re-timed on the VM the host was probed on,
    // 2026-11-26, never fitted (tests/data/public/h200-probe-vm-2026-11-26/README.md). With that
    // host the model must meet issue #15's goals on them: median |error| <= 10%, |bias| <= 5%
    // (measured 4.0% and +2.2%). With the fitted host of the public machines it is 91% (+91%).
    const std::string data = test::source_path("tests/data/public/h200-probe-vm-2026-11-26");
    roofline::ValidateOptions opt;
    opt.hosts.emplace("NVIDIA H200", roofline::load_eager_host(test::source_path(kProbe)));
    const auto doc = roofline::run_validation(roofline::load_measurements({data}, opt), opt);
    REQUIRE(doc["by_family"].size() == 1);
    const auto& g = doc["by_family"][0];
    CHECK(g["n"] == 120);
    CHECK(g["median_abs_error_pct"].get<double>() <= 10.0);
    CHECK(std::fabs(g["bias_pct"].get<double>()) <= 5.0);
    CHECK(doc["settings"]["hosts"][0]["name"] == "h200-vm-2026-11-26");
    roofline::ValidateOptions fitted;
    const auto before = roofline::run_validation(roofline::load_measurements({data}, fitted), fitted);
    CHECK(before["by_family"][0]["median_abs_error_pct"].get<double>() > 50.0);

    const auto cli = test::run_cli("validate '" + data + "' -q --host 'NVIDIA H200=" + test::source_path(kProbe) + "'");
    CHECK(cli.code == 0);
    const auto bad = test::run_cli("validate '" + data + "' -q --host '=" + test::source_path(kProbe) + "'");
    CHECK(bad.code == 2);
    CHECK_THAT(bad.out, Catch::Contains("expected FILE or DEVICE=FILE"));
}
