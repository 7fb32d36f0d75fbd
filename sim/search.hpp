#pragma once
// `roofline search` (issue #16): every parallel configuration of a training job on N GPUs of a
// cluster — tensor-parallel degree, pipeline stages (plain or interleaved 1F1B), data-parallel
// ranks, micro-batch, activation recomputation, ZeRO stage — built and analysed with the same op, kernel, memory and collective
// models as `analyze --cluster`, ranked by iteration time among those that fit the memory budget,
// with the Pareto frontier of (peak memory per rank, iteration time).
//
// Cost: a configuration is the composition of its stages' profiles (analyze_pipeline /
// analyze_parallel, microseconds); a stage's profile depends only on (tp, cp, ep, pp, stage,
// micro-batch, recompute, sp), so each is built once and shared by every dp, ZeRO stage and
// interleaving that uses it, and the middle stages of a pipeline, identical but for their layers'
// names, share stage 1's. A stage of many layers is composed from probes of one and two layers
// (sim/parallel.hpp compose_layers; exact for the templates' identical layers), so its cost does not
// grow with the layers. Stages are built on `jobs` threads, each with its own kernel-cost cache.
// Sequence parallelism is searched with tp > 1, context and expert parallelism over the degrees
// asked for (default 1).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "model/autodiff.hpp"
#include "model/model_json.hpp"
#include "sim/cluster.hpp"
#include "sim/parallel.hpp"
#include "sim/plan.hpp"

namespace roofline {

struct SearchSpace {
    int gpus = 0;                        // devices the job uses (tp x pp x dp)
    std::int64_t global_batch = 0;       // samples per iteration over the data-parallel ranks
    std::vector<int> micro_batches;      // candidate micro-batch sizes (default 1, 2, 4, 8)
    std::vector<std::string> recompute;  // candidate strategies (default none, selective, full)
    std::vector<int> zero;               // candidate ZeRO stages (default 0, 1, 2, 3)
    std::vector<int> interleave;         // candidate virtual stages per device (default 1, 2)
    // Sequence parallelism with tp > 1: candidates false/true (default: on, as Megatron-LM runs
    // tensor parallelism for large models); with tp = 1 it is off.
    std::vector<bool> sequence_parallel;
    std::vector<int> context_parallel;  // candidate context-parallel degrees (default 1: not split)
    // How context-parallel ranks exchange keys and values (ParallelOptions::cp_comm): the candidate
    // forms of a configuration with cp > 1 (default: ring, allgather and ulysses; each cp > 1
    // configuration analysed once a form, from the same built stages, a stage profile holding all
    // three forms' memory).
    std::vector<CpComm> cp_comm;
    std::vector<int> expert_parallel;  // candidate expert-parallel degrees (default 1; each divides dp and the experts)
    // Candidate tensor- and pipeline-parallel degrees (default: every divisor of the GPUs, tensor
    // parallelism up to a node): a user who has fixed them ranks the rest (micro-batch, recompute,
    // ZeRO, interleave) for that layout.
    std::vector<int> tensor_parallel, pipeline_parallel;
    std::int64_t memory_budget_bytes = 0;  // per rank; 0: the chip's memory
    double bucket_bytes = 25.0 * 1024 * 1024;
    int jobs = 1;  // threads building and analysing stages
};

// One stage to build: the rank's share of the model for (tp, pp, stage) at this micro-batch, as a
// training step transformed by the recompute strategy, analysed on the cluster's chip.
struct StageRequest {
    int tp = 1, pp = 1, stage = 0;
    int micro_batch = 1;
    std::string recompute = "none";
    bool sp = false;
    int cp = 1;
    int ep = 1;
    // Attention as flash attention (FusionOptions::flash_always, nothing else fused): the stage of
    // a ring or all-gather context-parallel form (sim/parallel.hpp cp_runs_flash); Ulysses and
    // cp 1 run it unfused, as a stage's other ops.
    bool flash = false;
};
// Builds and analyses a stage; InputError when the model cannot be split so (e.g. tp does not
// divide the heads): every configuration that needs it is then invalid.
using StageBuilder = std::function<StageProfile(const StageRequest&)>;

// A built-in template (or any model `load_model_arg` splits) as a training step with `training`.
StageBuilder template_stage_builder(const std::string& model, const ModelOverrides& base, const TrainingOptions& training,
                                    const Hardware& hw, const AnalysisOptions& aopt);

struct SearchCandidate {
    int tp = 1, pp = 1, dp = 1, micro_batch = 1, zero = 0, interleave = 1;
    int cp = 1, ep = 1;
    CpComm cp_comm = CpComm::ring;  // with cp > 1: how its ranks exchange keys and values
    bool sp = false;
    std::string recompute = "none";
    int micro_batches = 1;  // per rank and iteration: global batch / (micro-batch x dp)
    double step_time_s = 0, compute_s = 0, exposed_comm_s = 0, bubble_fraction = 0, mfu = 0, tokens_per_s = 0;
    std::int64_t peak_bytes = 0;  // per rank, the worst stage
    bool fits = false;
};

struct SearchResult {
    std::vector<SearchCandidate> candidates;  // every analysed configuration: fitting first, then by step time
    std::vector<std::size_t> frontier;        // indices into candidates: the (peak, step time) Pareto frontier
    std::int64_t budget_bytes = 0;
    std::size_t enumerated = 0;       // (tp, pp, dp, micro-batch, recompute, ZeRO, interleave[, cp form]) tuples tried
    std::size_t invalid = 0;          // of those, not a valid split (divisibility, batch, the model's shape)
    std::size_t stages_analysed = 0;  // distinct stage analyses built
    // Tuples not built: at a smaller micro-batch of the same (tp, pp, recompute, sp) no variant fit,
    // and a rank's peak memory only grows with the micro-batch.
    std::size_t pruned = 0;
    std::vector<std::string> invalid_reasons;  // one example per kind of rejection
};

// InputError for an empty or impossible space (gpus < 1 or beyond the cluster, no global batch).
SearchResult search_parallel(const Cluster& cluster, const SearchSpace& space, const StageBuilder& build);

}  // namespace roofline
