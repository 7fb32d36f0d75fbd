// Hugging Face models of the public NeuSight end-to-end measurements
// (tests/data/public/neusight/configs/, copies of the public NeuSight configs, tests/data/public/neusight/README.md):
// gpt2_large, gpt3_xl, gpt3_27 (GPT2LMHeadModel), bert_large (BertLMHeadModel), opt_13
// (OPTForCausalLM) and switchxl4 (SwitchTransformersForConditionalGeneration). Every config loads
// and builds for inference and for a training step without optimizer (--optimizer none, what the
// measurements time); parameter counts are exact; eager activations are spelled out op for op;
// tiny OPT, Switch and BERT-decoder graphs pass the finite-difference gradient check; bad configs
// name the file and the JSON path.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "model/autodiff.hpp"
#include "model/executor.hpp"
#include "model/hf_config.hpp"
#include "model/model_json.hpp"
#include "ops/error.hpp"
#include "ops/op_rule.hpp"
#include "support.hpp"

using namespace roofline;
using nlohmann::json;
using test::run_cli;
using test::source_path;
using test::tmp_path;

namespace {

std::string neusight(const std::string& model) { return source_path("tests/data/public/neusight/configs/" + model + ".json"); }

json read_config(const std::string& path) {
    std::ifstream in(path);
    return json::parse(in);
}

// The config with some keys replaced (null removes one), written under the test tmp folder.
std::string patched(const std::string& model, const std::string& file, const json& changes) {
    json cfg = read_config(neusight(model));
    for (const auto& [k, v] : changes.items()) {
        if (v.is_null())
            cfg.erase(k);
        else
            cfg[k] = v;
    }
    const std::string path = tmp_path(file);
    std::ofstream(path) << cfg.dump(2);
    return path;
}

std::int64_t parameter_count(const Graph& g) {
    std::int64_t n = 0;
    for (const Tensor& t : g.tensors()) {
        if (t.role == TensorRole::parameter) n += t.desc.numel();
    }
    return n;
}

int count_kind(const Graph& g, OpKind k) {
    int c = 0;
    for (const Node& n : g.nodes()) c += n.kind == k ? 1 : 0;
    return c;
}

int count_phase(const Graph& g, Phase p) {
    int c = 0;
    for (const Node& n : g.nodes()) c += n.phase == p ? 1 : 0;
    return c;
}

const char* const kNeusight[] = {"gpt2_large", "bert_large", "gpt3_xl", "gpt3_27", "opt_13", "switchxl4"};

TrainingOptions no_optimizer() {
    TrainingOptions o;
    o.optimizer = Optimizer::none;
    return o;
}

// The finite-difference check of tests/unit/hf_config_test.cpp: float64 on the CPU reference,
// central differences with h = 1e-6 against the autodiff gradient of every parameter tensor (a
// third of its elements), relative error below 1e-6. `given` overrides sources.
int gradient_check(const Graph& fwd, std::map<std::string, HostTensor> overrides = {}) {
    std::map<TensorId, HostTensor> given;
    for (std::size_t t = 0; t < fwd.tensors().size(); ++t) {
        if (fwd.tensors()[t].producer == kNoNode) given[static_cast<TensorId>(t)] = deterministic_value(fwd, static_cast<TensorId>(t), 7);
    }
    for (auto& [name, value] : overrides) {
        const TensorId t = fwd.find_tensor(name);
        REQUIRE(t >= 0);
        value.desc = fwd.tensor(t).desc;
        given[t] = value;
    }
    const Graph train = build_training_step(fwd, no_optimizer());
    const auto values = execute(train, given, RefPrecision::f64);
    const auto loss_at = [&](const std::map<TensorId, HostTensor>& g) {
        return execute(fwd, g, RefPrecision::f64)[static_cast<std::size_t>(fwd.outputs().front())].data[0];
    };
    // Optimizer::none: outputs are the loss, then each parameter's gradient in parameter order.
    std::vector<TensorId> params;
    for (std::size_t t = 0; t < fwd.tensors().size(); ++t) {
        if (fwd.tensors()[t].role == TensorRole::parameter) params.push_back(static_cast<TensorId>(t));
    }
    REQUIRE(train.outputs().size() == params.size() + 1);
    int compared = 0;
    for (std::size_t i = 0; i < params.size(); ++i) {
        const TensorId p = params[i], gt = train.outputs()[i + 1];
        REQUIRE(train.tensor(gt).desc.shape == fwd.tensor(p).desc.shape);
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
    return compared;
}

HostTensor filled(double v) { return HostTensor{TensorDesc{}, {v}}; }

}  // namespace

TEST_CASE("NeuSight configs load and build, for inference and a training step without optimizer", "[hf][neusight]") {
    for (const char* model : kNeusight) {
        INFO(model);
        // small batch and sequence: the graph has the full depth and width, only the tokens shrink
        const Graph fwd = load_model_arg(neusight(model), ModelOverrides{2, 64, {}});
        CHECK_NOTHROW(verify(fwd));
        CHECK(fwd.dims.at("batch") == 2);
        CHECK(fwd.dims.at("seq") == 64);
        const Graph train = build_training_step(fwd, no_optimizer());
        CHECK_NOTHROW(verify(train));
        CHECK(count_phase(train, Phase::optimizer) == 0);
        CHECK(count_phase(train, Phase::backward) > count_phase(train, Phase::forward));
        // every parameter tensor has its gradient as a step output, after the loss
        int params = 0;
        for (const Tensor& t : fwd.tensors()) params += t.role == TensorRole::parameter ? 1 : 0;
        CHECK(train.outputs().size() == static_cast<std::size_t>(params) + 1);
    }
}

TEST_CASE("NeuSight configs through the CLI: analyze, training without optimizer", "[hf][neusight][cli]") {
    for (const char* model : {"opt_13", "bert_large", "switchxl4"}) {
        INFO(model);
        const std::string out = tmp_path(std::string("neusight-") + model + ".json");
        const auto r = run_cli("analyze '" + neusight(model) +
                               "' --hw h100-sxm --dtype f32 --mode training --optimizer none --batch 1 --seq 64 -q -o '" + out + "'");
        INFO(r.out);
        REQUIRE(r.code == 0);
        std::ifstream in(out);
        const json j = json::parse(in);
        CHECK(j["settings"]["optimizer"] == "none");
    }
    const auto inf = run_cli("analyze '" + neusight("gpt2_large") + "' --hw h100-sxm --batch 1 --seq 128 -q");
    INFO(inf.out);
    CHECK(inf.code == 0);
}

TEST_CASE("NeuSight configs: exact parameter counts", "[hf][neusight]") {
    // GPT2LMHeadModel, lm_head tied to wte. Per layer: ln_1 2d, c_attn d*3d + 3d, c_proj d*d + d,
    // ln_2 2d, c_fc d*4d + 4d, mlp.c_proj 4d*d + d = 12 d^2 + 13 d; plus wte V d, wpe P d, ln_f 2d.
    const auto gpt2 = [](std::int64_t V, std::int64_t P, std::int64_t d, std::int64_t L) {
        return V * d + P * d + L * (12 * d * d + 13 * d) + 2 * d;
    };
    // gpt2-large (n_embd 1280, 36 layers, 1024 positions): 774,030,080, its num_parameters().
    CHECK(gpt2(50257, 1024, 1280, 36) == 774'030'080);
    CHECK(parameter_count(load_model_arg(neusight("gpt2_large"))) == 774'030'080);
    // gpt3_xl as configured (a GPT-2 architecture; the name is the authors'): n_embd 3072, 24
    // layers, 2048 positions: 154,389,504 + 6,291,456 + 24 * 113,286,144 + 6,144 = 2,879,554,560.
    CHECK(gpt2(50257, 2048, 3072, 24) == 2'879'554'560);
    CHECK(parameter_count(load_model_arg(neusight("gpt3_xl"))) == 2'879'554'560);
    // gpt3_27: n_embd 2560, 32 layers, 2048 positions:
    // 128,657,920 + 5,242,880 + 32 * 78,676,480 + 5,120 = 2,651,553,280.
    CHECK(gpt2(50257, 2048, 2560, 32) == 2'651'553'280);
    CHECK(parameter_count(load_model_arg(neusight("gpt3_27"))) == 2'651'553'280);

    // OPTForCausalLM, facebook/opt-1.3b (opt_13 is its config): num_parameters() = 1,315,758,080.
    // embed_tokens 50272*2048 = 102,957,056; embed_positions (2048 + 2)*2048 = 4,198,400; 24 layers
    // of q/k/v/out_proj 4*(2048^2 + 2048) = 16,785,408, two LayerNorms 8,192, fc1 2048*8192 + 8192 =
    // 16,785,408, fc2 8192*2048 + 2048 = 16,779,264 (50,358,272 each: 1,208,598,528); final_layer_norm
    // 4,096; lm_head tied.
    CHECK(parameter_count(load_model_arg(neusight("opt_13"))) == 1'315'758'080);

    // BertLMHeadModel (bert_large): BertModel without the pooler plus cls.predictions.
    // Embeddings: word 30522*1024 = 31,254,528, position 512*1024 = 524,288, token type 2*1024 =
    // 2,048, LayerNorm 2,048 (31,782,912). Each of 24 layers: query/key/value 3*(1024^2 + 1024) =
    // 3,148,800, attention output dense 1,049,600 + LayerNorm 2,048, intermediate 1024*4096 + 4096 =
    // 4,198,400, output 4096*1024 + 1024 = 4,195,328 + LayerNorm 2,048: 12,596,224 (302,309,376).
    // cls.predictions: transform dense 1,049,600, LayerNorm 2,048, decoder bias 30,522 (weight tied):
    // 1,082,170. Total 335,174,458 (BertForMaskedLM has the same modules).
    CHECK(parameter_count(load_model_arg(neusight("bert_large"))) == 335'174'458);
    // BertForPreTraining keeps the pooler (1024^2 + 1024) and adds seq_relationship (1024*2 + 2).
    const Graph pre = load_model_arg(patched("bert_large", "bert-pretraining.json", {{"architectures", {"BertForPreTraining"}}}));
    CHECK(parameter_count(pre) == 335'174'458 + 1'049'600 + 2'050);

    // SwitchTransformersForConditionalGeneration (switchxl4), from the module shapes of
    // modeling_switch_transformers.py: d_model 1024, inner = num_heads * d_kv = 32*128 = 4096,
    // d_ff 16384, 4 experts, sparse_step 2 (blocks 1, 3, ..., 23 sparse: 12 of 24 per stack).
    //   shared embedding 32128*1024 = 32,899,072 (encoder, decoder and lm_head tie to it)
    //   attention q, k, v, o: 4*1024*4096 = 16,777,216; each T5 LayerNorm: 1,024 (weight only)
    //   dense MLP wi + wo: 2*1024*16384 = 33,554,432
    //   sparse MLP: router 1024*4 = 4,096 (router_bias false) + 4 experts * 33,554,432 = 134,221,824
    //   encoder block: dense 16,777,216 + 2*1,024 + 33,554,432 = 50,333,696;
    //                  sparse 16,777,216 + 2*1,024 + 134,221,824 = 151,001,088
    //   decoder block: + cross-attention 16,777,216 + 1,024: dense 67,111,936, sparse 167,779,328
    //   each stack: relative_attention_bias 32 buckets * 32 heads = 1,024, final LayerNorm 1,024
    //   encoder 12*50,333,696 + 12*151,001,088 + 2,048 = 2,416,019,456
    //   decoder 12*67,111,936 + 12*167,779,328 + 2,048 = 2,818,697,216
    //   total 32,899,072 + 2,416,019,456 + 2,818,697,216 = 5,267,615,744
    const std::int64_t d = 1024, inner = 4096, ff = 16384, E = 4;
    const std::int64_t attn = 4 * d * inner, dense = 2 * d * ff, sparse = d * E + E * dense;
    const std::int64_t enc = 12 * (attn + 2 * d + dense) + 12 * (attn + 2 * d + sparse) + 32 * 32 + d;
    const std::int64_t dec = 12 * (2 * attn + 3 * d + dense) + 12 * (2 * attn + 3 * d + sparse) + 32 * 32 + d;
    CHECK(32128 * d + enc + dec == 5'267'615'744);
    CHECK(parameter_count(load_model_arg(neusight("switchxl4"))) == 5'267'615'744);
    // the published google/switch-base-8 shapes (d_model 768, d_kv 64, 12 heads, d_ff 3072, 8
    // experts, 12 + 12 layers, sparse_step 2), by the same arithmetic: 619,339,008
    const Graph base8 = load_model_arg(patched("switchxl4", "switch-base-8.json",
                                               {{"d_model", 768},
                                                {"d_kv", 64},
                                                {"num_heads", 12},
                                                {"d_ff", 3072},
                                                {"num_experts", 8},
                                                {"num_layers", 12},
                                                {"num_decoder_layers", 12},
                                                {"num_sparse_encoder_layers", 6},
                                                {"num_sparse_decoder_layers", 6}}));
    CHECK(parameter_count(base8) == 619'339'008);
}

TEST_CASE("gelu_new and friends are the elementwise ops eager PyTorch runs", "[hf][neusight]") {
    const Graph g = load_model_arg(neusight("gpt2_large"), ModelOverrides{1, 32, {}});
    // NewGELUActivation: pow, mul, add, mul, tanh, add, mul, mul: 8 elementwise kernels per MLP
    CHECK(count_kind(g, OpKind::gelu) == 0);
    CHECK(count_kind(g, OpKind::pow) == 36);
    CHECK(count_kind(g, OpKind::tanh) == 36);
    CHECK(count_kind(g, OpKind::shift) == 36);
    std::multiset<OpKind> act;
    for (const Node& n : g.nodes()) {
        if (n.name.rfind("transformer.h.7.mlp.act", 0) == 0) act.insert(n.kind);
    }
    CHECK(act == std::multiset<OpKind>{OpKind::scale, OpKind::pow, OpKind::scale, OpKind::add, OpKind::scale, OpKind::tanh, OpKind::shift,
                                       OpKind::mul});
    for (const Node& n : g.nodes()) {
        if (n.name.rfind("transformer.h.7.mlp.act", 0) == 0) CHECK(rule_of(n.kind).family == OpFamily::elementwise);
    }
    // the pow is a cube: 2 FLOPs per element, no transcendental; the tanh 1 transcendental
    const NodeId pow = g.find_node("transformer.h.7.mlp.act.pow");
    REQUIRE(pow != kNoNode);
    CHECK(g.work(pow).vector_flops == 2 * 32 * 5120);
    CHECK(g.work(pow).transcendentals == 0);

    // gelu_pytorch_tanh is one fused gelu; gelu_fast 9 ops; gelu_accurate 8
    const auto acts = [](const std::string& fn, const std::string& file) {
        return load_model_arg(patched("gpt2_large", file, {{"activation_function", fn}, {"n_layer", 2}}), ModelOverrides{1, 16, {}});
    };
    const Graph pt = acts("gelu_pytorch_tanh", "gelu-pt.json");
    CHECK(count_kind(pt, OpKind::gelu) == 2);
    CHECK(count_kind(pt, OpKind::pow) == 0);
    const Graph fast = acts("gelu_fast", "gelu-fast.json");
    int fast_ops = 0;
    for (const Node& n : fast.nodes()) fast_ops += n.name.rfind("transformer.h.0.mlp.act", 0) == 0 ? 1 : 0;
    CHECK(fast_ops == 9);
    CHECK(count_kind(acts("gelu_accurate", "gelu-acc.json"), OpKind::pow) == 2);
}

TEST_CASE("gelu_new spelled out computes gelu's tanh form", "[hf][neusight]") {
    // Same sources (inputs and parameters are declared before any node, so they get the same ids
    // and the same deterministic values): the losses agree to rounding.
    const json base = {{"model_type", "gpt2"}, {"vocab_size", 11}, {"n_embd", 8}, {"n_layer", 1}, {"n_head", 2}, {"n_positions", 5}};
    json spelled = base, fused = base;
    spelled["activation_function"] = "gelu_new";
    fused["activation_function"] = "gelu_pytorch_tanh";
    const ModelOverrides ov{2, std::nullopt, DType::f64};
    const Graph a = load_model(spelled, "spelled.json", ov), b = load_model(fused, "fused.json", ov);
    const double la = execute(a, {}, RefPrecision::f64)[static_cast<std::size_t>(a.outputs().front())].data[0];
    const double lb = execute(b, {}, RefPrecision::f64)[static_cast<std::size_t>(b.outputs().front())].data[0];
    CHECK(la == Approx(lb).epsilon(1e-12));
}

TEST_CASE("optimizer none: the backward of the adamw step, without the update", "[hf][autodiff]") {
    const Graph fwd = load_model_arg(neusight("opt_13"), ModelOverrides{1, 16, {}});
    TrainingOptions adamw;
    adamw.optimizer = Optimizer::adamw;
    const Graph with = build_training_step(fwd, adamw);
    const Graph without = build_training_step(fwd, no_optimizer());
    CHECK(count_phase(with, Phase::optimizer) > 0);
    CHECK(count_phase(without, Phase::optimizer) == 0);
    CHECK(count_kind(without, OpKind::adam_update) == 0);
    CHECK(count_kind(without, OpKind::cast) == 0);  // no master-weight casts either
    // node for node the same forward and backward
    std::vector<std::pair<std::string, OpKind>> a, b;
    for (const Node& n : with.nodes()) {
        if (n.phase != Phase::optimizer) a.emplace_back(n.name, n.kind);
    }
    for (const Node& n : without.nodes()) b.emplace_back(n.name, n.kind);
    CHECK(a == b);
    // the gradients the optimizer consumed are the step's outputs
    std::set<TensorId> consumed;
    for (const Node& n : with.nodes()) {
        if (n.phase == Phase::optimizer && (n.kind == OpKind::adam_update || n.kind == OpKind::cast))
            consumed.insert(n.inputs.size() > 1 ? n.inputs[1] : n.inputs[0]);
    }
    std::set<std::string> with_grads, without_grads;
    for (const Node& n : with.nodes()) {
        if (n.kind == OpKind::cast && n.phase == Phase::optimizer && n.name.find(".grad_f32") != std::string::npos)
            with_grads.insert(with.tensor(n.inputs[0]).name);
    }
    for (std::size_t i = 1; i < without.outputs().size(); ++i) without_grads.insert(without.tensor(without.outputs()[i]).name);
    CHECK(with_grads == without_grads);  // bf16 parameters: every gradient goes through the fp32 cast
    CHECK(optimizer_name(Optimizer::none) == "none");
    CHECK(run_cli("analyze gpt2-small --mode training --optimizer sideways -q").code != 0);
}

TEST_CASE("tiny OPT, Switch and BERT-decoder configs pass the finite-difference gradient check", "[hf][gradcheck]") {
    const ModelOverrides ov{2, std::nullopt, DType::f64};
    SECTION("OPT, pre-LN, tied, with project_in/out and gelu_new") {
        const json cfg = {{"model_type", "opt"},
                          {"vocab_size", 11},
                          {"hidden_size", 8},
                          {"ffn_dim", 12},
                          {"num_hidden_layers", 1},
                          {"num_attention_heads", 2},
                          {"max_position_embeddings", 5},
                          {"word_embed_proj_dim", 6},
                          {"activation_function", "gelu_new"},
                          {"attention_dropout", 0.1}};
        const Graph g = load_model(cfg, "tiny-opt.json", ov);
        // the clamp floor: the dtype's lowest value in HF; any value below the scores here
        CHECK(gradient_check(g, {{"attention_floor", filled(-1e9)}}) > 20);
    }
    SECTION("OPT, post-LN (do_layer_norm_before false), relu") {
        const json cfg = {{"model_type", "opt"},
                          {"vocab_size", 11},
                          {"hidden_size", 8},
                          {"ffn_dim", 12},
                          {"num_hidden_layers", 1},
                          {"num_attention_heads", 2},
                          {"max_position_embeddings", 5},
                          {"do_layer_norm_before", false}};
        CHECK(gradient_check(load_model(cfg, "tiny-opt-post.json", ov), {{"attention_floor", filled(-1e9)}}) > 20);
    }
    const json sw = {{"model_type", "switch_transformers"},
                     {"vocab_size", 11},
                     {"d_model", 8},
                     {"d_kv", 2},
                     {"num_heads", 2},
                     {"d_ff", 6},
                     {"num_experts", 2},
                     {"expert_capacity", 1},
                     {"num_layers", 2},
                     {"num_decoder_layers", 2},
                     {"encoder_sparse_step", 2},
                     {"decoder_sparse_step", 2},
                     {"relative_attention_num_buckets", 4}};
    SECTION("Switch: capacity drops tokens (seq 4, 2 experts, capacity 1)") {
        const Graph g = load_model(sw, "tiny-switch.json", ModelOverrides{2, 4, DType::f64});
        CHECK(g.tensor(g.find_tensor("encoder.block.1.layer.1.mlp.dropped")).desc.shape == Shape{2, 1, 2, 8});
        CHECK(gradient_check(g) > 20);
    }
    SECTION("Switch: every token fits (capacity 4), gelu_fast experts") {
        json cfg = sw;
        cfg["expert_capacity"] = 4;
        cfg["dense_act_fn"] = "gelu_fast";
        const Graph g = load_model(cfg, "tiny-switch-fit.json", ModelOverrides{2, 4, DType::f64});
        CHECK(g.tensor(g.find_tensor("encoder.block.1.layer.1.mlp.dropped")).desc.numel() == 0);
        CHECK(gradient_check(g) > 20);
    }
    SECTION("BertLMHeadModel as a decoder (is_decoder true: causal)") {
        const json cfg = {{"model_type", "bert"},
                          {"architectures", {"BertLMHeadModel"}},
                          {"is_decoder", true},
                          {"vocab_size", 11},
                          {"hidden_size", 8},
                          {"intermediate_size", 12},
                          {"num_hidden_layers", 1},
                          {"num_attention_heads", 2},
                          {"max_position_embeddings", 5},
                          {"hidden_act", "gelu_new"}};
        const Graph g = load_model(cfg, "tiny-bert-lm.json", ov);
        CHECK(count_kind(g, OpKind::causal_mask) == 1);
        CHECK(gradient_check(g) > 20);
    }
    SECTION("BertForPreTraining") {
        const json cfg = {{"model_type", "bert"},     {"architectures", {"BertForPreTraining"}},
                          {"vocab_size", 11},         {"hidden_size", 8},
                          {"intermediate_size", 12},  {"num_hidden_layers", 1},
                          {"num_attention_heads", 2}, {"max_position_embeddings", 5}};
        CHECK(gradient_check(load_model(cfg, "tiny-bert-pre.json", ov)) > 20);
    }
}

TEST_CASE("OPT, BERT and Switch graphs have the modelling's structure", "[hf][neusight]") {
    const Graph opt = load_model_arg(neusight("opt_13"), ModelOverrides{2, 128, {}});
    // q scaled before Q K^T, q/k/v contiguous copies, additive causal mask, clamp, softmax
    CHECK(opt.find_node("model.decoder.layers.0.self_attn.q_scaled") != kNoNode);
    CHECK(opt.node(opt.find_node("model.decoder.layers.0.self_attn.q_scaled")).attrs.get_double("factor", 0) ==
          Approx(1.0 / std::sqrt(64.0)));
    CHECK(count_kind(opt, OpKind::causal_mask) == 24);
    CHECK(count_kind(opt, OpKind::maximum) == 24);
    CHECK(count_kind(opt, OpKind::relu) == 24);
    CHECK(count_kind(opt, OpKind::layernorm) == 2 * 24 + 1);
    CHECK(count_kind(opt, OpKind::attention) == 0);  // eager: spelled out
    CHECK(opt.tensor(opt.find_tensor("model.decoder.embed_positions")).desc.shape == Shape{2, 128, 2048});
    CHECK(opt.tensor(opt.find_tensor("lm_head")).desc.shape == Shape{2, 128, 50272});

    // bert_large (no is_decoder key): transformers builds BertLMHeadModel bidirectional
    const Graph bert = load_model_arg(neusight("bert_large"), ModelOverrides{1, 128, {}});
    CHECK(count_kind(bert, OpKind::causal_mask) == 0);
    const Graph causal = load_model_arg(patched("bert_large", "bert-decoder.json", {{"is_decoder", true}}), ModelOverrides{1, 128, {}});
    CHECK(count_kind(causal, OpKind::causal_mask) == 24);

    // switchxl4 at seq 512: 512 / 4 experts = 128 tokens per expert per sequence, capacity 64
    const Graph sw = load_model_arg(neusight("switchxl4"), ModelOverrides{2, 512, {}});
    CHECK(sw.tensor(sw.find_tensor("encoder.block.1.layer.1.mlp.experts.expert_0.wi")).desc.shape == Shape{2, 64, 1, 16384});
    CHECK(sw.tensor(sw.find_tensor("encoder.block.1.layer.1.mlp.dropped")).desc.shape == Shape{2, 64, 4, 1024});
    CHECK(sw.tensor(sw.find_tensor("encoder.block.1.layer.1.mlp.weighted")).desc.shape == Shape{2, 512, 1024});
    CHECK(sw.find_tensor("encoder.block.0.layer.1.mlp.router.classifier") < 0);  // block 0 is dense
    CHECK(sw.tensor(sw.find_tensor("decoder.block.3.layer.2.mlp.router.classifier")).desc.shape == Shape{2, 512, 4});
    // relative position bias in block 0 of each stack only
    CHECK(count_kind(sw, OpKind::embedding) == 2 + 2);  // shared embedding twice, two bias tables
    // seq 64: 16 tokens per expert, all within capacity
    const Graph short_seq = load_model_arg(neusight("switchxl4"), ModelOverrides{1, 64, {}});
    CHECK(short_seq.tensor(short_seq.find_tensor("decoder.block.1.layer.2.mlp.experts.expert_3.wo")).desc.shape == Shape{1, 16, 1, 1024});
    // T5 layer norm spelled out (pow, mean, add eps, rsqrt, mul, mul): no rmsnorm node
    CHECK(count_kind(sw, OpKind::rmsnorm) == 0);
    CHECK(count_kind(sw, OpKind::rsqrt) == (24 * 2 + 1) + (24 * 3 + 1));
    // cross-attention in every decoder block; the lm_head input rescaled by d_model^-0.5
    CHECK(sw.find_node("decoder.block.23.layer.1.EncDecAttention.o") != kNoNode);
    CHECK(sw.node(sw.find_node("lm_head.rescale")).attrs.get_double("factor", 0) == Approx(1.0 / 32.0));
    // a sequence that does not split evenly over the experts is refused by the dispatch view
    CHECK_THROWS_AS(load_model_arg(neusight("switchxl4"), ModelOverrides{1, 66, {}}), InputError);
}

TEST_CASE("bad OPT and Switch configs: one message naming the file and the JSON path", "[hf][cli][errors]") {
    const std::pair<std::string, std::string> cases[] = {
        {patched("switchxl4", "switch-no-experts.json", {{"num_experts", 0}}),
         "switch-no-experts.json: /num_experts: expected a positive integer, got 0"},
        {patched("switchxl4", "switch-no-dkv.json", {{"d_kv", nullptr}}),
         "switch-no-dkv.json: /: missing key 'd_kv' (required for model_type 'switch_transformers')"},
        {patched("switchxl4", "switch-gated.json", {{"is_gated_act", true}}),
         "switch-gated.json: /is_gated_act: not supported: gated feed-forward"},
        {patched("switchxl4", "switch-step.json", {{"encoder_sparse_step", -1}}),
         "switch-step.json: /encoder_sparse_step: expected a non-negative integer, got -1"},
        {patched("opt_13", "opt-heads.json", {{"num_attention_heads", 30}}),
         "opt-heads.json: /num_attention_heads: num_attention_heads 30 does not divide hidden_size 2048"},
        {patched("opt_13", "opt-arch.json", {{"architectures", {"OPTForSequenceClassification"}}}),
         "opt-arch.json: /architectures/0: unsupported architecture 'OPTForSequenceClassification' for model_type 'opt'"},
        {patched("gpt2_large", "gpt2-act.json", {{"activation_function", "gelu_11"}}),
         "gpt2-act.json: /activation_function: unsupported activation 'gelu_11'"},
    };
    for (const auto& [path, message] : cases) {
        INFO(path);
        const auto r = run_cli("analyze '" + path + "' -q");
        INFO(r.out);
        CHECK(r.code == 2);
        CHECK_THAT(r.out, Catch::Contains(message));
    }
}

TEST_CASE(
    "tiny mixtral, qwen2_moe, qwen2, phi3, falcon, phi, roberta, deberta-v2, t5, bart and gemma configs pass the finite-difference "
    "gradient check",
    "[hf][moe][gradcheck]") {
    // Batch 2, seq 5: 10 tokens; with top-2 of 3 experts 20 routed rows, 7, 7 and 6 per expert (the
    // strided gathers, the routing-weight slices, the concat and the sum over the k copies are
    // differentiated, not just shape-checked).
    const ModelOverrides ov{2, std::nullopt, DType::f64};
    const json llama_like = {
        {"vocab_size", 11},         {"hidden_size", 8},         {"intermediate_size", 6},      {"num_hidden_layers", 1},
        {"num_attention_heads", 2}, {"num_key_value_heads", 1}, {"max_position_embeddings", 5}};
    SECTION("mixtral: top-2 of 3 experts, normalised weights, router jitter") {
        json cfg = llama_like;
        cfg.update({{"model_type", "mixtral"}, {"num_local_experts", 3}, {"num_experts_per_tok", 2}, {"router_jitter_noise", 0.1}});
        const Graph g = load_model(cfg, "tiny-mixtral.json", ov);
        CHECK(g.tensor(g.find_tensor("model.layers.0.block_sparse_moe.experts.2.w1")).desc.shape == Shape{6, 6});
        HostTensor jitter;  // the uniform draw in [0.9, 1.1]
        for (int i = 0; i < 2 * 5 * 8; ++i) jitter.data.push_back(0.9 + 0.2 * ((i * 7) % 10) / 10.0);
        CHECK(gradient_check(g, {{"router_jitter", jitter}}) > 20);
    }
    SECTION("qwen2_moe: shared expert, top-2 of 3 unnormalised, a dense layer (decoder_sparse_step 2)") {
        json cfg = llama_like;
        cfg.update({{"model_type", "qwen2_moe"},
                    {"num_hidden_layers", 2},
                    {"num_experts", 3},
                    {"num_experts_per_tok", 2},
                    {"moe_intermediate_size", 4},
                    {"shared_expert_intermediate_size", 6},
                    {"decoder_sparse_step", 2}});
        const Graph g = load_model(cfg, "tiny-qwen-moe.json", ov);
        CHECK(g.find_node("model.layers.0.mlp.gate") == kNoNode);
        CHECK(gradient_check(g) > 20);
    }
    SECTION("qwen2_moe: norm_topk_prob") {
        json cfg = llama_like;
        cfg.update({{"model_type", "qwen2_moe"},
                    {"num_experts", 3},
                    {"num_experts_per_tok", 2},
                    {"moe_intermediate_size", 4},
                    {"shared_expert_intermediate_size", 6},
                    {"norm_topk_prob", true}});
        CHECK(gradient_check(load_model(cfg, "tiny-qwen-moe-norm.json", ov)) > 20);
    }
    SECTION("qwen2: q/k/v biases, tied lm_head") {
        json cfg = llama_like;
        cfg.update({{"model_type", "qwen2"}, {"tie_word_embeddings", true}});
        CHECK(gradient_check(load_model(cfg, "tiny-qwen2.json", ov)) > 20);
    }
    SECTION("falcon: multi-query, parallel block, tied") {
        const json cfg = {{"model_type", "falcon"},   {"vocab_size", 11},       {"hidden_size", 8},
                          {"num_attention_heads", 2}, {"num_hidden_layers", 1}, {"max_position_embeddings", 5},
                          {"ffn_hidden_size", 6}};
        CHECK(gradient_check(load_model(cfg, "tiny-falcon.json", ov)) > 20);
    }
    SECTION("falcon: new decoder architecture, 2 key/value groups of 2 heads, biases") {
        const json cfg = {{"model_type", "falcon"},
                          {"vocab_size", 11},
                          {"hidden_size", 8},
                          {"num_attention_heads", 4},
                          {"num_kv_heads", 2},
                          {"new_decoder_architecture", true},
                          {"bias", true},
                          {"num_hidden_layers", 1},
                          {"max_position_embeddings", 5},
                          {"ffn_hidden_size", 6}};
        CHECK(gradient_check(load_model(cfg, "tiny-falcon-new.json", ov)) > 20);
    }
    SECTION("falcon: alibi, sequential block, multi-head, untied") {
        const json cfg = {{"model_type", "falcon"}, {"vocab_size", 11},
                          {"hidden_size", 8},       {"num_attention_heads", 2},
                          {"multi_query", false},   {"parallel_attn", false},
                          {"alibi", true},          {"tie_word_embeddings", false},
                          {"num_hidden_layers", 1}, {"max_position_embeddings", 5},
                          {"ffn_hidden_size", 6}};
        CHECK(gradient_check(load_model(cfg, "tiny-falcon-alibi.json", ov)) > 20);
    }
    SECTION("phi: partial rotary (2 of 4 head features), GQA, gelu_new, lm_head bias") {
        const json cfg = {
            {"model_type", "phi"},         {"vocab_size", 11},         {"hidden_size", 8},       {"intermediate_size", 6},
            {"num_attention_heads", 2},    {"num_key_value_heads", 1}, {"num_hidden_layers", 1}, {"max_position_embeddings", 5},
            {"partial_rotary_factor", 0.5}};
        const Graph g = load_model(cfg, "tiny-phi.json", ov);
        CHECK(g.find_node("model.layers.0.self_attn.q_rope.parts") != kNoNode);
        CHECK(gradient_check(g) > 20);
    }
    SECTION("roberta: sequence classification head (first token, dense, tanh, out_proj), 3 labels") {
        const json cfg = {{"model_type", "roberta"},  {"architectures", {"RobertaForSequenceClassification"}},
                          {"vocab_size", 11},         {"hidden_size", 8},
                          {"intermediate_size", 12},  {"num_hidden_layers", 1},
                          {"num_attention_heads", 2}, {"max_position_embeddings", 7},
                          {"type_vocab_size", 1},     {"num_labels", 3}};
        CHECK(gradient_check(load_model(cfg, "tiny-roberta.json", ov)) > 20);
    }
    SECTION("deberta-v2: disentangled attention (c2p and p2c through shared projections), relative-position LayerNorm, MLM head") {
        // seq 5 over 2 x 4 relative buckets: each gather keeps 5 of the 8 columns
        const json cfg = {{"model_type", "deberta-v2"},
                          {"architectures", {"DebertaV2ForMaskedLM"}},
                          {"vocab_size", 11},
                          {"hidden_size", 8},
                          {"intermediate_size", 12},
                          {"num_hidden_layers", 1},
                          {"num_attention_heads", 2},
                          {"max_position_embeddings", 5},
                          {"relative_attention", true},
                          {"position_buckets", 4},
                          {"norm_rel_ebd", "layer_norm"},
                          {"share_att_key", true},
                          {"pos_att_type", "p2c|c2p"},
                          {"position_biased_input", false}};
        const Graph g = load_model(cfg, "tiny-deberta.json", ov);
        CHECK(g.tensor(g.find_tensor("deberta.encoder.layer.0.attention.self.c2p.gather")).desc.shape == Shape{2, 2, 5, 5});
        CHECK(gradient_check(g) > 20);
    }
    SECTION("phi3: fused qkv_proj and gate_up_proj, GQA, residual dropout") {
        json cfg = llama_like;
        cfg.update({{"model_type", "phi3"}, {"resid_pdrop", 0.1}, {"embd_pdrop", 0.1}});
        const Graph g = load_model(cfg, "tiny-phi3.json", ov);
        CHECK(g.find_node("model.layers.0.mlp.chunk") != kNoNode);
        CHECK(gradient_check(g) > 20);
    }
    SECTION("t5: gated-gelu feed-forward (wi_0, wi_1), untied lm_head") {
        const json cfg = {{"model_type", "t5"},
                          {"vocab_size", 11},
                          {"d_model", 8},
                          {"d_kv", 2},
                          {"num_heads", 2},
                          {"d_ff", 6},
                          {"num_layers", 1},
                          {"relative_attention_num_buckets", 4},
                          {"feed_forward_proj", "gated-gelu"},
                          {"tie_word_embeddings", false}};
        CHECK(gradient_check(load_model(cfg, "tiny-t5.json", ModelOverrides{2, 4, DType::f64})) > 20);
    }
    SECTION("bart: scaled embeddings, attention dropout (spelled out), untied lm_head") {
        const json cfg = {{"model_type", "bart"},         {"vocab_size", 11},        {"d_model", 8},
                          {"encoder_layers", 1},          {"decoder_layers", 1},     {"encoder_attention_heads", 2},
                          {"decoder_attention_heads", 2}, {"encoder_ffn_dim", 6},    {"decoder_ffn_dim", 6},
                          {"max_position_embeddings", 5}, {"scale_embedding", true}, {"attention_dropout", 0.1},
                          {"tie_word_embeddings", false}};
        CHECK(gradient_check(load_model(cfg, "tiny-bart.json", ov)) > 20);
    }
    SECTION("gemma: head_dim 6, scaled embedding, (1 + weight) norms, tanh gelu") {
        json cfg = llama_like;
        cfg.update({{"model_type", "gemma"}, {"head_dim", 6}});
        CHECK(gradient_check(load_model(cfg, "tiny-gemma.json", ov)) > 20);
    }
}
