#include "sim/parallel.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <fmt/format.h>

#include "ops/error.hpp"
#include "ops/op_rule.hpp"
#include "sim/roofline.hpp"

namespace roofline {

namespace {

// ZeRO's per-rank share of each memory category (Rajbhandari et al., SC20, section 5): stage 1
// partitions the optimizer state, stage 2 also the gradients, stage 3 also the parameters.
double shard_of(MemoryCategory c, int zero, int dp) {
    const double part = 1.0 / dp;
    switch (c) {
        case MemoryCategory::optimizer_state: return zero >= 1 ? part : 1.0;
        case MemoryCategory::gradients: return zero >= 2 ? part : 1.0;
        case MemoryCategory::weights: return zero >= 3 ? part : 1.0;
        default: return 1.0;
    }
}

struct Gradient {
    double ready_s = 0;
    std::int64_t bytes = 0;
    bool expert = false;  // of an expert's weight: reduced over the ranks that hold that expert
};

}  // namespace

ParallelAnalysis analyze_parallel(const Graph& g, const Analysis& a, const Cluster& cluster, const ParallelOptions& opt) {
    if (opt.dp < 1) throw InputError("--dp: expected a positive number of data-parallel ranks, got " + std::to_string(opt.dp));
    if (opt.zero < 0 || opt.zero > 3) throw InputError("--zero: expected a ZeRO stage 0, 1, 2 or 3, got " + std::to_string(opt.zero));
    const long long most = cluster.max_devices();
    if (most > 0 && opt.dp > most) throw InputError(fmt::format("--dp {}: {} holds at most {} devices", opt.dp, cluster.name, most));
    if (!(opt.bucket_bytes > 0)) throw InputError("--bucket-mb: expected a positive bucket size");

    ParallelAnalysis r;
    r.options = opt;
    r.cluster = cluster.name;
    r.tp = g.tensor_parallel.degree;
    r.cp = g.context_parallel.degree;
    const int node = cluster.gpus_per_node();
    r.pp = g.pipeline.stages;
    r.devices = r.tp * r.cp * r.pp * opt.dp;
    const std::string ranks = r.cp > 1
                                  ? fmt::format("--tp {} x --cp {} x --pp {} x --dp {} = {} devices", r.tp, r.cp, r.pp, opt.dp, r.devices)
                                  : fmt::format("--tp {} x --pp {} x --dp {} = {} devices", r.tp, r.pp, opt.dp, r.devices);
    if (most > 0 && r.devices > most) throw InputError(fmt::format("{}: {} holds at most {}", ranks, cluster.name, most));
    r.nodes = (r.devices + node - 1) / node;
    if (cluster.torus) {  // a TPU job is a slice of the torus
        try {
            (void)torus_shape(cluster, r.devices);
        } catch (const InputError& e) {
            throw InputError(fmt::format("{}: {}", ranks, e.what()));
        }
    }
    // Placement (Megatron's rank order): a tensor-parallel group fills a node first, then the
    // context-parallel ranks, node / tp to a node; the gradients are reduced over the data- and
    // context-parallel ranks together (they hold the same weights), node / tp of them to a node.
    const CommGroup tp_group{r.tp, std::min(r.tp, node)};
    const int per_node = std::max(1, node / std::max(1, r.tp));
    const CommGroup cp_group{r.cp, std::min(r.cp, per_node)};
    const int reducers = opt.dp * r.cp;
    const CommGroup group{reducers, std::min(reducers, per_node)};
    // Expert parallelism: a group of data-parallel ranks (consecutive, after tp and cp).
    r.ep = g.expert_parallel.degree;
    if (r.ep > 1 && opt.dp % r.ep != 0)
        throw InputError(fmt::format("--ep {}: the expert-parallel ranks are data-parallel ranks; it must divide --dp {}", r.ep, opt.dp));
    const int ep_per_node = std::max(1, per_node / std::max(1, r.cp));
    const CommGroup ep_group{r.ep, std::min(r.ep, ep_per_node)};

    // When each op ends on the compute stream, and which phase it belongs to.
    std::vector<double> end_of(g.nodes().size(), 0.0);
    for (const ScheduledOp& s : a.schedule.ops) end_of[static_cast<std::size_t>(s.node)] = s.end_s;
    double forward_end = 0, backward_end = 0, optimizer_s = 0;
    bool has_optimizer = false;
    for (const ScheduledOp& s : a.schedule.ops) {
        const Phase ph = g.node(s.node).phase;
        if (ph == Phase::optimizer) {
            optimizer_s += s.end_s - s.start_s;
            has_optimizer = true;
        } else {
            backward_end = std::max(backward_end, s.end_s);
            if (ph == Phase::forward) forward_end = std::max(forward_end, s.end_s);
        }
    }
    // The optimizer phase as scheduled: its kernels and the host's issue gaps between them (a
    // phase of many small updates is issue-bound).
    if (has_optimizer) optimizer_s = std::max(optimizer_s, a.schedule.step_time_s - backward_end);
    if (opt.zero > 0 && !has_optimizer)
        throw InputError("--zero " + std::to_string(opt.zero) + ": the step has no optimizer to shard (--mode training with an optimizer)");
    const auto batch_dim = g.dims.find("batch");
    if (opt.global_batch > 0) {
        if (batch_dim == g.dims.end()) throw InputError("--global-batch: the model has no batch dimension to accumulate over");
        const std::int64_t per_pass = batch_dim->second * opt.dp;
        if (opt.global_batch % per_pass != 0)
            throw InputError(fmt::format("--global-batch {}: not a multiple of --batch {} x --dp {} = {}", opt.global_batch,
                                         batch_dim->second, opt.dp, per_pass));
        r.micro_batches = static_cast<int>(opt.global_batch / per_pass);
    }
    const int K = r.micro_batches;

    // Tensor-parallel all-reduces: after each named node in forward, and once for its gradient in
    // backward (Megatron's f and g operators: 2 + 2 per transformer layer). They block the compute
    // stream, so every later op moves by their time; `shifted` maps a single-device time to it.
    std::vector<std::pair<double, double>> tp_events;  // (single-device time, duration)
    std::vector<double> grad_end(g.nodes().size(), -1.0);
    for (const ScheduledOp& s : a.schedule.ops) {
        const NodeId d = g.node(s.node).differentiates;
        if (d != kNoNode) grad_end[static_cast<std::size_t>(d)] = std::max(grad_end[static_cast<std::size_t>(d)], s.end_s);
    }
    // Blocking collectives of a node's output on the compute stream's critical path: `forward` after
    // the node, `backward` after its gradient; their time and count go to *comm and *count.
    //   context parallelism: the keys and values all-gathered forward, their gradients
    //     reduce-scattered backward (all-gather CP does not overlap them; Megatron's ring variant
    //     would hide part of it behind attention);
    //   expert parallelism: the token copies' all-to-all to their experts' ranks and the outputs'
    //     back, forward and for their gradients backward (Megatron-LM's MoE dispatcher without overlap).
    const auto blocking = [&](const std::vector<std::string>& names, Collective forward, Collective backward, CommGroup among, double* comm,
                              int* count) {
        if (among.ranks < 2) return;
        for (const std::string& name : names) {
            const NodeId n = g.find_node(name);
            if (n == kNoNode) continue;
            const double bytes = static_cast<double>(g.tensor(g.node(n).outputs.front()).desc.bytes());
            const auto at = static_cast<std::size_t>(n);
            for (const auto& [when, coll] : {std::pair{end_of[at], forward}, std::pair{grad_end[at], backward}}) {
                if (when < 0) continue;  // no gradient of it (inference)
                const double t = collective_cost(cluster, coll, bytes, among).time_s;
                tp_events.push_back({when, t});
                *comm += t;
                ++*count;
            }
        }
    };
    blocking(g.context_parallel.all_gather, Collective::all_gather, Collective::reduce_scatter, cp_group, &r.cp_comm_s, &r.cp_collectives);
    blocking(g.expert_parallel.all_to_all, Collective::all_to_all, Collective::all_to_all, ep_group, &r.ep_comm_s, &r.ep_collectives);
    if (r.tp > 1) {
        // All-reduces after a node forward and of its gradient backward; with sequence parallelism
        // an all-gather of a node's output (reduce-scatter backward) and a reduce-scatter of its
        // input (all-gather backward), each of the full tensor: the same bytes a rank sends as the
        // all-reduce they replace, in two halves (Korthikanti et al. 2022, section 4.2.2).
        struct Kind {
            const std::vector<std::string>* names;
            Collective forward, backward;
            bool input;  // the tensor is the node's input (reduce-scatter), else its output
        };
        const Kind kinds[] = {{&g.tensor_parallel.all_reduce, Collective::all_reduce, Collective::all_reduce, false},
                              {&g.tensor_parallel.all_gather, Collective::all_gather, Collective::reduce_scatter, false},
                              {&g.tensor_parallel.reduce_scatter, Collective::reduce_scatter, Collective::all_gather, true}};
        for (const Kind& kind : kinds) {
            for (const std::string& name : *kind.names) {
                const NodeId n = g.find_node(name);
                if (n == kNoNode) continue;  // removed by the build (e.g. a dropout in evaluation mode)
                const Node& at = g.node(n);
                const double bytes = static_cast<double>(g.tensor(kind.input ? at.inputs.front() : at.outputs.front()).desc.bytes());
                const CollectiveCost k = collective_cost(cluster, kind.forward, bytes, tp_group);
                if (r.tp_collectives == 0) r.tp_example = k;
                tp_events.push_back({end_of[static_cast<std::size_t>(n)], k.time_s});
                ++r.tp_collectives;
                if (grad_end[static_cast<std::size_t>(n)] >= 0) {
                    tp_events.push_back(
                        {grad_end[static_cast<std::size_t>(n)], collective_cost(cluster, kind.backward, bytes, tp_group).time_s});
                    ++r.tp_collectives;
                }
            }
        }
        // Megatron's vocabulary-parallel cross-entropy: three all-reduces of one float a token, forward.
        for (const std::string& name : g.tensor_parallel.vocab_parallel_loss) {
            const NodeId n = g.find_node(name);
            if (n == kNoNode || g.node(n).inputs.size() < 2) continue;
            const double bytes = 4.0 * static_cast<double>(g.tensor(g.node(n).inputs[1]).desc.numel());
            const double t = collective_cost(cluster, Collective::all_reduce, bytes, tp_group).time_s;
            for (int i = 0; i < 3; ++i) tp_events.push_back({end_of[static_cast<std::size_t>(n)], t});
            r.tp_collectives += 3;
        }
    }
    std::sort(tp_events.begin(), tp_events.end());
    // delay[i]: the time of the first i events, so that a time moves by the events up to it.
    std::vector<double> delay(tp_events.size() + 1, 0.0);
    for (std::size_t i = 0; i < tp_events.size(); ++i) delay[i + 1] = delay[i] + tp_events[i].second;
    r.tp_comm_s = delay.back() - r.cp_comm_s - r.ep_comm_s;
    auto shifted = [&](double t) {
        const auto past = std::upper_bound(tp_events.begin(), tp_events.end(), t, [](double x, const auto& e) { return x < e.first; });
        return t + delay[static_cast<std::size_t>(past - tp_events.begin())];
    };
    forward_end = shifted(forward_end);
    backward_end = shifted(backward_end);
    // Gradient accumulation: K - 1 micro-batches (forward and backward) run before the last one,
    // whose backward the reduction overlaps.
    const double pass_s = backward_end, earlier = (K - 1) * pass_s;
    for (double& e : end_of) e = shifted(e) + earlier;
    r.tp_comm_s *= K;
    r.tp_collectives *= K;
    r.cp_comm_s *= K;
    r.cp_collectives *= K;
    r.ep_comm_s *= K;
    r.ep_collectives *= K;

    // The gradients of the experts' weights (expert parallelism): what each optimizer update of an
    // expert parameter consumes (input 1), or the tensor an fp32 cast of it read.
    std::set<TensorId> expert_grads;
    if (r.ep > 1 && !g.expert_parallel.parameters.empty()) {
        const std::set<std::string> experts(g.expert_parallel.parameters.begin(), g.expert_parallel.parameters.end());
        const auto is_expert = [&](const std::string& updated) {  // the parameter, or its fp32 master copy (model/autodiff.cpp)
            const std::string master = ".master";
            return experts.count(updated) != 0 ||
                   (updated.size() > master.size() && updated.compare(updated.size() - master.size(), master.size(), master) == 0 &&
                    experts.count(updated.substr(0, updated.size() - master.size())) != 0);
        };
        for (const Node& n : g.nodes()) {
            if (!traits_of(n.kind).optimizer_update || n.inputs.size() < 2 || !is_expert(g.tensor(n.inputs[0]).name)) continue;
            TensorId grad = n.inputs[1];
            expert_grads.insert(grad);
            const NodeId from = g.tensor(grad).producer;
            if (from != kNoNode && traits_of(g.node(from).kind).converts_dtype) expert_grads.insert(g.node(from).inputs[0]);
        }
    }
    // Gradients that a cast turns into another gradient (fp32 for the master weights).
    std::vector<bool> cast_to_gradient(g.tensors().size(), false);
    for (const Node& n : g.nodes()) {
        if (!traits_of(n.kind).converts_dtype || n.inputs.empty() || n.outputs.empty()) continue;
        const auto out = static_cast<std::size_t>(n.outputs[0]);
        if (out < a.memory.category.size() && a.memory.category[out] == MemoryCategory::gradients)
            cast_to_gradient[static_cast<std::size_t>(n.inputs[0])] = true;
    }
    // Gradients in the order backward produces them.
    std::vector<Gradient> grads;
    std::int64_t param_bytes = 0, largest_param = 0;
    for (std::size_t t = 0; t < g.tensors().size(); ++t) {
        const Tensor& tensor = g.tensors()[t];
        if (tensor.role == TensorRole::parameter) {
            param_bytes += tensor.desc.bytes();
            largest_param = std::max(largest_param, tensor.desc.bytes());
        }
        if (a.memory.category.size() <= t || a.memory.category[t] != MemoryCategory::gradients || tensor.producer == kNoNode) continue;
        // A gradient cast to fp32 for the master weights is reduced once, in fp32 (Megatron-LM
        // accumulates and reduces main_grad in fp32), as soon as the gradient it casts exists (the
        // cast is part of the accumulation into main_grad, in backward); the 16-bit one is not
        // reduced on its own.
        if (cast_to_gradient[t]) continue;
        NodeId ready = tensor.producer;
        const Node& made = g.node(ready);
        if (traits_of(made.kind).converts_dtype && !made.inputs.empty() && g.tensor(made.inputs[0]).producer != kNoNode)
            ready = g.tensor(made.inputs[0]).producer;
        grads.push_back({end_of[static_cast<std::size_t>(ready)], tensor.desc.bytes(), expert_grads.count(static_cast<TensorId>(t)) != 0});
    }
    std::stable_sort(grads.begin(), grads.end(), [](const Gradient& x, const Gradient& y) { return x.ready_s < y.ready_s; });

    double stream = 0;  // the communication stream's clock
    auto issue = [&](std::string what, Collective coll, double bytes, double ready, CommGroup among) {
        CommOp op;
        op.what = std::move(what);
        op.collective = coll;
        op.cost = collective_cost(cluster, coll, bytes, among);
        op.ready_s = ready;
        op.start_s = std::max(ready, stream);
        op.end_s = op.start_s + op.cost.time_s;
        stream = op.end_s;
        r.comm_s += op.cost.time_s;
        r.comms.push_back(op);
        return op.end_s;
    };

    double ready_for_update = earlier + backward_end;
    if (reducers > 1) {
        // With ZeRO every rank updates only its shard, so the parameters are all-gathered before
        // the forward that uses them, prefetched layer by layer and overlapped with it (ZeRO-1/2:
        // the updated parameters of the previous step, as Megatron's distributed optimizer with
        // overlap-param-gather runs it; ZeRO-3: gathered again for backward, from the end of forward).
        if (opt.zero >= 1) issue("parameter all-gather (forward)", Collective::all_gather, static_cast<double>(param_bytes), 0.0, group);
        // ZeRO-3 gathers again for every micro-batch's backward (and forward, after the first).
        for (int k = 0; opt.zero == 3 && k < K; ++k) {
            if (k > 0) issue("parameter all-gather (forward)", Collective::all_gather, static_cast<double>(param_bytes), k * pass_s, group);
            issue("parameter all-gather (backward)", Collective::all_gather, static_cast<double>(param_bytes), k * pass_s + forward_end,
                  group);
        }
        // Buckets of gradients, each reduced once its last gradient exists: all-reduce, or
        // reduce-scatter when ZeRO shards what the optimizer updates.
        // An expert's weights are held by reducers / ep of the ranks (every ep-th data-parallel
        // rank): its gradients are reduced among those, in buckets of their own (none when one rank
        // holds each expert).
        const Collective reduce = opt.zero >= 1 ? Collective::reduce_scatter : Collective::all_reduce;
        const int expert_ranks = reducers / std::max(1, r.ep);
        const CommGroup expert_group{expert_ranks, std::max(1, std::min(expert_ranks, (per_node + r.ep - 1) / r.ep))};
        struct Bucket {
            double bytes = 0, ready = 0;
        } dense, expert;
        int bucket = 0;
        auto flush = [&](Bucket& bk, CommGroup among) {
            if (bk.bytes > 0 && among.ranks > 1)
                ready_for_update =
                    std::max(ready_for_update, issue(fmt::format("gradient bucket {}", bucket++), reduce, bk.bytes, bk.ready, among));
            bk = Bucket{};
        };
        for (std::size_t i = 0; i < grads.size(); ++i) {
            Bucket& bk = grads[i].expert ? expert : dense;
            bk.bytes += static_cast<double>(grads[i].bytes);
            bk.ready = std::max(bk.ready, grads[i].ready_s);
            if (bk.bytes >= opt.bucket_bytes) flush(bk, grads[i].expert ? expert_group : group);
        }
        flush(expert, expert_group);
        flush(dense, group);
    }
    // The optimizer updates (its shard of) the parameters once every gradient is reduced; with
    // ZeRO its work shrinks with the shard too.
    const double optimizer_share = opt.zero >= 1 ? 1.0 / reducers : 1.0;
    const double step = ready_for_update + optimizer_s * optimizer_share;
    r.compute_s = K * pass_s + optimizer_s * optimizer_share;
    r.pass_s = pass_s;
    r.forward_s = forward_end;
    r.optimizer_s = optimizer_s * optimizer_share;
    r.step_time_s = std::max(step, r.compute_s);
    r.exposed_comm_s = r.step_time_s - r.compute_s;

    // Memory per rank: the same liveness, each category scaled by its ZeRO share; ZeRO-3 also holds
    // the gathered parameters of the layers in flight, counted as twice the largest parameter.
    std::int64_t accumulated = 0;
    for (const Gradient& gr : grads) accumulated += gr.bytes;
    accumulated = static_cast<std::int64_t>(static_cast<double>(accumulated) * shard_of(MemoryCategory::gradients, opt.zero, reducers));
    for (const MemoryStep& s : a.memory.steps) {
        CategoryBytes scaled{};
        std::int64_t total = 0;
        for (std::size_t c = 0; c < kMemoryCategories; ++c) {
            scaled[c] =
                static_cast<std::int64_t>(static_cast<double>(s.bytes[c]) * shard_of(static_cast<MemoryCategory>(c), opt.zero, reducers));
            total += scaled[c];
        }
        if (opt.zero == 3 && reducers > 1) {
            scaled[static_cast<std::size_t>(MemoryCategory::weights)] += 2 * largest_param;
            total += 2 * largest_param;
        }
        // Accumulated gradients stay allocated through every later micro-batch.
        if (K > 1) {
            const auto gi = static_cast<std::size_t>(MemoryCategory::gradients);
            const std::int64_t held = accumulated - scaled[gi];
            if (held > 0) scaled[gi] += held, total += held;
        }
        if (total > r.peak_bytes) r.peak_bytes = total, r.peak_bytes_by_category = scaled;
    }

    const double optimizer_flops = static_cast<double>(a.by_phase[static_cast<int>(Phase::optimizer)].work.flops());
    r.flops_per_rank = K * (static_cast<double>(a.total.flops()) - optimizer_flops) + optimizer_flops;
    const double peak = matrix_ceiling(cluster.hardware, g.compute_dtype).flop_per_s;
    r.mfu = peak > 0 && r.step_time_s > 0 ? r.flops_per_rank / r.step_time_s / peak : 0;
    const auto seq = g.dims.find("seq");
    if (batch_dim != g.dims.end() && r.step_time_s > 0)
        r.tokens_per_s = static_cast<double>(batch_dim->second) * (seq != g.dims.end() ? static_cast<double>(seq->second) : 1.0) * opt.dp *
                         r.cp * K / r.step_time_s;  // a context-parallel rank's seq is its share
    return r;
}

ParallelAnalysis analyze_pipeline(const std::vector<StageStep>& stages, const Cluster& cluster, const ParallelOptions& opt) {
    if (stages.empty()) throw InputError("a pipeline needs at least one stage");
    const int p = static_cast<int>(stages.size());
    std::vector<ParallelAnalysis> per;
    for (int s = 0; s < p; ++s) {
        const Graph& g = *stages[static_cast<std::size_t>(s)].graph;
        // A middle stage may stand for another (they differ only in their layers' names: `search`).
        const bool middle = s > 0 && s < p - 1 && g.pipeline.stage > 0 && g.pipeline.stage < p - 1;
        if (g.pipeline.stages != p || (g.pipeline.stage != s && !middle))
            throw InputError(
                fmt::format("pipeline: stage {} of {} expected, got stage {} of {}", s + 1, p, g.pipeline.stage + 1, g.pipeline.stages));
        // A middle stage standing for the previous one (`search`) has the same parallel analysis.
        const auto su = static_cast<std::size_t>(s);
        const bool repeat = s > 0 && stages[su].graph == stages[su - 1].graph && stages[su].analysis == stages[su - 1].analysis;
        per.push_back(repeat ? per.back() : analyze_parallel(g, *stages[su].analysis, cluster, opt));
    }
    ParallelAnalysis r = per.front();  // the first stage's ranks and collectives; the timing is the pipeline's
    const int m = r.micro_batches;
    const int v = opt.interleave;
    if (v < 1) throw InputError(fmt::format("--interleave {}: expected a positive number of virtual stages", v));
    if (v > 1) {
        if (p < 2) throw InputError(fmt::format("--interleave {}: needs pipeline stages (--pp > 1)", v));
        if (m % p != 0)
            throw InputError(fmt::format("--interleave {}: the {} micro-batches a rank runs must be a multiple of the {} stages", v, m, p));
        for (const StageStep& st : stages)
            if (st.graph->pipeline.layers % v != 0)
                throw InputError(
                    fmt::format("--interleave {}: a stage's {} layers do not split into {} chunks", v, st.graph->pipeline.layers, v));
    }
    // A tied word embedding held by the first and the last stage: its two copies' gradients are
    // all-reduced between them after backward, before the update (Megatron-LM's embedding group;
    // the gradients in the parameter's dtype), on those two stages' critical path.
    const Graph& g_first = *stages.front().graph;
    if (p > 1 && !g_first.pipeline.shared_embedding.empty()) {
        const TensorId w = g_first.find_tensor(g_first.pipeline.shared_embedding);
        if (w >= 0) {
            const CommGroup ends{2, r.tp * r.cp * opt.dp * (p - 1) >= cluster.gpus_per_node() ? 1 : 2};
            r.embedding_all_reduce_s =
                collective_cost(cluster, Collective::all_reduce, static_cast<double>(g_first.tensor(w).desc.bytes()), ends).time_s;
        }
    }
    double sum = 0, slowest = 0, tail = 0, update = 0, flops = 0;
    for (int s = 0; s < p; ++s) {
        const ParallelAnalysis& q = per[static_cast<std::size_t>(s)];
        const double embedding = s == 0 || s == p - 1 ? r.embedding_all_reduce_s : 0.0;
        sum += q.pass_s;
        slowest = std::max(slowest, q.pass_s);
        tail = std::max(tail, q.exposed_comm_s + embedding + q.optimizer_s);  // each stage reduces, then updates
        update = std::max(update, q.optimizer_s);
        flops += q.flops_per_rank;
    }
    // Activations (and their gradients) cross each stage boundary once a micro-batch; on the fill
    // and drain they are on the critical path. Megatron orders ranks tensor-parallel innermost, then
    // data-parallel, then pipeline: adjacent stages share a node only when tp x dp is under a node.
    if (p > 1) {
        std::int64_t act = 0;  // what stage 2 receives: its [batch, seq, d_model] input
        for (const Tensor& t : stages[1].graph->tensors())
            if (t.role == TensorRole::input && t.name == "hidden") act = t.desc.bytes();
        const CommGroup pair{2, r.tp * r.cp * opt.dp >= cluster.gpus_per_node() ? 1 : 2};
        // Megatron's scatter/gather optimisation: each tensor-parallel rank sends 1/tp of it.
        // Interleaved: a micro-batch crosses p x v - 1 chunk boundaries each way.
        r.p2p_s = 2.0 * (p * v - 1) * collective_cost(cluster, Collective::send_recv, static_cast<double>(act) / r.tp, pair).time_s;
    }
    // Plain 1F1B: the schedule itself, simulated from every stage's forward and backward times and
    // one send a hop (sim/schedule.hpp pipeline_timeline): equal stages take (m + p - 1) passes;
    // for unequal ones the usual estimate sum + (m - 1) x slowest is only an approximation (over
    // 2,000 random stage times it was 18% above to 4% below the schedule). Interleaved: fill and drain
    // are one chunk's pass (a device's pass / v) on every device, the steady state the slowest
    // device's passes of the other micro-batches: (m + (p - 1) / v) passes for equal stages, the
    // bubble (p - 1) / (m v) of the ideal m passes.
    double pipe = sum / v + (m - 1.0 / v) * slowest + r.p2p_s;
    if (p > 1 && v == 1) {
        std::vector<double> fwd, bwd;
        for (const ParallelAnalysis& q : per) fwd.push_back(q.forward_s), bwd.push_back(std::max(0.0, q.pass_s - q.forward_s));
        double end = 0;
        for (const PipelineBlock& b : pipeline_timeline(fwd, bwd, m, r.p2p_s / (2.0 * (p - 1)))) end = std::max(end, b.end_s);
        pipe = end;
    }
    r.pp = p;
    r.interleave = v;
    r.pass_s = slowest;
    r.compute_s = pipe + update;
    r.step_time_s = pipe + tail;
    r.exposed_comm_s = r.step_time_s - r.compute_s;
    r.bubble_fraction = pipe > 0 ? 1 - m * slowest / pipe : 0;  // of the pipeline's part, the update aside
    r.comm_s = 0;
    r.stages.clear();
    r.peak_bytes = 0;
    std::size_t worst = 0;
    for (int s = 0; s < p; ++s) {
        const ParallelAnalysis& q = per[static_cast<std::size_t>(s)];
        r.comm_s = std::max(r.comm_s, q.comm_s + (s == 0 || s == p - 1 ? r.embedding_all_reduce_s : 0.0));
        ParallelAnalysis::Stage st;
        st.stage = s;
        st.layers = stages[static_cast<std::size_t>(s)].graph->pipeline.layers;
        st.in_flight = std::min(p - s, m);
        // Micro-batches' activations held at once, in whole micro-batches. Interleaved, Megatron-LM
        // warms up 2 (p - s - 1) + (v - 1) p chunks before its first backward, each 1/v of the
        // device's activations: p + (p - 1) / v for the first device (Korthikanti et al. 2022).
        double held = st.in_flight;
        if (v > 1) {
            const int chunks = std::min(2 * (p - s - 1) + (v - 1) * p + 1, m * v);
            held = static_cast<double>(chunks) / v;
            st.in_flight = static_cast<int>(std::ceil(held));
        }
        st.pass_s = q.pass_s;
        st.forward_s = q.forward_s;
        st.optimizer_s = q.optimizer_s;
        st.exposed_comm_s = q.exposed_comm_s;
        st.peak_bytes = q.peak_bytes +
                        static_cast<std::int64_t>(std::llround(
                            (held - 1) * static_cast<double>(stages[static_cast<std::size_t>(s)].analysis->memory.saved_activation_bytes)));
        if (st.peak_bytes > r.peak_bytes) r.peak_bytes = st.peak_bytes, worst = static_cast<std::size_t>(s);
        r.stages.push_back(st);
    }
    // The peak's breakdown: the stage's micro-batch peak, the in-flight activations added.
    r.peak_bytes_by_category = per[worst].peak_bytes_by_category;
    r.peak_bytes_by_category[static_cast<std::size_t>(MemoryCategory::activations)] += r.peak_bytes - per[worst].peak_bytes;
    r.flops_per_rank = flops / p;
    const double peak = matrix_ceiling(cluster.hardware, stages.front().graph->compute_dtype).flop_per_s;
    r.mfu = peak > 0 && r.step_time_s > 0 ? r.flops_per_rank / r.step_time_s / peak : 0;
    r.tokens_per_s = r.step_time_s > 0 ? per.front().tokens_per_s * per.front().step_time_s / r.step_time_s : 0;
    return r;
}

}  // namespace roofline
