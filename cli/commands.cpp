#include "cli/commands.hpp"

#include "cli/graph_args.hpp"
#include "cli/plan_args.hpp"
#include "cli/parallel_args.hpp"
#include "cli/runtime_args.hpp"
#include "reports/cluster_report.hpp"
#include "cli/output_args.hpp"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "model/autodiff.hpp"
#include "model/model_json.hpp"
#include "model/templates.hpp"
#include "ops/error.hpp"
#include "reports/output_files.hpp"
#include "reports/report.hpp"
#include "reports/units.hpp"
#include "sim/analysis.hpp"

namespace roofline::cli {

Outcome& outcome() {
    static Outcome o;
    return o;
}

void print(const std::string& text) {
    const std::string safe = terminal_safe(text);
    if (outcome().captured != nullptr)
        *outcome().captured += safe;
    else
        std::fwrite(safe.data(), 1, safe.size(), stdout);
}

void add_analyze(CLI::App& app) {
    auto* cmd = app.add_subcommand("analyze", "hierarchical roofline of every op of a model on a chip");
    auto args = std::make_shared<GraphArgs>();
    auto hw = std::make_shared<std::string>("h100-sxm");
    auto out = std::make_shared<std::string>();
    auto top = std::make_shared<std::string>("25");
    auto quiet = std::make_shared<bool>(false);
    auto streams = std::make_shared<int>(1);
    auto trace = std::make_shared<std::string>();
    auto dataflow = std::make_shared<std::string>("ws");
    auto parallel = std::make_shared<ParallelArgs>();
    auto runtime = std::make_shared<RuntimeArgs>();
    auto outputs = std::make_shared<OutputArgs>();
    auto plan_args = std::make_shared<PlanArgs>();
    args->add_to(cmd);
    plan_args->add_to(cmd, false);
    cmd->add_option("--streams", *streams, "schedule kernels on this many streams (independent work overlaps)")
        ->check(CLI::Range(1, 1024))
        ->capture_default_str();
    cmd->add_option("--trace", *trace, "write the schedule as a Chrome trace (Perfetto, chrome://tracing)");
    outputs->add_to(cmd, true, false);
    cmd->add_option("--dataflow", *dataflow,
                    "TPU specs: systolic dataflow of the MXUs, ws (weight-), os (output-) or is (input-stationary)")
        ->check(CLI::IsMember({"ws", "os", "is"}))
        ->capture_default_str();
    auto* hw_opt = cmd->add_option("--hw", *hw, "hardware: a built-in name (see `roofline hw list`) or a spec file")->capture_default_str();
    parallel->add_to(cmd, hw_opt);
    runtime->add_to(cmd, false);
    cmd->add_option("-o,--output", *out, "write the JSON report (schema roofline-report/1) to this file");
    add_top_option(cmd, *top, "the table shows the N slowest ops (after the summary lines), or every op in execution order with 'all'",
                   "ops");
    cmd->add_flag("-q,--quiet", *quiet, "print no table");
    cmd->footer(
        "Example: roofline analyze gpt2-small --hw h100-sxm --mode training --batch 8 -o report.json\n"
        "         roofline analyze gpt2-small --mode training --fuse --recompute selective --html report.html\n"
        "         roofline analyze tests/data/public/neusight/configs/gpt2_large.json --hw v100-pcie-32gb --dtype f32 --runtime eager "
        "--mode training --optimizer none\n"
        "         roofline analyze gpt2-xl --mode training --cluster dgx-a100 --dp 64 --zero 1 --batch 8\n"
        "         roofline analyze tests/data/public/neusight/configs/bert_large.json --hw h200 --dtype f32 --runtime eager "
        "--host tests/data/hosts/h200-vm-2026-11-26.json\n");
    cmd->callback([=] {
        check_output_targets({{"-o", *out}, {"--trace", *trace}, {"--html", outputs->html}, {"--csv", outputs->csv}},
                             {args->model, *hw, parallel->cluster, runtime->host});
        const Cluster* cluster = parallel->resolve(*hw);
        args->tp = parallel->tp;
        if (parallel->sp && parallel->tp < 2)
            throw InputError("--sp: sequence parallelism shards across tensor-parallel ranks; add --tp > 1");
        args->sp = parallel->sp;
        args->pp = parallel->pp;
        args->cp = parallel->cp;
        args->ep = parallel->ep;
        args->routing = parallel->routing;
        args->stage = 0;
        const Hardware h = cluster != nullptr ? cluster->hardware : resolve_hardware(*hw);
        TrainingOptions t;
        Graph built = args->build(&t);
        AnalysisOptions aopt;
        aopt.schedule.streams = *streams;
        runtime->apply(aopt);
        aopt.tpu.dataflow = *dataflow == "os"   ? Dataflow::output_stationary
                            : *dataflow == "is" ? Dataflow::input_stationary
                                                : Dataflow::weight_stationary;
        // One chosen plan (--fuse, --recompute S): the transformed graph is what is analysed. Ring
        // and all-gather context parallelism run attention as flash attention, fused or not.
        plan_args->flash_always = cluster != nullptr && cp_runs_flash(parallel->cp, parallel->options().cp_comm);
        std::optional<Evaluated> chosen;
        std::optional<Analysis> plain;
        if (plan_args->any())
            chosen = plan_args->evaluate(built, h, aopt);
        else
            plain = analyze(built, h, aopt);
        const Graph& g = chosen ? *chosen->graph : built;
        const Analysis& a = chosen ? chosen->analysis : *plain;
        ReportContext ctx{g, h, a, args->mode, args->training() ? &t : nullptr};
        if (chosen && chosen->fusion) ctx.fusion = &*chosen->fusion;
        ctx.recompute = plan_args->recompute.empty() ? "none" : plan_args->recompute;
        ctx.runtime = std::string(runtime_name(aopt.runtime));
        if (runtime->loaded) ctx.host = &*runtime->loaded;
        std::optional<ParallelAnalysis> par;
        if (cluster != nullptr && parallel->pp > 1) {
            // Every stage built and analysed as the first was; the report's ops are the first stage's.
            std::vector<StageProfile> profiles{stage_profile(g, a)};
            profiles.reserve(static_cast<std::size_t>(parallel->pp));
            for (int s = 1; s < parallel->pp; ++s) {
                args->stage = s;
                const Graph stage = args->build(nullptr);
                if (plan_args->any()) {
                    const Evaluated e = plan_args->evaluate(stage, h, aopt);
                    profiles.push_back(stage_profile(*e.graph, e.analysis));
                } else {
                    profiles.push_back(stage_profile(stage, analyze(stage, h, aopt)));
                }
            }
            std::vector<const StageProfile*> stages;
            for (const StageProfile& p : profiles) stages.push_back(&p);
            par = analyze_pipeline(stages, *cluster, parallel->options());
            ctx.parallel = &*par;
        } else if (cluster != nullptr) {
            if (parallel->interleave > 1) throw InputError("--interleave " + std::to_string(parallel->interleave) + ": needs --pp > 1");
            par = analyze_parallel(g, a, *cluster, parallel->options());
            ctx.parallel = &*par;
        }
        OutputFiles files;
        if (!out->empty() || outputs->wanted()) {  // build fully before touching the file system
            if (outputs->wanted()) {               // the HTML and CSV renderers read the document
                const auto doc = report_json(ctx);
                if (!out->empty()) files.push_back({"report", *out, doc.dump(2) + "\n"});
                outputs->render(doc, files);
            } else {
                files.push_back({"report", *out, report_json_text(ctx)});
            }
        }
        if (!trace->empty()) {
            // With a plain 1F1B pipeline, a lane per stage's ranks (the first micro-batches when there are many).
            std::vector<PipelineBlock> pipeline;
            if (par && par->pp > 1 && par->interleave == 1) {
                std::vector<double> fwd, bwd;
                for (const auto& st : par->stages) fwd.push_back(st.forward_s), bwd.push_back(std::max(0.0, st.pass_s - st.forward_s));
                const int shown = drawn_micro_batches(par->pp, par->micro_batches);
                pipeline = pipeline_timeline(fwd, bwd, shown, par->p2p_s / (2.0 * (par->pp - 1)));
            }
            files.push_back({"trace", *trace, chrome_trace_json(g, a.schedule, pipeline.empty() ? nullptr : &pipeline)});
        }
        if (!*quiet) print(render_table(ctx, TableOptions{top_rows(*top)}));
        const std::string written = write_outputs(files);
        if (!*quiet) print(written);
        keep_until_exit(std::move(built));
        keep_until_exit(std::move(plain));
        keep_until_exit(std::move(chosen));
        keep_until_exit(std::move(files));
    });
}

void add_hw(CLI::App& app) {
    auto* cmd = app.add_subcommand("hw", "the hardware catalog");
    cmd->require_subcommand(1);
    auto* list = cmd->add_subcommand("list", "list the built-in hardware specs and clusters");
    list->footer("Example: roofline hw list\n");
    list->callback([] { print(render_hardware_list() + "\nClusters (roofline hw show NAME for collectives):\n" + render_cluster_list()); });
    auto* show =
        cmd->add_subcommand("show", "show a spec with every value's source and its ridge points, or a cluster and its collectives");
    auto name = std::make_shared<std::string>();
    auto as_json = std::make_shared<bool>(false);
    show->add_option("NAME", *name, "built-in name, spec file or cluster file")->required();
    show->add_flag("--json", *as_json, "print the validated spec and ridge points as JSON");
    show->footer("Example: roofline hw show h100-sxm\n         roofline hw show dgx-a100\n");
    show->callback([=] {
        if (is_cluster_name(*name) || is_cluster_file(*name)) {
            const Cluster c = resolve_cluster(*name);
            print(*as_json ? cluster_json(c).dump(2) + "\n" : render_cluster(c));
            return;
        }
        const Hardware h = resolve_hardware(*name);
        print(*as_json ? hardware_json(h).dump(2) + "\n" : render_hardware(h));
    });
}

void add_model(CLI::App& app) {
    auto* cmd = app.add_subcommand("model", "built-in model templates");
    cmd->require_subcommand(1);
    auto* list = cmd->add_subcommand("list", "list the built-in templates");
    list->footer("Example: roofline model list\n");
    list->callback([] { print(template_choices() + "\n"); });
    auto* exp =
        cmd->add_subcommand("export",
                            "print a model as roofline-model/1 JSON: a template as it expands (symbolic dims), or any MODEL with "
                            "its options applied (an ONNX file, a Hugging Face config, an inference --phase) as its concrete graph");
    auto args = std::make_shared<GraphArgs>();
    auto out = std::make_shared<std::string>();
    args->add_to(exp);
    exp->add_option("-o,--output", *out, "write to this file instead of standard output");
    exp->footer(
        "Example: roofline model export gpt2-small -o gpt2-small.json\n"
        "         roofline model export resnet50.onnx --batch 32 --dtype f16 -o resnet50.json\n"
        "         roofline model export llama-2-7b --phase decode --context 1024 --batch 8 -o decode.json\n"
        "         roofline model export t5-small --phase decode --context 64 --source 128 -o t5-decode.json\n"
        "A template with no options is written as it expands, with its symbolic dims (batch, seq) for --batch and --seq to\n"
        "override; anything else is the loaded graph with concrete shapes, which any command reads back as the same graph.\n"
        "The forward graph only: analyze, plan and measure --mode training build the training step from it.\n");
    exp->callback([=] {
        const GraphArgs& a = *args;
        if (a.training())
            throw InputError("model export writes the forward graph; --mode training builds the step from it when the file is analyzed");
        const bool plain = is_template_name(a.model) && !is_model_file_arg(a.model) && a.dtype.empty() && a.batch == 0 && a.seq == 0 &&
                           a.phase.empty() && a.context < 0 && a.source < 0 && !a.quant.any();
        const std::string text = (plain ? expand_template(a.model, nlohmann::json::object(), "template '" + a.model + "'")
                                        : graph_to_model_json(a.build(nullptr)))
                                     .dump(2) +
                                 "\n";
        if (out->empty())
            print(text);
        else
            commit_files({{*out, text}});
    });
}

}  // namespace roofline::cli
