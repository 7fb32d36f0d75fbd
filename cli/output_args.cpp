#include "cli/output_args.hpp"

#include "reports/csv.hpp"
#include "reports/html.hpp"
#include "reports/output_files.hpp"
#include "reports/report.hpp"
#include "reports/trace.hpp"

namespace roofline::cli {

void OutputArgs::add_to(CLI::App* cmd, bool with_html, bool with_trace) {
    if (with_html) cmd->add_option("--html", html, "also write a self-contained HTML report (inline SVG charts, no network) to this file");
    cmd->add_option("--csv", csv, "also write one CSV row per kernel to this file");
    if (with_trace) cmd->add_option("--trace", trace, "also write a Chrome trace (Perfetto, chrome://tracing) to this file");
}

void OutputArgs::render(const nlohmann::ordered_json& doc, OutputFiles& files, const std::string* trace_text) const {
    if (!html.empty()) files.push_back({"HTML report", html, html_report(doc)});
    if (!csv.empty()) files.push_back({"CSV", csv, csv_report(doc)});
    if (!trace.empty()) files.push_back({"trace", trace, trace_text ? *trace_text : trace_report(doc)});
}

CLI::Option* add_top_option(CLI::App* cmd, std::string& top, const std::string& help, const std::string& rows) {
    return cmd->add_option("--top", top, help)
        ->check([rows](const std::string& v) -> std::string {
            if (v == "all") return "";
            std::size_t used = 0;
            try {
                if (std::stoll(v, &used) > 0 && used == v.size()) return "";
            } catch (const std::exception&) {}
            return "expected a positive number of " + rows + " or 'all', got '" + v + "'";
        })
        ->capture_default_str();
}

std::size_t top_rows(const std::string& top) { return top == "all" ? 0 : static_cast<std::size_t>(std::stoll(top)); }

std::string write_outputs(const OutputFiles& files) {
    std::vector<PendingFile> all;
    std::string said;
    for (const OutputFile& f : files) {
        all.push_back({f.path, f.content});
        if (f.path != "-") said += f.what + " written to " + f.path + "\n";
    }
    commit_files(all);
    return said;
}

}  // namespace roofline::cli
