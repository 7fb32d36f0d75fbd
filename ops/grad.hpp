#pragma once
// Gradient rules. Each op kind's rule says which ops compute its input gradients, written against
// this small builder interface; model/autodiff.cpp implements it on a Graph (docs/ARCHITECTURE.md: the rule
// lives with the op, autodiff drives it). Tensors are referred to by id.
#include <cstdint>
#include <span>
#include <vector>

#include "ops/attrs.hpp"
#include "ops/op_kind.hpp"
#include "ops/tensor.hpp"

namespace roofline {

using TensorRef = std::int32_t;
inline constexpr TensorRef kNoGrad = -1;

class GradBuilder {
public:
    virtual ~GradBuilder() = default;
    // Appends a backward op and returns its outputs.
    virtual std::vector<TensorRef> emit(OpKind k, const std::vector<TensorRef>& inputs, const Attrs& attrs) = 0;
    // Valid until the next emit(): copy what must outlive it.
    virtual const TensorDesc& desc(TensorRef t) const = 0;

    TensorRef one(OpKind k, const std::vector<TensorRef>& inputs, const Attrs& attrs = {}) { return emit(k, inputs, attrs)[0]; }
    // Sums a gradient computed at a broadcast shape down to `target` (numpy broadcasting in reverse).
    // Shapes are taken by value: emitting ops may move the descriptors desc() refers to.
    TensorRef sum_to(TensorRef g, Shape target);
    // Broadcasts g to `target` (a view: expand).
    TensorRef expand_to(TensorRef g, Shape target);
};

struct GradArgs {
    OpKind kind;
    const Attrs& attrs;
    std::span<const TensorRef> inputs;
    std::span<const TensorRef> outputs;
    std::span<const TensorRef> output_grads;  // kNoGrad where an output has no gradient
    std::span<const bool> needs;              // which inputs need a gradient
};

// Returns one gradient per input (kNoGrad where none is needed or defined).
using GradFn = std::vector<TensorRef> (*)(GradBuilder&, const GradArgs&);

// Small attribute builders used by the rules.
Attrs attr(const char* name, AttrValue v);
Attrs attr2(const char* n1, AttrValue v1, const char* n2, AttrValue v2);

}  // namespace roofline
