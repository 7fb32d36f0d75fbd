#pragma once
// What the kernels that walk a tensor along one axis share (scan.cu's topk, ops/defs/cumsum.cu):
// the tensor seen as [outer, n, inner] lines around the axis, and element loads and stores through
// an accumulator type (float for the floating types, 64-bit integers for the integer ones).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "ops/tensor.hpp"

namespace roofline::cuda {

template <class T>
using Acc = std::conditional_t<std::is_integral_v<T>, long long, float>;

template <class T>
__device__ __forceinline__ Acc<T> load(const T* p) {
    if constexpr (std::is_same_v<T, __half>)
        return __half2float(*p);
    else if constexpr (std::is_same_v<T, __nv_bfloat16>)
        return __bfloat162float(*p);
    else
        return static_cast<Acc<T>>(*p);
}

template <class T>
__device__ __forceinline__ T store(Acc<T> v) {
    if constexpr (std::is_same_v<T, __half>)
        return __float2half_rn(v);
    else if constexpr (std::is_same_v<T, __nv_bfloat16>)
        return __float2bfloat16_rn(v);
    else
        return static_cast<T>(v);
}

struct Lines {
    std::int64_t outer = 1, n = 1, inner = 1;
};

inline Lines lines_of(const TensorDesc& d, std::int64_t axis) {
    Lines s;
    for (std::int64_t a = 0; a < d.rank(); ++a) {
        const std::int64_t e = d.shape[static_cast<std::size_t>(a)];
        if (a < axis) s.outer *= e;
        if (a == axis) s.n = e;
        if (a > axis) s.inner *= e;
    }
    return s;
}

}  // namespace roofline::cuda
