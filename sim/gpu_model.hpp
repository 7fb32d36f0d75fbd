#pragma once
// L1 GPU kernel model (DESIGN.md, "Cost model, in levels"): an op is lowered to a kernel with a
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
};

struct GemmShape {
    std::int64_t batch = 1, m = 0, n = 0, k = 0;
    GemmTile tile;
    std::int64_t tiles = 0;    // batch x ceil(M/tm) x ceil(N/tn)
    std::int64_t split_k = 1;  // K split across this many blocks per tile (cuBLAS/CUTLASS split-K)
};

struct Kernel {
    std::string name;
    NodeId node = kNoNode;
    Work work;
    DType dtype = DType::f32;
    LaunchConfig launch;
    std::int64_t blocks = 1;
    std::optional<GemmShape> gemm;  // matrix kernels
    bool tensor_cores = false;      // eligible: a matrix peak for the dtype and aligned dims
    double divergence = 0;          // fraction of issued lanes idle due to branch divergence
};

struct GpuModelOptions {
    // Compute and memory traffic overlap within a kernel (time = max of the two) or not (sum).
    // Default true: GPU kernels issue loads asynchronously and hide them behind math when
    // occupancy allows; XLA's GPU performance model makes the same choice.
    bool overlap = true;
    // Smallest time any kernel takes: the launch overhead of the hardware spec when true (a kernel
    // cannot finish faster than the GPU front end can start it).
    bool launch_floor = true;
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
};

struct LevelTraffic {
    std::string level;
    double bytes = 0;
    double time_s = 0;
};

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
    std::string bound;           // "compute", "memory", "launch"
};

// Lowers one node to its kernel (views and other no-work ops lower to nothing).
std::optional<Kernel> lower_to_kernel(const Graph& g, NodeId n, const Hardware& hw, const GpuModelOptions& opt = {});
KernelCost gpu_kernel_cost(const Kernel& k, const Hardware& hw, const GpuModelOptions& opt = {});

}  // namespace roofline
