#pragma once
// The terms of the cost model whose values are fitted to measurements rather than taken from a
// datasheet or a published measurement: the last resort of docs/ARCHITECTURE.md's "Predictions you can
// trust", each labelled as such where it is used and listed here, so that `roofline validate
// --leave-one-out gpu` can refit every one of them on the other GPUs and predict the GPU left out.
// Each is a physical quantity (an efficiency of a named mechanism, a per-op host cost), never a
// per-family correction of the result.
#include <span>
#include <string_view>

#include "sim/analysis.hpp"

namespace roofline {

struct FittedTerm {
    std::string_view name;
    // The option it sets (a reference into the analysis options).
    double& (*ref)(AnalysisOptions&);
    double lo, hi;  // the range the fit may search (the mechanism's physical limits)
    // Validation families whose cases depend on it, comma-separated, from: linear, bmm, conv,
    // softmax, ln, add, mul, div, pow, gelu, relu, tanh, e2e ("*": all). A fit of this term only
    // needs to re-predict those cases.
    std::string_view families;
    std::string_view evidence;  // the mechanism, and where its default value was fitted
};

// Every fitted term, in the order a coordinate-wise fit should visit them (most cases first).
std::span<const FittedTerm> fitted_terms();

}  // namespace roofline
