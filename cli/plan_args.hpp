#pragma once
// --fuse and --recompute S, shared by `plan` (restrict the options) and `analyze` (analyze one
// chosen plan), and the size parser behind --memory-budget.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/plan.hpp"

namespace roofline::cli {

struct PlanArgs {
    bool fuse = false;
    std::string recompute;                // empty: none
    std::vector<std::string> fuse_kinds;  // --fuse-kinds: only these group kinds (empty: all)
    // Flash attention whether fused or not (FusionOptions::flash_always): context parallelism's
    // ring and all-gather forms (sim/parallel.hpp cp_runs_flash), set by the command.
    bool flash_always = false;

    void add_to(CLI::App* cmd, bool for_plan);
    bool any() const { return fuse || !fuse_kinds.empty() || flash_always || (!recompute.empty() && recompute != "none"); }
    bool fusing() const { return fuse || !fuse_kinds.empty(); }
    FusionOptions fusion_options() const;
    // The graph transformed as asked, its fusion plan and analysis.
    Evaluated evaluate(const Graph& g, const Hardware& hw, const AnalysisOptions& aopt) const;
};

// "40GiB", "80GB", "4e10" -> bytes; InputError naming the flag otherwise.
std::int64_t parse_bytes(const std::string& text, const std::string& flag);

}  // namespace roofline::cli
