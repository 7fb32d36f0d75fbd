// The multi-device model against published Megatron-LM runs (issue #16's held-out check): the
// iteration times of Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
// Transformer Models" (MLSys 2023, arXiv 2205.05198), Table 5, for the four GPT models of its
// Table 3 on Selene (DGX A100 80 GB nodes), with full recomputation and with sequence parallelism
// plus selective recomputation. The models and the cluster are tests/data/megatron/ (README there).
// Nothing in the model was fitted to these figures; docs/ACCURACY.md records the comparison.
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "support.hpp"

namespace {

struct Run {
    const char* model;  // tests/data/megatron/gpt-<model>.json
    int pp, interleave, microbatch, global_batch, dp;
    bool selective;        // sequence parallelism + selective recomputation, else full recomputation
    double published_s;    // Table 5 (the dp 8 row: section 6.3's text)
    double published_mfu;  // Table 5 (0: not published for this run)
};

// Table 3: tensor parallelism 8 throughout, sequence 2048, vocabulary 51200, micro-batch 1 except
// the 22B model's 4; "the interleaving schedule with three interleaving stages for the 175B and
// 530B models" (section 6).
const std::vector<Run> kRuns = {
    {"22b", 1, 1, 4, 4, 1, false, 1.42, 0},          {"22b", 1, 1, 4, 4, 1, true, 1.10, 0.415},
    {"175b", 8, 3, 1, 64, 1, false, 18.13, 0},       {"175b", 8, 3, 1, 64, 1, true, 13.75, 0.514},
    {"530b", 35, 3, 1, 280, 1, false, 49.05, 0},     {"530b", 35, 3, 1, 280, 1, true, 37.83, 0.560},
    {"1t", 64, 1, 1, 512, 1, false, 94.42, 0},       {"1t", 64, 1, 1, 512, 1, true, 71.49, 0.563},
    {"530b", 35, 3, 1, 2240, 8, true, 39.15, 0.542},
};

struct Predicted {
    double step_s = 0, mfu = 0, peak_bytes = 0;
};

// Each run is analysed once for both tests.
Predicted predict(const Run& r) {
    static std::map<std::string, Predicted> done;
    const std::string key = std::string(r.model) + (r.selective ? "s" : "f") + std::to_string(r.dp);
    if (const auto it = done.find(key); it != done.end()) return it->second;
    const std::string out =
        test::tmp_path(std::string("megatron-") + r.model + (r.selective ? "-sel" : "-full") + "-dp" + std::to_string(r.dp) + ".json");
    std::ostringstream args;
    args << "analyze '" << test::source_path(std::string("tests/data/megatron/gpt-") + r.model + ".json") << "' --mode training --cluster '"
         << test::source_path("tests/data/megatron/selene.json") << "' --tp 8 --pp " << r.pp << " --interleave " << r.interleave << " --dp "
         << r.dp << " --batch " << r.microbatch << " --global-batch " << r.global_batch
         << (r.selective ? " --sp --recompute selective" : " --recompute full")
         << (r.dp > 1 ? " --overlap-grad-reduce off" : "")  // section 6.3: "we do not use any overlapping of gradient all-reduces"
         << " -q -o '" << out << "'";
    const test::CliResult res = test::run_cli(args.str());
    INFO(res.out);
    REQUIRE(res.code == 0);
    std::ifstream in(out);
    const nlohmann::json p = nlohmann::json::parse(in).at("parallel");
    return done[key] = {p.at("step_time_s").get<double>(), p.at("mfu").get<double>(), p.at("peak_bytes_per_rank").get<double>()};
}

std::string label(const Run& r) {
    return std::string(r.model) + (r.selective ? " sp+selective" : " full recompute") + (r.dp > 1 ? " dp " + std::to_string(r.dp) : "");
}

}  // namespace

TEST_CASE("Megatron-LM's published configurations fit the A100's 80 GB", "[megatron]") {
    // They ran (Table 5), so a rank's modelled peak must be under the 80 GB of an A100 80GB
    // (datasheet; 80e9 bytes). Before sequence parallelism's backward re-gather was modelled, the
    // 530B and 1T runs were predicted at 83 and 92 GB.
    for (const Run& r : kRuns) {
        if (r.dp > 1) continue;  // the same ranks as the dp 1 row
        INFO(label(r));
        CHECK(predict(r).peak_bytes < 80e9);
    }
}

TEST_CASE("Megatron-LM's models do not fit with only one of sequence parallelism and selective recomputation", "[megatron]") {
    // Section 6.1: "Without the memory savings provided by sequence parallelism and selective
    // recompute together, none of the these models will fit into memory." Each configuration of
    // Table 3 with only one of the two must model above the A100's 80 GB (datasheet), with
    // Megatron-LM's persistent fp32 gradient buffer (the default; before it was modelled, the 22B
    // model fitted with selective recomputation alone, at 71 GB).
    for (const Run& r : kRuns) {
        if (!r.selective || r.dp > 1) continue;
        for (const char* only : {" --sp", " --recompute selective"}) {
            INFO(r.model << only);
            std::ostringstream args;
            args << "analyze '" << test::source_path(std::string("tests/data/megatron/gpt-") + r.model + ".json")
                 << "' --mode training --cluster '" << test::source_path("tests/data/megatron/selene.json") << "' --tp 8 --pp " << r.pp
                 << " --interleave " << r.interleave << " --batch " << r.microbatch << " --global-batch " << r.global_batch << only
                 << " -q -o '" << test::tmp_path(std::string("megatron-one-") + r.model + ".json") << "'";
            const test::CliResult res = test::run_cli(args.str());
            INFO(res.out);
            REQUIRE(res.code == 0);
            std::ifstream in(test::tmp_path(std::string("megatron-one-") + r.model + ".json"));
            CHECK(nlohmann::json::parse(in).at("parallel").at("peak_bytes_per_rank").get<double>() > 80e9);
        }
    }
}

TEST_CASE("Megatron-LM iteration times (Korthikanti et al. 2022, Table 5) within 5%", "[megatron][!mayfail]") {
    // Issue #16's goal: the held-out published iteration times within 5%. Missed today for some
    // rows (docs/ACCURACY.md, "Megatron-LM"): the test prints every row and stays [!mayfail] until
    // all meet it. Model FLOPs utilisation is printed beside the published one.
    std::ostringstream table;
    table << "run | published s | modelled s | error | published MFU | modelled MFU\n";
    bool all = true;
    for (const Run& r : kRuns) {
        const Predicted p = predict(r);
        const double err = p.step_s / r.published_s - 1;
        all = all && std::abs(err) <= 0.05;
        table << label(r) << " | " << r.published_s << " | " << p.step_s << " | " << 100 * err << "% | " << 100 * r.published_mfu << "% | "
              << 100 * p.mfu << "%\n";
    }
    INFO(table.str());
    CHECK(all);
}
