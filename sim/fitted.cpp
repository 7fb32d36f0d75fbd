#include "sim/fitted.hpp"

namespace roofline {

namespace {

// Default values: fitted by `roofline validate --fit tests/data/public/neusight` on the five public
// fitting GPUs (docs/ACCURACY.md, "Fitted terms"); the options' comments in sim/gpu_model.hpp and
// sim/analysis.hpp carry the same numbers.
const FittedTerm kTerms[] = {
    {"eager_op_host_s", [](AnalysisOptions& o) -> double& { return o.eager_op_host_s; }, 1e-6, 40e-6, "*",
     "host time of one dispatcher step from Python (an ATen op call, an output allocation or a kernel launch)"},
    {"eager_cudnn_host_s", [](AnalysisOptions& o) -> double& { return o.eager_cudnn_host_s; }, 1e-6, 400e-6, "conv,e2e",
     "host time cuDNN adds to a convolution call (v8 API execution-plan lookup and launch)"},
    {"eager_timing_host_s", [](AnalysisOptions& o) -> double& { return o.eager_timing_host_s; }, 1e-6, 80e-6,
     "linear,bmm,conv,softmax,ln,add,mul,div,pow,gelu,relu,tanh",
     "host time of a timed call after its launch (recording the end event, returning to the loop)"},
    {"eager_overlap_p", [](AnalysisOptions& o) -> double& { return o.eager_overlap_p; }, 1.0, 16.0,
     "linear,bmm,conv,softmax,ln,add,mul,div,pow,gelu,relu,tanh",
     "smoothing of a timed call's max(host + timing, dispatch + device) as a p-norm (call-to-call jitter)"},
    {"streaming_efficiency", [](AnalysisOptions& o) -> double& { return o.gpu.streaming_efficiency; }, 0.5, 1.0,
     "add,mul,div,pow,gelu,relu,tanh,softmax,ln,e2e",
     "fraction of the chip's STREAM-type DRAM bandwidth PyTorch's vectorised elementwise kernel streams at"},
    {"row_kernel_efficiency", [](AnalysisOptions& o) -> double& { return o.gpu.row_kernel_efficiency; }, 0.3, 1.0, "softmax,ln,e2e",
     "share of the streaming bandwidth a row-reduction kernel keeps (shuffles, barriers, second pass over the row)"},
    {"row_latency_s_per_byte", [](AnalysisOptions& o) -> double& { return o.gpu.row_latency_s_per_byte; }, 0.001e-9, 0.5e-9, "softmax,e2e",
     "DRAM latency over the bytes an SM keeps in flight in a softmax-type row kernel (Little's law per SM)"},
    {"simt_gemm_efficiency", [](AnalysisOptions& o) -> double& { return o.gpu.simt_gemm_efficiency; }, 0.3, 1.0, "linear,bmm,e2e",
     "FFMA issue efficiency of a register-blocked SIMT SGEMM main loop beyond its micro-tile's fragment loads"},
    {"simt_fragment_load_cost", [](AnalysisOptions& o) -> double& { return o.gpu.simt_fragment_load_cost; }, 0.1, 2.0, "linear,bmm,e2e",
     "issue cost of a shared-memory fragment load relative to an FFMA in the SGEMM main loop (register blocking)"},
    {"batched_simt_store_bytes_per_clock", [](AnalysisOptions& o) -> double& { return o.gpu.batched_simt_store_bytes_per_clock; }, 0.5, 8.0,
     "bmm,e2e", "bytes per SM clock a batched SIMT SGEMM's epilogue stores its output at (short reductions)"},
    {"energy_per_lane_cycle_16nm", [](AnalysisOptions& o) -> double& { return o.gpu.energy_per_lane_cycle_16nm; }, 10e-12, 200e-12,
     "linear,bmm,e2e", "board energy per FP32 lane-cycle at 16 nm (power-limited clock of low-power boards)"},
};

}  // namespace

std::span<const FittedTerm> fitted_terms() { return kTerms; }

}  // namespace roofline
