// Property tests (issue #18): random valid graphs, every op family the generator knows, random
// shapes, dtypes and chips, inference and training, with and without fusion and recomputation; on
// each, the invariants every analysis must keep. ROOFLINE_PROPERTY_GRAPHS sets how many (10^4 by
// default, what `make test` runs; `make property` runs 10^6). A failing case is shrunk to the fewest
// ops that still fail and printed as a roofline-model/1 file.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "model/autodiff.hpp"
#include "model/model_json.hpp"
#include "ops/error.hpp"
#include "reports/report.hpp"
#include "sim/analysis.hpp"
#include "sim/builtin_hardware.hpp"
#include "sim/fusion.hpp"
#include "sim/plan.hpp"
#include "sim/recompute.hpp"

using nlohmann::json;
using namespace roofline;

namespace {

struct Value {
    std::string name;
    std::vector<std::int64_t> shape;
};

// A random model of `ops` ops from `seed`: the same seed gives the same first k ops for every
// ops >= k (each op draws only from what came before), which is how a failing case shrinks.
json random_model(std::uint64_t seed, int ops) {
    std::mt19937_64 rng(seed);
    const auto pick = [&](auto lo, auto hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
    const std::int64_t widths[] = {1, 3, 8, 16, 32, 64};
    const auto width = [&] { return widths[pick(0, 5)]; };
    const char* dtypes[] = {"f32", "bf16", "f16"};
    json doc = {{"format", "roofline-model/1"}, {"name", "random-" + std::to_string(seed)}};
    doc["dtype_policy"] = {{"compute", dtypes[pick(0, 2)]}};
    json inputs = json::array(), params = json::array(), nodes = json::array();
    std::vector<Value> values;
    {
        std::vector<std::int64_t> shape;
        const int rank = static_cast<int>(pick(2, 4));
        for (int i = 0; i < rank; ++i) shape.push_back(i + 1 == rank ? width() : pick(1, 12));
        inputs.push_back({{"name", "x"}, {"shape", shape}});
        values.push_back({"x", shape});
    }
    int next = 0;
    const auto param = [&](std::vector<std::int64_t> shape) {
        const std::string n = "p" + std::to_string(params.size());
        params.push_back({{"name", n}, {"shape", shape}});
        return n;
    };
    const auto node = [&](const std::string& op, std::vector<std::string> in, std::vector<std::int64_t> shape, json attrs = nullptr) {
        const std::string n = "n" + std::to_string(next++) + "." + op;
        json j = {{"name", n}, {"op", op}, {"inputs", in}};
        if (!attrs.is_null()) j["attrs"] = attrs;
        nodes.push_back(j);
        values.push_back({n, std::move(shape)});
    };
    for (int i = 0; i < ops; ++i) {
        const Value v = values[static_cast<std::size_t>(pick(0, static_cast<std::int64_t>(values.size()) - 1))];
        const std::int64_t last = v.shape.back();
        const auto rank = static_cast<int>(v.shape.size());
        switch (pick(0, 12)) {
            case 0: {
                static const char* unary[] = {"relu", "silu", "sigmoid", "tanh", "exp", "sin", "neg", "erf", "sqrt", "log"};
                node(unary[pick(0, 9)], {v.name}, v.shape);
                break;
            }
            case 1: node("gelu", {v.name}, v.shape, {{"approximate", pick(0, 1) ? "tanh" : "erf"}}); break;
            case 2: {
                static const char* binary[] = {"add", "sub", "mul", "div", "maximum"};
                const char* op = binary[pick(0, 4)];
                if (pick(0, 1)) {  // a broadcast parameter of the last dimension
                    node(op, {v.name, param({last})}, v.shape);
                } else {  // an earlier value of the same shape, or itself
                    std::vector<std::string> same;
                    for (const Value& w : values)
                        if (w.shape == v.shape) same.push_back(w.name);
                    node(op, {v.name, same[static_cast<std::size_t>(pick(0, static_cast<std::int64_t>(same.size()) - 1))]}, v.shape);
                }
                break;
            }
            case 3: {
                const std::int64_t out = width();
                std::vector<std::string> in{v.name, param({out, last})};
                if (pick(0, 1)) in.push_back(param({out}));
                std::vector<std::int64_t> s = v.shape;
                s.back() = out;
                node("linear", in, s);
                break;
            }
            case 4: {
                if (rank < 2) break;
                const std::int64_t out = width();
                std::vector<std::int64_t> s = v.shape;
                s.back() = out;
                node("matmul", {v.name, param({last, out})}, s);
                break;
            }
            case 5: node("softmax", {v.name}, v.shape, {{"axis", -1}}); break;
            case 6:
                if (pick(0, 1))
                    node("layernorm", {v.name, param({last}), param({last})}, v.shape);
                else
                    node("rmsnorm", {v.name, param({last})}, v.shape);
                break;
            case 7: {
                if (rank < 2) break;
                static const char* reduce[] = {"reduce_sum", "reduce_mean", "reduce_max"};
                const bool keep = pick(0, 1) == 1;
                std::vector<std::int64_t> s = v.shape;
                if (keep)
                    s.back() = 1;
                else
                    s.pop_back();
                node(reduce[pick(0, 2)], {v.name}, s, {{"axes", {rank - 1}}, {"keepdim", keep}});
                break;
            }
            case 8: {
                if (rank < 2) break;
                std::vector<std::int64_t> s = v.shape;
                std::swap(s[static_cast<std::size_t>(rank - 1)], s[static_cast<std::size_t>(rank - 2)]);
                node("transpose", {v.name}, s, {{"dim0", rank - 2}, {"dim1", rank - 1}, {"copy", pick(0, 1) == 1}});
                break;
            }
            case 9: {
                if (rank < 3) break;
                std::vector<std::int64_t> s(v.shape.begin() + 1, v.shape.end());
                s.front() *= v.shape.front();
                node("reshape", {v.name}, s, {{"shape", s}});
                break;
            }
            case 10: {
                std::vector<std::int64_t> s = v.shape;
                const int axis = pick(0, 1) ? rank - 1 : 0;
                s[static_cast<std::size_t>(axis)] *= 2;
                node("concat", {v.name, v.name}, s, {{"axis", axis}});
                break;
            }
            case 11: {
                if (rank != 4) break;
                json attrs = {{"causal", pick(0, 1) == 1}};
                node("attention", {v.name, v.name, v.name}, v.shape, attrs);
                break;
            }
            case 12: {
                if (rank < 2 || v.shape[static_cast<std::size_t>(rank - 2)] != last) break;
                node("causal_mask", {v.name}, v.shape);
                break;
            }
        }
    }
    node("reduce_mean", {values.back().name}, {});  // the loss: a scalar of the last value
    doc["inputs"] = inputs;
    doc["parameters"] = params;
    doc["nodes"] = nodes;
    doc["outputs"] = {nodes.back()["name"]};
    return doc;
}

struct Settings {
    std::string hw;
    bool training = false;
    Optimizer optimizer = Optimizer::adamw;
};

Settings settings_of(std::uint64_t seed) {
    static const char* chips[] = {"h100-sxm", "a100-pcie-40gb", "t4", "v100-pcie-32gb", "p100-pcie-16gb", "l4", "tpu-v4", "tpu-v5e"};
    std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ULL);
    Settings s;
    s.hw = chips[rng() % 8];
    s.training = rng() % 2 == 0;
    s.optimizer = static_cast<Optimizer>(rng() % 4);
    return s;
}

std::string first_broken(const json& doc, const Settings& s, bool check_determinism);

// The first invariant the graph breaks (an exception from a valid graph is one), or empty.
std::string broken(const json& doc, const Settings& s, bool check_determinism) {
    try {
        return first_broken(doc, s, check_determinism);
    } catch (const std::exception& e) {
        return std::string("an error on a valid graph: ") + e.what();
    }
}

std::string first_broken(const json& doc, const Settings& s, bool check_determinism) {
    Graph forward;
    try {
        forward = load_model(doc, "random.json");
    } catch (const InputError& e) {
        return std::string("the generator made an invalid model: ") + e.what();
    }
    const Hardware& hw = builtin_hardware(s.hw);
    TrainingOptions t;
    t.optimizer = s.optimizer;
    const Graph step = s.training ? build_training_step(forward, t) : forward;
    const Analysis a = analyze(step, hw);
    // 1. No op is modelled faster than its own roofline lower bound, and every time is finite.
    for (const OpAnalysis& op : a.ops) {
        const std::string at = "node '" + step.node(op.node).name + "'";
        if (!std::isfinite(op.roofline->time_s) || op.roofline->time_s < 0) return at + ": lower bound not finite";
        if (!op.modelled) continue;
        // A TPU kernel of an XLA elementwise fusion reads or writes less than the op alone: its own
        // lower bound (of the traffic it moves) is the floor there; on a GPU every kernel is the op's.
        const double floor =
            hw.kind == HardwareKind::gpu ? std::max(op.roofline->time_s, op.modelled->lower_bound_s) : op.modelled->lower_bound_s;
        if (!std::isfinite(op.modelled->time_s) || !(op.modelled->time_s >= floor * (1 - 1e-9)))
            return at + ": modelled " + json(op.modelled->time_s).dump() + " s below its lower bound " + json(floor).dump() + " s";
    }
    if (!std::isfinite(a.schedule.step_time_s) || a.schedule.step_time_s < 0) return "step time not finite";
    // 2. Memory is never negative.
    for (const MemoryStep& m : a.memory.steps)
        for (const std::int64_t b : m.bytes)
            if (b < 0) return "negative memory at node '" + step.node(m.node).name + "'";
    if (a.memory.peak_bytes < 0) return "negative peak memory";
    // 3. Fusion never adds device-memory traffic.
    const FusionPlan fusion = find_fusion_groups(step, hw);
    for (const FusionGroup& g : fusion.groups)
        if (g.hbm_bytes_saved() < 0) return "fusion group " + g.name + " adds " + std::to_string(-g.hbm_bytes_saved()) + " bytes";
    const Evaluated fused = evaluate_option(step, hw, std::nullopt, true, AnalysisOptions{});
    if (!std::isfinite(fused.analysis.schedule.step_time_s)) return "fused step time not finite";
    // 4. Recomputation never raises the peak over none's, and only adds FLOPs.
    if (s.training) {
        for (const RecomputeStrategy r : {RecomputeStrategy::selective, RecomputeStrategy::full}) {
            const Evaluated e = evaluate_option(step, hw, plan_strategy(step, r), false, AnalysisOptions{});
            const std::string name(strategy_name(r));
            if (e.analysis.memory.peak_bytes > a.memory.peak_bytes)
                return name + " recomputation raises the peak: " + std::to_string(e.analysis.memory.peak_bytes) + " > " +
                       std::to_string(a.memory.peak_bytes) + " bytes";
            if (e.analysis.total.flops() < a.total.flops()) return name + " recomputation removes FLOPs";
        }
    }
    // 5. Same input, same bytes out.
    if (check_determinism) {
        const std::string mode = s.training ? "training" : "inference";
        const std::string once = report_json_text(ReportContext{step, hw, a, mode, s.training ? &t : nullptr});
        const Analysis again = analyze(step, hw);
        if (report_json_text(ReportContext{step, hw, again, mode, s.training ? &t : nullptr}) != once)
            return "the report differs on a rerun";
    }
    return {};
}

}  // namespace

TEST_CASE("random graphs keep the invariants", "[property]") {
    // Expected: none of the invariants above breaks on any graph (a broken one fails the test,
    // shrunk and printed as a model file).
    const char* env = std::getenv("ROOFLINE_PROPERTY_GRAPHS");
    const long count = env != nullptr ? std::strtol(env, nullptr, 10) : 10000;
    REQUIRE(count > 0);
    long checked = 0;
    for (long i = 0; i < count; ++i) {
        const auto seed = static_cast<std::uint64_t>(i) * 0x2545F4914F6CDD1DULL + 1;
        const int ops = 1 + static_cast<int>(seed % 12);
        const Settings s = settings_of(seed);
        std::string why = broken(random_model(seed, ops), s, i % 16 == 0);
        if (!why.empty()) {
            int fewest = ops;  // shrink: the fewest ops of this seed that still break an invariant
            for (int k = ops - 1; k >= 0; --k) {
                const std::string w = broken(random_model(seed, k), s, i % 16 == 0);
                if (!w.empty()) fewest = k, why = w;
            }
            FAIL("graph " << i << " (seed " << seed << ", " << s.hw << ", " << (s.training ? "training" : "inference") << "): " << why
                          << "\n"
                          << random_model(seed, fewest).dump(2));
        }
        ++checked;
    }
    CHECK(checked == count);
}
