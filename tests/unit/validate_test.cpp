// `roofline validate` (issue #15): loading the public measurement layout and its error messages,
// the error statistics, leave-one-GPU-out refits on a synthetic set whose fitted term is known,
// determinism, the documented schema, and the accuracy thresholds on the committed public data.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fmt/format.h>
#include <set>
#include <tuple>
#include <utility>

#include "html_support.hpp"
#include "ops/error.hpp"
#include "reports/validate.hpp"
#include "support.hpp"

using htmltest::slurp;
using htmltest::spit;
using nlohmann::ordered_json;
using roofline::InputError;
using roofline::ValidateOptions;

namespace {

// A directory of its own under the test tmp dir, emptied.
std::string fresh_dir(const std::string& name) {
    const std::string d = test::tmp_path(name);
    std::filesystem::remove_all(d);
    std::filesystem::create_directories(d);
    return d;
}

// Fake device names, predicted on built-in specs.
ValidateOptions fake_options(const std::vector<std::pair<std::string, std::string>>& devices) {
    ValidateOptions opt;
    opt.fitting_gpus.clear();
    for (const auto& [device, spec] : devices) {
        opt.hw_map[device] = spec;
        opt.fitting_gpus.push_back(device);
    }
    return opt;
}

std::string load_error(const std::string& file, const ValidateOptions& opt = fake_options({{"Fake GPU", "h100-sxm"}})) {
    try {
        (void)roofline::load_measurements({file}, opt);
    } catch (const InputError& e) {
        return e.what();
    }
    return "";
}

// The words of docs/report-schema.md inside backticks (as the other schema tests read them).
std::set<std::string> documented_names(const std::string& md) {
    std::set<std::string> names;
    for (std::size_t a = md.find('`'); a != std::string::npos; a = md.find('`', a + 1)) {
        const std::size_t b = md.find('`', a + 1);
        if (b == std::string::npos) break;
        std::string word;
        for (char c : md.substr(a + 1, b - a - 1) + " ") {
            if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
                word += c;
            } else {
                if (!word.empty()) names.insert(word);
                word.clear();
            }
        }
        a = b;
    }
    return names;
}

}  // namespace

TEST_CASE("validate: a bad file is an InputError naming the file and the row", "[validate]") {
    const std::string d = fresh_dir("validate-bad");
    const std::string header = "OPName,Latency_ms,Device,B,H\n";
    spit(d + "/missing.csv", "OPName,Device,B,H\nrelu,Fake GPU,4,8\n");
    CHECK_THAT(load_error(d + "/missing.csv"),
               Catch::Contains(d + "/missing.csv: row 0 (line 1, the header): missing column 'Latency_ms'"));
    spit(d + "/text.csv", header + "relu,0.03,Fake GPU,4,8\nrelu,abc,Fake GPU,4,8\n");
    CHECK_THAT(load_error(d + "/text.csv"), Catch::Contains(d + "/text.csv: row 2 (line 3): column 'Latency_ms': 'abc' is not a number"));
    spit(d + "/zero.csv", header + "relu,0,Fake GPU,4,8\n");
    CHECK_THAT(load_error(d + "/zero.csv"), Catch::Contains(d + "/zero.csv: row 1 (line 2): column 'Latency_ms': 0 is not positive"));
    spit(d + "/negative.csv", header + "relu,-0.5,Fake GPU,4,8\n");
    CHECK_THAT(load_error(d + "/negative.csv"), Catch::Contains("row 1 (line 2): column 'Latency_ms': -0.5 is not positive"));
    spit(d + "/shape.csv", header + "relu,0.03,Fake GPU,4,eight\n");
    CHECK_THAT(load_error(d + "/shape.csv"), Catch::Contains("row 1 (line 2): column 'H': 'eight' is not an integer"));
    spit(d + "/device.csv", header + "relu,0.03,Fake GPU,4,8\nrelu,0.03,Mystery GPU 9000,4,8\n");
    CHECK_THAT(load_error(d + "/device.csv"), Catch::Contains(d + "/device.csv: row 2 (line 3): unknown device 'Mystery GPU 9000'"));
    spit(d + "/op.csv", header + "hardswish,0.03,Fake GPU,4,8\n");
    CHECK_THAT(load_error(d + "/op.csv"), Catch::Contains("row 1 (line 2): unknown op 'hardswish'"));
    spit(d + "/fields.csv", header + "relu,0.03,Fake GPU,4\n");
    CHECK_THAT(load_error(d + "/fields.csv"), Catch::Contains("row 1 (line 2): 4 fields, the header has 5"));
    spit(d + "/conv.csv", "OPName,Latency_ms,Device,B,Input_Channel,Output_Channel,Kernel_Szie,Input_Size\nconv,1,Fake GPU,1,2,3,3,8\n");
    CHECK_THAT(load_error(d + "/conv.csv"), Catch::Contains("row 1 (line 2): op 'conv' needs column 'Stride', which the header lacks"));
    spit(d + "/e2e.csv", "device,model,mode,seq,batch,e2e_ms\nFake GPU,tiny,eval,8,1,3.5\n");
    CHECK_THAT(load_error(d + "/e2e.csv"), Catch::Contains("row 1 (line 2): column 'mode': 'eval' (expected inf or train)"));
    // A shape the op rules reject is found when the case is built: still the file and the row.
    spit(d + "/kernel.csv",
         "OPName,Latency_ms,Device,B,Input_Channel,Output_Channel,Kernel_Szie,Input_Size,Stride,Padding\n"
         "conv,1,Fake GPU,1,2,3,3,8,1,0\nconv,1,Fake GPU,1,2,3,9,4,1,0\n");
    const ValidateOptions opt = fake_options({{"Fake GPU", "h100-sxm"}});
    try {
        (void)roofline::run_validation(roofline::load_measurements({d + "/kernel.csv"}, opt), opt);
        FAIL("no error");
    } catch (const InputError& e) {
        CHECK_THAT(e.what(), Catch::Contains(d + "/kernel.csv: row 2 (line 3): conv:"));
    }
    // A `measure --phase` file whose inference record is broken: the file and the JSON path.
    const std::string step = test::source_path("tests/data/measured/h100-sxm-2026-11-26b/inference/gpt2-small-decode-b1c512.json");
    for (const auto& [key, value, message] : std::vector<std::tuple<std::string, nlohmann::json, std::string>>{
             {"phase", "sideways", "/model/inference/phase: expected \"prefill\" or \"decode\""},
             {"context", -3, "/model/inference/context: expected a non-negative integer"},
             {"context", 100000, "beyond the model's 1024 positions"},
             {"model", "no-such-model", "neither a model file nor a built-in template"},
             {"dtype", "f13", "/model/inference/dtype: unknown dtype 'f13'"}}) {
        nlohmann::json m = nlohmann::json::parse(slurp(step));
        m["model"]["inference"][key] = value;
        spit(d + "/phase.json", m.dump());
        INFO(key);
        CHECK_THAT(load_error(d + "/phase.json"), Catch::Contains(message));
    }
    // Quoted fields (the kernel lists) may hold commas, quotes and newlines.
    spit(d + "/quoted.csv",
         "OPName,Latency_ms,Device,Kernels,B,H\nrelu,0.03,Fake GPU,\"a<4, 2>;\"\"b\"\"\nc\",4,8\nrelu,0.04,Fake_GPU,x,4,16\n");
    const roofline::MeasurementSet set = roofline::load_measurements({d + "/quoted.csv"}, opt);
    REQUIRE(set.cases.size() == 2);
    CHECK(set.cases[1].line == 4);
    CHECK(set.cases[1].gpu == "Fake GPU");  // '_' reads as ' '
    CHECK(set.cases[1].dims == std::vector<std::int64_t>{4, 16});
}

TEST_CASE("validate: the CLI exits 2 naming the file and row of a bad file", "[validate][cli]") {
    const std::string d = fresh_dir("validate-cli-bad");
    spit(d + "/relu.csv", "OPName,Latency_ms,Device,B,H\nrelu,0.03,Tesla T4,4,8\nrelu,n/a,Tesla T4,4,8\n");
    const auto r = test::run_cli("validate '" + d + "/relu.csv' -q");
    CHECK(r.code == 2);
    CHECK_THAT(r.out, Catch::Contains(d + "/relu.csv: row 2 (line 3): column 'Latency_ms': 'n/a' is not a number"));
    spit(d + "/dev.csv", "OPName,Latency_ms,Device,B,H\nrelu,0.03,Quantum Accelerator,4,8\n");
    const auto u = test::run_cli("validate '" + d + "/dev.csv' -q -o '" + d + "/out.json'");
    CHECK(u.code == 2);
    CHECK_THAT(u.out, Catch::Contains("row 1 (line 2): unknown device 'Quantum Accelerator'"));
    CHECK_FALSE(std::filesystem::exists(d + "/out.json"));  // nothing written
    const auto h = test::run_cli("validate '" + d + "/dev.csv' --hw-map 'Quantum Accelerator'");
    CHECK(h.code == 2);
    CHECK_THAT(h.out, Catch::Contains("--hw-map: expected DEVICE=SPEC"));
    const auto f = test::run_cli("validate '" + d + "/dev.csv' --families swishy");  // hardswish became an op (issue #21)
    CHECK(f.code == 2);
    CHECK_THAT(f.out, Catch::Contains("--families: unknown family or op 'swishy'"));
}

TEST_CASE("validate: --term sets a fitted term, and a bad one is exit 2", "[validate][cli]") {
    const std::string d = fresh_dir("validate-term");
    spit(d + "/bmm.csv", "OPName,Latency_ms,Device,B,M,N,K\nbmm,0.2,Tesla T4,64,256,8,256\n");
    // Each bad flag: exit 2, the message naming it.
    const std::pair<const char*, const char*> bad[] = {
        {"--term no_such_term=1", "--term: unknown term 'no_such_term' (fitted terms: eager_op_host_s,"},
        {"--term simt_gemm_efficiency=1.5", "--term simt_gemm_efficiency: '1.5' is not a number in [0.3, 1], the term's range"},
        {"--term simt_gemm_efficiency", "--term: expected NAME=VALUE"},
        {"--fit-start middle", "--fit-start"},
        {"--sweeps 0", "--sweeps"},
    };
    for (const auto& [flags, message] : bad) {
        INFO(flags);
        const auto r = test::run_cli("validate '" + d + "/bmm.csv' -q " + flags);
        CHECK(r.code == 2);
        CHECK_THAT(r.out, Catch::Contains(message));
    }
    // A short reduction (N = 8) over 64 x 256 x 256 outputs on a T4 is bound by the batched store
    // cap: at 0.5 bytes per SM clock (its lowest) the call is slower than at 8 (its highest).
    ValidateOptions lo = fake_options({{"Tesla T4", "t4"}}), hi = lo;
    lo.term_values["batched_simt_store_bytes_per_clock"] = 0.5;
    hi.term_values["batched_simt_store_bytes_per_clock"] = 8;
    std::vector<roofline::ValidationCase> a, b;
    (void)roofline::run_validation(roofline::load_measurements({d + "/bmm.csv"}, lo), lo, &a);
    (void)roofline::run_validation(roofline::load_measurements({d + "/bmm.csv"}, hi), hi, &b);
    REQUIRE(a.size() == 1);
    REQUIRE(b.size() == 1);
    CHECK(a[0].predicted_s > 1.5 * b[0].predicted_s);
}

TEST_CASE("validate: the public B,M,N,K reduce over N, and cuBLAS's batched SGEMM tile per architecture", "[validate]") {
    // The study's launch columns: nn.Linear(N, K) on [B*M, N] runs a grid of ceil(K / A) x
    // ceil(B*M / B') tiles for a cuBLAS tile AxB' (tests/data/public/neusight/README.md). Here
    // N = 31953 is the reduction and K = 368 the output's columns.
    const std::string d = fresh_dir("validate-gemm-dims");
    spit(d + "/linear.csv", "OPName,Latency_ms,Device,B,M,N,K\nlinear,6.4,Tesla P4,1,580,31953,368\n");
    // torch.bmm of 17 x [31, 732] x [732, 13]: cuBLAS 12.1 launches ampere_sgemm_128x128_nn on the
    // A100 (sm_80) and maxwell_sgemm_128x64_nn on the P100 (sm_60) for every batched shape: one
    // tile per batch here, 17 in all.
    spit(d + "/bmm.csv",
         "OPName,Latency_ms,Device,B,M,N,K\nbmm,0.278,NVIDIA A100-PCIE-40GB,17,31,732,13\nbmm,0.3,Tesla P100-PCIE-16GB,17,31,732,13\n");
    ValidateOptions opt;
    std::vector<roofline::ValidationCase> lin, bmm;
    (void)roofline::run_validation(roofline::load_measurements({d + "/linear.csv"}, opt), opt, &lin);
    (void)roofline::run_validation(roofline::load_measurements({d + "/bmm.csv"}, opt), opt, &bmm);
    REQUIRE(lin.size() == 1);
    REQUIRE(bmm.size() == 2);
    // The bias copied into the output (eager nn.Linear), then the GEMM "simt AxB grid X x Y x Z":
    // X = ceil(368 / A), Y = ceil(580 / B).
    int a = 0, b = 0, x = 0, y = 0, z = 0;
    INFO(lin[0].model_kernel);
    const std::size_t gemm = lin[0].model_kernel.find("simt ");
    REQUIRE(gemm != std::string::npos);
    REQUIRE(std::sscanf(lin[0].model_kernel.c_str() + gemm, "simt %dx%d grid %dx%dx%d", &a, &b, &x, &y, &z) == 5);
    CHECK(x == (368 + a - 1) / a);
    CHECK(y == (580 + b - 1) / b);
    CHECK(bmm[0].model_kernel == "simt 128x128 grid 1x1x17");
    CHECK(bmm[1].model_kernel == "simt 128x64 grid 1x1x17");
}

TEST_CASE("validate: statistics of a hand-made 5-row CSV", "[validate]") {
    // Five relu rows on one device; the "measurements" are the model's own predictions divided by
    // 1 + e for known errors e, so error = predicted / measured - 1 = e exactly.
    const std::string d = fresh_dir("validate-stats");
    const ValidateOptions opt = fake_options({{"Fake GPU", "h100-sxm"}});
    const std::vector<std::int64_t> rows = {64, 1024, 4096, 16384, 65536};
    std::string csv = "OPName,Latency_ms,Device,B,H\n";
    for (std::int64_t b : rows) csv += fmt::format("relu,1,Fake GPU,{},1024\n", b);
    spit(d + "/relu.csv", csv);
    roofline::MeasurementSet set = roofline::load_measurements({d + "/relu.csv"}, opt);
    roofline::predict_measurements(set, opt);
    const double errors[] = {-0.3, 0.5, 0.0, -0.1, 0.2};
    csv = "OPName,Latency_ms,Device,B,H\n";
    for (std::size_t i = 0; i < rows.size(); ++i) {
        REQUIRE(set.cases[i].predicted_s > 0);
        csv += fmt::format("relu,{:.17g},Fake GPU,{},1024\n", set.cases[i].predicted_s / (1 + errors[i]) * 1e3, rows[i]);
    }
    spit(d + "/relu.csv", csv);
    const ordered_json doc = roofline::run_validation(roofline::load_measurements({d + "/relu.csv"}, opt), opt);
    REQUIRE(doc["by_family"].size() == 1);
    const ordered_json& g = doc["by_family"][0];
    CHECK(g["gpu"] == "Fake GPU");
    CHECK(g["set"] == "fit");
    CHECK(g["family"] == "elementwise");
    CHECK(g["n"] == 5);
    // |e| sorted: 0, 0.1, 0.2, 0.3, 0.5 -> median 0.2; p90 interpolates 0.3 + 0.6 x (0.5 - 0.3).
    CHECK(g["median_abs_error_pct"].get<double>() == Approx(20).margin(1e-9));
    CHECK(g["p90_abs_error_pct"].get<double>() == Approx(42).margin(1e-9));
    CHECK(g["bias_pct"].get<double>() == Approx(0).margin(1e-9));  // signed: -0.3, -0.1, 0, 0.2, 0.5
    CHECK(doc["by_op"][0]["op"] == "relu");
    CHECK(doc["worst"][0]["error_pct"].get<double>() == Approx(50));  // 1.5x is the worst by |log|
    CHECK(doc["worst"][0]["row"] == 2);
    // Verdicts: the median 20% misses 10%; the bias (0) is within 5%; no end-to-end cases.
    CHECK(doc["verdicts"][0]["status"] == "fail");
    CHECK(doc["verdicts"][1]["status"] == "no cases");
    CHECK(doc["verdicts"][2]["status"] == "pass");
    CHECK_THAT(roofline::render_validation(doc), Catch::Contains("FAIL     median |error| <= 10% in every family on every GPU"));
    CHECK(roofline::validation_quantile({3, 1, 2}, 0.5) == 2);

    // --csv: every case in input order with its prediction and error; the shape holds spaces, the
    // device name a comma-free text, so nothing is quoted here (a comma would be, RFC 4180).
    std::vector<roofline::ValidationCase> cases;
    (void)roofline::run_validation(roofline::load_measurements({d + "/relu.csv"}, opt), opt, &cases);
    REQUIRE(cases.size() == 5);
    const std::string table = roofline::validation_cases_csv(cases);
    std::vector<std::string> lines;
    for (std::size_t at = 0, nl; (nl = table.find('\n', at)) != std::string::npos; at = nl + 1) lines.push_back(table.substr(at, nl - at));
    REQUIRE(lines.size() == 6);
    CHECK(lines[0] == "file,row,gpu,spec,set,source,op,family,shape,measured_s,predicted_s,error_pct,model_kernel");
    CHECK_THAT(lines[2], Catch::StartsWith(d + "/relu.csv,2,Fake GPU,h100-sxm,fit,pytorch,relu,elementwise,B=1024 H=1024,"));
    // The row made 1.5x too slow: +50%; then the launch the model assumed for relu over 1024 x 1024
    // fp32 (16 bytes a thread, 256 threads a block: 1024 blocks).
    CHECK_THAT(lines[2], Catch::EndsWith(",50,blocks 1024 x 256 threads"));
    roofline::ValidationCase odd = cases[0];
    odd.gpu = "GPU, with a comma";
    odd.predicted_s = 0;  // not predicted: empty prediction, error and launch
    odd.model_kernel.clear();
    const std::string one = roofline::validation_cases_csv({odd});
    CHECK_THAT(one, Catch::Contains(",\"GPU, with a comma\",h100-sxm,"));
    CHECK_THAT(one, Catch::EndsWith(",,,\n"));
}

TEST_CASE("validate --leave-one-out gpu recovers a fitted term's known value", "[validate][fit]") {
    // "Measurements" made by the model itself with simt_gemm_efficiency = 0.6 on three fake GPUs:
    // every refit of all the fitted terms must find 0.6 again. The cases are large fp32 GEMMs
    // (CUDA cores, TF32 off: milliseconds each, so the eager host terms move them by well under 1%)
    // on boards whose clocks are not power-limited at fp32 (so the energy term has no say), and of
    // three chips, so that no fold trains on one die twice (an H100 and an H200 would let the
    // power-limited clock and the SGEMM efficiency trade against each other).
    const std::string d = fresh_dir("validate-loo");
    ValidateOptions opt = fake_options({{"Fake A", "a100-sxm-40gb"}, {"Fake B", "h100-sxm"}, {"Fake C", "v100-sxm-32gb"}});
    const char* shapes[] = {"1,8192,8192,4096",   "1,16384,4096,8192", "16,2048,2048,2048",
                            "1,12288,12288,2048", "8,4096,3072,2048",  "1,6144,16384,6144"};
    auto write = [&](const char* op, const roofline::MeasurementSet* truth) {
        std::string csv = "OPName,Latency_ms,Device,B,M,N,K\n";
        std::size_t i = 0;
        for (const char* dev : {"Fake A", "Fake B", "Fake C"}) {
            for (const char* s : shapes) {
                const double ms = truth ? truth->cases[i].predicted_s * 1e3 : 1.0;
                if (truth) REQUIRE(truth->cases[i].op == op);
                csv += fmt::format("{},{:.17g},{},{}\n", op, ms, dev, s);
                ++i;
            }
        }
        spit(d + "/" + op + ".csv", csv);
    };
    write("linear", nullptr);
    write("bmm", nullptr);
    ValidateOptions truth_opt = opt;
    truth_opt.term_values["simt_gemm_efficiency"] = 0.6;
    for (const char* op : {"linear", "bmm"}) {
        roofline::MeasurementSet set = roofline::load_measurements({d + "/" + op + ".csv"}, truth_opt);
        roofline::predict_measurements(set, truth_opt);
        write(op, &set);
    }
    opt.leave_one_out = true;
    opt.fit = true;
    // By default the folds start from the middle of every term's range (nothing of the GPU left
    // out: simt_gemm_efficiency at sqrt(0.3 x 1) = 0.548, every other term too) and --fit from the
    // compiled-in values. From mid-range the fit reaches the data as closely (validation medians
    // under 2%), but along a valley: the fragment-load cost starts at 0.447 instead of its compiled
    // 0.598 and trades against the efficiency, so the efficiency lands within 5% of 0.6 rather than
    // 2% (the start dependence docs/ACCURACY.md measures). The objective before fitting is the
    // compiled-in values' either way.
    const ordered_json doc = roofline::run_validation(roofline::load_measurements({d}, opt), opt);
    CHECK(doc["settings"]["fit_start"] == "mid");
    CHECK(doc["fit"]["start"] == "compiled");
    REQUIRE(doc["folds"].size() == 3);
    for (const auto& f : doc["folds"]) {
        INFO(f.dump());
        CHECK(f["values"]["simt_gemm_efficiency"].get<double>() == Approx(0.6).epsilon(0.05));
    }
    CHECK(doc["fit"]["values"]["simt_gemm_efficiency"].get<double>() == Approx(0.6).epsilon(0.02));
    CHECK(doc["fit"]["objective_fitted"].get<double>() < doc["fit"]["objective_default"].get<double>());
    for (const auto& g : doc["by_family"]) {
        CHECK(g["set"] == "validation");
        CHECK(g["median_abs_error_pct"].get<double>() < 2.0);  // predicted with the refitted value
    }
    // Started from the compiled-in values (--fit-start compiled), the folds land within 2%.
    ValidateOptions compiled = opt;
    compiled.fit_start = ValidateOptions::FitStart::compiled;
    const ordered_json from_compiled = roofline::run_validation(roofline::load_measurements({d}, compiled), compiled);
    CHECK(from_compiled["settings"]["fit_start"] == "compiled");
    for (const auto& f : from_compiled["folds"]) CHECK(f["values"]["simt_gemm_efficiency"].get<double>() == Approx(0.6).epsilon(0.02));
    for (const auto& g : from_compiled["by_family"]) CHECK(g["median_abs_error_pct"].get<double>() < 2.0);
    CHECK(from_compiled["fit"]["objective_default"].get<double>() == Approx(doc["fit"]["objective_default"].get<double>()).epsilon(1e-12));
    // Without the fit, the defaults predict: the in-sample ("fit") set.
    opt.leave_one_out = false;
    opt.fit = false;
    const ordered_json plain = roofline::run_validation(roofline::load_measurements({d}, opt), opt);
    CHECK(plain["by_family"][0]["set"] == "fit");
    CHECK_FALSE(plain.contains("folds"));
    // One fitting GPU cannot be left out.
    opt.leave_one_out = true;
    opt.fitting_gpus = {"Fake A"};
    CHECK_THROWS_WITH(roofline::run_validation(roofline::load_measurements({d}, opt), opt),
                      Catch::Contains("needs cases of at least two fitting GPUs"));
}

TEST_CASE("validate: end-to-end rows, models that fail to load and held-out measure JSONs", "[validate][e2e]") {
    const std::string d = fresh_dir("validate-e2e");
    std::filesystem::create_directories(d + "/configs");
    spit(
        d + "/configs/tiny_gpt.json",
        R"({"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "vocab_size": 512, "n_embd": 64, "n_layer": 2, "n_head": 4, "n_positions": 128})");
    spit(d + "/configs/mystery.json", R"({"model_type": "not_a_transformer", "hidden_size": 8})");
    spit(d + "/end_to_end.csv",
         "device,model,mode,seq,batch,e2e_ms\n"
         "Fake_GPU,tiny_gpt,inf,128,2,1.5\nFake_GPU,tiny_gpt,train,128,2,4.5\nFake_GPU,mystery,inf,8,1,1\nFake_GPU,absent,inf,8,1,1\n");
    ValidateOptions opt = fake_options({{"Fake GPU", "h100-sxm"}});
    const ordered_json doc = roofline::run_validation(roofline::load_measurements({d + "/end_to_end.csv"}, opt), opt);
    CHECK(doc["summary"]["cases"] == 4);
    CHECK(doc["summary"]["predicted"] == 2);
    CHECK(doc["summary"]["errors"] == 2);
    REQUIRE(doc["errors"].size() == 2);
    CHECK(doc["errors"][0]["row"] == 3);
    CHECK(doc["errors"][1]["row"] == 4);
    CHECK_THAT(doc["errors"][1]["message"].get<std::string>(), Catch::Contains("no config file"));
    REQUIRE(doc["end_to_end"].size() == 1);
    CHECK(doc["end_to_end"][0]["n"] == 2);
    const auto& cases = doc["end_to_end"][0]["cases"];
    REQUIRE(cases.size() == 2);
    for (const auto& c : cases) CHECK(c["predicted_s"].get<double>() > 0);
    CHECK_THAT(roofline::render_validation(doc), Catch::Contains("2 case(s) could not be predicted"));

    // A `roofline measure` JSON: per kernel and step through compare, always held out.
    const std::string meas = test::source_path("tests/data/measured/h100-sxm-2026-11-23/check-mlp-train.json");
    const ordered_json m = roofline::run_validation(roofline::load_measurements({meas}, ValidateOptions{}), ValidateOptions{});
    CHECK(m["inputs"][0]["kind"] == "measurement");
    REQUIRE_FALSE(m["by_family"].empty());
    for (const auto& g : m["by_family"]) {
        CHECK(g["gpu"] == "NVIDIA H100 80GB HBM3");
        CHECK(g["spec"] == "h100-sxm");
        CHECK(g["set"] == "held-out");
    }
    REQUIRE(m["end_to_end"].size() == 1);
    CHECK(m["end_to_end"][0]["cases"][0]["row"] == 0);  // the step

    // PyTorch names the H200 plainly "NVIDIA H200": its rows go to the h200 spec, held out, all
    // 150 rows of a file predicted (tests/data/public/h200-torch-2026-11-26).
    const std::string h200 = test::source_path("tests/data/public/h200-torch-2026-11-26/add.csv");
    const ordered_json h = roofline::run_validation(roofline::load_measurements({h200}, ValidateOptions{}), ValidateOptions{});
    REQUIRE(h["by_family"].size() == 1);
    CHECK(h["by_family"][0]["gpu"] == "NVIDIA H200");
    CHECK(h["by_family"][0]["spec"] == "h200");
    CHECK(h["by_family"][0]["set"] == "held-out");
    CHECK(h["by_family"][0]["n"] == 150);
}

TEST_CASE("validate: same input, same bytes, whatever the thread count", "[validate][cli]") {
    const std::string d = fresh_dir("validate-det");
    const std::string data = test::source_path("tests/data/public/neusight");
    std::string outs[2];
    for (int i = 0; i < 2; ++i) {
        const std::string base = d + "/run" + std::to_string(i);
        const auto r = test::run_cli("validate '" + data +
                                     "' --max-rows 40 --families matmul,softmax,e2e --hw-map 'NVIDIA A100-PCIE-40GB=a100-sxm-40gb' "
                                     "--hw-map 'Tesla V100-PCIE-32GB=h100-pcie' --hw-map 'Tesla P100-PCIE-16GB=l4' --hw-map 'Tesla P4=l4' "
                                     "--threads " +
                                     std::to_string(i + 1) + " -q -o '" + base + ".json' --html '" + base + ".html'");
        INFO(r.out);
        REQUIRE(r.code == 0);
        outs[i] = slurp(base + ".json") + slurp(base + ".html");
    }
    CHECK(outs[0] == outs[1]);
    const ordered_json doc = ordered_json::parse(slurp(d + "/run0.json"));
    for (const auto& in : doc["inputs"]) CHECK(in["rows"].get<std::size_t>() > 0);
    for (const auto& g : doc["by_family"]) CHECK(g["n"].get<std::size_t>() <= 80);  // linear + bmm, 40 each per device
    // The HTML page: a scatter per family on log axes with the y = x line and the 10% band, no network.
    const std::string page = slurp(d + "/run0.html");
    CHECK(htmltest::tags(page, "<svg class=\"vscatter\"").size() >= 2);
    CHECK(htmltest::tags(page, "<polygon class=\"band\"").size() == htmltest::tags(page, "<svg class=\"vscatter\"").size());
    CHECK(htmltest::tags(page, "<circle class=\"vp\"").size() == doc["sample"].size() - doc["errors"].size());
    CHECK(htmltest::network_references(page).empty());
    CHECK(page == roofline::html_validation(doc));
    // An output never overwrites an input.
    const std::string copy = d + "/relu.csv";
    spit(copy, "OPName,Latency_ms,Device,B,H\nrelu,0.03,Tesla T4,4,8\n");
    const auto same = test::run_cli("validate '" + copy + "' -q -o '" + copy + "'");
    CHECK(same.code == 2);
    CHECK_THAT(same.out, Catch::Contains("refusing to overwrite"));
}

TEST_CASE("validate: every key of the validation document is documented", "[validate][schema]") {
    const std::string d = fresh_dir("validate-schema");
    std::filesystem::create_directories(d + "/configs");
    spit(d + "/configs/tiny_gpt.json",
         R"({"model_type": "gpt2", "vocab_size": 512, "n_embd": 64, "n_layer": 1, "n_head": 4, "n_positions": 64})");
    spit(d + "/end_to_end.csv",
         "device,model,mode,seq,batch,e2e_ms\nFake A,tiny_gpt,inf,64,1,1.5\nFake B,tiny_gpt,inf,64,1,1.7\nFake B,absent,inf,8,1,1\n");
    spit(d + "/linear.csv",
         "OPName,Latency_ms,Device,B,M,N,K\nlinear,0.5,Fake A,1,512,512,512\nlinear,0.5,Fake B,1,512,512,512\nlinear,0.5,Fake "
         "C,1,64,64,64\n");
    ValidateOptions opt = fake_options({{"Fake A", "a100-sxm-40gb"}, {"Fake B", "t4"}});
    opt.hw_map["Fake C"] = "h100-sxm";  // held out
    opt.leave_one_out = true;
    opt.fit = true;
    const ordered_json doc = roofline::run_validation(roofline::load_measurements({d}, opt), opt);
    const std::set<std::string> names = documented_names(slurp(test::source_path("docs/report-schema.md")));
    std::vector<std::string> missing;
    auto need = [&](const ordered_json& obj, const std::string& where) {
        REQUIRE(obj.is_object());
        for (const auto& [k, v] : obj.items())
            if (!names.count(k)) missing.push_back(where + k);
    };
    need(doc, "");
    for (const char* part : {"settings", "summary", "fit"}) need(doc[part], std::string(part) + ".");
    for (const char* part :
         {"inputs", "gpus", "terms", "folds", "verdicts", "by_family", "by_op", "end_to_end", "worst", "errors", "sample"}) {
        INFO(part);
        REQUIRE_FALSE(doc[part].empty());
        need(doc[part][0], std::string(part) + "[].");
    }
    for (const auto& v : doc["verdicts"])
        for (const auto& f : v["failing"]) need(f, "verdicts[].failing[].");
    need(doc["by_family"][0]["worst"][0], "by_family[].worst[].");
    need(doc["end_to_end"][0]["cases"][0], "end_to_end[].cases[].");
    CHECK(missing == std::vector<std::string>{});
    const std::string md = slurp(test::source_path("docs/report-schema.md"));
    CHECK(md.find("\"schema\": \"roofline-validation/1\"") != std::string::npos);
    std::set<std::string> sets;
    for (const auto& g : doc["gpus"]) sets.insert(g["set"].get<std::string>());
    CHECK(sets == std::set<std::string>{"held-out", "validation"});
}

// ---- The accuracy thresholds of issue #15 (ctest label "accuracy") ----
// tests/CMakeLists.txt runs `roofline validate tests/data/public/neusight --leave-one-out gpu` once
// (the fixture) and each test below checks one threshold on its document. They are the goal, never
// loosened. While the model misses one, its test carries Catch2's [!mayfail]: the failed assertion
// and the whole table are still printed in the ctest log (and counted in docs/ACCURACY.md), but a
// known miss does not stop the build; drop the tag when the goal is met. What does stop it is the
// ratchet below: no GPU x family may get worse than the committed record of the model's errors.

namespace {

ordered_json accuracy_doc() {
    const std::string path = test::tmp_path("accuracy-validation.json");
    const std::string text = slurp(path);
    if (text.empty()) FAIL("no " << path << ": the accuracy fixture (roofline validate ... --leave-one-out gpu) did not run or failed");
    return ordered_json::parse(text);
}

void check_verdict(const std::string& name) {
    const ordered_json doc = accuracy_doc();
    CHECK(doc["settings"]["leave_one_out"] == "gpu");
    INFO(roofline::render_validation(doc));
    bool found = false;
    for (const auto& v : doc["verdicts"]) {
        if (v["name"] != name) continue;
        found = true;
        INFO(v.dump(2));
        CHECK(v["status"] == "pass");
    }
    CHECK(found);
}

}  // namespace

TEST_CASE("accuracy: median |error| <= 10% in every family on every public GPU, leave one GPU out",
          "[.][accuracy_family_median][!mayfail]") {
    check_verdict("family_median");
}

TEST_CASE("accuracy: end-to-end median |error| <= 10% on every public GPU, leave one GPU out", "[.][accuracy_e2e_median]") {
    check_verdict("e2e_median");
}

TEST_CASE("accuracy: |bias| <= 5% in every family and end to end on every public GPU, leave one GPU out", "[.][accuracy_bias][!mayfail]") {
    check_verdict("bias");
}

// The ratchet: tests/data/public/neusight-accuracy-record.json holds every (GPU, family) median
// |error| and bias, and every GPU's end-to-end median and bias, of the last committed model
// (tests/tools/accuracy_record.py writes it from the fixture's document). A change may not make any
// of them worse by more than 1 percentage point (the leave-one-out refits move medians by a few
// tenths between equally good models); an improvement is recorded by rewriting the file.
TEST_CASE("accuracy: no GPU x family gets worse than the committed record, leave one GPU out", "[.][accuracy_record]") {
    const ordered_json doc = accuracy_doc();
    const ordered_json record = ordered_json::parse(slurp(test::source_path("tests/data/public/neusight-accuracy-record.json")));
    INFO(roofline::render_validation(doc));
    // The record holds for the procedure it was made with (the folds' start and sweeps).
    REQUIRE(doc["settings"]["fit_start"] == record["procedure"]["fit_start"]);
    REQUIRE(doc["settings"]["sweeps"] == record["procedure"]["sweeps"]);
    auto find = [&](const char* table, const std::string& gpu, const std::string& family) -> const ordered_json* {
        for (const auto& r : doc[table])
            if (r["gpu"] == gpu && r["set"] == "validation" && (family.empty() || r["family"] == family)) return &r;
        return nullptr;
    };
    std::size_t checked = 0;
    for (const char* table : {"by_family", "end_to_end"}) {
        for (const auto& want : record[table]) {
            const std::string gpu = want["gpu"], family = want.value("family", "");
            INFO(table << ": " << gpu << " " << family);
            const ordered_json* got = find(table, gpu, family);
            REQUIRE(got != nullptr);
            CHECK((*got)["median_abs_error_pct"].get<double>() <= want["median_abs_error_pct"].get<double>() + 1.0);
            CHECK(std::fabs((*got)["bias_pct"].get<double>()) <= std::fabs(want["bias_pct"].get<double>()) + 1.0);
            ++checked;
        }
    }
    CHECK(checked == 29);  // 5 GPUs x their families (24, no A100 conv) + 5 end-to-end rows
}

namespace {

// Per-kernel median |error| and the step's |error| of one committed `roofline measure` file,
// predicted with the compiled-in terms (validate's held-out set).
struct MeasuredScore {
    double kernel_median = -1, step = -1;
    std::size_t kernels = 0;  // kernels predicted and measured
};

MeasuredScore score_measurement(const std::string& name) {
    const ValidateOptions opt;
    std::vector<roofline::ValidationCase> cases;
    const ordered_json doc =
        roofline::run_validation(roofline::load_measurements({test::source_path("tests/data/measured/" + name)}, opt), opt, &cases);
    INFO(roofline::render_validation(doc));
    std::vector<double> kernels;
    MeasuredScore s;
    for (const auto& c : cases) {
        if (c.predicted_s <= 0 || c.measured_s <= 0) continue;
        const double e = std::fabs(c.predicted_s / c.measured_s - 1);
        if (c.op == "e2e") {
            s.step = e;
        } else {
            kernels.push_back(e);
        }
    }
    if (!kernels.empty()) s.kernel_median = roofline::validation_quantile(kernels, 0.5);
    s.kernels = kernels.size();
    return s;
}

}  // namespace

// The H100 runs never used for fitting: GPT-2 small training b2 x 128 and the MLP at batch 32,
// as recorded on 2026-11-25 (the step timed under the tracer, the MLP's over 3 repetitions) and
// re-timed untraced on 2026-11-26, and the nine steps of 2026-11-27 measured after the model was
// committed (tests/data/measured/h100-sxm-2026-11-27/README.md). Issue #15 asks for a per-kernel
// median |error| <= 15% and each step within 10%. Never fitted on. The goal, never loosened;
// [!mayfail] while it is missed.
TEST_CASE("accuracy: H100 runs never fitted on, per-kernel median <= 15% and step <= 10%", "[.][accuracy_h100][!mayfail]") {
    for (const char* name : {"h100-sxm-2026-11-25/check-gpt2-small-train.json", "h100-sxm-2026-11-25/check-mlp-train.json",
                             "h100-sxm-2026-11-26/gpt2-small-train-b2s128.json", "h100-sxm-2026-11-26/mlp-train-b32.json",
                             "h100-sxm-2026-11-27/gpt2-medium-train-b4s512.json", "h100-sxm-2026-11-27/bert-base-train-b8s256.json",
                             "h100-sxm-2026-11-27/t5-small-train-b8s256.json", "h100-sxm-2026-11-27/vit-b16-train-b16.json",
                             "h100-sxm-2026-11-27/qwen2.5-1.5b-prefill-b1s512.json", "h100-sxm-2026-11-27/qwen2.5-1.5b-decode-b8c512.json",
                             "h100-sxm-2026-11-27/llama-2-7b-decode-b4c1024.json", "h100-sxm-2026-11-27/check-gpt2-small-train-b1s64.json",
                             "h100-sxm-2026-11-27/check-mlp-train.json"}) {
        INFO(name);
        const MeasuredScore s = score_measurement(name);
        REQUIRE(s.step >= 0);
        CHECK(s.kernel_median <= 0.15);
        CHECK(s.step <= 0.10);
    }
}

// A measurement of a built-in template whose name has a dot ("qwen2.5-1.5b", which a path would
// read as an extension) is rebuilt from the template, not looked for as a file. Every one of the
// step's 871 measured kernels and the step itself are predicted (their errors are docs/ACCURACY.md's
// held-out table).
TEST_CASE("validate: a measurement of a dotted template name (qwen2.5-1.5b decode) is rebuilt from the template", "[validate][e2e]") {
    const MeasuredScore s = score_measurement("h100-sxm-2026-11-27/qwen2.5-1.5b-decode-b8c512.json");
    CHECK(s.step >= 0);
    CHECK(s.kernels == 871);
}
