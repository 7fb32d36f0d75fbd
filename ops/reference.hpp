#pragma once
// CPU reference kernels: simple, obviously correct implementations of every op kind, used by the
// tests (gradient checks) and later as the reference for the CUDA kernels. Values are held as
// double; in f32 precision every result is rounded to float after each op, as an f32 kernel
// would store it. Nothing here is fast, on purpose.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ops/attrs.hpp"
#include "ops/op_kind.hpp"
#include "ops/tensor.hpp"

namespace roofline {

enum class RefPrecision { f64, f32 };

struct HostTensor {
    TensorDesc desc;
    std::vector<double> data;  // row-major; integer tensors hold exact integer values
};

// Runs one op. out describes the outputs (from infer_outputs). Throws InputError for an op or
// dtype the reference does not implement (fp8 casts), naming it.
std::vector<HostTensor> run_reference(OpKind k, const std::vector<const HostTensor*>& in, const Attrs& attrs,
                                      const std::vector<TensorDesc>& out, RefPrecision precision);

// Rounds a value to what a tensor of dtype d stores (f32, bf16, f16 round to nearest even).
double round_to(double v, DType d);

// The flat index in an operand of shape s of the output element at flat index i of shape out, s
// broadcast to out by numpy's rules (trailing dims aligned; extent 1 or missing dims repeat).
inline std::int64_t broadcast_source(const Shape& out, const Shape& s, std::int64_t i) {
    std::int64_t off = 0, stride = 1;
    for (std::size_t d = out.size(); d-- > 0;) {
        const std::int64_t c = i % out[d];
        i /= out[d];
        if (d + s.size() < out.size()) continue;  // s has fewer dims: repeated along the leading ones
        const std::int64_t extent = s[d + s.size() - out.size()];
        if (extent != 1) off += c * stride;
        stride *= extent;
    }
    return off;
}

}  // namespace roofline
