// compare(a, b; mode) -> u8: an element-wise comparison or logical operation on runtime data, a and
// b broadcast (numpy rules) to the output, 1 where it holds and 0 elsewhere (a bool tensor):
//   eq, ne, lt, le, gt, ge   a == b, a != b, a < b, ... (ONNX Equal, Less, LessOrEqual, Greater,
//                            GreaterOrEqual; torch.eq, lt, ...)
//   and, or, xor             of a != 0 and b != 0 (ONNX And, Or, Xor on bool tensors; torch.logical_*)
// One kernel each in PyTorch (a TensorIterator comparison, ATen's compare_*_kernel): one operation
// per output element, the operands read once and the u8 output written. Masks built this way feed a
// where; a bool output has no gradient, so the op has no gradient rule. Its CUDA kernels:
// ops/defs/compare.cu.
#include <cstddef>
#include <cstdint>
#include <string>

#include "ops/defs/compare_mode.hpp"
#include "ops/op_def.hpp"

namespace roofline {

int compare_mode(const Attrs& attrs) {
    static const char* const modes[] = {"eq", "ne", "lt", "le", "gt", "ge", "and", "or", "xor"};
    const std::string m = attrs.get_string("mode", "");
    for (int i = 0; i < 9; ++i)
        if (m == modes[i]) return i;
    throw InputError("compare: attribute 'mode' must be eq, ne, lt, le, gt, ge, and, or or xor, got '" + m + "'");
}

namespace {

std::vector<TensorDesc> compare_infer(OpKind, Inputs in, const Attrs& attrs) {
    (void)compare_mode(attrs);
    if (in[0].dtype != in[1].dtype)
        throw InputError("compare: a " + desc_str(in[0]) + " and b " + desc_str(in[1]) + " must have one dtype (cast one first)");
    return {TensorDesc{broadcast_shapes(in[0].shape, in[1].shape), DType::u8}};
}

Work compare_work(OpKind, Inputs in, std::span<const TensorDesc> out, const Attrs&) {
    Work w = io_bytes(in, out);
    w.vector_flops = out[0].numel();
    return w;
}

void compare_reference(const std::vector<const HostTensor*>& in, const Attrs& attrs, std::vector<HostTensor>& out) {
    const int mode = compare_mode(attrs);
    const Shape& y = out[0].desc.shape;
    for (std::size_t i = 0; i < out[0].data.size(); ++i) {
        const auto at = static_cast<std::int64_t>(i);
        const double a = in[0]->data[static_cast<std::size_t>(broadcast_source(y, in[0]->desc.shape, at))];
        const double b = in[1]->data[static_cast<std::size_t>(broadcast_source(y, in[1]->desc.shape, at))];
        out[0].data[i] = compare_holds(mode, a, b) ? 1.0 : 0.0;
    }
}

}  // namespace

ROOFLINE_OP_DEF(compare) {
    static const OpDefinition d{
        .rule = {OpFamily::elementwise, 2, 2, {"mode"}, compare_infer, compare_work},
        .traits = {},     // a streaming kernel
        .grad = nullptr,  // a bool output: no gradient
        .reference = compare_reference,
        // a row against a matrix (broadcast), and two matrices
        .examples = {{{{3, 4}, {4}}, attr("mode", std::string("lt"))}, {{{2, 3}, {2, 3}}, attr("mode", std::string("eq"))}},
    };
    return d;
}

}  // namespace roofline
