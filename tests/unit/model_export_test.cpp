// `roofline model export MODEL`: any loaded forward graph written as roofline-model/1 reads back as
// the same graph. Expected: node for node the same op, input and output descriptors, attributes
// and work counts (exact: the file holds every shape and attribute, doubles written to round-trip),
// for templates with options, an LLM decode step, a quantized prefill, a t5 decode and a bart
// prefill step and (where ONNX is built) a torchvision model.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "model/inference.hpp"
#include "model/model_json.hpp"
#include "model/onnx_model.hpp"
#include "support.hpp"

using namespace roofline;

namespace {

void check_round_trip(const Graph& g) {
    const nlohmann::json doc = graph_to_model_json(g);
    const Graph back = load_model(nlohmann::json::parse(doc.dump()), "export of " + g.name);
    REQUIRE(back.nodes().size() == g.nodes().size());
    CHECK(back.name == g.name);
    CHECK(back.compute_dtype == g.compute_dtype);
    CHECK(back.outputs().size() == g.outputs().size());
    std::size_t sources = 0, sources_back = 0;
    for (const Tensor& t : g.tensors()) sources += t.producer == kNoNode ? 1 : 0;
    for (const Tensor& t : back.tensors()) sources_back += t.producer == kNoNode ? 1 : 0;
    CHECK(sources_back == sources);
    for (std::size_t i = 0; i < g.nodes().size(); ++i) {
        const Node& a = g.nodes()[i];
        const NodeId j = back.find_node(a.name);
        INFO(a.name);
        REQUIRE(j != kNoNode);
        const Node& b = back.node(j);
        CHECK(b.kind == a.kind);
        CHECK(b.attrs == a.attrs);
        CHECK(back.input_descs(j) == g.input_descs(static_cast<NodeId>(i)));
        CHECK(back.output_descs(j) == g.output_descs(static_cast<NodeId>(i)));
        const Work wa = g.work(static_cast<NodeId>(i)), wb = back.work(j);
        CHECK(wb.matrix_flops == wa.matrix_flops);
        CHECK(wb.vector_flops == wa.vector_flops);
        CHECK(wb.bytes_read == wa.bytes_read);
        CHECK(wb.bytes_written == wa.bytes_written);
    }
}

}  // namespace

TEST_CASE("model export: a loaded graph round-trips through roofline-model/1 node for node", "[model][export]") {
    ModelOverrides ov;
    ov.batch = 3;
    ov.seq = 40;
    check_round_trip(load_model_arg("gpt2-small", ov));
    ModelOverrides small;
    small.batch = 1;
    small.seq = 16;
    check_round_trip(load_model_arg("llama-2-7b", small));

    ModelOverrides decode;
    decode.frozen_weights = true;
    PhaseOptions p;
    p.phase = InferencePhase::decode;
    p.context = 100;
    decode.phase = p;
    decode.batch = 4;
    check_round_trip(load_model_arg("mistral-7b", decode));

    ModelOverrides prefill;
    prefill.frozen_weights = true;
    PhaseOptions q;
    q.phase = InferencePhase::prefill;
    q.quant.weights = "int4";
    prefill.phase = q;
    prefill.seq = 64;
    check_round_trip(load_model_arg("llama-2-7b", prefill));

    // encoder-decoders: a t5 decode step (self and cross caches read in place) and a bart prefill
    ModelOverrides t5;
    t5.frozen_weights = true;
    PhaseOptions t5p;
    t5p.phase = InferencePhase::decode;
    t5p.context = 64;
    t5p.source = 128;
    t5.phase = t5p;
    t5.batch = 2;
    check_round_trip(load_model_arg("t5-small", t5));
    ModelOverrides bart;
    bart.frozen_weights = true;
    PhaseOptions bp;
    bp.phase = InferencePhase::prefill;
    bart.phase = bp;
    bart.seq = 32;
    check_round_trip(load_model_arg("bart-large", bart));

    ModelOverrides tp;
    tp.tp = 2;
    CHECK_THROWS_WITH(graph_to_model_json(load_model_arg("gpt2-small", tp)), Catch::Contains("one rank's share of a partitioned model"));

    if (onnx_supported())
        check_round_trip(load_model_arg(test::source_path("tests/data/onnx/torchvision/resnet50.onnx"), ModelOverrides{}));
}

TEST_CASE("model export: the CLI writes a file that analyze reads back to the same totals, and refuses a training step",
          "[model][export][cli]") {
    const std::string file = test::tmp_path("export-decode.json");
    const auto w = test::run_cli("model export gpt2-small --phase decode --context 64 --batch 2 -o " + file);
    REQUIRE(w.code == 0);
    const auto a = test::run_cli("analyze gpt2-small --phase decode --context 64 --batch 2 -q -o " + test::tmp_path("export-a.json"));
    const auto b = test::run_cli("analyze " + file + " -q -o " + test::tmp_path("export-b.json"));
    REQUIRE(a.code == 0);
    REQUIRE(b.code == 0);
    const auto ta = read_json_file(test::tmp_path("export-a.json"))["totals"];
    const auto tb = read_json_file(test::tmp_path("export-b.json"))["totals"];
    CHECK(tb["flops"] == ta["flops"]);
    CHECK(tb["bytes_read"] == ta["bytes_read"]);
    CHECK(tb["step_time_s"].get<double>() == Approx(ta["step_time_s"].get<double>()).epsilon(1e-12));

    const auto t = test::run_cli("model export gpt2-small --mode training");
    CHECK(t.code == 2);
    CHECK(t.out.find("forward graph") != std::string::npos);
}
