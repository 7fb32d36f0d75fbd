// libFuzzer target: the roofline-model/1 JSON loader (parse, schema checks, shape
// inference, graph verification) on arbitrary bytes. Every input must end in a Graph or an
// InputError (malformed JSON included); anything else is a bug.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "model/model_json.hpp"
#include "ops/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    nlohmann::json doc;
    try {
        doc = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception&) {
        return 0;  // read_json_file turns this into an InputError
    }
    // Template references expand to graphs as large as their config asks (n_layer 10^6 is a valid,
    // slow request, not a bug): the templates are covered by the unit tests, the graph loader here.
    if (doc.is_object() && doc.contains("template")) return 0;
    try {
        const roofline::Graph g = roofline::load_model(doc, "fuzz.json");
        for (roofline::NodeId n = 0; n < static_cast<roofline::NodeId>(g.nodes().size()); ++n) (void)g.work(n);
    } catch (const roofline::InputError&) {}
    return 0;
}
