#pragma once
// The op vocabulary. Every kind has exactly one rule (ops/op_rule.hpp) reached through an
// exhaustive switch in ops/registry.cpp, so adding a kind without its rule does not compile.
#include <optional>
#include <string>
#include <string_view>

namespace roofline {

enum class OpKind {
    // matrix
    matmul, linear, conv2d,
    // elementwise unary
    relu, gelu, silu, sigmoid, tanh, exp, log, sin, sqrt, rsqrt, neg, scale,
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
};

inline constexpr OpKind kAllOpKinds[] = {
    OpKind::matmul,      OpKind::linear,      OpKind::conv2d,     OpKind::relu,        OpKind::gelu,
    OpKind::silu,        OpKind::sigmoid,     OpKind::tanh,       OpKind::exp,         OpKind::log,
    OpKind::sin,         OpKind::sqrt,        OpKind::rsqrt,      OpKind::neg,         OpKind::scale,
    OpKind::add,         OpKind::sub,         OpKind::mul,        OpKind::div,         OpKind::maximum,
    OpKind::softmax,     OpKind::layernorm,   OpKind::rmsnorm,    OpKind::reduce_sum,  OpKind::reduce_mean,
    OpKind::reduce_max,  OpKind::embedding,   OpKind::transpose,  OpKind::permute,     OpKind::reshape,
    OpKind::concat,      OpKind::split,       OpKind::dropout,    OpKind::causal_mask, OpKind::cross_entropy,
    OpKind::attention,
};

std::string_view op_name(OpKind k);
std::optional<OpKind> parse_op(std::string_view name);
std::string op_choices();  // every op name, for "unknown op" messages

}  // namespace roofline
