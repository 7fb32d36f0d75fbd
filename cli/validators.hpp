#pragma once
// Option checks with messages a user can act on. CLI11's PositiveNumber and NonNegativeNumber say
// "Value 0 not in range 0.000000 to 1797693134862315708145274237317...": these say what was
// expected and what was given ("--batch: expected a positive number, got '0'"), and refuse NaN.
#include <CLI/CLI.hpp>
#include <cmath>
#include <optional>
#include <string>

#include "ops/text.hpp"

namespace roofline::cli {

namespace detail {
inline CLI::Validator number_at_least(bool zero_allowed) {
    return CLI::Validator(
        [zero_allowed](std::string& text) -> std::string {
            const std::optional<double> v = whole_number(text);
            if (v && (zero_allowed ? *v >= 0 : *v > 0)) return {};
            return std::string("expected a ") + (zero_allowed ? "non-negative" : "positive") + " number, got '" + text + "'";
        },
        zero_allowed ? "NONNEGATIVE" : "POSITIVE");
}
}  // namespace detail

inline const CLI::Validator kPositive = detail::number_at_least(false);
inline const CLI::Validator kNonNegative = detail::number_at_least(true);

}  // namespace roofline::cli
