// Google Benchmark: the cost of analysing a model end to end inside the process (template
// expansion, loading, verify, work counts, roofline, report). Whole-process figures are in
// docs/PERFORMANCE.md.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include "model/autodiff.hpp"
#include "model/model_json.hpp"
#include "sim/memory.hpp"
#include "reports/report.hpp"
#include "sim/analysis.hpp"
#include "sim/plan.hpp"
#include "sim/cluster.hpp"
#include "sim/collectives.hpp"
#include "sim/parallel.hpp"
#include "sim/search.hpp"
#include "sim/serve.hpp"
#include "model/inference.hpp"

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

namespace {

// Issue "Cost models": kernel model + memory + schedule of the gpt3-175b training step.
void BM_ModelAndSchedule(benchmark::State& state) {
    const roofline::Hardware hw = roofline::builtin_hardware("h100-sxm");
    const roofline::Graph t = roofline::build_training_step(roofline::load_model_arg("gpt3-175b"), {});
    for (auto _ : state) {
        const roofline::Analysis a = roofline::analyze(t, hw);
        benchmark::DoNotOptimize(a.schedule.step_time_s);
    }
    state.counters["nodes"] = static_cast<double>(t.nodes().size());
}

// A synthetic graph of n elementwise kernels, each reading the two before it (a DAG with fan-out).
roofline::Graph synthetic(std::int64_t n) {
    roofline::Graph g;
    const roofline::TensorId x = g.add_input("x", {{1 << 16}, roofline::DType::bf16});
    roofline::TensorId prev = x, prev2 = x;
    for (std::int64_t i = 0; i < n; ++i) {
        const roofline::NodeId id = g.add_node("k" + std::to_string(i), roofline::OpKind::add, {prev, prev2}, {}, {});
        prev2 = prev;
        prev = g.node(id).outputs[0];
    }
    return g;
}

void BM_SyntheticKernels(benchmark::State& state) {
    const roofline::Hardware hw = roofline::builtin_hardware("h100-sxm");
    const roofline::Graph g = synthetic(state.range(0));
    for (auto _ : state) {
        const roofline::Analysis a = roofline::analyze(g, hw);
        benchmark::DoNotOptimize(a.schedule.step_time_s);
    }
    struct rusage u {};
    getrusage(RUSAGE_SELF, &u);
    state.counters["max_rss_MiB"] = static_cast<double>(u.ru_maxrss) / 1024.0;
    state.SetComplexityN(state.range(0));
}

}  // namespace

BENCHMARK(BM_ModelAndSchedule)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SyntheticKernels)->RangeMultiplier(10)->Range(10'000, 1'000'000)->Unit(benchmark::kMillisecond)->Complexity(benchmark::oNLogN);

namespace {

// Issue "Planning": every strategy with fusion off and on, the per-layer mixes and the frontier
// of the gpt3-175b training step (target < 1 s), and the min cut of its 10,207-op graph (< 1 s).
void BM_PlanGpt3(benchmark::State& state) {
    const roofline::Hardware hw = roofline::builtin_hardware("h100-sxm");
    const roofline::Graph t = roofline::build_training_step(roofline::load_model_arg("gpt3-175b"), {});
    std::size_t options = 0;
    for (auto _ : state) {
        const roofline::Plan p = roofline::make_plan(t, hw);
        options = p.options.size();
        benchmark::DoNotOptimize(p.frontier.size());
    }
    state.counters["nodes"] = static_cast<double>(t.nodes().size());
    state.counters["options"] = static_cast<double>(options);
}

void BM_MinCut(benchmark::State& state) {
    const roofline::Graph t = roofline::build_training_step(roofline::load_model_arg("gpt3-175b"), {});
    for (auto _ : state) {
        const roofline::RecomputePlan p = roofline::plan_mincut(t);
        benchmark::DoNotOptimize(p.recompute.size());
    }
    state.counters["nodes"] = static_cast<double>(t.nodes().size());
}

}  // namespace

BENCHMARK(BM_PlanGpt3)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MinCut)->Unit(benchmark::kMillisecond);

// Issue #16: one collective's cost (every algorithm and protocol NCCL could use, the fastest kept).
static void BM_CollectiveCost(benchmark::State& state) {
    const roofline::Cluster c = roofline::builtin_cluster("dgx-a100");
    double bytes = 1e3;
    for (auto _ : state) {
        bytes = bytes > 1e9 ? 1e3 : bytes * 1.7;
        benchmark::DoNotOptimize(roofline::collective_cost(c, roofline::Collective::all_reduce, bytes, {1024, 0}));
    }
}

// Issue #16: one parallel configuration of gpt3-175b on 1,024 A100 (tp 8, pp 16, dp 8, global batch
// 1536): build and analyse the 16 stages' training steps, then the 1F1B pipeline with its
// collectives. Target for `search`: < 30 ms a configuration.
static void BM_ParallelConfigGpt3(benchmark::State& state) {
    const roofline::Cluster c = roofline::builtin_cluster("dgx-a100");
    roofline::ParallelOptions o;
    o.dp = 8;
    o.global_batch = 1536;
    for (auto _ : state) {
        std::vector<roofline::StageProfile> profiles;
        for (int s = 0; s < 16; ++s) {
            roofline::ModelOverrides ov;
            ov.batch = 1;
            ov.tp = 8;
            ov.pp = 16;
            ov.stage = s;
            const roofline::Graph g = roofline::build_training_step(roofline::load_model_arg("gpt3-175b", ov), {});
            profiles.push_back(roofline::stage_profile(g, roofline::analyze(g, c.hardware)));
        }
        std::vector<const roofline::StageProfile*> stages;
        for (const auto& p : profiles) stages.push_back(&p);
        benchmark::DoNotOptimize(roofline::analyze_pipeline(stages, c, o));
    }
}

// Issue #16: the same configuration as `search` evaluates it: stages 0, 1 and 15 built and analysed
// (stage 1 stands for the middle stages), then the pipeline. Target: < 30 ms a configuration.
static void BM_SearchConfigGpt3(benchmark::State& state) {
    const roofline::Cluster c = roofline::builtin_cluster("dgx-a100");
    const auto build = roofline::template_stage_builder("gpt3-175b", {}, {}, c.hardware, {});
    for (auto _ : state) {
        roofline::StageRequest r{8, 16, 0, 1, "none"};
        std::vector<roofline::StageProfile> built;
        for (const int st : {0, 1, 15}) {
            r.stage = st;
            built.push_back(build(r));
        }
        std::vector<const roofline::StageProfile*> stages;
        for (int st = 0; st < 16; ++st) stages.push_back(&built[st == 0 ? 0 : st == 15 ? 2 : 1]);
        roofline::ParallelOptions o;
        o.dp = 8;
        o.global_batch = 1536;
        benchmark::DoNotOptimize(roofline::analyze_pipeline(stages, c, o));
    }
}

// Issue #16: the full search of gpt3-175b on 1,024 A100 of dgx-a100 (global batch 1536; tp, pp,
// micro-batch 1-8, none/selective/full recompute, ZeRO 0-3) on 2 threads. Target: < 1 s.
static void BM_SearchGpt3(benchmark::State& state) {
    const roofline::Cluster c = roofline::builtin_cluster("dgx-a100");
    roofline::SearchSpace s;
    s.gpus = 1024;
    s.global_batch = 1536;
    s.jobs = 2;
    roofline::TrainingOptions t;
    t.master_weights = true;
    const auto build = roofline::template_stage_builder("gpt3-175b", {}, t, c.hardware, {});
    for (auto _ : state) benchmark::DoNotOptimize(roofline::search_parallel(c, s, build));
}

BENCHMARK(BM_CollectiveCost)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SearchConfigGpt3)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SearchGpt3)->Unit(benchmark::kSecond)->Iterations(1);
BENCHMARK(BM_ParallelConfigGpt3)->Unit(benchmark::kMillisecond);

// roofline serve (issue #17): the memoised iteration costs of llama-2-7b on an A100 80GB (the
// grid of prefill and decode analyses), and 10^5 requests simulated from them (Poisson at 20/s,
// prompts uniform 128..1024, outputs exponential with mean 256: the saturated regime, ~10^5
// iterations of ~200 sequences).
roofline::ServeOptions serve_options(std::int64_t requests) {
    roofline::ServeOptions o;
    o.rate = 20;
    o.prompt = roofline::LengthDist::parse("uniform:128:1024", "--prompt-len");
    o.output = roofline::LengthDist::parse("exp:256", "--output-len");
    o.requests = requests;
    return o;
}

void BM_ServeCosts(benchmark::State& state) {
    const roofline::Hardware hw = roofline::builtin_hardware("a100-sxm-80gb");
    const roofline::DecoderArch arch = roofline::decoder_arch_of("llama-2-7b");
    for (auto _ : state) benchmark::DoNotOptimize(roofline::build_serve_costs(arch, hw, serve_options(1)).analyses);
}

void BM_ServeSimulate(benchmark::State& state) {
    const roofline::ServeOptions o = serve_options(state.range(0));
    const roofline::ServeCosts c =
        roofline::build_serve_costs(roofline::decoder_arch_of("llama-2-7b"), roofline::builtin_hardware("a100-sxm-80gb"), o);
    std::int64_t iterations = 0;
    for (auto _ : state) iterations = roofline::simulate_serving(c, o).iterations;
    state.counters["iterations"] = static_cast<double>(iterations);
}

BENCHMARK(BM_ServeCosts)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ServeSimulate)->Arg(100000)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
