// The HTML reports in a real browser: headless Chromium (Debian's chromium package; `make test`
// installs it) loads each page with every host name unresolvable, and a probe script in the page
// records script errors, console.error, failed loads and the resources fetched. Tagged [chromium]:
// without Chromium these tests fail saying so. A screenshot of each page is left under the build
// directory (tests/tmp/*.png) for people to look at.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <set>

#include "html_support.hpp"
#include "reports/html.hpp"
#include "support.hpp"

using nlohmann::ordered_json;
using namespace htmltest;

namespace {

std::string browser() {
    const std::string exe = chromium();
    if (exe.empty()) FAIL("headless Chromium is not installed: install Debian's 'chromium' package (make test does)");
    return exe;
}

// Loads the page and checks what every page must satisfy: the page's script ran to its end, no
// error of any kind, nothing fetched, nothing in the markup that could reach the network.
Rendered load_cleanly(const std::string& page, const std::string& tag) {
    const std::string exe = browser();
    CHECK(network_references(slurp(page)).empty());
    const Rendered r = render(exe, page, tag);
    REQUIRE(r.code == 0);
    INFO("<html> after load: " << r.html);
    CHECK(attr(r.html, "data-probe-done") == "1");  // the load event fired
    CHECK(attr(r.html, "data-probe-error").empty());
    CHECK(attr(r.html, "data-probe-resources") == "0");
    CHECK(attr(r.html, "data-ready") == "1");  // the page's own script ran to its end
    CHECK(attr(r.html, "data-probe-tables") != "0");
    CHECK(attr(r.html, "data-probe-unsorted") == "0");  // every column of every table sorts both ways
    CHECK(attr(r.html, "data-probe-tip") == "1");       // hovering a point shows its details
    CHECK(duplicate_ids(r.dom) == std::vector<std::string>{});
    CHECK(screenshot(exe, page, test::tmp_path(tag + ".png"), tag));
    return r;
}

double kernel_time(const ordered_json& op) {
    return op.contains("model") ? op["model"]["time_s"].get<double>() : op["time_s"].get<double>();
}

// Every roofline point of the rendered DOM against the report: one per kernel with FLOPs, at the
// documented log10 mapping of its intensity and FLOP/s.
void check_points(const std::string& dom, const ordered_json& doc) {
    const auto svg = tags(dom, "<svg class=\"roofline\"");
    REQUIRE(svg.size() == 1);
    const Plot p = plot_of(svg[0]);
    std::set<std::size_t> expected, seen;
    const ordered_json& ops = doc["ops"];
    for (std::size_t i = 0; i < ops.size(); ++i) {
        const auto& in = ops[i]["levels"][0]["intensity"];
        if (kernel_time(ops[i]) > 0 && ops[i]["work"]["flops"].get<double>() > 0 && in.is_number() && in.get<double>() > 0)
            expected.insert(i);
    }
    for (const std::string& c : tags(dom, "<circle class=\"pt")) {
        const std::size_t k = std::stoul(attr(c, "data-k"));
        CHECK(seen.insert(k).second);
        const ordered_json& op = ops[k];
        // 2-decimal coordinates: within 0.006 px of the mapping.
        CHECK(num_attr(c, "cx") == Approx(p.log_x(op["levels"][0]["intensity"].get<double>())).margin(0.006));
        CHECK(num_attr(c, "cy") == Approx(p.log_y(op["work"]["flops"].get<double>() / kernel_time(op))).margin(0.006));
    }
    CHECK(seen == expected);
}

}  // namespace

TEST_CASE("the GPT-2 small training step's HTML report renders in Chromium with every kernel on the roofline", "[chromium][html]") {
    const std::string base = test::tmp_path("chromium-gpt2-train");
    REQUIRE(test::run_cli("analyze gpt2-small --mode training -q -o '" + base + ".json' --html '" + base + ".html'").code == 0);
    const ordered_json doc = ordered_json::parse(slurp(base + ".json"));
    const Rendered r = load_cleanly(base + ".html", "chromium-gpt2-train");
    check_points(r.dom, doc);
    CHECK(tags(r.dom, "<svg class=\"memory\"").size() == 1);
    CHECK(tags(r.dom, "<svg class=\"gantt\"").size() == 1);
    CHECK(tags(r.dom, "<table class=\"sort\" id=\"t-kernels\"").size() == 1);
}

TEST_CASE("the compare page renders in Chromium: predicted and measured points of each kernel joined", "[chromium][html][compare]") {
    const std::string pred = test::tmp_path("chromium-cmp-pred.json"), page = test::tmp_path("chromium-cmp.html");
    REQUIRE(test::run_cli("analyze gpt2-small --mode training -q -o '" + pred + "'").code == 0);
    const std::string meas = test::source_path("tests/data/measured/h100-sxm-2026-11-23/gpt2-small-train.json");
    const std::string json = test::tmp_path("chromium-cmp.json");
    REQUIRE(test::run_cli("compare -q '" + pred + "' '" + meas + "' -o '" + json + "' --html '" + page + "'").code == 0);
    const ordered_json cmp = ordered_json::parse(slurp(json));
    const Rendered r = load_cleanly(page, "chromium-cmp");
    const auto svg = tags(r.dom, "<svg class=\"roofline\"");
    REQUIRE(svg.size() == 1);
    const Plot p = plot_of(svg[0]);
    std::size_t pred_points = 0, meas_points = 0;
    for (const std::string& c : tags(r.dom, "<circle class=\"pt")) {
        const ordered_json& k = cmp["kernels"][std::stoul(attr(c, "data-k"))];
        const bool predicted = attr(c, "class").ends_with(" pred");
        // Measured points use the counters' FLOPs and intensity where they counted any, else the predicted counts.
        auto pick = [&](const char* m, const char* pr) {
            return !predicted && k.contains(m) && k[m].get<double>() > 0 ? k[m].get<double>() : k[pr].get<double>();
        };
        const double flops = pick("measured_flops", "predicted_flops"), in = pick("measured_intensity", "predicted_intensity");
        const double t = (predicted ? k["predicted_s"] : k["measured_s"]).get<double>();
        CHECK(num_attr(c, "cx") == Approx(p.log_x(in)).margin(0.006));
        CHECK(num_attr(c, "cy") == Approx(p.log_y(flops / t)).margin(0.006));
        ++(predicted ? pred_points : meas_points);
    }
    CHECK(pred_points > 100);  // the GPT-2 step has hundreds of kernels with FLOPs
    CHECK(meas_points == pred_points);
    CHECK(tags(r.dom, "<line class=\"link\"").size() == pred_points);
}

TEST_CASE("the plan page renders in Chromium with every option on the Pareto chart", "[chromium][html][plan]") {
    // The plan of a GPT-2 small step once `roofline plan` writes one; until then a hand-written
    // example in the same schema.
    const std::string real = test::source_path("tests/data/plan/gpt2-small-plan.json");
    const ordered_json plan =
        ordered_json::parse(slurp(std::ifstream(real).good() ? real : test::source_path("tests/data/plan/example-plan.json")));
    const std::string page = test::tmp_path("chromium-plan.html");
    spit(page, roofline::html_report(plan));
    const Rendered r = load_cleanly(page, "chromium-plan");
    const auto svg = tags(r.dom, "<svg class=\"pareto\"");
    REQUIRE(svg.size() == 1);
    const Plot p = plot_of(svg[0]);
    const auto points = tags(r.dom, "<circle class=\"opt\"");
    CHECK(points.size() == plan["options"].size() + 1);  // the options and the baseline
    std::set<std::string> names;
    for (const std::string& c : points) {
        names.insert(attr(c, "data-option"));
        CHECK(num_attr(c, "cx") == Approx(p.lin_x(num_attr(c, "data-peak-bytes"))).margin(0.006));
        CHECK(num_attr(c, "cy") == Approx(p.lin_y(num_attr(c, "data-step-s"))).margin(0.006));
    }
    for (const auto& o : plan["options"]) CHECK(names.count(o["name"].get<std::string>()) == 1);
}

TEST_CASE("the GPT-3 175B training step's page stays under 5 MB and renders without errors", "[chromium][html][large]") {
    // Thousands of kernels: the table, the memory timeline and the Gantt chart are aggregated
    // (HtmlLimits); the load time is measured by hand and recorded in docs/PERFORMANCE.md.
    const std::string base = test::tmp_path("chromium-gpt3-train");
    REQUIRE(test::run_cli("analyze gpt3-175b --mode training -q --html '" + base + ".html'").code == 0);
    const std::string html = slurp(base + ".html");
    CHECK(html.size() < 5'000'000);
    const Rendered r = load_cleanly(base + ".html", "chromium-gpt3-train");
    CHECK(tags(r.dom, "<circle class=\"pt").size() > 1000);
}
