// fp32 SIMT GEMMs and convolutions on wide-issue chips (issue #15, docs/ACCURACY.md "fp32
// convolutions on Hopper"): which chips have 32-lane single-issue partitions, the optional conv
// columns of `validate`, depthwise convolutions as direct kernels, and the fit and validation sets
// of tests/data/public/h100-conv-2026-11-26 (measured on an H100 SXM, 2026-11-26) as checks.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "html_support.hpp"
#include "ops/error.hpp"
#include "reports/validate.hpp"
#include "sim/eager_host.hpp"
#include "sim/gpu_model.hpp"
#include "sim/hardware.hpp"
#include "support.hpp"

using namespace roofline;

namespace {

const char* const kSet = "tests/data/public/h100-conv-2026-11-26/";

// The cases of one file of the set, predicted with the probed host of the machine that measured
// them (tests/data/hosts/h100-vm-2026-11-26.json: same VM type, PyTorch and cuDNN).
std::vector<ValidationCase> predicted(const std::string& file) {
    ValidateOptions opt;
    opt.hosts[""] = load_eager_host(test::source_path("tests/data/hosts/h100-vm-2026-11-26.json"));
    std::vector<ValidationCase> cases;
    (void)run_validation(load_measurements({test::source_path(std::string(kSet) + file)}, opt), opt, &cases);
    return cases;
}

double median(std::vector<double> v) { return validation_quantile(std::move(v), 0.5); }

// Signed errors (predicted / measured - 1) of the cases whose shape text passes `keep` and whose
// measured time is at least `min_s` (below it the host, not the device, sets the time).
std::vector<double> errors(const std::vector<ValidationCase>& cases, double min_s, const std::function<bool(const std::string&)>& keep) {
    std::vector<double> e;
    for (const ValidationCase& c : cases)
        if (c.measured_s >= min_s && c.predicted_s > 0 && keep(validation_case_shape(c))) e.push_back(c.predicted_s / c.measured_s - 1);
    return e;
}

bool has(const std::string& s, const char* what) { return s.find(what) != std::string::npos; }

// One fp32 3 x 3 convolution (padding 1, stride 1) of input x with `groups` groups, as many output
// channels as input channels: node 0.
Graph conv3x3_graph(const Shape& x_shape, std::int64_t groups) {
    Graph g;
    const TensorId x = g.add_input("x", TensorDesc{x_shape, DType::f32});
    const TensorId w = g.add_parameter("w", TensorDesc{{x_shape[1], x_shape[1] / groups, 3, 3}, DType::f32});
    Attrs a;
    a.set("padding", std::vector<std::int64_t>{1, 1});
    a.set("groups", groups);
    const NodeId n = g.add_node("conv", OpKind::conv2d, {x, w}, a, {});
    g.mark_output(g.node(n).outputs[0]);
    return g;
}

}  // namespace

TEST_CASE("wide-issue FP32: 32-lane single-issue partitions from the spec's lanes per SM and generation", "[hopper][hw]") {
    // 128 FP32 lanes per SM at compute capability >= 7: GA10x (a10), AD10x (l4, rtx-4090), GH100.
    for (const char* chip : {"h100-sxm", "h100-pcie", "h200", "l4", "a10", "rtx-4090"}) {
        INFO(chip);
        CHECK(wide_issue_fp32(resolve_hardware(chip)));
    }
    // 64 lanes per SM (GV100, GA100, TU104, GP100) or Pascal's dual issue (GP104 in the P4: 128
    // lanes, compute capability 6.1).
    for (const char* chip : {"a100-pcie-40gb", "a100-sxm-80gb", "v100-pcie-32gb", "t4", "p100-pcie-16gb", "p4"}) {
        INFO(chip);
        CHECK_FALSE(wide_issue_fp32(resolve_hardware(chip)));
    }
}

TEST_CASE("validate: conv rows with groups, non-square shapes, no bias and backward passes", "[hopper][validate]") {
    const std::string d = test::tmp_path("conv_extras");
    std::filesystem::remove_all(d);
    std::filesystem::create_directories(d);
    const std::string head =
        "OPName,Latency_ms,Device,B,Input_Channel,Output_Channel,Kernel_Szie,Kernel_W,Input_Size,Input_W,Stride,Padding,Padding_W,"
        "Groups,Bias,Direction\n";
    htmltest::spit(d + "/conv.csv", head +
                                        "conv,1,NVIDIA H100 80GB HBM3,8,64,64,3,3,56,56,1,1,1,64,0,forward\n"
                                        "conv,1,NVIDIA H100 80GB HBM3,8,64,64,3,3,56,56,1,1,1,64,0,backward\n"
                                        "conv,1,NVIDIA H100 80GB HBM3,8,192,64,1,7,17,17,1,0,3,1,1,forward\n");
    ValidateOptions opt;
    std::vector<ValidationCase> cases;
    (void)run_validation(load_measurements({d + "/conv.csv"}, opt), opt, &cases);
    REQUIRE(cases.size() == 3);
    CHECK(validation_case_shape(cases[0]) ==
          "B=8 Input_Channel=64 Output_Channel=64 Kernel_Szie=3 Input_Size=56 Stride=1 Padding=1 Groups=64 Bias=0");
    CHECK(validation_case_shape(cases[1]) == validation_case_shape(cases[0]) + " Direction=backward");
    CHECK(validation_case_shape(cases[2]) ==
          "B=8 Input_Channel=192 Output_Channel=64 Kernel_Szie=1 Input_Size=17 Stride=1 Padding=0 Kernel_W=7 Input_W=17 Padding_W=3");
    for (const ValidationCase& c : cases) CHECK(c.predicted_s > 0);
    // A depthwise pass streams its tensors: 8 x 64 x 56 x 56 fp32 in and out is 12.8 MB, a few
    // microseconds at 3.35 TB/s, well under the 50 us a GEMM per group would cost; backward is
    // the data gradient and the nine-tap re-reading weight gradient, more than forward.
    CHECK(cases[1].predicted_s > cases[0].predicted_s);

    htmltest::spit(d + "/bad.csv", head + "conv,1,NVIDIA H100 80GB HBM3,8,64,64,3,3,56,56,1,1,1,64,0,sideways\n");
    CHECK_THROWS_WITH(load_measurements({d + "/bad.csv"}, opt),
                      Catch::Contains("bad.csv") && Catch::Contains("row 1") && Catch::Contains("'Direction': 'sideways'"));
    htmltest::spit(d + "/groups.csv", head + "conv,1,NVIDIA H100 80GB HBM3,8,64,64,3,3,56,56,1,1,1,5,0,forward\n");
    CHECK_THROWS_WITH(load_measurements({d + "/groups.csv"}, opt), Catch::Contains("'Groups': 5 does not divide the channels 64 -> 64"));
}

TEST_CASE("H100 fp32 fit set: SGEMMs and forward convolutions where the device sets the time", "[hopper][accuracy]") {
    // The fit set the wide-issue and sm_90 conv terms were chosen on (sim/gpu_model.hpp). These
    // are fit errors, not a validation: they guard the chosen values against later changes.
    // SGEMMs of 0.2 ms and more (35 rows): the term was set so their median error is nearest
    // zero (-0.2% over all 35); within 5% allows the scan's 0.01 step (about 1.2%) and later
    // small changes.
    const auto sgemm = errors(predicted("linear_fit.csv"), 0.2e-3, [](const std::string&) { return true; });
    REQUIRE(sgemm.size() >= 30);
    CHECK(std::abs(median(sgemm)) <= 0.05);
    // Dense 3 x 3 stride-1 forward convolutions above 0.1 ms (58 rows): -10.1% bias and 12.0%
    // median |error| when chosen; 15% and 20% leave room for the other terms' moves. Before the
    // sm_90 terms (Winograd forward, every lane at the A100's efficiency): -56% bias.
    const auto conv = predicted("conv_fit.csv");
    const auto k3 = errors(conv, 0.1e-3, [](const std::string& s) {
        return has(s, "Kernel_Szie=3 ") && has(s, "Stride=1 ") && !has(s, "Groups=") && !has(s, "backward");
    });
    REQUIRE(k3.size() >= 50);
    std::vector<double> abs_k3;
    for (double e : k3) abs_k3.push_back(std::abs(e));
    CHECK(std::abs(median(k3)) <= 0.15);
    CHECK(median(abs_k3) <= 0.20);
}

TEST_CASE("H100 fp32 validation set: torchvision's forward convolutions, never fitted on", "[hopper][accuracy]") {
    // Every distinct convolution of torchvision's 19 classifiers at batch 1 and 32 (393 shapes,
    // forward and backward). Measured 2026-11-26 with the same lease as the fit set; scored with
    // the model that was chosen on the fit set: dense forward rows above 0.1 ms 18.9% median
    // |error| (126 rows), grouped and depthwise forward rows of all sizes 27%. The bounds are those results
    // plus about a third (25% and 36%), so that a change that makes either worse fails; the backward rows
    // (58% median on 1 x 1, -58% bias) are the open problem named in docs/ACCURACY.md and are
    // not bounded here.
    const auto cases = predicted("conv_validation.csv");
    REQUIRE(cases.size() >= 1500);
    std::vector<double> dense, depthwise;
    for (double e : errors(cases, 0.1e-3, [](const std::string& s) { return !has(s, "Groups=") && !has(s, "backward"); }))
        dense.push_back(std::abs(e));
    for (double e : errors(cases, 0, [](const std::string& s) { return has(s, "Groups=") && !has(s, "backward"); }))
        depthwise.push_back(std::abs(e));
    REQUIRE(dense.size() >= 100);
    REQUIRE(depthwise.size() >= 50);
    CHECK(median(dense) <= 0.25);
    CHECK(median(depthwise) <= 0.36);
}

namespace {

// The H200 per-kernel fit set (tests/data/public/h200-conv-2026-11-27), predicted with the host
// probed on that lease's machine type.
std::vector<ValidationCase> h200_predicted(const std::string& file, const std::string& host) {
    ValidateOptions opt;
    opt.hosts[""] = load_eager_host(test::source_path(host));
    std::vector<ValidationCase> cases;
    (void)run_validation(load_measurements({test::source_path("tests/data/public/h200-conv-2026-11-27/" + file)}, opt), opt, &cases);
    return cases;
}

std::vector<double> magnitudes(std::vector<double> e) {
    for (double& x : e) x = std::abs(x);
    return e;
}

}  // namespace

TEST_CASE("sm_90 backward convolutions: per-kernel fit set, H200", "[hopper][accuracy]") {
    // The data-gradient tile overhead, the per-pass shares, the issue-bound depthwise kernels and
    // the autograd engine's start were fitted on these rows (sim/gpu_model.hpp,
    // sim/analysis.hpp). Fit errors: a guard against later changes, not a validation. With the
    // model of this commit the backward rows of conv_fit_kernels.csv give 22.5% median |error|
    // (+17.8% bias, the probed host of 2026-11-27 being slower than the sweep's); before these
    // terms 53% (-37%). Bounds: 30% and +/-25%.
    const auto cases = h200_predicted("conv_fit_kernels.csv", "tests/data/hosts/h200-vm-2026-11-27.json");
    const auto bwd = errors(cases, 0, [](const std::string& s) { return has(s, "backward"); });
    REQUIRE(bwd.size() >= 300);
    CHECK(median(magnitudes(bwd)) <= 0.30);
    CHECK(std::abs(median(bwd)) <= 0.25);
    // Depthwise forward rows above 0.1 ms: issue-bound, 10.6% when fitted (was -50% as a streaming
    // kernel): within 20%.
    const auto dw = errors(cases, 0.1e-3, [](const std::string& s) { return has(s, "Groups=") && !has(s, "backward"); });
    REQUIRE(dw.size() >= 5);
    CHECK(median(magnitudes(dw)) <= 0.20);
}

TEST_CASE("depthwise convolutions in eager mode are issue-bound: time follows SMs x clock, not DRAM", "[hopper][gpu-model]") {
    // 40 x 159 x 161^2, 3 x 3, stride 1 (a fit-set row: forward 1.58 ms measured on the H200).
    // The forward kernel streams 2 x 660 MB (0.28 ms at the H200's 4.8 TB/s); its issue slots,
    // 40 x 159 x 161^2 x (195 + 14.7 x 9) = 5.4e10 thread instructions at 132 SMs x 128 a clock x
    // 1.98 GHz = 1.63 ms, bound it. The same on the H100 (same SMs and clock, 3.35 TB/s): equal.
    const Graph graph = conv3x3_graph({40, 159, 161, 161}, 159);
    auto time_on = [&](const char* chip, const GpuModelOptions& o) {
        const Hardware hw = builtin_hardware(chip);
        const auto k = lower_to_kernel(graph, 0, hw, o);
        REQUIRE(k);
        return gpu_kernel_cost(*k, hw, o).time_s;
    };
    GpuModelOptions eager;
    eager.eager = true;
    const double h200 = time_on("h200", eager), h100 = time_on("h100-sxm", eager);
    CHECK(h200 == Approx(40.0 * 159 * 161 * 161 * (195 + 14.7 * 9) / (132 * 128 * 1.98e9)).epsilon(0.05));
    CHECK(h100 == Approx(h200).epsilon(0.02));
    // The native runtime (the project's own kernel) keeps the streaming model: far below.
    GpuModelOptions native;
    CHECK(time_on("h200", native) < 0.5 * h200);
}

TEST_CASE("grouped convolutions in eager mode run group by group, as cuDNN's sm_90 engines do", "[hopper][gpu-model]") {
    // ResNeXt-50's 3 x 3 grouped convolution at batch 16: 256 channels in 32 groups of 8, 28^2.
    const Graph g = conv3x3_graph({16, 256, 28, 28}, 32);
    const NodeId n = 0;
    CHECK_FALSE(is_depthwise_conv(g, n));
    const Hardware hw = builtin_hardware("h100-sxm");
    GpuModelOptions eager;
    eager.eager = true;
    const auto k = lower_to_kernel(g, n, hw, eager);
    REQUIRE(k);
    // One part per group, each a GEMM of M = 16 x 28^2, N = 8, K = 8 x 9; the parts carry exactly
    // the node's work between them.
    REQUIRE(k->parts.size() == 32);
    Work sum;
    for (const Kernel& p : k->parts) {
        REQUIRE(p.gemm);
        CHECK(p.gemm->batch == 1);
        CHECK(p.gemm->m == 16 * 28 * 28);
        CHECK(p.gemm->n == 8);
        sum += p.work;
    }
    CHECK(sum == g.work(n));
    // Run one after another, the groups take longer than one batched kernel over all of them
    // (the model without the split, and the project's own runtime).
    GpuModelOptions single = eager;
    single.cudnn_grouped_per_group = false;
    const auto one = lower_to_kernel(g, n, hw, single);
    REQUIRE(one);
    CHECK(one->parts.empty());
    CHECK(gpu_kernel_cost(*k, hw, eager).time_s > gpu_kernel_cost(*one, hw, single).time_s);
    CHECK(lower_to_kernel(g, n, hw, GpuModelOptions{})->parts.empty());
    // At batch 1, with 8 input channels per group, cuDNN runs its single grouped direct kernel
    // (cudnn_grouped_direct: forward at batch <= 2 and <= 12 channels per group): one kernel.
    const Graph small = conv3x3_graph({1, 256, 28, 28}, 32);
    const auto direct = lower_to_kernel(small, 0, hw, eager);
    REQUIRE(direct);
    CHECK(direct->parts.empty());
}

TEST_CASE("sm_90 grouped convolutions: per-kernel fit set, H100", "[hopper][accuracy]") {
    // tests/data/public/h100-conv-2026-11-27/conv_grouped_fit_kernels.csv: 226 grouped shapes (2-64
    // groups, seed 28), forward and backward, with the host probed in the same call. The
    // group-by-group lowering and its per-group host steps were fitted on these rows: a guard, not
    // a validation. With the model of this commit: 30.4% median |error|, -16.1% bias (one batched
    // kernel over all groups: 61.8%, -56.1%; every shape group by group: 36.7%, -10.5%). Bounds:
    // 40% and +/-25%.
    ValidateOptions opt;
    opt.hosts[""] = load_eager_host(test::source_path("tests/data/hosts/h100-vm-2026-11-27.json"));
    std::vector<ValidationCase> cases;
    (void)run_validation(load_measurements({test::source_path("tests/data/public/h100-conv-2026-11-27/conv_grouped_fit_kernels.csv")}, opt),
                         opt, &cases);
    const auto all = errors(cases, 0, [](const std::string&) { return true; });
    REQUIRE(all.size() == 452);
    CHECK(median(magnitudes(all)) <= 0.40);
    CHECK(std::abs(median(all)) <= 0.25);
}
