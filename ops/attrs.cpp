#include "ops/attrs.hpp"

#include <algorithm>

#include "ops/error.hpp"

namespace roofline {
namespace {

[[noreturn]] void wrong_type(std::string_view name, const char* expected) {
    throw InputError("attribute '" + std::string(name) + "' must be " + expected);
}

}  // namespace

void Attrs::set(const std::string& name, AttrValue v) {
    auto it = std::lower_bound(values_.begin(), values_.end(), name, [](const Entry& e, const std::string& n) { return e.first < n; });
    if (it != values_.end() && it->first == name)
        it->second = std::move(v);
    else
        values_.insert(it, Entry{name, std::move(v)});
}

const AttrValue* Attrs::find(std::string_view name) const {
    auto it = std::lower_bound(values_.begin(), values_.end(), name, [](const Entry& e, std::string_view n) { return e.first < n; });
    return it != values_.end() && it->first == name ? &it->second : nullptr;
}

std::int64_t Attrs::get_int(std::string_view name, std::int64_t fallback) const {
    const AttrValue* it = find(name);
    if (it == nullptr) return fallback;
    if (auto* v = std::get_if<std::int64_t>(it)) return *v;
    wrong_type(name, "an integer");
}

std::int64_t Attrs::require_int(std::string_view name) const {
    if (!has(name)) throw InputError("missing attribute '" + std::string(name) + "' (an integer)");
    return get_int(name, 0);
}

double Attrs::get_double(std::string_view name, double fallback) const {
    const AttrValue* it = find(name);
    if (it == nullptr) return fallback;
    if (auto* v = std::get_if<double>(it)) return *v;
    if (auto* v = std::get_if<std::int64_t>(it)) return static_cast<double>(*v);
    wrong_type(name, "a number");
}

bool Attrs::get_bool(std::string_view name, bool fallback) const {
    const AttrValue* it = find(name);
    if (it == nullptr) return fallback;
    if (auto* v = std::get_if<bool>(it)) return *v;
    wrong_type(name, "true or false");
}

std::string Attrs::get_string(std::string_view name, const std::string& fallback) const {
    const AttrValue* it = find(name);
    if (it == nullptr) return fallback;
    if (auto* v = std::get_if<std::string>(it)) return *v;
    wrong_type(name, "a string");
}

std::vector<std::int64_t> Attrs::get_ints(std::string_view name, const std::vector<std::int64_t>& fallback) const {
    const AttrValue* it = find(name);
    if (it == nullptr) return fallback;
    if (auto* v = std::get_if<std::vector<std::int64_t>>(it)) return *v;
    wrong_type(name, "a list of integers");
}

std::vector<std::int64_t> Attrs::require_ints(std::string_view name) const {
    if (!has(name)) throw InputError("missing attribute '" + std::string(name) + "' (a list of integers)");
    return get_ints(name, {});
}

}  // namespace roofline
