// CUDA kernels of the pointwise family: unary activations, scale, shift, pow, binary arithmetic with numpy
// broadcasting, unary_grad, maximum_grad, dropout, dropout_grad, causal_mask, cast, fill, expand,
// sgd_update and adam_update. Each computes what ops/reference.cpp computes, in float: tensors are
// loaded as float (f32, f16, bf16; integer tensors where an op takes them), the op is evaluated in
// float, and results are stored in the output's dtype with round-to-nearest-even.
//
// Launch shapes, as production elementwise kernels do:
//  - contiguous operands (same shape, or broadcasts that collapse to it): pointwise_contiguous_kernel,
//    256 threads, a grid-stride loop over chunks of 8 elements loaded and stored as 16-byte vectors
//    (two float4 for f32, one uint4 for 8 halves, 8 bytes for u8 masks) when every pointer is 16-byte
//    aligned, then a scalar tail; grid capped at the blocks per SM that fit at once (at most 8).
//  - row/column broadcasts (after collapsing dims, each input is full, a row vector such as a bias,
//    one value per row, or a scalar): pointwise_rowcol_kernel, the same 8-element vectors with one
//    32-bit division per vector (64-bit from 2^31 elements on) when rows are a multiple of 8 long.
//  - other broadcasts: pointwise_broadcast_kernel, one element per thread per step, its input
//    offsets from the output index over up to 8 collapsed dims (stride 0 on broadcast dims),
//    32-bit index math when the output has fewer than 2^31 elements.
//  - causal_mask: causal_mask_kernel, 8-element vectors with row and column once per vector;
//    vectors wholly above the diagonal are stored without reading the input.
// Every op is a small functor with a runtime op-code where several kinds share one (unary, binary),
// so there is one kernel instantiation per functor and none per dtype: dtypes are runtime codes
// switched on per 8-element chunk (warp-uniform branches), and op-codes once per chunk (vec8).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/families.hpp"
#include "ops/cuda/launch_shape.hpp"
#include "ops/error.hpp"
#include "ops/op_rule.hpp"
#include "ops/pointwise_math.hpp"

namespace roofline::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kVec = 8;      // elements per thread per vector step
constexpr int kMaxDims = 8;  // broadcast index math, after collapsing dims
constexpr int kMaxIn = 4;    // adam_update reads 4 tensors
constexpr int kMaxOut = 3;   // and writes 3

// ---------------------------------------------------------------------------------------------
// dtypes as runtime codes
enum Dt : int { dt_f32, dt_f16, dt_bf16, dt_u8, dt_i8, dt_i32, dt_i64, dt_none };

int dt_code(DType d) {
    switch (d) {
        case DType::f32: return dt_f32;
        case DType::f16: return dt_f16;
        case DType::bf16: return dt_bf16;
        case DType::u8: return dt_u8;
        case DType::int8: return dt_i8;
        case DType::int32: return dt_i32;
        case DType::int64: return dt_i64;
        default: return dt_none;  // f64, tf32, fp8: no device kernels
    }
}

bool is_float_dt(DType d) {
    const int c = dt_code(d);
    return c == dt_f32 || c == dt_f16 || c == dt_bf16;
}

bool is_int_dt(DType d) {
    const int c = dt_code(d);
    return c == dt_u8 || c == dt_i8 || c == dt_i32 || c == dt_i64;
}

__device__ __forceinline__ float half_bits_to_float(unsigned short b) { return __half2float(__ushort_as_half(b)); }
__device__ __forceinline__ float bf16_bits_to_float(unsigned short b) { return __uint_as_float(static_cast<unsigned>(b) << 16); }
__device__ __forceinline__ unsigned short float_to_half_bits(float v) { return __half_as_ushort(__float2half_rn(v)); }
__device__ __forceinline__ unsigned short float_to_bf16_bits(float v) { return __bfloat16_as_ushort(__float2bfloat16_rn(v)); }

__device__ __forceinline__ float load1(const void* p, int dt, std::int64_t i) {
    switch (dt) {
        case dt_f32: return static_cast<const float*>(p)[i];
        case dt_f16: return half_bits_to_float(static_cast<const unsigned short*>(p)[i]);
        case dt_bf16: return bf16_bits_to_float(static_cast<const unsigned short*>(p)[i]);
        case dt_u8: return static_cast<float>(static_cast<const unsigned char*>(p)[i]);
        case dt_i8: return static_cast<float>(static_cast<const signed char*>(p)[i]);
        case dt_i32: return static_cast<float>(static_cast<const int*>(p)[i]);  // round to nearest
        default: return static_cast<float>(static_cast<const long long*>(p)[i]);
    }
}

// Integers round half to even (as std::nearbyint in the reference's round_to).
__device__ __forceinline__ void store1(void* p, int dt, std::int64_t i, float v) {
    switch (dt) {
        case dt_f32: static_cast<float*>(p)[i] = v; break;
        case dt_f16: static_cast<unsigned short*>(p)[i] = float_to_half_bits(v); break;
        case dt_bf16: static_cast<unsigned short*>(p)[i] = float_to_bf16_bits(v); break;
        case dt_u8: static_cast<unsigned char*>(p)[i] = static_cast<unsigned char>(__float2int_rn(v)); break;
        case dt_i8: static_cast<signed char*>(p)[i] = static_cast<signed char>(__float2int_rn(v)); break;
        case dt_i32: static_cast<int*>(p)[i] = __float2int_rn(v); break;
        default: static_cast<long long*>(p)[i] = __float2ll_rn(v); break;
    }
}

// Elements i .. i+7, i a multiple of 8, p 16-byte aligned.
__device__ __forceinline__ void load8(const void* p, int dt, std::int64_t i, float (&v)[kVec]) {
    switch (dt) {
        case dt_f32: {
            const float4* q = reinterpret_cast<const float4*>(static_cast<const float*>(p) + i);
            const float4 a = q[0], b = q[1];
            v[0] = a.x;
            v[1] = a.y;
            v[2] = a.z;
            v[3] = a.w;
            v[4] = b.x;
            v[5] = b.y;
            v[6] = b.z;
            v[7] = b.w;
            return;
        }
        case dt_f16:
        case dt_bf16: {
            const uint4 r = *reinterpret_cast<const uint4*>(static_cast<const unsigned short*>(p) + i);
            const unsigned w[4] = {r.x, r.y, r.z, r.w};
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                const auto lo = static_cast<unsigned short>(w[k] & 0xffffu), hi = static_cast<unsigned short>(w[k] >> 16);
                v[2 * k] = dt == dt_f16 ? half_bits_to_float(lo) : bf16_bits_to_float(lo);
                v[2 * k + 1] = dt == dt_f16 ? half_bits_to_float(hi) : bf16_bits_to_float(hi);
            }
            return;
        }
        case dt_u8:
        case dt_i8: {
            const uint2 r = *reinterpret_cast<const uint2*>(static_cast<const unsigned char*>(p) + i);
#pragma unroll
            for (int k = 0; k < kVec; ++k) {
                const unsigned byte = ((k < 4 ? r.x : r.y) >> (8 * (k % 4))) & 0xffu;
                v[k] = dt == dt_u8 ? static_cast<float>(byte) : static_cast<float>(static_cast<signed char>(byte));
            }
            return;
        }
        default:
#pragma unroll
            for (int k = 0; k < kVec; ++k) v[k] = load1(p, dt, i + k);
            return;
    }
}

__device__ __forceinline__ void store8(void* p, int dt, std::int64_t i, const float (&v)[kVec]) {
    switch (dt) {
        case dt_f32: {
            float4* q = reinterpret_cast<float4*>(static_cast<float*>(p) + i);
            q[0] = make_float4(v[0], v[1], v[2], v[3]);
            q[1] = make_float4(v[4], v[5], v[6], v[7]);
            return;
        }
        case dt_f16:
        case dt_bf16: {
            unsigned w[4];
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                const unsigned lo = dt == dt_f16 ? float_to_half_bits(v[2 * k]) : float_to_bf16_bits(v[2 * k]);
                const unsigned hi = dt == dt_f16 ? float_to_half_bits(v[2 * k + 1]) : float_to_bf16_bits(v[2 * k + 1]);
                w[k] = lo | (hi << 16);
            }
            *reinterpret_cast<uint4*>(static_cast<unsigned short*>(p) + i) = make_uint4(w[0], w[1], w[2], w[3]);
            return;
        }
        case dt_u8:
        case dt_i8: {
            unsigned w[2] = {0, 0};
#pragma unroll
            for (int k = 0; k < kVec; ++k) w[k / 4] |= (static_cast<unsigned>(__float2int_rn(v[k])) & 0xffu) << (8 * (k % 4));
            *reinterpret_cast<uint2*>(static_cast<unsigned char*>(p) + i) = make_uint2(w[0], w[1]);
            return;
        }
        default:
#pragma unroll
            for (int k = 0; k < kVec; ++k) store1(p, dt, i + k, v[k]);
            return;
    }
}

// ---------------------------------------------------------------------------------------------
// Operands of one launch and, for broadcasting, their strides over the collapsed output dims.
struct EwArgs {
    const void* in[kMaxIn] = {};
    void* out[kMaxOut] = {};
    int in_dt[kMaxIn] = {};
    int out_dt[kMaxOut] = {};
    int nin = 0, nout = 0;
};

struct Layout {
    int rank = 0;  // collapsed dims, innermost first
    std::int64_t shape[kMaxDims] = {};
    std::int64_t stride[kMaxIn][kMaxDims] = {};  // elements; 0 on broadcast dims
};

// ---------------------------------------------------------------------------------------------
// Per-element ops. operator() gets the flat output index, the loaded inputs and writes outputs.

// Ops with a vec8 member get a whole 8-element vector at once (kernels call it through compute8),
// so that their runtime op-code is switched on once per vector rather than per element: each case
// runs the same shared per-element function with a constant kind, which the compiler folds.
using Vec8In = float[kMaxIn][kVec];
using Vec8Out = float[kMaxOut][kVec];

template <OpKind K, bool TanhForm>
__device__ __forceinline__ void unary8(float factor, const float (&x)[kVec], float (&y)[kVec]) {
#pragma unroll
    for (int j = 0; j < kVec; ++j) (void)unary_value(K, x[j], factor, TanhForm, y[j]);
}

// relu .. erf, shift, pow (ops/pointwise_math.hpp, shared with the reference); factor is the
// scalar operand: scale's factor, shift's offset, pow's exponent.
struct UnaryOp {
    OpKind kind;
    float factor;
    bool tanh_form;
    __device__ void operator()(std::int64_t, const float* x, float* y) const { (void)unary_value(kind, x[0], factor, tanh_form, y[0]); }
    __device__ __forceinline__ void vec8(std::int64_t, const Vec8In& x, Vec8Out& y) const {
        switch (kind) {
            case OpKind::relu: unary8<OpKind::relu, true>(factor, x[0], y[0]); return;
            case OpKind::gelu:
                if (tanh_form)
                    unary8<OpKind::gelu, true>(factor, x[0], y[0]);
                else
                    unary8<OpKind::gelu, false>(factor, x[0], y[0]);
                return;
#define ROOFLINE_UNARY(name, ...)                       \
    case OpKind::name:                                  \
        unary8<OpKind::name, true>(factor, x[0], y[0]); \
        return;
#include "ops/unary_ops.def"
#undef ROOFLINE_UNARY
            case OpKind::neg: unary8<OpKind::neg, true>(factor, x[0], y[0]); return;
            case OpKind::scale: unary8<OpKind::scale, true>(factor, x[0], y[0]); return;
            case OpKind::shift: unary8<OpKind::shift, true>(factor, x[0], y[0]); return;
            case OpKind::pow: unary8<OpKind::pow, true>(factor, x[0], y[0]); return;
            default:  // not launched (is_unary_kind), kept exact all the same
#pragma unroll
                for (int j = 0; j < kVec; ++j) (void)unary_value(kind, x[0][j], factor, tanh_form, y[0][j]);
                return;
        }
    }
};

// add, sub, mul, div, maximum, pow with a tensor exponent; maximum as std::max(a, b) in the
// reference: a < b ? b : a.
struct BinaryOp {
    OpKind kind;
    __device__ void operator()(std::int64_t, const float* x, float* y) const {
        const float a = x[0], b = x[1];
        switch (kind) {
            case OpKind::add: y[0] = a + b; break;
            case OpKind::sub: y[0] = a - b; break;
            case OpKind::mul: y[0] = a * b; break;
            case OpKind::div: y[0] = a / b; break;
            case OpKind::pow: y[0] = powf(a, b); break;  // a tensor exponent
            default: y[0] = a < b ? b : a; break;        // maximum
        }
    }
    __device__ __forceinline__ void vec8(std::int64_t, const Vec8In& x, Vec8Out& y) const {
        switch (kind) {
            case OpKind::add:
#pragma unroll
                for (int j = 0; j < kVec; ++j) y[0][j] = x[0][j] + x[1][j];
                return;
            case OpKind::sub:
#pragma unroll
                for (int j = 0; j < kVec; ++j) y[0][j] = x[0][j] - x[1][j];
                return;
            case OpKind::mul:
#pragma unroll
                for (int j = 0; j < kVec; ++j) y[0][j] = x[0][j] * x[1][j];
                return;
            case OpKind::div:
#pragma unroll
                for (int j = 0; j < kVec; ++j) y[0][j] = x[0][j] / x[1][j];
                return;
            case OpKind::pow:
#pragma unroll
                for (int j = 0; j < kVec; ++j) y[0][j] = powf(x[0][j], x[1][j]);
                return;
            default:
#pragma unroll
                for (int j = 0; j < kVec; ++j) y[0][j] = x[0][j] < x[1][j] ? x[1][j] : x[0][j];
                return;
        }
    }
};

template <OpKind K, bool TanhForm>
__device__ __forceinline__ void unary_grad8(const float (&dy)[kVec], const float (&saved)[kVec], float (&dx)[kVec]) {
#pragma unroll
    for (int j = 0; j < kVec; ++j) (void)unary_grad_math(K, TanhForm, dy[j], saved[j], dx[j]);
}

// (dy, saved) -> dx
struct UnaryGradOp {
    OpKind of;
    bool tanh_form;
    __device__ void operator()(std::int64_t, const float* x, float* y) const { (void)unary_grad_math(of, tanh_form, x[0], x[1], y[0]); }
    __device__ __forceinline__ void vec8(std::int64_t, const Vec8In& x, Vec8Out& y) const {
        switch (of) {
            case OpKind::relu: unary_grad8<OpKind::relu, true>(x[0], x[1], y[0]); return;
            case OpKind::gelu:
                if (tanh_form)
                    unary_grad8<OpKind::gelu, true>(x[0], x[1], y[0]);
                else
                    unary_grad8<OpKind::gelu, false>(x[0], x[1], y[0]);
                return;
#define ROOFLINE_UNARY(name, ...)                          \
    case OpKind::name:                                     \
        unary_grad8<OpKind::name, true>(x[0], x[1], y[0]); \
        return;
#include "ops/unary_ops.def"
#undef ROOFLINE_UNARY
            default:  // rejected on the host, kept exact all the same
#pragma unroll
                for (int j = 0; j < kVec; ++j) (void)unary_grad_math(of, tanh_form, x[0][j], x[1][j], y[0][j]);
                return;
        }
    }
};

// (dy, a, b) -> (da, db): dy goes to a where a >= b, else to b.
struct MaximumGradOp {
    __device__ void operator()(std::int64_t, const float* x, float* y) const {
        const bool first = x[1] >= x[2];
        y[0] = first ? x[0] : 0.0f;
        y[1] = first ? 0.0f : x[0];
    }
};

// x -> (y, mask): the reference's splitmix64 draw of the flat index against p.
struct DropoutOp {
    std::uint64_t threshold;  // dropout_threshold(p)
    float scale;              // 1 / (1 - p)
    __device__ void operator()(std::int64_t i, const float* x, float* y) const {
        const bool kept = dropout_keep_threshold(i, threshold);
        y[0] = kept ? x[0] * scale : 0.0f;
        y[1] = kept ? 1.0f : 0.0f;
    }
};

// (dy, mask) -> dy * mask / (1 - p)
struct DropoutGradOp {
    float scale;
    __device__ void operator()(std::int64_t, const float* x, float* y) const { y[0] = x[0] * x[1] * scale; }
};

// Conversion happens in load/store: float values in, the output dtype's rounding out.
struct CastOp {
    __device__ void operator()(std::int64_t, const float* x, float* y) const { y[0] = x[0]; }
};

// (param, grad, momentum?) -> (param', momentum'?)
struct SgdUpdateOp {
    float lr, momentum, weight_decay, grad_scale;
    bool has_momentum;
    __device__ void operator()(std::int64_t, const float* x, float* y) const {
        float g = x[1] * grad_scale + weight_decay * x[0];
        if (has_momentum) {
            g = momentum * x[2] + g;
            y[1] = g;
        }
        y[0] = x[0] - lr * g;
    }
};

// (param, grad, m, v) -> (param', m', v'), the first step (t = 1) as in the reference.
struct AdamUpdateOp {
    float lr, beta1, beta2, one_minus_beta1, one_minus_beta2, eps, weight_decay, grad_scale;
    bool decoupled;
    __device__ void operator()(std::int64_t, const float* x, float* y) const {
        const float g = x[1] * grad_scale + (decoupled ? 0.0f : weight_decay * x[0]);
        const float m = beta1 * x[2] + one_minus_beta1 * g, v = beta2 * x[3] + one_minus_beta2 * g * g;
        const float step = (m / one_minus_beta1) / (sqrtf(v / one_minus_beta2) + eps) + (decoupled ? weight_decay * x[0] : 0.0f);
        y[0] = x[0] - lr * step;
        y[1] = m;
        y[2] = v;
    }
};

// ---------------------------------------------------------------------------------------------
// Kernels

template <class Op>
__device__ __forceinline__ void apply_scalar(const Op& op, const EwArgs& a, std::int64_t i, const std::int64_t* in_off) {
    float x[kMaxIn] = {}, y[kMaxOut] = {};
#pragma unroll
    for (int k = 0; k < kMaxIn; ++k)
        if (k < a.nin) x[k] = load1(a.in[k], a.in_dt[k], in_off[k]);
    op(i, x, y);
#pragma unroll
    for (int k = 0; k < kMaxOut; ++k)
        if (k < a.nout) store1(a.out[k], a.out_dt[k], i, y[k]);
}

// Elements base .. base+7: the op's vec8 where it has one, else element by element.
template <class Op>
__device__ __forceinline__ void compute8(const Op& op, std::int64_t base, const Vec8In& x, Vec8Out& y) {
    if constexpr (requires { op.vec8(base, x, y); }) {
        op.vec8(base, x, y);
    } else {
#pragma unroll
        for (int j = 0; j < kVec; ++j) {
            float xs[kMaxIn], ys[kMaxOut] = {};
#pragma unroll
            for (int k = 0; k < kMaxIn; ++k) xs[k] = x[k][j];
            op(base + j, xs, ys);
#pragma unroll
            for (int k = 0; k < kMaxOut; ++k) y[k][j] = ys[k];
        }
    }
}

// Blocks per SM that the contiguous kernel is compiled to fit (its register budget): 8 (2048
// threads, 32 registers) for the cheap ops, whose bandwidth needs every thread's loads in flight;
// fewer for the ops with 3-4 inputs or long math, to leave them registers without spilling.
template <class Op>
constexpr int kMinBlocks = 8;
template <>
constexpr int kMinBlocks<UnaryGradOp> = 6;  // 40 registers
template <>
constexpr int kMinBlocks<MaximumGradOp> = 6;
template <>
constexpr int kMinBlocks<SgdUpdateOp> = 6;
template <>
constexpr int kMinBlocks<AdamUpdateOp> = 5;  // 48 registers

// Every operand has the output's shape and is dense.
template <class Op>
__global__ void __launch_bounds__(kThreads, kMinBlocks<Op>) pointwise_contiguous_kernel(Op op, EwArgs a, std::int64_t n, bool vectorized) {
    const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
    const std::int64_t tid = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    std::int64_t done = 0;
    if (vectorized) {
        const std::int64_t chunks = n / kVec;
        for (std::int64_t c = tid; c < chunks; c += stride) {
            const std::int64_t base = c * kVec;
            float x[kMaxIn][kVec] = {}, y[kMaxOut][kVec] = {};
#pragma unroll
            for (int k = 0; k < kMaxIn; ++k)
                if (k < a.nin) load8(a.in[k], a.in_dt[k], base, x[k]);
            compute8(op, base, x, y);
#pragma unroll
            for (int k = 0; k < kMaxOut; ++k)
                if (k < a.nout) store8(a.out[k], a.out_dt[k], base, y[k]);
        }
        done = chunks * kVec;
    }
    for (std::int64_t i = done + tid; i < n; i += stride) {
        const std::int64_t off[kMaxIn] = {i, i, i, i};
        apply_scalar(op, a, i, off);
    }
}

// Output element i's offsets into each input over the collapsed layout; I is the index type
// (32-bit when every offset fits, for cheaper division).
template <class I>
__device__ __forceinline__ void input_offsets(I i, const Layout& L, std::int64_t (&off)[kMaxIn]) {
    I o[kMaxIn] = {};
#pragma unroll
    for (int d = 0; d < kMaxDims; ++d) {
        if (d == L.rank) break;
        const I n = static_cast<I>(L.shape[d]);
        const I c = i % n;
        i /= n;
#pragma unroll
        for (int k = 0; k < kMaxIn; ++k) o[k] += c * static_cast<I>(L.stride[k][d]);
    }
#pragma unroll
    for (int k = 0; k < kMaxIn; ++k) off[k] = static_cast<std::int64_t>(o[k]);
}

// Inputs broadcast (strides 0) against the dense output.
template <class Op>
__global__ void __launch_bounds__(kThreads) pointwise_broadcast_kernel(Op op, EwArgs a, Layout L, std::int64_t n) {
    const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
    const std::int64_t tid = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    std::int64_t off[kMaxIn];
    if (n <= INT_MAX) {
        for (std::int64_t i = tid; i < n; i += stride) {
            input_offsets(static_cast<unsigned>(i), L, off);
            apply_scalar(op, a, i, off);
        }
    } else {
        for (std::int64_t i = tid; i < n; i += stride) {
            input_offsets(static_cast<std::uint64_t>(i), L, off);
            apply_scalar(op, a, i, off);
        }
    }
}

// The common broadcasts, after collapsing dims, over a dense output seen as rows of c elements:
// each input is the full tensor (offset i), a row vector of c elements repeated down the rows
// (i % c: a bias), one value per row (i / c) or one value for all (0).
enum BcastMode : int { bm_full, bm_row, bm_col, bm_scalar };
struct RowCol {
    int mode[kMaxIn] = {};
    std::int64_t c = 1;
};

__device__ __forceinline__ std::int64_t rowcol_offset(int mode, std::int64_t i, std::int64_t q, std::int64_t r) {
    return mode == bm_full ? i : mode == bm_row ? r : mode == bm_col ? q : 0;
}

// Row/column broadcasts as contiguous vectors: per 8-element vector one division gives its row q
// and column r; when vectorized, c % 8 == 0 (or no input is a row or column), so the 8 elements
// share one row: full and row inputs are loaded as 16-byte vectors (row ones from offset r, a
// multiple of 8), column and scalar inputs as one element. I is the index type: 32-bit when the
// output has fewer than 2^31 elements.
template <class Op, class I>
__global__ void __launch_bounds__(kThreads) pointwise_rowcol_kernel(Op op, EwArgs a, RowCol rc, I n, bool vectorized) {
    const I c = static_cast<I>(rc.c);
    const I stride = static_cast<I>(gridDim.x) * static_cast<I>(blockDim.x);
    const I tid = static_cast<I>(blockIdx.x) * static_cast<I>(blockDim.x) + static_cast<I>(threadIdx.x);
    I done = 0;
    if (vectorized) {
        const I chunks = n / kVec;
        for (I v = tid; v < chunks; v += stride) {
            const I base = v * kVec;
            const I q = base / c, r = base - q * c;
            float x[kMaxIn][kVec] = {}, y[kMaxOut][kVec] = {};
#pragma unroll
            for (int k = 0; k < kMaxIn; ++k) {
                if (k >= a.nin) continue;
                const int m = rc.mode[k];
                if (m == bm_full || m == bm_row) {
                    load8(a.in[k], a.in_dt[k], static_cast<std::int64_t>(m == bm_full ? base : r), x[k]);
                } else {
                    const float s = load1(a.in[k], a.in_dt[k], static_cast<std::int64_t>(m == bm_col ? q : I{0}));
#pragma unroll
                    for (int j = 0; j < kVec; ++j) x[k][j] = s;
                }
            }
            compute8(op, static_cast<std::int64_t>(base), x, y);
#pragma unroll
            for (int k = 0; k < kMaxOut; ++k)
                if (k < a.nout) store8(a.out[k], a.out_dt[k], static_cast<std::int64_t>(base), y[k]);
        }
        done = chunks * kVec;
    }
    for (I i = done + tid; i < n; i += stride) {
        const I q = i / c, r = i - q * c;
        std::int64_t off[kMaxIn];
#pragma unroll
        for (int k = 0; k < kMaxIn; ++k)
            off[k] = rowcol_offset(rc.mode[k], static_cast<std::int64_t>(i), static_cast<std::int64_t>(q), static_cast<std::int64_t>(r));
        apply_scalar(op, a, static_cast<std::int64_t>(i), off);
    }
}

// causal_mask on scores[..., sq, sk]: element i (col = i % sk, row = (i / sk) % sq) becomes value
// where col > row, else keeps x, as the reference's causal(). Vectorized: col and row once per
// 8-element vector, then stepped per element; when sk % 8 == 0 a vector lies in one row, so it is
// either wholly above the diagonal (stored as value without reading x), wholly on or below it
// (copied), or crosses it (per element). I is the index type, as in pointwise_rowcol_kernel.
template <class I>
__global__ void __launch_bounds__(kThreads)
    causal_mask_kernel(const void* x, int x_dt, void* y, int y_dt, I n, I sq, I sk, float value, bool vectorized) {
    const I stride = static_cast<I>(gridDim.x) * static_cast<I>(blockDim.x);
    const I tid = static_cast<I>(blockIdx.x) * static_cast<I>(blockDim.x) + static_cast<I>(threadIdx.x);
    I done = 0;
    if (vectorized) {
        const I chunks = n / kVec;
        const bool one_row = sk % kVec == 0;
        for (I v = tid; v < chunks; v += stride) {
            const I base = v * kVec;
            const I q = base / sk;
            I col = base - q * sk, row = q % sq;
            float e[kVec];
            if (one_row && col > row) {
#pragma unroll
                for (int j = 0; j < kVec; ++j) e[j] = value;
            } else {
                load8(x, x_dt, static_cast<std::int64_t>(base), e);
                if (!one_row || col + (kVec - 1) > row) {
#pragma unroll
                    for (int j = 0; j < kVec; ++j) {
                        if (col > row) e[j] = value;
                        if (++col == sk) {
                            col = 0;
                            if (++row == sq) row = 0;
                        }
                    }
                }
            }
            store8(y, y_dt, static_cast<std::int64_t>(base), e);
        }
        done = chunks * kVec;
    }
    for (I i = done + tid; i < n; i += stride) {
        const I col = i % sk, row = (i / sk) % sq;
        const auto at = static_cast<std::int64_t>(i);
        store1(y, y_dt, at, col > row ? value : load1(x, x_dt, at));
    }
}

// cast between integer dtypes (exact through int64; narrowing wraps as a C++ conversion does).
__global__ void __launch_bounds__(kThreads) cast_integer_kernel(const void* x, int x_dt, void* y, int y_dt, std::int64_t n) {
    const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
    for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
        long long v = 0;
        switch (x_dt) {
            case dt_u8: v = static_cast<const unsigned char*>(x)[i]; break;
            case dt_i8: v = static_cast<const signed char*>(x)[i]; break;
            case dt_i32: v = static_cast<const int*>(x)[i]; break;
            default: v = static_cast<const long long*>(x)[i]; break;
        }
        switch (y_dt) {
            case dt_u8: static_cast<unsigned char*>(y)[i] = static_cast<unsigned char>(v); break;
            case dt_i8: static_cast<signed char*>(y)[i] = static_cast<signed char>(v); break;
            case dt_i32: static_cast<int*>(y)[i] = static_cast<int>(v); break;
            default: static_cast<long long*>(y)[i] = v; break;
        }
    }
}

__device__ __forceinline__ unsigned char pattern_byte(const uint4& p, std::int64_t k) {
    const unsigned w[4] = {p.x, p.y, p.z, p.w};
    return static_cast<unsigned char>(w[(k % 16) / 4] >> (8 * (k % 4)));
}

// Writes the element's bytes, repeated in pattern (16 bytes, the element size divides 16), over
// bytes: uint4 stores when 16-byte aligned, byte stores for the tail.
__global__ void __launch_bounds__(kThreads) fill_kernel(unsigned char* p, std::int64_t bytes, uint4 pattern, bool aligned) {
    const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
    const std::int64_t tid = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    std::int64_t done = 0;
    if (aligned) {
        const std::int64_t n16 = bytes / 16;
        for (std::int64_t i = tid; i < n16; i += stride) reinterpret_cast<uint4*>(p)[i] = pattern;
        done = n16 * 16;
    }
    // The tensor starts on an element boundary, so byte k of it is byte k % 16 of the pattern.
    for (std::int64_t i = done + tid; i < bytes; i += stride) p[i] = pattern_byte(pattern, i);
}

// expand: a broadcast copy, by element size (exact for every dtype).
template <class T>
__global__ void __launch_bounds__(kThreads) expand_broadcast_kernel(const T* x, T* y, Layout L, std::int64_t n) {
    const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
    std::int64_t off[kMaxIn];
    for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
        if (n <= INT_MAX)
            input_offsets(static_cast<unsigned>(i), L, off);
        else
            input_offsets(static_cast<std::uint64_t>(i), L, off);
        y[i] = x[off[0]];
    }
}

// ---------------------------------------------------------------------------------------------
// Host side

// Blocks of kThreads for `work` threads' worth of items, at most 8 blocks per SM (2048 threads:
// one full wave on A100/H100; the kernels loop over the rest).
unsigned grid_for(std::int64_t work) { return cuda::grid_for(work, kThreads); }

// grid_for capped further at the blocks of Kernel that fit on an SM at once (by its registers):
// the grid-stride kernels then run as one full wave, with no partial second wave of blocks that
// did not fit. Cached per kernel and device.
template <auto Kernel>
unsigned grid_for_kernel(std::int64_t work) {
    static std::array<std::atomic<int>, 64> cache{};
    int dev = 0;
    check(cudaGetDevice(&dev), "cudaGetDevice");
    const bool cached = dev >= 0 && dev < static_cast<int>(cache.size());
    int per_sm = cached ? cache[static_cast<std::size_t>(dev)].load(std::memory_order_relaxed) : 0;
    if (per_sm <= 0) {
        check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, Kernel, kThreads, 0), "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
        per_sm = std::clamp(per_sm, 1, 8);
        if (cached) cache[static_cast<std::size_t>(dev)].store(per_sm, std::memory_order_relaxed);
    }
    const std::int64_t blocks = (work + kThreads - 1) / kThreads;
    const std::int64_t cap = static_cast<std::int64_t>(sm_count()) * per_sm;
    return static_cast<unsigned>(std::clamp<std::int64_t>(blocks, 1, cap));
}

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

EwArgs make_args(const Tensors& in, const Tensors& out) {
    if (in.size() > static_cast<std::size_t>(kMaxIn) || out.size() > static_cast<std::size_t>(kMaxOut)) {
        throw InputError("pointwise kernel: too many operands");
    }
    EwArgs a;
    a.nin = static_cast<int>(in.size());
    a.nout = static_cast<int>(out.size());
    for (std::size_t k = 0; k < in.size(); ++k) {
        a.in[k] = in[k].data;
        a.in_dt[k] = dt_code(in[k].desc.dtype);
    }
    for (std::size_t k = 0; k < out.size(); ++k) {
        a.out[k] = out[k].data;
        a.out_dt[k] = dt_code(out[k].desc.dtype);
    }
    return a;
}

template <class Op>
void launch_contiguous(const Op& op, const Tensors& in, const Tensors& out, std::int64_t n, LaunchContext& ctx, const char* name) {
    if (n == 0) return;
    const EwArgs a = make_args(in, out);
    bool vec = n >= kVec;
    for (const auto& t : in) vec = vec && aligned16(t.data);
    for (const auto& t : out) vec = vec && aligned16(t.data);
    const unsigned grid = grid_for_kernel<pointwise_contiguous_kernel<Op>>(vec ? n / kVec : n);
    pointwise_contiguous_kernel<Op><<<grid, kThreads, 0, ctx.stream>>>(op, a, n, vec);
    check_launch(name);
    ctx.notes.push_back(std::string(name) + (vec ? " 16-byte vectors" : " scalar") + ", grid " + std::to_string(grid) + "x" +
                        std::to_string(kThreads));
}

// Strides of an input of shape s broadcast (right-aligned, numpy rules) to output shape o,
// outermost first: 0 where s has size 1 or no dim.
std::vector<std::int64_t> broadcast_strides(const Shape& s, const Shape& o) {
    std::vector<std::int64_t> st(o.size(), 0);
    std::int64_t acc = 1;
    for (std::size_t i = s.size(); i-- > 0;) {
        const std::size_t d = o.size() - s.size() + i;
        st[d] = s[i] == 1 ? 0 : acc;
        acc *= s[i];
    }
    return st;
}

// Collapses output shape o with per-input strides: drops size-1 dims and merges a dim into the
// next inner one where every input is contiguous across both. False when more than kMaxDims remain.
bool make_layout(const Shape& o, const std::vector<std::vector<std::int64_t>>& strides, Layout& L) {
    std::vector<std::int64_t> shape;
    std::vector<std::vector<std::int64_t>> st(strides.size());
    for (std::size_t d = 0; d < o.size(); ++d) {
        if (o[d] == 1) continue;
        bool merge = !shape.empty();
        for (std::size_t k = 0; merge && k < strides.size(); ++k) merge = st[k].back() == strides[k][d] * o[d];
        if (merge) {
            shape.back() *= o[d];
            for (std::size_t k = 0; k < strides.size(); ++k) st[k].back() = strides[k][d];
        } else {
            shape.push_back(o[d]);
            for (std::size_t k = 0; k < strides.size(); ++k) st[k].push_back(strides[k][d]);
        }
    }
    if (shape.size() > static_cast<std::size_t>(kMaxDims) || strides.size() > static_cast<std::size_t>(kMaxIn)) return false;
    L = Layout{};
    L.rank = static_cast<int>(shape.size());
    for (int j = 0; j < L.rank; ++j) {
        const std::size_t d = shape.size() - 1 - static_cast<std::size_t>(j);
        L.shape[j] = shape[d];
        for (std::size_t k = 0; k < strides.size(); ++k) L.stride[k][j] = st[k][d];
    }
    return true;
}

// Every input laid out exactly as the output.
bool is_dense(const Layout& L, std::size_t nin) {
    if (L.rank == 0) return true;
    if (L.rank > 1) return false;
    for (std::size_t k = 0; k < nin; ++k) {
        if (L.stride[k][0] != 1) return false;
    }
    return true;
}

// Matches the collapsed layout to pointwise_rowcol_kernel's patterns: rank 1 (each input full or
// one value) or rank 2 with rows of c = L.shape[0] elements (each input full, a row vector, one
// value per row, or one value).
bool rowcol_pattern(const Layout& L, std::size_t nin, RowCol& rc) {
    if (L.rank < 1 || L.rank > 2 || nin > static_cast<std::size_t>(kMaxIn)) return false;
    rc = RowCol{};
    rc.c = L.shape[0];
    for (std::size_t k = 0; k < nin; ++k) {
        const std::int64_t s0 = L.stride[k][0], s1 = L.rank == 2 ? L.stride[k][1] : 0;
        int m = -1;
        if (L.rank == 1)
            m = s0 == 1 ? bm_full : s0 == 0 ? bm_scalar : -1;
        else if (s0 == 1 && s1 == rc.c)
            m = bm_full;
        else if (s0 == 1 && s1 == 0)
            m = bm_row;
        else if (s0 == 0 && s1 == 1)
            m = bm_col;
        else if (s0 == 0 && s1 == 0)
            m = bm_scalar;
        if (m < 0) return false;
        rc.mode[k] = m;
    }
    return true;
}

template <class Op, class I>
unsigned launch_rowcol_as(const Op& op, const EwArgs& a, const RowCol& rc, std::int64_t n, bool vec, cudaStream_t s, const char* name) {
    const unsigned grid = grid_for_kernel<pointwise_rowcol_kernel<Op, I>>(vec ? n / kVec : n);
    pointwise_rowcol_kernel<Op, I><<<grid, kThreads, 0, s>>>(op, a, rc, static_cast<I>(n), vec);
    check_launch(name);
    return grid;
}

template <class Op>
void launch_rowcol(const Op& op, const Tensors& in, const Tensors& out, const RowCol& rc, std::int64_t n, LaunchContext& ctx,
                   const char* name) {
    if (n == 0) return;
    bool vec = n >= kVec;
    for (std::size_t k = 0; k < in.size(); ++k) {
        const int m = rc.mode[k];
        if (m == bm_full || m == bm_row) vec = vec && aligned16(in[k].data);
        if (m == bm_row || m == bm_col) vec = vec && rc.c % kVec == 0;
    }
    for (const auto& t : out) vec = vec && aligned16(t.data);
    const EwArgs a = make_args(in, out);
    const unsigned grid = n <= INT_MAX ? launch_rowcol_as<Op, unsigned>(op, a, rc, n, vec, ctx.stream, name)
                                       : launch_rowcol_as<Op, std::uint64_t>(op, a, rc, n, vec, ctx.stream, name);
    ctx.notes.push_back(std::string(name) + (vec ? " 16-byte vectors" : " scalar") + ", rows of " + std::to_string(rc.c) + ", grid " +
                        std::to_string(grid) + "x" + std::to_string(kThreads));
}

template <class I>
unsigned launch_causal_as(const DeviceTensor& x, const DeviceTensor& y, std::int64_t n, std::int64_t sq, std::int64_t sk, float value,
                          bool vec, cudaStream_t s) {
    const unsigned grid = grid_for_kernel<causal_mask_kernel<I>>(vec ? n / kVec : n);
    causal_mask_kernel<I><<<grid, kThreads, 0, s>>>(x.data, dt_code(x.desc.dtype), y.data, dt_code(y.desc.dtype), static_cast<I>(n),
                                                    static_cast<I>(sq), static_cast<I>(sk), value, vec);
    check_launch("causal_mask_kernel");
    return grid;
}

// Elementwise op whose inputs broadcast to out[0]'s shape (every output has that shape).
template <class Op>
bool launch_broadcasting(const Op& op, const Tensors& in, const Tensors& out, LaunchContext& ctx, const char* contiguous_name,
                         const char* rowcol_name, const char* broadcast_name) {
    const Shape& os = out[0].desc.shape;
    std::vector<std::vector<std::int64_t>> strides;
    for (const auto& t : in) strides.push_back(broadcast_strides(t.desc.shape, os));
    Layout L;
    if (!make_layout(os, strides, L)) return false;
    const std::int64_t n = out[0].desc.numel();
    if (is_dense(L, in.size())) {
        launch_contiguous(op, in, out, n, ctx, contiguous_name);
        return true;
    }
    RowCol rc;
    if (rowcol_pattern(L, in.size(), rc)) {
        launch_rowcol(op, in, out, rc, n, ctx, rowcol_name);
        return true;
    }
    if (n == 0) return true;
    const unsigned grid = grid_for(n);
    pointwise_broadcast_kernel<Op><<<grid, kThreads, 0, ctx.stream>>>(op, make_args(in, out), L, n);
    check_launch(broadcast_name);
    ctx.notes.push_back(std::string(broadcast_name) + " over " + std::to_string(L.rank) + " collapsed dims, grid " + std::to_string(grid) +
                        "x" + std::to_string(kThreads));
    return true;
}

bool all_float(const Tensors& ts) {
    return std::all_of(ts.begin(), ts.end(), [](const DeviceTensor& t) { return is_float_dt(t.desc.dtype); });
}

void require_arity(OpKind k, const Tensors& in, std::size_t lo, std::size_t hi, const Tensors& out, std::size_t nout) {
    if (in.size() < lo || in.size() > hi || out.size() != nout) {
        throw InputError(std::string(op_name(k)) + ": CUDA kernel got " + std::to_string(in.size()) + " inputs and " +
                         std::to_string(out.size()) + " outputs");
    }
}

// Same element count for every operand of a non-broadcasting op.
void require_same_numel(OpKind k, const Tensors& in, const Tensors& out) {
    const std::int64_t n = out[0].desc.numel();
    for (const auto* ts : {&in, &out}) {
        for (const auto& t : *ts) {
            if (t.desc.numel() != n) {
                throw InputError(std::string(op_name(k)) + ": operand " + desc_str(t.desc) + " does not match output " +
                                 desc_str(out[0].desc));
            }
        }
    }
}

// The unary elementwise kinds: the ops whose rule is the unary rule (ops/unary_ops.def and the
// hand-written ones) and pow (a scalar exponent here; a tensor exponent runs as BinaryOp).
bool is_unary_kind(OpKind k) { return &rule_of(k) == &unary_rule() || &rule_of(k) == &pow_rule(); }

bool gelu_tanh_form(const Attrs& a) { return a.get_string("approximate", "tanh") == "tanh"; }

// The element's bytes in dtype d for value v (rounded as the reference's round_to), repeated to 16.
std::optional<uint4> fill_pattern(double v, DType d) {
    unsigned char e[8] = {};
    std::size_t es = 0;
    switch (d) {
        case DType::f32: {
            const float f = static_cast<float>(v);
            std::memcpy(e, &f, es = 4);
            break;
        }
        case DType::f16: {
            const __half h = __float2half_rn(static_cast<float>(v));
            std::memcpy(e, &h, es = 2);
            break;
        }
        case DType::bf16: {
            const __nv_bfloat16 h = __float2bfloat16_rn(static_cast<float>(v));
            std::memcpy(e, &h, es = 2);
            break;
        }
        case DType::u8:
            e[0] = static_cast<unsigned char>(static_cast<long long>(std::nearbyint(v)));
            es = 1;
            break;
        case DType::int8:
            e[0] = static_cast<unsigned char>(static_cast<long long>(std::nearbyint(v)));
            es = 1;
            break;
        case DType::int32: {
            const auto i = static_cast<std::int32_t>(std::nearbyint(v));
            std::memcpy(e, &i, es = 4);
            break;
        }
        case DType::int64: {
            const auto i = static_cast<std::int64_t>(std::nearbyint(v));
            std::memcpy(e, &i, es = 8);
            break;
        }
        default: return std::nullopt;
    }
    unsigned char b[16];
    for (std::size_t k = 0; k < 16; ++k) b[k] = e[k % es];
    uint4 p;
    std::memcpy(&p, b, 16);
    return p;
}

template <class T>
void launch_expand(const DeviceTensor& x, const DeviceTensor& y, const Layout& L, std::int64_t n, cudaStream_t s) {
    expand_broadcast_kernel<T><<<grid_for(n), kThreads, 0, s>>>(static_cast<const T*>(x.data), static_cast<T*>(y.data), L, n);
    check_launch("expand_broadcast_kernel");
}

}  // namespace

bool launch_pointwise(OpKind k, const Tensors& in, const Attrs& a, const Tensors& out, LaunchContext& ctx) {
    cudaStream_t s = ctx.stream;
    if (k == OpKind::pow && in.size() == 2) {  // a tensor exponent: a broadcasting binary kernel
        if (!all_float(in) || !all_float(out)) return false;
        return launch_broadcasting(BinaryOp{k}, in, out, ctx, "pointwise_contiguous_kernel<BinaryOp>", "pointwise_rowcol_kernel<BinaryOp>",
                                   "pointwise_broadcast_kernel<BinaryOp>");
    }
    if (is_unary_kind(k)) {
        require_arity(k, in, 1, 1, out, 1);
        if (!all_float(in) || !all_float(out)) return false;
        require_same_numel(k, in, out);
        const double operand = k == OpKind::scale   ? a.get_double("factor", 1.0)
                               : k == OpKind::shift ? a.get_double("offset", 0.0)
                               : k == OpKind::pow   ? a.get_double("exponent", 1.0)
                                                    : 1.0;
        const UnaryOp op{k, static_cast<float>(operand), k != OpKind::gelu || gelu_tanh_form(a)};
        launch_contiguous(op, in, out, out[0].desc.numel(), ctx, "pointwise_contiguous_kernel<UnaryOp>");
        return true;
    }
    switch (k) {
        case OpKind::add:
        case OpKind::sub:
        case OpKind::mul:
        case OpKind::div:
        case OpKind::maximum:
            require_arity(k, in, 2, 2, out, 1);
            if (!all_float(in) || !all_float(out)) return false;
            return launch_broadcasting(BinaryOp{k}, in, out, ctx, "pointwise_contiguous_kernel<BinaryOp>",
                                       "pointwise_rowcol_kernel<BinaryOp>", "pointwise_broadcast_kernel<BinaryOp>");
        case OpKind::unary_grad: {
            require_arity(k, in, 2, 2, out, 1);
            if (!all_float(in) || !all_float(out)) return false;
            require_same_numel(k, in, out);
            const std::string of = a.get_string("of", "");
            const std::optional<OpKind> of_kind = parse_op(of);
            float probe = 0;
            if (!of_kind || !unary_grad_math(*of_kind, true, 1.0f, 1.0f, probe)) {
                throw InputError("unary_grad: attribute 'of' names no differentiable unary op: '" + of + "'");
            }
            const UnaryGradOp op{*of_kind, *of_kind != OpKind::gelu || gelu_tanh_form(a)};
            launch_contiguous(op, in, out, out[0].desc.numel(), ctx, "pointwise_contiguous_kernel<UnaryGradOp>");
            return true;
        }
        case OpKind::maximum_grad:
            require_arity(k, in, 3, 3, out, 2);
            if (!all_float(in) || !all_float(out)) return false;
            if (in[0].desc.shape != out[0].desc.shape || out[1].desc.shape != out[0].desc.shape) {
                throw InputError("maximum_grad: dy " + desc_str(in[0].desc) + " and the outputs must have one shape");
            }
            return launch_broadcasting(MaximumGradOp{}, in, out, ctx, "pointwise_contiguous_kernel<MaximumGradOp>",
                                       "pointwise_rowcol_kernel<MaximumGradOp>", "pointwise_broadcast_kernel<MaximumGradOp>");
        case OpKind::dropout: {
            require_arity(k, in, 1, 1, out, 2);
            if (!all_float(in) || !is_float_dt(out[0].desc.dtype) || out[1].desc.dtype != DType::u8) return false;
            require_same_numel(k, in, out);
            const double p = a.get_double("p", 0.1);
            const DropoutOp op{dropout_threshold(p), static_cast<float>(1.0 / (1.0 - p))};
            launch_contiguous(op, in, out, out[0].desc.numel(), ctx, "pointwise_contiguous_kernel<DropoutOp>");
            return true;
        }
        case OpKind::dropout_grad: {
            require_arity(k, in, 2, 2, out, 1);
            if (!is_float_dt(in[0].desc.dtype) || in[1].desc.dtype != DType::u8 || !all_float(out)) return false;
            require_same_numel(k, in, out);
            const DropoutGradOp op{static_cast<float>(1.0 / (1.0 - a.get_double("p", 0.1)))};
            launch_contiguous(op, in, out, out[0].desc.numel(), ctx, "pointwise_contiguous_kernel<DropoutGradOp>");
            return true;
        }
        case OpKind::causal_mask: {
            require_arity(k, in, 1, 1, out, 1);
            if (!all_float(in) || !all_float(out)) return false;
            require_same_numel(k, in, out);
            const Shape& sh = out[0].desc.shape;
            if (sh.size() < 2) throw InputError("causal_mask: scores must have rank >= 2, got " + desc_str(out[0].desc));
            const std::int64_t sq = sh[sh.size() - 2], sk = sh.back();
            if (sq == 0 || sk == 0) return true;
            const float value = static_cast<float>(a.get_double("value", -std::numeric_limits<double>::infinity()));
            const std::int64_t n = out[0].desc.numel();
            if (n == 0) return true;
            const bool vec = n >= kVec && aligned16(in[0].data) && aligned16(out[0].data);
            const unsigned grid = n <= INT_MAX ? launch_causal_as<unsigned>(in[0], out[0], n, sq, sk, value, vec, s)
                                               : launch_causal_as<std::uint64_t>(in[0], out[0], n, sq, sk, value, vec, s);
            ctx.notes.push_back(std::string("causal_mask_kernel") + (vec ? " 16-byte vectors" : " scalar") + ", grid " +
                                std::to_string(grid) + "x" + std::to_string(kThreads));
            return true;
        }
        case OpKind::cast: {
            require_arity(k, in, 1, 1, out, 1);
            require_same_numel(k, in, out);
            const DType from = in[0].desc.dtype, to = out[0].desc.dtype;
            const std::int64_t n = out[0].desc.numel();
            if (is_int_dt(from) && is_int_dt(to)) {
                if (n == 0) return true;
                cast_integer_kernel<<<grid_for(n), kThreads, 0, s>>>(in[0].data, dt_code(from), out[0].data, dt_code(to), n);
                check_launch("cast_integer_kernel");
                return true;
            }
            if (dt_code(from) == dt_none || dt_code(to) == dt_none) return false;
            launch_contiguous(CastOp{}, in, out, n, ctx, "pointwise_contiguous_kernel<CastOp>");
            return true;
        }
        case OpKind::fill: {
            require_arity(k, in, 0, 0, out, 1);
            const std::optional<uint4> pattern = fill_pattern(a.get_double("value", 0.0), out[0].desc.dtype);
            if (!pattern) return false;
            const std::int64_t bytes = out[0].desc.bytes();
            if (bytes == 0) return true;
            const bool aligned = aligned16(out[0].data);
            fill_kernel<<<grid_for(aligned ? bytes / 16 + 1 : bytes), kThreads, 0, s>>>(static_cast<unsigned char*>(out[0].data), bytes,
                                                                                        *pattern, aligned);
            check_launch("fill_kernel");
            return true;
        }
        case OpKind::expand: {
            require_arity(k, in, 1, 1, out, 1);
            if (in[0].desc.dtype != out[0].desc.dtype) return false;
            Layout L;
            if (!make_layout(out[0].desc.shape, {broadcast_strides(in[0].desc.shape, out[0].desc.shape)}, L)) return false;
            const std::int64_t n = out[0].desc.numel();
            if (n == 0) return true;
            switch (dtype_bytes(out[0].desc.dtype)) {
                case 1: launch_expand<std::uint8_t>(in[0], out[0], L, n, s); return true;
                case 2: launch_expand<std::uint16_t>(in[0], out[0], L, n, s); return true;
                case 4: launch_expand<std::uint32_t>(in[0], out[0], L, n, s); return true;
                case 8: launch_expand<std::uint64_t>(in[0], out[0], L, n, s); return true;
                default: return false;
            }
        }
        case OpKind::sgd_update: {
            require_arity(k, in, 2, 3, out, in.size() - 1);
            if (!all_float(in) || !all_float(out)) return false;
            require_same_numel(k, in, out);
            const SgdUpdateOp op{static_cast<float>(a.get_double("lr", 1e-3)), static_cast<float>(a.get_double("momentum", 0)),
                                 static_cast<float>(a.get_double("weight_decay", 0)), static_cast<float>(a.get_double("grad_scale", 1)),
                                 in.size() == 3};
            launch_contiguous(op, in, out, out[0].desc.numel(), ctx, "pointwise_contiguous_kernel<SgdUpdateOp>");
            return true;
        }
        case OpKind::adam_update: {
            require_arity(k, in, 4, 4, out, 3);
            if (!all_float(in) || !all_float(out)) return false;
            require_same_numel(k, in, out);
            const double b1 = a.get_double("beta1", 0.9), b2 = a.get_double("beta2", 0.999);
            const AdamUpdateOp op{static_cast<float>(a.get_double("lr", 1e-3)),
                                  static_cast<float>(b1),
                                  static_cast<float>(b2),
                                  static_cast<float>(1 - b1),
                                  static_cast<float>(1 - b2),
                                  static_cast<float>(a.get_double("eps", 1e-8)),
                                  static_cast<float>(a.get_double("weight_decay", 0)),
                                  static_cast<float>(a.get_double("grad_scale", 1)),
                                  a.get_bool("decoupled", false)};
            launch_contiguous(op, in, out, out[0].desc.numel(), ctx, "pointwise_contiguous_kernel<AdamUpdateOp>");
            return true;
        }
        default: return false;
    }
}

}  // namespace roofline::cuda
