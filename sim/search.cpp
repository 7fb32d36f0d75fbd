#include "sim/search.hpp"

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <tuple>

#include <fmt/format.h>

#include "model/autodiff.hpp"
#include "model/model_json.hpp"
#include "ops/error.hpp"
#include "sim/recompute.hpp"

namespace roofline {

namespace {

std::vector<int> divisors(int n) {
    std::vector<int> d;
    for (int i = 1; i <= n; ++i)
        if (n % i == 0) d.push_back(i);
    return d;
}

// The stage whose analysis stands for stage s of p: the middle stages share stage 1's.
int representative(int s, int p) { return s > 0 && s < p - 1 ? 1 : s; }

// tp, cp, ep, pp, stage, micro-batch, recompute, sp, flash
using Key = std::tuple<int, int, int, int, int, int, std::string, bool, bool>;
Key key_of(const StageRequest& r) { return {r.tp, r.cp, r.ep, r.pp, r.stage, r.micro_batch, r.recompute, r.sp, r.flash}; }

struct Built {
    std::optional<StageProfile> stage;
    std::string error;
};

}  // namespace

StageBuilder template_stage_builder(const std::string& model, const ModelOverrides& base, const TrainingOptions& training,
                                    const Hardware& hw, const AnalysisOptions& aopt) {
    // Kernel costs are shared by every stage a thread builds (same chip and options; the caches
    // are not thread-safe, so one a thread).
    struct Caches {
        std::mutex lock;
        std::map<std::thread::id, std::shared_ptr<KernelCostCache>> of;
    };
    const auto caches = std::make_shared<Caches>();
    return [=](const StageRequest& r) {
        AnalysisOptions options = aopt;
        if (options.cost_cache == nullptr) {
            const std::lock_guard<std::mutex> hold(caches->lock);
            std::shared_ptr<KernelCostCache>& mine = caches->of[std::this_thread::get_id()];
            if (!mine) mine = make_kernel_cost_cache();
            options.cost_cache = mine.get();
        }
        // The stage as a training step transformed by the recompute strategy, analysed; with
        // `probe`, only that many of its layers (a template that splits: Graph::pipeline.model_layers).
        const auto build = [&](std::optional<int> probe, int* model_layers) {
            ModelOverrides ov = base;
            ov.batch = r.micro_batch;
            ov.tp = r.tp;
            ov.pp = r.pp;
            ov.stage = r.stage;
            ov.sp = r.sp;
            ov.cp = r.cp;
            ov.ep = r.ep;
            ov.stage_layers = probe;
            const Graph g = build_training_step(load_model_arg(model, ov), training);
            *model_layers = g.pipeline.model_layers;
            std::optional<RecomputePlan> plan;
            if (r.recompute != "none") {
                const auto s = parse_strategy(r.recompute);
                if (!s) throw InputError("recompute strategy '" + r.recompute + "': unknown");
                plan = plan_strategy(g, *s);
            }
            FusionOptions flash;
            flash.flash_always = r.flash;
            const Evaluated e = evaluate_option(g, hw, plan, false, options, flash);
            return stage_profile(*e.graph, e.analysis);
        };
        // A stage of L identical layers from probes of one and two (sim/parallel.hpp compose_layers):
        // the search's cost no longer grows with the layers.
        int model_layers = 0;
        StageProfile one = build(1, &model_layers);
        if (model_layers == 0) return one;  // the model built its whole stage
        const int layers = model_layers / r.pp;
        if (layers == 1) return one;
        StageProfile two = build(2, &model_layers);
        if (layers == 2) return two;
        try {
            return compose_layers(one, two, layers);
        } catch (const InputError&) {  // the probes do not compose (e.g. more than one stream): the whole stage
            return build(std::nullopt, &model_layers);
        }
    };
}

SearchResult search_parallel(const Cluster& cluster, const SearchSpace& in, const StageBuilder& build) {
    SearchSpace space = in;
    if (space.micro_batches.empty()) space.micro_batches = {1, 2, 4, 8};
    if (space.recompute.empty()) space.recompute = {"none", "selective", "full"};
    if (space.zero.empty()) space.zero = {0, 1, 2, 3};
    if (space.interleave.empty()) space.interleave = {1, 2};
    if (space.sequence_parallel.empty()) space.sequence_parallel = {true};
    if (space.context_parallel.empty()) space.context_parallel = {1};
    if (space.expert_parallel.empty()) space.expert_parallel = {1};
    if (space.cp_comm.empty()) space.cp_comm = {CpComm::ring, CpComm::all_gather, CpComm::ulysses};
    std::sort(space.cp_comm.begin(), space.cp_comm.end());
    space.cp_comm.erase(std::unique(space.cp_comm.begin(), space.cp_comm.end()), space.cp_comm.end());
    for (const int e : space.expert_parallel)
        if (e < 1) throw InputError(fmt::format("--ep {}: expected positive expert-parallel degrees", e));
    for (const int c : space.context_parallel)
        if (c < 1) throw InputError(fmt::format("--cp {}: expected positive context-parallel degrees", c));
    if (space.gpus < 1) throw InputError(fmt::format("--gpus {}: expected a positive number of GPUs", space.gpus));
    for (const int t : space.tensor_parallel) {
        if (t < 1 || space.gpus % t != 0)
            throw InputError(fmt::format("--tp {}: expected tensor-parallel degrees that divide --gpus {}", t, space.gpus));
        if (t > cluster.gpus_per_node())
            throw InputError(
                fmt::format("--tp {}: tensor parallelism stays inside a node ({} GPUs on {})", t, cluster.gpus_per_node(), cluster.name));
    }
    for (const int p : space.pipeline_parallel)
        if (p < 1 || space.gpus % p != 0)
            throw InputError(fmt::format("--pp {}: expected pipeline-parallel degrees that divide --gpus {}", p, space.gpus));
    if (space.global_batch < 1) throw InputError("--global-batch: expected the samples per iteration (a positive number)");
    const int node = cluster.gpus_per_node();
    if (cluster.max_nodes) {
        const auto most = static_cast<std::int64_t>(cluster.max_nodes->value) * node;
        if (space.gpus > most)
            throw InputError(fmt::format("--gpus {}: cluster {} has at most {} GPUs ({} nodes of {})", space.gpus, cluster.name, most,
                                         static_cast<std::int64_t>(cluster.max_nodes->value), node));
    }
    for (const int z : space.zero)
        if (z < 0 || z > 3) throw InputError(fmt::format("--zero {}: expected ZeRO stages 0..3", z));
    for (const int v : space.interleave)
        if (v < 1) throw InputError(fmt::format("--interleave {}: expected positive numbers of virtual stages", v));
    for (const int b : space.micro_batches)
        if (b < 1) throw InputError(fmt::format("--micro-batches {}: expected positive micro-batch sizes", b));
    for (const std::string& s : space.recompute)
        if (s != "none" && !parse_strategy(s)) throw InputError("--recompute " + s + ": unknown strategy");

    SearchResult result;
    const MemoryLevel* dram = cluster.hardware.find(MemoryRole::device);
    result.budget_bytes = space.memory_budget_bytes > 0 ? space.memory_budget_bytes
                          : dram != nullptr             ? static_cast<std::int64_t>(dram->capacity_bytes.value)
                                                        : 0;
    std::map<std::string, std::size_t> reasons;
    auto reject = [&](const std::string& why) {
        ++result.invalid;
        const std::string kind = why.substr(0, why.find(':'));
        if (reasons.emplace(kind, result.invalid_reasons.size()).second) result.invalid_reasons.push_back(why);
    };

    // The tuples to evaluate, by family (tp, pp, recompute, sp) in increasing micro-batch.
    struct Tuple {
        int tp, cp, ep, pp, dp, mb;
        std::string rc;
        bool sp;
    };
    using Family = std::tuple<int, int, int, int, std::string, bool>;  // tp, cp, ep, pp, recompute, sp
    std::map<Family, std::vector<Tuple>> families;
    std::vector<int> sizes = space.micro_batches;
    std::sort(sizes.begin(), sizes.end());
    sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
    // (ZeRO, interleave[, the context-parallel form]) variants of a tuple.
    const auto variants_of = [&](int cp) { return space.zero.size() * space.interleave.size() * (cp > 1 ? space.cp_comm.size() : 1); };
    std::vector<std::pair<int, std::string>> expert_and_recompute;
    for (const int ep : space.expert_parallel)
        for (const std::string& rc : space.recompute) expert_and_recompute.emplace_back(ep, rc);
    std::vector<int> cps = space.context_parallel;
    std::sort(cps.begin(), cps.end());
    cps.erase(std::unique(cps.begin(), cps.end()), cps.end());
    auto allowed = [](const std::vector<int>& candidates, int v) {
        return candidates.empty() || std::find(candidates.begin(), candidates.end(), v) != candidates.end();
    };
    for (const int tp : divisors(space.gpus)) {
        if (tp > node) continue;  // tensor parallelism stays inside a node (Megatron's placement)
        if (!allowed(space.tensor_parallel, tp)) continue;
        for (const int cp : cps) {
            if ((space.gpus / tp) % cp != 0) continue;
            for (const int pp : divisors(space.gpus / (tp * cp))) {
                if (!allowed(space.pipeline_parallel, pp)) continue;
                const int dp = space.gpus / (tp * cp * pp);
                for (const auto& [ep, rc] : expert_and_recompute) {
                    if (dp % ep != 0) continue;  // the expert-parallel ranks are data-parallel ranks
                    for (const bool sp_wanted : space.sequence_parallel) {
                        if (sp_wanted && tp == 1 && std::count(space.sequence_parallel.begin(), space.sequence_parallel.end(), false) > 0)
                            continue;  // at tp 1 sequence parallelism is the same configuration as without
                        const bool sp = sp_wanted && tp > 1;
                        for (const int mb : sizes) {
                            const std::size_t variants = variants_of(cp);
                            result.enumerated += variants;
                            if (space.global_batch % (static_cast<std::int64_t>(mb) * dp) != 0) {
                                for (std::size_t z = 0; z < variants; ++z)
                                    reject(fmt::format("batch: global batch {} is not a multiple of micro-batch {} x dp {}",
                                                       space.global_batch, mb, dp));
                                continue;
                            }
                            families[{tp, cp, ep, pp, rc, sp}].push_back({tp, cp, ep, pp, dp, mb, rc, sp});
                        }
                    }
                }
            }
        }
    }

    // Rounds: the smallest micro-batch of every family first, then the next. A family none of whose
    // configurations fit at a micro-batch is not built at larger ones: a rank's peak memory only
    // grows with the micro-batch (one micro-batch's activations grow, the micro-batches in flight
    // hold at most the rank's share of the global batch), so they cannot fit either; they are counted
    // as pruned. Each round builds its stages once, on `jobs` threads.
    std::map<Key, Built> built;
    // The forms a tuple runs, and whether a form's stages run attention as flash attention.
    const auto forms_of = [&](const Tuple& t) { return t.cp > 1 ? space.cp_comm : std::vector<CpComm>{CpComm::ring}; };
    auto evaluate = [&](const Tuple& t) {
        // The stages with and without flash attention (only those the tuple's forms need are built).
        std::vector<const StageProfile*> stages_of[2];
        std::string error_of[2];
        for (const CpComm form : forms_of(t)) {
            const bool flash = cp_runs_flash(t.cp, form);
            std::vector<const StageProfile*>& stages = stages_of[flash ? 1 : 0];
            std::string& error = error_of[flash ? 1 : 0];
            if (!stages.empty() || !error.empty()) continue;
            for (int s = 0; s < t.pp && error.empty(); ++s) {
                const Built& b = built.at(key_of(StageRequest{t.tp, t.pp, representative(s, t.pp), t.mb, t.rc, t.sp, t.cp, t.ep, flash}));
                if (!b.stage) {
                    error = b.error;
                } else {
                    stages.push_back(&*b.stage);
                }
            }
        }
        bool any_fits = false;
        bool unbuilt = false;
        const std::vector<CpComm> forms = forms_of(t);
        for (const int v : space.interleave) {
            for (const int z : space.zero)
                for (const CpComm form : forms) {
                    const int flash = cp_runs_flash(t.cp, form) ? 1 : 0;
                    const std::vector<const StageProfile*>& stages = stages_of[flash];
                    const std::string& error = error_of[flash];
                    unbuilt = unbuilt || !error.empty();
                    if (!error.empty()) {
                        reject(fmt::format("model: tp {} pp {}: {}", t.tp, t.pp, error));
                        continue;
                    }
                    if (z > 0 && t.dp * t.cp == 1) {
                        reject(fmt::format("zero: ZeRO {} needs data-parallel ranks (dp = 1 at tp {} pp {})", z, t.tp, t.pp));
                        continue;
                    }
                    if (v > 1 && t.pp == 1) {
                        reject(fmt::format("interleave: {} virtual stages need pipeline stages (pp = 1)", v));
                        continue;
                    }
                    ParallelOptions o;
                    o.dp = t.dp;
                    o.zero = z;
                    o.bucket_bytes = space.bucket_bytes;
                    o.global_batch = space.global_batch;
                    o.interleave = v;
                    o.cp_comm = form;
                    try {
                        const ParallelAnalysis p =
                            t.pp > 1 ? analyze_pipeline(stages, cluster, o) : analyze_parallel(*stages[0], cluster, o);
                        SearchCandidate c;
                        c.tp = t.tp, c.pp = t.pp, c.dp = t.dp, c.micro_batch = t.mb, c.zero = z, c.interleave = v, c.recompute = t.rc;
                        c.cp = t.cp, c.ep = t.ep, c.cp_comm = form;
                        c.sp = t.sp;
                        c.micro_batches = p.micro_batches;
                        c.step_time_s = p.step_time_s;
                        c.compute_s = p.compute_s;
                        c.exposed_comm_s = p.exposed_comm_s;
                        c.bubble_fraction = p.bubble_fraction;
                        c.mfu = p.mfu;
                        c.tokens_per_s = p.tokens_per_s;
                        c.peak_bytes = p.peak_bytes;
                        c.fits = result.budget_bytes <= 0 || c.peak_bytes <= result.budget_bytes;
                        any_fits = any_fits || c.fits;
                        result.candidates.push_back(std::move(c));
                    } catch (const InputError& e) {
                        const std::string what = e.what();
                        // Ulysses' heads not splitting over tp x cp is a kind of its own.
                        reject(what.rfind("--interleave", 0) == 0 ? "interleave: " + what
                               : what.find("--cp-comm ulysses") != std::string::npos
                                   ? fmt::format("ulysses: tp {} cp {}: {}", t.tp, t.cp, what)
                                   : fmt::format("cluster: tp {} pp {} dp {}: {}", t.tp, t.pp, t.dp, what));
                    }
                }
        }
        return any_fits || unbuilt;  // a family that cannot be built is counted invalid at every size
    };
    std::map<Family, bool> alive;
    for (const auto& [k, list] : families) alive[k] = true;
    std::size_t rounds = 0;
    for (const auto& [k, list] : families) rounds = std::max(rounds, list.size());
    for (std::size_t round = 0; round < rounds; ++round) {
        std::vector<const Tuple*> now;
        std::vector<StageRequest> requests;
        for (const auto& [k, list] : families) {
            if (round >= list.size()) continue;
            const Tuple& t = list[round];
            if (!alive[k]) {
                result.pruned += variants_of(t.cp);
                continue;
            }
            now.push_back(&t);
            for (const CpComm form : forms_of(t))
                for (int s = 0; s < t.pp; ++s) {
                    if (representative(s, t.pp) != s) continue;
                    const StageRequest r{t.tp, t.pp, s, t.mb, t.rc, t.sp, t.cp, t.ep, cp_runs_flash(t.cp, form)};
                    if (built.emplace(key_of(r), Built{}).second) requests.push_back(r);
                }
        }
        std::vector<Built*> slots;
        for (const StageRequest& r : requests) slots.push_back(&built.at(key_of(r)));
        std::atomic<std::size_t> next{0};
        auto worker = [&] {
            for (std::size_t i = next++; i < requests.size(); i = next++) {
                try {
                    slots[i]->stage = build(requests[i]);
                } catch (const InputError& e) {
                    slots[i]->error = e.what();
                }
            }
        };
        const int jobs = std::max(1, std::min<int>(space.jobs, static_cast<int>(requests.size())));
        std::vector<std::thread> pool;
        for (int j = 1; j < jobs; ++j) pool.emplace_back(worker);
        worker();
        for (std::thread& th : pool) th.join();
        for (const Built* b : slots) result.stages_analysed += b->stage ? 1 : 0;
        for (const Tuple* t : now) {
            const bool keep = evaluate(*t);
            if (!keep) alive[{t->tp, t->cp, t->ep, t->pp, t->rc, t->sp}] = false;
        }
    }
    // Fitting first, then by iteration time; ties in a fixed order of the knobs (deterministic).
    std::sort(result.candidates.begin(), result.candidates.end(), [](const SearchCandidate& a, const SearchCandidate& b) {
        return std::tuple(!a.fits, a.step_time_s, a.tp, a.sp, a.cp, a.cp_comm, a.ep, a.pp, a.interleave, a.micro_batch, a.recompute,
                          a.zero) < std::tuple(!b.fits, b.step_time_s, b.tp, b.sp, b.cp, b.cp_comm, b.ep, b.pp, b.interleave, b.micro_batch,
                                               b.recompute, b.zero);
    });
    std::vector<std::pair<std::int64_t, double>> points;
    for (const SearchCandidate& c : result.candidates) points.emplace_back(c.peak_bytes, c.step_time_s);
    result.frontier = pareto_frontier(points);
    return result;
}

}  // namespace roofline
