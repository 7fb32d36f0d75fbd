#include <cstdio>
#include "sim/hardware.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "model/json_check.hpp"
#include "model/model_json.hpp"
#include "ops/error.hpp"
#include "sim/builtin_hardware.hpp"
#include "sim/spec_reader.hpp"

namespace roofline {
namespace {

using nlohmann::json;

GpuLimits read_gpu(const SpecReader& r, const json& g) {
    const std::string p = "/gpu";
    r.only_keys(g,
                {"compute_capability", "sm_count", "warp_size", "max_threads_per_sm", "max_threads_per_block", "max_warps_per_sm",
                 "max_blocks_per_sm", "registers_per_sm", "max_registers_per_thread", "register_allocation_unit",
                 "shared_memory_per_sm_bytes", "max_shared_memory_per_block_bytes", "shared_memory_allocation_unit_bytes"},
                p);
    GpuLimits l;
    const std::string cc = r.string(g, "compute_capability", p);
    {
        int major = -1, minor = -1;
        char tail = 0;
        if (std::sscanf(cc.c_str(), "%d.%d%c", &major, &minor, &tail) != 2 || major < 1 || major > 99 || minor < 0 || minor > 9) {
            r.fail(p + "/compute_capability", "expected \"MAJOR.MINOR\" (e.g. \"9.0\"), got \"" + cc + "\"");
        }
        l.compute_capability = ComputeCapability{major, minor};
    }
    l.sm_count = r.sourced(g, "sm_count", p, true);
    l.warp_size = r.sourced(g, "warp_size", p, true);
    l.max_threads_per_sm = r.sourced(g, "max_threads_per_sm", p, true);
    l.max_threads_per_block = r.sourced(g, "max_threads_per_block", p, true);
    l.max_warps_per_sm = r.sourced(g, "max_warps_per_sm", p, true);
    l.max_blocks_per_sm = r.sourced(g, "max_blocks_per_sm", p, true);
    l.registers_per_sm = r.sourced(g, "registers_per_sm", p, true);
    l.max_registers_per_thread = r.sourced(g, "max_registers_per_thread", p, true);
    l.register_allocation_unit = r.sourced(g, "register_allocation_unit", p, true);
    l.shared_memory_per_sm_bytes = r.sourced(g, "shared_memory_per_sm_bytes", p, true);
    l.max_shared_memory_per_block_bytes = r.sourced(g, "max_shared_memory_per_block_bytes", p, true);
    l.shared_memory_allocation_unit_bytes = r.sourced(g, "shared_memory_allocation_unit_bytes", p, true);
    if (l.max_threads_per_sm.value != l.max_warps_per_sm.value * l.warp_size.value) {
        r.fail(p + "/max_warps_per_sm", "max_threads_per_sm must equal max_warps_per_sm x warp_size");
    }
    return l;
}

// "memory_technology" on the device-memory level: a known technology that matches the level's
// name (an HBM technology on "hbm", a GDDR one on "gddr"; "dram" takes either).
std::string read_technology(const SpecReader& r, const json& level, const std::string& level_name, const std::string& p) {
    const std::string tech = r.string(level, "memory_technology", p);
    const auto& known = memory_technologies();
    if (std::find(known.begin(), known.end(), tech) == known.end()) {
        std::string list;
        for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
        r.fail(p + "/memory_technology", "unknown memory technology '" + tech + "' (expected one of " + list + ")");
    }
    const std::string family = tech.rfind("hbm", 0) == 0 ? "hbm" : "gddr";
    if (level_name != "dram" && family != level_name) {
        r.fail(p + "/memory_technology", "'" + tech + "' is not a technology of a '" + level_name + "' level");
    }
    return tech;
}

// An achieved rate is a measurement of something the spec also states as a peak: it may exceed
// the peak by a few percent (measurement noise; H100 PCIe writes 2016 of 2000 GB/s), not more,
// and anything under a tenth of it is a unit slip (GB/s written as B/s), not a measurement. A peak
// that `roofline calibrate` measured on the user's own chip (source "calibrated") is no datasheet
// figure: a published measurement may well exceed it, so it is not compared.
void check_against_peak(const SpecReader& r, const SourcedValue& achieved, const SourcedValue& peak_value, const std::string& peak_path,
                        const std::string& p) {
    if (peak_value.source == "calibrated") return;
    const double peak = peak_value.value;
    if (achieved.value > 1.05 * peak) {
        r.fail(p + "/value",
               "exceeds " + peak_path + " (" + json(peak).dump() +
                   ") by more than 5%: a measurement above the peak means one of the two is wrong (e.g. a buffer that fit in a cache)");
    }
    if (achieved.value < 0.1 * peak) {
        r.fail(p + "/value", "is under a tenth of " + peak_path + " (" + json(peak).dump() + "): check the unit (bytes/s, Hz)");
    }
}

Achieved read_achieved(const SpecReader& r, const json& a, const Hardware& h) {
    const std::string p = "/achieved";
    r.only_keys(a, {"dram_bytes_per_s", "sustained_clock_hz", "l2_bytes_per_s", "matrix_flop_per_s", "matrix_flop_per_s_fp8"}, p);
    Achieved out;
    if (a.contains("dram_bytes_per_s")) {
        out.dram_bytes_per_s = r.sourced(a, "dram_bytes_per_s", p);
        check_against_peak(r, *out.dram_bytes_per_s, h.device_memory().bytes_per_s, "/memory/0/bytes_per_s", p + "/dram_bytes_per_s");
    }
    if (a.contains("l2_bytes_per_s")) {
        out.l2_bytes_per_s = r.sourced(a, "l2_bytes_per_s", p);
        const auto it = std::find_if(h.memory.begin(), h.memory.end(), [](const MemoryLevel& l) { return l.role == MemoryRole::l2; });
        if (it == h.memory.end()) r.fail(p + "/l2_bytes_per_s", "the spec has no 'l2' memory level to compare it with");
        const std::string lp = "/memory/" + std::to_string(it - h.memory.begin()) + "/bytes_per_s";
        check_against_peak(r, *out.l2_bytes_per_s, it->bytes_per_s, lp, p + "/l2_bytes_per_s");
    }
    if (a.contains("sustained_clock_hz")) {
        out.sustained_clock_hz = r.sourced(a, "sustained_clock_hz", p);
        // A consumer card can sustain more than its nominal boost clock; 1.5x or a quarter of it is a
        // unit slip (MHz written as Hz).
        const double v = out.sustained_clock_hz->value, boost = h.clock_hz.value;
        if (v > 1.5 * boost || v < 0.25 * boost) {
            r.fail(p + "/sustained_clock_hz/value", "must lie between 0.25x and 1.5x /clock_hz (" + json(boost).dump() + "), got " +
                                                        json(v).dump() + ": check the unit (Hz)");
        }
    }
    if (a.contains("matrix_flop_per_s")) {
        out.matrix_flop_per_s = r.sourced(a, "matrix_flop_per_s", p);
        const auto it = h.matrix_flop_per_s.find(DType::bf16);
        if (it == h.matrix_flop_per_s.end())
            r.fail(p + "/matrix_flop_per_s", "is a bf16 GEMM rate, but the spec has no /matrix_flop_per_s/bf16 to compare it with");
        check_against_peak(r, *out.matrix_flop_per_s, it->second, "/matrix_flop_per_s/bf16", p + "/matrix_flop_per_s");
    }
    if (a.contains("matrix_flop_per_s_fp8")) {
        out.matrix_flop_per_s_fp8 = r.sourced(a, "matrix_flop_per_s_fp8", p);
        const auto it = h.matrix_flop_per_s.find(DType::fp8_e4m3);
        if (it == h.matrix_flop_per_s.end())
            r.fail(p + "/matrix_flop_per_s_fp8", "is an fp8 GEMM rate, but the spec has no /matrix_flop_per_s/fp8_e4m3 to compare it with");
        check_against_peak(r, *out.matrix_flop_per_s_fp8, it->second, "/matrix_flop_per_s/fp8_e4m3", p + "/matrix_flop_per_s_fp8");
    }
    return out;
}

TpuLayout read_tpu(const SpecReader& r, const json& t) {
    const std::string p = "/tpu";
    r.only_keys(t, {"tensor_cores", "mxus_per_core", "mxu_rows", "mxu_cols"}, p);
    return TpuLayout{r.sourced(t, "tensor_cores", p, true), r.sourced(t, "mxus_per_core", p, true), r.sourced(t, "mxu_rows", p, true),
                     r.sourced(t, "mxu_cols", p, true)};
}

}  // namespace

const std::vector<std::string>& memory_technologies() {
    static const std::vector<std::string> known = {"hbm2", "hbm2e", "hbm3", "hbm3e", "gddr5", "gddr5x", "gddr6", "gddr6x"};
    return known;
}

const MemoryLevel* Hardware::find(MemoryRole role) const {
    for (const MemoryLevel& l : memory) {
        if (l.role == role) return &l;
    }
    return nullptr;
}

std::string_view role_name(MemoryRole r) {
    switch (r) {
        case MemoryRole::device: return "device memory";
        case MemoryRole::l2: return "l2";
        case MemoryRole::shared: return "shared memory";
        case MemoryRole::vector_memory: return "vmem";
        case MemoryRole::common_memory: return "cmem";
    }
    return "?";
}

std::string_view kind_name(HardwareKind k) {
    switch (k) {
        case HardwareKind::gpu: return "gpu";
        case HardwareKind::tpu: return "tpu";
    }
    return "?";
}

Hardware parse_hardware(const json& doc, const std::string& origin) {
    SpecReader r(doc, origin);
    if (!doc.is_object()) r.fail("", std::string("expected a JSON object, got ") + doc.type_name());
    r.only_keys(
        doc,
        {"format", "name", "display_name", "kind", "sources", "clock_hz", "matrix_flop_per_s", "vector_flop_per_s", "transcendental_per_s",
         "memory", "gpu", "tpu", "launch_overhead_s", "host_link", "interconnect", "base_clock_hz", "power_w", "process_nm", "achieved"},
        "");
    if (r.string(doc, "format", "") != "roofline-hardware/1") r.fail("/format", "expected \"roofline-hardware/1\"");
    r.read_sources();
    Hardware h;
    h.origin = origin;
    h.sources = r.sources();
    h.name = r.string(doc, "name", "");
    h.display_name = r.string(doc, "display_name", "");
    const std::string kind = r.string(doc, "kind", "");
    if (kind == "gpu")
        h.kind = HardwareKind::gpu;
    else if (kind == "tpu")
        h.kind = HardwareKind::tpu;
    else
        r.fail("/kind", "expected \"gpu\" or \"tpu\", got \"" + kind + "\"");
    h.clock_hz = r.sourced(doc, "clock_hz", "");
    if (doc.contains("base_clock_hz")) {
        h.base_clock_hz = r.sourced(doc, "base_clock_hz", "");
        // The base clock is the guaranteed floor, below the boost clock; under a tenth of it is a
        // unit slip (MHz written as Hz).
        if (h.base_clock_hz->value > h.clock_hz.value || h.base_clock_hz->value < 0.1 * h.clock_hz.value) {
            r.fail("/base_clock_hz/value", "must lie between 0.1x /clock_hz and /clock_hz (" + json(h.clock_hz.value).dump() + "), got " +
                                               json(h.base_clock_hz->value).dump());
        }
    }
    h.matrix_flop_per_s = r.per_dtype(doc, "matrix_flop_per_s", "", /*allow_empty=*/true);
    h.vector_flop_per_s = r.per_dtype(doc, "vector_flop_per_s", "");
    if (!h.vector_flop_per_s.count(DType::f32)) r.fail("/vector_flop_per_s", "missing key 'f32'");
    h.transcendental_per_s = r.sourced(doc, "transcendental_per_s", "");
    if (doc.contains("power_w")) {
        h.power_w = r.sourced(doc, "power_w", "");
        if (h.power_w->value > 5000) r.fail("/power_w/value", "board power over 5 kW: check the unit (W)");
    }
    if (doc.contains("process_nm")) {
        h.process_nm = r.sourced(doc, "process_nm", "");
        if (h.process_nm->value > 100) r.fail("/process_nm/value", "process node over 100 nm: check the unit (nm)");
    }
    const json& mem = r.member(doc, "memory", "");
    if (!mem.is_array() || mem.empty()) r.fail("/memory", "expected a non-empty array of memory levels");
    std::set<std::string> level_names;
    for (std::size_t i = 0; i < mem.size(); ++i) {
        const std::string p = "/memory/" + std::to_string(i);
        if (!mem[i].is_object()) r.fail(p, "expected an object");
        r.only_keys(mem[i], {"name", "capacity_bytes", "bytes_per_s", "memory_technology"}, p);
        MemoryLevel l;
        l.name = r.string(mem[i], "name", p);
        l.capacity_bytes = r.sourced(mem[i], "capacity_bytes", p);
        l.bytes_per_s = r.sourced(mem[i], "bytes_per_s", p);
        static const std::map<std::string, MemoryRole> known = {
            {"hbm", MemoryRole::device},  {"gddr", MemoryRole::device},        {"dram", MemoryRole::device},       {"l2", MemoryRole::l2},
            {"smem", MemoryRole::shared}, {"vmem", MemoryRole::vector_memory}, {"cmem", MemoryRole::common_memory}};
        const auto role = known.find(l.name);
        if (role == known.end())
            r.fail(p + "/name", "unknown memory level '" + l.name + "' (expected hbm, gddr, dram, l2, smem, vmem or cmem)");
        l.role = role->second;
        if ((i == 0) != (l.role == MemoryRole::device)) {
            r.fail(p + "/name", i == 0 ? "the first level must be device memory (hbm, gddr or dram)"
                                       : "device memory ('" + l.name + "') must be the first level and listed once");
        }
        if (!level_names.insert(l.name).second) r.fail(p + "/name", "memory level '" + l.name + "' listed twice");
        if (mem[i].contains("memory_technology")) {
            if (i != 0) r.fail(p + "/memory_technology", "only the device-memory level (/memory/0) has a memory technology");
            l.technology = read_technology(r, mem[i], l.name, p);
        }
        h.memory.push_back(std::move(l));
    }
    if (h.kind == HardwareKind::gpu) {
        if (doc.contains("tpu")) r.fail("/tpu", "a gpu spec must not have a 'tpu' section");
        h.gpu = read_gpu(r, r.object(doc, "gpu", ""));
    } else {
        if (doc.contains("gpu")) r.fail("/gpu", "a tpu spec must not have a 'gpu' section");
        h.tpu = read_tpu(r, r.object(doc, "tpu", ""));
    }
    h.launch_overhead_s = r.sourced(doc, "launch_overhead_s", "");
    h.host_link = r.link(doc, "host_link");
    h.interconnect = r.link(doc, "interconnect");
    if (doc.contains("achieved")) h.achieved = read_achieved(r, r.object(doc, "achieved", ""), h);
    return h;
}

Hardware load_hardware_file(const std::string& path) { return parse_hardware(read_json_file(path), path); }

std::vector<std::string> builtin_hardware_names() { return builtin_names(builtin_hardware_files()); }

Hardware builtin_hardware(const std::string& name) {
    return parse_hardware(builtin_json(builtin_hardware_files(), name, "hardware", "hardware"), "sim/hardware/" + name + ".json");
}

Hardware resolve_hardware(const std::string& arg) {
    std::error_code ec;
    const bool looks_like_path = arg.find('/') != std::string::npos || std::filesystem::path(arg).extension() == ".json";
    if (looks_like_path || std::filesystem::is_regular_file(arg, ec)) return load_hardware_file(arg);
    return builtin_hardware(arg);
}

}  // namespace roofline
