#pragma once
// What the cost model, the memory planner, fusion, recompute and the executors need to know of an
// op beyond its rule (shape, work, gradient): its traits. sim/ and measure/ ask these, never the
// op's kind, so an op's behaviour everywhere is decided in one place: its entry in the registry
// (ops/registry.cpp, one row per kind with its name, rule and traits).
#include <array>

namespace roofline {

// How a GPU runs the op's work (sim/gpu_model.cpp lowers each form to its kernels).
enum class KernelForm {
    streaming,         // one pass over the op's bytes (elementwise and everything not below)
    gemm,              // matmul: a GEMM batched over the leading dims
    linear_gemm,       // nn.Linear: all rows x out as one GEMM
    conv_forward,      // convolution as an implicit GEMM per group, M = N x output pixels (Winograd when faster)
    conv_grad_input,   // its data gradient: the same implicit GEMM shape
    conv_grad_weight,  // its weight gradient: M = C_out per group, N = C_in per group x kH x kW
    attention,         // materialised attention: the QK^T GEMM, the softmax, the x V GEMM
    row,               // a reduction along each row (normalisations, softmax, losses, row reductions)
};
bool is_gemm(KernelForm f);  // gemm, linear_gemm or a convolution form: runs a (cuBLAS/cuDNN) GEMM
bool is_conv(KernelForm f);

// Row kernels: how they are launched (sim/gpu_model.cpp row_kernel).
enum class RowLaunch {
    by_length,      // a warp per row up to 1024 elements, a block per row beyond
    block_per_row,  // PyTorch's layer-norm kernels: a 128-thread block per row whatever its length
    softmax,        // PyTorch's softmax kernels: passes over the row separated by row reductions
};

// Storage: views alias their input. `always`: reshape; `broadcast`: expand (a stride-0 view the
// executors materialise); `unless_copy`: permute, transpose and split, unless their `copy`
// attribute says a contiguous copy is made (kernels that need the new layout copy them anyway).
enum class ViewKind { never, always, broadcast, unless_copy };

// PyTorch eager runs some ops as several kernels (sim/gpu_model.cpp eager_parts).
enum class EagerSplit {
    none,
    layernorm_grad,  // dx (a block per row), then dweight/dbias (a column reduction)
    softmax_grad,    // grad * output (elementwise), then the row kernel
    addmm_bias,      // the bias copied into the output, then the GEMM with beta = 1
    embedding_grad,  // zero-fill, sort of the indices (> 3072), scatter of the rows
};

// The project's own executor runs some ops as several kernels (sim/gpu_model.cpp native_parts,
// ops/cuda/rowwise.cu).
enum class NativeSplit {
    none,
    norm_grad,  // dx (saving mean and rstd), column partials of dweight/dbias, their sum
    loss_sum,   // per-row losses, then one block sums them
};

// Roles in the attention pattern fusion and recompute look for: Q K^T (gemm) -> scale ->
// causal_mask -> softmax -> dropout -> x V (gemm), or the composite attention op.
enum class FusionRole { none, gemm, attention, softmax, scale, causal_mask, dropout };

struct OpTraits {
    KernelForm kernel = KernelForm::streaming;
    RowLaunch row_launch = RowLaunch::by_length;
    bool row_axes_attr = false;  // the row is named by an "axes" list (reductions), not by "axis"
    ViewKind view = ViewKind::never;
    // Eager PyTorch: dispatcher calls the op makes beyond its own (relu -> clamp_min: 1; softmax ->
    // _softmax: 1; cross_entropy -> log_softmax, _log_softmax, nll_loss: 2; layer_norm ->
    // native_layer_norm and its mean and rstd: 3; nn.Linear -> t, transpose, as_strided, expand,
    // as_strided: 5; nn.Conv2d -> convolution, _convolution, cudnn_convolution: 3).
    int eager_extra_calls = 0;
    EagerSplit eager_split = EagerSplit::none;
    NativeSplit native_split = NativeSplit::none;
    // A normalisation row kernel (layernorm/rmsnorm and their dx): parameter loads and three
    // stores after the row's reductions (GpuModelOptions::native_norm_latency_s).
    bool norm = false;
    // Optimizer updates write in place: output i overwrites input in_place[i] (-1: none); input 1
    // is the gradient they consume.
    bool optimizer_update = false;
    std::array<int, 3> in_place{-1, -1, -1};
    bool converts_dtype = false;         // cast: the optimizer's fp32 master weights cast back to 16 bits
    bool keep_when_recomputing = false;  // a GEMM-class op recompute policies never recompute
    FusionRole fusion = FusionRole::none;
};

}  // namespace roofline
