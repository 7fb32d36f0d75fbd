#pragma once
// Numbers in command-line text.
#include <cmath>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

namespace roofline {

// The number text starts with (std::stod's reading) and the characters it took; {0, 0} when it
// starts with none.
inline std::pair<double, std::size_t> leading_number(const std::string& text) {
    std::size_t used = 0;
    double value = 0;
    try {
        value = std::stod(text, &used);
    } catch (const std::exception&) {
        return {0.0, 0};
    }
    return {value, used};
}

// The whole of text as a finite number, or nothing.
inline std::optional<double> whole_number(const std::string& text) {
    const auto [value, used] = leading_number(text);
    if (used == 0 || used != text.size() || !std::isfinite(value)) return std::nullopt;
    return value;
}

}  // namespace roofline
