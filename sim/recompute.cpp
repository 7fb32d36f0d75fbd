#include "sim/recompute.hpp"

#include <cctype>

// Boost's adjacency-list edge iterators trip GCC 12's -Wmaybe-uninitialized (a false positive
// inside boost/graph/detail/adj_list_edge_iterator.hpp).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/boykov_kolmogorov_max_flow.hpp>
#include <algorithm>
#include <cmath>
#include <functional>

#include "ops/checked.hpp"
#include "ops/error.hpp"
#include "sim/fusion.hpp"
#include "ops/op_rule.hpp"

namespace roofline {

std::string_view strategy_name(RecomputeStrategy s) {
    switch (s) {
        case RecomputeStrategy::none: return "none";
        case RecomputeStrategy::full: return "full";
        case RecomputeStrategy::selective: return "selective";
        case RecomputeStrategy::sqrt: return "sqrt";
        case RecomputeStrategy::mincut: return "mincut";
    }
    return "?";
}

std::optional<RecomputeStrategy> parse_strategy(std::string_view name) {
    for (RecomputeStrategy s : kAllStrategies) {
        if (strategy_name(s) == name) return s;
    }
    return std::nullopt;
}

bool is_training_step(const Graph& g) {
    return std::any_of(g.nodes().begin(), g.nodes().end(), [](const Node& n) { return n.phase == Phase::backward; });
}

namespace {

void require_training(const Graph& g) {
    if (!is_training_step(g))
        throw InputError(g.name +
                         ": recomputation needs a training step (--mode training): an inference graph keeps nothing for a backward pass");
}

// The layer a node's name places it in: the name up to and including its first path component
// ending in a digit ("h3.attn.qkv" -> "h3", "model.layers.3.mlp.up_proj" -> "model.layers.3",
// "/encoder/layer.3/attention" -> "/encoder/layer.3"); with numbered = false (a graph whose names
// number nothing), its first component ("attn.q" -> "attn"). Empty: outside any layer.
std::string layer_key(const std::string& name, bool numbered) {
    if (!numbered) {
        const auto cut = name.find_first_of("./");
        return cut == std::string::npos ? std::string() : name.substr(0, cut);
    }
    std::size_t begin = 0;
    while (begin < name.size()) {
        const std::size_t end = std::min(name.find_first_of("./", begin), name.size());
        if (end > begin && std::isdigit(static_cast<unsigned char>(name[end - 1])) != 0)
            return end == name.size() ? std::string() : name.substr(0, end);  // a node named by its layer alone is no layer's part
        begin = end + 1;
    }
    return {};
}

bool consumed_outside(const Graph& g, NodeId n, const std::vector<bool>& inside) {
    for (TensorId t : g.node(n).outputs) {
        for (NodeId c : g.consumers(t)) {
            if (g.node(c).phase == Phase::forward && !inside[static_cast<std::size_t>(c)]) return true;
        }
    }
    return false;
}

// Marks the nodes of a run of forward nodes for recomputation, keeping the run's outputs (what
// later forward nodes read: the next layer's input) — so only the run's input is kept.
void mark_run(const Graph& g, const std::vector<NodeId>& run, std::vector<bool>& recompute) {
    std::vector<bool> inside(g.nodes().size(), false);
    for (NodeId n : run) inside[static_cast<std::size_t>(n)] = true;
    for (NodeId n : run) {
        if (!consumed_outside(g, n, inside)) recompute[static_cast<std::size_t>(n)] = true;
    }
}

// The attention core of a layer (sim/fusion.hpp attention_core) and composite attention ops.
void mark_attention_core(const Graph& g, const std::vector<NodeId>& nodes, std::vector<bool>& recompute) {
    for (NodeId n : nodes) {
        const FusionRole role = traits_of(g.node(n).kind).fusion;
        if (role == FusionRole::attention) recompute[static_cast<std::size_t>(n)] = true;
        if (role != FusionRole::softmax) continue;
        for (NodeId c : attention_core(g, n)) recompute[static_cast<std::size_t>(c)] = true;
    }
}

bool never_recomputed(OpKind k) { return traits_of(k).keep_when_recomputing; }

}  // namespace

std::vector<Layer> find_layers(const Graph& g) {
    bool numbered = false;
    for (const Node& node : g.nodes()) numbered = numbered || (node.phase == Phase::forward && !layer_key(node.name, true).empty());
    std::vector<Layer> layers;
    for (NodeId n : g.topological_order()) {
        const Node& node = g.node(n);
        if (node.phase != Phase::forward) continue;
        const std::string key = layer_key(node.name, numbered);
        if (key.empty()) continue;
        if (layers.empty() || layers.back().name != key) layers.push_back(Layer{key, {}});
        layers.back().nodes.push_back(n);
    }
    std::erase_if(layers, [](const Layer& l) { return l.nodes.size() < 2; });
    return layers;
}

RecomputePlan plan_layers(const Graph& g, const std::vector<Layer>& layers, const std::vector<LayerChoice>& choices) {
    require_training(g);
    if (choices.size() != layers.size()) throw InputError("recompute: one choice per layer is needed");
    RecomputePlan p{std::vector<bool>(g.nodes().size(), false)};
    for (std::size_t i = 0; i < layers.size(); ++i) {
        if (choices[i] == LayerChoice::full)
            mark_run(g, layers[i].nodes, p.recompute);
        else if (choices[i] == LayerChoice::selective)
            mark_attention_core(g, layers[i].nodes, p.recompute);
    }
    return p;
}

RecomputePlan plan_mincut(const Graph& g) {
    require_training(g);
    using Traits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
    using FlowGraph = boost::adjacency_list<
        boost::vecS, boost::vecS, boost::directedS,
        boost::property<boost::vertex_index_t, long,
                        boost::property<boost::vertex_color_t, boost::default_color_type,
                                        boost::property<boost::vertex_distance_t, long,
                                                        boost::property<boost::vertex_predecessor_t, Traits::edge_descriptor>>>>,
        boost::property<
            boost::edge_capacity_t, double,
            boost::property<boost::edge_residual_capacity_t, double, boost::property<boost::edge_reverse_t, Traits::edge_descriptor>>>>;
    const std::size_t nt = g.tensors().size();
    // Vertices: source 0, sink 1, then (in, out) per tensor.
    FlowGraph fg(2 + 2 * nt);
    auto cap = boost::get(boost::edge_capacity, fg);
    auto rev = boost::get(boost::edge_reverse, fg);
    auto add = [&](std::size_t u, std::size_t v, double c) {
        auto e = boost::add_edge(u, v, fg).first;
        auto r = boost::add_edge(v, u, fg).first;
        cap[e] = c;
        cap[r] = 0;
        rev[e] = r;
        rev[r] = e;
    };
    auto in = [](TensorId t) { return 2 + 2 * static_cast<std::size_t>(t); };
    auto out = [](TensorId t) { return 3 + 2 * static_cast<std::size_t>(t); };
    const double inf = 1e30;
    auto forward_activation = [&](TensorId t) {
        const NodeId p = g.tensor(t).producer;
        return p != kNoNode && g.node(p).phase == Phase::forward;
    };
    for (NodeId n : g.topological_order()) {
        const Node& node = g.node(n);
        if (node.phase != Phase::forward) {
            for (TensorId t : node.inputs) {
                if (forward_activation(t)) add(out(t), 1, inf);  // the backward pass needs it
            }
            continue;
        }
        for (TensorId o : node.outputs) {
            add(in(o), out(o), static_cast<double>(g.tensor(o).desc.bytes()));  // saving it costs its bytes
            if (never_recomputed(node.kind)) add(0, in(o), inf);
            for (TensorId t : node.inputs) {
                if (forward_activation(t)) add(out(t), in(o), inf);
            }
        }
    }
    for (TensorId t : g.outputs()) {
        if (forward_activation(t)) add(out(t), 1, inf);
    }
    boost::boykov_kolmogorov_max_flow(fg, 0, 1);
    auto color = boost::get(boost::vertex_color, fg);
    RecomputePlan p{std::vector<bool>(g.nodes().size(), false)};
    for (const Node& node : g.nodes()) {
        if (node.phase != Phase::forward || node.outputs.empty()) continue;
        // Sink side of the cut: recomputed in backward.
        if (boost::get(color, in(node.outputs[0])) != boost::black_color) {
            p.recompute[static_cast<std::size_t>(g.tensor(node.outputs[0]).producer)] = true;
        }
    }
    return p;
}

RecomputePlan plan_strategy(const Graph& g, RecomputeStrategy s) {
    require_training(g);
    const std::vector<Layer> layers = find_layers(g);
    switch (s) {
        case RecomputeStrategy::none: return RecomputePlan{std::vector<bool>(g.nodes().size(), false)};
        case RecomputeStrategy::full: return plan_layers(g, layers, std::vector<LayerChoice>(layers.size(), LayerChoice::full));
        case RecomputeStrategy::selective: return plan_layers(g, layers, std::vector<LayerChoice>(layers.size(), LayerChoice::selective));
        case RecomputeStrategy::sqrt: {
            RecomputePlan p{std::vector<bool>(g.nodes().size(), false)};
            const auto n = layers.size();
            const auto k = static_cast<std::size_t>(std::ceil(std::sqrt(static_cast<double>(n))));
            for (std::size_t s0 = 0; s0 < n; s0 += std::max<std::size_t>(1, k)) {
                std::vector<NodeId> run;
                for (std::size_t i = s0; i < std::min(n, s0 + k); ++i)
                    run.insert(run.end(), layers[i].nodes.begin(), layers[i].nodes.end());
                mark_run(g, run, p.recompute);
            }
            return p;
        }
        case RecomputeStrategy::mincut: return plan_mincut(g);
    }
    return RecomputePlan{std::vector<bool>(g.nodes().size(), false)};
}

RecomputeResult apply_recompute(const Graph& g, const RecomputePlan& plan) {
    if (plan.recompute.size() != g.nodes().size()) throw InputError("recompute: the plan is for another graph");
    RecomputeResult r;
    Graph& out = r.graph;
    out.name = g.name;
    out.origin = g.origin;
    out.description = g.description;
    out.dims = g.dims;
    out.compute_dtype = g.compute_dtype;
    out.precision = g.precision;
    out.tensor_parallel = g.tensor_parallel;
    out.context_parallel = g.context_parallel;
    out.expert_parallel = g.expert_parallel;
    out.pipeline = g.pipeline;
    const std::size_t nt = g.tensors().size();
    const auto marked = static_cast<std::size_t>(std::count(plan.recompute.begin(), plan.recompute.end(), true));
    out.reserve(g.nodes().size() + marked, nt + 2 * marked);
    std::vector<TensorId> tmap(nt, -1), cmap(nt, -1);
    std::vector<NodeId> nmap(g.nodes().size(), kNoNode);
    for (std::size_t t = 0; t < nt; ++t) {
        const Tensor& ten = g.tensors()[t];
        if (ten.producer != kNoNode) continue;
        switch (ten.role) {
            case TensorRole::input: tmap[t] = out.add_input(ten.name, ten.desc); break;
            case TensorRole::parameter: tmap[t] = out.add_parameter(ten.name, ten.desc); break;
            case TensorRole::optimizer_state: tmap[t] = out.add_optimizer_state(ten.name, ten.desc); break;
            case TensorRole::activation: tmap[t] = out.add_input(ten.name, ten.desc); break;
        }
    }
    auto recomputed = [&](TensorId t) {
        const NodeId p = g.tensor(t).producer;
        return p != kNoNode && g.node(p).phase == Phase::forward && plan.recompute[static_cast<std::size_t>(p)];
    };
    auto names_of = [&](const Node& node, const std::string& prefix) {
        std::vector<std::string> names;
        for (TensorId t : node.outputs) names.push_back(prefix + g.tensor(t).name);
        return names;
    };
    std::function<void(TensorId)> ensure_clone = [&](TensorId t) {
        if (cmap[static_cast<std::size_t>(t)] >= 0) return;
        const NodeId p = g.tensor(t).producer;
        const Node& node = g.node(p);
        std::vector<TensorId> inputs;
        for (TensorId a : node.inputs) {
            if (recomputed(a)) {
                ensure_clone(a);
                inputs.push_back(cmap[static_cast<std::size_t>(a)]);
            } else {
                inputs.push_back(tmap[static_cast<std::size_t>(a)]);
            }
        }
        const NodeId c = out.add_node("recompute/" + node.name, node.kind, inputs, node.attrs, names_of(node, "recompute/"));
        out.set_phase(c, Phase::backward);
        out.set_recomputes(c, nmap[static_cast<std::size_t>(p)]);
        r.origin.push_back(p);
        r.cloned.push_back(p);
        ++r.clones;
        r.extra_flops = checked_add(r.extra_flops, g.work(p).flops(), "recomputed FLOPs");
        for (std::size_t i = 0; i < node.outputs.size(); ++i) cmap[static_cast<std::size_t>(node.outputs[i])] = out.node(c).outputs[i];
    };
    for (NodeId n : g.topological_order()) {
        const Node& node = g.node(n);
        std::vector<TensorId> inputs;
        for (TensorId a : node.inputs) {
            if (node.phase != Phase::forward && recomputed(a)) {
                ensure_clone(a);
                inputs.push_back(cmap[static_cast<std::size_t>(a)]);
            } else {
                inputs.push_back(tmap[static_cast<std::size_t>(a)]);
            }
        }
        const NodeId m = out.add_node(node.name, node.kind, inputs, node.attrs, names_of(node, ""));
        const NodeId diff = node.differentiates == kNoNode ? kNoNode : nmap[static_cast<std::size_t>(node.differentiates)];
        out.set_phase(m, node.phase, diff);
        if (node.recomputes != kNoNode) out.set_recomputes(m, nmap[static_cast<std::size_t>(node.recomputes)]);
        nmap[static_cast<std::size_t>(n)] = m;
        r.origin.push_back(n);
        for (std::size_t i = 0; i < node.outputs.size(); ++i) tmap[static_cast<std::size_t>(node.outputs[i])] = out.node(m).outputs[i];
    }
    for (TensorId t : g.outputs()) out.mark_output(tmap[static_cast<std::size_t>(t)]);
    return r;
}

}  // namespace roofline

#pragma GCC diagnostic pop
