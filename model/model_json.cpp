#include "model/model_json.hpp"

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/strong_components.hpp>
#include <deque>
#include <filesystem>
#include <fstream>
#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <queue>
#include <set>
#include <sstream>
#include <string_view>
#include <unordered_set>
#include <variant>

#include "model/hf_config.hpp"
#include "model/json_check.hpp"
#include "model/model_doc.hpp"
#include "model/name_table.hpp"
#include "model/onnx_model.hpp"
#include "model/templates.hpp"
#include "ops/text.hpp"
#include "ops/error.hpp"
#include "ops/op_rule.hpp"

namespace roofline {
namespace {

using nlohmann::json;

// Every message names the document and the JSON path (model/json_check.hpp).
[[noreturn]] void fail(const std::string& origin, const std::string& path, const std::string& msg) { json_fail(origin, path, msg); }

std::string type_of(const json& j) { return j.type_name(); }

void only_keys(const json& obj, const std::set<std::string>& allowed, const std::string& origin, const std::string& path) {
    json_only_keys(obj, allowed, origin, path);
}

// `v`, the value of key `key` of the object at `path`, when it has the type (an unsigned number is an integer).
const json& of_type(const json& v, const std::string& key, json::value_t type, const std::string& origin, const std::string& path) {
    const bool ok = v.type() == type || (type == json::value_t::number_integer && v.is_number_unsigned());
    if (!ok) fail(origin, path + "/" + key, "expected " + std::string(json(type).type_name()) + ", got " + type_of(v));
    return v;
}

const json& require(const json& obj, const std::string& key, json::value_t type, const std::string& origin, const std::string& path) {
    auto it = obj.find(key);
    if (it == obj.end()) fail(origin, path, "missing key '" + key + "'");
    return of_type(*it, key, type, origin, path);
}

struct Context {
    std::string origin;
    std::map<std::string, std::int64_t> dims;
    DType compute = DType::f32;
    DType parameters = DType::f32;
    PrecisionPolicy policy;
    bool eval = false;    // ModelOverrides::eval
    bool frozen = false;  // ModelOverrides::frozen_weights or eval
    // An 8-bit float compute dtype runs the GEMMs in it and everything else in their 16-bit output
    // dtype (Transformer Engine's fp8 autocast, vLLM's fp8 checkpoints): `compute` is then bf16
    // and `gemm` the fp8 type.
    std::optional<DType> gemm;
};

std::int64_t to_int(const json& j, const Context& c, const std::string& path, bool allow_symbols) {
    if (j.is_number_unsigned()) {
        const auto u = j.get<std::uint64_t>();
        if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
            fail(c.origin, path, "integer " + j.dump() + " overflows int64");
        }
        return static_cast<std::int64_t>(u);
    }
    if (j.is_number_integer()) return j.get<std::int64_t>();
    if (j.is_number_float()) fail(c.origin, path, "expected an integer, got " + j.dump());
    if (allow_symbols && j.is_string()) {
        auto it = c.dims.find(j.get<std::string>());
        if (it == c.dims.end()) {
            std::string known;
            for (const auto& [k, v] : c.dims) known += (known.empty() ? "" : ", ") + k;
            fail(c.origin, path,
                 "unknown dimension '" + j.get<std::string>() + "' (dims defines: " + (known.empty() ? "none" : known) + ")");
        }
        return it->second;
    }
    fail(c.origin, path, std::string("expected an integer") + (allow_symbols ? " or a dimension name" : "") + ", got " + type_of(j));
}

Shape to_shape(const json& j, const Context& c, const std::string& path) {
    if (!j.is_array()) fail(c.origin, path, "expected an array of dimensions, got " + type_of(j));
    Shape s;
    for (std::size_t i = 0; i < j.size(); ++i) {
        const std::int64_t d = to_int(j[i], c, path + "/" + std::to_string(i), true);
        if (d < 0) fail(c.origin, path + "/" + std::to_string(i), "negative dimension " + std::to_string(d));
        s.push_back(d);
    }
    try {
        (void)numel(s);
    } catch (const InputError& e) {
        fail(c.origin, path, std::string(e.what()) + " for shape " + shape_str(s));
    }
    return s;
}

DType to_dtype(const json& j, const std::string& origin, const std::string& path) {
    if (!j.is_string()) fail(origin, path, "expected a dtype name, got " + type_of(j));
    auto d = parse_dtype(j.get<std::string>());
    if (!d) fail(origin, path, "unknown dtype '" + j.get<std::string>() + "' (expected one of: " + dtype_choices() + ")");
    return *d;
}

AttrValue to_attr(const json& j, const Context& c, const std::string& path) {
    if (j.is_boolean()) return j.get<bool>();
    if (j.is_number_integer() || j.is_number_unsigned()) return to_int(j, c, path, false);
    if (j.is_number_float()) return j.get<double>();
    if (j.is_string()) return j.get<std::string>();
    if (j.is_array()) {
        std::vector<std::int64_t> v;
        for (std::size_t i = 0; i < j.size(); ++i) v.push_back(to_int(j[i], c, path + "/" + std::to_string(i), true));
        return v;
    }
    fail(c.origin, path, "an attribute must be a boolean, number, string or list of integers, got " + type_of(j));
}

struct TensorDecl {
    std::string name;
    TensorDesc desc;
    bool dtype_given = false;  // the declaration names its dtype
};

// A tensor declaration at `p` from its name, shape and dtype (nullptr: none given).
TensorDecl tensor_decl(std::string name, const json& shape, const json* dtype, bool parameters, const Context& c, const std::string& p) {
    TensorDecl d;
    d.name = std::move(name);
    d.desc.shape = to_shape(of_type(shape, "shape", json::value_t::array, c.origin, p), c, p + "/shape");
    d.dtype_given = dtype != nullptr;
    d.desc.dtype = dtype ? to_dtype(*dtype, c.origin, p + "/dtype") : (parameters ? c.parameters : c.compute);
    return d;
}

std::vector<TensorDecl> read_tensors(const json& doc, const std::string& key, bool parameters, const Context& c) {
    std::vector<TensorDecl> out;
    auto it = doc.find(key);
    if (it == doc.end()) return out;
    const std::string path = "/" + key;
    if (!it->is_array()) fail(c.origin, path, "expected an array, got " + type_of(*it));
    for (std::size_t i = 0; i < it->size(); ++i) {
        const std::string p = path + "/" + std::to_string(i);
        const json& t = (*it)[i];
        if (!t.is_object()) fail(c.origin, p, "expected an object, got " + type_of(t));
        static const std::set<std::string> kTensorKeys{"name", "shape", "dtype"};  // once, not per tensor
        only_keys(t, kTensorKeys, c.origin, p);
        std::string name = require(t, "name", json::value_t::string, c.origin, p).get<std::string>();
        const json& shape = require(t, "shape", json::value_t::array, c.origin, p);
        const auto dtype = t.find("dtype");
        out.push_back(tensor_decl(std::move(name), shape, dtype == t.end() ? nullptr : &*dtype, parameters, c, p));
    }
    return out;
}

// The same of a builder's declarations (model/model_doc.hpp).
std::vector<TensorDecl> read_tensors(std::vector<ModelDoc::Tensor>& tensors, const std::string& key, bool parameters, const Context& c) {
    std::vector<TensorDecl> out;
    out.reserve(tensors.size());
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        ModelDoc::Tensor& t = tensors[i];
        out.push_back(tensor_decl(std::move(t.name), t.shape, t.dtype.is_null() ? nullptr : &t.dtype, parameters, c,
                                  "/" + key + "/" + std::to_string(i)));
    }
    return out;
}

struct NodeDecl {
    std::string name;
    OpKind kind{};
    std::vector<std::string> inputs;
    std::vector<std::string> outputs;
    Attrs attrs;
    std::string path;
};

// A node declaration at `p` from its name and op; its inputs, outputs and attributes follow.
NodeDecl node_decl(std::string name, const std::string& op, const Context& c, const std::string& p) {
    NodeDecl d;
    d.path = p;
    d.name = std::move(name);
    auto kind = parse_op(op);
    if (!kind) fail(c.origin, p + "/op", "unknown op '" + op + "' in node '" + d.name + "' (known ops: " + op_choices() + ")");
    d.kind = *kind;
    return d;
}

// The tensor names of the array `names` (key `key` of the node at `p`), moved out of a builder's.
template <class Json>
void read_names(Json& names, const char* key, std::vector<std::string>& out, const Context& c, const std::string& p) {
    of_type(names, key, json::value_t::array, c.origin, p);
    out.reserve(names.size());
    for (std::size_t i = 0; i < names.size(); ++i) {
        if (!names[i].is_string()) fail(c.origin, p + "/" + key + "/" + std::to_string(i), "expected a tensor name");
        if constexpr (std::is_const_v<Json>)
            out.push_back(names[i].template get<std::string>());
        else
            out.push_back(std::move(names[i].template get_ref<std::string&>()));
    }
}

void read_attrs(const json& attrs, NodeDecl& d, const Context& c) {
    of_type(attrs, "attrs", json::value_t::object, c.origin, d.path);
    for (const auto& [k, v] : attrs.items()) d.attrs.set(k, to_attr(v, c, d.path + "/attrs/" + k));
}

NodeDecl read_node(const json& n, const Context& c, const std::string& p) {
    if (!n.is_object()) fail(c.origin, p, "expected an object, got " + type_of(n));
    static const std::set<std::string> kNodeKeys{"name", "op", "inputs", "outputs", "attrs"};  // once, not per node
    only_keys(n, kNodeKeys, c.origin, p);
    std::string name = require(n, "name", json::value_t::string, c.origin, p).get<std::string>();
    NodeDecl d = node_decl(std::move(name), require(n, "op", json::value_t::string, c.origin, p).get_ref<const std::string&>(), c, p);
    read_names(require(n, "inputs", json::value_t::array, c.origin, p), "inputs", d.inputs, c, p);
    const auto outs = n.find("outputs"), attrs = n.find("attrs");
    if (outs != n.end()) read_names(*outs, "outputs", d.outputs, c, p);
    if (attrs != n.end()) read_attrs(*attrs, d, c);
    return d;
}

// The same of a builder's declaration (model/model_doc.hpp).
NodeDecl read_node(ModelDoc::Node& n, const Context& c, const std::string& p) {
    NodeDecl d = node_decl(std::move(n.name), n.op, c, p);
    read_names(n.inputs, "inputs", d.inputs, c, p);
    if (!n.attrs.empty()) read_attrs(n.attrs, d, c);
    return d;
}

// Default output names: the node's name for a single output, "<name>:<i>" otherwise.
std::vector<std::string> output_names(const NodeDecl& d, std::size_t count) {
    if (!d.outputs.empty()) return d.outputs;
    if (count == 1) return {d.name};
    std::vector<std::string> names;
    for (std::size_t i = 0; i < count; ++i) names.push_back(d.name + ":" + std::to_string(i));
    return names;
}

// The number of outputs an op produces, known before shape inference for naming.
std::size_t output_count(const NodeDecl& d) {
    if (d.kind == OpKind::split) return d.attrs.get_ints("sizes", {0}).size();
    if (d.kind == OpKind::dropout || d.kind == OpKind::topk) return 2;
    return 1;
}

// Orders nodes so that producers come first, keeping file order where it already is one.
// A cycle is reported with the names of the nodes on it (Boost strong_components).
// Names viewed where their owner keeps them (the file's declarations, kept while the graph is
// built), indexed: a large file's names are hashed once each, never copied.
struct NameViews {
    std::vector<std::string_view> names;
    NameTable index;
    std::int32_t find(std::string_view n) const {
        return index.find(n, [this](std::int32_t i) { return names[static_cast<std::size_t>(i)]; });
    }
    bool contains(std::string_view n) const { return find(n) >= 0; }
    bool add(std::string_view n) {
        if (contains(n)) return false;
        index.insert(n, static_cast<std::int32_t>(names.size()));
        names.push_back(n);
        return true;
    }
};

std::vector<std::size_t> order_nodes(const std::vector<NodeDecl>& nodes, const NameViews& sources, const Context& c) {
    std::deque<std::string> generated;  // the default "<name>:<i>" output names
    NameViews outputs;                  // every node output's name, in order
    std::vector<std::size_t> producer;  // the node of outputs.names[i]
    outputs.index.reserve(nodes.size() + nodes.size() / 4);
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        std::size_t count = 0;
        try {
            count = output_count(nodes[i]);
        } catch (const InputError& e) {
            fail(c.origin, nodes[i].path, "node '" + nodes[i].name + "': " + e.what());
        }
        const auto define = [&](std::string_view o) {
            if (sources.contains(o) || !outputs.add(o))
                fail(c.origin, nodes[i].path, "tensor name '" + std::string(o) + "' is defined twice");
            producer.push_back(i);
        };
        if (!nodes[i].outputs.empty()) {
            for (const std::string& o : nodes[i].outputs) define(o);
        } else if (count == 1) {
            define(nodes[i].name);
        } else {
            for (const std::string& o : output_names(nodes[i], count)) define(generated.emplace_back(o));
        }
    }
    std::vector<int> indegree(nodes.size(), 0);
    std::vector<std::vector<std::size_t>> users(nodes.size());
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        for (std::size_t k = 0; k < nodes[i].inputs.size(); ++k) {
            const std::string& in = nodes[i].inputs[k];
            if (sources.contains(in)) continue;
            const std::int32_t out = outputs.find(in);
            if (out < 0) {
                fail(c.origin, nodes[i].path + "/inputs/" + std::to_string(k),
                     "node '" + nodes[i].name + "' uses tensor '" + in + "', which no input, parameter or node output defines");
            }
            const std::size_t from = producer[static_cast<std::size_t>(out)];
            users[from].push_back(i);
            ++indegree[i];
        }
    }
    std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>> ready;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        if (indegree[i] == 0) ready.push(i);
    }
    std::vector<std::size_t> order;
    while (!ready.empty()) {
        const std::size_t n = ready.top();
        ready.pop();
        order.push_back(n);
        for (std::size_t u : users[n]) {
            if (--indegree[u] == 0) ready.push(u);
        }
    }
    if (order.size() != nodes.size()) {
        // The same edges as a Boost graph (each node's users in the order found) for its strong components.
        using Adj = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;
        Adj adj(nodes.size());
        for (std::size_t from = 0; from < nodes.size(); ++from) {
            for (std::size_t u : users[from]) boost::add_edge(from, u, adj);
        }
        std::vector<std::size_t> component(nodes.size());
        boost::strong_components(adj, boost::make_iterator_property_map(component.begin(), boost::get(boost::vertex_index, adj)));
        std::map<std::size_t, std::vector<std::size_t>> members;
        for (std::size_t i = 0; i < nodes.size(); ++i) {
            if (indegree[i] > 0) members[component[i]].push_back(i);
        }
        std::vector<std::size_t> cycle;
        for (const auto& [comp, m] : members) {
            const bool self_loop = m.size() == 1 && boost::edge(m[0], m[0], adj).second;
            if (m.size() > 1 || self_loop) {
                cycle = m;
                break;
            }
        }
        std::string names;
        for (std::size_t i : cycle) names += (names.empty() ? "'" : ", '") + nodes[i].name + "'";
        fail(c.origin, "/nodes", "the graph has a cycle through nodes " + names);
    }
    return order;
}

// The inputs of a node that are GEMM operands (the matrix unit reads them): linear's and conv2d's
// x and weight, both operands of a matmul.
std::vector<std::size_t> gemm_operands(OpKind k) {
    if (k == OpKind::linear || k == OpKind::conv2d || k == OpKind::matmul) return {0, 1};
    return {};
}

// Whether a GEMM node runs in fp8 under Context::gemm: linear and conv2d, and a matmul with a
// weight operand; matmuls of two activations (attention's scores and context) stay 16-bit, as
// Transformer Engine's fp8 recipes keep them. With frozen weights, a GEMM whose weight is kept in
// 16 bits (an LM head tied to the embedding, which serving checkpoints leave unquantized) stays
// 16-bit too: casting a whole weight every step is what training does, not serving.
bool runs_in_fp8(const Graph& g, const NodeDecl& d, const std::vector<TensorId>& ins, const Context& c) {
    if (d.kind != OpKind::linear && d.kind != OpKind::conv2d && d.kind != OpKind::matmul) return false;
    bool weight = d.kind != OpKind::matmul;
    for (TensorId t : ins) {
        if (t < 0 || g.tensor(t).role != TensorRole::parameter) continue;
        weight = true;
        if (c.frozen && g.tensor(t).desc.dtype != *c.gemm && ins.size() >= 2 && (t == ins[0] || t == ins[1])) return false;
    }
    return weight;
}

// fp8 GEMMs (Context::gemm): the parameters stored in fp8 (eval mode: a quantized checkpoint),
// those declared without a dtype and used only as GEMM weights (a tied embedding also feeds a
// lookup and stays 16-bit); the rest are cast before their GEMMs.
std::set<std::string> fp8_stored_parameters(const std::vector<TensorDecl>& parameters, const std::vector<NodeDecl>& nodes,
                                            const Context& c) {
    std::set<std::string> stored;
    if (!c.gemm || !c.frozen) return stored;
    for (const TensorDecl& t : parameters) {
        if (!t.dtype_given) stored.insert(t.name);
    }
    for (const NodeDecl& d : nodes) {
        const auto operands = gemm_operands(d.kind);
        for (std::size_t i = 0; i < d.inputs.size(); ++i) {
            const bool weight_slot = (d.kind == OpKind::linear || d.kind == OpKind::conv2d) && i == 1;
            const bool matmul_slot = d.kind == OpKind::matmul && std::find(operands.begin(), operands.end(), i) != operands.end();
            if (!weight_slot && !matmul_slot) stored.erase(d.inputs[i]);
        }
    }
    return stored;
}

// The graph of document `doc`, whose inputs, parameters and nodes are its own or, from a builder,
// `built`'s (model/model_doc.hpp).
Graph build_graph(const json& doc, ModelDoc* built, Context& c) {
    only_keys(doc,
              {"format", "name", "description", "dims", "dtype_policy", "inputs", "parameters", "nodes", "outputs", "tensor_parallel",
               "context_parallel", "expert_parallel", "pipeline"},
              c.origin, "");
    Graph g;
    g.name = doc.contains("name") ? require(doc, "name", json::value_t::string, c.origin, "").get<std::string>()
                                  : std::filesystem::path(c.origin).stem().string();
    if (doc.contains("description")) g.description = require(doc, "description", json::value_t::string, c.origin, "").get<std::string>();
    const json* nodes_json = built ? nullptr : &require(doc, "nodes", json::value_t::array, c.origin, "");
    const std::size_t node_count = built ? built->nodes.size() : nodes_json->size();
    if (node_count > kMaxNodes)
        fail(c.origin, "/nodes", std::to_string(node_count) + " nodes, more than the " + std::to_string(kMaxNodes) + " a model may have");
    std::vector<NodeDecl> nodes;
    nodes.reserve(node_count);
    NameTable node_names;  // over the names in `nodes`
    node_names.reserve(node_count);
    for (std::size_t i = 0; i < node_count; ++i) {
        const std::string p = "/nodes/" + std::to_string(i);
        nodes.push_back(built ? read_node(built->nodes[i], c, p) : read_node((*nodes_json)[i], c, p));
        const auto name_of = [&](std::int32_t k) -> const std::string& { return nodes[static_cast<std::size_t>(k)].name; };
        if (node_names.find(nodes.back().name, name_of) >= 0) {
            fail(c.origin, nodes.back().path + "/name", "node name '" + nodes.back().name + "' is used twice");
        }
        node_names.insert(nodes.back().name, static_cast<std::int32_t>(i));
    }
    // The inputs and parameters, kept while the nodes are ordered: `sources` views their names.
    std::vector<TensorDecl> declared[2];
    declared[0] = built ? read_tensors(built->inputs, "inputs", false, c) : read_tensors(doc, "inputs", false, c);
    declared[1] = built ? read_tensors(built->parameters, "parameters", true, c) : read_tensors(doc, "parameters", true, c);
    const std::set<std::string> fp8_stored = fp8_stored_parameters(declared[1], nodes, c);
    NameViews sources;
    g.reserve(nodes.size(), nodes.size() + nodes.size() / 4);
    for (bool params : {false, true}) {
        for (TensorDecl& t : declared[params ? 1 : 0]) {
            if (!sources.add(t.name)) fail(c.origin, params ? "/parameters" : "/inputs", "tensor name '" + t.name + "' is defined twice");
            if (params && fp8_stored.count(t.name)) t.desc.dtype = *c.gemm;
            if (params)
                g.add_parameter(t.name, t.desc);
            else
                g.add_input(t.name, t.desc);
        }
    }
    std::map<std::string, TensorId> alias;   // eval mode: a dropout's output names its input
    std::map<TensorId, TensorId> quantized;  // fp8 GEMMs: a 16-bit operand's fp8 cast
    auto find = [&](const std::string& name) {
        const auto it = alias.find(name);
        return it != alias.end() ? it->second : g.find_tensor(name);
    };
    for (std::size_t i : order_nodes(nodes, sources, c)) {
        const NodeDecl& d = nodes[i];
        std::vector<TensorId> ins;
        for (const auto& n : d.inputs) {
            const bool mask = n.size() > 2 && n.compare(n.size() - 2, 2, ":1") == 0 && alias.count(n.substr(0, n.size() - 2)) != 0;
            if (mask)
                fail(c.origin, d.path,
                     "node '" + d.name + "' uses the mask '" + n + "' of a dropout, which inference (evaluation mode) does not compute");
            ins.push_back(find(n));
        }
        if (c.eval && d.kind == OpKind::dropout && ins.size() == 1) {
            alias[d.name] = ins[0];
            alias[d.name + ":0"] = ins[0];
            continue;
        }
        if (c.gemm && runs_in_fp8(g, d, ins, c)) {
            // The GEMM's 16-bit operands quantized to fp8 first (Transformer Engine and vLLM run a
            // cast kernel, or fuse it into the producer; the unfused cast is modelled).
            for (std::size_t slot : gemm_operands(d.kind)) {
                if (slot >= ins.size() || ins[slot] < 0 || g.tensor(ins[slot]).desc.dtype == *c.gemm) continue;
                if (const auto q = quantized.find(ins[slot]); q != quantized.end()) {  // one cast per tensor (q, k, v share x)
                    ins[slot] = q->second;
                    continue;
                }
                const TensorId source = ins[slot];
                const std::string cast = d.name + (slot == 0 ? ".x_fp8" : ".w_fp8");
                Attrs to;
                to.set("dtype", std::string(dtype_name(*c.gemm)));
                try {
                    ins[slot] = g.node(g.add_node(cast, OpKind::cast, {ins[slot]}, to, {cast})).outputs[0];
                    quantized[source] = ins[slot];
                } catch (const InputError& e) {
                    fail(c.origin, d.path, "node '" + d.name + "': quantizing operand " + std::to_string(slot) + " to fp8: " + e.what());
                }
            }
        }
        try {
            g.add_node(d.name, d.kind, ins, d.attrs, output_names(d, output_count(d)));
        } catch (const InputError& e) {
            fail(c.origin, d.path, "node '" + d.name + "': " + e.what());
        }
    }
    if (doc.contains("outputs")) {
        const json& outs = require(doc, "outputs", json::value_t::array, c.origin, "");
        for (std::size_t i = 0; i < outs.size(); ++i) {
            const std::string p = "/outputs/" + std::to_string(i);
            if (!outs[i].is_string()) fail(c.origin, p, "expected a tensor name");
            const TensorId t = find(outs[i].get<std::string>());
            if (t < 0) fail(c.origin, p, "unknown tensor '" + outs[i].get<std::string>() + "'");
            g.mark_output(t);
        }
    }
    if (doc.contains("pipeline")) {
        const json& pp = require(doc, "pipeline", json::value_t::object, c.origin, "");
        only_keys(pp, {"stages", "stage", "layers", "model_layers", "layer_prefix", "input", "shared_embedding"}, c.origin, "/pipeline");
        auto integer = [&](const char* k, std::int64_t lo) {
            const json& v = pp.contains(k) ? pp[k] : json();
            if (!v.is_number_integer() || v.get<std::int64_t>() < lo || v.get<std::int64_t>() > 1 << 20)
                fail(c.origin, std::string("/pipeline/") + k, "expected an integer >= " + std::to_string(lo));
            return static_cast<int>(v.get<std::int64_t>());
        };
        g.pipeline.stages = integer("stages", 1);
        g.pipeline.stage = integer("stage", 0);
        g.pipeline.layers = integer("layers", 0);
        if (pp.contains("model_layers")) g.pipeline.model_layers = integer("model_layers", 1);
        if (pp.contains("layer_prefix")) {
            const json& v = pp["layer_prefix"];
            if (!v.is_string() || v.get<std::string>().empty())
                fail(c.origin, "/pipeline/layer_prefix", "expected the layers' name prefix (a non-empty string), got " + v.dump());
            g.pipeline.layer_prefix = v.get<std::string>();
        }
        if (g.pipeline.stage >= g.pipeline.stages) fail(c.origin, "/pipeline/stage", "must be below /pipeline/stages");
        if (pp.contains("input")) {
            const json& v = pp["input"];
            const TensorId t = v.is_string() ? g.find_tensor(v.get<std::string>()) : -1;
            if (t < 0 || g.tensor(t).role != TensorRole::input)
                fail(c.origin, "/pipeline/input",
                     "expected the name of a model input (the activation the stage receives), got " + v.dump());
            g.pipeline.input = v.get<std::string>();
        }
        if (pp.contains("shared_embedding")) {
            const json& v = pp["shared_embedding"];
            if (!v.is_string() || g.find_tensor(v.get<std::string>()) < 0)
                fail(c.origin, "/pipeline/shared_embedding", "expected the name of a parameter, got " + v.dump());
            g.pipeline.shared_embedding = v.get<std::string>();
        }
    }
    if (doc.contains("tensor_parallel")) {
        const json& tp = require(doc, "tensor_parallel", json::value_t::object, c.origin, "");
        only_keys(
            tp, {"degree", "all_reduce", "gradient_all_reduce", "all_gather", "reduce_scatter", "vocab_parallel_loss", "sequence_parallel"},
            c.origin, "/tensor_parallel");
        const json& deg = tp.contains("degree") ? tp["degree"] : json();
        if (!deg.is_number_integer() || deg.get<std::int64_t>() < 1 || deg.get<std::int64_t>() > 4096)
            fail(c.origin, "/tensor_parallel/degree", "expected a positive integer number of ranks");
        g.tensor_parallel.degree = deg.get<int>();
        const std::pair<const char*, std::vector<std::string>*> lists[] = {{"all_reduce", &g.tensor_parallel.all_reduce},
                                                                           {"gradient_all_reduce", &g.tensor_parallel.gradient_all_reduce},
                                                                           {"all_gather", &g.tensor_parallel.all_gather},
                                                                           {"reduce_scatter", &g.tensor_parallel.reduce_scatter},
                                                                           {"vocab_parallel_loss", &g.tensor_parallel.vocab_parallel_loss}};
        for (const auto& [key, names] : lists) {
            if (!tp.contains(key)) continue;
            const json& ar = require(tp, key, json::value_t::array, c.origin, "/tensor_parallel");
            for (std::size_t i = 0; i < ar.size(); ++i) {
                const std::string p = "/tensor_parallel/" + std::string(key) + "/" + std::to_string(i);
                if (!ar[i].is_string() || g.find_node(ar[i].get<std::string>()) == kNoNode)
                    fail(c.origin, p, "expected the name of a node, got " + ar[i].dump());
                names->push_back(ar[i].get<std::string>());
            }
        }
        if (tp.contains("sequence_parallel")) {
            if (!tp["sequence_parallel"].is_boolean()) fail(c.origin, "/tensor_parallel/sequence_parallel", "expected true or false");
            g.tensor_parallel.sequence_parallel = tp["sequence_parallel"].get<bool>();
        }
    }
    // Context and expert parallelism: {"degree": N, "<collective>": [node names]}.
    const auto read_split = [&](const char* key, const char* list, int& degree, std::vector<std::string>& names) {
        if (!doc.contains(key)) return;
        const std::string path = "/" + std::string(key);
        const json& sp = require(doc, key, json::value_t::object, c.origin, "");
        only_keys(sp, {"degree", list, "parameters", "load_factor"}, c.origin, path);
        if (sp.contains("load_factor")) {
            if (std::string(key) != "expert_parallel") fail(c.origin, path + "/load_factor", "only expert_parallel has a load factor");
            const json& f = sp["load_factor"];
            if (!f.is_number() || !(f.get<double>() >= 1) || !std::isfinite(f.get<double>()))
                fail(c.origin, path + "/load_factor", "expected a number >= 1 (the busiest rank's expert work over the mean rank's)");
            g.expert_parallel.load_factor = f.get<double>();
        }
        if (sp.contains("parameters")) {
            if (std::string(key) != "expert_parallel") fail(c.origin, path + "/parameters", "only expert_parallel lists parameters");
            const json& ps = require(sp, "parameters", json::value_t::array, c.origin, path);
            for (std::size_t i = 0; i < ps.size(); ++i) {
                const TensorId t = ps[i].is_string() ? g.find_tensor(ps[i].get<std::string>()) : -1;
                if (t < 0 || g.tensor(t).role != TensorRole::parameter)
                    fail(c.origin, path + "/parameters/" + std::to_string(i), "expected the name of a parameter, got " + ps[i].dump());
                g.expert_parallel.parameters.push_back(ps[i].get<std::string>());
            }
        }
        const json& deg = sp.contains("degree") ? sp["degree"] : json();
        if (!deg.is_number_integer() || deg.get<std::int64_t>() < 1 || deg.get<std::int64_t>() > 4096)
            fail(c.origin, path + "/degree", "expected a positive integer number of ranks");
        degree = deg.get<int>();
        if (!sp.contains(list)) return;
        const json& ns = require(sp, list, json::value_t::array, c.origin, path);
        for (std::size_t i = 0; i < ns.size(); ++i) {
            if (!ns[i].is_string() || g.find_node(ns[i].get<std::string>()) == kNoNode)
                fail(c.origin, path + "/" + list + "/" + std::to_string(i), "expected the name of a node, got " + ns[i].dump());
            names.push_back(ns[i].get<std::string>());
        }
    };
    read_split("context_parallel", "all_gather", g.context_parallel.degree, g.context_parallel.all_gather);
    read_split("expert_parallel", "all_to_all", g.expert_parallel.degree, g.expert_parallel.all_to_all);
    return g;
}

void read_policy(const json& doc, Context& c, const ModelOverrides& ov) {
    if (doc.contains("dtype_policy")) {
        const json& p = require(doc, "dtype_policy", json::value_t::object, c.origin, "");
        only_keys(p, {"compute", "parameters", "master_weights", "loss_scale"}, c.origin, "/dtype_policy");
        if (p.contains("compute")) c.compute = to_dtype(p["compute"], c.origin, "/dtype_policy/compute");
        c.parameters = p.contains("parameters") ? to_dtype(p["parameters"], c.origin, "/dtype_policy/parameters") : c.compute;
        if (p.contains("master_weights")) {
            if (!p["master_weights"].is_boolean()) fail(c.origin, "/dtype_policy/master_weights", "expected true or false");
            c.policy.master_weights = p["master_weights"].get<bool>();
        }
        if (p.contains("loss_scale")) {
            if (!p["loss_scale"].is_number() || p["loss_scale"].get<double>() < 0) {
                fail(c.origin, "/dtype_policy/loss_scale", "expected a non-negative number (0: no loss scaling)");
            }
            c.policy.loss_scale = p["loss_scale"].get<double>();
        }
    }
    if (ov.dtype) c.compute = c.parameters = *ov.dtype;
    if (c.compute == DType::fp8_e4m3 || c.compute == DType::fp8_e5m2) {
        c.gemm = c.compute;
        c.compute = matrix_output_dtype(c.compute);
        if (c.parameters == *c.gemm) c.parameters = c.compute;
    }
}

void read_dims(const json& doc, Context& c, const ModelOverrides& ov) {
    if (doc.contains("dims")) {
        const json& d = require(doc, "dims", json::value_t::object, c.origin, "");
        for (const auto& [k, v] : d.items()) {
            const std::int64_t value = to_int(v, c, "/dims/" + k, false);
            if (value < 0) fail(c.origin, "/dims/" + k, "negative dimension " + std::to_string(value));
            c.dims[k] = value;
        }
    }
    const std::pair<const char*, std::optional<std::int64_t>> overrides[] = {{"batch", ov.batch}, {"seq", ov.seq}};
    for (const auto& [name, value] : overrides) {
        if (!value) continue;
        if (!c.dims.count(name)) {
            throw InputError(c.origin + ": --" + std::string(name) + " given, but the model has no '" + name + "' entry in /dims");
        }
        if (*value <= 0) throw InputError("--" + std::string(name) + " must be positive");
        c.dims[name] = *value;
    }
}

}  // namespace

namespace {

// --expert-load as the config's "expert_load": comma-separated numbers as an array, any other
// text as a string (the template checks both and names the key).
json expert_load_config(const std::string& text) {
    if (text.find(';') != std::string::npos) {  // one load per layer: L0;L1;...
        json layers = json::array();
        for (std::size_t at = 0; at <= text.size();) {
            const std::size_t semi = std::min(text.find(';', at), text.size());
            const std::string item = text.substr(at, semi - at);
            if (item.empty() || item.find(';') != std::string::npos)
                throw InputError("--expert-load: layer " + std::to_string(layers.size()) +
                                 "'s load is empty (expected L0;L1;... one load a layer)");
            layers.push_back(expert_load_config(item));
            at = semi + 1;
        }
        return layers;
    }
    if (text.find_first_not_of("0123456789.,eE+- ") != std::string::npos) return text;
    json shares = json::array();
    for (std::size_t at = 0; at <= text.size();) {
        const std::size_t comma = std::min(text.find(',', at), text.size());
        const std::string item = text.substr(at, comma - at);
        const std::optional<double> v = whole_number(item);
        if (!v) throw InputError("--expert-load: '" + item + "' is not a number (expected uniform, zipf:S or shares such as 4,2,1,1)");
        shares.push_back(*v);
        at = comma + 1;
    }
    return shares;
}

// The parallel splits a template builds (--tp, --sp, --cp, --pp) as its config; with context
// parallelism the document's seq is a rank's share, so --seq goes to the template and not to the
// loader's dims.
// A Hugging Face config's split (model/hf_config.hpp add_hf_split): the builders that split
// (model/hf_decoders.cpp) take --tp, --sp and --pp, and the mixture-of-experts families --ep and the
// routing options (any other builder refuses those); --seq stays the dims' override unless the
// builder needs it as a number. What the builder takes is cleared from `ov`.
void add_hf_parallel(json& config, ModelOverrides& ov) {
    const json load = ov.expert_load.empty() ? json() : expert_load_config(ov.expert_load);
    HfRouting routing;
    routing.expert_load = load.is_null() ? nullptr : &load;
    routing.capacity_factor = ov.capacity_factor;
    routing.pad_to_capacity = ov.pad_to_capacity;
    add_hf_split(config, ov.tp, ov.sp, ov.seq, ov.pp, ov.stage, ov.ep, ov.cp, routing);
    if (config.contains(kHfSplitKey) && config[kHfSplitKey].contains("seq")) ov.seq.reset();
    ov.expert_load.clear();
    ov.capacity_factor.reset();
    ov.pad_to_capacity = false;
}

void add_parallel_config(const std::string& name, json& config, ModelOverrides& ov) {
    if (is_hf_preset(name)) {
        add_hf_parallel(config, ov);
        return;
    }
    if (!template_splits_tensor_parallel(name)) return;
    if (ov.tp > 1) config["tp"] = ov.tp;
    if (ov.sp) {
        config["sp"] = true;
        if (ov.seq) config["seq"] = *ov.seq;  // the sequence shard's length is a number in the document
    }
    if (ov.ep > 1) config["ep"] = ov.ep;
    if (!ov.expert_load.empty()) config["expert_load"] = expert_load_config(ov.expert_load);
    ov.expert_load.clear();
    if (ov.capacity_factor) config["capacity_factor"] = *ov.capacity_factor;
    if (ov.pad_to_capacity) config["pad_to_capacity"] = true;
    ov.capacity_factor.reset();
    ov.pad_to_capacity = false;
    // Mixture-of-experts layers size their per-expert token groups from the sequence length: it is
    // a number in the document, so --seq goes to the template.
    const bool experts = config.contains("experts") && config["experts"].is_number_integer() && config["experts"].get<std::int64_t>() > 0;
    if (experts && ov.seq && ov.cp == 1) {
        config["seq"] = *ov.seq;
        ov.seq.reset();
    }
    if (ov.cp > 1) {
        config["cp"] = ov.cp;
        if (ov.seq) config["seq"] = *ov.seq;
        ov.seq.reset();
    }
    if (ov.pp > 1) config["pp"] = ov.pp, config["stage"] = ov.stage;
    if (ov.stage_layers) config["stage_layers"] = *ov.stage_layers;
    // Any other --seq goes to the template too, which checks it against the model's positions
    // (a GPT's n_ctx: its learned position embedding has no row beyond them).
    if (ov.seq) {
        config["seq"] = *ov.seq;
        ov.seq.reset();
    }
}

Graph load_document(const json& doc, ModelDoc* built, const std::string& origin, const ModelOverrides& ov) {
    Context c;
    c.origin = origin;
    c.eval = ov.eval;
    c.frozen = ov.eval || ov.frozen_weights;
    read_policy(doc, c, ov);
    read_dims(doc, c, ov);
    Graph g = build_graph(doc, built, c);
    g.origin = origin;
    g.dims = c.dims;
    g.compute_dtype = c.gemm.value_or(c.compute);
    g.precision = c.policy;
    // --tp and --cp must agree with the split the document declares (a template builds it).
    const auto require_split = [&](const char* flag, int wanted, int degree, const char* what, const char* key) {
        if (wanted <= 1 || degree == wanted) return;
        throw InputError(std::string(flag) + " " + std::to_string(wanted) + ": " + origin +
                         (degree > 1 ? " is split for " + std::to_string(degree) + " " + what + " ranks"
                                     : " has no " + std::string(what) +
                                           " split (the GPT templates and the Hugging Face decoders build one, bert and roberta their "
                                           "context parallelism; a model file declares its own with \"" +
                                           key + "\")"));
    };
    require_split("--tp", ov.tp, g.tensor_parallel.degree, "tensor-parallel", "tensor_parallel");
    require_split("--cp", ov.cp, g.context_parallel.degree, "context-parallel", "context_parallel");
    require_split("--ep", ov.ep, g.expert_parallel.degree, "expert-parallel", "expert_parallel");
    if (ov.capacity_factor || ov.pad_to_capacity)
        throw InputError(std::string(ov.capacity_factor ? "--capacity-factor" : "--pad-to-capacity") + ": " + origin +
                         " is not a model with experts (a GPT template with \"experts\", or a Hugging Face mixtral or qwen2_moe, "
                         "builds the routing it sets)");
    if (!ov.expert_load.empty())
        throw InputError("--expert-load: " + origin +
                         " is not a model with experts (a GPT template with \"experts\", or a Hugging Face mixtral or qwen2_moe, "
                         "builds the routing it sets)");
    if (ov.pp > 1 && g.pipeline.stages != ov.pp)
        throw InputError(
            "--pp " + std::to_string(ov.pp) + ": " + origin +
            (g.pipeline.stages > 1
                 ? " is stage " + std::to_string(g.pipeline.stage + 1) + " of " + std::to_string(g.pipeline.stages) + " pipeline stages"
                 : " has no pipeline split (the GPT templates and the Hugging Face llama family build one)"));
#ifndef NDEBUG
    // Graph::add_node inferred every node's outputs and checked names and order as it built the
    // graph; the full re-check (an eighth of loading a large file) runs in debug builds.
    verify(g);
#endif
    return g;
}

// A built-in template, expanded with `config` and loaded: the GPT and MLP templates from the
// records their builder made (model/model_doc.hpp), the Hugging Face presets from their JSON.
Graph load_template(const std::string& name, json config, const std::string& origin, const ModelOverrides& ov) {
    ModelOverrides rest = ov;
    add_parallel_config(name, config, rest);
    if (std::optional<ModelDoc> built = expand_built_template(name, config, origin)) return load_model(std::move(*built), origin, rest);
    return load_model(expand_template(name, config, origin), origin, rest);
}

}  // namespace

Graph load_model(const json& doc, const std::string& origin, const ModelOverrides& ov) {
    if (!doc.is_object()) fail(origin, "", "expected a JSON object, got " + type_of(doc));
    if (is_hf_config(doc)) {  // a Hugging Face config.json
        json config = doc;
        ModelOverrides rest = ov;
        add_hf_parallel(config, rest);
        return load_model(expand_hf_config(config, origin), origin, rest);
    }
    const std::string format = require(doc, "format", json::value_t::string, origin, "").get<std::string>();
    if (format != "roofline-model/1") fail(origin, "/format", "expected \"roofline-model/1\", got \"" + format + "\"");
    if (doc.contains("template")) {
        only_keys(doc, {"format", "template", "config"}, origin, "");
        const std::string name = require(doc, "template", json::value_t::string, origin, "").get<std::string>();
        json config = doc.contains("config") ? require(doc, "config", json::value_t::object, origin, "") : json::object();
        return load_template(name, std::move(config), origin, ov);
    }
    return load_document(doc, nullptr, origin, ov);
}

Graph load_model(ModelDoc doc, const std::string& origin, const ModelOverrides& ov) {
    const std::string format = require(doc.head, "format", json::value_t::string, origin, "").get<std::string>();
    if (format != "roofline-model/1") fail(origin, "/format", "expected \"roofline-model/1\", got \"" + format + "\"");
    return load_document(doc.head, &doc, origin, ov);
}

json ModelDoc::to_json() && {
    json doc = std::move(head);
    const auto tensors = [](std::vector<Tensor>& decls) {
        json out = json::array();
        for (Tensor& t : decls) {
            json d{{"name", std::move(t.name)}, {"shape", std::move(t.shape)}};
            if (!t.dtype.is_null()) d["dtype"] = std::move(t.dtype);
            out.push_back(std::move(d));
        }
        return out;
    };
    doc["inputs"] = tensors(inputs);
    doc["parameters"] = tensors(parameters);
    json& out = doc["nodes"] = json::array();
    for (Node& n : nodes) {
        json d{{"name", std::move(n.name)}, {"op", std::move(n.op)}, {"inputs", std::move(n.inputs)}};
        if (!n.attrs.empty()) d["attrs"] = std::move(n.attrs);
        out.push_back(std::move(d));
    }
    return doc;
}

std::string read_input_file(const std::string& path, std::uintmax_t max_bytes) {
    std::error_code ec;
    const auto status = std::filesystem::status(path, ec);
    if (ec || !std::filesystem::exists(status)) throw InputError(path + ": cannot open file (it does not exist)");
    if (std::filesystem::is_directory(status)) throw InputError(path + ": is a directory, expected a file");
    if (!std::filesystem::is_regular_file(status)) throw InputError(path + ": is not a regular file (a device, FIFO or socket)");
    const std::uintmax_t size = std::filesystem::file_size(path, ec);
    if (!ec && size > max_bytes)
        throw InputError(path + ": " + std::to_string(size / (1024 * 1024)) + " MiB, more than the " +
                         std::to_string(max_bytes / (1024 * 1024)) + " MiB an input of this kind may have");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError(path + ": cannot open file");
    std::stringstream buf;
    buf << in.rdbuf();
    return buf.str();
}

namespace {

// nlohmann's DOM builder with duplicate keys refused (nlohmann keeps the last silently): each open
// object's keys so far. A SAX handler, not json::parse's callback: the callback parser is
// quadratic in the length of an array (a 200,000-node model took 47 s to parse, linear here).
class NoDuplicateKeys : public nlohmann::detail::json_sax_dom_parser<json> {
public:
    NoDuplicateKeys(json& result, const std::string& path) : json_sax_dom_parser(result, true), path_(path) {}
    bool start_object(std::size_t n) {
        keys_.emplace_back();
        return json_sax_dom_parser::start_object(n);
    }
    bool end_object() {
        keys_.pop_back();
        return json_sax_dom_parser::end_object();
    }
    bool key(string_t& k) {
        if (!keys_.back().insert(k).second)
            throw InputError(path_ + ": duplicate key \"" + k + "\" in one object (JSON keys must be unique)");
        return json_sax_dom_parser::key(k);
    }

private:
    const std::string& path_;
    std::vector<std::unordered_set<std::string>> keys_;
};

}  // namespace

json read_json_file(const std::string& path) { return parse_json_text(read_input_file(path, kMaxJsonBytes), path); }

json parse_json_text(const std::string& text, const std::string& path) {
    try {
        json result;
        NoDuplicateKeys sax(result, path);
        json::sax_parse(text, &sax);
        return result;
    } catch (const json::parse_error& e) {
        // nlohmann's message carries line and column: "parse error at line 3, column 5: ..."
        std::string msg = e.what();
        const auto pos = msg.find("parse error");
        throw InputError(path + ": malformed JSON: " + (pos == std::string::npos ? msg : msg.substr(pos)));
    } catch (const json::out_of_range& e) {  // a number beyond double's range ("1e999")
        std::string msg = e.what();
        const auto pos = msg.find("] ");
        throw InputError(path + ": " + (pos == std::string::npos ? msg : msg.substr(pos + 2)) + " (beyond the range of a double)");
    }
}

bool is_model_file_arg(const std::string& model) {
    std::error_code ec;
    return model.find('/') != std::string::npos || std::filesystem::path(model).extension() == ".json" ||
           std::filesystem::is_regular_file(model, ec);
}

Graph load_model_arg(const std::string& model, const ModelOverrides& ov) {
    if (ov.phase) return load_phase_model(model, ov);                                           // model/inference.hpp
    if (std::filesystem::path(model).extension() == ".onnx") return load_onnx_file(model, ov);  // model/onnx_model.hpp
    if (is_model_file_arg(model)) return load_model(read_json_file(model), model, ov);
    if (is_template_name(model)) return load_template(model, json::object(), "template '" + model + "'", ov);
    throw InputError("MODEL '" + model + "' is neither a model file nor a built-in template (templates: " + template_choices() + ")");
}

json graph_to_model_json(const Graph& g) {
    // The file format has no place for one rank's share of a partitioned model (only a template's
    // tensor_parallel list): such a graph is analyzed from its source with the same options.
    if (g.tensor_parallel.degree > 1 || g.context_parallel.degree > 1 || g.expert_parallel.degree > 1 || g.pipeline.stages > 1)
        throw InputError("graph '" + g.name +
                         "' is one rank's share of a partitioned model (--tp, --cp, --ep or --pp): only a single-device graph can be "
                         "written as a model file; analyze the model itself with those options");
    const auto tensor_json = [&](const Tensor& t) {
        return json{{"name", t.name}, {"shape", t.desc.shape}, {"dtype", std::string(dtype_name(t.desc.dtype))}};
    };
    json inputs = json::array(), parameters = json::array(), nodes = json::array(), outputs = json::array();
    for (const Tensor& t : g.tensors()) {
        if (t.producer != kNoNode) continue;
        if (t.role == TensorRole::input) inputs.push_back(tensor_json(t));
        if (t.role == TensorRole::parameter) parameters.push_back(tensor_json(t));
        if (t.role == TensorRole::optimizer_state)
            throw InputError("graph '" + g.name + "' holds optimizer state: only a forward graph can be written as a model file");
    }
    for (const NodeId id : g.topological_order()) {
        const Node& n = g.node(id);
        if (n.phase != Phase::forward)
            throw InputError("graph '" + g.name + "' has " + std::string(phase_name(n.phase)) + " node '" + n.name +
                             "': only a forward graph can be written as a model file");
        json node = {{"name", n.name}, {"op", std::string(op_name(n.kind))}};
        json ins = json::array(), outs = json::array();
        for (const TensorId t : n.inputs) ins.push_back(g.tensor(t).name);
        for (const TensorId t : n.outputs) outs.push_back(g.tensor(t).name);
        node["inputs"] = std::move(ins);
        node["outputs"] = std::move(outs);
        if (!n.attrs.all().empty()) {
            json attrs = json::object();
            for (const auto& [k, v] : n.attrs.all()) std::visit([&](const auto& x) { attrs[k] = x; }, v);
            node["attrs"] = std::move(attrs);
        }
        nodes.push_back(std::move(node));
    }
    for (const TensorId t : g.outputs()) outputs.push_back(g.tensor(t).name);
    return json{{"format", "roofline-model/1"},
                {"name", g.name},
                {"description", "written by roofline model export from " + g.origin},
                {"dtype_policy",
                 {{"compute", std::string(dtype_name(g.compute_dtype))},
                  {"master_weights", g.precision.master_weights},
                  {"loss_scale", g.precision.loss_scale}}},
                {"inputs", std::move(inputs)},
                {"parameters", std::move(parameters)},
                {"nodes", std::move(nodes)},
                {"outputs", std::move(outputs)}};
}

}  // namespace roofline
