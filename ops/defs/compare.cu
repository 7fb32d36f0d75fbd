// The CUDA kernel of ops/defs/compare.cpp: one thread per output element (grid-strided), each
// operand read at its broadcast position (ops/cuda/broadcast.cuh), compared in the operands' own
// type widened to float (floating types) or 64-bit integers, a u8 0 or 1 written.
#include <cuda_runtime.h>

#include <cstdint>

#include "ops/cuda/axis_lines.cuh"
#include "ops/cuda/broadcast.cuh"
#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/families.hpp"
#include "ops/cuda/launch_shape.hpp"
#include "ops/defs/compare_mode.hpp"

namespace roofline::cuda {
namespace {

constexpr int kThreads = 256;

template <class T>
__global__ void __launch_bounds__(kThreads) compare_kernel(const T* __restrict__ a, const T* __restrict__ b, std::uint8_t* __restrict__ y,
                                                           std::int64_t n, Broadcast ba, Broadcast bb, int mode) {
    const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
    for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
        const Acc<T> x = load(a + broadcast_offset(ba, i)), z = load(b + broadcast_offset(bb, i));
        y[i] = compare_holds(mode, x, z) ? 1 : 0;
    }
}

template <class T>
void launch_as(const Tensors& in, const Tensors& out, const Broadcast& ba, const Broadcast& bb, int mode, cudaStream_t st) {
    const std::int64_t n = out[0].desc.numel();
    if (n == 0) return;
    compare_kernel<T><<<grid_for(n, kThreads), kThreads, 0, st>>>(static_cast<const T*>(in[0].data), static_cast<const T*>(in[1].data),
                                                                  static_cast<std::uint8_t*>(out[0].data), n, ba, bb, mode);
    check_launch("compare_kernel");
}

}  // namespace

ROOFLINE_CUDA_OP(compare) {
    if (in.size() != 2 || out.size() != 1 || out[0].desc.dtype != DType::u8 || in[0].desc.dtype != in[1].desc.dtype) return false;
    Broadcast ba, bb;
    if (!broadcast_of(out[0].desc.shape, in[0].desc.shape, ba) || !broadcast_of(out[0].desc.shape, in[1].desc.shape, bb)) return false;
    const int mode = compare_mode(a);
    switch (in[0].desc.dtype) {
        case DType::f32: launch_as<float>(in, out, ba, bb, mode, ctx.stream); return true;
        case DType::f16: launch_as<__half>(in, out, ba, bb, mode, ctx.stream); return true;
        case DType::bf16: launch_as<__nv_bfloat16>(in, out, ba, bb, mode, ctx.stream); return true;
        case DType::u8: launch_as<std::uint8_t>(in, out, ba, bb, mode, ctx.stream); return true;
        case DType::int32: launch_as<std::int32_t>(in, out, ba, bb, mode, ctx.stream); return true;
        case DType::int64: launch_as<long long>(in, out, ba, bb, mode, ctx.stream); return true;
        default: return false;
    }
}

}  // namespace roofline::cuda
