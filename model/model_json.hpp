#pragma once
// The model file format "roofline-model/1" (documented in README.md, "Model format"), and the
// entry point that turns a file, a template file or a built-in template name into a Graph.
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>

#include "model/graph.hpp"
#include "model/inference.hpp"
#include "ops/dtype.hpp"

namespace roofline {

// Command-line overrides applied to any model: symbolic dimensions and the dtype policy.
struct ModelOverrides {
    std::optional<std::int64_t> batch;  // sets dims.batch
    std::optional<std::int64_t> seq;    // sets dims.seq
    std::optional<DType> dtype;         // sets dtype_policy.compute and .parameters
    bool allow_unknown = false;         // ONNX: keep ops without a mapping as zero-work opaque ops
    // Evaluation mode (model.eval(): what `--mode inference` runs): dropout is the identity, so a
    // dropout node's output is its input and no node is built for it. Its mask output cannot be
    // used in this mode.
    bool eval = false;
    // No training step follows (inference; implied by eval): fp8 GEMM weights are stored in fp8, a
    // quantized checkpoint, instead of cast from 16-bit ones each step.
    bool frozen_weights = false;
    // Tensor-parallel ranks (--tp): a template that can split builds one rank's share; any other
    // model must declare the same degree in its "tensor_parallel" (InputError otherwise).
    int tp = 1;
    // Sequence parallelism with tp (--sp): the template shards layernorm, dropout and residual
    // activations along the sequence (Korthikanti et al. 2022).
    bool sp = false;
    // Context-parallel ranks (--cp): a template that can split builds one rank's share of the
    // sequence (model/graph.hpp ContextParallel); any other model must declare the same degree.
    int cp = 1;
    // Expert-parallel ranks (--ep): a template with experts builds one rank's share of them.
    int ep = 1;
    // Routing of a template's experts (--expert-load): "uniform", "zipf:S" or comma-separated
    // shares, one per expert; empty: the config's own. GPT templates with experts and the Hugging
    // Face mixtral and qwen2_moe take it (model/moe_routing.hpp).
    std::string expert_load{};
    // Expert capacity of a template's experts (--capacity-factor, --pad-to-capacity): the config's
    // "capacity_factor" and "pad_to_capacity"; unset: the config's own.
    std::optional<double> capacity_factor = std::nullopt;
    bool pad_to_capacity = false;
    // Pipeline stages (--pp) and which one to build: a template that can split builds that stage.
    int pp = 1;
    int stage = 0;
    // A probe of the stage (`search`, sim/parallel.hpp compose_layers): a template that splits
    // builds this many of the stage's layers instead of its share, and records the model's count.
    std::optional<int> stage_layers = std::nullopt;
    // An inference phase of a decoder-only LLM (--phase): the model is rebuilt from its
    // architecture as one prefill or decode step (model/inference.hpp); batch and seq apply to it.
    std::optional<PhaseOptions> phase = std::nullopt;
};

// Builds a graph from a parsed "roofline-model/1" document (a graph or a template reference).
// origin names the document in error messages (a file path or "template 'gpt2-small'").
Graph load_model(const nlohmann::json& doc, const std::string& origin, const ModelOverrides& ov = {});

// A file's whole text: InputError for a path that is missing, a directory or not a regular file
// (a device such as /dev/zero, a FIFO), or larger than max_bytes.
std::string read_input_file(const std::string& path, std::uintmax_t max_bytes);
inline constexpr std::uintmax_t kMaxJsonBytes = 512ull << 20;  // model, spec and measurement files: 512 MiB
inline constexpr std::size_t kMaxNodes = 2'000'000;            // nodes of a model document (before training)

// Whether MODEL names a file (a path, a .json name, or an existing file) rather than a template.
bool is_model_file_arg(const std::string& model);

// Resolves MODEL as given on the command line: an existing file path, or a built-in template name.
Graph load_model_arg(const std::string& model, const ModelOverrides& ov = {});

// A forward graph as the roofline-model/1 document that loads back into the same graph: every
// tensor with its concrete shape and dtype, every node with explicit outputs and attributes, in
// topological order (`roofline model export`). InputError for a training step (backward or
// optimizer nodes), which analyze --mode training builds from the forward graph instead.
nlohmann::json graph_to_model_json(const Graph& g);

// Reads and parses a JSON file; malformed JSON is an InputError with file, line and column.
nlohmann::json read_json_file(const std::string& path);
// The parsing half of read_json_file: malformed JSON, duplicate keys and numbers beyond double's
// range are InputErrors naming `path` (with line and column where nlohmann gives them).
nlohmann::json parse_json_text(const std::string& text, const std::string& path);

}  // namespace roofline
