#include "sim/calibration.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>

#include "model/json_check.hpp"
#include "model/model_json.hpp"
#include "ops/error.hpp"
#include "sim/builtin_hardware.hpp"
#include "sim/hardware.hpp"

namespace roofline {

namespace {

using nlohmann::json;

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

bool has(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

// Where a calibration quantity goes in a spec: a JSON pointer, and the memory level for the
// bandwidth figures (memory is an array of levels, found by name).
struct Target {
    const char* quantity;
    const char* pointer;  // nullptr: memory level
    const char* level;
};
constexpr Target kTargets[] = {
    {"hbm_bytes_per_s", nullptr, "hbm"},
    {"l2_bytes_per_s", nullptr, "l2"},
    {"smem_bytes_per_s", nullptr, "smem"},
    {"vector_flop_per_s.f32", "/vector_flop_per_s/f32", nullptr},
    {"vector_flop_per_s.f16", "/vector_flop_per_s/f16", nullptr},
    {"vector_flop_per_s.bf16", "/vector_flop_per_s/bf16", nullptr},
    {"vector_flop_per_s.f64", "/vector_flop_per_s/f64", nullptr},
    {"matrix_flop_per_s.f16", "/matrix_flop_per_s/f16", nullptr},
    {"matrix_flop_per_s.bf16", "/matrix_flop_per_s/bf16", nullptr},
    {"matrix_flop_per_s.tf32", "/matrix_flop_per_s/tf32", nullptr},
    {"matrix_flop_per_s.int8", "/matrix_flop_per_s/int8", nullptr},
    {"matrix_flop_per_s.fp8_e4m3", "/matrix_flop_per_s/fp8_e4m3", nullptr},
    {"matrix_flop_per_s.fp8_e4m3", "/matrix_flop_per_s/fp8_e5m2", nullptr},  // both fp8 formats run at one rate (h100-wp)
    {"launch_overhead_s", "/launch_overhead_s", nullptr},
    {"sm_clock_observed_hz", "/clock_hz", nullptr},
};

// The spec entry (a {"value","source","note"} object) a target names, or nullptr when the base
// spec has no such entry (a dtype it does not list).
json* entry_of(json& spec, const Target& t) {
    if (t.pointer == nullptr) {
        if (!spec.contains("memory") || !spec["memory"].is_array()) return nullptr;
        for (json& level : spec["memory"])
            if (level.value("name", "") == t.level && level.contains("bytes_per_s")) return &level["bytes_per_s"];
        return nullptr;
    }
    const json::json_pointer p(t.pointer);
    if (!spec.contains(p)) {
        // A dtype the datasheet spec omits but the GPU ran: add it under its parent map.
        const json::json_pointer parent = p.parent_pointer();
        if (!spec.contains(parent) || !spec[parent].is_object()) return nullptr;
        spec[p] = json::object();
    }
    return &spec[p];
}

}  // namespace

std::string builtin_for_device(const std::string& device_name) {
    const std::string n = lower(device_name);
    std::string name;
    if (has(n, "h200"))
        name = "h200";
    else if (has(n, "h100") && has(n, "pcie"))
        name = "h100-pcie";
    else if (has(n, "h100"))
        name = "h100-sxm";
    else if (has(n, "a100") && (has(n, "80gb") || has(n, "80 gb")))
        name = "a100-sxm-80gb";
    else if (has(n, "a100"))
        name = "a100-sxm-40gb";
    else if (has(n, "l4"))
        name = "l4";
    else if (has(n, "t4"))
        name = "t4";
    const auto names = builtin_hardware_names();
    if (name.empty() || std::find(names.begin(), names.end(), name) == names.end()) {
        std::string list;
        for (const auto& b : names) list += (list.empty() ? "" : ", ") + b;
        throw InputError("no built-in spec describes the device '" + device_name + "': pass --base with one of " + list +
                         " or a spec file whose capacities and limits match this GPU");
    }
    return name;
}

json resolve_hardware_json(const std::string& arg) {
    std::error_code ec;
    const bool looks_like_path = arg.find('/') != std::string::npos || std::filesystem::path(arg).extension() == ".json";
    if (looks_like_path || std::filesystem::is_regular_file(arg, ec)) return read_json_file(arg);
    for (const auto& f : builtin_hardware_files())
        if (f.name == arg) return json::parse(f.text);
    builtin_hardware(arg);  // throws the "unknown hardware" message listing the built-ins
    return json::object();
}

namespace {

// Every field calibrated_spec and render_calibration read, with the type they read it as: a raw
// file (`calibrate --raw`) is input like any other.
void check_calibration(const json& cal) {
    const std::string origin = "calibration";
    if (!cal.is_object() || !cal.contains("schema") || cal["schema"] != "roofline-calibration/1") {
        json_fail(origin, "/schema", "expected \"roofline-calibration/1\"");
    }
    if (!cal.contains("points") || !cal["points"].is_array()) json_fail(origin, "/points", "expected an array");
    const auto typed = [&](const json& obj, const std::string& path, const char* key, bool (json::*is)() const, const char* what) {
        if (obj.contains(key) && !(obj[key].*is)()) json_fail(origin, path + "/" + key, std::string("expected ") + what);
    };
    typed(cal, "", "date_utc", &json::is_string, "a string");
    typed(cal, "", "device", &json::is_object, "an object");
    if (cal.contains("device")) {
        typed(cal["device"], "/device", "name", &json::is_string, "a string");
        typed(cal["device"], "/device", "compute_capability", &json::is_string, "a string");
        for (const char* k : {"sm_count", "driver_version", "runtime_version"})
            typed(cal["device"], "/device", k, &json::is_number_integer, "an integer");
    }
    for (std::size_t i = 0; i < cal["points"].size(); ++i) {
        const json& p = cal["points"][i];
        const std::string at = "/points/" + std::to_string(i);
        if (!p.is_object()) json_fail(origin, at, "expected an object");
        for (const char* k : {"quantity", "method", "unit"}) typed(p, at, k, &json::is_string, "a string");
        typed(p, at, "spread", &json::is_number, "a number");
        if (!p.contains("value") || !p["value"].is_number() || !(p["value"].get<double>() > 0) ||
            !std::isfinite(p["value"].get<double>())) {
            json_fail(origin, at + "/value", "expected a positive number");
        }
    }
    typed(cal, "", "gemm_efficiency", &json::is_array, "an array");
    if (cal.contains("gemm_efficiency")) {
        for (std::size_t i = 0; i < cal["gemm_efficiency"].size(); ++i) {
            const json& g = cal["gemm_efficiency"][i];
            const std::string at = "/gemm_efficiency/" + std::to_string(i);
            if (!g.is_object()) json_fail(origin, at, "expected an object");
            typed(g, at, "dtype", &json::is_string, "a string");
            for (const char* k : {"m", "n", "k"}) typed(g, at, k, &json::is_number_integer, "an integer");
            for (const char* k : {"flop_per_s", "efficiency"}) typed(g, at, k, &json::is_number, "a number");
        }
    }
}

}  // namespace

json calibrated_spec(const json& base, const json& cal) {
    const std::string origin = "calibration";
    check_calibration(cal);
    const json device = cal.value("device", json::object());
    const std::string device_name = device.value("name", "unknown GPU");
    const std::string date = cal.value("date_utc", "");
    json spec = base;
    const std::string source = "calibrated";
    spec["sources"][source] = fmt::format(
        "measured by `roofline calibrate` on {} (compute capability {}, {} SMs, driver {}, CUDA runtime {}) at {}; "
        "method per value in its note, median of repeated runs",
        device_name, device.value("compute_capability", "?"), device.value("sm_count", 0), device.value("driver_version", 0),
        device.value("runtime_version", 0), date);
    spec["name"] = base.value("name", "gpu") + "-calibrated";
    spec["display_name"] = base.value("display_name", device_name) + " (calibrated " + date.substr(0, 10) + ")";
    for (std::size_t i = 0; i < cal["points"].size(); ++i) {
        const json& p = cal["points"][i];
        const std::string q = p.value("quantity", "");
        for (const Target& t : kTargets) {
            if (q != t.quantity) continue;
            json* e = entry_of(spec, t);
            if (e == nullptr) break;
            std::string note = p.value("method", "");
            if (e->contains("value") && (*e)["value"].is_number()) {
                note += fmt::format("; spread (p90-p10)/median {:.1f}%; the base spec's {} value was {:.4g}",
                                    100.0 * p.value("spread", 0.0), (*e).value("source", "?"), (*e)["value"].get<double>());
            }
            *e = json{{"value", p["value"].get<double>()}, {"source", source}, {"note", note}};
        }
    }
    return spec;
}

std::string render_calibration(const json& cal, const std::string& base_name) {
    check_calibration(cal);
    const json base = resolve_hardware_json(base_name);
    const json measured = calibrated_spec(base, cal);
    std::string o = fmt::format("calibrated {} at {} (base spec: {})\n\n{:<26} {:>14} {:>14} {:>8} {:>7}\n",
                                cal.value("device", json::object()).value("name", "?"), cal.value("date_utc", ""), base_name, "quantity",
                                "datasheet", "measured", "ratio", "spread");
    for (const json& p : cal["points"]) {
        const std::string q = p.value("quantity", "");
        double before = 0;
        for (const Target& t : kTargets) {
            if (q != t.quantity) continue;
            json copy = base;
            const json* e = entry_of(copy, t);
            if (e != nullptr && e->contains("value")) before = (*e)["value"].get<double>();
        }
        const double v = p.value("value", 0.0);
        o += fmt::format("{:<26} {:>14} {:>14.4g} {:>8} {:>6.1f}%  {}\n", q, before > 0 ? fmt::format("{:.4g}", before) : "-", v,
                         before > 0 ? fmt::format("{:.2f}", v / before) : "-", 100.0 * p.value("spread", 0.0), p.value("unit", ""));
    }
    if (cal.contains("gemm_efficiency") && !cal["gemm_efficiency"].empty()) {
        o += "\nGEMM efficiency (of the measured matrix peak):\n";
        for (const json& g : cal["gemm_efficiency"]) {
            o += fmt::format("  {:<5} {:>5} x {:>5} x {:>5}  {:>8.1f} TFLOP/s  {:>5.1f}%\n", g.value("dtype", ""), g.value("m", 0LL),
                             g.value("n", 0LL), g.value("k", 0LL), g.value("flop_per_s", 0.0) * 1e-12, 100.0 * g.value("efficiency", 0.0));
        }
    }
    (void)measured;
    return o;
}

}  // namespace roofline
