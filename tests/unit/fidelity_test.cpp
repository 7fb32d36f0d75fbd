// Issue #15's mechanisms: what kernels achieve kept apart from the datasheet peaks, the eager
// runtime, and the invariant that no op is modelled below its own roofline lower bound.
#include <catch2/catch.hpp>
#include <random>

#include "model/autodiff.hpp"
#include "model/graph.hpp"
#include "model/model_json.hpp"
#include "sim/achieved.hpp"
#include "sim/analysis.hpp"
#include "sim/gpu_model.hpp"

using namespace roofline;

namespace {

Graph one_op(OpKind kind, std::vector<TensorDesc> inputs, Attrs attrs = {}) {
    Graph g;
    std::vector<TensorId> ids;
    for (std::size_t i = 0; i < inputs.size(); ++i) ids.push_back(g.add_input("x" + std::to_string(i), inputs[i]));
    g.add_node("op", kind, ids, attrs, {});
    return g;
}

Attrs int_attr(const char* name, std::int64_t v) {
    Attrs a;
    a.set(name, v);
    return a;
}

Attrs ints_attr(const char* name, std::vector<std::int64_t> v) {
    Attrs a;
    a.set(name, std::move(v));
    return a;
}

std::vector<Hardware> gpu_specs() {
    std::vector<Hardware> out;
    for (const std::string& name : builtin_hardware_names()) {
        Hardware hw = builtin_hardware(name);
        if (hw.kind == HardwareKind::gpu) out.push_back(std::move(hw));
    }
    return out;
}

}  // namespace

TEST_CASE("no op is modelled below its own roofline lower bound, on every GPU spec", "[fidelity][property]") {
    // Property over random shapes of every kernel family (GEMM f32 SIMT and 16-bit tensor-core,
    // batched GEMM, elementwise, row kernels short and long, layernorm and its eager backward) on
    // every built-in GPU spec, in the native and the eager runtime. Efficiency = lower bound /
    // modelled time must be <= 1 (1e-12 relative slack for rounding): every achieved rate is at most
    // its datasheet peak and every level's traffic at least the compulsory bytes.
    std::mt19937_64 rng(20261125);
    std::uniform_int_distribution<std::int64_t> dim(1, 5000), small(1, 300);
    for (const Hardware& hw : gpu_specs()) {
        for (int i = 0; i < 60; ++i) {
            const std::int64_t m = dim(rng), n = dim(rng), k = dim(rng), b = small(rng);
            const DType d = i % 2 == 0 ? DType::f32 : DType::f16;
            const std::vector<Graph> graphs = {
                one_op(OpKind::matmul, {{{m, k}, d}, {{k, n}, d}}),
                one_op(OpKind::matmul, {{{b, small(rng), k % 700 + 1}, d}, {{b, k % 700 + 1, small(rng)}, d}}),
                one_op(OpKind::add, {{{m, n}, d}, {{m, n}, d}}),
                one_op(OpKind::gelu, {{{m, n}, d}}),
                one_op(OpKind::softmax, {{{m, n}, d}}),
                one_op(OpKind::softmax, {{{b, 4 * n}, d}}),
                one_op(OpKind::layernorm, {{{m, n}, d}, {{n}, d}, {{n}, d}}),
                one_op(OpKind::layernorm_grad, {{{m, n}, d}, {{m, n}, d}, {{n}, d}}, int_attr("affine", 2)),
            };
            for (const Graph& g : graphs) {
                for (const Runtime rt : {Runtime::native, Runtime::eager}) {
                    AnalysisOptions opt;
                    opt.runtime = rt;
                    const Analysis a = analyze(g, hw, opt);
                    for (const OpAnalysis& op : a.ops) {
                        if (!op.modelled) continue;
                        INFO(hw.name << " " << op_name(g.node(op.node).kind) << " m=" << m << " n=" << n << " k=" << k << " b=" << b
                                     << " runtime " << runtime_name(rt));
                        CHECK(op.modelled->time_s >= op.roofline->time_s * (1 - 1e-12));
                    }
                }
            }
        }
    }
}

TEST_CASE("no op of a model preset is modelled below its lower bound", "[fidelity][property]") {
    // The presets users analyze first, training steps included, on a datasheet and a power-limited
    // spec: every op's efficiency <= 1 (issue #15 saw 1.92 on llama-2-7b).
    for (const char* model : {"gpt2-small", "llama-2-7b", "bert-base-uncased", "vit-b16"}) {
        ModelOverrides ov;
        ov.batch = 2;
        if (std::string(model) != "vit-b16") ov.seq = 256;
        Graph g = load_model_arg(model, ov);
        for (const bool train : {false, true}) {
            const Graph step = train ? build_training_step(g, TrainingOptions{}) : g;
            for (const char* chip : {"h100-sxm", "t4", "a100-pcie-40gb"}) {
                const Hardware hw = builtin_hardware(chip);
                const Analysis a = analyze(step, hw);
                for (const OpAnalysis& op : a.ops) {
                    if (!op.modelled) continue;
                    INFO(model << (train ? " training" : "") << " on " << chip << ": " << step.node(op.node).name);
                    CHECK(op.modelled->time_s >= op.roofline->time_s * (1 - 1e-12));
                }
            }
        }
    }
}

TEST_CASE("achieved rates stay below the peaks and follow their mechanisms", "[fidelity]") {
    const GpuModelOptions opt;
    SECTION("power-limited clocks of low-power boards") {
        // clock ratio = board power / (FP32 lanes x boost clock x energy per lane-cycle at the
        // node): T4 (70 W, 2560 lanes, 1.59 GHz, 12 nm) and L4 (72 W, 7424 lanes, 2.04 GHz, 4 nm)
        // cannot feed every lane at boost; A100 PCIe (250 W, 6912 lanes, 1.41 GHz, 7 nm) and
        // H100 SXM (700 W) can. Expected from the formula with the default (fitted) energy per
        // lane-cycle at 16 nm, within 1%; the published SGEMM rates these imply (L4 ~40% of its
        // FP32 peak, sim/achieved.cpp) are the evidence for the mechanism.
        auto ratio = [&](const char* chip) { return achieved_rates(builtin_hardware(chip), opt).clock_ratio; };
        const double e16 = opt.energy_per_lane_cycle_16nm;
        CHECK(ratio("t4") == Approx(70.0 / (2560 * 1.59e9 * e16 * 12 / 16)).epsilon(0.01));
        CHECK(ratio("t4") < 0.7);
        CHECK(ratio("l4") == Approx(72.0 / (7424 * 2.04e9 * e16 * 4 / 16)).epsilon(0.01));
        CHECK(ratio("l4") < 0.6);
        CHECK(ratio("a100-pcie-40gb") == 1.0);
        CHECK(ratio("h100-sxm") == 1.0);
    }
    SECTION("device memory: the chip's own STREAM figure, else its technology's") {
        for (const Hardware& hw : gpu_specs()) {
            const AchievedRates r = achieved_rates(hw, opt);
            INFO(hw.name);
            CHECK(r.dram_bytes_per_s <= hw.device_memory().bytes_per_s.value);
            CHECK(r.dram_bytes_per_s >= 0.5 * hw.device_memory().bytes_per_s.value);
            CHECK(r.matrix_fraction <= 1.0);
            CHECK(r.clock_ratio <= 1.0);
        }
    }
}

TEST_CASE("the default h100-sxm spec models a bf16 8192^3 GEMM within 10% of the measured 1.39 ms", "[fidelity][gemm]") {
    // Measured with CUPTI on the project's H100 SXM (tests/data/measured/h100-sxm-2026-11-23,
    // kernel suite: cuBLASLt 8192^3 bf16, 1.39 ms). The datasheet's 989 TFLOP/s would give 1.11 ms;
    // the achieved rate comes from the published best-shape cuBLAS rate of the chip (794.5 TFLOP/s,
    // stas00/ml-engineering), not from our measurement.
    const Hardware hw = builtin_hardware("h100-sxm");
    const Graph g = one_op(OpKind::matmul, {{{8192, 8192}, DType::bf16}, {{8192, 8192}, DType::bf16}});
    const Analysis a = analyze(g, hw);
    CHECK(a.ops[0].modelled->time_s == Approx(1.39e-3).epsilon(0.10));
}

TEST_CASE("fp8 GEMMs run at the spec's measured fp8 fraction, else at the bf16 one", "[fidelity][gemm]") {
    // h100-sxm names an achieved fp8 rate (1.421 PFLOP/s: roofline calibrate's 8192^3 e4m3 GEMM on
    // an H100 SXM, 2026-11-26, put on the bf16 entry's best-shape footing). Expected: an fp8 8192^3
    // GEMM within 10% of 2 * 8192^3 / 1.421e15 = 0.774 ms (the same tolerance as the bf16 check
    // above: tile and wave terms on top of the rate), and slower than at the bf16 fraction of the
    // fp8 peak. A spec without the entry (h200) keeps one fraction for both.
    const Hardware hw = builtin_hardware("h100-sxm");
    const GpuModelOptions opt;
    const AchievedRates r = achieved_rates(hw, opt);
    CHECK(r.matrix_fraction_of(DType::fp8_e4m3) == Approx(1.421e15 / 1.97885952e15).epsilon(1e-3));
    CHECK(r.matrix_fraction_of(DType::fp8_e5m2) == r.matrix_fraction_of(DType::fp8_e4m3));
    CHECK(r.matrix_fraction_of(DType::bf16) == Approx(794.5e12 / 989.42976e12).epsilon(1e-3));
    const Graph g = one_op(OpKind::matmul, {{{8192, 8192}, DType::fp8_e4m3}, {{8192, 8192}, DType::fp8_e4m3}});
    const Analysis a = analyze(g, hw);
    CHECK(a.ops[0].modelled->time_s == Approx(2.0 * 8192.0 * 8192.0 * 8192.0 / 1.421e15).epsilon(0.10));
    const AchievedRates h200 = achieved_rates(builtin_hardware("h200"), opt);
    CHECK(h200.matrix_fraction_of(DType::fp8_e4m3) == h200.matrix_fraction);
}

TEST_CASE("SIMT SGEMMs pick a cuBLAS sgemm tile and run at the micro-tile's FFMA share", "[fidelity][gemm]") {
    // fp32 with TF32 off runs on CUDA cores. A large square GEMM picks an 8x8 micro-tile (128x128
    // or 128x64) and runs at most at its FFMA share 8*8 / (8*8 + c*16) of the FP32 peak times the
    // fitted main-loop efficiency (c, the fragment-load cost, fitted too); a V100 PCIe (not
    // power-limited) lands between 60% of the peak and that ceiling.
    const Hardware hw = builtin_hardware("v100-pcie-32gb");
    const Graph g = one_op(OpKind::matmul, {{{8192, 8192}, DType::f32}, {{8192, 8192}, DType::f32}});
    const Kernel k = *lower_to_kernel(g, 0, hw);
    REQUIRE(k.gemm);
    CHECK_FALSE(k.tensor_cores);
    CHECK(k.gemm->tile.threads > 0);
    CHECK(k.gemm->tile.m * k.gemm->tile.n >= 128 * 64);
    const KernelCost c = gpu_kernel_cost(k, hw);
    const double fraction = 2.0 * 8192.0 * 8192.0 * 8192.0 / c.time_s / hw.vector_flop_per_s.at(DType::f32).value;
    const GpuModelOptions opt;
    const double ceiling = 64.0 / (64.0 + 16.0 * opt.simt_fragment_load_cost) * opt.simt_gemm_efficiency;
    CHECK(fraction > 0.6);
    CHECK(fraction <= ceiling * (1 + 1e-9));
}

TEST_CASE("a per-op timing loop keeps a working set that fits in L2 there", "[fidelity][l2]") {
    // GpuModelOptions::warm_l2: an add of two [B, 1024] fp32 tensors moves 12 KiB x B (two reads,
    // one write). On a P4 (2 MiB L2) B = 128 (1.5 MiB) stays in L2 between calls: no DRAM bytes,
    // and the kernel streams at the L2 rate, so it is faster than the DRAM-bound cold kernel. B =
    // 256 (3 MiB) does not fit: swept cyclically, LRU keeps none of it, and the warm kernel pays
    // exactly the cold one's DRAM bytes. Off (the default, graphs), nothing changes.
    const Hardware hw = builtin_hardware("p4");
    auto cost = [&](std::int64_t rows, bool warm) {
        const Graph g = one_op(OpKind::add, {TensorDesc{{rows, 1024}, DType::f32}, TensorDesc{{rows, 1024}, DType::f32}});
        GpuModelOptions o;
        o.warm_l2 = warm;
        const auto k = lower_to_kernel(g, 0, hw, o);
        REQUIRE(k.has_value());
        return gpu_kernel_cost(*k, hw, o);
    };
    auto dram_bytes = [&](const KernelCost& c) {
        for (const auto& t : c.traffic)
            if (t.level == hw.device_memory().name) return t.bytes;
        FAIL("no device-memory traffic entry");
        return -1.0;
    };
    const KernelCost small_cold = cost(128, false), small_warm = cost(128, true);
    CHECK(dram_bytes(small_cold) == 128.0 * 1024 * 4 * 3);
    CHECK(dram_bytes(small_warm) == 0.0);
    CHECK(small_warm.time_s < small_cold.time_s);
    const KernelCost big_cold = cost(256, false), big_warm = cost(256, true);
    CHECK(dram_bytes(big_warm) == dram_bytes(big_cold));
    CHECK(big_warm.time_s == big_cold.time_s);
}

TEST_CASE("eager runtime: ATen's kernels per op and a host that can run behind the GPU", "[fidelity][eager]") {
    const Hardware hw = builtin_hardware("a100-pcie-40gb");
    SECTION("layernorm backward is two kernels, embedding backward a fill and a scatter") {
        GpuModelOptions eager;
        eager.eager = true;
        const Graph ln = one_op(OpKind::layernorm_grad, {{{4096, 1024}, DType::f32}, {{4096, 1024}, DType::f32}, {{1024}, DType::f32}},
                                int_attr("affine", 2));
        CHECK(lower_to_kernel(ln, 0, hw, eager)->parts.size() == 2);
        // The project's executor runs three (ops/cuda/rowwise.cu): dx, column partials, their sum.
        CHECK(lower_to_kernel(ln, 0, hw)->parts.size() == 3);
        const Graph emb =
            one_op(OpKind::embedding_grad, {{{8, 512, 1024}, DType::f32}, {{8, 512}, DType::int64}}, int_attr("num_embeddings", 30522));
        CHECK(lower_to_kernel(emb, 0, hw, eager)->parts.size() == 3);  // 4096 indices > 3072: sorted first
    }
    SECTION("a chain of tiny ops is host-bound, a chain of large ones GPU-bound") {
        // Each op costs the host its dispatcher steps (relu: the call, clamp_min, the output's
        // allocation, the launch: 4) to dispatch; kernels start when dispatched and when their
        // input is ready, so the step is max(host, GPU) with queueing, not a sum.
        auto chain = [](std::int64_t n) {
            Graph g;
            TensorId x = g.add_input("x", {{n}, DType::f32});
            for (int i = 0; i < 20; ++i) x = g.node(g.add_node("relu" + std::to_string(i), OpKind::relu, {x}, {}, {})).outputs[0];
            return g;
        };
        AnalysisOptions opt;
        opt.runtime = Runtime::eager;
        const double per_op = 4 * opt.eager_op_host_s;
        CHECK(eager_host_s(chain(1024), 0, opt, 1) == Approx(per_op));
        const Analysis tiny = analyze(chain(1024), hw, opt);
        CHECK(tiny.schedule.step_time_s >= 20 * per_op);
        CHECK(tiny.schedule.step_time_s <= 20 * per_op + tiny.ops.back().modelled->time_s * 1.0001);
        const Analysis big = analyze(chain(std::int64_t{1} << 28), hw, opt);
        double kernels = 0;
        for (const OpAnalysis& op : big.ops) kernels += op.modelled->time_s;
        CHECK(big.schedule.step_time_s == Approx(kernels + per_op).epsilon(1e-9));
    }
    SECTION("dispatcher steps follow the profiler's trace of each call") {
        // add: the call, its output, its launch (3); softmax -> _softmax (4); layer_norm ->
        // native_layer_norm with mean and rstd allocated (6); nn.Linear with a bias: linear, t,
        // transpose, as_strided, addmm, expand, as_strided, the output, two launches (bias copy,
        // GEMM) (9); nn.Conv2d: conv2d and its three inner calls, the output, two of cuDNN's kernels (7).
        const Graph add = one_op(OpKind::add, {{{64, 64}, DType::f32}, {{64, 64}, DType::f32}});
        CHECK(eager_host_steps(add, 0, 1) == 3);
        const Graph sm = one_op(OpKind::softmax, {{{64, 64}, DType::f32}});
        CHECK(eager_host_steps(sm, 0, 1) == 4);
        const Graph ln = one_op(OpKind::layernorm, {{{64, 64}, DType::f32}, {{64}, DType::f32}, {{64}, DType::f32}});
        CHECK(eager_host_steps(ln, 0, 1) == 6);
        GpuModelOptions eager;
        eager.eager = true;
        const Graph lin = one_op(OpKind::linear, {{{256, 512}, DType::f32}, {{1024, 512}, DType::f32}, {{1024}, DType::f32}});
        const auto k = lower_to_kernel(lin, 0, hw, eager);
        REQUIRE(k->parts.size() == 2);  // the bias copied into the output, then the GEMM with beta = 1
        CHECK(k->parts[1].work.bytes_read == lin.work(0).bytes_read + 256 * 1024 * 4);  // reads the output back
        CHECK(eager_host_steps(lin, 0, 2) == 9);
        const Graph conv = one_op(OpKind::conv2d, {{{8, 16, 32, 32}, DType::f32}, {{32, 16, 3, 3}, DType::f32}, {{32}, DType::f32}},
                                  ints_attr("padding", {1, 1}));
        AnalysisOptions opt;
        opt.runtime = Runtime::eager;
        CHECK(eager_host_s(conv, 0, opt, 2) == Approx(7 * opt.eager_op_host_s + opt.eager_cudnn_host_s));
    }
    SECTION("one call timed alone: the end event waits for the host's recording and the last kernel") {
        // latency = max(host + timing, dispatch + device), smoothed by the p-norm: a tiny add sits
        // on the host's floor (3 dispatcher steps + the timing), a large one is the dispatch plus
        // the kernel (the public A100 add: flat at 27 us to ~20 MB, then 15 us + bytes / 1.36 TB/s).
        // Tolerances: the p-norm's excess over the maximum, (1 + r^p)^(1/p) - 1 for the ratio r of
        // the smaller to the larger term, is under 4% for r <= 0.65 and under 1% for r <= 0.4 at the
        // fitted p (3.93).
        AnalysisOptions opt;
        opt.runtime = Runtime::eager;
        const double dispatch = 3 * opt.eager_op_host_s, host = dispatch + opt.eager_timing_host_s;
        const Graph tiny = one_op(OpKind::add, {{{1024}, DType::f32}, {{1024}, DType::f32}});
        const Analysis at = analyze(tiny, hw, opt);
        REQUIRE(dispatch + at.ops[0].modelled->time_s < 0.65 * host);
        CHECK(single_call_latency_s(tiny, at, opt) >= host);
        CHECK(single_call_latency_s(tiny, at, opt) == Approx(host).epsilon(0.04));
        const Graph big = one_op(OpKind::add, {{{1 << 27}, DType::f32}, {{1 << 27}, DType::f32}});
        const Analysis ab = analyze(big, hw, opt);
        const double device = ab.ops[0].modelled->time_s;
        REQUIRE(host < 0.4 * (dispatch + device));
        CHECK(single_call_latency_s(big, ab, opt) == Approx(dispatch + device).epsilon(0.01));
        // Where the kernel takes about as long as the host's work (~20 MB moved), the call is far
        // below the sum of the two (the measured A100 add of 22 MB: 27.4 us, its kernel ~17 us,
        // its host floor 27 us): under 0.8 of host + device, where a sum-like overlap gives ~0.9.
        const Graph mid = one_op(OpKind::add, {{{1 << 21}, DType::f32}, {{1 << 21}, DType::f32}});
        const Analysis am = analyze(mid, hw, opt);
        const double dm = am.ops[0].modelled->time_s;
        REQUIRE(dm > 0.5 * host);
        REQUIRE(dm < 1.5 * host);
        CHECK(single_call_latency_s(mid, am, opt) < 0.8 * (host + dm));
    }
}

TEST_CASE("batched SIMT SGEMMs with a short K loop are bound by their epilogue's store rate", "[fidelity][gemm]") {
    // torch.bmm in fp32 with K = 16 writes its output at a constant rate per GPU in the public
    // timings (A100-PCIE-40GB: 240 GB/s, far below its 1360 GB/s STREAM rate); the model caps the
    // output at batched_simt_store_bytes_per_clock x SMs x sustained clock. An unbatched GEMM of
    // the same total shape (nn.Linear's addmm) is not capped: it is bound by DRAM, several times faster.
    const Hardware hw = builtin_hardware("a100-pcie-40gb");
    const GpuModelOptions opt;
    const Graph bmm = one_op(OpKind::matmul, {{{256, 512, 16}, DType::f32}, {{256, 16, 512}, DType::f32}});
    const KernelCost cb = gpu_kernel_cost(*lower_to_kernel(bmm, 0, hw), hw);
    const double out = 256.0 * 512 * 512 * 4;
    const double cap = out / (hw.gpu->sm_count.value * hw.clock_hz.value * opt.batched_simt_store_bytes_per_clock);
    CHECK(cb.time_s >= cap * (1 - 1e-9));
    const Graph mm = one_op(OpKind::matmul, {{{256 * 512, 16}, DType::f32}, {{16, 512}, DType::f32}});
    const KernelCost cm = gpu_kernel_cost(*lower_to_kernel(mm, 0, hw), hw);
    CHECK(cm.time_s < 0.5 * cb.time_s);
}
