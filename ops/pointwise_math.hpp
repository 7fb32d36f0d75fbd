#pragma once
// Per-element math shared by the CPU reference (ops/reference.cpp, evaluated in double) and the
// CUDA pointwise kernels (ops/cuda/pointwise.cu, evaluated in float): the dropout hash, the unary
// activations and their derivatives. Plain C++ for g++; nvcc compiles the same functions for the
// device (docs/ARCHITECTURE.md: "CUDA code that a CPU can check").
#include <cmath>
#include <cstdint>

#include "ops/op_kind.hpp"

#ifndef ROOFLINE_HD
#ifdef __CUDACC__
#define ROOFLINE_HD __host__ __device__
#else
#define ROOFLINE_HD
#endif
#endif

namespace roofline {

// ---- dropout ----

// splitmix64 finaliser of the flat element index: the dropout draw is its top 53 bits.
ROOFLINE_HD inline std::uint64_t dropout_hash(std::int64_t i) {
    std::uint64_t z = static_cast<std::uint64_t>(i) + 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return z;
}

// Deterministic dropout mask: element i is kept when its draw, uniform in [0, 1), is >= p.
ROOFLINE_HD inline bool dropout_keep(std::int64_t i, double p) { return static_cast<double>(dropout_hash(i) >> 11) * 0x1.0p-53 >= p; }

// The same test without floating point (what the kernels use): draw * 2^-53 >= p is exact on both
// sides scaled by 2^53, and the draw is an integer, so it holds iff draw >= ceil(p * 2^53).
inline std::uint64_t dropout_threshold(double p) { return p <= 0 ? 0 : static_cast<std::uint64_t>(std::ceil(p * 0x1.0p53)); }
ROOFLINE_HD inline bool dropout_keep_threshold(std::int64_t i, std::uint64_t threshold) { return (dropout_hash(i) >> 11) >= threshold; }

// ---- unary math ----
namespace pmath {
// One overload per precision, so that the templates below call the float functions on the device
// and the double ones in the reference.
ROOFLINE_HD inline float m_exp(float x) { return expf(x); }
ROOFLINE_HD inline double m_exp(double x) { return std::exp(x); }
ROOFLINE_HD inline float m_log(float x) { return logf(x); }
ROOFLINE_HD inline double m_log(double x) { return std::log(x); }
ROOFLINE_HD inline float m_tanh(float x) { return tanhf(x); }
ROOFLINE_HD inline double m_tanh(double x) { return std::tanh(x); }
ROOFLINE_HD inline float m_erf(float x) { return erff(x); }
ROOFLINE_HD inline double m_erf(double x) { return std::erf(x); }
ROOFLINE_HD inline float m_sin(float x) { return sinf(x); }
ROOFLINE_HD inline double m_sin(double x) { return std::sin(x); }
ROOFLINE_HD inline float m_cos(float x) { return cosf(x); }
ROOFLINE_HD inline double m_cos(double x) { return std::cos(x); }
ROOFLINE_HD inline float m_sqrt(float x) { return sqrtf(x); }
ROOFLINE_HD inline double m_sqrt(double x) { return std::sqrt(x); }
ROOFLINE_HD inline float m_pow(float x, float e) { return powf(x, e); }
ROOFLINE_HD inline double m_pow(double x, double e) { return std::pow(x, e); }
#ifdef __CUDA_ARCH__
ROOFLINE_HD inline float m_rsqrt(float x) { return rsqrtf(x); }  // 2 ulp, what CUDA libraries use
#else
ROOFLINE_HD inline float m_rsqrt(float x) { return 1.0f / sqrtf(x); }
#endif
ROOFLINE_HD inline double m_rsqrt(double x) { return 1 / std::sqrt(x); }
}  // namespace pmath

template <class T>
ROOFLINE_HD inline T sigmoid_value(T x) {
    return T(1) / (T(1) + pmath::m_exp(-x));
}

// PyTorch's hardsigmoid: relu6(x + 3) / 6 (an add, two compares, a multiply).
template <class T>
ROOFLINE_HD inline T hardsigmoid_value(T x) {
    const T r = x + T(3);
    return (r < T(0) ? T(0) : r > T(6) ? T(6) : r) / T(6);
}

// softplus as PyTorch computes it (threshold 20), and mish's derivative:
// d/dx x tanh(sp(x)) = tanh(sp) + x sigmoid(x) (1 - tanh(sp)^2), sp' being the sigmoid.
template <class T>
ROOFLINE_HD inline T softplus_value(T x) {
    return x > T(20) ? x : pmath::m_log(T(1) + pmath::m_exp(x));
}
template <class T>
ROOFLINE_HD inline T mish_grad_value(T x) {
    const T t = pmath::m_tanh(softplus_value(x));
    return t + x * sigmoid_value(x) * (T(1) - t * t);
}

// gelu, tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
template <class T>
ROOFLINE_HD inline T gelu_tanh_value(T x) {
    const T k = pmath::m_sqrt(T(2.0) / T(M_PI));
    return T(0.5) * x * (T(1) + pmath::m_tanh(k * (x + T(0.044715) * x * x * x)));
}

template <class T>
ROOFLINE_HD inline T gelu_tanh_grad_value(T x) {
    const T k = pmath::m_sqrt(T(2.0) / T(M_PI));
    const T u = k * (x + T(0.044715) * x * x * x);
    const T t = pmath::m_tanh(u);
    return T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * k * (T(1) + T(3) * T(0.044715) * x * x);
}

// gelu, exact form: 0.5 x (1 + erf(x / sqrt(2))).
template <class T>
ROOFLINE_HD inline T gelu_erf_value(T x) {
    return T(0.5) * x * (T(1) + pmath::m_erf(x / pmath::m_sqrt(T(2.0))));
}

// Phi(x) + x phi(x)
template <class T>
ROOFLINE_HD inline T gelu_erf_grad_value(T x) {
    return T(0.5) * (T(1) + pmath::m_erf(x / pmath::m_sqrt(T(2.0)))) + x * pmath::m_exp(T(-0.5) * x * x) / pmath::m_sqrt(T(2) * T(M_PI));
}

// y = op(x) for the unary op kinds (relu .. erf, shift, pow); factor is the scalar operand (scale's
// factor, shift's offset, pow's exponent), tanh_form says gelu's approximate == "tanh". Returns
// false for any other kind.
template <class T>
ROOFLINE_HD inline bool unary_value(OpKind k, T x, T factor, bool tanh_form, T& y) {
    switch (k) {
        case OpKind::relu: y = x > T(0) ? x : T(0); return true;
        case OpKind::gelu: y = tanh_form ? gelu_tanh_value(x) : gelu_erf_value(x); return true;
#define ROOFLINE_UNARY(name, domain, flops, tr, saved, gflops, gtr, value, grad) \
    case OpKind::name:                                                           \
        y = value;                                                               \
        return true;
#include "ops/unary_ops.def"
#undef ROOFLINE_UNARY
        case OpKind::neg: y = -x; return true;
        case OpKind::scale: y = x * factor; return true;
        case OpKind::shift: y = x + factor; return true;
        // x*x and x*x*x as PyTorch's pow kernels compute squares and cubes (exact, and defined for x < 0)
        case OpKind::pow: y = factor == T(2) ? x * x : factor == T(3) ? x * x * x : pmath::m_pow(x, factor); return true;
        default: return false;
    }
}

// dx = d of(x) / dx * dy from the saved tensor s: the forward input x for relu and gelu, and for
// the ops of ops/unary_ops.def what their row says (the input or the output). Returns false for an
// op without a derivative here.
template <class T>
ROOFLINE_HD inline bool unary_grad_math(OpKind of, bool tanh_form, T dy, T s, T& dx) {
    switch (of) {
        case OpKind::relu: dx = s > T(0) ? dy : T(0); return true;
        case OpKind::gelu: dx = dy * (tanh_form ? gelu_tanh_grad_value(s) : gelu_erf_grad_value(s)); return true;
#define ROOFLINE_UNARY(name, domain, flops, tr, saved, gflops, gtr, value, grad) \
    case OpKind::name:                                                           \
        dx = grad;                                                               \
        return true;
#include "ops/unary_ops.def"
#undef ROOFLINE_UNARY
        default: return false;
    }
}

}  // namespace roofline
