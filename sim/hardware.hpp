#pragma once
// Hardware specs: validated data loaded from "roofline-hardware/1" JSON (docs/hardware-format.md).
// Every number carries its source. Units are SI and fixed at load; nothing here is a bare default.
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ops/dtype.hpp"

namespace roofline {

// The units of a spec's numbers, in the types: a field's unit is part of its type (Sourced<unit::hertz>),
// so a clock cannot be stored where a bandwidth is expected (a compile error), and the unit's symbol
// is there for whoever prints it. Values are SI doubles; arithmetic reads .value.
namespace unit {
// clang-format off: one tag a line
struct bytes {
    static constexpr std::string_view symbol = "B";
};
struct bytes_per_s {
    static constexpr std::string_view symbol = "B/s";
};
struct bits_per_s {
    static constexpr std::string_view symbol = "bit/s";
};
struct hertz {
    static constexpr std::string_view symbol = "Hz";
};
struct flop_per_s {
    static constexpr std::string_view symbol = "FLOP/s";
};
struct ops_per_s {
    static constexpr std::string_view symbol = "op/s";
};  // transcendental operations
struct seconds {
    static constexpr std::string_view symbol = "s";
};
struct watts {
    static constexpr std::string_view symbol = "W";
};
struct nanometres {
    static constexpr std::string_view symbol = "nm";
};
struct count {
    static constexpr std::string_view symbol = "";
};  // SMs, threads, registers, NICs, nodes
// clang-format on
}  // namespace unit

// A number with its source (a key into Hardware::sources) and an optional note. Code that only
// reads or prints the number takes this untyped base; fields are Sourced<Unit>.
struct SourcedValue {
    double value = 0;
    std::string source;
    std::string note;
};

// What the spec reader returns: converted once into a typed field, whose type fixes the unit. A
// Sourced<A> never converts to a Sourced<B>.
struct ReadSourced {
    SourcedValue read;
};

template <class Unit>
struct Sourced : SourcedValue {
    using unit = Unit;
    Sourced() = default;
    Sourced(double v, std::string src, std::string n = {}) : SourcedValue{v, std::move(src), std::move(n)} {}
    Sourced(ReadSourced r) : SourcedValue(std::move(r.read)) {}  // NOLINT(google-explicit-constructor): the loader's one entry
};

// What a memory level is for the cost model, fixed at load from its name (the spec's names:
// hbm/gddr/dram -> device, l2, smem -> shared, vmem, cmem). sim/ asks roles, never names or positions.
enum class MemoryRole {
    device,         // HBM / GDDR / DRAM: the device memory (always hw.memory.front())
    l2,             // the GPU's L2 cache
    shared,         // shared memory / L1, aggregate over all SMs
    vector_memory,  // TPU VMEM
    common_memory,  // TPU v4 CMEM
};
std::string_view role_name(MemoryRole r);

struct MemoryLevel {
    MemoryRole role = MemoryRole::device;
    std::string name;  // as the spec writes it: "hbm", "gddr", "dram", "l2", "smem", "vmem", "cmem"
    Sourced<unit::bytes> capacity_bytes;
    Sourced<unit::bytes_per_s> bytes_per_s;
    // Device memory only ("memory_technology"): hbm2, hbm2e, hbm3, hbm3e, gddr5, gddr5x, gddr6,
    // gddr6x. Empty on the other levels, and on a user spec that leaves it out.
    std::string technology;
};

// The memory technologies "memory_technology" accepts, in the order above.
const std::vector<std::string>& memory_technologies();

// What published measurements reach on the chip, as opposed to the datasheet peaks. Every member
// is optional: absent means nothing was measured for this chip (the cost model then falls back,
// e.g. to a per-technology fraction of the DRAM peak).
struct Achieved {
    std::optional<Sourced<unit::bytes_per_s>> dram_bytes_per_s;  // a streaming copy/triad kernel, read + write bytes
    std::optional<Sourced<unit::hertz>> sustained_clock_hz;      // SM clock under sustained full load
    std::optional<Sourced<unit::bytes_per_s>> l2_bytes_per_s;    // an L2-resident streaming read
    std::optional<Sourced<unit::flop_per_s>> matrix_flop_per_s;  // bf16 tensor-core GEMM at its best shape (cuBLAS)
    // fp8 (e4m3 and e5m2 run at one rate) tensor-core GEMM on the same footing; absent: the bf16
    // fraction of the peak applies to fp8 too
    std::optional<Sourced<unit::flop_per_s>> matrix_flop_per_s_fp8;
};

struct Link {
    std::string name;
    Sourced<unit::bytes_per_s> bytes_per_s;
};

// A CUDA compute capability, parsed once at load ("9.0" -> 9, 0).
struct ComputeCapability {
    int major = 0, minor = 0;
    bool at_least(int maj, int min = 0) const { return major > maj || (major == maj && minor >= min); }
    std::string str() const { return std::to_string(major) + "." + std::to_string(minor); }
};

struct GpuLimits {
    ComputeCapability compute_capability;
    Sourced<unit::count> sm_count, warp_size, max_threads_per_sm, max_threads_per_block, max_warps_per_sm, max_blocks_per_sm,
        registers_per_sm, max_registers_per_thread, register_allocation_unit;
    Sourced<unit::bytes> shared_memory_per_sm_bytes, max_shared_memory_per_block_bytes, shared_memory_allocation_unit_bytes;
};

struct TpuLayout {
    Sourced<unit::count> tensor_cores, mxus_per_core, mxu_rows, mxu_cols;
};

enum class HardwareKind { gpu, tpu };

struct Hardware {
    std::string name;
    std::string display_name;
    std::string origin;  // file the spec came from
    HardwareKind kind = HardwareKind::gpu;
    std::map<std::string, std::string> sources;
    Sourced<unit::hertz> clock_hz;                        // boost clock
    std::optional<Sourced<unit::hertz>> base_clock_hz;    // where the vendor gives one
    std::optional<Sourced<unit::watts>> power_w;          // board power limit (TDP / TGP)
    std::optional<Sourced<unit::nanometres>> process_nm;  // process node (TSMC 4N = 4)
    std::map<DType, Sourced<unit::flop_per_s>> matrix_flop_per_s;
    std::map<DType, Sourced<unit::flop_per_s>> vector_flop_per_s;
    Sourced<unit::ops_per_s> transcendental_per_s;
    std::vector<MemoryLevel> memory;  // outermost (device memory) first
    std::optional<GpuLimits> gpu;
    std::optional<TpuLayout> tpu;
    Sourced<unit::seconds> launch_overhead_s;
    Link host_link;
    Link interconnect;
    Achieved achieved;

    const MemoryLevel& device_memory() const { return memory.front(); }
    // The level with that role, or nullptr (a spec lists each role at most once).
    const MemoryLevel* find(MemoryRole role) const;
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
