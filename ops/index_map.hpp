#pragma once
// Where an output coordinate of pad and resize reads its input from, along one axis: the one
// definition the CPU reference (ops/reference.cpp), the op rules (ops/import_ops.cpp) and the CUDA
// kernels (ops/cuda/gather.cu) share, so that they index the same elements.
#include <math.h>

#include <cstdint>
#include <string>

#if defined(__CUDACC__)
#define ROOFLINE_INDEX_HD __host__ __device__
#else
#define ROOFLINE_INDEX_HD
#endif

namespace roofline {

// ONNX Pad modes. constant: outside reads the pad value; edge: the nearest edge element; wrap:
// periodic; reflect: mirrored without repeating the edge.
enum class PadMode : int { constant, edge, wrap, reflect };
// ONNX Resize coordinate_transformation_mode (the output coordinate's position in the input).
enum class ResizeCoord : int { half_pixel, pytorch_half_pixel, asymmetric, align_corners };
// ONNX Resize nearest_mode (how a fractional source position picks its element).
enum class NearestMode : int { round_prefer_floor, round_prefer_ceil, floor, ceil };

// InputError naming the attribute and what it accepts.
PadMode parse_pad_mode(const std::string& mode);
ResizeCoord parse_resize_coord(const std::string& mode);
NearestMode parse_nearest_mode(const std::string& mode);

// The input index output index s - (pad before) reads along an axis of n elements; -1 for a
// constant pad outside the input.
ROOFLINE_INDEX_HD inline std::int64_t pad_source(PadMode m, std::int64_t s, std::int64_t n) {
    if (s >= 0 && s < n) return s;
    switch (m) {
        case PadMode::constant: return -1;
        case PadMode::edge: return s < 0 ? 0 : n - 1;
        case PadMode::wrap: return ((s % n) + n) % n;
        case PadMode::reflect: return s < 0 ? -s : 2 * (n - 1) - s;
    }
    return -1;
}

// The (fractional) input position of output index o, in_len resized to out_len.
ROOFLINE_INDEX_HD inline double resize_coordinate(ResizeCoord m, std::int64_t o, std::int64_t in_len, std::int64_t out_len) {
    const double scale = in_len > 0 ? static_cast<double>(out_len) / static_cast<double>(in_len) : 1.0;
    const auto x = static_cast<double>(o);
    switch (m) {
        case ResizeCoord::half_pixel: return (x + 0.5) / scale - 0.5;
        case ResizeCoord::pytorch_half_pixel: return out_len > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
        case ResizeCoord::asymmetric: return x / scale;
        case ResizeCoord::align_corners: return out_len > 1 ? x * static_cast<double>(in_len - 1) / static_cast<double>(out_len - 1) : 0.0;
    }
    return 0.0;
}

ROOFLINE_INDEX_HD inline std::int64_t clamp_index(std::int64_t v, std::int64_t n) { return v < 0 ? 0 : (v > n - 1 ? n - 1 : v); }

// nearest: the element position s picks, clamped to [0, n).
ROOFLINE_INDEX_HD inline std::int64_t resize_nearest(NearestMode m, double s, std::int64_t n) {
    const double f = ::floor(s);
    const bool half = s - f == 0.5;
    const double r = m == NearestMode::floor  ? f
                     : m == NearestMode::ceil ? ::ceil(s)
                     : half                   ? (m == NearestMode::round_prefer_ceil ? f + 1 : f)
                                              : ::round(s);
    return clamp_index(static_cast<std::int64_t>(r), n);
}

// linear: the two neighbours of position s (clamped to [0, n - 1]) and the weight of the upper.
struct LinearTaps {
    std::int64_t lo = 0, hi = 0;
    double w = 0;
};
ROOFLINE_INDEX_HD inline LinearTaps resize_linear(double s, std::int64_t n) {
    const double top = static_cast<double>(n - 1);
    s = s < 0.0 ? 0.0 : (s > top ? top : s);
    LinearTaps t;
    t.lo = static_cast<std::int64_t>(::floor(s));
    t.hi = clamp_index(t.lo + 1, n);
    t.w = s - static_cast<double>(t.lo);
    return t;
}

}  // namespace roofline
