// Hugging Face config.json -> graphs (model/hf_config.cpp): parameter counts against the published
// ones, op structure, forward FLOPs against the analytic count, training through autodiff,
// --batch/--seq overrides, and bad configs through the CLI.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include <cmath>

#include "model/autodiff.hpp"
#include "model/executor.hpp"
#include "model/hf_config.hpp"
#include "model/model_json.hpp"
#include "ops/error.hpp"
#include "support.hpp"

using namespace roofline;
using nlohmann::json;
using test::run_cli;
using test::source_path;
using test::tmp_path;

namespace {

std::string hf(const std::string& folder) { return source_path("tests/data/hf/" + folder + "/config.json"); }

std::int64_t parameter_count(const Graph& g) {
    std::int64_t n = 0;
    for (const Tensor& t : g.tensors()) {
        if (t.role == TensorRole::parameter) n += t.desc.numel();
    }
    return n;
}

Work total_work(const Graph& g) {
    Work w;
    for (NodeId n : g.topological_order()) w += g.work(n);
    return w;
}

int count_kind(const Graph& g, OpKind k) {
    int c = 0;
    for (const Node& n : g.nodes()) c += n.kind == k ? 1 : 0;
    return c;
}

const TensorDesc& output_of(const Graph& g, const std::string& node) {
    const TensorId t = g.find_tensor(node);
    REQUIRE(t >= 0);
    return g.tensor(t).desc;
}

// A fixture with one key replaced, written under the test tmp folder as <name>/config.json.
std::string patched(const std::string& folder, const std::string& name, const std::string& key, const json& value) {
    std::ifstream in(hf(folder));
    json cfg = json::parse(in);
    cfg[key] = value;
    const std::string dir = tmp_path(name);
    std::filesystem::create_directories(dir);
    std::ofstream(dir + "/config.json") << cfg.dump(2);
    return dir + "/config.json";
}

std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace

TEST_CASE("HF configs: parameter counts are the published ones, exactly", "[hf]") {
    // Exact (tolerance 0): every parameter tensor of the transformers module is declared once with
    // its state-dict shape, and tied weights once, so the sum is model.num_parameters(). The
    // published counts and their arithmetic (d hidden, I MLP, V vocab, L layers):
    struct Case {
        const char* folder;
        std::int64_t parameters;
    };
    const Case cases[] = {
        // GPT2LMHeadModel, lm_head tied to wte: wte 50257*768 + wpe 1024*768 + 12 * 7,087,872
        // (ln 2*1536, c_attn 768*2304+2304, c_proj 768*768+768, c_fc 768*3072+3072, mlp c_proj
        // 3072*768+768) + ln_f 1536 = 124,439,808.
        {"gpt2", 124'439'808},
        // LlamaForCausalLM: 2 * 32000*4096 (embed, untied lm_head) + 32 * (4*4096^2 + 3*4096*11008
        // + 2*4096) + 4096 = 6,738,415,616.
        {"Llama-2-7b-hf", 6'738'415'616},
        // GQA: k_proj and v_proj 4096*1024; 2 * 128256*4096 + 32 * (2*4096^2 + 2*4096*1024 +
        // 3*4096*14336 + 2*4096) + 4096 = 8,030,261,248.
        {"Meta-Llama-3-8B", 8'030'261'248},
        // As llama-3 with vocab 32000: 2 * 32000*4096 + 32 * 218,112,000 + 4096 = 7,241,732,096.
        {"Mistral-7B-v0.1", 7'241'732'096},
        // BertForMaskedLM (the config's architecture): BertModel's 109,482,240 less the pooler
        // (768*768+768) plus cls.predictions: transform dense 768*768+768, LayerNorm 1536, decoder
        // bias 30522 (decoder weight tied) = 109,514,298.
        {"bert-base-uncased", 109'514'298},
        // ViTForImageClassification, 1000 labels, no pooler: patch conv 768*3*16*16+768 = 590,592,
        // cls token 768, position embeddings 197*768 = 151,296, 12 layers * 7,087,872, final
        // layernorm 1536, classifier 768*1000+1000 = 769,000: 86,567,656.
        {"vit-base-patch16-224", 86'567'656},
    };
    for (const Case& c : cases) {
        INFO(c.folder);
        const Graph g = load_model_arg(hf(c.folder));
        CHECK(parameter_count(g) == c.parameters);
    }
    // BertModel (embeddings 23,837,184 + 12 layers * 7,087,872 + pooler 590,592 = 109,482,240),
    // the count usually quoted for bert-base-uncased.
    const Graph bare = load_model_arg(patched("bert-base-uncased", "bert-model", "architectures", json::array({"BertModel"})));
    CHECK(parameter_count(bare) == 109'482'240);
    // BertForSequenceClassification adds the classifier, 768*2+2 for the default 2 labels.
    const Graph cls =
        load_model_arg(patched("bert-base-uncased", "bert-cls", "architectures", json::array({"BertForSequenceClassification"})));
    CHECK(parameter_count(cls) == 109'482'240 + 1538);
    // ViTModel: pooler (768*768+768) instead of the classifier.
    const Graph vit = load_model_arg(patched("vit-base-patch16-224", "vit-model", "architectures", json::array({"ViTModel"})));
    CHECK(parameter_count(vit) == 86'567'656 - 769'000 + 590'592);
}

TEST_CASE("HF configs: the built-in presets match the published config files", "[hf]") {
    // Same keys, same graph: equal parameter counts and forward work, exactly.
    const std::pair<const char*, const char*> pairs[] = {{"llama-2-7b", "Llama-2-7b-hf"},
                                                         {"llama-3-8b", "Meta-Llama-3-8B"},
                                                         {"mistral-7b", "Mistral-7B-v0.1"},
                                                         {"bert-base-uncased", "bert-base-uncased"},
                                                         {"vit-b16", "vit-base-patch16-224"}};
    for (const auto& [preset, folder] : pairs) {
        INFO(preset);
        REQUIRE(is_hf_preset(preset));
        const ModelOverrides ov{1, std::string(preset) == "vit-b16" ? std::nullopt : std::optional<std::int64_t>(128), {}};
        const Graph a = load_model_arg(preset, ov);
        const Graph b = load_model_arg(hf(folder), ov);
        CHECK(parameter_count(a) == parameter_count(b));
        CHECK(total_work(a) == total_work(b));
    }
}

TEST_CASE("HF configs: op structure of llama, GQA, bert and vit", "[hf]") {
    const Graph l2 = load_model_arg(hf("Llama-2-7b-hf"), ModelOverrides{1, 128, {}});
    // two RMSNorms per decoder layer (input, post-attention) and the final one: 2*32 + 1
    CHECK(count_kind(l2, OpKind::rmsnorm) == 65);
    CHECK(count_kind(l2, OpKind::layernorm) == 0);
    CHECK(count_kind(l2, OpKind::attention) == 32);
    CHECK(count_kind(l2, OpKind::silu) == 32);
    CHECK(count_kind(l2, OpKind::expand) == 0);  // 32 key/value heads: repeat_kv is the identity
    // rotary embeddings on q and k of every layer: one rotate_half concat each
    CHECK(count_kind(l2, OpKind::concat) == 64);
    CHECK(output_of(l2, "model.layers.0.self_attn.k_proj").shape == Shape{1, 128, 4096});
    CHECK(output_of(l2, "lm_head").shape == Shape{1, 128, 32000});

    const Graph l3 = load_model_arg(hf("Meta-Llama-3-8B"), ModelOverrides{1, 128, {}});
    // 8 key/value heads of 128: K and V projections have 1024 outputs, repeated 4x for 32 heads
    CHECK(output_of(l3, "model.layers.0.self_attn.k_proj").shape == Shape{1, 128, 1024});
    CHECK(output_of(l3, "model.layers.0.self_attn.v_proj").shape == Shape{1, 128, 1024});
    CHECK(output_of(l3, "model.layers.0.self_attn.q_proj").shape == Shape{1, 128, 4096});
    CHECK(output_of(l3, "model.layers.31.self_attn.k_repeat").shape == Shape{1, 32, 128, 128});
    CHECK(count_kind(l3, OpKind::expand) == 64);

    const Graph bert = load_model_arg(hf("bert-base-uncased"), ModelOverrides{1, 128, {}});
    // embeddings LayerNorm, two post-LN LayerNorms per layer, the MLM transform's: 1 + 24 + 1
    CHECK(count_kind(bert, OpKind::layernorm) == 26);
    CHECK(count_kind(bert, OpKind::embedding) == 3);    // word, token type, position
    CHECK(count_kind(bert, OpKind::causal_mask) == 0);  // bidirectional
    CHECK(count_kind(bert, OpKind::gelu) == 13);

    const Graph vit = load_model_arg(hf("vit-base-patch16-224"), ModelOverrides{2, {}, {}});
    CHECK(count_kind(vit, OpKind::conv2d) == 1);
    // 224/16 = 14, 14^2 = 196 patches and the class token
    CHECK(output_of(vit, "vit.embeddings.add_position").shape == Shape{2, 197, 768});
    CHECK(count_kind(vit, OpKind::layernorm) == 25);  // before/after per layer, final
    CHECK(output_of(vit, "classifier").shape == Shape{2, 1000});
}

TEST_CASE("HF gpt2 config builds the gpt2-small template's graph", "[hf][gpt]") {
    // Both follow modeling_gpt2.py with the same sizes, dropout 0.1 and bf16. The template's MLP
    // activation is one fused tanh-gelu; gpt2's gelu_new is that function written in Python (eight
    // elementwise kernels in eager PyTorch). With activation_function "gelu_pytorch_tanh" (the fused
    // kernel) the forward work is identical, FLOP for FLOP and byte for byte.
    const ModelOverrides ov{8, 1024, {}};
    const std::string fused = patched("gpt2", "gpt2-fused-gelu", "activation_function", "gelu_pytorch_tanh");
    CHECK(total_work(load_model_arg(fused, ov)) == total_work(load_model_arg("gpt2-small", ov)));
    // gelu_new: the same but for the activation, 12 layers x 8 kernels over [8, 1024, 3072] against
    // 12 fused ones. Per element the fused gelu counts 8 FLOPs + 1 tanh; the eager ops count scale 1,
    // pow 2, scale 1, add 1, scale 1, tanh (1 transcendental), shift 1, mul 1: the same 8 + 1.
    const Work eager = total_work(load_model_arg(hf("gpt2"), ov)), one = total_work(load_model_arg(fused, ov));
    CHECK(eager.vector_flops == one.vector_flops);
    CHECK(eager.transcendentals == one.transcendentals);
    CHECK(eager.bytes() > one.bytes());  // seven more round trips through memory per MLP
}

TEST_CASE("HF llama forward FLOPs: 2 x parameters x tokens plus attention", "[hf]") {
    // Narayanan et al. 2021 (Megatron-LM, section 5.1) count a forward pass as 2 FLOPs per
    // parameter of every matrix per token plus 4 B s^2 h per layer for Q K^T and P V (the
    // materialised attention computes the full s x s scores, causal or not). The matrices are
    // every parameter but the input embedding, which is a gather.
    const double B = 2, s = 2048, L = 32, d = 4096, I = 11008, V = 32000;
    const Graph g = load_model_arg(hf("Llama-2-7b-hf"), ModelOverrides{2, 2048, {}});
    const double matrices = static_cast<double>(parameter_count(g)) - V * d - (2 * L + 1) * d;  // less embedding, norms
    CHECK(matrices == L * (4 * d * d + 3 * d * I) + d * V);
    const double analytic = 2 * matrices * B * s + 4 * B * s * s * d * L;
    const Work w = total_work(g);
    // The matrix FLOPs are exactly those products (up to double rounding of the formula).
    CHECK(static_cast<double>(w.matrix_flops) == Approx(analytic).epsilon(1e-12));
    // Everything else (RMSNorm, rotary, SiLU, softmax, residuals, loss) is O(B s (d + I + H s))
    // per layer against O(B s d (d + I + s)): 0.13% here; within 0.5%, and only ever above.
    CHECK(static_cast<double>(w.flops()) == Approx(analytic).epsilon(0.005));
    CHECK(static_cast<double>(w.flops()) > analytic);
}

TEST_CASE("HF configs train through autodiff", "[hf][autodiff]") {
    for (const char* folder : {"gpt2", "Meta-Llama-3-8B", "Mistral-7B-v0.1", "bert-base-uncased", "vit-base-patch16-224"}) {
        INFO(folder);
        const bool vit = std::string(folder) == "vit-base-patch16-224";
        const Graph fwd = load_model_arg(hf(folder), ModelOverrides{1, vit ? std::nullopt : std::optional<std::int64_t>(64), {}});
        const Graph train = build_training_step(fwd, TrainingOptions{});
        CHECK_NOTHROW(verify(train));
        // one AdamW update per parameter tensor: every parameter got a gradient of its shape
        int params = 0;
        for (const Tensor& t : fwd.tensors()) params += t.role == TensorRole::parameter ? 1 : 0;
        CHECK(count_kind(train, OpKind::adam_update) == params);
    }
    // The bare BertModel has no head, hence no loss: training says so.
    const Graph bare = load_model_arg(patched("bert-base-uncased", "bert-bare", "architectures", json::array({"BertModel"})));
    CHECK_THROWS_AS(build_training_step(bare, TrainingOptions{}), InputError);
}

TEST_CASE("tiny HF configs pass the finite-difference gradient check", "[hf][gradcheck]") {
    // The graphs run on the CPU reference executor in float64 and their autodiff gradients match
    // central differences (h = 1e-6) to a relative 1e-6, as in gradcheck_test.cpp (which derives
    // that tolerance): rotary embeddings, repeat_kv's expand, the pooler's row gather and ViT's
    // class token are differentiated correctly, not just shape-checked.
    const json configs[] = {
        {{"model_type", "llama"},
         {"vocab_size", 11},
         {"hidden_size", 16},
         {"intermediate_size", 12},
         {"num_hidden_layers", 1},
         {"num_attention_heads", 4},
         {"num_key_value_heads", 2},
         {"max_position_embeddings", 5}},
        {{"model_type", "gpt2"}, {"vocab_size", 11}, {"n_embd", 8}, {"n_layer", 1}, {"n_head", 2}, {"n_positions", 5}},
        {{"model_type", "bert"},
         {"architectures", {"BertForSequenceClassification"}},
         {"vocab_size", 11},
         {"hidden_size", 8},
         {"intermediate_size", 12},
         {"num_hidden_layers", 1},
         {"num_attention_heads", 2},
         {"max_position_embeddings", 5},
         {"num_labels", 3}},
        {{"model_type", "bert"},
         {"vocab_size", 11},
         {"hidden_size", 8},
         {"intermediate_size", 12},
         {"num_hidden_layers", 1},
         {"num_attention_heads", 2},
         {"max_position_embeddings", 5}},
        {{"model_type", "vit"},
         {"hidden_size", 8},
         {"intermediate_size", 12},
         {"num_hidden_layers", 1},
         {"num_attention_heads", 2},
         {"image_size", 4},
         {"patch_size", 2},
         {"num_channels", 2},
         {"num_labels", 3}},
    };
    for (const json& cfg : configs) {
        INFO(cfg.dump());
        const Graph fwd = load_model(cfg, "tiny.json", ModelOverrides{2, std::nullopt, DType::f64});
        std::map<TensorId, HostTensor> given;
        for (std::size_t t = 0; t < fwd.tensors().size(); ++t) {
            if (fwd.tensors()[t].producer == kNoNode)
                given[static_cast<TensorId>(t)] = deterministic_value(fwd, static_cast<TensorId>(t), 7);
        }
        TrainingOptions opt;
        opt.optimizer = Optimizer::sgd;
        opt.momentum = 0;
        opt.weight_decay = 0;
        const Graph train = build_training_step(fwd, opt);
        const auto values = execute(train, given, RefPrecision::f64);
        const auto loss_at = [&](const std::map<TensorId, HostTensor>& g) {
            return execute(fwd, g, RefPrecision::f64)[static_cast<std::size_t>(fwd.outputs().front())].data[0];
        };
        int compared = 0;
        for (const Node& n : train.nodes()) {
            if (n.kind != OpKind::sgd_update) continue;
            const TensorId p = n.inputs[0], gt = n.inputs[1];
            const std::size_t size = given[p].data.size(), step = std::max<std::size_t>(1, size / 3);
            for (std::size_t e = 0; e < size; e += step) {
                auto plus = given, minus = given;
                plus[p].data[e] += 1e-6;
                minus[p].data[e] -= 1e-6;
                const double numeric = (loss_at(plus) - loss_at(minus)) / 2e-6;
                const double analytic = values[static_cast<std::size_t>(gt)].data[e];
                INFO(fwd.tensor(p).name << "[" << e << "] analytic " << analytic << " numeric " << numeric);
                CHECK(std::fabs(analytic - numeric) / std::max({std::fabs(analytic), std::fabs(numeric), 1e-3}) < 1e-6);
                ++compared;
            }
        }
        CHECK(compared > 20);
    }
}

TEST_CASE("HF configs through the CLI: training, overrides, report", "[hf][cli]") {
    const std::string out = tmp_path("hf-llama3.json");
    const auto r = run_cli("analyze '" + hf("Meta-Llama-3-8B") + "' --mode training --batch 2 --seq 256 -q -o '" + out + "'");
    INFO(r.out);
    REQUIRE(r.code == 0);
    const json j = json::parse(slurp(out));
    CHECK(j["model"]["parameters"] == 8'030'261'248);
    CHECK(j["model"]["dims"]["batch"] == 2);
    CHECK(j["model"]["dims"]["seq"] == 256);
    // a built-in preset by name, and its export
    CHECK(run_cli("analyze vit-b16 --batch 4 -q").code == 0);
    const auto list = run_cli("model list");
    CHECK_THAT(list.out, Catch::Contains("llama-2-7b"));
    const auto exp = run_cli("model export bert-base-uncased");
    REQUIRE(exp.code == 0);
    CHECK(json::parse(exp.out)["format"] == "roofline-model/1");
}

TEST_CASE("bad HF configs: one message naming the file and the key, exit code 2", "[hf][cli][errors]") {
    const std::string bad = source_path("tests/data/hf/bad/");
    const std::string unsupported_arch = tmp_path("hf-bad-arch.json");
    std::ofstream(unsupported_arch) << json{{"format", "roofline-model/1"},
                                            {"template", "llama-2-7b"},
                                            {"config", {{"architectures", {"LlamaForSequenceClassification"}}}}}
                                           .dump();
    const std::pair<std::string, std::string> cases[] = {
        {"analyze '" + bad + "missing-key.json'", "missing-key.json: /: missing key 'hidden_size' (required for model_type 'llama')"},
        {"analyze '" + bad + "wrong-type.json'", "wrong-type.json: /num_hidden_layers: expected a positive integer, got \"12\""},
        {"analyze '" + bad + "unknown-model-type.json'",
         "unknown-model-type.json: /model_type: unsupported model_type 'falcon' (supported: gpt2, llama, mistral, bert, vit, opt, "
         "switch_transformers)"},
        {"analyze '" + unsupported_arch + "'",
         "hf-bad-arch.json: /config/architectures/0: unsupported architecture 'LlamaForSequenceClassification' for model_type 'llama'"},
        {"analyze '" + hf("vit-base-patch16-224") + "' --seq 128", "--seq given, but the model has no 'seq' entry in /dims"},
    };
    for (const auto& [args, message] : cases) {
        INFO(args);
        const auto r = run_cli(args);
        INFO(r.out);
        CHECK(r.code == 2);
        CHECK_THAT(r.out, Catch::Contains(message));
    }
}
