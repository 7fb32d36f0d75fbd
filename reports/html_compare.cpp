// The compare page (roofline-comparison/1): accuracy summary, predicted and measured points of
// every kernel on one roofline, predicted vs measured time, the error by wrong term, the kernels.
#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>

#include "ops/op_kind.hpp"
#include "ops/op_rule.hpp"
#include "reports/html_parts.hpp"
#include "reports/units.hpp"

namespace roofline::html {

namespace {

std::string signed_pct(double v) { return fmt::format("{:+.1f}%", v); }

std::string summary(const ojson& doc) {
    const ojson& s = doc["summary"];
    std::string o = "<div class=\"cards\">";
    o += card("kernels compared", fmt::format("{}", static_cast<long long>(num_at(s, "kernels"))),
              fmt::format("{} in the statistics; {} unmatched nodes", static_cast<long long>(num_at(s, "kernels_in_statistics")),
                          static_cast<long long>(num_at(s, "unmatched_nodes"))));
    o += card("per-kernel time error", fmt::format("median {:.1f}%", num_at(s, "median_abs_error_pct")),
              fmt::format("p90 {:.1f}%, MAPE {:.1f}%, median signed {}", num_at(s, "p90_abs_error_pct"), num_at(s, "mape_pct"),
                          signed_pct(num_at(s, "median_signed_error_pct"))));
    o += card("step time", fmt::format("{} predicted", human_time(num_at(s, "predicted_step_s"))),
              fmt::format("{} measured ({})", human_time(num_at(s, "measured_step_s")), signed_pct(num_at(s, "step_error_pct"))));
    o += card("kernel sum", fmt::format("{} predicted", human_time(num_at(s, "predicted_kernel_sum_s"))),
              fmt::format("{} measured ({}); roofline bound {}", human_time(num_at(s, "measured_kernel_sum_s")),
                          signed_pct(num_at(s, "kernel_sum_error_pct")), human_time(num_at(s, "lower_bound_sum_s"))));
    o += "</div>\n";
    return o;
}

// The op family of a kernel's op kind (colours follow the family, as on the analyze page).
std::string family_of(const std::string& op) {
    const auto kind = parse_op(op);
    return kind ? std::string(family_name(rule_of(*kind).family)) : "other";
}

std::map<std::string, std::string> family_colours_of(const ojson& kernels) {
    std::map<std::string, std::string> m;
    for (const ojson& k : kernels) m[str_at(k, "op")] = family_of(str_at(k, "op"));
    return m;
}

std::string roofline_section(const ojson& doc, const std::map<std::string, std::string>& colours) {
    RooflineChart c;
    if (doc.contains("hardware")) add_hardware(c, doc["hardware"]);
    const ojson& ks = doc["kernels"];
    std::size_t skipped = 0;
    for (std::size_t i = 0; i < ks.size(); ++i) {
        const ojson& k = ks[i];
        const double flops = num_at(k, "predicted_flops"), pin = num_at(k, "predicted_intensity");
        const double pt = num_at(k, "predicted_s"), mt = num_at(k, "measured_s");
        if (flops <= 0 || pin <= 0 || pt <= 0 || mt <= 0) {
            ++skipped;
            continue;
        }
        const double mflops = num_at(k, "measured_flops") > 0 ? num_at(k, "measured_flops") : flops;
        const double min = num_at(k, "measured_intensity") > 0 ? num_at(k, "measured_intensity") : pin;
        const std::string head = fmt::format("{} · {} ({})", str_at(k, "name"), str_at(k, "op"), str_at(k, "phase"));
        RoofPoint p{i, colours.at(str_at(k, "op")), "pred", pin, flops / pt, pt, "", ""};
        p.title =
            fmt::format("{}\npredicted: {} FLOP/B · {} · {}", head, human_intensity(pin), human_si(p.flop_per_s, "FLOP/s"), human_time(pt));
        RoofPoint m{i, p.family, "meas", min, mflops / mt, mt, "", ""};
        m.title =
            fmt::format("{}\nmeasured: {} FLOP/B · {} · {} ({} vs predicted)\nwrong term: {}", head, human_intensity(min),
                        human_si(m.flop_per_s, "FLOP/s"), human_time(mt), signed_pct(num_at(k, "time_error_pct")), str_at(k, "wrong_term"));
        c.links.emplace_back(c.points.size(), c.points.size() + 1);
        c.points.push_back(std::move(p));
        c.points.push_back(std::move(m));
    }
    std::vector<std::string> families;
    for (const auto& [kind, family] : colours)
        if (std::find(families.begin(), families.end(), family) == families.end()) families.push_back(family);
    std::sort(families.begin(), families.end());
    std::string o = roofline_svg(c) + family_legend(families);
    o += note(fmt::format(
        "Each kernel twice, joined by a line: hollow = predicted (FLOPs over the predicted time at the predicted intensity), filled = "
        "measured (counted FLOPs and DRAM bytes where counters were collected, else the predicted counts, over the measured time). "
        "Area proportional to time. {} kernels without FLOPs are not plotted.{}",
        skipped, doc.contains("hardware") ? "" : " The comparison carries no hardware spec: no ceilings drawn."));
    return section("roofline", "Roofline: predicted and measured", o);
}

std::string time_scatter(const ojson& doc, const std::map<std::string, std::string>& colours) {
    const ojson& ks = doc["kernels"];
    double lo = 1e300, hi = 0;
    for (const ojson& k : ks) {
        for (const char* f : {"predicted_s", "measured_s"}) {
            const double v = num_at(k, f);
            if (v > 0) lo = std::min(lo, v), hi = std::max(hi, v);
        }
    }
    if (hi <= 0) return "";
    const double W = 520, H = 440, x0 = 70, y0 = 12, x1 = 505, y1 = 392;
    const LogAxis xa = decade_axis(lo, hi, x0, x1), ya = decade_axis(lo, hi, y1, y0);
    std::string o = fmt::format(
        "<svg class=\"timescatter\" viewBox=\"0 0 {0} {1}\" width=\"{0}\" height=\"{1}\" role=\"img\" aria-label=\"predicted vs measured "
        "time\">\n",
        W, H);
    for (double v = xa.lo; v <= xa.hi * 1.0001; v *= 10) {
        o += fmt::format(
            "<line class=\"grid\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/><text x=\"{0}\" y=\"{3}\" "
            "text-anchor=\"middle\">{4}</text>\n",
            px(xa.map(v)), px(y0), px(y1), px(y1 + 15), esc(human_time(v)));
        o += fmt::format(
            "<line class=\"grid\" x1=\"{1}\" y1=\"{0}\" x2=\"{2}\" y2=\"{0}\"/><text x=\"{3}\" y=\"{4}\" text-anchor=\"end\">{5}</text>\n",
            px(ya.map(v)), px(x0), px(x1), px(x0 - 5), px(ya.map(v) + 4), esc(human_time(v)));
    }
    o += fmt::format("<line class=\"ceil\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"><title>predicted = measured</title></line>\n", px(x0),
                     px(y1), px(x1), px(y0));
    for (std::size_t i = 0; i < ks.size(); ++i) {
        const ojson& k = ks[i];
        const double m = num_at(k, "measured_s"), p = num_at(k, "predicted_s");
        if (m <= 0 || p <= 0) continue;
        o += fmt::format("<circle class=\"tp {0}\" cx=\"{1}\" cy=\"{2}\" r=\"2.5\" data-k=\"{3}\"><title>{4}</title></circle>\n",
                         family_class(colours.at(str_at(k, "op"))), px(xa.map(m)), px(ya.map(p)), i,
                         esc(fmt::format("{} · {}\nmeasured {} · predicted {} ({})", str_at(k, "name"), str_at(k, "op"), human_time(m),
                                         human_time(p), signed_pct(num_at(k, "time_error_pct")))));
    }
    o += fmt::format("<rect class=\"ax\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>\n", px(x0), px(y0), px(x1 - x0), px(y1 - y0));
    o += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">measured time</text>\n", px((x0 + x1) / 2), px(H - 12));
    o += fmt::format("<text transform=\"translate(14 {}) rotate(-90)\" text-anchor=\"middle\">predicted time</text>\n</svg>\n",
                     px((y0 + y1) / 2));
    return o;
}

std::string error_section(const ojson& doc, const std::map<std::string, std::string>& colours) {
    std::string o = time_scatter(doc, colours);
    std::vector<Bar> bars;
    std::size_t i = 0;
    const ojson terms = doc["summary"].value("by_wrong_term", ojson::object());  // items() must not outlive it
    for (const auto& [term, v] : terms.items()) {
        bars.push_back(
            {term, num_at(v, "abs_error_s"),
             fmt::format("{} over {} kernels", human_time(num_at(v, "abs_error_s")), static_cast<long long>(num_at(v, "kernels"))),
             palette(i++)});
    }
    std::stable_sort(bars.begin(), bars.end(), [](const Bar& a, const Bar& b) { return a.value > b.value; });
    o += bar_chart(bars, "absolute time error by the term the model got wrong");
    std::map<std::string, std::pair<double, double>> phases;
    for (const ojson& k : doc["kernels"]) {
        auto& p = phases[str_at(k, "phase")];
        p.first += num_at(k, "predicted_s"), p.second += num_at(k, "measured_s");
    }
    bars.clear();
    for (const auto& [phase, v] : phases) {
        bars.push_back({phase + " predicted", v.first, human_time(v.first), palette(0)});
        bars.push_back({phase + " measured", v.second, human_time(v.second), palette(1)});
    }
    o += bar_chart(bars, "kernel time by phase, predicted and measured");
    return section("errors", "Predicted vs measured time", o);
}

std::string kernels_section(const ojson& doc, const HtmlLimits& lim) {
    const ojson& ks = doc["kernels"];
    std::vector<std::size_t> idx(ks.size());
    for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = i;
    std::stable_sort(idx.begin(), idx.end(),
                     [&](std::size_t a, std::size_t b) { return num_at(ks[a], "measured_s") > num_at(ks[b], "measured_s"); });
    const std::vector<Column> cols = {{"name", false},        {"op", false},          {"phase", false},
                                      {"measured", true},     {"predicted", true},    {"error", true},
                                      {"lower bound", true},  {"efficiency", true},   {"predicted bound", false},
                                      {"FLOP/B pred.", true}, {"FLOP/B meas.", true}, {"wrong term", false}};
    std::vector<Row> rows;
    const std::size_t shown = std::min(idx.size(), lim.table_rows);
    for (std::size_t r = 0; r < shown; ++r) {
        const ojson& k = ks[idx[r]];
        const double pin = num_at(k, "predicted_intensity"), min = num_at(k, "measured_intensity");
        std::string term = str_at(k, "wrong_term");
        if (!str_at(k, "wrong_term_detail").empty()) term += ": " + str_at(k, "wrong_term_detail");
        rows.push_back({{Cell{str_at(k, "name"), ""}, Cell{str_at(k, "op"), ""}, Cell{str_at(k, "phase"), ""},
                         num_cell(human_time(num_at(k, "measured_s")), num_at(k, "measured_s")),
                         num_cell(human_time(num_at(k, "predicted_s")), num_at(k, "predicted_s")),
                         num_cell(signed_pct(num_at(k, "time_error_pct")), num_at(k, "time_error_pct")),
                         num_cell(human_time(num_at(k, "lower_bound_s")), num_at(k, "lower_bound_s")),
                         num_cell(fmt::format("{:.0f}%", 100 * num_at(k, "measured_efficiency")), num_at(k, "measured_efficiency")),
                         Cell{str_at(k, "predicted_bound"), ""}, num_cell(pin > 0 ? human_intensity(pin) : "-", pin),
                         num_cell(min > 0 ? human_intensity(min) : "-", min), Cell{term, ""}},
                        false});
    }
    if (idx.size() > shown) {
        double m = 0, p = 0, lb = 0;
        for (std::size_t r = shown; r < idx.size(); ++r)
            m += num_at(ks[idx[r]], "measured_s"), p += num_at(ks[idx[r]], "predicted_s"), lb += num_at(ks[idx[r]], "lower_bound_s");
        rows.push_back({{Cell{fmt::format("{} smaller kernels aggregated", idx.size() - shown), ""}, Cell{}, Cell{},
                         num_cell(human_time(m), m), num_cell(human_time(p), p), num_cell(signed_pct(m > 0 ? (p - m) / m * 100 : 0), 0),
                         num_cell(human_time(lb), lb), Cell{}, Cell{}, Cell{}, Cell{}, Cell{}},
                        true});
    }
    return section(
        "kernels", "Kernels",
        note(fmt::format(
            "The {} longest-measured of {} kernels (click a header to sort). error = (predicted − measured) / measured; efficiency = "
            "roofline bound / measured.",
            shown, idx.size())) +
            table("kernels", cols, rows));
}

}  // namespace

std::string comparison_page(const ojson& doc, const HtmlLimits& limits) {
    const ojson& m = doc["measured"];
    const std::string title = fmt::format("{} ({}): predicted vs measured", str_at(doc["model"], "name"), str_at(doc["model"], "mode"));
    const std::string sub = fmt::format("predicted {} on {} · measured {} on {}, {}{}", str_at(doc["predicted"], "file"),
                                        str_at(doc["predicted"], "hardware"), str_at(m, "file"), str_at(m, "device"), str_at(m, "date_utc"),
                                        m.value("counters", false) ? " · hardware counters collected" : " · no hardware counters");
    const auto colours = family_colours_of(doc["kernels"]);  // op kind -> family
    std::string body =
        "<nav><a href=\"#summary\">summary</a><a href=\"#roofline\">roofline</a><a href=\"#errors\">errors</a><a "
        "href=\"#kernels\">kernels</a></nav>\n";
    body += section("summary", "Summary", summary(doc));
    body += roofline_section(doc, colours);
    body += error_section(doc, colours);
    body += kernels_section(doc, limits);
    return page(title, sub, body);
}

}  // namespace roofline::html
