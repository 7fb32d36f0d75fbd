#pragma once
// Helpers of the HTML report tests: reading files, finding tags and attributes (by hand: std::regex
// is slow on megabyte pages), the roofline chart's axis mapping, a static scan for anything that
// would reach the network, and headless Chromium.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "support.hpp"

namespace htmltest {

using test::slurp;

inline void spit(const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
}

// Every opening tag that starts with `start` (e.g. "<circle class=\"pt"), as its full text.
inline std::vector<std::string> tags(const std::string& html, const std::string& start) {
    std::vector<std::string> out;
    for (std::size_t p = html.find(start); p != std::string::npos; p = html.find(start, p + 1)) {
        const std::size_t e = html.find('>', p);
        if (e == std::string::npos) break;
        out.push_back(html.substr(p, e - p + 1));
    }
    return out;
}

// The value of attribute `name` in a tag ("" when absent); " name=" so data-x does not match x.
inline std::string attr(const std::string& tag, const std::string& name) {
    const std::string key = " " + name + "=\"";
    const std::size_t p = tag.find(key);
    if (p == std::string::npos) return "";
    const std::size_t b = p + key.size(), e = tag.find('"', b);
    return tag.substr(b, e - b);
}

inline double num_attr(const std::string& tag, const std::string& name) { return std::stod(attr(tag, name)); }

// A chart's plot box and axis ranges, from data-plot="x0 y0 x1 y1" and data-x-lo/-hi, data-y-lo/-hi.
struct Plot {
    double x0 = 0, y0 = 0, x1 = 0, y1 = 0, xlo = 0, xhi = 0, ylo = 0, yhi = 0;
    // The mapping docs/report-schema.md documents for the roofline (log10) and the Pareto chart (linear).
    double log_x(double v) const { return x0 + (std::log10(v) - std::log10(xlo)) / (std::log10(xhi) - std::log10(xlo)) * (x1 - x0); }
    double log_y(double v) const { return y1 - (std::log10(v) - std::log10(ylo)) / (std::log10(yhi) - std::log10(ylo)) * (y1 - y0); }
    double lin_x(double v) const { return x0 + (v - xlo) / (xhi - xlo) * (x1 - x0); }
    double lin_y(double v) const { return y1 - (v - ylo) / (yhi - ylo) * (y1 - y0); }
};

inline Plot plot_of(const std::string& svg_tag) {
    Plot p;
    std::istringstream box(attr(svg_tag, "data-plot"));
    box >> p.x0 >> p.y0 >> p.x1 >> p.y1;
    p.xlo = num_attr(svg_tag, "data-x-lo"), p.xhi = num_attr(svg_tag, "data-x-hi");
    p.ylo = num_attr(svg_tag, "data-y-lo"), p.yhi = num_attr(svg_tag, "data-y-hi");
    return p;
}

// id attributes that occur more than once (each must be unique in a page).
inline std::vector<std::string> duplicate_ids(const std::string& html) {
    std::vector<std::string> ids, dup;
    for (std::size_t p = html.find(" id=\""); p != std::string::npos; p = html.find(" id=\"", p + 1)) {
        const std::size_t b = p + 5, e = html.find('"', b);
        ids.push_back(html.substr(b, e - b));
    }
    std::sort(ids.begin(), ids.end());
    for (std::size_t i = 1; i < ids.size(); ++i)
        if (ids[i] == ids[i - 1] && (dup.empty() || dup.back() != ids[i])) dup.push_back(ids[i]);
    return dup;
}

// Everything in the page that would make a browser fetch from the network: src/href/url()/@import
// pointing at http(s):, ftp: or a protocol-relative //host, and any <link>, <iframe> or <img>.
inline std::vector<std::string> network_references(const std::string& html) {
    std::vector<std::string> found;
    std::string low = html;
    for (char& c : low) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (const char* key : {"src=", "href=", "url(", "@import", "srcset="}) {
        for (std::size_t p = low.find(key); p != std::string::npos; p = low.find(key, p + 1)) {
            std::size_t v = p + std::string(key).size();
            while (v < low.size() && (low[v] == '"' || low[v] == '\'' || low[v] == ' ' || low[v] == '(')) ++v;
            const std::string rest = low.substr(v, 8);
            if (rest.rfind("http:", 0) == 0 || rest.rfind("https:", 0) == 0 || rest.rfind("ftp:", 0) == 0 || rest.rfind("//", 0) == 0) {
                found.push_back(html.substr(p, 60));
            }
        }
    }
    for (const char* tag : {"<link", "<iframe", "<img", "<object", "<embed"}) {
        if (low.find(tag) != std::string::npos) found.push_back(tag);
    }
    return found;
}

// Headless Chromium (Debian's chromium package), or "" when none is installed.
inline std::string chromium() {
    for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
        const auto r = std::system((std::string("command -v ") + name + " >/dev/null 2>&1").c_str());
        if (r == 0) return name;
    }
    return "";
}

// Flags: headless, no sandbox (the test machine runs as root), every host name unresolvable so
// that nothing can be fetched, a profile of its own per call (ctest runs tests in parallel).
inline std::string chromium_command(const std::string& exe, const std::string& profile, const std::string& extra, const std::string& file) {
    return "timeout 120 " + exe +
           " --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run --no-default-browser-check"
           " --disable-extensions --disable-background-networking --disable-component-update --disable-sync --mute-audio"
           " --host-resolver-rules='MAP * ~NOTFOUND' --user-data-dir='" +
           profile + "' " + extra + " 'file://" + file + "'";
}

// A probe put first into <head>: records script errors, failed loads, console.error and unhandled
// rejections on <html data-probe-error>, and at the load event the number of resources the page
// fetched (data-probe-resources) and the load time (data-probe-load-ms); then it exercises the
// page's script: clicks every header of every sortable table twice (both directions) and counts rows out of order
// (data-probe-unsorted), hovers the first chart point (data-probe-tip="1" when the tooltip shows),
// and sets data-probe-done="1".
inline const char* probe_script() {
    return R"(<script>(function(){var d=document.documentElement;
function mark(m){d.setAttribute('data-probe-error',(d.getAttribute('data-probe-error')||'')+m+' | ');}
window.addEventListener('error',function(e){mark('error: '+(e.message||(e.target&&(e.target.src||e.target.href))||'load failed'));},true);
window.addEventListener('unhandledrejection',function(e){mark('rejection: '+e.reason);});
var ce=console.error;console.error=function(){mark('console.error: '+Array.prototype.join.call(arguments,' '));return ce.apply(console,arguments);};
window.addEventListener('load',function(){
d.setAttribute('data-probe-resources',String(performance.getEntriesByType('resource').length));
var n=performance.getEntriesByType('navigation')[0];d.setAttribute('data-probe-load-ms',String(n?Math.round(n.loadEventStart):-1));
try{var unsorted=0,tables=document.querySelectorAll('table.sort');
function key(c){var k=c.getAttribute('data-k');return k===null?c.textContent:k;}
for(var t=0;t<tables.length;t++){var hs=tables[t].tHead.rows[0].cells;
 for(var i=0;i<2*hs.length;i++){hs[i>>1].click();var h=hs[i>>1],num=h.getAttribute('data-num')==='1',asc=h.getAttribute('data-dir')==='asc';
  var rows=[].filter.call(tables[t].tBodies[0].rows,function(r){return !r.classList.contains('agg');});
  for(var j=1;j<rows.length;j++){var a=key(rows[j-1].cells[i>>1]),b=key(rows[j].cells[i>>1]);if(num){a=parseFloat(a);b=parseFloat(b);}if(asc?a>b:a<b)unsorted++;}}}
d.setAttribute('data-probe-tables',String(tables.length));d.setAttribute('data-probe-unsorted',String(unsorted));
var pt=document.querySelector('svg circle'),tip=document.getElementById('tip');
if(pt){pt.dispatchEvent(new MouseEvent('mouseover',{bubbles:true}));d.setAttribute('data-probe-tip',tip&&tip.style.display==='block'&&tip.textContent.length>0?'1':'0');}
}catch(e){mark('probe: '+e.message);}
d.setAttribute('data-probe-done','1');});})();</script>)";
}

struct Rendered {
    int code = -1;
    std::string dom;   // the DOM after load, as Chromium serialises it
    std::string html;  // the <html ...> tag of the DOM, with the probe's attributes
};

// Loads the page (with the probe) in headless Chromium and returns the DOM after load.
inline Rendered render(const std::string& exe, const std::string& page, const std::string& tag) {
    std::string html = slurp(page);
    const std::size_t head = html.find("<head>");
    html.insert(head == std::string::npos ? 0 : head + 6, probe_script());
    const std::string probe = test::tmp_path(tag + "-probe.html");
    spit(probe, html);
    const std::string profile = test::tmp_path(tag + "-profile");
    std::system(("rm -rf '" + profile + "'").c_str());
    Rendered r;
    const std::string cmd = chromium_command(exe, profile, "--virtual-time-budget=5000 --dump-dom", probe) + " 2>/dev/null";
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return r;
    char buf[65536];
    std::size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.dom.append(buf, n);
    r.code = pclose(p);
    const std::size_t h = r.dom.find("<html");
    if (h != std::string::npos) r.html = r.dom.substr(h, r.dom.find('>', h) - h + 1);
    std::system(("rm -rf '" + profile + "'").c_str());
    return r;
}

// A PNG of the page, for people to look at (1280 px wide).
inline bool screenshot(const std::string& exe, const std::string& page, const std::string& png, const std::string& tag) {
    const std::string profile = test::tmp_path(tag + "-shot-profile");
    std::system(("rm -rf '" + profile + "'").c_str());
    std::remove(png.c_str());
    const int rc = std::system(
        (chromium_command(exe, profile, "--hide-scrollbars --window-size=1280,2400 --screenshot='" + png + "'", page) + " >/dev/null 2>&1")
            .c_str());
    std::system(("rm -rf '" + profile + "'").c_str());
    std::ifstream f(png, std::ios::binary);
    char sig[8] = {};
    f.read(sig, 8);
    return rc == 0 && f.good() && std::string(sig + 1, 3) == "PNG";
}

}  // namespace htmltest
