#pragma once
// --runtime native|eager and --host FILE, shared by `analyze` and `plan`: how the graph runs, and
// for the eager runtime the host that dispatches it (sim/eager_host.hpp).
#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "ops/error.hpp"
#include "sim/analysis.hpp"
#include "sim/eager_host.hpp"

namespace roofline::cli {

struct RuntimeArgs {
    std::string runtime = "native";
    std::string host;  // a roofline-host/1 file; empty: the eager terms' fitted defaults
    std::optional<EagerHost> loaded;

    void add_to(CLI::App* cmd, bool brief) {
        cmd->add_option("--runtime", runtime,
                        brief ? "native or eager (see `roofline analyze --help`)"
                              : "how the graph runs: native (one kernel per op launched from C++, as `roofline measure` runs it) or "
                                "eager (PyTorch eager: ATen's kernels per op and a host dispatch cost per op; the step is max(GPU, "
                                "host) with queueing)")
            ->check(CLI::IsMember({"native", "eager"}))
            ->capture_default_str();
        cmd->add_option("--host", host,
                        "eager runtime: the host as measured on your machine (a roofline-host/1 file from measure/host_probe.py); "
                        "default: the host of the public fitting machines (PyTorch 2.1)");
    }
    // Sets opt's runtime and, with --host, its eager host terms; InputError for a bad file or for
    // --host without --runtime eager.
    void apply(AnalysisOptions& opt) {
        opt.runtime = runtime == "eager" ? Runtime::eager : Runtime::native;
        if (host.empty()) return;
        if (opt.runtime != Runtime::eager)
            throw InputError("--host " + host + ": a host describes the eager runtime's dispatch; add --runtime eager");
        loaded = load_eager_host(host);
        apply_eager_host(*loaded, opt);
    }
};

}  // namespace roofline::cli
