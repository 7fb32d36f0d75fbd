#include "reports/html_parts.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>

#include "reports/units.hpp"

namespace roofline::html {

std::string esc(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (char c : s) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            case '\'': out += "&#39;"; break;
            default: out += c;
        }
    }
    return out;
}

std::string px(double v) { return fmt::format("{:.2f}", v); }
std::string gnum(double v) { return fmt::format("{}", v); }  // shortest text that reads back exactly

double num_at(const ojson& j, std::string_view key, double fallback) {
    if (!j.is_object()) return fallback;
    const auto it = j.find(std::string(key));
    return it != j.end() && it->is_number() ? it->get<double>() : fallback;
}

std::string str_at(const ojson& j, std::string_view key, std::string fallback) {
    if (!j.is_object()) return fallback;
    const auto it = j.find(std::string(key));
    return it != j.end() && it->is_string() ? it->get<std::string>() : fallback;
}

double LogAxis::map(double v) const { return px0 + (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo)) * (px1 - px0); }

LogAxis decade_axis(double lo, double hi, double px0, double px1) {
    double l = std::pow(10.0, std::floor(std::log10(lo)));
    double h = std::pow(10.0, std::ceil(std::log10(hi)));
    if (h <= l) h = l * 10;
    return LogAxis{l, h, px0, px1};
}

double LinAxis::map(double v) const { return hi > lo ? px0 + (v - lo) / (hi - lo) * (px1 - px0) : px0; }

double nice_ceiling(double v) {
    if (v <= 0) return 1;
    const double p = std::pow(10.0, std::floor(std::log10(v)));
    for (double m : {1.0, 2.0, 5.0, 10.0})
        if (m * p >= v * (1 - 1e-12)) return m * p;
    return 10 * p;
}

std::string family_class(std::string_view family) {
    static const char* const known[] = {"matrix",   "elementwise", "normalization", "reduction",
                                        "movement", "attention",   "loss",          "optimizer"};
    for (const char* k : known)
        if (family == k) return std::string("f-") + k;
    return "f-other";
}

const char* palette(std::size_t i) {
    static const char* const colours[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1",
                                          "#76b7b2", "#edc948", "#9c755f", "#ff9da7", "#bab0ac"};
    return colours[i % 10];
}

namespace {

// The family colours, in the order of family_class (CSS and legends share them).
const std::map<std::string, std::string>& family_colours() {
    static const std::map<std::string, std::string> m = {{"matrix", "#4e79a7"},    {"elementwise", "#f28e2b"}, {"normalization", "#59a14f"},
                                                         {"reduction", "#b07aa1"}, {"movement", "#9c755f"},    {"attention", "#e15759"},
                                                         {"loss", "#edc948"},      {"optimizer", "#76b7b2"},   {"other", "#bab0ac"}};
    return m;
}

std::string family_css() {
    std::string css;
    for (const auto& [f, c] : family_colours()) css += fmt::format(".f-{0}{{fill:{1};stroke:{1};background:{1}}}", f, c);
    return css;
}

// Inline style: system fonts only, print rules, chart classes.
const char* const kStyle = R"CSS(
:root{--fg:#1d2330;--muted:#5b6473;--line:#d6dae1;--panel:#f5f6f8}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;color:var(--fg);margin:0 auto;max-width:1200px;padding:16px 24px}
h1{font-size:22px;margin:8px 0 2px}h2{font-size:17px;margin:0 0 8px;border-bottom:1px solid var(--line);padding-bottom:4px}
.sub{color:var(--muted);margin:0 0 12px}
nav{font-size:13px;margin:6px 0 14px}nav a{margin-right:12px;color:#2d5f9a;text-decoration:none}
section{margin:0 0 26px}
p.note{color:var(--muted);font-size:12.5px;margin:4px 0 8px;max-width:900px}
.cards{display:flex;flex-wrap:wrap;gap:10px}
.card{background:var(--panel);border:1px solid var(--line);border-radius:6px;padding:8px 12px;min-width:170px}
.card .l{font-size:12px;color:var(--muted)}.card .v{font-size:19px;font-weight:600}.card .d{font-size:12px;color:var(--muted)}
.bars{display:grid;grid-template-columns:minmax(120px,max-content) 1fr minmax(120px,max-content);gap:3px 10px;align-items:center;max-width:900px;font-size:13px}
.bars .t{height:14px;background:var(--panel);border-radius:2px}.bars .t span{display:block;height:100%;border-radius:2px}
.bars .x{color:var(--muted);white-space:nowrap}
.strip{display:flex;height:18px;max-width:900px;border-radius:3px;overflow:hidden;margin:6px 0}
.strip span{display:block;height:100%}
.legend{font-size:12px;color:var(--muted);margin:4px 0}.legend span{margin-right:12px;white-space:nowrap}
.legend i{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:4px;vertical-align:-1px}
.cap{font-size:12px;color:var(--muted);margin:2px 0 4px}
.wrap{overflow-x:auto}
table{border-collapse:collapse;font-size:12.5px;width:100%}
th,td{padding:3px 7px;border-bottom:1px solid #eceef2;text-align:left;white-space:nowrap}
th{background:var(--panel);position:sticky;top:0;user-select:none}
table.sort th{cursor:pointer}table.sort th[data-dir=asc]::after{content:" \25B4"}table.sort th[data-dir=desc]::after{content:" \25BE"}
td.n{text-align:right;font-variant-numeric:tabular-nums}
tr.agg td{font-style:italic;color:var(--muted)}
svg{max-width:100%;height:auto;display:block}
svg text{font:11px system-ui,sans-serif;fill:#333}
svg .ax{stroke:#888;stroke-width:1;fill:none}svg .grid{stroke:#eceef2;stroke-width:1}
svg .ceil{stroke:#333;stroke-width:1.3;fill:none}svg .slope{stroke:#777;stroke-width:1.3;fill:none;stroke-dasharray:5 3}
svg .ridge{fill:#fff;stroke:#333;stroke-width:1}
svg .pt,svg .tp{fill-opacity:.6;stroke-width:.6;stroke-opacity:.9}
svg .pred{fill-opacity:.08}svg .link{stroke:#999;stroke-width:.8}
svg .lbl{font-size:10.5px;fill:#444}svg .peak{stroke:#c0392b;stroke-width:1.2;stroke-dasharray:4 3}
svg .cap{stroke:#555;stroke-dasharray:6 3;stroke-width:1.2}svg .bud{stroke:#c0392b;stroke-dasharray:3 3;stroke-width:1.2}
svg .fr{stroke:#333;stroke-width:1.4;fill:none}
#tip{position:fixed;display:none;pointer-events:none;background:#1d2330;color:#fff;font-size:12px;padding:6px 8px;border-radius:4px;white-space:pre;z-index:9;max-width:520px}
@media print{nav,#tip{display:none}body{max-width:none;padding:0}section{break-inside:avoid}.wrap{overflow:visible}
 *{-webkit-print-color-adjust:exact;print-color-adjust:exact}th{position:static}}
)CSS";

// Interaction only: tooltips from the SVG <title>s, and sortable tables. The page reads without it.
const char* const kScript = R"JS(
(function(){
var tip=document.getElementById('tip');
document.addEventListener('mouseover',function(e){
  var t=e.target,el=t&&t.closest?t.closest('svg [data-tip],svg circle,svg rect,svg path,svg line'):null;
  if(!el){tip.style.display='none';return;}
  var ti=el.querySelector(':scope > title');
  if(ti){el.setAttribute('data-tip',ti.textContent);el.removeChild(ti);}
  var s=el.getAttribute('data-tip');
  if(!s){tip.style.display='none';return;}
  tip.textContent=s;tip.style.display='block';
});
document.addEventListener('mousemove',function(e){
  if(tip.style.display!=='block')return;
  var x=e.clientX+14,y=e.clientY+14;
  if(x+tip.offsetWidth>window.innerWidth)x=e.clientX-tip.offsetWidth-10;
  if(y+tip.offsetHeight>window.innerHeight)y=e.clientY-tip.offsetHeight-10;
  tip.style.left=x+'px';tip.style.top=y+'px';
});
function key(c){var k=c.getAttribute('data-k');return k===null?c.textContent:k;}
Array.prototype.forEach.call(document.querySelectorAll('table.sort'),function(tb){
  Array.prototype.forEach.call(tb.tHead.rows[0].cells,function(th,i){
    th.addEventListener('click',function(){
      var num=th.getAttribute('data-num')==='1';
      var dir=th.getAttribute('data-dir')===(num?'desc':'asc')?(num?1:-1):(num?-1:1);
      Array.prototype.forEach.call(tb.tHead.rows[0].cells,function(h){h.removeAttribute('data-dir');});
      th.setAttribute('data-dir',dir>0?'asc':'desc');
      var body=tb.tBodies[0],rows=Array.prototype.slice.call(body.rows);
      var agg=rows.filter(function(r){return r.classList.contains('agg');});
      rows=rows.filter(function(r){return !r.classList.contains('agg');});
      rows.sort(function(a,b){var x=key(a.cells[i]),y=key(b.cells[i]);
        if(num){x=parseFloat(x);y=parseFloat(y);}return (x<y?-1:x>y?1:0)*dir;});
      rows.concat(agg).forEach(function(r){body.appendChild(r);});
    });
  });
});
document.documentElement.setAttribute('data-ready','1');
})();
)JS";

}  // namespace

std::string legend(const std::vector<std::pair<std::string, std::string>>& items) {
    std::string out = "<div class=\"legend\">";
    for (const auto& [label, colour] : items) out += fmt::format("<span><i style=\"background:{}\"></i>{}</span>", colour, esc(label));
    return out + "</div>";
}

std::string family_legend(const std::vector<std::string>& families) {
    std::vector<std::pair<std::string, std::string>> items;
    for (const std::string& f : families) {
        const auto it = family_colours().find(f);
        items.emplace_back(f, it == family_colours().end() ? family_colours().at("other") : it->second);
    }
    return legend(items);
}

std::string page(const std::string& title, const std::string& subtitle, const std::string& body) {
    std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
    out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
    out += "<meta name=\"generator\" content=\"roofline " ROOFLINE_VERSION "\">\n";
    out += "<title>" + esc(title) + "</title>\n<style>" + std::string(kStyle) + family_css() + "\n</style>\n</head>\n<body>\n";
    out += "<h1>" + esc(title) + "</h1>\n<p class=\"sub\">" + esc(subtitle) + "</p>\n";
    out += body;
    out += "<div id=\"tip\"></div>\n<script>" + std::string(kScript) + "</script>\n</body>\n</html>\n";
    return out;
}

std::string section(const std::string& id, const std::string& title, const std::string& content) {
    return "<section id=\"" + esc(id) + "\">\n<h2>" + esc(title) + "</h2>\n" + content + "</section>\n";
}

std::string card(const std::string& label, const std::string& value, const std::string& detail) {
    return "<div class=\"card\"><div class=\"l\">" + esc(label) + "</div><div class=\"v\">" + esc(value) + "</div><div class=\"d\">" +
           esc(detail) + "</div></div>";
}

std::string note(const std::string& text) { return "<p class=\"note\">" + esc(text) + "</p>\n"; }

Cell num_cell(const std::string& text, double key) { return Cell{text, gnum(key)}; }

std::string table(const std::string& id, const std::vector<Column>& cols, const std::vector<Row>& rows) {
    std::string out = "<div class=\"wrap\"><table class=\"sort\" id=\"t-" + esc(id) + "\">\n<thead><tr>";  // t-: sections use the bare ids
    for (const Column& c : cols) out += c.numeric ? "<th data-num=\"1\">" + esc(c.label) + "</th>" : "<th>" + esc(c.label) + "</th>";
    out += "</tr></thead>\n<tbody>\n";
    for (const Row& r : rows) {
        out += r.agg ? "<tr class=\"agg\">" : "<tr>";
        for (std::size_t i = 0; i < r.cells.size(); ++i) {
            const Cell& c = r.cells[i];
            const bool numeric = i < cols.size() && cols[i].numeric;
            out += numeric ? "<td class=\"n\"" : "<td";
            if (!c.key.empty()) out += " data-k=\"" + esc(c.key) + "\"";
            out += ">" + esc(c.text) + "</td>";
        }
        out += "</tr>\n";
    }
    return out + "</tbody></table></div>\n";
}

std::string bar_chart(const std::vector<Bar>& bars, const std::string& caption) {
    double top = 0;
    for (const Bar& b : bars) top = std::max(top, b.value);
    std::string out = caption.empty() ? "" : "<div class=\"cap\">" + esc(caption) + "</div>";
    out += "<div class=\"bars\">";
    for (const Bar& b : bars) {
        const double w = top > 0 ? 100.0 * b.value / top : 0;
        out += fmt::format(
            "<span>{}</span><span class=\"t\"><span style=\"width:{:.2f}%;background:{}\"></span></span><span class=\"x\">{}</span>",
            esc(b.label), w, b.colour, esc(b.text));
    }
    return out + "</div>\n";
}

std::string share_strip(const std::vector<Bar>& parts) {
    double total = 0;
    for (const Bar& b : parts) total += b.value;
    std::string out = "<div class=\"strip\">";
    std::vector<std::pair<std::string, std::string>> items;
    for (const Bar& b : parts) {
        if (total <= 0 || b.value <= 0) continue;
        out += fmt::format("<span style=\"width:{:.3f}%;background:{}\" title=\"{}\"></span>", 100.0 * b.value / total, b.colour,
                           esc(b.label + ": " + b.text));
        items.emplace_back(b.label + " " + b.text, b.colour);
    }
    return out + "</div>" + legend(items) + "\n";
}

void add_hardware(RooflineChart& c, const ojson& hw) {
    if (!hw.is_object()) return;
    // Equal peaks share one line ("matrix f16/bf16"), so labels do not pile up.
    std::vector<std::pair<std::string, double>> peaks;
    auto add_unit = [&](const char* unit, const char* key) {
        if (!hw.contains(key) || !hw[key].is_object()) return;
        for (const auto& [dtype, s] : hw[key].items()) {
            const double v = num_at(s, "value");
            if (v > 0) peaks.emplace_back(std::string(unit) + " " + dtype, v);
        }
    };
    add_unit("matrix", "matrix_flop_per_s");
    add_unit("vector", "vector_flop_per_s");
    if (hw.contains("transcendental_per_s") && num_at(hw["transcendental_per_s"], "value") > 0) {
        peaks.emplace_back("transcendental (op/s)", num_at(hw["transcendental_per_s"], "value"));
    }
    for (const auto& [label, v] : peaks) {
        const double rate = v;  // a copy: clang before 16 cannot capture a structured binding
        auto same = std::find_if(c.compute.begin(), c.compute.end(), [rate](const auto& e) { return e.second == rate; });
        if (same == c.compute.end()) {
            c.compute.emplace_back(label, v);
        } else if (label.compare(0, same->first.find(' '), same->first.substr(0, same->first.find(' '))) == 0) {
            same->first += "/" + label.substr(label.find(' ') + 1);
        } else {
            same->first += ", " + label;
        }
    }
    if (hw.contains("memory") && hw["memory"].is_array()) {
        for (const auto& l : hw["memory"]) {
            const double bw = num_at(l.value("bytes_per_s", ojson::object()), "value");
            if (bw > 0) c.memory.emplace_back(str_at(l, "name"), bw);
        }
    }
    std::map<std::string, double> peak_of;
    for (const auto& [label, v] : peaks) peak_of[label] = v;
    if (hw.contains("ridge_points") && hw["ridge_points"].is_array()) {
        for (const auto& r : hw["ridge_points"]) {
            const std::string comp = str_at(r, "compute");
            const auto it = peak_of.find(comp);
            if (it == peak_of.end() || num_at(r, "flop_per_byte") <= 0) continue;
            c.ridges.push_back({comp, str_at(r, "level"), num_at(r, "flop_per_byte"), it->second});
        }
    }
}

namespace {

std::string decade_label(double v, const char* unit) {
    if (v < 1) return fmt::format("{:g}{}", v, unit);
    return human_si(v, unit);
}

}  // namespace

std::string roofline_svg(const RooflineChart& c) {
    const double W = 940, H = 540, x0 = 78, y0 = 16, x1 = 680, y1 = 488;  // ceiling labels right of x1
    double ilo = 1e300, ihi = 0, flo = 1e300, fhi = 0;
    for (const RoofPoint& p : c.points) {
        ilo = std::min(ilo, p.intensity), ihi = std::max(ihi, p.intensity);
        flo = std::min(flo, p.flop_per_s), fhi = std::max(fhi, p.flop_per_s);
    }
    for (const auto& r : c.ridges) ilo = std::min(ilo, r.flop_per_byte), ihi = std::max(ihi, r.flop_per_byte);
    double top = 0;
    for (const auto& [label, v] : c.compute) top = std::max(top, v), fhi = std::max(fhi, v);
    if (ihi <= 0) ilo = 0.01, ihi = 1e4;
    if (fhi <= 0) flo = 1e9, fhi = 1e15;
    if (flo > fhi) flo = fhi / 1e6;
    const LogAxis xa = decade_axis(ilo / 1.5, ihi * 1.5, x0, x1);
    const LogAxis ya = decade_axis(flo / 1.5, fhi * 1.5, y1, y0);
    std::string o = fmt::format(
        "<svg class=\"roofline\" viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" role=\"img\" aria-label=\"roofline chart\" "
        "data-plot=\"{} {} {} {}\" data-x-lo=\"{}\" data-x-hi=\"{}\" data-y-lo=\"{}\" data-y-hi=\"{}\">\n",
        W, H, W, H, px(x0), px(y0), px(x1), px(y1), gnum(xa.lo), gnum(xa.hi), gnum(ya.lo), gnum(ya.hi));
    o += fmt::format("<defs><clipPath id=\"rf-clip\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/></clipPath></defs>\n", px(x0),
                     px(y0), px(x1 - x0), px(y1 - y0));
    // Decade grid and labels.
    for (double v = xa.lo; v <= xa.hi * 1.0001; v *= 10) {
        const double x = xa.map(v);
        o += fmt::format(
            "<line class=\"grid\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/><text x=\"{0}\" y=\"{3}\" "
            "text-anchor=\"middle\">{4}</text>\n",
            px(x), px(y0), px(y1), px(y1 + 15), esc(decade_label(v, "")));
    }
    for (double v = ya.lo; v <= ya.hi * 1.0001; v *= 10) {
        const double y = ya.map(v);
        o += fmt::format(
            "<line class=\"grid\" x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\"/><text x=\"{3}\" y=\"{4}\" text-anchor=\"end\">{5}</text>\n",
            px(x0), px(y), px(x1), px(x0 - 5), px(y + 4), esc(decade_label(v, "FLOP/s")));
    }
    o += fmt::format("<rect class=\"ax\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>\n", px(x0), px(y0), px(x1 - x0), px(y1 - y0));
    o +=
        fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">arithmetic intensity (FLOP per byte of device-memory traffic)</text>\n",
                    px((x0 + x1) / 2), px(H - 14));
    o += fmt::format("<text transform=\"translate(14 {}) rotate(-90)\" text-anchor=\"middle\">FLOP/s</text>\n", px((y0 + y1) / 2));
    o += "<g clip-path=\"url(#rf-clip)\">\n";
    // Memory slopes: FLOP/s = intensity x bandwidth, up to the highest compute ceiling.
    for (const auto& [level, bw] : c.memory) {
        const double ia = std::max(xa.lo, ya.lo / bw), ib = std::min(xa.hi, (top > 0 ? top : ya.hi) / bw);
        if (ib <= ia) continue;
        o += fmt::format("<line class=\"slope\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"><title>{}</title></line>\n", px(xa.map(ia)),
                         px(ya.map(ia * bw)), px(xa.map(ib)), px(ya.map(ib * bw)),
                         esc(fmt::format("{} bandwidth {}", level, human_si(bw, "B/s"))));
    }
    for (const auto& [label, v] : c.compute) {
        const double y = ya.map(v);
        o += fmt::format("<line class=\"ceil\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"><title>{}</title></line>\n", px(x0), px(y), px(x1),
                         px(y), esc(fmt::format("{} peak {}", label, human_si(v, "FLOP/s"))));
    }
    for (const auto& [a, b] : c.links) {
        const RoofPoint& p = c.points[a];
        const RoofPoint& q = c.points[b];
        o += fmt::format("<line class=\"link\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>\n", px(xa.map(p.intensity)),
                         px(ya.map(p.flop_per_s)), px(xa.map(q.intensity)), px(ya.map(q.flop_per_s)));
    }
    // Points: area proportional to time; the largest drawn first so small ones stay visible.
    double tmax = 0;
    for (const RoofPoint& p : c.points) tmax = std::max(tmax, p.time_s);
    std::vector<std::size_t> order(c.points.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return c.points[a].time_s > c.points[b].time_s; });
    for (std::size_t i : order) {
        const RoofPoint& p = c.points[i];
        const double r = std::max(1.6, 15.0 * std::sqrt(tmax > 0 ? p.time_s / tmax : 0));
        o += fmt::format("<circle class=\"pt {}{}\"{} cx=\"{}\" cy=\"{}\" r=\"{}\" data-k=\"{}\"><title>{}</title></circle>\n",
                         family_class(p.family), p.kind.empty() ? "" : " " + p.kind,
                         p.colour.empty() ? "" : fmt::format(" style=\"fill:{0};stroke:{0}\"", p.colour), px(xa.map(p.intensity)),
                         px(ya.map(p.flop_per_s)), px(r), p.index, esc(p.title));
    }
    for (const auto& r : c.ridges) {
        const double x = xa.map(r.flop_per_byte), y = ya.map(r.flop_per_s);
        o += fmt::format("<path class=\"ridge\" d=\"M{} {}l4 4l-4 4l-4 -4z\"><title>{}</title></path>\n", px(x), px(y - 4),
                         esc(fmt::format("ridge point: {} meets {} at {} FLOP/B", r.compute, r.level, human_intensity(r.flop_per_byte))));
    }
    o += "</g>\n";
    // Labels outside the clip: ceilings on the right, slopes where they enter the plot.
    double last_y = -100;
    std::vector<std::pair<std::string, double>> ceil = c.compute;
    std::sort(ceil.begin(), ceil.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    for (const auto& [label, v] : ceil) {
        double y = ya.map(v) + 4;
        if (y < last_y + 12) y = last_y + 12;
        last_y = y;
        o += fmt::format("<text class=\"lbl\" x=\"{}\" y=\"{}\">{} {}</text>\n", px(x1 + 6), px(y), esc(label), esc(human_si(v, "FLOP/s")));
    }
    double slope_y = y1 - 6;
    for (const auto& [level, bw] : c.memory) {
        const double ia = std::max(xa.lo, ya.lo / bw);
        if (ia >= xa.hi) continue;
        const double x = xa.map(ia), y = std::min(ya.map(ia * bw), slope_y);
        o +=
            fmt::format("<text class=\"lbl\" x=\"{}\" y=\"{}\">{} {}</text>\n", px(x + 6), px(y - 4), esc(level), esc(human_si(bw, "B/s")));
        slope_y = y - 12;
    }
    return o + "</svg>\n";
}

}  // namespace roofline::html
