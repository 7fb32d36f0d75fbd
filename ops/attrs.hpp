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

    // Names as views: rules name their attributes with literals, read a node at a time.
    std::int64_t get_int(std::string_view name, std::int64_t fallback) const;
    std::int64_t require_int(std::string_view name) const;
    double get_double(std::string_view name, double fallback) const;  // ints convert
    bool get_bool(std::string_view name, bool fallback) const;
    std::string get_string(std::string_view name, const std::string& fallback) const;
    std::vector<std::int64_t> get_ints(std::string_view name, const std::vector<std::int64_t>& fallback) const;
    std::vector<std::int64_t> require_ints(std::string_view name) const;

    bool operator==(const Attrs&) const = default;

private:
    // A sorted flat list, not a map: a node has a handful of attributes, and copying a node's
    // attributes (autodiff, recomputation, fusion) is then one allocation (issue #20).
    std::vector<Entry> values_;
};

}  // namespace roofline
