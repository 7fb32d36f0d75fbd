#include <algorithm>
#include <string>

#include "ops/checked.hpp"
#include "ops/op_rule.hpp"

namespace roofline {

std::string_view op_name(OpKind k) {
    switch (k) {
        case OpKind::matmul: return "matmul";
        case OpKind::linear: return "linear";
        case OpKind::conv2d: return "conv2d";
        case OpKind::relu: return "relu";
        case OpKind::gelu: return "gelu";
        case OpKind::silu: return "silu";
        case OpKind::sigmoid: return "sigmoid";
        case OpKind::tanh: return "tanh";
        case OpKind::exp: return "exp";
        case OpKind::log: return "log";
        case OpKind::sin: return "sin";
        case OpKind::sqrt: return "sqrt";
        case OpKind::rsqrt: return "rsqrt";
        case OpKind::neg: return "neg";
        case OpKind::scale: return "scale";
        case OpKind::shift: return "shift";
        case OpKind::pow: return "pow";
        case OpKind::add: return "add";
        case OpKind::sub: return "sub";
        case OpKind::mul: return "mul";
        case OpKind::div: return "div";
        case OpKind::maximum: return "maximum";
        case OpKind::softmax: return "softmax";
        case OpKind::layernorm: return "layernorm";
        case OpKind::rmsnorm: return "rmsnorm";
        case OpKind::reduce_sum: return "reduce_sum";
        case OpKind::reduce_mean: return "reduce_mean";
        case OpKind::reduce_max: return "reduce_max";
        case OpKind::embedding: return "embedding";
        case OpKind::transpose: return "transpose";
        case OpKind::permute: return "permute";
        case OpKind::reshape: return "reshape";
        case OpKind::concat: return "concat";
        case OpKind::split: return "split";
        case OpKind::dropout: return "dropout";
        case OpKind::causal_mask: return "causal_mask";
        case OpKind::cross_entropy: return "cross_entropy";
        case OpKind::attention: return "attention";
        case OpKind::unary_grad: return "unary_grad";
        case OpKind::maximum_grad: return "maximum_grad";
        case OpKind::softmax_grad: return "softmax_grad";
        case OpKind::layernorm_grad: return "layernorm_grad";
        case OpKind::rmsnorm_grad: return "rmsnorm_grad";
        case OpKind::dropout_grad: return "dropout_grad";
        case OpKind::cross_entropy_grad: return "cross_entropy_grad";
        case OpKind::embedding_grad: return "embedding_grad";
        case OpKind::conv2d_grad_input: return "conv2d_grad_input";
        case OpKind::conv2d_grad_weight: return "conv2d_grad_weight";
        case OpKind::reduce_max_grad: return "reduce_max_grad";
        case OpKind::expand: return "expand";
        case OpKind::fill: return "fill";
        case OpKind::cast: return "cast";
        case OpKind::sgd_update: return "sgd_update";
        case OpKind::adam_update: return "adam_update";
        case OpKind::erf: return "erf";
        case OpKind::where: return "where";
        case OpKind::slice: return "slice";
        case OpKind::max_pool2d: return "max_pool2d";
        case OpKind::avg_pool2d: return "avg_pool2d";
        case OpKind::opaque: return "opaque";
        case OpKind::max_pool2d_grad: return "max_pool2d_grad";
        case OpKind::avg_pool2d_grad: return "avg_pool2d_grad";
    }
    return "?";
}

const OpRule& rule_of(OpKind k) {
    switch (k) {
        case OpKind::matmul: return matmul_rule();
        case OpKind::linear: return linear_rule();
        case OpKind::conv2d: return conv2d_rule();
        case OpKind::relu:
        case OpKind::gelu:
        case OpKind::silu:
        case OpKind::sigmoid:
        case OpKind::tanh:
        case OpKind::exp:
        case OpKind::log:
        case OpKind::sin:
        case OpKind::sqrt:
        case OpKind::rsqrt:
        case OpKind::neg:
        case OpKind::scale:
        case OpKind::shift:
        case OpKind::erf: return unary_rule();
        case OpKind::pow: return pow_rule();
        case OpKind::add:
        case OpKind::sub:
        case OpKind::mul:
        case OpKind::div:
        case OpKind::maximum: return binary_rule();
        case OpKind::softmax: return softmax_rule();
        case OpKind::layernorm: return layernorm_rule();
        case OpKind::rmsnorm: return rmsnorm_rule();
        case OpKind::reduce_sum:
        case OpKind::reduce_mean:
        case OpKind::reduce_max: return reduce_rule();
        case OpKind::embedding: return embedding_rule();
        case OpKind::transpose: return transpose_rule();
        case OpKind::permute: return permute_rule();
        case OpKind::reshape: return reshape_rule();
        case OpKind::concat: return concat_rule();
        case OpKind::split: return split_rule();
        case OpKind::dropout: return dropout_rule();
        case OpKind::causal_mask: return causal_mask_rule();
        case OpKind::cross_entropy: return cross_entropy_rule();
        case OpKind::attention: return attention_rule();
        case OpKind::unary_grad: return unary_grad_rule();
        case OpKind::maximum_grad: return maximum_grad_rule();
        case OpKind::softmax_grad: return softmax_grad_rule();
        case OpKind::layernorm_grad: return layernorm_grad_rule();
        case OpKind::rmsnorm_grad: return rmsnorm_grad_rule();
        case OpKind::dropout_grad: return dropout_grad_rule();
        case OpKind::cross_entropy_grad: return cross_entropy_grad_rule();
        case OpKind::embedding_grad: return embedding_grad_rule();
        case OpKind::conv2d_grad_input: return conv2d_grad_input_rule();
        case OpKind::conv2d_grad_weight: return conv2d_grad_weight_rule();
        case OpKind::reduce_max_grad: return reduce_max_grad_rule();
        case OpKind::expand: return expand_rule();
        case OpKind::fill: return fill_rule();
        case OpKind::cast: return cast_rule();
        case OpKind::sgd_update: return sgd_update_rule();
        case OpKind::adam_update: return adam_update_rule();
        case OpKind::where: return where_rule();
        case OpKind::slice: return slice_rule();
        case OpKind::max_pool2d:
        case OpKind::avg_pool2d: return pool2d_rule();
        case OpKind::opaque: return opaque_rule();
        case OpKind::max_pool2d_grad:
        case OpKind::avg_pool2d_grad: return pool2d_grad_rule();
    }
    throw InputError("internal: op kind without a rule");
}

std::optional<OpKind> parse_op(std::string_view name) {
    for (OpKind k : kAllOpKinds) {
        if (op_name(k) == name) return k;
    }
    return std::nullopt;
}

std::string op_choices() {
    std::string s;
    for (OpKind k : kAllOpKinds) {
        if (!s.empty()) s += ", ";
        s += op_name(k);
    }
    return s;
}

std::string_view family_name(OpFamily f) {
    switch (f) {
        case OpFamily::matrix: return "matrix";
        case OpFamily::elementwise: return "elementwise";
        case OpFamily::normalization: return "normalization";
        case OpFamily::reduction: return "reduction";
        case OpFamily::movement: return "movement";
        case OpFamily::attention: return "attention";
        case OpFamily::loss: return "loss";
        case OpFamily::optimizer: return "optimizer";
    }
    return "?";
}

namespace {

// Kinds that share one rule (the unary ops) do not share every attribute.
bool attr_applies(OpKind k, std::string_view name) {
    if (name == "approximate") return k == OpKind::gelu || k == OpKind::unary_grad;
    if (name == "factor") return k == OpKind::scale;
    if (name == "offset") return k == OpKind::shift;
    if (name == "exponent") return k == OpKind::pow;
    if (name == "dilation") return k != OpKind::avg_pool2d && k != OpKind::avg_pool2d_grad;
    if (name == "count_include_pad") return k == OpKind::avg_pool2d || k == OpKind::avg_pool2d_grad;
    if (name == "input_shape") return k != OpKind::max_pool2d_grad;
    return true;
}

// Prefixes an error with the op's name unless it already starts with it.
[[noreturn]] void rethrow_for_op(OpKind k, const InputError& e) {
    const std::string msg = e.what();
    const std::string name(op_name(k));
    if (msg.rfind(name, 0) == 0 && msg.size() > name.size() && (msg[name.size()] == ':' || msg[name.size()] == ' ')) throw e;
    throw InputError(name + ": " + msg);
}

void check_call(OpKind k, const OpRule& r, Inputs in, const Attrs& attrs) {
    const auto n = static_cast<int>(in.size());
    if (n < r.min_inputs || (r.max_inputs != OpRule::kVariadic && n > r.max_inputs)) {
        std::string expected = std::to_string(r.min_inputs);
        if (r.max_inputs == OpRule::kVariadic) {
            expected += " or more";
        } else if (r.max_inputs != r.min_inputs) {
            expected += " to " + std::to_string(r.max_inputs);
        }
        throw InputError(std::string(op_name(k)) + " takes " + expected + " inputs, got " + std::to_string(n));
    }
    for (const auto& [name, value] : attrs.all()) {
        if (std::find(r.attrs.begin(), r.attrs.end(), name) == r.attrs.end() || !attr_applies(k, name)) {
            std::string accepted;
            for (auto a : r.attrs) {
                if (attr_applies(k, a)) accepted += (accepted.empty() ? "" : ", ") + std::string(a);
            }
            throw InputError(std::string(op_name(k)) + " has no attribute '" + name + "' (accepted: " +
                             (accepted.empty() ? "none" : accepted) + ")");
        }
    }
    for (const TensorDesc& t : in) {
        check_dims(t.shape);
        (void)t.bytes();  // overflow check on every input
    }
}

}  // namespace

std::vector<TensorDesc> infer_outputs(OpKind k, Inputs in, const Attrs& attrs) {
    const OpRule& r = rule_of(k);
    try {
        check_call(k, r, in, attrs);
        auto out = r.infer(k, in, attrs);
        for (const TensorDesc& t : out) (void)t.bytes();  // overflow check on every output
        return out;
    } catch (const InputError& e) {
        rethrow_for_op(k, e);
    }
}

Work count_work(OpKind k, Inputs in, std::span<const TensorDesc> out, const Attrs& attrs) {
    try {
        check_call(k, rule_of(k), in, attrs);
        return rule_of(k).work(k, in, out, attrs);
    } catch (const InputError& e) {
        rethrow_for_op(k, e);
    }
}

Work io_bytes(Inputs in, std::span<const TensorDesc> out) {
    Work w;
    for (const TensorDesc& t : in) w.bytes_read = checked_add(w.bytes_read, t.bytes(), "bytes read");
    for (const TensorDesc& t : out) w.bytes_written = checked_add(w.bytes_written, t.bytes(), "bytes written");
    return w;
}

DType common_dtype(OpKind k, Inputs in) {
    for (const TensorDesc& t : in) {
        if (t.dtype != in[0].dtype) {
            throw InputError(std::string(op_name(k)) + ": inputs must share a dtype, got " + desc_str(in[0]) +
                             " and " + desc_str(t));
        }
    }
    return in[0].dtype;
}

void require_floating(OpKind k, const TensorDesc& t, const char* role) {
    if (!is_floating(t.dtype)) {
        throw InputError(std::string(op_name(k)) + ": " + role + " must be floating point, got " + desc_str(t));
    }
}

DType matrix_output_dtype(DType in) {
    switch (in) {
        case DType::int8: return DType::int32;
        case DType::fp8_e4m3:
        case DType::fp8_e5m2: return DType::bf16;
        case DType::f64:
        case DType::f32:
        case DType::tf32:
        case DType::f16:
        case DType::bf16:
        case DType::u8:
        case DType::int32:
        case DType::int64: return in;
    }
    return in;
}

}  // namespace roofline
