// LLM inference phases (model/inference.hpp).
#include "model/inference.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "model/hf_build.hpp"
#include "model/hf_config.hpp"
#include "model/model_json.hpp"
#include "model/templates.hpp"
#include "ops/error.hpp"

namespace roofline {

using nlohmann::json;

std::string_view phase_name(InferencePhase p) { return p == InferencePhase::prefill ? "prefill" : "decode"; }

namespace {

// Heads of one tensor-parallel rank: query heads split evenly; KV heads split too, or replicated
// when there are fewer of them than ranks (vLLM's QKVParallelLinear keeps one KV head a rank).
std::int64_t rank_kv_heads(const DecoderArch& a, int tp) { return hf::rank_kv_heads(a.kv_heads, tp); }

// The serving engines' one-kernel activations for the configured function (vLLM's NewGELU,
// GELU, SiluAndMul, ReLU): the Python-level chains eager transformers runs are fused there.
std::string serving_activation(const hf::ConfigReader& r, const std::string& key, const std::string& act) {
    if (act == "gelu_new" || act == "gelu_pytorch_tanh" || act == "gelu_fast" || act == "gelu_accurate") return "gelu_tanh";
    if (act == "gelu" || act == "gelu_python") return "gelu";
    if (act == "silu" || act == "swish") return "silu";
    if (act == "relu") return "relu";
    r.fail(key, "unsupported activation '" + act + "' for inference phases (supported: gelu, gelu_new, gelu_pytorch_tanh, silu, relu)");
}

bool is_fp8(const std::string& t) { return t == "fp8_e4m3" || t == "fp8_e5m2"; }

// The encoder-decoder model types whose steps hf_seq2seq.cpp builds.
bool is_seq2seq_type(const std::string& t) { return t == "t5" || t == "switch_transformers" || t == "bart"; }

// A config's model name: _name_or_path, else the file's stem.
std::string config_name(const json& cfg, const std::string& origin) {
    return cfg.contains("_name_or_path") && cfg["_name_or_path"].is_string() ? cfg["_name_or_path"].get<std::string>()
                                                                             : std::filesystem::path(origin).stem().string();
}

// What a phase is rebuilt from: a decoder-only architecture, or an encoder-decoder's Hugging Face
// config (with the origin its messages name).
struct PhaseModel {
    std::optional<DecoderArch> decoder;
    json seq2seq;
    std::string origin;
};

PhaseModel hf_phase_model(const json& cfg, const std::string& origin) {
    if (cfg.is_object() && cfg.contains("model_type") && cfg["model_type"].is_string() &&
        is_seq2seq_type(cfg["model_type"].get<std::string>()))
        return {std::nullopt, cfg, origin};
    return {decoder_arch_of_hf(cfg, origin), json(), origin};
}

// MODEL as the command line names it (decoder_arch_of).
PhaseModel phase_model_of(const std::string& model) {
    const std::string not_llm =
        ": --phase, generate and serve need a decoder-only LLM (a GPT template, llama-2-7b, llama-3-8b, "
        "mistral-7b, qwen2.5-1.5b, phi-3-mini-4k, or a gpt2/llama/mistral/qwen2/phi3 config.json) or, for --phase, an "
        "encoder-decoder (t5-small, bart-large, or a t5/switch_transformers/bart config.json)";
    if (is_model_file_arg(model)) {
        if (std::filesystem::path(model).extension() == ".onnx") throw InputError(model + not_llm);
        const json doc = read_json_file(model);
        if (is_hf_config(doc)) return hf_phase_model(doc, model);
        if (doc.is_object() && doc.contains("template") && doc["template"].is_string()) {
            const std::string name = doc["template"].get<std::string>();
            const json config = doc.contains("config") ? doc["config"] : json::object();
            if (!config.is_object()) throw InputError(model + ": /config: expected an object");
            if (auto a = gpt_template_arch(name, config, model)) return {*a, json(), model};
            if (is_hf_preset(name)) return hf_phase_model(hf_preset_config(name, config), model);
        }
        throw InputError(model + not_llm + "; a roofline-model/1 graph has no architecture to rebuild");
    }
    if (auto a = gpt_template_arch(model, json::object(), "template '" + model + "'")) return {*a, json(), model};
    if (is_hf_preset(model)) return hf_phase_model(hf_preset_config(model, json::object()), "template '" + model + "'");
    if (is_template_name(model)) throw InputError("template '" + model + "'" + not_llm);
    throw InputError("MODEL '" + model + "' is neither a model file nor a built-in template (templates: " + template_choices() + ")");
}

}  // namespace

void check_quantization(const Quantization& q) {
    const auto one_of = [](const std::string& flag, const std::string& v, std::initializer_list<const char*> allowed) {
        if (v.empty()) return;
        std::string list;
        for (const char* a : allowed) {
            if (v == a) return;
            list += (list.empty() ? "" : ", ") + std::string(a);
        }
        throw InputError(flag + ": expected one of " + list + ", got '" + v + "'");
    };
    one_of("--weights", q.weights, {"int8", "int4", "fp8_e4m3", "fp8_e5m2"});
    one_of("--activations", q.activations, {"int8", "fp8_e4m3", "fp8_e5m2"});
    one_of("--kv-cache", q.kv_cache, {"int8", "fp8_e4m3", "fp8_e5m2"});
    if (q.group_size < 0) throw InputError("--group-size must be >= 0 (0: one scale per output channel)");
    if (!q.activations.empty() && q.activations != q.weights) {
        throw InputError("--activations " + q.activations + " needs --weights " + q.activations +
                         (q.weights == "int4" ? ": int4 weights with 8-bit activations (W4A8) are not modelled"
                                              : ": W8A8 GEMMs take both operands in one 8-bit type"));
    }
}

void apply_inference_dtype(DecoderArch& a, Quantization& q, std::optional<DType> dtype) {
    if (!dtype) return;
    const std::string name(dtype_name(*dtype));
    if (!is_fp8(name)) {
        a.dtype = name;
        return;
    }
    if (!q.weights.empty() || !q.activations.empty()) {
        throw InputError("--dtype " + name + " is the fp8 W8A8 scheme (--weights " + name + " --activations " + name +
                         "); give --dtype or --weights/--activations, not both");
    }
    q.weights = q.activations = name;
}

std::string Quantization::describe() const {
    std::string s;
    if (!weights.empty()) {
        s = "weights " + weights;
        if (!activations.empty())
            s += " with " + activations + " activations (W8A8)";
        else if (!is_fp8(weights) && group_size > 0)
            s += " (weight-only, groups of " + std::to_string(group_size) + ")";
        else
            s += " (weight-only, per-channel scales)";
    }
    if (!kv_cache.empty()) s += (s.empty() ? "" : ", ") + std::string("KV cache ") + kv_cache;
    return s;
}

DType kv_cache_dtype(const DecoderArch& a, const Quantization& q) {
    const auto d = parse_dtype(q.kv_cache.empty() ? a.dtype : q.kv_cache);
    if (!d) throw InputError(a.name + ": unknown dtype '" + (q.kv_cache.empty() ? a.dtype : q.kv_cache) + "'");
    return *d;
}

double kv_cache_bytes_per_token(const DecoderArch& a, DType kv, int tp) {
    return 2.0 * static_cast<double>(a.layers * rank_kv_heads(a, tp) * a.head_dim) * static_cast<double>(dtype_bytes(kv));
}

std::int64_t attended_tokens(const DecoderArch& a, std::int64_t context) {
    const std::int64_t n = context + 1;
    return a.sliding_window > 0 ? std::min(n, a.sliding_window) : n;
}

DecoderArch decoder_arch_of_hf(const json& cfg, const std::string& origin) {
    if (!cfg.is_object()) throw InputError(origin + ": expected a JSON object");
    hf::ConfigReader r(cfg, origin, "");
    const std::string type = r.string("model_type");
    r.set_context(type);
    DecoderArch a;
    a.name = config_name(cfg, origin);
    a.dtype = hf::dtype_of(r);
    if (type == "gpt2") {
        a.vocab = r.positive("vocab_size"), a.d = r.positive("n_embd"), a.layers = r.positive("n_layer");
        a.heads = a.kv_heads = r.positive("n_head");
        if (a.d % a.heads != 0) r.fail("n_head", "n_head " + std::to_string(a.heads) + " does not divide n_embd " + std::to_string(a.d));
        a.head_dim = a.d / a.heads;
        a.ffn = r.positive_or("n_inner", 4 * a.d);
        a.max_positions = r.positive("n_positions");
        a.act = serving_activation(r, "activation_function", r.string_or("activation_function", "gelu_new"));
        a.eps = r.positive_number_or("layer_norm_epsilon", 1e-5);
        a.qkv_bias = a.out_bias = a.mlp_bias = true;
        a.tied = r.bool_or("tie_word_embeddings", true);
        return a;
    }
    // qwen2: q/k/v biases, o_proj without; phi3: fused qkv_proj and gate_up_proj (the same
    // weights), no biases, rms_norm_eps 1e-5, a sliding window (hf_decoders.cpp).
    if (type == "llama" || type == "mistral" || type == "qwen2" || type == "phi3") {
        a.vocab = r.positive("vocab_size"), a.d = r.positive("hidden_size"), a.layers = r.positive("num_hidden_layers");
        a.heads = r.positive("num_attention_heads");
        a.kv_heads = r.positive_or("num_key_value_heads", a.heads);
        if (a.heads % a.kv_heads != 0) r.fail("num_key_value_heads", "num_key_value_heads must divide num_attention_heads");
        if (!r.has("head_dim") && a.d % a.heads != 0) r.fail("num_attention_heads", "num_attention_heads does not divide hidden_size");
        a.head_dim = r.positive_or("head_dim", a.d / a.heads);
        if (a.head_dim % 2 != 0) r.fail("head_dim", "rotary embeddings need an even head dimension");
        a.ffn = r.positive("intermediate_size");
        a.max_positions = r.positive("max_position_embeddings");
        a.sliding_window = type == "mistral" || type == "phi3" ? r.non_negative_or("sliding_window", 0) : 0;
        a.rope = a.gated_mlp = a.rmsnorm = true;
        a.act = serving_activation(r, "hidden_act", r.string_or("hidden_act", "silu"));
        a.eps = r.positive_number_or("rms_norm_eps", type == "phi3" ? 1e-5 : 1e-6);
        a.qkv_bias = a.out_bias = type != "phi3" && r.bool_or("attention_bias", false);
        if (type == "qwen2") a.qkv_bias = true, a.out_bias = false;
        a.mlp_bias = type != "phi3" && r.bool_or("mlp_bias", false);
        a.tied = r.bool_or("tie_word_embeddings", false);
        return a;
    }
    if (is_seq2seq_type(type)) {
        r.fail("model_type", "generate and serve simulate decoder-only LLMs: gpt2, llama, mistral, qwen2, phi3 (got the encoder-decoder '" +
                                 type + "', whose prefill and decode steps analyze --phase builds)");
    }
    r.fail("model_type",
           "inference phases support decoder-only LLMs (gpt2, llama, mistral, qwen2, phi3) and encoder-decoders (t5, "
           "switch_transformers, bart); got '" +
               type + "'");
}

DecoderArch decoder_arch_of(const std::string& model) {
    PhaseModel m = phase_model_of(model);
    if (m.decoder) return *m.decoder;
    // the seq2seq config: decoder_arch_of_hf says what it is and where its steps are built
    return decoder_arch_of_hf(m.seq2seq, m.origin);
}

json build_seq2seq_phase_doc(const json& cfg, const std::string& origin, const PhaseOptions& p, std::optional<DType> dtype) {
    if (!cfg.is_object()) throw InputError(origin + ": expected a JSON object");
    hf::ConfigReader r(cfg, origin, "");
    const std::string type = r.string("model_type");
    r.set_context(type);
    check_quantization(p.quant);
    if (!p.quant.weights.empty() || !p.quant.activations.empty()) {
        throw InputError(
            "--weights and --activations quantize a decoder-only LLM's linear layers (vLLM's schemes); not modelled for the "
            "encoder-decoder '" +
            type + "'");
    }
    hf::Seq2SeqStep s;
    s.decode = p.phase == InferencePhase::decode;
    s.batch = p.batch.value_or(1);
    if (s.decode) {
        // No default: the source length is the request's, and nothing in the config sizes it.
        if (p.source < 0) {
            throw InputError("--phase decode of the encoder-decoder '" + type +
                             "' needs --source N (the encoder tokens per sequence whose cross-attention K and V are cached)");
        }
        if (p.source == 0) throw InputError("--source must be positive (encoder tokens per sequence)");
        s.source = p.source, s.context = p.context;
    } else {
        if (p.source >= 0) throw InputError("--source is a decode step's cached encoder length; a prefill encodes --seq source tokens");
        s.source = p.tokens;
    }
    s.tp = p.tp;
    s.kv_cache = p.quant.kv_cache;
    if (dtype) {
        const std::string name(dtype_name(*dtype));
        if (is_fp8(name)) {
            throw InputError("--dtype " + name +
                             " is the fp8 W8A8 scheme, modelled for decoder-only LLMs; give a 16- or 32-bit dtype for the "
                             "encoder-decoder '" +
                             type + "'");
        }
        s.dtype = name;
    }
    return hf::build_seq2seq_step(r, cfg, type, config_name(cfg, origin), s);
}

json build_phase_doc(const DecoderArch& a, const PhaseOptions& p) {
    const bool decode = p.phase == InferencePhase::decode;
    const std::int64_t batch = p.batch.value_or(a.batch);
    const std::int64_t n = decode ? 1 : (p.tokens > 0 ? p.tokens : a.max_positions);  // new tokens per sequence
    const std::int64_t t = p.tp;
    if (decode && p.context < 0) throw InputError("--context must be >= 0");
    if (!decode && n > a.max_positions) {
        throw InputError("--seq " + std::to_string(n) + ": a prompt beyond the model's " + std::to_string(a.max_positions) +
                         " positions (" + a.name + ")");
    }
    if (decode && p.context + 1 > a.max_positions) {
        throw InputError("--context " + std::to_string(p.context) + ": the new token's position " + std::to_string(p.context) +
                         " is beyond the model's " + std::to_string(a.max_positions) + " positions (" + a.name + ")");
    }
    if (a.heads % t != 0)
        throw InputError("--tp " + std::to_string(t) + " must divide the " + std::to_string(a.heads) + " attention heads");
    if (a.ffn % t != 0) throw InputError("--tp " + std::to_string(t) + " must divide the MLP width " + std::to_string(a.ffn));
    if (a.kv_heads > t && a.kv_heads % t != 0) {
        throw InputError("--tp " + std::to_string(t) + " must divide the " + std::to_string(a.kv_heads) + " key/value heads");
    }
    const std::int64_t d = a.d, dh = a.head_dim, hq = a.heads / t, hkv = rank_kv_heads(a, t), rep = hq / hkv;
    const std::int64_t ffn = a.ffn / t, vocab = hf::rank_vocab(a.vocab, t);
    const std::int64_t kv_len = decode ? attended_tokens(a, p.context) : n;

    DocBuilder b(a.name + " " + std::string(phase_name(p.phase)));
    std::string what = decode ? "decode: 1 new token per sequence attending to " + std::to_string(kv_len) + " cached tokens" +
                                    (kv_len < p.context + 1 ? " (sliding window)" : " (" + std::to_string(p.context) + " + itself)")
                              : "prefill: " + std::to_string(n) + " prompt tokens per sequence";
    what += "; KV cache written per new token and read in place; logits of the last token";
    if (a.sliding_window > 0 && !decode && n > a.sliding_window) what += "; prefill attends causally over all tokens (window not applied)";
    if (t > 1) what += "; rank of " + std::to_string(t) + "-way tensor parallelism";
    if (p.quant.any()) what += "; " + p.quant.describe();
    b.doc()["description"] = what;
    b.doc()["dims"] = {{"batch", batch}};
    b.doc()["dtype_policy"] = {{"compute", a.dtype}};
    b.input("input_ids", {"batch", n}, "int64");
    const std::string embed = b.param("model.embed_tokens.weight", {vocab, d});
    std::string x = b.node("model.embed_tokens", "embedding", {embed, "input_ids"});
    json all_reduce = json::array();
    if (t > 1) all_reduce.push_back("model.embed_tokens");  // vocabulary-parallel embedding
    if (a.rope) {
        b.input("rope.cos", {n, dh});
        b.input("rope.sin", {n, dh});
    } else {
        b.input("position_ids", {n}, "int64");
        b.node("model.embed_positions", "embedding", {b.param("model.embed_positions.weight", {a.max_positions, d}), "position_ids"});
        x = b.node("model.embed", "add", {x, "model.embed_positions"});
    }
    auto norm = [&](const std::string& name, const std::string& in) {
        return a.rmsnorm ? b.rmsnorm(name, in, d, a.eps) : b.layernorm(name, in, d, a.eps);
    };
    // The activation as one kernel (gelu_tanh: gelu with the tanh approximation).
    auto activation = [&](const std::string& name, const std::string& in) {
        if (a.act == "gelu_tanh") return b.node(name, "gelu", {in}, {{"approximate", "tanh"}});
        return b.node(name, a.act.c_str(), {in});
    };
    // The decoder layers' linear layers under p.quant (the Quantization comment in the header).
    const Quantization& qz = p.quant;
    check_quantization(qz);
    auto qlinear = [&](const std::string& name, const std::string& in, std::int64_t fan_in, std::int64_t fan_out, bool bias) {
        if (qz.weights.empty()) return b.linear(name, in, fan_in, fan_out, bias);
        const bool int4 = qz.weights == "int4", fp8 = is_fp8(qz.weights);
        const std::int64_t group = fp8 || !qz.activations.empty() ? 0 : qz.group_size;
        if (group > 0 && fan_in % group != 0) {
            throw InputError("--group-size " + std::to_string(group) + " does not divide " + name + "'s " + std::to_string(fan_in) +
                             " input features");
        }
        json attrs = {{"group_size", group}};
        if (int4) attrs["weight_bits"] = 4;
        std::string operand = in;
        if (!qz.activations.empty()) {
            operand = b.node(name + ".quant", "cast", {in}, {{"dtype", qz.activations}});
            attrs["out_dtype"] = a.dtype;
        }
        json ins = {operand, b.param(name + ".weight", {fan_out, int4 ? fan_in / 2 : fan_in}, int4 ? "int8" : qz.weights.c_str())};
        if (bias) ins.push_back(b.param(name + ".bias", {fan_out}));
        return b.node(name, "linear", std::move(ins), std::move(attrs));
    };
    if (!qz.kv_cache.empty()) (void)kv_cache_dtype(a, qz);
    json outputs = json::array();
    const double scale = 1.0 / std::sqrt(static_cast<double>(dh));
    for (std::int64_t l = 0; l < a.layers; ++l) {
        const std::string pl = "model.layers." + std::to_string(l) + ".";
        const std::string at = pl + "self_attn.";
        const std::string qkv = qlinear(at + "qkv_proj", norm(pl + "input_layernorm", x), d, (hq + 2 * hkv) * dh, a.qkv_bias);
        b.node(at + "split", "split", {qkv}, {{"axis", -1}, {"sizes", {hq * dh, hkv * dh, hkv * dh}}});
        std::string q = hf::to_heads(b, at + "q", at + "split:0", n, hq, dh);
        std::string k = hf::to_heads(b, at + "k", at + "split:1", n, hkv, dh);
        const std::string v = hf::to_heads(b, at + "v", at + "split:2", n, hkv, dh);
        if (a.rope) {
            q = hf::rotary(b, at + "q_rope", q, dh);
            k = hf::rotary(b, at + "k_rope", k, dh);
        }
        // reshape_and_cache: the new tokens' K and V copied into the cache's blocks (quantized on
        // the way for a quantized cache: one kernel, read 16-bit, write 8-bit).
        for (const auto& [kv, src] : {std::pair<std::string, std::string>{"k", k}, {"v", v}}) {
            outputs.push_back(qz.kv_cache.empty()
                                  ? b.node(at + kv + "_cache_write", "permute", {src}, {{"perm", {0, 1, 2, 3}}, {"copy", true}})
                                  : b.node(at + kv + "_cache_write", "cast", {src}, {{"dtype", qz.kv_cache}}));
        }
        std::string ctx;
        if (decode) {
            // The cache (already holding the new token) read in place; the rep query heads that
            // share a KV head are the rows of one GEMM against it.
            const char* cache_dtype = qz.kv_cache.empty() ? nullptr : qz.kv_cache.c_str();
            b.input(at + "k_cache", {"batch", hkv, kv_len, dh}, cache_dtype);
            b.input(at + "v_cache", {"batch", hkv, kv_len, dh}, cache_dtype);
            b.node(at + "q_groups", "reshape", {q}, {{"shape", {"batch", hkv, rep, dh}}});
            b.node(at + "attn", "attention", {at + "q_groups", at + "k_cache", at + "v_cache"}, {{"causal", false}, {"scale", scale}});
            ctx = b.node(at + "attn.heads", "reshape", {at + "attn"}, {{"shape", {"batch", hq, 1, dh}}});
        } else {
            const std::string kk = hf::repeat_kv(b, at + "k_repeat", k, n, hkv, rep, dh);
            const std::string vv = hf::repeat_kv(b, at + "v_repeat", v, n, hkv, rep, dh);
            ctx = b.node(at + "attn", "attention", {q, kk, vv}, {{"causal", true}, {"scale", scale}});
        }
        // The attention kernels write their output token-major ([tokens, heads x dh]): no copy.
        b.node(at + "merge", "permute", {ctx}, {{"perm", {0, 2, 1, 3}}});
        b.node(at + "merged", "reshape", {at + "merge"}, {{"shape", {"batch", n, hq * dh}}});
        const std::string o = qlinear(at + "o_proj", at + "merged", hq * dh, d, a.out_bias);
        if (t > 1) all_reduce.push_back(o);
        x = b.node(pl + "attn_residual", "add", {x, o});
        const std::string m = norm(pl + "post_attention_layernorm", x);
        std::string h;
        if (a.gated_mlp) {
            const std::string gu = qlinear(pl + "mlp.gate_up_proj", m, d, 2 * ffn, a.mlp_bias);
            b.node(pl + "mlp.split", "split", {gu}, {{"axis", -1}, {"sizes", {ffn, ffn}}});
            h = b.node(pl + "mlp.gated", "mul", {activation(pl + "mlp.act", pl + "mlp.split:0"), pl + "mlp.split:1"});
        } else {
            h = activation(pl + "mlp.act", qlinear(pl + "mlp.up_proj", m, d, ffn, a.mlp_bias));
        }
        const std::string dn = qlinear(pl + "mlp.down_proj", h, ffn, d, a.mlp_bias);
        if (t > 1) all_reduce.push_back(dn);
        x = b.node(pl + "mlp_residual", "add", {x, dn});
    }
    x = norm("model.norm", x);
    if (n > 1) x = b.node("model.last_token", "slice", {x}, {{"starts", {n - 1}}, {"ends", {n}}, {"axes", {1}}});
    if (a.tied)
        b.node("lm_head", "matmul", {x, embed}, {{"transpose_b", true}});
    else
        b.linear("lm_head", x, d, vocab, false);
    outputs.insert(outputs.begin(), "lm_head");
    b.doc()["outputs"] = outputs;
    if (t > 1) b.doc()["tensor_parallel"] = {{"degree", t}, {"all_reduce", all_reduce}};
    return b.take();
}

Graph build_phase_graph(const DecoderArch& a, const PhaseOptions& p) {
    ModelOverrides ov;
    ov.eval = true;
    ov.tp = p.tp;
    return load_model(build_phase_doc(a, p), a.name + " (" + std::string(phase_name(p.phase)) + ")", ov);
}

Graph load_phase_model(const std::string& model, const ModelOverrides& ov) {
    PhaseOptions p = *ov.phase;
    if (ov.batch) p.batch = *ov.batch;
    if (ov.seq) p.tokens = *ov.seq;
    p.tp = ov.tp;
    const PhaseModel m = phase_model_of(model);
    ModelOverrides rest = ov;
    rest.phase.reset();
    rest.batch.reset();
    rest.seq.reset();
    rest.dtype.reset();
    rest.eval = true;
    const std::string origin = model + " (" + std::string(phase_name(p.phase)) + ")";
    if (!m.decoder) return load_model(build_seq2seq_phase_doc(m.seq2seq, m.origin, p, ov.dtype), origin, rest);
    if (p.source >= 0) {
        throw InputError("--source is the cached encoder length of an encoder-decoder's decode step; " + model + " is a decoder-only LLM");
    }
    DecoderArch a = *m.decoder;
    apply_inference_dtype(a, p.quant, ov.dtype);
    return load_model(build_phase_doc(a, p), origin, rest);
}

}  // namespace roofline
