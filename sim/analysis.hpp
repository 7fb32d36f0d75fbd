#pragma once
// Runs the L0 roofline over every node of a graph and aggregates the result.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model/graph.hpp"
#include "sim/gpu_model.hpp"
#include "sim/memory.hpp"
#include "sim/roofline.hpp"
#include "sim/schedule.hpp"
#include "sim/tpu_model.hpp"

namespace roofline {

struct FusionPlan;  // sim/fusion.hpp

struct OpAnalysis {
    NodeId node = kNoNode;
    OpRoofline roofline;
    std::optional<Kernel> kernel;        // GPU kernel model (L1); absent for views and on TPUs
    std::optional<KernelCost> modelled;
    int fusion_group = -1;  // with a fusion plan: the group it runs in (its anchor carries the group's work and kernel)
};

struct BoundShare {
    double time_s = 0;
    std::int64_t ops = 0;
};

struct PhaseTotals {
    Work work;
    double time_s = 0;
    std::int64_t ops = 0;
};

struct Analysis {
    std::vector<OpAnalysis> ops;  // in execution (topological) order
    Work total;
    double time_s = 0;  // sum of op lower bounds: ops run one after another on one stream
    double modelled_time_s = 0;  // sum of L1 kernel-model times (GPU specs), one stream
    bool has_kernel_model = false;
    std::map<std::string, BoundShare> by_bound;   // Bound::label()
    std::map<std::string, BoundShare> by_family;  // OpFamily name
    PhaseTotals by_phase[3];                      // indexed by Phase: forward, backward, optimizer
    std::int64_t parameter_count = 0;
    std::int64_t parameter_bytes = 0;
    MemoryTimeline memory;  // liveness over the execution order
    Schedule schedule;      // of the modelled kernel times (lower bounds where there is no kernel model)
};

// Node costs by signature (kind, attributes, tensor descriptors; a fused group's by its anchor and
// work), reusable across analyses with the same hardware and options: the planner analyses dozens
// of variants of one graph. Not thread-safe: one per thread.
struct KernelCostCache;
std::shared_ptr<KernelCostCache> make_kernel_cost_cache();

struct AnalysisOptions {
    MemoryOptions memory;
    ScheduleOptions schedule;
    GpuModelOptions gpu;
    TpuModelOptions tpu;
    // Kernel fusion (sim/fusion.hpp): each group runs as one kernel, costed on its anchor node;
    // tensors kept on chip hold no device memory. Null: one kernel per op.
    const FusionPlan* fusion = nullptr;
    KernelCostCache* cost_cache = nullptr;  // null: a cache local to the call
};

Analysis analyze(const Graph& g, const Hardware& hw, const AnalysisOptions& opt = {});

}  // namespace roofline
