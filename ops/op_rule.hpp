#pragma once
// One rule per op kind: arity, accepted attributes, shape inference and work counting.
// Rules are pure functions of input descriptors and attributes; nothing here knows a GPU.
#include <array>
#include <span>
#include <string_view>
#include <vector>

#include "ops/attrs.hpp"
#include "ops/error.hpp"
#include "ops/grad.hpp"
#include "ops/op_kind.hpp"
#include "ops/op_traits.hpp"
#include "ops/tensor.hpp"
#include "ops/work.hpp"

namespace roofline {

// What family an op belongs to, for reports ("time by op family").
enum class OpFamily { matrix, elementwise, normalization, reduction, movement, attention, loss, optimizer };
std::string_view family_name(OpFamily f);

using Inputs = std::span<const TensorDesc>;
using InferFn = std::vector<TensorDesc> (*)(OpKind, Inputs, const Attrs&);
using WorkFn = Work (*)(OpKind, Inputs, std::span<const TensorDesc> outputs, const Attrs&);

struct OpRule {
    OpFamily family;
    int min_inputs;
    int max_inputs;                       // kVariadic for any number >= min_inputs
    std::vector<std::string_view> attrs;  // accepted attribute names; anything else is an error
    InferFn infer;
    WorkFn work;
    static constexpr int kVariadic = -1;
};

// The rule of an op kind and its traits (the registry in ops/registry.cpp: one entry per kind).
const OpRule& rule_of(OpKind k);
const OpTraits& traits_of(OpKind k);
// The gradient rule of an op kind (the table in ops/gradients.cpp); nullptr for ops that are
// not differentiated (backward and optimizer ops).
GradFn grad_rule_of(OpKind k);

// Checked entry points used by graphs: arity, attribute names, then the rule. Errors are
// InputError with the op name; callers add the node and file.
std::vector<TensorDesc> infer_outputs(OpKind k, Inputs in, const Attrs& attrs);
Work count_work(OpKind k, Inputs in, std::span<const TensorDesc> out, const Attrs& attrs);

// ---- helpers shared by the rule files ----
// Ideal-kernel traffic: every input read once, every output written once.
Work io_bytes(Inputs in, std::span<const TensorDesc> out);
// Throws unless every input has the same dtype; returns it.
DType common_dtype(OpKind k, Inputs in);
// Throws unless the input is a floating-point tensor.
void require_floating(OpKind k, const TensorDesc& t, const char* role);
// The output dtype of a matrix product: int8 accumulates into int32, fp8 products are written as
// bf16 (as cuBLASLt does by default), everything else keeps its dtype.
DType matrix_output_dtype(DType in);

// slice's normalised plan per axis of x: {start, step, length} (ops/import_ops.cpp), shared by the
// rule and the reference kernel.
std::vector<std::array<std::int64_t, 3>> slice_plan(const TensorDesc& x, const Attrs& attrs);
// pad's pads as {begin, end} per axis of x, checked against its mode (ops/import_ops.cpp), shared by
// the reference kernel and the gradient.
std::vector<std::array<std::int64_t, 2>> pad_plan(const TensorDesc& x, const Attrs& attrs);
// (resize's and pad's per-axis index maps: ops/index_map.hpp)

// Rule definitions, one per family file.
const OpRule& matmul_rule();
const OpRule& linear_rule();
const OpRule& conv2d_rule();
const OpRule& unary_rule();
const OpRule& binary_rule();
const OpRule& pow_rule();  // a scalar exponent attribute or a tensor exponent (second input)
const OpRule& dropout_rule();
const OpRule& causal_mask_rule();
const OpRule& softmax_rule();
const OpRule& layernorm_rule();
const OpRule& rmsnorm_rule();
const OpRule& reduce_rule();
const OpRule& cross_entropy_rule();
const OpRule& embedding_rule();
const OpRule& transpose_rule();
const OpRule& permute_rule();
const OpRule& reshape_rule();
const OpRule& concat_rule();
const OpRule& split_rule();
const OpRule& attention_rule();
const OpRule& unary_grad_rule();
const OpRule& maximum_grad_rule();
const OpRule& softmax_grad_rule();
const OpRule& layernorm_grad_rule();
const OpRule& rmsnorm_grad_rule();
const OpRule& dropout_grad_rule();
const OpRule& cross_entropy_grad_rule();
const OpRule& embedding_grad_rule();
const OpRule& conv2d_grad_input_rule();
const OpRule& conv2d_grad_weight_rule();
const OpRule& reduce_max_grad_rule();
const OpRule& expand_rule();
const OpRule& fill_rule();
const OpRule& cast_rule();
const OpRule& sgd_update_rule();
const OpRule& adam_update_rule();
const OpRule& where_rule();
const OpRule& slice_rule();
const OpRule& pad_rule();
const OpRule& resize_rule();
const OpRule& topk_rule();
const OpRule& pool2d_rule();
const OpRule& pool2d_grad_rule();
const OpRule& opaque_rule();

}  // namespace roofline
