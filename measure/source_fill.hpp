#pragma once
// Source tensors filled on the device with the values model/executor.cpp's deterministic_value
// computes on the host (model/deterministic.hpp): the same bits, without generating and copying a
// 7-billion-parameter model through host memory.
#include <cuda_runtime.h>

#include <cstdint>

#include "ops/dtype.hpp"

namespace roofline {

// Writes n elements of dtype d at dst: indices in [0, index_bound) for integer dtypes, else
// uniform [-1, 1) times scale, rounded to d. Throws InputError for a dtype the executor has no
// tensors of.
void fill_source_on_device(void* dst, DType d, std::int64_t n, std::uint64_t seed, std::uint64_t stream, std::int64_t index_bound,
                           double scale, cudaStream_t s);

}  // namespace roofline
