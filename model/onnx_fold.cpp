#include "model/onnx_fold.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <set>

#include "ops/checked.hpp"
#include "ops/error.hpp"
#include "ops/tensor.hpp"

namespace roofline {

namespace onnx_type {
bool is_float(int t) { return t == kFloat || t == kDouble || t == kFloat16 || t == kBfloat16; }
std::string name(int t) {
    switch (t) {
        case kFloat: return "FLOAT";
        case kUint8: return "UINT8";
        case kInt8: return "INT8";
        case kUint16: return "UINT16";
        case kInt16: return "INT16";
        case kInt32: return "INT32";
        case kInt64: return "INT64";
        case kString: return "STRING";
        case kBool: return "BOOL";
        case kFloat16: return "FLOAT16";
        case kDouble: return "DOUBLE";
        case kUint32: return "UINT32";
        case kUint64: return "UINT64";
        case kBfloat16: return "BFLOAT16";
        default: return "type " + std::to_string(t);
    }
}
}  // namespace onnx_type

std::int64_t onnx_numel(const std::vector<std::int64_t>& dims) {
    std::int64_t n = 1;
    for (std::int64_t d : dims) {
        if (d < 0) throw InputError("negative dimension " + std::to_string(d));
        n = checked_mul(n, d, "element count");
    }
    return n;
}

double onnx_value(const OnnxTensor& t, std::size_t k) {
    return onnx_type::is_float(t.elem_type) ? t.f.at(k) : static_cast<double>(t.i.at(k));
}

std::int64_t onnx_ivalue(const OnnxTensor& t, std::size_t k) {
    if (!onnx_type::is_float(t.elem_type)) return t.i.at(k);
    const double v = t.f.at(k);
    // 2^63 is exactly representable; anything at or beyond it (or NaN) does not fit.
    if (!(v > -9223372036854775808.0 && v < 9223372036854775808.0))
        throw InputError("value " + std::to_string(v) + " does not fit in int64");
    return static_cast<std::int64_t>(v);
}

namespace {

using Tensors = std::vector<OnnxTensor>;
using Dims = std::vector<std::int64_t>;

const std::int64_t kMax = OnnxTensor::kMaxValueElements;

bool fits(const Dims& d) {
    try {
        return onnx_numel(d) <= kMax;
    } catch (const InputError&) {
        return false;
    }
}

OnnxTensor make(int type, Dims dims) {
    OnnxTensor t;
    t.elem_type = type;
    t.dims = std::move(dims);
    t.has_values = true;
    const auto n = static_cast<std::size_t>(onnx_numel(t.dims));
    if (onnx_type::is_float(type))
        t.f.assign(n, 0.0);
    else
        t.i.assign(n, 0);
    return t;
}

std::size_t count(const OnnxTensor& t) { return onnx_type::is_float(t.elem_type) ? t.f.size() : t.i.size(); }

void set(OnnxTensor& t, std::size_t k, double v) {
    if (onnx_type::is_float(t.elem_type)) {
        t.f[k] = v;
    } else {
        OnnxTensor tmp;
        tmp.elem_type = onnx_type::kDouble;
        tmp.f = {v};
        t.i[k] = onnx_ivalue(tmp, 0);
    }
}

std::vector<std::int64_t> ints_of(const OnnxTensor& t) {
    std::vector<std::int64_t> v;
    for (std::size_t k = 0; k < count(t); ++k) v.push_back(onnx_ivalue(t, k));
    return v;
}

const OnnxAttr* find_attr(const OnnxNode& n, const std::string& name) {
    auto it = n.attrs.find(name);
    return it == n.attrs.end() ? nullptr : &it->second;
}
std::int64_t attr_int(const OnnxNode& n, const std::string& name, std::int64_t fallback) {
    const OnnxAttr* a = find_attr(n, name);
    return a && a->type == OnnxAttr::Type::int_ ? a->i : fallback;
}

Dims strides(const Dims& d) {
    Dims s(d.size(), 1);
    for (std::size_t i = d.size(); i-- > 1;) s[i - 1] = s[i] * d[i];
    return s;
}

// Offset into a tensor of dims `src` broadcast (right-aligned) to coordinates c of `out`.
std::size_t bcast_index(const Dims& src, const Dims& c) {
    const std::size_t lead = c.size() - src.size();
    std::int64_t off = 0;
    for (std::size_t i = 0; i < src.size(); ++i) off = off * src[i] + (src[i] == 1 ? 0 : c[lead + i]);
    return static_cast<std::size_t>(off);
}

Dims unravel(std::int64_t idx, const Dims& s) {
    Dims c(s.size(), 0);
    for (std::size_t i = s.size(); i-- > 0;) {
        if (s[i] > 0) {
            c[i] = idx % s[i];
            idx /= s[i];
        }
    }
    return c;
}

std::int64_t int_op(const std::string& op, std::int64_t a, std::int64_t b) {
    std::int64_t r = 0;
    if (op == "Add") {
        if (__builtin_add_overflow(a, b, &r)) throw InputError("int64 overflow in Add");
        return r;
    }
    if (op == "Sub") {
        if (__builtin_sub_overflow(a, b, &r)) throw InputError("int64 overflow in Sub");
        return r;
    }
    if (op == "Mul") {
        if (__builtin_mul_overflow(a, b, &r)) throw InputError("int64 overflow in Mul");
        return r;
    }
    if (op == "Div") {
        if (b == 0) throw InputError("integer division by zero");
        if (a == std::numeric_limits<std::int64_t>::min() && b == -1) throw InputError("int64 overflow in Div");
        return a / b;
    }
    if (op == "Mod") {
        if (b == 0) throw InputError("integer modulo by zero");
        if (b == -1) return 0;
        const std::int64_t m = a % b;
        return (m != 0 && ((m < 0) != (b < 0))) ? m + b : m;  // fmod = 0: the sign of the divisor
    }
    if (op == "Min") return std::min(a, b);
    if (op == "Max") return std::max(a, b);
    if (op == "Equal") return a == b;
    if (op == "Less") return a < b;
    if (op == "LessOrEqual") return a <= b;
    if (op == "Greater") return a > b;
    if (op == "GreaterOrEqual") return a >= b;
    if (op == "And") return (a != 0) && (b != 0);
    if (op == "Or") return (a != 0) || (b != 0);
    throw InputError("internal: not a binary op " + op);
}

double float_op(const std::string& op, double a, double b) {
    if (op == "Add") return a + b;
    if (op == "Sub") return a - b;
    if (op == "Mul") return a * b;
    if (op == "Div") return a / b;
    if (op == "Pow") return std::pow(a, b);
    if (op == "Mod") return std::fmod(a, b);
    if (op == "Min") return std::min(a, b);
    if (op == "Max") return std::max(a, b);
    if (op == "Equal") return a == b;
    if (op == "Less") return a < b;
    if (op == "LessOrEqual") return a <= b;
    if (op == "Greater") return a > b;
    if (op == "GreaterOrEqual") return a >= b;
    if (op == "And") return (a != 0) && (b != 0);
    if (op == "Or") return (a != 0) || (b != 0);
    throw InputError("internal: not a binary op " + op);
}

bool is_compare(const std::string& op) {
    return op == "Equal" || op == "Less" || op == "LessOrEqual" || op == "Greater" || op == "GreaterOrEqual" || op == "And" || op == "Or";
}

std::optional<Tensors> binary(const std::string& op, const OnnxTensor& a, const OnnxTensor& b) {
    const Dims out_dims = broadcast_shapes(a.dims, b.dims);
    if (!fits(out_dims)) return std::nullopt;
    const bool fl = onnx_type::is_float(a.elem_type) || onnx_type::is_float(b.elem_type);
    OnnxTensor y = make(is_compare(op) ? onnx_type::kBool : a.elem_type, out_dims);
    const auto n = onnx_numel(out_dims);
    for (std::int64_t k = 0; k < n; ++k) {
        const Dims c = unravel(k, out_dims);
        const std::size_t ia = bcast_index(a.dims, c), ib = bcast_index(b.dims, c);
        if (fl)
            set(y, static_cast<std::size_t>(k), float_op(op, onnx_value(a, ia), onnx_value(b, ib)));
        else
            y.i[static_cast<std::size_t>(k)] = int_op(op, a.i.at(ia), b.i.at(ib));
    }
    return Tensors{y};
}

std::optional<Tensors> unary(const std::string& op, const OnnxTensor& x) {
    OnnxTensor y = x;
    if (op == "Not") {
        y.elem_type = onnx_type::kBool;
        for (auto& v : y.i) v = v == 0;
        return Tensors{y};
    }
    for (std::size_t k = 0; k < count(x); ++k) {
        const double v = onnx_value(x, k);
        if (op == "Neg") {
            if (onnx_type::is_float(x.elem_type))
                y.f[k] = -v;
            else {
                if (x.i[k] == std::numeric_limits<std::int64_t>::min()) throw InputError("int64 overflow in Neg");
                y.i[k] = -x.i[k];
            }
        } else if (op == "Abs") {
            if (onnx_type::is_float(x.elem_type))
                y.f[k] = std::fabs(v);
            else {
                if (x.i[k] == std::numeric_limits<std::int64_t>::min()) throw InputError("int64 overflow in Abs");
                y.i[k] = x.i[k] < 0 ? -x.i[k] : x.i[k];
            }
        } else if (onnx_type::is_float(x.elem_type)) {
            if (op == "Sqrt")
                y.f[k] = std::sqrt(v);
            else if (op == "Floor")
                y.f[k] = std::floor(v);
            else if (op == "Ceil")
                y.f[k] = std::ceil(v);
            else if (op == "Reciprocal")
                y.f[k] = 1.0 / v;
            else
                return std::nullopt;
        } else {
            return std::nullopt;  // Sqrt, Floor, ... of integers are not ONNX
        }
    }
    return Tensors{y};
}

OnnxTensor cast(const OnnxTensor& x, int to) {
    OnnxTensor y = make(to, x.dims);
    for (std::size_t k = 0; k < count(x); ++k) {
        if (to == onnx_type::kBool)
            y.i[k] = onnx_value(x, k) != 0;
        else if (onnx_type::is_float(to))
            y.f[k] = onnx_value(x, k);
        else
            y.i[k] = onnx_ivalue(x, k);
    }
    return y;
}

std::int64_t axis_of(std::int64_t a, std::size_t rank) { return normalize_axis(a, static_cast<std::int64_t>(rank)); }

// y = x gathered at `index` along `axis` (index lists per output coordinate of that axis).
OnnxTensor take(const OnnxTensor& x, std::size_t axis, const std::vector<std::int64_t>& index, Dims out_dims) {
    OnnxTensor y = make(x.elem_type, std::move(out_dims));
    std::int64_t outer = 1, inner = 1;
    for (std::size_t d = 0; d < axis; ++d) outer *= x.dims[d];
    for (std::size_t d = axis + 1; d < x.dims.size(); ++d) inner *= x.dims[d];
    const std::int64_t n = x.dims[axis];
    std::size_t k = 0;
    for (std::int64_t o = 0; o < outer; ++o)
        for (std::int64_t j : index)
            for (std::int64_t i = 0; i < inner; ++i, ++k) {
                const auto src = static_cast<std::size_t>((o * n + j) * inner + i);
                if (onnx_type::is_float(x.elem_type))
                    y.f[k] = x.f.at(src);
                else
                    y.i[k] = x.i.at(src);
            }
    return y;
}

std::optional<Tensors> gather(const OnnxNode& n, const OnnxTensor& x, const OnnxTensor& idx) {
    if (x.dims.empty()) throw InputError("Gather of a scalar");
    const auto axis = static_cast<std::size_t>(axis_of(attr_int(n, "axis", 0), x.dims.size()));
    std::vector<std::int64_t> index;
    for (std::int64_t v : ints_of(idx)) {
        const std::int64_t dim = x.dims[axis];
        if (v < -dim || v >= dim)
            throw InputError("Gather index " + std::to_string(v) + " out of range for dimension " + std::to_string(dim));
        index.push_back(v < 0 ? v + dim : v);
    }
    Dims out(x.dims.begin(), x.dims.begin() + static_cast<std::ptrdiff_t>(axis));
    out.insert(out.end(), idx.dims.begin(), idx.dims.end());
    out.insert(out.end(), x.dims.begin() + static_cast<std::ptrdiff_t>(axis) + 1, x.dims.end());
    if (!fits(out)) return std::nullopt;
    Dims taken = x.dims;
    taken[axis] = static_cast<std::int64_t>(index.size());
    OnnxTensor y = take(x, axis, index, taken);
    y.dims = out;  // the index's own shape replaces the gathered axis
    return Tensors{y};
}

std::optional<Tensors> concat(const OnnxNode& n, const std::vector<const OnnxTensor*>& in) {
    if (in.empty()) throw InputError("Concat of no inputs");
    const std::size_t rank = in[0]->dims.size();
    if (rank == 0) throw InputError("Concat of scalars");
    const auto axis = static_cast<std::size_t>(axis_of(attr_int(n, "axis", 0), rank));
    Dims out = in[0]->dims;
    out[axis] = 0;
    for (const OnnxTensor* t : in) {
        if (t->dims.size() != rank) throw InputError("Concat inputs of different ranks");
        for (std::size_t d = 0; d < rank; ++d) {
            if (d != axis && t->dims[d] != out[d]) throw InputError("Concat inputs differ in dimension " + std::to_string(d));
        }
        out[axis] = checked_add(out[axis], t->dims[axis], "Concat size");
    }
    if (!fits(out)) return std::nullopt;
    OnnxTensor y = make(in[0]->elem_type, out);
    std::int64_t outer = 1;
    for (std::size_t d = 0; d < axis; ++d) outer *= out[d];
    std::size_t k = 0;
    for (std::int64_t o = 0; o < outer; ++o)
        for (const OnnxTensor* t : in) {
            const std::int64_t chunk = onnx_numel(t->dims) / std::max<std::int64_t>(outer, 1);
            for (std::int64_t j = 0; j < chunk; ++j, ++k) set(y, k, onnx_value(*t, static_cast<std::size_t>(o * chunk + j)));
        }
    return Tensors{y};
}

// ScatterND(data, indices, updates): indices [..., k] address slices data[i0, .., ik-1] of the
// shape data.dims[k:]; updates [...indices.dims[:-1], ...data.dims[k:]] replace (or, with
// reduction, combine with) them in order. Masks built from shapes (swin_t's shifted windows).
std::optional<Tensors> scatter_nd(const OnnxNode& n, const OnnxTensor& data, const OnnxTensor& idx, const OnnxTensor& upd) {
    if (idx.dims.empty()) throw InputError("ScatterND indices must have rank >= 1");
    const auto k = static_cast<std::size_t>(idx.dims.back());
    if (k > data.dims.size()) throw InputError("ScatterND index depth " + std::to_string(k) + " exceeds the data's rank");
    Dims want(idx.dims.begin(), idx.dims.end() - 1);
    want.insert(want.end(), data.dims.begin() + static_cast<std::ptrdiff_t>(k), data.dims.end());
    if (upd.dims != want) throw InputError("ScatterND updates " + shape_str(upd.dims) + " must be " + shape_str(want));
    const OnnxAttr* r = find_attr(n, "reduction");
    const std::string reduction = r ? r->s : "none";
    if (reduction != "none" && reduction != "add" && reduction != "mul" && reduction != "max" && reduction != "min")
        throw InputError("ScatterND reduction '" + reduction + "'");
    std::int64_t slice = 1;
    for (std::size_t d = k; d < data.dims.size(); ++d) slice *= data.dims[d];
    const Dims st = strides(data.dims);
    OnnxTensor y = data;
    const std::vector<std::int64_t> index = ints_of(idx);
    const auto count_idx = static_cast<std::size_t>(onnx_numel(Dims(idx.dims.begin(), idx.dims.end() - 1)));
    for (std::size_t u = 0; u < count_idx; ++u) {
        std::int64_t off = 0;
        for (std::size_t d = 0; d < k; ++d) {
            std::int64_t v = index[u * k + d];
            const std::int64_t dim = data.dims[d];
            if (v < -dim || v >= dim)
                throw InputError("ScatterND index " + std::to_string(v) + " out of range for dimension " + std::to_string(dim));
            off += (v < 0 ? v + dim : v) * st[d];
        }
        for (std::int64_t j = 0; j < slice; ++j) {
            const auto at = static_cast<std::size_t>(off + j);
            const double a = onnx_value(y, at), b = onnx_value(upd, u * static_cast<std::size_t>(slice) + static_cast<std::size_t>(j));
            const double v = reduction == "add"   ? a + b
                             : reduction == "mul" ? a * b
                             : reduction == "max" ? std::max(a, b)
                             : reduction == "min" ? std::min(a, b)
                                                  : b;
            set(y, at, v);
        }
    }
    return Tensors{y};
}

std::optional<Tensors> range(const OnnxTensor& start, const OnnxTensor& limit, const OnnxTensor& delta) {
    if (count(start) != 1 || count(limit) != 1 || count(delta) != 1) throw InputError("Range takes scalars");
    const double s = onnx_value(start, 0), l = onnx_value(limit, 0), d = onnx_value(delta, 0);
    if (d == 0 || !std::isfinite(s) || !std::isfinite(l) || !std::isfinite(d))
        throw InputError("Range with a zero or non-finite delta or bound");
    const double len = std::max(0.0, std::ceil((l - s) / d));
    if (len > static_cast<double>(kMax)) return std::nullopt;
    OnnxTensor y = make(start.elem_type, {static_cast<std::int64_t>(len)});
    for (std::size_t k = 0; k < count(y); ++k) set(y, k, s + static_cast<double>(k) * d);
    return Tensors{y};
}

std::optional<Tensors> slice(const OnnxNode& n, const std::vector<const OnnxTensor*>& in, std::int64_t opset) {
    const OnnxTensor& x = *in[0];
    std::vector<std::int64_t> starts, ends, axes, steps;
    if (opset < 10) {
        auto get = [&](const char* name) {
            const OnnxAttr* a = find_attr(n, name);
            return a ? a->ints : std::vector<std::int64_t>{};
        };
        starts = get("starts"), ends = get("ends"), axes = get("axes");
    } else {
        if (in.size() < 3 || !in[1] || !in[2]) throw InputError("Slice needs starts and ends");
        starts = ints_of(*in[1]), ends = ints_of(*in[2]);
        if (in.size() > 3 && in[3]) axes = ints_of(*in[3]);
        if (in.size() > 4 && in[4]) steps = ints_of(*in[4]);
    }
    if (axes.empty())
        for (std::size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<std::int64_t>(i));
    if (steps.empty()) steps.assign(starts.size(), 1);
    if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
        throw InputError("Slice: starts, ends, axes and steps differ in length");
    Dims out = x.dims;
    std::vector<std::vector<std::int64_t>> index(x.dims.size());
    for (std::size_t d = 0; d < x.dims.size(); ++d)
        for (std::int64_t j = 0; j < x.dims[d]; ++j) index[d].push_back(j);
    std::set<std::int64_t> seen;
    for (std::size_t i = 0; i < starts.size(); ++i) {
        const auto a = static_cast<std::size_t>(axis_of(axes[i], x.dims.size()));
        if (!seen.insert(static_cast<std::int64_t>(a)).second) throw InputError("Slice: an axis is repeated");
        const std::int64_t dim = x.dims[a], step = steps[i];
        if (step == 0) throw InputError("Slice: a step of 0");
        std::int64_t s = starts[i] < 0 ? starts[i] + dim : starts[i];
        std::int64_t e = ends[i] < 0 ? ends[i] + dim : ends[i];
        index[a].clear();
        if (step > 0) {
            s = std::clamp<std::int64_t>(s, 0, dim), e = std::clamp<std::int64_t>(e, 0, dim);
            for (std::int64_t j = s; j < e; j += step) {
                index[a].push_back(j);
                if (step > e - j) break;  // no overflow on j += step
            }
        } else {
            s = std::clamp<std::int64_t>(s, 0, dim - 1), e = std::clamp<std::int64_t>(e, -1, dim - 1);
            for (std::int64_t j = s; j > e; j += step) {
                index[a].push_back(j);
                if (-(step + 1) >= j - e - 1) break;
            }
        }
        out[a] = static_cast<std::int64_t>(index[a].size());
    }
    if (!fits(out)) return std::nullopt;
    OnnxTensor y = x;
    for (std::size_t d = 0; d < x.dims.size(); ++d) {
        Dims to = y.dims;
        to[d] = out[d];
        y = take(y, d, index[d], to);
    }
    return Tensors{y};
}

Dims reshape_dims(const OnnxNode& n, const Dims& in, const std::vector<std::int64_t>& shape) {
    const bool allowzero = attr_int(n, "allowzero", 0) != 0;
    Dims out;
    std::int64_t infer_at = -1, known = 1;
    for (std::size_t i = 0; i < shape.size(); ++i) {
        std::int64_t d = shape[i];
        if (d == 0 && !allowzero) {
            if (i >= in.size()) throw InputError("Reshape: a 0 at position " + std::to_string(i) + " beyond the input's rank");
            d = in[i];
        }
        if (d == -1) {
            if (infer_at >= 0) throw InputError("Reshape: more than one -1");
            infer_at = static_cast<std::int64_t>(i);
            out.push_back(1);
            continue;
        }
        if (d < 0) throw InputError("Reshape: negative dimension " + std::to_string(d));
        known = checked_mul(known, d, "Reshape size");
        out.push_back(d);
    }
    const std::int64_t total = onnx_numel(in);
    if (infer_at >= 0) {
        if (known == 0 || total % known != 0) throw InputError("Reshape: cannot infer -1 for " + std::to_string(total) + " elements");
        out[static_cast<std::size_t>(infer_at)] = total / known;
    } else if (known != total) {
        throw InputError("Reshape: " + std::to_string(total) + " elements do not fit shape " + shape_str(out));
    }
    return out;
}

}  // namespace

std::vector<std::int64_t> onnx_view_dims(const OnnxNode& n, const Dims& x, const std::vector<const OnnxTensor*>& in, std::int64_t opset) {
    const std::string& op = n.op_type;
    auto arg = [&]() -> const OnnxTensor& {
        if (in.size() < 2 || !in[1]) throw InputError(op + ": its second input must be a known constant");
        return *in[1];
    };
    if (op == "Reshape") return reshape_dims(n, x, ints_of(arg()));
    if (op == "Flatten") {
        const auto axis = static_cast<std::size_t>(normalize_axis(attr_int(n, "axis", 1), static_cast<std::int64_t>(x.size()) + 1));
        std::int64_t a = 1, b = 1;
        for (std::size_t d = 0; d < x.size(); ++d) (d < axis ? a : b) = checked_mul(d < axis ? a : b, x[d], "Flatten size");
        return {a, b};
    }
    std::vector<std::int64_t> axes;
    if (opset >= 13) {
        if (in.size() > 1 && in[1]) axes = ints_of(*in[1]);
    } else if (const OnnxAttr* a = find_attr(n, "axes")) {
        axes = a->ints;
    }
    Dims out;
    if (op == "Unsqueeze") {
        const std::size_t rank = x.size() + axes.size();
        std::vector<bool> at(rank, false);
        for (auto a : axes) {
            const auto k = static_cast<std::size_t>(axis_of(a, rank));
            if (at[k]) throw InputError("Unsqueeze: an axis is repeated");
            at[k] = true;
        }
        std::size_t src = 0;
        for (std::size_t k = 0; k < rank; ++k) out.push_back(at[k] ? 1 : x[src++]);
        return out;
    }
    if (op != "Squeeze") throw InputError("internal: not a view op " + op);
    std::vector<bool> drop(x.size(), false);
    for (auto a : axes) drop[static_cast<std::size_t>(axis_of(a, x.size()))] = true;
    for (std::size_t k = 0; k < x.size(); ++k) {
        if (axes.empty() ? x[k] == 1 : drop[k]) {
            if (x[k] != 1) throw InputError("Squeeze of a dimension of size " + std::to_string(x[k]));
            continue;
        }
        out.push_back(x[k]);
    }
    return out;
}

bool onnx_foldable(const std::string& op) {
    static const std::set<std::string> ops = {"Identity",
                                              "Cast",
                                              "Unsqueeze",
                                              "Squeeze",
                                              "Reshape",
                                              "Flatten",
                                              "Concat",
                                              "Gather",
                                              "Slice",
                                              "Expand",
                                              "Range",
                                              "ConstantOfShape",
                                              "Equal",
                                              "Less",
                                              "LessOrEqual",
                                              "Greater",
                                              "GreaterOrEqual",
                                              "Not",
                                              "And",
                                              "Or",
                                              "Where",
                                              "Add",
                                              "Sub",
                                              "Mul",
                                              "Div",
                                              "Mod",
                                              "Pow",
                                              "Min",
                                              "Max",
                                              "Neg",
                                              "Abs",
                                              "Sqrt",
                                              "Floor",
                                              "Ceil",
                                              "Reciprocal",
                                              "Shape",
                                              "Size",
                                              "Constant",
                                              "ReduceProd",
                                              "Transpose",
                                              "ScatterND"};
    return ops.count(op) != 0;
}

std::optional<Tensors> fold_onnx_node(const OnnxNode& n, const std::vector<const OnnxTensor*>& in, std::int64_t opset) {
    const std::string& op = n.op_type;
    auto need = [&](std::size_t k) -> const OnnxTensor& {
        if (k >= in.size() || !in[k]) throw InputError(op + " needs input " + std::to_string(k));
        return *in[k];
    };
    if (op == "Identity") return Tensors{need(0)};
    if (op == "Cast") return Tensors{cast(need(0), static_cast<int>(attr_int(n, "to", onnx_type::kFloat)))};
    if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Mod" || op == "Pow" || is_compare(op))
        return binary(op, need(0), need(1));
    if (op == "Min" || op == "Max") {
        if (in.size() == 1) return Tensors{need(0)};
        if (in.size() != 2) return std::nullopt;
        return binary(op, need(0), need(1));
    }
    if (op == "Not" || op == "Neg" || op == "Abs" || op == "Sqrt" || op == "Floor" || op == "Ceil" || op == "Reciprocal")
        return unary(op, need(0));
    if (op == "Unsqueeze" || op == "Squeeze" || op == "Reshape" || op == "Flatten") {
        OnnxTensor y = need(0);
        y.dims = onnx_view_dims(n, y.dims, in, opset);
        return Tensors{y};
    }
    if (op == "Concat") {
        std::vector<const OnnxTensor*> parts;
        for (std::size_t k = 0; k < in.size(); ++k) parts.push_back(&need(k));
        return concat(n, parts);
    }
    if (op == "Gather") return gather(n, need(0), need(1));
    if (op == "Slice") {
        (void)need(0);
        return slice(n, in, opset);
    }
    if (op == "Expand") {
        const OnnxTensor& x = need(0);
        const Dims out = broadcast_shapes(x.dims, ints_of(need(1)));
        if (!fits(out)) return std::nullopt;
        OnnxTensor y = make(x.elem_type, out);
        for (std::int64_t k = 0; k < onnx_numel(out); ++k)
            set(y, static_cast<std::size_t>(k), onnx_value(x, bcast_index(x.dims, unravel(k, out))));
        return Tensors{y};
    }
    if (op == "Where") {
        const OnnxTensor& c = need(0);
        const OnnxTensor& a = need(1);
        const OnnxTensor& b = need(2);
        const Dims out = broadcast_shapes(broadcast_shapes(c.dims, a.dims), b.dims);
        if (!fits(out)) return std::nullopt;
        OnnxTensor y = make(a.elem_type, out);
        for (std::int64_t k = 0; k < onnx_numel(out); ++k) {
            const Dims co = unravel(k, out);
            const bool pick_a = onnx_value(c, bcast_index(c.dims, co)) != 0;
            set(y, static_cast<std::size_t>(k), pick_a ? onnx_value(a, bcast_index(a.dims, co)) : onnx_value(b, bcast_index(b.dims, co)));
        }
        return Tensors{y};
    }
    if (op == "Range") return range(need(0), need(1), need(2));
    if (op == "ScatterND") return scatter_nd(n, need(0), need(1), need(2));
    if (op == "ConstantOfShape") {
        const Dims out = ints_of(need(0));
        check_dims(out);
        if (!fits(out)) return std::nullopt;
        const OnnxAttr* v = find_attr(n, "value");
        const OnnxTensor* value = v && v->t && v->t->has_values ? v->t.get() : nullptr;
        OnnxTensor y = make(value ? value->elem_type : onnx_type::kFloat, out);
        const double fill = value && count(*value) > 0 ? onnx_value(*value, 0) : 0.0;
        for (std::size_t k = 0; k < count(y); ++k) set(y, k, fill);
        return Tensors{y};
    }
    if (op == "ReduceProd") {
        const OnnxTensor& x = need(0);
        const OnnxAttr* axes = find_attr(n, "axes");
        if ((axes && !axes->ints.empty()) || in.size() > 1 || attr_int(n, "keepdims", 1) != 0 || onnx_type::is_float(x.elem_type))
            return std::nullopt;
        std::int64_t p = 1;
        for (std::int64_t v : x.i) p = checked_mul(p, v, "ReduceProd");
        OnnxTensor y = make(x.elem_type, {});
        y.i[0] = p;
        return Tensors{y};
    }
    if (op == "Transpose") {
        const OnnxTensor& x = need(0);
        std::vector<std::int64_t> perm;
        if (const OnnxAttr* a = find_attr(n, "perm")) perm = a->ints;
        if (perm.empty())
            for (std::size_t d = x.dims.size(); d-- > 0;) perm.push_back(static_cast<std::int64_t>(d));
        if (perm.size() != x.dims.size()) throw InputError("Transpose: perm does not match the rank");
        Dims out;
        std::vector<bool> seen(perm.size(), false);
        for (auto p : perm) {
            const auto a = static_cast<std::size_t>(axis_of(p, x.dims.size()));
            if (seen[a]) throw InputError("Transpose: perm is not a permutation");
            seen[a] = true;
            out.push_back(x.dims[a]);
        }
        OnnxTensor y = make(x.elem_type, out);
        const Dims st = strides(x.dims);
        for (std::int64_t k = 0; k < onnx_numel(out); ++k) {
            const Dims c = unravel(k, out);
            std::int64_t off = 0;
            for (std::size_t d = 0; d < c.size(); ++d) off += c[d] * st[static_cast<std::size_t>(axis_of(perm[d], x.dims.size()))];
            set(y, static_cast<std::size_t>(k), onnx_value(x, static_cast<std::size_t>(off)));
        }
        return Tensors{y};
    }
    return std::nullopt;
}

}  // namespace roofline
