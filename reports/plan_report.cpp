#include "reports/plan_report.hpp"

#include <cstdio>
#include <fmt/format.h>

#include "reports/report.hpp"
#include "reports/units.hpp"

namespace roofline {

using ojson = nlohmann::ordered_json;

namespace {

std::string tflop(double flops) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g TFLOP", flops / 1e12);
    return buf;
}

// One line saying what an option changes against the baseline.
std::string describe(const PlanOption& o, const PlanOption& base) {
    std::string s;
    if (o.recomputed_ops > 0) {
        s += "recomputes " + std::to_string(o.recomputed_ops) + " ops in backward (+" + tflop(static_cast<double>(o.extra_flops)) + ")";
    }
    if (o.fuse) {
        if (!s.empty()) s += "; ";
        s += std::to_string(o.fused_groups) + " fusion groups: " + std::to_string(o.kernels) + " kernels instead of " +
             std::to_string(base.kernels + o.recomputed_ops);
    }
    if (s.empty()) s = "nothing: the graph as built";
    return s;
}

ojson option_json(const PlanOption& o, const PlanOption& base, std::size_t rank) {
    ojson j;
    j["rank"] = rank;
    j["name"] = o.name;
    j["fuse"] = o.fuse;
    j["recompute"] = o.recompute;
    if (!o.layers.empty()) {
        std::string c;
        for (LayerChoice x : o.layers) c += x == LayerChoice::full ? 'F' : x == LayerChoice::selective ? 'S' : '-';
        j["layers"] = c;
    }
    j["step_time_s"] = o.step_time_s;
    j["peak_bytes"] = o.peak_bytes;
    j["flops"] = o.flops;
    j["extra_flops"] = o.extra_flops;
    j["time_overhead_s"] = o.time_overhead_s;
    j["memory_saved_bytes"] = o.memory_saved_bytes;
    j["saved_activation_bytes"] = o.saved_activation_bytes;
    j["recomputed_ops"] = o.recomputed_ops;
    j["kernels"] = o.kernels;
    j["fusion_groups"] = o.fused_groups;
    j["fits"] = o.fits;
    j["pareto"] = o.pareto;
    j["changes"] = describe(o, base);
    return j;
}

}  // namespace

ojson plan_json(const PlanReportContext& ctx) {
    const Plan& p = ctx.plan;
    ojson j;
    j["schema"] = "roofline-plan/1";
    j["tool"] = {{"name", "roofline"}, {"version", ROOFLINE_VERSION}};
    j["model"] = model_summary_json(ctx.graph);
    j["hardware"] = hardware_json(ctx.hw);
    ojson settings;
    settings["mode"] = ctx.mode;
    if (!ctx.optimizer.empty()) settings["optimizer"] = ctx.optimizer;
    settings["memory_budget_bytes"] = p.budget_bytes;
    settings["device_capacity_bytes"] = p.capacity_bytes;
    if (!ctx.parallel.empty()) settings["parallel"] = ctx.parallel;
    j["settings"] = settings;
    j["baseline"] = {{"step_time_s", p.baseline.step_time_s},
                     {"peak_bytes", p.baseline.peak_bytes},
                     {"flops", p.baseline.flops},
                     {"kernels", p.baseline.kernels},
                     {"saved_activation_bytes", p.baseline.saved_activation_bytes},
                     {"fits", p.baseline.peak_bytes <= p.budget_bytes}};
    ojson options = ojson::array();
    for (std::size_t i = 0; i < p.options.size(); ++i) options.push_back(option_json(p.options[i], p.baseline, i + 1));
    j["options"] = options;
    ojson frontier = ojson::array();
    for (std::size_t i : p.frontier) {
        frontier.push_back(
            {{"peak_bytes", p.options[i].peak_bytes}, {"step_time_s", p.options[i].step_time_s}, {"option", p.options[i].name}});
    }
    j["frontier"] = frontier;
    ojson fusion;
    ojson groups = ojson::array();
    std::int64_t bytes = 0, launches = 0, inter = 0;
    double saved = 0;
    for (const GroupSaving& s : p.groups) {
        const FusionGroup& grp = s.group;
        ojson gj;
        gj["name"] = grp.name;
        gj["kind"] = fusion_kind_name(grp.kind);
        ojson nodes = ojson::array();
        for (NodeId n : grp.nodes) nodes.push_back(ctx.graph.node(n).name);
        gj["nodes"] = nodes;
        gj["hbm_bytes_saved"] = grp.hbm_bytes_saved();
        gj["launches_saved"] = grp.launches_saved;
        gj["intermediate_bytes_saved"] = grp.intermediate_bytes;
        gj["unfused_time_s"] = s.unfused_time_s;
        gj["fused_time_s"] = s.fused_time_s;
        gj["time_saved_s"] = s.time_saved_s();
        groups.push_back(gj);
        bytes += grp.hbm_bytes_saved();
        launches += grp.launches_saved;
        inter += grp.intermediate_bytes;
        saved += s.time_saved_s();
    }
    if (p.stages > 1) fusion["graph"] = "first stage";  // plan --pp: the groups of the first stage's graph
    fusion["groups"] = groups;
    fusion["hbm_bytes_saved"] = bytes;
    fusion["launches_saved"] = launches;
    fusion["intermediate_bytes_saved"] = inter;
    fusion["time_saved_s"] = saved;
    j["fusion"] = fusion;
    if (ctx.sweep != nullptr) {
        ojson sweep = ojson::array();
        for (const SweepSeries& s : *ctx.sweep) {
            ojson rows = ojson::array();
            for (const SweepRow& r : s.rows) {
                rows.push_back({{"batch", r.batch},
                                {"step_time_s", r.step_time_s},
                                {"peak_bytes", r.peak_bytes},
                                {"fits", r.fits},
                                {"samples_per_s", r.samples_per_s},
                                {"tokens_per_s", r.tokens_per_s}});
            }
            sweep.push_back({{"strategy", s.strategy}, {"max_batch", s.max_batch}, {"rows", rows}});
        }
        j["batch_sweep"] = sweep;
    }
    return j;
}

std::string plan_json_text(const PlanReportContext& ctx) { return plan_json(ctx).dump(2) + "\n"; }

std::string render_plan_table(const PlanReportContext& ctx, std::size_t top) {
    const Plan& p = ctx.plan;
    std::string out;
    out += fmt::format("{} on {} ({}): baseline step {}, peak memory {}; budget {} (device {})\n", ctx.graph.name, ctx.hw.display_name,
                       ctx.mode, human_time(p.baseline.step_time_s), human_bytes(static_cast<double>(p.baseline.peak_bytes)),
                       human_bytes(static_cast<double>(p.budget_bytes)), human_bytes(static_cast<double>(p.capacity_bytes)));
    if (!ctx.parallel.empty()) out += "steps are iterations on " + ctx.parallel + ", peak memory per rank\n";
    out += fmt::format("{:>4}  {:<44} {:>10} {:>9} {:>11} {:>11} {:>4} {:>6}  {}\n", "rank", "option", "step", "vs base", "peak mem",
                       "extra FLOP", "fits", "pareto", "what it changes");
    const std::size_t n = top == 0 ? p.options.size() : std::min(top, p.options.size());
    for (std::size_t i = 0; i < n; ++i) {
        const PlanOption& o = p.options[i];
        const double rel = p.baseline.step_time_s > 0 ? 100.0 * o.time_overhead_s / p.baseline.step_time_s : 0.0;
        std::string name = o.name.size() > 44 ? o.name.substr(0, 41) + "..." : o.name;
        out += fmt::format("{:>4}  {:<44} {:>10} {:>+8.1f}% {:>11} {:>11} {:>4} {:>6}  {}\n", i + 1, name, human_time(o.step_time_s), rel,
                           human_bytes(static_cast<double>(o.peak_bytes)), human_si(static_cast<double>(o.extra_flops), "FLOP"),
                           o.fits ? "yes" : "no", o.pareto ? "*" : "", describe(o, p.baseline));
    }
    if (n < p.options.size()) out += fmt::format("      ... {} more options in the JSON report\n", p.options.size() - n);
    if (!p.groups.empty()) {
        std::int64_t bytes = 0, launches = 0;
        double saved = 0;
        for (const GroupSaving& s : p.groups) {
            bytes += s.group.hbm_bytes_saved();
            launches += s.group.launches_saved;
            saved += s.time_saved_s();
        }
        out += fmt::format("fusion{}: {} groups save {} of device-memory traffic, {} launches and {} of kernel time\n",
                           p.stages > 1 ? " (the first stage's graph)" : "", p.groups.size(), human_bytes(static_cast<double>(bytes)),
                           launches, human_time(saved));
    }
    if (ctx.sweep != nullptr) {
        out += "batch sweep (largest batch that fits the budget):\n";
        for (const SweepSeries& s : *ctx.sweep) {
            double best = 0;
            for (const SweepRow& r : s.rows) {
                if (r.fits && r.batch == s.max_batch) best = r.tokens_per_s > 0 ? r.tokens_per_s : r.samples_per_s;
            }
            out +=
                fmt::format("  {:<22} max batch {:>6}   {}\n", s.strategy, s.max_batch,
                            s.max_batch > 0 ? human_si(best, s.rows.front().tokens_per_s > 0 ? "tokens/s" : "samples/s") : "does not fit");
        }
    }
    return out;
}

}  // namespace roofline
