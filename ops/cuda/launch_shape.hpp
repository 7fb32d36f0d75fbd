#pragma once
// Launch sizing shared by the CUDA kernel families.
#include <cstdint>

namespace roofline::cuda {

// Multiprocessors of the current device (cached per device).
int sm_count();

// Blocks of `threads` for `work` items, at most `per_sm` blocks per SM (grid-stride kernels loop
// over the rest).
unsigned grid_for(std::int64_t work, int threads, int per_sm = 8);

}  // namespace roofline::cuda
