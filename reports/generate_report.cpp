// The `roofline generate` report (reports/generate_report.hpp).
#include "reports/generate_report.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "reports/html_parts.hpp"
#include "reports/units.hpp"

namespace roofline {

using ojson = nlohmann::ordered_json;

namespace {

ojson work_json(const Work& w) { return {{"flops", w.flops()}, {"bytes_read", w.bytes_read}, {"bytes_written", w.bytes_written}}; }

}  // namespace

ojson decoder_arch_json(const DecoderArch& a) {
    return {{"name", a.name},
            {"layers", a.layers},
            {"hidden", a.d},
            {"heads", a.heads},
            {"kv_heads", a.kv_heads},
            {"head_dim", a.head_dim},
            {"vocab", a.vocab},
            {"max_positions", a.max_positions},
            {"sliding_window", a.sliding_window}};
}

ojson generate_json(const GenerateResult& r, const GenerateSettings& s) {
    const GenerateOptions& o = s.options;
    ojson doc;
    doc["schema"] = "roofline-generate/1";
    doc["tool"] = "roofline";
    doc["model"] = decoder_arch_json(r.arch);
    doc["hardware"] = s.hardware;
    doc["settings"] = {{"prompt", o.prompt},
                       {"output", o.output},
                       {"batch", o.batch},
                       {"tp", o.tp},
                       {"dtype", std::string(dtype_name(r.dtype))},
                       {"weights", r.quant.weights.empty() ? std::string(dtype_name(r.dtype)) : r.quant.weights},
                       {"group_size", r.quant.weights == "int8" || r.quant.weights == "int4" ? r.quant.group_size : 0},
                       {"activations", r.quant.activations.empty() ? std::string(dtype_name(r.dtype)) : r.quant.activations},
                       {"kv_cache", std::string(dtype_name(r.kv_dtype))},
                       {"runtime", std::string(runtime_name(o.analysis.runtime))},
                       {"cuda_graphs", o.cuda_graphs},
                       {"decode_contexts_analysed", r.analysed - 1}};
    doc["totals"] = {{"ttft_s", r.ttft_s},
                     {"tpot_s", r.tpot_s},
                     {"first_decode_s", r.first_decode_s},
                     {"last_decode_s", r.last_decode_s},
                     {"e2e_s", r.e2e_s},
                     {"tokens_per_s", r.tokens_per_s},
                     {"prefill", work_json(r.prefill_work)},
                     {"first_decode", work_json(r.first_decode_work)},
                     {"last_decode", work_json(r.last_decode_work)}};
    doc["memory"] = {{"weight_bytes", r.weight_bytes}, {"kv_bytes_per_token", r.kv_bytes_per_token}, {"kv_final_bytes", r.kv_final_bytes},
                     {"peak_bytes", r.peak_bytes},     {"capacity_bytes", r.capacity_bytes},         {"max_batch", r.max_batch}};
    ojson steps = ojson::array();
    for (const TokenStep& t : r.steps) {
        steps.push_back({{"token", t.index},
                         {"context", t.context},
                         {"time_s", t.time_s},
                         {"kv_cache_bytes", t.kv_cache_bytes},
                         {"analysed", t.analysed}});
    }
    doc["tokens"] = std::move(steps);
    return doc;
}

std::string render_generate(const GenerateResult& r, const GenerateSettings& s) {
    const GenerateOptions& o = s.options;
    const std::string quant = r.quant.any() ? "; " + r.quant.describe() : "";
    std::string out = fmt::format("{} generating on {}: batch {}, prompt {} tokens, {} output tokens, {}{}{}\n", r.arch.name, s.hardware,
                                  o.batch, o.prompt, o.output, dtype_name(r.dtype), o.tp > 1 ? fmt::format(", tp {}", o.tp) : "", quant);
    out += fmt::format("  TTFT (prefill)      {}\n", human_time(r.ttft_s));
    if (o.output > 1) {
        out += fmt::format("  TPOT (mean decode)  {}   first {}, last {}\n", human_time(r.tpot_s), human_time(r.first_decode_s),
                           human_time(r.last_decode_s));
    }
    out += fmt::format("  end to end          {}   {:.1f} tokens/s ({:.1f} per sequence)\n", human_time(r.e2e_s), r.tokens_per_s,
                       r.tokens_per_s / static_cast<double>(o.batch));
    out += fmt::format("  work                prefill {} FLOP, {}; last decode {} FLOP, {}\n",
                       human_si(static_cast<double>(r.prefill_work.flops()), ""), human_bytes(static_cast<double>(r.prefill_work.bytes())),
                       human_si(static_cast<double>(r.last_decode_work.flops()), ""),
                       human_bytes(static_cast<double>(r.last_decode_work.bytes())));
    out += fmt::format("  memory              weights {}, KV cache {} a token a sequence, {} at the end; peak {} of {}\n",
                       human_bytes(r.weight_bytes), human_bytes(r.kv_bytes_per_token), human_bytes(r.kv_final_bytes),
                       human_bytes(r.peak_bytes), human_bytes(r.capacity_bytes));
    out += fmt::format("  largest batch that fits: {} sequences of {} tokens\n", r.max_batch, o.prompt + o.output - 1);
    if (r.analysed - 1 < o.output - 1) {
        out += fmt::format("  ({} of {} decode steps analysed, evenly spaced; the others interpolated linearly)\n", r.analysed - 1,
                           o.output - 1);
    }
    return out;
}

std::string generate_html(const ojson& doc) {
    const ojson& t = doc.at("totals");
    const ojson& m = doc.at("memory");
    const ojson& st = doc.at("settings");
    std::string body;
    body += html::card("TTFT", human_time(html::num_at(t, "ttft_s")), "the prefill step");
    body += html::card("TPOT", human_time(html::num_at(t, "tpot_s")), "mean of the decode steps");
    body += html::card("end to end", human_time(html::num_at(t, "e2e_s")), fmt::format("{:.1f} tokens/s", html::num_at(t, "tokens_per_s")));
    body += html::card("peak memory", human_bytes(html::num_at(m, "peak_bytes")),
                       "of " + human_bytes(html::num_at(m, "capacity_bytes")) + "; largest batch " +
                           std::to_string(static_cast<long long>(html::num_at(m, "max_batch"))));
    // Per-token latency (decode steps) and the batch's KV cache against the output token.
    const ojson& tokens = doc.at("tokens");
    const double w = 760, h = 260, x0 = 70, x1 = w - 70, y0 = h - 40, y1 = 20;
    double tmax = 0, kmax = 0, n = static_cast<double>(tokens.size());
    for (std::size_t i = 1; i < tokens.size(); ++i) tmax = std::max(tmax, html::num_at(tokens[i], "time_s"));
    for (const auto& tk : tokens) kmax = std::max(kmax, html::num_at(tk, "kv_cache_bytes"));
    std::string svg;
    if (tokens.size() > 2 && tmax > 0) {
        tmax = html::nice_ceiling(tmax), kmax = html::nice_ceiling(std::max(kmax, 1.0));
        auto X = [&](double i) { return x0 + (x1 - x0) * (i - 1) / std::max(1.0, n - 2); };
        std::string lat, kv;
        for (std::size_t i = 1; i < tokens.size(); ++i) {
            const double x = X(static_cast<double>(i));
            lat += (i == 1 ? "M" : "L") + html::px(x) + "," + html::px(y0 - (y0 - y1) * html::num_at(tokens[i], "time_s") / tmax);
            kv += (i == 1 ? "M" : "L") + html::px(x) + "," + html::px(y0 - (y0 - y1) * html::num_at(tokens[i], "kv_cache_bytes") / kmax);
        }
        svg = "<svg viewBox=\"0 0 " + html::px(w) + " " + html::px(h) + "\" width=\"" + html::px(w) + "\" role=\"img\">";
        svg += "<line x1=\"" + html::px(x0) + "\" y1=\"" + html::px(y0) + "\" x2=\"" + html::px(x1) + "\" y2=\"" + html::px(y0) +
               "\" stroke=\"#888\"/>";
        svg += "<path d=\"" + lat + "\" fill=\"none\" stroke=\"" + html::palette(0) + "\" stroke-width=\"2\"/>";
        svg += "<path d=\"" + kv + "\" fill=\"none\" stroke=\"" + html::palette(1) + "\" stroke-width=\"1.5\" stroke-dasharray=\"4 3\"/>";
        svg += "<text x=\"" + html::px(x0 - 6) + "\" y=\"" + html::px(y1 + 4) + "\" text-anchor=\"end\" font-size=\"11\">" +
               html::esc(human_time(tmax)) + "</text>";
        svg += "<text x=\"" + html::px(x1 + 6) + "\" y=\"" + html::px(y1 + 4) + "\" font-size=\"11\">" + html::esc(human_bytes(kmax)) +
               "</text>";
        svg += "<text x=\"" + html::px((x0 + x1) / 2) + "\" y=\"" + html::px(h - 8) +
               "\" text-anchor=\"middle\" font-size=\"11\">output token (decode steps 1.." + std::to_string(tokens.size() - 1) +
               ")</text></svg>";
        svg += html::legend({{"decode step time", html::palette(0)}, {"KV cache of the batch", html::palette(1)}});
    } else {
        svg = html::note("One output token: the prefill is the whole generation.");
    }
    body += html::section("tokens", "Per-token latency and KV cache", svg);
    const std::string title = html::str_at(doc.at("model"), "name") + " generating on " + doc.value("hardware", std::string());
    return html::page(
        title,
        fmt::format("batch {}, prompt {}, output {}, {}; weights {}, activations {}, KV cache {}", st.value("batch", 0),
                    st.value("prompt", 0), st.value("output", 0), st.value("dtype", std::string()), st.value("weights", std::string()),
                    st.value("activations", std::string()), st.value("kv_cache", std::string())),
        body);
}

}  // namespace roofline
