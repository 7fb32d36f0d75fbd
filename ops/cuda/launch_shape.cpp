#include "ops/cuda/launch_shape.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <atomic>

#include "ops/cuda/cuda_check.hpp"

namespace roofline::cuda {

int sm_count() {
    static std::array<std::atomic<int>, 64> cache{};
    int dev = 0;
    check(cudaGetDevice(&dev), "cudaGetDevice");
    const bool cached = dev >= 0 && dev < static_cast<int>(cache.size());
    if (cached) {
        const int c = cache[static_cast<std::size_t>(dev)].load(std::memory_order_relaxed);
        if (c > 0) return c;
    }
    int c = 0;
    check(cudaDeviceGetAttribute(&c, cudaDevAttrMultiProcessorCount, dev), "cudaDeviceGetAttribute(MultiProcessorCount)");
    c = std::max(c, 1);
    if (cached) cache[static_cast<std::size_t>(dev)].store(c, std::memory_order_relaxed);
    return c;
}

unsigned grid_for(std::int64_t work, int threads, int per_sm) {
    const std::int64_t blocks = (work + threads - 1) / threads;
    const std::int64_t cap = static_cast<std::int64_t>(sm_count()) * per_sm;
    return static_cast<unsigned>(std::clamp<std::int64_t>(blocks, 1, cap));
}

}  // namespace roofline::cuda
