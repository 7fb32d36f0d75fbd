// The executor's arena planner (model/arena_plan.hpp): slots whose tensors are alive at the same
// step never share bytes, reuse never needs more than keeping everything, the exact layout of a
// small chain, views sharing their base, and what recomputation saves in a real training step.
#include <algorithm>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "model/arena_plan.hpp"
#include "model/autodiff.hpp"
#include "model/model_json.hpp"
#include "model/templates.hpp"
#include "sim/recompute.hpp"

using namespace roofline;

namespace {

Graph gpt_step(std::int64_t layers, std::int64_t batch, std::int64_t seq) {
    const nlohmann::json cfg = {{"n_layer", layers}, {"d_model", 64},  {"n_head", 4}, {"vocab", 256},
                                {"n_ctx", seq},      {"batch", batch}, {"seq", seq},  {"dtype", "bf16"}};
    return build_training_step(load_model(expand_template("gpt", cfg, "test"), "test"), TrainingOptions{});
}

// Lifetimes recomputed independently of the planner: [producer step, last reader step], sources
// and outputs to the end; then every pair of tensors with distinct storage and overlapping
// lifetimes must occupy disjoint bytes.
void check_no_overlap(const Graph& g, const ArenaPlan& p) {
    const auto order = g.topological_order();
    const auto steps = static_cast<std::int64_t>(order.size());
    const std::size_t n = g.tensors().size();
    std::vector<std::int64_t> first(n, steps), last(n, -1);
    for (std::size_t t = 0; t < n; ++t) {
        const auto s = static_cast<std::size_t>(p.storage[t]);
        const NodeId prod = g.tensors()[t].producer;
        first[s] = std::min(first[s], prod == kNoNode ? 0 : static_cast<std::int64_t>(prod));
        last[s] = std::max(last[s], prod == kNoNode ? steps : static_cast<std::int64_t>(prod));
    }
    for (std::int64_t i = 0; i < steps; ++i) {
        for (const TensorId t : g.node(order[static_cast<std::size_t>(i)]).inputs) {
            auto& l = last[static_cast<std::size_t>(p.storage[static_cast<std::size_t>(t)])];
            l = std::max(l, i);
        }
    }
    for (const TensorId t : g.outputs()) last[static_cast<std::size_t>(p.storage[static_cast<std::size_t>(t)])] = steps;
    std::size_t pairs = 0;
    for (std::size_t a = 0; a < n; ++a) {
        if (p.storage[a] != static_cast<TensorId>(a)) continue;
        const std::int64_t ea = p.offset[a] + g.tensors()[a].desc.bytes();
        REQUIRE(ea <= p.bytes);
        for (std::size_t b = a + 1; b < n; ++b) {
            if (p.storage[b] != static_cast<TensorId>(b)) continue;
            if (first[a] > last[b] || first[b] > last[a]) continue;
            ++pairs;
            const std::int64_t eb = p.offset[b] + g.tensors()[b].desc.bytes();
            const bool disjoint = ea <= p.offset[b] || eb <= p.offset[a];
            if (!disjoint)
                FAIL_CHECK("tensors '" << g.tensors()[a].name << "' and '" << g.tensors()[b].name << "' share bytes while both alive");
        }
    }
    REQUIRE(pairs > 0);
}

}  // namespace

TEST_CASE("arena plan: a chain reuses the slot of a tensor whose reader has run", "[arena]") {
    // x -> a -> b -> c (output). Lifetimes: x whole run, a [0,1], b [1,2], c [2,end]. a and c can
    // share one slot; b overlaps both. Expected: 3 slots of 1 KiB (256-byte aligned, 256 f32 each).
    Graph g;
    g.name = "chain";
    const TensorId x = g.add_input("x", {{256}, DType::f32});
    const TensorId a = g.node(g.add_node("a", OpKind::relu, {x}, {}, {})).outputs[0];
    const TensorId b = g.node(g.add_node("b", OpKind::exp, {a}, {}, {})).outputs[0];
    const TensorId c = g.node(g.add_node("c", OpKind::neg, {b}, {}, {})).outputs[0];
    g.mark_output(c);
    const ArenaPlan keep = plan_arena(g, g.topological_order(), ArenaMode::keep_all, 256);
    const ArenaPlan reuse = plan_arena(g, g.topological_order(), ArenaMode::reuse, 256);
    CHECK(keep.bytes == 4 * 1024);
    CHECK(reuse.bytes == 3 * 1024);
    CHECK(reuse.live_peak_bytes == 3 * 1024);
    CHECK(reuse.offset[static_cast<std::size_t>(a)] == reuse.offset[static_cast<std::size_t>(c)]);
    CHECK(reuse.offset[static_cast<std::size_t>(b)] != reuse.offset[static_cast<std::size_t>(a)]);
    check_no_overlap(g, reuse);
}

TEST_CASE("arena plan: a view shares its base, which lives until the view's last reader", "[arena]") {
    Graph g;
    g.name = "view";
    const TensorId x = g.add_input("x", {{4, 64}, DType::f32});
    const TensorId a = g.node(g.add_node("a", OpKind::relu, {x}, {}, {})).outputs[0];
    Attrs shape;
    shape.set("shape", std::vector<std::int64_t>{256});
    const TensorId v = g.node(g.add_node("v", OpKind::reshape, {a}, shape, {})).outputs[0];
    const TensorId b = g.node(g.add_node("b", OpKind::exp, {x}, {}, {})).outputs[0];
    const TensorId c = g.node(g.add_node("c", OpKind::neg, {v}, {}, {})).outputs[0];
    g.mark_output(b);
    g.mark_output(c);
    const ArenaPlan p = plan_arena(g, g.topological_order(), ArenaMode::reuse, 256);
    CHECK(p.storage[static_cast<std::size_t>(v)] == a);
    CHECK(p.offset[static_cast<std::size_t>(v)] == p.offset[static_cast<std::size_t>(a)]);
    // a is read through v at step 3, so b (step 2) must not take a's slot.
    CHECK(p.offset[static_cast<std::size_t>(b)] != p.offset[static_cast<std::size_t>(a)]);
    check_no_overlap(g, p);
}

TEST_CASE("arena plan: training steps never overlap live tensors and recomputation lowers the peak", "[arena]") {
    const Graph g = gpt_step(4, 4, 64);
    const ArenaPlan keep = plan_arena(g, g.topological_order(), ArenaMode::keep_all, 256);
    const ArenaPlan none = plan_arena(g, g.topological_order(), ArenaMode::reuse, 256);
    check_no_overlap(g, none);
    CHECK(none.bytes >= none.live_peak_bytes);
    // Greedy-by-size placement stays close to the live peak (TFLite reports a few % on CNNs; 15%
    // leaves room for the awkward sizes of a training step).
    CHECK(static_cast<double>(none.bytes) <= 1.15 * static_cast<double>(none.live_peak_bytes));
    CHECK(none.bytes < keep.bytes);
    const Graph full = apply_recompute(g, plan_strategy(g, RecomputeStrategy::full)).graph;
    const ArenaPlan pf = plan_arena(full, full.topological_order(), ArenaMode::reuse, 256);
    check_no_overlap(full, pf);
    CHECK(pf.live_peak_bytes < none.live_peak_bytes);
}
