// `roofline generate` (issue #17): TTFT, TPOT, end-to-end latency and memory of generating T tokens
// after a prompt of P, for a batch of sequences (sim/generate.hpp).
#include <cstdio>
#include <memory>

#include "cli/validators.hpp"
#include "cli/commands.hpp"
#include "cli/inference_args.hpp"
#include "model/inference.hpp"
#include "reports/generate_report.hpp"
#include "cli/output_args.hpp"
#include "reports/output_files.hpp"
#include "reports/report.hpp"

namespace roofline::cli {

void add_generate(CLI::App& app) {
    auto* cmd = app.add_subcommand("generate",
                                   "an LLM generating T tokens after a P-token prompt: TTFT, TPOT, end-to-end latency, tokens/s, the KV "
                                   "cache over time, peak memory and the largest batch that fits");
    struct Args {
        InferenceArgs in;
        std::string out, html;
        std::int64_t prompt = 0, output = 0, batch = 1, analysed = 64;
        bool quiet = false;
    };
    auto a = std::make_shared<Args>();
    a->in.add_to(cmd);
    cmd->add_option("--prompt", a->prompt, "prompt tokens per sequence")->required()->check(kPositive);
    cmd->add_option("--output", a->output, "output tokens per sequence (the first comes from the prefill)")->required()->check(kPositive);
    cmd->add_option("--batch", a->batch, "sequences generated together")->check(kPositive)->capture_default_str();
    cmd->add_option("--analysed", a->analysed, "decode steps analysed at most (evenly spaced, both ends; the others interpolated linearly)")
        ->check(CLI::Range(2, 100000))
        ->capture_default_str();
    cmd->add_option("-o,--json", a->out, "write the report as JSON (schema roofline-generate/1)");
    cmd->add_option("--html", a->html, "also write a self-contained HTML report (per-token latency and KV cache by position)");
    cmd->add_flag("-q,--quiet", a->quiet, "print no summary");
    cmd->footer(
        "Example: roofline generate llama-2-7b --hw a100-pcie-40gb --prompt 1024 --output 256 --batch 8 --html gen.html\n"
        "Decode steps run the project's native executor (one launch per kernel, no CUDA graphs); the prefill produces the first "
        "token.\n");
    cmd->callback([a] {
        check_output_targets({{"-o", a->out}, {"--html", a->html}}, {a->in.model, a->in.hw, a->in.cluster_name});
        a->in.resolve();
        GenerateSettings s;
        s.model = a->in.model;
        s.hardware = a->in.cluster ? a->in.cluster->name : a->in.hardware.name;
        GenerateOptions& o = s.options;
        o.prompt = a->prompt, o.output = a->output, o.batch = a->batch, o.max_analysed = a->analysed;
        o.quant = a->in.quant;
        o.dtype = a->in.dtype_override;
        o.tp = a->in.tp;
        o.cuda_graphs = a->in.cuda_graphs;
        o.cluster = a->in.cluster ? &*a->in.cluster : nullptr;
        const GenerateResult r = simulate_generation(decoder_arch_of(a->in.model), a->in.hardware, o);
        const auto doc = generate_json(r, s);
        // Render everything first; write only when all of it was built.
        const std::string json_text = doc.dump(1) + "\n";
        const std::string html_text = a->html.empty() ? std::string() : generate_html(doc);
        OutputFiles files;
        if (!a->out.empty()) files.push_back({"JSON report", a->out, json_text});
        if (!a->html.empty()) files.push_back({"HTML report", a->html, html_text});
        const std::string written = write_outputs(files);
        if (!a->quiet) {
            print(render_generate(r, s));
            print(written);
        }
    });
}

}  // namespace roofline::cli
