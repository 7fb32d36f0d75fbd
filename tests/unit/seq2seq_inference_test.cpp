// Inference phases of the encoder-decoder Hugging Face models (model/inference.hpp,
// model/hf_seq2seq.cpp): t5, switch_transformers and bart prefill and decode steps with the
// self-attention and cross-attention caches, as transformers' generate() runs them with use_cache.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <string>

#include "model/inference.hpp"
#include "model/model_json.hpp"
#include "ops/error.hpp"
#include "sim/analysis.hpp"
#include "sim/builtin_hardware.hpp"
#include "support.hpp"

using namespace roofline;

namespace {

Graph step(const std::string& model, InferencePhase phase, std::int64_t batch, std::int64_t source, std::int64_t context = 0, int tp = 1,
           const std::string& kv_cache = "") {
    PhaseOptions p;
    p.phase = phase;
    p.context = context;
    p.quant.kv_cache = kv_cache;
    ModelOverrides ov;
    if (phase == InferencePhase::decode)
        p.source = source;
    else
        ov.seq = source;
    ov.phase = p;
    ov.batch = batch;
    ov.tp = tp;
    return load_model_arg(model, ov);
}

bool ends_with(const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Bytes of the graph's inputs (no producer, not parameters) whose name ends with `tail`.
std::int64_t input_bytes(const Graph& g, const std::string& tail) {
    std::int64_t n = 0;
    for (const Tensor& t : g.tensors()) {
        if (t.producer == kNoNode && t.role != TensorRole::parameter && ends_with(t.name, tail)) n += t.desc.bytes();
    }
    return n;
}

int count_nodes(const Graph& g, const std::string& prefix, const std::string& tail = "") {
    int n = 0;
    for (const Node& node : g.nodes()) n += node.name.rfind(prefix, 0) == 0 && ends_with(node.name, tail) ? 1 : 0;
    return n;
}

std::int64_t matrix_flops(const Analysis& a) {
    std::int64_t n = 0;
    for (const OpAnalysis& op : a.ops) n += op.roofline->work.matrix_flops;
    return n;
}

// t5-small (huggingface.co/google-t5/t5-small): d_model 512, 8 heads x d_kv 64 (inner 512), d_ff
// 2048 (relu, not gated), 6 + 6 layers, vocab 32128, 32 buckets, tied embeddings; bf16 (no
// torch_dtype in the config: the loader's default).
constexpr std::int64_t kD = 512, kInner = 8 * 64, kFf = 2048, kLayers = 6, kVocab = 32128, kBuckets = 32, kHeads = 8;

}  // namespace

TEST_CASE("t5-small decode reads the decoder's weights, the LM head and both caches, and runs no encoder", "[inference][seq2seq]") {
    const std::int64_t B = 4, C = 100, S = 128;
    const Graph g = step("t5-small", InferencePhase::decode, B, S, C);
    const Analysis a = analyze(g, builtin_hardware("h100-sxm"));
    // No encoder, and no cross-attention K/V projection: the prefill computed and cached them.
    CHECK(count_nodes(g, "encoder.") == 0);
    CHECK(count_nodes(g, "decoder.", "EncDecAttention.k") == 0);
    CHECK(count_nodes(g, "decoder.", "EncDecAttention.v") == 0);
    CHECK(count_nodes(g, "decoder.", "EncDecAttention.q") == kLayers);

    // Weights: per decoder block self-attention q, k, v, o (4 x 512 x 512), cross-attention q and o
    // (2 x 512 x 512), wi and wo (2 x 512 x 2048), three T5 LayerNorm weights (3 x 512):
    // 1,048,576 + 524,288 + 2,097,152 + 1,536 = 3,671,552; six blocks 22,029,312; the decoder's
    // relative_attention_bias 32 x 8 = 256 and final_layer_norm 512; the shared embedding (the
    // LM head, tied) 32128 x 512 = 16,449,536. Total 38,479,616, at 2 bytes (bf16).
    const std::int64_t block = 4 * kD * kInner + 2 * kD * kInner + 2 * kD * kFf + 3 * kD;
    const std::int64_t params = kLayers * block + kBuckets * kHeads + kD + kVocab * kD;
    CHECK(params == 38'479'616);
    CHECK(test::parameter_count(g) == params);
    CHECK(a.parameter_bytes == 2 * params);

    // The caches read in place, per decoder block: self K and V of the C cached tokens and the new
    // one, 2 x 8 heads x 64 x (C + 1); cross K and V of the S source tokens, 2 x 8 x 64 x S; bf16.
    const std::int64_t self_cache = kLayers * B * 2 * kInner * (C + 1) * 2;
    const std::int64_t cross_cache = kLayers * B * 2 * kInner * S * 2;
    CHECK(self_cache == 4'964'352);
    CHECK(input_bytes(g, "SelfAttention.k_cache") + input_bytes(g, "SelfAttention.v_cache") == self_cache);
    CHECK(input_bytes(g, "EncDecAttention.k_cache") + input_bytes(g, "EncDecAttention.v_cache") == cross_cache);
    // The new token's K and V appended to the self-attention cache: one [B, 8, 1, 64] each a block.
    REQUIRE(g.outputs().size() == static_cast<std::size_t>(1 + 2 * kLayers));
    CHECK(g.tensor(g.outputs()[0]).desc.shape == Shape{B, 1, kVocab});  // logits of the one token
    CHECK(g.tensor(g.outputs()[1]).desc.shape == Shape{B, kHeads, 1, 64});

    // FLOPs: 2 x the GEMM weights x B (block: 6 x 512^2 + 2 x 512 x 2048 = 3,670,016; LM head
    // 32128 x 512), plus per block QK^T and PV over C + 1 self and S cross keys: 2 x 2 x B x 512 x keys.
    const std::int64_t gemm_weights = kLayers * (6 * kD * kInner + 2 * kD * kFf) + kVocab * kD;
    CHECK(matrix_flops(a) == 2 * gemm_weights * B + kLayers * 4 * B * kInner * (C + 1 + S));
    // The step reads the weights and the caches, each once; the rest of what it reads is one token's
    // activations through T5's eager ops (each LayerNorm five kernels, scores, softmax): under 2%
    // at this batch (1.4%).
    const std::int64_t floor = 2 * params + self_cache + cross_cache;
    CHECK(static_cast<double>(a.total.bytes_read) == Approx(static_cast<double>(floor)).epsilon(0.02));
    CHECK(a.total.bytes_read > floor);

    // T5's relative position bias: the one row of the new query, [1, heads, 1, C + 1].
    const NodeId bias = g.find_node("decoder.block.0.layer.0.SelfAttention.position_bias.unsqueeze");
    REQUIRE(bias != kNoNode);
    CHECK(g.output_descs(bias)[0].shape == Shape{1, kHeads, 1, C + 1});
}

TEST_CASE("t5-small prefill: the encoder over S tokens, the cross K/V projections, and the decoder's first token", "[inference][seq2seq]") {
    const std::int64_t B = 2, S = 128;
    const Graph g = step("t5-small", InferencePhase::prefill, B, S);
    const Analysis a = analyze(g, builtin_hardware("h100-sxm"));
    // GEMMs: the encoder's blocks over S tokens (q, k, v, o, wi, wo: 4 x 512^2 + 2 x 512 x 2048)
    // and their attention (QK^T and PV: 2 x 2 x B x 512 x S^2); the decoder's blocks on one token
    // (6 x 512^2 + 2 x 512 x 2048) with self-attention over that token and cross-attention over the
    // S source tokens (2 x 2 x B x 512 x (1 + S)); the cross-attention K and V projections of the
    // encoder output, 2 x 512^2 over S tokens, once; the LM head on the one token.
    const std::int64_t encoder = kLayers * (2 * B * S * (4 * kD * kInner + 2 * kD * kFf) + 4 * B * kInner * S * S);
    const std::int64_t decoder = kLayers * (2 * B * (6 * kD * kInner + 2 * kD * kFf) + 4 * B * kInner * (1 + S));
    const std::int64_t cross_kv = kLayers * 2 * B * S * 2 * kD * kInner;
    const std::int64_t lm_head = 2 * B * kD * kVocab;
    CHECK(matrix_flops(a) == encoder + decoder + cross_kv + lm_head);
    // Every parameter of the model, once: t5-small's 60,506,624 (its num_parameters(), the
    // training graph's count) less nothing: the prefill uses the encoder, both attentions and the head.
    CHECK(test::parameter_count(g) == 60'506'624);
    // Caches written: per decoder block the cross K and V of S tokens and the self K and V of one.
    REQUIRE(g.outputs().size() == static_cast<std::size_t>(1 + 4 * kLayers));
    std::int64_t cross = 0, self = 0;
    for (TensorId t : g.outputs()) {
        const Tensor& out = g.tensor(t);
        if (out.name.find("EncDecAttention.") != std::string::npos) cross += out.desc.bytes();
        if (out.name.find("SelfAttention.") != std::string::npos) self += out.desc.bytes();
    }
    CHECK(cross == kLayers * B * 2 * kInner * S * 2);
    CHECK(self == kLayers * B * 2 * kInner * 1 * 2);
    // ... which is what the decode step at the same source length reads for cross-attention.
    const Graph d = step("t5-small", InferencePhase::decode, B, S, 7);
    CHECK(input_bytes(d, "EncDecAttention.k_cache") + input_bytes(d, "EncDecAttention.v_cache") == cross);
    // eval mode: no dropout
    for (const Node& n : g.nodes()) CHECK(n.kind != OpKind::dropout);
}

TEST_CASE("seq2seq phases: tensor parallelism splits the heads, a quantized cache, and the errors", "[inference][seq2seq]") {
    // tp 2: 4 of t5-small's 8 heads a rank, so each rank's caches are half as wide.
    const Graph g = step("t5-small", InferencePhase::decode, 1, 16, 9, 2);
    const TensorId k = g.find_tensor("decoder.block.0.layer.0.SelfAttention.k_cache");
    REQUIRE(k >= 0);
    CHECK(g.tensor(k).desc.shape == Shape{1, 4, 10, 64});
    CHECK(g.tensor_parallel.degree == 2);
    CHECK_THROWS_WITH(step("t5-small", InferencePhase::decode, 1, 16, 9, 3), Catch::Contains("--tp 3 must divide the 8 attention heads"));

    // bart-large (d_model 1024, 16 heads of 64) with an fp8 cache: 1 byte an element.
    const Graph q = step("bart-large", InferencePhase::decode, 2, 50, 30, 1, "fp8_e4m3");
    CHECK(input_bytes(q, "self_attn.k_cache") == 12 * 2 * 16 * 31 * 64 * 1);
    CHECK(input_bytes(q, "encoder_attn.v_cache") == 12 * 2 * 16 * 50 * 64 * 1);
    CHECK_THROWS_WITH(step("t5-small", InferencePhase::decode, 1, 16, 9, 1, "int8"), Catch::Contains("--kv-cache int8"));

    // BART's learned positions end at max_position_embeddings (1024): the new token's position is
    // the context, so 1023 is the last a decode step can take; the source and the prompt as well.
    CHECK_NOTHROW(step("bart-large", InferencePhase::decode, 1, 1024, 1023));
    CHECK_THROWS_WITH(step("bart-large", InferencePhase::decode, 1, 16, 1024), Catch::Contains("--context 1024"));
    CHECK_THROWS_WITH(step("bart-large", InferencePhase::decode, 1, 1025, 8), Catch::Contains("--source 1025"));
    CHECK_THROWS_WITH(step("bart-large", InferencePhase::prefill, 1, 1025), Catch::Contains("--seq 1025"));
    // T5 has relative positions: no limit.
    CHECK_NOTHROW(step("t5-small", InferencePhase::decode, 1, 4096, 8191));
    // No source: no default to take.
    CHECK_THROWS_WITH(step("t5-small", InferencePhase::decode, 1, -1, 8), Catch::Contains("needs --source N"));
    CHECK_THROWS_WITH(step("llama-2-7b", InferencePhase::decode, 1, 16, 8), Catch::Contains("decoder-only LLM"));
    CHECK_THROWS_WITH(decoder_arch_of("t5-small"), Catch::Contains("generate and serve simulate decoder-only LLMs"));
}

TEST_CASE("bart-large decode: no encoder, the decoder's weights, one learned position row", "[inference][seq2seq]") {
    const std::int64_t B = 3, C = 20, S = 40, d = 1024, ffn = 4096, layers = 12, vocab = 50265;
    const Graph g = step("bart-large", InferencePhase::decode, B, S, C);
    CHECK(count_nodes(g, "model.encoder.") == 0);
    CHECK(count_nodes(g, "model.decoder.", "encoder_attn.k_proj") == 0);
    // Per decoder layer: self q, k, v, out_proj and cross q, out_proj with biases (6 x (d^2 + d)),
    // fc1 and fc2 with biases (2 d ffn + ffn + d), three LayerNorms (3 x 2d); the decoder's
    // positions table (1026 x d) and layernorm_embedding (2d); the shared embedding (vocab x d).
    const std::int64_t layer = 6 * (d * d + d) + 2 * d * ffn + ffn + d + 3 * 2 * d;
    CHECK(test::parameter_count(g) == layers * layer + 1026 * d + 2 * d + vocab * d);
    const NodeId pos = g.find_node("model.decoder.embed_positions");
    REQUIRE(pos != kNoNode);
    CHECK(g.output_descs(pos)[0].shape == Shape{1, d});
}

TEST_CASE("switch_transformers decode routes each sequence's token to one expert", "[inference][seq2seq]") {
    // switchxl4: 24 + 24 layers, 4 experts, sparse every second block (12 sparse decoder blocks).
    // UNIFORM top-1 routing of B tokens: min(B, 4) experts run, each B / 4 tokens (or one more).
    const std::string model = test::source_path("tests/data/public/neusight/configs/switchxl4.json");
    const Graph two = step(model, InferencePhase::decode, 2, 64, 10);
    CHECK(count_nodes(two, "decoder.", ".gather") == 12 * 2);
    CHECK(count_nodes(two, "encoder.") == 0);
    const Graph eight = step(model, InferencePhase::decode, 8, 64, 10);
    CHECK(count_nodes(eight, "decoder.", ".gather") == 12 * 4);
    const NodeId g = eight.find_node("decoder.block.1.layer.2.mlp.experts.expert_3.gather");
    REQUIRE(g != kNoNode);
    CHECK(eight.output_descs(g)[0].shape == Shape{2, 1024});
    // The encoder's uniform routing needs whole groups of experts.
    CHECK_NOTHROW(step(model, InferencePhase::prefill, 1, 64));
    CHECK_THROWS_WITH(step(model, InferencePhase::prefill, 1, 66), Catch::Contains("multiple of num_experts 4"));
}

TEST_CASE("seq2seq phases on the command line: export round trip and errors", "[inference][seq2seq][cli]") {
    const std::string file = test::tmp_path("t5-decode.json");
    REQUIRE(test::run_cli("model export t5-small --phase decode --context 64 --source 128 --batch 2 -o " + file).code == 0);
    const auto a =
        test::run_cli("analyze t5-small --phase decode --context 64 --source 128 --batch 2 -q -o " + test::tmp_path("s2s-a.json"));
    const auto b = test::run_cli("analyze " + file + " -q -o " + test::tmp_path("s2s-b.json"));
    REQUIRE(a.code == 0);
    REQUIRE(b.code == 0);
    const auto ta = read_json_file(test::tmp_path("s2s-a.json"))["totals"];
    const auto tb = read_json_file(test::tmp_path("s2s-b.json"))["totals"];
    CHECK(tb["flops"] == ta["flops"]);
    CHECK(tb["bytes_read"] == ta["bytes_read"]);

    for (const auto& [args, message] : std::vector<std::pair<std::string, std::string>>{
             {"t5-small --phase decode --context 128", "needs --source N"},
             {"t5-small --phase decode --context 64 --source 128 --mode training", "takes no --mode training"},
             {"bart-large --phase decode --context 1024 --source 16", "--context 1024"},
             {"t5-small --source 12", "--source is the cached encoder tokens"},
             {"t5-small --phase prefill --seq 64 --source 12", "--source belongs to --phase decode"},
             {"llama-2-7b --phase decode --context 5 --source 8", "decoder-only LLM"},
             {"t5-small --phase decode --context 5 --source 8 --weights int4", "--weights and --activations"}}) {
        INFO(args);
        const auto r = test::run_cli("analyze " + args + " -q");
        CHECK(r.code == 2);
        CHECK_THAT(r.out, Catch::Contains(message));
    }
    const auto neg = test::run_cli("analyze t5-small --phase decode --context 5 --source -3 -q");
    CHECK(neg.code == 2);
    CHECK_THAT(neg.out, Catch::Contains("--source"));
    const auto gen = test::run_cli("generate t5-small --prompt 16 --output 4");
    CHECK(gen.code == 2);
    CHECK_THAT(gen.out, Catch::Contains("decoder-only"));
}
