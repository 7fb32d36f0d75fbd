#pragma once
// What kernels achieve on a chip, kept apart from the datasheet peaks (docs/ARCHITECTURE.md, "Predictions you
// can trust"): the peak stays the roofline ceiling; these rates are what the kernel model runs at.
// Each comes from a named mechanism with its evidence: a published measurement of that chip in the
// spec's "achieved" section when there is one, otherwise an architecture-general rule
// parameterised by the spec (memory technology, generation), otherwise the peak. A value the spec
// took from `roofline calibrate` is already achieved and is used as it is.
#include <vector>

#include "sim/hardware.hpp"

namespace roofline {

struct GpuModelOptions;

struct AchievedRates {
    // Sustained SM clock over the clock the vector/matrix peaks are quoted at (<= 1).
    double clock_ratio = 1;
    // Device-memory bandwidth a streaming kernel (copy, triad) reaches on this chip.
    double dram_bytes_per_s = 0;
    // Tensor-core GEMM rate as a fraction of the matrix peak the best cuBLAS kernel sustains on a
    // large square problem (power-limited clock and main-loop issue efficiency together).
    double matrix_fraction = 1;
    // The same for fp8 GEMMs where the spec measures them (achieved.matrix_flop_per_s_fp8), else
    // matrix_fraction.
    double matrix_fraction_fp8 = 1;
    double matrix_fraction_of(DType d) const {
        return d == DType::fp8_e4m3 || d == DType::fp8_e5m2 ? matrix_fraction_fp8 : matrix_fraction;
    }
    // Bandwidth of each memory level as kernels see it, one per level of hw.memory, in its order.
    std::vector<double> level_bytes_per_s;
};

AchievedRates achieved_rates(const Hardware& hw, const GpuModelOptions& opt);

// A STREAM-type kernel's fraction of the datasheet bandwidth per memory technology: the median
// of the published measurements of that technology (sim/achieved.cpp lists them), for chips with
// no measurement of their own.
double technology_stream_fraction(const std::string& technology);

}  // namespace roofline
