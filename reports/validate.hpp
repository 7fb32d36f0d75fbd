#pragma once
// `roofline validate`: the model against measurements it can be wrong about (issue #15; docs/ARCHITECTURE.md,
// "Predictions you can trust"). Three kinds of input:
//   * per-op latency CSVs in the public NeuSight layout (linear, bmm, conv, softmax, ln, add, mul,
//     div, pow, gelu, relu, tanh: OPName, Latency_ms, Device and the shape columns): each row is
//     one op built as a tiny graph (fp32, inference, eager runtime) and predicted as that op timed
//     alone in a loop of calls (single_call_latency_s: its modelled kernels and the host's
//     dispatch of the call);
//   * end_to_end.csv (device, model, mode, seq, batch, e2e_ms): a Hugging Face config
//     (configs/<model>.json) at that batch and sequence length, predicted as the schedule's step;
//   * a `roofline measure` JSON: per kernel and step, joined by reports/compare.
// Errors are predicted/measured - 1, summarised per GPU and op, per GPU and family and end to end
// per GPU (n, median and p90 of |error|, median signed error), with the threshold verdicts of the
// issue. Every number says which set it belongs to: "fit" (the GPUs the compiled-in fitted terms
// were fitted on), "validation" (a GPU left out of the fit: --leave-one-out gpu) or "held-out"
// (GPUs and runs never used for fitting). Same input, same bytes out ("roofline-validation/1").
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "model/graph.hpp"
#include "sim/eager_host.hpp"

namespace roofline {

struct ValidateOptions {
    // Device name (as in the files; '_' and ' ' are the same) -> hardware spec (built-in name or
    // file): extends or overrides the built-in table (validate_device_table()).
    std::map<std::string, std::string> hw_map;
    std::string configs_dir;            // end-to-end configs; empty: configs/ beside each end_to_end.csv
    bool leave_one_out = false;         // refit the fitted terms without each GPU, predict it with them
    bool fit = false;                   // also fit the terms on every fitting GPU and report the values
    std::vector<std::string> families;  // only these families or op names (empty: all)
    std::size_t max_rows = 0;           // per file and device, an evenly spaced deterministic sample (0: all)
    // The GPUs whose cases may be fitted on (device names); the others are held out. Default: the
    // five public fitting GPUs of tests/data/public/neusight.
    std::vector<std::string> fitting_gpus = default_fitting_gpus();
    unsigned threads = 0;  // prediction threads (0: hardware concurrency); results do not depend on it
    // Coordinate-descent sweeps over the fitted terms (at most; a sweep that moves no term by 1%
    // ends the fit): 8 reach lower training objectives than 2 from the mid-range start
    // (docs/ACCURACY.md, "How much the fit's start moves the validation figures").
    int sweeps = 8;
    // Where the fits start (--fit-start): the compiled-in values (the all-GPU fit), or each term's
    // geometric middle of its search range (nothing learned from any GPU); a term_values entry
    // starts that term at its value. Unset: mid for the leave-one-out folds, whose start must hold
    // nothing of the GPU left out (the compiled-in values hold all five), and compiled for --fit,
    // which refines the compiled-in values on every fitting GPU.
    enum class FitStart { compiled, mid };
    std::optional<FitStart> fit_start;
    FitStart fold_start() const { return fit_start.value_or(FitStart::mid); }
    FitStart all_gpu_start() const { return fit_start.value_or(FitStart::compiled); }
    // Cases per (GPU, op) a fit uses, evenly spaced (0: all): the objective is a median, which a
    // hundred cases estimate to a few percent; the left-out GPU is always predicted on all its cases.
    std::size_t fit_sample = 100;
    // End-to-end cases per GPU a fit uses, evenly spaced (0: all): each is a whole model's
    // analysis, re-run at every step of the search.
    std::size_t fit_sample_e2e = 4;
    std::size_t worst = 5;  // worst cases listed per (GPU, family)
    // Values of fitted terms (sim/fitted.hpp, by name) to predict with instead of the compiled-in
    // defaults; fits start from them.
    std::map<std::string, double> term_values;
    // Eager hosts (sim/eager_host.hpp) by device name: that device's cases take their eager host
    // terms from its host instead of the fitted terms (a fit then leaves them alone); the key ""
    // is every device without one of its own.
    std::map<std::string, EagerHost> hosts;

    static std::vector<std::string> default_fitting_gpus();
};

// The built-in device -> spec table.
const std::map<std::string, std::string>& validate_device_table();

// One measured case and, after run_validation, its prediction.
struct ValidationCase {
    std::string file;       // the input it came from
    std::int64_t row = 0;   // data row (1 = the line after the header; a measure JSON's node index + 1; 0: its step)
    std::int64_t line = 0;  // CSV: the line the row starts on
    std::string gpu;        // device name, '_' read as ' '
    std::string spec;       // the hardware spec it is predicted on
    std::string op;         // OPName ("linear", ...), a measured node's op kind, or "e2e"
    std::string family;     // matmul, conv, softmax, layernorm, elementwise, other, e2e
    std::string shape;      // "B=1 M=237 N=1950 K=20", the model and its dims, or the node name
    double measured_s = 0;
    double predicted_s = 0;          // 0 until predicted (or when it could not be)
    std::string set;                 // fit, validation, held-out
    std::string source = "pytorch";  // pytorch (a latency CSV: eager PyTorch) or measure (a `roofline measure` JSON)
    std::string error;               // why it could not be predicted (end-to-end models that do not load)
    std::string model_kernel;        // op cases: the launch the model assumed (describe_launch), for --csv
    // How it is predicted (internal to validate.cpp).
    std::vector<std::int64_t> dims;  // op cases: the shape columns in file order
    std::string config;              // end-to-end: the config file
    std::string mode;                // end-to-end: inf or train
    bool fixed = false;              // measure JSON: predicted once by compare, never refitted
};

struct MeasurementSet {
    std::vector<ValidationCase> cases;
    struct Input {
        std::string file, kind;  // kind: op-csv, e2e-csv, measurement
        std::size_t rows = 0;    // rows read (before --max-rows and --families)
    };
    std::vector<Input> inputs;
    std::map<std::string, std::size_t> skipped;  // op -> rows left out, with the reason below
    std::map<std::string, std::string> skip_reason;
};

// Reads the paths: a directory in the public layout (all its CSVs), one CSV, or a measure JSON.
// Throws InputError naming the file and row for a missing column, a non-numeric or non-positive
// value, an unknown op or an unknown device.
MeasurementSet load_measurements(const std::vector<std::string>& paths, const ValidateOptions& opt);

// The graph of an LLM inference step a `roofline measure --phase` file (`model`: its "model"
// object, with the "inference" record; `file`: its path, for errors and relative model files)
// ran, rebuilt as `analyze --phase` builds it.
Graph measured_inference_graph(const nlohmann::json& model, const std::string& file);

// Predicts every case with the compiled-in fitted terms (or opt.term_values): fills predicted_s.
// Throws InputError naming the file and row of an op case the model cannot build.
void predict_measurements(MeasurementSet& set, const ValidateOptions& opt);

// Predicts every case (and refits per GPU with leave_one_out) and returns the
// "roofline-validation/1" document (docs/report-schema.md).
// With `predicted`, the cases are handed back with their predictions (validation_cases_csv).
nlohmann::ordered_json run_validation(MeasurementSet set, const ValidateOptions& opt, std::vector<ValidationCase>* predicted = nullptr);

// Every case as a CSV row (docs/report-schema.md, "validate --csv"): file, row, gpu, spec, set,
// source, op, family, shape, measured_s, predicted_s, error_pct; in input order.
std::string validation_cases_csv(const std::vector<ValidationCase>& cases);

// A case's shape as the reports print it: ValidationCase::shape, or an op row's shape columns
// ("B=1 M=237 N=1950 K=20"; a conv row's optional columns where they differ from the defaults).
std::string validation_case_shape(const ValidationCase& c);

// The terminal text: tables per GPU x family, end to end, the fit, the verdicts, the worst cases.
std::string render_validation(const nlohmann::ordered_json& doc);

// The self-contained HTML page (reports/html_validate.cpp): scatter per family on log axes with
// y = x and the +-10% band, points coloured by GPU, and the tables.
std::string html_validation(const nlohmann::ordered_json& doc);

// Quantile q of v by linear interpolation between order statistics (numpy's default); 0 if empty.
double validation_quantile(std::vector<double> v, double q);

}  // namespace roofline
