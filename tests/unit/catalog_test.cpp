// The hardware catalog of issue #15: every built-in spec loads and carries what the GPU model
// needs (SM count, clock, an L2 level, device memory with its technology); the peaks of the chips
// added here are the datasheet arithmetic; published measurements sit under their peaks; bad
// memory technologies and bad "achieved" values are rejected with the file and the JSON path.
#include <algorithm>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <type_traits>

#include "model/graph.hpp"
#include "sim/achieved.hpp"
#include "sim/builtin_hardware.hpp"
#include "sim/gpu_model.hpp"
#include "sim/hardware.hpp"
#include "sim/roofline.hpp"
#include "support.hpp"

using namespace roofline;
using nlohmann::json;

namespace {

const std::set<std::string> kGpus(test::kGpuSpecs.begin(), test::kGpuSpecs.end());
const std::set<std::string> kTpus(test::kTpuSpecs.begin(), test::kTpuSpecs.end());

json builtin_json(const std::string& name) {
    for (const auto& f : builtin_hardware_files())
        if (f.name == name) return json::parse(f.text);
    FAIL("no built-in spec " << name);
    return {};
}

const SourcedValue& peak(const Hardware& hw, char unit, DType d) {
    return (unit == 'm' ? hw.matrix_flop_per_s : hw.vector_flop_per_s).at(d);
}

}  // namespace

TEST_CASE("the catalog is exactly the built-in specs, and each loads", "[hardware][catalog]") {
    const auto names = builtin_hardware_names();
    const std::set<std::string> got(names.begin(), names.end());
    std::set<std::string> want = kGpus;
    want.insert(kTpus.begin(), kTpus.end());
    CHECK(got == want);
    CHECK(names.size() == want.size());
    for (const std::string& name : names) {
        INFO(name);
        const Hardware hw = builtin_hardware(name);
        CHECK(hw.name == name);
        CHECK(hw.kind == (kTpus.count(name) ? HardwareKind::tpu : HardwareKind::gpu));
    }
}

TEST_CASE("every GPU spec has what the GPU model needs", "[hardware][catalog]") {
    for (const std::string& name : kGpus) {
        INFO(name);
        const Hardware hw = builtin_hardware(name);
        REQUIRE(hw.gpu.has_value());
        CHECK(hw.gpu->sm_count.value > 0);
        CHECK(hw.clock_hz.value > 0);
        // Device memory, L2 and shared memory, each by its role (the GPU model asks roles).
        REQUIRE(hw.memory.size() == 3);
        REQUIRE(hw.find(MemoryRole::l2) != nullptr);
        CHECK(hw.find(MemoryRole::l2)->name == "l2");
        CHECK(hw.find(MemoryRole::shared)->name == "smem");
        CHECK(hw.find(MemoryRole::device) == &hw.device_memory());
        CHECK(hw.find(MemoryRole::vector_memory) == nullptr);
        // The device memory names its technology, of the family its level name says.
        const std::string& tech = hw.device_memory().technology;
        const auto& known = memory_technologies();
        CHECK(std::find(known.begin(), known.end(), tech) != known.end());
        CHECK(tech.rfind(hw.device_memory().name, 0) == 0);  // "hbm3" on "hbm", "gddr6" on "gddr"
        CHECK(hw.memory[1].technology.empty());
        // Power and process node for the power-limited clock model.
        REQUIRE(hw.power_w.has_value());
        REQUIRE(hw.process_nm.has_value());
        CHECK(hw.power_w->value >= 70);
        CHECK(hw.power_w->value <= 700);
    }
    for (const std::string& name : kTpus) {
        INFO(name);
        const Hardware hw = builtin_hardware(name);
        CHECK(hw.device_memory().technology.rfind("hbm2", 0) == 0);  // Google's pages: HBM2 (v4, v5e), HBM2e (v5p)
        CHECK(hw.find(MemoryRole::l2) == nullptr);
        CHECK(hw.find(MemoryRole::device) == &hw.device_memory());
        CHECK(hw.find(MemoryRole::shared) == nullptr);
    }
}

TEST_CASE("memory technology of every chip", "[hardware][catalog]") {
    // Datasheets: P100/V100 HBM2; A100 40GB HBM2 and 80GB HBM2e (the A100 datasheet lists the two
    // separately); H100 PCIe HBM2e, H100 SXM HBM3, H200 HBM3e; P4 GDDR5; T4/A10/L4 GDDR6; RTX 4090
    // GDDR6X; Google Cloud TPU pages: v4/v5e HBM2, v5p HBM2e.
    const std::pair<const char*, const char*> expected[] = {
        {"p100-pcie-16gb", "hbm2"},
        {"v100-pcie-32gb", "hbm2"},
        {"v100-sxm-32gb", "hbm2"},
        {"a100-sxm-40gb", "hbm2"},
        {"a100-pcie-40gb", "hbm2"},
        {"a100-sxm-80gb", "hbm2e"},
        {"a100-pcie-80gb", "hbm2e"},
        {"h100-pcie", "hbm2e"},
        {"h100-sxm", "hbm3"},
        {"h200", "hbm3e"},
        {"p4", "gddr5"},
        {"t4", "gddr6"},
        {"a10", "gddr6"},
        {"l4", "gddr6"},
        {"rtx-4090", "gddr6x"},
        {"tpu-v4", "hbm2"},
        {"tpu-v5e", "hbm2"},
        {"tpu-v5p", "hbm2e"},
    };
    for (const auto& [name, tech] : expected) {
        INFO(name);
        CHECK(builtin_hardware(name).device_memory().technology == tech);
    }
}

TEST_CASE("peaks of the added chips are the datasheet arithmetic", "[hardware][catalog]") {
    // value = SMs x FLOP per clock per SM x boost clock. The spec stores the product to 6
    // significant digits (arith tolerance 1e-5) except the A100 PCIe parts, which copy the A100
    // datasheet's rounded figures like the A100 SXM specs (0.1%). The datasheet column is what
    // NVIDIA prints; its tolerance says how far its rounding is from the arithmetic, and why.
    struct Row {
        const char* name;
        char unit;  // 'm' matrix (tensor cores), 'v' vector (CUDA cores)
        DType dtype;
        double sms, flop_per_clk_per_sm, clock_hz;
        double datasheet, datasheet_tol;
        double arith_tol;
    };
    const Row rows[] = {
        // V100 PCIe: 80 SMs x 64 FP32 lanes x 2 x 1.38 GHz = 14.13 TFLOP/s; the datasheet prints 14
        // (and 112 for the tensor cores: 80 x 8 TC x 64 FMA x 2 x 1.38 GHz = 113.05), i.e. ~1.37 GHz.
        {"v100-pcie-32gb", 'v', DType::f32, 80, 128, 1.38e9, 14.0e12, 0.015, 1e-5},
        {"v100-pcie-32gb", 'v', DType::f64, 80, 64, 1.38e9, 7.0e12, 0.015, 1e-5},
        {"v100-pcie-32gb", 'm', DType::f16, 80, 1024, 1.38e9, 112e12, 0.015, 1e-5},
        // V100 SXM2 at its whitepaper boost clock 1530 MHz: 15.67 / 7.83 / 125.3 (datasheet 15.7 / 7.8 / 125).
        {"v100-sxm-32gb", 'v', DType::f32, 80, 128, 1.53e9, 15.7e12, 0.005, 1e-5},
        {"v100-sxm-32gb", 'v', DType::f64, 80, 64, 1.53e9, 7.8e12, 0.005, 1e-5},
        {"v100-sxm-32gb", 'm', DType::f16, 80, 1024, 1.53e9, 125e12, 0.005, 1e-5},
        // P100 PCIe: 56 SMs x 64 lanes at 1.30 GHz: 9.32 / 4.66 / 18.64 (datasheet 9.3 / 4.7 / 18.7).
        {"p100-pcie-16gb", 'v', DType::f32, 56, 128, 1.30e9, 9.3e12, 0.005, 1e-5},
        {"p100-pcie-16gb", 'v', DType::f64, 56, 64, 1.30e9, 4.7e12, 0.01, 1e-5},
        {"p100-pcie-16gb", 'v', DType::f16, 56, 256, 1.30e9, 18.7e12, 0.005, 1e-5},
        // P4: 20 SMs x 128 lanes at NVIDIA's 1063 MHz boost = 5.44 TFLOP/s, the datasheet rounds to
        // 5.5 (1.1% off); DP4A int8 = 4x that = 21.8 TOP/s (datasheet 22).
        {"p4", 'v', DType::f32, 20, 256, 1.063e9, 5.5e12, 0.015, 1e-5},
        {"p4", 'v', DType::int8, 20, 1024, 1.063e9, 22e12, 0.015, 1e-5},
        // A100 PCIe: the A100 datasheet's figures (same as SXM): 108 SMs x 2048 x 1.41 GHz = 311.9.
        {"a100-pcie-40gb", 'm', DType::bf16, 108, 2048, 1.41e9, 312e12, 1e-9, 0.001},
        {"a100-pcie-80gb", 'm', DType::bf16, 108, 2048, 1.41e9, 312e12, 1e-9, 0.001},
        {"a100-pcie-80gb", 'v', DType::f32, 108, 128, 1.41e9, 19.5e12, 1e-9, 0.001},
        // A10: 72 SMs x 128 lanes at 1695 MHz: 31.24 (datasheet 31.2); dense tensor 1024 FP16 /
        // 512 TF32 / 2048 INT8 per clock per SM: 124.97 / 62.48 / 249.9 (datasheet 125 / 62.5 / 250).
        {"a10", 'v', DType::f32, 72, 256, 1.695e9, 31.2e12, 0.002, 1e-5},
        {"a10", 'm', DType::bf16, 72, 1024, 1.695e9, 125e12, 0.001, 1e-5},
        {"a10", 'm', DType::tf32, 72, 512, 1.695e9, 62.5e12, 0.001, 1e-5},
        {"a10", 'm', DType::int8, 72, 2048, 1.695e9, 250e12, 0.001, 1e-5},
        // RTX 4090 (Ada whitepaper): 128 SMs at 2520 MHz: FP32 82.6; FP16/BF16 with FP32 accumulate
        // 165.2 (GeForce: half the FP16-accumulate rate); FP8 330.3; INT8 660.6.
        {"rtx-4090", 'v', DType::f32, 128, 256, 2.52e9, 82.6e12, 0.001, 1e-5},
        {"rtx-4090", 'm', DType::f16, 128, 512, 2.52e9, 165.2e12, 0.001, 1e-5},
        {"rtx-4090", 'm', DType::bf16, 128, 512, 2.52e9, 165.2e12, 0.001, 1e-5},
        {"rtx-4090", 'm', DType::fp8_e4m3, 128, 1024, 2.52e9, 330.3e12, 0.001, 1e-5},
        {"rtx-4090", 'm', DType::int8, 128, 2048, 2.52e9, 660.6e12, 0.001, 1e-5},
    };
    for (const Row& r : rows) {
        INFO(r.name << " " << r.unit << " " << dtype_name(r.dtype));
        const Hardware hw = builtin_hardware(r.name);
        CHECK(hw.gpu->sm_count.value == r.sms);
        CHECK(hw.clock_hz.value == Approx(r.clock_hz).epsilon(1e-9));
        const double value = peak(hw, r.unit, r.dtype).value;
        CHECK(value == Approx(r.sms * r.flop_per_clk_per_sm * r.clock_hz).epsilon(r.arith_tol));
        CHECK(value == Approx(r.datasheet).epsilon(r.datasheet_tol));
    }
}

TEST_CASE("chips without tensor cores for a dtype have no matrix peak for it", "[hardware][catalog]") {
    CHECK(builtin_hardware("p100-pcie-16gb").matrix_flop_per_s.empty());
    CHECK(builtin_hardware("p4").matrix_flop_per_s.empty());
    const Hardware v100 = builtin_hardware("v100-sxm-32gb");  // Volta: f16 only
    CHECK(v100.matrix_flop_per_s.size() == 1);
    CHECK(v100.matrix_flop_per_s.count(DType::f16) == 1);
    const Hardware t4 = builtin_hardware("t4");  // Turing: f16, int8
    CHECK(t4.matrix_flop_per_s.size() == 2);
    CHECK(t4.matrix_flop_per_s.count(DType::int8) == 1);
    for (const char* name : {"a100-pcie-40gb", "a10"}) {  // Ampere: tf32, f16, bf16, int8 (+ f64 on GA100)
        INFO(name);
        const Hardware hw = builtin_hardware(name);
        for (DType d : {DType::tf32, DType::f16, DType::bf16, DType::int8}) CHECK(hw.matrix_flop_per_s.count(d) == 1);
        CHECK(hw.matrix_flop_per_s.count(DType::fp8_e4m3) == 0);
    }
    CHECK(builtin_hardware("rtx-4090").matrix_flop_per_s.count(DType::fp8_e5m2) == 1);  // Ada adds fp8
    // Without matrix units the GEMM ceiling is the vector unit (the roofline falls back).
    const Hardware p4 = builtin_hardware("p4");
    const ComputeCeiling c = matrix_ceiling(p4, DType::f32);
    CHECK(c.unit == ComputeUnit::vector);
    CHECK(c.flop_per_s == p4.vector_flop_per_s.at(DType::f32).value);
}

TEST_CASE("ridge points of the added chips over device memory", "[hardware][catalog]") {
    // Peak / datasheet bandwidth, FLOP/byte; expected values are the quotients in the comments,
    // rounded; tolerance 0.2% (the rounding).
    struct Ridge {
        const char* name;
        char unit;
        DType dtype;
        double flop_per_byte;
    };
    const Ridge rows[] = {
        {"v100-pcie-32gb", 'm', DType::f16, 125.6},   // 113.05 T / 900 G
        {"v100-sxm-32gb", 'm', DType::f16, 139.3},    // 125.34 T / 900 G
        {"p100-pcie-16gb", 'v', DType::f32, 12.73},   // 9.318 T / 732 G
        {"p4", 'v', DType::f32, 28.35},               // 5.443 T / 192 G
        {"a100-pcie-40gb", 'm', DType::bf16, 200.6},  // 312 T / 1555 G
        {"a100-pcie-80gb", 'm', DType::bf16, 161.2},  // 312 T / 1935 G
        {"a10", 'm', DType::bf16, 208.3},             // 124.97 T / 600 G
        {"rtx-4090", 'm', DType::bf16, 163.8},        // 165.15 T / 1008 G
    };
    for (const Ridge& r : rows) {
        INFO(r.name);
        const Hardware hw = builtin_hardware(r.name);
        CHECK(ridge_point(peak(hw, r.unit, r.dtype).value, hw.device_memory()) == Approx(r.flop_per_byte).epsilon(0.002));
    }
    // Datasheet device-memory bandwidths of the PCIe A100s: 1555 GB/s (40 GB) and 1935 GB/s (80 GB).
    CHECK(builtin_hardware("a100-pcie-40gb").device_memory().bytes_per_s.value == 1555e9);
    CHECK(builtin_hardware("a100-pcie-80gb").device_memory().bytes_per_s.value == 1935e9);
}

TEST_CASE("published measurements are where a chip has one, under its peaks", "[hardware][catalog]") {
    // gpu-mechanisms notes, section 1: triad / copy measurements per chip; none for P4, V100 SXM2,
    // A100 PCIe 80GB and L4, whose model falls back to the per-technology fraction. P100's is
    // derived: V100 PCIe's triad over the 1.5x NVIDIA states Volta delivers over GP100.
    const std::pair<const char*, double> dram[] = {
        {"v100-pcie-32gb", 814e9}, {"p100-pcie-16gb", 543e9},
        {"a100-sxm-40gb", 1360e9}, {"a100-pcie-40gb", 1360e9},
        {"a100-sxm-80gb", 1759e9}, {"h100-pcie", 1832e9},
        {"h100-sxm", 2.783e12},    {"h200", 3534e9},
        {"t4", 239.6e9},           {"a10", 469e9},
        {"rtx-4090", 912e9},
    };
    std::set<std::string> with_dram;
    for (const auto& [name, bps] : dram) {
        INFO(name);
        const Hardware hw = builtin_hardware(name);
        REQUIRE(hw.achieved.dram_bytes_per_s.has_value());
        CHECK(hw.achieved.dram_bytes_per_s->value == bps);
        CHECK(hw.achieved.dram_bytes_per_s->value < hw.device_memory().bytes_per_s.value);
        CHECK(hw.sources.count(hw.achieved.dram_bytes_per_s->source) == 1);
        with_dram.insert(name);
    }
    for (const std::string& name : kGpus) {
        if (!with_dram.count(name)) CHECK_FALSE(builtin_hardware(name).achieved.dram_bytes_per_s.has_value());
    }
    // L2: measured (gpu-benches, this project's calibration) below the spec's L2 figure.
    for (const char* name : {"v100-pcie-32gb", "a100-sxm-80gb", "h100-pcie", "h100-sxm", "h200"}) {
        INFO(name);
        const Hardware hw = builtin_hardware(name);
        REQUIRE(hw.achieved.l2_bytes_per_s.has_value());
        CHECK(hw.achieved.l2_bytes_per_s->value < hw.find(MemoryRole::l2)->bytes_per_s.value);
    }
    // Same die, same 700 W: the H200 runs its FP32 work at the H100 SXM's clock. Neither spec names
    // a sustained clock: the published one (MSMF, 1465 MHz) is a tensor-core power figure, and with
    // it the H200's fp32 eager steps came out 26% slower than the H100's where they ran 4-7%
    // faster (docs/ACCURACY.md, the H200 sets). Exact equality: the same formula on the same
    // inputs (power, lanes, clock, process).
    const GpuModelOptions gopt;
    Hardware h200 = builtin_hardware("h200");
    CHECK_FALSE(h200.achieved.sustained_clock_hz.has_value());
    CHECK(achieved_rates(h200, gopt).clock_ratio == achieved_rates(builtin_hardware("h100-sxm"), gopt).clock_ratio);
    // A spec that names one (a user's measurement) runs its SIMT and on-chip work at it.
    h200.achieved.sustained_clock_hz = Sourced<unit::hertz>{1.485e9, "h200-ds", ""};
    CHECK(achieved_rates(h200, gopt).clock_ratio == Approx(1.485 / 1.98).epsilon(1e-12));
    // Base clocks where a vendor figure exists, below the boost clock.
    CHECK(builtin_hardware("rtx-4090").base_clock_hz->value == 2.235e9);
    CHECK(builtin_hardware("p4").base_clock_hz->value == 810e6);
    CHECK_FALSE(builtin_hardware("h100-sxm").base_clock_hz.has_value());
}

TEST_CASE("Hardware::find finds a level by role, whatever the spec names it", "[hardware][catalog]") {
    const Hardware t4 = builtin_hardware("t4");
    CHECK(t4.find(MemoryRole::device) == &t4.memory[0]);
    CHECK(t4.find(MemoryRole::device)->name == "gddr");
    CHECK(t4.find(MemoryRole::l2)->capacity_bytes.value == 4194304);
    CHECK(t4.find(MemoryRole::common_memory) == nullptr);
    const Hardware h100 = builtin_hardware("h100-sxm");
    CHECK(h100.find(MemoryRole::device)->name == "hbm");
    CHECK(h100.gpu->compute_capability.major == 9);
    CHECK(h100.gpu->compute_capability.minor == 0);
    CHECK(h100.gpu->compute_capability.at_least(8, 9));
    CHECK_FALSE(builtin_hardware("t4").gpu->compute_capability.at_least(8));
}

TEST_CASE("l4 and t4 take their L2 figures from their L2 entries, whatever the order of the levels", "[hardware][catalog]") {
    // The bug this guards against: levels read by position gave l4 and t4 their shared-memory
    // figures as L2. A spec with the on-chip levels swapped must model the same GEMM the same way:
    // the L2 traffic at the L2 entry's bandwidth, the shared-memory traffic at the smem entry's.
    for (const char* name : {"l4", "t4"}) {
        INFO(name);
        const Hardware hw = builtin_hardware(name);
        nlohmann::json doc;
        for (const BuiltinFile& f : builtin_hardware_files())
            if (f.name == name) doc = nlohmann::json::parse(f.text);
        REQUIRE(doc.contains("memory"));
        std::swap(doc["memory"][1], doc["memory"][2]);
        const Hardware swapped = parse_hardware(doc, std::string(name) + " (levels swapped)");
        REQUIRE(swapped.memory[1].role == MemoryRole::shared);
        Graph g;
        const TensorId x = g.add_input("x", TensorDesc{{2048, 2048}, DType::f16});
        const TensorId w = g.add_input("w", TensorDesc{{2048, 2048}, DType::f16});
        g.add_node("mm", OpKind::matmul, {x, w}, {}, {});
        const KernelCost a = gpu_kernel_cost(*lower_to_kernel(g, 0, hw), hw);
        const KernelCost b = gpu_kernel_cost(*lower_to_kernel(g, 0, swapped), swapped);
        CHECK(b.time_s == a.time_s);
        auto traffic = [](const KernelCost& c, const std::string& level) {
            for (const auto& t : c.traffic)
                if (t.level == level) return t;
            FAIL("no traffic at " << level);
            return c.traffic.front();
        };
        const double l2_bps = hw.find(MemoryRole::l2)->bytes_per_s.value;
        CHECK(traffic(b, "l2").time_s == traffic(a, "l2").time_s);
        CHECK(traffic(b, "smem").time_s == traffic(a, "smem").time_s);
        // The L2 traffic runs at no more than the L2 entry's bandwidth (not the larger smem figure).
        CHECK(traffic(a, "l2").bytes / traffic(a, "l2").time_s <= l2_bps * (1 + 1e-9));
        CHECK(hw.find(MemoryRole::shared)->bytes_per_s.value > l2_bps);
    }
}

TEST_CASE("a spec without the new keys still loads", "[hardware][catalog]") {
    // The committed calibrated H100 spec predates memory_technology and achieved: it loads, with an
    // empty technology and no achieved values (the model then uses the datasheet/calibrated figures).
    const Hardware cal = load_hardware_file(test::source_path("tests/data/measured/h100-sxm-2026-11-23/h100-calibrated.json"));
    CHECK(cal.device_memory().technology.empty());
    CHECK_FALSE(cal.achieved.dram_bytes_per_s.has_value());
    CHECK_FALSE(cal.power_w.has_value());
    const Hardware round = load_hardware_file(test::source_path("tests/data/hw/round-gpu.json"));
    CHECK(round.device_memory().technology.empty());
    CHECK_FALSE(round.base_clock_hz.has_value());
}

TEST_CASE("bad memory_technology values are rejected naming the JSON path", "[hardware][catalog][errors]") {
    const json base = builtin_json("h100-sxm");
    auto rejects = [](const json& doc, const std::string& message) {
        CHECK_THROWS_WITH(parse_hardware(doc, "x.json"), Catch::Contains("x.json: " + message));
    };
    json d = base;
    d["memory"][0]["memory_technology"] = "hbm4";
    rejects(d,
            "/memory/0/memory_technology: unknown memory technology 'hbm4' (expected one of hbm2, hbm2e, hbm3, hbm3e, gddr5, gddr5x, "
            "gddr6, gddr6x)");
    d = base;
    d["memory"][0]["memory_technology"] = "gddr6";
    rejects(d, "/memory/0/memory_technology: 'gddr6' is not a technology of a 'hbm' level");
    d = base;
    d["memory"][0]["memory_technology"] = 3;
    rejects(d, "/memory/0/memory_technology: expected a non-empty string");
    d = base;
    d["memory"][0]["memory_technology"] = "HBM3";  // case matters: the names are the lowercase keys
    rejects(d, "/memory/0/memory_technology: unknown memory technology 'HBM3'");
    d = base;
    d["memory"][1]["memory_technology"] = "hbm3";
    rejects(d, "/memory/1/memory_technology: only the device-memory level (/memory/0) has a memory technology");
    // "dram" (a generic device-memory name) takes either family.
    d = base;
    d["memory"][0]["name"] = "dram";
    d["memory"][0]["memory_technology"] = "gddr6x";
    CHECK(parse_hardware(d, "x.json").device_memory().technology == "gddr6x");
}

TEST_CASE("bad achieved, base clock, power and process values are rejected naming the JSON path", "[hardware][catalog][errors]") {
    const json base = builtin_json("h100-sxm");  // HBM 3.352e12 B/s, L2 1.01e13 B/s, bf16 989 TFLOP/s, 1.98 GHz
    auto rejects = [](const json& doc, const std::string& message) {
        CHECK_THROWS_WITH(parse_hardware(doc, "x.json"), Catch::Contains("x.json: " + message));
    };
    json d = base;
    d["achieved"] = json::array();
    rejects(d, "/achieved: expected an object, got array");
    d = base;
    d["achieved"]["dram_bandwidth"] = d["achieved"]["dram_bytes_per_s"];
    rejects(d, "/achieved/dram_bandwidth: unknown key 'dram_bandwidth'");
    d = base;
    d["achieved"]["dram_bytes_per_s"] = 2.78e12;
    rejects(d, "/achieved/dram_bytes_per_s: expected {\"value\": number, \"source\": key}, got number");
    d = base;
    d["achieved"]["dram_bytes_per_s"]["value"] = 4.0e12;  // above 1.05 x 3.352e12
    rejects(d, "/achieved/dram_bytes_per_s/value: exceeds /memory/0/bytes_per_s (3352000000000.0) by more than 5%");
    d = base;
    d["achieved"]["dram_bytes_per_s"]["value"] = 2783;  // GB/s written as B/s
    rejects(d, "/achieved/dram_bytes_per_s/value: is under a tenth of /memory/0/bytes_per_s");
    d = base;
    d["achieved"]["dram_bytes_per_s"]["value"] = -1;
    rejects(d, "/achieved/dram_bytes_per_s/value: must be positive");
    d = base;
    d["achieved"]["l2_bytes_per_s"]["source"] = "nowhere";
    rejects(d, "/achieved/l2_bytes_per_s/source: source 'nowhere' is not a key of /sources");
    d = base;
    d["achieved"]["l2_bytes_per_s"]["value"] = 2.0e13;
    rejects(d, "/achieved/l2_bytes_per_s/value: exceeds /memory/1/bytes_per_s");
    d = base;
    d["achieved"]["sustained_clock_hz"] = {{"value", 1755}, {"source", "h100-wp"}};  // MHz written as Hz
    rejects(d, "/achieved/sustained_clock_hz/value: must lie between 0.25x and 1.5x /clock_hz");
    d = base;
    d["achieved"]["matrix_flop_per_s"]["value"] = 1.5e15;  // above the dense bf16 peak: a sparse figure
    rejects(d, "/achieved/matrix_flop_per_s/value: exceeds /matrix_flop_per_s/bf16");
    d = base;
    d["base_clock_hz"] = {{"value", 2.1e9}, {"source", "h100-wp"}};
    rejects(d, "/base_clock_hz/value: must lie between 0.1x /clock_hz and /clock_hz");
    d = base;
    d["power_w"]["value"] = 700000;  // mW
    rejects(d, "/power_w/value: board power over 5 kW");
    d = base;
    d["process_nm"]["value"] = 4000;  // pm
    rejects(d, "/process_nm/value: process node over 100 nm");
    d = base;
    d["process_nm"]["value"] = 0;
    rejects(d, "/process_nm/value: must be positive");
    // An L2 measurement needs an L2 level; a bf16 GEMM rate needs a bf16 matrix peak.
    json v5e = builtin_json("tpu-v5e");
    v5e["achieved"] = {{"l2_bytes_per_s", {{"value", 1e12}, {"source", "gcp"}}}};
    rejects(v5e, "/achieved/l2_bytes_per_s: the spec has no 'l2' memory level to compare it with");
    json v100 = builtin_json("v100-sxm-32gb");
    v100["achieved"] = {{"matrix_flop_per_s", {{"value", 1e14}, {"source", "v100-ds"}}}};
    rejects(v100, "/achieved/matrix_flop_per_s: is a bf16 GEMM rate, but the spec has no /matrix_flop_per_s/bf16");
}

TEST_CASE("a calibrated spec keeps the published measurements without comparing them", "[hardware][catalog]") {
    // `roofline calibrate` copies the base spec, achieved section included, and replaces peaks by
    // what it measured (source "calibrated"); a published measurement may exceed those, e.g. a
    // bf16 GEMM that reached 700 of 989 TFLOP/s under the published best shape's 794.5.
    json d = builtin_json("h100-sxm");
    d["matrix_flop_per_s"]["bf16"] = {{"value", 7.0e14}, {"source", "calibrated"}};
    d["memory"][0]["bytes_per_s"] = {{"value", 2.0e12}, {"source", "calibrated"}};
    d["sources"]["calibrated"] = "measured by `roofline calibrate` (test)";
    const Hardware h = parse_hardware(d, "calibrated.json");
    CHECK(h.achieved.matrix_flop_per_s->value == 794.5e12);
    CHECK(h.achieved.dram_bytes_per_s->value == 2.783e12);
}

TEST_CASE("the CLI exits 2 on a bad memory technology or achieved value, naming file and path", "[hardware][catalog][errors][cli]") {
    const std::string dir = test::source_path("tests/data/hw/");
    const auto tech = test::run_cli("hw show '" + dir + "bad-memory-technology.json'");
    CHECK(tech.code == 2);
    CHECK_THAT(tech.out, Catch::Contains("bad-memory-technology.json: /memory/0/memory_technology: unknown memory technology 'hbm4'"));
    const auto achieved = test::run_cli("hw show '" + dir + "bad-achieved.json'");
    CHECK(achieved.code == 2);
    CHECK_THAT(achieved.out, Catch::Contains("bad-achieved.json: /achieved/dram_bytes_per_s/value: exceeds /memory/0/bytes_per_s"));
}

// Units are in the types (issue #19): a field's type names its unit, one unit's field cannot be
// stored in another's, and the spec reader's value goes into any field once. Checked by the
// compiler; the test states it.
static_assert(!std::is_constructible_v<Sourced<unit::hertz>, Sourced<unit::bytes_per_s>>);
static_assert(!std::is_assignable_v<Sourced<unit::bytes_per_s>&, Sourced<unit::flop_per_s>>);
static_assert(std::is_constructible_v<Sourced<unit::bytes>, ReadSourced>);
static_assert(std::is_same_v<decltype(Hardware::clock_hz)::unit, unit::hertz>);
static_assert(std::is_same_v<decltype(MemoryLevel::bytes_per_s)::unit, unit::bytes_per_s>);
static_assert(std::is_same_v<decltype(GpuLimits::shared_memory_per_sm_bytes)::unit, unit::bytes>);

TEST_CASE("spec numbers carry their unit in their type", "[hardware][units]") {
    // Expected: the h100-sxm spec's boost clock is a hertz field and its HBM a bytes-per-second
    // field whose values are SI (1.98 GHz and 3.352 TB/s, the figures the spec cites).
    const Hardware hw = builtin_hardware("h100-sxm");
    CHECK(decltype(hw.clock_hz)::unit::symbol == "Hz");
    CHECK(hw.clock_hz.value == Approx(1.98e9));
    const MemoryLevel& hbm = hw.device_memory();
    CHECK(decltype(hbm.bytes_per_s)::unit::symbol == "B/s");
    CHECK(hbm.bytes_per_s.value == Approx(3.352e12));
}
