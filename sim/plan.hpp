#pragma once
// Planning: what kernel fusion and activation recomputation would pay, and which option fits a
// memory budget fastest. Every option is a real transformed graph (sim/recompute.hpp,
// sim/fusion.hpp) run through the same analysis as `roofline analyze`: step time from the
// schedule of the kernel model, peak memory from the liveness model.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/graph.hpp"
#include "sim/analysis.hpp"
#include "sim/fusion.hpp"
#include "sim/recompute.hpp"

namespace roofline {

struct PlanOption {
    std::string name;  // "fuse + selective", "full on 24/96 layers", ...
    bool fuse = false;
    std::string recompute = "none";   // a strategy name, or "layers" for a per-layer mix
    std::vector<LayerChoice> layers;  // the per-layer choice of a mix (empty otherwise)
    double step_time_s = 0;
    std::int64_t peak_bytes = 0;
    std::int64_t flops = 0;
    std::int64_t extra_flops = 0;         // recomputed FLOPs
    double time_overhead_s = 0;           // step time minus the baseline's (negative: faster)
    std::int64_t memory_saved_bytes = 0;  // baseline peak minus this peak
    std::int64_t saved_activation_bytes = 0;
    std::int64_t recomputed_ops = 0;
    std::int64_t kernels = 0;       // kernel launches of the step
    std::int64_t fused_groups = 0;  // with --pp: summed over the stages, as kernels
    bool fits = true;               // peak <= budget (or device capacity)
    bool pareto = false;            // on the (peak memory, step time) frontier
};

struct GroupSaving {
    FusionGroup group;
    double unfused_time_s = 0;  // the members' modelled kernels, one after another
    double fused_time_s = 0;
    double time_saved_s() const { return unfused_time_s - fused_time_s; }
};

struct Evaluated;

struct PlanOptions {
    std::optional<std::int64_t> memory_budget_bytes;  // default: the device's memory
    // Which options to evaluate: recomputation strategies (training steps only) with fusion off,
    // on, or both.
    std::vector<RecomputeStrategy> strategies{std::begin(kAllStrategies), std::end(kAllStrategies)};
    bool unfused = true;
    bool fused = true;
    // Budget search over per-layer choices (keep / selective / full): every combination when there
    // are at most exhaustive_limit of them, otherwise mixes with the first k layers recomputed.
    bool search_layers = true;
    std::int64_t exhaustive_limit = 729;
    int mix_steps = 4;
    // Options are evaluated on this many threads (0: the hardware's); the result does not depend on it.
    unsigned threads = 0;
    AnalysisOptions analysis;
    FusionOptions fusion;
    // When set (plan --cluster): an option's step time and peak memory are what this returns for
    // its graph and analysis (the iteration of the job on the cluster, the peak per rank), not the
    // single device's. Called from the option threads: it must be safe to call concurrently.
    std::function<std::pair<double, std::int64_t>(const Graph&, const Analysis&)> iteration;
    // plan --pp: the pipeline's other distinct stage graphs (make_plan's graph is the first stage),
    // e.g. stage 1 standing for every middle stage, then the last. Every option is applied to each
    // stage (a per-layer mix as Megatron-LM's block recomputation: the same choice for the i-th
    // layer of every stage, the first k layers recomputed), and `pipeline` gives the option's
    // iteration and peak per rank from the stages' evaluations (first stage first). FLOPs, kernels
    // and saved activations are then summed over the stages, each weighted by stage_weights (how
    // many stages it stands for; default 1). Called from the option threads.
    std::vector<const Graph*> other_stages;
    std::vector<int> stage_weights;
    std::function<std::pair<double, std::int64_t>(const std::vector<const Evaluated*>&)> pipeline;
};

struct Plan {
    PlanOption baseline;                // no fusion, no recomputation
    std::vector<PlanOption> options;    // ranked: fitting first, then by step time
    std::vector<std::size_t> frontier;  // indices into options, by increasing peak memory
    std::int64_t budget_bytes = 0;
    std::int64_t capacity_bytes = 0;
    bool training = false;
    std::vector<GroupSaving> groups;  // the fusion groups of the plain graph (with --pp: the first stage's) and what each saves
    int stages = 1;                   // pipeline stages the options were applied to (plan --pp)
};

Plan make_plan(const Graph& g, const Hardware& hw, const PlanOptions& opt = {});

// One option evaluated (also what `analyze --fuse --recompute` runs): the transformed graph, its
// fusion plan (when fused) and its analysis.
struct Evaluated {
    std::unique_ptr<Graph> owned;  // the transformed graph (null when the original is analysed as is)
    const Graph* graph = nullptr;  // what was analysed: owned or the original
    std::optional<FusionPlan> fusion;
    Analysis analysis;
    RecomputeResult recompute;  // graph moved out; clones and extra FLOPs kept
};
// The two halves of evaluate_option: the transformed graph (the original when recompute is
// empty), then its fusion plan and analysis (fuse false: none, or the flash attention kernels
// alone with fopt.flash_always).
Evaluated transform_option(const Graph& g, const std::optional<RecomputePlan>& recompute);
void analyse_option(Evaluated& e, const Hardware& hw, bool fuse, const AnalysisOptions& aopt, const FusionOptions& fopt = {});
Evaluated evaluate_option(const Graph& g, const Hardware& hw, const std::optional<RecomputePlan>& recompute, bool fuse,
                          const AnalysisOptions& aopt, const FusionOptions& fopt = {});

// Pareto frontier of (peak, time) points: indices of the points no other point dominates (no
// more memory and no more time, one of them less), by increasing peak; ties keep the first.
std::vector<std::size_t> pareto_frontier(const std::vector<std::pair<std::int64_t, double>>& points);

// Batch sweep: per strategy, step time, peak memory and throughput as the batch doubles, and the
// largest batch that fits (doubling, then bisection).
struct SweepRow {
    std::int64_t batch = 0;
    double step_time_s = 0;
    std::int64_t peak_bytes = 0;
    bool fits = false;
    double samples_per_s = 0;
    double tokens_per_s = 0;  // samples x seq when the model has a seq dimension
};
struct SweepSeries {
    std::string strategy;
    std::int64_t max_batch = 0;  // 0: not even batch 1 fits
    std::vector<SweepRow> rows;
};
std::vector<SweepSeries> batch_sweep(const std::function<Graph(std::int64_t)>& build, const Hardware& hw, const PlanOptions& opt,
                                     std::int64_t max_batch = 1 << 16);

}  // namespace roofline
