#!/usr/bin/python3
"""Exports the ONNX test models of tests/unit/onnx_test.cpp (issue #8) and the malformed ones.

One-off, not part of `make test`: the .onnx files it writes are committed. Needs Debian 12's
python3-torch 1.13, python3-torchvision 0.14 and python3-onnx 1.12 (use /usr/bin/python3):

    apt-get install -y python3-torch python3-torchvision python3-onnx
    /usr/bin/python3 tests/tools/export_onnx.py

Every model is exported without weights (export_params=False: the parameters become graph
inputs, so a file is a few tens of kB) with a dynamic batch axis named "batch", as the README
recommends for `roofline analyze model.onnx --batch N`.

  tests/data/onnx/resnet50.onnx   torchvision resnet50, 1x3x224x224, opset 13
  tests/data/onnx/gpt.onnx        a small GPT (2 layers, d 128, 4 heads, seq 64, vocab 512), opset 17
                                  (LayerNormalization), causal mask as a buffer + masked_fill (Where)
  tests/data/onnx/vit.onnx        torchvision vit_b_16 (12 layers, d 768, 224x224), opset 17
  tests/data/onnx/bert.onnx       a BERT-like encoder (2 layers, d 128, 4 heads, seq 64), opset 14
                                  (LayerNorm decomposed: ReduceMean, Sub, Pow, Sqrt, Div)
  tests/data/onnx/external.onnx   a linear layer whose initializers live in an external file
                                  that is not there (the importer must not need it)
  tests/data/onnx/scan.onnx       CumSum and TopK (`export_onnx.py --scan` writes it alone)
  tests/data/onnx/gather.onnx     GatherElements as DeBERTa's export uses it, and the malformed
                                  tests/data/bad/onnx-gather-rank.onnx
  tests/data/onnx/unary.onnx      Cos, Abs and Reciprocal on runtime data (`export_onnx.py --gather`
                                  writes these three alone; python3-onnx only)
  tests/data/onnx/ops.onnx        the ops the exports do not use (BatchNormalization, pooling, Pow,
                                  Where(Not), Slice, Gemm with alpha), with weights
  tests/data/onnx/ops2.onnx       LeakyRelu, Elu, Selu, Celu, PRelu, ConvTranspose, Trilu, ArgMax,
                                  ArgMin, ReduceMin/Prod/L1/L2/SumSquare/LogSumExp and Gather by
                                  runtime indices (`export_onnx.py --ops2`; python3-onnx only)
  tests/data/onnx/ops3.onnx       LogSoftmax, runtime Equal/Greater/Less/And, Sum, Mean,
                                  DepthToSpace, SpaceToDepth, QuantizeLinear, DequantizeLinear
                                  (`export_onnx.py --ops3`; python3-onnx only)
  tests/data/bad/*.onnx           malformed, truncated and hostile files (see bad_files()).
"""
import io
import math
import os
import sys

import onnx
from onnx import TensorProto, helper

if sys.argv[1:] not in (["--scan"], ["--gather"], ["--ops2"], ["--ops3"]):  # the helper-built graphs need no torch
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    import torchvision
else:
    class nn:  # so that the torch models' classes below still define
        Module = object

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "data", "onnx")
BAD = os.path.join(ROOT, "tests", "data", "bad")


class GptBlock(nn.Module):
    def __init__(self, d, heads, seq):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.heads = heads
        self.register_buffer("mask", torch.tril(torch.ones(seq, seq, dtype=torch.bool)).view(1, 1, seq, seq))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q = q.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d // self.heads))
        att = att.masked_fill(~self.mask[:, :, :t, :t], float("-inf"))
        y = (F.softmax(att, dim=-1) @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(y)
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class Gpt(nn.Module):
    def __init__(self, vocab=512, d=128, heads=4, layers=2, seq=64):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(seq, d)
        self.blocks = nn.ModuleList([GptBlock(d, heads, seq) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d)
        self.seq = seq

    def forward(self, idx):
        pos = torch.arange(0, idx.shape[1], dtype=torch.long).unsqueeze(0)
        x = self.wte(idx) + self.wpe(pos)
        for blk in self.blocks:
            x = blk(x)
        return self.ln_f(x) @ self.wte.weight.t()  # tied lm head


class BertLayer(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.ln1, self.ln2 = nn.LayerNorm(d, eps=1e-12), nn.LayerNorm(d, eps=1e-12)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.heads = heads

    def forward(self, x, ext_mask):
        b, t, d = x.shape
        hd = d // self.heads
        split = lambda y: y.view(b, t, self.heads, hd).permute(0, 2, 1, 3)
        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(hd) + ext_mask
        ctx = torch.matmul(scores.softmax(-1), v).permute(0, 2, 1, 3).reshape(b, t, d)
        x = self.ln1(x + self.o(ctx))
        return self.ln2(x + self.fc2(F.gelu(self.fc1(x))))


class Bert(nn.Module):
    def __init__(self, vocab=1000, d=128, heads=4, layers=2, seq=64):
        super().__init__()
        self.word, self.pos, self.tok_type = nn.Embedding(vocab, d), nn.Embedding(seq, d), nn.Embedding(2, d)
        self.ln = nn.LayerNorm(d, eps=1e-12)
        self.layers = nn.ModuleList([BertLayer(d, heads) for _ in range(layers)])
        self.pool = nn.Linear(d, d)

    def forward(self, ids, token_type, attention_mask):
        pos = torch.arange(ids.shape[1]).unsqueeze(0)
        x = self.ln(self.word(ids) + self.pos(pos) + self.tok_type(token_type))
        ext = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * -10000.0
        for layer in self.layers:
            x = layer(x, ext)
        return x, torch.tanh(self.pool(x[:, 0]))


def export(model, args, name, input_names, output_names, opset):
    model.eval()
    axes = {n: {0: "batch"} for n in input_names + output_names}
    path = os.path.join(OUT, name)
    torch.onnx.export(model, args, path, export_params=False, opset_version=opset, input_names=input_names,
                      output_names=output_names, dynamic_axes=axes, do_constant_folding=True)
    onnx.checker.check_model(onnx.load(path))
    print(f"{path}: {os.path.getsize(path)} bytes")


def external_model():
    """y = x @ W^T + b with W and b in an external file that does not exist."""
    w, b = TensorProto(), TensorProto()
    for t, name, dims in ((w, "w", [32, 64]), (b, "b", [32])):
        t.name, t.data_type = name, TensorProto.FLOAT
        t.dims.extend(dims)
        t.data_location = TensorProto.EXTERNAL
        entry = t.external_data.add()
        entry.key, entry.value = "location", "weights.bin"
    g = helper.make_graph(
        [helper.make_node("Gemm", ["x", "w", "b"], ["y"], name="fc", transB=1)], "external",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 32])], initializer=[w, b])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(m, os.path.join(OUT, "external.onnx"))


def ops_model():
    """The ops the exports above do not use, in one small graph (opset 13, batch dynamic):
    Conv -> BatchNormalization -> Relu -> MaxPool -> AveragePool -> Pow 2 -> Where(Not(m)) ->
    GlobalAveragePool -> Flatten -> Slice -> Gemm (transB = 0, alpha 0.5)."""
    f = lambda n, shape: helper.make_tensor_value_info(n, TensorProto.FLOAT, shape)
    ints = lambda n, v: helper.make_tensor(n, TensorProto.INT64, [len(v)], v)
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node("BatchNormalization", ["c", "s", "b", "mu", "var"], ["bn"], name="bn", epsilon=1e-5),
        helper.make_node("Relu", ["bn"], ["r"], name="relu"),
        helper.make_node("MaxPool", ["r"], ["mp"], name="maxpool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("AveragePool", ["mp"], ["ap"], name="avgpool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Constant", [], ["two"], name="two", value=helper.make_tensor("v", TensorProto.FLOAT, [], [2.0])),
        helper.make_node("Pow", ["ap", "two"], ["sq"], name="pow"),
        helper.make_node("Not", ["m"], ["keep"], name="not"),
        helper.make_node("Where", ["keep", "sq", "ap"], ["wh"], name="where"),
        helper.make_node("GlobalAveragePool", ["wh"], ["gap"], name="gap"),
        helper.make_node("Flatten", ["gap"], ["flat"], name="flatten"),
        helper.make_node("Slice", ["flat", "st", "en", "ax"], ["sl"], name="slice"),
        helper.make_node("Gemm", ["sl", "fc"], ["y"], name="fc", alpha=0.5),
    ]
    g = helper.make_graph(nodes, "ops", [f("x", ["batch", 3, 32, 32])], [f("y", ["batch", 10])], initializer=[
        helper.make_tensor("w", TensorProto.FLOAT, [16, 3, 3, 3], [0.0] * 432),
        *[helper.make_tensor(n, TensorProto.FLOAT, [16], [1.0] * 16) for n in ("s", "b", "mu", "var")],
        helper.make_tensor("m", TensorProto.BOOL, [1, 16, 1, 1], [1, 0] * 8),
        ints("st", [0]), ints("en", [8]), ints("ax", [1]),
        helper.make_tensor("fc", TensorProto.FLOAT, [8, 10], [0.0] * 80)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(OUT, "ops.onnx"))


def scan_model():
    """CumSum and TopK as exported MoE routers and position ids use them (opset 13, batch dynamic):
    logits = x @ w (x: [batch, 6, 8], 4 experts) -> Softmax -> TopK K = 2 (values and indices);
    positions = CumSum(mask, axis 1, exclusive) on an int64 mask input."""
    f = lambda n, t, shape: helper.make_tensor_value_info(n, t, shape)
    ints = lambda n, v: helper.make_tensor(n, TensorProto.INT64, [len(v)], v)
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["logits"], name="router"),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=-1),
        helper.make_node("TopK", ["probs", "k"], ["weights", "experts"], name="topk", axis=-1),
        helper.make_node("CumSum", ["mask", "axis"], ["positions"], name="cumsum", exclusive=1),
    ]
    axis = helper.make_tensor("axis", TensorProto.INT64, [], [1])
    g = helper.make_graph(nodes, "scan", [f("x", TensorProto.FLOAT, ["batch", 6, 8]), f("mask", TensorProto.INT64, ["batch", 6])],
                          [f("weights", TensorProto.FLOAT, ["batch", 6, 2]), f("experts", TensorProto.INT64, ["batch", 6, 2]),
                           f("positions", TensorProto.INT64, ["batch", 6])],
                          initializer=[helper.make_tensor("w", TensorProto.FLOAT, [8, 4], [0.0] * 32), ints("k", [2]), axis])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(OUT, "scan.onnx"))


def gather_model():
    """GatherElements (opset 13, batch dynamic) as DeBERTa's disentangled attention exports it:
    c2p = q @ pos_k^T ([batch, 4, 6, 8] x [batch, 4, 8, 16]: 16 relative positions), then the
    [6, 6] relative entries of each row gathered along the last axis with an int64 index input
    (the model computes it from the positions; its values do not matter here); and a gather along
    axis 1 whose indices are longer than the data there ([batch, 3] -> [batch, 7])."""
    f = lambda n, t, shape: helper.make_tensor_value_info(n, t, shape)
    nodes = [
        helper.make_node("Transpose", ["pos_k"], ["pos_k_t"], name="pos_k_t", perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["q", "pos_k_t"], ["c2p"], name="c2p"),
        helper.make_node("GatherElements", ["c2p", "c2p_index"], ["c2p_gathered"], name="c2p_gather", axis=-1),
        helper.make_node("GatherElements", ["short", "long_index"], ["long"], name="long_gather", axis=1),
    ]
    g = helper.make_graph(nodes, "gather",
                          [f("q", TensorProto.FLOAT, ["batch", 4, 6, 8]), f("pos_k", TensorProto.FLOAT, ["batch", 4, 16, 8]),
                           f("c2p_index", TensorProto.INT64, ["batch", 4, 6, 6]), f("short", TensorProto.FLOAT, ["batch", 3]),
                           f("long_index", TensorProto.INT64, ["batch", 7])],
                          [f("c2p_gathered", TensorProto.FLOAT, ["batch", 4, 6, 6]), f("long", TensorProto.FLOAT, ["batch", 7])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(OUT, "gather.onnx"))
    # indices of another rank than the data
    bad = helper.make_graph([helper.make_node("GatherElements", ["x", "i"], ["y"], name="bad_gather", axis=0)], "bad",
                            [f("x", TensorProto.FLOAT, [4, 5]), f("i", TensorProto.INT64, [4])], [f("y", TensorProto.FLOAT, [4])])
    with open(os.path.join(BAD, "onnx-gather-rank.onnx"), "wb") as fh:
        fh.write(helper.make_model(bad, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString())
    # Cos, Abs and Reciprocal on runtime data: a rotary table cos(positions x inv_freq) and an L1
    # norm's 1 / sum|x|
    nodes = [
        helper.make_node("Mul", ["positions", "inv_freq"], ["angles"], name="angles"),
        helper.make_node("Cos", ["angles"], ["cos"], name="cos"),
        helper.make_node("Abs", ["x"], ["x_abs"], name="abs"),
        helper.make_node("ReduceSum", ["x_abs", "last"], ["l1"], name="l1", keepdims=1),
        helper.make_node("Reciprocal", ["l1"], ["inv_l1"], name="reciprocal"),
        helper.make_node("Mul", ["x", "inv_l1"], ["normalised"], name="normalise"),
    ]
    g = helper.make_graph(nodes, "unary",
                          [f("positions", TensorProto.FLOAT, ["batch", 16, 1]), f("x", TensorProto.FLOAT, ["batch", 16, 8])],
                          [f("cos", TensorProto.FLOAT, ["batch", 16, 4]), f("normalised", TensorProto.FLOAT, ["batch", 16, 8])],
                          initializer=[helper.make_tensor("inv_freq", TensorProto.FLOAT, [4], [1.0, 0.1, 0.01, 0.001]),
                                       helper.make_tensor("last", TensorProto.INT64, [1], [-1])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(OUT, "unary.onnx"))


def ops2_model():
    """The ops the exports from timm, torchvision and Hugging Face still stopped on (opset 17, the newest
    python3-onnx 1.12 knows: the Reduce* axes are attributes; batch dynamic): x [batch, 4, 6, 6] -> LeakyRelu (alpha 0.2) -> Elu ->
    Selu -> Celu (alpha 2) -> PRelu (a slope per channel, [4, 1, 1]) -> ConvTranspose (weight
    [4, 2, 3, 3], bias [2], stride 2, pads 1, output_padding 1: [batch, 2, 12, 12]) -> Trilu (lower,
    k = 1 a constant input) -> ArgMax (axis 1), ArgMin (last axis, keepdims, select_last_index),
    ReduceMin / ReduceL2 (axes 2, 3), ReduceProd (axis 1), ReduceL1 / ReduceSumSquare (last axis),
    ReduceLogSumExp (axis 1), Gather on axis 2 by a runtime int64 index [3]; and a Gather of x on
    axis 1 by runtime [2, 2] indices. Writes tests/data/onnx/ops2.onnx (`export_onnx.py --ops2`, no
    torch needed) and tests/data/bad/onnx-trilu-runtime-k.onnx."""
    f = lambda n, t, shape: helper.make_tensor_value_info(n, t, shape)
    F, I = TensorProto.FLOAT, TensorProto.INT64
    nodes = [
        helper.make_node("LeakyRelu", ["x"], ["leaky"], name="leaky", alpha=0.2),
        helper.make_node("Elu", ["leaky"], ["elu"], name="elu"),
        helper.make_node("Selu", ["elu"], ["selu"], name="selu"),
        helper.make_node("Celu", ["selu"], ["celu"], name="celu", alpha=2.0),
        helper.make_node("PRelu", ["celu", "slope"], ["prelu"], name="prelu"),
        helper.make_node("ConvTranspose", ["prelu", "w", "b"], ["up"], name="up", strides=[2, 2], pads=[1, 1, 1, 1],
                         output_padding=[1, 1], kernel_shape=[3, 3]),
        helper.make_node("Trilu", ["up", "k"], ["tri"], name="tri", upper=0),
        helper.make_node("ArgMax", ["tri"], ["amax"], name="amax", axis=1, keepdims=0),
        helper.make_node("ArgMin", ["tri"], ["amin"], name="amin", axis=-1, keepdims=1, select_last_index=1),
        helper.make_node("ReduceMin", ["tri"], ["rmin"], name="rmin", axes=[2, 3], keepdims=0),
        helper.make_node("ReduceProd", ["tri"], ["rprod"], name="rprod", axes=[1]),
        helper.make_node("ReduceL1", ["tri"], ["rl1"], name="rl1", axes=[-1], keepdims=0),
        helper.make_node("ReduceL2", ["tri"], ["rl2"], name="rl2", axes=[2, 3]),
        helper.make_node("ReduceSumSquare", ["tri"], ["rss"], name="rss", axes=[-1], keepdims=0),
        helper.make_node("ReduceLogSumExp", ["tri"], ["lse"], name="lse", axes=[1], keepdims=0),
        helper.make_node("Gather", ["tri", "idx"], ["picked"], name="picked", axis=2),
        helper.make_node("Gather", ["x", "idx2"], ["rows"], name="rows", axis=1),
    ]
    inits = [helper.make_tensor("slope", F, [4, 1, 1], [0.25] * 4), helper.make_tensor("w", F, [4, 2, 3, 3], [0.0] * 72),
             helper.make_tensor("b", F, [2], [0.0] * 2), helper.make_tensor("k", I, [], [1])]
    g = helper.make_graph(nodes, "ops2", [f("x", F, ["batch", 4, 6, 6]), f("idx", I, [3]), f("idx2", I, [2, 2])],
                          [f("amax", I, ["batch", 12, 12]), f("amin", I, ["batch", 2, 12, 1]), f("rmin", F, ["batch", 2]),
                           f("rprod", F, ["batch", 1, 12, 12]), f("rl1", F, ["batch", 2, 12]), f("rl2", F, ["batch", 2, 1, 1]),
                           f("rss", F, ["batch", 2, 12]), f("lse", F, ["batch", 12, 12]), f("picked", F, ["batch", 2, 3, 12]),
                           f("rows", F, ["batch", 2, 2, 6, 6])],
                          initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(OUT, "ops2.onnx"))
    # Trilu's k computed at run time (the importer needs it constant)
    bad = small([helper.make_node("Trilu", ["x", "k"], ["y"], name="trilu")],
                [helper.make_tensor_value_info("x", F, [4, 4]), helper.make_tensor_value_info("k", I, [])],
                [helper.make_tensor_value_info("y", F, [4, 4])], opset=14)
    with open(os.path.join(BAD, "onnx-trilu-runtime-k.onnx"), "wb") as fh:
        fh.write(bad)


def ops3_model():
    """Runtime masks, LogSoftmax, variadic Sum/Mean, DepthToSpace/SpaceToDepth and a quantize /
    dequantize pair (opset 17; batch dynamic): x [batch, 8, 4, 4] f32 and ids [batch, 6] int64 ->
    LogSoftmax (last axis); DepthToSpace (blocksize 2, DCR) -> [batch, 2, 8, 8], SpaceToDepth back ->
    [batch, 8, 4, 4]; Sum(x, s2d, x), Mean(x, s2d); QuantizeLinear (scalar scale, uint8 zero point) ->
    u8, DequantizeLinear -> f32; Greater(x, 0) And Less(x, 1) -> Where(mask, x, dq); Equal(ids, 0) on
    the int64 ids. Writes tests/data/onnx/ops3.onnx (`export_onnx.py --ops3`, no torch needed)."""
    f = lambda n, t, shape: helper.make_tensor_value_info(n, t, shape)
    F, I, U8 = TensorProto.FLOAT, TensorProto.INT64, TensorProto.UINT8
    nodes = [
        helper.make_node("LogSoftmax", ["x"], ["lsm"], name="lsm", axis=-1),
        helper.make_node("DepthToSpace", ["x"], ["d2s"], name="d2s", blocksize=2, mode="DCR"),
        helper.make_node("SpaceToDepth", ["d2s"], ["s2d"], name="s2d", blocksize=2),
        helper.make_node("Sum", ["x", "s2d", "x"], ["sum"], name="sum"),
        helper.make_node("Mean", ["x", "s2d"], ["mean"], name="mean"),
        helper.make_node("QuantizeLinear", ["x", "scale", "zp"], ["q"], name="q"),
        helper.make_node("DequantizeLinear", ["q", "scale", "zp"], ["dq"], name="dq"),
        helper.make_node("Greater", ["x", "zero"], ["pos"], name="pos"),
        helper.make_node("Less", ["x", "one"], ["small"], name="small"),
        helper.make_node("And", ["pos", "small"], ["mask"], name="mask"),
        helper.make_node("Where", ["mask", "x", "dq"], ["kept"], name="kept"),
        helper.make_node("Equal", ["ids", "pad"], ["is_pad"], name="is_pad"),
    ]
    inits = [helper.make_tensor("scale", F, [], [0.05]), helper.make_tensor("zp", U8, [], [128]),
             helper.make_tensor("zero", F, [], [0.0]), helper.make_tensor("one", F, [], [1.0]),
             helper.make_tensor("pad", I, [], [0])]
    g = helper.make_graph(nodes, "ops3", [f("x", F, ["batch", 8, 4, 4]), f("ids", I, ["batch", 6])],
                          [f("lsm", F, ["batch", 8, 4, 4]), f("sum", F, ["batch", 8, 4, 4]), f("mean", F, ["batch", 8, 4, 4]),
                           f("kept", F, ["batch", 8, 4, 4]), f("is_pad", TensorProto.BOOL, ["batch", 6])],
                          initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(OUT, "ops3.onnx"))


def small(nodes, inputs, outputs, initializer=(), opset=13):
    g = helper.make_graph(nodes, "bad", inputs, outputs, initializer=list(initializer))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]).SerializeToString()


def bad_files():
    f = lambda n, shape: helper.make_tensor_value_info(n, TensorProto.FLOAT, shape)
    files = {
        # not protobuf at all
        "onnx-not-protobuf.onnx": b"this is not an ONNX model\n",
        # a valid model cut in the middle of its graph
        "onnx-truncated.onnx": open(os.path.join(OUT, "gpt.onnx"), "rb").read()[:700],
        # a -> b -> a
        "onnx-cycle.onnx": small([helper.make_node("Relu", ["x", ], ["a0"], name="start"),
                                  helper.make_node("Add", ["a0", "c"], ["b"], name="b"),
                                  helper.make_node("Relu", ["b"], ["c"], name="c")],
                                 [f("x", [2, 3])], [f("c", [2, 3])]),
        # 2^40 x 2^40 elements: more than int64 can count in bytes
        "onnx-overflow.onnx": small([helper.make_node("Relu", ["x"], ["y"], name="r")],
                                    [f("x", [1 << 40, 1 << 40])], [f("y", [1 << 40, 1 << 40])]),
        # the node reads a tensor no input, initializer or node defines
        "onnx-missing-initializer.onnx": small([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
                                               [f("x", [2, 3])], [f("y", [2, 4])]),
        # two unsupported op types in three nodes
        "onnx-unknown-op.onnx": small([helper.make_node("Relu", ["x"], ["a"], name="r"),
                                       helper.make_node("Hardmax", ["a"], ["b"], name="hm1"),
                                       helper.make_node("Det", ["b"], ["c"], name="det"),
                                       helper.make_node("Hardmax", ["c"], ["y"], name="hm2")],
                                      [f("x", [4, 4])], [f("y", [4, 4])]),
        # a convolution with stride 0: ONNX's shape inference divides by it (SIGFPE before the check)
        "onnx-conv-zero-stride.onnx": small([helper.make_node("Conv", ["x", "w"], ["y"], name="conv", strides=[0, 0])],
                                            [f("x", [1, 3, 8, 8]), f("w", [4, 3, 3, 3])], [f("y", [1, 4, 6, 6])]),
    }
    for name, data in files.items():
        with open(os.path.join(BAD, name), "wb") as fh:
            fh.write(data)
        print(f"{os.path.join(BAD, name)}: {len(data)} bytes")


def main():
    os.makedirs(OUT, exist_ok=True)
    torch.manual_seed(0)
    export(torchvision.models.resnet50(), torch.randn(1, 3, 224, 224), "resnet50.onnx", ["input"], ["logits"], 13)
    export(Gpt(), torch.randint(0, 512, (2, 64)), "gpt.onnx", ["input_ids"], ["logits"], 17)
    export(torchvision.models.vit_b_16(), torch.randn(1, 3, 224, 224), "vit.onnx", ["input"], ["logits"], 17)
    export(Bert(), (torch.randint(0, 1000, (2, 64)), torch.zeros(2, 64, dtype=torch.long), torch.ones(2, 64)),
           "bert.onnx", ["input_ids", "token_type_ids", "attention_mask"], ["hidden", "pooled"], 14)
    external_model()
    ops_model()
    bad_files()


if __name__ == "__main__":
    if sys.argv[1:] == ["--scan"]:  # tests/data/onnx/scan.onnx alone (no torch needed)
        scan_model()
    elif sys.argv[1:] == ["--gather"]:  # tests/data/onnx/gather.onnx alone (no torch needed)
        gather_model()
    elif sys.argv[1:] == ["--ops2"]:  # tests/data/onnx/ops2.onnx alone (no torch needed)
        ops2_model()
    elif sys.argv[1:] == ["--ops3"]:  # tests/data/onnx/ops3.onnx alone (no torch needed)
        ops3_model()
    else:
        main()
