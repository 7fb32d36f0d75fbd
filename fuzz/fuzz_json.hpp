#pragma once
// The fuzz targets' common first step: arbitrary bytes as a JSON document, read as read_json_file
// reads a file (duplicate keys and numbers beyond double's range refused), or nothing when that is
// an InputError (the targets test what comes after).
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "model/model_json.hpp"
#include "ops/error.hpp"

inline std::optional<nlohmann::json> fuzz_json(const std::uint8_t* data, std::size_t size) {
    try {
        return roofline::parse_json_text(std::string(reinterpret_cast<const char*>(data), size), "fuzz.json");
    } catch (const roofline::InputError&) {
        return std::nullopt;
    }
}
