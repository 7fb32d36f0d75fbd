// Op rules, checked by hand: for every op kind in kAllOpKinds, output shapes and dtypes from
// infer_outputs and exact work counts from count_work, plus the InputErrors each rule reports.
// Conventions (ops/work.hpp, ops/op_rule.hpp): a multiply-add is 2 FLOPs (GEMM 2*M*N*K); bytes are
// what an ideal kernel moves (each input read once, each output written once); views move nothing;
// transcendental results (exp, log, tanh, erf, sin, sqrt, rsqrt) are counted apart from plain FLOPs.
// Per-element costs are the ones listed in the comments of ops/*.cpp. Every expected number below
// shows the arithmetic that gives it. Sizes are in bytes: f64/int64 8, f32/int32 4, bf16/f16 2,
// fp8/int8/u8 1.
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "ops/op_def.hpp"
#include "ops/op_rule.hpp"
#include "ops/reference.hpp"
#include "ops_support.hpp"

using namespace roofline;

namespace {

using Ints = std::vector<std::int64_t>;

TensorDesc T(Shape s, DType d = DType::f32) { return TensorDesc{std::move(s), d}; }

using test::A;
using test::Ran;
using test::run_op;

AttrValue i64(std::int64_t v) { return AttrValue{v}; }
AttrValue str(const char* s) { return AttrValue{std::string(s)}; }

// "f32[2,3], u8[2,3]": every output's dtype and shape, so a failure prints readably.
std::string descs(const std::vector<TensorDesc>& v) {
    std::string s;
    for (const TensorDesc& t : v) s += (s.empty() ? "" : ", ") + desc_str(t);
    return s;
}

struct Counts {
    std::int64_t mf = 0;  // matrix FLOPs
    std::int64_t vf = 0;  // vector FLOPs
    std::int64_t tr = 0;  // transcendentals
    std::int64_t br = 0;  // bytes read
    std::int64_t bw = 0;  // bytes written
};

void check_counts(const Work& w, const Counts& c, const std::string& what) {
    INFO(what);
    CHECK(w.matrix_flops == c.mf);
    CHECK(w.vector_flops == c.vf);
    CHECK(w.transcendentals == c.tr);
    CHECK(w.bytes_read == c.br);
    CHECK(w.bytes_written == c.bw);
}

}  // namespace

// The error is an InputError and its message names the problem.
#define CHECK_INPUT_ERROR(expr, phrase)                   \
    do {                                                  \
        CHECK_THROWS_AS(expr, ::roofline::InputError);    \
        CHECK_THROWS_WITH(expr, Catch::Contains(phrase)); \
    } while (false)

// ---------------------------------------------------------------------------------------------
// One hand-computed case for each op kind; the test fails if a kind in kAllOpKinds has none.
// X below is f32[2,3]: 6 elements, 24 bytes.
// ---------------------------------------------------------------------------------------------
namespace {

struct KindCase {
    OpKind kind;
    std::vector<TensorDesc> in;
    Attrs attrs;
    std::string out;
    Counts counts;
};

std::vector<KindCase> one_case_per_kind() {
    const TensorDesc X = T({2, 3});
    const TensorDesc i64_2 = T({2}, DType::int64);
    return {
        // 2MNK = 2*4*5*6 = 240; read (4*6 + 6*5)*4 = 216; write 4*5*4 = 80
        {OpKind::matmul, {T({4, 6}), T({6, 5})}, {}, "f32[4,5]", {.mf = 240, .br = 216, .bw = 80}},
        // rows 3, in 8, out 16: 2*3*8*16 = 768; bias 3*16 = 48 adds; read (24 + 128 + 16)*4 = 672; write 48*4 = 192
        {OpKind::linear, {T({3, 8}), T({16, 8}), T({16})}, {}, "f32[3,16]", {.mf = 768, .vf = 48, .br = 672, .bw = 192}},
        // Ho = Wo = (5 - 3)/1 + 1 = 3; 2*N*Co*Ho*Wo*(Ci/g)*kh*kw = 2*1*4*3*3*2*3*3 = 1296;
        // read (1*2*5*5 + 4*2*3*3)*4 = (50 + 72)*4 = 488; write 1*4*3*3*4 = 144
        {OpKind::conv2d, {T({1, 2, 5, 5}), T({4, 2, 3, 3})}, {}, "f32[1,4,3,3]", {.mf = 1296, .br = 488, .bw = 144}},
        // unary on X, read 24 written 24; per element (vector, transcendental) from ops/elementwise_ops.cpp
        {OpKind::relu, {X}, {}, "f32[2,3]", {.vf = 6 * 1, .br = 24, .bw = 24}},
        {OpKind::gelu, {X}, {}, "f32[2,3]", {.vf = 6 * 8, .tr = 6 * 1, .br = 24, .bw = 24}},  // tanh form: 8 + tanh
        {OpKind::silu, {X}, {}, "f32[2,3]", {.vf = 6 * 3, .tr = 6 * 1, .br = 24, .bw = 24}},
        {OpKind::sigmoid, {X}, {}, "f32[2,3]", {.vf = 6 * 3, .tr = 6 * 1, .br = 24, .bw = 24}},
        {OpKind::tanh, {X}, {}, "f32[2,3]", {.tr = 6, .br = 24, .bw = 24}},
        {OpKind::exp, {X}, {}, "f32[2,3]", {.tr = 6, .br = 24, .bw = 24}},
        {OpKind::log, {X}, {}, "f32[2,3]", {.tr = 6, .br = 24, .bw = 24}},
        {OpKind::sin, {X}, {}, "f32[2,3]", {.tr = 6, .br = 24, .bw = 24}},
        {OpKind::sqrt, {X}, {}, "f32[2,3]", {.tr = 6, .br = 24, .bw = 24}},
        {OpKind::rsqrt, {X}, {}, "f32[2,3]", {.tr = 6, .br = 24, .bw = 24}},
        // softplus: x > 20 ? x : log(1 + exp(x)): compare, select, +1 (3); exp and log (2)
        {OpKind::softplus, {X}, {}, "f32[2,3]", {.vf = 6 * 3, .tr = 6 * 2, .br = 24, .bw = 24}},
        // relu6: max(x, 0) then min(., 6), one FLOP each as relu's max is one (2)
        {OpKind::relu6, {X}, {}, "f32[2,3]", {.vf = 6 * 2, .br = 24, .bw = 24}},
        // hardsigmoid: relu6(x + 3) / 6: add, max, min, divide (4); hardswish: x * that (5)
        {OpKind::hardsigmoid, {X}, {}, "f32[2,3]", {.vf = 6 * 4, .br = 24, .bw = 24}},
        {OpKind::hardswish, {X}, {}, "f32[2,3]", {.vf = 6 * 5, .br = 24, .bw = 24}},
        // mish: x * tanh(softplus(x)): softplus's 3 and one multiply (4); exp, log, tanh (3)
        {OpKind::mish, {X}, {}, "f32[2,3]", {.vf = 6 * 4, .tr = 6 * 3, .br = 24, .bw = 24}},
        // cos: one transcendental; abs: x < 0 ? -x : x, one select (1); reciprocal: one divide (1)
        {OpKind::cos, {X}, {}, "f32[2,3]", {.tr = 6, .br = 24, .bw = 24}},
        {OpKind::abs, {X}, {}, "f32[2,3]", {.vf = 6, .br = 24, .bw = 24}},
        {OpKind::reciprocal, {X}, {}, "f32[2,3]", {.vf = 6, .br = 24, .bw = 24}},
        {OpKind::neg, {X}, {}, "f32[2,3]", {.vf = 6, .br = 24, .bw = 24}},
        {OpKind::scale, {X}, A({{"factor", 0.5}}), "f32[2,3]", {.vf = 6, .br = 24, .bw = 24}},
        {OpKind::shift, {X}, A({{"offset", 1.0}}), "f32[2,3]", {.vf = 6, .br = 24, .bw = 24}},   // x + 1: one add each
        {OpKind::pow, {X}, A({{"exponent", 3.0}}), "f32[2,3]", {.vf = 12, .br = 24, .bw = 24}},  // x*x*x: two multiplies each
        // binary X op f32[3] -> [2,3]: 6 FLOPs (one per output); read (6 + 3)*4 = 36; write 24
        {OpKind::add, {X, T({3})}, {}, "f32[2,3]", {.vf = 6, .br = 36, .bw = 24}},
        {OpKind::sub, {X, T({3})}, {}, "f32[2,3]", {.vf = 6, .br = 36, .bw = 24}},
        {OpKind::mul, {X, T({3})}, {}, "f32[2,3]", {.vf = 6, .br = 36, .bw = 24}},
        {OpKind::div, {X, T({3})}, {}, "f32[2,3]", {.vf = 6, .br = 36, .bw = 24}},
        {OpKind::maximum, {X, T({3})}, {}, "f32[2,3]", {.vf = 6, .br = 36, .bw = 24}},
        // softmax: 4 per element (max, subtract, sum, divide) = 24, one exp each = 6
        {OpKind::softmax, {X}, {}, "f32[2,3]", {.vf = 24, .tr = 6, .br = 24, .bw = 24}},
        // layernorm with weight and bias: 6*(5+2) + 2 rows*3 = 48; one rsqrt per row = 2; read (6+3+3)*4 = 48
        {OpKind::layernorm, {X, T({3}), T({3})}, {}, "f32[2,3]", {.vf = 48, .tr = 2, .br = 48, .bw = 24}},
        // rmsnorm with weight: 6*(3+1) + 2 rows*2 = 28; 2 rsqrt; read (6+3)*4 = 36
        {OpKind::rmsnorm, {X, T({3})}, {}, "f32[2,3]", {.vf = 28, .tr = 2, .br = 36, .bw = 24}},
        // reductions over axis 1: one op per input element = 6 (mean: + 2 divides = 8); write 2*4 = 8
        {OpKind::reduce_sum, {X}, A({{"axes", Ints{1}}}), "f32[2]", {.vf = 6, .br = 24, .bw = 8}},
        {OpKind::reduce_mean, {X}, A({{"axes", Ints{1}}}), "f32[2]", {.vf = 8, .br = 24, .bw = 8}},
        {OpKind::reduce_max, {X}, A({{"axes", Ints{1}}}), "f32[2]", {.vf = 6, .br = 24, .bw = 8}},
        // embedding: read indices 3*8 = 24 + gathered rows 3*4*4 = 48 -> 72; write 48
        {OpKind::embedding, {T({10, 4}), T({3}, DType::int64)}, {}, "f32[3,4]", {.br = 72, .bw = 48}},
        // views: zero work
        {OpKind::transpose, {X}, {}, "f32[3,2]", {}},
        {OpKind::permute, {T({2, 3, 4})}, A({{"perm", Ints{2, 0, 1}}}), "f32[4,2,3]", {}},
        {OpKind::reshape, {X}, A({{"shape", Ints{3, 2}}}), "f32[3,2]", {}},
        // concat reads both inputs (2*24 = 48) and writes the result (4*3*4 = 48)
        {OpKind::concat, {X, X}, {}, "f32[4,3]", {.br = 48, .bw = 48}},
        {OpKind::split, {T({4, 3})}, A({{"sizes", Ints{1, 3}}}), "f32[1,3], f32[3,3]", {}},
        // dropout on bf16 X: 2 per element = 12; read 6*2 = 12; write y 6*2 + mask 6*1 = 18
        {OpKind::dropout, {T({2, 3}, DType::bf16)}, A({{"p", 0.5}}), "bf16[2,3], u8[2,3]", {.vf = 12, .br = 12, .bw = 18}},
        // causal_mask: one select per element = 9; read/write 9*4 = 36
        {OpKind::causal_mask, {T({3, 3})}, {}, "f32[3,3]", {.vf = 9, .br = 36, .bw = 36}},
        // cross_entropy mean: n = 10 logits, 2 rows: 3n + 2*rows + 1 = 30 + 4 + 1 = 35; n + rows = 12;
        // read 10*4 + 2*8 = 56; write the f32 scalar 4
        {OpKind::cross_entropy, {T({2, 5}), i64_2}, {}, "f32[]", {.vf = 35, .tr = 12, .br = 56, .bw = 4}},
        // attention q, k, v f32[2,4,3]: scores [2,4,4] (32 elements).
        // QK^T 2*2*4*4*3 = 192 + PV 2*2*4*3*4 = 192 -> 384; scale 32 + softmax 4*32 = 160; 32 exp.
        // (the scale in the softmax's pass) read: QK^T (24+24)*4 = 192, softmax 128, PV (32+24)*4 = 224 -> 544;
        // write: scores 128, softmax 128, out 24*4 = 96 -> 352
        {OpKind::attention,
         {T({2, 4, 3}), T({2, 4, 3}), T({2, 4, 3})},
         {},
         "f32[2,4,3]",
         {.mf = 384, .vf = 160, .tr = 32, .br = 544, .bw = 352}},
        // unary_grad of silu: 8 per element + one exp: 48, 6; read dy + x = 48; write 24
        {OpKind::unary_grad, {X, X}, A({{"of", str("silu")}}), "f32[2,3]", {.vf = 48, .tr = 6, .br = 48, .bw = 24}},
        // maximum_grad(dy, a, b): 3 per dy element = 18; read (6+6+3)*4 = 60; write two [2,3] = 48
        {OpKind::maximum_grad, {X, X, T({3})}, {}, "f32[2,3], f32[2,3]", {.vf = 18, .br = 60, .bw = 48}},
        // softmax_grad: 4 per element = 24; read dy + y = 48; write 24
        {OpKind::softmax_grad, {X, X}, {}, "f32[2,3]", {.vf = 24, .br = 48, .bw = 24}},
        // layernorm_grad affine 2: 6*(10+2+1) + 2 rows*3 = 84; 2 rsqrt; read (6+6+3)*4 = 60; write (6+3+3)*4 = 48
        {OpKind::layernorm_grad,
         {X, X, T({3})},
         A({{"affine", i64(2)}}),
         "f32[2,3], f32[3], f32[3]",
         {.vf = 84, .tr = 2, .br = 60, .bw = 48}},
        // rmsnorm_grad affine 1: 6*(7+2) + 2 rows*2 = 58; 2 rsqrt; read 60; write (6+3)*4 = 36
        {OpKind::rmsnorm_grad, {X, X, T({3})}, A({{"affine", i64(1)}}), "f32[2,3], f32[3]", {.vf = 58, .tr = 2, .br = 60, .bw = 36}},
        // dropout_grad: 2 per element = 12; read dy 24 + u8 mask 6 = 30; write 24
        {OpKind::dropout_grad, {X, T({2, 3}, DType::u8)}, {}, "f32[2,3]", {.vf = 12, .br = 30, .bw = 24}},
        // cross_entropy_grad: 6 per logit = 60, one exp each = 10; read 40 + 16 + 4 = 60; write 40
        {OpKind::cross_entropy_grad, {T({2, 5}), i64_2, T({})}, {}, "f32[2,5]", {.vf = 60, .tr = 10, .br = 60, .bw = 40}},
        // embedding_grad: one add per dy element = 12; read dy 48 + indices 24 = 72; write table 10*4*4 = 160
        {OpKind::embedding_grad,
         {T({3, 4}), T({3}, DType::int64)},
         A({{"num_embeddings", i64(10)}}),
         "f32[10,4]",
         {.vf = 12, .br = 72, .bw = 160}},
        // the conv2d case above, backwards: same 1296 matrix FLOPs
        // grad_input: read dy 36*4 + w 72*4 = 432; write dx 50*4 = 200
        {OpKind::conv2d_grad_input,
         {T({1, 4, 3, 3}), T({4, 2, 3, 3})},
         A({{"input_shape", Ints{1, 2, 5, 5}}}),
         "f32[1,2,5,5]",
         {.mf = 1296, .br = 432, .bw = 200}},
        // grad_weight: read dy 36*4 + x 50*4 = 344; write dw 72*4 = 288
        {OpKind::conv2d_grad_weight,
         {T({1, 4, 3, 3}), T({1, 2, 5, 5})},
         A({{"weight_shape", Ints{4, 2, 3, 3}}}),
         "f32[4,2,3,3]",
         {.mf = 1296, .br = 344, .bw = 288}},
        // reduce_max_grad(dy[2], x[2,3], y[2]): 2 per x element = 12; read (2+6+2)*4 = 40; write 24
        {OpKind::reduce_max_grad, {T({2}), X, T({2})}, {}, "f32[2,3]", {.vf = 12, .br = 40, .bw = 24}},
        // expand is a view
        {OpKind::expand, {T({3})}, A({{"shape", Ints{2, 3}}}), "f32[2,3]", {}},
        // fill writes bf16[2,3] = 12 bytes and reads nothing
        {OpKind::fill, {}, A({{"shape", Ints{2, 3}}, {"dtype", str("bf16")}}), "bf16[2,3]", {.bw = 12}},
        // cast: read 24, write 6*2 = 12, no FLOPs
        {OpKind::cast, {X}, A({{"dtype", str("bf16")}}), "bf16[2,3]", {.br = 24, .bw = 12}},
        // sgd_update(p, g): 2 per element = 12; read 48; write 24
        {OpKind::sgd_update, {X, X}, {}, "f32[2,3]", {.vf = 12, .br = 48, .bw = 24}},
        // adam_update(p, g, m, v): 13 per element = 78, one sqrt each = 6; read 4*24 = 96; write 3*24 = 72
        {OpKind::adam_update, {X, X, X, X}, {}, "f32[2,3], f32[2,3], f32[2,3]", {.vf = 78, .tr = 6, .br = 96, .bw = 72}},
        // erf: one transcendental per element, no plain FLOPs
        {OpKind::erf, {X}, {}, "f32[2,3]", {.tr = 6, .br = 24, .bw = 24}},
        // where(u8[2,1], X, f32[]) -> [2,3]: one select per output = 6; read 2 + 24 + 4 = 30; write 24
        {OpKind::where, {T({2, 1}, DType::u8), X, T({})}, {}, "f32[2,3]", {.vf = 6, .br = 30, .bw = 24}},
        // slice of X[:, 1:3]: a strided copy reads and writes only the 2*2 selected elements (16 bytes each way)
        {OpKind::slice, {X}, A({{"starts", Ints{1}}, {"ends", Ints{3}}, {"axes", Ints{1}}}), "f32[2,2]", {.br = 16, .bw = 16}},
        // pad X by 1 column before and 2 after: [2,6]; reads X once (24 bytes), writes 12*4 = 48; no FLOPs
        {OpKind::pad, {X}, A({{"pads", Ints{0, 1, 0, 2}}}), "f32[2,6]", {.br = 24, .bw = 48}},
        // nearest resize of X to [2,6]: a gather reading X once (24 bytes), writing 12*4 = 48; no FLOPs
        {OpKind::resize, {X}, A({{"sizes", Ints{2, 6}}}), "f32[2,6]", {.br = 24, .bw = 48}},
        // cumsum of X along axis 1: one add per element = 6; read 24, write 24
        {OpKind::cumsum, {X}, A({{"axis", std::int64_t{1}}}), "f32[2,3]", {.vf = 6, .br = 24, .bw = 24}},
        // top 2 of each row of X: a heap of 2, ceil(log2(3)) = 2 compares per element = 12; read 24; write
        // values 2*2*4 = 16 and int64 indices 2*2*8 = 32
        {OpKind::topk, {X}, A({{"k", std::int64_t{2}}}), "f32[2,2], int64[2,2]", {.vf = 12, .br = 24, .bw = 48}},
        // 3x3 max pool, stride 2, padding 1 on [1,2,5,5]: Ho = Wo = (5 + 2 - 3)/2 + 1 = 3; 18 outputs x 8 compares = 144;
        // read 50*4 = 200; write 18*4 = 72
        {OpKind::max_pool2d,
         {T({1, 2, 5, 5})},
         A({{"kernel", Ints{3, 3}}, {"stride", Ints{2, 2}}, {"padding", Ints{1, 1}}}),
         "f32[1,2,3,3]",
         {.vf = 144, .br = 200, .bw = 72}},
        // 2x2 average pool, stride 2 on [1,2,5,5]: Ho = Wo = (5 - 2)/2 + 1 = 2; 8 outputs x (3 adds + 1 scale) = 32
        {OpKind::avg_pool2d,
         {T({1, 2, 5, 5})},
         A({{"kernel", Ints{2, 2}}, {"stride", Ints{2, 2}}}),
         "f32[1,2,2,2]",
         {.vf = 32, .br = 200, .bw = 32}},
        // max_pool2d_grad(x [1,2,5,5], dy [1,2,3,3]) of the 3x3/2 pool above: 18 dy elements x 9 (8 compares to recompute
        // the argmax, 1 add) = 162; read 200 + 72 = 272; write dx 200
        {OpKind::max_pool2d_grad,
         {T({1, 2, 5, 5}), T({1, 2, 3, 3})},
         A({{"kernel", Ints{3, 3}}, {"stride", Ints{2, 2}}, {"padding", Ints{1, 1}}}),
         "f32[1,2,5,5]",
         {.vf = 162, .br = 272, .bw = 200}},
        // avg_pool2d_grad(dy [1,2,2,2]) of the 2x2/2 pool above, input_shape [1,2,5,5]: 8 dy elements x 4 = 32; read 32, write 200
        {OpKind::avg_pool2d_grad,
         {T({1, 2, 2, 2})},
         A({{"kernel", Ints{2, 2}}, {"stride", Ints{2, 2}}, {"input_shape", Ints{1, 2, 5, 5}}}),
         "f32[1,2,5,5]",
         {.vf = 32, .br = 32, .bw = 200}},
        // ---- ops/defs/activations.cpp ----
        // leaky_relu: compare and multiply = 2 per element = 12; read 24, write 24; its gradient the same
        // 2 per element, reading dy and x (48)
        {OpKind::leaky_relu, {X}, A({{"alpha", 0.1}}), "f32[2,3]", {.vf = 12, .br = 24, .bw = 24}},
        {OpKind::leaky_relu_grad, {X, X}, {}, "f32[2,3]", {.vf = 12, .br = 48, .bw = 24}},
        // elu: compare, input_scale multiply, -1, alpha scale multiply, scale multiply = 5 per element
        // = 30 and one exp each = 6; elu_grad: compare and 4 multiplies = 30, one exp each, reads dy and x
        {OpKind::elu, {X}, {}, "f32[2,3]", {.vf = 30, .tr = 6, .br = 24, .bw = 24}},
        {OpKind::elu_grad, {X, X}, {}, "f32[2,3]", {.vf = 30, .tr = 6, .br = 48, .bw = 24}},
        // prelu(X, slope f32[3]): 2 per element = 12; read 24 + 12 = 36; write 24
        {OpKind::prelu, {X, T({3})}, {}, "f32[2,3]", {.vf = 12, .br = 36, .bw = 24}},
        // prelu_grad(dy, x, slope): compare and two multiplies = 18; read 24 + 24 + 12 = 60; write dx and
        // the slope's gradient at x's shape, 2 * 24 = 48
        {OpKind::prelu_grad, {X, X, T({3})}, {}, "f32[2,3], f32[2,3]", {.vf = 18, .br = 60, .bw = 48}},
        // trilu: one compare per element = 6; read 24, write 24
        {OpKind::trilu, {X}, A({{"k", i64(1)}}), "f32[2,3]", {.vf = 6, .br = 24, .bw = 24}},
        // ---- ops/defs/index_reduce.cpp ----
        // argmax over axis 1: one compare per element = 6; read 24; write 2 int64 = 16
        {OpKind::argmax, {X}, A({{"axis", i64(1)}}), "int64[2]", {.vf = 6, .br = 24, .bw = 16}},
        // argmin over axis 0 keeping it: 6 compares; write 3 int64 = 24
        {OpKind::argmin, {X}, A({{"axis", i64(0)}, {"keepdim", true}}), "int64[1,3]", {.vf = 6, .br = 24, .bw = 24}},
        // reductions over axis 1 -> f32[2] (8 bytes): min and prod one op per element = 6; l1 (abs, add),
        // l2 and sum_square (multiply, add) 2 per element = 12; l2 one sqrt per output = 2
        {OpKind::reduce_min, {X}, A({{"axes", Ints{1}}}), "f32[2]", {.vf = 6, .br = 24, .bw = 8}},
        {OpKind::reduce_prod, {X}, A({{"axes", Ints{1}}}), "f32[2]", {.vf = 6, .br = 24, .bw = 8}},
        {OpKind::reduce_l1, {X}, A({{"axes", Ints{1}}}), "f32[2]", {.vf = 12, .br = 24, .bw = 8}},
        {OpKind::reduce_l2, {X}, A({{"axes", Ints{1}}}), "f32[2]", {.vf = 12, .tr = 2, .br = 24, .bw = 8}},
        {OpKind::reduce_sum_square, {X}, A({{"axes", Ints{1}}}), "f32[2]", {.vf = 12, .br = 24, .bw = 8}},
        // gather rows of f32[4,3] by int64[2,2] on axis 0 -> [2,2,3] (12 elements): read the indices
        // 4*8 = 32 and the 12 gathered elements 48 -> 80 (not the whole table's 48 + ...); write 48
        {OpKind::gather, {T({4, 3}), T({2, 2}, DType::int64)}, {}, "f32[2,2,3]", {.br = 80, .bw = 48}},
        // gather_grad: one add per dy element = 12; read dy 48 + indices 32 = 80; write dx [4,3] = 48
        {OpKind::gather_grad,
         {T({2, 2, 3}), T({2, 2}, DType::int64)},
         A({{"axis", i64(0)}, {"input_shape", Ints{4, 3}}}),
         "f32[4,3]",
         {.vf = 12, .br = 80, .bw = 48}},
        // ---- ops/defs/conv_transpose.cpp ----
        // x [1,2,3,3], weight [2,3,3,3] (C_out 3), stride 2, output_padding 1, bias [3]:
        // H_out = (3 - 1)*2 + 1*(3 - 1) + 1 + 1 = 8; 2 * (1*2*3*3 inputs) * (3 out channels * 3*3 taps)
        // = 2*18*27 = 972; bias one add per output 3*8*8 = 192; read (18 + 54 + 3)*4 = 300; write 192*4 = 768
        {OpKind::conv_transpose2d,
         {T({1, 2, 3, 3}), T({2, 3, 3, 3}), T({3})},
         A({{"stride", Ints{2, 2}}, {"output_padding", Ints{1, 1}}}),
         "f32[1,3,8,8]",
         {.mf = 972, .vf = 192, .br = 300, .bw = 768}},
        // ---- ops/defs/log_softmax.cpp ----
        // log_softmax over the last axis of f32[2,3]: max, subtract, sum, subtract-log = 4 per element
        // = 24, one exp per element and one log per row = 6 + 2 = 8; read 24, write 24
        {OpKind::log_softmax, {X}, {}, "f32[2,3]", {.vf = 24, .tr = 8, .br = 24, .bw = 24}},
        // its gradient dy - exp(y) sum(dy): sum, multiply, subtract = 3 per element = 18, one exp each
        // = 6; read dy and y 48, write 24
        {OpKind::log_softmax_grad, {X, X}, {}, "f32[2,3]", {.vf = 18, .tr = 6, .br = 48, .bw = 24}},
        // ---- ops/defs/compare.cpp ----
        // f32[2,3] < f32[3] (broadcast): one compare per output = 6; read 24 + 12 = 36; write 6 u8
        {OpKind::compare, {X, T({3})}, A({{"mode", str("lt")}}), "u8[2,3]", {.vf = 6, .br = 36, .bw = 6}},
        // opaque: the shapes it is told, zero work (an unknown op kept by --allow-unknown)
        {OpKind::opaque,
         {X},
         A({{"op_type", str("Hardmax")}, {"ranks", Ints{2, 0}}, {"dims", Ints{2, 3}}, {"dtypes", str("f32,int64")}}),
         "f32[2,3], int64[]",
         {}},
    };
}

}  // namespace

TEST_CASE("ops_test: every op kind in kAllOpKinds has a hand-computed case", "[ops]") {
    const std::vector<KindCase> cases = one_case_per_kind();
    std::set<OpKind> covered;
    for (const KindCase& c : cases) {
        INFO("op " << op_name(c.kind));
        const Ran r = run_op(c.kind, c.in, c.attrs);
        CHECK(descs(r.out) == c.out);
        check_counts(r.work, c.counts, std::string(op_name(c.kind)));
        covered.insert(c.kind);
    }
    for (OpKind k : kAllOpKinds) {
        INFO("op kind without a case: " << op_name(k));
        CHECK(covered.count(k) == 1);
    }
    CHECK(covered.size() == std::size(kAllOpKinds));
}

TEST_CASE("ops_test: the registry has one entry per kind and its traits agree with its rule", "[ops]") {
    // op_name, rule_of and traits_of read one registry row per kind (ops/registry.cpp); a row out
    // of enum order throws. The traits sim/ and measure/ ask must agree with the rule's family:
    // GEMM forms are matrix ops, row kernels normalisations, reductions, losses or softmax, views
    // and in-place updates are movement and optimizer ops.
    std::set<std::string_view> names;
    for (OpKind k : kAllOpKinds) {
        INFO(op_name(k));
        CHECK(parse_op(op_name(k)) == k);
        names.insert(op_name(k));
        const OpTraits& t = traits_of(k);
        const OpFamily f = rule_of(k).family;
        if (is_gemm(t.kernel)) CHECK(f == OpFamily::matrix);
        if (t.kernel == KernelForm::attention) CHECK(f == OpFamily::attention);
        if (t.kernel == KernelForm::row) {
            CHECK((f == OpFamily::normalization || f == OpFamily::reduction || f == OpFamily::loss));
        }
        if (t.view != ViewKind::never) CHECK(f == OpFamily::movement);
        if (t.optimizer_update) {
            CHECK(f == OpFamily::optimizer);
            CHECK(t.in_place[0] == 0);  // the parameter is updated in place
        }
        if (t.row_axes_attr) CHECK(t.kernel == KernelForm::row);
    }
    CHECK(names.size() == std::size(kAllOpKinds));
    CHECK(traits_of(OpKind::linear).eager_split == EagerSplit::addmm_bias);
    CHECK(traits_of(OpKind::reshape).view == ViewKind::always);
    CHECK(traits_of(OpKind::conv2d_grad_weight).kernel == KernelForm::conv_grad_weight);
}

TEST_CASE("ops_test: the ops of ops/defs/ are reached through their one definition", "[ops]") {
    // ops/defs/cumsum.cpp defines cumsum (ops/op_def.hpp); the registry, the gradient table and the
    // reference executor read its definition, and the hand-written kinds have none.
    const OpDefinition* d = op_definition(OpKind::cumsum);
    REQUIRE(d != nullptr);
    CHECK(&rule_of(OpKind::cumsum) == &d->rule);
    CHECK(&traits_of(OpKind::cumsum) == &d->traits);
    CHECK(grad_rule_of(OpKind::cumsum) == d->grad);
    CHECK(op_name(OpKind::cumsum) == "cumsum");
    CHECK(op_definition(OpKind::topk) == nullptr);
    CHECK(op_definition(OpKind::matmul) == nullptr);
    // The generic autodiff, gradcheck and [gpu] tests run every defined op on its examples.
    for (OpKind k : kAllOpKinds) {
        const OpDefinition* def = op_definition(k);
        if (!def) continue;
        INFO(op_name(k));
        CHECK(def->reference != nullptr);
        if (def->grad) CHECK_FALSE(def->examples.empty());
        for (const OpExample& e : def->examples) {
            std::vector<TensorDesc> in;
            for (const Shape& sh : e.inputs) in.push_back(T(sh));
            for (const Shape& sh : e.index_inputs) in.push_back(T(sh, DType::int64));
            CHECK_NOTHROW(infer_outputs(k, in, e.attrs));
        }
    }
}

TEST_CASE("ops_test: op families", "[ops]") {
    CHECK(rule_of(OpKind::matmul).family == OpFamily::matrix);
    CHECK(rule_of(OpKind::conv2d_grad_weight).family == OpFamily::matrix);
    CHECK(rule_of(OpKind::gelu).family == OpFamily::elementwise);
    CHECK(rule_of(OpKind::maximum).family == OpFamily::elementwise);
    CHECK(rule_of(OpKind::layernorm).family == OpFamily::normalization);
    CHECK(rule_of(OpKind::reduce_mean).family == OpFamily::reduction);
    CHECK(rule_of(OpKind::split).family == OpFamily::movement);
    CHECK(rule_of(OpKind::attention).family == OpFamily::attention);
    CHECK(rule_of(OpKind::cross_entropy).family == OpFamily::loss);
    CHECK(rule_of(OpKind::adam_update).family == OpFamily::optimizer);
    CHECK(family_name(OpFamily::normalization) == "normalization");
}

// ---------------------------------------------------------------------------------------------
// Matrix ops
// ---------------------------------------------------------------------------------------------
TEST_CASE("ops_test: matmul shapes, dtypes and 2*M*N*K", "[ops]") {
    SECTION("plain bf16 [3,7] x [7,2]") {
        const Ran r = run_op(OpKind::matmul, {T({3, 7}, DType::bf16), T({7, 2}, DType::bf16)});
        CHECK(descs(r.out) == "bf16[3,2]");
        // 2*M*N*K = 2*3*2*7 = 84; read (21 + 14)*2 = 70; write 6*2 = 12
        check_counts(r.work, {.mf = 84, .br = 70, .bw = 12}, "plain");
    }
    SECTION("transpose_a: a [K,M] = [7,3]") {
        const Ran r = run_op(OpKind::matmul, {T({7, 3}), T({7, 2})}, A({{"transpose_a", true}}));
        CHECK(descs(r.out) == "f32[3,2]");
        // 2*3*2*7 = 84; read (21 + 14)*4 = 140; write 6*4 = 24
        check_counts(r.work, {.mf = 84, .br = 140, .bw = 24}, "transpose_a");
    }
    SECTION("transpose_b: b [N,K] = [2,7]") {
        const Ran r = run_op(OpKind::matmul, {T({3, 7}), T({2, 7})}, A({{"transpose_b", true}}));
        CHECK(descs(r.out) == "f32[3,2]");
        check_counts(r.work, {.mf = 84, .br = 140, .bw = 24}, "transpose_b");  // as above
    }
    SECTION("both transposed: [7,3]^T x [2,7]^T") {
        const Ran r = run_op(OpKind::matmul, {T({7, 3}), T({2, 7})}, A({{"transpose_a", true}, {"transpose_b", true}}));
        CHECK(descs(r.out) == "f32[3,2]");
        CHECK(r.work.matrix_flops == 84);  // 2*3*2*7
    }
    SECTION("batch dims broadcast: [2,1,4,5] x [3,5,6] -> [2,3,4,6]") {
        const Ran r = run_op(OpKind::matmul, {T({2, 1, 4, 5}), T({3, 5, 6})});
        CHECK(descs(r.out) == "f32[2,3,4,6]");
        // batch [2,1] x [3] -> [2,3] = 6 products of 2*M*N*K = 2*4*6*5 = 240 -> 1440;
        // each operand read once: (2*1*4*5 + 3*5*6)*4 = (40 + 90)*4 = 520; write 2*3*4*6*4 = 576
        check_counts(r.work, {.mf = 1440, .br = 520, .bw = 576}, "broadcast batch");
    }
    SECTION("batched with transpose_b: [2,4,5] x [2,6,5]^T") {
        const Ran r = run_op(OpKind::matmul, {T({2, 4, 5}), T({2, 6, 5})}, A({{"transpose_b", true}}));
        CHECK(descs(r.out) == "f32[2,4,6]");
        CHECK(r.work.matrix_flops == 480);  // 2 * 2*4*6*5 = 480
    }
    SECTION("int8 accumulates into int32") {
        const Ran r = run_op(OpKind::matmul, {T({8, 16}, DType::int8), T({16, 4}, DType::int8)});
        CHECK(descs(r.out) == "int32[8,4]");
        // 2*8*4*16 = 1024; read (128 + 64)*1 = 192; write 32*4 = 128
        check_counts(r.work, {.mf = 1024, .br = 192, .bw = 128}, "int8");
    }
    SECTION("fp8 products are written as bf16") {
        for (DType d : {DType::fp8_e4m3, DType::fp8_e5m2}) {
            INFO(dtype_name(d));
            const Ran r = run_op(OpKind::matmul, {T({8, 16}, d), T({16, 4}, d)});
            CHECK(descs(r.out) == "bf16[8,4]");
            // 1024 FLOPs; read (128 + 64)*1 = 192; write 32*2 = 64
            check_counts(r.work, {.mf = 1024, .br = 192, .bw = 64}, "fp8");
        }
    }
    SECTION("errors") {
        CHECK_INPUT_ERROR(run_op(OpKind::matmul, {T({4, 6}), T({7, 5})}), "inner dimensions differ");
        CHECK_INPUT_ERROR(run_op(OpKind::matmul, {T({4, 6}), T({7, 5})}), "K 6 vs 7");
        CHECK_INPUT_ERROR(run_op(OpKind::matmul, {T({6, 4}), T({7, 5})}, A({{"transpose_a", true}})), "(transposed)");
        CHECK_INPUT_ERROR(run_op(OpKind::matmul, {T({6}), T({6, 5})}), "rank >= 2");
        CHECK_INPUT_ERROR(run_op(OpKind::matmul, {T({4, 6}), T({6})}), "rank >= 2");
        CHECK_INPUT_ERROR(run_op(OpKind::matmul, {T({4, 6}), T({6, 5}, DType::f16)}), "must share a dtype");
        CHECK_INPUT_ERROR(run_op(OpKind::matmul, {T({4, 6}, DType::int8), T({6, 5})}), "must share a dtype");
        CHECK_INPUT_ERROR(run_op(OpKind::matmul, {T({4, 6}, DType::u8), T({6, 5}, DType::u8)}), "must be a floating-point or int8 tensor");
        CHECK_INPUT_ERROR(run_op(OpKind::matmul, {T({4, 6}, DType::int32), T({6, 5}, DType::int32)}),
                          "must be a floating-point or int8 tensor");
        CHECK_INPUT_ERROR(run_op(OpKind::matmul, {T({2, 4, 6}), T({3, 6, 5})}), "do not broadcast");
        CHECK_INPUT_ERROR(run_op(OpKind::matmul, {T({4, 6}), T({6, 5})}, A({{"transpose_a", i64(1)}})),
                          "attribute 'transpose_a' must be true or false");
        // errors carry the op name
        CHECK_THROWS_WITH(run_op(OpKind::matmul, {T({4, 6}), T({7, 5})}), Catch::StartsWith("matmul: "));
    }
}

TEST_CASE("ops_test: linear with and without bias", "[ops]") {
    SECTION("no bias: x [2,3,8], weight [16,8]") {
        const Ran r = run_op(OpKind::linear, {T({2, 3, 8}), T({16, 8})});
        CHECK(descs(r.out) == "f32[2,3,16]");
        // rows 2*3 = 6: 2*6*8*16 = 1536; read (48 + 128)*4 = 704; write 96*4 = 384
        check_counts(r.work, {.mf = 1536, .br = 704, .bw = 384}, "no bias");
    }
    SECTION("bias: one add per output") {
        const Ran r = run_op(OpKind::linear, {T({2, 3, 8}), T({16, 8}), T({16})});
        CHECK(descs(r.out) == "f32[2,3,16]");
        // bias adds 6*16 = 96; read (48 + 128 + 16)*4 = 768
        check_counts(r.work, {.mf = 1536, .vf = 96, .br = 768, .bw = 384}, "bias");
    }
    SECTION("rank-1 x is a single row") {
        const Ran r = run_op(OpKind::linear, {T({8}), T({16, 8})});
        CHECK(descs(r.out) == "f32[16]");
        CHECK(r.work.matrix_flops == 256);  // 2*1*8*16
    }
    SECTION("int8 with an int32 bias") {
        const Ran r = run_op(OpKind::linear, {T({4, 8}, DType::int8), T({16, 8}, DType::int8), T({16}, DType::int32)});
        CHECK(descs(r.out) == "int32[4,16]");
        // 2*4*8*16 = 1024; bias 4*16 = 64; read 32 + 128 + 16*4 = 224; write 64*4 = 256
        check_counts(r.work, {.mf = 1024, .vf = 64, .br = 224, .bw = 256}, "int8");
    }
    SECTION("errors") {
        CHECK_INPUT_ERROR(run_op(OpKind::linear, {T({2, 8}), T({16, 7})}), "x has 8 input features but weight f32[16,7] expects 7");
        CHECK_INPUT_ERROR(run_op(OpKind::linear, {T({2, 8}), T({2, 16, 8})}), "weight[out, in]");
        CHECK_INPUT_ERROR(run_op(OpKind::linear, {T({2, 8}), T({16, 8}), T({15})}), "bias must be f32[16]");
        CHECK_INPUT_ERROR(run_op(OpKind::linear, {T({2, 8}, DType::int8), T({16, 8}, DType::int8), T({16}, DType::int8)}),
                          "bias must be int32[16], got int8[16]");
        CHECK_INPUT_ERROR(run_op(OpKind::linear, {T({2, 8}), T({16, 8}, DType::bf16)}), "weight dtype");
    }
}

TEST_CASE("ops_test: conv2d geometry and 2*N*Cout*Ho*Wo*(Cin/groups)*kh*kw", "[ops]") {
    SECTION("defaults: stride 1, no padding") {
        const Ran r = run_op(OpKind::conv2d, {T({1, 3, 8, 8}), T({4, 3, 3, 3})});
        // Ho = Wo = (8 + 0 - 3)/1 + 1 = 6
        CHECK(descs(r.out) == "f32[1,4,6,6]");
        // 2*1*4*6*6*3*3*3 = 7776; read (192 + 108)*4 = 1200; write 144*4 = 576
        check_counts(r.work, {.mf = 7776, .br = 1200, .bw = 576}, "defaults");
    }
    SECTION("stride, padding, dilation and groups, different in h and w") {
        const Attrs a = A({{"stride", Ints{2, 3}}, {"padding", Ints{1, 2}}, {"dilation", Ints{2, 1}}, {"groups", i64(3)}});
        // x [2,6,11,13], weight [9, 6/3 = 2, 3, 5]
        // H: extent d*(k-1)+1 = 2*2+1 = 5; Ho = (11 + 2*1 - 5)/2 + 1 = 8/2 + 1 = 5
        // W: extent 1*4+1 = 5;             Wo = (13 + 2*2 - 5)/3 + 1 = 12/3 + 1 = 5
        const Ran r = run_op(OpKind::conv2d, {T({2, 6, 11, 13}), T({9, 2, 3, 5})}, a);
        CHECK(descs(r.out) == "f32[2,9,5,5]");
        // 2*N*Co*Ho*Wo*(Ci/g)*kh*kw = 2*2*9*5*5*2*3*5 = 27000;
        // read (2*6*11*13 + 9*2*3*5)*4 = (1716 + 270)*4 = 7944; write 2*9*5*5*4 = 1800
        check_counts(r.work, {.mf = 27000, .br = 7944, .bw = 1800}, "strided grouped");
        // with bias [9]: one add per output 2*9*5*5 = 450; read + 9*4 = 7980
        const Ran b = run_op(OpKind::conv2d, {T({2, 6, 11, 13}), T({9, 2, 3, 5}), T({9})}, a);
        check_counts(b.work, {.mf = 27000, .vf = 450, .br = 7980, .bw = 1800}, "strided grouped + bias");
    }
    SECTION("the output size rounds down") {
        // Ho = Wo = floor((10 - 3)/3) + 1 = 2 + 1 = 3
        const Ran r = run_op(OpKind::conv2d, {T({1, 1, 10, 10}), T({1, 1, 3, 3})}, A({{"stride", Ints{3, 3}}}));
        CHECK(descs(r.out) == "f32[1,1,3,3]");
        CHECK(r.work.matrix_flops == 162);  // 2*1*1*3*3*1*3*3
    }
    SECTION("depthwise: groups = channels, padding keeps the size") {
        const Ran r = run_op(OpKind::conv2d, {T({1, 4, 7, 7}, DType::bf16), T({4, 1, 3, 3}, DType::bf16)},
                             A({{"groups", i64(4)}, {"padding", Ints{1, 1}}}));
        // Ho = (7 + 2 - 3)/1 + 1 = 7
        CHECK(descs(r.out) == "bf16[1,4,7,7]");
        // 2*1*4*7*7*1*3*3 = 3528; read (196 + 36)*2 = 464; write 196*2 = 392
        check_counts(r.work, {.mf = 3528, .br = 464, .bw = 392}, "depthwise");
    }
    SECTION("errors") {
        CHECK_INPUT_ERROR(run_op(OpKind::conv2d, {T({1, 6, 8, 8}), T({8, 2, 3, 3})}, A({{"groups", i64(4)}})),
                          "groups 4 must divide C_in 6");
        CHECK_INPUT_ERROR(run_op(OpKind::conv2d, {T({1, 4, 8, 8}), T({6, 1, 3, 3})}, A({{"groups", i64(4)}})), "C_out 6");
        CHECK_INPUT_ERROR(run_op(OpKind::conv2d, {T({1, 4, 8, 8}), T({8, 1, 3, 3})}, A({{"groups", i64(0)}})), "groups 0 must divide");
        CHECK_INPUT_ERROR(run_op(OpKind::conv2d, {T({1, 4, 8, 8}), T({8, 3, 3, 3})}, A({{"groups", i64(2)}})),
                          "channels per group, input has 2");
        CHECK_INPUT_ERROR(run_op(OpKind::conv2d, {T({1, 3, 2, 2}), T({8, 3, 3, 3})}), "kernel extent 3 exceeds padded input 2");
        CHECK_INPUT_ERROR(run_op(OpKind::conv2d, {T({1, 3, 8, 8}), T({8, 3, 3, 3})}, A({{"stride", Ints{0, 1}}})),
                          "stride and dilation must be >= 1");
        CHECK_INPUT_ERROR(run_op(OpKind::conv2d, {T({1, 3, 8, 8}), T({8, 3, 3, 3})}, A({{"stride", Ints{1, 1, 1}}})),
                          "attribute 'stride' must have 2 entries");
        CHECK_INPUT_ERROR(run_op(OpKind::conv2d, {T({3, 8, 8}), T({8, 3, 3, 3})}), "expects x[N, C, H, W]");
        CHECK_INPUT_ERROR(run_op(OpKind::conv2d, {T({1, 3, 8, 8}), T({8, 3, 3, 3}), T({4})}), "bias must be f32[8]");
    }
}

// ---------------------------------------------------------------------------------------------
// Elementwise ops
// ---------------------------------------------------------------------------------------------
TEST_CASE("ops_test: unary ops count their per-element formula", "[ops]") {
    struct Case {
        OpKind k;
        Attrs a;
        std::int64_t vector, transcendental;  // per element, from ops/elementwise_ops.cpp
    };
    const Case cases[] = {
        {OpKind::relu, {}, 1, 0},                                 // max(x, 0)
        {OpKind::gelu, {}, 8, 1},                                 // tanh form is the default
        {OpKind::gelu, A({{"approximate", str("tanh")}}), 8, 1},  // x^3 2, *c, +x, *k, +1, *x, *0.5 = 8; tanh
        {OpKind::gelu, A({{"approximate", str("erf")}}), 4, 1},   // /sqrt2, +1, *x, *0.5 = 4; erf
        {OpKind::gelu, A({{"approximate", str("none")}}), 4, 1},  // "none" is the exact (erf) form
        {OpKind::silu, {}, 3, 1},                                 // neg, +1, divide; exp
        {OpKind::sigmoid, {}, 3, 1},                              // neg, +1, divide; exp
        {OpKind::tanh, {}, 0, 1},
        {OpKind::exp, {}, 0, 1},
        {OpKind::log, {}, 0, 1},
        {OpKind::sin, {}, 0, 1},
        {OpKind::sqrt, {}, 0, 1},
        {OpKind::rsqrt, {}, 0, 1},
        {OpKind::neg, {}, 1, 0},
        {OpKind::scale, A({{"factor", 0.125}}), 1, 0},   // x * factor
        {OpKind::scale, A({{"factor", i64(3)}}), 1, 0},  // an integer factor is a number too
        {OpKind::shift, A({{"offset", 1.0}}), 1, 0},     // x + offset
        {OpKind::pow, A({{"exponent", 2.0}}), 1, 0},     // x * x
        {OpKind::pow, A({{"exponent", 3.0}}), 2, 0},     // x * x * x
        {OpKind::pow, A({{"exponent", i64(3)}}), 2, 0},  // an integer exponent is a number too
        {OpKind::pow, A({{"exponent", 1.0}}), 0, 0},     // a copy
        {OpKind::pow, A({{"exponent", 0.0}}), 0, 0},     // a fill of ones
        {OpKind::pow, A({{"exponent", -1.0}}), 1, 0},    // 1 / x
        {OpKind::pow, A({{"exponent", 0.5}}), 0, 1},     // sqrt
        {OpKind::pow, A({{"exponent", -0.5}}), 0, 1},    // rsqrt
        {OpKind::pow, A({{"exponent", 1.7}}), 1, 2},     // exp2(e * log2 x): a multiply, two transcendentals
    };
    std::set<OpKind> covered;
    for (const Case& c : cases) {
        INFO(op_name(c.k));
        // f16 [3,7]: 21 elements, 42 bytes read and 42 written
        const Ran r = run_op(c.k, {T({3, 7}, DType::f16)}, c.a);
        CHECK(descs(r.out) == "f16[3,7]");
        check_counts(r.work, {.vf = 21 * c.vector, .tr = 21 * c.transcendental, .br = 42, .bw = 42}, std::string(op_name(c.k)));
        CHECK(rule_of(c.k).family == OpFamily::elementwise);
        covered.insert(c.k);
    }
    CHECK(covered.size() == 14);  // relu .. scale, shift, pow: every unary kind but erf

    SECTION("errors") {
        CHECK_INPUT_ERROR(run_op(OpKind::scale, {T({4})}), "missing attribute 'factor'");
        CHECK_INPUT_ERROR(run_op(OpKind::pow, {T({4})}), "missing attribute 'exponent'");
        CHECK_INPUT_ERROR(run_op(OpKind::shift, {T({4})}, A({{"exponent", 2.0}})), "shift has no attribute 'exponent' (accepted: offset)");
        CHECK_INPUT_ERROR(run_op(OpKind::gelu, {T({4})}, A({{"approximate", str("fast")}})),
                          "attribute 'approximate' must be \"tanh\" or \"erf\", got \"fast\"");
        CHECK_INPUT_ERROR(run_op(OpKind::relu, {T({4})}, A({{"factor", 2.0}})), "relu has no attribute 'factor' (accepted: none)");
        CHECK_INPUT_ERROR(run_op(OpKind::exp, {T({4})}, A({{"approximate", str("tanh")}})),
                          "exp has no attribute 'approximate' (accepted: none)");
        CHECK_INPUT_ERROR(run_op(OpKind::exp, {T({4}, DType::int64)}), "x must be floating point");
        CHECK_INPUT_ERROR(run_op(OpKind::relu, {T({4})}, A({{"alpha", 0.1}})), "relu has no attribute 'alpha'");
    }
}

TEST_CASE("ops_test: pow with a tensor exponent is one broadcasting kernel", "[ops]") {
    // torch.pow(x, y), ATen's pow_tensor_tensor_kernel: [4,1,3] ^ [5,1] -> [4,5,3] = 60 elements,
    // exp2(y * log2 x): one multiply and two transcendentals each; read each operand once
    // (12 + 5) * 4 = 68 bytes, write 60 * 4 = 240.
    const Ran r = run_op(OpKind::pow, {T({4, 1, 3}), T({5, 1})});
    CHECK(descs(r.out) == "f32[4,5,3]");
    check_counts(r.work, {.vf = 60, .tr = 120, .br = 68, .bw = 240}, "pow tensor");
    CHECK_INPUT_ERROR(run_op(OpKind::pow, {T({4}), T({4})}, A({{"exponent", 2.0}})), "not both");
    CHECK_INPUT_ERROR(run_op(OpKind::pow, {T({4}), T({4}, DType::int64)}), "exponent must be floating point");
}

TEST_CASE("ops_test: binary ops broadcast like numpy", "[ops]") {
    for (OpKind k : {OpKind::add, OpKind::sub, OpKind::mul, OpKind::div, OpKind::maximum}) {
        INFO(op_name(k));
        // [4,1,3] op [5,1] -> [4,5,3] = 60 elements, one FLOP each;
        // read each operand once (4*1*3 + 5*1)*4 = (12 + 5)*4 = 68; write 60*4 = 240
        const Ran r = run_op(k, {T({4, 1, 3}), T({5, 1})});
        CHECK(descs(r.out) == "f32[4,5,3]");
        check_counts(r.work, {.vf = 60, .br = 68, .bw = 240}, "[4,1,3] op [5,1]");
        // the other operand order broadcasts to the same shape
        const Ran s = run_op(k, {T({5, 1}), T({4, 1, 3})});
        CHECK(descs(s.out) == "f32[4,5,3]");
        check_counts(s.work, {.vf = 60, .br = 68, .bw = 240}, "[5,1] op [4,1,3]");
    }
    SECTION("scalar with a tensor, and integer tensors") {
        const Ran r = run_op(OpKind::mul, {T({}), T({2, 3})});
        CHECK(descs(r.out) == "f32[2,3]");
        check_counts(r.work, {.vf = 6, .br = (1 + 6) * 4, .bw = 24}, "scalar * [2,3]");
        const Ran i = run_op(OpKind::add, {T({5}, DType::int32), T({5}, DType::int32)});
        CHECK(descs(i.out) == "int32[5]");
        check_counts(i.work, {.vf = 5, .br = 40, .bw = 20}, "int32 add");  // read 2*5*4, write 5*4
    }
    SECTION("a zero-size dimension broadcasts against 1") {
        const Ran r = run_op(OpKind::add, {T({0, 3}), T({1, 3})});
        CHECK(descs(r.out) == "f32[0,3]");
        check_counts(r.work, {.vf = 0, .br = 12, .bw = 0}, "empty");  // read 0 + 3*4
    }
    SECTION("errors") {
        CHECK_INPUT_ERROR(run_op(OpKind::add, {T({4, 3}), T({5, 3})}), "shapes [4,3] and [5,3] do not broadcast");
        CHECK_INPUT_ERROR(run_op(OpKind::sub, {T({4, 1, 3}), T({5, 2})}), "do not broadcast (dimension 2: 3 vs 2)");
        CHECK_INPUT_ERROR(run_op(OpKind::add, {T({4}), T({4}, DType::bf16)}), "must share a dtype");
        CHECK_INPUT_ERROR(run_op(OpKind::maximum, {T({4}, DType::u8), T({4}, DType::u8)}), "must be numeric");
        CHECK_INPUT_ERROR(run_op(OpKind::add, {T({4}), T({4})}, A({{"axis", i64(0)}})), "add has no attribute 'axis' (accepted: none)");
    }
}

// ---------------------------------------------------------------------------------------------
// Normalisation
// ---------------------------------------------------------------------------------------------
TEST_CASE("ops_test: softmax, layernorm and rmsnorm counts", "[ops]") {
    SECTION("softmax: 4 FLOPs and one exp per element") {
        const Ran r = run_op(OpKind::softmax, {T({2, 3, 10})}, A({{"axis", i64(1)}}));
        CHECK(descs(r.out) == "f32[2,3,10]");
        // 60 elements: 4*60 = 240 FLOPs, 60 exp; read/write 60*4 = 240
        check_counts(r.work, {.vf = 240, .tr = 60, .br = 240, .bw = 240}, "softmax");
        CHECK_INPUT_ERROR(run_op(OpKind::softmax, {T({2, 3})}, A({{"axis", i64(2)}})), "axis 2 is out of range for rank 2");
        CHECK_INPUT_ERROR(run_op(OpKind::softmax, {T({})}), "rank >= 1");
        CHECK_INPUT_ERROR(run_op(OpKind::softmax, {T({4}, DType::int32)}), "must be floating point");
    }
    SECTION("layernorm: 5 per element + 1 per affine parameter, 3 per row, one rsqrt per row") {
        // x bf16 [4,8]: n = 32, rows = 4, 64 bytes
        const Ran plain = run_op(OpKind::layernorm, {T({4, 8}, DType::bf16)});
        CHECK(descs(plain.out) == "bf16[4,8]");
        check_counts(plain.work, {.vf = 32 * 5 + 4 * 3, .tr = 4, .br = 64, .bw = 64}, "no weight");  // 172
        const Ran w = run_op(OpKind::layernorm, {T({4, 8}, DType::bf16), T({8}, DType::bf16)});
        check_counts(w.work, {.vf = 32 * 6 + 4 * 3, .tr = 4, .br = 64 + 16, .bw = 64}, "weight");  // 204
        const Ran wb = run_op(OpKind::layernorm, {T({4, 8}, DType::bf16), T({8}, DType::bf16), T({8}, DType::bf16)});
        check_counts(wb.work, {.vf = 32 * 7 + 4 * 3, .tr = 4, .br = 64 + 32, .bw = 64}, "weight and bias");  // 236
        // f32 parameters with bf16 x: each input is read at its own size, 64 + 8*4 = 96
        const Ran mixed = run_op(OpKind::layernorm, {T({4, 8}, DType::bf16), T({8})});
        CHECK(mixed.work.bytes_read == 96);
        // rank 3: rows = 2*3 = 6, n = 48: 48*5 + 6*3 = 258
        const Ran r3 = run_op(OpKind::layernorm, {T({2, 3, 8})}, A({{"eps", 1e-6}}));
        check_counts(r3.work, {.vf = 258, .tr = 6, .br = 192, .bw = 192}, "rank 3");
    }
    SECTION("rmsnorm: 3 per element + 1 with weight, 2 per row, one rsqrt per row") {
        const Ran plain = run_op(OpKind::rmsnorm, {T({4, 8}, DType::bf16)});
        CHECK(descs(plain.out) == "bf16[4,8]");
        check_counts(plain.work, {.vf = 32 * 3 + 4 * 2, .tr = 4, .br = 64, .bw = 64}, "no weight");  // 104
        const Ran w = run_op(OpKind::rmsnorm, {T({4, 8}, DType::bf16), T({8}, DType::bf16)});
        check_counts(w.work, {.vf = 32 * 4 + 4 * 2, .tr = 4, .br = 80, .bw = 64}, "weight");  // 136
    }
    SECTION("errors") {
        CHECK_INPUT_ERROR(run_op(OpKind::layernorm, {T({6, 50}), T({49})}), "parameter 1 must have shape [50]");
        CHECK_INPUT_ERROR(run_op(OpKind::layernorm, {T({6, 50}), T({50}), T({1, 50})}), "parameter 2 must have shape [50]");
        CHECK_INPUT_ERROR(run_op(OpKind::rmsnorm, {T({6, 50}), T({6, 50})}), "parameter 1 must have shape [50]");
        CHECK_INPUT_ERROR(run_op(OpKind::layernorm, {T({6, 50})}, A({{"eps", 0.0}})), "attribute 'eps' must be positive");
        CHECK_INPUT_ERROR(run_op(OpKind::rmsnorm, {T({6, 50}), T({50}), T({50})}), "rmsnorm takes 1 to 2 inputs, got 3");
        CHECK_INPUT_ERROR(run_op(OpKind::layernorm, {T({6, 50}, DType::int8)}), "must be floating point");
    }
}

// ---------------------------------------------------------------------------------------------
// Reductions
// ---------------------------------------------------------------------------------------------
TEST_CASE("ops_test: reductions over axes", "[ops]") {
    const TensorDesc x = T({2, 3, 4});  // 24 elements, 96 bytes
    SECTION("one axis") {
        const Ran r = run_op(OpKind::reduce_sum, {x}, A({{"axes", Ints{1}}}));
        CHECK(descs(r.out) == "f32[2,4]");
        check_counts(r.work, {.vf = 24, .br = 96, .bw = 32}, "sum axis 1");  // one add per input; write 8*4
    }
    SECTION("negative axis") {
        const Ran r = run_op(OpKind::reduce_max, {x}, A({{"axes", Ints{-1}}}));
        CHECK(descs(r.out) == "f32[2,3]");
        check_counts(r.work, {.vf = 24, .br = 96, .bw = 24}, "max axis -1");  // one compare per input
    }
    SECTION("keepdim and unsorted axes, mean adds one divide per output") {
        const Ran r = run_op(OpKind::reduce_mean, {x}, A({{"axes", Ints{2, 0}}, {"keepdim", true}}));
        CHECK(descs(r.out) == "f32[1,3,1]");
        check_counts(r.work, {.vf = 24 + 3, .br = 96, .bw = 12}, "mean axes {0,2} keepdim");
        const Ran n = run_op(OpKind::reduce_mean, {x}, A({{"axes", Ints{0, -1}}}));
        CHECK(descs(n.out) == "f32[3]");
    }
    SECTION("all axes by default") {
        const Ran s = run_op(OpKind::reduce_sum, {x});
        CHECK(descs(s.out) == "f32[]");
        check_counts(s.work, {.vf = 24, .br = 96, .bw = 4}, "sum all");
        const Ran k = run_op(OpKind::reduce_max, {x}, A({{"keepdim", true}}));
        CHECK(descs(k.out) == "f32[1,1,1]");
        const Ran m = run_op(OpKind::reduce_mean, {x});
        check_counts(m.work, {.vf = 24 + 1, .br = 96, .bw = 4}, "mean all");
    }
    SECTION("integer input keeps its dtype") {
        const Ran r = run_op(OpKind::reduce_sum, {T({5, 2}, DType::int32)}, A({{"axes", Ints{0}}}));
        CHECK(descs(r.out) == "int32[2]");
    }
    SECTION("errors") {
        CHECK_INPUT_ERROR(run_op(OpKind::reduce_sum, {x}, A({{"axes", Ints{1, -2}}})), "attribute 'axes' repeats an axis");
        CHECK_INPUT_ERROR(run_op(OpKind::reduce_sum, {x}, A({{"axes", Ints{3}}})), "axis 3 is out of range for rank 3");
        CHECK_INPUT_ERROR(run_op(OpKind::reduce_sum, {x}, A({{"axes", Ints{-4}}})), "axis -4 is out of range");
        CHECK_INPUT_ERROR(run_op(OpKind::reduce_max, {T({4}, DType::u8)}), "reduce_max: x must be numeric");
    }
}

// ---------------------------------------------------------------------------------------------
// Data movement
// ---------------------------------------------------------------------------------------------
TEST_CASE("ops_test: embedding reads the indices and the gathered rows only", "[ops]") {
    const Ran r = run_op(OpKind::embedding, {T({1000, 32}, DType::bf16), T({2, 5}, DType::int32)});
    CHECK(descs(r.out) == "bf16[2,5,32]");
    // read indices 10*4 = 40 + 10 rows of 32 bf16 = 640 -> 680 (not the 1000*32*2 table); write 640
    check_counts(r.work, {.br = 680, .bw = 640}, "embedding");
    CHECK_INPUT_ERROR(run_op(OpKind::embedding, {T({10, 4}), T({3})}), "indices must be int32 or int64");
    CHECK_INPUT_ERROR(run_op(OpKind::embedding, {T({10}), T({3}, DType::int64)}), "table must be [num_embeddings, dim]");
    CHECK_INPUT_ERROR(run_op(OpKind::embedding, {T({10, 4}, DType::int32), T({3}, DType::int64)}), "must be floating point");
}

TEST_CASE("ops_test: transpose, permute and split are views unless copy is set", "[ops]") {
    const TensorDesc x = T({2, 3, 4});  // 96 bytes
    SECTION("transpose") {
        const Ran v = run_op(OpKind::transpose, {x});  // default dims -2, -1
        CHECK(descs(v.out) == "f32[2,4,3]");
        check_counts(v.work, {}, "view");
        const Ran c = run_op(OpKind::transpose, {x}, A({{"dim0", i64(0)}, {"dim1", i64(-1)}, {"copy", true}}));
        CHECK(descs(c.out) == "f32[4,3,2]");
        check_counts(c.work, {.br = 96, .bw = 96}, "copy");
        CHECK_INPUT_ERROR(run_op(OpKind::transpose, {x}, A({{"dim0", i64(3)}})), "axis 3 is out of range");
    }
    SECTION("permute") {
        const Ran v = run_op(OpKind::permute, {x}, A({{"perm", Ints{2, 0, -2}}}));
        CHECK(descs(v.out) == "f32[4,2,3]");
        check_counts(v.work, {}, "view");
        const Ran c = run_op(OpKind::permute, {x}, A({{"perm", Ints{1, 2, 0}}, {"copy", true}}));
        CHECK(descs(c.out) == "f32[3,4,2]");
        check_counts(c.work, {.br = 96, .bw = 96}, "copy");
        CHECK_INPUT_ERROR(run_op(OpKind::permute, {x}, A({{"perm", Ints{0, 0, 1}}})), "not a permutation");
        CHECK_INPUT_ERROR(run_op(OpKind::permute, {x}, A({{"perm", Ints{0, 1}}})), "attribute 'perm' has 2 entries for rank 3");
        CHECK_INPUT_ERROR(run_op(OpKind::permute, {x}), "missing attribute 'perm'");
    }
    SECTION("split") {
        const Ran v = run_op(OpKind::split, {T({6, 4})}, A({{"sizes", Ints{1, 2, 3}}}));
        CHECK(descs(v.out) == "f32[1,4], f32[2,4], f32[3,4]");
        check_counts(v.work, {}, "view");
        const Ran n = run_op(OpKind::split, {T({6, 4})}, A({{"axis", i64(-1)}, {"sizes", Ints{1, 3}}}));
        CHECK(descs(n.out) == "f32[6,1], f32[6,3]");
        // copy: read x once (24*4 = 96), write every part (4 + 8 + 12)*4 = 96
        const Ran c = run_op(OpKind::split, {T({6, 4})}, A({{"sizes", Ints{1, 2, 3}}, {"copy", true}}));
        check_counts(c.work, {.br = 96, .bw = 96}, "copy");
        CHECK_INPUT_ERROR(run_op(OpKind::split, {T({2, 12})}, A({{"axis", i64(1)}, {"sizes", Ints{4, 4}}})),
                          "attribute 'sizes' [4,4] sums to 8, but axis 1 of f32[2,12] has 12");
        CHECK_INPUT_ERROR(run_op(OpKind::split, {T({2, 12})}, A({{"sizes", Ints{3, -1}}})), "negative size -1");
        CHECK_INPUT_ERROR(run_op(OpKind::split, {T({2, 12})}, A({{"sizes", Ints{}}})), "must not be empty");
        CHECK_INPUT_ERROR(run_op(OpKind::split, {T({2, 12})}), "missing attribute 'sizes'");
    }
}

TEST_CASE("ops_test: reshape infers -1 and is always a view", "[ops]") {
    const TensorDesc x = T({2, 3, 4}, DType::bf16);  // 24 elements
    const Ran r = run_op(OpKind::reshape, {x}, A({{"shape", Ints{4, -1}}}));
    CHECK(descs(r.out) == "bf16[4,6]");  // -1 = 24 / 4 = 6
    check_counts(r.work, {}, "reshape");
    CHECK(descs(run_op(OpKind::reshape, {x}, A({{"shape", Ints{-1}}})).out) == "bf16[24]");
    CHECK(descs(run_op(OpKind::reshape, {x}, A({{"shape", Ints{2, -1, 3}}})).out) == "bf16[2,4,3]");
    CHECK(descs(run_op(OpKind::reshape, {x}, A({{"shape", Ints{1, 24, 1}}})).out) == "bf16[1,24,1]");
    CHECK_INPUT_ERROR(run_op(OpKind::reshape, {x}, A({{"shape", Ints{5, 5}}})), "(24 elements) to [5,5] (25 elements)");
    CHECK_INPUT_ERROR(run_op(OpKind::reshape, {x}, A({{"shape", Ints{5, -1}}})), "cannot reshape bf16[2,3,4] to [5,-1]");
    CHECK_INPUT_ERROR(run_op(OpKind::reshape, {x}, A({{"shape", Ints{-1, -1}}})), "more than one -1");
    CHECK_INPUT_ERROR(run_op(OpKind::reshape, {x}, A({{"shape", Ints{-2, 12}}})), "negative dimension -2");
    CHECK_INPUT_ERROR(run_op(OpKind::reshape, {x}, A({{"shape", Ints{24}}, {"copy", true}})), "reshape has no attribute 'copy'");
}

TEST_CASE("ops_test: concat shapes, bytes and errors", "[ops]") {
    const Ran r = run_op(OpKind::concat, {T({2, 3}, DType::bf16), T({2, 5}, DType::bf16), T({2, 1}, DType::bf16)}, A({{"axis", i64(1)}}));
    CHECK(descs(r.out) == "bf16[2,9]");  // 3 + 5 + 1 = 9
    // read (6 + 10 + 2)*2 = 36; write 18*2 = 36
    check_counts(r.work, {.br = 36, .bw = 36}, "concat axis 1");
    CHECK(descs(run_op(OpKind::concat, {T({2, 3}), T({4, 3})}).out) == "f32[6,3]");  // axis 0 by default
    CHECK(descs(run_op(OpKind::concat, {T({2, 3}), T({2, 2})}, A({{"axis", i64(-1)}})).out) == "f32[2,5]");
    CHECK(descs(run_op(OpKind::concat, {T({2, 3})}).out) == "f32[2,3]");  // a single input
    CHECK_INPUT_ERROR(run_op(OpKind::concat, {T({2, 3}), T({3, 5})}, A({{"axis", i64(1)}})),
                      "input 1 f32[3,5] does not match f32[2,3] outside axis 1");
    CHECK_INPUT_ERROR(run_op(OpKind::concat, {T({2, 3}), T({2, 3, 1})}), "does not match");
    CHECK_INPUT_ERROR(run_op(OpKind::concat, {T({2, 3}), T({2, 3}, DType::f16)}), "must share a dtype");
    CHECK_INPUT_ERROR(run_op(OpKind::concat, {T({2, 3}), T({2, 3})}, A({{"axis", i64(2)}})), "axis 2 is out of range");
}

// ---------------------------------------------------------------------------------------------
// Training ops
// ---------------------------------------------------------------------------------------------
TEST_CASE("ops_test: dropout writes y and a u8 mask", "[ops]") {
    const Ran r = run_op(OpKind::dropout, {T({4, 5})}, A({{"p", 0.2}}));
    CHECK(descs(r.out) == "f32[4,5], u8[4,5]");
    // 2 FLOPs per element (compare, scale): 40; read 20*4 = 80; write y 80 + mask 20*1 = 100
    check_counts(r.work, {.vf = 40, .br = 80, .bw = 100}, "dropout");
    CHECK(descs(run_op(OpKind::dropout, {T({3}, DType::bf16)}).out) == "bf16[3], u8[3]");  // default p
    CHECK(descs(run_op(OpKind::dropout, {T({3})}, A({{"p", 0.0}})).out) == "f32[3], u8[3]");
    CHECK_INPUT_ERROR(run_op(OpKind::dropout, {T({4})}, A({{"p", 1.0}})), "attribute 'p' must be in [0, 1)");
    CHECK_INPUT_ERROR(run_op(OpKind::dropout, {T({4})}, A({{"p", -0.1}})), "attribute 'p' must be in [0, 1)");
    CHECK_INPUT_ERROR(run_op(OpKind::dropout, {T({4}, DType::int32)}), "must be floating point");
}

TEST_CASE("ops_test: causal_mask is one select per score", "[ops]") {
    const Ran r = run_op(OpKind::causal_mask, {T({2, 4, 4})});
    CHECK(descs(r.out) == "f32[2,4,4]");
    check_counts(r.work, {.vf = 32, .br = 128, .bw = 128}, "causal_mask");  // 32 selects; 32*4 bytes each way
    CHECK(run_op(OpKind::causal_mask, {T({2, 4, 4})}, A({{"value", 0.0}})).work.vector_flops == 32);
    CHECK_INPUT_ERROR(run_op(OpKind::causal_mask, {T({5})}), "scores must have rank >= 2");
    CHECK_INPUT_ERROR(run_op(OpKind::causal_mask, {T({5, 5}, DType::int32)}), "must be floating point");
}

TEST_CASE("ops_test: cross_entropy shapes and counts", "[ops]") {
    // logits bf16 [3,4,10]: n = 120 logits, rows = 12; targets int64 [3,4]
    const TensorDesc logits = T({3, 4, 10}, DType::bf16), targets = T({3, 4}, DType::int64);
    SECTION("mean: an f32 scalar") {
        const Ran r = run_op(OpKind::cross_entropy, {logits, targets});
        CHECK(descs(r.out) == "f32[]");
        // per logit 3 (max, subtract, sum) + per row 2 (subtract target, accumulate) + 1 (mean divide):
        // 3*120 + 2*12 + 1 = 385; exp per logit + log per row = 120 + 12 = 132;
        // read 120*2 + 12*8 = 336; write 4
        check_counts(r.work, {.vf = 385, .tr = 132, .br = 336, .bw = 4}, "mean");
        CHECK(descs(run_op(OpKind::cross_entropy, {logits, targets}, A({{"reduction", str("mean")}})).out) == "f32[]");
    }
    SECTION("none: one f32 loss per row, sum: an f32 scalar") {
        CHECK(descs(run_op(OpKind::cross_entropy, {logits, targets}, A({{"reduction", str("none")}})).out) == "f32[3,4]");
        CHECK(descs(run_op(OpKind::cross_entropy, {logits, targets}, A({{"reduction", str("sum")}})).out) == "f32[]");
        const Ran i32 = run_op(OpKind::cross_entropy, {T({4, 10}), T({4}, DType::int32)}, A({{"reduction", str("none")}}));
        CHECK(descs(i32.out) == "f32[4]");
    }
    SECTION("errors") {
        CHECK_INPUT_ERROR(run_op(OpKind::cross_entropy, {logits, T({3, 5}, DType::int64)}),
                          "must have the shape of logits bf16[3,4,10] without its last (class) dimension");
        CHECK_INPUT_ERROR(run_op(OpKind::cross_entropy, {logits, T({3, 4})}), "targets must be int32 or int64");
        CHECK_INPUT_ERROR(run_op(OpKind::cross_entropy, {T({4, 10}, DType::int32), T({4}, DType::int64)}), "logits must be floating point");
        CHECK_INPUT_ERROR(run_op(OpKind::cross_entropy, {logits, targets}, A({{"reduction", str("avg")}})),
                          "attribute 'reduction' must be \"mean\", \"sum\" or \"none\"");
    }
}

// ops/reduce_ops.cpp documents the per-row terms as "log, subtract the target logit (1), accumulate
// into the loss (1), and the final divide for the mean". With reduction "sum" there is no mean
// divide; with "none" each row's loss is its own output, so there is neither an accumulation nor a
// divide.
TEST_CASE("ops_test: cross_entropy counts follow the reduction", "[ops]") {
    const TensorDesc logits = T({3, 4, 10}, DType::bf16), targets = T({3, 4}, DType::int64);
    // sum: 3*120 + 2*12 = 384 (no divide); write the f32 scalar, 4
    const Ran s = run_op(OpKind::cross_entropy, {logits, targets}, A({{"reduction", str("sum")}}));
    check_counts(s.work, {.vf = 384, .tr = 132, .br = 336, .bw = 4}, "sum");
    // none: 3*120 + 1*12 = 372 (subtract the target logit only); write 12 f32 losses, 48
    const Ran n = run_op(OpKind::cross_entropy, {logits, targets}, A({{"reduction", str("none")}}));
    check_counts(n.work, {.vf = 372, .tr = 132, .br = 336, .bw = 48}, "none");
}

// ---------------------------------------------------------------------------------------------
// Attention
// ---------------------------------------------------------------------------------------------
namespace {

// The materialised algorithm, each part counted by its own rule.
Work attention_parts(const TensorDesc& q, const TensorDesc& k, const TensorDesc& v, bool causal, double scale) {
    const std::vector<TensorDesc> qk = {q, k};
    const Attrs tb = A({{"transpose_b", true}});
    const std::vector<TensorDesc> s = infer_outputs(OpKind::matmul, qk, tb);
    Work w = count_work(OpKind::matmul, qk, s, tb);
    // Three kernels: the scale and the mask run in the softmax's pass (their FLOPs, not their traffic).
    w.vector_flops += count_work(OpKind::scale, s, s, A({{"factor", scale}})).vector_flops;
    if (causal) w.vector_flops += count_work(OpKind::causal_mask, s, s, Attrs{}).vector_flops;
    w += count_work(OpKind::softmax, s, s, Attrs{});
    const std::vector<TensorDesc> pv = {s[0], v};
    const std::vector<TensorDesc> o = infer_outputs(OpKind::matmul, pv, Attrs{});
    w += count_work(OpKind::matmul, pv, o, Attrs{});
    return w;
}

}  // namespace

TEST_CASE("ops_test: attention is matmul + fused scale-(mask)-softmax + matmul", "[ops]") {
    // q [3,5,8] (batch 3, Sq 5, D 8), k [3,7,8] (Sk 7), v [3,7,6] (Dv 6); scores [3,5,7] = 105 elements
    const TensorDesc q = T({3, 5, 8}), k = T({3, 7, 8}), v = T({3, 7, 6});
    SECTION("by hand") {
        const Ran plain = run_op(OpKind::attention, {q, k, v});
        CHECK(descs(plain.out) == "f32[3,5,6]");
        // QK^T: 2*3*5*7*8 = 1680; PV: 2*3*5*6*7 = 1260; total 2940
        // vector: scale 105 + softmax 4*105 = 420 -> 525; transcendentals: 105 exp
        // three kernels, the scale (and mask) in the softmax's pass:
        // read:  QK^T (120 + 168)*4 = 1152, softmax 420, PV (105 + 126)*4 = 924 -> 2496
        // write: scores 420, softmax 420, out 90*4 = 360 -> 1200
        check_counts(plain.work, {.mf = 2940, .vf = 525, .tr = 105, .br = 2496, .bw = 1200}, "non-causal");
        // causal adds one select per score (105 FLOPs), no traffic
        const Ran causal = run_op(OpKind::attention, {q, k, v}, A({{"causal", true}}));
        CHECK(descs(causal.out) == "f32[3,5,6]");
        check_counts(causal.work, {.mf = 2940, .vf = 630, .tr = 105, .br = 2496, .bw = 1200}, "causal");
    }
    SECTION("equals the sum of its parts' own counts") {
        for (bool causal : {false, true}) {
            INFO("causal " << causal);
            const Ran a = run_op(OpKind::attention, {q, k, v}, A({{"causal", causal}, {"scale", 0.25}}));
            const Work parts = attention_parts(q, k, v, causal, 0.25);
            check_counts(a.work, {parts.matrix_flops, parts.vector_flops, parts.transcendentals, parts.bytes_read, parts.bytes_written},
                         "attention vs parts");
            CHECK(a.work == parts);
        }
        // multi-head bf16 with the default scale 1/sqrt(D)
        const TensorDesc qh = T({2, 4, 16, 8}, DType::bf16);
        const Ran mh = run_op(OpKind::attention, {qh, qh, qh}, A({{"causal", true}}));
        CHECK(mh.work == attention_parts(qh, qh, qh, true, 0.35355339059327373));
        // by hand: 8 heads x (2*16*16*8 + 2*16*8*16) = 8 * 8192 = 65536; scores 2048 x (1 + 1 + 4) = 12288
        CHECK(mh.work.matrix_flops == 65536);
        CHECK(mh.work.vector_flops == 12288);
        CHECK(mh.work.transcendentals == 2048);
    }
    SECTION("errors") {
        CHECK_INPUT_ERROR(run_op(OpKind::attention, {q, k, T({3, 6, 6})}), "differ in sequence length");
        CHECK_INPUT_ERROR(run_op(OpKind::attention, {q, T({3, 7, 7}), v}), "inner dimensions differ");
        CHECK_INPUT_ERROR(run_op(OpKind::attention, {q, T({7, 8}), v}), "same rank >= 2");
        CHECK_INPUT_ERROR(run_op(OpKind::attention, {q, k, T({3, 7, 6}, DType::bf16)}), "must share a dtype");
        CHECK_INPUT_ERROR(run_op(OpKind::attention, {q, k, v}, A({{"scale", 0.0}})), "attribute 'scale' must be positive");
        CHECK_INPUT_ERROR(run_op(OpKind::attention, {T({5, 8}, DType::int8), T({7, 8}, DType::int8), T({7, 6}, DType::int8)}),
                          "q must be floating point");
    }
}

// ---------------------------------------------------------------------------------------------
// Backward-only, mixed precision and optimizer ops
// ---------------------------------------------------------------------------------------------
TEST_CASE("ops_test: unary_grad per-element derivative costs", "[ops]") {
    struct Case {
        const char* of;
        const char* approximate;              // nullptr: attribute absent
        std::int64_t vector, transcendental;  // per element, from ops/backward_ops.cpp
    };
    const Case cases[] = {
        {"relu", nullptr, 1, 0},
        {"gelu", nullptr, 17, 1},
        {"gelu", "tanh", 17, 1},
        {"gelu", "erf", 9, 2},
        {"silu", nullptr, 8, 1},
        {"sigmoid", nullptr, 3, 0},
        {"tanh", nullptr, 3, 0},
        {"exp", nullptr, 1, 0},
        {"log", nullptr, 1, 0},
        {"sin", nullptr, 1, 1},
        {"sqrt", nullptr, 2, 0},
        {"rsqrt", nullptr, 4, 0},
        // softplus: x > 20 ? dy : dy e^x / (e^x + 1): compare, select, +1, divide, * dy (5); one exp
        {"softplus", nullptr, 5, 1},
        // relu6: 0 < x < 6 ? dy : 0: two compares, select (3)
        {"relu6", nullptr, 3, 0},
        // hardsigmoid: -3 < x < 3 ? dy / 6 : 0: two compares, divide, select (4)
        {"hardsigmoid", nullptr, 4, 0},
        // hardswish: x < -3 ? 0 : x <= 3 ? dy (x/3 + 1/2) : dy: two compares, two selects, divide, add, multiply (7)
        {"hardswish", nullptr, 7, 0},
        // mish: dy (tanh(sp) + x sigmoid(x) (1 - tanh(sp)^2)): softplus 3 + sigmoid 3 + square, 1 -, two
        // multiplies, add, * dy (12); exp, log, tanh, the sigmoid's exp (4)
        {"mish", nullptr, 12, 4},
        // cos: -dy sin(x): negate, multiply (2); one sin
        {"cos", nullptr, 2, 1},
        // abs: x > 0 ? dy : x < 0 ? -dy : 0: compares and selects counted as the select and multiply (2)
        {"abs", nullptr, 2, 0},
        // reciprocal: -dy y^2 from the output: negate, two multiplies (3)
        {"reciprocal", nullptr, 3, 0},
    };
    for (const Case& c : cases) {
        INFO(c.of << (c.approximate ? std::string(" ") + c.approximate : std::string()));
        Attrs a = A({{"of", str(c.of)}});
        if (c.approximate) a.set("approximate", str(c.approximate));
        // dy and the saved tensor f32[4,5]: 20 elements; read 2*80 = 160; write 80
        const Ran r = run_op(OpKind::unary_grad, {T({4, 5}), T({4, 5})}, a);
        CHECK(descs(r.out) == "f32[4,5]");
        check_counts(r.work, {.vf = 20 * c.vector, .tr = 20 * c.transcendental, .br = 160, .bw = 80}, c.of);
    }
    CHECK_INPUT_ERROR(run_op(OpKind::unary_grad, {T({4}), T({4})}), "attribute 'of' must name a differentiable unary op");
    CHECK_INPUT_ERROR(run_op(OpKind::unary_grad, {T({4}), T({4})}, A({{"of", str("neg")}})), "got \"neg\"");
    CHECK_INPUT_ERROR(run_op(OpKind::unary_grad, {T({4}), T({5})}, A({{"of", str("relu")}})), "differ in shape");
}

TEST_CASE("ops_test: maximum, softmax, dropout and reduce_max gradients", "[ops]") {
    SECTION("maximum_grad: compare and two selects per element, two outputs at dy's shape") {
        const Ran r = run_op(OpKind::maximum_grad, {T({4, 5}), T({4, 5}), T({5})});
        CHECK(descs(r.out) == "f32[4,5], f32[4,5]");
        // 3*20 = 60; read (20 + 20 + 5)*4 = 180; write 2*80 = 160
        check_counts(r.work, {.vf = 60, .br = 180, .bw = 160}, "maximum_grad");
    }
    SECTION("softmax_grad: 4 per element") {
        const Ran r = run_op(OpKind::softmax_grad, {T({4, 5}), T({4, 5})}, A({{"axis", i64(0)}}));
        CHECK(descs(r.out) == "f32[4,5]");
        check_counts(r.work, {.vf = 80, .br = 160, .bw = 80}, "softmax_grad");  // 4*20; 2*80 read; 80 written
        CHECK_INPUT_ERROR(run_op(OpKind::softmax_grad, {T({4, 5}), T({5, 4})}), "dy and y");
        CHECK_INPUT_ERROR(run_op(OpKind::softmax_grad, {T({4, 5}), T({4, 5})}, A({{"axis", i64(2)}})), "out of range");
    }
    SECTION("dropout_grad: 2 per element, reads the u8 mask") {
        const Ran r = run_op(OpKind::dropout_grad, {T({4, 5}, DType::bf16), T({4, 5}, DType::u8)}, A({{"p", 0.1}}));
        CHECK(descs(r.out) == "bf16[4,5]");
        check_counts(r.work, {.vf = 40, .br = 40 + 20, .bw = 40}, "dropout_grad");  // dy 20*2, mask 20*1
        CHECK_INPUT_ERROR(run_op(OpKind::dropout_grad, {T({4, 5}), T({4, 5})}), "mask must be u8");
        CHECK_INPUT_ERROR(run_op(OpKind::dropout_grad, {T({4, 5}), T({4}, DType::u8)}), "differ in shape");
    }
    SECTION("reduce_max_grad: compare and select per input element") {
        const Ran r = run_op(OpKind::reduce_max_grad, {T({4}), T({4, 5}), T({4})}, A({{"axes", Ints{1}}}));
        CHECK(descs(r.out) == "f32[4,5]");
        check_counts(r.work, {.vf = 40, .br = (4 + 20 + 4) * 4, .bw = 80}, "reduce_max_grad");  // 2*20
        CHECK_INPUT_ERROR(run_op(OpKind::reduce_max_grad, {T({4}), T({4, 5}), T({5})}), "dy and y must have the reduced shape");
    }
}

TEST_CASE("ops_test: layernorm_grad and rmsnorm_grad by affine", "[ops]") {
    // dy, x f32[4,5]: n = 20, rows = 4; each 80 bytes; weight f32[5] 20 bytes
    const TensorDesc dy = T({4, 5}), x = T({4, 5}), w = T({5});
    SECTION("layernorm_grad: 10 per element, +2 for dweight, +1 for dbias, 3 per row, one rsqrt per row") {
        const Ran a0 = run_op(OpKind::layernorm_grad, {dy, x});
        CHECK(descs(a0.out) == "f32[4,5]");
        check_counts(a0.work, {.vf = 20 * 10 + 4 * 3, .tr = 4, .br = 160, .bw = 80}, "affine 0");  // 212
        const Ran a1 = run_op(OpKind::layernorm_grad, {dy, x, w}, A({{"affine", i64(1)}}));
        CHECK(descs(a1.out) == "f32[4,5], f32[5]");
        check_counts(a1.work, {.vf = 20 * 12 + 4 * 3, .tr = 4, .br = 180, .bw = 100}, "affine 1");  // 252
        const Ran a2 = run_op(OpKind::layernorm_grad, {dy, x, w}, A({{"affine", i64(2)}}));
        CHECK(descs(a2.out) == "f32[4,5], f32[5], f32[5]");
        check_counts(a2.work, {.vf = 20 * 13 + 4 * 3, .tr = 4, .br = 180, .bw = 120}, "affine 2");  // 272
        CHECK_INPUT_ERROR(run_op(OpKind::layernorm_grad, {dy, x, w}, A({{"affine", i64(3)}})), "attribute 'affine' must be 0 to 2");
        CHECK_INPUT_ERROR(run_op(OpKind::layernorm_grad, {dy, x}, A({{"affine", i64(1)}})), "need the weight as third input");
        CHECK_INPUT_ERROR(run_op(OpKind::layernorm_grad, {dy, T({4, 6})}), "dy and x");
    }
    SECTION("rmsnorm_grad: 7 per element, +2 for dweight, 2 per row, one rsqrt per row") {
        const Ran a0 = run_op(OpKind::rmsnorm_grad, {dy, x});
        CHECK(descs(a0.out) == "f32[4,5]");
        check_counts(a0.work, {.vf = 20 * 7 + 4 * 2, .tr = 4, .br = 160, .bw = 80}, "affine 0");  // 148
        const Ran a1 = run_op(OpKind::rmsnorm_grad, {dy, x, w}, A({{"affine", i64(1)}}));
        CHECK(descs(a1.out) == "f32[4,5], f32[5]");
        check_counts(a1.work, {.vf = 20 * 9 + 4 * 2, .tr = 4, .br = 180, .bw = 100}, "affine 1");  // 188
        CHECK_INPUT_ERROR(run_op(OpKind::rmsnorm_grad, {dy, x, w}, A({{"affine", i64(2)}})), "attribute 'affine' must be 0 to 1");
    }
}

TEST_CASE("ops_test: cross_entropy_grad and embedding_grad", "[ops]") {
    SECTION("cross_entropy_grad: 6 per logit and one exp") {
        const Ran r = run_op(OpKind::cross_entropy_grad, {T({3, 10}), T({3}, DType::int64), T({})});
        CHECK(descs(r.out) == "f32[3,10]");
        // 6*30 = 180; 30 exp; read 120 + 3*8 + 4 = 148; write 120
        check_counts(r.work, {.vf = 180, .tr = 30, .br = 148, .bw = 120}, "cross_entropy_grad");
        CHECK_INPUT_ERROR(run_op(OpKind::cross_entropy_grad, {T({3, 10}), T({4}, DType::int64), T({})}), "do not match logits");
    }
    SECTION("embedding_grad: zero the table, scatter-add each dy element") {
        const Ran r =
            run_op(OpKind::embedding_grad, {T({2, 5, 32}, DType::bf16), T({2, 5}, DType::int32)}, A({{"num_embeddings", i64(1000)}}));
        CHECK(descs(r.out) == "bf16[1000,32]");
        // one add per dy element 2*5*32 = 320; read dy 640 + indices 40 = 680; write table 1000*32*2 = 64000
        check_counts(r.work, {.vf = 320, .br = 680, .bw = 64000}, "embedding_grad");
        CHECK_INPUT_ERROR(run_op(OpKind::embedding_grad, {T({2, 32}), T({2}, DType::int32)}), "missing attribute 'num_embeddings'");
        CHECK_INPUT_ERROR(run_op(OpKind::embedding_grad, {T({2, 32}), T({2}, DType::int32)}, A({{"num_embeddings", i64(0)}})),
                          "must be positive");
        CHECK_INPUT_ERROR(run_op(OpKind::embedding_grad, {T({2, 32}), T({3}, DType::int32)}, A({{"num_embeddings", i64(8)}})),
                          "does not match indices");
    }
}

TEST_CASE("ops_test: conv2d gradients count the forward convolution's multiply-adds", "[ops]") {
    // the forward case of the conv2d test: x [2,6,11,13], w [9,2,3,5], y [2,9,5,5], 27000 matrix FLOPs
    const Attrs geo = A({{"stride", Ints{2, 3}}, {"padding", Ints{1, 2}}, {"dilation", Ints{2, 1}}, {"groups", i64(3)}});
    Attrs gi = geo;
    gi.set("input_shape", Ints{2, 6, 11, 13});
    Attrs gw = geo;
    gw.set("weight_shape", Ints{9, 2, 3, 5});
    const Ran di = run_op(OpKind::conv2d_grad_input, {T({2, 9, 5, 5}), T({9, 2, 3, 5})}, gi);
    CHECK(descs(di.out) == "f32[2,6,11,13]");
    // read dy 450*4 + w 270*4 = 2880; write dx 1716*4 = 6864
    check_counts(di.work, {.mf = 27000, .br = 2880, .bw = 6864}, "grad input");
    const Ran dw = run_op(OpKind::conv2d_grad_weight, {T({2, 9, 5, 5}), T({2, 6, 11, 13})}, gw);
    CHECK(descs(dw.out) == "f32[9,2,3,5]");
    // read dy 1800 + x 6864 = 8664; write dw 270*4 = 1080
    check_counts(dw.work, {.mf = 27000, .br = 8664, .bw = 1080}, "grad weight");
    CHECK_INPUT_ERROR(run_op(OpKind::conv2d_grad_input, {T({2, 9, 4, 5}), T({9, 2, 3, 5})}, gi), "does not match the convolution's output");
    CHECK_INPUT_ERROR(run_op(OpKind::conv2d_grad_weight, {T({2, 9, 5, 5}), T({2, 6, 11, 13})}, geo), "missing attribute 'weight_shape'");
}

TEST_CASE("ops_test: expand, fill and cast", "[ops]") {
    SECTION("expand is a view") {
        const Ran r = run_op(OpKind::expand, {T({4, 1})}, A({{"shape", Ints{3, 4, 5}}}));
        CHECK(descs(r.out) == "f32[3,4,5]");
        check_counts(r.work, {}, "expand");
        CHECK_INPUT_ERROR(run_op(OpKind::expand, {T({4, 5})}, A({{"shape", Ints{5}}})), "cannot expand f32[4,5] to [5]");
        CHECK_INPUT_ERROR(run_op(OpKind::expand, {T({3})}, A({{"shape", Ints{4, 5}}})), "do not broadcast");
    }
    SECTION("fill writes its output and reads nothing") {
        const Ran s = run_op(OpKind::fill, {}, A({{"value", 1.0}}));
        CHECK(descs(s.out) == "f32[]");
        check_counts(s.work, {.bw = 4}, "scalar seed");
        const Ran t = run_op(OpKind::fill, {}, A({{"shape", Ints{3, 5}}, {"dtype", str("int64")}}));
        CHECK(descs(t.out) == "int64[3,5]");
        check_counts(t.work, {.bw = 120}, "int64[3,5]");  // 15*8
        CHECK_INPUT_ERROR(run_op(OpKind::fill, {}, A({{"dtype", str("f12")}})), "attribute 'dtype' must be a dtype name");
        CHECK_INPUT_ERROR(run_op(OpKind::fill, {}, A({{"shape", Ints{2, -1}}})), "negative dimension -1");
    }
    SECTION("cast moves bytes, no FLOPs") {
        const Ran r = run_op(OpKind::cast, {T({4, 5})}, A({{"dtype", str("f16")}}));
        CHECK(descs(r.out) == "f16[4,5]");
        check_counts(r.work, {.br = 80, .bw = 40}, "f32 -> f16");  // 20*4 read, 20*2 written
        CHECK_INPUT_ERROR(run_op(OpKind::cast, {T({4})}), "attribute 'dtype' must be a dtype name");
    }
}

TEST_CASE("ops_test: sgd_update and adam_update", "[ops]") {
    const TensorDesc p = T({4, 5});  // 20 elements, 80 bytes
    SECTION("sgd: 2 per element, +2 momentum buffer, +2 weight decay, +1 unscale") {
        const Ran plain = run_op(OpKind::sgd_update, {p, p}, A({{"lr", 0.1}}));
        CHECK(descs(plain.out) == "f32[4,5]");
        check_counts(plain.work, {.vf = 40, .br = 160, .bw = 80}, "plain");  // 2*20
        const Ran mom = run_op(OpKind::sgd_update, {p, p, p}, A({{"momentum", 0.9}}));
        CHECK(descs(mom.out) == "f32[4,5], f32[4,5]");
        check_counts(mom.work, {.vf = 80, .br = 240, .bw = 160}, "momentum");  // 4*20
        const Ran all = run_op(OpKind::sgd_update, {p, p, p}, A({{"momentum", 0.9}, {"weight_decay", 0.01}, {"grad_scale", 1024.0}}));
        check_counts(all.work, {.vf = 140, .br = 240, .bw = 160}, "momentum + wd + unscale");  // (2+2+2+1)*20
        CHECK_INPUT_ERROR(run_op(OpKind::sgd_update, {p, p}, A({{"lr", 0.0}})), "attribute 'lr' must be positive");
        CHECK_INPUT_ERROR(run_op(OpKind::sgd_update, {p, T({5, 4})}), "must have the shape of the parameter");
        CHECK_INPUT_ERROR(run_op(OpKind::sgd_update, {p, p, T({20})}), "momentum buffer");
    }
    SECTION("adam: 13 per element and one sqrt, +2 weight decay, +1 unscale") {
        const Ran plain = run_op(OpKind::adam_update, {p, p, p, p});
        CHECK(descs(plain.out) == "f32[4,5], f32[4,5], f32[4,5]");
        check_counts(plain.work, {.vf = 260, .tr = 20, .br = 320, .bw = 240}, "plain");  // 13*20; 4*80; 3*80
        const Ran wd = run_op(OpKind::adam_update, {p, p, p, p}, A({{"weight_decay", 0.1}, {"decoupled", true}, {"grad_scale", 512.0}}));
        check_counts(wd.work, {.vf = 320, .tr = 20, .br = 320, .bw = 240}, "adamw + unscale");  // 16*20
        CHECK_INPUT_ERROR(run_op(OpKind::adam_update, {p, p, p, p}, A({{"beta1", 1.0}})), "'beta1' and 'beta2' must be in [0, 1)");
        CHECK_INPUT_ERROR(run_op(OpKind::adam_update, {p, p, T({4}), p}), "first moment");
        CHECK_INPUT_ERROR(run_op(OpKind::adam_update, {p, p, p}), "adam_update takes 4 inputs, got 3");
    }
}

// ---------------------------------------------------------------------------------------------
// Overflow, arity and attribute names
// ---------------------------------------------------------------------------------------------
TEST_CASE("ops_test: sizes that overflow int64 are InputErrors", "[ops]") {
    const std::int64_t two32 = std::int64_t{1} << 32;
    // 2^32 * 2^32 * 4 = 2^66 elements
    CHECK_THROWS_AS(numel({two32, two32, 4}), InputError);
    CHECK_THROWS_WITH(numel({two32, two32, 4}), Catch::Contains("overflow"));
    CHECK_INPUT_ERROR(run_op(OpKind::relu, {T({two32, two32, 4})}), "overflow");
    CHECK_THROWS_WITH(run_op(OpKind::relu, {T({two32, two32, 4})}), Catch::StartsWith("relu: int64 overflow"));
    // 2^61 f64 elements fit, their 2^64 bytes do not
    CHECK_INPUT_ERROR(run_op(OpKind::neg, {T({std::int64_t{1} << 61}, DType::f64)}), "overflow computing byte size");
    // every tensor fits (2^42 elements) but 2*M*N*K = 2 * 2^63 does not
    const std::int64_t n = std::int64_t{1} << 21;
    const std::vector<TensorDesc> in = {T({n, n}, DType::bf16), T({n, n}, DType::bf16)};
    const auto out = infer_outputs(OpKind::matmul, in, Attrs{});
    CHECK(descs(out) == "bf16[2097152,2097152]");
    CHECK_INPUT_ERROR(count_work(OpKind::matmul, in, out, Attrs{}), "matmul: int64 overflow computing");
    // a concatenated dimension 2^62 + 2^62 = 2^63
    const std::int64_t two62 = std::int64_t{1} << 62;
    CHECK_INPUT_ERROR(run_op(OpKind::concat, {T({two62}, DType::int8), T({two62}, DType::int8)}), "overflow");
    // a reshape target whose element count overflows
    CHECK_INPUT_ERROR(run_op(OpKind::reshape, {T({4})}, A({{"shape", Ints{two32, two32, 4}}})), "overflow");
    // summing work
    Work big;
    big.matrix_flops = std::numeric_limits<std::int64_t>::max();
    Work one;
    one.matrix_flops = 1;
    CHECK_INPUT_ERROR(big += one, "overflow");
    Work mixed;
    mixed.matrix_flops = std::numeric_limits<std::int64_t>::max();
    mixed.vector_flops = 1;
    CHECK_INPUT_ERROR(mixed.flops(), "overflow");
}

TEST_CASE("ops_test: arity, unknown attributes and negative dimensions", "[ops]") {
    CHECK_INPUT_ERROR(run_op(OpKind::matmul, {T({4, 6})}), "matmul takes 2 inputs, got 1");
    CHECK_INPUT_ERROR(run_op(OpKind::matmul, {T({4, 6}), T({6, 5}), T({5})}), "matmul takes 2 inputs, got 3");
    CHECK_INPUT_ERROR(run_op(OpKind::linear, {T({2, 8}), T({16, 8}), T({16}), T({16})}), "linear takes 2 to 3 inputs, got 4");
    CHECK_INPUT_ERROR(run_op(OpKind::concat, {}), "concat takes 1 or more inputs, got 0");
    CHECK_INPUT_ERROR(run_op(OpKind::fill, {T({1})}), "fill takes 0 inputs, got 1");
    CHECK_INPUT_ERROR(run_op(OpKind::relu, {}), "relu takes 1 inputs, got 0");
    CHECK_INPUT_ERROR(run_op(OpKind::attention, {T({4, 8}), T({4, 8})}), "attention takes 3 inputs, got 2");
    CHECK_INPUT_ERROR(run_op(OpKind::add, {T({4})}), "add takes 2 inputs, got 1");

    CHECK_INPUT_ERROR(run_op(OpKind::matmul, {T({4, 6}), T({6, 5})}, A({{"transpose_c", true}})),
                      "matmul has no attribute 'transpose_c' (accepted: transpose_a, transpose_b)");
    CHECK_INPUT_ERROR(run_op(OpKind::relu, {T({4})}, A({{"alpha", 0.1}})), "relu has no attribute 'alpha' (accepted: none)");
    CHECK_INPUT_ERROR(run_op(OpKind::linear, {T({2, 8}), T({16, 8})}, A({{"bias", true}})),
                      "linear has no attribute 'bias' (accepted: weight_bits, group_size, out_dtype)");
    CHECK_INPUT_ERROR(run_op(OpKind::softmax, {T({4})}, A({{"dim", i64(0)}})), "softmax has no attribute 'dim'");

    CHECK_INPUT_ERROR(run_op(OpKind::relu, {T({3, -2})}), "negative dimension -2 in shape [3,-2]");
    CHECK_INPUT_ERROR(run_op(OpKind::add, {T({3}), T({-1})}), "negative dimension -1");
}

// ---------------------------------------------------------------------------------------------
// Validations that the rules should make (see the report that came with this file).
// ---------------------------------------------------------------------------------------------
TEST_CASE("ops_test: expand rejects a negative dimension in 'shape'", "[ops]") {
    // fill, reshape, split and the conv2d gradients all reject negative sizes in their shape
    // attributes; expand's output would otherwise be f32[-3] with -12 bytes.
    CHECK_INPUT_ERROR(run_op(OpKind::expand, {T({1})}, A({{"shape", Ints{-3}}})), "negative");
}

TEST_CASE("ops_test: scale's 'factor' must be a number", "[ops]") {
    // Attrs' typed getters throw "attribute 'factor' must be a number"; unary_infer only checks
    // that 'factor' is present, so a string passes shape inference.
    CHECK_INPUT_ERROR(run_op(OpKind::scale, {T({4})}, A({{"factor", str("half")}})), "factor");
}

TEST_CASE("ops_test: unary_grad validates 'approximate' like gelu does", "[ops]") {
    // gelu rejects approximate values other than tanh/erf/none; unary_grad silently counts any
    // other value as the erf form.
    CHECK_INPUT_ERROR(run_op(OpKind::unary_grad, {T({4}), T({4})}, A({{"of", str("gelu")}, {"approximate", str("fast")}})), "approximate");
}

TEST_CASE("ops_test: slice follows ONNX Slice semantics", "[ops][onnx]") {
    const TensorDesc x = T({4, 10});
    auto shape = [&](const Attrs& a) { return desc_str(run_op(OpKind::slice, {x}, a).out[0]); };
    // negative indices count from the end; INT64_MAX ends clamp to the dimension: rows 1..3, cols 7..9
    CHECK(shape(A({{"starts", Ints{1, -3}}, {"ends", Ints{std::numeric_limits<std::int64_t>::max(), 10}}})) == "f32[3,3]");
    // step 3 over 0..9 takes 0, 3, 6, 9: 4 columns
    CHECK(shape(A({{"starts", Ints{0}}, {"ends", Ints{10}}, {"axes", Ints{-1}}, {"steps", Ints{3}}})) == "f32[4,4]");
    // a negative step walks backwards from 8 down to (not including) 2: 8, 6, 4 -> 3 columns
    CHECK(shape(A({{"starts", Ints{8}}, {"ends", Ints{2}}, {"axes", Ints{1}}, {"steps", Ints{-2}}})) == "f32[4,3]");
    // an empty range is a zero-size dimension, not an error
    CHECK(shape(A({{"starts", Ints{5}}, {"ends", Ints{2}}, {"axes", Ints{1}}})) == "f32[4,0]");
    CHECK_INPUT_ERROR(run_op(OpKind::slice, {x}, A({{"starts", Ints{0}}, {"ends", Ints{1}}, {"steps", Ints{0}}})), "a step of 0");
    CHECK_INPUT_ERROR(run_op(OpKind::slice, {x}, A({{"starts", Ints{0}}, {"ends", Ints{1, 2}}})), "must have the same length");
    CHECK_INPUT_ERROR(run_op(OpKind::slice, {x}, A({{"starts", Ints{0, 0}}, {"ends", Ints{1, 1}}, {"axes", Ints{1, -1}}})), "sliced twice");
}

TEST_CASE("ops_test: pad follows ONNX Pad in every mode", "[ops][onnx]") {
    // x = [1 2 3 4] padded by 2 before and 1 after; values from ONNX's Pad examples (onnx/docs/Operators.md)
    const HostTensor x{T({4}, DType::f64), {1, 2, 3, 4}};
    const auto ref = [&](const std::string& mode, Ints pads) {
        Attrs a = A({{"pads", pads}, {"mode", str(mode.c_str())}, {"value", 9.0}});
        const TensorDesc out = run_op(OpKind::pad, {x.desc}, a).out[0];
        return run_reference(OpKind::pad, {&x}, a, {out}, RefPrecision::f64)[0].data;
    };
    CHECK(ref("constant", {2, 1}) == std::vector<double>{9, 9, 1, 2, 3, 4, 9});
    CHECK(ref("reflect", {2, 1}) == std::vector<double>{3, 2, 1, 2, 3, 4, 3});  // the edge is not repeated
    CHECK(ref("edge", {2, 1}) == std::vector<double>{1, 1, 1, 2, 3, 4, 4});
    CHECK(ref("wrap", {2, 1}) == std::vector<double>{3, 4, 1, 2, 3, 4, 1});
    CHECK(ref("constant", {-1, 1}) == std::vector<double>{2, 3, 4, 9});  // a negative pad crops
    CHECK_INPUT_ERROR(run_op(OpKind::pad, {x.desc}, A({{"pads", Ints{1}}})), "attribute 'pads' must have 2 entries per axis");
    CHECK_INPUT_ERROR(run_op(OpKind::pad, {x.desc}, A({{"pads", Ints{4, 0}}, {"mode", str("reflect")}})), "in mode reflect exceed");
    CHECK_INPUT_ERROR(run_op(OpKind::pad, {x.desc}, A({{"pads", Ints{-3, -2}}})), "crop more than axis 0's 4");
    CHECK_INPUT_ERROR(run_op(OpKind::pad, {x.desc}, A({{"pads", Ints{0, 0}}, {"mode", str("mirror")}})), "must be constant, reflect");
}

TEST_CASE("ops_test: resize follows ONNX Resize, nearest and linear", "[ops][onnx]") {
    // x = [1 2 3 4] to 8 elements; values as ONNX's Resize definition computes them (onnx/docs/Operators.md)
    const HostTensor x{T({4}, DType::f64), {1, 2, 3, 4}};
    const auto ref = [&](const char* mode, const char* coords, const char* nearest = "round_prefer_floor") {
        const Attrs a =
            A({{"sizes", Ints{8}}, {"mode", str(mode)}, {"coordinate_transformation_mode", str(coords)}, {"nearest_mode", str(nearest)}});
        return run_reference(OpKind::resize, {&x}, a, {run_op(OpKind::resize, {x.desc}, a).out[0]}, RefPrecision::f64)[0].data;
    };
    CHECK(ref("nearest", "asymmetric", "floor") == std::vector<double>{1, 1, 2, 2, 3, 3, 4, 4});
    CHECK(ref("nearest", "half_pixel") == std::vector<double>{1, 1, 2, 2, 3, 3, 4, 4});
    // half_pixel sources -0.25, 0.25, ..., 3.25 clamped to [0, 3]: PyTorch's bilinear, align_corners=False
    CHECK(ref("linear", "half_pixel") == std::vector<double>{1, 1.25, 1.75, 2.25, 2.75, 3.25, 3.75, 4});
    const auto ac = ref("linear", "align_corners");  // 1 + o * 3/7
    for (std::size_t o = 0; o < 8; ++o) CHECK(ac[o] == Approx(1 + static_cast<double>(o) * 3 / 7));
    // linear over 2 resized axes of [1,1,2,2] -> [1,1,4,4]: 16 outputs, 3 lerps of 3 FLOPs each
    const Ran r = run_op(OpKind::resize, {T({1, 1, 2, 2})}, A({{"sizes", Ints{1, 1, 4, 4}}, {"mode", str("linear")}}));
    CHECK(r.work.vector_flops == 16 * 9);
    CHECK_INPUT_ERROR(run_op(OpKind::resize, {x.desc}, A({{"sizes", Ints{8}}, {"mode", str("cubic")}})), "must be nearest or linear");
    CHECK_INPUT_ERROR(run_op(OpKind::resize, {x.desc}, A({{"sizes", Ints{8, 2}}})), "one entry per axis");
}

TEST_CASE("ops_test: pooling output sizes and errors", "[ops][onnx]") {
    // resnet's stem: 3x3 max pool, stride 2, padding 1 on 112x112 -> (112 + 2 - 3)/2 + 1 = 56
    const Ran stem =
        run_op(OpKind::max_pool2d, {T({1, 64, 112, 112})}, A({{"kernel", Ints{3, 3}}, {"stride", Ints{2, 2}}, {"padding", Ints{1, 1}}}));
    CHECK(descs(stem.out) == "f32[1,64,56,56]");
    // ceil_mode on 6x6, kernel 3, stride 2: floor gives (6-3)/2 + 1 = 2, ceil gives 3 (the last window starts at 4 < 6)
    CHECK(descs(run_op(OpKind::avg_pool2d, {T({1, 1, 6, 6})}, A({{"kernel", Ints{3, 3}}, {"stride", Ints{2, 2}}, {"ceil_mode", true}}))
                    .out) == "f32[1,1,3,3]");
    // a stride near INT64_MAX in ceil mode: one window, and no overflow on the way (review of the ceil-mode formula)
    const std::int64_t huge = std::numeric_limits<std::int64_t>::max();
    CHECK(
        descs(run_op(OpKind::avg_pool2d, {T({1, 1, 6, 6})}, A({{"kernel", Ints{3, 3}}, {"stride", Ints{huge, huge}}, {"ceil_mode", true}}))
                  .out) == "f32[1,1,1,1]");
    CHECK_INPUT_ERROR(run_op(OpKind::max_pool2d, {T({1, 1, 2, 2})}, A({{"kernel", Ints{3, 3}}})), "exceeds the padded height");
    CHECK_INPUT_ERROR(run_op(OpKind::max_pool2d, {T({1, 4, 4})}, A({{"kernel", Ints{2, 2}}})), "x must be [N, C, H, W]");
    CHECK_INPUT_ERROR(run_op(OpKind::avg_pool2d, {T({1, 1, 4, 4})}, A({{"kernel", Ints{2, 2}}, {"dilation", Ints{2, 2}}})),
                      "no attribute 'dilation'");
    CHECK_INPUT_ERROR(run_op(OpKind::max_pool2d, {T({1, 1, 4, 4})}, {}), "missing attribute 'kernel'");
}

TEST_CASE("ops_test: where broadcasts its three operands and wants an integer condition", "[ops][onnx]") {
    CHECK(descs(run_op(OpKind::where, {T({1, 1, 4, 4}, DType::u8), T({2, 3, 4, 4}), T({})}).out) == "f32[2,3,4,4]");
    CHECK_INPUT_ERROR(run_op(OpKind::where, {T({4}), T({4}), T({4})}), "condition must be u8");
    CHECK_INPUT_ERROR(run_op(OpKind::where, {T({4}, DType::u8), T({4}), T({4}, DType::bf16)}), "inputs must share a dtype");
}

// ---------------------------------------------------------------------------------------------
TEST_CASE("ops_test: shift and pow on the reference kernels", "[ops]") {
    const TensorDesc d = T({4}, DType::f64);
    const HostTensor x{d, {-2.0, -0.5, 0.0, 3.0}};
    const auto ref = [&](OpKind k, const Attrs& a, const HostTensor& in) {
        return run_reference(k, {&in}, a, {d}, RefPrecision::f64)[0].data;
    };
    CHECK(ref(OpKind::shift, A({{"offset", 1.5}}), x) == std::vector<double>{-0.5, 1.0, 1.5, 4.5});
    // cubes and squares of negative numbers, as torch.pow(x, 3.0) computes them
    CHECK(ref(OpKind::pow, A({{"exponent", 3.0}}), x) == std::vector<double>{-8.0, -0.125, 0.0, 27.0});
    CHECK(ref(OpKind::pow, A({{"exponent", 2.0}}), x) == std::vector<double>{4.0, 0.25, 0.0, 9.0});
    CHECK(ref(OpKind::pow, A({{"exponent", 0.0}}), x) == std::vector<double>{1.0, 1.0, 1.0, 1.0});
    const HostTensor pos{d, {0.25, 1.0, 4.0, 9.0}};
    CHECK(ref(OpKind::pow, A({{"exponent", 0.5}}), pos) == std::vector<double>{0.5, 1.0, 2.0, 3.0});
    const auto r = ref(OpKind::pow, A({{"exponent", 1.5}}), pos);
    CHECK(r[2] == Approx(8.0));
    CHECK(r[3] == Approx(27.0));
}

TEST_CASE("ops_test: cumsum and topk follow ONNX CumSum and TopK", "[ops][onnx]") {
    // Values from the operators' definitions (onnx/docs/Operators.md): CumSum of [1 2 3 4 5 6] as
    // [2, 3] along axis 1 is [1 3 6; 4 9 15]; exclusive shifts by one, reverse runs from the end.
    const HostTensor x{T({2, 3}, DType::f64), {1, 2, 3, 4, 5, 6}};
    const auto cumsum = [&](bool exclusive, bool reverse) {
        const Attrs a = A({{"axis", std::int64_t{1}}, {"exclusive", exclusive}, {"reverse", reverse}});
        return run_reference(OpKind::cumsum, {&x}, a, {run_op(OpKind::cumsum, {x.desc}, a).out[0]}, RefPrecision::f64)[0].data;
    };
    CHECK(cumsum(false, false) == std::vector<double>{1, 3, 6, 4, 9, 15});
    CHECK(cumsum(true, false) == std::vector<double>{0, 1, 3, 0, 4, 9});
    CHECK(cumsum(false, true) == std::vector<double>{6, 5, 3, 15, 11, 6});
    CHECK(cumsum(true, true) == std::vector<double>{5, 3, 0, 11, 6, 0});
    const Attrs down = A({{"axis", std::int64_t{0}}});
    CHECK(run_reference(OpKind::cumsum, {&x}, down, {x.desc}, RefPrecision::f64)[0].data == std::vector<double>{1, 2, 3, 5, 7, 9});

    // TopK of [0 1 2 3; 4 5 6 7; 8 9 10 11] with k 3: [3 2 1; 7 6 5; 11 10 9], indices [3 2 1] each
    // row; smallest: [0 1 2]; ties keep the lower index first.
    const HostTensor m{T({3, 4}, DType::f64), {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}};
    const auto topk = [&](const HostTensor& in, bool largest) {
        const Attrs a = A({{"k", std::int64_t{3}}, {"largest", largest}});
        return run_reference(OpKind::topk, {&in}, a, run_op(OpKind::topk, {in.desc}, a).out, RefPrecision::f64);
    };
    const auto big = topk(m, true);
    CHECK(big[0].data == std::vector<double>{3, 2, 1, 7, 6, 5, 11, 10, 9});
    CHECK(big[1].data == std::vector<double>{3, 2, 1, 3, 2, 1, 3, 2, 1});
    CHECK(big[1].desc.dtype == DType::int64);
    CHECK(topk(m, false)[0].data == std::vector<double>{0, 1, 2, 4, 5, 6, 8, 9, 10});
    const HostTensor ties{T({1, 4}, DType::f64), {5, 7, 5, 7}};
    CHECK(topk(ties, true)[1].data == std::vector<double>{1, 3, 0});

    CHECK_INPUT_ERROR(run_op(OpKind::topk, {m.desc}, A({{"k", std::int64_t{5}}})), "attribute 'k' must lie in [1, 4]");
    CHECK_INPUT_ERROR(run_op(OpKind::cumsum, {m.desc}, A({{"axis", std::int64_t{2}}})), "axis");
}
