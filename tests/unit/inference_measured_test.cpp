// The LLM prefill and decode steps measured on an H100 (tests/data/measured/h100-sxm-2026-11-26b/
// inference, held out: predictions committed before they ran, tests/data/inference/). validate
// rebuilds each step from the measurement's `model.inference` record, as analyze --phase builds it.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "model/model_json.hpp"
#include "reports/validate.hpp"
#include "sim/hardware.hpp"
#include "support.hpp"

using nlohmann::ordered_json;
using roofline::ValidateOptions;

namespace {

const char* const kSteps[] = {"llama-2-7b-prefill-b1s1024", "llama-2-7b-decode-b1c1024", "llama-2-7b-decode-b16c1024",
                              "llama-2-7b-decode-b64c512",  "mistral-7b-decode-b8c4000", "gpt2-small-prefill-b1s512",
                              "gpt2-small-decode-b1c512",   "gpt2-small-decode-b32c512"};

std::string step_file(const std::string& name) {
    return test::source_path("tests/data/measured/h100-sxm-2026-11-26b/inference/" + name + ".json");
}

// name -> {measured, predicted} step seconds
std::map<std::string, std::pair<double, double>> step_times() {
    std::vector<std::string> files;
    for (const char* s : kSteps) files.push_back(step_file(s));
    const ValidateOptions opt;
    std::vector<roofline::ValidationCase> cases;
    const ordered_json doc = roofline::run_validation(roofline::load_measurements(files, opt), opt, &cases);
    REQUIRE(doc["summary"]["errors"] == 0);
    std::map<std::string, std::pair<double, double>> out;
    for (const auto& c : cases)
        if (c.op == "e2e") out[std::filesystem::path(c.file).stem().string()] = {c.measured_s, c.predicted_s};
    return out;
}

}  // namespace

TEST_CASE("measured inference steps: every step rebuilt and predicted, none faster than its bytes at the datasheet bandwidth",
          "[inference][measured]") {
    // A decode step streams every weight and the attended KV cache from HBM at least once, so
    // neither the GPU nor the model can beat (parameter bytes + cache bytes) / datasheet HBM
    // bandwidth (issue #17: "decode time is never below bytes / bandwidth"). Expected: both the
    // measured and the predicted step at or above that floor, for all eight steps.
    const auto times = step_times();
    REQUIRE(times.size() == std::size(kSteps));
    const double hbm = roofline::resolve_hardware("h100-sxm").device_memory().bytes_per_s.value;
    for (const auto& [name, t] : times) {
        INFO(name << ": measured " << t.first << " s, predicted " << t.second << " s");
        const auto m = roofline::read_json_file(step_file(name));
        const roofline::Graph g = roofline::measured_inference_graph(m["model"], step_file(name));
        double streamed = 0;
        for (const auto& ten : g.tensors())  // the weights and the KV cache read
            if (ten.producer == roofline::kNoNode &&
                (ten.role == roofline::TensorRole::parameter || ten.name.find("_cache") != std::string::npos))
                streamed += static_cast<double>(ten.desc.bytes());
        const double floor = streamed / hbm;
        CHECK(t.first >= floor);
        CHECK(t.second >= floor);
    }
}

TEST_CASE("measured inference steps: predicted within a factor 1.6 of measured where the executor runs the kernels modelled",
          "[inference][measured]") {
    // Expected: predicted / measured in [1 / 1.6, 1.6] for the seven steps other than mistral's: a
    // guard against gross mis-costing, not the accuracy goal. The bound leaves room for run-to-run
    // spread of the host-bound small steps (gpt2 decode at batch 1 measured 2.61 and 2.06 ms in two
    // calls of the same lease). The first look (the predictions committed before the run) was
    // -31%..+98%, the +98% a gpt2
    // decode at batch 32 whose tied LM head (a matmul of [32, 1, 768] by one [768, 50257] weight)
    // was costed as 32 GEMMs of one row each, reading the weight 32 times; at::matmul and the
    // executor fold the batch into M (one GEMM), as the model now does (-5.5%). The others are
    // -14% to -31% (the executor's ~2 us between dependent kernels, not modelled: docs/ACCURACY.md).
    // mistral-7b is left out: its grouped-query decode attention runs on cuBLAS's CUDA-core batched
    // GEMM at 0.45 TB/s in this executor (-49%), a kernel the model does not cost.
    const auto times = step_times();
    for (const auto& [name, t] : times) {
        if (name.rfind("mistral", 0) == 0) continue;
        INFO(name << ": measured " << t.first * 1e3 << " ms, predicted " << t.second * 1e3 << " ms");
        CHECK(t.second / t.first >= 1 / 1.6);
        CHECK(t.second / t.first <= 1.6);
    }
}
