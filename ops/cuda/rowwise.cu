// Row-wise kernels: softmax, layernorm, rmsnorm, cross_entropy and their gradients.
//
// Launch shapes follow the production kernels (Apex / PyTorch / OneFlow softmax and layernorm):
//  * rows of <= 1024 contiguous elements: one warp per row, 4 rows per 128-thread block, the row
//    held in registers (up to 32 values per lane), max and sums by warp shuffles;
//  * longer rows (or a strided softmax axis with few columns): one block per row, a shared-memory
//    block reduction; the row is cached in shared memory when it fits (<= 40 KiB), otherwise the
//    passes re-read it from global memory (softmax and cross-entropy need two: an online max/sum,
//    then the write);
//  * softmax over a non-last axis with many columns: one thread per column (coalesced across the
//    inner dimension), online max/sum then the write;
//  * layernorm/rmsnorm parameter gradients: the dx kernel saves each row's mean and rstd, a
//    second kernel sums dy * x_hat and dy over row chunks per column (partials in ctx.scratch),
//    a third sums the partials: deterministic, no atomics;
//  * cross-entropy mean/sum: per-row losses to scratch, then one block sums them in a fixed order.
// Everything is computed in f32 and stored in the tensor's dtype (round to nearest).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/families.hpp"
#include "ops/error.hpp"

namespace roofline::cuda {
namespace {

constexpr unsigned kFull = 0xffffffffu;
constexpr int kWarpBlock = 128;              // threads of the warp-per-row kernel (4 rows per block)
constexpr int kMaxWarpRow = 1024;            // longest row the warp kernel holds in registers
constexpr int kBlockMax = 1024;              // most threads of the block-per-row kernel
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

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(kFull, v, o);
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(kFull, v, o));
    return v;
}

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

// ---- one warp per row (inner == 1, n <= 32 * VPT), the row in registers ----
template <class T, int VPT>
__global__ void __launch_bounds__(kWarpBlock) row_warp_kernel(RowParams p) {
    const T* A = static_cast<const T*>(p.a);
    const T* B = static_cast<const T*>(p.b);
    const T* W = static_cast<const T*>(p.weight);
    const T* Bi = static_cast<const T*>(p.bias);
    T* O = static_cast<T*>(p.out);
    const int lane = static_cast<int>(threadIdx.x) & 31;
    const int n = static_cast<int>(p.n);
    const float fn = static_cast<float>(n);
    const int wpb = static_cast<int>(blockDim.x) >> 5;
    const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * wpb;
    const bool two = p.op == kSoftmaxGrad || p.op == kNormGrad;
    const bool exp_op = p.op == kSoftmax || p.op == kCeLoss || p.op == kCeGrad;
    const float pad = exp_op ? -INFINITY : 0.f;
    for (std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * wpb + (static_cast<int>(threadIdx.x) >> 5); row < p.rows;
         row += warps) {
        const std::int64_t base = row * p.n;
        float va[VPT], vb[VPT];
#pragma unroll
        for (int v = 0; v < VPT; ++v) {
            const int c = v * 32 + lane;
            va[v] = c < n ? ld(A, base + c) : pad;
            vb[v] = (two && c < n) ? ld(B, base + c) : 0.f;
        }
        if (exp_op) {
            float mx = -INFINITY;
#pragma unroll
            for (int v = 0; v < VPT; ++v) mx = fmaxf(mx, va[v]);
            mx = warp_max(mx);
            float s = 0.f;
#pragma unroll
            for (int v = 0; v < VPT; ++v) {
                const float e = v * 32 + lane < n ? expf(va[v] - mx) : 0.f;
                va[v] = e;
                s += e;
            }
            s = warp_sum(s);
            if (p.op == kSoftmax) {
#pragma unroll
                for (int v = 0; v < VPT; ++v) {
                    const int c = v * 32 + lane;
                    if (c < n) st(O, base + c, va[v] / s);
                }
            } else if (p.op == kCeLoss) {
                if (lane == 0) static_cast<float*>(p.out)[row] = ce_loss(p, A, base, row, mx, s);
            } else {
                const std::int64_t t = load_target(p, row);
                const float d = load_dloss(p, row) / p.dloss_div;
#pragma unroll
                for (int v = 0; v < VPT; ++v) {
                    const int c = v * 32 + lane;
                    if (c < n) st(O, base + c, (va[v] / s - (c == t ? 1.f : 0.f)) * d);
                }
            }
        } else if (p.op == kSoftmaxGrad) {
            float dot = 0.f;
#pragma unroll
            for (int v = 0; v < VPT; ++v) dot += va[v] * vb[v];
            dot = warp_sum(dot);
#pragma unroll
            for (int v = 0; v < VPT; ++v) {
                const int c = v * 32 + lane;
                if (c < n) st(O, base + c, vb[v] * (va[v] - dot));
            }
        } else {  // kNorm (x in va) or kNormGrad (dy in va, x in vb)
            // x is va for kNorm, vb for kNormGrad (selected per element: a pointer to either array
            // would move both to local memory).
            const bool x_in_a = p.op == kNorm;
            float mean = 0.f;
            if (!p.rms) {
                float s = 0.f;
#pragma unroll
                for (int v = 0; v < VPT; ++v) s += x_in_a ? va[v] : vb[v];
                mean = warp_sum(s) / fn;
            }
            float sq = 0.f;
#pragma unroll
            for (int v = 0; v < VPT; ++v) {
                const float dv = v * 32 + lane < n ? (x_in_a ? va[v] : vb[v]) - mean : 0.f;
                sq += dv * dv;
            }
            const float rstd = 1.f / sqrtf(warp_sum(sq) / fn + p.eps);
            if (p.op == kNorm) {
#pragma unroll
                for (int v = 0; v < VPT; ++v) {
                    const int c = v * 32 + lane;
                    if (c < n) {
                        float y = (va[v] - mean) * rstd;
                        if (W != nullptr) y *= ld(W, c);
                        if (Bi != nullptr) y += ld(Bi, c);
                        st(O, base + c, y);
                    }
                }
            } else {
                float mg = 0.f, mgx = 0.f;
#pragma unroll
                for (int v = 0; v < VPT; ++v) {
                    const int c = v * 32 + lane;
                    if (c < n) {
                        const float g = va[v] * (W != nullptr ? ld(W, c) : 1.f);
                        mg += g;
                        mgx += g * ((vb[v] - mean) * rstd);
                    }
                }
                mg = warp_sum(mg) / fn;
                mgx = warp_sum(mgx) / fn;
                if (p.rms) mg = 0.f;
#pragma unroll
                for (int v = 0; v < VPT; ++v) {
                    const int c = v * 32 + lane;
                    if (c < n) {
                        const float g = va[v] * (W != nullptr ? ld(W, c) : 1.f);
                        const float xh = (vb[v] - mean) * rstd;
                        st(O, base + c, rstd * (g - mg - xh * mgx));
                    }
                }
                if (lane == 0 && p.row_mean != nullptr) {
                    p.row_mean[row] = mean;
                    p.row_rstd[row] = rstd;
                }
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
__global__ void __launch_bounds__(256) norm_param_partial_kernel(const T* dy, const T* x, const float* mean, const float* rstd,
                                                                 float* pw, float* pb, std::int64_t rows, std::int64_t d,
                                                                 std::int64_t rows_per_chunk) {
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

// Sums chunks x d partials per column (coalesced across columns) into out[d].
template <class T>
__global__ void __launch_bounds__(256) column_sum_kernel(const float* partial, std::int64_t chunks, std::int64_t d, T* out) {
    const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
    for (std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < d; j += stride) {
        float s = 0.f;
        for (std::int64_t c = 0; c < chunks; ++c) s += partial[c * d + j];
        st(out, j, s);
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

int sm_count() {
    int dev = 0, n = 0;
    check(cudaGetDevice(&dev), "cudaGetDevice");
    check(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev), "cudaDeviceGetAttribute(multiprocessors)");
    return n > 0 ? n : 1;
}

template <class F>
bool with_float_type(DType d, F&& f) {
    switch (d) {
        case DType::f32: f(float{}); return true;
        case DType::f16: f(__half{}); return true;
        case DType::bf16: f(__nv_bfloat16{}); return true;
        default: return false;
    }
}

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
template <class T>
std::string launch_rows(const RowParams& p, LaunchContext& ctx) {
    const int sms = sm_count();
    if (p.inner == 1 && p.n <= kMaxWarpRow) {
        const int rows_per_block = kWarpBlock / 32;
        const auto grid = static_cast<unsigned>(std::min<std::int64_t>(ceil_div(p.rows, rows_per_block), std::int64_t{sms} * 64));
        // Register arrays sized to the row (32 values per lane cost 128 registers per thread).
        if (p.n <= 128) {
            row_warp_kernel<T, 4><<<grid, kWarpBlock, 0, ctx.stream>>>(p);
        } else if (p.n <= 512) {
            row_warp_kernel<T, 16><<<grid, kWarpBlock, 0, ctx.stream>>>(p);
        } else {
            row_warp_kernel<T, 32><<<grid, kWarpBlock, 0, ctx.stream>>>(p);
        }
        check_launch("row_warp_kernel");
        return "warp per row, 4 rows per 128-thread block, row in registers";
    }
    const bool softmax_like = p.op == kSoftmax || p.op == kSoftmaxGrad;
    if (p.inner > 1 && softmax_like && (p.rows >= 2048 || p.n <= 64)) {
        const auto grid = static_cast<unsigned>(std::min<std::int64_t>(ceil_div(p.rows, 256), std::int64_t{sms} * 32));
        row_column_kernel<T><<<grid, 256, 0, ctx.stream>>>(p);
        check_launch("row_column_kernel");
        return "thread per column of the strided axis, 256-thread blocks";
    }
    const int threads = p.n >= 16384 ? 1024 : p.n > kMaxWarpRow ? 512 : 128;
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
        if (db != nullptr) check(cudaMemsetAsync(db->data, 0, static_cast<std::size_t>(db->desc.bytes()), ctx.stream), "cudaMemsetAsync(dbias)");
        return;
    }
    const int sms = sm_count();
    const std::int64_t col_blocks = ceil_div(d, 32);
    std::int64_t chunks = std::max<std::int64_t>(1, ceil_div(std::int64_t{sms} * 4, col_blocks));
    chunks = std::min({chunks, ceil_div(rows, 8), std::int64_t{1024}});
    const std::int64_t rows_per_chunk = ceil_div(rows, chunks);
    chunks = ceil_div(rows, rows_per_chunk);
    if (col_blocks > 0x7fffffff) throw InputError("normalised dimension too large for the parameter-gradient kernel");
    auto* pw = static_cast<float*>(scratch(ctx, static_cast<std::size_t>(chunks * d) * sizeof(float)));
    float* pb = db != nullptr ? static_cast<float*>(scratch(ctx, static_cast<std::size_t>(chunks * d) * sizeof(float))) : nullptr;
    const dim3 grid(static_cast<unsigned>(col_blocks), static_cast<unsigned>(chunks));
    norm_param_partial_kernel<T><<<grid, dim3(32, 8), 0, ctx.stream>>>(static_cast<const T*>(p.a), static_cast<const T*>(p.b), p.row_mean,
                                                                       p.row_rstd, pw, pb, rows, d, rows_per_chunk);
    check_launch("norm_param_partial_kernel");
    const auto g2 = static_cast<unsigned>(std::min<std::int64_t>(ceil_div(d, 256), std::int64_t{sms} * 32));
    column_sum_kernel<T><<<g2, 256, 0, ctx.stream>>>(pw, chunks, d, static_cast<T*>(dw.data));
    check_launch("column_sum_kernel(dweight)");
    if (db != nullptr) {
        column_sum_kernel<T><<<g2, 256, 0, ctx.stream>>>(pb, chunks, d, static_cast<T*>(db->data));
        check_launch("column_sum_kernel(dbias)");
    }
    ctx.notes.push_back("parameter gradients: " + std::to_string(chunks) + " row chunks x " + std::to_string(col_blocks) +
                        " column blocks of (32, 8) threads, then a column sum");
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
            ctx.notes.push_back(name + ": " + (note.empty() ? std::string("no rows") : note) + "; one 1024-thread block sums the row losses");
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
