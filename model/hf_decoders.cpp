// Decoder-only models from Hugging Face configs: gpt2, llama, mistral, opt (model/hf_build.hpp).
#include <algorithm>
#include <cmath>

#include "model/hf_build.hpp"

namespace roofline::hf {

// gpt2: transformers/models/gpt2/modeling_gpt2.py (GPT2LMHeadModel). Defaults from
// configuration_gpt2.py: n_inner None (4 n_embd), activation_function "gelu_new", resid/embd/attn
// pdrop 0.1, layer_norm_epsilon 1e-5; tie_word_embeddings True (PretrainedConfig).
json build_gpt2(const ConfigReader& r, const json& cfg, const std::string& name) {
    const Head head = read_architecture(r, cfg, "gpt2", {"GPT2LMHeadModel", "GPT2Model"}, "GPT2Model");
    const std::int64_t vocab = r.positive("vocab_size"), d = r.positive("n_embd"), layers = r.positive("n_layer");
    const std::int64_t heads = r.positive("n_head"), positions = r.positive("n_positions");
    const std::int64_t inner = r.positive_or("n_inner", 4 * d);
    const std::string act = r.string_or("activation_function", "gelu_new");
    const double resid = r.probability_or("resid_pdrop", 0.1), embd = r.probability_or("embd_pdrop", 0.1);
    const double attn = r.probability_or("attn_pdrop", 0.1), eps = r.positive_number_or("layer_norm_epsilon", 1e-5);
    const bool tied = r.bool_or("tie_word_embeddings", true);
    r.reject_if(r.bool_or("add_cross_attention", false), "add_cross_attention", "cross-attention layers");
    if (d % heads != 0) r.fail("n_head", "n_head " + std::to_string(heads) + " does not divide n_embd " + std::to_string(d));
    const std::int64_t dh = d / heads;

    DocBuilder b;
    set_header(b, name,
               "Hugging Face " + head.architecture + ": " + std::to_string(layers) + " layers, n_embd " + std::to_string(d) + ", " +
                   std::to_string(heads) + " heads, vocab " + std::to_string(vocab) + "; dropout as in training",
               dtype_of(r), {{"batch", 1}, {"seq", positions}});
    b.input("input_ids", {"batch", "seq"}, "int64");
    b.input("position_ids", {"seq"}, "int64");
    const std::string wte = b.param("transformer.wte.weight", {vocab, d});
    b.node("transformer.wte", "embedding", {wte, "input_ids"});
    b.node("transformer.wpe", "embedding", {b.param("transformer.wpe.weight", {positions, d}), "position_ids"});
    std::string x = b.node("transformer.embed", "add", {"transformer.wte", "transformer.wpe"});
    x = b.dropout("transformer.drop", x, embd);
    for (std::int64_t l = 0; l < layers; ++l) {
        const std::string p = "transformer.h." + std::to_string(l) + ".";
        const std::string a = b.layernorm(p + "ln_1", x, d, eps);
        // Conv1D stores its weight as [in, out]; the linear op takes [out, in]: same count.
        const std::string qkv = b.linear(p + "attn.c_attn", a, d, 3 * d, true);
        b.node(p + "attn.split", "split", {qkv}, {{"axis", -1}, {"sizes", {d, d, d}}});
        const std::string q = to_heads(b, p + "attn.query", p + "attn.split:0", "seq", heads, dh);
        const std::string k = to_heads(b, p + "attn.key", p + "attn.split:1", "seq", heads, dh);
        const std::string v = to_heads(b, p + "attn.value", p + "attn.split:2", "seq", heads, dh);
        const std::string ctx = attention(b, p + "attn.", q, k, v, dh, true, attn);
        std::string o = b.linear(p + "attn.c_proj", merge_heads(b, p + "attn", ctx, "seq", d), d, d, true);
        o = b.dropout(p + "attn.resid_dropout", o, resid);
        x = b.node(p + "attn.residual", "add", {x, o});
        const std::string m = b.layernorm(p + "ln_2", x, d, eps);
        const std::string up = b.linear(p + "mlp.c_fc", m, d, inner, true);
        std::string dn = b.linear(p + "mlp.c_proj", activation(b, r, "activation_function", act, p + "mlp.act", up), inner, d, true);
        dn = b.dropout(p + "mlp.dropout", dn, resid);
        x = b.node(p + "mlp.residual", "add", {x, dn});
    }
    x = b.layernorm("transformer.ln_f", x, d, eps);
    if (!head.has_head) {
        b.doc()["outputs"] = {x};
        return b.doc();
    }
    b.input("labels", {"batch", "seq"}, "int64");
    if (tied)
        b.node("lm_head", "matmul", {x, wte}, {{"transpose_b", true}});
    else
        b.linear("lm_head", x, d, vocab, false);
    b.node("loss", "cross_entropy", {"lm_head", "labels"});
    b.doc()["outputs"] = {"loss"};
    return b.doc();
}

// llama and mistral: transformers/models/llama/modeling_llama.py (LlamaForCausalLM), mistral's
// modeling_mistral.py is the same graph. Defaults from configuration_llama.py /
// configuration_mistral.py: num_key_value_heads = num_attention_heads, head_dim = hidden_size /
// num_attention_heads, hidden_act "silu", rms_norm_eps 1e-6, attention_bias and mlp_bias False,
// attention_dropout 0.0, tie_word_embeddings False.

json build_llama(const ConfigReader& r, const json& cfg, const std::string& model_type, const std::string& name) {
    const bool mistral = model_type == "mistral";
    const std::string causal_lm = mistral ? "MistralForCausalLM" : "LlamaForCausalLM";
    const std::string bare = mistral ? "MistralModel" : "LlamaModel";
    const Head head = read_architecture(r, cfg, model_type, {causal_lm, bare}, bare);
    const std::int64_t vocab = r.positive("vocab_size"), d = r.positive("hidden_size"), inter = r.positive("intermediate_size");
    const std::int64_t layers = r.positive("num_hidden_layers"), heads = r.positive("num_attention_heads");
    const std::int64_t positions = r.positive("max_position_embeddings");
    const std::int64_t kv_heads = r.positive_or("num_key_value_heads", heads);
    if (!r.has("head_dim") && d % heads != 0) {
        r.fail("num_attention_heads", "num_attention_heads " + std::to_string(heads) + " does not divide hidden_size " + std::to_string(d));
    }
    const std::int64_t dh = r.positive_or("head_dim", d / heads);
    if (heads % kv_heads != 0) {
        r.fail("num_key_value_heads",
               "num_key_value_heads " + std::to_string(kv_heads) + " does not divide num_attention_heads " + std::to_string(heads));
    }
    if (dh % 2 != 0) r.fail("head_dim", "rotary embeddings need an even head dimension, got " + std::to_string(dh));
    const std::string act = r.string_or("hidden_act", "silu");
    const double eps = r.positive_number_or("rms_norm_eps", 1e-6), attn_drop = r.probability_or("attention_dropout", 0.0);
    const bool attn_bias = r.bool_or("attention_bias", false), mlp_bias = r.bool_or("mlp_bias", false);
    const bool tied = r.bool_or("tie_word_embeddings", false);
    // Mistral's sliding window limits each query to the last sliding_window keys. Not modelled:
    // attention is full causal. The default sequence stays within the window, where both agree.
    const std::int64_t window = mistral ? r.positive_or("sliding_window", 0) : 0;
    const std::int64_t seq = window > 0 ? std::min(positions, window) : positions;

    DocBuilder b;
    std::string desc = "Hugging Face " + head.architecture + ": " + std::to_string(layers) + " layers, hidden " + std::to_string(d) + ", " +
                       std::to_string(heads) + " heads (" + std::to_string(kv_heads) + " key/value heads), MLP " + std::to_string(inter) +
                       ", vocab " + std::to_string(vocab);
    if (window > 0) desc += "; sliding window " + std::to_string(window) + " not modelled (full causal attention)";
    set_header(b, name, desc, dtype_of(r), {{"batch", 1}, {"seq", seq}});
    b.input("input_ids", {"batch", "seq"}, "int64");
    b.input("rope.cos", {"seq", dh});
    b.input("rope.sin", {"seq", dh});
    const std::string embed = b.param("model.embed_tokens.weight", {vocab, d});
    std::string x = b.node("model.embed_tokens", "embedding", {embed, "input_ids"});
    const std::int64_t n_rep = heads / kv_heads;
    for (std::int64_t l = 0; l < layers; ++l) {
        const std::string p = "model.layers." + std::to_string(l) + ".";
        const std::string a = b.rmsnorm(p + "input_layernorm", x, d, eps);
        const std::string at = p + "self_attn.";
        std::string q = to_heads(b, at + "q", b.linear(at + "q_proj", a, d, heads * dh, attn_bias), "seq", heads, dh);
        std::string k = to_heads(b, at + "k", b.linear(at + "k_proj", a, d, kv_heads * dh, attn_bias), "seq", kv_heads, dh);
        std::string v = to_heads(b, at + "v", b.linear(at + "v_proj", a, d, kv_heads * dh, attn_bias), "seq", kv_heads, dh);
        q = rotary(b, at + "q_rope", q, dh);
        k = repeat_kv(b, at + "k_repeat", rotary(b, at + "k_rope", k, dh), "seq", kv_heads, n_rep, dh);
        v = repeat_kv(b, at + "v_repeat", v, "seq", kv_heads, n_rep, dh);
        const std::string ctx = attention(b, at, q, k, v, dh, true, attn_drop);
        const std::string o = b.linear(at + "o_proj", merge_heads(b, at + "attn", ctx, "seq", heads * dh), heads * dh, d, attn_bias);
        x = b.node(p + "attn_residual", "add", {x, o});
        const std::string m = b.rmsnorm(p + "post_attention_layernorm", x, d, eps);
        const std::string gate = b.linear(p + "mlp.gate_proj", m, d, inter, mlp_bias);
        const std::string up = b.linear(p + "mlp.up_proj", m, d, inter, mlp_bias);
        const std::string gated = b.node(p + "mlp.gated", "mul", {activation(b, r, "hidden_act", act, p + "mlp.act_fn", gate), up});
        x = b.node(p + "mlp_residual", "add", {x, b.linear(p + "mlp.down_proj", gated, inter, d, mlp_bias)});
    }
    x = b.rmsnorm("model.norm", x, d, eps);
    if (!head.has_head) {
        b.doc()["outputs"] = {x};
        return b.doc();
    }
    b.input("labels", {"batch", "seq"}, "int64");
    if (tied)
        b.node("lm_head", "matmul", {x, embed}, {{"transpose_b", true}});
    else
        b.linear("lm_head", x, d, vocab, false);
    b.node("loss", "cross_entropy", {"lm_head", "labels"});
    b.doc()["outputs"] = {"loss"};
    return b.doc();
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
json build_opt(const ConfigReader& r, const json& cfg, const std::string& name) {
    const Head head = read_architecture(r, cfg, "opt", {"OPTForCausalLM", "OPTModel"}, "OPTModel");
    const std::int64_t vocab = r.positive("vocab_size"), d = r.positive("hidden_size"), layers = r.positive("num_hidden_layers");
    const std::int64_t heads = r.positive("num_attention_heads"), ffn = r.positive("ffn_dim");
    const std::int64_t positions = r.positive("max_position_embeddings");
    const std::int64_t proj = r.positive_or("word_embed_proj_dim", d);
    if (d % heads != 0) {
        r.fail("num_attention_heads", "num_attention_heads " + std::to_string(heads) + " does not divide hidden_size " + std::to_string(d));
    }
    const std::int64_t dh = d / heads;
    const bool before = r.bool_or("do_layer_norm_before", true);
    const bool bias = r.bool_or("enable_bias", true), affine = r.bool_or("layer_norm_elementwise_affine", true);
    const bool final_ln = before && !r.bool_or("_remove_final_layer_norm", false);
    const double drop = r.probability_or("dropout", 0.1), attn_drop = r.probability_or("attention_dropout", 0.0);
    const std::string act = r.string_or("activation_function", "relu");
    const bool tied = r.bool_or("tie_word_embeddings", true);
    const double eps = 1e-5;  // nn.LayerNorm's default: OPT has no eps key

    DocBuilder b;
    set_header(b, name,
               "Hugging Face " + head.architecture + ": " + std::to_string(layers) + " layers, hidden " + std::to_string(d) + ", " +
                   std::to_string(heads) + " heads, FFN " + std::to_string(ffn) + ", vocab " + std::to_string(vocab) +
                   (before ? "; pre-LN" : "; post-LN") + "; eager attention as transformers 4.38; dropout as in training",
               dtype_of(r), {{"batch", 1}, {"seq", positions}});
    auto layernorm = [&](const std::string& n, const std::string& x) {
        if (affine) return b.layernorm(n, x, d, eps);
        return b.node(n, "layernorm", {x}, {{"eps", eps}});
    };
    b.input("input_ids", {"batch", "seq"}, "int64");
    b.input("position_ids", {"batch", "seq"}, "int64");
    b.input("attention_floor", json::array());
    const std::string pd = "model.decoder.";
    const std::string embed = b.param(pd + "embed_tokens.weight", {vocab, proj});
    std::string x = b.node(pd + "embed_tokens", "embedding", {embed, "input_ids"});
    b.node(pd + "embed_positions", "embedding", {b.param(pd + "embed_positions.weight", {positions + 2, d}), "position_ids"});
    if (proj != d) x = b.linear(pd + "project_in", x, proj, d, false);
    x = b.node(pd + "embed", "add", {x, pd + "embed_positions"});
    for (std::int64_t l = 0; l < layers; ++l) {
        const std::string p = pd + "layers." + std::to_string(l) + ".";
        const std::string at = p + "self_attn.";
        const std::string a = before ? layernorm(p + "self_attn_layer_norm", x) : x;
        const std::string q = b.node(at + "q_scaled", "scale", {b.linear(at + "q_proj", a, d, d, bias)},
                                     {{"factor", 1.0 / std::sqrt(static_cast<double>(dh))}});
        // _shape: view(bsz, seq, heads, head_dim).transpose(1, 2).contiguous()
        auto shape = [&](const std::string& n, const std::string& t) {
            b.node(n + ".view", "reshape", {t}, {{"shape", {"batch", "seq", heads, dh}}});
            return b.node(n + ".heads", "permute", {n + ".view"}, {{"perm", {0, 2, 1, 3}}, {"copy", true}});
        };
        const std::string k = shape(at + "key", b.linear(at + "k_proj", a, d, d, bias));
        const std::string v = shape(at + "value", b.linear(at + "v_proj", a, d, d, bias));
        const std::string qh = shape(at + "query", q);
        b.node(at + "scores", "matmul", {qh, k}, {{"transpose_b", true}});
        b.node(at + "causal_mask", "causal_mask", {at + "scores"});
        b.node(at + "clamp", "maximum", {at + "causal_mask", "attention_floor"});
        const std::string probs =
            b.dropout(at + "attn_dropout", b.node(at + "softmax", "softmax", {at + "clamp"}, {{"axis", -1}}), attn_drop);
        const std::string ctx = b.node(at + "context", "matmul", {probs, v});
        std::string o = b.linear(at + "out_proj", merge_heads(b, at + "attn", ctx, "seq", d), d, d, bias);
        o = b.dropout(p + "dropout", o, drop);
        x = b.node(p + "attn_residual", "add", {x, o});
        if (!before) x = layernorm(p + "self_attn_layer_norm", x);
        const std::string m = before ? layernorm(p + "final_layer_norm", x) : x;
        const std::string up = b.linear(p + "fc1", m, d, ffn, bias);
        std::string dn = b.linear(p + "fc2", activation(b, r, "activation_function", act, p + "activation_fn", up), ffn, d, bias);
        dn = b.dropout(p + "fc2_dropout", dn, drop);
        x = b.node(p + "mlp_residual", "add", {x, dn});
        if (!before) x = layernorm(p + "final_layer_norm", x);
    }
    if (final_ln) x = layernorm(pd + "final_layer_norm", x);
    if (proj != d) x = b.linear(pd + "project_out", x, d, proj, false);
    if (!head.has_head) {
        b.doc()["outputs"] = {x};
        return b.doc();
    }
    b.input("labels", {"batch", "seq"}, "int64");
    if (tied)
        b.node("lm_head", "matmul", {x, embed}, {{"transpose_b", true}});
    else
        b.linear("lm_head", x, proj, vocab, false);
    b.node("loss", "cross_entropy", {"lm_head", "labels"});
    b.doc()["outputs"] = {"loss"};
    return b.doc();
}

}  // namespace roofline::hf
