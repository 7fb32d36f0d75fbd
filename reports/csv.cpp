#include "reports/csv.hpp"

#include <fmt/format.h>
#include <string_view>
#include <vector>

#include "ops/error.hpp"

namespace roofline {

namespace {

using ojson = nlohmann::ordered_json;

// The value at a dotted path ("schedule.start_s", "levels.0.intensity"), or null.
const ojson* at_path(const ojson& j, std::string_view path) {
    const ojson* cur = &j;
    while (!path.empty()) {
        const std::size_t dot = path.find('.');
        const std::string key(path.substr(0, dot));
        path = dot == std::string_view::npos ? std::string_view() : path.substr(dot + 1);
        if (cur->is_object()) {
            const auto it = cur->find(key);
            if (it == cur->end()) return nullptr;
            cur = &*it;
        } else if (cur->is_array() && !key.empty() && key.find_first_not_of("0123456789") == std::string::npos) {
            const std::size_t i = std::stoul(key);
            if (i >= cur->size()) return nullptr;
            cur = &(*cur)[i];
        } else {
            return nullptr;
        }
    }
    return cur;
}

}  // namespace

std::string csv_quote(const std::string& s) {
    if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
}

namespace {

const auto quote = csv_quote;

std::string cell(const ojson* v) {
    if (!v || v->is_null()) return "";
    if (v->is_string()) return quote(v->get<std::string>());
    if (v->is_boolean()) return v->get<bool>() ? "true" : "false";
    if (v->is_number_integer()) return v->dump();
    if (v->is_number()) return fmt::format("{:.9g}", v->get<double>());
    return quote(v->dump());
}

struct Col {
    const char* header;
    const char* path;
};

std::string rows(const ojson& items, const std::vector<Col>& cols, bool with_index) {
    std::string out = with_index ? "index" : "";
    for (const Col& c : cols) out += (out.empty() ? "" : ",") + std::string(c.header);
    out += "\n";
    if (!items.is_array()) return out;
    for (std::size_t i = 0; i < items.size(); ++i) {
        std::string line = with_index ? std::to_string(i + 1) : "";
        bool first = !with_index;
        for (const Col& c : cols) {
            if (!first) line += ",";
            first = false;
            line += cell(at_path(items[i], c.path));
        }
        out += line + "\n";
    }
    return out;
}

}  // namespace

std::string csv_report(const ojson& doc) {
    const std::string schema =
        doc.is_object() && doc.contains("schema") && doc["schema"].is_string() ? doc["schema"].get<std::string>() : "";
    auto list = [&](const char* key) -> const ojson& {
        if (!doc.contains(key) || !doc[key].is_array())
            throw InputError("CSV report: the " + schema + " document has no \"" + key + "\" array");
        return doc[key];
    };
    if (schema == "roofline-report/1") {
        return rows(list("ops"),
                    {{"name", "name"},
                     {"op", "op"},
                     {"family", "family"},
                     {"phase", "phase"},
                     {"dtype", "dtype"},
                     {"flops", "work.flops"},
                     {"matrix_flops", "work.matrix_flops"},
                     {"vector_flops", "work.vector_flops"},
                     {"transcendentals", "work.transcendentals"},
                     {"bytes_read", "work.bytes_read"},
                     {"bytes_written", "work.bytes_written"},
                     {"intensity", "levels.0.intensity"},
                     {"bound", "bound"},
                     {"lower_bound_s", "time_s"},
                     {"modelled_s", "model.time_s"},
                     {"model_bound", "model.bound"},
                     {"efficiency", "model.efficiency"},
                     {"attainable_flop_per_s", "attainable_flop_per_s"},
                     {"share", "share"},
                     {"stream", "schedule.stream"},
                     {"start_s", "schedule.start_s"},
                     {"end_s", "schedule.end_s"}},
                    true);
    }
    if (schema == "roofline-comparison/1") {
        return rows(list("kernels"),
                    {{"name", "name"},
                     {"op", "op"},
                     {"phase", "phase"},
                     {"kernels", "kernels"},
                     {"measured_s", "measured_s"},
                     {"measured_p10_s", "measured_p10_s"},
                     {"measured_p90_s", "measured_p90_s"},
                     {"predicted_s", "predicted_s"},
                     {"lower_bound_s", "lower_bound_s"},
                     {"predicted_bound", "predicted_bound"},
                     {"time_error_pct", "time_error_pct"},
                     {"measured_efficiency", "measured_efficiency"},
                     {"predicted_flops", "predicted_flops"},
                     {"predicted_hbm_bytes", "predicted_hbm_bytes"},
                     {"predicted_l2_bytes", "predicted_l2_bytes"},
                     {"predicted_intensity", "predicted_intensity"},
                     {"measured_dram_bytes", "measured_dram_bytes"},
                     {"measured_l2_bytes", "measured_l2_bytes"},
                     {"measured_flops", "measured_flops"},
                     {"measured_intensity", "measured_intensity"},
                     {"wrong_term", "wrong_term"},
                     {"wrong_term_detail", "wrong_term_detail"}},
                    false);
    }
    if (schema == "roofline-measurement/1") {
        ojson nodes = list("nodes");
        for (ojson& n : nodes) n["kernel_count"] = n.contains("kernels") && n["kernels"].is_array() ? n["kernels"].size() : 0;
        return rows(nodes,
                    {{"node", "node"},
                     {"name", "name"},
                     {"op", "op"},
                     {"phase", "phase"},
                     {"dtype", "dtype"},
                     {"kernels", "kernel_count"},
                     {"median_s", "median_s"},
                     {"p10_s", "p10_s"},
                     {"p90_s", "p90_s"},
                     {"check", "check.status"},
                     {"check_error", "check.error"}},
                    false);
    }
    if (schema == "roofline-plan/1") {
        return rows(list("options"),
                    {{"rank", "rank"},
                     {"name", "name"},
                     {"fuse", "fuse"},
                     {"recompute", "recompute"},
                     {"step_time_s", "step_time_s"},
                     {"peak_bytes", "peak_bytes"},
                     {"flops", "flops"},
                     {"extra_flops", "extra_flops"},
                     {"time_overhead_s", "time_overhead_s"},
                     {"memory_saved_bytes", "memory_saved_bytes"},
                     {"kernels", "kernels"},
                     {"fits", "fits"},
                     {"pareto", "pareto"},
                     {"changes", "changes"}},
                    false);
    }
    throw InputError("CSV report: no CSV view of schema \"" + schema +
                     "\" (roofline-report/1, roofline-comparison/1, roofline-measurement/1 and roofline-plan/1 have one)");
}

}  // namespace roofline
