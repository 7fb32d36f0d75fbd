#pragma once
// Reading an operand broadcast to a larger output (numpy rules: trailing dims aligned, extent 1 or
// missing dims repeated): Broadcast holds the output's dims and the operand's stride per output
// dim (0 where it repeats); broadcast_offset maps an output element's flat index to the operand's.
#include <cstddef>
#include <cstdint>

#include "ops/tensor.hpp"

namespace roofline::cuda {

inline constexpr int kMaxBroadcastRank = 8;

struct Broadcast {
    int rank = 0;
    std::int64_t dim[kMaxBroadcastRank] = {};
    std::int64_t stride[kMaxBroadcastRank] = {};
};

// The operand of shape s read at the positions of an output of shape x; false when s has more dims
// than x or x more than kMaxBroadcastRank (the caller's shape inference checked that s broadcasts).
inline bool broadcast_of(const Shape& x, const Shape& s, Broadcast& b) {
    if (x.size() > kMaxBroadcastRank || s.size() > x.size()) return false;
    b.rank = static_cast<int>(x.size());
    std::int64_t st = 1;
    for (std::size_t d = x.size(); d-- > 0;) {
        b.dim[d] = x[d];
        const std::size_t lead = x.size() - s.size();
        const std::int64_t extent = d >= lead ? s[d - lead] : 1;
        b.stride[d] = extent == 1 ? 0 : st;
        st *= extent;
    }
    return true;
}

__device__ inline std::int64_t broadcast_offset(const Broadcast& b, std::int64_t i) {
    std::int64_t off = 0;
    for (int d = b.rank - 1; d >= 0; --d) {
        off += (i % b.dim[d]) * b.stride[d];
        i /= b.dim[d];
    }
    return off;
}

}  // namespace roofline::cuda
