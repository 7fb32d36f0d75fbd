// Context parallelism's three forms (issue #16; sim/parallel.hpp CpComm): what a rank holds under
// ring attention against the all-gather form, the causal load balance of the ring's steps, and
// DeepSpeed-Ulysses' all-to-alls, each against numbers worked out by hand.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "html_support.hpp"
#include "model/autodiff.hpp"
#include "model/model_json.hpp"
#include "sim/analysis.hpp"
#include "sim/fusion.hpp"
#include "sim/parallel.hpp"
#include "sim/plan.hpp"
#include "support.hpp"

using namespace roofline;

namespace {

// A 2-layer GPT (d_model 256, 4 heads of 64, bf16, vocabulary 50,257) at batch 1 x 4,096 tokens:
// small attention next to a large LM head, so that a training step's peak is at the loss, where
// every layer's saved tensors are held and no attention runs.
const nlohmann::json kConfig = {{"preset", "gpt2-small"}, {"n_ctx", 4096},  {"d_model", 256}, {"n_layer", 2}, {"n_head", 4}, {"batch", 1},
                                {"dropout", 0},           {"dtype", "bf16"}};

std::string config_file() {
    const std::string path = test::tmp_path("cp-forms-gpt.json");
    htmltest::spit(path, nlohmann::json{{"format", "roofline-model/1"}, {"template", "gpt"}, {"config", kConfig}}.dump());
    return path;
}

struct Step {
    Graph graph;
    Analysis analysis;
    StageProfile profile;
};

// The training step of one rank of `cp` context-parallel ranks.
Graph training_step(int cp) {
    ModelOverrides ov;
    ov.cp = cp;
    return build_training_step(
        load_model(nlohmann::json{{"format", "roofline-model/1"}, {"template", "gpt"}, {"config", kConfig}}, "cp-forms-gpt", ov),
        TrainingOptions{});
}

// That step with flash attention (--fuse).
Step step_of(int cp, const Hardware& hw) {
    Step s{training_step(cp), {}, {}};
    const FusionPlan plan = find_fusion_groups(s.graph, hw);
    AnalysisOptions o;
    o.fusion = &plan;
    s.analysis = analyze(s.graph, hw, o);
    s.profile = stage_profile(s.graph, s.analysis);
    return s;
}

ParallelAnalysis form(const StageProfile& p, const Cluster& c, CpComm comm) {
    ParallelOptions o;
    o.cp_comm = comm;
    return analyze_parallel(p, c, o);
}

}  // namespace

TEST_CASE("ring attention keeps a rank's own key/value block, the all-gather form the whole sequence's", "[parallel][cp][ring]") {
    // On 2 context-parallel ranks a rank holds 2,048 tokens; each layer's gathered keys and values
    // are [1, 4, 4096, 64] bf16: 4 x 4096 x 64 x 2 = 2 MiB each, kept for attention's backward.
    // Ring attention (TransformerEngine's AttnFuncWithCPAndKVP2P) keeps instead the rank's own
    // block of each, 1 MiB: per rank (cp - 1) / cp x 2 MiB = 1 MiB less per tensor, 2 layers x
    // (K and V) = 4 MiB = 4,194,304 bytes. The peak of this step is at the loss, where every layer's
    // tensors are saved and no attention runs (no ring buffers in flight): the per-rank peaks of
    // the two forms differ by exactly that, to the byte (integers throughout, and 2 MiB divides by
    // cp). Ulysses keeps heads / cp heads of the whole sequence, the same bytes as the ring's block.
    const Cluster c = builtin_cluster("dgx-a100");
    const Step s = step_of(2, c.hardware);
    const std::int64_t gathered = 4LL * 4096 * 64 * 2, expected = 2 * 2 * (gathered - gathered / 2);
    REQUIRE(expected == 4194304);
    for (const std::string& n : s.graph.context_parallel.all_gather) CHECK(s.graph.tensor(s.graph.find_tensor(n)).desc.bytes() == gathered);
    const ParallelAnalysis ring = form(s.profile, c, CpComm::ring), all = form(s.profile, c, CpComm::all_gather),
                           uly = form(s.profile, c, CpComm::ulysses);
    CHECK(all.peak_bytes - ring.peak_bytes == expected);
    CHECK(all.peak_bytes - uly.peak_bytes == expected);
    const auto acts = static_cast<std::size_t>(MemoryCategory::activations);
    CHECK(all.peak_bytes_by_category[acts] - ring.peak_bytes_by_category[acts] == expected);  // saved tensors, not temporaries
    CHECK(s.profile.saved_activation_bytes - s.profile.cp_saved_activation_bytes == expected);

    // While an attention runs the ring also holds two blocks in flight (the one in hand and the one
    // arriving): 2 x (K + V) / cp = 2 MiB of temporaries over Ulysses at layer 0's P V; while its
    // gradient runs two key/value blocks and two of their gradients: 4 MiB.
    const NodeId pv = s.graph.find_node("h0.attn.context");
    REQUIRE(pv != kNoNode);
    const auto temps = static_cast<std::size_t>(MemoryCategory::temporaries);
    const auto at = static_cast<std::size_t>(pv);
    CHECK(s.profile.ring_memory[at].bytes[temps] - s.profile.ulysses_memory[at].bytes[temps] == 2 * (2 * gathered / 2));
    NodeId grad = kNoNode;
    for (NodeId i = 0; i < static_cast<NodeId>(s.graph.nodes().size()); ++i)
        if (s.graph.node(i).differentiates == pv) grad = i;
    REQUIRE(grad != kNoNode);
    const auto back = static_cast<std::size_t>(grad);
    CHECK(s.profile.ring_memory[back].bytes[temps] - s.profile.ulysses_memory[back].bytes[temps] == 4 * (2 * gathered / 2));

    // The report of `analyze --fuse` on the same model: the per-rank peaks as above.
    const std::string model = config_file();
    const auto peak = [&](const std::string& comm) {
        const std::string out = test::tmp_path("cp-forms-" + comm + ".json");
        const auto r = test::run_cli("analyze '" + model + "' --mode training --fuse --cluster dgx-a100 --cp 2 --cp-comm " + comm +
                                     " -q -o '" + out + "'");
        REQUIRE(r.code == 0);
        const nlohmann::json j = nlohmann::json::parse(htmltest::slurp(out))["parallel"];
        CHECK(j["cp_comm"] == (comm == "a2a" ? "ulysses" : comm));
        return j["peak_bytes_per_rank"].get<std::int64_t>();
    };
    CHECK(peak("allgather") - peak("ring") == expected);
    CHECK(peak("allgather") - peak("a2a") == expected);
}

TEST_CASE("ring attention's steps under a causal mask: the zigzag layout's equal halves, by hand", "[parallel][cp][ring]") {
    // The sequence in 2 cp chunks, rank r holding chunks r and 2 cp - 1 - r (Megatron-core's and
    // TransformerEngine's layout). A step pairs the rank's two query chunks with another rank's two
    // key/value chunks: 4 chunk pairs, each a quarter of a block pair, counting 1 below the
    // diagonal, 1/2 on it, 0 above. Step 0 (its own block): two diagonal pairs (1/8 + 1/8) and one
    // below (1/4) = 1/2. An earlier rank's block: both query chunks against its first chunk = 1/2;
    // a later rank's: the second query chunk against both = 1/2. So every step is exactly 1/2 a
    // block pair (exact binary fractions), each rank's cp steps cp / 2: half of its queries x the
    // whole sequence, the causal fraction. The contiguous split (rank r holding block r): 1/2, then
    // 1 for each of the r earlier ranks' blocks, 0 for the later ones: rank r does r + 1/2, rank
    // cp - 1 2 cp - 1 times rank 0, the same total cp^2 / 2.
    for (const int cp : {2, 4, 8}) {
        INFO("cp " << cp);
        double zig_total = 0, naive_total = 0;
        for (int r = 0; r < cp; ++r) {
            const std::vector<double> zig = ring_step_work(cp, r, true), naive = ring_step_work(cp, r, true, CpLayout::contiguous);
            REQUIRE(zig.size() == static_cast<std::size_t>(cp));
            double rank_zig = 0, rank_naive = 0;
            for (int j = 0; j < cp; ++j) {
                CHECK(zig[static_cast<std::size_t>(j)] == 0.5);
                CHECK(naive[static_cast<std::size_t>(j)] == (j == 0 ? 0.5 : j <= r ? 1.0 : 0.0));
                rank_zig += zig[static_cast<std::size_t>(j)];
                rank_naive += naive[static_cast<std::size_t>(j)];
            }
            CHECK(rank_zig == cp / 2.0);
            CHECK(rank_naive == r + 0.5);
            zig_total += rank_zig;
            naive_total += rank_naive;
        }
        CHECK(zig_total == cp * cp / 2.0);
        CHECK(naive_total == zig_total);
        for (const double w : ring_step_work(cp, 0, false)) CHECK(w == 1.0);  // no mask: every pair
    }

    // The exposure follows each step's own attention. Forward, cp - 1 sends of t each; attention
    // A = cp x t, so that an equal step (zigzag: A / cp = t) hides its send exactly: nothing exposed.
    // The contiguous split's last rank (steps 1/2, 1, ..., 1: cp - 1/2 in all) runs A / (2 cp - 1)
    // at step 0, less than t, and more than t at the others: exposed t - cp t / (2 cp - 1) =
    // t (cp - 1) / (2 cp - 1), to rounding (1e-12 relative).
    const Cluster c = builtin_cluster("dgx-a100");
    const double kv = 64.0 * 1024 * 1024;
    for (const int cp : {2, 4, 8}) {
        INFO("cp " << cp);
        const CommGroup g{cp, cp};
        const double t = collective_cost(c, Collective::send_recv, kv / cp, g).time_s;
        CHECK(ring_exchange(c, g, kv, cp * t, false).exposed_s == Approx(0).margin(1e-18));
        const RingExchange naive = ring_exchange(c, g, kv, cp * t, false, ring_step_work(cp, cp - 1, true, CpLayout::contiguous));
        CHECK(naive.exposed_s == Approx(t * (cp - 1) / (2 * cp - 1)).epsilon(1e-12));
        CHECK(naive.comm_s == Approx((cp - 1) * t).epsilon(1e-12));
    }
    CHECK_THROWS_WITH(ring_exchange(c, CommGroup{4, 4}, kv, 1, false, {1, 1}), Catch::Contains("2 step shares for 4 ranks"));
}

TEST_CASE("Ulysses: four all-to-alls an attention each way, the volume by hand, and the heads it needs", "[parallel][cp][ulysses]") {
    // The 2-layer GPT above on 4 context-parallel ranks: a rank's queries, keys, values and
    // attention output are each [1, 4 heads, 1024 tokens, 64] bf16 = 512 KiB (the keys and values
    // its quarter of the gathered 2 MiB). DeepSpeed-Ulysses (Jacobs et al. 2023, section 3.1)
    // all-to-alls the four forward and their gradients backward: 8 a layer, 16 in all, each rank
    // sending (cp - 1) / cp = 3/4 of each: 16 x 512 KiB x 3/4 = 6 MiB = 6,291,456 bytes (exact in
    // binary). Each costed by sim/collectives on the 4 ranks of a node, none hidden.
    const Cluster c = builtin_cluster("dgx-a100");
    const Step s = step_of(4, c.hardware);
    const double tensor = 4.0 * 1024 * 64 * 2;
    CHECK(s.profile.cp_heads == 4);
    CHECK(s.profile.cp_kv_heads == 4);
    int a2a = 0;
    for (const StageProfile::Blocking& b : s.profile.blocking)
        if (b.group == StageProfile::Group::ulysses) {
            ++a2a;
            CHECK(b.collective == Collective::all_to_all);
            CHECK(b.bytes == tensor);
        }
    CHECK(a2a == 16);
    const ParallelAnalysis u = form(s.profile, c, CpComm::ulysses);
    CHECK(u.cp_collectives == 16);
    CHECK(u.cp_bytes == 6291456.0);
    CHECK(u.cp_comm_s == Approx(16 * collective_cost(c, Collective::all_to_all, tensor, CommGroup{4, 4}).time_s).epsilon(1e-12));
    CHECK(u.cp_exposed_s == Approx(u.cp_comm_s).epsilon(1e-12));
    // The ring sends (cp - 1) / cp of each layer's 4 MiB of keys and values forward and twice that
    // backward: 2 layers x (3 + 6) MiB = 18 MiB; the all-gather form 3/4 of each gathered 2 MiB
    // tensor for its all-gather and again for its gradient's reduce-scatter: 2 x 2 x 2 x 1.5 MiB = 12 MiB.
    CHECK(form(s.profile, c, CpComm::ring).cp_bytes == 18.0 * 1024 * 1024);
    CHECK(form(s.profile, c, CpComm::all_gather).cp_bytes == 12.0 * 1024 * 1024);

    // The heads split over tp x cp ranks: gpt2-small's 12 heads on 8 context-parallel ranks,
    // llama-3-8b's 8 key/value heads (of 32) on 16 and falcon-7b's one are refused naming --cp and
    // the heads; 12 on 4 runs, `a2a` its alias.
    const auto bad = test::run_cli("analyze gpt2-small --mode training --seq 1024 --cluster dgx-a100 --cp 8 --cp-comm ulysses -q");
    CHECK(bad.code == 2);
    CHECK_THAT(bad.out, Catch::Contains("--cp 8 --cp-comm ulysses: the 12 attention heads must be a multiple of --cp 8 x --tp 1 = 8"));
    const std::string llama = test::tmp_path("llama3-2-layers-ulysses.json");
    htmltest::spit(llama, R"({"format": "roofline-model/1", "template": "llama-3-8b", "config": {"num_hidden_layers": 2}})");
    const auto gqa = test::run_cli("analyze '" + llama + "' --mode training --seq 4096 --cluster dgx-h100 --cp 16 --cp-comm a2a -q");
    CHECK(gqa.code == 2);
    CHECK_THAT(gqa.out, Catch::Contains("the 32 attention heads and 8 key/value heads must be a multiple of --cp 16 x --tp 1 = 16"));
    // Multi-query attention (falcon-7b: 71 query heads, one key/value head) cannot split at all.
    const auto mqa = test::run_cli("analyze falcon-7b --mode training --seq 2048 --cluster dgx-a100 --cp 2 --cp-comm ulysses -q");
    CHECK(mqa.code == 2);
    CHECK_THAT(mqa.out, Catch::Contains("--cp 2 --cp-comm ulysses: the 71 attention heads and 1 key/value head must be a multiple of"));
    const std::string out = test::tmp_path("cp-ulysses.json");
    REQUIRE(
        test::run_cli("analyze gpt2-small --mode training --seq 1024 --cluster dgx-a100 --cp 4 --cp-comm a2a -q -o '" + out + "'").code ==
        0);
    const nlohmann::json j = nlohmann::json::parse(htmltest::slurp(out))["parallel"];
    CHECK(j["cp_comm"] == "ulysses");
    CHECK(j["cp_collectives"] == 12 * 8);
    CHECK(j["cp_exposed_s"].get<double>() == Approx(j["cp_comm_s"].get<double>()).epsilon(1e-12));
}

TEST_CASE("ring and all-gather context parallelism run attention as flash attention without --fuse, Ulysses and cp 1 as asked",
          "[parallel][cp][ring][ulysses]") {
    // The 2-layer GPT above (4 heads, bf16, 4,096 tokens; dropout 0), whose training step's peak is
    // at the loss, where every layer's saved tensors are held. Its unfused attention (Q K^T, scale,
    // causal mask, softmax, P V) keeps the softmax's probabilities for backward: on 2
    // context-parallel ranks [1, 4, 2048, 4096] bf16 a layer, 4 x 2048 x 4096 x 2 = 64 MiB, 2 layers
    // = 134,217,728 bytes (exact: integers). Flash attention keeps none (it recomputes them from Q,
    // K, V and the row statistics, sim/fusion.hpp), and a flash-only fusion changes nothing else.
    const std::int64_t heads = 4, seq = 4096, cp = 2, layers = 2, bf16 = 2;
    const std::int64_t scores = layers * heads * (seq / cp) * seq * bf16;
    REQUIRE(scores == 134217728);
    const std::string model = config_file();
    struct Run {
        std::int64_t peak = 0;
        double step_s = 0;
        std::string attention;
    };
    const auto run = [&](const std::string& flags) {
        const std::string out = test::tmp_path("cp-flash.json");
        const auto r = test::run_cli("analyze '" + model + "' --mode training --cluster dgx-a100 " + flags + " -q -o '" + out + "'");
        REQUIRE(r.code == 0);
        const nlohmann::json j = nlohmann::json::parse(htmltest::slurp(out))["parallel"];
        return Run{j["peak_bytes_per_rank"].get<std::int64_t>(), j["step_time_s"].get<double>(),
                   j.contains("cp_attention") ? j["cp_attention"].get<std::string>() : ""};
    };
    // Ring and all-gather without --fuse are exactly `--fuse-kinds flash` (attention fused, nothing
    // else): the same peak to the byte and the same step (the same fusion plan, the same analysis).
    for (const std::string comm : {"ring", "allgather"}) {
        const Run plain = run("--cp 2 --cp-comm " + comm), flash = run("--cp 2 --cp-comm " + comm + " --fuse-kinds flash");
        CHECK(plain.peak == flash.peak);
        CHECK(plain.step_s == flash.step_s);
        CHECK(plain.attention == "flash");
    }
    // Ulysses keeps the user's choice: without --fuse its attention holds the probabilities, the
    // peak exactly `scores` above its flash form's and above the ring's (at the loss the ring and
    // Ulysses both keep 1/cp of the keys and values, the first test case).
    const Run uly = run("--cp 2 --cp-comm ulysses"), uly_flash = run("--cp 2 --cp-comm ulysses --fuse-kinds flash");
    CHECK(uly.peak - uly_flash.peak == scores);
    CHECK(uly.peak - run("--cp 2 --cp-comm ring").peak == scores);
    CHECK(uly.step_s > uly_flash.step_s);  // the materialised scores' traffic
    CHECK(uly.attention == "as analysed");
    // cp 1 is unchanged: unfused, the whole sequence's probabilities, 2 x 4 x 4096 x 4096 x 2 bytes.
    CHECK(run("--dp 2").peak - run("--dp 2 --fuse-kinds flash").peak == layers * heads * seq * seq * bf16);

    // The same through the API (FusionOptions::flash_always, as `plan` and `search` run it): the
    // attention cores alone as flash kernels, forward and backward, one each a layer.
    const Hardware hw = builtin_cluster("dgx-a100").hardware;
    const Graph g = training_step(2);
    FusionOptions f;
    f.flash_always = cp_runs_flash(2, CpComm::ring);
    REQUIRE(f.flash_always);
    const Evaluated e = evaluate_option(g, hw, std::nullopt, false, AnalysisOptions{}, f);
    REQUIRE(e.fusion);
    int forward = 0, backward = 0;
    for (const FusionGroup& grp : e.fusion->groups) {
        forward += grp.kind == FusionKind::flash_attention ? 1 : 0;
        backward += grp.kind == FusionKind::flash_attention_backward ? 1 : 0;
    }
    CHECK(forward == layers);
    CHECK(backward == layers);
    CHECK(static_cast<int>(e.fusion->groups.size()) == forward + backward);  // nothing else fused
    CHECK_FALSE(cp_runs_flash(2, CpComm::ulysses));
    CHECK_FALSE(cp_runs_flash(1, CpComm::ring));

    // analyze_parallel itself refuses a ring or all-gather stage whose attention is not flash (an
    // API caller's unfused analysis): it would model a (seq / cp) x seq score matrix no such rank
    // holds. Ulysses takes the analysis as it is; the flash analysis above passes every form.
    const Cluster dgx = builtin_cluster("dgx-a100");
    const Analysis unfused = analyze(g, hw);
    const StageProfile plain = stage_profile(g, unfused), fused = stage_profile(g, e.analysis);
    CHECK(plain.unfused_attention == "h0.attn.softmax");
    CHECK(fused.unfused_attention.empty());
    for (const CpComm form : {CpComm::ring, CpComm::all_gather}) {
        ParallelOptions po;
        po.cp_comm = form;
        CHECK_THROWS_WITH(analyze_parallel(plain, dgx, po), Catch::Contains("attention node 'h0.attn.softmax' is not a flash kernel"));
        CHECK_NOTHROW(analyze_parallel(fused, dgx, po));
    }
    ParallelOptions a2a;
    a2a.cp_comm = CpComm::ulysses;
    CHECK_NOTHROW(analyze_parallel(plain, dgx, a2a));

    // The table says so.
    const auto text = test::run_cli("analyze '" + model + "' --mode training --cluster dgx-a100 --cp 2 --top 1");
    CHECK_THAT(text.out,
               Catch::Contains("context parallelism (ring/allgather) runs attention fused: ring attention needs the online softmax"));
    CHECK_THAT(test::run_cli("analyze '" + model + "' --mode training --cluster dgx-a100 --cp 2 --cp-comm ulysses --top 1").out,
               !Catch::Contains("runs attention fused"));
}
