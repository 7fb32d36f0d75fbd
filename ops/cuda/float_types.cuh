#pragma once
// Host-side dispatch over the floating dtypes the CUDA kernels are instantiated for: calls f with a
// value of the element type (float, __half, __nv_bfloat16), so a launcher writes its templated
// launch once; false for any other dtype (the kernel has no instantiation for it).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "ops/dtype.hpp"

namespace roofline::cuda {

template <class F>
bool with_float_type(DType d, F&& f) {
    switch (d) {
        case DType::f32: f(float{}); return true;
        case DType::f16: f(__half{}); return true;
        case DType::bf16: f(__nv_bfloat16{}); return true;
        default: return false;
    }
}

}  // namespace roofline::cuda
