// Finite differences against autodiff, in float64 on the CPU reference executor: every
// differentiable op kind (with broadcasting and fan-out), the mlp template and a tiny GPT.
// Tolerance: relative error below 1e-6, measured as |analytic - numeric| / max(|analytic|,
// |numeric|, 1e-3) so that gradients near zero are held to 1e-9 absolute. Central differences with
// h = 1e-6 have truncation error O(h^2) ~ 1e-12 and rounding error ~ 1e-16 |L| / h ~ 1e-10 here.
#include <catch2/catch.hpp>
#include <cmath>
#include <nlohmann/json.hpp>

#include "model/autodiff.hpp"
#include "model/executor.hpp"
#include "model/model_json.hpp"
#include "ops/grad.hpp"
#include "ops/op_def.hpp"

using namespace roofline;

namespace {

const TensorDesc f64(Shape s) { return TensorDesc{std::move(s), DType::f64}; }

struct Check {
    double max_error = 0;
    int compared = 0;
};

Check grad_check(const Graph& fwd, std::map<TensorId, HostTensor> given, int per_param = 6) {
    for (std::size_t t = 0; t < fwd.tensors().size(); ++t) {
        if (fwd.tensors()[t].producer == kNoNode && !given.count(static_cast<TensorId>(t))) {
            given[static_cast<TensorId>(t)] = deterministic_value(fwd, static_cast<TensorId>(t), 7);
        }
    }
    TrainingOptions opt;
    opt.optimizer = Optimizer::sgd;
    opt.momentum = 0;
    opt.weight_decay = 0;
    const Graph train = build_training_step(fwd, opt);
    const auto values = execute(train, given, RefPrecision::f64);
    const TensorId loss = fwd.outputs().front();
    auto loss_at = [&](const std::map<TensorId, HostTensor>& g) {
        return execute(fwd, g, RefPrecision::f64)[static_cast<std::size_t>(loss)].data[0];
    };
    Check c;
    const double h = 1e-6;
    for (const Node& n : train.nodes()) {
        if (n.kind != OpKind::sgd_update) continue;
        const TensorId p = n.inputs[0], gt = n.inputs[1];
        const std::size_t size = given[p].data.size();
        const std::size_t step = std::max<std::size_t>(1, size / static_cast<std::size_t>(per_param));
        for (std::size_t e = 0; e < size; e += step) {
            auto plus = given, minus = given;
            plus[p].data[e] += h;
            minus[p].data[e] -= h;
            const double numeric = (loss_at(plus) - loss_at(minus)) / (2 * h);
            const double analytic = values[static_cast<std::size_t>(gt)].data[e];
            const double err = std::fabs(analytic - numeric) / std::max({std::fabs(analytic), std::fabs(numeric), 1e-3});
            INFO(fwd.tensor(p).name << "[" << e << "] analytic " << analytic << " numeric " << numeric);
            CHECK(err < 1e-6);
            c.max_error = std::max(c.max_error, err);
            ++c.compared;
        }
    }
    return c;
}

// loss = sum(op(params..., inputs...)[0] * R) with a fixed random R, so every output element
// carries a different weight; scalar outputs are the loss themselves.
Graph op_graph(OpKind k, const std::vector<TensorDesc>& params, const Attrs& attrs, const std::vector<TensorDesc>& inputs,
               bool softmax_after = false) {
    Graph g;
    g.origin = "gradcheck";
    std::vector<TensorId> ins;
    for (std::size_t i = 0; i < params.size(); ++i) ins.push_back(g.add_parameter("p" + std::to_string(i), params[i]));
    for (std::size_t i = 0; i < inputs.size(); ++i) ins.push_back(g.add_input("in" + std::to_string(i), inputs[i]));
    TensorId y = g.node(g.add_node("op", k, ins, attrs, {})).outputs[0];
    if (softmax_after) y = g.node(g.add_node("sm", OpKind::softmax, {y}, {}, {})).outputs[0];
    if (g.tensor(y).desc.rank() > 0) {
        const TensorId r = g.add_input("R", g.tensor(y).desc);
        const TensorId w = g.node(g.add_node("weigh", OpKind::mul, {y, r}, {}, {})).outputs[0];
        y = g.node(g.add_node("loss", OpKind::reduce_sum, {w}, {}, {})).outputs[0];
    }
    g.mark_output(y);
    return g;
}

HostTensor positive(const Graph& g, TensorId t) {
    HostTensor h = deterministic_value(g, t, 3);
    for (double& v : h.data) v = 0.5 + std::fabs(v);
    return h;
}

}  // namespace

TEST_CASE("finite differences match autodiff for every differentiable op kind", "[gradcheck]") {
    const TensorDesc m = f64({3, 4}), v = f64({4});
    struct Case {
        OpKind k;
        std::vector<TensorDesc> params;
        Attrs attrs;
        std::vector<TensorDesc> inputs;
        bool positive_inputs = false;
        bool softmax_after = false;
    };
    std::vector<Case> cases = {
        {OpKind::matmul, {m, f64({4, 5})}, {}, {}},
        {OpKind::matmul, {f64({4, 3}), f64({5, 4})}, attr2("transpose_a", true, "transpose_b", true), {}},
        {OpKind::matmul, {f64({2, 3, 4}), f64({5, 4})}, attr("transpose_b", true), {}},        // shared weight, batch folded
        {OpKind::matmul, {f64({2, 1, 3, 4}), f64({3, 4, 2})}, {}, {}},                          // batch broadcasting
        {OpKind::linear, {f64({2, 3, 4}), f64({5, 4}), f64({5})}, {}, {}},
        {OpKind::conv2d, {f64({2, 4, 5, 5}), f64({6, 2, 3, 3}), f64({6})},
         attr2("groups", std::int64_t{2}, "stride", std::vector<std::int64_t>{2, 1}), {}},
        {OpKind::conv2d, {f64({1, 2, 6, 6}), f64({3, 2, 2, 2})}, attr2("dilation", std::vector<std::int64_t>{2, 2}, "padding", std::vector<std::int64_t>{1, 0}), {}},
        {OpKind::add, {m, v}, {}, {}},       {OpKind::sub, {m, f64({3, 1})}, {}, {}},
        {OpKind::mul, {m, v}, {}, {}},       {OpKind::div, {m, v}, {}, {}, true},
        {OpKind::maximum, {m, v}, {}, {}},
        {OpKind::pow, {m, v}, {}, {}, true},  // a tensor exponent, broadcast (torch.pow(x, y)); x > 0 for log(x)
        {OpKind::softmax, {m}, attr("axis", std::int64_t{0}), {}},
        {OpKind::layernorm, {m, v, v}, {}, {}}, {OpKind::layernorm, {m}, {}, {}},
        {OpKind::rmsnorm, {m, v}, {}, {}},
        {OpKind::reduce_sum, {f64({2, 3, 4})}, attr("axes", std::vector<std::int64_t>{0, 2}), {}},
        {OpKind::reduce_mean, {m}, attr2("axes", std::vector<std::int64_t>{1}, "keepdim", true), {}},
        {OpKind::reduce_max, {m}, attr("axes", std::vector<std::int64_t>{-1}), {}},
        {OpKind::embedding, {f64({7, 4})}, {}, {TensorDesc{{5}, DType::int64}}},
        {OpKind::transpose, {f64({2, 3, 4})}, attr2("dim0", std::int64_t{0}, "dim1", std::int64_t{2}), {}},
        {OpKind::permute, {f64({2, 3, 4})}, attr2("perm", std::vector<std::int64_t>{1, 2, 0}, "copy", true), {}},
        {OpKind::reshape, {m}, attr("shape", std::vector<std::int64_t>{2, -1}), {}},
        {OpKind::concat, {m, f64({3, 2})}, attr("axis", std::int64_t{1}), {}},
        {OpKind::split, {f64({3, 6})}, attr2("axis", std::int64_t{1}, "sizes", std::vector<std::int64_t>{2, 4}), {}},
        {OpKind::dropout, {f64({4, 8})}, attr("p", 0.25), {}},
        {OpKind::causal_mask, {f64({2, 4, 4})}, {}, {}, false, true},
        {OpKind::cross_entropy, {f64({5, 6})}, {}, {TensorDesc{{5}, DType::int64}}},
        {OpKind::cross_entropy, {f64({2, 3, 6})}, attr("reduction", std::string("sum")), {TensorDesc{{2, 3}, DType::int64}}},
        {OpKind::attention, {f64({2, 4, 3}), f64({2, 5, 3}), f64({2, 5, 2})}, {}, {}},
        {OpKind::attention, {f64({2, 4, 3}), f64({2, 4, 3}), f64({2, 4, 3})}, attr("causal", true), {}},
        {OpKind::scale, {m}, attr("factor", -0.75), {}},
        {OpKind::gelu, {m}, attr("approximate", std::string("erf")), {}},
        {OpKind::cast, {m}, attr("dtype", std::string("f64")), {}},  // f64 -> f64: exercises the rule exactly
        {OpKind::expand, {f64({3, 1})}, attr("shape", std::vector<std::int64_t>{2, 3, 4}), {}},  // new leading and size-1 axes
        // where(c, a, b): c is a u8 mask of 0s and 1s (no gradient); b broadcasts, so its gradient is summed down
        {OpKind::where, {TensorDesc{{3, 4}, DType::u8}, m, v}, {}, {}},
        // slice: two axes (one from the start, one in the middle, a negative start) and a one-axis slice to the end
        {OpKind::slice, {f64({3, 5, 4})}, attr2("starts", std::vector<std::int64_t>{1, -3}, "ends", std::vector<std::int64_t>{3, 3}), {}},
        {OpKind::slice, {m}, attr2("starts", std::vector<std::int64_t>{2}, "ends", std::vector<std::int64_t>{100}), {}},
        // strided slices (the MoE experts' row gathers): rows 1, 4 of 7 and columns 0, 2, 4 of 5 (the last spread
        // zeros trimmed); rows 1, 3, 5 of 10 (zeros after them)
        {OpKind::slice, {f64({7, 5})},
         [] { Attrs a = attr2("starts", std::vector<std::int64_t>{1, 0}, "ends", std::vector<std::int64_t>{7, 5});
              a.set("steps", std::vector<std::int64_t>{3, 2}); return a; }(), {}},
        {OpKind::slice, {f64({10, 3})},
         [] { Attrs a = attr2("starts", std::vector<std::int64_t>{1}, "ends", std::vector<std::int64_t>{6});
              a.set("steps", std::vector<std::int64_t>{2}); return a; }(), {}},
        // a strided slice: step 2 from 1 on an axis of 5 (rows 1, 3), step 3 from 0 on an axis of 4 (columns 0, 3)
        {OpKind::slice, {f64({5, 4})}, [] {
             Attrs at = attr2("starts", std::vector<std::int64_t>{1, 0}, "ends", std::vector<std::int64_t>{5, 4});
             at.set("steps", std::vector<std::int64_t>{2, 3});
             return at;
         }(), {}},
        // pad: one row added before, one column cropped at the start and two added at the end
        {OpKind::pad, {m}, attr("pads", std::vector<std::int64_t>{1, -1, 0, 2}), {}},
        // pooling: overlapping windows with padding, dilation and ceil mode; average with and without the padding counted
        {OpKind::max_pool2d, {f64({2, 2, 5, 5})}, attr2("kernel", std::vector<std::int64_t>{3, 3}, "stride", std::vector<std::int64_t>{2, 2}), {}},
        {OpKind::max_pool2d, {f64({1, 2, 6, 6})},
         [] { Attrs a = attr2("kernel", std::vector<std::int64_t>{2, 2}, "dilation", std::vector<std::int64_t>{2, 1});
              a.set("padding", std::vector<std::int64_t>{1, 1}); a.set("ceil_mode", true); a.set("stride", std::vector<std::int64_t>{2, 2}); return a; }(), {}},
        {OpKind::avg_pool2d, {f64({2, 2, 5, 5})}, attr2("kernel", std::vector<std::int64_t>{3, 3}, "padding", std::vector<std::int64_t>{1, 1}), {}},
        {OpKind::avg_pool2d, {f64({1, 2, 5, 5})},
         [] { Attrs a = attr2("kernel", std::vector<std::int64_t>{2, 2}, "padding", std::vector<std::int64_t>{1, 1});
              a.set("count_include_pad", true); a.set("ceil_mode", true); a.set("stride", std::vector<std::int64_t>{2, 2}); return a; }(), {}},
    };
    for (OpKind k : {OpKind::relu, OpKind::gelu, OpKind::neg}) cases.push_back({k, {m}, {}, {}});
    // Every plain unary op (ops/unary_ops.def), on positive inputs where it is defined only there.
    for (const PlainUnaryOp& u : kPlainUnaryOps) cases.push_back({u.kind, {m}, {}, {}, u.positive_domain});
    // The ops of ops/defs/ with a gradient rule, on their definition's examples.
    for (OpKind k : kAllOpKinds) {
        const OpDefinition* d = op_definition(k);
        if (!d || !d->grad) continue;
        for (const OpExample& e : d->examples) {
            std::vector<TensorDesc> params;
            for (const Shape& s : e.inputs) params.push_back(f64(s));
            std::vector<TensorDesc> indices;
            for (const Shape& s : e.index_inputs) indices.push_back(TensorDesc{s, DType::int64});
            cases.push_back({k, params, e.attrs, indices});
        }
    }
    for (const Case& c : cases) {
        INFO(op_name(c.k));
        const Graph g = op_graph(c.k, c.params, c.attrs, c.inputs, c.softmax_after);
        std::map<TensorId, HostTensor> given;
        if (c.positive_inputs) {
            for (std::size_t i = 0; i < c.params.size(); ++i) given[static_cast<TensorId>(i)] = positive(g, static_cast<TensorId>(i));
        }
        const Check r = grad_check(g, given);
        CHECK(r.compared > 0);
    }
}

TEST_CASE("fan-out: a tensor used by several ops gets the sum of their gradients", "[gradcheck]") {
    Graph g;
    g.origin = "fanout";
    const TensorId w = g.add_parameter("w", f64({3, 3}));
    const TensorId a = g.node(g.add_node("a", OpKind::matmul, {w, w}, {}, {})).outputs[0];
    const TensorId b = g.node(g.add_node("b", OpKind::tanh, {w}, {}, {})).outputs[0];
    const TensorId c = g.node(g.add_node("c", OpKind::mul, {a, b}, {}, {})).outputs[0];
    g.mark_output(g.node(g.add_node("loss", OpKind::reduce_sum, {c}, {}, {})).outputs[0]);
    CHECK(grad_check(g, {}, 9).compared == 9);
}

TEST_CASE("the mlp template and a tiny GPT pass the gradient check", "[gradcheck][gpt]") {
    using nlohmann::json;
    const Graph mlp = load_model(
        json{{"format", "roofline-model/1"},
             {"template", "mlp"},
             {"config", {{"batch", 4}, {"input", 6}, {"hidden", {5, 4}}, {"classes", 3}, {"activation", "gelu"}, {"dtype", "f64"}}}},
        "mlp-f64");
    CHECK(grad_check(mlp, {}, 4).compared > 20);
    const Graph gpt = load_model(json{{"format", "roofline-model/1"},
                                      {"template", "gpt"},
                                      {"config",
                                       {{"n_layer", 2},
                                        {"d_model", 8},
                                        {"n_head", 2},
                                        {"vocab", 11},
                                        {"n_ctx", 6},
                                        {"seq", 5},
                                        {"batch", 2},
                                        {"dtype", "f64"},
                                        {"dropout", 0.1}}}},
                                 "tiny-gpt");
    const Check r = grad_check(gpt, {}, 3);
    CHECK(r.compared > 60);
}

TEST_CASE("the float32 executor agrees with float64 to single precision", "[gradcheck]") {
    using nlohmann::json;
    const Graph gpt = load_model(
        json{{"format", "roofline-model/1"},
             {"template", "gpt"},
             {"config",
              {{"n_layer", 1}, {"d_model", 8}, {"n_head", 2}, {"vocab", 11}, {"n_ctx", 6}, {"seq", 5}, {"batch", 2}, {"dtype", "f32"}}}},
        "tiny-gpt-f32");
    const Graph train = build_training_step(gpt, {});
    const auto a = execute(train, {}, RefPrecision::f64);
    const auto b = execute(train, {}, RefPrecision::f32);
    const TensorId loss = gpt.outputs().front();
    // float32 keeps ~7 significant digits; a dozen rounded ops deep, 1e-5 relative is ample
    CHECK(b[static_cast<std::size_t>(loss)].data[0] == Approx(a[static_cast<std::size_t>(loss)].data[0]).epsilon(1e-5));
    CHECK(b[static_cast<std::size_t>(loss)].data[0] != a[static_cast<std::size_t>(loss)].data[0]);  // it did round
}
