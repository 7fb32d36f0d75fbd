// Tensor and sequence parallelism of the Hugging Face decoders (model/hf_decoders.cpp build_llama):
// one rank's share of Megatron-LM's split, checked against figures computed by hand from the
// published configs (model/hf_config.cpp presets).
#include <catch2/catch.hpp>

#include <algorithm>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>

#include "html_support.hpp"
#include "model/autodiff.hpp"
#include "model/model_json.hpp"
#include "sim/analysis.hpp"
#include "sim/fusion.hpp"
#include "sim/parallel.hpp"
#include "sim/plan.hpp"
#include "support.hpp"

using namespace roofline;

namespace {

// Stage `stage` of `pp` of a model split over `tp` ranks (with sequence parallelism when sp).
Graph forward(const std::string& model, int tp, std::int64_t seq, bool sp = false, int pp = 1, int stage = 0) {
    ModelOverrides ov;
    ov.seq = seq;
    ov.tp = tp;
    ov.sp = sp;
    ov.pp = pp;
    ov.stage = stage;
    return load_model_arg(model, ov);
}

// FLOPs of the nodes (of one kind, when given) whose name holds `part`.
double flops_named(const Graph& g, const Analysis& a, const std::string& part, std::optional<OpKind> kind = std::nullopt) {
    double f = 0;
    for (const OpAnalysis& op : a.ops)
        if ((!kind || g.node(op.node).kind == *kind) && g.node(op.node).name.find(part) != std::string::npos)
            f += static_cast<double>(op.roofline->work.flops());
    return f;
}

// FLOPs of the nodes of one kind.
double flops_of(const Graph& g, const Analysis& a, OpKind kind) { return flops_named(g, a, "", kind); }

const Shape& shape_of(const Graph& g, const std::string& tensor) { return g.tensor(g.find_tensor(tensor)).desc.shape; }

// The matrix-unit FLOPs of a graph's linear nodes on `hw` (their GEMMs, not their biases).
std::int64_t linear_matrix_flops(const Hardware& hw, const Graph& g) {
    std::int64_t f = 0;
    for (const OpAnalysis& op : analyze(g, hw).ops)
        if (g.node(op.node).kind == OpKind::linear) f += op.roofline->work.matrix_flops;
    return f;
}

// A command line that must be refused: exit 2, the message naming the flag.
struct Bad {
    const char* args;
    const char* message;
};
// Each `prefix` + args exits 2 with its message.
// One rank's forward graph of a mixture-of-experts template at seq, tp 2, ep 2, with or without --sp.
Graph moe_rank(const std::string& model, std::int64_t seq, bool sp) {
    ModelOverrides ov;
    ov.seq = seq, ov.tp = 2, ov.sp = sp, ov.ep = 2;
    return load_model_arg(model, ov);
}

// The first output of the named node.
TensorDesc output_of(const Graph& g, const std::string& node) {
    const NodeId n = g.find_node(node);
    REQUIRE(n != kNoNode);
    return g.tensor(g.node(n).outputs.front()).desc;
}

// Megatron-core's alltoall dispatcher under --sp at tp 2, ep 2 (bf16): the all-to-alls of the MoE
// layer at prefix p carry the rank's seq / 2 tokens' k copies of d values, half of what they carry
// without --sp, and the received copies are all-gathered over tp to the whole sequence's (one
// all-gather and one reduce-scatter a layer), the layer's input not gathered; the experts' FLOPs
// equal those without --sp.
void check_sp_dispatch(const Graph& both, const Graph& tp_ep, const std::string& p, std::int64_t seq, std::int64_t k, std::int64_t d,
                       const std::string& input_gather) {
    const std::int64_t shard = seq / 2 * k * d * 2;
    CHECK(output_of(both, p + "dispatch.all_to_all").bytes() == shard);
    CHECK(output_of(both, p + "combine.all_to_all").bytes() == shard);
    CHECK(output_of(tp_ep, p + "dispatch.all_to_all").bytes() == 2 * shard);
    CHECK(output_of(both, p + "dispatch.gather").shape == Shape{1, seq * k, d});
    const auto& tp = both.tensor_parallel;
    CHECK(std::count(tp.all_gather.begin(), tp.all_gather.end(), p + "dispatch.gather") == 1);
    CHECK(std::count(tp.reduce_scatter.begin(), tp.reduce_scatter.end(), p + "combine.scatter") == 1);
    CHECK(std::count(tp.all_gather.begin(), tp.all_gather.end(), input_gather) == 0);
    const Hardware hw = builtin_cluster("dgx-h100").hardware;
    CHECK(flops_named(both, analyze(both, hw), ".experts.") == flops_named(tp_ep, analyze(tp_ep, hw), ".experts."));
}

void check_refused(const std::string& prefix, std::initializer_list<Bad> bad) {
    for (const Bad& b : bad) {
        INFO(b.args);
        const auto e = test::run_cli(prefix + b.args);
        CHECK(e.code == 2);
        CHECK_THAT(e.out, Catch::Contains(b.message));
    }
}

}  // namespace

TEST_CASE("llama-2-7b at tp 8: a rank's weights, GEMM FLOPs and all-reduces, by hand", "[parallel][tp][hf]") {
    // Llama-2-7b: d 4096, 32 layers, 32 heads (32 key/value heads) of 128, MLP 11008, vocabulary
    // 32000, no biases, untied LM head, float16. On 8 ranks a rank holds 4 query and 4 key/value
    // heads: q, k, v [512, 4096] and o_proj [4096, 512] (4 d^2 / 8), gate and up [1376, 4096] and
    // down [4096, 1376] (3 d ffn / 8), the embedding and the LM head 32000 / 8 = 4000 rows each, and
    // every RMSNorm weight whole (2 a layer and the final one).
    const std::int64_t d = 4096, ffn = 11008, vocab = 32000, layers = 32, t = 8;
    const Graph full = forward("llama-2-7b", 1, 512), rank = forward("llama-2-7b", 8, 512);
    CHECK(test::parameter_count(full) == 6738415616);  // Llama-2-7b's num_parameters()
    CHECK(test::parameter_count(rank) == 2 * (vocab / t) * d + layers * (4 * d * d / t + 3 * d * ffn / t + 2 * d) + d);
    CHECK(test::parameter_count(rank) == 842534912);
    CHECK(shape_of(rank, "model.layers.0.self_attn.k_proj.weight") == Shape{512, d});
    CHECK(shape_of(rank, "model.layers.0.self_attn.o_proj.weight") == Shape{d, 512});
    CHECK(shape_of(rank, "model.layers.0.mlp.down_proj.weight") == Shape{d, 1376});
    CHECK(shape_of(rank, "lm_head.weight") == Shape{4000, d});
    CHECK(shape_of(rank, "model.norm.weight") == Shape{d});

    // Every GEMM is split 8 ways (the projections by columns or rows, the LM head by vocabulary,
    // the attention's score and context GEMMs by heads): exactly an eighth of the FLOPs.
    const Hardware hw = builtin_cluster("dgx-a100").hardware;
    const Analysis af = analyze(full, hw), ar = analyze(rank, hw);
    CHECK(flops_of(rank, ar, OpKind::linear) == flops_of(full, af, OpKind::linear) / 8);
    CHECK(flops_of(rank, ar, OpKind::linear) ==
          2.0 * 512 * (layers * (4 * d * d + 3 * d * ffn) + vocab * d) / 8);  // 2 x tokens x weights, no biases
    const double attn_full = flops_of(full, af, OpKind::matmul) + flops_of(full, af, OpKind::attention);
    CHECK(attn_full > 0);
    CHECK(flops_of(rank, ar, OpKind::matmul) + flops_of(rank, ar, OpKind::attention) == attn_full / 8);
    // The replicated RMSNorms do the whole work on each rank.
    CHECK(flops_of(rank, ar, OpKind::rmsnorm) == flops_of(full, af, OpKind::rmsnorm));

    // The all-reduces: the embedding's partial rows, then o_proj and down_proj each layer, listed in
    // order; the loss vocabulary-parallel.
    REQUIRE(rank.tensor_parallel.degree == 8);
    REQUIRE(rank.tensor_parallel.all_reduce.size() == 1 + 2 * 32);
    CHECK(rank.tensor_parallel.all_reduce[0] == "model.embed_tokens");
    CHECK(rank.tensor_parallel.all_reduce[1] == "model.layers.0.self_attn.o_proj");
    CHECK(rank.tensor_parallel.all_reduce[2] == "model.layers.0.mlp.down_proj");
    CHECK(rank.tensor_parallel.vocab_parallel_loss == std::vector<std::string>{"loss"});

    // A training step on a DGX A100: 65 all-reduces forward and 65 backward of batch 2 x seq 512 x
    // d 4096 x 2 bytes (float16), and the loss's 3 of a float a token.
    const Cluster c = builtin_cluster("dgx-a100");
    ModelOverrides ov;
    ov.batch = 2;
    ov.seq = 512;
    ov.tp = 8;
    const Graph step = build_training_step(load_model_arg("llama-2-7b", ov), TrainingOptions{});
    const Analysis as = analyze(step, c.hardware);
    const ParallelAnalysis p = analyze_parallel(step, as, c, ParallelOptions{});
    CHECK(p.tp == 8);
    CHECK(p.tp_collectives == 2 * 65 + 3);
    CHECK(p.tp_example.bytes == 2.0 * 512 * 4096 * 2);
    const double loss_reduce = collective_cost(c, Collective::all_reduce, 4.0 * 2 * 512, CommGroup{8, 8}).time_s;
    CHECK(p.tp_comm_s == Approx(130 * p.tp_example.time_s + 3 * loss_reduce).epsilon(1e-12));
}

TEST_CASE("the command line splits a Hugging Face model: analyze and plan", "[parallel][tp][hf][cli]") {
    const std::string out = test::tmp_path("llama-tp.json");
    const auto r = test::run_cli("analyze llama-2-7b --mode training --seq 1024 --cluster dgx-a100 --tp 8 --dp 1 --global-batch 8 -q -o '" +
                                 out + "'");
    REQUIRE(r.code == 0);
    const auto p = nlohmann::json::parse(htmltest::slurp(out))["parallel"];
    // 8 micro-batches of 1 x 1024 tokens, each 130 all-reduces of 1024 x 4096 x 2 bytes and 3 of the loss.
    CHECK(p["tp_collectives"].get<int>() % 133 == 0);
    // A config.json takes the same options as the preset.
    const auto f = test::run_cli("analyze '" + test::source_path("tests/data/hf/Meta-Llama-3-8B/config.json") +
                                 "' --mode training --seq 256 --cluster dgx-a100 --tp 8 -q");
    CHECK(f.code == 0);
}

TEST_CASE("grouped-query attention and experts under tp: llama-3-8b and mixtral", "[parallel][tp][hf]") {
    // Llama-3-8B has 8 key/value heads for 32 query heads: at tp 8 a rank holds 4 query heads and
    // 1 key/value head (k_proj [128, 4096]), shared by its 4 query heads.
    const Graph g8 = forward("llama-3-8b", 8, 256);
    CHECK(shape_of(g8, "model.layers.0.self_attn.q_proj.weight") == Shape{4 * 128, 4096});
    CHECK(shape_of(g8, "model.layers.0.self_attn.k_proj.weight") == Shape{128, 4096});
    CHECK(shape_of(g8, "model.layers.0.mlp.gate_proj.weight") == Shape{14336 / 8, 4096});
    // 128256 / 8 = 16032 rows of the vocabulary.
    CHECK(shape_of(g8, "model.embed_tokens.weight") == Shape{16032, 4096});
    // At tp 16 each rank would hold half a key/value group: Megatron-core divides num_query_groups
    // by the tensor-parallel size and refuses it, and so does the training graph (inference phases
    // replicate the heads, as vLLM).
    CHECK_THROWS_WITH(forward("llama-3-8b", 16, 256), Catch::Contains("num_key_value_heads: --tp 16 must divide the 8 key/value heads"));

    // Mixtral-8x7B at tp 2: each of the 8 experts' w1, w3 [7168, 4096] and w2 [4096, 7168], the
    // router [8, 4096] whole; one all-reduce of the block's combined output a layer.
    const Graph m = forward("mixtral-8x7b", 2, 256);
    CHECK(shape_of(m, "model.layers.0.block_sparse_moe.experts.3.w1.weight") == Shape{7168, 4096});
    CHECK(shape_of(m, "model.layers.0.block_sparse_moe.experts.3.w2.weight") == Shape{4096, 7168});
    CHECK(shape_of(m, "model.layers.0.block_sparse_moe.gate.weight") == Shape{8, 4096});
    REQUIRE(m.tensor_parallel.all_reduce.size() == 1 + 2 * 32);
    CHECK(m.tensor_parallel.all_reduce[2] == "model.layers.0.block_sparse_moe.combine");
    // Per rank: half of everything but the router and the norms (2 a layer, the final one).
    const Graph m1 = forward("mixtral-8x7b", 1, 256);
    const std::int64_t whole = 32 * (8 * 4096 + 2 * 4096) + 4096;
    CHECK(test::parameter_count(m) == (test::parameter_count(m1) - whole) / 2 + whole);

    // Qwen1.5-MoE: the routed experts (moe_intermediate_size 1408) and the shared expert (5632)
    // split, the shared expert's gate whole; one all-reduce of the sum.
    const Graph q = forward("qwen1.5-moe-a2.7b", 4, 256);
    CHECK(shape_of(q, "model.layers.0.mlp.experts.0.down_proj.weight") == Shape{2048, 1408 / 4});
    CHECK(shape_of(q, "model.layers.0.mlp.shared_expert.up_proj.weight") == Shape{5632 / 4, 2048});
    CHECK(shape_of(q, "model.layers.0.mlp.shared_expert_gate.weight") == Shape{1, 2048});
    CHECK(q.tensor_parallel.all_reduce[2] == "model.layers.0.mlp.add_shared");
}

TEST_CASE("sequence parallelism on a Hugging Face decoder", "[parallel][tp][sp][hf]") {
    // Llama-2-7b at tp 4 with sp over 512 tokens: the RMSNorms run on 128 tokens, the projections
    // on the gathered 512; per layer 2 all-gathers and 2 reduce-scatters, plus the embedding's
    // reduce-scatter and the LM head's all-gather; no all-reduce.
    const Graph g = forward("llama-2-7b", 4, 512, true);
    REQUIRE(g.tensor_parallel.sequence_parallel);
    CHECK(g.tensor_parallel.all_reduce.empty());
    CHECK(g.tensor_parallel.all_gather.size() == 2 * 32 + 1);
    CHECK(g.tensor_parallel.reduce_scatter.size() == 2 * 32 + 1);
    CHECK(g.tensor(g.node(g.find_node("model.layers.0.input_layernorm")).outputs[0]).desc.shape == Shape{1, 128, 4096});
    CHECK(g.tensor(g.node(g.find_node("model.layers.0.self_attn.q_proj")).outputs[0]).desc.shape == Shape{1, 512, 1024});
    const Graph t = forward("llama-2-7b", 4, 512);
    const Hardware hw = builtin_cluster("dgx-a100").hardware;
    CHECK(flops_of(g, analyze(g, hw), OpKind::rmsnorm) == Approx(flops_of(t, analyze(t, hw), OpKind::rmsnorm) / 4));
    const auto odd = test::run_cli("analyze llama-2-7b --mode training --seq 250 --cluster dgx-a100 --tp 4 --sp -q");
    CHECK(odd.code == 2);
    CHECK_THAT(odd.out, Catch::Contains("--tp 4 must divide the sequence length 250"));
}

TEST_CASE("tensor-parallel errors name --tp and the config key", "[parallel][tp][hf][errors]") {
    check_refused("analyze --mode training --cluster dgx-a100 -q ",
                  {
                      {"llama-2-7b --tp 3", "/config/num_attention_heads: --tp 3 must divide the 32 attention heads"},
                      {"bert-base-uncased --tp 2", "has no tensor-parallel split"},
                      {"bert-base-uncased --dp 2 --ep 2", "has no expert-parallel split"},
                      {"bert-base-uncased --pp 2", "has no pipeline split"},
                  });
    // Llama-2-7b's 11008 MLP features split by every tp that splits its 32 heads: a config with
    // 11004 (4 x 2751) does not split 8 ways.
    const std::string path = test::tmp_path("llama-mlp.json");
    htmltest::spit(path, R"({"format": "roofline-model/1", "template": "llama-2-7b", "config": {"intermediate_size": 11004}})");
    const auto e = test::run_cli("analyze '" + path + "' --mode training --cluster dgx-a100 --tp 8 -q");
    CHECK(e.code == 2);
    CHECK_THAT(e.out, Catch::Contains("/config/intermediate_size: --tp 8 must divide the 11004 MLP features"));
    CHECK(test::run_cli("analyze '" + path + "' --mode training --cluster dgx-a100 --tp 4 -q").code == 0);
}

TEST_CASE("pipeline stages of a Hugging Face decoder: layers, embedding and head", "[parallel][pp][hf]") {
    // Llama-2-7b in 4 stages: 8 layers each; the first stage holds the embedding (32000 x 4096),
    // the last the final norm and the LM head (32000 x 4096); the stages' weights sum to the model's.
    const std::int64_t d = 4096, layer = 4 * d * d + 3 * d * 11008 + 2 * d;
    std::int64_t sum = 0;
    for (int s = 0; s < 4; ++s) {
        ModelOverrides ov;
        ov.seq = 256;
        ov.pp = 4;
        ov.stage = s;
        const Graph g = load_model_arg("llama-2-7b", ov);
        CHECK(g.pipeline.stages == 4);
        CHECK(g.pipeline.layers == 8);
        CHECK(g.pipeline.input == (s == 0 ? "" : "hidden"));
        CHECK(test::parameter_count(g) == 8 * layer + (s == 0 ? 32000 * d : 0) + (s == 3 ? 32000 * d + d : 0));
        CHECK((g.find_node("model.layers." + std::to_string(8 * s) + ".mlp.down_proj") >= 0));
        sum += test::parameter_count(g);
    }
    CHECK(sum == 6738415616);
    // Gemma ties the LM head to the embedding: the last stage holds its own copy, reduced with the first's.
    ModelOverrides ov;
    ov.seq = 256;
    ov.pp = 4;
    ov.stage = 3;
    CHECK(load_model_arg("gemma-7b", ov).pipeline.shared_embedding == "lm_head.weight");
    const auto e = test::run_cli("analyze llama-2-7b --mode training --cluster dgx-a100 --pp 3 -q");
    CHECK(e.code == 2);
    CHECK_THAT(e.out, Catch::Contains("/config/num_hidden_layers: --pp 3 must divide the 32 layers"));
    const auto ok =
        test::run_cli("analyze llama-2-7b --mode training --seq 512 --cluster dgx-a100 --tp 2 --sp --pp 4 --dp 1 --global-batch 8 -q");
    CHECK(ok.code == 0);
}

namespace {

// A Hugging Face mixture of experts at batch 1 on `ep` expert-parallel ranks, with routing options
// (--expert-load, --capacity-factor, --pad-to-capacity) when given.
Graph routed(const std::string& model, int ep, std::int64_t seq, const std::string& load, std::optional<double> capacity = std::nullopt,
             bool pad = false) {
    ModelOverrides ov;
    ov.seq = seq;
    ov.ep = ep;
    ov.expert_load = load;
    ov.capacity_factor = capacity;
    ov.pad_to_capacity = pad;
    return load_model_arg(model, ov);
}

Graph expert_parallel(const std::string& model, int ep, std::int64_t seq) { return routed(model, ep, seq, ""); }

}  // namespace

TEST_CASE("mixtral-8x7b at ep 8: one expert a rank, the all-to-alls and the experts' FLOPs, by hand", "[parallel][ep][hf]") {
    // Mixtral-8x7B: d 4096, 32 layers, 8 SwiGLU experts of 14336 (w1, w3 [14336, 4096], w2 [4096,
    // 14336]), top-2, bf16. On 8 expert-parallel ranks a rank holds one expert a layer: the
    // experts' weights drop by 7 x 3 x d x 14336 a layer; attention, router (gate [8, 4096]), norms,
    // embedding and LM head stay whole.
    const std::int64_t d = 4096, inter = 14336, layers = 32, seq = 512, k = 2;
    const Graph full = expert_parallel("mixtral-8x7b", 1, seq), rank = expert_parallel("mixtral-8x7b", 8, seq);
    CHECK(full.expert_parallel.degree == 1);
    CHECK(full.expert_parallel.all_to_all.empty());
    CHECK(rank.expert_parallel.degree == 8);
    CHECK(test::parameter_count(full) == 46702792704);  // Mixtral-8x7B's num_parameters()
    CHECK(test::parameter_count(rank) == 46702792704 - layers * 7 * 3 * d * inter);
    // The parameters listed for the expert group's reduction: the rank's expert, 3 weights a layer,
    // an eighth of the experts' 32 x 8 x 3 x d x 14336.
    REQUIRE(rank.expert_parallel.parameters.size() == static_cast<std::size_t>(layers * 3));
    std::int64_t expert_weights = 0;
    for (const std::string& p : rank.expert_parallel.parameters) expert_weights += numel(shape_of(rank, p));
    CHECK(expert_weights == layers * 8 * 3 * d * inter / 8);
    CHECK(shape_of(rank, "model.layers.0.block_sparse_moe.gate.weight") == Shape{8, d});
    CHECK(rank.find_node("model.layers.0.block_sparse_moe.experts.1.w1") < 0);
    // Two all-to-alls a layer (dispatch, combine), each the rank's seq x top-2 token copies of d
    // bf16 values: 512 x 2 x 4096 x 2 bytes = 8 MiB.
    REQUIRE(rank.expert_parallel.all_to_all.size() == static_cast<std::size_t>(2 * layers));
    for (const std::string& n : rank.expert_parallel.all_to_all) {
        const TensorDesc& out = rank.tensor(rank.find_tensor(n)).desc;
        CHECK(out.shape == Shape{seq * k, d});
        CHECK(out.bytes() == seq * k * d * 2);
    }
    // Uniform routing: with one rank each of the 8 experts runs 512 x 2 / 8 = 128 copies; on 8
    // ranks the rank's one expert runs the 128 copies for it from each of the 8 ranks, 1024. The
    // same 1024 rows through the same three GEMMs: the rank's expert FLOPs equal the one-rank
    // graph's, 2 x 1024 x 3 x d x 14336.
    const Hardware hw = builtin_cluster("dgx-a100").hardware;
    const Analysis af = analyze(full, hw), ar = analyze(rank, hw);
    const double gemm = 2.0 * static_cast<double>(seq * k) * 3 * d * inter;
    CHECK(flops_named(full, af, ".experts.") > 0);
    CHECK(flops_of(rank, ar, OpKind::linear) == flops_of(full, af, OpKind::linear));
    CHECK(flops_named(rank, ar, "layers.0.block_sparse_moe.experts.0.w") == gemm);
    CHECK(shape_of(rank, "model.layers.0.block_sparse_moe.experts.0.gather") == Shape{seq * k, d});
}

TEST_CASE("mixtral-8x7b with --tp 2 --sp --ep 2: a rank dispatches its sequence shard, the copies gathered for the experts",
          "[parallel][ep][sp][hf]") {
    // Megatron-core's alltoall token dispatcher under sequence parallelism, at seq 512, tp 2, ep 2
    // (4 of the 8 experts a rank): the MoE layer takes the rank's 256 tokens, not the gathered
    // sequence; the all-to-alls carry its 256 x top-2 copies of d = 4096 bf16 values, 4 MiB (8 MiB
    // without --sp); the received copies are all-gathered over the 2 tensor-parallel ranks to
    // 512 x 2 x 4096 x 2 B = 8 MiB and the experts' outputs reduce-scattered back; the experts'
    // FLOPs equal those of --tp 2 --ep 2 (the same copies reach the same experts).
    const std::int64_t d = 4096, seq = 512, k = 2, mib = 1024 * 1024;
    const Graph both = moe_rank("mixtral-8x7b", seq, true), tp_ep = moe_rank("mixtral-8x7b", seq, false);
    const std::string p = "model.layers.0.block_sparse_moe.";
    CHECK(output_of(both, p + "dispatch.all_to_all").bytes() == 4 * mib);
    CHECK(output_of(both, p + "dispatch.gather").bytes() == 8 * mib);
    check_sp_dispatch(both, tp_ep, p, seq, k, d, "model.layers.0.mlp.all_gather");
    // Non-uniform routing is refused.
    check_refused(
        "analyze --mode training --seq 256 --cluster dgx-h100 --tp 2 --sp --dp 2 --ep 2 -q ",
        {
            {"mixtral-8x7b --expert-load zipf:1",
             "--sp with expert parallelism (--ep) is modelled for mixtral and qwen2_moe under uniform"},
            {"qwen1.5-moe-a2.7b --capacity-factor 1.25", "--sp with expert parallelism (--ep) is modelled for mixtral and qwen2_moe"},
        });
}

TEST_CASE("qwen1.5-moe-a2.7b with --tp 2 --sp --ep 2: the routed experts as mixtral's, the shared expert a sequence-parallel MLP",
          "[parallel][ep][sp][hf]") {
    // Qwen1.5-MoE-A2.7B at seq 256, tp 2, ep 2 (30 of the 60 experts a rank, top-4, d = 2048, bf16):
    // the routed experts take the rank's 128 tokens, so the all-to-alls carry 128 x 4 copies x 2048
    // x 2 B = 2 MiB (4 MiB without --sp) and the received copies are gathered to 256 x 4 x 2048 x
    // 2 B = 4 MiB. The shared expert (5632 features, 2816 a rank) is the dense MLP's kind of
    // tensor-parallel MLP: its input, the rank's shard, all-gathered to [1, 256, 2048] (1 MiB) and
    // its output reduce-scattered back, where the per-token gate scales it (Megatron-core's
    // SharedExpertMLP); the layer's input is not gathered for the routed experts. Experts' and shared
    // expert's FLOPs equal those of --tp 2 --ep 2 (the same tokens reach them).
    const std::int64_t d = 2048, seq = 256, k = 4, mib = 1024 * 1024;
    const Graph both = moe_rank("qwen1.5-moe-a2.7b", seq, true), tp_ep = moe_rank("qwen1.5-moe-a2.7b", seq, false);
    const auto out = output_of;
    const std::string p = "model.layers.0.mlp.";
    CHECK(out(both, p + "dispatch.all_to_all").bytes() == 2 * mib);
    check_sp_dispatch(both, tp_ep, p, seq, k, d, p + "all_gather");
    CHECK(out(both, p + "shared_expert.all_gather").shape == Shape{1, seq, d});
    CHECK(out(both, p + "shared_expert.all_gather").bytes() == 1 * mib);
    CHECK(out(both, p + "shared_expert.reduce_scatter").shape == Shape{1, seq / 2, d});
    CHECK(out(both, p + "add_shared").shape == Shape{1, seq / 2, d});
    const auto& tp = both.tensor_parallel;
    const auto count = [](const std::vector<std::string>& v, const std::string& name) { return std::count(v.begin(), v.end(), name); };
    CHECK(count(tp.all_gather, p + "shared_expert.all_gather") == 1);
    CHECK(count(tp.reduce_scatter, p + "shared_expert.reduce_scatter") == 1);
    CHECK(count(tp.reduce_scatter, p + "reduce_scatter") == 0);
    const Hardware hw = builtin_cluster("dgx-h100").hardware;
    const Analysis ab = analyze(both, hw), at = analyze(tp_ep, hw);
    // The shared expert's GEMMs run on the gathered sequence either way; its gate's scaling on the
    // rank's 128 tokens instead of 256 (24 layers x 128 x 2048 multiplies fewer).
    CHECK(flops_named(both, ab, ".shared_expert.", OpKind::linear) == flops_named(tp_ep, at, ".shared_expert.", OpKind::linear));
    CHECK(flops_named(tp_ep, at, ".shared_expert.scaled") - flops_named(both, ab, ".shared_expert.scaled") == 24.0 * 128 * d);
    // The job runs end to end on a cluster.
    CHECK(test::run_cli("analyze qwen1.5-moe-a2.7b --mode training --seq 256 --cluster dgx-h100 --tp 2 --sp --dp 2 --ep 2 -q").code == 0);
    // A dense layer between sparse ones (mlp_only_layers [1]) gathers its input and scatters its
    // output as without expert parallelism.
    const std::string path = test::tmp_path("qwen-moe-dense-layer.json");
    htmltest::spit(path, R"({"format": "roofline-model/1", "template": "qwen1.5-moe-a2.7b",
                            "config": {"num_hidden_layers": 2, "mlp_only_layers": [1]}})");
    ModelOverrides ov;
    ov.seq = seq, ov.tp = 2, ov.sp = true, ov.ep = 2;
    const Graph mixed = load_model_arg(path, ov);
    CHECK(count(mixed.tensor_parallel.all_gather, "model.layers.1.mlp.all_gather") == 1);
    CHECK(count(mixed.tensor_parallel.reduce_scatter, "model.layers.1.mlp.reduce_scatter") == 1);
    CHECK(count(mixed.tensor_parallel.all_gather, "model.layers.0.mlp.all_gather") == 0);
    CHECK(out(mixed, "model.layers.1.mlp.reduce_scatter").shape == Shape{1, seq / 2, d});
}

TEST_CASE("qwen1.5-moe-a2.7b at ep 4: 15 of 60 experts a rank, the shared expert whole", "[parallel][ep][hf]") {
    // Qwen1.5-MoE-A2.7B: d 2048, 24 layers, 60 experts of 1408 (top-4) and a shared expert of
    // 5632 in every layer. On 4 ranks a rank holds experts 0-14; the shared expert (not expert
    // parallel, as in Megatron-core's shared_experts) and its gate stay on every rank.
    const std::int64_t d = 2048, inter = 1408, layers = 24;
    const Graph full = expert_parallel("qwen1.5-moe-a2.7b", 1, 256), rank = expert_parallel("qwen1.5-moe-a2.7b", 4, 256);
    CHECK(rank.expert_parallel.degree == 4);
    CHECK(test::parameter_count(rank) == test::parameter_count(full) - layers * 45 * 3 * d * inter);
    CHECK(rank.expert_parallel.parameters.size() == static_cast<std::size_t>(layers * 15 * 3));
    CHECK(rank.find_node("model.layers.0.mlp.experts.14.down_proj") >= 0);
    CHECK(rank.find_node("model.layers.0.mlp.experts.15.down_proj") < 0);
    CHECK(shape_of(rank, "model.layers.0.mlp.shared_expert.gate_proj.weight") == Shape{5632, d});
    CHECK(shape_of(rank, "model.layers.0.mlp.shared_expert_gate.weight") == Shape{1, d});
    for (const std::string& p : rank.expert_parallel.parameters) CHECK(p.find("shared_expert") == std::string::npos);
    CHECK(rank.expert_parallel.all_to_all.size() == static_cast<std::size_t>(2 * layers));
}

TEST_CASE("expert-parallel errors name --ep and the config key", "[parallel][ep][hf][errors]") {
    check_refused("analyze --mode training --seq 256 --cluster dgx-a100 -q ",
                  {
                      {"mixtral-8x7b --dp 6 --ep 3", "/config/num_local_experts: --ep 3 must divide the 8 experts"},
                      {"qwen1.5-moe-a2.7b --dp 8 --ep 8", "/config/num_experts: --ep 8 must divide the 60 experts"},
                      {"mixtral-8x7b --dp 4 --ep 8", "--ep 8: the expert-parallel ranks are data-parallel ranks; it must divide --dp 4"},
                      {"llama-2-7b --dp 2 --ep 2", "/config/model_type: --ep 2: llama has no experts"},
                  });
    CHECK(test::run_cli("analyze mixtral-8x7b --mode training --seq 256 --cluster dgx-a100 --dp 8 --ep 8 -q").code == 0);
}

TEST_CASE("mixtral's experts under --expert-load and --capacity-factor, by hand", "[parallel][ep][moe][hf]") {
    // tests/data/hf/tiny-mixtral: d 512, 8 SwiGLU experts of 1024 (w1, w3 [1024, 512], w2 [512,
    // 1024]), top-2, bf16; a sequence of 64 tokens makes 128 token copies a layer. An expert running
    // n copies does 2 n x 3 x 512 x 1024 GEMM FLOPs (no biases), exactly (integer counts, no
    // tolerance). --expert-load 4,1,1,1,1,1,1,1 splits the 128 copies 128 x 4/11 = 46.5 and
    // 128/11 = 11.6: floors 46 and 11 (123), the 5 left to the largest remainders (0.64 > 0.55),
    // experts 1-5: rows 46, 12, 12, 12, 12, 12, 11, 11, as the GPT template's routing
    // (model/moe_routing.hpp expert_rows, shared).
    const std::string model = test::source_path("tests/data/hf/tiny-mixtral/config.json");
    const double d = 512, inter = 1024, per_copy = 2.0 * 3 * d * inter;
    const std::string layer0 = "layers.0.block_sparse_moe.experts.";
    const Hardware hw = builtin_cluster("dgx-a100").hardware;
    const auto expert_flops = [&](const Graph& g) { return flops_named(g, analyze(g, hw), layer0, OpKind::linear); };

    // One rank: the same 128 copies, only split differently: the experts' FLOPs are uniform's.
    const Graph uniform = expert_parallel(model, 1, 64), skewed = routed(model, 1, 64, "4,1,1,1,1,1,1,1");
    CHECK(expert_flops(uniform) == 128 * per_copy);
    CHECK(expert_flops(skewed) == 128 * per_copy);
    CHECK(shape_of(skewed, "model.layers.0.block_sparse_moe.experts.0.tokens") == Shape{1, 46, 512});
    CHECK(shape_of(skewed, "model.layers.0.block_sparse_moe.experts.7.tokens") == Shape{1, 11, 512});

    // --ep 2: rank 0 holds experts 0-3 (46 + 3 x 12 = 82 copies of a sequence), rank 1 experts
    // 4-7 (12 + 12 + 11 + 11 = 46). The document is the busiest rank, rank 0: every rank sends it 82
    // copies, so it runs 2 x 82 = 164 (uniform: 128), load factor 164 / 128 = 1.28125, and each
    // all-to-all carries its 164 x 512 bf16 receive buffer, 167,936 bytes.
    const Graph busy = routed(model, 2, 64, "4,1,1,1,1,1,1,1");
    CHECK(expert_flops(busy) == 164 * per_copy);
    CHECK(expert_flops(expert_parallel(model, 2, 64)) == 128 * per_copy);
    CHECK(busy.expert_parallel.load_factor == Approx(164.0 / 128).epsilon(1e-12));
    REQUIRE(busy.expert_parallel.all_to_all.size() == 2 * 4);  // dispatch and combine, 4 layers
    for (const std::string& n : busy.expert_parallel.all_to_all) CHECK(busy.tensor(busy.find_tensor(n)).desc.bytes() == 164 * 512 * 2);
    CHECK(busy.expert_parallel.parameters.size() == 4 * 4 * 3);  // 4 experts a rank, 3 weights, 4 layers

    // --capacity-factor 1 with that load: each expert takes at most ceil(1 x 128 / 8) = 16 copies;
    // expert 0 drops 46 - 16 = 30: 16 + 5 x 12 + 2 x 11 = 98 copies run.
    CHECK(expert_flops(routed(model, 1, 64, "4,1,1,1,1,1,1,1", 1.0)) == 98 * per_copy);
    // --capacity-factor 1.25 --pad-to-capacity, uniform: every expert runs its whole buffer of
    // ceil(1.25 x 128 / 8) = 20 rows, 160 in all: 1.25x uniform's GEMMs.
    CHECK(expert_flops(routed(model, 1, 64, "", 1.25, true)) == 160 * per_copy);
    // The GPT template's experts under the same options run the same rows (one routing for both).
    CHECK(shape_of(routed(model, 1, 64, "", 1.25, true), "model.layers.0.block_sparse_moe.experts.3.tokens") == Shape{1, 20, 512});
    const nlohmann::json gpt = {{"format", "roofline-model/1"},
                                {"template", "gpt"},
                                {"config",
                                 {{"preset", "gpt2-small"},
                                  {"experts", 8},
                                  {"top_k", 2},
                                  {"seq", 64},
                                  {"batch", 1},
                                  {"capacity_factor", 1.25},
                                  {"pad_to_capacity", true}}}};
    CHECK(shape_of(load_model(gpt, "gpt-moe", {}), "h0.moe.expert_3.tokens") == Shape{1, 20, 768});

    // One load a layer (--expert-load L0;L1;L2;L3): layer 0 skewed as above, layers 1-3 uniform. The
    // document runs every layer's busiest rank: 164 copies in layer 0, 128 in the others; load
    // factor (164 + 3 x 128) / (4 x 128) = 1.0703.
    const Graph layered = routed(model, 2, 64, "4,1,1,1,1,1,1,1;uniform;uniform;uniform");
    const Analysis al = analyze(layered, hw);
    CHECK(flops_named(layered, al, layer0, OpKind::linear) == 164 * per_copy);
    CHECK(flops_named(layered, al, "layers.1.block_sparse_moe.experts.", OpKind::linear) == 128 * per_copy);
    CHECK(layered.expert_parallel.load_factor == Approx((164.0 + 3 * 128) / (4 * 128)).epsilon(1e-12));
    CHECK_THAT(layered.description, Catch::Contains("routing per layer (4 loads); the busiest, layer 0"));
    check_refused(
        "analyze '" + model + "' --seq 64 -q ",
        {{"--expert-load 'zipf:1;uniform'", "--expert-load: expected one load per layer (4), got 2"},
         {"--expert-load '1,2;uniform;uniform;uniform'", "--expert-load: entry 0: expected one share per expert (8), got 2"},
         {"--expert-load 'uniform;1,-1,1,1,1,1,1,1;uniform;uniform'", "--expert-load: layer 1, share 1: expected a non-negative number"}});

    // A training step builds and the command line takes the flags.
    ModelOverrides ov;
    ov.seq = 64;
    ov.ep = 2;
    ov.expert_load = "zipf:1.0";
    CHECK(build_training_step(load_model_arg(model, ov), TrainingOptions{}).nodes().size() > 0);
    CHECK(
        test::run_cli("analyze '" + model + "' --mode training --seq 64 --cluster dgx-a100 --dp 2 --ep 2 --expert-load zipf:1.0 -q").code ==
        0);
}

TEST_CASE("qwen1.5-moe-a2.7b padded to capacity: the routed experts grow, the shared expert does not", "[parallel][moe][hf]") {
    // Qwen1.5-MoE-A2.7B: 60 experts of 1408 (top-4) and a shared expert of 5632, d 2048. A sequence
    // of 90 tokens makes 360 copies; --capacity-factor 1.5 --pad-to-capacity gives every expert
    // ceil(1.5 x 360 / 60) = 9 rows, 540 in all (uniform: 360), each 2 x 3 x 2048 x 1408 FLOPs: exact.
    const Hardware hw = builtin_cluster("dgx-a100").hardware;
    const Graph uniform = expert_parallel("qwen1.5-moe-a2.7b", 1, 90), padded = routed("qwen1.5-moe-a2.7b", 1, 90, "", 1.5, true);
    const Analysis au = analyze(uniform, hw), ap = analyze(padded, hw);
    const double per_copy = 2.0 * 3 * 2048 * 1408;
    CHECK(flops_named(uniform, au, "layers.0.mlp.experts.", OpKind::linear) == 360 * per_copy);
    CHECK(flops_named(padded, ap, "layers.0.mlp.experts.", OpKind::linear) == 540 * per_copy);
    CHECK(flops_named(padded, ap, "layers.0.mlp.shared_expert.", OpKind::linear) ==
          flops_named(uniform, au, "layers.0.mlp.shared_expert.", OpKind::linear));
    CHECK_THAT(padded.description, Catch::Contains("capacity factor 1.5 (9 copies an expert a sequence, padded)"));
}

TEST_CASE("routing option errors name the flag", "[parallel][moe][hf][errors]") {
    check_refused("analyze --mode training --seq 64 -q ",
                  {
                      {"llama-2-7b --expert-load zipf:1", "--expert-load: llama has no experts to route to"},
                      {"mixtral-8x7b --expert-load 1,2", "--expert-load: expected one share per expert (8), got 2"},
                      {"mixtral-8x7b --expert-load 1,-1,1,1,1,1,1,1", "--expert-load: entry 1: expected a non-negative number"},
                      {"mixtral-8x7b --expert-load zipf:x", "--expert-load: expected an array of one non-negative share per expert"},
                      {"mixtral-8x7b --pad-to-capacity", "--pad-to-capacity: padding to capacity needs a capacity"},
                      {"falcon-7b --capacity-factor 1.25", "(model_type 'falcon') has no experts it routes"},
                  });
}

TEST_CASE("context parallelism on a Hugging Face decoder: a rank's tokens, the gathered keys and values, by hand", "[parallel][cp][hf]") {
    // Llama-3-8B cut to 2 layers (d 4096, 32 query heads and 8 key/value heads of 128, bf16) at
    // batch 1 x 8192 on 4 context-parallel ranks (the GPT template's all-gather form, one
    // ContextParallelSplit): a rank holds 8192 / 4 = 2048 tokens (dims' seq, every token-wise op);
    // each layer all-gathers K and V before they are repeated to the query heads, so a gathered
    // tensor is the whole sequence's 8 key/value heads, [1, 8, 8192, 128], 16 MiB in bf16. A ring
    // all-gather sends (C - 1) / C of it from each rank (its 2048-token shard, 4 MiB, passed on 3
    // hops): 12 MiB for K and 12 for V, 24 MiB a rank a layer forward. Attention's work (scores,
    // mask, softmax, P V: all proportional to Sq x Sk) is 2048 x 8192 against 8192 x 8192: exactly 1/4.
    const std::string path = test::tmp_path("llama3-2-layers.json");
    htmltest::spit(path, R"({"format": "roofline-model/1", "template": "llama-3-8b", "config": {"num_hidden_layers": 2}})");
    const auto build = [&](int cp) {
        ModelOverrides ov;
        ov.seq = 8192;
        ov.cp = cp;
        return load_model_arg(path, ov);
    };
    const Graph one = build(1), four = build(4);
    REQUIRE(four.context_parallel.degree == 4);
    CHECK(four.dims.at("seq") == 2048);
    CHECK(shape_of(four, "model.layers.0.input_layernorm") == Shape{1, 2048, 4096});
    REQUIRE(four.context_parallel.all_gather.size() == 2 * 2);  // K and V, 2 layers
    CHECK(four.context_parallel.all_gather[0] == "model.layers.0.self_attn.k_gather");
    CHECK(four.context_parallel.all_gather[1] == "model.layers.0.self_attn.v_gather");
    const double gathered = 8.0 * 8192 * 128 * 2;
    for (const std::string& n : four.context_parallel.all_gather) {
        const TensorDesc& t = four.tensor(four.find_tensor(n)).desc;
        CHECK(t.shape == Shape{1, 8, 8192, 128});
        CHECK(static_cast<double>(t.bytes()) == gathered);
    }
    CHECK(2 * gathered * bus_factor(Collective::all_gather, 4) == 24.0 * 1024 * 1024);
    CHECK(shape_of(four, "model.layers.0.self_attn.k_repeat") == Shape{1, 32, 8192, 128});
    const Hardware hw = builtin_cluster("dgx-a100").hardware;
    CHECK(flops_of(four, analyze(four, hw), OpKind::attention) == flops_of(one, analyze(one, hw), OpKind::attention) / 4);

    // A training step on a DGX A100 (tp 1, cp 4, dp 1): the 4 all-gathers forward and the 4
    // reduce-scatters of their gradients backward, each of the gathered 16 MiB on 4 ranks of a node.
    const Cluster c = builtin_cluster("dgx-a100");
    ModelOverrides ov;
    ov.seq = 8192;
    ov.cp = 4;
    const Graph step = build_training_step(load_model_arg(path, ov), TrainingOptions{});
    // Analysed as `analyze` runs the ring and all-gather forms (cp_runs_flash): sdpa as flash attention.
    FusionOptions flash;
    flash.flash_always = true;
    const Evaluated ev = evaluate_option(step, c.hardware, std::nullopt, false, AnalysisOptions{}, flash);
    const Analysis& as = ev.analysis;
    const ParallelAnalysis p = analyze_parallel(step, as, c, ParallelOptions{});
    CHECK(p.cp == 4);
    ParallelOptions gather;
    gather.cp_comm = CpComm::all_gather;
    const ParallelAnalysis pg = analyze_parallel(step, as, c, gather);
    CHECK(pg.cp_collectives == 8);
    const CommGroup group{4, 4};
    CHECK(pg.cp_comm_s == Approx(4 * (collective_cost(c, Collective::all_gather, gathered, group).time_s +
                                      collective_cost(c, Collective::reduce_scatter, gathered, group).time_s))
                              .epsilon(1e-12));
    // The ring form (the default): each layer's keys and values, 2 x 16 MiB, pass around the 4
    // ranks in 3 send/recv steps of a quarter forward and in 4 steps backward (the keys and values,
    // then both with their gradients, then the gradients): 2 x 3 = 6 blocks of 8 MiB, 48 MiB.
    CHECK(p.cp_collectives == 2 * (3 + 4));
    const RingExchange back = ring_exchange(c, group, 2 * gathered, 0, true);
    CHECK(back.bytes_sent == 48.0 * 1024 * 1024);
    CHECK(p.cp_comm_s == Approx(2 * (ring_exchange(c, group, 2 * gathered, 0, false).comm_s + back.comm_s)).epsilon(1e-12));

    // With --tp 2 --sp the rank's 2048 tokens are sharded again between the norms: 1024.
    ov.tp = 2;
    ov.sp = true;
    const Graph both = load_model_arg(path, ov);
    CHECK(shape_of(both, "model.layers.0.input_layernorm") == Shape{1, 1024, 4096});
    CHECK(shape_of(both, "model.layers.0.self_attn.k_gather") == Shape{1, 4, 8192, 128});

    // search weighs --cp candidates for the llama family too.
    const std::string out = test::tmp_path("search-hf-cp.json");
    const auto s = test::run_cli("search '" + test::source_path("tests/data/hf/tiny-mixtral/config.json") +
                                 "' --gpus 4 --cluster dgx-a100 --global-batch 8 --seq 512 --cp 1,2 --micro-batches 1 --recompute none "
                                 "--zero 0 --interleave 1 --sp off -q -o '" +
                                 out + "'");
    REQUIRE(s.code == 0);
    int with_cp = 0;
    const nlohmann::json found = nlohmann::json::parse(htmltest::slurp(out));
    for (const auto& k : found["candidates"]) with_cp += k["cp"].get<int>() == 2 ? 1 : 0;
    CHECK(with_cp > 0);

    // Bad input names --cp: a sequence that does not split into 2 x cp chunks, --sp's tp not
    // dividing a rank's tokens, a Hugging Face family without the split.
    check_refused("analyze --mode training --cluster dgx-a100 -q ",
                  {
                      {"llama-2-7b --seq 1000 --cp 16", "--cp 16: the sequence length 1000 must be a multiple of 2 x cp = 32"},
                      {"llama-2-7b --seq 1032 --cp 4 --tp 8 --sp", "--sp: --tp 8 must divide a context-parallel rank's 258 tokens"},
                      {"t5-small --seq 512 --cp 2", "--cp 2: template 't5-small' (model_type 't5') has no context-parallel split"},
                  });
}

TEST_CASE("context parallelism on gpt2, opt, falcon, phi and bert: a rank's tokens and the gathered keys and values, by hand",
          "[parallel][cp][hf]") {
    // Each family as the llama family (one ContextParallelSplit): with cp ranks a rank holds
    // seq / cp tokens (the dims' seq, every token-wise op), and every layer gathers its keys and
    // values of the whole sequence, [batch, key/value heads, seq, head_dim] (before they are
    // repeated to the query heads), 2 bytes an element (bf16 or f16 checkpoints; gpt2, opt and bert
    // name none: bf16). The score GEMM (or the composite attention op) of the rank's seq / cp
    // queries against all seq keys does exactly 1/cp of the single rank's work.
    struct Family {
        std::string model, first_key, norm;
        std::int64_t seq;
        int cp, layers;
        Shape gathered;  // [1, key/value heads, seq, head_dim]
        std::int64_t d;
    };
    const std::string gpt2 = test::source_path("tests/data/hf/gpt2/config.json");
    const std::string opt = test::source_path("tests/data/public/neusight/configs/opt_13.json");
    const std::string bert = test::source_path("tests/data/hf/bert-base-uncased/config.json");
    const std::vector<Family> families = {
        // GPT-2: 12 layers, 12 heads of 64.
        {gpt2, "transformer.h.0.attn.key_gather", "transformer.h.0.ln_1", 1024, 4, 12, {1, 12, 1024, 64}, 768},
        // OPT-1.3b: 24 layers, 32 heads of 64.
        {opt,
         "model.decoder.layers.0.self_attn.key_gather",
         "model.decoder.layers.0.self_attn_layer_norm",
         2048,
         2,
         24,
         {1, 32, 2048, 64},
         2048},
        // Falcon-7B: 32 layers, 71 query heads of 64 sharing one key/value head (multi_query).
        {"falcon-7b", "transformer.h.0.self_attention.key_gather", "transformer.h.0.input_layernorm", 2048, 2, 32, {1, 1, 2048, 64}, 4544},
        // Phi-2: 32 layers, 32 heads of 80.
        {"phi-2", "model.layers.0.self_attn.k_gather", "model.layers.0.input_layernorm", 2048, 4, 32, {1, 32, 2048, 80}, 2560},
        // BERT-base: 12 layers, 12 heads of 64, bidirectional.
        {bert,
         "bert.encoder.layer.0.attention.self.key_gather",
         "bert.encoder.layer.0.attention.output.LayerNorm",
         512,
         2,
         12,
         {1, 12, 512, 64},
         768},
    };
    const Hardware hw = builtin_cluster("dgx-a100").hardware;
    for (const Family& f : families) {
        INFO(f.model);
        ModelOverrides ov;
        ov.seq = f.seq;
        const Graph one = load_model_arg(f.model, ov);
        ov.cp = f.cp;
        const Graph rank = load_model_arg(f.model, ov);
        REQUIRE(rank.context_parallel.degree == f.cp);
        CHECK(rank.dims.at("seq") == f.seq / f.cp);
        CHECK(shape_of(rank, f.norm) == Shape{1, f.seq / f.cp, f.d});
        REQUIRE(rank.context_parallel.all_gather.size() == static_cast<std::size_t>(2 * f.layers));  // keys, then values, a layer
        CHECK(rank.context_parallel.all_gather[0] == f.first_key);
        for (const std::string& n : rank.context_parallel.all_gather) {
            const TensorDesc& t = rank.tensor(rank.find_tensor(n)).desc;
            CHECK(t.shape == f.gathered);
            CHECK(t.bytes() == 2 * f.gathered[1] * f.gathered[2] * f.gathered[3]);
        }
        const Analysis a1 = analyze(one, hw), ar = analyze(rank, hw);
        const double scores = flops_named(one, a1, ".scores", OpKind::matmul) + flops_of(one, a1, OpKind::attention);
        CHECK(scores > 0);
        CHECK(flops_named(rank, ar, ".scores", OpKind::matmul) + flops_of(rank, ar, OpKind::attention) == scores / f.cp);
    }
    // Falcon with ALiBi: the bias covers the whole sequence's keys.
    const std::string alibi = test::tmp_path("falcon-alibi.json");
    htmltest::spit(alibi, R"({"format": "roofline-model/1", "template": "falcon-7b", "config": {"alibi": true, "num_hidden_layers": 2}})");
    ModelOverrides ov;
    ov.seq = 1024;
    ov.cp = 4;
    CHECK(shape_of(load_model_arg(alibi, ov), "alibi") == Shape{1, 71, 1, 1024});

    // The command line: a training step of gpt2 on 4 context-parallel ranks of a DGX A100, with
    // tensor and sequence parallelism (1024 / 4 = 256 tokens a rank, 128 between the blocks).
    const std::string out = test::tmp_path("gpt2-cp.json");
    const auto r =
        test::run_cli("analyze '" + gpt2 + "' --mode training --seq 1024 --cluster dgx-a100 --cp 4 --tp 2 --sp -q -o '" + out + "'");
    REQUIRE(r.code == 0);
    const nlohmann::json p = nlohmann::json::parse(htmltest::slurp(out))["parallel"];
    CHECK(p["cp"] == 4);
    CHECK(p["cp_comm"] == "ring");
    CHECK(p["cp_collectives"] == 12 * (3 + 4));  // a layer: 3 steps forward, 4 backward

    // Families without a sequence split refuse --cp, naming the flag and the family.
    check_refused("analyze --mode training --cluster dgx-a100 -q ",
                  {
                      {"t5-small --cp 2", "--cp 2: template 't5-small' (model_type 't5') has no context-parallel split"},
                      {"vit-b16 --cp 2 --seq 196", "--seq 196: a ViT's sequence is its 197 tokens"},
                      {"bart-large --cp 2", "(model_type 'bart') has no context-parallel split"},
                      {"deberta-v3-base --cp 2", "(model_type 'deberta-v2') has no context-parallel split"},
                      {"phi-2 --seq 1004 --cp 4", "--cp 4: the sequence length 1004 must be a multiple of 2 x cp = 8"},
                      {"phi-2 --seq 1032 --cp 4 --tp 4 --sp", "--sp: --tp 4 must divide a context-parallel rank's 258 tokens"},
                  });
}

TEST_CASE("gpt2 from its config.json: tensor, sequence and pipeline splits by hand", "[parallel][tp][sp][pp][hf]") {
    // GPT-2 (124M): d 768, 12 layers, 12 heads of 64, MLP 3072, vocabulary 50257, n_positions 1024,
    // biases everywhere, LM head tied. At tp 4 a rank holds 3 heads: c_attn [576, 768] + 576 (the
    // rank's q, k, v columns), attn.c_proj [768, 192] + 768 (rows), c_fc [768, 768] + 768, mlp.c_proj
    // [768, 768] + 768; wte 50257 / 4 = 12565 rows (rounded up); wpe [1024, 768] and the
    // layernorms whole: 12565 x 768 + 1024 x 768 + 12 x (4 x 768 + 442944 + 148224 + 2 x 590592)
    // + 2 x 768 = 31,742,976 parameters.
    const std::string gpt2 = test::source_path("tests/data/hf/gpt2/config.json");
    const auto split = [&](int tp, bool sp, int pp = 1, int stage = 0) { return forward(gpt2, tp, 1024, sp, pp, stage); };
    const Graph full = split(1, false), rank = split(4, false);
    CHECK(test::parameter_count(full) == 124439808);  // GPT-2's num_parameters()
    CHECK(test::parameter_count(rank) == 12565 * 768 + 1024 * 768 + 12 * (4 * 768 + 442944 + 148224 + 2 * 590592) + 2 * 768);
    CHECK(test::parameter_count(rank) == 31742976);
    CHECK(shape_of(rank, "transformer.h.0.attn.c_attn.weight") == Shape{576, 768});
    CHECK(shape_of(rank, "transformer.h.0.attn.c_proj.weight") == Shape{768, 192});
    // Every linear's GEMM is split 4 ways (columns or rows): exactly a quarter of the matrix FLOPs.
    const Hardware hw = builtin_cluster("dgx-a100").hardware;
    CHECK(linear_matrix_flops(hw, rank) * 4 == linear_matrix_flops(hw, full));
    CHECK(linear_matrix_flops(hw, full) == 2LL * 1024 * 12 * (768 * 2304 + 768 * 768 + 2 * 768 * 3072));
    // The all-reduces: the embedding's partial rows, then c_proj's in attention and MLP, a layer.
    REQUIRE(rank.tensor_parallel.all_reduce.size() == 1 + 2 * 12);
    CHECK(rank.tensor_parallel.all_reduce[0] == "transformer.wte");
    CHECK(rank.tensor_parallel.vocab_parallel_loss == std::vector<std::string>{"loss"});
    // --sp: 256 tokens a rank between the blocks; 25 all-gathers (2 a layer and the final norm's)
    // and 25 reduce-scatters (the embedding's and 2 a layer).
    const Graph seq = split(4, true);
    CHECK(shape_of(seq, "transformer.h.0.ln_1") == Shape{1, 256, 768});
    CHECK(seq.tensor_parallel.all_gather.size() == 25);
    CHECK(seq.tensor_parallel.reduce_scatter.size() == 25);
    // --pp 2: 6 layers a stage; the first embeds, the last holds a copy of the tied embedding
    // (lm_head.weight, reduced with the first's) and the loss.
    const Graph s0 = split(4, false, 2, 0), s1 = split(4, false, 2, 1);
    CHECK(s0.pipeline.layers == 6);
    CHECK(s0.pipeline.shared_embedding == "transformer.wte.weight");
    CHECK(s1.pipeline.shared_embedding == "lm_head.weight");
    CHECK(s1.pipeline.input == "hidden");
    CHECK(shape_of(s1, "lm_head.weight") == Shape{12565, 768});
    CHECK(s1.find_node("transformer.h.6.mlp.c_fc") >= 0);
    CHECK(s1.find_node("transformer.h.5.mlp.c_fc") < 0);
    CHECK(
        test::run_cli("analyze '" + gpt2 + "' --mode training --seq 1024 --cluster dgx-a100 --tp 4 --sp --pp 2 --dp 1 --global-batch 8 -q")
            .code == 0);
    check_refused("analyze '" + gpt2 + "' --mode training --cluster dgx-a100 -q ",
                  {
                      {"--tp 5", "/n_head: --tp 5 must divide the 12 attention heads"},
                      {"--pp 5", "/n_layer: --pp 5 must divide the 12 layers"},
                      {"--seq 1022 --tp 4 --sp", "--sp: --tp 4 must divide the sequence length 1022"},
                      {"--seq 1000 --cp 16", "--cp 16: the sequence length 1000 must be a multiple of 2 x cp = 32"},
                  });
}

TEST_CASE("phi-2's parallel block under tp, sp and pp, by hand", "[parallel][tp][sp][pp][hf]") {
    // Phi-2: d 2560, 32 layers, 32 heads of 80, MLP 10240, vocabulary 51200, biases everywhere, an
    // untied LM head with a bias. At tp 4 a rank holds 8 heads: q, k, v [640, 2560] + 640 each,
    // dense [2560, 640] + 2560, fc1 [2560, 2560] + 2560, fc2 [2560, 2560] + 2560, the embedding
    // and the LM head (and its bias) 12800 rows, the layernorms whole: 695,170,560 parameters.
    const std::int64_t d = 2560;
    const auto split = [&](int tp, bool sp, int pp = 1, int stage = 0) { return forward("phi-2", tp, 2048, sp, pp, stage); };
    const Graph full = split(1, false), rank = split(4, false);
    CHECK(test::parameter_count(full) == 2779683840);  // phi-2's num_parameters()
    const std::int64_t layer = 2 * d + 3 * (640 * d + 640) + (d * 640 + d) + 2 * (d * d + d);
    CHECK(test::parameter_count(rank) == 12800 * d + 32 * layer + 2 * d + 12800 * d + 12800);
    CHECK(test::parameter_count(rank) == 695170560);
    // Both branches' row-parallel partial sums (dense's and fc2's) are added and the sum
    // all-reduced once a layer; and the embedding's rows.
    REQUIRE(rank.tensor_parallel.all_reduce.size() == 1 + 32);
    CHECK(rank.tensor_parallel.all_reduce[1] == "model.layers.0.attn_plus_mlp");
    // --sp: the layernorm's 512 tokens a rank are all-gathered once for both branches, the sum
    // reduce-scattered once.
    const Graph seq = split(4, true);
    CHECK(shape_of(seq, "model.layers.0.input_layernorm") == Shape{1, 512, d});
    CHECK(seq.tensor_parallel.all_gather.size() == 32 + 1);
    CHECK(seq.tensor_parallel.reduce_scatter.size() == 1 + 32);
    // --pp 4: 8 layers a stage; the embedding on the first, the LM head on the last.
    const Graph s3 = split(4, false, 4, 3);
    CHECK(s3.pipeline.layers == 8);
    CHECK(s3.find_node("model.embed_tokens") < 0);
    CHECK(shape_of(s3, "lm_head.weight") == Shape{12800, d});
    check_refused("analyze phi-2 --mode training --cluster dgx-a100 -q ",
                  {
                      {"--tp 3", "/num_attention_heads: --tp 3 must divide the 32 attention heads"},
                      {"--pp 3", "/num_hidden_layers: --pp 3 must divide the 32 layers"},
                  });
}

TEST_CASE("OPT-1.3b under tp, sp and pp, by hand", "[parallel][tp][sp][pp][hf]") {
    // OPT-1.3b (NeuSight's opt_13 config): d 2048, 24 layers, 32 heads of 64, FFN 8192, vocabulary
    // 50272, 2050 learned positions, biases everywhere, LM head tied. At tp 4 a rank holds 8 heads:
    // q, k, v [512, 2048] + 512 each, out_proj [2048, 512] + 2048, fc1 [2048, 2048] + 2048, fc2
    // [2048, 2048] + 2048; embed_tokens 12568 rows; the positions and the layernorms whole:
    // 12568 x 2048 + 2050 x 2048 + 24 x 12,598,784 + 2 x 2048 = 332,312,576 parameters.
    const std::string opt = test::source_path("tests/data/public/neusight/configs/opt_13.json");
    const std::int64_t d = 2048;
    const Graph rank = forward(opt, 4, 2048);
    const std::int64_t layer = 4 * d + 3 * (512 * d + 512) + (d * 512 + d) + 2 * (d * d + d);
    CHECK(layer == 12598784);
    CHECK(test::parameter_count(rank) == 12568 * d + 2050 * d + 24 * layer + 2 * d);
    CHECK(test::parameter_count(rank) == 332312576);
    REQUIRE(rank.tensor_parallel.all_reduce.size() == 1 + 2 * 24);
    CHECK(rank.tensor_parallel.all_reduce[0] == "model.decoder.embed_tokens");
    CHECK(rank.tensor_parallel.all_reduce[1] == "model.decoder.layers.0.self_attn.out_proj");
    const Graph seq = forward(opt, 4, 2048, true);
    CHECK(shape_of(seq, "model.decoder.layers.0.self_attn_layer_norm") == Shape{1, 512, d});
    CHECK(seq.tensor_parallel.all_gather.size() == 2 * 24 + 1);
    CHECK(seq.tensor_parallel.reduce_scatter.size() == 1 + 2 * 24);
    // --pp 2: the last stage holds a copy of the tied embedding, reduced with the first's.
    const Graph s1 = forward(opt, 4, 2048, false, 2, 1);
    CHECK(s1.pipeline.layers == 12);
    CHECK(s1.pipeline.shared_embedding == "lm_head.weight");
    CHECK(shape_of(s1, "lm_head.weight") == Shape{12568, d});
    CHECK(test::run_cli("analyze '" + opt + "' --mode training --seq 2048 --cluster dgx-a100 --tp 4 --sp --pp 2 --dp 1 --global-batch 4 -q")
              .code == 0);
    check_refused("analyze '" + opt + "' --mode training --cluster dgx-a100 -q ",
                  {
                      {"--tp 3", "/num_attention_heads: --tp 3 must divide the 32 attention heads"},
                      {"--pp 5", "/num_hidden_layers: --pp 5 must divide the 24 layers"},
                  });
}

TEST_CASE("falcon under tp and sp: the fused query_key_value split by key/value groups, by hand", "[parallel][tp][sp][hf]") {
    // A falcon-40b-shaped config (the falcon-7b preset with the new decoder architecture, 64 heads of
    // 64 in 8 key/value groups, hidden 4096, MLP 16384, 2 layers, vocabulary 65024, no biases,
    // tied). At tp 4 a rank holds 2 groups: query_key_value [(16 + 2 x 2) x 64, 4096] = [1280,
    // 4096], dense [4096, 1024], dense_h_to_4h [4096, 4096], dense_4h_to_h [4096, 4096], the
    // embedding 65024 / 4 = 16256 rows; every linear's matrix FLOPs exactly a quarter.
    const std::string path = test::tmp_path("falcon-new-arch.json");
    htmltest::spit(path, R"({"format": "roofline-model/1", "template": "falcon-7b", "config": {"new_decoder_architecture": true,
        "num_kv_heads": 8, "num_attention_heads": 64, "hidden_size": 4096, "num_hidden_layers": 2}})");
    const Graph full = forward(path, 1, 1024), rank = forward(path, 4, 1024);
    CHECK(shape_of(rank, "transformer.h.0.self_attention.query_key_value.weight") == Shape{1280, 4096});
    CHECK(shape_of(rank, "transformer.h.0.self_attention.dense.weight") == Shape{4096, 1024});
    CHECK(shape_of(rank, "transformer.h.0.mlp.dense_4h_to_h.weight") == Shape{4096, 4096});
    CHECK(shape_of(rank, "transformer.word_embeddings.weight") == Shape{16256, 4096});
    const Hardware hw = builtin_cluster("dgx-a100").hardware;
    CHECK(linear_matrix_flops(hw, rank) * 4 == linear_matrix_flops(hw, full));
    // The embedding's all-reduce, and a layer's one of the two branches' summed partials; ln_mlp's
    // output gradient all-reduced apart from ln_attn's in backward.
    CHECK(rank.tensor_parallel.all_reduce.size() == 1 + 2);
    CHECK(rank.tensor_parallel.gradient_all_reduce == std::vector<std::string>{"transformer.h.0.ln_mlp", "transformer.h.1.ln_mlp"});
    const Graph seq = forward(path, 4, 1024, true);
    CHECK(seq.tensor_parallel.all_gather.size() == 2 * 2 + 1);  // ln_attn's and ln_mlp's, and ln_f's
    CHECK(seq.tensor_parallel.reduce_scatter.size() == 1 + 2);  // the embedding's, and a layer's sum
    CHECK(seq.tensor_parallel.gradient_all_reduce.empty());     // the all-gathers' reduce-scatters carry them
    CHECK(shape_of(seq, "transformer.h.0.ln_attn") == Shape{1, 256, 4096});
    check_refused("analyze --mode training --seq 1024 --cluster dgx-a100 -q ",
                  {
                      {"falcon-7b --tp 2", "/num_attention_heads: --tp 2 must divide the 71 attention heads"},
                  });
}

namespace {

// One rank's training step of `model` (batch 1) at tp 4 on dgx-h100, dp 1, and its analyses.
struct TpStep {
    Graph step;
    Analysis single;
    ParallelAnalysis parallel;
    int overlapped = 0;  // backward collectives that run beside a weight gradient's GEMM
};
TpStep tp_step(const std::string& model, std::int64_t seq, bool sp) {
    const Cluster c = builtin_cluster("dgx-h100");
    TpStep s{build_training_step(forward(model, 4, seq, sp), TrainingOptions{}), {}, {}};
    s.single = analyze(s.step, c.hardware);
    s.parallel = analyze_parallel(s.step, s.single, c, ParallelOptions{});
    for (const StageProfile::Blocking& b : stage_profile(s.step, s.single).blocking) s.overlapped += b.hide_s > 0;
    return s;
}

}  // namespace

TEST_CASE("parallel attention and MLP: one tensor-parallel all-reduce a layer each way, by hand", "[parallel][tp][sp][hf]") {
    // A block whose attention and MLP read the same layernorm's output and both add to the residual
    // (falcon's parallel_attn, phi) sums the two row-parallel linears' partial sums on each rank and
    // all-reduces the sum once (GPT-NeoX's gpt_j_residual; PaLM, Chowdhery et al. 2022 section 2,
    // "Parallel Layers"), and backward all-reduces the shared layernorm output's gradient once (both
    // branches' column-parallel input gradients summed first): 2 all-reduces of b x s x h a layer
    // where the sequential block has 4 (Narayanan et al. SC21's count). Besides them: the
    // vocabulary-parallel embedding's pair and the loss's 3 all-reduces of a float a token.
    //
    // Falcon-7b's shape with 32 heads of 142 (falcon-7b's own 71 heads and one multi-query group do
    // not split over 4 ranks; the error is tested above), 2 layers, seq 1024, bf16, its parallel block
    // against the sequential one (parallel_attn false; otherwise the same weights and work).
    const int L = 2, n = 4;
    const std::string par = test::tmp_path("falcon-parallel.json"), seq_block = test::tmp_path("falcon-sequential.json");
    htmltest::spit(par, R"({"format": "roofline-model/1", "template": "falcon-7b", "config": {"multi_query": false,
        "num_attention_heads": 32, "num_hidden_layers": 2}})");
    htmltest::spit(seq_block, R"({"format": "roofline-model/1", "template": "falcon-7b", "config": {"multi_query": false,
        "num_attention_heads": 32, "num_hidden_layers": 2, "parallel_attn": false}})");
    const Cluster c = builtin_cluster("dgx-h100");
    const CommGroup group{n, n};
    const double bytes = 1.0 * 1024 * 4544 * 2;  // b x s x h in bf16: 9,306,112
    const double all_reduce = collective_cost(c, Collective::all_reduce, bytes, group).time_s;
    const double loss = 3 * collective_cost(c, Collective::all_reduce, 4.0 * 1024, group).time_s;
    {
        const TpStep p = tp_step(par, 1024, false), s = tp_step(seq_block, 1024, false);
        CHECK(p.step.tensor_parallel.all_reduce[1] == "transformer.h.0.mlp_plus_attn");
        CHECK(p.parallel.tp_example.bytes == bytes);
        // A ring all-reduce sends 2 (n - 1) / n of its buffer from each rank (nccl-tests' bus factor).
        CHECK(p.parallel.tp_example.busbw * p.parallel.tp_example.time_s == Approx(2.0 * (n - 1) / n * bytes).epsilon(1e-12));
        CHECK(p.parallel.tp_collectives == 2 * L + 2 + 3);
        CHECK(s.parallel.tp_collectives == 4 * L + 2 + 3);
        // Every all-reduce is the same b x s x h buffer: the sums are exact up to rounding.
        CHECK(p.parallel.tp_comm_s == Approx((2 * L + 2) * all_reduce + loss).epsilon(1e-12));
        CHECK(s.parallel.tp_comm_s == Approx((4 * L + 2) * all_reduce + loss).epsilon(1e-12));
        // The layers' share halves: 2 L all-reduces fewer.
        CHECK(s.parallel.tp_comm_s - p.parallel.tp_comm_s == Approx(2 * L * all_reduce).epsilon(1e-9));
        // Each layer's one backward all-reduce runs beside query_key_value's weight gradient
        // (the sequential block's two beside query_key_value's and dense_h_to_4h's).
        CHECK(p.overlapped == L);
        CHECK(s.overlapped == 2 * L);
        CHECK(p.parallel.compute_s - p.single.schedule.step_time_s < s.parallel.compute_s - s.single.schedule.step_time_s);
    }
    {
        // --sp: one all-gather of the shared layernorm's output (its gradient's reduce-scatter
        // backward) and one reduce-scatter of the sum (all-gather backward) a layer, where the
        // sequential block has two of each; the re-gathers in backward likewise one a layer.
        const TpStep p = tp_step(par, 1024, true), s = tp_step(seq_block, 1024, true);
        CHECK(p.step.tensor_parallel.all_gather.size() == L + 1);
        CHECK(p.step.tensor_parallel.reduce_scatter.size() == L + 1);
        CHECK(s.step.tensor_parallel.all_gather.size() == 2 * L + 1);
        CHECK(s.step.tensor_parallel.reduce_scatter.size() == 2 * L + 1);
        const double gather = collective_cost(c, Collective::all_gather, bytes, group).time_s;
        const double scatter = collective_cost(c, Collective::reduce_scatter, bytes, group).time_s;
        const double pair = gather + scatter;
        // Forward and backward pairs, the re-gathers, the loss's 3.
        CHECK(p.parallel.tp_comm_s == Approx(2 * (L + 1) * pair + (L + 1) * gather + loss).epsilon(1e-12));
        CHECK(s.parallel.tp_comm_s == Approx(2 * (2 * L + 1) * pair + (2 * L + 1) * gather + loss).epsilon(1e-12));
    }
    {
        // Phi-2 (d 2560, f16, 2 of its 32 layers): the same count; a sequential block of its shape
        // would have 4 L + 2 + 3.
        const std::string phi = test::tmp_path("phi-2-two-layers.json");
        htmltest::spit(phi, R"({"format": "roofline-model/1", "template": "phi-2", "config": {"num_hidden_layers": 2}})");
        const TpStep p = tp_step(phi, 1024, false);
        const double phi_bytes = 1.0 * 1024 * 2560 * 2;
        CHECK(p.parallel.tp_example.bytes == phi_bytes);
        CHECK(p.parallel.tp_collectives == 2 * L + 2 + 3);
        CHECK(p.parallel.tp_comm_s ==
              Approx((2 * L + 2) * collective_cost(c, Collective::all_reduce, phi_bytes, group).time_s + loss).epsilon(1e-12));
        CHECK(p.overlapped == L);
    }
    {
        // Falcon's new decoder architecture (ln_attn and ln_mlp, the falcon-40b-shaped config above):
        // one forward all-reduce a layer, two backward (each layernorm's output gradient).
        const std::string path = test::tmp_path("falcon-new-arch-comm.json");
        htmltest::spit(path, R"({"format": "roofline-model/1", "template": "falcon-7b", "config": {"new_decoder_architecture": true,
            "num_kv_heads": 8, "num_attention_heads": 64, "hidden_size": 4096, "num_hidden_layers": 2}})");
        const TpStep p = tp_step(path, 1024, false);
        const double b40 = 1.0 * 1024 * 4096 * 2;
        CHECK(p.parallel.tp_collectives == 3 * L + 2 + 3);
        CHECK(p.parallel.tp_comm_s ==
              Approx((3 * L + 2) * collective_cost(c, Collective::all_reduce, b40, group).time_s + loss).epsilon(1e-12));
        CHECK(p.overlapped == 2 * L);  // beside query_key_value's and dense_h_to_4h's weight gradients
    }
}

TEST_CASE("context parallelism on vit: the patch tokens padded to 2 x cp chunks, by hand", "[parallel][cp][hf]") {
    // ViT-B/16 at 224px: 14 x 14 = 196 patches and the class token, 197 tokens (a prime), 12 layers of
    // 12 heads of 64, bf16 (its config names no dtype). Megatron-core cuts the sequence into 2 x cp
    // chunks, so the tokens are padded up to a multiple of 2 x cp: cp 2 -> 200 (100 a rank), cp 3
    // -> 198 (66), cp 4 -> 200 (50). Each layer gathers its keys and values of the padded sequence,
    // [1, 12, padded, 64]; the rank's 100 queries against 200 keys do 100 x 200 / 197^2 of one
    // rank's score work (a GEMM's FLOPs are proportional to queries x keys: exact up to rounding).
    struct Case {
        int cp;
        std::int64_t padded;
    };
    const Hardware hw = builtin_cluster("dgx-a100").hardware;
    const Graph one = load_model_arg("vit-b16", ModelOverrides{});
    const Analysis a1 = analyze(one, hw);
    const double scores = flops_of(one, a1, OpKind::attention) + flops_named(one, a1, ".scores", OpKind::matmul);
    REQUIRE(scores > 0);
    for (const Case& k : {Case{2, 200}, Case{3, 198}, Case{4, 200}}) {
        INFO("cp " << k.cp);
        ModelOverrides ov;
        ov.cp = k.cp;
        const Graph rank = load_model_arg("vit-b16", ov);
        const std::int64_t tokens = k.padded / k.cp;
        REQUIRE(rank.context_parallel.degree == k.cp);
        CHECK(shape_of(rank, "vit.encoder.layer.0.layernorm_before") == Shape{1, tokens, 768});
        CHECK(shape_of(rank, "cp_padding") == Shape{1, k.padded - 197, 768});
        REQUIRE(rank.context_parallel.all_gather.size() == 2 * 12);
        CHECK(rank.context_parallel.all_gather[0] == "vit.encoder.layer.0.attention.attention.key_gather");
        for (const std::string& n : rank.context_parallel.all_gather) CHECK(shape_of(rank, n) == Shape{1, 12, k.padded, 64});
        const Analysis ar = analyze(rank, hw);
        CHECK(flops_of(rank, ar, OpKind::attention) + flops_named(rank, ar, ".scores", OpKind::matmul) ==
              Approx(scores * static_cast<double>(tokens * k.padded) / (197.0 * 197.0)).epsilon(1e-12));
        // The classifier reads rank 0's class token.
        CHECK(shape_of(rank, "vit.class_token") == Shape{1, 768});
    }
    // The command line: training on 2 context-parallel ranks and 4 data-parallel ones; the ring
    // form's steps, a layer: 1 forward and 2 backward (cp - 1 and cp).
    const std::string out = test::tmp_path("vit-cp.json");
    const auto r = test::run_cli("analyze vit-b16 --mode training --batch 32 --cluster dgx-a100 --cp 2 --dp 4 -q -o '" + out + "'");
    REQUIRE(r.code == 0);
    const nlohmann::json p = nlohmann::json::parse(htmltest::slurp(out))["parallel"];
    CHECK(p["cp"] == 2);
    CHECK(p["cp_collectives"] == 12 * (1 + 2));
}
