// A stage of identical layers composed from probes of one and two layers (sim/parallel.hpp
// compose_layers, issue #16's search speed): the multi-device figures must be those of the whole
// stage built and analysed, for every parallel feature the stage profile carries.
#include <catch2/catch.hpp>

#include <optional>
#include <string>

#include "model/autodiff.hpp"
#include "model/model_json.hpp"
#include "ops/error.hpp"
#include "sim/cluster.hpp"
#include "sim/parallel.hpp"
#include "sim/plan.hpp"
#include "sim/recompute.hpp"
#include "support.hpp"

using namespace roofline;

namespace {

// The stage's profile: built whole (probe empty) or with `probe` of its layers.
StageProfile profile(const std::string& model, ModelOverrides ov, const Hardware& hw, std::optional<int> probe,
                     const std::string& recompute = "none") {
    ov.stage_layers = probe;
    TrainingOptions t;
    t.master_weights = true;
    const Graph g = build_training_step(load_model_arg(model, ov), t);
    std::optional<RecomputePlan> plan;
    if (recompute != "none") plan = plan_strategy(g, *parse_strategy(recompute));
    FusionOptions flash;  // context parallelism's ring runs attention as flash attention (cp_runs_flash)
    flash.flash_always = cp_runs_flash(ov.cp, CpComm::ring);
    const Evaluated e = evaluate_option(g, hw, plan, false, AnalysisOptions{}, flash);
    return stage_profile(*e.graph, e.analysis);
}

struct Case {
    const char* what;
    std::string model;
    int tp = 1, pp = 1, stage = 0, cp = 1, ep = 1, dp = 1;
    bool sp = false;
    std::string recompute = "none";
    std::int64_t batch = 2, seq = 256, global_batch = 0;
};

}  // namespace

TEST_CASE("a stage composed from probes of one and two layers is the whole stage", "[parallel][compose]") {
    // Expected: the iteration time, its compute and exposed communication, the collectives and
    // gradient buckets, and the peak memory per rank of the composed stage equal the whole stage's,
    // to 1e-9 relative (floating-point rounding of the per-layer differences); for every ZeRO stage.
    const Cluster c = builtin_cluster("dgx-a100");
    const Case cases[] = {
        {"data parallel, 12 layers", "gpt2-small", 1, 1, 0, 1, 1, 4},
        {"tensor and sequence parallel, gradient accumulation", "gpt2-small", 2, 1, 0, 1, 1, 4, true, "none", 2, 256, 32},
        {"first pipeline stage of 2, tp 2", "gpt2-small", 2, 2, 0, 1, 1, 2, false, "none", 1, 256, 16},
        {"last pipeline stage of 3, selective recomputation", "gpt2-small", 1, 3, 2, 1, 1, 2, false, "selective"},
        {"middle stage of 4 (6 layers), full recomputation", "gpt2-medium", 2, 4, 1, 1, 1, 2, true, "full"},
        {"context parallel", "gpt2-small", 1, 2, 1, 2, 1, 2, false, "none", 1, 512},
        {"experts, expert parallel", test::source_path("examples/gpt-moe.json"), 1, 2, 0, 1, 4, 4, false, "none", 4, 256},
    };
    for (const Case& k : cases) {
        SECTION(k.what) {
            ModelOverrides ov;
            ov.batch = k.batch;
            ov.seq = k.seq;
            ov.tp = k.tp, ov.pp = k.pp, ov.stage = k.stage, ov.cp = k.cp, ov.ep = k.ep, ov.sp = k.sp;
            const StageProfile whole = profile(k.model, ov, c.hardware, std::nullopt, k.recompute);
            const int layers = (k.model == "gpt2-small" ? 12 : 24) / k.pp;  // gpt-moe.json is a gpt2-medium
            CHECK(whole.layers == (k.pp > 1 ? layers : 0));                 // a whole model records no stage
            const StageProfile composed =
                compose_layers(profile(k.model, ov, c.hardware, 1, k.recompute), profile(k.model, ov, c.hardware, 2, k.recompute), layers);
            CHECK(composed.layers == layers);
            CHECK(composed.gradients.size() == whole.gradients.size());
            CHECK(composed.blocking.size() == whole.blocking.size());
            CHECK(composed.rings.size() == whole.rings.size());  // context parallelism's ring exchanges, one a layer and direction
            CHECK(composed.parameter_bytes == whole.parameter_bytes);
            CHECK(composed.flops == Approx(whole.flops).epsilon(1e-9));
            for (const int zero : {0, 1, 2, 3})
                for (const CpComm form : {CpComm::ring, CpComm::all_gather, CpComm::ulysses}) {
                    ParallelOptions o;
                    o.dp = k.dp;
                    o.zero = zero;
                    o.global_batch = k.global_batch;
                    o.cp_comm = form;  // context parallelism's three forms: their collectives and memory compose too
                    const ParallelAnalysis w = analyze_parallel(whole, c, o);
                    const ParallelAnalysis p = analyze_parallel(composed, c, o);
                    INFO("ZeRO " << zero << ", --cp-comm " << cp_comm_name(form));
                    CHECK(p.step_time_s == Approx(w.step_time_s).epsilon(1e-9));
                    CHECK(p.compute_s == Approx(w.compute_s).epsilon(1e-9));
                    CHECK(p.exposed_comm_s == Approx(w.exposed_comm_s).epsilon(1e-9).margin(1e-12));
                    CHECK(p.comms.size() == w.comms.size());
                    CHECK(p.tp_collectives == w.tp_collectives);
                    CHECK(p.cp_collectives == w.cp_collectives);
                    CHECK(p.ep_collectives == w.ep_collectives);
                    CHECK(p.tp_comm_s == Approx(w.tp_comm_s).epsilon(1e-9));
                    CHECK(p.cp_comm_s == Approx(w.cp_comm_s).epsilon(1e-9));
                    CHECK(p.cp_exposed_s == Approx(w.cp_exposed_s).epsilon(1e-9).margin(1e-12));
                    CHECK(p.cp_bytes == Approx(w.cp_bytes).epsilon(1e-9));
                    CHECK(p.peak_bytes == Approx(static_cast<double>(w.peak_bytes)).epsilon(1e-9));
                    for (std::size_t cat = 0; cat < kMemoryCategories; ++cat)
                        CHECK(p.peak_bytes_by_category[cat] == Approx(static_cast<double>(w.peak_bytes_by_category[cat])).epsilon(1e-9));
                }
        }
    }
}

TEST_CASE("compose_layers refuses probes that do not differ by one layer or name no layers", "[parallel][compose]") {
    const Cluster c = builtin_cluster("dgx-a100");
    ModelOverrides ov;
    ov.batch = 1;
    ov.seq = 128;
    const StageProfile one = profile("gpt2-small", ov, c.hardware, 1);
    const StageProfile three = profile("gpt2-small", ov, c.hardware, 3);
    CHECK_THROWS_WITH(compose_layers(one, three, 12), Catch::Contains("probes of 1 and 3 layers"));
    StageProfile unnamed = profile("gpt2-small", ov, c.hardware, 2);
    for (auto& op : unnamed.ops) op.layer = -1;
    CHECK_THROWS_WITH(compose_layers(one, unnamed, 12), Catch::Contains("do not name their layers"));
}
