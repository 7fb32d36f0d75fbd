#include "model/executor.hpp"

#include <cmath>

#include "model/deterministic.hpp"
#include "ops/error.hpp"

namespace roofline {

std::int64_t source_index_bound(const Graph& g, TensorId t) {
    std::int64_t bound = 2;
    for (NodeId n : g.consumers(t)) {
        const Node& node = g.node(n);
        if (node.inputs.size() < 2 || node.inputs[1] != t) continue;
        if (node.kind == OpKind::embedding) bound = g.tensor(node.inputs[0]).desc.shape[0];
        if (node.kind == OpKind::cross_entropy) bound = g.tensor(node.inputs[0]).desc.shape.back();
        if (node.kind == OpKind::gather) {  // below the length of the gathered axis
            const TensorDesc& data = g.tensor(node.inputs[0]).desc;
            bound = data.shape[static_cast<std::size_t>(normalize_axis(node.attrs.get_int("axis", 0), data.rank()))];
        }
    }
    return bound;
}

double source_scale(const Graph& g, TensorId t) {
    const Tensor& ten = g.tensor(t);
    if (ten.role != TensorRole::parameter || ten.desc.rank() < 2 || ten.desc.shape[0] == 0) return 1.0;
    const double fan_in = static_cast<double>(ten.desc.numel() / ten.desc.shape[0]);
    return fan_in > 0 ? std::sqrt(6.0 / fan_in) : 1.0;
}

HostTensor deterministic_value(const Graph& g, TensorId t, std::uint64_t seed) {
    const Tensor& ten = g.tensor(t);
    HostTensor h{ten.desc, std::vector<double>(static_cast<std::size_t>(ten.desc.numel()), 0.0)};
    if (ten.role == TensorRole::optimizer_state) return h;
    const bool index = !is_floating(ten.desc.dtype);
    const std::int64_t bound = index ? source_index_bound(g, t) : 0;
    const double scale = source_scale(g, t);
    const auto stream = static_cast<std::uint64_t>(t);
    for (std::size_t i = 0; i < h.data.size(); ++i)
        h.data[i] = index ? static_cast<double>(deterministic_index(seed, stream, i, bound))
                          : round_to(scale * deterministic_real(seed, stream, i), ten.desc.dtype);
    return h;
}

std::vector<HostTensor> execute(const Graph& g, const std::map<TensorId, HostTensor>& given, RefPrecision precision, std::uint64_t seed) {
    std::vector<HostTensor> values(g.tensors().size());
    for (std::size_t t = 0; t < g.tensors().size(); ++t) {
        const Tensor& ten = g.tensors()[t];
        if (ten.producer != kNoNode) continue;
        auto it = given.find(static_cast<TensorId>(t));
        values[t] = it != given.end() ? it->second : deterministic_value(g, static_cast<TensorId>(t), seed);
        if (values[t].desc.shape != ten.desc.shape) throw InputError("execute: value given for '" + ten.name + "' has the wrong shape");
    }
    for (NodeId n : g.topological_order()) {
        const Node& node = g.node(n);
        std::vector<const HostTensor*> in;
        for (TensorId t : node.inputs) in.push_back(&values[static_cast<std::size_t>(t)]);
        try {
            auto out = run_reference(node.kind, in, node.attrs, g.output_descs(n), precision);
            for (std::size_t i = 0; i < out.size(); ++i) values[static_cast<std::size_t>(node.outputs[i])] = std::move(out[i]);
        } catch (const InputError& e) {
            throw InputError("node '" + node.name + "': " + e.what());
        }
    }
    return values;
}

}  // namespace roofline
