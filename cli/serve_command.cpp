// `roofline serve` (issue #17): an LLM under a stream of requests, continuous batching with a
// paged KV cache (sim/serve.hpp).
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <tuple>

#include "cli/validators.hpp"
#include "cli/commands.hpp"
#include "cli/inference_args.hpp"
#include "ops/error.hpp"
#include "ops/text.hpp"
#include "cli/output_args.hpp"
#include "reports/output_files.hpp"
#include "reports/report.hpp"
#include "reports/serve_report.hpp"

namespace roofline::cli {

void add_serve(CLI::App& app) {
    auto* cmd = app.add_subcommand("serve",
                                   "an LLM serving a stream of requests: continuous batching with a paged KV cache as vLLM schedules "
                                   "it; TTFT, TPOT and latency percentiles, throughput, queueing, cache use, the highest rate within "
                                   "latency targets");
    struct Args {
        InferenceArgs in;
        std::string rate = "1", prompt, output, out, html, arrivals = "poisson";
        std::int64_t requests = 1000, max_batch = 256, max_tokens = 0, block_size = 16, kv_blocks = 0;
        std::uint64_t seed = 0;
        double memory_utilization = 0.9, slo_ttft = 0, slo_tpot = 0, slo_quantile = 99;
        bool chunked = false, find_rate = false, quiet = false;
    };
    auto a = std::make_shared<Args>();
    a->in.add_to(cmd);
    cmd->add_option("--rate", a->rate, "requests a second (Poisson arrivals), or 'inf': all at once")->capture_default_str();
    cmd->add_option("--arrivals", a->arrivals, "poisson, or uniform (evenly spaced at 1 / rate)")
        ->check(CLI::IsMember({"poisson", "uniform"}))
        ->capture_default_str();
    cmd->add_option("--prompt-len", a->prompt, "prompt tokens: N, uniform:A:B, normal:MEAN:STD or exp:MEAN")->required();
    cmd->add_option("--output-len", a->output, "output tokens: N, uniform:A:B, normal:MEAN:STD or exp:MEAN")->required();
    cmd->add_option("--requests", a->requests, "requests simulated")->check(kPositive)->capture_default_str();
    cmd->add_option("--seed", a->seed, "seed of the arrivals and lengths (same seed, same report)")->capture_default_str();
    cmd->add_option("--max-batch", a->max_batch, "sequences running at most (vLLM max_num_seqs)")->check(kPositive)->capture_default_str();
    cmd->add_option("--max-tokens", a->max_tokens,
                    "tokens an iteration processes at most (vLLM max_num_batched_tokens; default 2048 with --chunked-prefill, else "
                    "max(2048, the model's positions))")
        ->check(kPositive);
    cmd->add_flag("--chunked-prefill", a->chunked, "mix prompt chunks into the decode iterations (vLLM V1's scheduler)");
    cmd->add_option("--block-size", a->block_size, "tokens per KV cache block")->check(kPositive)->capture_default_str();
    cmd->add_option("--kv-blocks", a->kv_blocks,
                    "KV cache blocks (default: what --memory-utilization of the device holds after the weights and the largest "
                    "step's activations)")
        ->check(kPositive);
    cmd->add_option("--memory-utilization", a->memory_utilization, "share of device memory planned with (vLLM gpu_memory_utilization)")
        ->check(CLI::Range(0.01, 1.0))
        ->capture_default_str();
    cmd->add_option("--slo-ttft", a->slo_ttft, "TTFT target in seconds (with --find-rate)")->check(kNonNegative);
    cmd->add_option("--slo-tpot", a->slo_tpot, "TPOT target in seconds (with --find-rate)")->check(kNonNegative);
    cmd->add_option("--slo-quantile", a->slo_quantile, "the percentile the targets apply to: 50, 90 or 99")
        ->check(CLI::IsMember({50.0, 90.0, 99.0}))
        ->capture_default_str();
    cmd->add_flag("--find-rate", a->find_rate, "also find the highest Poisson rate whose TTFT and TPOT meet the targets (bisection)");
    cmd->add_option("-o,--json", a->out, "write the report as JSON (schema roofline-serve/1)");
    cmd->add_option("--html", a->html, "also write a self-contained HTML report (batch, queue and cache over time; latency table)");
    cmd->add_flag("-q,--quiet", a->quiet, "print no summary");
    cmd->footer(
        "Example: roofline serve llama-2-7b --hw a100-sxm-80gb --rate 4 --prompt-len uniform:128:1024 --output-len exp:256 --requests "
        "2000\n"
        "         roofline serve llama-3-8b --rate 10 --prompt-len 512 --output-len 128 --find-rate --slo-ttft 0.5 --slo-tpot 0.05\n"
        "Iteration times come from analyses of the model's prefill and decode steps on a grid of shapes (flash attention, native "
        "executor), interpolated; see sim/serve.hpp.\n");
    cmd->callback([a] {
        check_output_targets({{"-o", a->out}, {"--html", a->html}}, {a->in.model, a->in.hw, a->in.cluster_name});
        a->in.resolve();
        ServeSettings s;
        s.model = a->in.model;
        s.hardware = a->in.cluster ? a->in.cluster->name : a->in.hardware.name;
        ServeOptions& o = s.options;
        if (a->rate == "inf") {
            o.rate = std::numeric_limits<double>::infinity();
        } else {
            std::size_t used = 0;
            std::tie(o.rate, used) = leading_number(a->rate);
            if (used != a->rate.size() || !(o.rate > 0) || !std::isfinite(o.rate))
                throw InputError("--rate: expected a positive number of requests a second or 'inf', got '" + a->rate + "'");
        }
        o.poisson = a->arrivals == "poisson";
        o.prompt = LengthDist::parse(a->prompt, "--prompt-len");
        o.output = LengthDist::parse(a->output, "--output-len");
        o.requests = a->requests, o.seed = a->seed, o.max_seqs = a->max_batch, o.max_tokens = a->max_tokens;
        o.chunked_prefill = a->chunked, o.block_size = a->block_size, o.kv_blocks = a->kv_blocks;
        o.memory_utilization = a->memory_utilization;
        o.quant = a->in.quant, o.dtype = a->in.dtype_override, o.tp = a->in.tp;
        o.cuda_graphs = a->in.cuda_graphs;
        o.cluster = a->in.cluster ? &*a->in.cluster : nullptr;
        if (!a->find_rate && (a->slo_ttft > 0 || a->slo_tpot > 0))
            throw InputError("--slo-ttft and --slo-tpot are targets for --find-rate");
        const ServeCosts costs = build_serve_costs(decoder_arch_of(a->in.model), a->in.hardware, o);
        const ServeResult r = simulate_serving(costs, o);
        if (a->find_rate) {
            s.slo_ttft_s = a->slo_ttft, s.slo_tpot_s = a->slo_tpot, s.slo_quantile = a->slo_quantile / 100;
            s.search = find_max_rate(costs, o, s.slo_ttft_s, s.slo_tpot_s, s.slo_quantile);
        }
        const auto doc = serve_json(costs, r, s);
        // Render everything first; write only when all of it was built.
        const std::string json_text = doc.dump(1) + "\n";
        const std::string html_text = a->html.empty() ? std::string() : serve_html(doc);
        OutputFiles files;
        if (!a->out.empty()) files.push_back({"JSON report", a->out, json_text});
        if (!a->html.empty()) files.push_back({"HTML report", a->html, html_text});
        const std::string written = write_outputs(files);
        if (!a->quiet) {
            print(render_serve(costs, r, s));
            print(written);
        }
    });
}

}  // namespace roofline::cli
