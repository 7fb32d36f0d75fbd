#pragma once
// What ops/defs/compare.cpp (the op and its CPU reference) and ops/defs/compare.cu (its CUDA
// kernel) share: the mode's number and the test itself, one function for host and device.
#include "ops/attrs.hpp"
#include "ops/pointwise_math.hpp"  // ROOFLINE_HD

namespace roofline {

// The `mode` attribute as 0..8: eq, ne, lt, le, gt, ge, and, or, xor; InputError for another.
int compare_mode(const Attrs& attrs);

// Whether a (mode) b holds; and, or and xor test a != 0 and b != 0.
template <class T>
ROOFLINE_HD inline bool compare_holds(int mode, T a, T b) {
    switch (mode) {
        case 0: return a == b;
        case 1: return a != b;
        case 2: return a < b;
        case 3: return a <= b;
        case 4: return a > b;
        case 5: return a >= b;
        case 6: return a != T(0) && b != T(0);
        case 7: return a != T(0) || b != T(0);
        default: return (a != T(0)) != (b != T(0));
    }
}

}  // namespace roofline
