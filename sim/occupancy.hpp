#pragma once
// The CUDA occupancy rules (CUDA C++ Programming Guide, "Technical Specifications per Compute
// Capability" and the occupancy calculator's allocation rules): how many blocks of a launch
// configuration an SM holds at once, and what limits it.
#include <cstdint>
#include <string_view>

#include "sim/hardware.hpp"

namespace roofline {

struct LaunchConfig {
    std::int64_t threads_per_block = 256;
    std::int64_t registers_per_thread = 32;
    std::int64_t shared_bytes_per_block = 0;  // static + dynamic, as the kernel requests
};

enum class OccupancyLimit { warps, blocks, registers, shared_memory };
std::string_view limit_name(OccupancyLimit l);

struct Occupancy {
    std::int64_t blocks_per_sm = 0;
    std::int64_t warps_per_block = 0;
    std::int64_t active_warps = 0;
    double occupancy = 0;  // active warps / max warps per SM
    OccupancyLimit limit = OccupancyLimit::warps;
};

// Throws InputError when the configuration cannot launch at all (too many threads, registers or
// shared memory per block).
Occupancy occupancy(const GpuLimits& gpu, const LaunchConfig& launch);

// Shared memory the driver reserves per block on compute capability 8.0 and later (1 KiB, CUDA
// C++ Programming Guide, "Shared Memory" for compute capability 8.x and 9.0); none before.
std::int64_t reserved_shared_bytes_per_block(const GpuLimits& gpu);

}  // namespace roofline
