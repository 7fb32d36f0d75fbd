#pragma once
// Predicted vs measured: joins an analyze report (roofline-report/1) and a measurement
// (roofline-measurement/1) of the same graph by node name and says, per kernel and overall, how
// far the model is off and which term it got wrong. Works offline on saved files.
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

namespace roofline {

struct CompareOptions {
    std::size_t worst = 10;  // how many worst offenders to list
    // Nodes whose measured time is below this are left out of the error statistics (but kept in
    // the per-kernel list): a 2 us kernel measured to +-0.3 us says little about the model.
    double min_measured_s = 0;
};

// The "roofline-comparison/1" document. Throws InputError naming the file and JSON path when a
// document is not what it should be or the two describe different graphs.
nlohmann::ordered_json compare_documents(const nlohmann::json& predicted, const std::string& predicted_origin,
                                         const nlohmann::json& measured, const std::string& measured_origin,
                                         const CompareOptions& opt = {});

// A terminal summary: statistics, the worst offenders and their wrong term.
std::string render_comparison(const nlohmann::ordered_json& cmp, std::size_t top);

}  // namespace roofline
