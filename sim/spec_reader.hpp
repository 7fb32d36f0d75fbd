#pragma once
// Reading a sourced spec document (hardware specs, clusters): every number is {"value", "source",
// "note"?} with its source a key of the document's /sources; errors name the document and the JSON
// path (model/json_check.hpp).
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "model/json_check.hpp"
#include "ops/dtype.hpp"
#include "sim/hardware.hpp"

namespace roofline {

class SpecReader {
    using json = nlohmann::json;

public:
    SpecReader(const json& doc, std::string origin) : doc_(doc), origin_(std::move(origin)) {}

    [[noreturn]] void fail(const std::string& path, const std::string& msg) const { json_fail(origin_, path, msg); }

    void only_keys(const json& obj, const std::set<std::string>& allowed, const std::string& path) const {
        json_only_keys(obj, allowed, origin_, path);
    }

    const json& member(const json& obj, const std::string& key, const std::string& path) const {
        auto it = obj.find(key);
        if (it == obj.end()) fail(path, "missing key '" + key + "'");
        return *it;
    }

    const json& object(const json& obj, const std::string& key, const std::string& path) const {
        const json& v = member(obj, key, path);
        if (!v.is_object()) fail(path + "/" + key, std::string("expected an object, got ") + v.type_name());
        return v;
    }

    std::string string(const json& obj, const std::string& key, const std::string& path) const {
        const json& v = member(obj, key, path);
        if (!v.is_string() || v.get<std::string>().empty()) fail(path + "/" + key, "expected a non-empty string");
        return v.get<std::string>();
    }

    // {"value": x > 0, "source": key of sources, "note"?}
    ReadSourced sourced(const json& obj, const std::string& key, const std::string& path, bool integer = false) const {
        const std::string p = path + "/" + key;
        const json& v = member(obj, key, path);
        return sourced_value(v, p, integer);
    }

    ReadSourced sourced_value(const json& v, const std::string& p, bool integer) const {
        if (!v.is_object()) fail(p, "expected {\"value\": number, \"source\": key}, got " + std::string(v.type_name()));
        only_keys(v, {"value", "source", "note"}, p);
        const json& val = member(v, "value", p);
        if (!val.is_number()) fail(p + "/value", std::string("expected a number, got ") + val.type_name());
        SourcedValue s;
        s.value = val.get<double>();
        if (!std::isfinite(s.value) || s.value <= 0) fail(p + "/value", "must be positive, got " + val.dump());
        if (integer && std::floor(s.value) != s.value) fail(p + "/value", "must be an integer, got " + val.dump());
        s.source = string(v, "source", p);
        if (!sources_.count(s.source)) fail(p + "/source", "source '" + s.source + "' is not a key of /sources");
        if (v.contains("note")) {
            if (!v["note"].is_string()) fail(p + "/note", "expected a string");
            s.note = v["note"].get<std::string>();
        }
        return ReadSourced{std::move(s)};
    }

    // allow_empty: a chip without matrix units (P100, P4) states so with an empty object.
    // FLOP/s by dtype.
    std::map<DType, Sourced<unit::flop_per_s>> per_dtype(const json& obj, const std::string& key, const std::string& path,
                                                         bool allow_empty = false) const {
        const json& m = object(obj, key, path);
        std::map<DType, Sourced<unit::flop_per_s>> out;
        for (const auto& [k, v] : m.items()) {
            auto d = parse_dtype(k);
            if (!d || !(is_floating(*d) || *d == DType::int8)) {
                fail(path + "/" + key + "/" + k,
                     "unknown dtype key '" + k + "' (expected f64, f32, tf32, f16, bf16, fp8_e4m3, fp8_e5m2, int8)");
            }
            out[*d] = sourced_value(v, path + "/" + key + "/" + k, false);
        }
        if (out.empty() && !allow_empty) fail(path + "/" + key, "must list at least one dtype");
        return out;
    }

    Link link(const json& obj, const std::string& key) const {
        const json& l = object(obj, key, "");
        only_keys(l, {"name", "bytes_per_s"}, "/" + key);
        return Link{string(l, "name", "/" + key), sourced(l, "bytes_per_s", "/" + key)};
    }

    void read_sources() {
        const json& s = object(doc_, "sources", "");
        if (s.empty()) fail("/sources", "must cite at least one source");
        for (const auto& [k, v] : s.items()) {
            if (!v.is_string() || v.get<std::string>().empty()) fail("/sources/" + k, "expected a citation string");
            sources_[k] = v.get<std::string>();
        }
    }

    const std::map<std::string, std::string>& sources() const { return sources_; }

private:
    const json& doc_;
    std::string origin_;
    std::map<std::string, std::string> sources_;
};

}  // namespace roofline
