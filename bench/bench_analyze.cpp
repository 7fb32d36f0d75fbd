// Google Benchmark: the cost of analysing a model end to end inside the process (template
// expansion, loading, verify, work counts, roofline, report). Whole-process figures are in
// docs/PERFORMANCE.md.
#include <benchmark/benchmark.h>

#include "model/autodiff.hpp"
#include "model/model_json.hpp"
#include "sim/memory.hpp"
#include "reports/report.hpp"
#include "sim/analysis.hpp"

namespace {

void BM_LoadModel(benchmark::State& state, const char* model) {
    for (auto _ : state) {
        roofline::Graph g = roofline::load_model_arg(model);
        benchmark::DoNotOptimize(g.nodes().size());
    }
}

void BM_Analyze(benchmark::State& state, const char* model) {
    const roofline::Hardware hw = roofline::builtin_hardware("h100-sxm");
    const roofline::Graph g = roofline::load_model_arg(model);
    for (auto _ : state) {
        roofline::Analysis a = roofline::analyze(g, hw);
        benchmark::DoNotOptimize(a.time_s);
    }
    state.counters["nodes"] = static_cast<double>(g.nodes().size());
}

void BM_AnalyzeEndToEnd(benchmark::State& state, const char* model) {
    for (auto _ : state) {
        const roofline::Hardware hw = roofline::builtin_hardware("h100-sxm");
        const roofline::Graph g = roofline::load_model_arg(model);
        const roofline::Analysis a = roofline::analyze(g, hw);
        const roofline::ReportContext ctx{g, hw, a, "inference", nullptr};
        std::string json = roofline::report_json_text(ctx);
        std::string table = roofline::render_table(ctx, {});
        benchmark::DoNotOptimize(json.size() + table.size());
    }
}

}  // namespace

BENCHMARK_CAPTURE(BM_LoadModel, gpt2_small, "gpt2-small")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_LoadModel, gpt3_175b, "gpt3-175b")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Analyze, gpt3_175b, "gpt3-175b")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_AnalyzeEndToEnd, gpt2_small, "gpt2-small")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_AnalyzeEndToEnd, gpt3_175b, "gpt3-175b")->Unit(benchmark::kMillisecond);


namespace {

// Issue "Training steps": autodiff + memory model for the gpt3-175b training step.
void BM_TrainingStep(benchmark::State& state, const char* model) {
    const roofline::Graph fwd = roofline::load_model_arg(model);
    std::size_t nodes = 0;
    for (auto _ : state) {
        const roofline::Graph t = roofline::build_training_step(fwd, {});
        const roofline::MemoryTimeline m = roofline::memory_timeline(t);
        benchmark::DoNotOptimize(m.peak_bytes);
        nodes = t.nodes().size();
    }
    state.counters["nodes"] = static_cast<double>(nodes);
}

}  // namespace

BENCHMARK_CAPTURE(BM_TrainingStep, gpt2_small, "gpt2-small")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_TrainingStep, gpt3_175b, "gpt3-175b")->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
