#include "reports/report.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

#include "ops/op_rule.hpp"
#include "reports/output_files.hpp"
#include "reports/units.hpp"
#include "sim/eager_host.hpp"
#include "sim/parallel.hpp"

namespace roofline {

std::string bound_label(const Bound& b) {
    switch (b.kind) {
        case BoundKind::compute:
            return "compute (" + std::string(unit_name(b.unit)) +
                   (b.unit == ComputeUnit::transcendental ? "" : " " + std::string(dtype_name(b.dtype))) + ")";
        case BoundKind::memory: return "memory (" + b.level + ")";
        case BoundKind::none: return "none";
    }
    return "?";
}

std::map<std::string, BoundShare> shares_by_label(const std::map<Bound, BoundShare>& by_bound) {
    std::map<std::string, BoundShare> out;
    for (const auto& [b, share] : by_bound) {
        BoundShare& o = out[bound_label(b)];
        o.time_s += share.time_s;
        o.ops += share.ops;
    }
    return out;
}

namespace {

// The words for a kernel's bound in reports ("" for a fused member without a kernel of its own).
std::string_view kernel_bound_name(KernelBound b) {
    switch (b) {
        case KernelBound::none: return "";
        case KernelBound::compute: return "compute";
        case KernelBound::memory: return "memory";
        case KernelBound::launch: return "launch";
    }
    return "";
}

using ojson = nlohmann::ordered_json;

ojson sourced_json(const SourcedValue& s) {
    ojson j;
    j["value"] = s.value;
    j["source"] = s.source;
    if (!s.note.empty()) j["note"] = s.note;
    return j;
}

ojson ceiling_json(const ComputeCeiling& c, double time_s) {
    ojson j;
    j["unit"] = unit_name(c.unit);
    if (c.unit != ComputeUnit::transcendental) j["dtype"] = dtype_name(c.dtype);
    j["peak_per_s"] = c.flop_per_s;
    j["fallback"] = c.fallback;
    j["time_s"] = time_s;
    return j;
}

// FLOPs by class and traffic, in the key order the schema documents.
ojson work_json(const Work& w) {
    ojson j;
    j["flops"] = w.flops();
    j["matrix_flops"] = w.matrix_flops;
    j["vector_flops"] = w.vector_flops;
    j["transcendentals"] = w.transcendentals;
    j["bytes_read"] = w.bytes_read;
    j["bytes_written"] = w.bytes_written;
    return j;
}

ojson tensor_json(const Tensor& t) {
    ojson j;
    j["name"] = t.name;
    j["dtype"] = dtype_name(t.desc.dtype);
    j["shape"] = t.desc.shape;
    return j;
}

ojson attrs_json(const Attrs& a) {
    ojson j = ojson::object();
    for (const auto& [k, v] : a.all()) {
        const std::string& key = k;  // clang before 16 cannot capture a structured binding
        std::visit([&](const auto& x) { j[key] = x; }, v);
    }
    return j;
}

ojson op_json(const ReportContext& ctx, const OpAnalysis& op) {
    const Node& n = ctx.graph.node(op.node);
    const OpRoofline& r = *op.roofline;
    ojson j;
    j["name"] = n.name;
    j["op"] = op_name(n.kind);
    j["family"] = family_name(rule_of(n.kind).family);
    j["phase"] = phase_name(n.phase);
    j["differentiates"] = n.differentiates == kNoNode ? ojson(nullptr) : ojson(ctx.graph.node(n.differentiates).name);
    j["inputs"] = ojson::array();
    for (TensorId t : n.inputs) j["inputs"].push_back(tensor_json(ctx.graph.tensor(t)));
    j["outputs"] = ojson::array();
    for (TensorId t : n.outputs) j["outputs"].push_back(tensor_json(ctx.graph.tensor(t)));
    j["attrs"] = attrs_json(n.attrs);
    j["dtype"] = dtype_name(r.dtype);
    j["work"] = work_json(r.work);
    ojson c;
    c["matrix"] = ceiling_json(r.matrix, r.matrix_time_s);
    c["vector"] = ceiling_json(r.vector, r.vector_time_s);
    c["transcendental"] = ceiling_json(r.transcendental, r.transcendental_time_s);
    c["time_s"] = r.compute_time_s;
    c["flop_per_s"] = r.compute_flop_per_s;
    j["compute"] = c;
    j["levels"] = ojson::array();
    for (const LevelRoofline& l : r.levels) {
        ojson lj;
        lj["level"] = l.level;
        lj["bytes"] = l.bytes;
        lj["bytes_per_s"] = l.bytes_per_s;
        lj["intensity"] = l.intensity ? ojson(*l.intensity) : ojson(nullptr);
        lj["attainable_flop_per_s"] = l.attainable_flop_per_s;
        lj["ridge"] = l.ridge;
        lj["time_s"] = l.time_s;
        j["levels"].push_back(lj);
    }
    j["bound"] = bound_label(r.bound);
    j["time_s"] = r.time_s;
    if (op.modelled) {
        const KernelCost& m = *op.modelled;
        ojson mj;
        mj["time_s"] = m.time_s;
        mj["compute_s"] = m.compute_s;
        mj["memory_s"] = m.memory_s;
        mj["bound"] = kernel_bound_name(m.bound);
        // The roofline bound of the work this kernel does (for a layout copy or an XLA-fused TPU
        // op it differs from the op's L0 bound above), over the modelled time.
        mj["lower_bound_s"] = m.lower_bound_s;
        mj["efficiency"] = m.time_s > 0 ? m.lower_bound_s / m.time_s : 1.0;
        mj["waves"] = m.waves;
        mj["tile_efficiency"] = m.tile_efficiency;
        if (!m.traffic.empty()) {
            mj["traffic"] = ojson::array();
            for (const LevelTraffic& t : m.traffic) mj["traffic"].push_back({{"level", t.level}, {"bytes", t.bytes}, {"time_s", t.time_s}});
        }
        if (op.kernel) {
            mj["blocks"] = op.kernel->blocks;
            mj["threads_per_block"] = op.kernel->launch.threads_per_block;
            mj["blocks_per_sm"] = m.occupancy.blocks_per_sm;
            mj["occupancy"] = m.occupancy.occupancy;
            mj["occupancy_limit"] = limit_name(m.occupancy.limit);
            mj["tail_efficiency"] = m.tail_efficiency;
            mj["tensor_cores"] = op.kernel->tensor_cores;
        }
        if (op.kernel && op.kernel->gemm) {
            const GemmShape& gs = *op.kernel->gemm;
            mj["gemm"] = {{"batch", gs.batch},   {"m", gs.m},           {"n", gs.n},         {"k", gs.k},
                          {"tile_m", gs.tile.m}, {"tile_n", gs.tile.n}, {"tiles", gs.tiles}, {"split_k", gs.split_k}};
        }
        j["model"] = mj;
    }
    j["attainable_flop_per_s"] = r.attainable_flop_per_s;
    j["share"] = ctx.analysis.time_s > 0 ? r.time_s / ctx.analysis.time_s : 0.0;
    // Where the schedule put it (schedule.ops is indexed by node): the HTML Gantt chart and
    // `--trace` of a saved report read it.
    const auto& sched = ctx.analysis.schedule.ops;
    if (static_cast<std::size_t>(op.node) < sched.size()) {
        const ScheduledOp& s = sched[static_cast<std::size_t>(op.node)];
        j["schedule"] = {{"stream", s.stream}, {"start_s", s.start_s}, {"end_s", s.end_s}};
    }
    // analyze --fuse: the group it runs in (the anchor carries the group's work and kernel);
    // analyze --recompute: the forward node a recomputed clone runs again.
    if (ctx.fusion != nullptr && op.fusion_group >= 0) {
        const FusionGroup& grp = ctx.fusion->groups[static_cast<std::size_t>(op.fusion_group)];
        j["fusion"] = {{"group", grp.name}, {"kind", fusion_kind_name(grp.kind)}, {"carries_kernel", grp.anchor == op.node}};
    }
    if (ctx.graph.node(op.node).recomputes != kNoNode) j["recomputes"] = ctx.graph.node(ctx.graph.node(op.node).recomputes).name;
    return j;
}

ojson shares_json(const std::map<std::string, BoundShare>& m, double total) {
    ojson j = ojson::object();
    for (const auto& [k, v] : m) {
        ojson e;
        e["ops"] = v.ops;
        e["time_s"] = v.time_s;
        e["share"] = total > 0 ? v.time_s / total : 0.0;
        j[k] = e;
    }
    return j;
}

ojson categories_json(const CategoryBytes& b) {
    ojson j;
    for (std::size_t c = 0; c < kMemoryCategories; ++c) j[std::string(category_name(static_cast<MemoryCategory>(c)))] = b[c];
    return j;
}

ojson memory_json(const ReportContext& ctx) {
    const MemoryTimeline& m = ctx.analysis.memory;
    const double capacity = ctx.hw.device_memory().capacity_bytes.value;
    ojson j;
    j["peak_bytes"] = m.peak_bytes;
    j["peak_node"] = m.steps.empty() ? ojson(nullptr) : ojson(ctx.graph.node(m.steps[m.peak_step].node).name);
    j["at_peak"] = categories_json(m.at_peak);
    j["saved_activation_bytes"] = m.saved_activation_bytes;
    j["device_capacity_bytes"] = capacity;
    j["fits"] = static_cast<double>(m.peak_bytes) <= capacity;
    ojson cats = ojson::array();
    for (std::size_t c = 0; c < kMemoryCategories; ++c) cats.push_back(category_name(static_cast<MemoryCategory>(c)));
    j["timeline"]["categories"] = cats;
    ojson steps = ojson::array();
    for (const MemoryStep& s : m.steps) steps.push_back(s.bytes);
    j["timeline"]["bytes_after_node"] = steps;
    return j;
}

}  // namespace

ojson hardware_json(const Hardware& hw) {
    ojson j;
    j["name"] = hw.name;
    j["display_name"] = hw.display_name;
    j["kind"] = kind_name(hw.kind);
    j["origin"] = hw.origin;
    j["clock_hz"] = sourced_json(hw.clock_hz);
    ojson m = ojson::object(), v = ojson::object();
    for (const auto& [d, s] : hw.matrix_flop_per_s) m[std::string(dtype_name(d))] = sourced_json(s);
    for (const auto& [d, s] : hw.vector_flop_per_s) v[std::string(dtype_name(d))] = sourced_json(s);
    j["matrix_flop_per_s"] = m;
    j["vector_flop_per_s"] = v;
    j["transcendental_per_s"] = sourced_json(hw.transcendental_per_s);
    j["memory"] = ojson::array();
    for (const MemoryLevel& l : hw.memory) {
        ojson lj;
        lj["name"] = l.name;
        if (!l.technology.empty()) lj["memory_technology"] = l.technology;
        lj["capacity_bytes"] = sourced_json(l.capacity_bytes);
        lj["bytes_per_s"] = sourced_json(l.bytes_per_s);
        j["memory"].push_back(lj);
    }
    j["ridge_points"] = ojson::array();
    auto add_ridges = [&](const char* unit, const std::map<DType, Sourced<unit::flop_per_s>>& peaks) {
        for (const auto& [d, s] : peaks) {
            for (const MemoryLevel& l : hw.memory) {
                ojson r;
                r["compute"] = std::string(unit) + " " + std::string(dtype_name(d));
                r["level"] = l.name;
                r["flop_per_byte"] = ridge_point(s.value, l);
                j["ridge_points"].push_back(r);
            }
        }
    };
    add_ridges("matrix", hw.matrix_flop_per_s);
    add_ridges("vector", hw.vector_flop_per_s);
    j["launch_overhead_s"] = sourced_json(hw.launch_overhead_s);
    if (hw.base_clock_hz) j["base_clock_hz"] = sourced_json(*hw.base_clock_hz);
    if (hw.power_w) j["power_w"] = sourced_json(*hw.power_w);
    if (hw.process_nm) j["process_nm"] = sourced_json(*hw.process_nm);
    {
        ojson a = ojson::object();
        if (hw.achieved.dram_bytes_per_s) a["dram_bytes_per_s"] = sourced_json(*hw.achieved.dram_bytes_per_s);
        if (hw.achieved.l2_bytes_per_s) a["l2_bytes_per_s"] = sourced_json(*hw.achieved.l2_bytes_per_s);
        if (hw.achieved.sustained_clock_hz) a["sustained_clock_hz"] = sourced_json(*hw.achieved.sustained_clock_hz);
        if (hw.achieved.matrix_flop_per_s) a["matrix_flop_per_s"] = sourced_json(*hw.achieved.matrix_flop_per_s);
        if (hw.achieved.matrix_flop_per_s_fp8) a["matrix_flop_per_s_fp8"] = sourced_json(*hw.achieved.matrix_flop_per_s_fp8);
        if (!a.empty()) j["achieved"] = a;
    }
    j["sources"] = hw.sources;
    return j;
}

ojson model_summary_json(const Graph& g) {
    std::int64_t params = 0, bytes = 0;
    for (const Tensor& t : g.tensors()) {
        if (t.role != TensorRole::parameter) continue;
        params += t.desc.numel();
        bytes += t.desc.bytes();
    }
    ojson model;
    model["name"] = g.name;
    model["origin"] = g.origin;
    if (!g.description.empty()) model["description"] = g.description;
    model["dims"] = g.dims;
    model["compute_dtype"] = dtype_name(g.compute_dtype);
    model["nodes"] = g.nodes().size();
    model["tensors"] = g.tensors().size();
    model["parameters"] = params;
    model["parameter_bytes"] = bytes;
    return model;
}

namespace {

ojson parallel_json(const ParallelAnalysis& p) {
    ojson j = {{"cluster", p.cluster},
               {"devices", p.devices},
               {"nodes", p.nodes},
               {"dp", p.options.dp},
               {"zero", p.options.zero},
               {"bucket_bytes", p.options.bucket_bytes},
               {"step_time_s", p.step_time_s},
               {"compute_s", p.compute_s},
               {"comm_s", p.comm_s},
               {"exposed_comm_s", p.exposed_comm_s},
               {"peak_bytes_per_rank", p.peak_bytes}};
    ojson cats = ojson::object();
    for (std::size_t c = 0; c < kMemoryCategories; ++c)
        cats[std::string(category_name(static_cast<MemoryCategory>(c)))] = p.peak_bytes_by_category[c];
    j["peak_by_category"] = cats;
    j["flops_per_rank"] = p.flops_per_rank;
    j["model_flops_per_rank"] = p.model_flops_per_rank;
    j["mfu"] = p.mfu;
    j["hfu"] = p.hfu;
    j["tokens_per_s"] = p.tokens_per_s;
    ojson comms = ojson::array();
    for (const CommOp& c : p.comms)
        comms.push_back({{"what", c.what},
                         {"collective", collective_name(c.collective)},
                         {"bytes", c.cost.bytes},
                         {"algorithm", algorithm_name(c.cost.algorithm)},
                         {"protocol", protocol_name(c.cost.protocol)},
                         {"ready_s", c.ready_s},
                         {"start_s", c.start_s},
                         {"end_s", c.end_s}});
    j["comms"] = comms;
    j["tp"] = p.tp;
    j["pp"] = p.pp;
    j["pass_s"] = p.pass_s;
    j["optimizer_s"] = p.optimizer_s;
    if (p.pp > 1) {
        j["interleave"] = p.interleave;
        j["p2p_s"] = p.p2p_s;
        j["embedding_all_reduce_s"] = p.embedding_all_reduce_s;
        j["bubble_fraction"] = p.bubble_fraction;
        ojson st = ojson::array();
        for (const auto& s : p.stages)
            st.push_back({{"stage", s.stage + 1},
                          {"layers", s.layers},
                          {"in_flight", s.in_flight},
                          {"pass_s", s.pass_s},
                          {"forward_s", s.forward_s},
                          {"optimizer_s", s.optimizer_s},
                          {"exposed_comm_s", s.exposed_comm_s},
                          {"peak_bytes", s.peak_bytes}});
        j["stages"] = st;
    }
    j["micro_batches"] = p.micro_batches;
    if (p.cp > 1) {
        j["cp"] = p.cp;
        j["cp_comm"] = cp_comm_name(p.options.cp_comm);
        j["cp_comm_s"] = p.cp_comm_s;
        j["cp_exposed_s"] = p.cp_exposed_s;
        j["cp_bytes_per_rank"] = p.cp_bytes;
        j["cp_collectives"] = p.cp_collectives;
        // How the rank's attention runs (sim/parallel.hpp cp_runs_flash): ring and all-gather as
        // flash attention, fused or not; Ulysses as the graph's own attention.
        j["cp_attention"] = cp_runs_flash(p.cp, p.options.cp_comm) ? "flash" : "as analysed";
    }
    if (p.ep > 1) {
        j["ep"] = p.ep;
        j["ep_comm_s"] = p.ep_comm_s;
        j["ep_collectives"] = p.ep_collectives;
    }
    j["tp_comm_s"] = p.tp_comm_s;
    j["tp_collectives"] = p.tp_collectives;
    if (p.tp_collectives > 0)
        j["tp_all_reduce"] = {{"bytes", p.tp_example.bytes},
                              {"time_s", p.tp_example.time_s},
                              {"algorithm", algorithm_name(p.tp_example.algorithm)},
                              {"protocol", protocol_name(p.tp_example.protocol)}};
    return j;
}

}  // namespace

namespace {

// Everything of the report but its per-op array (the last key).
ojson report_head_json(const ReportContext& ctx) {
    const Analysis& a = ctx.analysis;
    ojson j;
    j["schema"] = "roofline-report/1";
    j["tool"] = {{"name", "roofline"}, {"version", ROOFLINE_VERSION}};
    j["model"] = model_summary_json(ctx.graph);
    j["hardware"] = hardware_json(ctx.hw);
    j["settings"] = {{"mode", ctx.mode},
                     {"cost_model", !a.has_kernel_model                ? "roofline-l0"
                                    : ctx.hw.kind == HardwareKind::gpu ? "roofline-l0+gpu-kernel-l1"
                                                                       : "roofline-l0+tpu-systolic-l1"},
                     {"runtime", ctx.runtime},
                     {"fuse", ctx.fusion != nullptr},
                     {"fusion_groups", ctx.fusion != nullptr ? ctx.fusion->groups.size() : 0}};
    if (ctx.host != nullptr) {
        ojson h = {{"name", ctx.host->name}, {"file", ctx.host->origin}, {"add_call_s", ctx.host->add_call_s}};
        if (ctx.host->conv_call_s) h["conv_call_s"] = *ctx.host->conv_call_s;
        if (ctx.host->timed_add_s) h["timed_add_s"] = *ctx.host->timed_add_s;
        if (ctx.host->backward_call_s) h["backward_call_s"] = *ctx.host->backward_call_s;
        if (ctx.host->conv_backward_call_s) h["conv_backward_call_s"] = *ctx.host->conv_backward_call_s;
        j["settings"]["host"] = h;
    }
    if (ctx.training) {
        j["settings"]["optimizer"] = optimizer_name(ctx.training->optimizer);
        j["settings"]["master_weights"] = ctx.training->master_weights;
        j["settings"]["loss_scale"] = ctx.training->loss_scale;
        j["settings"]["recompute"] = ctx.recompute;
    }
    ojson t = work_json(a.total);
    t["intensity"] =
        a.total.bytes() > 0 ? ojson(static_cast<double>(a.total.flops()) / static_cast<double>(a.total.bytes())) : ojson(nullptr);
    t["time_s"] = a.time_s;
    t["step_time_s"] = a.schedule.step_time_s;
    t["streams"] = a.schedule.streams;
    t["critical_path_s"] = a.schedule.critical_path_s;
    t["critical_path_ops"] = a.schedule.critical_path.size();
    if (a.has_kernel_model) {
        t["modelled_time_s"] = a.modelled_time_s;
        t["efficiency"] = a.modelled_time_s > 0 ? a.time_s / a.modelled_time_s : 1.0;
    }
    t["achieved_flop_per_s"] = a.time_s > 0 ? static_cast<double>(a.total.flops()) / a.time_s : 0.0;
    t["by_bound"] = shares_json(shares_by_label(a.by_bound), a.time_s);
    t["by_family"] = shares_json(a.by_family, a.time_s);
    ojson phases = ojson::object();
    for (Phase p : {Phase::forward, Phase::backward, Phase::optimizer}) {
        const PhaseTotals& pt = a.by_phase[static_cast<int>(p)];
        ojson e = work_json(pt.work);
        e["ops"] = pt.ops;
        e["time_s"] = pt.time_s;
        e["share"] = a.time_s > 0 ? pt.time_s / a.time_s : 0.0;
        phases[std::string(phase_name(p))] = e;
    }
    t["by_phase"] = phases;
    if (ctx.parallel != nullptr) t["step_time_s"] = ctx.parallel->step_time_s;  // the iteration, communication included
    j["totals"] = t;
    if (ctx.parallel != nullptr) j["parallel"] = parallel_json(*ctx.parallel);
    j["memory"] = memory_json(ctx);
    return j;
}

}  // namespace

ojson report_json(const ReportContext& ctx) {
    ojson j = report_head_json(ctx);
    j["ops"] = ojson::array();
    for (const OpAnalysis& op : ctx.analysis.ops) j["ops"].push_back(op_json(ctx, op));
    return j;
}

std::string report_json_text(const ReportContext& ctx) {
    // The bytes of report_json(ctx).dump(2) + "\n", streamed: the per-op array (most of a large
    // report: 38 MB for the gpt3-175b training step) is written one op at a time instead of held
    // as one document. nlohmann's pretty printer writes a value nested d levels deep as its own
    // dump(2) with every line after the first indented by 2 d spaces, so each op is dumped alone
    // and indented by 4 (tests/unit/html_report_test.cpp checks the two agree).
    std::string out = report_head_json(ctx).dump(2);
    out.resize(out.size() - 2);  // its closing "\n}": the head is never empty
    out += ctx.analysis.ops.empty() ? ",\n  \"ops\": []\n}\n" : ",\n  \"ops\": [\n";
    if (ctx.analysis.ops.empty()) return out;
    bool first = true;
    for (const OpAnalysis& op : ctx.analysis.ops) {
        if (!first) out += ",\n";
        first = false;
        const std::string one = op_json(ctx, op).dump(2);
        for (std::size_t at = 0; at < one.size();) {  // each line, indented
            const std::size_t eol = std::min(one.find('\n', at), one.size() - 1) + 1;
            out += "    ";
            out.append(one, at, eol - at);
            at = eol;
        }
    }
    out += "\n  ]\n}\n";
    return out;
}

namespace {

using Row = std::vector<std::string>;

std::string render_rows(const std::vector<Row>& rows, const std::vector<bool>& right) {
    std::vector<std::size_t> width(right.size(), 0);
    for (const Row& r : rows) {
        for (std::size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
    }
    std::string out;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        std::string line;
        for (std::size_t c = 0; c < rows[i].size(); ++c) {
            if (c) line += "  ";
            const std::string& cell = rows[i][c];
            const std::string pad(width[c] - cell.size(), ' ');
            line += right[c] ? pad + cell : cell + pad;
        }
        while (!line.empty() && line.back() == ' ') line.pop_back();
        out += line + "\n";
        if (i == 0) {
            std::size_t total = 0;
            for (std::size_t c = 0; c < width.size(); ++c) total += width[c] + (c ? 2 : 0);
            out += std::string(total, '-') + "\n";
        }
    }
    return out;
}

}  // namespace

std::string render_table(const ReportContext& ctx, const TableOptions& opt) {
    const Analysis& a = ctx.analysis;
    std::vector<const OpAnalysis*> shown;
    for (const OpAnalysis& op : a.ops) shown.push_back(&op);
    if (opt.top > 0) {
        std::stable_sort(shown.begin(), shown.end(),
                         [](const OpAnalysis* x, const OpAnalysis* y) { return x->roofline->time_s > y->roofline->time_s; });
        if (shown.size() > opt.top) shown.resize(opt.top);
    }
    const bool model = a.has_kernel_model;
    std::vector<Row> rows;
    Row head = {"#", "op", "kind", "output", "FLOPs", "bytes", "FLOP/B", "bound", "time", "%"};
    std::vector<bool> right = {true, false, false, false, true, true, true, false, true, true};
    if (model) {
        head.insert(head.end(), {"modelled", "eff"});
        right.insert(right.end(), {true, true});
    }
    rows.push_back(head);
    for (const OpAnalysis* op : shown) {
        const Node& n = ctx.graph.node(op->node);
        const OpRoofline& r = *op->roofline;
        const auto& hbm = r.levels.front();
        Row row = {std::to_string(op->node + 1),
                   n.name,
                   std::string(op_name(n.kind)),
                   desc_str(ctx.graph.tensor(n.outputs.front()).desc),
                   human_si(static_cast<double>(r.work.flops()), ""),
                   human_bytes(static_cast<double>(r.work.bytes())),
                   hbm.intensity ? human_intensity(*hbm.intensity) : "-",
                   bound_label(r.bound),
                   human_time(r.time_s),
                   fmt::format("{:.1f}", a.time_s > 0 ? 100.0 * r.time_s / a.time_s : 0.0)};
        if (model) {
            row.push_back(op->modelled ? human_time(op->modelled->time_s) : "-");
            row.push_back(op->modelled && op->modelled->time_s > 0
                              ? fmt::format("{:.0f}%", 100.0 * op->modelled->lower_bound_s / op->modelled->time_s)
                              : "-");
        }
        rows.push_back(std::move(row));
    }
    Row total = {"",
                 "total",
                 "",
                 fmt::format("{} ops", a.ops.size()),
                 human_si(static_cast<double>(a.total.flops()), ""),
                 human_bytes(static_cast<double>(a.total.bytes())),
                 a.total.bytes() > 0 ? human_intensity(static_cast<double>(a.total.flops()) / static_cast<double>(a.total.bytes())) : "-",
                 "",
                 human_time(a.time_s),
                 "100.0"};
    if (model) {
        total.push_back(human_time(a.modelled_time_s));
        total.push_back(a.modelled_time_s > 0 ? fmt::format("{:.0f}%", 100.0 * a.time_s / a.modelled_time_s) : "-");
    }
    rows.push_back(std::move(total));
    std::string out = fmt::format("{} ({} mode) on {} — hierarchical roofline lower bound per op{}\n", ctx.graph.name, ctx.mode,
                                  ctx.hw.display_name, model ? ", and the L1 kernel model's time (eff = bound / modelled)" : "");
    if (opt.top > 0) out += fmt::format("showing the {} slowest of {} ops\n", shown.size(), a.ops.size());
    out += "\n" + render_rows(rows, right) + "\n";
    out += fmt::format("parameters {} ({}); FLOPs {}; device-memory traffic {}; lower-bound time {}; {}FLOP/s achieved\n",
                       human_si(static_cast<double>(a.parameter_count), ""), human_bytes(static_cast<double>(a.parameter_bytes)),
                       human_si(static_cast<double>(a.total.flops()), ""), human_bytes(static_cast<double>(a.total.bytes())),
                       human_time(a.time_s), human_si(a.time_s > 0 ? static_cast<double>(a.total.flops()) / a.time_s : 0, ""));
    if (ctx.mode == "training") {
        out += "by phase:     ";
        for (Phase p : {Phase::forward, Phase::backward, Phase::optimizer}) {
            const PhaseTotals& pt = a.by_phase[static_cast<int>(p)];
            out += fmt::format("  {} {} FLOPs, {}, {} ({:.1f}%, {} ops)", phase_name(p), human_si(static_cast<double>(pt.work.flops()), ""),
                               human_bytes(static_cast<double>(pt.work.bytes())), human_time(pt.time_s),
                               a.time_s > 0 ? 100.0 * pt.time_s / a.time_s : 0.0, pt.ops);
        }
        out += "\n";
    }
    {
        const MemoryTimeline& m = a.memory;
        const MemoryLevel& dev = ctx.hw.device_memory();
        std::string parts;
        for (std::size_t c = 0; c < kMemoryCategories; ++c) {
            if (m.at_peak[c] == 0) continue;
            parts += fmt::format("{}{} {}", parts.empty() ? "" : ", ", category_name(static_cast<MemoryCategory>(c)),
                                 human_bytes(static_cast<double>(m.at_peak[c])));
        }
        out += fmt::format("peak memory:    {} at '{}' ({}); {} {} of {}\n", human_bytes(static_cast<double>(m.peak_bytes)),
                           m.steps.empty() ? "-" : ctx.graph.node(m.steps[m.peak_step].node).name, parts,
                           static_cast<double>(m.peak_bytes) <= dev.capacity_bytes.value ? "fits in" : "DOES NOT FIT in",
                           human_bytes(dev.capacity_bytes.value), dev.name);
    }
    out +=
        fmt::format("schedule:       {} on {} stream{} ({}); critical path {} through {} ops\n", human_time(a.schedule.step_time_s),
                    a.schedule.streams, a.schedule.streams == 1 ? "" : "s", a.has_kernel_model ? "modelled kernel times" : "lower bounds",
                    human_time(a.schedule.critical_path_s), a.schedule.critical_path.size());
    out += "time by bound:";
    for (const auto& [k, v] : shares_by_label(a.by_bound)) {
        out += fmt::format("  {} {:.1f}% ({} ops)", k, a.time_s > 0 ? 100.0 * v.time_s / a.time_s : 0.0, v.ops);
    }
    out += "\n";
    if (ctx.parallel != nullptr) {
        const ParallelAnalysis& p = *ctx.parallel;
        std::string parts;
        for (std::size_t c = 0; c < kMemoryCategories; ++c) {
            if (p.peak_bytes_by_category[c] == 0) continue;
            parts += fmt::format("{}{} {}", parts.empty() ? "" : ", ", category_name(static_cast<MemoryCategory>(c)),
                                 human_bytes(static_cast<double>(p.peak_bytes_by_category[c])));
        }
        const std::string tp =
            p.tp > 1 ? fmt::format(" (compute includes {} tensor-parallel all-reduces, {} of {} each, {} in all)", p.tp_collectives,
                                   human_time(p.tp_example.time_s), human_bytes(p.tp_example.bytes), human_time(p.tp_comm_s))
                     : "";
        const std::string cp =
            p.cp <= 1 ? ""
            : p.options.cp_comm == CpComm::ring
                ? fmt::format(
                      " (and {} context-parallel ring send/recv steps of keys, values and their gradients, {} in all, {} not "
                      "hidden by attention)",
                      p.cp_collectives, human_time(p.cp_comm_s), human_time(p.cp_exposed_s))
            : p.options.cp_comm == CpComm::ulysses
                ? fmt::format(
                      " (and {} context-parallel Ulysses all-to-alls of queries, keys, values, outputs and their gradients, {} in all)",
                      p.cp_collectives, human_time(p.cp_comm_s))
                : fmt::format(" (and {} context-parallel key/value all-gathers and their gradients' reduce-scatters, {} in all)",
                              p.cp_collectives, human_time(p.cp_comm_s));
        const std::string cp_note =
            cp_runs_flash(p.cp, p.options.cp_comm)
                ? "\nnote:           context parallelism (ring/allgather) runs attention fused: ring attention needs "
                  "the online softmax (TransformerEngine)"
                : "";
        const std::string ep = p.ep > 1 ? fmt::format(" (and {} expert-parallel all-to-alls over {} ranks, {} in all)", p.ep_collectives,
                                                      p.ep, human_time(p.ep_comm_s))
                                        : "";
        out += fmt::format(
            "parallel:       tp {} x {}pp {} x dp {} = {} ranks on {} ({} node{}), ZeRO-{}, {} micro-batch{} a rank: step {} = compute "
            "{}{} "
            "+ exposed "
            "data-parallel "
            "communication {} (of {} in {} collectives){}; per rank peak memory {} ({}) {} {}; MFU {:.1f}%{}{}\n",
            p.tp, p.cp > 1 ? fmt::format("cp {} x ", p.cp) : "", p.pp, p.options.dp, p.devices, p.cluster, p.nodes, p.nodes == 1 ? "" : "s",
            p.options.zero, p.micro_batches, p.micro_batches == 1 ? "" : "es", human_time(p.step_time_s), human_time(p.compute_s),
            p.pp > 1 ? fmt::format(" (pipeline{}: bubble {:.1f}%, sends {})",
                                   p.interleave > 1 ? fmt::format(", {} virtual stages a device", p.interleave) : "",
                                   100.0 * p.bubble_fraction, human_time(p.p2p_s))
                     : "",
            human_time(p.exposed_comm_s), human_time(p.comm_s), p.comms.size(), tp + cp + ep,
            human_bytes(static_cast<double>(p.peak_bytes)), parts,
            static_cast<double>(p.peak_bytes) <= ctx.hw.device_memory().capacity_bytes.value ? "fits in" : "DOES NOT FIT in",
            human_bytes(ctx.hw.device_memory().capacity_bytes.value), 100.0 * p.mfu,
            p.tokens_per_s > 0 ? fmt::format("; {} tokens/s", human_si(p.tokens_per_s, "")) : "", cp_note);
    }
    return out;
}

std::string render_hardware(const Hardware& hw) {
    std::string out = fmt::format("{} ({}, {}) — {}\n", hw.display_name, hw.name, kind_name(hw.kind), hw.origin);
    auto line = [&](const std::string& what, const std::string& value, const SourcedValue& s) {
        out += fmt::format("  {:<28} {:>14}  [{}]{}\n", what, value, s.source, s.note.empty() ? "" : "  " + s.note);
    };
    line("clock", human_si(hw.clock_hz.value, "Hz"), hw.clock_hz);
    if (hw.base_clock_hz) line("base clock", human_si(hw.base_clock_hz->value, "Hz"), *hw.base_clock_hz);
    if (hw.power_w) line("board power", fmt::format("{:.0f} W", hw.power_w->value), *hw.power_w);
    if (hw.process_nm) line("process", fmt::format("{:g} nm", hw.process_nm->value), *hw.process_nm);
    if (hw.matrix_flop_per_s.empty()) out += fmt::format("  {:<28} {:>14}\n", "matrix units", "none");
    for (const auto& [d, s] : hw.matrix_flop_per_s) line(fmt::format("matrix {}", dtype_name(d)), human_si(s.value, "FLOP/s"), s);
    for (const auto& [d, s] : hw.vector_flop_per_s) line(fmt::format("vector {}", dtype_name(d)), human_si(s.value, "FLOP/s"), s);
    line("transcendental", human_si(hw.transcendental_per_s.value, "op/s"), hw.transcendental_per_s);
    for (const MemoryLevel& l : hw.memory) {
        if (!l.technology.empty()) out += fmt::format("  {:<28} {:>14}\n", l.name + " technology", l.technology);
        line(l.name + " capacity", human_bytes(l.capacity_bytes.value), l.capacity_bytes);
        line(l.name + " bandwidth", human_si(l.bytes_per_s.value, "B/s"), l.bytes_per_s);
    }
    if (hw.gpu) {
        out += fmt::format("  {:<28} {:>14}\n", "compute capability", hw.gpu->compute_capability.str());
        line("SMs", fmt::format("{:.0f}", hw.gpu->sm_count.value), hw.gpu->sm_count);
        line("max threads / SM", fmt::format("{:.0f}", hw.gpu->max_threads_per_sm.value), hw.gpu->max_threads_per_sm);
        line("registers / SM", fmt::format("{:.0f}", hw.gpu->registers_per_sm.value), hw.gpu->registers_per_sm);
        line("shared memory / SM", human_bytes(hw.gpu->shared_memory_per_sm_bytes.value), hw.gpu->shared_memory_per_sm_bytes);
    }
    if (hw.tpu) {
        line("TensorCores", fmt::format("{:.0f}", hw.tpu->tensor_cores.value), hw.tpu->tensor_cores);
        line("MXUs per core", fmt::format("{:.0f}", hw.tpu->mxus_per_core.value), hw.tpu->mxus_per_core);
        line("MXU size", fmt::format("{:.0f}x{:.0f}", hw.tpu->mxu_rows.value, hw.tpu->mxu_cols.value), hw.tpu->mxu_rows);
    }
    line("launch overhead", human_time(hw.launch_overhead_s.value), hw.launch_overhead_s);
    line("host link " + hw.host_link.name, human_si(hw.host_link.bytes_per_s.value, "B/s"), hw.host_link.bytes_per_s);
    line("interconnect " + hw.interconnect.name, human_si(hw.interconnect.bytes_per_s.value, "B/s"), hw.interconnect.bytes_per_s);
    if (hw.achieved.dram_bytes_per_s || hw.achieved.l2_bytes_per_s || hw.achieved.sustained_clock_hz || hw.achieved.matrix_flop_per_s) {
        out += "  achieved (published measurements of this chip):\n";
        if (hw.achieved.dram_bytes_per_s)
            line("  DRAM (stream)", human_si(hw.achieved.dram_bytes_per_s->value, "B/s"), *hw.achieved.dram_bytes_per_s);
        if (hw.achieved.l2_bytes_per_s) line("  L2", human_si(hw.achieved.l2_bytes_per_s->value, "B/s"), *hw.achieved.l2_bytes_per_s);
        if (hw.achieved.sustained_clock_hz)
            line("  sustained clock", human_si(hw.achieved.sustained_clock_hz->value, "Hz"), *hw.achieved.sustained_clock_hz);
        if (hw.achieved.matrix_flop_per_s)
            line("  matrix bf16 (best GEMM)", human_si(hw.achieved.matrix_flop_per_s->value, "FLOP/s"), *hw.achieved.matrix_flop_per_s);
        if (hw.achieved.matrix_flop_per_s_fp8)
            line("  matrix fp8 (GEMM)", human_si(hw.achieved.matrix_flop_per_s_fp8->value, "FLOP/s"), *hw.achieved.matrix_flop_per_s_fp8);
    }
    out += "  ridge points (FLOP/byte):\n";
    auto ridges = [&](const char* unit, const std::map<DType, Sourced<unit::flop_per_s>>& peaks) {
        for (const auto& [d, s] : peaks) {
            std::string row = fmt::format("    {:<22}", fmt::format("{} {}", unit, dtype_name(d)));
            for (const MemoryLevel& l : hw.memory) row += fmt::format("  {} {:>8.1f}", l.name, ridge_point(s.value, l));
            out += row + "\n";
        }
    };
    ridges("matrix", hw.matrix_flop_per_s);
    ridges("vector", hw.vector_flop_per_s);
    out += "  sources:\n";
    for (const auto& [k, v] : hw.sources) out += fmt::format("    [{}] {}\n", k, v);
    return out;
}

std::string render_hardware_list() {
    std::string out;
    for (const std::string& name : builtin_hardware_names()) {
        const Hardware hw = builtin_hardware(name);
        const auto& mem = hw.device_memory();
        auto best = std::max_element(hw.matrix_flop_per_s.begin(), hw.matrix_flop_per_s.end(),
                                     [](const auto& x, const auto& y) { return (x.first == DType::bf16) < (y.first == DType::bf16); });
        const std::string peak = best == hw.matrix_flop_per_s.end()
                                     ? fmt::format("vector f32 {}", human_si(hw.vector_flop_per_s.at(DType::f32).value, "FLOP/s"))
                                     : fmt::format("matrix {} {}", dtype_name(best->first), human_si(best->second.value, "FLOP/s"));
        out += fmt::format("{:<15} {:<32} {:>4}  {:>10} {:<6} {:<6}  {:>12}  {}\n", hw.name, hw.display_name, kind_name(hw.kind),
                           human_bytes(mem.capacity_bytes.value), mem.name, mem.technology.empty() ? "-" : mem.technology,
                           human_si(mem.bytes_per_s.value, "B/s"), peak);
    }
    return out;
}

void write_file_atomic(const std::string& path, const std::string& content) { commit_files({{path, content}}); }

}  // namespace roofline
