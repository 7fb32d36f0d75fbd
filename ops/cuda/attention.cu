// attention: materialised (cuBLASLt QK^T into scratch, a causal-mask + softmax row kernel, cuBLASLt
// PV: the kernel sequence of an unfused framework) or fused flash-style (FlashAttention-2 structure,
// Dao 2023), plus the fused backward pair of flash.hpp and gemm.hpp's bias-add fallback kernel.
//
// Flash kernels: 128 threads (4 warps) per block; a block owns one tile of query rows (forward, dq)
// or of key/value rows (dk/dv) and loops over the other operand's tiles, staged in shared memory.
// The tile products go through block_mma: WMMA 16x16x16 fragments with f32 accumulators for f16 and
// bf16, FMA loops for f32; score tiles, P and dS live in shared memory only. Head dims are padded
// with zeros to a multiple of 16 in shared memory, sequence tails with zero rows and masked columns.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>

#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/families.hpp"
#include "ops/cuda/flash.hpp"
#include "ops/cuda/gemm.hpp"
#include "ops/error.hpp"

namespace roofline::cuda {

namespace {

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;
constexpr int kMaxBatchRank = 8;
constexpr int kFlashThreads = 128;
constexpr std::int64_t kMaxGrid = std::int64_t{1} << 20;  // blocks; kernels loop (grid-stride) beyond

// ---- element access ----

template <typename T>
__device__ __forceinline__ float to_f(T v);
template <>
__device__ __forceinline__ float to_f<float>(float v) {
    return v;
}
template <>
__device__ __forceinline__ float to_f<__half>(__half v) {
    return __half2float(v);
}
template <>
__device__ __forceinline__ float to_f<__nv_bfloat16>(__nv_bfloat16 v) {
    return __bfloat162float(v);
}

template <typename T>
__device__ __forceinline__ T from_f(float v);
template <>
__device__ __forceinline__ float from_f<float>(float v) {
    return v;
}
template <>
__device__ __forceinline__ __half from_f<__half>(float v) {
    return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float v) {
    return __float2bfloat16_rn(v);
}

__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

std::int64_t grid_for(std::int64_t items) { return std::min(items, kMaxGrid); }

// ---- bias add (gemm.hpp fallback) ----

template <typename T>
__global__ void add_row_bias_kernel(T* c, std::int64_t ldc, const T* bias, std::int64_t rows, std::int64_t n) {
    const std::int64_t total = rows * n;
    const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
    for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += step) {
        const std::int64_t r = i / n, j = i % n;
        T& y = c[r * ldc + j];
        y = from_f<T>(to_f<T>(y) + to_f<T>(bias[j]));
    }
}

template <typename T>
void add_row_bias_t(void* c, std::int64_t ldc, const void* bias, std::int64_t rows, std::int64_t n, cudaStream_t s) {
    const std::int64_t blocks = std::min<std::int64_t>(ceil_div(rows * n, 256), 4096);
    add_row_bias_kernel<T><<<static_cast<unsigned>(blocks), 256, 0, s>>>(static_cast<T*>(c), ldc, static_cast<const T*>(bias), rows, n);
    check_launch("add_row_bias_kernel");
}

// ---- materialised attention: masked softmax over score rows, in place ----

// Rows up to kRegRowMax: a group of 1, 2 or 4 warps per row (runtime, from the row length) keeps the
// row in registers between max, sum and write: every thread holds kRegCap elements as kRegCap / V
// vectors of V = 16 / sizeof(T) elements, vector j of group thread t covering columns
// [(j * group + t) * V, +V). V = 16 / sizeof(T): 16-byte loads/stores, taken when every row start is
// 16-byte aligned (s aligned and n * sizeof(T) a multiple of 16, so n % V == 0); V = 1 otherwise.
// Causal: vectors wholly past the row's last valid column are not read; zeros are written there.
constexpr int kRegCap = 32;                   // elements per thread
constexpr int kRegRowMax = 4 * 32 * kRegCap;  // 4 warps per row
constexpr int kSoftmaxThreads = 256;

template <typename T>
struct VecIO {
    static constexpr int V = 16 / static_cast<int>(sizeof(T));
    // 16 bytes -> V floats (f[0..V) by compile-time index after unrolling).
    __device__ __forceinline__ static void unpack(const uint4& u, float* f) {
        if constexpr (std::is_same_v<T, float>) {
            f[0] = __uint_as_float(u.x);
            f[1] = __uint_as_float(u.y);
            f[2] = __uint_as_float(u.z);
            f[3] = __uint_as_float(u.w);
        } else {
            const unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                T lo, hi;
                const unsigned short bl = static_cast<unsigned short>(w[i] & 0xffffu);
                const unsigned short bh = static_cast<unsigned short>(w[i] >> 16);
                if constexpr (std::is_same_v<T, __half>) {
                    lo = __ushort_as_half(bl);
                    hi = __ushort_as_half(bh);
                } else {
                    lo = __ushort_as_bfloat16(bl);
                    hi = __ushort_as_bfloat16(bh);
                }
                f[2 * i] = to_f<T>(lo);
                f[2 * i + 1] = to_f<T>(hi);
            }
        }
    }
    __device__ __forceinline__ static uint4 pack(const float* f) {
        if constexpr (std::is_same_v<T, float>) {
            return make_uint4(__float_as_uint(f[0]), __float_as_uint(f[1]), __float_as_uint(f[2]), __float_as_uint(f[3]));
        } else {
            unsigned w[4];
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                unsigned short bl, bh;
                if constexpr (std::is_same_v<T, __half>) {
                    bl = __half_as_ushort(from_f<T>(f[2 * i]));
                    bh = __half_as_ushort(from_f<T>(f[2 * i + 1]));
                } else {
                    bl = __bfloat16_as_ushort(from_f<T>(f[2 * i]));
                    bh = __bfloat16_as_ushort(from_f<T>(f[2 * i + 1]));
                }
                w[i] = static_cast<unsigned>(bl) | (static_cast<unsigned>(bh) << 16);
            }
            return make_uint4(w[0], w[1], w[2], w[3]);
        }
    }
};

// Minimum resident blocks per SM, so that ptxas keeps the register count at 64 (f16/bf16 vectors),
// 85 (f32 vectors) or 128 (element accesses) without spilling.
template <typename T, int V>
constexpr int softmax_min_blocks() {
    return V == 1 ? 2 : sizeof(T) == 2 ? 4 : 3;
}

template <typename T, int V>
__global__ void __launch_bounds__(kSoftmaxThreads, (softmax_min_blocks<T, V>()))
    softmax_reg_kernel(T* s, std::int64_t rows, int n, std::int64_t sq, int causal, int wpr) {
    static_assert(V == 1 || V == VecIO<T>::V, "softmax_reg_kernel: V is 1 (element accesses) or a 16-byte vector");
    constexpr int NV = kRegCap / V;
    __shared__ float red_m[kSoftmaxThreads / 32], red_s[kSoftmaxThreads / 32];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int group = wpr * 32;                  // threads per row
    const int g = warp / wpr;                    // row slot in the block
    const int t = (warp - g * wpr) * 32 + lane;  // thread within the row's group
    const int rpb = kSoftmaxThreads / group;     // rows per block
    const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * rpb;
    // The loop bound is uniform over the block (rb), so every thread reaches the barriers.
    for (std::int64_t rb = static_cast<std::int64_t>(blockIdx.x) * rpb; rb < rows; rb += step) {
        const std::int64_t row = rb + g;
        const bool active = row < rows;
        T* x = s + (active ? row : 0) * static_cast<std::int64_t>(n);
        // reference.cpp's causal mask: column j > query row i is -inf (probability 0).
        const int valid = !active ? 0 : causal ? static_cast<int>(std::min<std::int64_t>(n, row % sq + 1)) : n;
        float v[kRegCap];  // scores * log2(e)
        float mx = -INFINITY;
#pragma unroll
        for (int j = 0; j < NV; ++j) {
            const int c0 = (j * group + t) * V;
            if (c0 < valid) {
                if constexpr (V > 1) {
                    VecIO<T>::unpack(*reinterpret_cast<const uint4*>(x + c0), v + j * V);
                } else {
                    v[j] = to_f<T>(x[c0]);
                }
#pragma unroll
                for (int e = 0; e < V; ++e) {
                    v[j * V + e] = c0 + e < valid ? v[j * V + e] * kLog2e : -INFINITY;
                    mx = fmaxf(mx, v[j * V + e]);
                }
            } else {
#pragma unroll
                for (int e = 0; e < V; ++e) v[j * V + e] = -INFINITY;
            }
        }
        mx = warp_max(mx);
        if (wpr > 1) {
            if (lane == 0) red_m[warp] = mx;
            __syncthreads();
            for (int w = 0; w < wpr; ++w) mx = fmaxf(mx, red_m[g * wpr + w]);
        }
        // valid >= 1 for an active row, so mx is finite for finite scores; masked entries give exp2(-inf) = 0.
        const float base = mx == -INFINITY ? 0.0f : mx;
        float sum = 0.0f;
#pragma unroll
        for (int i = 0; i < kRegCap; ++i) {
            v[i] = exp2f(v[i] - base);
            sum += v[i];
        }
        sum = warp_sum(sum);
        if (wpr > 1) {
            if (lane == 0) red_s[warp] = sum;
            __syncthreads();
            sum = 0.0f;
            for (int w = 0; w < wpr; ++w) sum += red_s[g * wpr + w];
        }
        const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
        // Opaque copy of the row pointer: the store addresses are recomputed here instead of the load
        // pass's being kept live across the reductions (which costs a register pair per access).
        asm volatile("" : "+l"(x));
        if (active) {
#pragma unroll
            for (int j = 0; j < NV; ++j) {
                const int c0 = (j * group + t) * V;
                if (c0 < n) {
#pragma unroll
                    for (int e = 0; e < V; ++e) v[j * V + e] *= inv;  // masked entries are already 0
                    if constexpr (V > 1) {
                        *reinterpret_cast<uint4*>(x + c0) = c0 < valid ? VecIO<T>::pack(v + j * V) : make_uint4(0u, 0u, 0u, 0u);
                    } else {
                        x[c0] = from_f<T>(v[j]);
                    }
                }
            }
        }
    }
}

// Online (max, sum) pair combine: sum is relative to max.
__device__ __forceinline__ void combine(float& m, float& s, float m2, float s2) {
    const float mn = fmaxf(m, m2);
    const float a = m == -INFINITY ? 0.0f : s * expf(m - mn);
    const float b = m2 == -INFINITY ? 0.0f : s2 * expf(m2 - mn);
    m = mn;
    s = a + b;
}

// One block (256 threads) per row for long rows: an online max/sum pass, then the write pass.
template <typename T>
__global__ void __launch_bounds__(256) softmax_block_kernel(T* s, std::int64_t rows, std::int64_t n, std::int64_t sq, int causal) {
    __shared__ float red_m[32], red_s[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        T* x = s + row * n;
        const std::int64_t valid = causal ? std::min<std::int64_t>(n, row % sq + 1) : n;
        float m = -INFINITY, sum = 0.0f;
        for (std::int64_t c = threadIdx.x; c < valid; c += blockDim.x) {
            const float xv = to_f<T>(x[c]);
            if (xv > m) {
                sum = sum * expf(m - xv) + 1.0f;
                m = xv;
            } else {
                sum += expf(xv - m);
            }
        }
        for (int o = 16; o > 0; o >>= 1) {
            const float m2 = __shfl_xor_sync(0xffffffffu, m, o), s2 = __shfl_xor_sync(0xffffffffu, sum, o);
            combine(m, sum, m2, s2);
        }
        if (lane == 0) {
            red_m[warp] = m;
            red_s[warp] = sum;
        }
        __syncthreads();
        if (warp == 0) {
            m = lane < nwarps ? red_m[lane] : -INFINITY;
            sum = lane < nwarps ? red_s[lane] : 0.0f;
            for (int o = 16; o > 0; o >>= 1) {
                const float m2 = __shfl_xor_sync(0xffffffffu, m, o), s2 = __shfl_xor_sync(0xffffffffu, sum, o);
                combine(m, sum, m2, s2);
            }
            if (lane == 0) {
                red_m[0] = m;
                red_s[0] = sum;
            }
        }
        __syncthreads();
        const float mx = red_m[0], inv = 1.0f / red_s[0];
        for (std::int64_t c = threadIdx.x; c < n; c += blockDim.x) {
            x[c] = from_f<T>(c < valid ? expf(to_f<T>(x[c]) - mx) * inv : 0.0f);
        }
        __syncthreads();  // red_m / red_s are reused by the next row
    }
}

// Warps per row of softmax_reg_kernel for rows of n (0: beyond it, one block per row).
int softmax_warps_per_row(std::int64_t n) {
    if (n <= 32 * kRegCap) return 1;
    if (n <= 2 * 32 * kRegCap) return 2;
    if (n <= kRegRowMax) return 4;
    return 0;
}

template <typename T>
void softmax_rows_t(void* s, std::int64_t rows, std::int64_t n, std::int64_t sq, bool causal, cudaStream_t st) {
    const int wpr = softmax_warps_per_row(n);
    if (wpr > 0) {
        const int rpb = kSoftmaxThreads / (32 * wpr);
        const bool vec = reinterpret_cast<std::uintptr_t>(s) % 16 == 0 && (n * static_cast<std::int64_t>(sizeof(T))) % 16 == 0;
        const std::int64_t blocks = grid_for(ceil_div(rows, rpb));
        const int c = causal ? 1 : 0;
        if (vec) {
            softmax_reg_kernel<T, VecIO<T>::V>
                <<<static_cast<unsigned>(blocks), kSoftmaxThreads, 0, st>>>(static_cast<T*>(s), rows, static_cast<int>(n), sq, c, wpr);
        } else {
            softmax_reg_kernel<T, 1>
                <<<static_cast<unsigned>(blocks), kSoftmaxThreads, 0, st>>>(static_cast<T*>(s), rows, static_cast<int>(n), sq, c, wpr);
        }
        check_launch("softmax_reg_kernel");
    } else {
        const std::int64_t blocks = grid_for(rows);
        softmax_block_kernel<T><<<static_cast<unsigned>(blocks), 256, 0, st>>>(static_cast<T*>(s), rows, n, sq, causal ? 1 : 0);
        check_launch("softmax_block_kernel");
    }
}

// ---- flash kernels: tiles, shared-memory layouts, block-level tile products ----

template <typename T>
struct Tiles {
    static constexpr bool kScalar = std::is_same_v<T, float>;
    // Row padding of T tiles (elements): WMMA needs ld % 8 == 0; f32 tiles pad by 1 against bank conflicts.
    static constexpr int kPad = kScalar ? 1 : 8;
    static constexpr int kFwdQ = kScalar ? 32 : 64, kFwdK = kScalar ? 32 : 64;  // forward: query, key tile rows
    static constexpr int kDqQ = kScalar ? 32 : 64, kDqK = kScalar ? 32 : 64;    // backward dq kernel
    static constexpr int kDkvK = kScalar ? 32 : 64, kDkvQ = 32;                 // backward dk/dv kernel
};
constexpr int kPadF = 4;  // f32 tiles: WMMA accumulators need ld % 4 == 0

struct Carve {
    std::size_t off = 0;
    __host__ __device__ std::size_t take(std::size_t bytes) {
        const std::size_t o = off;
        off = (off + bytes + 127) & ~std::size_t{127};
        return o;
    }
};

struct FwdLayout {
    int ldk, ldv, lds, ldp, ldo;
    std::size_t q, k, v, s, p, o, m, l, bytes;
};

template <typename T>
__host__ __device__ FwdLayout fwd_layout(int hd_pad, int hdv_pad) {
    using C = Tiles<T>;
    FwdLayout L{};
    Carve c;
    const std::size_t es = sizeof(T), fs = sizeof(float);
    L.ldk = hd_pad + C::kPad;
    L.ldv = hdv_pad + C::kPad;
    L.lds = C::kFwdK + kPadF;
    L.ldp = C::kFwdK + C::kPad;
    L.ldo = hdv_pad + kPadF;
    L.q = c.take(es * C::kFwdQ * L.ldk);
    L.k = c.take(es * C::kFwdK * L.ldk);
    L.v = c.take(es * C::kFwdK * L.ldv);
    L.s = c.take(fs * C::kFwdQ * L.lds);
    L.p = c.take(es * C::kFwdQ * L.ldp);
    L.o = c.take(fs * C::kFwdQ * L.ldo);
    L.m = c.take(fs * C::kFwdQ);
    L.l = c.take(fs * C::kFwdQ);
    L.bytes = c.off;
    return L;
}

struct DqLayout {
    int ldk, ldv, lds, ldp, lda;
    std::size_t q, dout, k, v, s, dp, ds, acc, lse, delta, bytes;
};

template <typename T>
__host__ __device__ DqLayout dq_layout(int hd_pad, int hdv_pad) {
    using C = Tiles<T>;
    DqLayout L{};
    Carve c;
    const std::size_t es = sizeof(T), fs = sizeof(float);
    L.ldk = hd_pad + C::kPad;
    L.ldv = hdv_pad + C::kPad;
    L.lds = C::kDqK + kPadF;
    L.ldp = C::kDqK + C::kPad;
    L.lda = hd_pad + kPadF;
    L.q = c.take(es * C::kDqQ * L.ldk);
    L.dout = c.take(es * C::kDqQ * L.ldv);
    L.k = c.take(es * C::kDqK * L.ldk);
    L.v = c.take(es * C::kDqK * L.ldv);
    L.s = c.take(fs * C::kDqQ * L.lds);
    L.dp = c.take(fs * C::kDqQ * L.lds);
    L.ds = c.take(es * C::kDqQ * L.ldp);
    L.acc = c.take(fs * C::kDqQ * L.lda);
    L.lse = c.take(fs * C::kDqQ);
    L.delta = c.take(fs * C::kDqQ);
    L.bytes = c.off;
    return L;
}

struct DkvLayout {
    int ldk, ldv, lds, ldp, ldak, ldav;
    std::size_t k, v, q, dout, s, dp, p, ds, dk, dv, lse, delta, bytes;
};

template <typename T>
__host__ __device__ DkvLayout dkv_layout(int hd_pad, int hdv_pad) {
    using C = Tiles<T>;
    DkvLayout L{};
    Carve c;
    const std::size_t es = sizeof(T), fs = sizeof(float);
    L.ldk = hd_pad + C::kPad;
    L.ldv = hdv_pad + C::kPad;
    L.lds = C::kDkvK + kPadF;
    L.ldp = C::kDkvK + C::kPad;
    L.ldak = hd_pad + kPadF;
    L.ldav = hdv_pad + kPadF;
    L.k = c.take(es * C::kDkvK * L.ldk);
    L.v = c.take(es * C::kDkvK * L.ldv);
    L.q = c.take(es * C::kDkvQ * L.ldk);
    L.dout = c.take(es * C::kDkvQ * L.ldv);
    L.s = c.take(fs * C::kDkvQ * L.lds);
    L.dp = c.take(fs * C::kDkvQ * L.lds);
    L.p = c.take(es * C::kDkvQ * L.ldp);
    L.ds = c.take(es * C::kDkvQ * L.ldp);
    L.dk = c.take(fs * C::kDkvK * L.ldak);
    L.dv = c.take(fs * C::kDkvK * L.ldav);
    L.lse = c.take(fs * C::kDkvQ);
    L.delta = c.take(fs * C::kDkvQ);
    L.bytes = c.off;
    return L;
}

// C[M x N] (+)= opA(A)[M x K] * opB(B)[K x N] over the whole block, all operands in shared memory:
// opA(A)[m][k] = AT ? A[k * lda + m] : A[m * lda + k]; opB(B)[k][n] = BT ? B[n * ldb + k] : B[k * ldb + n].
// C is f32. For f16/bf16, M, N and K are multiples of 16 and every warp takes 16x16 output tiles
// (WMMA, f32 accumulation); the caller synchronises before and after.
template <typename T, bool AT, bool BT, bool ACC>
__device__ void block_mma(float* C, int ldc, const T* A, int lda, const T* B, int ldb, int M, int N, int K) {
    if constexpr (Tiles<T>::kScalar) {
        const int total = M * N;
        for (int idx = threadIdx.x; idx < total; idx += blockDim.x) {
            const int r = idx / N, c = idx % N;
            float acc = ACC ? C[r * ldc + c] : 0.0f;
            for (int kk = 0; kk < K; ++kk) {
                const float a = AT ? A[kk * lda + r] : A[r * lda + kk];
                const float b = BT ? B[c * ldb + kk] : B[kk * ldb + c];
                acc = fmaf(a, b, acc);
            }
            C[r * ldc + c] = acc;
        }
    } else {
        namespace wmma = nvcuda::wmma;
        using LA = std::conditional_t<AT, wmma::col_major, wmma::row_major>;
        using LB = std::conditional_t<BT, wmma::col_major, wmma::row_major>;
        const int warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
        const int tiles_n = N / 16, tiles = (M / 16) * tiles_n;
        for (int t = warp; t < tiles; t += nwarps) {
            const int r0 = (t / tiles_n) * 16, c0 = (t % tiles_n) * 16;
            wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
            if constexpr (ACC) {
                wmma::load_matrix_sync(acc, C + r0 * ldc + c0, ldc, wmma::mem_row_major);
            } else {
                wmma::fill_fragment(acc, 0.0f);
            }
            for (int k0 = 0; k0 < K; k0 += 16) {
                wmma::fragment<wmma::matrix_a, 16, 16, 16, T, LA> fa;
                wmma::fragment<wmma::matrix_b, 16, 16, 16, T, LB> fb;
                wmma::load_matrix_sync(fa, AT ? A + k0 * lda + r0 : A + r0 * lda + k0, lda);
                wmma::load_matrix_sync(fb, BT ? B + c0 * ldb + k0 : B + k0 * ldb + c0, ldb);
                wmma::mma_sync(acc, fa, fb, acc);
            }
            wmma::store_matrix_sync(C + r0 * ldc + c0, acc, ldc, wmma::mem_row_major);
        }
    }
}

// Stages rows [row0, row0 + rows) x columns [0, cols_pad) of a dense row-major [rows_total x cols]
// matrix into dst (leading dimension ld), zero-filling rows >= rows_total and columns >= cols.
// vec: 16-byte loads (src 16-byte aligned and cols * sizeof(T) a multiple of 16).
template <typename T>
__device__ void load_tile(T* dst, int ld, const T* src, std::int64_t row0, std::int64_t rows_total, int cols, int cols_pad, int rows,
                          bool vec) {
    if (vec) {
        constexpr int V = 16 / static_cast<int>(sizeof(T));
        const int chunks = cols_pad / V;
        for (int i = threadIdx.x; i < rows * chunks; i += blockDim.x) {
            const int r = i / chunks, c = (i % chunks) * V;
            const std::int64_t gr = row0 + r;
            uint4 val = make_uint4(0u, 0u, 0u, 0u);
            if (gr < rows_total && c < cols) val = *reinterpret_cast<const uint4*>(src + gr * cols + c);
            if constexpr (sizeof(T) == 4) {
                // f32 tiles have odd row padding: element stores.
                float* d = reinterpret_cast<float*>(dst + r * ld + c);
                d[0] = __uint_as_float(val.x);
                d[1] = __uint_as_float(val.y);
                d[2] = __uint_as_float(val.z);
                d[3] = __uint_as_float(val.w);
            } else {
                *reinterpret_cast<uint4*>(dst + r * ld + c) = val;
            }
        }
    } else {
        for (int i = threadIdx.x; i < rows * cols_pad; i += blockDim.x) {
            const int r = i / cols_pad, c = i % cols_pad;
            const std::int64_t gr = row0 + r;
            dst[r * ld + c] = (gr < rows_total && c < cols) ? src[gr * cols + c] : from_f<T>(0.0f);
        }
    }
}

// Output batch index -> matrix offsets of q, k, v (numpy broadcasting of the batch dims).
struct BatchMap {
    int rank = 0;
    std::int64_t dims[kMaxBatchRank] = {};
    std::int64_t q[kMaxBatchRank] = {}, k[kMaxBatchRank] = {}, v[kMaxBatchRank] = {};  // 0 = broadcast
};

__device__ void batch_offsets(const BatchMap& m, std::int64_t b, std::int64_t& oq, std::int64_t& ok, std::int64_t& ov) {
    oq = ok = ov = 0;
    for (int i = m.rank - 1; i >= 0; --i) {
        const std::int64_t c = b % m.dims[i];
        b /= m.dims[i];
        oq += c * m.q[i];
        ok += c * m.k[i];
        ov += c * m.v[i];
    }
}

struct FwdParams {
    const void* q;
    const void* k;
    const void* v;
    void* o;
    float* lse;
    std::int64_t sq, sk, batches;
    int hd, hdv, hd_pad, hdv_pad;
    float scale_log2;  // scale * log2(e): scores go through exp2
    int causal, vec;
    BatchMap map;
};

// FlashAttention-2 forward: one block per (batch, tile of kFwdQ query rows).
template <typename T>
__global__ void __launch_bounds__(kFlashThreads) flash_fwd_kernel(FwdParams p) {
    using C = Tiles<T>;
    constexpr int BR = C::kFwdQ, BC = C::kFwdK;
    extern __shared__ __align__(128) unsigned char smem[];
    const FwdLayout L = fwd_layout<T>(p.hd_pad, p.hdv_pad);
    T* Qs = reinterpret_cast<T*>(smem + L.q);
    T* Ks = reinterpret_cast<T*>(smem + L.k);
    T* Vs = reinterpret_cast<T*>(smem + L.v);
    float* Ss = reinterpret_cast<float*>(smem + L.s);
    T* Ps = reinterpret_cast<T*>(smem + L.p);
    float* Os = reinterpret_cast<float*>(smem + L.o);
    float* ms = reinterpret_cast<float*>(smem + L.m);  // running row max (log2 units)
    float* ls = reinterpret_cast<float*>(smem + L.l);  // running row sum
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nwarps = blockDim.x >> 5;
    const bool vec = p.vec != 0;
    const std::int64_t qtiles = (p.sq + BR - 1) / BR, items = qtiles * p.batches;
    for (std::int64_t item = blockIdx.x; item < items; item += gridDim.x) {
        const std::int64_t b = item / qtiles;
        const std::int64_t q0 = (qtiles - 1 - item % qtiles) * BR;  // longest causal rows first
        std::int64_t oq = 0, ok = 0, ov = 0;
        batch_offsets(p.map, b, oq, ok, ov);
        const T* q = static_cast<const T*>(p.q) + oq * p.sq * p.hd;
        const T* k = static_cast<const T*>(p.k) + ok * p.sk * p.hd;
        const T* v = static_cast<const T*>(p.v) + ov * p.sk * p.hdv;
        T* o = static_cast<T*>(p.o) + b * p.sq * p.hdv;

        load_tile<T>(Qs, L.ldk, q, q0, p.sq, p.hd, p.hd_pad, BR, vec);
        for (int i = threadIdx.x; i < BR * p.hdv_pad; i += blockDim.x) Os[(i / p.hdv_pad) * L.ldo + i % p.hdv_pad] = 0.0f;
        for (int i = threadIdx.x; i < BR; i += blockDim.x) {
            ms[i] = -INFINITY;
            ls[i] = 0.0f;
        }
        __syncthreads();
        // Causal: key tiles starting beyond the tile's last query row are fully masked.
        const std::int64_t kend = p.causal ? std::min<std::int64_t>(p.sk, q0 + BR) : p.sk;
        for (std::int64_t k0 = 0; k0 < kend; k0 += BC) {
            load_tile<T>(Ks, L.ldk, k, k0, p.sk, p.hd, p.hd_pad, BC, vec);
            load_tile<T>(Vs, L.ldv, v, k0, p.sk, p.hdv, p.hdv_pad, BC, vec);
            __syncthreads();
            block_mma<T, false, true, false>(Ss, L.lds, Qs, L.ldk, Ks, L.ldk, BR, BC, p.hd_pad);
            __syncthreads();
            // Online softmax, one warp per row: new max, P = exp2(s - max), rescale O and the sum.
            for (int r = warp; r < BR; r += nwarps) {
                const std::int64_t row = q0 + r;
                float x[BC / 32];
                float mx = -INFINITY;
#pragma unroll
                for (int j = 0; j < BC / 32; ++j) {
                    const int c = j * 32 + lane;
                    const std::int64_t col = k0 + c;
                    const bool ok_col = col < p.sk && !(p.causal && col > row);
                    x[j] = ok_col ? Ss[r * L.lds + c] * p.scale_log2 : -INFINITY;
                    mx = fmaxf(mx, x[j]);
                }
                mx = warp_max(mx);
                const float m_old = ms[r], l_old = ls[r];
                const float m_new = fmaxf(m_old, mx);
                const float base = m_new == -INFINITY ? 0.0f : m_new;
                float sum = 0.0f;
#pragma unroll
                for (int j = 0; j < BC / 32; ++j) {
                    const float e = exp2f(x[j] - base);
                    Ps[r * L.ldp + j * 32 + lane] = from_f<T>(e);
                    sum += e;
                }
                sum = warp_sum(sum);
                const float alpha = exp2f(m_old - base);
                for (int c = lane; c < p.hdv_pad; c += 32) Os[r * L.ldo + c] *= alpha;
                __syncwarp();
                if (lane == 0) {
                    ms[r] = m_new;
                    ls[r] = l_old * alpha + sum;
                }
            }
            __syncthreads();
            block_mma<T, false, false, true>(Os, L.ldo, Ps, L.ldp, Vs, L.ldv, BR, p.hdv_pad, BC);
            __syncthreads();
        }
        for (int r = warp; r < BR; r += nwarps) {
            const std::int64_t row = q0 + r;
            if (row >= p.sq) continue;
            const float l = ls[r];
            const float inv = l > 0.0f ? 1.0f / l : 0.0f;
            for (int c = lane; c < p.hdv; c += 32) o[row * p.hdv + c] = from_f<T>(Os[r * L.ldo + c] * inv);
            if (p.lse != nullptr && lane == 0) p.lse[b * p.sq + row] = (ms[r] + log2f(l)) * kLn2;
        }
        __syncthreads();
    }
}

struct BwdParams {
    const void* q;
    const void* k;
    const void* v;
    const void* o;
    const void* dout;
    const float* lse;
    float* delta;  // [batches, sq]: rowsum(dout * o), written by the dq kernel
    void* dq;
    void* dk;
    void* dv;
    std::int64_t sq, sk, batches;
    int hd, hdv, hd_pad, hdv_pad;
    float scale, scale_log2;
    int causal, vec;
};

// Backward kernel 1: one block per (batch, tile of query rows): Delta, then dq over the key tiles.
template <typename T>
__global__ void __launch_bounds__(kFlashThreads) flash_bwd_dq_kernel(BwdParams p) {
    using C = Tiles<T>;
    constexpr int BQ = C::kDqQ, BK = C::kDqK;
    extern __shared__ __align__(128) unsigned char smem[];
    const DqLayout L = dq_layout<T>(p.hd_pad, p.hdv_pad);
    T* Qs = reinterpret_cast<T*>(smem + L.q);
    T* dOs = reinterpret_cast<T*>(smem + L.dout);
    T* Ks = reinterpret_cast<T*>(smem + L.k);
    T* Vs = reinterpret_cast<T*>(smem + L.v);
    float* Ss = reinterpret_cast<float*>(smem + L.s);
    float* dPs = reinterpret_cast<float*>(smem + L.dp);
    T* dSs = reinterpret_cast<T*>(smem + L.ds);
    float* acc = reinterpret_cast<float*>(smem + L.acc);
    float* lse_s = reinterpret_cast<float*>(smem + L.lse);  // log2 units
    float* delta_s = reinterpret_cast<float*>(smem + L.delta);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nwarps = blockDim.x >> 5;
    const bool vec = p.vec != 0;
    const std::int64_t qtiles = (p.sq + BQ - 1) / BQ, items = qtiles * p.batches;
    for (std::int64_t item = blockIdx.x; item < items; item += gridDim.x) {
        const std::int64_t b = item / qtiles;
        const std::int64_t q0 = (qtiles - 1 - item % qtiles) * BQ;
        const T* q = static_cast<const T*>(p.q) + b * p.sq * p.hd;
        const T* k = static_cast<const T*>(p.k) + b * p.sk * p.hd;
        const T* v = static_cast<const T*>(p.v) + b * p.sk * p.hdv;
        const T* o = static_cast<const T*>(p.o) + b * p.sq * p.hdv;
        const T* dout = static_cast<const T*>(p.dout) + b * p.sq * p.hdv;
        T* dq = static_cast<T*>(p.dq) + b * p.sq * p.hd;

        load_tile<T>(Qs, L.ldk, q, q0, p.sq, p.hd, p.hd_pad, BQ, vec);
        load_tile<T>(dOs, L.ldv, dout, q0, p.sq, p.hdv, p.hdv_pad, BQ, vec);
        for (int i = threadIdx.x; i < BQ * p.hd_pad; i += blockDim.x) acc[(i / p.hd_pad) * L.lda + i % p.hd_pad] = 0.0f;
        for (int r = warp; r < BQ; r += nwarps) {
            const std::int64_t row = q0 + r;
            float dlt = 0.0f;
            if (row < p.sq) {
                for (int c = lane; c < p.hdv; c += 32) dlt += to_f<T>(dout[row * p.hdv + c]) * to_f<T>(o[row * p.hdv + c]);
            }
            dlt = warp_sum(dlt);
            if (lane == 0) {
                delta_s[r] = dlt;
                lse_s[r] = row < p.sq ? p.lse[b * p.sq + row] * kLog2e : 0.0f;
                if (row < p.sq) p.delta[b * p.sq + row] = dlt;
            }
        }
        __syncthreads();
        const std::int64_t kend = p.causal ? std::min<std::int64_t>(p.sk, q0 + BQ) : p.sk;
        for (std::int64_t k0 = 0; k0 < kend; k0 += BK) {
            load_tile<T>(Ks, L.ldk, k, k0, p.sk, p.hd, p.hd_pad, BK, vec);
            load_tile<T>(Vs, L.ldv, v, k0, p.sk, p.hdv, p.hdv_pad, BK, vec);
            __syncthreads();
            block_mma<T, false, true, false>(Ss, L.lds, Qs, L.ldk, Ks, L.ldk, BQ, BK, p.hd_pad);     // S = q k^T
            block_mma<T, false, true, false>(dPs, L.lds, dOs, L.ldv, Vs, L.ldv, BQ, BK, p.hdv_pad);  // dP = dout v^T
            __syncthreads();
            for (int i = threadIdx.x; i < BQ * BK; i += blockDim.x) {
                const int r = i / BK, c = i % BK;
                const std::int64_t row = q0 + r, col = k0 + c;
                const bool valid = row < p.sq && col < p.sk && !(p.causal && col > row);
                float ds = 0.0f;
                if (valid) {
                    const float pv = exp2f(Ss[r * L.lds + c] * p.scale_log2 - lse_s[r]);
                    ds = pv * (dPs[r * L.lds + c] - delta_s[r]) * p.scale;
                }
                dSs[r * L.ldp + c] = from_f<T>(ds);
            }
            __syncthreads();
            block_mma<T, false, false, true>(acc, L.lda, dSs, L.ldp, Ks, L.ldk, BQ, p.hd_pad, BK);  // dq += dS k
            __syncthreads();
        }
        for (int i = threadIdx.x; i < BQ * p.hd; i += blockDim.x) {
            const int r = i / p.hd, c = i % p.hd;
            const std::int64_t row = q0 + r;
            if (row < p.sq) dq[row * p.hd + c] = from_f<T>(acc[r * L.lda + c]);
        }
        __syncthreads();
    }
}

// Backward kernel 2: one block per (batch, tile of key/value rows): dv and dk over the query tiles.
template <typename T>
__global__ void __launch_bounds__(kFlashThreads) flash_bwd_dkdv_kernel(BwdParams p) {
    using C = Tiles<T>;
    constexpr int BK = C::kDkvK, BQ = C::kDkvQ;
    extern __shared__ __align__(128) unsigned char smem[];
    const DkvLayout L = dkv_layout<T>(p.hd_pad, p.hdv_pad);
    T* Ks = reinterpret_cast<T*>(smem + L.k);
    T* Vs = reinterpret_cast<T*>(smem + L.v);
    T* Qs = reinterpret_cast<T*>(smem + L.q);
    T* dOs = reinterpret_cast<T*>(smem + L.dout);
    float* Ss = reinterpret_cast<float*>(smem + L.s);
    float* dPs = reinterpret_cast<float*>(smem + L.dp);
    T* Ps = reinterpret_cast<T*>(smem + L.p);
    T* dSs = reinterpret_cast<T*>(smem + L.ds);
    float* dKa = reinterpret_cast<float*>(smem + L.dk);
    float* dVa = reinterpret_cast<float*>(smem + L.dv);
    float* lse_s = reinterpret_cast<float*>(smem + L.lse);
    float* delta_s = reinterpret_cast<float*>(smem + L.delta);
    const bool vec = p.vec != 0;
    const std::int64_t ktiles = (p.sk + BK - 1) / BK, items = ktiles * p.batches;
    for (std::int64_t item = blockIdx.x; item < items; item += gridDim.x) {
        const std::int64_t b = item / ktiles;
        const std::int64_t k0 = (item % ktiles) * BK;  // causal: the first key tiles see the most queries
        const T* q = static_cast<const T*>(p.q) + b * p.sq * p.hd;
        const T* k = static_cast<const T*>(p.k) + b * p.sk * p.hd;
        const T* v = static_cast<const T*>(p.v) + b * p.sk * p.hdv;
        const T* dout = static_cast<const T*>(p.dout) + b * p.sq * p.hdv;
        const float* lse = p.lse + b * p.sq;
        const float* delta = p.delta + b * p.sq;
        T* dk = static_cast<T*>(p.dk) + b * p.sk * p.hd;
        T* dv = static_cast<T*>(p.dv) + b * p.sk * p.hdv;

        load_tile<T>(Ks, L.ldk, k, k0, p.sk, p.hd, p.hd_pad, BK, vec);
        load_tile<T>(Vs, L.ldv, v, k0, p.sk, p.hdv, p.hdv_pad, BK, vec);
        for (int i = threadIdx.x; i < BK * p.hd_pad; i += blockDim.x) dKa[(i / p.hd_pad) * L.ldak + i % p.hd_pad] = 0.0f;
        for (int i = threadIdx.x; i < BK * p.hdv_pad; i += blockDim.x) dVa[(i / p.hdv_pad) * L.ldav + i % p.hdv_pad] = 0.0f;
        __syncthreads();
        // Causal: query tiles ending before this key tile's first row see none of it.
        const std::int64_t qstart = p.causal ? (k0 / BQ) * BQ : 0;
        for (std::int64_t q0 = qstart; q0 < p.sq; q0 += BQ) {
            load_tile<T>(Qs, L.ldk, q, q0, p.sq, p.hd, p.hd_pad, BQ, vec);
            load_tile<T>(dOs, L.ldv, dout, q0, p.sq, p.hdv, p.hdv_pad, BQ, vec);
            for (int r = threadIdx.x; r < BQ; r += blockDim.x) {
                const std::int64_t row = q0 + r;
                lse_s[r] = row < p.sq ? lse[row] * kLog2e : 0.0f;
                delta_s[r] = row < p.sq ? delta[row] : 0.0f;
            }
            __syncthreads();
            block_mma<T, false, true, false>(Ss, L.lds, Qs, L.ldk, Ks, L.ldk, BQ, BK, p.hd_pad);     // S = q k^T
            block_mma<T, false, true, false>(dPs, L.lds, dOs, L.ldv, Vs, L.ldv, BQ, BK, p.hdv_pad);  // dP = dout v^T
            __syncthreads();
            for (int i = threadIdx.x; i < BQ * BK; i += blockDim.x) {
                const int r = i / BK, c = i % BK;
                const std::int64_t row = q0 + r, col = k0 + c;
                const bool valid = row < p.sq && col < p.sk && !(p.causal && col > row);
                float pv = 0.0f, ds = 0.0f;
                if (valid) {
                    pv = exp2f(Ss[r * L.lds + c] * p.scale_log2 - lse_s[r]);
                    ds = pv * (dPs[r * L.lds + c] - delta_s[r]) * p.scale;
                }
                Ps[r * L.ldp + c] = from_f<T>(pv);
                dSs[r * L.ldp + c] = from_f<T>(ds);
            }
            __syncthreads();
            block_mma<T, true, false, true>(dVa, L.ldav, Ps, L.ldp, dOs, L.ldv, BK, p.hdv_pad, BQ);  // dv += P^T dout
            block_mma<T, true, false, true>(dKa, L.ldak, dSs, L.ldp, Qs, L.ldk, BK, p.hd_pad, BQ);   // dk += dS^T q
            __syncthreads();
        }
        for (int i = threadIdx.x; i < BK * p.hd; i += blockDim.x) {
            const int r = i / p.hd, c = i % p.hd;
            const std::int64_t row = k0 + r;
            if (row < p.sk) dk[row * p.hd + c] = from_f<T>(dKa[r * L.ldak + c]);
        }
        for (int i = threadIdx.x; i < BK * p.hdv; i += blockDim.x) {
            const int r = i / p.hdv, c = i % p.hdv;
            const std::int64_t row = k0 + r;
            if (row < p.sk) dv[row * p.hdv + c] = from_f<T>(dVa[r * L.ldav + c]);
        }
        __syncthreads();
    }
}

// ---- host side ----

// Opts a kernel into more than 48 KiB of dynamic shared memory (once per device and size).
template <typename K>
void ensure_smem(K* kernel, std::size_t bytes, const char* name) {
    if (bytes <= 48 * 1024) return;
    static std::mutex mu;
    static std::map<std::pair<int, const void*>, std::size_t> done;
    int dev = 0;
    check(cudaGetDevice(&dev), "cudaGetDevice");
    std::lock_guard<std::mutex> lock(mu);
    const void* fn = reinterpret_cast<const void*>(kernel);
    std::size_t& cur = done[{dev, fn}];
    if (bytes <= cur) return;
    int optin = 0;
    check(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev), "cudaDeviceGetAttribute");
    if (bytes > static_cast<std::size_t>(optin)) {
        throw InputError(std::string(name) + " needs " + std::to_string(bytes) + " bytes of shared memory per block; the device allows " +
                         std::to_string(optin));
    }
    check(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)),
          "cudaFuncSetAttribute(MaxDynamicSharedMemorySize)");
    cur = bytes;
}

int pad16(std::int64_t d) { return static_cast<int>((d + 15) / 16 * 16); }

Shape batch_of(const Shape& s) { return Shape(s.begin(), s.end() - 2); }

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

// Output batch shape and the per-dimension matrix strides of q, k, v (0 where broadcast).
BatchMap make_batch_map(const Shape& qb, const Shape& kb, const Shape& vb, const Shape& ob) {
    BatchMap m;
    m.rank = static_cast<int>(ob.size());
    const auto fill = [&](const Shape& s, std::int64_t* st) {
        const std::size_t lead = ob.size() - s.size();
        std::int64_t acc = 1;
        for (std::size_t i = ob.size(); i-- > 0;) {
            const std::int64_t dim = i < lead ? 1 : s[i - lead];
            st[i] = dim == 1 ? 0 : acc;
            acc *= dim;
        }
    };
    for (std::size_t i = 0; i < ob.size(); ++i) m.dims[i] = ob[i];
    fill(qb, m.q);
    fill(kb, m.k);
    fill(vb, m.v);
    return m;
}

template <typename T>
void launch_flash_fwd(const FwdParams& p, cudaStream_t s, LaunchContext& ctx) {
    const FwdLayout L = fwd_layout<T>(p.hd_pad, p.hdv_pad);
    const std::int64_t items = ceil_div(p.sq, Tiles<T>::kFwdQ) * p.batches;
    if (items == 0) return;
    ensure_smem(flash_fwd_kernel<T>, L.bytes, "flash_fwd_kernel");
    const std::int64_t grid = grid_for(items);
    flash_fwd_kernel<T><<<static_cast<unsigned>(grid), kFlashThreads, L.bytes, s>>>(p);
    check_launch("flash_fwd_kernel");
    ctx.notes.push_back("flash attention forward: " + std::to_string(Tiles<T>::kFwdQ) + "x" + std::to_string(Tiles<T>::kFwdK) +
                        " query x key tiles, " + std::to_string(kFlashThreads) + " threads, " + std::to_string(L.bytes) +
                        " B shared memory, grid " + std::to_string(grid) + (Tiles<T>::kScalar ? ", FMA" : ", WMMA tensor cores"));
}

template <typename T>
void launch_flash_bwd(const BwdParams& p, cudaStream_t s, LaunchContext& ctx) {
    const DqLayout Lq = dq_layout<T>(p.hd_pad, p.hdv_pad);
    const DkvLayout Lk = dkv_layout<T>(p.hd_pad, p.hdv_pad);
    const std::int64_t dq_items = ceil_div(p.sq, Tiles<T>::kDqQ) * p.batches;
    const std::int64_t dkv_items = ceil_div(p.sk, Tiles<T>::kDkvK) * p.batches;
    if (dq_items > 0) {
        ensure_smem(flash_bwd_dq_kernel<T>, Lq.bytes, "flash_bwd_dq_kernel");
        flash_bwd_dq_kernel<T><<<static_cast<unsigned>(grid_for(dq_items)), kFlashThreads, Lq.bytes, s>>>(p);
        check_launch("flash_bwd_dq_kernel");
    }
    if (dkv_items > 0) {
        ensure_smem(flash_bwd_dkdv_kernel<T>, Lk.bytes, "flash_bwd_dkdv_kernel");
        flash_bwd_dkdv_kernel<T><<<static_cast<unsigned>(grid_for(dkv_items)), kFlashThreads, Lk.bytes, s>>>(p);
        check_launch("flash_bwd_dkdv_kernel");
    }
    ctx.notes.push_back("flash attention backward: dq kernel " + std::to_string(Tiles<T>::kDqQ) + "x" + std::to_string(Tiles<T>::kDqK) +
                        " tiles, " + std::to_string(Lq.bytes) + " B shared memory; dk/dv kernel " + std::to_string(Tiles<T>::kDkvK) + "x" +
                        std::to_string(Tiles<T>::kDkvQ) + " tiles, " + std::to_string(Lk.bytes) + " B shared memory");
}

bool floating_device_dtype(DType d) { return d == DType::f32 || d == DType::f16 || d == DType::bf16; }

bool attention_materialised(const DeviceTensor& q, const DeviceTensor& k, const DeviceTensor& v, const DeviceTensor& o, double scale,
                            bool causal, LaunchContext& ctx) {
    const DType dt = q.desc.dtype;
    if (!gemm_supported(dt, dt)) return false;
    const Shape& qs = q.desc.shape;
    const Shape& ks = k.desc.shape;
    const Shape& vs = v.desc.shape;
    const std::size_t r = qs.size();
    const std::int64_t sq = qs[r - 2], hd = qs[r - 1], sk = ks[r - 2], hdv = vs[r - 1];
    const Shape qb = batch_of(qs), kb = batch_of(ks), vb = batch_of(vs), ob = batch_of(o.desc.shape);
    const Shape sb = broadcast_shapes(qb, kb);
    if (broadcast_shapes(sb, vb) != ob) return false;
    // Scores in the input dtype, as PyTorch's math path (and the roofline model's count) keeps them;
    // the softmax computes in f32 and writes P over S in place.
    const std::int64_t rows = numel(sb) * sq;
    void* s = ctx.scratch(static_cast<std::size_t>(rows * sk * dtype_bytes(dt)));
    BatchedMatmul g1;
    g1.ab_dtype = g1.c_dtype = dt;
    g1.m = sq;
    g1.n = sk;
    g1.k = hd;
    g1.trans_b = true;
    g1.a = q.data;
    g1.a_batch = qb;
    g1.b = k.data;
    g1.b_batch = kb;
    g1.c = s;
    g1.c_batch = sb;
    g1.alpha = static_cast<float>(scale);
    run_batched_matmul(g1, ctx, "attention S = scale q k^T");
    if (rows > 0 && sk > 0) {
        auto* st = static_cast<cudaStream_t>(ctx.stream);
        switch (dt) {
            case DType::f32: softmax_rows_t<float>(s, rows, sk, sq, causal, st); break;
            case DType::f16: softmax_rows_t<__half>(s, rows, sk, sq, causal, st); break;
            case DType::bf16: softmax_rows_t<__nv_bfloat16>(s, rows, sk, sq, causal, st); break;
            default: return false;
        }
        ctx.notes.push_back(std::string("attention softmax") + (causal ? " (causal)" : "") + ": " + std::to_string(rows) + " rows of " +
                            std::to_string(sk) + ", " +
                            (softmax_warps_per_row(sk) > 0
                                 ? std::to_string(softmax_warps_per_row(sk)) + " warp(s) per row, register-resident"
                                 : std::string("one 256-thread block per row")) +
                            ", " + std::string(dtype_name(dt)) + " scores in scratch");
    }
    BatchedMatmul g2;
    g2.ab_dtype = g2.c_dtype = dt;
    g2.m = sq;
    g2.n = hdv;
    g2.k = sk;
    g2.a = s;
    g2.a_batch = sb;
    g2.b = v.data;
    g2.b_batch = vb;
    g2.c = o.data;
    g2.c_batch = ob;
    run_batched_matmul(g2, ctx, "attention O = P v");
    return true;
}

}  // namespace

void add_row_bias(void* c, std::int64_t ldc, const void* bias, DType dtype, std::int64_t rows, std::int64_t n, CUstream_st* stream) {
    if (rows == 0 || n == 0) return;
    auto* s = static_cast<cudaStream_t>(stream);
    switch (dtype) {
        case DType::f32: add_row_bias_t<float>(c, ldc, bias, rows, n, s); return;
        case DType::f16: add_row_bias_t<__half>(c, ldc, bias, rows, n, s); return;
        case DType::bf16: add_row_bias_t<__nv_bfloat16>(c, ldc, bias, rows, n, s); return;
        default: break;
    }
    throw InputError("add_row_bias: no " + std::string(dtype_name(dtype)) + " kernel");
}

bool flash_attention_supported(const DeviceTensor& q, const DeviceTensor& k, const DeviceTensor& v) {
    const DType dt = q.desc.dtype;
    if (!floating_device_dtype(dt) || k.desc.dtype != dt || v.desc.dtype != dt) return false;
    const Shape& qs = q.desc.shape;
    const Shape& ks = k.desc.shape;
    const Shape& vs = v.desc.shape;
    if (qs.size() < 2 || ks.size() != qs.size() || vs.size() != qs.size()) return false;
    if (qs.size() - 2 > static_cast<std::size_t>(kMaxBatchRank)) return false;
    const std::size_t r = qs.size();
    if (ks[r - 1] != qs[r - 1] || ks[r - 2] != vs[r - 2]) return false;
    const std::int64_t hd = qs[r - 1], hdv = vs[r - 1];
    if (hd < 1 || hd > 128 || hdv < 1 || hdv > 128) return false;
    try {
        (void)broadcast_shapes(broadcast_shapes(batch_of(qs), batch_of(ks)), batch_of(vs));
    } catch (const InputError&) {
        return false;
    }
    return true;
}

bool flash_attention_forward(const DeviceTensor& q, const DeviceTensor& k, const DeviceTensor& v, const DeviceTensor& o, float* lse,
                             double scale, bool causal, LaunchContext& ctx) {
    if (!flash_attention_supported(q, k, v)) return false;
    const Shape& qs = q.desc.shape;
    const std::size_t r = qs.size();
    const Shape qb = batch_of(qs), kb = batch_of(k.desc.shape), vb = batch_of(v.desc.shape);
    const Shape ob = broadcast_shapes(broadcast_shapes(qb, kb), vb);
    Shape expect = ob;
    expect.push_back(qs[r - 2]);
    expect.push_back(v.desc.shape[r - 1]);
    if (o.desc.shape != expect || o.desc.dtype != q.desc.dtype) {
        throw InputError("flash attention: output " + desc_str(o.desc) + " should be " + desc_str(TensorDesc{expect, q.desc.dtype}));
    }
    FwdParams p{};
    p.q = q.data;
    p.k = k.data;
    p.v = v.data;
    p.o = o.data;
    p.lse = lse;
    p.sq = qs[r - 2];
    p.sk = k.desc.shape[r - 2];
    p.batches = numel(ob);
    p.hd = static_cast<int>(qs[r - 1]);
    p.hdv = static_cast<int>(v.desc.shape[r - 1]);
    p.hd_pad = pad16(p.hd);
    p.hdv_pad = pad16(p.hdv);
    p.scale_log2 = static_cast<float>(scale * 1.4426950408889634);
    p.causal = causal ? 1 : 0;
    const std::int64_t es = dtype_bytes(q.desc.dtype);
    p.vec = aligned16(q.data) && aligned16(k.data) && aligned16(v.data) && (p.hd * es) % 16 == 0 && (p.hdv * es) % 16 == 0 ? 1 : 0;
    p.map = make_batch_map(qb, kb, vb, ob);
    auto* s = static_cast<cudaStream_t>(ctx.stream);
    switch (q.desc.dtype) {
        case DType::f32: launch_flash_fwd<float>(p, s, ctx); break;
        case DType::f16: launch_flash_fwd<__half>(p, s, ctx); break;
        case DType::bf16: launch_flash_fwd<__nv_bfloat16>(p, s, ctx); break;
        default: return false;
    }
    return true;
}

void flash_attention_backward(const DeviceTensor& q, const DeviceTensor& k, const DeviceTensor& v, const DeviceTensor& o,
                              const DeviceTensor& dout, const float* lse, const DeviceTensor& dq, const DeviceTensor& dk,
                              const DeviceTensor& dv, double scale, bool causal, LaunchContext& ctx) {
    if (!flash_attention_supported(q, k, v)) {
        throw InputError("flash attention backward: unsupported q " + desc_str(q.desc) + ", k " + desc_str(k.desc) + ", v " +
                         desc_str(v.desc) + " (f32/f16/bf16, head dims 1..128)");
    }
    const Shape& qs = q.desc.shape;
    const std::size_t r = qs.size();
    const DType dt = q.desc.dtype;
    Shape os = qs;
    os[r - 1] = v.desc.shape[r - 1];
    const bool same_batch = batch_of(qs) == batch_of(k.desc.shape) && batch_of(qs) == batch_of(v.desc.shape);
    const auto is = [dt](const DeviceTensor& t, const Shape& s) { return t.desc.shape == s && t.desc.dtype == dt; };
    if (!same_batch || !is(o, os) || !is(dout, os) || !is(dq, qs) || !is(dk, k.desc.shape) || !is(dv, v.desc.shape)) {
        throw InputError("flash attention backward: q, k, v must share their batch dims, o and dout be " + desc_str(TensorDesc{os, dt}) +
                         ", dq/dk/dv shaped like q/k/v (got o " + desc_str(o.desc) + ", dout " + desc_str(dout.desc) + ", dq " +
                         desc_str(dq.desc) + ", dk " + desc_str(dk.desc) + ", dv " + desc_str(dv.desc) + ")");
    }
    BwdParams p{};
    p.sq = qs[r - 2];
    p.sk = k.desc.shape[r - 2];
    p.batches = numel(batch_of(qs));
    const std::size_t rows = static_cast<std::size_t>(p.batches * p.sq);
    if (lse == nullptr) {
        // No saved logsumexp: recompute it with the forward kernel (its o goes to scratch).
        auto* lse_buf = static_cast<float*>(ctx.scratch(rows * sizeof(float)));
        const DeviceTensor o_tmp{ctx.scratch(static_cast<std::size_t>(o.desc.bytes())), o.desc};
        flash_attention_forward(q, k, v, o_tmp, lse_buf, scale, causal, ctx);
        lse = lse_buf;
    }
    p.q = q.data;
    p.k = k.data;
    p.v = v.data;
    p.o = o.data;
    p.dout = dout.data;
    p.lse = lse;
    p.delta = static_cast<float*>(ctx.scratch(rows * sizeof(float)));
    p.dq = dq.data;
    p.dk = dk.data;
    p.dv = dv.data;
    p.hd = static_cast<int>(qs[r - 1]);
    p.hdv = static_cast<int>(v.desc.shape[r - 1]);
    p.hd_pad = pad16(p.hd);
    p.hdv_pad = pad16(p.hdv);
    p.scale = static_cast<float>(scale);
    p.scale_log2 = static_cast<float>(scale * 1.4426950408889634);
    p.causal = causal ? 1 : 0;
    const std::int64_t es = dtype_bytes(dt);
    p.vec = aligned16(q.data) && aligned16(k.data) && aligned16(v.data) && aligned16(dout.data) && (p.hd * es) % 16 == 0 &&
                    (p.hdv * es) % 16 == 0
                ? 1
                : 0;
    auto* s = static_cast<cudaStream_t>(ctx.stream);
    switch (dt) {
        case DType::f32: launch_flash_bwd<float>(p, s, ctx); break;
        case DType::f16: launch_flash_bwd<__half>(p, s, ctx); break;
        case DType::bf16: launch_flash_bwd<__nv_bfloat16>(p, s, ctx); break;
        default: throw InputError("flash attention backward: no " + std::string(dtype_name(dt)) + " kernel");
    }
}

bool launch_attention(OpKind k, const Tensors& in, const Attrs& a, const Tensors& out, LaunchContext& ctx) {
    if (k != OpKind::attention || in.size() != 3 || out.size() != 1) return false;
    const DType dt = in[0].desc.dtype;
    if (!floating_device_dtype(dt)) return false;
    for (const DeviceTensor& t : in) {
        if (t.desc.dtype != dt || t.desc.shape.size() != in[0].desc.shape.size()) return false;
    }
    if (out[0].desc.dtype != dt || in[0].desc.shape.size() < 2) return false;
    const double scale = a.get_double("scale", 1.0 / std::sqrt(static_cast<double>(in[0].desc.shape.back())));
    const bool causal = a.get_bool("causal", false);
    if (out[0].desc.numel() == 0) return true;
    if (ctx.flash_attention) return flash_attention_forward(in[0], in[1], in[2], out[0], nullptr, scale, causal, ctx);
    return attention_materialised(in[0], in[1], in[2], out[0], scale, causal, ctx);
}

}  // namespace roofline::cuda
