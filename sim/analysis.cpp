#include "sim/analysis.hpp"

#include "sim/tpu_model.hpp"

#include "ops/checked.hpp"
#include "ops/op_rule.hpp"

namespace roofline {

Analysis analyze(const Graph& g, const Hardware& hw, const AnalysisOptions& opt) {
    Analysis a;
    for (NodeId n : g.topological_order()) {
        OpAnalysis op{n, op_roofline(g.work(n), op_compute_dtype(g, n), hw), std::nullopt, std::nullopt};
        if (hw.kind == HardwareKind::gpu) {
            op.kernel = lower_to_kernel(g, n, hw, opt.gpu);
            if (op.kernel) {
                op.modelled = gpu_kernel_cost(*op.kernel, hw, opt.gpu);
                a.modelled_time_s += op.modelled->time_s;
            }
            a.has_kernel_model = true;
        } else if (hw.kind == HardwareKind::tpu) {
            op.modelled = tpu_node_cost(g, n, hw, opt.tpu);
            if (op.modelled) a.modelled_time_s += op.modelled->time_s;
            a.has_kernel_model = true;
        }
        a.total += op.roofline.work;
        a.time_s += op.roofline.time_s;
        BoundShare& b = a.by_bound[op.roofline.bound.label()];
        b.time_s += op.roofline.time_s;
        ++b.ops;
        BoundShare& f = a.by_family[std::string(family_name(rule_of(g.node(n).kind).family))];
        f.time_s += op.roofline.time_s;
        ++f.ops;
        PhaseTotals& ph = a.by_phase[static_cast<int>(g.node(n).phase)];
        ph.work += op.roofline.work;
        ph.time_s += op.roofline.time_s;
        ++ph.ops;
        a.ops.push_back(std::move(op));
    }
    for (const Tensor& t : g.tensors()) {
        if (t.role != TensorRole::parameter) continue;
        a.parameter_count = checked_add(a.parameter_count, t.desc.numel(), "parameter count");
        a.parameter_bytes = checked_add(a.parameter_bytes, t.desc.bytes(), "parameter bytes");
    }
    a.memory = memory_timeline(g, opt.memory);
    std::vector<double> durations(g.nodes().size(), 0.0);
    for (const OpAnalysis& op : a.ops) {
        durations[static_cast<std::size_t>(op.node)] = op.modelled ? op.modelled->time_s : op.roofline.time_s;
    }
    ScheduleOptions sched = opt.schedule;
    if (hw.kind == HardwareKind::gpu && opt.gpu.host_issue) sched.launch_overhead_s = hw.launch_overhead_s.value;
    a.schedule = schedule_graph(g, durations, sched);
    return a;
}

}  // namespace roofline
