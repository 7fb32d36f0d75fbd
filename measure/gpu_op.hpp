#pragma once
// Host <-> device tensors, and one op run on the GPU from host values: what the [gpu] tests use
// to compare every kernel with the CPU reference (ops/reference.hpp).
#include <cstddef>
#include <string>
#include <vector>

#include "ops/attrs.hpp"
#include "ops/op_kind.hpp"
#include "ops/reference.hpp"

namespace roofline {

// The bytes a tensor of desc.dtype stores for host values (f16/bf16/f32 round to nearest even;
// integer dtypes store the exact integers; u8 masks 0/1). Throws InputError for fp8/tf32/f64.
std::vector<std::byte> encode_tensor(const HostTensor& t);
HostTensor decode_tensor(const TensorDesc& desc, const void* bytes);

struct GpuOpResult {
    std::vector<HostTensor> outputs;
    std::vector<std::string> notes;  // the launches' LaunchContext::notes
};

// Uploads the inputs, runs roofline::cuda::launch_op once on a fresh stream, synchronises and
// downloads the outputs. Outputs are poisoned (NaN bytes) before the launch, so an element no
// kernel writes shows up. Throws CudaError/InputError.
GpuOpResult run_op_on_gpu(OpKind k, const std::vector<const HostTensor*>& in, const Attrs& attrs, const std::vector<TensorDesc>& out,
                          bool flash_attention = false);

// ||a - b|| / ||b|| over all elements (0 when both are zero; infinity if any NaN).
double relative_error(const HostTensor& a, const HostTensor& b);

}  // namespace roofline
