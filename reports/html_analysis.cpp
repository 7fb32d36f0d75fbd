// The analyze page (roofline-report/1): summary, roofline, time by kind and phase, the kernels,
// the memory timeline and the schedule.
#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>

#include "reports/html_parts.hpp"
#include "reports/units.hpp"
#include "sim/schedule.hpp"

namespace roofline::html {

namespace {

// The time a kernel takes on the step: the L1 model's where there is one, else the roofline bound
// (the schedule uses the same).
double kernel_time(const ojson& op) {
    if (op.contains("model")) return num_at(op["model"], "time_s", num_at(op, "time_s"));
    return num_at(op, "time_s");
}

// FLOP per byte of device-memory traffic: the outermost level's intensity.
double device_intensity(const ojson& op) {
    if (!op.contains("levels") || !op["levels"].is_array() || op["levels"].empty()) return 0;
    const ojson& l = op["levels"][0];
    return l.contains("intensity") && l["intensity"].is_number() ? l["intensity"].get<double>() : 0;
}

const ojson& work_of(const ojson& op) {
    static const ojson none = ojson::object();
    const auto it = op.find("work");
    return it == op.end() ? none : *it;
}
double op_flops(const ojson& op) { return num_at(work_of(op), "flops"); }
double op_bytes(const ojson& op) { return num_at(work_of(op), "bytes_read") + num_at(work_of(op), "bytes_written"); }

std::string pct(double share) { return fmt::format("{:.1f}%", 100.0 * share); }

// The peak of the compute dtype on the matrix unit (the headline peak), or the largest one.
std::pair<std::string, double> headline_peak(const ojson& doc) {
    const ojson& hw = doc["hardware"];
    const std::string dtype = str_at(doc["model"], "compute_dtype");
    const ojson m = hw.value("matrix_flop_per_s", ojson::object());
    if (m.contains(dtype)) return {"matrix " + dtype, num_at(m[dtype], "value")};
    std::pair<std::string, double> best{"", 0};
    for (const auto& [d, s] : m.items())
        if (num_at(s, "value") > best.second) best = {"matrix " + d, num_at(s, "value")};
    return best;
}

std::string summary(const ojson& doc) {
    const ojson& t = doc["totals"];
    const ojson& mem = doc["memory"];
    const ojson& hw = doc["hardware"];
    const double step = num_at(t, "step_time_s", num_at(t, "time_s"));
    const double flops = num_at(t, "flops"), bytes = num_at(t, "bytes_read") + num_at(t, "bytes_written");
    const auto [peak_label, peak] = headline_peak(doc);
    double bw = 0;
    std::string level = "memory";
    if (hw.contains("memory") && hw["memory"].is_array() && !hw["memory"].empty()) {
        bw = num_at(hw["memory"][0].value("bytes_per_s", ojson::object()), "value");
        level = str_at(hw["memory"][0], "name");
    }
    const int streams = static_cast<int>(num_at(t, "streams", 1));
    std::string o = "<div class=\"cards\">";
    o += card(str_at(doc["settings"], "mode") == "training" ? "step time" : "inference time", human_time(step),
              fmt::format("schedule on {} stream{}; critical path {}", streams, streams == 1 ? "" : "s",
                          human_time(num_at(t, "critical_path_s"))));
    std::string lb = "sum of per-op roofline bounds";
    if (t.contains("modelled_time_s"))
        lb += fmt::format("; modelled kernels {} ({:.0f}% efficiency)", human_time(num_at(t, "modelled_time_s")),
                          100 * num_at(t, "efficiency"));
    o += card("lower bound", human_time(num_at(t, "time_s")), lb);
    const double achieved = step > 0 ? flops / step : 0;
    o += card("achieved FLOP/s", human_si(achieved, "FLOP/s"),
              peak > 0 ? fmt::format("{:.1f}% of the {} peak {}", 100 * achieved / peak, peak_label, human_si(peak, "FLOP/s")) : "");
    const double achieved_bw = step > 0 ? bytes / step : 0;
    o += card("achieved bandwidth", human_si(achieved_bw, "B/s"),
              bw > 0 ? fmt::format("{:.1f}% of the {} peak {}", 100 * achieved_bw / bw, level, human_si(bw, "B/s")) : "");
    const double cap = num_at(mem, "device_capacity_bytes");
    o += card("peak memory", human_bytes(num_at(mem, "peak_bytes")),
              fmt::format("{} {} of {}; at '{}'", mem.value("fits", true) ? "fits in" : "DOES NOT FIT in", human_bytes(cap), level,
                          str_at(mem, "peak_node", "-")));
    o += card("work", human_si(flops, "FLOP"),
              fmt::format("{} moved; {} parameters", human_bytes(bytes), human_si(num_at(doc["model"], "parameters"), "")));
    o += "</div>\n";
    std::vector<Bar> parts;
    std::size_t i = 0;
    const ojson by_bound = t.value("by_bound", ojson::object());  // a named copy: items() must not outlive it
    for (const auto& [bound, v] : by_bound.items()) {
        parts.push_back({bound, num_at(v, "time_s"),
                         fmt::format("{} ({} ops)", pct(num_at(v, "share")), static_cast<long long>(num_at(v, "ops"))), palette(i++)});
    }
    o += "<div class=\"cap\">share of the lower-bound time per binding ceiling</div>" + share_strip(parts);
    return o;
}

std::string roofline_section(const ojson& doc) {
    RooflineChart c;
    add_hardware(c, doc["hardware"]);
    const ojson& ops = doc["ops"];
    const double step = num_at(doc["totals"], "step_time_s", num_at(doc["totals"], "time_s"));
    std::size_t kernels = 0, no_flops = 0;
    std::vector<std::string> families;
    for (std::size_t i = 0; i < ops.size(); ++i) {
        const ojson& op = ops[i];
        const double t = kernel_time(op);
        if (t <= 0) continue;
        ++kernels;
        const double intensity = device_intensity(op), flops = op_flops(op);
        if (flops <= 0 || intensity <= 0) {
            ++no_flops;
            continue;
        }
        RoofPoint p;
        p.index = i;
        p.family = str_at(op, "family");
        p.intensity = intensity;
        p.flop_per_s = flops / t;
        p.time_s = t;
        p.title = fmt::format("{} · {} ({}, {})\n{} FLOP/B · {} · {}\n{} ({:.2f}% of the step) · bound: {}", str_at(op, "name"),
                              str_at(op, "op"), p.family, str_at(op, "phase"), human_intensity(intensity), human_si(p.flop_per_s, "FLOP/s"),
                              human_si(flops, "FLOP"), human_time(t), step > 0 ? 100 * t / step : 0.0, str_at(op, "bound"));
        if (std::find(families.begin(), families.end(), p.family) == families.end()) families.push_back(p.family);
        c.points.push_back(std::move(p));
    }
    std::sort(families.begin(), families.end());
    std::string o = roofline_svg(c) + family_legend(families);
    o += note(fmt::format(
        "One point per kernel ({} of {} kernels; {} move data without FLOPs and have no place on log axes). x: FLOP per byte of "
        "device-memory traffic; y: FLOPs over the kernel's time (the L1 kernel model's where there is one, else the roofline "
        "bound); area proportional to time. Horizontal lines: every compute ceiling of the chip; dashed: every memory level's "
        "bandwidth; diamonds: ridge points. Hover a point for its details.",
        c.points.size(), kernels, no_flops));
    return section("roofline", "Roofline", o);
}

std::string time_section(const ojson& doc) {
    const ojson& ops = doc["ops"];
    std::map<std::string, std::pair<double, std::string>> by_kind;  // op -> time, family
    std::map<std::string, double> by_phase, by_family;
    double total = 0;
    for (const ojson& op : ops) {
        const double t = kernel_time(op);
        if (t <= 0) continue;
        auto& k = by_kind[str_at(op, "op")];
        k.first += t;
        k.second = str_at(op, "family");
        by_phase[str_at(op, "phase")] += t;
        by_family[str_at(op, "family")] += t;
        total += t;
    }
    auto text = [&](double t) { return fmt::format("{} ({:.1f}%)", human_time(t), total > 0 ? 100 * t / total : 0.0); };
    std::vector<std::pair<std::string, std::pair<double, std::string>>> kinds(by_kind.begin(), by_kind.end());
    std::stable_sort(kinds.begin(), kinds.end(), [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
    std::vector<Bar> bars;
    static const std::map<std::string, std::string> fam = {
        {"matrix", "#4e79a7"},   {"elementwise", "#f28e2b"}, {"normalization", "#59a14f"}, {"reduction", "#b07aa1"},
        {"movement", "#9c755f"}, {"attention", "#e15759"},   {"loss", "#edc948"},          {"optimizer", "#76b7b2"}};
    auto colour_of = [&](const std::string& f) { return fam.count(f) ? fam.at(f) : std::string("#bab0ac"); };
    for (const auto& [kind, v] : kinds) bars.push_back({kind, v.first, text(v.first), colour_of(v.second)});
    std::string o = bar_chart(bars, "kernel time by op kind (colour: family)");
    bars.clear();
    for (const char* p : {"forward", "backward", "optimizer"}) {
        if (by_phase.count(p)) bars.push_back({p, by_phase[p], text(by_phase[p]), palette(bars.size())});
    }
    o += bar_chart(bars, "kernel time by phase");
    bars.clear();
    for (const auto& [f, t] : by_family) bars.push_back({f, t, text(t), colour_of(f)});
    std::stable_sort(bars.begin(), bars.end(), [](const Bar& a, const Bar& b) { return a.value > b.value; });
    o += bar_chart(bars, "kernel time by op family");
    o += note("Kernel time: the L1 model's time per kernel where there is one, else the roofline bound; the sum over one stream.");
    return section("time", "Where the time goes", o);
}

std::string kernels_section(const ojson& doc, const HtmlLimits& lim) {
    const ojson& ops = doc["ops"];
    std::vector<std::size_t> idx;
    for (std::size_t i = 0; i < ops.size(); ++i)
        if (kernel_time(ops[i]) > 0) idx.push_back(i);
    std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return kernel_time(ops[a]) > kernel_time(ops[b]); });
    double total = 0;
    for (std::size_t i : idx) total += kernel_time(ops[i]);
    const std::vector<Column> cols = {{"#", true},          {"name", false},  {"op", false},         {"family", false},
                                      {"phase", false},     {"dtype", false}, {"FLOPs", true},       {"bytes", true},
                                      {"FLOP/B", true},     {"bound", false}, {"lower bound", true}, {"kernel time", true},
                                      {"efficiency", true}, {"share", true},  {"stream", true},      {"start", true}};
    std::vector<Row> rows;
    const std::size_t shown = std::min(idx.size(), lim.table_rows);
    for (std::size_t r = 0; r < shown; ++r) {
        const ojson& op = ops[idx[r]];
        const double t = kernel_time(op), lb = num_at(op, "time_s"), in = device_intensity(op);
        const ojson sched = op.value("schedule", ojson::object());
        rows.push_back(
            {{num_cell(std::to_string(idx[r] + 1), static_cast<double>(idx[r] + 1)), Cell{str_at(op, "name"), ""},
              Cell{str_at(op, "op"), ""}, Cell{str_at(op, "family"), ""}, Cell{str_at(op, "phase"), ""}, Cell{str_at(op, "dtype"), ""},
              num_cell(human_si(op_flops(op), ""), op_flops(op)), num_cell(human_bytes(op_bytes(op)), op_bytes(op)),
              num_cell(in > 0 ? human_intensity(in) : "-", in), Cell{str_at(op, "bound"), ""}, num_cell(human_time(lb), lb),
              num_cell(human_time(t), t), num_cell(t > 0 ? fmt::format("{:.0f}%", 100 * lb / t) : "-", t > 0 ? lb / t : 0),
              num_cell(fmt::format("{:.2f}%", total > 0 ? 100 * t / total : 0.0), t),
              num_cell(sched.contains("stream") ? std::to_string(sched["stream"].get<int>()) : "-", num_at(sched, "stream")),
              num_cell(sched.contains("start_s") ? human_time(num_at(sched, "start_s")) : "-", num_at(sched, "start_s"))},
             false});
    }
    if (idx.size() > shown) {
        double t = 0, lb = 0, fl = 0, by = 0;
        for (std::size_t r = shown; r < idx.size(); ++r) {
            t += kernel_time(ops[idx[r]]), lb += num_at(ops[idx[r]], "time_s"), fl += op_flops(ops[idx[r]]), by += op_bytes(ops[idx[r]]);
        }
        rows.push_back(
            {{Cell{"", "1e300"}, Cell{fmt::format("{} smaller kernels aggregated", idx.size() - shown), ""}, Cell{}, Cell{}, Cell{}, Cell{},
              num_cell(human_si(fl, ""), fl), num_cell(human_bytes(by), by), Cell{}, Cell{}, num_cell(human_time(lb), lb),
              num_cell(human_time(t), t), Cell{}, num_cell(fmt::format("{:.2f}%", total > 0 ? 100 * t / total : 0.0), t), Cell{}, Cell{}},
             true});
    }
    std::string o = note(
        fmt::format("The {} slowest of {} kernels, slowest first (click a header to sort); {} ops without a kernel (views) are left out.",
                    shown, idx.size(), ops.size() - idx.size()));
    o += table("kernels", cols, rows);
    // Every op kind, complete.
    struct Kind {
        std::size_t ops = 0;
        double t = 0, flops = 0, bytes = 0;
        std::string family;
    };
    std::map<std::string, Kind> kinds;
    for (std::size_t i : idx) {
        Kind& k = kinds[str_at(ops[i], "op")];
        ++k.ops, k.t += kernel_time(ops[i]), k.flops += op_flops(ops[i]), k.bytes += op_bytes(ops[i]);
        k.family = str_at(ops[i], "family");
    }
    std::vector<Row> krows;
    for (const auto& [name, k] : kinds) {
        krows.push_back({{Cell{name, ""}, Cell{k.family, ""}, num_cell(std::to_string(k.ops), static_cast<double>(k.ops)),
                          num_cell(human_time(k.t), k.t), num_cell(fmt::format("{:.1f}%", total > 0 ? 100 * k.t / total : 0.0), k.t),
                          num_cell(human_si(k.flops, ""), k.flops), num_cell(human_bytes(k.bytes), k.bytes),
                          num_cell(k.bytes > 0 ? human_intensity(k.flops / k.bytes) : "-", k.bytes > 0 ? k.flops / k.bytes : 0)},
                         false});
    }
    o += "<div class=\"cap\">every op kind</div>";
    o += table("kinds",
               {{"op", false},
                {"family", false},
                {"kernels", true},
                {"time", true},
                {"share", true},
                {"FLOPs", true},
                {"bytes", true},
                {"FLOP/B", true}},
               krows);
    return section("kernels", "Kernels", o);
}

std::string memory_section(const ojson& doc, const HtmlLimits& lim) {
    const ojson& mem = doc["memory"];
    if (!mem.contains("timeline") || !mem["timeline"].contains("bytes_after_node")) return "";
    const ojson& cats = mem["timeline"]["categories"];
    const ojson& steps = mem["timeline"]["bytes_after_node"];
    const std::size_t n = steps.size(), nc = cats.size();
    if (n == 0 || nc == 0) return "";
    // Columns: each shows the node of largest total in its range, so the peak is exact.
    const std::size_t cols = std::min(n, std::max<std::size_t>(lim.memory_columns, 1));
    std::vector<std::size_t> pick(cols);
    std::vector<double> totals(n, 0);
    for (std::size_t i = 0; i < n; ++i)
        for (const auto& b : steps[i]) totals[i] += b.get<double>();
    double col_max = 0;
    for (std::size_t c = 0; c < cols; ++c) {
        const std::size_t a = c * n / cols, b = std::max(a + 1, (c + 1) * n / cols);
        std::size_t best = a;
        for (std::size_t i = a; i < b; ++i)
            if (totals[i] > totals[best]) best = i;
        pick[c] = best;
        col_max = std::max(col_max, totals[best]);
    }
    const double peak = num_at(mem, "peak_bytes"), cap = num_at(mem, "device_capacity_bytes");
    const bool show_cap = cap > 0 && cap <= 1.25 * std::max(peak, col_max);
    const double W = 940, H = 320, x0 = 70, y0 = 14, x1 = 920, y1 = 280;
    const LinAxis ya{0, nice_ceiling(std::max({peak, col_max, show_cap ? cap : 0.0}) * 1.04), y1, y0};
    const double cw = (x1 - x0) / static_cast<double>(cols);
    auto xc = [&](std::size_t c) { return x0 + (static_cast<double>(c) + 0.5) * cw; };
    std::string o = fmt::format(
        "<svg class=\"memory\" viewBox=\"0 0 {0} {1}\" width=\"{0}\" height=\"{1}\" role=\"img\" aria-label=\"memory timeline\" "
        "data-peak-bytes=\"{2}\" "
        "data-columns=\"{3}\" data-columns-max=\"{4}\">\n",
        W, H, gnum(peak), cols, gnum(col_max));
    for (int k = 0; k <= 5; ++k) {
        const double v = ya.hi * k / 5, y = ya.map(v);
        o += fmt::format(
            "<line class=\"grid\" x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\"/><text x=\"{3}\" y=\"{4}\" text-anchor=\"end\">{5}</text>\n",
            px(x0), px(y), px(x1), px(x0 - 5), px(y + 4), esc(human_bytes(v)));
    }
    std::vector<double> below(cols, 0);
    std::vector<std::pair<std::string, std::string>> items;
    for (std::size_t k = 0; k < nc; ++k) {
        bool any = false;
        for (std::size_t c = 0; c < cols && !any; ++c) any = steps[pick[c]][k].get<double>() > 0;
        if (!any) continue;
        std::string top, bottom;
        std::vector<double> above(cols);
        for (std::size_t c = 0; c < cols; ++c) {
            above[c] = below[c] + steps[pick[c]][k].get<double>();
            top += fmt::format("{}{},{}", c ? " " : "", px(xc(c)), px(ya.map(above[c])));
        }
        for (std::size_t c = cols; c-- > 0;) bottom += fmt::format(" {},{}", px(xc(c)), px(ya.map(below[c])));
        o += fmt::format("<polygon points=\"{}{}\" style=\"fill:{};fill-opacity:.85\"><title>{}</title></polygon>\n", top, bottom,
                         palette(k), esc(cats[k].get<std::string>()));
        items.emplace_back(cats[k].get<std::string>(), palette(k));
        below = std::move(above);
    }
    // Hover columns: the node and its bytes per category.
    const ojson& ops = doc["ops"];
    for (std::size_t c = 0; c < cols; ++c) {
        const std::size_t i = pick[c];
        std::string t = fmt::format("#{} {}: {}", i + 1, i < ops.size() ? str_at(ops[i], "name") : "", human_bytes(totals[i]));
        for (std::size_t k = 0; k < nc; ++k)
            if (steps[i][k].get<double>() > 0)
                t += fmt::format("\n{} {}", cats[k].get<std::string>(), human_bytes(steps[i][k].get<double>()));
        o += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"transparent\"><title>{}</title></rect>\n",
                         px(x0 + static_cast<double>(c) * cw), px(y0), px(cw), px(y1 - y0), esc(t));
    }
    std::size_t peak_col = 0;
    for (std::size_t c = 0; c < cols; ++c)
        if (totals[pick[c]] > totals[pick[peak_col]]) peak_col = c;
    const double peak_x = xc(peak_col);
    o += fmt::format(
        "<line class=\"peak\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/><text x=\"{3}\" y=\"{4}\" text-anchor=\"{5}\" "
        "class=\"lbl\">peak {6} at '{7}'</text>\n",
        px(peak_x), px(y0), px(y1), px(peak_x + (peak_x > (x0 + x1) / 2 ? -6 : 6)),
        px(ya.map(peak) - 6 < y0 + 10 ? y0 + 10 : ya.map(peak) - 6), peak_x > (x0 + x1) / 2 ? "end" : "start", esc(human_bytes(peak)),
        esc(str_at(mem, "peak_node", "-")));
    if (show_cap) {
        o += fmt::format(
            "<line class=\"cap\" x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\"/><text x=\"{3}\" y=\"{4}\" text-anchor=\"end\" "
            "class=\"lbl\">device capacity {5}</text>\n",
            px(x0), px(ya.map(cap)), px(x1), px(x1 - 4), px(ya.map(cap) - 4), esc(human_bytes(cap)));
    }
    o += fmt::format("<rect class=\"ax\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>\n", px(x0), px(y0), px(x1 - x0), px(y1 - y0));
    o += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">execution order (node 1 … {})</text>\n</svg>\n", px((x0 + x1) / 2),
                     px(H - 12), n);
    o += legend(items);
    o += note(fmt::format(
        "Bytes resident while each node runs, stacked by category. {} nodes in {} columns; each column shows the node of largest total "
        "in its range, so the peak ({}) is exact.{}",
        n, cols, human_bytes(peak), show_cap ? "" : fmt::format(" Device capacity {} is off the scale.", human_bytes(cap))));
    return section("memory", "Memory timeline", o);
}

std::string gantt_section(const ojson& doc, const HtmlLimits& lim) {
    const ojson& ops = doc["ops"];
    struct Item {
        std::size_t i;
        double s, e;
    };
    std::map<int, std::vector<Item>> streams;
    double end = 0;
    for (std::size_t i = 0; i < ops.size(); ++i) {
        if (!ops[i].contains("schedule")) continue;
        const ojson& s = ops[i]["schedule"];
        const double a = num_at(s, "start_s"), b = num_at(s, "end_s");
        if (b <= a) continue;
        streams[static_cast<int>(num_at(s, "stream"))].push_back({i, a, b});
        end = std::max(end, b);
    }
    if (streams.empty() || end <= 0) return "";
    const double W = 940, x0 = 90, x1 = 920, row = 24, y0 = 28;
    const double H = y0 + row * static_cast<double>(streams.size() + 1) + 34;
    const LinAxis xa{0, end, x0, x1};
    std::string o = fmt::format(
        "<svg class=\"gantt\" viewBox=\"0 0 {0} {1}\" width=\"{0}\" height=\"{1}\" role=\"img\" aria-label=\"schedule\">\n", W, px(H));
    const double tick = nice_ceiling(end / 8);
    for (double t = 0; t <= end * 1.0001; t += tick) {
        o += fmt::format(
            "<line class=\"grid\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/><text x=\"{0}\" y=\"{3}\" "
            "text-anchor=\"middle\">{4}</text>\n",
            px(xa.map(t)), px(y0 - 6), px(H - 30), px(H - 16), esc(human_time(t)));
    }
    // Phase band: the span of each phase over all streams.
    std::map<std::string, std::pair<double, double>> phases;
    for (const auto& [st, items] : streams)
        for (const Item& it : items) {
            auto [p, fresh] = phases.try_emplace(str_at(ops[it.i], "phase"), it.s, it.e);
            if (!fresh) p->second = {std::min(p->second.first, it.s), std::max(p->second.second, it.e)};
        }
    o += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">phase</text>\n", px(x0 - 6), px(y0 + 11));
    std::size_t pi = 0;
    for (const char* p : {"forward", "backward", "optimizer"}) {
        if (!phases.count(p)) continue;
        const auto [a, b] = phases[p];
        o += fmt::format(
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" style=\"fill:{};fill-opacity:.5\"><title>{}</title></rect><text x=\"{}\" "
            "y=\"{}\">{}</text>\n",
            px(xa.map(a)), px(y0 + 2), px(std::max(0.5, xa.map(b) - xa.map(a))), px(row - 8), palette(pi++),
            esc(fmt::format("{}: {} – {}", p, human_time(a), human_time(b))), px(xa.map(a) + 3), px(y0 + 13), p);
    }
    double y = y0 + row;
    std::size_t bars = 0;
    for (auto& [st, items] : streams) {
        std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.s < b.s; });
        o += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">stream {}</text>\n", px(x0 - 6), px(y + 13), st);
        // Runs of ops narrower than gantt_min_px merge into one bar, coloured by the family that
        // has most of its time.
        for (std::size_t a = 0; a < items.size();) {
            std::size_t b = a + 1;
            double e = items[a].e;
            // (only across gaps narrower than that too: idle time stays visible).
            while (xa.map(e) - xa.map(items[a].s) < lim.gantt_min_px && b < items.size() &&
                   xa.map(items[b].e) - xa.map(items[b].s) < lim.gantt_min_px && xa.map(items[b].s) - xa.map(e) < lim.gantt_min_px) {
                e = std::max(e, items[b].e);
                ++b;
            }
            std::string title, family;
            if (b - a == 1) {
                const ojson& op = ops[items[a].i];
                family = str_at(op, "family");
                title = fmt::format("{} · {} ({})\n{} – {} ({})", str_at(op, "name"), str_at(op, "op"), family, human_time(items[a].s),
                                    human_time(items[a].e), human_time(items[a].e - items[a].s));
            } else {
                std::map<std::string, double> fam;
                double busy = 0;
                for (std::size_t k = a; k < b; ++k)
                    fam[str_at(ops[items[k].i], "family")] += items[k].e - items[k].s, busy += items[k].e - items[k].s;
                family = std::max_element(fam.begin(), fam.end(), [](const auto& p, const auto& q) { return p.second < q.second; })->first;
                title =
                    fmt::format("{} short ops merged: '{}' … '{}'\n{} – {} ({} busy; mostly {})", b - a, str_at(ops[items[a].i], "name"),
                                str_at(ops[items[b - 1].i], "name"), human_time(items[a].s), human_time(e), human_time(busy), family);
            }
            o += fmt::format("<rect class=\"{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"><title>{}</title></rect>\n",
                             family_class(family), px(xa.map(items[a].s)), px(y + 2), px(std::max(0.4, xa.map(e) - xa.map(items[a].s))),
                             px(row - 6), esc(title));
            ++bars;
            a = b;
        }
        y += row;
    }
    o += fmt::format("<rect class=\"ax\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>\n</svg>\n", px(x0), px(y0 - 4), px(x1 - x0),
                     px(y - y0 + 4));
    std::size_t n = 0;
    for (const auto& [st, items] : streams) n += items.size();
    o +=
        note(fmt::format("{} kernels on {} stream{} in {} bars (runs of kernels narrower than {:g} px merged; hover for details). Step {}.",
                         n, streams.size(), streams.size() == 1 ? "" : "s", bars, lim.gantt_min_px, human_time(end)));
    return section("schedule", "Schedule", o);
}

// Many devices (analyze --cluster): the configuration, the iteration's parts, the peak memory of
// each stage's ranks, and the pipeline's 1F1B timeline.
std::string parallel_section(const ojson& doc) {
    if (!doc.contains("parallel") || !doc["parallel"].is_object()) return "";
    const ojson& p = doc["parallel"];
    const int pp = static_cast<int>(num_at(p, "pp", 1)), m = static_cast<int>(num_at(p, "micro_batches", 1));
    const double capacity = num_at(doc["memory"], "device_capacity_bytes");
    std::string o = note(fmt::format(
        "{} GPUs of {} ({} node{}): tensor-parallel {}, pipeline {}{}, data-parallel {}, ZeRO {}; {} micro-batch{} a rank and iteration.",
        static_cast<long long>(num_at(p, "devices", 1)), str_at(p, "cluster"), static_cast<long long>(num_at(p, "nodes", 1)),
        num_at(p, "nodes", 1) == 1 ? "" : "s", static_cast<long long>(num_at(p, "tp", 1)), pp,
        num_at(p, "interleave", 1) > 1 ? fmt::format(" ({} virtual stages a device)", static_cast<long long>(num_at(p, "interleave", 1)))
                                       : "",
        static_cast<long long>(num_at(p, "dp", 1)), static_cast<long long>(num_at(p, "zero", 0)), m, m == 1 ? "" : "es"));
    o += "<div class=\"cards\">";
    o += card("iteration", human_time(num_at(p, "step_time_s")), "compute " + human_time(num_at(p, "compute_s")));
    o += card("exposed communication", human_time(num_at(p, "exposed_comm_s")), "of " + human_time(num_at(p, "comm_s")) + " in all");
    if (pp > 1) o += card("pipeline bubble", pct(num_at(p, "bubble_fraction")), "sends " + human_time(num_at(p, "p2p_s")));
    o += card("MFU", pct(num_at(p, "mfu")), fmt::format("{:.4g} tokens/s", num_at(p, "tokens_per_s")));
    const double peak = num_at(p, "peak_bytes_per_rank");
    o += card("peak memory per rank", human_bytes(peak),
              capacity > 0 ? "of " + human_bytes(capacity) + (peak <= capacity ? ": fits" : ": DOES NOT FIT") : "");
    o += "</div>\n";
    if (!p.contains("stages") || !p["stages"].is_array() || p["stages"].empty()) return section("parallel", "Many GPUs", o);

    const ojson& stages = p["stages"];
    std::vector<Bar> bars;
    std::vector<Row> rows;
    std::vector<double> fwd, bwd;
    for (const ojson& st : stages) {
        const double stage_peak = num_at(st, "peak_bytes");
        const std::string label = fmt::format("stage {}", static_cast<long long>(num_at(st, "stage")));
        bars.push_back({label, stage_peak, human_bytes(stage_peak), capacity > 0 && stage_peak > capacity ? "#c0392b" : palette(0)});
        rows.push_back({{{label, ""},
                         num_cell(fmt::format("{}", static_cast<long long>(num_at(st, "layers"))), num_at(st, "layers")),
                         num_cell(fmt::format("{}", static_cast<long long>(num_at(st, "in_flight"))), num_at(st, "in_flight")),
                         num_cell(human_time(num_at(st, "pass_s")), num_at(st, "pass_s")),
                         num_cell(human_time(num_at(st, "optimizer_s")), num_at(st, "optimizer_s")),
                         num_cell(human_time(num_at(st, "exposed_comm_s")), num_at(st, "exposed_comm_s")),
                         num_cell(human_bytes(stage_peak), stage_peak)}});
        fwd.push_back(num_at(st, "forward_s"));
        bwd.push_back(std::max(0.0, num_at(st, "pass_s") - num_at(st, "forward_s")));
    }
    o += bar_chart(bars,
                   "Peak memory of each stage's ranks (activations of the micro-batches in flight, weights, gradients and "
                   "optimizer state as sharded)" +
                       (capacity > 0 ? "; the device holds " + human_bytes(capacity) : std::string()));
    o += table(
        "stages",
        {{"stage"}, {"layers", true}, {"in flight", true}, {"pass", true}, {"update", true}, {"exposed comm", true}, {"peak memory", true}},
        rows);
    if (num_at(p, "interleave", 1) > 1) {
        o += note("The timeline below is drawn for plain 1F1B only; this configuration interleaves.");
        return section("parallel", "Many GPUs", o);
    }
    // The 1F1B timeline: every micro-batch when the blocks are few, else the first ones.
    const int shown = drawn_micro_batches(pp, m);
    const double hop = pp > 1 ? num_at(p, "p2p_s") / (2.0 * (pp - 1)) : 0;
    const std::vector<PipelineBlock> blocks = pipeline_timeline(fwd, bwd, shown, hop);
    double end = 0;
    for (const PipelineBlock& b : blocks) end = std::max(end, b.end_s);
    if (end <= 0) return section("parallel", "Many GPUs", o);
    const double W = 940, x0 = 90, x1 = 920, row = 18, y0 = 24;
    const double H = y0 + row * pp + 34;
    const LinAxis xa{0, end, x0, x1};
    o += fmt::format("<svg class=\"gantt\" viewBox=\"0 0 {0} {1}\" width=\"{0}\" height=\"{1}\" role=\"img\" aria-label=\"pipeline\">\n", W,
                     px(H));
    const double tick = nice_ceiling(end / 8);
    for (double t = 0; t <= end * 1.0001; t += tick)
        o += fmt::format(
            "<line class=\"grid\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/><text x=\"{0}\" y=\"{3}\" "
            "text-anchor=\"middle\">{4}</text>\n",
            px(xa.map(t)), px(y0 - 6), px(H - 30), px(H - 16), esc(human_time(t)));
    for (int st = 0; st < pp; ++st)
        o += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">stage {}</text>\n", px(x0 - 6), px(y0 + row * st + 12), st + 1);
    for (const PipelineBlock& b : blocks)
        o += fmt::format(
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>stage {} {} micro-batch {}: {} - {}</title></rect>\n",
            px(xa.map(b.start_s)), px(y0 + row * b.stage + 2), px(std::max(0.5, xa.map(b.end_s) - xa.map(b.start_s))), px(row - 4),
            b.backward ? palette(1) : palette(0), b.stage + 1, b.backward ? "backward" : "forward", b.micro_batch + 1,
            human_time(b.start_s), human_time(b.end_s));
    o += "</svg>\n" + legend({{"forward", palette(0)}, {"backward", palette(1)}});
    o += note(fmt::format(
        "1F1B on every stage, simulated from each stage's forward and backward times with one activation send ({}) between stages{}; "
        "it ends at {}, the pipeline's part of the iteration above (the same simulation; then each stage reduces its gradients and "
        "updates).",
        human_time(hop), shown < m ? fmt::format(", for the first {} of the {} micro-batches", shown, m) : "", human_time(end)));
    return section("parallel", "Many GPUs", o);
}

}  // namespace

std::string analysis_page(const ojson& doc, const HtmlLimits& limits) {
    const ojson& model = doc["model"];
    const ojson& hw = doc["hardware"];
    const std::string mode = str_at(doc["settings"], "mode");
    std::string dims;
    const ojson dim_values = model.value("dims", ojson::object());
    for (const auto& [k, v] : dim_values.items()) dims += (dims.empty() ? "" : ", ") + k + " " + v.dump();
    const std::string title = fmt::format("{} ({}) on {}", str_at(model, "name"), mode, str_at(hw, "display_name", str_at(hw, "name")));
    const std::string sub =
        fmt::format("roofline {} · {} · {}{} · cost model {}", str_at(doc["tool"], "version"), str_at(model, "origin"),
                    str_at(model, "compute_dtype"), dims.empty() ? "" : " · " + dims, str_at(doc["settings"], "cost_model"));
    std::string body =
        "<nav><a href=\"#summary\">summary</a><a href=\"#roofline\">roofline</a><a href=\"#time\">time</a><a href=\"#kernels\">kernels</a>"
        "<a href=\"#memory\">memory</a><a href=\"#schedule\">schedule</a>" +
        std::string(doc.contains("parallel") ? "<a href=\"#parallel\">many GPUs</a>" : "") + "</nav>\n";
    body += section("summary", "Summary", summary(doc));
    body += roofline_section(doc);
    body += time_section(doc);
    body += kernels_section(doc, limits);
    body += memory_section(doc, limits);
    body += gantt_section(doc, limits);
    body += parallel_section(doc);
    return page(title, sub, body);
}

}  // namespace roofline::html
