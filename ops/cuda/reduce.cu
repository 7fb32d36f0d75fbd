// reduce_sum, reduce_mean, reduce_max over attribute axes (keepdim only changes the shape, not
// the element order), and reduce_max_grad.
//
// The input shape is first canonicalised: size-1 dims dropped, adjacent dims that are both
// reduced or both kept merged. Then:
//  * reduced axes innermost ([rows, R]): reduce_rows_vec_kernel, 16-byte loads (4 in flight per
//    thread, the partial first / last vector of a misaligned row element by element), a warp per
//    row (a power-of-two warp segment for short rows; a block of up to 512 threads per row when
//    there are too few rows to fill the GPU), warp-shuffle reductions;
//  * one reduced run followed by one kept run ([A, R, K], e.g. a sum over the batch): a column
//    reduction; when K is a multiple of the 16-byte vector (8 f16/bf16, 4 f32) and x is aligned,
//    reduce_columns_vec_kernel: (32, 8)-thread blocks, each thread owning the 8 (4) columns of one
//    16-byte vector and walking a chunk of rows with 4 loads in flight, rows split into chunks
//    for about 4 blocks per SM, f32 partials combined by (32, 32)-thread blocks; otherwise (32, 8)-thread blocks reading 32 consecutive
//    columns per row (coalesced), the 8 row lanes combined in shared memory; when A * K is too small to fill the GPU the rows are split
//    into chunks whose partials (ctx.scratch) a second kernel combines;
//  * anything else (e.g. axes {0, 2, 3} of NCHW): the row-reduction kernel in its general form,
//    a warp or a block per output element, walking the reduced elements through their strides.
// reduce_max_grad: one thread per input element routes dy to positions equal to the maximum.
// Accumulation in f32; no atomics, so every result is deterministic.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/families.hpp"
#include "ops/cuda/launch_shape.hpp"
#include "ops/cuda/float_types.cuh"
#include "ops/error.hpp"

namespace roofline::cuda {
namespace {

constexpr unsigned kFull = 0xffffffffu;
constexpr int kMaxDims = 16;  // merged (canonical) dims a kernel indexes; rank can be no larger after merging

enum ReduceOp : int { kSum, kMean, kMax };

__device__ __forceinline__ float ld(const float* p, std::int64_t i) { return p[i]; }
__device__ __forceinline__ float ld(const __half* p, std::int64_t i) { return __half2float(p[i]); }
__device__ __forceinline__ float ld(const __nv_bfloat16* p, std::int64_t i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ void st(float* p, std::int64_t i, float v) { p[i] = v; }
__device__ __forceinline__ void st(__half* p, std::int64_t i, float v) { p[i] = __float2half_rn(v); }
__device__ __forceinline__ void st(__nv_bfloat16* p, std::int64_t i, float v) { p[i] = __float2bfloat16_rn(v); }

__device__ __forceinline__ float combine(float a, float b, bool is_max) { return is_max ? fmaxf(a, b) : a + b; }

__device__ __forceinline__ float warp_combine(float v, bool is_max) {
    for (int o = 16; o > 0; o >>= 1) v = combine(v, __shfl_xor_sync(kFull, v, o), is_max);
    return v;
}

// A reduction seen as outputs (kept coordinates) x R reduced elements, each side a list of
// (size, input stride) dims, outermost first.
struct GeneralReduce {
    int op = kSum;
    int nk = 0, nr = 0;
    std::int64_t kdim[kMaxDims] = {}, kstride[kMaxDims] = {};
    std::int64_t rdim[kMaxDims] = {}, rstride[kMaxDims] = {};
    std::int64_t outputs = 0, R = 0;
    float divisor = 1.f;  // reduce_mean: input elements per output
};

// Input offset of output element o's first reduced element, and of reduced element e relative to it.
__host__ __device__ inline std::int64_t kept_offset(const GeneralReduce& g, std::int64_t o) {
    std::int64_t off = 0;
    for (int d = g.nk - 1; d >= 0; --d) {
        off += (o % g.kdim[d]) * g.kstride[d];
        o /= g.kdim[d];
    }
    return off;
}

__host__ __device__ inline std::int64_t reduced_offset(const GeneralReduce& g, std::int64_t e) {
    if (g.nr == 1) return e * g.rstride[0];
    std::int64_t off = 0;
    for (int d = g.nr - 1; d >= 0; --d) {
        off += (e % g.rdim[d]) * g.rstride[d];
        e /= g.rdim[d];
    }
    return off;
}

// One warp (block_per_output == 0) or one block per output element.
template <class T>
__global__ void __launch_bounds__(256) reduce_general_kernel(const T* x, T* y, GeneralReduce g, int block_per_output) {
    __shared__ float sh[32];
    const bool is_max = g.op == kMax;
    const int lane = static_cast<int>(threadIdx.x) & 31, wid = static_cast<int>(threadIdx.x) >> 5;
    const int wpb = static_cast<int>(blockDim.x) >> 5;
    std::int64_t first, step;
    int gl, gsize;
    if (block_per_output) {
        first = blockIdx.x;
        step = gridDim.x;
        gl = static_cast<int>(threadIdx.x);
        gsize = static_cast<int>(blockDim.x);
    } else {
        first = static_cast<std::int64_t>(blockIdx.x) * wpb + wid;
        step = static_cast<std::int64_t>(gridDim.x) * wpb;
        gl = lane;
        gsize = 32;
    }
    for (std::int64_t o = first; o < g.outputs; o += step) {
        const std::int64_t base = kept_offset(g, o);
        float acc = is_max ? -INFINITY : 0.f;
        for (std::int64_t e = gl; e < g.R; e += gsize) acc = combine(acc, ld(x, base + reduced_offset(g, e)), is_max);
        acc = warp_combine(acc, is_max);
        if (block_per_output) {
            __syncthreads();  // the previous output's reader of sh is done
            if (lane == 0) sh[wid] = acc;
            __syncthreads();
            if (threadIdx.x == 0) {
                for (int w = 1; w < wpb; ++w) acc = combine(acc, sh[w], is_max);
            }
        }
        if (gl == 0) st(y, o, g.op == kMean ? acc / g.divisor : acc);
    }
}

// ---- last-axis reduction [rows, R] with 16-byte loads. A row is read through its "virtual"
// row starting at the 16-byte aligned address at or below its first element (shift elements
// earlier): vectors entirely inside the row are one 16-byte load, the partial first / last
// vector element by element. A group of tpr threads per row (a power of two up to 32 inside a
// warp, or the whole block of a multiple of 32 threads), kUnroll loads in flight per thread. ----
template <class T>
struct Tr;
template <>
struct Tr<float> {
    using S = unsigned;
    static constexpr int E = 4;
    static constexpr S kNegInf = 0xff800000u;
    __device__ static float f(S b) { return __uint_as_float(b); }
};
template <>
struct Tr<__half> {
    using S = unsigned short;
    static constexpr int E = 8;
    static constexpr S kNegInf = 0xfc00u;
    __device__ static float f(S b) { return __half2float(__ushort_as_half(b)); }
};
template <>
struct Tr<__nv_bfloat16> {
    using S = unsigned short;
    static constexpr int E = 8;
    static constexpr S kNegInf = 0xff80u;
    __device__ static float f(S b) { return __uint_as_float(static_cast<unsigned>(b) << 16); }
};

__device__ __forceinline__ unsigned word_of(const uint4& u, int w) { return w == 0 ? u.x : w == 1 ? u.y : w == 2 ? u.z : u.w; }

// Combines the E elements of a vector (raw bits) into acc.
template <class T>
__device__ __forceinline__ float combine_vec(float acc, const uint4& u, bool is_max) {
    if constexpr (Tr<T>::E == 4) {
#pragma unroll
        for (int k = 0; k < 4; ++k) acc = combine(acc, Tr<T>::f(word_of(u, k)), is_max);
    } else {
#pragma unroll
        for (int w = 0; w < 4; ++w) {
            const unsigned b = word_of(u, w);
            acc = combine(acc, Tr<T>::f(static_cast<typename Tr<T>::S>(b & 0xffffu)), is_max);
            acc = combine(acc, Tr<T>::f(static_cast<typename Tr<T>::S>(b >> 16)), is_max);
        }
    }
    return acc;
}

template <class T>
__device__ __forceinline__ uint4 vload(const typename Tr<T>::S* r, int start, int lo, int hi, bool vec, typename Tr<T>::S pad) {
    using S = typename Tr<T>::S;
    constexpr int E = Tr<T>::E;
    if (vec && start >= lo && start + E <= hi) return *reinterpret_cast<const uint4*>(r + start);
    S e[E];
#pragma unroll
    for (int k = 0; k < E; ++k) e[k] = (start + k >= lo && start + k < hi) ? r[start + k] : pad;
    if constexpr (E == 4) {
        return make_uint4(e[0], e[1], e[2], e[3]);
    } else {
        return make_uint4(static_cast<unsigned>(e[0]) | (static_cast<unsigned>(e[1]) << 16),
                          static_cast<unsigned>(e[2]) | (static_cast<unsigned>(e[3]) << 16),
                          static_cast<unsigned>(e[4]) | (static_cast<unsigned>(e[5]) << 16),
                          static_cast<unsigned>(e[6]) | (static_cast<unsigned>(e[7]) << 16));
    }
}

constexpr int kRowsBlockMax = 512;
constexpr int kUnroll = 4;

template <class T>
__global__ void __launch_bounds__(kRowsBlockMax)
    reduce_rows_vec_kernel(const T* x, T* y, std::int64_t rows, std::int64_t R, int op, float divisor, int tpr) {
    using S = typename Tr<T>::S;
    constexpr int E = Tr<T>::E;
    __shared__ float sh[kRowsBlockMax / 32];
    const bool is_max = op == kMax;
    const S pad = is_max ? Tr<T>::kNegInf : S(0);
    const uint4 padv =
        is_max ? (E == 4 ? make_uint4(pad, pad, pad, pad) : make_uint4(pad * 0x10001u, pad * 0x10001u, pad * 0x10001u, pad * 0x10001u))
               : make_uint4(0u, 0u, 0u, 0u);
    const S* X = reinterpret_cast<const S*>(x);
    const int tid = static_cast<int>(threadIdx.x);
    const int rpb = static_cast<int>(blockDim.x) / tpr;
    const int t = tpr > 32 ? tid : (tid & (tpr - 1));
    const int n = static_cast<int>(R);
    for (std::int64_t rb = blockIdx.x; rb * rpb < rows; rb += gridDim.x) {
        const std::int64_t row = rb * rpb + tid / tpr;
        const bool live = row < rows;
        const std::int64_t base = (live ? row : 0) * R;
        const int shift = static_cast<int>((reinterpret_cast<std::uintptr_t>(X + base) & 15u) / sizeof(S));
        const int lo = shift, hi = live ? shift + n : shift;
        const int nv = (hi + E - 1) / E;
        const S* a = X + base - shift;
        float acc[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) acc[u] = is_max ? -INFINITY : 0.f;
        for (int v0 = t; v0 < nv; v0 += tpr * kUnroll) {
            uint4 r[kUnroll];
#pragma unroll
            for (int u = 0; u < kUnroll; ++u) {
                const int v = v0 + u * tpr;
                r[u] = v < nv ? vload<T>(a, v * E, lo, hi, true, pad) : padv;
            }
#pragma unroll
            for (int u = 0; u < kUnroll; ++u) acc[u] = combine_vec<T>(acc[u], r[u], is_max);
        }
        float v = acc[0];
#pragma unroll
        for (int u = 1; u < kUnroll; ++u) v = combine(v, acc[u], is_max);
        const int w = tpr < 32 ? tpr : 32;
        for (int o = w >> 1; o > 0; o >>= 1) v = combine(v, __shfl_xor_sync(kFull, v, o), is_max);
        if (tpr > 32) {
            const int lane = tid & 31, wid = tid >> 5, nw = static_cast<int>(blockDim.x) >> 5;
            __syncthreads();  // the previous row's readers of sh are done
            if (lane == 0) sh[wid] = v;
            __syncthreads();
            v = sh[0];
            for (int i = 1; i < nw; ++i) v = combine(v, sh[i], is_max);
        }
        if (live && t == 0) st(y, row, op == kMean ? v / divisor : v);
    }
}

// [A, R, K] -> [A, K]: block (32, 8) per 32 consecutive k of one a (grid-stride over A * ceil(K/32)),
// blockIdx.y = chunk of rows_per_chunk rows. partial != null: write f32 partials [chunk][A*K].
template <class T>
__global__ void __launch_bounds__(256) reduce_columns_kernel(const T* x, T* y, float* partial, int op, std::int64_t A, std::int64_t R,
                                                             std::int64_t K, std::int64_t rows_per_chunk, float divisor) {
    __shared__ float sh[8][33];
    const bool is_max = op == kMax;
    const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
    const std::int64_t kblocks = (K + 31) / 32;
    const std::int64_t r0 = static_cast<std::int64_t>(blockIdx.y) * rows_per_chunk;
    const std::int64_t r1 = r0 + rows_per_chunk < R ? r0 + rows_per_chunk : R;
    for (std::int64_t b = blockIdx.x; b < A * kblocks; b += gridDim.x) {
        const std::int64_t a = b / kblocks, k = (b % kblocks) * 32 + tx;
        float acc = is_max ? -INFINITY : 0.f;
        if (k < K) {
            for (std::int64_t r = r0 + ty; r < r1; r += 8) acc = combine(acc, ld(x, (a * R + r) * K + k), is_max);
        }
        __syncthreads();  // the previous iteration's readers of sh are done
        sh[ty][tx] = acc;
        __syncthreads();
        if (ty == 0 && k < K) {
            for (int i = 1; i < 8; ++i) acc = combine(acc, sh[i][tx], is_max);
            if (partial != nullptr) {
                partial[static_cast<std::int64_t>(blockIdx.y) * A * K + a * K + k] = acc;
            } else {
                st(y, a * K + k, op == kMean ? acc / divisor : acc);
            }
        }
    }
}

// [A, R, K] -> [A, K] with K % E == 0 and a 16-byte aligned x: thread (tx, ty) of a (32, 8) block
// owns the E consecutive columns of vector kv = kb * 32 + tx (one 16-byte load per row, a warp
// reading 512 contiguous bytes) and walks rows r0 + ty, r0 + ty + 8, ... of its chunk
// (blockIdx.y) with kUnroll loads in flight; the 8 row lanes are combined in shared memory in a
// fixed order. partial != null: f32 partials [chunk][A*K], else the output.
template <class T>
__global__ void __launch_bounds__(256)
    reduce_columns_vec_kernel(const T* __restrict__ x, T* __restrict__ y, float* __restrict__ partial, int op, std::int64_t A,
                              std::int64_t R, std::int64_t K, std::int64_t rows_per_chunk, float divisor) {
    using S = typename Tr<T>::S;
    constexpr int E = Tr<T>::E;
    __shared__ float sh[E][8][32];
    const bool is_max = op == kMax;
    const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
    const std::int64_t KV = K / E, kblocks = (KV + 31) / 32;
    const std::int64_t r0 = static_cast<std::int64_t>(blockIdx.y) * rows_per_chunk;
    const std::int64_t r1 = r0 + rows_per_chunk < R ? r0 + rows_per_chunk : R;
    const S* X = reinterpret_cast<const S*>(x);
    for (std::int64_t b = blockIdx.x; b < A * kblocks; b += gridDim.x) {
        const std::int64_t a = b / kblocks, kv = (b - a * kblocks) * 32 + tx;
        float acc[E];
#pragma unroll
        for (int e = 0; e < E; ++e) acc[e] = is_max ? -INFINITY : 0.f;
        if (kv < KV) {
            const S* col = X + a * R * K + kv * E;
            for (std::int64_t r = r0 + ty; r < r1; r += 8 * kUnroll) {
                uint4 v[kUnroll];
#pragma unroll
                for (int u = 0; u < kUnroll; ++u) {
                    const std::int64_t ru = r + 8 * u;
                    v[u] = ru < r1 ? *reinterpret_cast<const uint4*>(col + ru * K) : make_uint4(0u, 0u, 0u, 0u);
                }
#pragma unroll
                for (int u = 0; u < kUnroll; ++u) {
                    if (r + 8 * u < r1) {
                        if constexpr (E == 4) {
#pragma unroll
                            for (int e = 0; e < 4; ++e) acc[e] = combine(acc[e], Tr<T>::f(word_of(v[u], e)), is_max);
                        } else {
#pragma unroll
                            for (int w = 0; w < 4; ++w) {
                                const unsigned bits = word_of(v[u], w);
                                acc[2 * w] = combine(acc[2 * w], Tr<T>::f(static_cast<S>(bits & 0xffffu)), is_max);
                                acc[2 * w + 1] = combine(acc[2 * w + 1], Tr<T>::f(static_cast<S>(bits >> 16)), is_max);
                            }
                        }
                    }
                }
            }
        }
        __syncthreads();  // the previous iteration's readers of sh are done
#pragma unroll
        for (int e = 0; e < E; ++e) sh[e][ty][tx] = acc[e];
        __syncthreads();
        // Thread (tx, ty < E) finishes column e = ty of vector kv: rows lanes 0..7 in order.
        if (ty < E && kv < KV) {
            float t = sh[ty][0][tx];
#pragma unroll
            for (int i = 1; i < 8; ++i) t = combine(t, sh[ty][i][tx], is_max);
            const std::int64_t o = a * K + kv * E + ty;
            if (partial != nullptr) {
                partial[static_cast<std::int64_t>(blockIdx.y) * A * K + o] = t;
            } else {
                st(y, o, op == kMean ? t / divisor : t);
            }
        }
    }
}

// Combines chunks partials of each of 32 consecutive outputs per (32, 32) block: lane ty sums
// chunks ty, ty + 32, ..., then the 32 lanes are combined in shared memory in a fixed order.
template <class T>
__global__ void __launch_bounds__(1024) reduce_finalize_block_kernel(const float* __restrict__ partial, std::int64_t chunks,
                                                                     std::int64_t outputs, T* __restrict__ y, int op, float divisor) {
    __shared__ float sh[32][33];
    const bool is_max = op == kMax;
    const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
    for (std::int64_t ob = static_cast<std::int64_t>(blockIdx.x) * 32; ob < outputs; ob += static_cast<std::int64_t>(gridDim.x) * 32) {
        const std::int64_t o = ob + tx;
        float acc = is_max ? -INFINITY : 0.f;
        if (o < outputs) {
#pragma unroll 4
            for (std::int64_t c = ty; c < chunks; c += 32) acc = combine(acc, partial[c * outputs + o], is_max);
        }
        __syncthreads();  // the previous iteration's readers of sh are done
        sh[ty][tx] = acc;
        __syncthreads();
        if (ty == 0 && o < outputs) {
            float t = sh[0][tx];
            for (int i = 1; i < 32; ++i) t = combine(t, sh[i][tx], is_max);
            st(y, o, op == kMean ? t / divisor : t);
        }
    }
}

// Combines chunks x outputs partials (coalesced across outputs).
template <class T>
__global__ void __launch_bounds__(256)
    reduce_finalize_kernel(const float* partial, std::int64_t chunks, std::int64_t outputs, T* y, int op, float divisor) {
    const bool is_max = op == kMax;
    const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
    for (std::int64_t o = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < outputs; o += stride) {
        float acc = partial[o];
        for (std::int64_t c = 1; c < chunks; ++c) acc = combine(acc, partial[c * outputs + o], is_max);
        st(y, o, op == kMean ? acc / divisor : acc);
    }
}

// Input element i -> offset of its reduction target (kept coordinates in output order).
struct MaxGradMap {
    int nd = 0;
    std::int64_t dim[kMaxDims] = {}, ostride[kMaxDims] = {};  // ostride 0 for reduced dims
    std::int64_t numel = 0;
};

__host__ __device__ inline std::int64_t target_offset(const MaxGradMap& m, std::int64_t i) {
    std::int64_t off = 0;
    for (int d = m.nd - 1; d >= 0; --d) {
        off += (i % m.dim[d]) * m.ostride[d];
        i /= m.dim[d];
    }
    return off;
}

template <class T>
__global__ void __launch_bounds__(256) reduce_max_grad_kernel(const T* dy, const T* x, const T* y, T* dx, MaxGradMap m) {
    const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
    for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < m.numel; i += stride) {
        const std::int64_t o = target_offset(m, i);
        st(dx, i, ld(x, i) == ld(y, o) ? ld(dy, o) : 0.f);
    }
}

// ---- host side ----

// The input shape with size-1 dims dropped and adjacent dims of the same kind (reduced or kept) merged.
struct Canonical {
    std::vector<std::int64_t> dims;
    std::vector<bool> reduced;
};

Canonical canonicalize(const Shape& s, const std::vector<std::int64_t>& axes) {
    Canonical c;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == 1) continue;
        const bool r = std::find(axes.begin(), axes.end(), static_cast<std::int64_t>(i)) != axes.end();
        if (!c.dims.empty() && c.reduced.back() == r) {
            c.dims.back() *= s[i];
        } else {
            c.dims.push_back(s[i]);
            c.reduced.push_back(r);
        }
    }
    return c;
}

std::vector<std::int64_t> axes_of(const Shape& s, const Attrs& a) {
    std::vector<std::int64_t> axes;
    const auto rank = static_cast<std::int64_t>(s.size());
    if (!a.has("axes")) {
        for (std::int64_t i = 0; i < rank; ++i) axes.push_back(i);
    } else {
        for (std::int64_t ax : a.get_ints("axes", {})) axes.push_back(normalize_axis(ax, rank));
    }
    return axes;
}

// General form of a canonical reduction (false when it has more dims than the kernel indexes).
bool general_of(const Canonical& c, GeneralReduce& g) {
    std::int64_t stride = 1;
    std::vector<std::int64_t> st(c.dims.size());
    for (std::size_t i = c.dims.size(); i-- > 0;) {
        st[i] = stride;
        stride *= c.dims[i];
    }
    g.nk = g.nr = 0;
    g.outputs = g.R = 1;
    for (std::size_t i = 0; i < c.dims.size(); ++i) {
        if (c.reduced[i]) {
            if (g.nr == kMaxDims) return false;
            g.rdim[g.nr] = c.dims[i];
            g.rstride[g.nr++] = st[i];
            g.R *= c.dims[i];
        } else {
            if (g.nk == kMaxDims) return false;
            g.kdim[g.nk] = c.dims[i];
            g.kstride[g.nk++] = st[i];
            g.outputs *= c.dims[i];
        }
    }
    return true;
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

template <class T>
std::string launch_general(const T* x, T* y, const GeneralReduce& g, LaunchContext& ctx) {
    const int sms = sm_count();
    const bool block = g.R > 1024;
    const std::int64_t per_block = block ? 1 : 8;
    const auto grid = static_cast<unsigned>(std::min<std::int64_t>(ceil_div(g.outputs, per_block), std::int64_t{sms} * 64));
    reduce_general_kernel<T><<<grid, 256, 0, ctx.stream>>>(x, y, g, block ? 1 : 0);
    check_launch("reduce_general_kernel");
    return std::string(block ? "block" : "warp") + " per output, " + std::to_string(g.nr) + " reduced dim(s) of " + std::to_string(g.R) +
           " elements, 256-thread blocks";
}

// Last-axis reduction of rows x R elements (R >= 1) with reduce_rows_vec_kernel.
template <class T>
std::string launch_rows_vec(const T* x, T* y, std::int64_t rows, std::int64_t R, int op, float divisor, LaunchContext& ctx) {
    const int sms = sm_count();
    constexpr int E = Tr<T>::E;
    const std::int64_t nv = ceil_div(R + E - 1, E);  // vectors of a row at worst misalignment
    int tpr = 32;
    if (nv <= 16) {  // short rows: a power-of-two segment of a warp per row
        tpr = 1;
        while (tpr < nv) tpr <<= 1;
    } else if (rows < std::int64_t{sms} * 16) {  // few long rows: spread each over a block
        const std::int64_t want = ceil_div(std::int64_t{sms} * 1024, std::max<std::int64_t>(rows, 1));
        const std::int64_t cap = ceil_div(ceil_div(nv, kUnroll), 32) * 32;
        tpr = static_cast<int>(std::clamp<std::int64_t>(std::min(ceil_div(want, 32) * 32, cap), 32, kRowsBlockMax));
    }
    const int threads = tpr > 32 ? tpr : 128;
    const int rpb = threads / tpr;
    int per_sm = 0;
    check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, reduce_rows_vec_kernel<T>, threads, 0),
          "cudaOccupancyMaxActiveBlocksPerMultiprocessor(reduce_rows_vec_kernel)");
    const auto grid =
        static_cast<unsigned>(std::max<std::int64_t>(1, std::min(ceil_div(rows, rpb), std::int64_t{sms} * std::max(per_sm, 1))));
    reduce_rows_vec_kernel<T><<<grid, threads, 0, ctx.stream>>>(x, y, rows, R, op, divisor, tpr);
    check_launch("reduce_rows_vec_kernel");
    return "last-axis rows [" + std::to_string(rows) + ", " + std::to_string(R) + "], " + std::to_string(tpr) + " threads per row, " +
           std::to_string(threads) + "-thread blocks, 16-byte loads";
}

// [A, R, K] column reduction with 16-byte loads (K % E == 0, x 16-byte aligned): rows split into
// chunks so that about 4 blocks of 256 threads per SM run, f32 partials combined by
// reduce_finalize_block_kernel.
template <class T>
std::string launch_columns_vec(const T* x, T* y, int op, std::int64_t A, std::int64_t R, std::int64_t K, float divisor,
                               LaunchContext& ctx) {
    const int sms = sm_count();
    constexpr int E = Tr<T>::E;
    const std::int64_t blocks_x = A * ceil_div(K / E, 32);
    std::int64_t chunks = std::max<std::int64_t>(1, ceil_div(std::int64_t{sms} * 4, blocks_x));
    chunks = std::min({chunks, ceil_div(R, 32), std::int64_t{65535}});
    chunks = std::max<std::int64_t>(chunks, 1);
    const std::int64_t rows_per_chunk = ceil_div(R, chunks);
    chunks = ceil_div(R, rows_per_chunk);
    float* partial = nullptr;
    if (chunks > 1) {
        if (!ctx.scratch) throw CudaError("reduce: the column reduction needs scratch memory, and the launch context has no allocator");
        partial = static_cast<float*>(ctx.scratch(static_cast<std::size_t>(chunks * A * K) * sizeof(float)));
    }
    const dim3 grid(static_cast<unsigned>(std::min<std::int64_t>(blocks_x, std::int64_t{sms} * 64)), static_cast<unsigned>(chunks));
    reduce_columns_vec_kernel<T><<<grid, dim3(32, 8), 0, ctx.stream>>>(x, y, partial, op, A, R, K, rows_per_chunk, divisor);
    check_launch("reduce_columns_vec_kernel");
    if (chunks > 1) {
        const auto g2 = static_cast<unsigned>(std::min<std::int64_t>(ceil_div(A * K, 32), std::int64_t{sms} * 8));
        reduce_finalize_block_kernel<T><<<g2, dim3(32, 32), 0, ctx.stream>>>(partial, chunks, A * K, y, op, divisor);
        check_launch("reduce_finalize_block_kernel");
    }
    return "column reduction [" + std::to_string(A) + ", " + std::to_string(R) + ", " + std::to_string(K) + "], (32, 8)-thread blocks of " +
           std::to_string(E) + "-column 16-byte vectors, " + std::to_string(chunks) + " row chunk(s)" +
           (chunks > 1 ? ", partials combined by (32, 32)-thread blocks" : "");
}

template <class T>
std::string launch_columns(const T* x, T* y, int op, std::int64_t A, std::int64_t R, std::int64_t K, float divisor, LaunchContext& ctx) {
    if (K % Tr<T>::E == 0 && (reinterpret_cast<std::uintptr_t>(x) & 15u) == 0) return launch_columns_vec(x, y, op, A, R, K, divisor, ctx);
    const int sms = sm_count();
    const std::int64_t blocks_x = A * ceil_div(K, 32);
    std::int64_t chunks = std::max<std::int64_t>(1, ceil_div(std::int64_t{sms} * 4, blocks_x));
    chunks = std::min({chunks, ceil_div(R, 64), std::int64_t{1024}});
    chunks = std::max<std::int64_t>(chunks, 1);
    const std::int64_t rows_per_chunk = ceil_div(R, chunks);
    chunks = ceil_div(R, rows_per_chunk);
    float* partial = nullptr;
    if (chunks > 1) {
        if (!ctx.scratch) throw CudaError("reduce: the column reduction needs scratch memory, and the launch context has no allocator");
        partial = static_cast<float*>(ctx.scratch(static_cast<std::size_t>(chunks * A * K) * sizeof(float)));
    }
    const dim3 grid(static_cast<unsigned>(std::min<std::int64_t>(blocks_x, std::int64_t{sms} * 64)), static_cast<unsigned>(chunks));
    reduce_columns_kernel<T><<<grid, dim3(32, 8), 0, ctx.stream>>>(x, y, partial, op, A, R, K, rows_per_chunk, divisor);
    check_launch("reduce_columns_kernel");
    if (chunks > 1) {
        const auto g2 = static_cast<unsigned>(std::min<std::int64_t>(ceil_div(A * K, 256), std::int64_t{sms} * 32));
        reduce_finalize_kernel<T><<<g2, 256, 0, ctx.stream>>>(partial, chunks, A * K, y, op, divisor);
        check_launch("reduce_finalize_kernel");
    }
    return "column reduction [" + std::to_string(A) + ", " + std::to_string(R) + ", " + std::to_string(K) + "], (32, 8)-thread blocks, " +
           std::to_string(chunks) + " row chunk(s)";
}

// How a reduction runs: a general (warp / block per output) reduction, or a column reduction
// [A, R, K] -> [A, K]. A host function, so the CPU tests can check the shape analysis.
struct ReducePlan {
    bool columns = false;
    GeneralReduce g;                   // !columns
    std::int64_t A = 1, R = 1, K = 1;  // columns
};

// False when the shape has more alternating reduced / kept dims than the kernels index.
bool plan_reduction(const Shape& s, const std::vector<std::int64_t>& axes, int op, ReducePlan& plan) {
    std::int64_t in_n = 1, out_n = 1;
    for (std::size_t i = 0; i < s.size(); ++i) {
        in_n *= s[i];
        if (std::find(axes.begin(), axes.end(), static_cast<std::int64_t>(i)) == axes.end()) out_n *= s[i];
    }
    plan = ReducePlan{};
    GeneralReduce& g = plan.g;
    g.op = op;
    // reduce_mean divides by the input elements per output (0 / 0 = NaN for an empty reduction, as the reference).
    g.divisor = static_cast<float>(static_cast<double>(in_n) / static_cast<double>(std::max<std::int64_t>(out_n, 1)));
    const Canonical c = canonicalize(s, axes);
    const auto runs = static_cast<std::size_t>(std::count(c.reduced.begin(), c.reduced.end(), true));
    if (in_n == 0) {  // an empty reduction: sum 0, max -inf, mean NaN
        g.nk = 1;
        g.kdim[0] = std::max<std::int64_t>(out_n, 1);
        g.kstride[0] = 0;
        g.nr = 0;
        g.outputs = out_n;
        g.R = 0;
    } else if (runs == 0) {  // nothing of size > 1 reduced: a copy (mean divides by 1)
        plan.columns = true;
        plan.A = 1;
        plan.R = 1;
        plan.K = in_n;
    } else if (runs == 1 && c.reduced.back()) {  // [rows, R]
        g.nk = c.dims.size() == 2 ? 1 : 0;
        g.kdim[0] = c.dims.size() == 2 ? c.dims[0] : 1;
        g.kstride[0] = c.dims.back();
        g.nr = 1;
        g.rdim[0] = c.dims.back();
        g.rstride[0] = 1;
        g.outputs = out_n;
        g.R = c.dims.back();
    } else if (runs == 1 && c.reduced[c.dims.size() - 2]) {  // [A, R, K] (a reduced run then a kept one)
        const std::size_t r = c.dims.size() - 2;
        plan.columns = true;
        plan.A = r == 1 ? c.dims[0] : 1;
        plan.R = c.dims[r];
        plan.K = c.dims.back();
    } else {
        const float divisor = g.divisor;
        if (!general_of(c, g)) return false;
        g.op = op;
        g.divisor = divisor;
    }
    return true;
}

bool launch_reduction(OpKind k, const Tensors& in, const Attrs& a, const Tensors& out, LaunchContext& ctx) {
    if (in.size() != 1 || out.size() != 1) return false;
    const DType dt = in[0].desc.dtype;
    if (out[0].desc.dtype != dt) return false;
    const Shape& s = in[0].desc.shape;
    const int op = k == OpKind::reduce_sum ? kSum : k == OpKind::reduce_mean ? kMean : kMax;
    ReducePlan plan;
    if (!plan_reduction(s, axes_of(s, a), op, plan)) {
        throw InputError(std::string(op_name(k)) + ": too many alternating reduced and kept dimensions");
    }
    return with_float_type(dt, [&](auto tag) {
        using T = decltype(tag);
        if (out[0].desc.numel() == 0) return;
        const auto* x = static_cast<const T*>(in[0].data);
        auto* y = static_cast<T*>(out[0].data);
        const GeneralReduce& g = plan.g;
        const bool last_axis = !plan.columns && g.nr == 1 && g.rstride[0] == 1 && g.R >= 1 && g.R <= 0x7fffff00 &&
                               (g.nk == 0 || (g.nk == 1 && g.kstride[0] == g.R));
        const std::string note = plan.columns ? launch_columns(x, y, op, plan.A, plan.R, plan.K, plan.g.divisor, ctx)
                                 : last_axis  ? launch_rows_vec(x, y, g.outputs, g.R, op, g.divisor, ctx)
                                              : launch_general(x, y, plan.g, ctx);
        ctx.notes.push_back(std::string(op_name(k)) + ": " + note);
    });
}

// Input element -> reduction-target offset map of reduce_max_grad (false: too many dims).
bool max_grad_map(const Shape& s, const std::vector<std::int64_t>& axes, MaxGradMap& m) {
    const Canonical c = canonicalize(s, axes);
    m = MaxGradMap{};
    m.numel = 1;
    for (std::int64_t d : s) m.numel *= d;
    if (c.dims.size() > static_cast<std::size_t>(kMaxDims)) return false;
    m.nd = static_cast<int>(c.dims.size());
    std::int64_t ostride = 1;
    for (std::size_t i = c.dims.size(); i-- > 0;) {
        m.dim[i] = c.dims[i];
        m.ostride[i] = c.reduced[i] ? 0 : ostride;
        if (!c.reduced[i]) ostride *= c.dims[i];
    }
    return true;
}

bool launch_max_grad(const Tensors& in, const Attrs& a, const Tensors& out, LaunchContext& ctx) {
    if (in.size() != 3 || out.size() != 1) return false;
    const DType dt = in[0].desc.dtype;
    if (in[1].desc.dtype != dt || in[2].desc.dtype != dt || out[0].desc.dtype != dt) return false;
    const Shape& s = in[1].desc.shape;
    MaxGradMap m;
    if (!max_grad_map(s, axes_of(s, a), m)) throw InputError("reduce_max_grad: too many alternating reduced and kept dimensions");
    return with_float_type(dt, [&](auto tag) {
        using T = decltype(tag);
        if (m.numel == 0) return;
        const int sms = sm_count();
        const auto grid = static_cast<unsigned>(std::min<std::int64_t>(ceil_div(m.numel, 256), std::int64_t{sms} * 32));
        reduce_max_grad_kernel<T><<<grid, 256, 0, ctx.stream>>>(static_cast<const T*>(in[0].data), static_cast<const T*>(in[1].data),
                                                                static_cast<const T*>(in[2].data), static_cast<T*>(out[0].data), m);
        check_launch("reduce_max_grad_kernel");
        ctx.notes.push_back("reduce_max_grad: thread per input element, 256-thread blocks");
    });
}

}  // namespace

bool launch_reduce(OpKind k, const Tensors& in, const Attrs& a, const Tensors& out, LaunchContext& ctx) {
    switch (k) {
        case OpKind::reduce_sum:
        case OpKind::reduce_mean:
        case OpKind::reduce_max: return launch_reduction(k, in, a, out, ctx);
        case OpKind::reduce_max_grad: return launch_max_grad(in, a, out, ctx);
        default: return false;
    }
}

}  // namespace roofline::cuda
