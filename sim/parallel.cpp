#include "sim/parallel.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>
#include <string_view>
#include <set>
#include <fmt/format.h>

#include "ops/error.hpp"
#include "ops/op_rule.hpp"
#include "sim/fusion.hpp"
#include "sim/roofline.hpp"
#include "sim/views.hpp"

namespace roofline {

namespace {

// ZeRO's per-rank share of each memory category (Rajbhandari et al., SC20, section 5): stage 1
// partitions the optimizer state, stage 2 also the gradients, stage 3 also the parameters.
double shard_of(MemoryCategory c, int zero, int dp) {
    const double part = 1.0 / dp;
    switch (c) {
        case MemoryCategory::optimizer_state: return zero >= 1 ? part : 1.0;
        case MemoryCategory::gradients: return zero >= 2 ? part : 1.0;
        case MemoryCategory::weights: return zero >= 3 ? part : 1.0;
        default: return 1.0;
    }
}

// The index of the layer a node belongs to: the component (between dots or slashes) `prefix` +
// digits in its name ("h7" in "grad.h7.mlp.up.3" and "recompute/h7.attn.scores"), -1 when none.
int layer_in(std::string_view name, std::string_view prefix) {
    if (prefix.empty()) return -1;
    std::size_t at = 0;
    while (at <= name.size()) {
        const std::size_t dot = std::min(name.find_first_of("./", at), name.size());
        const std::string_view part = name.substr(at, dot - at);
        if (part.size() > prefix.size() && part.compare(0, prefix.size(), prefix) == 0 && part.size() - prefix.size() <= 6 &&
            std::all_of(part.begin() + static_cast<std::ptrdiff_t>(prefix.size()), part.end(),
                        [](char ch) { return ch >= '0' && ch <= '9'; }))
            return std::stoi(std::string(part.substr(prefix.size())));
        at = dot + 1;
    }
    return -1;
}

// A step's memory steps and saved activations in context parallelism's form `form` (the graph's
// own, the all-gather form, without context parallelism).
const std::vector<StageProfile::MemoryAt>& memory_of(const StageProfile& g, CpComm form) {
    if (form == CpComm::ring && !g.ring_memory.empty()) return g.ring_memory;
    if (form == CpComm::ulysses && !g.ulysses_memory.empty()) return g.ulysses_memory;
    return g.memory;
}
std::int64_t saved_activations_of(const StageProfile& g, CpComm form) {
    return form != CpComm::all_gather && !g.ring_memory.empty() ? g.cp_saved_activation_bytes : g.saved_activation_bytes;
}

// The ZeRO shares of a step's memory for `zero` over `reducers` ranks: the peak step's total and
// categories, ZeRO-3's gathered parameters and the accumulated gradients of K > 1 micro-batches added.
std::pair<std::int64_t, CategoryBytes> peak_of(const StageProfile& g, CpComm form, int zero, int reducers, int K, bool persistent) {
    const auto accumulated =
        static_cast<std::int64_t>(static_cast<double>(g.gradient_bytes) * shard_of(MemoryCategory::gradients, zero, reducers));
    const std::int64_t largest_parameter = g.largest_parameter;
    std::int64_t peak = 0;
    CategoryBytes at{};
    for (const StageProfile::MemoryAt& step : memory_of(g, form)) {
        const CategoryBytes& bytes = step.bytes;
        CategoryBytes scaled{};
        std::int64_t total = 0;
        for (std::size_t c = 0; c < kMemoryCategories; ++c) {
            scaled[c] = static_cast<std::int64_t>(static_cast<double>(bytes[c]) * shard_of(static_cast<MemoryCategory>(c), zero, reducers));
            total += scaled[c];
        }
        if (zero == 3 && reducers > 1) {
            scaled[static_cast<std::size_t>(MemoryCategory::weights)] += 2 * largest_parameter;
            total += 2 * largest_parameter;
        }
        // Accumulated gradients stay allocated through every later micro-batch; a persistent buffer
        // through the whole step.
        if (K > 1 || persistent) {
            const auto gi = static_cast<std::size_t>(MemoryCategory::gradients);
            const std::int64_t held = accumulated - scaled[gi];
            if (held > 0) scaled[gi] += held, total += held;
        }
        if (total > peak) peak = total, at = scaled;
    }
    return {peak, at};
}

// One stream in program order (sim/schedule.cpp with one stream, fusion groups at their anchors): a kernel starts when
// the previous one has ended and the host has issued it; an op without a kernel ends when the
// kernel it waits for did. Sets every op's end and the step's end (the host's last issue included).
void replay(std::vector<StageProfile::Op>& ops, double& step) {
    double gpu = 0;
    step = 0;
    for (StageProfile::Op& op : ops) {
        if (op.kernel_s <= 0) continue;
        op.end_s = std::max(gpu, op.issue_s) + op.kernel_s;
        gpu = op.end_s;
    }
    // Then the ops without a kernel (a fused group's members before its anchor wait for a later one).
    for (StageProfile::Op& op : ops) {
        if (op.kernel_s <= 0) op.end_s = op.view_of >= 0 ? ops[static_cast<std::size_t>(op.view_of)].end_s : 0.0;
        step = std::max({step, op.end_s, op.issue_s});
    }
}

// A profile's ops ready to replay: each op without a kernel ends with the latest kernel among its
// producers, the nearest earlier kernel that ended then (view_of; a fused group's member before its
// anchor: the nearest later one). Empty when replaying them does not give the schedule back (more
// than one stream, a fusion whose kernels do not run in program order).
std::vector<StageProfile::Op> replayable_ops(const StageProfile& p) {
    std::vector<StageProfile::Op> ops = p.ops;
    if (p.streams != 1) return {};
    for (std::size_t i = 0; i < ops.size(); ++i) {
        StageProfile::Op& op = ops[i];
        if (op.kernel_s > 0 || op.end_s <= 0) continue;
        for (std::size_t j = i; j-- > 0;)
            if (ops[j].kernel_s > 0 && ops[j].end_s == op.end_s) {
                op.view_of = static_cast<int>(j);
                break;
            }
        // A fused group's member before its anchor (a flash kernel's Q K^T, scale and mask) ends with
        // the group's kernel, which runs at the anchor: the nearest later kernel that ended then.
        for (std::size_t j = i + 1; op.view_of < 0 && j < ops.size(); ++j)
            if (ops[j].kernel_s > 0 && ops[j].end_s == op.end_s) op.view_of = static_cast<int>(j);
    }
    std::vector<StageProfile::Op> again = ops;
    double step = 0;
    replay(again, step);
    if (step != p.schedule_end_s) return {};
    for (std::size_t i = 0; i < ops.size(); ++i)
        if (again[i].end_s != ops[i].end_s) return {};
    return ops;
}

// The node that reads x's output in forward, through views (the keys' Q K^T, the values' P V, or a
// composite attention op); kNoNode when none does.
NodeId reader_of(const Graph& g, NodeId x) {
    std::vector<NodeId> todo{x};
    while (!todo.empty()) {
        const NodeId at = todo.back();
        todo.pop_back();
        for (const TensorId t : g.node(at).outputs)
            for (const NodeId c : g.consumers(t)) {
                if (g.node(c).phase != Phase::forward) continue;
                if (!is_view(g.node(c))) return c;
                todo.push_back(c);
            }
    }
    return kNoNode;
}

// The forward nodes on the paths from `from` to `to` (both included; node ids are in topological
// order): an attention's Q K^T, scale, mask, softmax, dropout and P V. Empty when `to` is not
// reached.
std::vector<NodeId> nodes_between(const Graph& g, NodeId from, NodeId to) {
    std::set<NodeId> reached{from};
    std::vector<NodeId> todo{from};
    while (!todo.empty()) {
        const NodeId at = todo.back();
        todo.pop_back();
        for (const TensorId t : g.node(at).outputs)
            for (const NodeId c : g.consumers(t))
                if (c <= to && g.node(c).phase == Phase::forward && reached.insert(c).second) todo.push_back(c);
    }
    if (reached.count(to) == 0) return {};
    std::set<NodeId> on_path{to};
    for (auto it = reached.rbegin(); it != reached.rend(); ++it)
        for (const TensorId t : g.node(*it).outputs)
            for (const NodeId c : g.consumers(t))
                if (on_path.count(c) != 0) on_path.insert(*it);
    return {on_path.begin(), on_path.end()};
}

// A context-parallel attention: its gathered tensors (ContextParallelSplit gathers the keys, then
// the values: a pair when the keys' reader reaches the values'; a gathered tensor without a partner
// is an attention of its own), its forward nodes (those between the pair's readers, or the one
// reader), and the gather that ends last.
struct CpAttention {
    std::vector<NodeId> gathers, attention;
    NodeId at = kNoNode;
};

std::vector<CpAttention> cp_attentions(const Graph& g, const StageProfile& p) {
    std::vector<NodeId> gathers;
    for (const std::string& name : g.context_parallel.all_gather)
        if (const NodeId node = g.find_node(name); node != kNoNode) gathers.push_back(node);
    std::vector<CpAttention> out;
    for (std::size_t i = 0; i < gathers.size();) {
        CpAttention x;
        x.gathers = {gathers[i]};
        const NodeId first = reader_of(g, gathers[i]);
        if (i + 1 < gathers.size()) {
            const NodeId second = reader_of(g, gathers[i + 1]);
            if (first != kNoNode && second != kNoNode && first <= second) x.attention = nodes_between(g, first, second);
            if (!x.attention.empty()) x.gathers.push_back(gathers[i + 1]);
        }
        if (x.attention.empty() && first != kNoNode) x.attention = {first};
        i += x.gathers.size();
        x.at = x.gathers.front();
        for (const NodeId n : x.gathers)
            if (p.ops[static_cast<std::size_t>(n)].end_s > p.ops[static_cast<std::size_t>(x.at)].end_s) x.at = n;
        out.push_back(std::move(x));
    }
    return out;
}

double output_bytes(const Graph& g, NodeId n) { return static_cast<double>(g.tensor(g.node(n).outputs.front()).desc.bytes()); }

// The recomputed copies (selective or full recomputation) of each attention's first node, in
// schedule order: (attention index, the copy).
std::vector<std::pair<std::size_t, NodeId>> recomputed_attentions(const Graph& g, const Analysis& a, const std::vector<CpAttention>& atts) {
    std::map<NodeId, std::size_t> first;
    for (std::size_t i = 0; i < atts.size(); ++i)
        if (!atts[i].attention.empty()) first[atts[i].attention.front()] = i;
    std::vector<std::pair<std::size_t, NodeId>> out;
    for (const ScheduledOp& s : a.schedule.ops)
        if (const auto f = first.find(g.node(s.node).recomputes); f != first.end()) out.emplace_back(f->second, s.node);
    return out;
}

// Context parallelism's ring exchanges (StageProfile::Ring) of a step, one an attention and
// direction: forward at the later gather, again where a recomputed copy of the attention runs;
// backward at the last op of the attention's gradient.
void add_rings(const Graph& g, const Analysis& a, StageProfile& p, const std::vector<CpAttention>& atts,
               const std::vector<std::vector<const ScheduledOp*>>& gradient_ops) {
    std::vector<std::size_t> forward_of(atts.size());  // each attention's forward exchange
    for (std::size_t k = 0; k < atts.size(); ++k) {
        const CpAttention& x = atts[k];
        double kv_bytes = 0;
        for (const NodeId n : x.gathers) kv_bytes += output_bytes(g, n);
        double forward = 0, backward = 0;
        int last = -1;  // the last op of the attention's gradient
        for (const NodeId n : x.attention) {
            forward += p.ops[static_cast<std::size_t>(n)].kernel_s;
            for (const ScheduledOp* s : gradient_ops[static_cast<std::size_t>(n)]) {
                backward += s->kernel_s;
                if (last < 0 || s->end_s >= p.ops[static_cast<std::size_t>(last)].end_s) last = s->node;
            }
        }
        forward_of[k] = p.rings.size();
        p.rings.push_back({p.ops[static_cast<std::size_t>(x.at)].end_s, x.at, false, kv_bytes, forward});
        if (last >= 0) p.rings.push_back({p.ops[static_cast<std::size_t>(last)].end_s, last, true, kv_bytes, backward});
    }
    // A recomputed attention passes the blocks around again.
    for (const auto& [k, node] : recomputed_attentions(g, a, atts)) {
        StageProfile::Ring again = p.rings[forward_of[k]];
        again.at_s = p.ops[static_cast<std::size_t>(node)].end_s;
        again.op = node;
        p.rings.push_back(again);
    }
}

// Ulysses' all-to-alls (StageProfile::Group::ulysses; DeepSpeed-Ulysses, Jacobs et al. 2023
// section 3.1; TransformerEngine's AttnFuncWithCPAndQKVOA2A): each rank's send buffer is its
// sequence shard of the tensor (an all-to-all's bytes, sim/collectives.hpp): the queries, each
// gathered tensor's rank share (the keys and values, 1/cp of the gathered buffer) at the later
// gather, the output at the attention's last node; backward the output's gradient, the queries'
// and the keys' and values' at the last op of the attention's gradient (TransformerEngine runs the
// output gradient's before the attention's gradient and the others after it: the step waits for
// all of them either way). A recomputed attention runs its forward ones again. Also the query and
// key/value heads (StageProfile::cp_heads).
void add_ulysses(const Graph& g, const Analysis& a, StageProfile& p, const std::vector<CpAttention>& atts,
                 const std::vector<std::vector<const ScheduledOp*>>& gradient_ops) {
    const auto heads = [&](TensorId t) {
        const Shape& s = g.tensor(t).desc.shape;
        return s.size() == 4 ? static_cast<int>(s[1]) : 0;
    };
    struct Sizes {
        double q = 0, out = 0;
        std::vector<double> kv;  // each gathered tensor's rank share
        int q_at = -1, out_at = -1;
    };
    std::vector<Sizes> sizes(atts.size());
    for (std::size_t k = 0; k < atts.size(); ++k) {
        const CpAttention& x = atts[k];
        if (x.attention.empty()) continue;
        Sizes& z = sizes[k];
        const Node& first = g.node(x.attention.front());
        const NodeId last = x.attention.back();
        z.q = static_cast<double>(g.tensor(first.inputs.front()).desc.bytes());
        for (const NodeId n : x.gathers) z.kv.push_back(output_bytes(g, n) / p.cp);
        z.out = output_bytes(g, last);
        z.q_at = x.at, z.out_at = last;
        const int hq = heads(first.inputs.front()), hkv = heads(g.node(x.gathers.front()).outputs.front());
        p.cp_heads = p.cp_heads == 0 ? hq : std::min(p.cp_heads, hq);
        p.cp_kv_heads = p.cp_kv_heads == 0 ? hkv : std::min(p.cp_kv_heads, hkv);
    }
    const auto a2a = [&](int op, double bytes) {
        p.blocking.push_back({p.ops[static_cast<std::size_t>(op)].end_s, Collective::all_to_all, bytes, StageProfile::Group::ulysses, op});
    };
    const auto forward = [&](const Sizes& z, int q_at, int out_at) {
        a2a(q_at, z.q);
        for (const double kv : z.kv) a2a(q_at, kv);
        a2a(out_at, z.out);
    };
    for (std::size_t k = 0; k < atts.size(); ++k) {
        const Sizes& z = sizes[k];
        if (z.q_at < 0) continue;
        forward(z, z.q_at, z.out_at);
        int last = -1;
        for (const NodeId n : atts[k].attention)
            for (const ScheduledOp* s : gradient_ops[static_cast<std::size_t>(n)])
                if (last < 0 || s->end_s >= p.ops[static_cast<std::size_t>(last)].end_s) last = s->node;
        if (last < 0) continue;
        a2a(last, z.out);
        a2a(last, z.q);
        for (const double kv : z.kv) a2a(last, kv);
    }
    for (const auto& [k, node] : recomputed_attentions(g, a, atts))
        if (sizes[k].q_at >= 0) forward(sizes[k], node, node);
}

// The ring and Ulysses forms' memory (StageProfile::ring_memory, ulysses_memory) from the
// all-gather form's liveness (sim/memory.cpp: a tensor's storage, shared by its views, lives from
// the first node that touches it to the last): each gathered tensor (and a recomputed copy of it)
// and each backward tensor of its gradient before the gather's (the gradients of the views between
// it and attention, and the one the gather's own gradient splits) held at 1/cp over the steps the
// all-gather form holds it whole; ring attention's buffers added while its attention (or a
// recomputed copy) runs, and while its gradient runs. Tensors a fused kernel keeps on chip hold
// nothing in either form.
void add_cp_memory(const Graph& g, const Analysis& a, StageProfile& p, const std::vector<CpAttention>& atts,
                   const std::vector<std::vector<const ScheduledOp*>>& gradient_ops) {
    const std::size_t n = g.nodes().size(), nt = g.tensors().size();
    if (a.memory.steps.size() != n) return;
    for (std::size_t i = 0; i < n; ++i)
        if (a.memory.steps[i].node != static_cast<NodeId>(i)) return;
    std::vector<TensorId> root(nt);
    for (std::size_t t = 0; t < nt; ++t) root[t] = static_cast<TensorId>(t);
    std::vector<std::size_t> first(nt, n), last(nt, 0);
    std::vector<int> group_of(n, -1);
    for (const OpAnalysis& op : a.ops)
        if (op.node != kNoNode) group_of[static_cast<std::size_t>(op.node)] = op.fusion_group;
    for (std::size_t i = 0; i < n; ++i) {
        const Node& node = g.nodes()[i];
        if (is_view(node))
            for (const TensorId o : node.outputs) root[static_cast<std::size_t>(o)] = root[static_cast<std::size_t>(node.inputs.front())];
        for (const auto* list : {&node.inputs, &node.outputs})
            for (const TensorId t : *list) {
                const auto r = static_cast<std::size_t>(root[static_cast<std::size_t>(t)]);
                first[r] = std::min(first[r], i);
                last[r] = std::max(last[r], i);
            }
    }
    // What the memory timeline counts of a storage: nothing for a fused group's on-chip tensor
    // (produced and read only inside one group, sim/fusion.cpp finish_group).
    const auto held = [&](TensorId t) {
        const NodeId made = g.tensor(t).producer;
        if (made == kNoNode || group_of[static_cast<std::size_t>(made)] < 0) return true;
        const int grp = group_of[static_cast<std::size_t>(made)];
        for (const TensorId o : g.outputs())
            if (root[static_cast<std::size_t>(o)] == t) return true;
        for (const NodeId c : g.consumers(t))
            if (group_of[static_cast<std::size_t>(c)] != grp) return true;
        return false;
    };
    // Per category, the change a step at a time, as differences (applied at the end).
    using Delta = std::vector<CategoryBytes>;
    Delta shared(n + 1, CategoryBytes{}), ring(n + 1, CategoryBytes{});
    const auto add = [&](Delta& d, std::size_t from, std::size_t to, MemoryCategory c, std::int64_t bytes) {
        if (from > to || to >= n) return;
        d[from][static_cast<std::size_t>(c)] += bytes;
        d[to + 1][static_cast<std::size_t>(c)] -= bytes;
    };
    std::set<TensorId> reduced;  // storages already held at 1/cp
    const auto shrink = [&](TensorId t) {
        const auto r = static_cast<std::size_t>(root[static_cast<std::size_t>(t)]);
        if (!reduced.insert(static_cast<TensorId>(r)).second || first[r] >= n || !held(static_cast<TensorId>(r))) return;
        const std::int64_t bytes = g.tensors()[r].desc.bytes();
        const std::int64_t kept = bytes / p.cp;
        add(shared, first[r], last[r], a.memory.category[r], kept - bytes);
        if (a.memory.category[r] == MemoryCategory::activations) p.cp_saved_activation_bytes -= bytes - kept;
    };
    // The forward views of a tensor (through views), as sets of nodes.
    const auto views_of = [&](TensorId t) {
        std::set<NodeId> views;
        std::vector<TensorId> todo{t};
        while (!todo.empty()) {
            const TensorId at = todo.back();
            todo.pop_back();
            for (const NodeId c : g.consumers(at))
                if (is_view(g.node(c)) && views.insert(c).second)
                    todo.insert(todo.end(), g.node(c).outputs.begin(), g.node(c).outputs.end());
        }
        return views;
    };
    std::map<NodeId, std::vector<NodeId>> copies;  // a forward node -> its recomputed copies
    for (std::size_t i = 0; i < n; ++i)
        if (const NodeId r = g.nodes()[i].recomputes; r != kNoNode) copies[r].push_back(static_cast<NodeId>(i));
    // The node range a set of nodes spans.
    const auto span = [&](const std::vector<NodeId>& nodes, std::size_t& lo, std::size_t& hi) {
        lo = n, hi = 0;
        for (const NodeId x : nodes) lo = std::min(lo, static_cast<std::size_t>(x)), hi = std::max(hi, static_cast<std::size_t>(x));
    };
    p.cp_saved_activation_bytes = p.saved_activation_bytes;
    for (const CpAttention& x : atts) {
        std::int64_t block = 0;  // the key/value blocks of the attention: 1/cp of its gathered tensors
        std::set<NodeId> whole;  // the gathers and their views, the nodes whose gradients are of whole-sequence tensors
        for (const NodeId gather : x.gathers) {
            const TensorId out = g.node(gather).outputs.front();
            block += g.tensor(out).desc.bytes() / p.cp;
            std::vector<NodeId> runs{gather};
            if (const auto c = copies.find(gather); c != copies.end()) runs.insert(runs.end(), c->second.begin(), c->second.end());
            for (const NodeId r : runs) shrink(g.node(r).outputs.front());
            whole.insert(gather);
            for (const NodeId v : views_of(out)) whole.insert(v);
        }
        for (const Node& node : g.nodes()) {
            if (node.phase != Phase::backward || whole.count(node.differentiates) == 0) continue;
            for (const TensorId t : node.inputs)
                if (const NodeId made = g.tensor(t).producer; made != kNoNode && g.node(made).phase == Phase::backward) shrink(t);
            if (node.differentiates != x.gathers.front() && node.differentiates != x.gathers.back())
                for (const TensorId t : node.outputs) shrink(t);
        }
        // Ring attention's buffers: two blocks in flight forward; backward two blocks and two of
        // their gradients.
        std::size_t lo = 0, hi = 0;
        span(x.attention, lo, hi);
        add(ring, lo, hi, MemoryCategory::temporaries, 2 * block);
        std::vector<NodeId> again, backward;
        for (const NodeId f : x.attention) {
            if (const auto c = copies.find(f); c != copies.end()) again.insert(again.end(), c->second.begin(), c->second.end());
            for (const ScheduledOp* s : gradient_ops[static_cast<std::size_t>(f)]) backward.push_back(s->node);
        }
        if (!again.empty()) span(again, lo, hi), add(ring, lo, hi, MemoryCategory::temporaries, 2 * block);
        if (!backward.empty()) span(backward, lo, hi), add(ring, lo, hi, MemoryCategory::temporaries, 4 * block);
    }
    p.ulysses_memory = p.memory;
    p.ring_memory = p.memory;
    CategoryBytes run_shared{}, run_ring{};
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t c = 0; c < kMemoryCategories; ++c) {
            run_shared[c] += shared[i][c];
            run_ring[c] += ring[i][c];
            p.ulysses_memory[i].bytes[c] += run_shared[c];
            p.ring_memory[i].bytes[c] += run_shared[c] + run_ring[c];
        }
}

}  // namespace

std::string_view cp_comm_name(CpComm c) {
    switch (c) {
        case CpComm::ring: return "ring";
        case CpComm::all_gather: return "allgather";
        case CpComm::ulysses: return "ulysses";
    }
    return "?";
}

bool cp_runs_flash(int cp, CpComm form) { return cp > 1 && form != CpComm::ulysses; }

std::vector<double> ring_step_work(int cp, int rank, bool causal, CpLayout layout) {
    std::vector<double> work(static_cast<std::size_t>(std::max(cp, 0)), 1.0);
    if (!causal || cp < 1) return work;
    // A rank's two chunks of the 2 cp (each chunk pair a quarter of a block pair).
    const auto chunks = [&](int r) { return layout == CpLayout::zigzag ? std::pair{r, 2 * cp - 1 - r} : std::pair{2 * r, 2 * r + 1}; };
    const auto [q0, q1] = chunks(rank);
    for (int j = 0; j < cp; ++j) {
        const auto [k0, k1] = chunks(((rank - j) % cp + cp) % cp);
        double w = 0;
        for (const int q : {q0, q1})
            for (const int k : {k0, k1}) w += q > k ? 0.25 : q == k ? 0.125 : 0.0;
        work[static_cast<std::size_t>(j)] = w;
    }
    return work;
}

RingExchange ring_exchange(const Cluster& cluster, CommGroup group, double kv_bytes, double attention_s, bool backward,
                           const std::vector<double>& step_work) {
    RingExchange e;
    const int cp = group.ranks;
    if (cp < 2) return e;
    const std::vector<double> work = step_work.empty() ? ring_step_work(cp, 0, true) : step_work;
    if (static_cast<int>(work.size()) != cp) throw InputError(fmt::format("ring_exchange: {} step shares for {} ranks", work.size(), cp));
    double total = 0;
    for (const double w : work) total += w;
    const double block = kv_bytes / cp;
    int at = 0;  // the step
    const auto step = [&](double bytes) {
        const double t = collective_cost(cluster, Collective::send_recv, bytes, group).time_s;
        const double hides = total > 0 ? attention_s * work[static_cast<std::size_t>(at++)] / total : 0.0;
        ++e.steps;
        e.bytes_sent += bytes;
        e.comm_s += t;
        e.exposed_s += std::max(0.0, t - hides);
    };
    if (!backward) {
        for (int i = 0; i + 1 < cp; ++i) step(block);
        return e;
    }
    // TransformerEngine's backward loop: step 0 sends the keys and values, steps 1 .. cp - 2 them
    // and the gradients so far, step cp - 1 the gradients alone.
    for (int i = 0; i < cp; ++i) step(i == 0 || i == cp - 1 ? block : 2 * block);
    return e;
}

StageProfile stage_profile(const Graph& g, const Analysis& a) {
    StageProfile p;
    p.tp = g.tensor_parallel.degree;
    p.cp = g.context_parallel.degree;
    p.ep = g.expert_parallel.degree;
    p.stages = g.pipeline.stages;
    p.stage = g.pipeline.stage;
    p.layers = g.pipeline.layers;
    p.compute_dtype = g.compute_dtype;
    if (const auto b = g.dims.find("batch"); b != g.dims.end()) p.batch = b->second;
    if (const auto q = g.dims.find("seq"); q != g.dims.end()) p.seq = q->second;
    for (const Tensor& t : g.tensors())
        if (t.role == TensorRole::input && t.name == "hidden") p.hidden_bytes = t.desc.bytes();
    if (p.cp > 1) {
        std::vector<bool> flash(g.nodes().size(), false);
        for (const OpAnalysis& op : a.ops) flash[static_cast<std::size_t>(op.node)] = op.flash_attention;
        for (NodeId n : attention_cores(g))
            if (!flash[static_cast<std::size_t>(n)]) {
                p.unfused_attention = g.node(n).name;
                break;
            }
    }
    if (!g.pipeline.shared_embedding.empty())
        if (const TensorId w = g.find_tensor(g.pipeline.shared_embedding); w >= 0) p.shared_embedding_bytes = g.tensor(w).desc.bytes();
    const std::size_t n = g.nodes().size();
    std::vector<int> layer_of(n, -1);
    if (!g.pipeline.layer_prefix.empty()) {
        int first_layer = -1;
        for (std::size_t i = 0; i < n; ++i) {
            layer_of[i] = layer_in(g.nodes()[i].name, g.pipeline.layer_prefix);
            if (layer_of[i] >= 0) first_layer = first_layer < 0 ? layer_of[i] : std::min(first_layer, layer_of[i]);
        }
        for (int& l : layer_of)
            if (l >= 0) l -= first_layer;  // relative to the stage's first layer
    }

    // The schedule's ops, and when each phase ends on the compute stream.
    p.ops.resize(n);
    for (const ScheduledOp& s : a.schedule.ops) {
        const auto i = static_cast<std::size_t>(s.node);
        p.ops[i] = {s.kernel_s, s.issue_s, s.end_s, g.node(s.node).phase, layer_of[i], -1};
    }
    double backward_end = 0;
    for (const ScheduledOp& s : a.schedule.ops) {
        const Phase ph = g.node(s.node).phase;
        if (ph == Phase::optimizer) {
            p.optimizer_s += s.end_s - s.start_s;
            p.has_optimizer = true;
        } else {
            backward_end = std::max(backward_end, s.end_s);
            if (ph == Phase::forward) p.forward_end_s = std::max(p.forward_end_s, s.end_s);
        }
    }
    p.backward_end_s = backward_end;
    // The optimizer phase as scheduled: its kernels and the host's issue gaps between them (a
    // phase of many small updates is issue-bound).
    if (p.has_optimizer) p.optimizer_s = std::max(p.optimizer_s, a.schedule.step_time_s - backward_end);
    p.streams = a.schedule.streams;
    p.schedule_end_s = a.schedule.step_time_s;

    // The op that ends each node's gradient (the last of those that differentiate it).
    std::vector<int> grad_op(n, -1);
    for (const ScheduledOp& s : a.schedule.ops) {
        const NodeId d = g.node(s.node).differentiates;
        if (d == kNoNode) continue;
        int& at = grad_op[static_cast<std::size_t>(d)];
        if (at < 0 || s.end_s >= p.ops[static_cast<std::size_t>(at)].end_s) at = s.node;
    }
    // A collective of a node's tensor forward and one of its gradient backward (none in inference).
    // A node run again in backward (a recomputed clone, sequence parallelism's re-gather) runs its
    // forward collective again.
    struct Forward {
        Collective collective;
        double bytes;
        StageProfile::Group group;
        bool set = false;
    };
    std::vector<Forward> forward_collective(n);
    // The kernel time of the ops of a node's gradient that read a tensor `from` gives (directly or
    // through views) and of those that do not: a linear's weight-gradient GEMM reads its input, the
    // input-gradient GEMM does not.
    // The schedule's ops of each node's gradient, in order, gathered once.
    std::vector<std::vector<const ScheduledOp*>> gradient_ops(n);
    for (const ScheduledOp& s : a.schedule.ops)
        if (const NodeId d = g.node(s.node).differentiates; d != kNoNode) gradient_ops[static_cast<std::size_t>(d)].push_back(&s);
    const auto split_gradient = [&](NodeId of, const auto& from) {
        std::set<TensorId> derived;
        std::pair<double, double> reads_other{0.0, 0.0};
        for (const ScheduledOp* sp : gradient_ops[static_cast<std::size_t>(of)]) {
            const ScheduledOp& s = *sp;
            const Node& op = g.node(s.node);
            const bool reads =
                std::any_of(op.inputs.begin(), op.inputs.end(), [&](TensorId t) { return from(t) || derived.count(t) != 0; });
            if (reads && s.kernel_s == 0) derived.insert(op.outputs.begin(), op.outputs.end());
            (reads ? reads_other.first : reads_other.second) += s.kernel_s;
        }
        return reads_other;
    };
    // Sequence parallelism's re-gather (model/autodiff.cpp) of gather node i hides behind the ops
    // of the reading linear's gradient that do not read it (the input gradient's GEMM); the
    // reduce-scatter of the gathered tensor's gradient behind those that do (the weight gradient's).
    std::vector<double> hide_gather(n, 0.0), hide_scatter(n, 0.0);
    for (const Node& node : g.nodes()) {
        if (node.recomputes == kNoNode || node.phase != Phase::backward || node.outputs.size() != 1) continue;
        const TensorId again = node.outputs[0];
        NodeId linear = kNoNode;
        for (const NodeId c : g.consumers(again))
            if (g.node(c).differentiates != kNoNode) linear = g.node(c).differentiates;
        if (linear == kNoNode) continue;  // a recomputed clone: read by other clones
        const auto gather = static_cast<std::size_t>(node.recomputes);
        std::tie(hide_scatter[gather], hide_gather[gather]) = split_gradient(linear, [&](TensorId t) { return t == again; });
    }
    // Tensor parallelism without it: the backward all-reduce of a row-parallel block (node i, whose
    // output is all-reduced forward) is, in Megatron-LM, that of the input gradient of the block's
    // column-parallel linear, overlapped with that linear's weight gradient (Korthikanti et al.
    // 2022, section 6.2): the ops of its gradient that read its input. The linear is the nearest
    // one upstream of i that has a parameter; where i sums two row-parallel blocks' partials (a
    // parallel attention and MLP block, TensorParallelSplit::row_outputs: an add), the nearest one
    // upstream of the row-parallel linear that its first input comes from.
    const auto weighted_gemm = [&](NodeId at) {
        const Node& node = g.node(at);
        return is_gemm(traits_of(node.kind).kernel) && std::any_of(node.inputs.begin() + 1, node.inputs.end(),
                                                                   [&](TensorId t) { return g.tensor(t).role == TensorRole::parameter; });
    };
    const auto upstream_gemm = [&](NodeId of) {  // the nearest weighted GEMM up the first inputs from node `of`
        for (NodeId at = g.node(of).inputs.empty() ? kNoNode : g.tensor(g.node(of).inputs[0]).producer; at != kNoNode;) {
            if (weighted_gemm(at)) return at;
            at = g.node(at).inputs.empty() ? kNoNode : g.tensor(g.node(at).inputs[0]).producer;
        }
        return kNoNode;
    };
    // What the input gradient's all-reduce of column-parallel linear `column` hides behind: the ops
    // of its gradient that read its input, or that input's recomputed copy (full recomputation).
    const auto weight_gradient_s = [&](NodeId column) {
        const TensorId input = g.node(column).inputs[0];
        const NodeId from = g.tensor(input).producer;
        const auto is_input = [&](TensorId t) {
            const NodeId made = g.tensor(t).producer;
            return t == input || (from != kNoNode && made != kNoNode && g.node(made).recomputes == from);
        };
        return split_gradient(column, is_input).first;
    };
    if (!g.tensor_parallel.sequence_parallel) {
        for (const std::string& name : g.tensor_parallel.all_reduce) {
            NodeId row = g.find_node(name);
            if (row == kNoNode || g.node(row).inputs.empty()) continue;
            const NodeId named = row;
            if (g.node(row).kind == OpKind::add) row = upstream_gemm(row);
            const NodeId column = row == kNoNode ? kNoNode : upstream_gemm(row);
            if (column == kNoNode) continue;
            hide_scatter[static_cast<std::size_t>(named)] = weight_gradient_s(column);
            // An add's gradient is its output's, no op of its own: the all-reduce then runs when the
            // column-parallel linear's gradient ends.
            int& at = grad_op[static_cast<std::size_t>(named)];
            if (at < 0) at = grad_op[static_cast<std::size_t>(column)];
        }
    }
    const auto both = [&](NodeId node, double bytes, Collective forward, Collective backward, StageProfile::Group group) {
        const auto i = static_cast<std::size_t>(node);
        p.blocking.push_back({p.ops[i].end_s, forward, bytes, group, static_cast<int>(i)});
        forward_collective[i] = {forward, bytes, group, true};
        if (const int b = grad_op[i]; b >= 0)
            p.blocking.push_back({p.ops[static_cast<std::size_t>(b)].end_s, backward, bytes, group, b, hide_scatter[i]});
    };
    //   context parallelism: the keys and values all-gathered forward, their gradients
    //     reduce-scattered backward (all-gather CP does not overlap them; Megatron's ring variant
    //     would hide part of it behind attention);
    //   expert parallelism: the token copies' all-to-all to their experts' ranks and the outputs'
    //     back, forward and for their gradients backward (Megatron-LM's MoE dispatcher without overlap).
    const auto outputs = [&](const std::vector<std::string>& names, Collective forward, Collective backward, StageProfile::Group group) {
        for (const std::string& name : names)
            if (const NodeId node = g.find_node(name); node != kNoNode)
                both(node, static_cast<double>(g.tensor(g.node(node).outputs.front()).desc.bytes()), forward, backward, group);
    };
    if (p.cp > 1) outputs(g.context_parallel.all_gather, Collective::all_gather, Collective::reduce_scatter, StageProfile::Group::cp);
    if (p.ep > 1) outputs(g.expert_parallel.all_to_all, Collective::all_to_all, Collective::all_to_all, StageProfile::Group::ep);
    if (p.tp > 1) {
        // All-reduces after a node forward and of its gradient backward; with sequence parallelism
        // an all-gather of a node's output (reduce-scatter backward) and a reduce-scatter of its
        // input (all-gather backward), each of the full tensor: the same bytes a rank sends as the
        // all-reduce they replace, in two halves (Korthikanti et al. 2022, section 4.2.2).
        outputs(g.tensor_parallel.all_reduce, Collective::all_reduce, Collective::all_reduce, StageProfile::Group::tp);
        outputs(g.tensor_parallel.all_gather, Collective::all_gather, Collective::reduce_scatter, StageProfile::Group::tp);
        for (const std::string& name : g.tensor_parallel.reduce_scatter)
            if (const NodeId node = g.find_node(name); node != kNoNode)
                both(node, static_cast<double>(g.tensor(g.node(node).inputs.front()).desc.bytes()), Collective::reduce_scatter,
                     Collective::all_gather, StageProfile::Group::tp);
        // A column-parallel input's gradient all-reduced in backward only (its block's forward
        // all-reduce shared with another's: TensorParallelSplit::gradient_all_reduce): when the
        // gradient of the linear that reads it ends, beside that linear's weight gradient.
        for (const std::string& name : g.tensor_parallel.gradient_all_reduce) {
            const NodeId node = g.find_node(name);
            if (node == kNoNode || g.node(node).outputs.empty()) continue;
            NodeId column = kNoNode;
            for (const NodeId c : g.consumers(g.node(node).outputs.front()))
                if (column == kNoNode && g.node(c).phase == Phase::forward && weighted_gemm(c)) column = c;
            if (column == kNoNode) continue;
            if (const int b = grad_op[static_cast<std::size_t>(column)]; b >= 0)
                p.blocking.push_back({p.ops[static_cast<std::size_t>(b)].end_s, Collective::all_reduce,
                                      static_cast<double>(g.tensor(g.node(node).outputs.front()).desc.bytes()), StageProfile::Group::tp, b,
                                      weight_gradient_s(column)});
        }
        // Megatron's vocabulary-parallel cross-entropy: three all-reduces of one float a token, forward.
        for (const std::string& name : g.tensor_parallel.vocab_parallel_loss) {
            const NodeId node = g.find_node(name);
            if (node == kNoNode || g.node(node).inputs.size() < 2) continue;
            const double bytes = 4.0 * static_cast<double>(g.tensor(g.node(node).inputs[1]).desc.numel());
            for (int i = 0; i < 3; ++i)
                p.blocking.push_back({p.ops[static_cast<std::size_t>(node)].end_s, Collective::all_reduce, bytes, StageProfile::Group::tp,
                                      static_cast<int>(node)});
        }
    }
    for (const ScheduledOp& s : a.schedule.ops) {
        const NodeId again = g.node(s.node).recomputes;
        if (again == kNoNode || !forward_collective[static_cast<std::size_t>(again)].set) continue;
        const Forward& f = forward_collective[static_cast<std::size_t>(again)];
        p.blocking.push_back({p.ops[static_cast<std::size_t>(s.node)].end_s, f.collective, f.bytes, f.group, s.node,
                              hide_gather[static_cast<std::size_t>(again)]});
    }
    std::vector<CpAttention> attentions;
    if (p.cp > 1) {
        attentions = cp_attentions(g, p);
        add_rings(g, a, p, attentions, gradient_ops);
        add_ulysses(g, a, p, attentions, gradient_ops);
    }

    // The gradients of the experts' weights (expert parallelism): what each optimizer update of an
    // expert parameter consumes (input 1), or the tensor an fp32 cast of it read.
    std::set<TensorId> expert_grads;
    if (p.ep > 1 && !g.expert_parallel.parameters.empty()) {
        const std::set<std::string> experts(g.expert_parallel.parameters.begin(), g.expert_parallel.parameters.end());
        const auto is_expert = [&](const std::string& updated) {  // the parameter, or its fp32 master copy (model/autodiff.cpp)
            const std::string master = ".master";
            return experts.count(updated) != 0 ||
                   (updated.size() > master.size() && updated.compare(updated.size() - master.size(), master.size(), master) == 0 &&
                    experts.count(updated.substr(0, updated.size() - master.size())) != 0);
        };
        for (const Node& node : g.nodes()) {
            if (!traits_of(node.kind).optimizer_update || node.inputs.size() < 2 || !is_expert(g.tensor(node.inputs[0]).name)) continue;
            TensorId grad = node.inputs[1];
            expert_grads.insert(grad);
            const NodeId from = g.tensor(grad).producer;
            if (from != kNoNode && traits_of(g.node(from).kind).converts_dtype) expert_grads.insert(g.node(from).inputs[0]);
        }
    }
    // Gradients that a cast turns into another gradient (fp32 for the master weights).
    std::vector<bool> cast_to_gradient(g.tensors().size(), false);
    for (const Node& node : g.nodes()) {
        if (!traits_of(node.kind).converts_dtype || node.inputs.empty() || node.outputs.empty()) continue;
        const auto out = static_cast<std::size_t>(node.outputs[0]);
        if (out < a.memory.category.size() && a.memory.category[out] == MemoryCategory::gradients)
            cast_to_gradient[static_cast<std::size_t>(node.inputs[0])] = true;
    }
    for (std::size_t t = 0; t < g.tensors().size(); ++t) {
        const Tensor& tensor = g.tensors()[t];
        if (tensor.role == TensorRole::parameter) {
            p.parameter_bytes += tensor.desc.bytes();
            p.largest_parameter = std::max(p.largest_parameter, tensor.desc.bytes());
        }
        if (a.memory.category.size() <= t || a.memory.category[t] != MemoryCategory::gradients || tensor.producer == kNoNode) continue;
        // A gradient cast to fp32 for the master weights is reduced once, in fp32 (Megatron-LM
        // accumulates and reduces main_grad in fp32), as soon as the gradient it casts exists (the
        // cast is part of the accumulation into main_grad, in backward); the 16-bit one is not
        // reduced on its own.
        if (cast_to_gradient[t]) continue;
        NodeId ready = tensor.producer;
        const Node& made = g.node(ready);
        if (traits_of(made.kind).converts_dtype && !made.inputs.empty() && g.tensor(made.inputs[0]).producer != kNoNode)
            ready = g.tensor(made.inputs[0]).producer;
        const auto r = static_cast<std::size_t>(ready);
        p.gradients.push_back(
            {p.ops[r].end_s, tensor.desc.bytes(), expert_grads.count(static_cast<TensorId>(t)) != 0, static_cast<int>(r)});
        p.gradient_bytes += tensor.desc.bytes();
    }
    p.memory.reserve(a.memory.steps.size());
    for (const MemoryStep& s : a.memory.steps)
        p.memory.push_back({s.bytes, s.node != kNoNode ? g.node(s.node).phase : Phase::forward,
                            s.node != kNoNode ? layer_of[static_cast<std::size_t>(s.node)] : -1});
    p.saved_activation_bytes = a.memory.saved_activation_bytes;
    p.optimizer_flops = static_cast<double>(a.by_phase[static_cast<int>(Phase::optimizer)].work.flops());
    p.flops = static_cast<double>(a.total.flops());
    for (std::size_t i = 0; i < n; ++i)
        if (g.nodes()[i].recomputes != kNoNode) p.recompute_flops += static_cast<double>(g.work(static_cast<NodeId>(i)).flops());
    if (g.expert_parallel.load_factor > 1 && !g.expert_parallel.parameters.empty()) {
        // The experts' work: the nodes that read an expert's weight, the gradients of those nodes and
        // their recomputed copies (the GEMMs; the activation between them is left out).
        std::set<TensorId> weights;
        for (const std::string& name : g.expert_parallel.parameters)
            if (const TensorId t = g.find_tensor(name); t >= 0) weights.insert(t);
        std::vector<bool> expert(n, false);
        for (std::size_t i = 0; i < n; ++i)
            for (const TensorId t : g.nodes()[i].inputs)
                expert[i] = expert[i] || (weights.count(t) != 0 && g.nodes()[i].phase == Phase::forward);
        double flops = 0;
        for (std::size_t i = 0; i < n; ++i) {
            const Node& node = g.nodes()[i];
            const NodeId of = node.differentiates != kNoNode ? node.differentiates : node.recomputes;
            if (expert[i] || (of != kNoNode && expert[static_cast<std::size_t>(of)]))
                flops += static_cast<double>(g.work(static_cast<NodeId>(i)).flops());
        }
        p.expert_excess_flops = flops * (1 - 1 / g.expert_parallel.load_factor);
    }
    if (p.cp > 1) add_cp_memory(g, a, p, attentions, gradient_ops);
    return p;
}

namespace {

// The memory steps of a stage of `layers` layers from those of its one- and two-layer probes
// (compose_layers). Steps are matched by phase, layer and order: the j-th step of a phase outside
// the layers, or of layer 0, in both probes; the j-th of layer 1 in the two-layer probe with the
// j-th of layer 0 in each.
std::vector<StageProfile::MemoryAt> compose_memory(const std::vector<StageProfile::MemoryAt>& one,
                                                   const std::vector<StageProfile::MemoryAt>& two, int layers) {
    using Key = std::pair<Phase, int>;
    std::map<Key, std::vector<const CategoryBytes*>> in_one, in_two;
    for (const StageProfile::MemoryAt& m : one) in_one[{m.phase, m.layer}].push_back(&m.bytes);
    for (const StageProfile::MemoryAt& m : two) in_two[{m.phase, m.layer}].push_back(&m.bytes);
    const auto fail = [] { throw InputError("compose_layers: the probes' memory steps do not repeat layer by layer"); };
    for (const auto& [key, list] : in_two) {
        if (key.second > 1) fail();
        const auto other = in_one.find({key.first, std::min(key.second, 0)});
        if (other == in_one.end() || other->second.size() != list.size()) fail();
    }
    for (const auto& [key, list] : in_one)
        if (key.second > 0 || in_two.count(key) == 0) fail();
    const auto n = static_cast<std::int64_t>(layers - 2);
    std::vector<StageProfile::MemoryAt> out;
    out.reserve(two.size() + in_two.size());
    std::map<Key, std::size_t> seen;
    for (const StageProfile::MemoryAt& m : two) {
        const std::size_t j = seen[{m.phase, m.layer}]++;
        const CategoryBytes& p = *in_one[{m.phase, std::min(m.layer, 0)}][j];
        if (m.layer < 1) {  // the same step of the whole stage: every added layer adds what the second did
            StageProfile::MemoryAt c = m;
            for (std::size_t k = 0; k < kMemoryCategories; ++k) c.bytes[k] += n * (m.bytes[k] - p[k]);
            out.push_back(c);
            continue;
        }
        // Layer r of the repeating one: R + (r - 1)(R - P) + (L - 1 - r)(Q - P), at r = 1 and r = L - 1.
        const CategoryBytes& q = *in_two[{m.phase, 0}][j];
        StageProfile::MemoryAt first = m, last = m;
        for (std::size_t k = 0; k < kMemoryCategories; ++k) {
            first.bytes[k] += n * (q[k] - p[k]);
            last.bytes[k] += n * (m.bytes[k] - p[k]);
        }
        last.layer = layers - 1;
        out.push_back(first);
        out.push_back(last);
    }
    return out;
}

}  // namespace

StageProfile compose_layers(const StageProfile& one, const StageProfile& two, int layers) {
    if (one.layers != 1 || two.layers != 2)
        throw InputError(fmt::format("compose_layers: probes of {} and {} layers; expected 1 and 2", one.layers, two.layers));
    if (layers < 2) throw InputError(fmt::format("compose_layers: {} layers from probes of 2", layers));
    const std::vector<StageProfile::Op> probe = replayable_ops(two);
    if (probe.empty())
        throw InputError(
            "compose_layers: the probe's schedule cannot be replayed (more than one stream, or fused kernels out of program order)");
    if (std::none_of(two.ops.begin(), two.ops.end(), [](const StageProfile::Op& o) { return o.layer == 1; }))
        throw InputError("compose_layers: the probes do not name their layers (Graph::pipeline.layer_prefix)");
    const auto fail = [] { throw InputError("compose_layers: the probe's second layer is not one run of ops a phase"); };

    // The second layer's ops: one contiguous run a phase, repeated for layers 1 .. L - 1 in the
    // order the phase runs them (increasing when the first layer's ops of the phase come first).
    struct Run {
        std::size_t begin = 0, end = 0;
        bool increasing = true;
    };
    std::map<Phase, Run> runs;
    for (std::size_t i = 0; i < two.ops.size(); ++i) {
        const StageProfile::Op& o = two.ops[i];
        if (o.layer > 1) fail();
        if (o.layer != 1) continue;
        auto [it, fresh] = runs.try_emplace(o.phase, Run{i, i + 1, true});
        if (!fresh) {
            if (it->second.end != i) fail();
            it->second.end = i + 1;
        }
    }
    for (auto& [phase, run] : runs) {
        const auto first_layer = [&, ph = phase](const StageProfile::Op& o) { return o.phase == ph && o.layer == 0; };
        run.increasing = std::any_of(two.ops.begin(), two.ops.begin() + static_cast<std::ptrdiff_t>(run.begin), first_layer);
    }

    // The unrolled ops; copies[i]: the composed indices of probe op i (one, or one a layer of the run,
    // in execution order), layer_of_copy the layer each copy stands for.
    StageProfile p = two;
    p.layers = layers;
    p.ops.clear();
    p.ops.reserve(two.ops.size() + static_cast<std::size_t>(layers - 2) * two.ops.size());
    std::vector<std::vector<int>> copies(two.ops.size());
    std::vector<double> issue_gap(two.ops.size());
    for (std::size_t i = 0; i < two.ops.size(); ++i) issue_gap[i] = two.ops[i].issue_s - (i > 0 ? two.ops[i - 1].issue_s : 0.0);
    // A probe op's composed index for a copy standing for `layer` (-1: the latest copy so far).
    const auto copy_of = [&](std::size_t i, int layer) {
        const std::vector<int>& c = copies[i];
        if (c.size() == 1 || layer < 0) return c.back();
        for (const int k : c)
            if (p.ops[static_cast<std::size_t>(k)].layer == layer) return k;
        return c.back();
    };
    double host = 0;
    const auto emit = [&](std::size_t i, int layer) {
        StageProfile::Op o = probe[i];
        host += issue_gap[i];
        o.issue_s = host;
        o.layer = layer;
        copies[i].push_back(static_cast<int>(p.ops.size()));
        p.ops.push_back(o);
    };
    for (std::size_t i = 0; i < two.ops.size();) {
        const auto run = runs.find(two.ops[i].phase);
        if (run == runs.end() || run->second.begin != i) {
            emit(i, two.ops[i].layer);
            ++i;
            continue;
        }
        const Run& r = run->second;
        for (int k = 1; k < layers; ++k) {
            const int layer = r.increasing ? k : layers - k;
            for (std::size_t j = r.begin; j < r.end; ++j) emit(j, layer);
        }
        i = r.end;
    }
    // Views to the copy of their kernel's op standing for the same layer (or the latest copy emitted
    // before them; a later one for a fused group's member that precedes its anchor).
    for (std::size_t k = 0; k < p.ops.size(); ++k) {
        StageProfile::Op& o = p.ops[k];
        if (o.view_of < 0) continue;
        const auto v = static_cast<std::size_t>(o.view_of);
        if (copies[v].empty()) fail();
        if (two.ops[v].layer == 1 && o.layer >= 1) {
            o.view_of = copy_of(v, o.layer);
        } else {
            int latest = -1;
            for (const int c : copies[v])
                if (static_cast<std::size_t>(c) < k || latest < 0) latest = c;
            o.view_of = latest;
        }
    }
    double step = 0;
    replay(p.ops, step);

    p.forward_end_s = p.backward_end_s = p.optimizer_s = 0;
    double optimizer_kernels = 0;
    for (const StageProfile::Op& o : p.ops) {
        if (o.phase == Phase::optimizer) {
            optimizer_kernels += o.kernel_s > 0 ? o.kernel_s : 0.0;
        } else {
            p.backward_end_s = std::max(p.backward_end_s, o.end_s);
            if (o.phase == Phase::forward) p.forward_end_s = std::max(p.forward_end_s, o.end_s);
        }
    }
    if (p.has_optimizer) p.optimizer_s = std::max(optimizer_kernels, step - p.backward_end_s);
    // Collectives and gradients at their ops' copies.
    const auto at_copies = [&](const auto& from, auto& to, auto time) {
        to.clear();
        for (const auto& e : from)
            for (const int k : copies[static_cast<std::size_t>(e.op)]) {
                auto c = e;
                c.op = k;
                c.*time = p.ops[static_cast<std::size_t>(k)].end_s;
                to.push_back(c);
            }
    };
    at_copies(two.blocking, p.blocking, &StageProfile::Blocking::at_s);
    at_copies(two.rings, p.rings, &StageProfile::Ring::at_s);
    at_copies(two.gradients, p.gradients, &StageProfile::Gradient::ready_s);

    const double n = layers - 2;  // layers added to the two-layer probe
    const auto grow = [n](double x1, double x2) { return x2 + n * (x2 - x1); };
    const auto grow_bytes = [&](std::int64_t x1, std::int64_t x2) {
        return static_cast<std::int64_t>(std::llround(grow(static_cast<double>(x1), static_cast<double>(x2))));
    };
    p.parameter_bytes = grow_bytes(one.parameter_bytes, two.parameter_bytes);
    p.gradient_bytes = grow_bytes(one.gradient_bytes, two.gradient_bytes);
    p.saved_activation_bytes = grow_bytes(one.saved_activation_bytes, two.saved_activation_bytes);
    p.flops = grow(one.flops, two.flops);
    p.recompute_flops = grow(one.recompute_flops, two.recompute_flops);
    p.expert_excess_flops = grow(one.expert_excess_flops, two.expert_excess_flops);
    p.optimizer_flops = grow(one.optimizer_flops, two.optimizer_flops);
    p.memory = compose_memory(one.memory, two.memory, layers);
    if (!one.ring_memory.empty() && !two.ring_memory.empty()) {
        p.ring_memory = compose_memory(one.ring_memory, two.ring_memory, layers);
        p.ulysses_memory = compose_memory(one.ulysses_memory, two.ulysses_memory, layers);
        p.cp_saved_activation_bytes = grow_bytes(one.cp_saved_activation_bytes, two.cp_saved_activation_bytes);
    } else {
        p.ring_memory.clear(), p.ulysses_memory.clear();
    }
    return p;
}

ParallelAnalysis analyze_parallel(const Graph& g, const Analysis& a, const Cluster& cluster, const ParallelOptions& opt) {
    return analyze_parallel(stage_profile(g, a), cluster, opt);
}

ParallelAnalysis analyze_parallel(const StageProfile& g, const Cluster& cluster, const ParallelOptions& opt) {
    if (opt.dp < 1) throw InputError("--dp: expected a positive number of data-parallel ranks, got " + std::to_string(opt.dp));
    if (opt.zero < 0 || opt.zero > 3) throw InputError("--zero: expected a ZeRO stage 0, 1, 2 or 3, got " + std::to_string(opt.zero));
    const long long most = cluster.max_devices();
    if (most > 0 && opt.dp > most) throw InputError(fmt::format("--dp {}: {} holds at most {} devices", opt.dp, cluster.name, most));
    if (!(opt.bucket_bytes > 0)) throw InputError("--bucket-mb: expected a positive bucket size");
    if (cp_runs_flash(g.cp, opt.cp_comm) && !g.unfused_attention.empty())
        throw InputError(
            fmt::format("--cp {} ({}): attention node '{}' is not a flash kernel in the stage's analysis; ring and all-gather "
                        "context parallelism run attention as flash attention (analyse the stage with "
                        "FusionOptions::flash_always)",
                        g.cp, cp_comm_name(opt.cp_comm), g.unfused_attention));

    ParallelAnalysis r;
    r.options = opt;
    r.cluster = cluster.name;
    r.tp = g.tp;
    r.cp = g.cp;
    const int node = cluster.gpus_per_node();
    r.pp = g.stages;
    r.devices = r.tp * r.cp * r.pp * opt.dp;
    const std::string ranks = r.cp > 1
                                  ? fmt::format("--tp {} x --cp {} x --pp {} x --dp {} = {} devices", r.tp, r.cp, r.pp, opt.dp, r.devices)
                                  : fmt::format("--tp {} x --pp {} x --dp {} = {} devices", r.tp, r.pp, opt.dp, r.devices);
    if (most > 0 && r.devices > most) throw InputError(fmt::format("{}: {} holds at most {}", ranks, cluster.name, most));
    r.nodes = (r.devices + node - 1) / node;
    if (cluster.torus) {  // a TPU job is a slice of the torus
        try {
            (void)torus_shape(cluster, r.devices);
        } catch (const InputError& e) {
            throw InputError(fmt::format("{}: {}", ranks, e.what()));
        }
    }
    // Placement (Megatron's rank order): a tensor-parallel group fills a node first, then the
    // context-parallel ranks, node / tp to a node; the gradients are reduced over the data- and
    // context-parallel ranks together (they hold the same weights), node / tp of them to a node.
    const CommGroup tp_group{r.tp, std::min(r.tp, node)};
    const int per_node = std::max(1, node / std::max(1, r.tp));
    const CommGroup cp_group{r.cp, std::min(r.cp, per_node)};
    const int reducers = opt.dp * r.cp;
    const CommGroup group{reducers, std::min(reducers, per_node)};
    // Expert parallelism: a group of data-parallel ranks (consecutive, after tp and cp).
    r.ep = g.ep;
    if (r.ep > 1 && opt.dp % r.ep != 0)
        throw InputError(fmt::format("--ep {}: the expert-parallel ranks are data-parallel ranks; it must divide --dp {}", r.ep, opt.dp));
    const int ep_per_node = std::max(1, per_node / std::max(1, r.cp));
    const CommGroup ep_group{r.ep, std::min(r.ep, ep_per_node)};

    if (opt.zero > 0 && !g.has_optimizer)
        throw InputError("--zero " + std::to_string(opt.zero) + ": the step has no optimizer to shard (--mode training with an optimizer)");
    if (opt.global_batch > 0) {
        if (g.batch == 0) throw InputError("--global-batch: the model has no batch dimension to accumulate over");
        const std::int64_t per_pass = g.batch * opt.dp;
        if (opt.global_batch % per_pass != 0)
            throw InputError(
                fmt::format("--global-batch {}: not a multiple of --batch {} x --dp {} = {}", opt.global_batch, g.batch, opt.dp, per_pass));
        r.micro_batches = static_cast<int>(opt.global_batch / per_pass);
    }
    const int K = r.micro_batches;
    // A stage of identical layers issues the same few collectives over and over (4 a layer for
    // tensor parallelism, gradient buckets of repeating sizes): each distinct one is costed once.
    std::map<std::tuple<Collective, double, int, int>, CollectiveCost> costed;
    const auto cost_of = [&](Collective coll, double bytes, CommGroup among) -> const CollectiveCost& {
        const auto key = std::tuple(coll, bytes, among.ranks, among.per_node);
        auto it = costed.find(key);
        if (it == costed.end()) it = costed.emplace(key, collective_cost(cluster, coll, bytes, among)).first;
        return it->second;
    };

    // Blocking collectives (tensor-, context- and expert-parallel) on the compute stream's critical
    // path: every later op moves by their time; `shifted` maps a single-device time to it.
    std::vector<std::pair<double, double>> events;  // (single-device time, duration)
    events.reserve(g.blocking.size() + g.rings.size());
    const bool ring = opt.cp_comm == CpComm::ring;
    if (opt.cp_comm == CpComm::ulysses && r.cp > 1) {
        // DeepSpeed-Ulysses splits the heads over the cp ranks (Jacobs et al. 2023 section 3.1;
        // TransformerEngine's all-to-all asserts the heads divide by the cp size).
        const int hq = g.cp_heads * r.tp, hkv = g.cp_kv_heads * r.tp;
        if (g.cp_heads <= 0)
            throw InputError(
                fmt::format("--cp-comm ulysses: the model's context-parallel attention has no heads axis to split over --cp {}", r.cp));
        if (g.cp_heads % r.cp != 0 || g.cp_kv_heads % r.cp != 0)
            throw InputError(fmt::format(
                "--cp {} --cp-comm ulysses: the {} attention heads{} must be a multiple of --cp {} x --tp {} = {} "
                "(Ulysses gives each context-parallel rank heads / cp of them); use --cp-comm ring",
                r.cp, hq, hkv != hq ? fmt::format(" and {} key/value head{}", hkv, hkv == 1 ? "" : "s") : "", r.cp, r.tp, r.cp * r.tp));
    }
    // The context-parallel collectives of the form asked for.
    const auto runs = [&](StageProfile::Group which) {
        if (which == StageProfile::Group::cp) return opt.cp_comm == CpComm::all_gather;
        if (which == StageProfile::Group::ulysses) return opt.cp_comm == CpComm::ulysses;
        return true;
    };
    for (const StageProfile::Blocking& b : g.blocking) {
        const bool context = b.group == StageProfile::Group::cp || b.group == StageProfile::Group::ulysses;
        const CommGroup among = b.group == StageProfile::Group::tp ? tp_group : context ? cp_group : ep_group;
        if (among.ranks < 2 || !runs(b.group)) continue;
        const CollectiveCost& cost = cost_of(b.collective, b.bytes, among);
        events.push_back({b.at_s, std::max(0.0, cost.time_s - b.hide_s)});
        switch (b.group) {
            case StageProfile::Group::tp:
                if (r.tp_collectives == 0) r.tp_example = cost;
                r.tp_comm_s += cost.time_s;
                ++r.tp_collectives;
                break;
            case StageProfile::Group::cp:
            case StageProfile::Group::ulysses:
                r.cp_comm_s += cost.time_s;
                r.cp_exposed_s += events.back().second;
                r.cp_bytes += b.bytes * bus_factor(b.collective, among.ranks);
                ++r.cp_collectives;
                break;
            case StageProfile::Group::ep:
                r.ep_comm_s += cost.time_s;
                ++r.ep_collectives;
                break;
        }
    }
    // Ring attention: each exchange's send/recv steps beside the attention they overlap.
    for (const StageProfile::Ring& x : g.rings) {
        if (!ring || cp_group.ranks < 2) break;
        const RingExchange e = ring_exchange(cluster, cp_group, x.kv_bytes, x.attention_s, x.backward);
        events.push_back({x.at_s, e.exposed_s});
        r.cp_comm_s += e.comm_s;
        r.cp_exposed_s += e.exposed_s;
        r.cp_bytes += e.bytes_sent;
        r.cp_collectives += e.steps;
    }
    std::sort(events.begin(), events.end());
    // delay[i]: the time of the first i events, so that a time moves by the events up to it.
    std::vector<double> delay(events.size() + 1, 0.0);
    for (std::size_t i = 0; i < events.size(); ++i) delay[i + 1] = delay[i] + events[i].second;
    auto shifted = [&](double t) {
        const auto past = std::upper_bound(events.begin(), events.end(), t, [](double x, const auto& e) { return x < e.first; });
        return t + delay[static_cast<std::size_t>(past - events.begin())];
    };
    const double forward_end = shifted(g.forward_end_s);
    const double backward_end = shifted(g.backward_end_s);
    // Gradient accumulation: K - 1 micro-batches (forward and backward) run before the last one,
    // whose backward the reduction overlaps.
    const double pass_s = backward_end, earlier = (K - 1) * pass_s;
    r.tp_comm_s *= K;
    r.tp_collectives *= K;
    r.cp_comm_s *= K;
    r.cp_exposed_s *= K;
    r.cp_bytes *= K;
    r.cp_collectives *= K;
    r.ep_comm_s *= K;
    r.ep_collectives *= K;

    // Gradients in the order backward produces them.
    std::vector<StageProfile::Gradient> grads = g.gradients;
    for (StageProfile::Gradient& gr : grads) gr.ready_s = shifted(gr.ready_s) + earlier;
    std::stable_sort(grads.begin(), grads.end(),
                     [](const StageProfile::Gradient& x, const StageProfile::Gradient& y) { return x.ready_s < y.ready_s; });
    if (!opt.overlap_grad_reduce)
        for (StageProfile::Gradient& gr : grads) gr.ready_s = std::max(gr.ready_s, earlier + backward_end);

    double stream = 0;  // the communication stream's clock
    auto issue = [&](std::string what, Collective coll, double bytes, double ready, CommGroup among) {
        CommOp op;
        op.what = std::move(what);
        op.collective = coll;
        op.cost = cost_of(coll, bytes, among);
        op.ready_s = ready;
        op.start_s = std::max(ready, stream);
        op.end_s = op.start_s + op.cost.time_s;
        stream = op.end_s;
        r.comm_s += op.cost.time_s;
        r.comms.push_back(op);
        return op.end_s;
    };

    const double param_bytes = static_cast<double>(g.parameter_bytes);
    double ready_for_update = earlier + backward_end;
    if (reducers > 1) {
        // With ZeRO every rank updates only its shard, so the parameters are all-gathered before
        // the forward that uses them, prefetched layer by layer and overlapped with it (ZeRO-1/2:
        // the updated parameters of the previous step, as Megatron's distributed optimizer with
        // overlap-param-gather runs it; ZeRO-3: gathered again for backward, from the end of forward).
        if (opt.zero >= 1) issue("parameter all-gather (forward)", Collective::all_gather, param_bytes, 0.0, group);
        // ZeRO-3 gathers again for every micro-batch's backward (and forward, after the first).
        for (int k = 0; opt.zero == 3 && k < K; ++k) {
            if (k > 0) issue("parameter all-gather (forward)", Collective::all_gather, param_bytes, k * pass_s, group);
            issue("parameter all-gather (backward)", Collective::all_gather, param_bytes, k * pass_s + forward_end, group);
        }
        // Buckets of gradients, each reduced once its last gradient exists: all-reduce, or
        // reduce-scatter when ZeRO shards what the optimizer updates.
        // An expert's weights are held by reducers / ep of the ranks (every ep-th data-parallel
        // rank): its gradients are reduced among those, in buckets of their own (none when one rank
        // holds each expert).
        const Collective reduce = opt.zero >= 1 ? Collective::reduce_scatter : Collective::all_reduce;
        const int expert_ranks = reducers / std::max(1, r.ep);
        const CommGroup expert_group{expert_ranks, std::max(1, std::min(expert_ranks, (per_node + r.ep - 1) / r.ep))};
        struct Bucket {
            double bytes = 0, ready = 0;
        } dense, expert;
        int bucket = 0;
        auto flush = [&](Bucket& bk, CommGroup among) {
            if (bk.bytes > 0 && among.ranks > 1)
                ready_for_update =
                    std::max(ready_for_update, issue(fmt::format("gradient bucket {}", bucket++), reduce, bk.bytes, bk.ready, among));
            bk = Bucket{};
        };
        for (std::size_t i = 0; i < grads.size(); ++i) {
            Bucket& bk = grads[i].expert ? expert : dense;
            bk.bytes += static_cast<double>(grads[i].bytes);
            bk.ready = std::max(bk.ready, grads[i].ready_s);
            if (bk.bytes >= opt.bucket_bytes) flush(bk, grads[i].expert ? expert_group : group);
        }
        flush(expert, expert_group);
        flush(dense, group);
    }
    // The optimizer updates (its shard of) the parameters once every gradient is reduced; with
    // ZeRO its work shrinks with the shard too.
    const double optimizer_share = opt.zero >= 1 ? 1.0 / reducers : 1.0;
    const double step = ready_for_update + g.optimizer_s * optimizer_share;
    r.compute_s = K * pass_s + g.optimizer_s * optimizer_share;
    r.pass_s = pass_s;
    r.forward_s = forward_end;
    r.optimizer_s = g.optimizer_s * optimizer_share;
    r.step_time_s = std::max(step, r.compute_s);
    r.exposed_comm_s = r.step_time_s - r.compute_s;

    // Memory per rank: the same liveness, each category scaled by its ZeRO share; ZeRO-3 also holds
    // the gathered parameters of the layers in flight, counted as twice the largest parameter.
    std::tie(r.peak_bytes, r.peak_bytes_by_category) = peak_of(g, opt.cp_comm, opt.zero, reducers, K, opt.persistent_gradients);

    r.flops_per_rank = K * (g.flops - g.optimizer_flops) + g.optimizer_flops;
    r.model_flops_per_rank = K * (g.flops - g.optimizer_flops - g.recompute_flops - g.expert_excess_flops);
    const double chip_peak = matrix_ceiling(cluster.hardware, g.compute_dtype).flop_per_s;
    if (chip_peak > 0 && r.step_time_s > 0) {
        r.mfu = r.model_flops_per_rank / r.step_time_s / chip_peak;
        r.hfu = (r.flops_per_rank - g.optimizer_flops) / r.step_time_s / chip_peak;
    }
    if (g.batch > 0 && r.step_time_s > 0)
        r.tokens_per_s = static_cast<double>(g.batch) * (g.seq > 0 ? static_cast<double>(g.seq) : 1.0) * opt.dp * r.cp * K /
                         r.step_time_s;  // a context-parallel rank's seq is its share
    return r;
}

ParallelAnalysis analyze_pipeline(const std::vector<const StageProfile*>& stages, const Cluster& cluster, const ParallelOptions& opt) {
    if (stages.empty()) throw InputError("a pipeline needs at least one stage");
    const int p = static_cast<int>(stages.size());
    std::vector<ParallelAnalysis> per;
    for (int s = 0; s < p; ++s) {
        const StageProfile& g = *stages[static_cast<std::size_t>(s)];
        // A middle stage may stand for another (they differ only in their layers' names: `search`).
        const bool middle = s > 0 && s < p - 1 && g.stage > 0 && g.stage < p - 1;
        if (g.stages != p || (g.stage != s && !middle))
            throw InputError(fmt::format("pipeline: stage {} of {} expected, got stage {} of {}", s + 1, p, g.stage + 1, g.stages));
        // A middle stage standing for the previous one (`search`) has the same parallel analysis.
        const auto su = static_cast<std::size_t>(s);
        const bool repeat = s > 0 && stages[su] == stages[su - 1];
        per.push_back(repeat ? per.back() : analyze_parallel(g, cluster, opt));
    }
    ParallelAnalysis r = per.front();  // the first stage's ranks and collectives; the timing is the pipeline's
    const int m = r.micro_batches;
    const int v = opt.interleave;
    if (v < 1) throw InputError(fmt::format("--interleave {}: expected a positive number of virtual stages", v));
    if (v > 1) {
        if (p < 2) throw InputError(fmt::format("--interleave {}: needs pipeline stages (--pp > 1)", v));
        if (m % p != 0)
            throw InputError(fmt::format("--interleave {}: the {} micro-batches a rank runs must be a multiple of the {} stages", v, m, p));
        for (const StageProfile* st : stages)
            if (st->layers % v != 0)
                throw InputError(fmt::format("--interleave {}: a stage's {} layers do not split into {} chunks", v, st->layers, v));
    }
    // A tied word embedding held by the first and the last stage: its two copies' gradients are
    // all-reduced between them after backward, before the update (Megatron-LM's embedding group;
    // the gradients in the parameter's dtype), on those two stages' critical path.
    if (p > 1 && stages.front()->shared_embedding_bytes > 0) {
        const CommGroup ends{2, r.tp * r.cp * opt.dp * (p - 1) >= cluster.gpus_per_node() ? 1 : 2};
        r.embedding_all_reduce_s =
            collective_cost(cluster, Collective::all_reduce, static_cast<double>(stages.front()->shared_embedding_bytes), ends).time_s;
    }
    double sum = 0, slowest = 0, tail = 0, update = 0, flops = 0, model_flops = 0, run_flops = 0;
    for (int s = 0; s < p; ++s) {
        const ParallelAnalysis& q = per[static_cast<std::size_t>(s)];
        const double embedding = s == 0 || s == p - 1 ? r.embedding_all_reduce_s : 0.0;
        sum += q.pass_s;
        slowest = std::max(slowest, q.pass_s);
        tail = std::max(tail, q.exposed_comm_s + embedding + q.optimizer_s);  // each stage reduces, then updates
        update = std::max(update, q.optimizer_s);
        flops += q.flops_per_rank;
        model_flops += q.model_flops_per_rank;
        run_flops += q.hfu * q.step_time_s;
    }
    // Activations (and their gradients) cross each stage boundary once a micro-batch; on the fill
    // and drain they are on the critical path. Megatron orders ranks tensor-parallel innermost, then
    // data-parallel, then pipeline: adjacent stages share a node only when tp x dp is under a node.
    if (p > 1) {
        const std::int64_t act = stages[1]->hidden_bytes;  // what stage 2 receives: its [batch, seq, d_model] input
        const CommGroup pair{2, r.tp * r.cp * opt.dp >= cluster.gpus_per_node() ? 1 : 2};
        // Megatron's scatter/gather optimisation: each tensor-parallel rank sends 1/tp of it.
        // Interleaved: a micro-batch crosses p x v - 1 chunk boundaries each way.
        r.p2p_s = 2.0 * (p * v - 1) * collective_cost(cluster, Collective::send_recv, static_cast<double>(act) / r.tp, pair).time_s;
    }
    // Plain 1F1B: the schedule itself, simulated from every stage's forward and backward times and
    // one send a hop (sim/schedule.hpp pipeline_timeline): equal stages take (m + p - 1) passes;
    // for unequal ones the usual estimate sum + (m - 1) x slowest is only an approximation (over
    // 2,000 random stage times it was 18% above to 4% below the schedule). Interleaved: fill and drain
    // are one chunk's pass (a device's pass / v) on every device, the steady state the slowest
    // device's passes of the other micro-batches: (m + (p - 1) / v) passes for equal stages, the
    // bubble (p - 1) / (m v) of the ideal m passes.
    double pipe = sum / v + (m - 1.0 / v) * slowest + r.p2p_s;
    if (p > 1 && v == 1) {
        std::vector<double> fwd, bwd;
        for (const ParallelAnalysis& q : per) fwd.push_back(q.forward_s), bwd.push_back(std::max(0.0, q.pass_s - q.forward_s));
        double end = 0;
        for (const PipelineBlock& b : pipeline_timeline(fwd, bwd, m, r.p2p_s / (2.0 * (p - 1)))) end = std::max(end, b.end_s);
        pipe = end;
    }
    r.pp = p;
    r.interleave = v;
    r.pass_s = slowest;
    r.compute_s = pipe + update;
    r.step_time_s = pipe + tail;
    r.exposed_comm_s = r.step_time_s - r.compute_s;
    r.bubble_fraction = pipe > 0 ? 1 - m * slowest / pipe : 0;  // of the pipeline's part, the update aside
    r.comm_s = 0;
    r.stages.clear();
    r.peak_bytes = 0;
    std::size_t worst = 0;
    for (int s = 0; s < p; ++s) {
        const ParallelAnalysis& q = per[static_cast<std::size_t>(s)];
        r.comm_s = std::max(r.comm_s, q.comm_s + (s == 0 || s == p - 1 ? r.embedding_all_reduce_s : 0.0));
        ParallelAnalysis::Stage st;
        st.stage = s;
        st.layers = stages[static_cast<std::size_t>(s)]->layers;
        st.in_flight = std::min(p - s, m);
        // Micro-batches' activations held at once, in whole micro-batches. Interleaved, Megatron-LM
        // warms up 2 (p - s - 1) + (v - 1) p chunks before its first backward, each 1/v of the
        // device's activations: p + (p - 1) / v for the first device (Korthikanti et al. 2022).
        double held = st.in_flight;
        if (v > 1) {
            const int chunks = std::min(2 * (p - s - 1) + (v - 1) * p + 1, m * v);
            held = static_cast<double>(chunks) / v;
            st.in_flight = static_cast<int>(std::ceil(held));
        }
        st.pass_s = q.pass_s;
        st.forward_s = q.forward_s;
        st.optimizer_s = q.optimizer_s;
        st.exposed_comm_s = q.exposed_comm_s;
        st.peak_bytes =
            q.peak_bytes + static_cast<std::int64_t>(std::llround(
                               (held - 1) * static_cast<double>(saved_activations_of(*stages[static_cast<std::size_t>(s)], opt.cp_comm))));
        if (st.peak_bytes > r.peak_bytes) r.peak_bytes = st.peak_bytes, worst = static_cast<std::size_t>(s);
        r.stages.push_back(st);
    }
    // The peak's breakdown: the stage's micro-batch peak, the in-flight activations added.
    r.peak_bytes_by_category = per[worst].peak_bytes_by_category;
    r.peak_bytes_by_category[static_cast<std::size_t>(MemoryCategory::activations)] += r.peak_bytes - per[worst].peak_bytes;
    r.flops_per_rank = flops / p;
    r.model_flops_per_rank = model_flops / p;
    const double peak = matrix_ceiling(cluster.hardware, stages.front()->compute_dtype).flop_per_s;
    if (peak > 0 && r.step_time_s > 0) {
        r.mfu = r.model_flops_per_rank / r.step_time_s / peak;
        r.hfu = run_flops / p / r.step_time_s;  // run_flops: FLOPs over the chip's peak (q.hfu x its step)
    }
    r.tokens_per_s = r.step_time_s > 0 ? per.front().tokens_per_s * per.front().step_time_s / r.step_time_s : 0;
    return r;
}

}  // namespace roofline
