#include "model/autodiff.hpp"

#include <algorithm>
#include <memory>

#include "ops/grad.hpp"
#include "ops/op_rule.hpp"

namespace roofline {

std::string_view optimizer_name(Optimizer o) {
    switch (o) {
        case Optimizer::sgd: return "sgd";
        case Optimizer::adam: return "adam";
        case Optimizer::adamw: return "adamw";
        case Optimizer::none: return "none";
    }
    return "?";
}

namespace {

// Emits backward nodes into the graph, named after the forward node they differentiate.
class GraphGradBuilder final : public GradBuilder {
public:
    explicit GraphGradBuilder(Graph& g) : g_(g) {}
    void set_current(NodeId n) { current_ = n; }

    std::vector<TensorRef> emit(OpKind k, const std::vector<TensorRef>& inputs, const Attrs& attrs) override {
        const std::string name = "grad." + g_.node(current_).name + "." + std::to_string(counter_++);
        const NodeId n = g_.add_node(name, k, inputs, attrs, {});
        g_.set_phase(n, Phase::backward, current_);
        return g_.node(n).outputs;
    }

    const TensorDesc& desc(TensorRef t) const override { return g_.tensor(t).desc; }

private:
    Graph& g_;
    NodeId current_ = kNoNode;
    int counter_ = 0;
};

bool is_16bit(DType d) { return d == DType::f16 || d == DType::bf16; }

// The attributes of a step's optimizer nodes, the same for every parameter: made once.
struct OptimizerAttrs {
    explicit OptimizerAttrs(const TrainingOptions& opt) : update(attr("lr", opt.lr)), to_f32(attr("dtype", std::string("f32"))) {
        if (opt.weight_decay > 0) update.set("weight_decay", opt.weight_decay);
        if (opt.loss_scale > 0) update.set("grad_scale", 1.0 / opt.loss_scale);
        if (opt.optimizer == Optimizer::sgd) {
            if (opt.momentum > 0) update.set("momentum", opt.momentum);
        } else {
            update.set("decoupled", opt.optimizer == Optimizer::adamw);
        }
    }
    Attrs update;  // of the sgd or adam update
    Attrs to_f32;  // of the cast of a 16-bit gradient to fp32
};

void add_optimizer_step(Graph& g, TensorId param, TensorId grad, const TrainingOptions& opt, const OptimizerAttrs& attrs) {
    const Tensor p = g.tensor(param);  // copy: adding tensors may reallocate the list
    const std::string& n = p.name;
    const bool master = opt.master_weights && is_16bit(p.desc.dtype);
    const TensorDesc state_desc{p.desc.shape, is_16bit(p.desc.dtype) ? DType::f32 : p.desc.dtype};
    // The node's first output.
    auto node = [&](const std::string& name, OpKind k, const std::vector<TensorId>& in, const Attrs& a) {
        const NodeId id = g.add_node(name, k, in, a, {});
        g.set_phase(id, Phase::optimizer);
        return g.node(id).outputs[0];
    };
    TensorId weights = param;
    TensorId gradient = grad;
    if (master) {
        weights = g.add_optimizer_state(n + ".master", state_desc);
        gradient = node("opt." + n + ".grad_f32", OpKind::cast, {grad}, attrs.to_f32);
    }
    TensorId updated = -1;
    if (opt.optimizer == Optimizer::sgd) {
        std::vector<TensorId> in = {weights, gradient};
        if (opt.momentum > 0) in.push_back(g.add_optimizer_state(n + ".momentum", state_desc));
        updated = node("opt." + n + ".sgd", OpKind::sgd_update, in, attrs.update);
    } else {
        const TensorId m = g.add_optimizer_state(n + ".adam_m", state_desc);
        const TensorId v = g.add_optimizer_state(n + ".adam_v", state_desc);
        updated = node("opt." + n + ".adam", OpKind::adam_update, {weights, gradient, m, v}, attrs.update);
    }
    if (master)
        node("opt." + n + ".to_" + std::string(dtype_name(p.desc.dtype)), OpKind::cast, {updated},
             attr("dtype", std::string(dtype_name(p.desc.dtype))));
}

}  // namespace

Graph build_training_step(Graph g, const TrainingOptions& opt) {
    if (g.outputs().empty()) {
        throw InputError(g.origin + ": training needs a loss: the model declares no outputs (the first output is the loss)");
    }
    const TensorId loss = g.outputs().front();
    const Tensor loss_t = g.tensor(loss);
    if (loss_t.desc.rank() != 0 || !is_floating(loss_t.desc.dtype)) {
        throw InputError(g.origin + ": the loss '" + loss_t.name + "' must be a floating-point scalar, got " + desc_str(loss_t.desc));
    }
    for (const Node& n : g.nodes()) {
        if (n.phase != Phase::forward) throw InputError("build_training_step: the graph already has a backward pass");
    }
    const std::size_t forward_nodes = g.nodes().size();
    // A step has about four times the forward's nodes and tensors (backward twice, the optimizer once).
    g.reserve(4 * forward_nodes + 64, 4 * g.tensors().size() + 64);

    // Which tensors need a gradient: parameters, a pipeline stage's received activation (its
    // gradient goes back to the previous stage), and what is computed from them.
    std::vector<bool> needs_grad(g.tensors().size(), false);
    const TensorId received = g.pipeline.input.empty() ? -1 : g.find_tensor(g.pipeline.input);
    for (std::size_t t = 0; t < g.tensors().size(); ++t) {
        const Tensor& ten = g.tensors()[t];
        needs_grad[t] = (ten.role == TensorRole::parameter || static_cast<TensorId>(t) == received) && is_floating(ten.desc.dtype);
    }
    for (std::size_t i = 0; i < forward_nodes; ++i) {
        const Node& n = g.nodes()[i];
        bool any = false;
        for (TensorId t : n.inputs) any = any || needs_grad[static_cast<std::size_t>(t)];
        for (TensorId t : n.outputs) needs_grad[static_cast<std::size_t>(t)] = any && is_floating(g.tensor(t).desc.dtype);
    }

    // Sequence parallelism (Korthikanti et al. 2022, section 4.2.2): the all-gathered input of a
    // column-parallel linear is not kept for its backward. Each rank keeps its shard, and the
    // gradient rules read a copy gathered again in backward ("regather/<node>", marked as running
    // that node again: sim/parallel.cpp charges its all-gather, overlapped with the input
    // gradient's GEMM as Megatron-LM overlaps it).
    std::vector<NodeId> regather_of(g.tensors().size(), kNoNode);
    if (g.tensor_parallel.sequence_parallel) {
        for (const std::string& name : g.tensor_parallel.all_gather) {
            const NodeId n = g.find_node(name);
            if (n != kNoNode && g.node(n).outputs.size() == 1) regather_of[static_cast<std::size_t>(g.node(n).outputs[0])] = n;
        }
    }
    std::vector<TensorId> regathered(g.tensors().size(), -1);
    const auto saved = [&](TensorId t) {
        const auto i = static_cast<std::size_t>(t);
        if (i >= regather_of.size() || regather_of[i] == kNoNode) return t;
        if (regathered[i] < 0) {
            const Node gather = g.node(regather_of[i]);  // copy: adding a node may reallocate
            const NodeId c =
                g.add_node("regather/" + gather.name, gather.kind, gather.inputs, gather.attrs, {"regather/" + g.tensor(t).name});
            g.set_phase(c, Phase::backward);
            g.set_recomputes(c, regather_of[i]);
            regathered[i] = g.node(c).outputs[0];
        }
        return regathered[i];
    };

    GraphGradBuilder builder(g);
    std::vector<TensorId> grad(g.tensors().size(), kNoGrad);
    {
        Attrs seed = attr2("shape", Shape{}, "dtype", std::string(dtype_name(loss_t.desc.dtype)));
        seed.set("value", opt.loss_scale > 0 ? opt.loss_scale : 1.0);
        const NodeId s = g.add_node("grad.seed", OpKind::fill, {}, seed, {});
        g.set_phase(s, Phase::backward, loss_t.producer);
        grad[static_cast<std::size_t>(loss)] = g.node(s).outputs[0];
    }
    for (std::size_t i = forward_nodes; i-- > 0;) {
        const NodeId id = static_cast<NodeId>(i);
        const Node node = g.node(id);  // copy: emitting nodes may reallocate the node list
        std::vector<TensorRef> out_grads;
        bool any = false;
        for (TensorId t : node.outputs) {
            const TensorId gt = static_cast<std::size_t>(t) < grad.size() ? grad[static_cast<std::size_t>(t)] : kNoGrad;
            out_grads.push_back(gt);
            any = any || gt != kNoGrad;
        }
        if (!any) continue;
        const std::size_t n_in = node.inputs.size();
        std::unique_ptr<bool[]> needs(new bool[n_in]);  // contiguous, unlike std::vector<bool>
        bool any_needed = false;
        for (std::size_t k = 0; k < n_in; ++k) {
            needs[k] = needs_grad[static_cast<std::size_t>(node.inputs[k])];
            any_needed = any_needed || needs[k];
        }
        if (!any_needed) continue;
        const GradFn rule = grad_rule_of(node.kind);
        if (!rule) throw InputError("node '" + node.name + "': " + std::string(op_name(node.kind)) + " has no gradient rule");
        std::vector<TensorRef> inputs(node.inputs.begin(), node.inputs.end());
        for (TensorRef& t : inputs) t = saved(t);
        builder.set_current(id);
        const GradArgs args{node.kind, node.attrs, inputs, node.outputs, out_grads, std::span<const bool>(needs.get(), n_in)};
        std::vector<TensorRef> in_grads;
        try {
            in_grads = rule(builder, args);
        } catch (const InputError& e) {
            throw InputError("gradient of node '" + node.name + "': " + e.what());
        }
        grad.resize(g.tensors().size(), kNoGrad);
        for (std::size_t k = 0; k < node.inputs.size(); ++k) {
            if (!needs[k] || in_grads[k] == kNoGrad) continue;
            const auto t = static_cast<std::size_t>(node.inputs[k]);
            if (grad[t] == kNoGrad) {
                grad[t] = in_grads[k];
            } else {  // fan-out: accumulate
                grad[t] = builder.one(OpKind::add, {grad[t], in_grads[k]});
            }
        }
    }
    if (received >= 0 && grad[static_cast<std::size_t>(received)] != kNoGrad) {
        const TensorId sent = grad[static_cast<std::size_t>(received)];
        const auto& outs = g.outputs();
        if (std::find(outs.begin(), outs.end(), sent) == outs.end()) g.mark_output(sent);
    }
    const OptimizerAttrs optimizer_attrs(opt);
    for (std::size_t t = 0; t < needs_grad.size(); ++t) {
        const Tensor& ten = g.tensors()[t];
        if (ten.role == TensorRole::parameter && needs_grad[t] && grad[t] != kNoGrad) {
            if (opt.optimizer == Optimizer::none) {
                // forward + backward only: the gradient is the step's result (.grad)
                const auto& outs = g.outputs();
                if (std::find(outs.begin(), outs.end(), grad[t]) == outs.end()) g.mark_output(grad[t]);
            } else {
                add_optimizer_step(g, static_cast<TensorId>(t), grad[t], opt, optimizer_attrs);
            }
        }
    }
#ifndef NDEBUG
    // Graph::add_node already inferred every node's outputs and checked names and order; the full
    // re-check (a sixth of a training step's construction) runs in debug builds, the sanitizer
    // build's tests among them.
    verify(g);
#endif
    return g;
}

void add_stand_in_loss(Graph& g) {
    const bool onnx = g.origin.size() >= 5 && g.origin.compare(g.origin.size() - 5, 5, ".onnx") == 0;
    if (!onnx || g.outputs().empty()) return;
    const Tensor& first = g.tensor(g.outputs().front());
    if (!is_floating(first.desc.dtype) || first.desc.rank() == 0) return;
    const TensorId in = g.outputs().front();
    const NodeId n = g.add_node("training.loss", OpKind::reduce_mean, {in}, {}, {});
    g.mark_output(g.node(n).outputs[0], true);
}

}  // namespace roofline
