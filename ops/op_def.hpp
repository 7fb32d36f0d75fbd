#pragma once
// An op defined in one file: ops/defs/<name>.cpp holds everything the ops layer knows of it, and
// ops/defs/<name>.cu its CUDA launcher (ops/cuda/families.hpp: ROOFLINE_CUDA_OP). The file writes
//
//   ROOFLINE_OP_DEF(name) {
//       static const OpDefinition d{.rule = {...}, .traits = {...}, .grad = ..., .reference = ..., .examples = {...}};
//       return d;
//   }
//
// at the start of a line inside namespace roofline. The build (CMakeLists.txt) finds the marker,
// lists the op in ops/defined_ops.inc, and from that list the op gets its OpKind value (after the
// hand-written ones), its registry row (its name is the marker's), its gradient rule, its CPU
// reference and its CUDA dispatcher case; nothing else is edited. docs/ARCHITECTURE.md walks
// through one (ops/defs/cumsum.cpp).
#include <vector>

#include "ops/attrs.hpp"
#include "ops/grad.hpp"
#include "ops/op_rule.hpp"
#include "ops/reference.hpp"

namespace roofline {

// The CPU reference kernel: out holds one zero-filled tensor per output descriptor (from
// infer_outputs); the kernel writes their values in double (ops/reference.hpp).
using ReferenceFn = void (*)(const std::vector<const HostTensor*>& in, const Attrs& attrs, std::vector<HostTensor>& out);

// Input shapes and attributes the generic tests run the op on, its inputs floating point of the
// dtype each test picks: tests/unit/autodiff_test.cpp (its gradients build, f32),
// tests/unit/gradcheck_test.cpp (its gradient against finite differences, f64) and
// tests/gpu/pointwise_test.cpp (its CUDA kernel against its reference in f32, f16 and bf16).
// index_inputs: int64 inputs after the floating ones (gather's indices), drawn in [0, 2) by the tests
// (model/executor.cpp deterministic_value), so an axis they index has at least 2 entries.
struct OpExample {
    std::vector<Shape> inputs;
    Attrs attrs;
    std::vector<Shape> index_inputs = {};
};

struct OpDefinition {
    OpRule rule;      // arity, attributes, shape inference, work counts (ops/op_rule.hpp)
    OpTraits traits;  // what sim/ and measure/ ask of it (ops/op_traits.hpp); {}: a streaming kernel
    GradFn grad;      // its input gradients (ops/grad.hpp); nullptr: autodiff names the op as having none
    ReferenceFn reference;
    std::vector<OpExample> examples;  // at least one when the op has a gradient rule
};

// The definition of a kind from ops/defs/; nullptr for the kinds written out by hand.
const OpDefinition* op_definition(OpKind k);

#define ROOFLINE_OP_DEF(name) const OpDefinition& op_def_##name()
#define ROOFLINE_DEFINED_OP(name) ROOFLINE_OP_DEF(name);
#include "ops/defined_ops.inc"
#undef ROOFLINE_DEFINED_OP

}  // namespace roofline
