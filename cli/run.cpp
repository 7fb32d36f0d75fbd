// The command line (main.cpp runs it; fuzz/fuzz_cli.cpp fuzzes it).
// Only this file decides exit codes (README, "Exit codes"): 0 success; 1 internal error, or
// `measure` found kernels that differ from the CPU reference; 2 bad input (a message names the
// file, JSON path or node) or an output that cannot be written; 3 no usable GPU (measure, calibrate).
#include <cstdio>
#include <exception>

#include "cli/commands.hpp"
#include "cli/run.hpp"
#include "ops/error.hpp"
#include "reports/units.hpp"

namespace roofline::cli {

namespace {

// The command line; `unchecked` lets every error through as an exception (run_unchecked) instead
// of printing it and returning its exit code.
int run_app(int argc, char** argv, bool unchecked) {
    CLI::App app{"roofline — hierarchical roofline analysis of deep-learning op graphs on GPUs and TPUs", "roofline"};
    app.set_version_flag("--version", std::string("roofline ") + ROOFLINE_VERSION);
    app.require_subcommand(1);
    app.fallthrough(false);
    app.footer(
        "MODEL (analyze, plan, measure) is one of:\n"
        "  a built-in template           roofline analyze gpt2-small --batch 8 --seq 1024   (roofline model list)\n"
        "  a roofline-model/1 JSON file  roofline analyze examples/two-layer-mlp.json\n"
        "  a Hugging Face config.json    roofline analyze config.json --dtype f32 --runtime eager --mode training\n"
        "  an ONNX file (.onnx)          roofline analyze model.onnx --allow-unknown   (when built with ONNX)\n"
        "Hardware (--hw): a built-in name (roofline hw list) or a roofline-hardware/1 JSON file.\n"
        "Exit codes: 0 success; 1 internal error, or measure's kernels differ from the CPU reference;\n"
        "            2 bad input (the message names the file, JSON path or node); 3 no usable GPU.\n"
        "Run `roofline COMMAND --help` for a command's options and examples.\n");
    add_analyze(app);
    add_plan(app);
    add_search(app);
    add_generate(app);
    add_serve(app);
    add_hw(app);
    add_model(app);
    add_measure(app);
    add_compare(app);
    add_calibrate(app);
    add_validate(app);
    auto known = [&](const char* name) {
        for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
            if (sub->get_name() == name) return true;
        }
        return false;
    };
    if (argc > 1 && argv[1][0] != '-' && !known(argv[1])) {
        std::string names;
        for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
            names += (names.empty() ? "" : ", ") + sub->get_name();
        const std::string message = std::string("unknown command '") + argv[1] + "' (commands: " + names + ")";
        if (unchecked) throw InputError(message);
        std::fprintf(stderr, "roofline: %s\nRun with --help for usage.\n", message.c_str());
        return 2;
    }
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        if (unchecked) throw InputError(e.what());
        std::fprintf(stderr, "roofline: %s\nRun with --help for usage.\n", e.what());
        return 2;
    } catch (const DeviceUnavailable& e) {
        if (unchecked) throw;
        std::fprintf(stderr, "roofline: no GPU: %s\n", e.what());
        return 3;
    } catch (const InputError& e) {
        if (unchecked) throw;
        std::fprintf(stderr, "roofline: error: %s\n", terminal_safe(e.what()).c_str());
        return 2;
    } catch (const std::exception& e) {
        if (unchecked) throw;
        std::fprintf(stderr, "roofline: internal error: %s\n", e.what());
        return 1;
    }
    // Output to a closed pipe or a full disk: say so rather than exit 0 with the text lost.
    if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
        if (unchecked) throw InputError("writing standard output failed");
        std::fprintf(stderr, "roofline: error: writing standard output failed\n");
        return 2;
    }
    return outcome().code;
}

}  // namespace

int run(int argc, char** argv, bool process_exits) {
    outcome() = Outcome{0, argc, argv, nullptr, process_exits};
    return run_app(argc, argv, false);
}

int run_unchecked(int argc, char** argv, std::string* captured) {
    outcome() = Outcome{0, argc, argv, captured};
    return run_app(argc, argv, true);
}

}  // namespace roofline::cli
