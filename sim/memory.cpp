#include "sim/memory.hpp"

#include <algorithm>
#include <cstdint>

#include "ops/checked.hpp"
#include "ops/op_rule.hpp"
#include "sim/views.hpp"

namespace roofline {

std::string_view category_name(MemoryCategory c) {
    switch (c) {
        case MemoryCategory::weights: return "weights";
        case MemoryCategory::gradients: return "gradients";
        case MemoryCategory::optimizer_state: return "optimizer_state";
        case MemoryCategory::activations: return "activations";
        case MemoryCategory::temporaries: return "temporaries";
        case MemoryCategory::workspace: return "workspace";
    }
    return "?";
}

std::int64_t MemoryStep::total() const {
    std::int64_t t = 0;
    for (std::int64_t b : bytes) t = checked_add(t, b, "memory");
    return t;
}

bool is_view(const Node& n) {
    switch (traits_of(n.kind).view) {
        case ViewKind::always:
        case ViewKind::broadcast: return true;
        case ViewKind::unless_copy: return !n.attrs.get_bool("copy", false);
        case ViewKind::never: return false;
    }
    return false;
}

namespace {

// For an in-place optimizer output: which input's storage it overwrites (OpTraits::in_place).
int in_place_input(const Node& n, std::size_t output) {
    const auto& in_place = traits_of(n.kind).in_place;
    return output < in_place.size() ? in_place[output] : -1;
}

// Tensors grouped by the node they are allocated or freed at, each group in tensor order: node i's
// are items[start[i], start[i + 1]) (one array for the step, not a vector a node).
struct TensorsByNode {
    std::vector<std::uint32_t> start, items;
};

// at[t]: the node of tensor t, or nodes or more for none.
TensorsByNode by_node(const std::vector<std::size_t>& at, std::size_t nodes) {
    TensorsByNode r;
    r.start.assign(nodes + 2, 0);
    for (std::size_t n : at) {
        if (n < nodes) ++r.start[n + 2];
    }
    for (std::size_t i = 2; i < r.start.size(); ++i) r.start[i] += r.start[i - 1];
    r.items.resize(r.start[nodes + 1]);
    for (std::size_t t = 0; t < at.size(); ++t) {
        if (at[t] < nodes) r.items[r.start[at[t] + 1]++] = static_cast<std::uint32_t>(t);
    }
    return r;
}

}  // namespace

MemoryTimeline memory_timeline(const Graph& g, const MemoryOptions& opt) {
    const std::size_t nt = g.tensors().size(), nn = g.nodes().size();
    std::vector<TensorId> storage(nt);
    for (std::size_t t = 0; t < nt; ++t) storage[t] = static_cast<TensorId>(t);

    // Storage sharing: views alias their input, optimizer updates write in place, and the cast of
    // an updated fp32 master copy back to 16 bits overwrites the 16-bit weights.
    for (NodeId n : g.topological_order()) {
        const Node& node = g.node(n);
        for (std::size_t o = 0; o < node.outputs.size(); ++o) {
            int src = -1;
            if (is_view(node))
                src = 0;
            else if (node.phase == Phase::optimizer)
                src = in_place_input(node, o);
            if (src >= 0)
                storage[static_cast<std::size_t>(node.outputs[o])] =
                    storage[static_cast<std::size_t>(node.inputs[static_cast<std::size_t>(src)])];
        }
    }
    // Gradients: what an optimizer node consumes as its gradient, through casts.
    std::vector<bool> is_gradient(nt, false);
    for (const Node& node : g.nodes()) {
        if (!traits_of(node.kind).optimizer_update) continue;
        TensorId gt = node.inputs[1];
        const Tensor& ten = g.tensor(gt);
        if (ten.producer != kNoNode && traits_of(g.node(ten.producer).kind).converts_dtype &&
            g.node(ten.producer).phase == Phase::optimizer) {
            is_gradient[static_cast<std::size_t>(storage[static_cast<std::size_t>(g.node(ten.producer).inputs[0])])] = true;
        }
        is_gradient[static_cast<std::size_t>(storage[static_cast<std::size_t>(gt)])] = true;
    }
    // Liveness per storage: first and last node that touches it; whether a backward node reads it.
    const std::size_t never = nn;
    std::vector<std::size_t> first(nt, never), last(nt, 0);
    std::vector<bool> read_by_backward(nt, false), whole_step(nt, false);
    for (std::size_t t = 0; t < nt; ++t) {
        const Tensor& ten = g.tensors()[t];
        if (ten.role == TensorRole::parameter || ten.role == TensorRole::optimizer_state) whole_step[t] = true;
        if (ten.producer == kNoNode) first[static_cast<std::size_t>(storage[t])] = 0;
    }
    for (TensorId o : g.outputs()) whole_step[static_cast<std::size_t>(storage[static_cast<std::size_t>(o)])] = true;
    for (std::size_t i = 0; i < nn; ++i) {
        const Node& node = g.nodes()[i];
        for (TensorId t : node.outputs) {
            const auto s = static_cast<std::size_t>(storage[static_cast<std::size_t>(t)]);
            first[s] = std::min(first[s], i);
            last[s] = std::max(last[s], i);
        }
        for (TensorId t : node.inputs) {
            const auto s = static_cast<std::size_t>(storage[static_cast<std::size_t>(t)]);
            last[s] = std::max(last[s], i);
            if (node.phase == Phase::backward) read_by_backward[s] = true;
        }
    }
    MemoryTimeline tl;
    tl.category.resize(nt, MemoryCategory::temporaries);
    // The node that allocates and the one after which it is freed, per tensor holding memory (never:
    // none), and its bytes.
    std::vector<std::size_t> alloc_at(nt, never), free_at(nt, never);
    std::vector<std::int64_t> bytes_of(nt, 0);
    CategoryBytes live{};
    for (std::size_t t = 0; t < nt; ++t) {
        const Tensor& ten = g.tensors()[t];
        MemoryCategory c = MemoryCategory::temporaries;
        const auto s = static_cast<std::size_t>(storage[t]);
        const Tensor& base = g.tensors()[s];
        if (base.role == TensorRole::parameter)
            c = MemoryCategory::weights;
        else if (base.role == TensorRole::optimizer_state)
            c = MemoryCategory::optimizer_state;
        else if (is_gradient[s])
            c = MemoryCategory::gradients;
        else if (read_by_backward[s] && (base.producer == kNoNode || g.node(base.producer).phase == Phase::forward))
            c = MemoryCategory::activations;
        tl.category[t] = c;
        if (storage[t] != static_cast<TensorId>(t) || first[t] == never) continue;  // aliases and unused tensors hold nothing
        if (opt.on_chip != nullptr && (*opt.on_chip)[t]) continue;                  // fused away: never in device memory
        const std::int64_t bytes = bytes_of[t] = ten.desc.bytes();
        if (c == MemoryCategory::activations) tl.saved_activation_bytes = checked_add(tl.saved_activation_bytes, bytes, "memory");
        if (ten.producer == kNoNode) {
            live[static_cast<std::size_t>(c)] = checked_add(live[static_cast<std::size_t>(c)], bytes, "memory");
        } else {
            alloc_at[t] = first[t];
        }
        if (!whole_step[t]) free_at[t] = last[t];
    }
    const TensorsByNode allocs = by_node(alloc_at, nn), frees = by_node(free_at, nn);
    tl.steps.reserve(nn);
    for (std::size_t i = 0; i < nn; ++i) {
        for (std::uint32_t k = allocs.start[i]; k < allocs.start[i + 1]; ++k) {
            const std::uint32_t t = allocs.items[k];
            auto& b = live[static_cast<std::size_t>(tl.category[t])];
            b = checked_add(b, bytes_of[t], "memory");
        }
        MemoryStep step{static_cast<NodeId>(i), live};
        const Node& node = g.nodes()[i];
        if (opt.workspace_bytes > 0 && is_gemm(traits_of(node.kind).kernel)) {
            step.bytes[static_cast<std::size_t>(MemoryCategory::workspace)] = opt.workspace_bytes;
        }
        if (step.total() > tl.peak_bytes || tl.steps.empty()) {
            tl.peak_bytes = step.total();
            tl.peak_step = i;
            tl.at_peak = step.bytes;
        }
        tl.steps.push_back(step);
        for (std::uint32_t k = frees.start[i]; k < frees.start[i + 1]; ++k)
            live[static_cast<std::size_t>(tl.category[frees.items[k]])] -= bytes_of[frees.items[k]];
    }
    return tl;
}

}  // namespace roofline
