// conv2d (NCHW, weight [C_out, C_in/groups, kH, kW], optional bias), conv2d_grad_input and
// conv2d_grad_weight as implicit GEMMs, one per group, on CUDA cores with f32 accumulation:
//   conv2d             C[m = (n, i, j)][o]        = sum_{k = (c, p, q)} x_gathered * w
//   conv2d_grad_input  C[m = (n, h, w)][c]        = sum_{k = (o, p, q)} dy_gathered * w
//   conv2d_grad_weight C[m = o][(c, p, q)]        = sum_{k = (n, i, j)} dy * x_gathered
// Each 256-thread block computes a 64 x 64 tile of C (4 x 4 per thread) from 64 x 16 and 16 x 64
// tiles staged in shared memory; the gathers compute their im2col / col2im indices on the fly
// (zero for padding and for positions the stride skips). When the tiles alone cannot fill the GPU
// (long K: the weight gradient over a batch), K is split across blocks and a second kernel sums
// the f32 partials (ctx.scratch) in a fixed order: deterministic, no atomics.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/families.hpp"
#include "ops/cuda/launch_shape.hpp"
#include "ops/cuda/float_types.cuh"
#include "ops/error.hpp"

namespace roofline::cuda {
namespace {

constexpr int kBM = 64, kBN = 64, kBK = 16, kThreads = 256;

enum ConvMode : int { kForward, kGradInput, kGradWeight };

__device__ __forceinline__ float ld(const float* p, std::int64_t i) { return p[i]; }
__device__ __forceinline__ float ld(const __half* p, std::int64_t i) { return __half2float(p[i]); }
__device__ __forceinline__ float ld(const __nv_bfloat16* p, std::int64_t i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ void st(float* p, std::int64_t i, float v) { p[i] = v; }
__device__ __forceinline__ void st(__half* p, std::int64_t i, float v) { p[i] = __float2half_rn(v); }
__device__ __forceinline__ void st(__nv_bfloat16* p, std::int64_t i, float v) { p[i] = __float2bfloat16_rn(v); }

struct ConvParams {
    int mode = kForward;
    const void* a = nullptr;     // forward: x; grad_input, grad_weight: dy
    const void* b = nullptr;     // forward, grad_input: weight; grad_weight: x
    const void* bias = nullptr;  // forward only, or null
    void* out = nullptr;         // y / dx / dw
    float* partial = nullptr;    // split-K partials [split][group][M][N], or null
    int n = 0, ci = 0, h = 0, w = 0, co = 0, kh = 0, kw = 0, groups = 1, ho = 0, wo = 0;
    int sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
    int cig = 0, cog = 0;     // channels per group
    int M = 0, N = 0, K = 0;  // per-group GEMM
    int k_per_split = 0;      // multiple of kBK
    int splits = 1;
};

// Offset of the A element (group g, row m, reduction index k), -1 where it is zero (padding).
__host__ __device__ inline std::int64_t a_offset(const ConvParams& p, int g, int m, int k) {
    switch (p.mode) {
        case kForward: {  // x[n, g*cig + c, i*sh - ph + r*dh, j*sw - pw + s*dw], m = (n, i, j), k = (c, r, s)
            const int j = m % p.wo, i = (m / p.wo) % p.ho, nb = m / (p.wo * p.ho);
            const int s = k % p.kw, r = (k / p.kw) % p.kh, c = k / (p.kw * p.kh);
            const int hi = i * p.sh - p.ph + r * p.dh, wi = j * p.sw - p.pw + s * p.dw;
            if (hi < 0 || hi >= p.h || wi < 0 || wi >= p.w) return -1;
            return ((static_cast<std::int64_t>(nb) * p.ci + g * p.cig + c) * p.h + hi) * p.w + wi;
        }
        case kGradInput: {  // dy[n, g*cog + o, i, j] with h = i*sh - ph + r*dh, w = j*sw - pw + s*dw; m = (n, h, w), k = (o, r, s)
            const int wx = m % p.w, hx = (m / p.w) % p.h, nb = m / (p.w * p.h);
            const int s = k % p.kw, r = (k / p.kw) % p.kh, o = k / (p.kw * p.kh);
            const int ti = hx + p.ph - r * p.dh, tj = wx + p.pw - s * p.dw;
            if (ti < 0 || tj < 0 || ti % p.sh != 0 || tj % p.sw != 0) return -1;
            const int i = ti / p.sh, j = tj / p.sw;
            if (i >= p.ho || j >= p.wo) return -1;
            return ((static_cast<std::int64_t>(nb) * p.co + g * p.cog + o) * p.ho + i) * p.wo + j;
        }
        default: {  // kGradWeight: dy[n, g*cog + m, i, j], k = (n, i, j)
            const int j = k % p.wo, i = (k / p.wo) % p.ho, nb = k / (p.wo * p.ho);
            return ((static_cast<std::int64_t>(nb) * p.co + g * p.cog + m) * p.ho + i) * p.wo + j;
        }
    }
}

// Offset of the B element (group g, reduction index k, column nn), -1 where it is zero.
__host__ __device__ inline std::int64_t b_offset(const ConvParams& p, int g, int k, int nn) {
    switch (p.mode) {
        case kForward:  // w[g*cog + nn, k] with k = (c, r, s): the weight row is contiguous in k
            return static_cast<std::int64_t>(g * p.cog + nn) * p.K + k;
        case kGradInput: {  // w[g*cog + o, nn, r, s], k = (o, r, s)
            const int khw = p.kh * p.kw;
            const int o = k / khw, rs = k % khw;
            return (static_cast<std::int64_t>(g * p.cog + o) * p.cig + nn) * khw + rs;
        }
        default: {  // kGradWeight: x[n, g*cig + c, i*sh - ph + r*dh, j*sw - pw + s*dw], k = (n, i, j), nn = (c, r, s)
            const int j = k % p.wo, i = (k / p.wo) % p.ho, nb = k / (p.wo * p.ho);
            const int s = nn % p.kw, r = (nn / p.kw) % p.kh, c = nn / (p.kw * p.kh);
            const int hi = i * p.sh - p.ph + r * p.dh, wi = j * p.sw - p.pw + s * p.dw;
            if (hi < 0 || hi >= p.h || wi < 0 || wi >= p.w) return -1;
            return ((static_cast<std::int64_t>(nb) * p.ci + g * p.cig + c) * p.h + hi) * p.w + wi;
        }
    }
}

// Offset of C element (g, m, nn) in the output tensor.
__host__ __device__ inline std::int64_t c_offset(const ConvParams& p, int g, int m, int nn) {
    switch (p.mode) {
        case kForward: {  // y[n, g*cog + nn, i, j], m = (n, i, j)
            const int j = m % p.wo, i = (m / p.wo) % p.ho, nb = m / (p.wo * p.ho);
            return ((static_cast<std::int64_t>(nb) * p.co + g * p.cog + nn) * p.ho + i) * p.wo + j;
        }
        case kGradInput: {  // dx[n, g*cig + nn, h, w], m = (n, h, w)
            const int wx = m % p.w, hx = (m / p.w) % p.h, nb = m / (p.w * p.h);
            return ((static_cast<std::int64_t>(nb) * p.ci + g * p.cig + nn) * p.h + hx) * p.w + wx;
        }
        default:  // dw[g*cog + m, nn] with nn = (c, r, s)
            return static_cast<std::int64_t>(g * p.cog + m) * p.N + nn;
    }
}

// One 64 x 64 tile of group g's C, over split blockIdx.z / groups of K.
template <class T>
__global__ void __launch_bounds__(kThreads) conv_gemm_kernel(ConvParams p) {
    __shared__ float As[kBK][kBM + 4];
    __shared__ float Bs[kBK][kBN + 4];
    const T* A = static_cast<const T*>(p.a);
    const T* B = static_cast<const T*>(p.b);
    const int tid = static_cast<int>(threadIdx.x);
    const int m0 = static_cast<int>(blockIdx.x) * kBM, n0 = static_cast<int>(blockIdx.y) * kBN;
    const int g = static_cast<int>(blockIdx.z) % p.groups, split = static_cast<int>(blockIdx.z) / p.groups;
    const int k_begin = split * p.k_per_split;
    const int k_end = p.K - k_begin < p.k_per_split ? p.K : k_begin + p.k_per_split;
    // A is gathered along m (spatial, contiguous in x / dy) except for the weight gradient, whose
    // A (dy) is contiguous along k; B is contiguous along k in every mode.
    const bool a_k_fast = p.mode == kGradWeight;
    const int tm = tid % 16, tn = tid / 16;  // this thread's C elements: m = tm + 16 i, nn = tn + 16 j
    float acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = 0.f;
    }
    for (int k0 = k_begin; k0 < k_end; k0 += kBK) {
#pragma unroll
        for (int r = 0; r < (kBM * kBK) / kThreads; ++r) {
            const int idx = tid + r * kThreads;
            const int ml = a_k_fast ? idx / kBK : idx % kBM;
            const int kl = a_k_fast ? idx % kBK : idx / kBM;
            const int m = m0 + ml, k = k0 + kl;
            float v = 0.f;
            if (m < p.M && k < k_end) {
                const std::int64_t off = a_offset(p, g, m, k);
                if (off >= 0) v = ld(A, off);
            }
            As[kl][ml] = v;
        }
#pragma unroll
        for (int r = 0; r < (kBN * kBK) / kThreads; ++r) {
            const int idx = tid + r * kThreads;
            const int nl = idx / kBK, kl = idx % kBK;
            const int nn = n0 + nl, k = k0 + kl;
            float v = 0.f;
            if (nn < p.N && k < k_end) {
                const std::int64_t off = b_offset(p, g, k, nn);
                if (off >= 0) v = ld(B, off);
            }
            Bs[kl][nl] = v;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < kBK; ++kk) {
            float av[4], bv[4];
#pragma unroll
            for (int i = 0; i < 4; ++i) av[i] = As[kk][tm + 16 * i];
#pragma unroll
            for (int j = 0; j < 4; ++j) bv[j] = Bs[kk][tn + 16 * j];
#pragma unroll
            for (int i = 0; i < 4; ++i) {
#pragma unroll
                for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
            }
        }
        __syncthreads();
    }
    const T* bias = static_cast<const T*>(p.bias);
    T* out = static_cast<T*>(p.out);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int m = m0 + tm + 16 * i;
        if (m >= p.M) continue;
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const int nn = n0 + tn + 16 * j;
            if (nn >= p.N) continue;
            if (p.partial != nullptr) {
                p.partial[((static_cast<std::int64_t>(split) * p.groups + g) * p.M + m) * p.N + nn] = acc[i][j];
            } else {
                const float b = bias != nullptr ? ld(bias, g * p.cog + nn) : 0.f;
                st(out, c_offset(p, g, m, nn), acc[i][j] + b);
            }
        }
    }
}

// Sums the split-K partials of every C element, adds the bias, stores.
template <class T>
__global__ void __launch_bounds__(256) conv_splitk_finalize_kernel(ConvParams p) {
    const std::int64_t mn = static_cast<std::int64_t>(p.M) * p.N, total = mn * p.groups;
    const T* bias = static_cast<const T*>(p.bias);
    T* out = static_cast<T*>(p.out);
    const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
    for (std::int64_t e = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += stride) {
        const int g = static_cast<int>(e / mn);
        const std::int64_t rem = e % mn;
        const int m = static_cast<int>(rem / p.N), nn = static_cast<int>(rem % p.N);
        float s = 0.f;
        for (int sp = 0; sp < p.splits; ++sp) s += p.partial[sp * total + e];
        if (bias != nullptr) s += ld(bias, g * p.cog + nn);
        st(out, c_offset(p, g, m, nn), s);
    }
}

// ---- host side ----

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

int as_int(std::int64_t v, const char* what) {
    if (v < 0 || v > std::numeric_limits<int>::max()) {
        throw InputError(std::string("conv kernels: ") + what + " " + std::to_string(v) + " does not fit in 32 bits");
    }
    return static_cast<int>(v);
}

// Geometry from the forward's x, weight and y shapes (all NCHW / [C_out, C_in/g, kH, kW]).
bool geometry(ConvParams& p, const Shape& x, const Shape& w, const Shape& y, const Attrs& a) {
    if (x.size() != 4 || w.size() != 4 || y.size() != 4) return false;
    const auto st = a.get_ints("stride", {1, 1}), pd = a.get_ints("padding", {0, 0}), dl = a.get_ints("dilation", {1, 1});
    if (st.size() != 2 || pd.size() != 2 || dl.size() != 2) return false;
    p.n = as_int(x[0], "batch");
    p.ci = as_int(x[1], "C_in");
    p.h = as_int(x[2], "H");
    p.w = as_int(x[3], "W");
    p.co = as_int(w[0], "C_out");
    p.kh = as_int(w[2], "kH");
    p.kw = as_int(w[3], "kW");
    p.ho = as_int(y[2], "H_out");
    p.wo = as_int(y[3], "W_out");
    p.sh = as_int(st[0], "stride");
    p.sw = as_int(st[1], "stride");
    p.ph = as_int(pd[0], "padding");
    p.pw = as_int(pd[1], "padding");
    p.dh = as_int(dl[0], "dilation");
    p.dw = as_int(dl[1], "dilation");
    p.groups = as_int(a.get_int("groups", 1), "groups");
    if (p.groups < 1 || p.ci % p.groups != 0 || p.co % p.groups != 0 || p.sh < 1 || p.sw < 1 || p.dh < 1 || p.dw < 1) return false;
    p.cig = p.ci / p.groups;
    p.cog = p.co / p.groups;
    if (w[1] != p.cig || y[0] != x[0] || y[1] != w[0]) return false;
    // Every 32-bit index the kernels form stays below these element counts.
    (void)as_int(static_cast<std::int64_t>(p.n) * p.ci * p.h * p.w, "input elements");
    (void)as_int(static_cast<std::int64_t>(p.n) * p.co * p.ho * p.wo, "output elements");
    (void)as_int(static_cast<std::int64_t>(p.co) * p.cig * p.kh * p.kw, "weight elements");
    (void)as_int(static_cast<std::int64_t>(p.h + p.ph + 1) * p.sh + static_cast<std::int64_t>(p.kh) * p.dh, "padded height");
    (void)as_int(static_cast<std::int64_t>(p.w + p.pw + 1) * p.sw + static_cast<std::int64_t>(p.kw) * p.dw, "padded width");
    const std::int64_t khw = static_cast<std::int64_t>(p.kh) * p.kw;
    switch (p.mode) {
        case kForward:
            p.M = as_int(static_cast<std::int64_t>(p.n) * p.ho * p.wo, "GEMM M");
            p.N = p.cog;
            p.K = as_int(p.cig * khw, "GEMM K");
            break;
        case kGradInput:
            p.M = as_int(static_cast<std::int64_t>(p.n) * p.h * p.w, "GEMM M");
            p.N = p.cig;
            p.K = as_int(p.cog * khw, "GEMM K");
            break;
        default:
            p.M = p.cog;
            p.N = as_int(p.cig * khw, "GEMM N");
            p.K = as_int(static_cast<std::int64_t>(p.n) * p.ho * p.wo, "GEMM K");
            break;
    }
    return true;
}

// Split K so that small tile grids still fill the GPU: at least 4 K-tiles per split, partials at
// most 256 MiB.
void choose_splits(ConvParams& p, int sms) {
    const std::int64_t tiles = ceil_div(p.M, kBM) * ceil_div(p.N, kBN) * p.groups;
    const std::int64_t target = std::int64_t{sms} * 4;
    std::int64_t splits = 1;
    if (tiles < target && p.K > 4 * kBK) {
        splits = std::min({ceil_div(target, tiles), ceil_div(p.K, 4 * kBK), std::int64_t{64}, std::int64_t{65535} / p.groups});
        const std::int64_t bytes = splits * p.groups * static_cast<std::int64_t>(p.M) * p.N * static_cast<std::int64_t>(sizeof(float));
        if (bytes > (std::int64_t{256} << 20)) splits = 1;
    }
    splits = std::max<std::int64_t>(splits, 1);
    const std::int64_t k_per_split = std::max<std::int64_t>(ceil_div(ceil_div(p.K, splits), kBK) * kBK, kBK);
    p.k_per_split = static_cast<int>(k_per_split);
    p.splits = static_cast<int>(std::max<std::int64_t>(ceil_div(p.K, k_per_split), 1));
}

template <class T>
void launch_conv_gemm(ConvParams p, const char* name, LaunchContext& ctx) {
    const int sms = sm_count();
    choose_splits(p, sms);
    const std::int64_t mt = ceil_div(p.M, kBM), nt = ceil_div(p.N, kBN), gz = std::int64_t{p.groups} * p.splits;
    constexpr int kLimit = std::numeric_limits<int>::max() - 2 * kBM;  // m0 + 63, k0 + 15 stay in int
    if (p.M > kLimit || p.N > kLimit || p.K > kLimit || nt > 65535 || gz > 65535) {
        throw InputError(std::string(name) + ": convolution too large for the implicit-GEMM grid");
    }
    if (p.splits > 1) {
        if (!ctx.scratch) throw CudaError(std::string(name) + ": split-K needs scratch memory, and the launch context has no allocator");
        const std::int64_t total = std::int64_t{p.groups} * p.M * p.N;
        p.partial = static_cast<float*>(ctx.scratch(static_cast<std::size_t>(total * p.splits) * sizeof(float)));
    }
    const dim3 grid(static_cast<unsigned>(mt), static_cast<unsigned>(nt), static_cast<unsigned>(gz));
    conv_gemm_kernel<T><<<grid, kThreads, 0, ctx.stream>>>(p);
    check_launch("conv_gemm_kernel");
    if (p.splits > 1) {
        const std::int64_t total = std::int64_t{p.groups} * p.M * p.N;
        const auto g2 = static_cast<unsigned>(std::min<std::int64_t>(ceil_div(total, 256), std::int64_t{sms} * 32));
        conv_splitk_finalize_kernel<T><<<g2, 256, 0, ctx.stream>>>(p);
        check_launch("conv_splitk_finalize_kernel");
    }
    ctx.notes.push_back(std::string(name) + ": implicit GEMM per group M " + std::to_string(p.M) + " N " + std::to_string(p.N) + " K " +
                        std::to_string(p.K) + ", 64x64x16 tiles, 256 threads, " + std::to_string(p.groups) + " group(s), split-K " +
                        std::to_string(p.splits));
}

}  // namespace

bool launch_conv(OpKind k, const Tensors& in, const Attrs& a, const Tensors& out, LaunchContext& ctx) {
    if (in.size() < 2 || out.size() != 1) return false;
    const DType dt = in[0].desc.dtype;
    for (const DeviceTensor& t : in) {
        if (t.desc.dtype != dt) return false;
    }
    if (out[0].desc.dtype != dt) return false;
    ConvParams p;
    switch (k) {
        case OpKind::conv2d:
            if (in.size() > 3) return false;
            p.mode = kForward;
            if (!geometry(p, in[0].desc.shape, in[1].desc.shape, out[0].desc.shape, a)) return false;
            p.a = in[0].data;
            p.b = in[1].data;
            p.bias = in.size() == 3 ? in[2].data : nullptr;
            break;
        case OpKind::conv2d_grad_input:
            if (in.size() != 2) return false;
            p.mode = kGradInput;
            if (!geometry(p, out[0].desc.shape, in[1].desc.shape, in[0].desc.shape, a)) return false;
            p.a = in[0].data;
            p.b = in[1].data;
            break;
        case OpKind::conv2d_grad_weight:
            if (in.size() != 2) return false;
            p.mode = kGradWeight;
            if (!geometry(p, in[1].desc.shape, out[0].desc.shape, in[0].desc.shape, a)) return false;
            p.a = in[0].data;
            p.b = in[1].data;
            break;
        default: return false;
    }
    p.out = out[0].data;
    if (out[0].desc.numel() == 0) return with_float_type(dt, [](auto) {});
    return with_float_type(dt, [&](auto tag) { launch_conv_gemm<decltype(tag)>(p, std::string(op_name(k)).c_str(), ctx); });
}

}  // namespace roofline::cuda
