#pragma once
// Overflow-checked int64 arithmetic for shapes, element counts, bytes and FLOPs. A model can name
// dimensions whose product does not fit in int64; that is an input error, never a silent wrap.
#include <cstdint>
#include <string>

#include "ops/error.hpp"

namespace roofline {

// The error of an overflowing checked_mul or checked_add: out of line and cold, so that the checks
// themselves inline to an overflow flag test (issue #20: every shape's size is checked).
[[noreturn, gnu::cold, gnu::noinline]] inline void int64_overflow(const char* what, std::int64_t a, const char* op, std::int64_t b) {
    throw InputError(std::string("int64 overflow computing ") + what + " (" + std::to_string(a) + op + std::to_string(b) + ")");
}

inline std::int64_t checked_mul(std::int64_t a, std::int64_t b, const char* what = "product") {
    std::int64_t r = 0;
    if (__builtin_mul_overflow(a, b, &r)) [[unlikely]]
        int64_overflow(what, a, " x ", b);
    return r;
}

inline std::int64_t checked_add(std::int64_t a, std::int64_t b, const char* what = "sum") {
    std::int64_t r = 0;
    if (__builtin_add_overflow(a, b, &r)) [[unlikely]]
        int64_overflow(what, a, " + ", b);
    return r;
}

}  // namespace roofline
