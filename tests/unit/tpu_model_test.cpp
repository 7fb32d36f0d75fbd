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
