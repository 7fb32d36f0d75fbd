#!/usr/bin/env python3
"""Writes the blind set of issue #24: kernels at shapes the kernel suite never had (odd, skinny,
tiny, huge, unaligned) in every op family the CUDA executor runs, as one roofline-model/1 file.

Blind means: chosen and predicted (tests/data/blind/predicted/) before anything in it ran on a GPU
with this project; the commit history shows the order. After the measurement lands these become
validation data: later work may check against them, never again call them blind.

Usage: python3 tests/tools/blind_set.py > tests/data/blind/blind-kernels.json
"""
import json
import sys

inputs, params, nodes = [], [], []
names = set()


def tensor(name, shape, dtype=None, param=False):
    if name in names:
        return name
    names.add(name)
    t = {"name": name, "shape": list(shape)}
    if dtype:
        t["dtype"] = dtype
    (params if param else inputs).append(t)
    return name


def node(name, op, ins, attrs=None):
    n = {"name": name, "op": op, "inputs": ins}
    if attrs:
        n["attrs"] = attrs
    nodes.append(n)


def shape_name(prefix, shape):
    return prefix + "x".join(str(s) for s in shape)


# --- GEMMs: odd, unaligned, skinny, tiny, huge, split-K, decode-shaped (M = tokens) ---
for m, n, k in [(1000, 1000, 1000), (4095, 4097, 1023), (127, 9000, 511), (16, 16384, 4096),
                (1, 4096, 4096), (8, 11008, 4096), (6144, 6144, 6144), (64, 64, 64),
                (4096, 50257, 768), (32768, 256, 256), (256, 256, 65536), (3000, 7000, 50)]:
    a = tensor(shape_name("ga_", (m, k)), (m, k))
    b = tensor(shape_name("gb_", (k, n)), (k, n), param=True)
    node(f"gemm_{m}x{n}x{k}", "matmul", [a, b])

# --- batched GEMMs (attention-shaped and odd) ---
for bt, m, n, k in [(96, 128, 128, 64), (32, 1000, 1000, 80), (64, 2048, 64, 2048), (8, 333, 777, 555)]:
    a = tensor(shape_name("ba_", (bt, m, k)), (bt, m, k))
    b = tensor(shape_name("bb_", (bt, k, n)), (bt, k, n))
    node(f"bmm_{bt}x{m}x{n}x{k}", "matmul", [a, b])

# --- linear with bias (epilogue) ---
for m, n, k in [(6000, 10240, 2560), (1000, 1000, 1000), (77, 4096, 1024)]:
    x = tensor(shape_name("lx_", (m, k)), (m, k))
    w = tensor(shape_name("lw_", (n, k)), (n, k), param=True)  # [out, in], as nn.Linear
    b = tensor(shape_name("lb_", (n,)), (n,), param=True)
    node(f"linear_{m}x{n}x{k}", "linear", [x, w, b])

# --- convolutions (NCHW) ---
for (nb, c, h, w_), (co, kh, kw), stride, pad in [((32, 64, 56, 56), (64, 3, 3), 1, 1),
                                                  ((32, 256, 56, 56), (64, 1, 1), 1, 0),
                                                  ((16, 3, 224, 224), (64, 7, 7), 2, 3),
                                                  ((8, 130, 27, 27), (70, 3, 3), 1, 1)]:
    x = tensor(shape_name("cx_", (nb, c, h, w_)), (nb, c, h, w_))
    wt = tensor(shape_name("cw_", (co, c, kh, kw)), (co, c, kh, kw), param=True)
    node(f"conv_{nb}x{c}x{h}x{w_}_k{co}x{kh}x{kw}_s{stride}", "conv2d", [x, wt],
         {"stride": [stride, stride], "padding": [pad, pad]})

# --- elementwise: unary at odd, tiny and huge sizes; binary with and without broadcasting ---
odd = tensor("ew_1000x1003", (1000, 1003))
odd2 = tensor("ew2_1000x1003", (1000, 1003))
tiny = tensor("ew_7x13", (7, 13))
huge = tensor("ew_16384x8192", (16384, 8192))
mid = tensor("ew_3000x5000", (3000, 5000))
mid2 = tensor("ew2_3000x5000", (3000, 5000))
col = tensor("ew_col_3000x1", (3000, 1))
row = tensor("ew_row_5000", (5000,))
for op, x, attrs in [("silu", odd, None), ("sigmoid", odd, None), ("tanh", mid, None),
                     ("gelu", huge, {"approximate": "none"}), ("relu", tiny, None), ("erf", mid, None),
                     ("rsqrt", odd, None), ("log", mid, None), ("scale", huge, {"factor": 0.125})]:
    node(f"{op}_{'x'.join(map(str, next(t['shape'] for t in inputs if t['name'] == x)))}", op, [x], attrs)
node("sub_1000x1003", "sub", [odd, odd2])
node("div_3000x5000", "div", [mid, mid2])
node("maximum_3000x5000", "maximum", [mid, mid2])
node("add_col_bcast_3000x5000", "add", [mid, col])
node("mul_row_bcast_3000x5000", "mul", [mid, row])
node("cast_f32_1000x1003", "cast", [odd], {"dtype": "f32"})
node("dropout_16384x8192", "dropout", [huge], {"p": 0.1})

# --- data movement ---
node("transpose_3000x5000", "transpose", [mid])
perm_in = tensor("pm_8x1024x12x64", (8, 1024, 12, 64))
node("permute_8x1024x12x64_0213", "permute", [perm_in], {"perm": [0, 2, 1, 3]})
cat_a = tensor("ct_a_4096x1000", (4096, 1000))
cat_b = tensor("ct_b_4096x3000", (4096, 3000))
node("concat_4096x4000", "concat", [cat_a, cat_b], {"axis": -1})
node("causal_mask_48x1000x1000", "causal_mask", [tensor("cm_48x1000x1000", (48, 1000, 1000))])

# --- reductions ---
red_wide = tensor("rd_1000x50000", (1000, 50000))
red_tall = tensor("rd_1000000x3", (1000000, 3))
node("reduce_sum_rows_1000x50000", "reduce_sum", [red_wide], {"axes": [-1]})
node("reduce_mean_cols_1000x50000", "reduce_mean", [red_wide], {"axes": [0]})
node("reduce_max_rows_1000000x3", "reduce_max", [red_tall], {"axes": [-1]})

# --- row kernels: softmax, norms, cross-entropy ---
for rows, cols in [(32768, 77), (1024, 32000), (49152, 512)]:
    node(f"softmax_{rows}x{cols}", "softmax", [tensor(shape_name("sm_", (rows, cols)), (rows, cols))])
for rows, cols in [(4000, 1000), (512, 12288), (65536, 128)]:
    x = tensor(shape_name("ln_", (rows, cols)), (rows, cols))
    g = tensor(shape_name("lng_", (cols,)), (cols,), param=True)
    b = tensor(shape_name("lnb_", (cols,)), (cols,), param=True)
    node(f"layernorm_{rows}x{cols}", "layernorm", [x, g, b])
x = tensor("rms_3000x5120", (3000, 5120))
node("rmsnorm_3000x5120", "rmsnorm", [x, tensor("rmsg_5120", (5120,), param=True)])
for rows, vocab in [(2048, 32000), (1000, 128256)]:
    lg = tensor(shape_name("ce_", (rows, vocab)), (rows, vocab))
    tg = tensor(f"ce_targets_{rows}_{vocab}", (rows,), "int64")
    node(f"cross_entropy_{rows}x{vocab}", "cross_entropy", [lg, tg])
node("embedding_32000x4096_ids4000", "embedding",
     [tensor("emb_32000x4096", (32000, 4096), param=True), tensor("emb_ids4000", (4000,), "int64")])

# --- attention (materialised: QK^T, softmax, xV) ---
for b, h, s, d, causal in [(2, 32, 4096, 128, True), (16, 12, 512, 64, False), (1, 8, 8192, 64, True),
                           (4, 20, 1000, 80, False)]:
    q = tensor(shape_name("aq_", (b, h, s, d)), (b, h, s, d))
    k = tensor(shape_name("ak_", (b, h, s, d)), (b, h, s, d))
    v = tensor(shape_name("av_", (b, h, s, d)), (b, h, s, d))
    node(f"attn_{b}x{h}x{s}x{d}{'_causal' if causal else ''}", "attention", [q, k, v], {"causal": causal})

doc = {"format": "roofline-model/1", "name": "blind-kernels",
       "dtype_policy": {"compute": "bf16", "parameters": "bf16"},
       "inputs": inputs, "parameters": params, "nodes": nodes, "outputs": [n["name"] + (":0" if n["op"] == "dropout" else "") for n in nodes]}
json.dump(doc, sys.stdout, indent=1)
sys.stdout.write("\n")
print(f"{len(nodes)} kernels", file=sys.stderr)
