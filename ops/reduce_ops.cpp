// Reductions over axes (sum, mean, max) and the cross-entropy loss.
#include <algorithm>

#include "ops/checked.hpp"
#include "ops/op_rule.hpp"

namespace roofline {
namespace {

// Normalised, sorted, unique axes; all axes when the attribute is absent.
std::vector<std::int64_t> reduce_axes(const TensorDesc& x, const Attrs& attrs) {
    std::vector<std::int64_t> axes;
    if (!attrs.has("axes")) {
        for (std::int64_t i = 0; i < x.rank(); ++i) axes.push_back(i);
        return axes;
    }
    for (std::int64_t a : attrs.get_ints("axes", {})) axes.push_back(normalize_axis(a, x.rank()));
    std::sort(axes.begin(), axes.end());
    if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) throw InputError("attribute 'axes' repeats an axis");
    return axes;
}

std::vector<TensorDesc> reduce_infer(OpKind k, Inputs in, const Attrs& attrs) {
    const TensorDesc& x = in[0];
    if (x.dtype == DType::u8) throw InputError(std::string(op_name(k)) + ": x must be numeric");
    const auto axes = reduce_axes(x, attrs);
    const bool keep = attrs.get_bool("keepdim", false);
    Shape out;
    for (std::int64_t i = 0; i < x.rank(); ++i) {
        const bool reduced = std::binary_search(axes.begin(), axes.end(), i);
        if (!reduced)
            out.push_back(x.shape[static_cast<std::size_t>(i)]);
        else if (keep)
            out.push_back(1);
    }
    return {TensorDesc{out, x.dtype}};
}

Work reduce_work(OpKind k, Inputs in, std::span<const TensorDesc> out, const Attrs&) {
    Work w = io_bytes(in, out);
    // one add (or compare) per input element; mean adds one divide per output element
    w.vector_flops = in[0].numel();
    if (k == OpKind::reduce_mean) w.vector_flops = checked_add(w.vector_flops, out[0].numel(), "FLOPs");
    return w;
}

// cross_entropy(logits[..., V], targets[...] int) -> loss (f32; mean over rows by default).
std::vector<TensorDesc> cross_entropy_infer(OpKind k, Inputs in, const Attrs& attrs) {
    const TensorDesc& logits = in[0];
    const TensorDesc& targets = in[1];
    require_floating(k, logits, "logits");
    if (!is_index(targets.dtype)) throw InputError("targets must be int32 or int64, got " + desc_str(targets));
    if (logits.rank() < 1 || Shape(logits.shape.begin(), logits.shape.end() - 1) != targets.shape) {
        throw InputError("targets " + desc_str(targets) + " must have the shape of logits " + desc_str(logits) +
                         " without its last (class) dimension");
    }
    const std::string reduction = attrs.get_string("reduction", "mean");
    if (reduction == "mean" || reduction == "sum") return {TensorDesc{{}, DType::f32}};
    if (reduction == "none") return {TensorDesc{targets.shape, DType::f32}};
    throw InputError("attribute 'reduction' must be \"mean\", \"sum\" or \"none\", got \"" + reduction + "\"");
}

Work cross_entropy_work(OpKind, Inputs in, std::span<const TensorDesc> out, const Attrs& attrs) {
    const std::int64_t n = in[0].numel();
    const std::int64_t rows = in[1].numel();
    Work w = io_bytes(in, out);
    // per logit: running max (1), subtract (1), exp, sum (1); per row: log, subtract the target
    // logit (1), accumulate into the loss (1, not for reduction "none"); the final divide (mean only).
    const std::string reduction = attrs.get_string("reduction", "mean");
    const std::int64_t per_row = reduction == "none" ? 1 : 2;
    w.vector_flops = checked_add(checked_mul(n, 3), checked_add(checked_mul(rows, per_row), reduction == "mean" ? 1 : 0), "FLOPs");
    w.transcendentals = checked_add(n, rows, "transcendentals");
    return w;
}

}  // namespace

const OpRule& reduce_rule() {
    static const OpRule r{OpFamily::reduction, 1, 1, {"axes", "keepdim"}, reduce_infer, reduce_work};
    return r;
}

const OpRule& cross_entropy_rule() {
    static const OpRule r{OpFamily::loss, 2, 2, {"reduction"}, cross_entropy_infer, cross_entropy_work};
    return r;
}

}  // namespace roofline
