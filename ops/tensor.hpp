#pragma once
// Tensor descriptors: an int64 shape and a dtype. All size arithmetic is overflow-checked.
#include <cstdint>
#include <string>
#include <vector>

#include "ops/dtype.hpp"

namespace roofline {

using Shape = std::vector<std::int64_t>;

struct TensorDesc {
    Shape shape;
    DType dtype = DType::f32;

    std::int64_t rank() const { return static_cast<std::int64_t>(shape.size()); }
    std::int64_t numel() const;  // checked; 1 for a scalar (rank 0)
    std::int64_t bytes() const;  // checked
    bool operator==(const TensorDesc&) const = default;
};

std::int64_t numel(const Shape& s);         // checked product of dims
std::string shape_str(const Shape& s);      // "[2,3,4]"
std::string desc_str(const TensorDesc& t);  // "bf16[2,3,4]"
void check_dims(const Shape& s);            // throws on a negative dimension
// Numpy broadcasting of two shapes; throws InputError naming both shapes when incompatible.
Shape broadcast_shapes(const Shape& a, const Shape& b);
// Normalises a possibly negative axis against a rank; throws when out of range.
std::int64_t normalize_axis(std::int64_t axis, std::int64_t rank);

}  // namespace roofline
