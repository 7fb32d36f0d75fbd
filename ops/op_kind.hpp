#pragma once
// The op vocabulary. Every kind has exactly one rule (ops/op_rule.hpp) reached through an
// exhaustive switch in ops/registry.cpp, so adding a kind without its rule does not compile.
#include <optional>
#include <string>
#include <string_view>

namespace roofline {

// One line per group of kinds, by hand:
// clang-format off
enum class OpKind {
    // matrix
    matmul, linear, conv2d,
    // elementwise unary (scale: x * factor; shift and pow below); the plain ones from
    // ops/unary_ops.def (silu, sigmoid, tanh, exp, log, sin, sqrt, rsqrt, erf, softplus,
    // relu6, hardsigmoid, hardswish, mish)
    relu, gelu,
#define ROOFLINE_UNARY(name, ...) name,
#include "ops/unary_ops.def"
#undef ROOFLINE_UNARY
    neg, scale,
    // elementwise binary (numpy broadcasting)
    add, sub, mul, div, maximum,
    // normalisation and softmax
    softmax, layernorm, rmsnorm,
    // reductions
    reduce_sum, reduce_mean, reduce_max,
    // data movement
    embedding, transpose, permute, reshape, concat, split,
    // training and attention
    dropout, causal_mask, cross_entropy, attention,
    // backward-only ops (emitted by gradient rules)
    unary_grad, maximum_grad, softmax_grad, layernorm_grad, rmsnorm_grad, dropout_grad, cross_entropy_grad,
    embedding_grad, conv2d_grad_input, conv2d_grad_weight, reduce_max_grad, expand, fill,
    // mixed precision and optimizers
    cast, sgd_update, adam_update,
    // imported from ONNX (model/onnx_import.cpp): select, strided slice, 2-d pooling, and an op
    // without a rule kept by --allow-unknown (zero work, marked in reports)
    where, slice, max_pool2d, avg_pool2d, opaque,
    // backward of the imported pooling ops
    max_pool2d_grad, avg_pool2d_grad,
    // elementwise unary with a scalar operand, as eager PyTorch runs `x + c` and `x ** c`:
    // shift: x + offset; pow: x ^ exponent
    shift, pow,
    // imported from ONNX: pad (ONNX Pad: constant, reflect, edge or wrap; negative pads crop) and
    // resize (ONNX Resize/Upsample: nearest or linear)
    pad, resize,
    // imported from ONNX: cumsum (ONNX CumSum: a running sum along one axis, exclusive and/or
    // reversed) and topk (ONNX TopK: the k largest or smallest along an axis, values and indices)
    cumsum, topk,
};

inline constexpr OpKind kAllOpKinds[] = {
    OpKind::matmul, OpKind::linear, OpKind::conv2d, OpKind::relu, OpKind::gelu,
#define ROOFLINE_UNARY(name, ...) OpKind::name,
#include "ops/unary_ops.def"
#undef ROOFLINE_UNARY
    OpKind::neg, OpKind::scale,
    OpKind::add,         OpKind::sub,         OpKind::mul,        OpKind::div,         OpKind::maximum,
    OpKind::softmax,     OpKind::layernorm,   OpKind::rmsnorm,    OpKind::reduce_sum,  OpKind::reduce_mean,
    OpKind::reduce_max,  OpKind::embedding,   OpKind::transpose,  OpKind::permute,     OpKind::reshape,
    OpKind::concat,      OpKind::split,       OpKind::dropout,    OpKind::causal_mask, OpKind::cross_entropy,
    OpKind::attention,   OpKind::unary_grad,  OpKind::maximum_grad, OpKind::softmax_grad, OpKind::layernorm_grad,
    OpKind::rmsnorm_grad, OpKind::dropout_grad, OpKind::cross_entropy_grad, OpKind::embedding_grad,
    OpKind::conv2d_grad_input, OpKind::conv2d_grad_weight, OpKind::reduce_max_grad, OpKind::expand, OpKind::fill,
    OpKind::cast, OpKind::sgd_update, OpKind::adam_update, OpKind::where, OpKind::slice,
    OpKind::max_pool2d, OpKind::avg_pool2d, OpKind::opaque, OpKind::max_pool2d_grad, OpKind::avg_pool2d_grad,
    OpKind::shift, OpKind::pow, OpKind::pad, OpKind::resize, OpKind::cumsum, OpKind::topk,
};
// clang-format on

// The plain unary ops of ops/unary_ops.def, with the domain their inputs are drawn from in tests.
struct PlainUnaryOp {
    OpKind kind;
    bool positive_domain;  // defined for x > 0 only (log, sqrt, rsqrt)
};
inline constexpr PlainUnaryOp kPlainUnaryOps[] = {
#define ROOFLINE_UNARY(name, domain, ...) {OpKind::name, std::string_view(#domain) == "positive"},
#include "ops/unary_ops.def"
#undef ROOFLINE_UNARY
};

std::string_view op_name(OpKind k);
std::optional<OpKind> parse_op(std::string_view name);
std::string op_choices();  // every op name, for "unknown op" messages

}  // namespace roofline
