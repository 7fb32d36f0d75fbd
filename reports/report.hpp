#pragma once
// The analyze report: JSON ("schema": "roofline-report/1", documented in docs/report-schema.md)
// and the terminal table. Same input, same bytes out: no timestamps, fixed key order.
#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "model/autodiff.hpp"
#include "model/graph.hpp"
#include "sim/analysis.hpp"
#include "sim/fusion.hpp"
#include "sim/hardware.hpp"

namespace roofline {

struct EagerHost;
struct ParallelAnalysis;

struct ReportContext {
    const Graph& graph;
    const Hardware& hw;
    const Analysis& analysis;
    std::string mode = "inference";
    const TrainingOptions* training = nullptr;   // set in training mode
    const FusionPlan* fusion = nullptr;          // the graph runs fused (analyze --fuse)
    std::string recompute = "none";              // the recomputation strategy applied (analyze --recompute)
    std::string runtime = "native";              // how the graph runs (analyze --runtime)
    const EagerHost* host = nullptr;             // the eager runtime's measured host (analyze --host)
    const ParallelAnalysis* parallel = nullptr;  // data parallel on a cluster (analyze --cluster, --dp)
};

// "compute (matrix bf16)", "compute (transcendental)", "memory (hbm)", "none".
std::string bound_label(const Bound& b);
// Time by bound, keyed and ordered by bound_label.
std::map<std::string, BoundShare> shares_by_label(const std::map<Bound, BoundShare>& by_bound);

nlohmann::ordered_json report_json(const ReportContext& ctx);
// The report's `model` object: name, origin, dims, compute dtype, graph size, parameters.
nlohmann::ordered_json model_summary_json(const Graph& g);
std::string report_json_text(const ReportContext& ctx);  // 2-space indented, trailing newline

struct TableOptions {
    std::size_t top = 0;  // 0: every op in execution order; N: the N slowest ops
};
std::string render_table(const ReportContext& ctx, const TableOptions& opt);

// Hardware: JSON summary with ridge points, and the text of `roofline hw show`.
nlohmann::ordered_json hardware_json(const Hardware& hw);
std::string render_hardware(const Hardware& hw);
std::string render_hardware_list();

// Writes to a temporary file beside path and renames it over path: never half-written.
void write_file_atomic(const std::string& path, const std::string& content);

}  // namespace roofline
