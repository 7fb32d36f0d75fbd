// The roofline Python module's native part, roofline._roofline (issue #22). Everything the command
// line does runs here in-process through cli::run_unchecked, so Python gets the same commands, the
// same options and the same messages; the library's errors become Python exceptions
// (roofline.InputError, a ValueError, and roofline.DeviceUnavailable, a RuntimeError) carrying the
// message the command line prints, with the file, JSON path or node it names. The GIL is released
// while a command runs. python/roofline/ builds the Python API (analyze, plan, Report, ...) on it.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "cli/run.hpp"
#include "ops/error.hpp"
#include "reports/csv.hpp"
#include "reports/html.hpp"
#include "reports/trace.hpp"
#include "sim/cluster.hpp"
#include "sim/hardware.hpp"

namespace py = pybind11;

namespace {

// The command line keeps its state in one place per process (cli::outcome()): one command at a
// time, whichever Python thread asks.
std::mutex& cli_mutex() {
    static std::mutex m;
    return m;
}

// A null-terminated argv pointing into `owned`.
std::vector<char*> argv_of(std::vector<std::string>& owned) {
    std::vector<char*> argv;
    for (std::string& a : owned) argv.push_back(a.data());
    argv.push_back(nullptr);
    return argv;
}

// Runs `roofline ARGS...` (args without the program name); returns (exit code, standard output).
std::pair<int, std::string> run_cli(const std::vector<std::string>& args) {
    std::vector<std::string> owned{"roofline"};
    owned.insert(owned.end(), args.begin(), args.end());
    std::vector<char*> argv = argv_of(owned);
    std::string captured;
    int code = 0;
    {
        py::gil_scoped_release release;
        const std::lock_guard<std::mutex> lock(cli_mutex());
        code = roofline::cli::run_unchecked(static_cast<int>(owned.size()), argv.data(), &captured);
    }
    return {code, captured};
}

// The command line as the `roofline` executable runs it, writing to this process's standard
// output and error; returns the exit code (python -m roofline).
int main_cli(const std::vector<std::string>& argv) {
    std::vector<std::string> owned = argv;
    if (owned.empty()) owned.emplace_back("roofline");
    std::vector<char*> ptrs = argv_of(owned);
    py::gil_scoped_release release;
    const std::lock_guard<std::mutex> lock(cli_mutex());
    return roofline::cli::run(static_cast<int>(owned.size()), ptrs.data());
}

// A JSON document's HTML, CSV or Chrome-trace view, as --html, --csv and --trace write it.
std::string render(const std::string& json_text, const std::string& view) {
    nlohmann::ordered_json doc;
    try {
        doc = nlohmann::ordered_json::parse(json_text);
    } catch (const nlohmann::json::parse_error& e) {
        throw roofline::InputError(std::string("report: not JSON: ") + e.what());
    }
    py::gil_scoped_release release;
    if (view == "html") return roofline::html_report(doc);
    if (view == "csv") return roofline::csv_report(doc);
    if (view == "trace") return roofline::trace_report(doc);
    throw roofline::InputError("render: unknown view '" + view + "' (html, csv, trace)");
}

}  // namespace

PYBIND11_MODULE(_roofline, m) {
    m.doc() = "native part of the roofline package: the command line in-process, and the report views";
    // Bad input (a ValueError) and no usable GPU (a RuntimeError), each with the library's message.
    py::register_exception<roofline::InputError>(m, "InputError", PyExc_ValueError);
    py::register_exception<roofline::DeviceUnavailable>(m, "DeviceUnavailable", PyExc_RuntimeError);
    m.def("run_cli", &run_cli, py::arg("args"),
          "Runs `roofline ARGS...` in this process; returns (exit code, standard output). Errors raise.");
    m.def("main", &main_cli, py::arg("argv"), "The roofline command line on this process's standard output; returns the exit code.");
    m.def("render", &render, py::arg("json_text"), py::arg("view"), "The html, csv or trace view of a report's JSON text.");
    m.def(
        "hardware_names", [] { return roofline::builtin_hardware_names(); }, "The built-in hardware specs.");
    m.def(
        "cluster_names", [] { return roofline::builtin_cluster_names(); }, "The built-in clusters.");
    m.attr("version") = ROOFLINE_VERSION;
}
