// Row-wise kernels: softmax, layernorm, rmsnorm, cross_entropy and their gradients.
//
// Launch shapes follow the production kernels (Apex / PyTorch / OneFlow softmax and layernorm):
//  * contiguous rows (inner == 1) of up to 512 * 4 16-byte vectors (16384 f16/bf16, 8192 f32
//    elements): row_reg_kernel, a group of tpr threads per row (a power of two <= 32 inside a
//    warp, several rows per 128-thread block; or a block of a multiple of 32 threads per row),
//    4 16-byte vectors per thread held in registers as raw bits (compile-time sized arrays), 32-bit
//    index math, warp-shuffle (+ one shared-memory step across warps) reductions, exp2f;
//    16-byte loads / stores when the row arrays agree in alignment mod 16, the partial first and
//    last vector of a misaligned row element by element;
//  * longer softmax / cross-entropy rows: row_stream_kernel, a 512-thread block per row, a
//    vectorised online max/sum pass, then (softmax, cross_entropy_grad) a write pass;
//  * other long rows (norms, softmax_grad beyond the register capacity) or a strided softmax
//    axis with few columns: one block per row, a shared-memory block reduction; the row is cached
//    in shared memory when it fits (<= 40 KiB), otherwise the passes re-read global memory;
//  * softmax over a non-last axis with many columns: one thread per column (coalesced across the
//    inner dimension), online max/sum then the write;
//  * layernorm/rmsnorm parameter gradients: the dx kernel saves each row's mean and rstd, a
//    second kernel sums dy * x_hat and dy over row chunks per column (partials in ctx.scratch;
//    16-byte loads of 8 f16/bf16 or 4 f32 columns per thread when rows are 16-byte aligned, rows
//    split into chunks for about 4 blocks per SM), a third sums the partials in (32, 32)-thread
//    blocks: deterministic, no atomics;
//  * cross-entropy mean/sum: per-row losses to scratch, then one block sums them in a fixed order.
// Everything is computed in f32 and stored in the tensor's dtype (round to nearest).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/families.hpp"
#include "ops/cuda/launch_shape.hpp"
#include "ops/cuda/float_types.cuh"
#include "ops/error.hpp"

namespace roofline::cuda {
namespace {

constexpr unsigned kFull = 0xffffffffu;
constexpr int kBlockMax = 1024;                 // most threads of the block-per-row kernel
constexpr std::int64_t kCacheBytes = 40 << 10;  // shared-memory row cache of the block kernel

// ---- element access: load as float, store rounded to nearest ----
__device__ __forceinline__ float ld(const float* p, std::int64_t i) { return p[i]; }
__device__ __forceinline__ float ld(const __half* p, std::int64_t i) { return __half2float(p[i]); }
__device__ __forceinline__ float ld(const __nv_bfloat16* p, std::int64_t i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ void st(float* p, std::int64_t i, float v) { p[i] = v; }
__device__ __forceinline__ void st(__half* p, std::int64_t i, float v) { p[i] = __float2half_rn(v); }
__device__ __forceinline__ void st(__nv_bfloat16* p, std::int64_t i, float v) { p[i] = __float2bfloat16_rn(v); }

enum RowOp : int { kSoftmax, kSoftmaxGrad, kNorm, kNormGrad, kCeLoss, kCeGrad };

// One launch's operands. Rows are (outer, inner) pairs of a tensor split around the axis:
// element j of row r lies at (r / inner) * n * inner + r % inner + j * inner (inner = 1 for every
// op but softmax/softmax_grad over a non-last axis).
struct RowParams {
    int op = kSoftmax;
    const void* a = nullptr;       // x (softmax, norms), dy (softmax_grad, norm grads), logits (CE)
    const void* b = nullptr;       // y (softmax_grad), x (norm grads)
    const void* weight = nullptr;  // norm weight [n] or null
    const void* bias = nullptr;    // layernorm bias [n] or null
    void* out = nullptr;           // y / dx / dlogits in T; kCeLoss: float loss per row
    float* row_mean = nullptr;     // kNormGrad: per-row mean and rstd saved for the parameter gradients
    float* row_rstd = nullptr;
    const void* targets = nullptr;  // CE: int32 or int64 class indices, one per row
    int targets_i64 = 0;
    const void* dloss = nullptr;  // kCeGrad: loss gradient (scalar or per row)
    int dloss_dtype = 0;          // 0 f32, 1 f16, 2 bf16
    int dloss_per_row = 0;
    float dloss_div = 1.f;  // rows for reduction "mean", else 1
    std::int64_t rows = 0, n = 0, inner = 1;
    float eps = 1e-5f;
    int rms = 0;
};

// Pairs reduced together: two sums, or (max, sum of exp(x - max)) merged like online softmax.
// Both combinations are commutative, so every lane of an xor-shuffle ends with the same value.
__device__ __forceinline__ float2 combine2(float2 a, float2 b, bool maxsum) {
    if (!maxsum) return make_float2(a.x + b.x, a.y + b.y);
    const float m = fmaxf(a.x, b.x);
    if (m == -INFINITY) return make_float2(m, 0.f);
    return make_float2(m, a.y * expf(a.x - m) + b.y * expf(b.x - m));
}

__device__ __forceinline__ float2 warp_reduce2(float2 v, bool maxsum) {
    for (int o = 16; o > 0; o >>= 1) {
        const float2 w = make_float2(__shfl_xor_sync(kFull, v.x, o), __shfl_xor_sync(kFull, v.y, o));
        v = combine2(v, w, maxsum);
    }
    return v;
}

// Whole-block reduction; every thread of the block must call it. sh holds 33 entries.
__device__ float2 block_reduce2(float2 v, bool maxsum, float2* sh) {
    v = warp_reduce2(v, maxsum);
    const int lane = static_cast<int>(threadIdx.x) & 31, wid = static_cast<int>(threadIdx.x) >> 5;
    const int nw = static_cast<int>(blockDim.x) >> 5;
    __syncthreads();  // the previous reduction's readers are done with sh
    if (lane == 0) sh[wid] = v;
    __syncthreads();
    if (wid == 0) {
        float2 t = lane < nw ? sh[lane] : (maxsum ? make_float2(-INFINITY, 0.f) : make_float2(0.f, 0.f));
        t = warp_reduce2(t, maxsum);
        if (lane == 0) sh[32] = t;
    }
    __syncthreads();
    return sh[32];
}

// Online softmax update of a running (max, sum) with one value. -inf contributes nothing (a
// fully masked row keeps max -inf and sum 0, whose softmax is NaN as in the reference).
__device__ __forceinline__ void online_update(float2& ms, float x) {
    if (x == -INFINITY) return;
    if (x > ms.x) {
        ms.y = ms.y * expf(ms.x - x) + 1.f;
        ms.x = x;
    } else {
        ms.y += expf(x - ms.x);
    }
}

__device__ __forceinline__ std::int64_t load_target(const RowParams& p, std::int64_t row) {
    return p.targets_i64 ? static_cast<const std::int64_t*>(p.targets)[row]
                         : static_cast<std::int64_t>(static_cast<const std::int32_t*>(p.targets)[row]);
}

__device__ __forceinline__ float load_dloss(const RowParams& p, std::int64_t row) {
    const std::int64_t i = p.dloss_per_row ? row : 0;
    switch (p.dloss_dtype) {
        case 1: return __half2float(static_cast<const __half*>(p.dloss)[i]);
        case 2: return __bfloat162float(static_cast<const __nv_bfloat16*>(p.dloss)[i]);
        default: return static_cast<const float*>(p.dloss)[i];
    }
}

// Cross-entropy loss of a row from its max, sum of exp(x - max) and target logit; NaN for a
// target outside [0, n) (the reference throws).
template <class T>
__device__ __forceinline__ float ce_loss(const RowParams& p, const T* A, std::int64_t base, std::int64_t row, float mx, float s) {
    const std::int64_t t = load_target(p, row);
    if (t < 0 || t >= p.n) return NAN;
    return logf(s) + mx - ld(A, base + t);
}

// ---- vectorised access. A row is seen as a "virtual" row that starts at the 16-byte aligned
// address at or below its first element: element j of the virtual row is element j - shift of
// the real row (shift = misalignment in elements), valid for lo = shift <= j < hi = shift + n.
// Vector i of the virtual row covers elements [i * E, i * E + E); a vector entirely inside
// [lo, hi) is read / written by one 16-byte access, a partial one element by element. Values are
// held as raw storage bits in uint4 registers and converted to float when used. ----
template <class T>
struct Tr;
template <>
struct Tr<float> {
    using S = unsigned;
    static constexpr int E = 4;
    static constexpr S kNegInf = 0xff800000u;
    __device__ static float f(S b) { return __uint_as_float(b); }
    __device__ static S b(float v) { return __float_as_uint(v); }
};
template <>
struct Tr<__half> {
    using S = unsigned short;
    static constexpr int E = 8;
    static constexpr S kNegInf = 0xfc00u;
    __device__ static float f(S b) { return __half2float(__ushort_as_half(b)); }
    __device__ static S b(float v) { return __half_as_ushort(__float2half_rn(v)); }
};
template <>
struct Tr<__nv_bfloat16> {
    using S = unsigned short;
    static constexpr int E = 8;
    static constexpr S kNegInf = 0xff80u;
    __device__ static float f(S b) { return __uint_as_float(static_cast<unsigned>(b) << 16); }
    __device__ static S b(float v) { return __bfloat16_as_ushort(__float2bfloat16_rn(v)); }
};

__device__ __forceinline__ unsigned word_of(const uint4& u, int w) { return w == 0 ? u.x : w == 1 ? u.y : w == 2 ? u.z : u.w; }
__device__ __forceinline__ void set_word(uint4& u, int w, unsigned v) {
    if (w == 0)
        u.x = v;
    else if (w == 1)
        u.y = v;
    else if (w == 2)
        u.z = v;
    else
        u.w = v;
}

// Storage bits of element k (a compile-time constant after unrolling) of a vector.
template <class T>
__device__ __forceinline__ typename Tr<T>::S bits_of(const uint4& u, int k) {
    using S = typename Tr<T>::S;
    if constexpr (Tr<T>::E == 4) {
        return word_of(u, k);
    } else {
        const unsigned w = word_of(u, k >> 1);
        return static_cast<S>((k & 1) ? (w >> 16) : (w & 0xffffu));
    }
}

template <class T>
__device__ __forceinline__ void unpack(const uint4& u, float (&f)[Tr<T>::E]) {
#pragma unroll
    for (int k = 0; k < Tr<T>::E; ++k) f[k] = Tr<T>::f(bits_of<T>(u, k));
}

template <class T>
__device__ __forceinline__ uint4 pack(const float (&f)[Tr<T>::E]) {
    uint4 u = make_uint4(0u, 0u, 0u, 0u);
    if constexpr (Tr<T>::E == 4) {
#pragma unroll
        for (int k = 0; k < 4; ++k) set_word(u, k, Tr<T>::b(f[k]));
    } else {
#pragma unroll
        for (int w = 0; w < 4; ++w) {
            set_word(u, w, static_cast<unsigned>(Tr<T>::b(f[2 * w])) | (static_cast<unsigned>(Tr<T>::b(f[2 * w + 1])) << 16));
        }
    }
    return u;
}

// Loads the vector starting at virtual element `start` of row r (pad bits outside [lo, hi)).
template <class T>
__device__ __forceinline__ uint4 vload(const typename Tr<T>::S* r, int start, int lo, int hi, bool vec, typename Tr<T>::S pad) {
    using S = typename Tr<T>::S;
    constexpr int E = Tr<T>::E;
    if (vec && start >= lo && start + E <= hi) return *reinterpret_cast<const uint4*>(r + start);
    S e[E];
#pragma unroll
    for (int k = 0; k < E; ++k) e[k] = (start + k >= lo && start + k < hi) ? r[start + k] : pad;
    uint4 u = make_uint4(0u, 0u, 0u, 0u);
    if constexpr (E == 4) {
#pragma unroll
        for (int k = 0; k < 4; ++k) set_word(u, k, e[k]);
    } else {
#pragma unroll
        for (int w = 0; w < 4; ++w) set_word(u, w, static_cast<unsigned>(e[2 * w]) | (static_cast<unsigned>(e[2 * w + 1]) << 16));
    }
    return u;
}

template <class T>
__device__ __forceinline__ void vstore(typename Tr<T>::S* r, int start, int lo, int hi, bool vec, const uint4& u) {
    constexpr int E = Tr<T>::E;
    if (vec && start >= lo && start + E <= hi) {
        *reinterpret_cast<uint4*>(r + start) = u;
        return;
    }
#pragma unroll
    for (int k = 0; k < E; ++k) {
        if (start + k >= lo && start + k < hi) r[start + k] = bits_of<T>(u, k);
    }
}

constexpr float kLog2e = 1.4426950408889634f;
constexpr int kRegBlockMax = 512;  // most threads of the register kernel (one row per block above 32 threads per row)

// Reduction over the tpr threads of a row group. tpr <= 32: a power of two, the group a segment
// of one warp (xor shuffles stay inside it); tpr > 32: the whole block is the group (a shared
// memory step over its warps, combined in a fixed order so every thread gets the same value).
template <bool MAX>
__device__ __forceinline__ float2 group_reduce(float2 v, int tpr, float2* sh) {
    const int w = tpr < 32 ? tpr : 32;
    for (int o = w >> 1; o > 0; o >>= 1) {
        const float x = __shfl_xor_sync(kFull, v.x, o), y = __shfl_xor_sync(kFull, v.y, o);
        v = MAX ? make_float2(fmaxf(v.x, x), fmaxf(v.y, y)) : make_float2(v.x + x, v.y + y);
    }
    if (tpr <= 32) return v;
    const int lane = static_cast<int>(threadIdx.x) & 31, wid = static_cast<int>(threadIdx.x) >> 5;
    const int nw = static_cast<int>(blockDim.x) >> 5;
    __syncthreads();  // the previous reduction's readers are done with sh
    if (lane == 0) sh[wid] = v;
    __syncthreads();
    float2 r = sh[0];
    for (int i = 1; i < nw; ++i) {
        const float2 q = sh[i];
        r = MAX ? make_float2(fmaxf(r.x, q.x), fmaxf(r.y, q.y)) : make_float2(r.x + q.x, r.y + q.y);
    }
    return r;
}

// ---- rows held in registers (inner == 1): a group of tpr threads per row, VPT 16-byte vectors
// per thread (vector i of thread t is vector i * tpr + t of the virtual row: coalesced). TWO:
// the two-input ops (softmax_grad, layernorm/rmsnorm_grad); otherwise softmax, the norms and
// cross-entropy. vec: the row arrays share their alignment mod 16 (16-byte accesses allowed);
// vec_w: weight and bias are 16-byte aligned (vector loads of them when a row is aligned). ----
template <class T, int VPT, bool TWO>
__global__ void __launch_bounds__(kRegBlockMax) row_reg_kernel(RowParams p, int tpr, int vec_i, int vec_w_i) {
    using R = Tr<T>;
    using S = typename R::S;
    constexpr int E = R::E;
    __shared__ float2 red[kRegBlockMax / 32];
    const S* A = static_cast<const S*>(p.a);
    const S* B = static_cast<const S*>(p.b);
    const S* W = static_cast<const S*>(p.weight);
    const S* Bi = static_cast<const S*>(p.bias);
    S* O = static_cast<S*>(p.out);
    const bool vec = vec_i != 0;
    const int tid = static_cast<int>(threadIdx.x);
    const int rpb = static_cast<int>(blockDim.x) / tpr;
    const int t = tpr > 32 ? tid : (tid & (tpr - 1));
    const int n = static_cast<int>(p.n);
    const float fn = static_cast<float>(n);
    const bool exp_op = !TWO && (p.op == kSoftmax || p.op == kCeLoss || p.op == kCeGrad);
    const S pad = exp_op ? R::kNegInf : S(0);
    for (std::int64_t rb = blockIdx.x; rb * rpb < p.rows; rb += gridDim.x) {
        const std::int64_t row = rb * rpb + tid / tpr;
        const bool live = row < p.rows;
        const std::int64_t base = (live ? row : 0) * p.n;
        const int shift = static_cast<int>((reinterpret_cast<std::uintptr_t>(A + base) & 15u) / sizeof(S));
        const int lo = shift, hi = live ? shift + n : shift;
        const S* a = A + base - shift;
        uint4 ra[VPT];
#pragma unroll
        for (int i = 0; i < VPT; ++i) ra[i] = vload<T>(a, (i * tpr + t) * E, lo, hi, vec, pad);
        S* o = O + base - shift;
        if constexpr (!TWO) {
            if (exp_op) {
                float mx = -INFINITY;
#pragma unroll
                for (int i = 0; i < VPT; ++i) {
                    float f[E];
                    unpack<T>(ra[i], f);
#pragma unroll
                    for (int k = 0; k < E; ++k) mx = fmaxf(mx, f[k]);
                }
                mx = group_reduce<true>(make_float2(mx, mx), tpr, red).x;
                const float mxl = mx * kLog2e;
                float s = 0.f;
#pragma unroll
                for (int i = 0; i < VPT; ++i) {
                    float f[E];
                    unpack<T>(ra[i], f);
#pragma unroll
                    for (int k = 0; k < E; ++k) s += exp2f(fmaf(f[k], kLog2e, -mxl));
                }
                s = group_reduce<false>(make_float2(s, 0.f), tpr, red).x;
                if (p.op == kCeLoss) {
                    if (live && t == 0) static_cast<float*>(p.out)[row] = ce_loss(p, static_cast<const T*>(p.a), base, row, mx, s);
                } else if (live) {
                    const float inv = 1.f / s;
                    float d = 1.f;
                    int tv = -1;  // virtual index of the target (-1: none)
                    if (p.op == kCeGrad) {
                        const std::int64_t tt = load_target(p, row);
                        tv = (tt >= 0 && tt < p.n) ? static_cast<int>(tt) + shift : -1;
                        d = load_dloss(p, row) / p.dloss_div;
                    }
#pragma unroll
                    for (int i = 0; i < VPT; ++i) {
                        const int start = (i * tpr + t) * E;
                        if (start >= hi) continue;
                        float f[E];
                        unpack<T>(ra[i], f);
#pragma unroll
                        for (int k = 0; k < E; ++k) {
                            const float y = exp2f(fmaf(f[k], kLog2e, -mxl)) * inv;
                            f[k] = p.op == kCeGrad ? (y - (start + k == tv ? 1.f : 0.f)) * d : y;
                        }
                        vstore<T>(o, start, lo, hi, vec, pack<T>(f));
                    }
                }
            } else {  // kNorm: x in ra
                const bool vec_w = vec_w_i != 0 && shift == 0;
                float mean = 0.f;
                if (!p.rms) {
                    float s = 0.f;
#pragma unroll
                    for (int i = 0; i < VPT; ++i) {
                        float f[E];
                        unpack<T>(ra[i], f);
#pragma unroll
                        for (int k = 0; k < E; ++k) s += f[k];
                    }
                    mean = group_reduce<false>(make_float2(s, 0.f), tpr, red).x / fn;
                }
                float sq = 0.f;
#pragma unroll
                for (int i = 0; i < VPT; ++i) {
                    const int start = (i * tpr + t) * E;
                    float f[E];
                    unpack<T>(ra[i], f);
#pragma unroll
                    for (int k = 0; k < E; ++k) {
                        const float dv = (start + k >= lo && start + k < hi) ? f[k] - mean : 0.f;
                        sq += dv * dv;
                    }
                }
                const float rstd = 1.f / sqrtf(group_reduce<false>(make_float2(sq, 0.f), tpr, red).x / fn + p.eps);
                if (live) {
#pragma unroll
                    for (int i = 0; i < VPT; ++i) {
                        const int start = (i * tpr + t) * E;
                        if (start >= hi) continue;
                        float f[E], w[E], bb[E];
                        unpack<T>(ra[i], f);
                        if (W != nullptr) unpack<T>(vload<T>(W - shift, start, lo, hi, vec_w, S(0)), w);
                        if (Bi != nullptr) unpack<T>(vload<T>(Bi - shift, start, lo, hi, vec_w, S(0)), bb);
#pragma unroll
                        for (int k = 0; k < E; ++k) {
                            float y = (f[k] - mean) * rstd;
                            if (W != nullptr) y *= w[k];
                            if (Bi != nullptr) y += bb[k];
                            f[k] = y;
                        }
                        vstore<T>(o, start, lo, hi, vec, pack<T>(f));
                    }
                }
            }
        } else {
            uint4 rb2[VPT];
            const S* b = B + base - shift;
#pragma unroll
            for (int i = 0; i < VPT; ++i) rb2[i] = vload<T>(b, (i * tpr + t) * E, lo, hi, vec, S(0));
            if (p.op == kSoftmaxGrad) {  // dy in ra, y in rb2
                float dot = 0.f;
#pragma unroll
                for (int i = 0; i < VPT; ++i) {
                    float f[E], g[E];
                    unpack<T>(ra[i], f);
                    unpack<T>(rb2[i], g);
#pragma unroll
                    for (int k = 0; k < E; ++k) dot += f[k] * g[k];
                }
                dot = group_reduce<false>(make_float2(dot, 0.f), tpr, red).x;
                if (live) {
#pragma unroll
                    for (int i = 0; i < VPT; ++i) {
                        const int start = (i * tpr + t) * E;
                        if (start >= hi) continue;
                        float f[E], g[E];
                        unpack<T>(ra[i], f);
                        unpack<T>(rb2[i], g);
#pragma unroll
                        for (int k = 0; k < E; ++k) f[k] = g[k] * (f[k] - dot);
                        vstore<T>(o, start, lo, hi, vec, pack<T>(f));
                    }
                }
            } else {  // kNormGrad: dy in ra, x in rb2
                const bool vec_w = vec_w_i != 0 && shift == 0;
                float mean = 0.f;
                if (!p.rms) {
                    float s = 0.f;
#pragma unroll
                    for (int i = 0; i < VPT; ++i) {
                        float g[E];
                        unpack<T>(rb2[i], g);
#pragma unroll
                        for (int k = 0; k < E; ++k) s += g[k];
                    }
                    mean = group_reduce<false>(make_float2(s, 0.f), tpr, red).x / fn;
                }
                float sq = 0.f;
#pragma unroll
                for (int i = 0; i < VPT; ++i) {
                    const int start = (i * tpr + t) * E;
                    float g[E];
                    unpack<T>(rb2[i], g);
#pragma unroll
                    for (int k = 0; k < E; ++k) {
                        const float dv = (start + k >= lo && start + k < hi) ? g[k] - mean : 0.f;
                        sq += dv * dv;
                    }
                }
                const float rstd = 1.f / sqrtf(group_reduce<false>(make_float2(sq, 0.f), tpr, red).x / fn + p.eps);
                float2 m2 = make_float2(0.f, 0.f);
#pragma unroll
                for (int i = 0; i < VPT; ++i) {
                    const int start = (i * tpr + t) * E;
                    float f[E], g[E], w[E];
                    unpack<T>(ra[i], f);
                    unpack<T>(rb2[i], g);
                    if (W != nullptr) unpack<T>(vload<T>(W - shift, start, lo, hi, vec_w, S(0)), w);
#pragma unroll
                    for (int k = 0; k < E; ++k) {
                        const float gg = W != nullptr ? f[k] * w[k] : f[k];
                        m2.x += gg;
                        m2.y += gg * ((g[k] - mean) * rstd);
                    }
                }
                m2 = group_reduce<false>(m2, tpr, red);
                const float mg = p.rms ? 0.f : m2.x / fn, mgx = m2.y / fn;
                if (live) {
#pragma unroll
                    for (int i = 0; i < VPT; ++i) {
                        const int start = (i * tpr + t) * E;
                        if (start >= hi) continue;
                        float f[E], g[E], w[E];
                        unpack<T>(ra[i], f);
                        unpack<T>(rb2[i], g);
                        if (W != nullptr) unpack<T>(vload<T>(W - shift, start, lo, hi, vec_w, S(0)), w);
#pragma unroll
                        for (int k = 0; k < E; ++k) {
                            const float gg = W != nullptr ? f[k] * w[k] : f[k];
                            const float xh = (g[k] - mean) * rstd;
                            f[k] = rstd * (gg - mg - xh * mgx);
                        }
                        vstore<T>(o, start, lo, hi, vec, pack<T>(f));
                    }
                    if (t == 0 && p.row_mean != nullptr) {
                        p.row_mean[row] = mean;
                        p.row_rstd[row] = rstd;
                    }
                }
            }
        }
    }
}

// ---- softmax / cross-entropy over rows too long for registers (inner == 1): a block per row,
// pass 1 streams the row with 16-byte loads keeping a per-thread online (max, sum), then a
// block reduction; pass 2 (softmax, cross_entropy_grad) re-reads the row (mostly from L2, the
// block read it moments ago) and writes. ----
constexpr int kStreamBlock = 512;
constexpr int kStreamUnroll = 4;

template <class T>
__global__ void __launch_bounds__(kStreamBlock, 2) row_stream_kernel(RowParams p, int vec_i) {
    using R = Tr<T>;
    using S = typename R::S;
    constexpr int E = R::E;
    __shared__ float2 red[33];
    const S* A = static_cast<const S*>(p.a);
    S* O = static_cast<S*>(p.out);
    const bool vec = vec_i != 0;
    const int tid = static_cast<int>(threadIdx.x), nt = static_cast<int>(blockDim.x);
    const int n = static_cast<int>(p.n);
    // A word of -inf elements (both halves for the 16-bit types).
    const unsigned ninf_w = E == 4 ? static_cast<unsigned>(R::kNegInf) : static_cast<unsigned>(R::kNegInf) * 0x10001u;
    for (std::int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
        const std::int64_t base = row * p.n;
        const int shift = static_cast<int>((reinterpret_cast<std::uintptr_t>(A + base) & 15u) / sizeof(S));
        const int lo = shift, hi = shift + n;
        const int nv = (hi + E - 1) / E;
        const S* a = A + base - shift;
        float m = -INFINITY, s = 0.f;  // running max and sum of exp(x - m) of this thread
        for (int v0 = tid; v0 < nv; v0 += nt * kStreamUnroll) {
            uint4 r[kStreamUnroll];
#pragma unroll
            for (int u = 0; u < kStreamUnroll; ++u) {
                const int v = v0 + u * nt;
                r[u] = v < nv ? vload<T>(a, v * E, lo, hi, vec, R::kNegInf) : make_uint4(ninf_w, ninf_w, ninf_w, ninf_w);
            }
#pragma unroll
            for (int u = 0; u < kStreamUnroll; ++u) {
                float f[E];
                unpack<T>(r[u], f);
                float lm = f[0];
#pragma unroll
                for (int k = 1; k < E; ++k) lm = fmaxf(lm, f[k]);
                if (lm == -INFINITY) continue;  // nothing but -inf (or padding): contributes nothing
                if (lm > m) {
                    s *= exp2f((m - lm) * kLog2e);
                    m = lm;
                }
                const float ml = m * kLog2e;
#pragma unroll
                for (int k = 0; k < E; ++k) s += exp2f(fmaf(f[k], kLog2e, -ml));
            }
        }
        const float2 ms = block_reduce2(make_float2(m, s), true, red);
        const float mx = ms.x, sum = ms.y;
        if (p.op == kCeLoss) {
            if (tid == 0) static_cast<float*>(p.out)[row] = ce_loss(p, static_cast<const T*>(p.a), base, row, mx, sum);
            continue;
        }
        const float mxl = mx * kLog2e, inv = 1.f / sum;
        float d = 1.f;
        int tv = -1;
        if (p.op == kCeGrad) {
            const std::int64_t tt = load_target(p, row);
            tv = (tt >= 0 && tt < p.n) ? static_cast<int>(tt) + shift : -1;
            d = load_dloss(p, row) / p.dloss_div;
        }
        S* o = O + base - shift;
        for (int v0 = tid; v0 < nv; v0 += nt * kStreamUnroll) {
            uint4 r[kStreamUnroll];
#pragma unroll
            for (int u = 0; u < kStreamUnroll; ++u) {
                const int v = v0 + u * nt;
                r[u] = v < nv ? vload<T>(a, v * E, lo, hi, vec, R::kNegInf) : make_uint4(0u, 0u, 0u, 0u);
            }
#pragma unroll
            for (int u = 0; u < kStreamUnroll; ++u) {
                const int v = v0 + u * nt;
                if (v >= nv) continue;
                float f[E];
                unpack<T>(r[u], f);
#pragma unroll
                for (int k = 0; k < E; ++k) {
                    const float y = exp2f(fmaf(f[k], kLog2e, -mxl)) * inv;
                    f[k] = p.op == kCeGrad ? (y - (v * E + k == tv ? 1.f : 0.f)) * d : y;
                }
                vstore<T>(o, v * E, lo, hi, vec, pack<T>(f));
            }
        }
    }
}

// ---- one block per row (any n, any inner); the row cached in dynamic shared memory when
// `cache` (n floats of a, then n of b for the two-input ops). Each thread only ever touches the
// elements j = threadIdx.x + k * blockDim.x, so the cache needs no barriers of its own. ----
template <class T>
__global__ void __launch_bounds__(kBlockMax) row_block_kernel(RowParams p, int cache) {
    extern __shared__ float row_cache[];
    __shared__ float2 red[33];
    const T* A = static_cast<const T*>(p.a);
    const T* B = static_cast<const T*>(p.b);
    const T* W = static_cast<const T*>(p.weight);
    const T* Bi = static_cast<const T*>(p.bias);
    T* O = static_cast<T*>(p.out);
    const std::int64_t n = p.n, inner = p.inner;
    const float fn = static_cast<float>(n);
    const int tid = static_cast<int>(threadIdx.x), nt = static_cast<int>(blockDim.x);
    float* ca = cache ? row_cache : nullptr;
    float* cb = cache ? row_cache + n : nullptr;
    const bool two = p.op == kSoftmaxGrad || p.op == kNormGrad;
    for (std::int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
        const std::int64_t base = (row / inner) * n * inner + row % inner;
        auto get_a = [&](std::int64_t j) { return ca != nullptr ? ca[j] : ld(A, base + j * inner); };
        auto get_b = [&](std::int64_t j) { return cb != nullptr ? cb[j] : ld(B, base + j * inner); };
        if (p.op == kSoftmax || p.op == kCeLoss || p.op == kCeGrad) {
            float2 ms = make_float2(-INFINITY, 0.f);
            for (std::int64_t j = tid; j < n; j += nt) {
                const float x = ld(A, base + j * inner);
                if (ca != nullptr) ca[j] = x;
                online_update(ms, x);
            }
            ms = block_reduce2(ms, true, red);
            const float mx = ms.x, s = ms.y;
            if (p.op == kSoftmax) {
                for (std::int64_t j = tid; j < n; j += nt) st(O, base + j * inner, expf(get_a(j) - mx) / s);
            } else if (p.op == kCeLoss) {
                if (tid == 0) static_cast<float*>(p.out)[row] = ce_loss(p, A, base, row, mx, s);
            } else {
                const std::int64_t t = load_target(p, row);
                const float d = load_dloss(p, row) / p.dloss_div;
                for (std::int64_t j = tid; j < n; j += nt) {
                    st(O, base + j * inner, (expf(get_a(j) - mx) / s - (j == t ? 1.f : 0.f)) * d);
                }
            }
        } else if (p.op == kSoftmaxGrad) {
            float dot = 0.f;
            for (std::int64_t j = tid; j < n; j += nt) {
                const float dy = ld(A, base + j * inner), y = ld(B, base + j * inner);
                if (ca != nullptr) {
                    ca[j] = dy;
                    cb[j] = y;
                }
                dot += dy * y;
            }
            dot = block_reduce2(make_float2(dot, 0.f), false, red).x;
            for (std::int64_t j = tid; j < n; j += nt) {
                const float y = get_b(j);
                st(O, base + j * inner, y * (get_a(j) - dot));
            }
        } else {  // kNorm (x in a) or kNormGrad (dy in a, x in b); inner == 1
            auto get_x = [&](std::int64_t j) { return two ? get_b(j) : get_a(j); };
            float s = 0.f;
            for (std::int64_t j = tid; j < n; j += nt) {
                const float av = ld(A, base + j);
                if (ca != nullptr) ca[j] = av;
                float x = av;
                if (two) {
                    x = ld(B, base + j);
                    if (cb != nullptr) cb[j] = x;
                }
                s += x;
            }
            const float mean = p.rms ? 0.f : block_reduce2(make_float2(s, 0.f), false, red).x / fn;
            float sq = 0.f;
            for (std::int64_t j = tid; j < n; j += nt) {
                const float dv = get_x(j) - mean;
                sq += dv * dv;
            }
            const float rstd = 1.f / sqrtf(block_reduce2(make_float2(sq, 0.f), false, red).x / fn + p.eps);
            if (p.op == kNorm) {
                for (std::int64_t j = tid; j < n; j += nt) {
                    float y = (get_a(j) - mean) * rstd;
                    if (W != nullptr) y *= ld(W, j);
                    if (Bi != nullptr) y += ld(Bi, j);
                    st(O, base + j, y);
                }
            } else {
                float2 m2 = make_float2(0.f, 0.f);
                for (std::int64_t j = tid; j < n; j += nt) {
                    const float g = get_a(j) * (W != nullptr ? ld(W, j) : 1.f);
                    m2.x += g;
                    m2.y += g * ((get_b(j) - mean) * rstd);
                }
                m2 = block_reduce2(m2, false, red);
                const float mg = p.rms ? 0.f : m2.x / fn, mgx = m2.y / fn;
                for (std::int64_t j = tid; j < n; j += nt) {
                    const float g = get_a(j) * (W != nullptr ? ld(W, j) : 1.f);
                    const float xh = (get_b(j) - mean) * rstd;
                    st(O, base + j, rstd * (g - mg - xh * mgx));
                }
                if (tid == 0 && p.row_mean != nullptr) {
                    p.row_mean[row] = mean;
                    p.row_rstd[row] = rstd;
                }
            }
        }
    }
}

// ---- softmax / softmax_grad over a non-last axis: one thread per (outer, inner) column;
// consecutive threads read consecutive addresses. ----
template <class T>
__global__ void __launch_bounds__(256) row_column_kernel(RowParams p) {
    const T* A = static_cast<const T*>(p.a);
    const T* B = static_cast<const T*>(p.b);
    T* O = static_cast<T*>(p.out);
    const std::int64_t n = p.n, inner = p.inner;
    const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
    for (std::int64_t col = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; col < p.rows; col += stride) {
        const std::int64_t base = (col / inner) * n * inner + col % inner;
        if (p.op == kSoftmax) {
            float2 ms = make_float2(-INFINITY, 0.f);
            for (std::int64_t j = 0; j < n; ++j) online_update(ms, ld(A, base + j * inner));
            for (std::int64_t j = 0; j < n; ++j) st(O, base + j * inner, expf(ld(A, base + j * inner) - ms.x) / ms.y);
        } else {
            float dot = 0.f;
            for (std::int64_t j = 0; j < n; ++j) dot += ld(A, base + j * inner) * ld(B, base + j * inner);
            for (std::int64_t j = 0; j < n; ++j) {
                const std::int64_t e = base + j * inner;
                st(O, e, ld(B, e) * (ld(A, e) - dot));
            }
        }
    }
}

// ---- layernorm/rmsnorm parameter gradients: block (32, 8) per 32 columns and one chunk of
// rows; partial sums of dy * x_hat (and dy) per chunk and column. ----
template <class T>
__global__ void __launch_bounds__(256)
    norm_param_partial_kernel(const T* dy, const T* x, const float* mean, const float* rstd, float* pw, float* pb, std::int64_t rows,
                              std::int64_t d, std::int64_t rows_per_chunk) {
    __shared__ float sw[8][33];
    __shared__ float sb[8][33];
    const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
    const std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * 32 + tx;
    const std::int64_t r0 = static_cast<std::int64_t>(blockIdx.y) * rows_per_chunk;
    const std::int64_t r1 = r0 + rows_per_chunk < rows ? r0 + rows_per_chunk : rows;
    float aw = 0.f, ab = 0.f;
    if (j < d) {
        for (std::int64_t r = r0 + ty; r < r1; r += 8) {
            const float g = ld(dy, r * d + j);
            aw += g * ((ld(x, r * d + j) - mean[r]) * rstd[r]);
            ab += g;
        }
    }
    sw[ty][tx] = aw;
    sb[ty][tx] = ab;
    __syncthreads();
    if (ty == 0 && j < d) {
        float tw = 0.f, tb = 0.f;
        for (int i = 0; i < 8; ++i) {
            tw += sw[i][tx];
            tb += sb[i][tx];
        }
        pw[static_cast<std::int64_t>(blockIdx.y) * d + j] = tw;
        if (pb != nullptr) pb[static_cast<std::int64_t>(blockIdx.y) * d + j] = tb;
    }
}

// The same partial sums with 16-byte loads (d % E == 0, dy and x 16-byte aligned): thread (tx, ty)
// of a (32, 8) block owns the E consecutive columns of vector kv = blockIdx.x * 32 + tx and walks
// rows r0 + ty, r0 + ty + 8, ... of chunk blockIdx.y (2 rows = 4 16-byte loads in flight),
// accumulating in f32 registers; the 8 row lanes are combined in shared memory in a fixed order.
constexpr int kParamUnroll = 2;
template <class T>
__global__ void __launch_bounds__(256)
    norm_param_partial_vec_kernel(const T* __restrict__ dy, const T* __restrict__ x, const float* __restrict__ mean,
                                  const float* __restrict__ rstd, float* __restrict__ pw, float* __restrict__ pb, std::int64_t rows,
                                  std::int64_t d, std::int64_t rows_per_chunk) {
    using S = typename Tr<T>::S;
    constexpr int E = Tr<T>::E;
    __shared__ float sw[E][8][32];
    __shared__ float sb[E][8][32];
    const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
    const std::int64_t kv = static_cast<std::int64_t>(blockIdx.x) * 32 + tx;
    const bool live = kv * E < d;
    const std::int64_t r0 = static_cast<std::int64_t>(blockIdx.y) * rows_per_chunk;
    const std::int64_t r1 = r0 + rows_per_chunk < rows ? r0 + rows_per_chunk : rows;
    const S* G = reinterpret_cast<const S*>(dy) + kv * E;
    const S* X = reinterpret_cast<const S*>(x) + kv * E;
    float aw[E], ab[E];
#pragma unroll
    for (int e = 0; e < E; ++e) aw[e] = ab[e] = 0.f;
    if (live) {
        for (std::int64_t r = r0 + ty; r < r1; r += 8 * kParamUnroll) {
            uint4 gv[kParamUnroll], xv[kParamUnroll];
            float m[kParamUnroll], rs[kParamUnroll];
#pragma unroll
            for (int u = 0; u < kParamUnroll; ++u) {
                const std::int64_t ru = r + 8 * u;
                const bool in = ru < r1;
                gv[u] = in ? *reinterpret_cast<const uint4*>(G + ru * d) : make_uint4(0u, 0u, 0u, 0u);
                xv[u] = in ? *reinterpret_cast<const uint4*>(X + ru * d) : make_uint4(0u, 0u, 0u, 0u);
                m[u] = in ? mean[ru] : 0.f;
                rs[u] = in ? rstd[ru] : 0.f;
            }
#pragma unroll
            for (int u = 0; u < kParamUnroll; ++u) {
                float g[E], xf[E];
                unpack<T>(gv[u], g);
                unpack<T>(xv[u], xf);
#pragma unroll
                for (int e = 0; e < E; ++e) {  // rows past r1 load zeros: they add 0
                    aw[e] += g[e] * ((xf[e] - m[u]) * rs[u]);
                    ab[e] += g[e];
                }
            }
        }
    }
#pragma unroll
    for (int e = 0; e < E; ++e) {
        sw[e][ty][tx] = aw[e];
        sb[e][ty][tx] = ab[e];
    }
    __syncthreads();
    // Thread (tx, ty < E) finishes column kv * E + ty: row lanes 0..7 in order.
    if (ty < E && live) {
        float tw = sw[ty][0][tx], tb = sb[ty][0][tx];
#pragma unroll
        for (int i = 1; i < 8; ++i) {
            tw += sw[ty][i][tx];
            tb += sb[ty][i][tx];
        }
        const std::int64_t o = static_cast<std::int64_t>(blockIdx.y) * d + kv * E + ty;
        pw[o] = tw;
        if (pb != nullptr) pb[o] = tb;
    }
}

// Sums chunks x d partials per column into out[d] (and out_b[d] from pb when pb != null): a
// (32, 32) block per 32 consecutive columns, lane ty summing chunks ty, ty + 32, ..., the 32
// lanes then combined in shared memory in a fixed order (deterministic).
template <class T>
__global__ void __launch_bounds__(1024) column_sum_kernel(const float* __restrict__ pw, const float* __restrict__ pb, std::int64_t chunks,
                                                          std::int64_t d, T* __restrict__ out_w, T* __restrict__ out_b) {
    __shared__ float sw[32][33];
    __shared__ float sb[32][33];
    const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
    for (std::int64_t jb = static_cast<std::int64_t>(blockIdx.x) * 32; jb < d; jb += static_cast<std::int64_t>(gridDim.x) * 32) {
        const std::int64_t j = jb + tx;
        float aw = 0.f, ab = 0.f;
        if (j < d) {
#pragma unroll 4
            for (std::int64_t c = ty; c < chunks; c += 32) {
                aw += pw[c * d + j];
                if (pb != nullptr) ab += pb[c * d + j];
            }
        }
        __syncthreads();  // the previous iteration's readers of sw / sb are done
        sw[ty][tx] = aw;
        sb[ty][tx] = ab;
        __syncthreads();
        if (ty == 0 && j < d) {
            float tw = sw[0][tx], tb = sb[0][tx];
            for (int i = 1; i < 32; ++i) {
                tw += sw[i][tx];
                tb += sb[i][tx];
            }
            st(out_w, j, tw);
            if (pb != nullptr) st(out_b, j, tb);
        }
    }
}

// Cross-entropy reduction "mean" / "sum": one block sums the per-row losses in a fixed order.
__global__ void __launch_bounds__(1024) loss_reduce_kernel(const float* losses, std::int64_t rows, float* out, int mean) {
    __shared__ float2 red[33];
    float s = 0.f;
    for (std::int64_t r = threadIdx.x; r < rows; r += blockDim.x) s += losses[r];
    s = block_reduce2(make_float2(s, 0.f), false, red).x;
    if (threadIdx.x == 0) out[0] = rows == 0 ? 0.f : (mean ? s / static_cast<float>(rows) : s);
}

// ---- host side ----

bool is_device_float(DType d) { return d == DType::f32 || d == DType::f16 || d == DType::bf16; }

bool all_dtype(const Tensors& ts, DType d) {
    return std::all_of(ts.begin(), ts.end(), [d](const DeviceTensor& t) { return t.desc.dtype == d; });
}

void* scratch(LaunchContext& ctx, std::size_t bytes) {
    if (!ctx.scratch) throw CudaError("row-wise kernels need scratch memory, and the launch context has no allocator");
    return ctx.scratch(bytes);
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// Launches the row kernel that fits p's shape; returns a note describing it.
std::uintptr_t addr(const void* q) { return reinterpret_cast<std::uintptr_t>(q); }

// Grid of a kernel: enough blocks for the work, at most what is resident on the GPU at once.
template <class K>
unsigned resident_grid(K kernel, int threads, std::int64_t blocks_needed, int sms) {
    int per_sm = 0;
    check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0), "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
    const std::int64_t cap = std::int64_t{sms} * std::max(per_sm, 1);
    return static_cast<unsigned>(std::max<std::int64_t>(1, std::min(blocks_needed, cap)));
}

// Register-kernel configuration for a row of nv vectors: VPT vectors per thread, tpr threads per
// row (a power of two up to 32, else a multiple of 32 up to kRegBlockMax).
struct RegConfig {
    int vpt = 0, tpr = 0;
};

RegConfig reg_config(std::int64_t nv) {
    auto tpr_for = [nv](int vpt) -> std::int64_t {
        const std::int64_t need = ceil_div(nv, vpt);
        if (need <= 32) {
            std::int64_t t = 1;
            while (t < need) t <<= 1;
            return t;
        }
        return ceil_div(need, 32) * 32;
    };
    // 4 vectors per thread (64 bytes of each input array in flight per thread); more per thread
    // would keep too many unpacked values live and spill.
    if (tpr_for(4) <= kRegBlockMax) return {4, static_cast<int>(tpr_for(4))};
    return {};
}

template <class T, int VPT, bool TWO>
std::string launch_reg(const RowParams& p, RegConfig c, bool vec, bool vec_w, int sms, LaunchContext& ctx) {
    const int threads = c.tpr > 32 ? c.tpr : 128;
    const int rpb = threads / c.tpr;
    const unsigned grid = resident_grid(row_reg_kernel<T, VPT, TWO>, threads, ceil_div(p.rows, rpb), sms);
    row_reg_kernel<T, VPT, TWO><<<grid, threads, 0, ctx.stream>>>(p, c.tpr, vec ? 1 : 0, vec_w ? 1 : 0);
    check_launch("row_reg_kernel");
    return std::to_string(c.tpr) + " threads per row, " + std::to_string(rpb) + " rows per " + std::to_string(threads) +
           "-thread block, row in registers (" + std::to_string(VPT) + " x 16 bytes per thread), " +
           (vec ? "16-byte accesses" : "element accesses (arrays differently aligned)");
}

template <class T>
std::string launch_rows(const RowParams& p, LaunchContext& ctx) {
    const int sms = sm_count();
    if (p.inner == 1) {
        constexpr int E = Tr<T>::E;
        constexpr std::uintptr_t kElem = sizeof(T);
        const bool two = p.op == kSoftmaxGrad || p.op == kNormGrad;
        // Rows share one misalignment pattern across the row arrays when their addresses agree mod 16.
        bool vec = true;
        for (const void* q : {p.b, static_cast<const void*>(p.out)}) {
            if (q != nullptr && !(p.op == kCeLoss && q == p.out) && (addr(q) & 15u) != (addr(p.a) & 15u)) vec = false;
        }
        if ((addr(p.a) % kElem) != 0) vec = false;
        bool vec_w = true;
        for (const void* q : {p.weight, p.bias}) {
            if (q != nullptr && (addr(q) & 15u) != 0) vec_w = false;
        }
        // Worst-case misalignment of a row start in elements (0 when every row starts aligned).
        const bool aligned_rows = (addr(p.a) & 15u) == 0 && (p.n * static_cast<std::int64_t>(sizeof(T))) % 16 == 0;
        const std::int64_t nv = ceil_div(p.n + (aligned_rows ? 0 : E - 1), E);
        const RegConfig c = reg_config(nv);
        if (c.vpt != 0) {
            return two ? launch_reg<T, 4, true>(p, c, vec, vec_w, sms, ctx) : launch_reg<T, 4, false>(p, c, vec, vec_w, sms, ctx);
        }
        if ((p.op == kSoftmax || p.op == kCeLoss || p.op == kCeGrad) && p.n <= 0x7fffff00) {
            const unsigned grid = resident_grid(row_stream_kernel<T>, kStreamBlock, p.rows, sms);
            row_stream_kernel<T><<<grid, kStreamBlock, 0, ctx.stream>>>(p, vec ? 1 : 0);
            check_launch("row_stream_kernel");
            return std::string("block per row, ") + std::to_string(kStreamBlock) + " threads, online max/sum pass" +
                   (p.op == kCeLoss ? "" : " then a write pass") + (vec ? ", 16-byte accesses" : ", element accesses");
        }
    }
    const bool softmax_like = p.op == kSoftmax || p.op == kSoftmaxGrad;
    if (p.inner > 1 && softmax_like && (p.rows >= 2048 || p.n <= 64)) {
        const auto grid = static_cast<unsigned>(std::min<std::int64_t>(ceil_div(p.rows, 256), std::int64_t{sms} * 32));
        row_column_kernel<T><<<grid, 256, 0, ctx.stream>>>(p);
        check_launch("row_column_kernel");
        return "thread per column of the strided axis, 256-thread blocks";
    }
    const int threads = p.n >= 16384 ? 1024 : p.n > 1024 ? 512 : 128;
    const std::int64_t arrays = (p.op == kSoftmaxGrad || p.op == kNormGrad) ? 2 : 1;
    const std::int64_t cache_bytes = arrays * p.n * static_cast<std::int64_t>(sizeof(float));
    const bool cache = cache_bytes <= kCacheBytes && p.op != kCeLoss;  // the loss reads each logit once
    const auto grid = static_cast<unsigned>(std::min<std::int64_t>(p.rows, std::int64_t{sms} * 16));
    row_block_kernel<T><<<grid, threads, cache ? static_cast<std::size_t>(cache_bytes) : 0, ctx.stream>>>(p, cache ? 1 : 0);
    check_launch("row_block_kernel");
    return "block per row, " + std::to_string(threads) + " threads, " +
           (cache ? "row cached in shared memory" : "passes re-read global memory");
}

// dweight (and dbias) of layernorm_grad / rmsnorm_grad from the saved per-row statistics.
template <class T>
void launch_param_grads(const RowParams& p, const DeviceTensor& dw, const DeviceTensor* db, LaunchContext& ctx) {
    const std::int64_t d = p.n, rows = p.rows;
    if (d == 0) return;
    if (rows == 0) {
        check(cudaMemsetAsync(dw.data, 0, static_cast<std::size_t>(dw.desc.bytes()), ctx.stream), "cudaMemsetAsync(dweight)");
        if (db != nullptr)
            check(cudaMemsetAsync(db->data, 0, static_cast<std::size_t>(db->desc.bytes()), ctx.stream), "cudaMemsetAsync(dbias)");
        return;
    }
    const int sms = sm_count();
    constexpr int E = Tr<T>::E;
    // 16-byte loads when every row starts 16-byte aligned in both dy and x.
    const bool vec = d % E == 0 && (addr(p.a) & 15u) == 0 && (addr(p.b) & 15u) == 0;
    const std::int64_t col_blocks = vec ? ceil_div(d / E, 32) : ceil_div(d, 32);
    if (col_blocks > 0x7fffffff) throw InputError("normalised dimension too large for the parameter-gradient kernel");
    std::int64_t chunks = std::max<std::int64_t>(1, ceil_div(std::int64_t{sms} * 4, col_blocks));
    chunks = vec ? std::min({chunks, ceil_div(rows, 32), std::int64_t{65535}}) : std::min({chunks, ceil_div(rows, 8), std::int64_t{1024}});
    chunks = std::max<std::int64_t>(chunks, 1);
    const std::int64_t rows_per_chunk = ceil_div(rows, chunks);
    chunks = ceil_div(rows, rows_per_chunk);
    auto* pw = static_cast<float*>(scratch(ctx, static_cast<std::size_t>(chunks * d) * sizeof(float)));
    float* pb = db != nullptr ? static_cast<float*>(scratch(ctx, static_cast<std::size_t>(chunks * d) * sizeof(float))) : nullptr;
    const dim3 grid(static_cast<unsigned>(col_blocks), static_cast<unsigned>(chunks));
    if (vec) {
        norm_param_partial_vec_kernel<T><<<grid, dim3(32, 8), 0, ctx.stream>>>(static_cast<const T*>(p.a), static_cast<const T*>(p.b),
                                                                               p.row_mean, p.row_rstd, pw, pb, rows, d, rows_per_chunk);
        check_launch("norm_param_partial_vec_kernel");
    } else {
        norm_param_partial_kernel<T><<<grid, dim3(32, 8), 0, ctx.stream>>>(static_cast<const T*>(p.a), static_cast<const T*>(p.b),
                                                                           p.row_mean, p.row_rstd, pw, pb, rows, d, rows_per_chunk);
        check_launch("norm_param_partial_kernel");
    }
    const auto g2 = static_cast<unsigned>(std::min<std::int64_t>(ceil_div(d, 32), std::int64_t{sms} * 8));
    column_sum_kernel<T><<<g2, dim3(32, 32), 0, ctx.stream>>>(pw, pb, chunks, d, static_cast<T*>(dw.data),
                                                              db != nullptr ? static_cast<T*>(db->data) : nullptr);
    check_launch("column_sum_kernel");
    ctx.notes.push_back("parameter gradients: " + std::to_string(chunks) + " row chunks x " + std::to_string(col_blocks) +
                        " column blocks of (32, 8) threads" +
                        (vec ? " (16-byte vectors of " + std::to_string(E) + " columns per thread)" : "") +
                        ", then a column sum in (32, 32)-thread blocks");
}

int dtype_code(DType d) { return d == DType::f16 ? 1 : d == DType::bf16 ? 2 : 0; }

}  // namespace

bool launch_rowwise(OpKind k, const Tensors& in, const Attrs& a, const Tensors& out, LaunchContext& ctx) {
    if (in.empty() || out.empty()) return false;
    const DType dt = in[0].desc.dtype;
    if (!is_device_float(dt)) return false;
    const Shape& shape = in[0].desc.shape;
    if (shape.empty()) return false;
    RowParams p;
    std::string name(op_name(k));
    switch (k) {
        case OpKind::softmax:
        case OpKind::softmax_grad: {
            const bool grad = k == OpKind::softmax_grad;
            if (in.size() != (grad ? 2u : 1u) || out.size() != 1 || !all_dtype(in, dt) || !all_dtype(out, dt)) return false;
            const std::int64_t axis = normalize_axis(a.get_int("axis", -1), static_cast<std::int64_t>(shape.size()));
            std::int64_t outer = 1, inner = 1;
            for (std::int64_t i = 0; i < axis; ++i) outer *= shape[static_cast<std::size_t>(i)];
            for (std::size_t i = static_cast<std::size_t>(axis) + 1; i < shape.size(); ++i) inner *= shape[i];
            p.op = grad ? kSoftmaxGrad : kSoftmax;
            p.a = in[0].data;
            p.b = grad ? in[1].data : nullptr;
            p.out = out[0].data;
            p.n = shape[static_cast<std::size_t>(axis)];
            p.inner = inner;
            p.rows = outer * inner;
            if (p.n == 0) return true;
            break;
        }
        case OpKind::layernorm:
        case OpKind::rmsnorm: {
            const std::size_t max_in = k == OpKind::layernorm ? 3 : 2;
            if (in.size() > max_in || out.size() != 1 || !all_dtype(in, dt) || !all_dtype(out, dt)) return false;
            p.op = kNorm;
            p.rms = k == OpKind::rmsnorm ? 1 : 0;
            p.a = in[0].data;
            p.weight = in.size() > 1 ? in[1].data : nullptr;
            p.bias = in.size() > 2 ? in[2].data : nullptr;
            p.out = out[0].data;
            p.n = shape.back();
            p.rows = p.n == 0 ? 0 : in[0].desc.numel() / p.n;
            p.eps = static_cast<float>(a.get_double("eps", 1e-5));
            break;
        }
        case OpKind::layernorm_grad:
        case OpKind::rmsnorm_grad: {
            if (in.size() < 2 || in.size() > 3 || out.empty() || out.size() > 3 || !all_dtype(in, dt) || !all_dtype(out, dt)) return false;
            p.op = kNormGrad;
            p.rms = k == OpKind::rmsnorm_grad ? 1 : 0;
            p.a = in[0].data;
            p.b = in[1].data;
            p.weight = in.size() > 2 ? in[2].data : nullptr;
            p.out = out[0].data;
            p.n = shape.back();
            p.rows = p.n == 0 ? 0 : in[0].desc.numel() / p.n;
            p.eps = static_cast<float>(a.get_double("eps", 1e-5));
            if (out.size() > 1 && p.rows > 0) {
                p.row_mean = static_cast<float*>(scratch(ctx, static_cast<std::size_t>(p.rows) * sizeof(float)));
                p.row_rstd = static_cast<float*>(scratch(ctx, static_cast<std::size_t>(p.rows) * sizeof(float)));
            }
            break;
        }
        case OpKind::cross_entropy:
        case OpKind::cross_entropy_grad: {
            const bool grad = k == OpKind::cross_entropy_grad;
            if (in.size() != (grad ? 3u : 2u) || out.size() != 1 || !is_index(in[1].desc.dtype)) return false;
            if (grad && (!is_device_float(in[2].desc.dtype) || out[0].desc.dtype != dt)) return false;
            if (!grad && out[0].desc.dtype != DType::f32) return false;
            const std::string red = a.get_string("reduction", "mean");
            p.op = grad ? kCeGrad : kCeLoss;
            p.a = in[0].data;
            p.targets = in[1].data;
            p.targets_i64 = in[1].desc.dtype == DType::int64 ? 1 : 0;
            p.n = shape.back();
            p.rows = in[1].desc.numel();
            if (grad) {
                p.out = out[0].data;
                p.dloss = in[2].data;
                p.dloss_dtype = dtype_code(in[2].desc.dtype);
                p.dloss_per_row = red == "none" ? 1 : 0;
                p.dloss_div = red == "mean" ? static_cast<float>(p.rows) : 1.f;
                break;
            }
            if (red == "none") {
                p.out = out[0].data;
                break;
            }
            // mean / sum: per-row losses to scratch, then one block reduces them.
            float* losses = p.rows > 0 ? static_cast<float*>(scratch(ctx, static_cast<std::size_t>(p.rows) * sizeof(float))) : nullptr;
            p.out = losses;
            std::string note;
            if (p.rows > 0) {
                with_float_type(dt, [&](auto tag) { note = launch_rows<decltype(tag)>(p, ctx); });
            }
            loss_reduce_kernel<<<1, 1024, 0, ctx.stream>>>(losses, p.rows, static_cast<float*>(out[0].data), red == "mean" ? 1 : 0);
            check_launch("loss_reduce_kernel");
            ctx.notes.push_back(name + ": " + (note.empty() ? std::string("no rows") : note) +
                                "; one 1024-thread block sums the row losses");
            return true;
        }
        default: return false;
    }
    if (p.rows == 0 && !(p.op == kNormGrad && out.size() > 1)) return true;
    return with_float_type(dt, [&](auto tag) {
        using T = decltype(tag);
        if (p.rows > 0) ctx.notes.push_back(name + ": " + launch_rows<T>(p, ctx));
        if (p.op == kNormGrad && out.size() > 1) launch_param_grads<T>(p, out[1], out.size() > 2 ? &out[2] : nullptr, ctx);
    });
}

}  // namespace roofline::cuda
