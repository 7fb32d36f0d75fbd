// GEMM work counts and intensities against published hand calculations, and the L0 roofline
// arithmetic on a synthetic chip with round numbers.
#include <catch2/catch.hpp>

#include "ops/op_rule.hpp"
#include "reports/report.hpp"
#include "sim/hardware.hpp"
#include "sim/roofline.hpp"
#include "support.hpp"

using namespace roofline;

namespace {

Work gemm(std::int64_t m, std::int64_t n, std::int64_t k, DType dt) {
    const TensorDesc in[2] = {{{m, k}, dt}, {{k, n}, dt}};
    const auto out = infer_outputs(OpKind::matmul, in, {});
    return count_work(OpKind::matmul, in, out, {});
}

// multiply-adds per element moved: (FLOPs / 2) / (bytes / element size)
double macs_per_element(const Work& w, std::int64_t elem) {
    return (static_cast<double>(w.matrix_flops) / 2.0) / (static_cast<double>(w.bytes()) / static_cast<double>(elem));
}

}  // namespace

TEST_CASE("GEMM 10x20x30: 6,000 multiply-adds, 1,100 elements moved, 5.45 per element", "[gemm]") {
    const Work w = gemm(10, 30, 20, DType::f32);                              // M=10, N=30, K=20
    CHECK(w.matrix_flops == 2 * 6000);                                        // 10*20*30 multiply-adds
    CHECK(w.bytes() == 1100 * 4);                                             // 10*20 + 20*30 + 10*30 elements, f32
    CHECK(macs_per_element(w, 4) == Approx(6000.0 / 1100.0).epsilon(1e-12));  // 5.4545...
    CHECK(macs_per_element(w, 4) == Approx(5.45).margin(0.005));
}

TEST_CASE("GEMM 1000x2000x3000: 545.45 multiply-adds per element", "[gemm]") {
    const Work w = gemm(1000, 3000, 2000, DType::f16);
    CHECK(w.matrix_flops == 2LL * 1000 * 2000 * 3000);
    CHECK(w.bytes() == (1000LL * 2000 + 2000LL * 3000 + 1000LL * 3000) * 2);
    CHECK(macs_per_element(w, 2) == Approx(545.45).margin(0.005));  // 6e9 / 1.1e7
}

TEST_CASE("NVIDIA GEMM guide intensities (fp16): 8192x128x8192 -> 124.1, 8192^3 -> 2730 FLOP/B", "[gemm]") {
    // NVIDIA Deep Learning Performance Guide, "GPU Performance Background" / "Matrix Multiplication
    // Background": intensity = 2MNK / (2(MK + NK + MN)) for fp16 operands. Rounded to 0.1 there.
    const Work skinny = gemm(8192, 128, 8192, DType::f16);
    CHECK(static_cast<double>(skinny.flops()) / static_cast<double>(skinny.bytes()) == Approx(124.1).margin(0.05));
    const Work square = gemm(8192, 8192, 8192, DType::f16);
    CHECK(static_cast<double>(square.flops()) / static_cast<double>(square.bytes()) == Approx(2730.67).margin(0.01));
}

TEST_CASE("roofline on a round-number chip: bounds, times, ridge points", "[roofline]") {
    const Hardware hw = load_hardware_file(test::source_path("tests/data/hw/round-gpu.json"));
    SECTION("a large bf16 GEMM is compute bound on the matrix unit") {
        const Work w = gemm(8192, 8192, 8192, DType::bf16);
        const OpRoofline r = op_roofline(w, DType::bf16, hw);
        CHECK(r.bound.kind == BoundKind::compute);
        CHECK(bound_label(r.bound) == "compute (matrix bf16)");
        // 2 * 8192^3 FLOPs at 1e15 FLOP/s
        CHECK(r.time_s == Approx(2.0 * 8192.0 * 8192.0 * 8192.0 / 1e15).epsilon(1e-12));
        // HBM ridge = 1e15 / 2e12 = 500 FLOP/B; L2 = 100; smem = 25
        REQUIRE(r.levels.size() == 3);
        CHECK(r.levels[0].ridge == Approx(500.0));
        CHECK(r.levels[1].ridge == Approx(100.0));
        CHECK(r.levels[2].ridge == Approx(25.0));
    }
    SECTION("the skinny GEMM (124 FLOP/B < 500) is bound by HBM") {
        const Work w = gemm(8192, 128, 8192, DType::bf16);
        const OpRoofline r = op_roofline(w, DType::bf16, hw);
        CHECK(bound_label(r.bound) == "memory (hbm)");
        CHECK(r.time_s == Approx(static_cast<double>(w.bytes()) / 2e12).epsilon(1e-12));
        // attainable at HBM = intensity x bandwidth
        CHECK(r.levels[0].attainable_flop_per_s == Approx(*r.levels[0].intensity * 2e12).epsilon(1e-12));
    }
    SECTION("f32 GEMM cannot use the tensor cores: the CUDA-core (vector) f32 peak applies") {
        const Work w = gemm(4096, 4096, 4096, DType::f32);
        const OpRoofline r = op_roofline(w, DType::f32, hw);
        CHECK(r.matrix.unit == ComputeUnit::vector);
        CHECK(r.matrix.fallback);
        CHECK(r.matrix.flop_per_s == 5e13);
        CHECK(bound_label(r.bound) == "compute (vector f32)");
    }
    SECTION("tf32 GEMM runs on the matrix unit at the tf32 peak") {
        const Work w = gemm(4096, 4096, 4096, DType::tf32);
        const OpRoofline r = op_roofline(w, DType::tf32, hw);
        CHECK(r.matrix.unit == ComputeUnit::matrix);
        CHECK(r.matrix.flop_per_s == 5e14);
    }
    SECTION("fp8 has neither a matrix nor a vector peak here: f32 vector fallback, flagged") {
        const ComputeCeiling c = matrix_ceiling(hw, DType::fp8_e4m3);
        CHECK(c.unit == ComputeUnit::vector);
        CHECK(c.dtype == DType::f32);
        CHECK(c.fallback);
    }
    SECTION("an op with no work has no bound and zero time") {
        const OpRoofline r = op_roofline(Work{}, DType::bf16, hw);
        CHECK(r.bound.kind == BoundKind::none);
        CHECK(r.time_s == 0);
        CHECK_FALSE(r.levels[0].intensity.has_value());
    }
    SECTION("transcendental-heavy work is bound by the SFU rate") {
        Work w;
        w.transcendentals = 5'000'000'000;  // 1 ms at 5e12/s
        w.vector_flops = 1'000'000;
        w.bytes_read = 1'000'000;  // 0.5 us at 2e12 B/s
        const OpRoofline r = op_roofline(w, DType::f32, hw);
        CHECK(bound_label(r.bound) == "compute (transcendental)");
        CHECK(r.time_s == Approx(1e-3));
    }
}
