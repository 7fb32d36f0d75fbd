// validate: the model against measured op latencies and steps (public CSVs, `measure` JSONs),
// per GPU and family, with leave-one-GPU-out refits of the fitted terms (reports/validate.hpp).
#include <cstdio>
#include <filesystem>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/output_args.hpp"
#include "cli/validators.hpp"
#include "reports/output_files.hpp"
#include "ops/error.hpp"
#include "reports/report.hpp"
#include "reports/validate.hpp"
#include "sim/fitted.hpp"

namespace roofline::cli {

namespace {

std::map<std::string, std::string> parse_hw_map(const std::vector<std::string>& items) {
    std::map<std::string, std::string> m;
    for (const std::string& item : items) {
        const std::size_t eq = item.find('=');
        if (eq == std::string::npos || eq == 0 || eq + 1 == item.size()) {
            throw InputError("--hw-map: expected DEVICE=SPEC (e.g. 'Tesla T4=t4'), got '" + item + "'");
        }
        m[item.substr(0, eq)] = item.substr(eq + 1);
    }
    return m;
}

// --host FILE (every device) or DEVICE=FILE (that device's rows), repeatable.
std::map<std::string, EagerHost> parse_hosts(const std::vector<std::string>& items) {
    std::map<std::string, EagerHost> m;
    for (const std::string& item : items) {
        const std::size_t eq = item.find('=');
        const std::string device = eq == std::string::npos ? "" : item.substr(0, eq);
        const std::string file = eq == std::string::npos ? item : item.substr(eq + 1);
        if (file.empty() || (eq != std::string::npos && device.empty()))
            throw InputError("--host: expected FILE or DEVICE=FILE (e.g. 'NVIDIA H200=host.json'), got '" + item + "'");
        if (m.count(device))
            throw InputError("--host: two hosts for " + (device.empty() ? std::string("every device") : "'" + device + "'"));
        m.emplace(device, load_eager_host(file));
    }
    return m;
}

// --term NAME=VALUE: a fitted term's value instead of its compiled-in one (the start of any refit).
std::map<std::string, double> parse_terms(const std::vector<std::string>& items) {
    std::map<std::string, double> m;
    for (const std::string& item : items) {
        const std::size_t eq = item.find('=');
        std::string names;
        const FittedTerm* term = nullptr;
        for (const FittedTerm& t : fitted_terms()) {
            names += (names.empty() ? "" : ", ") + std::string(t.name);
            if (eq != std::string::npos && item.compare(0, eq, t.name) == 0 && t.name.size() == eq) term = &t;
        }
        if (eq == std::string::npos) throw InputError("--term: expected NAME=VALUE (e.g. 'simt_gemm_efficiency=0.9'), got '" + item + "'");
        if (term == nullptr) throw InputError("--term: unknown term '" + item.substr(0, eq) + "' (fitted terms: " + names + ")");
        const std::string text = item.substr(eq + 1);
        const std::optional<double> v = whole_number(text);
        if (!v || *v < term->lo || *v > term->hi)
            throw InputError(
                fmt::format("--term {}: '{}' is not a number in [{:g}, {:g}], the term's range", term->name, text, term->lo, term->hi));
        m[std::string(term->name)] = *v;
    }
    return m;
}

// An output never overwrites an input (docs/ARCHITECTURE.md, "Errors").
}  // namespace

void add_validate(CLI::App& app) {
    auto* cmd = app.add_subcommand("validate", "predicted vs measured op latencies and steps per GPU and family; leave-one-GPU-out refits");
    auto paths = std::make_shared<std::vector<std::string>>();
    auto hw_map = std::make_shared<std::vector<std::string>>();
    auto hosts = std::make_shared<std::vector<std::string>>();
    auto configs = std::make_shared<std::string>();
    auto loo = std::make_shared<std::string>();
    auto fit = std::make_shared<bool>(false);
    auto families = std::make_shared<std::vector<std::string>>();
    auto max_rows = std::make_shared<std::size_t>(0);
    auto threads = std::make_shared<unsigned>(0);
    auto out = std::make_shared<std::string>();
    auto html = std::make_shared<std::string>();
    auto csv = std::make_shared<std::string>();
    auto quiet = std::make_shared<bool>(false);
    auto terms = std::make_shared<std::vector<std::string>>();
    auto sweeps = std::make_shared<int>(ValidateOptions{}.sweeps);
    auto fit_start = std::make_shared<std::string>();
    cmd->add_option("PATH", *paths,
                    "a directory in the public layout (all its CSVs), one CSV (per-op or end_to_end.csv), or a `roofline measure` JSON")
        ->required();
    cmd->add_option("--hw-map", *hw_map,
                    "DEVICE=SPEC: predict the rows of this device on this hardware spec (built-in name or file); repeatable");
    cmd->add_option("--host", *hosts,
                    "[DEVICE=]FILE: the eager host that ran these rows (a roofline-host/1 file from measure/host_probe.py) instead of "
                    "the fitted host terms, for one device or every device; repeatable");
    cmd->add_option("--configs", *configs,
                    "directory of the end-to-end models' configs (<model>.json); default: configs/ beside end_to_end.csv");
    cmd->add_option("--leave-one-out", *loo, "gpu: refit the fitted terms without each fitting GPU and predict it with them")
        ->check(CLI::IsMember({"gpu"}));
    cmd->add_flag("--fit", *fit, "also fit the terms on every fitting GPU and print the values (to set the compiled-in defaults from)");
    cmd->add_option("--families", *families,
                    "only these families (matmul, conv, softmax, layernorm, elementwise, other, e2e) or ops (linear, bmm, ...)")
        ->delimiter(',');
    cmd->add_option("--max-rows", *max_rows, "at most N rows per file and device, evenly spaced (deterministic)");
    cmd->add_option("--threads", *threads, "prediction threads (default: all cores); the results do not depend on it");
    cmd->add_option("-o,--output", *out, "write the validation (schema roofline-validation/1) to this file");
    cmd->add_option("--html", *html, "also write a self-contained HTML report (inline SVG, no network) to this file");
    cmd->add_option("--term", *terms,
                    "NAME=VALUE: predict with this value of a fitted term instead of the compiled-in one (and start refits from "
                    "it); repeatable");
    cmd->add_option("--sweeps", *sweeps,
                    "coordinate-descent sweeps over the fitted terms (at most; default: " + std::to_string(ValidateOptions{}.sweeps) + ")")
        ->check(CLI::Range(1, 100));
    cmd->add_option("--fit-start", *fit_start,
                    "where fits start: mid (each term at the geometric middle of its search range; default for the leave-one-out folds, "
                    "whose start must hold nothing of the GPU left out) or compiled (the compiled-in values, the all-GPU fit; default for "
                    "--fit); --term overrides a term")
        ->check(CLI::IsMember({"compiled", "mid"}));
    cmd->add_option("--csv", *csv, "also write every case (measured, predicted, error) as CSV to this file");
    cmd->add_flag("-q,--quiet", *quiet, "print no tables");
    cmd->footer(
        "Example: roofline validate tests/data/public/neusight --leave-one-out gpu --html validation.html\n"
        "         roofline validate tests/data/public/h100-torch-2026-11-24 --configs tests/data/public/neusight/configs\n"
        "Exit 2 for a bad file (missing column, non-numeric value, non-positive latency, unknown device), naming the file and row.\n");
    cmd->callback([=] {
        ValidateOptions opt;
        opt.hw_map = parse_hw_map(*hw_map);
        opt.hosts = parse_hosts(*hosts);
        opt.configs_dir = *configs;
        opt.leave_one_out = *loo == "gpu";
        opt.fit = *fit;
        opt.families = *families;
        opt.max_rows = *max_rows;
        opt.threads = *threads;
        opt.term_values = parse_terms(*terms);
        opt.sweeps = *sweeps;
        if (!fit_start->empty()) opt.fit_start = *fit_start == "mid" ? ValidateOptions::FitStart::mid : ValidateOptions::FitStart::compiled;
        check_output_targets({{"-o", *out}, {"--html", *html}, {"--csv", *csv}}, *paths);
        std::vector<ValidationCase> cases;
        const auto doc = run_validation(load_measurements(*paths, opt), opt, &cases);
        const std::string json = out->empty() ? "" : doc.dump(2) + "\n";  // every text before the first write
        const std::string page = html->empty() ? "" : html_validation(doc);
        const std::string table = csv->empty() ? "" : validation_cases_csv(cases);
        if (!*quiet) print(render_validation(doc));
        OutputFiles files;
        if (!out->empty()) files.push_back({"validation", *out, json});
        if (!html->empty()) files.push_back({"HTML report", *html, page});
        if (!csv->empty()) files.push_back({"cases", *csv, table});
        const std::string written = write_outputs(files);
        if (!*quiet) print(written);
    });
}

}  // namespace roofline::cli
