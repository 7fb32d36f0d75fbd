#pragma once
// The pseudo-random values every source tensor (parameter, input) of an executed graph starts
// from, shared by the CPU reference (model/executor.cpp) and the GPU executor's device fill
// (measure/source_fill.cu), so that both produce the same bits for the same (seed, tensor, index).
// A splitmix64 finaliser over the three; the top 53 bits as a double in [0, 1).
#include <cstdint>

#if defined(__CUDACC__)
#define ROOFLINE_HOST_DEVICE __host__ __device__
#else
#define ROOFLINE_HOST_DEVICE
#endif

namespace roofline {

ROOFLINE_HOST_DEVICE inline double deterministic_uniform(std::uint64_t seed, std::uint64_t stream, std::uint64_t i) {
    std::uint64_t z = seed * 0x9E3779B97F4A7C15ULL + stream * 0xD1B54A32D192ED03ULL + i + 0x632BE59BD9B4E019ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return static_cast<double>(z >> 11) * 0x1.0p-53;
}

// A floating-point source's value before rounding to its dtype: uniform in [-1, 1).
ROOFLINE_HOST_DEVICE inline double deterministic_real(std::uint64_t seed, std::uint64_t stream, std::uint64_t i) {
    return 2 * deterministic_uniform(seed, stream, i) - 1;
}

// An integer (index) source's value: uniform in [0, bound).
ROOFLINE_HOST_DEVICE inline std::int64_t deterministic_index(std::uint64_t seed, std::uint64_t stream, std::uint64_t i,
                                                             std::int64_t bound) {
    return static_cast<std::int64_t>(deterministic_uniform(seed, stream, i) * static_cast<double>(bound));
}

}  // namespace roofline
