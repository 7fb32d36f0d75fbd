// Activations with a parameter, and the triangle mask, as the exports from timm, torchvision and
// Hugging Face use them (ONNX LeakyRelu, Elu, Selu, Celu, PRelu, Trilu):
//   leaky_relu(x; alpha = 0.01)          x > 0 ? x : alpha x                (torch leaky_relu)
//   elu(x; alpha = 1, scale = 1, input_scale = 1)
//                                        x > 0 ? scale x : scale alpha (exp(input_scale x) - 1)
//     ATen's one elu kernel with its three coefficients (aten/src/ATen/native/cuda/ActivationEluKernel.cu):
//     ELU is (alpha, 1, 1), SELU (1.6733, 1.0507, 1), CELU (alpha, 1, 1 / alpha), so the importer maps
//     Elu, Selu and Celu onto it;
//   prelu(x, slope)                      x > 0 ? x : slope x, slope broadcast to x (ONNX PRelu)
//   trilu(x; upper = true, k = 0)        the upper (j - i >= k) or lower (j - i <= k) triangle of the
//                                        last two axes, zero elsewhere (torch.triu / torch.tril)
// and the gradients PyTorch runs as one kernel each: leaky_relu_backward, elu_backward and
// _prelu_kernel_backward (dx and the slope's gradient at x's shape, then summed to the slope's shape
// by autograd's sum_to_size: a reduce_sum here). Its CUDA kernels: ops/defs/activations.cu.
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "ops/checked.hpp"
#include "ops/op_def.hpp"

namespace roofline {
namespace {

std::vector<TensorDesc> same_as_x(OpKind k, Inputs in, const Attrs&) {
    require_floating(k, in[0], "x");
    return {in[0]};
}

void require_same(OpKind k, const TensorDesc& a, const TensorDesc& b, const char* what) {
    if (a != b) throw InputError(std::string(op_name(k)) + ": " + what + " must match, got " + desc_str(a) + " and " + desc_str(b));
}

// ---- leaky_relu ----

// compare and multiply per element (the select is the compare's)
Work leaky_relu_work(OpKind, Inputs in, std::span<const TensorDesc> out, const Attrs&) {
    Work w = io_bytes(in, out);
    w.vector_flops = checked_mul(in[0].numel(), 2, "FLOPs");
    return w;
}

double leaky(double x, double alpha) { return x > 0 ? x : alpha * x; }

void leaky_relu_reference(const std::vector<const HostTensor*>& in, const Attrs& a, std::vector<HostTensor>& out) {
    const double alpha = a.get_double("alpha", 0.01);
    for (std::size_t i = 0; i < out[0].data.size(); ++i) out[0].data[i] = leaky(in[0]->data[i], alpha);
}

std::vector<TensorRef> leaky_relu_grad_rule(GradBuilder& b, const GradArgs& a) {
    std::vector<TensorRef> g(a.inputs.size(), kNoGrad);
    if (a.needs[0]) g[0] = b.one(OpKind::leaky_relu_grad, {a.output_grads[0], a.inputs[0]}, a.attrs);
    return g;
}

// leaky_relu_grad(dy, x) -> dx = x > 0 ? dy : alpha dy (ATen leaky_relu_backward)
std::vector<TensorDesc> pointwise_grad_infer(OpKind k, Inputs in, const Attrs&) {
    require_floating(k, in[0], "dy");
    require_same(k, in[0], in[1], "dy and x");
    return {in[0]};
}

void leaky_relu_grad_reference(const std::vector<const HostTensor*>& in, const Attrs& a, std::vector<HostTensor>& out) {
    const double alpha = a.get_double("alpha", 0.01);
    for (std::size_t i = 0; i < out[0].data.size(); ++i) out[0].data[i] = in[1]->data[i] > 0 ? in[0]->data[i] : alpha * in[0]->data[i];
}

// ---- elu ----

struct EluCoef {
    double alpha, scale, input_scale;
};
EluCoef elu_coef(const Attrs& a) { return {a.get_double("alpha", 1.0), a.get_double("scale", 1.0), a.get_double("input_scale", 1.0)}; }

// compare, input_scale multiply, exp, subtract 1, multiply by alpha scale, and the positive
// branch's multiply by scale: 5 FLOPs and one exp
Work elu_work(OpKind, Inputs in, std::span<const TensorDesc> out, const Attrs&) {
    Work w = io_bytes(in, out);
    w.vector_flops = checked_mul(in[0].numel(), 5, "FLOPs");
    w.transcendentals = in[0].numel();
    return w;
}

void elu_reference(const std::vector<const HostTensor*>& in, const Attrs& a, std::vector<HostTensor>& out) {
    const EluCoef c = elu_coef(a);
    for (std::size_t i = 0; i < out[0].data.size(); ++i) {
        const double x = in[0]->data[i];
        out[0].data[i] = x > 0 ? c.scale * x : c.scale * c.alpha * (std::exp(c.input_scale * x) - 1);
    }
}

std::vector<TensorRef> elu_grad_rule(GradBuilder& b, const GradArgs& a) {
    std::vector<TensorRef> g(a.inputs.size(), kNoGrad);
    if (a.needs[0]) g[0] = b.one(OpKind::elu_grad, {a.output_grads[0], a.inputs[0]}, a.attrs);
    return g;
}

// elu_grad(dy, x) -> dx = x > 0 ? scale dy : dy input_scale alpha scale exp(input_scale x) (ATen
// elu_backward on the input): compare, 3 multiplies on the negative branch, 1 on the positive, one exp
Work elu_grad_work(OpKind, Inputs in, std::span<const TensorDesc> out, const Attrs&) {
    Work w = io_bytes(in, out);
    w.vector_flops = checked_mul(in[0].numel(), 5, "FLOPs");
    w.transcendentals = in[0].numel();
    return w;
}

void elu_grad_reference(const std::vector<const HostTensor*>& in, const Attrs& a, std::vector<HostTensor>& out) {
    const EluCoef c = elu_coef(a);
    for (std::size_t i = 0; i < out[0].data.size(); ++i) {
        const double dy = in[0]->data[i], x = in[1]->data[i];
        out[0].data[i] = x > 0 ? c.scale * dy : dy * c.input_scale * c.alpha * c.scale * std::exp(c.input_scale * x);
    }
}

// ---- prelu ----

std::vector<TensorDesc> prelu_infer(OpKind k, Inputs in, const Attrs&) {
    require_floating(k, in[0], "x");
    if (in[1].dtype != in[0].dtype) throw InputError("prelu: slope " + desc_str(in[1]) + " must have x's dtype " + desc_str(in[0]));
    if (in[1].rank() > in[0].rank() || broadcast_shapes(in[0].shape, in[1].shape) != in[0].shape) {
        throw InputError("prelu: slope " + desc_str(in[1]) + " must broadcast to x " + desc_str(in[0]) + " (ONNX PRelu: unidirectionally)");
    }
    return {in[0]};
}

// compare and multiply per element; x and the slope read once
Work prelu_work(OpKind, Inputs in, std::span<const TensorDesc> out, const Attrs&) {
    Work w = io_bytes(in, out);
    w.vector_flops = checked_mul(in[0].numel(), 2, "FLOPs");
    return w;
}

void prelu_reference(const std::vector<const HostTensor*>& in, const Attrs&, std::vector<HostTensor>& out) {
    const Shape &x = in[0]->desc.shape, &s = in[1]->desc.shape;
    for (std::size_t i = 0; i < out[0].data.size(); ++i) {
        const double v = in[0]->data[i];
        out[0].data[i] = v > 0 ? v : in[1]->data[static_cast<std::size_t>(broadcast_source(x, s, static_cast<std::int64_t>(i)))] * v;
    }
}

std::vector<TensorRef> prelu_grad_rule(GradBuilder& b, const GradArgs& a) {
    std::vector<TensorRef> g(a.inputs.size(), kNoGrad);
    if (!a.needs[0] && !a.needs[1]) return g;
    const Shape slope = b.desc(a.inputs[1]).shape;
    const std::vector<TensorRef> d = b.emit(OpKind::prelu_grad, {a.output_grads[0], a.inputs[0], a.inputs[1]}, {});
    if (a.needs[0]) g[0] = d[0];
    if (a.needs[1]) g[1] = b.sum_to(d[1], slope);
    return g;
}

// prelu_grad(dy, x, slope) -> (dx, dslope at x's shape): ATen's _prelu_kernel_backward, one
// TensorIterator kernel with two outputs; autograd sums the second to the slope's shape.
std::vector<TensorDesc> prelu_grad_infer(OpKind k, Inputs in, const Attrs& a) {
    require_same(k, in[0], in[1], "dy and x");
    (void)prelu_infer(OpKind::prelu, in.subspan(1), a);
    return {in[0], in[0]};
}

// compare and two multiplies (slope dy, x dy) per element
Work prelu_grad_work(OpKind, Inputs in, std::span<const TensorDesc> out, const Attrs&) {
    Work w = io_bytes(in, out);
    w.vector_flops = checked_mul(in[0].numel(), 3, "FLOPs");
    return w;
}

void prelu_grad_reference(const std::vector<const HostTensor*>& in, const Attrs&, std::vector<HostTensor>& out) {
    const Shape &x = in[1]->desc.shape, &s = in[2]->desc.shape;
    for (std::size_t i = 0; i < out[0].data.size(); ++i) {
        const double dy = in[0]->data[i], v = in[1]->data[i];
        const double w = in[2]->data[static_cast<std::size_t>(broadcast_source(x, s, static_cast<std::int64_t>(i)))];
        out[0].data[i] = v > 0 ? dy : w * dy;
        out[1].data[i] = v > 0 ? 0 : v * dy;
    }
}

// ---- trilu ----

std::vector<TensorDesc> trilu_infer(OpKind, Inputs in, const Attrs& a) {
    if (in[0].rank() < 2)
        throw InputError("trilu: x must have at least 2 dimensions (a matrix or a batch of them), got " + desc_str(in[0]));
    (void)a.get_bool("upper", true);
    (void)a.get_int("k", 0);
    return {in[0]};
}

// one compare of the column offset against k per element (ATen triu_tril_kernel selects per element)
Work trilu_work(OpKind, Inputs in, std::span<const TensorDesc> out, const Attrs&) {
    Work w = io_bytes(in, out);
    w.vector_flops = in[0].numel();
    return w;
}

void trilu_reference(const std::vector<const HostTensor*>& in, const Attrs& a, std::vector<HostTensor>& out) {
    const Shape& s = in[0]->desc.shape;
    const std::int64_t rows = s[s.size() - 2], cols = s[s.size() - 1], k = a.get_int("k", 0);
    const bool upper = a.get_bool("upper", true);
    for (std::size_t i = 0; i < out[0].data.size(); ++i) {
        const auto e = static_cast<std::int64_t>(i);
        const std::int64_t diff = e % cols - (e / cols) % rows;
        out[0].data[i] = (upper ? diff >= k : diff <= k) ? in[0]->data[i] : 0.0;
    }
}

// the mask is linear in x: dx is the same triangle of dy
std::vector<TensorRef> trilu_grad_rule(GradBuilder& b, const GradArgs& a) {
    std::vector<TensorRef> g(a.inputs.size(), kNoGrad);
    if (a.needs[0]) g[0] = b.one(OpKind::trilu, {a.output_grads[0]}, a.attrs);
    return g;
}

}  // namespace

ROOFLINE_OP_DEF(leaky_relu) {
    static const OpDefinition d{
        .rule = {OpFamily::elementwise, 1, 1, {"alpha"}, same_as_x, leaky_relu_work},
        .traits = {},  // a streaming kernel
        .grad = leaky_relu_grad_rule,
        .reference = leaky_relu_reference,
        .examples = {{{{3, 4}}, {}}, {{{2, 5}}, attr("alpha", 0.2)}},
    };
    return d;
}

ROOFLINE_OP_DEF(leaky_relu_grad) {
    static const OpDefinition d{
        .rule = {OpFamily::elementwise, 2, 2, {"alpha"}, pointwise_grad_infer, leaky_relu_work},
        .traits = {},
        .grad = nullptr,
        .reference = leaky_relu_grad_reference,
        .examples = {{{{3, 4}, {3, 4}}, attr("alpha", 0.2)}},
    };
    return d;
}

ROOFLINE_OP_DEF(elu) {
    static const OpDefinition d{
        .rule = {OpFamily::elementwise, 1, 1, {"alpha", "scale", "input_scale"}, same_as_x, elu_work},
        .traits = {},
        .grad = elu_grad_rule,
        .reference = elu_reference,
        // ELU, and SELU's coefficients (torch.nn.SELU)
        .examples = {{{{3, 4}}, {}}, {{{2, 5}}, attr2("alpha", 1.6732632423543772, "scale", 1.0507009873554805)}},
    };
    return d;
}

ROOFLINE_OP_DEF(elu_grad) {
    static const OpDefinition d{
        .rule = {OpFamily::elementwise, 2, 2, {"alpha", "scale", "input_scale"}, pointwise_grad_infer, elu_grad_work},
        .traits = {},
        .grad = nullptr,
        .reference = elu_grad_reference,
        .examples = {{{{3, 4}, {3, 4}}, attr2("alpha", 0.5, "input_scale", 2.0)}},
    };
    return d;
}

ROOFLINE_OP_DEF(prelu) {
    static const OpDefinition d{
        .rule = {OpFamily::elementwise, 2, 2, {}, prelu_infer, prelu_work},
        .traits = {},
        .grad = prelu_grad_rule,
        .reference = prelu_reference,
        // a slope per channel of [N, C, H, W] (torch.nn.PReLU(C) exported), and one shared slope
        .examples = {{{{2, 3, 2, 2}, {3, 1, 1}}, {}}, {{{3, 4}, {1}}, {}}},
    };
    return d;
}

ROOFLINE_OP_DEF(prelu_grad) {
    static const OpDefinition d{
        .rule = {OpFamily::elementwise, 3, 3, {}, prelu_grad_infer, prelu_grad_work},
        .traits = {},
        .grad = nullptr,
        .reference = prelu_grad_reference,
        .examples = {{{{2, 3, 2, 2}, {2, 3, 2, 2}, {3, 1, 1}}, {}}},
    };
    return d;
}

ROOFLINE_OP_DEF(trilu) {
    static const OpDefinition d{
        .rule = {OpFamily::elementwise, 1, 1, {"upper", "k"}, trilu_infer, trilu_work},
        .traits = {},
        .grad = trilu_grad_rule,
        .reference = trilu_reference,
        // the upper triangle of a batch of wide matrices; the lower one below the diagonal
        .examples = {{{{2, 3, 5}}, {}}, {{{4, 4}}, attr2("upper", false, "k", std::int64_t{-1})}},
    };
    return d;
}

}  // namespace roofline
