// The gradient table: for every op kind, the ops that compute its input gradients from its output
// gradients, written with existing ops (tinygrad's gradient table, in C++). Rules emit only the
// gradients an input needs (GradArgs::needs), so frozen inputs cost nothing. Numpy broadcasting is
// undone with sum_to; views differentiate to views.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "ops/op_def.hpp"
#include "ops/op_rule.hpp"

namespace roofline {

Attrs attr(const char* name, AttrValue v) {
    Attrs a;
    a.set(name, std::move(v));
    return a;
}

Attrs attr2(const char* n1, AttrValue v1, const char* n2, AttrValue v2) {
    Attrs a = attr(n1, std::move(v1));
    a.set(n2, std::move(v2));
    return a;
}

TensorRef GradBuilder::sum_to(TensorRef g, Shape target) {
    const Shape s = desc(g).shape;
    if (s == target) return g;
    const std::size_t lead = s.size() - target.size();
    std::vector<std::int64_t> axes;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (i < lead || (target[i - lead] == 1 && s[i] != 1)) axes.push_back(static_cast<std::int64_t>(i));
    }
    TensorRef r = axes.empty() ? g : one(OpKind::reduce_sum, {g}, attr2("axes", axes, "keepdim", false));
    if (desc(r).shape != target) r = one(OpKind::reshape, {r}, attr("shape", target));
    return r;
}

TensorRef GradBuilder::expand_to(TensorRef g, Shape target) {
    return desc(g).shape == target ? g : one(OpKind::expand, {g}, attr("shape", target));
}

namespace {

using Grads = std::vector<TensorRef>;

Grads none(const GradArgs& a) { return Grads(a.inputs.size(), kNoGrad); }
TensorRef dy(const GradArgs& a) { return a.output_grads[0]; }

// Flattens all leading dims: [..., n] -> [rows, n].
TensorRef rows2d(GradBuilder& b, TensorRef t) {
    const Shape s = b.desc(t).shape;
    if (s.size() == 2) return t;
    return b.one(OpKind::reshape, {t}, attr("shape", std::vector<std::int64_t>{-1, s.back()}));
}

// The output gradient of an fp8 GEMM (16-bit, the forward's output dtype) quantized to the
// operands' fp8 type, so that the gradient GEMMs run in fp8 too (Transformer Engine's E4M3 recipe;
// its default HYBRID recipe uses e5m2 for gradients: the same bytes and rate).
TensorRef gemm_output_grad(GradBuilder& b, const GradArgs& a) {
    const DType op = b.desc(a.inputs[0]).dtype;
    if ((op != DType::fp8_e4m3 && op != DType::fp8_e5m2) || b.desc(dy(a)).dtype == op) return dy(a);
    return b.one(OpKind::cast, {dy(a)}, attr("dtype", std::string(dtype_name(op))));
}

Grads matmul_grad(GradBuilder& b, const GradArgs& a) {
    Grads g = none(a);
    const bool ta = a.attrs.get_bool("transpose_a", false), tb = a.attrs.get_bool("transpose_b", false);
    const TensorRef A = a.inputs[0], B = a.inputs[1], dY = gemm_output_grad(b, a);
    if (a.needs[0]) {
        // d op(A) = dY op(B)^T; for a transposed A, dA = op(B) dY^T
        const TensorRef r = ta ? b.one(OpKind::matmul, {B, dY}, attr2("transpose_a", tb, "transpose_b", true))
                               : b.one(OpKind::matmul, {dY, B}, attr("transpose_b", !tb));
        g[0] = b.sum_to(r, b.desc(A).shape);
    }
    if (a.needs[1]) {
        const Shape sa = b.desc(A).shape;
        const Shape sb = b.desc(B).shape;
        if (sb.size() == 2 && sa.size() > 2 && !ta) {
            // A weight shared across the batch: fold the batch into K, one GEMM as frameworks do.
            const TensorRef A2 = rows2d(b, A), dY2 = rows2d(b, dY);
            g[1] = tb ? b.one(OpKind::matmul, {dY2, A2}, attr("transpose_a", true))
                      : b.one(OpKind::matmul, {A2, dY2}, attr("transpose_a", true));
        } else {
            // d op(B) = op(A)^T dY; for a transposed B, dB = dY^T op(A)
            const TensorRef r = tb ? b.one(OpKind::matmul, {dY, A}, attr2("transpose_a", true, "transpose_b", ta))
                                   : b.one(OpKind::matmul, {A, dY}, attr("transpose_a", !ta));
            g[1] = b.sum_to(r, sb);
        }
    }
    return g;
}

Grads linear_grad(GradBuilder& b, const GradArgs& a) {
    Grads g = none(a);
    const TensorRef x = a.inputs[0], w = a.inputs[1], dY = gemm_output_grad(b, a);
    if (a.needs[0]) {
        if (b.desc(dY).shape.size() >= 2) {
            g[0] = b.one(OpKind::matmul, {dY, w});  // [..., out] x [out, in]
        } else {                                    // one row x[in]: a [1, out] x [out, in] GEMM, back to [in]
            const TensorRef r = b.one(OpKind::matmul, {rows2d(b, dY), w});
            g[0] = b.one(OpKind::reshape, {r}, attr("shape", b.desc(x).shape));
        }
    }
    if (a.needs[1]) g[1] = b.one(OpKind::matmul, {rows2d(b, dY), rows2d(b, x)}, attr("transpose_a", true));
    if (a.inputs.size() == 3 && a.needs[2]) g[2] = b.sum_to(dy(a), b.desc(a.inputs[2]).shape);
    return g;
}

Grads conv2d_grad(GradBuilder& b, const GradArgs& a) {
    Grads g = none(a);
    Attrs base;
    for (const char* k : {"stride", "padding", "dilation", "groups"}) {
        if (const AttrValue* v = a.attrs.find(k)) base.set(k, *v);
    }
    if (a.needs[0]) {
        Attrs at = base;
        at.set("input_shape", b.desc(a.inputs[0]).shape);
        g[0] = b.one(OpKind::conv2d_grad_input, {dy(a), a.inputs[1]}, at);
    }
    if (a.needs[1]) {
        Attrs at = base;
        at.set("weight_shape", b.desc(a.inputs[1]).shape);
        g[1] = b.one(OpKind::conv2d_grad_weight, {dy(a), a.inputs[0]}, at);
    }
    if (a.inputs.size() == 3 && a.needs[2]) g[2] = b.one(OpKind::reduce_sum, {dy(a)}, attr("axes", std::vector<std::int64_t>{0, 2, 3}));
    return g;
}

// pow(x, e) with a tensor exponent, as PyTorch's pow_backward_self and pow_backward_exponent:
// dx = dy * e * x^(e - 1), de = dy * x^e * log(x) (the output saved from forward), each summed to
// its operand's shape where it was broadcast.
Grads pow_tensor_grad(GradBuilder& b, const GradArgs& a) {
    Grads g = none(a);
    const TensorRef X = a.inputs[0], E = a.inputs[1], dY = dy(a);
    if (a.needs[0]) {
        const TensorRef p = b.one(OpKind::pow, {X, b.one(OpKind::shift, {E}, attr("offset", -1.0))});
        g[0] = b.sum_to(b.one(OpKind::mul, {dY, b.one(OpKind::mul, {E, p})}), b.desc(X).shape);
    }
    if (a.needs[1]) {
        const TensorRef t = b.one(OpKind::mul, {a.outputs[0], b.one(OpKind::log, {X})});
        g[1] = b.sum_to(b.one(OpKind::mul, {dY, t}), b.desc(E).shape);
    }
    return g;
}

Grads unary_grad(GradBuilder& b, const GradArgs& a) {
    if (a.kind == OpKind::pow && a.inputs.size() == 2) return pow_tensor_grad(b, a);
    Grads g = none(a);
    if (!a.needs[0]) return g;
    switch (a.kind) {
        case OpKind::neg: g[0] = b.one(OpKind::neg, {dy(a)}); return g;
        case OpKind::scale: g[0] = b.one(OpKind::scale, {dy(a)}, attr("factor", a.attrs.get_double("factor", 1.0))); return g;
        case OpKind::shift: g[0] = dy(a); return g;  // d(x + c)/dx = 1: the gradient passes through, no kernel
        case OpKind::pow: {
            // PyTorch's pow_backward: grad * (e * x.pow(e - 1)), three kernels; e = 0 gives zeros.
            const double e = a.attrs.get_double("exponent", 1.0);
            if (e == 0.0) {
                g[0] = b.one(OpKind::scale, {dy(a)}, attr("factor", 0.0));
                return g;
            }
            const TensorRef p = b.one(OpKind::pow, {a.inputs[0]}, attr("exponent", e - 1.0));
            g[0] = b.one(OpKind::mul, {dy(a), b.one(OpKind::scale, {p}, attr("factor", e))});
            return g;
        }
        default: {
            // The ops of ops/unary_ops.def whose derivative is cheapest from the output save it.
            bool from_output = false;
#define ROOFLINE_UNARY(name, domain, flops, tr, saved, ...) \
    if (a.kind == OpKind::name) from_output = std::string_view(#saved) == "output";
#include "ops/unary_ops.def"
#undef ROOFLINE_UNARY
            if (from_output) {
                g[0] = b.one(OpKind::unary_grad, {dy(a), a.outputs[0]}, attr("of", std::string(op_name(a.kind))));
                return g;
            }
            Attrs at = attr("of", std::string(op_name(a.kind)));
            if (a.kind == OpKind::gelu) at.set("approximate", a.attrs.get_string("approximate", "tanh"));
            g[0] = b.one(OpKind::unary_grad, {dy(a), a.inputs[0]}, at);
            return g;
        }
    }
}

Grads binary_grad(GradBuilder& b, const GradArgs& a) {
    Grads g = none(a);
    const TensorRef A = a.inputs[0], B = a.inputs[1], dY = dy(a);
    const Shape sa = b.desc(A).shape, sb = b.desc(B).shape;
    switch (a.kind) {
        case OpKind::add:
            if (a.needs[0]) g[0] = b.sum_to(dY, sa);
            if (a.needs[1]) g[1] = b.sum_to(dY, sb);
            break;
        case OpKind::sub:
            if (a.needs[0]) g[0] = b.sum_to(dY, sa);
            if (a.needs[1]) g[1] = b.sum_to(b.one(OpKind::neg, {dY}), sb);
            break;
        case OpKind::mul:
            if (a.needs[0]) g[0] = b.sum_to(b.one(OpKind::mul, {dY, B}), sa);
            if (a.needs[1]) g[1] = b.sum_to(b.one(OpKind::mul, {dY, A}), sb);
            break;
        case OpKind::div:  // y = a / b: da = dy / b, db = -dy y / b
            if (a.needs[0]) g[0] = b.sum_to(b.one(OpKind::div, {dY, B}), sa);
            if (a.needs[1]) {
                const TensorRef t = b.one(OpKind::div, {b.one(OpKind::mul, {dY, a.outputs[0]}), B});
                g[1] = b.sum_to(b.one(OpKind::neg, {t}), sb);
            }
            break;
        default: {  // maximum
            const auto both = b.emit(OpKind::maximum_grad, {dY, A, B}, {});
            if (a.needs[0]) g[0] = b.sum_to(both[0], sa);
            if (a.needs[1]) g[1] = b.sum_to(both[1], sb);
        }
    }
    return g;
}

Grads softmax_grad(GradBuilder& b, const GradArgs& a) {
    Grads g = none(a);
    if (a.needs[0]) g[0] = b.one(OpKind::softmax_grad, {dy(a), a.outputs[0]}, attr("axis", a.attrs.get_int("axis", -1)));
    return g;
}

Grads norm_grad(GradBuilder& b, const GradArgs& a) {
    Grads g = none(a);
    const std::int64_t params = static_cast<std::int64_t>(a.inputs.size()) - 1;
    std::vector<TensorRef> in = {dy(a), a.inputs[0]};
    if (params > 0) in.push_back(a.inputs[1]);
    Attrs at = attr("affine", params);
    if (a.attrs.has("eps")) at.set("eps", a.attrs.get_double("eps", 1e-5));
    const auto out = b.emit(a.kind == OpKind::layernorm ? OpKind::layernorm_grad : OpKind::rmsnorm_grad, in, at);
    for (std::size_t i = 0; i < out.size() && i < g.size(); ++i) {
        if (a.needs[i]) g[i] = out[i];
    }
    return g;
}

Grads reduce_grad(GradBuilder& b, const GradArgs& a) {
    Grads g = none(a);
    if (!a.needs[0]) return g;
    const Shape xs = b.desc(a.inputs[0]).shape;
    if (a.kind == OpKind::reduce_max) {
        g[0] = b.one(OpKind::reduce_max_grad, {dy(a), a.inputs[0], a.outputs[0]}, a.attrs);
        return g;
    }
    // Re-insert the reduced axes as 1s, broadcast back to x.
    std::vector<std::int64_t> axes;
    if (a.attrs.has("axes")) {
        for (std::int64_t ax : a.attrs.get_ints("axes", {})) axes.push_back(normalize_axis(ax, static_cast<std::int64_t>(xs.size())));
    } else {
        axes.resize(xs.size());
        std::iota(axes.begin(), axes.end(), 0);
    }
    Shape kept = xs;
    std::int64_t n = 1;
    for (std::int64_t ax : axes) {
        n *= xs[static_cast<std::size_t>(ax)];
        kept[static_cast<std::size_t>(ax)] = 1;
    }
    TensorRef r = dy(a);
    if (b.desc(r).shape != kept) r = b.one(OpKind::reshape, {r}, attr("shape", kept));
    r = b.expand_to(r, xs);
    if (a.kind == OpKind::reduce_mean)
        r = b.one(OpKind::scale, {r}, attr("factor", 1.0 / static_cast<double>(std::max<std::int64_t>(n, 1))));
    g[0] = r;
    return g;
}

Grads embedding_grad(GradBuilder& b, const GradArgs& a) {
    Grads g = none(a);
    if (a.needs[0]) {
        g[0] = b.one(OpKind::embedding_grad, {dy(a), a.inputs[1]}, attr("num_embeddings", b.desc(a.inputs[0]).shape[0]));
    }
    return g;
}

Grads layout_grad(GradBuilder& b, const GradArgs& a) {
    Grads g = none(a);
    if (!a.needs[0]) return g;
    const bool copy = a.attrs.get_bool("copy", false);
    if (a.kind == OpKind::reshape) {
        g[0] = b.one(OpKind::reshape, {dy(a)}, attr("shape", b.desc(a.inputs[0]).shape));
    } else if (a.kind == OpKind::transpose) {
        Attrs at = a.attrs;
        g[0] = b.one(OpKind::transpose, {dy(a)}, at);
    } else {  // permute: apply the inverse permutation
        const auto perm = a.attrs.get_ints("perm", {});
        std::vector<std::int64_t> inverse(perm.size());
        for (std::size_t i = 0; i < perm.size(); ++i) {
            inverse[static_cast<std::size_t>(normalize_axis(perm[i], static_cast<std::int64_t>(perm.size())))] =
                static_cast<std::int64_t>(i);
        }
        g[0] = b.one(OpKind::permute, {dy(a)}, attr2("perm", inverse, "copy", copy));
    }
    return g;
}

Grads concat_grad(GradBuilder& b, const GradArgs& a) {
    Grads g = none(a);
    const std::int64_t rank = b.desc(a.inputs[0]).rank();
    const auto axis = normalize_axis(a.attrs.get_int("axis", 0), rank);
    std::vector<std::int64_t> sizes;
    for (TensorRef t : a.inputs) sizes.push_back(b.desc(t).shape[static_cast<std::size_t>(axis)]);
    const auto parts = b.emit(OpKind::split, {dy(a)}, attr2("axis", axis, "sizes", sizes));
    for (std::size_t i = 0; i < parts.size(); ++i) {
        if (a.needs[i]) g[i] = parts[i];
    }
    return g;
}

Grads split_grad(GradBuilder& b, const GradArgs& a) {
    Grads g = none(a);
    if (!a.needs[0]) return g;
    std::vector<TensorRef> parts;
    for (std::size_t i = 0; i < a.outputs.size(); ++i) {
        if (a.output_grads[i] != kNoGrad) {
            parts.push_back(a.output_grads[i]);
        } else {
            const TensorDesc d = b.desc(a.outputs[i]);
            Attrs at = attr2("shape", d.shape, "dtype", std::string(dtype_name(d.dtype)));
            at.set("value", 0.0);
            parts.push_back(b.one(OpKind::fill, {}, at));
        }
    }
    g[0] = b.one(OpKind::concat, parts, attr("axis", a.attrs.get_int("axis", 0)));
    return g;
}

Grads dropout_grad(GradBuilder& b, const GradArgs& a) {
    Grads g = none(a);
    if (a.needs[0]) g[0] = b.one(OpKind::dropout_grad, {dy(a), a.outputs[1]}, attr("p", a.attrs.get_double("p", 0.1)));
    return g;
}

Grads causal_mask_grad(GradBuilder& b, const GradArgs& a) {
    Grads g = none(a);
    if (a.needs[0]) g[0] = b.one(OpKind::causal_mask, {dy(a)}, attr("value", 0.0));  // masked entries get no gradient
    return g;
}

Grads cross_entropy_grad(GradBuilder& b, const GradArgs& a) {
    Grads g = none(a);
    if (a.needs[0]) {
        g[0] = b.one(OpKind::cross_entropy_grad, {a.inputs[0], a.inputs[1], dy(a)},
                     attr("reduction", a.attrs.get_string("reduction", "mean")));
    }
    return g;
}

// Materialised attention backward: recompute the probabilities from q and k (nothing but the
// inputs is saved by the composite), then backpropagate through P V, softmax, mask, scale, Q K^T.
Grads attention_grad(GradBuilder& b, const GradArgs& a) {
    Grads g = none(a);
    const TensorRef q = a.inputs[0], k = a.inputs[1], v = a.inputs[2], dO = dy(a);
    const double scale = a.attrs.get_double("scale", 1.0 / std::sqrt(static_cast<double>(b.desc(q).shape.back())));
    const bool causal = a.attrs.get_bool("causal", false);
    TensorRef s = b.one(OpKind::scale, {b.one(OpKind::matmul, {q, k}, attr("transpose_b", true))}, attr("factor", scale));
    if (causal) s = b.one(OpKind::causal_mask, {s});
    const TensorRef p = b.one(OpKind::softmax, {s});
    if (a.needs[2]) g[2] = b.one(OpKind::matmul, {p, dO}, attr("transpose_a", true));
    if (!a.needs[0] && !a.needs[1]) return g;
    TensorRef ds = b.one(OpKind::softmax_grad, {b.one(OpKind::matmul, {dO, v}, attr("transpose_b", true)), p});
    if (causal) ds = b.one(OpKind::causal_mask, {ds}, attr("value", 0.0));
    ds = b.one(OpKind::scale, {ds}, attr("factor", scale));
    if (a.needs[0]) g[0] = b.one(OpKind::matmul, {ds, k});
    if (a.needs[1]) g[1] = b.one(OpKind::matmul, {ds, q}, attr("transpose_a", true));
    return g;
}

// expand: a broadcast view; the gradient sums over the broadcast axes (as add's does). Forward
// graphs use it for HF's repeat_kv (grouped-query attention) and ViT's class token.
Grads expand_grad(GradBuilder& b, const GradArgs& a) {
    Grads g = none(a);
    if (a.needs[0]) g[0] = b.sum_to(dy(a), b.desc(a.inputs[0]).shape);
    return g;
}

// cast: the gradient flows back converted to the input's dtype.
Grads cast_grad(GradBuilder& b, const GradArgs& a) {
    Grads g = none(a);
    if (a.needs[0]) g[0] = b.one(OpKind::cast, {dy(a)}, attr("dtype", std::string(dtype_name(b.desc(a.inputs[0]).dtype))));
    return g;
}

// where(c, a, b): dy flows to a where c holds and to b elsewhere (zeros from a scalar fill,
// broadcast by where itself), each summed down to its operand's shape; no gradient into c.
Grads where_grad(GradBuilder& b, const GradArgs& a) {
    Grads g = none(a);
    const DType d = b.desc(dy(a)).dtype;
    const TensorRef zero = b.one(OpKind::fill, {}, attr2("shape", std::vector<std::int64_t>{}, "dtype", std::string(dtype_name(d))));
    const TensorRef c = a.inputs[0];
    if (a.needs[1]) g[1] = b.sum_to(b.one(OpKind::where, {c, dy(a), zero}), b.desc(a.inputs[1]).shape);
    if (a.needs[2]) g[2] = b.sum_to(b.one(OpKind::where, {c, zero, dy(a)}), b.desc(a.inputs[2]).shape);
    return g;
}

// slice: dy padded back to x's shape with zeros, one concat of fills per sliced axis (as tinygrad
// pads). A positive step s > 1 first spreads dy's rows s apart: each row followed by s - 1 zero
// rows (a view with a unit axis, a concat with zeros along it, a view back), trimmed where the last
// zeros run past x. Negative steps have no rule yet; a one-element slice counts as a unit step.
Grads slice_grad(GradBuilder& b, const GradArgs& a) {
    Grads g = none(a);
    if (!a.needs[0]) return g;
    const TensorDesc x = b.desc(a.inputs[0]);
    const auto plan = slice_plan(x, a.attrs);
    TensorRef r = dy(a);
    auto zeros = [&](Shape s) {
        Attrs at = attr2("shape", s, "dtype", std::string(dtype_name(x.dtype)));
        at.set("value", 0.0);
        return b.one(OpKind::fill, {}, at);
    };
    for (std::size_t ax = 0; ax < plan.size(); ++ax) {
        const auto [start, step, len] = plan[ax];
        const std::int64_t dim = x.shape[ax];
        if (len == dim && (step == 1 || len <= 1)) continue;  // the whole axis, in order
        if (step < 0 && len > 1) {
            throw InputError("slice with step " + std::to_string(step) + " on axis " + std::to_string(ax) +
                             " has no gradient rule (positive steps only)");
        }
        std::int64_t span = len;  // rows of x covered from start on
        if (step > 1 && len > 1) {
            const Shape s = b.desc(r).shape;
            Shape unit = s, gap = s, spread = s;
            unit.insert(unit.begin() + static_cast<std::ptrdiff_t>(ax) + 1, 1);
            gap.insert(gap.begin() + static_cast<std::ptrdiff_t>(ax) + 1, step - 1);
            spread[ax] = len * step;
            const TensorRef rows = b.one(OpKind::reshape, {r}, attr("shape", unit));
            const TensorRef spaced = b.one(OpKind::concat, {rows, zeros(gap)}, attr("axis", static_cast<std::int64_t>(ax) + 1));
            r = b.one(OpKind::reshape, {spaced}, attr("shape", spread));
            span = std::min(len * step, dim - start);
            if (span < len * step) {
                Attrs at = attr2("starts", std::vector<std::int64_t>{0}, "ends", std::vector<std::int64_t>{span});
                at.set("axes", std::vector<std::int64_t>{static_cast<std::int64_t>(ax)});
                r = b.one(OpKind::slice, {r}, at);
            }
        }
        std::vector<TensorRef> parts;
        Shape s = b.desc(r).shape;
        if (start > 0) {
            s[ax] = start;
            parts.push_back(zeros(s));
        }
        parts.push_back(r);
        if (dim - start - span > 0) {
            s[ax] = dim - start - span;
            parts.push_back(zeros(s));
        }
        if (parts.size() > 1) r = b.one(OpKind::concat, parts, attr("axis", static_cast<std::int64_t>(ax)));
    }
    g[0] = r;
    return g;
}

// pad in constant mode: dx is dy with the pads undone, a pad by the negated pads (cropping what was
// added, zero-filling what was cropped). The other modes copy x's elements more than once; no rule yet.
Grads pad_grad(GradBuilder& b, const GradArgs& a) {
    Grads g = none(a);
    if (!a.needs[0]) return g;
    const std::string mode = a.attrs.get_string("mode", "constant");
    if (mode != "constant") throw InputError("pad in mode " + mode + " has no gradient rule (constant mode only)");
    std::vector<std::int64_t> pads = a.attrs.require_ints("pads");
    for (auto& p : pads) p = -p;
    g[0] = b.one(OpKind::pad, {dy(a)}, attr("pads", pads));
    return g;
}

// Pooling: dedicated backward kernels. max recomputes the argmax from x; avg needs only x's shape.
Grads pool2d_grad(GradBuilder& b, const GradArgs& a) {
    Grads g = none(a);
    if (!a.needs[0]) return g;
    if (a.kind == OpKind::max_pool2d) {
        g[0] = b.one(OpKind::max_pool2d_grad, {a.inputs[0], dy(a)}, a.attrs);
    } else {
        Attrs at = a.attrs;
        at.set("input_shape", b.desc(a.inputs[0]).shape);
        g[0] = b.one(OpKind::avg_pool2d_grad, {dy(a)}, at);
    }
    return g;
}

}  // namespace

GradFn grad_rule_of(OpKind k) {
    switch (k) {
        case OpKind::matmul: return matmul_grad;
        case OpKind::linear: return linear_grad;
        case OpKind::conv2d: return conv2d_grad;
        case OpKind::relu:
        case OpKind::gelu:
#define ROOFLINE_UNARY(name, ...) case OpKind::name:
#include "ops/unary_ops.def"
#undef ROOFLINE_UNARY
        case OpKind::neg:
        case OpKind::scale:
        case OpKind::shift:
        case OpKind::pow: return unary_grad;
        case OpKind::add:
        case OpKind::sub:
        case OpKind::mul:
        case OpKind::div:
        case OpKind::maximum: return binary_grad;
        case OpKind::softmax: return softmax_grad;
        case OpKind::layernorm:
        case OpKind::rmsnorm: return norm_grad;
        case OpKind::reduce_sum:
        case OpKind::reduce_mean:
        case OpKind::reduce_max: return reduce_grad;
        case OpKind::embedding: return embedding_grad;
        case OpKind::transpose:
        case OpKind::permute:
        case OpKind::reshape: return layout_grad;
        case OpKind::concat: return concat_grad;
        case OpKind::split: return split_grad;
        case OpKind::dropout: return dropout_grad;
        case OpKind::causal_mask: return causal_mask_grad;
        case OpKind::cross_entropy: return cross_entropy_grad;
        case OpKind::attention: return attention_grad;
        case OpKind::cast: return cast_grad;
        case OpKind::expand: return expand_grad;
        case OpKind::unary_grad:
        case OpKind::maximum_grad:
        case OpKind::softmax_grad:
        case OpKind::layernorm_grad:
        case OpKind::rmsnorm_grad:
        case OpKind::dropout_grad:
        case OpKind::cross_entropy_grad:
        case OpKind::embedding_grad:
        case OpKind::conv2d_grad_input:
        case OpKind::conv2d_grad_weight:
        case OpKind::reduce_max_grad:
        case OpKind::fill:
        case OpKind::sgd_update:
        case OpKind::adam_update: return nullptr;
        case OpKind::where: return where_grad;
        case OpKind::slice: return slice_grad;
        case OpKind::pad: return pad_grad;
        case OpKind::max_pool2d:
        case OpKind::avg_pool2d: return pool2d_grad;
        case OpKind::max_pool2d_grad:
        case OpKind::avg_pool2d_grad: return nullptr;
        // Not differentiable: autodiff stops with "<node>: <op> has no gradient rule".
        case OpKind::opaque: return nullptr;
        case OpKind::resize: return nullptr;  // no rule yet: training a graph with a resize names it
        case OpKind::topk: return nullptr;    // no rule yet (a scatter of dy to the indices): training names it
#define ROOFLINE_DEFINED_OP(name) case OpKind::name:
#include "ops/defined_ops.inc"
#undef ROOFLINE_DEFINED_OP
            return op_definition(k)->grad;  // the ops of ops/defs/: their definition's rule
    }
    return nullptr;
}

}  // namespace roofline
