#pragma once
// CUDA kernels for every op kind (built only with ROOFLINE_WITH_CUDA, used by measure/).
// This header is plain C++ (no CUDA headers), so host code compiled by g++ can include it.
// Each launch computes exactly what ops/reference.hpp's run_reference computes for the same op,
// inputs and attributes; the [gpu] tests check that against the CPU reference executor.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ops/attrs.hpp"
#include "ops/op_kind.hpp"
#include "ops/tensor.hpp"

struct CUstream_st;  // cudaStream_t without including cuda_runtime.h

namespace roofline::cuda {

// A tensor in device memory: dense, row-major, of desc.dtype.
struct DeviceTensor {
    void* data = nullptr;
    TensorDesc desc;
};

// What every launch needs besides its tensors.
struct LaunchContext {
    CUstream_st* stream = nullptr;
    void* cublaslt = nullptr;   // cublasLtHandle_t, created by the caller (measure/)
    void* workspace = nullptr;  // cuBLASLt workspace
    std::size_t workspace_bytes = 0;
    // attention: one fused flash-style kernel (tiled, online softmax) instead of the materialised
    // QK^T, softmax, xV sequence.
    bool flash_attention = false;
    // Temporary device memory for the duration of one launch_op call (attention scores, split
    // reductions). Released by the caller after launch_op returns and the stream is synchronised.
    std::function<void*(std::size_t bytes)> scratch;
    // Free-form notes a launch records about its choices ("cublasLt algo 6 tile 256x128 splitK 1"),
    // appended in launch order; measure/ stores them with the node's measurement.
    std::vector<std::string> notes;
};

// Launches the kernel(s) of op k on ctx.stream. in and out follow run_reference's convention
// (out descriptors from infer_outputs). Asynchronous: returns after enqueueing. Throws
// InputError for a dtype/op combination without a kernel (naming both) and CudaError for a
// failed CUDA call.
void launch_op(OpKind k, const std::vector<DeviceTensor>& in, const Attrs& attrs, const std::vector<DeviceTensor>& out, LaunchContext& ctx);

}  // namespace roofline::cuda
