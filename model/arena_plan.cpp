#include "model/arena_plan.hpp"

#include <algorithm>
#include <numeric>

#include "ops/error.hpp"

namespace roofline {

namespace {

std::int64_t align_up(std::int64_t v, std::int64_t a) { return (v + a - 1) / a * a; }

}  // namespace

ArenaPlan plan_arena(const Graph& g, const std::vector<NodeId>& order, ArenaMode mode, std::int64_t alignment) {
    if (alignment <= 0) throw InputError("arena alignment must be positive");
    const auto& ts = g.tensors();
    const std::size_t n_t = ts.size();
    const auto steps = static_cast<std::int64_t>(order.size());
    ArenaPlan p;
    p.offset.assign(n_t, -1);
    p.storage.resize(n_t);
    std::iota(p.storage.begin(), p.storage.end(), TensorId{0});

    // Views share their input's storage (reshape comes after its input's producer in any order).
    std::vector<std::int64_t> step_of(g.nodes().size(), -1);
    for (std::int64_t i = 0; i < steps; ++i) step_of[static_cast<std::size_t>(order[static_cast<std::size_t>(i)])] = i;
    for (const NodeId n : order) {
        const Node& node = g.node(n);
        if (node.kind == OpKind::reshape) {
            p.storage[static_cast<std::size_t>(node.outputs[0])] = p.storage[static_cast<std::size_t>(node.inputs[0])];
        }
    }

    // Lifetime of each storage slot, in steps [first, last] (inclusive: a node's inputs and outputs
    // are alive at its step together, so they never share bytes).
    std::vector<std::int64_t> first(n_t, steps), last(n_t, -1);
    for (std::size_t t = 0; t < n_t; ++t) {
        const auto s = static_cast<std::size_t>(p.storage[t]);
        if (ts[t].producer == kNoNode) {
            first[s] = 0;
            last[s] = steps;  // sources persist across repeated runs
        } else {
            first[s] = std::min(first[s], step_of[static_cast<std::size_t>(ts[t].producer)]);
            last[s] = std::max(last[s], step_of[static_cast<std::size_t>(ts[t].producer)]);
        }
    }
    for (const NodeId n : order) {
        for (const TensorId t : g.node(n).inputs) {
            const auto s = static_cast<std::size_t>(p.storage[static_cast<std::size_t>(t)]);
            last[s] = std::max(last[s], step_of[static_cast<std::size_t>(n)]);
        }
    }
    for (const TensorId t : g.outputs()) last[static_cast<std::size_t>(p.storage[static_cast<std::size_t>(t)])] = steps;

    std::vector<TensorId> slots;
    std::vector<std::int64_t> size(n_t, 0);
    for (std::size_t t = 0; t < n_t; ++t) {
        if (p.storage[t] != static_cast<TensorId>(t)) continue;
        slots.push_back(static_cast<TensorId>(t));
        size[t] = align_up(std::max<std::int64_t>(ts[t].desc.bytes(), 1), alignment);
    }

    // The live peak: a sweep over slot lifetimes.
    std::vector<std::int64_t> delta(static_cast<std::size_t>(steps) + 2, 0);
    for (const TensorId s : slots) {
        const auto u = static_cast<std::size_t>(s);
        delta[static_cast<std::size_t>(first[u])] += size[u];
        delta[static_cast<std::size_t>(last[u]) + 1] -= size[u];
    }
    std::int64_t live = 0;
    for (const std::int64_t d : delta) p.live_peak_bytes = std::max(p.live_peak_bytes, live += d);

    if (mode == ArenaMode::keep_all) {
        for (const TensorId s : slots) {
            p.offset[static_cast<std::size_t>(s)] = p.bytes;
            p.bytes += size[static_cast<std::size_t>(s)];
        }
    } else {
        // Largest first (ties: earlier first, then lower id), each at the lowest offset clear of
        // every placed slot whose lifetime overlaps.
        std::sort(slots.begin(), slots.end(), [&](TensorId a, TensorId b) {
            const auto ua = static_cast<std::size_t>(a), ub = static_cast<std::size_t>(b);
            if (size[ua] != size[ub]) return size[ua] > size[ub];
            if (first[ua] != first[ub]) return first[ua] < first[ub];
            return a < b;
        });
        std::vector<TensorId> placed;
        std::vector<std::pair<std::int64_t, std::int64_t>> busy;  // [offset, end) of overlapping placed slots
        for (const TensorId s : slots) {
            const auto u = static_cast<std::size_t>(s);
            busy.clear();
            for (const TensorId q : placed) {
                const auto v = static_cast<std::size_t>(q);
                if (first[v] <= last[u] && first[u] <= last[v]) busy.emplace_back(p.offset[v], p.offset[v] + size[v]);
            }
            std::sort(busy.begin(), busy.end());
            std::int64_t at = 0;
            for (const auto& [lo, hi] : busy) {
                if (lo - at >= size[u]) break;
                at = std::max(at, hi);
            }
            p.offset[u] = at;
            p.bytes = std::max(p.bytes, at + size[u]);
            placed.push_back(s);
        }
    }
    for (std::size_t t = 0; t < n_t; ++t) p.offset[t] = p.offset[static_cast<std::size_t>(p.storage[t])];
    return p;
}

}  // namespace roofline
