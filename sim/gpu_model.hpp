#pragma once
// L1 GPU kernel model (docs/ARCHITECTURE.md, "Cost model, in levels"): an op is lowered to a kernel with a
// launch shape chosen the way production libraries choose it, and the kernel is costed from
// occupancy, waves and the tail effect, GEMM tile and wave quantization, tensor-core eligibility,
// SIMT efficiency and per-level traffic. A pure function (Kernel, Hardware, Options) -> Cost.
// Every tuning constant is a named option with its default and reason below.
#include <optional>
#include <string>
#include <vector>

#include "model/graph.hpp"
#include "sim/occupancy.hpp"
#include "sim/roofline.hpp"

namespace roofline {

struct GemmTile {
    std::int64_t m = 128, n = 128;
    // SIMT (CUDA-core) tiles: threads per block and whether K is sliced across the block's warps
    // (cuBLAS's "sliced1x4" kernels: four warp groups each run a quarter of K and reduce in shared
    // memory). 0 threads: a tensor-core tile (256 threads).
    std::int64_t threads = 0;
    bool sliced = false;
};

struct GemmShape {
    std::int64_t batch = 1, m = 0, n = 0, k = 0;
    GemmTile tile;
    std::int64_t tiles = 0;    // batch x ceil(M/tm) x ceil(N/tn)
    std::int64_t split_k = 1;  // K split across this many blocks per tile (cuBLAS/CUTLASS split-K)
    // B's stored bytes per element relative to the compute dtype's: below 1 for weights kept
    // quantized and dequantized in registers (int4 under bf16 math: 0.25).
    double b_scale = 1.0;
    // An implicit-GEMM convolution pass, or a plain GEMM.
    enum class Conv { none, forward, data_grad, weight_grad } conv = Conv::none;
    // A GEMM cuDNN runs inside a convolution algorithm (non-fused Winograd's batched GEMM), not a
    // cuBLAS call of the framework's: cuBLAS's batched-kernel choice does not apply.
    bool library_internal = false;
};

struct Kernel {
    std::string name;
    NodeId node = kNoNode;
    Work work;
    DType dtype = DType::f32;
    LaunchConfig launch;
    std::int64_t blocks = 1;
    std::optional<GemmShape> gemm;  // matrix kernels
    bool tensor_cores = false;      // eligible: a matrix peak for the dtype
    bool aligned = true;            // every operand's leading dimension a multiple of 16 bytes
    bool output_aligned = true;     // the output's leading dimension a multiple of 16 bytes
    // Composite ops lowered to several kernels (materialised attention: QK^T GEMM, masked softmax,
    // PV GEMM); the node's cost is the sum of the parts' costs, run one after another.
    std::vector<Kernel> parts;
    double divergence = 0;  // fraction of issued lanes idle due to branch divergence
    // Thread-instruction issue slots the kernel needs where its instructions, not its FLOPs or
    // bytes, bound it (PyTorch's direct depthwise-convolution kernels: index arithmetic and
    // bounds checks around each multiply-add). 0: not issue-bound. Costed at the chip's issue
    // rate (kWarpSchedulersPerSm warp instructions per SM per clock) over the blocks' share of
    // the SMs.
    double issue_slots = 0;
    // The launch as a profiler lists it, where the generic form (describe_launch) would misname it:
    // cuDNN's fused Winograd kernel, costed as a GEMM but launched on its own grid.
    std::string launch_text;
    bool row = false;   // a row-wise kernel (a reduction across each row)
    bool norm = false;  // a layernorm/rmsnorm row kernel (forward, or backward's dx kernel)
    // A softmax-type row kernel as PyTorch eager runs it (softmax, its gradient, log-softmax of
    // cross-entropy; set in the eager runtime only, where the evidence comes from): its reads
    // come in passes separated by row reductions, so it streams at what the loads an SM keeps in
    // flight over the DRAM latency allow (GpuModelOptions::row_latency_s_per_byte).
    bool latency_bound_row = false;
    // The parts compute the op by a transformed algorithm with less arithmetic than the op's work
    // counts (Winograd): the saving is real, but the op's roofline bound (its work at the peaks)
    // stays the ceiling the report's efficiency is measured against, so the time is capped at it.
    bool transformed = false;
};

struct GpuModelOptions {
    // Compute and memory traffic overlap within a kernel (time = max of the two) or not (sum).
    // Default true: GPU kernels issue loads asynchronously and hide them behind math when
    // occupancy allows; XLA's GPU performance model makes the same choice.
    bool overlap = true;
    // Every kernel pays a fixed device latency (min_kernel_s) on top of its work when true: block
    // launch, the first loads' DRAM latency and the final write-back are not hidden behind the
    // kernel's own streaming, so even a one-element kernel takes about a microsecond. Default
    // measured with CUPTI on an H100 SXM on 2026-11-23: the shortest kernels of a GPT-2 training
    // step (a 1-element fill, casts of 768-element vectors) ran 1.15-1.31 us; casts of 3.5 MB
    // (1.3 us of traffic at the calibrated bandwidth) ran 2.0-2.9 us
    // (tests/data/measured/h100-sxm-2026-11-23/gpt2-small-train.json).
    bool launch_floor = true;
    double min_kernel_s = 1.2e-6;
    // The schedule issues kernels from the host at the spec's launch_overhead_s each (see
    // ScheduleOptions): runs of tiny kernels are launch-bound in the step time even though each
    // kernel's device time is short.
    bool host_issue = true;
    // Tensor-core GEMMs work on K in multiples of this many elements; an unaligned K is padded
    // (NVIDIA Matrix Multiplication Background guide: multiples of 8 for 16-bit types).
    std::int64_t tensor_core_alignment = 8;
    // Force a GEMM tile (otherwise the tile minimising the modelled time is chosen, as cuBLAS
    // heuristics aim to).
    std::optional<GemmTile> gemm_tile;
    // Force a split-K factor; otherwise 1, 2, 4, 8 or 16 is chosen with the tile (1 when the tile
    // is forced). Split-K fills the SMs when a GEMM has few tiles and a long K, at the price of
    // writing and reducing fp32 partial results (2 x split x M x N x 4 bytes more traffic, in a
    // pass after the GEMM that does not overlap with it).
    std::optional<std::int64_t> split_k;
    // Tensor-core GEMMs whose leading dimensions are not multiples of 16 bytes (a vocabulary of
    // 50257) cannot use the 16-byte-aligned (TMA, wgmma) kernels; cuBLASLt falls back to narrow
    // loads. Their rate is a fraction of the matrix peak: with an unaligned output, and with only
    // unaligned operands. Defaults measured with CUPTI on an H100 SXM (driver 580.159.04, CUDA 13.0)
    // on 2026-11-23, as fractions of the measured bf16 peak (762 TFLOP/s, `roofline calibrate`):
    // GPT-2's lm_head forward (output [8192, 50257]) ran at 95 TFLOP/s = 0.125; its two gradient
    // GEMMs (K = 50257 or M = 50257, aligned output) at 140-147 TFLOP/s = 0.185
    // (tests/data/measured/h100-sxm-2026-11-23/gpt2-small-train.json).
    double unaligned_output_efficiency = 0.125;
    double unaligned_operand_efficiency = 0.185;
    // Matrix kernels keep the operand tiles of the blocks of one wave in L2 when the working set
    // exceeds it: blocks are rasterised in swizzled rectangles (CUTLASS threadblock swizzle,
    // cuBLAS), so device memory sees each wave's A row-panels and B column-panels once. Off: the
    // first-order capacity estimate (re-reads in proportion to the share of A + B that misses L2).
    bool wave_footprint_reuse = true;
    // Stream-K scheduling of GEMMs (Osama et al. 2023): the K-iterations of all tiles are divided
    // evenly over the SMs, so there is no wave quantization or tail. cuBLAS uses it on Hopper:
    // measured on an H100 SXM (2026-11-23, the kernel suite's M=2304, K=4096 sweep), time grows
    // smoothly with N across the 132-tile wave boundary (42 -> 64 us from N=1536 to 2304) where
    // wave-quantized tiles would step by ~40%. auto: on for compute capability 9.0 and later, off
    // before (A100s quantize: NVIDIA's Matrix Multiplication Background guide).
    enum class StreamK { auto_, on, off };
    StreamK stream_k = StreamK::auto_;
    // Thread-block clusters on sm_90: the blocks of a cluster multicast the operand tile they
    // share (TMA multicast), so L2 serves it once per cluster. cuBLAS's Hopper GEMMs run 2-block
    // clusters (the "1x2"/"2x1" in their kernel names, seen with CUPTI on an H100, 2026-11-23).
    // The narrower operand panel's L2 traffic is divided by this; 1 before sm_90.
    std::int64_t cluster_size = 2;
    // SIMT (CUDA-core) GEMMs: the fraction of the FP32 issue rate the main loop of a
    // register-blocked SGEMM sustains (FFMA share of issued instructions after loads, address
    // arithmetic and shared-memory traffic). Fitted (sim/fitted.hpp).
    double simt_gemm_efficiency = 0.994;
    // SIMT GEMMs: the issue cost of one shared-memory fragment load relative to one FFMA in the
    // register-blocked main loop. A thread computing an mr x nr micro-tile issues mr*nr FFMAs and
    // (mr + nr) fragment loads per step of K, so its FFMA share is mr*nr / (mr*nr + c (mr + nr))
    // (Volkov & Demmel 2008, "Benchmarking GPUs to tune dense linear algebra": register blocking
    // is what lets SGEMM approach peak). 1: one issue slot per load, as LDS and FFMA share the
    // dispatch port.
    double simt_fragment_load_cost = 0.598;
    // SIMT GEMMs on chips whose SM sub-partitions hold 32 FP32 lanes and issue one warp
    // instruction per cycle without dual issue (compute capability 7.0 or later with 128 FP32
    // lanes per SM: GA10x, AD10x, GH100): an FFMA occupies the issue slot for one cycle instead of
    // two (16-lane partitions: GV100, GA100, TU10x, where loads and address arithmetic issue in the
    // FFMA's second cycle), so the rest of the main loop is no longer hidden and the kernels
    // written for 16-lane partitions (cuBLAS and cuDNN run sm80_xmma SIMT kernels on sm_90) keep
    // this share of the doubled lanes. Fitted on the H100 fit set of 2026-11-26 (fp32 nn.Linear
    // SGEMMs, tests/data/public/h100-conv-2026-11-26/linear_fit.csv, cuBLAS 13 / PyTorch 2.11):
    // the value whose median error over the rows of 0.2 ms and more (the device, not the host,
    // sets their time) with 16-byte aligned operands and output (K and N multiples of 4: 5 rows,
    // 44 TFLOP/s median) is nearest zero, in steps of 0.01. No public GPU has such partitions, so
    // leave-one-GPU-out neither fits nor tests it. A fitted constant of the kind issue #15 calls a
    // last resort: the split between issue slots, register-bank conflicts and the power-limited
    // FP32 clock is not measured.
    double simt_wide_issue_efficiency = 0.84;
    // ... with an operand or the output not 16-byte aligned, cuBLAS runs its align1 kernels, whose
    // scalar loads and address arithmetic take more of those issue slots: this share of the
    // aligned rate (30 rows of 0.2 ms and more, 36 TFLOP/s median; the same rule).
    double simt_wide_unaligned_efficiency = 0.84;
    // fp32 convolutions on sm_90 with cuDNN 9 (H100, cuDNN 9.19, 2026-11-26, the fit set of
    // tests/data/public/h100-conv-2026-11-26): the forward pass runs NCHW implicit-GEMM kernels
    // (sm80_xmma_fprop_implicit_gemm_f32f32_..._nchwkcrs_nchw for 86 of the 97 3 x 3 stride-1
    // rows, FFT for 7, no Winograd; up to the A100, cuDNN 8 ran Winograd for most of them: the
    // public rows' kernel names), so Winograd is not a forward candidate there unless this is set.
    bool sm90_fp32_winograd_forward = false;
    // ... and those implicit-GEMM kernels keep this share of an aligned SGEMM's rate at the same
    // shape (forward: the NCHW gather of each K step's operand tile). Fitted on the same fit set
    // (forward rows above 0.1 ms, bias nearest zero; 3 x 3 stride-1 forward -10.5%, 1 x 1 forward
    // -7.1%): a per-pass constant, the last resort issue #15 allows, labelled so in
    // docs/ACCURACY.md.
    double sm90_simt_conv_forward_efficiency = 0.64;
    // The backward passes, split by the per-kernel times of the H200 fit set
    // (tests/data/public/h200-conv-2026-11-27: 720 synthetic convolutions, each kernel of a
    // backward call timed on its own; cuDNN 9.19, 2026-11-27). The data gradient runs
    // dgrad_engine (305 rows) or sm80_xmma_dgrad_implicit_gemm (260): its achieved rate grows
    // with the reduction depth K = C_out kh kw whatever the output size (2.5x below the SGEMM
    // model at K < 100, at it near K = 3000), the signature of a fixed cost per output tile
    // (loading the filter-index tables, the NCHW epilogue): modelled as this many main-loop
    // K-iterations added to every tile's loop, with the share of the lanes below. Both fitted
    // together on the data-gradient kernels of 20 us and more (429 rows, a grid in steps of 32
    // and 0.05: 20.9% median, -3.5% bias; without the overhead the best share gives 27-31%).
    double sm90_conv_data_grad_tile_overhead_k = 64;
    double sm90_simt_conv_data_grad_efficiency = 0.65;
    // The weight gradient runs wgrad_alg0_engine (362 rows), the xmma wgrad (105), Winograd
    // weight gradients (98) and others, chosen by cuDNN's heuristics per shape at rates 5x
    // apart for similar shapes: no per-tile overhead or wider split-K improved the fit (33-37%
    // median whatever the setting), so one share: the value whose bias over the weight-gradient
    // kernels of 20 us and more (479 rows) is nearest zero (36.5%, -0.3%). A fitted constant,
    // labelled so in docs/ACCURACY.md; the engine choice itself is not modelled.
    double sm90_simt_conv_weight_grad_efficiency = 0.47;
    // Eager grouped convolutions (2+ groups, not depthwise) as cuDNN's group-by-group engines
    // run them: one GEMM kernel part per group, one after another (grouped_conv_per_group in
    // sim/gpu_model.cpp), except for the shapes where cuDNN picks its single grouped direct kernel
    // (cudnn_grouped_direct there). False: one batched kernel over all groups for every shape.
    bool cudnn_grouped_per_group = true;
    // fp32 strided-batched SGEMMs on the architectures where cuBLAS launches one kernel for every
    // shape (sm_6x: 128x64, sm_80: 128x128; cublas_batched_simt_tile in sim/gpu_model.cpp) use
    // that tile; false: the modelled best of the batched tiles everywhere.
    bool cublas_batched_tile = true;
    // fp32 implicit-GEMM convolution forward passes before sm_90 choose among cuDNN 8.9's three
    // kernels (kCudnnForwardTiles in sim/gpu_model.cpp), unsplit; false: every SIMT tile, split-K.
    bool cudnn_forward_tiles = true;
    // PyTorch eager's fp32 depthwise convolutions (conv_depthwise2d_forward_kernel, ..._backward_
    // kernel, ..._grad_weight_kernel in aten/src/ATen/native/cuda/DepthwiseConv2d.cu) are bound by
    // the instructions they issue, not by DRAM: on the H200 fit set (82 depthwise rows,
    // tests/data/public/h200-conv-2026-11-27) the forward kernel runs at 1-2 TFLOP/s and its time is
    // linear in the outputs. Effective issue slots (thread instructions, stalls included) per
    // element, fitted by relative least squares on the kernels of 20 us and more:
    //   forward (per output):       195 + 14.7 per filter tap  (41 rows, 1.8% median, +0.9% bias)
    //   data gradient (per input):  559 + 0.8 per tap          (52 rows, 3.4%, +0.1%)
    //   weight gradient (per output and tap): 48, one 512-thread block per channel and tap, four
    //   blocks an SM, in the model's wave accounting (57 rows, 12.8%, +0.2%; 29% if the blocks'
    //   share of the SMs is left out). The kh x kw re-reads of its inputs hit L2: with this term
    //   the kernel is no longer costed as DRAM-bound.
    // The fit set has 3 x 3 and 5 x 5 filters only, so the split between the fixed and per-tap
    // terms is weakly determined; the time scales with SMs x clock to other chips.
    double depthwise_forward_slots = 195, depthwise_forward_slots_per_tap = 14.7;
    double depthwise_data_grad_slots = 559, depthwise_data_grad_slots_per_tap = 0.8;
    double depthwise_weight_grad_slots_per_tap = 48;
    // Batched SIMT SGEMM (cublasSgemmStridedBatched, torch.bmm in fp32) writes its output at no
    // more than this many bytes per SM clock: with a short reduction the kernel is bound by its
    // epilogue's stores. Introduced on 2026-11-25 from the public per-op timings read with the
    // reduced and output dimensions swapped (tests/data/public/neusight/README.md): the "constant
    // output rate for K < 64" it was fitted to (1.43 B/clock) was mostly the padding of cuBLAS's
    // one 128x128 or 128x64 batched tile over narrow outputs, which cublas_batched_tile now
    // models. Read right, bmm with a reduction of under 16 writes its output at 0.5-0.8 of the
    // STREAM rate (A100 1022 GB/s, V100 448, P100 379, T4 136, P4 114, calls over 200 us); the
    // refit keeps a weaker cap (3.34 B/clock), which still lowers the leave-one-out bmm error on
    // P100, T4 and V100 by 3-4 points while it leaves the A100's shortest reductions 80-280% slow
    // (docs/ACCURACY.md, "The public GEMM rows read right"). Fitted (sim/fitted.hpp).
    double batched_simt_store_bytes_per_clock = 3.34;
    // Tensor-core GEMMs reach this fraction of the matrix peak on chips with no published
    // measurement of their own (sim/achieved.cpp: the median of the chips that have one).
    double tensor_core_fraction = 0.811;
    // Streaming kernels (elementwise, row-wise, copies) reach this fraction of the chip's
    // STREAM-type bandwidth (sim/achieved.cpp: a published copy/triad measurement of the chip, or
    // its memory technology's). Fitted (sim/fitted.hpp): how PyTorch's vectorised elementwise
    // kernel compares with a STREAM kernel on the same chip.
    double streaming_efficiency = 0.997;
    // Row-wise kernels (softmax, layernorm, their gradients) reach this fraction of the streaming
    // bandwidth: a reduction across the row (shuffles, a block barrier) and a second pass over
    // the row separate the loads. Fitted (sim/fitted.hpp).
    double row_kernel_efficiency = 0.619;
    // The kernel is timed in a loop on the same buffers, as per-op microbenchmarks run it (the
    // public per-op timings, tests/tools/torch_ops_bench.py): a streaming kernel whose working set
    // (its compulsory bytes) fits in L2 finds it there on every call but the first, reads its
    // inputs from L2 and leaves its writes there (write-back), so it pays no DRAM traffic. A
    // working set larger than L2 swept in the same order every call misses throughout (LRU on a
    // cyclic sweep keeps nothing). The public per-op timings show both edges at each chip's L2
    // size (docs/ACCURACY.md, "Warm L2 in per-op timings"). Off for graphs, whose ops stream
    // different tensors; set by `validate` for one-op cases. GEMMs keep their own L2 model.
    bool warm_l2 = false;
    // Softmax-type row kernels (Kernel::latency_bound_row): each SM streams at most
    // 1 / row_latency_s_per_byte bytes per second (the bytes it keeps in flight between the row
    // reductions over the DRAM latency, Little's law), combined with the streaming rate as
    // 1 / rate = 1 / streaming + row_latency_s_per_byte / SMs (row_kernel_efficiency is taken at a
    // reference chip of 9 GB/s of DRAM per SM, so the two fit independently). The public per-op timings show it: at
    // rows of >= 1024 the softmax reaches 0.77-0.78 of the STREAM rate on T4 and P4 (6-7 GB/s of
    // DRAM per SM) but 0.64-0.65 on V100 and A100 (10-13 GB/s per SM), while layernorm (one pass,
    // the row in registers) stays near 0.6 on all four. Fitted (sim/fitted.hpp).
    double row_latency_s_per_byte = 0.499e-9;  // s/B: DRAM latency over the bytes an SM keeps in flight
    // Power-limited clock: a chip whose board power cannot feed every FP32 lane at the boost clock
    // runs at power / (lanes x energy per lane-cycle), the energy scaling with the process node
    // (energy_per_lane_cycle_16nm x node / 16 nm). Fitted (sim/fitted.hpp); used only when the spec
    // has the board power, its process node and no measured sustained clock.
    double energy_per_lane_cycle_16nm = 40.9e-12;
    // Lower ops to the kernels PyTorch eager launches for them (set by analyze for the eager
    // runtime): layernorm and softmax backward as two kernels each, embedding backward as a
    // zero-fill of the table plus the scatter.
    bool eager = false;
    // Fixed device latencies of the project's own kernels beyond min_kernel_s (native runtime
    // only, where they were measured). Fitted, and labelled so: the median of measured minus
    // modelled time over the small-kernel fit set (tests/data/measured/h200-2026-11-26b/
    // small-train.json, an H200, 2026-11-26); the mechanisms they stand for are named, not modelled.
    //  - cuBLASLt tensor-core GEMMs (sm_90 nvjet kernels, persistent and warp-specialised): the
    //    prologue (the first operand stages loaded before the first MMA) and the epilogue (the
    //    accumulators through shared memory to global) run while no other tile of the kernel
    //    overlaps them. 75 GEMMs of the fit set from 2.5 us (64^3 batched) to 25 us: +1.55 us
    //    median (0.9-2.6); the 64^3 GEMMs ran 2.5-2.9 us, where min_kernel_s is 1.2.
    double native_gemm_latency_s = 1.55e-6;
    //  - the norm row kernels (layernorm/rmsnorm forward and their dx kernel, ops/cuda/rowwise.cu
    //    row_reg_kernel): two dependent row reductions, then the weight and bias loads and three
    //    stores (y, mean, rstd). 9 layernorms of the fit set, rows 128-2048 x 256-2048: +3.6 us
    //    median (the kernel's time is at least this, beyond min_kernel_s: hidden once it streams
    //    longer, as other blocks' loads cover one block's chain).
    double native_norm_latency_s = 3.6e-6;
    //  - the other row kernels (softmax and its gradient, cross-entropy and its gradient): the
    //    same dependent chain without the parameters: 20 such kernels of the fit set whose work
    //    takes under 2 us ran min_kernel_s + 2.35 us (median).
    double native_row_latency_s = 2.35e-6;
};

struct LevelTraffic {
    std::string level;
    double bytes = 0;
    double time_s = 0;
};

// What binds a kernel's modelled time: its compute, its traffic at some memory level, or (for a
// kernel shorter than its launch floor) the launch; none for a node without a kernel of its own
// (a member of a fused group: the group's kernel carries the bound). reports/ names it.
enum class KernelBound { none, compute, memory, launch };

struct KernelCost {
    std::vector<LevelTraffic> traffic;  // bytes moved at each memory level, outermost first
    double time_s = 0;
    double compute_s = 0;  // with wave quantization, tail and SIMT efficiency
    double memory_s = 0;   // slowest memory level
    double floor_s = 0;    // launch floor when it binds
    Occupancy occupancy;
    double waves = 0;
    double tail_efficiency = 1;  // useful block slots / occupied block slots
    double tile_efficiency = 1;  // useful GEMM work / padded tile work
    double lower_bound_s = 0;    // the L0 roofline time of the same work
    KernelBound bound = KernelBound::none;
};

// A depthwise convolution node (forward or either gradient): groups > 1, one input and one output
// channel per group. PyTorch eager runs these with its own kernels, not cuDNN's (depthwise_conv).
bool is_depthwise_conv(const Graph& g, NodeId n);
// Lowers one node to its kernel (views and other no-work ops lower to nothing).
std::optional<Kernel> lower_to_kernel(const Graph& g, NodeId n, const Hardware& hw, const GpuModelOptions& opt = {});
// cuDNN's fused Winograd F(2x2, 3x3) forward kernel for node n (a 3x3, stride-1, ungrouped
// convolution; nullopt otherwise): the filter-transform kernel, then the fused kernel, whose
// `blocks` is the grid cuDNN launches (sim/gpu_model.cpp).
std::optional<Kernel> fused_winograd_conv(const Graph& g, NodeId n, const Hardware& hw, DType d);
// Does this chip issue its FP32 FFMAs one warp instruction per cycle over 32-lane sub-partitions
// (GpuModelOptions::simt_wide_issue_efficiency)?
bool wide_issue_fp32(const Hardware& hw);

KernelCost gpu_kernel_cost(const Kernel& k, const Hardware& hw, const GpuModelOptions& opt = {});

// The launch the model assumes, in the terms a profiler's kernel list gives, so that a prediction
// can be checked against the kernel that ran: a GEMM as "simt 128x64 grid 4x5x2" or "tc ..." (the
// tile as cuBLAS names it, output columns x output rows; grid x over the output's columns, y over
// its rows, z the batch times the split-K factor), any other kernel as "blocks N x T threads";
// a composite's parts joined by "; ".
std::string describe_launch(const Kernel& k);

}  // namespace roofline
