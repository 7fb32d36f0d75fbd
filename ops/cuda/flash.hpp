#pragma once
// Fused, flash-style attention kernels (attention.cu), FlashAttention-2 structure (Dao 2023): the
// forward pass that launch_attention uses when ctx.flash_attention is set, plus a forward variant
// that saves the row logsumexp and the fused backward pass, for the measurement suite's comparison
// of fused and materialised attention (forward and backward). Plain C++ header.
//
// Tensors: q[..., Sq, D], k[..., Sk, D], v[..., Sk, Dv], o/dout[..., Sq, Dv], all f32, f16 or bf16
// (one dtype), dense row-major. S = scale * q k^T, with the causal mask of reference.cpp (key
// column j > query row i is masked, top-left aligned when Sq != Sk), P = softmax(S), o = P v.
// Head dims D and Dv from 1 to 128 are supported (shared-memory tiles pad them to a multiple of 16);
// f16/bf16 multiply on tensor cores (WMMA, f32 accumulation), f32 on FMA units.
#include "ops/cuda/kernels.hpp"

namespace roofline::cuda {

// Whether the fused kernels take these tensors: same floating dtype (f32, f16, bf16), ranks >= 2
// and equal, 1 <= D, Dv <= 128, matching sequence lengths and at most 8 batch dimensions.
bool flash_attention_supported(const DeviceTensor& q, const DeviceTensor& k, const DeviceTensor& v);

// o = attention(q, k, v) in one kernel: each block owns a tile of query rows and streams the key and
// value tiles through shared memory with an online softmax (running max and sum in f32); S and P
// never reach global memory, and with causal set the key tiles wholly above the diagonal are
// skipped. Batch dims broadcast as matmul's do (o has the broadcast batch). When lse is not null it
// receives the natural-log logsumexp of every (scaled, masked) score row, f32 [o's batch..., Sq]
// contiguous (-inf for Sk = 0). Returns false, enqueueing nothing, when !flash_attention_supported.
bool flash_attention_forward(const DeviceTensor& q, const DeviceTensor& k, const DeviceTensor& v, const DeviceTensor& o, float* lse,
                             double scale, bool causal, LaunchContext& ctx);

// Gradients of o = attention(q, k, v) given dout, as a fused kernel pair that recomputes P tile by
// tile from q, k and the forward's saved logsumexp (never materialising S, P or dS in global memory):
//   kernel 1, one block per query tile: Delta = rowsum(dout * o) (kept in ctx.scratch), then
//             dq = scale * dS k over the key tiles, where dS = P * (dout v^T - Delta);
//   kernel 2, one block per key/value tile: dv = P^T dout and dk = scale * dS^T q over the query tiles.
// No atomics: dq, dk and dv are each written once, deterministically. lse is
// flash_attention_forward's output for the same q, k, v, scale and causal; when it is null the
// forward runs first (into ctx.scratch) to produce it. q, k, v, o, dout, dq, dk, dv must share a
// batch shape (no broadcasting); dq is shaped like q, dk like k, dv like v. Throws InputError for
// tensors the kernels do not take, CudaError for a failed launch.
void flash_attention_backward(const DeviceTensor& q, const DeviceTensor& k, const DeviceTensor& v, const DeviceTensor& o,
                              const DeviceTensor& dout, const float* lse, const DeviceTensor& dq, const DeviceTensor& dk,
                              const DeviceTensor& dv, double scale, bool causal, LaunchContext& ctx);

}  // namespace roofline::cuda
