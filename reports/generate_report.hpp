#pragma once
// The `roofline generate` report: JSON (roofline-generate/1), the terminal summary and the HTML
// page (per-token latency and KV cache against position).
#include <string>

#include <nlohmann/json.hpp>

#include "sim/generate.hpp"

namespace roofline {

struct GenerateSettings {
    std::string model, hardware;
    GenerateOptions options;
};

// The decoder architecture as both inference reports describe it ("model").
nlohmann::ordered_json decoder_arch_json(const DecoderArch& a);

nlohmann::ordered_json generate_json(const GenerateResult& r, const GenerateSettings& s);
std::string render_generate(const GenerateResult& r, const GenerateSettings& s);
// A self-contained page from a roofline-generate/1 document.
std::string generate_html(const nlohmann::ordered_json& doc);

}  // namespace roofline
