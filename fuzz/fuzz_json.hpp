#pragma once
// The fuzz targets' common first step: arbitrary bytes as a JSON document, or nothing when they are
// not JSON (read_json_file turns that into an InputError; the targets test what comes after).
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

inline std::optional<nlohmann::json> fuzz_json(const std::uint8_t* data, std::size_t size) {
    try {
        return nlohmann::json::parse(std::string(reinterpret_cast<const char*>(data), size));
    } catch (const nlohmann::json::exception&) {
        return std::nullopt;
    }
}
