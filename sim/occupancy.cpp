#include "sim/occupancy.hpp"

#include <algorithm>
#include <string>

#include "ops/error.hpp"

namespace roofline {

std::string_view limit_name(OccupancyLimit l) {
    switch (l) {
        case OccupancyLimit::warps: return "warps";
        case OccupancyLimit::blocks: return "blocks";
        case OccupancyLimit::registers: return "registers";
        case OccupancyLimit::shared_memory: return "shared_memory";
    }
    return "?";
}

namespace {

std::int64_t as_int(const SourcedValue& s) { return static_cast<std::int64_t>(s.value); }
std::int64_t round_up(std::int64_t v, std::int64_t unit) { return (v + unit - 1) / unit * unit; }

}  // namespace

std::int64_t reserved_shared_bytes_per_block(const GpuLimits& gpu) { return gpu.compute_capability.at_least(8) ? 1024 : 0; }

Occupancy occupancy(const GpuLimits& gpu, const LaunchConfig& l) {
    const std::int64_t warp = as_int(gpu.warp_size);
    if (l.threads_per_block < 1 || l.threads_per_block > as_int(gpu.max_threads_per_block)) {
        throw InputError("launch: " + std::to_string(l.threads_per_block) + " threads per block (the limit is " +
                         std::to_string(as_int(gpu.max_threads_per_block)) + ")");
    }
    if (l.registers_per_thread < 1 || l.registers_per_thread > as_int(gpu.max_registers_per_thread)) {
        throw InputError("launch: " + std::to_string(l.registers_per_thread) + " registers per thread (the limit is " +
                         std::to_string(as_int(gpu.max_registers_per_thread)) + ")");
    }
    if (l.shared_bytes_per_block < 0 || l.shared_bytes_per_block > as_int(gpu.max_shared_memory_per_block_bytes)) {
        throw InputError("launch: " + std::to_string(l.shared_bytes_per_block) + " bytes of shared memory per block (the limit is " +
                         std::to_string(as_int(gpu.max_shared_memory_per_block_bytes)) + ")");
    }
    Occupancy o;
    o.warps_per_block = (l.threads_per_block + warp - 1) / warp;
    // Registers are allocated per warp in units of register_allocation_unit.
    const std::int64_t regs_per_warp = round_up(l.registers_per_thread * warp, as_int(gpu.register_allocation_unit));
    const std::int64_t warps_by_regs = as_int(gpu.registers_per_sm) / regs_per_warp;
    const std::int64_t by_regs = warps_by_regs / o.warps_per_block;
    const std::int64_t by_warps = as_int(gpu.max_warps_per_sm) / o.warps_per_block;
    const std::int64_t by_blocks = as_int(gpu.max_blocks_per_sm);
    std::int64_t by_smem = by_blocks;
    if (l.shared_bytes_per_block > 0) {
        const std::int64_t per_block =
            round_up(l.shared_bytes_per_block, as_int(gpu.shared_memory_allocation_unit_bytes)) + reserved_shared_bytes_per_block(gpu);
        by_smem = as_int(gpu.shared_memory_per_sm_bytes) / per_block;
    }
    o.blocks_per_sm = by_warps;
    o.limit = OccupancyLimit::warps;
    const std::pair<std::int64_t, OccupancyLimit> limits[] = {
        {by_blocks, OccupancyLimit::blocks}, {by_regs, OccupancyLimit::registers}, {by_smem, OccupancyLimit::shared_memory}};
    for (const auto& [n, why] : limits) {
        if (n < o.blocks_per_sm) {
            o.blocks_per_sm = n;
            o.limit = why;
        }
    }
    if (o.blocks_per_sm < 1) throw InputError("launch: no block of this configuration fits on an SM");
    o.active_warps = o.blocks_per_sm * o.warps_per_block;
    o.occupancy = static_cast<double>(o.active_warps) / static_cast<double>(as_int(gpu.max_warps_per_sm));
    return o;
}

}  // namespace roofline
