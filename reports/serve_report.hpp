#pragma once
// The `roofline serve` report: JSON (roofline-serve/1), the terminal summary and the HTML page
// (latency percentiles, throughput, the running batch, queue and KV cache over time).
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/serve.hpp"

namespace roofline {

struct ServeSettings {
    std::string model, hardware;
    ServeOptions options;
    double slo_ttft_s = 0, slo_tpot_s = 0, slo_quantile = 0.99;
    std::optional<RateSearch> search;  // --find-rate
};

nlohmann::ordered_json serve_json(const ServeCosts& c, const ServeResult& r, const ServeSettings& s);
std::string render_serve(const ServeCosts& c, const ServeResult& r, const ServeSettings& s);
// A self-contained page from a roofline-serve/1 document.
std::string serve_html(const nlohmann::ordered_json& doc);

}  // namespace roofline
