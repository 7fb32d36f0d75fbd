// Shared pieces of the Hugging Face model builders (model/hf_build.hpp).
#include "model/hf_build.hpp"

#include <cmath>
#include <limits>
#include <numbers>

#include "ops/error.hpp"

namespace roofline::hf {

// transformers' ACT2FN names (activations.py) -> ops as eager PyTorch runs them. The activations
// written in Python are spelled out op for op, one node per kernel eager mode launches, in the
// order Python evaluates them; the last node is named `name`:
//   gelu_new, gelu_accurate: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * pow(x, 3)))), 8 ops
//   gelu_fast:  0.5 * x * (1 + tanh(x * 0.7978845608 * (1 + 0.044715 * x * x))), 9 ops
//   quick_gelu: x * sigmoid(1.702 * x), 3 ops
//   gelu_python: x * 0.5 * (1 + erf(x / sqrt(2))), 5 ops
// gelu (nn.functional.gelu) and gelu_pytorch_tanh (its approximate="tanh" form) are one kernel.
std::string activation(DocBuilder& b, const ConfigReader& r, const std::string& key, const std::string& act, const std::string& name,
                       const std::string& x) {
    if (act == "gelu") return b.node(name, "gelu", {x}, {{"approximate", "erf"}});
    if (act == "gelu_pytorch_tanh") return b.node(name, "gelu", {x}, {{"approximate", "tanh"}});
    if (act == "gelu_new" || act == "gelu_accurate") {
        const std::string half = b.node(name + ".half", "scale", {x}, {{"factor", 0.5}});
        const std::string cube = b.node(name + ".pow", "pow", {x}, {{"exponent", 3.0}});
        const std::string c = b.node(name + ".mul_c", "scale", {cube}, {{"factor", 0.044715}});
        const std::string inner = b.node(name + ".add", "add", {x, c});
        const std::string k = b.node(name + ".mul_k", "scale", {inner}, {{"factor", std::sqrt(2.0 / std::numbers::pi)}});
        const std::string t = b.node(name + ".tanh", "tanh", {k});
        const std::string one = b.node(name + ".one_plus", "shift", {t}, {{"offset", 1.0}});
        return b.node(name, "mul", {half, one});
    }
    if (act == "gelu_fast") {
        const std::string half = b.node(name + ".half", "scale", {x}, {{"factor", 0.5}});
        const std::string xk = b.node(name + ".mul_k", "scale", {x}, {{"factor", 0.7978845608}});
        const std::string xc = b.node(name + ".mul_c", "scale", {x}, {{"factor", 0.044715}});
        const std::string sq = b.node(name + ".mul_x", "mul", {xc, x});
        const std::string inner = b.node(name + ".inner_one_plus", "shift", {sq}, {{"offset", 1.0}});
        const std::string arg = b.node(name + ".mul_inner", "mul", {xk, inner});
        const std::string t = b.node(name + ".tanh", "tanh", {arg});
        const std::string one = b.node(name + ".one_plus", "shift", {t}, {{"offset", 1.0}});
        return b.node(name, "mul", {half, one});
    }
    if (act == "quick_gelu") {
        const std::string s = b.node(name + ".sigmoid", "sigmoid", {b.node(name + ".mul_c", "scale", {x}, {{"factor", 1.702}})});
        return b.node(name, "mul", {x, s});
    }
    if (act == "gelu_python") {
        const std::string half = b.node(name + ".half", "scale", {x}, {{"factor", 0.5}});
        const std::string e = b.node(name + ".erf", "erf", {b.node(name + ".div", "scale", {x}, {{"factor", 1.0 / std::sqrt(2.0)}})});
        return b.node(name, "mul", {half, b.node(name + ".one_plus", "shift", {e}, {{"offset", 1.0}})});
    }
    if (act == "silu" || act == "swish") return b.node(name, "silu", {x});
    if (act == "relu" || act == "tanh" || act == "sigmoid") return b.node(name, act.c_str(), {x});
    r.fail(key,
           "unsupported activation '" + act +
               "' (supported: gelu, gelu_new, gelu_pytorch_tanh, gelu_fast, gelu_accurate, gelu_python, quick_gelu, silu, swish, relu, "
               "tanh, sigmoid)");
}

// HF's apply_rotary_pos_emb: x * cos + rotate_half(x) * sin, rotate_half(x) = cat(-x2, x1) with
// x1, x2 the halves of the head dimension; cos and sin [seq, head_dim] broadcast over batch and heads.
std::string rotary(DocBuilder& b, const std::string& name, const std::string& x, std::int64_t dh) {
    b.node(name + ".halves", "split", {x}, {{"axis", -1}, {"sizes", {dh / 2, dh / 2}}});
    b.node(name + ".neg", "neg", {name + ".halves:1"});
    b.node(name + ".rotate_half", "concat", {name + ".neg", name + ".halves:0"}, {{"axis", -1}});
    b.node(name + ".cos", "mul", {x, "rope.cos"});
    b.node(name + ".sin", "mul", {name + ".rotate_half", "rope.sin"});
    return b.node(name, "add", {name + ".cos", name + ".sin"});
}

// HF's repeat_kv: [batch, kv_heads, seq, dh] -> [batch, kv_heads * n_rep, seq, dh] by
// x[:, :, None].expand(...).reshape(...). Modelled as views (as a GQA-aware attention kernel
// reads K and V); the eager path's reshape copies.
std::string repeat_kv(DocBuilder& b, const std::string& name, const std::string& x, const json& seq, std::int64_t kv_heads,
                      std::int64_t n_rep, std::int64_t dh) {
    if (n_rep == 1) return x;
    b.node(name + ".unsqueeze", "reshape", {x}, {{"shape", {"batch", kv_heads, 1, seq, dh}}});
    b.node(name + ".expand", "expand", {name + ".unsqueeze"}, {{"shape", {"batch", kv_heads, n_rep, seq, dh}}});
    return b.node(name, "reshape", {name + ".expand"}, {{"shape", {"batch", kv_heads * n_rep, seq, dh}}});
}

// [batch, seq, heads * dh] -> [batch, heads, seq, dh]: view + transpose(1, 2), both views.
std::string to_heads(DocBuilder& b, const std::string& name, const std::string& x, const json& seq, std::int64_t heads, std::int64_t dh) {
    b.node(name + ".view", "reshape", {x}, {{"shape", {"batch", seq, heads, dh}}});
    return b.node(name + ".heads", "permute", {name + ".view"}, {{"perm", {0, 2, 1, 3}}});
}

// [batch, heads, seq, dh] -> [batch, seq, heads * dh]: transpose(1, 2).contiguous() copies, then a view.
std::string merge_heads(DocBuilder& b, const std::string& name, const std::string& x, const json& seq, std::int64_t width) {
    b.node(name + ".transpose", "permute", {x}, {{"perm", {0, 2, 1, 3}}, {"copy", true}});
    return b.node(name + ".merge", "reshape", {name + ".transpose"}, {{"shape", {"batch", seq, width}}});
}

// softmax(q k^T * scale [+ causal mask]) [dropout] v. Without dropout on the probabilities this is
// the composite attention op (what sdpa computes); with it, transformers' eager path spelled out
// (the composite has no dropout).
std::string attention(DocBuilder& b, const std::string& p, const std::string& q, const std::string& k, const std::string& v,
                      std::int64_t dh, bool causal, double p_drop) {
    const double scale = 1.0 / std::sqrt(static_cast<double>(dh));
    if (p_drop == 0.0) return b.node(p + "sdpa", "attention", {q, k, v}, {{"causal", causal}, {"scale", scale}});
    b.node(p + "scores", "matmul", {q, k}, {{"transpose_b", true}});
    std::string s = b.node(p + "scale", "scale", {p + "scores"}, {{"factor", scale}});
    if (causal) s = b.node(p + "causal_mask", "causal_mask", {s});
    std::string probs = b.node(p + "softmax", "softmax", {s}, {{"axis", -1}});
    probs = b.dropout(p + "attn_dropout", probs, p_drop);
    return b.node(p + "context", "matmul", {probs, v});
}

std::string gated_mlp(DocBuilder& b, const ConfigReader& r, const std::string& p, const std::string& x, std::int64_t d, std::int64_t inter,
                      const std::string& act_key, const std::string& act, bool bias, const GatedMlpNames& names) {
    const std::string gate = b.linear(p + names.gate, x, d, inter, bias);
    const std::string up = b.linear(p + names.up, x, d, inter, bias);
    const std::string gated = b.node(p + "gated", "mul", {activation(b, r, act_key, act, p + "act_fn", gate), up});
    return b.linear(p + names.down, gated, inter, d, bias);
}

// MixtralSparseMoeBlock (and Qwen2MoeSparseMoeBlock's routed experts), as transformers 4.40 runs it:
// router_logits = gate(x) (a linear d -> E without bias); softmax in float32 (the cast not modelled);
// torch.topk(k); Mixtral divides the k weights by their sum; then, per expert, the rows routed to it
// are gathered (hidden_states[None, top_x]), run through the expert's gated MLP, multiplied by their
// routing weight and index_add_-ed into the output. Which tokens an expert gets depends on the
// trained router; this models UNIFORM top-k routing: the k copies of token t (rows t*k .. t*k+k-1
// of the token-major stream of batch * seq * k rows) go to experts (t*k + j) mod E, k distinct
// experts per token (k <= E), each expert ceil or floor of batch * seq * k / E rows, for any seq.
// As ops: the stream is a broadcast view of x; expert e's gather is the strided slice of rows
// e, e + E, ... (a copy, as HF's index gather), its routing weights the same slice of the weights;
// the experts' weighted outputs are concatenated and summed over the k copies of each row
// (reduce_sum): the same rows read and adds as HF's index_add_. The routing weights are exact
// for that assignment, but the concatenation is in expert order, so the k outputs summed into an
// output row are not the ones of that row's token: the cost is that of the routed block, the
// values are not. torch.topk is modelled by its values: a slice of k of the E probabilities.
// Training-time router jitter (Mixtral's router_jitter_noise) multiplies x by the input
// router_jitter [batch, seq, d], which stands for the uniform draw.
// Expert parallelism (m.ep, degree P; ExpertParallelSplit in doc_builder.hpp): the rank holds L =
// E / P experts. Under the uniform routing above every expert takes an equal share of every rank's
// copies, so each rank sends as many copies as it receives: the dispatch all-to-all is a copy of
// the stream (the receive buffer, P blocks of the copies bound for this rank's experts), the
// rank's expert j the strided slice of rows j, j + L, ... of it (batch * seq * k * P / E rows,
// rounded: the copies of all P ranks), the combine all-to-all a copy of the experts' outputs sent
// back. The routing weights then multiply the returned rows on the token's own rank, as
// Megatron-core's alltoall dispatcher does (token_unpermutation: the combine all-to-all, then
// unpermute, which applies the probabilities): the same rows multiplied as with one rank.
// Routing other than uniform and dropless (--expert-load, --capacity-factor; m.routing's rows): as
// the GPT template (model/moe_routing.hpp routed_experts): the k copies of each token of a sequence
// as a [batch, seq x k, d] stream, expert e a contiguous block of rows[e] of them (with --ep the
// busiest rank's experts, ep blocks received), the outputs in expert order multiplied by the
// routing weights and summed over each token's k copies.
std::string top_k_experts(DocBuilder& b, const ConfigReader& r, const std::string& p, const std::string& x, std::int64_t d,
                          const TopKExperts& m) {
    const std::int64_t rows_end = std::numeric_limits<std::int64_t>::max();
    const std::string in = m.jitter ? b.node(p + "jitter", "mul", {x, "router_jitter"}) : x;
    const std::string logits = b.linear(p + "gate", in, d, m.experts, false);
    const std::string probs = b.node(p + "routing.softmax", "softmax", {logits}, {{"axis", -1}});
    std::string top = b.node(p + "routing.topk", "slice", {probs}, {{"starts", {0}}, {"ends", {m.k}}, {"axes", {-1}}});
    if (m.normalize) {
        const std::string sum = b.node(p + "routing.sum", "reduce_sum", {top}, {{"axes", {-1}}, {"keepdim", true}});
        top = b.node(p + "routing.normalize", "div", {top, sum});
    }
    const bool routed_rows = !m.routing.rows.empty();
    const std::int64_t copies = m.seq * m.k;  // with routed rows: a sequence's token copies
    const std::string weights =
        b.node(p + "routing.weights", "reshape", {top}, {{"shape", routed_rows ? json{"batch", copies, 1} : json{-1, 1}}});
    const json token_dim = m.sp ? json(m.shard) : json("seq");
    b.node(p + "dispatch.unsqueeze", "reshape", {in}, {{"shape", {"batch", token_dim, 1, d}}});
    b.node(p + "dispatch.expand", "expand", {p + "dispatch.unsqueeze"}, {{"shape", {"batch", token_dim, m.k, d}}});
    const std::int64_t ranks = m.ep ? m.ep->degree() : 1, local = m.experts / ranks;
    // The expert's parameters for the expert group's gradient reduction (with --ep).
    const auto expert_params = [&](const std::string& ep) {
        if (ranks > 1)
            for (const char* w : {m.names.gate, m.names.up, m.names.down}) m.ep->expert_param(ep + w + ".weight");
    };
    std::string combined;
    if (routed_rows) {
        RoutedExperts routed;
        routed.prefix = p + "routed.";
        routed.copies = copies;
        routed.routing = &m.routing;
        routed.busiest = m.busiest;
        routed.expert_prefix = [&](std::int64_t j) { return p + "experts." + std::to_string(j) + "."; };
        routed.expert = [&](std::int64_t, const std::string& ep, const std::string& tokens) {
            std::string out;
            if (tokens.empty()) {  // no copies routed: only its weights
                b.param(ep + m.names.gate + ".weight", {m.inter, d});
                b.param(ep + m.names.up + ".weight", {m.inter, d});
                b.param(ep + m.names.down + ".weight", {d, m.inter});
            } else {
                out = gated_mlp(b, r, ep, tokens, d, m.inter, m.act_key, m.act, false, m.names);
            }
            expert_params(ep);
            return out;
        };
        ExpertParallelSplit one(b, 1);
        const std::string stream = b.node(p + "dispatch", "reshape", {p + "dispatch.expand"}, {{"shape", {"batch", copies, d}}});
        combined = b.node(p + "combine.weighted", "mul", {routed_experts(b, m.ep ? *m.ep : one, m.experts, stream, routed), weights});
    } else {
        std::string stream = b.node(p + "dispatch", "reshape", {p + "dispatch.expand"}, {{"shape", {-1, d}}});
        if (ranks > 1) stream = m.ep->exchange(p + "dispatch.all_to_all", stream, 2);
        // Under sequence parallelism (m.sp) the copies the tensor-parallel ranks received, as
        // [batch, copies, d] (uniform routing: a rank receives as many as it sent, shard x k a
        // sequence), gathered along the copies (and scattered back below).
        if (m.sp) {
            const std::string rows3 = b.node(p + "dispatch.rows", "reshape", {stream}, {{"shape", {"batch", m.shard * m.k, d}}});
            stream = b.node(p + "dispatch.gathered", "reshape", {m.sp->column_input(p + "dispatch.gather", rows3)}, {{"shape", {-1, d}}});
        }
        json outs = json::array();
        for (std::int64_t e = 0; e < local; ++e) {
            const std::string ep = p + "experts." + std::to_string(e) + ".";
            const json rows = {{"starts", {e}}, {"ends", {rows_end}}, {"axes", {0}}, {"steps", {local}}};
            const std::string tokens = b.node(ep + "gather", "slice", {stream}, rows);
            const std::string out = gated_mlp(b, r, ep, tokens, d, m.inter, m.act_key, m.act, false, m.names);
            expert_params(ep);
            outs.push_back(ranks > 1 ? out
                                     : b.node(ep + "weighted", "mul", {out, b.node(ep + "routing_weight", "slice", {weights}, rows)}));
        }
        combined = b.node(p + "combine.concat", "concat", outs, {{"axis", 0}});
        if (m.sp) {
            const std::string rows3 = b.node(p + "combine.rows", "reshape", {combined}, {{"shape", {"batch", -1, d}}});
            combined = b.node(p + "combine.scattered", "reshape", {m.sp->reduce_scatter(p + "combine.scatter", rows3, m.shard * m.k)},
                              {{"shape", {-1, d}}});
        }
        if (ranks > 1) combined = b.node(p + "combine.weighted", "mul", {m.ep->exchange(p + "combine.all_to_all", combined, 2), weights});
    }
    b.node(p + "combine.view", "reshape", {combined}, {{"shape", {"batch", token_dim, m.k, d}}});
    return b.node(p + "combine", "reduce_sum", {p + "combine.view"}, {{"axes", {2}}, {"keepdim", false}});
}

Stage pipeline_stage(const ConfigReader& r, const Split& s, const std::string& key, std::int64_t layers) {
    if (layers % s.pp != 0) r.fail(key, "--pp " + std::to_string(s.pp) + " must divide the " + std::to_string(layers) + " layers");
    Stage st;
    st.layers = layers / s.pp;
    st.l0 = s.stage * st.layers;
    st.l1 = st.l0 + st.layers;
    st.first = s.stage == 0;
    st.last = s.stage == s.pp - 1;
    return st;
}

std::string stage_name(const std::string& name, const Split& s) {
    return s.pp == 1 ? name : name + " (stage " + std::to_string(s.stage + 1) + " of " + std::to_string(s.pp) + ")";
}

std::string stage_input(DocBuilder& b, std::int64_t shard, std::int64_t d) {
    b.input("hidden", shard > 0 ? json{"batch", shard, d} : json{"batch", "seq", d});
    return "hidden";
}

void end_stage(DocBuilder& b, const Split& s, const Stage& st, const std::string& x, const std::string& tied) {
    if (!st.last) {
        b.node("stage_loss", "reduce_mean", {x}, {{"axes", {0, 1, 2}}});
        b.doc()["outputs"] = {"stage_loss"};
    }
    if (s.pp == 1) return;
    b.doc()["pipeline"] = {{"stages", s.pp}, {"stage", s.stage}, {"layers", st.layers}};
    if (!st.first) b.doc()["pipeline"]["input"] = "hidden";
    if (!tied.empty() && (st.first || st.last)) b.doc()["pipeline"]["shared_embedding"] = st.first ? tied : "lm_head.weight";
}

json finish_decoder(DocBuilder& b, TensorParallelSplit& tps, const Split& split, const Stage& stage, const Head& head,
                    const std::function<std::string()>& head_input, const std::string& x, const std::string& tied, std::int64_t d,
                    std::int64_t vocab_rank, bool bias) {
    if (stage.last) {
        causal_lm_head(b, head, head_input(), stage.first ? tied : "", d, vocab_rank, bias);
        if (head.has_head) tps.vocab_parallel_loss("loss");
    }
    end_stage(b, split, stage, x, head.has_head ? tied : "");
    tps.write();
    return b.take();
}

std::int64_t rank_tokens(const Split& s, std::int64_t full_seq) {
    if (const std::string e = ContextParallelSplit::seq_error(full_seq, s.cp); !e.empty()) throw InputError(e);
    const std::int64_t seq = full_seq / s.cp;
    if (s.sp && s.tp > 1 && seq % s.tp != 0)
        throw InputError(
            "--sp: --tp " + std::to_string(s.tp) + " must divide " +
            (s.cp > 1 ? "a context-parallel rank's " + std::to_string(seq) + " tokens" : "the sequence length " + std::to_string(seq)));
    return seq;
}

DenseSplit dense_split(const ConfigReader& r, std::int64_t default_seq, const std::string& heads_key, std::int64_t heads,
                       std::int64_t vocab, const std::string& layers_key, std::int64_t layers) {
    DenseSplit s;
    s.split = read_split(r);
    s.tp = s.split.tp;
    s.seq = s.split.seq > 0 ? s.split.seq : default_seq;
    s.heads = tp_share(r, heads_key, heads, s.tp, "attention heads");
    s.vocab = s.tp == 1 ? vocab : rank_vocab(vocab, s.tp);
    s.sp = s.split.sp && s.tp > 1;
    s.full_seq = s.seq;
    s.seq = rank_tokens(s.split, s.full_seq);
    s.stage = pipeline_stage(r, s.split, layers_key, layers);
    return s;
}

RoutingWhere routing_flags() {
    return [](const std::string& key) {
        if (key == "capacity_factor") return std::string("--capacity-factor: ");
        if (key.rfind("expert_load/", 0) == 0) {
            // "expert_load/i": the i-th entry (a share, or with loads per layer layer i's load);
            // "expert_load/l/i": share i of layer l's load.
            const std::string rest = key.substr(12);
            const std::size_t slash = rest.find('/');
            if (slash == std::string::npos) return "--expert-load: entry " + rest + ": ";
            return "--expert-load: layer " + rest.substr(0, slash) + ", share " + rest.substr(slash + 1) + ": ";
        }
        return std::string("--expert-load: ");
    };
}

Split read_split(const ConfigReader& r) {
    Split s;
    if (!r.has(kHfSplitKey)) return s;
    const json& v = r.get(kHfSplitKey);
    if (!v.is_object()) r.fail(kHfSplitKey, "expected an object (the parallel split roofline's options ask for), got " + v.dump());
    s.tp = v.value("tp", std::int64_t{1});
    s.sp = v.value("sp", false);
    s.seq = v.value("seq", std::int64_t{0});
    s.pp = v.value("pp", std::int64_t{1});
    s.stage = v.value("stage", std::int64_t{0});
    s.ep = v.value("ep", std::int64_t{1});
    s.cp = v.value("cp", std::int64_t{1});
    if (s.tp < 1 || s.seq < 0 || s.pp < 1 || s.stage < 0 || s.stage >= s.pp || s.ep < 1 || s.cp < 1)
        r.fail(kHfSplitKey, "expected a positive tp, pp, ep and cp, a stage below pp and a non-negative seq, got " + v.dump());
    if (v.contains("expert_load")) parse_expert_load(v.at("expert_load"), s.routing, routing_flags());
    if (v.contains("capacity_factor")) s.routing.capacity_factor = parse_capacity_factor(v.at("capacity_factor"), routing_flags());
    s.routing.pad_to_capacity = v.value("pad_to_capacity", false);
    if (s.routing.pad_to_capacity && !s.routing.capacity_factor)
        throw InputError("--pad-to-capacity: padding to capacity needs a capacity: give --capacity-factor too");
    return s;
}

std::int64_t tp_share(const ConfigReader& r, const std::string& key, std::int64_t count, std::int64_t tp, const std::string& what) {
    if (count % tp != 0) r.fail(key, "--tp " + std::to_string(tp) + " must divide the " + std::to_string(count) + " " + what);
    return count / tp;
}

// The dtype the checkpoint is stored in ("torch_dtype", renamed "dtype" in transformers 4.56);
// without one, bf16 like the gpt template.
std::string dtype_of(const ConfigReader& r) {
    const std::string key = r.has("dtype") ? "dtype" : "torch_dtype";
    const std::string t = r.string_or(key, "bfloat16");
    if (t == "float32") return "f32";
    if (t == "float16") return "f16";
    if (t == "bfloat16") return "bf16";
    r.fail(key, "unsupported dtype '" + t + "' (supported: float32, float16, bfloat16)");
}

// HF's num_labels: len(id2label) when the config has it, else "num_labels", else 2
// (PretrainedConfig's default, configuration_utils.py).
std::int64_t num_labels(const ConfigReader& r, const json& cfg) {
    if (r.has("id2label")) {
        if (!cfg.at("id2label").is_object() || cfg.at("id2label").empty()) r.fail("id2label", "expected a non-empty object");
        return static_cast<std::int64_t>(cfg.at("id2label").size());
    }
    return r.positive_or("num_labels", 2);
}

// The first entry of "architectures", checked against what this loader builds for the model type;
// the first entry of `supported` (the pre-training head) when the config names none.
Head read_architecture(const ConfigReader& r, const json& cfg, const std::string& model_type, const std::vector<std::string>& supported,
                       const std::string& bare) {
    Head h{supported.front(), true};
    if (r.has("architectures")) {
        const json& a = cfg.at("architectures");
        if (!a.is_array() || a.empty() || !a[0].is_string())
            r.fail("architectures", "expected a non-empty list of class names, got " + a.dump());
        h.architecture = a[0].get<std::string>();
        bool known = false;
        std::string list;
        for (const auto& s : supported) {
            known = known || s == h.architecture;
            list += (list.empty() ? "" : ", ") + s;
        }
        if (!known)
            r.fail("architectures/0",
                   "unsupported architecture '" + h.architecture + "' for model_type '" + model_type + "' (supported: " + list + ")");
    }
    h.has_head = h.architecture != bare;
    return h;
}

void causal_lm_head(DocBuilder& b, const Head& head, const std::string& x, const std::string& tied, std::int64_t d, std::int64_t vocab,
                    bool bias) {
    if (!head.has_head) {
        b.doc()["outputs"] = {x};
        return;
    }
    b.input("labels", {"batch", "seq"}, "int64");
    if (!tied.empty())
        b.node("lm_head", "matmul", {x, tied}, {{"transpose_b", true}});
    else
        b.linear("lm_head", x, d, vocab, bias);
    b.node("loss", "cross_entropy", {"lm_head", "labels"});
    b.doc()["outputs"] = {"loss"};
}

// dims: batch 1 (one sequence or image; a config has no batch size) and, for text, seq = the
// config's own maximum context; --batch and --seq override both.
void set_header(DocBuilder& b, const std::string& name, const std::string& description, const std::string& dtype, json dims) {
    b.doc()["name"] = name;
    b.doc()["description"] = description;
    b.doc()["dims"] = std::move(dims);
    b.doc()["dtype_policy"] = {{"compute", dtype}};
}

// Rows [batch * seq, d] -> the first token of each sequence: a gather of rows b * seq (HF's
// hidden_states[:, 0]). cls_index holds those row numbers.
std::string first_token(DocBuilder& b, const std::string& name, const std::string& x, std::int64_t d) {
    b.input("cls_index", {"batch"}, "int64");
    b.node(name + ".rows", "reshape", {x}, {{"shape", {-1, d}}});
    return b.node(name, "embedding", {name + ".rows", "cls_index"});
}

}  // namespace roofline::hf
