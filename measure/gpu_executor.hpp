#pragma once
// The CUDA executor: runs a graph (inference or training step) on the real kernels of ops/cuda/,
// times every kernel with the CUPTI Activity API, optionally reads hardware counters per kernel
// with the Range Profiler, and checks every node's outputs against the CPU reference kernels.
//
// Memory: one device arena planned by model/arena_plan.hpp. By default every tensor gets its own
// slot (no reuse across the step), so the values of every tensor stay inspectable after a run;
// with reuse_memory a slot is reused once its tensor's last reader has run, and the arena's size
// is the peak of that allocator (what recomputation saves shows there). Reshape outputs alias
// their input (a view, as the cost model treats it). Sources (inputs, parameters, optimizer state) are filled with the
// CPU executor's deterministic values (model/executor.hpp), never zeros.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "model/graph.hpp"

namespace roofline {

struct MeasureOptions {
    int warmup = 3;        // untimed runs of the whole graph first (module load, cuBLASLt heuristics)
    int repetitions = 20;  // timed runs; per-kernel times are the median over them
    bool flash_attention = false;
    bool reuse_memory = false;       // arena slots reused after a tensor's last reader (needs check off)
    std::string recompute = "none";  // the recomputation strategy the graph was built with (a record)
    bool counters = true;            // Range Profiler counters (a separate, replayed run)
    bool check = true;               // compare each node with the CPU reference
    double check_max_flops = 2e9;    // nodes with more work are not checked (the reference is a naive CPU loop)
    std::uint64_t seed = 1;
    int device = 0;
};

struct KernelMeasurement {
    std::string name;
    std::int64_t grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
    int registers = 0;
    std::int64_t shared_bytes = 0;  // static + dynamic
    double median_s = 0, p10_s = 0, p90_s = 0;
    std::map<std::string, double> counters;  // raw metric values (empty without counters)
};

struct NodeCheck {
    std::string status;  // "ok", "fail", "skipped"
    double error = 0;    // relative error norm of the worst output
    double tolerance = 0;
    std::string reason;  // for skipped
};

struct NodeMeasurement {
    NodeId node = kNoNode;
    std::string name, op, phase, dtype;
    double median_s = 0, p10_s = 0, p90_s = 0;  // sum of the node's kernels per repetition
    std::vector<KernelMeasurement> kernels;
    std::vector<std::string> notes;  // launch choices (cuBLASLt algorithm ...)
    NodeCheck check;
};

struct Measurement {
    std::map<std::string, std::string> device;  // name, compute capability, driver, clocks, ...
    std::string date_utc;
    MeasureOptions options;
    std::string counters_problem;  // why counters were not collected (empty when they were)
    std::vector<std::string> metrics;
    double step_median_s = 0, step_p10_s = 0, step_p90_s = 0;  // whole graph, device events, no tracer
    double step_traced_median_s = 0;                           // the same under the Activity tracer (host time per launch added)
    double kernel_sum_s = 0;                                   // sum of node medians
    std::int64_t arena_bytes = 0, scratch_peak_bytes = 0;
    std::int64_t live_peak_bytes = 0;  // the largest sum of tensors alive at once (the arena without fragmentation)
    std::vector<NodeMeasurement> nodes;
    int failed_checks = 0;
};

// Throws CudaError (device problems), InputError (an op without a kernel, naming the node).
Measurement measure_graph(const Graph& g, const MeasureOptions& opt);

// The "roofline-measurement/1" document; mode is "inference" or "training".
nlohmann::json measurement_to_json(const Graph& g, const Measurement& m, const std::string& mode);

}  // namespace roofline
