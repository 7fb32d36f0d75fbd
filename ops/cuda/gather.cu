// CUDA kernels of the imported index-mapping ops: slice, pad, resize, where and max/avg pool2d
// with their gradients, computing what ops/reference.cpp computes.
//
//  - slice, pad, resize (nearest): one gather kernel. Each output coordinate reads one input
//    element (or, for a constant pad outside the input, the pad value) whose index along every
//    axis is a function of that axis alone (ops/index_map.hpp, shared with the reference). One
//    thread per output element, dense coalesced writes, the element moved as raw bits of its
//    width (exact for every dtype); per-axis parameters in a kernel argument (up to 8 axes).
//  - resize (linear): per output element 2^r taps over the r resized axes, weights from the same
//    index map, accumulated in f32 (f32, f16, bf16).
//  - where: y = cond ? a : b with broadcasting (strides 0 along broadcast axes); cond any integer
//    dtype, a and b the output's dtype.
//  - max_pool2d, avg_pool2d over [N, C, H, W]: one thread per output element walks its window,
//    f32 accumulation; padding is -inf for max and excluded from the average unless
//    count_include_pad.
//  - max_pool2d_grad, avg_pool2d_grad: one thread per input-gradient element gathers from the
//    output windows that cover it (no atomics, so the sum order is fixed): max adds dy of every
//    window whose first maximum (recomputed from x, the reference's window order) is this element;
//    avg adds dy / count of every window holding it.
// Index math is 64-bit throughout: these ops are a small share of any model's time.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/families.hpp"
#include "ops/cuda/launch_shape.hpp"
#include "ops/error.hpp"
#include "ops/index_map.hpp"
#include "ops/op_rule.hpp"
#include "ops/reference.hpp"

namespace roofline::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxDims = 8;

enum class MapKind : int { slice, pad, nearest };

// Per output axis, innermost first.
struct AxisMap {
    int rank = 0;
    MapKind kind = MapKind::slice;
    PadMode pad = PadMode::constant;
    ResizeCoord coord = ResizeCoord::half_pixel;
    NearestMode nearest = NearestMode::round_prefer_floor;
    std::int64_t out[kMaxDims] = {};     // output extent
    std::int64_t in[kMaxDims] = {};      // input extent
    std::int64_t stride[kMaxDims] = {};  // input stride (elements)
    std::int64_t a[kMaxDims] = {};       // slice: start; pad: pad before
    std::int64_t b[kMaxDims] = {};       // slice: step
};

__device__ __forceinline__ std::int64_t axis_source(const AxisMap& m, int d, std::int64_t c) {
    switch (m.kind) {
        case MapKind::slice: return m.a[d] + c * m.b[d];
        case MapKind::pad: return pad_source(m.pad, c - m.a[d], m.in[d]);
        case MapKind::nearest:
            return m.in[d] == m.out[d] ? c : resize_nearest(m.nearest, resize_coordinate(m.coord, c, m.in[d], m.out[d]), m.in[d]);
    }
    return -1;
}

template <class E>
__global__ void __launch_bounds__(kThreads) gather_kernel(const E* __restrict__ x, E* __restrict__ y, AxisMap m, std::int64_t n, E fill) {
    const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
    for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
        std::int64_t rest = i, off = 0;
        bool inside = true;
#pragma unroll
        for (int d = 0; d < kMaxDims; ++d) {
            if (d == m.rank) break;
            const std::int64_t c = rest % m.out[d];
            rest /= m.out[d];
            const std::int64_t s = axis_source(m, d, c);
            inside = inside && s >= 0;
            off += s * m.stride[d];
        }
        y[i] = inside ? x[off] : fill;
    }
}

template <class T>
__device__ __forceinline__ float to_float(T v) {
    if constexpr (std::is_same_v<T, float>)
        return v;
    else if constexpr (std::is_same_v<T, __half>)
        return __half2float(v);
    else
        return __bfloat162float(v);
}

template <class T>
__device__ __forceinline__ T from_float(float v) {
    if constexpr (std::is_same_v<T, float>)
        return v;
    else if constexpr (std::is_same_v<T, __half>)
        return __float2half_rn(v);
    else
        return __float2bfloat16_rn(v);
}

template <class T>
__global__ void __launch_bounds__(kThreads) resize_linear_kernel(const T* __restrict__ x, T* __restrict__ y, AxisMap m, std::int64_t n) {
    const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
    for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
        std::int64_t lo[kMaxDims], hi[kMaxDims];
        double w[kMaxDims];
        int r = 0;
        std::int64_t rest = i, base = 0;
        for (int d = 0; d < m.rank; ++d) {
            const std::int64_t c = rest % m.out[d];
            rest /= m.out[d];
            if (m.in[d] == m.out[d]) {
                base += c * m.stride[d];
                continue;
            }
            const LinearTaps t = resize_linear(resize_coordinate(m.coord, c, m.in[d], m.out[d]), m.in[d]);
            lo[r] = t.lo * m.stride[d];
            hi[r] = t.hi * m.stride[d];
            w[r] = t.w;
            ++r;
        }
        float acc = 0.0f;
        for (int corner = 0; corner < (1 << r); ++corner) {
            double weight = 1.0;
            std::int64_t off = base;
            for (int k = 0; k < r; ++k) {
                const bool upper = (corner >> k) & 1;
                weight *= upper ? w[k] : 1.0 - w[k];
                off += upper ? hi[k] : lo[k];
            }
            if (weight != 0.0) acc += static_cast<float>(weight) * to_float(x[off]);
        }
        y[i] = from_float<T>(acc);
    }
}

// Broadcast strides of three inputs against the output, innermost first.
struct WhereMap {
    int rank = 0;
    std::int64_t out[kMaxDims] = {};
    std::int64_t s[3][kMaxDims] = {};
};

template <class C, class E>
__global__ void __launch_bounds__(kThreads) where_kernel(const C* __restrict__ cond, const E* __restrict__ a, const E* __restrict__ b,
                                                         E* __restrict__ y, WhereMap m, std::int64_t n) {
    const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
    for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
        std::int64_t rest = i, oc = 0, oa = 0, ob = 0;
        for (int d = 0; d < m.rank; ++d) {
            const std::int64_t c = rest % m.out[d];
            rest /= m.out[d];
            oc += c * m.s[0][d];
            oa += c * m.s[1][d];
            ob += c * m.s[2][d];
        }
        y[i] = cond[oc] != C(0) ? a[oa] : b[ob];
    }
}

struct PoolParams {
    std::int64_t n = 0, c = 0, h = 0, w = 0, oh = 0, ow = 0;
    int kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
    bool max = true, include_pad = false;
};

template <class T>
__global__ void __launch_bounds__(kThreads) pool2d_kernel(const T* __restrict__ x, T* __restrict__ y, PoolParams p) {
    const std::int64_t total = p.n * p.c * p.oh * p.ow;
    const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
    for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += step) {
        const std::int64_t ox = i % p.ow, oy = (i / p.ow) % p.oh, plane = i / (p.ow * p.oh);
        const T* xp = x + plane * p.h * p.w;
        float acc = p.max ? -INFINITY : 0.0f;
        int count = 0;
        const int dh = p.max ? p.dh : 1, dw = p.max ? p.dw : 1;
        for (int r = 0; r < p.kh; ++r) {
            const std::int64_t hh = oy * p.sh - p.ph + static_cast<std::int64_t>(r) * dh;
            for (int s = 0; s < p.kw; ++s) {
                const std::int64_t ww = ox * p.sw - p.pw + static_cast<std::int64_t>(s) * dw;
                const bool inside = hh >= 0 && hh < p.h && ww >= 0 && ww < p.w;
                const bool in_padded = hh < p.h + p.ph && ww < p.w + p.pw;  // ceil-mode windows may overhang
                if (inside) {
                    const float v = to_float(xp[hh * p.w + ww]);
                    acc = p.max ? fmaxf(acc, v) : acc + v;
                }
                if (inside || (p.include_pad && in_padded)) ++count;
            }
        }
        y[i] = from_float<T>(p.max ? acc : acc / static_cast<float>(count > 0 ? count : 1));
    }
}

// The output windows along one axis that can cover input position v: [lo, hi] (empty if lo > hi).
__device__ __forceinline__ void covering(std::int64_t v, int k, int s, int p, int d, std::int64_t outn, std::int64_t& lo,
                                         std::int64_t& hi) {
    const std::int64_t top = v + p, span = static_cast<std::int64_t>(k - 1) * d;
    lo = top - span <= 0 ? 0 : (top - span + s - 1) / s;
    hi = top / s;
    if (hi > outn - 1) hi = outn - 1;
}

template <class T>
__global__ void __launch_bounds__(kThreads)
    pool2d_grad_kernel(const T* __restrict__ x, const T* __restrict__ dy, T* __restrict__ dx, PoolParams p) {
    const std::int64_t total = p.n * p.c * p.h * p.w;
    const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
    const int dh = p.max ? p.dh : 1, dw = p.max ? p.dw : 1;
    for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += step) {
        const std::int64_t ix = i % p.w, iy = (i / p.w) % p.h, plane = i / (p.w * p.h);
        const T* xp = p.max ? x + plane * p.h * p.w : nullptr;
        const T* dyp = dy + plane * p.oh * p.ow;
        std::int64_t ylo, yhi, xlo, xhi;
        covering(iy, p.kh, p.sh, p.ph, dh, p.oh, ylo, yhi);
        covering(ix, p.kw, p.sw, p.pw, dw, p.ow, xlo, xhi);
        float acc = 0.0f;
        for (std::int64_t oy = ylo; oy <= yhi; ++oy)
            for (std::int64_t ox = xlo; ox <= xhi; ++ox) {
                // Does this window hold (iy, ix) at a tap, and what is it worth there?
                const std::int64_t ry = iy + p.ph - oy * p.sh, rx = ix + p.pw - ox * p.sw;
                if (ry % dh != 0 || rx % dw != 0) continue;
                float best = -INFINITY;
                std::int64_t best_at = -1;
                int count = 0;
                for (int r = 0; r < p.kh; ++r) {
                    const std::int64_t hh = oy * p.sh - p.ph + static_cast<std::int64_t>(r) * dh;
                    for (int s = 0; s < p.kw; ++s) {
                        const std::int64_t ww = ox * p.sw - p.pw + static_cast<std::int64_t>(s) * dw;
                        const bool inside = hh >= 0 && hh < p.h && ww >= 0 && ww < p.w;
                        const bool in_padded = hh < p.h + p.ph && ww < p.w + p.pw;
                        if (inside && p.max) {
                            const float v = to_float(xp[hh * p.w + ww]);
                            if (best_at < 0 || v > best) best = v, best_at = hh * p.w + ww;
                        }
                        if (inside || (p.include_pad && in_padded)) ++count;
                    }
                }
                const float g = to_float(dyp[oy * p.ow + ox]);
                if (p.max)
                    acc += best_at == iy * p.w + ix ? g : 0.0f;
                else
                    acc += g / static_cast<float>(count > 0 ? count : 1);
            }
        dx[i] = from_float<T>(acc);
    }
}

// ---------------------------------------------------------------------------------------------
// Host side

void require(OpKind k, const Tensors& in, std::size_t nin, const Tensors& out) {
    if (in.size() != nin || out.size() != 1)
        throw InputError(std::string(op_name(k)) + ": CUDA kernel got " + std::to_string(in.size()) + " inputs and " +
                         std::to_string(out.size()) + " outputs");
}

bool floating16or32(DType d) { return d == DType::f32 || d == DType::f16 || d == DType::bf16; }

// The map's shape part: output extents and input extents/strides, innermost first.
AxisMap axis_map(const TensorDesc& x, const TensorDesc& y, MapKind kind) {
    if (x.rank() != y.rank() || x.rank() > kMaxDims) return AxisMap{};
    AxisMap m;
    m.rank = static_cast<int>(x.rank());
    m.kind = kind;
    std::int64_t stride = 1;
    for (int d = 0; d < m.rank; ++d) {
        const auto src = static_cast<std::size_t>(m.rank - 1 - d);
        m.out[d] = y.shape[src];
        m.in[d] = x.shape[src];
        m.stride[d] = stride;
        stride *= x.shape[src];
    }
    return m;
}

// The pad value as the bits of an element of dtype d (E is as wide as d's elements; x86-64 and
// the GPU are little-endian, so E holds the low bytes).
template <class E>
E fill_bits(DType d, double v) {
    std::uint64_t bits = 0;
    if (d == DType::f32) {
        const float f = static_cast<float>(v);
        std::memcpy(&bits, &f, sizeof f);
    } else if (d == DType::f16) {
        const __half h = __float2half_rn(static_cast<float>(v));
        std::memcpy(&bits, &h, sizeof h);
    } else if (d == DType::bf16) {
        const __nv_bfloat16 h = __float2bfloat16_rn(static_cast<float>(v));
        std::memcpy(&bits, &h, sizeof h);
    } else {
        bits = static_cast<std::uint64_t>(static_cast<std::int64_t>(v));  // integer dtypes
    }
    E e{};
    std::memcpy(&e, &bits, sizeof e);
    return e;
}

template <class E>
void launch_gather_as(const DeviceTensor& x, const DeviceTensor& y, const AxisMap& m, double fill, cudaStream_t s) {
    const std::int64_t n = y.desc.numel();
    if (n == 0) return;
    gather_kernel<E><<<grid_for(n, kThreads), kThreads, 0, s>>>(static_cast<const E*>(x.data), static_cast<E*>(y.data), m, n,
                                                                fill_bits<E>(y.desc.dtype, fill));
    check_launch("gather_kernel");
}

bool launch_gather(const DeviceTensor& x, const DeviceTensor& y, const AxisMap& m, double fill, LaunchContext& ctx) {
    if (m.rank == 0 && x.desc.rank() != 0) return false;
    if (x.desc.dtype != y.desc.dtype) return false;
    switch (dtype_bytes(x.desc.dtype)) {
        case 1: launch_gather_as<std::uint8_t>(x, y, m, fill, ctx.stream); break;
        case 2: launch_gather_as<std::uint16_t>(x, y, m, fill, ctx.stream); break;
        case 4: launch_gather_as<std::uint32_t>(x, y, m, fill, ctx.stream); break;
        case 8: launch_gather_as<std::uint64_t>(x, y, m, fill, ctx.stream); break;
        default: return false;
    }
    return true;
}

template <class T>
void launch_linear_as(const DeviceTensor& x, const DeviceTensor& y, const AxisMap& m, cudaStream_t s) {
    const std::int64_t n = y.desc.numel();
    if (n == 0) return;
    resize_linear_kernel<T><<<grid_for(n, kThreads), kThreads, 0, s>>>(static_cast<const T*>(x.data), static_cast<T*>(y.data), m, n);
    check_launch("resize_linear_kernel");
}

bool launch_resize(const DeviceTensor& x, const DeviceTensor& y, const Attrs& a, LaunchContext& ctx) {
    const bool linear = a.get_string("mode", "nearest") == "linear";
    AxisMap m = axis_map(x.desc, y.desc, linear ? MapKind::slice : MapKind::nearest);
    if (m.rank == 0 && x.desc.rank() != 0) return false;
    m.coord = parse_resize_coord(a.get_string("coordinate_transformation_mode", "half_pixel"));
    m.nearest = parse_nearest_mode(a.get_string("nearest_mode", "round_prefer_floor"));
    if (!linear) return launch_gather(x, y, m, 0.0, ctx);
    if (x.desc.dtype != y.desc.dtype || !floating16or32(x.desc.dtype)) return false;
    switch (x.desc.dtype) {
        case DType::f32: launch_linear_as<float>(x, y, m, ctx.stream); break;
        case DType::f16: launch_linear_as<__half>(x, y, m, ctx.stream); break;
        default: launch_linear_as<__nv_bfloat16>(x, y, m, ctx.stream); break;
    }
    return true;
}

template <class C, class E>
void launch_where_as(const Tensors& in, const DeviceTensor& y, const WhereMap& m, cudaStream_t s) {
    const std::int64_t n = y.desc.numel();
    if (n == 0) return;
    where_kernel<C, E><<<grid_for(n, kThreads), kThreads, 0, s>>>(static_cast<const C*>(in[0].data), static_cast<const E*>(in[1].data),
                                                                  static_cast<const E*>(in[2].data), static_cast<E*>(y.data), m, n);
    check_launch("where_kernel");
}

template <class C>
bool launch_where_cond(const Tensors& in, const DeviceTensor& y, const WhereMap& m, cudaStream_t s) {
    switch (dtype_bytes(y.desc.dtype)) {
        case 1: launch_where_as<C, std::uint8_t>(in, y, m, s); return true;
        case 2: launch_where_as<C, std::uint16_t>(in, y, m, s); return true;
        case 4: launch_where_as<C, std::uint32_t>(in, y, m, s); return true;
        case 8: launch_where_as<C, std::uint64_t>(in, y, m, s); return true;
        default: return false;
    }
}

bool launch_where(const Tensors& in, const DeviceTensor& y, LaunchContext& ctx) {
    if (in[1].desc.dtype != y.desc.dtype || in[2].desc.dtype != y.desc.dtype || y.desc.rank() > kMaxDims) return false;
    WhereMap m;
    m.rank = static_cast<int>(y.desc.rank());
    for (int d = 0; d < m.rank; ++d) m.out[d] = y.desc.shape[static_cast<std::size_t>(m.rank - 1 - d)];
    for (int t = 0; t < 3; ++t) {
        const Shape& s = in[static_cast<std::size_t>(t)].desc.shape;
        const int r = static_cast<int>(s.size());
        std::int64_t stride = 1;
        for (int d = 0; d < r; ++d) {  // numpy broadcasting: aligned at the innermost axis
            const std::int64_t extent = s[static_cast<std::size_t>(r - 1 - d)];
            m.s[t][d] = extent == 1 ? 0 : stride;
            stride *= extent;
        }
    }
    switch (in[0].desc.dtype) {
        case DType::u8: return launch_where_cond<std::uint8_t>(in, y, m, ctx.stream);
        case DType::int8: return launch_where_cond<std::int8_t>(in, y, m, ctx.stream);
        case DType::int32: return launch_where_cond<std::int32_t>(in, y, m, ctx.stream);
        case DType::int64: return launch_where_cond<long long>(in, y, m, ctx.stream);
        default: return false;
    }
}

template <class T>
void launch_pool_as(const DeviceTensor& x, const DeviceTensor& y, const PoolParams& p, cudaStream_t s) {
    const std::int64_t n = y.desc.numel();
    if (n == 0) return;
    pool2d_kernel<T><<<grid_for(n, kThreads), kThreads, 0, s>>>(static_cast<const T*>(x.data), static_cast<T*>(y.data), p);
    check_launch("pool2d_kernel");
}

template <class T>
void launch_pool_grad_as(const DeviceTensor* x, const DeviceTensor& dy, const DeviceTensor& dx, const PoolParams& p, cudaStream_t s) {
    const std::int64_t n = dx.desc.numel();
    if (n == 0) return;
    pool2d_grad_kernel<T><<<grid_for(n, kThreads), kThreads, 0, s>>>(x ? static_cast<const T*>(x->data) : nullptr,
                                                                     static_cast<const T*>(dy.data), static_cast<T*>(dx.data), p);
    check_launch("pool2d_grad_kernel");
}

// The pooling of input (or input gradient) `x` [N, C, H, W] to output (or output gradient) `y`.
PoolParams pool_params(const TensorDesc& x, const TensorDesc& y, const Attrs& a, bool max) {
    const auto pair = [&](const char* name, std::int64_t f) { return a.get_ints(name, {f, f}); };
    const auto kernel = pair("kernel", 1), stride = pair("stride", 1), pad = pair("padding", 0), dil = pair("dilation", 1);
    PoolParams p;
    p.n = x.shape[0], p.c = x.shape[1], p.h = x.shape[2], p.w = x.shape[3];
    p.oh = y.shape[2], p.ow = y.shape[3];
    p.kh = static_cast<int>(kernel[0]), p.kw = static_cast<int>(kernel[1]);
    p.sh = static_cast<int>(stride[0]), p.sw = static_cast<int>(stride[1]);
    p.ph = static_cast<int>(pad[0]), p.pw = static_cast<int>(pad[1]);
    p.dh = static_cast<int>(dil[0]), p.dw = static_cast<int>(dil[1]);
    p.max = max;
    p.include_pad = a.get_bool("count_include_pad", false);
    return p;
}

bool launch_pool(OpKind k, const DeviceTensor& x, const DeviceTensor& y, const Attrs& a, LaunchContext& ctx) {
    if (x.desc.rank() != 4 || y.desc.rank() != 4 || x.desc.dtype != y.desc.dtype || !floating16or32(x.desc.dtype)) return false;
    const PoolParams p = pool_params(x.desc, y.desc, a, k == OpKind::max_pool2d);
    switch (x.desc.dtype) {
        case DType::f32: launch_pool_as<float>(x, y, p, ctx.stream); break;
        case DType::f16: launch_pool_as<__half>(x, y, p, ctx.stream); break;
        default: launch_pool_as<__nv_bfloat16>(x, y, p, ctx.stream); break;
    }
    return true;
}

// max_pool2d_grad(x, dy) -> dx; avg_pool2d_grad(dy) -> dx.
bool launch_pool_grad(OpKind k, const Tensors& in, const DeviceTensor& dx, const Attrs& a, LaunchContext& ctx) {
    const bool max = k == OpKind::max_pool2d_grad;
    const DeviceTensor* x = max ? &in[0] : nullptr;
    const DeviceTensor& dy = in[max ? 1 : 0];
    if (dy.desc.rank() != 4 || dx.desc.rank() != 4 || dy.desc.dtype != dx.desc.dtype || !floating16or32(dx.desc.dtype)) return false;
    if (x && (x->desc.shape != dx.desc.shape || x->desc.dtype != dx.desc.dtype)) return false;
    const PoolParams p = pool_params(dx.desc, dy.desc, a, max);
    switch (dx.desc.dtype) {
        case DType::f32: launch_pool_grad_as<float>(x, dy, dx, p, ctx.stream); break;
        case DType::f16: launch_pool_grad_as<__half>(x, dy, dx, p, ctx.stream); break;
        default: launch_pool_grad_as<__nv_bfloat16>(x, dy, dx, p, ctx.stream); break;
    }
    return true;
}

}  // namespace

bool launch_gather_family(OpKind k, const Tensors& in, const Attrs& a, const Tensors& out, LaunchContext& ctx) {
    switch (k) {
        case OpKind::slice: {
            require(k, in, 1, out);
            AxisMap m = axis_map(in[0].desc, out[0].desc, MapKind::slice);
            const auto plan = slice_plan(in[0].desc, a);
            for (int d = 0; d < m.rank; ++d) {
                const auto& p = plan[static_cast<std::size_t>(m.rank - 1 - d)];
                m.a[d] = p[0];
                m.b[d] = p[1];
            }
            return launch_gather(in[0], out[0], m, 0.0, ctx);
        }
        case OpKind::pad: {
            require(k, in, 1, out);
            AxisMap m = axis_map(in[0].desc, out[0].desc, MapKind::pad);
            const auto plan = pad_plan(in[0].desc, a);
            m.pad = parse_pad_mode(a.get_string("mode", "constant"));
            for (int d = 0; d < m.rank; ++d) m.a[d] = plan[static_cast<std::size_t>(m.rank - 1 - d)][0];
            return launch_gather(in[0], out[0], m, round_to(a.get_double("value", 0.0), out[0].desc.dtype), ctx);
        }
        case OpKind::resize: require(k, in, 1, out); return launch_resize(in[0], out[0], a, ctx);
        case OpKind::where: require(k, in, 3, out); return launch_where(in, out[0], ctx);
        case OpKind::max_pool2d:
        case OpKind::avg_pool2d: require(k, in, 1, out); return launch_pool(k, in[0], out[0], a, ctx);
        case OpKind::max_pool2d_grad: require(k, in, 2, out); return launch_pool_grad(k, in, out[0], a, ctx);
        case OpKind::avg_pool2d_grad: require(k, in, 1, out); return launch_pool_grad(k, in, out[0], a, ctx);
        default: return false;
    }
}

}  // namespace roofline::cuda
