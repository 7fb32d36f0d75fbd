#pragma once
// The CPU reference executor: runs any graph (inference or training step) node by node with the
// reference kernels of ops/reference.hpp, in float64 or float32. Inputs, parameters and optimizer
// state not given are filled deterministically: floating tensors uniform in [-1, 1) from a seeded
// hash (parameters) or zero (optimizer state); index tensors uniform over the range their consumer
// accepts (embedding rows, cross-entropy classes).
#include <cstdint>
#include <map>
#include <vector>

#include "model/graph.hpp"
#include "ops/reference.hpp"

namespace roofline {

// values[t] is tensor t's value after the run.
std::vector<HostTensor> execute(const Graph& g, const std::map<TensorId, HostTensor>& given, RefPrecision precision,
                                std::uint64_t seed = 1);

// The deterministic fill used for sources that are not given (model/deterministic.hpp): floating
// sources uniform in [-1, 1) times source_scale, rounded to their dtype; integer sources indices
// below source_index_bound; optimizer state zero.
HostTensor deterministic_value(const Graph& g, TensorId t, std::uint64_t seed);

// The exclusive upper bound of an integer source's values: the row count of the embedding or the
// class count of the cross-entropy that reads it as indices (2 when nothing does).
std::int64_t source_index_bound(const Graph& g, TensorId t);

// The bound of a source's values: sqrt(6 / fan_in) for a weight (a parameter of rank >= 2, fan_in
// its elements per output row: in x kH x kW), Kaiming-uniform as PyTorch initialises ReLU networks,
// so that a deep network without normalisation (a torchvision CNN with its batch norm folded into
// the convolutions) keeps its activations finite in f16; 1 for inputs, biases and norm scales.
double source_scale(const Graph& g, TensorId t);

}  // namespace roofline
