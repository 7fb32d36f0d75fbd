// cumsum(x): a running sum along attribute `axis` (required); `exclusive`: the sum of the elements
// before, not including this one; `reverse`: from the end (ONNX CumSum); any numeric dtype, y of
// x's shape and dtype. Its CUDA kernels: ops/defs/cumsum.cu.
#include <cstddef>
#include <cstdint>

#include "ops/op_def.hpp"

namespace roofline {
namespace {

std::vector<TensorDesc> cumsum_infer(OpKind, Inputs in, const Attrs& attrs) {
    (void)normalize_axis(attrs.require_int("axis"), in[0].rank());
    (void)attrs.get_bool("exclusive", false);
    (void)attrs.get_bool("reverse", false);
    return {in[0]};
}

// A scan: one add per element, x read once and y written once.
Work cumsum_work(OpKind, Inputs in, std::span<const TensorDesc> out, const Attrs&) {
    Work w = io_bytes(in, out);
    w.vector_flops = in[0].numel();
    return w;
}

// Each x_i feeds every y_j at or after it (before it when reversed; strictly, when exclusive), so
// dx is the running sum of dy the other way: the same op with `reverse` flipped.
std::vector<TensorRef> cumsum_grad(GradBuilder& b, const GradArgs& a) {
    std::vector<TensorRef> g(a.inputs.size(), kNoGrad);
    if (!a.needs[0]) return g;
    Attrs at = a.attrs;
    at.set("reverse", !a.attrs.get_bool("reverse", false));
    g[0] = b.one(OpKind::cumsum, {a.output_grads[0]}, at);
    return g;
}

// x seen as [outer, n, inner] around the axis; each (outer, inner) line summed along n.
void cumsum_reference(const std::vector<const HostTensor*>& in, const Attrs& a, std::vector<HostTensor>& out) {
    const Shape& s = in[0]->desc.shape;
    const auto axis = static_cast<std::size_t>(normalize_axis(a.require_int("axis"), in[0]->desc.rank()));
    std::int64_t outer = 1, inner = 1;
    for (std::size_t d = 0; d < s.size(); ++d) {
        if (d < axis) outer *= s[d];
        if (d > axis) inner *= s[d];
    }
    const std::int64_t n = s[axis];
    const bool exclusive = a.get_bool("exclusive", false), reverse = a.get_bool("reverse", false);
    const std::vector<double>& x = in[0]->data;
    std::vector<double>& y = out[0].data;
    for (std::int64_t o = 0; o < outer; ++o)
        for (std::int64_t i = 0; i < inner; ++i) {
            double acc = 0;
            for (std::int64_t step = 0; step < n; ++step) {
                const std::int64_t j = reverse ? n - 1 - step : step;
                const auto at = static_cast<std::size_t>((o * n + j) * inner + i);
                if (exclusive) {
                    y[at] = acc;
                    acc += x[at];
                } else {
                    acc += x[at];
                    y[at] = acc;
                }
            }
        }
}

}  // namespace

ROOFLINE_OP_DEF(cumsum) {
    static const OpDefinition d{
        .rule = {OpFamily::reduction, 1, 1, {"axis", "exclusive", "reverse"}, cumsum_infer, cumsum_work},
        .traits = {},  // a streaming kernel
        .grad = cumsum_grad,
        .reference = cumsum_reference,
        // inclusive along the rows, exclusive along the columns, reversed along a middle axis
        .examples = {{{{3, 4}}, attr("axis", std::int64_t{1})},
                     {{{3, 4}}, attr2("axis", std::int64_t{0}, "exclusive", true)},
                     {{{3, 5, 4}}, attr2("axis", std::int64_t{1}, "reverse", true)}},
    };
    return d;
}

}  // namespace roofline
