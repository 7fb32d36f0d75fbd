// Decoder-only models from Hugging Face configs: gpt2, opt and the llama family (llama, mistral,
// qwen2, gemma, mixtral, qwen2_moe) (model/hf_build.hpp).
#include <algorithm>
#include <cmath>

#include "model/hf_build.hpp"
#include "ops/error.hpp"

namespace roofline::hf {

// gpt2: transformers/models/gpt2/modeling_gpt2.py (GPT2LMHeadModel). Defaults from
// configuration_gpt2.py: n_inner None (4 n_embd), activation_function "gelu_new", resid/embd/attn
// pdrop 0.1, layer_norm_epsilon 1e-5; tie_word_embeddings True (PretrainedConfig).
// Tensor parallelism (--tp; --sp; --pp; hf_build.hpp Split and Stage): one rank's share of
// Megatron-LM's split as the GPT template builds it (model/doc_builder.hpp TensorParallelSplit):
// c_attn's q, k and v columns and c_fc's by output columns (n_head / tp heads, n_inner / tp
// features), attn.c_proj and mlp.c_proj by input rows, each row-parallel output all-reduced
// (reduce-scattered under --sp, the blocks' inputs all-gathered); wte split by vocabulary (its
// lookup's partial rows all-reduced before the position embedding, whole on every rank, is added;
// the tied LM head and loss vocabulary-parallel); the layernorms replicated. Not modelled: each
// rank adding the row-parallel biases (Megatron adds them once, after the all-reduce).
// Context parallelism (--cp; model/doc_builder.hpp ContextParallelSplit), as the llama family's
// below: a rank holds seq / cp tokens of every sequence (its positions' rows of wpe), and each
// layer's attention gathers the keys and values of the whole sequence.
json build_gpt2(const ConfigReader& r, const json& cfg, const std::string& /*model_type*/, const std::string& name) {
    const Head head = read_architecture(r, cfg, "gpt2", {"GPT2LMHeadModel", "GPT2Model"}, "GPT2Model");
    const std::int64_t vocab = r.positive("vocab_size"), d = r.positive("n_embd"), layers = r.positive("n_layer");
    const std::int64_t heads = r.positive("n_head"), positions = r.positive("n_positions");
    const std::int64_t inner = r.positive_or("n_inner", 4 * d);
    const std::string act = r.string_or("activation_function", "gelu_new");
    const double resid = r.probability_or("resid_pdrop", 0.1), embd = r.probability_or("embd_pdrop", 0.1);
    const double attn = r.probability_or("attn_pdrop", 0.1), eps = r.positive_number_or("layer_norm_epsilon", 1e-5);
    const bool tied = r.bool_or("tie_word_embeddings", true);
    r.reject_if(r.bool_or("add_cross_attention", false), "add_cross_attention", "cross-attention layers");
    r.require_divides("n_head", heads, "n_embd", d);
    const std::int64_t dh = d / heads;
    const DenseSplit ds = dense_split(r, positions, "n_head", heads, vocab, "n_layer", layers);
    const std::int64_t t = ds.tp, seq = ds.seq, h = ds.heads, dl = h * dh, vocab_rank = ds.vocab;
    const std::int64_t inner_rank = tp_share(r, "n_inner", inner, t, "MLP features");
    const bool sp = ds.sp;

    DocBuilder b;
    ContextParallelSplit cps(b, ds.split.cp);
    std::string desc = "Hugging Face " + head.architecture + ": " + std::to_string(layers) + " layers, n_embd " + std::to_string(d) + ", " +
                       std::to_string(heads) + " heads, vocab " + std::to_string(vocab) + "; dropout as in training";
    if (t > 1) desc += "; rank of " + std::to_string(t) + "-way tensor parallelism" + (sp ? " with sequence parallelism" : "");
    set_header(b, stage_name(name, ds.split), desc, dtype_of(r), {{"batch", 1}, {"seq", seq}});
    TensorParallelSplit tps(b, t, sp, seq / t);
    std::string x;
    if (ds.stage.first) {
        b.input("input_ids", {"batch", "seq"}, "int64");
        b.input("position_ids", {"seq"}, "int64");
        const std::string wte = b.param("transformer.wte.weight", {vocab_rank, d});
        b.node("transformer.wte", "embedding", {wte, "input_ids"});
        b.node("transformer.wpe", "embedding", {b.param("transformer.wpe.weight", {positions, d}), "position_ids"});
        if (!sp) tps.all_reduce("transformer.wte");  // the vocabulary-parallel lookup's partial rows
        x = b.node("transformer.embed", "add", {"transformer.wte", "transformer.wpe"});
        if (sp) x = tps.reduce_scatter("transformer.embed.reduce_scatter", x);
        x = b.dropout("transformer.drop", x, embd);
    } else {
        x = stage_input(b, sp ? seq / t : 0, d);
    }
    for (std::int64_t l = ds.stage.l0; l < ds.stage.l1; ++l) {
        const std::string p = "transformer.h." + std::to_string(l) + ".";
        const std::string a = tps.column_input(p + "attn.all_gather", b.layernorm(p + "ln_1", x, d, eps));
        // Conv1D stores its weight as [in, out]; the linear op takes [out, in]: same count.
        const std::string qkv = b.linear(p + "attn.c_attn", a, d, 3 * dl, true);
        b.node(p + "attn.split", "split", {qkv}, {{"axis", -1}, {"sizes", {dl, dl, dl}}});
        const std::string q = to_heads(b, p + "attn.query", p + "attn.split:0", "seq", h, dh);
        const std::string k = cps.gather(p + "attn.key_gather", to_heads(b, p + "attn.key", p + "attn.split:1", "seq", h, dh));
        const std::string v = cps.gather(p + "attn.value_gather", to_heads(b, p + "attn.value", p + "attn.split:2", "seq", h, dh));
        const std::string ctx = attention(b, p + "attn.", q, k, v, dh, true, attn);
        std::string o =
            tps.row_output(p + "attn.reduce_scatter", b.linear(p + "attn.c_proj", merge_heads(b, p + "attn", ctx, "seq", dl), dl, d, true));
        o = b.dropout(p + "attn.resid_dropout", o, resid);
        x = b.node(p + "attn.residual", "add", {x, o});
        const std::string m = tps.column_input(p + "mlp.all_gather", b.layernorm(p + "ln_2", x, d, eps));
        const std::string up = b.linear(p + "mlp.c_fc", m, d, inner_rank, true);
        std::string dn = tps.row_output(
            p + "mlp.reduce_scatter",
            b.linear(p + "mlp.c_proj", activation(b, r, "activation_function", act, p + "mlp.act", up), inner_rank, d, true));
        dn = b.dropout(p + "mlp.dropout", dn, resid);
        x = b.node(p + "mlp.residual", "add", {x, dn});
    }
    cps.write(ds.full_seq);
    const auto final_norm = [&] { return tps.column_input("transformer.ln_f.all_gather", b.layernorm("transformer.ln_f", x, d, eps)); };
    return finish_decoder(b, tps, ds.split, ds.stage, head, final_norm, x, tied ? "transformer.wte.weight" : "", d, vocab_rank);
}

// The llama family: transformers' modeling_<type>.py of llama (LlamaForCausalLM), mistral, qwen2,
// gemma, mixtral, qwen2_moe and phi3 are one graph: embedding, then per layer RMSNorm, attention with
// rotary embeddings and grouped key/value heads, residual, RMSNorm, MLP, residual; final RMSNorm
// and lm_head. What differs, each from its configuration_<type>.py / modeling_<type>.py (4.40):
//   llama, mistral  attention_bias and mlp_bias (False) on every projection; tie_word_embeddings False
//   qwen2           q/k/v with biases, o_proj without (Qwen2Attention); tie_word_embeddings False
//   gemma           head_dim (256); embeddings times sqrt(hidden_size); GemmaRMSNorm scales by
//                   (1 + weight); the MLP activation is hidden_activation, or gelu_pytorch_tanh when
//                   that is unset (4.40 ignores hidden_act); tie_word_embeddings True
//   mixtral         the MLP is block_sparse_moe: top-k of num_local_experts SwiGLU experts (w1, w3,
//                   w2) with normalised routing weights (top_k_experts, hf_build.cpp)
//   qwen2_moe       attention as qwen2; in the layers with (i + 1) % decoder_sparse_step == 0 and not
//                   in mlp_only_layers the MLP is Qwen2MoeSparseMoeBlock: top-k of num_experts
//                   experts of moe_intermediate_size (weights normalised only with norm_topk_prob)
//                   plus a shared expert of shared_expert_intermediate_size gated by
//                   sigmoid(shared_expert_gate(x)); other layers a dense MLP of intermediate_size
//   phi3            (4.41) one qkv_proj sliced into q, k, v; Phi3MLP's gate_up_proj chunked into gate
//                   and up; no biases (attention_bias is ignored); resid_pdrop dropout on the
//                   attention and MLP outputs, embd_pdrop on the embeddings; rms_norm_eps 1e-5;
//                   sliding_window as mistral's
// Common defaults: num_key_value_heads = num_attention_heads, head_dim = hidden_size /
// num_attention_heads, hidden_act "silu", rms_norm_eps 1e-6 (llama, mistral, qwen2, gemma,
// qwen2_moe; mixtral and phi3 1e-5), attention_dropout 0.0. Sliding windows (mistral, mixtral,
// phi3 sliding_window; qwen2's use_sliding_window) are not modelled: attention is full causal, and the
// default sequence stays within the window, where both agree.
// Tensor parallelism (--tp; Split in hf_build.hpp; pipeline stages, --pp, below): one rank's share of Megatron-LM's split, as the
// GPT template builds it (model/templates.cpp expand_gpt; model/doc_builder.hpp
// TensorParallelSplit): q, k, v (phi3's fused qkv_proj: the rank's q, k and v columns) and gate, up
// (phi3's gate_up_proj) split by output columns, o_proj and down_proj by input rows, each
// row-parallel output all-reduced; the embedding and the LM head split by vocabulary (the lookup's
// partial rows all-reduced; the loss vocabulary-parallel); the norms replicated. Grouped-query
// attention: the key/value heads split across the ranks; tp must divide them, as Megatron-core
// requires (attention.py divides num_query_groups by the tensor-parallel size; vLLM's inference
// replicates them instead, model/inference.cpp, which a training step would have to all-reduce). The
// mixture-of-experts layers (mixtral, qwen2_moe): each expert's MLP split by tp as the dense one
// (Megatron's MoE without expert parallelism), the router (and qwen2_moe's shared_expert_gate)
// replicated, one all-reduce of the block's combined output; with expert parallelism (--ep) a rank
// holds experts / E of them and all-to-alls dispatch and combine the token copies (top_k_experts,
// hf_build.cpp; the shared expert stays whole on every rank). Sequence parallelism (--sp) as the
// template's: the norms and residuals on a rank's shard of the sequence, the blocks' inputs
// all-gathered and outputs reduce-scattered. Not modelled: each rank adding o_proj's and down_proj's biases
// (Megatron adds them once, after the all-reduce).
namespace {

struct LlamaFamily {
    std::string causal_lm, bare;
    bool qkv_bias_always = false;  // qwen2, qwen2_moe
    bool gemma = false;
    bool window = false;  // sliding_window bounds the default sequence
    double eps = 1e-6;
    bool tied = false;
    bool phi3 = false;  // fused qkv_proj and gate_up_proj, residual and embedding dropout, no biases
};

LlamaFamily llama_family(const std::string& model_type) {
    if (model_type == "mistral") return {"MistralForCausalLM", "MistralModel", false, false, true, 1e-6, false};
    if (model_type == "qwen2") return {"Qwen2ForCausalLM", "Qwen2Model", true, false, false, 1e-6, false};
    if (model_type == "gemma") return {"GemmaForCausalLM", "GemmaModel", false, true, false, 1e-6, true};
    if (model_type == "mixtral") return {"MixtralForCausalLM", "MixtralModel", false, false, true, 1e-5, false};
    if (model_type == "qwen2_moe") return {"Qwen2MoeForCausalLM", "Qwen2MoeModel", true, false, false, 1e-6, false};
    if (model_type == "phi3") return {"Phi3ForCausalLM", "Phi3Model", false, false, true, 1e-5, false, true};
    return {"LlamaForCausalLM", "LlamaModel", false, false, false, 1e-6, false};
}

// The layers listed by a config key holding a list of layer indices (qwen2_moe's mlp_only_layers).
std::vector<std::int64_t> layer_list(const ConfigReader& r, const json& cfg, const std::string& key) {
    std::vector<std::int64_t> out;
    if (!r.has(key)) return out;
    const json& v = cfg.at(key);
    if (!v.is_array()) r.fail(key, "expected a list of layer indices, got " + v.dump());
    for (std::size_t i = 0; i < v.size(); ++i) {
        if (!v[i].is_number_integer() || v[i].get<std::int64_t>() < 0)
            r.fail(key + "/" + std::to_string(i), "expected a non-negative integer, got " + v[i].dump());
        out.push_back(v[i].get<std::int64_t>());
    }
    return out;
}

}  // namespace

json build_llama(const ConfigReader& r, const json& cfg, const std::string& model_type, const std::string& name) {
    const LlamaFamily f = llama_family(model_type);
    const Head head = read_architecture(r, cfg, model_type, {f.causal_lm, f.bare}, f.bare);
    const std::int64_t vocab = r.positive("vocab_size"), d = r.positive("hidden_size"), inter = r.positive("intermediate_size");
    const std::int64_t layers = r.positive("num_hidden_layers"), heads = r.positive("num_attention_heads");
    const std::int64_t positions = r.positive("max_position_embeddings");
    const std::int64_t kv_heads = r.positive_or("num_key_value_heads", heads);
    if (!r.has("head_dim")) r.require_divides("num_attention_heads", heads, "hidden_size", d);
    const std::int64_t dh = r.positive_or("head_dim", d / heads);
    r.require_divides("num_key_value_heads", kv_heads, "num_attention_heads", heads);
    if (dh % 2 != 0) r.fail("head_dim", "rotary embeddings need an even head dimension, got " + std::to_string(dh));
    const std::string act_key = f.gemma ? "hidden_activation" : "hidden_act";
    const std::string act = r.string_or(act_key, f.gemma ? "gelu_pytorch_tanh" : "silu");
    const double eps = r.positive_number_or("rms_norm_eps", f.eps), attn_drop = r.probability_or("attention_dropout", 0.0);
    const bool attn_bias = r.bool_or("attention_bias", false), mlp_bias = r.bool_or("mlp_bias", false);
    const bool qkv_bias = !f.phi3 && (f.qkv_bias_always || attn_bias), o_bias = !f.phi3 && !f.qkv_bias_always && attn_bias;
    const double resid = f.phi3 ? r.probability_or("resid_pdrop", 0.0) : 0.0, embd = f.phi3 ? r.probability_or("embd_pdrop", 0.0) : 0.0;
    const bool tied = r.bool_or("tie_word_embeddings", f.tied);
    const std::int64_t window = f.window ? r.positive_or("sliding_window", 0) : 0;
    Split split = read_split(r);
    const std::int64_t t = split.tp;
    const std::int64_t full_seq = split.seq > 0 ? split.seq : window > 0 ? std::min(positions, window) : positions;
    // Context parallelism (--cp; model/doc_builder.hpp ContextParallelSplit, as the GPT template's):
    // a rank holds seq / cp tokens of every sequence, attention gathers the keys and values.
    const std::int64_t seq = rank_tokens(split, full_seq);

    // Mixture of experts (mixtral, qwen2_moe).
    TopKExperts moe;
    moe.act_key = act_key;
    moe.act = act;
    std::int64_t sparse_step = 0, shared_inter = 0;
    std::vector<std::int64_t> dense_layers;
    if (model_type == "mixtral") {
        moe.experts = r.positive("num_local_experts");
        moe.inter = inter;
        moe.normalize = true;
        moe.names = {"w1", "w3", "w2"};
        moe.jitter = r.probability_or("router_jitter_noise", 0.0) > 0;
        sparse_step = 1;
    } else if (model_type == "qwen2_moe") {
        (void)r.get("num_experts");  // required, as every key that sizes the model; 0 makes every layer dense
        moe.experts = r.non_negative_or("num_experts", 0);
        moe.inter = r.positive("moe_intermediate_size");
        shared_inter = r.positive("shared_expert_intermediate_size");
        moe.normalize = r.bool_or("norm_topk_prob", false);
        sparse_step = moe.experts > 0 ? r.positive_or("decoder_sparse_step", 1) : 0;
        dense_layers = layer_list(r, cfg, "mlp_only_layers");
    }
    if (moe.experts > 0) {
        moe.k = r.positive("num_experts_per_tok");
        if (moe.k > moe.experts) {
            r.fail("num_experts_per_tok",
                   "num_experts_per_tok " + std::to_string(moe.k) + " exceeds the " + std::to_string(moe.experts) + " experts");
        }
    }
    const auto sparse = [&](std::int64_t l) {
        return sparse_step > 0 && (l + 1) % sparse_step == 0 &&
               std::find(dense_layers.begin(), dense_layers.end(), l) == dense_layers.end();
    };
    // One tensor-parallel rank's share (the comment above build_llama's helpers).
    const std::int64_t hq = tp_share(r, "num_attention_heads", heads, t, "attention heads");
    // Megatron-core splits the key/value groups across the ranks and refuses a tp that does not
    // divide them (megatron/core/transformer/attention.py: divide(config.num_query_groups, world_size)).
    const std::int64_t hkv = tp_share(r, "num_key_value_heads", kv_heads, t,
                                      "key/value heads (Megatron-core splits the key/value groups; only inference phases replicate them)"),
                       vocab_rank = t == 1 ? vocab : rank_vocab(vocab, t);
    bool any_dense = model_type != "mixtral";
    if (model_type == "qwen2_moe") {
        any_dense = false;
        for (std::int64_t l = 0; l < layers; ++l) any_dense = any_dense || !sparse(l);
    }
    const std::int64_t inter_rank = any_dense ? tp_share(r, "intermediate_size", inter, t, "MLP features") : inter / t;
    if (moe.experts > 0)
        moe.inter =
            tp_share(r, model_type == "mixtral" ? "intermediate_size" : "moe_intermediate_size", moe.inter, t, "expert MLP features");
    if (shared_inter > 0) shared_inter = tp_share(r, "shared_expert_intermediate_size", shared_inter, t, "shared expert MLP features");
    // Expert parallelism (--ep; top_k_experts in hf_build.cpp): as the GPT template, E must divide
    // the experts (each rank holds as many) and is not combined with --sp (whose MoE input is
    // all-gathered across the tensor-parallel ranks); --dp is checked where the ranks are laid out
    // (sim/parallel.cpp).
    if (split.ep > 1) {
        const std::string experts_key = model_type == "mixtral" ? "num_local_experts" : "num_experts";
        const std::string flag = "--ep " + std::to_string(split.ep);
        if (moe.experts == 0)
            r.fail(model_type == "qwen2_moe" ? experts_key : "model_type",
                   flag + ": " + model_type + " has no experts (mixtral and qwen2_moe split by --ep)");
        if (moe.experts % split.ep != 0) r.fail(experts_key, flag + " must divide the " + std::to_string(moe.experts) + " experts");
        if (split.sp && t > 1 && (split.routing.any() || moe.jitter))
            throw InputError(
                "--sp with expert parallelism (--ep) is modelled for mixtral and qwen2_moe under uniform dropless routing only (with "
                "--ep 1 the MoE layer's input is all-gathered)");
    }
    // Routing other than uniform and dropless (--expert-load, --capacity-factor; model/moe_routing.hpp),
    // as the GPT template's: what each expert runs of a sequence of seq tokens, with --ep the
    // busiest rank's experts.
    std::vector<Routing> routes;  // per layer of the model
    if (split.routing.any()) {
        const char* flag = !split.routing.text.empty()     ? "--expert-load"
                           : split.routing.capacity_factor ? "--capacity-factor"
                                                           : "--pad-to-capacity";
        if (moe.experts == 0)
            r.fail(model_type == "qwen2_moe" ? "num_experts" : "model_type",
                   std::string(flag) + ": " + model_type + " has no experts to route to (mixtral and qwen2_moe route their tokens)");
        resolve_expert_load(split.routing, moe.experts, routing_flags());
        check_expert_layers(split.routing, layers, routing_flags());  // one load per layer (a dense layer's unused)
        moe.seq = seq;
        routes = route_layers(split.routing, 0, layers, moe.experts, seq, moe.k);
    }
    // The routes of the layers with experts in [l0, l1) (empty: uniform everywhere).
    const auto sparse_routes = [&](std::int64_t l0, std::int64_t l1) {
        std::vector<Routing> out;
        for (std::int64_t l = l0; l < l1 && !routes.empty(); ++l)
            if (model_type == "mixtral" || sparse(l)) out.push_back(routes[static_cast<std::size_t>(l)]);
        return out;
    };

    const std::vector<Routing> model_routes = sparse_routes(0, layers);
    DocBuilder b;
    std::string desc = "Hugging Face " + head.architecture + ": " + std::to_string(layers) + " layers, hidden " + std::to_string(d) + ", " +
                       std::to_string(heads) + " heads (" + std::to_string(kv_heads) + " key/value heads) of " + std::to_string(dh) +
                       ", vocab " + std::to_string(vocab);
    if (moe.experts > 0) {
        desc += ", top-" + std::to_string(moe.k) + " of " + std::to_string(moe.experts) + " experts of " + std::to_string(moe.inter);
        if (shared_inter > 0) desc += " and a shared expert of " + std::to_string(shared_inter);
        desc += split.routing.any() ? "; " + layers_routing_text(split.routing, 0, model_routes, moe.experts, seq, moe.k)
                                    : "; UNIFORM routing assumed (each expert runs batch * seq * k / experts rows, rounded)";
    } else {
        desc += ", MLP " + std::to_string(inter);
    }
    if (split.ep > 1) {
        desc += "; rank of " + std::to_string(split.ep) + "-way expert parallelism (" + std::to_string(moe.experts / split.ep) + " of " +
                std::to_string(moe.experts) + " experts";
        desc += expert_rank_text(model_routes, moe.experts / split.ep, split.ep, seq * moe.k);
        desc += ")";
    }
    if (window > 0) desc += "; sliding window " + std::to_string(window) + " not modelled (full causal attention)";
    if (t > 1) {
        desc += "; rank of " + std::to_string(t) + "-way tensor parallelism" + (split.sp ? " with sequence parallelism" : "") + " (" +
                std::to_string(hq) + " query heads, " + std::to_string(hkv) + " key/value head" + (hkv > 1 ? "s" : "") + ")";
    }
    // Pipeline stage split.stage of split.pp (hf_build.hpp Stage).
    const Stage stage = pipeline_stage(r, split, "num_hidden_layers", layers);
    const bool first = stage.first;
    set_header(b, stage_name(name, split), desc, dtype_of(r), {{"batch", 1}, {"seq", seq}});
    const bool sp = split.sp && t > 1;
    TensorParallelSplit tps(b, t, sp, seq / t);
    ExpertParallelSplit expert_split(b, split.ep);
    ContextParallelSplit cps(b, split.cp);
    const json kv_seq = cps.kv_seq(full_seq);
    moe.ep = &expert_split;
    // Sequence and expert parallelism together (mixtral, qwen2_moe): the MoE layer takes the rank's
    // sequence shard and gathers the dispatched copies itself (hf_build.hpp TopKExperts::sp).
    const bool sp_ep = sp && split.ep > 1 && moe.experts > 0;
    if (sp_ep) moe.sp = &tps, moe.shard = seq / t;
    if (first) b.input("input_ids", {"batch", "seq"}, "int64");
    b.input("rope.cos", {"seq", dh});
    b.input("rope.sin", {"seq", dh});
    if (moe.jitter) b.input("router_jitter", {"batch", "seq", d});
    std::string x = "hidden", embed;
    if (first) {
        embed = b.param("model.embed_tokens.weight", {vocab_rank, d});
        x = tps.row_output("model.embed_tokens.reduce_scatter", b.node("model.embed_tokens", "embedding", {embed, "input_ids"}));
        if (f.gemma) x = b.node("model.embed_scale", "scale", {x}, {{"factor", std::sqrt(static_cast<double>(d))}});
        x = b.dropout("model.embed_dropout", x, embd);
    } else {
        x = stage_input(b, sp ? seq / t : 0, d);
    }
    // GemmaRMSNorm: normalised x times (1 + weight).
    const auto norm = [&](const std::string& n, const std::string& in) {
        if (!f.gemma) return b.rmsnorm(n, in, d, eps);
        const std::string w = b.node(n + ".one_plus_weight", "shift", {b.param(n + ".weight", {d})}, {{"offset", 1.0}});
        return b.node(n, "rmsnorm", {in, w}, {{"eps", eps}});
    };
    const std::int64_t n_rep = hq / hkv;
    for (std::int64_t l = stage.l0; l < stage.l1; ++l) {
        const std::string p = "model.layers." + std::to_string(l) + ".";
        const std::string a = tps.column_input(p + "self_attn.all_gather", norm(p + "input_layernorm", x));
        const std::string at = p + "self_attn.";
        std::string q, k, v;
        if (f.phi3) {  // one qkv_proj, sliced into q, k, v
            const std::string qkv = b.linear(at + "qkv_proj", a, d, (hq + 2 * hkv) * dh, false);
            b.node(at + "qkv_split", "split", {qkv}, {{"axis", -1}, {"sizes", {hq * dh, hkv * dh, hkv * dh}}});
            q = to_heads(b, at + "q", at + "qkv_split:0", "seq", hq, dh);
            k = to_heads(b, at + "k", at + "qkv_split:1", "seq", hkv, dh);
            v = to_heads(b, at + "v", at + "qkv_split:2", "seq", hkv, dh);
        } else {
            q = to_heads(b, at + "q", b.linear(at + "q_proj", a, d, hq * dh, qkv_bias), "seq", hq, dh);
            k = to_heads(b, at + "k", b.linear(at + "k_proj", a, d, hkv * dh, qkv_bias), "seq", hkv, dh);
            v = to_heads(b, at + "v", b.linear(at + "v_proj", a, d, hkv * dh, qkv_bias), "seq", hkv, dh);
        }
        q = rotary(b, at + "q_rope", q, dh);
        k = repeat_kv(b, at + "k_repeat", cps.gather(at + "k_gather", rotary(b, at + "k_rope", k, dh)), kv_seq, hkv, n_rep, dh);
        v = repeat_kv(b, at + "v_repeat", cps.gather(at + "v_gather", v), kv_seq, hkv, n_rep, dh);
        const std::string ctx = attention(b, at, q, k, v, dh, true, attn_drop);
        const std::string o = tps.row_output(at + "reduce_scatter",
                                             b.linear(at + "o_proj", merge_heads(b, at + "attn", ctx, "seq", hq * dh), hq * dh, d, o_bias));
        x = b.node(p + "attn_residual", "add", {x, b.dropout(p + "resid_attn_dropout", o, resid)});
        const std::string normed = norm(p + "post_attention_layernorm", x);
        // A dense layer between the sparse ones (qwen2_moe's mlp_only_layers, decoder_sparse_step)
        // gathers its input and scatters its output as without expert parallelism.
        const bool layer_sp_ep = sp_ep && (model_type == "mixtral" || sparse(l));
        const std::string m = layer_sp_ep ? normed : tps.column_input(p + "mlp.all_gather", normed);
        std::string mlp;
        // This layer's routing (ExpertRouting::per_layer) and, with --ep, its busiest rank.
        TopKExperts layer_moe = moe;
        if (!routes.empty()) {
            layer_moe.routing = routes[static_cast<std::size_t>(l)];
            layer_moe.busiest = busiest_rank(layer_moe.routing.rows, split.ep);
        }
        if (model_type == "mixtral") {
            mlp = top_k_experts(b, r, p + "block_sparse_moe.", m, d, layer_moe);
        } else if (sparse(l)) {
            const std::string mp = p + "mlp.";
            const std::string routed = top_k_experts(b, r, mp, m, d, layer_moe);
            // With sp and ep the routed experts take the rank's sequence shard; the shared expert is a
            // tensor-parallel MLP as the dense one, its input all-gathered over tp and its output
            // reduce-scattered back to the shard, where the gate (per token) scales it (Megatron-core's
            // SharedExpertMLP under sequence parallelism).
            std::string shared =
                gated_mlp(b, r, mp + "shared_expert.", layer_sp_ep ? tps.column_input(mp + "shared_expert.all_gather", m) : m, d,
                          shared_inter, act_key, act, false);
            if (layer_sp_ep) shared = tps.row_output(mp + "shared_expert.reduce_scatter", shared);
            const std::string gate =
                b.node(mp + "shared_expert_gate.sigmoid", "sigmoid", {b.linear(mp + "shared_expert_gate", m, d, 1, false)});
            mlp = b.node(mp + "add_shared", "add", {routed, b.node(mp + "shared_expert.scaled", "mul", {gate, shared})});
        } else if (f.phi3) {  // Phi3MLP: gate_up_proj chunked into gate and up, up * act(gate), down_proj
            const std::string mp = p + "mlp.";
            b.node(mp + "chunk", "split", {b.linear(mp + "gate_up_proj", m, d, 2 * inter_rank, false)},
                   {{"axis", -1}, {"sizes", {inter_rank, inter_rank}}});
            const std::string gated =
                b.node(mp + "gated", "mul", {mp + "chunk:1", activation(b, r, act_key, act, mp + "act_fn", mp + "chunk:0")});
            mlp = b.linear(mp + "down_proj", gated, inter_rank, d, false);
        } else {
            mlp = gated_mlp(b, r, p + "mlp.", m, d, inter_rank, act_key, act, mlp_bias);
        }
        if (!layer_sp_ep) mlp = tps.row_output(p + "mlp.reduce_scatter", mlp);
        x = b.node(p + "mlp_residual", "add", {x, b.dropout(p + "resid_mlp_dropout", mlp, resid)});
    }
    cps.write(full_seq);
    expert_split.write(routed_load_factor(sparse_routes(stage.l0, stage.l1), split.ep, seq * moe.k));
    // A tied embedding: the first stage's lookup table and the last stage's copy (lm_head.weight).
    const auto final_norm = [&] { return tps.column_input("model.norm.all_gather", norm("model.norm", x)); };
    return finish_decoder(b, tps, split, stage, head, final_norm, x, tied ? "model.embed_tokens.weight" : "", d, vocab_rank);
}

// opt: transformers/models/opt/modeling_opt.py (OPTForCausalLM), eager attention as transformers
// 4.38 runs it (the version the NeuSight measurements used, PyTorch 2.1): q_proj(x) * head_dim^-0.5,
// q, k and v reshaped to heads by _shape (view, transpose, contiguous: a copy each), Q K^T, the
// additive 4-d causal mask (one pass, the causal_mask op), torch.max(scores, finfo.min) (a maximum
// with the scalar input attention_floor, which holds the dtype's lowest value), softmax, dropout,
// P V, transpose + reshape (a copy), out_proj. Learned positions: OPTLearnedPositionalEmbedding has
// max_position_embeddings + 2 rows and looks up cumsum(attention_mask) - 1 + 2 (those integer ops
// are not modelled: position_ids [batch, seq] holds the looked-up rows). Defaults from
// configuration_opt.py: word_embed_proj_dim = hidden_size, do_layer_norm_before True, dropout 0.1,
// attention_dropout 0.0, activation_function "relu", enable_bias True, layer_norm_elementwise_affine
// True, _remove_final_layer_norm False; tie_word_embeddings True (PretrainedConfig).
// Tensor, sequence and pipeline parallelism (--tp, --sp, --pp), as gpt2's (above): q, k, v and fc1
// by output columns, out_proj and fc2 by input rows (all-reduced, or reduce-scattered under --sp
// with the blocks' inputs all-gathered), embed_tokens and the tied LM head by vocabulary (the
// lookup's partial rows all-reduced before project_in and the learned positions, whole on every
// rank), the layernorms and project_in / project_out whole. Context parallelism (--cp) as gpt2's:
// the keys and values gathered after _shape.
json build_opt(const ConfigReader& r, const json& cfg, const std::string& /*model_type*/, const std::string& name) {
    const Head head = read_architecture(r, cfg, "opt", {"OPTForCausalLM", "OPTModel"}, "OPTModel");
    const std::int64_t vocab = r.positive("vocab_size"), d = r.positive("hidden_size"), layers = r.positive("num_hidden_layers");
    const std::int64_t heads = r.positive("num_attention_heads"), ffn = r.positive("ffn_dim");
    const std::int64_t positions = r.positive("max_position_embeddings");
    const std::int64_t proj = r.positive_or("word_embed_proj_dim", d);
    r.require_divides("num_attention_heads", heads, "hidden_size", d);
    const std::int64_t dh = d / heads;
    const bool before = r.bool_or("do_layer_norm_before", true);
    const bool bias = r.bool_or("enable_bias", true), affine = r.bool_or("layer_norm_elementwise_affine", true);
    const bool final_ln = before && !r.bool_or("_remove_final_layer_norm", false);
    const double drop = r.probability_or("dropout", 0.1), attn_drop = r.probability_or("attention_dropout", 0.0);
    const std::string act = r.string_or("activation_function", "relu");
    const bool tied = r.bool_or("tie_word_embeddings", true);
    const double eps = 1e-5;  // nn.LayerNorm's default: OPT has no eps key
    const DenseSplit ds = dense_split(r, positions, "num_attention_heads", heads, vocab, "num_hidden_layers", layers);
    const std::int64_t t = ds.tp, seq = ds.seq, h = ds.heads, dl = h * dh, vocab_rank = ds.vocab;
    const std::int64_t ffn_rank = tp_share(r, "ffn_dim", ffn, t, "MLP features");
    const bool sp = ds.sp;

    DocBuilder b;
    ContextParallelSplit cps(b, ds.split.cp);
    set_header(b, stage_name(name, ds.split),
               "Hugging Face " + head.architecture + ": " + std::to_string(layers) + " layers, hidden " + std::to_string(d) + ", " +
                   std::to_string(heads) + " heads, FFN " + std::to_string(ffn) + ", vocab " + std::to_string(vocab) +
                   (before ? "; pre-LN" : "; post-LN") + "; eager attention as transformers 4.38; dropout as in training" +
                   (t > 1 ? "; rank of " + std::to_string(t) + "-way tensor parallelism" + (sp ? " with sequence parallelism" : "") : ""),
               dtype_of(r), {{"batch", 1}, {"seq", seq}});
    TensorParallelSplit tps(b, t, sp, seq / t);
    auto layernorm = [&](const std::string& n, const std::string& x) {
        if (affine) return b.layernorm(n, x, d, eps);
        return b.node(n, "layernorm", {x}, {{"eps", eps}});
    };
    if (ds.stage.first) {
        b.input("input_ids", {"batch", "seq"}, "int64");
        b.input("position_ids", {"batch", "seq"}, "int64");
    }
    b.input("attention_floor", json::array());
    const std::string pd = "model.decoder.";
    std::string x;
    if (ds.stage.first) {
        const std::string embed = b.param(pd + "embed_tokens.weight", {vocab_rank, proj});
        x = b.node(pd + "embed_tokens", "embedding", {embed, "input_ids"});
        if (!sp) tps.all_reduce(x);  // the vocabulary-parallel lookup's partial rows
        b.node(pd + "embed_positions", "embedding", {b.param(pd + "embed_positions.weight", {positions + 2, d}), "position_ids"});
        if (proj != d) x = b.linear(pd + "project_in", x, proj, d, false);
        x = b.node(pd + "embed", "add", {x, pd + "embed_positions"});
        if (sp) x = tps.reduce_scatter(pd + "embed.reduce_scatter", x);
    } else {
        x = stage_input(b, sp ? seq / t : 0, d);
    }
    for (std::int64_t l = ds.stage.l0; l < ds.stage.l1; ++l) {
        const std::string p = pd + "layers." + std::to_string(l) + ".";
        const std::string at = p + "self_attn.";
        const std::string a = tps.column_input(at + "all_gather", before ? layernorm(p + "self_attn_layer_norm", x) : x);
        const std::string q = b.node(at + "q_scaled", "scale", {b.linear(at + "q_proj", a, d, dl, bias)},
                                     {{"factor", 1.0 / std::sqrt(static_cast<double>(dh))}});
        // _shape: view(bsz, seq, heads, head_dim).transpose(1, 2).contiguous()
        auto shape = [&](const std::string& n, const std::string& in) {
            b.node(n + ".view", "reshape", {in}, {{"shape", {"batch", "seq", h, dh}}});
            return b.node(n + ".heads", "permute", {n + ".view"}, {{"perm", {0, 2, 1, 3}}, {"copy", true}});
        };
        const std::string k = cps.gather(at + "key_gather", shape(at + "key", b.linear(at + "k_proj", a, d, dl, bias)));
        const std::string v = cps.gather(at + "value_gather", shape(at + "value", b.linear(at + "v_proj", a, d, dl, bias)));
        const std::string qh = shape(at + "query", q);
        b.node(at + "scores", "matmul", {qh, k}, {{"transpose_b", true}});
        b.node(at + "causal_mask", "causal_mask", {at + "scores"});
        b.node(at + "clamp", "maximum", {at + "causal_mask", "attention_floor"});
        const std::string probs =
            b.dropout(at + "attn_dropout", b.node(at + "softmax", "softmax", {at + "clamp"}, {{"axis", -1}}), attn_drop);
        const std::string ctx = b.node(at + "context", "matmul", {probs, v});
        std::string o =
            tps.row_output(at + "reduce_scatter", b.linear(at + "out_proj", merge_heads(b, at + "attn", ctx, "seq", dl), dl, d, bias));
        o = b.dropout(p + "dropout", o, drop);
        x = b.node(p + "attn_residual", "add", {x, o});
        if (!before) x = layernorm(p + "self_attn_layer_norm", x);
        const std::string m = tps.column_input(p + "mlp.all_gather", before ? layernorm(p + "final_layer_norm", x) : x);
        const std::string up = b.linear(p + "fc1", m, d, ffn_rank, bias);
        std::string dn =
            tps.row_output(p + "mlp.reduce_scatter",
                           b.linear(p + "fc2", activation(b, r, "activation_function", act, p + "activation_fn", up), ffn_rank, d, bias));
        dn = b.dropout(p + "fc2_dropout", dn, drop);
        x = b.node(p + "mlp_residual", "add", {x, dn});
        if (!before) x = layernorm(p + "final_layer_norm", x);
    }
    cps.write(ds.full_seq);
    const auto final_norm = [&] {
        std::string y = tps.column_input(pd + "final.all_gather", final_ln ? layernorm(pd + "final_layer_norm", x) : x);
        return proj != d ? b.linear(pd + "project_out", y, d, proj, false) : y;
    };
    return finish_decoder(b, tps, ds.split, ds.stage, head, final_norm, x, tied ? pd + "embed_tokens.weight" : "", proj, vocab_rank);
}

// falcon: transformers/models/falcon/modeling_falcon.py (FalconForCausalLM), as transformers 4.40
// runs it. Defaults from configuration_falcon.py (tiiuae/falcon-7b): num_kv_heads = num_attention_heads,
// alibi False, new_decoder_architecture False, multi_query True, parallel_attn True, bias False,
// layer_norm_epsilon 1e-5, hidden and attention dropout 0.0, max_position_embeddings 2048,
// ffn_hidden_size 4 * hidden_size, activation "gelu"; tie_word_embeddings True (PretrainedConfig).
// One fused query_key_value projection; its output viewed as [batch, seq, kv groups, heads per
// group + 2, head_dim] and split into the group's queries, its key and its value (the layouts of
// new_decoder_architecture, of multi_query (one group: 1 key/value head) and of multi-head
// attention (a group per head) alike); keys and values broadcast to their group's queries (views).
// Rotary embeddings on q and k unless alibi; with alibi, transformers' eager path: scores Q K^T
// plus the ALiBi bias (input alibi [batch, heads, 1, seq]: slopes times key positions), times
// head_dim^-0.5, causal mask, softmax, dropout, P V. Without alibi, scaled_dot_product_attention
// (the composite attention op; spelled out when attention_dropout > 0). Blocks: parallel_attn
// (falcon-7b): x + attention(LN(x)) + MLP(LN(x)) with one input_layernorm;
// new_decoder_architecture (falcon-40b, -180b): the same with ln_attn and ln_mlp; else sequential:
// post_attention_layernorm before the MLP. transformers ignores apply_residual_connection_post_layernorm.
json build_falcon(const ConfigReader& r, const json& cfg, const std::string& /*model_type*/, const std::string& name) {
    const Head head = read_architecture(r, cfg, "falcon", {"FalconForCausalLM", "FalconModel"}, "FalconModel");
    const std::int64_t vocab = r.positive("vocab_size"), d = r.positive("hidden_size"), layers = r.positive("num_hidden_layers");
    const std::int64_t heads = r.positive("num_attention_heads"), positions = r.positive_or("max_position_embeddings", 2048);
    r.require_divides("num_attention_heads", heads, "hidden_size", d);
    const std::int64_t dh = d / heads;
    const bool new_arch = r.bool_or("new_decoder_architecture", false), multi_query = r.bool_or("multi_query", true);
    const bool parallel = r.bool_or("parallel_attn", true), alibi = r.bool_or("alibi", false), bias = r.bool_or("bias", false);
    const std::int64_t kv_heads = new_arch ? r.positive_or("num_kv_heads", heads) : multi_query ? 1 : heads;
    r.require_divides("num_kv_heads", kv_heads, "num_attention_heads", heads);
    if (!alibi && dh % 2 != 0) r.fail("num_attention_heads", "rotary embeddings need an even head dimension, got " + std::to_string(dh));
    const std::int64_t ffn = r.positive_or("ffn_hidden_size", 4 * d);
    const std::string act = r.string_or("activation", "gelu");
    const double eps = r.positive_number_or("layer_norm_epsilon", 1e-5);
    const double hidden_drop = r.probability_or("hidden_dropout", 0.0), attn_drop = r.probability_or("attention_dropout", 0.0);
    const bool tied = r.bool_or("tie_word_embeddings", true);
    const std::int64_t rep = heads / kv_heads;
    // Tensor, sequence and pipeline parallelism (--tp, --sp, --pp), as gpt2's: query_key_value by
    // key/value groups (each rank holds kv_groups / tp of them with their query heads; tp must
    // divide them, as Megatron-core divides its query groups), dense and dense_4h_to_h by input rows
    // (each all-reduced, or reduce-scattered under --sp, in the sequential block; in the parallel
    // block their partial sums added and reduced once), dense_h_to_4h by columns, the embedding
    // and the tied LM head by vocabulary, the layernorms whole. Context parallelism (--cp) as the
    // llama family's: a group's key (after its rotary embedding) and value gathered before they
    // are broadcast to the group's queries; with ALiBi the bias covers the whole sequence's keys.
    const DenseSplit ds = dense_split(r, positions, "num_attention_heads", heads, vocab, "num_hidden_layers", layers);
    const std::int64_t t = ds.tp, seq = ds.seq, hq = ds.heads, vocab_rank = ds.vocab;
    const std::int64_t hkv = tp_share(r,
                                      new_arch      ? "num_kv_heads"
                                      : multi_query ? "multi_query"
                                                    : "num_attention_heads",
                                      kv_heads, t, "key/value groups (Megatron-core splits the query groups)");
    const std::int64_t ffn_rank = tp_share(r, "ffn_hidden_size", ffn, t, "MLP features");
    const bool sp = ds.sp;

    DocBuilder b;
    set_header(b, stage_name(name, ds.split),
               "Hugging Face " + head.architecture + ": " + std::to_string(layers) + " layers, hidden " + std::to_string(d) + ", " +
                   std::to_string(heads) + " heads (" + std::to_string(kv_heads) + " key/value heads), MLP " + std::to_string(ffn) +
                   ", vocab " + std::to_string(vocab) +
                   (new_arch   ? "; new decoder architecture"
                    : parallel ? "; parallel attention and MLP"
                               : "") +
                   (alibi ? "; ALiBi" : "; rotary") +
                   (t > 1 ? "; rank of " + std::to_string(t) + "-way tensor parallelism" + (sp ? " with sequence parallelism" : "") : ""),
               dtype_of(r), {{"batch", 1}, {"seq", seq}});
    TensorParallelSplit tps(b, t, sp, seq / t);
    ContextParallelSplit cps(b, ds.split.cp);
    const json kv_seq = cps.kv_seq(ds.full_seq);
    if (ds.stage.first) b.input("input_ids", {"batch", "seq"}, "int64");
    if (alibi) {
        b.input("alibi", {"batch", hq, 1, kv_seq});
    } else {
        b.input("rope.cos", {"seq", dh});
        b.input("rope.sin", {"seq", dh});
    }
    std::string x;
    if (ds.stage.first) {
        const std::string embed = b.param("transformer.word_embeddings.weight", {vocab_rank, d});
        x = tps.row_output("transformer.word_embeddings.reduce_scatter",
                           b.node("transformer.word_embeddings", "embedding", {embed, "input_ids"}));
    } else {
        x = stage_input(b, sp ? seq / t : 0, d);
    }
    for (std::int64_t l = ds.stage.l0; l < ds.stage.l1; ++l) {
        const std::string p = "transformer.h." + std::to_string(l) + ".";
        const std::string at = p + "self_attention.";
        const std::string a =
            tps.column_input(p + "self_attention.all_gather", b.layernorm(p + (new_arch ? "ln_attn" : "input_layernorm"), x, d, eps));
        const std::string qkv = b.linear(at + "query_key_value", a, d, (hq + 2 * hkv) * dh, bias);
        b.node(at + "groups", "reshape", {qkv}, {{"shape", {"batch", "seq", hkv, rep + 2, dh}}});
        b.node(at + "split", "split", {at + "groups"}, {{"axis", 3}, {"sizes", {rep, 1, 1}}});
        const auto heads_of = [&](const std::string& n, const std::string& in, std::int64_t count) {
            b.node(n + ".view", "reshape", {in}, {{"shape", {"batch", "seq", count, dh}}});
            return b.node(n + ".heads", "permute", {n + ".view"}, {{"perm", {0, 2, 1, 3}}});
        };
        std::string q = heads_of(at + "query", at + "split:0", hq);
        std::string k = heads_of(at + "key", at + "split:1", hkv);
        if (!alibi) {
            q = rotary(b, at + "q_rope", q, dh);
            k = rotary(b, at + "k_rope", k, dh);
        }
        k = repeat_kv(b, at + "k_repeat", cps.gather(at + "key_gather", k), kv_seq, hkv, rep, dh);
        const std::string v = repeat_kv(b, at + "v_repeat", cps.gather(at + "value_gather", heads_of(at + "value", at + "split:2", hkv)),
                                        kv_seq, hkv, rep, dh);
        std::string ctx;
        if (alibi) {
            b.node(at + "scores", "matmul", {q, k}, {{"transpose_b", true}});
            b.node(at + "add_alibi", "add", {at + "scores", "alibi"});
            b.node(at + "scale", "scale", {at + "add_alibi"}, {{"factor", 1.0 / std::sqrt(static_cast<double>(dh))}});
            b.node(at + "causal_mask", "causal_mask", {at + "scale"});
            const std::string probs = b.node(at + "softmax", "softmax", {at + "causal_mask"}, {{"axis", -1}});
            ctx = b.node(at + "context", "matmul", {b.dropout(at + "attention_dropout", probs, attn_drop), v});
        } else {
            ctx = attention(b, at, q, k, v, dh, true, attn_drop);
        }
        // The attention's partial sums (row-parallel dense), reduced here in the sequential block;
        // in the parallel one (parallel_attn, new_decoder_architecture) added to the MLP's and
        // the sum reduced once (TensorParallelSplit::row_outputs).
        const bool one_reduce = new_arch || parallel;
        std::string o = b.linear(at + "dense", merge_heads(b, at + "attn", ctx, "seq", hq * dh), hq * dh, d, bias);
        if (!one_reduce) o = tps.row_output(at + "reduce_scatter", o);
        std::string m_in = a;
        if (new_arch) {
            const std::string ln_mlp = b.layernorm(p + "ln_mlp", x, d, eps);
            // Its input gradient is all-reduced apart from ln_attn's (without --sp; with it, its
            // all-gather's reduce-scatter backward): one forward all-reduce a layer, two backward.
            tps.gradient_all_reduce(ln_mlp);
            m_in = tps.column_input(p + "mlp.all_gather", ln_mlp);
        } else if (!parallel) {
            x = b.node(p + "attn_residual", "add", {x, b.dropout(p + "attn_dropout", o, attn_drop)});
            m_in = tps.column_input(p + "mlp.all_gather", b.layernorm(p + "post_attention_layernorm", x, d, eps));
        }
        const std::string up = b.linear(p + "mlp.dense_h_to_4h", m_in, d, ffn_rank, bias);
        std::string m = b.linear(p + "mlp.dense_4h_to_h", activation(b, r, "activation", act, p + "mlp.act", up), ffn_rank, d, bias);
        m = one_reduce ? tps.row_outputs(p + "mlp_plus_attn", p + "reduce_scatter", o, m) : tps.row_output(p + "mlp.reduce_scatter", m);
        x = b.node(p + "residual", "add", {x, b.dropout(p + "hidden_dropout", m, hidden_drop)});
    }
    cps.write(ds.full_seq);
    const auto final_norm = [&] { return tps.column_input("transformer.ln_f.all_gather", b.layernorm("transformer.ln_f", x, d, eps)); };
    return finish_decoder(b, tps, ds.split, ds.stage, head, final_norm, x, tied ? "transformer.word_embeddings.weight" : "", d, vocab_rank);
}

namespace {

// Rotary embeddings on the first `rot` of the `dh` features of each head (Phi's partial rotary:
// q[..., :rot] rotated, q[..., rot:] passed through, concatenated); all of them when rot == dh.
std::string partial_rotary(DocBuilder& b, const std::string& name, const std::string& x, std::int64_t dh, std::int64_t rot) {
    if (rot == dh) return rotary(b, name, x, dh);
    b.node(name + ".parts", "split", {x}, {{"axis", -1}, {"sizes", {rot, dh - rot}}});
    const std::string rotated = rotary(b, name + ".rot", name + ".parts:0", rot);
    return b.node(name, "concat", {rotated, name + ".parts:1"}, {{"axis", -1}});
}

}  // namespace

// phi: transformers/models/phi/modeling_phi.py (PhiForCausalLM), 4.40 with sdpa attention.
// Defaults from configuration_phi.py: num_key_value_heads = num_attention_heads, resid_pdrop,
// embd_pdrop and attention_dropout 0.0, hidden_act "gelu_new", layer_norm_eps 1e-5,
// partial_rotary_factor 0.5, qk_layernorm False, tie_word_embeddings False. Parallel block:
// x + dropout(dense(attention(LN(x)))) + dropout(fc2(act(fc1(LN(x))))) with one input_layernorm;
// q, k, v and dense with biases; rotary embeddings on the first partial_rotary_factor * head_dim
// features of q and k; final_layernorm; lm_head with a bias.
json build_phi(const ConfigReader& r, const json& cfg, const std::string& /*model_type*/, const std::string& name) {
    const Head head = read_architecture(r, cfg, "phi", {"PhiForCausalLM", "PhiModel"}, "PhiModel");
    const std::int64_t vocab = r.positive("vocab_size"), d = r.positive("hidden_size"), inter = r.positive("intermediate_size");
    const std::int64_t layers = r.positive("num_hidden_layers"), heads = r.positive("num_attention_heads");
    const std::int64_t positions = r.positive("max_position_embeddings");
    const std::int64_t kv_heads = r.positive_or("num_key_value_heads", heads);
    r.require_divides("num_attention_heads", heads, "hidden_size", d);
    r.require_divides("num_key_value_heads", kv_heads, "num_attention_heads", heads);
    const std::int64_t dh = d / heads;
    const double factor = r.positive_number_or("partial_rotary_factor", 0.5);
    const auto rot = static_cast<std::int64_t>(factor * static_cast<double>(dh));  // int(), as PhiAttention
    if (factor > 1 || rot == 0 || rot % 2 != 0) {
        r.fail("partial_rotary_factor", "expected a factor in (0, 1] giving an even, positive rotary dimension of the " +
                                            std::to_string(dh) + " head features, got " + std::to_string(rot));
    }
    r.reject_if(r.bool_or("qk_layernorm", false), "qk_layernorm", "LayerNorm on queries and keys");
    const std::string act = r.string_or("hidden_act", "gelu_new");
    const double eps = r.positive_number_or("layer_norm_eps", 1e-5);
    const double resid = r.probability_or("resid_pdrop", 0.0), embd = r.probability_or("embd_pdrop", 0.0);
    const double attn_drop = r.probability_or("attention_dropout", 0.0);
    const bool tied = r.bool_or("tie_word_embeddings", false);
    const std::int64_t rep = heads / kv_heads;
    // Tensor, sequence and pipeline parallelism (--tp, --sp, --pp), as gpt2's (above): q, k, v and
    // fc1 by output columns, dense and fc2 by input rows, their partial sums added and the sum
    // all-reduced once (reduce-scattered under --sp, the layernorm's output all-gathered once for
    // both branches): one all-reduce a layer forward and one backward (the shared layernorm's
    // output gradient, both branches' summed),
    // the embedding and the LM head (its bias too) by vocabulary, the layernorms whole. Context
    // parallelism (--cp) as the llama family's: the keys (after their partial rotary embedding) and
    // the values gathered before they are repeated to the query heads.
    const DenseSplit ds = dense_split(r, positions, "num_attention_heads", heads, vocab, "num_hidden_layers", layers);
    const std::int64_t t = ds.tp, seq = ds.seq, hq = ds.heads, vocab_rank = ds.vocab;
    const std::int64_t hkv = tp_share(r, "num_key_value_heads", kv_heads, t, "key/value heads");
    const std::int64_t inter_rank = tp_share(r, "intermediate_size", inter, t, "MLP features");
    const bool sp = ds.sp;

    DocBuilder b;
    set_header(b, stage_name(name, ds.split),
               "Hugging Face " + head.architecture + ": " + std::to_string(layers) + " layers, hidden " + std::to_string(d) + ", " +
                   std::to_string(heads) + " heads (" + std::to_string(kv_heads) + " key/value heads), rotary on " + std::to_string(rot) +
                   " of " + std::to_string(dh) + " head features, MLP " + std::to_string(inter) + ", vocab " + std::to_string(vocab) +
                   "; parallel attention and MLP; dropout as in training" +
                   (t > 1 ? "; rank of " + std::to_string(t) + "-way tensor parallelism" + (sp ? " with sequence parallelism" : "") : ""),
               dtype_of(r), {{"batch", 1}, {"seq", seq}});
    TensorParallelSplit tps(b, t, sp, seq / t);
    ContextParallelSplit cps(b, ds.split.cp);
    const json kv_seq = cps.kv_seq(ds.full_seq);
    if (ds.stage.first) b.input("input_ids", {"batch", "seq"}, "int64");
    b.input("rope.cos", {"seq", rot});
    b.input("rope.sin", {"seq", rot});
    std::string x;
    if (ds.stage.first) {
        const std::string embed = b.param("model.embed_tokens.weight", {vocab_rank, d});
        x = tps.row_output("model.embed_tokens.reduce_scatter", b.node("model.embed_tokens", "embedding", {embed, "input_ids"}));
        x = b.dropout("model.embed_dropout", x, embd);
    } else {
        x = stage_input(b, sp ? seq / t : 0, d);
    }
    for (std::int64_t l = ds.stage.l0; l < ds.stage.l1; ++l) {
        const std::string p = "model.layers." + std::to_string(l) + ".";
        const std::string at = p + "self_attn.";
        const std::string a = tps.column_input(p + "all_gather", b.layernorm(p + "input_layernorm", x, d, eps));
        std::string q = to_heads(b, at + "q", b.linear(at + "q_proj", a, d, hq * dh, true), "seq", hq, dh);
        std::string k = to_heads(b, at + "k", b.linear(at + "k_proj", a, d, hkv * dh, true), "seq", hkv, dh);
        std::string v = to_heads(b, at + "v", b.linear(at + "v_proj", a, d, hkv * dh, true), "seq", hkv, dh);
        q = partial_rotary(b, at + "q_rope", q, dh, rot);
        k = repeat_kv(b, at + "k_repeat", cps.gather(at + "k_gather", partial_rotary(b, at + "k_rope", k, dh, rot)), kv_seq, hkv, rep, dh);
        v = repeat_kv(b, at + "v_repeat", cps.gather(at + "v_gather", v), kv_seq, hkv, rep, dh);
        const std::string ctx = attention(b, at, q, k, v, dh, true, attn_drop);
        const std::string dense = b.linear(at + "dense", merge_heads(b, at + "attn", ctx, "seq", hq * dh), hq * dh, d, true);
        const std::string up = b.linear(p + "mlp.fc1", a, d, inter_rank, true);
        const std::string fc2 = b.linear(p + "mlp.fc2", activation(b, r, "hidden_act", act, p + "mlp.act", up), inter_rank, d, true);
        // Each branch's dropout on the rank's partial sums (the same mask on every rank: Megatron
        // seeds the dropouts outside the tensor-parallel region alike on all of them, so the sum
        // of the dropped partials is the dropped sum), the two added and reduced once
        // (TensorParallelSplit::row_outputs), as GPT-NeoX's gpt_j_residual drops them before its
        // one reduce. Under --sp the dropouts therefore run on the whole sequence.
        const std::string o = b.dropout(p + "attn_dropout", dense, resid), m = b.dropout(p + "mlp_dropout", fc2, resid);
        x = b.node(p + "residual", "add", {tps.row_outputs(p + "attn_plus_mlp", p + "reduce_scatter", o, m), x});
    }
    cps.write(ds.full_seq);
    const auto final_norm = [&] {
        return tps.column_input("model.final_layernorm.all_gather", b.layernorm("model.final_layernorm", x, d, eps));
    };
    return finish_decoder(b, tps, ds.split, ds.stage, head, final_norm, x, tied ? "model.embed_tokens.weight" : "", d, vocab_rank, true);
}

}  // namespace roofline::hf
