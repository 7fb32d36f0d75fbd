#include "sim/hardware.hpp"

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "model/json_check.hpp"
#include "model/model_json.hpp"
#include "ops/error.hpp"
#include "sim/builtin_hardware.hpp"

namespace roofline {
namespace {

using nlohmann::json;

class SpecReader {
public:
    SpecReader(const json& doc, std::string origin) : doc_(doc), origin_(std::move(origin)) {}

    [[noreturn]] void fail(const std::string& path, const std::string& msg) const { json_fail(origin_, path, msg); }

    void only_keys(const json& obj, const std::set<std::string>& allowed, const std::string& path) const {
        json_only_keys(obj, allowed, origin_, path);
    }

    const json& member(const json& obj, const std::string& key, const std::string& path) const {
        auto it = obj.find(key);
        if (it == obj.end()) fail(path, "missing key '" + key + "'");
        return *it;
    }

    const json& object(const json& obj, const std::string& key, const std::string& path) const {
        const json& v = member(obj, key, path);
        if (!v.is_object()) fail(path + "/" + key, std::string("expected an object, got ") + v.type_name());
        return v;
    }

    std::string string(const json& obj, const std::string& key, const std::string& path) const {
        const json& v = member(obj, key, path);
        if (!v.is_string() || v.get<std::string>().empty()) fail(path + "/" + key, "expected a non-empty string");
        return v.get<std::string>();
    }

    // {"value": x > 0, "source": key of sources, "note"?}
    Sourced sourced(const json& obj, const std::string& key, const std::string& path, bool integer = false) const {
        const std::string p = path + "/" + key;
        const json& v = member(obj, key, path);
        return sourced_value(v, p, integer);
    }

    Sourced sourced_value(const json& v, const std::string& p, bool integer) const {
        if (!v.is_object()) fail(p, "expected {\"value\": number, \"source\": key}, got " + std::string(v.type_name()));
        only_keys(v, {"value", "source", "note"}, p);
        const json& val = member(v, "value", p);
        if (!val.is_number()) fail(p + "/value", std::string("expected a number, got ") + val.type_name());
        Sourced s;
        s.value = val.get<double>();
        if (!std::isfinite(s.value) || s.value <= 0) fail(p + "/value", "must be positive, got " + val.dump());
        if (integer && std::floor(s.value) != s.value) fail(p + "/value", "must be an integer, got " + val.dump());
        s.source = string(v, "source", p);
        if (!sources_.count(s.source)) fail(p + "/source", "source '" + s.source + "' is not a key of /sources");
        if (v.contains("note")) {
            if (!v["note"].is_string()) fail(p + "/note", "expected a string");
            s.note = v["note"].get<std::string>();
        }
        return s;
    }

    std::map<DType, Sourced> per_dtype(const json& obj, const std::string& key, const std::string& path) const {
        const json& m = object(obj, key, path);
        std::map<DType, Sourced> out;
        for (const auto& [k, v] : m.items()) {
            auto d = parse_dtype(k);
            if (!d || !(is_floating(*d) || *d == DType::int8)) {
                fail(path + "/" + key + "/" + k, "unknown dtype key '" + k + "' (expected f64, f32, tf32, f16, bf16, fp8_e4m3, fp8_e5m2, int8)");
            }
            out[*d] = sourced_value(v, path + "/" + key + "/" + k, false);
        }
        if (out.empty()) fail(path + "/" + key, "must list at least one dtype");
        return out;
    }

    Link link(const json& obj, const std::string& key) const {
        const json& l = object(obj, key, "");
        only_keys(l, {"name", "bytes_per_s"}, "/" + key);
        return Link{string(l, "name", "/" + key), sourced(l, "bytes_per_s", "/" + key)};
    }

    void read_sources() {
        const json& s = object(doc_, "sources", "");
        if (s.empty()) fail("/sources", "must cite at least one source");
        for (const auto& [k, v] : s.items()) {
            if (!v.is_string() || v.get<std::string>().empty()) fail("/sources/" + k, "expected a citation string");
            sources_[k] = v.get<std::string>();
        }
    }

    const std::map<std::string, std::string>& sources() const { return sources_; }

private:
    const json& doc_;
    std::string origin_;
    std::map<std::string, std::string> sources_;
};

GpuLimits read_gpu(const SpecReader& r, const json& g) {
    const std::string p = "/gpu";
    r.only_keys(g, {"compute_capability", "sm_count", "warp_size", "max_threads_per_sm", "max_threads_per_block",
                    "max_warps_per_sm", "max_blocks_per_sm", "registers_per_sm", "max_registers_per_thread",
                    "register_allocation_unit", "shared_memory_per_sm_bytes", "max_shared_memory_per_block_bytes",
                    "shared_memory_allocation_unit_bytes"},
                p);
    GpuLimits l;
    l.compute_capability = r.string(g, "compute_capability", p);
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

TpuLayout read_tpu(const SpecReader& r, const json& t) {
    const std::string p = "/tpu";
    r.only_keys(t, {"tensor_cores", "mxus_per_core", "mxu_rows", "mxu_cols"}, p);
    return TpuLayout{r.sourced(t, "tensor_cores", p, true), r.sourced(t, "mxus_per_core", p, true),
                     r.sourced(t, "mxu_rows", p, true), r.sourced(t, "mxu_cols", p, true)};
}

}  // namespace

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
    r.only_keys(doc, {"format", "name", "display_name", "kind", "sources", "clock_hz", "matrix_flop_per_s",
                      "vector_flop_per_s", "transcendental_per_s", "memory", "gpu", "tpu", "launch_overhead_s",
                      "host_link", "interconnect"},
                "");
    if (r.string(doc, "format", "") != "roofline-hardware/1") r.fail("/format", "expected \"roofline-hardware/1\"");
    r.read_sources();
    Hardware h;
    h.origin = origin;
    h.sources = r.sources();
    h.name = r.string(doc, "name", "");
    h.display_name = r.string(doc, "display_name", "");
    const std::string kind = r.string(doc, "kind", "");
    if (kind == "gpu") h.kind = HardwareKind::gpu;
    else if (kind == "tpu") h.kind = HardwareKind::tpu;
    else r.fail("/kind", "expected \"gpu\" or \"tpu\", got \"" + kind + "\"");
    h.clock_hz = r.sourced(doc, "clock_hz", "");
    h.matrix_flop_per_s = r.per_dtype(doc, "matrix_flop_per_s", "");
    h.vector_flop_per_s = r.per_dtype(doc, "vector_flop_per_s", "");
    if (!h.vector_flop_per_s.count(DType::f32)) r.fail("/vector_flop_per_s", "missing key 'f32'");
    h.transcendental_per_s = r.sourced(doc, "transcendental_per_s", "");
    const json& mem = r.member(doc, "memory", "");
    if (!mem.is_array() || mem.empty()) r.fail("/memory", "expected a non-empty array of memory levels");
    std::set<std::string> level_names;
    for (std::size_t i = 0; i < mem.size(); ++i) {
        const std::string p = "/memory/" + std::to_string(i);
        if (!mem[i].is_object()) r.fail(p, "expected an object");
        r.only_keys(mem[i], {"name", "capacity_bytes", "bytes_per_s"}, p);
        MemoryLevel l{r.string(mem[i], "name", p), r.sourced(mem[i], "capacity_bytes", p), r.sourced(mem[i], "bytes_per_s", p)};
        static const std::set<std::string> known = {"hbm", "gddr", "dram", "l2", "smem", "vmem", "cmem"};
        if (!known.count(l.name)) r.fail(p + "/name", "unknown memory level '" + l.name + "' (expected hbm, gddr, dram, l2, smem, vmem or cmem)");
        if (i == 0 && l.name != "hbm" && l.name != "gddr" && l.name != "dram") r.fail(p + "/name", "the first level must be device memory (hbm, gddr or dram)");
        if (!level_names.insert(l.name).second) r.fail(p + "/name", "memory level '" + l.name + "' listed twice");
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
    return h;
}

Hardware load_hardware_file(const std::string& path) {
    return parse_hardware(read_json_file(path), path);
}

std::vector<std::string> builtin_hardware_names() {
    std::vector<std::string> names;
    for (const auto& f : builtin_hardware_files()) names.emplace_back(f.name);
    return names;
}

Hardware builtin_hardware(const std::string& name) {
    for (const auto& f : builtin_hardware_files()) {
        if (f.name == name) {
            const std::string origin = "sim/hardware/" + name + ".json";
            json doc;
            try {
                doc = json::parse(f.text);
            } catch (const json::parse_error& e) {
                throw InputError(origin + ": malformed JSON: " + e.what());
            }
            Hardware h = parse_hardware(doc, origin);
            if (h.name != name) throw InputError(origin + ": /name: expected \"" + name + "\" (the file name)");
            return h;
        }
    }
    std::string list;
    for (const auto& n : builtin_hardware_names()) list += (list.empty() ? "" : ", ") + n;
    throw InputError("unknown hardware '" + name + "' (built in: " + list + "; or pass a spec file path)");
}

Hardware resolve_hardware(const std::string& arg) {
    std::error_code ec;
    const bool looks_like_path = arg.find('/') != std::string::npos || std::filesystem::path(arg).extension() == ".json";
    if (looks_like_path || std::filesystem::is_regular_file(arg, ec)) return load_hardware_file(arg);
    return builtin_hardware(arg);
}

}  // namespace roofline
