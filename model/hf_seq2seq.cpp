// Encoder-decoder models from Hugging Face configs: switch_transformers, t5 and bart (model/hf_build.hpp).
#include <cmath>
#include <limits>

#include "model/hf_build.hpp"

namespace roofline::hf {
namespace {

struct SwitchDims {
    std::int64_t d, d_kv, heads, inner, d_ff, experts, capacity, buckets;
    double eps, drop, jitter;
    bool router_bias;
    bool gated = false;  // T5DenseGatedActDense: wo(dropout(act(wi_0(x)) * wi_1(x)))
    std::string act;
};

// SwitchTransformersLayerNorm (T5's): weight * (x * rsqrt(mean(x^2, -1) + eps)), no mean, no bias,
// spelled out as eager PyTorch runs it: pow, mean, add eps, rsqrt, mul, mul. (transformers
// computes the variance on x.to(float32): a no-op in fp32; for 16-bit that cast is not modelled.)
std::string t5_layernorm(DocBuilder& b, const std::string& n, const std::string& x, const SwitchDims& s) {
    const std::string sq = b.node(n + ".pow", "pow", {x}, {{"exponent", 2.0}});
    const std::string var = b.node(n + ".variance", "reduce_mean", {sq}, {{"axes", {-1}}, {"keepdim", true}});
    const std::string r = b.node(n + ".rsqrt", "rsqrt", {b.node(n + ".add_eps", "shift", {var}, {{"offset", s.eps}})});
    const std::string h = b.node(n + ".normalize", "mul", {x, r});
    return b.node(n, "mul", {b.param(n + ".weight", {s.d}), h});
}

// SwitchTransformersAttention: q, k, v, o without bias, inner dimension heads * d_kv, no scaling of
// the scores (the initialisation absorbs it), scores += position_bias, softmax, dropout, P V,
// transpose + contiguous (a copy), o. kv is the encoder output for cross-attention.
std::string t5_attention(DocBuilder& b, const std::string& p, const std::string& x, const std::string& kv, const std::string& bias,
                         const SwitchDims& s) {
    const std::string q = to_heads(b, p + "query", b.linear(p + "q", x, s.d, s.inner, false), "seq", s.heads, s.d_kv);
    const std::string k = to_heads(b, p + "key", b.linear(p + "k", kv, s.d, s.inner, false), "seq", s.heads, s.d_kv);
    const std::string v = to_heads(b, p + "value", b.linear(p + "v", kv, s.d, s.inner, false), "seq", s.heads, s.d_kv);
    b.node(p + "scores", "matmul", {q, k}, {{"transpose_b", true}});
    b.node(p + "add_position_bias", "add", {p + "scores", bias});
    const std::string probs = b.dropout(p + "dropout", b.node(p + "softmax", "softmax", {p + "add_position_bias"}, {{"axis", -1}}), s.drop);
    const std::string ctx = b.node(p + "context", "matmul", {probs, v});
    return b.linear(p + "o", merge_heads(b, p + "attn", ctx, "seq", s.inner), s.inner, s.d, false);
}

// SwitchTransformersDenseActDense and T5DenseActDense: wo(dropout(act(wi(x)))), no biases; with
// gated (T5DenseGatedActDense): wo(dropout(act(wi_0(x)) * wi_1(x))).
std::string dense_act_dense(DocBuilder& b, const ConfigReader& r, const std::string& p, const std::string& x, const SwitchDims& s) {
    std::string h;
    if (s.gated) {
        const std::string g = activation(b, r, "feed_forward_proj", s.act, p + "act", b.linear(p + "wi_0", x, s.d, s.d_ff, false));
        h = b.node(p + "gated", "mul", {g, b.linear(p + "wi_1", x, s.d, s.d_ff, false)});
    } else {
        h = activation(b, r, "dense_act_fn", s.act, p + "act", b.linear(p + "wi", x, s.d, s.d_ff, false));
    }
    return b.linear(p + "wo", b.dropout(p + "dropout", h, s.drop), s.d_ff, s.d, false);
}

// SwitchTransformersSparseMLP. The router: classifier (linear d_model -> num_experts), softmax
// (HF casts to router_dtype float32 first: a no-op in fp32, not modelled for 16-bit), top-1
// (argmax, one_hot, cumsum over the sequence for the capacity mask: integer ops on [batch, seq,
// experts], not modelled), router_probs = the top probability. In training the router input is
// multiplied by uniform noise in [1 - jitter, 1 + jitter] (input router_jitter stands for the draw).
// Dispatch, as transformers 4.38 runs it: next_states = hidden_states.clone(); for each expert,
// next_states[mask] = expert(hidden_states[mask]) (a gather, the expert FFN, a scatter); then
// router_probs * next_states. Which tokens an expert gets depends on the trained router; this
// models UNIFORM routing: tokens go round-robin (token t of a sequence to expert t mod E), and
// expert_capacity drops the tokens past the first `capacity` each expert gets in a sequence (HF's
// cumsum is per sequence), so each expert runs min(capacity, seq / E) tokens of each sequence
// (seq must be a multiple of num_experts). As ops: a view [batch, seq/E, E, d]; per expert a
// strided slice of its tokens (the gather), the expert FFN on them, a concat of the expert outputs
// (the scatter), and a concat with the dropped tokens, which keep their input (the clone).
std::string sparse_mlp(DocBuilder& b, const ConfigReader& r, const std::string& p, const std::string& x, const SwitchDims& s) {
    const std::string ro = p + "router.";
    const std::string rin = s.jitter > 0 ? b.node(ro + "jitter", "mul", {x, "router_jitter"}) : x;
    std::string logits = b.linear(ro + "classifier", rin, s.d, s.experts, s.router_bias);
    const std::string probs = b.node(ro + "softmax", "softmax", {logits}, {{"axis", -1}});
    const std::string top = b.node(ro + "top_prob", "reduce_max", {probs}, {{"axes", {-1}}, {"keepdim", true}});
    const std::string groups = b.node(p + "dispatch", "reshape", {x}, {{"shape", {"batch", -1, s.experts, s.d}}});
    json outs = json::array();
    for (std::int64_t e = 0; e < s.experts; ++e) {
        const std::string ep = p + "experts.expert_" + std::to_string(e) + ".";
        const std::string tokens =
            b.node(ep + "gather", "slice", {groups}, {{"starts", {0, e}}, {"ends", {s.capacity, e + 1}}, {"axes", {1, 2}}});
        outs.push_back(dense_act_dense(b, r, ep, tokens, s));
    }
    const std::string routed = b.node(p + "scatter", "concat", outs, {{"axis", 2}});
    const std::string dropped = b.node(p + "dropped", "slice", {groups},
                                       {{"starts", {s.capacity}}, {"ends", {std::numeric_limits<std::int64_t>::max()}}, {"axes", {1}}});
    b.node(p + "next_states", "concat", {routed, dropped}, {{"axis", 1}});
    const std::string next = b.node(p + "combine", "reshape", {p + "next_states"}, {{"shape", {"batch", "seq", s.d}}});
    return b.node(p + "weighted", "mul", {top, next});
}

// T5's relative position bias of a stack's first layer: relative_attention_bias looked up at the
// bucket of every (query, key) pair (the integer bucket arithmetic is not modelled: the input
// <stack>.relative_position_bucket [seq, seq] holds the buckets), permuted to [1, heads, seq, seq].
std::string relative_bias(DocBuilder& b, const std::string& stack, const std::string& attn, const SwitchDims& s) {
    const std::string bucket = stack + "relative_position_bucket";
    b.input(bucket, {"seq", "seq"}, "int64");
    const std::string table = b.param(attn + "relative_attention_bias.weight", {s.buckets, s.heads});
    b.node(attn + "relative_attention_bias", "embedding", {table, bucket});
    b.node(attn + "position_bias.permute", "permute", {attn + "relative_attention_bias"}, {{"perm", {2, 0, 1}}});
    return b.node(attn + "position_bias.unsqueeze", "reshape", {attn + "position_bias.permute"}, {{"shape", {1, s.heads, "seq", "seq"}}});
}

// is_sparse of SwitchTransformersStack: (i % sparse_step == 1 or sparse_step == 1) if sparse_step > 0.
bool sparse_layer(std::int64_t i, std::int64_t step) { return step > 0 && (i % step == 1 || step == 1); }

// encoder_sparse_step / decoder_sparse_step: the config's value when saved, else what
// configuration_switch_transformers.py derives: num_layers // num_sparse_layers (num_layers
// when there are none).
std::int64_t sparse_step(const ConfigReader& r, const std::string& key, const std::string& count_key, std::int64_t layers) {
    if (r.has(key)) return r.non_negative_or(key, 0);
    const std::int64_t sparse = r.non_negative_or(count_key, 3);
    return sparse > 0 ? layers / sparse : layers;
}

// Runs an encoder-decoder's two stacks (stack(decoder, encoder_out) -> the stack's output); without
// a head the outputs are the decoder's and the encoder's and this returns false; with one it adds
// the labels input [batch, seq], sets `decoded` and returns true.
template <class Stack>
bool with_head(DocBuilder& b, const Head& head, const Stack& stack, std::string& decoded) {
    const std::string encoded = stack(false, "");
    decoded = stack(true, encoded);
    if (!head.has_head) {
        b.doc()["outputs"] = {decoded, encoded};
        return false;
    }
    b.input("labels", {"batch", "seq"}, "int64");
    return true;
}

}  // namespace

// switch_transformers: transformers/models/switch_transformers/modeling_switch_transformers.py
// (SwitchTransformersForConditionalGeneration), as transformers 4.38 runs it in eager mode (the
// version the NeuSight measurements used). Defaults from configuration_switch_transformers.py:
// num_decoder_layers = num_layers, num_sparse_encoder_layers and num_sparse_decoder_layers 3,
// router_bias False, router_jitter_noise 0.01, relative_attention_num_buckets 32, dropout_rate 0.1,
// layer_norm_epsilon 1e-6, dense_act_fn "relu"; tie_word_embeddings True (PretrainedConfig).
// Encoder: shared embedding, dropout, blocks (T5 LayerNorm, self-attention with the relative
// position bias of block 0 plus the padding mask, residual; T5 LayerNorm, dense or sparse MLP,
// residual), final LayerNorm, dropout. Decoder: the same with causal self-attention and, in every
// block, cross-attention over the encoder output (position bias: zeros plus the encoder padding
// mask). The decoder runs as many tokens as the encoder (decoder_input_ids as long as input_ids,
// what NeuSight feeds): one dimension "seq" for both. Head: the decoder output times d_model^-0.5
// when the embeddings are tied (T5's rescaling), lm_head tied to the shared embedding, and
// cross_entropy over every position. The router z-loss and load-balancing loss (computed from the
// router logits when labels are given) are not modelled. Masks are inputs: attention_mask and
// decoder_attention_mask [batch, 1, 1, seq] are the additive padding masks (zeros without padding),
// cross_attention_zeros [1, heads, seq, seq] the torch.zeros the cross-attention bias starts from.
//
// t5: transformers/models/t5/modeling_t5.py (T5ForConditionalGeneration, T5WithLMHeadModel its old
// name, T5Model), the same graph with every block dense: the feed-forward module is
// DenseReluDense (T5DenseActDense: wi, act, dropout, wo), or T5DenseGatedActDense (wi_0, wi_1) when
// feed_forward_proj is "gated-<act>" (T5 v1.1, flan-t5; "gated-gelu" runs gelu_new). Defaults from
// configuration_t5.py: feed_forward_proj "relu", and the rest as switch_transformers'.
json build_switch_transformers(const ConfigReader& r, const json& cfg, const std::string& model_type, const std::string& name) {
    const bool t5 = model_type == "t5";
    const Head head =
        t5 ? read_architecture(r, cfg, "t5", {"T5ForConditionalGeneration", "T5Model", "T5WithLMHeadModel"}, "T5Model")
           : read_architecture(r, cfg, "switch_transformers", {"SwitchTransformersForConditionalGeneration", "SwitchTransformersModel"},
                               "SwitchTransformersModel");
    SwitchDims s;
    const std::int64_t vocab = r.positive("vocab_size");
    s.d = r.positive("d_model");
    s.d_kv = r.positive("d_kv");
    s.heads = r.positive("num_heads");
    s.inner = s.heads * s.d_kv;
    s.d_ff = r.positive("d_ff");
    s.experts = t5 ? 0 : r.positive("num_experts");
    s.capacity = t5 ? 0 : r.positive("expert_capacity");
    s.buckets = r.positive_or("relative_attention_num_buckets", 32);
    (void)r.positive_or("relative_attention_max_distance", 128);  // only shapes the (unmodelled) bucket arithmetic
    const std::int64_t enc_layers = r.positive("num_layers");
    const std::int64_t dec_layers = r.positive_or("num_decoder_layers", enc_layers);
    const std::int64_t enc_step = t5 ? 0 : sparse_step(r, "encoder_sparse_step", "num_sparse_encoder_layers", enc_layers);
    const std::int64_t dec_step = t5 ? 0 : sparse_step(r, "decoder_sparse_step", "num_sparse_decoder_layers", dec_layers);
    s.eps = r.positive_number_or("layer_norm_epsilon", 1e-6);
    s.drop = r.probability_or("dropout_rate", 0.1);
    s.jitter = t5 ? 0.0 : r.probability_or("router_jitter_noise", 0.01);
    s.router_bias = r.bool_or("router_bias", false);
    if (t5) {
        // T5Config: feed_forward_proj "[gated-]<act>"; "gated-gelu" runs gelu_new
        const std::string proj = r.string_or("feed_forward_proj", "relu");
        s.gated = proj.rfind("gated-", 0) == 0;
        s.act = s.gated ? proj.substr(6) : proj;
        if (proj == "gated-gelu") s.act = "gelu_new";
        if (s.act.empty() || s.act.find('-') != std::string::npos)
            r.fail("feed_forward_proj", "expected \"<activation>\" or \"gated-<activation>\", got \"" + proj + "\"");
    } else {
        s.act = r.string_or("dense_act_fn", "relu");
        r.reject_if(r.bool_or("is_gated_act", false), "is_gated_act",
                    "gated feed-forward layers (SwitchTransformersDenseActDense has none)");
    }
    r.reject_if(r.has("is_encoder_decoder") && !r.bool_or("is_encoder_decoder", true), "is_encoder_decoder",
                "an encoder-only " + model_type + " model");
    const bool tied = r.bool_or("tie_word_embeddings", true);
    const std::string ff_module = t5 ? "DenseReluDense." : "mlp.";
    std::int64_t enc_sparse = 0, dec_sparse = 0;
    for (std::int64_t i = 0; i < enc_layers; ++i) enc_sparse += sparse_layer(i, enc_step) ? 1 : 0;
    for (std::int64_t i = 0; i < dec_layers; ++i) dec_sparse += sparse_layer(i, dec_step) ? 1 : 0;

    DocBuilder b;
    const std::string sizes = "Hugging Face " + head.architecture + ": " + std::to_string(enc_layers) + " encoder and " +
                              std::to_string(dec_layers) + " decoder layers";
    const std::string dims = "d_model " + std::to_string(s.d) + ", " + std::to_string(s.heads) + " heads x d_kv " + std::to_string(s.d_kv) +
                             ", d_ff " + std::to_string(s.d_ff);
    if (t5) {
        set_header(b, name,
                   sizes + ", " + dims + (s.gated ? " (gated " : " (") + s.act + "), vocab " + std::to_string(vocab) +
                       "; decoder length = encoder length (seq); eager ops as transformers 4.38; dropout as in training",
                   dtype_of(r), {{"batch", 1}, {"seq", 512}});
    } else {
        set_header(b, name,
                   sizes + " (" + std::to_string(enc_sparse) + " and " + std::to_string(dec_sparse) + " sparse), " + dims + ", " +
                       std::to_string(s.experts) + " experts of capacity " + std::to_string(s.capacity) + ", vocab " +
                       std::to_string(vocab) +
                       "; UNIFORM routing assumed: each expert runs min(capacity, seq / num_experts) tokens of each sequence (seq must be "
                       "a multiple of num_experts); decoder length = encoder length (seq); eager ops as transformers 4.38; dropout and "
                       "router jitter as in training",
                   dtype_of(r), {{"batch", 1}, {"seq", 512}});
    }
    b.input("input_ids", {"batch", "seq"}, "int64");
    b.input("attention_mask", {"batch", 1, 1, "seq"});
    if (s.jitter > 0 && (enc_sparse > 0 || dec_sparse > 0)) b.input("router_jitter", {"batch", "seq", s.d});
    const std::string shared = b.param("shared.weight", {vocab, s.d});

    // One stack: returns its output.
    auto stack = [&](bool decoder, const std::string& encoder_out) {
        const std::string st = decoder ? "decoder." : "encoder.";
        const std::int64_t layers = decoder ? dec_layers : enc_layers, step = decoder ? dec_step : enc_step;
        const std::string ids = decoder ? "decoder_input_ids" : "input_ids";
        if (decoder) {
            b.input(ids, {"batch", "seq"}, "int64");
            b.input("decoder_attention_mask", {"batch", 1, 1, "seq"});
            b.input("cross_attention_zeros", {1, s.heads, "seq", "seq"});
        }
        b.node(st + "embed_tokens", "embedding", {shared, ids});
        std::string x = b.dropout(st + "dropout_in", st + "embed_tokens", s.drop);
        std::string self_bias, cross_bias;
        for (std::int64_t i = 0; i < layers; ++i) {
            const std::string p = st + "block." + std::to_string(i) + ".";
            const std::string sa = p + "layer.0.SelfAttention.";
            if (i == 0) {
                // computed by block 0, plus the mask, and reused by every block
                std::string bias = relative_bias(b, st, sa, s);
                if (decoder) bias = b.node(sa + "position_bias.causal_mask", "causal_mask", {bias});
                self_bias = b.node(sa + "position_bias", "add", {bias, decoder ? "decoder_attention_mask" : "attention_mask"});
                if (decoder) {
                    cross_bias = b.node(p + "layer.1.EncDecAttention.position_bias", "add", {"cross_attention_zeros", "attention_mask"});
                }
            }
            const std::string n0 = t5_layernorm(b, p + "layer.0.layer_norm", x, s);
            const std::string a = b.dropout(p + "layer.0.dropout", t5_attention(b, sa, n0, n0, self_bias, s), s.drop);
            x = b.node(p + "layer.0.residual", "add", {x, a});
            std::int64_t ff = 1;
            if (decoder) {
                const std::string n1 = t5_layernorm(b, p + "layer.1.layer_norm", x, s);
                const std::string c = b.dropout(p + "layer.1.dropout",
                                                t5_attention(b, p + "layer.1.EncDecAttention.", n1, encoder_out, cross_bias, s), s.drop);
                x = b.node(p + "layer.1.residual", "add", {x, c});
                ff = 2;
            }
            const std::string fp = p + "layer." + std::to_string(ff) + ".";
            const std::string n = t5_layernorm(b, fp + "layer_norm", x, s);
            const std::string m =
                sparse_layer(i, step) ? sparse_mlp(b, r, fp + ff_module, n, s) : dense_act_dense(b, r, fp + ff_module, n, s);
            x = b.node(fp + "residual", "add", {x, b.dropout(fp + "dropout", m, s.drop)});
        }
        x = t5_layernorm(b, st + "final_layer_norm", x, s);
        return b.dropout(st + "dropout_out", x, s.drop);
    };
    std::string decoded;
    if (!with_head(b, head, stack, decoded)) return b.take();
    if (tied) {
        const std::string scaled = b.node("lm_head.rescale", "scale", {decoded}, {{"factor", 1.0 / std::sqrt(static_cast<double>(s.d))}});
        b.node("lm_head", "matmul", {scaled, shared}, {{"transpose_b", true}});
    } else {
        b.linear("lm_head", decoded, s.d, vocab, false);
    }
    b.node("loss", "cross_entropy", {"lm_head", "labels"});
    b.doc()["outputs"] = {"loss"};
    return b.take();
}

// bart: transformers/models/bart/modeling_bart.py (BartForConditionalGeneration, BartModel), 4.40
// with sdpa attention. Defaults from configuration_bart.py (facebook/bart-large): 12 + 12 layers,
// d_model 1024, 16 heads, ffn 4096, activation_function "gelu", dropout 0.1, attention_dropout and
// activation_dropout 0.0, scale_embedding False, max_position_embeddings 1024; tie_word_embeddings
// True (PretrainedConfig). Each stack: shared embedding (times sqrt(d_model) with scale_embedding)
// plus learned positions (BartLearnedPositionalEmbedding: max_position_embeddings + 2 rows, offset
// 2; input position_ids [seq] holds the rows), layernorm_embedding, dropout; post-LN layers with q,
// k, v, out_proj and fc1, fc2 with biases: self-attention (causal in the decoder), in the decoder
// cross-attention over the encoder output, dropout, residual, LayerNorm; fc1, activation,
// activation dropout, fc2, dropout, residual, final_layer_norm. Head: lm_head tied to the shared
// embedding plus final_logits_bias (a buffer, not a parameter: the input final_logits_bias),
// cross_entropy. The decoder runs as many tokens as the encoder (one "seq" for both).
json build_bart(const ConfigReader& r, const json& cfg, const std::string& /*model_type*/, const std::string& name) {
    const Head head = read_architecture(r, cfg, "bart", {"BartForConditionalGeneration", "BartModel"}, "BartModel");
    const std::int64_t vocab = r.positive("vocab_size"), d = r.positive("d_model"), positions = r.positive("max_position_embeddings");
    const std::int64_t enc_layers = r.positive("encoder_layers"), dec_layers = r.positive("decoder_layers");
    const std::int64_t enc_heads = r.positive("encoder_attention_heads"), dec_heads = r.positive("decoder_attention_heads");
    const std::int64_t enc_ffn = r.positive("encoder_ffn_dim"), dec_ffn = r.positive("decoder_ffn_dim");
    r.require_divides("encoder_attention_heads", enc_heads, "d_model", d);
    r.require_divides("decoder_attention_heads", dec_heads, "d_model", d);
    const std::string act = r.string_or("activation_function", "gelu");
    const double drop = r.probability_or("dropout", 0.1), attn_drop = r.probability_or("attention_dropout", 0.0);
    const double act_drop = r.probability_or("activation_dropout", 0.0);
    const bool scale = r.bool_or("scale_embedding", false), tied = r.bool_or("tie_word_embeddings", true);
    r.reject_if(r.has("is_encoder_decoder") && !r.bool_or("is_encoder_decoder", true), "is_encoder_decoder", "an encoder-only bart model");
    const double eps = 1e-5;  // nn.LayerNorm's default: BART has no eps key

    DocBuilder b;
    set_header(b, name,
               "Hugging Face " + head.architecture + ": " + std::to_string(enc_layers) + " encoder and " + std::to_string(dec_layers) +
                   " decoder layers, d_model " + std::to_string(d) + ", " + std::to_string(enc_heads) + " / " + std::to_string(dec_heads) +
                   " heads, FFN " + std::to_string(enc_ffn) + " / " + std::to_string(dec_ffn) + ", vocab " + std::to_string(vocab) +
                   "; post-LN; decoder length = encoder length (seq); dropout as in training",
               dtype_of(r), {{"batch", 1}, {"seq", positions}});
    b.input("input_ids", {"batch", "seq"}, "int64");
    b.input("decoder_input_ids", {"batch", "seq"}, "int64");
    b.input("position_ids", {"seq"}, "int64");
    const std::string shared = b.param("model.shared.weight", {vocab, d});
    // BartAttention: q, k, v, out_proj with biases; kv is the encoder output for cross-attention.
    const auto attention_block = [&](const std::string& p, const std::string& x, const std::string& kv, std::int64_t heads, bool causal) {
        const std::int64_t dh = d / heads;
        const std::string q = to_heads(b, p + "query", b.linear(p + "q_proj", x, d, d, true), "seq", heads, dh);
        const std::string k = to_heads(b, p + "key", b.linear(p + "k_proj", kv, d, d, true), "seq", heads, dh);
        const std::string v = to_heads(b, p + "value", b.linear(p + "v_proj", kv, d, d, true), "seq", heads, dh);
        const std::string ctx = attention(b, p, q, k, v, dh, causal, attn_drop);
        return b.linear(p + "out_proj", merge_heads(b, p + "attn", ctx, "seq", d), d, d, true);
    };
    const auto sublayer = [&](const std::string& p, const std::string& x, const std::string& out, const std::string& norm) {
        return b.layernorm(norm, b.node(p + "residual", "add", {x, b.dropout(p + "dropout", out, drop)}), d, eps);
    };
    const auto stack = [&](bool decoder, const std::string& encoded) {
        const std::string st = decoder ? "model.decoder." : "model.encoder.";
        const std::int64_t layers = decoder ? dec_layers : enc_layers, heads = decoder ? dec_heads : enc_heads;
        const std::int64_t ffn = decoder ? dec_ffn : enc_ffn;
        std::string x = b.node(st + "embed_tokens", "embedding", {shared, decoder ? "decoder_input_ids" : "input_ids"});
        if (scale) x = b.node(st + "embed_scale", "scale", {x}, {{"factor", std::sqrt(static_cast<double>(d))}});
        b.node(st + "embed_positions", "embedding", {b.param(st + "embed_positions.weight", {positions + 2, d}), "position_ids"});
        x = b.node(st + "embed", "add", {x, st + "embed_positions"});
        x = b.dropout(st + "dropout", b.layernorm(st + "layernorm_embedding", x, d, eps), drop);
        for (std::int64_t l = 0; l < layers; ++l) {
            const std::string p = st + "layers." + std::to_string(l) + ".";
            x = sublayer(p + "self_attn.", x, attention_block(p + "self_attn.", x, x, heads, decoder), p + "self_attn_layer_norm");
            if (decoder) {
                x = sublayer(p + "encoder_attn.", x, attention_block(p + "encoder_attn.", x, encoded, heads, false),
                             p + "encoder_attn_layer_norm");
            }
            const std::string h = activation(b, r, "activation_function", act, p + "activation_fn", b.linear(p + "fc1", x, d, ffn, true));
            const std::string f = b.linear(p + "fc2", b.dropout(p + "activation_dropout", h, act_drop), ffn, d, true);
            x = sublayer(p + "ffn.", x, f, p + "final_layer_norm");
        }
        return x;
    };
    std::string decoded;
    if (!with_head(b, head, stack, decoded)) return b.take();
    b.input("final_logits_bias", {1, vocab});
    const std::string lm =
        tied ? b.node("lm_head", "matmul", {decoded, shared}, {{"transpose_b", true}}) : b.linear("lm_head", decoded, d, vocab, false);
    b.node("loss", "cross_entropy", {b.node("lm_logits", "add", {lm, "final_logits_bias"}), "labels"});
    b.doc()["outputs"] = {"loss"};
    return b.take();
}

}  // namespace roofline::hf
