// The `roofline serve` report (reports/serve_report.hpp).
#include "reports/serve_report.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "reports/generate_report.hpp"
#include "reports/html_parts.hpp"
#include "reports/units.hpp"

namespace roofline {

using ojson = nlohmann::ordered_json;

namespace {

ojson percentiles_json(const Percentiles& p) { return {{"mean", p.mean}, {"p50", p.p50}, {"p90", p.p90}, {"p99", p.p99}, {"max", p.max}}; }

ojson metrics_json(const ServeResult& r) {
    ojson m;
    m["requests"] = r.requests;
    m["makespan_s"] = r.makespan_s;
    m["ttft_s"] = percentiles_json(r.ttft);
    m["tpot_s"] = percentiles_json(r.tpot);
    m["e2e_s"] = percentiles_json(r.e2e);
    m["queue_s"] = percentiles_json(r.queue);
    m["throughput"] = {
        {"requests_per_s", r.request_throughput}, {"output_tokens_per_s", r.output_throughput}, {"total_tokens_per_s", r.total_throughput}};
    m["batch"] = {{"mean_running", r.mean_running}, {"mean_decode", r.mean_decode_batch}, {"peak_running", r.peak_running}};
    m["cache"] = {{"blocks", r.kv_blocks},
                  {"utilization", r.cache_utilization},
                  {"peak_utilization", r.peak_cache_utilization},
                  {"sequences_of_mean_length", r.max_batch_by_cache}};
    m["little"] = {{"mean_in_system", r.mean_in_system}, {"mean_latency_s", r.mean_latency_s}};
    m["iterations"] = r.iterations;
    m["prefill_iterations"] = r.prefill_iterations;
    m["preemptions"] = r.preemptions;
    m["clamped_outputs"] = r.clamped;
    m["mean_prompt"] = r.mean_prompt;
    m["mean_output"] = r.mean_output;
    return m;
}

std::string pct_line(const char* what, const Percentiles& p) {
    return fmt::format("  {:<18}{:>10} {:>10} {:>10} {:>10}\n", what, human_time(p.mean), human_time(p.p50), human_time(p.p90),
                       human_time(p.p99));
}

}  // namespace

ojson serve_json(const ServeCosts& c, const ServeResult& r, const ServeSettings& s) {
    const ServeOptions& o = s.options;
    ojson doc;
    doc["schema"] = "roofline-serve/1";
    doc["tool"] = "roofline";
    doc["model"] = decoder_arch_json(c.arch);
    doc["hardware"] = s.hardware;
    doc["settings"] = {{"rate", std::isinf(o.rate) ? ojson("all at once") : ojson(o.rate)},
                       {"arrivals", o.poisson ? "poisson" : "uniform"},
                       {"prompt_len", o.prompt.text},
                       {"output_len", o.output.text},
                       {"requests", o.requests},
                       {"seed", o.seed},
                       {"max_batch", c.max_seqs},
                       {"max_tokens", c.max_tokens},
                       {"chunked_prefill", o.chunked_prefill},
                       {"block_size", o.block_size},
                       {"memory_utilization", o.memory_utilization},
                       {"tp", o.tp},
                       {"cuda_graphs", o.cuda_graphs},
                       {"dtype", c.arch.dtype},
                       {"quantization", o.quant.describe()},
                       {"kv_cache", std::string(dtype_name(c.kv_dtype))}};
    doc["costs"] = {{"analyses", c.analyses},
                    {"weight_bytes", c.weight_bytes},
                    {"activation_bytes", c.activation_bytes},
                    {"kv_bytes_per_token", c.kv_bytes_per_token},
                    {"decode_step_s", {{"batch_1", c.body(1) + c.head(1) + c.decode_attention(1, 1024)}, {"context", 1024}}}};
    doc["metrics"] = metrics_json(r);
    if (s.search) {
        doc["slo"] = {{"ttft_s", s.slo_ttft_s},
                      {"tpot_s", s.slo_tpot_s},
                      {"quantile", s.slo_quantile},
                      {"max_rate", s.search->rate},
                      {"simulations", s.search->simulations},
                      {"at_max_rate", metrics_json(s.search->at_rate)}};
    }
    ojson tl = ojson::array();
    for (const ServeSample& p : r.timeline)
        tl.push_back({{"t_s", p.t}, {"running", p.running}, {"waiting", p.waiting}, {"cache", p.cache_used}});
    doc["timeline"] = std::move(tl);
    return doc;
}

std::string render_serve(const ServeCosts& c, const ServeResult& r, const ServeSettings& s) {
    const ServeOptions& o = s.options;
    std::string out = fmt::format("{} serving on {}{}: {} requests, {} arrivals at {}, prompts {}, outputs {}{}\n", c.arch.name, s.hardware,
                                  o.tp > 1 ? fmt::format(" (tp {})", o.tp) : "", o.requests, o.poisson ? "Poisson" : "even",
                                  std::isinf(o.rate) ? "once" : fmt::format("{:.3g}/s", o.rate), o.prompt.text, o.output.text,
                                  o.quant.any() ? "; " + o.quant.describe() : "");
    out += fmt::format("  scheduler           {}, max batch {}, {} tokens an iteration, {} KV blocks of {} tokens ({})\n",
                       o.chunked_prefill ? "chunked prefill" : "prefill first", c.max_seqs, c.max_tokens, r.kv_blocks, o.block_size,
                       human_bytes(static_cast<double>(r.kv_blocks * o.block_size) * c.kv_bytes_per_token));
    out += fmt::format("  {:<18}{:>10} {:>10} {:>10} {:>10}\n", "", "mean", "p50", "p90", "p99");
    out += pct_line("TTFT", r.ttft);
    out += pct_line("TPOT", r.tpot);
    out += pct_line("end to end", r.e2e);
    out += pct_line("queueing", r.queue);
    out += fmt::format("  throughput          {:.2f} requests/s, {:.0f} output tokens/s, {:.0f} tokens/s in all, over {}\n",
                       r.request_throughput, r.output_throughput, r.total_throughput, human_time(r.makespan_s));
    out +=
        fmt::format("  batch               mean {:.1f} running ({:.1f} a decode step), peak {}; the cache holds {} of the mean request\n",
                    r.mean_running, r.mean_decode_batch, r.peak_running, r.max_batch_by_cache);
    out += fmt::format("  KV cache            {:.0f}% used on average, {:.0f}% at peak; {} preemptions\n", 100 * r.cache_utilization,
                       100 * r.peak_cache_utilization, r.preemptions);
    out +=
        fmt::format("  iterations          {} ({} prefill-only); costs from {} analyses\n", r.iterations, r.prefill_iterations, c.analyses);
    if (r.clamped > 0) out += fmt::format("  ({} outputs shortened to fit the model's positions)\n", r.clamped);
    if (s.search) {
        out += fmt::format("  highest rate within p{:.0f} TTFT {} and TPOT {}: {:.3g} requests/s ({} simulations)\n", 100 * s.slo_quantile,
                           s.slo_ttft_s > 0 ? human_time(s.slo_ttft_s) : "-", s.slo_tpot_s > 0 ? human_time(s.slo_tpot_s) : "-",
                           s.search->rate, s.search->simulations);
    }
    return out;
}

std::string serve_html(const ojson& doc) {
    const ojson& m = doc.at("metrics");
    const ojson& st = doc.at("settings");
    std::string body;
    body +=
        html::card("TTFT p99", human_time(html::num_at(m.at("ttft_s"), "p99")), "p50 " + human_time(html::num_at(m.at("ttft_s"), "p50")));
    body +=
        html::card("TPOT p99", human_time(html::num_at(m.at("tpot_s"), "p99")), "p50 " + human_time(html::num_at(m.at("tpot_s"), "p50")));
    body += html::card("throughput", fmt::format("{:.0f} tok/s", html::num_at(m.at("throughput"), "output_tokens_per_s")),
                       fmt::format("{:.2f} requests/s", html::num_at(m.at("throughput"), "requests_per_s")));
    body += html::card("KV cache", fmt::format("{:.0f}%", 100 * html::num_at(m.at("cache"), "utilization")),
                       fmt::format("mean use of {} blocks; {} preemptions", static_cast<long long>(html::num_at(m.at("cache"), "blocks")),
                                   static_cast<long long>(html::num_at(m, "preemptions"))));
    if (doc.contains("slo")) {
        const ojson& slo = doc.at("slo");
        body += html::card("highest rate", fmt::format("{:.3g}/s", html::num_at(slo, "max_rate")),
                           fmt::format("p{:.0f} within the targets", 100 * html::num_at(slo, "quantile")));
    }
    // The running batch, the queue and the cache against time.
    const ojson& tl = doc.at("timeline");
    const double w = 760, h = 260, x0 = 70, x1 = w - 70, y0 = h - 40, y1 = 20;
    std::string svg;
    if (tl.size() > 1) {
        double tmax = 0, nmax = 1;
        for (const auto& p : tl) {
            tmax = std::max(tmax, html::num_at(p, "t_s"));
            nmax = std::max({nmax, html::num_at(p, "running"), html::num_at(p, "waiting")});
        }
        nmax = html::nice_ceiling(nmax);
        auto X = [&](double t) { return x0 + (x1 - x0) * t / std::max(tmax, 1e-12); };
        std::string run, wait, cache;
        for (std::size_t i = 0; i < tl.size(); ++i) {
            const double x = X(html::num_at(tl[i], "t_s"));
            const std::string c = i == 0 ? "M" : "L";
            run += c + html::px(x) + "," + html::px(y0 - (y0 - y1) * html::num_at(tl[i], "running") / nmax);
            wait += c + html::px(x) + "," + html::px(y0 - (y0 - y1) * html::num_at(tl[i], "waiting") / nmax);
            cache += c + html::px(x) + "," + html::px(y0 - (y0 - y1) * html::num_at(tl[i], "cache"));
        }
        svg = "<svg viewBox=\"0 0 " + html::px(w) + " " + html::px(h) + "\" width=\"" + html::px(w) + "\" role=\"img\">";
        svg += "<line x1=\"" + html::px(x0) + "\" y1=\"" + html::px(y0) + "\" x2=\"" + html::px(x1) + "\" y2=\"" + html::px(y0) +
               "\" stroke=\"#888\"/>";
        svg += "<path d=\"" + run + "\" fill=\"none\" stroke=\"" + html::palette(0) + "\" stroke-width=\"2\"/>";
        svg += "<path d=\"" + wait + "\" fill=\"none\" stroke=\"" + html::palette(2) + "\" stroke-width=\"1.5\"/>";
        svg +=
            "<path d=\"" + cache + "\" fill=\"none\" stroke=\"" + html::palette(1) + "\" stroke-width=\"1.5\" stroke-dasharray=\"4 3\"/>";
        svg += "<text x=\"" + html::px(x0 - 6) + "\" y=\"" + html::px(y1 + 4) + "\" text-anchor=\"end\" font-size=\"11\">" +
               html::esc(fmt::format("{:g}", nmax)) + "</text>";
        svg += "<text x=\"" + html::px(x1 + 6) + "\" y=\"" + html::px(y1 + 4) + "\" font-size=\"11\">100%</text>";
        svg += "<text x=\"" + html::px((x0 + x1) / 2) + "\" y=\"" + html::px(h - 8) +
               "\" text-anchor=\"middle\" font-size=\"11\">time (0 .. " + html::esc(human_time(tmax)) + ")</text></svg>";
        svg += html::legend(
            {{"running sequences", html::palette(0)}, {"waiting requests", html::palette(2)}, {"KV cache in use", html::palette(1)}});
    } else {
        svg = html::note("One iteration: nothing to chart.");
    }
    body += html::section("timeline", "Batch, queue and KV cache over time", svg);
    std::vector<html::Column> cols = {{"metric", false}, {"mean", true}, {"p50", true}, {"p90", true}, {"p99", true}};
    std::vector<html::Row> rows;
    for (const auto& [key, label] :
         {std::pair<const char*, const char*>{"ttft_s", "TTFT"}, {"tpot_s", "TPOT"}, {"e2e_s", "end to end"}, {"queue_s", "queueing"}}) {
        const ojson& p = m.at(key);
        html::Row row;
        row.cells = {html::Cell{label, ""}};
        for (const char* q : {"mean", "p50", "p90", "p99"})
            row.cells.push_back(html::num_cell(human_time(html::num_at(p, q)), html::num_at(p, q)));
        rows.push_back(std::move(row));
    }
    body += html::section("latency", "Latency", html::table("latency", cols, rows));
    const std::string title = html::str_at(doc.at("model"), "name") + " serving on " + doc.value("hardware", std::string());
    return html::page(
        title,
        fmt::format("{} requests; prompts {}, outputs {}; {}", st.value("requests", 0), st.value("prompt_len", std::string()),
                    st.value("output_len", std::string()), st.value("chunked_prefill", false) ? "chunked prefill" : "prefill first"),
        body);
}

}  // namespace roofline
