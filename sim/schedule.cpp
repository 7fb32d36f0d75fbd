#include "sim/schedule.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <queue>

#include "ops/error.hpp"
#include "ops/op_rule.hpp"

namespace roofline {

Schedule schedule_graph(const Graph& g, const std::vector<double>& durations, const ScheduleOptions& opt) {
    if (opt.streams < 1) throw InputError("schedule: --streams must be at least 1");
    const std::size_t n = g.nodes().size();
    if (durations.size() != n) throw InputError("schedule: one duration per node is needed");
    Schedule s;
    s.streams = opt.streams;
    s.ops.resize(n);
    std::vector<double> finish(n, 0), longest(n, 0);
    std::vector<NodeId> via(n, kNoNode);
    // Streams ordered by when they become free (min-heap of (free time, stream)).
    using Slot = std::pair<double, int>;
    std::priority_queue<Slot, std::vector<Slot>, std::greater<>> free;
    for (int i = 0; i < opt.streams; ++i) free.push({0.0, i});
    std::int64_t issued = 0;  // kernels launched so far
    for (NodeId id : g.topological_order()) {
        const auto i = static_cast<std::size_t>(id);
        double ready = 0, chain = 0;
        NodeId pred = kNoNode;
        for (TensorId t : g.node(id).inputs) {
            const NodeId p = g.tensor(t).producer;
            if (p == kNoNode) continue;
            const auto pi = static_cast<std::size_t>(p);
            ready = std::max(ready, finish[pi]);
            if (longest[pi] > chain) {
                chain = longest[pi];
                pred = p;
            }
        }
        const double d = durations[i];
        longest[i] = chain + d;
        via[i] = pred;
        ScheduledOp& op = s.ops[i];
        op.node = id;
        if (d <= 0) {  // views and other free ops: no stream time
            op.start_s = op.end_s = ready;
        } else {
            Slot slot = free.top();
            free.pop();
            op.stream = slot.second;
            ++issued;
            op.start_s = std::max({ready, slot.first, static_cast<double>(issued) * opt.launch_overhead_s});
            op.end_s = op.start_s + d;
            free.push({op.end_s, slot.second});
        }
        finish[i] = op.end_s;
        s.busy_s += d;
        s.step_time_s = std::max(s.step_time_s, op.end_s);
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

std::string chrome_trace_json(const Graph& g, const Schedule& s) {
    nlohmann::ordered_json events = nlohmann::ordered_json::array();
    for (int st = 0; st < s.streams; ++st) {
        events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 1}, {"tid", st}, {"args", {{"name", "stream " + std::to_string(st)}}}});
    }
    for (const ScheduledOp& op : s.ops) {
        if (op.end_s <= op.start_s) continue;
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
    nlohmann::ordered_json doc;
    doc["traceEvents"] = std::move(events);
    doc["displayTimeUnit"] = "ns";
    doc["otherData"] = {{"generator", "roofline"}, {"step_time_s", s.step_time_s}, {"critical_path_s", s.critical_path_s}};
    return doc.dump() + "\n";
}

}  // namespace roofline
