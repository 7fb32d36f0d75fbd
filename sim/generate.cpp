// Generation of a batch of sequences (sim/generate.hpp).
#include "sim/generate.hpp"

#include <algorithm>
#include <cmath>

#include "model/model_json.hpp"
#include "ops/error.hpp"
#include "sim/parallel.hpp"
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace roofline {

namespace {

std::string gb(double bytes) { return fmt::format("{:.3g} GB", bytes / 1e9); }

struct Step {
    double time_s = 0;
    Work work;
    double peak_bytes = 0;
    double weight_bytes = 0;
};

Step run_step(const DecoderArch& arch, const Hardware& hw, const GenerateOptions& opt, const AnalysisOptions& aopt, InferencePhase phase,
              std::int64_t n) {
    PhaseOptions p;
    p.phase = phase;
    p.batch = opt.batch;
    p.tp = opt.tp;
    p.quant = opt.quant;
    if (phase == InferencePhase::prefill)
        p.tokens = n;
    else
        p.context = n;
    const Graph g = build_phase_graph(arch, p);  // the dtype is in arch and opt.quant (simulate_generation)
    AnalysisOptions step_opt = aopt;
    if (opt.cuda_graphs && phase == InferencePhase::decode) step_opt.gpu.host_issue = false;
    const Analysis a = analyze(g, hw, step_opt);
    return {inference_step_time(g, a, opt.cluster), a.total, static_cast<double>(a.memory.peak_bytes),
            static_cast<double>(a.parameter_bytes)};
}

}  // namespace

double inference_step_time(const Graph& g, const Analysis& a, const Cluster* cluster) {
    if (cluster == nullptr || g.tensor_parallel.degree <= 1) return a.schedule.step_time_s;
    return analyze_parallel(g, a, *cluster, ParallelOptions{}).step_time_s;
}

GenerateResult simulate_generation(const DecoderArch& model, const Hardware& hw, const GenerateOptions& options) {
    DecoderArch arch = model;
    GenerateOptions opt = options;
    apply_inference_dtype(arch, opt.quant, opt.dtype);
    opt.dtype.reset();
    check_quantization(opt.quant);
    if (opt.prompt < 1) throw InputError("--prompt must be at least 1 token");
    if (opt.output < 1) throw InputError("--output must be at least 1 token");
    if (opt.batch < 1) throw InputError("--batch must be at least 1");
    if (opt.tp > 1 && opt.cluster == nullptr)
        throw InputError("--tp " + std::to_string(opt.tp) + ": name the cluster the ranks run on with --cluster");
    if (opt.prompt + opt.output - 1 > arch.max_positions) {
        throw InputError("--prompt " + std::to_string(opt.prompt) + " + --output " + std::to_string(opt.output) + " needs " +
                         std::to_string(opt.prompt + opt.output - 1) + " positions; " + arch.name + " has " +
                         std::to_string(arch.max_positions));
    }
    GenerateResult r;
    r.arch = arch;
    r.dtype = *parse_dtype(arch.dtype);
    r.kv_dtype = kv_cache_dtype(arch, opt.quant);
    r.quant = opt.quant;
    r.kv_bytes_per_token = kv_cache_bytes_per_token(arch, r.kv_dtype, opt.tp);
    r.capacity_bytes = hw.device_memory().capacity_bytes.value;

    AnalysisOptions aopt = opt.analysis;
    std::shared_ptr<KernelCostCache> cache;
    if (aopt.cost_cache == nullptr) {
        cache = make_kernel_cost_cache();  // decode steps share every kernel but attention's
        aopt.cost_cache = cache.get();
    }
    const Step prefill = run_step(arch, hw, opt, aopt, InferencePhase::prefill, opt.prompt);
    r.prefill_work = prefill.work;
    r.ttft_s = prefill.time_s;
    r.peak_bytes = prefill.peak_bytes;
    r.weight_bytes = prefill.weight_bytes;
    r.analysed = 1;
    auto cache_after = [&](std::int64_t tokens) {
        const std::int64_t held = arch.sliding_window > 0 ? std::min(tokens, arch.sliding_window) : tokens;
        return r.kv_bytes_per_token * static_cast<double>(held * opt.batch);
    };
    r.steps.push_back({0, opt.prompt, prefill.time_s, cache_after(opt.prompt), true});

    // Decode steps 1 .. T-1 at contexts P .. P+T-2.
    const std::int64_t decodes = opt.output - 1;
    std::vector<std::int64_t> at;  // step indices analysed
    if (decodes > 0) {
        const std::int64_t k = std::max<std::int64_t>(2, std::min(decodes, opt.max_analysed));
        for (std::int64_t i = 0; i < k; ++i) {
            const std::int64_t s = 1 + (decodes - 1) * i / std::max<std::int64_t>(1, k - 1);
            if (at.empty() || at.back() != s) at.push_back(s);
        }
    }
    std::vector<double> t_at(at.size());
    for (std::size_t i = 0; i < at.size(); ++i) {
        const Step s = run_step(arch, hw, opt, aopt, InferencePhase::decode, opt.prompt + at[i] - 1);
        t_at[i] = s.time_s;
        r.peak_bytes = std::max(r.peak_bytes, s.peak_bytes);
        if (i == 0) r.first_decode_work = s.work;
        if (i + 1 == at.size()) r.last_decode_work = s.work;
    }
    r.analysed += static_cast<std::int64_t>(at.size());
    for (std::int64_t s = 1; s <= decodes; ++s) {  // at holds 1 and decodes: every s has an analysed step at or after it
        const std::size_t hi = static_cast<std::size_t>(std::lower_bound(at.begin(), at.end(), s) - at.begin());
        const bool own = at[hi] == s;
        double t = t_at[hi];
        if (!own) {
            const double f = static_cast<double>(s - at[hi - 1]) / static_cast<double>(at[hi] - at[hi - 1]);
            t = t_at[hi - 1] + f * (t_at[hi] - t_at[hi - 1]);
        }
        r.steps.push_back({s, opt.prompt + s - 1, t, cache_after(opt.prompt + s), own});
    }
    double decode_sum = 0;
    for (std::size_t i = 1; i < r.steps.size(); ++i) decode_sum += r.steps[i].time_s;
    r.e2e_s = r.ttft_s + decode_sum;
    r.tpot_s = decodes > 0 ? decode_sum / static_cast<double>(decodes) : 0.0;
    r.first_decode_s = decodes > 0 ? r.steps[1].time_s : 0.0;
    r.last_decode_s = decodes > 0 ? r.steps.back().time_s : 0.0;
    r.tokens_per_s = static_cast<double>(opt.batch * opt.output) / r.e2e_s;
    r.kv_final_bytes = r.steps.back().kv_cache_bytes;

    // Capacity: the weights, plus per sequence the larger of the prefill's and the last decode's
    // share of the rest (its cache and temporaries), as the peaks of their analyses say.
    const double per_seq = std::max(0.0, (r.peak_bytes - r.weight_bytes) / static_cast<double>(opt.batch));
    const double free_bytes = r.capacity_bytes - r.weight_bytes;
    r.max_batch = per_seq > 0 ? static_cast<std::int64_t>(std::floor(free_bytes / per_seq)) : 0;
    if (r.max_batch < 1) {
        throw InputError(arch.name + " on " + hw.name + ": the weights (" + gb(r.weight_bytes) + ") and one sequence of " +
                         std::to_string(opt.prompt + opt.output - 1) + " tokens (its KV cache " +
                         gb(r.kv_bytes_per_token * static_cast<double>(opt.prompt + opt.output - 1)) + ", and temporaries) do not fit in " +
                         gb(r.capacity_bytes) + " of device memory");
    }
    return r;
}

}  // namespace roofline
