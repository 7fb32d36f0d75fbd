#include <algorithm>
#include <string>

#include "ops/checked.hpp"
#include "ops/op_def.hpp"
#include "ops/op_rule.hpp"

namespace roofline {

namespace {

// The registry: one entry per op kind, in the order of the OpKind enum (checked below and by
// tests/unit/ops_test.cpp): its name, its rule (shape, work; ops/*_ops.cpp) and its traits (what
// sim/ and measure/ ask of it, ops/op_traits.hpp). The ops of ops/defs/ come last, their rows
// generated: their rule and traits are in their definition (ops/op_def.hpp).
struct OpDef {
    OpKind kind;
    std::string_view name;
    const OpRule& (*rule)();
    OpTraits traits;
    const OpDefinition& (*definition)() = nullptr;  // the ops of ops/defs/: rule and traits from it
};

const OpDef kOps[] = {
    {OpKind::matmul, "matmul", matmul_rule, {.kernel = KernelForm::gemm, .keep_when_recomputing = true, .fusion = FusionRole::gemm}},
    {OpKind::linear,
     "linear",
     linear_rule,
     {.kernel = KernelForm::linear_gemm, .eager_extra_calls = 5, .eager_split = EagerSplit::addmm_bias, .keep_when_recomputing = true}},
    {OpKind::conv2d, "conv2d", conv2d_rule, {.kernel = KernelForm::conv_forward, .eager_extra_calls = 3, .keep_when_recomputing = true}},
    {OpKind::relu, "relu", unary_rule, {.eager_extra_calls = 1}},
    {OpKind::gelu, "gelu", unary_rule, {}},
#define ROOFLINE_UNARY(name, ...) {OpKind::name, #name, unary_rule, {}},
#include "ops/unary_ops.def"
#undef ROOFLINE_UNARY
    {OpKind::neg, "neg", unary_rule, {}},
    {OpKind::scale, "scale", unary_rule, {.fusion = FusionRole::scale}},
    {OpKind::add, "add", binary_rule, {}},
    {OpKind::sub, "sub", binary_rule, {}},
    {OpKind::mul, "mul", binary_rule, {}},
    {OpKind::div, "div", binary_rule, {}},
    {OpKind::maximum, "maximum", binary_rule, {}},
    {OpKind::softmax,
     "softmax",
     softmax_rule,
     {.kernel = KernelForm::row, .row_launch = RowLaunch::softmax, .eager_extra_calls = 1, .fusion = FusionRole::softmax}},
    {OpKind::layernorm,
     "layernorm",
     layernorm_rule,
     {.kernel = KernelForm::row, .row_launch = RowLaunch::block_per_row, .eager_extra_calls = 3, .norm = true}},
    {OpKind::rmsnorm, "rmsnorm", rmsnorm_rule, {.kernel = KernelForm::row, .norm = true}},
    {OpKind::reduce_sum, "reduce_sum", reduce_rule, {.kernel = KernelForm::row, .row_axes_attr = true}},
    {OpKind::reduce_mean, "reduce_mean", reduce_rule, {.kernel = KernelForm::row, .row_axes_attr = true}},
    {OpKind::reduce_max, "reduce_max", reduce_rule, {.kernel = KernelForm::row, .row_axes_attr = true}},
    {OpKind::embedding, "embedding", embedding_rule, {.keep_when_recomputing = true}},
    {OpKind::transpose, "transpose", transpose_rule, {.view = ViewKind::unless_copy}},
    {OpKind::permute, "permute", permute_rule, {.view = ViewKind::unless_copy}},
    {OpKind::reshape, "reshape", reshape_rule, {.view = ViewKind::always}},
    {OpKind::concat, "concat", concat_rule, {}},
    {OpKind::split, "split", split_rule, {.view = ViewKind::unless_copy}},
    {OpKind::dropout, "dropout", dropout_rule, {.fusion = FusionRole::dropout}},
    {OpKind::causal_mask, "causal_mask", causal_mask_rule, {.fusion = FusionRole::causal_mask}},
    {OpKind::cross_entropy,
     "cross_entropy",
     cross_entropy_rule,
     {.kernel = KernelForm::row, .row_launch = RowLaunch::softmax, .eager_extra_calls = 2, .native_split = NativeSplit::loss_sum}},
    {OpKind::attention,
     "attention",
     attention_rule,
     {.kernel = KernelForm::attention, .keep_when_recomputing = true, .fusion = FusionRole::attention}},
    {OpKind::unary_grad, "unary_grad", unary_grad_rule, {}},
    {OpKind::maximum_grad, "maximum_grad", maximum_grad_rule, {}},
    {OpKind::softmax_grad,
     "softmax_grad",
     softmax_grad_rule,
     {.kernel = KernelForm::row, .row_launch = RowLaunch::softmax, .eager_split = EagerSplit::softmax_grad}},
    {OpKind::layernorm_grad,
     "layernorm_grad",
     layernorm_grad_rule,
     {.kernel = KernelForm::row,
      .row_launch = RowLaunch::block_per_row,
      .eager_split = EagerSplit::layernorm_grad,
      .native_split = NativeSplit::norm_grad,
      .norm = true}},
    {OpKind::rmsnorm_grad,
     "rmsnorm_grad",
     rmsnorm_grad_rule,
     {.kernel = KernelForm::row, .native_split = NativeSplit::norm_grad, .norm = true}},
    {OpKind::dropout_grad, "dropout_grad", dropout_grad_rule, {}},
    {OpKind::cross_entropy_grad,
     "cross_entropy_grad",
     cross_entropy_grad_rule,
     {.kernel = KernelForm::row, .row_launch = RowLaunch::softmax}},
    {OpKind::embedding_grad, "embedding_grad", embedding_grad_rule, {.eager_split = EagerSplit::embedding_grad}},
    {OpKind::conv2d_grad_input, "conv2d_grad_input", conv2d_grad_input_rule, {.kernel = KernelForm::conv_grad_input}},
    {OpKind::conv2d_grad_weight, "conv2d_grad_weight", conv2d_grad_weight_rule, {.kernel = KernelForm::conv_grad_weight}},
    {OpKind::reduce_max_grad, "reduce_max_grad", reduce_max_grad_rule, {}},
    {OpKind::expand, "expand", expand_rule, {.view = ViewKind::broadcast}},
    {OpKind::fill, "fill", fill_rule, {}},
    {OpKind::cast, "cast", cast_rule, {.converts_dtype = true}},
    {OpKind::sgd_update, "sgd_update", sgd_update_rule, {.optimizer_update = true, .in_place = {0, 2, -1}}},
    {OpKind::adam_update, "adam_update", adam_update_rule, {.optimizer_update = true, .in_place = {0, 2, 3}}},
    {OpKind::where, "where", where_rule, {}},
    {OpKind::slice, "slice", slice_rule, {}},
    {OpKind::max_pool2d, "max_pool2d", pool2d_rule, {}},
    {OpKind::avg_pool2d, "avg_pool2d", pool2d_rule, {}},
    {OpKind::opaque, "opaque", opaque_rule, {}},
    {OpKind::max_pool2d_grad, "max_pool2d_grad", pool2d_grad_rule, {}},
    {OpKind::avg_pool2d_grad, "avg_pool2d_grad", pool2d_grad_rule, {}},
    {OpKind::shift, "shift", unary_rule, {}},
    {OpKind::pow, "pow", pow_rule, {}},
    {OpKind::pad, "pad", pad_rule, {}},
    {OpKind::resize, "resize", resize_rule, {}},
    {OpKind::topk, "topk", topk_rule, {}},
#define ROOFLINE_DEFINED_OP(name) {OpKind::name, #name, nullptr, {}, op_def_##name},
#include "ops/defined_ops.inc"
#undef ROOFLINE_DEFINED_OP
};

constexpr std::size_t kOpCount = sizeof(kOps) / sizeof(kOps[0]);
static_assert(kOpCount == std::size(kAllOpKinds), "one registry entry per op kind");

const OpDef& def_of(OpKind k) {
    const auto i = static_cast<std::size_t>(k);
    if (i >= kOpCount || kOps[i].kind != k) throw InputError("internal: the op registry is out of order at kind " + std::to_string(i));
    return kOps[i];
}

}  // namespace

std::string_view op_name(OpKind k) { return def_of(k).name; }
const OpRule& rule_of(OpKind k) {
    const OpDef& d = def_of(k);
    return d.definition ? d.definition().rule : d.rule();
}
const OpTraits& traits_of(OpKind k) {
    const OpDef& d = def_of(k);
    return d.definition ? d.definition().traits : d.traits;
}
const OpDefinition* op_definition(OpKind k) {
    const OpDef& d = def_of(k);
    return d.definition ? &d.definition() : nullptr;
}

bool is_gemm(KernelForm f) { return f == KernelForm::gemm || f == KernelForm::linear_gemm || is_conv(f); }
bool is_conv(KernelForm f) {
    return f == KernelForm::conv_forward || f == KernelForm::conv_grad_input || f == KernelForm::conv_grad_weight;
}

std::optional<OpKind> parse_op(std::string_view name) {
    for (const OpDef& d : kOps) {  // the registry's rows directly: a model file names an op a node
        if (d.name == name) return d.kind;
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
            throw InputError(std::string(op_name(k)) + " has no attribute '" + name +
                             "' (accepted: " + (accepted.empty() ? "none" : accepted) + ")");
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
            throw InputError(std::string(op_name(k)) + ": inputs must share a dtype, got " + desc_str(in[0]) + " and " + desc_str(t));
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
