#pragma once
// Accumulates a roofline-model/1 document node by node: what the built-in templates
// (model/templates.cpp) and the Hugging Face config builders (model/hf_*.cpp) expand to, so that
// every built-in model goes through the one JSON loader a user's file does.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

namespace roofline {

class DocBuilder {
public:
    using json = nlohmann::json;

    DocBuilder() {
        doc_["format"] = "roofline-model/1";
        doc_["inputs"] = json::array();
        doc_["parameters"] = json::array();
        doc_["nodes"] = json::array();
    }
    explicit DocBuilder(const std::string& name) : DocBuilder() { doc_["name"] = name; }

    json& doc() { return doc_; }
    // The finished document, moved out (the builder is done with it).
    json take() { return std::move(doc_); }
    void input(const std::string& name, json shape, const char* dtype = nullptr) {
        json t{{"name", name}, {"shape", std::move(shape)}};
        if (dtype) t["dtype"] = dtype;
        doc_["inputs"].push_back(std::move(t));
    }
    // Returns the parameter's name (to use it as an input in place).
    std::string param(const std::string& name, json shape, const char* dtype = nullptr) {
        json t{{"name", name}, {"shape", std::move(shape)}};
        if (dtype) t["dtype"] = dtype;
        doc_["parameters"].push_back(std::move(t));
        return name;
    }
    // Returns the node's (first) output name: the node's name.
    std::string node(const std::string& name, const char* op, json inputs, json attrs = json::object()) {
        json n{{"name", name}, {"op", op}, {"inputs", std::move(inputs)}};
        if (!attrs.empty()) n["attrs"] = std::move(attrs);
        doc_["nodes"].push_back(std::move(n));
        return name;
    }
    // The y output of a dropout node ("<name>:0"), or x itself when p == 0 (dropout(0) is the identity).
    std::string dropout(const std::string& name, const std::string& x, double p) {
        if (p == 0.0) return x;
        node(name, "dropout", {x}, {{"p", p}});
        return name + ":0";
    }
    // linear(x, <name>.weight [out, in], <name>.bias [out] when bias): nn.Linear.
    std::string linear(const std::string& name, const std::string& x, std::int64_t in, std::int64_t out, bool bias) {
        json ins = {x, param(name + ".weight", {out, in})};
        if (bias) ins.push_back(param(name + ".bias", {out}));
        return node(name, "linear", std::move(ins));
    }
    std::string layernorm(const std::string& name, const std::string& x, std::int64_t d, double eps) {
        return node(name, "layernorm", {x, param(name + ".weight", {d}), param(name + ".bias", {d})}, {{"eps", eps}});
    }
    std::string rmsnorm(const std::string& name, const std::string& x, std::int64_t d, double eps) {
        return node(name, "rmsnorm", {x, param(name + ".weight", {d})}, {{"eps", eps}});
    }

private:
    json doc_;
};

}  // namespace roofline
