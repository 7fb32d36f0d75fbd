// libFuzzer target: Hugging Face config.json models (is_hf_config, expand_hf_config: architecture,
// sizes, heads, rope, sliding window, then the graph loader), on arbitrary bytes. Every input must
// end in a Graph or an InputError; anything else is a bug.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "fuzz/fuzz_json.hpp"
#include "model/hf_config.hpp"
#include "model/model_json.hpp"
#include "ops/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::optional<nlohmann::json> parsed = fuzz_json(data, size);
    if (!parsed) return 0;
    const nlohmann::json& doc = *parsed;
    if (!roofline::is_hf_config(doc)) return 0;  // other documents are fuzz_model_json's
    // Many layers are a valid, slow request (the loader caps them at 4,096): keep the fuzzer fast.
    for (const char* k : {"num_hidden_layers", "n_layer", "num_layers"})
        if (doc.contains(k) && doc[k].is_number() && doc[k].get<double>() > 8) return 0;
    try {
        const roofline::Graph g = roofline::load_model(doc, "config.json");
        for (roofline::NodeId n = 0; n < static_cast<roofline::NodeId>(g.nodes().size()); ++n) (void)g.work(n);
    } catch (const roofline::InputError&) {}
    return 0;
}
