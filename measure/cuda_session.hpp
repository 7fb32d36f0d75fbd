#pragma once
// What running kernels needs, owned in one place: a device, a stream, a cuBLASLt handle and its
// workspace, and stream-ordered scratch memory for the launches' temporaries. RAII: everything is
// released on every path. Throws roofline::cuda::CudaError naming the failed call.
#include <cstddef>
#include <memory>
#include <vector>

#include "ops/cuda/kernels.hpp"

namespace roofline {

class CudaSession {
public:
    // cuBLASLt workspace: 32 MiB, what cuBLAS recommends for Hopper (cuBLAS docs, "cublasSetWorkspace").
    static constexpr std::size_t kWorkspaceBytes = std::size_t{32} << 20;

    explicit CudaSession(int device = 0);
    ~CudaSession();
    CudaSession(const CudaSession&) = delete;
    CudaSession& operator=(const CudaSession&) = delete;

    // A fresh launch context for one op. Its scratch buffers come from a pool that is reused by
    // the next context: every launch goes to the one stream, so stream order makes reuse safe, and
    // after the first run of a graph no allocation happens inside a timed run.
    cuda::LaunchContext context(bool flash_attention);
    void release_scratch();  // synchronises; the pool stays allocated until destruction
    std::size_t peak_scratch_bytes() const { return peak_scratch_; }

    void synchronize();
    CUstream_st* stream() const { return stream_; }
    int device() const { return device_; }

private:
    int device_ = 0;
    CUstream_st* stream_ = nullptr;
    void* cublaslt_ = nullptr;
    void* workspace_ = nullptr;
    struct Block {
        void* p;
        std::size_t bytes;
    };
    std::vector<Block> pool_;
    std::size_t next_ = 0;  // next pool block the current context hands out
    std::size_t peak_scratch_ = 0;
};

}  // namespace roofline
