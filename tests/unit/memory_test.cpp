// The memory model: liveness on hand-computed graphs, and activation memory of a transformer
// layer against Korthikanti et al. 2022.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "model/autodiff.hpp"
#include "model/model_json.hpp"
#include "ops/grad.hpp"
#include "sim/memory.hpp"
#include "sim/recompute.hpp"

using namespace roofline;

namespace {

std::int64_t cat(const CategoryBytes& b, MemoryCategory c) { return b[static_cast<std::size_t>(c)]; }

}  // namespace

TEST_CASE("liveness: a tensor is freed after its last consumer", "[memory]") {
    Graph g;
    const TensorId x = g.add_input("x", {{1000}, DType::f32});
    const TensorId a = g.node(g.add_node("a", OpKind::relu, {x}, {}, {})).outputs[0];
    const TensorId b = g.node(g.add_node("b", OpKind::relu, {a}, {}, {})).outputs[0];
    g.mark_output(g.node(g.add_node("out", OpKind::reduce_sum, {b}, {}, {})).outputs[0]);
    const MemoryTimeline m = memory_timeline(g);
    REQUIRE(m.steps.size() == 3);
    CHECK(m.steps[0].total() == 8000);  // x and a (x is freed after this step)
    CHECK(m.steps[1].total() == 8000);  // a and b
    CHECK(m.steps[2].total() == 4004);  // b and the 4-byte result
    CHECK(m.peak_bytes == 8000);
    CHECK(m.peak_step == 0);
}

TEST_CASE("views share storage and a training step has every category", "[memory]") {
    Graph g;
    const TensorId x = g.add_input("x", {{8, 16}, DType::f32});
    const TensorId w = g.add_parameter("w", {{16, 16}, DType::bf16});
    const TensorId xb = g.node(g.add_node("xb", OpKind::cast, {x}, attr("dtype", std::string("bf16")), {})).outputs[0];
    const TensorId y = g.node(g.add_node("mm", OpKind::matmul, {xb, w}, {}, {})).outputs[0];
    const TensorId v = g.node(g.add_node("view", OpKind::reshape, {y}, attr("shape", std::vector<std::int64_t>{128}), {})).outputs[0];
    const TensorId s = g.node(g.add_node("sum", OpKind::reduce_sum, {v}, {}, {})).outputs[0];
    g.mark_output(g.node(g.add_node("loss", OpKind::cast, {s}, attr("dtype", std::string("f32")), {})).outputs[0]);
    const MemoryTimeline inf = memory_timeline(g);
    CHECK(inf.category[static_cast<std::size_t>(v)] == inf.category[static_cast<std::size_t>(y)]);
    const Graph t = build_training_step(g, {});
    const MemoryTimeline m = memory_timeline(t);
    // weights: w (bf16, 512 B); optimizer state: fp32 master + two moments = 3 x 1024 B
    CHECK(cat(m.steps.back().bytes, MemoryCategory::weights) == 512);
    CHECK(cat(m.steps.back().bytes, MemoryCategory::optimizer_state) == 3 * 1024);
    // xb is read by the weight-gradient GEMM: saved for backward (8 x 16 bf16 = 256 B)
    CHECK(m.category[static_cast<std::size_t>(xb)] == MemoryCategory::activations);
    CHECK(m.saved_activation_bytes == 256);
    const TensorId grad = t.node(t.find_node("opt.w.adam")).inputs[1];
    CHECK(m.category[static_cast<std::size_t>(grad)] == MemoryCategory::gradients);
}

TEST_CASE("activations saved per transformer layer match Korthikanti et al. 2022, eq. 1", "[memory][gpt]") {
    // Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models",
    // eq. 1: with 16-bit activations and 1-byte dropout masks a layer stores s b h (34 + 5 a s / h)
    // bytes: LN inputs 2+2, QKV input 2, Q K V 6, softmax output 2as^2b, attention-dropout mask
    // as^2b and output 2as^2b, projection input 2, two dropout masks 1+1, MLP inputs 2 + 8 + 8.
    // Measured here from liveness as the difference between a 2-layer and a 1-layer model (which
    // cancels the embedding and head).
    struct Case {
        std::int64_t s, b, h, a;
    };
    for (const Case c : {Case{128, 2, 64, 4}, Case{256, 1, 128, 8}, Case{64, 4, 96, 6}}) {
        INFO("s " << c.s << " b " << c.b << " h " << c.h << " a " << c.a);
        auto saved = [&](int layers) {
            const nlohmann::json doc = {{"format", "roofline-model/1"},
                                        {"template", "gpt"},
                                        {"config",
                                         {{"n_layer", layers},
                                          {"d_model", c.h},
                                          {"n_head", c.a},
                                          {"vocab", 1000},
                                          {"n_ctx", c.s},
                                          {"batch", c.b},
                                          {"dtype", "bf16"},
                                          {"dropout", 0.1}}}};
            return memory_timeline(build_training_step(load_model(doc, "korthikanti"), {})).saved_activation_bytes;
        };
        const double per_layer = static_cast<double>(saved(2) - saved(1));
        const double s = static_cast<double>(c.s), b = static_cast<double>(c.b), h = static_cast<double>(c.h), a = static_cast<double>(c.a);
        const double paper = s * b * h * (34 + 5 * a * s / h);
        CHECK(per_layer == Approx(paper).epsilon(0.05));
        CHECK(per_layer == Approx(paper).epsilon(1e-12));  // the graph stores exactly these tensors
    }
}

TEST_CASE("activations per layer with tensor and sequence parallelism match Korthikanti et al. 2022, Table 2", "[memory][gpt][sp]") {
    // Table 2: tensor + sequence parallel: s b h (34 / t + 5 a s / (h t)); with selective
    // recomputation as well: 34 s b h / t. Each rank keeps only its shard of the gathered inputs of
    // the column-parallel linears and gathers them again in backward (section 4.2.2): without that
    // a layer would keep 4 s b h (1 - 1 / t) bytes more. Measured from liveness as the difference
    // between 2 and 1 layers, exactly.
    const std::int64_t s = 256, b = 2, h = 256, a = 8, t = 4;
    auto saved = [&](int layers, bool selective) {
        const nlohmann::json doc = {{"format", "roofline-model/1"},
                                    {"template", "gpt"},
                                    {"config",
                                     {{"n_layer", layers},
                                      {"d_model", h},
                                      {"n_head", a},
                                      {"vocab", 1024},
                                      {"n_ctx", s},
                                      {"batch", b},
                                      {"dtype", "bf16"},
                                      {"dropout", 0.1},
                                      {"tp", t},
                                      {"sp", true}}}};
        Graph g = build_training_step(load_model(doc, "korthikanti-sp"), {});
        if (selective) g = apply_recompute(g, plan_strategy(g, RecomputeStrategy::selective)).graph;
        return static_cast<double>(memory_timeline(g).saved_activation_bytes);
    };
    const double sbh = static_cast<double>(s * b * h), as_h = static_cast<double>(a * s) / static_cast<double>(h);
    CHECK(saved(2, false) - saved(1, false) == Approx(sbh * (34.0 / t + 5 * as_h / t)).epsilon(1e-12));
    CHECK(saved(2, true) - saved(1, true) == Approx(sbh * 34.0 / t).epsilon(1e-12));
}
