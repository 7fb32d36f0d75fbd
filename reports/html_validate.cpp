// The validate page (roofline-validation/1): verdicts, predicted vs measured per family on log
// axes (y = x and the +-10% band, points coloured by GPU), the tables per GPU x family, end to end
// and per op, the fitted terms and the worst cases. Self-contained like the other pages.
#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>

#include "reports/html_parts.hpp"
#include "reports/units.hpp"
#include "reports/validate.hpp"

namespace roofline {

namespace {

using html::Cell;
using html::Column;
using html::ojson;
using html::Row;

std::string pct(double v) { return fmt::format("{:.1f}%", v); }
std::string spct(double v) { return fmt::format("{:+.1f}%", v); }

// One colour per GPU, in the document's GPU order.
std::map<std::string, std::string> gpu_colours(const ojson& doc) {
    std::map<std::string, std::string> m;
    for (const ojson& g : doc["gpus"]) {
        const std::string name = html::str_at(g, "gpu");
        if (!m.count(name)) m.emplace(name, html::palette(m.size()));
    }
    return m;
}

std::string gpu_legend(const ojson& doc, const std::map<std::string, std::string>& colours) {
    std::vector<std::pair<std::string, std::string>> items;
    std::map<std::string, bool> seen;
    for (const ojson& g : doc["gpus"]) {
        const std::string name = html::str_at(g, "gpu");
        if (!seen.emplace(name, true).second) continue;
        items.emplace_back(name + " (" + html::str_at(g, "spec") + ")", colours.at(name));
    }
    return html::legend(items);
}

// Predicted vs measured time of one family's cases on log axes (the same decades on both).
std::string scatter(const std::string& family, const std::vector<const ojson*>& points, const std::map<std::string, std::string>& colours) {
    double lo = 1e300, hi = 0;
    for (const ojson* p : points) {
        for (const char* f : {"predicted_s", "measured_s"}) {
            const double v = html::num_at(*p, f);
            if (v > 0) lo = std::min(lo, v), hi = std::max(hi, v);
        }
    }
    if (hi <= 0) return "";
    const double W = 420, H = 384, x0 = 66, y0 = 22, x1 = 408, y1 = 340;
    const html::LogAxis xa = html::decade_axis(lo, hi, x0, x1), ya = html::decade_axis(lo, hi, y1, y0);
    std::string o = fmt::format(
        "<svg class=\"vscatter\" data-family=\"{0}\" data-plot=\"{1} {2} {3} {4}\" data-lo=\"{5}\" data-hi=\"{6}\" viewBox=\"0 0 {7} {8}\" "
        "width=\"{7}\" height=\"{8}\" "
        "role=\"img\" aria-label=\"{0}: predicted vs measured time\">\n",
        html::esc(family), html::px(x0), html::px(y0), html::px(x1), html::px(y1), html::gnum(xa.lo), html::gnum(xa.hi), W, H);
    o += fmt::format("<text x=\"{}\" y=\"14\" text-anchor=\"middle\" class=\"lbl\">{} ({} cases shown)</text>\n", html::px((x0 + x1) / 2),
                     html::esc(family), points.size());
    for (double v = xa.lo; v <= xa.hi * 1.0001; v *= 10) {
        o += fmt::format(
            "<line class=\"grid\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/><text x=\"{0}\" y=\"{3}\" "
            "text-anchor=\"middle\">{4}</text>\n",
            html::px(xa.map(v)), html::px(y0), html::px(y1), html::px(y1 + 15), html::esc(human_time(v)));
        o += fmt::format(
            "<line class=\"grid\" x1=\"{1}\" y1=\"{0}\" x2=\"{2}\" y2=\"{0}\"/><text x=\"{3}\" y=\"{4}\" text-anchor=\"end\">{5}</text>\n",
            html::px(ya.map(v)), html::px(x0), html::px(x1), html::px(x0 - 5), html::px(ya.map(v) + 4), html::esc(human_time(v)));
    }
    // The +-10% band between y = 1.1 x and y = 0.9 x, clipped to the plot box.
    const double L = xa.lo, U = xa.hi;
    const std::pair<double, double> band[] = {{L, 1.1 * L}, {U / 1.1, U}, {U, U}, {U, 0.9 * U}, {L / 0.9, L}, {L, L}};
    std::string pts;
    for (const auto& [x, y] : band) pts += fmt::format("{}{},{}", pts.empty() ? "" : " ", html::px(xa.map(x)), html::px(ya.map(y)));
    o += fmt::format(
        "<polygon class=\"band\" points=\"{}\" fill=\"#59a14f\" fill-opacity=\"0.15\" stroke=\"none\"><title>within 10% of the "
        "measurement</title></polygon>\n",
        pts);
    o += fmt::format("<line class=\"ceil\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"><title>predicted = measured</title></line>\n",
                     html::px(x0), html::px(y1), html::px(x1), html::px(y0));
    for (const ojson* p : points) {
        const double m = html::num_at(*p, "measured_s"), pr = html::num_at(*p, "predicted_s");
        if (m <= 0 || pr <= 0) continue;
        const std::string gpu = html::str_at(*p, "gpu");
        const auto c = colours.find(gpu);
        o += fmt::format("<circle class=\"vp\" cx=\"{}\" cy=\"{}\" r=\"2.4\" fill=\"{}\" fill-opacity=\"0.6\"><title>{}</title></circle>\n",
                         html::px(xa.map(m)), html::px(ya.map(pr)), c != colours.end() ? c->second : "#888",
                         html::esc(fmt::format("{} · {} {}\n{} ({})\nmeasured {} · predicted {} ({})\n{}:{}", gpu, html::str_at(*p, "op"),
                                               html::str_at(*p, "shape"), html::str_at(*p, "set"), family, human_time(m), human_time(pr),
                                               spct(html::num_at(*p, "error_pct")), html::str_at(*p, "file"),
                                               static_cast<long long>(html::num_at(*p, "row")))));
    }
    o += fmt::format("<rect class=\"ax\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>\n", html::px(x0), html::px(y0), html::px(x1 - x0),
                     html::px(y1 - y0));
    o += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">measured time</text>\n", html::px((x0 + x1) / 2), html::px(H - 10));
    o += fmt::format("<text transform=\"translate(14 {}) rotate(-90)\" text-anchor=\"middle\">predicted time</text>\n</svg>\n",
                     html::px((y0 + y1) / 2));
    return o;
}

std::string scatter_section(const ojson& doc, const std::map<std::string, std::string>& colours) {
    std::map<std::string, std::vector<const ojson*>> by_family;
    static const char* const order[] = {"matmul", "conv", "softmax", "layernorm", "elementwise", "other", "e2e"};
    for (const ojson& c : doc["sample"]) by_family[html::str_at(c, "family", "other")].push_back(&c);
    std::string o = gpu_legend(doc, colours) + "<div class=\"cards\">";
    for (const char* f : order)
        if (by_family.count(f)) o += "<div>" + scatter(f == std::string("e2e") ? "end to end" : f, by_family[f], colours) + "</div>";
    o += "</div>\n";
    o += html::note(
        "Log axes, the same decades on both. The line is predicted = measured; the band is ±10%. The points are a sample (at most 100 per "
        "GPU, set "
        "and family, evenly spaced in input order; every end-to-end case); the statistics use every case.");
    return html::section("scatter", "Predicted vs measured", o);
}

Cell num(const std::string& text, double key) { return html::num_cell(text, key); }

std::string stats_table(const std::string& id, const ojson& rows, const char* label_key, const char* label) {
    std::vector<Column> cols = {{"GPU", false}, {"set", false}};
    if (label_key != nullptr) cols.push_back({label, false});
    for (const char* c : {"n", "median |error|", "p90 |error|", "bias"}) cols.push_back({c, true});
    std::vector<Row> out;
    for (const ojson& j : rows) {
        Row r;
        r.cells = {Cell{html::str_at(j, "gpu") + (j.contains("spec") ? " (" + html::str_at(j, "spec") + ")" : "") +
                            (html::str_at(j, "source") == "measure" ? " [measure]" : ""),
                        ""},
                   Cell{html::str_at(j, "set"), ""}};
        if (label_key != nullptr) r.cells.push_back(Cell{html::str_at(j, label_key), ""});
        r.cells.push_back(num(fmt::format("{}", static_cast<long long>(html::num_at(j, "n"))), html::num_at(j, "n")));
        r.cells.push_back(num(pct(html::num_at(j, "median_abs_error_pct")), html::num_at(j, "median_abs_error_pct")));
        r.cells.push_back(num(pct(html::num_at(j, "p90_abs_error_pct")), html::num_at(j, "p90_abs_error_pct")));
        r.cells.push_back(num(spct(html::num_at(j, "bias_pct")), html::num_at(j, "bias_pct")));
        out.push_back(std::move(r));
    }
    return html::table(id, cols, out);
}

std::string cases_table(const std::string& id, const ojson& cases) {
    const std::vector<Column> cols = {{"GPU", false},     {"set", false},      {"op", false},   {"shape", false},
                                      {"measured", true}, {"predicted", true}, {"error", true}, {"file:row", false}};
    std::vector<Row> rows;
    for (const ojson& c : cases) {
        rows.push_back({{Cell{html::str_at(c, "gpu"), ""}, Cell{html::str_at(c, "set"), ""}, Cell{html::str_at(c, "op"), ""},
                         Cell{html::str_at(c, "shape"), ""}, num(human_time(html::num_at(c, "measured_s")), html::num_at(c, "measured_s")),
                         num(human_time(html::num_at(c, "predicted_s")), html::num_at(c, "predicted_s")),
                         num(spct(html::num_at(c, "error_pct")), html::num_at(c, "error_pct")),
                         Cell{fmt::format("{}:{}", html::str_at(c, "file"), static_cast<long long>(html::num_at(c, "row"))), ""}},
                        false});
    }
    return html::table(id, cols, rows);
}

std::string verdict_section(const ojson& doc) {
    const std::vector<Column> cols = {{"status", false}, {"threshold", false}, {"groups", true}, {"missing", false}};
    std::vector<Row> rows;
    for (const ojson& v : doc["verdicts"]) {
        std::string miss;
        for (const ojson& f : v["failing"]) {
            miss += fmt::format("{}{}{} {} {}", miss.empty() ? "" : "; ", html::str_at(f, "gpu"),
                                html::str_at(f, "source") == "measure" ? " [measure]" : "", html::str_at(f, "family", "end to end"),
                                pct(html::num_at(f, "value_pct")));
        }
        rows.push_back(
            {{Cell{html::str_at(v, "status"), ""}, Cell{html::str_at(v, "threshold"), ""},
              num(fmt::format("{}", static_cast<long long>(html::num_at(v, "groups"))), html::num_at(v, "groups")), Cell{miss, ""}},
             false});
    }
    return html::section("verdicts", "Verdicts (issue #15)", html::table("verdicts", cols, rows));
}

std::string fits_section(const ojson& doc) {
    std::vector<Row> rows;
    for (const ojson& t : doc["terms"]) {
        rows.push_back(
            {{Cell{html::str_at(t, "name"), ""}, num(fmt::format("{:.4g}", html::num_at(t, "default")), html::num_at(t, "default")),
              Cell{fmt::format("{:.3g} .. {:.3g}", html::num_at(t, "lo"), html::num_at(t, "hi")), ""},
              Cell{html::str_at(t, "families"), ""}, Cell{html::str_at(t, "evidence"), ""}},
             false});
    }
    std::string o =
        html::table("terms", {{"term", false}, {"default", true}, {"range", false}, {"families", false}, {"evidence", false}}, rows);
    if (doc.contains("folds")) {
        rows.clear();
        for (const ojson& f : doc["folds"]) {
            std::string vals;
            for (const auto& [name, v] : f["values"].items())
                vals += fmt::format("{}{} = {:.4g}", vals.empty() ? "" : ", ", name, v.get<double>());
            rows.push_back({{Cell{html::str_at(f, "left_out"), ""}, Cell{vals, ""},
                             num(fmt::format("{:.4f}", html::num_at(f, "objective")), html::num_at(f, "objective"))},
                            false});
        }
        o += html::note("Leave one GPU out: each fitting GPU is predicted with the terms refitted on the others.");
        o += html::table("folds", {{"left out", false}, {"refitted values", false}, {"objective", true}}, rows);
    }
    if (doc.contains("fit")) {
        const ojson& f = doc["fit"];
        std::string vals;
        for (const auto& [name, v] : f["values"].items())
            vals += fmt::format("{}{} = {:.4g}", vals.empty() ? "" : ", ", name, v.get<double>());
        o += html::note(fmt::format("Fit on every fitting GPU ({} cases): {}; objective {:.4f} at the defaults, {:.4f} fitted.",
                                    static_cast<long long>(html::num_at(f, "cases")), vals, html::num_at(f, "objective_default"),
                                    html::num_at(f, "objective_fitted")));
    }
    return html::section("fits", "Fitted terms", o);
}

}  // namespace

std::string html_validation(const ojson& doc) {
    const auto colours = gpu_colours(doc);
    const ojson& s = doc["summary"];
    const bool loo = html::str_at(doc["settings"], "leave_one_out") == "gpu";
    std::string files;
    for (const ojson& in : doc["inputs"]) files += (files.empty() ? "" : ", ") + html::str_at(in, "file");
    const std::string sub = fmt::format("{} · {}", files,
                                        loo ? "validation = leave one GPU out, held-out = never fitted on"
                                            : "fit = the compiled-in fitted terms (in-sample), held-out = never fitted on");
    std::size_t passed = 0;
    for (const ojson& v : doc["verdicts"]) passed += html::str_at(v, "status") == "pass" ? 1 : 0;
    std::string body =
        "<nav><a href=\"#summary\">summary</a><a href=\"#verdicts\">verdicts</a><a href=\"#scatter\">scatter</a><a "
        "href=\"#families\">families</a>"
        "<a href=\"#e2e\">end to end</a><a href=\"#ops\">ops</a><a href=\"#fits\">fits</a><a href=\"#worst\">worst</a></nav>\n";
    std::string cards = "<div class=\"cards\">";
    cards += html::card("cases", fmt::format("{}", static_cast<long long>(html::num_at(s, "cases"))),
                        fmt::format("{} predicted, {} errors, {} rows skipped", static_cast<long long>(html::num_at(s, "predicted")),
                                    static_cast<long long>(html::num_at(s, "errors")), static_cast<long long>(html::num_at(s, "skipped"))));
    cards += html::card("GPUs", fmt::format("{}", colours.size()), loo ? "leave one GPU out" : "compiled-in defaults");
    cards +=
        html::card("verdicts", fmt::format("{} of {} pass", passed, doc["verdicts"].size()), "median ≤ 10%, end to end ≤ 10%, |bias| ≤ 5%");
    cards += "</div>\n";
    body += html::section("summary", "Summary",
                          cards + html::note("error = predicted / measured − 1; median and p90 of |error|; bias = median signed error."));
    body += verdict_section(doc);
    body += scatter_section(doc, colours);
    body += html::section("families", "Per GPU and family", stats_table("families", doc["by_family"], "family", "family"));
    body += html::section("e2e", "End to end (step time)", stats_table("e2e", doc["end_to_end"], nullptr, nullptr));
    body += html::section("ops", "Per GPU and op", stats_table("ops", doc["by_op"], "op", "op"));
    body += fits_section(doc);
    std::string worst = cases_table("worst", doc["worst"]);
    for (const ojson& k : doc["skipped"])
        worst += html::note(fmt::format("skipped: {} {} rows ({})", static_cast<long long>(html::num_at(k, "rows")), html::str_at(k, "op"),
                                        html::str_at(k, "reason")));
    for (const ojson& e : doc["errors"])
        worst += html::note(fmt::format("not predicted: {}:{} {} ({}): {}", html::str_at(e, "file"),
                                        static_cast<long long>(html::num_at(e, "row")), html::str_at(e, "shape"), html::str_at(e, "gpu"),
                                        html::str_at(e, "message")));
    body += html::section("worst", "Worst cases", worst);
    return html::page("Validation: predicted vs measured", sub, body);
}

}  // namespace roofline
