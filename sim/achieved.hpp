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
    // Bandwidth of each memory level as kernels see it, one per level of hw.memory, in its order.
    std::vector<double> level_bytes_per_s;
};

AchievedRates achieved_rates(const Hardware& hw, const GpuModelOptions& opt);

// A STREAM-type kernel's fraction of the datasheet bandwidth per memory technology: the median
// of the published measurements of that technology (sim/achieved.cpp lists them), for chips with
// no measurement of their own.
double technology_stream_fraction(const std::string& technology);

}  // namespace roofline
