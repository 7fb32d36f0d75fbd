// Ops that only gradient rules emit: fused elementwise and row-wise backward kernels, the way
// frameworks implement them (one kernel reading the saved tensors and dy, writing dx), plus
// expand and fill. Per-element FLOPs are counted from each derivative's formula.
#include "ops/checked.hpp"
#include "ops/op_rule.hpp"

namespace roofline {
namespace {

void require_same_shape(const TensorDesc& a, const TensorDesc& b, const char* what) {
    if (a.shape != b.shape) throw InputError(std::string(what) + ": " + desc_str(a) + " and " + desc_str(b) + " differ in shape");
}

// d(op)/dx per element: plain FLOPs and transcendentals, including the multiply by dy.
struct GradCost {
    std::int64_t vector, transcendental;
};

GradCost unary_grad_cost(const Attrs& attrs) {
    const std::string of = attrs.get_string("of", "");
    if (of == "relu") return {1, 0};  // dy where x > 0
    if (of == "gelu") {
        // tanh form: inner u = k(x + c x^3) (4), t = tanh(u), du = k(1 + 3c x^2) (4),
        // 0.5(1 + t) + 0.5 x (1 - t^2) du (8), times dy (1) = 17 plus one tanh.
        const std::string approx = attrs.get_string("approximate", "tanh");
        if (approx == "tanh") return {17, 1};
        if (approx == "erf" || approx == "none") return {9, 2};  // Phi(x) + x phi(x): one erf and one exp
        throw InputError("attribute 'approximate' must be \"tanh\" or \"erf\", got \"" + approx + "\"");
    }
#define ROOFLINE_UNARY(name, domain, flops, tr, saved, gflops, gtr, ...) \
    if (of == #name) return {gflops, gtr};
#include "ops/unary_ops.def"
#undef ROOFLINE_UNARY
    std::string known = "relu, gelu";
#define ROOFLINE_UNARY(name, ...) known += ", " #name;
#include "ops/unary_ops.def"
#undef ROOFLINE_UNARY
    throw InputError("attribute 'of' must name a differentiable unary op (" + known + "), got \"" + of + "\"");
}

// unary_grad(dy, saved) -> dx. saved is the forward input x, or the output y for sigmoid, tanh,
// exp, sqrt and rsqrt (whose derivatives are cheapest from y).
std::vector<TensorDesc> unary_grad_infer(OpKind, Inputs in, const Attrs& attrs) {
    (void)unary_grad_cost(attrs);
    require_same_shape(in[0], in[1], "dy and the saved tensor");
    return {in[0]};
}

Work unary_grad_work(OpKind, Inputs in, std::span<const TensorDesc> out, const Attrs& attrs) {
    const GradCost c = unary_grad_cost(attrs);
    Work w = io_bytes(in, out);
    w.vector_flops = checked_mul(in[0].numel(), c.vector, "FLOPs");
    w.transcendentals = checked_mul(in[0].numel(), c.transcendental, "transcendentals");
    return w;
}

// maximum_grad(dy, a, b) -> (da, db) at dy's (broadcast) shape; the rule sums them down.
std::vector<TensorDesc> maximum_grad_infer(OpKind, Inputs in, const Attrs&) {
    if (broadcast_shapes(in[1].shape, in[2].shape) != in[0].shape) {
        throw InputError("a " + desc_str(in[1]) + " and b " + desc_str(in[2]) + " do not broadcast to dy " + desc_str(in[0]));
    }
    return {in[0], in[0]};
}

Work elementwise_grad_work(std::int64_t per_element, Inputs in, std::span<const TensorDesc> out) {
    Work w = io_bytes(in, out);
    w.vector_flops = checked_mul(in[0].numel(), per_element, "FLOPs");
    return w;
}

Work maximum_grad_work(OpKind, Inputs in, std::span<const TensorDesc> out, const Attrs&) {
    return elementwise_grad_work(3, in, out);  // compare, two selects
}

// softmax_grad(dy, y) -> dx = y (dy - sum(dy y)) along the axis.
std::vector<TensorDesc> softmax_grad_infer(OpKind, Inputs in, const Attrs& attrs) {
    require_same_shape(in[0], in[1], "dy and y");
    (void)normalize_axis(attrs.get_int("axis", -1), in[0].rank());
    return {in[0]};
}

Work softmax_grad_work(OpKind, Inputs in, std::span<const TensorDesc> out, const Attrs&) {
    return elementwise_grad_work(4, in, out);  // dy y, row sum, subtract, times y
}

std::int64_t rows_of(const TensorDesc& x) { return x.numel() / std::max<std::int64_t>(x.shape.back(), 1); }

// layernorm_grad(dy, x, weight?) -> (dx, dweight?, dbias?); attribute affine = 0, 1 (weight) or 2
// (weight and bias) says which parameter gradients to produce.
std::vector<TensorDesc> norm_grad_infer(OpKind k, Inputs in, const Attrs& attrs) {
    require_same_shape(in[0], in[1], "dy and x");
    const std::int64_t affine = attrs.get_int("affine", 0);
    const std::int64_t max_affine = k == OpKind::layernorm_grad ? 2 : 1;
    if (affine < 0 || affine > max_affine) throw InputError("attribute 'affine' must be 0 to " + std::to_string(max_affine));
    if (affine > 0 && in.size() < 3) throw InputError("affine gradients need the weight as third input");
    std::vector<TensorDesc> out = {in[0]};
    const TensorDesc param{{in[1].shape.back()}, in[0].dtype};
    for (std::int64_t i = 0; i < affine; ++i) out.push_back(param);
    return out;
}

Work layernorm_grad_work(OpKind, Inputs in, std::span<const TensorDesc> out, const Attrs& attrs) {
    const std::int64_t n = in[0].numel(), rows = rows_of(in[1]);
    Work w = io_bytes(in, out);
    // recompute x_hat (2), dy w (1), the two row sums (3), dx = rstd (g - mean(g) - x_hat mean(g x_hat)) (4),
    // dweight += dy x_hat (2), dbias += dy (1); per row: mean, rstd (3) and one rsqrt.
    const std::int64_t affine = attrs.get_int("affine", 0);
    const std::int64_t per_element = 10 + (affine >= 1 ? 2 : 0) + (affine >= 2 ? 1 : 0);
    w.vector_flops = checked_add(checked_mul(n, per_element), checked_mul(rows, 3), "FLOPs");
    w.transcendentals = rows;
    return w;
}

Work rmsnorm_grad_work(OpKind, Inputs in, std::span<const TensorDesc> out, const Attrs& attrs) {
    const std::int64_t n = in[0].numel(), rows = rows_of(in[1]);
    Work w = io_bytes(in, out);
    // recompute x / rms (1), dy w (1), row sum of g x (2), dx = rstd (g - x_hat mean(g x_hat)) (3),
    // dweight += dy x_hat (2); per row: mean of squares and rstd (2) and one rsqrt.
    w.vector_flops = checked_add(checked_mul(n, 7 + (attrs.get_int("affine", 0) >= 1 ? 2 : 0)), checked_mul(rows, 2), "FLOPs");
    w.transcendentals = rows;
    return w;
}

// dropout_grad(dy, mask) -> dy * mask / (1 - p).
std::vector<TensorDesc> dropout_grad_infer(OpKind, Inputs in, const Attrs&) {
    require_same_shape(in[0], in[1], "dy and mask");
    if (in[1].dtype != DType::u8) throw InputError("mask must be u8, got " + desc_str(in[1]));
    return {in[0]};
}

Work dropout_grad_work(OpKind, Inputs in, std::span<const TensorDesc> out, const Attrs&) { return elementwise_grad_work(2, in, out); }

// cross_entropy_grad(logits, targets, dloss) -> dlogits = (softmax(logits) - onehot) dloss / rows.
std::vector<TensorDesc> cross_entropy_grad_infer(OpKind, Inputs in, const Attrs&) {
    if (!is_index(in[1].dtype)) throw InputError("targets must be int32 or int64, got " + desc_str(in[1]));
    if (Shape(in[0].shape.begin(), in[0].shape.end() - 1) != in[1].shape) {
        throw InputError("targets " + desc_str(in[1]) + " do not match logits " + desc_str(in[0]));
    }
    return {in[0]};
}

Work cross_entropy_grad_work(OpKind, Inputs in, std::span<const TensorDesc> out, const Attrs&) {
    Work w = io_bytes(in, out);
    const std::int64_t n = in[0].numel();
    // recompute softmax (max, subtract, sum, divide: 4, one exp), subtract the one-hot (1), scale (1)
    w.vector_flops = checked_mul(n, 6, "FLOPs");
    w.transcendentals = n;
    return w;
}

// embedding_grad(dy[..., D], indices[...]) -> dtable[num_embeddings, D]: zero the table gradient,
// then scatter-add every row of dy.
std::vector<TensorDesc> embedding_grad_infer(OpKind, Inputs in, const Attrs& attrs) {
    const std::int64_t v = attrs.require_int("num_embeddings");
    if (v <= 0) throw InputError("attribute 'num_embeddings' must be positive");
    if (Shape(in[0].shape.begin(), in[0].shape.end() - 1) != in[1].shape) {
        throw InputError("dy " + desc_str(in[0]) + " does not match indices " + desc_str(in[1]));
    }
    return {TensorDesc{{v, in[0].shape.back()}, in[0].dtype}};
}

Work embedding_grad_work(OpKind, Inputs in, std::span<const TensorDesc> out, const Attrs&) {
    Work w;
    w.bytes_read = checked_add(in[0].bytes(), in[1].bytes(), "bytes read");
    w.bytes_written = out[0].bytes();
    w.vector_flops = in[0].numel();  // one add per scattered element
    return w;
}

// reduce_max_grad(dy, x, y) -> dx: dy routed to the positions that held the maximum.
std::vector<TensorDesc> reduce_max_grad_infer(OpKind, Inputs in, const Attrs&) {
    if (in[0].shape != in[2].shape) throw InputError("dy and y must have the reduced shape");
    return {TensorDesc{in[1].shape, in[0].dtype}};
}

Work reduce_max_grad_work(OpKind, Inputs in, std::span<const TensorDesc> out, const Attrs&) {
    Work w = io_bytes(in, out);
    w.vector_flops = checked_mul(in[1].numel(), 2, "FLOPs");  // compare with y, select dy or 0
    return w;
}

// expand(x) -> broadcast of x to attribute shape: a view.
std::vector<TensorDesc> expand_infer(OpKind, Inputs in, const Attrs& attrs) {
    const Shape shape = attrs.require_ints("shape");
    check_dims(shape);
    if (broadcast_shapes(in[0].shape, shape) != shape) {
        throw InputError("cannot expand " + desc_str(in[0]) + " to " + shape_str(shape));
    }
    return {TensorDesc{shape, in[0].dtype}};
}

Work view_work(OpKind, Inputs, std::span<const TensorDesc>, const Attrs&) { return Work{}; }

// fill() -> a tensor of attribute shape and dtype holding attribute value (e.g. the loss seed).
std::vector<TensorDesc> fill_infer(OpKind, Inputs, const Attrs& attrs) {
    const Shape shape = attrs.get_ints("shape", {});
    check_dims(shape);
    const auto d = parse_dtype(attrs.get_string("dtype", "f32"));
    if (!d) throw InputError("attribute 'dtype' must be a dtype name");
    return {TensorDesc{shape, *d}};
}

Work fill_work(OpKind, Inputs in, std::span<const TensorDesc> out, const Attrs&) { return io_bytes(in, out); }

}  // namespace

const OpRule& unary_grad_rule() {
    static const OpRule r{OpFamily::elementwise, 2, 2, {"of", "approximate"}, unary_grad_infer, unary_grad_work};
    return r;
}
const OpRule& maximum_grad_rule() {
    static const OpRule r{OpFamily::elementwise, 3, 3, {}, maximum_grad_infer, maximum_grad_work};
    return r;
}
const OpRule& softmax_grad_rule() {
    static const OpRule r{OpFamily::normalization, 2, 2, {"axis"}, softmax_grad_infer, softmax_grad_work};
    return r;
}
const OpRule& layernorm_grad_rule() {
    static const OpRule r{OpFamily::normalization, 2, 3, {"affine", "eps"}, norm_grad_infer, layernorm_grad_work};
    return r;
}
const OpRule& rmsnorm_grad_rule() {
    static const OpRule r{OpFamily::normalization, 2, 3, {"affine", "eps"}, norm_grad_infer, rmsnorm_grad_work};
    return r;
}
const OpRule& dropout_grad_rule() {
    static const OpRule r{OpFamily::elementwise, 2, 2, {"p"}, dropout_grad_infer, dropout_grad_work};
    return r;
}
const OpRule& cross_entropy_grad_rule() {
    static const OpRule r{OpFamily::loss, 3, 3, {"reduction"}, cross_entropy_grad_infer, cross_entropy_grad_work};
    return r;
}
const OpRule& embedding_grad_rule() {
    static const OpRule r{OpFamily::movement, 2, 2, {"num_embeddings"}, embedding_grad_infer, embedding_grad_work};
    return r;
}
const OpRule& reduce_max_grad_rule() {
    static const OpRule r{OpFamily::reduction, 3, 3, {"axes", "keepdim"}, reduce_max_grad_infer, reduce_max_grad_work};
    return r;
}
const OpRule& expand_rule() {
    static const OpRule r{OpFamily::movement, 1, 1, {"shape"}, expand_infer, view_work};
    return r;
}
const OpRule& fill_rule() {
    static const OpRule r{OpFamily::movement, 0, 0, {"shape", "dtype", "value"}, fill_infer, fill_work};
    return r;
}

}  // namespace roofline
