// libFuzzer target: the ONNX loader (protobuf parse, structure checks, shape inference, folding,
// op mapping, graph verification) on arbitrary bytes. Every input must end in a Graph or an
// InputError; anything else (a crash, a sanitizer report, another exception) is a bug.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "model/model_json.hpp"
#include "model/onnx_model.hpp"
#include "ops/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    for (bool allow_unknown : {false, true}) {
        roofline::ModelOverrides ov;
        ov.allow_unknown = allow_unknown;
        try {
            const roofline::Graph g = roofline::load_onnx_bytes(bytes, "fuzz.onnx", ov);
            for (roofline::NodeId n = 0; n < static_cast<roofline::NodeId>(g.nodes().size()); ++n) (void)g.work(n);
        } catch (const roofline::InputError&) {}
    }
    return 0;
}
