#pragma once
// --fuse and --recompute S, shared by `plan` (restrict the options) and `analyze` (analyze one
// chosen plan), and the size parser behind --memory-budget.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "sim/plan.hpp"

namespace roofline::cli {

struct PlanArgs {
    bool fuse = false;
    std::string recompute;  // empty: none

    void add_to(CLI::App* cmd, bool for_plan);
    bool any() const { return fuse || (!recompute.empty() && recompute != "none"); }
    // The graph transformed as asked, its fusion plan and analysis.
    Evaluated evaluate(const Graph& g, const Hardware& hw, const AnalysisOptions& aopt) const;
};

// "40GiB", "80GB", "4e10" -> bytes; InputError naming the flag otherwise.
std::int64_t parse_bytes(const std::string& text, const std::string& flag);

}  // namespace roofline::cli
