// Reverse-mode autodiff: gradient rules for every differentiable op kind, accumulation at
// fan-out, phases, the optimizer and mixed precision, and training-step FLOPs against the
// published counts.
#include <catch2/catch.hpp>
#include <set>

#include <nlohmann/json.hpp>

#include "model/autodiff.hpp"
#include "model/model_json.hpp"
#include "ops/op_def.hpp"
#include "ops/op_rule.hpp"

using namespace roofline;

namespace {

struct PhaseWork {
    Work forward, backward, optimizer;
};

PhaseWork phase_work(const Graph& g) {
    PhaseWork w;
    for (NodeId n : g.topological_order()) {
        const Work x = g.work(n);
        switch (g.node(n).phase) {
            case Phase::forward: w.forward += x; break;
            case Phase::backward: w.backward += x; break;
            case Phase::optimizer: w.optimizer += x; break;
        }
    }
    return w;
}

int count_kind(const Graph& g, OpKind k) {
    int c = 0;
    for (const Node& n : g.nodes()) c += n.kind == k ? 1 : 0;
    return c;
}

// A graph with every input a parameter, one op, and a sum to a scalar loss.
Graph single_op(OpKind k, const std::vector<TensorDesc>& params, const Attrs& attrs, const std::vector<TensorDesc>& inputs = {}) {
    Graph g;
    g.origin = "test";
    std::vector<TensorId> ins;
    for (std::size_t i = 0; i < params.size(); ++i) ins.push_back(g.add_parameter("p" + std::to_string(i), params[i]));
    for (std::size_t i = 0; i < inputs.size(); ++i) ins.push_back(g.add_input("i" + std::to_string(i), inputs[i]));
    const NodeId n = g.add_node("op", k, ins, attrs, {});
    TensorId y = g.node(n).outputs[0];
    if (g.tensor(y).desc.rank() > 0) y = g.node(g.add_node("loss", OpKind::reduce_sum, {y}, {}, {"loss"})).outputs[0];
    g.mark_output(y);
    return g;
}

}  // namespace

TEST_CASE("every differentiable op kind yields a gradient for each parameter input", "[autodiff]") {
    const TensorDesc m{{4, 6}, DType::f32}, v{{6}, DType::f32};
    struct Case {
        OpKind k;
        std::vector<TensorDesc> params;
        Attrs attrs;
        std::vector<TensorDesc> inputs;
    };
    std::vector<Case> cases = {
        {OpKind::matmul, {m, TensorDesc{{6, 5}, DType::f32}}, {}, {}},
        {OpKind::matmul,
         {TensorDesc{{6, 4}, DType::f32}, TensorDesc{{5, 6}, DType::f32}},
         attr2("transpose_a", true, "transpose_b", true),
         {}},
        {OpKind::matmul, {TensorDesc{{2, 4, 6}, DType::f32}, TensorDesc{{5, 6}, DType::f32}}, attr("transpose_b", true), {}},
        {OpKind::linear, {m, TensorDesc{{3, 6}, DType::f32}, TensorDesc{{3}, DType::f32}}, {}, {}},
        {OpKind::conv2d,
         {TensorDesc{{1, 4, 8, 8}, DType::f32}, TensorDesc{{6, 2, 3, 3}, DType::f32}, TensorDesc{{6}, DType::f32}},
         attr2("groups", std::int64_t{2}, "padding", std::vector<std::int64_t>{1, 1}),
         {}},
        {OpKind::add, {m, v}, {}, {}},
        {OpKind::sub, {m, v}, {}, {}},
        {OpKind::mul, {m, v}, {}, {}},
        {OpKind::div, {m, v}, {}, {}},
        {OpKind::maximum, {m, v}, {}, {}},
        {OpKind::softmax, {m}, {}, {}},
        {OpKind::layernorm, {m, v, v}, {}, {}},
        {OpKind::rmsnorm, {m, v}, {}, {}},
        {OpKind::reduce_sum, {m}, attr("axes", std::vector<std::int64_t>{0}), {}},
        {OpKind::reduce_mean, {m}, attr2("axes", std::vector<std::int64_t>{1}, "keepdim", true), {}},
        {OpKind::reduce_max, {m}, attr("axes", std::vector<std::int64_t>{1}), {}},
        {OpKind::embedding, {TensorDesc{{10, 6}, DType::f32}}, {}, {TensorDesc{{3}, DType::int64}}},
        {OpKind::transpose, {m}, {}, {}},
        {OpKind::permute, {TensorDesc{{2, 3, 4}, DType::f32}}, attr("perm", std::vector<std::int64_t>{2, 0, 1}), {}},
        {OpKind::reshape, {m}, attr("shape", std::vector<std::int64_t>{24}), {}},
        {OpKind::concat, {m, TensorDesc{{4, 2}, DType::f32}}, attr("axis", std::int64_t{1}), {}},
        {OpKind::split, {m}, attr2("axis", std::int64_t{1}, "sizes", std::vector<std::int64_t>{2, 4}), {}},
        {OpKind::dropout, {m}, attr("p", 0.1), {}},
        {OpKind::causal_mask, {TensorDesc{{3, 3}, DType::f32}}, {}, {}},
        {OpKind::cross_entropy, {m}, {}, {TensorDesc{{4}, DType::int64}}},
        {OpKind::attention,
         {TensorDesc{{2, 5, 8}, DType::f32}, TensorDesc{{2, 5, 8}, DType::f32}, TensorDesc{{2, 5, 8}, DType::f32}},
         attr("causal", true),
         {}},
        {OpKind::expand, {TensorDesc{{4, 1}, DType::f32}}, attr("shape", std::vector<std::int64_t>{2, 4, 6}), {}},
        {OpKind::slice, {m}, attr2("starts", std::vector<std::int64_t>{1, 2}, "ends", std::vector<std::int64_t>{3, 5}), {}},
        {OpKind::pad, {m}, attr("pads", std::vector<std::int64_t>{1, -1, 0, 2}), {}},
        {OpKind::max_pool2d,
         {TensorDesc{{1, 2, 5, 5}, DType::f32}},
         attr2("kernel", std::vector<std::int64_t>{3, 3}, "stride", std::vector<std::int64_t>{2, 2}),
         {}},
        {OpKind::avg_pool2d,
         {TensorDesc{{1, 2, 5, 5}, DType::f32}},
         attr2("kernel", std::vector<std::int64_t>{2, 2}, "padding", std::vector<std::int64_t>{1, 1}),
         {}},
    };
    for (OpKind k : {OpKind::relu, OpKind::gelu, OpKind::neg}) cases.push_back({k, {m}, {}, {}});
    for (const PlainUnaryOp& u : kPlainUnaryOps) cases.push_back({u.kind, {m}, {}, {}});  // ops/unary_ops.def
    cases.push_back({OpKind::scale, {m}, attr("factor", 0.5), {}});
    cases.push_back({OpKind::shift, {m}, attr("offset", 1.0), {}});
    cases.push_back({OpKind::pow, {m}, attr("exponent", 3.0), {}});
    cases.push_back({OpKind::cast, {m}, attr("dtype", std::string("bf16")), {}});
    // The ops of ops/defs/ with a gradient rule, on their definition's examples.
    for (OpKind k : kAllOpKinds) {
        const OpDefinition* d = op_definition(k);
        if (!d || !d->grad) continue;
        for (const OpExample& e : d->examples) {
            std::vector<TensorDesc> params;
            for (const Shape& s : e.inputs) params.push_back(TensorDesc{s, DType::f32});
            std::vector<TensorDesc> indices;
            for (const Shape& s : e.index_inputs) indices.push_back(TensorDesc{s, DType::int64});
            cases.push_back({k, params, e.attrs, indices});
        }
    }
    std::set<OpKind> covered;
    for (const Case& c : cases) {
        INFO(op_name(c.k));
        const Graph fwd = single_op(c.k, c.params, c.attrs, c.inputs);
        TrainingOptions opt;
        opt.optimizer = Optimizer::sgd;
        opt.momentum = 0;
        const Graph train = build_training_step(fwd, opt);
        CHECK_NOTHROW(verify(train));
        // one optimizer update per parameter: its gradient exists and has the parameter's shape
        // (sgd_update's shape inference rejects anything else)
        CHECK(count_kind(train, OpKind::sgd_update) == static_cast<int>(c.params.size()));
        covered.insert(c.k);
    }
    {  // where(c, a, b): the u8 mask c (a parameter here, so that it comes first) gets no gradient
        INFO("where");
        TrainingOptions opt;
        opt.optimizer = Optimizer::sgd;
        const Graph train = build_training_step(single_op(OpKind::where, {TensorDesc{{4, 6}, DType::u8}, m, v}, {}, {}), opt);
        CHECK_NOTHROW(verify(train));
        CHECK(count_kind(train, OpKind::sgd_update) == 2);
        covered.insert(OpKind::where);
    }
    // Every forward op kind with a gradient rule was exercised.
    for (OpKind k : kAllOpKinds) {
        INFO(op_name(k));
        if (grad_rule_of(k)) CHECK(covered.count(k) == 1);
    }
}

TEST_CASE("a tensor used twice accumulates its gradient", "[autodiff]") {
    Graph g;
    const TensorId w = g.add_parameter("w", {{4, 4}, DType::f32});
    const TensorId sq = g.node(g.add_node("sq", OpKind::mul, {w, w}, {}, {})).outputs[0];
    g.mark_output(g.node(g.add_node("loss", OpKind::reduce_sum, {sq}, {}, {})).outputs[0]);
    const Graph t = build_training_step(g, {});
    // d(w*w)/dw = dy w + w dy: two muls and one add that accumulates them
    int adds = 0;
    for (const Node& n : t.nodes()) adds += (n.phase == Phase::backward && n.kind == OpKind::add) ? 1 : 0;
    CHECK(adds == 1);
}

TEST_CASE("phases, optimizer state and mixed precision", "[autodiff]") {
    const Graph fwd = load_model_arg("gpt", ModelOverrides{2, 32, {}});
    const Graph t = build_training_step(fwd, {});
    std::int64_t params = 0;
    for (const Tensor& ten : fwd.tensors()) params += ten.role == TensorRole::parameter ? 1 : 0;
    CHECK(count_kind(t, OpKind::adam_update) == params);
    for (const Node& n : t.nodes()) {
        if (n.phase == Phase::backward) CHECK(n.differentiates != kNoNode);
        if (n.phase == Phase::forward) CHECK(n.differentiates == kNoNode);
    }
    // bf16 parameters: fp32 master weights, fp32 Adam moments, bf16 gradients cast to fp32
    const Tensor& master = t.tensor(t.find_tensor("wte.master"));
    CHECK(master.desc == TensorDesc{{50257, 768}, DType::f32});
    CHECK(master.role == TensorRole::optimizer_state);
    CHECK(t.tensor(t.find_tensor("wte.adam_v")).desc.dtype == DType::f32);
    CHECK(count_kind(t, OpKind::cast) == 2 * params);  // gradient to f32, master back to bf16
    // tied embeddings: wte's gradient is the sum of the embedding and the LM-head contributions
    const NodeId adam = t.find_node("opt.wte.adam");
    REQUIRE(adam != kNoNode);
    CHECK_THROWS_WITH(build_training_step(t, {}), Catch::Contains("already has a backward pass"));
}

TEST_CASE("training FLOPs: three times the forward GEMMs (Narayanan et al. 2021)", "[autodiff][gpt]") {
    // Without recomputation a training step runs every GEMM three times (forward, input gradient,
    // weight gradient): 72 B s l h^2 (1 + s/(6h) + V/(12 l h)) FLOPs in GEMMs (Narayanan et al. 2021,
    // Korthikanti et al. 2022). Our template differentiates the embedding input too, so every GEMM
    // needs both gradients and the count is exact; the remaining difference in total FLOPs is the
    // non-GEMM work (softmax, layernorm, GELU, dropout, loss and the optimizer), listed below.
    struct Case {
        const char* model;
        std::int64_t b, s;
        double l, h;
    };
    for (const Case& c :
         {Case{"gpt2-small", 2, 1024, 12, 768}, Case{"gpt2-xl", 1, 1024, 48, 1600}, Case{"gpt3-175b", 1, 2048, 96, 12288}}) {
        INFO(c.model);
        const Graph t = build_training_step(load_model_arg(c.model, ModelOverrides{c.b, c.s, {}}), {});
        const PhaseWork w = phase_work(t);
        const double B = static_cast<double>(c.b), s = static_cast<double>(c.s), V = 50257, l = c.l, h = c.h;
        const double published = 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
        const double gemm = static_cast<double>(w.forward.matrix_flops + w.backward.matrix_flops + w.optimizer.matrix_flops);
        CHECK(gemm == Approx(published).epsilon(0.02));
        CHECK(gemm == Approx(published).epsilon(1e-9));  // in fact exact
        CHECK(static_cast<double>(w.backward.matrix_flops) == Approx(2.0 * static_cast<double>(w.forward.matrix_flops)).epsilon(1e-12));
        // Non-GEMM work is a few percent of the total for these shapes.
        const double all = static_cast<double>(w.forward.flops() + w.backward.flops() + w.optimizer.flops());
        CHECK(all / gemm < 1.05);
    }
}

TEST_CASE("a matmul chain trains in 3x its forward FLOPs, less the unneeded input gradient", "[autodiff]") {
    Graph g;
    const TensorId x = g.add_input("x", {{64, 256}, DType::bf16});
    TensorId h = x;
    for (int i = 0; i < 4; ++i) {
        const TensorId w = g.add_parameter("w" + std::to_string(i), {{256, 256}, DType::bf16});
        h = g.node(g.add_node("mm" + std::to_string(i), OpKind::matmul, {h, w}, {}, {})).outputs[0];
    }
    g.mark_output(g.node(g.add_node("loss", OpKind::reduce_sum, {h}, {}, {})).outputs[0]);
    const PhaseWork w = phase_work(build_training_step(g, {}));
    const std::int64_t per_gemm = 2LL * 64 * 256 * 256;
    CHECK(w.forward.matrix_flops == 4 * per_gemm);
    // x needs no gradient, so the first GEMM computes only its weight gradient: 2*4 - 1 = 7 GEMMs
    CHECK(w.backward.matrix_flops == 7 * per_gemm);
}

TEST_CASE("the dtype policy of the model file sets master weights and loss scaling", "[autodiff]") {
    const nlohmann::json doc = {
        {"format", "roofline-model/1"},
        {"dtype_policy", {{"compute", "f16"}, {"master_weights", false}, {"loss_scale", 512}}},
        {"parameters", {{{"name", "w"}, {"shape", {4, 4}}}}},
        {"inputs", {{{"name", "x"}, {"shape", {2, 4}}}}},
        {"nodes", {{{"name", "mm"}, {"op", "matmul"}, {"inputs", {"x", "w"}}}, {{"name", "s"}, {"op", "reduce_sum"}, {"inputs", {"mm"}}}}},
        {"outputs", {"s"}}};
    const Graph fwd = load_model(doc, "policy.json");
    CHECK_FALSE(fwd.precision.master_weights);
    CHECK(fwd.precision.loss_scale == 512);
    TrainingOptions opt;
    opt.master_weights = fwd.precision.master_weights;
    opt.loss_scale = fwd.precision.loss_scale;
    const Graph t = build_training_step(fwd, opt);
    CHECK(t.find_tensor("w.master") == -1);                               // no fp32 copy
    CHECK(t.tensor(t.find_tensor("w.adam_m")).desc.dtype == DType::f32);  // state still fp32
    const Node& seed = t.node(t.find_node("grad.seed"));
    CHECK(seed.attrs.get_double("value", 0) == 512);  // the loss gradient is scaled
    CHECK(t.node(t.find_node("opt.w.adam")).attrs.get_double("grad_scale", 1) == Approx(1.0 / 512));
    CHECK_THROWS_WITH(
        load_model(
            nlohmann::json{{"format", "roofline-model/1"}, {"dtype_policy", {{"loss_scale", -1}}}, {"nodes", nlohmann::json::array()}},
            "p.json"),
        Catch::Contains("p.json: /dtype_policy/loss_scale: expected a non-negative number"));
}
