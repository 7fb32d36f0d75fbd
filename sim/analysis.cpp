#include "sim/analysis.hpp"

#include "sim/fusion.hpp"
#include "sim/tpu_model.hpp"

#include <algorithm>
#include <cstring>
#include <cmath>
#include <type_traits>
#include <unordered_map>
#include <variant>

#include "ops/checked.hpp"
#include "ops/error.hpp"
#include "ops/op_rule.hpp"

namespace roofline {

std::string_view runtime_name(Runtime r) { return r == Runtime::eager ? "eager" : "native"; }

int eager_host_steps(const Graph& g, NodeId n, int launches) {
    // One step per dispatcher call (views included), per output allocated and per kernel launched,
    // as a PyTorch 2.1 profiler trace of one call lists them (aten/src/ATen/native/):
    //   x + y, tanh(x), gelu(x): the op, empty (its output), the launch: 3;
    //   relu: relu -> clamp_min: one call more;
    //   softmax -> _softmax, cross_entropy -> log_softmax -> _log_softmax + nll_loss: one more;
    //   layer_norm -> native_layer_norm, which also allocates mean and rstd: three more;
    //   nn.Linear: linear -> t -> transpose -> as_strided, addmm with the bias expanded (expand,
    //   as_strided) and copied into the output first (its own launch, eager_parts): five more;
    //   nn.Conv2d: conv2d -> convolution -> _convolution -> cudnn_convolution: three more, and
    //   cuDNN's kernels (the public measurements' kernel lists show no separate bias kernel);
    //   cuDNN's own host work is eager_cudnn_host_s.
    const Node& node = g.node(n);
    int steps = 1 + launches;
    if (launches > 0) steps += static_cast<int>(node.outputs.size());
    return steps + traits_of(node.kind).eager_extra_calls;
}

NodeId first_backward_node(const Graph& g) {
    const auto& nodes = g.nodes();
    for (std::size_t i = 0; i < nodes.size(); ++i)
        if (nodes[i].phase == Phase::backward) return static_cast<NodeId>(i);
    return kNoNode;
}

double eager_host_s(const Graph& g, NodeId n, const AnalysisOptions& opt, int launches) {
    if (opt.runtime != Runtime::eager) return 0;
    double host = eager_host_steps(g, n, launches) * opt.eager_op_host_s;
    const KernelForm form = traits_of(g.node(n).kind).kernel;
    // PyTorch runs fp32 depthwise convolutions with its own kernels (conv_depthwise2d_*): no cuDNN.
    if (!is_conv(form) || is_depthwise_conv(g, n)) return host;
    const bool gradient = form == KernelForm::conv_grad_input || form == KernelForm::conv_grad_weight;
    host += gradient ? opt.eager_cudnn_backward_host_s.value_or(opt.eager_cudnn_host_s) : opt.eager_cudnn_host_s;
    // cuDNN's group-by-group launches (one kernel part per group): each beyond the first.
    if (launches > 1 && g.node(n).attrs.get_int("groups", 1) == launches)
        host += static_cast<double>(launches - 1) * ((gradient ? opt.eager_cudnn_grad_group_steps : opt.eager_cudnn_group_steps) - 1.0) *
                opt.eager_op_host_s;
    return host;
}

namespace {

int kernel_launches(const OpAnalysis& op) {
    if (!op.kernel) return 0;
    return op.kernel->parts.empty() ? 1 : static_cast<int>(op.kernel->parts.size());
}

// Native runtime: the executor's host time to issue one kernel of k's class.
double executor_launch_s(const Kernel& k, const ExecutorHost& e) {
    if (k.gemm) return e.gemm_launch_s + (e.traced ? e.gemm_tracer_s : 0.0);
    if (k.row) return e.row_launch_s + (e.traced ? e.row_tracer_s : 0.0);
    return e.stream_launch_s + (e.traced ? e.stream_tracer_s : 0.0);
}

// Native runtime: the host time to issue node n's kernels (each part its own launch).
double executor_host_s(const OpAnalysis& op, const ExecutorHost& e) {
    if (!op.kernel) return 0;
    if (op.kernel->parts.empty()) return executor_launch_s(*op.kernel, e);
    double s = 0;
    for (const Kernel& part : op.kernel->parts) s += executor_launch_s(part, e);
    return s;
}

}  // namespace

double single_call_latency_s(const Graph& g, const Analysis& a, const AnalysisOptions& opt) {
    // A call timed by CUDA events: the start event is recorded, the host dispatches the call's
    // nodes in order (each kernel can start once its node has been dispatched and the previous
    // kernel has finished), then records the end event. The end event completes when both the host
    // has recorded it and the last kernel has finished:
    //   latency = max(host dispatch + eager_timing_host_s, last kernel's end).
    // Evidence (public per-op timings, e.g. x + y on the A100-PCIE-40GB): flat at the host's time
    // (27 us) up to ~20 MB moved, then 15 us + bytes / 1.36 TB/s: the kernel starts after the
    // dispatch, and the GPU's time is added to it, not overlapped with all of the host's.
    double host = 0, device = 0, gpu_end = 0;
    const NodeId engine = first_backward_node(g);
    for (const OpAnalysis& op : a.ops) {
        host += eager_host_s(g, op.node, opt, kernel_launches(op));
        if (op.node == engine && opt.runtime == Runtime::eager) host += opt.eager_backward_call_host_s;
        const double d = op.modelled ? op.modelled->time_s : op.roofline->time_s;
        device += d;
        if (d > 0) gpu_end = std::max(gpu_end, host) + d;
    }
    if (host <= 0) return device;
    const double recorded = host + opt.eager_timing_host_s;
    // The maximum, smoothed: call-to-call jitter of either side makes the mean of the maxima
    // exceed the maximum of the means where the two are close.
    const double p = std::max(1.0, opt.eager_overlap_p);
    return std::pow(std::pow(recorded, p) + std::pow(gpu_end, p), 1.0 / p);
}

namespace {

// Keys are raw bytes, not text: integers as their 8 bytes, strings and lists length-prefixed, so
// that distinct nodes never share a key.
void append_int(std::string& s, std::int64_t x) {
    char buf[sizeof x];
    std::memcpy(buf, &x, sizeof x);
    s.append(buf, sizeof buf);
}

void append_text(std::string& s, const std::string& t) {
    append_int(s, static_cast<std::int64_t>(t.size()));
    s += t;
}

void append_desc(std::string& s, const TensorDesc& d) {
    append_int(s, static_cast<int>(d.dtype) + 256 * static_cast<std::int64_t>(d.shape.size()));
    for (std::int64_t x : d.shape) append_int(s, x);
}

// What a node's roofline and kernel depend on: its kind, attributes and tensor descriptors.
// Transformer layers repeat the same nodes dozens of times, so analyze costs each once. Appended
// to s (analyze reuses one buffer for every node's key).
void append_node_signature(std::string& s, const Graph& g, NodeId n) {
    const Node& node = g.node(n);
    append_int(s, static_cast<int>(node.kind) + 65536 * static_cast<std::int64_t>(node.attrs.all().size()));
    for (const auto& [k, v] : node.attrs.all()) {
        append_text(s, k);
        append_int(s, static_cast<std::int64_t>(v.index()));
        std::visit(
            [&](const auto& x) {
                using T = std::decay_t<decltype(x)>;
                if constexpr (std::is_same_v<T, std::string>) {
                    append_text(s, x);
                } else if constexpr (std::is_same_v<T, std::vector<std::int64_t>>) {
                    append_int(s, static_cast<std::int64_t>(x.size()));
                    for (std::int64_t e : x) append_int(s, e);
                } else if constexpr (std::is_same_v<T, double>) {
                    std::int64_t bits = 0;
                    std::memcpy(&bits, &x, sizeof bits);
                    append_int(s, bits);
                } else {
                    append_int(s, static_cast<std::int64_t>(x));
                }
            },
            v);
    }
    append_int(s, static_cast<std::int64_t>(node.inputs.size()) + 65536 * static_cast<std::int64_t>(node.outputs.size()));
    for (TensorId t : node.inputs) append_desc(s, g.tensor(t).desc);
    for (TensorId t : node.outputs) append_desc(s, g.tensor(t).desc);
}

void append_group_signature(std::string& s, const Graph& g, const FusionGroup& grp) {
    s += 'F';
    append_int(s, static_cast<int>(grp.kind));
    append_node_signature(s, g, grp.anchor);
    append_node_signature(s, g, grp.nodes.front());
    for (std::int64_t x :
         {grp.work.matrix_flops, grp.work.vector_flops, grp.work.transcendentals, grp.work.bytes_read, grp.work.bytes_written})
        append_int(s, x);
}

struct Costed {
    std::shared_ptr<const OpRoofline> roofline;
    std::shared_ptr<const Kernel> kernel;
    std::shared_ptr<const KernelCost> modelled;
};

}  // namespace

struct KernelCostCache {
    std::unordered_map<std::string, Costed> map;
};

std::shared_ptr<KernelCostCache> make_kernel_cost_cache() { return std::make_shared<KernelCostCache>(); }

namespace {

// fp8 GEMMs need fp8 tensor cores: CUDA cores have no fp8 arithmetic, and a chip without them
// (fp8 arrived with Ada and Hopper, compute capability 8.9) cannot run them at all, so the
// vector-unit fallback other dtypes get (int8 on CUDA cores: dp4a) would be a number for nothing
// real.
void require_fp8_matrix_unit(const Graph& g, NodeId n, const OpRoofline& r, const Hardware& hw) {
    const DType d = r.dtype;
    if (r.work.matrix_flops == 0 || !r.matrix.fallback || (d != DType::fp8_e4m3 && d != DType::fp8_e5m2)) return;
    std::string rates;
    for (const auto& [dt, rate] : hw.matrix_flop_per_s) rates += (rates.empty() ? "" : ", ") + std::string(dtype_name(dt));
    throw InputError("node '" + g.node(n).name + "' runs a GEMM in " + std::string(dtype_name(d)) + ", but " + hw.display_name +
                     " has no " + std::string(dtype_name(d)) + " matrix rate (its spec lists: " + (rates.empty() ? "none" : rates) + ")" +
                     "; fp8 tensor cores need Ada or Hopper (compute capability 8.9+)" +
                     ". Use a dtype it has, or keep the weights quantized and compute in 16 bits (--weights " + std::string(dtype_name(d)) +
                     " without --activations: weight-only, dequantized in the kernel)");
}

}  // namespace

Analysis analyze(const Graph& g, const Hardware& hw, const AnalysisOptions& opt) {
    Analysis a;
    if (opt.fusion != nullptr && opt.fusion->group_of.size() != g.nodes().size())
        throw InputError("analyze: the fusion plan is for another graph");
    KernelCostCache local;
    std::unordered_map<std::string, Costed>& cache = opt.cost_cache != nullptr ? opt.cost_cache->map : local.map;
    a.ops.reserve(g.nodes().size());
    std::string key;  // the cache key of each node in turn (one buffer)
    for (NodeId n : g.topological_order()) {
        const int gi = opt.fusion != nullptr ? opt.fusion->group_of[static_cast<std::size_t>(n)] : -1;
        OpAnalysis op;
        op.node = n;
        op.fusion_group = gi;
        bool carrier = true;  // the node that runs a kernel (in a fused group: the anchor)
        const FusionGroup* grp = gi >= 0 ? &opt.fusion->groups[static_cast<std::size_t>(gi)] : nullptr;
        if (grp != nullptr) carrier = grp->anchor == n;
        op.flash_attention = grp != nullptr && grp->kind == FusionKind::flash_attention;
        if (grp != nullptr && !carrier) {
            // A fused group's other nodes: the anchor carries the group's work and kernel.
            op.roofline = std::make_shared<const OpRoofline>(op_roofline(Work{}, op_compute_dtype(g, n), hw));
            if (hw.kind == HardwareKind::gpu) op.modelled = std::make_shared<const KernelCost>();
        } else if (hw.kind == HardwareKind::tpu) {  // the TPU model looks at the producer (fusion): no cache
            // A fused group on a TPU is costed at its own roofline bound (sim/fusion.hpp groups
            // are GPU kernels; the TPU model's XLA-style fusion applies to unfused graphs).
            op.roofline =
                std::make_shared<const OpRoofline>(op_roofline(grp != nullptr ? grp->work : g.work(n), op_compute_dtype(g, n), hw));
            require_fp8_matrix_unit(g, n, *op.roofline, hw);
            if (grp == nullptr) {
                if (std::optional<KernelCost> c = tpu_node_cost(g, n, hw, opt.tpu))
                    op.modelled = std::make_shared<const KernelCost>(std::move(*c));
            }
        } else {
            key.clear();
            if (opt.runtime == Runtime::eager) key += 'E';
            if (opt.gpu.warm_l2) key += 'W';
            if (grp != nullptr) {
                append_group_signature(key, g, *grp);
            } else {
                key += 'N';
                append_node_signature(key, g, n);
            }
            auto it = cache.find(key);
            if (it == cache.end()) {
                Costed c;
                c.roofline =
                    std::make_shared<const OpRoofline>(op_roofline(grp != nullptr ? grp->work : g.work(n), op_compute_dtype(g, n), hw));
                if (hw.kind == HardwareKind::gpu) {
                    GpuModelOptions gopt = opt.gpu;
                    gopt.eager = opt.runtime == Runtime::eager;
                    std::optional<Kernel> k =
                        grp != nullptr ? std::optional<Kernel>(fused_kernel(g, *grp, hw, gopt)) : lower_to_kernel(g, n, hw, gopt);
                    if (k) {
                        c.modelled = std::make_shared<const KernelCost>(gpu_kernel_cost(*k, hw, gopt));
                        c.kernel = std::make_shared<const Kernel>(std::move(*k));
                    }
                }
                it = cache.emplace(key, std::move(c)).first;
            }
            require_fp8_matrix_unit(g, n, *it->second.roofline, hw);
            op.roofline = it->second.roofline;
            op.kernel = it->second.kernel;
            op.modelled = it->second.modelled;
        }
        const OpRoofline& r = *op.roofline;
        if (op.modelled) a.modelled_time_s += op.modelled->time_s;
        a.has_kernel_model = a.has_kernel_model || hw.kind == HardwareKind::gpu || hw.kind == HardwareKind::tpu;
        a.total += r.work;
        a.time_s += r.time_s;
        if (carrier) {
            BoundShare& b = a.by_bound[r.bound];
            b.time_s += r.time_s;
            ++b.ops;
        }
        BoundShare& f = a.by_family[std::string(family_name(rule_of(g.node(n).kind).family))];
        f.time_s += r.time_s;
        ++f.ops;
        PhaseTotals& ph = a.by_phase[static_cast<int>(g.node(n).phase)];
        ph.work += r.work;
        ph.time_s += r.time_s;
        ++ph.ops;
        a.ops.push_back(std::move(op));
    }
    for (const Tensor& t : g.tensors()) {
        if (t.role != TensorRole::parameter) continue;
        a.parameter_count = checked_add(a.parameter_count, t.desc.numel(), "parameter count");
        a.parameter_bytes = checked_add(a.parameter_bytes, t.desc.bytes(), "parameter bytes");
    }
    MemoryOptions mem = opt.memory;
    if (opt.fusion != nullptr) mem.on_chip = &opt.fusion->on_chip;
    a.memory = memory_timeline(g, mem);
    std::vector<double> durations(g.nodes().size(), 0.0);
    for (const OpAnalysis& op : a.ops) {
        durations[static_cast<std::size_t>(op.node)] = op.modelled ? op.modelled->time_s : op.roofline->time_s;
    }
    ScheduleOptions sched = opt.schedule;
    std::vector<double> host;
    if (opt.runtime == Runtime::eager) {
        host.assign(g.nodes().size(), 0.0);
        std::vector<int> launches(g.nodes().size(), 0);
        for (const OpAnalysis& op : a.ops) launches[static_cast<std::size_t>(op.node)] = kernel_launches(op);
        for (std::size_t i = 0; i < host.size(); ++i) host[i] = eager_host_s(g, static_cast<NodeId>(i), opt, launches[i]);
        if (const NodeId engine = first_backward_node(g); engine != kNoNode)
            host[static_cast<std::size_t>(engine)] += opt.eager_backward_call_host_s;
        sched.host_s = &host;
    } else if (hw.kind == HardwareKind::gpu && opt.gpu.host_issue) {
        // A fused group is one launch: its anchor carries the group's kernel, the other members none.
        host.assign(g.nodes().size(), 0.0);
        for (const OpAnalysis& op : a.ops) host[static_cast<std::size_t>(op.node)] = executor_host_s(op, opt.executor);
        sched.host_s = &host;
    }
    if (opt.fusion != nullptr) sched.group_of = &opt.fusion->group_of;
    a.schedule = schedule_graph(g, durations, sched);
    return a;
}

}  // namespace roofline
