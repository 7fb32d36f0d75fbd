#pragma once
// Runs the L0 roofline over every node of a graph and aggregates the result.
#include <map>
#include <string>
#include <vector>

#include "model/graph.hpp"
#include "sim/gpu_model.hpp"
#include "sim/memory.hpp"
#include "sim/roofline.hpp"
#include "sim/schedule.hpp"
#include "sim/tpu_model.hpp"

namespace roofline {

struct OpAnalysis {
    NodeId node = kNoNode;
    OpRoofline roofline;
    std::optional<Kernel> kernel;        // GPU kernel model (L1); absent for views and on TPUs
    std::optional<KernelCost> modelled;
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

struct AnalysisOptions {
    MemoryOptions memory;
    ScheduleOptions schedule;
    GpuModelOptions gpu;
    TpuModelOptions tpu;
};

Analysis analyze(const Graph& g, const Hardware& hw, const AnalysisOptions& opt = {});

}  // namespace roofline
