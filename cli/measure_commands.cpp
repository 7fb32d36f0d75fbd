// measure, compare, calibrate: the measuring half of the tool. measure and calibrate need a GPU
// and this build's CUDA support; without them they exit 3 naming the reason. compare is offline.
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include <unistd.h>
#include <nlohmann/json.hpp>

#include "cli/validators.hpp"
#include "cli/commands.hpp"
#include "cli/graph_args.hpp"
#include "cli/output_args.hpp"
#include "reports/output_files.hpp"
#include "model/model_json.hpp"
#include "ops/error.hpp"
#include "reports/compare.hpp"
#include "reports/report.hpp"
#include "reports/units.hpp"
#include "sim/calibration.hpp"
#include "sim/hardware.hpp"
#include "sim/recompute.hpp"

#ifdef ROOFLINE_WITH_CUDA
#include "measure/calibrate.hpp"
#include "measure/device.hpp"
#include "measure/gpu_executor.hpp"
#include "ops/cuda/cuda_check.hpp"
#endif

namespace roofline::cli {

namespace {

#ifdef ROOFLINE_WITH_CUDA
// The device to run on, or DeviceUnavailable saying why there is none.
void require_device(int device) {
    const DeviceQuery q = query_cuda_devices();
    if (q.devices.empty()) throw DeviceUnavailable(q.problem);
    if (device < 0 || device >= static_cast<int>(q.devices.size())) {
        throw InputError("--device " + std::to_string(device) + ": this machine has " + std::to_string(q.devices.size()) +
                         " CUDA device(s)");
    }
}

// What rebuilds an inference step's graph (--phase and its options): validate reads it back
// (reports/validate.cpp, measured_graph), since the phase graph's origin names no file.
nlohmann::json inference_record(const GraphArgs& a) {
    nlohmann::json r = {{"model", a.model}, {"phase", a.phase}, {"dtype", a.dtype}, {"tokens", a.seq}};
    if (a.phase == "decode") r["context"] = a.context;
    if (a.source >= 0) r["source"] = a.source;  // an encoder-decoder's decode step
    if (a.quant.any())
        r["quantization"] = {{"weights", a.quant.weights},
                             {"group_size", a.quant.group_size},
                             {"activations", a.quant.activations},
                             {"kv_cache", a.quant.kv_cache}};
    return r;
}
#else
// The commands that need a GPU run in roofline-gpu, the same command line linked with the CUDA
// runtime, cuBLASLt and CUPTI, installed beside this executable: every other command starts
// without loading those libraries (issue #20). Its options were checked here first.
[[noreturn]] void no_cuda() {
    std::array<char, 4096> self{};
    const ssize_t n = readlink("/proc/self/exe", self.data(), self.size() - 1);
    std::string gpu = n > 0 ? std::string(self.data(), static_cast<std::size_t>(n)) : std::string();
    gpu = gpu.substr(0, gpu.find_last_of('/') + 1) + "roofline-gpu";
    if (n > 0 && access(gpu.c_str(), X_OK) == 0 && outcome().argv != nullptr) {
        std::fflush(stdout);
        std::vector<char*> args(outcome().argv, outcome().argv + outcome().argc);
        args[0] = gpu.data();
        args.push_back(nullptr);
        execv(gpu.c_str(), args.data());
        throw DeviceUnavailable("cannot run " + gpu + ": " + std::strerror(errno));
    }
    throw DeviceUnavailable(
        "this roofline has no GPU part (roofline-gpu, built with ROOFLINE_WITH_CUDA=ON on a machine with the CUDA "
        "toolkit, beside this executable)");
}
#endif

}  // namespace

void add_measure(CLI::App& app) {
    auto* cmd = app.add_subcommand("measure", "run a model on the GPU's real kernels and time every kernel with CUPTI");
    auto args = std::make_shared<GraphArgs>();
    auto out = std::make_shared<std::string>();
    auto reps = std::make_shared<int>(20);
    auto warmup = std::make_shared<int>(3);
    auto flash = std::make_shared<bool>(false);
    auto counters = std::make_shared<std::string>("on");
    auto check = std::make_shared<std::string>("on");
    auto device = std::make_shared<int>(0);
    auto quiet = std::make_shared<bool>(false);
    auto recompute = std::make_shared<std::string>("none");
    auto memory = std::make_shared<std::string>("keep-all");
    auto outputs = std::make_shared<OutputArgs>();
    args->add_to(cmd);
    cmd->add_option("-o,--output", *out, "write the measurement (schema roofline-measurement/1) to this file")->required();
    cmd->add_option("--recompute", *recompute,
                    "training: run the step rebuilt with this recomputation strategy, as `analyze --recompute` models it: none, selective, "
                    "full, sqrt or mincut")
        ->check(CLI::IsMember({"none", "selective", "full", "sqrt", "mincut"}))
        ->capture_default_str();
    cmd->add_option(
           "--memory", *memory,
           "keep-all: every tensor its own device memory (needed by --check); reuse: memory freed after a tensor's last reader and reused, "
           "so the arena is the step's peak memory (what recomputation saves)")
        ->check(CLI::IsMember({"keep-all", "reuse"}))
        ->capture_default_str();
    outputs->add_to(cmd, false, true);
    cmd->add_option("--repetitions", *reps, "timed runs of the whole graph; times are medians")
        ->check(CLI::Range(1, 100000))
        ->capture_default_str();
    cmd->add_option("--warmup", *warmup, "untimed runs first")->check(CLI::Range(0, 1000))->capture_default_str();
    cmd->add_flag("--flash", *flash, "attention as one fused flash-style kernel instead of QK^T, softmax, xV");
    cmd->add_option("--counters", *counters,
                    "on: read hardware counters per kernel in a separate replayed run (falls back to timing only, saying why, where "
                    "counters are not permitted); off: timing only")
        ->check(CLI::IsMember({"on", "off"}))
        ->capture_default_str();
    cmd->add_option("--check", *check,
                    "on: check every node's outputs against the CPU reference (nodes over 2 GFLOP are skipped); off: do not")
        ->check(CLI::IsMember({"on", "off"}))
        ->capture_default_str();
    cmd->add_option("--device", *device, "CUDA device index")->capture_default_str();
    cmd->add_flag("-q,--quiet", *quiet, "print no summary");
    cmd->footer(
        "Example: roofline measure gpt2-small --mode training --batch 4 --seq 512 --check off -o measured.json\n"
        "         roofline measure gpt2-small --mode training --recompute selective --memory reuse --check off --counters off -o sel.json\n"
        "Exit 3 when there is no usable GPU (no driver, no device), naming the reason.\n");
    cmd->callback([=] {
        check_output_targets({{"-o", *out}, {"--html", outputs->html}, {"--csv", outputs->csv}, {"--trace", outputs->trace}},
                             {args->model});
        TrainingOptions t;
        Graph g = args->build(&t);  // bad input is reported before looking for a GPU
        if (*recompute != "none") g = apply_recompute(g, plan_strategy(g, *parse_strategy(*recompute))).graph;
        if (*memory == "reuse" && *check == "on") {
            throw InputError("--memory reuse overwrites tensors the check reads: use --check off with it");
        }
#ifdef ROOFLINE_WITH_CUDA
        require_device(*device);
        MeasureOptions opt;
        opt.repetitions = *reps;
        opt.warmup = *warmup;
        opt.flash_attention = *flash;
        opt.counters = *counters == "on";
        opt.check = *check == "on";
        opt.device = *device;
        opt.reuse_memory = *memory == "reuse";
        opt.recompute = *recompute;
        const Measurement m = measure_graph(g, opt);
        nlohmann::json doc = measurement_to_json(g, m, args->mode);
        if (!args->phase.empty()) doc["model"]["inference"] = inference_record(*args);
        const std::string text = doc.dump(2) + "\n";
        OutputFiles files{{"measurement", *out, text}};
        if (outputs->wanted()) outputs->render(nlohmann::ordered_json::parse(text), files);
        const std::string written = write_outputs(files);
        if (!*quiet) {
            print(g.name + " (" + args->mode + ") on " + m.device.at("name") + ": step " + human_time(m.step_median_s) + " (p10 " +
                  human_time(m.step_p10_s) + ", p90 " + human_time(m.step_p90_s) + "; traced " + human_time(m.step_traced_median_s) +
                  "), kernels " + human_time(m.kernel_sum_s) + ", arena " + human_bytes(static_cast<double>(m.arena_bytes)) + "\n");
            print(m.counters_problem.empty() ? "counters: collected\n" : "counters: not collected: " + m.counters_problem + "\n");
            print("checks against the CPU reference: " + std::to_string(m.failed_checks) + " failed\n");
            print(written);
        }
        if (m.failed_checks > 0) {
            std::fprintf(stderr, "roofline: %d node(s) differ from the CPU reference beyond tolerance (see \"check\" in %s)\n",
                         m.failed_checks, out->c_str());
            outcome().code = 1;
        }
#else
        // Keep every option's storage alive: CLI11 writes through pointers to them.
        (void)g, (void)outputs, (void)out, (void)reps, (void)warmup, (void)flash, (void)counters, (void)check, (void)device, (void)quiet,
            (void)recompute, (void)memory;
        no_cuda();
#endif
    });
}

void add_compare(CLI::App& app) {
    auto* cmd = app.add_subcommand("compare", "predicted (analyze -o) vs measured (measure -o), per kernel; offline");
    auto predicted = std::make_shared<std::string>();
    auto measured = std::make_shared<std::string>();
    auto out = std::make_shared<std::string>();
    auto top = std::make_shared<std::size_t>(10);
    auto min_us = std::make_shared<double>(0.0);
    auto quiet = std::make_shared<bool>(false);
    auto outputs = std::make_shared<OutputArgs>();
    cmd->add_option("PREDICTED", *predicted, "an analyze report (roofline-report/1)")->required();
    cmd->add_option("MEASURED", *measured, "a measurement (roofline-measurement/1)")->required();
    cmd->add_option("-o,--output", *out, "write the comparison (schema roofline-comparison/1) to this file");
    outputs->add_to(cmd);
    cmd->add_option("--top", *top, "worst offenders to list")->capture_default_str();
    cmd->add_option("--min-us", *min_us, "leave kernels measured below this many microseconds out of the statistics")->check(kNonNegative);
    cmd->add_flag("-q,--quiet", *quiet, "print no summary");
    cmd->footer("Example: roofline compare predicted.json measured.json -o cmp.json\n");
    cmd->callback([=] {
        check_output_targets({{"-o", *out}, {"--html", outputs->html}, {"--csv", outputs->csv}, {"--trace", outputs->trace}},
                             {*predicted, *measured});
        CompareOptions opt;
        opt.worst = std::max<std::size_t>(*top, 10);
        opt.min_measured_s = *min_us * 1e-6;
        const auto cmp = compare_documents(read_json_file(*predicted), *predicted, read_json_file(*measured), *measured, opt);
        const std::string text = cmp.dump(2) + "\n";
        OutputFiles files;
        if (!out->empty()) files.push_back({"comparison", *out, text});
        outputs->render(cmp, files);  // every text before the first write
        if (!*quiet) print(render_comparison(cmp, *top));
        const std::string written = write_outputs(files);
        if (!*quiet) print(written);
    });
}

void add_calibrate(CLI::App& app) {
    auto* cmd = app.add_subcommand("calibrate", "microbenchmark this GPU and write a hardware spec from the measurements");
    auto out = std::make_shared<std::string>();
    auto base = std::make_shared<std::string>();
    auto raw = std::make_shared<std::string>();
    auto quick = std::make_shared<bool>(false);
    auto device = std::make_shared<int>(0);
    cmd->add_option("-o,--output", *out, "write the calibrated hardware spec (roofline-hardware/1) here")->required();
    cmd->add_option("--base", *base,
                    "spec whose unmeasured values (capacities, limits, links) are kept; default: the built-in spec of this GPU");
    cmd->add_option("--raw", *raw, "also write the raw microbenchmark results (roofline-calibration/1)");
    cmd->add_flag("--quick", *quick, "smaller sizes and fewer repetitions (seconds instead of a minute)");
    cmd->add_option("--device", *device, "CUDA device index")->capture_default_str();
    cmd->footer(
        "Example: roofline calibrate -o my-h100.json && roofline analyze gpt2-small --hw my-h100.json\n"
        "Exit 3 when there is no usable GPU, naming the reason.\n");
    cmd->callback([=] {
        check_output_targets({{"-o", *out}, {"--raw", *raw}}, {*base});
#ifdef ROOFLINE_WITH_CUDA
        require_device(*device);
        CalibrationOptions copt;
        copt.quick = *quick;
        const Calibration c = run_calibration(*device, copt);
        const nlohmann::json cal = calibration_to_json(c);
        const std::string base_name = base->empty() ? builtin_for_device(c.device_name) : *base;
        const nlohmann::json spec = calibrated_spec(resolve_hardware_json(base_name), cal);
        parse_hardware(spec, *out);  // the written spec must load
        OutputFiles files{{"hardware spec", *out, spec.dump(2) + "\n"}};
        if (!raw->empty()) files.push_back({"raw results", *raw, cal.dump(2) + "\n"});
        const std::string written = write_outputs(files);
        print(render_calibration(cal, base_name));
        print(written);
#else
        (void)out, (void)base, (void)raw, (void)quick, (void)device;
        no_cuda();
#endif
    });
}

}  // namespace roofline::cli
