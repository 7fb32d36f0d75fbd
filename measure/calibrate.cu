// `roofline calibrate`: the microbenchmarks of measure/calibrate.hpp (the method of each quantity is
// described there). Everything runs on one non-blocking stream; every device resource is owned by an
// RAII object so that an exception (CudaError) releases it.
#include "measure/calibrate.hpp"

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ops/cuda/cuda_check.hpp"

namespace roofline {

namespace {

using cuda::check;
using cuda::check_launch;
using cuda::CudaError;

constexpr int kBlock = 256;                                         // threads per block of every benchmark kernel
constexpr int kUnroll = 4;                                          // 16-byte loads in flight per thread (memory kernels)
constexpr int kFmaAcc = 8;                                          // independent accumulators per thread (FMA kernels)
constexpr int kFmaSteps = 32;                                       // unrolled FMA steps per loop iteration (x kFmaAcc FMAs)
constexpr int kSmemVecs = 1024;                                     // uint4 per block in the shared-memory kernel (16 KiB)
constexpr int kSmemUnroll = 16;                                     // shared loads per thread per loop iteration
constexpr std::size_t kGemmWorkspaceBytes = std::size_t{32} << 20;  // cuBLAS's Hopper recommendation

// ---------------------------------------------------------------------------------------------
// Kernels

// fmix64 finaliser (a bijective 64-bit mixer): the pattern every buffer is filled with.
__host__ __device__ inline std::uint32_t hash_u32(std::uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return static_cast<std::uint32_t>(x);
}

enum FillMode : int { fill_words = 0, fill_f32 = 1, fill_f16 = 2, fill_bf16 = 3, fill_i8 = 4, fill_fp8_e4m3 = 5 };

// n elements of the mode's type: nonzero hash words, or pseudo-random values in [-1, 1)
// (int8: [-127, 127]).
__global__ void fill_kernel(void* p, long long n, int mode, unsigned seed) {
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
        const std::uint32_t h = hash_u32((static_cast<std::uint64_t>(seed) << 40) ^ static_cast<std::uint64_t>(i));
        const float u = static_cast<float>(h >> 8) * (1.0f / 8388608.0f) - 1.0f;  // [0, 2^24) / 2^23 - 1
        switch (mode) {
            case fill_words: static_cast<std::uint32_t*>(p)[i] = h | 1u; break;
            case fill_f32: static_cast<float*>(p)[i] = u; break;
            case fill_f16: static_cast<__half*>(p)[i] = __float2half_rn(u); break;
            case fill_bf16: static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(u); break;
            case fill_fp8_e4m3: static_cast<__nv_fp8_e4m3*>(p)[i] = __nv_fp8_e4m3(u); break;
            default: static_cast<std::int8_t*>(p)[i] = static_cast<std::int8_t>(static_cast<int>(h % 255u) - 127); break;
        }
    }
}

__device__ __forceinline__ unsigned xor4(const uint4& v) { return v.x ^ v.y ^ v.z ^ v.w; }

// Folds each thread's value into *out (keeps the loads alive; the value itself is meaningless).
__device__ __forceinline__ void xor_into(unsigned acc, unsigned* out) {
    for (int off = 16; off > 0; off >>= 1) acc ^= __shfl_xor_sync(0xffffffffu, acc, off);
    if ((threadIdx.x & 31u) == 0) atomicXor(out, acc);
}

// dst = src over n uint4; n is a multiple of kUnroll * (grid threads).
__global__ void __launch_bounds__(kBlock) copy_kernel(const uint4* __restrict__ src, uint4* __restrict__ dst, long long n) {
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += kUnroll * stride) {
        uint4 v[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) v[u] = src[i + u * stride];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) dst[i + u * stride] = v[u];
    }
}

// Reads n uint4 (n a multiple of kUnroll * grid threads), XOR-reduced into *out.
__global__ void __launch_bounds__(kBlock) read_kernel(const uint4* __restrict__ src, long long n, unsigned* out) {
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    unsigned acc = 0;
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += kUnroll * stride) {
        uint4 v[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) v[u] = src[i + u * stride];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) acc ^= xor4(v[u]);
    }
    xor_into(acc, out);
}

// Each block streams `steps` chunks of kUnroll * blockDim uint4 through the (L2-resident) buffer of
// n uint4, circularly, starting at blockIdx * start_stride; loads bypass L1 (ld.global.cg).
// n and start_stride are multiples of the chunk.
__global__ void __launch_bounds__(kBlock)
    l2_read_kernel(const uint4* __restrict__ buf, long long n, long long start_stride, int steps, unsigned* out) {
    const long long chunk = static_cast<long long>(kUnroll) * blockDim.x;
    long long base = (static_cast<long long>(blockIdx.x) * start_stride) % n;
    unsigned acc = 0;
    for (int s = 0; s < steps; ++s) {
        uint4 v[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) v[u] = __ldcg(buf + base + threadIdx.x + static_cast<long long>(u) * blockDim.x);
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) acc ^= xor4(v[u]);
        base += chunk;
        if (base >= n) base = 0;
    }
    xor_into(acc, out);
}

// Shared-memory loads: each warp reads 32 consecutive uint4 (512 contiguous bytes: every 8-thread
// phase covers all 32 banks once, conflict-free). asm volatile keeps every load.
__global__ void __launch_bounds__(kBlock) smem_kernel(int iters, unsigned seed, unsigned* out) {
    __shared__ uint4 tile[kSmemVecs];
    for (int i = threadIdx.x; i < kSmemVecs; i += blockDim.x) {
        const std::uint64_t key =
            (static_cast<std::uint64_t>(seed) << 40) ^ (static_cast<std::uint64_t>(blockIdx.x) << 16) ^ static_cast<std::uint64_t>(i);
        tile[i] = make_uint4(hash_u32(4 * key) | 1u, hash_u32(4 * key + 1) | 1u, hash_u32(4 * key + 2) | 1u, hash_u32(4 * key + 3) | 1u);
    }
    __syncthreads();
    const unsigned base = static_cast<unsigned>(__cvta_generic_to_shared(tile));
    unsigned acc = 0;
    for (int it = 0; it < iters; ++it) {
        const unsigned off = static_cast<unsigned>(it) * 160u;  // a multiple of 32: warps stay contiguous
#pragma unroll
        for (int u = 0; u < kSmemUnroll; ++u) {
            const unsigned idx = (threadIdx.x + static_cast<unsigned>(u) * kBlock + off) & (kSmemVecs - 1u);
            uint4 v;
            asm volatile("ld.volatile.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                         : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                         : "r"(base + idx * 16u));
            acc ^= xor4(v);
        }
    }
    xor_into(acc, out);
}

__device__ __forceinline__ float fma_op(float a, float b, float c) { return fmaf(a, b, c); }
__device__ __forceinline__ double fma_op(double a, double b, double c) { return fma(a, b, c); }
__device__ __forceinline__ __half2 fma_op(__half2 a, __half2 b, __half2 c) { return __hfma2(a, b, c); }
__device__ __forceinline__ __nv_bfloat162 fma_op(__nv_bfloat162 a, __nv_bfloat162 b, __nv_bfloat162 c) { return __hfma2(a, b, c); }
__device__ __forceinline__ void from_float(float& d, float x) { d = x; }
__device__ __forceinline__ void from_float(double& d, float x) { d = static_cast<double>(x); }
__device__ __forceinline__ void from_float(__half2& d, float x) { d = __floats2half2_rn(x, 0.5f * x); }
__device__ __forceinline__ void from_float(__nv_bfloat162& d, float x) { d = __floats2bfloat162_rn(x, 0.5f * x); }
__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(double v) { return static_cast<float>(v); }
__device__ __forceinline__ float to_float(__half2 v) { return __low2float(v) + __high2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat162 v) { return __low2float(v) + __high2float(v); }

__device__ __forceinline__ long long global_timer_ns() {
    long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// kFmaAcc independent chains a = a*b + c per thread, iters x kFmaSteps steps each (b < 1: every
// chain converges to c / (1 - b), normal and finite in every dtype). Block 0, thread 0 writes its
// clock64() cycles and %globaltimer nanoseconds over the loop to clock_out[0..1] (if non-null).
// Full occupancy: at most 2048 / kBlock blocks' worth of registers (<= 32 per thread).
template <class T>
__global__ void __launch_bounds__(kBlock, 2048 / kBlock) fma_kernel(float b, float c, int iters, float* out, long long* clock_out) {
    T tb, tc;
    from_float(tb, b);
    from_float(tc, c);
    T acc[kFmaAcc];
#pragma unroll
    for (int j = 0; j < kFmaAcc; ++j)
        from_float(acc[j], 0.5f + 0.01f * static_cast<float>(j) + 1e-4f * static_cast<float>(threadIdx.x & 15u));
    const bool timer = clock_out != nullptr && blockIdx.x == 0 && threadIdx.x == 0;
    long long t0 = 0, c0 = 0;
    if (timer) {
        t0 = global_timer_ns();
        c0 = clock64();
    }
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int s = 0; s < kFmaSteps; ++s) {
#pragma unroll
            for (int j = 0; j < kFmaAcc; ++j) acc[j] = fma_op(acc[j], tb, tc);
        }
    }
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < kFmaAcc; ++j) sum += to_float(acc[j]);
    if (timer) {
        const long long c1 = clock64();
        const long long t1 = global_timer_ns();
        clock_out[0] = c1 - c0;
        clock_out[1] = t1 - t0;
    }
    out[static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x] = sum;
}

__global__ void empty_kernel() {}

// ---------------------------------------------------------------------------------------------
// RAII

class DeviceBuffer {
public:
    explicit DeviceBuffer(std::size_t bytes) { check(cudaMalloc(&p_, bytes == 0 ? 1 : bytes), "cudaMalloc"); }
    ~DeviceBuffer() {
        if (p_ != nullptr) {
            cudaDeviceSynchronize();  // no kernel may still use it (exception paths)
            cudaFree(p_);
        }
    }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    template <class T>
    T* as() const {
        return static_cast<T*>(p_);
    }
    void* get() const { return p_; }

private:
    void* p_ = nullptr;
};

class Stream {
public:
    Stream() { check(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags"); }
    ~Stream() {
        cudaStreamSynchronize(s_);
        cudaStreamDestroy(s_);
    }
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;
    cudaStream_t get() const { return s_; }

private:
    cudaStream_t s_ = nullptr;
};

class Event {
public:
    Event() { check(cudaEventCreate(&e_), "cudaEventCreate"); }
    ~Event() { cudaEventDestroy(e_); }
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    cudaEvent_t get() const { return e_; }

private:
    cudaEvent_t e_ = nullptr;
};

void lt_check(cublasStatus_t st, const char* what) {
    if (st != CUBLAS_STATUS_SUCCESS) throw CudaError(std::string(what) + ": " + cublasLtGetStatusString(st));
}

class LtHandle {
public:
    LtHandle() { lt_check(cublasLtCreate(&h_), "cublasLtCreate"); }
    ~LtHandle() { cublasLtDestroy(h_); }
    LtHandle(const LtHandle&) = delete;
    LtHandle& operator=(const LtHandle&) = delete;
    cublasLtHandle_t get() const { return h_; }

private:
    cublasLtHandle_t h_ = nullptr;
};

struct MatmulDescDeleter {
    void operator()(cublasLtMatmulDescOpaque_t* d) const { cublasLtMatmulDescDestroy(d); }
};
struct LayoutDeleter {
    void operator()(cublasLtMatrixLayoutOpaque_t* d) const { cublasLtMatrixLayoutDestroy(d); }
};
struct PreferenceDeleter {
    void operator()(cublasLtMatmulPreferenceOpaque_t* d) const { cublasLtMatmulPreferenceDestroy(d); }
};
using MatmulDescPtr = std::unique_ptr<cublasLtMatmulDescOpaque_t, MatmulDescDeleter>;
using LayoutPtr = std::unique_ptr<cublasLtMatrixLayoutOpaque_t, LayoutDeleter>;
using PreferencePtr = std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, PreferenceDeleter>;

// ---------------------------------------------------------------------------------------------
// Timing

struct Plan {
    double batch_s;  // a timed batch lasts about this long
    int reps;        // timed batches
};

// Seconds per unit of work: enqueue(count) enqueues `count` units on s. After a warm-up (lazy
// module loading, clocks), the batch size is fixed so a batch lasts plan.batch_s (or is
// fixed_count when > 0); one untimed batch, then plan.reps timed ones (cudaEvents).
std::vector<double> time_units(cudaStream_t s, const Plan& plan, const std::function<void(long long)>& enqueue, long long fixed_count = 0) {
    Event e0, e1;
    auto timed = [&](long long count) {
        check(cudaEventRecord(e0.get(), s), "cudaEventRecord");
        enqueue(count);
        check(cudaEventRecord(e1.get(), s), "cudaEventRecord");
        check(cudaEventSynchronize(e1.get()), "cudaEventSynchronize");
        float ms = 0;
        check(cudaEventElapsedTime(&ms, e0.get(), e1.get()), "cudaEventElapsedTime");
        return static_cast<double>(ms) * 1e-3;
    };
    enqueue(1);
    check(cudaStreamSynchronize(s), "cudaStreamSynchronize(warm-up)");
    long long count = fixed_count;
    if (count <= 0) {
        const double one = std::max(timed(2) / 2.0, 1e-7);
        count = std::clamp(static_cast<long long>(std::ceil(plan.batch_s / one)), 1LL, 1LL << 16);
    }
    timed(count);
    std::vector<double> out;
    out.reserve(static_cast<std::size_t>(plan.reps));
    for (int r = 0; r < plan.reps; ++r) out.push_back(timed(count) / static_cast<double>(count));
    return out;
}

CalibrationPoint rate_point(std::string quantity, double amount, const std::vector<double>& seconds, std::string unit, std::string method) {
    std::vector<double> rates;
    rates.reserve(seconds.size());
    for (double s : seconds) rates.push_back(s > 0 ? amount / s : 0.0);
    const RepStats st = rep_stats(std::move(rates));
    return CalibrationPoint{std::move(quantity), st.median, std::move(unit), std::move(method), st.spread};
}

CalibrationPoint value_point(std::string quantity, std::vector<double> values, std::string unit, std::string method) {
    const RepStats st = rep_stats(std::move(values));
    return CalibrationPoint{std::move(quantity), st.median, std::move(unit), std::move(method), st.spread};
}

std::string format(const char* fmt, double a = 0, double b = 0, double c = 0, double d = 0) {
    char buf[512];
    std::snprintf(buf, sizeof buf, fmt, a, b, c, d);
    return buf;
}

constexpr double kMiB = 1024.0 * 1024.0;

// ---------------------------------------------------------------------------------------------
// Benchmarks

struct Ctx {
    int device = 0;
    int sm_count = 0;
    long long l2_bytes = 0;
    bool quick = false;
    Plan plan{};
    cudaStream_t stream = nullptr;
};

template <class Kernel>
int blocks_per_sm(Kernel k, std::size_t dynamic_smem = 0) {
    int n = 0;
    check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, k, kBlock, dynamic_smem), "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
    return std::max(n, 1);
}

void fill(const Ctx& c, void* p, long long n, FillMode mode, unsigned seed) {
    fill_kernel<<<c.sm_count * 8, kBlock, 0, c.stream>>>(p, n, static_cast<int>(mode), seed);
    check_launch("fill_kernel");
}

void measure_hbm(const Ctx& c, std::vector<CalibrationPoint>& points) {
    const int bps = std::min(blocks_per_sm(copy_kernel), blocks_per_sm(read_kernel));
    const int grid = c.sm_count * bps;
    const long long chunk = static_cast<long long>(kUnroll) * grid * kBlock;  // uint4 per loop trip of the grid
    std::size_t free_b = 0, total_b = 0;
    check(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
    const long long l2 = c.l2_bytes > 0 ? c.l2_bytes : (64LL << 20);
    const long long want = std::min(8 * l2, static_cast<long long>(free_b / 4));  // bytes per buffer
    const long long n = std::max((want / 16 + chunk - 1) / chunk, 1LL) * chunk;   // uint4 per buffer, >= want
    const std::size_t bytes = static_cast<std::size_t>(n) * 16;
    DeviceBuffer src(bytes), dst(bytes), sink(sizeof(unsigned));
    fill(c, src.get(), n * 4, fill_words, 1);
    fill(c, dst.get(), n * 4, fill_words, 2);
    check(cudaMemsetAsync(sink.get(), 0, sizeof(unsigned), c.stream), "cudaMemsetAsync");

    const auto copy_s = time_units(c.stream, c.plan, [&](long long count) {
        for (long long i = 0; i < count; ++i) {
            copy_kernel<<<grid, kBlock, 0, c.stream>>>(src.as<uint4>(), dst.as<uint4>(), n);
            check_launch("copy_kernel");
        }
    });
    points.push_back(rate_point("hbm_bytes_per_s", 2.0 * static_cast<double>(bytes), copy_s, "B/s",
                                format("copy kernel, 16-byte loads/stores (4 in flight per thread), 2 buffers of %.0f MiB "
                                       "(%.1fx L2), grid %.0f x 256 (persistent), bytes = read + write",
                                       static_cast<double>(bytes) / kMiB, static_cast<double>(bytes) / static_cast<double>(l2), grid)));

    const auto read_s = time_units(c.stream, c.plan, [&](long long count) {
        for (long long i = 0; i < count; ++i) {
            read_kernel<<<grid, kBlock, 0, c.stream>>>(src.as<uint4>(), n, sink.as<unsigned>());
            check_launch("read_kernel");
        }
    });
    points.push_back(rate_point("hbm_read_bytes_per_s", static_cast<double>(bytes), read_s, "B/s",
                                format("read-only kernel, 16-byte loads XOR-reduced to one word, %.0f MiB buffer, "
                                       "grid %.0f x 256 (persistent)",
                                       static_cast<double>(bytes) / kMiB, grid)));
}

void measure_l2(const Ctx& c, std::vector<CalibrationPoint>& points) {
    const int grid = c.sm_count * blocks_per_sm(l2_read_kernel);
    const long long chunk = static_cast<long long>(kUnroll) * kBlock;  // uint4 per block step
    const long long l2 = c.l2_bytes > 0 ? c.l2_bytes : (4LL << 20);
    const long long n = std::max(l2 / 4 / 16 / chunk, 1LL) * chunk;
    const long long chunks = n / chunk;
    const long long start_stride = std::max(chunks / grid, 1LL) * chunk;
    // One full pass over the buffer per block (a quarter of one in quick mode).
    const int steps = static_cast<int>(std::max(chunks / (c.quick ? 4 : 1), 1LL));
    DeviceBuffer buf(static_cast<std::size_t>(n) * 16), sink(sizeof(unsigned));
    fill(c, buf.get(), n * 4, fill_words, 3);
    check(cudaMemsetAsync(sink.get(), 0, sizeof(unsigned), c.stream), "cudaMemsetAsync");
    const double bytes = static_cast<double>(grid) * steps * static_cast<double>(chunk) * 16.0;
    const auto s = time_units(c.stream, c.plan, [&](long long count) {
        for (long long i = 0; i < count; ++i) {
            l2_read_kernel<<<grid, kBlock, 0, c.stream>>>(buf.as<uint4>(), n, start_stride, steps, sink.as<unsigned>());
            check_launch("l2_read_kernel");
        }
    });
    points.push_back(rate_point("l2_bytes_per_s", bytes, s, "B/s",
                                format("ld.global.cg 16-byte reads of a %.2f MiB buffer (1/4 of L2), each of %.0f blocks "
                                       "streaming %.0f x 16 KiB from its own start offset",
                                       static_cast<double>(n) * 16.0 / kMiB, grid, steps)));
}

void measure_smem(const Ctx& c, std::vector<CalibrationPoint>& points) {
    const int bps = blocks_per_sm(smem_kernel);
    const int grid = c.sm_count * bps;
    const int iters = c.quick ? 64 : 256;
    DeviceBuffer sink(sizeof(unsigned));
    check(cudaMemsetAsync(sink.get(), 0, sizeof(unsigned), c.stream), "cudaMemsetAsync");
    const double bytes = static_cast<double>(grid) * kBlock * iters * kSmemUnroll * 16.0;
    const auto s = time_units(c.stream, c.plan, [&](long long count) {
        for (long long i = 0; i < count; ++i) {
            smem_kernel<<<grid, kBlock, 0, c.stream>>>(iters, 5u, sink.as<unsigned>());
            check_launch("smem_kernel");
        }
    });
    points.push_back(rate_point("smem_bytes_per_s", bytes, s, "B/s",
                                format("ld.shared.v4 conflict-free (a warp reads 512 contiguous bytes), 16 KiB tile per "
                                       "block, %.0f blocks per SM on %.0f SMs; bytes = per-SM traffic x SMs",
                                       bps, c.sm_count)));
}

template <class T>
std::vector<double> time_fma(const Ctx& c, int grid, int iters, float* out) {
    return time_units(c.stream, c.plan, [&](long long count) {
        for (long long i = 0; i < count; ++i) {
            fma_kernel<T><<<grid, kBlock, 0, c.stream>>>(0.999f, 1e-3f, iters, out, nullptr);
            check_launch("fma_kernel");
        }
    });
}

template <class T>
void measure_vector(const Ctx& c, const char* quantity, const char* instr, double flop_per_instr, int iters,
                    std::vector<CalibrationPoint>& points) {
    const int bps = blocks_per_sm(fma_kernel<T>);
    const int grid = c.sm_count * bps;
    DeviceBuffer out(static_cast<std::size_t>(grid) * kBlock * sizeof(float));
    const auto s = time_fma<T>(c, grid, iters, out.as<float>());
    const double flop = static_cast<double>(grid) * kBlock * static_cast<double>(iters) * kFmaSteps * kFmaAcc * flop_per_instr;
    char method[256];
    std::snprintf(method, sizeof method,
                  "%s chains, %d independent accumulators per thread, %d blocks of 256 per SM (full occupancy); %.0f FLOP "
                  "per instruction",
                  instr, kFmaAcc, bps, flop_per_instr);
    points.push_back(rate_point(quantity, flop, s, "FLOP/s", method));
}

// cycles / ns of block 0 of the FFMA kernel, over 10 launches (after measure_vector warmed it up).
void measure_clock(const Ctx& c, int iters, std::vector<CalibrationPoint>& points) {
    const int grid = c.sm_count * blocks_per_sm(fma_kernel<float>);
    DeviceBuffer out(static_cast<std::size_t>(grid) * kBlock * sizeof(float)), clk(2 * sizeof(long long));
    std::vector<double> hz;
    for (int r = 0; r < 10; ++r) {
        fma_kernel<float><<<grid, kBlock, 0, c.stream>>>(0.999f, 1e-3f, iters, out.as<float>(), clk.as<long long>());
        check_launch("fma_kernel(clock)");
        long long host[2] = {0, 0};
        check(cudaMemcpyAsync(host, clk.get(), sizeof host, cudaMemcpyDeviceToHost, c.stream), "cudaMemcpyAsync");
        check(cudaStreamSynchronize(c.stream), "cudaStreamSynchronize");
        if (host[0] > 0 && host[1] > 0) hz.push_back(static_cast<double>(host[0]) / (static_cast<double>(host[1]) * 1e-9));
    }
    if (hz.empty()) throw CudaError("sm clock: %globaltimer did not advance during the FFMA kernel");
    points.push_back(value_point("sm_clock_observed_hz", std::move(hz), "Hz",
                                 "clock64() cycles over %globaltimer ns in block 0 of the FFMA kernel under full load"));
}

void measure_launch(const Ctx& c, std::vector<CalibrationPoint>& points) {
    const long long n = c.quick ? 500 : 2000;
    const auto s = time_units(
        c.stream, c.plan,
        [&](long long count) {
            for (long long i = 0; i < count; ++i) {
                empty_kernel<<<1, 32, 0, c.stream>>>();
                check_launch("empty_kernel");
            }
        },
        n);
    points.push_back(value_point("launch_overhead_s", s, "s",
                                 format("%.0f back-to-back launches of an empty kernel (1 block of 32) on one stream, "
                                        "cudaEvents around them: elapsed / launches",
                                        static_cast<double>(n))));

    std::vector<double> lat;
    const int samples = c.quick ? 50 : 200;
    for (int r = 0; r < samples + 5; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        empty_kernel<<<1, 32, 0, c.stream>>>();
        check_launch("empty_kernel");
        check(cudaStreamSynchronize(c.stream), "cudaStreamSynchronize");
        const auto t1 = std::chrono::steady_clock::now();
        if (r >= 5) lat.push_back(std::chrono::duration<double>(t1 - t0).count());
    }
    points.push_back(
        value_point("launch_latency_s", std::move(lat), "s", "one empty-kernel launch + cudaStreamSynchronize, host steady_clock"));
}

// ---------------------------------------------------------------------------------------------
// cuBLASLt GEMMs

struct GemmType {
    const char* name;  // "f16", "bf16", "tf32", "int8", "fp8_e4m3"
    cudaDataType_t ab, cd;
    cublasComputeType_t compute;
    cudaDataType_t scale;
    FillMode fill;
};

constexpr GemmType kGemmF16{"f16", CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, CUDA_R_32F, fill_f16};
constexpr GemmType kGemmBf16{"bf16", CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUDA_R_32F, fill_bf16};
constexpr GemmType kGemmTf32{"tf32", CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_R_32F, fill_f32};
constexpr GemmType kGemmI8{"int8", CUDA_R_8I, CUDA_R_32I, CUBLAS_COMPUTE_32I, CUDA_R_32I, fill_i8};
// fp8 (Hopper, Ada): e4m3 inputs, f32 accumulation, bf16 C and D, unit scales (cuBLASLt's default
// when no scale pointer is set). cuBLASLt runs fp8 only as TN, the layout every GEMM here uses.
constexpr GemmType kGemmFp8{"fp8_e4m3", CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUDA_R_32F, fill_fp8_e4m3};

// D = C = op(A) op(B) with op(A) = A^T ("TN", what int8 requires): A is K x M, B is K x N, C is M x N,
// column-major. The heuristic's first algorithm.
class LtGemm {
public:
    LtGemm(cublasLtHandle_t h, const GemmType& t, long long m, long long n, long long k) : h_(h), t_(t) {
        cublasLtMatmulDesc_t op = nullptr;
        lt_check(cublasLtMatmulDescCreate(&op, t.compute, t.scale), "cublasLtMatmulDescCreate");
        op_.reset(op);
        const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
        lt_check(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), "cublasLtMatmulDescSetAttribute");
        lt_check(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), "cublasLtMatmulDescSetAttribute");
        a_ = layout(t.ab, k, m);
        b_ = layout(t.ab, k, n);
        c_ = layout(t.cd, m, n);
        cublasLtMatmulPreference_t pref = nullptr;
        lt_check(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
        PreferencePtr pref_owner(pref);
        const std::size_t ws = kGemmWorkspaceBytes;
        lt_check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws),
                 "cublasLtMatmulPreferenceSetAttribute");
        int found = 0;
        const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(h, op, a_.get(), b_.get(), c_.get(), c_.get(), pref, 1, &result_, &found);
        available_ = st == CUBLAS_STATUS_SUCCESS && found > 0 && result_.state == CUBLAS_STATUS_SUCCESS;
        if (st != CUBLAS_STATUS_SUCCESS && st != CUBLAS_STATUS_NOT_SUPPORTED) lt_check(st, "cublasLtMatmulAlgoGetHeuristic");
    }
    bool available() const { return available_; }

    void enqueue(cudaStream_t s, const void* a, const void* b, void* c, void* ws) const {
        const float one_f = 1.0f, zero_f = 0.0f;
        const std::int32_t one_i = 1, zero_i = 0;
        const bool int_scale = t_.scale == CUDA_R_32I;
        const void* alpha = int_scale ? static_cast<const void*>(&one_i) : static_cast<const void*>(&one_f);
        const void* beta = int_scale ? static_cast<const void*>(&zero_i) : static_cast<const void*>(&zero_f);
        lt_check(cublasLtMatmul(h_, op_.get(), alpha, a, a_.get(), b, b_.get(), beta, c, c_.get(), c, c_.get(), &result_.algo, ws,
                                kGemmWorkspaceBytes, s),
                 "cublasLtMatmul");
    }

private:
    static LayoutPtr layout(cudaDataType_t t, long long rows, long long cols) {
        cublasLtMatrixLayout_t l = nullptr;
        lt_check(cublasLtMatrixLayoutCreate(&l, t, static_cast<std::uint64_t>(rows), static_cast<std::uint64_t>(cols),
                                            static_cast<std::int64_t>(rows)),
                 "cublasLtMatrixLayoutCreate");
        return LayoutPtr(l);
    }

    cublasLtHandle_t h_;
    GemmType t_;
    MatmulDescPtr op_;
    LayoutPtr a_, b_, c_;
    cublasLtMatmulHeuristicResult_t result_{};
    bool available_ = false;
};

struct GemmBuffers {
    DeviceBuffer a, b, c, ws;
    explicit GemmBuffers(std::size_t elems)
        : a(elems * 4), b(elems * 4), c(elems * 4), ws(kGemmWorkspaceBytes) {}  // 4 = the largest element size
};

// Seconds per GEMM; throws when cuBLASLt has no algorithm (allow_missing: returns empty instead).
std::vector<double> time_gemm(const Ctx& c, cublasLtHandle_t h, GemmBuffers& buf, const GemmType& t, long long m, long long n, long long k,
                              bool allow_missing) {
    const LtGemm g(h, t, m, n, k);
    if (!g.available()) {
        if (allow_missing) return {};
        throw CudaError(std::string("cuBLASLt offers no algorithm for a ") + t.name + " GEMM " + std::to_string(m) + "x" +
                        std::to_string(n) + "x" + std::to_string(k));
    }
    return time_units(c.stream, c.plan, [&](long long count) {
        for (long long i = 0; i < count; ++i) g.enqueue(c.stream, buf.a.get(), buf.b.get(), buf.c.get(), buf.ws.get());
    });
}

void fill_gemm_inputs(const Ctx& c, GemmBuffers& buf, const GemmType& t, long long elems) {
    fill(c, buf.a.get(), elems, t.fill, 11);
    fill(c, buf.b.get(), elems, t.fill, 12);
}

double median_of(std::vector<double> v) { return rep_stats(std::move(v)).median; }

void measure_gemms(const Ctx& c, Calibration& cal) {
    const long long big = c.quick ? 4096 : 8192;
    const long long elems = big * big;  // every shape below fits: A, B, C have at most big^2 elements
    LtHandle lt;
    GemmBuffers buf(static_cast<std::size_t>(elems));
    const char* method =
        "cuBLASLt GEMM %.0f^3 (TN, heuristic's first algorithm, 32 MiB workspace) on hash-random data "
        "in [-1, 1); 2*M*N*K per GEMM";

    const std::vector<long long> squares =
        c.quick ? std::vector<long long>{256, 1024, 4096} : std::vector<long long>{256, 512, 1024, 2048, 4096, 8192};
    const std::vector<std::array<long long, 3>> skinny = {{big, big, 128}, {128, big, big}};
    for (const GemmType* t : {&kGemmF16, &kGemmBf16}) {
        fill_gemm_inputs(c, buf, *t, elems);
        std::vector<GemmEfficiencyPoint> rows;
        std::vector<double> peak_s;
        auto add = [&](long long m, long long n, long long k) {
            auto s = time_gemm(c, lt.get(), buf, *t, m, n, k, false);
            const double flop = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
            const double med = median_of(s);
            rows.push_back(GemmEfficiencyPoint{t->name, m, n, k, med, flop / med, 0.0});
            if (m == big && n == big && k == big) peak_s = std::move(s);
        };
        for (long long sz : squares) add(sz, sz, sz);
        for (const auto& sh : skinny) add(sh[0], sh[1], sh[2]);
        const double flop = 2.0 * static_cast<double>(big) * static_cast<double>(big) * static_cast<double>(big);
        CalibrationPoint p = rate_point(std::string("matrix_flop_per_s.") + t->name, flop, peak_s, "FLOP/s",
                                        format(method, static_cast<double>(big)) + ", f32 accumulation");
        for (auto& r : rows) {
            r.efficiency = p.value > 0 ? r.flop_per_s / p.value : 0.0;
            cal.gemm_efficiency.push_back(r);
        }
        cal.points.push_back(std::move(p));
    }

    fill_gemm_inputs(c, buf, kGemmTf32, elems);
    const double flop = 2.0 * static_cast<double>(big) * static_cast<double>(big) * static_cast<double>(big);
    cal.points.push_back(rate_point("matrix_flop_per_s.tf32", flop, time_gemm(c, lt.get(), buf, kGemmTf32, big, big, big, false), "FLOP/s",
                                    format(method, static_cast<double>(big)) + ", f32 data, CUBLAS_COMPUTE_32F_FAST_TF32"));

    // The 8-bit types are optional: a chip without them (fp8 before Ada and Hopper) has no point.
    // cuBLASLt may also reject one at run time although its heuristic offered an algorithm; a
    // sticky CUDA error would surface at the next checked call.
    const std::pair<const GemmType*, const char*> eight_bit[] = {
        {&kGemmI8, ", int8 data, int32 accumulation and output"},
        {&kGemmFp8, ", fp8 e4m3 data, f32 accumulation, bf16 output, unit scales"}};
    for (const auto& [t, what] : eight_bit) {
        fill_gemm_inputs(c, buf, *t, elems);
        std::vector<double> s;
        try {
            s = time_gemm(c, lt.get(), buf, *t, big, big, big, true);
        } catch (const CudaError&) {
            s.clear();
        }
        if (!s.empty())
            cal.points.push_back(rate_point(std::string("matrix_flop_per_s.") + t->name, flop, s, t->ab == CUDA_R_8I ? "OP/s" : "FLOP/s",
                                            format(method, static_cast<double>(big)) + what));
    }
}

std::string utc_now_iso8601() {
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&now, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

RepStats rep_stats(std::vector<double> samples) {
    RepStats r;
    if (samples.empty()) return r;
    std::sort(samples.begin(), samples.end());
    auto pct = [&](double q) {
        const double pos = q * static_cast<double>(samples.size() - 1);
        const std::size_t lo = static_cast<std::size_t>(std::floor(pos));
        const std::size_t hi = std::min(lo + 1, samples.size() - 1);
        const double frac = pos - static_cast<double>(lo);
        return samples[lo] + (samples[hi] - samples[lo]) * frac;
    };
    r.median = pct(0.5);
    r.p10 = pct(0.1);
    r.p90 = pct(0.9);
    r.spread = r.median != 0 ? (r.p90 - r.p10) / r.median : 0.0;
    return r;
}

const CalibrationPoint* Calibration::find(const std::string& quantity) const {
    for (const auto& p : points)
        if (p.quantity == quantity) return &p;
    return nullptr;
}

Calibration run_calibration(int device, const CalibrationOptions& opt) {
    check(cudaSetDevice(device), "cudaSetDevice");
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
    Calibration cal;
    cal.device_name = prop.name;
    cal.cc_major = prop.major;
    cal.cc_minor = prop.minor;
    cal.sm_count = prop.multiProcessorCount;
    cal.memory_bytes = static_cast<long long>(prop.totalGlobalMem);
    cal.l2_bytes = prop.l2CacheSize;
    check(cudaDriverGetVersion(&cal.driver_version), "cudaDriverGetVersion");
    check(cudaRuntimeGetVersion(&cal.runtime_version), "cudaRuntimeGetVersion");
    int clock_khz = 0;
    check(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device), "cudaDeviceGetAttribute(ClockRate)");
    cal.sm_clock_hz = static_cast<double>(clock_khz) * 1e3;
    cal.date_utc = utc_now_iso8601();

    Stream stream;
    Ctx c;
    c.device = device;
    c.sm_count = cal.sm_count;
    c.l2_bytes = cal.l2_bytes;
    c.quick = opt.quick;
    c.plan = opt.quick ? Plan{0.25e-3, 10} : Plan{1e-3, 20};
    c.stream = stream.get();

    measure_hbm(c, cal.points);
    measure_l2(c, cal.points);
    measure_smem(c, cal.points);
    // Iterations per launch: ~0.1-0.3 ms of FFMA on an H100 (the batches add up to plan.batch_s).
    const int fma_iters = opt.quick ? 32 : 64;
    measure_vector<float>(c, "vector_flop_per_s.f32", "FFMA", 2.0, fma_iters, cal.points);
    measure_vector<__half2>(c, "vector_flop_per_s.f16", "HFMA2 (half2)", 4.0, fma_iters, cal.points);
    measure_vector<__nv_bfloat162>(c, "vector_flop_per_s.bf16", "HFMA2.BF16 (bfloat162)", 4.0, fma_iters, cal.points);
    measure_vector<double>(c, "vector_flop_per_s.f64", "DFMA", 2.0, fma_iters / 2, cal.points);
    measure_clock(c, fma_iters * (opt.quick ? 4 : 16), cal.points);
    measure_launch(c, cal.points);
    measure_gemms(c, cal);
    check(cudaStreamSynchronize(c.stream), "cudaStreamSynchronize");
    return cal;
}

nlohmann::json calibration_to_json(const Calibration& c) {
    nlohmann::json j;
    j["schema"] = "roofline-calibration/1";
    j["device"] = {
        {"name", c.device_name},
        {"compute_capability", std::to_string(c.cc_major) + "." + std::to_string(c.cc_minor)},
        {"cc_major", c.cc_major},
        {"cc_minor", c.cc_minor},
        {"sm_count", c.sm_count},
        {"memory_bytes", c.memory_bytes},
        {"l2_bytes", c.l2_bytes},
        {"driver_version", c.driver_version},
        {"runtime_version", c.runtime_version},
        {"sm_clock_hz", c.sm_clock_hz},
    };
    j["date_utc"] = c.date_utc;
    nlohmann::json points = nlohmann::json::array();
    for (const auto& p : c.points)
        points.push_back({{"quantity", p.quantity}, {"value", p.value}, {"unit", p.unit}, {"method", p.method}, {"spread", p.spread}});
    j["points"] = std::move(points);
    nlohmann::json gemms = nlohmann::json::array();
    for (const auto& g : c.gemm_efficiency)
        gemms.push_back({{"dtype", g.dtype},
                         {"m", g.m},
                         {"n", g.n},
                         {"k", g.k},
                         {"seconds", g.seconds},
                         {"flop_per_s", g.flop_per_s},
                         {"efficiency", g.efficiency}});
    j["gemm_efficiency"] = std::move(gemms);
    return j;
}

}  // namespace roofline
