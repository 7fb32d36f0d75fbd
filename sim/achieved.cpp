#include "sim/achieved.hpp"

#include <algorithm>

#include "sim/gpu_model.hpp"

namespace roofline {

namespace {

bool calibrated(const SourcedValue& s) { return s.source == "calibrated"; }

}  // namespace

double technology_stream_fraction(const std::string& technology) {
    // Triad (2 reads + 1 write) as a fraction of the datasheet bandwidth, from gpu-benches
    // (github.com/te42kyfo/gpu-benches, gpu-stream/*.txt, D. Ernst, NHR@FAU, 2024) unless noted:
    //   hbm2   V100-PCIe-16GB 814 of 900 GB/s = 0.90
    //   hbm2e  A100-40GB 1360 / 1555 = 0.875, A100-SXM-80GB 1759 / 2039 = 0.86, H100-PCIe 1832 / 2000
    //          = 0.92: median 0.875
    //   hbm3   H100-SXM: `roofline calibrate` on this project's H100 SXM, 2026-11-23: 2.78 of
    //          3.35 TB/s = 0.83 (a production Nsight profile reports 2.8 TB/s, mikamirai.com)
    //   hbm3e  H200 3534 / 4800 = 0.74
    //   gddr6  T4 bandwidthTest device-to-device 239.6 / 320 = 0.75 (github.com/router-gao/cuda-demo);
    //          A10 torch copy 469 / 600 = 0.78 (github.com/chsasank/device-benchmarks): median 0.765
    //   gddr6x RTX 4090 ~912 / 1008 = 0.90 (chsasank/device-benchmarks; xytpai/nvbench ~920)
    //   gddr5, gddr5x: no published measurement found; gddr6's 0.765 (an assumption: the same
    //          controller generation of GDDR, labelled so in docs/ACCURACY.md)
    if (technology == "hbm2") return 0.90;
    if (technology == "hbm2e") return 0.875;
    if (technology == "hbm3") return 0.83;
    if (technology == "hbm3e") return 0.74;
    if (technology == "gddr6x") return 0.90;
    if (technology == "gddr6" || technology == "gddr5" || technology == "gddr5x") return 0.765;
    return 1.0;  // unknown technology (TPU HBM, a user's spec): the datasheet figure
}

AchievedRates achieved_rates(const Hardware& hw, const GpuModelOptions& opt) {
    AchievedRates r;
    const MemoryLevel& dram = hw.device_memory();
    // Sustained clock: a published measurement of the chip under sustained load; the peaks are
    // quoted at the boost clock.
    if (hw.achieved.sustained_clock_hz && hw.clock_hz.value > 0) {
        r.clock_ratio = std::min(1.0, hw.achieved.sustained_clock_hz->value / hw.clock_hz.value);
    } else if (hw.power_w && hw.process_nm && hw.gpu && !calibrated(hw.vector_flop_per_s.at(DType::f32))) {
        // Power-limited clock: the board power over the energy all FP32 lanes draw per cycle at
        // full load, that energy scaling with the process node. The lanes follow from the FP32
        // peak (2 FLOPs per lane per cycle at the boost clock).
        const double lanes = hw.vector_flop_per_s.at(DType::f32).value / (2.0 * hw.clock_hz.value);
        const double energy = opt.energy_per_lane_cycle_16nm * hw.process_nm->value / 16.0;
        r.clock_ratio = std::min(1.0, hw.power_w->value / (lanes * hw.clock_hz.value * energy));
    }
    if (calibrated(dram.bytes_per_s)) {
        r.dram_bytes_per_s = dram.bytes_per_s.value;
    } else if (hw.achieved.dram_bytes_per_s) {
        r.dram_bytes_per_s = std::min(dram.bytes_per_s.value, hw.achieved.dram_bytes_per_s->value);
    } else {
        r.dram_bytes_per_s = dram.bytes_per_s.value * technology_stream_fraction(dram.technology);
    }
    // Tensor-core GEMMs: the best-shape cuBLAS rate published for the chip (stas00/ml-engineering
    // "maximum achievable matmul FLOPS" table) when the spec has it; otherwise the median of the
    // chips that have one (A100-SXM 0.869, A100-PCIe 0.811, H100-SXM 0.803: 0.811); a calibrated
    // peak is already achieved.
    const auto bf16 = hw.matrix_flop_per_s.find(DType::bf16);
    if (bf16 != hw.matrix_flop_per_s.end() && calibrated(bf16->second)) {
        r.matrix_fraction = 1.0;
    } else if (hw.achieved.matrix_flop_per_s && bf16 != hw.matrix_flop_per_s.end()) {
        r.matrix_fraction = std::min(1.0, hw.achieved.matrix_flop_per_s->value / bf16->second.value);
    } else if (!hw.matrix_flop_per_s.empty()) {
        r.matrix_fraction = opt.tensor_core_fraction;
    }
    r.matrix_fraction_fp8 = r.matrix_fraction;
    const auto fp8 = hw.matrix_flop_per_s.find(DType::fp8_e4m3);
    if (fp8 != hw.matrix_flop_per_s.end() && calibrated(fp8->second)) {
        r.matrix_fraction_fp8 = 1.0;
    } else if (hw.achieved.matrix_flop_per_s_fp8 && fp8 != hw.matrix_flop_per_s.end()) {
        r.matrix_fraction_fp8 = std::min(1.0, hw.achieved.matrix_flop_per_s_fp8->value / fp8->second.value);
    }
    r.level_bytes_per_s.reserve(hw.memory.size());
    for (const MemoryLevel& level : hw.memory) {
        double bps = level.bytes_per_s.value;
        if (level.role == MemoryRole::device)
            bps = r.dram_bytes_per_s;
        else if (level.role == MemoryRole::l2 && hw.achieved.l2_bytes_per_s && !calibrated(level.bytes_per_s))
            bps = std::min(bps, hw.achieved.l2_bytes_per_s->value);
        else if (!calibrated(level.bytes_per_s))
            bps *= r.clock_ratio;  // on-chip bandwidth scales with the SM clock
        r.level_bytes_per_s.push_back(bps);
    }
    return r;
}

}  // namespace roofline
