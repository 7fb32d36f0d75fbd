#pragma once
// L1 TPU kernel model: GEMMs on MXU systolic arrays (R x C, weight-, output- or input-stationary),
// with operand padding to the array, folds, and fill/drain cycles; everything else on the vector
// unit; HBM traffic overlapped with compute. Cycle counts follow SCALE-Sim's analytical schedule
// (Samajdar et al., "SCALE-Sim: Systolic CNN Accelerator Simulator", 2018; v3) and are tested
// against its output (tests/data/scalesim_gemm.json).
#include <cstdint>
#include <optional>
#include <string_view>

#include "model/graph.hpp"
#include "sim/gpu_model.hpp"

namespace roofline {

enum class Dataflow { weight_stationary, output_stationary, input_stationary };
std::string_view dataflow_name(Dataflow d);

struct SystolicRun {
    std::int64_t folds = 0;  // array-sized pieces of the stationary operand
    std::int64_t cycles_per_fold = 0;
    std::int64_t cycles = 0;  // one array, SCALE-Sim's "Total Cycles" convention
    double utilization = 0;   // useful MACs / (R * C * cycles)
};

// One GEMM of M x K times K x N on one R x C array.
SystolicRun systolic_gemm(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t rows, std::int64_t cols, Dataflow d);

struct TpuModelOptions {
    Dataflow dataflow = Dataflow::weight_stationary;  // the TPU's MXUs hold weights stationary
    bool overlap = true;                              // HBM transfers overlap with compute (XLA pipelines them through VMEM)
    // XLA fuses elementwise ops into their producer (loop and output fusion): when an elementwise
    // op is the only consumer of its producer's output, that intermediate never goes to HBM: the
    // producer does not write it and the elementwise op does not read it (both stay in VMEM).
    bool fuse_elementwise = true;
};

// The tensor that node n reads from its producer inside an XLA fusion (n elementwise and the only
// consumer of that producer's output), or -1.
TensorId fused_input(const Graph& g, NodeId n);

// Costs one node on a TPU spec: GEMMs (matmul, linear) on the MXUs, the rest on the VPU; with
// fuse_elementwise, fused intermediates cost no HBM traffic.
std::optional<KernelCost> tpu_node_cost(const Graph& g, NodeId n, const Hardware& hw, const TpuModelOptions& opt = {});

}  // namespace roofline
