#pragma once
// Kernel fusion: which ops can run as one kernel, and what that saves.
//
// Groups, formed greedily in program order (XLA's producer-consumer fusion, the groups Inductor
// and cuBLASLt epilogues form):
//  - elementwise: chains of elementwise ops (unary, binary with broadcasting, scale, cast, dropout,
//    masks and their gradients);
//  - gemm: a matmul/linear/conv with elementwise producers folded into its prologue and
//    elementwise consumers of its output's size into its epilogue (bias, activation, residual
//    add, scale);
//  - reduction: a row kernel (softmax, layernorm, rmsnorm, cross-entropy, reductions and their
//    gradients) with its elementwise producers and consumers;
//  - flash_attention: the attention core (QK^T, scale, mask, softmax, dropout, x V, or a composite
//    attention op) as one tiled kernel, and its backward (the gradient nodes of those ops) as one
//    flash backward kernel that recomputes the probabilities: the s x s tensors never reach HBM.
//    HBM traffic follows the tiled algorithm (Dao et al. 2022, "FlashAttention", Theorem 2:
//    Theta(N^2 d^2 / M) for on-chip memory M; loop order of FlashAttention-2, Dao 2023).
// Legality: a node joins a group only if the contracted graph stays acyclic (no path leaves the
// group and comes back), and nothing is ever duplicated; a tensor a node outside the group reads
// is still written (a multi-output fusion saves only its re-read).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/graph.hpp"
#include "sim/gpu_model.hpp"

namespace roofline {

enum class FusionKind { elementwise, gemm, reduction, flash_attention, flash_attention_backward };
std::string_view fusion_kind_name(FusionKind k);

struct FusionGroup {
    std::string name;
    FusionKind kind = FusionKind::elementwise;
    std::vector<NodeId> nodes;            // program order
    NodeId anchor = kNoNode;              // the node whose kernel the group is lowered as
    std::vector<TensorId> reads;          // external inputs (read once)
    std::vector<TensorId> writes;         // outputs something outside the group reads (written once)
    std::vector<TensorId> on_chip;        // never materialised in device memory
    Work work;                            // the fused kernel's: members' FLOPs, external bytes (flash: tiled traffic)
    std::int64_t unfused_bytes = 0;       // members' device-memory traffic, one kernel each
    std::int64_t launches_saved = 0;      // kernels of the members minus one
    std::int64_t intermediate_bytes = 0;  // bytes of the on-chip tensors (allocations saved)
    std::int64_t hbm_bytes_saved() const { return unfused_bytes - work.bytes(); }
};

struct FusionPlan {
    std::vector<FusionGroup> groups;  // only groups of two or more nodes (or flash kernels)
    std::vector<int> group_of;        // per node: index into groups, -1 when unfused
    std::vector<bool> on_chip;        // per tensor
};

struct FusionOptions {
    bool elementwise = true;
    bool gemm_epilogue = true;
    bool gemm_prologue = true;
    bool reductions = true;
    bool flash_attention = true;
    // On-chip memory per SM for the flash tiles (Dao et al.'s M), bytes. 0: the spec's shared
    // memory per block.
    double flash_sram_bytes = 0;
    // Flash attention even where the graph is not fused (sim/plan.hpp analyse_option with fuse
    // false: the attention cores alone as flash kernels, every other op its own kernel), and with
    // fusion whatever flash_attention says: context parallelism's ring and all-gather forms run
    // attention so (sim/parallel.hpp cp_runs_flash).
    bool flash_always = false;
};

// The attention core whose softmax is `softmax`: [Q K^T matmul, scale?, causal_mask?, softmax,
// dropout?, P V matmul] in program order, when its forward intermediates are read by no other
// forward node; empty otherwise. Fusion makes it a flash kernel; selective recomputation
// (sim/recompute.hpp) runs it again in backward.
std::vector<NodeId> attention_core(const Graph& g, NodeId softmax);

FusionPlan find_fusion_groups(const Graph& g, const Hardware& hw, const FusionOptions& opt = {});

// The forward attention cores of g, each by the node a flash kernel would group it around (its
// softmax, or a single attention node), in program order.
std::vector<NodeId> attention_cores(const Graph& g);

// The fused kernel of a group (GPU specs), costed by the L1 kernel model.
Kernel fused_kernel(const Graph& g, const FusionGroup& group, const Hardware& hw, const GpuModelOptions& opt = {});

// Flash attention traffic for one head-batch: device-memory bytes of the tiled forward or backward
// for sequence lengths sq, sk, head dims d, dv, element size elt, on-chip memory sram_bytes.
std::int64_t flash_forward_bytes(std::int64_t heads, std::int64_t sq, std::int64_t sk, std::int64_t d, std::int64_t dv, std::int64_t elt,
                                 double sram_bytes, bool causal);
std::int64_t flash_backward_bytes(std::int64_t heads, std::int64_t sq, std::int64_t sk, std::int64_t d, std::int64_t dv, std::int64_t elt,
                                  double sram_bytes, bool causal);

}  // namespace roofline
