#pragma once
// Error checking for CUDA runtime and library calls (include only from .cu / CUDA-using files).
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace roofline::cuda {

class CudaError : public std::runtime_error {
public:
    explicit CudaError(const std::string& what) : std::runtime_error(what) {}
};

inline void check(cudaError_t e, const char* what) {
    if (e != cudaSuccess) throw CudaError(std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

// After a kernel launch: reports a bad launch configuration at once.
inline void check_launch(const char* kernel) { check(cudaGetLastError(), kernel); }

}  // namespace roofline::cuda
