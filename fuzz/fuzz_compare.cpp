// libFuzzer target: `roofline compare`'s inputs (an analyze report and a measure document, split at
// the first NUL byte) joined node by node, and the comparison rendered, on arbitrary bytes. Every
// input must end in a comparison or an InputError naming the file and JSON path; anything else is a bug.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "ops/error.hpp"
#include "reports/compare.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    const std::size_t cut = text.find('\0');
    if (cut == std::string::npos) return 0;
    nlohmann::json predicted, measured;
    try {
        predicted = nlohmann::json::parse(text.substr(0, cut));
        measured = nlohmann::json::parse(text.substr(cut + 1));
    } catch (const nlohmann::json::exception&) {
        return 0;
    }
    try {
        const auto cmp = roofline::compare_documents(predicted, "predicted.json", measured, "measured.json");
        (void)roofline::render_comparison(cmp, 10);
    } catch (const roofline::InputError&) {}
    return 0;
}
