// Planning: fusion groups and their savings, activation recomputation (strategies, gradients,
// memory), the budget planner's Pareto frontier and `roofline plan`.
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "model/autodiff.hpp"
#include "model/executor.hpp"
#include "model/model_json.hpp"
#include "model/templates.hpp"
#include "sim/fused_reference.hpp"
#include "sim/fusion.hpp"
#include "sim/plan.hpp"
#include "sim/recompute.hpp"
#include "support.hpp"

using namespace roofline;

namespace {

// A two-layer GPT small enough for the CPU reference (f32, dropout 0.1 so that recomputed and
// fused dropout masks are checked too).
Graph tiny_gpt(std::int64_t layers = 2) {
    const nlohmann::json cfg = {{"n_layer", layers}, {"d_model", 32}, {"n_head", 2}, {"vocab", 64},
                                {"n_ctx", 16},       {"batch", 2},    {"seq", 8},    {"dtype", "f32"}};
    return load_model(expand_template("gpt", cfg, "test"), "test");
}

Graph train(const Graph& g) { return build_training_step(g, TrainingOptions{}); }

// The source values of g, keyed by name, as the executor fills them: a transformed graph numbers
// its tensors differently, so values are handed over by name.
std::map<TensorId, HostTensor> sources_by_name(const Graph& from, const Graph& to) {
    std::map<TensorId, HostTensor> given;
    for (std::size_t t = 0; t < from.tensors().size(); ++t) {
        if (from.tensors()[t].producer != kNoNode) continue;
        given[to.find_tensor(from.tensors()[t].name)] = deterministic_value(from, static_cast<TensorId>(t), 1);
    }
    return given;
}

bool same_values(const HostTensor& a, const HostTensor& b, double rel) {
    if (a.data.size() != b.data.size()) return false;
    for (std::size_t i = 0; i < a.data.size(); ++i) {
        const double tol = rel * std::max(1.0, std::abs(a.data[i]));
        if (!(std::abs(a.data[i] - b.data[i]) <= tol)) return false;
    }
    return true;
}

std::int64_t bytes_of(const Graph& g, const std::string& tensor) { return g.tensor(g.find_tensor(tensor)).desc.bytes(); }

// One attention core on [1, 4 heads, n, d] bf16: scores = Q K^T, then (scaled_causal) a 1/sqrt(d)
// scale and a causal mask, softmax, context = P V.
Graph attention_graph(std::int64_t n, std::int64_t d, bool scaled_causal) {
    Graph g;
    const TensorId q = g.add_input("q", {{1, 4, n, d}, DType::bf16});
    const TensorId k = g.add_input("k", {{1, 4, n, d}, DType::bf16});
    const TensorId v = g.add_input("v", {{1, 4, n, d}, DType::bf16});
    Attrs tb;
    tb.set("transpose_b", true);
    TensorId s = g.node(g.add_node("scores", OpKind::matmul, {q, k}, tb, {})).outputs[0];
    if (scaled_causal) {
        Attrs f;
        f.set("factor", 1.0 / std::sqrt(static_cast<double>(d)));
        s = g.node(g.add_node("scale", OpKind::scale, {s}, f, {})).outputs[0];
        s = g.node(g.add_node("mask", OpKind::causal_mask, {s}, {}, {})).outputs[0];
    }
    const TensorId pr = g.node(g.add_node("softmax", OpKind::softmax, {s}, {}, {})).outputs[0];
    g.mark_output(g.node(g.add_node("context", OpKind::matmul, {pr, v}, {}, {})).outputs[0]);
    return g;
}

}  // namespace

TEST_CASE("fusion: y = relu(Wx + b), z = sin(x + y) saves exactly the intermediates' round trips", "[plan][fusion]") {
    // The seeds' examples. Unfused, h = Wx + b, y and s = x + y are each written by one kernel and
    // read by the next; fused into the GEMM's epilogue they stay in registers. x is read by the
    // GEMM's main loop and again by the epilogue's add in both cases, so the saving is exactly
    // 2 x (|h| + |y| + |s|).
    Graph g;
    const TensorId x = g.add_input("x", {{128, 256}, DType::f32});
    const TensorId w = g.add_parameter("W", {{256, 256}, DType::f32});
    const TensorId b = g.add_parameter("b", {{256}, DType::f32});
    const TensorId h = g.node(g.add_node("h", OpKind::linear, {x, w, b}, {}, {})).outputs[0];
    const TensorId y = g.node(g.add_node("y", OpKind::relu, {h}, {}, {})).outputs[0];
    const TensorId s = g.node(g.add_node("s", OpKind::add, {x, y}, {}, {})).outputs[0];
    g.mark_output(g.node(g.add_node("z", OpKind::sin, {s}, {}, {})).outputs[0]);
    const Hardware hw = builtin_hardware("h100-sxm");
    const FusionPlan p = find_fusion_groups(g, hw);
    REQUIRE(p.groups.size() == 1);
    const FusionGroup& grp = p.groups[0];
    CHECK(grp.kind == FusionKind::gemm);
    CHECK(grp.nodes.size() == 4);
    const std::int64_t inter = 3 * 128 * 256 * 4;
    CHECK(grp.intermediate_bytes == inter);
    CHECK(grp.hbm_bytes_saved() == 2 * inter);
    CHECK(grp.launches_saved == 3);
    // The fused kernel is modelled faster than the four kernels it replaces, and never below its
    // own roofline bound.
    AnalysisOptions fused;
    fused.fusion = &p;
    const Analysis a = analyze(g, hw), af = analyze(g, hw, fused);
    CHECK(af.schedule.step_time_s < a.schedule.step_time_s);
    const OpAnalysis& anchor = af.ops[static_cast<std::size_t>(grp.anchor)];
    REQUIRE(anchor.modelled);
    CHECK(anchor.modelled->time_s >= anchor.roofline->time_s);
    // A tensor read outside the group is still written: making y a graph output keeps its write.
    g.mark_output(y);
    const FusionPlan p2 = find_fusion_groups(g, hw);
    REQUIRE(p2.groups.size() == 1);
    CHECK(p2.groups[0].hbm_bytes_saved() == 2 * inter - 128 * 256 * 4);
}

TEST_CASE("fusion: flash attention's HBM bytes over the materialised version's fall as N grows", "[plan][fusion]") {
    // Dao et al. 2022, Theorem 2: the tiled algorithm makes Theta(N^2 d^2 / M) HBM accesses, the
    // materialised one Theta(N d + N^2); the ratio falls with N (towards ~3d^2/M per element pair).
    const Hardware hw = builtin_hardware("h100-sxm");
    for (std::int64_t d : {64, 128}) {
        double previous = 2.0;
        for (std::int64_t n : {256, 512, 1024, 2048, 4096}) {
            const Graph g = attention_graph(n, d, true);
            const FusionPlan p = find_fusion_groups(g, hw);
            REQUIRE(p.groups.size() == 1);
            REQUIRE(p.groups[0].kind == FusionKind::flash_attention);
            const double ratio = static_cast<double>(p.groups[0].work.bytes()) / static_cast<double>(p.groups[0].unfused_bytes);
            INFO("d=" << d << " N=" << n << " flash/materialised bytes " << ratio);
            CHECK(ratio < previous);
            previous = ratio;
        }
    }
    // The N^2 d^2 / M law itself, where the quadratic term dominates (M = 227 KiB of shared memory,
    // bf16): doubling N about quadruples the bytes, doubling d about quadruples them, halving M
    // about doubles them (the linear K/V term and block rounding keep each within 20% of the law).
    const double m = 232448;
    const auto fwd = [&](std::int64_t n, std::int64_t d, double sram) {
        return static_cast<double>(flash_forward_bytes(1, n, n, d, d, 2, sram, false));
    };
    CHECK(fwd(8192, 64, m) / fwd(4096, 64, m) == Approx(4.0).epsilon(0.2));
    CHECK(fwd(8192, 128, m) / fwd(8192, 64, m) == Approx(4.0).epsilon(0.2));
    CHECK(fwd(8192, 64, m / 2) / fwd(8192, 64, m) == Approx(2.0).epsilon(0.2));
    CHECK(static_cast<double>(flash_backward_bytes(1, 8192, 8192, 64, 64, 2, m, false)) /
              static_cast<double>(flash_backward_bytes(1, 4096, 4096, 64, 64, 2, m, false)) ==
          Approx(4.0).epsilon(0.2));
}

TEST_CASE("fusion: flash attention only where it moves fewer bytes, unless it must run fused", "[plan][fusion]") {
    // With few keys and a wide head the tiled kernel's re-reads of Q and O move more bytes than the
    // scores it saves, and the planner keeps the materialised attention (its members' bytes against
    // flash_forward_bytes). Context parallelism's ring runs attention fused whatever the bytes
    // (FusionOptions::flash_always, sim/parallel.hpp cp_runs_flash): there the flash group is required.
    const Hardware hw = builtin_hardware("h100-sxm");
    auto flash_groups = [](const FusionPlan& p) {
        int count = 0;
        for (const FusionGroup& grp : p.groups) count += grp.kind == FusionKind::flash_attention ? 1 : 0;
        return count;
    };
    FusionOptions must;
    must.flash_always = true;
    int refused = 0;
    for (std::int64_t n : {8, 16, 32, 64}) {
        for (std::int64_t d : {256, 512, 1024}) {
            const Graph g = attention_graph(n, d, false);
            std::int64_t materialised = 0;
            for (NodeId node : g.topological_order()) materialised += g.work(node).bytes();
            const bool more = flash_forward_bytes(4, n, n, d, d, 2, hw.gpu->max_shared_memory_per_block_bytes.value, false) > materialised;
            INFO("N=" << n << " d=" << d << " materialised " << materialised << " B");
            CHECK(flash_groups(find_fusion_groups(g, hw)) == (more ? 0 : 1));
            CHECK(flash_groups(find_fusion_groups(g, hw, must)) == 1);
            refused += more ? 1 : 0;
        }
    }
    CHECK(refused > 0);  // the byte rule refused somewhere in this range, so the second CHECK means something
}

TEST_CASE("fusion: the fused training step computes the same values as the unfused one", "[plan][fusion]") {
    // Every group runs as one unit with its on-chip tensors invisible to other units; flash groups
    // use the tiled online softmax and their backward recomputes the probabilities. Float64
    // reference: the online softmax reorders sums, so values agree to 1e-9 rather than bit for bit.
    const Hardware hw = builtin_hardware("h100-sxm");
    for (bool training : {false, true}) {
        const Graph g = training ? train(tiny_gpt()) : tiny_gpt();
        const FusionPlan p = find_fusion_groups(g, hw);
        std::int64_t flash = 0, flash_bwd = 0;
        for (const FusionGroup& grp : p.groups) {
            flash += grp.kind == FusionKind::flash_attention;
            flash_bwd += grp.kind == FusionKind::flash_attention_backward;
        }
        CHECK(flash == 2);
        CHECK(flash_bwd == (training ? 2 : 0));
        const auto ref = execute(g, {}, RefPrecision::f64);
        const auto fused = execute_fused(g, p, {}, RefPrecision::f64);
        std::int64_t compared = 0;
        for (std::size_t t = 0; t < g.tensors().size(); ++t) {
            if (p.on_chip[t]) continue;
            INFO(g.tensors()[t].name);
            CHECK(same_values(ref[t], fused[t], 1e-9));
            ++compared;
        }
        CHECK(compared > (training ? 300 : 50));
    }
}

TEST_CASE("recompute: every strategy gives identical gradients and a valid graph", "[plan][recompute]") {
    // A clone is the same op on the same inputs (dropout masks come from the element index), so
    // in float64 every tensor of the step, gradients and updated weights included, is bit-identical.
    const Graph g = train(tiny_gpt());
    const auto ref = execute(g, {}, RefPrecision::f64);
    for (RecomputeStrategy s : kAllStrategies) {
        INFO(strategy_name(s));
        const RecomputeResult r = apply_recompute(g, plan_strategy(g, s));
        REQUIRE_NOTHROW(verify(r.graph));
        if (s != RecomputeStrategy::none) CHECK(r.clones > 0);
        const auto got = execute(r.graph, sources_by_name(g, r.graph), RefPrecision::f64);
        for (std::size_t t = 0; t < g.tensors().size(); ++t) {
            const TensorId u = r.graph.find_tensor(g.tensors()[t].name);
            REQUIRE(u >= 0);
            CHECK(got[static_cast<std::size_t>(u)].data == ref[t].data);
        }
    }
}

TEST_CASE("recompute: full adds exactly one extra forward of each layer's recomputed ops", "[plan][recompute]") {
    const Graph g = train(tiny_gpt(3));
    const std::vector<Layer> layers = find_layers(g);
    REQUIRE(layers.size() == 3);
    const RecomputeResult r = apply_recompute(g, plan_strategy(g, RecomputeStrategy::full));
    std::map<NodeId, int> times;
    std::int64_t flops = 0;
    for (const Node& n : r.graph.nodes()) {
        if (n.recomputes == kNoNode) continue;
        const NodeId original = g.find_node(r.graph.node(n.recomputes).name);
        ++times[original];
        flops += g.work(original).flops();
    }
    CHECK(r.extra_flops == flops);
    CHECK(static_cast<std::size_t>(r.clones) == times.size());  // no node is recomputed twice
    for (const Layer& l : layers) {
        // Every node of the layer runs once more except its last (the residual add whose output is
        // the next layer's input, kept as the checkpoint).
        for (std::size_t i = 0; i < l.nodes.size(); ++i) {
            INFO(g.node(l.nodes[i]).name);
            CHECK(times[l.nodes[i]] == (i + 1 < l.nodes.size() ? 1 : 0));
        }
    }
    // And the forward activations kept for backward shrink to the layer inputs and what the
    // embeddings, head and loss keep.
    const MemoryTimeline none = memory_timeline(g), full = memory_timeline(r.graph);
    CHECK(full.saved_activation_bytes < none.saved_activation_bytes / 3);
}

TEST_CASE("recompute: sqrt segments on a chain of 1,000 equal layers store about 2 sqrt(n) activations", "[plan][recompute]") {
    // Chen et al. 2016: with checkpoints every sqrt(n) layers the forward keeps sqrt(n) tensors and
    // the backward of a segment recomputes sqrt(n) more, so the peak holds about 2 sqrt(n) layer
    // activations, against n without recomputation. Each layer here keeps one tensor (tanh's
    // output); the ratio is checked within 25% (the loss, gradients and in-flight temporaries add
    // a few tensors).
    const std::int64_t n = 1000;
    Graph f;
    TensorId x = f.add_input("x", {{64, 256}, DType::f32});
    const TensorId w = f.add_parameter("w", {{256}, DType::f32});
    x = f.node(f.add_node("in.mul", OpKind::mul, {x, w}, {}, {})).outputs[0];
    Attrs half;
    half.set("factor", 0.5);
    for (std::int64_t i = 0; i < n; ++i) {
        const std::string p = "l" + std::to_string(i) + ".";
        x = f.node(f.add_node(p + "scale", OpKind::scale, {x}, half, {})).outputs[0];
        x = f.node(f.add_node(p + "tanh", OpKind::tanh, {x}, {}, {})).outputs[0];
    }
    Attrs all;
    all.set("axes", std::vector<std::int64_t>{0, 1});
    f.mark_output(f.node(f.add_node("loss", OpKind::reduce_mean, {x}, all, {})).outputs[0]);
    TrainingOptions opt;
    opt.optimizer = Optimizer::sgd;
    const Graph g = build_training_step(f, opt);
    const double unit = 64.0 * 256 * 4;
    const double none = static_cast<double>(memory_timeline(g).peak_bytes) / unit;
    const RecomputeResult r = apply_recompute(g, plan_strategy(g, RecomputeStrategy::sqrt));
    const double sq = static_cast<double>(memory_timeline(r.graph).peak_bytes) / unit;
    const double target = 2 * std::sqrt(static_cast<double>(n));
    INFO("peak in layer activations: none " << none << ", sqrt " << sq << ", 2 sqrt(n) " << target);
    CHECK(none > 0.9 * static_cast<double>(n));
    CHECK(sq == Approx(target).epsilon(0.25));
}

TEST_CASE("recompute: the min cut saves the cheapest tensors and never recomputes a GEMM", "[plan][recompute]") {
    // loss = mean(tanh(gelu(W x))): backward needs x (for dW), h = W x (for gelu) and t = tanh(.)
    // (tanh's gradient reads its output). The cut keeps x and h (the GEMM is never recomputed) and
    // recomputes gelu and tanh from h: t's bytes are saved.
    Graph f;
    const TensorId x = f.add_input("x", {{32, 64}, DType::f32});
    const TensorId w = f.add_parameter("W", {{64, 64}, DType::f32});
    const TensorId h = f.node(f.add_node("h", OpKind::linear, {x, w}, {}, {})).outputs[0];
    const TensorId a = f.node(f.add_node("a", OpKind::gelu, {h}, {}, {})).outputs[0];
    const TensorId t = f.node(f.add_node("t", OpKind::tanh, {a}, {}, {})).outputs[0];
    Attrs all;
    all.set("axes", std::vector<std::int64_t>{0, 1});
    f.mark_output(f.node(f.add_node("loss", OpKind::reduce_mean, {t}, all, {})).outputs[0]);
    TrainingOptions opt;
    opt.optimizer = Optimizer::sgd;
    const Graph g = build_training_step(f, opt);
    const RecomputePlan p = plan_mincut(g);
    CHECK_FALSE(p.recompute[static_cast<std::size_t>(g.find_node("h"))]);
    CHECK(p.recompute[static_cast<std::size_t>(g.find_node("t"))]);
    const RecomputeResult r = apply_recompute(g, p);
    CHECK(memory_timeline(r.graph).saved_activation_bytes == bytes_of(g, "x") + bytes_of(g, "h"));
    CHECK(memory_timeline(g).saved_activation_bytes == bytes_of(g, "x") + bytes_of(g, "h") + bytes_of(g, "t"));
    // On a GPT the cut keeps no more than selective recomputation or none.
    const Graph gpt = train(tiny_gpt());
    const auto saved = [&](RecomputeStrategy s) {
        return memory_timeline(apply_recompute(gpt, plan_strategy(gpt, s)).graph).saved_activation_bytes;
    };
    CHECK(saved(RecomputeStrategy::mincut) <= saved(RecomputeStrategy::selective));
    CHECK(saved(RecomputeStrategy::mincut) < saved(RecomputeStrategy::none));
}

TEST_CASE("plan: pareto_frontier keeps exactly the non-dominated points", "[plan]") {
    const std::vector<std::pair<std::int64_t, double>> pts = {{10, 5.0}, {8, 6.0}, {12, 4.0}, {9, 7.0}, {8, 6.5}, {20, 4.0}, {5, 9.0}};
    const auto f = pareto_frontier(pts);
    CHECK(f == std::vector<std::size_t>{6, 1, 0, 2});
}

TEST_CASE("recompute: layers of Hugging Face names are their numbered prefix, so full recompute keeps each layer's input", "[plan]") {
    // llama-2-7b names its ops model.layers.<i>.<...>, its embedding model.embed_tokens and its
    // final norm model.norm: 32 layers, the embedding, norm and head in none. Before the numbered
    // prefix, "model" made one layer of the whole stack, and full recomputation (keep that one
    // layer's input) saved almost nothing; per layer it keeps one [batch, seq, d_model] input a
    // layer, so the activations saved for backward drop by far more than half (the attention and
    // MLP intermediates are about 20 x that input a layer in 16-bit).
    ModelOverrides ov;
    ov.batch = 1;
    ov.seq = 128;
    const Graph g = train(load_model_arg("llama-2-7b", ov));
    const std::vector<Layer> layers = find_layers(g);
    REQUIRE(layers.size() == 32);
    CHECK(layers.front().name == "model.layers.0");
    CHECK(layers.back().name == "model.layers.31");
    for (const Layer& l : layers)
        for (NodeId n : l.nodes) CHECK(g.node(n).name.rfind(l.name + ".", 0) == 0);
    const Hardware hw = builtin_hardware("h100-sxm");
    const Evaluated none = evaluate_option(g, hw, std::nullopt, false, {});
    const Evaluated full = evaluate_option(g, hw, plan_strategy(g, RecomputeStrategy::full), false, {});
    INFO("saved for backward: " << none.analysis.memory.saved_activation_bytes << " B without, "
                                << full.analysis.memory.saved_activation_bytes << " B with full recompute");
    CHECK(full.analysis.memory.saved_activation_bytes * 4 < none.analysis.memory.saved_activation_bytes);
}

TEST_CASE("plan: the budget planner's frontier equals brute force over every per-layer choice", "[plan]") {
    // Two layers: 3^2 choices (keep / selective / full per layer) x fusion off / on, plus the sqrt
    // and min-cut strategies, each a real transformed graph. The planner's frontier must be exactly
    // the set of (peak, time) points no enumerated plan dominates.
    const Graph g = train(tiny_gpt());
    const Hardware hw = builtin_hardware("h100-sxm");
    const Plan plan = make_plan(g, hw);
    const std::vector<Layer> layers = find_layers(g);
    REQUIRE(layers.size() == 2);
    std::vector<std::pair<std::int64_t, double>> pts;
    for (bool fuse : {false, true}) {
        for (int a = 0; a < 3; ++a) {
            for (int b = 0; b < 3; ++b) {
                const std::vector<LayerChoice> c = {static_cast<LayerChoice>(a), static_cast<LayerChoice>(b)};
                const Evaluated e = evaluate_option(g, hw, plan_layers(g, layers, c), fuse, {});
                pts.push_back({e.analysis.memory.peak_bytes, e.analysis.schedule.step_time_s});
            }
        }
        for (RecomputeStrategy s : {RecomputeStrategy::sqrt, RecomputeStrategy::mincut}) {
            const Evaluated e = evaluate_option(g, hw, plan_strategy(g, s), fuse, {});
            pts.push_back({e.analysis.memory.peak_bytes, e.analysis.schedule.step_time_s});
        }
    }
    std::set<std::pair<std::int64_t, double>> brute;
    for (const auto& p : pts) {
        bool dominated = false;
        for (const auto& q : pts) {
            dominated = dominated || (q.first <= p.first && q.second <= p.second && (q.first < p.first || q.second < p.second));
        }
        if (!dominated) brute.insert(p);
    }
    std::set<std::pair<std::int64_t, double>> planned;
    for (std::size_t i : plan.frontier) planned.insert({plan.options[i].peak_bytes, plan.options[i].step_time_s});
    CHECK(planned == brute);
    std::string names;
    for (const PlanOption& o : plan.options) names += o.name + " | ";
    INFO(names);
    CHECK(plan.options.size() == 2 * (5 + 6));
    // The result does not depend on how many threads evaluated it.
    PlanOptions one;
    one.threads = 1;
    const Plan serial = make_plan(g, hw, one);
    REQUIRE(serial.options.size() == plan.options.size());
    for (std::size_t i = 0; i < plan.options.size(); ++i) {
        CHECK(serial.options[i].name == plan.options[i].name);
        CHECK(serial.options[i].step_time_s == plan.options[i].step_time_s);
        CHECK(serial.options[i].peak_bytes == plan.options[i].peak_bytes);
    }  // 5 strategies and the 6 non-uniform per-layer mixes, unfused and fused
}

TEST_CASE("plan: roofline plan ranks options, writes roofline-plan/1 and rejects a bad budget", "[plan][cli]") {
    const std::string out = test::tmp_path("plan-gpt2.json");
    const auto r = test::run_cli("plan gpt2-small --batch 8 --memory-budget 40GiB --batch-sweep -q -o '" + out + "'");
    REQUIRE(r.code == 0);
    std::ifstream in(out);
    const auto j = nlohmann::json::parse(in);
    CHECK(j["schema"] == "roofline-plan/1");
    CHECK(j["settings"]["memory_budget_bytes"] == 40LL * 1024 * 1024 * 1024);
    REQUIRE(j["options"].size() > 10);
    CHECK(j["options"][0]["rank"] == 1);
    CHECK(j["options"][0]["fits"] == true);
    CHECK(j["options"][0]["step_time_s"].get<double>() <= j["options"][1]["step_time_s"].get<double>());
    CHECK(j["frontier"].size() >= 2);
    CHECK(j["fusion"]["groups"].size() > 24);
    CHECK(j["fusion"]["hbm_bytes_saved"].get<double>() > 0);
    REQUIRE(j["batch_sweep"].size() == 5);
    for (const auto& s : j["batch_sweep"]) CHECK(s["max_batch"].get<int>() >= 1);

    const auto bad = test::run_cli("plan gpt2-small --memory-budget 40 parsecs");
    CHECK(bad.code == 2);
    const auto bad2 = test::run_cli("plan gpt2-small --memory-budget lots");
    CHECK(bad2.code == 2);
    CHECK(bad2.out.find("--memory-budget") != std::string::npos);
    const auto inf = test::run_cli("analyze gpt2-small --recompute full -q");
    CHECK(inf.code == 2);
    CHECK(inf.out.find("--mode training") != std::string::npos);
    const auto fused = test::run_cli("analyze gpt2-small --mode training --fuse --recompute selective -q");
    CHECK(fused.code == 0);
}
