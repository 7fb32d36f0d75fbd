#include "cli/inference_args.hpp"

#include "cli/graph_args.hpp"
#include "ops/error.hpp"
#include "sim/builtin_hardware.hpp"

namespace roofline::cli {

void InferenceArgs::add_to(CLI::App* cmd) {
    cmd->add_option("MODEL", model,
                    "a decoder-only LLM: a GPT template, llama-2-7b, llama-3-8b, mistral-7b, or a gpt2/llama/mistral config.json")
        ->required();
    hw_option = cmd->add_option("--hw", hw, "hardware: a built-in name (see `roofline hw list`) or a spec file")->capture_default_str();
    cmd->add_option("--dtype", dtype, "compute, weight and KV-cache dtype (default: the checkpoint's; fp8_e4m3/e5m2: fp8 W8A8)");
    add_quantization_options(cmd, quant);
    cmd->add_option("--tp", tp,
                    "tensor-parallel ranks (with --cluster): each holds 1/tp of the heads, MLP and vocabulary; two all-reduces a layer")
        ->check(CLI::Range(1, 4096))
        ->capture_default_str();
    cmd->add_flag("--cuda-graphs", cuda_graphs,
                  "replay steps from CUDA graphs, as vLLM does: kernels back to back without the host's launch interval (generate: "
                  "decode steps; serve: every iteration)");
    cmd->add_option("--cluster", cluster_name,
                    "the cluster the tensor-parallel ranks run on (see `roofline hw list`); its GPUs replace --hw");
}

void InferenceArgs::resolve() {
    if (tp > 1 && cluster_name.empty())
        throw InputError("--tp " + std::to_string(tp) + ": name the cluster the ranks run on with --cluster");
    if (!cluster_name.empty()) {
        cluster = resolve_cluster(cluster_name);
        if (hw_option != nullptr && hw_option->count() > 0 && hw != cluster->chip)
            throw InputError("--hw " + hw + " and --cluster " + cluster->name + " disagree: the cluster's GPUs are " + cluster->chip +
                             " (leave --hw out)");
        hardware = cluster->hardware;
    } else {
        hardware = resolve_hardware(hw);
    }
    if (!dtype.empty()) {
        const auto d = parse_dtype(dtype);
        if (!d || !is_floating(*d)) throw InputError("--dtype: expected a floating-point dtype, got '" + dtype + "'");
        dtype_override = d;
    }
}

}  // namespace roofline::cli
