"""roofline.from_torch (issue #22) on torchvision's resnet18 and vit_b_16 and on a GPT-2 block,
against the ONNX route (the same models through `roofline analyze model.onnx`) and against
published and hand-counted FLOPs. Needs torch and torchvision (Debian: python3-torch,
python3-torchvision); without them every test here is skipped with a message saying so."""
import os

import pytest

try:
    import torch
    import torchvision
except ImportError:
    pytest.skip("SKIP: torch or torchvision is not installed (apt-get install python3-torch python3-torchvision): "
                "roofline.from_torch is not tested", allow_module_level=True)

import roofline

SRC = os.environ["ROOFLINE_SOURCE_DIR"]
ZOO = os.path.join(SRC, "tests", "data", "onnx", "torchvision")


def onnx_report(path, **options):
    """The ONNX route's report, or None when this build reads no ONNX (ROOFLINE_WITH_ONNX=OFF)."""
    try:
        return roofline.analyze(path, **options)
    except roofline.InputError as e:
        if "without ONNX support" in str(e):
            return None
        raise


# The captures this torch has: make_fx everywhere, torch.export from torch 2.1. Every test that
# takes `capture` runs once per capture; on torch 1.13 (Debian 12) the export runs skip.
HAS_EXPORT = hasattr(getattr(torch, "export", None), "export")
CAPTURES = ["fx", pytest.param("export", marks=pytest.mark.skipif(not HAS_EXPORT, reason=(
    f"SKIP: torch {torch.__version__} has no torch.export (torch >= 2.1): the export capture is not tested")))]


@pytest.fixture(scope="module", params=CAPTURES)
def capture(request):
    return request.param


@pytest.fixture(scope="module")
def resnet18(capture):
    torch.manual_seed(0)
    m = roofline.from_torch(torchvision.models.resnet18(), (torch.randn(1, 3, 224, 224),), name="resnet18", capture=capture)
    assert m.capture == capture
    return m


def test_resnet18_maps_every_op_and_counts_torchvisions_flops(resnet18):
    assert resnet18.unmapped == []
    r = roofline.analyze(resnet18, hw="h100-sxm")
    # torchvision's published 1.814 G multiply-adds (weights.meta["_ops"], the figure
    # tests/unit/onnx_zoo_test.cpp checks the ONNX import against), 2 FLOPs each; 0.5%: the
    # published value is rounded to 3 decimals.
    assert r.totals["matrix_flops"] / 2 / 1e9 == pytest.approx(1.814, rel=0.005)
    params = sum(p.numel() for p in torchvision.models.resnet18().parameters())
    # Batch norm's weight and bias become its folded a and b (the same count), the buffers go.
    assert r["model"]["parameters"] == params


def test_resnet18_flops_equal_the_onnx_routes(resnet18):
    # tests/data/onnx/torchvision/resnet18.onnx: the same torchvision 0.14 model exported in eval
    # mode (tests/tools/export_torchvision.py). The convolutions and the classifier are the same
    # GEMMs: matrix FLOPs equal exactly. The export folds each batch norm into its convolution's
    # bias (one add per element, counted in conv2d), where from_torch keeps it as x * a + b (a mul
    # and an add per element): the totals differ by exactly one FLOP per batch-normed element.
    ours = roofline.analyze(resnet18, hw="h100-sxm")
    theirs = onnx_report(os.path.join(ZOO, "resnet18.onnx"), hw="h100-sxm")
    if theirs is None:
        pytest.skip("SKIP: this roofline is built without ONNX support: the ONNX route is not compared")
    assert ours.totals["matrix_flops"] == theirs.totals["matrix_flops"]
    assert ours.totals["transcendentals"] == theirs.totals["transcendentals"] == 0
    batch_normed = sum(op["work"]["flops"] for op in ours.ops if op["op"] == "mul")  # one mul per element
    # bn1 at 112x112; layer1 4 at 56x56; layers 2-4 four each and the downsample's one.
    assert batch_normed == 64 * 112 * 112 + 4 * 64 * 56 * 56 + 5 * 128 * 28 * 28 + 5 * 256 * 14 * 14 + 5 * 512 * 7 * 7
    assert ours.totals["flops"] - theirs.totals["flops"] == batch_normed


def test_resnet18_training_step_from_roofline_autodiff(resnet18, capture):
    inference = roofline.analyze(resnet18)
    trained = roofline.from_torch(torchvision.models.resnet18(), (torch.randn(8, 3, 224, 224),), loss="cross_entropy",
                                  capture=capture)
    step = roofline.analyze(trained, mode="training")
    phases = step.totals["by_phase"]
    assert set(phases) == {"forward", "backward", "optimizer"}
    # The forward phase is the batch-8 forward: 8x the batch-1 graph's matrix FLOPs exactly (the
    # loss adds none).
    assert phases["forward"]["matrix_flops"] == 8 * inference.totals["matrix_flops"]
    # Backward runs two GEMM-shaped gradients per conv/linear (input and weight), so 2x the
    # forward's matrix FLOPs, less the first conv's input gradient, which nothing needs (the image
    # is not trained): conv1 is 118 M of 1814 M multiply-adds, so 2 - 0.065 = 1.935x, within 0.5%.
    ratio = phases["backward"]["matrix_flops"] / phases["forward"]["matrix_flops"]
    assert ratio == pytest.approx(2 - 118013952 / 1814073344, rel=0.005)


def test_vit_b_16_counts_torchvisions_flops_and_the_onnx_routes(capture):
    torch.manual_seed(0)
    m = roofline.from_torch(torchvision.models.vit_b_16(), (torch.randn(1, 3, 224, 224),), name="vit_b_16", capture=capture)
    assert m.unmapped == []
    r = roofline.analyze(m)
    # Published 17.564 G multiply-adds (as above), 0.5%.
    assert r.totals["matrix_flops"] / 2 / 1e9 == pytest.approx(17.564, rel=0.005)
    theirs = onnx_report(os.path.join(ZOO, "vit_b_16.onnx"))
    if theirs is not None:
        # The matrix work is the same GEMMs in both routes; the ONNX export spells attention's
        # scaling and layer norms in other elementwise ops, so only matrix FLOPs are equal.
        assert r.totals["matrix_flops"] == theirs.totals["matrix_flops"]


class GPT2Block(torch.nn.Module):
    """One GPT-2 transformer block as nanoGPT-style code writes it: pre-norm, fused qkv, causal
    attention with an additive mask buffer, GELU (tanh) MLP."""

    def __init__(self, d=768, heads=12, ctx=128):
        super().__init__()
        self.heads = heads
        self.ln_1 = torch.nn.LayerNorm(d)
        self.c_attn = torch.nn.Linear(d, 3 * d)
        self.c_proj = torch.nn.Linear(d, d)
        self.ln_2 = torch.nn.LayerNorm(d)
        self.c_fc = torch.nn.Linear(d, 4 * d)
        self.mlp_proj = torch.nn.Linear(4 * d, d)
        self.register_buffer("mask", torch.full((ctx, ctx), float("-inf")).triu(1))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(d, dim=2)
        q, k, v = (y.view(b, t, self.heads, d // self.heads).transpose(1, 2) for y in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / (d // self.heads) ** 0.5) + self.mask[:t, :t]
        y = (att.softmax(dim=-1) @ v).transpose(1, 2).contiguous().view(b, t, d)
        x = x + self.c_proj(y)
        return x + self.mlp_proj(torch.nn.functional.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


def test_gpt2_block_flops_by_hand_and_by_the_onnx_route(tmp_path, capture):
    torch.manual_seed(0)
    block, x = GPT2Block(), torch.randn(1, 128, 768)
    m = roofline.from_torch(block, (x,), name="gpt2-block", loss="mean", capture=capture)
    assert m.unmapped == []
    r = roofline.analyze(m, hw="a100-sxm-80gb")
    # By hand, T = 128 tokens, d = 768, 12 heads of 64: the four linears 2*T*(d*3d + d*d + 2*d*4d)
    # and attention's two batched GEMMs 2 * 2*12*T*T*64.
    t, d = 128, 768
    assert r.totals["matrix_flops"] == 2 * t * (d * 3 * d + d * d + 2 * d * 4 * d) + 2 * 2 * 12 * t * t * 64
    # Training (loss="mean"): every GEMM's operands are trained weights or activations computed from
    # them, so backward computes both operands' gradients of every GEMM: exactly 2x the forward's.
    step = roofline.analyze(m, mode="training")
    assert step.totals["by_phase"]["backward"]["matrix_flops"] == 2 * r.totals["matrix_flops"]
    path = tmp_path / "block.onnx"
    torch.onnx.export(block.eval(), (x,), str(path), export_params=False, opset_version=17,
                      input_names=["input"], output_names=["y"])
    theirs = onnx_report(str(path), hw="a100-sxm-80gb")
    if theirs is None:
        pytest.skip("SKIP: this roofline is built without ONNX support: the ONNX route is not compared")
    assert r.totals["matrix_flops"] == theirs.totals["matrix_flops"]


class Unmappable(torch.nn.Module):
    def forward(self, x):
        return torch.cumprod(x, dim=1).relu()


def test_unmapped_ops_are_listed_or_refused(capture):
    m = roofline.from_torch(Unmappable(), (torch.randn(4, 8),), capture=capture)
    assert m.unmapped == [{"node": "cumprod", "target": "cumprod"}]
    kinds = [n["op"] for n in m.doc["nodes"]]
    assert kinds == ["opaque", "relu"]
    r = roofline.analyze(m)  # the opaque node costs nothing; relu is still counted
    assert r.totals["flops"] == 4 * 8
    with pytest.raises(ValueError, match="cumprod"):
        roofline.from_torch(Unmappable(), (torch.randn(4, 8),), strict=True, capture=capture)


class SortThenRelu(torch.nn.Module):
    def forward(self, x):
        values, indices = torch.sort(x, dim=1)
        return values.relu(), indices


def test_an_unmapped_op_with_several_outputs_keeps_them(capture):
    # torch.sort has no roofline op: one opaque node with two outputs (values f32, indices int64),
    # each named; relu reads the first. Before the outputs were named in the document, the loader
    # gave an opaque node one output and the relu's input did not exist.
    m = roofline.from_torch(SortThenRelu(), (torch.randn(4, 8),), capture=capture)
    assert [u["target"] for u in m.unmapped] == ["sort"]
    sort = next(n for n in m.doc["nodes"] if n["op"] == "opaque")
    assert sort["outputs"] == [sort["name"] + ":0", sort["name"] + ":1"]
    assert sort["attrs"]["dtypes"] == "f32,int64"
    r = roofline.analyze(m)
    assert r.totals["flops"] == 4 * 8  # relu's one FLOP per element; sort is opaque


class Attention(torch.nn.Module):
    """F.scaled_dot_product_attention, causal or with an additive mask buffer."""

    def __init__(self, masked):
        super().__init__()
        self.masked = masked
        self.register_buffer("mask", torch.zeros(64, 64))

    def forward(self, q, k, v):
        if self.masked:
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=self.mask)
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)


@pytest.mark.skipif(not hasattr(torch.nn.functional, "scaled_dot_product_attention"),
                    reason=f"SKIP: torch {torch.__version__} has no F.scaled_dot_product_attention (torch >= 2.0)")
@pytest.mark.parametrize("masked", [False, True])
def test_scaled_dot_product_attention(capture, masked):
    # torch.export keeps F.scaled_dot_product_attention whole; make_fx on torch >= 2 records its
    # backend's op (_scaled_dot_product_flash_attention_for_cpu, ...), on 1.13 its decomposition.
    # Either way the matrix work is QK^T and PV: 2 * 2 * batch*heads * 64 * 64 * 32 FLOPs.
    q, k, v = (torch.randn(2, 4, 64, 32) for _ in range(3))
    m = roofline.from_torch(Attention(masked), (q, k, v), capture=capture)
    assert m.unmapped == []
    r = roofline.analyze(m)
    assert r.totals["matrix_flops"] == 2 * 2 * (2 * 4) * 64 * 64 * 32
    ops = [n["op"] for n in m.doc["nodes"]]
    if capture == "export" and not masked:
        assert ops == ["attention"] and m.doc["nodes"][0]["attrs"] == {"causal": True}
    if masked:
        assert "add" in ops  # the mask is read by one elementwise add over the scores


@pytest.mark.skipif(not HAS_EXPORT, reason="SKIP: no torch.export in this torch: its fallback is not tested")
def test_auto_capture_prefers_export_and_falls_back_to_fx(monkeypatch):
    assert roofline.from_torch(SortThenRelu(), (torch.randn(4, 8),)).capture == "export"

    def refuse(*args, **kwargs):  # as torch.export refuses what it cannot trace soundly
        raise RuntimeError("export refused this module")

    monkeypatch.setattr(torch.export, "export", refuse)
    m = roofline.from_torch(SortThenRelu(), (torch.randn(4, 8),))
    assert m.capture == "fx" and [u["target"] for u in m.unmapped] == ["sort"]
    with pytest.raises(ValueError, match="torch.export could not capture the module: export refused"):
        roofline.from_torch(SortThenRelu(), (torch.randn(4, 8),), capture="export")


def test_capture_names_a_known_route():
    with pytest.raises(ValueError, match="capture must be"):
        roofline.from_torch(SortThenRelu(), (torch.randn(4, 8),), capture="dynamo")


# torchvision's published multiply-adds (GFLOPS in its model docs, weights.meta["_ops"]), the
# figures tests/unit/onnx_zoo_test.cpp checks the ONNX route against; input 224 (inception_v3 299).
# A model whose every op maps must count them within 1% (the published values have 3 decimals;
# swin_t keeps its unmapped roll and mask-building ops, listed, so it is not here; maxvit_t reads
# its relative position tables by index: gather).
ZOO_MACS = {"densenet121": (2.834, 224), "inception_v3": (5.713, 299), "mobilenet_v3_large": (0.217, 224),
            "efficientnet_b0": (0.386, 224), "convnext_tiny": (4.456, 224), "regnet_y_400mf": (0.402, 224),
            "maxvit_t": (5.558, 224)}


@pytest.mark.parametrize("model", sorted(ZOO_MACS))
def test_torchvision_zoo_maps_every_op_and_counts_the_published_macs(capture, model):
    macs, size = ZOO_MACS[model]
    torch.manual_seed(0)
    m = roofline.from_torch(getattr(torchvision.models, model)(), (torch.randn(1, 3, size, size),), capture=capture)
    assert m.unmapped == []
    assert roofline.analyze(m).totals["matrix_flops"] / 2 / 1e9 == pytest.approx(macs, rel=0.01)
