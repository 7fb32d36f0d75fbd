// `roofline plan`: ranked fusion and recomputation options, the memory/time Pareto frontier and
// a batch sweep; `analyze --fuse --recompute S` analyses one of them (plan_args below).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/graph_args.hpp"
#include "cli/output_args.hpp"
#include "cli/parallel_args.hpp"
#include "cli/plan_args.hpp"
#include "cli/runtime_args.hpp"
#include "ops/error.hpp"
#include "ops/text.hpp"
#include "reports/output_files.hpp"
#include "reports/plan_report.hpp"
#include "reports/report.hpp"
#include "sim/plan.hpp"

namespace roofline::cli {

std::int64_t parse_bytes(const std::string& text, const std::string& flag) {
    const auto [value, used] = leading_number(text);
    std::string unit = text.substr(used);
    while (!unit.empty() && unit.front() == ' ') unit.erase(unit.begin());
    static const std::pair<const char*, double> units[] = {
        {"", 1},      {"B", 1},        {"KB", 1e3},        {"MB", 1e6},           {"GB", 1e9},
        {"TB", 1e12}, {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}};
    for (const auto& [name, scale] : units) {
        if (used > 0 && unit == name && value > 0 && std::isfinite(value)) return static_cast<std::int64_t>(std::llround(value * scale));
    }
    throw InputError(flag + ": expected a positive size such as 40GiB, 80GB or 4e10 (units B, KB, MB, GB, TB, KiB, MiB, GiB, TiB), got '" +
                     text + "'");
}

void PlanArgs::add_to(CLI::App* cmd, bool for_plan) {
    cmd->add_flag("--fuse", fuse,
                  for_plan ? "only options with kernel fusion" : "fuse kernels (sim/fusion.hpp groups) and analyze the fused graph");
    cmd->add_option("--recompute", recompute,
                    for_plan ? "only this recomputation strategy: none, selective, full, sqrt or mincut"
                             : "training: recompute activations in backward with this strategy: none, selective, full, sqrt or mincut")
        ->check(CLI::IsMember({"none", "selective", "full", "sqrt", "mincut"}));
    if (!for_plan) {
        cmd->add_option("--fuse-kinds", fuse_kinds,
                        "fuse only these kinds of group (implies --fuse): elementwise, gemm (prologues and epilogues), reduction "
                        "(row kernels with their neighbours), flash (attention forward and backward); comma-separated")
            ->delimiter(',')
            ->check(CLI::IsMember({"elementwise", "gemm", "reduction", "flash"}));
    }
}

FusionOptions PlanArgs::fusion_options() const {
    FusionOptions f;
    f.flash_always = flash_always;
    if (fuse_kinds.empty()) return f;
    auto has = [&](const char* k) { return std::find(fuse_kinds.begin(), fuse_kinds.end(), k) != fuse_kinds.end(); };
    f.elementwise = has("elementwise");
    f.gemm_epilogue = f.gemm_prologue = has("gemm");
    f.reductions = has("reduction");
    f.flash_attention = has("flash");
    return f;
}

Evaluated PlanArgs::evaluate(const Graph& g, const Hardware& hw, const AnalysisOptions& aopt) const {
    std::optional<RecomputePlan> rp;
    if (!recompute.empty() && recompute != "none") rp = plan_strategy(g, *parse_strategy(recompute));
    return evaluate_option(g, hw, rp, fusing(), aopt, fusion_options());
}

void add_plan(CLI::App& app) {
    auto* cmd =
        app.add_subcommand("plan", "what fusion and activation recomputation would pay: ranked options, memory/time frontier, batch sweep");
    auto args = std::make_shared<GraphArgs>();
    args->mode = "training";
    auto plan_args = std::make_shared<PlanArgs>();
    auto hw = std::make_shared<std::string>("h100-sxm");
    auto budget = std::make_shared<std::string>();
    auto sweep = std::make_shared<bool>(false);
    auto out = std::make_shared<std::string>();
    auto top = std::make_shared<std::size_t>(20);
    auto quiet = std::make_shared<bool>(false);
    auto streams = std::make_shared<int>(1);
    auto runtime = std::make_shared<RuntimeArgs>();
    auto outputs = std::make_shared<OutputArgs>();
    auto parallel = std::make_shared<ParallelArgs>();
    args->add_to(cmd);
    plan_args->add_to(cmd, true);
    runtime->add_to(cmd, true);
    auto* hw_opt = cmd->add_option("--hw", *hw, "hardware: a built-in name (see `roofline hw list`) or a spec file")->capture_default_str();
    parallel->add_to(cmd, hw_opt);
    cmd->add_option("--memory-budget", *budget, "peak-memory budget, e.g. 40GiB (default: the device's memory)");
    cmd->add_flag("--batch-sweep", *sweep, "per strategy: the largest batch that fits and throughput per batch size");
    cmd->add_option("--streams", *streams, "schedule kernels on this many streams")->check(CLI::Range(1, 1024))->capture_default_str();
    cmd->add_option("-o,--output", *out, "write the JSON plan (schema roofline-plan/1) to this file");
    cmd->add_option("--top", *top, "show the N best options (0: all)")->capture_default_str();
    cmd->add_flag("-q,--quiet", *quiet, "print no table");
    outputs->add_to(cmd);
    cmd->footer("Example: roofline plan gpt2-small --hw a100-sxm-40gb --memory-budget 30GiB --batch-sweep -o plan.json --html plan.html\n");
    cmd->callback([=] {
        // With --cluster every option is ranked by the job's iteration and its peak per rank
        // (analyze_parallel on the option's graph; with --pp analyze_pipeline on every stage's).
        check_output_targets({{"-o", *out}, {"--html", outputs->html}, {"--csv", outputs->csv}, {"--trace", outputs->trace}},
                             {args->model, *hw, parallel->cluster, runtime->host});
        const Cluster* cluster = parallel->resolve(*hw);
        if (cluster != nullptr && *sweep) throw InputError("--batch-sweep: not with --cluster (use `roofline search --micro-batches`)");
        if (parallel->sp && parallel->tp < 2)
            throw InputError("--sp: sequence parallelism shards across tensor-parallel ranks; add --tp > 1");
        args->tp = parallel->tp;
        args->sp = parallel->sp;
        args->cp = parallel->cp;
        args->ep = parallel->ep;
        args->routing = parallel->routing;
        args->pp = parallel->pp;
        args->stage = 0;
        const Hardware h = cluster != nullptr ? cluster->hardware : resolve_hardware(*hw);
        TrainingOptions t;
        Graph g = args->build(&t);
        PlanOptions opt;
        std::vector<std::unique_ptr<Graph>> stage_graphs;  // plan --pp: the other stages (opt.other_stages)
        std::string job;
        if (cluster != nullptr) {
            const ParallelOptions po = parallel->options();
            // Ring and all-gather context parallelism run attention as flash attention, fused or not.
            opt.fusion.flash_always = cp_runs_flash(parallel->cp, po.cp_comm);
            const int pp = parallel->pp;
            if (pp > 1) {
                // The pipeline's distinct stages: the first (g), stage 2 standing for every middle
                // stage (identical but for their layers' names), the last.
                for (int s : pp > 2 ? std::vector<int>{1, pp - 1} : std::vector<int>{1}) {
                    args->stage = s;
                    stage_graphs.push_back(std::make_unique<Graph>(args->build(nullptr)));
                    opt.other_stages.push_back(stage_graphs.back().get());
                }
                args->stage = 0;
                opt.stage_weights = pp > 2 ? std::vector<int>{1, pp - 2, 1} : std::vector<int>{1, 1};
                opt.pipeline = [cluster, po, pp](const std::vector<const Evaluated*>& es) {
                    std::vector<StageProfile> distinct;
                    for (const Evaluated* e : es) distinct.push_back(stage_profile(*e->graph, e->analysis));
                    std::vector<const StageProfile*> stages;
                    for (int s = 0; s < pp; ++s) stages.push_back(&distinct[s == 0 ? 0 : s == pp - 1 ? distinct.size() - 1 : 1]);
                    const ParallelAnalysis pa = analyze_pipeline(stages, *cluster, po);
                    return std::pair<double, std::int64_t>{pa.step_time_s, pa.peak_bytes};
                };
            } else {
                if (parallel->interleave > 1) throw InputError("--interleave " + std::to_string(parallel->interleave) + ": needs --pp > 1");
                opt.iteration = [cluster, po](const Graph& og, const Analysis& oa) {
                    const ParallelAnalysis pa = analyze_parallel(og, oa, *cluster, po);
                    return std::pair<double, std::int64_t>{pa.step_time_s, pa.peak_bytes};
                };
            }
            job = fmt::format("{}: tp {}{}{} x dp {}, ZeRO {}", cluster->name, parallel->tp, parallel->sp ? " (sp)" : "",
                              pp > 1 ? fmt::format(" x pp {}{}", pp,
                                                   parallel->interleave > 1 ? fmt::format(" (interleave {})", parallel->interleave) : "")
                                     : "",
                              po.dp, po.zero);
        }
        if (!budget->empty()) opt.memory_budget_bytes = parse_bytes(*budget, "--memory-budget");
        opt.analysis.schedule.streams = *streams;
        runtime->apply(opt.analysis);
        if (plan_args->fuse) opt.unfused = false;
        if (!plan_args->recompute.empty()) {
            opt.strategies = {*parse_strategy(plan_args->recompute)};
            opt.search_layers = false;
        }
        Plan p = make_plan(g, h, opt);
        std::vector<SweepSeries> series;
        if (*sweep) {
            const GraphArgs base = *args;
            series = batch_sweep(
                [&](std::int64_t b) {
                    GraphArgs a = base;
                    a.batch = b;
                    return a.build(nullptr);
                },
                h, opt);
        }
        const PlanReportContext ctx{
            g, h, p, *sweep ? &series : nullptr, args->mode, args->training() ? std::string(optimizer_name(t.optimizer)) : "", job};
        // Build every text before touching the file system.
        const nlohmann::ordered_json doc = plan_json(ctx);
        OutputFiles files;
        if (!out->empty()) files.push_back({"plan", *out, doc.dump(2) + "\n"});
        std::string trace;
        if (!outputs->trace.empty() && !p.options.empty()) {
            // The schedule of the best option that fits (the first ranked).
            const PlanOption& best = p.options.front();
            std::optional<RecomputePlan> rp;
            if (best.recompute == "layers")
                rp = plan_layers(g, find_layers(g), best.layers);
            else if (best.recompute != "none")
                rp = plan_strategy(g, *parse_strategy(best.recompute));
            const Evaluated e = evaluate_option(g, h, rp, best.fuse, opt.analysis, opt.fusion);
            trace = chrome_trace_json(*e.graph, e.analysis.schedule);
        }
        outputs->render(doc, files, trace.empty() ? nullptr : &trace);
        if (!*quiet) {
            const std::string table = render_plan_table(ctx, *top);
            print(table);
        }
        const std::string written = write_outputs(files);
        if (!*quiet) print(written);
        keep_until_exit(std::move(p));
        keep_until_exit(std::move(g));
        keep_until_exit(std::move(stage_graphs));
    });
}

}  // namespace roofline::cli
