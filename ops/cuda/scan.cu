// CUDA kernel of the imported selection op, computing what ops/reference.cpp computes (cumsum's:
// ops/defs/cumsum.cu).
//
//  - topk along an axis (ONNX TopK: largest or smallest, sorted, ties to the lower index). One
//    block per line makes k rounds; round r reduces, over the whole line, the best element that
//    comes after round r-1's pick in the total order (value, then index), so each round is a
//    block-wide arg-best and k rounds cost k reads of the line (from L1/L2 after the first). Exact,
//    and cheap for the small k of sampling and routing (k <= 64); a radix select would be the
//    kernel for large k, which imported models do not use.
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "ops/cuda/axis_lines.cuh"
#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/families.hpp"
#include "ops/cuda/launch_shape.hpp"
#include "ops/error.hpp"
#include "ops/op_rule.hpp"

namespace roofline::cuda {
namespace {

constexpr int kThreads = 256;

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
        case OpKind::topk: return launch_topk(in[0], out, a, ctx);
        default: return false;
    }
}

}  // namespace roofline::cuda
