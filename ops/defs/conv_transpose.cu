// conv_transpose2d's CUDA launcher (ops/defs/conv_transpose.cpp: the op): the transposed
// convolution is the data gradient of the convolution from y's shape to x's, so it runs
// conv2d_grad_input's implicit GEMM (ops/cuda/conv.cu: x in dy's place, y in dx's; the gather
// skips the output_padding rows no input reaches), then adds the bias per output channel.
#include <cuda_runtime.h>

#include <cstdint>

#include "ops/cuda/axis_lines.cuh"
#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/families.hpp"
#include "ops/cuda/launch_shape.hpp"

namespace roofline::cuda {
namespace {

constexpr int kThreads = 256;

template <class T>
__global__ void __launch_bounds__(kThreads)
    add_channel_bias(T* __restrict__ y, const T* __restrict__ bias, std::int64_t n, std::int64_t pixels, std::int64_t channels) {
    const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
    for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
        y[i] = store<T>(load(y + i) + load(bias + (i / pixels) % channels));
}

}  // namespace

ROOFLINE_CUDA_OP(conv_transpose2d) {
    if (in.size() < 2 || in.size() > 3 || out.size() != 1 || out[0].desc.rank() != 4) return false;
    if (!launch_conv(OpKind::conv2d_grad_input, Tensors{in[0], in[1]}, a, out, ctx)) return false;
    if (in.size() == 2 || out[0].desc.numel() == 0) return true;
    const Shape& s = out[0].desc.shape;
    const std::int64_t n = out[0].desc.numel(), pixels = s[2] * s[3];
    const auto run = [&](auto tag) {
        using T = decltype(tag);
        add_channel_bias<T><<<grid_for(n, kThreads), kThreads, 0, ctx.stream>>>(static_cast<T*>(out[0].data),
                                                                                static_cast<const T*>(in[2].data), n, pixels, s[1]);
        check_launch("add_channel_bias");
    };
    switch (out[0].desc.dtype) {  // the dtypes launch_conv accepted
        case DType::f32: run(float{}); return true;
        case DType::f16: run(__half{}); return true;
        case DType::bf16: run(__nv_bfloat16{}); return true;
        default: return false;
    }
}

}  // namespace roofline::cuda
