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

// scan.cu: topk.
bool launch_scan_family(OpKind k, const Tensors& in, const Attrs& a, const Tensors& out, LaunchContext& ctx);

// The ops of ops/defs/ (ops/op_def.hpp): ops/defs/<name>.cu defines its launcher as
//   ROOFLINE_CUDA_OP(name) { ... }
// (inside namespace roofline::cuda), which dispatch.cpp calls for OpKind::name through the generated
// list; it returns false for inputs, outputs or dtypes it has no kernel for.
#define ROOFLINE_CUDA_OP(name)                                                                                                   \
    bool launch_##name([[maybe_unused]] const Tensors& in, [[maybe_unused]] const Attrs& a, [[maybe_unused]] const Tensors& out, \
                       [[maybe_unused]] LaunchContext& ctx)
#define ROOFLINE_DEFINED_OP(name) ROOFLINE_CUDA_OP(name);
#include "ops/defined_ops.inc"
#undef ROOFLINE_DEFINED_OP

}  // namespace roofline::cuda
