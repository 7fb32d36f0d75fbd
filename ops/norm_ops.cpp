// softmax, layernorm and rmsnorm: row-wise normalisations. Counts assume the ideal single-pass
// kernel (one read of x, one write of y); per-element and per-row FLOPs are listed with each rule.
#include "ops/checked.hpp"
#include "ops/op_rule.hpp"

namespace roofline {
namespace {

std::vector<TensorDesc> softmax_infer(OpKind k, Inputs in, const Attrs& attrs) {
    require_floating(k, in[0], "x");
    if (in[0].rank() < 1) throw InputError("x must have rank >= 1");
    (void)normalize_axis(attrs.get_int("axis", -1), in[0].rank());
    return {in[0]};
}

Work softmax_work(OpKind, Inputs in, std::span<const TensorDesc> out, const Attrs&) {
    const std::int64_t n = in[0].numel();
    Work w = io_bytes(in, out);
    // per element: running max (1), subtract max (1), exp (transcendental), sum (1), divide (1)
    w.vector_flops = checked_mul(n, 4, "FLOPs");
    w.transcendentals = n;
    return w;
}

// layernorm(x, weight?, bias?) over the last dimension; rmsnorm(x, weight?) likewise.
void check_norm_params(Inputs in) {
    const TensorDesc& x = in[0];
    if (x.rank() < 1) throw InputError("x must have rank >= 1");
    for (std::size_t i = 1; i < in.size(); ++i) {
        if (in[i].shape != Shape{x.shape.back()}) {
            throw InputError("parameter " + std::to_string(i) + " must have shape [" + std::to_string(x.shape.back()) +
                             "] (the normalised dimension), got " + desc_str(in[i]));
        }
    }
}

std::vector<TensorDesc> norm_infer(OpKind k, Inputs in, const Attrs& attrs) {
    require_floating(k, in[0], "x");
    check_norm_params(in);
    if (attrs.get_double("eps", 1e-5) <= 0) throw InputError("attribute 'eps' must be positive");
    return {in[0]};
}

Work layernorm_work(OpKind, Inputs in, std::span<const TensorDesc> out, const Attrs&) {
    const std::int64_t n = in[0].numel();
    const std::int64_t rows = n / std::max<std::int64_t>(in[0].shape.back(), 1);
    const std::int64_t affine = in.size() > 1 ? (in.size() > 2 ? 2 : 1) : 0;
    Work w = io_bytes(in, out);
    // per element: sum for the mean (1), subtract mean (1), square-accumulate (2), scale by 1/sigma (1),
    // then weight (1) and bias (1) when present; per row: mean and variance divides, + eps (3), rsqrt.
    w.vector_flops = checked_add(checked_mul(n, 5 + affine), checked_mul(rows, 3), "FLOPs");
    w.transcendentals = rows;
    return w;
}

Work rmsnorm_work(OpKind, Inputs in, std::span<const TensorDesc> out, const Attrs&) {
    const std::int64_t n = in[0].numel();
    const std::int64_t rows = n / std::max<std::int64_t>(in[0].shape.back(), 1);
    const std::int64_t affine = in.size() > 1 ? 1 : 0;
    Work w = io_bytes(in, out);
    // per element: square-accumulate (2), scale by 1/rms (1), weight (1) when present;
    // per row: divide by n and + eps (2), rsqrt.
    w.vector_flops = checked_add(checked_mul(n, 3 + affine), checked_mul(rows, 2), "FLOPs");
    w.transcendentals = rows;
    return w;
}

}  // namespace

const OpRule& softmax_rule() {
    static const OpRule r{OpFamily::normalization, 1, 1, {"axis"}, softmax_infer, softmax_work};
    return r;
}

const OpRule& layernorm_rule() {
    static const OpRule r{OpFamily::normalization, 1, 3, {"eps"}, norm_infer, layernorm_work};
    return r;
}

const OpRule& rmsnorm_rule() {
    static const OpRule r{OpFamily::normalization, 1, 2, {"eps"}, norm_infer, rmsnorm_work};
    return r;
}

}  // namespace roofline
