#include "sim/tpu_model.hpp"

#include <algorithm>
#include <cmath>

#include "ops/op_rule.hpp"

namespace roofline {

std::string_view dataflow_name(Dataflow d) {
    switch (d) {
        case Dataflow::weight_stationary: return "ws";
        case Dataflow::output_stationary: return "os";
        case Dataflow::input_stationary: return "is";
    }
    return "?";
}

namespace {
std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
}  // namespace

SystolicRun systolic_gemm(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t rows, std::int64_t cols, Dataflow d) {
    // Each fold streams T operand vectors through the array; the skew of a systolic array adds
    // R + C - 2 cycles of fill and drain per fold. Weight- and input-stationary folds first load
    // the stationary operand (R cycles). Mapping (SCALE-Sim): OS puts M x N outputs on the array
    // (T = K); WS puts K x N weights (T = M); IS puts K x M inputs (T = N).
    SystolicRun r;
    std::int64_t t = 0, load = 0;
    switch (d) {
        case Dataflow::output_stationary:
            r.folds = ceil_div(m, rows) * ceil_div(n, cols);
            t = k;
            break;
        case Dataflow::weight_stationary:
            r.folds = ceil_div(k, rows) * ceil_div(n, cols);
            t = m;
            load = rows;
            break;
        case Dataflow::input_stationary:
            r.folds = ceil_div(k, rows) * ceil_div(m, cols);
            t = n;
            load = rows;
            break;
    }
    r.cycles_per_fold = load + t + rows + cols - 2;
    r.cycles = r.folds * r.cycles_per_fold - 1;  // SCALE-Sim counts the last cycle's index
    r.utilization = static_cast<double>(m * n * k) / (static_cast<double>(rows * cols) * static_cast<double>(r.cycles + 1));
    return r;
}

TensorId fused_input(const Graph& g, NodeId n) {
    const Node& node = g.node(n);
    if (rule_of(node.kind).family != OpFamily::elementwise) return -1;
    for (TensorId t : node.inputs) {
        const NodeId p = g.tensor(t).producer;
        if (p == kNoNode || traits_of(g.node(p).kind).view == ViewKind::always) continue;
        const Work pw = g.work(p);
        if (pw.flops() == 0 && pw.bytes() == 0) continue;  // views fuse nothing
        const std::vector<NodeId> users = g.consumers(t);
        if (users.size() == 1 && users[0] == n && !std::count(g.outputs().begin(), g.outputs().end(), t)) return t;
    }
    return -1;
}

std::optional<KernelCost> tpu_node_cost(const Graph& g, NodeId n, const Hardware& hw, const TpuModelOptions& opt) {
    if (!hw.tpu) return std::nullopt;
    const Node& node = g.node(n);
    Work w = g.work(n);
    if (w.flops() == 0 && w.bytes() == 0) return std::nullopt;
    if (opt.fuse_elementwise) {
        // This op's fused input is not read from HBM; outputs consumed only by a fused
        // elementwise op are not written.
        const TensorId in = fused_input(g, n);
        if (in >= 0) w.bytes_read = std::max<std::int64_t>(0, w.bytes_read - g.tensor(in).desc.bytes());
        for (TensorId t : node.outputs) {
            const std::vector<NodeId> users = g.consumers(t);
            if (users.size() == 1 && fused_input(g, users[0]) == t)
                w.bytes_written = std::max<std::int64_t>(0, w.bytes_written - g.tensor(t).desc.bytes());
        }
    }
    const DType d = op_compute_dtype(g, n);
    const OpRoofline roof = op_roofline(w, d, hw);
    KernelCost c;
    c.lower_bound_s = roof.time_s;
    double memory = 0;
    for (const LevelRoofline& l : roof.levels) memory = std::max(memory, l.time_s);
    c.memory_s = memory;
    const KernelForm form = traits_of(node.kind).kernel;
    const bool gemm =
        (form == KernelForm::gemm || form == KernelForm::linear_gemm) && w.matrix_flops > 0 && hw.matrix_flop_per_s.count(d) != 0;
    if (gemm) {
        const auto& out = g.tensor(node.outputs[0]).desc;
        const std::int64_t cols_n = out.shape.back();
        std::int64_t m = out.numel() / cols_n, batch = 1;
        if (form == KernelForm::gemm && out.rank() > 2) {
            m = out.shape[out.shape.size() - 2];
            batch = out.numel() / (m * cols_n);
        }
        const std::int64_t k = w.matrix_flops / (2 * batch * m * cols_n);
        const auto R = static_cast<std::int64_t>(hw.tpu->mxu_rows.value), C = static_cast<std::int64_t>(hw.tpu->mxu_cols.value);
        const SystolicRun run = systolic_gemm(m, cols_n, k, R, C, opt.dataflow);
        // Folds of every batch entry are spread over all MXUs of the chip; the clock is the spec's,
        // scaled so that a full array runs at the spec's matrix peak for the dtype (int8 doubles it).
        const double mxus = hw.tpu->tensor_cores.value * hw.tpu->mxus_per_core.value;
        const double rounds = std::ceil(static_cast<double>(batch * run.folds) / mxus);
        const double array_peak = 2.0 * static_cast<double>(R * C) * hw.clock_hz.value * mxus;
        const double rate = hw.matrix_flop_per_s.at(d).value / array_peak;  // 1 for bf16
        c.waves = rounds;
        c.tile_efficiency = run.utilization;
        c.compute_s = std::max(rounds * static_cast<double>(run.cycles_per_fold) / (hw.clock_hz.value * rate), roof.vector_time_s);
    } else {
        c.compute_s = roof.compute_time_s;
    }
    c.compute_s = std::max(c.compute_s, roof.compute_time_s);
    c.time_s = opt.overlap ? std::max(c.compute_s, memory) : c.compute_s + memory;
    c.bound = c.compute_s >= memory ? KernelBound::compute : KernelBound::memory;
    return c;
}

}  // namespace roofline
