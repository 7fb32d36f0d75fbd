#include "reports/html.hpp"

#include <initializer_list>

#include "ops/error.hpp"
#include "reports/generate_report.hpp"
#include "reports/serve_report.hpp"
#include "reports/html_parts.hpp"

namespace roofline {

namespace {

void require(const nlohmann::ordered_json& doc, const std::string& schema, std::initializer_list<const char*> keys) {
    for (const char* k : keys) {
        if (!doc.contains(k)) throw InputError("HTML report: the " + schema + " document has no \"" + k + "\"");
    }
}

}  // namespace

std::string html_report(const nlohmann::ordered_json& doc, const HtmlLimits& limits) {
    if (!doc.is_object() || !doc.contains("schema") || !doc["schema"].is_string()) {
        throw InputError("HTML report: expected a roofline JSON document with a \"schema\"");
    }
    const std::string schema = doc["schema"].get<std::string>();
    if (schema == "roofline-report/1") {
        require(doc, schema, {"tool", "model", "hardware", "settings", "totals", "memory", "ops"});
        if (!doc["ops"].is_array()) throw InputError("HTML report: /ops: expected an array");
        return html::analysis_page(doc, limits);
    }
    if (schema == "roofline-plan/1") {
        require(doc, schema, {"tool", "model", "hardware", "settings", "baseline", "options"});
        if (!doc["options"].is_array()) throw InputError("HTML report: /options: expected an array");
        return html::plan_page(doc, limits);
    }
    if (schema == "roofline-comparison/1") {
        require(doc, schema, {"predicted", "measured", "model", "summary", "kernels"});
        if (!doc["kernels"].is_array()) throw InputError("HTML report: /kernels: expected an array");
        return html::comparison_page(doc, limits);
    }
    if (schema == "roofline-generate/1") {
        require(doc, schema, {"model", "settings", "totals", "memory", "tokens"});
        return generate_html(doc);
    }
    if (schema == "roofline-serve/1") {
        require(doc, schema, {"model", "settings", "metrics", "timeline"});
        return serve_html(doc);
    }
    throw InputError("HTML report: no HTML view of schema \"" + schema +
                     "\" (analyze, plan, compare, generate and serve documents have one: roofline-report/1, roofline-plan/1, "
                     "roofline-comparison/1, roofline-generate/1, roofline-serve/1)");
}

}  // namespace roofline
