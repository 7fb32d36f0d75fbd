#pragma once
// The CPU reference of a fused graph: runs each fusion group as one unit, in the contracted
// graph's order, keeping the group's on-chip tensors local to it (they are never visible to
// another unit), computing flash-attention groups with the tiled online-softmax algorithm
// (Dao et al. 2022, Algorithm 1) and letting a flash backward group recompute the probabilities
// from Q and K instead of reading them. Its results must equal the unfused executor's
// (model/executor.hpp): the check that a fusion plan computes the same values.
#include <map>
#include <vector>

#include "model/graph.hpp"
#include "ops/reference.hpp"
#include "sim/fusion.hpp"

namespace roofline {

// values[t]: tensor t after the run; tensors kept on chip come back empty (desc set, no data).
std::vector<HostTensor> execute_fused(const Graph& g, const FusionPlan& plan, const std::map<TensorId, HostTensor>& given,
                                      RefPrecision precision, std::uint64_t seed = 1);

// Tiled flash-attention forward over q [..., sq, d], k [..., sk, d], v [..., sk, dv] in blocks of
// block_k keys: O = softmax(mask(scale q k^T)) with dropout p applied to the probabilities as
// the dropout op does (by element index of the [..., sq, sk] probabilities).
HostTensor flash_attention_reference(const HostTensor& q, const HostTensor& k, const HostTensor& v, double scale, bool causal,
                                     double dropout_p, std::int64_t block_k);

}  // namespace roofline
