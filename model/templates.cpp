#include "model/templates.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "model/doc_builder.hpp"
#include "model/hf_config.hpp"
#include "model/moe_routing.hpp"
#include "ops/error.hpp"
#include "ops/text.hpp"

namespace roofline {
namespace {

using nlohmann::json;

// GPT presets. GPT-2: Radford et al. 2019, "Language Models are Unsupervised Multitask Learners",
// Table 2 (layers, d_model), with the released configs' n_head, n_ctx 1024, vocab 50257 and
// dropout 0.1 (resid/embd/attn_pdrop). GPT-3 175B: Brown et al. 2020, "Language Models are
// Few-Shot Learners", Table 2.1 (96 layers, d_model 12288, 96 heads, n_ctx 2048), same BPE
// vocabulary; the paper does not state dropout, so GPT-2's 0.1 is kept.
struct GptConfig {
    std::int64_t vocab = 50257;
    std::int64_t n_ctx = 1024;
    std::int64_t d_model = 768;
    std::int64_t n_layer = 12;
    std::int64_t n_head = 12;
    std::int64_t d_ff = 0;  // 0: 4 * d_model
    std::int64_t batch = 8;
    std::int64_t seq = 0;  // 0: n_ctx
    double dropout = 0.1;
    bool tied_embeddings = true;
    std::string dtype = "bf16";
    std::int64_t tp = 1;       // tensor-parallel ranks: the document is one rank's share
    bool sp = false;           // sequence parallelism with tp: norms, dropout, residuals sharded by sequence
    std::int64_t cp = 1;       // context-parallel ranks: the document holds seq / cp tokens of each sequence
    std::int64_t experts = 0;  // mixture-of-experts MLPs of this many experts (0: dense)
    std::int64_t top_k = 2;    // experts a token is routed to
    std::int64_t ep = 1;       // expert-parallel ranks: the document holds experts / ep of them
    // Routing (model/moe_routing.hpp): "expert_load" in the config (an array of numbers, one per
    // expert, or "uniform", or "zipf:S": expert i gets a share proportional to 1 / (i + 1)^S),
    // "capacity_factor" and "pad_to_capacity".
    ExpertRouting routing;
    std::int64_t pp = 1;  // pipeline stages: the document is stage `stage` (its layers only)
    std::int64_t stage = 0;
    std::int64_t stage_layers = 0;  // a probe: build this many of the stage's layers (0: n_layer / pp)
};

const std::map<std::string, GptConfig>& gpt_presets() {
    static const std::map<std::string, GptConfig> presets = [] {
        std::map<std::string, GptConfig> p;
        p["gpt2-small"] = GptConfig{};
        GptConfig m;
        m.d_model = 1024, m.n_layer = 24, m.n_head = 16;
        p["gpt2-medium"] = m;
        GptConfig l;
        l.d_model = 1280, l.n_layer = 36, l.n_head = 20;
        p["gpt2-large"] = l;
        GptConfig xl;
        xl.d_model = 1600, xl.n_layer = 48, xl.n_head = 25;
        p["gpt2-xl"] = xl;
        GptConfig g3;
        g3.d_model = 12288, g3.n_layer = 96, g3.n_head = 96, g3.n_ctx = 2048, g3.batch = 1;
        p["gpt3-175b"] = g3;
        return p;
    }();
    return presets;
}

[[noreturn]] void bad_config(const std::string& origin, const std::string& key, const std::string& msg) {
    throw InputError(origin + ": /config/" + key + ": " + msg);
}

std::int64_t positive_int(const json& v, const std::string& origin, const std::string& key) {
    if (!v.is_number_integer() || v.get<std::int64_t>() <= 0) bad_config(origin, key, "expected a positive integer, got " + v.dump());
    return v.get<std::int64_t>();
}

// Where a routing key's bad value is, in the config.
RoutingWhere config_key(const std::string& origin) {
    return [origin](const std::string& key) { return origin + ": /config/" + key + ": "; };
}

GptConfig gpt_config(const std::string& preset, const json& cfg, const std::string& origin) {
    std::string base = preset;
    if (cfg.contains("preset")) {
        if (!cfg["preset"].is_string()) bad_config(origin, "preset", "expected a preset name");
        base = cfg["preset"].get<std::string>();
    }
    auto it = gpt_presets().find(base);
    if (it == gpt_presets().end()) bad_config(origin, "preset", "unknown preset '" + base + "'");
    GptConfig c = it->second;
    for (const auto& [k, v] : cfg.items()) {
        if (k == "preset") continue;
        if (k == "vocab")
            c.vocab = positive_int(v, origin, k);
        else if (k == "n_ctx")
            c.n_ctx = positive_int(v, origin, k);
        else if (k == "d_model")
            c.d_model = positive_int(v, origin, k);
        else if (k == "n_layer") {
            c.n_layer = positive_int(v, origin, k);
            // A bound checked before anything is built: the deepest published models have ~200
            // layers, and 10^5 would take minutes and gigabytes before failing.
            if (c.n_layer > kMaxLayers) bad_config(origin, k, "at most " + std::to_string(kMaxLayers) + " layers, got " + v.dump());
        } else if (k == "n_head")
            c.n_head = positive_int(v, origin, k);
        else if (k == "d_ff")
            c.d_ff = positive_int(v, origin, k);
        else if (k == "batch")
            c.batch = positive_int(v, origin, k);
        else if (k == "seq")
            c.seq = positive_int(v, origin, k);
        else if (k == "dropout") {
            if (!v.is_number() || v.get<double>() < 0 || v.get<double>() >= 1) bad_config(origin, k, "expected a number in [0, 1)");
            c.dropout = v.get<double>();
        } else if (k == "tied_embeddings") {
            if (!v.is_boolean()) bad_config(origin, k, "expected true or false");
            c.tied_embeddings = v.get<bool>();
        } else if (k == "dtype") {
            if (!v.is_string()) bad_config(origin, k, "expected a dtype name");
            c.dtype = v.get<std::string>();
        } else if (k == "tp") {
            c.tp = positive_int(v, origin, k);
        } else if (k == "sp") {
            if (!v.is_boolean()) bad_config(origin, k, "expected true or false");
            c.sp = v.get<bool>();
        } else if (k == "cp") {
            c.cp = positive_int(v, origin, k);
        } else if (k == "experts") {
            if (!v.is_number_integer() || v.get<std::int64_t>() < 0) bad_config(origin, k, "expected a number of experts >= 0 (0: dense)");
            c.experts = v.get<std::int64_t>();
        } else if (k == "top_k") {
            c.top_k = positive_int(v, origin, k);
        } else if (k == "ep") {
            c.ep = positive_int(v, origin, k);
        } else if (k == "expert_load") {
            parse_expert_load(v, c.routing, config_key(origin));
        } else if (k == "capacity_factor") {
            c.routing.capacity_factor = parse_capacity_factor(v, config_key(origin));
        } else if (k == "pad_to_capacity") {
            if (!v.is_boolean()) bad_config(origin, k, "expected true or false");
            c.routing.pad_to_capacity = v.get<bool>();
        } else if (k == "pp") {
            c.pp = positive_int(v, origin, k);
        } else if (k == "stage_layers") {
            c.stage_layers = positive_int(v, origin, k);
        } else if (k == "stage") {
            if (!v.is_number_integer() || v.get<std::int64_t>() < 0) bad_config(origin, k, "expected a stage index >= 0");
            c.stage = v.get<std::int64_t>();
        } else {
            bad_config(
                origin, k,
                "unknown key '" + k +
                    "' (expected: preset, vocab, n_ctx, d_model, n_layer, n_head, d_ff, batch, seq, dropout, tied_embeddings, "
                    "dtype, tp, sp, cp, experts, top_k, ep, expert_load, capacity_factor, pad_to_capacity, pp, stage, stage_layers)");
        }
    }
    if (c.d_model % c.n_head != 0) bad_config(origin, "n_head", "n_head must divide d_model");
    if (c.d_ff == 0) c.d_ff = 4 * c.d_model;
    if (c.seq == 0) c.seq = c.n_ctx;
    if (c.seq > c.n_ctx) bad_config(origin, "seq", "seq " + std::to_string(c.seq) + " exceeds n_ctx " + std::to_string(c.n_ctx));
    if (c.n_head % c.tp != 0)
        bad_config(origin, "tp", "--tp " + std::to_string(c.tp) + " must divide the " + std::to_string(c.n_head) + " attention heads");
    if (c.d_ff % c.tp != 0) bad_config(origin, "tp", "--tp " + std::to_string(c.tp) + " must divide d_ff " + std::to_string(c.d_ff));
    if (c.sp && c.cp == 1 && c.seq % c.tp != 0)
        bad_config(origin, "sp", "--sp: --tp " + std::to_string(c.tp) + " must divide the sequence length " + std::to_string(c.seq));
    // Megatron-core splits each sequence into 2 x cp chunks (a rank takes chunks i and 2 cp - 1 - i).
    if (const std::string e = ContextParallelSplit::seq_error(c.seq, c.cp); !e.empty()) bad_config(origin, "cp", e);
    if (c.sp && c.cp > 1 && (c.seq / c.cp) % c.tp != 0)
        bad_config(
            origin, "sp",
            "--sp: --tp " + std::to_string(c.tp) + " must divide a context-parallel rank's " + std::to_string(c.seq / c.cp) + " tokens");
    if (!c.routing.text.empty() && c.experts == 0)
        bad_config(origin, "expert_load", "the model has no experts (config \"experts\") to route to");
    if (c.routing.capacity_factor && c.experts == 0)
        bad_config(origin, "capacity_factor", "the model has no experts (config \"experts\") to give a capacity");
    if (c.routing.pad_to_capacity && !c.routing.capacity_factor)
        bad_config(origin, "pad_to_capacity", "padding to capacity needs a capacity: give \"capacity_factor\" too");
    if (c.ep > 1 && c.experts == 0)
        bad_config(origin, "ep", "--ep " + std::to_string(c.ep) + ": the model has no experts (config \"experts\")");
    if (c.experts > 0) {
        if (c.top_k > c.experts)
            bad_config(origin, "top_k", "top_k " + std::to_string(c.top_k) + " exceeds the " + std::to_string(c.experts) + " experts");
        if (c.experts % c.ep != 0)
            bad_config(origin, "ep", "--ep " + std::to_string(c.ep) + " must divide the " + std::to_string(c.experts) + " experts");
        resolve_expert_load(c.routing, c.experts, config_key(origin));
        check_expert_layers(c.routing, c.n_layer, config_key(origin));
        // Layers routed differently are not identical: a stage is built whole, not composed from
        // probes of one and two layers (sim/parallel.hpp compose_layers).
        if (!c.routing.per_layer.empty()) c.stage_layers = 0;
        if (c.routing.uniform() && !c.routing.capacity_factor && (c.seq / c.cp) * c.top_k % c.experts != 0)
            bad_config(origin, "experts",
                       std::to_string(c.experts) + " experts: a rank's " + std::to_string(c.seq / c.cp) + " tokens x top_k " +
                           std::to_string(c.top_k) +
                           " must split evenly over the experts (uniform routing; give \"expert_load\" "
                           "for any other split, or \"capacity_factor\")");
        if (c.sp && c.tp > 1 && c.ep > 1) {
            if (!c.routing.uniform() || c.routing.capacity_factor)
                bad_config(origin, "sp",
                           "--sp with expert parallelism (--ep) is modelled for uniform dropless routing only (no expert_load or "
                           "capacity_factor)");
            const std::int64_t shard = c.seq / c.cp / c.tp;
            if (shard * c.top_k % c.experts != 0)
                bad_config(origin, "experts",
                           std::to_string(c.experts) + " experts: with --sp and --ep a rank dispatches its " + std::to_string(shard) +
                               " sequence-parallel tokens x top_k " + std::to_string(c.top_k) +
                               ", which must split evenly over the experts (uniform routing)");
        }
    }
    if (c.n_layer % c.pp != 0)
        bad_config(origin, "pp", "--pp " + std::to_string(c.pp) + " must divide the " + std::to_string(c.n_layer) + " layers");
    if (c.stage >= c.pp)
        bad_config(origin, "stage", "stage " + std::to_string(c.stage) + " of " + std::to_string(c.pp) + " pipeline stages");
    return c;
}

// With c.tp > 1 the document is one rank of Megatron-LM's tensor-parallel split (Shoeybi et al.
// 2019, section 3): the QKV and MLP-up projections split by output columns (heads / tp per rank),
// the attention-out and MLP-down projections by input rows, each followed by an all-reduce of its
// [batch, seq, d_model] output; the embedding and the LM head split by vocabulary (Megatron pads
// the vocabulary to a multiple of 128 x tp), the embedding's lookup followed by an all-reduce; the
// vocabulary-parallel cross-entropy's three small all-reduces of [batch, seq] floats. Not modelled:
// each rank adding the row-parallel biases (Megatron adds them once, after the all-reduce: d_model
// FLOPs a token).
ModelDoc expand_gpt(const std::string& name, const GptConfig& c) {
    const std::int64_t t = c.tp, d = c.d_model, h = c.n_head / t, dh = c.d_model / c.n_head, dl = h * dh, ff = c.d_ff / t;
    const std::int64_t vocab = t == 1 ? c.vocab : (c.vocab + 128 * t - 1) / (128 * t) * 128;
    // Pipeline stage c.stage of c.pp (Megatron-LM, Narayanan et al. SC21): an equal share of the
    // layers; the first stage also embeds, the last also holds the final layernorm, the LM head
    // (its own copy of a tied embedding, as Megatron keeps one) and the loss. A stage before the
    // last receives or sends [batch, seq, d_model] activations; it ends in a stand-in loss (the
    // mean of its output) so that autodiff builds its backward, as the next stage's gradient would seed it.
    const bool first = c.stage == 0, last = c.stage == c.pp - 1;
    const std::int64_t per_stage = c.stage_layers > 0 ? c.stage_layers : c.n_layer / c.pp, l0 = c.stage * per_stage, l1 = l0 + per_stage;
    // What each expert runs of a rank's sequence, layer by layer (empty rows: uniform and dropless).
    const std::vector<Routing> routes = route_layers(c.routing, l0, l1, c.experts, c.seq / c.cp, c.top_k);
    DocBuilder b(c.pp == 1 ? name : name + " (stage " + std::to_string(c.stage + 1) + " of " + std::to_string(c.pp) + ")");
    b.doc()["description"] = "GPT decoder: " + std::to_string(c.n_layer) + " layers, d_model " + std::to_string(d) + ", " +
                             std::to_string(c.n_head) + " heads, vocab " + std::to_string(c.vocab) +
                             (c.experts > 0 ? ", " + std::to_string(c.experts) + " experts (top-" + std::to_string(c.top_k) + ", " +
                                                  layers_routing_text(c.routing, l0, routes, c.experts, c.seq / c.cp, c.top_k) + ")"
                                            : "");
    // Context parallelism: a rank holds seq / cp tokens (its "seq"); attention's keys and values are
    // gathered from the group (model/graph.hpp ContextParallel): a concat of the rank's shard
    // standing for the gathered buffer, and causal attention of the rank's queries over the whole
    // sequence, half of which the balanced chunks need (flash attention skips the masked blocks).
    const std::int64_t cp = c.cp, seq = c.seq / cp;
    ContextParallelSplit cps(b, cp);
    b.doc()["dims"] = {{"batch", c.batch}, {"seq", seq}};
    // Sequence parallelism: between the tensor-parallel blocks each rank holds 1/t of the sequence
    // (model/doc_builder.hpp TensorParallelSplit).
    const bool sp = c.sp && t > 1;
    const std::int64_t ss = sp ? seq / t : 0;
    TensorParallelSplit tps(b, t, sp, ss);
    auto gather = [&](const std::string& node, const std::string& in) { return tps.column_input(node, in); };
    auto scatter = [&](const std::string& node, const std::string& in) { return tps.reduce_scatter(node, in); };

    b.doc()["dtype_policy"] = {{"compute", c.dtype}};
    std::string x;
    if (first) {
        b.input("tokens", {"batch", "seq"}, "int64");
        b.input("positions", {"seq"}, "int64");
    } else {
        b.input("hidden", sp ? json{"batch", ss, d} : json{"batch", "seq", d});
        x = "hidden";
    }
    if (last) b.input("targets", {"batch", "seq"}, "int64");
    if (first) {
        b.param("wte", {vocab, d});
        b.param("wpe", {c.n_ctx, d});
        b.node("tok_emb", "embedding", {"wte", "tokens"});
        b.node("pos_emb", "embedding", {"wpe", "positions"});
        if (!sp) tps.all_reduce("tok_emb");  // the vocabulary-parallel lookup's partial rows
        x = b.node("embed", "add", {"tok_emb", "pos_emb"});
        if (sp) x = scatter("embed_scatter", x);
        x = b.dropout("embed_drop", x, c.dropout);
    }
    // Mixture-of-experts MLPs (c.experts > 0; Megatron-LM's MoE GPT, dropless): a router (a linear
    // to the experts, softmax, top-k: reduce_max stands for the selection and a slice of the
    // probabilities for the k routing weights), each token's k copies dispatched to k experts, the
    // experts' MLPs (each split by tensor parallelism as the dense one), the outputs combined by the
    // routing weights. Routing is UNIFORM (the trained router decides; uniform is the balanced case
    // the auxiliary loss aims at): each expert runs tokens x k / experts tokens. With ep > 1 a rank
    // holds experts / ep of them; an all-to-all sends each token copy to its expert's rank and one
    // brings the outputs back (model/graph.hpp ExpertParallel), after which a rank's experts each
    // run the tokens x k / experts of all ep ranks.
    ExpertParallelSplit eps(b, c.ep);
    const std::int64_t local_experts = c.experts / std::max<std::int64_t>(1, c.ep);
    // Routing by c.routing (not uniform, or a capacity): each expert runs rows[e] of a sequence's
    // seq x k copies. With expert parallelism the document is the busiest rank's (model/moe_routing.hpp
    // busiest_rank), which receives ep x its experts' rows per sequence.
    const auto expert_params = [&](const std::string& ex) {
        for (const auto& [w, shape] : {std::pair<std::string, json>{"up.w", {ff, d}}, {"up.b", {ff}}, {"down.w", {d, ff}}, {"down.b", {d}}})
            eps.expert_param(b.param(ex + w, shape));
    };
    // Non-uniform routing as ops (model/moe_routing.hpp routed_experts): the k copies of each token
    // as one stream of seq x k rows, each expert a contiguous block of them.
    auto routed_moe = [&](const std::string& p, std::int64_t k, const Routing& route) {
        RoutedExperts r;
        r.prefix = p + "moe.";
        r.copies = seq * k;
        r.routing = &route;
        r.busiest = busiest_rank(route.rows, c.ep);
        r.expert_prefix = [&](std::int64_t j) { return p + "moe.expert_" + std::to_string(j) + "."; };
        r.expert = [&](std::int64_t, const std::string& ex, const std::string& tokens) {
            expert_params(ex);
            if (tokens.empty()) return std::string();
            b.node(ex + "up", "linear", {tokens, ex + "up.w", ex + "up.b"});
            b.node(ex + "gelu", "gelu", {ex + "up"}, {{"approximate", "tanh"}});
            return b.node(ex + "down", "linear", {ex + "gelu", ex + "down.w", ex + "down.b"});
        };
        const std::string stream = b.node(p + "moe.stream", "reshape", {p + "moe.expand"}, {{"shape", {"batch", r.copies, d}}});
        const std::string back = routed_experts(b, eps, c.experts, stream, r);
        b.node(p + "moe.tokens", "reshape", {back}, {{"shape", {"batch", "seq", k, d}}});
    };
    // Sequence parallelism with expert parallelism (Megatron-core's alltoall token dispatcher,
    // MoEAlltoAllTokenDispatcher): each rank routes and dispatches only its own sequence shard's
    // tokens (the all-to-alls carry 1/tp of the sequence), the dispatched copies are then
    // all-gathered over the tensor-parallel group for the experts (split by tp as the dense MLP),
    // and the experts' partial outputs are reduce-scattered back before the combining all-to-all.
    // Without expert parallelism the MoE layer's input is all-gathered instead (below).
    const bool sp_ep = sp && c.ep > 1 && c.experts > 0;
    const json tokens_dim = sp_ep ? json(ss) : json("seq");
    const std::int64_t routed_tokens = sp_ep ? ss : seq;  // the tokens a rank routes
    // Uniform routing as ops: the copies regrouped [batch, tokens x k / E, E, d], expert e's slice of
    // axis 2 (with ep > 1 the all-to-alls are copies of the whole grouped tensor).
    auto uniform_moe = [&](const std::string& p, std::int64_t k, std::int64_t per_expert) {
        const std::int64_t E = c.experts;
        std::string routed = b.node(p + "moe.groups", "reshape", {p + "moe.expand"}, {{"shape", {"batch", routed_tokens * k / E, E, d}}});
        const std::int64_t dispatched = sp_ep ? per_expert / t : per_expert;  // a rank's copies an expert, after the all-to-all
        if (c.ep > 1) {
            eps.exchange(p + "moe.dispatch", routed, 4);
            routed = b.node(p + "moe.local", "reshape", {p + "moe.dispatch"}, {{"shape", {"batch", dispatched, local_experts, d}}});
            if (sp_ep) routed = tps.column_input(p + "moe.gather", routed);
        }
        json outs = json::array();
        for (std::int64_t e = 0; e < local_experts; ++e) {
            const std::string ex = p + "moe.expert_" + std::to_string(e) + ".";
            expert_params(ex);
            b.node(ex + "slice", "slice", {routed}, {{"starts", {e}}, {"ends", {e + 1}}, {"axes", {2}}});
            b.node(ex + "tokens", "reshape", {ex + "slice"}, {{"shape", {"batch", per_expert, d}}});
            b.node(ex + "up", "linear", {ex + "tokens", ex + "up.w", ex + "up.b"});
            b.node(ex + "gelu", "gelu", {ex + "up"}, {{"approximate", "tanh"}});
            b.node(ex + "down", "linear", {ex + "gelu", ex + "down.w", ex + "down.b"});
            outs.push_back(b.node(ex + "out", "reshape", {ex + "down"}, {{"shape", {"batch", per_expert, 1, d}}}));
        }
        std::string back = b.node(p + "moe.outputs", "concat", outs, {{"axis", 2}});
        if (sp_ep) back = tps.reduce_scatter(p + "moe.scatter", back, dispatched);
        if (c.ep > 1) back = eps.exchange(p + "moe.combine", back, 4);
        b.node(p + "moe.tokens", "reshape", {back}, {{"shape", {"batch", tokens_dim, k, d}}});
    };
    auto moe_mlp = [&](const std::string& p, const std::string& in, const Routing& route) {
        const std::int64_t k = c.top_k, E = c.experts, per_expert = seq * k * c.ep / E;
        b.param(p + "router.w", {E, d});
        b.node(p + "router", "linear", {in, p + "router.w"});
        b.node(p + "router.softmax", "softmax", {p + "router"}, {{"axis", -1}});
        b.node(p + "router.top_k", "reduce_max", {p + "router.softmax"}, {{"axes", {-1}}, {"keepdim", true}});
        b.node(p + "router.weights", "slice", {p + "router.softmax"}, {{"starts", {0}}, {"ends", {k}}, {"axes", {2}}});
        b.node(p + "router.weights4", "reshape", {p + "router.weights"}, {{"shape", {"batch", tokens_dim, k, 1}}});
        b.node(p + "moe.copies", "reshape", {in}, {{"shape", {"batch", tokens_dim, 1, d}}});
        b.node(p + "moe.expand", "expand", {p + "moe.copies"}, {{"shape", {"batch", tokens_dim, k, d}}});
        if (route.rows.empty())
            uniform_moe(p, k, per_expert);
        else
            routed_moe(p, k, route);
        b.node(p + "moe.weighted", "mul", {p + "moe.tokens", p + "router.weights4"});
        return b.node(p + "mlp.moe", "reduce_sum", {p + "moe.weighted"}, {{"axes", {2}}});
    };
    const json heads_shape = {"batch", "seq", h, dh};
    const json to_heads = {{"perm", {0, 2, 1, 3}}};
    for (std::int64_t l = l0; l < l1; ++l) {
        const std::string p = "h" + std::to_string(l) + ".";
        for (const char* n : {"ln1.w", "ln1.b", "ln2.w", "ln2.b"}) b.param(p + n, {d});
        b.param(p + "attn.qkv.w", {3 * dl, d});
        b.param(p + "attn.qkv.b", {3 * dl});
        b.param(p + "attn.proj.w", {d, dl});
        b.param(p + "attn.proj.b", {d});
        if (c.experts == 0) {
            b.param(p + "mlp.up.w", {ff, d});
            b.param(p + "mlp.up.b", {ff});
            b.param(p + "mlp.down.w", {d, ff});
            b.param(p + "mlp.down.b", {d});
        }

        const std::string a = b.node(p + "ln1", "layernorm", {x, p + "ln1.w", p + "ln1.b"});
        const std::string qkv =
            b.node(p + "attn.qkv", "linear", {sp ? gather(p + "attn.gather", a) : a, p + "attn.qkv.w", p + "attn.qkv.b"});
        b.node(p + "attn.split", "split", {qkv}, {{"axis", -1}, {"sizes", {dl, dl, dl}}});
        for (const char* part : {"q", "k", "v"}) {
            const int idx = part[0] == 'q' ? 0 : part[0] == 'k' ? 1 : 2;
            b.node(p + "attn." + part + ".view", "reshape", {p + "attn.split:" + std::to_string(idx)}, {{"shape", heads_shape}});
            b.node(p + "attn." + part, "permute", {p + "attn." + part + ".view"}, to_heads);
        }
        const std::string keys = cps.gather(p + "attn.k.gather", p + "attn.k"), values = cps.gather(p + "attn.v.gather", p + "attn.v");
        b.node(p + "attn.scores", "matmul", {p + "attn.q", keys}, {{"transpose_b", true}});
        b.node(p + "attn.scale", "scale", {p + "attn.scores"}, {{"factor", 1.0 / std::sqrt(static_cast<double>(dh))}});
        b.node(p + "attn.mask", "causal_mask", {p + "attn.scale"});
        std::string probs = b.node(p + "attn.softmax", "softmax", {p + "attn.mask"}, {{"axis", -1}});
        probs = b.dropout(p + "attn.drop", probs, c.dropout);
        b.node(p + "attn.context", "matmul", {probs, values});
        // merge heads: [B, H, S, Dh] -> [B, S, H, Dh] must be materialised before the reshape
        b.node(p + "attn.merge", "permute", {p + "attn.context"}, {{"perm", {0, 2, 1, 3}}, {"copy", true}});
        b.node(p + "attn.merged", "reshape", {p + "attn.merge"}, {{"shape", {"batch", "seq", dl}}});
        std::string o = tps.row_output(p + "attn.scatter",
                                       b.node(p + "attn.proj", "linear", {p + "attn.merged", p + "attn.proj.w", p + "attn.proj.b"}));
        o = b.dropout(p + "attn.resid_drop", o, c.dropout);
        x = b.node(p + "attn.residual", "add", {x, o});
        const std::string m = b.node(p + "ln2", "layernorm", {x, p + "ln2.w", p + "ln2.b"});
        std::string dn;
        if (c.experts == 0) {
            b.node(p + "mlp.up", "linear", {sp ? gather(p + "mlp.gather", m) : m, p + "mlp.up.w", p + "mlp.up.b"});
            b.node(p + "mlp.gelu", "gelu", {p + "mlp.up"}, {{"approximate", "tanh"}});
            dn = b.node(p + "mlp.down", "linear", {p + "mlp.gelu", p + "mlp.down.w", p + "mlp.down.b"});
        } else {
            // Sequence parallelism: the router and the experts (tensor-parallel as the dense MLP) run
            // on the all-gathered sequence, their combined output reduce-scattered below; with
            // expert parallelism too, inside the layer around the experts (sp_ep above).
            dn = moe_mlp(p, sp && !sp_ep ? gather(p + "mlp.gather", m) : m, routes[static_cast<std::size_t>(l - l0)]);
        }
        if (!sp_ep) dn = tps.row_output(p + "mlp.scatter", dn);
        dn = b.dropout(p + "mlp.resid_drop", dn, c.dropout);
        x = b.node(p + "mlp.residual", "add", {x, dn});
    }
    if (last) {
        b.param("ln_f.w", {d});
        b.param("ln_f.b", {d});
        const std::string final_norm = b.node("ln_f", "layernorm", {x, "ln_f.w", "ln_f.b"});
        std::string head = "wte";
        if (!c.tied_embeddings || !first) {
            b.param("lm_head.w", {vocab, d});
            head = "lm_head.w";
        }
        b.node("lm_head", "matmul", {sp ? gather("final_gather", final_norm) : final_norm, head}, {{"transpose_b", true}});
        tps.vocab_parallel_loss(b.node("loss", "cross_entropy", {"lm_head", "targets"}));
        b.doc()["outputs"] = {"loss"};
    } else {
        b.node("stage_loss", "reduce_mean", {x}, {{"axes", {0, 1, 2}}});
        b.doc()["outputs"] = {"stage_loss"};
    }
    if (c.pp > 1 || c.stage_layers > 0) {
        b.doc()["pipeline"] = {{"stages", c.pp}, {"stage", c.stage}, {"layers", per_stage}};
        if (c.stage_layers > 0) b.doc()["pipeline"]["model_layers"] = c.n_layer, b.doc()["pipeline"]["layer_prefix"] = "h";
        if (!first) b.doc()["pipeline"]["input"] = "hidden";
        // A tied embedding: the first stage's wte and the last stage's copy (lm_head.w).
        if (c.tied_embeddings && (first || last)) b.doc()["pipeline"]["shared_embedding"] = first ? "wte" : "lm_head.w";
    }
    if (c.ep > 1) {
        b.doc()["description"] = b.doc()["description"].get<std::string>() + "; rank of " + std::to_string(c.ep) +
                                 "-way expert parallelism (" + std::to_string(local_experts) + " of " + std::to_string(c.experts) +
                                 " experts" + expert_rank_text(routes, local_experts, c.ep, seq * c.top_k) + ")";
        eps.write(routed_load_factor(routes, c.ep, seq * c.top_k));
    }
    cps.write(c.seq);
    tps.write();
    if (t > 1) {
        b.doc()["description"] = b.doc()["description"].get<std::string>() + "; rank of " + std::to_string(t) + "-way tensor parallelism";
    }
    return b.take_model();
}

// mlp: batch x input -> (linear, activation) per hidden width -> linear to classes -> cross-entropy.
ModelDoc expand_mlp(const json& cfg, const std::string& origin) {
    std::int64_t batch = 64, input = 784, classes = 10;
    std::vector<std::int64_t> hidden = {1024, 1024};
    std::string activation = "relu", dtype = "f32";
    for (const auto& [k, v] : cfg.items()) {
        if (k == "batch")
            batch = positive_int(v, origin, k);
        else if (k == "input")
            input = positive_int(v, origin, k);
        else if (k == "classes")
            classes = positive_int(v, origin, k);
        else if (k == "hidden") {
            if (!v.is_array()) bad_config(origin, k, "expected a list of widths");
            hidden.clear();
            for (const auto& w : v) hidden.push_back(positive_int(w, origin, k));
        } else if (k == "activation") {
            if (!v.is_string()) bad_config(origin, k, "expected an op name");
            activation = v.get<std::string>();
            if (activation != "relu" && activation != "gelu" && activation != "silu" && activation != "sigmoid" && activation != "tanh") {
                bad_config(origin, k, "expected relu, gelu, silu, sigmoid or tanh");
            }
        } else if (k == "dtype") {
            if (!v.is_string()) bad_config(origin, k, "expected a dtype name");
            dtype = v.get<std::string>();
        } else {
            bad_config(origin, k, "unknown key '" + k + "' (expected: batch, input, hidden, classes, activation, dtype)");
        }
    }
    DocBuilder b("mlp");
    b.doc()["dims"] = {{"batch", batch}};
    b.doc()["dtype_policy"] = {{"compute", dtype}};
    b.input("x", {"batch", input});
    b.input("labels", {"batch"}, "int64");
    std::string x = "x";
    std::int64_t width = input;
    for (std::size_t i = 0; i <= hidden.size(); ++i) {
        const bool last = i == hidden.size();
        const std::int64_t out = last ? classes : hidden[i];
        const std::string p = last ? "head" : "fc" + std::to_string(i + 1);
        b.param(p + ".w", {out, width});
        b.param(p + ".b", {out});
        x = b.node(p, "linear", {x, p + ".w", p + ".b"});
        if (!last) x = b.node(p + "." + activation, activation.c_str(), {x});
        width = out;
    }
    b.node("loss", "cross_entropy", {x, "labels"});
    b.doc()["outputs"] = {"loss"};
    return b.take_model();
}

}  // namespace

bool is_template_name(const std::string& name) {
    return name == "mlp" || name == "gpt" || gpt_presets().count(name) != 0 || is_hf_preset(name);
}

std::string template_choices() {
    std::string s = "mlp, gpt";
    for (const auto& [name, c] : gpt_presets()) s += ", " + name;
    for (const auto& name : hf_preset_names()) s += ", " + name;  // Hugging Face configs (hf_config.hpp)
    return s;
}

bool template_splits_tensor_parallel(const std::string& name) { return name == "gpt" || gpt_presets().count(name) != 0; }

std::optional<DecoderArch> gpt_template_arch(const std::string& name, const json& config, const std::string& origin) {
    if (name != "gpt" && gpt_presets().count(name) == 0) return std::nullopt;
    const GptConfig c = gpt_config(name == "gpt" ? "gpt2-small" : name, config, origin);
    DecoderArch a;
    a.name = config.contains("preset") && config["preset"].is_string() ? config["preset"].get<std::string>() : name;
    a.dtype = c.dtype;
    a.vocab = c.vocab, a.d = c.d_model, a.layers = c.n_layer, a.heads = c.n_head, a.kv_heads = c.n_head;
    a.head_dim = c.d_model / c.n_head, a.ffn = c.d_ff, a.max_positions = c.n_ctx;
    a.qkv_bias = a.out_bias = a.mlp_bias = true;
    a.tied = c.tied_embeddings;
    a.act = "gelu_tanh";
    a.batch = c.batch;
    return a;
}

std::optional<ModelDoc> expand_built_template(const std::string& name, const json& config, const std::string& origin) {
    if (name == "mlp") return expand_mlp(config, origin);
    if (is_hf_preset(name)) return std::nullopt;
    if (name == "gpt" || gpt_presets().count(name)) {
        const std::string preset = name == "gpt" ? "gpt2-small" : name;
        std::string doc_name = config.contains("preset") && config["preset"].is_string() ? config["preset"].get<std::string>() : name;
        return expand_gpt(doc_name, gpt_config(preset, config, origin));
    }
    return std::nullopt;
}

json expand_template(const std::string& name, const json& config, const std::string& origin) {
    if (std::optional<ModelDoc> built = expand_built_template(name, config, origin)) return std::move(*built).to_json();
    if (is_hf_preset(name)) return expand_hf_preset(name, config, origin);
    throw InputError(origin + ": /template: unknown template '" + name + "' (templates: " + template_choices() + ")");
}

}  // namespace roofline
