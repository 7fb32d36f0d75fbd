// Elementwise ops: unary math, binary arithmetic with numpy broadcasting, dropout, causal mask.
#include <cmath>

#include "ops/checked.hpp"
#include "ops/op_rule.hpp"

namespace roofline {
namespace {

// Per-element cost of each unary op: plain FLOPs and transcendental results. Counted from the
// formula an ideal kernel evaluates; each add, multiply, compare or select is one FLOP.
struct UnaryCost {
    std::int64_t vector;
    std::int64_t transcendental;
};

// x ^ e by what a kernel computes for each exponent (PyTorch's pow kernels special-case these):
// 0 and 1 copy (or fill), 2 is x*x, 3 is x*x*x, -1 a reciprocal (one divide), 0.5 sqrt, -0.5
// rsqrt, and any other exponent exp2(e * log2(x)): one multiply and two transcendentals.
UnaryCost pow_cost(double e) {
    if (e == 0.0 || e == 1.0) return {0, 0};
    if (e == 2.0) return {1, 0};
    if (e == 3.0) return {2, 0};
    if (e == -1.0) return {1, 0};
    if (e == 0.5 || e == -0.5) return {0, 1};
    return {1, 2};
}

UnaryCost unary_cost(OpKind k, const Attrs& attrs) {
    switch (k) {
        case OpKind::relu: return {1, 0};  // max(x, 0)
        case OpKind::gelu: {
            const std::string approx = attrs.get_string("approximate", "tanh");
            // tanh: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): x^3 (2), *c (1), +x (1), *k (1),
            // +1 (1), *x (1), *0.5 (1) = 8 plus one tanh.
            if (approx == "tanh") return {8, 1};
            // erf: 0.5 x (1 + erf(x / sqrt(2))): /sqrt2 (1), +1 (1), *x (1), *0.5 (1) = 4 plus one erf.
            if (approx == "erf" || approx == "none") return {4, 1};
            throw InputError("attribute 'approximate' must be \"tanh\" or \"erf\", got \"" + approx + "\"");
        }
#define ROOFLINE_UNARY(name, domain, flops, tr, ...) \
    case OpKind::name:                               \
        return {flops, tr};
#include "ops/unary_ops.def"
#undef ROOFLINE_UNARY
        case OpKind::neg: return {1, 0};
        case OpKind::scale: return {1, 0};  // x * factor
        case OpKind::shift: return {1, 0};  // x + offset
        case OpKind::pow: return pow_cost(attrs.get_double("exponent", 1.0));
        default: throw InputError("internal: not a unary op");
    }
}

std::vector<TensorDesc> unary_infer(OpKind k, Inputs in, const Attrs& attrs) {
    require_floating(k, in[0], "x");
    (void)unary_cost(k, attrs);  // validates attribute values
    // scale, shift and pow take their scalar operand as a required number attribute.
    const char* operand = k == OpKind::scale ? "factor" : k == OpKind::shift ? "offset" : k == OpKind::pow ? "exponent" : nullptr;
    if (operand != nullptr) {
        if (!attrs.has(operand)) throw InputError(std::string("missing attribute '") + operand + "' (a number)");
        const double v = attrs.get_double(operand, 1.0);  // type check: a number
        if (!std::isfinite(v)) throw InputError(std::string("attribute '") + operand + "' must be finite");
    }
    return {in[0]};
}

Work unary_work(OpKind k, Inputs in, std::span<const TensorDesc> out, const Attrs& attrs) {
    const UnaryCost c = unary_cost(k, attrs);
    const std::int64_t n = in[0].numel();
    Work w = io_bytes(in, out);
    w.vector_flops = checked_mul(n, c.vector, "FLOPs");
    w.transcendentals = checked_mul(n, c.transcendental, "transcendentals");
    return w;
}

std::vector<TensorDesc> binary_infer(OpKind k, Inputs in, const Attrs&) {
    const DType dt = common_dtype(k, in);
    if (dt == DType::u8) throw InputError("operands must be numeric, got " + desc_str(in[0]));
    return {TensorDesc{broadcast_shapes(in[0].shape, in[1].shape), dt}};
}

Work binary_work(OpKind, Inputs in, std::span<const TensorDesc> out, const Attrs&) {
    Work w = io_bytes(in, out);  // a broadcast operand is read once
    w.vector_flops = out[0].numel();
    return w;
}

// pow(x, exponent) with the exponent a tensor (numpy broadcasting), as torch.pow(x, y) runs it in
// one kernel (ATen's pow_tensor_tensor_kernel): exp2(y * log2(x)) per element, one multiply and
// two transcendentals; with one input it is the unary pow above (a scalar exponent attribute).
std::vector<TensorDesc> pow_infer(OpKind k, Inputs in, const Attrs& attrs) {
    if (in.size() == 1) return unary_infer(k, in, attrs);
    if (attrs.has("exponent")) throw InputError("pow takes its exponent either as a second input or as the attribute 'exponent', not both");
    require_floating(k, in[0], "x");
    require_floating(k, in[1], "exponent");
    return binary_infer(k, in, attrs);
}

Work pow_work(OpKind k, Inputs in, std::span<const TensorDesc> out, const Attrs& attrs) {
    if (in.size() == 1) return unary_work(k, in, out, attrs);
    Work w = io_bytes(in, out);  // a broadcast operand is read once
    w.vector_flops = out[0].numel();
    w.transcendentals = checked_mul(out[0].numel(), 2, "transcendentals");
    return w;
}

// dropout(x) -> (y, mask): y = x * mask / (1 - p), mask stored as u8 for the backward pass.
std::vector<TensorDesc> dropout_infer(OpKind k, Inputs in, const Attrs& attrs) {
    require_floating(k, in[0], "x");
    const double p = attrs.get_double("p", 0.1);
    if (!(p >= 0.0 && p < 1.0)) throw InputError("attribute 'p' must be in [0, 1), got " + std::to_string(p));
    return {in[0], TensorDesc{in[0].shape, DType::u8}};
}

Work dropout_work(OpKind, Inputs in, std::span<const TensorDesc> out, const Attrs&) {
    Work w = io_bytes(in, out);
    // compare the random draw with p, multiply by the kept scale; the integer RNG is not FLOPs.
    w.vector_flops = checked_mul(in[0].numel(), 2, "FLOPs");
    return w;
}

// causal_mask(scores[..., Sq, Sk]): entries above the diagonal become -inf (one select each).
std::vector<TensorDesc> causal_mask_infer(OpKind k, Inputs in, const Attrs&) {
    require_floating(k, in[0], "scores");
    if (in[0].rank() < 2) throw InputError("scores must have rank >= 2, got " + desc_str(in[0]));
    return {in[0]};
}

Work causal_mask_work(OpKind, Inputs in, std::span<const TensorDesc> out, const Attrs&) {
    Work w = io_bytes(in, out);
    w.vector_flops = in[0].numel();
    return w;
}

}  // namespace

const OpRule& unary_rule() {
    static const OpRule r{OpFamily::elementwise, 1, 1, {"approximate", "factor", "offset", "exponent"}, unary_infer, unary_work};
    return r;
}

const OpRule& pow_rule() {
    static const OpRule r{OpFamily::elementwise, 1, 2, {"exponent"}, pow_infer, pow_work};
    return r;
}

const OpRule& binary_rule() {
    static const OpRule r{OpFamily::elementwise, 2, 2, {}, binary_infer, binary_work};
    return r;
}

const OpRule& dropout_rule() {
    static const OpRule r{OpFamily::elementwise, 1, 1, {"p"}, dropout_infer, dropout_work};
    return r;
}

const OpRule& causal_mask_rule() {
    // value: what masked entries become (default -inf; 0 in the backward pass)
    static const OpRule r{OpFamily::elementwise, 1, 1, {"value"}, causal_mask_infer, causal_mask_work};
    return r;
}

}  // namespace roofline
