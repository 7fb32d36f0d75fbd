#pragma once
// Hardware-free work of one op, counted by the conventions in docs/ARCHITECTURE.md:
// a multiply-add is 2 FLOPs (GEMM M x K . K x N = 2MNK); bytes are what an ideal kernel moves to and
// from device memory (each input read once, each output written once); transcendental operations
// (exp, log, tanh, erf, sin, sqrt, rsqrt) are counted separately, one per result.
#include <cstdint>

#include "ops/dtype.hpp"

namespace roofline {

struct Work {
    std::int64_t matrix_flops = 0;     // multiply-adds x 2 that a matrix unit (tensor core, MXU) can run
    std::int64_t vector_flops = 0;     // plain arithmetic on vector units (CUDA cores, VPU)
    std::int64_t transcendentals = 0;  // special-function results (SFU)
    std::int64_t bytes_read = 0;
    std::int64_t bytes_written = 0;

    std::int64_t flops() const;  // matrix + vector + transcendental, checked
    std::int64_t bytes() const;  // read + written, checked
    Work& operator+=(const Work& o);
    friend Work operator+(Work a, const Work& b) { return a += b; }
    bool operator==(const Work&) const = default;
};

}  // namespace roofline
