#pragma once
// Constant folding for the ONNX importer: evaluates a node whose inputs are all known small tensors
// (the Shape -> Gather -> Unsqueeze -> Concat -> Reshape chains of real exports, Constant and
// Range, masks built from shapes). Integer arithmetic is overflow-checked; nothing here trusts
// the file.
#include <optional>
#include <vector>

#include "model/onnx_model.hpp"

namespace roofline {

// The outputs of node n evaluated on known inputs (nullptr for an omitted optional input), or
// nullopt when the op is not one folded here or a result would hold more than
// OnnxTensor::kMaxValueElements values. Throws InputError for inputs the op rejects.
std::optional<std::vector<OnnxTensor>> fold_onnx_node(const OnnxNode& n, const std::vector<const OnnxTensor*>& in, std::int64_t opset);

// Whether fold_onnx_node evaluates this op type (so that the importer does not call it an unknown op).
bool onnx_foldable(const std::string& op_type);

// The output dims of a view op (Reshape, Flatten, Squeeze, Unsqueeze) for input dims x; the shape
// or axes operand, where the op takes one, is in[1] and must be known.
std::vector<std::int64_t> onnx_view_dims(const OnnxNode& n, const std::vector<std::int64_t>& x, const std::vector<const OnnxTensor*>& in,
                                         std::int64_t opset);

std::int64_t onnx_numel(const std::vector<std::int64_t>& dims);  // checked
double onnx_value(const OnnxTensor& t, std::size_t k);           // element k as double
std::int64_t onnx_ivalue(const OnnxTensor& t, std::size_t k);    // element k as int64 (floats: checked truncation)

}  // namespace roofline
