// `roofline search` (issue #16): every (tp, pp, dp, micro-batch, recompute, ZeRO) configuration of
// a training job on N GPUs of a cluster, ranked (sim/search.hpp).
#include <cstdio>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "cli/validators.hpp"
#include "cli/commands.hpp"
#include "cli/output_args.hpp"
#include "cli/parallel_args.hpp"
#include "cli/plan_args.hpp"
#include "model/autodiff.hpp"
#include "ops/dtype.hpp"
#include "ops/error.hpp"
#include "reports/output_files.hpp"
#include "reports/report.hpp"
#include "reports/search_report.hpp"
#include "sim/search.hpp"

namespace roofline::cli {

void add_search(CLI::App& app) {
    auto* cmd =
        app.add_subcommand("search",
                           "every tp x pp x dp x micro-batch x recompute x ZeRO x interleave configuration of a training job on a cluster, "
                           "ranked by iteration time among those that fit");
    struct Args {
        std::string model, cluster, dtype, optimizer = "adamw", budget, out, csv;
        int gpus = 0, jobs = 0;
        std::int64_t global_batch = 0, seq = 0;
        std::vector<int> micro_batches{1, 2, 4, 8}, zero{0, 1, 2, 3}, interleave{1, 2}, cp{1}, ep{1}, tp, pp;
        std::vector<std::string> recompute{"none", "selective", "full"};
        std::vector<std::string> sp{"on"};
        std::vector<std::string> cp_comm;  // empty: every form
        RoutingArgs routing;
        std::string top = "25";
        bool quiet = false;
    };
    auto a = std::make_shared<Args>();
    cmd->add_option("MODEL", a->model,
                    "a model that splits for tensor and pipeline parallelism: a GPT template, or a Hugging Face preset or config.json of "
                    "the llama family (llama, mistral, qwen2, gemma, mixtral, qwen2_moe, phi3), gpt2, opt, falcon or phi")
        ->required();
    cmd->add_option("--gpus", a->gpus, "GPUs the job uses: tp x cp x pp x dp")->required()->check(kPositive);
    cmd->add_option("--cluster", a->cluster, "the cluster (a built-in name, see `roofline hw list`, or a roofline-cluster/1 file)")
        ->required();
    cmd->add_option("--global-batch", a->global_batch, "samples per iteration over all data-parallel ranks")->required()->check(kPositive);
    cmd->add_option("--seq", a->seq, "override the model's sequence length")->check(kPositive);
    cmd->add_option("--dtype", a->dtype, "compute and parameter dtype policy (default: the model's)");
    cmd->add_option("--optimizer", a->optimizer, "sgd, adam or adamw")
        ->check(CLI::IsMember({"sgd", "adam", "adamw"}))
        ->capture_default_str();
    cmd->add_option("--micro-batches", a->micro_batches, "candidate micro-batch sizes")
        ->delimiter(',')
        ->check(kPositive)
        ->capture_default_str();
    cmd->add_option("--recompute", a->recompute, "candidate recomputation strategies (none, selective, full, ...)")
        ->delimiter(',')
        ->capture_default_str();
    cmd->add_option("--zero", a->zero, "candidate ZeRO stages")->delimiter(',')->check(CLI::Range(0, 3))->capture_default_str();
    cmd->add_option("--interleave", a->interleave, "candidate virtual stages per device (interleaved 1F1B)")
        ->delimiter(',')
        ->check(kPositive)
        ->capture_default_str();
    cmd->add_option("--sp", a->sp, "sequence parallelism with tp > 1: on, off, or both as on,off")
        ->delimiter(',')
        ->check(CLI::IsMember({"on", "off"}))
        ->capture_default_str();
    cmd->add_option("--tp", a->tp, "candidate tensor-parallel degrees, e.g. 8 or 4,8 (default: every divisor of --gpus up to a node)")
        ->delimiter(',')
        ->check(kPositive);
    cmd->add_option("--pp", a->pp, "candidate pipeline-parallel degrees, e.g. 16 (default: every divisor of --gpus)")
        ->delimiter(',')
        ->check(kPositive);
    cmd->add_option("--cp", a->cp, "candidate context-parallel degrees (each rank holds 1/cp of every sequence), e.g. 1,2,4")
        ->delimiter(',')
        ->check(kPositive)
        ->capture_default_str();
    cmd->add_option("--cp-comm", a->cp_comm,
                    std::string("candidate context-parallel forms for configurations with cp > 1, e.g. ring or ring,ulysses (default: "
                                "all three): ") +
                        kCpCommHelp)
        ->delimiter(',')
        ->check(CLI::IsMember(kCpCommValues));
    cmd->add_option("--ep", a->ep,
                    "candidate expert-parallel degrees (models with experts: a GPT template with \"experts\", a Hugging Face mixtral or "
                    "qwen2_moe; each divides dp and the experts), e.g. 1,8")
        ->delimiter(',')
        ->check(kPositive)
        ->capture_default_str();
    a->routing.add_to(cmd);
    cmd->add_option("--memory-budget", a->budget, "peak memory per rank, e.g. 70GiB (default: the chip's memory)");
    cmd->add_option("--jobs", a->jobs, "threads analysing stages (default: the machine's cores)")->check(kPositive);
    add_top_option(cmd, a->top, "rows of the table: the N best configurations, or 'all'", "configurations");
    cmd->add_option("-o,--output", a->out, "write every configuration as JSON (schema roofline-search/1)");
    cmd->add_option("--csv", a->csv, "write every configuration as CSV");
    cmd->add_flag("-q,--quiet", a->quiet, "print no table");
    cmd->footer("Example: roofline search gpt3-175b --gpus 1024 --cluster dgx-a100 --global-batch 1536 --top 10 -o search.json\n");
    cmd->callback([a] {
        check_output_targets({{"-o", a->out}, {"--csv", a->csv}}, {a->model, a->cluster});
        const Cluster cluster = resolve_cluster(a->cluster);
        SearchSettings s;
        s.model = a->model;
        s.cluster = cluster.name;
        s.seq = a->seq;
        s.space.gpus = a->gpus;
        s.space.global_batch = a->global_batch;
        s.space.micro_batches = a->micro_batches;
        s.space.recompute = a->recompute;
        s.space.zero = a->zero;
        s.space.interleave = a->interleave;
        for (const std::string& v : a->sp) s.space.sequence_parallel.push_back(v == "on");
        s.space.context_parallel = a->cp;
        for (const std::string& v : a->cp_comm) s.space.cp_comm.push_back(parse_cp_comm(v));
        s.expert_load = a->routing.expert_load;
        s.capacity_factor = a->routing.capacity_factor;
        s.pad_to_capacity = a->routing.pad_to_capacity;
        s.space.expert_parallel = a->ep;
        s.space.tensor_parallel = a->tp;
        s.space.pipeline_parallel = a->pp;
        s.space.jobs = a->jobs > 0 ? a->jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
        if (!a->budget.empty()) s.space.memory_budget_bytes = parse_bytes(a->budget, "--memory-budget");
        const std::size_t top = top_rows(a->top);
        ModelOverrides ov;
        if (a->seq > 0) ov.seq = a->seq;
        a->routing.apply(ov);  // every configuration's experts routed as asked (as analyze --expert-load)
        if (!a->dtype.empty()) {
            const auto d = parse_dtype(a->dtype);
            if (!d || !is_floating(*d)) throw InputError("--dtype: expected a floating-point dtype, got '" + a->dtype + "'");
            ov.dtype = d;
        }
        TrainingOptions t;
        t.optimizer = a->optimizer == "sgd" ? Optimizer::sgd : a->optimizer == "adam" ? Optimizer::adam : Optimizer::adamw;
        {
            // The model's own precision policy (master weights, loss scale), as analyze reads it.
            ModelOverrides probe = ov;
            probe.batch = 1;
            const Graph g = load_model_arg(a->model, probe);
            t.master_weights = g.precision.master_weights;
            t.loss_scale = g.precision.loss_scale;
        }
        const SearchResult r = search_parallel(cluster, s.space, template_stage_builder(a->model, ov, t, cluster.hardware, {}));
        if (r.candidates.empty())
            throw InputError(fmt::format("search: none of the {} configurations is valid for {} on {} GPUs ({})", r.enumerated, a->model,
                                         a->gpus, r.invalid_reasons.empty() ? "no candidates" : r.invalid_reasons.front()));
        const std::string json = a->out.empty() ? "" : search_json(r, s).dump(2) + "\n";
        const std::string csv = a->csv.empty() ? "" : search_csv(r);
        if (!a->quiet) {
            const std::string table = render_search(r, s, top);
            print(table);
        }
        OutputFiles files;
        if (!a->out.empty()) files.push_back({"report", a->out, json});
        if (!a->csv.empty()) files.push_back({"CSV", a->csv, csv});
        const std::string written = write_outputs(files);
        if (!a->quiet) print(written);
    });
}

}  // namespace roofline::cli
