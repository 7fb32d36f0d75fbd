// The plan page (roofline-plan/1): summary, the ranked options, the memory-vs-time Pareto chart,
// fusion groups and the batch sweep.
#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <tuple>

#include "reports/html_parts.hpp"
#include "reports/units.hpp"

namespace roofline::html {

namespace {

double budget_of(const ojson& doc) {
    const ojson& s = doc["settings"];
    return s.contains("memory_budget_bytes") && s["memory_budget_bytes"].is_number() ? s["memory_budget_bytes"].get<double>() : 0;
}

std::string summary(const ojson& doc) {
    const ojson& base = doc["baseline"];
    const ojson& opts = doc["options"];
    const double budget = budget_of(doc), cap = num_at(doc["settings"], "device_capacity_bytes");
    std::size_t fits = 0;
    for (const ojson& o : opts) fits += o.value("fits", false) ? 1 : 0;
    std::string o = "<div class=\"cards\">";
    o += card("baseline step", human_time(num_at(base, "step_time_s")),
              fmt::format("peak memory {}; {} kernels", human_bytes(num_at(base, "peak_bytes")),
                          static_cast<long long>(num_at(base, "kernels"))));
    if (!opts.empty()) {
        const ojson& best = opts[0];
        const double bt = num_at(base, "step_time_s");
        o += card("best option", str_at(best, "name"),
                  fmt::format("step {} ({:+.1f}%), peak {}", human_time(num_at(best, "step_time_s")),
                              bt > 0 ? 100 * (num_at(best, "step_time_s") - bt) / bt : 0.0, human_bytes(num_at(best, "peak_bytes"))));
    }
    o += card("memory budget", budget > 0 ? human_bytes(budget) : "none", fmt::format("device capacity {}", human_bytes(cap)));
    o += card("options", fmt::format("{}", opts.size()), fmt::format("{} fit the budget", fits));
    return o + "</div>\n";
}

std::string options_section(const ojson& doc) {
    const ojson& opts = doc["options"];
    const double bt = num_at(doc["baseline"], "step_time_s");
    const std::vector<Column> cols = {{"rank", true},        {"option", false},     {"fuse", false},       {"recompute", false},
                                      {"step time", true},   {"vs baseline", true}, {"peak memory", true}, {"memory saved", true},
                                      {"extra FLOPs", true}, {"kernels", true},     {"fits", false},       {"Pareto", false},
                                      {"changes", false}};
    std::vector<Row> rows;
    for (const ojson& o : opts) {
        const double t = num_at(o, "step_time_s");
        rows.push_back({{num_cell(fmt::format("{}", static_cast<long long>(num_at(o, "rank"))), num_at(o, "rank")),
                         Cell{str_at(o, "name"), ""}, Cell{o.value("fuse", false) ? "yes" : "no", ""}, Cell{str_at(o, "recompute"), ""},
                         num_cell(human_time(t), t), num_cell(fmt::format("{:+.1f}%", bt > 0 ? 100 * (t - bt) / bt : 0.0), t - bt),
                         num_cell(human_bytes(num_at(o, "peak_bytes")), num_at(o, "peak_bytes")),
                         num_cell(human_bytes(num_at(o, "memory_saved_bytes")), num_at(o, "memory_saved_bytes")),
                         num_cell(human_si(num_at(o, "extra_flops"), ""), num_at(o, "extra_flops")),
                         num_cell(fmt::format("{}", static_cast<long long>(num_at(o, "kernels"))), num_at(o, "kernels")),
                         Cell{o.value("fits", false) ? "yes" : "no", ""}, Cell{o.value("pareto", false) ? "yes" : "", ""},
                         Cell{str_at(o, "changes"), ""}},
                        false});
    }
    return section("options", "Options, best first", table("options", cols, rows));
}

std::string pareto_section(const ojson& doc) {
    const ojson& opts = doc["options"];
    const ojson& base = doc["baseline"];
    const double budget = budget_of(doc), cap = num_at(doc["settings"], "device_capacity_bytes");
    double mx = num_at(base, "peak_bytes"), tlo = num_at(base, "step_time_s"), thi = tlo;
    for (const ojson& o : opts) {
        mx = std::max(mx, num_at(o, "peak_bytes"));
        tlo = std::min(tlo, num_at(o, "step_time_s")), thi = std::max(thi, num_at(o, "step_time_s"));
    }
    // Lines beyond twice the largest point would squash the chart; they are named in the note.
    const bool show_budget = budget > 0 && budget <= 2 * mx, show_cap = cap > 0 && cap <= 2 * mx;
    const double xmax = nice_ceiling(std::max({mx, show_budget ? budget : 0.0, show_cap ? cap : 0.0}) * 1.05);
    const double pad = std::max((thi - tlo) * 0.08, thi * 0.01);
    const double W = 940, H = 420, x0 = 80, y0 = 14, x1 = 920, y1 = 370;
    const LinAxis xa{0, xmax, x0, x1}, ya{std::max(0.0, tlo - pad), thi + pad, y1, y0};
    std::string o = fmt::format(
        "<svg class=\"pareto\" viewBox=\"0 0 {0} {1}\" width=\"{0}\" height=\"{1}\" role=\"img\" aria-label=\"memory vs step time\" "
        "data-plot=\"{2} {3} {4} {5}\" "
        "data-x-lo=\"0\" data-x-hi=\"{6}\" data-y-lo=\"{7}\" data-y-hi=\"{8}\">\n",
        W, H, px(x0), px(y0), px(x1), px(y1), gnum(xa.hi), gnum(ya.lo), gnum(ya.hi));
    for (int k = 0; k <= 5; ++k) {
        const double v = xa.hi * k / 5, x = xa.map(v);
        o += fmt::format(
            "<line class=\"grid\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/><text x=\"{0}\" y=\"{3}\" "
            "text-anchor=\"middle\">{4}</text>\n",
            px(x), px(y0), px(y1), px(y1 + 15), esc(human_bytes(v)));
        const double t = ya.lo + (ya.hi - ya.lo) * k / 5, y = ya.map(t);
        o += fmt::format(
            "<line class=\"grid\" x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\"/><text x=\"{3}\" y=\"{4}\" text-anchor=\"end\">{5}</text>\n",
            px(x0), px(y), px(x1), px(x0 - 5), px(y + 4), esc(human_time(t)));
    }
    auto vline = [&](const char* cls, double v, const std::string& label) {
        o += fmt::format(
            "<line class=\"{0}\" x1=\"{1}\" y1=\"{2}\" x2=\"{1}\" y2=\"{3}\"/><text class=\"lbl\" x=\"{4}\" y=\"{5}\" "
            "text-anchor=\"end\">{6}</text>\n",
            cls, px(xa.map(v)), px(y0), px(y1), px(xa.map(v) - 4), px(y0 + 12), esc(label));
    };
    if (show_budget) vline("bud", budget, "memory budget " + human_bytes(budget));
    if (show_cap) vline("cap", cap, "device capacity " + human_bytes(cap));
    // A line far beyond the options is not drawn to scale: it is named at the right edge.
    double off_y = y0 + 12 + (show_budget || show_cap ? 14 : 0);
    for (const auto& [cls, v, what] : {std::tuple{"bud", budget, "memory budget"}, std::tuple{"cap", cap, "device capacity"}}) {
        if (v <= 0 || v <= 2 * mx) continue;
        o += fmt::format("<text class=\"lbl off-{}\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{} {} → (off scale)</text>\n", cls, px(x1 - 4),
                         px(off_y), what, esc(human_bytes(v)));
        off_y += 14;
    }
    if (doc.contains("frontier") && doc["frontier"].is_array() && !doc["frontier"].empty()) {
        std::string pts;
        for (const ojson& f : doc["frontier"])
            pts +=
                fmt::format("{}{},{}", pts.empty() ? "" : " ", px(xa.map(num_at(f, "peak_bytes"))), px(ya.map(num_at(f, "step_time_s"))));
        o += "<polyline class=\"fr\" points=\"" + pts +
             "\"><title>Pareto frontier: no option is both faster and smaller</title></polyline>\n";
    }
    std::vector<std::pair<double, double>> placed;  // label positions
    auto point = [&](const ojson& p, const std::string& name, const std::string& style, bool label) {
        const double m = num_at(p, "peak_bytes"), t = num_at(p, "step_time_s");
        o += fmt::format(
            "<circle class=\"opt\" style=\"{}\" cx=\"{}\" cy=\"{}\" r=\"5\" data-option=\"{}\" data-peak-bytes=\"{}\" "
            "data-step-s=\"{}\"><title>{}</title></circle>\n",
            style, px(xa.map(m)), px(ya.map(t)), esc(name), gnum(m), gnum(t),
            esc(fmt::format("{}\nstep {} · peak {}{}", name, human_time(t), human_bytes(m),
                            p.contains("fits") ? (p.value("fits", false) ? " · fits" : " · does not fit") : "")));
        // Names of frontier points, skipping one that would overprint a name already placed.
        const double lx = xa.map(m) + 7, ly = ya.map(t) - 6;
        const bool clear = std::none_of(placed.begin(), placed.end(), [&](const auto& q) {
            return std::fabs(q.second - ly) < 12 && lx < q.first + 6.5 * static_cast<double>(name.size()) + 10 &&
                   q.first < lx + 6.5 * static_cast<double>(name.size()) + 10;
        });
        if (label && clear) {
            o += fmt::format("<text class=\"lbl\" x=\"{}\" y=\"{}\">{}</text>\n", px(lx), px(ly), esc(name));
            placed.emplace_back(lx, ly);
        }
    };
    point(base, "baseline", "fill:#fff;stroke:#333;stroke-width:1.5", true);
    for (const ojson& op : opts) {
        const bool pareto = op.value("pareto", false), fits = op.value("fits", false);
        point(op, str_at(op, "name"),
              fmt::format("fill:{};stroke:#333;fill-opacity:{}", pareto ? "#4e79a7" : "#bab0ac", fits ? "0.9" : "0.35"), pareto);
    }
    o += fmt::format("<rect class=\"ax\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>\n", px(x0), px(y0), px(x1 - x0), px(y1 - y0));
    o += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">peak memory</text>\n", px((x0 + x1) / 2), px(H - 12));
    o += fmt::format("<text transform=\"translate(14 {}) rotate(-90)\" text-anchor=\"middle\">step time</text>\n</svg>\n",
                     px((y0 + y1) / 2));
    std::string n =
        "Every option at its peak memory (x) and step time (y); blue: on the Pareto frontier (joined), grey: dominated; faint: does not "
        "fit.";
    if (budget > 0 && !show_budget) n += " Memory budget " + human_bytes(budget) + " is off the scale.";
    if (cap > 0 && !show_cap) n += " Device capacity " + human_bytes(cap) + " is off the scale.";
    return section("pareto", "Memory vs time", o + note(n));
}

std::string fusion_section(const ojson& doc, const HtmlLimits& lim) {
    if (!doc.contains("fusion") || !doc["fusion"].is_object()) return "";
    const ojson& f = doc["fusion"];
    const ojson groups = f.value("groups", ojson::array());
    std::vector<std::size_t> idx(groups.size());
    for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = i;
    std::stable_sort(idx.begin(), idx.end(),
                     [&](std::size_t a, std::size_t b) { return num_at(groups[a], "time_saved_s") > num_at(groups[b], "time_saved_s"); });
    const std::vector<Column> cols = {{"group", false},
                                      {"kind", false},
                                      {"nodes", true},
                                      {"members", false},
                                      {"HBM bytes saved", true},
                                      {"launches saved", true},
                                      {"intermediates saved", true},
                                      {"time saved", true}};
    std::vector<Row> rows;
    const std::size_t shown = std::min(idx.size(), lim.table_rows);
    for (std::size_t r = 0; r < shown; ++r) {
        const ojson& g = groups[idx[r]];
        const ojson nodes = g.value("nodes", ojson::array());
        std::string members;
        for (std::size_t k = 0; k < nodes.size() && k < 4; ++k)
            members += (k ? ", " : "") + (nodes[k].is_string() ? nodes[k].get<std::string>() : nodes[k].dump());
        if (nodes.size() > 4) members += fmt::format(", … ({} more)", nodes.size() - 4);
        rows.push_back({{Cell{str_at(g, "name"), ""}, Cell{str_at(g, "kind"), ""},
                         num_cell(fmt::format("{}", nodes.size()), static_cast<double>(nodes.size())), Cell{members, ""},
                         num_cell(human_bytes(num_at(g, "hbm_bytes_saved")), num_at(g, "hbm_bytes_saved")),
                         num_cell(fmt::format("{}", static_cast<long long>(num_at(g, "launches_saved"))), num_at(g, "launches_saved")),
                         num_cell(human_bytes(num_at(g, "intermediate_bytes_saved")), num_at(g, "intermediate_bytes_saved")),
                         num_cell(human_time(num_at(g, "time_saved_s")), num_at(g, "time_saved_s"))},
                        false});
    }
    if (idx.size() > shown) {
        double b = 0, l = 0, m = 0, t = 0;
        for (std::size_t r = shown; r < idx.size(); ++r) {
            const ojson& g = groups[idx[r]];
            b += num_at(g, "hbm_bytes_saved"), l += num_at(g, "launches_saved"), m += num_at(g, "intermediate_bytes_saved"),
                t += num_at(g, "time_saved_s");
        }
        rows.push_back(
            {{Cell{fmt::format("{} smaller groups aggregated", idx.size() - shown), ""}, Cell{}, Cell{}, Cell{},
              num_cell(human_bytes(b), b), num_cell(fmt::format("{:.0f}", l), l), num_cell(human_bytes(m), m), num_cell(human_time(t), t)},
             true});
    }
    const std::string head =
        fmt::format("{} fusion groups{} save {} of HBM traffic, {} launches and {} in all.", groups.size(),
                    f.contains("graph") ? " of the first pipeline stage" : "", human_bytes(num_at(f, "hbm_bytes_saved")),
                    static_cast<long long>(num_at(f, "launches_saved")), human_time(num_at(f, "time_saved_s")));
    return section("fusion", "Fusion groups", note(head) + table("fusion", cols, rows));
}

std::string batch_section(const ojson& doc) {
    if (!doc.contains("batch_sweep") || !doc["batch_sweep"].is_array() || doc["batch_sweep"].empty()) return "";
    const ojson& sweep = doc["batch_sweep"];
    double bmax = 1, rmax = 0;
    for (const ojson& s : sweep)
        for (const ojson& r : s.value("rows", ojson::array()))
            bmax = std::max(bmax, num_at(r, "batch")), rmax = std::max(rmax, num_at(r, "samples_per_s"));
    const double W = 940, H = 360, x0 = 80, y0 = 14, x1 = 920, y1 = 310;
    const LogAxis xa{1, std::max(2.0, std::exp2(std::ceil(std::log2(bmax)))), x0, x1};  // powers of two
    const LinAxis ya{0, nice_ceiling(rmax * 1.05), y1, y0};
    std::string o = fmt::format(
        "<svg class=\"batch\" viewBox=\"0 0 {0} {1}\" width=\"{0}\" height=\"{1}\" role=\"img\" aria-label=\"batch sweep\">\n", W, H);
    for (double b = 1; b <= xa.hi * 1.0001; b *= 2) {
        o += fmt::format(
            "<line class=\"grid\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/><text x=\"{0}\" y=\"{3}\" "
            "text-anchor=\"middle\">{4}</text>\n",
            px(xa.map(b)), px(y0), px(y1), px(y1 + 15), fmt::format("{:g}", b));
    }
    for (int k = 0; k <= 5; ++k) {
        const double v = ya.hi * k / 5;
        o += fmt::format(
            "<line class=\"grid\" x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\"/><text x=\"{3}\" y=\"{4}\" text-anchor=\"end\">{5}</text>\n",
            px(x0), px(ya.map(v)), px(x1), px(x0 - 5), px(ya.map(v) + 4), esc(human_si(v, "")));
    }
    std::vector<std::pair<std::string, std::string>> items;
    std::string n;
    for (std::size_t s = 0; s < sweep.size(); ++s) {
        const ojson rows = sweep[s].value("rows", ojson::array());
        const std::string name = str_at(sweep[s], "strategy");
        std::string pts;
        for (const ojson& r : rows) {
            if (num_at(r, "batch") > 0)
                pts +=
                    fmt::format("{}{},{}", pts.empty() ? "" : " ", px(xa.map(num_at(r, "batch"))), px(ya.map(num_at(r, "samples_per_s"))));
        }
        o += fmt::format("<polyline points=\"{}\" style=\"fill:none;stroke:{};stroke-width:1.5\"/>\n", pts, palette(s));
        for (const ojson& r : rows) {
            if (num_at(r, "batch") <= 0) continue;
            const bool fits = r.value("fits", false);
            o += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"4\" style=\"fill:{};stroke:{}\"><title>{}</title></circle>\n",
                             px(xa.map(num_at(r, "batch"))), px(ya.map(num_at(r, "samples_per_s"))), fits ? palette(s) : "#fff", palette(s),
                             esc(fmt::format("{}: batch {:g}\nstep {} · peak {} · {:.4g} samples/s · {:.4g} tokens/s{}", name,
                                             num_at(r, "batch"), human_time(num_at(r, "step_time_s")), human_bytes(num_at(r, "peak_bytes")),
                                             num_at(r, "samples_per_s"), num_at(r, "tokens_per_s"), fits ? "" : " · does not fit")));
        }
        items.emplace_back(fmt::format("{} (largest batch that fits: {})", name, static_cast<long long>(num_at(sweep[s], "max_batch"))),
                           palette(s));
    }
    o += fmt::format("<rect class=\"ax\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>\n", px(x0), px(y0), px(x1 - x0), px(y1 - y0));
    o += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">batch</text>\n", px((x0 + x1) / 2), px(H - 12));
    o += fmt::format("<text transform=\"translate(14 {}) rotate(-90)\" text-anchor=\"middle\">samples/s</text>\n</svg>\n",
                     px((y0 + y1) / 2));
    return section("batch", "Batch sweep",
                   o + legend(items) + note("Throughput per batch size and strategy; hollow points do not fit in memory."));
}

}  // namespace

std::string plan_page(const ojson& doc, const HtmlLimits& limits) {
    const ojson& model = doc["model"];
    const ojson& hw = doc["hardware"];
    const ojson& s = doc["settings"];
    const std::string title =
        fmt::format("Plan: {} ({}) on {}", str_at(model, "name"), str_at(s, "mode"), str_at(hw, "display_name", str_at(hw, "name")));
    const std::string sub =
        fmt::format("roofline {} · {} · {}{}", str_at(doc["tool"], "version"), str_at(model, "origin"), str_at(model, "compute_dtype"),
                    str_at(s, "optimizer").empty() ? "" : " · " + str_at(s, "optimizer"));
    std::string body =
        "<nav><a href=\"#summary\">summary</a><a href=\"#options\">options</a><a href=\"#pareto\">memory vs time</a><a "
        "href=\"#fusion\">fusion</a>"
        "<a href=\"#batch\">batch</a></nav>\n";
    body += section("summary", "Summary", summary(doc));
    body += options_section(doc);
    body += pareto_section(doc);
    body += fusion_section(doc, limits);
    body += batch_section(doc);
    return page(title, sub, body);
}

}  // namespace roofline::html
