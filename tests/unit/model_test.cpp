// The op graph, the model format, templates and their work totals against published counts.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "model/graph.hpp"
#include "model/model_json.hpp"
#include "model/templates.hpp"
#include "sim/analysis.hpp"
#include "support.hpp"

using namespace roofline;
using nlohmann::json;

namespace {

Work total_work(const Graph& g) {
    Work w;
    for (NodeId n : g.topological_order()) w += g.work(n);
    return w;
}

std::int64_t parameter_count(const Graph& g) {
    std::int64_t n = 0;
    for (const Tensor& t : g.tensors()) {
        if (t.role == TensorRole::parameter) n += t.desc.numel();
    }
    return n;
}

}  // namespace

TEST_CASE("gpt2-small forward FLOPs match the standard analytic count", "[model][gpt]") {
    // Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters Using
    // Megatron-LM", section 5.1: a forward pass of a GPT of l layers, hidden size h, sequence s,
    // batch B and vocabulary V costs 24 B s l h^2 (1 + s / (6h)) + 2 B s h V FLOPs in its matrix
    // multiplications (their 96 B s l h^2 (...) counts forward + backward + recomputation = 4 passes,
    // and 6 B s h V for the logits over 3 passes).
    const Graph g = load_model_arg("gpt2-small", ModelOverrides{4, 1024, {}});
    const double B = 4, s = 1024, l = 12, h = 768, V = 50257;
    const double analytic = 24 * B * s * l * h * h * (1 + s / (6 * h)) + 2 * B * s * h * V;
    const Work w = total_work(g);
    // The matrix FLOPs are the same products: exact up to double rounding of the formula.
    CHECK(static_cast<double>(w.matrix_flops) == Approx(analytic).epsilon(1e-12));
    // All FLOPs (adding softmax, layernorm, GELU, dropout, biases, loss) stay within 1% of it:
    // the elementwise work is O(B s (h + s)) per layer against O(B s h^2) for the matrices.
    CHECK(static_cast<double>(w.flops()) == Approx(analytic).epsilon(0.01));
    CHECK(static_cast<double>(w.flops()) > analytic);
}

TEST_CASE("gpt2-small has 124,439,808 parameters with tied embeddings", "[model][gpt]") {
    // Hugging Face gpt2 (model.num_parameters()), the published count of GPT-2 small.
    CHECK(parameter_count(load_model_arg("gpt2-small")) == 124'439'808);
}

TEST_CASE("GPT presets have the published layer shapes", "[model][gpt]") {
    // Non-embedding parameters 12 l h^2 (+ biases and layernorms, 13 l h + 2 h) for GPT-3 175B:
    // Brown et al. 2020 Table 2.1 lists 175.0B with 96 layers, d_model 12288.
    const Graph g = load_model_arg("gpt3-175b", ModelOverrides{1, 128, {}});
    const double n = static_cast<double>(parameter_count(g));
    CHECK(n == Approx(175.0e9).epsilon(0.005));
    CHECK(g.dims.at("batch") == 1);
    CHECK(g.dims.at("seq") == 128);
    // Hugging Face gpt2-medium / -large / -xl num_parameters() with tied embeddings; Radford et al.
    // 2019 Table 2 prints 345M, 762M and 1542M, which differ from the released checkpoints' counts.
    const std::pair<const char*, std::int64_t> published[] = {
        {"gpt2-medium", 354'823'168}, {"gpt2-large", 774'030'080}, {"gpt2-xl", 1'557'611'200}};
    for (const auto& [p, expected] : published) {
        INFO(p);
        CHECK(parameter_count(load_model_arg(p, ModelOverrides{1, 64, {}})) == expected);
    }
}

TEST_CASE("a template is sugar: its exported JSON loads to the same graph", "[model]") {
    for (const char* name : {"mlp", "gpt2-small"}) {
        INFO(name);
        const json doc = expand_template(name, json::object(), name);
        const Graph from_text = load_model(json::parse(doc.dump()), "exported.json");
        const Graph from_template = load_model_arg(name);
        REQUIRE(from_text.nodes().size() == from_template.nodes().size());
        REQUIRE(from_text.tensors().size() == from_template.tensors().size());
        for (std::size_t i = 0; i < from_text.nodes().size(); ++i) {
            const Node& a = from_text.nodes()[i];
            const Node& b = from_template.nodes()[i];
            CHECK(a.name == b.name);
            CHECK(a.kind == b.kind);
            CHECK(a.attrs == b.attrs);
            CHECK(from_text.output_descs(static_cast<NodeId>(i)) == from_template.output_descs(static_cast<NodeId>(i)));
        }
    }
}

TEST_CASE("the gpt template has the GPT-2 block structure", "[model][gpt]") {
    const Graph g = load_model_arg("gpt", ModelOverrides{2, 16, {}});
    auto op_of = [&](const std::string& n) {
        const NodeId id = g.find_node(n);
        REQUIRE(id != kNoNode);
        return g.node(id).kind;
    };
    CHECK(op_of("tok_emb") == OpKind::embedding);
    CHECK(op_of("h0.ln1") == OpKind::layernorm);
    CHECK(op_of("h0.attn.qkv") == OpKind::linear);
    CHECK(op_of("h0.attn.scores") == OpKind::matmul);
    CHECK(op_of("h0.attn.scale") == OpKind::scale);
    CHECK(op_of("h0.attn.mask") == OpKind::causal_mask);
    CHECK(op_of("h0.attn.softmax") == OpKind::softmax);
    CHECK(op_of("h0.attn.context") == OpKind::matmul);
    CHECK(op_of("h0.attn.proj") == OpKind::linear);
    CHECK(op_of("h0.attn.resid_drop") == OpKind::dropout);
    CHECK(op_of("h0.attn.residual") == OpKind::add);
    CHECK(op_of("h0.mlp.gelu") == OpKind::gelu);
    CHECK(op_of("h11.mlp.residual") == OpKind::add);
    CHECK(op_of("ln_f") == OpKind::layernorm);
    CHECK(op_of("lm_head") == OpKind::matmul);
    CHECK(op_of("loss") == OpKind::cross_entropy);
    CHECK(g.tensor(g.find_tensor("h0.attn.scores")).desc == TensorDesc{{2, 12, 16, 16}, DType::bf16});
    CHECK(g.tensor(g.find_tensor("lm_head")).desc == TensorDesc{{2, 16, 50257}, DType::bf16});
    REQUIRE(g.outputs().size() == 1);
    CHECK(g.tensor(g.outputs()[0]).desc == TensorDesc{{}, DType::f32});
}

TEST_CASE("dropout 0 removes the dropout nodes, template config is validated", "[model][gpt]") {
    const Graph g = load_model(json{{"format", "roofline-model/1"},
                                    {"template", "gpt"},
                                    {"config", {{"n_layer", 2}, {"d_model", 64}, {"n_head", 4}, {"dropout", 0.0}, {"seq", 32}}}},
                               "tiny.json");
    for (const Node& n : g.nodes()) CHECK(n.kind != OpKind::dropout);
    CHECK(g.find_node("h1.mlp.residual") != kNoNode);
    CHECK_THROWS_WITH(load_model(json{{"format", "roofline-model/1"}, {"template", "gpt"}, {"config", {{"n_layers", 2}}}}, "t.json"),
                      Catch::Contains("t.json: /config/n_layers: unknown key"));
    CHECK_THROWS_WITH(load_model(json{{"format", "roofline-model/1"}, {"template", "gpt"}, {"config", {{"n_head", 5}}}}, "t.json"),
                      Catch::Contains("n_head must divide d_model"));
}

TEST_CASE("nodes may be listed in any order, the graph is built in dependency order", "[model]") {
    const Graph g = load_model_arg(test::source_path("tests/data/ok/out-of-order.json"));
    verify(g);
    std::vector<std::string> order;
    for (NodeId n : g.topological_order()) order.push_back(g.node(n).name);
    CHECK(order == std::vector<std::string>{"fc", "h", "head", "loss"});
    // The Boost edge list agrees: fc -> h -> head -> loss, one edge each.
    CHECK(g.edge_count() == 3);
    CHECK(g.consumers(g.find_tensor("fc")) == std::vector<NodeId>{g.find_node("h")});
    CHECK(g.consumers(g.find_tensor("x")) == std::vector<NodeId>{g.find_node("fc")});
    CHECK(g.tensor(g.find_tensor("fc")).desc == TensorDesc{{4, 32}, DType::bf16});
}

TEST_CASE("overrides: --batch and --seq set dims, --dtype sets the policy", "[model]") {
    const Graph g = load_model_arg("mlp", ModelOverrides{16, {}, DType::f16});
    CHECK(g.tensor(g.find_tensor("x")).desc == TensorDesc{{16, 784}, DType::f16});
    CHECK(g.tensor(g.find_tensor("fc1.w")).desc.dtype == DType::f16);
    CHECK(g.tensor(g.find_tensor("labels")).desc.dtype == DType::int64);  // explicit dtype kept
    CHECK_THROWS_WITH(load_model_arg("mlp", ModelOverrides{{}, 128, {}}), Catch::Contains("has no 'seq' entry in /dims"));
}

TEST_CASE("model loader errors name the file, the JSON path and what was expected", "[model][errors]") {
    auto load = [](const json& doc) { return load_model(doc, "m.json"); };
    const json x = {{"name", "x"}, {"shape", {4, 8}}};
    CHECK_THROWS_WITH(load(json{{"format", "roofline-model/2"}, {"nodes", json::array()}}),
                      Catch::Contains("m.json: /format: expected \"roofline-model/1\""));
    CHECK_THROWS_WITH(load(json{{"format", "roofline-model/1"},
                                {"inputs", {x}},
                                {"nodes", {{{"name", "r"}, {"op", "relu"}, {"inputs", {"x"}}, {"atrs", json::object()}}}}}),
                      Catch::Contains("m.json: /nodes/0/atrs: unknown key 'atrs'"));
    CHECK_THROWS_WITH(
        load(json{{"format", "roofline-model/1"}, {"inputs", {{{"name", "x"}, {"shape", {4, 2.5}}}}}, {"nodes", json::array()}}),
        Catch::Contains("m.json: /inputs/0/shape/1: expected an integer"));
    CHECK_THROWS_WITH(
        load(json{{"format", "roofline-model/1"}, {"inputs", {{{"name", "x"}, {"shape", {"batch"}}}}}, {"nodes", json::array()}}),
        Catch::Contains("unknown dimension 'batch'"));
    CHECK_THROWS_WITH(load(json{{"format", "roofline-model/1"}, {"inputs", {x, x}}, {"nodes", json::array()}}),
                      Catch::Contains("tensor name 'x' is defined twice"));
    CHECK_THROWS_WITH(load(json{{"format", "roofline-model/1"},
                                {"inputs", {x}},
                                {"nodes", {{{"name", "r"}, {"op", "relu"}, {"inputs", {"x"}}, {"attrs", {{"p", 0.5}}}}}}}),
                      Catch::Contains("/nodes/0: node 'r': relu has no attribute 'p'"));
    CHECK_THROWS_WITH(load(json{{"format", "roofline-model/1"},
                                {"inputs", {x}},
                                {"nodes",
                                 {{{"name", "r"}, {"op", "relu"}, {"inputs", {"x"}}},
                                  {{"name", "r"}, {"op", "relu"}, {"inputs", {"x"}}, {"outputs", {"r2"}}}}}}),
                      Catch::Contains("/nodes/1/name: node name 'r' is used twice"));
    CHECK_THROWS_WITH(load(json{{"format", "roofline-model/1"},
                                {"inputs", {x}},
                                {"nodes", {{{"name", "r"}, {"op", "relu"}, {"inputs", {"x"}}}}},
                                {"outputs", {"nope"}}}),
                      Catch::Contains("/outputs/0: unknown tensor 'nope'"));
    CHECK_THROWS_WITH(
        load(json{
            {"format", "roofline-model/1"}, {"inputs", {{{"name", "x"}, {"shape", {4}}, {"dtype", "float32"}}}}, {"nodes", json::array()}}),
        Catch::Contains("/inputs/0/dtype: unknown dtype 'float32'"));
    CHECK_THROWS_WITH(load(json{{"format", "roofline-model/1"},
                                {"inputs", {{{"name", "x"}, {"shape", {json(18446744073709551615ULL)}}}}},
                                {"nodes", json::array()}}),
                      Catch::Contains("overflows int64"));
    CHECK_THROWS_WITH(
        load(
            json{{"format", "roofline-model/1"},
                 {"inputs", {x}},
                 {"nodes",
                  {{{"name", "s"}, {"op", "split"}, {"inputs", {"x"}}, {"attrs", {{"axis", 1}, {"sizes", {4, 4}}}}, {"outputs", {"a"}}}}}}),
        Catch::Contains("split produces 2 outputs, 1 names given"));
}

TEST_CASE("verify() accepts every built-in template and checks the Boost edge list", "[model]") {
    for (const char* t : {"mlp", "gpt", "gpt2-small", "gpt2-medium", "gpt2-large", "gpt2-xl", "gpt3-175b"}) {
        INFO(t);
        const bool is_gpt = std::string(t) != "mlp";
        const Graph g = load_model_arg(t, is_gpt ? ModelOverrides{1, 64, {}} : ModelOverrides{});
        CHECK_NOTHROW(verify(g));
        CHECK(g.edges_acyclic());
        std::size_t uses = 0;
        for (const Node& n : g.nodes()) {
            for (TensorId t2 : n.inputs) uses += g.tensor(t2).producer != kNoNode ? 1 : 0;
        }
        CHECK(g.edge_count() == uses);
    }
}

TEST_CASE("Graph::add_node rejects duplicates and infers shapes immediately", "[model]") {
    Graph g;
    const TensorId x = g.add_input("x", {{2, 3}, DType::f32});
    const TensorId w = g.add_parameter("w", {{4, 3}, DType::f32});
    const NodeId n = g.add_node("fc", OpKind::linear, {x, w}, {}, {"y"});
    CHECK(g.tensor(g.node(n).outputs[0]).desc == TensorDesc{{2, 4}, DType::f32});
    CHECK_THROWS_WITH(g.add_node("fc", OpKind::relu, {x}, {}, {"z"}), Catch::Contains("node name 'fc' is used twice"));
    CHECK_THROWS_WITH(g.add_node("r", OpKind::relu, {x}, {}, {"y"}), Catch::Contains("tensor name 'y' is defined twice"));
    CHECK_THROWS_WITH(g.add_input("big", {{-1}, DType::f32}), Catch::Contains("negative dimension"));
    CHECK_NOTHROW(verify(g));
}

TEST_CASE("the README's model example loads and counts as computed by hand", "[model][docs]") {
    // examples/two-layer-mlp.json is the README example, byte for byte (checked below).
    const Graph g = load_model_arg(test::source_path("examples/two-layer-mlp.json"));
    Work w;
    for (NodeId n : g.topological_order()) w += g.work(n);
    // fc1: 2 * 32 * 784 * 256; fc2: 2 * 32 * 256 * 10
    CHECK(w.matrix_flops == 2LL * 32 * 784 * 256 + 2LL * 32 * 256 * 10);
    CHECK(g.tensor(g.find_tensor("fc2")).desc == TensorDesc{{32, 10}, DType::bf16});
    std::ifstream readme(test::source_path("README.md"));
    std::stringstream text;
    text << readme.rdbuf();
    std::ifstream example(test::source_path("examples/two-layer-mlp.json"));
    std::stringstream ex;
    ex << example.rdbuf();
    CHECK(text.str().find(ex.str()) != std::string::npos);
}
