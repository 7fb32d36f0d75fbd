#include "sim/fusion.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "ops/checked.hpp"
#include "ops/error.hpp"
#include "ops/op_rule.hpp"
#include "sim/schedule.hpp"

namespace roofline {

std::string_view fusion_kind_name(FusionKind k) {
    switch (k) {
        case FusionKind::elementwise: return "elementwise";
        case FusionKind::gemm: return "gemm";
        case FusionKind::reduction: return "reduction";
        case FusionKind::flash_attention: return "flash_attention";
        case FusionKind::flash_attention_backward: return "flash_attention_backward";
    }
    return "?";
}

namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / std::max<std::int64_t>(1, b); }

enum class Role { none, elementwise, reduction, matrix };

// The node's role in the attention pattern (OpTraits::fusion).
FusionRole fusion_role(const Graph& g, NodeId n) { return traits_of(g.node(n).kind).fusion; }

Role role_of(const Graph& g, NodeId n) {
    const Node& node = g.node(n);
    if (node.phase == Phase::optimizer) return Role::none;
    const Work w = g.work(n);
    if (w.flops() == 0 && w.bytes() == 0) return Role::none;  // views and other free ops
    switch (rule_of(node.kind).family) {
        case OpFamily::elementwise: return Role::elementwise;
        case OpFamily::normalization:
        case OpFamily::reduction:
        case OpFamily::loss: return Role::reduction;
        case OpFamily::matrix: return Role::matrix;
        default: return Role::none;
    }
}

struct Builder {
    const Graph& g;
    const FusionOptions& opt;
    std::vector<int> group_of;
    std::vector<FusionGroup> groups;
    std::vector<NodeId> first;  // per group: smallest node id (program position)
    std::vector<std::uint32_t> seen;
    std::uint32_t stamp = 0;

    Builder(const Graph& graph, const FusionOptions& o)
        : g(graph), opt(o), group_of(graph.nodes().size(), -1), seen(graph.nodes().size(), 0) {}

    // Whether node q (outside group gi) depends on a member of gi: then gi -> q -> gi would be a
    // cycle once a consumer of q joins gi. Dependencies are those of the contracted graph: a node
    // in another group waits for every input of that group, so the walk enters all its members.
    // Nodes before the group's first member are not expanded: exact for most graphs and fast; a
    // plan that is still cyclic (a path through an earlier node of a third group) is redone strictly.
    bool strict = false;  // no pruning by program position (find_fusion_groups' second try)
    bool reaches(NodeId q, int gi) {
        ++stamp;
        std::vector<NodeId> stack{q};
        while (!stack.empty()) {
            const NodeId x = stack.back();
            stack.pop_back();
            if (seen[static_cast<std::size_t>(x)] == stamp) continue;
            seen[static_cast<std::size_t>(x)] = stamp;
            const int h = group_of[static_cast<std::size_t>(x)];
            if (h == gi) return true;
            if (h >= 0)
                for (NodeId m : groups[static_cast<std::size_t>(h)].nodes)
                    if (seen[static_cast<std::size_t>(m)] != stamp) stack.push_back(m);
            if (!strict && x < first[static_cast<std::size_t>(gi)]) continue;
            for (TensorId t : g.node(x).inputs) {
                const NodeId p = g.tensor(t).producer;
                if (p != kNoNode) stack.push_back(p);
            }
        }
        return false;
    }

    bool legal(NodeId v, int gi) {
        if (g.node(groups[static_cast<std::size_t>(gi)].nodes.front()).phase != g.node(v).phase) return false;
        for (TensorId t : g.node(v).inputs) {
            const NodeId q = g.tensor(t).producer;
            if (q == kNoNode || group_of[static_cast<std::size_t>(q)] == gi) continue;
            if (reaches(q, gi)) return false;
        }
        return true;
    }

    void join(NodeId v, int gi) {
        groups[static_cast<std::size_t>(gi)].nodes.push_back(v);
        group_of[static_cast<std::size_t>(v)] = gi;
    }

    int start(NodeId v, FusionKind k, NodeId anchor) {
        FusionGroup grp;
        grp.kind = k;
        grp.anchor = anchor;
        grp.name = g.node(v).name;
        groups.push_back(std::move(grp));
        first.push_back(v);
        const int gi = static_cast<int>(groups.size()) - 1;
        join(v, gi);
        return gi;
    }

    std::int64_t out_numel(NodeId n) const { return g.tensor(g.node(n).outputs[0]).desc.numel(); }

    // Whether v may join group gi through input index `input`, and the group's kind after.
    std::optional<FusionKind> compatible(NodeId v, Role r, int gi, std::size_t input) const {
        const FusionGroup& grp = groups[static_cast<std::size_t>(gi)];
        switch (grp.kind) {
            case FusionKind::elementwise:
                if (r == Role::elementwise && opt.elementwise) return FusionKind::elementwise;
                if (r == Role::reduction && opt.reductions) return FusionKind::reduction;
                if (r == Role::matrix && opt.gemm_prologue && input < 2) return FusionKind::gemm;
                return std::nullopt;
            case FusionKind::gemm:
                if (r == Role::elementwise && opt.gemm_epilogue && out_numel(v) == out_numel(grp.anchor)) return FusionKind::gemm;
                return std::nullopt;
            case FusionKind::reduction:
                if (r == Role::elementwise && opt.reductions) return FusionKind::reduction;
                return std::nullopt;
            default: return std::nullopt;
        }
    }

    void greedy(NodeId v) {
        const Role r = role_of(g, v);
        if (r == Role::none || group_of[static_cast<std::size_t>(v)] >= 0) return;
        const Node& node = g.node(v);
        for (std::size_t i = 0; i < node.inputs.size(); ++i) {
            const NodeId q = g.tensor(node.inputs[i]).producer;
            if (q == kNoNode || group_of[static_cast<std::size_t>(q)] < 0) continue;
            const int gi = group_of[static_cast<std::size_t>(q)];
            const auto k = compatible(v, r, gi, i);
            if (!k || !legal(v, gi)) continue;
            FusionGroup& grp = groups[static_cast<std::size_t>(gi)];
            if (grp.kind == FusionKind::elementwise && *k != FusionKind::elementwise) {
                grp.anchor = v;
                grp.name = node.name;
            }
            grp.kind = *k;
            join(v, gi);
            return;
        }
        if (r == Role::elementwise)
            start(v, FusionKind::elementwise, v);
        else if (r == Role::reduction)
            start(v, FusionKind::reduction, v);
        else
            start(v, FusionKind::gemm, v);
    }
};

struct AttentionShape {
    std::int64_t heads = 1, sq = 0, sk = 0, d = 0, dv = 0, elt = 2;
    bool causal = false;
};

AttentionShape attention_shape(const Graph& g, const FusionGroup& grp) {
    AttentionShape s;
    std::vector<NodeId> mm;  // the forward matrix nodes: Q K^T and P V, or the composite
    for (NodeId n : grp.nodes) {
        const FusionRole role = fusion_role(g, n);
        if (role == FusionRole::gemm || role == FusionRole::attention) mm.push_back(n);
        if (role == FusionRole::causal_mask || g.node(n).attrs.get_bool("causal", false)) s.causal = true;
    }
    const Node& m1 = g.node(mm.front());
    const Node& m2 = g.node(mm.back());
    const Shape& q = g.tensor(m1.inputs[0]).desc.shape;
    const Shape& k = g.tensor(m1.inputs[1]).desc.shape;
    const Shape& v = g.tensor(m2.inputs[traits_of(m2.kind).fusion == FusionRole::attention ? 2 : 1]).desc.shape;
    s.sq = q[q.size() - 2];
    s.d = q.back();
    s.sk = k[k.size() - 2];
    s.dv = v.back();
    s.heads = g.tensor(m1.inputs[0]).desc.numel() / std::max<std::int64_t>(1, s.sq * s.d);
    s.elt = dtype_bytes(op_compute_dtype(g, mm.front()));
    return s;
}

double sram_of(const Hardware& hw, const FusionOptions& opt) {
    if (opt.flash_sram_bytes > 0) return opt.flash_sram_bytes;
    if (hw.gpu) return hw.gpu->max_shared_memory_per_block_bytes.value;
    const MemoryLevel* vmem = hw.find(MemoryRole::vector_memory);
    return (vmem != nullptr ? *vmem : hw.device_memory()).capacity_bytes.value;
}

void finish_group(const Graph& g, FusionGroup& grp, const std::vector<int>& group_of, int gi, std::vector<bool>& on_chip) {
    std::set<TensorId> reads;        // every external input (listed in the group)
    std::set<TensorId> loaded;       // read by the non-matrix members: each loaded once, shared in registers
    std::int64_t operand_bytes = 0;  // a GEMM's operands are read by its main loop, apart from the epilogue's reads
    std::vector<bool> is_output(g.tensors().size(), false);
    for (TensorId t : g.outputs()) is_output[static_cast<std::size_t>(t)] = true;
    grp.work = Work{};
    std::int64_t kernels = 0;
    for (NodeId n : grp.nodes) {
        const Work w = g.work(n);
        grp.work.matrix_flops += w.matrix_flops;
        grp.work.vector_flops += w.vector_flops;
        grp.work.transcendentals += w.transcendentals;
        grp.unfused_bytes = checked_add(grp.unfused_bytes, w.bytes(), "fusion bytes");
        if (w.flops() > 0 || w.bytes() > 0) ++kernels;
        const bool matrix = rule_of(g.node(n).kind).family == OpFamily::matrix;
        for (TensorId t : g.node(n).inputs) {
            const NodeId p = g.tensor(t).producer;
            if (p != kNoNode && group_of[static_cast<std::size_t>(p)] == gi) continue;
            if (matrix)
                operand_bytes += g.tensor(t).desc.bytes();
            else
                loaded.insert(t);
            reads.insert(t);
        }
        for (TensorId t : g.node(n).outputs) {
            bool outside = is_output[static_cast<std::size_t>(t)];
            for (NodeId c : g.consumers(t)) outside = outside || group_of[static_cast<std::size_t>(c)] != gi;
            if (outside)
                grp.writes.push_back(t);
            else {
                grp.on_chip.push_back(t);
                on_chip[static_cast<std::size_t>(t)] = true;
            }
        }
    }
    grp.reads.assign(reads.begin(), reads.end());
    grp.work.bytes_read = operand_bytes;
    for (TensorId t : loaded) grp.work.bytes_read += g.tensor(t).desc.bytes();
    for (TensorId t : grp.writes) grp.work.bytes_written += g.tensor(t).desc.bytes();
    for (TensorId t : grp.on_chip) grp.intermediate_bytes += g.tensor(t).desc.bytes();
    grp.launches_saved = std::max<std::int64_t>(0, kernels - 1);
}

}  // namespace

namespace {

// Outer-loop iterations of the tiled algorithm: key/value blocks of Bc = ceil(M / 4d) rows (M:
// on-chip memory in elements, Dao et al. 2022, Algorithm 1); with a causal mask the blocks above
// the diagonal are skipped, about half of the inner iterations.
double flash_passes(std::int64_t sk, std::int64_t d, std::int64_t elt, double sram_bytes, bool causal) {
    const auto m = static_cast<std::int64_t>(sram_bytes) / std::max<std::int64_t>(1, elt);
    const std::int64_t bc = std::max<std::int64_t>(1, ceil_div(m, 4 * d));
    const std::int64_t tc = ceil_div(sk, bc);
    return causal ? static_cast<double>(tc + 1) / 2.0 : static_cast<double>(tc);
}

}  // namespace

std::int64_t flash_forward_bytes(std::int64_t heads, std::int64_t sq, std::int64_t sk, std::int64_t d, std::int64_t dv, std::int64_t elt,
                                 double sram_bytes, bool causal) {
    // Dao et al. 2022, Algorithm 1 and Theorem 2: blocks of Bc = ceil(M / 4d) keys and values
    // (M: on-chip memory in elements); the outer loop loads each K_j, V_j once, the inner loop
    // streams every Q_i and reads and writes O_i and the row statistics (l_i, m_i, fp32) once per
    // outer iteration: Theta(N^2 d^2 / M) accesses. With a causal mask the blocks above the
    // diagonal are skipped, about half of the inner iterations.
    // The first outer iteration reads no O, l or m (they start on chip; Algorithm 1 initialises them
    // in HBM only to read them back): one O read and one l, m read fewer, so that a one-pass kernel
    // moves Q, K, V in and O, l, m out, never more than the materialised attention.
    const double passes = flash_passes(sk, d, elt, sram_bytes, causal);
    const double e = static_cast<double>(elt);
    const double per_head =
        static_cast<double>(sk * (d + dv)) * e                                             // K, V
        + passes * static_cast<double>(sq) * (static_cast<double>(d + 2 * dv) * e + 16.0)  // Q; O read+write; l, m read+write
        - static_cast<double>(sq) * (static_cast<double>(dv) * e + 8.0);                   // but the first reads of O, l, m
    return static_cast<std::int64_t>(static_cast<double>(heads) * per_head);
}

std::int64_t flash_backward_bytes(std::int64_t heads, std::int64_t sq, std::int64_t sk, std::int64_t d, std::int64_t dv, std::int64_t elt,
                                  double sram_bytes, bool causal) {
    // Dao et al. 2022, Algorithm 4 (backward): the outer loop keeps K_j, V_j and their gradients
    // on chip (read once, dK_j and dV_j written once); the inner loop reads Q_i, O_i, dO_i, dQ_i
    // and l_i, m_i and writes dQ_i once per outer iteration, recomputing the probabilities.
    const double passes = flash_passes(sk, d, elt, sram_bytes, causal);
    const double e = static_cast<double>(elt);
    const double per_head = 2.0 * static_cast<double>(sk * (d + dv)) * e                                          // K, V in; dK, dV out
                            + passes * static_cast<double>(sq) * (static_cast<double>(3 * d + 2 * dv) * e + 8.0)  // Q, dQ r/w; O, dO; l, m
                            - static_cast<double>(sq * d) * e;  // dQ starts on chip: the first iteration reads none
    return static_cast<std::int64_t>(static_cast<double>(heads) * per_head);
}

std::vector<NodeId> attention_core(const Graph& g, NodeId softmax) {
    std::vector<NodeId> up;
    NodeId p = g.tensor(g.node(softmax).inputs[0]).producer;
    while (p != kNoNode && (fusion_role(g, p) == FusionRole::scale || fusion_role(g, p) == FusionRole::causal_mask)) {
        up.push_back(p);
        p = g.tensor(g.node(p).inputs[0]).producer;
    }
    // Attention's keys and values are per sequence (batched like the queries); a GEMM against a
    // weight shared across the batch is a linear layer, whose operand a flash kernel does not stream.
    const auto batched_like_a = [&](NodeId mm) {
        const Shape& a = g.tensor(g.node(mm).inputs[0]).desc.shape;
        const Shape& b = g.tensor(g.node(mm).inputs[1]).desc.shape;
        return a.size() >= 3 && b.size() == a.size() && std::equal(a.begin(), a.end() - 2, b.begin());
    };
    if (p == kNoNode || fusion_role(g, p) != FusionRole::gemm || g.node(p).phase != Phase::forward || !batched_like_a(p)) return {};
    up.push_back(p);
    std::vector<NodeId> chain(up.rbegin(), up.rend());
    chain.push_back(softmax);
    TensorId probs = g.node(softmax).outputs[0];
    auto forward_consumers = [&](TensorId t) {
        std::vector<NodeId> c;
        for (NodeId n : g.consumers(t)) {
            if (g.node(n).phase == Phase::forward) c.push_back(n);
        }
        return c;
    };
    auto fc = forward_consumers(probs);
    if (fc.size() == 1 && fusion_role(g, fc[0]) == FusionRole::dropout) {
        chain.push_back(fc[0]);
        probs = g.node(fc[0]).outputs[0];
        fc = forward_consumers(probs);
    }
    if (fc.size() != 1 || fusion_role(g, fc[0]) != FusionRole::gemm || g.node(fc[0]).inputs[0] != probs) return {};
    if (g.node(fc[0]).attrs.get_bool("transpose_a", false) || !batched_like_a(fc[0])) return {};
    chain.push_back(fc[0]);
    for (std::size_t i = 0; i + 1 < chain.size(); ++i) {
        for (TensorId t : g.node(chain[i]).outputs) {
            for (NodeId c : forward_consumers(t)) {
                if (std::find(chain.begin(), chain.end(), c) == chain.end()) return {};
            }
        }
    }
    return chain;
}

namespace {

FusionPlan find_groups(const Graph& g, const Hardware& hw, const FusionOptions& opt, bool strict);

}  // namespace

std::vector<NodeId> attention_cores(const Graph& g) {
    std::vector<NodeId> out;
    for (NodeId n : g.topological_order()) {
        if (g.node(n).phase != Phase::forward) continue;
        const FusionRole role = fusion_role(g, n);
        if (role == FusionRole::attention || (role == FusionRole::softmax && !attention_core(g, n).empty())) out.push_back(n);
    }
    return out;
}

FusionPlan find_fusion_groups(const Graph& g, const Hardware& hw, const FusionOptions& opt) {
    FusionPlan plan = find_groups(g, hw, opt, false);
    try {
        std::vector<NodeId> flat;
        std::vector<std::size_t> offsets;
        contracted_order(g, &plan.group_of, flat, offsets);
    } catch (const InputError&) {  // the contracted graph has a cycle: group again, walking every dependency
        plan = find_groups(g, hw, opt, true);
    }
    return plan;
}

namespace {

FusionPlan find_groups(const Graph& g, const Hardware& hw, const FusionOptions& opt, bool strict) {
    Builder b(g, opt);
    b.strict = strict;
    std::vector<std::pair<int, int>> flash_pairs;  // forward group, backward group (-1: none)
    if (opt.flash_attention) {
        for (NodeId n : g.topological_order()) {
            const Node& node = g.node(n);
            if (node.phase != Phase::forward || b.group_of[static_cast<std::size_t>(n)] >= 0) continue;
            std::vector<NodeId> core;
            if (fusion_role(g, n) == FusionRole::attention)
                core = {n};
            else if (fusion_role(g, n) == FusionRole::softmax)
                core = attention_core(g, n);
            if (core.empty()) continue;
            // A flash kernel only where it moves fewer bytes than the materialised attention: with
            // few keys and a wide head its re-reads of Q and O cost more than the scores it saves.
            // Not a choice where the attention must run fused (FusionOptions::flash_always: ring
            // attention's online softmax).
            FusionGroup probe;
            probe.nodes = core;
            const AttentionShape shape = attention_shape(g, probe);
            std::int64_t materialised = 0;
            for (NodeId c : core) materialised += g.work(c).bytes();
            if (!opt.flash_always && flash_forward_bytes(shape.heads, shape.sq, shape.sk, shape.d, shape.dv, shape.elt, sram_of(hw, opt),
                                                         shape.causal) > materialised)
                continue;
            const int fi = b.start(core.front(), FusionKind::flash_attention, core.back());
            for (std::size_t i = 1; i < core.size(); ++i) b.join(core[i], fi);
            b.groups[static_cast<std::size_t>(fi)].name = g.node(core.back()).name;
            flash_pairs.push_back({fi, -1});
        }
        // Backward: the gradient nodes of each core (and recomputed clones of it), if they can
        // form one kernel. One pass sorts the backward nodes by the forward group they differentiate.
        std::vector<std::vector<NodeId>> backward_of(b.groups.size());
        for (NodeId n : g.topological_order()) {
            const Node& node = g.node(n);
            if (node.phase != Phase::backward || b.group_of[static_cast<std::size_t>(n)] >= 0) continue;
            const NodeId src = node.differentiates != kNoNode ? node.differentiates : node.recomputes;
            const int from = src != kNoNode ? b.group_of[static_cast<std::size_t>(src)] : -1;
            if (from >= 0) backward_of[static_cast<std::size_t>(from)].push_back(n);
        }
        for (auto& [fi, bi] : flash_pairs) {
            const std::vector<NodeId>& members = backward_of[static_cast<std::size_t>(fi)];
            if (members.empty()) continue;
            const int gi = b.start(members.front(), FusionKind::flash_attention_backward, members.back());
            bool ok = true;
            for (std::size_t i = 1; i < members.size() && ok; ++i) {
                ok = b.legal(members[i], gi);
                if (ok) b.join(members[i], gi);
            }
            b.groups[static_cast<std::size_t>(gi)].name = b.groups[static_cast<std::size_t>(fi)].name + ".backward";
            if (ok && !opt.flash_always) {  // and the backward kernel only where it moves fewer bytes than its members
                const AttentionShape shape = attention_shape(g, b.groups[static_cast<std::size_t>(fi)]);
                std::int64_t materialised = 0;
                for (NodeId n : b.groups[static_cast<std::size_t>(gi)].nodes) materialised += g.work(n).bytes();
                ok = flash_backward_bytes(shape.heads, shape.sq, shape.sk, shape.d, shape.dv, shape.elt, sram_of(hw, opt), shape.causal) <=
                     materialised;
            }
            if (!ok) {
                for (NodeId n : b.groups[static_cast<std::size_t>(gi)].nodes) b.group_of[static_cast<std::size_t>(n)] = -1;
                b.groups[static_cast<std::size_t>(gi)].nodes.clear();
                continue;
            }
            bi = gi;
        }
    }
    for (NodeId n : g.topological_order()) b.greedy(n);

    // Keep groups of two or more nodes (flash kernels always); renumber.
    FusionPlan plan;
    plan.group_of.assign(g.nodes().size(), -1);
    plan.on_chip.assign(g.tensors().size(), false);
    std::vector<int> renumber(b.groups.size(), -1);
    for (std::size_t i = 0; i < b.groups.size(); ++i) {
        FusionGroup& grp = b.groups[i];
        const bool flash = grp.kind == FusionKind::flash_attention || grp.kind == FusionKind::flash_attention_backward;
        if (grp.nodes.empty() || (grp.nodes.size() < 2 && !flash)) continue;
        renumber[i] = static_cast<int>(plan.groups.size());
        for (NodeId n : grp.nodes) plan.group_of[static_cast<std::size_t>(n)] = renumber[i];
        plan.groups.push_back(std::move(grp));
    }
    for (std::size_t i = 0; i < plan.groups.size(); ++i) finish_group(g, plan.groups[i], plan.group_of, static_cast<int>(i), plan.on_chip);
    // Flash pairs: what the forward kernel keeps for its backward is only what the backward
    // group reads (Q, K, V, O) plus the row statistics; the probabilities are recomputed on chip.
    const double sram = sram_of(hw, opt);
    for (const auto& [fi, bi] : flash_pairs) {
        if (renumber[static_cast<std::size_t>(fi)] < 0) continue;
        FusionGroup& fwd = plan.groups[static_cast<std::size_t>(renumber[static_cast<std::size_t>(fi)])];
        const int bwd_index = bi >= 0 ? renumber[static_cast<std::size_t>(bi)] : -1;
        const int fwd_index = renumber[static_cast<std::size_t>(fi)];
        const AttentionShape s = attention_shape(g, fwd);
        if (bwd_index >= 0) {
            FusionGroup& bwd = plan.groups[static_cast<std::size_t>(bwd_index)];
            // Forward tensors only the pair reads stay on chip.
            std::vector<TensorId> still_written;
            for (TensorId t : fwd.writes) {
                bool pair_only = true;
                for (NodeId c : g.consumers(t)) {
                    const int gc = plan.group_of[static_cast<std::size_t>(c)];
                    pair_only = pair_only && (gc == fwd_index || gc == bwd_index);
                }
                if (pair_only && t != g.node(fwd.anchor).outputs[0]) {
                    fwd.on_chip.push_back(t);
                    fwd.intermediate_bytes += g.tensor(t).desc.bytes();
                    plan.on_chip[static_cast<std::size_t>(t)] = true;
                } else {
                    still_written.push_back(t);
                }
            }
            fwd.writes = still_written;
            // The backward kernel recomputes S and P: the forward core's FLOPs except P V.
            for (NodeId n : fwd.nodes) {
                const bool composite = fusion_role(g, n) == FusionRole::attention;
                if (n == fwd.anchor && !composite) continue;
                const Work w = g.work(n);
                bwd.work.matrix_flops += composite ? w.matrix_flops / 2 : w.matrix_flops;
                bwd.work.vector_flops += w.vector_flops;
                bwd.work.transcendentals += w.transcendentals;
            }
            const std::int64_t bytes = flash_backward_bytes(s.heads, s.sq, s.sk, s.d, s.dv, s.elt, sram, s.causal);
            bwd.work.bytes_read = bytes * 2 / 3;
            bwd.work.bytes_written = bytes - bwd.work.bytes_read;
        }
        const std::int64_t bytes = flash_forward_bytes(s.heads, s.sq, s.sk, s.d, s.dv, s.elt, sram, s.causal);
        fwd.work.bytes_written = s.heads * s.sq * (s.dv * s.elt + 8);
        fwd.work.bytes_read = bytes - fwd.work.bytes_written;
        if (fwd.kind == FusionKind::flash_attention && s.causal) {
            // Blocks above the diagonal are skipped: about half the QK^T and PV work.
            fwd.work.matrix_flops /= 2;
        }
    }
    return plan;
}

}  // namespace

Kernel fused_kernel(const Graph& g, const FusionGroup& grp, const Hardware& hw, const GpuModelOptions& opt) {
    if (grp.kind == FusionKind::flash_attention || grp.kind == FusionKind::flash_attention_backward) {
        // One block of 128 threads (4 warps) per Br rows of Q and head, the Q tile and a K/V tile
        // in shared memory (FlashAttention-2's forward launch on sm_80/sm_90).
        NodeId ref = grp.anchor;
        for (NodeId n : grp.nodes) {
            if (fusion_role(g, n) == FusionRole::gemm || fusion_role(g, n) == FusionRole::attention) {
                ref = n;
                break;
            }
        }
        const DType d = op_compute_dtype(g, ref);
        Kernel k;
        k.name = grp.name;
        k.node = grp.anchor;
        k.work = grp.work;
        k.dtype = d;
        k.tensor_cores = hw.matrix_flop_per_s.count(d) != 0;
        const Shape& q = g.tensor(g.node(ref).inputs[0]).desc.shape;
        const std::int64_t sq = q.size() >= 2 ? q[q.size() - 2] : 1, dh = q.empty() ? 1 : q.back();
        const std::int64_t heads = g.tensor(g.node(ref).inputs[0]).desc.numel() / std::max<std::int64_t>(1, sq * dh);
        const std::int64_t br = 128;
        const auto max_smem = hw.gpu ? static_cast<std::int64_t>(hw.gpu->max_shared_memory_per_block_bytes.value) : 0;
        k.launch = LaunchConfig{128, 255, std::min(max_smem, 3 * br * dh * dtype_bytes(d))};
        k.blocks = std::max<std::int64_t>(1, heads * ceil_div(sq, br));
        return k;
    }
    // Elementwise groups stream their largest tensor; the others run as their anchor's kernel.
    NodeId anchor = grp.anchor;
    if (grp.kind == FusionKind::elementwise) {
        std::int64_t best = -1;
        for (NodeId n : grp.nodes) {
            const std::int64_t e = g.tensor(g.node(n).outputs[0]).desc.numel();
            if (e > best) {
                best = e;
                anchor = n;
            }
        }
    }
    std::optional<Kernel> k = lower_to_kernel(g, anchor, hw, opt);
    if (!k) throw InputError(g.node(anchor).name + ": a fusion group's anchor lowers to no kernel");
    k->work = grp.work;
    k->name = grp.name;
    return *k;
}

}  // namespace roofline
