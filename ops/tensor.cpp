#include "ops/tensor.hpp"

#include <algorithm>

#include "ops/checked.hpp"

namespace roofline {

std::int64_t numel(const Shape& s) {
    std::int64_t n = 1;
    for (std::int64_t d : s) n = checked_mul(n, d, "element count");
    return n;
}

std::int64_t TensorDesc::numel() const { return roofline::numel(shape); }

std::int64_t TensorDesc::bytes() const { return checked_mul(numel(), dtype_bytes(dtype), "byte size"); }

std::string shape_str(const Shape& s) {
    std::string r = "[";
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (i) r += ",";
        r += std::to_string(s[i]);
    }
    return r + "]";
}

std::string desc_str(const TensorDesc& t) { return std::string(dtype_name(t.dtype)) + shape_str(t.shape); }

void check_dims(const Shape& s) {
    for (std::int64_t d : s) {
        if (d < 0) throw InputError("negative dimension " + std::to_string(d) + " in shape " + shape_str(s));
    }
}

Shape broadcast_shapes(const Shape& a, const Shape& b) {
    const std::size_t rank = std::max(a.size(), b.size());
    Shape out(rank);
    for (std::size_t i = 0; i < rank; ++i) {
        const std::int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
        const std::int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
        if (da != db && da != 1 && db != 1) {
            throw InputError("shapes " + shape_str(a) + " and " + shape_str(b) + " do not broadcast (dimension " + std::to_string(i) +
                             ": " + std::to_string(da) + " vs " + std::to_string(db) + ")");
        }
        out[i] = da == 1 ? db : da;
    }
    return out;
}

std::int64_t normalize_axis(std::int64_t axis, std::int64_t rank) {
    const std::int64_t a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank) {
        throw InputError("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
    }
    return a;
}

}  // namespace roofline
