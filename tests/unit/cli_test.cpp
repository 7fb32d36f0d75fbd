// The roofline executable: every bad-input class gives one clear message and exit code 2 with no
// file written; reports are deterministic; every subcommand has --help.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support.hpp"

namespace fs = std::filesystem;
using test::run_cli;
using test::source_path;
using test::tmp_path;

namespace {

using test::slurp;

struct BadCase {
    const char* what;
    std::string args;
    const char* message;
};

}  // namespace

TEST_CASE("bad input: one clear message, exit code 2, no report written", "[cli][errors]") {
    const std::string bad = source_path("tests/data/bad/");
    const std::string hw = source_path("tests/data/hw/");
    const BadCase cases[] = {
        {"malformed JSON", "analyze '" + bad + "malformed.json'", "malformed.json: malformed JSON: parse error at line 5, column 1"},
        {"unknown op", "analyze '" + bad + "unknown-op.json'", "unknown-op.json: /nodes/0/op: unknown op 'swishy' in node 'act'"},
        {"shape mismatch", "analyze '" + bad + "shape-mismatch.json'",
         "shape-mismatch.json: /nodes/0: node 'fc1': linear: x has 784 input features but weight f32[256,700] expects 700"},
        {"int64 overflow", "analyze '" + bad + "overflow.json'", "overflow.json: /inputs/0/shape: int64 overflow computing element count"},
        {"cycle", "analyze '" + bad + "cycle.json'", "cycle.json: /nodes: the graph has a cycle through nodes 'a', 'b', 'c'"},
        {"negative dimension", "analyze '" + bad + "negative-dim.json'", "negative-dim.json: /inputs/0/shape/1: negative dimension -8"},
        {"unknown tensor", "analyze '" + bad + "unknown-tensor.json'", "/nodes/0/inputs/1: node 'r' uses tensor 'y', which no input"},
        {"unknown hardware key", "analyze mlp --hw '" + hw + "bad-unknown-key.json'",
         "bad-unknown-key.json: /memory/0/bandwith_bytes_per_s: unknown key 'bandwith_bytes_per_s'"},
        {"missing hardware key", "analyze mlp --hw '" + hw + "bad-missing-key.json'",
         "bad-missing-key.json: /memory/1: missing key 'bytes_per_s'"},
        {"non-positive rate", "analyze mlp --hw '" + hw + "bad-negative-rate.json'",
         "bad-negative-rate.json: /vector_flop_per_s/f32/value: must be positive"},
        {"unsourced value", "analyze mlp --hw '" + hw + "bad-unknown-source.json'",
         "/clock_hz/source: source 'nowhere' is not a key of /sources"},
        {"unknown hardware name", "analyze mlp --hw h900", "unknown hardware 'h900'"},
        {"unknown model", "analyze gpt5", "MODEL 'gpt5' is neither a model file nor a built-in template"},
        {"missing hardware file", "analyze mlp --hw /nonexistent/chip.json", "/nonexistent/chip.json: cannot open file"},
        {"missing model file", "analyze /nonexistent/model.json", "/nonexistent/model.json: cannot open file"},
        {"bad dtype", "analyze mlp --dtype float", "--dtype: expected a floating-point dtype"},
        {"bad option value", "analyze mlp --batch -3", "--batch"},
        {"seq on a model without seq", "analyze mlp --seq 128", "--seq given, but the model has no 'seq' entry in /dims"},
        {"unknown subcommand", "frobnicate", "frobnicate"},
    };
    for (const BadCase& c : cases) {
        INFO(c.what);
        const std::string out = tmp_path("bad-input-report.json");
        fs::remove(out);
        const auto r = run_cli(c.args + " -o '" + out + "'");
        INFO(r.out);
        CHECK(r.code == 2);
        CHECK_THAT(r.out, Catch::Contains(c.message));
        CHECK_FALSE(fs::exists(out));
        // one message: a single "roofline:" line, no stack of errors
        CHECK(std::count(r.out.begin(), r.out.end(), '\n') <= 2);
    }
}

TEST_CASE("analyze writes a deterministic report: same input, same bytes", "[cli][report]") {
    const std::string a = tmp_path("det-a.json"), b = tmp_path("det-b.json");
    REQUIRE(run_cli("analyze gpt2-small --batch 2 --seq 128 -q -o '" + a + "'").code == 0);
    REQUIRE(run_cli("analyze gpt2-small --batch 2 --seq 128 -q -o '" + b + "'").code == 0);
    const std::string ta = slurp(a), tb = slurp(b);
    CHECK(!ta.empty());
    CHECK(ta == tb);
    const auto j = nlohmann::json::parse(ta);
    CHECK(j["schema"] == "roofline-report/1");
    CHECK(j["hardware"]["name"] == "h100-sxm");
    CHECK(j["model"]["dims"]["batch"] == 2);
    CHECK(j["ops"].size() == j["model"]["nodes"]);
    // the per-op times add up to the total
    double sum = 0;
    for (const auto& op : j["ops"]) sum += op["time_s"].get<double>();
    CHECK(sum == Approx(j["totals"]["time_s"].get<double>()).epsilon(1e-9));
    // no temporary files left beside the report
    for (const auto& e : fs::directory_iterator(ROOFLINE_TEST_TMP)) {
        CHECK(e.path().filename().string().rfind(".det-", 0) != 0);
    }
}

TEST_CASE("an exported template analyses to the same report as the template", "[cli][report]") {
    const std::string model = tmp_path("mlp-export.json");
    REQUIRE(run_cli("model export mlp -o '" + model + "'").code == 0);
    const std::string a = tmp_path("mlp-a.json"), b = tmp_path("mlp-b.json");
    REQUIRE(run_cli("analyze mlp -q -o '" + a + "'").code == 0);
    REQUIRE(run_cli("analyze '" + model + "' -q -o '" + b + "'").code == 0);
    auto ja = nlohmann::json::parse(slurp(a)), jb = nlohmann::json::parse(slurp(b));
    ja["model"].erase("origin");
    jb["model"].erase("origin");
    CHECK(ja == jb);
}

TEST_CASE("every subcommand answers --help, --version prints the version", "[cli]") {
    for (const char* cmd :
         {"", "analyze", "measure", "compare", "calibrate", "hw", "hw list", "hw show", "model", "model export", "model list"}) {
        INFO(cmd);
        const auto r = run_cli(std::string(cmd) + " --help");
        CHECK(r.code == 0);
        CHECK_THAT(r.out, Catch::Contains("Usage"));
    }
    const auto v = run_cli("--version");
    CHECK(v.code == 0);
    CHECK_THAT(v.out, Catch::StartsWith("roofline 0."));
}

TEST_CASE("hw list and hw show cover the catalog", "[cli][hardware]") {
    const auto list = run_cli("hw list");
    REQUIRE(list.code == 0);
    for (const char* name :
         {"h100-sxm", "h100-pcie", "h200", "a100-sxm-40gb", "a100-sxm-80gb", "l4", "t4", "tpu-v4", "tpu-v5e", "tpu-v5p"}) {
        INFO(name);
        CHECK_THAT(list.out, Catch::Contains(name));
        const auto show = run_cli(std::string("hw show ") + name);
        CHECK(show.code == 0);
        CHECK_THAT(show.out, Catch::Contains("ridge points"));
        CHECK_THAT(show.out, Catch::Contains("sources:"));
    }
    const auto custom = run_cli("hw show '" + source_path("tests/data/hw/round-gpu.json") + "' --json");
    REQUIRE(custom.code == 0);
    const auto j = nlohmann::json::parse(custom.out);
    CHECK(j["name"] == "round-gpu");
}

TEST_CASE("analyze prints the table with totals", "[cli]") {
    const auto r = run_cli("analyze mlp --hw '" + source_path("tests/data/hw/round-gpu.json") + "'");
    REQUIRE(r.code == 0);
    for (const char* col : {"op", "kind", "output", "FLOPs", "bytes", "FLOP/B", "bound", "time", "%", "total"}) {
        CHECK_THAT(r.out, Catch::Contains(col));
    }
    CHECK_THAT(r.out, Catch::Contains("fc1"));
    CHECK_THAT(r.out, Catch::Contains("memory (hbm)"));
}

TEST_CASE("analyze --mode training reports the phase split and peak memory", "[cli][training]") {
    const std::string out = tmp_path("train.json");
    const auto r = run_cli("analyze gpt2-small --batch 2 --seq 128 --mode training --optimizer adam -o '" + out + "'");
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Catch::Contains("by phase:"));
    CHECK_THAT(r.out, Catch::Contains("peak memory:"));
    const auto j = nlohmann::json::parse(slurp(out));
    CHECK(j["settings"]["mode"] == "training");
    CHECK(j["settings"]["optimizer"] == "adam");
    const auto& ph = j["totals"]["by_phase"];
    // backward GEMMs are twice the forward ones (every GEMM needs both gradients here)
    CHECK(ph["backward"]["matrix_flops"].get<double>() == Approx(2 * ph["forward"]["matrix_flops"].get<double>()));
    CHECK(ph["optimizer"]["ops"].get<int>() > 0);
    CHECK(j["memory"]["peak_bytes"].get<double>() > 0);
    CHECK(j["memory"]["timeline"]["bytes_after_node"].size() == j["ops"].size());
    std::int64_t sum = 0;
    for (const auto& [k, v] : j["memory"]["at_peak"].items()) sum += v.get<std::int64_t>();
    CHECK(sum == j["memory"]["peak_bytes"].get<std::int64_t>());
    CHECK(run_cli("analyze mlp --mode train").code == 2);
}

TEST_CASE("analyze writes a Chrome trace and overlaps independent work on several streams", "[cli][schedule]") {
    const std::string trace = tmp_path("trace.json"), r1 = tmp_path("s1.json"), r4 = tmp_path("s4.json");
    REQUIRE(run_cli("analyze mlp --mode training -q --trace '" + trace + "' -o '" + r1 + "'").code == 0);
    const auto t = nlohmann::json::parse(slurp(trace));
    CHECK(t["traceEvents"].size() > 10);
    REQUIRE(run_cli("analyze mlp --mode training -q --streams 4 -o '" + r4 + "'").code == 0);
    const auto a = nlohmann::json::parse(slurp(r1))["totals"], b = nlohmann::json::parse(slurp(r4))["totals"];
    // One stream: at least the sum of kernel times; the mlp's kernels are tiny, so the host's
    // launches (one per launch overhead) bound the step.
    CHECK(a["step_time_s"].get<double>() >= a["modelled_time_s"].get<double>() * (1 - 1e-12));
    CHECK(b["step_time_s"].get<double>() <= a["step_time_s"].get<double>());
    CHECK(b["step_time_s"].get<double>() >= b["critical_path_s"].get<double>() * (1 - 1e-12));
    fs::remove(trace);
    CHECK(run_cli("analyze mlp --streams 0 --trace '" + trace + "'").code == 2);
    CHECK_FALSE(fs::exists(trace));
}

// measure and calibrate need a GPU. Where there is none (CI: no driver) they must exit 3 naming
// the reason and write nothing; where there is one, measure must succeed (exit 0) and write a
// measurement. Either way the command is checked; the [gpu] suite covers the GPU side in depth.
TEST_CASE("measure and calibrate without a GPU exit 3 naming the reason, and write nothing", "[cli][measure]") {
    const std::string out = tmp_path("no-gpu-measure.json");
    std::remove(out.c_str());
    const auto m = run_cli("measure '" + source_path("examples/two-layer-mlp.json") + "' --repetitions 2 --counters off -o '" + out + "'");
    if (m.code == 3) {
        CHECK_THAT(m.out, Catch::Contains("no GPU"));
        CHECK_FALSE(std::ifstream(out).good());
        const std::string spec = tmp_path("no-gpu-calibrate.json");
        std::remove(spec.c_str());
        const auto c = run_cli("calibrate --quick -o '" + spec + "'");
        CHECK(c.code == 3);
        CHECK_THAT(c.out, Catch::Contains("no GPU"));
        CHECK_FALSE(std::ifstream(spec).good());
    } else {
        INFO(m.out);
        REQUIRE(m.code == 0);
        CHECK(nlohmann::json::parse(slurp(out))["schema"] == "roofline-measurement/1");
    }
    // Bad input is reported as bad input (exit 2) before any GPU is looked for.
    const auto bad = run_cli("measure '" + source_path("tests/data/bad/unknown-op.json") + "' -o '" + out + "'");
    CHECK(bad.code == 2);
    // So are options that contradict each other or the graph: reused memory cannot be checked, and
    // an inference graph has nothing to recompute.
    const auto reuse_check =
        run_cli("measure '" + source_path("examples/two-layer-mlp.json") + "' --mode training --memory reuse -o '" + out + "'");
    CHECK(reuse_check.code == 2);
    CHECK(reuse_check.out.find("--check off") != std::string::npos);
    const auto recompute_inference =
        run_cli("measure '" + source_path("examples/two-layer-mlp.json") + "' --recompute full -o '" + out + "'");
    CHECK(recompute_inference.code == 2);
    CHECK(recompute_inference.out.find("training step") != std::string::npos);
}

TEST_CASE("analyze shows the 25 slowest ops by default, every op with --top all", "[cli]") {
    // gpt2-small inference has 319 ops: the default table lists 25 rows, --top all every one in
    // execution order (no "showing" line), and --top 0 or a word is a usage error (exit 2).
    const auto def = test::run_cli("analyze gpt2-small --hw h100-sxm");
    REQUIRE(def.code == 0);
    CHECK_THAT(def.out, Catch::Contains("showing the 25 slowest of 319 ops"));
    const auto all = test::run_cli("analyze gpt2-small --hw h100-sxm --top all");
    REQUIRE(all.code == 0);
    CHECK_THAT(all.out, !Catch::Contains("slowest"));
    CHECK(std::count(all.out.begin(), all.out.end(), '\n') > std::count(def.out.begin(), def.out.end(), '\n') + 250);
    for (const char* bad : {"0", "many", "-3"}) {
        const auto r = test::run_cli(std::string("analyze mlp --top ") + bad);
        CHECK(r.code == 2);
        CHECK_THAT(r.out, Catch::Contains("expected a positive number of ops or 'all'"));
    }
}

TEST_CASE("--help lists every model source and the exit codes, an unknown command names them all", "[cli]") {
    const auto h = test::run_cli("--help");
    CHECK(h.code == 0);
    for (const char* s : {"built-in template", "roofline-model/1 JSON", "Hugging Face config.json", "ONNX file", "Exit codes"})
        CHECK_THAT(h.out, Catch::Contains(s));
    const auto u = test::run_cli("frobnicate");
    CHECK(u.code == 2);
    CHECK_THAT(u.out,
               Catch::Contains("commands: analyze, plan, search, generate, serve, hw, model, measure, compare, calibrate, validate"));
}
