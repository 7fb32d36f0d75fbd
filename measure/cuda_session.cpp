#include "measure/cuda_session.hpp"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <string>

#include "ops/cuda/cuda_check.hpp"

namespace roofline {

CudaSession::CudaSession(int device) : device_(device) {
    cuda::check(cudaSetDevice(device), "cudaSetDevice");
    cudaStream_t s = nullptr;
    cuda::check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
    stream_ = s;
    cublasLtHandle_t h = nullptr;
    if (const cublasStatus_t st = cublasLtCreate(&h); st != CUBLAS_STATUS_SUCCESS) {
        cudaStreamDestroy(s);
        throw cuda::CudaError("cublasLtCreate: status " + std::to_string(static_cast<int>(st)));
    }
    cublaslt_ = h;
    if (const cudaError_t e = cudaMalloc(&workspace_, kWorkspaceBytes); e != cudaSuccess) {
        cublasLtDestroy(h);
        cudaStreamDestroy(s);
        cuda::check(e, "cudaMalloc(cuBLASLt workspace)");
    }
}

CudaSession::~CudaSession() {
    if (stream_ != nullptr) cudaStreamSynchronize(stream_);
    for (const Block& b : pool_) cudaFree(b.p);
    if (workspace_ != nullptr) cudaFree(workspace_);
    if (cublaslt_ != nullptr) cublasLtDestroy(static_cast<cublasLtHandle_t>(cublaslt_));
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

cuda::LaunchContext CudaSession::context(bool flash_attention) {
    cuda::LaunchContext ctx;
    ctx.stream = stream_;
    ctx.cublaslt = cublaslt_;
    ctx.workspace = workspace_;
    ctx.workspace_bytes = kWorkspaceBytes;
    ctx.flash_attention = flash_attention;
    next_ = 0;
    ctx.scratch = [this](std::size_t bytes) {
        bytes = bytes == 0 ? 1 : bytes;
        if (next_ < pool_.size() && pool_[next_].bytes < bytes) {
            // Too small for this request: replace it (the stream must finish with it first).
            synchronize();
            cudaFree(pool_[next_].p);
            pool_[next_] = {nullptr, 0};
        }
        if (next_ == pool_.size()) pool_.push_back({nullptr, 0});
        Block& b = pool_[next_];
        if (b.p == nullptr) {
            cuda::check(cudaMalloc(&b.p, bytes), "cudaMalloc(scratch)");
            b.bytes = bytes;
        }
        ++next_;
        std::size_t in_use = 0;
        for (std::size_t i = 0; i < next_; ++i) in_use += pool_[i].bytes;
        if (in_use > peak_scratch_) peak_scratch_ = in_use;
        return b.p;
    };
    return ctx;
}

void CudaSession::release_scratch() { synchronize(); }

void CudaSession::synchronize() { cuda::check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }

}  // namespace roofline
