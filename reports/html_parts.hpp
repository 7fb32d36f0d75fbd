#pragma once
// Pieces the HTML reports share (reports/html*.cpp only): escaping, number formats, axes, colours,
// the page frame, sortable tables and the SVG charts. Everything is inline: no network, no fonts,
// no external scripts; every chart reads without JavaScript (hover details are SVG <title>s).
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace roofline::html {

using ojson = nlohmann::ordered_json;

std::string esc(std::string_view s);  // text and attribute values: & < > " '
std::string px(double v);             // an SVG coordinate: 2 decimals
std::string gnum(double v);           // a data attribute: the shortest text that reads back exactly

// JSON access that tolerates absent keys (the documents are our own; a missing optional part
// leaves its section out instead of failing the page).
double num_at(const ojson& j, std::string_view key, double fallback = 0);
std::string str_at(const ojson& j, std::string_view key, std::string fallback = "");

// A log10 axis: v maps to px0 + (log10 v - log10 lo) / (log10 hi - log10 lo) * (px1 - px0).
struct LogAxis {
    double lo = 1, hi = 10, px0 = 0, px1 = 1;
    double map(double v) const;
};
LogAxis decade_axis(double lo, double hi, double px0, double px1);  // lo, hi widened to whole decades

// A linear axis from lo to hi.
struct LinAxis {
    double lo = 0, hi = 1, px0 = 0, px1 = 1;
    double map(double v) const;
};
double nice_ceiling(double v);  // 1, 2 or 5 times a power of ten, >= v

// Colours: one per op family (fill by CSS class "f-<family>"), and for memory categories, phases
// and bounds a fixed palette indexed in a fixed order.
std::string family_class(std::string_view family);
const char* palette(std::size_t i);
std::string legend(const std::vector<std::pair<std::string, std::string>>& items);  // (label, css colour)
std::string family_legend(const std::vector<std::string>& families);

// The page: <!DOCTYPE html>, inline CSS and JS, a title, a one-line subtitle and the sections.
std::string page(const std::string& title, const std::string& subtitle, const std::string& body);
std::string section(const std::string& id, const std::string& title, const std::string& content);
std::string card(const std::string& label, const std::string& value, const std::string& detail);
std::string note(const std::string& text);  // a paragraph of explanation (text is escaped)

// A table the inline JS sorts by clicking a header (rows keep the server's order without JS).
// Cells carry a sort key; numeric columns sort by number. Rows with agg = true stay last.
struct Cell {
    std::string text;
    std::string key;  // empty: sort by text
};
struct Row {
    std::vector<Cell> cells;
    bool agg = false;
};
struct Column {
    std::string label;
    bool numeric = false;
};
std::string table(const std::string& id, const std::vector<Column>& cols, const std::vector<Row>& rows);  // <table id="t-ID">
Cell num_cell(const std::string& text, double key);

// Horizontal bars: label, value (seconds, bytes, ...), display text and colour.
struct Bar {
    std::string label;
    double value = 0;
    std::string text;
    std::string colour;
};
std::string bar_chart(const std::vector<Bar>& bars, const std::string& caption);
// One 100% bar split into parts (share of time per bound, ...).
std::string share_strip(const std::vector<Bar>& parts);

// The roofline chart. Axes are log10: x = FLOP per byte of device memory, y = FLOP/s. The plot
// box and axis ranges are on the <svg> as data attributes (data-plot="x0 y0 x1 y1",
// data-x-lo/hi, data-y-lo/hi) so a test can check every point against the documented mapping.
struct RoofPoint {
    std::size_t index = 0;  // data-k: the kernel's index in the document (ops[] or kernels[])
    std::string family;     // colour
    std::string kind;       // extra class: "pred" or "meas" in compare, empty otherwise
    double intensity = 0;   // FLOP/byte
    double flop_per_s = 0;
    double time_s = 0;   // area proportional to time
    std::string title;   // hover text
    std::string colour;  // overrides the family colour when set
};
struct RooflineChart {
    std::vector<std::pair<std::string, double>> compute;  // ceiling label, FLOP/s
    std::vector<std::pair<std::string, double>> memory;   // level, bytes/s (outermost first)
    struct Ridge {
        std::string compute, level;
        double flop_per_byte = 0, flop_per_s = 0;
    };
    std::vector<Ridge> ridges;
    std::vector<RoofPoint> points;
    std::vector<std::pair<std::size_t, std::size_t>> links;  // indices into points joined by a line
};
void add_hardware(RooflineChart& c, const ojson& hardware);  // ceilings, slopes, ridges of a spec
std::string roofline_svg(const RooflineChart& c);

}  // namespace roofline::html

// The pages, one per document schema (html.cpp dispatches).
#include "reports/html.hpp"
namespace roofline::html {
std::string analysis_page(const ojson& doc, const HtmlLimits& limits);    // html_analysis.cpp
std::string plan_page(const ojson& doc, const HtmlLimits& limits);        // html_plan.cpp
std::string comparison_page(const ojson& doc, const HtmlLimits& limits);  // html_compare.cpp
}  // namespace roofline::html
