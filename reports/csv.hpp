#pragma once
// Per-kernel CSV of any roofline JSON document (RFC 4180: comma-separated, quoted where needed,
// a header row, "\n" line ends). Columns per schema are listed in docs/report-schema.md:
//   roofline-report/1       one row per op, execution order
//   roofline-comparison/1   one row per compared kernel (node)
//   roofline-measurement/1  one row per measured node
//   roofline-plan/1         one row per option, best first
// Numbers are written with 9 significant digits; absent values are empty cells. Same document,
// same bytes. Throws InputError for a document of another schema.
#include <nlohmann/json.hpp>
#include <string>

namespace roofline {

std::string csv_report(const nlohmann::ordered_json& doc);

// One RFC 4180 cell: the text as it is, or quoted ("" for a quote) where it holds , " or a line end.
std::string csv_quote(const std::string& s);

}  // namespace roofline
