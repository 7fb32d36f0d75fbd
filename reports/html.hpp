#pragma once
// Self-contained HTML reports, rendered from the JSON documents every subcommand writes, so that
// `analyze`, `plan` and `compare` share one renderer: inline CSS and SVG, a little inline JS for
// hover details and table sorting, nothing fetched from the network; readable with JS off and
// printable. Same document, same bytes.
//
// The roofline chart's axes are log10 (docs/report-schema.md, "HTML report"): a kernel with
// intensity I (FLOP per byte of device-memory traffic) and rate P (FLOP/s) is drawn at
//   cx = x0 + (log10 I - log10 x_lo) / (log10 x_hi - log10 x_lo) * (x1 - x0)
//   cy = y1 - (log10 P - log10 y_lo) / (log10 y_hi - log10 y_lo) * (y1 - y0)
// where the <svg class="roofline"> carries data-plot="x0 y0 x1 y1" and data-x-lo/-hi, data-y-lo/-hi.
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

namespace roofline {

// Limits that keep the page of a large model (gpt3-175b: thousands of kernels) small and quick.
struct HtmlLimits {
    std::size_t table_rows = 250;      // per-kernel table: the slowest N, the rest in one aggregated row
    std::size_t memory_columns = 600;  // memory timeline: columns, each the node of largest total
    double gantt_min_px = 1.5;         // Gantt: runs of shorter ops on a stream merge into one bar
};

// Dispatches on doc["schema"]: "roofline-report/1" (analyze), "roofline-plan/1" (plan),
// "roofline-comparison/1" (compare). Throws InputError for any other document.
std::string html_report(const nlohmann::ordered_json& doc, const HtmlLimits& limits = {});

}  // namespace roofline
