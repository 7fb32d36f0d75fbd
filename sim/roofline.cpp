#include "sim/roofline.hpp"

#include <algorithm>

namespace roofline {

std::string_view unit_name(ComputeUnit u) {
    switch (u) {
        case ComputeUnit::matrix: return "matrix";
        case ComputeUnit::vector: return "vector";
        case ComputeUnit::transcendental: return "transcendental";
    }
    return "?";
}

namespace {

// tf32 is stored as f32: its non-matrix arithmetic runs at the f32 rate.
DType storage_dtype(DType d) { return d == DType::tf32 ? DType::f32 : d; }

}  // namespace

ComputeCeiling vector_ceiling(const Hardware& hw, DType dtype) {
    const DType d = storage_dtype(dtype);
    auto it = hw.vector_flop_per_s.find(d);
    if (it != hw.vector_flop_per_s.end()) return {ComputeUnit::vector, d, it->second.value, d != dtype};
    return {ComputeUnit::vector, DType::f32, hw.vector_flop_per_s.at(DType::f32).value, true};
}

ComputeCeiling matrix_ceiling(const Hardware& hw, DType dtype) {
    auto it = hw.matrix_flop_per_s.find(dtype);
    if (it != hw.matrix_flop_per_s.end()) return {ComputeUnit::matrix, dtype, it->second.value, false};
    ComputeCeiling c = vector_ceiling(hw, dtype);
    c.fallback = true;
    return c;
}

ComputeCeiling transcendental_ceiling(const Hardware& hw) {
    return {ComputeUnit::transcendental, DType::f32, hw.transcendental_per_s.value, false};
}

double ridge_point(double flop_per_s, const MemoryLevel& level) { return flop_per_s / level.bytes_per_s.value; }

OpRoofline op_roofline(const Work& w, DType dtype, const Hardware& hw) {
    OpRoofline r;
    r.work = w;
    r.dtype = dtype;
    r.matrix = matrix_ceiling(hw, dtype);
    r.vector = vector_ceiling(hw, dtype);
    r.transcendental = transcendental_ceiling(hw);
    r.matrix_time_s = static_cast<double>(w.matrix_flops) / r.matrix.flop_per_s;
    r.vector_time_s = static_cast<double>(w.vector_flops) / r.vector.flop_per_s;
    r.transcendental_time_s = static_cast<double>(w.transcendentals) / r.transcendental.flop_per_s;
    r.compute_time_s = std::max({r.matrix_time_s, r.vector_time_s, r.transcendental_time_s});
    const double flops = static_cast<double>(w.flops());

    // The ceiling that names the compute bound: the unit with the longest time.
    const ComputeCeiling* main = &r.vector;
    if (r.matrix_time_s >= r.vector_time_s && r.matrix_time_s >= r.transcendental_time_s && w.matrix_flops > 0)
        main = &r.matrix;
    else if (r.transcendental_time_s > r.vector_time_s)
        main = &r.transcendental;
    r.compute_flop_per_s = r.compute_time_s > 0 ? flops / r.compute_time_s : main->flop_per_s;

    r.time_s = r.compute_time_s;
    if (r.compute_time_s > 0) {
        r.bound = {BoundKind::compute, main->unit, main->dtype, {}};
    }
    const std::int64_t bytes = w.bytes();
    for (const MemoryLevel& level : hw.memory) {
        LevelRoofline l;
        l.level = level.name;
        l.bytes = bytes;
        l.bytes_per_s = level.bytes_per_s.value;
        l.time_s = static_cast<double>(bytes) / l.bytes_per_s;
        l.ridge = ridge_point(r.compute_flop_per_s, level);
        if (bytes > 0) {
            l.intensity = flops / static_cast<double>(bytes);
            l.attainable_flop_per_s = std::min(r.compute_flop_per_s, *l.intensity * l.bytes_per_s);
        } else {
            l.attainable_flop_per_s = r.compute_flop_per_s;
        }
        if (l.time_s > r.time_s) {
            r.time_s = l.time_s;
            r.bound = {BoundKind::memory, ComputeUnit::vector, DType::f32, level.name};
        }
        r.levels.push_back(std::move(l));
    }
    r.attainable_flop_per_s = r.time_s > 0 ? flops / r.time_s : 0;
    return r;
}

}  // namespace roofline
