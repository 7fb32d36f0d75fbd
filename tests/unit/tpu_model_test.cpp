// The TPU systolic-array model against SCALE-Sim, and the TPU costs never below the roofline.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "sim/tpu_model.hpp"
#include "support.hpp"

using namespace roofline;

TEST_CASE("systolic cycles equal SCALE-Sim's for all three dataflows", "[tpu]") {
    // tests/data/scalesim_gemm.json: SCALE-Sim 3.0.0 run by tests/tools/scalesim_compare.py on 12
    // GEMM shapes and array sizes (square and not) for os, ws and is. Tolerance: exact.
    std::ifstream in(test::source_path("tests/data/scalesim_gemm.json"));
    const auto doc = nlohmann::json::parse(in);
    REQUIRE(doc["cases"].size() >= 30);
    for (const auto& c : doc["cases"]) {
        const std::string df = c["dataflow"];
        const Dataflow d = df == "os" ? Dataflow::output_stationary : df == "ws" ? Dataflow::weight_stationary : Dataflow::input_stationary;
        const SystolicRun r = systolic_gemm(c["m"], c["n"], c["k"], c["rows"], c["cols"], d);
        INFO(c.dump());
        CHECK(r.cycles == c["cycles"].get<std::int64_t>());
    }
}

TEST_CASE("TPU node costs: MXU GEMMs padded to the array, never below the roofline", "[tpu]") {
    const Hardware hw = builtin_hardware("tpu-v5e");
    std::mt19937_64 rng(7);
    std::uniform_int_distribution<std::int64_t> dim(1, 5000);
    for (int i = 0; i < 200; ++i) {
        Graph g;
        const std::int64_t m = dim(rng), n = dim(rng), k = dim(rng);
        const TensorId a = g.add_input("a", {{m, k}, DType::bf16});
        const TensorId b = g.add_input("b", {{k, n}, DType::bf16});
        g.add_node("gemm", OpKind::matmul, {a, b}, {}, {});
        const KernelCost c = *tpu_node_cost(g, 0, hw);
        INFO(m << "x" << n << "x" << k);
        CHECK(c.time_s >= c.lower_bound_s * (1 - 1e-12));
        CHECK(c.tile_efficiency <= 1.0);
    }
    // A GEMM of 127 x 127 x 127 pads to one 128 x 128 fold on a 128 x 128 MXU: ws cycles
    // 128 (weight load) + 127 (rows of A) + 254 (skew) = 509 per fold.
    const SystolicRun r = systolic_gemm(127, 127, 127, 128, 128, Dataflow::weight_stationary);
    CHECK(r.folds == 1);
    CHECK(r.cycles_per_fold == 509);
}

TEST_CASE("XLA-style fusion: an elementwise op fuses into its producer on a TPU", "[tpu][fusion]") {
    // y = gelu(x W) + b: the GEMM's output feeds only gelu, gelu's only the add. With fusion the
    // two intermediates never reach HBM: the GEMM writes nothing, gelu reads and writes nothing,
    // the add reads only b and writes y. Without fusion every op moves its compulsory bytes.
    const Hardware hw = builtin_hardware("tpu-v5e");
    Graph g;
    const TensorId x = g.add_input("x", {{4096, 1024}, DType::bf16});
    const TensorId w = g.add_parameter("w", {{1024, 4096}, DType::bf16});
    const TensorId b = g.add_parameter("b", {{4096}, DType::bf16});
    const NodeId mm = g.add_node("mm", OpKind::matmul, {x, w}, {}, {});
    const NodeId act = g.add_node("act", OpKind::gelu, {g.node(mm).outputs[0]}, {}, {});
    const NodeId add = g.add_node("add", OpKind::add, {g.node(act).outputs[0], b}, {}, {});
    g.mark_output(g.node(add).outputs[0]);
    CHECK(fused_input(g, mm) == -1);
    CHECK(fused_input(g, act) == g.node(mm).outputs[0]);
    CHECK(fused_input(g, add) == g.node(act).outputs[0]);
    TpuModelOptions unfused;
    unfused.fuse_elementwise = false;
    const double hbm = hw.device_memory().bytes_per_s.value;
    const double inter = 4096.0 * 4096 * 2;  // one bf16 [4096, 4096] intermediate
    // gelu: compulsory read + write of the intermediate without fusion; nothing with it, so its
    // time is its vector work alone.
    const KernelCost g0 = *tpu_node_cost(g, act, hw, unfused), g1 = *tpu_node_cost(g, act, hw);
    CHECK(g0.memory_s == Approx(2 * inter / hbm));
    CHECK(g1.memory_s == 0);
    CHECK(g1.time_s == Approx(g1.compute_s));
    // add: reads b (8 KiB) and writes y; the GEMM: reads x and w only.
    CHECK(tpu_node_cost(g, add, hw)->memory_s == Approx((4096.0 * 2 + inter) / hbm));
    CHECK(tpu_node_cost(g, mm, hw)->memory_s == Approx((4096.0 * 1024 * 2 * 2) / hbm));
    CHECK(tpu_node_cost(g, mm, hw, unfused)->memory_s == Approx((4096.0 * 1024 * 2 * 2 + inter) / hbm));
    // A tensor read by two consumers is not fused (XLA would duplicate the producer).
    Graph h;
    const TensorId u = h.add_input("u", {{1024}, DType::f32});
    const NodeId e = h.add_node("e", OpKind::exp, {u}, {}, {});
    h.add_node("r1", OpKind::relu, {h.node(e).outputs[0]}, {}, {});
    h.add_node("r2", OpKind::neg, {h.node(e).outputs[0]}, {}, {});
    CHECK(fused_input(h, 1) == -1);
    CHECK(fused_input(h, 2) == -1);
}
