// [gpu] tests of the pointwise and movement kernels (ops/cuda/pointwise.cu, ops/cuda/movement.cu):
// every op kind of both families in f32, f16 and bf16 against the CPU reference executor on the
// same inputs (rounded to the dtype first), on odd shapes that leave vector tails, with one
// broadcast case per binary op.
//
// Tolerances (relative_error, a norm over all elements), per output dtype:
//   f32  1e-5:   the kernels compute in float, the reference in double rounded to float once; the
//                float evaluation adds a few ulp (2^-24 each) per element at most.
//   f16  2e-3:   about 2 ulp of f16's 10-bit mantissa (2^-11 = 4.9e-4 per half ulp): the output
//                is rounded to f16, the reference output is not.
//   bf16 1.6e-2: about 2 ulp of bf16's 7-bit mantissa (2^-8 = 3.9e-3 per half ulp), same reason.
//   u8 masks and integer outputs: exact.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "measure/device.hpp"
#include "measure/gpu_op.hpp"
#include "ops/op_def.hpp"
#include "ops/op_rule.hpp"
#include "ops/pointwise_math.hpp"
#include "ops/reference.hpp"

using namespace roofline;

#define SKIP_WITHOUT_GPU()                            \
    const auto q = roofline::query_cuda_devices();    \
    if (q.devices.empty()) {                          \
        std::printf("SKIP: %s\n", q.problem.c_str()); \
        return;                                       \
    }

namespace {

const DType kFloatTypes[] = {DType::f32, DType::f16, DType::bf16};

// Deterministic values in [-1, 1), never zero (|v| >= 1/64), rounded to what dtype d stores.
// positive: |v| instead (log, sqrt, rsqrt and their saved tensors; Adam's second moment).
HostTensor random_tensor(const Shape& shape, DType d, std::uint64_t seed, bool positive = false, double scale = 1.0) {
    HostTensor t{TensorDesc{shape, d}, {}};
    std::uint64_t z = seed * 0x9E3779B97F4A7C15ULL + 12345;
    for (std::int64_t i = 0; i < numel(shape); ++i) {
        z = z * 6364136223846793005ULL + 1442695040888963407ULL;
        double v = 2.0 * (static_cast<double>(z >> 11) * 0x1.0p-53) - 1.0;
        if (std::fabs(v) < 1.0 / 64) v = v < 0 ? -0.5 : 0.5;
        if (positive) v = std::fabs(v);
        t.data.push_back(round_to(v * scale, d));
    }
    return t;
}

// Integer values in [lo, hi) of an index dtype.
HostTensor int_tensor(const Shape& shape, DType d, std::int64_t lo, std::int64_t hi, std::uint64_t seed) {
    HostTensor t{TensorDesc{shape, d}, {}};
    std::uint64_t z = seed * 0xBF58476D1CE4E5B9ULL + 99;
    for (std::int64_t i = 0; i < numel(shape); ++i) {
        z = z * 6364136223846793005ULL + 1442695040888963407ULL;
        t.data.push_back(static_cast<double>(lo + static_cast<std::int64_t>((z >> 33) % static_cast<std::uint64_t>(hi - lo))));
    }
    return t;
}

double tolerance(DType d) {
    switch (d) {
        case DType::f32: return 1e-5;
        case DType::f16: return 2e-3;
        case DType::bf16: return 1.6e-2;
        default: return 0;  // masks and integers: exact
    }
}

// Runs op k on the GPU and on the reference with the same inputs; checks every output.
void check_op(OpKind k, const std::vector<HostTensor>& in, const Attrs& a) {
    std::vector<TensorDesc> descs;
    std::vector<const HostTensor*> ptrs;
    std::string what = std::string(op_name(k)) + "(";
    for (const HostTensor& t : in) {
        descs.push_back(t.desc);
        ptrs.push_back(&t);
        what += (what.back() == '(' ? "" : ", ") + desc_str(t.desc);
    }
    what += ")";
    for (const auto& [name, value] : a.all()) {
        what += " " + name;
        if (const auto* s = std::get_if<std::string>(&value)) what += "=" + *s;
        if (const auto* d = std::get_if<double>(&value)) what += "=" + std::to_string(*d);
        if (const auto* i = std::get_if<std::int64_t>(&value)) what += "=" + std::to_string(*i);
    }
    INFO(what);
    const std::vector<TensorDesc> out = infer_outputs(k, descs, a);
    const std::vector<HostTensor> ref = run_reference(k, ptrs, a, out, RefPrecision::f32);
    const GpuOpResult gpu = run_op_on_gpu(k, ptrs, a, out);
    REQUIRE(gpu.outputs.size() == ref.size());
    for (std::size_t o = 0; o < ref.size(); ++o) {
        INFO("output " << o << " " << desc_str(out[o]));
        CHECK(relative_error(gpu.outputs[o], ref[o]) <= tolerance(out[o].dtype));
    }
}

Attrs attrs() { return Attrs{}; }

template <class... Rest>
Attrs attrs(const std::string& name, AttrValue v, Rest... rest) {
    Attrs a = attrs(rest...);
    a.set(name, std::move(v));
    return a;
}

}  // namespace

TEST_CASE("dropout kernels' integer threshold test equals the reference's keep()", "[gpu]") {
    // Host-only: the kernels compare the hash with ceil(p 2^53) instead of in double.
    for (double p : {0.0, 1e-9, 0.1, 0.25, 0.3, 0.5, 0.9, 0.999999}) {
        const std::uint64_t t = dropout_threshold(p);
        for (std::int64_t i = 0; i < 200000; ++i) {
            if (dropout_keep(i, p) != dropout_keep_threshold(i, t)) FAIL("p " << p << " index " << i);
        }
    }
}

TEST_CASE("unary pointwise kernels match the reference", "[gpu]") {
    SKIP_WITHOUT_GPU();
    // relu, gelu, neg, scale and every plain unary op of ops/unary_ops.def (its domain for the inputs).
    std::vector<PlainUnaryOp> kinds = {{OpKind::relu, false}, {OpKind::gelu, false}, {OpKind::neg, false}, {OpKind::scale, false}};
    kinds.insert(kinds.end(), std::begin(kPlainUnaryOps), std::end(kPlainUnaryOps));
    for (DType d : kFloatTypes) {
        for (const Shape& shape : {Shape{1027}, Shape{3, 37}, Shape{1}}) {
            for (const auto [k, positive] : kinds) {
                const HostTensor x = random_tensor(shape, d, 1, positive);
                if (k == OpKind::scale)
                    check_op(k, {x}, attrs("factor", 0.37));
                else
                    check_op(k, {x}, attrs());
            }
            check_op(OpKind::gelu, {random_tensor(shape, d, 2)}, attrs("approximate", std::string("erf")));
            // pow with the exponents HF's activations use (3: gelu_new), a square root's and a
            // general one (positive bases, as exp2(e log2 x) needs); shift (x + c).
            for (double e : {3.0, 2.0, 0.5, -1.0, 1.7}) check_op(OpKind::pow, {random_tensor(shape, d, 4, true)}, attrs("exponent", e));
            check_op(OpKind::shift, {random_tensor(shape, d, 5)}, attrs("offset", 1.0));
        }
    }
    // More elements than one wave of the capped grid covers: the grid-stride loop runs.
    check_op(OpKind::relu, {random_tensor({(1 << 22) + 5}, DType::f16, 3)}, attrs());
}

TEST_CASE("binary pointwise kernels match the reference, dense and broadcast", "[gpu]") {
    SKIP_WITHOUT_GPU();
    const OpKind kinds[] = {OpKind::add, OpKind::sub, OpKind::mul, OpKind::div, OpKind::maximum};
    for (DType d : kFloatTypes) {
        for (OpKind k : kinds) {
            check_op(k, {random_tensor({1027}, d, 4), random_tensor({1027}, d, 5)}, attrs());
            check_op(k, {random_tensor({3, 37}, d, 6), random_tensor({3, 37}, d, 7)}, attrs());
            // broadcast both ways: [37,1,5] x [3,1] -> [37,3,5]
            check_op(k, {random_tensor({37, 1, 5}, d, 8), random_tensor({3, 1}, d, 9)}, attrs());
            // a scalar-like operand on the left
            check_op(k, {random_tensor({1}, d, 10), random_tensor({3, 37}, d, 11)}, attrs());
            // the vectorised row/column paths (rows a multiple of 8 elements): a bias row, a
            // per-row column, both on the left too
            check_op(k, {random_tensor({4, 64}, d, 30), random_tensor({64}, d, 31)}, attrs());
            check_op(k, {random_tensor({4, 64}, d, 32), random_tensor({4, 1}, d, 33)}, attrs());
            check_op(k, {random_tensor({64}, d, 34), random_tensor({5, 64}, d, 35)}, attrs());
        }
        // pow with a tensor exponent (torch.pow(x, y)): positive bases, dense and broadcast
        check_op(OpKind::pow, {random_tensor({1027}, d, 42, true), random_tensor({1027}, d, 43)}, attrs());
        check_op(OpKind::pow, {random_tensor({37, 1, 5}, d, 44, true), random_tensor({3, 1}, d, 45)}, attrs());
        check_op(OpKind::pow, {random_tensor({4, 64}, d, 46, true), random_tensor({64}, d, 47)}, attrs());
    }
}

TEST_CASE("unary_grad kernels match the reference", "[gpu]") {
    SKIP_WITHOUT_GPU();
    // relu, gelu and every plain unary op of ops/unary_ops.def (the saved tensor from its domain).
    std::vector<PlainUnaryOp> ofs = {{OpKind::relu, false}, {OpKind::gelu, false}};
    ofs.insert(ofs.end(), std::begin(kPlainUnaryOps), std::end(kPlainUnaryOps));
    for (DType d : kFloatTypes) {
        for (const auto [kind, positive] : ofs) {
            const std::string o(op_name(kind));
            const HostTensor dy = random_tensor({5, 211}, d, 12), saved = random_tensor({5, 211}, d, 13, positive);
            check_op(OpKind::unary_grad, {dy, saved}, attrs("of", o));
        }
        check_op(OpKind::unary_grad, {random_tensor({37}, d, 14), random_tensor({37}, d, 15)},
                 attrs("of", std::string("gelu"), "approximate", std::string("erf")));
    }
}

TEST_CASE("maximum_grad kernels match the reference, dense and broadcast", "[gpu]") {
    SKIP_WITHOUT_GPU();
    for (DType d : kFloatTypes) {
        check_op(OpKind::maximum_grad, {random_tensor({5, 37}, d, 16), random_tensor({5, 37}, d, 17), random_tensor({5, 37}, d, 18)},
                 attrs());
        check_op(OpKind::maximum_grad, {random_tensor({5, 37}, d, 19), random_tensor({5, 1}, d, 20), random_tensor({37}, d, 21)}, attrs());
        check_op(OpKind::maximum_grad, {random_tensor({4, 64}, d, 36), random_tensor({4, 1}, d, 37), random_tensor({64}, d, 38)}, attrs());
        check_op(OpKind::maximum_grad, {random_tensor({4, 64}, d, 39), random_tensor({64}, d, 40), random_tensor({4, 64}, d, 41)}, attrs());
    }
}

TEST_CASE("dropout and dropout_grad kernels match the reference", "[gpu]") {
    SKIP_WITHOUT_GPU();
    for (DType d : kFloatTypes) {
        for (const Shape& shape : {Shape{1027}, Shape{3, 37}}) {
            const HostTensor x = random_tensor(shape, d, 22);
            check_op(OpKind::dropout, {x}, attrs());
            check_op(OpKind::dropout, {x}, attrs("p", 0.3));
            // the mask the forward pass stores
            const Attrs a = attrs("p", 0.3);
            const auto fwd = run_reference(OpKind::dropout, {&x}, a, infer_outputs(OpKind::dropout, std::vector<TensorDesc>{x.desc}, a),
                                           RefPrecision::f32);
            check_op(OpKind::dropout_grad, {random_tensor(shape, d, 23), fwd[1]}, a);
        }
    }
}

TEST_CASE("causal_mask kernels match the reference", "[gpu]") {
    SKIP_WITHOUT_GPU();
    for (DType d : kFloatTypes) {
        check_op(OpKind::causal_mask, {random_tensor({2, 5, 7}, d, 24)}, attrs());  // -inf above the diagonal
        check_op(OpKind::causal_mask, {random_tensor({37, 37}, d, 25)}, attrs("value", 0.0));
        check_op(OpKind::causal_mask, {random_tensor({3, 9, 4}, d, 26)}, attrs("value", -3.0));
        // sk a multiple of 8: whole 16-byte vectors masked, kept or crossing the diagonal
        check_op(OpKind::causal_mask, {random_tensor({2, 3, 16, 24}, d, 27)}, attrs());
        check_op(OpKind::causal_mask, {random_tensor({40, 16}, d, 28)}, attrs("value", -2.0));
    }
}

TEST_CASE("cast kernels match the reference", "[gpu]") {
    SKIP_WITHOUT_GPU();
    for (DType from : kFloatTypes) {
        for (DType to : kFloatTypes) check_op(OpKind::cast, {random_tensor({1027}, from, 27)}, attrs("dtype", std::string(dtype_name(to))));
        // to integers: values to +-100, rounded half to even (ties occur in bf16)
        for (DType to : {DType::int32, DType::int64}) {
            check_op(OpKind::cast, {random_tensor({3, 37}, from, 28, false, 100.0)}, attrs("dtype", std::string(dtype_name(to))));
        }
    }
    for (DType from : {DType::int32, DType::int64}) {
        for (DType to : {DType::f32, DType::f16, DType::bf16, DType::int32, DType::int64}) {
            check_op(OpKind::cast, {int_tensor({1027}, from, -3000, 3000, 29)}, attrs("dtype", std::string(dtype_name(to))));
        }
    }
}

TEST_CASE("fill kernels match the reference", "[gpu]") {
    SKIP_WITHOUT_GPU();
    for (const Shape& shape : {Shape{3, 37}, Shape{}, Shape{1027}}) {
        for (DType d : kFloatTypes) check_op(OpKind::fill, {}, attrs("shape", shape, "dtype", std::string(dtype_name(d)), "value", 0.75));
        for (DType d : {DType::int32, DType::int64, DType::u8}) {
            check_op(OpKind::fill, {}, attrs("shape", shape, "dtype", std::string(dtype_name(d)), "value", 7.0));
        }
        check_op(OpKind::fill, {}, attrs("shape", shape, "dtype", std::string("int32"), "value", -2.0));
    }
}

TEST_CASE("expand kernels match the reference", "[gpu]") {
    SKIP_WITHOUT_GPU();
    for (DType d : kFloatTypes) {
        check_op(OpKind::expand, {random_tensor({37, 1}, d, 30)}, attrs("shape", Shape{3, 37, 5}));
        check_op(OpKind::expand, {random_tensor({5}, d, 31)}, attrs("shape", Shape{2, 3, 5}));
        check_op(OpKind::expand, {random_tensor({3, 1, 7}, d, 32)}, attrs("shape", Shape{3, 4, 7}));
    }
    check_op(OpKind::expand, {int_tensor({37, 1}, DType::int32, -5, 5, 33)}, attrs("shape", Shape{3, 37, 5}));
}

TEST_CASE("sgd_update and adam_update kernels match the reference", "[gpu]") {
    SKIP_WITHOUT_GPU();
    for (DType d : kFloatTypes) {
        const Shape s{5, 211};
        const HostTensor p = random_tensor(s, d, 34), g = random_tensor(s, d, 35), buf = random_tensor(s, d, 36);
        check_op(OpKind::sgd_update, {p, g}, attrs("lr", 0.01));
        check_op(OpKind::sgd_update, {p, g, buf}, attrs("lr", 0.01, "momentum", 0.9, "weight_decay", 0.01, "grad_scale", 0.5));
        const HostTensor m = random_tensor(s, d, 37), v = random_tensor(s, d, 38, true);
        for (bool decoupled : {false, true}) {
            check_op(OpKind::adam_update, {p, g, m, v}, attrs("lr", 0.01, "weight_decay", 0.01, "grad_scale", 0.5, "decoupled", decoupled));
        }
        check_op(OpKind::adam_update, {p, g, m, v}, attrs());
    }
    // fp32 master weights and state with a bf16 gradient
    const Shape s{1027};
    check_op(OpKind::adam_update,
             {random_tensor(s, DType::f32, 39), random_tensor(s, DType::bf16, 40), random_tensor(s, DType::f32, 41),
              random_tensor(s, DType::f32, 42, true)},
             attrs("lr", 0.001));
}

TEST_CASE("transpose and permute kernels match the reference", "[gpu]") {
    SKIP_WITHOUT_GPU();
    for (DType d : kFloatTypes) {
        // tiled: the last two dims swap (batched; partial tiles at the edges)
        check_op(OpKind::transpose, {random_tensor({2, 33, 65}, d, 43)}, attrs());
        check_op(OpKind::transpose, {random_tensor({37, 1027}, d, 44)}, attrs());
        check_op(OpKind::permute, {random_tensor({2, 3, 5, 7}, d, 45)}, attrs("perm", Shape{0, 2, 3, 1}));
        check_op(OpKind::permute, {random_tensor({3, 4, 5}, d, 46)}, attrs("perm", Shape{-1, 0, 1}));
        // strided: the last dim stays, or no two-dim swap remains after collapsing
        check_op(OpKind::transpose, {random_tensor({5, 7, 3}, d, 47)}, attrs("dim0", std::int64_t{0}, "dim1", std::int64_t{1}));
        check_op(OpKind::permute, {random_tensor({3, 4, 5}, d, 48)}, attrs("perm", Shape{2, 1, 0}));
        check_op(OpKind::permute, {random_tensor({4, 3, 33, 2}, d, 49)}, attrs("perm", Shape{1, 0, 2, 3}));
        // attention head split: rows of 64 elements move whole (16-byte chunks)
        check_op(OpKind::permute, {random_tensor({2, 33, 4, 64}, d, 52)}, attrs("perm", Shape{0, 2, 1, 3}));
        check_op(OpKind::transpose, {random_tensor({1, 5}, d, 50)}, attrs());
    }
    check_op(OpKind::permute, {int_tensor({2, 3, 5, 7}, DType::int64, -9, 9, 51)}, attrs("perm", Shape{0, 2, 3, 1}));
}

TEST_CASE("reshape, concat and split kernels match the reference", "[gpu]") {
    SKIP_WITHOUT_GPU();
    for (DType d : kFloatTypes) {
        check_op(OpKind::reshape, {random_tensor({37, 27}, d, 52)}, attrs("shape", Shape{27, -1}));
        check_op(OpKind::reshape, {random_tensor({3}, d, 53)}, attrs("shape", Shape{1, 3}));
        check_op(OpKind::concat, {random_tensor({3, 5, 7}, d, 54), random_tensor({3, 2, 7}, d, 55), random_tensor({3, 1, 7}, d, 56)},
                 attrs("axis", std::int64_t{1}));
        check_op(OpKind::concat, {random_tensor({4}, d, 57), random_tensor({1027}, d, 58), random_tensor({3}, d, 59)}, attrs());
        check_op(OpKind::concat, {random_tensor({2, 3}, d, 60), random_tensor({2, 8}, d, 61)}, attrs("axis", std::int64_t{-1}));
        check_op(OpKind::concat, {random_tensor({64, 16}, d, 62), random_tensor({64, 8}, d, 63)}, attrs("axis", std::int64_t{1}));
        check_op(OpKind::split, {random_tensor({3, 5, 7}, d, 64)}, attrs("axis", std::int64_t{1}, "sizes", Shape{2, 0, 3}));
        check_op(OpKind::split, {random_tensor({1027}, d, 65)}, attrs("sizes", Shape{1, 1026}));
        check_op(OpKind::split, {random_tensor({2, 7}, d, 66)}, attrs("axis", std::int64_t{-1}, "sizes", Shape{3, 4}));
        check_op(OpKind::split, {random_tensor({64, 24}, d, 67)}, attrs("axis", std::int64_t{1}, "sizes", Shape{16, 8}));
    }
}

TEST_CASE("embedding and embedding_grad kernels match the reference", "[gpu]") {
    SKIP_WITHOUT_GPU();
    for (DType d : kFloatTypes) {
        for (DType id : {DType::int64, DType::int32}) {
            for (std::int64_t dim : {129, 64}) {
                const HostTensor table = random_tensor({37, dim}, d, 68);
                const HostTensor idx = int_tensor({3, 11}, id, 0, 37, 69);
                check_op(OpKind::embedding, {table, idx}, attrs());
                check_op(OpKind::embedding, {table, int_tensor({1027}, id, 0, 37, 70)}, attrs());
                // f32: atomics add each row's ~1-3 contributions in varying order; a few f32
                // roundings stay far below 1e-5. f16/bf16: summed in f32, rounded once.
                check_op(OpKind::embedding_grad, {random_tensor({3, 11, dim}, d, 71), idx}, attrs("num_embeddings", std::int64_t{37}));
                // many repeats per row (1027 indices over 37 rows): ~28 f32 additions per element
                // in any order, about 28 * 2^-24 = 1.7e-6 relative at worst.
                check_op(OpKind::embedding_grad, {random_tensor({1027, dim}, d, 72), int_tensor({1027}, id, 0, 37, 73)},
                         attrs("num_embeddings", std::int64_t{37}));
            }
        }
    }
}

// ---- the index-mapping ops of ops/cuda/gather.cu: slice, pad, resize, where, pool2d ----
// Copies (slice, pad, nearest resize, where, max pool) move elements unchanged: the GPU output must
// equal the reference's to the bit (tolerance 0 for integers, the dtype's tolerance above for
// floats, which a copy meets with error 0). Linear resize and average pooling accumulate in f32:
// the dtype's tolerance.

using Ints = std::vector<std::int64_t>;

TEST_CASE("slice kernel matches the reference: steps, negative steps, clamped ends, every dtype width", "[gpu]") {
    SKIP_WITHOUT_GPU();
    for (DType d : {DType::f32, DType::f16, DType::bf16}) {
        check_op(OpKind::slice, {random_tensor({3, 7, 33}, d, 1)},
                 attrs("starts", Ints{1, -30}, "ends", Ints{7, 1000}, "axes", Ints{1, 2}));
        check_op(OpKind::slice, {random_tensor({5, 9}, d, 2)},
                 attrs("starts", Ints{-1}, "ends", Ints{-100}, "axes", Ints{1}, "steps", Ints{-2}));
        check_op(OpKind::slice, {random_tensor({2, 1025, 64}, d, 3)}, attrs("starts", Ints{-1}, "ends", Ints{1025}, "axes", Ints{1}));
    }
    check_op(OpKind::slice, {int_tensor({4, 10}, DType::int64, -50, 50, 4)},
             attrs("starts", Ints{0, 2}, "ends", Ints{4, 9}, "steps", Ints{3, 3}));
    check_op(OpKind::slice, {int_tensor({40}, DType::u8, 0, 2, 5)}, attrs("starts", Ints{5}, "ends", Ints{39}));
}

TEST_CASE("pad kernel matches the reference in constant, edge, wrap and reflect modes, growing and cropping", "[gpu]") {
    SKIP_WITHOUT_GPU();
    for (DType d : {DType::f32, DType::f16, DType::bf16, DType::int32}) {
        const HostTensor x = d == DType::int32 ? int_tensor({2, 3, 5, 6}, d, -9, 9, 6) : random_tensor({2, 3, 5, 6}, d, 6);
        for (const char* mode : {"constant", "edge", "wrap", "reflect"}) {
            check_op(OpKind::pad, {x}, attrs("pads", Ints{0, 0, 2, 3, 0, 1, 4, 2}, "mode", std::string(mode), "value", 0.75));
        }
        check_op(OpKind::pad, {x}, attrs("pads", Ints{0, -1, 1, -2, 0, 0, 1, 1}));  // crop and grow at once
    }
}

TEST_CASE("resize kernel matches the reference: nearest modes, linear, every coordinate transformation", "[gpu]") {
    SKIP_WITHOUT_GPU();
    for (DType d : {DType::f32, DType::f16, DType::bf16}) {
        const HostTensor x = random_tensor({2, 3, 7, 10}, d, 7);
        for (const char* coord : {"half_pixel", "pytorch_half_pixel", "asymmetric", "align_corners"}) {
            for (const char* nm : {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}) {
                check_op(OpKind::resize, {x},
                         attrs("sizes", Ints{2, 3, 14, 25}, "coordinate_transformation_mode", std::string(coord), "nearest_mode",
                               std::string(nm)));
            }
            check_op(
                OpKind::resize, {x},
                attrs("sizes", Ints{2, 3, 15, 4}, "mode", std::string("linear"), "coordinate_transformation_mode", std::string(coord)));
        }
        check_op(OpKind::resize, {x}, attrs("sizes", Ints{2, 5, 3, 10}, "mode", std::string("linear")));  // channels resized too
    }
}

TEST_CASE("where kernel matches the reference with broadcast condition and branches", "[gpu]") {
    SKIP_WITHOUT_GPU();
    for (DType d : {DType::f32, DType::f16, DType::bf16, DType::int64}) {
        const HostTensor a = d == DType::int64 ? int_tensor({4, 1, 9}, d, -5, 5, 8) : random_tensor({4, 1, 9}, d, 8);
        const HostTensor b = d == DType::int64 ? int_tensor({6, 9}, d, -5, 5, 9) : random_tensor({6, 9}, d, 9);
        for (DType c : {DType::u8, DType::int32, DType::int64})
            check_op(OpKind::where, {int_tensor({1, 6, 1}, c, 0, 2, 10), a, b}, attrs());
    }
}

TEST_CASE("max and average pooling kernels match the reference: padding, dilation, ceil mode, count_include_pad", "[gpu]") {
    SKIP_WITHOUT_GPU();
    for (DType d : {DType::f32, DType::f16, DType::bf16}) {
        const HostTensor x = random_tensor({2, 3, 13, 11}, d, 11);
        check_op(OpKind::max_pool2d, {x}, attrs("kernel", Ints{3, 3}, "stride", Ints{2, 2}, "padding", Ints{1, 1}));
        check_op(OpKind::max_pool2d, {x}, attrs("kernel", Ints{2, 3}, "stride", Ints{2, 1}, "dilation", Ints{2, 2}, "ceil_mode", true));
        check_op(OpKind::avg_pool2d, {x}, attrs("kernel", Ints{3, 3}, "stride", Ints{2, 2}, "padding", Ints{1, 1}));
        check_op(OpKind::avg_pool2d, {x},
                 attrs("kernel", Ints{3, 2}, "stride", Ints{2, 2}, "padding", Ints{1, 1}, "count_include_pad", true, "ceil_mode", true));
        check_op(OpKind::avg_pool2d, {random_tensor({2, 8, 7, 7}, d, 12)}, attrs("kernel", Ints{7, 7}));  // global average
    }
}

TEST_CASE("pooling gradient kernels match the reference: overlapping windows, padding, dilation, ceil mode", "[gpu]") {
    SKIP_WITHOUT_GPU();
    // dx sums dy over every window holding an element: overlapping 3x3 stride-2 windows add up to
    // four dy values per element, within the per-dtype tolerance (the sum is in f32 on both sides).
    for (DType d : {DType::f32, DType::f16, DType::bf16}) {
        const HostTensor x = random_tensor({2, 3, 13, 11}, d, 21);
        const auto pooled_dy = [&](OpKind fwd, const Attrs& a, std::uint64_t seed) {
            const TensorDesc y = infer_outputs(fwd, std::vector<TensorDesc>{x.desc}, a)[0];
            return random_tensor(y.shape, d, seed);
        };
        for (const Attrs& a : {attrs("kernel", Ints{3, 3}, "stride", Ints{2, 2}, "padding", Ints{1, 1}),
                               attrs("kernel", Ints{2, 3}, "stride", Ints{2, 1}, "dilation", Ints{2, 2}, "ceil_mode", true),
                               attrs("kernel", Ints{2, 2}, "stride", Ints{2, 2})}) {
            check_op(OpKind::max_pool2d_grad, {x, pooled_dy(OpKind::max_pool2d, a, 22)}, a);
        }
        for (Attrs a :
             {attrs("kernel", Ints{3, 3}, "stride", Ints{2, 2}, "padding", Ints{1, 1}),
              attrs("kernel", Ints{3, 2}, "stride", Ints{2, 2}, "padding", Ints{1, 1}, "count_include_pad", true, "ceil_mode", true),
              attrs("kernel", Ints{13, 11})}) {
            const HostTensor dy = pooled_dy(OpKind::avg_pool2d, a, 23);
            a.set("input_shape", Ints{2, 3, 13, 11});
            check_op(OpKind::avg_pool2d_grad, {dy}, a);
        }
    }
}

TEST_CASE("the kernels of the ops of ops/defs/ match their reference on their definition's examples", "[gpu]") {
    SKIP_WITHOUT_GPU();
    for (OpKind k : kAllOpKinds) {
        const OpDefinition* def = op_definition(k);
        if (!def) continue;
        for (DType d : {DType::f32, DType::f16, DType::bf16})
            for (const OpExample& e : def->examples) {
                std::vector<HostTensor> in;
                for (const Shape& s : e.inputs) in.push_back(random_tensor(s, d, 50 + in.size()));
                for (const Shape& s : e.index_inputs) in.push_back(int_tensor(s, DType::int64, 0, 2, 60 + in.size()));
                check_op(k, in, e.attrs);
            }
    }
}

TEST_CASE("cumsum kernels match the reference: inner and outer axes, exclusive, reverse, integers", "[gpu]") {
    SKIP_WITHOUT_GPU();
    // Lines of 1,000 elements in f16/bf16: the kernel keeps an f32 running sum and rounds each
    // output once, as the reference (double, rounded once) does, so the per-dtype tolerance holds.
    for (DType d : {DType::f32, DType::f16, DType::bf16}) {
        const HostTensor rows = random_tensor({3, 1000}, d, 31);
        const HostTensor cube = random_tensor({4, 37, 5}, d, 32);
        for (bool exclusive : {false, true})
            for (bool reverse : {false, true}) {
                check_op(OpKind::cumsum, {rows}, attrs("axis", std::int64_t{-1}, "exclusive", exclusive, "reverse", reverse));
                check_op(OpKind::cumsum, {cube}, attrs("axis", std::int64_t{1}, "exclusive", exclusive, "reverse", reverse));
                check_op(OpKind::cumsum, {cube}, attrs("axis", std::int64_t{0}, "exclusive", exclusive, "reverse", reverse));
            }
    }
    for (DType d : {DType::int32, DType::int64})  // position ids from an attention mask: exact
        for (bool reverse : {false, true})
            check_op(OpKind::cumsum, {int_tensor({2, 77}, d, 0, 2, 33)}, attrs("axis", std::int64_t{1}, "reverse", reverse));
}

TEST_CASE("topk kernels match the reference: largest and smallest, inner axis, ties to the lower index", "[gpu]") {
    SKIP_WITHOUT_GPU();
    for (DType d : {DType::f32, DType::f16, DType::bf16}) {
        const HostTensor logits = random_tensor({4, 1000}, d, 41);
        check_op(OpKind::topk, {logits}, attrs("k", std::int64_t{50}));
        check_op(OpKind::topk, {logits}, attrs("k", std::int64_t{1}, "largest", false));
        check_op(OpKind::topk, {random_tensor({3, 16, 5}, d, 42)}, attrs("k", std::int64_t{16}, "axis", std::int64_t{1}));
        // a few distinct values: every row is full of ties, and the indices must still agree exactly
        HostTensor ties = int_tensor({2, 300}, DType::f32, 0, 4, 43);
        ties.desc.dtype = d;
        check_op(OpKind::topk, {ties}, attrs("k", std::int64_t{40}));
    }
}
