// libFuzzer target: the roofline-model/1 JSON loader (parse, schema checks, shape
// inference, graph verification) on arbitrary bytes. Every input must end in a Graph or an
// InputError (malformed JSON included); anything else is a bug.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "fuzz/fuzz_json.hpp"
#include "model/model_json.hpp"
#include "ops/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::optional<nlohmann::json> parsed = fuzz_json(data, size);
    if (!parsed) return 0;
    const nlohmann::json& doc = *parsed;
    // Template references expand to graphs as large as their config asks (n_layer 10^6 is a valid,
    // slow request, not a bug): the templates are covered by the unit tests, the graph loader here.
    if (doc.is_object() && doc.contains("template")) return 0;
    try {
        const roofline::Graph g = roofline::load_model(doc, "fuzz.json");
        for (roofline::NodeId n = 0; n < static_cast<roofline::NodeId>(g.nodes().size()); ++n) (void)g.work(n);
    } catch (const roofline::InputError&) {}
    return 0;
}
