// torchvision's classification zoo through ONNX (issue #21): every model exported by
// tests/tools/export_torchvision.py (torchvision 0.14, weights=None, export_params=False, opset 17,
// batch 1 at its own crop size) imports without --allow-unknown, and its matrix FLOPs match
// torchvision's published GFLOPS.
//
// The published figure: weights.meta["_ops"] of each model's IMAGENET1K_V1 weights in torchvision
// >= 0.15 (torchvision/models/*.py; the "GFLOPS" column of the models table in its docs; 0.14, the
// version installed here, has the models but not yet the field). torchvision computed them (pull
// request #6936) with a TorchDispatchMode counter over aten mm, addmm, bmm and convolution that
// counts one per multiply-add and leaves out biases, elementwise ops, normalisation and pooling.
// roofline counts 2 FLOPs per multiply-add (docs/ARCHITECTURE.md), so like is compared with like as
// matrix_flops / 2, the matrix ops being exactly conv2d, linear and matmul.
//
// Tolerance 0.5%, tighter than issue #21's 2%: the published values are rounded to 3 decimals
// (shufflenet_v2_x1_0's 0.145 and mobilenet_v3_large's 0.217 alone are +-0.35% and +-0.23%), and
// otherwise both count the same multiply-adds; the 19 models are within 0.2% (README). A gap
// beyond rounding means a layer counted twice or missed (resnet18's smallest conv is 0.3% of it).
#include <catch2/catch.hpp>

#include <filesystem>

#include "model/autodiff.hpp"
#include "model/model_json.hpp"
#include "model/onnx_model.hpp"
#include "support.hpp"

using namespace roofline;
using test::run_cli;
using test::source_path;

namespace {

struct ZooModel {
    const char* name;
    double published_gmacs;  // weights.meta["_ops"], torchvision >= 0.15
    int size;                // the crop size it was exported at (weights.transforms().crop_size)
};

// clang-format off
const ZooModel kZoo[] = {
    {"alexnet", 0.714, 224},           {"vgg16", 15.47, 224},              {"resnet18", 1.814, 224},
    {"resnet50", 4.089, 224},          {"resnext50_32x4d", 4.23, 224},     {"wide_resnet50_2", 11.398, 224},
    {"densenet121", 2.834, 224},       {"inception_v3", 5.713, 299},       {"googlenet", 1.498, 224},
    {"mobilenet_v2", 0.301, 224},      {"mobilenet_v3_large", 0.217, 224}, {"shufflenet_v2_x1_0", 0.145, 224},
    {"squeezenet1_0", 0.819, 224},     {"efficientnet_b0", 0.386, 224},    {"regnet_y_400mf", 0.402, 224},
    {"convnext_tiny", 4.456, 224},     {"vit_b_16", 17.564, 224},          {"swin_t", 4.491, 224},
    {"maxvit_t", 5.558, 224},
};
// clang-format on

std::string zoo_file(const std::string& name) { return source_path("tests/data/onnx/torchvision/" + name + ".onnx"); }

}  // namespace

TEST_CASE("onnx zoo: every torchvision classifier imports and matches its published GFLOPS within 0.5%", "[onnx][zoo]") {
    if (!onnx_supported()) return;  // tests/unit/onnx_test.cpp checks the refusal
    for (const ZooModel& z : kZoo) {
        INFO(z.name);
        const Graph g = load_model_arg(zoo_file(z.name), ModelOverrides{});  // no --allow-unknown
        std::int64_t matrix_flops = 0;
        for (NodeId n = 0; n < static_cast<NodeId>(g.nodes().size()); ++n) {
            CHECK(g.node(n).kind != OpKind::opaque);
            matrix_flops += g.work(n).matrix_flops;
        }
        const double gmacs = static_cast<double>(matrix_flops) / 2 / 1e9;
        INFO("modelled " << gmacs << " G multiply-adds, published " << z.published_gmacs);
        CHECK(gmacs == Approx(z.published_gmacs).epsilon(0.005));
        const Tensor& input = g.tensor(g.find_tensor("input"));
        CHECK(input.desc.shape == Shape{1, 3, z.size, z.size});
    }
}

TEST_CASE("onnx zoo: analyze runs on the mobile nets' Clip, HardSigmoid and HardSwish", "[onnx][zoo][cli]") {
    if (!onnx_supported()) return;
    for (const char* m : {"mobilenet_v2", "mobilenet_v3_large"}) {
        INFO(m);
        const auto r = run_cli("analyze '" + zoo_file(m) + "' --batch 8 -q -o '" + test::tmp_path(std::string(m) + "-zoo.json") + "'");
        CHECK(r.code == 0);
        CHECK(std::filesystem::exists(test::tmp_path(std::string(m) + "-zoo.json")));
    }
}

// Training (an appended mean as the stand-in loss, README): each matrix op's backward is its dx and
// dw, twice its forward, except the first convolution's dx (the image needs no gradient): so the
// backward matrix FLOPs are at most 2x the forward and at least 2x minus the first conv's share,
// largest in squeezenet1_0 (its 7x7 stem is 21% of the model: 1.79x). Swin's patch merging
// differentiates its step-2 slices; the mobile nets their relu6, hardsigmoid and hardswish.
TEST_CASE("onnx zoo: every torchvision classifier trains, backward about twice forward", "[onnx][zoo][training]") {
    if (!onnx_supported()) return;
    for (const ZooModel& z : kZoo) {
        INFO(z.name);
        Graph g = load_model_arg(zoo_file(z.name), ModelOverrides{});
        add_stand_in_loss(g);
        const Graph t = build_training_step(g, TrainingOptions{});
        double fwd = 0, bwd = 0;
        for (NodeId n = 0; n < static_cast<NodeId>(t.nodes().size()); ++n) {
            const auto flops = static_cast<double>(t.work(n).matrix_flops);
            if (t.node(n).phase == Phase::forward) fwd += flops;
            if (t.node(n).phase == Phase::backward) bwd += flops;
        }
        CHECK(bwd / fwd <= 2.0);
        CHECK(bwd / fwd >= 1.75);
    }
}
