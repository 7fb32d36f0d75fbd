#pragma once
// Memory model: tensor liveness over the execution order gives the bytes resident after every
// node, by category, and the peak (seed ML-GAP-013). Nothing here is a closed-form formula: the
// numbers come from which tensors the graph keeps alive and for how long.
//  - Sources (parameters, optimizer state) live for the whole step; inputs until their last use.
//  - A tensor is allocated when its producer runs and freed after its last consumer.
//  - Views (reshape; transpose, permute and split without copy; expand) share their input's storage,
//    and optimizer updates write in place (their outputs share the updated tensor's storage).
//  - Categories: weights; gradients (what reaches the optimizer); optimizer state (moments,
//    momentum, fp32 master weights); activations saved for backward (forward tensors a backward
//    node reads); temporaries (everything else); workspace (a named option, per kernel).
#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "model/graph.hpp"

namespace roofline {

enum class MemoryCategory { weights, gradients, optimizer_state, activations, temporaries, workspace };
inline constexpr std::size_t kMemoryCategories = 6;
std::string_view category_name(MemoryCategory c);

using CategoryBytes = std::array<std::int64_t, kMemoryCategories>;

struct MemoryOptions {
    // Scratch space a library kernel may hold while it runs (e.g. a cuBLAS workspace). Default 0:
    // the L0 model assumes kernels need none; set it to model a library's workspace.
    std::int64_t workspace_bytes = 0;
    // Per tensor: kept on chip inside a fused kernel (sim/fusion.hpp), never allocated in device
    // memory. Null: every tensor is materialised.
    const std::vector<bool>* on_chip = nullptr;
};

struct MemoryStep {
    NodeId node = kNoNode;
    CategoryBytes bytes{};  // resident while the node runs (its inputs and its outputs)
    std::int64_t total() const;
};

struct MemoryTimeline {
    std::vector<MemoryStep> steps;  // one per node, in execution order
    std::size_t peak_step = 0;
    std::int64_t peak_bytes = 0;
    CategoryBytes at_peak{};
    // Bytes of forward tensors kept for the backward pass, summed over the whole step.
    std::int64_t saved_activation_bytes = 0;
    std::vector<MemoryCategory> category;  // per tensor
};

MemoryTimeline memory_timeline(const Graph& g, const MemoryOptions& opt = {});

}  // namespace roofline
