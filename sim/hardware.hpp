#pragma once
// Hardware specs: validated data loaded from "roofline-hardware/1" JSON (docs/hardware-format.md).
// Every number carries its source. Units are SI and fixed at load; nothing here is a bare default.
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ops/dtype.hpp"

namespace roofline {

struct Sourced {
    double value = 0;
    std::string source;  // key into Hardware::sources
    std::string note;
};

struct MemoryLevel {
    std::string name;  // "hbm", "gddr", "l2", "smem", "vmem", "cmem"
    Sourced capacity_bytes;
    Sourced bytes_per_s;
};

struct Link {
    std::string name;
    Sourced bytes_per_s;
};

struct GpuLimits {
    std::string compute_capability;
    Sourced sm_count, warp_size, max_threads_per_sm, max_threads_per_block, max_warps_per_sm, max_blocks_per_sm,
        registers_per_sm, max_registers_per_thread, register_allocation_unit, shared_memory_per_sm_bytes,
        max_shared_memory_per_block_bytes, shared_memory_allocation_unit_bytes;
};

struct TpuLayout {
    Sourced tensor_cores, mxus_per_core, mxu_rows, mxu_cols;
};

enum class HardwareKind { gpu, tpu };

struct Hardware {
    std::string name;
    std::string display_name;
    std::string origin;  // file the spec came from
    HardwareKind kind = HardwareKind::gpu;
    std::map<std::string, std::string> sources;
    Sourced clock_hz;
    std::map<DType, Sourced> matrix_flop_per_s;
    std::map<DType, Sourced> vector_flop_per_s;
    Sourced transcendental_per_s;
    std::vector<MemoryLevel> memory;  // outermost (device memory) first
    std::optional<GpuLimits> gpu;
    std::optional<TpuLayout> tpu;
    Sourced launch_overhead_s;
    Link host_link;
    Link interconnect;

    const MemoryLevel& device_memory() const { return memory.front(); }
};

// Validates and converts a parsed spec; errors name origin and JSON path.
Hardware parse_hardware(const nlohmann::json& doc, const std::string& origin);
Hardware load_hardware_file(const std::string& path);
// The specs built into the binary (sim/hardware/*.json, embedded at build time).
std::vector<std::string> builtin_hardware_names();
Hardware builtin_hardware(const std::string& name);
// --hw: a path to a spec file, or a built-in name.
Hardware resolve_hardware(const std::string& arg);

std::string_view kind_name(HardwareKind k);

}  // namespace roofline
