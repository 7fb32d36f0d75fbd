// CUDA kernels of the imported scan and selection ops, computing what ops/reference.cpp computes.
//
//  - cumsum along an axis (ONNX CumSum: exclusive, reverse). A tensor is seen as [outer, n, inner]
//    around the axis. With inner = 1 (the scanned axis innermost, the usual case) one warp scans a
//    line in chunks of 32: coalesced loads, a shuffle scan per chunk and the running total carried
//    across chunks. Otherwise one thread per (outer, inner) column walks the axis; neighbouring
//    threads read neighbouring columns, so loads are coalesced too. Floating inputs accumulate in
//    f32, integers in 64 bits.
//  - topk along an axis (ONNX TopK: largest or smallest, sorted, ties to the lower index). One
//    block per line makes k rounds; round r reduces, over the whole line, the best element that
//    comes after round r-1's pick in the total order (value, then index), so each round is a
//    block-wide arg-best and k rounds cost k reads of the line (from L1/L2 after the first). Exact,
//    and cheap for the small k of sampling and routing (k <= 64); a radix select would be the
//    kernel for large k, which imported models do not use.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/families.hpp"
#include "ops/cuda/launch_shape.hpp"
#include "ops/error.hpp"
#include "ops/op_rule.hpp"

namespace roofline::cuda {
namespace {

constexpr int kThreads = 256;

// The accumulator and comparison key of an element type: float for the floating types, 64-bit
// integers for the integer ones.
template <class T>
using Acc = std::conditional_t<std::is_integral_v<T>, long long, float>;

template <class T>
__device__ __forceinline__ Acc<T> load(const T* p) {
    if constexpr (std::is_same_v<T, __half>)
        return __half2float(*p);
    else if constexpr (std::is_same_v<T, __nv_bfloat16>)
        return __bfloat162float(*p);
    else
        return static_cast<Acc<T>>(*p);
}

template <class T>
__device__ __forceinline__ T store(Acc<T> v) {
    if constexpr (std::is_same_v<T, __half>)
        return __float2half_rn(v);
    else if constexpr (std::is_same_v<T, __nv_bfloat16>)
        return __float2bfloat16_rn(v);
    else
        return static_cast<T>(v);
}

struct Lines {
    std::int64_t outer = 1, n = 1, inner = 1;
};

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

// Does (va, ia) come before (vb, ib) in topk's output order? Larger (or smaller) value first,
// the lower index first among equal values.
__device__ __forceinline__ bool before(float va, std::int64_t ia, float vb, std::int64_t ib, bool largest) {
    if (va != vb) return largest ? va > vb : va < vb;
    return ia < ib;
}

template <class T>
__global__ void __launch_bounds__(kThreads)
    topk_lines(const T* __restrict__ x, T* __restrict__ values, long long* __restrict__ indices, Lines s, std::int64_t k, bool largest) {
    __shared__ float best_v[kThreads];
    __shared__ std::int64_t best_i[kThreads];
    const std::int64_t line = blockIdx.x;
    const std::int64_t o = line / s.inner, i = line % s.inner;
    const auto at = [&](std::int64_t j) { return (o * s.n + j) * s.inner + i; };
    float prev_v = 0;
    std::int64_t prev_i = -1;
    for (std::int64_t r = 0; r < k; ++r) {
        float bv = 0;
        std::int64_t bi = -1;
        for (std::int64_t j = threadIdx.x; j < s.n; j += blockDim.x) {
            const float v = load(x + at(j));
            if (prev_i >= 0 && !before(prev_v, prev_i, v, j, largest)) continue;  // taken in an earlier round
            if (bi < 0 || before(v, j, bv, bi, largest)) bv = v, bi = j;
        }
        best_v[threadIdx.x] = bv;
        best_i[threadIdx.x] = bi;
        __syncthreads();
        for (int half = blockDim.x / 2; half > 0; half /= 2) {
            if (static_cast<int>(threadIdx.x) < half) {
                const float ov = best_v[threadIdx.x + half];
                const std::int64_t oi = best_i[threadIdx.x + half];
                if (oi >= 0 && (best_i[threadIdx.x] < 0 || before(ov, oi, best_v[threadIdx.x], best_i[threadIdx.x], largest))) {
                    best_v[threadIdx.x] = ov;
                    best_i[threadIdx.x] = oi;
                }
            }
            __syncthreads();
        }
        prev_v = best_v[0];
        prev_i = best_i[0];
        if (threadIdx.x == 0) {
            const std::int64_t out = (o * k + r) * s.inner + i;
            values[out] = x[at(prev_i)];
            indices[out] = prev_i;
        }
        __syncthreads();  // best_* are rewritten by the next round
    }
}

Lines lines_of(const TensorDesc& d, std::int64_t axis) {
    Lines s;
    for (std::int64_t a = 0; a < d.rank(); ++a) {
        const std::int64_t e = d.shape[static_cast<std::size_t>(a)];
        if (a < axis) s.outer *= e;
        if (a == axis) s.n = e;
        if (a > axis) s.inner *= e;
    }
    return s;
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

bool launch_cumsum(const DeviceTensor& x, const DeviceTensor& y, const Attrs& a, LaunchContext& ctx) {
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

template <class T>
void launch_topk_as(const DeviceTensor& x, const Tensors& out, Lines s, std::int64_t k, bool largest, cudaStream_t st) {
    topk_lines<T><<<static_cast<unsigned>(s.outer * s.inner), kThreads, 0, st>>>(
        static_cast<const T*>(x.data), static_cast<T*>(out[0].data), static_cast<long long*>(out[1].data), s, k, largest);
    check_launch("topk_lines");
}

bool launch_topk(const DeviceTensor& x, const Tensors& out, const Attrs& a, LaunchContext& ctx) {
    if (out.size() != 2 || out[0].desc.dtype != x.desc.dtype || out[1].desc.dtype != DType::int64) return false;
    const Lines s = lines_of(x.desc, normalize_axis(a.get_int("axis", -1), x.desc.rank()));
    const std::int64_t k = a.require_int("k");
    const bool largest = a.get_bool("largest", true);
    if (s.outer * s.inner == 0) return true;
    if (s.outer * s.inner > 0x7fffffff) return false;
    switch (x.desc.dtype) {
        case DType::f32: launch_topk_as<float>(x, out, s, k, largest, ctx.stream); return true;
        case DType::f16: launch_topk_as<__half>(x, out, s, k, largest, ctx.stream); return true;
        case DType::bf16: launch_topk_as<__nv_bfloat16>(x, out, s, k, largest, ctx.stream); return true;
        default: return false;
    }
}

}  // namespace

bool launch_scan_family(OpKind k, const Tensors& in, const Attrs& a, const Tensors& out, LaunchContext& ctx) {
    if (in.size() != 1) return false;
    switch (k) {
        case OpKind::cumsum: return out.size() == 1 && launch_cumsum(in[0], out[0], a, ctx);
        case OpKind::topk: return launch_topk(in[0], out, a, ctx);
        default: return false;
    }
}

}  // namespace roofline::cuda
