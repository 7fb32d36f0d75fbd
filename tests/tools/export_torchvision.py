#!/usr/bin/python3
"""Exports torchvision's classification zoo to ONNX for tests/unit/onnx_zoo_test.cpp (issue #21).

One-off, not part of `make test`: the .onnx files it writes under tests/data/onnx/torchvision/ are
committed. Needs Debian 12's python3-torch 1.13, python3-torchvision 0.14 and python3-onnx 1.12
(use /usr/bin/python3; PyPI's torch is not needed):

    apt-get install -y python3-torch python3-torchvision python3-onnx
    /usr/bin/python3 tests/tools/export_torchvision.py [model ...]
    /usr/bin/python3 tests/tools/export_torchvision.py --bad    # tests/data/bad/onnx-{pad-length,clip-runtime-bound}.onnx
    /usr/bin/python3 tests/tools/export_torchvision.py --if     # tests/data/onnx/if.onnx

Each model is built with weights=None (random weights: the graph is what matters), in eval mode,
batch 1 at its own crop size (torchvision's weights.transforms().crop_size: 299 for inception_v3,
224 for the others), and exported as a new user would, with README.md's recipe: opset 17 (the
highest torch 1.13's exporter writes), export_params=False (the parameters become graph inputs
with their shapes and no data, so a file is tens of kB) and a dynamic batch axis named "batch".
"""
import os
import sys

import onnx
import torch
from onnx import TensorProto, helper
import torchvision
from torchvision.models import get_model, get_model_weights

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "data", "onnx", "torchvision")
BAD = os.path.join(ROOT, "tests", "data", "bad")

# One model per family of torchvision's classification table (two ResNets: resnet18 and resnet50),
# each with published GFLOPS (torchvision >= 0.15's weights.meta["_ops"]; 0.14 has maxvit_t and
# swin_t but not yet the "_ops" field).
MODELS = [
    "alexnet", "vgg16", "resnet18", "resnet50", "resnext50_32x4d", "wide_resnet50_2", "densenet121",
    "inception_v3", "googlenet", "mobilenet_v2", "mobilenet_v3_large", "shufflenet_v2_x1_0",
    "squeezenet1_0", "efficientnet_b0", "regnet_y_400mf", "convnext_tiny", "vit_b_16",
    "swin_t", "maxvit_t",
]


def crop_size(name):
    weights = list(get_model_weights(name))[0]
    return weights.transforms().crop_size[0]


def export(name):
    torch.manual_seed(0)
    model = get_model(name, weights=None).eval()
    size = crop_size(name)
    x = torch.randn(1, 3, size, size)
    path = os.path.join(OUT, name + ".onnx")
    # not under torch.no_grad(): there nn.MultiheadAttention (vit_b_16) takes its fused fast path,
    # aten::_native_multi_head_attention, which torch 1.13's exporter cannot write
    torch.onnx.export(model, x, path, export_params=False, opset_version=17, input_names=["input"],
                      output_names=["logits"], dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}})
    m = onnx.load(path)
    onnx.checker.check_model(m)
    ops = sorted({n.op_type for n in m.graph.node})
    print(f"{name}: {size}x{size}, {os.path.getsize(path)} bytes, {len(m.graph.node)} nodes: {' '.join(ops)}")


def bad_files():
    """Malformed uses of the ops issue #21 added, each must exit 2 naming the node:
    onnx-pad-length.onnx: a Pad whose pads (3 entries) do not fit its 4-d input (8 needed);
    onnx-clip-runtime-bound.onnx: a Clip whose max is a graph input (runtime data), not a constant."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 2, 4, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    pads = helper.make_tensor("pads", TensorProto.INT64, [3], [0, 1, 1])
    g = helper.make_graph([helper.make_node("Pad", ["x", "pads"], ["y"], name="pad", mode="constant")], "bad", [x], [y], [pads])
    # written without onnx.checker, which (rightly) rejects it
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), os.path.join(BAD, "onnx-pad-length.onnx"))
    hi = helper.make_tensor_value_info("hi", TensorProto.FLOAT, [])
    lo = helper.make_tensor("lo", TensorProto.FLOAT, [], [0.0])
    g = helper.make_graph([helper.make_node("Clip", ["x", "lo", "hi"], ["y"], name="clip")], "bad", [x, hi], [y], [lo])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), os.path.join(BAD, "onnx-clip-runtime-bound.onnx"))


def if_model():
    """tests/data/onnx/if.onnx: an If on a shape test (x.shape[1] == 4), as exporters write for
    shape-dependent branches: then relu(x) @ w, else sigmoid(x) @ w."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])
    inits = [helper.make_tensor("one", TensorProto.INT64, [], [1]), helper.make_tensor("four", TensorProto.INT64, [], [4]),
             helper.make_tensor("w", TensorProto.FLOAT, [4, 8], [0.5] * 32)]
    then = helper.make_graph([helper.make_node("Relu", ["x"], ["r"], name="relu"), helper.make_node("MatMul", ["r", "w"], ["t"], name="mm")],
                             "then", [], [helper.make_tensor_value_info("t", TensorProto.FLOAT, ["batch", 8])])
    other = helper.make_graph([helper.make_node("Sigmoid", ["x"], ["g"], name="sig"), helper.make_node("MatMul", ["g", "w"], ["e"], name="mm")],
                              "else", [], [helper.make_tensor_value_info("e", TensorProto.FLOAT, ["batch", 8])])
    nodes = [helper.make_node("Shape", ["x"], ["s"], name="shape"), helper.make_node("Gather", ["s", "one"], ["d"], name="dim1"),
             helper.make_node("Equal", ["d", "four"], ["c"], name="test"),
             helper.make_node("If", ["c"], ["y"], name="branch", then_branch=then, else_branch=other)]
    g = helper.make_graph(nodes, "if", [x], [y], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(ROOT, "tests", "data", "onnx", "if.onnx"))


def main():
    os.makedirs(OUT, exist_ok=True)
    print(f"torch {torch.__version__}, torchvision {torchvision.__version__}, onnx {onnx.__version__}")
    if sys.argv[1:] == ["--bad"]:
        return bad_files()
    if sys.argv[1:] == ["--if"]:
        return if_model()
    for name in sys.argv[1:] or MODELS:
        export(name)


if __name__ == "__main__":
    main()
