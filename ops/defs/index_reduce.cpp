// Reductions that return indices or combine by something else than a sum, and the gather by runtime
// indices, as the exports from timm, torchvision and Hugging Face use them:
//   argmax(x; axis = 0, keepdim = false, select_last_index = false) -> int64 indices of the largest
//   argmin(...)                                                       -> of the smallest
//     (ONNX ArgMax/ArgMin; torch.argmax: one reduction kernel writing int64; ties keep the first
//     index unless select_last_index)
//   reduce_min, reduce_prod, reduce_l1 (sum |x|), reduce_l2 (sqrt(sum x^2)), reduce_sum_square
//     (sum x^2) over `axes` (all when absent), `keepdim`: the reduce_sum/reduce_max rule and kernel
//     form. Each is one reduction kernel in the frameworks: torch.amin and torch.prod are ATen
//     reduce kernels (min_values_kernel_cuda, prod_kernel_cuda); torch.linalg.vector_norm(ord = 1
//     or 2) is one norm_kernel_cuda pass (the square, abs and root fused into the reduction's
//     element and final functions); ONNX Runtime runs ReduceL1/L2/SumSquare as one cuDNN or CUB
//     reduction with the element function fused. So none is a composite of mul, reduce_sum and sqrt.
//   gather(data, indices; axis = 0) -> data.shape[:axis] + indices.shape + data.shape[axis+1:]
//     (ONNX Gather with runtime indices, torch.index_select / x[idx]): reads only the gathered
//     slices; negative indices count from the end.
//   gather_grad(dy, indices; axis, input_shape): zeros of input_shape with dy's slices added at
//     their indices (ATen index_select_backward: zeros + index_add_), as embedding_grad does.
// Their CUDA kernels: ops/defs/index_reduce.cu.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "ops/checked.hpp"
#include "ops/op_def.hpp"

namespace roofline {
namespace {

// ---- shared: x seen as [outer, n, inner] around one axis ----

struct AxisLines {
    std::int64_t outer = 1, n = 1, inner = 1;
};
AxisLines axis_lines(const Shape& s, std::size_t axis) {
    AxisLines l;
    for (std::size_t d = 0; d < s.size(); ++d) {
        if (d < axis) l.outer *= s[d];
        if (d == axis) l.n = s[d];
        if (d > axis) l.inner *= s[d];
    }
    return l;
}

// ---- argmax / argmin ----

std::vector<TensorDesc> arg_infer(OpKind k, Inputs in, const Attrs& a) {
    const TensorDesc& x = in[0];
    if (x.dtype == DType::u8) throw InputError(std::string(op_name(k)) + ": x must be numeric, got " + desc_str(x));
    if (x.rank() == 0) throw InputError(std::string(op_name(k)) + ": x must have at least one dimension");
    const auto axis = static_cast<std::size_t>(normalize_axis(a.get_int("axis", 0), x.rank()));
    if (x.shape[axis] == 0) throw InputError(std::string(op_name(k)) + ": the reduced axis is empty in " + desc_str(x));
    (void)a.get_bool("select_last_index", false);
    Shape out = x.shape;
    if (a.get_bool("keepdim", false))
        out[axis] = 1;
    else
        out.erase(out.begin() + static_cast<std::ptrdiff_t>(axis));
    return {TensorDesc{out, DType::int64}};
}

// one compare (and the index kept with it) per element; x read once, the int64 indices written
Work arg_work(OpKind, Inputs in, std::span<const TensorDesc> out, const Attrs&) {
    Work w = io_bytes(in, out);
    w.vector_flops = in[0].numel();
    return w;
}

void arg_reference(bool largest, const std::vector<const HostTensor*>& in, const Attrs& a, std::vector<HostTensor>& out) {
    const Shape& s = in[0]->desc.shape;
    const auto axis = static_cast<std::size_t>(normalize_axis(a.get_int("axis", 0), in[0]->desc.rank()));
    const bool last = a.get_bool("select_last_index", false);
    const AxisLines l = axis_lines(s, axis);
    for (std::int64_t o = 0; o < l.outer; ++o)
        for (std::int64_t i = 0; i < l.inner; ++i) {
            std::int64_t best = 0;
            double v = in[0]->data[static_cast<std::size_t>(o * l.n * l.inner + i)];
            for (std::int64_t j = 1; j < l.n; ++j) {
                const double x = in[0]->data[static_cast<std::size_t>((o * l.n + j) * l.inner + i)];
                const bool better = largest ? (x > v || (last && x == v)) : (x < v || (last && x == v));
                if (better) best = j, v = x;
            }
            out[0].data[static_cast<std::size_t>(o * l.inner + i)] = static_cast<double>(best);
        }
}
void argmax_reference(const std::vector<const HostTensor*>& in, const Attrs& a, std::vector<HostTensor>& out) {
    arg_reference(true, in, a, out);
}
void argmin_reference(const std::vector<const HostTensor*>& in, const Attrs& a, std::vector<HostTensor>& out) {
    arg_reference(false, in, a, out);
}

// ---- reduce_min, reduce_prod, reduce_l1, reduce_l2, reduce_sum_square ----

std::vector<TensorDesc> reduce_infer(OpKind k, Inputs in, const Attrs& a) {
    if (k == OpKind::reduce_l2) require_floating(k, in[0], "x");
    return reduce_rule().infer(k, in, a);  // reduce_sum's axes, keepdim and errors
}

// Per input element: min and prod one compare or multiply; l1 an abs and an add; l2 and
// sum_square a multiply and an add. l2's square root once per output.
Work reduce_work(OpKind k, Inputs in, std::span<const TensorDesc> out, const Attrs&) {
    Work w = io_bytes(in, out);
    const bool two = k == OpKind::reduce_l1 || k == OpKind::reduce_l2 || k == OpKind::reduce_sum_square;
    w.vector_flops = checked_mul(in[0].numel(), two ? 2 : 1, "FLOPs");
    if (k == OpKind::reduce_l2) w.transcendentals = out[0].numel();
    return w;
}

std::vector<std::int64_t> axes_of(const Shape& s, const Attrs& a) {
    std::vector<std::int64_t> axes;
    if (!a.has("axes")) {
        for (std::size_t i = 0; i < s.size(); ++i) axes.push_back(static_cast<std::int64_t>(i));
    } else {
        for (std::int64_t ax : a.get_ints("axes", {})) axes.push_back(normalize_axis(ax, static_cast<std::int64_t>(s.size())));
    }
    std::sort(axes.begin(), axes.end());
    return axes;
}

// The output element x's flat index i reduces into (the reduced axes dropped or kept as 1s alike).
std::int64_t reduced_index(const Shape& s, const std::vector<std::int64_t>& axes, std::int64_t i) {
    std::int64_t off = 0, stride = 1;
    for (std::size_t d = s.size(); d-- > 0;) {
        const std::int64_t c = i % s[d];
        i /= s[d];
        if (std::binary_search(axes.begin(), axes.end(), static_cast<std::int64_t>(d))) continue;
        off += c * stride;
        stride *= s[d];
    }
    return off;
}

template <OpKind K>
void reduce_reference(const std::vector<const HostTensor*>& in, const Attrs& a, std::vector<HostTensor>& out) {
    const Shape& s = in[0]->desc.shape;
    const auto axes = axes_of(s, a);
    std::vector<double>& y = out[0].data;
    std::fill(y.begin(), y.end(), K == OpKind::reduce_min ? std::numeric_limits<double>::infinity() : K == OpKind::reduce_prod ? 1.0 : 0.0);
    for (std::int64_t i = 0; i < in[0]->desc.numel(); ++i) {
        const double x = in[0]->data[static_cast<std::size_t>(i)];
        double& r = y[static_cast<std::size_t>(reduced_index(s, axes, i))];
        if constexpr (K == OpKind::reduce_min)
            r = std::min(r, x);
        else if constexpr (K == OpKind::reduce_prod)
            r *= x;
        else if constexpr (K == OpKind::reduce_l1)
            r += std::fabs(x);
        else
            r += x * x;
    }
    if constexpr (K == OpKind::reduce_l2)
        for (double& v : y) v = std::sqrt(v);
}

// dy (of the reduced shape) with the reduced axes re-inserted as 1s and broadcast back to x: a view.
TensorRef to_input_shape(GradBuilder& b, TensorRef t, const Shape& xs, const Attrs& a) {
    Shape kept = xs;
    for (std::int64_t ax : axes_of(xs, a)) kept[static_cast<std::size_t>(ax)] = 1;
    if (b.desc(t).shape != kept) t = b.one(OpKind::reshape, {t}, attr("shape", kept));
    return b.expand_to(t, xs);
}

// The gradients, as PyTorch's autograd formulas (tools/autograd/derivatives.yaml) compute them:
//   amin: the gradient flows to the elements equal to the minimum (evenly_distribute_backward; here
//     reduce_max_grad's mask x == y, the same kernel for a minimum);
//   prod: dy * y / x (prod_backward without zeros in x; with zeros it takes another path whose cost
//     is not modelled: the values divide by zero here);
//   vector_norm ord 1: dy * sign(x) (unary_grad of abs); ord 2: x * (dy / y) (norm_backward);
//   sum of squares: 2 x dy.
std::vector<TensorRef> reduce_grad_rule(GradBuilder& b, const GradArgs& a) {
    std::vector<TensorRef> g(a.inputs.size(), kNoGrad);
    if (!a.needs[0]) return g;
    const TensorRef x = a.inputs[0], y = a.outputs[0], dy = a.output_grads[0];
    const Shape xs = b.desc(x).shape;
    switch (a.kind) {
        case OpKind::reduce_min: g[0] = b.one(OpKind::reduce_max_grad, {dy, x, y}, a.attrs); break;
        case OpKind::reduce_prod: g[0] = b.one(OpKind::div, {to_input_shape(b, b.one(OpKind::mul, {dy, y}), xs, a.attrs), x}); break;
        case OpKind::reduce_l1:
            g[0] = b.one(OpKind::unary_grad, {to_input_shape(b, dy, xs, a.attrs), x}, attr("of", std::string("abs")));
            break;
        case OpKind::reduce_l2: g[0] = b.one(OpKind::mul, {x, to_input_shape(b, b.one(OpKind::div, {dy, y}), xs, a.attrs)}); break;
        default:  // reduce_sum_square
            g[0] = b.one(OpKind::scale, {b.one(OpKind::mul, {x, to_input_shape(b, dy, xs, a.attrs)})}, attr("factor", 2.0));
            break;
    }
    return g;
}

// ---- gather / gather_grad ----

Shape gather_shape(const Shape& data, const Shape& idx, std::size_t axis) {
    Shape out(data.begin(), data.begin() + static_cast<std::ptrdiff_t>(axis));
    out.insert(out.end(), idx.begin(), idx.end());
    out.insert(out.end(), data.begin() + static_cast<std::ptrdiff_t>(axis) + 1, data.end());
    return out;
}

std::vector<TensorDesc> gather_infer(OpKind, Inputs in, const Attrs& a) {
    const TensorDesc &data = in[0], &idx = in[1];
    if (data.rank() == 0) throw InputError("gather: data must have at least one dimension, got " + desc_str(data));
    if (!is_index(idx.dtype)) throw InputError("gather: indices must be int32 or int64, got " + desc_str(idx));
    const auto axis = static_cast<std::size_t>(normalize_axis(a.get_int("axis", 0), data.rank()));
    return {TensorDesc{gather_shape(data.shape, idx.shape, axis), data.dtype}};
}

// No arithmetic: the indices read once, one data element read per output element (only the
// gathered slices), the output written.
Work gather_work(OpKind, Inputs in, std::span<const TensorDesc> out, const Attrs&) {
    Work w;
    w.bytes_read = checked_add(in[1].bytes(), checked_mul(out[0].numel(), dtype_bytes(in[0].dtype), "bytes read"), "bytes read");
    w.bytes_written = out[0].bytes();
    return w;
}

std::int64_t checked_index(double v, std::int64_t dim, const char* op) {
    auto i = static_cast<std::int64_t>(v);
    if (i < 0) i += dim;
    if (i < 0 || i >= dim)
        throw InputError(std::string(op) + ": index " + std::to_string(static_cast<std::int64_t>(v)) + " out of range for an axis of " +
                         std::to_string(dim));
    return i;
}

void gather_reference(const std::vector<const HostTensor*>& in, const Attrs& a, std::vector<HostTensor>& out) {
    const Shape& s = in[0]->desc.shape;
    const auto axis = static_cast<std::size_t>(normalize_axis(a.get_int("axis", 0), in[0]->desc.rank()));
    const AxisLines l = axis_lines(s, axis);
    const std::int64_t m = in[1]->desc.numel();
    for (std::int64_t o = 0; o < l.outer; ++o)
        for (std::int64_t j = 0; j < m; ++j) {
            const std::int64_t row = checked_index(in[1]->data[static_cast<std::size_t>(j)], l.n, "gather");
            for (std::int64_t i = 0; i < l.inner; ++i)
                out[0].data[static_cast<std::size_t>((o * m + j) * l.inner + i)] =
                    in[0]->data[static_cast<std::size_t>((o * l.n + row) * l.inner + i)];
        }
}

std::vector<TensorRef> gather_grad_rule(GradBuilder& b, const GradArgs& a) {
    std::vector<TensorRef> g(a.inputs.size(), kNoGrad);  // the indices have none
    if (!a.needs[0]) return g;
    Attrs at;
    at.set("axis", normalize_axis(a.attrs.get_int("axis", 0), b.desc(a.inputs[0]).rank()));
    at.set("input_shape", b.desc(a.inputs[0]).shape);
    g[0] = b.one(OpKind::gather_grad, {a.output_grads[0], a.inputs[1]}, at);
    return g;
}

std::vector<TensorDesc> gather_grad_infer(OpKind, Inputs in, const Attrs& a) {
    const TensorDesc x{a.require_ints("input_shape"), in[0].dtype};
    check_dims(x.shape);
    const TensorDesc fwd[2] = {x, in[1]};
    const TensorDesc y = gather_infer(OpKind::gather, fwd, a)[0];
    if (y.shape != in[0].shape)
        throw InputError("gather_grad: dy " + desc_str(in[0]) + " must be the gather's output " + desc_str(y) + " of input_shape " +
                         shape_str(x.shape));
    return {x};
}

// one add per dy element into the zeroed dx; dy and the indices read, dx written once
Work gather_grad_work(OpKind, Inputs in, std::span<const TensorDesc> out, const Attrs&) {
    Work w = io_bytes(in, out);
    w.vector_flops = in[0].numel();
    return w;
}

void gather_grad_reference(const std::vector<const HostTensor*>& in, const Attrs& a, std::vector<HostTensor>& out) {
    const Shape& s = out[0].desc.shape;
    const auto axis = static_cast<std::size_t>(normalize_axis(a.get_int("axis", 0), out[0].desc.rank()));
    const AxisLines l = axis_lines(s, axis);
    const std::int64_t m = in[1]->desc.numel();
    for (std::int64_t o = 0; o < l.outer; ++o)
        for (std::int64_t j = 0; j < m; ++j) {
            const std::int64_t row = checked_index(in[1]->data[static_cast<std::size_t>(j)], l.n, "gather_grad");
            for (std::int64_t i = 0; i < l.inner; ++i)
                out[0].data[static_cast<std::size_t>((o * l.n + row) * l.inner + i)] +=
                    in[0]->data[static_cast<std::size_t>((o * m + j) * l.inner + i)];
        }
}

// A reduction's traits: the row kernel of reduce_sum and reduce_max (sim/gpu_model.cpp row_kernel:
// a row reduction when the axes are trailing, a streaming pass otherwise).
constexpr OpTraits kReduction{.kernel = KernelForm::row, .row_axes_attr = true};
// argmax/argmin name their axis by `axis`: a row reduction along the last axis.
constexpr OpTraits kArgReduction{.kernel = KernelForm::row};

const std::vector<OpExample>& reduce_examples() {
    static const std::vector<OpExample> e = {{{{3, 4}}, attr("axes", std::vector<std::int64_t>{1})},
                                             {{{2, 3, 4}}, attr2("axes", std::vector<std::int64_t>{0, 2}, "keepdim", true)}};
    return e;
}

}  // namespace

ROOFLINE_OP_DEF(argmax) {
    static const OpDefinition d{
        .rule = {OpFamily::reduction, 1, 1, {"axis", "keepdim", "select_last_index"}, arg_infer, arg_work},
        .traits = kArgReduction,
        .grad = nullptr,  // not differentiable (integer indices), as topk's indices
        .reference = argmax_reference,
        .examples = {{{{3, 5}}, attr("axis", std::int64_t{1})}, {{{2, 3, 4}}, attr2("axis", std::int64_t{1}, "keepdim", true)}},
    };
    return d;
}

ROOFLINE_OP_DEF(argmin) {
    static const OpDefinition d{
        .rule = {OpFamily::reduction, 1, 1, {"axis", "keepdim", "select_last_index"}, arg_infer, arg_work},
        .traits = kArgReduction,
        .grad = nullptr,
        .reference = argmin_reference,
        .examples = {{{{3, 5}}, attr("axis", std::int64_t{-1})}, {{{4, 3}}, attr2("axis", std::int64_t{0}, "select_last_index", true)}},
    };
    return d;
}

ROOFLINE_OP_DEF(reduce_min) {
    static const OpDefinition d{
        .rule = {OpFamily::reduction, 1, 1, {"axes", "keepdim"}, reduce_infer, reduce_work},
        .traits = kReduction,
        .grad = reduce_grad_rule,
        .reference = reduce_reference<OpKind::reduce_min>,
        .examples = reduce_examples(),
    };
    return d;
}

ROOFLINE_OP_DEF(reduce_prod) {
    static const OpDefinition d{
        .rule = {OpFamily::reduction, 1, 1, {"axes", "keepdim"}, reduce_infer, reduce_work},
        .traits = kReduction,
        .grad = reduce_grad_rule,
        .reference = reduce_reference<OpKind::reduce_prod>,
        .examples = reduce_examples(),
    };
    return d;
}

ROOFLINE_OP_DEF(reduce_l1) {
    static const OpDefinition d{
        .rule = {OpFamily::reduction, 1, 1, {"axes", "keepdim"}, reduce_infer, reduce_work},
        .traits = kReduction,
        .grad = reduce_grad_rule,
        .reference = reduce_reference<OpKind::reduce_l1>,
        .examples = reduce_examples(),
    };
    return d;
}

ROOFLINE_OP_DEF(reduce_l2) {
    static const OpDefinition d{
        .rule = {OpFamily::reduction, 1, 1, {"axes", "keepdim"}, reduce_infer, reduce_work},
        .traits = kReduction,
        .grad = reduce_grad_rule,
        .reference = reduce_reference<OpKind::reduce_l2>,
        .examples = reduce_examples(),
    };
    return d;
}

ROOFLINE_OP_DEF(reduce_sum_square) {
    static const OpDefinition d{
        .rule = {OpFamily::reduction, 1, 1, {"axes", "keepdim"}, reduce_infer, reduce_work},
        .traits = kReduction,
        .grad = reduce_grad_rule,
        .reference = reduce_reference<OpKind::reduce_sum_square>,
        .examples = reduce_examples(),
    };
    return d;
}

ROOFLINE_OP_DEF(gather) {
    static const OpDefinition d{
        .rule = {OpFamily::movement, 2, 2, {"axis"}, gather_infer, gather_work},
        .traits = {},  // a streaming kernel (ATen index_select_out_cuda_impl: one pass over the output)
        .grad = gather_grad_rule,
        .reference = gather_reference,
        // rows of a matrix by a [2, 3] index tensor; a middle axis (the gathered axes have >= 2
        // entries: the generic tests draw indices 0 and 1)
        .examples = {{{{4, 3}}, {}, {{2, 3}}}, {{{2, 5, 3}}, attr("axis", std::int64_t{1}), {{4}}}},
    };
    return d;
}

ROOFLINE_OP_DEF(gather_grad) {
    static const OpDefinition d{
        .rule = {OpFamily::movement, 2, 2, {"axis", "input_shape"}, gather_grad_infer, gather_grad_work},
        .traits = {},  // zero-fill and the scatter-add as one pass over dx (the embedding_grad convention)
        .grad = nullptr,
        .reference = gather_grad_reference,
        .examples = {{{{2, 4, 3}}, attr2("axis", std::int64_t{1}, "input_shape", std::vector<std::int64_t>{2, 5, 3}), {{4}}}},
    };
    return d;
}

}  // namespace roofline
