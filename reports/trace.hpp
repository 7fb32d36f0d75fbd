#pragma once
// Chrome trace JSON (Trace Event Format: Perfetto, chrome://tracing) from a roofline JSON document:
//   roofline-report/1       the schedule (ops[].schedule): one thread per stream, as analyze --trace
//   roofline-comparison/1   two processes, "predicted" and "measured", each kernel laid end to end
//                           in execution order (a comparison has durations, not start times)
//   roofline-measurement/1  every node's kernels end to end at their median times
// Times in microseconds. Throws InputError for other documents (a plan has no schedule) or a
// report written before ops[].schedule existed.
#include <nlohmann/json.hpp>
#include <string>

namespace roofline {

std::string trace_report(const nlohmann::ordered_json& doc);

}  // namespace roofline
