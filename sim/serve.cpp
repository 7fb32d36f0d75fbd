// Serving simulation (sim/serve.hpp).
#include "sim/serve.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <numbers>

#include "ops/error.hpp"
#include "ops/op_rule.hpp"
#include "ops/text.hpp"
#include "sim/fusion.hpp"
#include "sim/generate.hpp"

namespace roofline {

namespace {

// ---- interpolation -------------------------------------------------------------------------

// Index i with x[i] <= v < x[i + 1], clamped to the grid's first and last interval.
std::size_t segment(const std::vector<double>& x, double v) {
    const auto it = std::upper_bound(x.begin(), x.end(), v);
    const std::size_t hi =
        static_cast<std::size_t>(std::clamp<std::ptrdiff_t>(it - x.begin(), 1, static_cast<std::ptrdiff_t>(x.size()) - 1));
    return hi - 1;
}

// Piecewise linear through (x, y[0 .. x.size())), extrapolated along the end segments, never below 0.
double lerp(const std::vector<double>& x, const double* y, double v) {
    if (x.size() == 1) return y[0];
    const std::size_t i = segment(x, v);
    const double f = (v - x[i]) / (x[i + 1] - x[i]);
    return std::max(0.0, y[i] + f * (y[i + 1] - y[i]));
}
double lerp(const std::vector<double>& x, const std::vector<double>& y, double v) { return lerp(x, y.data(), v); }

// Piecewise power law through (x, y) (linear in log-log): exact for a term that scales as a power
// of the size between grid points (GEMMs linear in tokens, causal attention quadratic).
double loglerp(const std::vector<double>& x, const std::vector<double>& y, double v) {
    if (v <= 0) return 0;
    if (x.size() == 1) return y[0] * v / x[0];
    const std::size_t i = segment(x, v);
    if (y[i] <= 0 || y[i + 1] <= 0) return lerp(x, y, v);
    const double k = std::log(y[i + 1] / y[i]) / std::log(x[i + 1] / x[i]);
    return y[i] * std::pow(v / x[i], k);
}

// Powers of two from 1 to `top`, and `top` itself.
std::vector<double> pow2_grid(std::int64_t top, std::int64_t from = 1) {
    std::vector<double> g;
    for (std::int64_t v = from; v < top; v *= 2) g.push_back(static_cast<double>(v));
    g.push_back(static_cast<double>(top));
    return g;
}

// ---- step analyses -------------------------------------------------------------------------

// The logits: per sampling sequence (the final norm runs over every token and the gather of the
// last tokens with it: they stay in the body).
bool is_head(const std::string& name) { return name == "lm_head"; }

struct StepParts {
    double step_s = 0, attention_s = 0, head_s = 0;
    double peak_bytes = 0, weight_bytes = 0;
};

StepParts analyse_step(const DecoderArch& arch, const Hardware& hw, const ServeOptions& opt, AnalysisOptions aopt, const PhaseOptions& p) {
    const Graph g = build_phase_graph(arch, p);
    // Serving engines run flash attention for prompts and paged attention for decode: the
    // attention core is one kernel whose score tiles stay on chip (sim/fusion.hpp); nothing else fused.
    FusionOptions fo;
    fo.elementwise = fo.gemm_epilogue = fo.gemm_prologue = fo.reductions = false;
    const FusionPlan plan = find_fusion_groups(g, hw, fo);
    aopt.fusion = &plan;
    const Analysis a = analyze(g, hw, aopt);
    StepParts s;
    s.step_s = inference_step_time(g, a, opt.cluster);
    for (const OpAnalysis& op : a.ops) {
        const Node& n = g.node(op.node);
        const double t = op.modelled ? op.modelled->time_s : op.roofline->time_s;
        if (traits_of(n.kind).kernel == KernelForm::attention) s.attention_s += t;
        if (is_head(n.name)) s.head_s += t;
    }
    s.peak_bytes = static_cast<double>(a.memory.peak_bytes);
    s.weight_bytes = static_cast<double>(a.parameter_bytes);
    return s;
}

// ---- requests ------------------------------------------------------------------------------

// SplitMix64 (Steele et al. 2014): a portable generator, so a seed gives the same requests on
// every platform (std:: distributions are implementation-defined).
struct Rng {
    std::uint64_t s;
    std::uint64_t next() {
        std::uint64_t z = (s += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
    double exponential() { return -std::log1p(-uniform()); }                    // mean 1
    double normal() {                                                           // Box-Muller
        const double u = 1.0 - uniform(), v = uniform();
        return std::sqrt(-2.0 * std::log(u)) * std::cos(2.0 * std::numbers::pi * v);
    }
};

std::int64_t draw(const LengthDist& d, Rng& rng) {
    switch (d.kind) {
        case LengthDist::Kind::fixed: return static_cast<std::int64_t>(d.a);
        case LengthDist::Kind::uniform: return static_cast<std::int64_t>(d.a) + static_cast<std::int64_t>(rng.uniform() * (d.b - d.a + 1));
        case LengthDist::Kind::normal: return std::max<std::int64_t>(1, std::llround(d.a + d.b * rng.normal()));
        case LengthDist::Kind::exponential: return std::max<std::int64_t>(1, std::llround(d.a * rng.exponential()));
    }
    return 1;
}

struct Request {
    double arrival = 0;
    std::int64_t prompt = 0, output = 0;
    // Simulation state.
    std::int64_t generated = 0;  // output tokens sampled
    std::int64_t cached = 0;     // tokens whose K and V are in the cache
    std::int64_t target = 0;     // tokens to prefill before the next sample (prompt + generated on a recompute)
    std::int64_t blocks = 0;
    double scheduled = -1, first_token = -1, finish = -1;
    bool prefilling() const { return cached < target; }
};

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

Percentiles percentiles(std::vector<double> v) {
    Percentiles p;
    if (v.empty()) return p;
    std::sort(v.begin(), v.end());
    double sum = 0;
    for (double x : v) sum += x;
    p.mean = sum / static_cast<double>(v.size());
    auto rank = [&](double q) {  // nearest rank
        const auto i = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size())));
        return v[std::clamp<std::size_t>(i, 1, v.size()) - 1];
    };
    p.p50 = rank(0.50), p.p90 = rank(0.90), p.p99 = rank(0.99), p.max = v.back();
    return p;
}

double quantile_of(const Percentiles& p, double q) { return q >= 0.99 ? p.p99 : q >= 0.9 ? p.p90 : p.p50; }

}  // namespace

// ---- LengthDist ------------------------------------------------------------------------------

LengthDist LengthDist::parse(const std::string& text, const std::string& flag) {
    LengthDist d;
    d.text = text;
    std::vector<std::string> parts;
    std::string cur;
    for (char c : text) {
        if (c == ':') {
            parts.push_back(cur);
            cur.clear();
        } else {
            cur += c;
        }
    }
    parts.push_back(cur);
    auto number = [&](const std::string& s) {
        const auto [v, used] = leading_number(s);
        if (used != s.size() || s.empty() || !(v > 0) || !std::isfinite(v))
            throw InputError(flag + " '" + text + "': expected a positive number, got '" + s + "'");
        return v;
    };
    const std::string usage = " (N, uniform:A:B, normal:MEAN:STD or exp:MEAN)";
    if (parts.size() == 1) {
        d.kind = Kind::fixed, d.a = number(parts[0]);
        if (d.a != std::floor(d.a)) throw InputError(flag + " '" + text + "': a fixed length is a whole number of tokens");
    } else if (parts[0] == "uniform" && parts.size() == 3) {
        d.kind = Kind::uniform, d.a = std::floor(number(parts[1])), d.b = std::floor(number(parts[2]));
        if (d.b < d.a) throw InputError(flag + " '" + text + "': uniform:A:B needs A <= B");
    } else if (parts[0] == "normal" && parts.size() == 3) {
        d.kind = Kind::normal, d.a = number(parts[1]), d.b = number(parts[2]);
    } else if (parts[0] == "exp" && parts.size() == 2) {
        d.kind = Kind::exponential, d.a = number(parts[1]);
    } else {
        throw InputError(flag + " '" + text + "': unknown distribution" + usage);
    }
    return d;
}

std::int64_t LengthDist::max_value() const {
    if (kind == Kind::fixed) return static_cast<std::int64_t>(a);
    if (kind == Kind::uniform) return static_cast<std::int64_t>(b);
    return -1;
}

// ---- ServeCosts ------------------------------------------------------------------------------

double ServeCosts::body(double tokens) const { return loglerp(body_n, body_s, tokens); }
double ServeCosts::head(double sequences) const { return sequences <= 0 ? 0 : lerp(head_s, head_t, sequences); }
double ServeCosts::prefill_attention(double tokens) const { return loglerp(pre_p, pre_t, tokens); }

double ServeCosts::decode_attention(double batch, double context) const {
    if (batch <= 0) return 0;
    // Bilinear: along the context on the two batch rows around `batch`, then between them (called
    // every iteration: no allocation).
    const std::size_t nc = dec_c.size();
    const auto row = [&](std::size_t i) { return lerp(dec_c, dec_t.data() + i * nc, context); };
    if (dec_b.size() == 1) return row(0);
    const std::size_t i = segment(dec_b, batch);
    const double f = (batch - dec_b[i]) / (dec_b[i + 1] - dec_b[i]);
    const double lo = row(i);
    return std::max(0.0, lo + f * (row(i + 1) - lo));
}

ServeCosts build_serve_costs(const DecoderArch& model, const Hardware& hw, const ServeOptions& options) {
    ServeCosts c;
    DecoderArch arch = model;
    Quantization quant = options.quant;
    apply_inference_dtype(arch, quant, options.dtype);
    check_quantization(quant);
    if (options.tp > 1 && options.cluster == nullptr)
        throw InputError("--tp " + std::to_string(options.tp) + ": name the cluster the ranks run on with --cluster");
    if (options.max_seqs < 1) throw InputError("--max-batch must be at least 1");
    if (options.block_size < 1) throw InputError("--block-size must be at least 1");
    c.arch = arch;
    c.max_seqs = options.max_seqs;
    c.max_tokens =
        options.max_tokens > 0 ? options.max_tokens : (options.chunked_prefill ? 2048 : std::max<std::int64_t>(2048, arch.max_positions));
    if (!options.chunked_prefill && c.max_tokens < arch.max_positions) {
        throw InputError("--max-tokens " + std::to_string(c.max_tokens) + " is below the model's " + std::to_string(arch.max_positions) +
                         " positions: without --chunked-prefill a prompt must fit one iteration");
    }
    c.capacity_bytes = hw.device_memory().capacity_bytes.value;
    c.kv_dtype = kv_cache_dtype(arch, quant);
    c.kv_bytes_per_token = kv_cache_bytes_per_token(arch, c.kv_dtype, options.tp);

    AnalysisOptions aopt = options.analysis;
    if (options.cuda_graphs) aopt.gpu.host_issue = false;
    const auto cache = make_kernel_cost_cache();
    if (aopt.cost_cache == nullptr) aopt.cost_cache = cache.get();
    PhaseOptions base;
    base.tp = options.tp;
    base.quant = quant;

    // body(N) and the activations: prefill steps of N tokens (as sequences of at most the model's
    // positions), less their attention and head.
    const std::int64_t top_n = std::max(c.max_tokens, c.max_seqs);
    std::int64_t longest = 1;
    while (longest * 2 <= arch.max_positions) longest *= 2;
    for (double n : pow2_grid(top_n)) {
        const auto tokens = static_cast<std::int64_t>(n);
        PhaseOptions p = base;
        p.phase = InferencePhase::prefill;
        p.tokens = std::min(tokens, longest);
        if (tokens % p.tokens != 0) p.tokens = tokens <= arch.max_positions ? tokens : 1;
        p.batch = tokens / p.tokens;
        const StepParts s = analyse_step(arch, hw, options, aopt, p);
        ++c.analyses;
        c.body_n.push_back(n);
        c.body_s.push_back(std::max(0.0, s.step_s - s.attention_s - s.head_s));
        c.weight_bytes = s.weight_bytes;
        c.activation_bytes = std::max(c.activation_bytes, s.peak_bytes - s.weight_bytes);
    }
    // Causal attention over one prompt of P tokens, and the decode head and attention, on one
    // layer (the layers are alike) scaled to all.
    DecoderArch one = arch;
    one.layers = 1;
    const double layers = static_cast<double>(arch.layers);
    for (double pl : pow2_grid(arch.max_positions)) {
        PhaseOptions p = base;
        p.phase = InferencePhase::prefill;
        p.tokens = static_cast<std::int64_t>(pl);
        p.batch = 1;
        c.pre_p.push_back(pl);
        c.pre_t.push_back(analyse_step(one, hw, options, aopt, p).attention_s * layers);
        ++c.analyses;
    }
    c.dec_b = pow2_grid(c.max_seqs);
    const std::int64_t window = arch.sliding_window > 0 ? std::min(arch.sliding_window, arch.max_positions) : arch.max_positions;
    c.dec_c = pow2_grid(window, 16);
    for (double b : c.dec_b) {
        for (double ctx : c.dec_c) {
            PhaseOptions p = base;
            p.phase = InferencePhase::decode;
            p.batch = static_cast<std::int64_t>(b);
            p.context = static_cast<std::int64_t>(ctx) - 1;  // attends to ctx tokens
            const StepParts s = analyse_step(one, hw, options, aopt, p);
            ++c.analyses;
            c.dec_t.push_back(s.attention_s * layers);
            if (ctx == c.dec_c.front()) {
                c.head_s.push_back(b);
                c.head_t.push_back(s.head_s);
            }
        }
    }
    return c;
}

// ---- the simulation --------------------------------------------------------------------------

ServeResult simulate_serving(const ServeCosts& c, const ServeOptions& opt) {
    if (!(opt.rate > 0)) throw InputError("--rate must be a positive number of requests a second, got " + std::to_string(opt.rate));
    if (opt.requests < 1) throw InputError("--requests must be at least 1");
    const DecoderArch& arch = c.arch;
    const std::int64_t positions = arch.max_positions;
    for (const auto* d : {&opt.prompt, &opt.output}) {
        if (d->max_value() >= positions) {
            throw InputError(std::string(d == &opt.prompt ? "--prompt-len " : "--output-len ") + d->text + ": lengths up to " +
                             std::to_string(d->max_value()) + " tokens, beyond the model's " + std::to_string(positions) + " positions");
        }
    }
    ServeResult r;
    r.requests = opt.requests;
    // The cache: blocks from the memory the weights and the largest step's activations leave.
    const double block_bytes = c.kv_bytes_per_token * static_cast<double>(opt.block_size);
    std::int64_t total_blocks = opt.kv_blocks;
    if (total_blocks <= 0) {
        const double mem = opt.memory_utilization * c.capacity_bytes;
        if (!(opt.memory_utilization > 0 && opt.memory_utilization <= 1))
            throw InputError("--memory-utilization must be in (0, 1], got " + std::to_string(opt.memory_utilization));
        total_blocks = static_cast<std::int64_t>(std::floor((mem - c.weight_bytes - c.activation_bytes) / block_bytes));
    }
    r.kv_blocks = std::max<std::int64_t>(0, total_blocks);

    // Requests: arrivals and lengths from the seed (prompt + output within the positions).
    Rng rng{opt.seed};
    std::vector<Request> req(static_cast<std::size_t>(opt.requests));
    double t_arrive = 0;
    const bool burst = std::isinf(opt.rate);
    for (Request& q : req) {
        if (!burst) t_arrive += opt.poisson ? rng.exponential() / opt.rate : 1.0 / opt.rate;
        q.arrival = burst ? 0.0 : t_arrive;
        q.prompt = std::clamp<std::int64_t>(draw(opt.prompt, rng), 1, positions - 1);
        const std::int64_t out = draw(opt.output, rng);
        q.output = std::clamp<std::int64_t>(out, 1, positions - q.prompt);
        if (q.output != out) ++r.clamped;
        q.target = q.prompt;
    }
    const std::int64_t watermark = std::max<std::int64_t>(0, static_cast<std::int64_t>(0.01 * static_cast<double>(r.kv_blocks)));
    std::int64_t longest = 0;
    double prompt_sum = 0, output_sum = 0;
    for (const Request& q : req) {
        longest = std::max(longest, q.prompt + q.output - 1);
        prompt_sum += static_cast<double>(q.prompt), output_sum += static_cast<double>(q.output);
    }
    r.mean_prompt = prompt_sum / static_cast<double>(req.size());
    r.mean_output = output_sum / static_cast<double>(req.size());
    if (ceil_div(longest, opt.block_size) > r.kv_blocks - watermark) {
        throw InputError("the KV cache (" + std::to_string(r.kv_blocks) + " blocks of " + std::to_string(opt.block_size) + " tokens, " +
                         std::to_string(static_cast<long long>(static_cast<double>(r.kv_blocks) * block_bytes / 1e6)) +
                         " MB) cannot hold one sequence of " + std::to_string(longest) + " tokens of " + arch.name +
                         (opt.kv_blocks > 0 ? "" : " after the weights and activations") +
                         "; give more memory (--tp, a larger chip, quantization) or shorter requests");
    }
    const double mean_blocks = std::ceil((r.mean_prompt + r.mean_output) / static_cast<double>(opt.block_size));
    r.max_batch_by_cache = std::min<std::int64_t>(opt.max_seqs, static_cast<std::int64_t>(static_cast<double>(r.kv_blocks) / mean_blocks));

    std::deque<std::size_t> waiting;
    std::vector<std::size_t> running;  // admission order
    std::size_t next = 0;              // next arrival
    std::int64_t free_blocks = r.kv_blocks, done = 0, in_system = 0;
    double t = 0, area_in_system = 0, area_running = 0, area_blocks = 0, decode_seq_sum = 0;
    std::int64_t decode_iterations = 0;
    const std::int64_t sample_every = std::max<std::int64_t>(1, opt.requests * static_cast<std::int64_t>(r.mean_output) / 400);

    auto grow = [&](Request& q, std::int64_t tokens) {  // blocks for `tokens` cached; false when none are free
        const std::int64_t need = ceil_div(tokens, opt.block_size) - q.blocks;
        if (need <= 0) return true;
        if (need > free_blocks) return false;
        free_blocks -= need, q.blocks += need;
        return true;
    };
    auto preempt = [&](std::size_t i) {  // recomputation: free everything, wait at the front
        Request& q = req[i];
        free_blocks += q.blocks;
        q.blocks = 0, q.cached = 0, q.target = q.prompt + q.generated;
        waiting.push_front(i);
        ++r.preemptions;
    };

    while (done < opt.requests) {
        // Arrivals up to now join the queue.
        for (; next < req.size() && req[next].arrival <= t; ++next) {
            waiting.push_back(next);
            ++in_system;
        }
        if (running.empty() && waiting.empty()) {
            t = req[next].arrival;
            continue;
        }
        // ---- schedule one iteration
        struct Chunk {
            std::size_t req;
            std::int64_t from, tokens;
        };
        std::vector<Chunk> chunks;          // prompt tokens computed this iteration
        std::vector<std::size_t> decoding;  // sequences decoding one token
        std::int64_t budget = c.max_tokens;
        const std::int64_t preempted_before = r.preemptions;
        // Blocks for running[k] to hold `tokens`, preempting the latest admitted sequences while
        // there are too few; false when it had to preempt running[k] itself.
        auto make_room = [&](std::size_t k, std::int64_t tokens) {
            while (!grow(req[running[k]], tokens)) {
                const std::size_t victim = running.back();
                running.pop_back();
                preempt(victim);
                if (running.size() <= k) return false;
            }
            return true;
        };
        auto admit = [&](bool partial) {  // from the queue, first come first served
            while (!waiting.empty() && budget > 0 && static_cast<std::int64_t>(running.size()) < opt.max_seqs) {
                Request& q = req[waiting.front()];
                const std::int64_t n = partial ? std::min(budget, q.target - q.cached) : q.target - q.cached;
                if (n > budget) break;
                const std::int64_t need = ceil_div(q.cached + n, opt.block_size) - q.blocks;
                if (free_blocks - need < watermark) break;
                grow(q, q.cached + n);
                if (q.scheduled < 0) q.scheduled = t;
                chunks.push_back({waiting.front(), q.cached, n});
                running.push_back(waiting.front());
                waiting.pop_front();
                budget -= n;
            }
        };
        if (!opt.chunked_prefill) {
            admit(false);
            if (chunks.empty()) {
                // One decode token for every running sequence, preempting the latest admitted when
                // the cache is out of blocks.
                for (std::size_t k = 0; k < running.size(); ++k)
                    if (make_room(k, req[running[k]].cached + 1)) decoding.push_back(running[k]);
            }
        } else {
            // Decodes first, then unfinished prefills, then new requests, within the token budget.
            for (std::size_t k = 0; k < running.size() && budget > 0; ++k) {
                if (req[running[k]].prefilling()) continue;
                if (!make_room(k, req[running[k]].cached + 1)) break;
                decoding.push_back(running[k]);
                --budget;
            }
            for (std::size_t k = 0; k < running.size() && budget > 0; ++k) {
                Request& q = req[running[k]];
                if (!q.prefilling()) continue;
                const std::int64_t n = std::min(budget, q.target - q.cached);
                if (!make_room(k, q.cached + n)) break;
                chunks.push_back({running[k], q.cached, n});
                budget -= n;
            }
            // vLLM V1 admits no new request in an iteration that had to preempt one.
            if (preempted_before == r.preemptions) admit(true);
        }
        if (chunks.empty() && decoding.empty()) {
            // Nothing fits now (the cache is held by prefills in progress): wait for an arrival.
            // Unreachable with the single-sequence check above unless every block is reserved.
            throw InputError("serve: the scheduler cannot make progress with " + std::to_string(r.kv_blocks) + " KV blocks");
        }
        // ---- the iteration's time
        std::int64_t tokens = static_cast<std::int64_t>(decoding.size()), sampling = static_cast<std::int64_t>(decoding.size());
        double attention = 0, context_sum = 0;
        for (std::size_t i : decoding) {
            const Request& q = req[i];
            const std::int64_t attended = attended_tokens(arch, q.cached);
            context_sum += static_cast<double>(attended);
        }
        if (!decoding.empty())
            attention += c.decode_attention(static_cast<double>(decoding.size()), context_sum / static_cast<double>(decoding.size()));
        for (const Chunk& ch : chunks) {
            tokens += ch.tokens;
            attention += c.prefill_attention(static_cast<double>(ch.from + ch.tokens)) - c.prefill_attention(static_cast<double>(ch.from));
            if (ch.from + ch.tokens == req[ch.req].target) ++sampling;
        }
        const double dt = c.body(static_cast<double>(tokens)) + c.head(static_cast<double>(sampling)) + attention;
        // ---- advance: requests in the system over [t, t + dt), arrivals inside it from their arrival
        area_in_system += static_cast<double>(in_system) * dt;
        for (std::size_t k = next; k < req.size() && req[k].arrival < t + dt; ++k) area_in_system += t + dt - std::max(t, req[k].arrival);
        for (; next < req.size() && req[next].arrival < t + dt; ++next) {
            waiting.push_back(next);
            ++in_system;
        }
        area_running += static_cast<double>(running.size()) * dt;
        area_blocks += static_cast<double>(r.kv_blocks - free_blocks) * dt;
        r.peak_cache_utilization =
            std::max(r.peak_cache_utilization, static_cast<double>(r.kv_blocks - free_blocks) / static_cast<double>(r.kv_blocks));
        r.peak_running = std::max(r.peak_running, static_cast<std::int64_t>(running.size()));
        t += dt;
        ++r.iterations;
        if (decoding.empty()) ++r.prefill_iterations;
        if (!decoding.empty()) {
            decode_seq_sum += static_cast<double>(decoding.size());
            ++decode_iterations;
        }
        // ---- results of the iteration
        auto sample = [&](Request& q) {
            ++q.generated;
            if (q.first_token < 0) q.first_token = t;
            if (q.generated >= q.output) q.finish = t;
        };
        for (std::size_t i : decoding) {
            Request& q = req[i];
            ++q.cached, ++q.target;
            sample(q);
        }
        for (const Chunk& ch : chunks) {
            Request& q = req[ch.req];
            q.cached += ch.tokens;
            if (q.cached == q.target) sample(q);
        }
        // Finished requests leave and free their blocks.
        std::size_t kept = 0;
        for (std::size_t k = 0; k < running.size(); ++k) {
            Request& q = req[running[k]];
            if (q.finish >= 0) {
                free_blocks += q.blocks;
                q.blocks = 0;
                ++done;
                --in_system;
            } else {
                running[kept++] = running[k];
            }
        }
        running.resize(kept);
        if (r.iterations % sample_every == 0 || done == opt.requests) {
            r.timeline.push_back({t, static_cast<std::int64_t>(running.size()), static_cast<std::int64_t>(waiting.size()),
                                  static_cast<double>(r.kv_blocks - free_blocks) / static_cast<double>(r.kv_blocks)});
        }
    }
    r.makespan_s = t;
    std::vector<double> ttft, tpot, e2e, queue;
    double tokens_total = 0, latency_sum = 0;
    for (const Request& q : req) {
        ttft.push_back(q.first_token - q.arrival);
        if (q.output > 1) tpot.push_back((q.finish - q.first_token) / static_cast<double>(q.output - 1));
        e2e.push_back(q.finish - q.arrival);
        queue.push_back(q.scheduled - q.arrival);
        tokens_total += static_cast<double>(q.prompt + q.output);
        latency_sum += q.finish - q.arrival;
    }
    r.ttft = percentiles(ttft), r.tpot = percentiles(tpot), r.e2e = percentiles(e2e), r.queue = percentiles(queue);
    r.request_throughput = static_cast<double>(opt.requests) / t;
    r.output_throughput = output_sum / t;
    r.total_throughput = tokens_total / t;
    r.mean_in_system = area_in_system / t;
    r.mean_latency_s = latency_sum / static_cast<double>(opt.requests);
    r.mean_running = area_running / t;
    r.mean_decode_batch = decode_iterations > 0 ? decode_seq_sum / static_cast<double>(decode_iterations) : 0;
    r.cache_utilization = r.kv_blocks > 0 ? area_blocks / t / static_cast<double>(r.kv_blocks) : 0;
    return r;
}

RateSearch find_max_rate(const ServeCosts& costs, const ServeOptions& opt, double ttft_target_s, double tpot_target_s, double quantile) {
    if (ttft_target_s <= 0 && tpot_target_s <= 0) throw InputError("--find-rate needs --slo-ttft or --slo-tpot");
    RateSearch s;
    auto meets = [&](const ServeResult& r) {
        return (ttft_target_s <= 0 || quantile_of(r.ttft, quantile) <= ttft_target_s) &&
               (tpot_target_s <= 0 || quantile_of(r.tpot, quantile) <= tpot_target_s);
    };
    ServeOptions o = opt;
    // The saturated throughput bounds the sustainable rate: every request at once.
    o.rate = std::numeric_limits<double>::infinity();
    const ServeResult saturated = simulate_serving(costs, o);
    ++s.simulations;
    double lo = 0, hi = saturated.request_throughput * 1.05;
    for (int i = 0; i < 14; ++i) {
        const double mid = 0.5 * (lo + hi);
        o.rate = mid;
        ServeResult r = simulate_serving(costs, o);
        ++s.simulations;
        if (meets(r)) {
            lo = mid;
            s.at_rate = std::move(r);
        } else {
            hi = mid;
        }
    }
    s.rate = lo;
    return s;
}

}  // namespace roofline
