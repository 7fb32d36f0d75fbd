#pragma once
// Runs the L0 roofline over every node of a graph and aggregates the result.
#include <optional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model/graph.hpp"
#include "sim/gpu_model.hpp"
#include "sim/memory.hpp"
#include "sim/roofline.hpp"
#include "sim/schedule.hpp"
#include "sim/tpu_model.hpp"

namespace roofline {

struct FusionPlan;  // sim/fusion.hpp

// One op's results. The roofline, kernel and cost are shared, read-only, by every op of the same
// signature (kind, attributes, tensor descriptors; a fused group's anchor and work) in the
// analysis, and through a KernelCostCache by later analyses: a transformer's layers repeat, so a
// step of thousands of ops holds a few dozen distinct records (issue #20: 1M ops in well under
// 1 GiB). A shared Kernel's `name` and `node` are those of the op that first lowered it: the op
// is `node` here.
struct OpAnalysis {
    NodeId node = kNoNode;
    int fusion_group = -1;         // with a fusion plan: the group it runs in (its anchor carries the group's work and kernel)
    bool flash_attention = false;  // in a flash-attention kernel's group (FusionKind::flash_attention)
    std::shared_ptr<const OpRoofline> roofline;  // never null once analysed
    std::shared_ptr<const Kernel> kernel;        // GPU kernel model (L1); null for views and on TPUs
    std::shared_ptr<const KernelCost> modelled;  // null where there is no kernel model
};

struct BoundShare {
    double time_s = 0;
    std::int64_t ops = 0;
};

struct PhaseTotals {
    Work work;
    double time_s = 0;
    std::int64_t ops = 0;
};

struct Analysis {
    std::vector<OpAnalysis> ops;  // in execution (topological) order
    Work total;
    double time_s = 0;           // sum of op lower bounds: ops run one after another on one stream
    double modelled_time_s = 0;  // sum of L1 kernel-model times (GPU specs), one stream
    bool has_kernel_model = false;
    std::map<Bound, BoundShare> by_bound;
    std::map<std::string, BoundShare> by_family;  // OpFamily name
    PhaseTotals by_phase[3];                      // indexed by Phase: forward, backward, optimizer
    std::int64_t parameter_count = 0;
    std::int64_t parameter_bytes = 0;
    MemoryTimeline memory;  // liveness over the execution order
    Schedule schedule;      // of the modelled kernel times (lower bounds where there is no kernel model)
};

// Node costs by signature (kind, attributes, tensor descriptors; a fused group's by its anchor and
// work), reusable across analyses with the same hardware and options: the planner analyses dozens
// of variants of one graph. Not thread-safe: one per thread.
struct KernelCostCache;
std::shared_ptr<KernelCostCache> make_kernel_cost_cache();

// How the graph is executed (README, "Runtimes"):
//   native  the project's kernels, launched back to back from C++ (what `roofline measure` runs):
//           the host issues each kernel in the executor's interval for its class (ExecutorHost);
//   eager   PyTorch eager: each op runs the kernels ATen launches for it (layernorm backward as two
//           kernels, softmax backward as two, embedding backward as zero-fill + scatter, ...), and
//           the host pays a dispatch cost per op (views included) before its kernels can start, so
//           a step is the GPU's time or the host's, whichever runs behind, with queueing.
enum class Runtime { native, eager };
std::string_view runtime_name(Runtime r);

// The native runtime's host: the project's executor (measure/gpu_executor.cpp) enqueues each kernel
// from C++ (operand lookup, the launch context, the op's launch path: cuBLASLt's matmul descriptors
// and heuristic cache for GEMMs, the row kernels' launch-shape choice), one node after another. A
// run of small kernels is issue-bound at these intervals, not at the GPU's kernel times. Measured
// on an H200 VM (driver 580.159.04, CUDA 13.0, 2026-11-26): 256 dependent launches of one tiny op,
// step over launches, untraced (tests/data/measured/h200-2026-11-26b/chain-{add,matmul,layernorm}
// .json; their kernels ran 1.5, 1.9 and 3.9 us, so the GPU waited on the host). The host is the
// machine's: another VM's differs (docs/ACCURACY.md).
struct ExecutorHost {
    double stream_launch_s = 4.615e-6;  // elementwise, movement and other streaming kernels (chain-add)
    double gemm_launch_s = 7.494e-6;    // cuBLASLt GEMMs (chain-matmul)
    double row_launch_s = 6.621e-6;     // row kernels: norms, softmax, cross-entropy (chain-layernorm)
    // The step was timed with CUPTI's Activity tracer on (runtime and driver API records, as
    // measure's per-kernel run does, and as every measurement before 2026-11-26 timed its step):
    // the host time it adds to each launch, from the same chains timed traced minus untraced.
    bool traced = false;
    double stream_tracer_s = 2.866e-6, gemm_tracer_s = 3.303e-6, row_tracer_s = 5.358e-6;
};

struct AnalysisOptions {
    Runtime runtime = Runtime::native;
    ExecutorHost executor;
    MemoryOptions memory;
    ScheduleOptions schedule;
    GpuModelOptions gpu;
    TpuModelOptions tpu;
    // Kernel fusion (sim/fusion.hpp): each group runs as one kernel, costed on its anchor node;
    // tensors kept on chip hold no device memory. Null: one kernel per op.
    const FusionPlan* fusion = nullptr;
    KernelCostCache* cost_cache = nullptr;  // null: a cache local to the call
    // Eager runtime: host time of one dispatcher step made from Python: an ATen op call (argument
    // parsing, dispatch), an output allocation or a kernel launch (eager_host_steps), paid before
    // the call's kernels can start. PyTorch issue #41383 (maintainer ngimel: ~2 us of C++ and
    // about as much Python per trivial op, ~5-7 us with autograd); cudaLaunchKernel costs a few
    // us. Fitted (sim/fitted.hpp) on the public per-op timings.
    double eager_op_host_s = 4.955e-6;
    // Host time cuDNN adds to each convolution call (the v8 API's execution-plan lookup and
    // launch, on top of the dispatcher steps). Fitted (sim/fitted.hpp). Its fit has two optima
    // (about 205 and 325 us, within 0.1 point of each other in the objective): the 2026-11-27 fit
    // on all five GPUs ended at 324 us from this start, the one before at 209 us; the default
    // stays at 205.7 us. Both exceed the fastest public convolution calls (68-73 us on V100, T4
    // and P4), so the term also stands in for convolution device time the kernel model misses
    // (docs/ACCURACY.md, "What is still wrong").
    double eager_cudnn_host_s = 205.7e-6;
    // The same for each of a convolution's gradient calls (cuDNN's data- and weight-gradient
    // calls in a backward pass). Unset: eager_cudnn_host_s. A host file's conv_backward_call_s
    // sets it (sim/eager_host.hpp: what the probe's backward call runs besides).
    std::optional<double> eager_cudnn_backward_host_s;
    // A grouped (not depthwise) convolution runs group by group in cuDNN (sim/gpu_model.cpp,
    // grouped_conv_per_group): each group after the first costs the host that many more
    // dispatcher steps (eager_op_host_s): a forward group launches its GEMM (and, on the xmma
    // path, two layout transposes); a gradient group launches 3-5 kernels (transposes, a memset or
    // scale, the GEMM). Fitted on the host-bound rows (kernels < 35% of the call) of
    // tests/data/public/h100-conv-2026-11-27/conv_grouped_fit_kernels.csv: a call's time against
    // its group count, slope over the probe's step (add_call_s / 3 = 3.65 us): forward 7.6 us a
    // group (28 rows) = 2.1 steps, backward 48.4 us a group for its two gradient calls (22 rows)
    // = 6.6 steps each. A fitted constant, labelled so in docs/ACCURACY.md.
    double eager_cudnn_group_steps = 2.1;
    double eager_cudnn_grad_group_steps = 6.6;
    // A single call timed by CUDA events (the public per-op measurements): the host time after
    // the call's launch (recording the end event, returning to the timing loop); the end event
    // completes once the host has recorded it and the last kernel has finished. Fitted
    // (sim/fitted.hpp).
    double eager_timing_host_s = 13.19e-6;
    // Host time a backward call (loss.backward(), torch.autograd.grad) spends before its first
    // gradient op is dispatched: the autograd engine's start, its hand-off to the device's worker
    // thread and back. Paid once per call, before the first backward-phase node. A host file's
    // backward_call_s sets it (measure/host_probe.py: backward_call_s less add_call_s); otherwise
    // this value, measured on the H200 VM of 2026-11-27 (tests/data/hosts/h200-vm-2026-11-27.json:
    // 85.5 - 10.4 us; its second probe 109.3 - 11.0 us), the only machine probed for it.
    double eager_backward_call_host_s = 75.1e-6;
    // The end event of a timed call: max(host + timing, dispatch + device), smoothed as
    // (a^p + b^p)^(1/p): call-to-call jitter on either side makes the mean of the maxima exceed
    // the maximum of the means where the two are close. Fitted (sim/fitted.hpp).
    double eager_overlap_p = 3.89;
};

// Eager runtime: the dispatcher steps of node n when it launches `launches` kernels (its ATen
// calls, views and other zero-work nodes included; its output allocations; its launches).
int eager_host_steps(const Graph& g, NodeId n, int launches);
// Eager runtime: the host time to dispatch node n (eager_host_steps, and cuDNN's own host work for
// convolutions). 0 in the native runtime.
double eager_host_s(const Graph& g, NodeId n, const AnalysisOptions& opt, int launches);
// The first node of the backward phase in node order (kNoNode if none): where an eager backward
// call pays AnalysisOptions::eager_backward_call_host_s.
NodeId first_backward_node(const Graph& g);
// The latency of the graph's ops timed as one call repeated in eager PyTorch (the public per-op
// measurements): host dispatch and device time overlapping as AnalysisOptions::eager_overlap_p says.
double single_call_latency_s(const Graph& g, const struct Analysis& a, const AnalysisOptions& opt);

Analysis analyze(const Graph& g, const Hardware& hw, const AnalysisOptions& opt = {});

}  // namespace roofline
