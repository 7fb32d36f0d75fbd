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
        const std::string origin = "sim/" + dir + "/" + name + ".json";
        nlohmann::json doc;
        try {
            doc = nlohmann::json::parse(f.text);
        } catch (const nlohmann::json::parse_error& e) {
            throw InputError(origin + ": malformed JSON: " + e.what());
        }
        // A built-in is known by its file name: the document must say the same.
        const auto n = doc.is_object() ? doc.find("name") : doc.end();
        if (n != doc.end() && *n != name) throw InputError(origin + ": /name: expected \"" + name + "\" (the file name)");
        return doc;
    }
    std::string list;
    for (const auto& n : builtin_names(files)) list += (list.empty() ? "" : ", ") + n;
    throw InputError("unknown " + what + " '" + name + "' (built in: " + list + "; or pass a " + (what == "hardware" ? "spec" : what) +
                     " file path)");
}

}  // namespace roofline
