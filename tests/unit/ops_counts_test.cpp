// Every op kind's shape inference and work counts on hand-computed cases (docs/ARCHITECTURE.md conventions:
// a multiply-add is 2 FLOPs; bytes are what an ideal kernel reads and writes once; views move
// nothing; transcendentals are counted apart). Each expected value shows its arithmetic.
#include <catch2/catch.hpp>
#include <set>

#include "ops/op_rule.hpp"
#include "ops_support.hpp"

using namespace roofline;

namespace {

using Result = test::Ran;
Result run(OpKind k, const std::vector<TensorDesc>& in, const Attrs& a = {}) { return test::run_op(k, in, a); }
constexpr auto attrs = test::A;

TensorDesc t(Shape s, DType d = DType::f32) { return {std::move(s), d}; }

}  // namespace

TEST_CASE("matmul: plain, transposed, batched with broadcasting", "[ops][matmul]") {
    SECTION("[4,6] x [6,5]") {
        const Result r = run(OpKind::matmul, {t({4, 6}), t({6, 5})});
        CHECK(r.out[0] == t({4, 5}));
        CHECK(r.work.matrix_flops == 2 * 4 * 5 * 6);      // 2MNK = 240
        CHECK(r.work.bytes_read == (4 * 6 + 6 * 5) * 4);  // 54 f32 elements
        CHECK(r.work.bytes_written == 4 * 5 * 4);
        CHECK(r.work.vector_flops == 0);
    }
    SECTION("transpose_a and transpose_b") {
        const Result ta = run(OpKind::matmul, {t({6, 4}), t({6, 5})}, attrs({{"transpose_a", true}}));
        CHECK(ta.out[0] == t({4, 5}));
        const Result tb = run(OpKind::matmul, {t({4, 6}), t({5, 6})}, attrs({{"transpose_b", true}}));
        CHECK(tb.out[0] == t({4, 5}));
        CHECK(tb.work.matrix_flops == 240);
    }
    SECTION("batch dims broadcast: [2,1,4,5] x [3,5,6] -> [2,3,4,6]") {
        const Result r = run(OpKind::matmul, {t({2, 1, 4, 5}, DType::bf16), t({3, 5, 6}, DType::bf16)});
        CHECK(r.out[0] == t({2, 3, 4, 6}, DType::bf16));
        CHECK(r.work.matrix_flops == 2 * (2 * 3) * 4 * 6 * 5);    // 6 batch entries x 2MNK = 1440
        CHECK(r.work.bytes_read == (2 * 4 * 5 + 3 * 5 * 6) * 2);  // each operand read once
        CHECK(r.work.bytes_written == 2 * 3 * 4 * 6 * 2);
    }
    SECTION("int8 accumulates into int32, fp8 is written as bf16") {
        CHECK(run(OpKind::matmul, {t({8, 16}, DType::int8), t({16, 4}, DType::int8)}).out[0] == t({8, 4}, DType::int32));
        CHECK(run(OpKind::matmul, {t({8, 16}, DType::fp8_e4m3), t({16, 4}, DType::fp8_e4m3)}).out[0] == t({8, 4}, DType::bf16));
    }
    SECTION("errors") {
        CHECK_THROWS_WITH(run(OpKind::matmul, {t({4, 6}), t({7, 5})}),
                          Catch::Contains("inner dimensions differ") && Catch::Contains("K 6 vs 7"));
        CHECK_THROWS_WITH(run(OpKind::matmul, {t({6}), t({6, 5})}), Catch::Contains("rank >= 2"));
        CHECK_THROWS_WITH(run(OpKind::matmul, {t({4, 6}), t({6, 5}, DType::f16)}), Catch::Contains("must share a dtype"));
        CHECK_THROWS_WITH(run(OpKind::matmul, {t({2, 4, 6}), t({3, 6, 5})}), Catch::Contains("do not broadcast"));
        CHECK_THROWS_WITH(run(OpKind::matmul, {t({4, 6})}), Catch::Contains("matmul takes 2 inputs, got 1"));
        CHECK_THROWS_WITH(run(OpKind::matmul, {t({4, 6}), t({6, 5})}, attrs({{"transpose_c", true}})),
                          Catch::Contains("matmul has no attribute 'transpose_c'"));
    }
}

TEST_CASE("linear with and without bias", "[ops][matrix]") {
    const Result nb = run(OpKind::linear, {t({2, 3, 8}), t({16, 8})});
    CHECK(nb.out[0] == t({2, 3, 16}));
    CHECK(nb.work.matrix_flops == 2 * 6 * 8 * 16);  // rows 6, in 8, out 16: 1536
    CHECK(nb.work.vector_flops == 0);
    const Result b = run(OpKind::linear, {t({2, 3, 8}), t({16, 8}), t({16})});
    CHECK(b.work.vector_flops == 6 * 16);  // one bias add per output
    CHECK(b.work.bytes_read == (48 + 128 + 16) * 4);
    CHECK(b.work.bytes_written == 96 * 4);
    CHECK_THROWS_WITH(run(OpKind::linear, {t({2, 8}), t({16, 7})}),
                      Catch::Contains("x has 8 input features but weight f32[16,7] expects 7"));
    CHECK_THROWS_WITH(run(OpKind::linear, {t({2, 8}), t({16, 8}), t({15})}), Catch::Contains("bias must be f32[16]"));
}

TEST_CASE("conv2d: stride, padding, dilation, groups", "[ops][matrix]") {
    SECTION("3x3, stride 2, padding 1 on 1x3x32x32 -> 1x8x16x16") {
        const Result r = run(OpKind::conv2d, {t({1, 3, 32, 32}), t({8, 3, 3, 3}), t({8})},
                             attrs({{"stride", std::vector<std::int64_t>{2, 2}}, {"padding", std::vector<std::int64_t>{1, 1}}}));
        // Ho = floor((32 + 2 - 3) / 2) + 1 = 16
        CHECK(r.out[0] == t({1, 8, 16, 16}));
        CHECK(r.work.matrix_flops == 2LL * 1 * 8 * 16 * 16 * 3 * 3 * 3);  // 2 N Co Ho Wo (C/g) kh kw = 110,592
        CHECK(r.work.vector_flops == 8 * 16 * 16);                        // bias
        CHECK(r.work.bytes_read == (3 * 32 * 32 + 8 * 27 + 8) * 4);
    }
    SECTION("dilation 2 and groups 4 (depthwise-style)") {
        const Result r = run(OpKind::conv2d, {t({2, 8, 10, 10}), t({8, 2, 3, 3})},
                             attrs({{"dilation", std::vector<std::int64_t>{2, 2}}, {"groups", std::int64_t{4}}}));
        // extent = 2*(3-1)+1 = 5; Ho = (10 - 5) + 1 = 6
        CHECK(r.out[0] == t({2, 8, 6, 6}));
        CHECK(r.work.matrix_flops == 2LL * 2 * 8 * 6 * 6 * 2 * 3 * 3);  // C/g = 2: 20,736
    }
    CHECK_THROWS_WITH(run(OpKind::conv2d, {t({1, 6, 8, 8}), t({8, 2, 3, 3})}, attrs({{"groups", std::int64_t{4}}})),
                      Catch::Contains("groups 4 must divide C_in 6"));
    CHECK_THROWS_WITH(run(OpKind::conv2d, {t({1, 3, 2, 2}), t({8, 3, 3, 3})}), Catch::Contains("kernel extent 3 exceeds padded input 2"));
}

TEST_CASE("unary ops: per-element plain FLOPs and transcendentals", "[ops][elementwise]") {
    struct Case {
        OpKind k;
        Attrs a;
        std::int64_t vector, transcendental;
    };
    const Case cases[] = {
        {OpKind::relu, {}, 1, 0},
        {OpKind::gelu, {}, 8, 1},
        {OpKind::gelu, attrs({{"approximate", std::string("erf")}}), 4, 1},
        {OpKind::silu, {}, 3, 1},
        {OpKind::sigmoid, {}, 3, 1},
        {OpKind::tanh, {}, 0, 1},
        {OpKind::exp, {}, 0, 1},
        {OpKind::log, {}, 0, 1},
        {OpKind::sin, {}, 0, 1},
        {OpKind::sqrt, {}, 0, 1},
        {OpKind::rsqrt, {}, 0, 1},
        {OpKind::neg, {}, 1, 0},
        {OpKind::scale, attrs({{"factor", 0.125}}), 1, 0},
        {OpKind::shift, attrs({{"offset", 1.0}}), 1, 0},
        {OpKind::pow, attrs({{"exponent", 3.0}}), 2, 0},
    };
    std::set<OpKind> covered;
    for (const Case& c : cases) {
        INFO(op_name(c.k));
        const Result r = run(c.k, {t({10, 100}, DType::bf16)}, c.a);
        CHECK(r.out[0] == t({10, 100}, DType::bf16));
        CHECK(r.work.vector_flops == 1000 * c.vector);
        CHECK(r.work.transcendentals == 1000 * c.transcendental);
        CHECK(r.work.bytes_read == 2000);
        CHECK(r.work.bytes_written == 2000);
        covered.insert(c.k);
    }
    CHECK(covered.size() == 14);  // every unary kind but erf
    CHECK_THROWS_WITH(run(OpKind::scale, {t({4})}), Catch::Contains("missing attribute 'factor'"));
    CHECK_THROWS_WITH(run(OpKind::pow, {t({4})}), Catch::Contains("pow: missing attribute 'exponent' (a number)"));
    CHECK_THROWS_WITH(run(OpKind::shift, {t({4})}), Catch::Contains("shift: missing attribute 'offset' (a number)"));
    CHECK_THROWS_WITH(run(OpKind::pow, {t({4})}, attrs({{"factor", 2.0}})),
                      Catch::Contains("pow has no attribute 'factor' (accepted: exponent)"));
    CHECK_THROWS_WITH(run(OpKind::gelu, {t({4})}, attrs({{"approximate", std::string("fast")}})), Catch::Contains("\"tanh\" or \"erf\""));
    CHECK_THROWS_WITH(run(OpKind::relu, {t({4})}, attrs({{"factor", 2.0}})),
                      Catch::Contains("relu has no attribute 'factor' (accepted: none)"));
    CHECK_THROWS_WITH(run(OpKind::exp, {t({4}, DType::int64)}), Catch::Contains("must be floating point"));
}

TEST_CASE("binary ops broadcast like numpy", "[ops][elementwise]") {
    for (OpKind k : {OpKind::add, OpKind::sub, OpKind::mul, OpKind::div, OpKind::maximum}) {
        INFO(op_name(k));
        const Result r = run(k, {t({4, 1, 3}), t({5, 1})});
        CHECK(r.out[0] == t({4, 5, 3}));
        CHECK(r.work.vector_flops == 60);          // one per output element
        CHECK(r.work.bytes_read == (12 + 5) * 4);  // each operand read once
        CHECK(r.work.bytes_written == 60 * 4);
    }
    CHECK_THROWS_WITH(run(OpKind::add, {t({4, 3}), t({5, 3})}), Catch::Contains("shapes [4,3] and [5,3] do not broadcast"));
    CHECK_THROWS_WITH(run(OpKind::add, {t({4}), t({4}, DType::bf16)}), Catch::Contains("must share a dtype"));
}

TEST_CASE("softmax, layernorm, rmsnorm", "[ops][normalization]") {
    const Result sm = run(OpKind::softmax, {t({6, 50})}, attrs({{"axis", std::int64_t{-1}}}));
    CHECK(sm.work.vector_flops == 300 * 4);  // max, subtract, sum, divide
    CHECK(sm.work.transcendentals == 300);   // exp
    CHECK_THROWS_WITH(run(OpKind::softmax, {t({6, 50})}, attrs({{"axis", std::int64_t{2}}})),
                      Catch::Contains("axis 2 is out of range for rank 2"));

    const Result ln = run(OpKind::layernorm, {t({6, 50}), t({50}), t({50})});
    CHECK(ln.out[0] == t({6, 50}));
    CHECK(ln.work.vector_flops == 300 * 7 + 6 * 3);  // 5 + weight + bias per element, 3 per row
    CHECK(ln.work.transcendentals == 6);             // one rsqrt per row
    CHECK(ln.work.bytes_read == (300 + 100) * 4);
    const Result ln0 = run(OpKind::layernorm, {t({6, 50})});
    CHECK(ln0.work.vector_flops == 300 * 5 + 6 * 3);
    CHECK_THROWS_WITH(run(OpKind::layernorm, {t({6, 50}), t({49})}), Catch::Contains("must have shape [50]"));

    const Result rms = run(OpKind::rmsnorm, {t({6, 50}), t({50})});
    CHECK(rms.work.vector_flops == 300 * 4 + 6 * 2);
    CHECK(rms.work.transcendentals == 6);
}

TEST_CASE("reductions over axes", "[ops][reduction]") {
    const Result s = run(OpKind::reduce_sum, {t({2, 3, 4})}, attrs({{"axes", std::vector<std::int64_t>{-1}}}));
    CHECK(s.out[0] == t({2, 3}));
    CHECK(s.work.vector_flops == 24);
    const Result m = run(OpKind::reduce_mean, {t({2, 3, 4})}, attrs({{"axes", std::vector<std::int64_t>{0, 2}}, {"keepdim", true}}));
    CHECK(m.out[0] == t({1, 3, 1}));
    CHECK(m.work.vector_flops == 24 + 3);  // adds plus one divide per output
    const Result all = run(OpKind::reduce_max, {t({2, 3, 4})});
    CHECK(all.out[0] == t({}));
    CHECK(all.work.bytes_written == 4);
    CHECK_THROWS_WITH(run(OpKind::reduce_sum, {t({2, 3})}, attrs({{"axes", std::vector<std::int64_t>{1, -1}}})),
                      Catch::Contains("repeats an axis"));
}

TEST_CASE("embedding reads only the gathered rows", "[ops][movement]") {
    const Result r = run(OpKind::embedding, {t({50000, 64}, DType::bf16), t({4, 10}, DType::int64)});
    CHECK(r.out[0] == t({4, 10, 64}, DType::bf16));
    CHECK(r.work.bytes_read == 40 * 8 + 40 * 64 * 2);  // indices + 40 rows of 64 bf16
    CHECK(r.work.bytes_written == 40 * 64 * 2);
    CHECK(r.work.flops() == 0);
    CHECK_THROWS_WITH(run(OpKind::embedding, {t({10, 4}), t({3})}), Catch::Contains("indices must be int32 or int64"));
}

TEST_CASE("layout ops are views unless copy is requested", "[ops][movement]") {
    const Result tr = run(OpKind::transpose, {t({2, 3, 4})}, attrs({{"dim0", std::int64_t{0}}, {"dim1", std::int64_t{2}}}));
    CHECK(tr.out[0] == t({4, 3, 2}));
    CHECK(tr.work == Work{});
    const Result pc = run(OpKind::permute, {t({2, 3, 4})}, attrs({{"perm", std::vector<std::int64_t>{1, 2, 0}}, {"copy", true}}));
    CHECK(pc.out[0] == t({3, 4, 2}));
    CHECK(pc.work.bytes_read == 96);
    CHECK(pc.work.bytes_written == 96);
    CHECK_THROWS_WITH(run(OpKind::permute, {t({2, 3})}, attrs({{"perm", std::vector<std::int64_t>{0, 0}}})),
                      Catch::Contains("not a permutation"));

    const Result rs = run(OpKind::reshape, {t({2, 3, 4})}, attrs({{"shape", std::vector<std::int64_t>{-1, 4}}}));
    CHECK(rs.out[0] == t({6, 4}));
    CHECK(rs.work == Work{});
    CHECK_THROWS_WITH(run(OpKind::reshape, {t({2, 3, 4})}, attrs({{"shape", std::vector<std::int64_t>{5, 5}}})),
                      Catch::Contains("(24 elements) to [5,5] (25 elements)"));

    const Result sp = run(OpKind::split, {t({2, 12})}, attrs({{"axis", std::int64_t{1}}, {"sizes", std::vector<std::int64_t>{4, 8}}}));
    REQUIRE(sp.out.size() == 2);
    CHECK(sp.out[1] == t({2, 8}));
    CHECK(sp.work == Work{});
    CHECK_THROWS_WITH(run(OpKind::split, {t({2, 12})}, attrs({{"axis", std::int64_t{1}}, {"sizes", std::vector<std::int64_t>{4, 4}}})),
                      Catch::Contains("sums to 8"));

    const Result cc = run(OpKind::concat, {t({2, 3}), t({2, 5})}, attrs({{"axis", std::int64_t{1}}}));
    CHECK(cc.out[0] == t({2, 8}));
    CHECK(cc.work.bytes_read == 64);
    CHECK(cc.work.bytes_written == 64);
    CHECK_THROWS_WITH(run(OpKind::concat, {t({2, 3}), t({3, 5})}, attrs({{"axis", std::int64_t{1}}})), Catch::Contains("does not match"));
}

TEST_CASE("dropout, causal mask, cross-entropy", "[ops][training]") {
    const Result d = run(OpKind::dropout, {t({8, 16}, DType::bf16)}, attrs({{"p", 0.1}}));
    REQUIRE(d.out.size() == 2);
    CHECK(d.out[1] == t({8, 16}, DType::u8));
    CHECK(d.work.vector_flops == 2 * 128);
    CHECK(d.work.bytes_written == 128 * 2 + 128);  // y (bf16) and the mask (u8)
    CHECK_THROWS_WITH(run(OpKind::dropout, {t({4})}, attrs({{"p", 1.0}})), Catch::Contains("'p' must be in [0, 1)"));

    const Result m = run(OpKind::causal_mask, {t({2, 5, 5})});
    CHECK(m.work.vector_flops == 50);
    CHECK_THROWS_WITH(run(OpKind::causal_mask, {t({5})}), Catch::Contains("rank >= 2"));

    const Result ce = run(OpKind::cross_entropy, {t({4, 10}), t({4}, DType::int64)});
    CHECK(ce.out[0] == t({}, DType::f32));
    CHECK(ce.work.vector_flops == 40 * 3 + 4 * 2 + 1);  // per logit 3; per row 2; final divide
    CHECK(ce.work.transcendentals == 40 + 4);           // exp per logit, log per row
    CHECK(ce.work.bytes_read == 40 * 4 + 4 * 8);
    CHECK(run(OpKind::cross_entropy, {t({4, 10}), t({4}, DType::int32)}, attrs({{"reduction", std::string("none")}})).out[0] == t({4}));
    CHECK_THROWS_WITH(run(OpKind::cross_entropy, {t({4, 10}), t({5}, DType::int64)}), Catch::Contains("must have the shape of logits"));
}

TEST_CASE("attention is the sum of its materialised parts", "[ops][attention]") {
    const TensorDesc q = t({2, 4, 16, 8}, DType::bf16), k = t({2, 4, 16, 8}, DType::bf16), v = t({2, 4, 16, 8}, DType::bf16);
    const Result a = run(OpKind::attention, {q, k, v}, attrs({{"causal", true}}));
    CHECK(a.out[0] == t({2, 4, 16, 8}, DType::bf16));
    // By hand: batch 8 heads x (QK^T 2*16*16*8 + PV 2*16*8*16) = 8 * 8192 = 65,536 matrix FLOPs.
    CHECK(a.work.matrix_flops == 65'536);
    // scores 8 x 16 x 16 = 2048 elements: scale 1 + mask 1 + softmax 4 = 6 each.
    CHECK(a.work.vector_flops == 2048 * 6);
    CHECK(a.work.transcendentals == 2048);
    // Against the parts' own rules: three kernels, the scale and the mask applied in the softmax's
    // pass (their FLOPs, not their traffic).
    const TensorDesc s = t({2, 4, 16, 16}, DType::bf16);
    Work parts = run(OpKind::matmul, {q, k}, attrs({{"transpose_b", true}})).work;
    parts.vector_flops += run(OpKind::scale, {s}, attrs({{"factor", 0.35}})).work.vector_flops;
    parts.vector_flops += run(OpKind::causal_mask, {s}).work.vector_flops;
    parts += run(OpKind::softmax, {s}).work;
    parts += run(OpKind::matmul, {s, v}).work;
    CHECK(a.work == parts);
    const Result nc = run(OpKind::attention, {q, k, v});
    CHECK(nc.work.vector_flops == 2048 * 5);  // no mask
    CHECK_THROWS_WITH(run(OpKind::attention, {q, k, t({2, 4, 15, 8}, DType::bf16)}), Catch::Contains("differ in sequence length"));
}

TEST_CASE("sizes that overflow int64 are input errors", "[ops][errors]") {
    const std::int64_t big = std::int64_t{1} << 32;
    CHECK_THROWS_WITH(run(OpKind::relu, {t({big, big, 4})}), Catch::Contains("overflow"));
    // Every tensor fits (2^42 elements) but 2 M N K = 2 * 2^63 does not.
    const std::int64_t n = std::int64_t{1} << 21;
    const TensorDesc a = t({n, n}, DType::bf16);
    const TensorDesc in[2] = {a, a};
    const auto out = infer_outputs(OpKind::matmul, in, {});
    CHECK(out[0] == a);
    CHECK_THROWS_WITH(count_work(OpKind::matmul, in, out, {}), Catch::Contains("matmul: int64 overflow computing"));
}

TEST_CASE("every op kind has a rule and a unique name", "[ops]") {
    std::set<std::string_view> names;
    for (OpKind k : kAllOpKinds) {
        CHECK(parse_op(op_name(k)) == k);
        CHECK(names.insert(op_name(k)).second);
        CHECK(rule_of(k).infer != nullptr);
        CHECK(rule_of(k).work != nullptr);
    }
    CHECK_FALSE(parse_op("swishy").has_value());
}
