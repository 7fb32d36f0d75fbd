#pragma once
// Overflow-checked int64 arithmetic for shapes, element counts, bytes and FLOPs. A model can name
// dimensions whose product does not fit in int64; that is an input error, never a silent wrap.
#include <cstdint>
#include <string>

#include "ops/error.hpp"

namespace roofline {

inline std::int64_t checked_mul(std::int64_t a, std::int64_t b, const char* what = "product") {
    std::int64_t r = 0;
    if (__builtin_mul_overflow(a, b, &r)) {
        throw InputError(std::string("int64 overflow computing ") + what + " (" + std::to_string(a) + " x " + std::to_string(b) + ")");
    }
    return r;
}

inline std::int64_t checked_add(std::int64_t a, std::int64_t b, const char* what = "sum") {
    std::int64_t r = 0;
    if (__builtin_add_overflow(a, b, &r)) {
        throw InputError(std::string("int64 overflow computing ") + what + " (" + std::to_string(a) + " + " + std::to_string(b) + ")");
    }
    return r;
}

}  // namespace roofline
