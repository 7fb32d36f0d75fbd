#include "sim/fused_reference.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "model/executor.hpp"
#include "ops/error.hpp"
#include "ops/op_rule.hpp"
#include "ops/pointwise_math.hpp"
#include "sim/schedule.hpp"

namespace roofline {

HostTensor flash_attention_reference(const HostTensor& q, const HostTensor& k, const HostTensor& v, double scale, bool causal,
                                     double dropout_p, std::int64_t block_k) {
    const Shape& qs = q.desc.shape;
    const std::int64_t sq = qs[qs.size() - 2], d = qs.back();
    const std::int64_t sk = k.desc.shape[k.desc.shape.size() - 2], dv = v.desc.shape.back();
    const std::int64_t heads = q.desc.numel() / std::max<std::int64_t>(1, sq * d);
    Shape os = qs;
    os.back() = dv;
    HostTensor o{TensorDesc{os, q.desc.dtype}, std::vector<double>(static_cast<std::size_t>(heads * sq * dv), 0.0)};
    const double keep_scale = dropout_p > 0 ? 1.0 / (1.0 - dropout_p) : 1.0;
    const double neg_inf = -std::numeric_limits<double>::infinity();
    std::vector<double> acc(static_cast<std::size_t>(dv));
    for (std::int64_t h = 0; h < heads; ++h) {
        for (std::int64_t i = 0; i < sq; ++i) {
            const double* qi = &q.data[static_cast<std::size_t>((h * sq + i) * d)];
            double m = neg_inf, l = 0;
            std::fill(acc.begin(), acc.end(), 0.0);
            for (std::int64_t j0 = 0; j0 < sk; j0 += block_k) {  // one K/V block on chip at a time
                const std::int64_t j1 = std::min(sk, j0 + block_k);
                std::vector<double> s(static_cast<std::size_t>(j1 - j0), neg_inf);
                double block_max = neg_inf;
                for (std::int64_t j = j0; j < j1; ++j) {
                    if (causal && j > i) continue;
                    const double* kj = &k.data[static_cast<std::size_t>((h * sk + j) * d)];
                    double dot = 0;
                    for (std::int64_t x = 0; x < d; ++x) dot += qi[x] * kj[x];
                    s[static_cast<std::size_t>(j - j0)] = scale * dot;
                    block_max = std::max(block_max, scale * dot);
                }
                if (block_max == neg_inf) continue;
                // Online softmax: rescale what was accumulated to the new running maximum.
                const double m_new = std::max(m, block_max);
                const double correction = m == neg_inf ? 0.0 : std::exp(m - m_new);
                l *= correction;
                for (double& a : acc) a *= correction;
                for (std::int64_t j = j0; j < j1; ++j) {
                    const double sj = s[static_cast<std::size_t>(j - j0)];
                    if (sj == neg_inf) continue;
                    const double p = std::exp(sj - m_new);
                    l += p;
                    double w = p;
                    if (dropout_p > 0) w = dropout_keep((h * sq + i) * sk + j, dropout_p) ? p * keep_scale : 0.0;
                    const double* vj = &v.data[static_cast<std::size_t>((h * sk + j) * dv)];
                    for (std::int64_t x = 0; x < dv; ++x) acc[static_cast<std::size_t>(x)] += w * vj[x];
                }
                m = m_new;
            }
            double* oi = &o.data[static_cast<std::size_t>((h * sq + i) * dv)];
            for (std::int64_t x = 0; x < dv; ++x) oi[x] = l > 0 ? acc[static_cast<std::size_t>(x)] / l : 0.0;
        }
    }
    return o;
}

namespace {

struct FlashArgs {
    TensorId q = -1, k = -1, v = -1;
    double scale = 1;
    bool causal = false;
    double dropout = 0;
};

FlashArgs flash_args(const Graph& g, const FusionGroup& grp) {
    FlashArgs f;
    const Node& anchor = g.node(grp.anchor);
    if (traits_of(anchor.kind).fusion == FusionRole::attention) {
        f.q = anchor.inputs[0];
        f.k = anchor.inputs[1];
        f.v = anchor.inputs[2];
        f.scale = anchor.attrs.get_double("scale", 1.0 / std::sqrt(static_cast<double>(g.tensor(f.q).desc.shape.back())));
        f.causal = anchor.attrs.get_bool("causal", false);
        return f;
    }
    const Node& m1 = g.node(grp.nodes.front());
    if (!m1.attrs.get_bool("transpose_b", false) || m1.attrs.get_bool("transpose_a", false)) {
        throw InputError(m1.name + ": the flash reference expects Q K^T as matmul(q, k, transpose_b)");
    }
    f.q = m1.inputs[0];
    f.k = m1.inputs[1];
    f.v = anchor.inputs[1];
    for (NodeId n : grp.nodes) {
        const Node& node = g.node(n);
        const FusionRole role = traits_of(node.kind).fusion;
        if (role == FusionRole::scale) f.scale *= node.attrs.get_double("factor", 1.0);
        if (role == FusionRole::causal_mask) f.causal = true;
        if (role == FusionRole::dropout) f.dropout = node.attrs.get_double("p", 0.1);
    }
    return f;
}

}  // namespace

std::vector<HostTensor> execute_fused(const Graph& g, const FusionPlan& plan, const std::map<TensorId, HostTensor>& given,
                                      RefPrecision precision, std::uint64_t seed) {
    const std::size_t nt = g.tensors().size();
    std::vector<HostTensor> values(nt);
    std::vector<bool> ready(nt, false);
    for (std::size_t t = 0; t < nt; ++t) {
        const Tensor& ten = g.tensors()[t];
        values[t].desc = ten.desc;
        if (ten.producer != kNoNode) continue;
        auto it = given.find(static_cast<TensorId>(t));
        values[t] = it != given.end() ? it->second : deterministic_value(g, static_cast<TensorId>(t), seed);
        ready[t] = true;
    }
    std::vector<NodeId> flat;
    std::vector<std::size_t> offsets;
    contracted_order(g, &plan.group_of, flat, offsets);
    for (std::size_t u = 0; u + 1 < offsets.size(); ++u) {
        const NodeId first = flat[offsets[u]];
        const int gi = plan.group_of[static_cast<std::size_t>(first)];
        const FusionGroup* grp = gi >= 0 ? &plan.groups[static_cast<std::size_t>(gi)] : nullptr;
        std::map<TensorId, HostTensor> local;  // this unit's tensors (on-chip ones die with it)
        std::function<const HostTensor&(TensorId)> get;
        auto run = [&](NodeId n) {
            const Node& node = g.node(n);
            std::vector<const HostTensor*> in;
            for (TensorId t : node.inputs) in.push_back(&get(t));
            try {
                auto out = run_reference(node.kind, in, node.attrs, g.output_descs(n), precision);
                for (std::size_t i = 0; i < out.size(); ++i) local[node.outputs[i]] = std::move(out[i]);
            } catch (const InputError& e) {
                throw InputError("node '" + node.name + "': " + e.what());
            }
        };
        get = [&](TensorId t) -> const HostTensor& {
            if (ready[static_cast<std::size_t>(t)]) return values[static_cast<std::size_t>(t)];
            auto it = local.find(t);
            if (it != local.end()) return it->second;
            // Only a flash backward kernel may recompute what its forward kept on chip.
            if (grp != nullptr && grp->kind == FusionKind::flash_attention_backward && plan.on_chip[static_cast<std::size_t>(t)]) {
                run(g.tensor(t).producer);
                return local.at(t);
            }
            throw InputError("fused execution: '" + g.tensor(t).name + "' is read by node '" + g.node(first).name +
                             "' but was kept on chip by another fused kernel");
        };
        if (grp != nullptr && grp->kind == FusionKind::flash_attention) {
            const FlashArgs f = flash_args(g, *grp);
            // Outputs other than O that something outside reads are produced the plain way.
            bool others = false;
            for (TensorId t : grp->writes) others = others || t != g.node(grp->anchor).outputs[0];
            if (others) {
                for (std::size_t i = offsets[u]; i < offsets[u + 1]; ++i) run(flat[i]);
            }
            local[g.node(grp->anchor).outputs[0]] =
                flash_attention_reference(get(f.q), get(f.k), get(f.v), f.scale, f.causal, f.dropout, 64);
        } else {
            for (std::size_t i = offsets[u]; i < offsets[u + 1]; ++i) run(flat[i]);
        }
        for (std::size_t i = offsets[u]; i < offsets[u + 1]; ++i) {
            for (TensorId t : g.node(flat[i]).outputs) {
                if (plan.on_chip[static_cast<std::size_t>(t)]) continue;
                values[static_cast<std::size_t>(t)] = std::move(local.at(t));
                ready[static_cast<std::size_t>(t)] = true;
            }
        }
    }
    return values;
}

}  // namespace roofline
