#include "ops/attrs.hpp"

#include "ops/error.hpp"

namespace roofline {
namespace {

[[noreturn]] void wrong_type(const std::string& name, const char* expected) {
    throw InputError("attribute '" + name + "' must be " + expected);
}

}  // namespace

std::int64_t Attrs::get_int(const std::string& name, std::int64_t fallback) const {
    auto it = values_.find(name);
    if (it == values_.end()) return fallback;
    if (auto* v = std::get_if<std::int64_t>(&it->second)) return *v;
    wrong_type(name, "an integer");
}

std::int64_t Attrs::require_int(const std::string& name) const {
    if (!has(name)) throw InputError("missing attribute '" + name + "' (an integer)");
    return get_int(name, 0);
}

double Attrs::get_double(const std::string& name, double fallback) const {
    auto it = values_.find(name);
    if (it == values_.end()) return fallback;
    if (auto* v = std::get_if<double>(&it->second)) return *v;
    if (auto* v = std::get_if<std::int64_t>(&it->second)) return static_cast<double>(*v);
    wrong_type(name, "a number");
}

bool Attrs::get_bool(const std::string& name, bool fallback) const {
    auto it = values_.find(name);
    if (it == values_.end()) return fallback;
    if (auto* v = std::get_if<bool>(&it->second)) return *v;
    wrong_type(name, "true or false");
}

std::string Attrs::get_string(const std::string& name, const std::string& fallback) const {
    auto it = values_.find(name);
    if (it == values_.end()) return fallback;
    if (auto* v = std::get_if<std::string>(&it->second)) return *v;
    wrong_type(name, "a string");
}

std::vector<std::int64_t> Attrs::get_ints(const std::string& name, const std::vector<std::int64_t>& fallback) const {
    auto it = values_.find(name);
    if (it == values_.end()) return fallback;
    if (auto* v = std::get_if<std::vector<std::int64_t>>(&it->second)) return *v;
    wrong_type(name, "a list of integers");
}

std::vector<std::int64_t> Attrs::require_ints(const std::string& name) const {
    if (!has(name)) throw InputError("missing attribute '" + name + "' (a list of integers)");
    return get_ints(name, {});
}

}  // namespace roofline
