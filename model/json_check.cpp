#include "model/json_check.hpp"

#include <nlohmann/json.hpp>

#include "ops/error.hpp"

namespace roofline {

void json_fail(const std::string& origin, const std::string& path, const std::string& msg) {
    throw InputError(origin + ": " + (path.empty() ? "/" : path) + ": " + msg);
}

void json_only_keys(const nlohmann::json& obj, const std::set<std::string>& allowed, const std::string& origin, const std::string& path) {
    for (const auto& [k, v] : obj.items()) {
        if (!allowed.count(k)) {
            std::string list;
            for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
            json_fail(origin, path + "/" + k, "unknown key '" + k + "' (expected one of: " + list + ")");
        }
    }
}

}  // namespace roofline
