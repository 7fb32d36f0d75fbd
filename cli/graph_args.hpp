#pragma once
// The model and training-step options shared by every subcommand that takes a MODEL (analyze,
// measure): one definition, so the graph a measurement ran is the graph an analysis predicts.
#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "cli/routing_args.hpp"
#include "model/autodiff.hpp"
#include "model/graph.hpp"
#include "model/inference.hpp"

namespace roofline::cli {

// --weights, --group-size, --activations, --kv-cache (model/inference.hpp Quantization): for
// analyze --phase, generate and serve.
void add_quantization_options(CLI::App* cmd, Quantization& q);

struct GraphArgs {
    std::string model;
    std::string dtype;
    std::int64_t batch = 0;
    std::int64_t seq = 0;
    std::string mode = "inference";
    std::string optimizer = "adamw";
    double loss_scale = -1.0;
    std::string master;
    bool allow_unknown = false;  // ONNX: ops without a mapping count as zero work (opaque)
    int tp = 1;                  // tensor-parallel ranks (set by analyze --tp): one rank's share of the model
    int pp = 1, stage = 0;       // pipeline stages (analyze --pp) and the one to build
    bool sp = false;             // sequence parallelism with tp (analyze --sp)
    int cp = 1;                  // context-parallel ranks (analyze --cp): one rank's share of each sequence
    int ep = 1;                  // expert-parallel ranks (analyze --ep): one rank's share of the experts
    RoutingArgs routing;         // --expert-load, --capacity-factor, --pad-to-capacity (analyze, plan)
    std::string phase;           // prefill or decode: one inference step of a decoder-only LLM
    std::int64_t context = -1;   // decode: tokens already in the KV cache
    std::int64_t source = -1;    // encoder-decoder decode: encoder tokens whose cross-attention K and V are cached
    Quantization quant;          // --phase: quantized weights, activations, KV cache

    void add_to(CLI::App* cmd);
    // Loads the model, applies the overrides and, in training mode, builds the training step
    // (its options are returned in *t when t is not null).
    Graph build(TrainingOptions* t) const;
    bool training() const { return mode == "training"; }
};

}  // namespace roofline::cli
