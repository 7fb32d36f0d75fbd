#include <nlohmann/json.hpp>

#include "ops/error.hpp"
#include "sim/builtin_hardware.hpp"

namespace roofline {

std::vector<std::string> builtin_names(std::span<const BuiltinFile> files) {
    std::vector<std::string> names;
    for (const auto& f : files) names.emplace_back(f.name);
    return names;
}

nlohmann::json builtin_json(std::span<const BuiltinFile> files, const std::string& name, const std::string& dir, const std::string& what) {
    for (const auto& f : files) {
        if (f.name != name) continue;
        try {
            return nlohmann::json::parse(f.text);
        } catch (const nlohmann::json::parse_error& e) {
            throw InputError("sim/" + dir + "/" + name + ".json: malformed JSON: " + e.what());
        }
    }
    std::string list;
    for (const auto& n : builtin_names(files)) list += (list.empty() ? "" : ", ") + n;
    throw InputError("unknown " + what + " '" + name + "' (built in: " + list + "; or pass a " + (what == "hardware" ? "spec" : what) +
                     " file path)");
}

}  // namespace roofline
