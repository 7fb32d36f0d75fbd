#pragma once
// Where each tensor of a graph lives in one device arena, for an executor that runs the nodes in a
// given order. Two plans:
//  - keep_all: every tensor its own slot for the whole run, so every value stays inspectable after
//    it (what the correctness check needs);
//  - reuse: a tensor's slot is free once its last reader has run, and later tensors take it (the
//    static "greedy by size" planner of TensorFlow Lite's arena planner and of PyTorch's
//    memory-planning passes: largest tensors first, each at the lowest offset that overlaps no
//    placed tensor alive at the same time). The arena's size is then the allocator's peak for this
//    order, fragmentation included.
// Sources (inputs, parameters, optimizer state) and graph outputs live for the whole run, so a
// repeated run reads the same sources. A reshape output is a view: it shares its input's slot,
// which stays alive until the view's last reader.
#include <cstdint>
#include <vector>

#include "model/graph.hpp"

namespace roofline {

enum class ArenaMode { keep_all, reuse };

struct ArenaPlan {
    std::vector<std::int64_t> offset;  // per tensor: byte offset in the arena (a view: its base's)
    std::vector<TensorId> storage;     // per tensor: the tensor whose slot it uses (itself unless a view)
    std::int64_t bytes = 0;            // arena size
    std::int64_t live_peak_bytes = 0;  // the largest sum of aligned slots alive at one step (a lower bound on bytes)
};

// order: every node exactly once, producers before consumers (Graph::topological_order()).
// alignment: every slot starts at a multiple of it (> 0).
ArenaPlan plan_arena(const Graph& g, const std::vector<NodeId>& order, ArenaMode mode, std::int64_t alignment);

}  // namespace roofline
