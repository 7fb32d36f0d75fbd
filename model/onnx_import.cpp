// OnnxModel -> Graph: structural checks, the batch symbol, constant folding of shape computations,
// and the mapping of ONNX ops onto the op vocabulary (README.md, "ONNX models").
#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <queue>
#include <set>
#include <tuple>

#include "model/model_json.hpp"
#include "model/onnx_fold.hpp"
#include "model/onnx_model.hpp"
#include "ops/checked.hpp"
#include "ops/error.hpp"
#include "ops/op_rule.hpp"

namespace roofline {

std::vector<std::size_t> check_onnx_structure(OnnxModel& m) {
    const std::string& origin = m.origin;
    std::set<std::string> names;
    for (std::size_t i = 0; i < m.nodes.size(); ++i) {
        OnnxNode& n = m.nodes[i];
        if (n.name.empty()) n.name = n.op_type + "_" + std::to_string(i);
        if (!names.insert(n.name).second) {
            n.name += "_" + std::to_string(i);
            if (!names.insert(n.name).second) throw InputError(origin + ": node name '" + n.name + "' is used twice");
        }
    }
    std::map<std::string, std::size_t> producer;  // tensor -> node index; sources map to SIZE_MAX
    const std::size_t kSource = static_cast<std::size_t>(-1);
    for (const auto& t : m.initializers) {
        if (t.name.empty()) throw InputError(origin + ": an initializer has no name");
        if (!producer.emplace(t.name, kSource).second) throw InputError(origin + ": initializer '" + t.name + "' is defined twice");
    }
    for (const auto& v : m.inputs) {
        if (v.name.empty()) throw InputError(origin + ": a graph input has no name");
        producer.emplace(v.name, kSource);  // inputs may repeat initializers (older exporters)
    }
    for (std::size_t i = 0; i < m.nodes.size(); ++i) {
        for (const auto& o : m.nodes[i].outputs) {
            if (o.empty()) continue;
            if (!producer.emplace(o, i).second) {
                throw InputError(origin + ": tensor '" + o + "' is defined twice (output of node '" + m.nodes[i].name + "')");
            }
        }
    }
    std::vector<std::vector<std::size_t>> users(m.nodes.size());
    std::vector<std::size_t> indegree(m.nodes.size(), 0);
    for (std::size_t i = 0; i < m.nodes.size(); ++i) {
        const OnnxNode& n = m.nodes[i];
        for (const auto& in : n.inputs) {
            if (in.empty()) continue;
            auto it = producer.find(in);
            if (it == producer.end()) {
                throw InputError(origin + ": node '" + n.name + "' (" + n.op_type + ") reads tensor '" + in +
                                 "', which no graph input, initializer or node output defines (a missing initializer?)");
            }
            if (it->second == kSource) continue;
            users[it->second].push_back(i);
            ++indegree[i];
        }
    }
    for (const auto& v : m.outputs) {
        if (!producer.count(v.name))
            throw InputError(origin + ": graph output '" + v.name + "' is not produced by any node, input or initializer");
    }
    std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>> ready;
    for (std::size_t i = 0; i < m.nodes.size(); ++i) {
        if (indegree[i] == 0) ready.push(i);
    }
    std::vector<std::size_t> order;
    while (!ready.empty()) {
        const std::size_t i = ready.top();
        ready.pop();
        order.push_back(i);
        for (std::size_t u : users[i]) {
            if (--indegree[u] == 0) ready.push(u);
        }
    }
    if (order.size() != m.nodes.size()) {
        std::string stuck;
        int shown = 0;
        for (std::size_t i = 0; i < m.nodes.size() && shown < 10; ++i) {
            if (indegree[i] > 0) {
                stuck += (stuck.empty() ? "'" : ", '") + m.nodes[i].name + "'";
                ++shown;
            }
        }
        throw InputError(origin + ": the graph has a cycle: nodes " + stuck + " wait on each other's outputs");
    }
    return order;
}

namespace {

using Dims = std::vector<std::int64_t>;

// Op types mapped onto the vocabulary when they compute on runtime data.
const std::set<std::string>& mapped_ops() {
    static const std::set<std::string> ops = {"Relu",
                                              "Sigmoid",
                                              "Tanh",
                                              "Exp",
                                              "Log",
                                              "Sqrt",
                                              "Neg",
                                              "Sin",
                                              "Cos",
                                              "Abs",
                                              "Reciprocal",
                                              "Erf",
                                              "Gelu",
                                              "Softplus",
                                              "Mish",
                                              "HardSwish",
                                              "HardSigmoid",
                                              "Clip",
                                              "Pad",
                                              "CumSum",
                                              "TopK",
                                              "LeakyRelu",
                                              "Elu",
                                              "Selu",
                                              "Celu",
                                              "PRelu",
                                              "Trilu",
                                              "ArgMax",
                                              "ArgMin",
                                              "ConvTranspose",
                                              "ReduceMin",
                                              "ReduceProd",
                                              "LogSoftmax",
                                              "Equal",
                                              "Less",
                                              "LessOrEqual",
                                              "Greater",
                                              "GreaterOrEqual",
                                              "And",
                                              "Or",
                                              "Xor",
                                              "Sum",
                                              "Mean",
                                              "DepthToSpace",
                                              "SpaceToDepth",
                                              "QuantizeLinear",
                                              "DequantizeLinear",
                                              "ReduceL1",
                                              "ReduceL2",
                                              "ReduceSumSquare",
                                              "ReduceLogSumExp",
                                              "Add",
                                              "Sub",
                                              "Mul",
                                              "Div",
                                              "Max",
                                              "Pow",
                                              "MatMul",
                                              "Gemm",
                                              "Einsum",
                                              "Conv",
                                              "BatchNormalization",
                                              "MaxPool",
                                              "AveragePool",
                                              "GlobalAveragePool",
                                              "GlobalMaxPool",
                                              "Flatten",
                                              "Reshape",
                                              "Squeeze",
                                              "Unsqueeze",
                                              "Transpose",
                                              "Softmax",
                                              "LayerNormalization",
                                              "InstanceNormalization",
                                              "GroupNormalization",
                                              "ReduceMean",
                                              "ReduceSum",
                                              "ReduceMax",
                                              "Gather",
                                              "GatherElements",
                                              "Concat",
                                              "Split",
                                              "Slice",
                                              "Expand",
                                              "Tile",
                                              "Resize",
                                              "Upsample",
                                              "Where",
                                              "Not",
                                              "Cast",
                                              "Identity",
                                              "Dropout",
                                              "Constant",
                                              "If",
                                              "Shape",
                                              "Size"};
    return ops;
}

bool supported(const OnnxNode& n) {
    if (!n.domain.empty() && n.domain != "ai.onnx") return false;
    return mapped_ops().count(n.op_type) || onnx_foldable(n.op_type);
}

struct Value {
    Dims dims;
    int type = 0;                              // ONNX element type
    std::shared_ptr<const OnnxTensor> konst;   // a constant (values when small enough)
    TensorId id = -1;                          // the graph tensor, once materialised
    TensorRole role = TensorRole::activation;  // parameter: initializers, weight inputs; input: constants
    std::string negation_of;                   // a Not on runtime data: usable only as a Where condition
    bool known() const { return konst && konst->has_values; }
};

class Importer {
public:
    Importer(const OnnxModel& m, const ModelOverrides& ov) : m_(m), ov_(ov) {}

    Graph run() {
        OnnxModel checked = m_;
        const std::vector<std::size_t> order = check_onnx_structure(checked);
        check_ops(checked);
        g_.name = std::filesystem::path(m_.origin).stem().string();  // exporters name every graph "torch_jit" or "main_graph"
        if (g_.name.empty()) g_.name = m_.graph_name;
        g_.origin = m_.origin;
        g_.compute_dtype = ov_.dtype.value_or(DType::f32);
        for (const auto& v : checked.value_info) inferred_[v.name] = &v;
        for (const auto& v : checked.outputs) inferred_[v.name] = &v;
        read_sources(checked);
        for (std::size_t i : order) {
            const OnnxNode& n = checked.nodes[i];
            try {
                import_node(n);
            } catch (const InputError& e) {
                throw InputError(m_.origin + ": node '" + n.name + "' (" + n.op_type + "): " + e.what());
            }
        }
        for (const auto& v : checked.outputs) {
            try {
                g_.mark_output(tensor(v.name));
            } catch (const InputError& e) {
                throw InputError(m_.origin + ": graph output '" + v.name + "': " + e.what());
            }
        }
        verify(g_);
        return std::move(g_);
    }

private:
    const OnnxModel& m_;
    const ModelOverrides& ov_;
    Graph g_;
    std::map<std::string, Value> values_;
    std::map<std::string, std::int64_t> symbols_;  // dim_param -> value (batch, seq)
    std::map<std::string, const OnnxValueInfo*> inferred_;
    int emitted_ = 0;  // project nodes emitted for the current ONNX node
    const OnnxNode* node_ = nullptr;

    [[noreturn]] void fail(const std::string& msg) const { throw InputError(m_.origin + ": " + msg); }

    // Every op type is known, or the user allowed unknown ones: one message listing them all.
    void check_ops(const OnnxModel& m) const {
        if (ov_.allow_unknown) return;
        std::map<std::string, std::vector<std::string>> unknown;
        for (const auto& n : m.nodes) {
            if (!supported(n)) unknown[(n.domain.empty() ? "" : n.domain + ".") + n.op_type].push_back(n.name);
        }
        if (unknown.empty()) return;
        std::string list;
        for (const auto& [op, nodes] : unknown) {
            list += (list.empty() ? "" : "; ") + op + " (node" + (nodes.size() > 1 ? "s " : " ");
            for (std::size_t i = 0; i < nodes.size() && i < 8; ++i) list += (i ? ", '" : "'") + nodes[i] + "'";
            if (nodes.size() > 8) list += ", ... " + std::to_string(nodes.size()) + " in all";
            list += ")";
        }
        fail("unsupported ONNX op types: " + list +
             " (--allow-unknown keeps them as opaque ops with zero work; supported ops are listed in README.md)");
    }

    DType dtype_of(int type, const std::string& name) const {
        switch (type) {
            case onnx_type::kFloat:
            case onnx_type::kDouble:
            case onnx_type::kFloat16:
            case onnx_type::kBfloat16:
                if (ov_.dtype) return *ov_.dtype;
                return type == onnx_type::kFloat     ? DType::f32
                       : type == onnx_type::kDouble  ? DType::f64
                       : type == onnx_type::kFloat16 ? DType::f16
                                                     : DType::bf16;
            case onnx_type::kInt8: return DType::int8;
            case onnx_type::kUint8:
            case onnx_type::kBool: return DType::u8;
            case onnx_type::kInt32: return DType::int32;
            case onnx_type::kInt64: return DType::int64;
            default: throw InputError("tensor '" + name + "' has ONNX type " + onnx_type::name(type) + ", which roofline has no dtype for");
        }
    }

    std::int64_t symbol_value(const OnnxValueInfo& v, std::size_t d, bool first_data_input) {
        const OnnxDim& dim = v.dims[d];
        const std::string key = dim.param.empty() ? "?" + v.name + ":" + std::to_string(d) : dim.param;
        if (auto it = symbols_.find(key); it != symbols_.end()) return it->second;
        const bool seq_like = dim.param == "seq" || dim.param == "sequence" || dim.param == "seq_len" || dim.param == "sequence_length";
        if (first_data_input && d == 0 && !symbols_.count("batch")) {
            const std::int64_t b = ov_.batch.value_or(1);
            symbols_[key] = b;
            g_.dims["batch"] = b;
            batch_param_ = key;
            return b;
        }
        if (seq_like && ov_.seq) {
            symbols_[key] = *ov_.seq;
            g_.dims["seq"] = *ov_.seq;
            return *ov_.seq;
        }
        fail("dimension " + std::to_string(d) + " of input '" + v.name + "' is dynamic" +
             (dim.param.empty() ? "" : " ('" + dim.param + "')") + ": only the batch (the first input's first dimension) may be dynamic" +
             (seq_like ? "; give --seq N for this one" : "; export the model with a fixed size for it"));
    }
    std::string batch_param_;

    void read_sources(const OnnxModel& m) {
        std::set<std::string> init_names;
        for (const auto& t : m.initializers) init_names.insert(t.name);
        bool first = true;
        for (const auto& v : m.inputs) {
            if (init_names.count(v.name)) continue;
            if (!v.has_shape) fail("graph input '" + v.name + "' has no shape");
            bool dynamic = false;
            for (const auto& d : v.dims) dynamic = dynamic || d.value < 0;
            const bool data = first || dynamic;  // export_params=False: the weights are inputs with fixed shapes
            Value val;
            val.type = v.elem_type;
            for (std::size_t d = 0; d < v.dims.size(); ++d) {
                val.dims.push_back(v.dims[d].value >= 0 ? v.dims[d].value : symbol_value(v, d, first));
            }
            try {
                const TensorDesc desc{val.dims, dtype_of(val.type, v.name)};
                (void)desc.bytes();
                val.role = data ? TensorRole::input : TensorRole::parameter;
                if (data) val.id = g_.add_input(v.name, desc);
            } catch (const InputError& e) {
                fail("graph input '" + v.name + "': " + e.what());
            }
            values_[v.name] = std::move(val);
            first = false;
        }
        if (ov_.batch && !g_.dims.count("batch")) {
            fail(
                "--batch given, but the first dimension of the model's first input is fixed; export it with a dynamic "
                "batch axis (torch.onnx.export(..., dynamic_axes={'input': {0: 'batch'}}))");
        }
        if (ov_.seq && !g_.dims.count("seq")) fail("--seq given, but no input has a dynamic dimension named 'seq'");
        for (const auto& t : m.initializers) {
            Value val;
            val.type = t.elem_type;
            val.dims = t.dims;
            val.konst = std::make_shared<OnnxTensor>(t);
            val.role = TensorRole::parameter;
            values_[t.name] = std::move(val);
        }
    }

    // ---- values ----
    const Value& value(const std::string& name) const {
        auto it = values_.find(name);
        if (it == values_.end()) throw InputError("tensor '" + name + "' has no value (produced by an op that was not imported)");
        return it->second;
    }
    const std::string& input_name(const OnnxNode& n, std::size_t k, const char* role) const {
        if (k >= n.inputs.size() || n.inputs[k].empty())
            throw InputError(std::string("missing input ") + std::to_string(k) + " (" + role + ")");
        return n.inputs[k];
    }
    bool has_input(const OnnxNode& n, std::size_t k) const { return k < n.inputs.size() && !n.inputs[k].empty(); }
    const Value& in(const OnnxNode& n, std::size_t k, const char* role) const { return value(input_name(n, k, role)); }
    const OnnxTensor& constant(const OnnxNode& n, std::size_t k, const char* role) const {
        const Value& v = in(n, k, role);
        if (!v.known()) {
            throw InputError(std::string("input ") + std::to_string(k) + " (" + role + ", '" + n.inputs[k] +
                             "') must be a constant (an initializer with values, or computed from shapes only), but it is not");
        }
        return *v.konst;
    }
    Dims ints(const OnnxNode& n, std::size_t k, const char* role) const {
        const OnnxTensor& t = constant(n, k, role);
        Dims v;
        for (std::size_t i = 0; i < t.f.size() + t.i.size(); ++i) v.push_back(onnx_ivalue(t, i));
        return v;
    }
    TensorDesc desc(const std::string& name) const {
        const Value& v = value(name);
        return TensorDesc{v.dims, dtype_of(v.type, name)};
    }
    // The graph tensor of an ONNX value; constants and weight inputs become parameters on first use.
    TensorId tensor(const std::string& name) {
        auto it = values_.find(name);
        if (it == values_.end()) throw InputError("tensor '" + name + "' has no value");
        Value& v = it->second;
        if (!v.negation_of.empty()) throw InputError("'" + name + "' is a Not of runtime data, supported only as the condition of a Where");
        if (v.id < 0) {
            const TensorDesc d{v.dims, dtype_of(v.type, name)};
            v.id = v.role == TensorRole::parameter ? g_.add_parameter(name, d) : g_.add_input(name, d);
        }
        return v.id;
    }
    TensorId tin(const OnnxNode& n, std::size_t k, const char* role) { return tensor(input_name(n, k, role)); }

    void set_constant(const std::string& name, OnnxTensor t) {
        Value v;
        v.type = t.elem_type;
        v.dims = t.dims;
        t.name = name;
        v.konst = std::make_shared<OnnxTensor>(std::move(t));
        v.role = TensorRole::input;  // a constant of the program (Constant, folded values): not trained
        values_[name] = std::move(v);
    }
    void alias(const OnnxNode& n, std::size_t k = 0) {
        if (n.outputs.empty() || n.outputs[0].empty()) return;
        // An unmaterialised weight seen through an Identity becomes its own parameter under the new
        // name: torch.onnx deduplicates initializers of equal value (zero-initialised biases, unit
        // LayerNorm weights, folded batchnorm biases) behind Identity nodes, but the model has one
        // parameter per use (tests/unit/onnx_test.cpp counts resnet50's against torchvision's).
        values_[n.outputs[0]] = value(input_name(n, k, "x"));
    }

    // Appends one project node; the last node of an ONNX node's expansion is named after it and
    // writes its output names, the ones before are "<node>.<i>".
    std::vector<TensorId> emit(OpKind k, const std::vector<TensorId>& ins, const Attrs& a, bool last = true) {
        const OnnxNode& n = *node_;
        std::string name = n.name;
        if (!last) name += "." + std::to_string(emitted_);
        ++emitted_;
        std::vector<std::string> outs;
        if (last) {
            for (const auto& o : n.outputs) outs.push_back(o.empty() ? name + ":unused" + std::to_string(outs.size()) : o);
        } else {
            outs.push_back(name);
        }
        const NodeId id = g_.add_node(name, k, ins, a, outs);
        std::vector<TensorId> result = g_.node(id).outputs;
        if (last) {
            for (std::size_t i = 0; i < n.outputs.size() && i < result.size(); ++i) {
                if (n.outputs[i].empty()) continue;
                Value v;
                v.dims = g_.tensor(result[i]).desc.shape;
                v.type = onnx_type_of(g_.tensor(result[i]).desc.dtype);
                v.id = result[i];
                values_[n.outputs[i]] = std::move(v);
            }
        }
        return result;
    }
    TensorId emit1(OpKind k, const std::vector<TensorId>& ins, const Attrs& a = {}, bool last = true) { return emit(k, ins, a, last)[0]; }

    static int onnx_type_of(DType d) {
        switch (d) {
            case DType::f64: return onnx_type::kDouble;
            case DType::f16: return onnx_type::kFloat16;
            case DType::bf16: return onnx_type::kBfloat16;
            case DType::int8: return onnx_type::kInt8;
            case DType::u8: return onnx_type::kUint8;
            case DType::int32: return onnx_type::kInt32;
            case DType::int64: return onnx_type::kInt64;
            case DType::f32:
            case DType::tf32:
            case DType::fp8_e4m3:
            case DType::fp8_e5m2: return onnx_type::kFloat;
        }
        return onnx_type::kFloat;
    }

    // ---- attributes ----
    static const OnnxAttr* attr(const OnnxNode& n, const char* name) {
        auto it = n.attrs.find(name);
        return it == n.attrs.end() ? nullptr : &it->second;
    }
    static std::int64_t attr_i(const OnnxNode& n, const char* name, std::int64_t fallback) {
        const OnnxAttr* a = attr(n, name);
        if (!a) return fallback;
        if (a->type != OnnxAttr::Type::int_) throw InputError(std::string("attribute '") + name + "' must be an int");
        return a->i;
    }
    static double attr_f(const OnnxNode& n, const char* name, double fallback) {
        const OnnxAttr* a = attr(n, name);
        if (!a) return fallback;
        if (a->type != OnnxAttr::Type::float_) throw InputError(std::string("attribute '") + name + "' must be a float");
        return a->f;
    }
    static std::string attr_s(const OnnxNode& n, const char* name, const std::string& fallback) {
        const OnnxAttr* a = attr(n, name);
        return a && a->type == OnnxAttr::Type::string_ ? a->s : fallback;
    }
    static Dims attr_ints(const OnnxNode& n, const char* name, const Dims& fallback) {
        const OnnxAttr* a = attr(n, name);
        if (!a) return fallback;
        if (a->type != OnnxAttr::Type::ints) throw InputError(std::string("attribute '") + name + "' must be a list of ints");
        return a->ints;
    }

    // ---- one node ----
    void import_node(const OnnxNode& n) {
        node_ = &n;
        emitted_ = 0;
        if (!supported(n)) return opaque(n);
        if (n.op_type == "Constant") return constant_node(n);
        if (n.op_type == "If") return if_node(n);
        if (n.op_type == "Shape" || n.op_type == "Size") return shape_node(n);
        if (onnx_foldable(n.op_type) && try_fold(n)) return;
        if (!mapped_ops().count(n.op_type)) {
            if (ov_.allow_unknown) return opaque(n);
            throw InputError(n.op_type + " is supported only on constants and shapes (folded at load), but an input here is runtime data");
        }
        map_node(n);
    }

    bool try_fold(const OnnxNode& n) {
        std::vector<const OnnxTensor*> ins;
        for (const auto& name : n.inputs) {
            if (name.empty()) {
                ins.push_back(nullptr);
                continue;
            }
            const Value& v = value(name);
            if (!v.known()) return false;
            ins.push_back(v.konst.get());
        }
        auto out = fold_onnx_node(n, ins, m_.opset);
        if (!out) return false;
        for (std::size_t i = 0; i < n.outputs.size() && i < out->size(); ++i) {
            if (!n.outputs[i].empty()) set_constant(n.outputs[i], std::move((*out)[i]));
        }
        return true;
    }

    void constant_node(const OnnxNode& n) {
        OnnxTensor t;
        t.has_values = true;
        if (const OnnxAttr* a = attr(n, "value"); a && a->t) {
            t = *a->t;
        } else if (const OnnxAttr* f = attr(n, "value_float")) {
            t.elem_type = onnx_type::kFloat, t.f = {f->f};
        } else if (const OnnxAttr* fs = attr(n, "value_floats")) {
            t.elem_type = onnx_type::kFloat, t.f = fs->floats, t.dims = {static_cast<std::int64_t>(fs->floats.size())};
        } else if (const OnnxAttr* i = attr(n, "value_int")) {
            t.elem_type = onnx_type::kInt64, t.i = {i->i};
        } else if (const OnnxAttr* is = attr(n, "value_ints")) {
            t.elem_type = onnx_type::kInt64, t.i = is->ints, t.dims = {static_cast<std::int64_t>(is->ints.size())};
        } else {
            throw InputError("a Constant needs a 'value' tensor (or value_float(s), value_int(s))");
        }
        if (n.outputs.empty() || n.outputs[0].empty()) return;
        set_constant(n.outputs[0], std::move(t));
    }

    // If with a constant condition (a shape test, folded): the chosen branch's nodes are imported in
    // place, named "<if>/<node>", and its outputs become the If's. A runtime condition is an error.
    void if_node(const OnnxNode& n) {
        const OnnxTensor& c = constant(n, 0, "cond");
        if (onnx_numel(c.dims) != 1) throw InputError("cond must be a single value, got shape " + shape_str(c.dims));
        const std::string which = onnx_value(c, 0) != 0 ? "then_branch" : "else_branch";
        const OnnxAttr* a = attr(n, which.c_str());
        if (!a || a->type != OnnxAttr::Type::graph || !a->g) throw InputError("the graph attribute '" + which + "' is missing");
        const OnnxGraph& g = *a->g;
        if (g.outputs.size() != n.outputs.size())
            throw InputError(which + " has " + std::to_string(g.outputs.size()) + " outputs, the If " + std::to_string(n.outputs.size()));
        for (const OnnxTensor& t : g.initializers) set_constant(t.name, t);
        std::vector<OnnxNode> nodes = g.nodes;  // kept alive: node_ points into it while a node imports
        for (std::size_t i = 0; i < nodes.size(); ++i) {
            OnnxNode& b = nodes[i];
            const std::string inner = b.name.empty() ? b.op_type + "_" + std::to_string(i) : b.name;
            b.name = n.name + "/" + inner;
            try {
                if (!supported(b) && !ov_.allow_unknown) throw InputError("unsupported ONNX op type " + b.op_type);
                import_node(b);
            } catch (const InputError& e) {
                throw InputError(which + ", node '" + inner + "' (" + b.op_type + "): " + e.what());
            }
        }
        for (std::size_t i = 0; i < n.outputs.size(); ++i) {
            if (!n.outputs[i].empty()) values_[n.outputs[i]] = value(g.outputs[i]);
        }
    }

    void shape_node(const OnnxNode& n) {
        const Dims dims = in(n, 0, "data").dims;
        OnnxTensor t;
        t.elem_type = onnx_type::kInt64;
        t.has_values = true;
        if (n.op_type == "Size") {
            t.i = {onnx_numel(dims)};
        } else {
            const auto rank = static_cast<std::int64_t>(dims.size());
            auto clampi = [&](std::int64_t v) { return std::clamp<std::int64_t>(v < 0 ? v + rank : v, 0, rank); };
            const std::int64_t s = clampi(attr_i(n, "start", 0)), e = clampi(attr_i(n, "end", rank));
            for (std::int64_t d = s; d < e; ++d) t.i.push_back(dims[static_cast<std::size_t>(d)]);
            t.dims = {static_cast<std::int64_t>(t.i.size())};
        }
        if (!n.outputs.empty() && !n.outputs[0].empty()) set_constant(n.outputs[0], std::move(t));
    }

    // An op without a mapping, kept by --allow-unknown: zero work, output shapes from ONNX shape
    // inference (with the batch symbol bound to its value).
    void opaque(const OnnxNode& n) {
        std::vector<TensorId> ins;
        for (const auto& name : n.inputs) {
            if (!name.empty()) ins.push_back(tensor(name));
        }
        Dims ranks, dims;
        std::string dtypes;
        for (const auto& o : n.outputs) {
            if (o.empty()) continue;
            auto it = inferred_.find(o);
            if (it == inferred_.end() || !it->second->has_shape || it->second->elem_type == 0) {
                throw InputError("ONNX shape inference gave no shape for output '" + o +
                                 "'; an unknown op needs one to be kept with --allow-unknown");
            }
            const OnnxValueInfo& v = *it->second;
            for (const auto& d : v.dims) {
                if (d.value >= 0) {
                    dims.push_back(d.value);
                } else if (auto s = symbols_.find(d.param); !d.param.empty() && s != symbols_.end()) {
                    dims.push_back(s->second);
                } else {
                    throw InputError("ONNX shape inference left dimension '" + d.param + "' of output '" + o + "' unknown");
                }
            }
            ranks.push_back(static_cast<std::int64_t>(v.dims.size()));
            dtypes += (dtypes.empty() ? "" : ",") + std::string(dtype_name(dtype_of(v.elem_type, o)));
        }
        Attrs a;
        a.set("op_type", (n.domain.empty() ? "" : n.domain + ".") + n.op_type);
        a.set("ranks", ranks);
        a.set("dims", dims);
        a.set("dtypes", dtypes);
        emit(OpKind::opaque, ins, a);
    }

    void map_node(const OnnxNode& n);
    void map_binary(const OnnxNode& n, OpKind k);
    void map_pow(const OnnxNode& n);
    void map_gemm(const OnnxNode& n);
    void map_conv(const OnnxNode& n);
    void map_batchnorm(const OnnxNode& n);
    void map_pool(const OnnxNode& n);
    void map_reduce(const OnnxNode& n, OpKind k);
    void map_gather(const OnnxNode& n);
    void map_gather_elements(const OnnxNode& n);
    void map_split(const OnnxNode& n);
    void map_slice(const OnnxNode& n);
    void map_where(const OnnxNode& n);
    void map_hardsigmoid(const OnnxNode& n);
    void map_clip(const OnnxNode& n);
    void map_pad(const OnnxNode& n);
    void map_cumsum(const OnnxNode& n);
    void map_topk(const OnnxNode& n);
    void map_elu(const OnnxNode& n);
    void map_trilu(const OnnxNode& n);
    void map_arg(const OnnxNode& n);
    void map_conv_transpose(const OnnxNode& n);
    std::optional<Attrs> reduce_attrs(const OnnxNode& n);
    void map_logsumexp(const OnnxNode& n);
    void map_einsum(const OnnxNode& n);
    void map_compare(const OnnxNode& n);
    void map_variadic_sum(const OnnxNode& n);
    void map_depth_space(const OnnxNode& n);
    void map_quantize(const OnnxNode& n);
    void map_norm(const OnnxNode& n);
    void map_tile(const OnnxNode& n);
    void map_resize(const OnnxNode& n);
    TensorId view(TensorId t, const Dims& shape) {
        if (g_.tensor(t).desc.shape == shape) return t;
        Attrs a;
        a.set("shape", shape);
        return emit1(OpKind::reshape, {t}, a, false);
    }
    // Emits y = x through a chain of unary ops (kind, its attribute, value), the last named after the node.
    void unary_chain(const OnnxNode& n, const std::vector<std::tuple<OpKind, const char*, double>>& chain) {
        TensorId y = tin(n, 0, "x");
        for (std::size_t i = 0; i < chain.size(); ++i) {
            const auto& [k, name, v] = chain[i];
            Attrs a;
            if (name != nullptr) a.set(name, v);
            y = emit1(k, {y}, a, i + 1 == chain.size());
        }
    }
    // A scalar constant input k (Clip's bounds, Pad's value), nullopt when the input is omitted.
    std::optional<double> scalar_input(const OnnxNode& n, std::size_t k, const char* role) const {
        if (!has_input(n, k)) return std::nullopt;
        const OnnxTensor& t = constant(n, k, role);
        if (onnx_numel(t.dims) != 1) throw InputError(std::string(role) + " must be a scalar, got shape " + shape_str(t.dims));
        return onnx_value(t, 0);
    }
    void reshape_from(const OnnxNode&, TensorId t, const Dims& to) {
        Attrs a;
        a.set("shape", to);
        emit1(OpKind::reshape, {t}, a);
    }
    void reshape_to(const OnnxNode& n, const Dims& to) {
        if (to == in(n, 0, "data").dims) return alias(n);
        emit1(OpKind::reshape, {tin(n, 0, "data")}, [&] {
            Attrs a;
            a.set("shape", to);
            return a;
        }());
    }
    void single_output(const OnnxNode& n) const {
        for (std::size_t i = 1; i < n.outputs.size(); ++i) {
            if (!n.outputs[i].empty())
                throw InputError("output " + std::to_string(i) + " ('" + n.outputs[i] + "') is not supported (inference graphs only)");
        }
    }
    // Two entries from an ONNX pads list [begin_h, begin_w, end_h, end_w], which must be symmetric.
    static Dims symmetric_pads(const Dims& pads) {
        if (pads.empty()) return {0, 0};
        if (pads.size() != 4 || pads[0] != pads[2] || pads[1] != pads[3]) {
            throw InputError("pads " + shape_str(pads) + ": only symmetric 2-d padding is supported");
        }
        return {pads[0], pads[1]};
    }
    static void no_auto_pad(const OnnxNode& n) {
        const std::string p = attr_s(n, "auto_pad", "NOTSET");
        if (p != "NOTSET" && p != "VALID") throw InputError("auto_pad " + p + " is not supported (export with explicit pads)");
    }
};

OpKind unary_kind(const std::string& op) {
    if (op == "Relu") return OpKind::relu;
    if (op == "Sigmoid") return OpKind::sigmoid;
    if (op == "Tanh") return OpKind::tanh;
    if (op == "Exp") return OpKind::exp;
    if (op == "Log") return OpKind::log;
    if (op == "Sqrt") return OpKind::sqrt;
    if (op == "Neg") return OpKind::neg;
    if (op == "Sin") return OpKind::sin;
    if (op == "Cos") return OpKind::cos;
    if (op == "Abs") return OpKind::abs;
    if (op == "Reciprocal") return OpKind::reciprocal;
    if (op == "Softplus") return OpKind::softplus;
    if (op == "Mish") return OpKind::mish;
    if (op == "HardSwish") return OpKind::hardswish;
    return OpKind::erf;
}

void Importer::map_node(const OnnxNode& n) {
    const std::string& op = n.op_type;
    if (op == "Relu" || op == "Sigmoid" || op == "Tanh" || op == "Exp" || op == "Log" || op == "Sqrt" || op == "Neg" || op == "Sin" ||
        op == "Cos" || op == "Abs" || op == "Reciprocal" || op == "Erf" || op == "Softplus" || op == "Mish" || op == "HardSwish") {
        emit1(unary_kind(op), {tin(n, 0, "x")});
    } else if (op == "HardSigmoid") {
        map_hardsigmoid(n);
    } else if (op == "Clip") {
        map_clip(n);
    } else if (op == "Pad") {
        map_pad(n);
    } else if (op == "CumSum") {
        map_cumsum(n);
    } else if (op == "TopK") {
        map_topk(n);
    } else if (op == "LeakyRelu") {
        Attrs a;
        a.set("alpha", attr_f(n, "alpha", 0.01));  // ONNX LeakyRelu's default, as torch.nn.LeakyReLU's
        emit1(OpKind::leaky_relu, {tin(n, 0, "X")}, a);
    } else if (op == "Elu" || op == "Selu" || op == "Celu") {
        map_elu(n);
    } else if (op == "PRelu") {
        emit1(OpKind::prelu, {tin(n, 0, "X"), tin(n, 1, "slope")});
    } else if (op == "Trilu") {
        map_trilu(n);
    } else if (op == "ArgMax" || op == "ArgMin") {
        map_arg(n);
    } else if (op == "ConvTranspose") {
        map_conv_transpose(n);
    } else if (op == "ReduceMin") {
        map_reduce(n, OpKind::reduce_min);
    } else if (op == "ReduceProd") {
        map_reduce(n, OpKind::reduce_prod);
    } else if (op == "ReduceL1") {
        map_reduce(n, OpKind::reduce_l1);
    } else if (op == "ReduceL2") {
        map_reduce(n, OpKind::reduce_l2);
    } else if (op == "ReduceSumSquare") {
        map_reduce(n, OpKind::reduce_sum_square);
    } else if (op == "ReduceLogSumExp") {
        map_logsumexp(n);
    } else if (op == "Gelu") {
        const std::string approx = attr_s(n, "approximate", "none");
        emit1(OpKind::gelu, {tin(n, 0, "x")}, [&] {
            Attrs a;
            a.set("approximate", approx == "tanh" ? "tanh" : std::string("erf"));
            return a;
        }());
    } else if (op == "Add") {
        map_binary(n, OpKind::add);
    } else if (op == "Sub") {
        map_binary(n, OpKind::sub);
    } else if (op == "Mul") {
        map_binary(n, OpKind::mul);
    } else if (op == "Div") {
        map_binary(n, OpKind::div);
    } else if (op == "Max") {
        if (n.inputs.size() == 1) return alias(n);
        if (n.inputs.size() != 2) throw InputError("Max of more than two inputs is not supported");
        map_binary(n, OpKind::maximum);
    } else if (op == "Pow") {
        map_pow(n);
    } else if (op == "MatMul") {
        if (in(n, 0, "A").dims.size() < 2 || in(n, 1, "B").dims.size() < 2) throw InputError("MatMul with a 1-d operand is not supported");
        emit1(OpKind::matmul, {tin(n, 0, "A"), tin(n, 1, "B")});
    } else if (op == "Gemm") {
        map_gemm(n);
    } else if (op == "Einsum") {
        map_einsum(n);
    } else if (op == "Conv") {
        map_conv(n);
    } else if (op == "BatchNormalization") {
        map_batchnorm(n);
    } else if (op == "MaxPool" || op == "AveragePool") {
        map_pool(n);
    } else if (op == "GlobalAveragePool" || op == "GlobalMaxPool") {
        const auto rank = static_cast<std::int64_t>(in(n, 0, "x").dims.size());
        if (rank < 3) throw InputError("input must be [N, C, spatial...]");
        Dims axes;
        for (std::int64_t d = 2; d < rank; ++d) axes.push_back(d);
        Attrs a;
        a.set("axes", axes);
        a.set("keepdim", true);
        emit1(op == "GlobalAveragePool" ? OpKind::reduce_mean : OpKind::reduce_max, {tin(n, 0, "x")}, a);
    } else if (op == "Flatten" || op == "Reshape" || op == "Squeeze" || op == "Unsqueeze") {
        std::vector<const OnnxTensor*> args{nullptr};
        if (has_input(n, 1)) args.push_back(&constant(n, 1, op == "Reshape" ? "shape" : "axes"));
        reshape_to(n, onnx_view_dims(n, in(n, 0, "data").dims, args, m_.opset));
    } else if (op == "Transpose") {
        const auto rank = static_cast<std::int64_t>(in(n, 0, "data").dims.size());
        Dims perm = attr_ints(n, "perm", {});
        if (perm.empty())
            for (std::int64_t d = rank; d-- > 0;) perm.push_back(d);
        Attrs a;
        a.set("perm", perm);
        emit1(OpKind::permute, {tin(n, 0, "data")}, a);
    } else if (op == "Softmax") {
        const auto rank = static_cast<std::int64_t>(in(n, 0, "x").dims.size());
        const std::int64_t axis = normalize_axis(attr_i(n, "axis", m_.opset >= 13 ? -1 : 1), rank);
        if (m_.opset < 13 && axis != rank - 1)
            throw InputError("Softmax before opset 13 over axes " + std::to_string(axis) + ".. is not supported (only the last axis)");
        Attrs a;
        a.set("axis", axis);
        emit1(OpKind::softmax, {tin(n, 0, "x")}, a);
    } else if (op == "LogSoftmax") {
        const auto rank = static_cast<std::int64_t>(in(n, 0, "input").dims.size());
        const std::int64_t axis = normalize_axis(attr_i(n, "axis", m_.opset >= 13 ? -1 : 1), rank);
        if (m_.opset < 13 && axis != rank - 1)
            throw InputError("LogSoftmax before opset 13 over axes " + std::to_string(axis) + ".. is not supported (only the last axis)");
        Attrs a;
        a.set("axis", axis);
        emit1(OpKind::log_softmax, {tin(n, 0, "input")}, a);
    } else if (op == "Equal" || op == "Less" || op == "LessOrEqual" || op == "Greater" || op == "GreaterOrEqual" || op == "And" ||
               op == "Or" || op == "Xor") {
        map_compare(n);
    } else if (op == "Sum" || op == "Mean") {
        map_variadic_sum(n);
    } else if (op == "DepthToSpace" || op == "SpaceToDepth") {
        map_depth_space(n);
    } else if (op == "QuantizeLinear" || op == "DequantizeLinear") {
        map_quantize(n);
    } else if (op == "LayerNormalization" || op == "InstanceNormalization" || op == "GroupNormalization") {
        map_norm(n);
    } else if (op == "ReduceMean") {
        map_reduce(n, OpKind::reduce_mean);
    } else if (op == "ReduceSum") {
        map_reduce(n, OpKind::reduce_sum);
    } else if (op == "ReduceMax") {
        map_reduce(n, OpKind::reduce_max);
    } else if (op == "Gather") {
        map_gather(n);
    } else if (op == "GatherElements") {
        map_gather_elements(n);
    } else if (op == "Concat") {
        std::vector<TensorId> ins;
        for (std::size_t k = 0; k < n.inputs.size(); ++k) ins.push_back(tin(n, k, "input"));
        Attrs a;
        a.set("axis", attr_i(n, "axis", 0));
        if (ins.size() == 1) return alias(n);
        emit1(OpKind::concat, ins, a);
    } else if (op == "Split") {
        map_split(n);
    } else if (op == "Slice") {
        map_slice(n);
    } else if (op == "Expand") {
        const Dims to = broadcast_shapes(in(n, 0, "input").dims, ints(n, 1, "shape"));
        if (to == in(n, 0, "input").dims) return alias(n);
        Attrs a;
        a.set("shape", to);
        emit1(OpKind::expand, {tin(n, 0, "input")}, a);
    } else if (op == "Tile") {
        map_tile(n);
    } else if (op == "Resize" || op == "Upsample") {
        map_resize(n);
    } else if (op == "Where") {
        map_where(n);
    } else if (op == "Not") {
        Value v = in(n, 0, "x");
        v.negation_of = n.inputs[0];
        v.id = -1;
        values_[n.outputs.at(0)] = v;
    } else if (op == "Cast") {
        const int to = static_cast<int>(attr_i(n, "to", 0));
        const DType d = dtype_of(to, n.outputs.empty() ? n.name : n.outputs[0]);
        if (d == desc(n.inputs.at(0)).dtype) return alias(n);
        Attrs a;
        a.set("dtype", std::string(dtype_name(d)));
        emit1(OpKind::cast, {tin(n, 0, "input")}, a);
    } else if (op == "Identity" || op == "Dropout") {
        if (op == "Dropout" && n.outputs.size() == 2 && !n.outputs[1].empty()) {
            // inference: the mask (swin_t's attention dropout exports it) keeps everything, a
            // constant of the input's shape (all true; its values are not needed)
            Value mask;
            mask.dims = in(n, 0, "data").dims;
            mask.type = onnx_type::kBool;
            mask.role = TensorRole::input;
            values_[n.outputs[1]] = std::move(mask);
        } else {
            single_output(n);
        }
        alias(n);
    } else {
        throw InputError("internal: no mapping for " + op);
    }
}

void Importer::map_binary(const OnnxNode& n, OpKind k) {
    const Value& a = in(n, 0, "A");
    const Value& b = in(n, 1, "B");
    auto scalar = [](const Value& v) -> std::optional<double> {
        if (!v.known() || !onnx_type::is_float(v.type) || onnx_numel(v.dims) != 1) return std::nullopt;
        return onnx_value(*v.konst, 0);
    };
    // x * c and x / c by a scalar constant are scale ops: no operand to read.
    if (k == OpKind::mul || k == OpKind::div) {
        const auto cb = scalar(b);
        const auto ca = k == OpKind::mul ? scalar(a) : std::nullopt;
        const Value& x = cb ? a : b;
        const std::optional<double> c = cb ? cb : ca;
        if (c && !x.known() && broadcast_shapes(x.dims, (cb ? b : a).dims) == x.dims && (k == OpKind::mul || *c != 0)) {
            Attrs at;
            at.set("factor", k == OpKind::mul ? *c : 1.0 / *c);
            emit1(OpKind::scale, {tin(n, cb ? 0 : 1, "x")}, at);
            return;
        }
    }
    emit1(k, {tin(n, 0, "A"), tin(n, 1, "B")});
}

void Importer::map_pow(const OnnxNode& n) {
    const OnnxTensor& e = constant(n, 1, "exponent");
    if (onnx_numel(e.dims) != 1) throw InputError("Pow with a non-scalar exponent is not supported");
    const double p = onnx_value(e, 0);
    const TensorId x = tin(n, 0, "X");
    if (p == 1) return alias(n);
    if (p == 2)
        emit1(OpKind::mul, {x, x});
    else if (p == 3)
        emit1(OpKind::mul, {emit1(OpKind::mul, {x, x}, {}, false), x});
    else if (p == 0.5)
        emit1(OpKind::sqrt, {x});
    else if (p == -0.5)
        emit1(OpKind::rsqrt, {x});
    else
        throw InputError("Pow with exponent " + std::to_string(p) + " is not supported (2, 3, 0.5, -0.5 and 1 are)");
}

void Importer::map_gemm(const OnnxNode& n) {
    const double alpha = attr_f(n, "alpha", 1.0), beta = attr_f(n, "beta", 1.0);
    const bool ta = attr_i(n, "transA", 0) != 0, tb = attr_i(n, "transB", 0) != 0;
    if (in(n, 0, "A").dims.size() != 2 || in(n, 1, "B").dims.size() != 2) throw InputError("Gemm operands must be 2-d");
    const bool bias_1d = has_input(n, 2) && in(n, 2, "C").dims.size() == 1;
    if (!ta && tb && alpha == 1.0 && (!has_input(n, 2) || (beta == 1.0 && bias_1d))) {  // y = x W^T + b: a linear layer
        std::vector<TensorId> ins{tin(n, 0, "A"), tin(n, 1, "B")};
        if (has_input(n, 2)) ins.push_back(tin(n, 2, "C"));
        emit1(OpKind::linear, ins);
        return;
    }
    Attrs a;
    a.set("transpose_a", ta);
    a.set("transpose_b", tb);
    const bool more = alpha != 1.0 || has_input(n, 2);
    TensorId y = emit1(OpKind::matmul, {tin(n, 0, "A"), tin(n, 1, "B")}, a, !more);
    if (alpha != 1.0) {
        Attrs s;
        s.set("factor", alpha);
        y = emit1(OpKind::scale, {y}, s, !has_input(n, 2));
    }
    if (has_input(n, 2)) {
        TensorId c = tin(n, 2, "C");
        if (beta != 1.0) {
            Attrs s;
            s.set("factor", beta);
            c = emit1(OpKind::scale, {c}, s, false);
        }
        emit1(OpKind::add, {y, c});
    }
}

void Importer::map_conv(const OnnxNode& n) {
    if (in(n, 1, "W").dims.size() != 4)
        throw InputError("only 2-d convolutions are supported (weight " + shape_str(in(n, 1, "W").dims) + ")");
    no_auto_pad(n);
    Attrs a;
    a.set("stride", attr_ints(n, "strides", {1, 1}));
    a.set("padding", symmetric_pads(attr_ints(n, "pads", {})));
    a.set("dilation", attr_ints(n, "dilations", {1, 1}));
    a.set("groups", attr_i(n, "group", 1));
    std::vector<TensorId> ins{tin(n, 0, "X"), tin(n, 1, "W")};
    if (has_input(n, 2)) ins.push_back(tin(n, 2, "B"));
    emit1(OpKind::conv2d, ins, a);
}

// Inference-mode batch normalisation is y = x * a + b per channel with a = scale / sqrt(var + eps)
// and b = B - mean * a, computed once when weights are loaded: a mul and an add over x, reading two
// per-channel parameters "<node>.a" and "<node>.b" shaped [C, 1, ...] to broadcast.
void Importer::map_batchnorm(const OnnxNode& n) {
    single_output(n);
    if (attr_i(n, "training_mode", 0) != 0) throw InputError("training_mode=1 is not supported (export the model in eval mode)");
    const Dims& x = in(n, 0, "X").dims;
    if (x.size() < 2) throw InputError("input must be [N, C, ...]");
    for (std::size_t k = 1; k <= 4; ++k) {
        if (in(n, k, "scale, B, mean or var").dims != Dims{x[1]})
            throw InputError("per-channel input " + std::to_string(k) + " must be [" + std::to_string(x[1]) + "]");
    }
    Dims per_channel{x[1]};
    per_channel.resize(x.size() - 1, 1);
    const TensorDesc d{per_channel, desc(n.inputs[1]).dtype};
    const TensorId a = g_.add_parameter(n.name + ".a", d);
    const TensorId b = g_.add_parameter(n.name + ".b", d);
    emit1(OpKind::add, {emit1(OpKind::mul, {tin(n, 0, "X"), a}, {}, false), b});
}

void Importer::map_pool(const OnnxNode& n) {
    single_output(n);
    no_auto_pad(n);
    const Dims kernel = attr_ints(n, "kernel_shape", {});
    if (kernel.size() != 2) throw InputError("only 2-d pooling is supported (kernel_shape " + shape_str(kernel) + ")");
    Attrs a;
    a.set("kernel", kernel);
    a.set("stride", attr_ints(n, "strides", {1, 1}));
    a.set("padding", symmetric_pads(attr_ints(n, "pads", {})));
    a.set("ceil_mode", attr_i(n, "ceil_mode", 0) != 0);
    const bool max = n.op_type == "MaxPool";
    if (max)
        a.set("dilation", attr_ints(n, "dilations", {1, 1}));
    else
        a.set("count_include_pad", attr_i(n, "count_include_pad", 0) != 0);
    emit1(max ? OpKind::max_pool2d : OpKind::avg_pool2d, {tin(n, 0, "X")}, a);
}

// The Reduce* ops' axes and keepdims: `axes` an attribute before opset 18 and a constant input
// from 18 on (ReduceSum from 13); nullopt when there are none and noop_with_empty_axes says the
// op is the identity.
std::optional<Attrs> Importer::reduce_attrs(const OnnxNode& n) {
    Dims axes;
    const bool axes_input = m_.opset >= 18 || (n.op_type == "ReduceSum" && m_.opset >= 13);
    if (axes_input) {
        if (has_input(n, 1)) axes = ints(n, 1, "axes");
    } else {
        axes = attr_ints(n, "axes", {});
    }
    if (axes.empty() && attr_i(n, "noop_with_empty_axes", 0) != 0) return std::nullopt;
    Attrs a;
    if (!axes.empty()) a.set("axes", axes);
    a.set("keepdim", attr_i(n, "keepdims", 1) != 0);
    return a;
}

void Importer::map_reduce(const OnnxNode& n, OpKind k) {
    const std::optional<Attrs> a = reduce_attrs(n);
    if (!a) return alias(n);
    emit1(k, {tin(n, 0, "data")}, *a);
}

// ReduceLogSumExp as the frameworks run it, in several kernels: torch.logsumexp is amax with
// keepdim, then exp(x - max), sum, log and + max (aten/src/ATen/native/ReduceOps.cpp,
// logsumexp_out_impl), and ONNX Runtime's CUDA ReduceLogSumExp likewise reduces the max, subtracts
// and exponentiates, sums, takes the log and adds the max back (reduction_ops.cc). So: reduce_max
// (keepdim), sub, exp, reduce_sum, log, add; the max reshaped (a view) when keepdims is 0.
void Importer::map_logsumexp(const OnnxNode& n) {
    const std::optional<Attrs> a = reduce_attrs(n);
    if (!a) return alias(n);
    Attrs keep = *a;
    keep.set("keepdim", true);
    const TensorId x = tin(n, 0, "data");
    const TensorId m = emit1(OpKind::reduce_max, {x}, keep, false);
    const TensorId e = emit1(OpKind::exp, {emit1(OpKind::sub, {x, m}, {}, false)}, {}, false);
    const TensorId l = emit1(OpKind::log, {emit1(OpKind::reduce_sum, {e}, *a, false)}, {}, false);
    emit1(OpKind::add, {l, view(m, g_.tensor(l).desc.shape)});
}

// Elu, Selu and Celu are ATen's one elu kernel with (alpha, scale, input_scale) (ops/defs/activations.cpp):
// Elu (alpha = 1.0), Selu (alpha = 1.67326..., scale = gamma = 1.05070...: the ONNX defaults, as
// torch.nn.SELU's), Celu (alpha = 1.0, input_scale = 1 / alpha, as torch.celu calls elu).
void Importer::map_elu(const OnnxNode& n) {
    Attrs a;
    if (n.op_type == "Elu") {
        a.set("alpha", attr_f(n, "alpha", 1.0));
    } else if (n.op_type == "Selu") {
        a.set("alpha", attr_f(n, "alpha", 1.67326319217681884765625));
        a.set("scale", attr_f(n, "gamma", 1.05070102214813232421875));
    } else {
        const double alpha = attr_f(n, "alpha", 1.0);
        if (alpha == 0) throw InputError("Celu's alpha must not be 0 (it divides the input)");
        a.set("alpha", alpha);
        a.set("input_scale", 1.0 / alpha);
    }
    emit1(OpKind::elu, {tin(n, 0, "X")}, a);
}

// Trilu(input, k?): upper (default 1) an attribute, the diagonal offset k an optional constant
// scalar input (opset 14).
void Importer::map_trilu(const OnnxNode& n) {
    Attrs a;
    a.set("upper", attr_i(n, "upper", 1) != 0);
    if (has_input(n, 1)) {
        const Dims k = ints(n, 1, "k");
        if (k.size() != 1) throw InputError("Trilu's k must be one constant integer, got " + shape_str(k));
        a.set("k", k[0]);
    }
    emit1(OpKind::trilu, {tin(n, 0, "input")}, a);
}

// ArgMax/ArgMin(data): axis (default 0) and keepdims (default 1) attributes; select_last_index
// from opset 12 (default 0). int64 indices out.
void Importer::map_arg(const OnnxNode& n) {
    const auto rank = static_cast<std::int64_t>(in(n, 0, "data").dims.size());
    if (rank == 0) throw InputError(n.op_type + " of a scalar");
    Attrs a;
    a.set("axis", normalize_axis(attr_i(n, "axis", 0), rank));
    a.set("keepdim", attr_i(n, "keepdims", 1) != 0);
    if (attr_i(n, "select_last_index", 0) != 0) a.set("select_last_index", true);
    emit1(n.op_type == "ArgMax" ? OpKind::argmax : OpKind::argmin, {tin(n, 0, "data")}, a);
}

// ConvTranspose (2-d) -> conv_transpose2d. ONNX's pads are (begin, end) per axis and the output
// is (H - 1) stride + dilation (k - 1) + 1 + output_padding - begin - end; the op pads both ends
// by `padding` and adds output_padding at the end, so (begin, end) is padding = begin with
// output_padding + begin - end (which must not be negative). output_shape, when given, sets the
// pads from the total padding it implies (ONNX ConvTranspose: begin = total - total / 2, end =
// total / 2 unless auto_pad is SAME_UPPER). auto_pad NOTSET and VALID (no padding) only, as Conv.
void Importer::map_conv_transpose(const OnnxNode& n) {
    const Dims& x = in(n, 0, "X").dims;
    const Dims& w = in(n, 1, "W").dims;
    if (w.size() != 4 || x.size() != 4)
        throw InputError("only 2-d transposed convolutions are supported (input " + shape_str(x) + ", weight " + shape_str(w) + ")");
    no_auto_pad(n);
    const Dims strides = attr_ints(n, "strides", {1, 1}), dilations = attr_ints(n, "dilations", {1, 1});
    const Dims output_padding = attr_ints(n, "output_padding", {0, 0});
    const Dims kernel = attr_ints(n, "kernel_shape", {w[2], w[3]});
    if (strides.size() != 2 || dilations.size() != 2 || output_padding.size() != 2)
        throw InputError("strides, dilations and output_padding must have 2 entries (h, w)");
    if (kernel != Dims{w[2], w[3]}) throw InputError("kernel_shape " + shape_str(kernel) + " differs from the weight's " + shape_str(w));
    Dims pads = attr_s(n, "auto_pad", "NOTSET") == "VALID" ? Dims{0, 0, 0, 0} : attr_ints(n, "pads", {0, 0, 0, 0});
    if (pads.size() != 4) throw InputError("pads " + shape_str(pads) + " must have 4 entries (begin h, begin w, end h, end w)");
    if (const OnnxAttr* os = attr(n, "output_shape")) {
        Dims shape = os->ints;
        if (shape.size() == 4) shape = {shape[2], shape[3]};
        if (shape.size() != 2) throw InputError("output_shape " + shape_str(os->ints) + " must give H and W");
        for (std::size_t i = 0; i < 2; ++i) {
            const std::int64_t total = strides[i] * (x[2 + i] - 1) + output_padding[i] + (kernel[i] - 1) * dilations[i] + 1 - shape[i];
            if (total < 0)
                throw InputError("output_shape " + shape_str(shape) + " is larger than the full transposed convolution (no negative pads)");
            pads[i] = total - total / 2;
            pads[i + 2] = total / 2;
        }
    }
    Dims padding(2), extra(2);
    for (std::size_t i = 0; i < 2; ++i) {
        padding[i] = pads[i];
        extra[i] = output_padding[i] + pads[i] - pads[i + 2];
        if (pads[i] < 0 || pads[i + 2] < 0 || extra[i] < 0)
            throw InputError("pads " + shape_str(pads) + " with output_padding " + shape_str(output_padding) +
                             ": an end pad larger than the begin pad plus output_padding is not supported");
    }
    Attrs a;
    a.set("stride", strides);
    a.set("padding", padding);
    a.set("dilation", dilations);
    a.set("groups", attr_i(n, "group", 1));
    a.set("output_padding", extra);
    std::vector<TensorId> ins{tin(n, 0, "X"), tin(n, 1, "W")};
    if (has_input(n, 2)) ins.push_back(tin(n, 2, "B"));
    emit1(OpKind::conv_transpose2d, ins, a);
}

void Importer::map_gather(const OnnxNode& n) {
    const Value& data = in(n, 0, "data");
    const Value& idx = in(n, 1, "indices");
    const auto rank = static_cast<std::int64_t>(data.dims.size());
    if (rank == 0) throw InputError("Gather from a scalar");
    const std::int64_t axis = normalize_axis(attr_i(n, "axis", 0), rank);
    if (axis == 0 && rank == 2 && !onnx_type::is_float(idx.type)) {  // a table lookup
        emit1(OpKind::embedding, {tin(n, 0, "data"), tin(n, 1, "indices")});
        return;
    }
    if (onnx_type::is_float(idx.type)) throw InputError("Gather's indices must be int32 or int64");
    // Runtime indices, or constant ones that are not one contiguous run: the gather op (an
    // index_select: it reads only the gathered slices).
    const auto general = [&] {
        Attrs a;
        a.set("axis", axis);
        emit1(OpKind::gather, {tin(n, 0, "data"), tin(n, 1, "indices")}, a);
    };
    if (!idx.known() || idx.dims.size() > 1) return general();
    const Dims index = ints(n, 1, "indices");
    const std::int64_t dim = data.dims[static_cast<std::size_t>(axis)];
    if (index.empty()) return general();
    const std::int64_t first = index[0] < 0 ? index[0] + dim : index[0];
    for (std::size_t i = 0; i < index.size(); ++i) {
        const std::int64_t v = index[i] < 0 ? index[i] + dim : index[i];
        if (v < 0 || v >= dim)
            throw InputError("Gather index " + std::to_string(index[i]) + " out of range for dimension " + std::to_string(dim));
        if (v != first + static_cast<std::int64_t>(i)) return general();
    }
    // constant contiguous indices: a slice (a scalar index also drops the axis)
    Attrs a;
    a.set("starts", Dims{first});
    a.set("ends", Dims{first + static_cast<std::int64_t>(index.size())});
    a.set("axes", Dims{axis});
    const bool scalar = idx.dims.empty();
    const TensorId s = emit1(OpKind::slice, {tin(n, 0, "data")}, a, !scalar);
    if (scalar) {  // the indexed axis disappears
        Dims to = data.dims;
        to.erase(to.begin() + axis);
        Attrs r;
        r.set("shape", to);
        emit1(OpKind::reshape, {s}, r);
    }
}

void Importer::map_split(const OnnxNode& n) {
    const Dims& x = in(n, 0, "input").dims;
    const std::int64_t axis = normalize_axis(attr_i(n, "axis", 0), static_cast<std::int64_t>(x.size()));
    Dims sizes;
    if (m_.opset >= 13) {
        if (has_input(n, 1)) sizes = ints(n, 1, "split");
    } else {
        sizes = attr_ints(n, "split", {});
    }
    const auto parts = static_cast<std::int64_t>(n.outputs.size());
    if (sizes.empty()) {
        const std::int64_t dim = x[static_cast<std::size_t>(axis)];
        if (parts == 0) throw InputError("Split without outputs");
        const std::int64_t each = (dim + parts - 1) / parts;  // opset 18: the last part may be smaller
        for (std::int64_t p = 0; p < parts; ++p) sizes.push_back(std::max<std::int64_t>(0, std::min(each, dim - p * each)));
    }
    if (static_cast<std::int64_t>(sizes.size()) != parts)
        throw InputError("Split into " + std::to_string(sizes.size()) + " sizes but " + std::to_string(parts) + " outputs");
    Attrs a;
    a.set("axis", axis);
    a.set("sizes", sizes);
    emit(OpKind::split, {tin(n, 0, "input")}, a);
}

void Importer::map_slice(const OnnxNode& n) {
    Dims starts, ends, axes, steps;
    if (m_.opset < 10) {
        starts = attr_ints(n, "starts", {}), ends = attr_ints(n, "ends", {}), axes = attr_ints(n, "axes", {});
    } else {
        starts = ints(n, 1, "starts"), ends = ints(n, 2, "ends");
        if (has_input(n, 3)) axes = ints(n, 3, "axes");
        if (has_input(n, 4)) steps = ints(n, 4, "steps");
    }
    Attrs a;
    a.set("starts", starts);
    a.set("ends", ends);
    if (!axes.empty()) a.set("axes", axes);
    if (!steps.empty()) a.set("steps", steps);
    const TensorDesc x = desc(n.inputs.at(0));
    const TensorDesc y = infer_outputs(OpKind::slice, std::vector<TensorDesc>{x}, a)[0];
    bool forward = true;
    for (std::int64_t s : steps) forward = forward && s > 0;
    if (y.shape == x.shape && forward) return alias(n);  // the whole tensor
    emit1(OpKind::slice, {tin(n, 0, "data")}, a);
}

// GatherElements(data, indices, axis): out[i][j][k] = data[i][indices[i][j][k]][k] (axis 1), the
// output of the indices' shape (DeBERTa's relative-position scores, torch.gather). The cost model
// needs what it moves, not which elements: as many elements read from data as the output has,
// and written; so it is a slice of the output's extent out of data (copies of data concatenated
// along the axis first when the indices are longer there). Its gradient (ScatterElements-add into
// zeros) is the slice's, a pad: the same bytes. The values are not the gather's; the indices'
// values (input, initializer or computed) are never read.
void Importer::map_gather_elements(const OnnxNode& n) {
    const Dims data = in(n, 0, "data").dims, idx = in(n, 1, "indices").dims;
    if (idx.size() != data.size())
        throw InputError("GatherElements: indices " + shape_str(idx) + " must have data " + shape_str(data) + "'s rank");
    const std::int64_t rank = static_cast<std::int64_t>(data.size());
    const std::int64_t axis = normalize_axis(attr_i(n, "axis", 0), rank);
    for (std::int64_t d = 0; d < rank; ++d) {
        const std::size_t u = static_cast<std::size_t>(d);
        if (d != axis && idx[u] > data[u])
            throw InputError("GatherElements: indices " + shape_str(idx) + " exceed data " + shape_str(data) + " on axis " +
                             std::to_string(d) + " (only the gathered axis " + std::to_string(axis) + " may be longer)");
    }
    const std::size_t ua = static_cast<std::size_t>(axis);
    TensorId src = tin(n, 0, "data");
    if (idx[ua] > data[ua] && data[ua] > 0) {
        const std::int64_t copies = (idx[ua] + data[ua] - 1) / data[ua];
        Attrs c;
        c.set("axis", axis);
        src = emit1(OpKind::concat, std::vector<TensorId>(static_cast<std::size_t>(copies), src), c, false);
    }
    Attrs a;
    a.set("starts", Dims(data.size(), 0));
    a.set("ends", idx);
    emit1(OpKind::slice, {src}, a);
}

void Importer::map_where(const OnnxNode& n) {
    const Value& c = in(n, 0, "condition");
    std::size_t ia = 1, ib = 2;
    std::string cond = n.inputs[0];
    if (!c.negation_of.empty()) {  // Where(Not(c), a, b) = Where(c, b, a)
        cond = c.negation_of;
        std::swap(ia, ib);
    }
    emit1(OpKind::where, {tensor(cond), tin(n, ia, "X"), tin(n, ib, "Y")});
}

// HardSigmoid(x) = max(0, min(1, alpha x + beta)). PyTorch exports its hardsigmoid, relu6(x + 3) / 6,
// with alpha 1/6 and beta 1/2: the hardsigmoid op; other alpha and beta (ONNX's defaults are 0.2 and
// 0.5) scale and shift x into it first: hardsigmoid(6 alpha x + 6 beta - 3) = that clamp.
void Importer::map_hardsigmoid(const OnnxNode& n) {
    const double alpha = attr_f(n, "alpha", 0.2), beta = attr_f(n, "beta", 0.5);
    if (std::fabs(alpha - 1.0 / 6.0) < 1e-6 && beta == 0.5) return unary_chain(n, {{OpKind::hardsigmoid, nullptr, 0}});
    unary_chain(n, {{OpKind::scale, "factor", 6 * alpha}, {OpKind::shift, "offset", 6 * beta - 3}, {OpKind::hardsigmoid, nullptr, 0}});
}

// Clip(x, min, max): the bounds are attributes before opset 11 and optional scalar inputs from it,
// and must be constants. [0, none] is relu and [0, 6] relu6 (PyTorch's ReLU6, the mobile nets'); other
// bounds become a chain around relu or relu6 that computes the same values: [a, none] = relu(x - a) +
// a, [none, b] = b - relu(b - x), [a, b] = a + (b - a)/6 relu6(6 (x - a)/(b - a)).
void Importer::map_clip(const OnnxNode& n) {
    // unbounded: -inf and inf; +-FLT_MAX (the defaults before opset 11) do not bound a float either
    constexpr double kFltMax = 3.4028234663852886e38, kInf = std::numeric_limits<double>::infinity();
    double lo = -kInf, hi = kInf;
    if (m_.opset < 11) {
        lo = attr_f(n, "min", -kInf);
        hi = attr_f(n, "max", kInf);
    } else {
        lo = scalar_input(n, 1, "min").value_or(-kInf);
        hi = scalar_input(n, 2, "max").value_or(kInf);
    }
    if (std::isnan(lo) || std::isnan(hi)) throw InputError("Clip with a NaN bound");
    if (lo > hi) throw InputError("Clip with min " + std::to_string(lo) + " above max " + std::to_string(hi));
    const bool has_lo = lo > -kFltMax, has_hi = hi < kFltMax;
    if (!has_lo && !has_hi) return alias(n);
    if (!has_hi) {
        if (lo == 0) return unary_chain(n, {{OpKind::relu, nullptr, 0}});
        return unary_chain(n, {{OpKind::shift, "offset", -lo}, {OpKind::relu, nullptr, 0}, {OpKind::shift, "offset", lo}});
    }
    if (!has_lo) {
        return unary_chain(n, {{OpKind::neg, nullptr, 0},
                               {OpKind::shift, "offset", hi},
                               {OpKind::relu, nullptr, 0},
                               {OpKind::neg, nullptr, 0},
                               {OpKind::shift, "offset", hi}});
    }
    if (lo == 0 && hi == 6) return unary_chain(n, {{OpKind::relu6, nullptr, 0}});
    if (lo == hi) throw InputError("Clip with min = max (" + std::to_string(lo) + ") is a constant, not supported");
    const double w = hi - lo;
    unary_chain(n, {{OpKind::shift, "offset", -lo},
                    {OpKind::scale, "factor", 6 / w},
                    {OpKind::relu6, nullptr, 0},
                    {OpKind::scale, "factor", w / 6},
                    {OpKind::shift, "offset", lo}});
}

// Einsum of two operands that is a batched matrix product (maxvit_t's attention, "B G H I D, B G H J
// D -> B G H I J"): every index is a batch index (both operands and the output), a row index (the
// first operand and the output), a column index (the second and the output) or a contracted one
// (both operands, not the output). Each operand is permuted into [batch, rows, contracted] (or
// [batch, contracted, columns]) unless it already is, or is its transpose; index groups of more
// than one index are reshaped into one; one matmul; the result reshaped and permuted to the output.
void Importer::map_einsum(const OnnxNode& n) {
    std::string eq;
    for (char c : attr_s(n, "equation", "")) {
        if (c != ' ') eq += c;
    }
    if (eq.find('.') != std::string::npos) throw InputError("Einsum '" + eq + "': letters only, no ellipsis ('...') is supported");
    const auto arrow = eq.find("->");
    const std::string lhs = eq.substr(0, arrow);
    const auto comma = lhs.find(',');
    if (n.inputs.size() != 2 || comma == std::string::npos || lhs.find(',', comma + 1) != std::string::npos)
        throw InputError("Einsum '" + eq + "': only two operands (a batched matrix product) are supported");
    const std::string ta = lhs.substr(0, comma), tb = lhs.substr(comma + 1);
    std::string out;
    if (arrow != std::string::npos) {
        out = eq.substr(arrow + 2);
    } else {  // implicit output: the indices used once, in alphabetical order
        std::string all = ta + tb;
        std::sort(all.begin(), all.end());
        for (char c : all) {
            if (std::count(all.begin(), all.end(), c) == 1) out += c;
        }
    }
    const Dims& da = in(n, 0, "Inputs").dims;
    const Dims& db = in(n, 1, "Inputs").dims;
    std::map<char, std::int64_t> size;
    const Dims no_dims;  // the output's: not checked
    auto check_term = [&](const std::string& t, const Dims& d, const char* what) {
        if (&d != &no_dims && t.size() != d.size())
            throw InputError("Einsum '" + eq + "': " + what + " has " + std::to_string(t.size()) + " indices for shape " + shape_str(d));
        for (std::size_t i = 0; i < t.size(); ++i) {
            if (!std::isalpha(static_cast<unsigned char>(t[i])))
                throw InputError("Einsum '" + eq + "': index '" + std::string(1, t[i]) + "' is not supported (letters only, no ellipsis)");
            if (t.find(t[i], i + 1) != std::string::npos)
                throw InputError("Einsum '" + eq + "': index '" + std::string(1, t[i]) + "' repeats within " + what + " (a diagonal)");
            if (&d == &no_dims) continue;
            if (size.count(t[i]) && size[t[i]] != d[i])
                throw InputError("Einsum '" + eq + "': index '" + std::string(1, t[i]) + "' has sizes " + std::to_string(size[t[i]]) +
                                 " and " + std::to_string(d[i]));
            size[t[i]] = d[i];
        }
    };
    check_term(ta, da, "the first operand");
    check_term(tb, db, "the second operand");
    check_term(out, no_dims, "the output");
    std::string batch, rows, cols, contracted;
    for (char c : out) {
        const bool a = ta.find(c) != std::string::npos, b = tb.find(c) != std::string::npos;
        if (a && b)
            batch += c;
        else if (a)
            rows += c;
        else if (b)
            cols += c;
        else
            throw InputError("Einsum '" + eq + "': output index '" + std::string(1, c) + "' is in no operand");
    }
    for (char c : ta + tb) {
        if (out.find(c) != std::string::npos || contracted.find(c) != std::string::npos) continue;
        if (ta.find(c) == std::string::npos || tb.find(c) == std::string::npos)
            throw InputError("Einsum '" + eq + "': index '" + std::string(1, c) + "' is summed over one operand only (not supported)");
        contracted += c;
    }
    auto dims_of = [&](const std::string& letters) {
        Dims d;
        for (char c : letters) d.push_back(size.at(c));
        return d;
    };
    auto numel = [&](const std::string& letters) { return onnx_numel(dims_of(letters)); };
    // an operand as [batch..., first, second]: permuted (unless `term` is in that order already) and reshaped
    auto operand = [&](std::size_t k, const std::string& term, const std::string& first, const std::string& second) {
        TensorId t = tin(n, k, "Inputs");
        const std::string order = batch + first + second;
        if (term != order) {
            Dims perm;
            for (char c : order) perm.push_back(static_cast<std::int64_t>(term.find(c)));
            Attrs a;
            a.set("perm", perm);
            t = emit1(OpKind::permute, {t}, a, false);
        }
        Dims shape = dims_of(batch);
        shape.push_back(numel(first));
        shape.push_back(numel(second));
        if (shape != dims_of(order)) {
            Attrs a;
            a.set("shape", shape);
            t = emit1(OpKind::reshape, {t}, a, false);
        }
        return t;
    };
    Attrs mm;
    const bool ta_t = ta == batch + contracted + rows && ta != batch + rows + contracted;
    const bool tb_t = tb == batch + cols + contracted && tb != batch + contracted + cols;
    const TensorId a = ta_t ? operand(0, ta, contracted, rows) : operand(0, ta, rows, contracted);
    const TensorId b = tb_t ? operand(1, tb, cols, contracted) : operand(1, tb, contracted, cols);
    if (ta_t) mm.set("transpose_a", true);
    if (tb_t) mm.set("transpose_b", true);
    const std::string product = batch + rows + cols;
    Dims flat = dims_of(batch);
    flat.push_back(numel(rows));
    flat.push_back(numel(cols));
    const bool reshape = flat != dims_of(product), permute = product != out;
    TensorId y = emit1(OpKind::matmul, {a, b}, mm, !reshape && !permute);
    if (reshape) {
        Attrs r;
        r.set("shape", dims_of(product));
        y = emit1(OpKind::reshape, {y}, r, !permute);
    }
    if (permute) {
        Dims perm;
        for (char c : out) perm.push_back(static_cast<std::int64_t>(product.find(c)));
        Attrs p;
        p.set("perm", perm);
        emit1(OpKind::permute, {y}, p);
    }
}

// The normalisations as one layernorm over rows of a reshaped x: LayerNormalization over the axes
// from `axis` (the rows: those axes flattened, Scale and B flattened alike); InstanceNormalization
// over each (n, c)'s spatial elements, GroupNormalization over each (n, group)'s channels and
// spatial elements (num_groups), both followed by the per-channel scale and bias (GroupNormalization's
// opset-18 per-group scale and bias on the grouped view). The reshapes are views (no work).
void Importer::map_norm(const OnnxNode& n) {
    single_output(n);
    const std::string& op = n.op_type;
    const Dims x = in(n, 0, "X").dims;
    const auto rank = static_cast<std::int64_t>(x.size());
    Attrs eps;
    eps.set("eps", attr_f(n, "epsilon", 1e-5));
    auto prod = [](Dims::const_iterator b, Dims::const_iterator e) {
        std::int64_t p = 1;
        for (; b != e; ++b) p = checked_mul(p, *b, "element count");
        return p;
    };
    if (op == "LayerNormalization") {
        const std::int64_t axis = normalize_axis(attr_i(n, "axis", -1), rank);
        Dims rows(x.begin(), x.begin() + axis);
        const std::int64_t len = prod(x.begin() + axis, x.end());
        rows.push_back(len);
        std::vector<TensorId> ins{view(tin(n, 0, "X"), rows)};
        for (std::size_t k = 1; k <= 2; ++k) {
            if (!has_input(n, k)) continue;
            if (in(n, k, "Scale or B").dims != Dims(x.begin() + axis, x.end()))
                throw InputError("input " + std::to_string(k) + " must have the normalised shape " +
                                 shape_str(Dims(x.begin() + axis, x.end())));
            ins.push_back(view(tin(n, k, "Scale or B"), {len}));
        }
        if (ins.size() == 2 && !has_input(n, 1)) throw InputError("B without Scale is not supported");
        const bool last = rows == x;
        const TensorId y = emit1(OpKind::layernorm, ins, eps, last);
        if (!last) reshape_from(n, y, x);
        return;
    }
    if (rank < 3) throw InputError("input must be [N, C, spatial...], got " + shape_str(x));
    const std::int64_t c = x[1];
    const std::int64_t groups = op == "GroupNormalization" ? attr_i(n, "num_groups", 0) : c;
    if (groups <= 0 || c % groups != 0)
        throw InputError("num_groups " + std::to_string(groups) + " must be positive and divide the " + std::to_string(c) + " channels");
    const std::int64_t spatial = prod(x.begin() + 2, x.end());
    const Dims grouped{x[0], groups, checked_mul(c / groups, spatial, "group size")};
    TensorId y = emit1(OpKind::layernorm, {view(tin(n, 0, "X"), grouped)}, eps, false);
    const Dims& sd = in(n, 1, "scale").dims;
    if (in(n, 2, "B").dims != sd) throw InputError("scale " + shape_str(sd) + " and B " + shape_str(in(n, 2, "B").dims) + " differ");
    Dims per;  // the scale's broadcast shape
    if (sd == Dims{c}) {
        y = view(y, x);
        per = {c};
        per.resize(x.size() - 1, 1);
    } else if (sd == Dims{groups}) {
        per = {groups, 1};
    } else {
        throw InputError("scale " + shape_str(sd) + " must be [" + std::to_string(c) + "] (or [num_groups])");
    }
    const bool back = g_.tensor(y).desc.shape != x;
    y = emit1(OpKind::mul, {y, view(tin(n, 1, "scale"), per)}, {}, false);
    y = emit1(OpKind::add, {y, view(tin(n, 2, "B"), per)}, {}, !back);
    if (back) reshape_from(n, y, x);
}

// Tile(x, repeats): per axis repeated r > 1 times, a concat of r copies along it (each reads its input
// and writes its output, as a tiling copy does); repeats must be constants.
void Importer::map_tile(const OnnxNode& n) {
    const Dims reps = ints(n, 1, "repeats");
    const Dims& x = in(n, 0, "input").dims;
    if (reps.size() != x.size())
        throw InputError("repeats " + shape_str(reps) + " must have one entry per axis of the input " + shape_str(x));
    std::vector<std::size_t> axes;
    constexpr std::int64_t kMaxRepeats = 4096;  // one concat input per copy: bounds the graph a file can make
    for (std::size_t a = 0; a < reps.size(); ++a) {
        if (reps[a] < 0 || reps[a] > kMaxRepeats)
            throw InputError("repeats " + shape_str(reps) + " must be within 0.." + std::to_string(kMaxRepeats));
        if (reps[a] != 1) axes.push_back(a);
    }
    if (axes.empty()) return alias(n);
    TensorId y = tin(n, 0, "input");
    for (std::size_t i = 0; i < axes.size(); ++i) {
        Attrs a;
        a.set("axis", static_cast<std::int64_t>(axes[i]));
        const std::vector<TensorId> copies(static_cast<std::size_t>(reps[axes[i]]), y);
        if (copies.empty()) throw InputError("repeats of 0 are not supported (an empty tensor)");
        y = emit1(OpKind::concat, copies, a, i + 1 == axes.size());
    }
}

// Resize (opset 10: X, scales; from 11: X, roi, scales, sizes; 18: axes) and Upsample (X, scales;
// opset 7: a scales attribute): the output shape from constant sizes, or floor(dim * scale); nearest
// or linear (Upsample's and Resize-10's coordinates are asymmetric, nearest rounding down). Cubic,
// tf_crop_and_resize, antialiasing and aspect-ratio policies are not supported.
void Importer::map_resize(const OnnxNode& n) {
    const Dims& x = in(n, 0, "X").dims;
    const bool legacy = n.op_type == "Upsample" || m_.opset < 11;
    Dims sizes;
    std::vector<double> scales;
    auto floats = [&](std::size_t k, const char* role) {
        const OnnxTensor& t = constant(n, k, role);
        std::vector<double> v;
        for (std::size_t i = 0; i < static_cast<std::size_t>(onnx_numel(t.dims)); ++i) v.push_back(onnx_value(t, i));
        return v;
    };
    if (n.op_type == "Upsample" && attr(n, "scales")) {
        const OnnxAttr* a = attr(n, "scales");
        if (a->type != OnnxAttr::Type::floats) throw InputError("attribute 'scales' must be a list of floats");
        scales = a->floats;
    } else if (legacy) {
        scales = floats(1, "scales");
    } else if (has_input(n, 3) && onnx_numel(in(n, 3, "sizes").dims) > 0) {
        sizes = ints(n, 3, "sizes");
    } else {
        scales = floats(2, "scales");
    }
    Dims axes = attr_ints(n, "axes", {});
    const std::size_t given = sizes.empty() ? scales.size() : sizes.size();
    if (axes.empty())
        for (std::size_t d = 0; d < given; ++d) axes.push_back(static_cast<std::int64_t>(d));
    if (axes.size() != given || given > x.size() || (attr(n, "axes") == nullptr && given != x.size()))
        throw InputError("Resize takes " + std::to_string(given) + " sizes or scales for the " + std::to_string(x.size()) + "-d input " +
                         shape_str(x) + " (one per axis)");
    Dims out = x;
    for (std::size_t i = 0; i < axes.size(); ++i) {
        const auto d = static_cast<std::size_t>(normalize_axis(axes[i], static_cast<std::int64_t>(x.size())));
        if (!sizes.empty()) {
            out[d] = sizes[i];
            continue;
        }
        const double v = static_cast<double>(x[d]) * scales[i];
        if (!(scales[i] > 0) || !(v < 9.0e18)) throw InputError("scale " + std::to_string(scales[i]) + " must be positive and finite");
        out[d] = static_cast<std::int64_t>(std::floor(v));
    }
    if (attr_s(n, "keep_aspect_ratio_policy", "stretch") != "stretch" || attr_i(n, "antialias", 0) != 0)
        throw InputError("keep_aspect_ratio_policy and antialias are not supported");
    std::string mode = attr_s(n, "mode", "nearest");
    if (mode == "bilinear") mode = "linear";  // Upsample-7's spelling
    if (mode != "nearest" && mode != "linear") throw InputError("mode " + mode + " is not supported (nearest and linear are)");
    if (out == x) return alias(n);
    Attrs a;
    a.set("sizes", out);
    a.set("mode", mode);
    a.set("coordinate_transformation_mode", legacy ? std::string("asymmetric") : attr_s(n, "coordinate_transformation_mode", "half_pixel"));
    a.set("nearest_mode", legacy ? std::string("floor") : attr_s(n, "nearest_mode", "round_prefer_floor"));
    emit1(OpKind::resize, {tin(n, 0, "X")}, a);
}

// Pad(data, pads, constant_value, axes): pads are an attribute before opset 11 and a constant input
// from it (axes from opset 18); zero pads are the input itself, anything else the pad op (a copy).
void Importer::map_pad(const OnnxNode& n) {
    const Dims& x = in(n, 0, "data").dims;
    const auto rank = static_cast<std::int64_t>(x.size());
    const std::string mode = attr_s(n, "mode", "constant");
    Dims pads;
    double value = 0;
    if (m_.opset < 11) {
        pads = attr_ints(n, "pads", {});
        value = attr_f(n, "value", 0.0);
    } else {
        pads = ints(n, 1, "pads");
        value = scalar_input(n, 2, "constant_value").value_or(0.0);
        if (has_input(n, 3)) {
            const Dims axes = ints(n, 3, "axes");
            if (pads.size() != 2 * axes.size())
                throw InputError("pads " + shape_str(pads) + " must have 2 entries per axis of axes " + shape_str(axes));
            Dims full(2 * x.size(), 0);
            for (std::size_t i = 0; i < axes.size(); ++i) {
                const auto a = static_cast<std::size_t>(normalize_axis(axes[i], rank));
                full[a] = pads[i];
                full[a + x.size()] = pads[i + axes.size()];
            }
            pads = full;
        }
    }
    if (pads.size() != 2 * x.size())
        throw InputError("pads " + shape_str(pads) + " has " + std::to_string(pads.size()) + " entries; the input " + shape_str(x) +
                         " needs 2 per axis (" + std::to_string(2 * x.size()) + ")");
    if (std::all_of(pads.begin(), pads.end(), [](std::int64_t p) { return p == 0; })) return alias(n);
    Attrs a;
    a.set("pads", pads);
    a.set("mode", mode);
    if (value != 0) a.set("value", value);
    emit1(OpKind::pad, {tin(n, 0, "data")}, a);
}

// CumSum(x, axis): the axis is a constant scalar input; exclusive and reverse are attributes.
// Equal, Less, LessOrEqual, Greater, GreaterOrEqual, And, Or, Xor on runtime data (on constants
// they fold at load): one compare op, a bool (u8) output, as a mask for a Where.
void Importer::map_compare(const OnnxNode& n) {
    static const std::map<std::string, std::string> modes = {
        {"Equal", "eq"},          {"Less", "lt"}, {"LessOrEqual", "le"}, {"Greater", "gt"},
        {"GreaterOrEqual", "ge"}, {"And", "and"}, {"Or", "or"},          {"Xor", "xor"}};
    Attrs a;
    a.set("mode", modes.at(n.op_type));
    emit1(OpKind::compare, {tin(n, 0, "A"), tin(n, 1, "B")}, a);
}

// Sum(x1, ..., xn) and Mean: n - 1 broadcasting adds (ONNX Runtime's and torch's pairwise kernels),
// Mean then scaled by 1/n; one input is that input (Mean of one: itself).
void Importer::map_variadic_sum(const OnnxNode& n) {
    if (n.inputs.empty()) throw InputError(n.op_type + " needs at least one input");
    if (n.inputs.size() == 1) return alias(n);
    const bool mean = n.op_type == "Mean";
    TensorId acc = tin(n, 0, "data_0");
    for (std::size_t k = 1; k < n.inputs.size(); ++k) {
        const bool last = !mean && k + 1 == n.inputs.size();
        acc = emit1(OpKind::add, {acc, tin(n, k, "data_k")}, {}, last);
    }
    if (mean) {
        Attrs a;
        a.set("factor", 1.0 / static_cast<double>(n.inputs.size()));
        emit1(OpKind::scale, {acc}, a);
    }
}

// DepthToSpace (blocksize b, mode DCR or CRD) and SpaceToDepth on [N, C, H, W], as the ONNX spec
// defines them: a reshape to rank 6, a permute (the one copy: torch's pixel_shuffle and ONNX
// Runtime's kernel move each element once) and a reshape back.
void Importer::map_depth_space(const OnnxNode& n) {
    const Dims& x = in(n, 0, "input").dims;
    if (x.size() != 4) throw InputError(n.op_type + " needs a 4-d [N, C, H, W] input, got " + shape_str(x));
    const std::int64_t b = attr_i(n, "blocksize", 0);
    if (b < 1) throw InputError("attribute 'blocksize' must be a positive integer");
    const std::int64_t N = x[0], C = x[1], H = x[2], W = x[3];
    Dims split, perm, to;
    if (n.op_type == "DepthToSpace") {
        if (C % (b * b) != 0)
            throw InputError("DepthToSpace: channels " + std::to_string(C) +
                             " are not a multiple of blocksize^2 = " + std::to_string(b * b));
        const std::string mode = attr_s(n, "mode", "DCR");
        if (mode == "DCR") {
            split = {N, b, b, C / (b * b), H, W};
            perm = {0, 3, 4, 1, 5, 2};
        } else if (mode == "CRD") {
            split = {N, C / (b * b), b, b, H, W};
            perm = {0, 1, 4, 2, 5, 3};
        } else {
            throw InputError("DepthToSpace mode '" + mode + "': expected DCR or CRD");
        }
        to = {N, C / (b * b), H * b, W * b};
    } else {
        if (H % b != 0 || W % b != 0)
            throw InputError("SpaceToDepth: height " + std::to_string(H) + " and width " + std::to_string(W) +
                             " must be multiples of blocksize " + std::to_string(b));
        split = {N, C, H / b, b, W / b, b};
        perm = {0, 3, 5, 1, 2, 4};
        to = {N, C * b * b, H / b, W / b};
    }
    Attrs r1, p, r2;
    r1.set("shape", split);
    p.set("perm", perm);
    r2.set("shape", to);
    const TensorId s = emit1(OpKind::reshape, {tin(n, 0, "input")}, r1, false);
    emit1(OpKind::reshape, {emit1(OpKind::permute, {s}, p, false)}, r2);
}

// QuantizeLinear(x, scale, zero_point?) and DequantizeLinear(x, scale, zero_point?): one
// element-wise kernel each that reads x and writes the other type (x / scale + zero point, rounded
// and saturated; or (x - zero point) x scale), modelled as a cast: its traffic is the kernel's (the
// per-tensor or per-channel scales are a few bytes), its two or three FLOPs per element are left
// out. Quantize writes the zero point's type (uint8 without one); dequantize the scale's.
void Importer::map_quantize(const OnnxNode& n) {
    const bool quantize = n.op_type == "QuantizeLinear";
    DType to = DType::u8;
    if (quantize) {
        if (has_input(n, 2)) {
            const int t = in(n, 2, "y_zero_point").type;
            if (t == onnx_type::kInt8) {
                to = DType::int8;
            } else if (t != onnx_type::kUint8) {
                throw InputError("QuantizeLinear to element type " + std::to_string(t) + " is not supported (int8 or uint8)");
            }
        }
    } else {
        to = dtype_of(in(n, 1, "x_scale").type, n.inputs[1]);
    }
    Attrs a;
    a.set("dtype", std::string(dtype_name(to)));
    emit1(OpKind::cast, {tin(n, 0, "x")}, a);
}

void Importer::map_cumsum(const OnnxNode& n) {
    const Dims axis = ints(n, 1, "axis");
    if (axis.size() != 1) throw InputError("CumSum's axis must be one constant integer, got " + shape_str(axis));
    Attrs a;
    a.set("axis", normalize_axis(axis[0], static_cast<std::int64_t>(in(n, 0, "x").dims.size())));
    if (attr_i(n, "exclusive", 0) != 0) a.set("exclusive", true);
    if (attr_i(n, "reverse", 0) != 0) a.set("reverse", true);
    emit1(OpKind::cumsum, {tin(n, 0, "x")}, a);
}

// TopK(X, K) -> (Values, Indices): K is a constant one-element input; axis, largest and sorted are
// attributes (opset 11; opset 1 had K as an attribute and neither flag).
void Importer::map_topk(const OnnxNode& n) {
    Dims k;
    if (m_.opset < 10)
        k = {attr_i(n, "k", 0)};
    else
        k = ints(n, 1, "K");
    if (k.size() != 1) throw InputError("TopK's K must be one constant integer, got " + shape_str(k));
    Attrs a;
    a.set("k", k[0]);
    a.set("axis", normalize_axis(attr_i(n, "axis", -1), static_cast<std::int64_t>(in(n, 0, "X").dims.size())));
    a.set("largest", attr_i(n, "largest", 1) != 0);
    a.set("sorted", attr_i(n, "sorted", 1) != 0);
    emit(OpKind::topk, {tin(n, 0, "X")}, a);
}

}  // namespace

Graph import_onnx(const OnnxModel& m, const ModelOverrides& ov) { return Importer(m, ov).run(); }

bool onnx_supported() {
#if ROOFLINE_WITH_ONNX
    return true;
#else
    return false;
#endif
}

Graph load_onnx_bytes(std::string_view bytes, const std::string& origin, const ModelOverrides& ov) {
    OnnxModel m = parse_onnx(bytes, origin);
    return import_onnx(m, ov);
}

Graph load_onnx_file(const std::string& path, const ModelOverrides& ov) {
    if (!onnx_supported()) {
        throw InputError(path +
                         ": this roofline was built without ONNX support (install libonnx-dev, libprotobuf-dev "
                         "and protobuf-compiler, then reconfigure with -DROOFLINE_WITH_ONNX=ON)");
    }
    // ONNX files keep large weights in external data; the protobuf itself is limited to 2 GiB.
    return load_onnx_bytes(read_input_file(path, 2048ull << 20), path, ov);
}

}  // namespace roofline
