// cumsum's CUDA kernels (ops/defs/cumsum.cpp: the op), computing what its CPU reference computes.
// A tensor is seen as [outer, n, inner] around the axis. With inner = 1 (the scanned axis
// innermost, the usual case) one warp scans a line in chunks of 32: coalesced loads, a shuffle scan
// per chunk and the running total carried across chunks. Otherwise one thread per (outer, inner)
// column walks the axis; neighbouring threads read neighbouring columns, so loads are coalesced too.
// Floating inputs accumulate in f32, integers in 64 bits.
#include <cuda_runtime.h>

#include <cstdint>

#include "ops/cuda/axis_lines.cuh"
#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/families.hpp"
#include "ops/cuda/launch_shape.hpp"

namespace roofline::cuda {
namespace {

constexpr int kThreads = 256;

// inner == 1: warp w scans line w. Lane l of a chunk holds element base + l (from the end when
// reversed); an inclusive shuffle scan gives its prefix; exclusive subtracts the element itself.
template <class T>
__global__ void __launch_bounds__(kThreads) cumsum_rows(const T* __restrict__ x, T* __restrict__ y, Lines s, bool exclusive, bool reverse) {
    const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * (blockDim.x / 32);
    const int lane = static_cast<int>(threadIdx.x % 32);
    for (std::int64_t line = static_cast<std::int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32; line < s.outer; line += warps) {
        const T* xl = x + line * s.n;
        T* yl = y + line * s.n;
        Acc<T> carry = 0;
        for (std::int64_t base = 0; base < s.n; base += 32) {
            const std::int64_t step = base + lane;
            const std::int64_t j = reverse ? s.n - 1 - step : step;
            const Acc<T> v = step < s.n ? load(xl + j) : Acc<T>(0);
            Acc<T> inc = v;
#pragma unroll
            for (int off = 1; off < 32; off *= 2) {
                const Acc<T> up = __shfl_up_sync(0xffffffffu, inc, off);
                if (lane >= off) inc += up;
            }
            if (step < s.n) yl[j] = store<T>(carry + (exclusive ? inc - v : inc));
            carry += __shfl_sync(0xffffffffu, inc, 31);
        }
    }
}

// inner > 1: thread t walks column t (outer index t / inner, inner index t % inner).
template <class T>
__global__ void __launch_bounds__(kThreads)
    cumsum_columns(const T* __restrict__ x, T* __restrict__ y, Lines s, bool exclusive, bool reverse) {
    const std::int64_t columns = s.outer * s.inner;
    const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
    for (std::int64_t c = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < columns; c += stride) {
        const std::int64_t o = c / s.inner, i = c % s.inner;
        Acc<T> acc = 0;
        for (std::int64_t step = 0; step < s.n; ++step) {
            const std::int64_t j = reverse ? s.n - 1 - step : step;
            const std::int64_t at = (o * s.n + j) * s.inner + i;
            const Acc<T> v = load(x + at);
            if (exclusive) {
                y[at] = store<T>(acc);
                acc += v;
            } else {
                acc += v;
                y[at] = store<T>(acc);
            }
        }
    }
}

template <class T>
void launch_cumsum_as(const DeviceTensor& x, const DeviceTensor& y, Lines s, bool exclusive, bool reverse, cudaStream_t st) {
    const T* xp = static_cast<const T*>(x.data);
    T* yp = static_cast<T*>(y.data);
    if (s.inner == 1) {
        cumsum_rows<T><<<grid_for(s.outer * 32, kThreads), kThreads, 0, st>>>(xp, yp, s, exclusive, reverse);
        check_launch("cumsum_rows");
    } else {
        cumsum_columns<T><<<grid_for(s.outer * s.inner, kThreads), kThreads, 0, st>>>(xp, yp, s, exclusive, reverse);
        check_launch("cumsum_columns");
    }
}

}  // namespace

ROOFLINE_CUDA_OP(cumsum) {
    if (in.size() != 1 || out.size() != 1) return false;
    const DeviceTensor &x = in[0], &y = out[0];
    if (x.desc.dtype != y.desc.dtype || x.desc.numel() == 0) return x.desc.dtype == y.desc.dtype;
    const Lines s = lines_of(x.desc, normalize_axis(a.require_int("axis"), x.desc.rank()));
    const bool exclusive = a.get_bool("exclusive", false), reverse = a.get_bool("reverse", false);
    switch (x.desc.dtype) {
        case DType::f32: launch_cumsum_as<float>(x, y, s, exclusive, reverse, ctx.stream); return true;
        case DType::f16: launch_cumsum_as<__half>(x, y, s, exclusive, reverse, ctx.stream); return true;
        case DType::bf16: launch_cumsum_as<__nv_bfloat16>(x, y, s, exclusive, reverse, ctx.stream); return true;
        case DType::int32: launch_cumsum_as<std::int32_t>(x, y, s, exclusive, reverse, ctx.stream); return true;
        case DType::int64: launch_cumsum_as<long long>(x, y, s, exclusive, reverse, ctx.stream); return true;
        default: return false;
    }
}

}  // namespace roofline::cuda
