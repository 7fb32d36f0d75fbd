// Mixed precision and optimizer steps as graph ops (seeds: fp32 master weights and optimizer
// state, bf16/fp16 compute, optional loss scaling folded into the update as grad_scale).
#include "ops/checked.hpp"
#include "ops/op_rule.hpp"

namespace roofline {
namespace {

// cast(x) -> x converted to attribute dtype. Conversions are not counted as FLOPs.
std::vector<TensorDesc> cast_infer(OpKind, Inputs in, const Attrs& attrs) {
    const auto d = parse_dtype(attrs.get_string("dtype", ""));
    if (!d) throw InputError("attribute 'dtype' must be a dtype name (" + dtype_choices() + ")");
    return {TensorDesc{in[0].shape, *d}};
}

Work cast_work(OpKind, Inputs in, std::span<const TensorDesc> out, const Attrs&) { return io_bytes(in, out); }

void check_state(const TensorDesc& p, const TensorDesc& s, const char* what) {
    if (s.shape != p.shape)
        throw InputError(std::string(what) + " " + desc_str(s) + " must have the shape of the parameter " + desc_str(p));
}

// sgd_update(param, grad, momentum_buffer?) -> (param', momentum_buffer'?)
std::vector<TensorDesc> sgd_infer(OpKind, Inputs in, const Attrs& attrs) {
    check_state(in[0], in[1], "gradient");
    if (attrs.get_double("lr", 1e-3) <= 0) throw InputError("attribute 'lr' must be positive");
    if (in.size() == 3) {
        check_state(in[0], in[2], "momentum buffer");
        return {in[0], in[2]};
    }
    return {in[0]};
}

Work sgd_work(OpKind, Inputs in, std::span<const TensorDesc> out, const Attrs& attrs) {
    Work w = io_bytes(in, out);
    // p -= lr g (2); momentum: buf = mu buf + g (2); weight decay: g += wd p (2); unscale g (1)
    std::int64_t per =
        2 + (in.size() == 3 ? 2 : 0) + (attrs.get_double("weight_decay", 0) > 0 ? 2 : 0) + (attrs.get_double("grad_scale", 1) != 1 ? 1 : 0);
    w.vector_flops = checked_mul(in[0].numel(), per, "FLOPs");
    return w;
}

// adam_update(param, grad, m, v) -> (param', m', v'); decoupled weight decay (AdamW) when
// attribute decoupled is true (Loshchilov & Hutter 2019), L2 in the gradient otherwise.
std::vector<TensorDesc> adam_infer(OpKind, Inputs in, const Attrs& attrs) {
    check_state(in[0], in[1], "gradient");
    check_state(in[0], in[2], "first moment");
    check_state(in[0], in[3], "second moment");
    const double b1 = attrs.get_double("beta1", 0.9), b2 = attrs.get_double("beta2", 0.999);
    if (!(b1 >= 0 && b1 < 1 && b2 >= 0 && b2 < 1)) throw InputError("attributes 'beta1' and 'beta2' must be in [0, 1)");
    if (attrs.get_double("lr", 1e-3) <= 0) throw InputError("attribute 'lr' must be positive");
    return {in[0], in[2], in[3]};
}

Work adam_work(OpKind, Inputs in, std::span<const TensorDesc> out, const Attrs& attrs) {
    Work w = io_bytes(in, out);
    // m = b1 m + (1-b1) g (3); v = b2 v + (1-b2) g^2 (4); bias corrections (2); sqrt(v^) (one
    // transcendental) + eps (1); m^ / (..) (1); times lr (1); subtract (1); weight decay (2);
    // unscale the gradient (1) under loss scaling.
    const std::int64_t per = 13 + (attrs.get_double("weight_decay", 0) > 0 ? 2 : 0) + (attrs.get_double("grad_scale", 1) != 1 ? 1 : 0);
    w.vector_flops = checked_mul(in[0].numel(), per, "FLOPs");
    w.transcendentals = in[0].numel();
    return w;
}

}  // namespace

const OpRule& cast_rule() {
    static const OpRule r{OpFamily::elementwise, 1, 1, {"dtype"}, cast_infer, cast_work};
    return r;
}
const OpRule& sgd_update_rule() {
    static const OpRule r{OpFamily::optimizer, 2, 3, {"lr", "momentum", "weight_decay", "grad_scale"}, sgd_infer, sgd_work};
    return r;
}
const OpRule& adam_update_rule() {
    static const OpRule r{OpFamily::optimizer, 4,        4, {"lr", "beta1", "beta2", "eps", "weight_decay", "decoupled", "grad_scale"},
                          adam_infer,          adam_work};
    return r;
}

}  // namespace roofline
