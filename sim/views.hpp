#pragma once
// Views (ops/op_traits.hpp ViewKind): a node whose output aliases its input, launching no kernel.
#include "model/graph.hpp"

namespace roofline {

// reshape and expand always; permute, transpose and split unless their `copy` attribute is set.
bool is_view(const Node& n);

}  // namespace roofline
