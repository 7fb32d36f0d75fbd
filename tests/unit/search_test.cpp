// `roofline search` (issue #16): the configurations it enumerates, their ranking, and that a
// configuration's figures are exactly what building every stage and running analyze_pipeline gives.
#include <catch2/catch.hpp>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <set>
#include <tuple>

#include "model/autodiff.hpp"
#include "model/model_json.hpp"
#include "ops/error.hpp"
#include "sim/cluster.hpp"
#include "sim/search.hpp"
#include "support.hpp"

using roofline::InputError;

namespace {

roofline::StageBuilder gpt2_small(const roofline::Cluster& c) {
    roofline::TrainingOptions t;
    t.master_weights = true;
    return roofline::template_stage_builder("gpt2-small", {}, t, c.hardware, {});
}

}  // namespace

TEST_CASE("search: every valid split of 16 GPUs, ranked, with the Pareto frontier", "[search]") {
    const roofline::Cluster c = roofline::builtin_cluster("dgx-a100");
    roofline::SearchSpace s;
    s.gpus = 16;
    s.global_batch = 32;
    s.micro_batches = {1, 2};
    s.recompute = {"none", "full"};
    s.zero = {0, 1};
    s.interleave = {1, 2};
    s.jobs = 2;
    const roofline::SearchResult r = roofline::search_parallel(c, s, gpt2_small(c));
    // tp in {1, 2, 4, 8} (inside a node of 8), pp a divisor of 16 / tp, so 5 + 4 + 3 + 2 = 14 splits,
    // x 2 micro-batches x 2 strategies x 2 ZeRO stages x 2 interleavings = 224 tuples.
    CHECK(r.enumerated == 224);
    CHECK(r.enumerated == r.invalid + r.pruned + r.candidates.size());
    std::set<std::tuple<int, int, int, int, std::string, int, int>> seen;
    for (const auto& k : r.candidates) {
        CHECK(k.tp * k.pp * k.dp == 16);
        CHECK(k.tp <= 8);
        CHECK(12 % k.pp == 0);  // gpt2-small's 12 layers split evenly
        CHECK(12 % k.tp == 0);  // and its 12 heads
        CHECK(!(k.zero > 0 && k.dp == 1));
        CHECK(k.micro_batches * k.micro_batch * k.dp == 32);
        CHECK(k.step_time_s > 0);
        CHECK(k.sp == (k.tp > 1));  // sequence parallelism on wherever there is tensor parallelism (the default)
        if (k.interleave > 1) {     // Megatron's conditions: stages, micro-batches a multiple of them, layers in chunks
            CHECK(k.pp > 1);
            CHECK(k.micro_batches % k.pp == 0);
            CHECK((12 / k.pp) % k.interleave == 0);
        }
        CHECK(seen.emplace(k.tp, k.pp, k.dp, k.micro_batch, k.recompute, k.zero, k.interleave).second);  // each once
    }
    // Ranked: every fitting configuration before any that does not, each group by step time.
    for (std::size_t i = 1; i < r.candidates.size(); ++i) {
        const auto &a = r.candidates[i - 1], &b = r.candidates[i];
        CHECK((a.fits > b.fits || (a.fits == b.fits && a.step_time_s <= b.step_time_s)));
    }
    // The frontier: no configuration has both less memory and less time than one on it.
    REQUIRE_FALSE(r.frontier.empty());
    for (const std::size_t f : r.frontier) {
        for (const auto& k : r.candidates) {
            const auto& p = r.candidates[f];
            CHECK_FALSE((k.peak_bytes < p.peak_bytes && k.step_time_s < p.step_time_s));
        }
    }
}

TEST_CASE("search: a configuration is what analyze_pipeline gives with every stage built", "[search]") {
    // tp 2, pp 4 (3 layers a stage), dp 2, micro-batch 1, global batch 16 (8 micro-batches a rank),
    // ZeRO 1: search analyses stages 0, 1 and 3 and lets stage 1 stand for stage 2 (the same layers
    // but for their names); building all four must give the same iteration, to rounding.
    const roofline::Cluster c = roofline::builtin_cluster("dgx-a100");
    roofline::SearchSpace s;
    s.gpus = 16;
    s.global_batch = 16;
    s.micro_batches = {1};
    s.recompute = {"none"};
    s.zero = {1};
    s.interleave = {1};
    const roofline::SearchResult r = roofline::search_parallel(c, s, gpt2_small(c));
    const roofline::SearchCandidate* found = nullptr;
    for (const auto& k : r.candidates)
        if (k.tp == 2 && k.pp == 4) found = &k;
    REQUIRE(found != nullptr);
    std::vector<roofline::Graph> graphs;
    std::vector<roofline::Analysis> analyses;
    graphs.reserve(4);
    analyses.reserve(4);
    std::vector<roofline::StageProfile> profiles;
    roofline::TrainingOptions t;
    t.master_weights = true;
    for (int st = 0; st < 4; ++st) {
        roofline::ModelOverrides ov;
        ov.batch = 1;
        ov.tp = 2;
        ov.pp = 4;
        ov.stage = st;
        ov.sp = true;  // search's default with tensor parallelism
        graphs.push_back(roofline::build_training_step(roofline::load_model_arg("gpt2-small", ov), t));
        analyses.push_back(roofline::analyze(graphs.back(), c.hardware));
        profiles.push_back(roofline::stage_profile(graphs.back(), analyses.back()));
    }
    std::vector<const roofline::StageProfile*> stages;
    for (const auto& q : profiles) stages.push_back(&q);
    roofline::ParallelOptions o;
    o.dp = 2;
    o.zero = 1;
    o.global_batch = 16;
    const roofline::ParallelAnalysis p = roofline::analyze_pipeline(stages, c, o);
    CHECK(found->micro_batches == 8);
    CHECK(found->step_time_s == Approx(p.step_time_s).epsilon(1e-12));
    CHECK(found->peak_bytes == p.peak_bytes);
    CHECK(found->bubble_fraction == Approx(p.bubble_fraction).epsilon(1e-12));
}

TEST_CASE("search: a micro-batch is not built once a smaller one fits in no variant, and nothing that fits is lost", "[search]") {
    // With a 600 MB budget many (tp, pp, recompute) families of GPT-2 small on 16 GPUs fit at no
    // ZeRO stage at micro-batch 1; search then skips their micro-batch 2. Searching micro-batch 2
    // alone analyses them all: the configurations that fit must be the same.
    const roofline::Cluster c = roofline::builtin_cluster("dgx-a100");
    roofline::SearchSpace s;
    s.gpus = 16;
    s.global_batch = 32;
    s.recompute = {"none", "full"};
    s.memory_budget_bytes = 600LL * 1000 * 1000;
    s.jobs = 2;
    s.micro_batches = {1, 2};
    const roofline::SearchResult both = roofline::search_parallel(c, s, gpt2_small(c));
    s.micro_batches = {2};
    const roofline::SearchResult two = roofline::search_parallel(c, s, gpt2_small(c));
    CHECK(both.pruned > 0);
    CHECK(two.pruned == 0);
    using Config = std::tuple<int, int, int, std::string, int, int, bool>;
    std::set<Config> fit_both, fit_two;
    for (const auto& k : both.candidates)
        if (k.fits && k.micro_batch == 2) fit_both.emplace(k.tp, k.pp, k.dp, k.recompute, k.zero, k.interleave, k.sp);
    for (const auto& k : two.candidates)
        if (k.fits) fit_two.emplace(k.tp, k.pp, k.dp, k.recompute, k.zero, k.interleave, k.sp);
    CHECK(fit_both == fit_two);
    CHECK_FALSE(fit_two.empty());
}

TEST_CASE("search: bad spaces name the flag", "[search]") {
    const roofline::Cluster c = roofline::builtin_cluster("dgx-a100");  // at most 140 nodes of 8
    roofline::SearchSpace s;
    s.gpus = 2048;
    s.global_batch = 8;
    CHECK_THROWS_WITH(roofline::search_parallel(c, s, gpt2_small(c)), Catch::Contains("--gpus 2048") && Catch::Contains("1120"));
    s.gpus = 0;
    CHECK_THROWS_WITH(roofline::search_parallel(c, s, gpt2_small(c)), Catch::Contains("--gpus 0"));
    s.gpus = 8;
    s.global_batch = 0;
    CHECK_THROWS_WITH(roofline::search_parallel(c, s, gpt2_small(c)), Catch::Contains("--global-batch"));
    s.global_batch = 8;
    s.recompute = {"sometimes"};
    CHECK_THROWS_WITH(roofline::search_parallel(c, s, gpt2_small(c)), Catch::Contains("--recompute sometimes"));
    // The CLI: exit 2 and the flag.
    const auto bad = test::run_cli("search gpt2-small --gpus 16 --cluster nowhere --global-batch 8");
    CHECK(bad.code == 2);
    const auto ok = test::run_cli("search gpt2-small --gpus 8 --cluster dgx-a100 --global-batch 8 --micro-batches 1 --recompute none -q");
    CHECK(ok.code == 0);
}

namespace {

// 8 GPUs of one configuration family per tp x pp split: one micro-batch size, no recomputation,
// ZeRO 0, no interleaving; the parallel degree under test is set by the case.
roofline::SearchSpace eight_gpus(std::int64_t global_batch, int micro_batch) {
    roofline::SearchSpace space;
    space.gpus = 8;
    space.global_batch = global_batch;
    space.micro_batches = {micro_batch};
    space.recompute = {"none"};
    space.zero = {0};
    space.interleave = {1};
    return space;
}

}  // namespace

TEST_CASE("search over context-parallel degrees", "[search][cp]") {
    using namespace roofline;
    // GPT-2 medium at a sequence of 1,024 on 8 GPUs of a DGX A100, --cp 1,2: every configuration's
    // tp x cp x pp x dp is 8; the cp = 2 ones are built with two context-parallel ranks and found
    // among the analysed candidates.
    const Cluster c = builtin_cluster("dgx-a100");
    SearchSpace space = eight_gpus(16, 2);
    space.context_parallel = {1, 2};
    ModelOverrides ov;
    ov.seq = 1024;
    const SearchResult r =
        search_parallel(c, space, template_stage_builder("gpt2-medium", ov, TrainingOptions{}, c.hardware, AnalysisOptions{}));
    int with_cp = 0;
    for (const SearchCandidate& k : r.candidates) {
        CHECK(k.tp * k.cp * k.pp * k.dp == 8);
        with_cp += k.cp == 2 ? 1 : 0;
    }
    CHECK(with_cp > 0);

    // The context-parallel forms (--cp-comm; default all three): every cp = 2 configuration is
    // analysed as ring, allgather and ulysses from the same stages (GPT-2 medium's 16 heads split
    // over tp x 2 at every tp here), and the all-gather form's peak per rank is above the ring's
    // (it keeps each layer's keys and values of the whole sequence for backward, the ring a rank's
    // half; the peak is at the loss, where no ring buffer is in flight). Asking for ring alone
    // analyses only that form.
    using Knobs = std::tuple<int, int, int, int, std::string, int, int, bool>;
    const auto knobs = [](const SearchCandidate& k) {
        return Knobs{k.tp, k.pp, k.dp, k.micro_batch, k.recompute, k.zero, k.interleave, k.sp};
    };
    std::map<Knobs, std::map<CpComm, const SearchCandidate*>> forms;
    for (const SearchCandidate& k : r.candidates)
        if (k.cp == 2) forms[knobs(k)][k.cp_comm] = &k;
    REQUIRE(!forms.empty());
    for (const auto& [key, by] : forms) {
        REQUIRE(by.size() == 3);
        CHECK(by.at(CpComm::all_gather)->peak_bytes > by.at(CpComm::ring)->peak_bytes);
    }
    space.cp_comm = {CpComm::ring};
    const SearchResult ring =
        search_parallel(c, space, template_stage_builder("gpt2-medium", ov, TrainingOptions{}, c.hardware, AnalysisOptions{}));
    std::size_t ring_cp = 0;
    for (const SearchCandidate& k : ring.candidates) {
        if (k.cp != 2) continue;
        ++ring_cp;
        CHECK(k.cp_comm == CpComm::ring);
        REQUIRE(forms.count(knobs(k)) == 1);
        CHECK(k.step_time_s == forms.at(knobs(k)).at(CpComm::ring)->step_time_s);  // the same analysis
    }
    CHECK(ring_cp == forms.size());
}

TEST_CASE("search over expert-parallel degrees", "[search][ep]") {
    using namespace roofline;
    // A GPT-2 medium with 8 experts on 8 GPUs, --ep 1,8: a configuration's ep divides its dp (the
    // expert-parallel ranks are data-parallel ranks), and with ep 8 each rank holds one expert, so
    // its peak memory is below the same configuration's at ep 1.
    const Cluster c = builtin_cluster("dgx-a100");
    SearchSpace space = eight_gpus(32, 4);
    space.sequence_parallel = {false};
    space.expert_parallel = {1, 8};
    const std::string model = test::source_path("examples/gpt-moe.json");
    const SearchResult r = search_parallel(c, space, template_stage_builder(model, {}, TrainingOptions{}, c.hardware, AnalysisOptions{}));
    const SearchCandidate* one = nullptr;
    const SearchCandidate* eight = nullptr;
    for (const SearchCandidate& k : r.candidates) {
        CHECK(k.dp % k.ep == 0);
        if (k.tp == 1 && k.pp == 1 && k.dp == 8) (k.ep == 8 ? eight : one) = &k;
    }
    REQUIRE(one != nullptr);
    REQUIRE(eight != nullptr);
    CHECK(eight->peak_bytes < one->peak_bytes);
}

TEST_CASE("search over expert-parallel degrees of a Hugging Face mixture of experts", "[search][ep][hf]") {
    using namespace roofline;
    // tests/data/hf/tiny-mixtral: a Mixtral-shaped config of 4 layers, 8 experts, top-2. On 8 GPUs
    // with --ep 1,2,4,8 (sequence parallelism off: with tp > 1 it is not modelled beside --ep) every
    // configuration's ep divides its dp and the 8 experts, and configurations with ep > 1 are
    // analysed and ranked. The best one with ep > 1 is exactly what `analyze --cluster` gives for
    // its layout (same iteration time and peak memory), and at tp 1, pp 1, dp 8 holding one expert a
    // rank (ep 8) takes less memory than holding all eight (ep 1).
    const Cluster c = builtin_cluster("dgx-a100");
    SearchSpace space = eight_gpus(32, 4);
    space.sequence_parallel = {false};
    space.expert_parallel = {1, 2, 4, 8};
    const std::string model = test::source_path("tests/data/hf/tiny-mixtral/config.json");
    ModelOverrides ov;
    ov.seq = 512;
    const SearchResult r = search_parallel(c, space, template_stage_builder(model, ov, TrainingOptions{}, c.hardware, AnalysisOptions{}));
    const SearchCandidate* best_ep = nullptr;
    const SearchCandidate* one = nullptr;
    const SearchCandidate* eight = nullptr;
    std::set<int> eps;
    for (const SearchCandidate& k : r.candidates) {
        CHECK(k.tp * k.cp * k.pp * k.dp == 8);
        CHECK(k.dp % k.ep == 0);
        CHECK(8 % k.ep == 0);
        eps.insert(k.ep);
        if (k.ep > 1 && k.fits && best_ep == nullptr) best_ep = &k;  // candidates are ranked: the first is the best
        if (k.tp == 1 && k.pp == 1 && k.dp == 8 && k.ep == 1) one = &k;
        if (k.tp == 1 && k.pp == 1 && k.dp == 8 && k.ep == 8) eight = &k;
    }
    CHECK(eps == std::set<int>{1, 2, 4, 8});
    REQUIRE(best_ep != nullptr);
    REQUIRE(one != nullptr);
    REQUIRE(eight != nullptr);
    CHECK(eight->peak_bytes < one->peak_bytes);
    const std::string out = test::tmp_path("search-ep-check.json");
    const auto a = test::run_cli(fmt::format(
        "analyze '{}' --mode training --seq 512 --batch {} --cluster dgx-a100 --tp {} --pp {} --dp {} --ep {} --global-batch 32 "
        "--optimizer adamw -q -o '{}'",
        model, best_ep->micro_batch, best_ep->tp, best_ep->pp, best_ep->dp, best_ep->ep, out));
    REQUIRE(a.code == 0);
    const auto p = nlohmann::json::parse(test::slurp(out))["parallel"];
    CHECK(p["ep"].get<int>() == best_ep->ep);
    CHECK(p["step_time_s"].get<double>() == Approx(best_ep->step_time_s).epsilon(1e-9));
    CHECK(p["peak_bytes_per_rank"].get<std::int64_t>() == best_ep->peak_bytes);

    // An expert-parallel degree that does not divide the experts is an invalid configuration that
    // names --ep and the key; with no other candidate the command exits 2 with it.
    const auto bad = test::run_cli("search '" + model +
                                   "' --gpus 12 --cluster dgx-a100 --global-batch 12 --seq 512 --tp 1 --pp 1 --micro-batches 1 --ep 3 -q");
    CHECK(bad.code == 2);
    CHECK_THAT(bad.out, Catch::Contains("num_local_experts: --ep 3 must divide the 8 experts"));
}

TEST_CASE("search with fixed tensor- and pipeline-parallel degrees ranks the rest for that layout", "[search]") {
    const roofline::Cluster c = roofline::builtin_cluster("dgx-a100");
    roofline::SearchSpace s = eight_gpus(16, 1);
    s.micro_batches = {1, 2};
    s.recompute = {"none", "full"};
    s.jobs = 2;
    const roofline::SearchResult all = roofline::search_parallel(c, s, gpt2_small(c));
    s.tensor_parallel = {2};
    s.pipeline_parallel = {2, 4};
    const roofline::SearchResult fixed = roofline::search_parallel(c, s, gpt2_small(c));
    // tp 2 leaves 4 GPUs: pp 2 (dp 2) and pp 4 (dp 1), each x 2 micro-batches x 2 strategies = 8.
    CHECK(fixed.enumerated == 8);
    REQUIRE_FALSE(fixed.candidates.empty());
    for (const auto& k : fixed.candidates) {
        CHECK(k.tp == 2);
        CHECK((k.pp == 2 || k.pp == 4));
        // The same configuration in the unrestricted search has the same figures.
        bool found = false;
        for (const auto& u : all.candidates)
            if (u.tp == k.tp && u.pp == k.pp && u.dp == k.dp && u.micro_batch == k.micro_batch && u.recompute == k.recompute &&
                u.zero == k.zero && u.interleave == k.interleave) {
                found = true;
                CHECK(u.step_time_s == k.step_time_s);
                CHECK(u.peak_bytes == k.peak_bytes);
            }
        CHECK(found);
    }
    // Degrees that do not divide the GPUs, or tensor parallelism beyond a node, name the flag.
    s.tensor_parallel = {3};
    CHECK_THROWS_WITH(roofline::search_parallel(c, s, gpt2_small(c)), Catch::Contains("--tp 3"));
    s.tensor_parallel = {};
    s.pipeline_parallel = {5};
    CHECK_THROWS_WITH(roofline::search_parallel(c, s, gpt2_small(c)), Catch::Contains("--pp 5"));
    s.gpus = 16;
    s.pipeline_parallel = {};
    s.tensor_parallel = {16};
    CHECK_THROWS_WITH(roofline::search_parallel(c, s, gpt2_small(c)), Catch::Contains("--tp 16") && Catch::Contains("inside a node"));
    const auto cli = test::run_cli("search gpt2-small --gpus 8 --cluster dgx-a100 --global-batch 8 --tp 3 -q");
    CHECK(cli.code == 2);
    CHECK(cli.out.find("--tp 3") != std::string::npos);
}

TEST_CASE("search builds every configuration with the experts' routing of --expert-load and --capacity-factor", "[search][ep][moe]") {
    // tests/data/hf/tiny-mixtral (4 layers, 8 experts, top-2) on 8 GPUs at tp 1, pp 1, dp 8, with
    // --ep 1 and 8. The routing is not searched but passed to every configuration the search
    // builds, as analyze takes it: each configuration's iteration time and peak memory are exactly
    // what `analyze --cluster` gives for its layout with the same --expert-load and
    // --capacity-factor. Under zipf:1.2 expert 0 would take 1 / H(8, 1.2) = 43% of the token copies,
    // 3.4 times its uniform share; the capacity factor 1.25 caps it at 1.25 times: at ep 8 the
    // busiest rank's expert then runs 1.25 times the uniform rows, so that configuration is slower
    // than under uniform routing.
    const std::string model = test::source_path("tests/data/hf/tiny-mixtral/config.json");
    const std::string flags =
        " --gpus 8 --cluster dgx-a100 --global-batch 32 --seq 512 --tp 1 --pp 1 --ep 1,8 --micro-batches 4 --recompute none --zero 0 "
        "--interleave 1 --sp off -q -o '";
    const std::string routing = " --expert-load zipf:1.2 --capacity-factor 1.25";
    const std::string routed_out = test::tmp_path("search-routed.json"), uniform_out = test::tmp_path("search-uniform.json");
    REQUIRE(test::run_cli("search '" + model + "'" + routing + flags + routed_out + "'").code == 0);
    REQUIRE(test::run_cli("search '" + model + "'" + flags + uniform_out + "'").code == 0);
    const nlohmann::json routed = nlohmann::json::parse(test::slurp(routed_out)), uniform = nlohmann::json::parse(test::slurp(uniform_out));
    CHECK(routed["settings"]["expert_load"] == "zipf:1.2");
    CHECK(routed["settings"]["capacity_factor"] == 1.25);
    REQUIRE(routed["candidates"].size() == 2);
    const auto step_at = [](const nlohmann::json& doc, int ep) {
        for (const auto& k : doc["candidates"])
            if (k["ep"] == ep) return k["step_time_s"].get<double>();
        return 0.0;
    };
    for (const auto& k : routed["candidates"]) {
        const int ep = k["ep"].get<int>();
        INFO("ep " << ep);
        const std::string out = test::tmp_path(fmt::format("search-routed-ep{}.json", ep));
        const auto a = test::run_cli(fmt::format(
            "analyze '{}'{} --mode training --seq 512 --batch 4 --cluster dgx-a100 --dp 8 --ep {} --global-batch 32 --optimizer adamw -q "
            "-o '{}'",
            model, routing, ep, out));
        REQUIRE(a.code == 0);
        const auto p = nlohmann::json::parse(test::slurp(out))["parallel"];
        CHECK(p["step_time_s"].get<double>() == Approx(k["step_time_s"].get<double>()).epsilon(1e-9));
        CHECK(p["peak_bytes_per_rank"].get<std::int64_t>() == k["peak_bytes_per_rank"].get<std::int64_t>());
    }
    CHECK(step_at(routed, 8) > step_at(uniform, 8));

    // A model without experts refuses the routing, naming the flag.
    const auto bad = test::run_cli("search llama-2-7b --gpus 8 --cluster dgx-a100 --global-batch 8 --expert-load zipf:1 -q");
    CHECK(bad.code == 2);
    CHECK_THAT(bad.out, Catch::Contains("--expert-load: llama has no experts to route to"));
}
