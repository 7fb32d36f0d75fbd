// reports/html, reports/csv, reports/trace and the --html / --csv / --trace options: rendered from
// the JSON documents (docs/report-schema.md), checked here without a browser; the pages in
// headless Chromium are checked in html_chromium_test.cpp.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "html_support.hpp"
#include "model/model_json.hpp"
#include "ops/error.hpp"
#include "reports/csv.hpp"
#include "reports/html.hpp"
#include "reports/report.hpp"
#include "reports/trace.hpp"
#include "model/autodiff.hpp"
#include "sim/analysis.hpp"
#include "sim/eager_host.hpp"
#include "support.hpp"

using nlohmann::ordered_json;
using namespace roofline;
using htmltest::attr;
using htmltest::num_attr;
using htmltest::slurp;
using htmltest::tags;

namespace {

const std::string kMeasured = "tests/data/measured/h100-sxm-2026-11-23/";

// The analyze report of a small training step (the gpt template), written by the CLI.
const ordered_json& mlp_training_report() {
    static const ordered_json doc = [] {
        const std::string path = test::tmp_path("html-gpt-train.json");
        const auto r = test::run_cli("analyze gpt --mode training -q -o '" + path + "'");
        REQUIRE(r.code == 0);
        return ordered_json::parse(slurp(path));
    }();
    return doc;
}

// The rate the roofline chart plots for an op: FLOPs over the modelled time (else the bound).
double plotted_rate(const ordered_json& op) {
    const double t = op.contains("model") ? op["model"]["time_s"].get<double>() : op["time_s"].get<double>();
    return op["work"]["flops"].get<double>() / t;
}

bool on_chart(const ordered_json& op) {
    const double t = op.contains("model") ? op["model"]["time_s"].get<double>() : op["time_s"].get<double>();
    return t > 0 && op["work"]["flops"].get<double>() > 0 && op["levels"][0]["intensity"].is_number() &&
           op["levels"][0]["intensity"].get<double>() > 0;
}

// The names documented in the schema document: every part of every `backticked` token, split at
// '.', '[', ']', ',' and spaces (`ops[].schedule.start_s` documents ops, schedule and start_s).
std::set<std::string> documented_names(const std::string& md) {
    std::set<std::string> names;
    for (std::size_t a = md.find('`'); a != std::string::npos; a = md.find('`', a + 1)) {
        const std::size_t b = md.find('`', a + 1);
        if (b == std::string::npos) break;
        std::string word;
        for (char c : md.substr(a + 1, b - a - 1) + " ") {
            if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
                word += c;
            } else {
                if (!word.empty()) names.insert(word);
                word.clear();
            }
        }
        a = b;
    }
    return names;
}

}  // namespace

TEST_CASE("the analyze page has one roofline point per kernel at the documented log-scale coordinates", "[html]") {
    const ordered_json& doc = mlp_training_report();
    const std::string html = html_report(doc);
    const auto svg = tags(html, "<svg class=\"roofline\"");
    REQUIRE(svg.size() == 1);
    const htmltest::Plot plot = htmltest::plot_of(svg[0]);
    std::set<std::size_t> expected;
    for (std::size_t i = 0; i < doc["ops"].size(); ++i)
        if (on_chart(doc["ops"][i])) expected.insert(i);
    REQUIRE(expected.size() > 20);  // the gpt template's training step has dozens of FLOP-doing kernels
    std::set<std::size_t> seen;
    for (const std::string& c : tags(html, "<circle class=\"pt")) {
        const std::size_t k = std::stoul(attr(c, "data-k"));
        CHECK(seen.insert(k).second);  // one point per kernel
        const ordered_json& op = doc["ops"][k];
        // Coordinates are written with 2 decimals: within 0.006 px of the exact mapping.
        CHECK(num_attr(c, "cx") == Approx(plot.log_x(op["levels"][0]["intensity"].get<double>())).margin(0.006));
        CHECK(num_attr(c, "cy") == Approx(plot.log_y(plotted_rate(op))).margin(0.006));
        CHECK(attr(c, "class") == "pt f-" + op["family"].get<std::string>());
    }
    CHECK(seen == expected);
    // Every ceiling of the spec is drawn: one line per distinct compute peak, one slope per memory level.
    std::set<double> peaks;
    for (const auto& [d, s] : doc["hardware"]["matrix_flop_per_s"].items()) peaks.insert(s["value"].get<double>());
    for (const auto& [d, s] : doc["hardware"]["vector_flop_per_s"].items()) peaks.insert(s["value"].get<double>());
    peaks.insert(doc["hardware"]["transcendental_per_s"]["value"].get<double>());
    CHECK(tags(html, "<line class=\"ceil\"").size() == peaks.size());
    CHECK(tags(html, "<line class=\"slope\"").size() == doc["hardware"]["memory"].size());
    CHECK(tags(html, "<path class=\"ridge\"").size() == doc["hardware"]["ridge_points"].size());
    CHECK(htmltest::network_references(html).empty());
    // Same document, same bytes.
    CHECK(html_report(doc) == html);
}

TEST_CASE("the memory timeline keeps the peak exact however few columns it has", "[html]") {
    const ordered_json& doc = mlp_training_report();
    const std::size_t nodes = doc["memory"]["timeline"]["bytes_after_node"].size();
    for (std::size_t columns : {std::size_t{7}, std::size_t{50}, nodes}) {
        HtmlLimits lim;
        lim.memory_columns = columns;
        const auto svg = tags(html_report(doc, lim), "<svg class=\"memory\"");
        REQUIRE(svg.size() == 1);
        CHECK(std::stoul(attr(svg[0], "data-columns")) == std::min(columns, nodes));
        // The tallest column is the peak node itself, not an average: exactly memory.peak_bytes.
        CHECK(num_attr(svg[0], "data-columns-max") == doc["memory"]["peak_bytes"].get<double>());
    }
}

TEST_CASE("the kernel table shows the slowest kernels and aggregates the rest in one row", "[html]") {
    const ordered_json& doc = mlp_training_report();
    HtmlLimits lim;
    lim.table_rows = 10;
    const std::string html = html_report(doc, lim);
    const std::size_t begin = html.find("<table class=\"sort\" id=\"t-kernels\""), end = html.find("</table>", begin);
    REQUIRE(begin != std::string::npos);
    const std::string table = html.substr(begin, end - begin);
    std::size_t kernels = 0;
    for (const auto& op : doc["ops"])
        kernels += (op.contains("model") ? op["model"]["time_s"].get<double>() : op["time_s"].get<double>()) > 0;
    CHECK(tags(table, "<tr>").size() == 1 + 10);  // header + 10 kernels
    CHECK(tags(table, "<tr class=\"agg\">").size() == 1);
    CHECK(table.find(std::to_string(kernels - 10) + " smaller kernels aggregated") != std::string::npos);
}

TEST_CASE("the report JSON places every op on the schedule, and trace_report rebuilds analyze --trace", "[html][trace]") {
    const Graph g = load_model_arg("gpt", {});
    const Hardware h = resolve_hardware("h100-sxm");
    AnalysisOptions opt;
    opt.schedule.streams = 2;
    const Analysis a = analyze(g, h, opt);
    const ordered_json doc = report_json(ReportContext{g, h, a, "inference", nullptr});
    for (std::size_t i = 0; i < doc["ops"].size(); ++i) {
        const auto& s = doc["ops"][i]["schedule"];
        const auto& op = a.schedule.ops[static_cast<std::size_t>(a.ops[i].node)];
        CHECK(s["stream"] == op.stream);
        CHECK(s["start_s"].get<double>() == op.start_s);
        CHECK(s["end_s"].get<double>() == op.end_s);
    }
    // Byte for byte the trace analyze --trace writes from the schedule itself.
    CHECK(trace_report(doc) == chrome_trace_json(g, a.schedule));
    ordered_json old = doc;
    old["ops"][0].erase("schedule");
    CHECK_THROWS_WITH(trace_report(old), Catch::Contains("no ops[].schedule"));
}

TEST_CASE("csv_report writes one row per op with the documented columns, quoted where needed", "[html][csv]") {
    const ordered_json& doc = mlp_training_report();
    const std::string csv = csv_report(doc);
    std::size_t lines = std::count(csv.begin(), csv.end(), '\n');
    CHECK(lines == 1 + doc["ops"].size());
    CHECK(csv.rfind("index,name,op,family,phase,dtype,flops,", 0) == 0);
    // A name with a comma and a quote is quoted per RFC 4180.
    ordered_json odd = doc;
    odd["ops"][0]["name"] = "a,\"b\"";
    CHECK(csv_report(odd).find("\n1,\"a,\"\"b\"\"\",") != std::string::npos);
    // Plans: one row per option.
    const ordered_json plan = ordered_json::parse(slurp(test::source_path("tests/data/plan/example-plan.json")));
    const std::string pcsv = csv_report(plan);
    CHECK(static_cast<std::size_t>(std::count(pcsv.begin(), pcsv.end(), '\n')) == 1 + plan["options"].size());
    CHECK_THROWS_AS(csv_report(ordered_json{{"schema", "roofline-model/1"}}), InputError);
}

TEST_CASE("html_report refuses documents it has no view of, naming the schema", "[html][errors]") {
    CHECK_THROWS_WITH(html_report(ordered_json{{"schema", "roofline-measurement/1"}}), Catch::Contains("roofline-measurement/1"));
    CHECK_THROWS_WITH(html_report(ordered_json::array()), Catch::Contains("schema"));
    CHECK_THROWS_WITH(html_report(ordered_json{{"schema", "roofline-report/1"}, {"tool", {}}}), Catch::Contains("no \"model\""));
}

TEST_CASE("the plan page: ranked options, every option on the Pareto chart, frontier, budget and capacity", "[html][plan]") {
    const ordered_json plan = ordered_json::parse(slurp(test::source_path("tests/data/plan/example-plan.json")));
    const std::string html = html_report(plan);
    const auto svg = tags(html, "<svg class=\"pareto\"");
    REQUIRE(svg.size() == 1);
    const htmltest::Plot p = htmltest::plot_of(svg[0]);
    const auto points = tags(html, "<circle class=\"opt\"");
    CHECK(points.size() == plan["options"].size() + 1);  // every option and the baseline
    for (const std::string& c : points) {
        CHECK(num_attr(c, "cx") == Approx(p.lin_x(num_attr(c, "data-peak-bytes"))).margin(0.006));
        CHECK(num_attr(c, "cy") == Approx(p.lin_y(num_attr(c, "data-step-s"))).margin(0.006));
    }
    CHECK(tags(html, "<polyline class=\"fr\"").size() == 1);
    CHECK(tags(html, "<line class=\"bud\"").size() == 1);  // 10 GB budget, inside the chart
    CHECK(html.find("<table class=\"sort\" id=\"t-options\"") != std::string::npos);
    CHECK(html.find("<table class=\"sort\" id=\"t-fusion\"") != std::string::npos);
    CHECK(tags(html, "<svg class=\"batch\"").size() == 1);
    CHECK(htmltest::network_references(html).empty());
}

TEST_CASE("roofline compare --html --csv --trace on the H100 GPT-2 measurement", "[html][compare][cli]") {
    const std::string pred = test::tmp_path("html-cmp-pred.json"), meas = test::source_path(kMeasured + "gpt2-small-train.json");
    REQUIRE(test::run_cli("analyze gpt2-small --mode training -q -o '" + pred + "'").code == 0);
    const std::string out = test::tmp_path("html-cmp"), html = out + ".html", csv = out + ".csv", trace = out + ".trace.json";
    for (const std::string& f : {html, csv, trace}) std::remove(f.c_str());
    const auto r = test::run_cli("compare '" + pred + "' '" + meas + "' -o '" + out + ".json' --html '" + html + "' --csv '" + csv +
                                 "' --trace '" + trace + "'");
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Catch::Contains("HTML report written to"));
    const ordered_json cmp = ordered_json::parse(slurp(out + ".json"));
    CHECK(cmp["hardware"]["name"] == "h100-sxm");
    const std::string page = slurp(html);
    // Each kernel with FLOPs twice (predicted, measured) joined by one line.
    std::size_t with_flops = 0;
    for (const auto& k : cmp["kernels"]) with_flops += k["predicted_flops"].get<double>() > 0 && k.contains("predicted_intensity");
    std::size_t pred_points = 0, meas_points = 0;
    for (const std::string& c : tags(page, "<circle class=\"pt ")) {
        const std::string cls = attr(c, "class");
        pred_points += cls.ends_with(" pred"), meas_points += cls.ends_with(" meas");
        CHECK(cls.find(" f-other") == std::string::npos);  // every op kind has a family colour
    }
    CHECK(pred_points == with_flops);
    CHECK(meas_points == with_flops);
    CHECK(tags(page, "<line class=\"link\"").size() == with_flops);
    const std::string text = slurp(csv);
    CHECK(static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) == 1 + cmp["kernels"].size());
    // Every key of the comparison is documented.
    const std::set<std::string> names = documented_names(slurp(test::source_path("docs/report-schema.md")));
    for (const auto& [k, v] : cmp.items()) {
        INFO("comparison key " << k);
        CHECK(names.count(k) == 1);
    }
    for (const auto& [k, v] : cmp["kernels"][0].items()) {
        INFO("comparison kernels[] key " << k);
        CHECK(names.count(k) == 1);
    }
    const auto tr = nlohmann::json::parse(slurp(trace));
    CHECK(tr["traceEvents"].size() == 2 + 2 * cmp["kernels"].size());  // two process names, then each kernel twice
    // An --html path that cannot be written: exit 2 with the path in the message.
    const auto bad = test::run_cli("analyze gpt -q --html '" + test::tmp_path("no-such-dir/x.html") + "'");
    CHECK(bad.code == 2);
    CHECK_THAT(bad.out, Catch::Contains("no-such-dir/x.html"));
}

TEST_CASE("analyze --html --csv write the page and the rows, and the JSON schema documents every key", "[html][cli][schema]") {
    const std::string base = test::tmp_path("html-analyze");
    const auto r =
        test::run_cli("analyze gpt --mode training -q -o '" + base + ".json' --html '" + base + ".html' --csv '" + base + ".csv'");
    REQUIRE(r.code == 0);
    const ordered_json doc = ordered_json::parse(slurp(base + ".json"));
    CHECK(slurp(base + ".html") == html_report(doc));
    CHECK(slurp(base + ".csv") == csv_report(doc));
    const std::string md = slurp(test::source_path("docs/report-schema.md"));
    const std::set<std::string> names = documented_names(md);
    std::vector<std::string> missing;
    auto need = [&](const ordered_json& obj, const std::string& where) {
        for (const auto& [k, v] : obj.items())
            if (!names.count(k)) missing.push_back(where + k);
    };
    need(doc, "");
    need(doc["totals"], "totals.");
    need(doc["memory"], "memory.");
    for (const auto& op : doc["ops"]) need(op, "ops[].");
    need(doc["ops"][0]["schedule"], "ops[].schedule.");
    // The plan: the hand-written example, and the one `roofline plan` wrote where it is checked in.
    for (const char* file : {"tests/data/plan/example-plan.json", "tests/data/plan/gpt2-small-plan.json"}) {
        if (!std::ifstream(test::source_path(file)).good()) continue;
        const ordered_json plan = ordered_json::parse(slurp(test::source_path(file)));
        for (const char* part : {"settings", "baseline", "fusion"})
            if (plan.contains(part)) need(plan[part], std::string(file) + ": " + part + ".");
        need(plan, std::string(file) + ": ");
        need(plan["options"][0], std::string(file) + ": options[].");
        if (plan.contains("frontier") && !plan["frontier"].empty()) need(plan["frontier"][0], std::string(file) + ": frontier[].");
        if (plan.contains("fusion") && !plan["fusion"]["groups"].empty())
            need(plan["fusion"]["groups"][0], std::string(file) + ": fusion.groups[].");
    }
    CHECK(missing == std::vector<std::string>{});
    CHECK(md.find("\"schema\": \"roofline-plan/1\"") != std::string::npos);
}

TEST_CASE("a measurement gives one CSV row per node and a trace of its kernels end to end", "[html][csv][trace]") {
    const ordered_json m = ordered_json::parse(slurp(test::source_path(kMeasured + "suite.json")));
    const std::string csv = csv_report(m);
    CHECK(static_cast<std::size_t>(std::count(csv.begin(), csv.end(), '\n')) == 1 + m["nodes"].size());
    CHECK(csv.rfind("node,name,op,phase,dtype,kernels,median_s,p10_s,p90_s,check,check_error\n", 0) == 0);
    const auto tr = nlohmann::json::parse(trace_report(m));
    std::size_t kernels = 0;
    double sum = 0;
    for (const auto& n : m["nodes"])
        for (const auto& k : n["kernels"]) ++kernels, sum += k["median_s"].get<double>();
    CHECK(tr["traceEvents"].size() == 1 + kernels);  // the thread name, then one event per kernel
    // End to end: the last event ends at the sum of the medians (microseconds; rounding only).
    const auto& last = tr["traceEvents"].back();
    CHECK(last["ts"].get<double>() + last["dur"].get<double>() == Approx(sum * 1e6).epsilon(1e-9));
    CHECK(tr["otherData"]["kernel_sum_s"].get<double>() == Approx(sum).epsilon(1e-12));
    CHECK_THROWS_WITH(trace_report(ordered_json::parse(slurp(test::source_path("tests/data/plan/example-plan.json")))),
                      Catch::Contains("roofline-plan/1"));
}

TEST_CASE("the analyze page of a pipeline shows each stage's memory and the 1F1B timeline", "[html][parallel]") {
    // GPT-2 small on 4 stages (tp 2 with sequence parallelism, dp 2), 4 micro-batches a rank: the
    // "Many GPUs" section has a bar and a table row per stage and a timeline of every micro-batch's
    // forward and backward on every stage: 4 x 4 of each.
    const std::string out = test::tmp_path("pipeline.html");
    const auto r = test::run_cli(
        "analyze gpt2-small --mode training --batch 4 --seq 256 --cluster dgx-a100 --tp 2 --sp --pp 4 --dp 2 --global-batch 32 -q "
        "--html '" +
        out + "'");
    REQUIRE(r.code == 0);
    const std::string page = htmltest::slurp(out);
    const auto count = [&](const std::string& what) {
        std::size_t n = 0;
        for (std::size_t at = page.find(what); at != std::string::npos; at = page.find(what, at + 1)) ++n;
        return n;
    };
    CHECK(count("<section id=\"parallel\"") == 1);
    CHECK(count("aria-label=\"pipeline\"") == 1);
    CHECK(count(" forward micro-batch ") == 16);
    CHECK(count(" backward micro-batch ") == 16);
    CHECK(page.find("tensor-parallel 2, pipeline 4, data-parallel 2") != std::string::npos);
    // The trace: a lane per stage's ranks with the same 32 passes.
    const std::string trace = test::tmp_path("pipeline-trace.json");
    REQUIRE(test::run_cli("analyze gpt2-small --mode training --batch 4 --seq 256 --cluster dgx-a100 --tp 2 --sp --pp 4 --dp 2 "
                          "--global-batch 32 -q --trace '" +
                          trace + "'")
                .code == 0);
    const auto t = nlohmann::json::parse(htmltest::slurp(trace));
    std::size_t passes = 0, lanes = 0;
    for (const auto& e : t["traceEvents"]) {
        if (e["pid"] != 2) continue;
        if (e["ph"] == "X") ++passes;
        if (e["ph"] == "M" && e["name"] == "thread_name") ++lanes;
    }
    CHECK(passes == 32);
    CHECK(lanes == 4);
    // A single device has no such section.
    const std::string single = test::tmp_path("single.html");
    REQUIRE(test::run_cli("analyze gpt2-small --mode training --batch 2 --seq 128 -q --html '" + single + "'").code == 0);
    CHECK(htmltest::slurp(single).find("<section id=\"parallel\"") == std::string::npos);
}

TEST_CASE("report_json_text streams the same bytes as the whole document's dump", "[html][report]") {
    // analyze -o writes report_json_text (the per-op array streamed one op at a time) and the HTML
    // and CSV renderers read report_json: the two must agree byte for byte (issue #20: same bytes
    // out). A training step with a host file (nested objects, arrays, strings, nulls) and an empty
    // graph (no ops).
    const Graph g = build_training_step(load_model_arg("gpt", {}), TrainingOptions{});
    const Hardware h = resolve_hardware("h100-sxm");
    AnalysisOptions opt;
    opt.runtime = Runtime::eager;
    const EagerHost host = load_eager_host(test::source_path("tests/data/hosts/h200-vm-2026-11-27.json"));
    apply_eager_host(host, opt);
    const Analysis a = analyze(g, h, opt);
    ReportContext ctx{g, h, a, "training", nullptr};
    ctx.host = &host;
    const std::string streamed = report_json_text(ctx);
    CHECK(streamed == report_json(ctx).dump(2) + "\n");
    CHECK(streamed.find("\"backward_call_s\"") != std::string::npos);
    const Graph empty;
    const Analysis none = analyze(empty, h, AnalysisOptions{});
    const ReportContext ectx{empty, h, none, "inference", nullptr};
    CHECK(report_json_text(ectx) == report_json(ectx).dump(2) + "\n");
}
