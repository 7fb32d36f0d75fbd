#include "measure/source_fill.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <string>
#include <type_traits>

#include "model/deterministic.hpp"
#include "ops/cuda/cuda_check.hpp"
#include "ops/error.hpp"

namespace roofline {
namespace {

template <typename T>
__global__ void fill_real(T* dst, long long n, std::uint64_t seed, std::uint64_t stream, double scale) {
    const long long step = static_cast<long long>(gridDim.x) * blockDim.x;
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
        // Rounded through f32 first, as the reference's round_to and encode_tensor do.
        const float f = __double2float_rn(scale * deterministic_real(seed, stream, static_cast<std::uint64_t>(i)));
        if constexpr (std::is_same_v<T, float>)
            dst[i] = f;
        else if constexpr (std::is_same_v<T, __half>)
            dst[i] = __float2half_rn(f);
        else
            dst[i] = __float2bfloat16_rn(f);
    }
}

template <typename T>
__global__ void fill_index(T* dst, long long n, std::uint64_t seed, std::uint64_t stream, long long bound) {
    const long long step = static_cast<long long>(gridDim.x) * blockDim.x;
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
        dst[i] = static_cast<T>(deterministic_index(seed, stream, static_cast<std::uint64_t>(i), bound));
}

}  // namespace

void fill_source_on_device(void* dst, DType d, std::int64_t n, std::uint64_t seed, std::uint64_t stream, std::int64_t index_bound,
                           double scale, cudaStream_t s) {
    if (n <= 0) return;
    constexpr int kThreads = 256;
    const long long blocks_needed = (n + kThreads - 1) / kThreads;
    const unsigned blocks = static_cast<unsigned>(blocks_needed < 4096 ? blocks_needed : 4096);
    switch (d) {
        case DType::f32: fill_real<<<blocks, kThreads, 0, s>>>(static_cast<float*>(dst), n, seed, stream, scale); break;
        case DType::f16: fill_real<<<blocks, kThreads, 0, s>>>(static_cast<__half*>(dst), n, seed, stream, scale); break;
        case DType::bf16: fill_real<<<blocks, kThreads, 0, s>>>(static_cast<__nv_bfloat16*>(dst), n, seed, stream, scale); break;
        case DType::int8: fill_index<<<blocks, kThreads, 0, s>>>(static_cast<std::int8_t*>(dst), n, seed, stream, index_bound); break;
        case DType::u8: fill_index<<<blocks, kThreads, 0, s>>>(static_cast<std::uint8_t*>(dst), n, seed, stream, index_bound); break;
        case DType::int32: fill_index<<<blocks, kThreads, 0, s>>>(static_cast<std::int32_t*>(dst), n, seed, stream, index_bound); break;
        case DType::int64: fill_index<<<blocks, kThreads, 0, s>>>(static_cast<long long*>(dst), n, seed, stream, index_bound); break;
        default: throw InputError("the CUDA executor has no " + std::string(dtype_name(d)) + " tensors to fill");
    }
    cuda::check(cudaGetLastError(), "fill_source_on_device");
}

}  // namespace roofline
