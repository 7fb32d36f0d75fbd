#pragma once
// From microbenchmark results (roofline-calibration/1, written by `roofline calibrate`) to a
// hardware spec: the measured values replace the datasheet ones of a base spec, each citing the
// measurement (chip, driver, date, method); everything not measured (capacities, occupancy
// limits, links) is kept with its original source.
#include <nlohmann/json.hpp>
#include <string>

namespace roofline {

// The built-in spec that describes a CUDA device of this name ("NVIDIA H100 80GB HBM3" ->
// "h100-sxm"); throws InputError listing the built-ins when none matches (then pass --base).
std::string builtin_for_device(const std::string& device_name);

// The raw JSON of a built-in spec or a spec file (what --hw accepts).
nlohmann::json resolve_hardware_json(const std::string& arg);

// base with the calibration's measured values. Throws InputError when the calibration document
// is malformed.
nlohmann::json calibrated_spec(const nlohmann::json& base, const nlohmann::json& calibration);

// A table: quantity, base value, measured value, ratio.
std::string render_calibration(const nlohmann::json& calibration, const std::string& base_name);

}  // namespace roofline
