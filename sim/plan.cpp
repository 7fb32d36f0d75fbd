#include "sim/plan.hpp"

#include <algorithm>
#include <cmath>
#include <atomic>
#include <exception>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "ops/error.hpp"
#include <cstdio>

namespace roofline {

namespace {

double duration(const OpAnalysis& op) { return op.modelled ? op.modelled->time_s : op.roofline->time_s; }

std::string layer_label(const std::vector<LayerChoice>& c) {
    std::int64_t full = 0, sel = 0;
    for (LayerChoice x : c) {
        full += x == LayerChoice::full;
        sel += x == LayerChoice::selective;
    }
    const std::string n = std::to_string(c.size());
    std::string s;
    if (full > 0) s += "full on " + std::to_string(full) + "/" + n + " layers";
    if (sel > 0) s += std::string(s.empty() ? "" : ", ") + "selective on " + std::to_string(sel) + "/" + n + " layers";
    if (s.empty()) s = "none";
    // Small graphs enumerate every combination: name which layers.
    if (c.size() <= 8 && (full > 0 || sel > 0)) {
        s += " [";
        for (LayerChoice x : c) s += x == LayerChoice::full ? 'F' : x == LayerChoice::selective ? 'S' : '-';
        s += "]";
    }
    return s;
}

// An option summarised from its evaluation on every stage (one, without --pp).
PlanOption summarise(const std::vector<const Evaluated*>& es, const std::string& name, bool fuse, const std::string& recompute,
                     const PlanOptions& opt) {
    const Evaluated& e = *es.front();
    PlanOption o;
    o.name = name;
    o.fuse = fuse;
    o.recompute = recompute;
    o.step_time_s = e.analysis.schedule.step_time_s;
    o.peak_bytes = e.analysis.memory.peak_bytes;
    if (opt.pipeline)
        std::tie(o.step_time_s, o.peak_bytes) = opt.pipeline(es);
    else if (opt.iteration)
        std::tie(o.step_time_s, o.peak_bytes) = opt.iteration(*e.graph, e.analysis);
    for (std::size_t k = 0; k < es.size(); ++k) {
        const Evaluated& s = *es[k];
        const std::int64_t w = k < opt.stage_weights.size() ? opt.stage_weights[k] : 1;
        o.flops += w * s.analysis.total.flops();
        o.extra_flops += w * s.recompute.extra_flops;
        o.recomputed_ops += w * s.recompute.clones;
        o.saved_activation_bytes += w * s.analysis.memory.saved_activation_bytes;
        for (const OpAnalysis& op : s.analysis.ops) o.kernels += duration(op) > 0 ? w : 0;
        o.fused_groups += s.fusion ? w * static_cast<std::int64_t>(s.fusion->groups.size()) : 0;
    }
    return o;
}

// The first k of `layers` recomputed in full, the rest kept or recomputed selectively, for each k
// (Megatron-LM's block recomputation, --recompute-method block --recompute-num-layers k).
std::vector<std::vector<LayerChoice>> block_mixes(std::size_t layers, const std::vector<std::size_t>& ks) {
    std::vector<std::vector<LayerChoice>> mixes;
    for (std::size_t k : ks)
        for (LayerChoice rest : {LayerChoice::keep, LayerChoice::selective}) {
            std::vector<LayerChoice> c(layers, rest);
            std::fill(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(k), LayerChoice::full);
            mixes.push_back(c);
        }
    return mixes;
}

}  // namespace

std::vector<std::size_t> pareto_frontier(const std::vector<std::pair<std::int64_t, double>>& points) {
    std::vector<std::size_t> order(points.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return points[a].first != points[b].first ? points[a].first < points[b].first : points[a].second < points[b].second;
    });
    std::vector<std::size_t> front;
    double best = 0;
    for (std::size_t i : order) {
        // Sorted by peak: a point is on the frontier when it is strictly faster than every point
        // with no more memory.
        if (front.empty() || points[i].second < best) {
            front.push_back(i);
            best = points[i].second;
        }
    }
    return front;
}

Evaluated transform_option(const Graph& g, const std::optional<RecomputePlan>& recompute) {
    Evaluated e;
    e.graph = &g;
    if (recompute) {
        e.recompute = apply_recompute(g, *recompute);
        e.owned = std::make_unique<Graph>(std::move(e.recompute.graph));
        e.recompute.graph = Graph{};
        e.graph = e.owned.get();
    }
    return e;
}

void analyse_option(Evaluated& e, const Hardware& hw, bool fuse, const AnalysisOptions& aopt, const FusionOptions& fopt) {
    AnalysisOptions a = aopt;
    if (fuse || fopt.flash_always) {
        FusionOptions f = fopt;
        if (!fuse) f.elementwise = f.gemm_epilogue = f.gemm_prologue = f.reductions = false;
        if (fopt.flash_always) f.flash_attention = true;
        e.fusion = find_fusion_groups(*e.graph, hw, f);
        a.fusion = &*e.fusion;
    }
    e.analysis = analyze(*e.graph, hw, a);
}

Evaluated evaluate_option(const Graph& g, const Hardware& hw, const std::optional<RecomputePlan>& recompute, bool fuse,
                          const AnalysisOptions& aopt, const FusionOptions& fopt) {
    Evaluated e = transform_option(g, recompute);
    analyse_option(e, hw, fuse, aopt, fopt);
    return e;
}

Plan make_plan(const Graph& g, const Hardware& hw, const PlanOptions& opt) {
    Plan p;
    p.training = is_training_step(g);
    p.capacity_bytes = static_cast<std::int64_t>(hw.device_memory().capacity_bytes.value);
    p.budget_bytes = opt.memory_budget_bytes.value_or(p.capacity_bytes);
    if (!opt.unfused && !opt.fused) throw InputError("plan: neither unfused nor fused options asked for");

    // The graphs every option is applied to: g, then (plan --pp) the pipeline's other stages.
    std::vector<const Graph*> graphs{&g};
    graphs.insert(graphs.end(), opt.other_stages.begin(), opt.other_stages.end());
    const std::size_t ns = graphs.size();
    if (ns > 1 && !opt.pipeline) throw std::logic_error("make_plan: other stages without a pipeline iteration");
    std::vector<Evaluated> bases(ns);
    std::vector<const Evaluated*> base_ptrs;
    for (std::size_t k = 0; k < ns; ++k) {
        bases[k] = evaluate_option(*graphs[k], hw, std::nullopt, false, opt.analysis, opt.fusion);
        base_ptrs.push_back(&bases[k]);
    }
    const Evaluated& base = bases.front();
    p.stages = 0;
    for (std::size_t k = 0; k < ns; ++k) p.stages += k < opt.stage_weights.size() ? opt.stage_weights[k] : 1;
    p.baseline = summarise(base_ptrs, "baseline", false, "none", opt);

    struct Candidate {
        std::string name, recompute;
        std::vector<std::optional<RecomputePlan>> plans;  // one per graph
        std::vector<LayerChoice> layers;
    };
    std::vector<Candidate> candidates;
    if (!p.training) {
        candidates.push_back({"none", "none", std::vector<std::optional<RecomputePlan>>(ns), {}});
    } else {
        for (RecomputeStrategy s : opt.strategies) {
            const std::string n(strategy_name(s));
            std::vector<std::optional<RecomputePlan>> plans(ns);
            if (s != RecomputeStrategy::none)
                for (std::size_t k = 0; k < ns; ++k) plans[k] = plan_strategy(*graphs[k], s);
            candidates.push_back({n, n, std::move(plans), {}});
        }
        std::vector<std::vector<Layer>> layers;
        for (const Graph* sg : graphs) layers.push_back(find_layers(*sg));
        const auto nl = static_cast<std::int64_t>(layers.front().size());
        const bool same = std::all_of(layers.begin(), layers.end(), [&](const auto& l) { return l.size() == layers.front().size(); });
        if (opt.search_layers && nl > 0 && same) {
            std::vector<std::vector<LayerChoice>> mixes;
            const double combos = std::pow(3.0, static_cast<double>(nl));
            const std::size_t size = layers.front().size();
            std::vector<std::size_t> ks;  // block mixes' k: every k on a pipeline's stages, else the quartiles
            if (ns > 1) {
                for (std::size_t k = 1; k < size; ++k) ks.push_back(k);
                mixes = block_mixes(size, ks);
            } else if (combos <= static_cast<double>(opt.exhaustive_limit)) {
                for (std::int64_t code = 0; code < static_cast<std::int64_t>(combos); ++code) {
                    std::vector<LayerChoice> c(size);
                    std::int64_t x = code;
                    for (auto& ci : c) {
                        ci = static_cast<LayerChoice>(x % 3);
                        x /= 3;
                    }
                    const bool uniform = std::all_of(c.begin(), c.end(), [&](LayerChoice v) { return v == c.front(); });
                    if (!uniform) mixes.push_back(c);  // uniform ones are the none / selective / full strategies
                }
            } else {
                for (int i = 1; i < opt.mix_steps; ++i) {
                    const auto k = static_cast<std::size_t>(std::llround(static_cast<double>(i) * static_cast<double>(nl) / opt.mix_steps));
                    if (k > 0 && k < size) ks.push_back(k);
                }
                mixes = block_mixes(size, ks);
            }
            for (auto& c : mixes) {
                std::vector<std::optional<RecomputePlan>> plans;
                for (std::size_t k = 0; k < ns; ++k) plans.emplace_back(plan_layers(*graphs[k], layers[k], c));
                candidates.push_back({layer_label(c), "layers", std::move(plans), c});
            }
        }
    }

    // Each candidate is independent: evaluate them on worker threads, results kept in candidate
    // order (unfused options first, then fused). A candidate's recomputed graphs are built once and
    // analysed with fusion off and on.
    const std::size_t nc = candidates.size();
    const std::size_t fused_base = opt.unfused ? nc : 0;
    p.options.resize(fused_base + (opt.fused ? nc : 0));
    std::vector<GroupSaving> groups;
    std::vector<std::vector<std::vector<NodeId>>> recomputed(nc);  // per candidate and graph: the nodes cloned, sorted
    std::atomic<std::size_t> next{0};
    std::mutex error_lock;
    std::exception_ptr error;
    auto worker = [&] {
        const auto cache = make_kernel_cost_cache();
        AnalysisOptions aopt = opt.analysis;
        aopt.cost_cache = cache.get();
        for (std::size_t i = next++; i < nc; i = next++) {
            try {
                const Candidate& c = candidates[i];
                const bool recomputes = c.plans.front().has_value();
                std::vector<Evaluated> plain(ns);
                std::vector<const Evaluated*> plain_ptrs;
                for (std::size_t k = 0; k < ns; ++k) {
                    plain[k] = transform_option(*graphs[k], c.plans[k]);
                    if (opt.unfused && c.plans[k]) analyse_option(plain[k], hw, false, aopt, opt.fusion);
                    plain_ptrs.push_back(c.plans[k] ? &plain[k] : &bases[k]);
                    std::vector<NodeId> cloned = plain[k].recompute.cloned;
                    std::sort(cloned.begin(), cloned.end());
                    recomputed[i].push_back(std::move(cloned));
                }
                if (opt.unfused) {
                    p.options[i] = summarise(plain_ptrs, c.name, false, c.recompute, opt);
                    p.options[i].layers = c.layers;
                }
                if (!opt.fused) continue;
                std::vector<Evaluated> fused(ns);
                std::vector<const Evaluated*> fused_ptrs;
                for (std::size_t k = 0; k < ns; ++k) {
                    fused[k].graph = plain[k].graph;
                    fused[k].recompute.clones = plain[k].recompute.clones;
                    fused[k].recompute.extra_flops = plain[k].recompute.extra_flops;
                    fused[k].recompute.cloned = plain[k].recompute.cloned;
                    analyse_option(fused[k], hw, true, aopt, opt.fusion);
                    fused_ptrs.push_back(&fused[k]);
                }
                p.options[fused_base + i] = summarise(fused_ptrs, "fuse + " + c.name, true, c.recompute, opt);
                p.options[fused_base + i].layers = c.layers;
                if (!recomputes && fused.front().fusion) {
                    // What each group of the plain (first stage's) graph saves: the members' kernels against the fused one.
                    for (const FusionGroup& grp : fused.front().fusion->groups) {
                        GroupSaving s{grp, 0, 0};
                        for (NodeId n : grp.nodes) s.unfused_time_s += duration(base.analysis.ops[static_cast<std::size_t>(n)]);
                        s.fused_time_s = duration(fused.front().analysis.ops[static_cast<std::size_t>(grp.anchor)]);
                        groups.push_back(std::move(s));
                    }
                }
            } catch (...) {
                const std::lock_guard<std::mutex> lock(error_lock);
                if (!error) error = std::current_exception();
            }
        }
    };
    const unsigned threads = std::max(1u, std::min<unsigned>(opt.threads > 0 ? opt.threads : std::thread::hardware_concurrency(), 16));
    std::vector<std::thread> pool;
    for (unsigned t = 1; t < threads && t < nc; ++t) pool.emplace_back(worker);
    worker();
    for (std::thread& t : pool) t.join();
    if (error) std::rethrow_exception(error);
    p.groups = std::move(groups);
    // A mix that recomputes the same nodes as an earlier option is left out (selective choices
    // where the attention saves nothing to recompute, e.g. one fused attention op).
    std::vector<PlanOption> kept;
    for (std::size_t j = 0; j < p.options.size(); ++j) {
        const std::size_t i = j % nc;  // the candidate: unfused options first, then fused
        bool repeat = false;
        for (std::size_t e = j - j % nc; e < j && candidates[i].recompute == "layers" && !repeat; ++e)
            repeat = recomputed[e % nc] == recomputed[i];
        if (!repeat) kept.push_back(std::move(p.options[j]));
    }
    p.options = std::move(kept);
    for (PlanOption& o : p.options) {
        o.fits = o.peak_bytes <= p.budget_bytes;
        o.time_overhead_s = o.step_time_s - p.baseline.step_time_s;
        o.memory_saved_bytes = p.baseline.peak_bytes - o.peak_bytes;
    }
    std::stable_sort(p.options.begin(), p.options.end(), [](const PlanOption& a, const PlanOption& b) {
        if (a.fits != b.fits) return a.fits;
        if (a.step_time_s != b.step_time_s) return a.step_time_s < b.step_time_s;
        return a.peak_bytes < b.peak_bytes;
    });
    std::vector<std::pair<std::int64_t, double>> points;
    for (const PlanOption& o : p.options) points.push_back({o.peak_bytes, o.step_time_s});
    p.frontier = pareto_frontier(points);
    for (std::size_t i : p.frontier) p.options[i].pareto = true;
    return p;
}

std::vector<SweepSeries> batch_sweep(const std::function<Graph(std::int64_t)>& build, const Hardware& hw, const PlanOptions& opt,
                                     std::int64_t max_batch) {
    const std::int64_t budget = opt.memory_budget_bytes.value_or(static_cast<std::int64_t>(hw.device_memory().capacity_bytes.value));
    std::vector<SweepSeries> out;
    const bool fuse = opt.fused && !opt.unfused;
    for (RecomputeStrategy s : opt.strategies) {
        SweepSeries series;
        series.strategy = std::string(fuse ? "fuse + " : "") + std::string(strategy_name(s));
        std::map<std::int64_t, SweepRow> rows;
        auto run = [&](std::int64_t b) -> const SweepRow& {
            auto it = rows.find(b);
            if (it != rows.end()) return it->second;
            const Graph g = build(b);
            std::optional<RecomputePlan> rp;
            if (s != RecomputeStrategy::none && is_training_step(g)) rp = plan_strategy(g, s);
            const Evaluated e = evaluate_option(g, hw, rp, fuse, opt.analysis, opt.fusion);
            SweepRow r;
            r.batch = b;
            r.step_time_s = e.analysis.schedule.step_time_s;
            r.peak_bytes = e.analysis.memory.peak_bytes;
            r.fits = r.peak_bytes <= budget;
            r.samples_per_s = r.step_time_s > 0 ? static_cast<double>(b) / r.step_time_s : 0;
            const auto seq = g.dims.find("seq");
            if (seq != g.dims.end()) r.tokens_per_s = r.samples_per_s * static_cast<double>(seq->second);
            return rows.emplace(b, r).first->second;
        };
        // Double while it fits, then bisect between the last fit and the first miss.
        std::int64_t lo = 0, hi = 0;
        for (std::int64_t b = 1; b <= max_batch; b *= 2) {
            if (run(b).fits)
                lo = b;
            else {
                hi = b;
                break;
            }
        }
        if (hi == 0) hi = lo;
        while (hi - lo > 1 && lo > 0) {
            const std::int64_t mid = lo + (hi - lo) / 2;
            if (run(mid).fits)
                lo = mid;
            else
                hi = mid;
        }
        series.max_batch = lo;
        for (auto& [b, r] : rows) series.rows.push_back(r);
        out.push_back(std::move(series));
    }
    return out;
}

}  // namespace roofline
