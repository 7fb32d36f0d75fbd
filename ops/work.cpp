#include "ops/work.hpp"

#include "ops/checked.hpp"

namespace roofline {

std::int64_t Work::flops() const { return checked_add(checked_add(matrix_flops, vector_flops, "FLOPs"), transcendentals, "FLOPs"); }

std::int64_t Work::bytes() const { return checked_add(bytes_read, bytes_written, "bytes"); }

Work& Work::operator+=(const Work& o) {
    matrix_flops = checked_add(matrix_flops, o.matrix_flops, "FLOPs");
    vector_flops = checked_add(vector_flops, o.vector_flops, "FLOPs");
    transcendentals = checked_add(transcendentals, o.transcendentals, "transcendentals");
    bytes_read = checked_add(bytes_read, o.bytes_read, "bytes read");
    bytes_written = checked_add(bytes_written, o.bytes_written, "bytes written");
    return *this;
}

}  // namespace roofline
