#pragma once
// The hardware specs under sim/hardware/ and the clusters under sim/clusters/, embedded into the library at build time by
// cmake/embed_files.cmake so that the roofline binary works from any directory.
#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace roofline {

struct BuiltinFile {
    std::string_view name;  // file stem, e.g. "h100-sxm"
    std::string_view text;
};

std::span<const BuiltinFile> builtin_hardware_files();
// The clusters under sim/clusters/ (sim/cluster.hpp), embedded the same way.
std::span<const BuiltinFile> builtin_cluster_files();

// The names of a set of embedded files.
std::vector<std::string> builtin_names(std::span<const BuiltinFile> files);
// The embedded file `name` of `files` (from sim/<dir>/), parsed; InputError "unknown <what> 'name'
// (built in: ...)" when there is none, or naming sim/<dir>/<name>.json when it is not JSON or its
// /name is not the file name.
nlohmann::json builtin_json(std::span<const BuiltinFile> files, const std::string& name, const std::string& dir, const std::string& what);

}  // namespace roofline
