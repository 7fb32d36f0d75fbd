// The CUDA kernels of ops/defs/index_reduce.cpp, computing what its CPU reference computes:
//  - argmax/argmin: the tensor as [outer, n, inner] lines around the axis; one thread per line
//    walks it (neighbouring threads read neighbouring columns); ties keep the first index unless
//    select_last_index; int64 indices out.
//  - reduce_min/prod/l1/l2/sum_square over any axes: one warp per output element, its lanes
//    striding over the reduced elements (kept and reduced coordinates unravelled separately), a
//    shuffle reduction; f32 accumulation for f32, f16 and bf16.
//  - gather: one thread per output element copies data[outer, index[j], inner] (any element size).
//  - gather_grad: dx zeroed, then an f32 atomicAdd per dy element (into dx itself for f32, into an
//    f32 scratch buffer rounded once afterwards for f16 and bf16, as embedding_grad does).
#include <cuda_runtime.h>

#include <cstdint>
#include <limits>
#include <type_traits>

#include "ops/cuda/axis_lines.cuh"
#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/families.hpp"
#include "ops/cuda/launch_shape.hpp"
#include "ops/cuda/float_types.cuh"
#include "ops/error.hpp"

namespace roofline::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxRank = 8;

// ---- argmax / argmin ----

template <class T, bool Largest>
__global__ void __launch_bounds__(kThreads) arg_kernel(const T* __restrict__ x, long long* __restrict__ y, Lines s, bool last) {
    const std::int64_t columns = s.outer * s.inner;
    const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
    for (std::int64_t c = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < columns; c += stride) {
        const std::int64_t o = c / s.inner, i = c % s.inner;
        const T* line = x + o * s.n * s.inner + i;
        float best = load(line);
        long long at = 0;
        for (std::int64_t j = 1; j < s.n; ++j) {
            const float v = load(line + j * s.inner);
            const bool better = Largest ? (v > best || (last && v == best)) : (v < best || (last && v == best));
            if (better) best = v, at = j;
        }
        y[c] = at;
    }
}

template <bool Largest>
bool launch_arg(const Tensors& in, const Attrs& a, const Tensors& out, LaunchContext& ctx) {
    if (in.size() != 1 || out.size() != 1 || out[0].desc.dtype != DType::int64 || in[0].desc.rank() == 0) return false;
    const Lines s = lines_of(in[0].desc, normalize_axis(a.get_int("axis", 0), in[0].desc.rank()));
    const bool last = a.get_bool("select_last_index", false);
    return with_float_type(in[0].desc.dtype, [&](auto tag) {
        using T = decltype(tag);
        if (s.outer * s.inner == 0 || s.n == 0) return;
        arg_kernel<T, Largest><<<grid_for(s.outer * s.inner, kThreads), kThreads, 0, ctx.stream>>>(
            static_cast<const T*>(in[0].data), static_cast<long long*>(out[0].data), s, last);
        check_launch(Largest ? "argmax_kernel" : "argmin_kernel");
    });
}

// ---- reductions over any axes ----

enum class Combine { min, prod, l1, l2, sum_square };

// The kept and reduced axes of x, innermost last, with x's strides along them.
struct ReducePlan {
    int kept = 0, reduced = 0;
    std::int64_t kdim[kMaxRank] = {}, kstride[kMaxRank] = {}, rdim[kMaxRank] = {}, rstride[kMaxRank] = {};
    std::int64_t outputs = 1, count = 1;
};

bool plan_of(const TensorDesc& x, const Attrs& a, ReducePlan& p) {
    if (x.rank() > kMaxRank) return false;
    std::vector<bool> red(static_cast<std::size_t>(x.rank()), !a.has("axes"));
    for (std::int64_t ax : a.get_ints("axes", {})) red[static_cast<std::size_t>(normalize_axis(ax, x.rank()))] = true;
    std::int64_t stride = 1;
    std::int64_t st[kMaxRank] = {};
    for (std::int64_t d = x.rank(); d-- > 0;) {
        st[d] = stride;
        stride *= x.shape[static_cast<std::size_t>(d)];
    }
    for (std::int64_t d = 0; d < x.rank(); ++d) {
        const std::int64_t e = x.shape[static_cast<std::size_t>(d)];
        if (red[static_cast<std::size_t>(d)]) {
            p.rdim[p.reduced] = e, p.rstride[p.reduced] = st[d], ++p.reduced;
            p.count *= e;
        } else {
            p.kdim[p.kept] = e, p.kstride[p.kept] = st[d], ++p.kept;
            p.outputs *= e;
        }
    }
    return true;
}

__device__ std::int64_t offset_of(std::int64_t i, int n, const std::int64_t* dim, const std::int64_t* stride) {
    std::int64_t off = 0;
    for (int d = n - 1; d >= 0; --d) {
        off += (i % dim[d]) * stride[d];
        i /= dim[d];
    }
    return off;
}

template <Combine C>
__device__ __forceinline__ float identity() {
    if constexpr (C == Combine::min) return INFINITY;
    if constexpr (C == Combine::prod) return 1.f;
    return 0.f;
}
template <Combine C>
__device__ __forceinline__ float element(float x) {
    if constexpr (C == Combine::l1) return fabsf(x);
    if constexpr (C == Combine::l2 || C == Combine::sum_square) return x * x;
    return x;
}
template <Combine C>
__device__ __forceinline__ float combine(float a, float b) {
    if constexpr (C == Combine::min) return fminf(a, b);
    if constexpr (C == Combine::prod) return a * b;
    return a + b;
}

template <class T, Combine C>
__global__ void __launch_bounds__(kThreads) reduce_kernel(const T* __restrict__ x, T* __restrict__ y, ReducePlan p) {
    const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * (blockDim.x / 32);
    const int lane = static_cast<int>(threadIdx.x % 32);
    for (std::int64_t o = static_cast<std::int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32; o < p.outputs; o += warps) {
        const std::int64_t base = offset_of(o, p.kept, p.kdim, p.kstride);
        float acc = identity<C>();
        for (std::int64_t r = lane; r < p.count; r += 32)
            acc = combine<C>(acc, element<C>(load(x + base + offset_of(r, p.reduced, p.rdim, p.rstride))));
#pragma unroll
        for (int off = 16; off > 0; off /= 2) acc = combine<C>(acc, __shfl_xor_sync(0xffffffffu, acc, off));
        if (lane == 0) y[o] = store<T>(C == Combine::l2 ? sqrtf(acc) : acc);
    }
}

template <Combine C>
bool launch_reduction(const Tensors& in, const Attrs& a, const Tensors& out, LaunchContext& ctx, const char* name) {
    if (in.size() != 1 || out.size() != 1 || in[0].desc.dtype != out[0].desc.dtype) return false;
    ReducePlan p;
    if (!plan_of(in[0].desc, a, p)) return false;
    return with_float_type(in[0].desc.dtype, [&](auto tag) {
        using T = decltype(tag);
        if (p.outputs == 0) return;
        reduce_kernel<T, C><<<grid_for(p.outputs * 32, kThreads), kThreads, 0, ctx.stream>>>(static_cast<const T*>(in[0].data),
                                                                                             static_cast<T*>(out[0].data), p);
        check_launch(name);
    });
}

// ---- gather / gather_grad ----

template <class E, class I>
__global__ void __launch_bounds__(kThreads)
    gather_kernel(const E* __restrict__ data, const I* __restrict__ idx, E* __restrict__ y, Lines s, std::int64_t m) {
    const std::int64_t total = s.outer * m * s.inner;
    const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
    for (std::int64_t e = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += stride) {
        const std::int64_t i = e % s.inner, j = (e / s.inner) % m, o = e / (s.inner * m);
        std::int64_t row = static_cast<std::int64_t>(idx[j]);
        if (row < 0) row += s.n;
        y[e] = row >= 0 && row < s.n ? data[(o * s.n + row) * s.inner + i] : E{};
    }
}

template <class T, class I>
__global__ void __launch_bounds__(kThreads)
    gather_grad_kernel(const T* __restrict__ dy, const I* __restrict__ idx, float* __restrict__ acc, Lines s, std::int64_t m) {
    const std::int64_t total = s.outer * m * s.inner;
    const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
    for (std::int64_t e = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += stride) {
        const std::int64_t i = e % s.inner, j = (e / s.inner) % m, o = e / (s.inner * m);
        std::int64_t row = static_cast<std::int64_t>(idx[j]);
        if (row < 0) row += s.n;
        if (row >= 0 && row < s.n) atomicAdd(acc + (o * s.n + row) * s.inner + i, load(dy + e));
    }
}

template <class T>
__global__ void __launch_bounds__(kThreads) round_kernel(const float* __restrict__ acc, T* __restrict__ y, std::int64_t n) {
    const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
    for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) y[i] = store<T>(acc[i]);
}

template <class F>
bool index_types(DType d, F&& f) {
    switch (d) {
        case DType::int32: f(std::int32_t{}); return true;
        case DType::int64: f(static_cast<long long>(0)); return true;
        default: return false;
    }
}

}  // namespace

ROOFLINE_CUDA_OP(argmax) { return launch_arg<true>(in, a, out, ctx); }
ROOFLINE_CUDA_OP(argmin) { return launch_arg<false>(in, a, out, ctx); }
ROOFLINE_CUDA_OP(reduce_min) { return launch_reduction<Combine::min>(in, a, out, ctx, "reduce_min_kernel"); }
ROOFLINE_CUDA_OP(reduce_prod) { return launch_reduction<Combine::prod>(in, a, out, ctx, "reduce_prod_kernel"); }
ROOFLINE_CUDA_OP(reduce_l1) { return launch_reduction<Combine::l1>(in, a, out, ctx, "reduce_l1_kernel"); }
ROOFLINE_CUDA_OP(reduce_l2) { return launch_reduction<Combine::l2>(in, a, out, ctx, "reduce_l2_kernel"); }
ROOFLINE_CUDA_OP(reduce_sum_square) { return launch_reduction<Combine::sum_square>(in, a, out, ctx, "reduce_sum_square_kernel"); }

ROOFLINE_CUDA_OP(gather) {
    if (in.size() != 2 || out.size() != 1 || in[0].desc.dtype != out[0].desc.dtype || in[0].desc.rank() == 0) return false;
    const Lines s = lines_of(in[0].desc, normalize_axis(a.get_int("axis", 0), in[0].desc.rank()));
    const std::int64_t m = in[1].desc.numel(), total = out[0].desc.numel();
    const auto run = [&](auto elem) {
        using E = decltype(elem);
        return index_types(in[1].desc.dtype, [&](auto index) {
            using I = decltype(index);
            if (total == 0) return;
            gather_kernel<E, I><<<grid_for(total, kThreads), kThreads, 0, ctx.stream>>>(
                static_cast<const E*>(in[0].data), static_cast<const I*>(in[1].data), static_cast<E*>(out[0].data), s, m);
            check_launch("gather_kernel");
        });
    };
    switch (dtype_bytes(in[0].desc.dtype)) {  // a copy: any dtype by its element size
        case 1: return run(std::uint8_t{});
        case 2: return run(std::uint16_t{});
        case 4: return run(std::uint32_t{});
        case 8: return run(std::uint64_t{});
        default: return false;
    }
}

ROOFLINE_CUDA_OP(gather_grad) {
    if (in.size() != 2 || out.size() != 1 || in[0].desc.dtype != out[0].desc.dtype || out[0].desc.rank() == 0) return false;
    if (!is_index(in[1].desc.dtype)) return false;
    const Lines s = lines_of(out[0].desc, normalize_axis(a.get_int("axis", 0), out[0].desc.rank()));
    const std::int64_t m = in[1].desc.numel(), total = in[0].desc.numel(), n = out[0].desc.numel();
    return with_float_type(in[0].desc.dtype, [&](auto tag) {
        using T = decltype(tag);
        (void)index_types(in[1].desc.dtype, [&](auto index) {
            using I = decltype(index);
            float* acc = nullptr;
            if constexpr (std::is_same_v<T, float>) {
                acc = static_cast<float*>(out[0].data);
            } else {
                if (!ctx.scratch) throw InputError("gather_grad: the launch context has no scratch memory for the f32 accumulator");
                acc = static_cast<float*>(ctx.scratch(static_cast<std::size_t>(n) * sizeof(float)));
            }
            check(cudaMemsetAsync(acc, 0, static_cast<std::size_t>(n) * sizeof(float), ctx.stream), "gather_grad: cudaMemsetAsync");
            if (total > 0) {
                gather_grad_kernel<T, I><<<grid_for(total, kThreads), kThreads, 0, ctx.stream>>>(
                    static_cast<const T*>(in[0].data), static_cast<const I*>(in[1].data), acc, s, m);
                check_launch("gather_grad_kernel");
            }
            if constexpr (!std::is_same_v<T, float>) {
                if (n > 0) {
                    round_kernel<T><<<grid_for(n, kThreads), kThreads, 0, ctx.stream>>>(acc, static_cast<T*>(out[0].data), n);
                    check_launch("gather_grad_round_kernel");
                }
            }
        });
    });
}

}  // namespace roofline::cuda
