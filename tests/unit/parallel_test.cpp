// Data parallelism and ZeRO on a cluster (issue #16): bucketed gradient reduction overlapped with
// backward, ZeRO's per-rank memory against the paper's formulas, and the flags' errors.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "html_support.hpp"
#include "model/autodiff.hpp"
#include "model/model_json.hpp"
#include "model/templates.hpp"
#include "sim/analysis.hpp"
#include "sim/fusion.hpp"
#include "sim/parallel.hpp"
#include "sim/plan.hpp"
#include "sim/recompute.hpp"
#include "support.hpp"

using namespace roofline;

namespace {

struct Step {
    Graph g;
    Analysis a;
};

Step gpt2_step(const Cluster& c, std::int64_t batch) {
    ModelOverrides ov;
    ov.batch = batch;
    ov.seq = 256;
    Step s;
    s.g = build_training_step(load_model_arg("gpt2-small", ov), TrainingOptions{});
    s.a = analyze(s.g, c.hardware);
    return s;
}

// What the data-parallel ranks reduce: every parameter's gradient once, in fp32 (the master
// weights' gradients, as Megatron-LM reduces main_grad): 4 bytes a parameter. The 16-bit gradients
// backward produces are cast into those, not reduced on their own.
std::int64_t gradient_bytes(const Step& s) {
    std::int64_t params = 0;
    for (const Tensor& t : s.g.tensors())
        if (t.role == TensorRole::parameter) params += t.desc.numel();
    return 4 * params;
}

}  // namespace

TEST_CASE("one rank is the single-device step", "[parallel]") {
    const Cluster c = builtin_cluster("dgx-a100");
    const Step s = gpt2_step(c, 4);
    ParallelOptions transient;  // PyTorch's set_to_none gradients: the single-device liveness as is
    transient.persistent_gradients = false;
    const ParallelAnalysis p = analyze_parallel(s.g, s.a, c, transient);
    CHECK(p.comms.empty());
    CHECK(p.step_time_s == Approx(s.a.schedule.step_time_s).epsilon(1e-12));
    CHECK(p.exposed_comm_s == Approx(0).margin(1e-15));
    CHECK(p.peak_bytes == s.a.memory.peak_bytes);
    // Megatron-LM's persistent gradient buffer (the default) holds every gradient through the
    // step: the same time, a peak higher by at most the gradients' bytes.
    const ParallelAnalysis m = analyze_parallel(s.g, s.a, c, ParallelOptions{});
    CHECK(m.step_time_s == p.step_time_s);
    CHECK(m.peak_bytes > p.peak_bytes);
    CHECK(m.peak_bytes <= p.peak_bytes + gradient_bytes(s));
}

TEST_CASE("gradient reduction without overlap: every bucket after the last backward", "[parallel]") {
    // --overlap-grad-reduce off (the 2022 Megatron-LM runs): no bucket starts before backward has
    // ended, so the step is at least as long as with the overlap, by at most the reductions' time.
    const Cluster c = builtin_cluster("dgx-a100");
    const Step s = gpt2_step(c, 4);
    ParallelOptions on, off;
    on.dp = off.dp = 16;
    off.overlap_grad_reduce = false;
    const ParallelAnalysis a = analyze_parallel(s.g, s.a, c, on), b = analyze_parallel(s.g, s.a, c, off);
    REQUIRE(b.comms.size() == a.comms.size());
    for (const CommOp& k : b.comms) CHECK(k.start_s >= b.pass_s - 1e-12);
    CHECK(b.step_time_s >= a.step_time_s);
    CHECK(b.step_time_s <= a.step_time_s + b.comm_s + 1e-12);
    CHECK(b.comm_s == Approx(a.comm_s));
}

TEST_CASE("gradient buckets: every gradient reduced once, in stream order, after it exists", "[parallel]") {
    const Cluster c = builtin_cluster("dgx-a100");
    const Step s = gpt2_step(c, 4);
    ParallelOptions o;
    o.dp = 16;
    const ParallelAnalysis p = analyze_parallel(s.g, s.a, c, o);
    REQUIRE_FALSE(p.comms.empty());
    double bytes = 0, prev_end = 0;
    for (const CommOp& k : p.comms) {
        CHECK(k.collective == Collective::all_reduce);
        CHECK(k.start_s >= k.ready_s);
        CHECK(k.start_s >= prev_end);
        CHECK(k.end_s == Approx(k.start_s + k.cost.time_s));
        CHECK(k.cost.ranks == 16);
        CHECK(k.cost.nodes == 2);
        prev_end = k.end_s;
        bytes += k.cost.bytes;
    }
    CHECK(bytes == static_cast<double>(gradient_bytes(s)));
    // A bucket closes once it holds 25 MiB (a single large gradient, the embedding's, fills one alone):
    // every bucket but the last is at least that full.
    for (std::size_t i = 0; i + 1 < p.comms.size(); ++i) CHECK(p.comms[i].cost.bytes >= o.bucket_bytes);
    CHECK(p.step_time_s >= p.compute_s);
    CHECK(p.exposed_comm_s == Approx(p.step_time_s - p.compute_s));
    CHECK(p.exposed_comm_s <= p.comm_s + 1e-12);

    // One bucket holding every gradient cannot start before backward ends: nothing overlaps, so
    // more is exposed than with the default buckets, and all of its time at least.
    ParallelOptions one = o;
    one.bucket_bytes = 1e12;
    const ParallelAnalysis q = analyze_parallel(s.g, s.a, c, one);
    REQUIRE(q.comms.size() == 1);
    CHECK(q.exposed_comm_s >= p.exposed_comm_s);
    CHECK(q.exposed_comm_s >= q.comm_s - 1e-9);
}

TEST_CASE("ZeRO shards what each rank keeps, as the paper counts it", "[parallel][memory]") {
    // Mixed-precision Adam (bf16 weights, fp32 master weights and moments): K = 12 bytes of
    // optimizer state per parameter (Rajbhandari et al., SC20, section 3.1). ZeRO-1 keeps 12/N of it
    // per rank; ZeRO-3 also 1/N of the 2-byte weights (plus the gathered layers in flight).
    const Cluster c = builtin_cluster("dgx-h100");
    const Step s = gpt2_step(c, 2);
    const double psi = static_cast<double>(s.a.parameter_count);
    const int dp = 32;
    auto at = [](const ParallelAnalysis& p, MemoryCategory m) {
        return static_cast<double>(p.peak_bytes_by_category[static_cast<std::size_t>(m)]);
    };
    ParallelOptions o;
    o.dp = dp;
    const ParallelAnalysis z0 = analyze_parallel(s.g, s.a, c, o);
    CHECK(at(z0, MemoryCategory::weights) == Approx(2 * psi).epsilon(0.01));
    CHECK(at(z0, MemoryCategory::optimizer_state) == Approx(12 * psi).epsilon(0.01));
    o.zero = 1;
    const ParallelAnalysis z1 = analyze_parallel(s.g, s.a, c, o);
    CHECK(at(z1, MemoryCategory::optimizer_state) == Approx(12 * psi / dp).epsilon(0.01));
    CHECK(at(z1, MemoryCategory::weights) == Approx(2 * psi).epsilon(0.01));
    CHECK(z1.peak_bytes < z0.peak_bytes);
    o.zero = 3;
    const ParallelAnalysis z3 = analyze_parallel(s.g, s.a, c, o);
    // The shard plus two gathered tensors in flight, counted as the largest parameter (the
    // embedding) twice.
    std::int64_t largest = 0;
    for (const Tensor& t : s.g.tensors())
        if (t.role == TensorRole::parameter) largest = std::max(largest, t.desc.bytes());
    CHECK(at(z3, MemoryCategory::weights) == Approx(2 * psi / dp + 2.0 * static_cast<double>(largest)).epsilon(0.01));
    // Communication: ZeRO-1 reduce-scatters the gradients and all-gathers the parameters once
    // (as DP's all-reduce, 2 x the volume in total); ZeRO-3 gathers them twice (1.5x DP).
    double rs = 0, ag1 = 0, ag3 = 0;
    for (const CommOp& k : z1.comms) (k.collective == Collective::reduce_scatter ? rs : ag1) += k.cost.bytes;
    for (const CommOp& k : z3.comms)
        if (k.collective == Collective::all_gather) ag3 += k.cost.bytes;
    CHECK(ag1 == Approx(2 * psi).epsilon(0.01));
    CHECK(ag3 == Approx(2 * ag1));
    CHECK(rs == static_cast<double>(gradient_bytes(s)));
}

TEST_CASE("data-parallel flags: the report and the errors", "[parallel][cli]") {
    const std::string out = test::tmp_path("parallel-report.json");
    // --microbatch is --batch by issue #16's name for it.
    const auto r =
        test::run_cli("analyze gpt2-small --mode training --microbatch 4 --seq 256 --cluster dgx-a100 --dp 16 --zero 1 -o '" + out + "'");
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out,
               Catch::Contains("parallel:       tp 1 x pp 1 x dp 16 = 16 ranks on dgx-a100 (2 nodes), ZeRO-1, 1 micro-batch a rank"));
    const auto j = nlohmann::json::parse(htmltest::slurp(out));
    CHECK(j["totals"]["step_time_s"] == j["parallel"]["step_time_s"]);
    CHECK(j["hardware"]["name"] == "a100-sxm-80gb");
    CHECK(j["parallel"]["tokens_per_s"].get<double>() == Approx(4.0 * 256 * 16 / j["parallel"]["step_time_s"].get<double>()).epsilon(1e-9));
    struct Bad {
        const char* args;
        const char* message;
    };
    const Bad bad[] = {
        {"--dp 8", "--dp 8: name the cluster the ranks run on with --cluster"},
        {"--cluster dgx-a100 --dp 2000", "--dp 2000: dgx-a100 holds at most 1120 devices"},
        {"--cluster dgx-a100 --hw t4 --dp 2", "--hw t4 and --cluster dgx-a100 disagree"},
        {"--cluster dgx-z100 --dp 2", "unknown cluster 'dgx-z100'"},
        {"--cluster dgx-a100 --dp 2 --zero 4", "--zero"},
        {"--cluster dgx-a100 --dp 0", "--dp"},
    };
    for (const Bad& b : bad) {
        INFO(b.args);
        const auto e = test::run_cli(std::string("analyze gpt2-small --mode training -q ") + b.args);
        CHECK(e.code == 2);
        CHECK_THAT(e.out, Catch::Contains(b.message));
    }
    const auto inf = test::run_cli("analyze gpt2-small --cluster dgx-a100 --dp 2 --zero 1 -q");
    CHECK(inf.code == 2);
    CHECK_THAT(inf.out, Catch::Contains("no optimizer to shard"));
}

TEST_CASE("tensor parallelism: Megatron's splits, 4 all-reduces of b x s x h a layer", "[parallel][tp]") {
    // GPT-2 medium (24 layers, d_model 1024, 16 heads, bf16) at batch 4 x 256 on 4 tensor-parallel
    // ranks: each layer all-reduces its attention and MLP outputs in forward and their gradients in
    // backward (Narayanan et al., SC21, section 3.3: 4 all-reduces of b s h a layer), plus the
    // vocabulary-parallel embedding's output and its gradient: 4 x 24 + 2 = 98 of 4 x 256 x 1024 x 2 bytes;
    // and the vocabulary-parallel cross-entropy's 3 forward all-reduces of a float a token.
    const Cluster c = builtin_cluster("dgx-a100");
    ModelOverrides ov;
    ov.batch = 4;
    ov.seq = 256;
    const Graph full = build_training_step(load_model_arg("gpt2-medium", ov), TrainingOptions{});
    ov.tp = 4;
    const Graph rank = build_training_step(load_model_arg("gpt2-medium", ov), TrainingOptions{});
    REQUIRE(rank.tensor_parallel.degree == 4);
    CHECK(rank.tensor_parallel.all_reduce.size() == 49);
    // Column split of QKV, row split of the MLP's down projection, vocabulary split of the embedding
    // (50257 padded to a multiple of 128 x 4, a quarter each).
    CHECK(rank.tensor(rank.find_tensor("h0.attn.qkv.w")).desc.shape == Shape{3 * 1024 / 4, 1024});
    CHECK(rank.tensor(rank.find_tensor("h0.mlp.down.w")).desc.shape == Shape{1024, 4096 / 4});
    CHECK(rank.tensor(rank.find_tensor("wte")).desc.shape == Shape{50688 / 4, 1024});
    const Analysis af = analyze(full, c.hardware), ar = analyze(rank, c.hardware);
    ParallelOptions o;
    o.dp = 2;
    const ParallelAnalysis p = analyze_parallel(rank, ar, c, o);
    CHECK(p.tp == 4);
    CHECK(p.devices == 8);
    CHECK(p.tp_collectives == 98 + 3);
    CHECK(p.tp_example.bytes == 4.0 * 256 * 1024 * 2);
    CHECK(p.tp_example.ranks == 4);
    CHECK(p.tp_example.nodes == 1);
    const double loss_reduce = collective_cost(c, Collective::all_reduce, 4.0 * 4 * 256, CommGroup{4, 4}).time_s;
    CHECK(p.tp_comm_s == Approx(98 * p.tp_example.time_s + 3 * loss_reduce).epsilon(1e-12));
    // The step carries them on the critical path, except what Megatron-LM overlaps: the backward
    // all-reduce of a column-parallel linear's input gradient runs beside its weight gradient's
    // GEMM (Korthikanti et al. 2022, section 6.2), so only what it takes beyond that GEMM is exposed.
    // Every layer's two backward all-reduces are overlapped, the embedding's is not.
    const StageProfile prof = stage_profile(rank, ar);
    double exposed = 0;
    int overlapped = 0;
    for (const StageProfile::Blocking& b : prof.blocking) {
        exposed += std::max(0.0, collective_cost(c, b.collective, b.bytes, CommGroup{4, 4}).time_s - b.hide_s);
        overlapped += b.hide_s > 0;
    }
    CHECK(overlapped == 2 * 24);
    CHECK(exposed < p.tp_comm_s);
    CHECK(p.compute_s == Approx(ar.schedule.step_time_s + exposed));
    // FLOPs and weights per rank are about a quarter (layernorms, biases of the row splits and the
    // position embedding stay whole: within 10%).
    CHECK(static_cast<double>(ar.total.flops()) == Approx(static_cast<double>(af.total.flops()) / 4).epsilon(0.10));
    CHECK(static_cast<double>(ar.parameter_count) == Approx(static_cast<double>(af.parameter_count) / 4).epsilon(0.10));
    CHECK(p.peak_bytes < analyze_parallel(full, af, c, o).peak_bytes);

    struct Bad {
        const char* args;
        const char* message;
    };
    const Bad bad[] = {
        {"gpt2-xl --cluster dgx-a100 --tp 2", "--tp 2 must divide the 25 attention heads"},
        {"mlp --cluster dgx-a100 --tp 2", "has no tensor-parallel split"},
        {"gpt2-medium --cluster dgx-a100 --tp 8 --dp 141", "--tp 8 x --pp 1 x --dp 141 = 1128 devices: dgx-a100 holds at most 1120"},
        {"gpt2-medium --tp 2", "--tp 2: name the cluster"},
        {"gpt2-medium --cluster tpu-v4-pod --dp 17", "--tp 1 x --pp 1 x --dp 17 = 17 devices: 17 chips do not form a slice"},
    };
    for (const Bad& b : bad) {
        INFO(b.args);
        const auto e = test::run_cli(std::string("analyze --mode training -q ") + b.args);
        CHECK(e.code == 2);
        CHECK_THAT(e.out, Catch::Contains(b.message));
    }
}

TEST_CASE("sequence parallelism: sharded norms and residuals, an all-gather and a reduce-scatter for each all-reduce",
          "[parallel][tp][sp]") {
    // GPT-2 medium at batch 4 x 256 on 4 tensor-parallel ranks with sequence parallelism
    // (Korthikanti et al. 2022, section 4.2.2): layernorms, dropouts and residual adds run on 64 of
    // the 256 positions; each of the 49 all-reduces becomes an all-gather before the column-parallel
    // block and a reduce-scatter after the row-parallel one (the embedding's a reduce-scatter, the LM
    // head's input an all-gather), each forward and backward: 2 x 2 x 49 = 196 collectives of
    // 4 x 256 x 1024 x 2 bytes; and, as Megatron-LM keeps only its shard of each gathered input,
    // the 49 gathers again in backward for the weight gradients (section 4.2.2).
    const Cluster c = builtin_cluster("dgx-a100");
    ModelOverrides ov;
    ov.batch = 4;
    ov.seq = 256;
    ov.tp = 4;
    const Graph tp = build_training_step(load_model_arg("gpt2-medium", ov), TrainingOptions{});
    ov.sp = true;
    const Graph sp = build_training_step(load_model_arg("gpt2-medium", ov), TrainingOptions{});
    REQUIRE(sp.tensor_parallel.sequence_parallel);
    CHECK(sp.tensor_parallel.all_reduce.empty());
    CHECK(sp.tensor_parallel.all_gather.size() == 2 * 24 + 1);
    CHECK(sp.tensor_parallel.reduce_scatter.size() == 2 * 24 + 1);
    CHECK(sp.tensor(sp.node(sp.find_node("h0.ln1")).outputs[0]).desc.shape == Shape{4, 64, 1024});
    CHECK(sp.tensor(sp.node(sp.find_node("h0.attn.qkv")).outputs[0]).desc.shape == Shape{4, 256, 3 * 1024 / 4});
    const Analysis at = analyze(tp, c.hardware), as = analyze(sp, c.hardware);
    ParallelOptions o;
    o.dp = 2;
    const ParallelAnalysis pt = analyze_parallel(tp, at, c, o), ps = analyze_parallel(sp, as, c, o);
    CHECK(ps.tp_collectives == 196 + 49 + 3);  // and the loss's 3
    const double bytes = 4.0 * 256 * 1024 * 2;
    const CommGroup group{4, 4};
    const double gather = collective_cost(c, Collective::all_gather, bytes, group).time_s;
    const double pair = gather + collective_cost(c, Collective::reduce_scatter, bytes, group).time_s;
    const double loss_reduce = collective_cost(c, Collective::all_reduce, 4.0 * 4 * 256, group).time_s;
    CHECK(ps.tp_comm_s == Approx(98 * pair + 49 * gather + 3 * loss_reduce).epsilon(1e-12));
    // The same bytes cross the links in two halves (a ring all-reduce is a reduce-scatter then an
    // all-gather), each half paying its own latency, plus the re-gathers: more than the all-reduces.
    CHECK(ps.tp_comm_s > pt.tp_comm_s);
    // Each re-gather runs beside the input gradient's GEMM and each backward reduce-scatter beside
    // the weight gradient's: 2 x 49 overlapped collectives.
    int overlapped = 0;
    for (const StageProfile::Blocking& b : stage_profile(sp, as).blocking) overlapped += b.hide_s > 0;
    CHECK(overlapped == 2 * 49);
    // Layernorm work and the activations kept for backward shrink: the norms' FLOPs by the 4 ranks.
    const auto ln_flops = [](const Graph& g, const Analysis& a) {
        double f = 0;
        for (const OpAnalysis& op : a.ops)
            if (g.node(op.node).kind == OpKind::layernorm) f += static_cast<double>(op.roofline->work.flops());
        return f;
    };
    CHECK(ln_flops(sp, as) == Approx(ln_flops(tp, at) / 4).epsilon(0.01));
    CHECK(as.memory.saved_activation_bytes < at.memory.saved_activation_bytes);
    CHECK(ps.peak_bytes < pt.peak_bytes);

    const auto nosp = test::run_cli("analyze gpt2-medium --mode training --cluster dgx-a100 --sp -q");
    CHECK(nosp.code == 2);
    CHECK_THAT(nosp.out, Catch::Contains("--sp: sequence parallelism shards across tensor-parallel ranks"));
    const auto odd = test::run_cli("analyze gpt2-medium --mode training --seq 250 --cluster dgx-a100 --tp 4 --sp -q");
    CHECK(odd.code == 2);
    CHECK_THAT(odd.out, Catch::Contains("--tp 4 must divide the sequence length 250"));
}

TEST_CASE("a model file declares its own tensor-parallel split", "[parallel][tp][errors]") {
    nlohmann::json doc = nlohmann::json::parse(htmltest::slurp(test::source_path("examples/two-layer-mlp.json")));
    const std::string d = test::tmp_path("tp-model");
    std::filesystem::create_directories(d);
    doc["tensor_parallel"] = {{"degree", 2}, {"all_reduce", {"nope"}}};
    htmltest::spit(d + "/bad.json", doc.dump());
    const auto bad = test::run_cli("analyze '" + d + "/bad.json' -q");
    CHECK(bad.code == 2);
    CHECK_THAT(bad.out, Catch::Contains("/tensor_parallel/all_reduce/0: expected the name of a node"));
    doc["tensor_parallel"] = {{"degree", 2}, {"all_reduce", {doc["nodes"][0]["name"]}}};
    htmltest::spit(d + "/ok.json", doc.dump());
    const Graph g = load_model_arg(d + "/ok.json");
    CHECK(g.tensor_parallel.degree == 2);
    CHECK(g.tensor_parallel.all_reduce.size() == 1);
    // --tp must agree with what the file declares.
    const auto mismatch = test::run_cli("analyze '" + d + "/ok.json' --cluster dgx-a100 --tp 4 -q");
    CHECK(mismatch.code == 2);
    CHECK_THAT(mismatch.out, Catch::Contains("is split for 2 tensor-parallel ranks"));
    const auto agree = test::run_cli("analyze '" + d + "/ok.json' --cluster dgx-a100 --tp 2 -q");
    CHECK(agree.code == 0);
}

TEST_CASE("gradient accumulation: one reduction and one update per global batch", "[parallel]") {
    // --global-batch 256 at --batch 4 on 16 ranks: 4 micro-batches a rank. The compute is 4 passes
    // (forward + backward) and one optimizer step; the reduction overlaps only the last backward,
    // so the communication is what one micro-batch's step had, and tokens/s count 4 x the samples.
    const Cluster c = builtin_cluster("dgx-a100");
    const Step s = gpt2_step(c, 4);
    ParallelOptions o;
    o.dp = 16;
    const ParallelAnalysis one = analyze_parallel(s.g, s.a, c, o);
    o.global_batch = 256;
    const ParallelAnalysis four = analyze_parallel(s.g, s.a, c, o);
    CHECK(four.micro_batches == 4);
    double opt_s = 0;  // the optimizer's ops on the schedule
    for (const ScheduledOp& op : s.a.schedule.ops)
        if (s.g.node(op.node).phase == Phase::optimizer) opt_s += op.end_s - op.start_s;
    const double pass = one.compute_s - opt_s;
    CHECK(opt_s > 0);
    CHECK(four.compute_s == Approx(4 * pass + opt_s).epsilon(1e-9));
    CHECK(four.comm_s == Approx(one.comm_s));
    CHECK(four.comms.size() == one.comms.size());
    CHECK(four.exposed_comm_s <= one.exposed_comm_s + 1e-9);
    CHECK(four.tokens_per_s > one.tokens_per_s);
    // Accumulated gradients stay allocated: the peak holds at least the micro-batch peak.
    CHECK(four.peak_bytes >= one.peak_bytes);
    o.global_batch = 100;
    CHECK_THROWS_WITH(analyze_parallel(s.g, s.a, c, o), Catch::Contains("--global-batch 100: not a multiple of --batch 4 x --dp 16 = 64"));
}

TEST_CASE("pipeline parallelism: 1F1B fill, drain and bubble", "[parallel][pp]") {
    // GPT-2 small in 4 stages of 3 layers, 8 micro-batches a rank (--global-batch 64 at batch 4 on
    // 2 data-parallel ranks). The pipeline takes every stage's pass once (fill and drain) and the
    // slowest stage's m - 1 more, plus 2 (p - 1) activation sends (Narayanan et al. SC21, 2.2.1);
    // with equal stages the slowest waits (p - 1) / (m + p - 1) of it.
    const Cluster c = builtin_cluster("dgx-a100");
    ModelOverrides ov;
    ov.batch = 4;
    ov.seq = 256;
    ov.pp = 4;
    std::vector<Graph> graphs;
    std::vector<Analysis> analyses;
    graphs.reserve(4);
    analyses.reserve(4);
    std::vector<StageProfile> profiles;
    for (int s = 0; s < 4; ++s) {
        ov.stage = s;
        graphs.push_back(build_training_step(load_model_arg("gpt2-small", ov), TrainingOptions{}));
        analyses.push_back(analyze(graphs.back(), c.hardware));
        profiles.push_back(stage_profile(graphs.back(), analyses.back()));
        CHECK(graphs.back().pipeline.layers == 3);
    }
    std::vector<const StageProfile*> stages;
    for (const StageProfile& q : profiles) stages.push_back(&q);
    // The first stage embeds, the last holds the head and loss; the middle ones neither.
    CHECK(graphs[0].find_node("tok_emb") != kNoNode);
    CHECK(graphs[1].find_node("tok_emb") == kNoNode);
    CHECK(graphs[3].find_node("lm_head") != kNoNode);
    CHECK(graphs[2].find_node("lm_head") == kNoNode);
    CHECK(graphs[1].find_node("h3.attn.qkv") != kNoNode);
    CHECK(graphs[1].find_node("h6.attn.qkv") == kNoNode);
    ParallelOptions o;
    o.dp = 2;
    o.global_batch = 64;
    const ParallelAnalysis p = analyze_pipeline(stages, c, o);
    REQUIRE(p.stages.size() == 4);
    CHECK(p.pp == 4);
    CHECK(p.micro_batches == 8);
    CHECK(p.devices == 8);
    double sum = 0, slowest = 0;
    for (const auto& s : p.stages) sum += s.pass_s, slowest = std::max(slowest, s.pass_s);
    CHECK(p.p2p_s > 0);
    double update = 0;
    for (const auto& s : p.stages) update = std::max(update, s.optimizer_s);
    // The pipeline is the 1F1B order simulated from the stages' forward and backward times, one
    // send a hop; here within 1% of the estimate sum + (m - 1) x slowest + the sends.
    std::vector<double> fwd, bwd;
    for (const auto& s : p.stages) fwd.push_back(s.forward_s), bwd.push_back(s.pass_s - s.forward_s);
    double pipe = 0;
    for (const auto& b : pipeline_timeline(fwd, bwd, 8, p.p2p_s / 6)) pipe = std::max(pipe, b.end_s);
    CHECK(pipe == Approx(sum + 7 * slowest + p.p2p_s).epsilon(0.01));
    CHECK(p.compute_s == Approx(pipe + update).epsilon(1e-12));
    CHECK(p.bubble_fraction == Approx(1 - 8 * slowest / pipe).epsilon(1e-12));
    // The slowest stage waits for the others' fill and drain, at most (p - 1) of its own passes:
    // (p - 1) / (m + p - 1) with equal stages, less when it is the slowest by far (the LM head's).
    CHECK(p.bubble_fraction > 0);
    CHECK(p.bubble_fraction <= 3.0 / (8 + 3) + p.p2p_s / pipe + 1e-12);
    CHECK(p.exposed_comm_s <= p.comm_s + 1e-12);
    // GPT-2's tied embedding: the first stage's wte and the last stage's lm_head.w gradients
    // (50257 x 768 bf16) are all-reduced between the two, on their stages' path before the update;
    // with 1 x 2 ranks a stage, the four stages share a node of 8.
    CHECK(graphs[0].pipeline.shared_embedding == "wte");
    CHECK(graphs[3].pipeline.shared_embedding == "lm_head.w");
    CHECK(graphs[1].pipeline.shared_embedding.empty());
    const double wte = static_cast<double>(graphs[0].tensor(graphs[0].find_tensor("wte")).desc.bytes());
    CHECK(p.embedding_all_reduce_s == Approx(collective_cost(c, Collective::all_reduce, wte, CommGroup{2, 2}).time_s).epsilon(1e-12));
    CHECK(wte == 50257.0 * 768 * 2);
    CHECK(p.step_time_s >= p.compute_s);
    // 1F1B keeps min(p - s, m) micro-batches' activations on stage s: 4, 3, 2, 1.
    CHECK(p.stages[0].in_flight == 4);
    CHECK(p.stages[3].in_flight == 1);
    CHECK(p.stages[0].peak_bytes > p.stages[1].peak_bytes);

    const auto cli =
        test::run_cli("analyze gpt2-small --mode training --batch 4 --seq 256 --cluster dgx-a100 --pp 4 --dp 2 --global-batch 64 -q -o '" +
                      test::tmp_path("pp.json") + "'");
    REQUIRE(cli.code == 0);
    const auto j = nlohmann::json::parse(htmltest::slurp(test::tmp_path("pp.json")));
    CHECK(j["parallel"]["stages"].size() == 4);
    CHECK(j["parallel"]["step_time_s"].get<double>() == Approx(p.step_time_s).epsilon(1e-9));
    const auto bad = test::run_cli("analyze gpt2-small --mode training --cluster dgx-a100 --pp 5 -q");
    CHECK(bad.code == 2);
    CHECK_THAT(bad.out, Catch::Contains("--pp 5 must divide the 12 layers"));
    const auto mlp = test::run_cli("analyze mlp --mode training --cluster dgx-a100 --pp 2 -q");
    CHECK(mlp.code == 2);
    CHECK_THAT(mlp.out, Catch::Contains("has no pipeline split"));

    SECTION("interleaved 1F1B: the bubble shrinks by v, the sends grow by v") {
        // v = 3 chunks of one layer a device (Narayanan et al. SC21, 2.2.2): fill and drain are a
        // chunk's pass on every device, sum / v, the steady state (m - 1 / v) of the slowest's:
        // with equal stages the bubble is (p - 1) / (m v) of the ideal m passes. A micro-batch
        // crosses p v - 1 chunk boundaries each way: 11 / 3 of plain 1F1B's sends.
        ParallelOptions iv = o;
        iv.interleave = 3;
        const ParallelAnalysis q = analyze_pipeline(stages, c, iv);
        CHECK(q.interleave == 3);
        CHECK(q.p2p_s == Approx(p.p2p_s * 11.0 / 3.0).epsilon(1e-12));
        const double ipipe = sum / 3 + (8 - 1.0 / 3) * slowest + q.p2p_s;
        CHECK(q.compute_s == Approx(ipipe + update).epsilon(1e-12));
        CHECK(q.bubble_fraction < p.bubble_fraction);
        // The first device holds p + (p - 1) / v = 5 micro-batches' activations (Korthikanti et al.
        // 2022: interleaving's memory factor 1 + (p - 1) / (p v)), against 4 without.
        CHECK(q.stages[0].in_flight == 5);
        CHECK(q.stages[0].peak_bytes > p.stages[0].peak_bytes);
        // Megatron's conditions: micro-batches a multiple of the stages, layers a multiple of v.
        iv.interleave = 2;
        CHECK_THROWS_WITH(analyze_pipeline(stages, c, iv), Catch::Contains("3 layers do not split into 2 chunks"));
        iv.interleave = 3;
        iv.global_batch = 48;  // 6 micro-batches a rank, 4 stages
        CHECK_THROWS_WITH(analyze_pipeline(stages, c, iv), Catch::Contains("must be a multiple of the 4 stages"));
        const auto nopp = test::run_cli("analyze gpt2-small --mode training --cluster dgx-a100 --dp 2 --interleave 2 -q");
        CHECK(nopp.code == 2);
        CHECK_THAT(nopp.out, Catch::Contains("--interleave 2: needs --pp > 1"));
    }
}

TEST_CASE("plan --cluster ranks each option by the job's iteration and its peak per rank", "[parallel][plan]") {
    // GPT-2 small at batch 4 x 256 on 4 tensor-parallel x 2 data-parallel ranks: the plan's baseline
    // (no fusion, no recompute) is exactly what analyze --cluster reports for the same job.
    const std::string plan = test::tmp_path("plan-cluster.json"), report = test::tmp_path("analyze-cluster.json");
    const std::string job = "gpt2-small --mode training --batch 4 --seq 256 --cluster dgx-a100 --tp 4 --sp --dp 2 --zero 1 -q";
    REQUIRE(test::run_cli("plan " + job + " -o '" + plan + "'").code == 0);
    REQUIRE(test::run_cli("analyze " + job + " -o '" + report + "'").code == 0);
    const auto p = nlohmann::json::parse(htmltest::slurp(plan));
    const auto a = nlohmann::json::parse(htmltest::slurp(report));
    CHECK(p["settings"]["parallel"] == "dgx-a100: tp 4 (sp) x dp 2, ZeRO 1");
    CHECK(p["baseline"]["step_time_s"].get<double>() == Approx(a["parallel"]["step_time_s"].get<double>()).epsilon(1e-12));
    CHECK(p["baseline"]["peak_bytes"].get<std::int64_t>() == a["parallel"]["peak_bytes_per_rank"].get<std::int64_t>());
    const auto nopp = test::run_cli("plan gpt2-small --cluster dgx-a100 --dp 2 --interleave 2 -q");
    CHECK(nopp.code == 2);
    CHECK_THAT(nopp.out, Catch::Contains("--interleave 2: needs --pp > 1"));
    const auto sweep = test::run_cli("plan gpt2-small --cluster dgx-a100 --dp 2 --batch-sweep -q");
    CHECK(sweep.code == 2);
    CHECK_THAT(sweep.out, Catch::Contains("--batch-sweep: not with --cluster"));
}

TEST_CASE("plan --pp applies each option to every pipeline stage and ranks it by the pipeline's iteration", "[parallel][plan]") {
    // GPT-2 small (12 layers) on 2 tensor-parallel x 4 pipeline x 2 data-parallel ranks, 8
    // micro-batches a rank: every option is the same fusion and recomputation on each stage's graph
    // (the middle stages stand for each other), so an option's iteration and peak per rank are
    // exactly what analyze --pp reports for that option (analyze builds every stage itself). The
    // per-layer mixes are Megatron-LM's block recomputation: the first k of the stage's 3 layers
    // recomputed in full, the rest kept or recomputed selectively, k = 1, 2 (4 mixes).
    const std::string plan = test::tmp_path("plan-pp.json");
    const std::string job = "gpt2-small --mode training --batch 2 --seq 256 --cluster dgx-a100 --tp 2 --pp 4 --dp 2 --global-batch 32 -q";
    REQUIRE(test::run_cli("plan " + job + " -o '" + plan + "'").code == 0);
    const auto p = nlohmann::json::parse(htmltest::slurp(plan));
    CHECK(p["settings"]["parallel"] == "dgx-a100: tp 2 x pp 4 x dp 2, ZeRO 0");
    CHECK(p["fusion"]["graph"] == "first stage");
    auto iteration_of = [&](const std::string& extra) {
        const std::string report = test::tmp_path("analyze-pp.json");
        REQUIRE(test::run_cli("analyze " + job + extra + " -o '" + report + "'").code == 0);
        return nlohmann::json::parse(htmltest::slurp(report))["parallel"];
    };
    const auto base = iteration_of("");
    CHECK(p["baseline"]["step_time_s"].get<double>() == Approx(base["step_time_s"].get<double>()).epsilon(1e-12));
    CHECK(p["baseline"]["peak_bytes"].get<std::int64_t>() == base["peak_bytes_per_rank"].get<std::int64_t>());
    std::map<std::string, nlohmann::json> by_name;
    int mixes = 0;
    for (const auto& o : p["options"]) {
        by_name[o["name"].get<std::string>()] = o;
        mixes += o["recompute"] == "layers" && o["fuse"] == false;
    }
    CHECK(mixes == 4);
    REQUIRE(by_name.count("full on 1/3 layers [F--]") == 1);
    REQUIRE(by_name.count("fuse + full") == 1);
    const auto full = iteration_of(" --fuse --recompute full");
    CHECK(by_name["fuse + full"]["step_time_s"].get<double>() == Approx(full["step_time_s"].get<double>()).epsilon(1e-12));
    CHECK(by_name["fuse + full"]["peak_bytes"].get<std::int64_t>() == full["peak_bytes_per_rank"].get<std::int64_t>());
    // Recomputing costs time and saves memory on the pipeline as on one device: full recompute of
    // one layer of each stage lies between none and full on both.
    const auto& none = by_name["none"];
    const auto& one = by_name["full on 1/3 layers [F--]"];
    const auto& all = by_name["full"];
    CHECK(none["step_time_s"].get<double>() < one["step_time_s"].get<double>());
    CHECK(one["step_time_s"].get<double>() < all["step_time_s"].get<double>());
    CHECK(none["peak_bytes"].get<std::int64_t>() > one["peak_bytes"].get<std::int64_t>());
    CHECK(one["peak_bytes"].get<std::int64_t>() > all["peak_bytes"].get<std::int64_t>());
    // Extra FLOPs: one micro-batch's through the 4 stages; one layer of 3 a stage is a third of full.
    CHECK(one["extra_flops"].get<double>() == Approx(all["extra_flops"].get<double>() / 3).epsilon(1e-9));
    const auto sweep = test::run_cli("plan gpt2-small --cluster dgx-a100 --pp 2 --batch-sweep -q");
    CHECK(sweep.code == 2);
    const auto odd = test::run_cli("plan gpt2-small --cluster dgx-a100 --pp 5 -q");
    CHECK(odd.code == 2);
    CHECK_THAT(odd.out, Catch::Contains("--pp 5"));
}

TEST_CASE("context parallelism: a rank's share of each sequence, keys and values gathered, balanced causal work", "[parallel][cp]") {
    // A 4-layer GPT (d_model 2048, 16 heads) at batch 1 x 16,384 on 4 context-parallel ranks
    // (Megatron-core's all-gather form): every token-wise op runs on 4,096 tokens; attention's
    // queries are the rank's, its keys and values the whole sequence's, causal over balanced
    // chunks, so with flash attention (the masked blocks skipped) a rank's FLOPs are the
    // single-device step's / 4 (1%: the optimizer's are not split). Communication: an all-gather of
    // K and of V a layer forward and a reduce-scatter of their gradients backward, each of the
    // gathered [1, 16, 16384, 128] bf16 tensor (64 MiB), on the 4 context-parallel ranks of a node:
    // 4 x 4 = 16 collectives, their cost exactly those of sim/collectives.
    const Cluster c = builtin_cluster("dgx-a100");
    const nlohmann::json cfg = {{"preset", "gpt2-small"}, {"n_ctx", 16384}, {"d_model", 2048}, {"n_layer", 4},
                                {"n_head", 16},           {"batch", 1},     {"dropout", 0}};
    auto step = [&](int cp) {
        ModelOverrides ov;
        ov.cp = cp;
        nlohmann::json doc = {{"format", "roofline-model/1"}, {"template", "gpt"}, {"config", cfg}};
        return build_training_step(load_model(doc, "long-gpt", ov), TrainingOptions{});
    };
    const Graph one = step(1), four = step(4);
    REQUIRE(four.context_parallel.degree == 4);
    CHECK(four.context_parallel.all_gather.size() == 2 * 4);
    CHECK(four.dims.at("seq") == 4096);
    CHECK(four.tensor(four.node(four.find_node("h0.ln1")).outputs[0]).desc.shape == Shape{1, 4096, 2048});
    CHECK(four.tensor(four.node(four.find_node("h0.attn.scores")).outputs[0]).desc.shape == Shape{1, 16, 4096, 16384});
    auto fused = [&](const Graph& g) {
        const FusionPlan plan = find_fusion_groups(g, c.hardware);
        AnalysisOptions o;
        o.fusion = &plan;
        return analyze(g, c.hardware, o);
    };
    const Analysis a1 = fused(one), a4 = fused(four);
    const double opt1 = static_cast<double>(a1.by_phase[static_cast<int>(Phase::optimizer)].work.flops());
    CHECK(static_cast<double>(a4.total.flops()) - opt1 == Approx((static_cast<double>(a1.total.flops()) - opt1) / 4).epsilon(0.01));
    // Activations kept for backward: a quarter of the token-wise ones, plus the gathered keys and
    // values of the whole sequence (kept for attention's backward): between 1/4 and 1/2.
    CHECK(a4.memory.saved_activation_bytes > a1.memory.saved_activation_bytes / 4);
    CHECK(a4.memory.saved_activation_bytes < a1.memory.saved_activation_bytes / 2);
    ParallelOptions gather;
    gather.cp_comm = CpComm::all_gather;
    const ParallelAnalysis p = analyze_parallel(four, a4, c, gather);
    CHECK(p.devices == 4);
    CHECK(p.cp_collectives == 16);
    const double bytes = 1.0 * 16 * 16384 * 128 * 2;
    const CommGroup group{4, 4};
    CHECK(p.cp_comm_s == Approx(8 * (collective_cost(c, Collective::all_gather, bytes, group).time_s +
                                     collective_cost(c, Collective::reduce_scatter, bytes, group).time_s))
                             .epsilon(1e-12));
    // The weights' gradients are reduced over the 4 ranks (they hold the same weights).
    CHECK(!p.comms.empty());
    CHECK(p.tokens_per_s == Approx(16384.0 / p.step_time_s));

    // --cp-comm allgather on the command line is this all-gather form.
    const std::string out = test::tmp_path("cp-allgather.json");
    REQUIRE(test::run_cli("analyze gpt2-small --mode training --seq 1024 --cluster dgx-a100 --cp 4 --cp-comm allgather -q -o '" + out + "'")
                .code == 0);
    const nlohmann::json j = nlohmann::json::parse(htmltest::slurp(out))["parallel"];
    CHECK(j["cp_comm"] == "allgather");
    CHECK(j["cp_collectives"] == 12 * 4);  // gpt2-small's 12 layers: K and V gathered, their gradients scattered
    CHECK(j["cp_exposed_s"].get<double>() == Approx(j["cp_comm_s"].get<double>()).epsilon(1e-12));  // nothing overlaps them

    // Bad input: a sequence that does not split into 2 x cp chunks; --cp without a cluster; a model
    // file without a context-parallel split; an unknown --cp-comm.
    const auto odd = test::run_cli("analyze gpt2-small --mode training --seq 1000 --cluster dgx-a100 --cp 16 -q");
    CHECK(odd.code == 2);
    CHECK_THAT(odd.out, Catch::Contains("--cp 16: the sequence length 1000 must be a multiple of 2 x cp = 32"));
    const auto lone = test::run_cli("analyze gpt2-small --cp 2 -q");
    CHECK(lone.code == 2);
    CHECK_THAT(lone.out, Catch::Contains("--cp 2: name the cluster"));
    const auto file = test::run_cli("analyze '" + test::source_path("examples/two-layer-mlp.json") + "' --cluster dgx-a100 --cp 2 -q");
    CHECK(file.code == 2);
    CHECK_THAT(file.out, Catch::Contains("has no context-parallel split"));
    const auto comm = test::run_cli("analyze gpt2-small --mode training --cluster dgx-a100 --cp 2 --cp-comm p2p -q");
    CHECK(comm.code == 2);
    CHECK_THAT(comm.out, Catch::Contains("--cp-comm"));
}

TEST_CASE("ring attention's exchange: the volume each rank sends and what attention hides, by hand", "[parallel][cp][ring]") {
    // Ring attention (Liu et al. 2023; TransformerEngine's AttnFuncWithCPAndKVP2P): the keys and
    // values of the whole sequence, KV bytes, in cp blocks of KV / cp, one a rank. Forward, each rank
    // sends the block in hand to the next rank cp - 1 times: (cp - 1) / cp x KV. Backward, the blocks
    // go round again (cp - 1 sends) and their gradients, as large, come back (cp - 1 sends): twice
    // that, in cp steps (the keys and values alone, then both, then the gradients alone). Each step
    // is one send/recv of sim/collectives, hidden by the attention of one block (attention / cp):
    // exposed max(0, step - attention / cp).
    const Cluster c = builtin_cluster("dgx-a100");
    const double kv = 2.0 * 64 * 1024 * 1024;  // two 64 MiB tensors
    const auto send = [&](double bytes, CommGroup g) { return collective_cost(c, Collective::send_recv, bytes, g).time_s; };
    for (const int cp : {2, 4, 8}) {
        INFO("cp " << cp);
        const CommGroup g{cp, cp};  // one node
        const double block = kv / cp, t1 = send(block, g), t2 = send(2 * block, g);
        const RingExchange f = ring_exchange(c, g, kv, 0, false), b = ring_exchange(c, g, kv, 0, true);
        CHECK(f.steps == cp - 1);
        CHECK(f.bytes_sent == Approx((cp - 1.0) / cp * kv).epsilon(1e-15));
        CHECK(f.comm_s == Approx((cp - 1) * t1).epsilon(1e-12));
        CHECK(f.exposed_s == Approx(f.comm_s).epsilon(1e-12));  // no attention to hide it
        CHECK(b.steps == cp);
        CHECK(b.bytes_sent == Approx(2 * (cp - 1.0) / cp * kv).epsilon(1e-15));
        CHECK(b.comm_s == Approx(2 * t1 + (cp - 2) * t2).epsilon(1e-12));
        // Attention of a block longer than the largest step hides every step; one of half a step
        // leaves half of each (forward: all steps of one block).
        CHECK(ring_exchange(c, g, kv, cp * 2 * t2, true).exposed_s == 0);
        CHECK(ring_exchange(c, g, kv, cp * t1 / 2, false).exposed_s == Approx((cp - 1) * t1 / 2).epsilon(1e-12));
        CHECK(ring_exchange(c, g, kv, cp * t1, true).exposed_s == Approx((cp - 2) * (t2 - t1)).epsilon(1e-9).margin(1e-15));
    }
    // One rank: nothing to exchange. Across two nodes (8 ranks, 4 a node): each step is bounded by
    // the network hop (every rank steps together).
    CHECK(ring_exchange(c, CommGroup{1, 1}, kv, 0, false).steps == 0);
    const RingExchange across = ring_exchange(c, CommGroup{8, 4}, kv, 0, false);
    CHECK(across.comm_s == Approx(7 * send(kv / 8, CommGroup{8, 4})).epsilon(1e-12));
    CHECK(across.comm_s > ring_exchange(c, CommGroup{8, 8}, kv, 0, false).comm_s);

    // In a training step: the 4-layer GPT of the test above at 8,192 tokens on 4 ranks. A layer's
    // exchange carries its gathered keys and values, 2 x [1, 16, 8192, 128] bf16 = 64 MiB, and is
    // hidden by that layer's attention (Q K^T, scale, mask, softmax, P V: the nodes between the
    // keys' and the values' readers), forward and (their gradients) backward. The step waits for
    // what the exchanges do not hide, and the all-gather form for all of its collectives: the
    // passes differ by exactly the difference.
    const nlohmann::json cfg = {{"preset", "gpt2-small"}, {"n_ctx", 8192}, {"d_model", 2048}, {"n_layer", 4},
                                {"n_head", 16},           {"batch", 1},    {"dropout", 0}};
    ModelOverrides ov;
    ov.cp = 4;
    const Graph step = build_training_step(
        load_model(nlohmann::json{{"format", "roofline-model/1"}, {"template", "gpt"}, {"config", cfg}}, "long-gpt", ov),
        TrainingOptions{});
    // Analysed as `analyze` runs a ring (cp_runs_flash): the attention cores as flash kernels.
    FusionOptions flash;
    flash.flash_always = true;
    const Evaluated ev = evaluate_option(step, c.hardware, std::nullopt, false, AnalysisOptions{}, flash);
    const Analysis& a = ev.analysis;
    const StageProfile prof = stage_profile(step, a);
    REQUIRE(prof.rings.size() == 2 * 4);
    double attention = 0;  // layer 0's forward attention, from the schedule
    for (const ScheduledOp& s : a.schedule.ops)
        for (const char* n : {"h0.attn.scores", "h0.attn.scale", "h0.attn.mask", "h0.attn.softmax", "h0.attn.context"})
            if (step.node(s.node).name == n) attention += s.kernel_s;
    CHECK(attention > 0);
    const StageProfile::Ring& first = prof.rings.front();
    CHECK(!first.backward);
    CHECK(first.kv_bytes == 2.0 * 16 * 8192 * 128 * 2);
    CHECK(first.attention_s == Approx(attention).epsilon(1e-12));
    const CommGroup g{4, 4};
    double comm = 0, exposed = 0;
    for (const StageProfile::Ring& x : prof.rings) {
        CHECK(x.attention_s > 0);
        const RingExchange e = ring_exchange(c, g, x.kv_bytes, x.attention_s, x.backward);
        comm += e.comm_s;
        exposed += e.exposed_s;
    }
    const ParallelAnalysis ring = analyze_parallel(prof, c, ParallelOptions{});
    ParallelOptions o;
    o.cp_comm = CpComm::all_gather;
    const ParallelAnalysis gathered = analyze_parallel(prof, c, o);
    CHECK(ring.cp_collectives == 4 * (3 + 4));
    CHECK(ring.cp_comm_s == Approx(comm).epsilon(1e-12));
    CHECK(ring.cp_exposed_s == Approx(exposed).epsilon(1e-12));
    CHECK(ring.cp_exposed_s <= ring.cp_comm_s);
    CHECK(ring.pass_s - gathered.pass_s == Approx(ring.cp_exposed_s - gathered.cp_comm_s).epsilon(1e-9));
    // Selective recomputation runs each layer's attention again in backward: its exchange too.
    const RecomputePlan plan = plan_strategy(step, *parse_strategy("selective"));
    const Evaluated sel = evaluate_option(step, c.hardware, plan, false, AnalysisOptions{});
    CHECK(stage_profile(*sel.graph, sel.analysis).rings.size() == 3 * 4);
}

// GPT-2 medium with `experts` top-2 MoE MLPs (0: dense), batch 4 x 1024, no dropout: one rank of
// `ep`-way expert parallelism under the routing `load` (--expert-load; "": uniform), its training
// step analysed on the cluster's chip.
// `capacity` (--capacity-factor; 0: dropless) and `pad` (--pad-to-capacity) set the experts' capacity.
static Step moe_step(const Cluster& c, std::int64_t experts, int ep, const std::string& load, double capacity = 0, bool pad = false) {
    nlohmann::json cfg = {{"preset", "gpt2-medium"}, {"batch", 4}, {"seq", 1024}, {"dropout", 0}};
    if (experts > 0) cfg["experts"] = experts, cfg["top_k"] = 2;
    ModelOverrides ov;
    ov.ep = ep;
    ov.expert_load = load;
    if (capacity > 0) ov.capacity_factor = capacity;
    ov.pad_to_capacity = pad;
    const nlohmann::json doc = {{"format", "roofline-model/1"}, {"template", "gpt"}, {"config", cfg}};
    Step s;
    s.g = build_training_step(load_model(doc, "moe-gpt", ov), TrainingOptions{});
    s.a = analyze(s.g, c.hardware);
    return s;
}

// The rows (axis 1) of a node's first output: the token copies an expert's GEMM runs.
static std::int64_t rows(const Step& s, const std::string& node) {
    const NodeId n = s.g.find_node(node);
    REQUIRE(n != kNoNode);
    return s.g.tensor(s.g.node(n).outputs[0]).desc.shape.at(1);
}

TEST_CASE("expert parallelism: a rank's share of the experts, all-to-all dispatch and combine, expert gradients kept local",
          "[parallel][ep]") {
    // GPT-2 medium with 8 experts of top-2 MoE MLPs (uniform routing), batch 4 x 1024, on 8
    // data-parallel ranks of a DGX A100 that are also 8 expert-parallel ranks (one expert each).
    // Expected: the same FLOPs a rank as without expert parallelism (a rank's experts run the
    // token copies of all 8 ranks: 1,024 x 2 x 8 / 8 each); the experts' MLP FLOPs twice the dense
    // MLP's (top-2); 1/8 of the expert weights; an all-to-all of the [4, 2048, 1, 1024] bf16 token
    // copies (16 MiB) to dispatch and one to combine, each forward and for the gradient backward:
    // 4 x 24 = 96, at the all-to-all cost of 8 ranks in a node; and no reduction of the expert
    // gradients (each expert lives on one rank): the ranks reduce 4 bytes for each other parameter.
    const Cluster c = builtin_cluster("dgx-a100");
    auto step = [&](std::int64_t experts, int ep) { return moe_step(c, experts, ep, ""); };
    const Step dense = step(0, 1), one = step(8, 1), eight = step(8, 8);
    auto flops_of = [](const Step& s, const std::string& part, Phase ph) {
        double f = 0;
        for (const OpAnalysis& op : s.a.ops) {
            const Node& n = s.g.node(op.node);
            if (n.phase == ph && n.kind == OpKind::linear && n.name.find(part) != std::string::npos)
                f += static_cast<double>(op.roofline->work.flops());
        }
        return f;
    };
    CHECK(flops_of(one, ".moe.expert_", Phase::forward) ==
          Approx(2 * (flops_of(dense, ".mlp.up", Phase::forward) + flops_of(dense, ".mlp.down", Phase::forward))).epsilon(1e-9));
    auto pass_flops = [](const Step& s) {
        return static_cast<double>(s.a.by_phase[static_cast<int>(Phase::forward)].work.flops() +
                                   s.a.by_phase[static_cast<int>(Phase::backward)].work.flops());
    };
    CHECK(pass_flops(eight) == Approx(pass_flops(one)).epsilon(1e-3));
    auto expert_params = [](const Step& s) {
        std::int64_t n = 0, rest = 0;
        for (const Tensor& t : s.g.tensors())
            if (t.role == TensorRole::parameter) (t.name.find(".moe.expert_") != std::string::npos ? n : rest) += t.desc.numel();
        return std::pair{n, rest};
    };
    CHECK(expert_params(eight).first * 8 == expert_params(one).first);
    REQUIRE(eight.g.expert_parallel.degree == 8);
    CHECK(eight.g.expert_parallel.all_to_all.size() == 2 * 24);
    ParallelOptions o;
    o.dp = 8;
    const ParallelAnalysis p = analyze_parallel(eight.g, eight.a, c, o);
    CHECK(p.ep_collectives == 96);
    const double bytes = 4.0 * 2048 * 1024 * 2;
    CHECK(p.ep_comm_s == Approx(96 * collective_cost(c, Collective::all_to_all, bytes, CommGroup{8, 8}).time_s).epsilon(1e-12));
    double reduced = 0;
    for (const CommOp& k : p.comms) reduced += k.cost.bytes;
    CHECK(reduced == Approx(4.0 * static_cast<double>(expert_params(eight).second)));
    // With 2 ranks to an expert (ep 4 of dp 8) the expert gradients are reduced among those 2 too.
    const Step four = step(8, 4);
    double reduced4 = 0;
    for (const CommOp& k : analyze_parallel(four.g, four.a, c, o).comms) reduced4 += k.cost.bytes;
    CHECK(reduced4 == Approx(4.0 * static_cast<double>(expert_params(four).second + expert_params(four).first)));

    // Bad input: --ep not dividing the experts or --dp; --ep on a dense model.
    o.dp = 4;
    CHECK_THROWS_WITH(analyze_parallel(eight.g, eight.a, c, o),
                      Catch::Contains("--ep 8: the expert-parallel ranks are data-parallel ranks"));
    CHECK_THROWS_WITH(step(8, 3), Catch::Contains("--ep 3 must divide the 8 experts"));
    CHECK_THROWS_WITH(step(0, 2), Catch::Contains("the model has no experts"));
}

TEST_CASE("expert parallelism with non-uniform routing: the busiest rank, its all-to-alls and the mean rank's MFU", "[parallel][ep]") {
    // GPT-2 medium, 8 experts of top-2 MoE MLPs, batch 4 x 1024, routing shares 4:1:1:1:1:1:1:1.
    // A sequence's 2,048 token copies split 2048 x 4/11 = 744.7 and 2048/11 = 186.2 (no expert
    // above the 1,024 tokens a sequence has), rounded by largest remainder: 745, 187, 186 x 6.
    // On 8 expert-parallel ranks (one expert each) the busiest rank is expert 0's: it receives
    // 8 x 745 = 5,960 copies a sequence (load factor 5960 / 2048), so its expert GEMMs, both
    // all-to-alls (its receive buffer and what it sends back: [4, 5960, 1024] bf16) and its step
    // grow; the model FLOPs MFU counts are the mean rank's, the uniform run's to within the expert
    // activation's share (the gelu between the GEMMs is not scaled back: under 1%).
    const Cluster c = builtin_cluster("dgx-a100");
    auto step = [&](const std::string& load, int ep) { return moe_step(c, 8, ep, load); };
    auto pass_flops = [](const Step& s) {
        return static_cast<double>(s.a.by_phase[static_cast<int>(Phase::forward)].work.flops() +
                                   s.a.by_phase[static_cast<int>(Phase::backward)].work.flops());
    };
    // One rank holding every expert: the same work as uniform routing, split unevenly.
    const Step uniform1 = step("", 1), skewed1 = step("4,1,1,1,1,1,1,1", 1);
    CHECK(pass_flops(skewed1) == Approx(pass_flops(uniform1)).epsilon(1e-9));
    CHECK(rows(skewed1, "h0.moe.expert_0.up") == 745);
    CHECK(rows(skewed1, "h0.moe.expert_1.up") == 187);
    CHECK(rows(skewed1, "h0.moe.expert_7.up") == 186);

    const Step uniform = step("", 8), skewed = step("4,1,1,1,1,1,1,1", 8);
    REQUIRE(skewed.g.expert_parallel.degree == 8);
    CHECK(skewed.g.expert_parallel.load_factor == Approx(5960.0 / 2048).epsilon(1e-12));
    CHECK(rows(skewed, "h0.moe.expert_0.up") == 5960);
    CHECK(skewed.g.expert_parallel.all_to_all.size() == 2 * 24);
    ParallelOptions o;
    o.dp = 8;
    const ParallelAnalysis pu = analyze_parallel(uniform.g, uniform.a, c, o), ps = analyze_parallel(skewed.g, skewed.a, c, o);
    const double bytes = 4.0 * 5960 * 1024 * 2;
    CHECK(ps.ep_comm_s == Approx(96 * collective_cost(c, Collective::all_to_all, bytes, CommGroup{8, 8}).time_s).epsilon(1e-12));
    CHECK(ps.step_time_s > 1.5 * pu.step_time_s);
    CHECK(ps.flops_per_rank > 1.5 * pu.flops_per_rank);  // the busiest rank's own work
    CHECK(ps.model_flops_per_rank == Approx(pu.model_flops_per_rank).epsilon(0.01));
    CHECK(ps.mfu < pu.mfu);

    // A share per expert, non-negative, not all zero; a dense model has none to route.
    CHECK_THROWS_WITH(step("1,2,3", 1), Catch::Contains("/config/expert_load: expected one share per expert (8), got 3"));
    CHECK_THROWS_WITH(step("0,0,0,0,0,0,0,0", 1), Catch::Contains("the shares sum to 0"));
    CHECK_THROWS_WITH(step("zipf:-1", 1), Catch::Contains("\"zipf:S\" (S >= 0), or an array of those, one per layer, got \"zipf:-1\""));
    const auto dense = test::run_cli("analyze gpt2-small --expert-load zipf:1 -q");
    CHECK(dense.code == 2);
    CHECK_THAT(dense.out, Catch::Contains("/config/expert_load: the model has no experts"));
    const auto hf = test::run_cli("analyze llama-2-7b --expert-load zipf:1 -q");
    CHECK(hf.code == 2);
    // A Hugging Face model without experts (mixtral and qwen2_moe take it: hf_parallel_test.cpp).
    CHECK_THAT(hf.out, Catch::Contains("/config/model_type: --expert-load: llama has no experts to route to"));
}

TEST_CASE("routing that differs from layer to layer: each layer's own load, every layer's busiest rank", "[parallel][ep]") {
    // The same GPT-2 medium MoE (24 layers, 8 experts, top-2, batch 4 x 1024) with layer 0 routed
    // 4:1:1:1:1:1:1:1 and the other 23 uniformly (--expert-load L0;L1;...). On 8 expert-parallel
    // ranks, layer 0's busiest rank runs 8 x 745 = 5,960 copies a sequence (as when every layer is
    // skewed) and each uniform layer's 2,048; the document runs every layer's busiest rank, so its
    // load factor is (5960 + 23 x 2048) / (24 x 2048) = 1.0796, and its step lies between the
    // uniform one and the one skewed in every layer. A stage of such layers is built whole (its
    // layers are not identical): search ranks it as analyze gives it.
    const Cluster c = builtin_cluster("dgx-a100");
    std::string per_layer = "4,1,1,1,1,1,1,1";
    for (int l = 1; l < 24; ++l) per_layer += ";uniform";
    const Step mixed = moe_step(c, 8, 8, per_layer), skewed = moe_step(c, 8, 8, "4,1,1,1,1,1,1,1"), uniform = moe_step(c, 8, 8, "");
    CHECK(rows(mixed, "h0.moe.expert_0.up") == 5960);
    CHECK(rows(mixed, "h1.moe.expert_0.up") == 2048);
    CHECK(rows(skewed, "h1.moe.expert_0.up") == 5960);
    CHECK(mixed.g.expert_parallel.load_factor == Approx((5960.0 + 23 * 2048) / (24 * 2048)).epsilon(1e-12));
    CHECK(mixed.g.expert_parallel.all_to_all.size() == 2 * 24);
    CHECK(mixed.a.schedule.step_time_s > uniform.a.schedule.step_time_s);
    CHECK(mixed.a.schedule.step_time_s < skewed.a.schedule.step_time_s);
    // One load a layer: 23 for 24 layers names the count; an empty layer's load names the layer.
    CHECK_THROWS_WITH(moe_step(c, 8, 1, per_layer.substr(0, per_layer.rfind(';'))),
                      Catch::Contains("/config/expert_load: expected one load per layer (24), got 23"));
    CHECK_THROWS_WITH(moe_step(c, 8, 1, "uniform;;uniform"), Catch::Contains("--expert-load: layer 1's load is empty"));
    std::string short_layer = "zipf:1;1,2,3";
    for (int l = 2; l < 24; ++l) short_layer += ";uniform";
    CHECK_THROWS_WITH(moe_step(c, 8, 1, short_layer), Catch::Contains("/config/expert_load/1: expected one share per expert (8), got 3"));
    // Search over such a model: the stage is built whole and the configuration is analyze's.
    const std::string model = test::tmp_path("moe-per-layer.json");
    htmltest::spit(model, R"({"format": "roofline-model/1", "template": "gpt", "config": {"preset": "gpt2-medium", "n_layer": 2,
                              "experts": 8, "top_k": 2, "dropout": 0}})");
    const std::string out = test::tmp_path("moe-per-layer-search.json"), one = test::tmp_path("moe-per-layer-analyze.json");
    const std::string load = " --seq 1024 --expert-load '4,1,1,1,1,1,1,1;uniform' -q";
    REQUIRE(test::run_cli("search '" + model +
                          "' --gpus 8 --cluster dgx-a100 --global-batch 16 --tp 1 --pp 1 --ep 8 --micro-batches 2 "
                          "--recompute none --zero 0 --interleave 1 --sp off" +
                          load + " -o '" + out + "'")
                .code == 0);
    REQUIRE(test::run_cli("analyze '" + model + "' --mode training --batch 2 --cluster dgx-a100 --dp 8 --ep 8 --global-batch 16" + load +
                          " -o '" + one + "'")
                .code == 0);
    const auto searched = nlohmann::json::parse(htmltest::slurp(out)), analysed = nlohmann::json::parse(htmltest::slurp(one));
    REQUIRE(!searched["candidates"].empty());
    CHECK(searched["candidates"][0]["step_time_s"].get<double>() ==
          Approx(analysed["parallel"]["step_time_s"].get<double>()).epsilon(1e-9));
}

TEST_CASE("expert capacity: copies over capacity dropped, padded buffers run and sent whole", "[parallel][ep]") {
    // GPT-2 medium, 8 experts of top-2 MoE MLPs, batch 4 x 1024: a sequence's 2,048 token copies,
    // 256 an expert when uniform. Capacity = ceil(F x 2048 / 8) copies an expert (GShard; Switch
    // Transformer eq. 3). Expected, exactly (integer rows):
    //  - F = 1.25, uniform, unpadded: capacity 320 >= 256, nothing dropped: the dropless graph.
    //  - F = 0.5: capacity 128, every expert drops half: each expert GEMM runs 128 rows.
    //  - F = 1.25 padded: every expert runs its 320-row buffer (zeros past the 256 copies), so the
    //    expert GEMMs' FLOPs are 1.25x; on 8 expert-parallel ranks the all-to-alls carry the
    //    busiest rank's whole buffer, 8 x 320 rows of 1024 bf16 values a sequence.
    //  - shares 3,1,1,1,1,1,0,0 at F = 1: 2048 x 3/8 = 768 copies to expert 0 clipped to 256 (512
    //    dropped, 25% of the copies), 256 to experts 1-5, none to 6 and 7.
    const Cluster c = builtin_cluster("dgx-a100");
    auto expert_flops = [](const Step& s) {  // forward and backward (an expert's optimizer step does not scale)
        double f = 0;
        for (std::size_t i = 0; i < s.g.nodes().size(); ++i)
            if (s.g.nodes()[i].phase != Phase::optimizer && s.g.nodes()[i].name.find(".moe.expert_") != std::string::npos)
                f += static_cast<double>(s.g.work(static_cast<NodeId>(i)).flops());
        return f;
    };
    const Step dropless = moe_step(c, 8, 1, ""), roomy = moe_step(c, 8, 1, "", 1.25);
    CHECK(roomy.g.nodes().size() == dropless.g.nodes().size());
    CHECK(static_cast<double>(roomy.a.total.flops()) == static_cast<double>(dropless.a.total.flops()));

    const Step half = moe_step(c, 8, 1, "", 0.5);
    CHECK(rows(half, "h0.moe.expert_0.up") == 128);
    CHECK(rows(half, "h0.moe.expert_7.up") == 128);
    CHECK(expert_flops(half) == Approx(0.5 * expert_flops(dropless)).epsilon(1e-3));

    const Step padded = moe_step(c, 8, 1, "", 1.25, true);
    CHECK(rows(padded, "h0.moe.expert_3.up") == 320);
    CHECK(expert_flops(padded) == Approx(1.25 * expert_flops(dropless)).epsilon(1e-3));
    const Step padded8 = moe_step(c, 8, 8, "", 1.25, true), uniform8 = moe_step(c, 8, 8, "");
    CHECK(rows(padded8, "h0.moe.expert_0.up") == 8 * 320);
    ParallelOptions o;
    o.dp = 8;
    const ParallelAnalysis pp = analyze_parallel(padded8.g, padded8.a, c, o), pu = analyze_parallel(uniform8.g, uniform8.a, c, o);
    CHECK(pp.ep_comm_s ==
          Approx(96 * collective_cost(c, Collective::all_to_all, 4.0 * 8 * 320 * 1024 * 2, CommGroup{8, 8}).time_s).epsilon(1e-12));
    CHECK(pp.ep_comm_s > pu.ep_comm_s);

    const Step skew = moe_step(c, 8, 1, "3,1,1,1,1,1,0,0", 1.0);
    CHECK(rows(skew, "h0.moe.expert_0.up") == 256);
    CHECK(rows(skew, "h0.moe.expert_5.up") == 256);
    CHECK(skew.g.find_node("h0.moe.expert_6.up") == kNoNode);
    nlohmann::json cfg = {
        {"preset", "gpt2-medium"}, {"seq", 1024}, {"experts", 8}, {"expert_load", {3, 1, 1, 1, 1, 1, 0, 0}}, {"capacity_factor", 1.0}};
    const std::string text = expand_template("gpt", cfg, "t")["description"].get<std::string>();
    CHECK_THAT(text, Catch::Contains("capacity factor 1 (256 copies an expert a sequence): 25.0% of token copies dropped"));
    // ... and the report says so (model.description).
    const std::string report = test::tmp_path("moe-capacity.json");
    const auto r = test::run_cli("analyze '" + test::source_path("examples/gpt-moe.json") +
                                 "' --expert-load 3,1,1,1,1,1,0,0 --capacity-factor 1 -q -o '" + report + "'");
    REQUIRE(r.code == 0);
    CHECK_THAT(nlohmann::json::parse(htmltest::slurp(report))["model"]["description"].get<std::string>(),
               Catch::Contains("25.0% of token copies dropped"));

    // Bad input: a capacity that is not a positive number, padding without one, a dense model.
    cfg["capacity_factor"] = -1;
    CHECK_THROWS_WITH(expand_template("gpt", cfg, "t"), Catch::Contains("t: /config/capacity_factor: expected a number > 0"));
    const auto zero = test::run_cli("analyze '" + test::source_path("examples/gpt-moe.json") + "' --capacity-factor 0 -q");
    CHECK(zero.code == 2);
    CHECK_THAT(zero.out, Catch::Contains("--capacity-factor: expected a positive number, got '0'"));
    const auto nocap = test::run_cli("analyze '" + test::source_path("examples/gpt-moe.json") + "' --pad-to-capacity -q");
    CHECK(nocap.code == 2);
    CHECK_THAT(nocap.out, Catch::Contains("/config/pad_to_capacity: padding to capacity needs a capacity"));
    const auto dense = test::run_cli("analyze gpt2-small --capacity-factor 1.25 -q");
    CHECK(dense.code == 2);
    CHECK_THAT(dense.out, Catch::Contains("/config/capacity_factor: the model has no experts"));
}

TEST_CASE("sequence parallelism with mixture-of-experts layers: the MoE input all-gathered, its output reduce-scattered",
          "[parallel][ep][sp]") {
    // GPT-2 medium with 8 top-2 experts on 2 tensor-parallel ranks with sequence parallelism: the MoE
    // layer (router and experts, each expert split by tp as the dense MLP) runs on the gathered
    // sequence, so its tensor-parallel collectives are those of the dense MLP with sequence
    // parallelism: the same count and bytes as dense GPT-2 medium's (an all-gather of the
    // [4, 1024, 1024] input, a reduce-scatter of the output, and their backward counterparts), and
    // the activations between the blocks are sharded (peak memory below tp without sp).
    const auto run = [](const std::string& model, const std::string& flags) {
        const std::string out = test::tmp_path("moe-sp.json");
        const auto r = test::run_cli("analyze " + model + " --mode training --cluster dgx-a100 " + flags + " -q -o '" + out + "'");
        REQUIRE(r.code == 0);
        return nlohmann::json::parse(htmltest::slurp(out))["parallel"];
    };
    const std::string moe = "'" + test::source_path("examples/gpt-moe.json") + "'";
    const auto moe_sp = run(moe, "--tp 2 --sp"), moe_tp = run(moe, "--tp 2");
    const auto dense_sp = run("gpt2-medium --batch 4 --seq 1024", "--tp 2 --sp");
    CHECK(moe_sp["tp_collectives"] == dense_sp["tp_collectives"]);
    CHECK(moe_sp["tp_comm_s"].get<double>() == Approx(dense_sp["tp_comm_s"].get<double>()).epsilon(1e-12));
    CHECK(moe_sp["peak_bytes_per_rank"].get<double>() < moe_tp["peak_bytes_per_rank"].get<double>());
}

TEST_CASE("sequence and expert parallelism together: each rank dispatches its own shard, the copies gathered for the experts",
          "[parallel][ep][sp]") {
    // Megatron-core's alltoall token dispatcher with --sequence-parallel: a rank routes the 512
    // tokens of its sequence shard (GPT-2 medium, batch 4 x 1024, tp 2), sends each token's 2 copies
    // to their experts' ranks (ep 2: 4 of 8 experts a rank), all-gathers the received copies over
    // the 2 tensor-parallel ranks for the experts (each split by tp as the dense MLP), reduce-scatters
    // their partial outputs, and sends them back. By hand, bf16, d = 1024, per layer and direction:
    //   all-to-all: 4 x 512 x 2 x 1024 x 2 B = 8 MiB (half of tp 2 --ep 2 without --sp: 16 MiB);
    //   all-gather of the dispatched copies: 4 x (1024 x 2 x 2 / 8 = 512) x 4 x 1024 x 2 B = 16 MiB;
    //   the experts' FLOPs a rank: those of --tp 2 --ep 2 (the same copies reach the same experts).
    const Cluster c = builtin_cluster("dgx-a100");
    const auto step = [&](bool sp) {
        ModelOverrides ov;
        ov.tp = 2, ov.sp = sp, ov.ep = 2;
        Step s;
        s.g = build_training_step(load_model_arg(test::source_path("examples/gpt-moe.json"), ov), TrainingOptions{});
        s.a = analyze(s.g, c.hardware);
        return s;
    };
    const Step both = step(true), tp_ep = step(false);
    const auto out_bytes = [](const Step& s, const std::string& node) {
        const NodeId n = s.g.find_node(node);
        REQUIRE(n != kNoNode);
        return s.g.tensor(s.g.node(n).outputs.front()).desc.bytes();
    };
    const std::int64_t mib = 1024 * 1024;
    CHECK(out_bytes(both, "h0.moe.dispatch") == 8 * mib);
    CHECK(out_bytes(both, "h0.moe.combine") == 8 * mib);
    CHECK(out_bytes(tp_ep, "h0.moe.dispatch") == 16 * mib);
    CHECK(out_bytes(both, "h0.moe.gather") == 16 * mib);
    const auto& tp = both.g.tensor_parallel;
    CHECK(std::count(tp.all_gather.begin(), tp.all_gather.end(), "h0.moe.gather") == 1);
    CHECK(std::count(tp.reduce_scatter.begin(), tp.reduce_scatter.end(), "h0.moe.scatter") == 1);
    CHECK(std::count(tp.all_gather.begin(), tp.all_gather.end(), "h0.mlp.gather") == 0);  // the layer's input is not gathered
    CHECK(both.g.expert_parallel.all_to_all.size() == 2 * 24);
    const auto expert_flops = [](const Step& s) {
        double f = 0;
        for (const OpAnalysis& op : s.a.ops)
            if (s.g.node(op.node).name.find(".moe.expert_") != std::string::npos) f += static_cast<double>(op.roofline->work.flops());
        return f;
    };
    CHECK(expert_flops(both) == Approx(expert_flops(tp_ep)).epsilon(1e-12));
    // On the cluster: the all-to-alls cost less than without --sp (half the bytes), and the
    // activations between the blocks are sharded.
    const auto run = [](const std::string& flags) {
        const std::string out = test::tmp_path("moe-sp-ep.json");
        REQUIRE(test::run_cli("analyze '" + test::source_path("examples/gpt-moe.json") + "' --mode training --cluster dgx-a100 " + flags +
                              " -q -o '" + out + "'")
                    .code == 0);
        return nlohmann::json::parse(htmltest::slurp(out))["parallel"];
    };
    const auto with_sp = run("--tp 2 --sp --dp 2 --ep 2"), without = run("--tp 2 --dp 2 --ep 2");
    CHECK(with_sp["ep_collectives"] == without["ep_collectives"]);
    CHECK(with_sp["ep_comm_s"].get<double>() < without["ep_comm_s"].get<double>());
    CHECK(with_sp["peak_bytes_per_rank"].get<double>() < without["peak_bytes_per_rank"].get<double>());
    // Routing that is not uniform is not modelled with both (exit 2, naming the key).
    const auto routed = test::run_cli("analyze '" + test::source_path("examples/gpt-moe.json") +
                                      "' --mode training --cluster dgx-a100 --tp 2 --sp --dp 2 --ep 2 --expert-load zipf:1 -q");
    CHECK(routed.code == 2);
    CHECK_THAT(routed.out,
               Catch::Contains("/config/sp: --sp with expert parallelism (--ep) is modelled for uniform dropless routing only"));
}
