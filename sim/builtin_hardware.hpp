#pragma once
// The hardware specs under sim/hardware/, embedded into the library at build time by
// cmake/embed_files.cmake so that the roofline binary works from any directory.
#include <span>
#include <string_view>

namespace roofline {

struct BuiltinFile {
    std::string_view name;  // file stem, e.g. "h100-sxm"
    std::string_view text;
};

std::span<const BuiltinFile> builtin_hardware_files();

}  // namespace roofline
