#pragma once
// L0 of the cost model: the hierarchical roofline (docs/ARCHITECTURE.md, "Cost model, in levels").
// For each memory level, attainable FLOP/s = min(compute peak, intensity x level bandwidth); the
// lower-bound time of an op is the largest of its compute time and its traffic time at every level.
// Traffic at L0 is the compulsory traffic of an ideal kernel (Work::bytes) at every level: what
// cannot be avoided. Reuse-dependent traffic (tiling, L2 capacity) belongs to the kernel model.
#include <optional>
#include <string>
#include <vector>

#include "ops/work.hpp"
#include "sim/hardware.hpp"

namespace roofline {

enum class ComputeUnit { matrix, vector, transcendental };
std::string_view unit_name(ComputeUnit u);

// The peak an op's FLOPs of one class run at, and which unit and dtype it came from.
struct ComputeCeiling {
    ComputeUnit unit = ComputeUnit::vector;
    DType dtype = DType::f32;  // the dtype whose peak is used (may differ from the op's: fallback)
    double flop_per_s = 0;
    bool fallback = false;  // true when the op's own dtype has no peak on that unit
};

// Ceiling for matrix-unit work of a dtype: the matrix unit when the chip has a peak for the dtype,
// else the vector units (an op that cannot use tensor cores gets the CUDA-core peak for its dtype).
ComputeCeiling matrix_ceiling(const Hardware& hw, DType dtype);
// Ceiling for plain arithmetic: the vector peak for the dtype, else f32 (computed after conversion).
ComputeCeiling vector_ceiling(const Hardware& hw, DType dtype);
ComputeCeiling transcendental_ceiling(const Hardware& hw);

struct LevelRoofline {
    std::string level;
    std::int64_t bytes = 0;
    double bytes_per_s = 0;
    std::optional<double> intensity;  // FLOP/byte; empty when the op moves no bytes
    double attainable_flop_per_s = 0;
    double time_s = 0;
    double ridge = 0;  // FLOP/byte where this level's slope meets the op's compute ceiling
};

enum class BoundKind { compute, memory, none };

// What bounds an op: the compute unit (and its dtype) with the longest time, or the memory level
// whose traffic takes longest. Data; reports/ words it (bound_label).
struct Bound {
    BoundKind kind = BoundKind::none;
    ComputeUnit unit = ComputeUnit::vector;  // compute: the unit
    DType dtype = DType::f32;                // compute: the unit's dtype (not for transcendental)
    std::string level;                       // memory: the level, named as the spec names it
    auto operator<=>(const Bound&) const = default;
};

struct OpRoofline {
    Work work;
    DType dtype = DType::f32;
    ComputeCeiling matrix, vector, transcendental;
    double matrix_time_s = 0, vector_time_s = 0, transcendental_time_s = 0;
    double compute_time_s = 0;          // max of the three: the units run concurrently
    double compute_flop_per_s = 0;      // the op's effective compute ceiling: flops / compute time
    std::vector<LevelRoofline> levels;  // one per memory level, outermost first
    Bound bound;
    double time_s = 0;                 // lower bound: max(compute, every level)
    double attainable_flop_per_s = 0;  // flops / time
};

OpRoofline op_roofline(const Work& w, DType dtype, const Hardware& hw);

// The ridge point of the chip for a compute ceiling against a memory level (FLOP/byte).
double ridge_point(double flop_per_s, const MemoryLevel& level);

}  // namespace roofline
