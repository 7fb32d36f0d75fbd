// roofline: where does the time go on this accelerator, and what would a change pay?
// Only this file decides exit codes: 0 success, 2 bad input, 3 no usable GPU (measure,
// calibrate), 1 internal error.
#include <cstdio>
#include <exception>

#include "cli/commands.hpp"
#include "ops/error.hpp"

int main(int argc, char** argv) {
    CLI::App app{"roofline — hierarchical roofline analysis of deep-learning op graphs on GPUs and TPUs", "roofline"};
    app.set_version_flag("--version", std::string("roofline ") + ROOFLINE_VERSION);
    app.require_subcommand(1);
    app.fallthrough(false);
    roofline::cli::add_analyze(app);
    roofline::cli::add_plan(app);
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
        std::fprintf(stderr, "roofline: unknown command '%s' (commands: analyze, measure, compare, calibrate, hw, model)\nRun with --help for usage.\n", argv[1]);
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
        std::fprintf(stderr, "roofline: error: %s\n", e.what());
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "roofline: internal error: %s\n", e.what());
        return 1;
    }
    return roofline::cli::outcome().code;
}
