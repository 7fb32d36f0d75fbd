// Encoder-decoder models from Hugging Face configs: switch_transformers, t5 and bart (model/hf_build.hpp).
#include <cmath>
#include <limits>
#include <utility>

#include "model/hf_build.hpp"
#include "ops/error.hpp"

namespace roofline::hf {
namespace {

struct SwitchDims {
    std::int64_t d, d_kv, heads, inner, d_ff, experts, capacity, buckets;
    double eps, drop, jitter;
    bool router_bias;
    bool gated = false;  // T5DenseGatedActDense: wo(dropout(act(wi_0(x)) * wi_1(x)))
    std::string act;
};

// What a document computes: the forward graph (one length "seq" for both stacks, the padding
// masks as inputs, dropout as in training), or one inference step (Seq2SeqStep: eval mode, a batch
// without padding, so the additive masks, zeros, are left out; K and V cached).
struct Run {
    const Seq2SeqStep* step = nullptr;  // null: the forward graph
    std::int64_t batch = 1;             // an inference step's sequences
    json outputs = json::array();       // an inference step's cache writes (after the logits)
    json all_reduce = json::array();    // tensor parallelism: the nodes whose output is a partial sum
    bool inference() const { return step != nullptr; }
    int tp() const { return step != nullptr ? step->tp : 1; }
};

// Where an attention's keys and values come from, as transformers runs the cache
// (modeling_t5.py T5Attention and modeling_bart.py BartAttention with past_key_value/use_cache;
// the serving engines' KV cache alike):
//   from:   projected by the k and v linears from this [batch, len, d] tensor ("": not projected,
//           the cross-attention K and V of a decode step, which its prefill computed and cached);
//   write:  the projections copied into the cache (vLLM's reshape_and_cache; a cast to the cache's
//           dtype on the way for a quantized cache);
//   cached: > 0: the attention reads that many tokens of the cache in place, the inputs <p>k_cache
//           and <p>v_cache [batch, heads, cached, dh] (already holding the projections written),
//           instead of the projections.
struct KvSource {
    std::string from;
    json len = "seq";
    bool write = false;
    std::int64_t cached = 0;
};

// The keys and values [batch, heads, len, dh] of the attention at prefix p (KvSource); the linears
// p + k_name, p + v_name map d to heads * dh.
std::pair<std::string, std::string> keys_values(DocBuilder& b, Run& run, const std::string& p, const KvSource& src, const char* k_name,
                                                const char* v_name, std::int64_t d, std::int64_t heads, std::int64_t dh, bool bias) {
    std::string k, v;
    if (!src.from.empty()) {
        k = to_heads(b, p + "key", b.linear(p + k_name, src.from, d, heads * dh, bias), src.len, heads, dh);
        v = to_heads(b, p + "value", b.linear(p + v_name, src.from, d, heads * dh, bias), src.len, heads, dh);
    }
    const std::string& quant = run.inference() ? run.step->kv_cache : std::string();
    if (src.write) {
        for (const auto& [name, t] : {std::pair<const char*, std::string>{"k", k}, {"v", v}}) {
            const std::string w = p + name + "_cache_write";
            run.outputs.push_back(quant.empty() ? b.node(w, "permute", {t}, {{"perm", {0, 1, 2, 3}}, {"copy", true}})
                                                : b.node(w, "cast", {t}, {{"dtype", quant}}));
        }
    }
    if (src.cached > 0) {
        k = p + "k_cache", v = p + "v_cache";
        b.input(k, {"batch", heads, src.cached, dh}, quant.empty() ? nullptr : quant.c_str());
        b.input(v, {"batch", heads, src.cached, dh}, quant.empty() ? nullptr : quant.c_str());
    }
    return {k, v};
}

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
// the scores (the initialisation absorbs it), scores += position_bias (none given: no add),
// softmax, dropout, P V, transpose + contiguous (a copy), o. x [batch, len, d] are the queries;
// kv says where K and V come from (the encoder output for cross-attention).
std::string t5_attention(DocBuilder& b, Run& run, const std::string& p, const std::string& x, const json& len, const KvSource& kv,
                         const std::string& bias, const SwitchDims& s) {
    const std::string q = to_heads(b, p + "query", b.linear(p + "q", x, s.d, s.inner, false), len, s.heads, s.d_kv);
    const auto [k, v] = keys_values(b, run, p, kv, "k", "v", s.d, s.heads, s.d_kv, false);
    std::string scores = b.node(p + "scores", "matmul", {q, k}, {{"transpose_b", true}});
    if (!bias.empty()) scores = b.node(p + "add_position_bias", "add", {scores, bias});
    const std::string probs = b.dropout(p + "dropout", b.node(p + "softmax", "softmax", {scores}, {{"axis", -1}}), s.drop);
    const std::string ctx = b.node(p + "context", "matmul", {probs, v});
    const std::string o = b.linear(p + "o", merge_heads(b, p + "attn", ctx, len, s.inner), s.inner, s.d, false);
    if (run.tp() > 1) run.all_reduce.push_back(o);
    return o;
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
//
// An inference step's decoder runs one token per sequence: top-1 routing sends each of the batch's
// B tokens to one expert, and the capacity (per sequence) never drops it. UNIFORM routing spreads
// the B tokens over the experts: expert e gets B / E of them, one more for e < B mod E, as one
// gather of rows; an expert that gets none is not run (its weights are not read: transformers 4.40
// skips it, and so do the serving engines' MoE kernels).
std::string sparse_mlp(DocBuilder& b, const ConfigReader& r, Run& run, const std::string& p, const std::string& x, const json& len,
                       const SwitchDims& s) {
    const std::string ro = p + "router.";
    const std::string rin = s.jitter > 0 ? b.node(ro + "jitter", "mul", {x, "router_jitter"}) : x;
    std::string logits = b.linear(ro + "classifier", rin, s.d, s.experts, s.router_bias);
    const std::string probs = b.node(ro + "softmax", "softmax", {logits}, {{"axis", -1}});
    const std::string top = b.node(ro + "top_prob", "reduce_max", {probs}, {{"axes", {-1}}, {"keepdim", true}});
    if (run.inference() && len == 1) {
        const std::int64_t tokens = run.batch;
        const std::string rows = b.node(p + "dispatch", "reshape", {x}, {{"shape", {tokens, s.d}}});
        json outs = json::array();
        for (std::int64_t e = 0, start = 0; e < s.experts; ++e) {
            const std::int64_t n = tokens / s.experts + (e < tokens % s.experts ? 1 : 0);
            if (n == 0) continue;
            const std::string ep = p + "experts.expert_" + std::to_string(e) + ".";
            const std::string gathered =
                b.node(ep + "gather", "slice", {rows}, {{"starts", {start}}, {"ends", {start + n}}, {"axes", {0}}});
            outs.push_back(dense_act_dense(b, r, ep, gathered, s));
            start += n;
        }
        const std::string routed = outs.size() == 1 ? outs[0].get<std::string>() : b.node(p + "scatter", "concat", outs, {{"axis", 0}});
        const std::string next = b.node(p + "combine", "reshape", {routed}, {{"shape", {"batch", 1, s.d}}});
        return b.node(p + "weighted", "mul", {top, next});
    }
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
    const std::string next = b.node(p + "combine", "reshape", {p + "next_states"}, {{"shape", {"batch", len, s.d}}});
    return b.node(p + "weighted", "mul", {top, next});
}

// T5's relative position bias of a stack's first layer: relative_attention_bias looked up at the
// bucket of every (query, key) pair (the integer bucket arithmetic is not modelled: the input
// <stack>.relative_position_bucket [q_len, k_len] holds the buckets), permuted to [1, heads, q_len,
// k_len]. A decode step's one query needs one row of it: [heads, 1, context + 1], as
// T5Attention.compute_bias(query_length, key_length, cache_position) gathers it (transformers
// 4.46+; 4.38 computed every row and kept the last).
std::string relative_bias(DocBuilder& b, const std::string& stack, const std::string& attn, const SwitchDims& s, const json& q_len,
                          const json& k_len) {
    const std::string bucket = stack + "relative_position_bucket";
    b.input(bucket, {q_len, k_len}, "int64");
    const std::string table = b.param(attn + "relative_attention_bias.weight", {s.buckets, s.heads});
    b.node(attn + "relative_attention_bias", "embedding", {table, bucket});
    b.node(attn + "position_bias.permute", "permute", {attn + "relative_attention_bias"}, {{"perm", {2, 0, 1}}});
    return b.node(attn + "position_bias.unsqueeze", "reshape", {attn + "position_bias.permute"}, {{"shape", {1, s.heads, q_len, k_len}}});
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

// What an inference step computes, for the document's description.
std::string step_description(const Seq2SeqStep& step, std::int64_t source) {
    std::string what =
        step.decode ? "decode: 1 new decoder token per sequence; self-attention over " + std::to_string(step.context) +
                          " cached tokens + itself (its K and V appended to the cache), cross-attention over the cached K and V of " +
                          std::to_string(source) + " source tokens; logits of the new token"
                    : "prefill: the encoder over " + std::to_string(source) +
                          " source tokens per sequence; every decoder layer's cross-attention K and V of the encoder output computed once "
                          "and written to the cache; the decoder's first step (one decoder-start token per sequence), its self-attention K "
                          "and V written to the cache; logits of that token";
    what += "; eval mode, no padding (the additive masks, zeros, left out)";
    if (!step.kv_cache.empty()) what += "; KV cache " + step.kv_cache;
    return what;
}

// An inference step's outputs (the logits, then the cache writes) and tensor parallelism.
json finish_step(DocBuilder& b, Run& run, const std::string& logits) {
    json outputs = json::array({logits});
    for (const json& o : run.outputs) outputs.push_back(o);
    b.doc()["outputs"] = std::move(outputs);
    if (run.tp() > 1) b.doc()["tensor_parallel"] = {{"degree", run.tp()}, {"all_reduce", run.all_reduce}};
    return b.take();
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
namespace {

json t5_family(const ConfigReader& r, const json& cfg, const std::string& model_type, const std::string& name, const Seq2SeqStep* step) {
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
    Run run;
    run.step = step;
    const int tp = run.tp();
    if (step != nullptr) {
        // model.eval(): no dropout, no router jitter (SwitchTransformersTop1Router applies it in training only)
        s.drop = s.jitter = 0.0;
        r.reject_if(!head.has_head, "architectures", head.architecture + " has no LM head to generate with");
        if (!step->kv_cache.empty()) {
            throw InputError("--kv-cache " + step->kv_cache +
                             ": a quantized KV cache is modelled for the attention kernel BART and the "
                             "decoder-only LLMs run; " +
                             model_type + "'s eager attention (matmul, position bias, softmax, matmul) has none");
        }
        if (s.heads % tp != 0)
            throw InputError("--tp " + std::to_string(tp) + " must divide the " + std::to_string(s.heads) + " attention heads");
        if (s.d_ff % tp != 0) throw InputError("--tp " + std::to_string(tp) + " must divide d_ff " + std::to_string(s.d_ff));
        // one rank's share (Megatron-style): heads, the feed-forward width, the vocabulary
        s.heads /= tp, s.inner /= tp, s.d_ff /= tp;
    }
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
    // The stacks' lengths: "seq" for both in the forward graph; an inference step's encoder runs
    // the source tokens, its decoder one token per sequence attending to kv_len cached ones.
    const bool decode = step != nullptr && step->decode;
    const std::int64_t source = step == nullptr ? 0 : step->source > 0 ? step->source : 512;  // T5's n_positions: its default length
    const std::int64_t kv_len = decode ? step->context + 1 : 1;
    const json enc_len = step == nullptr ? json("seq") : json(source), dec_len = step == nullptr ? json("seq") : json(1);
    if (step == nullptr) {
        if (t5) {
            set_header(b, name,
                       sizes + ", " + dims + (s.gated ? " (gated " : " (") + s.act + "), vocab " + std::to_string(vocab) +
                           "; decoder length = encoder length (seq); eager ops as transformers 4.38; dropout as in training",
                       dtype_of(r), {{"batch", 1}, {"seq", 512}});
        } else {
            set_header(
                b, name,
                sizes + " (" + std::to_string(enc_sparse) + " and " + std::to_string(dec_sparse) + " sparse), " + dims + ", " +
                    std::to_string(s.experts) + " experts of capacity " + std::to_string(s.capacity) + ", vocab " + std::to_string(vocab) +
                    "; UNIFORM routing assumed: each expert runs min(capacity, seq / num_experts) tokens of each sequence (seq must be "
                    "a multiple of num_experts); decoder length = encoder length (seq); eager ops as transformers 4.38; dropout and "
                    "router jitter as in training",
                dtype_of(r), {{"batch", 1}, {"seq", 512}});
        }
    } else {
        if (s.experts > 0 && !decode && source % s.experts != 0) {
            throw InputError("--seq " + std::to_string(source) + ": the encoder's UNIFORM routing sends token t to expert t mod " +
                             std::to_string(s.experts) + "; give a multiple of num_experts " + std::to_string(s.experts));
        }
        run.batch = step->batch;
        set_header(b, name + " " + (decode ? "decode" : "prefill"),
                   sizes + ", " + dims + ", vocab " + std::to_string(vocab) + "; " + step_description(*step, source) +
                       (s.experts > 0 ? "; UNIFORM top-1 routing" : "") +
                       (tp > 1 ? "; rank of " + std::to_string(tp) + "-way tensor parallelism" : ""),
                   step->dtype.empty() ? dtype_of(r) : step->dtype, {{"batch", step->batch}});
    }
    if (!decode) b.input("input_ids", {"batch", enc_len}, "int64");
    if (step == nullptr) b.input("attention_mask", {"batch", 1, 1, "seq"});
    if (s.jitter > 0 && (enc_sparse > 0 || dec_sparse > 0)) b.input("router_jitter", {"batch", "seq", s.d});
    const std::string shared = b.param("shared.weight", {tp == 1 ? vocab : (vocab + tp - 1) / tp, s.d});

    // One stack: returns its output.
    auto stack = [&](bool decoder, const std::string& encoder_out) {
        const std::string st = decoder ? "decoder." : "encoder.";
        const std::int64_t layers = decoder ? dec_layers : enc_layers, sparse = decoder ? dec_step : enc_step;
        const std::string ids = decoder ? "decoder_input_ids" : "input_ids";
        const json& len = decoder ? dec_len : enc_len;
        if (decoder) {
            b.input(ids, {"batch", len}, "int64");
            if (step == nullptr) {
                b.input("decoder_attention_mask", {"batch", 1, 1, "seq"});
                b.input("cross_attention_zeros", {1, s.heads, "seq", "seq"});
            }
        }
        b.node(st + "embed_tokens", "embedding", {shared, ids});
        if (tp > 1) run.all_reduce.push_back(st + "embed_tokens");  // vocabulary-parallel
        std::string x = b.dropout(st + "dropout_in", st + "embed_tokens", s.drop);
        std::string self_bias, cross_bias;
        for (std::int64_t i = 0; i < layers; ++i) {
            const std::string p = st + "block." + std::to_string(i) + ".";
            const std::string sa = p + "layer.0.SelfAttention.";
            if (i == 0 && step == nullptr) {
                // computed by block 0, plus the mask, and reused by every block
                std::string bias = relative_bias(b, st, sa, s, "seq", "seq");
                if (decoder) bias = b.node(sa + "position_bias.causal_mask", "causal_mask", {bias});
                self_bias = b.node(sa + "position_bias", "add", {bias, decoder ? "decoder_attention_mask" : "attention_mask"});
                if (decoder) {
                    cross_bias = b.node(p + "layer.1.EncDecAttention.position_bias", "add", {"cross_attention_zeros", "attention_mask"});
                }
            } else if (i == 0) {
                // No mask: the decoder's one query is the last position (every cached key is before
                // it); the cross-attention's bias is zeros without padding.
                self_bias = relative_bias(b, st, sa, s, len, decoder ? json(kv_len) : len);
            }
            // The decoder's self-attention K and V appended to the cache; a decode step attends over the cache.
            const KvSource self_kv = step == nullptr || !decoder ? KvSource{"", len} : KvSource{"", len, true, decode ? kv_len : 0};
            const std::string n0 = t5_layernorm(b, p + "layer.0.layer_norm", x, s);
            KvSource kv0 = self_kv;
            kv0.from = n0;
            const std::string a = b.dropout(p + "layer.0.dropout", t5_attention(b, run, sa, n0, len, kv0, self_bias, s), s.drop);
            x = b.node(p + "layer.0.residual", "add", {x, a});
            std::int64_t ff = 1;
            if (decoder) {
                // cross-attention K and V: projected from the encoder output (by a prefill: and cached), or read from the cache
                const KvSource kv1 = step == nullptr ? KvSource{encoder_out, "seq"}
                                     : decode        ? KvSource{"", source, false, source}
                                                     : KvSource{encoder_out, source, true, 0};
                const std::string n1 = t5_layernorm(b, p + "layer.1.layer_norm", x, s);
                const std::string c = b.dropout(p + "layer.1.dropout",
                                                t5_attention(b, run, p + "layer.1.EncDecAttention.", n1, len, kv1, cross_bias, s), s.drop);
                x = b.node(p + "layer.1.residual", "add", {x, c});
                ff = 2;
            }
            const std::string fp = p + "layer." + std::to_string(ff) + ".";
            const std::string n = t5_layernorm(b, fp + "layer_norm", x, s);
            const std::string m =
                sparse_layer(i, sparse) ? sparse_mlp(b, r, run, fp + ff_module, n, len, s) : dense_act_dense(b, r, fp + ff_module, n, s);
            if (tp > 1) run.all_reduce.push_back(m);
            x = b.node(fp + "residual", "add", {x, b.dropout(fp + "dropout", m, s.drop)});
        }
        x = t5_layernorm(b, st + "final_layer_norm", x, s);
        return b.dropout(st + "dropout_out", x, s.drop);
    };
    std::string decoded;
    if (step != nullptr) {
        decoded = stack(true, decode ? "" : stack(false, ""));
    } else if (!with_head(b, head, stack, decoded)) {
        return b.take();
    }
    if (tied) {
        const std::string scaled = b.node("lm_head.rescale", "scale", {decoded}, {{"factor", 1.0 / std::sqrt(static_cast<double>(s.d))}});
        b.node("lm_head", "matmul", {scaled, shared}, {{"transpose_b", true}});
    } else {
        b.linear("lm_head", decoded, s.d, tp == 1 ? vocab : (vocab + tp - 1) / tp, false);
    }
    if (step != nullptr) return finish_step(b, run, "lm_head");
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
json bart_family(const ConfigReader& r, const json& cfg, const std::string& name, const Seq2SeqStep* step) {
    const Head head = read_architecture(r, cfg, "bart", {"BartForConditionalGeneration", "BartModel"}, "BartModel");
    const std::int64_t vocab = r.positive("vocab_size"), d = r.positive("d_model"), positions = r.positive("max_position_embeddings");
    const std::int64_t enc_layers = r.positive("encoder_layers"), dec_layers = r.positive("decoder_layers");
    const std::int64_t enc_heads = r.positive("encoder_attention_heads"), dec_heads = r.positive("decoder_attention_heads");
    const std::int64_t enc_ffn = r.positive("encoder_ffn_dim"), dec_ffn = r.positive("decoder_ffn_dim");
    r.require_divides("encoder_attention_heads", enc_heads, "d_model", d);
    r.require_divides("decoder_attention_heads", dec_heads, "d_model", d);
    const std::string act = r.string_or("activation_function", "gelu");
    double drop = r.probability_or("dropout", 0.1), attn_drop = r.probability_or("attention_dropout", 0.0);
    double act_drop = r.probability_or("activation_dropout", 0.0);
    const bool scale = r.bool_or("scale_embedding", false), tied = r.bool_or("tie_word_embeddings", true);
    r.reject_if(r.has("is_encoder_decoder") && !r.bool_or("is_encoder_decoder", true), "is_encoder_decoder", "an encoder-only bart model");
    const double eps = 1e-5;  // nn.LayerNorm's default: BART has no eps key

    Run run;
    run.step = step;
    const int tp = run.tp();
    const bool decode = step != nullptr && step->decode;
    const std::int64_t source = step == nullptr ? 0 : step->source > 0 ? step->source : positions;
    const std::int64_t kv_len = decode ? step->context + 1 : 1;
    const json enc_len = step == nullptr ? json("seq") : json(source), dec_len = step == nullptr ? json("seq") : json(1);
    DocBuilder b;
    const std::string sizes = "Hugging Face " + head.architecture + ": " + std::to_string(enc_layers) + " encoder and " +
                              std::to_string(dec_layers) + " decoder layers, d_model " + std::to_string(d) + ", " +
                              std::to_string(enc_heads) + " / " + std::to_string(dec_heads) + " heads, FFN " + std::to_string(enc_ffn) +
                              " / " + std::to_string(dec_ffn) + ", vocab " + std::to_string(vocab) + "; post-LN";
    if (step == nullptr) {
        set_header(b, name, sizes + "; decoder length = encoder length (seq); dropout as in training", dtype_of(r),
                   {{"batch", 1}, {"seq", positions}});
    } else {
        r.reject_if(!head.has_head, "architectures", head.architecture + " has no LM head to generate with");
        // BartLearnedPositionalEmbedding: max_position_embeddings positions (rows 2.. of the table)
        if (source > positions) {
            throw InputError(std::string(decode ? "--source " : "--seq ") + std::to_string(source) + ": a source beyond the model's " +
                             std::to_string(positions) + " positions (" + name + ")");
        }
        if (kv_len > positions) {
            throw InputError("--context " + std::to_string(step->context) + ": the new token's position " + std::to_string(step->context) +
                             " is beyond the model's " + std::to_string(positions) + " positions (" + name + ")");
        }
        for (const auto& [key, heads] :
             {std::pair<const char*, std::int64_t>{"encoder_attention_heads", enc_heads}, {"decoder_attention_heads", dec_heads}}) {
            if (heads % tp != 0)
                throw InputError("--tp " + std::to_string(tp) + " must divide the " + std::to_string(heads) + " attention heads (" + key +
                                 ")");
        }
        for (const std::int64_t ffn : {enc_ffn, dec_ffn}) {
            if (ffn % tp != 0) throw InputError("--tp " + std::to_string(tp) + " must divide the FFN width " + std::to_string(ffn));
        }
        drop = attn_drop = act_drop = 0.0;  // model.eval()
        run.batch = step->batch;
        set_header(
            b, name + " " + (decode ? "decode" : "prefill"),
            sizes + "; " + step_description(*step, source) + (tp > 1 ? "; rank of " + std::to_string(tp) + "-way tensor parallelism" : ""),
            step->dtype.empty() ? dtype_of(r) : step->dtype, {{"batch", step->batch}});
    }
    const std::int64_t vocab_rank = tp == 1 ? vocab : (vocab + tp - 1) / tp;
    if (!decode) b.input("input_ids", {"batch", enc_len}, "int64");
    b.input("decoder_input_ids", {"batch", dec_len}, "int64");
    // the rows of the positions table (offset 2); one for an inference step's decoder token
    if (!decode) b.input("position_ids", {enc_len}, "int64");
    if (step != nullptr) b.input("decoder_position_ids", {dec_len}, "int64");
    const std::string shared = b.param("model.shared.weight", {vocab_rank, d});
    // BartAttention: q, k, v, out_proj with biases (heads of dh = d / heads; one rank's under tp);
    // kv says where K and V come from (the encoder output for cross-attention).
    const auto attention_block = [&](const std::string& p, const std::string& x, const json& len, const KvSource& kv, std::int64_t heads,
                                     bool causal) {
        const std::int64_t dh = d / heads, rank_heads = heads / tp;
        const std::string q = to_heads(b, p + "query", b.linear(p + "q_proj", x, d, rank_heads * dh, true), len, rank_heads, dh);
        const auto [k, v] = keys_values(b, run, p, kv, "k_proj", "v_proj", d, rank_heads, dh, true);
        const std::string ctx = attention(b, p, q, k, v, dh, causal, attn_drop);
        const std::string o = b.linear(p + "out_proj", merge_heads(b, p + "attn", ctx, len, rank_heads * dh), rank_heads * dh, d, true);
        if (tp > 1) run.all_reduce.push_back(o);
        return o;
    };
    const auto sublayer = [&](const std::string& p, const std::string& x, const std::string& out, const std::string& norm) {
        return b.layernorm(norm, b.node(p + "residual", "add", {x, b.dropout(p + "dropout", out, drop)}), d, eps);
    };
    const auto stack = [&](bool decoder, const std::string& encoded) {
        const std::string st = decoder ? "model.decoder." : "model.encoder.";
        const std::int64_t layers = decoder ? dec_layers : enc_layers, heads = decoder ? dec_heads : enc_heads;
        const std::int64_t ffn = (decoder ? dec_ffn : enc_ffn) / tp;
        const json& len = decoder ? dec_len : enc_len;
        std::string x = b.node(st + "embed_tokens", "embedding", {shared, decoder ? "decoder_input_ids" : "input_ids"});
        if (tp > 1) run.all_reduce.push_back(x);  // vocabulary-parallel
        if (scale) x = b.node(st + "embed_scale", "scale", {x}, {{"factor", std::sqrt(static_cast<double>(d))}});
        b.node(st + "embed_positions", "embedding",
               {b.param(st + "embed_positions.weight", {positions + 2, d}),
                decoder && step != nullptr ? "decoder_position_ids" : "position_ids"});
        x = b.node(st + "embed", "add", {x, st + "embed_positions"});
        x = b.dropout(st + "dropout", b.layernorm(st + "layernorm_embedding", x, d, eps), drop);
        for (std::int64_t l = 0; l < layers; ++l) {
            const std::string p = st + "layers." + std::to_string(l) + ".";
            // An inference step's decoder: its one query is the last position (no causal mask), its
            // K and V appended to the cache, and a decode step attends over the cache.
            KvSource self_kv{x, len};
            if (step != nullptr && decoder) self_kv.write = true, self_kv.cached = decode ? kv_len : 0;
            x = sublayer(p + "self_attn.", x, attention_block(p + "self_attn.", x, len, self_kv, heads, decoder && step == nullptr),
                         p + "self_attn_layer_norm");
            if (decoder) {
                // cross-attention K and V: projected from the encoder output (by a prefill: and cached), or read from the cache
                const KvSource cross = step == nullptr ? KvSource{encoded, "seq"}
                                       : decode        ? KvSource{"", source, false, source}
                                                       : KvSource{encoded, source, true, 0};
                x = sublayer(p + "encoder_attn.", x, attention_block(p + "encoder_attn.", x, len, cross, heads, false),
                             p + "encoder_attn_layer_norm");
            }
            const std::string h = activation(b, r, "activation_function", act, p + "activation_fn", b.linear(p + "fc1", x, d, ffn, true));
            const std::string f = b.linear(p + "fc2", b.dropout(p + "activation_dropout", h, act_drop), ffn, d, true);
            if (tp > 1) run.all_reduce.push_back(f);
            x = sublayer(p + "ffn.", x, f, p + "final_layer_norm");
        }
        return x;
    };
    std::string decoded;
    if (step != nullptr) {
        decoded = stack(true, decode ? "" : stack(false, ""));
    } else if (!with_head(b, head, stack, decoded)) {
        return b.take();
    }
    b.input("final_logits_bias", {1, vocab_rank});
    const std::string lm =
        tied ? b.node("lm_head", "matmul", {decoded, shared}, {{"transpose_b", true}}) : b.linear("lm_head", decoded, d, vocab_rank, false);
    const std::string logits = b.node("lm_logits", "add", {lm, "final_logits_bias"});
    if (step != nullptr) return finish_step(b, run, logits);
    b.node("loss", "cross_entropy", {logits, "labels"});
    b.doc()["outputs"] = {"loss"};
    return b.take();
}

}  // namespace

json build_switch_transformers(const ConfigReader& r, const json& cfg, const std::string& model_type, const std::string& name) {
    return t5_family(r, cfg, model_type, name, nullptr);
}

json build_bart(const ConfigReader& r, const json& cfg, const std::string& /*model_type*/, const std::string& name) {
    return bart_family(r, cfg, name, nullptr);
}

json build_seq2seq_step(const ConfigReader& r, const json& cfg, const std::string& model_type, const std::string& name,
                        const Seq2SeqStep& step) {
    if (step.decode && step.context < 0) throw InputError("--context must be >= 0");
    if (step.tp < 1) throw InputError("--tp must be >= 1");
    if (model_type == "bart") return bart_family(r, cfg, name, &step);
    return t5_family(r, cfg, model_type, name, &step);
}

}  // namespace roofline::hf
