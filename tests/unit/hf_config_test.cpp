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

using test::slurp;

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
        CHECK(test::parameter_count(g) == c.parameters);
    }
    // BertModel (embeddings 23,837,184 + 12 layers * 7,087,872 + pooler 590,592 = 109,482,240),
    // the count usually quoted for bert-base-uncased.
    const Graph bare = load_model_arg(patched("bert-base-uncased", "bert-model", "architectures", json::array({"BertModel"})));
    CHECK(test::parameter_count(bare) == 109'482'240);
    // BertForSequenceClassification adds the classifier, 768*2+2 for the default 2 labels.
    const Graph cls =
        load_model_arg(patched("bert-base-uncased", "bert-cls", "architectures", json::array({"BertForSequenceClassification"})));
    CHECK(test::parameter_count(cls) == 109'482'240 + 1538);
    // ViTModel: pooler (768*768+768) instead of the classifier.
    const Graph vit = load_model_arg(patched("vit-base-patch16-224", "vit-model", "architectures", json::array({"ViTModel"})));
    CHECK(test::parameter_count(vit) == 86'567'656 - 769'000 + 590'592);
}

TEST_CASE("HF configs: the built-in presets match the published config files", "[hf]") {
    // Same keys, same graph: equal parameter counts and forward work, exactly.
    const std::pair<const char*, const char*> pairs[] = {{"llama-2-7b", "Llama-2-7b-hf"},
                                                         {"llama-3-8b", "Meta-Llama-3-8B"},
                                                         {"mistral-7b", "Mistral-7B-v0.1"},
                                                         {"bert-base-uncased", "bert-base-uncased"},
                                                         {"vit-b16", "vit-base-patch16-224"},
                                                         {"mixtral-8x7b", "Mixtral-8x7B-v0.1"},
                                                         {"qwen1.5-moe-a2.7b", "Qwen1.5-MoE-A2.7B-Chat"},
                                                         {"qwen2.5-1.5b", "Qwen2.5-1.5B-Instruct"},
                                                         {"gemma-7b", "gemma-7b"},
                                                         {"falcon-7b", "falcon-7b"},
                                                         {"phi-2", "phi-2"},
                                                         {"roberta-base", "roberta-base"},
                                                         {"phi-3-mini-4k", "Phi-3-mini-4k-instruct"},
                                                         {"t5-small", "t5-small"},
                                                         {"bart-large", "bart-large"}};
    for (const auto& [preset, folder] : pairs) {
        INFO(preset);
        REQUIRE(is_hf_preset(preset));
        const ModelOverrides ov{1, std::string(preset) == "vit-b16" ? std::nullopt : std::optional<std::int64_t>(128), {}};
        const Graph a = load_model_arg(preset, ov);
        const Graph b = load_model_arg(hf(folder), ov);
        CHECK(test::parameter_count(a) == test::parameter_count(b));
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
    const double matrices = static_cast<double>(test::parameter_count(g)) - V * d - (2 * L + 1) * d;  // less embedding, norms
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
    for (const char* folder : {"gpt2", "Meta-Llama-3-8B", "Mistral-7B-v0.1", "bert-base-uncased", "vit-base-patch16-224",
                               "Mixtral-8x7B-v0.1", "Qwen1.5-MoE-A2.7B-Chat", "Qwen2.5-1.5B-Instruct", "gemma-7b", "Phi-3-mini-4k-instruct",
                               "falcon-7b", "phi-2", "roberta-base", "t5-small", "bart-large"}) {
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
    CHECK(run_cli("analyze mixtral-8x7b --seq 256 -q").code == 0);
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
         "unknown-model-type.json: /model_type: unsupported model_type 'gpt_neox' (supported: gpt2, llama, mistral, qwen2, gemma, mixtral, "
         "qwen2_moe, phi3, falcon, phi, bert, roberta, deberta-v2, vit, opt, switch_transformers, t5, bart)"},
        {"analyze '" + unsupported_arch + "'",
         "hf-bad-arch.json: /config/architectures/0: unsupported architecture 'LlamaForSequenceClassification' for model_type 'llama'"},
        {"analyze '" + hf("vit-base-patch16-224") + "' --seq 128", "--seq given, but the model has no 'seq' entry in /dims"},
        // the families of issue #21 part 2
        {"analyze '" + bad + "mixtral-missing-experts.json' -q",
         "mixtral-missing-experts.json: /: missing key 'num_local_experts' (required for model_type 'mixtral')"},
        {"analyze '" + bad + "qwen2-moe-wrong-type.json' -q",
         "qwen2-moe-wrong-type.json: /num_experts_per_tok: expected a positive integer, got \"4\""},
        {"analyze '" + patched("Mixtral-8x7B-v0.1", "mixtral-k", "num_experts_per_tok", 9) + "' -q",
         "/num_experts_per_tok: num_experts_per_tok 9 exceeds the 8 experts"},
        {"analyze '" + patched("Qwen1.5-MoE-A2.7B-Chat", "qwen-moe-only-bad", "mlp_only_layers", json::array({1, "2"})) + "' -q",
         "/mlp_only_layers/1: expected a non-negative integer, got \"2\""},
        {"analyze '" + patched("gemma-7b", "gemma-act", "hidden_activation", "gelu_11") + "' -q",
         "/hidden_activation: unsupported activation 'gelu_11'"},
        {"analyze '" + bad + "falcon-wrong-type.json' -q", "falcon-wrong-type.json: /multi_query: expected true or false, got \"true\""},
        {"analyze '" + patched("phi-2", "phi-no-inter", "intermediate_size", nullptr) + "' -q",
         "/intermediate_size: expected a positive integer, got null"},
        {"analyze '" + patched("phi-2", "phi-qk", "qk_layernorm", true) + "' -q",
         "/qk_layernorm: not supported: LayerNorm on queries and keys"},
        {"analyze '" + patched("roberta-base", "roberta-positions", "max_position_embeddings", 2) + "' -q",
         "/max_position_embeddings: max_position_embeddings 2 leaves no position after pad_token_id 1 + 1"},
        {"analyze '" + patched("t5-small", "t5-proj", "feed_forward_proj", "gated-") + "' -q",
         "/feed_forward_proj: expected \"<activation>\" or \"gated-<activation>\", got \"gated-\""},
        {"analyze '" + patched("bart-large", "bart-heads", "encoder_attention_heads", 5) + "' -q",
         "/encoder_attention_heads: encoder_attention_heads 5 does not divide d_model 1024"},
        {"analyze '" + patched("falcon-7b", "falcon-heads", "num_attention_heads", 70) + "' -q",
         "/num_attention_heads: num_attention_heads 70 does not divide hidden_size 4544"},
    };
    for (const auto& [args, message] : cases) {
        INFO(args);
        const auto r = run_cli(args);
        INFO(r.out);
        CHECK(r.code == 2);
        CHECK_THAT(r.out, Catch::Contains(message));
    }
}

// ---- issue #21 part 2: the llama family's new members (qwen2, gemma) and mixtures of experts
// (mixtral, qwen2_moe). tests/tools/hf_param_counts.py counts the same fixtures independently.

TEST_CASE("HF mixtral, qwen2_moe, qwen2, gemma, phi3, falcon, phi, roberta, t5, bart: parameter counts, exactly", "[hf][moe]") {
    // Expected: model.num_parameters() of the transformers class built from the fixture on the meta
    // device (tests/tools/hf_param_counts.py: transformers 4.40.2, accelerate 0.27.2, torch 1.13,
    // 2026-11-26; tied weights once). Exact (tolerance 0): every parameter tensor is declared once
    // with its state-dict shape, every expert counted. The arithmetic, and the model cards' figures:
    struct Case {
        const char* folder;
        std::int64_t parameters;
    };
    const Case cases[] = {
        // MixtralForCausalLM (card: "46.7B"): embed + untied lm_head 2*32000*4096 = 262,144,000;
        // per layer q, o 4096^2, k, v 4096*1024 (GQA, 8 KV heads): 41,943,040; router 8*4096;
        // 8 experts * 3*4096*14336 = 1,409,286,144; two norms 8192: 1,451,270,144; 32 layers;
        // final norm 4096.
        {"Mixtral-8x7B-v0.1", 46'702'792'704},
        // Qwen2MoeForCausalLM (card: "14.3B parameters in total"): 2*151936*2048 = 622,329,856;
        // per layer attention 4*2048^2 + q/k/v biases 3*2048 = 16,783,360; router 60*2048 =
        // 122,880; 60 experts * 3*2048*1408 = 519,045,120; shared expert 3*2048*5632 = 34,603,008;
        // shared_expert_gate 2048; norms 4096: 570,560,512; 24 layers; final norm 2048.
        {"Qwen1.5-MoE-A2.7B-Chat", 14'315'784'192},
        // Qwen2ForCausalLM (card: "1.54B"), lm_head tied: 151936*1536 = 233,373,696; per layer q
        // 1536^2+1536, k and v 1536*256+256 each (2 KV heads of 128), o 1536^2 (no bias), MLP
        // 3*1536*8960, norms 3072: 46,797,824; 28 layers; final norm 1536.
        {"Qwen2.5-1.5B-Instruct", 1'543'714'304},
        // GemmaForCausalLM (the Hub's safetensors total "8.54B"), lm_head tied: 256000*3072 =
        // 786,432,000; per layer q, k, v 3072*4096 (16 heads of head_dim 256 = 4096, wider than the
        // hidden 3072), o 4096*3072, MLP 3*3072*24576, norms 6144: 276,830,208; 28 layers; 3072.
        {"gemma-7b", 8'537'680'896},
        // FalconForCausalLM (card: "7B"), lm_head tied: 65024*4544 = 295,469,056; per layer one
        // LayerNorm 9088 (parallel block), query_key_value 4544*(71+2)*64 = 21,229,568 (multi-query:
        // one key and one value head), dense 4544^2, MLP 2*4544*18176, no biases: 207,070,080; 32
        // layers; ln_f 9088.
        {"falcon-7b", 6'921'720'704},
        // PhiForCausalLM (card: "2.7 billion parameters"): embed 51200*2560 = 131,072,000; per layer
        // LayerNorm 5120, q/k/v/dense 4*(2560^2+2560), fc1 2560*10240+10240, fc2 10240*2560+2560:
        // 78,671,360; 32 layers; final_layernorm 5120; lm_head with bias 51200*2560+51200.
        {"phi-2", 2'779'683'840},
        // RobertaForMaskedLM (card: "125M"): embeddings 50265*768 + 514*768 (positions) + 1*768
        // (one token type) + LayerNorm 1536 = 39,037,440; 12 BERT layers * 7,087,872; lm_head dense
        // 768*768+768, layer_norm 1536, bias 50265 (decoder tied): 124,697,433 (counted on the real
        // device: the meta device unties the decoder bias).
        {"roberta-base", 124'697'433},
        // Phi3ForCausalLM (card: "3.8B"; counted with transformers 4.41.2, the first with phi3):
        // embed + untied lm_head 2*32064*3072 = 197,001,216; per layer qkv_proj 3072*(3*3072),
        // o_proj 3072^2, gate_up_proj 3072*2*8192, down_proj 8192*3072, norms 6144: 113,252,352; 32
        // layers; final norm 3072.
        {"Phi-3-mini-4k-instruct", 3'821'079'552},
        // T5ForConditionalGeneration (T5WithLMHeadModel; card: "60 million parameters"), lm_head
        // tied to shared: shared 32128*512 = 16,449,536; encoder 6 blocks * (q/k/v/o 4*512^2, FF
        // 2*512*2048, two T5 LayerNorms 1024) + relative bias 32*8 + final norm = 18,881,280;
        // decoder 6 * (self and cross attention 8*512^2, FF, three norms) + 256 + 512 = 25,175,808.
        {"t5-small", 60'506'624},
        // BartForConditionalGeneration (card: "406M"; final_logits_bias is a buffer), lm_head tied:
        // shared 50265*1024 = 51,471,360; encoder positions 1026*1024, layernorm_embedding 2048, 12
        // layers * (q/k/v/out_proj 4*(1024^2+1024), fc1 1024*4096+4096, fc2 4096*1024+1024, two
        // LayerNorms) = 152,207,360; decoder the same with cross-attention and a third LayerNorm per
        // layer = 202,612,736.
        {"bart-large", 406'291'456},
    };
    for (const Case& c : cases) {
        INFO(c.folder);
        CHECK(test::parameter_count(load_model_arg(hf(c.folder), ModelOverrides{1, 64, {}})) == c.parameters);
    }
    // The bare Qwen2MoeModel: no lm_head (151936*2048 fewer).
    const Graph bare = load_model_arg(patched("Qwen1.5-MoE-A2.7B-Chat", "qwen-moe-bare", "architectures", json::array({"Qwen2MoeModel"})),
                                      ModelOverrides{1, 64, {}});
    CHECK(test::parameter_count(bare) == 14'315'784'192 - 151936 * 2048);
    // RobertaModel (transformers: 124,645,632): the pooler (768*768+768) instead of lm_head;
    // RobertaForSequenceClassification (124,647,170 for 2 labels): no pooler, classifier dense
    // 768*768+768 and out_proj 768*2+2.
    const auto roberta = [&](const char* arch) {
        return test::parameter_count(
            load_model_arg(patched("roberta-base", arch, "architectures", json::array({arch})), ModelOverrides{1, 64, {}}));
    };
    CHECK(roberta("RobertaModel") == 124'645'632);
    CHECK(roberta("RobertaForSequenceClassification") == 124'647'170);
    CHECK(roberta("RobertaForCausalLM") == 124'697'433);  // the same lm_head as the MLM
}

TEST_CASE("HF deberta-v2: parameter counts, exactly, and the disentangled attention's FLOPs", "[hf]") {
    // Expected: transformers 4.40.2's num_parameters() of each class built from the fixture with
    // real weights (tests/tools/hf_param_counts.py --real, torch 1.13, 2026-11-27; the meta device
    // unties the MLM decoder's bias, as BERT's). deberta-v3-base (card: "86M backbone parameters
    // with a vocabulary containing 128K tokens which introduces 98M parameters in the Embedding
    // layer"): word embeddings 128100*768 + LayerNorm 1536 = 98,382,336; relative embeddings 2*256
    // buckets *768 + their LayerNorm = 394,752; 12 layers * 7,087,872 (q/k/v/dense 4*(768^2+768),
    // MLP 2*768*3072+3072+768, two LayerNorms; share_att_key: the positions reuse query_proj and
    // key_proj); MLM head dense 768^2+768, LayerNorm, bias 128100 (decoder tied) = 720,228.
    CHECK(test::parameter_count(load_model_arg(hf("deberta-v3-base"), ModelOverrides{1, 64, {}})) == 184'551'780);
    const auto arch = [&](const char* a) {
        return test::parameter_count(
            load_model_arg(patched("deberta-v3-base", a, "architectures", json::array({a})), ModelOverrides{1, 64, {}}));
    };
    CHECK(arch("DebertaV2Model") == 183'831'552);                      // no head, no pooler
    CHECK(arch("DebertaV2ForSequenceClassification") == 184'423'682);  // ContextPooler 768^2+768, classifier 768*2+2
    // DeBERTa-v2 style: own pos_key_proj and pos_query_proj (2*(768^2+768) a layer), absolute
    // positions (512*768) and 2 token types, 2*512 relative positions (max_relative_positions
    // -1: max_position_embeddings) without their LayerNorm: 199,512,420 (the same tool).
    std::ifstream in(hf("deberta-v3-base"));
    json v2 = json::parse(in);
    v2.update({{"share_att_key", false},
               {"position_biased_input", true},
               {"type_vocab_size", 2},
               {"position_buckets", -1},
               {"norm_rel_ebd", "none"}});
    CHECK(test::parameter_count(load_model(v2, "deberta-v2-style.json", ModelOverrides{1, 64, {}})) == 199'512'420);

    // FLOPs, batch 2 x 256 tokens (exact for the GEMMs): per layer q, k, v, o 8 B s d^2, MLP 4 B s d I,
    // scores and context 4 B s^2 d, c2p and p2c 2 x 2 B s (2 span) d, the two position projections
    // 2 x 2 (2 span) d^2 (once, not per token); MLM head 2 B s d^2 + 2 B s d V. Against 2 x params x
    // tokens this is the dense count plus attention's s^2 and the relative terms.
    const double L = 12, B = 2, s = 256, d = 768, I = 3072, span = 256, V = 128100;
    const double expected = L * (8 * B * s * d * d + 4 * B * s * d * I + 4 * B * s * s * d + 8 * B * s * span * d + 8 * span * d * d) +
                            2 * B * s * d * d + 2 * B * s * d * V;
    const Graph g = load_model_arg(hf("deberta-v3-base"), ModelOverrides{2, 256, {}});
    CHECK(static_cast<double>(total_work(g).matrix_flops) == expected);
    CHECK(output_of(g, "deberta.encoder.layer.0.attention.self.c2p").shape == Shape{2, 12, 256, 512});
    CHECK(output_of(g, "deberta.encoder.layer.0.attention.self.p2c.gather").shape == Shape{2, 12, 256, 256});
    CHECK(count_kind(g, OpKind::softmax) == 12);

    // Bad keys: exit 2 naming the key.
    const auto conv = run_cli("analyze '" + patched("deberta-v3-base", "deberta-conv", "conv_kernel_size", 3) + "' -q");
    CHECK(conv.code == 2);
    CHECK_THAT(conv.out, Catch::Contains("/conv_kernel_size: not supported: the convolution after the first layer"));
    const auto att = run_cli("analyze '" + patched("deberta-v3-base", "deberta-att", "pos_att_type", "c2p|p2p") + "' -q");
    CHECK(att.code == 2);
    CHECK_THAT(att.out, Catch::Contains("/pos_att_type: unknown attention type 'p2p' (expected c2p, p2c)"));
}

TEST_CASE("HF mixtral and qwen2_moe: top-k routing, experts and shared expert", "[hf][moe]") {
    // Mixtral at batch 1, seq 4096: 4096 tokens x top-2 = 8192 routed rows, 1024 per expert.
    const Graph mx = load_model_arg(hf("Mixtral-8x7B-v0.1"), ModelOverrides{1, 4096, {}});
    const std::string b0 = "model.layers.0.block_sparse_moe.";
    CHECK(output_of(mx, b0 + "gate").shape == Shape{1, 4096, 8});
    CHECK(output_of(mx, b0 + "routing.topk").shape == Shape{1, 4096, 2});
    CHECK(mx.find_node(b0 + "routing.normalize") != kNoNode);  // Mixtral renormalises the top-2 weights
    for (int e = 0; e < 8; ++e) CHECK(output_of(mx, b0 + "experts." + std::to_string(e) + ".w2").shape == Shape{1024, 4096});
    CHECK(output_of(mx, b0 + "combine").shape == Shape{1, 4096, 4096});
    CHECK(count_kind(mx, OpKind::silu) == 32 * 8);  // one SwiGLU per expert per layer
    CHECK(count_kind(mx, OpKind::attention) == 32);
    // sliding_window null: the default sequence is max_position_embeddings
    CHECK(load_model_arg(hf("Mixtral-8x7B-v0.1")).dims.at("seq") == 32768);

    // Qwen1.5-MoE at seq 4096: 4096 x top-4 = 16384 rows over 60 experts = 273 rows each and 4
    // left over: experts 0-3 run 274. Any seq works; the rows always add up.
    const Graph qm = load_model_arg(hf("Qwen1.5-MoE-A2.7B-Chat"), ModelOverrides{1, 4096, {}});
    const std::string m0 = "model.layers.0.mlp.";
    std::int64_t rows = 0;
    for (int e = 0; e < 60; ++e) rows += output_of(qm, m0 + "experts." + std::to_string(e) + ".gather").shape[0];
    CHECK(rows == 16384);
    CHECK(output_of(qm, m0 + "experts.3.gather").shape == Shape{274, 2048});
    CHECK(output_of(qm, m0 + "experts.4.gather").shape == Shape{273, 2048});
    CHECK(output_of(qm, m0 + "experts.0.down_proj").shape == Shape{274, 2048});
    // one token (a decode-sized step): its 4 copies go to experts 0-3, the other 56 run no rows
    const Graph one = load_model_arg(hf("Qwen1.5-MoE-A2.7B-Chat"), ModelOverrides{1, 1, {}});
    CHECK(output_of(one, m0 + "experts.3.down_proj").shape == Shape{1, 2048});
    CHECK(output_of(one, m0 + "experts.4.down_proj").shape == Shape{0, 2048});
    CHECK(total_work(one).matrix_flops > 0);
    CHECK(qm.find_node(m0 + "routing.normalize") == kNoNode);  // norm_topk_prob false
    CHECK(output_of(qm, m0 + "shared_expert.down_proj").shape == Shape{1, 4096, 2048});
    CHECK(output_of(qm, m0 + "shared_expert_gate").shape == Shape{1, 4096, 1});
    CHECK(count_kind(qm, OpKind::sigmoid) == 24);  // the shared expert's gate, every layer
    // q/k/v with biases, o_proj without (Qwen2MoeAttention)
    CHECK(qm.find_tensor("model.layers.0.self_attn.k_proj.bias") >= 0);
    CHECK(qm.find_tensor("model.layers.0.self_attn.o_proj.bias") < 0);
    // decoder_sparse_step 2: layers 1, 3, ... sparse, the others a dense MLP of intermediate_size
    const Graph step =
        load_model_arg(patched("Qwen1.5-MoE-A2.7B-Chat", "qwen-moe-step", "decoder_sparse_step", 2), ModelOverrides{1, 64, {}});
    CHECK(step.find_node("model.layers.0.mlp.gate") == kNoNode);
    CHECK(output_of(step, "model.layers.0.mlp.down_proj").shape == Shape{1, 64, 2048});
    CHECK(step.find_node("model.layers.1.mlp.gate") != kNoNode);
    // mlp_only_layers: dense wherever listed
    const Graph only = load_model_arg(patched("Qwen1.5-MoE-A2.7B-Chat", "qwen-moe-only", "mlp_only_layers", json::array({0, 5})),
                                      ModelOverrides{1, 64, {}});
    CHECK(only.find_node("model.layers.0.mlp.gate") == kNoNode);
    CHECK(only.find_node("model.layers.5.mlp.gate") == kNoNode);
    CHECK(only.find_node("model.layers.1.mlp.gate") != kNoNode);
}

TEST_CASE("HF qwen2, gemma and phi3: op structure", "[hf][moe]") {
    const Graph q = load_model_arg(hf("Qwen2.5-1.5B-Instruct"), ModelOverrides{1, 128, {}});
    CHECK(q.find_tensor("model.layers.0.self_attn.q_proj.bias") >= 0);
    CHECK(q.find_tensor("model.layers.0.self_attn.o_proj.bias") < 0);
    CHECK(output_of(q, "model.layers.0.self_attn.k_proj").shape == Shape{1, 128, 256});  // 2 KV heads of 128
    CHECK(q.find_tensor("lm_head.weight") < 0);                                          // tied
    CHECK(output_of(q, "lm_head").shape == Shape{1, 128, 151936});

    const Graph g = load_model_arg(hf("gemma-7b"), ModelOverrides{1, 128, {}});
    // embeddings times sqrt(3072)
    CHECK(g.node(g.find_node("model.embed_scale")).attrs.get_double("factor", 0) == Approx(std::sqrt(3072.0)));
    // GemmaRMSNorm's (1 + weight): 2 per layer and the final norm
    CHECK(count_kind(g, OpKind::shift) == 2 * 28 + 1);
    // gelu_pytorch_tanh: one fused gelu per layer
    CHECK(count_kind(g, OpKind::gelu) == 28);
    CHECK(output_of(g, "model.layers.0.self_attn.q_proj").shape == Shape{1, 128, 4096});  // 16 x head_dim 256
    CHECK(output_of(g, "model.layers.0.self_attn.o_proj").shape == Shape{1, 128, 3072});

    const Graph p3 = load_model_arg(hf("Phi-3-mini-4k-instruct"));
    CHECK(p3.dims.at("seq") == 2047);  // capped at sliding_window, as mistral's
    CHECK(output_of(p3, "model.layers.0.self_attn.qkv_proj").shape == Shape{1, 2047, 3 * 3072});
    CHECK(output_of(p3, "model.layers.0.mlp.gate_up_proj").shape == Shape{1, 2047, 2 * 8192});
    CHECK(p3.find_tensor("model.layers.0.self_attn.qkv_proj.bias") < 0);  // attention_bias is ignored
    CHECK(count_kind(p3, OpKind::dropout) == 0);                          // resid_pdrop and embd_pdrop 0
}

TEST_CASE("HF new families forward FLOPs: 2 x active parameters x tokens plus attention", "[hf][moe]") {
    // As the llama test above (Narayanan et al. 2021): 2 FLOPs per active matrix weight per token,
    // plus 4 B s^2 (heads * head_dim) per layer for Q K^T and P V. Active: attention, the router,
    // k of the E experts (every token runs exactly k expert MLPs: the routed rows add up to
    // B * s * k) and, for qwen2_moe, the shared expert and its gate; lm_head. The matrix FLOPs are
    // exactly that (tolerance: double rounding); the total adds RMSNorm, rotary, softmax, the
    // routing softmax and weights, SwiGLU products and the loss, O(B s (d + E + k I)) per layer:
    // within 1%, and only ever above.
    // width: heads * head_dim, the attention's Q K^T and P V inner size.
    const auto check = [](const char* folder, std::int64_t batch, std::int64_t seq, double active, double width, double layers) {
        INFO(folder);
        const double B = static_cast<double>(batch), s = static_cast<double>(seq);
        const double analytic = 2 * active * B * s + 4 * B * s * s * width * layers;
        const Work w = total_work(load_model_arg(hf(folder), ModelOverrides{batch, seq, {}}));
        CHECK(static_cast<double>(w.matrix_flops) == Approx(analytic).epsilon(1e-12));
        CHECK(static_cast<double>(w.flops()) == Approx(analytic).epsilon(0.01));
        CHECK(static_cast<double>(w.flops()) > analytic);
    };
    {
        // Mixtral-8x7B: 12.7B active matrix weights (card: 12.9B active parameters with the embedding)
        const double L = 32, d = 4096, kv = 1024, I = 14336, E = 8, k = 2, V = 32000;
        const double active = L * (2 * d * d + 2 * d * kv + E * d + k * 3 * d * I) + d * V;
        CHECK(active == 12'748'587'008.0);
        check("Mixtral-8x7B-v0.1", 2, 1024, active, d, L);
    }
    {
        // Qwen1.5-MoE-A2.7B: 2.38B active matrix weights (card: 2.7B activated with the embedding);
        // seq 2000: 8000 routed rows over 60 experts, 133 or 134 each
        const double L = 24, d = 2048, E = 60, k = 4, Ie = 1408, Is = 5632, V = 151936;
        const double active = L * (4 * d * d + E * d + k * 3 * d * Ie + 3 * d * Is + d) + d * V;
        CHECK(active == 2'377'760'768.0);
        check("Qwen1.5-MoE-A2.7B-Chat", 1, 2000, active, d, L);
    }
    // Dense: q projection d x q (q = heads * head_dim), k and v d x kv, o q x d, MLP 3 d I (SwiGLU)
    // or 2 d I (falcon, phi), lm_head d V (tied or not).
    const auto dense = [](double L, double d, double q, double kv, double mlp, double V) {
        return L * (2 * d * q + 2 * d * kv + mlp) + d * V;
    };
    check("Qwen2.5-1.5B-Instruct", 1, 1024, dense(28, 1536, 1536, 256, 3 * 1536 * 8960.0, 151936), 1536, 28);
    check("gemma-7b", 1, 1024, dense(28, 3072, 4096, 4096, 3 * 3072 * 24576.0, 256000), 4096, 28);
    // falcon: one fused projection of 71 query + 1 key + 1 value heads of 64
    check("falcon-7b", 1, 1024, dense(32, 4544, 4544, 64, 2 * 4544 * 18176.0, 65024), 4544, 32);
    check("phi-2", 1, 1024, dense(32, 2560, 2560, 2560, 2 * 2560 * 10240.0, 51200), 2560, 32);
    check("Phi-3-mini-4k-instruct", 1, 1024, dense(32, 3072, 3072, 3072, 3 * 3072 * 8192.0, 32064), 3072, 32);
    // t5-small, decoder as long as the encoder: per token 6 encoder layers (4 d^2 attention, 2 d d_ff)
    // and 6 decoder layers (8 d^2: self and cross attention), lm_head d V; 18 attentions of
    // 4 B s^2 d (6 + 12), written as the check's 4 B s^2 width layers with width d, layers 18.
    // bart-large: 12 encoder layers (4 d^2, 2 d ffn), 12 decoder layers (8 d^2, 2 d ffn), lm_head;
    // 36 attentions (12 + 24)
    check("bart-large", 1, 512, 12 * (4 * 1024 * 1024 + 2 * 1024 * 4096.0) + 12 * (8 * 1024 * 1024 + 2 * 1024 * 4096.0) + 1024 * 50265.0,
          1024, 36);
    check("t5-small", 2, 512, 6 * (4 * 512 * 512 + 2 * 512 * 2048.0) + 6 * (8 * 512 * 512 + 2 * 512 * 2048.0) + 512 * 32128.0, 512, 18);
    // roberta-base (bidirectional: the full s x s scores, as any attention here): q, k, v, o d x d,
    // MLP 2 d I, lm_head's dense d x d and decoder d V
    check("roberta-base", 2, 512, dense(12, 768, 768, 768, 2 * 768 * 3072.0, 50265) + 768 * 768, 768, 12);
}

TEST_CASE("HF roberta: embeddings, heads and the default sequence", "[hf][moe]") {
    const Graph mlm = load_model_arg(hf("roberta-base"));
    CHECK(mlm.dims.at("seq") == 512);  // 514 position rows less pad_token_id 1 and one
    CHECK(output_of(mlm, "roberta.embeddings.position_embeddings").shape == Shape{1, 512, 768});
    CHECK(output_of(mlm, "lm_head.logits").shape == Shape{1, 512, 50265});
    CHECK(mlm.find_tensor("roberta.pooler.dense.weight") < 0);
    CHECK(count_kind(mlm, OpKind::gelu) == 12 + 1);  // 12 layers, lm_head's gelu
    const Graph seq =
        load_model_arg(patched("roberta-base", "roberta-seq", "architectures", json::array({"RobertaForSequenceClassification"})),
                       ModelOverrides{4, 128, {}});
    CHECK(output_of(seq, "classifier.out_proj").shape == Shape{4, 2});
    CHECK(count_kind(seq, OpKind::tanh) == 1);  // the classification head's dense + tanh, no pooler
    CHECK(seq.find_tensor("roberta.pooler.dense.weight") < 0);
}

TEST_CASE("HF t5: dense T5 blocks, relu or gated feed-forward", "[hf][moe]") {
    const Graph t5 = load_model_arg(hf("t5-small"), ModelOverrides{1, 128, {}});
    CHECK(output_of(t5, "encoder.block.0.layer.1.DenseReluDense.wi").shape == Shape{1, 128, 2048});
    CHECK(output_of(t5, "decoder.block.5.layer.2.DenseReluDense.wo").shape == Shape{1, 128, 512});
    CHECK(count_kind(t5, OpKind::relu) == 12);
    CHECK(count_kind(t5, OpKind::softmax) == 6 + 12);  // encoder self, decoder self and cross attention
    CHECK(t5.find_tensor("router_jitter") < 0);
    // feed_forward_proj "gated-gelu" (T5 v1.1): wi_0, wi_1, gelu_new spelled out
    const Graph gated = load_model_arg(patched("t5-small", "t5-gated", "feed_forward_proj", "gated-gelu"), ModelOverrides{1, 128, {}});
    CHECK(gated.find_tensor("encoder.block.0.layer.1.DenseReluDense.wi_1.weight") >= 0);
    CHECK(count_kind(gated, OpKind::tanh) == 12);
    CHECK(test::parameter_count(gated) == 60'506'624 + 12 * 512 * 2048);  // wi_1 in each of the 12 blocks
}

TEST_CASE("HF bart: post-LN encoder-decoder with learned positions", "[hf][moe]") {
    const Graph g = load_model_arg(hf("bart-large"), ModelOverrides{1, 256, {}});
    CHECK(g.dims.at("seq") == 256);
    CHECK(load_model_arg(hf("bart-large")).dims.at("seq") == 1024);  // max_position_embeddings
    // layernorm_embedding and two LayerNorms per encoder layer, three per decoder layer
    CHECK(count_kind(g, OpKind::layernorm) == (1 + 2 * 12) + (1 + 3 * 12));
    CHECK(count_kind(g, OpKind::attention) == 12 + 2 * 12);
    CHECK(g.tensor(g.find_tensor("model.encoder.embed_positions.weight")).desc.shape == Shape{1026, 1024});  // offset 2
    CHECK(output_of(g, "model.decoder.layers.11.encoder_attn.k_proj").shape == Shape{1, 256, 1024});
    CHECK(output_of(g, "lm_logits").shape == Shape{1, 256, 50265});
    CHECK(g.find_tensor("final_logits_bias") >= 0);  // an input: a buffer, not a parameter
}

TEST_CASE("HF falcon and phi: op structure", "[hf][moe]") {
    const Graph f = load_model_arg(hf("falcon-7b"), ModelOverrides{1, 128, {}});
    // multi-query: 71 query heads and one key/value head in one projection, viewed as one group of
    // 71 + 2 heads and split
    CHECK(output_of(f, "transformer.h.0.self_attention.query_key_value").shape == Shape{1, 128, 73 * 64});
    CHECK(output_of(f, "transformer.h.0.self_attention.groups").shape == Shape{1, 128, 1, 73, 64});
    CHECK(output_of(f, "transformer.h.0.self_attention.k_repeat").shape == Shape{1, 71, 128, 64});
    CHECK(count_kind(f, OpKind::layernorm) == 32 + 1);  // parallel block: one LayerNorm per layer, ln_f
    CHECK(count_kind(f, OpKind::gelu) == 32);
    CHECK(f.find_tensor("lm_head.weight") < 0);  // tied to the word embeddings
    // new_decoder_architecture with 8 key/value groups (falcon-40b's layout): ln_attn and ln_mlp
    json cfg40 = {{"model_type", "falcon"},          {"vocab_size", 65024}, {"hidden_size", 8192},
                  {"num_attention_heads", 128},      {"num_kv_heads", 8},   {"num_hidden_layers", 2},
                  {"new_decoder_architecture", true}};
    const Graph f40 = load_model(cfg40, "falcon-40b-like.json", ModelOverrides{1, 64, {}});
    CHECK(output_of(f40, "transformer.h.0.self_attention.groups").shape == Shape{1, 64, 8, 18, 64});
    CHECK(count_kind(f40, OpKind::layernorm) == 2 * 2 + 1);
    // alibi (falcon-rw): no rotary, the bias added to the spelled-out scores
    cfg40["alibi"] = true;
    const Graph rw = load_model(cfg40, "falcon-alibi.json", ModelOverrides{1, 64, {}});
    CHECK(rw.find_tensor("rope.cos") < 0);
    CHECK(output_of(rw, "transformer.h.1.self_attention.add_alibi").shape == Shape{1, 128, 64, 64});

    const Graph p = load_model_arg(hf("phi-2"), ModelOverrides{1, 128, {}});
    // partial rotary: int(0.4 * 80) = 32 of the 80 head features rotated
    CHECK(output_of(p, "model.layers.0.self_attn.q_rope.rot").shape == Shape{1, 32, 128, 32});
    CHECK(output_of(p, "model.layers.0.self_attn.q_rope").shape == Shape{1, 32, 128, 80});
    CHECK(p.find_tensor("lm_head.bias") >= 0);
    CHECK(count_kind(p, OpKind::tanh) == 32);         // gelu_new spelled out, one tanh per layer
    CHECK(count_kind(p, OpKind::dropout) == 2 * 32);  // resid_pdrop 0.1 on attention and MLP outputs
}
