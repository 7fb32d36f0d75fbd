// ONNX ModelProto -> OnnxModel (model/onnx_model.hpp), then ONNX shape inference. The only file
// that sees protobuf; built against Debian's libonnx-dev when ROOFLINE_WITH_ONNX is on: into the
// model library (parse_onnx), and on its own as the module the roofline executable loads on first
// use (ROOFLINE_ONNX_MODULE: roofline-onnx.so, entry kOnnxModuleEntry; cli/onnx_module.cpp).
// Nothing else belongs here: the executable's own parse_onnx takes this file's place at link time.
#include "model/onnx_model.hpp"

#include <cmath>
#include <cstring>
#include <type_traits>

#include "ops/error.hpp"

#if ROOFLINE_WITH_ONNX
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>
#endif

namespace roofline {

#if !ROOFLINE_WITH_ONNX

OnnxModel parse_onnx(std::string_view, const std::string& origin) {
    throw InputError(origin + ": this roofline was built without ONNX support");
}

#else

namespace {

[[noreturn]] void fail(const std::string& origin, const std::string& msg) { throw InputError(origin + ": " + msg); }

// Little-endian raw_data of n elements of `width` bytes.
template <class T>
std::vector<T> raw_values(const std::string& raw, std::size_t n, const OnnxTensor& t, const std::string& origin) {
    if (raw.size() != n * sizeof(T)) {
        fail(origin, "tensor '" + t.name + "' has " + std::to_string(raw.size()) + " bytes of raw data, expected " +
                         std::to_string(n * sizeof(T)) + " for its shape");
    }
    std::vector<T> v(n);
    if (n > 0) std::memcpy(v.data(), raw.data(), n * sizeof(T));
    return v;
}

double half_to_double(std::uint16_t h) {
    const int sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    double v = exp == 0 ? std::ldexp(mant, -24) : exp == 31 ? (mant ? NAN : INFINITY) : std::ldexp(mant + 1024, exp - 25);
    return sign ? -v : v;
}

double bf16_to_double(std::uint16_t b) {
    const std::uint32_t bits = static_cast<std::uint32_t>(b) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

template <class Field>
void check_count(const Field& field, std::size_t n, const OnnxTensor& t, const std::string& origin) {
    if (static_cast<std::size_t>(field.size()) != n) {
        fail(origin,
             "tensor '" + t.name + "' has " + std::to_string(field.size()) + " values, expected " + std::to_string(n) + " for its shape");
    }
}

OnnxTensor to_tensor(const onnx::TensorProto& p, const std::string& origin) {
    OnnxTensor t;
    t.name = p.name();
    t.elem_type = p.data_type();
    std::int64_t n = 1;
    for (std::int64_t d : p.dims()) {
        if (d < 0) fail(origin, "tensor '" + t.name + "' has a negative dimension " + std::to_string(d));
        t.dims.push_back(d);
        if (d != 0 && n > (std::int64_t{1} << 62) / d) fail(origin, "tensor '" + t.name + "': int64 overflow computing its element count");
        n *= d;
    }
    if (p.data_location() == onnx::TensorProto::EXTERNAL) return t;  // weights elsewhere: shape only
    const bool has_data = p.has_raw_data() || p.float_data_size() || p.int32_data_size() || p.int64_data_size() || p.double_data_size() ||
                          p.uint64_data_size();
    if (!has_data || n > OnnxTensor::kMaxValueElements) return t;
    const auto count = static_cast<std::size_t>(n);
    const std::string& raw = p.raw_data();
    const bool use_raw = p.has_raw_data();
    switch (t.elem_type) {
        case onnx_type::kFloat:
            if (use_raw) {
                for (float v : raw_values<float>(raw, count, t, origin)) t.f.push_back(v);
            } else {
                check_count(p.float_data(), count, t, origin);
                t.f.assign(p.float_data().begin(), p.float_data().end());
            }
            break;
        case onnx_type::kDouble:
            if (use_raw)
                t.f = raw_values<double>(raw, count, t, origin);
            else {
                check_count(p.double_data(), count, t, origin);
                t.f.assign(p.double_data().begin(), p.double_data().end());
            }
            break;
        case onnx_type::kFloat16:
        case onnx_type::kBfloat16: {
            std::vector<std::uint16_t> bits;
            if (use_raw)
                bits = raw_values<std::uint16_t>(raw, count, t, origin);
            else {
                check_count(p.int32_data(), count, t, origin);
                for (auto v : p.int32_data()) bits.push_back(static_cast<std::uint16_t>(v));
            }
            for (auto b : bits) t.f.push_back(t.elem_type == onnx_type::kFloat16 ? half_to_double(b) : bf16_to_double(b));
            break;
        }
        case onnx_type::kInt64:
            if (use_raw)
                t.i = raw_values<std::int64_t>(raw, count, t, origin);
            else {
                check_count(p.int64_data(), count, t, origin);
                t.i.assign(p.int64_data().begin(), p.int64_data().end());
            }
            break;
        case onnx_type::kInt32:
            if (use_raw) {
                for (auto v : raw_values<std::int32_t>(raw, count, t, origin)) t.i.push_back(v);
            } else {
                check_count(p.int32_data(), count, t, origin);
                t.i.assign(p.int32_data().begin(), p.int32_data().end());
            }
            break;
        case onnx_type::kInt8:
        case onnx_type::kUint8:
        case onnx_type::kBool:
            if (use_raw) {
                for (auto v : raw_values<std::uint8_t>(raw, count, t, origin)) {
                    t.i.push_back(t.elem_type == onnx_type::kInt8 ? static_cast<std::int8_t>(v) : v);
                }
            } else {
                check_count(p.int32_data(), count, t, origin);
                t.i.assign(p.int32_data().begin(), p.int32_data().end());
            }
            break;
        default: return t;  // values of other types are never needed to fold shapes
    }
    t.has_values = true;
    return t;
}

OnnxValueInfo to_value_info(const onnx::ValueInfoProto& p) {
    OnnxValueInfo v;
    v.name = p.name();
    if (!p.has_type() || !p.type().has_tensor_type()) return v;
    const auto& tt = p.type().tensor_type();
    v.elem_type = tt.elem_type();
    if (!tt.has_shape()) return v;
    v.has_shape = true;
    for (const auto& d : tt.shape().dim()) {
        OnnxDim od;
        if (d.has_dim_value()) od.value = d.dim_value() < 0 ? -1 : d.dim_value();
        if (d.has_dim_param()) od.param = d.dim_param();
        v.dims.push_back(od);
    }
    return v;
}

OnnxAttr to_attr(const onnx::AttributeProto& a, const std::string& origin, int depth);

OnnxNode to_node(const onnx::NodeProto& n, const std::string& origin, int depth) {
    OnnxNode node;
    node.name = n.name();
    node.op_type = n.op_type();
    node.domain = n.domain();
    node.inputs.assign(n.input().begin(), n.input().end());
    node.outputs.assign(n.output().begin(), n.output().end());
    for (const auto& a : n.attribute()) node.attrs[a.name()] = to_attr(a, origin, depth);
    return node;
}

OnnxAttr to_attr(const onnx::AttributeProto& a, const std::string& origin, int depth) {
    OnnxAttr r;
    switch (a.type()) {
        case onnx::AttributeProto::INT:
            r.type = OnnxAttr::Type::int_;
            r.i = a.i();
            break;
        case onnx::AttributeProto::FLOAT:
            r.type = OnnxAttr::Type::float_;
            r.f = a.f();
            break;
        case onnx::AttributeProto::STRING:
            r.type = OnnxAttr::Type::string_;
            r.s = a.s();
            break;
        case onnx::AttributeProto::INTS:
            r.type = OnnxAttr::Type::ints;
            r.ints.assign(a.ints().begin(), a.ints().end());
            break;
        case onnx::AttributeProto::FLOATS:
            r.type = OnnxAttr::Type::floats;
            r.floats.assign(a.floats().begin(), a.floats().end());
            break;
        case onnx::AttributeProto::TENSOR:
            r.type = OnnxAttr::Type::tensor;
            r.t = std::make_shared<OnnxTensor>(to_tensor(a.t(), origin));
            break;
        case onnx::AttributeProto::GRAPH: {
            if (depth >= OnnxGraph::kMaxDepth)
                fail(origin,
                     "subgraphs nested deeper than " + std::to_string(OnnxGraph::kMaxDepth) + " levels (attribute '" + a.name() + "')");
            auto g = std::make_shared<OnnxGraph>();
            for (const auto& n : a.g().node()) g->nodes.push_back(to_node(n, origin, depth + 1));
            for (const auto& o : a.g().output()) g->outputs.push_back(o.name());
            for (const auto& t : a.g().initializer()) g->initializers.push_back(to_tensor(t, origin));
            r.type = OnnxAttr::Type::graph;
            r.g = std::move(g);
            break;
        }
        default: r.type = OnnxAttr::Type::other; break;  // sparse tensors, type protos, graph lists: unused by mapped ops
    }
    return r;
}

// parse_onnx with its structural check passed in (the module links nothing of roofline's).
OnnxModel read_onnx(std::string_view bytes, const std::string& origin, OnnxCheckFn check) {
    onnx::ModelProto proto;
    if (bytes.size() > static_cast<std::size_t>(INT32_MAX)) fail(origin, "file larger than 2 GiB (protobuf's limit)");
    if (!proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
        fail(origin, "not an ONNX model (the file does not parse as an ONNX ModelProto: not protobuf, truncated or corrupt)");
    }
    if (!proto.has_graph()) fail(origin, "not an ONNX model (no graph; is it an ONNX file?)");
    OnnxModel m;
    m.origin = origin;
    for (const auto& o : proto.opset_import()) {
        if (o.domain().empty() || o.domain() == "ai.onnx") m.opset = o.version();
    }
    if (m.opset <= 0) fail(origin, "the model imports no version of the default ONNX op set (opset_import)");
    const auto& g = proto.graph();
    m.graph_name = g.name();
    for (const auto& v : g.input()) m.inputs.push_back(to_value_info(v));
    for (const auto& v : g.output()) m.outputs.push_back(to_value_info(v));
    for (const auto& t : g.initializer()) m.initializers.push_back(to_tensor(t, origin));
    for (const auto& n : g.node()) m.nodes.push_back(to_node(n, origin, 0));
    (void)check(m);
    // Window attributes checked before ONNX's shape inference runs: it divides by strides and
    // dilations and takes group as a divisor, so a 0 there kills the process (SIGFPE) instead of
    // failing. Kernel sizes, strides, dilations and groups are positive, pads non-negative.
    for (const OnnxNode& n : m.nodes) {
        for (const auto& [name, attr] : n.attrs) {
            const bool positive = name == "strides" || name == "dilations" || name == "kernel_shape" || name == "group";
            if (!positive && name != "pads") continue;
            std::vector<std::int64_t> values = attr.ints;
            if (attr.type == OnnxAttr::Type::int_) values.push_back(attr.i);
            for (const std::int64_t v : values) {
                if (positive ? v < 1 : v < 0)
                    fail(origin, "node '" + n.name + "' (" + n.op_type + "): attribute '" + name + "' must be " +
                                     (positive ? "positive" : "non-negative") + ", got " + std::to_string(v));
            }
        }
    }
    // ONNX's own shape inference fills value_info; the importer uses it for the outputs of ops it
    // keeps opaque (--allow-unknown). Node-level failures are not errors here (error_mode 0): the
    // importer infers every mapped op's shapes itself.
    try {
        onnx::ShapeInferenceOptions options{false, 0, false};
        onnx::shape_inference::InferShapes(proto, onnx::OpSchemaRegistry::Instance(), options);
    } catch (const std::exception& e) {
        fail(origin, std::string("ONNX shape inference failed: ") + e.what());
    }
    for (const auto& v : proto.graph().value_info()) m.value_info.push_back(to_value_info(v));
    return m;
}

}  // namespace

#if ROOFLINE_ONNX_MODULE
extern "C" [[gnu::visibility("default")]] void roofline_read_onnx(std::string_view bytes, const std::string& origin, OnnxCheckFn check,
                                                                  OnnxModel& out) {
    out = read_onnx(bytes, origin, check);
}
static_assert(std::is_same_v<decltype(&roofline_read_onnx), OnnxReadFn>, "the module's entry has the type the executable calls");
#else
OnnxModel parse_onnx(std::string_view bytes, const std::string& origin) { return read_onnx(bytes, origin, check_onnx_structure); }
#endif

#endif

}  // namespace roofline
