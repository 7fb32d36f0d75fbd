#pragma once
// Validation helpers shared by every JSON reader (model files, hardware specs): errors name the
// document and the JSON path ("model.json: /nodes/3/op: unknown op ...").
#include <nlohmann/json_fwd.hpp>
#include <set>
#include <string>

namespace roofline {

[[noreturn]] void json_fail(const std::string& origin, const std::string& path, const std::string& msg);
// Rejects any key of obj not in allowed, listing the allowed ones.
void json_only_keys(const nlohmann::json& obj, const std::set<std::string>& allowed, const std::string& origin, const std::string& path);

}  // namespace roofline
