#pragma once
// --html, --csv and --trace for every subcommand that writes a JSON document (analyze, plan,
// compare, measure): one definition of the options, rendered from the document itself
// (reports/html.hpp, reports/csv.hpp, reports/trace.hpp). A command renders every text first
// and writes only when all of them were built, each file atomically.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace roofline::cli {

// Files to write, in order: what it is ("HTML report"), where, and the text.
struct OutputFile {
    std::string what, path, content;
};
using OutputFiles = std::vector<OutputFile>;

struct OutputArgs {
    std::string html;
    std::string csv;
    std::string trace;

    // Adds --csv, and --html / --trace where the command has them (analyze keeps its own --trace,
    // measure has no HTML view).
    void add_to(CLI::App* cmd, bool with_html = true, bool with_trace = true);
    bool wanted() const { return !html.empty() || !csv.empty() || !trace.empty(); }
    // Appends the requested texts of doc to files. trace_text, when given, is written to --trace
    // instead of the trace rendered from doc. Throws InputError when doc has no such view.
    void render(const nlohmann::ordered_json& doc, OutputFiles& files, const std::string* trace_text = nullptr) const;
};

// --top N|all (analyze, search): a positive number of table rows (what they are: `rows`) or
// 'all'; top_rows reads the checked value (0: all).
CLI::Option* add_top_option(CLI::App* cmd, std::string& top, const std::string& help, const std::string& rows);
std::size_t top_rows(const std::string& top);

// Writes every file or none (reports/output_files.hpp); returns one "<what> written to <path>"
// line per file for the command to print unless quiet.
std::string write_outputs(const OutputFiles& files);

}  // namespace roofline::cli
