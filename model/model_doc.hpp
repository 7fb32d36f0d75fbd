#pragma once
// A roofline-model/1 document as the built-in builders make it (model/doc_builder.hpp): what a
// model file lists under "inputs", "parameters" and "nodes" held as records, one a declaration,
// and the rest of the document as JSON. The loader reads it exactly as it reads the file it stands
// for (the same checks in the same order, the same errors and the same graph), without building and
// reading a JSON object per node: a template's nodes are strings and small attribute objects, not
// maps of keys (issue #20: GPT-3's forward graph, 2,503 nodes, loaded in 4 ms instead of 6).
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/graph.hpp"

namespace roofline {

struct ModelOverrides;  // model/model_json.hpp

struct ModelDoc {
    // {"name": ..., "shape": ..., "dtype": ...}; a null dtype stands for the key's absence.
    struct Tensor {
        std::string name;
        nlohmann::json shape;
        nlohmann::json dtype;
    };
    // {"name": ..., "op": ..., "inputs": ..., "attrs": ...}; an empty attrs stands for the key's absence.
    struct Node {
        std::string name;
        std::string op;
        nlohmann::json inputs;
        nlohmann::json attrs;
    };
    nlohmann::json head = {{"format", "roofline-model/1"}};  // every other key of the document
    std::vector<Tensor> inputs, parameters;
    std::vector<Node> nodes;

    // The whole document as JSON (what `roofline model show` prints).
    nlohmann::json to_json() &&;
};

// load_model (model/model_json.hpp) of the document `doc` stands for.
Graph load_model(ModelDoc doc, const std::string& origin, const ModelOverrides& ov);

}  // namespace roofline
