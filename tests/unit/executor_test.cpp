// The values an executed graph starts from (model/executor.cpp deterministic_value): `measure
// --check` compares the GPU with the CPU reference on them, so they must keep a deep network's
// activations finite in the narrowest dtype it runs in.
#include <catch2/catch.hpp>

#include <cmath>

#include "model/executor.hpp"
#include "model/graph.hpp"

using namespace roofline;

namespace {

// depth 3x3 convolutions of 16 channels with ReLU and a residual add every two, no normalisation:
// a torchvision ResNet after the ONNX exporter folds batch norm into its convolutions.
Graph plain_resnet(int depth, DType d) {
    Graph g;
    Attrs conv;
    conv.set("padding", std::vector<std::int64_t>{1, 1});
    TensorId x = g.add_input("x", TensorDesc{{1, 16, 12, 12}, d});
    TensorId skip = x;
    for (int i = 0; i < depth; ++i) {
        const TensorId w = g.add_parameter("w" + std::to_string(i), TensorDesc{{16, 16, 3, 3}, d});
        x = g.node(g.add_node("conv" + std::to_string(i), OpKind::conv2d, {x, w}, conv, {})).outputs[0];
        if (i % 2 == 1) {
            x = g.node(g.add_node("add" + std::to_string(i), OpKind::add, {x, skip}, {}, {})).outputs[0];
            skip = x;
        }
        x = g.node(g.add_node("relu" + std::to_string(i), OpKind::relu, {x}, {}, {})).outputs[0];
    }
    g.mark_output(x);
    return g;
}

}  // namespace

TEST_CASE("source values keep a deep unnormalised ReLU network finite in f16", "[executor]") {
    // Expected: every activation of a 32-layer residual network finite, the largest below f16's
    // 65504 and the output's RMS between 1e-2 and 1e3. Kaiming-uniform weights (bound
    // sqrt(6 / fan_in)) keep the variance through each conv + ReLU; each residual add at most
    // doubles it, so 16 adds grow the RMS by at most 2^8 from the input's 0.58. With the old
    // uniform [-1, 1) weights each layer multiplied it by about sqrt(144 / 3 / 2) = 4.9: f16
    // overflowed after a few layers (the 2026-11-26 H100 checks of resnet18 failed with inf).
    const Graph g = plain_resnet(32, DType::f16);
    CHECK(source_scale(g, g.find_tensor("w0")) == Approx(std::sqrt(6.0 / 144.0)));
    CHECK(source_scale(g, g.find_tensor("x")) == 1.0);
    const std::vector<HostTensor> v = execute(g, {}, RefPrecision::f32);
    double largest = 0;
    for (const HostTensor& t : v)
        for (double e : t.data) {
            REQUIRE(std::isfinite(e));
            largest = std::max(largest, std::fabs(e));
        }
    CHECK(largest < 65504.0);
    const HostTensor& out = v[static_cast<std::size_t>(g.outputs()[0])];
    double ss = 0;
    for (double e : out.data) ss += e * e;
    const double rms = std::sqrt(ss / static_cast<double>(out.data.size()));
    CHECK(rms > 1e-2);
    CHECK(rms < 1e3);
}
