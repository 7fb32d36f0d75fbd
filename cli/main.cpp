// roofline: where does the time go on this accelerator, and what would a change pay?
// Only this file decides exit codes (README, "Exit codes"): 0 success; 1 internal error, or
// `measure` found kernels that differ from the CPU reference; 2 bad input (a message names the
// file, JSON path or node) or an output that cannot be written; 3 no usable GPU (measure, calibrate).
#include <cstdio>
#include <exception>

#include "cli/commands.hpp"
#include "ops/error.hpp"
#include "reports/units.hpp"

int main(int argc, char** argv) {
    roofline::cli::outcome().argc = argc;
    roofline::cli::outcome().argv = argv;
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
    roofline::cli::add_analyze(app);
    roofline::cli::add_plan(app);
    roofline::cli::add_search(app);
    roofline::cli::add_generate(app);
    roofline::cli::add_serve(app);
    roofline::cli::add_hw(app);
    roofline::cli::add_model(app);
    roofline::cli::add_measure(app);
    roofline::cli::add_compare(app);
    roofline::cli::add_calibrate(app);
    roofline::cli::add_validate(app);
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
        std::fprintf(stderr, "roofline: unknown command '%s' (commands: %s)\nRun with --help for usage.\n", argv[1], names.c_str());
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
        std::fprintf(stderr, "roofline: %s\nRun with --help for usage.\n", e.what());
        return 2;
    } catch (const roofline::DeviceUnavailable& e) {
        std::fprintf(stderr, "roofline: no GPU: %s\n", e.what());
        return 3;
    } catch (const roofline::InputError& e) {
        std::fprintf(stderr, "roofline: error: %s\n", roofline::terminal_safe(e.what()).c_str());
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "roofline: internal error: %s\n", e.what());
        return 1;
    }
    // Output to a closed pipe or a full disk: say so rather than exit 0 with the text lost.
    if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
        std::fprintf(stderr, "roofline: error: writing standard output failed\n");
        return 2;
    }
    return roofline::cli::outcome().code;
}
