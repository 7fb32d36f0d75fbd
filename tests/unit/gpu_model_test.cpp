// The L1 GPU kernel model: the CUDA occupancy rules, GEMM wave quantization, and the model never
// predicting less than the roofline lower bound.
#include <catch2/catch.hpp>
#include <random>

#include "model/graph.hpp"
#include "ops/grad.hpp"
#include "sim/achieved.hpp"
#include "sim/analysis.hpp"
#include "sim/gpu_model.hpp"

using namespace roofline;

TEST_CASE("occupancy follows the CUDA occupancy rules on sm_80 and sm_90", "[gpu-model][occupancy]") {
    // Expected values computed by hand with the rules of the CUDA C++ Programming Guide 13.0
    // ("Technical Specifications per Compute Capability": 64 warps, 32 blocks, 64K registers per
    // SM; 164 KiB (8.0) / 228 KiB (9.0) shared memory per SM; 1 KiB reserved per block on 8.x/9.0)
    // and the occupancy calculator's granularities (registers per warp in units of 256, shared
    // memory in units of 128 bytes).
    struct Case {
        const char* chip;
        LaunchConfig launch;
        std::int64_t blocks;
        double occupancy;
        OccupancyLimit limit;
    };
    const Case cases[] = {
        // 8 warps/block; 32 regs -> 1024/warp -> 64 warps: 8 blocks either way
        {"h100-sxm", {256, 32, 0}, 8, 1.0, OccupancyLimit::warps},
        // 128 regs -> 4096/warp -> 16 warps -> 2 blocks of 8 warps
        {"h100-sxm", {256, 128, 0}, 2, 0.25, OccupancyLimit::registers},
        // 100 KiB + 1 KiB reserved per block: 228 KiB / 101 KiB = 2 blocks of 4 warps
        {"h100-sxm", {128, 64, 100 * 1024}, 2, 8.0 / 64, OccupancyLimit::shared_memory},
        // 1024 threads = 32 warps: 2 blocks
        {"a100-sxm-80gb", {1024, 32, 0}, 2, 1.0, OccupancyLimit::warps},
        // one warp per block: the 32-block limit binds at 32 warps
        {"a100-sxm-80gb", {32, 16, 0}, 32, 0.5, OccupancyLimit::blocks},
        // 40 regs -> 1280/warp -> 51 warps -> 6 blocks of 8 warps = 48 warps
        {"a100-sxm-80gb", {256, 40, 0}, 6, 48.0 / 64, OccupancyLimit::registers},
        // 48 KiB + 1 KiB: 164 KiB / 49 KiB = 3 blocks of 4 warps
        {"a100-sxm-80gb", {128, 32, 48 * 1024}, 3, 12.0 / 64, OccupancyLimit::shared_memory},
        // 100 bytes round up to 128 (+1 KiB): no limit below the warp limit
        {"a100-sxm-80gb", {128, 32, 100}, 16, 1.0, OccupancyLimit::warps},
    };
    for (const Case& c : cases) {
        INFO(c.chip << " threads " << c.launch.threads_per_block << " regs " << c.launch.registers_per_thread << " smem "
                    << c.launch.shared_bytes_per_block);
        const Hardware hw = builtin_hardware(c.chip);
        const Occupancy o = occupancy(*hw.gpu, c.launch);
        CHECK(o.blocks_per_sm == c.blocks);
        CHECK(o.occupancy == Approx(c.occupancy));
        CHECK(o.limit == c.limit);
    }
    const Hardware a100 = builtin_hardware("a100-sxm-80gb");
    CHECK_THROWS_WITH(occupancy(*a100.gpu, {2048, 32, 0}), Catch::Contains("2048 threads per block (the limit is 1024)"));
    CHECK_THROWS_WITH(occupancy(*a100.gpu, {256, 300, 0}), Catch::Contains("300 registers per thread"));
    CHECK_THROWS_WITH(occupancy(*a100.gpu, {256, 32, 200 * 1024}), Catch::Contains("bytes of shared memory per block"));
}

namespace {

Graph gemm_graph(std::int64_t m, std::int64_t n, std::int64_t k, DType d) {
    Graph g;
    const TensorId a = g.add_input("a", {{m, k}, d});
    const TensorId b = g.add_input("b", {{k, n}, d});
    g.add_node("gemm", OpKind::matmul, {a, b}, {}, {});
    return g;
}

}  // namespace

TEST_CASE("wave quantization: M=2304, K=4096 fp16 on an A100 with 256x128 tiles", "[gpu-model][gemm]") {
    // NVIDIA Deep Learning Performance Guide, "Matrix Multiplication Background", wave quantization:
    // with 256x128 tiles, N=1536 gives 9 x 12 = 108 tiles, one full wave on 108 SMs; N=1664 gives
    // 9 x 13 = 117 tiles, two waves, and the time nearly doubles for 8% more work.
    const Hardware hw = builtin_hardware("a100-sxm-80gb");
    GpuModelOptions opt;
    opt.gemm_tile = GemmTile{256, 128};
    auto model = [&](std::int64_t n) {
        const Graph g = gemm_graph(2304, n, 4096, DType::f16);
        const Kernel k = *lower_to_kernel(g, 0, hw, opt);
        return std::make_pair(k, gpu_kernel_cost(k, hw, opt));
    };
    const auto [k1, c1] = model(1536);
    const auto [k2, c2] = model(1664);
    CHECK(k1.gemm->tiles == 108);
    CHECK(c1.waves == 1);
    CHECK(k2.gemm->tiles == 117);
    CHECK(c2.waves == 2);
    CHECK(c2.compute_s == Approx(2 * c1.compute_s).epsilon(1e-9));  // a full second wave of tiles
    // One wave of 256x128x4096 tiles at the A100's per-SM fp16 rate: the peak (312e12 / 108) times
    // the fraction the chip's best cuBLAS GEMM sustains (sim/achieved.hpp), plus the kernel's fixed
    // device latency:
    const double fraction = achieved_rates(hw, opt).matrix_fraction;
    CHECK(fraction < 1.0);
    CHECK(c1.compute_s == Approx(2.0 * 256 * 128 * 4096 / (312e12 * fraction / 108)).epsilon(1e-9));
    // (and a tensor-core GEMM's prologue and epilogue, GpuModelOptions::native_gemm_latency_s)
    const double fixed = opt.min_kernel_s + opt.native_gemm_latency_s;
    CHECK(c1.time_s == Approx(c1.compute_s + fixed).epsilon(1e-9));
    CHECK(c2.time_s == Approx(2 * c1.compute_s + fixed).epsilon(1e-9));
    CHECK(c2.tail_efficiency == Approx(117.0 / 216));
    // Left to choose, the model prefers smaller tiles for N=1664 (less quantization).
    const Graph g = gemm_graph(2304, 1664, 4096, DType::f16);
    const KernelCost free_choice = gpu_kernel_cost(*lower_to_kernel(g, 0, hw), hw);
    CHECK(free_choice.time_s < c2.time_s);
}

TEST_CASE("the modelled time is never below the roofline lower bound", "[gpu-model][property]") {
    // Property test over random GEMM and elementwise shapes on every GPU in the catalog.
    std::mt19937_64 rng(20261122);
    std::uniform_int_distribution<std::int64_t> dim(1, 6000);
    for (const char* chip : {"h100-sxm", "a100-sxm-40gb", "l4", "t4"}) {
        const Hardware hw = builtin_hardware(chip);
        for (int i = 0; i < 200; ++i) {
            const std::int64_t m = dim(rng), n = dim(rng), k = dim(rng);
            const DType d = i % 3 == 0 ? DType::f32 : DType::f16;
            const Graph g = gemm_graph(m, n, k, d);
            const KernelCost c = gpu_kernel_cost(*lower_to_kernel(g, 0, hw), hw);
            INFO(chip << " " << m << "x" << n << "x" << k);
            CHECK(c.time_s >= c.lower_bound_s * (1 - 1e-12));
            Graph e;
            const TensorId x = e.add_input("x", {{m, n}, d});
            e.add_node("act", OpKind::gelu, {x}, {}, {});
            const KernelCost ce = gpu_kernel_cost(*lower_to_kernel(e, 0, hw), hw);
            CHECK(ce.time_s >= ce.lower_bound_s * (1 - 1e-12));
        }
    }
}

TEST_CASE("tiny kernels take at least the device latency floor, and their launches bound the step", "[gpu-model]") {
    const Hardware hw = builtin_hardware("h100-sxm");
    Graph g;
    const TensorId x = g.add_input("x", {{16}, DType::f32});
    g.add_node("r", OpKind::relu, {x}, {}, {});
    const KernelCost c = gpu_kernel_cost(*lower_to_kernel(g, 0, hw), hw);
    CHECK(c.bound == KernelBound::launch);
    // The latency, plus 128 bytes of traffic streamed by the one block's SM: a 132nd of the
    // streaming bandwidth (72% of 3.352 TB/s, GpuModelOptions::streaming_efficiency).
    const double tiny = GpuModelOptions{}.min_kernel_s + 128.0 / (3.352e12 * GpuModelOptions{}.streaming_efficiency / 132);
    CHECK(c.time_s == Approx(tiny).epsilon(1e-3));
    // 100 such kernels in a chain: each runs 1.2 us on the device, but the executor's host issues
    // one per interval (4.6 us for a streaming kernel, measured, ExecutorHost), so the step takes
    // 100 launches.
    Graph chain;
    TensorId t = chain.add_input("x", {{16}, DType::f32});
    for (int i = 0; i < 100; ++i) t = chain.node(chain.add_node("r" + std::to_string(i), OpKind::relu, {t}, {}, {})).outputs[0];
    const Analysis a = analyze(chain, hw);
    CHECK(a.schedule.step_time_s == Approx(100 * ExecutorHost{}.stream_launch_s + GpuModelOptions{}.min_kernel_s).epsilon(1e-3));
    // Timed under CUPTI's Activity tracer, each launch costs the host the tracer's time too.
    AnalysisOptions traced;
    traced.executor.traced = true;
    const double per_launch = ExecutorHost{}.stream_launch_s + ExecutorHost{}.stream_tracer_s;
    CHECK(analyze(chain, hw, traced).schedule.step_time_s == Approx(100 * per_launch + GpuModelOptions{}.min_kernel_s).epsilon(1e-3));
    AnalysisOptions free_issue;
    free_issue.gpu.host_issue = false;
    CHECK(analyze(chain, hw, free_issue).schedule.step_time_s == Approx(100 * tiny).epsilon(1e-3));
    GpuModelOptions no_floor;
    no_floor.launch_floor = false;
    CHECK(gpu_kernel_cost(*lower_to_kernel(g, 0, hw), hw, no_floor).time_s < 1e-8);
}

TEST_CASE("split-K fills the SMs for a GEMM with few tiles and a long K", "[gpu-model][gemm]") {
    // 256 x 256 output, K = 65536, bf16 on an A100 (108 SMs, no stream-K): at most 4-16 tiles, so
    // without split-K most SMs idle; splitting K lets the tiles spread over the SMs, as cuBLAS does.
    const Hardware hw = builtin_hardware("a100-sxm-80gb");
    const Graph g = gemm_graph(256, 256, 65536, DType::bf16);
    const Kernel chosen = *lower_to_kernel(g, 0, hw);
    CHECK(chosen.gemm->split_k > 1);
    GpuModelOptions no_split;
    no_split.split_k = 1;
    const KernelCost with = gpu_kernel_cost(chosen, hw), without = gpu_kernel_cost(*lower_to_kernel(g, 0, hw, no_split), hw, no_split);
    // On an H100 stream-K (on by default from sm_90) balances partial waves, but with fewer tiles
    // than SMs there is no wave to share: the kernel suite's 1024^3 bf16 GEMM (64 tiles of 128 x
    // 128 on 132 SMs) ran 6.3 us, a whole tile's K loop per SM, not the 2.7 us of a spread
    // (tests/data/measured/h100-sxm-2026-11-23/suite.json). A long K is spread by split-K there too.
    const Hardware h100 = builtin_hardware("h100-sxm");
    const Kernel h100_chosen = *lower_to_kernel(g, 0, h100);
    CHECK(h100_chosen.gemm->split_k > 1);
    INFO("tile " << h100_chosen.gemm->tile.m << "x" << h100_chosen.gemm->tile.n << " split " << h100_chosen.gemm->split_k << " tiles "
                 << h100_chosen.gemm->tiles);
    const KernelCost spread = gpu_kernel_cost(h100_chosen, h100);
    const KernelCost one_split = gpu_kernel_cost(*lower_to_kernel(g, 0, h100, no_split), h100, no_split);
    // Spread over 64 CTAs (16 tiles of 64 x 64, split 4) the math takes a quarter of the time and
    // the GEMM becomes bound by its 67 MB of operands (24 us at the STREAM rate): 0.27 of the
    // unsplit 89 us. Expected below 0.3.
    CHECK(spread.compute_s <= 0.26 * one_split.compute_s);
    CHECK(spread.time_s - spread.floor_s < 0.3 * (one_split.time_s - one_split.floor_s));  // beyond the fixed latency
    CHECK(with.time_s < without.time_s);
    CHECK(with.time_s >= with.lower_bound_s);
    // A large square GEMM has plenty of tiles: no split.
    CHECK(lower_to_kernel(gemm_graph(8192, 8192, 8192, DType::bf16), 0, hw)->gemm->split_k == 1);
}

TEST_CASE("GEMM traffic per level: panels through L2 and shared memory, HBM compulsory while A and B fit", "[gpu-model][gemm]") {
    const Hardware hw = builtin_hardware("h100-sxm");  // 50 MiB L2
    GpuModelOptions opt;
    opt.gemm_tile = GemmTile{128, 128};
    // 4096^3 bf16: A + B = 64 MiB > 50 MiB of L2 -> some re-reads reach HBM
    const Graph big = gemm_graph(4096, 4096, 4096, DType::bf16);
    const KernelCost c = gpu_kernel_cost(*lower_to_kernel(big, 0, hw, opt), hw, opt);
    REQUIRE(c.traffic.size() == 3);
    // L2 and smem: 32 x 32 tiles x (128 + 128) x 4096 x 2 bytes + C (32 MiB)
    const double panels = 1024.0 * 256 * 4096 * 2 + 4096.0 * 4096 * 2;
    // L2 serves the shared operand once per 2-block cluster (TMA multicast on sm_90):
    // 32 x 32 tiles x (128 + 128 / 2) x 4096 x 2 bytes + C; shared memory receives full panels.
    const double l2_panels = 1024.0 * (128 + 64) * 4096 * 2 + 4096.0 * 4096 * 2;
    CHECK(c.traffic[1].bytes == Approx(l2_panels));
    CHECK(c.traffic[2].bytes == Approx(panels));
    const double compulsory = 3.0 * 4096 * 4096 * 2;
    // Default: each wave's concurrent tiles share their panels in L2. 132 SMs as a swizzled
    // 11 x 12 rectangle of 128x128 tiles (wm = round(sqrt(132)) = 11, wn = ceil(132 / 11) = 12),
    // ceil(1024 / 132) = 8 waves, each reading (11 + 12) x 128 rows/columns x 4096 x 2 bytes, plus C.
    const double waves = 8 * (11.0 + 12.0) * 128 * 4096 * 2 + 4096.0 * 4096 * 2;
    CHECK(c.traffic[0].bytes == Approx(waves));
    // Measured on an H100 SXM (2026-11-23, tests/data/measured): cuBLASLt's 4096^3 bf16 GEMM read
    // and wrote 196 MB of DRAM; the wave model says 226 MB, the capacity estimate below 556 MB.
    CHECK(waves < 1.2 * 196e6);
    GpuModelOptions capacity = opt;
    capacity.wave_footprint_reuse = false;
    const KernelCost cc = gpu_kernel_cost(*lower_to_kernel(big, 0, hw, capacity), hw, capacity);
    const double miss = 1.0 - (50.0 * 1024 * 1024) / (2.0 * 4096 * 4096 * 2);
    CHECK(cc.traffic[0].bytes == Approx(compulsory + miss * (l2_panels - compulsory)));
    // 2048^3: A + B = 16 MiB fit in L2: HBM traffic is the compulsory traffic
    const KernelCost s = gpu_kernel_cost(*lower_to_kernel(gemm_graph(2048, 2048, 2048, DType::bf16), 0, hw, opt), hw, opt);
    CHECK(s.traffic[0].bytes == Approx(3.0 * 2048 * 2048 * 2));
}

TEST_CASE("convolutions lower to implicit GEMMs", "[gpu-model][gemm]") {
    // ResNet-50's 3x3, 64->64 convolution on 56x56 with batch 32, bf16: implicit GEMM with
    // M = 32 x 56 x 56 = 100,352, N = 64, K = 64 x 3 x 3 = 576 (cuDNN's mapping).
    const Hardware hw = builtin_hardware("a100-sxm-80gb");
    Graph g;
    const TensorId x = g.add_input("x", {{32, 64, 56, 56}, DType::bf16});
    const TensorId w = g.add_parameter("w", {{64, 64, 3, 3}, DType::bf16});
    Attrs pad;
    pad.set("padding", std::vector<std::int64_t>{1, 1});
    g.add_node("conv", OpKind::conv2d, {x, w}, pad, {});
    const Kernel k = *lower_to_kernel(g, 0, hw);
    REQUIRE(k.gemm.has_value());
    CHECK(k.gemm->m == 100352);
    CHECK(k.gemm->n == 64);
    CHECK(k.gemm->k == 576);
    CHECK(k.tensor_cores);
    const KernelCost c = gpu_kernel_cost(k, hw);
    CHECK(c.time_s >= c.lower_bound_s);
}

TEST_CASE("Before sm_90, fp32 implicit-GEMM convolutions run one of cuDNN 8.9's three forward tiles, unsplit", "[gpu-model][conv]") {
    // The public conv rows (the study's launch columns, tests/data/public/neusight/README.md)
    // name only scudnn_128x128 (256 threads), _128x64 (128) and _128x32 (64 in 505 of 590 rows)
    // as implicit-GEMM forward kernels, grid z 1 in every row. 16 input channels: below the
    // 32-channel Winograd rule, so the implicit GEMM is what runs. Exact: a tile is a choice.
    const std::pair<std::int64_t, std::int64_t> shapes[] = {{16, 64}, {16, 1000}, {3, 96}, {24, 7}};
    for (const char* chip : {"v100-pcie-32gb", "t4", "p100-pcie-16gb", "p4", "a100-pcie-40gb"}) {
        const Hardware hw = builtin_hardware(chip);
        for (const auto& [cin, cout] : shapes) {
            Graph g;
            const TensorId x = g.add_input("x", {{8, cin, 56, 56}, DType::f32});
            const TensorId w = g.add_parameter("w", {{cout, cin, 3, 3}, DType::f32});
            Attrs pad;
            pad.set("padding", std::vector<std::int64_t>{1, 1});
            g.add_node("conv", OpKind::conv2d, {x, w}, pad, {});
            GpuModelOptions opt;
            opt.eager = true;
            const auto k = lower_to_kernel(g, 0, hw, opt);
            REQUIRE(k.has_value());
            INFO(chip << " C_in " << cin << " C_out " << cout);
            REQUIRE(k->gemm.has_value());
            CHECK(k->gemm->split_k == 1);
            CHECK(k->gemm->tile.m == 128);
            const std::int64_t threads = k->gemm->tile.n == 128 ? 256 : k->gemm->tile.n == 64 ? 128 : 64;
            CHECK((k->gemm->tile.n == 128 || k->gemm->tile.n == 64 || k->gemm->tile.n == 32));
            CHECK(k->launch.threads_per_block == threads);
        }
    }
}

TEST_CASE("cuDNN's fused Winograd kernel launches the grid the public rows show", "[gpu-model][conv]") {
    // Three rows of the NeuSight conv measurements (3x3, stride 1, padding 1, fp32; the launch
    // columns of the study's conv.csv, dropped from tests/data/public/neusight): grid x y z of the
    // *_scudnn_winograd_128x128_* kernel. Exact: a grid is an integer.
    struct Case {
        const char* chip;
        std::int64_t batch, cin, cout, side, blocks;
        const char* launch;
    };
    const Case cases[] = {
        // V100 (Volta kernels: 1 image x 4 x 8 tiles): 44 x ceil(5/32) = 44, ceil(76/4) = 19, ceil(76/8) = 10
        {"v100-pcie-32gb", 44, 452, 5, 152, 44 * 19 * 10, "winograd 2x2 tile148 grid 44x19x10"},
        // T4, the same kernel: 5 x 1, ceil(28/4) = 7, ceil(28/8) = 4
        {"t4", 5, 565, 19, 55, 5 * 7 * 4, "winograd 2x2 tile148 grid 5x7x4"},
        // P100 (Maxwell kernels, six tile shapes): tile244n, ceil(4/2) x ceil(589/32) = 38 blocks, one
        // in each of y and z; 1 x 4 x 8 would launch 76 (the model takes the first of the least
        // padded shapes: 2 x 4 x 4 here, as the row ran)
        {"p100-pcie-16gb", 4, 2015, 589, 5, 38, "winograd 2x2 tile244 grid 38x1x1"},
    };
    for (const Case& c : cases) {
        Graph g;
        const TensorId x = g.add_input("x", {{c.batch, c.cin, c.side, c.side}, DType::f32});
        const TensorId w = g.add_parameter("w", {{c.cout, c.cin, 3, 3}, DType::f32});
        Attrs pad;
        pad.set("padding", std::vector<std::int64_t>{1, 1});
        g.add_node("conv", OpKind::conv2d, {x, w}, pad, {});
        const Hardware hw = builtin_hardware(c.chip);
        const auto k = fused_winograd_conv(g, 0, hw, DType::f32);
        REQUIRE(k.has_value());
        REQUIRE(k->parts.size() == 2);
        INFO(c.chip);
        CHECK(k->parts[1].blocks == c.blocks);
        CHECK(describe_launch(k->parts[1]) == c.launch);
        // The products are the Winograd ones: 16 per 2 x 2 output tile, channel pair.
        const std::int64_t tiles = c.batch * ((c.side + 1) / 2) * ((c.side + 1) / 2);
        CHECK(k->parts[1].work.matrix_flops == 2 * 16 * tiles * c.cin * c.cout);
        const KernelCost cost = gpu_kernel_cost(*k, hw);
        CHECK(cost.time_s >= cost.lower_bound_s);
    }
    // Strided convolutions have no Winograd form.
    Graph g;
    const TensorId x = g.add_input("x", {{1, 8, 16, 16}, DType::f32});
    const TensorId w = g.add_parameter("w", {{8, 8, 3, 3}, DType::f32});
    Attrs strided;
    strided.set("stride", std::vector<std::int64_t>{2, 2});
    g.add_node("conv", OpKind::conv2d, {x, w}, strided, {});
    CHECK_FALSE(fused_winograd_conv(g, 0, builtin_hardware("v100-pcie-32gb"), DType::f32).has_value());
}

TEST_CASE("row-wise kernels launch a warp per short row and a block per long row", "[gpu-model]") {
    const Hardware hw = builtin_hardware("h100-sxm");
    Graph g;
    const TensorId s = g.add_input("s", {{8192, 1024}, DType::bf16});
    const TensorId l = g.add_input("l", {{16, 50257}, DType::bf16});
    const TensorId t = g.add_input("t", {{16}, DType::int64});
    g.add_node("sm", OpKind::softmax, {s}, {}, {});
    g.add_node("ce", OpKind::cross_entropy, {l, t}, {}, {});
    Attrs cols;
    cols.set("axes", std::vector<std::int64_t>{0});
    g.add_node("colsum", OpKind::reduce_sum, {s}, cols, {});
    // 8192 rows of 1024: one warp each, 4 rows per 128-thread block -> 2048 blocks.
    const Kernel sm = *lower_to_kernel(g, 0, hw);
    CHECK(sm.launch.threads_per_block == 128);
    CHECK(sm.blocks == 2048);
    // 16 rows of 50257: one 512-thread block per row; 16 blocks leave most of the 132 SMs idle,
    // which the tail efficiency shows.
    const Kernel ce = *lower_to_kernel(g, 1, hw);
    CHECK(ce.launch.threads_per_block == 512);
    CHECK(ce.blocks == 16);
    CHECK(gpu_kernel_cost(ce, hw).tail_efficiency < 0.2);
    // A reduction over the leading axis is not a row kernel: the generic streaming launch.
    CHECK(lower_to_kernel(g, 2, hw)->launch.threads_per_block == 256);
}
