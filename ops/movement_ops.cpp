// Data movement: embedding gather, transpose/permute, reshape, concat, split.
// transpose, permute and split are views (zero work) unless attribute "copy" asks for a
// materialised result; reshape of a contiguous tensor is always a view.
#include <algorithm>
#include <numeric>

#include "ops/checked.hpp"
#include "ops/op_rule.hpp"

namespace roofline {
namespace {

Work view_or_copy(Inputs in, std::span<const TensorDesc> out, const Attrs& attrs) {
    return attrs.get_bool("copy", false) ? io_bytes(in, out) : Work{};
}

// embedding(table[V, D], indices[...] int) -> [..., D]. The ideal kernel reads the indices and
// only the gathered rows of the table.
std::vector<TensorDesc> embedding_infer(OpKind k, Inputs in, const Attrs&) {
    const TensorDesc& table = in[0];
    const TensorDesc& idx = in[1];
    if (table.rank() != 2) throw InputError("table must be [num_embeddings, dim], got " + desc_str(table));
    require_floating(k, table, "table");
    if (!is_index(idx.dtype)) throw InputError("indices must be int32 or int64, got " + desc_str(idx));
    Shape out = idx.shape;
    out.push_back(table.shape[1]);
    return {TensorDesc{out, table.dtype}};
}

Work embedding_work(OpKind, Inputs in, std::span<const TensorDesc> out, const Attrs&) {
    Work w;
    w.bytes_read = checked_add(in[1].bytes(), out[0].bytes(), "bytes read");
    w.bytes_written = out[0].bytes();
    return w;
}

std::vector<TensorDesc> transpose_infer(OpKind, Inputs in, const Attrs& attrs) {
    const TensorDesc& x = in[0];
    const auto d0 = normalize_axis(attrs.get_int("dim0", -2), x.rank());
    const auto d1 = normalize_axis(attrs.get_int("dim1", -1), x.rank());
    TensorDesc out = x;
    std::swap(out.shape[static_cast<std::size_t>(d0)], out.shape[static_cast<std::size_t>(d1)]);
    return {out};
}

std::vector<TensorDesc> permute_infer(OpKind, Inputs in, const Attrs& attrs) {
    const TensorDesc& x = in[0];
    const auto perm = attrs.require_ints("perm");
    if (static_cast<std::int64_t>(perm.size()) != x.rank()) {
        throw InputError("attribute 'perm' has " + std::to_string(perm.size()) + " entries for rank " + std::to_string(x.rank()));
    }
    std::vector<bool> seen(perm.size(), false);
    TensorDesc out = x;
    for (std::size_t i = 0; i < perm.size(); ++i) {
        const auto a = static_cast<std::size_t>(normalize_axis(perm[i], x.rank()));
        if (seen[a]) throw InputError("attribute 'perm' is not a permutation: " + shape_str(perm));
        seen[a] = true;
        out.shape[i] = x.shape[a];
    }
    return {out};
}

std::vector<TensorDesc> reshape_infer(OpKind, Inputs in, const Attrs& attrs) {
    const TensorDesc& x = in[0];
    Shape shape = attrs.require_ints("shape");
    std::int64_t known = 1;
    int inferred = -1;
    for (std::size_t i = 0; i < shape.size(); ++i) {
        if (shape[i] == -1) {
            if (inferred >= 0) throw InputError("attribute 'shape' has more than one -1");
            inferred = static_cast<int>(i);
        } else if (shape[i] < 0) {
            throw InputError("negative dimension " + std::to_string(shape[i]) + " in attribute 'shape'");
        } else {
            known = checked_mul(known, shape[i], "element count");
        }
    }
    const std::int64_t n = x.numel();
    if (inferred >= 0) {
        if (known == 0 || n % known != 0) {
            throw InputError("cannot reshape " + desc_str(x) + " to " + shape_str(shape));
        }
        shape[static_cast<std::size_t>(inferred)] = n / known;
    } else if (known != n) {
        throw InputError("cannot reshape " + desc_str(x) + " (" + std::to_string(n) + " elements) to " + shape_str(shape) + " (" +
                         std::to_string(known) + " elements)");
    }
    return {TensorDesc{shape, x.dtype}};
}

std::vector<TensorDesc> concat_infer(OpKind k, Inputs in, const Attrs& attrs) {
    const DType dt = common_dtype(k, in);
    const auto axis = static_cast<std::size_t>(normalize_axis(attrs.get_int("axis", 0), in[0].rank()));
    Shape out = in[0].shape;
    for (std::size_t i = 1; i < in.size(); ++i) {
        const Shape& s = in[i].shape;
        bool ok = s.size() == out.size();
        for (std::size_t d = 0; ok && d < s.size(); ++d) ok = d == axis || s[d] == out[d];
        if (!ok) {
            throw InputError("input " + std::to_string(i) + " " + desc_str(in[i]) + " does not match " + desc_str(in[0]) +
                             " outside axis " + std::to_string(axis));
        }
        out[axis] = checked_add(out[axis], s[axis], "concatenated dimension");
    }
    return {TensorDesc{out, dt}};
}

std::vector<TensorDesc> split_infer(OpKind, Inputs in, const Attrs& attrs) {
    const TensorDesc& x = in[0];
    const auto axis = static_cast<std::size_t>(normalize_axis(attrs.get_int("axis", 0), x.rank()));
    const auto sizes = attrs.require_ints("sizes");
    if (sizes.empty()) throw InputError("attribute 'sizes' must not be empty");
    std::int64_t total = 0;
    std::vector<TensorDesc> out;
    for (std::int64_t s : sizes) {
        if (s < 0) throw InputError("negative size " + std::to_string(s) + " in attribute 'sizes'");
        total = checked_add(total, s, "split sizes");
        TensorDesc part = x;
        part.shape[axis] = s;
        out.push_back(part);
    }
    if (total != x.shape[axis]) {
        throw InputError("attribute 'sizes' " + shape_str(sizes) + " sums to " + std::to_string(total) + ", but axis " +
                         std::to_string(axis) + " of " + desc_str(x) + " has " + std::to_string(x.shape[axis]));
    }
    return out;
}

Work concat_work(OpKind, Inputs in, std::span<const TensorDesc> out, const Attrs&) { return io_bytes(in, out); }

Work layout_work(OpKind, Inputs in, std::span<const TensorDesc> out, const Attrs& attrs) { return view_or_copy(in, out, attrs); }

Work reshape_work(OpKind, Inputs, std::span<const TensorDesc>, const Attrs&) { return Work{}; }

}  // namespace

const OpRule& embedding_rule() {
    static const OpRule r{OpFamily::movement, 2, 2, {}, embedding_infer, embedding_work};
    return r;
}

const OpRule& transpose_rule() {
    static const OpRule r{OpFamily::movement, 1, 1, {"dim0", "dim1", "copy"}, transpose_infer, layout_work};
    return r;
}

const OpRule& permute_rule() {
    static const OpRule r{OpFamily::movement, 1, 1, {"perm", "copy"}, permute_infer, layout_work};
    return r;
}

const OpRule& reshape_rule() {
    static const OpRule r{OpFamily::movement, 1, 1, {"shape"}, reshape_infer, reshape_work};
    return r;
}

const OpRule& concat_rule() {
    static const OpRule r{OpFamily::movement, 1, OpRule::kVariadic, {"axis"}, concat_infer, concat_work};
    return r;
}

const OpRule& split_rule() {
    static const OpRule r{OpFamily::movement, 1, 1, {"axis", "sizes", "copy"}, split_infer, layout_work};
    return r;
}

}  // namespace roofline
