// log_softmax(x; axis = -1): x - max - log(sum(exp(x - max))) along `axis` (ONNX LogSoftmax, torch
// log_softmax), and its gradient log_softmax_grad(dy, y) = dy - exp(y) sum(dy) along the axis.
// PyTorch runs each as one kernel of its softmax family (aten/src/ATen/native/cuda/SoftMax.cu:
// softmax_warp_forward / cunn_SoftMaxForward with is_log_softmax, and their backward), so both
// carry softmax's row-kernel traits: the cost model launches and costs them as softmax's. Its CUDA
// kernels: ops/defs/log_softmax.cu.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "ops/checked.hpp"
#include "ops/op_def.hpp"

namespace roofline {
namespace {

std::vector<TensorDesc> log_softmax_infer(OpKind k, Inputs in, const Attrs& attrs) {
    require_floating(k, in[0], "x");
    if (in[0].rank() < 1) throw InputError("log_softmax: x must have rank >= 1");
    (void)normalize_axis(attrs.get_int("axis", -1), in[0].rank());
    return {in[0]};
}

// Per element: running max (1), subtract max (1), exp (transcendental), sum (1), subtract the
// log-sum (1); one log per row.
Work log_softmax_work(OpKind, Inputs in, std::span<const TensorDesc> out, const Attrs& attrs) {
    Work w = io_bytes(in, out);
    const std::int64_t n = in[0].numel();
    const std::int64_t len = in[0].shape[static_cast<std::size_t>(normalize_axis(attrs.get_int("axis", -1), in[0].rank()))];
    w.vector_flops = checked_mul(n, 4, "FLOPs");
    w.transcendentals = checked_add(n, len > 0 ? n / len : 0, "transcendentals");
    return w;
}

std::vector<TensorRef> log_softmax_grad_rule(GradBuilder& b, const GradArgs& a) {
    std::vector<TensorRef> g(a.inputs.size(), kNoGrad);
    if (a.needs[0]) g[0] = b.one(OpKind::log_softmax_grad, {a.output_grads[0], a.outputs[0]}, attr("axis", a.attrs.get_int("axis", -1)));
    return g;
}

// x seen as [outer, n, inner] around the axis; f(line base, stride) for each line.
template <class F>
void for_lines(const TensorDesc& d, std::int64_t axis, F&& f) {
    std::int64_t outer = 1, inner = 1;
    for (std::int64_t a = 0; a < d.rank(); ++a) {
        if (a < axis) outer *= d.shape[static_cast<std::size_t>(a)];
        if (a > axis) inner *= d.shape[static_cast<std::size_t>(a)];
    }
    const std::int64_t n = d.shape[static_cast<std::size_t>(axis)];
    for (std::int64_t o = 0; o < outer; ++o)
        for (std::int64_t i = 0; i < inner; ++i) f(o * n * inner + i, inner, n);
}

void log_softmax_reference(const std::vector<const HostTensor*>& in, const Attrs& a, std::vector<HostTensor>& out) {
    const std::vector<double>& x = in[0]->data;
    std::vector<double>& y = out[0].data;
    for_lines(in[0]->desc, normalize_axis(a.get_int("axis", -1), in[0]->desc.rank()),
              [&](std::int64_t base, std::int64_t stride, std::int64_t n) {
                  const auto at = [&](std::int64_t j) { return static_cast<std::size_t>(base + j * stride); };
                  double m = -std::numeric_limits<double>::infinity();
                  for (std::int64_t j = 0; j < n; ++j) m = std::max(m, x[at(j)]);
                  double s = 0;
                  for (std::int64_t j = 0; j < n; ++j) s += std::exp(x[at(j)] - m);
                  const double lse = m + std::log(s);
                  for (std::int64_t j = 0; j < n; ++j) y[at(j)] = x[at(j)] - lse;
              });
}

// log_softmax_grad(dy, y) -> dx
std::vector<TensorDesc> log_softmax_grad_infer(OpKind k, Inputs in, const Attrs& attrs) {
    require_floating(k, in[0], "dy");
    if (in[0] != in[1]) throw InputError("log_softmax_grad: dy " + desc_str(in[0]) + " and y " + desc_str(in[1]) + " must match");
    (void)normalize_axis(attrs.get_int("axis", -1), in[0].rank());
    return {in[0]};
}

// Per element: the row sum of dy (1), exp(y) (transcendental), multiply by the sum (1), subtract (1).
Work log_softmax_grad_work(OpKind, Inputs in, std::span<const TensorDesc> out, const Attrs&) {
    Work w = io_bytes(in, out);
    w.vector_flops = checked_mul(in[0].numel(), 3, "FLOPs");
    w.transcendentals = in[0].numel();
    return w;
}

void log_softmax_grad_reference(const std::vector<const HostTensor*>& in, const Attrs& a, std::vector<HostTensor>& out) {
    const std::vector<double>&dy = in[0]->data, &y = in[1]->data;
    std::vector<double>& dx = out[0].data;
    for_lines(in[0]->desc, normalize_axis(a.get_int("axis", -1), in[0]->desc.rank()),
              [&](std::int64_t base, std::int64_t stride, std::int64_t n) {
                  const auto at = [&](std::int64_t j) { return static_cast<std::size_t>(base + j * stride); };
                  double s = 0;
                  for (std::int64_t j = 0; j < n; ++j) s += dy[at(j)];
                  for (std::int64_t j = 0; j < n; ++j) dx[at(j)] = dy[at(j)] - std::exp(y[at(j)]) * s;
              });
}

// softmax's traits (ops/registry.cpp): a row kernel launched as PyTorch's softmax kernels are.
constexpr OpTraits kSoftmaxRow{.kernel = KernelForm::row, .row_launch = RowLaunch::softmax, .eager_extra_calls = 1};

}  // namespace

ROOFLINE_OP_DEF(log_softmax) {
    static const OpDefinition d{
        .rule = {OpFamily::normalization, 1, 1, {"axis"}, log_softmax_infer, log_softmax_work},
        .traits = kSoftmaxRow,
        .grad = log_softmax_grad_rule,
        .reference = log_softmax_reference,
        // the last axis, and a middle one
        .examples = {{{{3, 5}}, {}}, {{{2, 4, 3}}, attr("axis", std::int64_t{1})}},
    };
    return d;
}

ROOFLINE_OP_DEF(log_softmax_grad) {
    static const OpDefinition d{
        .rule = {OpFamily::normalization, 2, 2, {"axis"}, log_softmax_grad_infer, log_softmax_grad_work},
        .traits = {.kernel = KernelForm::row, .row_launch = RowLaunch::softmax},
        .grad = nullptr,
        .reference = log_softmax_grad_reference,
        .examples = {},
    };
    return d;
}

}  // namespace roofline
