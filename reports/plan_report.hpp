#pragma once
// The plan report: JSON ("schema": "roofline-plan/1", docs/report-schema.md) and the terminal
// table of ranked options. Same input, same bytes out.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/graph.hpp"
#include "sim/hardware.hpp"
#include "sim/plan.hpp"

namespace roofline {

struct PlanReportContext {
    const Graph& graph;  // the graph planned (training step or inference)
    const Hardware& hw;
    const Plan& plan;
    const std::vector<SweepSeries>* sweep = nullptr;
    std::string mode = "inference";
    std::string optimizer;  // training only
    std::string parallel;   // plan --cluster: the job ("dgx-a100: tp 4 x dp 8, ZeRO 1"); steps are its iterations
};

nlohmann::ordered_json plan_json(const PlanReportContext& ctx);
std::string plan_json_text(const PlanReportContext& ctx);
std::string render_plan_table(const PlanReportContext& ctx, std::size_t top = 0);

}  // namespace roofline
