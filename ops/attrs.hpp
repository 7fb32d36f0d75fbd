#pragma once
// Op attributes: a small typed map filled by the model loaders. Each op rule reads what it needs
// through the typed getters, which throw InputError naming the attribute and the expected type.
#include <cstdint>
#include <string_view>
#include <utility>
#include <string>
#include <variant>
#include <vector>

namespace roofline {

using AttrValue = std::variant<bool, std::int64_t, double, std::string, std::vector<std::int64_t>>;

class Attrs {
public:
    using Entry = std::pair<std::string, AttrValue>;
    void set(const std::string& name, AttrValue v);
    bool has(std::string_view name) const { return find(name) != nullptr; }
    const AttrValue* find(std::string_view name) const;  // nullptr when absent
    // Every attribute, sorted by name (reports and signatures list them in this order).
    const std::vector<Entry>& all() const { return values_; }

    std::int64_t get_int(const std::string& name, std::int64_t fallback) const;
    std::int64_t require_int(const std::string& name) const;
    double get_double(const std::string& name, double fallback) const;  // ints convert
    bool get_bool(const std::string& name, bool fallback) const;
    std::string get_string(const std::string& name, const std::string& fallback) const;
    std::vector<std::int64_t> get_ints(const std::string& name, const std::vector<std::int64_t>& fallback) const;
    std::vector<std::int64_t> require_ints(const std::string& name) const;

    bool operator==(const Attrs&) const = default;

private:
    // A sorted flat list, not a map: a node has a handful of attributes, and copying a node's
    // attributes (autodiff, recomputation, fusion) is then one allocation (issue #20).
    std::vector<Entry> values_;
};

}  // namespace roofline
