#pragma once
// Per-family launchers behind launch_op (dispatch.cpp). Each family lives in its own .cu file(s).
// Every function returns false when it has no kernel for the op/dtypes (dispatch then throws an
// InputError naming both), true after enqueueing.
#include "ops/cuda/kernels.hpp"

namespace roofline::cuda {

using Tensors = std::vector<DeviceTensor>;

// pointwise.cu / movement.cu: unary and binary elementwise (broadcasting), scale, shift, pow, unary_grad,
// maximum_grad, dropout, dropout_grad, causal_mask, cast, fill, expand, sgd_update, adam_update;
// transpose, permute, reshape, concat, split, embedding, embedding_grad.
bool launch_pointwise(OpKind k, const Tensors& in, const Attrs& a, const Tensors& out, LaunchContext& ctx);
bool launch_movement(OpKind k, const Tensors& in, const Attrs& a, const Tensors& out, LaunchContext& ctx);

// rowwise.cu / reduce.cu / conv.cu: softmax, layernorm, rmsnorm, cross_entropy and their grads
// (one warp or one block per row); reduce_sum/mean/max, reduce_max_grad; conv2d and its grads.
bool launch_rowwise(OpKind k, const Tensors& in, const Attrs& a, const Tensors& out, LaunchContext& ctx);
bool launch_reduce(OpKind k, const Tensors& in, const Attrs& a, const Tensors& out, LaunchContext& ctx);
bool launch_conv(OpKind k, const Tensors& in, const Attrs& a, const Tensors& out, LaunchContext& ctx);

// gemm.cpp / attention.cu: matmul and linear through cuBLASLt; attention materialised (cuBLASLt
// batched GEMMs + softmax kernel) or flash-style (ctx.flash_attention).
bool launch_gemm(OpKind k, const Tensors& in, const Attrs& a, const Tensors& out, LaunchContext& ctx);
bool launch_attention(OpKind k, const Tensors& in, const Attrs& a, const Tensors& out, LaunchContext& ctx);

// gather.cu: the imported index-mapping ops slice, pad, resize, where, max_pool2d, avg_pool2d and
// the pooling gradients.
bool launch_gather_family(OpKind k, const Tensors& in, const Attrs& a, const Tensors& out, LaunchContext& ctx);

// scan.cu: cumsum and topk.
bool launch_scan_family(OpKind k, const Tensors& in, const Attrs& a, const Tensors& out, LaunchContext& ctx);

}  // namespace roofline::cuda
