// The CUDA kernels of ops/defs/activations.cpp (leaky_relu, elu, prelu, trilu and the gradients),
// computing what its CPU reference computes: one grid-stride pass over the elements, f32
// arithmetic for f32, f16 and bf16 (trilu, a select, also copies int32 and int64).
#include <cuda_runtime.h>

#include <cstdint>

#include "ops/cuda/axis_lines.cuh"
#include "ops/cuda/broadcast.cuh"
#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/families.hpp"
#include "ops/cuda/launch_shape.hpp"
#include "ops/cuda/float_types.cuh"

namespace roofline::cuda {
namespace {

constexpr int kThreads = 256;

struct LeakyOp {
    float alpha;
    __device__ float operator()(float x) const { return x > 0.f ? x : alpha * x; }
};
struct LeakyGradOp {
    float alpha;
    __device__ float operator()(float dy, float x) const { return x > 0.f ? dy : alpha * dy; }
};
struct EluOp {
    float alpha, scale, input_scale;
    __device__ float operator()(float x) const { return x > 0.f ? scale * x : scale * alpha * (expf(input_scale * x) - 1.f); }
};
struct EluGradOp {
    float alpha, scale, input_scale;
    __device__ float operator()(float dy, float x) const {
        return x > 0.f ? scale * dy : dy * input_scale * alpha * scale * expf(input_scale * x);
    }
};

template <class T, class Op>
__global__ void __launch_bounds__(kThreads) map1(const T* __restrict__ x, T* __restrict__ y, std::int64_t n, Op op) {
    const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
    for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
        y[i] = store<T>(op(load(x + i)));
}

template <class T, class Op>
__global__ void __launch_bounds__(kThreads)
    map2(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ y, std::int64_t n, Op op) {
    const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
    for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
        y[i] = store<T>(op(load(a + i), load(b + i)));
}

// The slope read broadcast to x (ops/cuda/broadcast.cuh).
template <class T>
__global__ void __launch_bounds__(kThreads)
    prelu_kernel(const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ y, std::int64_t n, Broadcast b) {
    const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
    for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float v = load(x + i);
        y[i] = store<T>(v > 0.f ? v : load(w + broadcast_offset(b, i)) * v);
    }
}

template <class T>
__global__ void __launch_bounds__(kThreads) prelu_grad_kernel(const T* __restrict__ dy, const T* __restrict__ x, const T* __restrict__ w,
                                                              T* __restrict__ dx, T* __restrict__ dw, std::int64_t n, Broadcast b) {
    const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
    for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float g = load(dy + i), v = load(x + i);
        dx[i] = store<T>(v > 0.f ? g : load(w + broadcast_offset(b, i)) * g);
        dw[i] = store<T>(v > 0.f ? 0.f : v * g);
    }
}

template <class T>
__global__ void __launch_bounds__(kThreads) trilu_kernel(const T* __restrict__ x, T* __restrict__ y, std::int64_t n, std::int64_t rows,
                                                         std::int64_t cols, std::int64_t k, bool upper) {
    const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
    for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
        const std::int64_t diff = i % cols - (i / cols) % rows;
        y[i] = (upper ? diff >= k : diff <= k) ? x[i] : store<T>(Acc<T>(0));
    }
}

bool same_dtypes(const Tensors& in, const Tensors& out) {
    for (const DeviceTensor& t : in)
        if (t.desc.dtype != in[0].desc.dtype) return false;
    for (const DeviceTensor& t : out)
        if (t.desc.dtype != in[0].desc.dtype) return false;
    return true;
}

template <class Op>
bool launch_map1(const Tensors& in, const Tensors& out, Op op, LaunchContext& ctx, const char* name) {
    if (in.size() != 1 || out.size() != 1 || !same_dtypes(in, out)) return false;
    const std::int64_t n = out[0].desc.numel();
    return with_float_type(in[0].desc.dtype, [&](auto tag) {
        using T = decltype(tag);
        if (n == 0) return;
        map1<T><<<grid_for(n, kThreads), kThreads, 0, ctx.stream>>>(static_cast<const T*>(in[0].data), static_cast<T*>(out[0].data), n, op);
        check_launch(name);
    });
}

template <class Op>
bool launch_map2(const Tensors& in, const Tensors& out, Op op, LaunchContext& ctx, const char* name) {
    if (in.size() != 2 || out.size() != 1 || !same_dtypes(in, out)) return false;
    const std::int64_t n = out[0].desc.numel();
    return with_float_type(in[0].desc.dtype, [&](auto tag) {
        using T = decltype(tag);
        if (n == 0) return;
        map2<T><<<grid_for(n, kThreads), kThreads, 0, ctx.stream>>>(static_cast<const T*>(in[0].data), static_cast<const T*>(in[1].data),
                                                                    static_cast<T*>(out[0].data), n, op);
        check_launch(name);
    });
}

}  // namespace

ROOFLINE_CUDA_OP(leaky_relu) { return launch_map1(in, out, LeakyOp{static_cast<float>(a.get_double("alpha", 0.01))}, ctx, "leaky_relu"); }

ROOFLINE_CUDA_OP(leaky_relu_grad) {
    return launch_map2(in, out, LeakyGradOp{static_cast<float>(a.get_double("alpha", 0.01))}, ctx, "leaky_relu_grad");
}

ROOFLINE_CUDA_OP(elu) {
    const EluOp op{static_cast<float>(a.get_double("alpha", 1.0)), static_cast<float>(a.get_double("scale", 1.0)),
                   static_cast<float>(a.get_double("input_scale", 1.0))};
    return launch_map1(in, out, op, ctx, "elu");
}

ROOFLINE_CUDA_OP(elu_grad) {
    const EluGradOp op{static_cast<float>(a.get_double("alpha", 1.0)), static_cast<float>(a.get_double("scale", 1.0)),
                       static_cast<float>(a.get_double("input_scale", 1.0))};
    return launch_map2(in, out, op, ctx, "elu_grad");
}

ROOFLINE_CUDA_OP(prelu) {
    if (in.size() != 2 || out.size() != 1 || !same_dtypes(in, out)) return false;
    Broadcast b;
    if (!broadcast_of(in[0].desc.shape, in[1].desc.shape, b)) return false;
    const std::int64_t n = out[0].desc.numel();
    return with_float_type(in[0].desc.dtype, [&](auto tag) {
        using T = decltype(tag);
        if (n == 0) return;
        prelu_kernel<T><<<grid_for(n, kThreads), kThreads, 0, ctx.stream>>>(
            static_cast<const T*>(in[0].data), static_cast<const T*>(in[1].data), static_cast<T*>(out[0].data), n, b);
        check_launch("prelu_kernel");
    });
}

ROOFLINE_CUDA_OP(prelu_grad) {
    if (in.size() != 3 || out.size() != 2 || !same_dtypes(in, out)) return false;
    Broadcast b;
    if (!broadcast_of(in[1].desc.shape, in[2].desc.shape, b)) return false;
    const std::int64_t n = out[0].desc.numel();
    return with_float_type(in[0].desc.dtype, [&](auto tag) {
        using T = decltype(tag);
        if (n == 0) return;
        prelu_grad_kernel<T><<<grid_for(n, kThreads), kThreads, 0, ctx.stream>>>(
            static_cast<const T*>(in[0].data), static_cast<const T*>(in[1].data), static_cast<const T*>(in[2].data),
            static_cast<T*>(out[0].data), static_cast<T*>(out[1].data), n, b);
        check_launch("prelu_grad_kernel");
    });
}

ROOFLINE_CUDA_OP(trilu) {
    if (in.size() != 1 || out.size() != 1 || !same_dtypes(in, out) || in[0].desc.rank() < 2) return false;
    const Shape& s = in[0].desc.shape;
    const std::int64_t n = out[0].desc.numel(), rows = s[s.size() - 2], cols = s[s.size() - 1], k = a.get_int("k", 0);
    const bool upper = a.get_bool("upper", true);
    const auto run = [&](auto tag) {
        using T = decltype(tag);
        if (n == 0) return;
        trilu_kernel<T><<<grid_for(n, kThreads), kThreads, 0, ctx.stream>>>(static_cast<const T*>(in[0].data), static_cast<T*>(out[0].data),
                                                                            n, rows, cols, k, upper);
        check_launch("trilu_kernel");
    };
    switch (in[0].desc.dtype) {
        case DType::int32: run(std::int32_t{}); return true;
        case DType::int64: run(static_cast<long long>(0)); return true;
        default: return with_float_type(in[0].desc.dtype, run);
    }
}

}  // namespace roofline::cuda
