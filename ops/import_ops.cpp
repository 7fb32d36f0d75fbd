// Ops the ONNX importer needs beyond the hand-written vocabulary (model/onnx_import.cpp):
// where (select), slice (strided copy), pad, max/avg 2-d pooling, and opaque (an imported op without a
// rule, kept by --allow-unknown: zero work, its output shapes taken from ONNX shape inference).
#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "ops/checked.hpp"
#include "ops/index_map.hpp"
#include "ops/op_rule.hpp"

namespace roofline {
namespace {

// where(cond, a, b) -> cond ? a : b, all three broadcast (numpy rules); cond is a u8 (ONNX bool) or
// integer mask. One select per output element.
std::vector<TensorDesc> where_infer(OpKind k, Inputs in, const Attrs&) {
    if (is_floating(in[0].dtype)) throw InputError("condition must be u8 (bool) or an integer mask, got " + desc_str(in[0]));
    const TensorDesc ab[2] = {in[1], in[2]};
    const DType d = common_dtype(k, ab);
    return {TensorDesc{broadcast_shapes(broadcast_shapes(in[0].shape, in[1].shape), in[2].shape), d}};
}

Work where_work(OpKind, Inputs in, std::span<const TensorDesc> out, const Attrs&) {
    Work w = io_bytes(in, out);
    w.vector_flops = out[0].numel();
    return w;
}

// slice(x) with attributes starts, ends, axes (default 0, 1, ...), steps (default 1), with ONNX
// Slice semantics: negative indices count from the end, out-of-range values are clamped.
struct SliceAxis {
    std::int64_t axis, start, step, len;
};

std::vector<SliceAxis> slice_axes(const TensorDesc& x, const Attrs& attrs) {
    const auto starts = attrs.require_ints("starts");
    const auto ends = attrs.require_ints("ends");
    std::vector<std::int64_t> axes(starts.size());
    for (std::size_t i = 0; i < axes.size(); ++i) axes[i] = static_cast<std::int64_t>(i);
    axes = attrs.get_ints("axes", axes);
    const auto steps = attrs.get_ints("steps", std::vector<std::int64_t>(starts.size(), 1));
    if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size()) {
        throw InputError("attributes 'starts', 'ends', 'axes' and 'steps' must have the same length");
    }
    std::vector<SliceAxis> out;
    std::vector<bool> seen(static_cast<std::size_t>(x.rank()), false);
    for (std::size_t i = 0; i < starts.size(); ++i) {
        const std::int64_t a = normalize_axis(axes[i], x.rank());
        if (seen[static_cast<std::size_t>(a)]) throw InputError("axis " + std::to_string(a) + " is sliced twice");
        seen[static_cast<std::size_t>(a)] = true;
        const std::int64_t dim = x.shape[static_cast<std::size_t>(a)];
        const std::int64_t step = steps[i];
        if (step == 0) throw InputError("a step of 0 on axis " + std::to_string(a));
        auto clamp = [](std::int64_t v, std::int64_t lo, std::int64_t hi) { return v < lo ? lo : v > hi ? hi : v; };
        std::int64_t s = starts[i] < 0 ? starts[i] + dim : starts[i];  // no overflow: dim >= 0
        std::int64_t e = ends[i] < 0 ? ends[i] + dim : ends[i];
        std::int64_t len = 0;
        if (step > 0) {
            s = clamp(s, 0, dim);
            e = clamp(e, 0, dim);
            if (e > s) len = (e - s - 1) / step + 1;
        } else {
            s = clamp(s, 0, dim - 1);
            e = clamp(e, -1, dim - 1);
            const std::int64_t stride = step == std::numeric_limits<std::int64_t>::min() ? std::numeric_limits<std::int64_t>::max() : -step;
            if (s > e) len = (s - e - 1) / stride + 1;
        }
        out.push_back({a, s, step, len});
    }
    return out;
}

std::vector<TensorDesc> slice_infer(OpKind, Inputs in, const Attrs& attrs) {
    TensorDesc out = in[0];
    for (const SliceAxis& s : slice_axes(in[0], attrs)) out.shape[static_cast<std::size_t>(s.axis)] = s.len;
    return {out};
}

// A strided copy: the ideal kernel reads only the selected elements and writes them.
Work slice_work(OpKind, Inputs, std::span<const TensorDesc> out, const Attrs&) {
    Work w;
    w.bytes_read = out[0].bytes();
    w.bytes_written = out[0].bytes();
    return w;
}

// pad(x) with attributes pads (ONNX order: the begins of every axis, then the ends; negative values
// crop), mode (constant, reflect, edge or wrap; default constant) and value (constant mode, default 0).
std::vector<TensorDesc> pad_infer(OpKind, Inputs in, const Attrs& attrs) {
    TensorDesc out = in[0];
    const auto plan = pad_plan(in[0], attrs);
    for (std::size_t d = 0; d < plan.size(); ++d)
        out.shape[d] = checked_add(checked_add(out.shape[d], plan[d][0], "padded size"), plan[d][1], "padded size");
    (void)attrs.get_double("value", 0.0);  // type check: a number
    return {out};
}

// A copy into a larger (or, cropping, smaller) tensor: the ideal kernel reads each kept element of x
// once and writes every output element; no arithmetic.
Work pad_work(OpKind, Inputs in, std::span<const TensorDesc> out, const Attrs& attrs) {
    const auto plan = pad_plan(in[0], attrs);
    std::int64_t kept = 1;
    for (std::size_t d = 0; d < plan.size(); ++d)
        kept =
            checked_mul(kept, in[0].shape[d] + std::min<std::int64_t>(plan[d][0], 0) + std::min<std::int64_t>(plan[d][1], 0), "pad size");
    Work w;
    w.bytes_read = checked_mul(kept, dtype_bytes(in[0].dtype), "bytes");
    w.bytes_written = out[0].bytes();
    return w;
}

// resize(x) with attributes sizes (the output shape), mode (nearest or linear; default nearest),
// coordinate_transformation_mode (half_pixel, pytorch_half_pixel, asymmetric or align_corners;
// default half_pixel) and nearest_mode (round_prefer_floor, round_prefer_ceil, floor or ceil), with
// ONNX Resize semantics.
std::vector<TensorDesc> resize_infer(OpKind k, Inputs in, const Attrs& attrs) {
    require_floating(k, in[0], "x");
    const Shape sizes = attrs.require_ints("sizes");
    if (static_cast<std::int64_t>(sizes.size()) != in[0].rank())
        throw InputError("attribute 'sizes' " + shape_str(sizes) + " must have one entry per axis of " + desc_str(in[0]));
    check_dims(sizes);
    for (std::size_t d = 0; d < sizes.size(); ++d) {
        if (in[0].shape[d] == 0 && sizes[d] != 0) throw InputError("axis " + std::to_string(d) + " of " + desc_str(in[0]) + " is empty");
    }
    const std::string mode = attrs.get_string("mode", "nearest");
    if (mode != "nearest" && mode != "linear") throw InputError("attribute 'mode' must be nearest or linear, got '" + mode + "'");
    (void)parse_resize_coord(attrs.get_string("coordinate_transformation_mode", "half_pixel"));
    (void)parse_nearest_mode(attrs.get_string("nearest_mode", "round_prefer_floor"));
    return {TensorDesc{sizes, in[0].dtype}};
}

// nearest: a gather, no arithmetic: each output element read from x (x read at most once when
// upsampling) and written. linear over r resized axes: each output element interpolates 2^r
// neighbours with 2^r - 1 lerps of 3 FLOPs (a - b, times the weight, plus b).
Work resize_work(OpKind, Inputs in, std::span<const TensorDesc> out, const Attrs& attrs) {
    const bool linear = attrs.get_string("mode", "nearest") == "linear";
    std::int64_t r = 0;
    for (std::size_t d = 0; d < out[0].shape.size(); ++d) r += out[0].shape[d] != in[0].shape[d] ? 1 : 0;
    const std::int64_t taps = linear ? std::int64_t{1} << r : 1;
    Work w;
    w.bytes_read = checked_mul(std::min(in[0].numel(), checked_mul(out[0].numel(), taps, "taps")), dtype_bytes(in[0].dtype), "bytes");
    w.bytes_written = out[0].bytes();
    if (linear) w.vector_flops = checked_mul(out[0].numel(), 3 * (taps - 1), "FLOPs");
    return w;
}

// max_pool2d / avg_pool2d(x[N, C, H, W]) with attributes kernel (kh, kw), stride (default 1, 1),
// padding (symmetric, default 0, 0), dilation (max only, default 1, 1), ceil_mode (default false),
// count_include_pad (avg only, default false); output size as ONNX MaxPool/AveragePool and torch.
std::pair<std::int64_t, std::int64_t> pair_attr(const Attrs& a, const char* name, std::int64_t fallback, std::int64_t min) {
    const auto v = a.get_ints(name, {fallback, fallback});
    if (v.size() != 2) throw InputError(std::string("attribute '") + name + "' must have 2 entries, got " + std::to_string(v.size()));
    if (v[0] < min || v[1] < min)
        throw InputError(std::string("attribute '") + name + "' must be >= " + std::to_string(min) + ", got " + shape_str(v));
    return {v[0], v[1]};
}

std::int64_t pooled(std::int64_t in, std::int64_t k, std::int64_t s, std::int64_t p, std::int64_t d, bool ceil_mode, const char* dim) {
    const std::int64_t span = checked_add(checked_mul(d, k - 1, "pooling window"), 1, "pooling window");
    const std::int64_t room = checked_add(in, checked_mul(2, p, "padding"), "padded size") - span;
    if (room < 0)
        throw InputError(std::string("pooling window ") + std::to_string(span) + " exceeds the padded " + dim + " " +
                         std::to_string(in + 2 * p));
    std::int64_t out = room / s + (ceil_mode && room % s != 0 ? 1 : 0) + 1;  // no room + s - 1: s may be huge
    if (ceil_mode && (out - 1) * s >= in + p) --out;                         // the last window must start inside the input
    return out;
}

std::vector<TensorDesc> pool2d_infer(OpKind k, Inputs in, const Attrs& attrs) {
    const TensorDesc& x = in[0];
    if (x.rank() != 4) throw InputError("x must be [N, C, H, W], got " + desc_str(x));
    require_floating(k, x, "x");
    if (!attrs.has("kernel")) throw InputError("missing attribute 'kernel' (kh, kw)");
    const auto [kh, kw] = pair_attr(attrs, "kernel", 1, 1);
    const auto [sh, sw] = pair_attr(attrs, "stride", 1, 1);
    const auto [ph, pw] = pair_attr(attrs, "padding", 0, 0);
    const auto [dh, dw] = pair_attr(attrs, "dilation", 1, 1);
    if (ph >= kh || pw >= kw)
        throw InputError("padding " + shape_str({ph, pw}) + " must be smaller than the kernel " + shape_str({kh, kw}));
    const bool ceil_mode = attrs.get_bool("ceil_mode", false);
    (void)attrs.get_bool("count_include_pad", false);
    const std::int64_t ho = pooled(x.shape[2], kh, sh, ph, dh, ceil_mode, "height");
    const std::int64_t wo = pooled(x.shape[3], kw, sw, pw, dw, ceil_mode, "width");
    return {TensorDesc{{x.shape[0], x.shape[1], ho, wo}, x.dtype}};
}

// max: kh*kw - 1 compares per output; avg: kh*kw - 1 adds and one scale per output.
Work pool2d_work(OpKind k, Inputs in, std::span<const TensorDesc> out, const Attrs& attrs) {
    const auto [kh, kw] = pair_attr(attrs, "kernel", 1, 1);
    const std::int64_t window = checked_mul(kh, kw, "pooling window");
    Work w = io_bytes(in, out);
    w.vector_flops = checked_mul(out[0].numel(), k == OpKind::max_pool2d ? window - 1 : window, "FLOPs");
    return w;
}

// max_pool2d_grad(x, dy) -> dx: recompute each window's argmax from x, scatter dy to it.
// avg_pool2d_grad(dy) -> dx of attribute input_shape: spread each dy over its window's count.
// Both take the forward op's attributes; dy must have the pooled shape of x.
std::vector<TensorDesc> pool2d_grad_infer(OpKind k, Inputs in, const Attrs& attrs) {
    const bool max = k == OpKind::max_pool2d_grad;
    if (in.size() != (max ? 2u : 1u))
        throw InputError(std::string(max ? "takes x and dy" : "takes dy only") + ", got " + std::to_string(in.size()) + " inputs");
    const TensorDesc& dy = in[max ? 1 : 0];
    TensorDesc x = max ? in[0] : TensorDesc{attrs.require_ints("input_shape"), dy.dtype};
    check_dims(x.shape);
    if (max && x.dtype != dy.dtype) throw InputError("x " + desc_str(x) + " and dy " + desc_str(dy) + " differ in dtype");
    const TensorDesc y = pool2d_infer(max ? OpKind::max_pool2d : OpKind::avg_pool2d, std::span<const TensorDesc>(&x, 1), attrs)[0];
    if (y.shape != dy.shape)
        throw InputError("dy " + desc_str(dy) + " is not the pooled shape " + shape_str(y.shape) + " of " + shape_str(x.shape));
    return {x};
}

// max: recompute the argmax (kh*kw - 1 compares per dy element) plus one add per dy element (windows
// may overlap); avg: one scale and kh*kw - 1 adds per dy element, spread over its window. Either way
// kh*kw FLOPs per dy element.
Work pool2d_grad_work(OpKind k, Inputs in, std::span<const TensorDesc> out, const Attrs& attrs) {
    const auto [kh, kw] = pair_attr(attrs, "kernel", 1, 1);
    const std::int64_t window = checked_mul(kh, kw, "pooling window");
    const TensorDesc& dy = in[k == OpKind::max_pool2d_grad ? 1 : 0];
    Work w = io_bytes(in, out);
    w.vector_flops = checked_mul(dy.numel(), window, "FLOPs");
    return w;
}

// opaque(inputs...) -> outputs described by attributes ranks (one per output), dims (all output
// dims, concatenated) and dtypes (comma-separated names); op_type names what it stands for.
std::vector<TensorDesc> opaque_infer(OpKind, Inputs, const Attrs& attrs) {
    const auto ranks = attrs.require_ints("ranks");
    const auto dims = attrs.get_ints("dims", {});
    std::vector<std::string> names;
    std::stringstream ss(attrs.get_string("dtypes", ""));
    for (std::string d; std::getline(ss, d, ',');) names.push_back(d);
    if (names.size() != ranks.size()) throw InputError("attributes 'ranks' and 'dtypes' must name the same number of outputs");
    std::vector<TensorDesc> out;
    std::size_t pos = 0;
    for (std::size_t i = 0; i < ranks.size(); ++i) {
        if (ranks[i] < 0 || static_cast<std::size_t>(ranks[i]) > dims.size() - pos)
            throw InputError("attribute 'dims' is shorter than 'ranks' says");
        const auto d = parse_dtype(names[i]);
        if (!d) throw InputError("unknown dtype '" + names[i] + "' in attribute 'dtypes'");
        TensorDesc t{Shape(dims.begin() + static_cast<std::ptrdiff_t>(pos), dims.begin() + static_cast<std::ptrdiff_t>(pos) + ranks[i]),
                     *d};
        check_dims(t.shape);
        pos += static_cast<std::size_t>(ranks[i]);
        out.push_back(std::move(t));
    }
    if (pos != dims.size()) throw InputError("attribute 'dims' is longer than 'ranks' says");
    if (out.empty()) throw InputError("an opaque op needs at least one output");
    return out;
}

// Unknown work is not zero work; it is counted as zero only because the user asked for it
// (--allow-unknown), and reports mark the node by its kind.
Work opaque_work(OpKind, Inputs, std::span<const TensorDesc>, const Attrs&) { return Work{}; }

// topk(x) -> (values, indices): the `k` (required) largest (`largest`, default true) or smallest
// elements along `axis` (default -1), sorted (`sorted`, default true); indices int64. ONNX TopK.
std::vector<TensorDesc> topk_infer(OpKind k, Inputs in, const Attrs& attrs) {
    require_floating(k, in[0], "x");
    const std::int64_t axis = normalize_axis(attrs.get_int("axis", -1), in[0].rank());
    const std::int64_t n = attrs.require_int("k"), len = in[0].shape[static_cast<std::size_t>(axis)];
    if (n < 1 || n > len)
        throw InputError("attribute 'k' must lie in [1, " + std::to_string(len) + "] (axis " + std::to_string(axis) + " of " +
                         desc_str(in[0]) + "), got " + std::to_string(n));
    (void)attrs.get_bool("largest", true);
    (void)attrs.get_bool("sorted", true);
    TensorDesc values = in[0];
    values.shape[static_cast<std::size_t>(axis)] = n;
    TensorDesc indices = values;
    indices.dtype = DType::int64;
    return {values, indices};
}

// A selection per row keeping k candidates in a heap: ceil(log2(k + 1)) compares per element
// (one when k = 1, an argmax), x read once, both outputs written once.
Work topk_work(OpKind, Inputs in, std::span<const TensorDesc> out, const Attrs& attrs) {
    Work w = io_bytes(in, out);
    const auto k = static_cast<double>(attrs.require_int("k"));
    w.vector_flops = checked_mul(in[0].numel(), static_cast<std::int64_t>(std::ceil(std::log2(k + 1))), "FLOPs");
    return w;
}

}  // namespace

const OpRule& where_rule() {
    static const OpRule r{OpFamily::elementwise, 3, 3, {}, where_infer, where_work};
    return r;
}

const OpRule& slice_rule() {
    static const OpRule r{OpFamily::movement, 1, 1, {"starts", "ends", "axes", "steps"}, slice_infer, slice_work};
    return r;
}

const OpRule& pad_rule() {
    static const OpRule r{OpFamily::movement, 1, 1, {"pads", "mode", "value"}, pad_infer, pad_work};
    return r;
}

const OpRule& resize_rule() {
    static const OpRule r{OpFamily::movement, 1,          1, {"sizes", "mode", "coordinate_transformation_mode", "nearest_mode"},
                          resize_infer,       resize_work};
    return r;
}

const OpRule& topk_rule() {
    static const OpRule r{OpFamily::reduction, 1, 1, {"k", "axis", "largest", "sorted"}, topk_infer, topk_work};
    return r;
}

const OpRule& pool2d_rule() {
    static const OpRule r{OpFamily::reduction, 1,          1, {"kernel", "stride", "padding", "dilation", "ceil_mode", "count_include_pad"},
                          pool2d_infer,        pool2d_work};
    return r;
}

const OpRule& pool2d_grad_rule() {
    static const OpRule r{OpFamily::reduction,
                          1,
                          2,
                          {"kernel", "stride", "padding", "dilation", "ceil_mode", "count_include_pad", "input_shape"},
                          pool2d_grad_infer,
                          pool2d_grad_work};
    return r;
}

const OpRule& opaque_rule() {
    static const OpRule r{OpFamily::movement, 0, OpRule::kVariadic, {"op_type", "ranks", "dims", "dtypes"}, opaque_infer, opaque_work};
    return r;
}

// Shared with the reference kernel (ops/reference.cpp): the normalised slice per axis.
std::vector<std::array<std::int64_t, 3>> slice_plan(const TensorDesc& x, const Attrs& attrs) {
    std::vector<std::array<std::int64_t, 3>> plan;
    for (std::int64_t a = 0; a < x.rank(); ++a) plan.push_back({0, 1, x.shape[static_cast<std::size_t>(a)]});
    for (const SliceAxis& s : slice_axes(x, attrs)) plan[static_cast<std::size_t>(s.axis)] = {s.start, s.step, s.len};
    return plan;
}

PadMode parse_pad_mode(const std::string& mode) {
    if (mode == "constant") return PadMode::constant;
    if (mode == "edge") return PadMode::edge;
    if (mode == "wrap") return PadMode::wrap;
    if (mode == "reflect") return PadMode::reflect;
    throw InputError("attribute 'mode' must be constant, reflect, edge or wrap, got '" + mode + "'");
}

ResizeCoord parse_resize_coord(const std::string& mode) {
    if (mode == "half_pixel") return ResizeCoord::half_pixel;
    if (mode == "pytorch_half_pixel") return ResizeCoord::pytorch_half_pixel;
    if (mode == "asymmetric") return ResizeCoord::asymmetric;
    if (mode == "align_corners") return ResizeCoord::align_corners;
    throw InputError(
        "attribute 'coordinate_transformation_mode' must be half_pixel, pytorch_half_pixel, asymmetric or align_corners, got '" + mode +
        "'");
}

NearestMode parse_nearest_mode(const std::string& mode) {
    if (mode == "round_prefer_floor") return NearestMode::round_prefer_floor;
    if (mode == "round_prefer_ceil") return NearestMode::round_prefer_ceil;
    if (mode == "floor") return NearestMode::floor;
    if (mode == "ceil") return NearestMode::ceil;
    throw InputError("attribute 'nearest_mode' must be round_prefer_floor, round_prefer_ceil, floor or ceil, got '" + mode + "'");
}

std::vector<std::array<std::int64_t, 2>> pad_plan(const TensorDesc& x, const Attrs& attrs) {
    const auto pads = attrs.require_ints("pads");
    const auto rank = static_cast<std::size_t>(x.rank());
    if (pads.size() != 2 * rank)
        throw InputError("attribute 'pads' must have 2 entries per axis of " + desc_str(x) + " (" + std::to_string(2 * rank) + "), got " +
                         std::to_string(pads.size()));
    const PadMode pm = parse_pad_mode(attrs.get_string("mode", "constant"));
    std::vector<std::array<std::int64_t, 2>> plan;
    for (std::size_t d = 0; d < rank; ++d) {
        const std::int64_t dim = x.shape[d], b = pads[d], e = pads[d + rank];
        if (b < -dim || e < -dim || (b < 0 && e < 0 && b + e < -dim))  // no overflow: both >= -dim
            throw InputError("pads " + shape_str(pads) + " crop more than axis " + std::to_string(d) + "'s " + std::to_string(dim));
        const std::int64_t grow = std::max(b, e);
        // reflect mirrors without repeating the edge: at most dim - 1 on each side; wrap at most dim
        if (grow > 0 && pm != PadMode::constant &&
            (dim == 0 || (pm == PadMode::reflect && grow > dim - 1) || (pm == PadMode::wrap && grow > dim)))
            throw InputError("pads " + shape_str(pads) + " in mode " + attrs.get_string("mode", "constant") + " exceed what axis " +
                             std::to_string(d) + " of size " + std::to_string(dim) + " allows");
        plan.push_back({b, e});
    }
    return plan;
}

}  // namespace roofline
