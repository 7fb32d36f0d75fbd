// The CUDA kernels of ops/defs/log_softmax.cpp, computing what its CPU reference computes: the
// tensor as [outer, n, inner] lines around the axis, one 256-thread block per line (grid-strided
// over lines), its threads striding along the line; the max and the sums reduced through shared
// memory; f32 arithmetic for f32, f16 and bf16. Correct for any axis; coalesced when the axis is the
// last (inner = 1), the usual case.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "ops/cuda/axis_lines.cuh"
#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/families.hpp"
#include "ops/cuda/float_types.cuh"
#include "ops/cuda/launch_shape.hpp"
#include "ops/error.hpp"

namespace roofline::cuda {
namespace {

constexpr int kThreads = 256;

// The block's max (Max) or sum of v; every thread gets it.
template <bool Max>
__device__ float block_reduce(float v, float* shared) {
    for (int off = 16; off > 0; off /= 2) {
        const float o = __shfl_down_sync(0xffffffffu, v, off);
        v = Max ? fmaxf(v, o) : v + o;
    }
    const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
    __syncthreads();  // the previous reduction's readers are done with `shared`
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < kThreads / 32 ? shared[lane] : (Max ? -INFINITY : 0.0f);
        for (int off = 16; off > 0; off /= 2) {
            const float o = __shfl_down_sync(0xffffffffu, v, off);
            v = Max ? fmaxf(v, o) : v + o;
        }
        if (lane == 0) shared[0] = v;
    }
    __syncthreads();
    return shared[0];
}

template <class T>
__global__ void __launch_bounds__(kThreads) log_softmax_kernel(const T* __restrict__ x, T* __restrict__ y, Lines s) {
    __shared__ float shared[kThreads / 32];
    for (std::int64_t line = blockIdx.x; line < s.outer * s.inner; line += gridDim.x) {
        const std::int64_t base = (line / s.inner) * s.n * s.inner + line % s.inner;
        float m = -INFINITY;
        for (std::int64_t j = threadIdx.x; j < s.n; j += blockDim.x) m = fmaxf(m, load(x + base + j * s.inner));
        m = block_reduce<true>(m, shared);
        float sum = 0;
        for (std::int64_t j = threadIdx.x; j < s.n; j += blockDim.x) sum += __expf(load(x + base + j * s.inner) - m);
        const float lse = m + __logf(block_reduce<false>(sum, shared));
        for (std::int64_t j = threadIdx.x; j < s.n; j += blockDim.x) y[base + j * s.inner] = store<T>(load(x + base + j * s.inner) - lse);
    }
}

template <class T>
__global__ void __launch_bounds__(kThreads)
    log_softmax_grad_kernel(const T* __restrict__ dy, const T* __restrict__ y, T* __restrict__ dx, Lines s) {
    __shared__ float shared[kThreads / 32];
    for (std::int64_t line = blockIdx.x; line < s.outer * s.inner; line += gridDim.x) {
        const std::int64_t base = (line / s.inner) * s.n * s.inner + line % s.inner;
        float sum = 0;
        for (std::int64_t j = threadIdx.x; j < s.n; j += blockDim.x) sum += load(dy + base + j * s.inner);
        sum = block_reduce<false>(sum, shared);
        for (std::int64_t j = threadIdx.x; j < s.n; j += blockDim.x) {
            const std::int64_t at = base + j * s.inner;
            dx[at] = store<T>(load(dy + at) - __expf(load(y + at)) * sum);
        }
    }
}

unsigned line_blocks(const Lines& s) { return static_cast<unsigned>(std::min<std::int64_t>(s.outer * s.inner, 65535)); }

}  // namespace

ROOFLINE_CUDA_OP(log_softmax) {
    if (in.size() != 1 || out.size() != 1 || in[0].desc != out[0].desc || in[0].desc.rank() == 0) return false;
    const Lines s = lines_of(in[0].desc, normalize_axis(a.get_int("axis", -1), in[0].desc.rank()));
    return with_float_type(in[0].desc.dtype, [&](auto tag) {
        using T = decltype(tag);
        if (s.outer * s.inner == 0 || s.n == 0) return;
        log_softmax_kernel<T>
            <<<line_blocks(s), kThreads, 0, ctx.stream>>>(static_cast<const T*>(in[0].data), static_cast<T*>(out[0].data), s);
        check_launch("log_softmax_kernel");
    });
}

ROOFLINE_CUDA_OP(log_softmax_grad) {
    if (in.size() != 2 || out.size() != 1 || in[0].desc != out[0].desc || in[1].desc != out[0].desc || in[0].desc.rank() == 0) return false;
    const Lines s = lines_of(in[0].desc, normalize_axis(a.get_int("axis", -1), in[0].desc.rank()));
    return with_float_type(in[0].desc.dtype, [&](auto tag) {
        using T = decltype(tag);
        if (s.outer * s.inner == 0 || s.n == 0) return;
        log_softmax_grad_kernel<T><<<line_blocks(s), kThreads, 0, ctx.stream>>>(
            static_cast<const T*>(in[0].data), static_cast<const T*>(in[1].data), static_cast<T*>(out[0].data), s);
        check_launch("log_softmax_grad_kernel");
    });
}

}  // namespace roofline::cuda
