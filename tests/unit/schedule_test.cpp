// The graph schedule: list scheduling on streams, the critical path and the Chrome trace.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "sim/schedule.hpp"

using namespace roofline;

namespace {

// a -> {b, c} -> d, plus a view v of a that costs nothing.
Graph diamond() {
    Graph g;
    const TensorId x = g.add_input("x", {{64}, DType::f32});
    const TensorId a = g.node(g.add_node("a", OpKind::relu, {x}, {}, {})).outputs[0];
    const TensorId b = g.node(g.add_node("b", OpKind::exp, {a}, {}, {})).outputs[0];
    const TensorId c = g.node(g.add_node("c", OpKind::tanh, {a}, {}, {})).outputs[0];
    g.add_node("d", OpKind::add, {b, c}, {}, {});
    g.add_node("v", OpKind::reshape, {a},
               [] {
                   Attrs at;
                   at.set("shape", std::vector<std::int64_t>{8, 8});
                   return at;
               }(),
               {});
    return g;
}

}  // namespace

TEST_CASE("list scheduling on one and two streams, critical path", "[schedule]") {
    const Graph g = diamond();
    const std::vector<double> d = {1, 2, 3, 1, 0};  // a, b, c, d, v
    const Schedule one = schedule_graph(g, d, {1});
    CHECK(one.step_time_s == 7);  // everything in sequence
    CHECK(one.busy_s == 7);
    const Schedule two = schedule_graph(g, d, {2});
    // a 0-1; b 1-3 and c 1-4 side by side; d 4-5
    CHECK(two.step_time_s == 5);
    CHECK(two.ops[1].stream != two.ops[2].stream);
    CHECK(two.ops[3].start_s == 4);
    CHECK(two.critical_path_s == 5);
    CHECK(two.critical_path == std::vector<NodeId>{0, 2, 3});  // a, c, d
    CHECK(two.ops[4].end_s == two.ops[4].start_s);             // the view takes no time
    CHECK_THROWS_WITH(schedule_graph(g, d, {0}), Catch::Contains("at least 1"));
}

TEST_CASE("the Chrome trace has one complete event per timed op", "[schedule]") {
    const Graph g = diamond();
    const Schedule s = schedule_graph(g, {1e-6, 2e-6, 3e-6, 1e-6, 0}, {2});
    const auto j = nlohmann::json::parse(chrome_trace_json(g, s));
    int complete = 0;
    for (const auto& e : j["traceEvents"]) {
        if (e["ph"] == "X") {
            ++complete;
            CHECK(e["dur"].get<double>() > 0);
            CHECK(e["pid"] == 1);
        }
    }
    CHECK(complete == 4);
    CHECK(j["otherData"]["step_time_s"].get<double>() == Approx(5e-6));
}

TEST_CASE("the 1F1B timeline of equal stages takes (m + p - 1) passes", "[schedule][pp]") {
    // p = 4 stages, each 1 s forward and 2 s backward, m = 8 micro-batches, free sends: 1F1B
    // (Narayanan et al. SC21, 2.2.1) finishes in (m + p - 1) (f + b) = 11 x 3 = 33 s, every stage
    // runs 8 forwards and 8 backwards, and stage s runs p - s - 1 forwards before its first backward.
    const std::vector<roofline::PipelineBlock> blocks = roofline::pipeline_timeline({1, 1, 1, 1}, {2, 2, 2, 2}, 8, 0);
    REQUIRE(blocks.size() == 4 * 8 * 2);
    double end = 0;
    for (const auto& b : blocks) end = std::max(end, b.end_s);
    CHECK(end == Approx(33.0));
    for (int s = 0; s < 4; ++s) {
        int warm = 0;
        double first_backward = 1e9;
        for (const auto& b : blocks)
            if (b.stage == s && b.backward) first_backward = std::min(first_backward, b.start_s);
        for (const auto& b : blocks)
            if (b.stage == s && !b.backward && b.start_s < first_backward) ++warm;
        CHECK(warm == 4 - s);  // the warm-up forwards and the one the steady state starts with
    }
    // A send between stages delays each hop by it.
    double with_sends = 0;
    for (const auto& b : roofline::pipeline_timeline({1, 1, 1, 1}, {2, 2, 2, 2}, 8, 0.5)) with_sends = std::max(with_sends, b.end_s);
    CHECK(with_sends > 33.0);
}
