#pragma once
// Activation recomputation (rematerialisation) of a training step: which forward tensors are kept
// for the backward pass and which are recomputed there, and the graph that does it.
//
// A plan is a set of forward nodes to run again in backward. apply_recompute() rebuilds the
// training graph with a clone of each such node ("recompute/<name>", phase backward, tagged with
// the node it recomputes) inserted just before the first backward node that needs its output, and
// points every backward consumer at the clone. The forward originals then die at their last
// forward use, so the liveness model (sim/memory.hpp) — not a formula — gives the peak memory.
// Values are identical by construction: a clone is the same op on the same inputs (dropout masks
// come from the element index, ops/pointwise_math.hpp, as a saved RNG state would make them).
//
// Strategies:
//  - none: keep every forward tensor a backward node reads (what autodiff builds).
//  - full: keep each layer's input; recompute the whole layer in backward (torch.utils.checkpoint
//    per block, Megatron's full activation recomputation).
//  - selective: recompute only the attention core — QK^T, scale, mask, softmax, dropout and the
//    product with V — whose outputs are the s^2-sized tensors (Korthikanti et al. 2022,
//    "Reducing Activation Recomputation in Large Transformer Models", section 5).
//  - sqrt: Chen et al. 2016 ("Training Deep Nets with Sublinear Memory Cost"): keep the input of
//    every ceil(sqrt(n))-th layer, recompute segments of sqrt(n) layers.
//  - mincut: the save/recompute partition of least saved bytes, as PyTorch's
//    min_cut_rematerialization_partition computes it: a max-flow/min-cut (Boost.Graph,
//    Boykov-Kolmogorov) over the forward graph where cutting a tensor costs its bytes and
//    matrix ops (matmul, linear, conv, attention) are never recomputed.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/graph.hpp"

namespace roofline {

enum class RecomputeStrategy { none, full, selective, sqrt, mincut };
std::string_view strategy_name(RecomputeStrategy s);
std::optional<RecomputeStrategy> parse_strategy(std::string_view name);
inline constexpr RecomputeStrategy kAllStrategies[] = {RecomputeStrategy::none, RecomputeStrategy::selective, RecomputeStrategy::full,
                                                       RecomputeStrategy::sqrt, RecomputeStrategy::mincut};

// Whether g is a training step (has backward nodes).
bool is_training_step(const Graph& g);

// Forward layers: maximal runs of forward nodes whose names share a prefix ending at the first
// '.'- or '/'-separated component that ends in a digit ("h3.attn.qkv" -> "h3",
// "model.layers.3.mlp.up_proj" -> "model.layers.3"), in program order, with at least two nodes;
// in a graph whose names number nothing, the prefix ending at the first '.' or '/' ("attn.q" ->
// "attn"). Nodes outside any layer (embeddings, the head, the loss) are never recomputed by the
// per-layer strategies.
struct Layer {
    std::string name;
    std::vector<NodeId> nodes;  // forward nodes, program order
};
std::vector<Layer> find_layers(const Graph& g);

// Per-layer choice, the unit the budget planner searches over.
enum class LayerChoice : std::uint8_t { keep, selective, full };

struct RecomputePlan {
    std::vector<bool> recompute;  // per node of the original graph: run again in backward
};

// The plan of a strategy. Throws InputError when the graph is not a training step.
RecomputePlan plan_strategy(const Graph& g, RecomputeStrategy s);
// The plan of one choice per layer (choices.size() == layers.size()).
RecomputePlan plan_layers(const Graph& g, const std::vector<Layer>& layers, const std::vector<LayerChoice>& choices);
// The min-cut plan alone (exposed for its benchmark and tests).
RecomputePlan plan_mincut(const Graph& g);

struct RecomputeResult {
    Graph graph;
    std::vector<NodeId> origin;    // per node of the new graph: the original node (a clone: the node it recomputes)
    std::vector<NodeId> cloned;    // the original nodes recomputed, in the order their clones were added
    std::int64_t clones = 0;       // recomputed node executions
    std::int64_t extra_flops = 0;  // FLOPs of the clones
};

RecomputeResult apply_recompute(const Graph& g, const RecomputePlan& plan);

}  // namespace roofline
