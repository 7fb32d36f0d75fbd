#include "sim/schedule.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <queue>

#include "ops/error.hpp"
#include "ops/op_rule.hpp"

namespace roofline {

void contracted_order(const Graph& g, const std::vector<int>* group_of_ptr, std::vector<NodeId>& flat, std::vector<std::size_t>& offsets) {
    const std::size_t n = g.nodes().size();
    flat.clear();
    offsets.assign(1, 0);
    if (group_of_ptr == nullptr) {
        for (NodeId id : g.topological_order()) {
            flat.push_back(id);
            offsets.push_back(flat.size());
        }
        return;
    }
    const std::vector<int>& group_of = *group_of_ptr;
    if (group_of.size() != n) throw InputError("schedule: one fusion group entry per node is needed");
    int groups = 0;
    for (int gi : group_of) groups = std::max(groups, gi + 1);
    auto unit = [&](NodeId v) {
        return group_of[static_cast<std::size_t>(v)] >= 0 ? static_cast<std::size_t>(group_of[static_cast<std::size_t>(v)])
                                                          : static_cast<std::size_t>(groups) + static_cast<std::size_t>(v);
    };
    const std::size_t units = static_cast<std::size_t>(groups) + n;
    std::vector<std::vector<NodeId>> members(units);
    std::vector<std::vector<std::size_t>> next(units);
    std::vector<std::size_t> indegree(units, 0);
    for (NodeId v : g.topological_order()) {
        members[unit(v)].push_back(v);
        for (TensorId t : g.node(v).inputs) {
            const NodeId p = g.tensor(t).producer;
            if (p == kNoNode || unit(p) == unit(v)) continue;
            next[unit(p)].push_back(unit(v));
            ++indegree[unit(v)];
        }
    }
    using Item = std::pair<NodeId, std::size_t>;  // (first member, unit)
    std::priority_queue<Item, std::vector<Item>, std::greater<>> ready;
    for (std::size_t u = 0; u < units; ++u) {
        if (!members[u].empty() && indegree[u] == 0) ready.push({members[u].front(), u});
    }
    while (!ready.empty()) {
        const std::size_t u = ready.top().second;
        ready.pop();
        for (NodeId v : members[u]) flat.push_back(v);
        offsets.push_back(flat.size());
        for (std::size_t w : next[u]) {
            if (--indegree[w] == 0) ready.push({members[w].front(), w});
        }
    }
    if (flat.size() != n) throw InputError("schedule: the fusion groups make the graph cyclic");
}

Schedule schedule_graph(const Graph& g, const std::vector<double>& durations, const ScheduleOptions& opt) {
    if (opt.streams < 1) throw InputError("schedule: --streams must be at least 1");
    const std::size_t n = g.nodes().size();
    if (durations.size() != n) throw InputError("schedule: one duration per node is needed");
    Schedule s;
    s.streams = opt.streams;
    s.ops.resize(n);
    std::vector<double> finish(n, 0), longest(n, 0);
    std::vector<NodeId> via(n, kNoNode);
    std::vector<NodeId> flat;
    std::vector<std::size_t> offsets;
    contracted_order(g, opt.group_of, flat, offsets);
    // Streams ordered by when they become free (min-heap of (free time, stream)).
    using Slot = std::pair<double, int>;
    std::priority_queue<Slot, std::vector<Slot>, std::greater<>> free;
    for (int i = 0; i < opt.streams; ++i) free.push({0.0, i});
    std::int64_t issued = 0;  // kernels launched so far
    double host_clock = 0;    // eager runtime: when the host has dispatched the unit's nodes
    std::vector<bool> inside(opt.group_of != nullptr ? n : 0, false);
    for (std::size_t u = 0; u + 1 < offsets.size(); ++u) {
        const std::size_t b = offsets[u], e = offsets[u + 1];
        if (!inside.empty()) {
            for (std::size_t i = b; i < e; ++i) inside[static_cast<std::size_t>(flat[i])] = true;
        }
        double ready = 0, chain = 0, d = 0;
        NodeId pred = kNoNode;
        for (std::size_t i = b; i < e; ++i) {
            const NodeId id = flat[i];
            d += durations[static_cast<std::size_t>(id)];
            if (opt.host_s != nullptr) host_clock += (*opt.host_s)[static_cast<std::size_t>(id)];
            for (TensorId t : g.node(id).inputs) {
                const NodeId p = g.tensor(t).producer;
                if (p == kNoNode || (!inside.empty() && inside[static_cast<std::size_t>(p)])) continue;
                const auto pi = static_cast<std::size_t>(p);
                ready = std::max(ready, finish[pi]);
                if (longest[pi] > chain) {
                    chain = longest[pi];
                    pred = p;
                }
            }
        }
        double start = ready, end = ready;
        int stream = 0;
        if (d > 0) ++issued;
        const double issue = opt.host_s != nullptr ? host_clock : static_cast<double>(issued) * opt.launch_overhead_s;
        if (d > 0) {  // views and other free ops take no stream time
            Slot slot = free.top();
            free.pop();
            stream = slot.second;
            start = std::max({ready, slot.first, issue});
            end = start + d;
            free.push({end, slot.second});
        }
        for (std::size_t i = b; i < e; ++i) {
            const NodeId id = flat[i];
            const auto k = static_cast<std::size_t>(id);
            ScheduledOp& op = s.ops[k];
            op.node = id;
            op.stream = stream;
            op.start_s = start;
            op.end_s = end;
            op.kernel_s = durations[k];
            op.issue_s = issue;
            finish[k] = end;
            longest[k] = chain + d;
            via[k] = i == b ? pred : flat[i - 1];
        }
        if (!inside.empty()) {
            for (std::size_t i = b; i < e; ++i) inside[static_cast<std::size_t>(flat[i])] = false;
        }
        s.busy_s += d;
        s.step_time_s = std::max({s.step_time_s, end, host_clock});
    }
    if (n > 0) {
        std::size_t last = 0;
        for (std::size_t i = 1; i < n; ++i) {
            if (longest[i] > longest[last]) last = i;
        }
        s.critical_path_s = longest[last];
        for (NodeId c = static_cast<NodeId>(last); c != kNoNode; c = via[static_cast<std::size_t>(c)]) s.critical_path.push_back(c);
        std::reverse(s.critical_path.begin(), s.critical_path.end());
    }
    return s;
}

std::vector<PipelineBlock> pipeline_timeline(const std::vector<double>& fwd, const std::vector<double>& bwd, int m, double hop) {
    const int p = static_cast<int>(fwd.size());
    std::vector<std::vector<std::pair<bool, int>>> order(static_cast<std::size_t>(p));
    for (int st = 0; st < p; ++st) {
        auto& o = order[static_cast<std::size_t>(st)];
        const int warm = std::min(p - st - 1, m);
        for (int i = 0; i < warm; ++i) o.emplace_back(false, i);
        for (int i = 0; i + warm < m; ++i) o.emplace_back(false, warm + i), o.emplace_back(true, i);
        for (int i = m - warm; i < m; ++i) o.emplace_back(true, i);
    }
    const auto n = static_cast<std::size_t>(m);
    std::vector<std::vector<double>> f_end(static_cast<std::size_t>(p), std::vector<double>(n, -1)), b_end = f_end;
    std::vector<std::size_t> next(static_cast<std::size_t>(p), 0);
    std::vector<double> clock(static_cast<std::size_t>(p), 0);
    std::vector<PipelineBlock> blocks;
    for (bool progress = true; progress;) {
        progress = false;
        for (int st = 0; st < p; ++st) {
            const auto su = static_cast<std::size_t>(st);
            while (next[su] < order[su].size()) {
                const auto [backward, i] = order[su][next[su]];
                const auto iu = static_cast<std::size_t>(i);
                double ready = 0;
                if (!backward && st > 0) {
                    if (f_end[su - 1][iu] < 0) break;
                    ready = f_end[su - 1][iu] + hop;
                } else if (backward && st + 1 < p) {
                    if (b_end[su + 1][iu] < 0) break;
                    ready = b_end[su + 1][iu] + hop;
                }
                PipelineBlock b{st, i, backward, std::max(ready, clock[su]), 0};
                b.end_s = b.start_s + (backward ? bwd[su] : fwd[su]);
                clock[su] = b.end_s;
                (backward ? b_end : f_end)[su][iu] = b.end_s;
                blocks.push_back(b);
                ++next[su];
                progress = true;
            }
        }
    }
    return blocks;
}

int drawn_micro_batches(int stages, int micro_batches) { return std::min(micro_batches, std::max(2 * stages, 3000 / std::max(1, stages))); }

std::string chrome_trace_json(const Graph& g, const Schedule& s, const std::vector<PipelineBlock>* pipeline) {
    nlohmann::ordered_json events = nlohmann::ordered_json::array();
    for (int st = 0; st < s.streams; ++st) {
        events.push_back(
            {{"name", "thread_name"}, {"ph", "M"}, {"pid", 1}, {"tid", st}, {"args", {{"name", "stream " + std::to_string(st)}}}});
    }
    for (const ScheduledOp& op : s.ops) {
        if (op.kernel_s <= 0 || op.end_s <= op.start_s) continue;
        const Node& node = g.node(op.node);
        nlohmann::ordered_json e;
        e["name"] = node.name;
        e["cat"] = std::string(phase_name(node.phase)) + "," + std::string(family_name(rule_of(node.kind).family));
        e["ph"] = "X";
        e["ts"] = op.start_s * 1e6;
        e["dur"] = (op.end_s - op.start_s) * 1e6;
        e["pid"] = 1;
        e["tid"] = op.stream;
        e["args"] = {{"op", op_name(node.kind)}, {"phase", phase_name(node.phase)}};
        events.push_back(std::move(e));
    }
    // The pipeline: one lane per stage's ranks, the micro-batches' forward and backward passes.
    if (pipeline != nullptr && !pipeline->empty()) {
        events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", 2}, {"args", {{"name", "pipeline (1F1B, one rank a stage)"}}}});
        int stages = 0;
        for (const PipelineBlock& b : *pipeline) stages = std::max(stages, b.stage + 1);
        for (int st = 0; st < stages; ++st)
            events.push_back(
                {{"name", "thread_name"}, {"ph", "M"}, {"pid", 2}, {"tid", st}, {"args", {{"name", "stage " + std::to_string(st + 1)}}}});
        for (const PipelineBlock& b : *pipeline) {
            nlohmann::ordered_json e;
            e["name"] = std::string(b.backward ? "backward " : "forward ") + std::to_string(b.micro_batch + 1);
            e["cat"] = b.backward ? "backward" : "forward";
            e["ph"] = "X";
            e["ts"] = b.start_s * 1e6;
            e["dur"] = (b.end_s - b.start_s) * 1e6;
            e["pid"] = 2;
            e["tid"] = b.stage;
            e["args"] = {{"micro_batch", b.micro_batch + 1}, {"stage", b.stage + 1}};
            events.push_back(std::move(e));
        }
    }
    nlohmann::ordered_json doc;
    doc["traceEvents"] = std::move(events);
    doc["displayTimeUnit"] = "ns";
    doc["otherData"] = {{"generator", "roofline"}, {"step_time_s", s.step_time_s}, {"critical_path_s", s.critical_path_s}};
    return doc.dump() + "\n";
}

}  // namespace roofline
