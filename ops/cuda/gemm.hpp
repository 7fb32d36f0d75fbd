#pragma once
// Internal GEMM helpers on cuBLASLt, shared by gemm.cpp (matmul, linear) and attention.cu (the
// materialised attention's batched GEMMs). Plain C++ header: no CUDA headers.
#include <cstdint>

#include "ops/cuda/kernels.hpp"

namespace roofline::cuda {

// One strided-batched GEMM on row-major matrices: for every b in [0, batch)
//   C_b[m x n] = alpha * opA(A_b) * opB(B_b)   (+ bias[n] added to every row when bias is set)
// opA(A_b) is A_b[m x k] stored row-major with leading dimension lda, or, when trans_a, A_b
// stored as [k x m] (leading dimension lda) and used transposed; opB likewise ([k x n], or [n x k]
// when trans_b). X_b = X + b * stride_x elements; a stride of 0 broadcasts that operand.
struct Gemm {
    DType ab_dtype = DType::f32;  // A and B: f32, tf32 (stored as f32, tensor cores), f16, bf16
    DType c_dtype = DType::f32;   // C and bias: f32, f16, bf16
    std::int64_t m = 0, n = 0, k = 0;
    bool trans_a = false, trans_b = false;
    const void* a = nullptr;
    std::int64_t lda = 0, stride_a = 0;
    const void* b = nullptr;
    std::int64_t ldb = 0, stride_b = 0;
    void* c = nullptr;
    std::int64_t ldc = 0, stride_c = 0;
    std::int64_t batch = 1;
    float alpha = 1.0f;
    const void* bias = nullptr;
};

// Whether run_gemm has a cuBLASLt configuration for these dtypes.
bool gemm_supported(DType ab_dtype, DType c_dtype);

// Enqueues g on ctx.stream through cublasLtMatmul on ctx.cublaslt with ctx.workspace. Matmul
// descriptors, layouts and the heuristic's algorithm are cached per shape/dtype/transpose/alignment,
// so a repeated launch costs one cublasLtMatmul call. When label is not null, appends one note
// "<label> MxNxK[ batch B] <dtype>: cublasLt algo=.. tile=.. stages=.. splitK=.. wavesCount=.." to
// ctx.notes. Throws CudaError on a failed call, InputError for unsupported dtypes.
void run_gemm(const Gemm& g, LaunchContext& ctx, const char* label);

// A matmul over broadcast batch dimensions, as reference.cpp's matmul computes it: dense row-major
// operands A[a_batch..., m x k] ([.., k x m] when trans_a), B[b_batch..., k x n] ([.., n x k] when
// trans_b) and C[c_batch..., m x n], where c_batch is the numpy broadcast of a_batch and b_batch
// (right-aligned; a size-1 or missing dimension broadcasts). Runs as few strided-batched GEMMs as the
// broadcast pattern allows: one when the batch dimensions collapse to a single stride per operand
// (a broadcast operand gets stride 0; a broadcast B with untransposed A folds the batch into M),
// otherwise one per combination of the outer dimensions. Notes the first GEMM under label.
struct BatchedMatmul {
    DType ab_dtype = DType::f32, c_dtype = DType::f32;
    std::int64_t m = 0, n = 0, k = 0;
    bool trans_a = false, trans_b = false;
    const void* a = nullptr;
    Shape a_batch;
    const void* b = nullptr;
    Shape b_batch;
    void* c = nullptr;
    Shape c_batch;
    float alpha = 1.0f;
};
void run_batched_matmul(const BatchedMatmul& mm, LaunchContext& ctx, const char* label);

// How run_batched_matmul splits a broadcast batch (exposed for host-side tests): `outer` lists
// the output batch dimensions looped on the host (outer-to-inner; empty when one GEMM suffices),
// `inner` is the batch count of each GEMM, and stride_a / stride_b the per-GEMM batch strides in
// matrices (0 = broadcast). fold_m is set when the whole batch folds into the rows of one GEMM.
struct BatchPlan {
    Shape outer;
    std::int64_t inner = 1;
    std::int64_t stride_a = 0, stride_b = 0;  // in matrices
    bool fold_m = false;
};
BatchPlan plan_batches(const Shape& a_batch, const Shape& b_batch, const Shape& c_batch, bool trans_a);
// Offsets (in matrices) of A and B for output batch coordinates `coords` of c_batch (right-aligned
// broadcasting of a_batch and b_batch, as reference.cpp's bcast_offset).
std::int64_t batch_offset(const Shape& operand_batch, const Shape& c_batch, const std::vector<std::int64_t>& coords);

// attention.cu: C[r, :] += bias for every row r < rows of a row-major C[rows x n] with leading
// dimension ldc (dtype f32, f16 or bf16, bias of the same dtype). The fallback when cuBLASLt has no
// bias epilogue for a GEMM, and the whole linear when K = 0.
void add_row_bias(void* c, std::int64_t ldc, const void* bias, DType dtype, std::int64_t rows, std::int64_t n, CUstream_st* stream);

}  // namespace roofline::cuda
