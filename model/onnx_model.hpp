#pragma once
// An ONNX model as the importer sees it, free of protobuf types: model/onnx_proto.cpp fills it from
// a ModelProto (only when built with ROOFLINE_WITH_ONNX), model/onnx_import.cpp turns it into a
// Graph. Keeping protobuf out of this header keeps the mapping testable and cheap to compile.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/graph.hpp"

namespace roofline {

struct ModelOverrides;

// ONNX TensorProto.DataType values (onnx/onnx.proto), kept as plain ints.
namespace onnx_type {
inline constexpr int kFloat = 1, kUint8 = 2, kInt8 = 3, kUint16 = 4, kInt16 = 5, kInt32 = 6, kInt64 = 7, kString = 8, kBool = 9,
                     kFloat16 = 10, kDouble = 11, kUint32 = 12, kUint64 = 13, kBfloat16 = 16;
bool is_float(int t);
std::string name(int t);  // "FLOAT", "INT64", ... or "type 42"
}  // namespace onnx_type

// A tensor value: initializers, Constant nodes and folded shape computations. Values are read only
// for small tensors (kMaxValueElements); a larger or external tensor has a shape and no values.
struct OnnxTensor {
    std::string name;
    int elem_type = onnx_type::kFloat;
    std::vector<std::int64_t> dims;
    bool has_values = false;
    std::vector<double> f;        // float types
    std::vector<std::int64_t> i;  // integer and bool types
    // Shape computations hold a few dozen values; 2^18 also covers constant masks up to 512x512 and
    // swin_t's shifted-window mask (64 windows x 49 x 49 = 153,664). Beyond it a tensor stays
    // shape-only (a parameter or constant input), which bounds the memory (2 MiB of doubles) and
    // time a hostile file can make folding spend.
    static constexpr std::int64_t kMaxValueElements = 1 << 18;
};

struct OnnxDim {
    std::int64_t value = -1;  // >= 0 when known
    std::string param;        // dim_param ("batch"), empty when unnamed
};

struct OnnxValueInfo {
    std::string name;
    int elem_type = 0;  // 0: unknown
    bool has_shape = false;
    std::vector<OnnxDim> dims;
};

struct OnnxGraph;

struct OnnxAttr {
    enum class Type { int_, float_, string_, ints, floats, tensor, graph, other } type = Type::other;
    std::int64_t i = 0;
    double f = 0;
    std::string s;
    std::vector<std::int64_t> ints;
    std::vector<double> floats;
    std::shared_ptr<OnnxTensor> t;
    std::shared_ptr<const OnnxGraph> g;  // If's then_branch and else_branch
};

struct OnnxNode {
    std::string name;  // unique: the importer names unnamed nodes "<op_type>_<index>"
    std::string op_type;
    std::string domain;
    std::vector<std::string> inputs;  // "" for an omitted optional input
    std::vector<std::string> outputs;
    std::map<std::string, OnnxAttr> attrs;
};

// A subgraph (an If branch): its nodes read the enclosing graph's values by name.
struct OnnxGraph {
    std::vector<OnnxNode> nodes;
    std::vector<std::string> outputs;
    std::vector<OnnxTensor> initializers;
    static constexpr int kMaxDepth = 8;  // nested subgraphs a file may have
};

struct OnnxModel {
    std::string origin;      // the file, for messages
    std::int64_t opset = 0;  // of the default domain
    std::string graph_name;
    std::vector<OnnxValueInfo> inputs;
    std::vector<OnnxValueInfo> outputs;
    std::vector<OnnxValueInfo> value_info;  // from ONNX shape inference
    std::vector<OnnxTensor> initializers;
    std::vector<OnnxNode> nodes;
};

// Parses a serialized ModelProto and runs ONNX shape inference; InputError (naming origin) for
// anything that is not a well-formed model. Throws "built without ONNX support" without ONNX.
OnnxModel parse_onnx(std::string_view bytes, const std::string& origin);
// Structural checks that need no protobuf: unique names, every input defined, no cycle, sane
// dims. Returns the node indices in a dependency order. Called by parse_onnx before shape inference.
std::vector<std::size_t> check_onnx_structure(OnnxModel& m);
// parse_onnx as a module (model/onnx_proto.cpp built alone, roofline-onnx.so beside the roofline
// executable, which links no protobuf and loads it on first use: issue #20): the function named
// kOnnxModuleEntry parses `bytes` into `out`, checking the structure with `check`.
using OnnxCheckFn = std::vector<std::size_t> (*)(OnnxModel&);
using OnnxReadFn = void (*)(std::string_view bytes, const std::string& origin, OnnxCheckFn check, OnnxModel& out);
inline constexpr const char* kOnnxModule = "roofline-onnx.so";
inline constexpr const char* kOnnxModuleEntry = "roofline_read_onnx";
// Maps the ops, folds constants and shape computations, keeps the batch symbol (see README).
Graph import_onnx(const OnnxModel& m, const ModelOverrides& ov);

// Whether this build reads ONNX (ROOFLINE_WITH_ONNX).
bool onnx_supported();
// A .onnx file or its bytes -> Graph.
Graph load_onnx_file(const std::string& path, const ModelOverrides& ov);
Graph load_onnx_bytes(std::string_view bytes, const std::string& origin, const ModelOverrides& ov);

}  // namespace roofline
